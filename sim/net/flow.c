/*
 * sim/net/flow.c: the flow-level network.  Transfers are flows on paths of directed
 * links; concurrent flows share each link's capacity by max-min fairness.
 *
 * The design follows SimGrid's LMM solver (src/kernel/lmm/maxmin.cpp) and
 * the lazy update of its network model (src/kernel/resource/Model.cpp),
 * simplified to what a flow network needs: unit weights, one constraint
 * per directed link, no bounds.
 *
 * Files: flow.c (this: flows start, wait out their latency, join, end;
 * the completion heap), flow_solve.c (the update: which flows to re-solve
 * and their new rates), flow_check.c (the invariant checker), maxmin.c
 * (max-min by progressive filling), flow_int.h (the network's state).
 *
 * Selective update.  Max-min rates of one connected component of the
 * bipartite flow-link graph do not depend on any other component, so when
 * flows start or end only the component reached from their links is
 * re-solved (SimGrid's "selective update" walks the modified constraints
 * the same way).  Within it, only the flows at or above the update's level
 * are: the rate below which progressive filling runs as before, the least
 * rate of the flows that left and the least level at which a link gaining
 * flows would fill (gather says why).  Flows below it keep their rates,
 * and their share of a link comes off its capacity for the others; the
 * result is still the exact max-min allocation, and a change among fast
 * flows (a ring's last transfers finishing) no longer re-solves the slow
 * ones coupled to them through shared spine links.  Every link keeps an
 * array of the flows crossing it (swap-remove; each flow remembers its
 * slot in each of its links' arrays), so the walk costs the component's
 * size; each entry carries a copy of its flow's rate, so the walk tells
 * the flows it re-solves from those that keep their rates, sums what the
 * latter use of the link and builds the problem's rows in one pass over
 * the arrays, without reading the flows that keep their rates.  When the walk has gathered more than half of the active flows it
 * stops walking and takes every active flow at or above the level (a full
 * solve, counted in stats.full_solves).  All starts and ends at one
 * simulated instant are batched into a single update: the first change
 * schedules a "resolve" event at now, and every event at that instant
 * scheduled before it has run by then.
 *
 * Lazy bytes.  A flow keeps `left` (bytes left at t_last) and its rate
 * since t_last; only a rate change writes them.  Completion times sit in an
 * indexed min-heap and the network keeps one engine event armed for the
 * heap top, re-armed when the top changes (SimGrid's action heap).  A flow
 * is done when its completion event time is reached, or when what is left
 * is under 1e-9 of its size: flows whose ends differ only by rounding then
 * end in one update instead of one update each.  Link byte counters are
 * lazy too: each link keeps the sum of its flows' rates since its last
 * settle, and is settled whenever that sum changes.
 */
#include "flow_int.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DONE_REL_TOL 1e-9 /* a flow is done when left <= this * bytes */

pp_flownet *pp_flownet_new(pp_engine *eng, const double *capacity_Bps,
                           size_t n_links) {
    assert(n_links <= INT32_MAX);
    pp_flownet *net = pp_xcalloc(1, sizeof *net);
    net->eng = eng;
    net->n_links = n_links;
    size_t lsz = (n_links ? n_links : 1) * sizeof *net->links;
    lsz = (lsz + 63) / 64 * 64; /* aligned_alloc wants a multiple */
    net->links = aligned_alloc(64, lsz);
    if (!net->links) pp_oom();
    memset(net->links, 0, lsz);
    net->link_bytes =
        pp_xcalloc(n_links ? n_links : 1, sizeof *net->link_bytes);
    net->busy = pp_xmalloc((n_links ? n_links : 1) * sizeof *net->busy);
    net->left_level = INFINITY;
    double now = pp_engine_now(eng);
    for (size_t l = 0; l < n_links; l++) {
        double c = capacity_Bps[l];
        assert(c >= 0 && "link capacity must be >= 0");
        net->links[l].cap_Bps = c >= 0 ? c : 0; /* NaN too */
        net->links[l].t = now;
        net->links[l].bpos = -1;
    }
    return net;
}

void pp_flownet_free(pp_flownet *net) {
    if (!net) return;
    if (net->armed) pp_engine_cancel(net->eng, net->armed);
    if (net->resolve) pp_engine_cancel(net->eng, net->resolve);
    for (size_t s = 0; s < net->n_fl; s++) {
        if (net->fl[s].state == F_WAIT)
            pp_engine_cancel(net->eng, net->fl[s].timer);
        free(net->fl[s].path);
    }
    for (size_t l = 0; l < net->n_links; l++) free(net->links[l].fl);
    free(net->links);
    free(net->link_bytes);
    free(net->fl);
    free(net->hpos);
    free(net->fw);
    free(net->free_fl);
    free(net->slot_of);
    free(net->active);
    free(net->busy);
    pp_iheap_fini(&net->done_heap);
    free(net->seeds);
    free(net->fin);
    free(net->c_links);
    free(net->c_flows);
    free(net->lv);
    free(net->c_cap);
    free(net->c_rate);
    free(net->c_out);
    free(net->lf_off);
    free(net->lf);
    free(net->f_off);
    free(net->f_links);
    pp__mm_scratch_fini(&net->mm);
    free(net);
}

static void on_complete(pp_engine *eng, void *ctx, uint64_t arg);
static void on_latency(pp_engine *eng, void *ctx, uint64_t arg);

/* Asks for the links of a path ahead of the loop that walks them: each is
 * a likely cache miss, and issued together they overlap instead of
 * queueing one behind the other. */
static inline void prefetch_links(const pp_flownet *net, const int32_t *path,
                                  int32_t n) {
    for (int32_t h = 0; h < n; h++) prefetch(&net->links[path[h]]);
}

static void seed_link(pp_flownet *net, int32_t l) {
    if (net->links[l].seed) return;
    net->links[l].seed = true;
    PP_VEC_RESERVE(net->seeds, net->cap_seeds, net->n_seeds + 1, 16);
    net->seeds[net->n_seeds++] = l;
}

/* Asks for one update at this instant, however many changes it brings. */
static void want_resolve(pp_flownet *net) {
    if (!net->resolve)
        net->resolve = pp_engine_at(net->eng, pp_engine_now(net->eng),
                                    pp__flow_on_resolve, net, 0);
}

/* Keeps exactly one completion event armed, at the heap top's time. */
void pp__flow_rearm(pp_flownet *net) {
    double t = INFINITY;
    if (net->done_heap.n > 0) t = net->done_heap.a[0].k;
    if (net->armed && net->armed_t == t) return;
    if (net->armed) pp_engine_cancel(net->eng, net->armed);
    net->armed = 0;
    if (isfinite(t)) {
        net->armed = pp_engine_at(net->eng, t, on_complete, net, 0);
        net->armed_t = t;
    }
}

static int32_t slot_new(pp_flownet *net) {
    if (net->n_free > 0) return net->free_fl[--net->n_free];
    if (net->n_fl == net->cap_fl) {
        size_t c = net->cap_fl;
        PP_VEC_RESERVE(net->fl, c, net->n_fl + 1, 64);
        net->hpos = pp_xrealloc(net->hpos, c * sizeof *net->hpos);
        net->fw = pp_xrealloc(net->fw, c * sizeof *net->fw);
        net->free_fl = pp_xrealloc(net->free_fl, c * sizeof *net->free_fl);
        net->cap_fl = c;
    }
    int32_t s = (int32_t)net->n_fl++;
    memset(&net->fl[s], 0, sizeof net->fl[s]);
    net->hpos[s] = -1;
    return s;
}

static void slot_release(pp_flownet *net, int32_t s) {
    net->fl[s].state = F_FREE; /* the path buffer is kept for reuse */
    net->free_fl[net->n_free++] = s;
}

pp_flow_id pp_flow_start(pp_flownet *net, const int32_t *path, size_t n,
                         double bytes, double lat_s, pp_flow_done_fn done,
                         void *ctx, uint64_t arg) {
    if (!(bytes >= 0) || !isfinite(bytes) || !(lat_s >= 0) ||
        !isfinite(lat_s) || n > INT32_MAX / 2)
        return PP_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (path[i] < 0 || (size_t)path[i] >= net->n_links) return PP_EINVAL;
    if (net->n_ids >= INT32_MAX) return PP_ERANGE;

    int32_t s = slot_new(net);
    flow *f = &net->fl[s];
    if ((size_t)f->path_cap < n) {
        free(f->path);
        f->path = pp_xmalloc(2 * n * sizeof *f->path);
        f->path_cap = (int32_t)n;
    }
    if (n) memcpy(f->path, path, n * sizeof *path);
    f->n = (int32_t)n;
    net->fw[s].path = f->path;
    net->fw[s].n = (int32_t)n;
    f->bytes = bytes;
    f->left = bytes;
    f->rate = 0;
    f->t_last = f->t_end = INFINITY;
    f->apos = -1;
    net->fw[s].mark = 0;
    f->done = done;
    f->ctx = ctx;
    f->arg = arg;
    f->state = F_WAIT;
    f->timer = 0;

    PP_VEC_RESERVE(net->slot_of, net->cap_ids, net->n_ids + 1, 16);
    f->id = (pp_flow_id)net->n_ids++;
    net->slot_of[f->id] = s;
    net->st.flows_started++;

    /* A flow that carries bytes joins at once when it has no latency; any
     * other waits for an event, so that `done` never runs inside this call. */
    if (lat_s == 0 && bytes > 0 && n > 0)
        on_latency(net->eng, net, (uint64_t)f->id);
    else
        f->timer =
            pp_engine_after(net->eng, lat_s, on_latency, net, (uint64_t)f->id);
    return f->id;
}

double pp_flow_rate(const pp_flownet *net, pp_flow_id id) {
    if (id < 0 || (size_t)id >= net->n_ids || net->slot_of[id] < 0) return -1.0;
    const flow *f = &net->fl[net->slot_of[id]];
    return f->state == F_ACTIVE ? f->rate : 0.0;
}

/* Ends a flow that never joined the network (no bytes, or no links). */
static void finish_unjoined(pp_flownet *net, int32_t s) {
    flow *f = &net->fl[s];
    pp_flow_id id = f->id;
    pp_flow_done_fn done = f->done;
    void *ctx = f->ctx;
    uint64_t arg = f->arg;
    net->slot_of[id] = -1;
    net->st.flows_done++;
    slot_release(net, s);
    if (done) done(net, id, ctx, arg);
}

static void on_latency(pp_engine *eng, void *ctx, uint64_t arg) {
    (void)eng;
    pp_flownet *net = ctx;
    int32_t s = net->slot_of[arg];
    flow *f = &net->fl[s];
    f->timer = 0;
    if (f->bytes == 0 || f->n == 0) {
        finish_unjoined(net, s);
        return;
    }
    /* Join: into every link's list, at rate 0 until the update (key
     * INFINITY: whatever its level, the update takes it). */
    f->state = F_JOINED;
    net->n_joined++;
    int32_t *pos = f->path + f->n;
    prefetch_links(net, f->path, f->n);
    for (int32_t h = 0; h < f->n; h++) {
        link *lk = &net->links[f->path[h]];
        if (lk->n == lk->cap) { /* cap is 32-bit: a link is one line */
            size_t c = lk->cap;
            PP_VEC_RESERVE(lk->fl, c, lk->n + 1, 16);
            lk->cap = (uint32_t)c;
        }
        if (lk->n == 0) {
            lk->bpos = (int32_t)net->n_busy;
            net->busy[net->n_busy++] = f->path[h];
        }
        pos[h] = (int32_t)lk->n;
        lk->fl[lk->n++] = (lentry){s, h, INFINITY};
        seed_link(net, f->path[h]);
    }
    PP_VEC_RESERVE(net->active, net->cap_active, net->n_active + 1, 16);
    f->apos = (int32_t)net->n_active;
    net->active[net->n_active++] = s;
    if (net->n_active > net->st.max_active) net->st.max_active = net->n_active;
    want_resolve(net);
}

/* Takes a finished flow out of its links and the active list. */
static void leave(pp_flownet *net, int32_t s) {
    flow *f = &net->fl[s];
    if (f->rate < net->left_level) net->left_level = f->rate;
    int32_t *pos = f->path + f->n;
    prefetch_links(net, f->path, f->n);
    for (int32_t h = 0; h < f->n; h++) {
        link *lk = &net->links[f->path[h]];
        size_t p = (size_t)pos[h];
        lentry last = lk->fl[--lk->n];
        if (p != lk->n) { /* the moved flow's position, by its fwalk:
                             a smaller array than the flows' lines */
            lk->fl[p] = last;
            const fwalk *w = &net->fw[last.slot];
            w->path[w->n + last.hop] = (int32_t)p;
        }
        if (lk->n == 0 && lk->bpos >= 0) { /* a path may cross it twice */
            int32_t moved = net->busy[--net->n_busy];
            net->busy[lk->bpos] = moved;
            net->links[moved].bpos = lk->bpos;
            lk->bpos = -1;
        }
        seed_link(net, f->path[h]);
    }
    int32_t a = f->apos;
    int32_t moved = net->active[--net->n_active];
    if ((size_t)a != net->n_active) {
        net->active[a] = moved;
        net->fl[moved].apos = a;
    }
    f->apos = -1;
}

static void on_complete(pp_engine *eng, void *ctx, uint64_t arg) {
    (void)arg;
    pp_flownet *net = ctx;
    double now = pp_engine_now(eng);
    net->armed = 0;
    net->n_fin = 0;
    while (net->done_heap.n > 0) {
        int32_t s = net->done_heap.a[0].item;
        flow *f = &net->fl[s];
        if (!(f->t_end <= now) &&
            f->left - f->rate * (now - f->t_last) > DONE_REL_TOL * f->bytes)
            break;
        pp_iheap_remove(&net->done_heap, net->hpos, s);
        net->slot_of[f->id] = -1;
        net->st.flows_done++;
        PP_VEC_RESERVE(net->fin, net->cap_fin, net->n_fin + 1, 16);
        net->fin[net->n_fin++] = s;
    }
    /* Leave in the order popped (leave does not touch the heap), asking
     * for a later flow's path while this one's links are updated: each
     * path is a likely cache miss, and so are the lines it leads to. */
    for (size_t i = 0; i < net->n_fin; i++) {
        if (i + 2 < net->n_fin) prefetch(net->fw[net->fin[i + 2]].path);
        leave(net, net->fin[i]);
    }
    if (net->n_fin > 0)
        want_resolve(net);
    else
        pp__flow_rearm(net);
    /* Callbacks last: they may start flows (reusing slots, growing arrays),
     * so nothing above holds a flow pointer across them. */
    size_t n_fin = net->n_fin;
    for (size_t i = 0; i < n_fin; i++) {
        int32_t s = net->fin[i];
        flow *f = &net->fl[s];
        pp_flow_id id = f->id;
        pp_flow_done_fn done = f->done;
        void *dctx = f->ctx;
        uint64_t darg = f->arg;
        slot_release(net, s);
        if (done) done(net, id, dctx, darg);
    }
}

const double *pp_flownet_link_bytes(pp_flownet *net) {
    double now = pp_engine_now(net->eng);
    for (size_t l = 0; l < net->n_links; l++) {
        settle_link(&net->links[l], now);
        net->link_bytes[l] = net->links[l].bytes;
    }
    return net->link_bytes;
}

void pp_flownet_stats_get(const pp_flownet *net, pp_flownet_stats *out) {
    *out = net->st;
}
