/*
 * sim/net/flow_check.c: the flow network's invariant checker.
 *
 * Everything the incremental update relies on but never re-derives: the
 * rates on a link fit its capacity, every active flow has a rate and a
 * completion time in the heap, and the cross-indices (a flow's slots in
 * its links' lists and the lists' entries back, the heap positions, the
 * active and busy lists, id -> slot) agree, and so do the copies the
 * update reads instead of the flows (the links' entries' keys, the walk's
 * paths).  A stale index corrupts results silently, long after the change
 * that broke it; run after every update, the checker names the first
 * broken invariant at that update.
 *
 * Compiled in where PODPLAN_FLOW_CHECK is defined: the Debug build type
 * (sim/net/CMakeLists.txt) and the flow tests, which build the network's
 * sources with it.  Not keyed on NDEBUG: this project's Release flags keep
 * asserts on, and the check costs O(links + hops) per update, far more
 * than an update itself.
 */
#include "flow_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef PODPLAN_FLOW_CHECK

#define CAP_REL_TOL 1e-9

#define FAIL(...) return pp_error_set(e, PP_EINVAL, "flownet: " __VA_ARGS__)

static int check_flow(const pp_flownet *net, int32_t s, pp_error *e) {
    const flow *f = &net->fl[s];
    if (f->state == F_FREE) return 0;
    if (f->id < 0 || (size_t)f->id >= net->n_ids || net->slot_of[f->id] != s)
        FAIL("flow slot %d: id %d does not map back to it", s, f->id);
    bool in_links = f->state == F_JOINED || f->state == F_ACTIVE;
    if (f->state == F_ACTIVE && !(f->rate >= 0 && isfinite(f->rate)))
        FAIL("flow %d is active with rate %g", f->id, f->rate);
    if (f->state == F_ACTIVE) {
        int32_t h = net->hpos[s];
        if (h < 0 || (size_t)h >= net->done_heap.n ||
            net->done_heap.a[h].item != s)
            FAIL("flow %d is active but not at its heap position %d", f->id, h);
        if (net->done_heap.a[h].k != f->t_end)
            FAIL("flow %d: heap key %.17g, completion time %.17g", f->id,
                 net->done_heap.a[h].k, f->t_end);
    } else if (net->hpos[s] >= 0) {
        FAIL("flow %d is not active but has heap position %d", f->id,
             net->hpos[s]);
    }
    if (in_links) {
        if (f->apos < 0 || (size_t)f->apos >= net->n_active ||
            net->active[f->apos] != s)
            FAIL("flow %d: active-list position %d is stale", f->id, f->apos);
        if (net->fw[s].path != f->path || net->fw[s].n != f->n)
            FAIL("flow %d: the walk's copy of its path is stale", f->id);
        const int32_t *pos = f->path + f->n;
        for (int32_t h = 0; h < f->n; h++) {
            int32_t l = f->path[h];
            if (l < 0 || (size_t)l >= net->n_links)
                FAIL("flow %d: hop %d on link %d, out of range", f->id, h, l);
            const link *lk = &net->links[l];
            if (pos[h] < 0 || (uint32_t)pos[h] >= lk->n ||
                lk->fl[pos[h]].slot != s || lk->fl[pos[h]].hop != h)
                FAIL("flow %d: hop %d's entry %d in link %d's list is stale",
                     f->id, h, pos[h], l);
        }
    }
    return 0;
}

static int check_link(const pp_flownet *net, size_t l, size_t *busy,
                      pp_error *e) {
    const link *lk = &net->links[l];
    double sum = 0;
    for (uint32_t k = 0; k < lk->n; k++) {
        lentry x = lk->fl[k];
        if (x.slot < 0 || (size_t)x.slot >= net->n_fl)
            FAIL("link %zu: entry %u names slot %d, out of range", l, k,
                 x.slot);
        const flow *f = &net->fl[x.slot];
        if ((f->state != F_JOINED && f->state != F_ACTIVE) || x.hop < 0 ||
            x.hop >= f->n || f->path[x.hop] != (int32_t)l ||
            f->path[f->n + x.hop] != (int32_t)k)
            FAIL("link %zu: entry %u (slot %d, hop %d) does not match its "
                 "flow",
                 l, k, x.slot, x.hop);
        if (f->state == F_ACTIVE) sum += f->rate;
    }
    if (sum > lk->cap_Bps * (1 + CAP_REL_TOL))
        FAIL("link %zu carries %.17g B/s over its capacity %.17g B/s", l, sum,
             lk->cap_Bps);
    for (uint32_t k = 0; k < lk->n; k++) {
        lentry x = lk->fl[k];
        const flow *f = &net->fl[x.slot];
        if (x.key != (f->state == F_JOINED ? INFINITY : f->rate))
            FAIL("link %zu: entry %u (flow %d) has key %.17g, rate %.17g", l,
                 k, f->id, x.key, f->rate);
    }
    if (lk->n > 0) {
        (*busy)++;
        if (lk->bpos < 0 || (size_t)lk->bpos >= net->n_busy ||
            net->busy[lk->bpos] != (int32_t)l)
            FAIL("link %zu carries flows but its busy position %d is stale", l,
                 lk->bpos);
    } else if (lk->bpos >= 0) {
        FAIL("link %zu carries no flow but is in the busy list", l);
    }
    return 0;
}

int pp__flownet_check(const pp_flownet *net, pp_error *e) {
    for (size_t s = 0; s < net->n_fl; s++) {
        int rc = check_flow(net, (int32_t)s, e);
        if (rc) return rc;
    }
    size_t busy = 0;
    for (size_t l = 0; l < net->n_links; l++) {
        int rc = check_link(net, l, &busy, e);
        if (rc) return rc;
    }
    if (busy != net->n_busy)
        FAIL("%zu links carry flows, the busy list has %zu", busy, net->n_busy);
    const pp_iheap *h = &net->done_heap;
    for (size_t i = 0; i < h->n; i++) {
        int32_t s = h->a[i].item;
        if (s < 0 || (size_t)s >= net->n_fl || net->hpos[s] != (int32_t)i)
            FAIL("heap entry %zu (slot %d) disagrees with its position", i, s);
        if (i > 0 && pp_ikey_less(&h->a[i], &h->a[(i - 1) / 2]))
            FAIL("heap entry %zu is less than its parent", i);
    }
    for (size_t a = 0; a < net->n_active; a++) {
        int32_t s = net->active[a];
        if (s < 0 || (size_t)s >= net->n_fl || net->fl[s].apos != (int32_t)a)
            FAIL("active entry %zu (slot %d) disagrees with its flow", a, s);
    }
    return 0;
}

void pp__flownet_check_or_die(const pp_flownet *net) {
    pp_error e = PP_ERROR_INIT;
    if (pp__flownet_check(net, &e)) {
        fprintf(stderr, "podplan: flow network invariant broken: %s\n", e.msg);
        abort();
    }
}

#else
typedef int pp__flow_check_unused; /* ISO C: a unit must declare something */
#endif
