/*
 * flow_int.h: private to sim/net/flow*.c and sim/net/maxmin.c: the
 * solver's entry.  The indexed heap and the growable arrays they use are
 * common's (pp_iheap, PP_VEC_RESERVE in podplan/common.h).
 */
#ifndef PODPLAN_FLOW_INT_H
#define PODPLAN_FLOW_INT_H

#include "podplan/net.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the max-min solver (maxmin.c) ------------------------------------ */
typedef struct mm_scratch {
    double *rc;     /* remaining capacity per link */
    int32_t *cnt;   /* unfrozen flows per link */
    bool *dirty;    /* rc or cnt changed since the link's key was set */
    size_t cap;
    pp_iheap h;
} mm_scratch;

/* Max-min rates for nf flows over nl links given as CSR both ways (see
 * maxmin.c); scratch s is reused from call to call. */
void pp__maxmin_core(int32_t nl, const double *cap, const int32_t *lf_off,
                     const int32_t *lf, int32_t nf, const int32_t *f_off,
                     const int32_t *fl, double *rate, mm_scratch *s);
void pp__mm_scratch_fini(mm_scratch *s);

#endif /* PODPLAN_FLOW_INT_H */
