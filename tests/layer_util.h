/*
 * tests/layer_util.h: one layer's cost as the simulator prices it, for
 * the number-format and TP tests (test_fp8.c, test_fp4.c, test_tp_comm.c):
 * its setup (a catalogue GPU under a named stack, a zoo model, a layout),
 * its pp_layer_cost, and the kernels the host issues for it
 * (host.kernel_issue set to 1 ms, so host_s / 1 ms counts them) with its
 * forward and backward times.  Include after <cmocka.h> (and its prerequisites).
 */
#ifndef PODPLAN_TESTS_LAYER_UTIL_H
#define PODPLAN_TESTS_LAYER_UTIL_H

#include "podplan/sim.h"

/* A catalogue GPU's profile under a named stack, a zoo model and a
 * layout (`spec`, a SPEC; with `recipe` other than PP_FP8_AUTO its FP8
 * recipe set to it after parsing), resolved against the stack. */
typedef struct layer_setup {
    pp_gpu_profile g;
    pp_model m;
    pp_parallel p;
} layer_setup;

static inline layer_setup layer_setup_get(const char *gpu, const char *stack,
                                          const char *model, const char *spec,
                                          pp_fp8 recipe) {
    pp_error e = PP_ERROR_INIT;
    layer_setup x;
    pp_catalog *cat;
    if (pp_catalog_load(NULL, &cat, &e) || pp_model_load(model, &x.m, &e))
        fail_msg("%s", e.msg);
    const pp_gpu_spec *gs = pp_catalog_gpu(cat, gpu);
    if (!gs || pp_profile_load_stack(NULL, gs, stack, &x.g, NULL, &e))
        fail_msg("%s: %s", gpu, e.msg);
    pp_parallel_init(&x.p);
    if (pp_parallel_parse(spec, &x.p, &e)) fail_msg("%s: %s", spec, e.msg);
    if (recipe != PP_FP8_AUTO) x.p.fp8 = x.p.fp8_recipe = recipe;
    pp_catalog_free(cat);
    pp_stack_resolve(&x.g, &x.p);
    return x;
}

/* x's layer as the simulator prices it. */
static inline pp_layer_cost layer_cost_of(const layer_setup *x) {
    pp_error e = PP_ERROR_INIT;
    pp_layer_cost lc;
    if (pp_layer_cost_get(&x->g, &x->m, &x->p, &lc, &e)) fail_msg("%s", e.msg);
    return lc;
}

typedef struct layer_costs {
    double kernels, fwd_s, bwd_s;
} layer_costs;

static inline layer_costs layer_costs_get(const char *gpu, const char *stack,
                                          const char *model, const char *spec,
                                          pp_fp8 recipe) {
    layer_setup x = layer_setup_get(gpu, stack, model, spec, recipe);
    x.g.sw.host_kernel_s = 1e-3;
    pp_layer_cost lc = layer_cost_of(&x);
    layer_costs c = {lc.host_s / 1e-3, lc.fwd_s, lc.bwd_s};
    return c;
}

#endif
