/*
 * flow.c: the flow-level network.  Transfers are flows on paths of directed
 * links; concurrent flows share each link's capacity by max-min fairness.
 *
 * The design follows SimGrid's LMM solver (src/kernel/lmm/maxmin.cpp) and
 * the lazy update of its network model (src/kernel/resource/Model.cpp),
 * simplified to what a flow network needs: unit weights, one constraint
 * per directed link, no bounds.
 *
 * Max-min by progressive filling: maxmin.c.
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
 * size.  When the walk has gathered more than half of the active flows it
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

#define DONE_REL_TOL 1e-9   /* a flow is done when left <= this * bytes */
#define FULL_FRACTION 0.5   /* coupled share of active flows: full solve */

/* ---- the network ------------------------------------------------------ */

typedef struct lentry {
    int32_t slot; /* flow slot */
    int32_t hop;  /* which hop of that flow's path this link is */
} lentry;

/* One cache line per link (the array is 64-byte aligned): a join, a
 * leave and an update touch a handful of random links each, so keeping
 * everything they read and write about a link in one line (the byte
 * counter included, rather than in an array of its own) is what bounds
 * their cost. */
typedef struct link {
    lentry *fl;     /* the joined flows crossing this link */
    uint32_t n, cap;
    double cap_Bps;
    double rate;    /* sum of its flows' rates since t */
    double t;       /* bytes is exact up to t */
    double bytes;   /* carried so far (copied out by link_bytes) */
    uint32_t mark;  /* walk epoch */
    int32_t bpos;   /* index in net->busy while it carries flows, else -1 */
    bool seed;      /* changed since the last update */
} link;

_Static_assert(sizeof(link) <= 64, "a link should fit one cache line");

enum { F_FREE, F_WAIT, F_JOINED, F_ACTIVE };

typedef struct flow {
    double bytes;
    double left;     /* bytes left at t_last */
    double rate;     /* since t_last */
    double t_last;
    double t_end;    /* completion time at this rate (the heap key) */
    int32_t *path;   /* n link ids, then n positions in those links' lists */
    int32_t n, path_cap;
    pp_flow_id id;
    int32_t state;
    int32_t apos;    /* index in net->active, or -1 */
    pp_timer timer;  /* the latency event while F_WAIT */
    pp_flow_done_fn done;
    void *ctx;
    uint64_t arg;
} flow;

struct pp_flownet {
    pp_engine *eng;
    link *links;
    size_t n_links;
    double *link_bytes;

    flow *fl;           /* slots, recycled */
    int32_t *hpos;      /* completion-heap position per slot */
    int32_t *f_local;   /* per slot: index in the component being solved */
    int32_t *f_n;       /* per slot: hops of its path (flow.n, dense) */
    uint32_t *f_mark;   /* per slot: walk epoch (kept apart from flow for
                           the walk's cache footprint) */
    size_t n_fl, cap_fl;
    int32_t *free_fl;
    size_t n_free;

    int32_t *slot_of;   /* flow id -> slot, -1 once finished */
    size_t n_ids, cap_ids;

    int32_t *active;    /* joined flows (slots) */
    size_t n_active, cap_active;
    int32_t *busy;      /* links that carry flows (for full solves) */
    size_t n_busy;

    pp_iheap done_heap;    /* ACTIVE flows by t_end */
    pp_timer armed;     /* the completion event, 0 if none */
    double armed_t;
    pp_timer resolve;   /* the batched update at now, 0 if none */

    int32_t *seeds;     /* links changed since the last update */
    size_t n_seeds, cap_seeds;
    int32_t *fin;       /* slots finishing in one completion event */
    size_t n_fin, cap_fin;

    /* One update's component and its CSR form (reused). */
    uint32_t epoch;
    int32_t *c_links, *c_flows;
    size_t cap_c_links, cap_c_flows;
    size_t n_cseeds;    /* the first links of c_links are the seeds */
    double c_level;     /* flows below this rate keep it (see gather) */
    double left_level;  /* least rate of the flows that left since the
                           last update */
    size_t n_joined;    /* flows that joined since the last update */
    double *lv;         /* join_level's scratch */
    size_t cap_lv;
    double *c_cap, *c_rate, *c_out;
    size_t cap_c_cap, cap_c_rate, cap_c_out;
    int32_t *lf_off, *lf, *f_off, *f_links;
    size_t cap_lf_off, cap_lf, cap_f_off, cap_f_links;
    mm_scratch mm;

    pp_flownet_stats st;
};

pp_flownet *pp_flownet_new(pp_engine *eng, const double *capacity_Bps,
                           size_t n_links) {
    assert(n_links <= INT32_MAX);
    pp_flownet *net = pp_xcalloc(1, sizeof *net);
    net->eng = eng;
    net->n_links = n_links;
    size_t lsz = (n_links ? n_links : 1) * sizeof *net->links;
    lsz = (lsz + 63) / 64 * 64; /* aligned_alloc wants a multiple */
    net->links = aligned_alloc(64, lsz);
    if (!net->links)
        pp_oom();
    memset(net->links, 0, lsz);
    net->link_bytes = pp_xcalloc(n_links ? n_links : 1,
                                 sizeof *net->link_bytes);
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
    if (!net)
        return;
    if (net->armed)
        pp_engine_cancel(net->eng, net->armed);
    if (net->resolve)
        pp_engine_cancel(net->eng, net->resolve);
    for (size_t s = 0; s < net->n_fl; s++) {
        if (net->fl[s].state == F_WAIT)
            pp_engine_cancel(net->eng, net->fl[s].timer);
        free(net->fl[s].path);
    }
    for (size_t l = 0; l < net->n_links; l++)
        free(net->links[l].fl);
    free(net->links);
    free(net->link_bytes);
    free(net->fl);
    free(net->hpos);
    free(net->f_local);
    free(net->f_n);
    free(net->f_mark);
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
static void on_resolve(pp_engine *eng, void *ctx, uint64_t arg);
static void on_latency(pp_engine *eng, void *ctx, uint64_t arg);

static void settle_link(link *lk, double now) {
    lk->bytes += lk->rate * (now - lk->t);
    lk->t = now;
}

/* A hint: no effect on results. */
static inline void prefetch(const void *p) {
#if defined(__GNUC__)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
}

/* Asks for the links of a path ahead of the loop that walks them: each is
 * a likely cache miss, and issued together they overlap instead of
 * queueing one behind the other. */
static inline void prefetch_links(const pp_flownet *net, const int32_t *path,
                                  int32_t n) {
    for (int32_t h = 0; h < n; h++)
        prefetch(&net->links[path[h]]);
}

static void seed_link(pp_flownet *net, int32_t l) {
    if (net->links[l].seed)
        return;
    net->links[l].seed = true;
    PP_VEC_RESERVE(net->seeds, net->cap_seeds, net->n_seeds + 1, 16);
    net->seeds[net->n_seeds++] = l;
}

/* Asks for one update at this instant, however many changes it brings. */
static void want_resolve(pp_flownet *net) {
    if (!net->resolve)
        net->resolve = pp_engine_at(net->eng, pp_engine_now(net->eng),
                                    on_resolve, net, 0);
}

/* Keeps exactly one completion event armed, at the heap top's time. */
static void rearm(pp_flownet *net) {
    double t = INFINITY;
    if (net->done_heap.n > 0)
        t = net->done_heap.a[0].k;
    if (net->armed && net->armed_t == t)
        return;
    if (net->armed)
        pp_engine_cancel(net->eng, net->armed);
    net->armed = 0;
    if (isfinite(t)) {
        net->armed = pp_engine_at(net->eng, t, on_complete, net, 0);
        net->armed_t = t;
    }
}

static int32_t slot_new(pp_flownet *net) {
    if (net->n_free > 0)
        return net->free_fl[--net->n_free];
    if (net->n_fl == net->cap_fl) {
        size_t c = net->cap_fl;
        PP_VEC_RESERVE(net->fl, c, net->n_fl + 1, 64);
        net->hpos = pp_xrealloc(net->hpos, c * sizeof *net->hpos);
        net->f_local = pp_xrealloc(net->f_local, c * sizeof *net->f_local);
        net->f_n = pp_xrealloc(net->f_n, c * sizeof *net->f_n);
        net->f_mark = pp_xrealloc(net->f_mark, c * sizeof *net->f_mark);
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
        if (path[i] < 0 || (size_t)path[i] >= net->n_links)
            return PP_EINVAL;
    if (net->n_ids >= INT32_MAX)
        return PP_ERANGE;

    int32_t s = slot_new(net);
    flow *f = &net->fl[s];
    if ((size_t)f->path_cap < n) {
        free(f->path);
        f->path = pp_xmalloc(2 * n * sizeof *f->path);
        f->path_cap = (int32_t)n;
    }
    if (n)
        memcpy(f->path, path, n * sizeof *path);
    f->n = (int32_t)n;
    net->f_n[s] = (int32_t)n;
    f->bytes = bytes;
    f->left = bytes;
    f->rate = 0;
    f->t_last = f->t_end = INFINITY;
    f->apos = -1;
    net->f_mark[s] = 0;
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
        f->timer = pp_engine_after(net->eng, lat_s, on_latency, net,
                                   (uint64_t)f->id);
    return f->id;
}

double pp_flow_rate(const pp_flownet *net, pp_flow_id id) {
    if (id < 0 || (size_t)id >= net->n_ids || net->slot_of[id] < 0)
        return -1.0;
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
    if (done)
        done(net, id, ctx, arg);
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
    /* Join: into every link's list, at rate 0 until the update. */
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
        lk->fl[lk->n++] = (lentry){s, h};
        seed_link(net, f->path[h]);
    }
    PP_VEC_RESERVE(net->active, net->cap_active, net->n_active + 1, 16);
    f->apos = (int32_t)net->n_active;
    net->active[net->n_active++] = s;
    if (net->n_active > net->st.max_active)
        net->st.max_active = net->n_active;
    want_resolve(net);
}

/* Takes a finished flow out of its links and the active list. */
static void leave(pp_flownet *net, int32_t s) {
    flow *f = &net->fl[s];
    if (f->rate < net->left_level)
        net->left_level = f->rate;
    int32_t *pos = f->path + f->n;
    prefetch_links(net, f->path, f->n);
    for (int32_t h = 0; h < f->n; h++) {
        link *lk = &net->links[f->path[h]];
        size_t p = (size_t)pos[h];
        lentry last = lk->fl[--lk->n];
        if (p != lk->n) {
            lk->fl[p] = last;
            net->fl[last.slot].path[net->fl[last.slot].n + last.hop] =
                (int32_t)p;
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
        leave(net, s);
        net->slot_of[f->id] = -1;
        net->st.flows_done++;
        PP_VEC_RESERVE(net->fin, net->cap_fin, net->n_fin + 1, 16);
        net->fin[net->n_fin++] = s;
    }
    if (net->n_fin > 0)
        want_resolve(net);
    else
        rearm(net);
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
        if (done)
            done(net, id, dctx, darg);
    }
}


/* How far ahead the passes over the component's links and flows ask for
 * the lines they will need: their targets are scattered, and asked for
 * together the misses overlap instead of queueing. */
#define AHEAD 8

/* Adds the unvisited links of flow slot s (taken) to the component. */
static void take_links(pp_flownet *net, int32_t s, size_t *nl) {
    const flow *f = &net->fl[s];
    for (int32_t h = 0; h < f->n; h++) {
        link *lk = &net->links[f->path[h]];
        if (lk->mark == net->epoch)
            continue;
        lk->mark = net->epoch;
        PP_VEC_RESERVE(net->c_links, net->cap_c_links, *nl + 1, 16);
        net->c_links[(*nl)++] = f->path[h];
    }
}

static void next_epoch(pp_flownet *net) {
    if (++net->epoch == 0) { /* wrapped: clear every mark once */
        for (size_t l = 0; l < net->n_links; l++)
            net->links[l].mark = 0;
        for (size_t s = 0; s < net->n_fl; s++)
            net->f_mark[s] = 0;
        net->epoch = 1;
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Rates below this fraction of the update's level are kept (see gather):
 * far above the rounding of a solve, far below any real difference, and
 * erring low only re-solves more flows. */
#define LEVEL_TOL 1e-9

/* The level below which an update changes nothing.  Progressive filling
 * raises every unfrozen flow together; a link that saturates at level t
 * freezes its flows at t.  A flow that left had no link saturate below its
 * rate (or it would have frozen lower), and its links only lose load; a
 * link that gains k joined flows saturates, below the first level at
 * which some other link would, where  sum over its old flows of
 * min(rate, t) + k t = capacity.  Below the least of these levels the
 * filling meets the same links in the same order as before, so a flow
 * whose rate is below it froze the same and keeps its rate. */
static double join_level(pp_flownet *net, const link *lk) {
    size_t k = 0, m = 0;
    PP_VEC_RESERVE(net->lv, net->cap_lv, lk->n, 16);
    for (size_t i = 0; i < lk->n; i++) {
        const flow *f = &net->fl[lk->fl[i].slot];
        if (f->state == F_JOINED)
            k++;
        else
            net->lv[m++] = f->rate;
    }
    if (k == 0)
        return INFINITY;
    qsort(net->lv, m, sizeof *net->lv, cmp_double);
    /* Between the i-th and (i+1)-th smallest rates the load is the sum of
     * the i smallest plus (m - i + k) t. */
    double below = 0;
    for (size_t i = 0; i < m; i++) {
        double t = (lk->cap_Bps - below) / (double)(m - i + k);
        if (t <= net->lv[i])
            return t;
        below += net->lv[i];
    }
    return (lk->cap_Bps - below) / (double)k;
}

/* Takes the flows of component link i that the update can move (joined,
 * or at or above the level), then their links. */
static void take_flows(pp_flownet *net, size_t i, size_t *nf, size_t *nl) {
    const link *lk = &net->links[net->c_links[i]];
    size_t first = *nf;
    double lv = net->c_level;
    PP_VEC_RESERVE(net->c_flows, net->cap_c_flows, *nf + lk->n, 16);
    for (size_t k = 0; k < lk->n; k++) {
        int32_t s = lk->fl[k].slot;
        if (net->f_mark[s] == net->epoch)
            continue;
        const flow *f = &net->fl[s];
        if (f->state == F_ACTIVE && f->rate < lv)
            continue;
        net->f_mark[s] = net->epoch;
        net->c_flows[(*nf)++] = s;
        prefetch(f->path);
    }
    for (size_t j = first; j < *nf; j++)
        take_links(net, net->c_flows[j], nl); /* links[] never moves */
}

/* Every busy link, and every active flow the update can move: a superset
 * of the component, solved the same (its other parts keep their rates). */
static void take_all(pp_flownet *net, size_t *nf_out, size_t *nl_out) {
    size_t ns = net->n_cseeds;
    next_epoch(net);
    for (size_t i = 0; i < ns; i++)
        net->links[net->c_links[i]].mark = net->epoch;
    size_t nl = ns;
    PP_VEC_RESERVE(net->c_links, net->cap_c_links, ns + net->n_busy, 16);
    for (size_t b = 0; b < net->n_busy; b++)
        if (net->links[net->busy[b]].mark != net->epoch)
            net->c_links[nl++] = net->busy[b];
    size_t nf = 0;
    PP_VEC_RESERVE(net->c_flows, net->cap_c_flows, net->n_active, 16);
    for (size_t a = 0; a < net->n_active; a++) {
        int32_t s = net->active[a];
        const flow *f = &net->fl[s];
        if (f->state == F_ACTIVE && f->rate < net->c_level)
            continue;
        net->f_mark[s] = net->epoch;
        net->c_flows[nf++] = s;
    }
    *nf_out = nf;
    *nl_out = nl;
}

/* Finds the flows whose rates the update can move: from the changed links,
 * the flows at or above the update's level (join_level) and, through
 * their links, the flows at or above it that share a link with them.
 * Flows below the level keep their rates; what they use of a link is
 * taken off its capacity for the others (build_csr), which is exact: the
 * filling from zero of what is left reaches the level before any of its
 * links saturates, and goes on from there as the whole would.  Past the
 * threshold, every busy link and movable flow is taken instead.  Returns
 * true for that. */
static bool gather(pp_flownet *net, size_t *nf_out, size_t *nl_out) {
    size_t ns = net->n_seeds, nf = 0, nl = 0;
    double level = net->left_level;
    net->left_level = INFINITY;
    next_epoch(net);
    PP_VEC_RESERVE(net->c_links, net->cap_c_links, ns, 16);
    for (size_t i = 0; i < ns; i++) {
        link *lk = &net->links[net->seeds[i]];
        lk->seed = false;
        lk->mark = net->epoch;
        net->c_links[nl++] = net->seeds[i];
        if (net->n_joined > 0) { /* else only flows left: no join level */
            double t = join_level(net, lk);
            if (t < level)
                level = t;
        }
    }
    net->n_seeds = 0;
    net->n_joined = 0;
    net->n_cseeds = ns;
    net->c_level = level * (1 - LEVEL_TOL);
    size_t limit = (size_t)(FULL_FRACTION * (double)net->n_active);
    bool full = false;
    /* Breadth first.  A link's new flows are all taken (marked, queued)
     * before their links are: the same order of flows and links as taking
     * each in turn, with their lines asked for together. */
    for (size_t i = 0; i < nl; i++) {
        if (i + AHEAD < nl)
            prefetch(&net->links[net->c_links[i + AHEAD]]);
        if (i + AHEAD / 2 < nl)
            prefetch(net->links[net->c_links[i + AHEAD / 2]].fl);
        take_flows(net, i, &nf, &nl);
        if (nf > limit) {
            full = true;
            break;
        }
    }
    if (full)
        take_all(net, &nf, &nl);
    *nf_out = nf;
    *nl_out = nl;
    return full;
}

/* The component's problem in CSR form, with local indices: each link's
 * capacity less what the flows that keep their rates use of it (c_out),
 * and only the component's flows in its list.  *max_n is the most
 * component flows on one link, *kept whether any link carries a kept
 * flow. */
static void build_csr(pp_flownet *net, size_t nf, size_t nl, double now,
                      size_t *max_n, bool *kept) {
    PP_VEC_RESERVE(net->c_cap, net->cap_c_cap, nl + 1, 16);
    PP_VEC_RESERVE(net->c_out, net->cap_c_out, nl + 1, 16);
    PP_VEC_RESERVE(net->lf_off, net->cap_lf_off, nl + 1, 16);
    PP_VEC_RESERVE(net->f_off, net->cap_f_off, nf + 1, 16);
    PP_VEC_RESERVE(net->c_rate, net->cap_c_rate, nf + 1, 16);
    size_t hops = 0;
    *max_n = 0;
    *kept = false;
    for (size_t i = 0; i < nl; i++) {
        link *lk = &net->links[net->c_links[i]];
        settle_link(lk, now);
        size_t n = 0;
        double out = 0;
        for (size_t k = 0; k < lk->n; k++) {
            int32_t s = lk->fl[k].slot;
            if (net->f_mark[s] == net->epoch)
                n++;
            else
                out += net->fl[s].rate;
        }
        if (n < lk->n)
            *kept = true;
        net->c_out[i] = out;
        net->c_cap[i] = n < lk->n ? fmax(lk->cap_Bps - out, 0) : lk->cap_Bps;
        net->lf_off[i] = (int32_t)hops;
        hops += n;
        if (n > *max_n)
            *max_n = n;
    }
    net->lf_off[nl] = (int32_t)hops;
    if (*max_n <= 1 && !*kept)
        return; /* on_resolve's shortcut needs no CSR */
    size_t fh = 0;
    for (size_t j = 0; j < nf; j++) {
        int32_t s = net->c_flows[j];
        net->f_local[s] = (int32_t)j;
        net->f_off[j] = (int32_t)fh;
        fh += (size_t)net->f_n[s];
    }
    net->f_off[nf] = (int32_t)fh;
    assert(fh == hops);
    /* Both directions from the links' lists: the entry of flow j's hop h
     * on link i puts j in i's list and i at h in j's path, which is
     * path[h]'s index in the component; no flow line or path is read.
     * Every link of a component flow is in the component. */
    PP_VEC_RESERVE(net->lf, net->cap_lf, hops + 1, 16);
    PP_VEC_RESERVE(net->f_links, net->cap_f_links, hops + 1, 16);
    for (size_t i = 0; i < nl; i++) {
        link *lk = &net->links[net->c_links[i]];
        int32_t *out = net->lf + net->lf_off[i];
        for (size_t k = 0; k < lk->n; k++) {
            lentry x = lk->fl[k];
            if (net->f_mark[x.slot] != net->epoch)
                continue;
            int32_t j = net->f_local[x.slot];
            *out++ = j;
            net->f_links[net->f_off[j] + x.hop] = (int32_t)i;
        }
    }
}

static void on_resolve(pp_engine *eng, void *ctx, uint64_t arg) {
    (void)arg;
    pp_flownet *net = ctx;
    double now = pp_engine_now(eng);
    net->resolve = 0;
    size_t nf, nl;
    bool full = gather(net, &nf, &nl);

    /* No flow can move (only flows left, and what else crossed their
     * links was below their level, or nothing): the links only lose the
     * flows that left.  What the general path below would do, without
     * building an empty problem. */
    if (nf == 0) {
        for (size_t i = 0; i < nl; i++) {
            link *lk = &net->links[net->c_links[i]];
            settle_link(lk, now);
            double sum = 0;
            for (size_t k = 0; k < lk->n; k++)
                sum += net->fl[lk->fl[k].slot].rate;
            lk->rate = sum;
        }
        net->st.updates++;
        net->st.full_solves += full;
        net->st.active_sum += net->n_active;
        rearm(net);
        return;
    }

    size_t max_n;
    bool kept;
    build_csr(net, nf, nl, now, &max_n, &kept);
    /* No link carries two of the component's hops, and none a flow that
     * keeps its rate (most updates): every flow is alone on its path,
     * and pp__maxmin_core would settle each at the narrowest capacity of its
     * path in its first loop and do nothing else.  So do just that,
     * without the CSR; a link's rate sum is then its one flow's rate
     * (0 + r == r exactly: r >= 0), or 0. */
    bool alone = max_n <= 1 && !kept;
    if (alone) {
        for (size_t j = 0; j < nf; j++) {
            const flow *f = &net->fl[net->c_flows[j]];
            double r = INFINITY;
            for (int32_t h = 0; h < f->n; h++) {
                double c = net->links[f->path[h]].cap_Bps;
                if (c < r)
                    r = c;
            }
            for (int32_t h = 0; h < f->n; h++)
                net->links[f->path[h]].rate = r;
            net->c_rate[j] = r;
        }
        for (size_t i = 0; i < nl; i++) {
            link *lk = &net->links[net->c_links[i]];
            if (lk->n == 0)
                lk->rate = 0;
        }
    } else {
        pp__maxmin_core((int32_t)nl, net->c_cap, net->lf_off, net->lf,
                        (int32_t)nf, net->f_off, net->f_links, net->c_rate,
                        &net->mm);
    }

    /* New rates; flows whose rate did not change keep their lazy state.
     * When the component is a large part of the heap, keys are written in
     * place and the heap rebuilt once (O(n)) rather than sifted one by one
     * (O(nf log n)); the pop order is fixed by (t_end, id) either way. */
    pp_iheap *dh = &net->done_heap;
    bool bulk = nf > 64 && 4 * nf > dh->n;
    for (size_t j = 0; j < nf; j++) {
        int32_t s = net->c_flows[j];
        flow *f = &net->fl[s];
        double r = net->c_rate[j];
        if (f->state == F_JOINED) {
            f->state = F_ACTIVE;
            f->left = f->bytes;
        } else if (r == f->rate) {
            continue;
        } else {
            f->left -= f->rate * (now - f->t_last);
            if (f->left < 0)
                f->left = 0;
        }
        f->t_last = now;
        f->rate = r;
        f->t_end = r > 0 ? now + f->left / r : INFINITY;
        if (bulk && net->hpos[s] < 0) {
            PP_VEC_RESERVE(dh->a, dh->cap, dh->n + 1, 16);
            net->hpos[s] = (int32_t)dh->n;
            dh->a[dh->n++] = (pp_ikey){f->t_end, s, f->id};
        } else if (bulk) {
            dh->a[net->hpos[s]].k = f->t_end;
        } else if (net->hpos[s] < 0) {
            pp_iheap_push(dh, net->hpos, s, f->id, f->t_end);
        } else {
            pp_iheap_update(dh, net->hpos, s, f->t_end);
        }
    }
    if (bulk)
        pp_iheap_heapify(dh, net->hpos);
    /* Link rate sums from scratch (no drift from adding and subtracting),
     * read off the component's CSR: c_rate holds the rate now of every
     * component flow of a link, c_out the sum of the others'. */
    for (size_t i = 0; i < nl && !alone; i++) {
        double sum = net->c_out[i];
        for (int32_t k = net->lf_off[i]; k < net->lf_off[i + 1]; k++)
            sum += net->c_rate[net->lf[k]];
        net->links[net->c_links[i]].rate = sum;
    }
    net->st.updates++;
    net->st.full_solves += full;
    net->st.flows_touched += nf;
    net->st.active_sum += net->n_active;
    rearm(net);
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
