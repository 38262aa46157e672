/*
 * tests/test_models.c: the models layer against the numbers of domain.md
 * sec. 4 and 5, and its parsers against bad input: parameter counts, model
 * files and inline specs, parallel layouts (test_models_cost.c: FLOPs,
 * training time, memory and communication volumes).
 *
 * Run with PODPLAN_DATA_DIR=<source root> (CTest sets it) so that
 * pp_model_load("gpt3-175b") finds models/zoo/gpt3-175b.yaml.
 */
#include "models_util.h"

/* ------------------------------------------------------------------------
 * Parameter counts.
 * ---------------------------------------------------------------------- */
static void test_gpt3_params(void **state) {
    (void)state;
    pp_model m = load("gpt3-175b");
    assert_string_equal(m.name, "gpt3-175b");
    assert_int_equal(m.layers, 96);
    assert_int_equal(m.kv_heads, 96);
    assert_int_equal(m.ffn_hidden, 4 * 12288);
    double l = 96, h = 12288, V = 51200, s = 2048;
    double closed =
        12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
    assert_rel(pp_model_params(&m), closed, 0.005);
    assert_rel(pp_model_params(&m), 174.6e9, 0.005);
}

static void test_megatron_table_params(void **state) {
    (void)state;
    /* domain.md sec. 5, the "params (B)" column. */
    static const struct {
        const char *name;
        double params_b;
    } rows[] = {{"megatron-1.7b", 1.7},     {"megatron-3.6b", 3.6},
                {"megatron-7.5b", 7.5},     {"megatron-18.4b", 18.4},
                {"megatron-39.1b", 39.1},   {"megatron-76.1b", 76.1},
                {"megatron-145.6b", 145.6}, {"megatron-310.1b", 310.1},
                {"megatron-529.6b", 529.6}, {"megatron-1t", 1008.0}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        pp_model m = load(rows[i].name);
        assert_string_equal(m.name, rows[i].name);
        assert_int_equal(m.seq, 2048);
        assert_int_equal(m.vocab, 51200);
        assert_rel(pp_model_params(&m), rows[i].params_b * 1e9, 0.03);
    }
}

static void test_llama_params(void **state) {
    (void)state;
    pp_model m7 = load("llama2-7b");
    assert_false(m7.tied_embeddings);
    assert_int_equal(m7.ffn, PP_FFN_SWIGLU);
    assert_rel(pp_model_params(&m7), 6.74e9, 0.02);
    /* The published count, to the parameter (LLaMA conventions). */
    assert_true(pp_model_params(&m7) == 6738415616.0);
    pp_model m13 = load("llama2-13b");
    assert_true(pp_model_params(&m13) == 13015864320.0);

    pp_model m70 = load("llama2-70b");
    assert_int_equal(m70.kv_heads, 8);
    assert_rel(pp_model_params(&m70), 69e9, 0.02);
    /* GQA: with 64 K/V heads it would be bigger by 80 layers x 2 x h x 7h/8. */
    pp_model mha = m70;
    mha.kv_heads = 64;
    assert_rel(pp_model_params(&mha) - pp_model_params(&m70),
               80.0 * 2 * 8192 * (8192 - 1024), 1e-12);
}

/* Nemotron's squared-ReLU MLP: two matrices, LayerNorm with a bias, no
 * position table, no linear biases unless asked.  Nemotron-4 15B counted
 * by hand from its shape: 2 x 256000 x 6144 embeddings + 32 x (2 x
 * 6144^2 + 2 x 6144 x 1024 + 2 x 6144 x 24576 + 4 x 6144) + 2 x 6144 =
 * 15,628,775,424 (the report's ~15.7B: 3.2B embeddings, 12.5B layers). */
static void test_nemotron_params(void **state) {
    (void)state;
    pp_model n = load("nemotron4-15b");
    assert_int_equal(n.ffn, PP_FFN_SQRELU);
    assert_false(n.bias);
    assert_false(pp_model_learned_positions(&n));
    assert_false(pp_model_rmsnorm(&n));
    assert_true(pp_model_params(&n) == 15628775424.0);
    /* The same shape as a GPT-style MLP carries the position table, and
     * as a SwiGLU one a third matrix and RMSNorm's gains only. */
    pp_model g = n;
    g.ffn = PP_FFN_GELU;
    assert_rel(pp_model_params(&g) - pp_model_params(&n), 4096.0 * 6144, 1e-12);
    pp_model w = n;
    w.ffn = PP_FFN_SWIGLU;
    assert_rel(pp_model_params(&w) - pp_model_params(&n),
               32.0 * (6144.0 * 24576 - 2 * 6144) - 6144, 1e-12);
    /* Inline, biases off unless asked, as in a file. */
    pp_model i = load("layers=2,hidden=1024,heads=8,seq=2048,vocab=32000,"
                      "ffn=squared_relu");
    assert_false(i.bias);
    pp_model ib = load("layers=2,hidden=1024,heads=8,seq=2048,vocab=32000,"
                       "ffn=squared_relu,bias=true");
    assert_true(ib.bias);
    assert_true(pp_model_params(&ib) > pp_model_params(&i));
}

static void test_generic_models(void **state) {
    (void)state;
    pp_model r = load("resnet50");
    assert_int_equal(r.arch, PP_ARCH_GENERIC);
    assert_rel(pp_model_params(&r), 25.6e6, 1e-12);
    assert_rel(r.flops_per_sample, 4.1e9, 1e-12);
    pp_model v = load("vit-base");
    assert_rel(pp_model_params(&v), 86e6, 1e-12);
    assert_rel(v.flops_per_sample, 17.6e9, 1e-12);

    pp_flops f;
    assert_int_equal(pp_flops_count(&r, 32, PP_RECOMPUTE_NONE, &f, NULL), 0);
    assert_rel(f.total, 3 * 4.1e9 * 32, 1e-12);
    assert_int_equal(pp_flops_count(&r, 32, PP_RECOMPUTE_FULL, &f, NULL), 0);
    assert_rel(f.total, 4 * 4.1e9 * 32, 1e-12);
    assert_rel(f.model, 3 * 4.1e9 * 32, 1e-12);
    /* ~100 MB of fp32 parameters (domain.md sec. 5), 16 B/param states. */
    pp_parallel p = layout("dp=16,gbs=512");
    pp_memory mem;
    assert_int_equal(pp_memory_per_gpu(&r, &p, PP_OPT_ADAM_FP32, &mem, NULL),
                     0);
    assert_rel(mem.weights, 102.4e6, 1e-12);
    assert_rel(mem.model_states, 16 * 25.6e6, 1e-12);
    /* A generic model cannot be split by tp. */
    pp_error e = PP_ERROR_INIT;
    p = layout("tp=2");
    assert_int_equal(pp_parallel_validate(&p, &r, &e), PP_EINPUT);
    assert_contains(e.msg, "tp");
}

/* ------------------------------------------------------------------------
 * Model files and inline specs: good and bad.
 * ---------------------------------------------------------------------- */
static void test_inline_model(void **state) {
    (void)state;
    pp_model m;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_model_load("layers=96,hidden=12288,heads=96,seq=2048,"
                                   "vocab=51200",
                                   &m, &e),
                     0);
    pp_model g = load("gpt3-175b");
    assert_true(pp_model_params(&m) == pp_model_params(&g));
    assert_int_equal(m.kv_heads, 96);
    assert_int_equal(m.ffn_hidden, 49152);
    assert_true(m.tied_embeddings);

    assert_int_equal(pp_model_load("layers=32,hidden=4096,heads=32,seq=4096,"
                                   "vocab=32000,ffn_hidden=11008,ffn=swiglu,"
                                   "tied_embeddings=false,kv_heads=32,"
                                   "name=mine",
                                   &m, &e),
                     0);
    assert_string_equal(m.name, "mine");
    assert_true(pp_model_params(&m) == 6738415616.0);

    /* head_dim widens the attention core only: the same parameters, the
     * core's FLOPs (QK^T, PV) doubled at twice hidden/heads. */
    pp_model w;
    assert_int_equal(pp_model_load("layers=96,hidden=12288,heads=96,seq=2048,"
                                   "vocab=51200,head_dim=256",
                                   &w, &e),
                     0);
    pp_model g0 = load("gpt3-175b");
    assert_true(pp_model_params(&w) == pp_model_params(&g0));
    pp_flops a, b;
    assert_int_equal(pp_flops_count(&g0, 8, PP_RECOMPUTE_NONE, &a, NULL), 0);
    assert_int_equal(pp_flops_count(&w, 8, PP_RECOMPUTE_NONE, &b, NULL), 0);
    assert_true(b.attn == 2.0 * a.attn);
    assert_true(b.dense == a.dense && b.logit == a.logit);
}

static void test_inline_model_errors(void **state) {
    (void)state;
    expect_model_error("layers=x,hidden=12288,heads=96,seq=2048,vocab=51200",
                       "--model: layers: expected a positive integer, got "
                       "\"x\"");
    expect_model_error("layers=0,hidden=12288,heads=96,seq=2048,vocab=51200",
                       "--model: layers: expected a positive integer");
    expect_model_error("layrs=96,hidden=12288,heads=96,seq=2048,vocab=51200",
                       "--model: unknown key \"layrs\" (did you mean "
                       "\"layers\"?)");
    expect_model_error("layers=96,hidden=12288,heads=96,seq=2048",
                       "--model: vocab: missing");
    expect_model_error("layers=96,hidden=12288,heads=100,seq=2048,"
                       "vocab=51200",
                       "--model: hidden: 12288 is not divisible by heads "
                       "(100)");
    expect_model_error("layers=96,hidden=12288,heads=96,kv_heads=7,"
                       "seq=2048,vocab=51200",
                       "kv_heads: 7 does not divide heads (96)");
    expect_model_error("layers=96,hidden=12288,heads=96,seq=2048,"
                       "vocab=51200,ffn=relu",
                       "--model: ffn: expected gelu, swiglu or "
                       "squared_relu, got \"relu\"");
    expect_model_error("layers=96,layers=2,hidden=12288,heads=96,seq=2048,"
                       "vocab=51200",
                       "--model: layers: given twice");
    expect_model_error("layers=96,hidden,heads=96,seq=2048,vocab=51200",
                       "expected key=value");
    expect_model_error("layers=96,hidden=12288,heads=96,seq=2048,"
                       "vocab=51200,head_dim=0",
                       "--model: head_dim: expected a positive integer");
}

static void test_model_file_errors(void **state) {
    (void)state;
    pp_model m;
    pp_error e = PP_ERROR_INIT;

    assert_int_equal(model_from_text("bad.yaml",
                                     "layers: 96\n"
                                     "hidden: 12288\n"
                                     "heads: 100\n"
                                     "seq: 2048\n"
                                     "vocab: 51200\n",
                                     &m, &e),
                     PP_EINPUT);
    assert_string_equal(e.msg, "bad.yaml:2:9: hidden: 12288 is not divisible "
                               "by heads (100)");

    pp_error_clear(&e);
    assert_int_equal(model_from_text("bad.yaml",
                                     "layers: 96\nhidden: 12288\nheads: 96\n"
                                     "seq: 2048\nvocab: 51200\nvocab_size: 1\n",
                                     &m, &e),
                     PP_EINPUT);
    assert_contains(e.msg, "bad.yaml:6:1: vocab_size: unknown key");

    pp_error_clear(&e);
    assert_int_equal(model_from_text("bad.yaml",
                                     "layers: forty\nhidden: 12288\n"
                                     "heads: 96\nseq: 2048\nvocab: 51200\n",
                                     &m, &e),
                     PP_EINPUT);
    assert_contains(e.msg, "bad.yaml:1:");
    assert_contains(e.msg, "layers");

    pp_error_clear(&e);
    assert_int_equal(model_from_text("bad.yaml", "- 1\n- 2\n", &m, &e),
                     PP_EINPUT);

    /* Generic: FLOPs with a unit; transformer keys are unknown there. */
    pp_error_clear(&e);
    assert_int_equal(model_from_text("zoo/tiny.yaml",
                                     "arch: generic\nparams: 1.5e6\n"
                                     "flops_per_sample: 2.5GFLOP\n",
                                     &m, &e),
                     0);
    assert_string_equal(m.name, "tiny"); /* basename without .yaml */
    assert_rel(m.flops_per_sample, 2.5e9, 1e-12);
    assert_int_equal(model_from_text("zoo/tiny.yaml",
                                     "arch: generic\nparams: 1.5e6\n"
                                     "flops_per_sample: 2.5e9\nlayers: 3\n",
                                     &m, &e),
                     PP_EINPUT);
    assert_contains(e.msg, "layers: unknown key");

    /* A missing zoo name is PP_ENOENT. */
    pp_error_clear(&e);
    assert_int_equal(pp_model_load("no-such-model", &m, &e), PP_ENOENT);
}

/* ------------------------------------------------------------------------
 * Parallel layouts.
 * ---------------------------------------------------------------------- */
/* kv_channels (Megatron-core's, Hugging Face's head_dim): Qwen3's
 * projections are heads x 128 wide, twice hidden.  The model cards'
 * totals (30.5B / 3.3B active, 235B / 22B active) within 1% and 3%,
 * the QK-norm's 2 x kv_channels parameters per layer counted.
 * kv_channels equal to hidden / heads changes nothing. */
static void test_kv_channels(void **state) {
    (void)state;
    pp_model q30 = load("qwen3-30b-a3b"), q235 = load("qwen3-235b-a22b");
    assert_rel(pp_model_params(&q30), 30.5e9, 0.01);
    assert_rel(pp_model_active_params(&q30), 3.3e9, 0.03);
    assert_rel(pp_model_params(&q235), 235e9, 0.01);
    assert_rel(pp_model_active_params(&q235), 22e9, 0.03);
    /* Attention of one layer: h (q + 2 kv) + q h, q = 32 x 128, kv =
     * 4 x 128, against the same model at kv_channels 64 (= 2048 / 32). */
    pp_model narrow = q30;
    narrow.kv_channels = 64;
    double h = 2048, wide = h * (4096 + 1024) + 4096 * h + 2 * 128,
           thin = h * (2048 + 512) + 2048 * h + 2 * 64;
    assert_rel(pp_model_params(&q30) - pp_model_params(&narrow),
               48 * (wide - thin), 1e-12);
    pp_model a = load("llama3-8b"), b = a;
    b.kv_channels = 128; /* 4096 / 32 */
    assert_true(pp_model_params(&a) == pp_model_params(&b));
    pp_flops fa, fb;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_flops_count(&a, 2, PP_RECOMPUTE_NONE, &fa, &e), 0);
    assert_int_equal(pp_flops_count(&b, 2, PP_RECOMPUTE_NONE, &fb, &e), 0);
    assert_true(fa.total == fb.total);
    expect_model_error("layers=2,hidden=256,heads=4,seq=128,vocab=100,"
                       "kv_channels=0",
                       "--model: kv_channels: expected a positive integer, "
                       "got \"0\"");
}

static void test_parallel_parse_format(void **state) {
    (void)state;
    char buf[256];
    pp_parallel p;
    pp_parallel_init(&p);
    assert_int_equal(p.tp, 1);
    assert_int_equal(p.gbs, 1);
    assert_int_equal(p.recompute, PP_RECOMPUTE_FULL);

    p = layout("tp=8,pp=8,dp=16,mbs=1,gbs=1536,vp=2,sp=on,"
               "recompute=selective,zero=1");
    assert_int_equal(p.tp, 8);
    assert_int_equal(p.pp, 8);
    assert_int_equal(p.dp, 16);
    assert_int_equal(p.gbs, 1536);
    assert_int_equal(p.vp, 2);
    assert_true(p.sp);
    assert_int_equal(p.recompute, PP_RECOMPUTE_SELECTIVE);
    assert_int_equal(p.zero, 1);
    pp_parallel_format(&p, buf, sizeof buf);
    assert_string_equal(buf, "tp=8,pp=8,dp=16,mbs=1,gbs=1536,vp=2,sp=on,"
                             "recompute=selective,zero=1");
    pp_parallel q = layout(buf);
    char buf2[256];
    pp_parallel_format(&q, buf2, sizeof buf2);
    assert_string_equal(buf, buf2);
    assert_int_equal(q.vp, 2);
    assert_int_equal(q.zero, 1);

    /* Keys in any order; sp=true/false; gbs follows mbs*dp by default. */
    q = layout("zero=3,sp=false,dp=4,mbs=2,tp=2");
    assert_int_equal(q.gbs, 8);
    assert_false(q.sp);
    assert_string_equal(pp_recompute_name(PP_RECOMPUTE_NONE), "none");
    assert_string_equal(pp_recompute_name(PP_RECOMPUTE_FULL), "full");
}

static void test_parallel_parse_errors(void **state) {
    (void)state;
    expect_parallel_error("tp=8,zero=5", "--parallel: zero: expected 0..3, "
                                         "got \"5\"");
    expect_parallel_error("tp=x", "--parallel: tp: expected a positive "
                                  "integer, got \"x\"");
    expect_parallel_error("tp=8,pp=0", "--parallel: pp: expected a positive "
                                       "integer, got \"0\"");
    expect_parallel_error("tp=8,dp=-2", "dp: expected a positive integer");
    expect_parallel_error("tq=2", "--parallel: unknown key \"tq\" (did you "
                                  "mean \"tp\"?)");
    expect_parallel_error("recompte=full", "did you mean \"recompute\"");
    expect_parallel_error("sp=maybe", "--parallel: sp: expected on, off");
    expect_parallel_error("recompute=half", "recompute: expected full, "
                                            "selective, none or modules");
    expect_parallel_error("tp8", "expected key=value, got \"tp8\"");
    expect_parallel_error("tp=8,,pp=2", "expected key=value");
    expect_parallel_error("tp=2,tp=4", "tp: given twice");
    expect_parallel_error("", "empty");
}

static void test_parallel_validate(void **state) {
    (void)state;
    pp_model m = load("gpt3-175b"); /* 96 heads, 96 layers */
    pp_error e = PP_ERROR_INIT;
    pp_parallel p = layout("tp=8,pp=8,dp=16,mbs=1,gbs=1536,vp=3");
    assert_int_equal(pp_parallel_validate(&p, &m, &e), 0);

    expect_invalid(&m, "tp=7,gbs=1", "tp: 7 does not divide heads (96)");
    expect_invalid(&m, "pp=5", "pp: 5 does not divide layers (96)");
    expect_invalid(&m, "vp=2", "vp: 2 needs pipeline parallelism");
    expect_invalid(&m, "pp=8,vp=5,gbs=8", "divisible by pp * vp");
    /* 12 micro-batches are not a multiple of pp=8. */
    expect_invalid(&m, "pp=8,vp=2,dp=2,gbs=24",
                   "number of micro-batches (gbs / (mbs * dp) = 12)");
    expect_invalid(&m, "dp=16,mbs=2,gbs=1000",
                   "gbs: 1000 is not divisible "
                   "by mbs * dp");
    /* Allowed, and without effect: ZeRO without dp, sp without tp. */
    p = layout("zero=3,sp=on");
    assert_int_equal(pp_parallel_validate(&p, &m, &e), 0);

    /* GQA: tp must divide the 8 K/V heads of llama2-70b. */
    pp_model l70 = load("llama2-70b");
    p = layout("tp=8,pp=4");
    assert_int_equal(pp_parallel_validate(&p, &l70, &e), 0);
    expect_invalid(&l70, "tp=16", "tp: 16 does not divide kv_heads (8)");
}

/* Uneven pipeline splits (Megatron-core's --decoder-first/last-pipeline-
 * num-layers): the stages between share what the ends leave, evenly. */
static void test_parallel_uneven(void **state) {
    (void)state;
    pp_model m = load("gpt3-175b"); /* 96 layers */
    pp_error e = PP_ERROR_INIT;
    char buf[256];
    pp_parallel p = layout("tp=8,pp=8,dp=16,gbs=1536,first=11,last=13");
    assert_int_equal(pp_parallel_validate(&p, &m, &e), 0);
    assert_string_equal(pp_parallel_format(&p, buf, sizeof buf),
                        "tp=8,pp=8,dp=16,mbs=1,gbs=1536,vp=1,sp=off,"
                        "recompute=full,zero=0,first=11,last=13");
    int64_t sum = 0;
    for (int64_t s = 0; s < 8; s++) {
        int64_t n = pp_parallel_stage_layers(&p, &m, s);
        assert_int_equal(n, s == 0 ? 11 : s == 7 ? 13 : 12);
        sum += n;
    }
    assert_int_equal(sum, 96);
    /* An even layout formats as it always did; first=0 means even. */
    p = layout("tp=8,pp=8,dp=16,gbs=1536,first=0");
    assert_string_equal(pp_parallel_format(&p, buf, sizeof buf),
                        "tp=8,pp=8,dp=16,mbs=1,gbs=1536,vp=1,sp=off,"
                        "recompute=full,zero=0");
    assert_int_equal(pp_parallel_stage_layers(&p, &m, 3), 12);
    /* Only the last stage given: the other three share 75. */
    p = layout("pp=4,last=21");
    assert_int_equal(pp_parallel_validate(&p, &m, &e), 0);
    assert_int_equal(pp_parallel_stage_layers(&p, &m, 0), 25);
    assert_int_equal(pp_parallel_stage_layers(&p, &m, 3), 21);
    /* With vp chunks every stage's layers split over them. */
    p = layout("pp=4,vp=2,dp=2,gbs=16,first=22,last=22");
    assert_int_equal(pp_parallel_validate(&p, &m, &e), 0);

    expect_invalid(&m, "pp=8,first=11,last=12",
                   "the 73 layers left are not an equal share for each of "
                   "the other 6 stages");
    expect_invalid(&m, "first=3",
                   "first: an uneven pipeline split needs "
                   "pp > 1");
    expect_invalid(&m, "pp=2,first=40,last=40",
                   "with pp=2 they must add up to the 96 layers");
    expect_invalid(&m, "pp=4,vp=2,dp=2,gbs=16,first=21,last=21",
                   "first: 21 layers on the first stage are not divisible "
                   "by vp (2)");
    expect_invalid(&m, "pp=4,first=90,last=10", "exceed the 96");
    expect_parallel_error("pp=4,first=-1", "--parallel: first: expected a "
                                           "number of layers");
    pp_model g = load("resnet50");
    expect_invalid(&g, "last=2", "last: model resnet50 is generic");

    /* Memory is that of the most loaded stage.  Even: the first (the
     * embedding, pp micro-batches in flight). */
    pp_memory even, mid, ends;
    p = layout("tp=8,pp=4,dp=32,gbs=1536,recompute=selective");
    assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &even, &e),
                     0);
    assert_int_equal(even.stage, 0);
    /* Light ends push 30 layers onto stages 1 and 2: stage 1 (3 in
     * flight) now holds the most, and more than any stage did before. */
    p = layout("tp=8,pp=4,dp=32,gbs=1536,recompute=selective,first=18,"
               "last=18");
    assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &mid, &e), 0);
    assert_int_equal(mid.stage, 1);
    assert_int_equal(mid.inflight, 3);
    assert_true(mid.total > even.total);
    double want = 30.0 * (12.0 * 12288.0 * 12288.0 + 13.0 * 12288.0) / 8.0;
    assert_true(fabs(mid.params_per_gpu / want - 1.0) < 1e-6);
    /* Heavy ends: the first stage again, with more than the even split. */
    p = layout("tp=8,pp=4,dp=32,gbs=1536,recompute=selective,first=30,"
               "last=30");
    assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &ends, &e),
                     0);
    assert_int_equal(ends.stage, 0);
    assert_true(ends.total > even.total);
    /* The last stage's fp32 logits can make it the most loaded: a small
     * model, full recomputation (only layer inputs kept), pp = 2. */
    pp_model s = load("megatron-1.7b");
    p = layout("pp=2,dp=16,mbs=8,gbs=512");
    assert_int_equal(pp_memory_per_gpu(&s, &p, PP_OPT_ADAM_MIXED, &ends, &e),
                     0);
    assert_int_equal(ends.stage, 1);
    assert_true(ends.buffers >= 4.0 * 2048 * 8 * 51200);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt3_params),
        cmocka_unit_test(test_megatron_table_params),
        cmocka_unit_test(test_llama_params),
        cmocka_unit_test(test_nemotron_params),
        cmocka_unit_test(test_kv_channels),
        cmocka_unit_test(test_generic_models),
        cmocka_unit_test(test_inline_model),
        cmocka_unit_test(test_inline_model_errors),
        cmocka_unit_test(test_model_file_errors),
        cmocka_unit_test(test_parallel_parse_format),
        cmocka_unit_test(test_parallel_parse_errors),
        cmocka_unit_test(test_parallel_validate),
        cmocka_unit_test(test_parallel_uneven),
    };
    if (!getenv("PODPLAN_DATA_DIR"))
        setenv("PODPLAN_DATA_DIR", PODPLAN_SOURCE_DIR, 1);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
