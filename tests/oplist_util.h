/*
 * tests/oplist_util.h: one layer's kernel lists as the simulator prices
 * them (pp_ops_get, sim/train/ops.c), for the tests that check single
 * ops in them (test_moe_bias.c, test_cp_ring.c): a zoo model (loaded,
 * then changed by the test if it likes) on a catalogue GPU under a stack
 * and a layout, its MoE layer (or its dense one for a dense model), and
 * an op looked up by name.  Include after models_util.h.
 */
#ifndef PODPLAN_TESTS_OPLIST_UTIL_H
#define PODPLAN_TESTS_OPLIST_UTIL_H

#include <string.h>

#include "plan_util.h"
#include "podplan/hw.h"
#include "podplan/train.h"

typedef struct layer_lists {
    pp_model m; /* set by the caller before layer_lists_build */
    pp_parallel p;
    pp_gpu_profile g;
    pp_op_table fw, bw;
} layer_lists;

/* x->m's layer on `gpu` under `stack` and layout `spec`: its forward
 * and backward ops.  Free with layer_lists_done. */
static inline void layer_lists_build(layer_lists *x, const char *gpu,
                                     const char *stack, const char *spec) {
    x->p = layout(spec);
    x->g = load_gpu_profile(gpu, stack);
    pp_stack_resolve(&x->g, &x->p);
    pp_ops_part part = pp_model_is_moe(&x->m) ? PP_OPS_MOE : PP_OPS_DENSE;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_ops_get(&x->g, &x->m, &x->p, part, false, &x->fw, &e),
                     0);
    assert_int_equal(pp_ops_get(&x->g, &x->m, &x->p, part, true, &x->bw, &e),
                     0);
}

static inline void layer_lists_done(layer_lists *x) {
    pp_op_table_fini(&x->fw);
    pp_op_table_fini(&x->bw);
}

/* The index of the op of l named exactly `name`, or -1. */
static inline long op_at(const pp_op_table *l, const char *name) {
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, name)) return (long)i;
    return -1;
}

#endif
