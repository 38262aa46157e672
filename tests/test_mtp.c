/*
 * tests/test_mtp.c: multi-token prediction (pp_model.mtp_layers;
 * DeepSeek-V3 sec. 2.2, Megatron-core's --mtp-num-layers).  Its FLOPs
 * against Megatron-LM's formula written out here, its key's bad values,
 * the last stage's parameters and memory, and the simulator and the
 * planner's estimate: the modules' work lands on the last stage, and the
 * estimate follows the simulation.
 */
#include "models_util.h"

#include "plan_util.h"
#include "podplan/planner.h"
#include "podplan/sim.h"

/* Llama 3 8B's shape, inline, with and without one MTP module. */
#define L8                                                                     \
    "hidden=4096,heads=32,kv_heads=8,seq=8192,vocab=128256,"                   \
    "ffn=swiglu,ffn_hidden=14336"

/* Megatron-LM's num_floating_point_operations (training.py) adds, per
 * module: the layer (attention and MLP of the last layer's kind), its
 * norms and eh_proj (2h^2 multiply-adds per token; the norms' 3h are
 * element-wise, which podplan's count leaves out everywhere), and one
 * more pass through the output layer (2hV): x 3 (forward and backward),
 * x 2 (FLOPs per multiply-add).  Written out for Llama 3 8B. */
static void test_mtp_flops(void **state) {
    (void)state;
    pp_model a = load("layers=32," L8),
             b = load("layers=32," L8 ",mtp_layers=1");
    assert_int_equal(b.mtp_layers, 1);
    pp_flops fa, fb;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_flops_count(&a, 4, PP_RECOMPUTE_NONE, &fa, &e), 0);
    assert_int_equal(pp_flops_count(&b, 4, PP_RECOMPUTE_NONE, &fb, &e), 0);
    double h = 4096, kv = 1024, f = 14336, V = 128256, s = 8192, B = 4;
    double layer = h * (h + 2 * kv) + h * h + 3 * h * f; /* multiply-adds */
    double core = 2 * s * h; /* QK^T and PV, per token */
    double want = 6 * B * s * (layer + core + h * V + 2 * h * h);
    assert_rel(fb.model - fa.model, want, 1e-12);
    assert_rel(fb.total - fa.total, want, 1e-12);
    /* Not in the parameter count (the published totals leave it out). */
    assert_true(pp_model_params(&a) == pp_model_params(&b));
    /* Full recomputation runs the module's layer forward once more, the
     * output layer not. */
    assert_int_equal(pp_flops_count(&a, 4, PP_RECOMPUTE_FULL, &fa, &e), 0);
    assert_int_equal(pp_flops_count(&b, 4, PP_RECOMPUTE_FULL, &fb, &e), 0);
    assert_rel(fb.total - fa.total,
               want + 2 * B * s * (layer + core + 2 * h * h), 1e-12);

    /* DeepSeek-V3: the module's layer is an MoE layer (the last layer's
     * kind): MLA's projections (q down 7168 x 1536, q up 1536 x 128 x
     * 192, kv down 7168 x 576, kv up 512 x 128 x 256, out 128 x 128 x
     * 7168), 8 routed + 1 shared experts of 2048, the router. */
    pp_model ds = load("deepseek-v3"), ds0 = ds;
    ds0.mtp_layers = 0;
    assert_int_equal(pp_flops_count(&ds, 1, PP_RECOMPUTE_NONE, &fb, &e), 0);
    assert_int_equal(pp_flops_count(&ds0, 1, PP_RECOMPUTE_NONE, &fa, &e), 0);
    h = 7168, s = 4096, V = 129280;
    double mla =
        h * 1536 + 1536 * 128 * 192 + h * 576 + 512 * 128 * 256 + 128 * 128 * h;
    double moe = mla + 256 * h + 9 * 3 * h * 2048;
    core = 2 * s * 128 * 160;
    assert_rel(fb.model - fa.model, 6 * s * (moe + core + h * V + 2 * h * h),
               1e-12);
}

static void test_mtp_key(void **state) {
    (void)state;
    expect_model_error("layers=32," L8 ",mtp_layers=17",
                       "--model: mtp_layers: expected 0 to 16, got \"17\"");
    expect_model_error("layers=32," L8 ",mtp_layers=-1",
                       "mtp_layers: expected 0 to 16");
    expect_model_error("layers=32," L8 ",mtp_layers=one",
                       "mtp_layers: expected 0 to 16");
    /* In YAML, located (models_util.h's loader of YAML text). */
    pp_model m, before;
    memset(&m, 0x5a, sizeof m);
    before = m;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(model_from_text("mtp.yaml",
                                     "layers: 4\nhidden: 256\nheads: 4\n"
                                     "seq: 128\nvocab: 1000\nmtp_layers: 99\n",
                                     &m, &e),
                     PP_EINPUT);
    assert_contains(e.msg, "mtp.yaml:6:13: mtp_layers:");
    assert_memory_equal(&m, &before, sizeof m);
    /* A generic model has no layers to predict with. */
    pp_error_clear(&e);
    assert_int_equal(model_from_text("mtp.yaml",
                                     "arch: generic\nparams: 25e6\n"
                                     "flops_per_sample: 4.1e9\nmtp_layers: 1\n",
                                     &m, &e),
                     PP_EINPUT);
    assert_contains(e.msg, "mtp.yaml:4:1: mtp_layers:");
    assert_memory_equal(&m, &before, sizeof m);
    pp_model ok = load("layers=32," L8 ",mtp_layers=0");
    assert_int_equal(ok.mtp_layers, 0);
}

/* With one micro-batch in flight everywhere (gbs = dp), the last stage
 * is the most loaded: the module's layer (its activations too), its
 * projection and norms, a copy of the word table for its embedding, and
 * a second fp32 logits buffer. */
static void test_mtp_memory(void **state) {
    (void)state;
    pp_model a = load("layers=32," L8),
             b = load("layers=32," L8 ",mtp_layers=1");
    pp_parallel p = layout("tp=2,pp=4,dp=2,gbs=2,sp=on,zero=1,recompute=none");
    pp_memory ma, mb;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_memory_per_gpu(&a, &p, PP_OPT_ADAM_MIXED, &ma, &e), 0);
    assert_int_equal(pp_memory_per_gpu(&b, &p, PP_OPT_ADAM_MIXED, &mb, &e), 0);
    assert_int_equal(ma.stage, 3);
    assert_int_equal(mb.stage, 3);
    double h = 4096, kv = 1024, f = 14336, V = 128256;
    double layer = h * (h + 2 * kv) + h * h + 3 * h * f + 2 * h;
    assert_rel(mb.params_per_gpu - ma.params_per_gpu,
               (layer + 2 * h * h + 2 * h + V * h) / 2, 1e-12);
    /* One more layer's activations (8 of them before), one more logits
     * buffer (4 s b V / t). */
    assert_rel(mb.activations, ma.activations * 9.0 / 8.0, 1e-12);
    assert_rel(mb.buffers - ma.buffers, 4.0 * 8192 * V / 2, 1e-12);
}

/* The simulator puts the modules on the last stage: its compute grows by
 * the micro-batches times one module's fwd + bwd (its own part, a layer,
 * a pass through the output layer, as pp_*_cost_get price them), the
 * other stages' not at all; the estimate follows. */
static void test_mtp_simulate(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = load_cluster_set("dgx-h100-ndr", "node.count=2");
    pp_gpu_profile g = load_gpu_profile("h100-sxm5", NULL);
    pp_model a = load("layers=32," L8),
             b = load("layers=32," L8 ",mtp_layers=1");
    pp_parallel p = layout("tp=2,pp=4,dp=2,gbs=16,sp=on,zero=1");
    pp_stack_resolve(&g, &p);
    pp_step_config cfg;
    pp_step_config_init(&cfg);
    cfg.par = &p;
    cfg.cluster = c;
    cfg.profile = &g;
    pp_step_result ra, rb;
    cfg.model = &a;
    assert_int_equal(pp_step_simulate(&cfg, &ra, &e), 0);
    cfg.model = &b;
    assert_int_equal(pp_step_simulate(&cfg, &rb, &e), 0);
    pp_layer_cost lc, hc, mc;
    assert_int_equal(pp_layer_cost_get(&g, &b, &p, &lc, &e), 0);
    assert_int_equal(pp_head_cost_get(&g, &b, &p, &hc, &e), 0);
    assert_int_equal(pp_mtp_cost_get(&g, &b, &p, &mc, &e), 0);
    double nmb = pp_parallel_microbatches(&p);
    double module =
        lc.fwd_s + lc.bwd_s + hc.fwd_s + hc.bwd_s + mc.fwd_s + mc.bwd_s;
    for (size_t s = 0; s + 1 < ra.n_stages; s++)
        assert_rel(rb.stages[s].compute_s, ra.stages[s].compute_s, 1e-12);
    /* TP collectives overlapped with GEMMs count as compute: within 2%. */
    assert_rel(rb.stages[3].compute_s - ra.stages[3].compute_s, nmb * module,
               0.02);
    printf("llama3-8b shape on 16 H100: %.6f s, with one MTP module %.6f s "
           "(last stage compute %.4f -> %.4f s)\n",
           ra.iteration_time_s, rb.iteration_time_s, ra.stages[3].compute_s,
           rb.stages[3].compute_s);
    assert_true(rb.iteration_time_s > ra.iteration_time_s);
    /* The module's parameters and its table copy are the last stage's. */
    assert_rel(mc.params,
               2.0 * 4096 * 4096 / 2 + 2 * 4096 + 128256 * 4096 / 2.0, 1e-12);
    pp_step_result_fini(&ra);
    pp_step_result_fini(&rb);

    double est, t = sim_and_estimate(&cfg, &est, NULL);
    printf("simulated %.6f s, estimated %.6f s\n", t, est);
    assert_rel(est, t, 0.15);
    pp_cluster_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mtp_flops),
        cmocka_unit_test(test_mtp_key),
        cmocka_unit_test(test_mtp_memory),
        cmocka_unit_test(test_mtp_simulate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
