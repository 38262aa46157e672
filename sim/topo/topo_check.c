/*
 * topo_check.c: `podplan topo check`, problems of a built cluster.
 *
 * Severities (documented in `podplan topo --help` too):
 *   error    a GPU cut off from the others, a switch with more links than
 *            ports, a rail (or an HCA) that no leaf serves, a CPU socket
 *            whose PCIe lane budget is exceeded (devices negotiate a
 *            narrower width, so the server does not run as specified);
 *   warning  a PCIe switch whose uplink is narrower than the devices below
 *            it, a GPU whose nearest HCA sits under the other CPU socket
 *            (no GPUDirect RDMA path): the cluster works, but slower.
 *
 * Every server is built from one template (c->pcie), so the PCIe checks
 * run once on the template and name the devices as "n*.cpu1" (every
 * server) or "n0.cpu1" when there is only one.  Checks that scale with the
 * cluster (connectivity, ports) report at most PP_CHECK_CAP problems each,
 * then one line that counts the rest, so a broken 16k-GPU file stays
 * readable.
 */
#include "sim_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define PP_CHECK_CAP 16

typedef struct plist {
    pp_problem *v;
    size_t n, cap;
} plist;

static void add(plist *p, pp_severity sev, const char *where, const char *fmt,
                ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static void add(plist *p, pp_severity sev, const char *where, const char *fmt,
                ...) {
    PP_VEC_RESERVE(p->v, p->cap, p->n + 1, 16);
    pp_problem *x = &p->v[p->n++];
    memset(x, 0, sizeof *x);
    x->severity = sev;
    snprintf(x->where, sizeof x->where, "%s", where);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->message, sizeof x->message, fmt, ap);
    va_end(ap);
}

/* Bounded appending into a message buffer: long device lists are cut,
 * never overflowed. */
static void cat(char *buf, size_t len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void cat(char *buf, size_t len, const char *fmt, ...) {
    size_t used = strlen(buf);
    if (used + 1 >= len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

static bool is_fabric_switch(pp_dev_kind k) {
    return k == PP_DEV_LEAF || k == PP_DEV_SPINE || k == PP_DEV_CORE;
}

static const char *level_word(pp_dev_kind k) {
    switch (k) {
    case PP_DEV_LEAF: return "leaf";
    case PP_DEV_SPINE: return "spine";
    case PP_DEV_CORE: return "core";
    case PP_DEV_NVSWITCH: return "NVSwitch";
    case PP_DEV_PCIE_SWITCH: return "PCIe";
    default: return "switch";
    }
}

/* "n*.cpu1" for a template device of a multi-server cluster. */
static void tmpl_where(const pp_cluster *c, char *buf, size_t len,
                       const char *what, int idx) {
    snprintf(buf, len, "%s.%s%d", c->info.nodes > 1 ? "n*" : "n0", what, idx);
}

/* ---- 1. connectivity ---------------------------------------------------
 * Components by BFS over the CSR (links come in pairs, so following the
 * out-links is an undirected search).  The component holding the most
 * GPUs is "the cluster"; every GPU outside it is cut off.  Whole servers
 * cut off are reported as one problem, not eight. */
static void check_connected(const pp_cluster *c, plist *p) {
    size_t nd = c->n_devs;
    if (nd == 0) return;
    int32_t *comp = pp_xmalloc(nd * sizeof *comp);
    int32_t *queue = pp_xmalloc(nd * sizeof *queue);
    int32_t *gpus_in = pp_xcalloc(nd, sizeof *gpus_in); /* per component */
    int32_t ncomp = 0;
    for (size_t i = 0; i < nd; i++) comp[i] = -1;
    for (size_t s = 0; s < nd; s++) {
        if (comp[s] >= 0) continue;
        size_t head = 0, tail = 0;
        queue[tail++] = (int32_t)s;
        comp[s] = ncomp;
        while (head < tail) {
            int32_t d = queue[head++];
            if (c->devs[d].kind == PP_DEV_GPU) gpus_in[ncomp]++;
            for (int32_t k = c->out_off[d]; k < c->out_off[d + 1]; k++) {
                int32_t to = c->links[c->out_ids[k]].dst;
                if (comp[to] < 0) {
                    comp[to] = ncomp;
                    queue[tail++] = to;
                }
            }
        }
        ncomp++;
    }
    int32_t main_comp = 0;
    for (int32_t k = 1; k < ncomp; k++)
        if (gpus_in[k] > gpus_in[main_comp]) main_comp = k;

    /* A reference GPU to name in the messages. */
    int32_t ref = -1;
    for (size_t i = 0; i < nd && ref < 0; i++)
        if (c->devs[i].kind == PP_DEV_GPU && comp[i] == main_comp)
            ref = (int32_t)i;

    int32_t gpn = c->info.gpus_per_node;
    size_t reported = 0, more_gpus = 0;
    for (int32_t node = 0; node < c->info.nodes && gpn > 0; node++) {
        int32_t cut = 0;
        for (int32_t g = 0; g < gpn; g++) {
            int32_t d = c->gpu_ids[(size_t)node * gpn + g];
            if (d >= 0 && comp[d] != main_comp) cut++;
        }
        if (cut == 0) continue;
        if (reported >= PP_CHECK_CAP) {
            more_gpus += (size_t)cut;
            continue;
        }
        char where[64];
        if (cut == gpn) {
            snprintf(where, sizeof where, "n%d", (int)node);
            add(p, PP_SEV_ERROR, where,
                "all %d GPUs of server n%d are cut off from %s: no path "
                "through NVLink, PCIe or the network",
                (int)gpn, (int)node, ref >= 0 ? c->devs[ref].name : "the rest");
            reported++;
            continue;
        }
        for (int32_t g = 0; g < gpn; g++) {
            int32_t d = c->gpu_ids[(size_t)node * gpn + g];
            if (d < 0 || comp[d] == main_comp) continue;
            if (reported >= PP_CHECK_CAP) {
                more_gpus++;
                continue;
            }
            add(p, PP_SEV_ERROR, c->devs[d].name,
                "GPU %s is cut off from %s: no path through NVLink, PCIe or "
                "the network",
                c->devs[d].name, ref >= 0 ? c->devs[ref].name : "the rest");
            reported++;
        }
    }
    if (more_gpus)
        add(p, PP_SEV_ERROR, "cluster",
            "%zu more GPUs are cut off (only the first %d problems are "
            "listed)",
            more_gpus, PP_CHECK_CAP);
    free(gpus_in);
    free(queue);
    free(comp);
}

/* ---- 2. switch ports ---------------------------------------------------
 * Each physical link takes one port; links come in pairs, so a switch's
 * out-degree is the number of ports it uses. */
static void check_ports(const pp_cluster *c, plist *p) {
    for (int k = 0; k < PP_DEV__COUNT; k++) {
        int32_t radix = c->switch_radix[k];
        if (radix <= 0) continue;
        size_t reported = 0, more = 0;
        for (size_t d = 0; d < c->n_devs; d++) {
            if ((int)c->devs[d].kind != k) continue;
            int32_t used = c->out_off[d + 1] - c->out_off[d];
            if (used <= radix) continue;
            if (reported++ >= PP_CHECK_CAP) {
                more++;
                continue;
            }
            add(p, PP_SEV_ERROR, c->devs[d].name,
                "%s has %d links but a %s switch has only %d ports",
                c->devs[d].name, (int)used, level_word((pp_dev_kind)k),
                (int)radix);
        }
        if (more)
            add(p, PP_SEV_ERROR, level_word((pp_dev_kind)k),
                "%zu more %s switches have more links than ports", more,
                level_word((pp_dev_kind)k));
    }
}

/* ---- 3. rails and HCAs without a leaf ----------------------------------
 * Rail-optimised fabrics (generator wiring "rail", or explicit leaves
 * tagged with a rail) must have a leaf for every HCA index; in any fabric
 * every HCA needs a cable.  Skipped where there is no fabric at all: a
 * lone server's HCA has nothing to plug into and that is not a fault. */
static bool hca_wired(const pp_cluster *c, int32_t h) {
    for (int32_t k = c->out_off[h]; k < c->out_off[h + 1]; k++)
        if (c->links[c->out_ids[k]].kind == PP_LINK_HOST) return true;
    return false;
}

static void check_rails(const pp_cluster *c, plist *p) {
    bool have_fabric = false, rail = strcmp(c->wiring, "rail") == 0;
    for (size_t d = 0; d < c->n_devs; d++) {
        if (!is_fabric_switch(c->devs[d].kind)) continue;
        have_fabric = true;
        if (c->devs[d].kind == PP_DEV_LEAF && c->devs[d].rail >= 0) rail = true;
    }
    int32_t hpn = c->info.hcas_per_node;
    if (!have_fabric || hpn <= 0 || !c->hca_ids) return;
    size_t reported = 0, more = 0;
    for (int32_t r = 0; r < hpn; r++) {
        int32_t unwired = 0;
        for (int32_t node = 0; node < c->info.nodes; node++) {
            int32_t h = c->hca_ids[(size_t)node * hpn + r];
            if (h >= 0 && !hca_wired(c, h)) unwired++;
        }
        bool served = !rail;
        for (size_t d = 0; d < c->n_devs && !served; d++)
            served = c->devs[d].kind == PP_DEV_LEAF && c->devs[d].rail == r;
        if (!served) {
            char where[32];
            snprintf(where, sizeof where, "rail %d", (int)r);
            add(p, PP_SEV_ERROR, where,
                "no leaf serves rail %d (HCA %d of every server): %d of its "
                "%d HCAs have no cable%s",
                (int)r, (int)r, (int)unwired, (int)c->info.nodes,
                unwired < c->info.nodes ? ", the rest are cabled to other "
                                          "rails' leaves"
                                        : "");
            continue;
        }
        for (int32_t node = 0; node < c->info.nodes && unwired; node++) {
            int32_t h = c->hca_ids[(size_t)node * hpn + r];
            if (h < 0 || hca_wired(c, h)) continue;
            if (reported++ >= PP_CHECK_CAP) {
                more++;
                continue;
            }
            add(p, PP_SEV_ERROR, c->devs[h].name,
                "%s has no cable to a leaf switch", c->devs[h].name);
        }
    }
    if (more)
        add(p, PP_SEV_ERROR, "fabric", "%zu more HCAs have no cable to a leaf",
            more);
}

/* ---- 4-6. the PCIe tree of the server template ------------------------- */

static const char *slot_word(const pp_pcie_slot *s) {
    return s->kind == PP_DEV_GPU ? "gpu" : "hca";
}

static double lane_Bps(const pp_pcie_layout *L) {
    if (L->lane_Bps > 0) return L->lane_Bps;
    /* Per lane, per direction, after line coding: 8 GT/s x 128/130 for
     * gen3 is 0.985 GB/s; each generation doubles it. */
    switch (L->gen) {
    case 3: return 0.9846e9;
    case 4: return 1.969e9;
    case 5: return 3.938e9;
    case 6: return 7.877e9;
    default: return 0;
    }
}

/* PCIe is quoted in bytes per second ("15.75GB/s"), as its datasheets do. */
static void gbs(double Bps, char *buf, size_t len) {
    char b[40];
    pp_unit_format(Bps, PP_Q_BYTES, 4, b, sizeof b);
    snprintf(buf, len, "%s/s", b);
}

/* Lanes a slot ended up with.  The loader negotiates widths (lanes_got);
 * where it left them at 0 we apply the same rule ourselves: the socket's
 * last devices are halved until the budget holds (domain.md: the socket
 * with four x16 devices on 48 lanes gives two of them x8). */
static void negotiate(const pp_pcie_layout *L, int32_t sock, int32_t *got) {
    int32_t used = 0;
    for (int32_t k = 0; k < L->switches && k < 64; k++)
        if (L->switch_socket[k] == sock) used += L->switch_uplink_lanes;
    for (size_t i = 0; i < L->n_slots; i++) {
        const pp_pcie_slot *s = &L->slots[i];
        if (s->socket != sock || s->pcie_switch >= 0) continue;
        got[i] = s->lanes_wanted;
        used += s->lanes_wanted;
    }
    int32_t over = used - L->lanes_per_socket;
    while (over > 0) {
        bool changed = false;
        for (size_t j = L->n_slots; j-- > 0 && over > 0;) {
            const pp_pcie_slot *s = &L->slots[j];
            if (s->socket != sock || s->pcie_switch >= 0 || got[j] <= 1)
                continue;
            /* Only halve the widest devices in this round. */
            int32_t widest = 0;
            for (size_t q = 0; q < L->n_slots; q++)
                if (L->slots[q].socket == sock && L->slots[q].pcie_switch < 0 &&
                    got[q] > widest)
                    widest = got[q];
            if (got[j] != widest) continue;
            over -= got[j] / 2;
            got[j] /= 2;
            changed = true;
        }
        if (!changed) break;
    }
}

/* Root-port devices of a socket that were narrowed (dropped) or not. */
static bool in_group(const pp_pcie_layout *L, const int32_t *got, size_t i,
                     int32_t sock, int dropped) {
    const pp_pcie_slot *s = &L->slots[i];
    return s->socket == sock && s->pcie_switch < 0 &&
           (got[i] < s->lanes_wanted) == (dropped != 0);
}

/* The widest width below `below` in a group; -1 when none is left. */
static int32_t next_width(const pp_pcie_layout *L, const int32_t *got,
                          int32_t sock, int dropped, int32_t below) {
    int32_t best = -1;
    for (size_t i = 0; i < L->n_slots; i++)
        if (in_group(L, got, i, sock, dropped) && got[i] < below &&
            got[i] > best)
            best = got[i];
    return best;
}

/* "gpu2, gpu5 and hca0": the group's devices at one width. */
static int32_t list_slots(const pp_pcie_layout *L, const int32_t *got,
                          int32_t sock, int dropped, int32_t width, char *buf,
                          size_t len) {
    int32_t cnt = 0, k = 0;
    for (size_t i = 0; i < L->n_slots; i++)
        if (in_group(L, got, i, sock, dropped) && got[i] == width) cnt++;
    buf[0] = '\0';
    for (size_t i = 0; i < L->n_slots; i++) {
        if (!in_group(L, got, i, sock, dropped) || got[i] != width) continue;
        k++;
        cat(buf, len, "%s%s%d",
            k == 1     ? ""
            : k == cnt ? " and "
                       : ", ",
            slot_word(&L->slots[i]), (int)L->slots[i].local);
    }
    return cnt;
}

static void check_lanes(const pp_cluster *c, plist *p) {
    const pp_pcie_layout *L = &c->pcie;
    if (!L->slots || L->n_slots == 0 || L->lanes_per_socket <= 0) return;
    double lane = lane_Bps(L);
    int32_t *got = pp_xcalloc(L->n_slots, sizeof *got);
    bool loader_set = false;
    for (size_t i = 0; i < L->n_slots; i++) {
        got[i] = L->slots[i].lanes_got;
        if (got[i] > 0) loader_set = true;
    }
    for (int32_t sock = 0; sock < L->sockets; sock++) {
        int32_t wanted = 0, ndev = 0, nsw = 0;
        for (int32_t k = 0; k < L->switches && k < 64; k++)
            if (L->switch_socket[k] == sock) {
                wanted += L->switch_uplink_lanes;
                nsw++;
            }
        for (size_t i = 0; i < L->n_slots; i++) {
            const pp_pcie_slot *s = &L->slots[i];
            if (s->socket != sock || s->pcie_switch >= 0) continue;
            wanted += s->lanes_wanted;
            ndev++;
        }
        if (wanted <= L->lanes_per_socket) continue;
        if (!loader_set) negotiate(L, sock, got);

        char where[64], msg[512] = "";
        tmpl_where(c, where, sizeof where, "cpu", (int)sock);
        cat(msg, sizeof msg, "socket %d has %d device%s", (int)sock, (int)ndev,
            ndev == 1 ? "" : "s");
        if (nsw)
            cat(msg, sizeof msg, " and %d PCIe switch uplink%s", (int)nsw,
                nsw == 1 ? "" : "s");
        cat(msg, sizeof msg, " wanting %d lanes on a %d-lane budget",
            (int)wanted, (int)L->lanes_per_socket);

        /* The narrowed devices grouped by the width they got, widest
         * first, then those that keep their width: each with the
         * bandwidth it is left with. */
        bool any_drop = false, first = true;
        for (int dropped = 1; dropped >= 0; dropped--) {
            for (int32_t width = INT32_MAX;;) {
                width = next_width(L, got, sock, dropped, width);
                if (width <= 0) break;
                char names[256], bw[48];
                int32_t cnt = list_slots(L, got, sock, dropped, width, names,
                                         sizeof names);
                const char *verb = dropped ? (cnt == 1 ? "drops to" : "drop to")
                                           : (cnt == 1 ? "keeps" : "keep");
                gbs(width * lane, bw, sizeof bw);
                cat(msg, sizeof msg, "%s %s %s x%d (%s%s)", first ? ":" : ";",
                    names, verb, (int)width, bw, cnt == 1 ? "" : " each");
                any_drop |= dropped;
                first = false;
            }
        }
        if (!any_drop) cat(msg, sizeof msg, "; no device was narrowed to fit");
        add(p, PP_SEV_ERROR, where, "%s", msg);
    }
    free(got);
}

static void check_pcie_switches(const pp_cluster *c, plist *p) {
    const pp_pcie_layout *L = &c->pcie;
    if (!L->slots || L->switch_uplink_lanes <= 0) return;
    double lane = lane_Bps(L);
    for (int32_t k = 0; k < L->switches && k < 64; k++) {
        int32_t lanes = 0, cnt = 0;
        char names[256] = "";
        for (size_t i = 0; i < L->n_slots; i++) {
            const pp_pcie_slot *s = &L->slots[i];
            if (s->pcie_switch != k) continue;
            lanes += s->lanes_got > 0 ? s->lanes_got : s->lanes_wanted;
            cat(names, sizeof names, "%s%s%d", cnt ? ", " : "", slot_word(s),
                (int)s->local);
            cnt++;
        }
        if (lanes <= L->switch_uplink_lanes) continue;
        char where[64], bw[48];
        tmpl_where(c, where, sizeof where, "pcie", (int)k);
        gbs(L->switch_uplink_lanes * lane, bw, sizeof bw);
        add(p, PP_SEV_WARNING, where,
            "PCIe switch %d carries %d devices (%s: %d lanes) over a x%d "
            "uplink to socket %d (%.3g:1): their host traffic and any "
            "GPUDirect traffic leaving the switch share %s",
            (int)k, (int)cnt, names, (int)lanes, (int)L->switch_uplink_lanes,
            (int)L->switch_socket[k], (double)lanes / L->switch_uplink_lanes,
            bw);
    }
}

static const pp_pcie_slot *find_slot(const pp_pcie_layout *L, pp_dev_kind k,
                                     int32_t local) {
    for (size_t i = 0; i < L->n_slots; i++)
        if (L->slots[i].kind == k && L->slots[i].local == local)
            return &L->slots[i];
    return NULL;
}

/* GPUs whose paired HCA is under the other socket, one problem per
 * (GPU socket, HCA) pair: "gpu3, gpu4 and gpu5 (socket 1) use hca0
 * (socket 0)" reads better than three lines. */
static void check_sockets(const pp_cluster *c, plist *p) {
    const pp_pcie_layout *L = &c->pcie;
    int32_t gpn = c->info.gpus_per_node;
    if (!L->slots || L->sockets < 2 || c->info.hcas_per_node <= 0 ||
        c->info.nodes <= 0 || gpn <= 0)
        return;
    /* pair[g]: the HCA local index GPU g uses, -1 none; -2 when fine */
    int32_t *pair = pp_xmalloc((size_t)gpn * sizeof *pair);
    for (int32_t g = 0; g < gpn; g++) {
        const pp_pcie_slot *gs = find_slot(L, PP_DEV_GPU, g);
        int32_t gd = pp_cluster_gpu(c, 0, g);
        pair[g] = -2;
        if (!gs || gd < 0) continue;
        int32_t hd = pp_cluster_gpu_hca(c, gd);
        const pp_pcie_slot *hs =
            hd >= 0 ? find_slot(L, PP_DEV_HCA, c->devs[hd].local) : NULL;
        if (hs && hs->socket == gs->socket) continue;
        pair[g] = hs ? hs->local : -1;
    }
    for (int32_t g = 0; g < gpn; g++) {
        if (pair[g] == -2) continue;
        const pp_pcie_slot *gs = find_slot(L, PP_DEV_GPU, g);
        const pp_pcie_slot *hs =
            pair[g] >= 0 ? find_slot(L, PP_DEV_HCA, pair[g]) : NULL;
        int32_t h = pair[g], cnt = 0, k = 0;
        for (int32_t q = g; q < gpn; q++)
            if (pair[q] == h &&
                find_slot(L, PP_DEV_GPU, q)->socket == gs->socket)
                cnt++;
        char names[256] = "", where[64];
        for (int32_t q = g; q < gpn; q++) {
            if (pair[q] != h ||
                find_slot(L, PP_DEV_GPU, q)->socket != gs->socket)
                continue;
            k++;
            cat(names, sizeof names, "%sgpu%d",
                k == 1     ? ""
                : k == cnt ? " and "
                           : ", ",
                (int)q);
            pair[q] = -2; /* reported */
        }
        tmpl_where(c, where, sizeof where, "cpu", (int)gs->socket);
        if (hs)
            add(p, PP_SEV_WARNING, where,
                "%s (socket %d) %s paired with hca%d (socket %d): network "
                "traffic crosses the socket link, no GPUDirect RDMA path",
                names, (int)gs->socket, cnt == 1 ? "is" : "are", (int)hs->local,
                (int)hs->socket);
        else
            add(p, PP_SEV_WARNING, where,
                "%s (socket %d) %s no HCA under %s socket: network traffic "
                "crosses the socket link, no GPUDirect RDMA path",
                names, (int)gs->socket, cnt == 1 ? "has" : "have",
                cnt == 1 ? "its" : "their");
    }
    free(pair);
}

int pp_topo_check(const pp_cluster *c, pp_problem **out, size_t *n,
                  pp_error *e) {
    if (!c || !out || !n)
        return pp_error_set(e, PP_EINVAL, "pp_topo_check: NULL argument");
    if (!c->out_off && c->n_devs)
        return pp_error_set(e, PP_EINTERNAL,
                            "pp_topo_check: cluster graph not built");
    plist p = {0};
    check_connected(c, &p);
    check_ports(c, &p);
    check_rails(c, &p);
    check_lanes(c, &p);
    check_pcie_switches(c, &p);
    check_sockets(c, &p);
    /* Errors first, each group in the order found (a stable partition;
     * qsort is not stable). */
    if (p.n > 1) {
        pp_problem *tmp = pp_xmalloc(p.n * sizeof *tmp);
        size_t k = 0;
        for (int sev = PP_SEV_ERROR; sev >= PP_SEV_INFO; sev--)
            for (size_t i = 0; i < p.n; i++)
                if ((int)p.v[i].severity == sev) tmp[k++] = p.v[i];
        memcpy(p.v, tmp, p.n * sizeof *tmp);
        free(tmp);
    }
    *out = p.v;
    *n = p.n;
    return 0;
}
