/*
 * tests/test_moe_glu.c: GPT-OSS's expert activation as Megatron-core's MoE
 * path runs it (model keys glu_act: quick_gelu and glu_clamp): the two
 * clamps and the concatenation before the fused kernel, their backward,
 * the offset tensor's host wait where the stack says so (moe.quick_geglu_
 * sync) and not in a whole-iteration graph, the copy the activation
 * keeps, and the keys' checks.
 */
#include "models_util.h"

#include "oplist_util.h"

/* gpt-oss-120b (glu_act quick_gelu, glu_clamp 7) on an H100. */
static void build(layer_lists *x, const char *stack, const char *spec) {
    x->m = load("gpt-oss-120b");
    layer_lists_build(x, "h100-sxm5", stack, spec);
}

/* EP 8 on one sequence of 4,096: 4,096 x 4 routed rows of 2,880 on each
 * GPU.  Forward: after fc1 the clamps and the cat (16 bytes a row
 * element, three operations at host.op_issue 27.9 us against
 * kernel_issue's 46.8), then the fused kernel, which waits for the GPU
 * (the offset tensor) and costs one operation more.  Backward: moe_act's
 * recompute runs both again, and after the activation's backward come
 * the clamps' (30 bytes, seven operations). */
static void test_glu_ops(void **state) {
    (void)state;
    layer_lists x;
    build(&x, "nemo-2025",
          "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8,recompute=layernorm+moe_act");
    double rows = 4096.0 * 4, w = 2880, op = 27.9 / 46.8;
    long c = op_at(&x.fw, "experts act clamp");
    assert_true(c > 0);
    assert_string_equal(x.fw.v[c - 1].name, "experts fc1");
    assert_string_equal(x.fw.v[c + 1].name, "experts swiglu");
    assert_rel(x.fw.v[c].bytes, 16 * rows * w, 1e-9);
    assert_rel(x.fw.v[c].kernels, 3 * op, 1e-9);
    assert_false(x.fw.v[c].sync);
    assert_true(x.fw.v[c + 1].sync);
    assert_rel(x.fw.v[c + 1].kernels, 1 + op, 1e-9);

    long rc = op_at(&x.bw, "experts act clamp");
    long r = op_at(&x.bw, "experts act recompute");
    long a = op_at(&x.bw, "experts swiglu bwd");
    long cb = op_at(&x.bw, "experts act clamp bwd");
    assert_true(rc >= 0 && r == rc + 1 && a > r && cb == a + 1);
    assert_true(x.bw.v[r].sync);
    assert_rel(x.bw.v[cb].bytes, 30 * rows * w, 1e-9);
    assert_rel(x.bw.v[cb].kernels, 7 * op, 1e-9);
    assert_string_equal(x.bw.v[cb + 1].name, "experts fc1 dgrad");
    layer_lists_done(&x);
}

/* The wait is the stack's (a stack without quick_geglu_sync has none)
 * and is gone in a whole-iteration graph; a model without the keys has
 * neither the clamps nor the extra operation. */
static void test_glu_scope(void **state) {
    (void)state;
    layer_lists x;
    build(&x, "megatron-core-2024", "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8");
    long f = op_at(&x.fw, "experts swiglu");
    assert_false(x.fw.v[f].sync);
    assert_true(op_at(&x.fw, "experts act clamp") > 0);
    layer_lists_done(&x);

    build(&x, "nemo-2025",
          "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8,dispatcher=hybridep,"
          "rank_capacity=1.5,graphs=full");
    f = op_at(&x.fw, "experts swiglu");
    assert_false(x.fw.v[f].sync);
    layer_lists_done(&x);

    x.m = load("gpt-oss-120b");
    x.m.glu_quick = false;
    x.m.glu_clamp = 0;
    layer_lists_build(&x, "h100-sxm5", "nemo-2025",
                      "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8");
    f = op_at(&x.fw, "experts swiglu");
    assert_false(x.fw.v[f].sync);
    assert_true(x.fw.v[f].kernels == 1);
    assert_int_equal(op_at(&x.fw, "experts act clamp"), -1);
    assert_int_equal(op_at(&x.bw, "experts act clamp bwd"), -1);
    layer_lists_done(&x);
}

/* The clamped copy of fc1's output the activation keeps: 2 x 2,880
 * 16-bit elements a routed row, 4 routed rows a token (4,096 tokens, tp
 * 1, FlashAttention); moe_act's checkpoint keeps fc1's output alone, so
 * none then. */
static void test_glu_memory(void **state) {
    (void)state;
    pp_model m = load("gpt-oss-120b"), n = m;
    n.glu_clamp = 0;
    pp_error e = PP_ERROR_INIT;
    pp_memory a, b;
    pp_parallel p = layout("dp=8,ep=8,recompute=none,attn=flash");
    assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &a, &e), 0);
    assert_int_equal(pp_memory_per_gpu(&n, &p, PP_OPT_ADAM_MIXED, &b, &e), 0);
    /* Within 1%: the MoE factor scales the layer's whole activation
     * (models/moe.c, pp__moe_act_factor), FlashAttention's few bytes
     * beyond the 34 s b h included. */
    double want = 4096.0 * 4 * 2 * 2880 * 2,
           got = a.activations_per_layer - b.activations_per_layer;
    assert_true(got >= want && got <= 1.01 * want);
    p = layout("dp=8,ep=8,recompute=moe_act,attn=flash");
    assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &a, &e), 0);
    assert_int_equal(pp_memory_per_gpu(&n, &p, PP_OPT_ADAM_MIXED, &b, &e), 0);
    /* None but the same 1% of it (36 layers, one micro-batch). */
    assert_true(fabs(a.activations - b.activations) <= 0.01 * 36 * want);
}

/* The keys' checks, inline and in YAML (tests/bad/ has the files). */
static void test_glu_bad(void **state) {
    (void)state;
    static const struct {
        const char *spec, *msg;
    } bad[] = {
        {"layers=2,hidden=64,heads=4,seq=128,vocab=100,glu_act=gelu",
         "glu_act: expected silu or quick_gelu"},
        {"layers=2,hidden=64,heads=4,seq=128,vocab=100,glu_clamp=-1",
         "glu_clamp: expected 0 (none) to 1e6"},
        {"layers=2,hidden=64,heads=4,seq=128,vocab=100,glu_clamp=7",
         "glu_clamp: is an MoE key"},
        {"layers=2,hidden=64,heads=4,seq=128,vocab=100,ffn=gelu,experts=4,"
         "top_k=1,glu_act=quick_gelu",
         "glu_act: needs a gated FFN"},
        {"layers=2,hidden=64,heads=4,seq=128,vocab=100,ffn=swiglu,experts=4,"
         "top_k=1,shared_experts=1,glu_clamp=7",
         "glu_clamp: prices the routed experts' activation only"},
        {"layers=2,hidden=64,heads=4,seq=128,vocab=100,ffn=swiglu,experts=4,"
         "top_k=1,first_dense_layers=1,glu_act=quick_gelu",
         "glu_act: prices the routed experts' activation only"},
        /* The two launch-only keys (planner/launch.c). */
        {"layers=2,hidden=64,heads=4,seq=128,vocab=100,glu_offset=1",
         "glu_offset: needs a gated FFN (ffn: swiglu)"},
        {"layers=2,hidden=64,heads=4,seq=128,vocab=100,ffn=swiglu,"
         "glu_offset=one",
         "glu_offset: expected a number from -1e6 to 1e6"},
        {"layers=2,hidden=64,heads=4,seq=128,vocab=100,softmax=sinks",
         "softmax: expected vanilla, off-by-one or learnable"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_model_error(bad[i].spec, bad[i].msg);
    pp_model m;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(
        pp_model_load("layers=2,hidden=64,heads=4,seq=128,vocab=100,ffn=swiglu,"
                      "experts=4,top_k=1,glu_act=quick_gelu,glu_clamp=7",
                      &m, &e),
        0);
    assert_true(m.glu_quick && m.glu_clamp == 7);
    assert_true(m.glu_offset == 0 && m.softmax == PP_SOFTMAX_VANILLA);
    /* Dense layers may carry the offset (it is priced nowhere). */
    assert_int_equal(
        pp_model_load("layers=2,hidden=64,heads=4,seq=128,vocab=100,ffn=swiglu,"
                      "glu_offset=-0.5,softmax=off-by-one",
                      &m, &e),
        0);
    assert_true(m.glu_offset == -0.5 && m.softmax == PP_SOFTMAX_OFF_BY_ONE);
    assert_string_equal(pp_softmax_name(m.softmax), "off-by-one");
    /* The zoo's GPT-OSS: its provider's offset and sinks. */
    assert_int_equal(pp_model_load("gpt-oss-120b", &m, &e), 0);
    assert_true(m.glu_offset == 1 && m.softmax == PP_SOFTMAX_LEARNABLE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_glu_ops),
        cmocka_unit_test(test_glu_scope),
        cmocka_unit_test(test_glu_memory),
        cmocka_unit_test(test_glu_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
