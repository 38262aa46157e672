/*
 * test_stack.c: software-stack profiles (sim/hw/stack.c), FlashAttention
 * and FP8 in memory (models/memory.c) and time (sim/train/compute.c).
 * Each closed-form check states the formula it rests on.
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
#include <unistd.h>

#include "plan_util.h"
#include "podplan/planner.h"
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

static pp_gpu_profile prof(const char *gpu, const char *stack) {
    pp_gpu_profile g;
    pp_error e = PP_ERROR_INIT;
    if (pp_profile_load_stack(NULL, pp_catalog_gpu(cat(), gpu), stack, &g, NULL,
                              &e))
        fail_msg("%s", e.msg);
    return g;
}

static pp_parallel par(const char *spec) {
    pp_parallel p;
    pp_error e = PP_ERROR_INIT;
    pp_parallel_init(&p);
    if (pp_parallel_parse(spec, &p, &e)) fail_msg("%s", e.msg);
    return p;
}

static pp_model model(const char *spec) {
    pp_model m;
    pp_error e = PP_ERROR_INIT;
    if (pp_model_load(spec, &m, &e)) fail_msg("%s", e.msg);
    return m;
}

static const char *tmpfile_with(const char *text) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/podplan-test-stack-%d.yaml",
             (int)getpid());
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    return path;
}

static void test_shipped(void **state) {
    (void)state;
    for (int i = 0; pp_stack_names[i]; i++) {
        pp_stack s;
        pp_error e = PP_ERROR_INIT;
        if (pp_stack_load(pp_stack_names[i], &s, &e))
            fail_msg("%s: %s", pp_stack_names[i], e.msg);
        assert_string_equal(s.name, pp_stack_names[i]);
        assert_true(s.n_launch >= 1);
    }
    /* The A100 keeps Megatron-LM 2021's figures (was profiles/a100.yaml
     * framework:), the H100 gets Megatron-core 2024's. */
    pp_gpu_profile a = prof("a100-sxm4-80gb", NULL);
    assert_string_equal(a.stack, "megatron-lm-2021");
    assert_true(a.stack_default);
    assert_rel(a.framework_efficiency, 0.88, 0);
    assert_rel(a.grad_accum_bytes, 6, 0);
    assert_false(a.flash_attention);
    pp_gpu_profile h = prof("h100-sxm5", NULL);
    assert_string_equal(h.stack, "megatron-core-2024");
    assert_true(h.flash_attention && h.fp8);
    assert_rel(h.grad_accum_bytes, 0, 0);
    /* The host: measured for Megatron-core, not modelled for 2021. */
    assert_rel(h.sw.host_kernel_s, 46.8e-6, 1e-12);
    assert_false(h.sw.moe_sync_free);
    assert_rel(a.sw.host_kernel_s, 0, 0);
    /* Operations listed one for one: eager PyTorch's own rate; a stack
     * that names none charges them kernel_issue. */
    assert_rel(h.sw.host_op_s, 27.9e-6, 1e-12);
    {
        pp_stack hs;
        pp_error e = PP_ERROR_INIT;
        const char *p = tmpfile_with("host:\n  kernel_issue: 40us\n");
        assert_int_equal(pp_stack_load(p, &hs, &e), 0);
        unlink(p);
        assert_rel(hs.host_op_s, 40e-6, 1e-12);
    }
    /* The overlapped all-to-all's SMs: NCCL's p2p channels, DeepEP's
     * SMs; none where the stack has no overlap. */
    pp_gpu_profile n = prof("h100-sxm5", "nemo-2025");
    assert_rel(n.sw.moe_overlap_sms[0], 32, 0);
    assert_rel(n.sw.moe_overlap_sms[1], 20, 0);
    assert_rel(n.sw.moe_overlap_sms[2], 32, 0); /* HybridEP's */
    assert_false(n.sw.moe_hybridep);
    assert_rel(h.sw.moe_overlap_sms[0], 0, 0);
    /* A stack whose dispatcher is HybridEP routes as DeepEP does, and a
     * layout left to the stack resolves to it. */
    {
        pp_stack hs;
        pp_error e = PP_ERROR_INIT;
        const char *p = tmpfile_with("moe:\n  dispatcher: hybridep\n"
                                     "  overlap_sms: {hybridep: 24}\n");
        assert_int_equal(pp_stack_load(p, &hs, &e), 0);
        unlink(p);
        assert_true(hs.moe_hybridep && hs.moe_deepep);
        assert_rel(hs.moe_overlap_sms[2], 24, 0);
        pp_parallel q;
        pp_parallel_init(&q);
        pp_stack_resolve_spec(&hs, &q);
        assert_true(q.hybridep && q.deepep);
        assert_int_equal(pp_parallel_parse("dispatcher=alltoall", &q, &e), 0);
        pp_stack_resolve_spec(&hs, &q);
        assert_false(q.hybridep || q.deepep);
    }
    pp_gpu_profile f = prof("a100-sxm4-80gb", "pytorch-fsdp2");
    assert_false(f.stack_default);
    assert_int_equal(f.sw.zero_max, 3);
    assert_int_equal(f.zero3_prefetch, 1);
}

static void expect_bad(const char *text, const char *want) {
    pp_stack s;
    pp_error e = PP_ERROR_INIT;
    const char *p = tmpfile_with(text);
    int rc = pp_stack_load(p, &s, &e);
    assert_int_equal(rc, PP_EINPUT);
    assert_int_equal(pp_exit_code(rc), 2);
    if (!strstr(e.msg, want))
        fail_msg("message \"%s\" lacks \"%s\"", e.msg, want);
    unlink(p);
}

static void test_broken(void **state) {
    (void)state;
    /* file:line:col: field: what was expected */
    expect_bad("name: x\nattention:\n  flsh: true\n", ":3:3: attention.flsh");
    expect_bad("training_loop:\n  efficiency: 1.5\n",
               ":2:15: training_loop.efficiency");
    expect_bad("data_parallel:\n  reduce_dtype: fp64\n",
               ":2:17: data_parallel.reduce_dtype");
    expect_bad("recompute: [full, sometimes]\n", ":1:19: recompute");
    expect_bad("zero:\n  max_stage: 4\n", ":2:14: zero.max_stage");
    expect_bad("collectives:\n  dp_sms: -1\n", ":2:11: collectives.dp_sms");
    expect_bad("collectives:\n  dp_sm: 32\n", "did you mean \"dp_sms\"");
    expect_bad("launch: [slurm]\n", ":1:10: launch");
    expect_bad("fp8: yes please\n", ":1:6: fp8");
    /* A default the stack does not offer, an unknown overlap key. */
    expect_bad("recompute: [full]\nrecompute_default: none\n",
               ":2:20: recompute_default");
    expect_bad("tensor_parallel:\n  overlap: true\n",
               ":2:3: tensor_parallel.overlap");
    expect_bad("moe:\n  dispatcher: nccl\n", ":2:15: moe.dispatcher");
    expect_bad("moe:\n  dedup: true\n", ":2:3: moe.dedup");
    expect_bad("moe:\n  permute_fusion: maybe\n", ":2:19: moe.permute_fusion");
    expect_bad("moe:\n  a2a_overlap: often\n", ":2:16: moe.a2a_overlap");
    expect_bad("moe:\n  overlap_sms: {alltoall: -2}\n",
               ":2:27: moe.overlap_sms.alltoall");
    expect_bad("moe:\n  overlap_sms: {nvshmem: 20}\n",
               ":2:17: moe.overlap_sms.nvshmem");
    expect_bad("moe:\n  overlap_sms: 20\n", ":2:16: moe.overlap_sms");
    expect_bad("moe:\n  overlap_sms: {hybridep: many}\n",
               ":2:27: moe.overlap_sms.hybridep");
    expect_bad("host:\n  kernel_issue: -5us\n", ":2:17: host.kernel_issue");
    expect_bad("host:\n  kernel_issue: 20ms\n", ":2:17: host.kernel_issue");
    expect_bad("host:\n  kernel_issue: 5GB\n", ":2:17: host.kernel_issue");
    expect_bad("host:\n  op_issue: -1us\n", ":2:13: host.op_issue");
    expect_bad("host:\n  op_issue: 1s\n", ":2:13: host.op_issue");
    expect_bad("host:\n  moe_sync: sometimes\n", ":2:13: host.moe_sync");
    expect_bad("host:\n  kernel_launch: 5us\n", ":2:3: host.kernel_launch");
    expect_bad("host: 5us\n", ":1:7: host");
    expect_bad("fp8:\n  recipe: sometimes\n", ":2:11: fp8.recipe");
    expect_bad("fp8:\n  recipe: auto\n", ":2:11: fp8.recipe");
    expect_bad("fp8:\n  recipe: [delayed]\n", ":2:11: fp8.recipe");
    expect_bad("loss:\n  fused: sometimes\n", ":2:10: loss.fused");
    expect_bad("loss:\n  fusion: true\n", ":2:3: loss.fusion");
    expect_bad("loss: true\n", ":1:7: loss");
    expect_bad("fp4:\n  supported: maybe\n", ":2:14: fp4.supported");
    expect_bad("fp4:\n  recipe: nvfp4\n", ":2:3: fp4.recipe");
    expect_bad("fp4: true\n", ":1:6: fp4");
    expect_bad("optimizer:\n  precision_aware: 2\n",
               ":2:20: optimizer.precision_aware");
}

/* The cross-entropy's two forms: the NeMo stacks run Megatron-core's
 * fused one (loss.fused), timed at 24 bytes of HBM traffic per logit
 * forward (its rate on a lent H100: 23.0-24.9), the others the unfused
 * steps at 38 (by count); the backward is the same.  Llama 3 8B's head at
 * micro-batch 1 (8192 x 128256 logits) under nemo-2025 both ways. */
static void test_loss_fused(void **state) {
    (void)state;
    pp_gpu_profile n = prof("h100-sxm5", "nemo-2025");
    pp_gpu_profile c = prof("h100-sxm5", "megatron-core-2024");
    assert_true(n.sw.loss_fused);
    assert_false(c.sw.loss_fused);
    assert_true(prof("h100-sxm5", "nemo-2024").sw.loss_fused);
    pp_model m = model("llama3-8b");
    pp_parallel p = par("tp=1,pp=1,dp=8,mbs=1,gbs=8,recompute=none");
    pp_stack_resolve(&n, &p);
    pp_gpu_profile u = n;
    u.sw.loss_fused = false;
    pp_layer_cost hf, hu;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_head_cost_get(&n, &m, &p, &hf, &e), 0);
    assert_int_equal(pp_head_cost_get(&u, &m, &p, &hu, &e), 0);
    double E = 8192.0 * 128256.0;
    double want = pp_memop_time_s(&n, 38.0 * E) - pp_memop_time_s(&n, 24.0 * E);
    print_message("llama3-8b head forward: %.2f ms fused, %.2f ms unfused\n",
                  1e3 * hf.fwd_s, 1e3 * hu.fwd_s);
    assert_rel(hu.fwd_s - hf.fwd_s, want, 1e-9);
    assert_rel(hu.bwd_s, hf.bwd_s, 1e-12);
}

/* Without recompute= a layout gets its stack's default: Megatron-core's
 * recompute_granularity None, Megatron-LM 2021's full; a given mode
 * stays. */
static void test_recompute_default(void **state) {
    (void)state;
    pp_gpu_profile mc = prof("h100-sxm5", "megatron-core-2024");
    pp_gpu_profile lm = prof("a100-sxm4-80gb", "megatron-lm-2021");
    pp_parallel p = par("tp=4"), q = par("tp=4,recompute=full");
    pp_parallel r = p;
    pp_stack_resolve(&mc, &p);
    pp_stack_resolve(&mc, &q);
    pp_stack_resolve(&lm, &r);
    assert_int_equal(p.recompute, PP_RECOMPUTE_NONE);
    assert_int_equal(q.recompute, PP_RECOMPUTE_FULL);
    assert_int_equal(r.recompute, PP_RECOMPUTE_FULL);
}

/* FlashAttention drops Korthikanti's 5 a s^2 b / t per layer and keeps
 * the fp32 log-sum-exp, 4 s b a / t: the difference is exactly that. */
static void test_flash_memory(void **state) {
    (void)state;
    pp_model m = model("layers=32,hidden=4096,heads=32,seq=8192,vocab=51200");
    pp_parallel s = par("tp=4,pp=1,dp=1,mbs=1,recompute=none,attn=standard");
    pp_parallel f = par("tp=4,pp=1,dp=1,mbs=1,recompute=none,attn=flash");
    assert_true(f.flash && !s.flash);
    pp_memory ms, mf;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_memory_per_gpu(&m, &s, PP_OPT_ADAM_MIXED, &ms, &e), 0);
    assert_int_equal(pp_memory_per_gpu(&m, &f, PP_OPT_ADAM_MIXED, &mf, &e), 0);
    double S = 8192, a = 32, t = 4, L = 32;
    double per = (5.0 * a * S * S - 4.0 * S * a) / t;
    assert_rel(ms.activations_per_layer - mf.activations_per_layer, per, 1e-9);
    assert_rel(ms.activations - mf.activations, per * L, 1e-9);
    /* The SPEC reads back with attn= only when given. */
    char buf[256];
    assert_non_null(
        strstr(pp_parallel_format(&f, buf, sizeof buf), "attn=flash"));
    pp_parallel d = par("tp=4");
    assert_null(strstr(pp_parallel_format(&d, buf, sizeof buf), "attn"));
}

/* FP8: +2 bytes per parameter (FP8 weight and transpose), -7 s b h per
 * layer at t = 1 (the four GEMM inputs halved: 2+2+2+8 -> /2). */
static void test_fp8_memory(void **state) {
    (void)state;
    pp_model m = model("layers=8,hidden=2048,heads=16,seq=2048,vocab=51200");
    pp_parallel b = par("tp=1,mbs=2,recompute=selective");
    pp_parallel q = par("tp=1,mbs=2,recompute=selective,dtype=fp8");
    pp_memory mb, mq;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_memory_per_gpu(&m, &b, PP_OPT_ADAM_MIXED, &mb, &e), 0);
    assert_int_equal(pp_memory_per_gpu(&m, &q, PP_OPT_ADAM_MIXED, &mq, &e), 0);
    assert_rel(mq.weights - mb.weights, 2.0 * mb.params_per_gpu, 1e-12);
    assert_rel(mb.activations_per_layer - mq.activations_per_layer,
               7.0 * 2048 * 2 * 2048, 1e-12);
    pp_parallel bad;
    pp_parallel_init(&bad);
    /* fp4 is a dtype since NVFP4 (test_fp4); fp6 is none. */
    assert_int_equal(pp_parallel_parse("dtype=fp6", &bad, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, "dtype"));
}

/* The attention core's time with FlashAttention is its causal FLOPs
 * (2 s^2 d per head forward, 2.5x backward) at the profile's rate for a
 * kernel of that size. */
static void test_flash_time(void **state) {
    (void)state;
    pp_gpu_profile g = prof("h100-sxm5", NULL);
    pp_model m = model("layers=32,hidden=4096,heads=32,seq=8192,vocab=51200");
    pp_parallel s = par("tp=2,mbs=1,recompute=none,attn=standard");
    pp_parallel f = par("tp=2,mbs=1,recompute=none,attn=flash");
    pp_layer_cost cs, cf;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_layer_cost_get(&g, &m, &s, &cs, &e), 0);
    assert_int_equal(pp_layer_cost_get(&g, &m, &f, &cf, &e), 0);
    assert_true(cf.fwd_s < cs.fwd_s && cf.bwd_s < cs.bwd_s);
    double heads = 16, S = 8192, d = 128;
    double ff = 2.0 * heads * S * S * d;
    double tf = ff / (g.peak_flops * pp_flash_efficiency(&g, false, ff, d)) /
                    g.framework_efficiency +
                g.launch_s;
    /* The standard forward's attention core, from its own kernel list,
     * is what flash replaced: the rest of the layer is unchanged. */
    pp_parallel s0 = s;
    (void)s0;
    assert_true(cf.fwd_s > tf);
    double rest_f = cf.fwd_s - tf;
    assert_true(rest_f > 0 && rest_f < cs.fwd_s);
}

/* FP8 GEMMs on H100 run at the FP8 rate: the four linear GEMMs of GPT-3
 * 175B at TP 8 measured on one H100 (calibrate/examples/h100/gemm-gpt3-
 * tp8-fp8.json), which gemm.fp8_efficiency and fp8_k_half were fitted
 * to: each within 10%, rms within 5% (fit: 4.6%). */
static void test_fp8_gemm(void **state) {
    (void)state;
    pp_gpu_profile g = prof("h100-sxm5", NULL);
    g.framework_efficiency = 1;
    static const struct {
        double m, n, k, meas_s;
    } rows[] = {{2048, 4608, 12288, 165.68e-6},
                {2048, 12288, 1536, 67.74e-6},
                {2048, 6144, 12288, 223.52e-6},
                {2048, 12288, 6144, 253.38e-6}};
    double ss = 0;
    for (int i = 0; i < 4; i++) {
        double t =
            pp_gemm_time_prec_s(&g, true, 1, rows[i].m, rows[i].n, rows[i].k);
        double err = (t - rows[i].meas_s) / rows[i].meas_s;
        if (fabs(err) > 0.10) fail_msg("row %d: error %+.1f%%", i, 100 * err);
        ss += err * err;
        assert_true(t < pp_gemm_time_s(&g, 1, rows[i].m, rows[i].n, rows[i].k));
    }
    assert_true(sqrt(ss / 4) < 0.05);
}

/* ZeRO-3 as implemented: with a stack that gathers layer by layer on
 * its own stream (pytorch-fsdp2, one layer ahead) the exposed DP time is
 * below that of one that gathers on the compute stream
 * (deepspeed-zero-2021), and both are far below the whole gathered
 * volume's time.  The planner's closed form agrees with the simulation
 * within 3% of the iteration (flow fidelity; 1 to 4 micro-batches;
 * FSDP2 6%, below). */
static double z3_run(const char *stack, const char *spec, pp_cluster *c,
                     const pp_model *m, double *est, pp_breakdown *bd) {
    pp_error e = PP_ERROR_INIT;
    const pp_cluster_info *info = pp_cluster_info_get(c);
    pp_gpu_profile g;
    if (pp_profile_load_stack(NULL, info->gpu, stack, &g, NULL, &e))
        fail_msg("%s", e.msg);
    pp_parallel p = par(spec);
    pp_stack_resolve(&g, &p);
    pp_step_config cfg;
    pp_step_config_init(&cfg);
    cfg.model = m;
    cfg.par = &p;
    cfg.cluster = c;
    cfg.profile = &g;
    cfg.grad_bytes = g.sw.grad_reduce_bytes;
    cfg.bucket_bytes = g.sw.bucket_bytes;
    cfg.p2p_sync = g.sw.p2p_sync;
    cfg.p2p_scatter = g.sw.p2p_scatter;
    return sim_and_estimate(&cfg, est, bd);
}

/* One iteration under profile g (its stack's DP and p2p choices), and
 * the estimator's figure for the same layout. */
static double run_prof(pp_gpu_profile *g, const char *spec, pp_cluster *c,
                       const pp_model *m, double *est, pp_breakdown *bd) {
    pp_parallel p = par(spec);
    pp_stack_resolve(g, &p);
    pp_step_config cfg;
    pp_step_config_init(&cfg);
    cfg.model = m;
    cfg.par = &p;
    cfg.cluster = c;
    cfg.profile = g;
    pp_step_config_stack(&cfg, &g->sw);
    return sim_and_estimate(&cfg, est, bd);
}

/* The NeMo stacks' overlaps, each switched off in turn on Llama 3 70B
 * (tp 4, pp 8, vp 5, dp 2, ZeRO-1, FP8) on 8 DGX H100 nodes.
 * - tensor_parallel.overlap_comm: the GEMMs the collectives hide under
 *   stay compute (the same compute time), the TP communication left is
 *   what outlasts them: under a fifth here (NVLink all-gathers and
 *   reduce-scatters are shorter than the GEMMs beside them).
 * - data_parallel.overlap_param_gather: ZeRO's parameter all-gather
 *   moves under the next forward: less exposed DP time, a shorter step.
 * The estimator follows the simulator within 10% either way. */
static void test_nemo_overlaps(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    const char *sets[] = {"node.count=8"};
    pp_cluster *c = NULL;
    if (pp_cluster_load("dgx-h100-ndr", sets, 1, NULL, &c, &e))
        fail_msg("%s", e.msg);
    pp_model m = model("llama3-70b");
    const char *spec = "tp=4,pp=8,dp=2,vp=5,mbs=1,gbs=32,sp=on,zero=1,"
                       "dtype=fp8";
    pp_gpu_profile on = prof("h100-sxm5", "nemo-2025");
    assert_true(on.sw.tp_overlap && on.sw.param_gather_overlap);
    pp_gpu_profile no_tp = on, no_pag = on;
    no_tp.sw.tp_overlap = false;
    no_pag.sw.param_gather_overlap = false;
    pp_breakdown b_on, b_tp, b_pag;
    double e_on, e_tp, e_pag;
    double t_on = run_prof(&on, spec, c, &m, &e_on, &b_on);
    double t_tp = run_prof(&no_tp, spec, c, &m, &e_tp, &b_tp);
    double t_pag = run_prof(&no_pag, spec, c, &m, &e_pag, &b_pag);
    printf("llama3-70b: %.4f s; TP overlap off %.4f s (tp comm %.4f -> "
           "%.4f s); param gather overlap off %.4f s (dp exposed %.4f -> "
           "%.4f s); estimates %.4f %.4f %.4f s\n",
           t_on, t_tp, b_tp.tp_comm_s, b_on.tp_comm_s, t_pag,
           b_pag.dp_comm_exposed_s, b_on.dp_comm_exposed_s, e_on, e_tp, e_pag);
    /* The same kernels; only what the DP collectives' kernels cost the
     * compute they meet (compute_beside_nccl) moves with the timing. */
    assert_rel(b_on.compute_s, b_tp.compute_s, 5e-3);
    assert_true(b_on.tp_comm_s < 0.2 * b_tp.tp_comm_s);
    assert_true(t_on < t_tp);
    assert_true(b_on.dp_comm_exposed_s < b_pag.dp_comm_exposed_s);
    assert_true(t_on < t_pag);
    assert_rel(e_on, t_on, 0.10);
    assert_rel(e_tp, t_tp, 0.10);
    assert_rel(e_pag, t_pag, 0.10);
    pp_cluster_free(c);
}

static void test_zero3(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = NULL;
    if (pp_cluster_load("dgx-h100-ndr", NULL, 0, NULL, &c, &e))
        fail_msg("%s", e.msg);
    pp_model m = model("llama2-7b");
    static const char *const specs[] = {
        "tp=1,pp=1,dp=16,mbs=1,gbs=16,recompute=full,zero=3,attn=flash",
        "tp=1,pp=1,dp=16,mbs=1,gbs=64,recompute=full,zero=3,attn=flash"};
    for (int i = 0; i < 2; i++) {
        double ef, ed;
        pp_breakdown bf, bdd;
        double tf = z3_run("pytorch-fsdp2", specs[i], c, &m, &ef, &bf);
        double td = z3_run("deepspeed-zero-2021", specs[i], c, &m, &ed, &bdd);
        assert_true(bf.dp_comm_exposed_s < bdd.dp_comm_exposed_s);
        /* 6%: FSDP2's per-micro-batch reductions slow the compute they
         * meet (compute_beside_nccl), which the estimator prices on the
         * hidden reduction time as a whole. */
        if (fabs(ef - tf) > 0.06 * tf) fail_msg("fsdp2 est %g sim %g", ef, tf);
        if (fabs(ed - td) > 0.03 * td)
            fail_msg("deepspeed-zero-2021 est %g sim %g", ed, td);
    }
    pp_cluster_free(c);
}

/* Validation, nothing tuned on it: NVIDIA NeMo's performance summary
 * (docs.nvidia.com/nemo-framework/user-guide/latest/performance/
 * performance_summary.html, NeMo 25.02, DGX-H100): GPT3-175B, FP8, 512
 * GPUs, GBS 2048, MBS 2, seq 2048, TP 4, PP 8, VP 6: 866 tokens/s/GPU.
 * Assumed where the table is silent: sequence parallelism, no
 * recomputation, the distributed optimizer (zero=1).  Simulated with
 * nemo-2025 (a 25.x container) on 64 DGX H100 nodes (dgx-h100-ndr with
 * node.count=64): 830.2 tokens/s/GPU, -4.1%; tolerance 5%.  The stack's
 * training-loop efficiency (0.86) was fitted on two other runs
 * (tests/validation); this one was not among them. */
static void test_nemo_gpt3_h100(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    const char *sets[] = {"node.count=64"};
    pp_cluster *c = NULL;
    if (pp_cluster_load("dgx-h100-ndr", sets, 1, NULL, &c, &e))
        fail_msg("%s", e.msg);
    pp_model m = model("gpt3-175b");
    pp_gpu_profile g = prof("h100-sxm5", "nemo-2025");
    pp_parallel p = par("tp=4,pp=8,dp=16,mbs=2,gbs=2048,vp=6,sp=on,"
                        "recompute=none,zero=1,dtype=fp8");
    pp_stack_resolve(&g, &p);
    pp_step_config cfg;
    pp_step_config_init(&cfg);
    cfg.model = &m;
    cfg.par = &p;
    cfg.cluster = c;
    cfg.profile = &g;
    pp_step_config_stack(&cfg, &g.sw);
    pp_step_result r;
    if (pp_step_simulate(&cfg, &r, &e)) fail_msg("%s", e.msg);
    double tok = 2048.0 * 2048.0 / r.iteration_time_s / 512.0;
    printf("GPT3-175B FP8 on 512 H100: %.1f tokens/s/GPU (NeMo: 866, "
           "%+.1f%%)\n",
           tok, 100 * (tok / 866 - 1));
    assert_rel(tok, 866, 0.05);
    pp_step_result_fini(&r);
    pp_cluster_free(c);
}

/* Mean |error| of the H100 profile's attention against one probe file's
 * cuDNN kernels slower than 0.25 ms, forward (bwd 0) or backward; of head
 * dim `dim` only where not 0, the kernel named `shape` only where not
 * NULL. */
static double attn_error(const pp_gpu_profile *g, const char *file, int bwd,
                         double dim, const char *shape, int *n) {
    json_error_t je;
    json_t *j = json_load_file(file, 0, &je);
    if (!j) fail_msg("%s: %s", file, je.text);
    double sum = 0;
    size_t i;
    json_t *r;
    *n = 0;
    json_array_foreach(json_object_get(j, "results"), i, r) {
        const char *be = json_string_value(json_object_get(r, "backend"));
        if (!be || strcmp(be, "cudnn") != 0) continue;
        double d = json_number_value(json_object_get(r, "head_dim"));
        const char *name = json_string_value(json_object_get(r, "shape"));
        if ((dim > 0 && d != dim) || (shape && strcmp(name, shape) != 0))
            continue;
        double f = 2.0 * json_number_value(json_object_get(r, "batch")) *
                   json_number_value(json_object_get(r, "heads")) *
                   pow(json_number_value(json_object_get(r, "seq")), 2) *
                   json_number_value(json_object_get(r, "head_dim")) *
                   (bwd ? 2.5 : 1.0);
        double t =
            json_number_value(json_object_get(r, bwd ? "bwd_ms" : "fwd_ms")) /
            1e3;
        if (t <= 0.25e-3) continue;
        double p = f / (g->peak_flops * pp_flash_efficiency(g, bwd, f, d)) +
                   g->launch_s;
        sum += fabs(p / t - 1);
        (*n)++;
    }
    json_decref(j);
    return *n ? sum / *n : 1.0;
}

/* The rate a FlashAttention kernel reaches grows with its size:
 * efficiency x F / (F + F_half), so a kernel of F_half FLOPs runs at half
 * the profile's efficiency, and a profile without F_half (A100's) at the
 * efficiency whatever the size.  H100's two pairs were fitted on one lent
 * H200 (cuDNN's fused attention, causal, bf16, head dim 128, 26 shapes of
 * 4 to 64 heads and sequences of 2048 to 16384, calibrate/examples/h200/
 * attn-torch.json): the shapes over 0.25 ms are reproduced within 10%
 * mean |error| (4.3% forward, 7.1% backward), which guards the fit.  The
 * same 26 shapes measured afterwards on a lent H100 (calibrate/examples/
 * h100/attn-torch.json), which the fit never saw, are held to the same
 * 10% (4.2% and 5.5%): the figures carry from the H200 to the H100.  The
 * constant rates they replaced (0.65 and 0.50, estimates from the
 * FlashAttention-3 paper) read 15.8% and 20.4% on the H200, all fast. */
static void test_flash_kernel_size(void **state) {
    (void)state;
    pp_gpu_profile a = prof("a100-sxm4-80gb", NULL);
    assert_true(pp_flash_efficiency(&a, false, 1e9, 128) ==
                a.flash_fwd_efficiency);
    assert_true(pp_flash_efficiency(&a, true, 1e13, 128) ==
                a.flash_bwd_efficiency);
    pp_gpu_profile g = prof("h100-sxm5", NULL);
    assert_true(g.flash_fwd_flops_half > 0 && g.flash_bwd_flops_half > 0);
    assert_rel(pp_flash_efficiency(&g, false, g.flash_fwd_flops_half, 128),
               0.5 * g.flash_fwd_efficiency, 1e-12);
    assert_true(pp_flash_efficiency(&g, true, 1e10, 128) <
                pp_flash_efficiency(&g, true, 1e12, 128));
    static const char *const files[] = {
        PODPLAN_SOURCE_DIR "/calibrate/examples/h200/attn-torch.json",
        PODPLAN_SOURCE_DIR "/calibrate/examples/h100/attn-torch.json"};
    for (int f = 0; f < 2; f++)
        for (int b = 0; b < 2; b++) {
            int n;
            double err = attn_error(&g, files[f], b, 128, NULL, &n);
            printf("H100 attention vs cuDNN on %s, %s: %.1f%% (%d)\n",
                   f ? "H100" : "H200", b ? "backward" : "forward",
                   100 * err, n);
            assert_true(n >= 12);
            assert_true(err <= 0.10);
        }
}

/* The seconds profile g gives a causal kernel of the shape of result r
 * (2 b h s^2 d FLOPs forward, 2.5 times that backward; in a window of w
 * keys 4 b h d (s w - w^2 / 2), as sim/train counts a windowed layer). */
static double flash_s(const pp_gpu_profile *g, json_t *r, int bwd) {
    double d = json_number_value(json_object_get(r, "head_dim"));
    double s = json_number_value(json_object_get(r, "seq"));
    double w = json_number_value(json_object_get(r, "window"));
    double bh = json_number_value(json_object_get(r, "batch")) *
                json_number_value(json_object_get(r, "heads"));
    double f = w > 0 && w < s ? 4.0 * bh * d * (s * w - w * w / 2.0)
                              : 2.0 * bh * s * s * d;
    f *= bwd ? 2.5 : 1.0;
    return f / (g->peak_flops * pp_flash_efficiency(g, bwd, f, d)) +
           g->launch_s;
}

/* Blackwell's attention rates rest on published kernel times: NVIDIA's
 * cudnn-frontend benchmarks time the same causal kernels (cuDNN 9.19.1:
 * batch 1, 64 heads of 128, 2K-32K; and GPT-OSS's, batch 2, 64 heads of
 * 64 in a 1,024-token window) on GB200, GB300 and H200
 * (calibrate/examples/published/).  Taken as each shape's ratio to the
 * H200, applied to H100's measured curve of that head dim (the one the
 * stacks' loop efficiencies were fitted with), they gave the GB200 and
 * GB300 profiles' figures; this holds them to that within 5% mean
 * |error| (the fits: 0.4-2.2% rms), which guards the fit.  B200 and B300
 * carry GB200's and GB300's by the GEMMs' achieved-rate ratio, which is
 * checked too. */
static void test_flash_blackwell(void **state) {
    (void)state;
    pp_gpu_profile h = prof("h100-sxm5", NULL);
    static const char *const gpus[] = {"gb200", "gb300"};
    static const char *const sets[] = {"", "oss-"};
    for (int k = 0; k < 4; k++) {
        pp_gpu_profile g = prof(gpus[k % 2], NULL);
        char path[512], rpath[512];
        snprintf(path, sizeof path,
                 PODPLAN_SOURCE_DIR
                 "/calibrate/examples/published/sdpa-cudnn919-%s%s.json",
                 sets[k / 2], gpus[k % 2]);
        snprintf(rpath, sizeof rpath,
                 PODPLAN_SOURCE_DIR
                 "/calibrate/examples/published/sdpa-cudnn919-%sh200.json",
                 sets[k / 2]);
        json_error_t je;
        json_t *a = json_load_file(path, 0, &je),
               *ref = json_load_file(rpath, 0, &je);
        assert_non_null(a);
        assert_non_null(ref);
        json_t *ra = json_object_get(a, "results");
        json_t *rr = json_object_get(ref, "results");
        assert_int_equal(json_array_size(ra), 5);
        assert_int_equal(json_array_size(rr), 5);
        for (int b = 0; b < 2; b++) {
            const char *key = b ? "bwd_ms" : "fwd_ms";
            double sum = 0;
            for (size_t i = 0; i < 5; i++) {
                json_t *x = json_array_get(ra, i), *y = json_array_get(rr, i);
                assert_string_equal(
                    json_string_value(json_object_get(x, "shape")),
                    json_string_value(json_object_get(y, "shape")));
                double want = flash_s(&h, y, b) *
                              json_number_value(json_object_get(x, key)) /
                              json_number_value(json_object_get(y, key));
                sum += fabs(flash_s(&g, x, b) / want - 1);
            }
            printf("%s %sattention vs H100's curve x the published ratio, "
                   "%s: %.1f%%\n",
                   gpus[k % 2], sets[k / 2], b ? "backward" : "forward",
                   100 * sum / 5);
            assert_true(sum / 5 <= 0.05);
        }
        json_decref(a);
        json_decref(ref);
    }
    /* B200 = GB200 and B300 = GB300 at 1,745 / 1,822 of the rate. */
    static const char *const pairs[][2] = {{"b200", "gb200"},
                                           {"b300", "gb300"}};
    for (int k = 0; k < 2; k++) {
        pp_gpu_profile x = prof(pairs[k][0], NULL), y = prof(pairs[k][1], NULL);
        for (int b = 0; b < 4; b++) {
            double f = 1e12, d = b < 2 ? 128 : 64;
            double rx = x.peak_flops * pp_flash_efficiency(&x, b % 2, f, d);
            double ry = y.peak_flops * pp_flash_efficiency(&y, b % 2, f, d);
            assert_rel(rx / ry, 1745.0 / 1822.0, 0.01);
        }
    }
}

/* Narrow heads run slower per FLOP.  Head dim 64's own figures
 * (attention.head_dim_64) were fitted on the 20 grid kernels of a lent
 * H100 (calibrate/examples/h100/attn-oss.json; tools/fit_attention.py
 * FILE --head-dim 64 --grid), so that they hold the head-dim-64 kernels
 * within 10% guards the fit; head dim 128's figures read over 15% fast on
 * them.  Not fitted: GPT-OSS 120B's own kernel (batch 4, 64 query heads
 * on 8 K/V heads of 4096), within 10% each way; and the file's head-dim-
 * 128 grid, measured in the same run, within 10% under 128's figures.
 * Between 64 and 128 the four figures interpolate; a profile without
 * head_dim_64 and head_dim_192 (A100's) prices every head dim alike. */
static void test_flash_head_dim(void **state) {
    (void)state;
    const char *file =
        PODPLAN_SOURCE_DIR "/calibrate/examples/h100/attn-oss.json";
    pp_gpu_profile g = prof("h100-sxm5", NULL), w = g;
    assert_true(g.flash_d64_fwd_efficiency > 0);
    w.flash_d64_fwd_efficiency = 0; /* head dim 128's figures for all */
    for (int b = 0; b < 2; b++) {
        int n, n2;
        double e64 = attn_error(&g, file, b, 64, NULL, &n);
        double wide = attn_error(&w, file, b, 64, NULL, &n2);
        assert_int_equal(n, n2);
        double oss = attn_error(&g, file, b, 64, "gpt-oss-120b-tp1", &n2);
        assert_int_equal(n2, 1);
        double e128 = attn_error(&g, file, b, 128, NULL, &n2);
        printf("H100 attention, %s: head dim 64 %.1f%% (%d; under 128's "
               "figures %.1f%%), GPT-OSS 120B's kernel %.1f%%, head dim "
               "128 %.1f%% (%d)\n",
               b ? "backward" : "forward", 100 * e64, n, 100 * wide, 100 * oss,
               100 * e128, n2);
        assert_true(n >= 9 && n2 >= 12);
        assert_true(e64 <= 0.10 && oss <= 0.10 && e128 <= 0.10);
        assert_true(wide > 0.15);
    }
    double e64 = pp_flash_efficiency(&g, false, 1e12, 64);
    double e96 = pp_flash_efficiency(&g, false, 1e12, 96);
    double e128 = pp_flash_efficiency(&g, false, 1e12, 128);
    double eff = 0.5 * (g.flash_d64_fwd_efficiency + g.flash_fwd_efficiency);
    double half = 0.5 * (g.flash_d64_fwd_flops_half + g.flash_fwd_flops_half);
    assert_rel(e96, eff * 1e12 / (1e12 + half), 1e-12);
    assert_true(e64 < e96 && e96 < e128);
    assert_true(pp_flash_efficiency(&g, true, 1e12, 32) ==
                pp_flash_efficiency(&g, true, 1e12, 64));
    pp_gpu_profile a = prof("a100-sxm4-80gb", NULL);
    assert_true(pp_flash_efficiency(&a, false, 1e12, 64) ==
                pp_flash_efficiency(&a, false, 1e12, 128));
    assert_true(pp_flash_efficiency(&a, true, 1e12, 192) ==
                pp_flash_efficiency(&a, true, 1e12, 128));
}

/* Wide heads: head dim 192's figures (attention.head_dim_192), fitted
 * on the 20 grid kernels of a third lent-H100 run (calibrate/examples/
 * h100/attn-wide.json), hold their backward kernels within 10% (a guard
 * of the fit), where head dim 128's read over 25% fast.  Not fitted:
 * DeepSeek-V3's multi-latent attention core (Q and K 192 wide, V 128,
 * which podplan counts as head dim 160, half-way), within 5% each way
 * at TP 1 and 2 (it was 18-19% fast in the backward); and the same run's
 * head-dim-128 grid under 128's figures, within 10%. */
static void test_flash_wide_heads(void **state) {
    (void)state;
    const char *file =
        PODPLAN_SOURCE_DIR "/calibrate/examples/h100/attn-wide.json";
    pp_gpu_profile g = prof("h100-sxm5", NULL), w = g;
    assert_true(g.flash_d192_fwd_efficiency > 0);
    w.flash_d192_fwd_efficiency = 0;
    for (int b = 0; b < 2; b++) {
        int n, n2;
        double e192 = attn_error(&g, file, b, 192, NULL, &n);
        double wide = attn_error(&w, file, b, 192, NULL, &n2);
        assert_int_equal(n, n2);
        double e128 = attn_error(&g, file, b, 128, NULL, &n2);
        assert_true(n >= 12 && n2 >= 11);
        assert_true(e192 <= 0.10 && e128 <= 0.10);
        if (b) assert_true(wide > 0.25);
        const char *mla[] = {"deepseek-v3-tp1", "deepseek-v3-tp2"};
        for (int k = 0; k < 2; k++) {
            int m;
            double ds = attn_error(&g, file, b, 160, mla[k], &m);
            double was = attn_error(&w, file, b, 160, mla[k], &m);
            assert_int_equal(m, 1);
            printf("H100 attention, %s: %s %.1f%% (under 128's figures "
                   "%.1f%%)\n",
                   b ? "backward" : "forward", mla[k], 100 * ds, 100 * was);
            assert_true(ds <= 0.05);
        }
        printf("H100 attention, %s: head dim 192 %.1f%% (%d; under 128's "
               "figures %.1f%%), head dim 128 %.1f%% (%d)\n",
               b ? "backward" : "forward", 100 * e192, n, 100 * wide,
               100 * e128, n2);
    }
    double e160 = pp_flash_efficiency(&g, true, 1e12, 160);
    double eff = 0.5 * (g.flash_d192_bwd_efficiency + g.flash_bwd_efficiency);
    double half = 0.5 * (g.flash_d192_bwd_flops_half + g.flash_bwd_flops_half);
    assert_rel(e160, eff * 1e12 / (1e12 + half), 1e-12);
    assert_true(pp_flash_efficiency(&g, true, 1e12, 256) ==
                pp_flash_efficiency(&g, true, 1e12, 192));
}

/* The FlashAttention kernel alone: changing its efficiency moves the
 * layer's forward by F/peak x (1/e1 - 1/e2) / loop efficiency, with F the
 * causal 2 s^2 d per head, and its backward by 2.5 times that F. */
static void test_flash_closed_form(void **state) {
    (void)state;
    pp_gpu_profile g = prof("a100-sxm4-80gb", NULL);
    pp_model m = model("layers=8,hidden=4096,heads=32,seq=4096,vocab=51200");
    pp_parallel f = par("tp=2,mbs=1,recompute=none,attn=flash");
    pp_layer_cost c1, c2;
    pp_error e = PP_ERROR_INIT;
    g.flash_fwd_efficiency = g.flash_bwd_efficiency = 0.5;
    assert_int_equal(pp_layer_cost_get(&g, &m, &f, &c1, &e), 0);
    g.flash_fwd_efficiency = g.flash_bwd_efficiency = 0.25;
    assert_int_equal(pp_layer_cost_get(&g, &m, &f, &c2, &e), 0);
    double F = 2.0 * (32.0 / 2) * 4096.0 * 4096.0 * 128.0;
    double d = F / g.peak_flops * (1 / 0.25 - 1 / 0.5) / g.framework_efficiency;
    assert_rel(c2.fwd_s - c1.fwd_s, d, 1e-9);
    assert_rel(c2.bwd_s - c1.bwd_s, 2.5 * d, 1e-9);
    /* And its FLOPs are the causal ones: half of the two bmms'. */
    pp_parallel s = par("tp=2,mbs=1,recompute=none,attn=standard");
    pp_layer_cost cs;
    assert_int_equal(pp_layer_cost_get(&g, &m, &s, &cs, &e), 0);
    assert_rel(cs.fwd_flops - c1.fwd_flops, F, 1e-9);
}

/* FP8 on H100: the layer's forward moves by exactly the four linear
 * GEMMs' 16-bit minus FP8 times, less the casts of their inputs (m x k
 * elements at the stack's cast_bytes). */
static void test_fp8_closed_form(void **state) {
    (void)state;
    pp_gpu_profile g = prof("h100-sxm5", NULL);
    pp_model m = model("layers=8,hidden=4096,heads=32,seq=2048,vocab=51200");
    pp_parallel b = par("tp=2,mbs=1,recompute=none,attn=flash");
    pp_parallel q = par("tp=2,mbs=1,recompute=none,attn=flash,dtype=fp8");
    pp_layer_cost cb, cq;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_layer_cost_get(&g, &m, &b, &cb, &e), 0);
    assert_int_equal(pp_layer_cost_get(&g, &m, &q, &cq, &e), 0);
    static const double mnk[4][3] = {{2048, 6144, 4096},
                                     {2048, 4096, 2048},
                                     {2048, 8192, 4096},
                                     {2048, 4096, 8192}};
    double want = 0;
    for (int i = 0; i < 4; i++) {
        const double *x = mnk[i];
        want += pp_gemm_time_s(&g, 1, x[0], x[1], x[2]) -
                pp_gemm_time_prec_s(&g, true, 1, x[0], x[1], x[2]) -
                pp_memop_time_s(&g, g.fp8_cast_bytes * x[0] * x[2]);
    }
    assert_true(want > 0);
    assert_rel(cb.fwd_s - cq.fwd_s, want, 1e-9);
}

/* ZeRO-2 under a stack that overlaps its reductions (nemo-2025's
 * zero.overlap), where the DP links cannot keep up: each micro-batch's
 * gradient reduce-scatter (a 4B-parameter stage, ~8 GB in bf16, over 8
 * ranks on two servers) outlasts its backward (seq 1024), so the queue of
 * them, not one, is what the step waits for.  The estimator once counted
 * one reduction exposed here and ranked such layouts first; it now
 * follows the simulator within 15%. */
static void test_zero2_queue(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    const char *sets[] = {"node.count=2"};
    pp_cluster *c = NULL;
    if (pp_cluster_load("dgx-h100-ndr", sets, 1, NULL, &c, &e))
        fail_msg("%s", e.msg);
    pp_model m = model("layers=32,hidden=4096,heads=32,kv_heads=8,"
                       "ffn_hidden=14336,ffn=swiglu,seq=1024,vocab=128256");
    pp_gpu_profile g = prof("h100-sxm5", "nemo-2025");
    assert_true(g.zero3_overlap);
    pp_breakdown b1, b2;
    double e1, e2;
    double t1 =
        run_prof(&g, "tp=1,pp=2,dp=8,mbs=1,gbs=64,zero=1", c, &m, &e1, &b1);
    double t2 =
        run_prof(&g, "tp=1,pp=2,dp=8,mbs=1,gbs=64,zero=2", c, &m, &e2, &b2);
    printf("zero 1: %.4f s (estimate %.4f); zero 2: %.4f s (estimate %.4f), "
           "DP exposed %.4f s\n",
           t1, e1, t2, e2, b2.dp_comm_exposed_s);
    assert_true(t2 > 1.3 * t1);
    assert_rel(e2, t2, 0.15);
    assert_true(e2 > 1.3 * e1);
    pp_cluster_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped),
        cmocka_unit_test(test_broken),
        cmocka_unit_test(test_flash_memory),
        cmocka_unit_test(test_fp8_memory),
        cmocka_unit_test(test_flash_time),
        cmocka_unit_test(test_fp8_gemm),
        cmocka_unit_test(test_zero3),
        cmocka_unit_test(test_flash_closed_form),
        cmocka_unit_test(test_flash_kernel_size),
        cmocka_unit_test(test_flash_blackwell),
        cmocka_unit_test(test_flash_head_dim),
        cmocka_unit_test(test_flash_wide_heads),
        cmocka_unit_test(test_loss_fused),
        cmocka_unit_test(test_fp8_closed_form),
        cmocka_unit_test(test_nemo_gpt3_h100),
        cmocka_unit_test(test_recompute_default),
        cmocka_unit_test(test_nemo_overlaps),
        cmocka_unit_test(test_zero2_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
