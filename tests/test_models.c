/*
 * tests/test_models.c: the models layer against the numbers of domain.md
 * sec. 4 and 5, and its parsers against bad input.
 *
 * Run with PODPLAN_DATA_DIR=<source root> (CTest sets it) so that
 * pp_model_load("gpt3-175b") finds models/zoo/gpt3-175b.yaml.
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

#include "podplan/models.h"

#define DAY_S 86400.0
#define YEAR_S (365.0 * DAY_S)

/* |got - want| <= rel * |want|, with a message naming both. */
#define assert_rel(got, want, rel)                                          \
    do {                                                                    \
        double g_ = (got), w_ = (want);                                     \
        if (!(fabs(g_ - w_) <= (rel) * fabs(w_))) {                         \
            print_error("%s = %.10g, want %.10g (rel %.3g)\n", #got, g_,    \
                        w_, (double)(rel));                                 \
            fail();                                                         \
        }                                                                   \
    } while (0)

#define assert_contains(hay, needle)                                        \
    do {                                                                    \
        if (!strstr((hay), (needle))) {                                     \
            print_error("\"%s\" does not contain \"%s\"\n", (hay),          \
                        (needle));                                          \
            fail();                                                         \
        }                                                                   \
    } while (0)

static pp_model load(const char *name)
{
    pp_model m;
    pp_error e = PP_ERROR_INIT;
    int rc = pp_model_load(name, &m, &e);
    if (rc != 0)
        print_error("pp_model_load(%s): %s\n", name, e.msg);
    assert_int_equal(rc, 0);
    return m;
}

static pp_parallel layout(const char *spec)
{
    pp_parallel p;
    pp_error e = PP_ERROR_INIT;
    pp_parallel_init(&p);
    int rc = pp_parallel_parse(spec, &p, &e);
    if (rc != 0)
        print_error("pp_parallel_parse(%s): %s\n", spec, e.msg);
    assert_int_equal(rc, 0);
    return p;
}

/* Loads a model from YAML text; returns the status, message in e. */
static int model_from_text(const char *name, const char *text, pp_model *m,
                           pp_error *e)
{
    pp_doc *doc = NULL;
    int rc = pp_doc_load_string(name, text, strlen(text), &doc, e);
    if (rc == 0)
        rc = pp_model_from_node(pp_doc_root(doc), "", m, e);
    pp_doc_free(doc);
    return rc;
}

/* ------------------------------------------------------------------------
 * Parameter counts.
 * ---------------------------------------------------------------------- */
static void test_gpt3_params(void **state)
{
    (void)state;
    pp_model m = load("gpt3-175b");
    assert_string_equal(m.name, "gpt3-175b");
    assert_int_equal(m.layers, 96);
    assert_int_equal(m.kv_heads, 96);
    assert_int_equal(m.ffn_hidden, 4 * 12288);
    double l = 96, h = 12288, V = 51200, s = 2048;
    double closed = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
    assert_rel(pp_model_params(&m), closed, 0.005);
    assert_rel(pp_model_params(&m), 174.6e9, 0.005);
}

static void test_megatron_table_params(void **state)
{
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

static void test_llama_params(void **state)
{
    (void)state;
    pp_model m7 = load("llama2-7b");
    assert_false(m7.tied_embeddings);
    assert_int_equal(m7.ffn, PP_FFN_SWIGLU);
    assert_rel(pp_model_params(&m7), 6.74e9, 0.02);
    /* The published count, to the parameter (LLaMA conventions). */
    assert_true(pp_model_params(&m7) == 6738415616.0);

    pp_model m70 = load("llama2-70b");
    assert_int_equal(m70.kv_heads, 8);
    assert_rel(pp_model_params(&m70), 69e9, 0.02);
    /* GQA: with 64 K/V heads it would be bigger by 80 layers x 2 x h x 7h/8. */
    pp_model mha = m70;
    mha.kv_heads = 64;
    assert_rel(pp_model_params(&mha) - pp_model_params(&m70),
               80.0 * 2 * 8192 * (8192 - 1024), 1e-12);
}

static void test_generic_models(void **state)
{
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
static void test_inline_model(void **state)
{
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
}

static void expect_inline_error(const char *spec, const char *msg)
{
    pp_model m;
    memset(&m, 0x5a, sizeof m);
    pp_model before = m;
    pp_error e = PP_ERROR_INIT;
    int rc = pp_model_load(spec, &m, &e);
    assert_int_equal(rc, PP_EINPUT);
    assert_int_equal(pp_exit_code(rc), 2);
    assert_int_equal(e.code, PP_EINPUT);
    assert_contains(e.msg, msg);
    assert_memory_equal(&m, &before, sizeof m); /* untouched on failure */
}

static void test_inline_model_errors(void **state)
{
    (void)state;
    expect_inline_error("layers=x,hidden=12288,heads=96,seq=2048,vocab=51200",
                        "--model: layers: expected a positive integer, got "
                        "\"x\"");
    expect_inline_error("layers=0,hidden=12288,heads=96,seq=2048,vocab=51200",
                        "--model: layers: expected a positive integer");
    expect_inline_error("layrs=96,hidden=12288,heads=96,seq=2048,vocab=51200",
                        "--model: unknown key \"layrs\" (did you mean "
                        "\"layers\"?)");
    expect_inline_error("layers=96,hidden=12288,heads=96,seq=2048",
                        "--model: vocab: missing");
    expect_inline_error("layers=96,hidden=12288,heads=100,seq=2048,"
                        "vocab=51200",
                        "--model: hidden: 12288 is not divisible by heads "
                        "(100)");
    expect_inline_error("layers=96,hidden=12288,heads=96,kv_heads=7,"
                        "seq=2048,vocab=51200",
                        "kv_heads: 7 does not divide heads (96)");
    expect_inline_error("layers=96,hidden=12288,heads=96,seq=2048,"
                        "vocab=51200,ffn=relu",
                        "--model: ffn: expected gelu or swiglu");
    expect_inline_error("layers=96,layers=2,hidden=12288,heads=96,seq=2048,"
                        "vocab=51200",
                        "--model: layers: given twice");
    expect_inline_error("layers=96,hidden,heads=96,seq=2048,vocab=51200",
                        "expected key=value");
}

static void test_model_file_errors(void **state)
{
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
static void test_parallel_parse_format(void **state)
{
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

static void expect_parallel_error(const char *spec, const char *msg)
{
    pp_parallel p, before;
    pp_error e = PP_ERROR_INIT;
    pp_parallel_init(&p);
    before = p;
    int rc = pp_parallel_parse(spec, &p, &e);
    assert_int_equal(rc, PP_EINPUT);
    assert_int_equal(pp_exit_code(rc), 2);
    assert_contains(e.msg, msg);
    assert_memory_equal(&p, &before, sizeof p);
}

static void test_parallel_parse_errors(void **state)
{
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
                                            "selective or none");
    expect_parallel_error("tp8", "expected key=value, got \"tp8\"");
    expect_parallel_error("tp=8,,pp=2", "expected key=value");
    expect_parallel_error("tp=2,tp=4", "tp: given twice");
    expect_parallel_error("", "empty");
}

static void expect_invalid(const pp_model *m, const char *spec,
                           const char *msg)
{
    pp_parallel p = layout(spec);
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_parallel_validate(&p, m, &e), PP_EINPUT);
    assert_contains(e.msg, msg);
}

static void test_parallel_validate(void **state)
{
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
    expect_invalid(&m, "dp=16,mbs=2,gbs=1000", "gbs: 1000 is not divisible "
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
static void test_parallel_uneven(void **state)
{
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
    expect_invalid(&m, "first=3", "first: an uneven pipeline split needs "
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
    assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &mid, &e),
                     0);
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

/* ------------------------------------------------------------------------
 * FLOPs and training time.
 * ---------------------------------------------------------------------- */
static void test_flops_gpt3(void **state)
{
    (void)state;
    pp_model m = load("gpt3-175b");
    pp_flops f;
    assert_int_equal(pp_flops_closed(&m, 1024, PP_RECOMPUTE_FULL, &f, NULL),
                     0);
    /* domain.md sec. 4: 3.00e18 FLOPs per iteration (3.0072e18). */
    assert_rel(f.total, 3.0072e18, 0.0005);
    double base = 96.0 * 1024 * 2048 * 96 * 12288.0 * 12288.0;
    assert_rel(f.dense, base, 1e-14);
    assert_rel(f.attn, base * 2048 / (6.0 * 12288), 1e-14);
    assert_rel(f.logit, base * 51200 / (16.0 * 96 * 12288), 1e-14);
    assert_rel(f.total, f.dense + f.attn + f.logit, 1e-15);

    pp_flops none;
    assert_int_equal(pp_flops_closed(&m, 1024, PP_RECOMPUTE_NONE, &none,
                                     NULL),
                     0);
    double b72 = 72.0 * 1024 * 2048 * 96 * 12288.0 * 12288.0;
    assert_rel(none.total,
               b72 * (1 + 2048 / (6.0 * 12288) + 51200 / (12.0 * 96 * 12288)),
               1e-14);
    assert_rel(f.model, none.total, 1e-15); /* model FLOPs never recompute */
    assert_rel(none.model, none.total, 1e-15);

    /* 100,000 iterations on one A100 at 312 TFLOP/s: 30.5 years. */
    double years = 1e5 * f.total / 312e12 / YEAR_S;
    assert_true(fabs(years - 30.5) <= 0.1);
}

static void test_flops_count_equals_closed(void **state)
{
    (void)state;
    pp_model m = load("gpt3-175b");
    const pp_recompute rs[] = {PP_RECOMPUTE_NONE, PP_RECOMPUTE_SELECTIVE,
                               PP_RECOMPUTE_FULL};
    for (size_t i = 0; i < 3; i++) {
        pp_flops a, b;
        assert_int_equal(pp_flops_closed(&m, 1024, rs[i], &a, NULL), 0);
        assert_int_equal(pp_flops_count(&m, 1024, rs[i], &b, NULL), 0);
        assert_rel(b.total, a.total, 1e-12);
        assert_rel(b.dense, a.dense, 1e-12);
        assert_rel(b.attn, a.attn, 1e-12);
        assert_rel(b.logit, a.logit, 1e-12);
        assert_rel(b.model, a.model, 1e-12);
    }
    /* Selective = none + 4 B s^2 l h. */
    pp_flops n, s;
    pp_flops_closed(&m, 1024, PP_RECOMPUTE_NONE, &n, NULL);
    pp_flops_closed(&m, 1024, PP_RECOMPUTE_SELECTIVE, &s, NULL);
    assert_rel(s.total - n.total, 4.0 * 1024 * 2048.0 * 2048 * 96 * 12288,
               1e-9);
    /* full > selective > none */
    pp_flops full;
    pp_flops_closed(&m, 1024, PP_RECOMPUTE_FULL, &full, NULL);
    assert_true(full.total > s.total && s.total > n.total);
}

static void test_flops_swiglu_gqa(void **state)
{
    (void)state;
    pp_model m = load("llama2-7b");
    pp_flops f, g;
    pp_error e = PP_ERROR_INIT;
    /* The closed form does not apply. */
    assert_int_equal(pp_flops_closed(&m, 8, PP_RECOMPUTE_FULL, &f, &e),
                     PP_EINVAL);
    assert_contains(e.msg, "llama2-7b");

    assert_int_equal(pp_flops_count(&m, 8, PP_RECOMPUTE_NONE, &f, NULL), 0);
    double tokens = 8.0 * 4096, h = 4096, ff = 11008, l = 32;
    /* 3 MLP matrices (gate, up, down) of h x ffn, 4 attention h x h. */
    double gemm = 2 * h * 3 * h + 2 * h * h + 3 * 2 * h * ff;
    assert_rel(f.dense, 3 * tokens * l * gemm, 1e-12);
    /* The same shape with GeLU has one MLP matrix fewer. */
    pp_model gl = m;
    gl.ffn = PP_FFN_GELU;
    assert_int_equal(pp_flops_count(&gl, 8, PP_RECOMPUTE_NONE, &g, NULL), 0);
    assert_rel(f.dense - g.dense, 3 * tokens * l * 2 * h * ff, 1e-12);

    /* GQA: K and V shrink to kv_heads/heads of h. */
    pp_model l70 = load("llama2-70b");
    pp_model mha = l70;
    mha.kv_heads = mha.heads;
    pp_flops_count(&l70, 1, PP_RECOMPUTE_NONE, &f, NULL);
    pp_flops_count(&mha, 1, PP_RECOMPUTE_NONE, &g, NULL);
    assert_rel(g.dense - f.dense,
               3 * 4096.0 * 80 * 2 * 8192 * 2 * (8192 - 1024), 1e-12);
}

static void test_train_time(void **state)
{
    (void)state;
    /* domain.md sec. 4: 175B, 300B tokens, 1040 A100 at 140 TFLOP/s. */
    double d = pp_train_time_s(300e9, 175e9, 1040, 140e12, true) / DAY_S;
    assert_true(fabs(d - 33.4) <= 0.05);
    /* 7.5B, 300B tokens, 256 A100 at 142 TFLOP/s. */
    d = pp_train_time_s(300e9, 7.5e9, 256, 142e12, true) / DAY_S;
    assert_true(fabs(d - 5.7) <= 0.05);
    /* 6 instead of 8 without recomputation. */
    assert_rel(pp_train_time_s(300e9, 175e9, 1040, 140e12, false),
               0.75 * pp_train_time_s(300e9, 175e9, 1040, 140e12, true),
               1e-15);
}

/* ------------------------------------------------------------------------
 * Memory.
 * ---------------------------------------------------------------------- */
static pp_memory memory(const pp_model *m, const char *spec, pp_optimizer o)
{
    pp_parallel p = layout(spec);
    pp_memory r;
    pp_error e = PP_ERROR_INIT;
    int rc = pp_memory_per_gpu(m, &p, o, &r, &e);
    if (rc != 0)
        print_error("pp_memory_per_gpu(%s): %s\n", spec, e.msg);
    assert_int_equal(rc, 0);
    return r;
}

static void test_memory_gpt3_states(void **state)
{
    (void)state;
    pp_model m = load("gpt3-175b");
    /* domain.md sec. 4: 700 GB weights, 700 GB grads, 1,400 GB optimizer,
     * 2.8 TB in all.  Our count is 174.6e9 parameters, not 175e9, hence
     * the 1% tolerance. */
    pp_memory r = memory(&m, "tp=1,pp=1,dp=1", PP_OPT_ADAM_FP32);
    assert_rel(r.params_per_gpu, pp_model_params(&m), 1e-15);
    assert_rel(r.weights, 700e9, 0.01);
    assert_rel(r.grads, 700e9, 0.01);
    assert_rel(r.optimizer, 1400e9, 0.01);
    assert_rel(r.model_states, 2.8e12, 0.01);
    /* Mixed-precision Adam: the same 16 bytes per parameter. */
    pp_memory mx = memory(&m, "tp=1,pp=1,dp=1", PP_OPT_ADAM_MIXED);
    assert_rel(mx.model_states, r.model_states, 1e-15);
    assert_rel(mx.weights, r.weights / 2, 1e-15);

    /* ZeRO-3 over 64 replicas: exactly 1/64. */
    pp_memory z = memory(&m, "dp=64,zero=3", PP_OPT_ADAM_FP32);
    assert_true(z.model_states == r.model_states / 64);
    /* ZeRO-1 shards the optimizer only, ZeRO-2 the grads too. */
    pp_memory z1 = memory(&m, "dp=64,zero=1", PP_OPT_ADAM_MIXED);
    assert_true(z1.optimizer == mx.optimizer / 64);
    assert_true(z1.grads == mx.grads);
    pp_memory z2 = memory(&m, "dp=64,zero=2", PP_OPT_ADAM_MIXED);
    assert_true(z2.grads == mx.grads / 64);
    assert_true(z2.weights == mx.weights);

    /* The optimizer step's fp32 gradient copy: Megatron-LM's own count
     * (docs/distrib_optimizer.md) is 20 bytes per parameter with 16-bit
     * gradients, 4 + 16/d with the distributed optimizer (ZeRO-1); fp32
     * Adam steps on its own fp32 gradients (16).  Here it outweighs the
     * activations, so it is what the total counts. */
    double P = pp_model_params(&m);
    assert_rel(mx.step_grads, 4 * P, 1e-15);
    assert_true(mx.step_grads > mx.activations + mx.buffers);
    assert_rel(mx.total, 20 * P, 1e-15);
    assert_rel(z1.total, (4 + 16.0 / 64) * P, 1e-15);
    assert_true(r.step_grads == 0);
    assert_rel(r.total, r.model_states + r.activations + r.buffers, 1e-15);
    /* With activations larger than the copy, the copy adds nothing. */
    pp_memory a = memory(&m, "tp=8,pp=16,dp=8,gbs=1536,recompute=none",
                         PP_OPT_ADAM_MIXED);
    assert_true(a.step_grads < a.activations);
    assert_rel(a.total, a.model_states + a.activations + a.buffers, 1e-15);
}

static void test_memory_monotonic(void **state)
{
    (void)state;
    pp_model m = load("gpt3-175b");
    const char *tps[] = {"tp=1,pp=8,dp=4,gbs=64,recompute=none",
                         "tp=2,pp=8,dp=4,gbs=64,recompute=none",
                         "tp=4,pp=8,dp=4,gbs=64,recompute=none",
                         "tp=8,pp=8,dp=4,gbs=64,recompute=none"};
    double prev = INFINITY, prev_act = INFINITY;
    for (size_t i = 0; i < 4; i++) {
        pp_memory r = memory(&m, tps[i], PP_OPT_ADAM_MIXED);
        assert_true(r.total < prev);
        assert_true(r.activations < prev_act);
        assert_rel(r.total, r.model_states
                               + fmax(r.activations + r.buffers, r.step_grads),
                   1e-15);
        prev = r.total;
        prev_act = r.activations;
    }
    /* Recomputation: full < selective < none, with and without sp. */
    const char *sp[] = {"off", "on"};
    for (size_t i = 0; i < 2; i++) {
        char a[128], b[128], c[128];
        snprintf(a, sizeof a, "tp=8,pp=8,gbs=64,sp=%s,recompute=full", sp[i]);
        snprintf(b, sizeof b, "tp=8,pp=8,gbs=64,sp=%s,recompute=selective",
                 sp[i]);
        snprintf(c, sizeof c, "tp=8,pp=8,gbs=64,sp=%s,recompute=none", sp[i]);
        pp_memory f = memory(&m, a, PP_OPT_ADAM_MIXED);
        pp_memory s = memory(&m, b, PP_OPT_ADAM_MIXED);
        pp_memory n = memory(&m, c, PP_OPT_ADAM_MIXED);
        assert_true(f.activations < s.activations);
        assert_true(s.activations < n.activations);
        assert_true(f.activations_per_layer < s.activations_per_layer);
        assert_true(f.model_states == n.model_states);
    }
    /* Sequence parallelism helps when tp > 1. */
    pp_memory off = memory(&m, "tp=8,pp=8,gbs=64,recompute=selective",
                           PP_OPT_ADAM_MIXED);
    pp_memory on = memory(&m, "tp=8,pp=8,gbs=64,sp=on,recompute=selective",
                          PP_OPT_ADAM_MIXED);
    assert_true(on.activations < off.activations);
    /* Korthikanti Table 2, selective + sp: 34 s b h / t per layer. */
    assert_rel(on.activations_per_layer, 34.0 * 2048 * 12288 / 8, 1e-15);
    /* 1F1B keeps pp micro-batches in flight on stage 0, fewer if there are
     * fewer; interleaving adds (1 + (pp-1)/(pp*vp)). */
    assert_rel(off.inflight, 8, 0);
    pp_memory few = memory(&m, "tp=8,pp=8,gbs=3,recompute=selective",
                           PP_OPT_ADAM_MIXED);
    assert_rel(few.inflight, 3, 0);
    pp_memory il = memory(&m, "tp=8,pp=8,gbs=64,vp=2,recompute=selective",
                          PP_OPT_ADAM_MIXED);
    assert_rel(il.activations, off.activations * (1 + 7.0 / 16), 1e-12);
    /* More pipeline stages: fewer parameters on stage 0. */
    pp_memory p16 = memory(&m, "tp=8,pp=16,gbs=64", PP_OPT_ADAM_MIXED);
    pp_memory p8 = memory(&m, "tp=8,pp=8,gbs=64", PP_OPT_ADAM_MIXED);
    assert_true(p16.model_states < p8.model_states);
}

/* ------------------------------------------------------------------------
 * Communication volumes.
 * ---------------------------------------------------------------------- */
static pp_comm_volume comm(const pp_model *m, const char *spec)
{
    pp_parallel p = layout(spec);
    pp_comm_volume v;
    pp_error e = PP_ERROR_INIT;
    int rc = pp_comm_per_iter(m, &p, &v, &e);
    if (rc != 0)
        print_error("pp_comm_per_iter(%s): %s\n", spec, e.msg);
    assert_int_equal(rc, 0);
    return v;
}

static void test_comm(void **state)
{
    (void)state;
    pp_model m = load("gpt3-175b");
    pp_comm_volume one = comm(&m, "tp=1,pp=1,dp=1");
    assert_true(one.tp_bytes == 0 && one.pp_bytes == 0 && one.dp_bytes == 0);

    /* TP: 4 AllReduces of 2 s b h bytes per layer per micro-batch (6 with
     * full recompute), ring 2(t-1)/t, on l/pp layers. */
    pp_comm_volume t = comm(&m, "tp=8,pp=8,dp=2,gbs=32,recompute=selective");
    double act = 2.0 * 2048 * 12288;
    double nmb = 16, layers = 12;
    assert_rel(t.tp_bytes, 4 * layers * nmb * 2 * 7.0 / 8 * act, 1e-12);
    assert_rel(t.tp_ops, 4 * layers * nmb, 0);
    pp_comm_volume tf = comm(&m, "tp=8,pp=8,dp=2,gbs=32,recompute=full");
    assert_rel(tf.tp_bytes, 1.5 * t.tp_bytes, 1e-12);
    pp_comm_volume ts = comm(&m, "tp=8,pp=8,dp=2,gbs=32,recompute=selective,"
                                 "sp=on");
    assert_rel(ts.tp_bytes, t.tp_bytes, 1e-12); /* RS + AG: same volume */
    assert_rel(ts.tp_ops, 2 * t.tp_ops, 0);

    /* PP: forward and backward per micro-batch, vp times with interleaving. */
    assert_true(t.pp_bytes > 0);
    assert_rel(t.pp_msgs, 2 * nmb, 0);
    pp_comm_volume tv = comm(&m, "tp=8,pp=8,dp=2,gbs=32,vp=2");
    assert_rel(tv.pp_bytes, 2 * t.pp_bytes, 1e-12);

    /* DP: bf16 grads, ring 2(dp-1)/dp; ZeRO 1 the same; ZeRO 3 1.5x. */
    pp_comm_volume d = comm(&m, "tp=8,pp=8,dp=16,gbs=128");
    pp_memory r = memory(&m, "tp=8,pp=8,dp=16,gbs=128", PP_OPT_ADAM_MIXED);
    assert_rel(d.dp_grad_bytes, 2 * r.params_per_gpu, 1e-15);
    assert_rel(d.dp_bytes, 2 * 15.0 / 16 * d.dp_grad_bytes, 1e-15);
    pp_comm_volume z1 = comm(&m, "tp=8,pp=8,dp=16,gbs=128,zero=1");
    assert_rel(z1.dp_bytes, d.dp_bytes, 1e-15);
    pp_comm_volume z3 = comm(&m, "tp=8,pp=8,dp=16,gbs=128,zero=3");
    assert_rel(z3.dp_bytes, 1.5 * d.dp_bytes, 1e-15);

    /* ViT-Base, fp16 gradients = 172 MB (domain.md sec. 5). */
    pp_model v = load("vit-base");
    pp_comm_volume vd = comm(&v, "dp=3,gbs=3");
    assert_rel(vd.dp_grad_bytes, 172e6, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt3_params),
        cmocka_unit_test(test_megatron_table_params),
        cmocka_unit_test(test_llama_params),
        cmocka_unit_test(test_generic_models),
        cmocka_unit_test(test_inline_model),
        cmocka_unit_test(test_inline_model_errors),
        cmocka_unit_test(test_model_file_errors),
        cmocka_unit_test(test_parallel_parse_format),
        cmocka_unit_test(test_parallel_parse_errors),
        cmocka_unit_test(test_parallel_validate),
        cmocka_unit_test(test_parallel_uneven),
        cmocka_unit_test(test_flops_gpt3),
        cmocka_unit_test(test_flops_count_equals_closed),
        cmocka_unit_test(test_flops_swiglu_gqa),
        cmocka_unit_test(test_train_time),
        cmocka_unit_test(test_memory_gpt3_states),
        cmocka_unit_test(test_memory_monotonic),
        cmocka_unit_test(test_comm),
    };
    if (!getenv("PODPLAN_DATA_DIR"))
        setenv("PODPLAN_DATA_DIR", PODPLAN_SOURCE_DIR, 1);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
