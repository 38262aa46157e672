/*
 * maxmin.c: max-min fair rates by progressive filling, the solver under
 * the flow network (flow.c) and the reference it is tested against
 * (pp_maxmin_solve).
 *
 * Progressive filling (pp__maxmin_core).  Every link keeps its
 * remaining capacity and the number of its flows not yet frozen; the link
 * with the smallest fair share (remaining / count) is the next bottleneck:
 * its flows are frozen at that share, which is subtracted from every other
 * link they cross.  Shares only grow as flows freeze, so an indexed heap of
 * links keyed by share finds the bottlenecks in order, and a component of
 * F flows, L links and P hops costs O((P + L) log L).  A flow alone on its
 * path gets exactly min(capacity): no arithmetic touches the capacity,
 * which is what makes flow and analytic fidelities agree to the last bit.
 */
#include "flow_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the progressive-filling core ------------------------------------ */

void pp__mm_scratch_fini(mm_scratch *s) {
    free(s->rc);
    free(s->cnt);
    free(s->dirty);
    pp_iheap_fini(&s->h);
}

/* The solve only ever pushes, re-keys the top and pops the top, so its
 * heap needs no position index: these are common's pp_iheap_up /
 * pp_iheap_down / pp_iheap_remove (podplan/common.h) without the pos[]
 * writes, which were most of a solve's stores; kept specialised rather
 * than made to skip a NULL pos, which would put a test in the inner loop.
 * Same comparisons, same moves, so the same pop order. */
static inline void mm_up(pp_iheap *h, size_t i) {
    pp_ikey x = h->a[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!pp_ikey_less(&x, &h->a[p])) break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i] = x;
}

static inline void mm_down(pp_iheap *h, size_t i) {
    pp_ikey x = h->a[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && pp_ikey_less(&h->a[c + 1], &h->a[c])) c++;
        if (!pp_ikey_less(&h->a[c], &x)) break;
        h->a[i] = h->a[c];
        i = c;
    }
    h->a[i] = x;
}

static inline void mm_pop(pp_iheap *h) {
    if (--h->n == 0) return;
    h->a[0] = h->a[h->n];
    mm_down(h, 0);
}

/* Max-min rates for nf flows over nl links, both as CSR: link l carries
 * flows lf[lf_off[l] .. lf_off[l+1]-1] and flow f crosses links
 * fl[f_off[f] .. f_off[f+1]-1] (a link crossed twice counts twice).  A flow
 * that crosses no link is unconstrained: INFINITY.
 *
 * Keys are refreshed lazily.  Freezing flows at the current level s only
 * raises the other links' shares ((rc - s) / (cnt - 1) >= rc / cnt when
 * s <= rc / cnt), so a stale key is a lower bound: a link is only marked
 * dirty when a flow of it freezes, and its share is recomputed when it
 * reaches the top.  The top is a true minimum once it is clean.  This
 * makes a hop O(1) instead of a heap update, and a link whose many flows
 * freeze at once is re-keyed once. */
void pp__maxmin_core(int32_t nl, const double *cap, const int32_t *lf_off,
                     const int32_t *lf, int32_t nf, const int32_t *f_off,
                     const int32_t *fl, double *rate, mm_scratch *s) {
    if ((size_t)nl > s->cap) {
        s->cap = (size_t)nl > 2 * s->cap ? (size_t)nl : 2 * s->cap;
        s->rc = pp_xrealloc(s->rc, s->cap * sizeof *s->rc);
        s->cnt = pp_xrealloc(s->cnt, s->cap * sizeof *s->cnt);
        s->dirty = pp_xrealloc(s->dirty, s->cap * sizeof *s->dirty);
    }
    if ((size_t)nl > s->h.cap) { /* at most one key per link */
        s->h.cap = s->cap;
        s->h.a = pp_xrealloc(s->h.a, s->h.cap * sizeof *s->h.a);
    }
    for (int32_t l = 0; l < nl; l++) {
        s->rc[l] = cap[l];
        s->cnt[l] = lf_off[l + 1] - lf_off[l];
        s->dirty[l] = false;
    }
    /* A flow alone on every link of its path (once each) shares nothing:
     * the filling would freeze it at the first of its links to reach the
     * top, min over them of cap / 1 == cap, and touch nothing else.  So it
     * is settled here and its links stay out of the heap (cnt 0); the
     * other flows' links, disjoint from these, pop in the same order as
     * before.  Updates are mostly such flows (an NVSwitch ring, a lone
     * pipeline send). */
    for (int32_t f = 0; f < nf; f++) {
        double r = INFINITY;
        int32_t j = f_off[f];
        for (; j < f_off[f + 1]; j++) {
            int32_t m = fl[j];
            if (s->cnt[m] != 1) break;
            if (cap[m] < r) r = cap[m];
        }
        if (j < f_off[f + 1]) {
            rate[f] = -1.0; /* unfrozen */
            continue;
        }
        rate[f] = r;
        for (j = f_off[f]; j < f_off[f + 1]; j++) s->cnt[fl[j]] = 0;
    }
    s->h.n = 0;
    for (int32_t l = 0; l < nl; l++) {
        if (s->cnt[l] > 0) {
            s->h.a[s->h.n] = (pp_ikey){cap[l] / s->cnt[l], l, l};
            mm_up(&s->h, s->h.n++);
        }
    }
    size_t dead = 0; /* entries in the heap whose link's cnt is 0 */
    while (s->h.n > 0) {
        if (dead > 32 && 2 * dead > s->h.n) {
            /* Most of the heap is links every flow of which froze
             * elsewhere: they would only be popped and skipped, one
             * O(log n) sift each.  Drop them at once and rebuild (O(n)).
             * They never influence a live entry's turn, and the keys are
             * totally ordered by (key, link), so every live link reaches
             * the top in the same order, with the same key, as before. */
            size_t k = 0;
            for (size_t i = 0; i < s->h.n; i++)
                if (s->cnt[s->h.a[i].item] > 0) s->h.a[k++] = s->h.a[i];
            s->h.n = k;
            for (size_t i = k / 2; i-- > 0;) mm_down(&s->h, i);
            dead = 0;
            continue;
        }
        int32_t l = s->h.a[0].item;
        if (s->cnt[l] == 0) { /* every flow of it froze elsewhere */
            mm_pop(&s->h);
            dead--;
            continue;
        }
        if (s->dirty[l]) {
            s->dirty[l] = false;
            s->h.a[0].k = s->rc[l] / s->cnt[l];
            mm_down(&s->h, 0);
            continue;
        }
        double share = s->h.a[0].k;
        mm_pop(&s->h);
        if (share < 0) share = 0; /* rounding left a hair below zero */
        for (int32_t i = lf_off[l]; i < lf_off[l + 1]; i++) {
            int32_t f = lf[i];
            if (rate[f] >= 0) continue;
            rate[f] = share;
            for (int32_t j = f_off[f]; j < f_off[f + 1]; j++) {
                int32_t m = fl[j];
                s->rc[m] -= share;
                if (--s->cnt[m] == 0 && m != l)
                    dead++; /* l itself is out of the heap already */
                s->dirty[m] = true;
            }
        }
    }
    for (int32_t f = 0; f < nf; f++)
        if (rate[f] < 0) rate[f] = INFINITY;
}

int pp_maxmin_solve(size_t n_links, const double *capacity_Bps, size_t n_flows,
                    const int32_t *off, const int32_t *links, double *rates,
                    pp_error *e) {
    if (n_links > INT32_MAX || n_flows > INT32_MAX)
        return pp_error_set(e, PP_EINVAL, "maxmin: too many links or flows");
    if (off[0] != 0)
        return pp_error_set(e, PP_EINVAL, "maxmin: off[0] must be 0");
    for (size_t f = 0; f < n_flows; f++)
        if (off[f + 1] < off[f])
            return pp_error_set(e, PP_EINVAL,
                                "maxmin: off[] decreases at flow %zu", f);
    for (size_t l = 0; l < n_links; l++)
        if (!(capacity_Bps[l] >= 0))
            return pp_error_set(e, PP_EINVAL,
                                "maxmin: link %zu: capacity %g is negative", l,
                                capacity_Bps[l]);
    size_t n_hops = (size_t)off[n_flows];
    for (size_t j = 0; j < n_hops; j++)
        if (links[j] < 0 || (size_t)links[j] >= n_links)
            return pp_error_set(e, PP_EINVAL,
                                "maxmin: hop %zu: link %d out of range", j,
                                (int)links[j]);

    /* Transpose the paths into per-link flow lists (counting sort). */
    int32_t *lf_off = pp_xcalloc(n_links + 1, sizeof *lf_off);
    int32_t *lf = pp_xmalloc((n_hops ? n_hops : 1) * sizeof *lf);
    for (size_t j = 0; j < n_hops; j++) lf_off[links[j] + 1]++;
    for (size_t l = 0; l < n_links; l++) lf_off[l + 1] += lf_off[l];
    int32_t *fill = pp_xmalloc((n_links ? n_links : 1) * sizeof *fill);
    memcpy(fill, lf_off, n_links * sizeof *fill);
    for (size_t f = 0; f < n_flows; f++)
        for (int32_t j = off[f]; j < off[f + 1]; j++)
            lf[fill[links[j]]++] = (int32_t)f;

    mm_scratch s = {0};
    pp__maxmin_core((int32_t)n_links, capacity_Bps, lf_off, lf,
                    (int32_t)n_flows, off, links, rates, &s);
    pp__mm_scratch_fini(&s);
    free(fill);
    free(lf);
    free(lf_off);
    return 0;
}
