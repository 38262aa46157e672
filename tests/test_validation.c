/*
 * test_validation.c: `podplan simulate` against the published runs of
 * docs/domain.md section 5, each with its tolerance and the assumptions
 * it rests on written next to it.
 *
 * Calibration.  The A100 profile (topologies/profiles/a100.yaml) takes its
 * kernel figures from microbenchmarks and has one constant fitted to an
 * end-to-end run: framework.efficiency = 0.88, set so that Megatron-LM's
 * GPT-3 175B recipe runs at the published 140 TFLOP/s per GPU.  Nothing
 * else is fitted, and nothing per case.  So test_gpt3_175b checks that
 * calibration (and the 34 days that follow from it) rather than
 * predicting it; the weak-scaling table, TITAN and the Ethernet DDP case
 * are predictions (TITAN's under a layout we had to assume: see there).
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
#include <unistd.h>

#include "cli_run.h"
#include "podplan/sim.h"

static void assert_rel(double got, double want, double tol) {
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("got %.12g, want %.12g within %g relative", got, want, tol);
}

typedef struct opts {
    const char *set; /* one --set, or NULL */
    bool dp_overlap;
    double bucket_bytes;
    double compute_time_s;
    pp_fidelity fid;
    bool whole_p2p; /* Megatron-core's p2p: no scatter/gather */
} opts;

/* Simulates one iteration; fails the test on error. */
static pp_step_result simulate(const char *cluster, const char *model,
                               const char *spec, const opts *o,
                               pp_model *m_out) {
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c;
    pp_model m;
    pp_parallel p;
    const char *sets[1] = {o ? o->set : NULL};
    if (pp_cluster_load(cluster, sets, sets[0] ? 1 : 0, NULL, &c, &e) ||
        pp_model_load(model, &m, &e))
        fail_msg("%s", e.msg);
    pp_parallel_init(&p);
    if (pp_parallel_parse(spec, &p, &e)) fail_msg("%s", e.msg);
    pp_step_config cfg;
    pp_step_config_init(&cfg);
    cfg.model = &m;
    cfg.par = &p;
    cfg.cluster = c;
    if (o) {
        cfg.dp_overlap = o->dp_overlap;
        cfg.bucket_bytes = o->bucket_bytes;
        cfg.compute_time_s = o->compute_time_s;
        cfg.fidelity = o->fid;
        cfg.p2p_scatter = !o->whole_p2p;
    }
    pp_step_result r;
    if (pp_step_simulate(&cfg, &r, &e))
        fail_msg("%s on %s, %s: %s", model, cluster, spec, e.msg);
    pp_cluster_free(c);
    if (m_out) *m_out = m;
    return r;
}

/* ------------------------------------------------------------------------
 * Megatron-LM weak scaling (Narayanan et al. 2021, Table 1; domain.md
 * sec. 5) on selene-like (DGX A100 nodes, 8 x HDR, rail-optimised 1:1
 * fat-tree).  Tolerance: every row within 10% of the published TFLOP/s
 * per GPU, and the mean absolute error within 5%.
 *
 * The paper does not give micro-batch sizes or interleaving; its artifact
 * does: Megatron-LM's examples/sc21/run_table_1.sh (the scripts the
 * authors published to reproduce Table 1) sets, per row, MBS, and
 * --num-layers-per-virtual-pipeline-stage (vp = layers / pp / that), and
 * --DDP-impl torch for the rows without pipelining (PyTorch DDP: the
 * gradient AllReduce overlaps the last micro-batch's backward in 25 MB
 * buckets, Megatron-LM's no_sync for the others) and local for the rest
 * (reduced after the pipeline flush).  Full recomputation, fp16.
 * ---------------------------------------------------------------------- */
typedef struct row {
    const char *model;
    int tp, pp, dp, gbs, mbs, vp;
    bool torch_ddp;
    double published;
} row;

static const row table1[] = {
    {"megatron-1.7b", 1, 1, 32, 512, 16, 1, true, 137},
    {"megatron-3.6b", 2, 1, 32, 512, 16, 1, true, 138},
    {"megatron-7.5b", 4, 1, 32, 512, 16, 1, true, 142},
    {"megatron-18.4b", 8, 1, 32, 1024, 8, 1, true, 135},
    {"megatron-39.1b", 8, 2, 32, 1536, 4, 1, false, 138},
    {"megatron-76.1b", 8, 4, 32, 1792, 2, 3, false,
     140}, /* 5 layers per virtual stage */
    {"megatron-145.6b", 8, 8, 24, 2304, 2, 2, false, 148},  /* 5 */
    {"megatron-310.1b", 8, 16, 15, 2160, 1, 2, false, 155}, /* 3 */
    {"megatron-529.6b", 8, 35, 9, 2520, 1, 3, false, 163},  /* 1 */
    {"megatron-1t", 8, 64, 6, 3072, 1, 1, false, 163},
};

static void test_megatron_table(void **state) {
    (void)state;
    double sum_abs = 0, worst = 0;
    printf("  %-16s %4s %3s %6s %6s %7s  %s\n", "model", "mbs", "vp", "pub",
           "sim", "error", "breakdown (compute tp pp dp bubble)");
    for (size_t i = 0; i < sizeof table1 / sizeof table1[0]; i++) {
        const row *w = &table1[i];
        char spec[128];
        snprintf(spec, sizeof spec, "tp=%d,pp=%d,dp=%d,gbs=%d,mbs=%d,vp=%d",
                 w->tp, w->pp, w->dp, w->gbs, w->mbs, w->vp);
        opts o = {NULL, w->torch_ddp, 25e6, 0, PP_FIDELITY_FLOW, false};
        pp_step_result r = simulate("selene-like", w->model, spec, &o, NULL);
        double err = r.tflops_per_gpu / w->published - 1;
        const pp_breakdown *b = &r.total;
        double T = r.iteration_time_s;
        printf("  %-16s %4d %3d %6.0f %6.1f %+6.1f%%  %.2f %.2f %.2f %.2f "
               "%.2f\n",
               w->model, w->mbs, w->vp, w->published, r.tflops_per_gpu,
               100 * err, b->compute_s / T, b->tp_comm_s / T, b->pp_comm_s / T,
               b->dp_comm_exposed_s / T, b->bubble_s / T);
        sum_abs += fabs(err);
        if (fabs(err) > worst) worst = fabs(err);
        /* The table's layouts fit in 80 GB. */
        if (!(r.memory.total <= 80e9))
            fail_msg("%s: %.1f GB per GPU", w->model, r.memory.total / 1e9);
        if (!(fabs(err) <= 0.10))
            fail_msg("%s: %.1f TFLOP/s, published %.0f (%+.1f%%)", w->model,
                     r.tflops_per_gpu, w->published, 100 * err);
        pp_step_result_fini(&r);
    }
    double mean = sum_abs / (sizeof table1 / sizeof table1[0]);
    printf("  mean |error| %.2f%%, worst %.2f%%\n", 100 * mean, 100 * worst);
    assert_true(mean <= 0.05);
}

/* ------------------------------------------------------------------------
 * GPT-3 175B at batch 1536 on 1,024 A100 (Megatron-LM's recipe,
 * examples/pretrain_gpt3_175B.sh: tp 8, pp 16, mbs 1, 128 nodes), the
 * paper's 140 TFLOP/s: the calibration point (see the top), checked to
 * 2%.  Then T_train = 8 T P / (n X) for 300e9 tokens on 1,040 GPUs:
 * about 34 days (domain.md sec. 4: 33.4), to 5%.  And the consistency of
 * the reported figure: F_iter / (n x iteration time).
 * ---------------------------------------------------------------------- */
static void test_gpt3_175b(void **state) {
    (void)state;
    pp_model m;
    pp_step_result r = simulate("selene-like", "gpt3-175b",
                                "tp=8,pp=16,dp=8,mbs=1,gbs=1536", NULL, &m);
    pp_flops f;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_flops_count(&m, 1536, PP_RECOMPUTE_FULL, &f, &e), 0);
    assert_rel(f.total, 4.5e18, 0.01); /* 1.5 x the 3.00e18 at B = 1024 */
    assert_rel(r.tflops_per_gpu, f.total / (1024.0 * r.iteration_time_s) / 1e12,
               1e-12);
    assert_rel(r.tflops_per_gpu, 140, 0.02);
    double days = pp_train_time_s(300e9, pp_model_params(&m), 1040,
                                  r.tflops_per_gpu * 1e12, true) /
                  86400;
    printf("  X = %.1f TFLOP/s per GPU, %.2f s per iteration; 300e9 tokens on "
           "1,040 GPUs: %.1f days\n",
           r.tflops_per_gpu, r.iteration_time_s, days);
    assert_rel(days, 33.4, 0.05);
    pp_step_result_fini(&r);
}

/* ------------------------------------------------------------------------
 * NIC count on TITAN (SK Telecom; domain.md sec. 5): GPT-3 175B, global
 * batch 1536, 1,024 GPUs (128 nodes), 8/4/2/1 HDR NICs per node; measured
 * 32,209 / 32,492 / 37,105 / 50,368 ms, ratios 1.00 / 1.01 / 1.15 / 1.56.
 * Tolerance: the 8-NIC time within 10% (a prediction: the profile was
 * calibrated on selene-like), every ratio within 0.05.
 *
 * Layout assumed (the talk gives none; it was 2023): Megatron-LM's GPT-3
 * 175B recipe (examples/gpt3/train_gpt3_175b_distributed.sh: tp 8, pp 16,
 * mbs 1, global batch 1536, fp16, 128 nodes) with the interleaved
 * schedule at vp 2 (3 layers per virtual stage), full recomputation, run
 * by the Megatron-core of its time: its p2p sends the whole
 * [seq, mbs, hidden] tensor from every TP rank (no scatter/gather without
 * sequence parallelism) and waits for it (batch_isend_irecv, then wait).
 * Ranks tp,pp,dp (podplan's default), ECMP seed 0.
 *
 * What produces the shape: each node sends 8 x 50 MB at every one of the
 * 768 chunk boundaries a stage crosses per iteration, on the critical
 * path.  Eight NICs carry that in ~2 ms per hop, four in ~4 ms (hidden in
 * part by the bubble), but one NIC needs 16-32 ms (the forward send to
 * the next node and the backward send to the previous one leave through
 * the same NIC), so pp comm grows from 1.9 s to 16.7 s: the talk's "with
 * 1 or 2 NICs latency goes up".
 *
 * How the other candidates we ran compare (ratios at 4 / 2 / 1 NICs):
 * the same without interleaving 1.02 / 1.08 / 1.21; vp 3 1.09 / 1.35 /
 * 1.73; Megatron-LM 2021's scatter/gather p2p at vp 2 1.01 / 1.05 / 1.10;
 * selective instead of full recomputation 1.05 / 1.26 / 1.69 (and 25 s at
 * 8 NICs, far from 32 s); async p2p 1.01 / 1.03 / 1.12; Megatron's own
 * rank order tp,dp,pp 1.04 / 1.16 / 1.42 (its pipeline hops go 8 nodes
 * apart, across spines, where our per-flow ECMP hashing collides even at 8
 * NICs: 33.6 s there, where InfiniBand's deterministic fat-tree routing
 * would keep a shift pattern collision-free); ZeRO-1 at tp 8, pp 2, dp 64
 * with fp32 gradients 1.08 / 1.25 / 1.59.  So the layout is a choice that
 * fits, stated here, not a derivation; the mechanism is not fitted (no
 * constant was changed for this case).
 * ---------------------------------------------------------------------- */
static void test_titan_nics(void **state) {
    (void)state;
    const char *sets[4] = {"node.nics.count=8", "node.nics.count=4",
                           "node.nics.count=2", "node.nics.count=1"};
    const double measured[4] = {32.209, 32.492, 37.105, 50.368};
    double t[4];
    for (int i = 0; i < 4; i++) {
        opts o = {sets[i], false, 0, 0, PP_FIDELITY_FLOW, true};
        pp_step_result r =
            simulate("titan", "gpt3-175b",
                     "tp=8,pp=16,dp=8,mbs=1,gbs=1536,vp=2", &o, NULL);
        t[i] = r.iteration_time_s;
        printf("  %d NIC(s) per node: %.3f s (measured %.3f), ratio %.3f "
               "(measured %.2f), pp comm %.2f s\n",
               8 >> i, t[i], measured[i], t[i] / t[0],
               measured[i] / measured[0], r.total.pp_comm_s);
        pp_step_result_fini(&r);
    }
    assert_rel(t[0], measured[0], 0.10);
    for (int i = 1; i < 4; i++) {
        double want = measured[i] / measured[0];
        want = round(want * 100) / 100; /* as published: 1.01, 1.15, 1.56 */
        if (!(fabs(t[i] / t[0] - want) <= 0.05))
            fail_msg("%d NICs: ratio %.3f, measured %.2f", 8 >> i, t[i] / t[0],
                     want);
    }
}

/* ------------------------------------------------------------------------
 * Slow Ethernet DDP (the NCCL article; domain.md sec. 5): ViT-Base (86M
 * parameters, 172 MB of fp16 gradients), data parallel on ethernet-10g
 * with 0.4 s of compute per iteration (--compute-time 0.4s; 32 images per
 * GPU, no recomputation).  The article adds the AllReduce to the compute
 * (0.4 + 0.275), so its DDP does not overlap them: dp_overlap off.
 * Tolerance 5% on each figure: one node ~0.42 s, three nodes ~0.675 s,
 * three nodes' throughput 1.86x one node's.
 * ---------------------------------------------------------------------- */
static void test_ethernet_ddp(void **state) {
    (void)state;
    opts o = {NULL, false, 0, 0.4, PP_FIDELITY_FLOW, false};
    pp_step_result one =
        simulate("ethernet-10g", "vit-base",
                 "dp=8,mbs=32,gbs=256,recompute=none", &o, NULL);
    pp_step_result three =
        simulate("ethernet-10g", "vit-base",
                 "dp=24,mbs=32,gbs=768,recompute=none", &o, NULL);
    double speedup = 3 * one.iteration_time_s / three.iteration_time_s;
    printf("  1 node %.3f s, 3 nodes %.3f s, throughput x%.2f\n",
           one.iteration_time_s, three.iteration_time_s, speedup);
    assert_rel(one.iteration_time_s, 0.42, 0.05);
    assert_rel(three.iteration_time_s, 0.675, 0.05);
    assert_rel(speedup, 1.86, 0.05);
    assert_rel(three.total.compute_s, 0.4, 1e-9);
    pp_step_result_fini(&one);
    pp_step_result_fini(&three);
}

/* ------------------------------------------------------------------------
 * Memory: GPT-3 175B without model parallelism does not fit an 80 GB
 * A100 and `podplan simulate` says by how much (exit 1).
 * ---------------------------------------------------------------------- */
static void test_memory_shortfall(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "simulate --model gpt3-175b --cluster selene-like "
                 "--parallel tp=1,pp=1,dp=8,mbs=1,gbs=8");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "does not fit in memory"));
    /* 16 bytes per parameter of model states (2.8 TB), then at the
     * optimizer step the fp32 copy of the gradients (4 more: Megatron-LM
     * counts 20 in all), 3.49 TB, less 80 GiB. */
    const char *p = strstr(r.err, "has 80GiB: ");
    if (!p) fail_msg("no shortfall in: %s", r.err);
    double tb = strtod(p + 11, NULL);
    assert_true(tb > 3.3 && tb < 3.5 && strstr(p, "TB short"));
    assert_non_null(strstr(r.err, "optimizer step's fp32 gradients"));
    cli_result_free(&r);
}

/* ------------------------------------------------------------------------
 * The CLI: the JSON keys of DESIGN.md, training_days from --tokens, a
 * trace that is JSON, and identical output on repeated runs.
 * ---------------------------------------------------------------------- */
static void test_cli(void **state) {
    (void)state;
    char trace[64];
    snprintf(trace, sizeof trace, "/tmp/podplan-test-trace-%d.json",
             (int)getpid());
    const char *cmd = "simulate --model megatron-39.1b --cluster selene-like "
                      "--parallel tp=8,pp=2,dp=2,mbs=1,gbs=16,vp=2 "
                      "--tokens 300e9 --format json";
    cli_result a, b;
    cli_runf(&a, "%s", cmd);
    cli_runf(&b, "%s", cmd);
    assert_int_equal(a.status, 0);
    assert_string_equal(a.out, b.out);
    json_t *j = cli_json(&a);
    const char *keys[] = {"iteration_time_s", "tflops_per_gpu", "mfu",
                          "memory_per_gpu_bytes", "training_days"};
    for (int i = 0; i < 5; i++)
        if (!json_is_number(json_object_get(j, keys[i])))
            fail_msg("no %s", keys[i]);
    json_t *bd = json_object_get(j, "breakdown");
    const char *bk[] = {"compute_s",         "tp_comm_s", "pp_comm_s",
                        "dp_comm_exposed_s", "bubble_s",  "other_s"};
    double sum = 0;
    for (int i = 0; i < 6; i++) {
        json_t *v = json_object_get(bd, bk[i]);
        if (!json_is_number(v)) fail_msg("no breakdown.%s", bk[i]);
        sum += json_number_value(v);
    }
    double T = json_number_value(json_object_get(j, "iteration_time_s"));
    assert_rel(sum, T, 1e-9);
    assert_rel(json_number_value(json_object_get(j, "training_days")),
               300e9 / (16 * 2048.0) * T / 86400, 1e-9);
    json_decref(j);
    cli_result_free(&a);
    cli_result_free(&b);

    cli_runf(&a, "%s --trace %s", cmd, trace);
    assert_int_equal(a.status, 0);
    json_error_t err;
    json_t *t = json_load_file(trace, 0, &err);
    if (!t) fail_msg("trace: %s", err.text);
    json_decref(t);
    unlink(trace);
    cli_result_free(&a);

    cli_runf(&a, "simulate --model vit-base --cluster ethernet-10g "
                 "--parallel dp=4 --compute-time 0.4 --format json");
    assert_int_equal(a.status, 2); /* a bare number: no unit */
    cli_result_free(&a);
    cli_runf(&a, "simulate --model gpt3-175b --cluster selene-like "
                 "--parallel tp=8,pp=8,dp=1 --compute-time 1s");
    assert_int_equal(a.status, 2);
    assert_non_null(strstr(a.err, "generic models only"));
    cli_result_free(&a);
    /* Megatron-core's whole-tensor p2p: named in the output, and the
     * flag takes on|off only. */
    cli_runf(&a, "%s --p2p-scatter-gather off", cmd);
    assert_int_equal(a.status, 0);
    j = cli_json(&a);
    assert_true(json_is_false(json_object_get(j, "p2p_scatter_gather")));
    assert_true(json_is_true(json_object_get(j, "p2p_sync")));
    json_decref(j);
    cli_result_free(&a);
    cli_runf(&a, "%s --p2p-scatter-gather maybe", cmd);
    assert_int_equal(a.status, 2);
    assert_string_equal(a.out, "");
    cli_result_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_megatron_table),
        cmocka_unit_test(test_gpt3_175b),
        cmocka_unit_test(test_titan_nics),
        cmocka_unit_test(test_ethernet_ddp),
        cmocka_unit_test(test_memory_shortfall),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
