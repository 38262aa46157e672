/*
 * topo_stats.c: `podplan topo stats`, counts, over-subscription and the
 * bisection bandwidth of the switch fabric.
 *
 * Everything is counted from the built graph, never from what the YAML
 * says it should be: a generator bug or a hand-written fabric shows up
 * here as a ratio that is not the stated one.
 *
 * Bisection.  The flow network holds only the switch fabric: the HCAs,
 * the leaf/spine/core switches and the HOST and FABRIC links, one directed
 * edge per link direction with its capacity.  NVLink and PCIe are left out
 * on purpose: a server must not count as a free bridge between two rails.
 * A super-source feeds one half of the HCAs and the other half drains into
 * a super-sink (capacity "infinite": the sum of all capacities); the answer
 * is the smallest igraph max-flow over a few adversarial halves:
 *   server  the first half of the HCAs in server order;
 *   rail    rails 0..k/2-1 against the rest: in a rail-optimised fabric
 *           same-rail traffic never leaves its leaf, so only this split
 *           exposes a thin spine layer;
 *   leaf    the HCAs under the first half of the leaves;
 *   pod     the first half of the pods (fat-trees only).
 * Each split orders the HCAs by its key and cuts the list in the middle,
 * so both halves hold the same number of HCAs (one more on the sink side
 * when the count is odd).  Splits that come out identical to an earlier
 * one are not solved again.  A split is carried in full when its max-flow
 * reaches what the smaller half's HCAs are rated for (nic_Bps each, so an
 * HCA left without a cable makes the fabric blocking rather than exempt).
 *
 * Over-subscription.  Per level (leaf, spine, core), summed over the
 * level's switches: capacity of the links down (to HCAs or a lower level)
 * over the links up (to a higher level, or lateral to the same level,
 * which also lead out of the switch).  The top level is 1 by definition.
 * non_blocking: every level at most 1:1 and every split carried in full.
 */
#include "sim_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool is_level(pp_dev_kind k) {
    return k == PP_DEV_LEAF || k == PP_DEV_SPINE || k == PP_DEV_CORE;
}

/* HCA < leaf < spine < core, for telling uplinks from downlinks. */
static int level_rank(pp_dev_kind k) {
    switch (k) {
    case PP_DEV_HCA: return 0;
    case PP_DEV_LEAF: return 1;
    case PP_DEV_SPINE: return 2;
    case PP_DEV_CORE: return 3;
    default: return -1;
    }
}

/* The fabric as a flow network, built once and shared by the splits. */
typedef struct fabric {
    int32_t *vid;  /* device -> flow vertex, -1 when not in the fabric */
    int32_t nv;    /* flow vertices before source and sink */
    int32_t *hca;  /* HCA device ids, in device order */
    double *inj;   /* per HCA: capacity of its cables into the fabric */
    int32_t *leaf; /* per HCA: first switch it plugs into, -1 none */
    size_t nh;
    igraph_integer_t *edges; /* base edges as (from, to) pairs */
    double *cap;
    size_t ne;
    double inf;
} fabric;

static void fabric_free(fabric *f) {
    free(f->vid);
    free(f->hca);
    free(f->inj);
    free(f->leaf);
    free(f->edges);
    free(f->cap);
}

static void fabric_build(const pp_cluster *c, fabric *f) {
    memset(f, 0, sizeof *f);
    f->vid = pp_xmalloc((c->n_devs ? c->n_devs : 1) * sizeof *f->vid);
    size_t nh = 0;
    for (size_t d = 0; d < c->n_devs; d++) {
        pp_dev_kind k = c->devs[d].kind;
        f->vid[d] = (k == PP_DEV_HCA || is_level(k)) ? f->nv++ : -1;
        if (k == PP_DEV_HCA) nh++;
    }
    f->nh = nh;
    f->hca = pp_xmalloc((nh ? nh : 1) * sizeof *f->hca);
    f->inj = pp_xcalloc(nh ? nh : 1, sizeof *f->inj);
    f->leaf = pp_xmalloc((nh ? nh : 1) * sizeof *f->leaf);
    size_t h = 0;
    for (size_t d = 0; d < c->n_devs; d++) {
        if (c->devs[d].kind != PP_DEV_HCA) continue;
        f->hca[h] = (int32_t)d;
        f->leaf[h] = -1;
        for (int32_t k = c->out_off[d]; k < c->out_off[d + 1]; k++) {
            const pp_link *l = &c->links[c->out_ids[k]];
            if (l->kind != PP_LINK_HOST || f->vid[l->dst] < 0) continue;
            f->inj[h] += l->bw_Bps;
            if (f->leaf[h] < 0) f->leaf[h] = l->dst;
        }
        h++;
    }
    size_t ne = 0;
    for (size_t i = 0; i < c->n_links; i++) {
        const pp_link *l = &c->links[i];
        if ((l->kind == PP_LINK_HOST || l->kind == PP_LINK_FABRIC) &&
            f->vid[l->src] >= 0 && f->vid[l->dst] >= 0)
            ne++;
    }
    f->edges = pp_xmalloc((ne ? ne : 1) * 2 * sizeof *f->edges);
    f->cap = pp_xmalloc((ne ? ne : 1) * sizeof *f->cap);
    double sum = 0;
    for (size_t i = 0; i < c->n_links; i++) {
        const pp_link *l = &c->links[i];
        if (!((l->kind == PP_LINK_HOST || l->kind == PP_LINK_FABRIC) &&
              f->vid[l->src] >= 0 && f->vid[l->dst] >= 0))
            continue;
        f->edges[2 * f->ne] = f->vid[l->src];
        f->edges[2 * f->ne + 1] = f->vid[l->dst];
        f->cap[f->ne++] = l->bw_Bps;
        sum += l->bw_Bps;
    }
    /* "Infinite" source and sink edges: no cut through them can be the
     * minimum.  A finite value keeps push-relabel's arithmetic exact. */
    f->inf = 2 * sum + 1;
}

/* Max-flow from the HCAs with side[h] == 0 to those with side[h] == 1. */
static int fabric_flow(const fabric *f, const unsigned char *side,
                       double *value, pp_error *e) {
    igraph_vector_int_t ev;
    igraph_vector_t cv;
    igraph_t g;
    igraph_real_t flow = 0;
    int rc = 0, ig;
    size_t m = f->ne + f->nh;
    igraph_integer_t src = f->nv, snk = (igraph_integer_t)f->nv + 1;
    bool have_ev = false, have_cv = false, have_g = false;

    if ((ig = igraph_vector_int_init(&ev, (igraph_integer_t)(2 * m)))) {
        rc = pp__igraph_error(ig, "bisection: edge list", e);
        goto cleanup;
    }
    have_ev = true;
    if ((ig = igraph_vector_init(&cv, (igraph_integer_t)m))) {
        rc = pp__igraph_error(ig, "bisection: capacities", e);
        goto cleanup;
    }
    have_cv = true;
    for (size_t i = 0; i < 2 * f->ne; i++) VECTOR(ev)[i] = f->edges[i];
    for (size_t i = 0; i < f->ne; i++) VECTOR(cv)[i] = f->cap[i];
    for (size_t h = 0; h < f->nh; h++) {
        size_t j = f->ne + h;
        igraph_integer_t v = f->vid[f->hca[h]];
        VECTOR(ev)[2 * j] = side[h] ? v : src;
        VECTOR(ev)[2 * j + 1] = side[h] ? snk : v;
        VECTOR(cv)[j] = f->inf;
    }
    if ((ig = igraph_create(&g, &ev, (igraph_integer_t)f->nv + 2,
                            IGRAPH_DIRECTED))) {
        rc = pp__igraph_error(ig, "bisection: flow graph", e);
        goto cleanup;
    }
    have_g = true;
    if ((ig = igraph_maxflow_value(&g, &flow, src, snk, &cv, NULL))) {
        rc = pp__igraph_error(ig, "bisection: max-flow", e);
        goto cleanup;
    }
    *value = flow;
cleanup:
    if (have_g) igraph_destroy(&g);
    if (have_cv) igraph_vector_destroy(&cv);
    if (have_ev) igraph_vector_int_destroy(&ev);
    return rc;
}

/* One HCA's sort key for a split; ties fall back to the device id, so
 * every split is a deterministic total order. */
typedef struct hkey {
    int64_t k1, k2;
    int32_t dev;
    int32_t h;
} hkey;

static int cmp_hkey(const void *a, const void *b) {
    const hkey *x = a, *y = b;
    if (x->k1 != y->k1) return x->k1 < y->k1 ? -1 : 1;
    if (x->k2 != y->k2) return x->k2 < y->k2 ? -1 : 1;
    return (x->dev > y->dev) - (x->dev < y->dev);
}

enum { SPLIT_SERVER, SPLIT_RAIL, SPLIT_LEAF, SPLIT_POD, SPLIT__COUNT };
static const char *const split_names[SPLIT__COUNT] = {"server", "rail", "leaf",
                                                      "pod"};

/* Fills side[] for a split; returns false when the split does not apply
 * to this cluster (one rail, no pods, ...). */
static bool make_split(const pp_cluster *c, const fabric *f, int which,
                       hkey *keys, unsigned char *side) {
    int64_t distinct_min = INT64_MAX, distinct_max = INT64_MIN;
    for (size_t h = 0; h < f->nh; h++) {
        const pp_device *d = &c->devs[f->hca[h]];
        int32_t rail = d->rail >= 0 ? d->rail : d->local;
        int32_t leaf = f->leaf[h];
        hkey *k = &keys[h];
        k->dev = f->hca[h];
        k->h = (int32_t)h;
        switch (which) {
        case SPLIT_SERVER:
            k->k1 = d->node;
            k->k2 = d->local;
            break;
        case SPLIT_RAIL:
            k->k1 = rail;
            k->k2 = d->node;
            break;
        case SPLIT_LEAF:
            k->k1 = leaf >= 0 ? leaf : INT32_MAX;
            k->k2 = d->node;
            break;
        default: /* SPLIT_POD */
            k->k1 = leaf >= 0 && c->devs[leaf].pod >= 0 ? c->devs[leaf].pod
                                                        : INT32_MAX;
            k->k2 = leaf >= 0 ? leaf : INT32_MAX;
            break;
        }
        if (k->k1 < distinct_min) distinct_min = k->k1;
        if (k->k1 > distinct_max) distinct_max = k->k1;
    }
    /* A split by rails needs two rails, by pods two pods. */
    if ((which == SPLIT_RAIL || which == SPLIT_POD) &&
        (distinct_min == distinct_max || distinct_min == INT32_MAX))
        return false;
    qsort(keys, f->nh, sizeof *keys, cmp_hkey);
    for (size_t i = 0; i < f->nh; i++) side[keys[i].h] = i >= f->nh / 2;
    return true;
}

/* Solves every split that applies and keeps the smallest flow. */
static int solve_splits(const pp_cluster *c, const fabric *f, pp_topo_stats *s,
                        bool *full, pp_error *e) {
    hkey *keys = pp_xmalloc(f->nh * sizeof *keys);
    unsigned char *sides = pp_xmalloc(SPLIT__COUNT * f->nh);
    bool have[SPLIT__COUNT] = {false};
    bool first = true, all_full = true;
    int rc = 0;
    for (int w = 0; w < SPLIT__COUNT; w++) {
        unsigned char *side = sides + (size_t)w * f->nh;
        if (!make_split(c, f, w, keys, side)) continue;
        bool dup = false;
        for (int q = 0; q < w && !dup; q++)
            dup =
                have[q] && memcmp(sides + (size_t)q * f->nh, side, f->nh) == 0;
        if (dup) continue;
        have[w] = true;
        double flow = 0, inj[2] = {0, 0};
        if ((rc = fabric_flow(f, side, &flow, e))) break;
        /* The reference is what the HCAs are rated for, so an HCA left
         * without a cable makes the fabric blocking, not exempt. */
        for (size_t h = 0; h < f->nh; h++)
            inj[side[h]] += c->info.nic_Bps > 0 ? c->info.nic_Bps : f->inj[h];
        /* Carried in full: all that the smaller half can inject (half the
         * total when the halves match). */
        double want = inj[0] < inj[1] ? inj[0] : inj[1];
        if (flow < want * (1 - 1e-9)) all_full = false;
        /* A strictly smaller value replaces the minimum, so ties keep the
         * earlier split and rounding noise cannot flip the name. */
        if (first || flow < s->bisection_Bps * (1 - 1e-12)) {
            s->bisection_Bps = flow;
            snprintf(s->bisection_split, sizeof s->bisection_split, "%s",
                     split_names[w]);
            first = false;
        }
    }
    *full = rc == 0 && !first && all_full;
    free(sides);
    free(keys);
    return rc;
}

static int bisection(const pp_cluster *c, pp_topo_stats *s, bool *full,
                     pp_error *e) {
    fabric f;
    int rc = 0;
    *full = false;
    s->bisection_Bps = 0;
    snprintf(s->bisection_split, sizeof s->bisection_split, "none");
    fabric_build(c, &f);
    /* Fewer than two HCAs, or HCAs with no fabric: nothing to bisect. */
    if (f.nh >= 2 && f.ne > 0 && (rc = solve_splits(c, &f, s, full, e)))
        pp_error_prefix(e, "bisection of %s: ", c->info.name);
    fabric_free(&f);
    return rc;
}

int pp_topo_stats_compute(const pp_cluster *c, pp_topo_stats *out,
                          pp_error *e) {
    if (!c || !out)
        return pp_error_set(e, PP_EINVAL,
                            "pp_topo_stats_compute: NULL argument");
    if (!c->out_off && c->n_devs)
        return pp_error_set(e, PP_EINTERNAL,
                            "pp_topo_stats_compute: cluster graph not built");
    pp__igraph_init();
    pp_topo_stats s;
    memset(&s, 0, sizeof s);
    s.nodes = c->info.nodes;

    for (size_t d = 0; d < c->n_devs; d++) {
        pp_dev_kind k = c->devs[d].kind;
        if (k == PP_DEV_GPU) s.gpus++;
        if (k == PP_DEV_HCA) s.hcas++;
        if (is_level(k)) {
            s.switches[k]++;
            s.switches_total++;
            /* One port per physical link: links come in pairs, so the
             * out-degree counts them once. */
            s.ports_used[k] += c->out_off[d + 1] - c->out_off[d];
        }
    }

    /* Cables: each physical link once (the direction with the lower id),
     * and up/down capacity per level seen from the switch's side. */
    double down[PP_DEV__COUNT] = {0}, up[PP_DEV__COUNT] = {0};
    double hca_out = 0;
    for (size_t i = 0; i < c->n_links; i++) {
        const pp_link *l = &c->links[i];
        if (l->reverse < 0 || (size_t)l->reverse >= i) {
            if ((unsigned)l->kind < PP_LINK__COUNT) s.cables[l->kind]++;
        }
        pp_dev_kind ks = c->devs[l->src].kind, kd = c->devs[l->dst].kind;
        if (ks == PP_DEV_HCA && l->kind == PP_LINK_HOST) hca_out += l->bw_Bps;
        if (!is_level(ks) || level_rank(kd) < 0) continue;
        /* A lateral link (leaf to leaf) also carries traffic out of the
         * switch towards the rest of the fabric: it counts as up. */
        if (level_rank(kd) >= level_rank(ks))
            up[ks] += l->bw_Bps;
        else
            down[ks] += l->bw_Bps;
    }
    s.cables_total = s.cables[PP_LINK_HOST] + s.cables[PP_LINK_FABRIC];

    /* Per-GPU injection: what the HCAs can put on the wire (their links,
     * capped at the adapter's rate), shared by the GPUs. */
    if (s.gpus > 0) {
        double inj = hca_out;
        if (c->info.nic_Bps > 0 && s.hcas > 0 && inj > c->info.nic_Bps * s.hcas)
            inj = c->info.nic_Bps * s.hcas;
        s.injection_Bps = inj / s.gpus;
    }

    /* Over-subscription per level: downlink over uplink capacity.  The top
     * level has nowhere further to send and blocks nothing by itself: 1.
     * A lower level with downlinks but no uplinks is cut off: inf. */
    int top = 0;
    for (int k = PP_DEV_LEAF; k <= PP_DEV_CORE; k++)
        if (s.switches[k] > 0) top = k;
    bool levels_ok = true;
    for (int k = PP_DEV_LEAF; k <= PP_DEV_CORE; k++) {
        if (s.switches[k] == 0) continue;
        double r;
        if (k == top)
            r = 1.0;
        else if (up[k] > 0)
            r = down[k] / up[k];
        else
            r = down[k] > 0 ? INFINITY : 1.0;
        s.oversubscription[k] = r;
        if (!(r <= 1 + 1e-9)) levels_ok = false;
    }

    bool full = false;
    int rc = bisection(c, &s, &full, e);
    if (rc) return rc;
    s.non_blocking = s.switches_total > 0 && levels_ok && full;
    *out = s;
    return 0;
}
