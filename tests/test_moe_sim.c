/*
 * tests/test_moe_sim.c: context and expert parallelism in the simulator,
 * the planner and the launch formats, run through the CLI; the H800
 * profile against the H100's (the same die); the scale acceptance plans
 * of issue 15 by the estimate (the simulated ones are README examples
 * and bench/bench_moe.c: too slow for a test).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli_run.h"
#include "podplan/planner.h"
#include "podplan/sim.h"

static json_t *run_json(const char *fmt, const char *arg) {
    cli_result r;
    cli_runf(&r, fmt, arg);
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    json_t *j = cli_json(&r);
    cli_result_free(&r);
    return j;
}

static double num(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    if (!v) fail_msg("no key %s", k);
    return json_number_value(v);
}

/* The H800 profile is the H100's file under another name: every figure
 * the simulator reads from it must agree. */
static void test_h800_profile(void **state) {
    (void)state;
    pp_gpu_profile a, b;
    pp_error e = PP_ERROR_INIT;
    pp_catalog *c = NULL;
    assert_int_equal(pp_catalog_load(NULL, &c, &e), 0);
    const pp_gpu_spec *h100 = pp_catalog_gpu(c, "h100-sxm5");
    const pp_gpu_spec *h800 = pp_catalog_gpu(c, "h800-sxm5");
    assert_non_null(h800);
    assert_int_equal(pp_profile_load(NULL, h100, &a, &e), 0);
    assert_int_equal(pp_profile_load(NULL, h800, &b, &e), 0);
    assert_string_equal(b.name, "h800");
    assert_true(a.peak_flops == b.peak_flops && a.hbm_Bps == b.hbm_Bps);
    pp_catalog_free(c);
    assert_true(a.gemm_efficiency == b.gemm_efficiency);
    assert_true(a.gemm_k_half == b.gemm_k_half);
    assert_int_equal(a.n_tiles, b.n_tiles);
    assert_true(a.mem_efficiency == b.mem_efficiency);
    assert_true(a.launch_s == b.launch_s);
    assert_true(a.framework_efficiency == b.framework_efficiency);
    assert_true(a.grad_accum_bytes == b.grad_accum_bytes);
}

/* The H200, B200 and GB200 profiles: H200 is H100's die, so its GEMM
 * figures are h100.yaml's but the FP8 rate, scaled by the MAMF table's
 * H200 / H100 ratio (73.4 / 70.9), and its memory efficiency was measured
 * on one lent H200 (0.857, within 0.02 of H100's), so it says it is
 * calibrated; the Blackwell GEMM rates are the table's, the rest H100's,
 * and both say they are uncalibrated (no provenance).  The best FP8 GEMM
 * must come out at about the table's rate (within 3%): B200 76.3% of
 * 4,500 TFLOP/s, GB200 72.3% of 5,000. */
static void test_h200_blackwell_profiles(void **state) {
    (void)state;
    pp_gpu_profile a, h, b, g;
    pp_error e = PP_ERROR_INIT;
    pp_catalog *c = NULL;
    assert_int_equal(pp_catalog_load(NULL, &c, &e), 0);
    assert_int_equal(pp_profile_load(NULL, pp_catalog_gpu(c, "h100-sxm5"),
                                     &a, &e), 0);
    assert_int_equal(pp_profile_load(NULL, pp_catalog_gpu(c, "h200-sxm"),
                                     &h, &e), 0);
    assert_int_equal(pp_profile_load(NULL, pp_catalog_gpu(c, "b200"), &b,
                                     &e), 0);
    assert_int_equal(pp_profile_load(NULL, pp_catalog_gpu(c, "gb200"), &g,
                                     &e), 0);
    pp_catalog_free(c);
    assert_string_equal(g.name, "gb200");
    assert_true(g.calibrated[0] == 0);
    assert_string_equal(h.name, "h200");
    assert_string_equal(b.name, "b200");
    assert_true(h.peak_flops == a.peak_flops && h.hbm_Bps > a.hbm_Bps);
    assert_true(h.gemm_efficiency == a.gemm_efficiency);
    assert_true(fabs(h.mem_efficiency - a.mem_efficiency) < 0.02 &&
                h.mem_efficiency != a.mem_efficiency);
    double ratio = h.fp8_gemm_efficiency / a.fp8_gemm_efficiency;
    assert_true(fabs(ratio - 73.4 / 70.9) < 0.002);
    assert_true(h.calibrated[0] != 0 && b.calibrated[0] == 0);
    double m = 16384, n = 16384, k = 16384;
    /* The burst rates the table measured; a training step runs them at
     * the profiles' sustained share (b200.yaml), divided out here.
     * Within 4%: the asymptote is H100's scaled by the table's ratio, and
     * the fp8_k_half and waves fitted on OpenXLA's sm_100 table (stop 58)
     * leave a 16k FP8 GEMM 3.1% under the table's best. */
    double t = pp_gemm_time_prec_s(&b, true, 1, m, n, k);
    double rate = 2 * m * n * k / t / pp_profile_sustained(&b);
    assert_true(fabs(rate / (0.763 * 4500e12) - 1) < 0.04);
    rate = 2 * m * n * k / pp_gemm_time_prec_s(&g, true, 1, m, n, k) /
           pp_profile_sustained(&g);
    assert_true(fabs(rate / (0.723 * 5000e12) - 1) < 0.04);
    assert_true(b.sustained == 0.93 && g.sustained == 0.93);
}

/* Blackwell Ultra: the B300 profile's best FP8 GEMM at the MAMF table's
 * B300 rate (74.5% of 4,500 TFLOP/s), GB300's at B300's times GB200's
 * over B200's (70.6% of 5,000; gb300.yaml), within 4% (B200's fitted
 * fp8_k_half and waves, their estimate, take 3.3-3.4%); both GPUs have
 * MXFP8, whose GEMMs run at 0.88 of the per-tensor rate (b200.yaml's
 * fitted ratio). */
static void test_blackwell_ultra_profiles(void **state) {
    (void)state;
    pp_gpu_profile b, g;
    pp_error e = PP_ERROR_INIT;
    pp_catalog *c = NULL;
    assert_int_equal(pp_catalog_load(NULL, &c, &e), 0);
    assert_int_equal(pp_profile_load(NULL, pp_catalog_gpu(c, "b300"), &b, &e),
                     0);
    assert_int_equal(pp_profile_load(NULL, pp_catalog_gpu(c, "gb300"), &g, &e),
                     0);
    pp_catalog_free(c);
    assert_string_equal(b.name, "b300");
    assert_string_equal(g.name, "gb300");
    assert_true(b.mxfp8 && g.mxfp8 && b.calibrated[0] == 0);
    double m = 16384, n = 16384, k = 16384;
    /* Burst rates, as above: B300 carries B200's sustained share, GB300
     * none (gb300.yaml says why). */
    double rate = 2 * m * n * k / pp_gemm_time_prec_s(&b, true, 1, m, n, k) /
                  pp_profile_sustained(&b);
    assert_true(fabs(rate / (0.745 * 4500e12) - 1) < 0.04);
    rate = 2 * m * n * k / pp_gemm_time_prec_s(&g, true, 1, m, n, k);
    assert_true(fabs(rate / (0.706 * 5000e12) - 1) < 0.04);
    assert_true(b.sustained == 0.93 && pp_profile_sustained(&g) == 1);
    double r = pp_gemm_time_prec_s(&g, true, 1, m, n, k) /
               pp_gemm_time_mxfp8_s(&g, 1, m, n, k);
    assert_true(fabs(r - 0.88) < 0.01);
}

/* The expert GEMMs of the MoE validation models, measured with `exec
 * gemm --backend cuda` on one lent H200 (calibrate/examples/h200/,
 * 2026-11-26: Qwen3-30B-A3B's and Qwen3-235B-A22B's fc1, fc2, dgrad and
 * wgrad, one expert and 8 as a batch; DeepSeek-V3's and Mixtral's fc1 and
 * fc2; 512 to 8192 tokens), against the H200 profile's GEMM model, which
 * was not fitted to them (h200.yaml keeps H100's figures).  Tolerance:
 * mean |error| at most 10% in each precision over the GEMMs slower than
 * 25 us (shorter ones sit at a launch floor of 8-10 us that a queued
 * training step hides); measured 6.8% bf16 (60 GEMMs), 4.6% fp8 (57).
 * That the model holds here is what rules the GEMMs out as the cause of
 * the fine-grained MoE runs' errors (tests/validation/README.md). */
static void test_h200_expert_gemms(void **state) {
    (void)state;
    static const char *const sets[] = {
        "q30-fc1-b1",  "q30-fc1-b8",  "q30-fc2-b1",    "q30-fc2-b8",
        "q30-fc1dg-b1", "q30-fc1dg-b8", "q30-fc1wg-b1", "q30-fc1wg-b8",
        "q30-fc2wg-b1", "q30-fc2wg-b8", "q235-fc1-b1",  "q235-fc1-b8",
        "q235-fc2-b1", "q235-fc2-b8", "ds-fc1",        "ds-fc2",
        "mix-fc1"};
    pp_error e = PP_ERROR_INIT;
    pp_catalog *c = NULL;
    pp_gpu_profile h;
    assert_int_equal(pp_catalog_load(NULL, &c, &e), 0);
    assert_int_equal(
        pp_profile_load(NULL, pp_catalog_gpu(c, "h200-sxm"), &h, &e), 0);
    pp_catalog_free(c);
    for (int fp8 = 0; fp8 < 2; fp8++) {
        double sum = 0;
        int n = 0;
        for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
            char path[512];
            snprintf(path, sizeof path,
                     PODPLAN_SOURCE_DIR
                     "/calibrate/examples/h200/gemm-%s-%s.json",
                     sets[i], fp8 ? "fp8" : "bf16");
            json_error_t je;
            json_t *j = json_load_file(path, 0, &je);
            if (!j) fail_msg("%s: %s", path, je.text);
            size_t k;
            json_t *r;
            json_array_foreach(json_object_get(j, "results"), k, r) {
                double t =
                    json_number_value(json_object_get(r, "time_median_s"));
                if (t <= 25e-6) continue;
                double p = pp_gemm_time_prec_s(
                    &h, fp8, json_number_value(json_object_get(r, "batch")),
                    json_number_value(json_object_get(r, "m")),
                    json_number_value(json_object_get(r, "n")),
                    json_number_value(json_object_get(r, "k")));
                sum += fabs(p / t - 1);
                n++;
            }
            json_decref(j);
        }
        printf("H200 expert GEMMs, %s: %d over 25 us, mean |error| %.1f%%\n",
               fp8 ? "fp8" : "bf16", n, 100 * sum / n);
        assert_true(n >= 50);
        assert_true(sum / n <= 0.10);
    }
}

/* permute=unfused: Megatron-core's unfused permutation adds each token's
 * k routed rows back atomically twice per layer (the unpermute's
 * scatter_add_ forward, the permute's index_select backward), which the
 * profiles time at memory.scatter_add_bw.  Against what was measured:
 * tools/moe_layer_torch.py's index_add kernels (the same atomics) on a
 * lent H100 and H200, five MoE shapes each (calibrate/examples/h100,
 * h200/moe-torch.json), every one within 12% (each GPU's rate is the
 * mean of its five; the top-2 Mixtral shape reads 9-10% fast); and a
 * step slower unfused than fused by about their time. */
static void test_unfused_permute(void **state) {
    (void)state;
    static const char *const gpu[][2] = {{"h100", "h100-sxm5"},
                                         {"h200", "h200-sxm"}};
    pp_error e = PP_ERROR_INIT;
    pp_catalog *c = NULL;
    assert_int_equal(pp_catalog_load(NULL, &c, &e), 0);
    int n = 0;
    for (size_t g = 0; g < 2; g++) {
        pp_gpu_profile h;
        assert_int_equal(
            pp_profile_load(NULL, pp_catalog_gpu(c, gpu[g][1]), &h, &e), 0);
        h.framework_efficiency = 1; /* the kernel alone, as measured */
        char path[512];
        snprintf(path, sizeof path,
                 PODPLAN_SOURCE_DIR "/calibrate/examples/%s/moe-torch.json",
                 gpu[g][0]);
        json_error_t je;
        json_t *j = json_load_file(path, 0, &je);
        if (!j) fail_msg("%s: %s", path, je.text);
        size_t i, k;
        json_t *r, *kt;
        json_array_foreach(json_object_get(j, "results"), i, r) {
            double rows = 2.0 * num(r, "T") * num(r, "k") * num(r, "h");
            double t = 0;
            json_array_foreach(json_object_get(r, "top_kernels_ms"), k, kt) {
                const char *name = json_string_value(json_array_get(kt, 0));
                if (strstr(name, "indexFuncLargeIndex"))
                    t += json_number_value(json_array_get(kt, 1)) * 1e-3;
            }
            double p = 2 * pp_scatter_add_time_s(&h, rows);
            printf("  %s %-26s index_add %.2f ms, model %.2f ms (%+.1f%%)\n",
                   gpu[g][0],
                   json_string_value(json_object_get(r, "config")), t * 1e3,
                   p * 1e3, 100 * (p / t - 1));
            assert_true(t > 0 && fabs(p / t - 1) <= 0.12);
            n++;
        }
        json_decref(j);
        /* Without the figure (a hand-built profile): HBM's rate. */
        pp_gpu_profile z = h;
        z.scatter_add_Bps = 0;
        assert_true(pp_scatter_add_time_s(&z, 1e9) ==
                    1e9 / (h.hbm_Bps * h.mem_efficiency) + h.launch_s);
    }
    pp_catalog_free(c);
    assert_int_equal(n, 10);

    const char *cmd = "simulate --model qwen3-30b-a3b --cluster dgx-h100-ndr "
                      "--parallel tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8,zero=1%s "
                      "--placement tp,dp,pp --memory-check off --format json";
    json_t *f = run_json(cmd, "");
    json_t *u = run_json(cmd, ",permute=unfused");
    assert_string_equal(json_string_value(json_object_get(u, "parallel")) +
                            strlen(json_string_value(
                                json_object_get(f, "parallel"))),
                        ",permute=unfused");
    /* 48 layers x 2 scatter-adds of 4096 x 8 rows of 2048 at 120 GB/s:
     * 107 ms; fused, those passes cost a tenth of that. */
    double d = num(json_object_get(u, "breakdown"), "compute_s") -
               num(json_object_get(f, "breakdown"), "compute_s");
    assert_true(d > 0.08 && d < 0.12);
    json_decref(f);
    json_decref(u);
}

/* dtype=fp8 runs the experts' grouped GEMMs at the FP8 rate too (as the
 * dense MLP's): with 8 experts of 14336 making up most of Mixtral's
 * FLOPs, FP8 must take compute well below BF16's, at least 20% (the FP8
 * curve gives 1.4-1.7x on these shapes), and never above it. */
static void test_moe_fp8(void **state) {
    (void)state;
    const char *cmd = "simulate --model mixtral-8x7b --cluster dgx-h100-ndr "
                      "--parallel tp=1,pp=2,dp=32,ep=8,mbs=1,gbs=64,zero=1,"
                      "dtype=%s --placement tp,dp,pp --format json";
    json_t *b = run_json(cmd, "bf16");
    json_t *f = run_json(cmd, "fp8");
    double cb = num(json_object_get(b, "breakdown"), "compute_s"),
           cf = num(json_object_get(f, "breakdown"), "compute_s");
    assert_true(cf < 0.8 * cb);
    json_decref(b);
    json_decref(f);
}

/* EP: the all-to-alls take time on the network (and none without ep);
 * the experts split over ep take memory off each GPU. */
static void test_simulate_ep(void **state) {
    (void)state;
    const char *cmd = "simulate --model mixtral-8x7b --cluster dgx-h100-ndr "
                      "--parallel tp=1,pp=2,dp=32,ep=8,mbs=1,gbs=64,zero=1 "
                      "--placement %s --format json";
    /* Replicas next to each other: an EP group is one server (NVLink);
     * stages between them: it spans two, through the NICs. */
    json_t *a = run_json(cmd, "tp,dp,pp");
    json_t *b = run_json(cmd, "tp,pp,dp");
    json_t *ba = json_object_get(a, "breakdown");
    double ep_in = num(ba, "ep_comm_s");
    assert_true(ep_in > 0);
    assert_int_equal((int)num(a, "gpus"), 64);
    assert_true(num(json_object_get(b, "breakdown"), "ep_comm_s") > ep_in);
    json_t *c = run_json("simulate --model mixtral-8x7b --cluster "
                         "dgx-h100-ndr --parallel %s --format json",
                         "tp=1,pp=2,dp=32,ep=4,mbs=1,gbs=64,zero=1");
    assert_true(num(a, "memory_per_gpu_bytes") <
                num(c, "memory_per_gpu_bytes"));
    json_decref(c);
    /* The parts still add up to the iteration. */
    cli_assert_parts(a);
    json_decref(a);
    json_decref(b);
    /* A dense layout's breakdown keeps its keys. */
    json_t *d = run_json("simulate --model llama3-8b --cluster dgx-h100-ndr "
                         "--parallel %s --format json",
                         "tp=1,dp=64,mbs=1,gbs=64,zero=1");
    assert_null(json_object_get(json_object_get(d, "breakdown"), "ep_comm_s"));
    json_decref(d);
}

/* dispatcher=deepep: an EP group inside one server runs the same
 * all-to-all as the default dispatcher (bit for bit); spread over two
 * servers, a token crosses the network once per other server it needs
 * (Mixtral's top 2 of 8 over 2 servers: 0.79 copies instead of 1), so
 * the exposed all-to-all time falls, and the SPEC says so.  Without DP
 * overlap: the experts' overlapped parameter all-gather crosses the same
 * NICs during the first forwards, and max-min fairness gives DeepEP's
 * one flow per NIC a smaller share of them than the default
 * dispatcher's several, which is not what this test is about. */
static void test_simulate_deepep(void **state) {
    (void)state;
    const char *cmd = "simulate --model mixtral-8x7b --cluster dgx-h100-ndr "
                      "--parallel %s --format json";
    const char *in[2] = {"tp=1,pp=2,dp=32,ep=8,mbs=1,gbs=64,zero=1 "
                         "--placement tp,dp,pp",
                         "tp=1,pp=2,dp=32,ep=8,mbs=1,gbs=64,zero=1,"
                         "dispatcher=deepep --placement tp,dp,pp"};
    json_t *a = run_json(cmd, in[0]), *b = run_json(cmd, in[1]);
    assert_true(num(a, "iteration_time_s") == num(b, "iteration_time_s"));
    json_decref(a);
    json_decref(b);
    const char *across[2] = {"tp=1,pp=2,dp=32,ep=8,mbs=1,gbs=64,zero=1 "
                             "--placement tp,pp,dp --dp-overlap off",
                             "tp=1,pp=2,dp=32,ep=8,mbs=1,gbs=64,zero=1,"
                             "dispatcher=deepep --placement tp,pp,dp "
                             "--dp-overlap off"};
    a = run_json(cmd, across[0]);
    b = run_json(cmd, across[1]);
    double ea = num(json_object_get(a, "breakdown"), "ep_comm_s"),
           eb = num(json_object_get(b, "breakdown"), "ep_comm_s");
    assert_true(eb < 0.95 * ea);
    assert_non_null(strstr(json_string_value(json_object_get(b, "parallel")),
                           "dispatcher=deepep"));
    json_decref(a);
    json_decref(b);
}

/* A plan estimator for model `name` on dgx-h100-ndr (freed by the
 * caller with the cluster). */
static pp_plan_estimator *h100_estimator(const char *name, pp_model *m,
                                         pp_cluster **c) {
    pp_error e = PP_ERROR_INIT;
    *c = NULL;
    assert_int_equal(pp_cluster_load("dgx-h100-ndr", NULL, 0, NULL, c, &e), 0);
    assert_int_equal(pp_model_load(name, m, &e), 0);
    pp_plan_estimator *x = NULL;
    assert_int_equal(pp_plan_estimator_new(m, *c, NULL, &x, &e), 0);
    return x;
}

/* The planner's estimate prices DeepEP's bytes too: the same layout with
 * EP groups over two servers, cheaper all-to-alls (the network part is
 * the slower one and shrinks to 0.79 of the all-to-all's); inside one
 * server (the other rank order) the two dispatchers cost the same. */
static void test_estimate_deepep(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c;
    pp_model m;
    pp_plan_estimator *x = h100_estimator("mixtral-8x7b", &m, &c);
    pp_parallel p;
    pp_parallel_init(&p);
    assert_int_equal(
        pp_parallel_parse("tp=1,pp=2,dp=32,ep=8,mbs=1,gbs=64,zero=1", &p, &e),
        0);
    double t[2][2];
    pp_breakdown b[2][2];
    const char *order[2] = {"tpd", "tdp"};
    for (int o = 0; o < 2; o++) {
        assert_int_equal(pp_plan_estimator_placement(x, order[o], &e), 0);
        for (int d = 0; d < 2; d++) {
            p.deepep = d;
            assert_int_equal(
                pp_plan_estimate(x, &p, true, &t[o][d], &b[o][d], &e), 0);
        }
    }
    assert_true(b[0][1].ep_comm_s < 0.9 * b[0][0].ep_comm_s);
    assert_true(b[1][1].ep_comm_s == b[1][0].ep_comm_s);
    pp_plan_estimator_free(x);
    pp_cluster_free(c);
}

/* An MoE model's routed experts are reduced over their expert data-
 * parallel group, not the whole DP group.  Qwen3-30B-A3B on two DGX H100
 * with dp 16: at ep 16 each GPU holds its own experts (edp 1: nothing to
 * reduce); at ep 8 each slice of experts sits on two GPUs, one per
 * server, so its gradients go over the network between just those two.
 * With DP overlap off the difference in exposed DP time is that pair's
 * ZeRO-1 reduce-scatter (fp32, megatron-core-2024's reduce_dtype) and
 * all-gather (bf16) of 48 x 16 x 3 x 2048 x 768 parameters at one NDR
 * port (50 GB/s): (4 + 2) P / 2 / 50e9 = 0.217 s.  The optimizer's
 * shard is the same (P / 2 either way).  The planner's estimate prices
 * the same difference. */
static void test_expert_dp_group(void **state) {
    (void)state;
    const char *cmd = "simulate --model qwen3-30b-a3b --cluster dgx-h100-ndr "
                      "--set node.count=2 --parallel "
                      "tp=1,pp=1,dp=16,ep=%s,mbs=1,gbs=16,zero=1 "
                      "--placement tp,dp,pp --dp-overlap off --format json";
    json_t *a = run_json(cmd, "16"), *b = run_json(cmd, "8");
    json_t *ba = json_object_get(a, "breakdown"),
           *bb = json_object_get(b, "breakdown");
    double P = 48.0 * 16 * 3 * 2048 * 768, want = 6.0 * P / 2 / 50e9;
    double got = num(bb, "dp_comm_exposed_s") - num(ba, "dp_comm_exposed_s");
    print_message("expert DP pair: %.4f s exposed more, %.4f s expected\n", got,
                  want);
    assert_true(fabs(got - want) < 0.1 * want);
    assert_true(fabs(num(bb, "other_s") - num(ba, "other_s")) <
                1e-9 * num(ba, "other_s"));
    json_decref(a);
    json_decref(b);

    pp_error e = PP_ERROR_INIT;
    pp_cluster *c;
    pp_model m;
    pp_plan_estimator *x = h100_estimator("qwen3-30b-a3b", &m, &c);
    assert_int_equal(pp_plan_estimator_placement(x, "tdp", &e), 0);
    double t[2];
    pp_breakdown eb[2];
    const char *in[2] = {"tp=1,pp=1,dp=16,ep=16,mbs=1,gbs=16,zero=1",
                         "tp=1,pp=1,dp=16,ep=8,mbs=1,gbs=16,zero=1"};
    for (int i = 0; i < 2; i++) {
        pp_parallel p;
        pp_parallel_init(&p);
        assert_int_equal(pp_parallel_parse(in[i], &p, &e), 0);
        assert_int_equal(pp_plan_estimate(x, &p, false, &t[i], &eb[i], &e), 0);
    }
    got = eb[1].dp_comm_exposed_s - eb[0].dp_comm_exposed_s;
    print_message("estimate: %.4f s exposed more\n", got);
    assert_true(fabs(got - want) < 0.1 * want);
    pp_plan_estimator_free(x);
    pp_cluster_free(c);
}

/* CP 2 on the same GPUs: each rank holds half the sequence, so a
 * micro-batch's compute per GPU about halves (the attention's s^2 part
 * exactly), the GPU count doubles, and the K/V ring moves bytes. */
static void test_simulate_cp(void **state) {
    (void)state;
    const char *cmd = "simulate --model llama3-8b --cluster dgx-h100-ndr "
                      "--parallel %s --format json";
    json_t *a = run_json(cmd, "tp=2,sp=on,dp=2,mbs=1,gbs=4,zero=1,"
                              "recompute=full");
    json_t *b = run_json(cmd, "tp=2,sp=on,dp=2,cp=2,mbs=1,gbs=4,zero=1,"
                              "recompute=full");
    assert_int_equal((int)num(b, "gpus"), 8);
    double ca = num(json_object_get(a, "breakdown"), "compute_s");
    double cb = num(json_object_get(b, "breakdown"), "compute_s");
    assert_true(cb < 0.6 * ca && cb > 0.45 * ca);
    assert_true(num(json_object_get(b, "breakdown"), "cp_comm_s") >= 0);
    assert_true(num(b, "iteration_time_s") < 0.7 * num(a, "iteration_time_s"));
    json_decref(a);
    json_decref(b);
}

/* The launch formats carry the new degrees. */
static void test_launch_flags(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "plan --model mixtral-8x7b --cluster dgx-h100-ndr --gpus 64 "
                 "--global-batch 64 --top 0 --fix ep=8,cp=1 --format megatron");
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "--num-experts 8"));
    assert_non_null(strstr(r.out, "--moe-router-topk 2"));
    assert_non_null(strstr(r.out, "--expert-model-parallel-size 8"));
    assert_non_null(strstr(r.out, "--moe-token-dispatcher-type alltoall"));
    assert_non_null(strstr(r.out, "--moe-permute-fusion"));
    cli_result_free(&r);
    /* Pinned, the unfused permutation and DeepEP's dispatch reach the
     * layout (so that it reads back the same) and the launch line. */
    cli_runf(&r, "plan --model mixtral-8x7b --cluster dgx-h100-ndr --gpus 64 "
                 "--global-batch 64 --top 0 --fix ep=8,cp=1,permute=unfused,"
                 "dispatcher=deepep --format megatron");
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    assert_null(strstr(r.out, "--moe-permute-fusion"));
    assert_non_null(strstr(r.out, "--moe-enable-deepep"));
    assert_non_null(strstr(r.out, "dispatcher=deepep,permute=unfused"));
    cli_result_free(&r);
    cli_runf(&r, "plan --model llama3-8b --cluster dgx-h100-ndr --gpus 16 "
                 "--global-batch 64 --top 0 --fix cp=2 --format megatron");
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "--context-parallel-size 2"));
    cli_result_free(&r);
    cli_runf(&r, "plan --model deepseek-v3 --cluster dgx-h800-2048 --gpus 2048 "
                 "--global-batch 4096 --top 0 --fix ep=64,pp=1 --format nemo2");
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "expert_model_parallel_size=64"));
    cli_result_free(&r);
    /* DeepSeek-V3's group-limited routing goes to the launcher too. */
    cli_runf(&r, "plan --model deepseek-v3 --cluster dgx-h800-2048 --gpus 2048 "
                 "--global-batch 4096 --top 0 --fix ep=64,pp=1 --format "
                 "megatron");
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "--moe-router-num-groups 8"));
    assert_non_null(strstr(r.out, "--moe-router-group-topk 4"));
    cli_result_free(&r);
}

/* Issue 15's scale points, by the estimate: a 405B dense model at seq
 * 8192 on 16,384 H100s, DeepSeek-V3 on 2,048 H800s, each with a plan that
 * fits. */
static void test_scale_plans(void **state) {
    (void)state;
    json_t *a = run_json("plan --model %s --cluster fat-tree-16k --gpus 16384 "
                         "--global-batch 2048 --top 0 --format json",
                         "llama3-405b");
    json_t *c = json_array_get(json_object_get(a, "candidates"), 0);
    assert_non_null(c);
    assert_true(num(c, "memory_per_gpu_bytes") < 80e9);
    json_decref(a);
    json_t *d = run_json("plan --model %s --cluster dgx-h800-2048 --gpus 2048 "
                         "--global-batch 15360 --top 0 --format json",
                         "deepseek-v3");
    c = json_array_get(json_object_get(d, "candidates"), 0);
    assert_non_null(c);
    assert_non_null(
        strstr(json_string_value(json_object_get(c, "parallel")), "ep="));
    json_decref(d);
}

/* The planner's count of the transfers an iteration's all-to-alls start
 * (what --a2a-budget holds layouts to) is the simulator's: one more
 * micro-batch adds exactly that many flows (nothing else here grows with
 * the micro-batches: tp 1, pp 1, ZeRO-1's one sync), for the plain
 * dispatcher (Qwen3-30B-A3B at EP 16 over two DGX H100: 48 layers x 4
 * all-to-alls x 16 x 15) and for DeepEP's two parts.  And the budget: a
 * layout above it is not simulated (it keeps its estimate) and its place
 * goes to the next; 0 lifts it. */
static double plan_a2a(const char *fix, int gbs, json_t **cand) {
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "plan --model qwen3-30b-a3b --cluster dgx-h100-ndr --set "
             "node.count=2 --gpus 16 --global-batch %d --fix %%s "
             "--placement tp,pp,dp --top 0 --format json",
             gbs);
    json_t *j = run_json(cmd, fix);
    json_t *c = json_array_get(json_object_get(j, "candidates"), 0);
    assert_non_null(c);
    double t = num(c, "a2a_transfers");
    if (cand) *cand = json_incref(c);
    json_decref(j);
    return t;
}

static double sim_flows(const char *spec, int gbs) {
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "simulate --model qwen3-30b-a3b --cluster dgx-h100-ndr --set "
             "node.count=2 --parallel %%s,gbs=%d --placement tp,pp,dp "
             "--format json",
             gbs);
    json_t *j = run_json(cmd, spec);
    double f = num(json_object_get(j, "simulator"), "flows");
    json_decref(j);
    return f;
}

static void test_a2a_budget(void **state) {
    (void)state;
    const char *spec[2] = {
        "tp=1,pp=1,dp=16,ep=16,mbs=1,zero=1,recompute=none",
        "tp=1,pp=1,dp=16,ep=16,mbs=1,zero=1,recompute=none,dispatcher=deepep"};
    /* Pairs per all-to-all: 16 x 15; DeepEP over 2 servers of 8:
     * 16 x (2 - 1) + 16 x (8 - 1). */
    const double pairs[2] = {240, 128};
    for (int d = 0; d < 2; d++) {
        json_t *c1, *c2;
        double a1 = plan_a2a(spec[d], 16, &c1), a2 = plan_a2a(spec[d], 32, &c2);
        char s1[256], s2[256];
        snprintf(s1, sizeof s1, "%s",
                 json_string_value(json_object_get(c1, "parallel")));
        snprintf(s2, sizeof s2, "%s",
                 json_string_value(json_object_get(c2, "parallel")));
        json_decref(c1);
        json_decref(c2);
        assert_true(a1 == 48 * 4 * pairs[d]); /* one micro-batch */
        assert_true(a2 == 2 * a1);
        double f1 = sim_flows(spec[d], 16), f2 = sim_flows(spec[d], 32);
        assert_true(f2 - f1 == a2 - a1);
        assert_true(a1 <= f1);
    }
    /* Under a budget between the EP 16 and EP 8 layouts' counts (46,080
     * and 21,504 a micro-batch) the EP 16 ones are passed over (the best
     * 4 by the estimate hold some) and the 4 go to others. */
    const char *cmd = "plan --model qwen3-30b-a3b --cluster dgx-h100-ndr "
                      "--set node.count=2 --gpus 16 --global-batch 16 --fix "
                      "tp=1,pp=1,mbs=1,zero=1,recompute=none --placement "
                      "tp,pp,dp --top 4 --no-timing --format json%s";
    json_t *all = run_json(cmd, " --a2a-budget 0");
    json_t *cut = run_json(cmd, " --a2a-budget 3e4");
    assert_true(json_is_null(json_object_get(all, "a2a_budget")));
    assert_true(num(cut, "a2a_budget") == 3e4);
    assert_true(num(json_object_get(all, "search"), "over_budget") == 0);
    assert_true(num(json_object_get(cut, "search"), "over_budget") >= 1);
    assert_true(num(json_object_get(cut, "search"), "simulated") == 4);
    size_t i;
    json_t *c;
    int sim_ep16 = 0, passed = 0;
    json_array_foreach(json_object_get(all, "candidates"), i, c) {
        sim_ep16 += json_is_true(json_object_get(c, "simulated")) &&
                    num(c, "a2a_transfers") > 3e4;
    }
    json_array_foreach(json_object_get(cut, "candidates"), i, c) {
        bool simulated = json_is_true(json_object_get(c, "simulated"));
        if (simulated) assert_true(num(c, "a2a_transfers") <= 3e4);
        passed += !simulated && num(c, "a2a_transfers") > 3e4;
    }
    assert_true(sim_ep16 >= 1); /* without the budget one was simulated */
    assert_true(passed >= 1);
    json_decref(all);
    json_decref(cut);
    cli_expect(2, "--a2a-budget",
               "plan --model qwen3-30b-a3b --cluster "
               "dgx-h100-ndr --a2a-budget -1");
    /* simulate says first when a layout is over the budget: DeepSeek-V3
     * at EP 256 on 2,048 H800 starts 8 x 65,280 x 4 x 59 = 1.2e8 in one
     * micro-batch (then fails for memory, quickly). */
    cli_expect(1, "all-to-alls start 1.2e+08 transfers",
               "simulate --model deepseek-v3 --cluster dgx-h800-2048 "
               "--parallel tp=1,pp=1,dp=2048,ep=256,mbs=1,gbs=2048,zero=1");
}

/* With DP overlap the gradient buckets flow while the backward runs, its
 * waits for the MoE all-to-alls included (the simulator's stage is busy
 * there): the estimator counts them in the window, so its exposed DP time
 * follows the simulator's.  Qwen3-30B-A3B on 128 H100 at EP 8 (NVLink
 * all-to-alls, 0.4 s of the 2.2 s step): ZeRO-1, 2 and 3 estimate 0.165,
 * 0.227 and 0.298 s against 0.154, 0.185 and 0.250 simulated (0.177,
 * 0.274 and 0.345 against 0.171, 0.252 and 0.317 before the compute
 * beside the collectives was slowed, profile compute_beside_nccl: the
 * estimator stretches only the backward by it, where with ZeRO >= 2 the
 * simulator's per-micro-batch reductions also meet the next forward);
 * without the all-to-alls in the window 0.227, 0.475 and 0.546 then. */
static void test_estimate_dp_overlap_moe(void **state) {
    (void)state;
    for (int z = 1; z <= 3; z++) {
        char fix[64];
        snprintf(fix, sizeof fix, "%d", z);
        json_t *j = run_json(
            "plan --model qwen3-30b-a3b --cluster dgx-h100-ndr --gpus 128 "
            "--global-batch 1024 --fix tp=1,pp=1,mbs=2,recompute=none,ep=8,"
            "fp8=delayed,overlap=on,zero=%s --placement tp,pp,dp --top 1 "
            "--no-timing --format json",
            fix);
        json_t *c = json_array_get(json_object_get(j, "candidates"), 0);
        assert_true(json_is_true(json_object_get(c, "simulated")));
        double est = num(json_object_get(c, "estimated_breakdown"),
                         "dp_comm_exposed_s"),
               sim = num(json_object_get(c, "breakdown"), "dp_comm_exposed_s");
        printf("zero=%d: exposed DP estimated %.3f s, simulated %.3f s\n", z,
               est, sim);
        assert_true(fabs(est - sim) <= 0.25 * sim);
        json_decref(j);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h800_profile),
        cmocka_unit_test(test_h200_blackwell_profiles),
        cmocka_unit_test(test_blackwell_ultra_profiles),
        cmocka_unit_test(test_h200_expert_gemms),
        cmocka_unit_test(test_unfused_permute),
        cmocka_unit_test(test_simulate_ep),
        cmocka_unit_test(test_simulate_deepep),
        cmocka_unit_test(test_estimate_deepep),
        cmocka_unit_test(test_expert_dp_group),
        cmocka_unit_test(test_moe_fp8),
        cmocka_unit_test(test_simulate_cp),
        cmocka_unit_test(test_launch_flags),
        cmocka_unit_test(test_scale_plans),
        cmocka_unit_test(test_a2a_budget),
        cmocka_unit_test(test_estimate_dp_overlap_moe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
