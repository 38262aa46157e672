/*
 * test_step.c: the training-iteration simulator (sim/hw/profile.c,
 * sim/train/compute.c, sim/train/schedule.c, sim/train/step*.c) through
 * the library: GPU profiles and
 * their errors, the roofline and wave quantization, a layer's operations
 * against the closed-form FLOPs, the pipeline schedules, rank placement,
 * and whole iterations: the breakdown adds up, FLOP/s are consistent,
 * fidelities agree where nothing contends, the 1F1B bubble matches its
 * closed form, runs are deterministic, and layouts that do not fit fail.
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

#include <jansson.h>

#include "podplan/sim.h"

static void assert_rel(double got, double want, double tol) {
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("got %.12g, want %.12g within %g relative", got, want, tol);
}

static const pp_catalog *cat(void) {
    static pp_catalog *c;
    pp_error e = PP_ERROR_INIT;
    if (!c && pp_catalog_load(NULL, &c, &e)) fail_msg("catalogue: %s", e.msg);
    return c;
}

static pp_gpu_profile a100(void) {
    pp_gpu_profile g;
    pp_error e = PP_ERROR_INIT;
    if (pp_profile_load(NULL, pp_catalog_gpu(cat(), "a100-sxm4-80gb"), &g, &e))
        fail_msg("%s", e.msg);
    return g;
}

static pp_model model(const char *spec) {
    pp_model m;
    pp_error e = PP_ERROR_INIT;
    if (pp_model_load(spec, &m, &e)) fail_msg("%s", e.msg);
    return m;
}

static pp_parallel par(const char *spec) {
    pp_parallel p;
    pp_error e = PP_ERROR_INIT;
    pp_parallel_init(&p);
    if (pp_parallel_parse(spec, &p, &e)) fail_msg("%s", e.msg);
    return p;
}

/* Writes text to a temporary YAML file; returns its path (static). */
static const char *tmpfile_with(const char *text) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/podplan-test-step-%d.yaml",
             (int)getpid());
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    return path;
}

/* ---- profiles ---------------------------------------------------------- */

static void test_profile_shipped(void **state) {
    (void)state;
    pp_gpu_profile g = a100();
    assert_string_equal(g.name, "a100");
    assert_non_null(strstr(g.source, "profiles/a100.yaml"));
    assert_rel(g.peak_flops, 312e12, 1e-9); /* from the catalogue */
    assert_rel(g.hbm_Bps, 2039e9, 1e-9);
    assert_int_equal(g.sms, 108);
    assert_int_equal((int)g.n_tiles, 8);
    assert_true(g.framework_efficiency > 0.5 && g.framework_efficiency <= 1);

    pp_error e = PP_ERROR_INIT;
    pp_gpu_profile h;
    assert_int_equal(
        pp_profile_load(NULL, pp_catalog_gpu(cat(), "h100-sxm5"), &h, &e), 0);
    assert_string_equal(h.name, "h100");
    assert_int_equal(h.sms, 132);
    /* No profile is shipped for V100: the builtin defaults. */
    pp_gpu_profile v;
    assert_int_equal(
        pp_profile_load(NULL, pp_catalog_gpu(cat(), "v100-sxm2-32gb"), &v, &e),
        0);
    assert_string_equal(v.source, "builtin");
    assert_rel(v.peak_flops, 125e12, 1e-9);
    /* By name, without a GPU: the file must then give peak and hbm_bw. */
    assert_int_equal(pp_profile_load("a100", NULL, &h, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, "no peak or hbm_bw"));
}

static void test_profile_errors(void **state) {
    (void)state;
    const pp_gpu_spec *gpu = pp_catalog_gpu(cat(), "a100-sxm4-80gb");
    pp_gpu_profile g, before;
    memset(&g, 0x5a, sizeof g);
    before = g;
    pp_error e = PP_ERROR_INIT;
    const char *p = tmpfile_with("name: x\ngemm:\n  efficiency: 1.7\n");
    assert_int_equal(pp_profile_load(p, gpu, &g, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, ":3:15: gemm.efficiency"));
    assert_memory_equal(&g, &before, sizeof g); /* untouched */

    pp_error_clear(&e);
    p = tmpfile_with("memory:\n  efficency: 0.8\n");
    assert_int_equal(pp_profile_load(p, gpu, &g, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, "did you mean \"efficiency\""));

    pp_error_clear(&e);
    p = tmpfile_with("attention:\n  fp8_bwd_time_ratio: 7\n");
    assert_int_equal(pp_profile_load(p, gpu, &g, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, ":2:23: attention.fp8_bwd_time_ratio"));

    pp_error_clear(&e);
    p = tmpfile_with("gemm:\n  nvfp4_efficiency: 0\n");
    assert_int_equal(pp_profile_load(p, gpu, &g, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, ":2:21: gemm.nvfp4_efficiency"));

    pp_error_clear(&e);
    p = tmpfile_with("gemm:\n  tiles:\n    - {m: 128, n: 0, efficiency: 1}\n");
    assert_int_equal(pp_profile_load(p, gpu, &g, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, "gemm.tiles[0].n"));

    /* The attention rate's size term: a negative size, and a misspelt
     * key, are errors located in the file. */
    pp_error_clear(&e);
    p = tmpfile_with("attention:\n  flash_fwd_flops_half: -1e10\n");
    assert_int_equal(pp_profile_load(p, gpu, &g, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, ":2:25: attention.flash_fwd_flops_half"));
    assert_memory_equal(&g, &before, sizeof g);
    pp_error_clear(&e);
    p = tmpfile_with("attention:\n  flash_bwd_flop_half: 6e10\n");
    assert_int_equal(pp_profile_load(p, gpu, &g, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, "did you mean \"flash_bwd_flops_half\""));
    /* Head dim 64's figures: a map with both efficiencies, in range, and
     * no stray key. */
    static const struct {
        const char *yaml, *msg;
    } d64[] = {
        {"attention:\n  head_dim_64: 0.4\n",
         ":2:16: attention.head_dim_64: expected a mapping"},
        {"attention:\n  head_dim_64:\n    flash_fwd_efficiency: 0.4\n",
         ":3:5: attention.head_dim_64.flash_bwd_efficiency: missing"},
        {"attention:\n  head_dim_64:\n    flash_fwd_efficiency: 1.5\n"
         "    flash_bwd_efficiency: 0.4\n",
         ":3:27: attention.head_dim_64.flash_fwd_efficiency: expected a "
         "number in [0.001, 1]"},
        {"attention:\n  head_dim_64:\n    flash_fwd_efficiency: 0.4\n"
         "    flash_bwd_efficiency: 0.4\n    flash_fwd_flop_half: 1e10\n",
         "did you mean \"flash_fwd_flops_half\""},
        {"attention:\n  head_dim_192:\n    flash_fwd_efficiency: 0.6\n",
         ":3:5: attention.head_dim_192.flash_bwd_efficiency: missing"},
        {"attention:\n  head_dim_196: {}\n", "did you mean \"head_dim_192\""},
        {"compute_beside_comm: []\n", ":1:22: compute_beside_comm: expected 1"},
        {"compute_beside_comm:\n  - {sms: 20, time: 0.9}\n",
         ":2:21: compute_beside_comm[0].time"},
        {"compute_beside_comm:\n  - {sms: 33, time: 1.2}\n"
         "  - {sms: 20, time: 1.1}\n",
         ":3:11: compute_beside_comm[1]: expected more SMs"},
        {"compute_beside_comm:\n  - {sms: 20}\n",
         "compute_beside_comm[0].time: missing"},
        {"compute_beside_comm: {sms: 20, time: 1.1}\n",
         ":1:22: compute_beside_comm"},
        {"compute_beside_nccl:\n  points:\n    - {sms: 8, time: 1.1}\n",
         "compute_beside_nccl.measured_on_sms: missing"},
        {"compute_beside_nccl:\n  measured_on_sms: 132\n",
         "compute_beside_nccl.points: missing"},
        {"compute_beside_nccl:\n  measured_on_sms: 132\n  points:\n"
         "    - {sms: 16, time: 1.2}\n    - {sms: 8, time: 1.1}\n",
         ":5:13: compute_beside_nccl.points[1]: expected more SMs"},
        {"compute_beside_nccl:\n  measured_on_sms: 132\n  points: []\n",
         ":3:11: compute_beside_nccl.points: expected 1"},
        {"compute_beside_nccl:\n  measured_on_sms: 132\n  point: []\n",
         "did you mean \"points\""},
        {"compute_beside_nccl: [{sms: 8, time: 1.1}]\n",
         ":1:22: compute_beside_nccl"},
    };
    for (size_t i = 0; i < sizeof d64 / sizeof d64[0]; i++) {
        pp_error_clear(&e);
        p = tmpfile_with(d64[i].yaml);
        assert_int_equal(pp_profile_load(p, gpu, &g, &e), PP_EINPUT);
        if (!strstr(e.msg, d64[i].msg))
            fail_msg("\"%s\" does not contain \"%s\"", e.msg, d64[i].msg);
        assert_memory_equal(&g, &before, sizeof g);
    }

    /* The scatter-add rate: a bandwidth with its unit, above zero. */
    pp_error_clear(&e);
    p = tmpfile_with("memory:\n  scatter_add_bw: 0GB/s\n");
    assert_int_equal(pp_profile_load(p, gpu, &g, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, ":2:19: memory.scatter_add_bw"));
    assert_memory_equal(&g, &before, sizeof g);
    pp_error_clear(&e);
    p = tmpfile_with("memory:\n  scatter_add_bw: fast\n");
    assert_int_equal(pp_profile_load(p, gpu, &g, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, "memory.scatter_add_bw"));

    /* The measured points, linear between them and from (0, 1), the
     * last held beyond; none: no slowdown. */
    pp_error_clear(&e);
    p = tmpfile_with("compute_beside_comm:\n  - {sms: 20, time: 1.1}\n"
                     "  - {sms: 40, time: 1.5}\n");
    assert_int_equal(pp_profile_load(p, gpu, &g, &e), 0);
    assert_rel(pp_profile_beside_comm(&g, 0), 1, 0);
    assert_rel(pp_profile_beside_comm(&g, 10), 1.05, 1e-12);
    assert_rel(pp_profile_beside_comm(&g, 20), 1.1, 1e-12);
    assert_rel(pp_profile_beside_comm(&g, 30), 1.3, 1e-12);
    assert_rel(pp_profile_beside_comm(&g, 80), 1.5, 1e-12);
    unlink(p);
    pp_error_clear(&e);
    assert_int_equal(pp_profile_load("a100", gpu, &g, &e), 0);
    assert_int_equal(g.n_beside_comm, 0);
    assert_rel(pp_profile_beside_comm(&g, 20), 1, 0);
    assert_int_equal(g.n_beside_nccl, 0);
    assert_rel(pp_profile_beside_nccl(&g, 32), 1, 0);

    /* compute_beside_nccl is read at the share of the SMs it was measured
     * on: 20 of the 132 measured is 30 of this GPU's 198. */
    pp_error_clear(&e);
    p = tmpfile_with("sms: 198\ncompute_beside_nccl:\n  measured_on_sms: 132\n"
                     "  points:\n    - {sms: 8, time: 1.1}\n"
                     "    - {sms: 32, time: 1.5}\n");
    assert_int_equal(pp_profile_load(p, gpu, &g, &e), 0);
    assert_rel(pp_profile_beside_nccl(&g, 0), 1, 0);
    assert_rel(pp_profile_beside_nccl(&g, 6), 1.05, 1e-12);
    assert_rel(pp_profile_beside_nccl(&g, 30), 1.3, 1e-12);
    assert_rel(pp_profile_beside_nccl(&g, 99), 1.5, 1e-12);
    unlink(p);

    pp_error_clear(&e);
    p = tmpfile_with("sustained: 0\n");
    assert_int_equal(pp_profile_load(p, gpu, &g, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, ":1:12: sustained"));

    pp_error_clear(&e);
    p = tmpfile_with("launch_overhead: 4\n");
    assert_int_equal(pp_profile_load(p, gpu, &g, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, ":1:18: launch_overhead"));

    pp_error_clear(&e);
    p = tmpfile_with("framework: {grad_accum_bytes: 2}\nsms: 100\n");
    assert_int_equal(pp_profile_load(p, gpu, &g, &e), 0);
    assert_int_equal(g.sms, 100);
    assert_rel(g.grad_accum_bytes, 2, 0);
    unlink(p);

    pp_error_clear(&e);
    assert_int_equal(pp_profile_load("no-such-profile", gpu, &g, &e),
                     PP_ENOENT);
}

/* ---- the roofline ------------------------------------------------------- */

static void test_gemm_model(void **state) {
    (void)state;
    pp_gpu_profile g = a100();
    g.framework_efficiency = 1;
    g.launch_s = 0;
    /* The anchor: m = n = k = 8192 runs at the published best, 268 of 312
     * TFLOP/s (the profile's comment derives its asymptote from it). */
    double t = pp_gemm_time_s(&g, 1, 8192, 8192, 8192);
    assert_rel(2.0 * 8192.0 * 8192 * 8192 / t, 268e12, 0.005);
    /* Wave quantization: 108 tiles of 256x128 fill the 108 SMs once; one
     * more tile needs a second wave. */
    double e108 = pp_gemm_efficiency(&g, 1, 256 * 12, 128 * 9, 4096);
    double e109 = pp_gemm_efficiency(&g, 1, 256 * 109, 128, 4096);
    assert_true(e108 > 0.85);
    assert_true(e109 < e108);
    /* A short k loop pays its prologue: k = k_half runs at half speed. */
    double big = pp_gemm_efficiency(&g, 1, 8192, 8192, 1e9);
    assert_rel(pp_gemm_efficiency(&g, 1, 8192, 8192, g.gemm_k_half), big / 2,
               1e-6);
    /* Memory-bound: a GEMV moves its matrix at the memory efficiency. */
    t = pp_gemm_time_s(&g, 1, 1, 8192, 8192);
    assert_rel(t,
               2.0 * (8192.0 + 8192.0 * 8192 + 8192) /
                   (g.hbm_Bps * g.mem_efficiency),
               1e-9);
    g.launch_s = 4e-6;
    assert_rel(pp_memop_time_s(&g, 1e9),
               1e9 / (g.hbm_Bps * g.mem_efficiency) + 4e-6, 1e-12);
    g.framework_efficiency = 0.5;
    assert_rel(pp_memop_time_s(&g, 1e9),
               2e9 / (g.hbm_Bps * g.mem_efficiency) + 4e-6, 1e-12);
}

/* A profile's sustained share slows the tensor-core kernels (GEMMs in
 * every number format, FlashAttention) by its inverse and leaves the
 * memory-bound ones alone.  The shipped B200 profile carries its measured
 * share; H100's, the reference, none. */
static void test_sustained(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_gpu_profile g, h;
    if (pp_profile_load_stack(NULL, pp_catalog_gpu(cat(), "b200"), "nemo-2025",
                              &g, NULL, &e) ||
        pp_profile_load(NULL, pp_catalog_gpu(cat(), "h100-sxm5"), &h, &e))
        fail_msg("%s", e.msg);
    assert_rel(g.sustained, 0.93, 0);
    assert_rel(pp_profile_sustained(&h), 1, 0);
    pp_gpu_profile one = g;
    one.sustained = 0;
    double n = 16384;
    assert_rel(pp_gemm_time_s(&one, 1, n, n, n) - one.launch_s,
               0.93 * (pp_gemm_time_s(&g, 1, n, n, n) - g.launch_s), 1e-12);
    assert_rel(pp_gemm_time_prec_s(&one, true, 1, n, n, n) - one.launch_s,
               0.93 * (pp_gemm_time_prec_s(&g, true, 1, n, n, n) - g.launch_s),
               1e-12);
    assert_rel(pp_gemm_time_nvfp4_s(&one, 1, n, n, n) - one.launch_s,
               0.93 * (pp_gemm_time_nvfp4_s(&g, 1, n, n, n) - g.launch_s),
               1e-12);
    assert_rel(pp_memop_time_s(&one, 1e9), pp_memop_time_s(&g, 1e9), 0);
    assert_rel(pp_profile_gemm_rate(&g), 0.93 * pp_profile_gemm_rate(&one),
               1e-12);
    /* A layer whose time is nearly all FlashAttention (seq 128K against
     * hidden 1024): halving the share nearly doubles its forward. */
    pp_model m = model("layers=1,hidden=1024,heads=8,seq=131072,vocab=1024");
    pp_parallel p = par("mbs=1");
    pp_stack_resolve(&one, &p);
    pp_layer_cost c1, c2;
    assert_int_equal(pp_layer_cost_get(&one, &m, &p, &c1, &e), 0);
    one.sustained = 0.5;
    assert_int_equal(pp_layer_cost_get(&one, &m, &p, &c2, &e), 0);
    assert_true(c2.fwd_s > 1.8 * c1.fwd_s && c2.fwd_s < 2 * c1.fwd_s);
}

/* A layer's operations carry exactly the FLOPs of the closed form
 * (Narayanan et al. 2021): forward 24 b s h^2 (1 + s/(6h)) / t, backward
 * twice that, full recomputation one more forward, selective the
 * attention core 4 b s^2 h / t. */
static void test_layer_flops(void **state) {
    (void)state;
    pp_gpu_profile g = a100();
    pp_model m = model("gpt3-175b");
    pp_error e = PP_ERROR_INIT;
    const char *specs[] = {"tp=8,mbs=2", "tp=8,mbs=2,sp=on",
                           "tp=4,mbs=1,recompute=selective",
                           "tp=1,mbs=1,recompute=none"};
    for (size_t i = 0; i < 4; i++) {
        pp_parallel p = par(specs[i]);
        pp_layer_cost c;
        assert_int_equal(pp_layer_cost_get(&g, &m, &p, &c, &e), 0);
        double b = (double)p.mbs, s = 2048, h = 12288, t = (double)p.tp;
        double fwd = 24 * b * s * h * h * (1 + s / (6 * h)) / t;
        assert_rel(c.fwd_flops, fwd, 1e-12);
        assert_rel(c.bwd_flops, 2 * fwd, 1e-12);
        double rc = p.recompute == PP_RECOMPUTE_FULL ? fwd
                    : p.recompute == PP_RECOMPUTE_SELECTIVE
                        ? 4 * b * s * s * h / t
                        : 0;
        assert_rel(c.recompute_flops + 1, rc + 1, 1e-12);
        /* TP collectives: 2 AllReduces each way (Shoeybi et al. 2019);
         * with sp each becomes ReduceScatter + AllGather. */
        int32_t k = p.tp == 1 ? 0 : p.sp ? 4 : 2;
        assert_int_equal(c.fwd_colls, k);
        assert_int_equal(c.bwd_colls, k);
        assert_int_equal(c.recompute_colls,
                         p.recompute == PP_RECOMPUTE_FULL ? k : 0);
        if (p.tp > 1) assert_rel(c.coll_bytes, 2 * b * s * h, 1e-12);
        assert_true(c.gemm_s < c.fwd_s);
        assert_true(c.bwd_s > 1.8 * c.fwd_s && c.bwd_s < 2.6 * c.fwd_s);
    }
    pp_model v = model("vit-base");
    pp_parallel p = par("dp=2");
    pp_layer_cost c;
    assert_int_equal(pp_layer_cost_get(&g, &v, &p, &c, &e), PP_EINVAL);
}

/* ---- schedules ----------------------------------------------------------- */

static void test_schedules(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    /* Through the simulator: a 4-stage pipeline of equal stages, no
     * communication cost to speak of (analytic, async p2p), 1F1B's bubble
     * is (p - 1)/m of the ideal time (Narayanan et al. 2021, sec. 2.2.1),
     * interleaving divides it by vp, GPipe has the same bubble. */
    pp_cluster *c;
    if (pp_cluster_load("selene-like", NULL, 0, NULL, &c, &e))
        fail_msg("%s", e.msg);
    pp_model m = model("layers=24,hidden=1024,heads=16,seq=1024,vocab=1024");
    const char *specs[] = {"tp=1,pp=4,dp=1,mbs=1,gbs=16",
                           "tp=1,pp=4,dp=1,mbs=1,gbs=16,vp=2",
                           "tp=1,pp=4,dp=1,mbs=1,gbs=16,vp=3"};
    double ideal = 0;
    for (int i = 0; i < 3; i++) {
        pp_parallel p = par(specs[i]);
        pp_step_config cfg;
        pp_step_config_init(&cfg);
        cfg.model = &m;
        cfg.par = &p;
        cfg.cluster = c;
        cfg.fidelity = PP_FIDELITY_ANALYTIC;
        cfg.p2p_sync = false;
        pp_step_result r;
        if (pp_step_simulate(&cfg, &r, &e)) fail_msg("%s", e.msg);
        /* The middle stages hold layers only: their compute is the ideal
         * time; the bubble is what the schedule adds. */
        double comp = r.stages[1].compute_s;
        if (i == 0) ideal = comp;
        assert_rel(comp, ideal, 1e-9);
        double bubble = r.stages[1].bubble_s / comp;
        double want = 3.0 / (16.0 * (double)p.vp);
        /* The first and last stages' embedding and logits make them a
         * little slower; the pipeline waits for them. */
        if (!(bubble >= want * 0.98 && bubble <= want * 1.25))
            fail_msg("vp=%lld: bubble %.4f, want about %.4f", (long long)p.vp,
                     bubble, want);
        if (p.vp == 1) {
            cfg.schedule = PP_SCHED_GPIPE;
            cfg.schedule_set = true;
            pp_step_result r2;
            if (pp_step_simulate(&cfg, &r2, &e)) fail_msg("%s", e.msg);
            assert_rel(r2.iteration_time_s, r.iteration_time_s, 0.01);
            pp_step_result_fini(&r2);
        }
        pp_step_result_fini(&r);
    }
    pp_cluster_free(c);
}

/* ---- placement ----------------------------------------------------------- */

static void test_placement(void **state) {
    (void)state;
    char o[3];
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_placement_parse("tp,pp,dp", o, &e), 0);
    assert_memory_equal(o, "tpd", 3);
    assert_int_equal(pp_placement_parse("dp,tp,pp", o, &e), 0);
    assert_memory_equal(o, "dtp", 3);
    assert_int_equal(pp_placement_parse("tp,tp,dp", o, &e), PP_EUSAGE);
    assert_non_null(strstr(e.msg, "given twice"));
    pp_error_clear(&e);
    assert_int_equal(pp_placement_parse("tp,pp", o, &e), PP_EUSAGE);
    pp_error_clear(&e);
    assert_int_equal(pp_placement_parse("tp,pp,ep", o, &e), PP_EUSAGE);
    pp_parallel p = par("tp=8,pp=4,dp=2");
    /* TP innermost, then PP, then DP (Megatron-LM). */
    assert_int_equal(pp_placement_rank(&p, "tpd", 3, 0, 0), 3);
    assert_int_equal(pp_placement_rank(&p, "tpd", 0, 1, 0), 8);
    assert_int_equal(pp_placement_rank(&p, "tpd", 0, 0, 1), 32);
    assert_int_equal(pp_placement_rank(&p, "dtp", 1, 2, 1), 1 + 2 * 1 + 16 * 2);
}

/* ---- whole iterations ---------------------------------------------------- */

typedef struct run {
    pp_cluster *c;
    pp_model m;
    pp_parallel p;
    pp_step_config cfg;
} run;

static void run_init(run *x, const char *cluster, const char *m,
                     const char *p) {
    pp_error e = PP_ERROR_INIT;
    if (pp_cluster_load(cluster, NULL, 0, NULL, &x->c, &e))
        fail_msg("%s", e.msg);
    x->m = model(m);
    x->p = par(p);
    pp_step_config_init(&x->cfg);
    x->cfg.model = &x->m;
    x->cfg.par = &x->p;
    x->cfg.cluster = x->c;
}

static void check_sums(const pp_step_result *r) {
    for (size_t i = 0; i < r->n_stages; i++) {
        const pp_breakdown *b = &r->stages[i];
        double sum = b->compute_s + b->tp_comm_s + b->pp_comm_s +
                     b->dp_comm_exposed_s + b->bubble_s + b->other_s +
                     b->ep_comm_s + b->cp_comm_s + b->host_s;
        assert_rel(sum, r->iteration_time_s, 1e-9);
        assert_true(b->compute_s > 0 && b->bubble_s >= 0 && b->pp_comm_s >= 0);
    }
}

static void test_iteration_invariants(void **state) {
    (void)state;
    run x;
    run_init(&x, "selene-like", "megatron-39.1b",
             "tp=8,pp=2,dp=4,mbs=2,gbs=64,vp=2");
    pp_error e = PP_ERROR_INIT;
    pp_step_result r, r2;
    assert_int_equal(pp_step_simulate(&x.cfg, &r, &e), 0);
    check_sums(&r);
    assert_int_equal(r.schedule, PP_SCHED_INTERLEAVED);
    assert_int_equal((int)r.n_stages, 2);
    assert_int_equal((int)r.gpus, 64);
    /* F_iter / (n T) is what is reported. */
    pp_flops f;
    assert_int_equal(pp_flops_count(&x.m, 64, PP_RECOMPUTE_FULL, &f, &e), 0);
    assert_rel(r.tflops_per_gpu, f.total / (64 * r.iteration_time_s) / 1e12,
               1e-12);
    assert_rel(r.mfu, f.model / (64 * r.iteration_time_s * 312e12), 1e-12);
    assert_true(r.total.tp_comm_s > 0 && r.total.pp_comm_s > 0 &&
                r.total.dp_comm_exposed_s > 0 && r.total.bubble_s > 0);
    assert_true(r.net.flows_started > 0 && r.collectives > 0);
    /* Deterministic: the same run gives the same figures, bit for bit. */
    assert_int_equal(pp_step_simulate(&x.cfg, &r2, &e), 0);
    assert_memory_equal(r.stages, r2.stages, r.n_stages * sizeof *r.stages);
    assert_true(r.iteration_time_s == r2.iteration_time_s);
    assert_true(r.events == r2.events);
    pp_step_result_fini(&r2);
    /* Overlapping the DP buckets with the last backward hides some. */
    x.cfg.dp_overlap = true;
    x.cfg.bucket_bytes = 25e6;
    assert_int_equal(pp_step_simulate(&x.cfg, &r2, &e), 0);
    check_sums(&r2);
    assert_true(r2.total.dp_comm_exposed_s < r.total.dp_comm_exposed_s);
    pp_step_result_fini(&r2);
    /* Gradients reduced in fp32 take twice as long to synchronise. */
    x.cfg.dp_overlap = false;
    x.cfg.grad_bytes = 4;
    assert_int_equal(pp_step_simulate(&x.cfg, &r2, &e), 0);
    assert_true(r2.total.dp_comm_exposed_s > 1.5 * r.total.dp_comm_exposed_s);
    pp_step_result_fini(&r2);
    pp_step_result_fini(&r);
    pp_cluster_free(x.c);
}

/* Inside one server with tp = 8 nothing contends: analytic and flow give
 * the same time (DESIGN.md: "both must agree exactly where there is no
 * contention"). */
static void test_fidelities_agree(void **state) {
    (void)state;
    run x;
    run_init(&x, "selene-like", "megatron-18.4b", "tp=8,pp=1,dp=1,mbs=2,gbs=4");
    pp_error e = PP_ERROR_INIT;
    pp_step_result a, f;
    x.cfg.fidelity = PP_FIDELITY_ANALYTIC;
    assert_int_equal(pp_step_simulate(&x.cfg, &a, &e), 0);
    x.cfg.fidelity = PP_FIDELITY_FLOW;
    assert_int_equal(pp_step_simulate(&x.cfg, &f, &e), 0);
    assert_rel(f.iteration_time_s, a.iteration_time_s, 1e-9);
    assert_rel(f.total.tp_comm_s, a.total.tp_comm_s, 1e-9);
    assert_true(a.total.tp_comm_s > 0);
    pp_step_result_fini(&a);
    pp_step_result_fini(&f);
    pp_cluster_free(x.c);
}

/* ZeRO, sequence parallelism, selective recomputation, another placement,
 * GPipe: each runs to the end and its parts add up. */
static void test_variants(void **state) {
    (void)state;
    const char *specs[] = {
        "tp=4,pp=2,dp=2,mbs=2,gbs=8,recompute=none,zero=1",
        "tp=2,pp=2,dp=4,mbs=1,gbs=16,zero=3",
        "tp=4,pp=2,dp=2,mbs=2,gbs=8,sp=on,recompute=selective",
        "tp=8,pp=3,dp=2,mbs=1,gbs=12,vp=2"};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 3; k++) {
            run x;
            run_init(&x, "selene-like", "megatron-1.7b", specs[i]);
            if (k == 1) memcpy(x.cfg.placement, "dtp", 3);
            if (k == 2 && x.p.vp == 1) {
                x.cfg.schedule = PP_SCHED_GPIPE;
                x.cfg.schedule_set = true;
            }
            pp_error e = PP_ERROR_INIT;
            pp_step_result r;
            if (pp_step_simulate(&x.cfg, &r, &e))
                fail_msg("%s (variant %d): %s", specs[i], k, e.msg);
            check_sums(&r);
            pp_step_result_fini(&r);
            pp_cluster_free(x.c);
        }
}

/* Pipeline tensors: Megatron-LM 2021 sends 1/tp from each TP rank and
 * the receiver all-gathers it; Megatron-core sends the whole tensor from
 * every rank.  Two stages on two DGX nodes: the same transfers, tp times
 * the bytes (so pipeline time grows), no gathers (one per received input:
 * 2 x micro-batches fewer collectives).  With sp the tensor is split
 * already and the choice changes nothing. */
static void test_p2p_whole(void **state) {
    (void)state;
    const char *specs[2] = {"tp=8,pp=2,dp=1,mbs=1,gbs=8",
                            "tp=8,pp=2,dp=1,mbs=1,gbs=8,sp=on"};
    for (int i = 0; i < 2; i++) {
        pp_step_result r[2];
        for (int w = 0; w < 2; w++) {
            run x;
            run_init(&x, "selene-like", "megatron-18.4b", specs[i]);
            x.cfg.p2p_scatter = w == 0;
            pp_error e = PP_ERROR_INIT;
            if (pp_step_simulate(&x.cfg, &r[w], &e))
                fail_msg("%s: %s", specs[i], e.msg);
            check_sums(&r[w]);
            pp_cluster_free(x.c);
        }
        assert_true(r[0].transfers == r[1].transfers);
        if (i == 0) {
            assert_true(r[1].collectives + 2 * 8 == r[0].collectives);
            assert_true(r[1].total.pp_comm_s > 2 * r[0].total.pp_comm_s);
        } else {
            assert_true(r[1].collectives == r[0].collectives);
            assert_true(r[1].iteration_time_s == r[0].iteration_time_s);
        }
        pp_step_result_fini(&r[0]);
        pp_step_result_fini(&r[1]);
    }
}

/* ZeRO-1 reduce-scatters the accumulated gradients once per iteration;
 * ZeRO-2 keeps only its shard, so it reduce-scatters every micro-batch's
 * (DeepSpeed): tp x (micro-batches - 1) more collectives, and more of the
 * iteration waits for DP. */
static void test_zero2_per_microbatch(void **state) {
    (void)state;
    pp_step_result r[2];
    for (int z = 0; z < 2; z++) {
        run x;
        run_init(&x, "selene-like", "megatron-1.7b",
                 z ? "tp=2,pp=1,dp=2,mbs=1,gbs=8,zero=2"
                   : "tp=2,pp=1,dp=2,mbs=1,gbs=8,zero=1");
        pp_error e = PP_ERROR_INIT;
        if (pp_step_simulate(&x.cfg, &r[z], &e)) fail_msg("%s", e.msg);
        check_sums(&r[z]);
        pp_cluster_free(x.c);
    }
    assert_true(r[1].collectives == r[0].collectives + 2 * (4 - 1));
    assert_true(r[1].total.dp_comm_exposed_s >
                2 * r[0].total.dp_comm_exposed_s);
    assert_true(r[1].total.compute_s == r[0].total.compute_s);
    pp_step_result_fini(&r[0]);
    pp_step_result_fini(&r[1]);
}

/* An uneven split moves work between stages and nothing else: the same
 * FLOPs, the stage with more layers computes longer, and per stage the
 * breakdown still sums to the iteration. */
static void test_uneven(void **state) {
    (void)state;
    run a, b;
    run_init(&a, "selene-like", "megatron-39.1b",
             "tp=8,pp=4,dp=2,mbs=1,gbs=16");
    run_init(&b, "selene-like", "megatron-39.1b",
             "tp=8,pp=4,dp=2,mbs=1,gbs=16,first=10,last=10");
    pp_error e = PP_ERROR_INIT;
    pp_step_result ra, rb;
    if (pp_step_simulate(&a.cfg, &ra, &e) || pp_step_simulate(&b.cfg, &rb, &e))
        fail_msg("%s", e.msg);
    check_sums(&ra);
    check_sums(&rb);
    assert_true(ra.flops_iter == rb.flops_iter);
    /* 12/12/12/12 against 10/14/14/10 layers. */
    assert_rel(ra.stages[1].compute_s, ra.stages[2].compute_s, 1e-9);
    assert_rel(rb.stages[1].compute_s / ra.stages[1].compute_s, 14.0 / 12.0,
               0.01);
    assert_true(rb.stages[0].compute_s < ra.stages[0].compute_s);
    assert_true(rb.stages[3].compute_s < ra.stages[3].compute_s);
    /* The middle holds more: its memory is what is reported. */
    assert_int_equal(rb.memory.stage, 1);
    pp_step_result_fini(&ra);
    pp_step_result_fini(&rb);
    pp_cluster_free(a.c);
    pp_cluster_free(b.c);
}

/* The trace with DP buckets overlapping the backward: every track's
 * slices nest or are disjoint (Perfetto draws others wrongly), and the
 * communication has tracks of its own, apart from the compute. */
typedef struct slice {
    int pid, tid;
    double t0, t1;
} slice;

static int cmp_slice(const void *pa, const void *pb) {
    const slice *a = pa, *b = pb;
    if (a->pid != b->pid) return a->pid - b->pid;
    if (a->tid != b->tid) return a->tid - b->tid;
    if (a->t0 != b->t0) return a->t0 < b->t0 ? -1 : 1;
    return a->t1 > b->t1 ? -1 : a->t1 < b->t1; /* outer first */
}

static void test_trace_tracks(void **state) {
    (void)state;
    run x;
    run_init(&x, "selene-like", "megatron-1.7b",
             "tp=2,pp=2,dp=4,mbs=1,gbs=16,vp=1");
    x.cfg.dp_overlap = true;
    x.cfg.bucket_bytes = 10e6;
    char path[] = "/tmp/podplan-trace-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    x.cfg.trace = fp;
    pp_error e = PP_ERROR_INIT;
    pp_step_result r;
    if (pp_step_simulate(&x.cfg, &r, &e)) fail_msg("%s", e.msg);
    fclose(fp);
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    unlink(path);
    if (!j) fail_msg("trace is not JSON: %s", err.text);
    json_t *ev = json_object_get(j, "traceEvents"), *v;
    size_t n = json_array_size(ev), ns = 0, i, comm_tracks = 0;
    slice *s = calloc(n, sizeof *s);
    json_array_foreach(ev, i, v) {
        const char *ph = json_string_value(json_object_get(v, "ph"));
        const char *name = json_string_value(json_object_get(v, "name"));
        if (strcmp(ph, "M") == 0) {
            json_t *a = json_object_get(json_object_get(v, "args"), "name");
            if (strcmp(name, "thread_name") == 0 && json_is_string(a) &&
                strstr(json_string_value(a), " comm"))
                comm_tracks++;
            continue;
        }
        double ts = json_number_value(json_object_get(v, "ts"));
        double dur = json_number_value(json_object_get(v, "dur"));
        s[ns++] = (slice){(int)json_integer_value(json_object_get(v, "pid")),
                          (int)json_integer_value(json_object_get(v, "tid")),
                          ts, ts + dur};
    }
    assert_true(comm_tracks >= 1);
    qsort(s, ns, sizeof *s, cmp_slice);
    /* A stack of open slices per track. */
    double *open = calloc(ns, sizeof *open);
    size_t depth = 0;
    for (size_t k = 0; k < ns; k++) {
        if (k == 0 || s[k].pid != s[k - 1].pid || s[k].tid != s[k - 1].tid)
            depth = 0;
        while (depth > 0 && open[depth - 1] <= s[k].t0 + 1e-9) depth--;
        if (depth > 0 && s[k].t1 > open[depth - 1] + 1e-6)
            fail_msg("track %d/%d: [%.3f, %.3f] crosses a slice ending at "
                     "%.3f",
                     s[k].pid, s[k].tid, s[k].t0, s[k].t1, open[depth - 1]);
        open[depth++] = s[k].t1;
    }
    free(open);
    free(s);
    json_decref(j);
    pp_step_result_fini(&r);
    pp_cluster_free(x.c);
}

static void test_infeasible(void **state) {
    (void)state;
    run x;
    run_init(&x, "selene-like", "gpt3-175b", "tp=1,pp=1,dp=8,mbs=1,gbs=8");
    pp_error e = PP_ERROR_INIT;
    pp_step_result r;
    memset(&r, 0x5a, sizeof r);
    pp_step_result before = r;
    assert_int_equal(pp_step_simulate(&x.cfg, &r, &e), PP_EINFEASIBLE);
    assert_non_null(strstr(e.msg, "does not fit in memory"));
    assert_non_null(strstr(e.msg, "short"));
    assert_memory_equal(&r, &before, sizeof r);
    /* More GPUs than the cluster has. */
    pp_error_clear(&e);
    x.p = par("tp=8,pp=8,dp=100,mbs=1,gbs=800");
    assert_int_equal(pp_step_simulate(&x.cfg, &r, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, "has 4480"));
    pp_cluster_free(x.c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_shipped),
        cmocka_unit_test(test_profile_errors),
        cmocka_unit_test(test_gemm_model),
        cmocka_unit_test(test_sustained),
        cmocka_unit_test(test_layer_flops),
        cmocka_unit_test(test_schedules),
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_iteration_invariants),
        cmocka_unit_test(test_fidelities_agree),
        cmocka_unit_test(test_variants),
        cmocka_unit_test(test_p2p_whole),
        cmocka_unit_test(test_zero2_per_microbatch),
        cmocka_unit_test(test_uneven),
        cmocka_unit_test(test_trace_tracks),
        cmocka_unit_test(test_infeasible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
