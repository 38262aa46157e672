/*
 * tests/test_moe_layer.c: podplan's MoE block (sim/train/moe.c) against
 * one measured MoE layer: Megatron-LM's MoE performance regression test
 * (tests/functional_tests/test_cases/common/moe_perf/, NVIDIA/Megatron-LM
 * @32f2c9cfdd167616597fbe628ce9f9d4d64de601: test_cases.py gives the
 * cases, __main__.py how they are timed, baseline.json the figures).
 *
 * What was measured: one MoELayer (router, all-to-all token dispatcher,
 * Transformer Engine grouped GEMM experts, shared expert) on 8 H100 with
 * EP 8, TP 1, seq 4096, mbs 1, BF16 (and FP8: below), routing forced
 * balanced, permute and router fusion on; forward and backward timed
 * apart with CUDA events, the mean of 20 iterations after 5 warm-up
 * ones, a long GEMM queued before each to hide the router's launch.  Two
 * proxies:
 *   mixtral   h 4096, 8 experts of 14336, top 2 (1 local expert)
 *   deepseek  h 7168, 32 experts of 2048, top 8, one shared expert of
 *             2048, sigmoid group-limited routing (4 local experts)
 *
 * podplan's figure: pp_moe_cost_get's compute (the kernels' rooflines
 * with the H100 profile) plus, per all-to-all, the flow-level all-to-all
 * of its bytes over the 8 GPUs of one DGX H100 (what the training
 * simulator runs); the stack is megatron-core-2024, whose training-loop
 * efficiency is 1.0: a single layer timed alone has no training loop, so
 * NeMo's fitted 0.84 does not apply.  Nothing here was fitted to these
 * figures.
 *
 * Tolerance: the targets (issue 15), mean |error| at most 5% and
 * each at most 10%, over the four BF16 figures with the all-to-all
 * dispatcher (the figures, not chosen for these).
 * Printed, not held to it: the DeepEP cases (added after: the DeepSeek
 * proxy's backward reads +14%, podplan's DeepEP is slower than the
 * measured one inside a server; the test checks only the saving's
 * direction, as measured), and the FP8 cases, which use the blockwise
 * recipe (1x128 / 128x128 scales, fp8=blockwise: its casts, but GEMMs at
 * the per-tensor FP8 rate, no blockwise rate being measured): podplan
 * reads 19-25% fast.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "coll_util.h"
#include "podplan/hw.h"
#include "podplan/models.h"
#include "podplan/sim.h"
#include "podplan/train.h"

static const char *const MIXTRAL =
    "name=mixtral-proxy,layers=1,hidden=4096,heads=8,seq=4096,vocab=32000,"
    "ffn_hidden=14336,ffn=swiglu,tied_embeddings=false,bias=false,"
    "experts=8,top_k=2,expert_ffn_hidden=14336";
static const char *const DEEPSEEK =
    "name=deepseek-proxy,layers=1,hidden=7168,heads=8,seq=4096,vocab=32000,"
    "ffn_hidden=2048,ffn=swiglu,tied_embeddings=false,bias=false,"
    "experts=32,top_k=8,expert_ffn_hidden=2048,shared_experts=1,"
    "expert_groups=8,group_top_k=4";

typedef struct moe_case {
    const char *name, *model, *dtype, *dispatcher;
    double fwd_ms, bwd_ms; /* baseline.json */
} moe_case;

static const moe_case CASES[] = {
    {"mixtral_a2a_tp1ep8_bf16", MIXTRAL, "bf16", "alltoall", 4.261713600158691,
     7.825059199333191},
    {"deepseek_a2a_tp1ep8_bf16", DEEPSEEK, "bf16", "alltoall",
     6.942623972892761, 10.452603197097778},
    {"mixtral_deepep_tp1ep8_bf16", MIXTRAL, "bf16", "deepep", 4.609353613853455,
     8.030219149589538},
    {"deepseek_deepep_tp1ep8_bf16", DEEPSEEK, "bf16", "deepep",
     5.424827194213867, 9.059416055679321},
    {"mixtral_a2a_tp1ep8_fp8", MIXTRAL, "fp8", "alltoall", 3.6756880044937135,
     6.719020819664001},
    {"deepseek_a2a_tp1ep8_fp8", DEEPSEEK, "fp8", "alltoall", 7.413806390762329,
     10.08771367073059},
};

/* The H100 profile under `stack`. */
static pp_gpu_profile h100(const char *stack) {
    pp_error e = PP_ERROR_INIT;
    pp_catalog *cat = NULL;
    pp_gpu_profile g;
    assert_int_equal(pp_catalog_load(NULL, &cat, &e), 0);
    if (pp_profile_load_stack(NULL, pp_catalog_gpu(cat, "h100-sxm5"), stack, &g,
                              NULL, &e))
        fail_msg("profile: %s", e.msg);
    pp_catalog_free(cat);
    return g;
}

/* podplan's forward and backward of one case, in ms. */
static void price(const pp_cluster *c, const pp_gpu_profile *g,
                  const moe_case *k, double *fwd_ms, double *bwd_ms) {
    pp_error e = PP_ERROR_INIT;
    pp_model m;
    pp_parallel p;
    char spec[128];
    /* The FP8 cases ran Transformer Engine's blockwise recipe. */
    snprintf(spec, sizeof spec,
             "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8,dtype=%s,dispatcher=%s%s",
             k->dtype, k->dispatcher,
             strcmp(k->dtype, "fp8") == 0 ? ",fp8=blockwise" : "");
    if (pp_model_load(k->model, &m, &e)) fail_msg("%s: %s", k->name, e.msg);
    pp_parallel_init(&p);
    if (pp_parallel_parse(spec, &p, &e)) fail_msg("%s: %s", k->name, e.msg);
    pp_stack_resolve(g, &p);
    pp_layer_cost lc;
    if (pp_moe_cost_get(g, &m, &p, &lc, &e)) fail_msg("%s: %s", k->name, e.msg);
    assert_int_equal(lc.ep_fwd_colls, 2); /* dispatch, combine */
    assert_int_equal(lc.ep_bwd_colls, 2);
    /* DeepEP inside one server sends a token once per rank holding one
     * of its experts (sim/train/step_group.c), the all-to-all dispatcher
     * once per expert. */
    double bytes = lc.ep_coll_bytes;
    if (p.deepep) bytes *= pp_model_moe_spread(&m, 8) / (double)m.top_k;
    pp_coll_result a2a = coll_run(c, PP_FIDELITY_FLOW, PP_COLL_ALLTOALL,
                                  PP_ALGO_RING, bytes, 8, NULL);
    *fwd_ms = 1e3 * (lc.fwd_s + lc.ep_fwd_colls * a2a.time_s);
    *bwd_ms = 1e3 * (lc.bwd_s + lc.ep_bwd_colls * a2a.time_s);
}

static void test_megatron_moe_layer(void **state) {
    (void)state;
    pp_gpu_profile g = h100("megatron-core-2024");
    pp_cluster *c = coll_load_cluster("dgx-h100-ndr");
    double sum = 0, worst = 0, t[4][2];
    int n = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const moe_case *k = &CASES[i];
        double f, b;
        price(c, &g, k, &f, &b);
        double ef = f / k->fwd_ms - 1, eb = b / k->bwd_ms - 1;
        bool fp8 = strcmp(k->dtype, "fp8") == 0;
        bool a2a = strcmp(k->dispatcher, "alltoall") == 0;
        printf("  %-27s fwd %5.2f ms (measured %5.2f, %+5.1f%%)  bwd %5.2f "
               "ms (measured %5.2f, %+5.1f%%)%s\n",
               k->name, f, k->fwd_ms, 100 * ef, b, k->bwd_ms, 100 * eb,
               fp8   ? "  [blockwise FP8]"
               : a2a ? ""
                     : "  [DeepEP]");
        if (i < 4) t[i][0] = f, t[i][1] = b;
        if (fp8 || !a2a) continue;
        sum += fabs(ef) + fabs(eb);
        worst = fmax(worst, fmax(fabs(ef), fabs(eb)));
        n += 2;
    }
    printf("  BF16, all-to-all dispatcher: mean |error| %.1f%%, max %.1f%% "
           "over %d figures\n",
           100 * sum / n, 100 * worst, n);
    pp_cluster_free(c);
    assert_true(sum / n <= 0.05);
    assert_true(worst <= 0.10);
    /* DeepEP, as measured: no cheaper for Mixtral (a token's 2 experts
     * are on 2 ranks either way), cheaper for the DeepSeek proxy (its 8
     * experts on at most 4 ranks under group-limited routing). */
    assert_true(t[2][0] == t[0][0] && t[2][1] == t[0][1]);
    assert_true(t[3][0] < t[1][0] - 0.5 && t[3][1] < t[1][1] - 0.5);
}

/* pp_moe_cost_get is the MoE block of pp_layer_cost_get's layer: its
 * parameters, FLOPs and all-to-alls are the layer's, less attention's;
 * and a dense model is refused. */
static void test_moe_cost_parts(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_gpu_profile g = h100(NULL);
    pp_model m;
    pp_parallel p;
    assert_int_equal(pp_model_load(DEEPSEEK, &m, &e), 0);
    pp_parallel_init(&p);
    assert_int_equal(
        pp_parallel_parse("tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8", &p, &e), 0);
    pp_layer_cost moe, layer;
    assert_int_equal(pp_moe_cost_get(&g, &m, &p, &moe, &e), 0);
    assert_int_equal(pp_layer_cost_get(&g, &m, &p, &layer, &e), 0);
    assert_int_equal(moe.ep_fwd_colls, layer.ep_fwd_colls);
    assert_int_equal(moe.ep_bwd_colls, layer.ep_bwd_colls);
    assert_true(moe.ep_coll_bytes == layer.ep_coll_bytes);
    assert_true(moe.fwd_s > 0 && moe.fwd_s < layer.fwd_s);
    assert_true(moe.bwd_s > moe.fwd_s && moe.bwd_s < layer.bwd_s);
    /* Router 7168 x 32, shared 3 x 7168 x 2048, 4 local experts of it. */
    double mlp = 3.0 * 7168 * 2048;
    assert_true(fabs(moe.params - (7168.0 * 32 + mlp + 4 * mlp)) < 0.5);
    /* FLOPs, forward: router, the k = 8 routed copies of 4096 tokens
     * through an expert, the shared expert on the 4096. */
    double f = 2.0 * 4096 * 7168 * 32 + 8 * 4096 * 2.0 * mlp + 4096 * 2.0 * mlp;
    assert_true(fabs(moe.fwd_flops / f - 1) < 1e-12);

    pp_model dense;
    assert_int_equal(pp_model_load("llama3-8b", &dense, &e), 0);
    pp_parallel_init(&p);
    assert_int_equal(pp_parallel_parse("tp=1,pp=1,dp=8,mbs=1,gbs=8", &p, &e),
                     0);
    assert_int_equal(pp_moe_cost_get(&g, &dense, &p, &moe, &e), PP_EINVAL);
    assert_non_null(strstr(e.msg, "no experts"));
}

/* The local experts are a grouped GEMM: one cuBLAS call per expert (a
 * launch each), and each expert's wgrad reduces over its own tokens.  The
 * DeepSeek proxy's 32 experts on ep 8 (4 per GPU) and on ep 32 (1 per
 * GPU) see the same tokens and FLOPs per GPU.  Forward, the 4 groups
 * cost at least their 3 extra launches per GEMM (2 GEMMs) more.
 * Backward, BF16's wgrad may gain as much back (4 experts' weight
 * tiles fill the waves better than one's); in FP8 (no wave factor, an
 * efficiency that falls with the reduction depth: a quarter of the
 * tokens) the 4 backward GEMMs cost more than their launches. */
static void test_grouped_experts(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_gpu_profile g = h100(NULL);
    pp_model m;
    assert_int_equal(pp_model_load(DEEPSEEK, &m, &e), 0);
    const char *dt[] = {"bf16", "fp8"};
    for (int i = 0; i < 2; i++) {
        pp_layer_cost c[2];
        const char *fmt[] = {"tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8,dtype=%s",
                             "tp=1,pp=1,dp=32,ep=32,mbs=1,gbs=32,dtype=%s"};
        for (int j = 0; j < 2; j++) {
            char spec[96];
            pp_parallel p;
            snprintf(spec, sizeof spec, fmt[j], dt[i]);
            pp_parallel_init(&p);
            assert_int_equal(pp_parallel_parse(spec, &p, &e), 0);
            assert_int_equal(pp_moe_cost_get(&g, &m, &p, &c[j], &e), 0);
        }
        assert_true(fabs(c[0].fwd_flops / c[1].fwd_flops - 1) < 1e-12);
        double launches = 3.0 * g.launch_s;
        assert_true(c[0].fwd_s - c[1].fwd_s >= 2 * launches * (1 - 1e-9));
        if (i == 1) assert_true(c[0].bwd_s - c[1].bwd_s > 4 * launches * 1.5);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moe_cost_parts),
        cmocka_unit_test(test_grouped_experts),
        cmocka_unit_test(test_megatron_moe_layer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
