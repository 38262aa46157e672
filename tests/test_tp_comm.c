/*
 * tests/test_tp_comm.c: a layer's tensor-parallel collectives as the
 * stacks issue them (sim/train/compute.c): the column-parallel
 * backward's re-gather and reduce-scatter beside its own GEMMs
 * (tensor_parallel.async_backward), the gathers of Transformer Engine's
 * quantized inputs (FP8, MXFP8, NVFP4) and no userbuffers under NVFP4
 * (pp_tp_overlap_in_force).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>

#include "layer_util.h"
#include "podplan/sim.h"

/* Llama 3 8B on a catalogue GPU under a named stack (layer_util.h). */
static layer_setup setup_get(const char *gpu, const char *stack,
                             const char *spec) {
    return layer_setup_get(gpu, stack, "llama3-8b", spec, PP_FP8_AUTO);
}

#define SPEC "tp=4,pp=1,dp=2,mbs=1,gbs=4,sp=on"

/* The stacks that run Megatron-core's or Transformer Engine's linears
 * say async_backward; Megatron-LM 2021 does not. */
static void test_stacks(void **state) {
    (void)state;
    const char *on[] = {"megatron-core-2024", "nemo-2024", "nemo-2025",
                        "nemo-mlperf-2024"};
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++)
        assert_true(setup_get("h100-sxm5", on[i], SPEC).g.sw.tp_async_bwd);
    assert_false(setup_get("a100-sxm4-80gb", "megatron-lm-2021", SPEC)
                     .g.sw.tp_async_bwd);
}

/* Without userbuffers a layer's backward holds, with async_backward,
 * the two incoming gradients' gathers alone in the open and four
 * collectives under GEMMs (the two inputs' re-gathers under the dgrads,
 * the two input gradients' reduce-scatters under the wgrads); without
 * it, four in the open and none hidden.  The forward is the same.  The
 * backward's compute (GEMMs included) does not change. */
static void test_async_backward(void **state) {
    (void)state;
    layer_setup x = setup_get("h100-sxm5", "megatron-core-2024", SPEC);
    assert_false(x.g.sw.tp_overlap);
    pp_layer_cost a = layer_cost_of(&x);
    x.g.sw.tp_async_bwd = false;
    pp_layer_cost s = layer_cost_of(&x);
    assert_int_equal(s.fwd_colls, 4);
    assert_int_equal(s.bwd_colls, 4);
    assert_int_equal(s.tp_overlap_colls, 0);
    assert_int_equal(a.fwd_colls, 4);
    assert_int_equal(a.bwd_colls, 2);
    assert_int_equal(a.tp_overlap_colls, 4);
    assert_true(a.tp_overlap_bytes == a.coll_bytes);
    assert_true(a.tp_overlap_s > 0 && a.tp_overlap_s < a.bwd_s);
    assert_true(a.bwd_s > 0.999999 * s.bwd_s && a.bwd_s < 1.000001 * s.bwd_s);
    assert_true(a.fwd_s == s.fwd_s);
    /* Without sp the input gradient's all-reduce alone goes under the
     * wgrad GEMM: one of each linear pair's two backward all-reduces. */
    x = setup_get("h100-sxm5", "megatron-core-2024",
                  "tp=4,pp=1,dp=2,mbs=1,gbs=4");
    a = layer_cost_of(&x);
    assert_int_equal(a.bwd_colls, 0);
    assert_int_equal(a.tp_overlap_colls, 2);
}

/* An iteration on one DGX H100: with TP overlap off, the async backward
 * is faster than the serial one and no slower than nothing to hide. */
static void test_async_iteration(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = NULL;
    if (pp_cluster_load("dgx-h100-ndr", NULL, 0, NULL, &c, &e))
        fail_msg("%s", e.msg);
    layer_setup x = setup_get("h100-sxm5", "megatron-core-2024", SPEC);
    double t[2];
    for (int async = 0; async < 2; async++) {
        x.g.sw.tp_async_bwd = async == 1;
        pp_step_config cfg;
        pp_step_config_init(&cfg);
        cfg.model = &x.m;
        cfg.par = &x.p;
        cfg.cluster = c;
        cfg.profile = &x.g;
        cfg.check_memory = false;
        pp_step_result r;
        if (pp_step_simulate(&cfg, &r, &e)) fail_msg("%s", e.msg);
        t[async] = r.iteration_time_s;
        print_message("async_backward %s: %.4f s, tp comm %.4f s\n",
                      async ? "on " : "off", r.iteration_time_s,
                      r.total.tp_comm_s);
        pp_step_result_fini(&r);
    }
    assert_true(t[1] < 0.99 * t[0]);
    pp_cluster_free(c);
}

/* Transformer Engine gathers its quantized inputs: per element 1 byte
 * under per-tensor FP8, 1 + 1/32 under MXFP8, 0.5 + 1/16 under NVFP4;
 * the reduce-scatters stay 16-bit (coll_bytes).  The forward's two
 * gathers and the backward's two gradient gathers are the aux ones. */
static void test_quantized_gathers(void **state) {
    (void)state;
    const struct {
        const char *gpu, *spec;
        double per_elem;
    } want[] = {
        {"h100-sxm5", SPEC ",dtype=fp8,fp8=tensorwise", 1.0},
        {"b200", SPEC ",dtype=fp8,fp8=mxfp8", 1.0 + 1.0 / 32.0},
        {"b200", SPEC ",dtype=fp4", 0.5 + 1.0 / 16.0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        layer_setup x =
            setup_get(want[i].gpu, "megatron-core-2024", want[i].spec);
        pp_layer_cost c = layer_cost_of(&x);
        double act = c.coll_bytes;        /* 2 bytes an element */
        assert_int_equal(c.fwd_colls, 2); /* the reduce-scatters */
        assert_int_equal(c.bwd_colls, 0);
        assert_int_equal(c.aux_colls, 4);
        assert_true(c.aux_coll_bytes > 0.999999 * act * want[i].per_elem / 2 &&
                    c.aux_coll_bytes < 1.000001 * act * want[i].per_elem / 2);
        /* Under the GEMMs: two re-gathers (quantized) and two
         * reduce-scatters (16-bit). */
        double mean = act * (want[i].per_elem / 2 + 1) / 2;
        assert_int_equal(c.tp_overlap_colls, 4);
        assert_true(c.tp_overlap_bytes > 0.999999 * mean &&
                    c.tp_overlap_bytes < 1.000001 * mean);
    }
}

/* Userbuffers take 16-bit, FP8 and MXFP8 inputs, not NVFP4: nemo-2025's
 * TP overlap is in force under dtype=fp8 and not under dtype=fp4, nor
 * without sp. */
static void test_no_userbuffers_nvfp4(void **state) {
    (void)state;
    layer_setup x = setup_get("b200", "nemo-2025", SPEC ",dtype=fp8,fp8=mxfp8");
    assert_true(x.g.sw.tp_overlap);
    assert_true(pp_tp_overlap_in_force(&x.g, &x.p));
    pp_layer_cost f8 = layer_cost_of(&x);
    x = setup_get("b200", "nemo-2025", SPEC ",dtype=fp4");
    assert_false(pp_tp_overlap_in_force(&x.g, &x.p));
    pp_layer_cost f4 = layer_cost_of(&x);
    /* FP8: the forward's four collectives under their GEMMs, and the
     * backward's six; NVFP4: the async backward's four alone. */
    assert_int_equal(f8.tp_overlap_colls, 10);
    assert_int_equal(f4.tp_overlap_colls, 4);
    x = setup_get("b200", "nemo-2025", "tp=4,pp=1,dp=2,mbs=1,gbs=4");
    assert_false(pp_tp_overlap_in_force(&x.g, &x.p));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stacks),
        cmocka_unit_test(test_async_backward),
        cmocka_unit_test(test_async_iteration),
        cmocka_unit_test(test_quantized_gathers),
        cmocka_unit_test(test_no_userbuffers_nvfp4),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
