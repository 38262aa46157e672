/*
 * tests/test_rope.c: a model's positions and QK-norm (model keys
 * rotary_base, rope_scaling, rope_factor, rope_original_seq, rope_mscale,
 * rope_mscale_all_dim, qk_norm): the loaders and their checks, the
 * parameters and activations QK-norm adds, the kernels the simulator
 * prices for both, and the launch lines (planner/launch_rope.c), with
 * the header's note where a format cannot set a scaling.
 */
#include "models_util.h"

#include "cli_run.h"
#include "oplist_util.h"

#define BASE "layers=2,hidden=64,heads=4,seq=128,vocab=100"

static void test_rope_keys(void **state) {
    (void)state;
    pp_model m;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_model_load(BASE ",ffn=swiglu", &m, &e), 0);
    assert_true(pp_model_has_rope(&m) && !m.qk_norm);
    assert_true(pp_model_rotary_base(&m) == 10000);
    assert_int_equal(pp_model_rope_original_seq(&m), 0);
    /* GPT's learned table: no rotation. */
    assert_int_equal(pp_model_load(BASE, &m, &e), 0);
    assert_false(pp_model_has_rope(&m));
    assert_int_equal(pp_model_load(BASE ",ffn=swiglu,rotary_base=500000,"
                                        "rope_scaling=llama3,rope_factor=8",
                                   &m, &e),
                     0);
    assert_true(pp_model_rotary_base(&m) == 500000);
    assert_int_equal(m.rope_scaling, PP_ROPE_SCALING_LLAMA3);
    assert_int_equal(pp_model_rope_original_seq(&m), 8192);
    assert_string_equal(pp_rope_scaling_name(m.rope_scaling), "llama3");
    assert_int_equal(pp_model_load(BASE ",ffn=squared_relu,qk_norm=true,"
                                        "rope_scaling=yarn,rope_factor=32",
                                   &m, &e),
                     0);
    assert_true(m.qk_norm);
    assert_int_equal(pp_model_rope_original_seq(&m), 4096);

    /* The zoo: Qwen3's QK-norm, DeepSeek-V3's and GPT-OSS's YaRN. */
    m = load("qwen3-30b-a3b");
    assert_true(m.qk_norm && m.rotary_base == 1000000);
    m = load("deepseek-v3");
    assert_int_equal(m.rope_scaling, PP_ROPE_SCALING_YARN);
    assert_true(m.rope_factor == 40 && m.rope_mscale == 1 &&
                m.rope_mscale_all_dim == 1);
    m = load("gpt-oss-120b");
    assert_true(m.rotary_base == 150000 && m.rope_factor == 32);
    assert_int_equal(pp_model_rope_original_seq(&m), 4096);

    /* YAML takes the same keys (tests/bad/ has the broken ones). */
    assert_int_equal(model_from_text("rope.yaml",
                                     "layers: 2\nhidden: 64\nheads: 4\n"
                                     "seq: 128\nvocab: 100\nffn: swiglu\n"
                                     "rotary_base: 1000000\nqk_norm: true\n"
                                     "rope_scaling: llama3\nrope_factor: 8\n"
                                     "rope_original_seq: 8192\n",
                                     &m, &e),
                     0);
    assert_true(m.qk_norm && m.rotary_base == 1000000 &&
                m.rope_original_seq == 8192);
}

static void test_rope_bad(void **state) {
    (void)state;
    static const struct {
        const char *spec, *msg;
    } bad[] = {
        {BASE ",rotary_base=500000",
         "rotary_base: needs rotary positions (ffn swiglu or squared_relu, "
         "or MLA)"},
        {BASE ",ffn=swiglu,rotary_base=0",
         "rotary_base: expected a positive integer"},
        {BASE ",ffn=swiglu,rotary_base=5e5",
         "rotary_base: expected a positive integer"},
        {BASE ",ffn=swiglu,rope_factor=8",
         "rope_factor: needs rope_scaling (llama3 or yarn)"},
        {BASE ",ffn=swiglu,rope_scaling=yarn",
         "rope_factor: expected a factor above 1 for rope_scaling yarn"},
        {BASE ",ffn=swiglu,rope_scaling=yarn,rope_factor=0.5",
         "rope_factor: expected a number from 1 to 1e+06"},
        {BASE ",ffn=swiglu,rope_scaling=ntk", "rope_scaling: expected none, "
                                              "llama3 or yarn"},
        {BASE ",ffn=swiglu,rope_scaling=llama3,rope_factor=8,rope_mscale=1",
         "rope_mscale: is a yarn term"},
        {BASE ",ffn=swiglu,rope_mscale=0", "rope_mscale: expected a number"},
        {BASE ",ffn=swiglu,qk_norm=yes", "qk_norm: expected true or false"},
        {"layers=2,hidden=2048,heads=16,seq=128,vocab=100,ffn=swiglu,"
         "kv_lora_rank=256,qk_nope_head_dim=128,qk_rope_head_dim=64,"
         "v_head_dim=128,qk_norm=true",
         "qk_norm: not used with multi-head latent attention"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_model_error(bad[i].spec, bad[i].msg);
}

/* QK-norm's gains: kv_channels each for Q and K, per layer (a bias too
 * under LayerNorm); its saved inputs: Q and K, 2 bytes each, split over
 * TP by heads (a dense model: an MoE one scales the layer's whole
 * activation by its MoE factor, models/moe.c). */
static void test_qk_norm_params_memory(void **state) {
    (void)state;
    pp_model m = load("qwen3-30b-a3b"), n = m;
    n.qk_norm = false;
    assert_true(pp_model_params(&m) - pp_model_params(&n) == 48 * 2 * 128);
    pp_model g = n;
    g.ffn = PP_FFN_SQRELU; /* LayerNorm: gain and bias */
    pp_model gq = g;
    gq.qk_norm = true;
    assert_true(pp_model_params(&gq) - pp_model_params(&g) == 48 * 4 * 128);

    pp_error e = PP_ERROR_INIT;
    pp_memory a, b;
    pp_model d = load("qwen3-8b"), dn = d;
    dn.qk_norm = false;
    pp_parallel p = layout("tp=2,dp=4,sp=on,mbs=1,recompute=none,attn=flash");
    assert_int_equal(pp_memory_per_gpu(&d, &p, PP_OPT_ADAM_MIXED, &a, &e), 0);
    assert_int_equal(pp_memory_per_gpu(&dn, &p, PP_OPT_ADAM_MIXED, &b, &e), 0);
    /* 4096 tokens x (32 + 8 heads x 128) x 2 bytes / TP 2. */
    assert_rel(a.activations_per_layer - b.activations_per_layer,
               4096.0 * (32 + 8) * 128 * 2 / 2, 1e-9);
    /* Full recomputation keeps the layer's input only. */
    p = layout("tp=2,dp=4,sp=on,mbs=1,recompute=full,attn=flash");
    assert_int_equal(pp_memory_per_gpu(&d, &p, PP_OPT_ADAM_MIXED, &a, &e), 0);
    assert_int_equal(pp_memory_per_gpu(&dn, &p, PP_OPT_ADAM_MIXED, &b, &e), 0);
    assert_true(a.activations_per_layer == b.activations_per_layer);
}

/* The simulator's kernels: the norm on Q and K after the QKV GEMM, then
 * the rotation; backward the rotation's, then the norm's, before the
 * gradients are concatenated. */
static void test_qk_pos_ops(void **state) {
    (void)state;
    layer_lists x;
    x.m = load("qwen3-8b");
    layer_lists_build(&x, "h100-sxm5", "nemo-2025", "tp=2,dp=4,mbs=1");
    double qk = 4096.0 * (32 + 8) * 128 / 2;
    long q = op_at(&x.fw, "qkv");
    assert_true(q >= 0);
    assert_string_equal(x.fw.v[q + 1].name, "qk norm");
    assert_string_equal(x.fw.v[q + 2].name, "rope");
    assert_rel(x.fw.v[q + 1].bytes, 4 * qk, 1e-12);
    assert_rel(x.fw.v[q + 2].bytes, 4 * qk, 1e-12);
    assert_rel(x.fw.v[q + 1].kernels, 2, 1e-12);
    long r = op_at(&x.bw, "rope bwd");
    assert_true(r > 0);
    assert_string_equal(x.bw.v[r + 1].name, "qk norm bwd");
    assert_string_equal(x.bw.v[r + 2].name, "qkv grad concat");
    assert_rel(x.bw.v[r + 1].bytes, 6 * qk, 1e-12);
    assert_true(x.bw.v[r + 1].time_s > 0);
    layer_lists_done(&x);

    /* Without QK-norm the rotation alone; GPT's learned table: neither. */
    x.m = load("llama3-8b");
    layer_lists_build(&x, "h100-sxm5", "nemo-2025", "tp=1,dp=8,mbs=1");
    assert_true(op_at(&x.fw, "rope") >= 0);
    assert_true(op_at(&x.fw, "qk norm") < 0);
    layer_lists_done(&x);
    x.m = load("gpt3-175b");
    layer_lists_build(&x, "h100-sxm5", "nemo-2025", "tp=8,pp=8,dp=1,mbs=1");
    assert_true(op_at(&x.fw, "rope") < 0 && op_at(&x.bw, "rope bwd") < 0);
    layer_lists_done(&x);
}

/* plan's launch lines for a small model on one server hold every one of
 * `needles` (NULL-ended), and none of `absent`. */
static void plan_has(const char *model, const char *fmt,
                     const char *const *needles, const char *const *absent) {
    cli_result r;
    cli_runf(&r,
             "plan --model %s --cluster dgx-h100-ndr --set node.count=1 "
             "--gpus 8 --global-batch 64 --top 0 --format %s",
             model, fmt);
    assert_int_equal(r.status, 0);
    for (size_t i = 0; needles[i]; i++) assert_contains(r.out, needles[i]);
    for (size_t i = 0; absent && absent[i]; i++)
        assert_null(strstr(r.out, absent[i]));
    cli_result_free(&r);
}

#define SMALL                                                                  \
    "layers=4,hidden=2048,heads=16,kv_heads=4,seq=4096,vocab=32000,"           \
    "ffn=swiglu,ffn_hidden=8192"
#define SMALL_MLA                                                              \
    "layers=4,hidden=2048,heads=16,seq=4096,vocab=32000,ffn=swiglu,"           \
    "ffn_hidden=8192,kv_lora_rank=256,qk_nope_head_dim=128,"                   \
    "qk_rope_head_dim=64,v_head_dim=128"

static void test_rope_launch(void **state) {
    (void)state;
    static const char *const none[] = {"--rotary-base", "--use-rope-scaling",
                                       "--qk-layernorm", "# positions:", NULL};
    static const char *const plain[] = {"--position-embedding-type rope", NULL};
    plan_has(SMALL, "megatron", plain, none);

    static const char *const llama[] = {
        "--position-embedding-type rope \\\n", "--qk-layernorm \\\n",
        "--rotary-base 500000 \\\n",           "--use-rope-scaling \\\n",
        "--rope-scaling-factor 8 \\\n",        NULL};
    static const char *const no_note[] = {"# positions:", NULL};
    plan_has(SMALL ",rotary_base=500000,qk_norm=true,rope_scaling=llama3,"
                   "rope_factor=8",
             "megatron", llama, no_note);
    /* NeMo's formats: the base and the norm, and the note for the
     * scaling neither can set. */
    static const char *const nemo[] = {
        "  qk_layernorm: true\n", "  rotary_base: 500000\n",
        "# positions: llama3 scaling (factor 8 over 8192 positions) is not "
        "set: NeMo 1's model keys have no Llama 3.1 scaling; this trains "
        "unscaled RoPE\n",
        NULL};
    plan_has(SMALL ",rotary_base=500000,qk_norm=true,rope_scaling=llama3,"
                   "rope_factor=8",
             "nemo", nemo, NULL);
    static const char *const nemo2[] = {
        "    qk_layernorm=True,\n", "    rotary_base=500000,\n",
        "is llm.Llama31Config's (scale_factor)", NULL};
    plan_has(SMALL ",rotary_base=500000,qk_norm=true,rope_scaling=llama3,"
                   "rope_factor=8",
             "nemo2", nemo2, NULL);
    /* Other original positions than Megatron-LM's fixed 8192. */
    static const char *const orig[] = {"fixes 8192 original positions", NULL};
    static const char *const no_flag[] = {"--use-rope-scaling \\\n", NULL};
    plan_has(SMALL ",rope_scaling=llama3,rope_factor=8,rope_original_seq=4096",
             "megatron", orig, no_flag);

    /* YaRN: MLA's arguments and fields; a standard attention's note. */
    static const char *const mla[] = {"--rotary-scaling-factor 40 \\\n",
                                      "--mscale 1 \\\n",
                                      "--mscale-all-dim 1 \\\n", NULL};
    plan_has(SMALL_MLA ",rope_scaling=yarn,rope_factor=40,rope_mscale=1,"
                       "rope_mscale_all_dim=1",
             "megatron", mla, no_note);
    static const char *const mla2[] = {
        "    rotary_scaling_factor=40,\n",
        "    original_max_position_embeddings=4096,\n", "    mscale=1,\n",
        "    mscale_all_dim=1,\n", NULL};
    plan_has(SMALL_MLA ",rope_scaling=yarn,rope_factor=40,rope_mscale=1,"
                       "rope_mscale_all_dim=1",
             "nemo2", mla2, no_note);
    static const char *const oss[] = {
        "# positions: yarn scaling (factor 32 over 4096 positions) is not "
        "set: Megatron-LM's arguments set YaRN for multi-latent attention "
        "only",
        "--rotary-base 150000 \\\n", NULL};
    static const char *const no_mla_flag[] = {"--rotary-scaling-factor", NULL};
    plan_has(SMALL ",rotary_base=150000,rope_scaling=yarn,rope_factor=32",
             "megatron", oss, no_mla_flag);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rope_keys),
        cmocka_unit_test(test_rope_bad),
        cmocka_unit_test(test_qk_norm_params_memory),
        cmocka_unit_test(test_qk_pos_ops),
        cmocka_unit_test(test_rope_launch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
