/*
 * tests/layer_util.h: one layer's cost as the simulator prices it, for
 * the number-format tests (test_fp8.c, test_fp4.c): the kernels the host
 * issues for it (host.kernel_issue set to 1 ms, so host_s / 1 ms counts
 * them) and its forward and backward times, on a catalogue GPU under a
 * named stack.  Include after <cmocka.h> (and its prerequisites).
 */
#ifndef PODPLAN_TESTS_LAYER_UTIL_H
#define PODPLAN_TESTS_LAYER_UTIL_H

#include "podplan/sim.h"

typedef struct layer_costs {
    double kernels, fwd_s, bwd_s;
} layer_costs;

/* `spec` is a SPEC; with `recipe` other than PP_FP8_AUTO the FP8 recipe
 * is set to it after parsing. */
static inline layer_costs layer_costs_get(const char *gpu, const char *stack,
                                          const char *model, const char *spec,
                                          pp_fp8 recipe) {
    pp_error e = PP_ERROR_INIT;
    pp_model m;
    pp_gpu_profile g;
    pp_parallel p;
    pp_layer_cost lc;
    pp_catalog *cat;
    if (pp_catalog_load(NULL, &cat, &e) || pp_model_load(model, &m, &e))
        fail_msg("%s", e.msg);
    const pp_gpu_spec *gs = pp_catalog_gpu(cat, gpu);
    if (!gs || pp_profile_load_stack(NULL, gs, stack, &g, NULL, &e))
        fail_msg("%s: %s", gpu, e.msg);
    pp_parallel_init(&p);
    if (pp_parallel_parse(spec, &p, &e)) fail_msg("%s: %s", spec, e.msg);
    if (recipe != PP_FP8_AUTO) p.fp8 = p.fp8_recipe = recipe;
    g.sw.host_kernel_s = 1e-3;
    pp_stack_resolve(&g, &p);
    if (pp_layer_cost_get(&g, &m, &p, &lc, &e)) fail_msg("%s", e.msg);
    pp_catalog_free(cat);
    layer_costs c = {lc.host_s / 1e-3, lc.fwd_s, lc.bwd_s};
    return c;
}

#endif
