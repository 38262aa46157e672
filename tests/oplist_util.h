/*
 * tests/oplist_util.h: one layer's kernel lists as the simulator builds
 * them (sim/train's pp__ops_layer_fwd / _bwd), for the tests that check
 * single ops in them (test_moe_bias.c, test_cp_ring.c): a zoo model
 * (loaded, then changed by the test if it likes) on a catalogue GPU
 * under a stack and a layout, and an op looked up by name.  Include
 * after models_util.h; the test needs sim/train on its include path.
 */
#ifndef PODPLAN_TESTS_OPLIST_UTIL_H
#define PODPLAN_TESTS_OPLIST_UTIL_H

#include <string.h>

#include "plan_util.h"
#include "podplan/hw.h"
#include "step_int.h"

typedef struct layer_lists {
    pp_model m; /* set by the caller before layer_lists_build */
    pp_parallel p;
    pp_gpu_profile g;
    pp__oplist fw, bw;
} layer_lists;

/* x->m's layer on `gpu` under `stack` and layout `spec`: its forward
 * and backward ops.  Free with layer_lists_done. */
static inline void layer_lists_build(layer_lists *x, const char *gpu,
                                     const char *stack, const char *spec) {
    x->p = layout(spec);
    x->g = load_gpu_profile(gpu, stack);
    pp_stack_resolve(&x->g, &x->p);
    pp__shape sh = {&x->m, &x->p, &x->g, 2};
    memset(&x->fw, 0, sizeof x->fw);
    memset(&x->bw, 0, sizeof x->bw);
    pp__ops_layer_fwd(&sh, &x->fw);
    pp__ops_layer_bwd(&sh, &x->bw);
}

static inline void layer_lists_done(layer_lists *x) {
    pp__oplist_fini(&x->fw);
    pp__oplist_fini(&x->bw);
}

/* The index of the op of l named exactly `name`, or -1. */
static inline long op_at(const pp__oplist *l, const char *name) {
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, name)) return (long)i;
    return -1;
}

#endif
