/*
 * sim/topo/graph.c: turning the device and link lists into what the simulator
 * and the analyses walk: CSR adjacency, the igraph copy, the GPU -> nearest
 * HCA map and the summary counts.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

/* ------------------------------------------------------------------------
 * igraph error handling.  igraph's default handler aborts the process; a
 * library must never do that on a user's input, so ours keeps the reason
 * for pp__igraph_error and frees igraph's temporaries, as the handler
 * contract requires (IGRAPH_FINALLY_FREE), then igraph returns the code.
 * ---------------------------------------------------------------------- */
static _Thread_local char igraph_reason[256];

static void on_igraph_error(const char *reason, const char *file, int line,
                            igraph_error_t code) {
    (void)file;
    (void)line;
    (void)code;
    snprintf(igraph_reason, sizeof igraph_reason, "%s", reason ? reason : "");
    IGRAPH_FINALLY_FREE();
}

/* Warnings (e.g. "graph is not connected" from some measures) are
 * expected in analyses of partial fabrics and must not reach stderr,
 * which scripts read for our own messages. */
static void on_igraph_warning(const char *reason, const char *file, int line) {
    (void)reason;
    (void)file;
    (void)line;
}

void pp__igraph_init(void) {
    static bool done = false;
    if (done) return;
    igraph_set_error_handler(on_igraph_error);
    igraph_set_warning_handler(on_igraph_warning);
    done = true;
}

int pp__igraph_error(int igraph_code, const char *what, pp_error *e) {
    int code = igraph_code == IGRAPH_ENOMEM ? PP_ENOMEM : PP_EINTERNAL;
    int rc = pp_error_set(e, code, "%s: igraph: %s%s%s", what ? what : "graph",
                          igraph_strerror((igraph_error_t)igraph_code),
                          igraph_reason[0] ? ": " : "", igraph_reason);
    igraph_reason[0] = '\0';
    return rc;
}

/* ------------------------------------------------------------------------
 * Names of kinds.
 * ---------------------------------------------------------------------- */
const char *pp_dev_kind_name(pp_dev_kind k) {
    static const char *const names[PP_DEV__COUNT] = {
        "gpu", "nvswitch", "pcie-switch", "cpu",
        "hca", "leaf",     "spine",       "core"};
    return (unsigned)k < PP_DEV__COUNT ? names[k] : "?";
}

const char *pp_link_kind_name(pp_link_kind k) {
    static const char *const names[PP_LINK__COUNT] = {
        "nvlink", "pcie", "socket", "host", "fabric"};
    return (unsigned)k < PP_LINK__COUNT ? names[k] : "?";
}

/* ------------------------------------------------------------------------
 * The HCA nearest each GPU, from the server template's PCIe slots: one
 * under the same PCIe switch, else one on the same socket, else the GPU's
 * rail HCA (floor(g * hcas / gpus)) across the socket link.  Among several
 * candidates the GPU takes the one whose home GPU (floor(h * gpus / hcas),
 * the GPU that HCA h is placed next to) is the largest not above it, so
 * GPU g and HCA g pair up when the counts are equal and two GPUs share an
 * HCA when there are half as many.
 * ---------------------------------------------------------------------- */
static int32_t nearest_hca(const pp_pcie_layout *p, const pp_pcie_slot *g,
                           int32_t gpus, int32_t hcas) {
    for (int pass = 0; pass < 2; pass++) {
        int32_t best = -1, best_home = -1, low = -1, low_home = INT32_MAX;
        for (size_t i = 0; i < p->n_slots; i++) {
            const pp_pcie_slot *h = &p->slots[i];
            if (h->kind != PP_DEV_HCA) continue;
            bool near = pass == 0 ? (g->pcie_switch >= 0 &&
                                     h->pcie_switch == g->pcie_switch)
                                  : h->socket == g->socket;
            if (!near) continue;
            int32_t home = (int32_t)((int64_t)h->local * gpus / hcas);
            if (home <= g->local && home > best_home) {
                best = h->local;
                best_home = home;
            }
            if (home < low_home) {
                low = h->local;
                low_home = home;
            }
        }
        if (best >= 0) return best;
        if (low >= 0) return low;
    }
    return (int32_t)((int64_t)g->local * hcas / gpus);
}

static void fill_gpu_hca(pp_cluster *c) {
    int32_t G = c->info.gpus_per_node, H = c->info.hcas_per_node;
    c->gpu_hca = pp_xmalloc((c->n_devs ? c->n_devs : 1) * sizeof *c->gpu_hca);
    for (size_t d = 0; d < c->n_devs; d++) c->gpu_hca[d] = -1;
    if (H == 0) return;
    int32_t *map = pp_xmalloc((size_t)G * sizeof *map);
    for (size_t i = 0; i < c->pcie.n_slots; i++) {
        const pp_pcie_slot *s = &c->pcie.slots[i];
        if (s->kind == PP_DEV_GPU)
            map[s->local] = nearest_hca(&c->pcie, s, G, H);
    }
    for (int32_t n = 0; n < c->info.nodes; n++)
        for (int32_t g = 0; g < G; g++)
            c->gpu_hca[c->gpu_ids[(size_t)n * G + g]] =
                c->hca_ids[(size_t)n * H + map[g]];
    free(map);
}

/* ------------------------------------------------------------------------
 * CSR and igraph.
 * ---------------------------------------------------------------------- */
static void build_csr(pp_cluster *c) {
    size_t nd = c->n_devs, nl = c->n_links;
    c->out_off = pp_xcalloc(nd + 1, sizeof *c->out_off);
    c->out_ids = pp_xmalloc((nl ? nl : 1) * sizeof *c->out_ids);
    for (size_t l = 0; l < nl; l++) c->out_off[c->links[l].src + 1]++;
    for (size_t d = 0; d < nd; d++) c->out_off[d + 1] += c->out_off[d];
    /* Filling in link order keeps each device's list sorted by link id, so
     * two loads of the same file walk links in the same order. */
    int32_t *fill = pp_xmalloc((nd ? nd : 1) * sizeof *fill);
    memcpy(fill, c->out_off, nd * sizeof *fill);
    for (size_t l = 0; l < nl; l++)
        c->out_ids[fill[c->links[l].src]++] = (int32_t)l;
    free(fill);
}

static int build_igraph(pp_cluster *c, pp_error *e) {
    igraph_vector_int_t edges;
    igraph_error_t rc;

    pp__igraph_init();
    rc = igraph_vector_int_init(&edges, (igraph_integer_t)(2 * c->n_links));
    if (rc != IGRAPH_SUCCESS)
        return pp__igraph_error(rc, "building the device graph", e);
    for (size_t l = 0; l < c->n_links; l++) {
        VECTOR(edges)[2 * l] = c->links[l].src;
        VECTOR(edges)[2 * l + 1] = c->links[l].dst;
    }
    rc = igraph_create(&c->graph, &edges, (igraph_integer_t)c->n_devs,
                       IGRAPH_DIRECTED);
    igraph_vector_int_destroy(&edges);
    if (rc != IGRAPH_SUCCESS)
        return pp__igraph_error(rc, "building the device graph", e);
    c->has_graph = true;
    return 0;
}

int pp__cluster_finish(pp_cluster *c, pp_error *e) {
    memset(c->info.switches, 0, sizeof c->info.switches);
    for (size_t d = 0; d < c->n_devs; d++) {
        pp_dev_kind k = c->devs[d].kind;
        if (k != PP_DEV_GPU && k != PP_DEV_CPU && k != PP_DEV_HCA)
            c->info.switches[k]++;
    }
    build_csr(c);
    fill_gpu_hca(c);
    return build_igraph(c, e);
}
