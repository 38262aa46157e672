/*
 * flow_int.h: private to sim/net/flow.c and sim/net/maxmin.c.  An indexed binary
 * min-heap (the completion times of the flows, the fair shares of the
 * links during a solve), the solver's entry and a growth helper.
 */
#ifndef PODPLAN_FLOW_INT_H
#define PODPLAN_FLOW_INT_H

#include "podplan/net.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- an indexed binary min-heap of (key, tie) ---------------------------
 * Items are small integers (a flow slot, a local link index); pos[item] is
 * the item's heap index or -1.  Ties on the key are broken by `tie` so that
 * the order never depends on the heap's history. */
typedef struct ikey {
    double k;
    int32_t item;
    int32_t tie;
} ikey;

typedef struct iheap {
    ikey *a;
    size_t n, cap;
} iheap;

static inline bool ik_less(const ikey *x, const ikey *y) {
    return x->k < y->k || (x->k == y->k && x->tie < y->tie);
}

static inline void ih_up(iheap *h, int32_t *pos, size_t i) {
    ikey x = h->a[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!ik_less(&x, &h->a[p]))
            break;
        h->a[i] = h->a[p];
        pos[h->a[i].item] = (int32_t)i;
        i = p;
    }
    h->a[i] = x;
    pos[x.item] = (int32_t)i;
}

static inline void ih_down(iheap *h, int32_t *pos, size_t i) {
    ikey x = h->a[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && ik_less(&h->a[c + 1], &h->a[c]))
            c++;
        if (!ik_less(&h->a[c], &x))
            break;
        h->a[i] = h->a[c];
        pos[h->a[i].item] = (int32_t)i;
        i = c;
    }
    h->a[i] = x;
    pos[x.item] = (int32_t)i;
}

static inline void ih_push(iheap *h, int32_t *pos, int32_t item,
                           int32_t tie, double k) {
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 64;
        h->a = pp_xrealloc(h->a, h->cap * sizeof *h->a);
    }
    h->a[h->n] = (ikey){k, item, tie};
    ih_up(h, pos, h->n++);
}

static inline void ih_remove(iheap *h, int32_t *pos, int32_t item) {
    size_t i = (size_t)pos[item];
    pos[item] = -1;
    if (i == --h->n)
        return;
    h->a[i] = h->a[h->n];
    pos[h->a[i].item] = (int32_t)i;
    if (i > 0 && ik_less(&h->a[i], &h->a[(i - 1) / 2]))
        ih_up(h, pos, i);
    else
        ih_down(h, pos, i);
}

/* Restores the heap property everywhere (Floyd): O(n), for bulk edits. */
static inline void ih_heapify(iheap *h, int32_t *pos) {
    for (size_t i = h->n / 2; i-- > 0;)
        ih_down(h, pos, i);
}

static inline void ih_update(iheap *h, int32_t *pos, int32_t item,
                             double k) {
    size_t i = (size_t)pos[item];
    double old = h->a[i].k;
    h->a[i].k = k;
    if (k < old)
        ih_up(h, pos, i);
    else
        ih_down(h, pos, i);
}

/* ---- the max-min solver (maxmin.c) ------------------------------------ */
typedef struct mm_scratch {
    double *rc;     /* remaining capacity per link */
    int32_t *cnt;   /* unfrozen flows per link */
    bool *dirty;    /* rc or cnt changed since the link's key was set */
    size_t cap;
    iheap h;
} mm_scratch;

/* Max-min rates for nf flows over nl links given as CSR both ways (see
 * maxmin.c); scratch s is reused from call to call. */
void pp__maxmin_core(int32_t nl, const double *cap, const int32_t *lf_off,
                     const int32_t *lf, int32_t nf, const int32_t *f_off,
                     const int32_t *fl, double *rate, mm_scratch *s);
void pp__mm_scratch_fini(mm_scratch *s);

/* Grows array `p` (capacity `cap`, a size_t lvalue) to hold `need` items. */
#define GROW(p, cap, need)                                                 \
    do {                                                                   \
        if ((size_t)(need) > (cap)) {                                      \
            size_t c_ = (cap) ? (cap) : 16;                                \
            while (c_ < (size_t)(need))                                    \
                c_ *= 2;                                                   \
            (p) = pp_xrealloc((p), c_ * sizeof *(p));                      \
            (cap) = c_;                                                    \
        }                                                                  \
    } while (0)

#endif /* PODPLAN_FLOW_INT_H */
