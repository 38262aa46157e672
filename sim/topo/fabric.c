/*
 * sim/topo/fabric.c: the `fabric:` section.  Generators (single-switch,
 * leaf-spine, fat-tree) and the explicit form all end as switches and
 * cables added through pp__cluster_add_device / pp__cluster_add_link, so
 * everything downstream sees one representation.
 *
 * Sizing rules (documented in topologies/README.md):
 *   a leaf with radix R at over-subscription r takes at most d host ports,
 *   the largest d with d + ceil(d / r) <= R; it gets ceil(down / r)
 *   uplinks for the down ports it uses.  Rail wiring gives each rail
 *   ceil(nodes / d) leaves (leaf k*H + h takes HCA h of group k); ToR
 *   wiring puts floor(d / H) whole nodes on each leaf.  Spines default to
 *   ceil(uplinks / spine down ports) and uplinks go round-robin over them.
 *   Every port count is checked against the radix: a generator never
 *   builds a switch with more cables than ports.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fabric_int.h"

enum { FAB_SINGLE, FAB_LEAF_SPINE, FAB_FAT_TREE, FAB_EXPLICIT };
static const char *const kind_names[] = {"single-switch", "leaf-spine",
                                         "fat-tree", "explicit", NULL};
enum { WIRE_RAIL, WIRE_TOR };
static const char *const wiring_names[] = {"rail", "tor", NULL};
const char *const pp__fabric_levels[] = {"leaf", "spine", "core", NULL};

#define MAX_RADIX 100000

/* Which fabric kinds read which key (bit per kind), so a key that the
 * chosen kind ignores is reported as such rather than silently unused. */
#define K_S (1u << FAB_SINGLE)
#define K_L (1u << FAB_LEAF_SPINE)
#define K_F (1u << FAB_FAT_TREE)
#define K_E (1u << FAB_EXPLICIT)
static const struct {
    const char *key;
    unsigned kinds;
} fabric_keys[] = {
    {"switch", K_S | K_L | K_F | K_E},
    {"link", K_S | K_L | K_F | K_E},
    {"radix", K_S | K_L | K_F},
    {"oversubscription", K_L | K_F},
    {"wiring", K_L | K_F},
    {"spines", K_L},
    {"pods", K_F},
    {"nodes_per_pod", K_F},
    {"spines_per_pod", K_F},
    {"cores", K_F},
    {"spine_oversubscription", K_F},
    {"switches", K_E},
    {"links", K_E},
};

/* ------------------------------------------------------------------------
 * Small helpers.
 * ---------------------------------------------------------------------- */

/* Uplinks for `down` used down ports at ratio r (down:up).  The epsilon
 * keeps an exact quotient that floating point lands just above (a ratio
 * such as 1.1 is not exact in binary) from rounding up one too many. */
static int64_t ups_for(int64_t down, double r) {
    return (int64_t)ceil((double)down / r - 1e-9);
}

/* Most down ports a switch of radix R can give at ratio r. */
static int64_t max_down(int64_t R, double r) {
    int64_t d = R;
    while (d > 0 && d + ups_for(d, r) > R) d--;
    return d;
}

static int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

/* The node an error about switch ports points at: the radix override
 * when given, else the switch name. */
static int radix_error(fab *f, pp_error *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int radix_error(fab *f, pp_error *e, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (f->radix_node)
        return pp_error_at(e, PP_EINPUT, f->radix_node, "fabric.radix",
                           "radix exceeded: %s", msg);
    return pp_error_at(e, PP_EINPUT, f->sw_node ? f->sw_node : f->map,
                       f->sw_node ? "fabric.switch" : "fabric",
                       "radix exceeded: %s", msg);
}

static int32_t add_switch(pp_cluster *c, pp_dev_kind kind, int32_t local,
                          int32_t pod, int32_t rail) {
    char name[32];
    snprintf(name, sizeof name, "%s%d",
             kind == PP_DEV_LEAF    ? "leaf"
             : kind == PP_DEV_SPINE ? "spine"
                                    : "core",
             local);
    int32_t id = pp__cluster_add_device(c, kind, -1, local, name);
    c->devs[id].pod = pod;
    c->devs[id].rail = rail;
    return id;
}

/* ------------------------------------------------------------------------
 * Leaves: cable nodes [n0, n1) to new leaves.  down[] receives each new
 * leaf's used down ports; returns the number of leaves added.
 * ---------------------------------------------------------------------- */
static int32_t place_leaves(pp_cluster *c, fab *f, int32_t n0, int32_t n1,
                            int32_t pod, int64_t dmax, int64_t *down) {
    int32_t H = c->info.hcas_per_node, Np = n1 - n0;
    double host_bw = fmin(f->bw, c->info.nic_Bps);
    int32_t base = (int32_t)c->n_devs, L; /* device id of the first leaf */

    if (f->wiring == WIRE_RAIL) {
        int32_t groups = (int32_t)ceil_div(Np, dmax);
        L = groups * H;
        for (int32_t k = 0; k < groups; k++)
            for (int32_t h = 0; h < H; h++) {
                add_switch(c, PP_DEV_LEAF, f->n_leaves++, pod, h);
                down[k * H + h] = 0;
            }
        if (c->leaves_per_rail < groups) c->leaves_per_rail = groups;
        for (int32_t i = 0; i < Np; i++) {
            int32_t k = (int32_t)((int64_t)i * groups / Np);
            for (int32_t h = 0; h < H; h++) {
                int32_t leaf = base + k * H + h;
                pp__fabric_cable(c, pp_cluster_hca(c, n0 + i, h), leaf,
                                 PP_LINK_HOST, host_bw, f->lat, 0, f->sw_lat);
                down[k * H + h]++;
            }
        }
    } else {
        int64_t per = dmax / H;
        L = (int32_t)ceil_div(Np, per);
        for (int32_t k = 0; k < L; k++) {
            add_switch(c, PP_DEV_LEAF, f->n_leaves++, pod, -1);
            down[k] = 0;
        }
        for (int32_t i = 0; i < Np; i++) {
            int32_t k = (int32_t)((int64_t)i * L / Np);
            int32_t leaf = base + k;
            for (int32_t h = 0; h < H; h++)
                pp__fabric_cable(c, pp_cluster_hca(c, n0 + i, h), leaf,
                                 PP_LINK_HOST, host_bw, f->lat, 0, f->sw_lat);
            down[k] += H;
        }
    }
    return L;
}

/* Where each lower switch's uplinks start on the ring of upper switches:
 * one counter runs over all uplinks in switch order, so switch l takes
 * uppers start[l], start[l]+1, ... (mod n_up) and every upper switch ends
 * within one cable of the others.  (Staggering the rails or pairing them
 * was tried on TITAN, where a leaf reaches only 18-19 of 26 spines: it
 * evens out one adversarial bisection split only by unbalancing another,
 * and the plain counter gave the best worst case, 98.5% of full.) */
static void plan_starts(const int64_t *down, int32_t n, double r,
                        int64_t *start) {
    int64_t at = 0;
    for (int32_t l = 0; l < n; l++) {
        start[l] = at;
        at += ups_for(down[l], r);
    }
}

/* Cables each lower switch's ceil(down / r) uplinks to the upper switches
 * [up0, up0 + n_up) from start[l] on, and adds the cables each upper
 * switch receives to up_down[].  Returns the fewest uplinks of any lower
 * switch. */
static int64_t connect_up(pp_cluster *c, fab *f, int32_t low0,
                          const int64_t *down, int32_t n_low, int32_t up0,
                          int32_t n_up, double r, const int64_t *start,
                          int64_t *up_down) {
    int64_t fewest = INT64_MAX;
    for (int32_t l = 0; l < n_low; l++) {
        int64_t u = ups_for(down[l], r);
        if (u < fewest) fewest = u;
        for (int64_t k = 0; k < u; k++) {
            int32_t s = (int32_t)((start[l] + k) % n_up);
            pp__fabric_cable(c, low0 + l, up0 + s, PP_LINK_FABRIC, f->bw,
                             f->lat, f->sw_lat, f->sw_lat);
            up_down[s]++;
        }
    }
    return fewest;
}

/* Two lower switches can only reach each other through an upper switch
 * both are cabled to.  A switch with fewer uplinks than there are upper
 * switches reaches only some of them; when every one reaches more than
 * half, any two share one (round-robin gives distinct ones). */
static bool share_upper(int64_t fewest_up, int32_t n_up) {
    return fewest_up >= n_up || 2 * fewest_up > n_up;
}

/* ------------------------------------------------------------------------
 * Generators.
 * ---------------------------------------------------------------------- */
static int gen_single(pp_cluster *c, fab *f, pp_error *e) {
    int64_t ports = (int64_t)c->info.nodes * c->info.hcas_per_node;
    if (ports > f->radix)
        return radix_error(f, e,
                           "a single switch needs %lld ports for %d nodes "
                           "of %d HCAs, but a %s has %lld",
                           (long long)ports, c->info.nodes,
                           c->info.hcas_per_node, f->sw->name,
                           (long long)f->radix);
    int32_t leaf = add_switch(c, PP_DEV_LEAF, f->n_leaves++, -1, -1);
    double bw = fmin(f->bw, c->info.nic_Bps);
    for (int32_t n = 0; n < c->info.nodes; n++)
        for (int32_t h = 0; h < c->info.hcas_per_node; h++)
            pp__fabric_cable(c, pp_cluster_hca(c, n, h), leaf, PP_LINK_HOST, bw,
                             f->lat, 0, f->sw_lat);
    return 0;
}

static int check_leaf_fit(fab *f, int64_t dmax, int32_t H, pp_error *e) {
    if (dmax < 1)
        return radix_error(f, e, "a %lld-port leaf has no host port at %g:1",
                           (long long)f->radix, f->ratio);
    if (f->wiring == WIRE_TOR && dmax < H)
        return radix_error(f, e,
                           "tor wiring puts all %d HCAs of a node on one "
                           "leaf, but a %lld-port leaf at %g:1 has %lld host "
                           "ports",
                           H, (long long)f->radix, f->ratio, (long long)dmax);
    return 0;
}

static int gen_leaf_spine(pp_cluster *c, fab *f, pp_error *e) {
    int32_t N = c->info.nodes, H = c->info.hcas_per_node;
    int64_t dmax = max_down(f->radix, f->ratio), spines = 0;
    pp_node *spines_node = NULL;
    int rc;

    rc = pp_map_int(f->map, "fabric", "spines", PP_OPTIONAL, 1, MAX_SWITCHES,
                    &spines, e);
    if (rc < 0) return rc;
    if (rc == 0) spines_node = pp_map_get(f->map, "spines");
    if ((rc = check_leaf_fit(f, dmax, H, e)) < 0) return rc;

    int64_t *down = pp_xcalloc((size_t)N * H, sizeof *down);
    int64_t *start = pp_xcalloc((size_t)N * H, sizeof *start);
    int64_t *spine_down = NULL;
    int32_t leaf0 = (int32_t)c->n_devs;
    int32_t L = place_leaves(c, f, 0, N, -1, dmax, down);
    int64_t U = 0, fewest = INT64_MAX;
    for (int32_t l = 0; l < L; l++) {
        U += ups_for(down[l], f->ratio);
        if (ups_for(down[l], f->ratio) < fewest)
            fewest = ups_for(down[l], f->ratio);
    }
    rc = 0;
    /* A lone leaf is a single switch: spines would carry nothing. */
    if (L == 1 && !spines_node) goto out;
    if (!spines_node) spines = ceil_div(U, f->radix);
    if (ceil_div(U, spines) > f->radix) {
        rc = pp_error_at(e, PP_EINPUT, spines_node, "fabric.spines",
                         "radix exceeded: %lld leaf uplinks over %lld "
                         "spines need %lld ports per spine, but a %s has "
                         "%lld",
                         (long long)U, (long long)spines,
                         (long long)ceil_div(U, spines), f->sw->name,
                         (long long)f->radix);
        goto out;
    }
    if (!share_upper(fewest, (int32_t)spines)) {
        if (spines_node)
            rc = pp_error_at(e, PP_EINPUT, spines_node, "fabric.spines",
                             "radix exceeded: %d leaves of %lld uplinks "
                             "cannot all share a spine among %lld spines",
                             L, (long long)fewest, (long long)spines);
        else
            rc = radix_error(f, e,
                             "%d leaves of %lld uplinks cannot all share a "
                             "spine among %lld spines (a two-level fabric of "
                             "%lld-port switches is too small here: use "
                             "kind: fat-tree)",
                             L, (long long)fewest, (long long)spines,
                             (long long)f->radix);
        goto out;
    }
    int32_t spine0 = (int32_t)c->n_devs;
    for (int32_t s = 0; s < spines; s++)
        add_switch(c, PP_DEV_SPINE, f->n_spines++, -1, -1);
    spine_down = pp_xcalloc((size_t)spines, sizeof *spine_down);
    plan_starts(down, L, f->ratio, start);
    connect_up(c, f, leaf0, down, L, spine0, (int32_t)spines, f->ratio, start,
               spine_down);
out:
    free(spine_down);
    free(start);
    free(down);
    return rc;
}

/* Three levels.  Nodes are split evenly into pods; inside a pod, leaves
 * are wired as in leaf-spine (rail-optimised as in NVIDIA's DGX
 * SuperPOD: leaf k*H+h of the pod takes HCA h of the pod's k-th group of
 * nodes) and every leaf spreads its uplinks over the pod's spines; every
 * spine spreads its uplinks over all core switches. */
static int gen_fat_tree(pp_cluster *c, fab *f, pp_error *e) {
    int32_t N = c->info.nodes, H = c->info.hcas_per_node;
    int64_t pods = 0, npp = 0, sp_pod = 0, cores = 0;
    pp_node *pods_n = NULL, *npp_n = NULL, *sp_n = NULL, *cores_n = NULL;
    const char *fp = "fabric";
    int rc;

    f->spine_ratio = 1;
    if ((rc = pp_map_int(f->map, fp, "pods", PP_OPTIONAL, 1, MAX_SWITCHES,
                         &pods, e)) < 0 ||
        (rc = pp_map_int(f->map, fp, "nodes_per_pod", PP_OPTIONAL, 1,
                         MAX_SWITCHES, &npp, e)) < 0 ||
        (rc = pp_map_int(f->map, fp, "spines_per_pod", PP_OPTIONAL, 1,
                         MAX_SWITCHES, &sp_pod, e)) < 0 ||
        (rc = pp_map_int(f->map, fp, "cores", PP_OPTIONAL, 1, MAX_SWITCHES,
                         &cores, e)) < 0 ||
        (rc = pp_map_quantity(f->map, fp, "spine_oversubscription", PP_OPTIONAL,
                              PP_Q_RATIO, NULL, false, &f->spine_ratio, e)) < 0)
        return rc;
    pods_n = pods ? pp_map_get(f->map, "pods") : NULL;
    npp_n = npp ? pp_map_get(f->map, "nodes_per_pod") : NULL;
    sp_n = sp_pod ? pp_map_get(f->map, "spines_per_pod") : NULL;
    cores_n = cores ? pp_map_get(f->map, "cores") : NULL;
    if (f->spine_ratio < 1)
        return pp_error_at(e, PP_EINPUT,
                           pp_map_get(f->map, "spine_oversubscription"),
                           "fabric.spine_oversubscription",
                           "expected a ratio of at least 1:1");
    if (pods_n && npp_n)
        return pp_error_at(e, PP_EINPUT, npp_n, "fabric.nodes_per_pod",
                           "give pods or nodes_per_pod, not both");

    int64_t dleaf = max_down(f->radix, f->ratio);
    int64_t dspine = max_down(f->radix, f->spine_ratio);
    if ((rc = check_leaf_fit(f, dleaf, H, e)) < 0) return rc;
    if (dspine < 1)
        return radix_error(f, e, "a %lld-port spine has no down port",
                           (long long)f->radix);
    if (!pods_n && !npp_n) {
        /* The largest pod in which one link from every leaf fills a
         * spine's down ports: each spine then reaches every leaf. */
        int64_t per = f->wiring == WIRE_RAIL ? dspine / H : dspine;
        npp = per * (f->wiring == WIRE_RAIL ? dleaf : dleaf / H);
        if (npp < 1)
            return radix_error(f, e,
                               "a pod of %lld-port switches cannot hold one "
                               "node of %d HCAs: set fabric.nodes_per_pod",
                               (long long)f->radix, H);
    }
    if (!pods_n) pods = ceil_div(N, npp);
    if (pods > N)
        return pp_error_at(e, PP_EINPUT, pods_n, "fabric.pods",
                           "%lld pods for %d nodes leaves a pod empty",
                           (long long)pods, N);
    c->pods = (int32_t)pods;

    int32_t P = (int32_t)pods;
    int64_t *down = pp_xcalloc((size_t)N * H, sizeof *down);
    int64_t *start = pp_xcalloc((size_t)N * H, sizeof *start);
    int32_t *pod_leaf0 = pp_xmalloc((size_t)P * sizeof *pod_leaf0);
    int32_t *pod_nleaf = pp_xmalloc((size_t)P * sizeof *pod_nleaf);
    int64_t *sdown = NULL, *cdown = NULL, *sstart = NULL;
    int32_t leaf0 = (int32_t)c->n_devs;
    rc = 0;

    /* All leaves first, so leaf ids are contiguous. */
    for (int32_t p = 0, at = 0; p < P; p++) {
        int32_t n0 = (int32_t)((int64_t)p * N / P);
        int32_t n1 = (int32_t)((int64_t)(p + 1) * N / P);
        pod_leaf0[p] = at;
        pod_nleaf[p] = place_leaves(c, f, n0, n1, p, dleaf, down + at);
        at += pod_nleaf[p];
        for (int32_t n = n0; n < n1; n++) {
            int32_t g = pp_cluster_gpu(c, n, 0);
            for (int32_t d = g; d < (int32_t)c->n_devs && c->devs[d].node == n;
                 d++)
                c->devs[d].pod = p;
        }
    }

    /* Spines per pod: sized for every pod first, so the counts are
     * checked before anything is cabled. */
    int64_t *pod_sp = pp_xcalloc((size_t)P, sizeof *pod_sp);
    int64_t NS64 = 0;
    for (int32_t p = 0; p < P && rc == 0; p++) {
        int64_t U = 0;
        for (int32_t l = 0; l < pod_nleaf[p]; l++)
            U += ups_for(down[pod_leaf0[p] + l], f->ratio);
        pod_sp[p] = sp_n ? sp_pod : ceil_div(U, dspine);
        int64_t most = ceil_div(U, pod_sp[p]);
        NS64 += pod_sp[p];
        if (most + ups_for(most, f->spine_ratio) > f->radix)
            rc = pp_error_at(e, PP_EINPUT, sp_n ? sp_n : f->sw_node,
                             sp_n ? "fabric.spines_per_pod" : "fabric.switch",
                             "radix exceeded: pod %d's spines need %lld "
                             "down and %lld up ports, but a %s has %lld",
                             p, (long long)most,
                             (long long)ups_for(most, f->spine_ratio),
                             f->sw->name, (long long)f->radix);
        else if (NS64 > MAX_SWITCHES)
            rc = radix_error(f, e, "more than %d spines", MAX_SWITCHES);
    }
    int32_t spine_first = (int32_t)c->n_devs;
    if (rc == 0) sdown = pp_xcalloc((size_t)NS64, sizeof *sdown);
    for (int32_t p = 0; p < P && rc == 0; p++) {
        int64_t S = pod_sp[p], *st = start + pod_leaf0[p];
        int64_t *dn = down + pod_leaf0[p];
        int32_t s0 = (int32_t)c->n_devs;
        for (int64_t s = 0; s < S; s++)
            add_switch(c, PP_DEV_SPINE, f->n_spines++, p, -1);
        plan_starts(dn, pod_nleaf[p], f->ratio, st);
        int64_t fewest =
            connect_up(c, f, leaf0 + pod_leaf0[p], dn, pod_nleaf[p], s0,
                       (int32_t)S, f->ratio, st, sdown + (s0 - spine_first));
        if (!share_upper(fewest, (int32_t)S))
            rc = radix_error(f, e,
                             "pod %d: leaves of %lld uplinks cannot all "
                             "share a spine among %lld (make the pods "
                             "smaller)",
                             p, (long long)fewest, (long long)S);
    }
    free(pod_sp);
    if (rc) goto out;

    /* Cores: spine uplinks round-robin over all of them. */
    int32_t NS = f->n_spines;
    int64_t UC = 0, fewest_pod = INT64_MAX;
    for (int32_t p = 0, s = 0; p < P; p++) {
        int64_t Up = 0;
        for (; s < NS && c->devs[spine_first + s].pod == p; s++)
            Up += ups_for(sdown[s], f->spine_ratio);
        UC += Up;
        if (Up < fewest_pod) fewest_pod = Up;
    }
    if (!cores_n) cores = ceil_div(UC, f->radix);
    if (ceil_div(UC, cores) > f->radix) {
        rc = pp_error_at(e, PP_EINPUT, cores_n, "fabric.cores",
                         "radix exceeded: %lld spine uplinks over %lld "
                         "cores need %lld ports per core, but a %s has %lld",
                         (long long)UC, (long long)cores,
                         (long long)ceil_div(UC, cores), f->sw->name,
                         (long long)f->radix);
        goto out;
    }
    if (!share_upper(fewest_pod, (int32_t)cores)) {
        rc = radix_error(f, e,
                         "pods of %lld spine uplinks cannot all share a core "
                         "among %lld cores",
                         (long long)fewest_pod, (long long)cores);
        goto out;
    }
    int32_t core0 = (int32_t)c->n_devs;
    for (int64_t k = 0; k < cores; k++)
        add_switch(c, PP_DEV_CORE, f->n_cores++, -1, -1);
    sstart = pp_xmalloc((size_t)NS * sizeof *sstart);
    plan_starts(sdown, NS, f->spine_ratio, sstart);
    cdown = pp_xcalloc((size_t)cores, sizeof *cdown);
    connect_up(c, f, spine_first, sdown, NS, core0, (int32_t)cores,
               f->spine_ratio, sstart, cdown);
out:
    free(sstart);
    free(cdown);
    free(sdown);
    free(pod_nleaf);
    free(pod_leaf0);
    free(start);
    free(down);
    return rc;
}

/* One cable: two directed links.  A hop into a fabric switch also pays
 * the switch's port-to-port latency, so a path's latency is the sum of
 * its links' (cable + switching), each switch counted once. */
void pp__fabric_cable(pp_cluster *c, int32_t a, int32_t b, pp_link_kind kind,
                      double bw, double lat, double lat_a, double lat_b) {
    int32_t id = pp__cluster_add_link(c, a, b, kind, bw, lat, 0);
    c->links[id].lat_s += lat_b;
    c->links[id + 1].lat_s += lat_a;
}

/* The port speed of a switch type, when the catalogue names it. */
double pp__fabric_port_Bps(const pp_cluster *c, const pp_switch_spec *s) {
    const pp_link_spec *p = s ? pp_catalog_link(c->cat, s->port) : NULL;
    return p && p->bw_Bps > 0 ? p->bw_Bps : INFINITY;
}

bool pp__fabric_is_switch(pp_dev_kind k) {
    return k == PP_DEV_LEAF || k == PP_DEV_SPINE || k == PP_DEV_CORE;
}

/* ------------------------------------------------------------------------
 * The section.
 * ---------------------------------------------------------------------- */

/* Keys of other kinds are reported as such ("fabric.spines: not used by
 * kind: single-switch"), not as unknown.  Keys the kind reads are asked
 * for up front, so an unknown key (a typo such as "spine:") is reported
 * before a generator fails for want of the value it meant to give. */
static int check_keys(fab *f, pp_error *e) {
    const size_t nk = sizeof fabric_keys / sizeof fabric_keys[0];
    for (size_t i = 0; i < nk; i++) {
        if (fabric_keys[i].kinds & (1u << f->kind)) continue;
        pp_node *n = NULL;
        for (size_t j = 0; j < f->map->n && !n; j++)
            if (strcmp(f->map->keys[j]->scalar, fabric_keys[i].key) == 0)
                n = f->map->keys[j];
        if (!n) continue;
        char p[256], list[128] = "";
        for (int k = 0; kind_names[k]; k++)
            if (fabric_keys[i].kinds & (1u << k)) {
                size_t used = strlen(list);
                snprintf(list + used, sizeof list - used, "%s%s",
                         used ? ", " : "", kind_names[k]);
            }
        return pp_error_at(
            e, PP_EINPUT, n, pp_path(p, sizeof p, "fabric", fabric_keys[i].key),
            "not used by kind: %s (only by %s)", kind_names[f->kind], list);
    }
    for (size_t i = 0; i < nk; i++)
        if (fabric_keys[i].kinds & (1u << f->kind))
            pp_map_get(f->map, fabric_keys[i].key);
    return pp_map_done(f->map, "fabric", e);
}

int pp__fabric_build(pp_cluster *c, pp_node *map, pp_error *e) {
    fab f = {0};
    const void *spec = NULL;
    pp_node *link_node = NULL;
    int rc;

    c->info.stated_oversubscription = 1;
    if (!map) {
        snprintf(c->fabric_kind, sizeof c->fabric_kind, "none");
        return 0;
    }
    f.map = map;
    f.ratio = 1;
    if ((rc = pp_map_enum(map, "fabric", "kind", PP_REQUIRED, kind_names,
                          &f.kind, e)) < 0 ||
        (rc = check_keys(&f, e)) < 0)
        return rc;
    if (c->info.hcas_per_node == 0)
        return pp_error_at(e, PP_EINPUT, pp_map_get(map, "kind"), "fabric.kind",
                           "the nodes have no HCAs to cable (node.nics)");

    rc = pp__cat_lookup(c, PP_CAT_SWITCH, map, "fabric", "switch",
                        f.kind == FAB_EXPLICIT ? PP_OPTIONAL : PP_REQUIRED,
                        &spec, &f.sw_node, e);
    if (rc < 0) return rc;
    f.sw = rc == 0 ? spec : NULL;
    if (rc == 1) f.sw_node = NULL;
    rc = pp__cat_lookup(c, PP_CAT_LINK, map, "fabric", "link", PP_OPTIONAL,
                        &spec, &link_node, e);
    if (rc < 0) return rc;
    f.link = rc == 0 ? spec : c->info.nic;
    if (f.link->cls != PP_LCLASS_INFINIBAND &&
        f.link->cls != PP_LCLASS_ETHERNET)
        return pp_error_at(e, PP_EINPUT, link_node, "fabric.link",
                           "\"%s\" is not a network link", f.link->name);
    if (f.kind != FAB_EXPLICIT) {
        f.radix = f.sw->radix;
        rc = pp_map_int(map, "fabric", "radix", PP_OPTIONAL, 1, MAX_RADIX,
                        &f.radix, e);
        if (rc < 0) return rc;
        f.radix_node = rc == 0 ? pp_map_get(map, "radix") : NULL;
        if (f.radix < 1)
            return pp_error_at(e, PP_EINPUT, f.sw_node, "fabric.switch",
                               "switch \"%s\" has no radix in the catalogue",
                               f.sw->name);
        f.sw_lat = f.sw->lat_s;
        f.bw = fmin(f.link->bw_Bps, pp__fabric_port_Bps(c, f.sw));
    }
    f.lat = f.link->lat_s;
    c->info.fabric_switch = f.sw;
    c->info.fabric_link = f.link;
    if (f.kind == FAB_LEAF_SPINE || f.kind == FAB_FAT_TREE) {
        if ((rc =
                 pp_map_quantity(map, "fabric", "oversubscription", PP_OPTIONAL,
                                 PP_Q_RATIO, NULL, false, &f.ratio, e)) < 0 ||
            (rc = pp_map_enum(map, "fabric", "wiring", PP_OPTIONAL,
                              wiring_names, &f.wiring, e)) < 0)
            return rc;
        if (f.ratio < 1)
            return pp_error_at(e, PP_EINPUT,
                               pp_map_get(map, "oversubscription"),
                               "fabric.oversubscription",
                               "expected a ratio of at least 1:1 (down:up)");
        snprintf(c->wiring, sizeof c->wiring, "%s", wiring_names[f.wiring]);
        c->info.stated_oversubscription = f.ratio;
    }
    snprintf(c->fabric_kind, sizeof c->fabric_kind, "%s", kind_names[f.kind]);

    switch (f.kind) {
    case FAB_SINGLE: rc = gen_single(c, &f, e); break;
    case FAB_LEAF_SPINE: rc = gen_leaf_spine(c, &f, e); break;
    case FAB_FAT_TREE: rc = gen_fat_tree(c, &f, e); break;
    default: rc = pp__fabric_explicit(c, &f, e); break;
    }
    if (rc < 0) return rc;
    if (f.kind != FAB_EXPLICIT) {
        if (f.n_leaves) c->switch_radix[PP_DEV_LEAF] = (int32_t)f.radix;
        if (f.n_spines) c->switch_radix[PP_DEV_SPINE] = (int32_t)f.radix;
        if (f.n_cores) c->switch_radix[PP_DEV_CORE] = (int32_t)f.radix;
    }
    return 0;
}
