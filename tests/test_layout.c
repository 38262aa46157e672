/*
 * tests/test_layout.c: layout=, Megatron-core's pipeline layout
 * (models/layout.c): its grammar and canonical form, its bad inputs, the
 * SPEC rules around it (vp follows from it), the layers of every chunk and
 * stage, and the simulator and estimator under it: a layout spelling out
 * the even split gives the even split's iteration to the bit; a lopsided
 * one is slower.
 */
#include "models_util.h"

#include "plan_util.h"
#include "podplan/planner.h"
#include "podplan/sim.h"

static pp_layout parse_ok(const char *text) {
    pp_layout l;
    pp_error e = PP_ERROR_INIT;
    int rc = pp_layout_parse(text, &l, &e);
    if (rc) print_error("pp_layout_parse(%s): %s\n", text, e.msg);
    assert_int_equal(rc, 0);
    return l;
}

static void expect_layout_error(const char *text, const char *want) {
    pp_layout l;
    memset(&l, 0x5a, sizeof l);
    pp_layout before = l;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_layout_parse(text, &l, &e), PP_EINPUT);
    assert_contains(e.msg, "--parallel: layout: ");
    assert_contains(e.msg, want);
    /* Nothing written on failure. */
    assert_memory_equal(&l, &before, sizeof l);
}

/* Parse, format, parse again: the same runs, the same text. */
static void roundtrip(const char *text, const char *canonical, int32_t stages,
                      int64_t layers, int32_t mtp) {
    pp_layout a = parse_ok(text), b;
    char buf[256], buf2[256];
    assert_string_equal(pp_layout_format(&a, buf, sizeof buf), canonical);
    assert_int_equal(a.stages, stages);
    assert_int_equal(pp_layout_layers(&a), layers);
    assert_int_equal(a.mtp, mtp);
    b = parse_ok(buf);
    assert_int_equal(b.stages, a.stages);
    assert_int_equal(b.mtp, a.mtp);
    assert_int_equal(b.nrun, a.nrun);
    assert_memory_equal(b.run, a.run, sizeof a.run[0] * (size_t)a.nrun);
    assert_string_equal(pp_layout_format(&b, buf2, sizeof buf2), canonical);
}

static void test_layout_grammar(void **state) {
    (void)state;
    /* DeepSeek-V3's layout as NVIDIA configures it: the embedding and
     * one layer, 30 stages of two, the MTP layer and the loss. */
    pp_layout l = parse_ok("Et|(tt|)*30mL");
    assert_int_equal(l.mtp, 1);
    assert_int_equal(l.stages, 32);
    assert_int_equal(l.nrun, 3);
    assert_int_equal(l.run[0].stages, 1);
    assert_int_equal(l.run[0].layers, 1);
    assert_int_equal(l.run[1].stages, 30);
    assert_int_equal(l.run[1].layers, 2);
    assert_int_equal(l.run[2].stages, 1);
    assert_int_equal(l.run[2].layers, 0);
    assert_int_equal(pp_layout_stage(&l, 0), 1);
    assert_int_equal(pp_layout_stage(&l, 17), 2);
    assert_int_equal(pp_layout_stage(&l, 31), 0);
    assert_int_equal(pp_layout_stage(&l, 32), 0); /* past the end */
    assert_int_equal(pp_layout_before(&l, 0), 0);
    assert_int_equal(pp_layout_before(&l, 1), 1);
    assert_int_equal(pp_layout_before(&l, 31), 61);
    assert_int_equal(pp_layout_before(&l, 99), 61);
    roundtrip("Et|(tt|)*30mL", "Et|(tt|)*30mL", 32, 61, 1);
    roundtrip("Et|(tt|)*30L", "Et|(tt|)*30L", 32, 61, 0);
    /* c*N, long runs written back as t*N, stage 0 and the last kept
     * apart from equal neighbours. */
    roundtrip("Et*3|(tt|)*29t*2L", "Ettt|(tt|)*29ttL", 31, 63, 0);
    roundtrip("E|t*12|t*12|L", "E|(t*12|)*2L", 4, 24, 0);
    roundtrip("Et|t|t|tL", "Et|(t|)*2tL", 4, 4, 0);
    roundtrip("EttL", "EttL", 1, 2, 0);
    /* Empty stages, as Megatron allows; (X)*1 and t*1; m*N. */
    roundtrip("E||(t|)*1t*1L", "E||t|tL", 4, 2, 0);
    roundtrip("Et|tm*2L", "Et|tmmL", 2, 2, 2);
    roundtrip("Et|m*6L", "Et|m*6L", 2, 1, 6);
    roundtrip("Et|(m)*3L", "Et|mmmL", 2, 1, 3);
}

static void test_layout_grammar_errors(void **state) {
    (void)state;
    expect_layout_error("Ettt|(tt|)*29,m|L", "commas separate SPEC keys");
    /* Megatron-core builds the MTP block after the last decoder layer,
     * beside the loss. */
    expect_layout_error("Et|m|tL", "(m) must close the last virtual stage, "
                                   "just before L");
    expect_layout_error("Et|tmtL", "(m) must close the last virtual stage");
    expect_layout_error("Emt|tL", "(m) must close the last virtual stage");
    expect_layout_error("tEt|L", "the embedding (E) must open the first");
    expect_layout_error("|Et|L", "the embedding (E) must open the first");
    expect_layout_error("EEt|L", "the embedding (E) must open the first");
    expect_layout_error("Et|L|tL", "the loss (L) must close the last");
    expect_layout_error("Et|tLt", "the loss (L) must close the last");
    expect_layout_error("Et|tt", "the loss (L) is missing");
    expect_layout_error("t|tL", "the embedding (E) is missing");
    expect_layout_error("Et|xL", "expected E, t, m, L, |, (...)*N or c*N");
    expect_layout_error("E((t|)*2)*2L", "nested parentheses");
    expect_layout_error("E(t|L", "\"(\" without its \")\"");
    expect_layout_error("Et)|L", "\")\" without its \"(\"");
    expect_layout_error("E(t|)L", "must be followed by \"*N\"");
    expect_layout_error("E(t|)*99999999999L", "expands to more than");
    expect_layout_error("Et*99999999999|L", "expands to more than");
    /* 33 runs: stage counts 0, 1, 2, 1, 2, ... never equal to the one
     * before. */
    char many[256] = "E|";
    for (int i = 0; i < 33; i++) strcat(many, i % 2 ? "tt|" : "t|");
    strcat(many, "L");
    expect_layout_error(many, "more than 32 runs");
    /* 32 runs are kept. */
    char ok[256] = "E|";
    for (int i = 0; i < 30; i++) strcat(ok, i % 2 ? "tt|" : "t|");
    strcat(ok, "L");
    assert_int_equal(parse_ok(ok).nrun, 32);
}

static void test_layout_spec(void **state) {
    (void)state;
    pp_model ds = load("deepseek-v3"); /* 61 layers */
    pp_error e = PP_ERROR_INIT;
    char buf[PP_SPEC_MAX], again[PP_SPEC_MAX];
    pp_parallel p = layout("tp=2,pp=8,dp=64,ep=64,etp=1,sp=on,gbs=1024,"
                           "layout=Et|(tt|)*30mL");
    /* vp follows from the layout: 32 virtual stages over pp 8. */
    assert_int_equal(p.vp, 4);
    assert_int_equal(pp_parallel_validate(&p, &ds, &e), 0);
    pp_parallel_format(&p, buf, sizeof buf);
    assert_contains(buf, ",vp=4,");
    assert_contains(buf, ",layout=Et|(tt|)*30mL");
    /* The SPEC printed reads back as itself (vp=4 given and agreeing). */
    pp_parallel q = layout(buf);
    assert_string_equal(pp_parallel_format(&q, again, sizeof again), buf);
    assert_true(pp_parallel_uneven(&p));

    /* Chunk v is chunk v / pp of stage v % pp; layers in model order. */
    assert_int_equal(pp_parallel_chunk_layers(&p, &ds, 0), 1);
    assert_int_equal(pp_parallel_chunk_layers(&p, &ds, 8), 2);
    assert_int_equal(pp_parallel_chunk_layers(&p, &ds, 31), 0);
    assert_int_equal(pp_parallel_chunk_first(&p, &ds, 0), 0);
    assert_int_equal(pp_parallel_chunk_first(&p, &ds, 1), 1);
    assert_int_equal(pp_parallel_chunk_first(&p, &ds, 8), 15);
    assert_int_equal(pp_parallel_chunk_first(&p, &ds, 31), 61);
    int64_t sum = 0;
    for (int64_t s = 0; s < 8; s++) {
        int64_t n = pp_parallel_stage_layers(&p, &ds, s);
        assert_int_equal(n, s == 0 ? 7 : s == 7 ? 6 : 8);
        sum += n;
    }
    assert_int_equal(sum, 61);

    expect_parallel_error(
        "pp=3,layout=Et|(tt|)*30L",
        "layout: 32 virtual stages are not a multiple of pp (3)");
    expect_parallel_error("pp=8,vp=2,layout=Et|(tt|)*30L",
                          "vp: 2, but the layout's 32 virtual stages over pp 8 "
                          "make vp 4");
    /* A comma ends the value: the SPEC parser sees "Et|(tt|)*29". */
    expect_parallel_error("pp=8,layout=Et|(tt|)*29,m|L",
                          "write the layout without commas");
    /* The m units are the model's MTP layers (mtp_layers 1). */
    expect_invalid(&ds,
                   "tp=2,pp=8,dp=64,ep=64,etp=1,sp=on,gbs=1024,"
                   "layout=Et|(tt|)*30L",
                   "layout: \"Et|(tt|)*30L\" places 0 multi-token-prediction "
                   "layers (m), model deepseek-v3 has 1 (mtp_layers)");
    expect_invalid(&ds,
                   "tp=2,pp=8,dp=64,ep=64,etp=1,sp=on,gbs=1024,"
                   "layout=Et|(tt|)*30mmL",
                   "places 2 multi-token-prediction layers");
    pp_model l8 = load("llama3-8b"); /* 32 layers */
    expect_invalid(&l8, "pp=8,dp=1,gbs=8,layout=Et|(tt|)*30L",
                   "layout: \"Et|(tt|)*30L\" places 61 layers, model "
                   "llama3-8b has 32");
    expect_invalid(&ds, "pp=8,gbs=8,first=1,layout=Et|(tt|)*30mL",
                   "first: not with layout=");
    expect_invalid(&ds, "pp=1,layout=Et*61mL",
                   "layout: needs pipeline parallelism");
    /* A vp changed after the layout was read is caught by validate. */
    p = layout("pp=8,gbs=8,layout=Et|(tt|)*30mL");
    p.vp = 2;
    assert_int_equal(pp_parallel_validate(&p, &ds, &e), PP_EINPUT);
    assert_contains(e.msg, "32 virtual stages, but pp x vp = 8 x 2");
    /* The interleaved schedule's rule still holds: micro-batches in
     * groups of pp. */
    expect_invalid(&ds, "pp=8,gbs=4,layout=Et|(tt|)*30mL",
                   "to be a multiple of pp");
    pp_model g = load("resnet50");
    expect_invalid(&g, "pp=2,layout=Et|tL", "model resnet50 is generic");
}

/* Random strings over the grammar's alphabet (a fixed seed): every one
 * parses or is refused with PP_EINPUT, never anything else; what parses
 * formats to a canonical string that parses back to the same runs.  Run
 * under ASan by CI, this is also the parser's memory check. */
static void test_layout_random(void **state) {
    (void)state;
    static const char alphabet[] = "EttttL||()**0123456789,m";
    uint64_t x = 0x9E3779B97F4A7C15ULL; /* xorshift64 */
    int parsed = 0;
    for (int i = 0; i < 20000; i++) {
        char s[48];
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = (size_t)(x % (sizeof s - 1));
        for (size_t k = 0; k < n; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            s[k] = alphabet[x % (sizeof alphabet - 1)];
        }
        s[n] = '\0';
        /* Valid ones are rare among random strings: frame some. */
        if (i % 2) {
            s[0] = 'E';
            if (n > 1) s[n - 1] = 'L';
        }
        pp_layout l;
        pp_error e = PP_ERROR_INIT;
        int rc = pp_layout_parse(s, &l, &e);
        if (rc != 0) {
            assert_int_equal(rc, PP_EINPUT);
            assert_contains(e.msg, "--parallel: layout: ");
            continue;
        }
        parsed++;
        char buf[PP_SPEC_MAX];
        pp_layout_format(&l, buf, sizeof buf);
        pp_layout b = parse_ok(buf);
        assert_int_equal(b.stages, l.stages);
        assert_int_equal(b.nrun, l.nrun);
        assert_int_equal(b.mtp, l.mtp);
        assert_memory_equal(b.run, l.run, sizeof l.run[0] * (size_t)l.nrun);
    }
    printf("%d of 20000 random layouts parsed\n", parsed);
    assert_true(parsed > 100);
}

/* A layout that spells out the even interleaved split is that split: the
 * same chunks, memory and (below) iteration. */
static const char *even_spec = "tp=2,pp=4,dp=2,vp=2,gbs=16,sp=on,zero=1,"
                               "recompute=selective";
static const char *even_layout = "tp=2,pp=4,dp=2,gbs=16,sp=on,zero=1,"
                                 "recompute=selective,"
                                 "layout=Et*4|(t*4|)*6t*4L";
/* The same 32 layers with the last chunk of the last stage carrying six
 * and the first chunk two. */
static const char *lopsided = "tp=2,pp=4,dp=2,gbs=16,sp=on,zero=1,"
                              "recompute=selective,"
                              "layout=Ett|(t*4|)*6t*6L";

static void test_layout_even(void **state) {
    (void)state;
    pp_model m = load("llama3-8b");
    pp_error e = PP_ERROR_INIT;
    pp_parallel a = layout(even_spec), b = layout(even_layout);
    assert_int_equal(b.vp, 2);
    assert_int_equal(pp_parallel_validate(&a, &m, &e), 0);
    assert_int_equal(pp_parallel_validate(&b, &m, &e), 0);
    for (int64_t v = 0; v < 8; v++) {
        assert_int_equal(pp_parallel_chunk_layers(&a, &m, v),
                         pp_parallel_chunk_layers(&b, &m, v));
        assert_int_equal(pp_parallel_chunk_first(&a, &m, v),
                         pp_parallel_chunk_first(&b, &m, v));
    }
    /* Without a layout, chunk_first is the sum of the chunks before,
     * uneven ends included. */
    pp_model g = load("gpt3-175b");
    pp_parallel u = layout("pp=4,vp=2,dp=2,gbs=16,first=22,last=22");
    assert_int_equal(pp_parallel_validate(&u, &g, &e), 0);
    for (int64_t v = 0, sum = 0; v < 8; v++) {
        assert_int_equal(pp_parallel_chunk_first(&u, &g, v), sum);
        sum += pp_parallel_chunk_layers(&u, &g, v);
    }
    pp_memory ma, mb;
    assert_int_equal(pp_memory_per_gpu(&m, &a, PP_OPT_ADAM_MIXED, &ma, &e), 0);
    assert_int_equal(pp_memory_per_gpu(&m, &b, PP_OPT_ADAM_MIXED, &mb, &e), 0);
    assert_true(ma.total == mb.total);
    assert_true(ma.params_per_gpu == mb.params_per_gpu);
    /* Lopsided: the last stage holds 10 layers, the first 6: the most
     * parameters sit on the last. */
    pp_parallel c = layout(lopsided);
    assert_int_equal(pp_parallel_validate(&c, &m, &e), 0);
    assert_int_equal(pp_parallel_stage_layers(&c, &m, 0), 6);
    assert_int_equal(pp_parallel_stage_layers(&c, &m, 3), 10);
    pp_memory mc;
    assert_int_equal(pp_memory_per_gpu(&m, &c, PP_OPT_ADAM_MIXED, &mc, &e), 0);
    assert_true(mc.params_per_gpu > ma.params_per_gpu);
}

static double run(const char *spec, const pp_model *m, pp_cluster *c,
                  pp_gpu_profile *g, double *est) {
    pp_error e = PP_ERROR_INIT;
    pp_parallel p = layout(spec);
    pp_stack_resolve(g, &p);
    if (pp_parallel_validate(&p, m, &e)) fail_msg("%s", e.msg);
    pp_step_config cfg;
    pp_step_config_init(&cfg);
    cfg.model = m;
    cfg.par = &p;
    cfg.cluster = c;
    cfg.profile = g;
    return sim_and_estimate(&cfg, est, NULL);
}

static void test_layout_simulate(void **state) {
    (void)state;
    pp_cluster *c = load_cluster_set("dgx-h100-ndr", "node.count=2");
    pp_model m = load("llama3-8b");
    pp_gpu_profile g = load_gpu_profile("h100-sxm5", NULL);
    double ea, eb, ec, e1;
    double ta = run(even_spec, &m, c, &g, &ea);
    double tb = run(even_layout, &m, c, &g, &eb);
    double tc = run(lopsided, &m, c, &g, &ec);
    /* vp 1: the bubble of 3 stages over 4 micro-batches, not 3 / (2 x 4). */
    double t1 = run("tp=2,pp=4,dp=2,gbs=16,sp=on,zero=1,recompute=selective",
                    &m, c, &g, &e1);
    printf("llama3-8b on 16 H100: even vp 2 %.6f s, as a layout %.6f s, "
           "lopsided %.6f s, vp 1 %.6f s; estimates %.6f %.6f %.6f s\n",
           ta, tb, tc, t1, ea, eb, ec);
    assert_true(ta == tb);
    assert_true(ea == eb);
    /* The last stage's 10 layers against 8 set the pace: at least
     * (10 - 8) / 8 of the compute slower, less what the bubble hides. */
    assert_true(tc > 1.05 * ta);
    assert_true(ec > 1.05 * ea);
    assert_true(t1 > ta);
    assert_rel(ec, tc, 0.15);
    pp_cluster_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_grammar),
        cmocka_unit_test(test_layout_grammar_errors),
        cmocka_unit_test(test_layout_random),
        cmocka_unit_test(test_layout_spec),
        cmocka_unit_test(test_layout_even),
        cmocka_unit_test(test_layout_simulate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
