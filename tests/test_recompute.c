/*
 * tests/test_recompute.c: Megatron-core's selective recompute modules
 * beyond the attention core (recompute=core_attn+layernorm+moe_act,
 * --recompute-modules): the SPEC value and its refusals, the memory the
 * modules free, the kernels they run again in the backward (simulator and
 * planner alike), the stacks that offer them, and plan --fix with the
 * launch flags.
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
#include "models_util.h"
#include "plan_util.h"
#include "podplan/planner.h"
#include "podplan/sim.h"
#include "podplan/train.h"

/* The value reads back in Megatron-core's order; core_attn alone is
 * selective; unpriced modules, repeats and impossible pairings are
 * refused with the reason. */
static void test_spec(void **state) {
    (void)state;
    char buf[PP_SPEC_MAX];
    struct {
        const char *in;
        pp_recompute r;
        uint8_t mods;
        const char *out;
    } ok[] = {
        {"layernorm+moe_act", PP_RECOMPUTE_NONE,
         PP_RECOMP_LAYERNORM | PP_RECOMP_MOE_ACT,
         "recompute=layernorm+moe_act"},
        {"moe_act+core_attn", PP_RECOMPUTE_SELECTIVE, PP_RECOMP_MOE_ACT,
         "recompute=core_attn+moe_act"},
        {"core_attn", PP_RECOMPUTE_SELECTIVE, 0, "recompute=selective"},
        {"layernorm", PP_RECOMPUTE_NONE, PP_RECOMP_LAYERNORM,
         "recompute=layernorm"},
        {"full", PP_RECOMPUTE_FULL, 0, "recompute=full"},
        {"shared_experts+moe_act+mlp", PP_RECOMPUTE_NONE,
         PP_RECOMP_SHARED | PP_RECOMP_MOE_ACT | PP_RECOMP_MLP,
         "recompute=moe_act+mlp+shared_experts"},
        {"moe+core_attn", PP_RECOMPUTE_SELECTIVE, PP_RECOMP_MOE,
         "recompute=core_attn+moe"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char s[96];
        snprintf(s, sizeof s, "dp=8,recompute=%s", ok[i].in);
        pp_parallel p = layout(s);
        assert_int_equal(p.recompute, ok[i].r);
        assert_int_equal(p.recompute_mods, ok[i].mods);
        assert_true(p.recompute_set);
        if (!strstr(pp_parallel_format(&p, buf, sizeof buf), ok[i].out))
            fail_msg("%s: got %s", ok[i].in, buf);
    }

    struct {
        const char *spec, *want;
    } bad[] = {
        {"dp=8,recompute=layernorm+mla_up",
         "--parallel: recompute: expected full, selective, none or modules "
         "joined by '+' (core_attn, layernorm, moe_act, mlp, moe, "
         "shared_experts, mla_up_proj)"},
        {"dp=8,recompute=moe_act+moe_act", "each once"},
        {"dp=8,recompute=full+layernorm", "expected full, selective, none or "
                                          "modules joined by '+'"},
        {"dp=8,recompute=", "expected full, selective, none"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pp_error e = PP_ERROR_INIT;
        pp_parallel p;
        pp_parallel_init(&p);
        assert_int_equal(pp_parallel_parse(bad[i].spec, &p, &e), PP_EINPUT);
        if (!strstr(e.msg, bad[i].want))
            fail_msg("%s: got \"%s\"", bad[i].spec, e.msg);
    }

    struct {
        const char *model, *spec, *want;
    } inval[] = {
        {"llama3-8b", "tp=1,dp=8,recompute=moe_act",
         "moe_act needs MoE layers, but model llama3-8b has no experts"},
        {"resnet50", "dp=8,recompute=layernorm", "generic"},
        {"llama3-8b", "tp=1,dp=8,recompute=layernorm,offload=4",
         "offload: needs recompute=none, got recompute=layernorm"},
        {"llama3-8b", "tp=1,dp=8,recompute=moe",
         "--parallel: recompute: moe needs MoE layers"},
        {"qwen3-30b-a3b", "tp=1,dp=8,ep=8,recompute=shared_experts",
         "shared_experts needs shared experts, but model qwen3-30b-a3b has "
         "none"},
        {"qwen3-30b-a3b", "tp=1,dp=8,ep=8,recompute=mlp",
         "mlp recomputes a dense layer's MLP, but every layer of "
         "qwen3-30b-a3b is MoE"},
        {"deepseek-v3", "tp=1,dp=8,ep=8,recompute=moe+shared_experts",
         "moe recomputes the whole MoE block, shared_experts with it"},
        {"qwen3-30b-a3b", "tp=1,dp=8,ep=8,recompute=moe_act+moe",
         "moe recomputes the whole MoE block, moe_act with it"},
        {"qwen3-30b-a3b", "tp=1,dp=8,ep=8,recompute=mla_up_proj",
         "mla_up_proj recomputes multi-head latent attention's up "
         "projections, but model qwen3-30b-a3b has no kv_lora_rank"},
    };
    for (size_t i = 0; i < sizeof inval / sizeof inval[0]; i++) {
        pp_model m = load(inval[i].model);
        pp_parallel p = layout(inval[i].spec);
        pp_error e = PP_ERROR_INIT;
        assert_int_equal(pp_parallel_validate(&p, &m, &e), PP_EINPUT);
        if (!strstr(e.msg, inval[i].want))
            fail_msg("%s: got \"%s\"", inval[i].spec, e.msg);
    }
    /* A struct filled by hand with full and modules. */
    pp_model m = load("llama3-8b");
    pp_parallel p = layout("tp=1,dp=8,recompute=full");
    p.recompute_mods = PP_RECOMP_LAYERNORM;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_parallel_validate(&p, &m, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, "full recomputes every module"));
}

/* What the modules free per layer: layernorm the two norms' outputs,
 * 2 x 2 s b h bytes (replicated over TP without sp, split with it);
 * moe_act the experts' activation output, 2 s b k fe / t bytes in each
 * MoE layer. */
static void test_memory(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    struct {
        const char *model, *base, *mods;
        double want; /* bytes freed per layer */
    } c[] = {
        /* Llama 3 8B: s 8192, h 4096, mbs 2. */
        {"llama3-8b", "tp=2,dp=4,mbs=2,gbs=16,zero=1", "layernorm",
         2.0 * 2.0 * 8192 * 2 * 4096},
        {"llama3-8b", "tp=2,dp=4,mbs=2,gbs=16,zero=1,sp=on", "layernorm",
         2.0 * 2.0 * 8192 * 2 * 4096 / 2},
        /* Qwen3-30B-A3B: s 4096, every layer MoE, top 8 of expert ffn
         * 768. */
        {"qwen3-30b-a3b", "tp=1,dp=8,ep=8,mbs=1,gbs=8", "moe_act",
         2.0 * 4096 * 8 * 768},
        /* GPT-OSS 120B: h 2880, top 4 of 2880, both modules; moe_act
         * also frees the clamped copy of fc1's output its glu_clamp
         * keeps (2 x 2880 16-bit elements a routed row). */
        {"gpt-oss-120b", "tp=1,dp=8,ep=8,mbs=1,gbs=8", "layernorm+moe_act",
         2.0 * 2.0 * 4096 * 2880 + 2.0 * 4096 * 4 * 2880 +
             4.0 * 4096 * 4 * 2880},
        /* A dense MLP's 15 s b h / t. */
        {"llama3-8b", "tp=2,dp=4,mbs=2,gbs=16,zero=1", "mlp",
         15.0 * 8192 * 2 * 4096 / 2},
        /* Qwen3-30B-A3B's MoE block: 15 x 8 x 768 / (4 x 2048) + 2 x 8
         * s b h. */
        {"qwen3-30b-a3b", "tp=1,dp=8,ep=8,mbs=1,gbs=8", "moe",
         (15.0 * 8 * 768 / (4.0 * 2048) + 16.0) * 4096 * 2048},
        /* DeepSeek-V3: 58 of 61 layers MoE, one shared expert of 2048 (h
         * 7168); its 3 dense layers' MLPs. */
        {"deepseek-v3", "tp=1,dp=8,ep=8,mbs=1,gbs=8", "shared_experts",
         58.0 / 61.0 * 15.0 * 2048 / (4.0 * 7168) * 4096 * 7168},
        {"deepseek-v3", "tp=1,dp=8,ep=8,mbs=1,gbs=8", "mlp",
         3.0 / 61.0 * 15.0 * 4096 * 7168},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        pp_model m = load(c[i].model);
        pp_parallel p;
        pp_memory a, b;
        char s[160];
        snprintf(s, sizeof s, "%s,recompute=none", c[i].base);
        p = layout(s);
        assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &a, &e),
                         0);
        snprintf(s, sizeof s, "%s,recompute=%s", c[i].base, c[i].mods);
        p = layout(s);
        assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &b, &e),
                         0);
        double got = a.activations_per_layer - b.activations_per_layer;
        if (fabs(got - c[i].want) > 1e-9 * c[i].want)
            fail_msg("%s %s: freed %.6g bytes, expected %.6g", c[i].model,
                     c[i].mods, got, c[i].want);
        assert_true(b.activations < a.activations);
        assert_true(fabs(a.model_states - b.model_states) < 1e-9);
    }
}

/* The backward runs each freed module's forward kernel again, at its
 * forward cost: the layer's recompute time is exactly those kernels (a
 * norm reads and writes 2 bytes per element of s b h; the GPT-OSS
 * experts' gated activation reads 4 and writes 2 per element of T k fe,
 * after its glu_clamp's clamps and cat, 16), and its forward and
 * backward proper are unchanged. */
static void test_layer_time(void **state) {
    (void)state;
    pp_gpu_profile g = load_gpu_profile("h100-sxm5", "nemo-2025");
    struct {
        const char *model, *base;
        double tokens, norm_bytes, act_bytes, clamp_bytes;
    } c[] = {
        {"llama3-8b", "tp=1,dp=8,mbs=1,gbs=8", 8192, 4.0 * 8192 * 4096, 0, 0},
        {"gpt-oss-120b", "tp=1,dp=8,ep=8,mbs=1,gbs=8", 4096, 4.0 * 4096 * 2880,
         6.0 * 4096 * 4 * 2880, 16.0 * 4096 * 4 * 2880},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        pp_error e = PP_ERROR_INIT;
        pp_model m = load(c[i].model);
        char s[160];
        snprintf(s, sizeof s, "%s,recompute=none", c[i].base);
        pp_parallel p0 = layout(s);
        snprintf(s, sizeof s, "%s,recompute=%s", c[i].base,
                 c[i].act_bytes > 0 ? "layernorm+moe_act" : "layernorm");
        pp_parallel p1 = layout(s);
        pp_stack_resolve(&g, &p0);
        pp_stack_resolve(&g, &p1);
        pp_layer_cost a, b;
        assert_int_equal(pp_layer_cost_get(&g, &m, &p0, &a, &e), 0);
        assert_int_equal(pp_layer_cost_get(&g, &m, &p1, &b, &e), 0);
        double want = 2.0 * pp_memop_time_s(&g, c[i].norm_bytes);
        if (c[i].act_bytes > 0) want += pp_memop_time_s(&g, c[i].act_bytes);
        if (c[i].clamp_bytes > 0) want += pp_memop_time_s(&g, c[i].clamp_bytes);
        print_message("%s: recompute %.1f us per layer, expected %.1f us\n",
                      c[i].model, 1e6 * b.recompute_s, 1e6 * want);
        assert_true(fabs(b.recompute_s - want) < 1e-9 * want);
        assert_true(a.recompute_s == 0);
        assert_true(fabs(a.fwd_s - b.fwd_s) < 1e-15);
        assert_true(fabs(a.bwd_s - b.bwd_s) < 1e-15);
        assert_true(b.recompute_flops == 0);
    }
}

/* Under FP8 the norms' consumers (QKV, a dense MLP's fc1) keep their
 * original input instead of its cast, so each weight gradient casts the
 * recomputed norm output again: Llama 3 8B at fp8 (nemo-2025's
 * tensorwise recipe) recomputes two norms and two casts of s b h. */
static void test_layer_time_fp8(void **state) {
    (void)state;
    pp_gpu_profile g = load_gpu_profile("h100-sxm5", "nemo-2025");
    pp_error e = PP_ERROR_INIT;
    pp_model m = load("llama3-8b");
    pp_parallel p =
        layout("tp=1,dp=8,mbs=1,gbs=8,dtype=fp8,recompute=layernorm");
    pp_stack_resolve(&g, &p);
    assert_int_equal(p.fp8_recipe, PP_FP8_TENSORWISE);
    pp_layer_cost lc;
    assert_int_equal(pp_layer_cost_get(&g, &m, &p, &lc, &e), 0);
    double sbh = 8192.0 * 4096.0;
    double want = 2.0 * pp_memop_time_s(&g, 4.0 * sbh) +
                  2.0 * pp_memop_time_s(&g, (g.fp8_cast_bytes + 2.0) * sbh);
    print_message("llama3-8b fp8: recompute %.1f us per layer, expected "
                  "%.1f us\n",
                  1e6 * lc.recompute_s, 1e6 * want);
    assert_true(fabs(lc.recompute_s - want) < 1e-9 * want);
}

/* The checkpointed blocks run their whole forward again: mlp a dense
 * MLP's two GEMMs and activation (Llama 3 8B), shared_experts the shared
 * expert's (DeepSeek-V3, one of 2048), moe the MoE block as
 * pp_moe_cost_get prices it, its dispatch and combine all-to-alls
 * included (Qwen3-30B-A3B). */
static void test_block_time(void **state) {
    (void)state;
    pp_gpu_profile g = load_gpu_profile("h100-sxm5", "nemo-2025");
    struct {
        const char *model, *base, *mods;
        double tok, n, k; /* the MLP's tokens, fc1 width (2 x), input */
    } c[] = {
        {"llama3-8b", "tp=1,dp=8,mbs=1,gbs=8", "mlp", 8192, 14336, 4096},
        {"deepseek-v3", "tp=1,dp=8,ep=8,mbs=1,gbs=8", "shared_experts", 4096,
         2048, 7168},
        {"qwen3-30b-a3b", "tp=1,dp=8,ep=8,mbs=1,gbs=8", "moe", 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        pp_error e = PP_ERROR_INIT;
        pp_model m = load(c[i].model);
        char s[160];
        snprintf(s, sizeof s, "%s,recompute=%s", c[i].base, c[i].mods);
        pp_parallel p = layout(s);
        pp_stack_resolve(&g, &p);
        pp_layer_cost lc;
        assert_int_equal(pp_layer_cost_get(&g, &m, &p, &lc, &e), 0);
        double want;
        if (c[i].tok > 0) {
            double t = c[i].tok, f = c[i].n, h = c[i].k;
            want = pp_gemm_time_s(&g, 1, t, 2.0 * f, h) +
                   pp_memop_time_s(&g, 6.0 * t * f) +
                   pp_gemm_time_s(&g, 1, t, h, f);
            assert_int_equal(lc.ep_recompute_colls, 0);
        } else {
            pp_layer_cost mc;
            assert_int_equal(pp_moe_cost_get(&g, &m, &p, &mc, &e), 0);
            want = mc.fwd_s;
            assert_int_equal(lc.ep_recompute_colls, 2); /* dispatch, combine */
        }
        print_message("%s %s: recompute %.1f us per layer, expected %.1f "
                      "us\n",
                      c[i].model, c[i].mods, 1e6 * lc.recompute_s, 1e6 * want);
        assert_true(fabs(lc.recompute_s - want) < 1e-9 * want);
        assert_true(lc.recompute_flops > 0);
    }
}

/* The hardware FLOPs of the recomputed GEMMs: a dense MLP's 3 matrices
 * (SwiGLU) per dense layer, an MoE block's router and top_k + shared
 * experts per MoE layer, the shared experts alone; none for the norms or
 * activations.  simulate's flops_per_iteration carries them. */
static void test_flops(void **state) {
    (void)state;
    pp_model l8 = load("llama3-8b"), q = load("qwen3-30b-a3b"),
             ds = load("deepseek-v3");
    double t8 = 8.0 * 8192, tq = 8.0 * 4096, td = 8.0 * 4096;
    assert_rel(pp_flops_recompute_mods(&l8, 8, PP_RECOMP_MLP),
               t8 * 32 * 3 * 2.0 * 4096 * 14336, 1e-12);
    assert_rel(pp_flops_recompute_mods(&q, 8, PP_RECOMP_MOE),
               tq * 48 * (2.0 * 2048 * 128 + 8 * 3 * 2.0 * 2048 * 768), 1e-12);
    /* DeepSeek-V3: 58 MoE layers and its MTP layer (MoE, as the last). */
    assert_rel(pp_flops_recompute_mods(&ds, 8, PP_RECOMP_SHARED),
               td * 59 * 3 * 2.0 * 7168 * 2048, 1e-12);
    assert_true(pp_flops_recompute_mods(
                    &q, 8, PP_RECOMP_LAYERNORM | PP_RECOMP_MOE_ACT) == 0);

    const char *cmd = "simulate --model llama3-8b --cluster dgx-h100-ndr --set "
                      "node.count=1 --stack nemo-2025 --memory-check off "
                      "--format json --parallel tp=1,dp=8,mbs=1,gbs=8,";
    json_t *ja = cli_json_ok("%srecompute=none", cmd),
           *jb = cli_json_ok("%srecompute=mlp", cmd);
    double fa = json_number_value(json_object_get(ja, "flops_per_iteration")),
           fb = json_number_value(json_object_get(jb, "flops_per_iteration")),
           ma = json_number_value(
               json_object_get(ja, "model_flops_per_iteration")),
           mb = json_number_value(
               json_object_get(jb, "model_flops_per_iteration"));
    assert_rel(fb - fa, pp_flops_recompute_mods(&l8, 8, PP_RECOMP_MLP), 1e-9);
    assert_true(ma == mb);
    json_decref(ja);
    json_decref(jb);

    /* podplan flops takes the modules too, and names their term. */
    ja = cli_json_ok("flops --model llama3-8b --global-batch 8 --recompute "
                     "none --format json");
    jb = cli_json_ok("flops --model llama3-8b --global-batch 8 --recompute "
                     "layernorm+mlp --format json");
    fa = json_number_value(json_object_get(ja, "flops_per_iteration"));
    fb = json_number_value(json_object_get(jb, "flops_per_iteration"));
    assert_rel(fb - fa, pp_flops_recompute_mods(&l8, 8, PP_RECOMP_MLP), 1e-9);
    assert_string_equal(json_string_value(json_object_get(jb, "recompute")),
                        "layernorm+mlp");
    assert_rel(json_number_value(json_object_get(json_object_get(jb, "terms"),
                                                 "recompute_modules")),
               fb - fa, 1e-9);
    json_decref(ja);
    json_decref(jb);
    cli_result a;
    cli_runf(&a, "flops --model llama3-8b --global-batch 8 --recompute moe");
    assert_int_equal(a.status, 2);
    assert_non_null(strstr(a.err, "--recompute: moe needs MoE layers"));
    cli_result_free(&a);
}

static cli_result sim(const char *par) {
    cli_result r;
    cli_runf(&r,
             "simulate --model qwen3-30b-a3b --cluster dgx-h100-ndr --set "
             "node.count=1 --stack nemo-2025 --parallel %s --format json",
             par);
    return r;
}

static double bd(json_t *j, const char *k) {
    return json_number_value(
        json_object_get(json_object_get(j, "breakdown"), k));
}

/* Qwen3-30B-A3B on one DGX H100 at dp 8, ep 8 does not fit without
 * recomputation (4.56GB short of the H100's 81,559 MiB); layernorm+moe (the
 * norms and the whole MoE block) frees enough, layernorm+moe_act no
 * longer since QK-norm's saved inputs count (stop 59).  The simulated iteration pays the recompute once per layer
 * and micro-batch: the compute grows by 48 layers x 4 micro-batches x the
 * layer's recompute time, as the planner's estimate says too. */
static void test_step(void **state) {
    (void)state;
    const char *base = "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=32,zero=1";
    char with[160], off[160];
    snprintf(with, sizeof with, "%s,recompute=layernorm+moe", base);
    snprintf(off, sizeof off, "%s --memory-check off", base);
    cli_result r = sim(base);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "does not fit in memory"));
    cli_result_free(&r);
    r = sim(off);
    assert_int_equal(r.status, 0);
    json_t *a = cli_json(&r);
    cli_result_free(&r);
    r = sim(with);
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    json_t *b = cli_json(&r);
    cli_result_free(&r);

    pp_gpu_profile g = load_gpu_profile("h100-sxm5", "nemo-2025");
    pp_error e = PP_ERROR_INIT;
    pp_model m = load("qwen3-30b-a3b");
    pp_parallel p = layout(with);
    pp_stack_resolve(&g, &p);
    pp_layer_cost lc;
    assert_int_equal(pp_layer_cost_get(&g, &m, &p, &lc, &e), 0);
    double want = 48.0 * 4.0 * lc.recompute_s;
    double got = bd(b, "compute_s") - bd(a, "compute_s");
    print_message("simulated compute +%.4f s, expected +%.4f s\n", got, want);
    assert_true(got > 0);
    assert_true(fabs(got - want) < 0.01 * want);
    double ma = json_number_value(json_object_get(a, "memory_per_gpu_bytes")),
           mb = json_number_value(json_object_get(b, "memory_per_gpu_bytes")),
           hbm = json_number_value(json_object_get(b, "gpu_memory_bytes"));
    print_message("memory %.2f GB -> %.2f GB of %.0f GB\n", ma / 1e9, mb / 1e9,
                  hbm / 1e9);
    assert_true(ma > hbm && mb <= hbm);

    pp_cluster *cc = NULL;
    assert_int_equal(pp_cluster_load("dgx-h100-ndr", NULL, 0, NULL, &cc, &e),
                     0);
    pp_plan_estimator *est = NULL;
    assert_int_equal(pp_plan_estimator_new(&m, cc, &g, &est, &e), 0);
    pp_parallel q = layout(base);
    pp_stack_resolve(&g, &q);
    double t0, t1;
    pp_breakdown b0, b1;
    assert_int_equal(pp_plan_estimate(est, &q, true, &t0, &b0, &e), 0);
    assert_int_equal(pp_plan_estimate(est, &p, true, &t1, &b1, &e), 0);
    print_message("estimated compute +%.4f s\n", b1.compute_s - b0.compute_s);
    assert_true(fabs((b1.compute_s - b0.compute_s) - want) < 0.01 * want);
    pp_plan_estimator_free(est);
    pp_cluster_free(cc);
    json_decref(a);
    json_decref(b);
}

/* Stacks list the modules they offer: NeMo 2025's has them, Megatron-core
 * 2024's (before --recompute-modules) has not. */
static void test_stacks(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "simulate --model qwen3-30b-a3b --cluster dgx-h100-ndr --set "
                 "node.count=1 --stack megatron-core-2024 --parallel "
                 "tp=1,pp=2,dp=4,ep=4,mbs=1,gbs=32,recompute=moe_act");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "recompute=moe_act: stack "
                                  "megatron-core-2024 does not offer it"));
    cli_result_free(&r);
    pp_stack st;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_stack_load("nemo-2025", &st, &e), 0);
    uint32_t mods = (PP_RECOMP_LAYERNORM | PP_RECOMP_MOE_ACT)
                    << PP_STACK_RECOMP_MOD;
    assert_int_equal(st.recompute & mods, mods);
}

/* plan --fix pins the modules on every candidate and writes them into the
 * launch: Megatron-LM's --recompute-modules, NeMo's recompute_modules. */
static void test_plan(void **state) {
    (void)state;
    /* Megatron-LM's launch under the H100's default stack (which does
     * not narrow a layout), NeMo's under nemo-2025. */
    const char *cmd = "plan --model qwen3-30b-a3b --cluster dgx-h100-ndr --set "
                      "node.count=2 --global-batch 64 "
                      "--fix recompute=layernorm+moe_act,tp=1,ep=8 --top 1";
    struct {
        const char *format, *want;
    } f[] = {
        {"megatron", "--recompute-granularity selective \\\n"
                     "    --recompute-modules layernorm moe_act"},
        {"nemo", "  activations_checkpoint_granularity: selective\n"
                 "  activations_checkpoint_method: null\n"
                 "  recompute_modules: [layernorm, moe_act]\n"},
        {"nemo2", "    recompute_granularity=\"selective\",\n"
                  "    recompute_modules=[\"layernorm\", \"moe_act\"],\n"},
        {"table", " ln+act "},
        {"json", "recompute=layernorm+moe_act"},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        cli_result r;
        cli_runf(&r, "%s --format %s%s", cmd, f[i].format,
                 strcmp(f[i].format, "megatron") ? " --stack nemo-2025" : "");
        if (r.status != 0)
            fail_msg("%s: exit %d: %s", f[i].format, r.status, r.err);
        if (!strstr(r.out, f[i].want))
            fail_msg("%s: no \"%s\" in:\n%s", f[i].format, f[i].want, r.out);
        cli_result_free(&r);
    }
    struct {
        const char *args, *want;
    } bad[] = {
        {"--model llama3-8b --fix recompute=moe_act",
         "--fix: recompute: moe_act needs MoE layers, but model llama3-8b "
         "has no experts"},
        {"--model llama3-8b --fix recompute=layernorm --format deepspeed",
         "--fix recompute=layernorm: DeepSpeed checkpoints whole layers"},
        {"--model llama3-8b --fix recompute=mla_up_proj",
         "--fix: recompute: mla_up_proj recomputes multi-head latent "
         "attention's up projections, but model llama3-8b has no "
         "kv_lora_rank"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cli_result r;
        cli_runf(&r,
                 "plan %s --cluster dgx-h100-ndr --set node.count=1 "
                 "--global-batch 32",
                 bad[i].args);
        assert_int_equal(r.status, 2);
        if (!strstr(r.err, bad[i].want))
            fail_msg("%s: got \"%s\"", bad[i].args, r.err);
        cli_result_free(&r);
    }
}

/* With a stack that offers them (nemo-2025) plan searches an MoE model's
 * module sets: on 2 DGX H100 with a 16% memory reserve (71.8 GB usable of
 * the H100's 85.5), Qwen3-30B-A3B's best layout recomputes the norms to
 * fit pp 1 at micro-batch 2 (ZeRO-3), faster than any layout without
 * modules; a set is kept only where every set with one module
 * fewer runs out of memory (recompute-unneeded), and a dense model's
 * modules are not searched. */
/* Two DGX H100, global batch 64, under nemo-2025 (which offers the
 * modules), 16% of HBM kept free so that memory binds. */
#define TWO_NODES                                                              \
    "--cluster dgx-h100-ndr --set node.count=2 --global-batch 64 --stack "     \
    "nemo-2025 --memory-reserve 16%"
/* 384 of them (3,072 GPUs), global batch 1536, the same reserve; the
 * stack is added. */
#define FULL_POD                                                               \
    "--cluster dgx-h100-ndr --set node.count=384 --gpus 3072 "                 \
    "--global-batch 1536 --memory-reserve 16%"

static double plan_best(const char *where, const char *args, char *spec,
                        size_t len, json_t **rejected) {
    json_t *j = cli_json_ok("plan %s --top 0 --format json %s", where, args),
           *c0 = json_array_get(json_object_get(j, "candidates"), 0);
    snprintf(spec, len, "%s",
             json_string_value(json_object_get(c0, "parallel")));
    double t = json_number_value(json_object_get(c0, "iteration_time_s"));
    *rejected = json_incref(json_object_get(j, "rejected"));
    json_decref(j);
    return t;
}

/* The best layout of the search (its module sets) against the best with
 * each base mode pinned (a pin of a base carries no modules, so nothing
 * is rejected as recompute-unneeded there): the search's must recompute
 * the norms and be faster. */
static void check_norms_win(const char *where, const char *model) {
    char a[PP_SPEC_MAX], b[PP_SPEC_MAX] = "";
    json_t *ra;
    double ta = plan_best(where, model, a, sizeof a, &ra);
    assert_true(json_integer_value(json_object_get(ra, "recompute-unneeded")) >
                0);
    json_decref(ra);
    double tb = INFINITY;
    const char *base[] = {"none", "selective", "full"};
    for (int k = 0; k < 3; k++) {
        char args[96], sk[PP_SPEC_MAX];
        snprintf(args, sizeof args, "%s --fix recompute=%s", model, base[k]);
        double t = plan_best(where, args, sk, sizeof sk, &ra);
        assert_true(
            json_integer_value(json_object_get(ra, "recompute-unneeded")) == 0);
        json_decref(ra);
        if (t < tb) {
            tb = t;
            snprintf(b, sizeof b, "%s", sk);
        }
    }
    print_message("best %s %.3f s; without modules %s %.3f s\n", a, ta, b, tb);
    assert_non_null(strstr(a, "recompute=layernorm"));
    assert_true(ta < tb);
}

static void test_plan_search(void **state) {
    (void)state;
    check_norms_win(TWO_NODES, "--model qwen3-30b-a3b");
}

/* A dense model's sets are the norms, the MLP and both.  Llama 3 70B on
 * 3,072 H100 at global batch 1536: under nemo-2025 the best layout
 * recomputes the norms (tp 4 x dp 768 at micro-batch 2 fits in 71.8 GB only
 * with them), faster than the best of each base mode pinned; under the
 * GPU's default stack (megatron-core-2024, no modules) none is tried. */
static void test_plan_search_dense(void **state) {
    (void)state;
    check_norms_win(FULL_POD " --stack nemo-2025", "--model llama3-70b");
    char a[PP_SPEC_MAX];
    json_t *ra;
    double td = plan_best(FULL_POD, "--model llama3-70b", a, sizeof a, &ra);
    assert_true(td > 0);
    assert_true(json_integer_value(json_object_get(ra, "recompute-unneeded")) ==
                0);
    assert_null(strstr(a, "layernorm"));
    json_decref(ra);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec),
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_layer_time),
        cmocka_unit_test(test_layer_time_fp8),
        cmocka_unit_test(test_block_time),
        cmocka_unit_test(test_flops),
        cmocka_unit_test(test_step),
        cmocka_unit_test(test_stacks),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_plan_search),
        cmocka_unit_test(test_plan_search_dense),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
