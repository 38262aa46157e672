/*
 * tests/flow_util.h: what the engine, max-min and flow-network tests
 * share: relative comparison, a deterministic PRNG, random instances and a
 * checked call of the reference solver (flow_util.c).
 */
#ifndef PODPLAN_TESTS_FLOW_UTIL_H
#define PODPLAN_TESTS_FLOW_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "podplan/sim.h"

#define REL 1e-9

bool close_rel(double got, double want, double rel);

#define assert_close(got, want, rel)                                           \
    do {                                                                       \
        double g_ = (got), w_ = (want);                                        \
        if (!close_rel(g_, w_, (rel))) {                                       \
            print_error("%s:%d: got %.17g, want %.17g\n", __FILE__, __LINE__,  \
                        g_, w_);                                               \
            fail();                                                            \
        }                                                                      \
    } while (0)

/* A small deterministic PRNG (splitmix64): the same instances everywhere. */
extern uint64_t rng_state;
uint64_t rnd(void);
int rnd_int(int lo, int hi); /* inclusive */
double rnd_unit(void);

/* pp_maxmin_solve, failing the test on an error. */
void solve(size_t nl, const double *cap, size_t nf, const int32_t *off,
           const int32_t *links, double *rates);

/* ---- random instances ------------------------------------------------- */

#define MAXL 64
#define MAXF 256

typedef struct inst {
    size_t nl, nf;
    double cap[MAXL];
    int32_t off[MAXF + 1];
    int32_t links[MAXF * 6];
} inst;

/* nl links in `groups` blocks and nf flows of 1-6 hops; most flows stay in
 * one block, so instances have several components. */
/* Every link of the next random_inst at this capacity when > 0: a
 * non-blocking fabric, where equal shares tie at every level. */
extern double g_uniform_cap;

void random_inst(inst *in, int groups, size_t nl, size_t nf);

#endif
