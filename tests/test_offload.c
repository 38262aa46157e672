/*
 * tests/test_offload.c: activation offloading to host memory (offload=N,
 * Megatron-core's --cpu-offloading-num-layers): the SPEC key and its
 * refusals (Megatron-core's rules), the memory it moves to the host, the
 * time a step waits for the copies over PCIe (DGX H100) and over
 * NVLink-C2C (GB200), and plan --fix offload with its launch flags.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "podplan/planner.h"
#include "podplan/sim.h"
#include "podplan/train.h"

static pp_parallel spec(const char *s) {
    pp_error e = PP_ERROR_INIT;
    pp_parallel p;
    pp_parallel_init(&p);
    if (pp_parallel_parse(s, &p, &e)) fail_msg("%s: %s", s, e.msg);
    return p;
}

static pp_model model(const char *name) {
    pp_error e = PP_ERROR_INIT;
    pp_model m;
    if (pp_model_load(name, &m, &e)) fail_msg("%s: %s", name, e.msg);
    return m;
}

/* The key reads back; bad values and Megatron-core's exclusions are
 * refused with the rule named. */
static void test_spec(void **state) {
    (void)state;
    char buf[PP_SPEC_MAX];
    pp_parallel p = spec("tp=1,dp=8,mbs=1,gbs=8,recompute=none,offload=4");
    assert_int_equal(p.offload, 4);
    assert_non_null(
        strstr(pp_parallel_format(&p, buf, sizeof buf), ",offload=4"));
    p = spec("tp=1,dp=8");
    assert_null(strstr(pp_parallel_format(&p, buf, sizeof buf), "offload"));

    pp_error e = PP_ERROR_INIT;
    pp_parallel_init(&p);
    assert_int_equal(pp_parallel_parse("dp=8,offload=x", &p, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, "offload: expected a number of layers"));

    pp_model m = model("llama3-8b");
    struct {
        const char *spec, *want;
    } bad[] = {
        {"tp=1,pp=2,dp=4,gbs=8,offload=4", "offload: needs pp=1"},
        {"tp=1,dp=8,offload=32", "32 layers, but model llama3-8b has 32"},
        {"tp=1,dp=8,recompute=full,offload=4", "needs recompute=none"},
        {"tp=1,dp=8,recompute=selective,offload=4", "needs recompute=none"},
        {"tp=1,dp=8,graphs=attn,offload=4", "needs graphs=none"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = spec(bad[i].spec);
        e = (pp_error)PP_ERROR_INIT;
        assert_int_equal(pp_parallel_validate(&p, &m, &e), PP_EINPUT);
        if (!strstr(e.msg, bad[i].want))
            fail_msg("%s: got \"%s\"", bad[i].spec, e.msg);
    }
    pp_model g = model("resnet50");
    p = spec("dp=8,offload=1");
    e = (pp_error)PP_ERROR_INIT;
    assert_int_equal(pp_parallel_validate(&p, &g, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, "generic"));

    /* A recompute= left unset gives way to offloading, whatever the
     * stack's default (megatron-lm-2021: full). */
    pp_stack st;
    e = (pp_error)PP_ERROR_INIT;
    assert_int_equal(pp_stack_load("megatron-lm-2021", &st, &e), 0);
    p = spec("tp=1,dp=8,offload=4");
    pp_stack_resolve_spec(&st, &p);
    assert_int_equal(p.recompute, PP_RECOMPUTE_NONE);
    assert_int_equal(pp_parallel_validate(&p, &m, &e), 0);
    p = spec("tp=1,dp=8");
    pp_stack_resolve_spec(&st, &p);
    assert_int_equal(p.recompute, st.recompute_default);
}

/* N of L layers' activations leave the GPU: N/L of them, off the total. */
static void test_memory(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_model m = model("llama3-8b");
    pp_memory a, b;
    pp_parallel p = spec("tp=1,dp=8,mbs=2,gbs=16,recompute=none,zero=1");
    assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &a, &e), 0);
    p.offload = 12;
    assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &b, &e), 0);
    assert_true(a.offloaded == 0);
    assert_true(fabs(b.offloaded - a.activations * 12.0 / 32.0) <
                1e-9 * a.activations);
    assert_true(fabs(b.activations + b.offloaded - a.activations) <
                1e-9 * a.activations);
    assert_true(fabs(a.total - b.total - b.offloaded) < 1e-6 * a.total);
}

static json_t *sim(const char *cluster, const char *par) {
    cli_result r;
    cli_runf(&r,
             "simulate --model llama3-8b --cluster %s --stack nemo-2025 "
             "--parallel %s --placement tp,dp,pp --memory-check off "
             "--format json",
             cluster, par);
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    json_t *j = cli_json(&r);
    cli_result_free(&r);
    return j;
}

static double bd(json_t *j, const char *k) {
    return json_number_value(
        json_object_get(json_object_get(j, "breakdown"), k));
}

/* The wait a step adds: per offloaded layer and micro-batch, what each
 * copy (its activations, out after the forward, back before the
 * backward) takes beyond a layer's compute.  On a DGX H100 two GPUs share
 * their PCIe switch's x16 uplink to the CPU (63.0 GB/s): 31.5 GB/s each,
 * and the copies outlast the layers.  On a GB200, NVLink-C2C's 450 GB/s
 * hides them: no wait. */
static void test_step_wait(void **state) {
    (void)state;
    const char *base = "tp=1,pp=1,dp=8,mbs=1,gbs=16,zero=1,dtype=bf16";
    char with[256];
    snprintf(with, sizeof with, "%s,offload=16", base);
    struct {
        const char *cluster, *sets;
        double Bps;
    } c[2] = {
        {"dgx-h100-ndr", " --set node.count=1 --dp-overlap off", 63.0e9 / 2},
        {"gb200-nvl72",
         " --set node.count=1 --set node.gpus.count=8 --set "
         "node.nics.count=8 --set node.pcie.sockets=4 --dp-overlap off",
         450e9}};
    /* Without DP overlap the compute is the same kernels either way: what
     * overlapped collectives cost the compute they meet
     * (compute_beside_nccl) would move with the waits. */
    for (int i = 0; i < 2; i++) {
        char cl[256];
        snprintf(cl, sizeof cl, "%s%s", c[i].cluster, c[i].sets);
        json_t *a = sim(cl, base), *b = sim(cl, with);

        pp_error e = PP_ERROR_INIT;
        pp_cluster *cc = NULL;
        pp_model m = model("llama3-8b");
        assert_int_equal(pp_cluster_load(c[i].cluster, NULL, 0, NULL, &cc, &e),
                         0);
        pp_gpu_profile g;
        assert_int_equal(pp_profile_load_stack(NULL,
                                               pp_cluster_info_get(cc)->gpu,
                                               "nemo-2025", &g, NULL, &e),
                         0);
        pp_parallel p = spec(with);
        pp_stack_resolve(&g, &p);
        pp_layer_cost lc;
        pp_memory mem;
        assert_int_equal(pp_layer_cost_get(&g, &m, &p, &lc, &e), 0);
        assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &mem, &e),
                         0);
        double x = mem.activations_per_layer / c[i].Bps;
        double want =
            2.0 * 16.0 * (fmax(0, x - lc.fwd_s) + fmax(0, x - lc.bwd_s));
        double got = bd(b, "other_s") - bd(a, "other_s");
        print_message("%s: offload wait %.4f s, expected %.4f s\n",
                      c[i].cluster, got, want);
        if (want > 0)
            assert_true(fabs(got - want) < 0.02 * want);
        else
            assert_true(fabs(got) < 1e-9);
        assert_true(fabs(bd(b, "compute_s") - bd(a, "compute_s")) < 1e-9);
        /* The planner's estimate prices the same wait. */
        pp_plan_estimator *est = NULL;
        assert_int_equal(pp_plan_estimator_new(&m, cc, &g, &est, &e), 0);
        pp_parallel q = spec(base);
        pp_stack_resolve(&g, &q);
        double t0, t1;
        pp_breakdown b0, b1;
        assert_int_equal(pp_plan_estimate(est, &q, true, &t0, &b0, &e), 0);
        assert_int_equal(pp_plan_estimate(est, &p, true, &t1, &b1, &e), 0);
        double est_wait = b1.other_s - b0.other_s;
        print_message("%s: estimate %.4f s\n", c[i].cluster, est_wait);
        if (want > 0)
            assert_true(fabs(est_wait - want) < 0.02 * want);
        else
            assert_true(fabs(est_wait) < 1e-9);
        assert_true(fabs((t1 - t0) - est_wait) < 1e-9 * t1);
        pp_plan_estimator_free(est);
        json_decref(a);
        json_decref(b);
        pp_cluster_free(cc);
    }
}

/* The host must hold what its GPUs offload: a server with too little
 * host memory is refused, and says what it would need. */
static void test_host_memory(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "simulate --model llama3-8b --cluster dgx-h100-ndr --set "
                 "node.count=1 --set node.host_memory=100GB --stack nemo-2025 "
                 "--parallel tp=1,pp=1,dp=8,mbs=2,gbs=32,zero=1,offload=28");
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "offload=28 puts 511.6GB"));
    assert_non_null(strstr(r.err, "in host memory per server (8 GPUs), but a "
                                  "server of dgx-h100-ndr has 100GB"));
    cli_result_free(&r);
    cli_runf(&r, "simulate --model llama3-8b --cluster dgx-h100-ndr --set "
                 "node.count=1 --set node.host_memory=100GB --stack nemo-2025 "
                 "--parallel tp=1,pp=1,dp=8,mbs=2,gbs=32,zero=1,offload=28 "
                 "--memory-check off");
    assert_int_equal(r.status, 0);
    cli_result_free(&r);
}

/* plan --fix offload pins it on every candidate that Megatron-core
 * allows and the launch formats carry it; what cannot offload is
 * refused up front. */
static void test_plan(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "plan --model llama3-8b --cluster dgx-h100-ndr --gpus 8 "
                 "--global-batch 64 --stack megatron-core-2024 --fix "
                 "offload=8,tp=1 --top 0 --format megatron");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "--cpu-offloading \\"));
    assert_non_null(strstr(r.out, "--cpu-offloading-num-layers 8"));
    assert_non_null(strstr(r.out, "--pipeline-model-parallel-size 1"));
    assert_null(strstr(r.out, "--recompute-granularity"));
    cli_result_free(&r);
    cli_runf(&r, "plan --model llama3-8b --cluster dgx-h100-ndr --gpus 8 "
                 "--global-batch 64 --fix offload=8,pp=2 --top 0");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--fix offload=8: needs pp=1"));
    cli_result_free(&r);
    /* DeepSpeed's config has no such offload: no candidate for it. */
    cli_runf(&r, "plan --model llama3-8b --cluster dgx-h100-ndr --gpus 8 "
                 "--global-batch 64 --fix offload=8,tp=1 --top 0 --format "
                 "deepspeed");
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "target"));
    cli_result_free(&r);
    cli_runf(&r, "plan --model llama3-8b --cluster dgx-h100-ndr --gpus 8 "
                 "--global-batch 64 --exclude offload=8 --top 0");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "offload: not searched"));
    cli_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec),      cmocka_unit_test(test_memory),
        cmocka_unit_test(test_step_wait), cmocka_unit_test(test_host_memory),
        cmocka_unit_test(test_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
