/*
 * sim/net/flow_solve.c: the flow network's update (flow.c's top comment
 * says what it does and why): gather the flows an update can move, build
 * their problem in CSR form, solve it (maxmin.c) and write the new rates,
 * completion times and link rate sums.  One update per simulated instant
 * with changes, run as an engine event (pp__flow_on_resolve).
 */
#include "flow_int.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FULL_FRACTION 0.5 /* coupled share of active flows: full solve */

/* How far ahead the passes over the component's links and flows ask for
 * the lines they will need: their targets are scattered, and asked for
 * together the misses overlap instead of queueing. */
#define AHEAD 8

/* Adds the unvisited links of flow slot s (taken) to the component. */
static void take_links(pp_flownet *net, int32_t s, size_t *nl) {
    const fwalk *f = &net->fw[s];
    for (int32_t h = 0; h < f->n; h++) {
        link *lk = &net->links[f->path[h]];
        if (lk->mark == net->epoch) continue;
        lk->mark = net->epoch;
        PP_VEC_RESERVE(net->c_links, net->cap_c_links, *nl + 1, 16);
        net->c_links[(*nl)++] = f->path[h];
    }
}

static void next_epoch(pp_flownet *net) {
    if (++net->epoch == 0) { /* wrapped: clear every mark once */
        for (size_t l = 0; l < net->n_links; l++) net->links[l].mark = 0;
        for (size_t s = 0; s < net->n_fl; s++) net->fw[s].mark = 0;
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
    for (size_t i = 0; i < lk->n; i++) { /* from the keys: no flow read */
        double key = lk->fl[i].key;
        if (key == INFINITY) /* joined */
            k++;
        else
            net->lv[m++] = key;
    }
    if (k == 0) return INFINITY;
    qsort(net->lv, m, sizeof *net->lv, cmp_double);
    /* Between the i-th and (i+1)-th smallest rates the load is the sum of
     * the i smallest plus (m - i + k) t. */
    double below = 0;
    for (size_t i = 0; i < m; i++) {
        double t = (lk->cap_Bps - below) / (double)(m - i + k);
        if (t <= net->lv[i]) return t;
        below += net->lv[i];
    }
    return (lk->cap_Bps - below) / (double)k;
}

/* Takes the flows of component link i that the update can move (joined,
 * or at or above the level: key >= level), then their links; and, from the
 * same pass over the link's list, fills in link i's row of the problem
 * build_csr would build (when the walk does not turn into a full solve).
 * That is possible because which of a link's flows are in the component
 * depends on its entry alone (key against the level), and every flow in
 * the link's list is then either taken already or taken now, so its local
 * index is known.  The rows come out as build_csr's: links in c_links
 * order, each link's flows in list order, the others' rates summed in list
 * order (c_out), flows numbered in the order taken. */
static void take_flows(pp_flownet *net, size_t i, size_t *nf, size_t *nl,
                       size_t *hops, size_t *fh) {
    const link *lk = &net->links[net->c_links[i]];
    size_t first = *nf;
    double lv = net->c_level;
    PP_VEC_RESERVE(net->c_flows, net->cap_c_flows, *nf + lk->n, 16);
    PP_VEC_RESERVE(net->f_off, net->cap_f_off, *nf + lk->n + 1, 16);
    PP_VEC_RESERVE(net->lf, net->cap_lf, *hops + lk->n + 1, 16);
    PP_VEC_RESERVE(net->lf_off, net->cap_lf_off, i + 2, 16);
    PP_VEC_RESERVE(net->c_out, net->cap_c_out, i + 2, 16);
    net->lf_off[i] = (int32_t)*hops;
    double out = 0;
    for (size_t k = 0; k < lk->n; k++) {
        lentry x = lk->fl[k];
        if (x.key < lv) { /* keeps its rate: x.key */
            out += x.key;
            continue;
        }
        int32_t s = x.slot;
        fwalk *w = &net->fw[s];
        if (w->mark != net->epoch) {
            w->mark = net->epoch;
            w->local = (int32_t)*nf;
            net->f_off[*nf] = (int32_t)*fh;
            *fh += (size_t)w->n;
            PP_VEC_RESERVE(net->f_links, net->cap_f_links, *fh + 1, 16);
            net->c_flows[(*nf)++] = s;
            /* take_links reads the path next; the rates' write-back
             * reads the flow and its positions in its links' lists. */
            prefetch(w->path);
            prefetch(w->path + w->n);
            prefetch(&net->fl[s]);
        }
        int32_t j = w->local;
        net->lf[(*hops)++] = j;
        net->f_links[net->f_off[j] + x.hop] = (int32_t)i;
    }
    net->c_out[i] = out;
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
        if (f->state == F_ACTIVE && f->rate < net->c_level) continue;
        net->fw[s].mark = net->epoch;
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
            if (t < level) level = t;
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
    size_t hops = 0, fh = 0;
    for (size_t i = 0; i < nl; i++) {
        if (i + AHEAD < nl) prefetch(&net->links[net->c_links[i + AHEAD]]);
        if (i + AHEAD / 2 < nl)
            prefetch(net->links[net->c_links[i + AHEAD / 2]].fl);
        take_flows(net, i, &nf, &nl, &hops, &fh);
        if (nf > limit) {
            full = true;
            break;
        }
    }
    if (full) {
        take_all(net, &nf, &nl);
    } else { /* close the rows take_flows filled in */
        PP_VEC_RESERVE(net->lf_off, net->cap_lf_off, nl + 1, 16);
        PP_VEC_RESERVE(net->f_off, net->cap_f_off, nf + 1, 16);
        net->lf_off[nl] = (int32_t)hops;
        net->f_off[nf] = (int32_t)fh;
        assert(fh == hops);
    }
    *nf_out = nf;
    *nl_out = nl;
    return full;
}

/* The component's problem in CSR form, with local indices: each link's
 * capacity less what the flows that keep their rates use of it (c_out),
 * and only the component's flows in its list.  *max_n is the most
 * component flows on one link, *kept whether any link carries a kept
 * flow.  After a walk (not full) take_flows has built the lists and c_out
 * already; only the capacities are left. */
static void build_csr(pp_flownet *net, size_t nf, size_t nl, bool full,
                      double now, size_t *max_n, bool *kept) {
    PP_VEC_RESERVE(net->c_cap, net->cap_c_cap, nl + 1, 16);
    PP_VEC_RESERVE(net->c_out, net->cap_c_out, nl + 1, 16);
    PP_VEC_RESERVE(net->lf_off, net->cap_lf_off, nl + 1, 16);
    PP_VEC_RESERVE(net->f_off, net->cap_f_off, nf + 1, 16);
    PP_VEC_RESERVE(net->c_rate, net->cap_c_rate, nf + 1, 16);
    size_t hops = 0;
    *max_n = 0;
    *kept = false;
    if (!full) {
        for (size_t i = 0; i < nl; i++) {
            link *lk = &net->links[net->c_links[i]];
            settle_link(lk, now);
            size_t n = (size_t)(net->lf_off[i + 1] - net->lf_off[i]);
            if (n < lk->n) *kept = true;
            net->c_cap[i] = n < lk->n ? fmax(lk->cap_Bps - net->c_out[i], 0)
                                      : lk->cap_Bps;
            if (n > *max_n) *max_n = n;
        }
        return;
    }
    /* A full solve: the same rows from the links' lists.  take_all took
     * exactly the flows with key >= c_level, so the keys tell members
     * from kept flows, as in take_flows. */
    double lv = net->c_level;
    for (size_t i = 0; i < nl; i++) {
        link *lk = &net->links[net->c_links[i]];
        settle_link(lk, now);
        size_t n = 0;
        double out = 0;
        for (size_t k = 0; k < lk->n; k++) {
            double key = lk->fl[k].key;
            if (key >= lv)
                n++;
            else
                out += key;
        }
        if (n < lk->n) *kept = true;
        net->c_out[i] = out;
        net->c_cap[i] = n < lk->n ? fmax(lk->cap_Bps - out, 0) : lk->cap_Bps;
        net->lf_off[i] = (int32_t)hops;
        hops += n;
        if (n > *max_n) *max_n = n;
    }
    net->lf_off[nl] = (int32_t)hops;
    if (*max_n <= 1 && !*kept)
        return; /* pp__flow_on_resolve's shortcut needs no CSR */
    size_t fh = 0;
    for (size_t j = 0; j < nf; j++) {
        int32_t s = net->c_flows[j];
        net->fw[s].local = (int32_t)j;
        net->f_off[j] = (int32_t)fh;
        fh += (size_t)net->fw[s].n;
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
            if (x.key < lv) continue;
            int32_t j = net->fw[x.slot].local;
            *out++ = j;
            net->f_links[net->f_off[j] + x.hop] = (int32_t)i;
        }
    }
}

void pp__flow_on_resolve(pp_engine *eng, void *ctx, uint64_t arg) {
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
                sum += lk->fl[k].key; /* all active: no joined flow here */
            lk->rate = sum;
        }
        net->st.updates++;
        net->st.full_solves += full;
        net->st.active_sum += net->n_active;
        pp__flow_rearm(net);
        return;
    }

    size_t max_n;
    bool kept;
    build_csr(net, nf, nl, full, now, &max_n, &kept);
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
                if (c < r) r = c;
            }
            for (int32_t h = 0; h < f->n; h++) net->links[f->path[h]].rate = r;
            net->c_rate[j] = r;
        }
        for (size_t i = 0; i < nl; i++) {
            link *lk = &net->links[net->c_links[i]];
            if (lk->n == 0) lk->rate = 0;
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
        if (j + AHEAD < nf) { /* a full solve's flows were not walked */
            const fwalk *w = &net->fw[net->c_flows[j + AHEAD]];
            prefetch(&net->fl[net->c_flows[j + AHEAD]]);
            prefetch(w->path + w->n);
        }
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
            if (f->left < 0) f->left = 0;
        }
        f->t_last = now;
        f->rate = r;
        /* The links' entries carry the rate too (lentry.key); the lines
         * were read by this update's walk. */
        const int32_t *pos = f->path + f->n;
        for (int32_t h = 0; h < f->n; h++)
            net->links[f->path[h]].fl[pos[h]].key = r;
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
    if (bulk) pp_iheap_heapify(dh, net->hpos);
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
    pp__flow_rearm(net);
#ifdef PODPLAN_FLOW_CHECK
    pp__flownet_check_or_die(net);
#endif
}
