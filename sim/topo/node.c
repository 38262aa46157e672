/*
 * sim/topo/node.c: the `node:` section.  Every server of a cluster is built
 * from one template: GPUs, NVSwitches or direct NVLinks, PCIe switches,
 * CPU sockets, HCAs, and the PCIe tree that joins them, with the lane
 * widths each device negotiates under its socket's lane budget.
 *
 * The template is built once as a list of devices and links with local
 * ids, then stamped out per server, so a 2,048-node cluster costs one
 * template plus a copy loop.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

enum { INTRA_NVSWITCH, INTRA_MESH, INTRA_RING, INTRA_PCIE };
static const char *const intra_names[] = {"nvswitch", "nvlink-mesh",
                                          "nvlink-ring", "pcie", NULL};

/* Limits that keep every id and count inside int32 and every allocation
 * sized by the input within reason; they are far above any real machine. */
#define MAX_NODES 100000
#define MAX_GPUS 256
#define MAX_NICS 256
#define MAX_SOCKETS 64 /* GB200 NVL72: 36 Grace CPUs in one NVLink domain */
#define MAX_PCIE_SWITCHES 64 /* pp_pcie_layout.switch_socket */
#define MAX_DEVICES (1 << 22)
#define MAX_LINKS (1 << 24)

typedef struct tdev {
    pp_dev_kind kind;
    int32_t local;
} tdev;

typedef struct tlink {
    int32_t a, b;
    pp_link_kind kind;
    double bw_Bps, lat_s;
    int32_t lanes;
} tlink;

typedef struct tmpl {
    int64_t nodes, gpus, nics, nvswitches;
    int intra;
    const pp_gpu_spec *gpu;
    const pp_link_spec *nic;
    int64_t nic_lanes;
    double nvlink_Bps, nvlink_lat;
    double pcie_lat;
    double socket_Bps, socket_lat;
    pp_node *node;     /* the `node:` map, for messages */
    pp_node *pcie_map; /* `node.pcie`, NULL when absent */
    /* the stamped template */
    tdev *devs;
    size_t n_devs;
    tlink *links;
    size_t n_links, cap_links;
} tmpl;

static bool pow2(int64_t v) {
    return v > 0 && (v & (v - 1)) == 0;
}

/* A PCIe width: x1, x2, x4, x8, x16 (x32 exists on paper). */
static int read_lanes(pp_node *map, const char *path, const char *key,
                      int64_t *out, pp_error *e) {
    char p[256];
    int64_t v = *out;
    int rc = pp_map_int(map, path, key, PP_OPTIONAL, 1, 32, &v, e);
    if (rc) return rc < 0 ? rc : 0;
    if (!pow2(v))
        return pp_error_at(e, PP_EINPUT, pp_map_get(map, key),
                           pp_path(p, sizeof p, path, key),
                           "expected a PCIe width of 1, 2, 4, 8, 16 or 32 "
                           "lanes, got %lld",
                           (long long)v);
    *out = v;
    return 0;
}

/* ------------------------------------------------------------------------
 * node.gpus, node.nics, NVLink.
 * ---------------------------------------------------------------------- */
static int read_gpus(pp_cluster *c, tmpl *t, pp_error *e) {
    pp_node *g;
    static const char *const keys[] = {"count", "type", NULL};
    int rc =
        pp_map_node(t->node, "node", "gpus", PP_REQUIRED, PP_NODE_MAP, &g, e);
    if (rc || (rc = pp__map_keys(g, "node.gpus", keys, e))) return rc;
    if ((rc = pp_map_int(g, "node.gpus", "count", PP_REQUIRED, 1, MAX_GPUS,
                         &t->gpus, e)))
        return rc;
    const void *spec;
    if ((rc = pp__cat_lookup(c, PP_CAT_GPU, g, "node.gpus", "type", PP_REQUIRED,
                             &spec, NULL, e)))
        return rc;
    t->gpu = spec;
    return pp_map_done(g, "node.gpus", e);
}

static int read_nics(pp_cluster *c, tmpl *t, pp_error *e) {
    pp_node *m, *where = NULL;
    t->nics = 0;
    t->nic_lanes = 16;
    static const char *const keys[] = {"count", "type", "lanes", NULL};
    int rc =
        pp_map_node(t->node, "node", "nics", PP_OPTIONAL, PP_NODE_MAP, &m, e);
    if (rc) return rc < 0 ? rc : 0;
    if ((rc = pp__map_keys(m, "node.nics", keys, e)) < 0) return rc;
    if ((rc = pp_map_int(m, "node.nics", "count", PP_REQUIRED, 0, MAX_NICS,
                         &t->nics, e)))
        return rc;
    const void *spec = NULL;
    rc = pp__cat_lookup(c, PP_CAT_LINK, m, "node.nics", "type",
                        t->nics > 0 ? PP_REQUIRED : PP_OPTIONAL, &spec, &where,
                        e);
    if (rc < 0) return rc;
    if (spec) {
        const pp_link_spec *l = spec;
        if (l->cls != PP_LCLASS_INFINIBAND && l->cls != PP_LCLASS_ETHERNET)
            return pp_error_at(e, PP_EINPUT, where, "node.nics.type",
                               "\"%s\" is not a network link (expected an "
                               "InfiniBand or Ethernet link such as hdr or "
                               "100gbe)",
                               l->name);
        if (!(l->bw_Bps > 0))
            return pp_error_at(e, PP_EINPUT, where, "node.nics.type",
                               "\"%s\" has no bandwidth in the catalogue",
                               l->name);
        t->nic = l;
    }
    if ((rc = read_lanes(m, "node.nics", "lanes", &t->nic_lanes, e))) return rc;
    return pp_map_done(m, "node.nics", e);
}

static int read_intra(pp_cluster *c, tmpl *t, pp_error *e) {
    char lname[PP_NAME_MAX];
    int rc;
    /* Required: the catalogue cannot tell an SXM board on NVSwitch from
     * PCIe cards that merely have an NVLink bridge connector. */
    if ((rc = pp_map_enum(t->node, "node", "intra", PP_REQUIRED, intra_names,
                          &t->intra, e)) < 0)
        return rc;
    t->nvswitches = 1;
    rc = pp_map_int(t->node, "node", "nvswitches", PP_OPTIONAL, 1, 64,
                    &t->nvswitches, e);
    if (rc < 0) return rc;
    if (rc == 0 && t->intra != INTRA_NVSWITCH)
        return pp_error_at(e, PP_EINPUT, pp_map_get(t->node, "nvswitches"),
                           "node.nvswitches",
                           "only meaningful with intra: nvswitch");
    t->nvlink_Bps = t->gpu->nvlink_Bps;
    rc = pp_map_quantity(t->node, "node", "nvlink_bandwidth", PP_OPTIONAL,
                         PP_Q_BANDWIDTH, NULL, false, &t->nvlink_Bps, e);
    if (rc < 0) return rc;
    if (rc == 0 && t->intra == INTRA_PCIE)
        return pp_error_at(e, PP_EINPUT,
                           pp_map_get(t->node, "nvlink_bandwidth"),
                           "node.nvlink_bandwidth",
                           "only meaningful with NVLink (intra is pcie)");
    if (t->intra == INTRA_PCIE) return 0;
    if (!(t->nvlink_Bps > 0)) {
        pp_node *n = pp_map_get(t->node, "intra");
        return pp_error_at(e, PP_EINPUT, n ? n : t->node,
                           n ? "node.intra" : "node",
                           "GPU \"%s\" has no NVLink: use intra: pcie (or "
                           "give node.nvlink_bandwidth)",
                           t->gpu->name);
    }
    /* The catalogue's "nvlinkN" entry gives the hop latency of the GPU's
     * NVLink generation; its bandwidth is per link, while the GPU entry
     * gives the per-GPU total we split over the GPU's links. */
    snprintf(lname, sizeof lname, "nvlink%d", t->gpu->nvlink_gen);
    const pp_link_spec *l = pp_catalog_link(c->cat, lname);
    t->nvlink_lat = l ? l->lat_s : 0;
    return 0;
}

/* ------------------------------------------------------------------------
 * node.pcie: sockets, lane budget, PCIe switches, placement.
 * ---------------------------------------------------------------------- */

/* Bandwidth of one lane per direction: 8, 16, 32, 64 GT/s with 128b/130b
 * coding for gen 3 to 5 (PCI-SIG base specifications 3.0-5.0), 242B/256B
 * FLIT for gen 6.  The catalogue's "pcieN-x16" entry wins when present. */
static double lane_Bps(const pp_catalog *cat, int gen, double *lat) {
    static const double table[] = {0,         0.25e9,    0.5e9,   0.98462e9,
                                   1.96923e9, 3.93846e9, 7.5625e9};
    char name[PP_NAME_MAX];
    snprintf(name, sizeof name, "pcie%d-x16", gen);
    const pp_link_spec *l = pp_catalog_link(cat, name);
    *lat = l ? l->lat_s : 0;
    if (l && l->bw_Bps > 0) return l->bw_Bps / 16.0;
    return table[gen];
}

/* One placement entry of node.pcie.layout: `switch: k` (devices under
 * PCIe switch k, optionally `socket: s` for that switch) or `socket: s`
 * (devices on the socket's root ports). */
static int read_layout_item(pp_cluster *c, pp_node *it, const char *path,
                            int32_t *placed_sw, int32_t *placed_sock,
                            pp_node **placed_at, bool *sw_seen, tmpl *t,
                            pp_error *e) {
    pp_pcie_layout *p = &c->pcie;
    int64_t sw = -1, sock = -1;
    pp_node *lists[2] = {NULL, NULL};
    static const char *const keys[2] = {"gpus", "hcas"};
    char lp[256], ip[256];
    int rc;

    static const char *const item_keys[] = {"switch", "socket", "gpus", "hcas",
                                            NULL};
    if ((rc = pp_node_expect(it, path, PP_NODE_MAP, e)) < 0 ||
        (rc = pp__map_keys(it, path, item_keys, e)) < 0)
        return rc;
    if (p->switches == 0 && pp_map_get(it, "switch"))
        return pp_error_at(e, PP_EINPUT, pp_map_get(it, "switch"),
                           pp_path(lp, sizeof lp, path, "switch"),
                           "node.pcie.switches is 0: place devices with "
                           "socket: instead");
    if ((rc = pp_map_int(it, path, "switch", PP_OPTIONAL, 0, p->switches - 1,
                         &sw, e)) < 0)
        return rc;
    if ((rc = pp_map_int(it, path, "socket", PP_OPTIONAL, 0, p->sockets - 1,
                         &sock, e)) < 0)
        return rc;
    for (int k = 0; k < 2; k++) {
        rc = pp_map_node(it, path, keys[k], PP_OPTIONAL, PP_NODE_SEQ, &lists[k],
                         e);
        if (rc < 0) return rc;
        if (rc == 1) lists[k] = NULL;
    }
    if ((rc = pp_map_done(it, path, e)) < 0) return rc;
    if (sw < 0 && sock < 0)
        return pp_error_at(e, PP_EINPUT, it, path,
                           "give switch: (a PCIe switch) or socket: (root "
                           "ports)");
    if (sw >= 0) {
        if (sw_seen[sw])
            return pp_error_at(e, PP_EINPUT, pp_map_get(it, "switch"),
                               pp_path(lp, sizeof lp, path, "switch"),
                               "PCIe switch %lld is placed twice",
                               (long long)sw);
        sw_seen[sw] = true;
        if (sock >= 0) p->switch_socket[sw] = (int32_t)sock;
    }
    for (int k = 0; k < 2; k++) {
        if (!lists[k]) continue;
        int64_t limit = k == 0 ? t->gpus : t->nics;
        pp_path(lp, sizeof lp, path, keys[k]);
        for (size_t i = 0; i < lists[k]->n; i++) {
            int64_t d;
            pp_node *dn = lists[k]->items[i];
            pp_path_index(ip, sizeof ip, lp, i);
            if (limit == 0)
                return pp_error_at(e, PP_EINPUT, dn, ip, "the node has no %s",
                                   k == 0 ? "GPUs" : "HCAs (node.nics)");
            if ((rc = pp_node_int(dn, ip, 0, limit - 1, &d, e)) < 0) return rc;
            size_t slot = (size_t)(k == 0 ? d : t->gpus + d);
            if (placed_at[slot])
                return pp_error_at(e, PP_EINPUT, dn, ip,
                                   "%s %lld is placed twice (first at line "
                                   "%d, column %d)",
                                   k == 0 ? "GPU" : "HCA", (long long)d,
                                   placed_at[slot]->line, placed_at[slot]->col);
            placed_at[slot] = dn;
            placed_sw[slot] = (int32_t)sw;
            placed_sock[slot] = (int32_t)sock;
        }
    }
    return 0;
}

static int read_layout(pp_cluster *c, pp_node *list, tmpl *t,
                       int32_t *placed_sw, int32_t *placed_sock, pp_error *e) {
    size_t n = (size_t)(t->gpus + t->nics);
    pp_node **placed_at = pp_xcalloc(n, sizeof *placed_at);
    bool sw_seen[MAX_PCIE_SWITCHES] = {false};
    char ip[256];
    int rc = 0;

    for (size_t i = 0; i < list->n && rc == 0; i++)
        rc = read_layout_item(
            c, list->items[i],
            pp_path_index(ip, sizeof ip, "node.pcie.layout", i), placed_sw,
            placed_sock, placed_at, sw_seen, t, e);
    for (size_t s = 0; s < n && rc == 0; s++)
        if (!placed_at[s])
            rc = pp_error_at(e, PP_EINPUT, list, "node.pcie.layout",
                             "%s %lld is not placed (every GPU and HCA "
                             "needs a place)",
                             (int64_t)s < t->gpus ? "GPU" : "HCA",
                             (long long)((int64_t)s < t->gpus
                                             ? (int64_t)s
                                             : (int64_t)s - t->gpus));
    free(placed_at);
    return rc;
}

/* Negotiates widths on one socket.  A PCIe switch's uplink keeps its
 * width (it carries every device below it); the root-port devices share
 * what is left.  While they want more than that, the widest drops to
 * half width, the last in slot order first (HCAs after GPUs, higher
 * indices later), so the sources' example (two sockets of 48 lanes and
 * seven x16 devices) leaves the socket with four devices giving two of
 * them x8. */
static int negotiate_socket(pp_cluster *c, tmpl *t, int32_t s, pp_error *e) {
    pp_pcie_layout *p = &c->pcie;
    int64_t budget = p->lanes_per_socket, uplinks = 0, want = 0;
    for (int32_t k = 0; k < p->switches; k++)
        if (p->switch_socket[k] == s) uplinks += p->switch_uplink_lanes;
    /* Point at the budget when the file gives one, else at the section. */
    pp_node *where =
        t->pcie_map ? pp_map_get(t->pcie_map, "lanes_per_socket") : NULL;
    const char *wpath = where         ? "node.pcie.lanes_per_socket"
                        : t->pcie_map ? "node.pcie"
                                      : "node";
    if (!where) where = t->pcie_map ? t->pcie_map : t->node;
    if (uplinks > budget)
        return pp_error_at(e, PP_EINPUT, where, wpath,
                           "socket %d: its PCIe switch uplinks need %lld "
                           "lanes but lanes_per_socket is %lld",
                           s, (long long)uplinks, (long long)budget);
    budget -= uplinks;
    for (size_t i = 0; i < p->n_slots; i++)
        if (p->slots[i].socket == s && p->slots[i].pcie_switch < 0)
            want += p->slots[i].lanes_got;
    while (want > budget) {
        pp_pcie_slot *widest = NULL;
        for (size_t i = 0; i < p->n_slots; i++) {
            pp_pcie_slot *d = &p->slots[i];
            if (d->socket == s && d->pcie_switch < 0 &&
                (!widest || d->lanes_got >= widest->lanes_got))
                widest = d;
        }
        if (!widest || widest->lanes_got <= 1)
            return pp_error_at(e, PP_EINPUT, where, wpath,
                               "socket %d: %lld lanes cannot give every "
                               "device on its root ports even one lane",
                               s, (long long)budget);
        want -= widest->lanes_got / 2;
        widest->lanes_got /= 2;
    }
    return 0;
}

/* node.pcie.socket_link: the catalogue link (class cpu) between sockets. */
static int read_socket_link(pp_cluster *c, pp_node *m, tmpl *t, pp_error *e) {
    const void *spec;
    pp_node *where;
    int rc = pp__cat_lookup(c, PP_CAT_LINK, m, "node.pcie", "socket_link",
                            PP_OPTIONAL, &spec, &where, e);
    if (rc) return rc < 0 ? rc : 0;
    const pp_link_spec *l = spec;
    if (l->cls != PP_LCLASS_CPU)
        return pp_error_at(e, PP_EINPUT, where, "node.pcie.socket_link",
                           "\"%s\" is not a CPU socket link (such as upi or "
                           "xgmi)",
                           l->name);
    t->socket_Bps = l->bw_Bps;
    t->socket_lat = l->lat_s;
    return 0;
}

static int read_pcie(pp_cluster *c, tmpl *t, pp_error *e) {
    pp_pcie_layout *p = &c->pcie;
    const char *path = "node.pcie";
    pp_node *m = NULL, *layout = NULL;
    int64_t gen =
        t->gpu->pcie_gen >= 3 && t->gpu->pcie_gen <= 6 ? t->gpu->pcie_gen : 4;
    int64_t sockets = 2, lanes = 128, switches = 0, uplink = 16;
    int32_t *placed_sw = NULL, *placed_sock = NULL;
    int rc;

    /* Without a socket_link, Intel's UPI (the catalogue's "upi") is
     * assumed: the slower of the two common bundles. */
    const pp_link_spec *upi = pp_catalog_link(c->cat, "upi");
    t->socket_Bps = upi ? upi->bw_Bps : 62.4e9;
    t->socket_lat = upi ? upi->lat_s : 100e-9;
    rc = pp_map_node(t->node, "node", "pcie", PP_OPTIONAL, PP_NODE_MAP, &m, e);
    if (rc < 0) return rc;
    t->pcie_map = rc == 0 ? m : NULL;
    if (t->pcie_map) {
        static const char *const keys[] = {"gen",
                                           "sockets",
                                           "lanes_per_socket",
                                           "switches",
                                           "switch_uplink_lanes",
                                           "socket_link",
                                           "layout",
                                           NULL};
        if ((rc = pp__map_keys(m, path, keys, e)) < 0) return rc;
        if ((rc = pp_map_int(m, path, "gen", PP_OPTIONAL, 3, 6, &gen, e)) < 0 ||
            (rc = pp_map_int(m, path, "sockets", PP_OPTIONAL, 1, MAX_SOCKETS,
                             &sockets, e)) < 0 ||
            (rc = pp_map_int(m, path, "lanes_per_socket", PP_OPTIONAL, 1, 1024,
                             &lanes, e)) < 0 ||
            (rc = pp_map_int(m, path, "switches", PP_OPTIONAL, 0,
                             MAX_PCIE_SWITCHES, &switches, e)) < 0 ||
            (rc = read_lanes(m, path, "switch_uplink_lanes", &uplink, e)) < 0 ||
            (rc = read_socket_link(c, m, t, e)) < 0)
            return rc;
        rc = pp_map_node(m, path, "layout", PP_OPTIONAL, PP_NODE_SEQ, &layout,
                         e);
        if (rc < 0) return rc;
        if (rc == 1) layout = NULL;
        if ((rc = pp_map_done(m, path, e)) < 0) return rc;
    }
    p->gen = (int32_t)gen;
    p->sockets = (int32_t)sockets;
    p->lanes_per_socket = (int32_t)lanes;
    p->switches = (int32_t)switches;
    p->switch_uplink_lanes = (int32_t)uplink;
    p->lane_Bps = lane_Bps(c->cat, (int)gen, &t->pcie_lat);
    /* Even spread: switch k under socket k * sockets / switches. */
    for (int32_t k = 0; k < p->switches; k++)
        p->switch_socket[k] = (int32_t)((int64_t)k * sockets / switches);

    p->n_slots = (size_t)(t->gpus + t->nics);
    p->slots = pp_xcalloc(p->n_slots, sizeof *p->slots);
    placed_sw = pp_xmalloc(p->n_slots * sizeof *placed_sw);
    placed_sock = pp_xmalloc(p->n_slots * sizeof *placed_sock);
    for (size_t i = 0; i < p->n_slots; i++) {
        bool gpu = (int64_t)i < t->gpus;
        int64_t local = gpu ? (int64_t)i : (int64_t)i - t->gpus;
        int64_t count = gpu ? t->gpus : t->nics;
        /* Even spread, so GPU i and HCA i share a switch (or socket) when
         * the counts match, and HCA i sits next to GPU i*gpus/nics. */
        if (switches > 0) {
            placed_sw[i] = (int32_t)(local * switches / count);
            placed_sock[i] = -1;
        } else {
            placed_sw[i] = -1;
            placed_sock[i] = (int32_t)(local * sockets / count);
        }
    }
    if (layout && (rc = read_layout(c, layout, t, placed_sw, placed_sock, e)))
        goto out;
    for (size_t i = 0; i < p->n_slots; i++) {
        pp_pcie_slot *s = &p->slots[i];
        bool gpu = (int64_t)i < t->gpus;
        s->kind = gpu ? PP_DEV_GPU : PP_DEV_HCA;
        s->local = (int32_t)(gpu ? (int64_t)i : (int64_t)i - t->gpus);
        s->pcie_switch = placed_sw[i];
        s->socket =
            placed_sw[i] >= 0 ? p->switch_socket[placed_sw[i]] : placed_sock[i];
        s->lanes_wanted =
            gpu ? (t->gpu->pcie_lanes > 0 ? t->gpu->pcie_lanes : 16)
                : (int32_t)t->nic_lanes;
        s->lanes_got = s->lanes_wanted;
    }
    for (int32_t s = 0; s < p->sockets && rc == 0; s++)
        rc = negotiate_socket(c, t, s, e);
out:
    free(placed_sw);
    free(placed_sock);
    return rc;
}

/* ------------------------------------------------------------------------
 * The template's devices and links, with local ids: GPUs, NVSwitches,
 * PCIe switches, CPU sockets, HCAs, in that order.
 * ---------------------------------------------------------------------- */
static void tl_add(tmpl *t, int32_t a, int32_t b, pp_link_kind kind, double bw,
                   double lat, int32_t lanes) {
    PP_VEC_RESERVE(t->links, t->cap_links, t->n_links + 1, 64);
    t->links[t->n_links++] = (tlink){a, b, kind, bw, lat, lanes};
}

static void build_template(pp_cluster *c, tmpl *t) {
    const pp_pcie_layout *p = &c->pcie;
    int32_t G = (int32_t)t->gpus,
            NV = t->intra == INTRA_NVSWITCH ? (int32_t)t->nvswitches : 0;
    int32_t SW = p->switches, S = p->sockets, H = (int32_t)t->nics;
    int32_t nvs0 = G, sw0 = G + NV, cpu0 = sw0 + SW, hca0 = cpu0 + S;

    t->n_devs = (size_t)(hca0 + H);
    t->devs = pp_xmalloc(t->n_devs * sizeof *t->devs);
    for (int32_t i = 0; i < G; i++) t->devs[i] = (tdev){PP_DEV_GPU, i};
    for (int32_t i = 0; i < NV; i++)
        t->devs[nvs0 + i] = (tdev){PP_DEV_NVSWITCH, i};
    for (int32_t i = 0; i < SW; i++)
        t->devs[sw0 + i] = (tdev){PP_DEV_PCIE_SWITCH, i};
    for (int32_t i = 0; i < S; i++) t->devs[cpu0 + i] = (tdev){PP_DEV_CPU, i};
    for (int32_t i = 0; i < H; i++) t->devs[hca0 + i] = (tdev){PP_DEV_HCA, i};

    /* NVLink.  The GPU's NVLink bandwidth is split evenly over its
     * links: over the NVSwitch chips (DGX-A100 has 6, DGX-H100 4; one
     * logical switch by default), over its mesh neighbours, or over its
     * two ring neighbours. */
    double bw = t->nvlink_Bps, lat = t->nvlink_lat;
    if (t->intra == INTRA_NVSWITCH) {
        for (int32_t g = 0; g < G; g++)
            for (int32_t k = 0; k < NV; k++)
                tl_add(t, g, nvs0 + k, PP_LINK_NVLINK, bw / NV, lat, 0);
    } else if (t->intra == INTRA_MESH && G > 1) {
        /* Eight GPUs: DGX-1's hybrid cube-mesh (two fully connected quads,
         * GPU i also joined to GPU i+4), four links per GPU.  Otherwise a
         * full mesh. */
        bool cube = G == 8;
        int32_t degree = cube ? 4 : G - 1;
        for (int32_t i = 0; i < G; i++)
            for (int32_t j = i + 1; j < G; j++)
                if (!cube || i / 4 == j / 4 || j == i + 4)
                    tl_add(t, i, j, PP_LINK_NVLINK, bw / degree, lat, 0);
    } else if (t->intra == INTRA_RING && G > 1) {
        if (G == 2)
            tl_add(t, 0, 1, PP_LINK_NVLINK, bw, lat, 0);
        else
            for (int32_t i = 0; i < G; i++)
                tl_add(t, i, (i + 1) % G, PP_LINK_NVLINK, bw / 2, lat, 0);
    }
    /* PCIe: switch uplinks, then every GPU and HCA at its negotiated
     * width, to its switch or its socket's root port. */
    for (int32_t k = 0; k < SW; k++)
        tl_add(t, sw0 + k, cpu0 + p->switch_socket[k], PP_LINK_PCIE,
               p->switch_uplink_lanes * p->lane_Bps, t->pcie_lat,
               p->switch_uplink_lanes);
    for (size_t i = 0; i < p->n_slots; i++) {
        const pp_pcie_slot *s = &p->slots[i];
        int32_t dev = s->kind == PP_DEV_GPU ? s->local : hca0 + s->local;
        int32_t up =
            s->pcie_switch >= 0 ? sw0 + s->pcie_switch : cpu0 + s->socket;
        tl_add(t, dev, up, PP_LINK_PCIE, s->lanes_got * p->lane_Bps,
               t->pcie_lat, s->lanes_got);
    }
    /* Sockets: all pairs (two-socket boards have one UPI/xGMI bundle;
     * four- and eight-socket boards are close to fully connected). */
    for (int32_t i = 0; i < S; i++)
        for (int32_t j = i + 1; j < S; j++)
            tl_add(t, cpu0 + i, cpu0 + j, PP_LINK_SOCKET, t->socket_Bps,
                   t->socket_lat, 0);
}

static void stamp(pp_cluster *c, tmpl *t) {
    static const char *const suffix[PP_DEV__COUNT] = {[PP_DEV_GPU] = "gpu",
                                                      [PP_DEV_NVSWITCH] = "nvs",
                                                      [PP_DEV_PCIE_SWITCH] =
                                                          "pcie",
                                                      [PP_DEV_CPU] = "cpu",
                                                      [PP_DEV_HCA] = "hca"};
    int32_t G = (int32_t)t->gpus, H = (int32_t)t->nics;
    char name[64];

    c->gpu_ids = pp_xmalloc((size_t)(t->nodes * G) * sizeof *c->gpu_ids);
    c->hca_ids =
        pp_xmalloc((size_t)(H ? t->nodes * H : 1) * sizeof *c->hca_ids);
    for (int32_t n = 0; n < (int32_t)t->nodes; n++) {
        int32_t base = (int32_t)c->n_devs;
        for (size_t i = 0; i < t->n_devs; i++) {
            snprintf(name, sizeof name, "n%d.%s%d", n, suffix[t->devs[i].kind],
                     t->devs[i].local);
            int32_t id = pp__cluster_add_device(c, t->devs[i].kind, n,
                                                t->devs[i].local, name);
            if (t->devs[i].kind == PP_DEV_GPU)
                c->gpu_ids[(size_t)n * G + t->devs[i].local] = id;
            else if (t->devs[i].kind == PP_DEV_HCA)
                c->hca_ids[(size_t)n * H + t->devs[i].local] = id;
        }
        for (size_t i = 0; i < t->n_links; i++) {
            const tlink *l = &t->links[i];
            pp__cluster_add_link(c, base + l->a, base + l->b, l->kind,
                                 l->bw_Bps, l->lat_s, l->lanes);
        }
    }
}

int pp__node_build(pp_cluster *c, pp_node *node, pp_error *e) {
    tmpl t = {0};
    const void *spec = NULL;
    int rc;

    static const char *const keys[] = {"count",       "server",
                                       "gpus",        "intra",
                                       "nvswitches",  "nvlink_bandwidth",
                                       "pcie",        "nics",
                                       "host_memory", NULL};
    t.node = node;
    if ((rc = pp__map_keys(node, "node", keys, e)) < 0) goto out;
    if ((rc = pp_map_int(node, "node", "count", PP_REQUIRED, 1, MAX_NODES,
                         &t.nodes, e)) < 0)
        goto out;
    if ((rc = pp__cat_lookup(c, PP_CAT_SERVER, node, "node", "server",
                             PP_OPTIONAL, &spec, NULL, e)) < 0)
        goto out;
    c->info.server = rc == 0 ? spec : NULL;
    if ((rc = read_gpus(c, &t, e)) < 0 || (rc = read_intra(c, &t, e)) < 0 ||
        (rc = read_nics(c, &t, e)) < 0)
        goto out;
    rc = pp_map_quantity(node, "node", "host_memory", PP_OPTIONAL, PP_Q_BYTES,
                         NULL, false, &c->info.host_memory_bytes, e);
    if (rc < 0) goto out;
    if ((rc = read_pcie(c, &t, e)) < 0) goto out;
    if ((rc = pp_map_done(node, "node", e)) < 0) goto out;

    build_template(c, &t);
    if ((int64_t)t.n_devs * t.nodes > MAX_DEVICES ||
        (int64_t)t.n_links * t.nodes > MAX_LINKS) {
        rc = pp_error_at(e, PP_EINPUT, pp_map_get(node, "count"), "node.count",
                         "%lld nodes of %zu devices and %zu links each "
                         "exceed the limit of %d devices and %d links",
                         (long long)t.nodes, t.n_devs, t.n_links, MAX_DEVICES,
                         MAX_LINKS);
        goto out;
    }
    c->info.nodes = (int32_t)t.nodes;
    c->info.gpus_per_node = (int32_t)t.gpus;
    c->info.hcas_per_node = (int32_t)t.nics;
    c->info.gpus = (int32_t)(t.nodes * t.gpus);
    c->info.hcas = (int32_t)(t.nodes * t.nics);
    c->info.gpu = t.gpu;
    c->info.nic = t.nics > 0 ? t.nic : NULL;
    c->info.nic_Bps = t.nics > 0 ? t.nic->bw_Bps : 0;
    snprintf(c->intra, sizeof c->intra, "%s", intra_names[t.intra]);
    /* Reserve once: the per-node copy loop then never reallocates. */
    c->cap_devs = t.n_devs * (size_t)t.nodes + 1024;
    c->devs = pp_xrealloc(c->devs, c->cap_devs * sizeof *c->devs);
    c->names = pp_xrealloc(c->names, c->cap_devs * sizeof *c->names);
    c->cap_links = 2 * t.n_links * (size_t)t.nodes + 4096;
    c->links = pp_xrealloc(c->links, c->cap_links * sizeof *c->links);
    stamp(c, &t);
    rc = 0;
out:
    free(t.devs);
    free(t.links);
    return rc;
}
