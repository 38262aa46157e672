/*
 * test_exec_gemm.c: exec gemm and exec membw on the CPU: the statistics,
 * the size lists, the CPU GEMM against a naive triple loop, the layer
 * GEMMs of GPT-3 175B at TP 8 worked by hand, STREAM on the host, and
 * the CLI's usage errors.  The GPU half is test_exec_cuda.c.
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
#include "podplan/exec.h"

/* --- statistics ---------------------------------------------------------- */

static void test_stats(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_exec_stats s;
    double odd[] = {3, 1, 2};
    assert_int_equal(pp_exec_stats_compute(odd, 3, &s, &e), 0);
    assert_true(s.median == 2 && s.min == 1 && s.max == 3 && s.n == 3);
    assert_true(odd[0] == 1 && odd[2] == 3); /* sorted in place */
    double even[] = {4, 1, 3, 2};
    assert_int_equal(pp_exec_stats_compute(even, 4, &s, &e), 0);
    assert_true(s.median == 2.5);
    /* 1..11: rank p (n - 1) = 10 p, so p10 = 2, p90 = 10 exactly. */
    double v[11];
    for (int i = 0; i < 11; i++) v[10 - i] = i + 1;
    assert_int_equal(pp_exec_stats_compute(v, 11, &s, &e), 0);
    assert_true(s.p10 == 2 && s.median == 6 && s.p90 == 10 && s.mean == 6);
    /* Interpolated: 1..4 at p = 0.1 is rank 0.3, 1.3. */
    double four[] = {1, 2, 3, 4};
    assert_true(fabs(pp_exec_quantile(four, 4, 0.1) - 1.3) < 1e-12);
    assert_true(fabs(pp_exec_quantile(four, 4, 0.9) - 3.7) < 1e-12);
    /* cv: {1, 3}: mean 2, population sd 1. */
    double two[] = {3, 1};
    assert_int_equal(pp_exec_stats_compute(two, 2, &s, &e), 0);
    assert_true(fabs(s.cv - 0.5) < 1e-12);
    double one[] = {7};
    assert_int_equal(pp_exec_stats_compute(one, 1, &s, &e), 0);
    assert_true(s.p10 == 7 && s.p90 == 7 && s.cv == 0);
    assert_int_equal(pp_exec_stats_compute(one, 0, &s, &e), PP_EINVAL);
    double bad[] = {1, NAN};
    pp_error_clear(&e);
    assert_int_equal(pp_exec_stats_compute(bad, 2, &s, &e), PP_EINVAL);
    assert_non_null(strstr(e.msg, "not finite"));
}

/* --- size lists ---------------------------------------------------------- */

static void parse_ok(const char *t, const int64_t *want, size_t nwant) {
    pp_error e = PP_ERROR_INIT;
    int64_t v[64];
    size_t n = 99;
    if (pp_exec_parse_dims(t, "-m", v, 64, &n, &e) != 0)
        fail_msg("\"%s\": %s", t, e.msg);
    assert_int_equal(n, nwant);
    for (size_t i = 0; i < n; i++) assert_int_equal(v[i], want[i]);
}

static void parse_bad(const char *t, int code, const char *msg) {
    pp_error e = PP_ERROR_INIT;
    int64_t v[8];
    size_t n = 99;
    assert_int_equal(pp_exec_parse_dims(t, "-m", v, 8, &n, &e), code);
    assert_int_equal(n, 99); /* untouched */
    if (!strstr(e.msg, msg))
        fail_msg("\"%s\": got \"%s\", want \"%s\"", t, e.msg, msg);
}

static void test_parse_dims(void **state) {
    (void)state;
    parse_ok("4096", (int64_t[]){4096}, 1);
    parse_ok("4096,8192", (int64_t[]){4096, 8192}, 2);
    parse_ok("1024:8192:x2", (int64_t[]){1024, 2048, 4096, 8192}, 4);
    parse_ok("1024:5000:x2", (int64_t[]){1024, 2048, 4096}, 3);
    parse_ok("1024:4096:+1024", (int64_t[]){1024, 2048, 3072, 4096}, 4);
    parse_ok("100,1:27:x3", (int64_t[]){100, 1, 3, 9, 27}, 5);
    parse_bad("abc", PP_EUSAGE, "-m: expected a positive integer or a range");
    parse_bad("0", PP_EUSAGE, "got \"0\"");
    parse_bad("-5", PP_EUSAGE, "got \"-5\"");
    parse_bad("4096,", PP_EUSAGE, "got \"\"");
    parse_bad("", PP_EUSAGE, "empty list");
    parse_bad("8192:1024:x2", PP_EUSAGE, "hi is below lo");
    parse_bad("1:8:x1", PP_EUSAGE, "factor must be at least 2");
    parse_bad("1:8:*2", PP_EUSAGE, "expected lo:hi:xF");
    parse_bad("1:8", PP_EUSAGE, "bad range \"1:8\"");
    parse_bad("1:100000:+1", PP_ERANGE, "more than 8 sizes");
    parse_bad("99999999999", PP_EUSAGE, "got \"99999999999\"");
}

/* --- the CPU GEMM -------------------------------------------------------- */

static void test_cpu_gemm_correct(void **state) {
    (void)state;
    static const int64_t shapes[][4] = {
        {1, 1, 1, 1},     {1, 3, 5, 7},     {2, 17, 13, 31},
        {3, 33, 65, 129}, {1, 127, 1, 255}, {1, 1, 200, 3},
    };
    for (size_t q = 0; q < sizeof shapes / sizeof shapes[0]; q++) {
        int64_t b = shapes[q][0], m = shapes[q][1], n = shapes[q][2],
                k = shapes[q][3];
        float *a = malloc((size_t)(b * m * k) * sizeof *a);
        float *w = malloc((size_t)(b * n * k) * sizeof *w);
        float *c = malloc((size_t)(b * m * n) * sizeof *c);
        double *ref = malloc((size_t)(b * m * n) * sizeof *ref);
        for (int64_t i = 0; i < b * m * k; i++)
            a[i] = (float)((i * 37 % 101) - 50) / 50.0f;
        for (int64_t i = 0; i < b * n * k; i++)
            w[i] = (float)((i * 53 % 97) - 48) / 48.0f;
        pp_error e = PP_ERROR_INIT;
        assert_int_equal(pp_exec_sgemm_cpu(a, w, c, b, m, n, k, &e), 0);
        /* The naive triple loop, written out here rather than trusted. */
        for (int64_t x = 0; x < b; x++)
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double s = 0, mag = 0;
                    for (int64_t l = 0; l < k; l++) {
                        double p = (double)a[(x * m + i) * k + l] *
                                   w[(x * n + j) * k + l];
                        s += p;
                        mag += fabs(p);
                    }
                    double got = c[(x * m + i) * n + j];
                    if (fabs(got - s) > 1e-5 * mag + 1e-30)
                        fail_msg("%lldx%lldx%lldx%lld: C[%lld][%lld][%lld] = "
                                 "%g, want %g",
                                 (long long)b, (long long)m, (long long)n,
                                 (long long)k, (long long)x, (long long)i,
                                 (long long)j, got, s);
                }
        /* And the library's reference agrees with the loop. */
        pp_exec_gemm_ref(a, w, ref, b, m, n, k);
        for (int64_t i = 0; i < b * m * n; i++)
            assert_true(fabs(ref[i] - c[i]) <= 1e-4 * (1 + fabs(ref[i])));
        free(a);
        free(w);
        free(c);
        free(ref);
    }
}

static void test_cpu_gemm_run(void **state) {
    (void)state;
    pp_exec_gemm_opts o;
    pp_exec_gemm_opts_init(&o, PP_EXEC_CPU);
    assert_int_equal(o.dtype, PP_GEMM_FP32);
    assert_int_equal(o.iters, 100);
    o.iters = 7;
    o.warmup = 1;
    pp_gemm_shape s = {"odd", 2, 37, 29, 53, false};
    pp_exec_gemm_result r;
    pp_error e = PP_ERROR_INIT;
    if (pp_exec_gemm_run(&o, &s, &r, &e)) fail_msg("%s", e.msg);
    assert_int_equal(r.time.n, 7);
    assert_true(r.time.min <= r.time.p10 && r.time.p10 <= r.time.median &&
                r.time.median <= r.time.p90 && r.time.p90 <= r.time.max);
    assert_true(r.time.min > 0);
    assert_true(r.flops == 2.0 * 2 * 37 * 29 * 53);
    assert_true(isfinite(r.flops_per_s) && r.flops_per_s > 0);
    assert_true(r.checked && r.check_err <= 1);
    /* A few KB: rotated among the most sets allowed. */
    assert_int_equal(r.buffers, 16);
    assert_string_equal(r.shape.name, "odd");
    /* fp32 only on the CPU. */
    o.dtype = PP_GEMM_BF16;
    assert_int_equal(pp_exec_gemm_run(&o, &s, &r, &e), PP_EUSAGE);
    /* Grouped issue is cuda's; per-call set-up needs it. */
    o.dtype = PP_GEMM_FP32;
    o.streams = 4;
    pp_error_clear(&e);
    assert_int_equal(pp_exec_gemm_run(&o, &s, &r, &e), PP_EUSAGE);
    assert_non_null(strstr(e.msg, "--streams"));
    o.streams = 0;
    o.setup_per_call = true;
    assert_int_equal(pp_exec_gemm_run(&o, &s, &r, &e), PP_EUSAGE);
    /* Holding SMs is cuda's too. */
    o.setup_per_call = false;
    o.reserve_sms = 20;
    pp_error_clear(&e);
    assert_int_equal(pp_exec_gemm_run(&o, &s, &r, &e), PP_EUSAGE);
    assert_non_null(strstr(e.msg, "--reserve-sms"));
}

static void test_cuda_absent(void **state) {
    (void)state;
    char why[256];
    if (pp_exec_cuda_usable(why, sizeof why)) skip();
    assert_true(why[0] != '\0');
    pp_exec_gemm_opts o;
    pp_exec_gemm_opts_init(&o, PP_EXEC_CUDA);
    pp_gemm_shape s = {"", 1, 64, 64, 64, false};
    pp_exec_gemm_result r;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_exec_gemm_run(&o, &s, &r, &e), PP_ENODEV);
    assert_non_null(strstr(e.msg, why));
    pp_error_clear(&e);
    pp_exec_membw_result m;
    assert_int_equal(pp_exec_membw_run(PP_EXEC_CUDA, PP_MEMBW_COPY, 1 << 20, 3,
                                       1, 0, &m, &e),
                     PP_ENODEV);
}

/* --- the layer's GEMMs --------------------------------------------------- */

/* GPT-3 175B: h = 12288, a = 96 (d = 128), s = 2048, ffn 4h = 49152.
 * At tp = 8, mbs = 1 (tokens 2048): QKV n = 3h/8 = 4608, k = h; the
 * attention core has a/8 = 12 heads: scores 2048 x 2048 x 128, values
 * 2048 x 128 x 2048; proj k = h/8 = 1536; fc1 n = 4h/8 = 6144;
 * fc2 k = 6144. */
static void test_layer_gemms(void **state) {
    (void)state;
    pp_model m;
    pp_parallel p;
    pp_error e = PP_ERROR_INIT;
    if (pp_model_load("gpt3-175b", &m, &e)) fail_msg("%s", e.msg);
    pp_parallel_init(&p);
    p.tp = 8;
    pp_gemm_shape g[8];
    size_t n = 0;
    assert_int_equal(pp_layer_gemms(&m, &p, g, 8, &n, &e), 0);
    assert_int_equal(n, 6);
    static const struct {
        const char *name;
        int64_t b, m, n, k;
    } want[] = {
        {"qkv", 1, 2048, 4608, 12288},
        {"attn scores", 12, 2048, 2048, 128},
        {"attn values", 12, 2048, 128, 2048},
        {"attn proj", 1, 2048, 12288, 1536},
        {"mlp fc1", 1, 2048, 6144, 12288},
        {"mlp fc2", 1, 2048, 12288, 6144},
    };
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(g[i].name, want[i].name);
        assert_int_equal(g[i].batch, want[i].b);
        assert_int_equal(g[i].m, want[i].m);
        assert_int_equal(g[i].n, want[i].n);
        assert_int_equal(g[i].k, want[i].k);
    }
    /* mbs = 2 doubles the tokens and the bmm batch. */
    p.mbs = 2;
    assert_int_equal(pp_layer_gemms(&m, &p, g, 8, &n, &e), 0);
    assert_int_equal(g[0].m, 4096);
    assert_int_equal(g[1].batch, 24);
    assert_int_equal(pp_layer_gemms(&m, &p, g, 5, &n, &e), PP_ERANGE);
}

/* An MoE layer's GEMMs, as sim/train/moe.c prices them.  Qwen3-30B-A3B
 * (h 2048, 128 experts of 768, top 8, no shared ones) at tp 1, EP 8,
 * mbs 1 of 4096: the router over the 4096 tokens, then 16 local experts
 * of 4096 x 8 / 16 = 2048 rows each as one grouped GEMM: fc1 2 x 768
 * wide (SwiGLU), fc2 back to h.  Expert TP 2 halves each expert's width
 * and gathers twice the rows; cp 2 halves the tokens.  The attention's
 * four shapes come first, unchanged. */
static void valid_layout(const pp_model *m, const char *spec, pp_parallel *p) {
    pp_error e = PP_ERROR_INIT;
    pp_parallel_init(p);
    if (pp_parallel_parse(spec, p, &e) || pp_parallel_validate(p, m, &e))
        fail_msg("%s: %s", spec, e.msg);
}

static void test_layer_gemms_moe(void **state) {
    (void)state;
    pp_model m;
    pp_parallel p;
    pp_error e = PP_ERROR_INIT;
    if (pp_model_load("qwen3-30b-a3b", &m, &e)) fail_msg("%s", e.msg);
    valid_layout(&m, "tp=1,dp=8,ep=8,mbs=1", &p);
    pp_gemm_shape g[PP_LAYER_GEMMS_MAX];
    size_t n = 0;
    assert_int_equal(pp_layer_gemms(&m, &p, g, PP_LAYER_GEMMS_MAX, &n, &e), 0);
    assert_int_equal(n, 7);
    assert_string_equal(g[3].name, "attn proj");
    assert_string_equal(g[4].name, "router");
    assert_true(g[4].batch == 1 && g[4].m == 4096 && g[4].n == 128 &&
                g[4].k == 2048 && !g[4].grouped);
    assert_string_equal(g[5].name, "experts fc1");
    assert_true(g[5].batch == 16 && g[5].m == 2048 && g[5].n == 1536 &&
                g[5].k == 2048 && g[5].grouped);
    assert_string_equal(g[6].name, "experts fc2");
    assert_true(g[6].batch == 16 && g[6].m == 2048 && g[6].n == 2048 &&
                g[6].k == 768 && g[6].grouped);
    assert_int_equal(pp_layer_gemms(&m, &p, g, 6, &n, &e), PP_ERANGE);
    /* Backward, last first: each GEMM's dgrad (m x k, inner n) and wgrad
     * (k x n, inner m: each expert's 2048 rows reduced). */
    pp_gemm_shape b[PP_LAYER_GEMMS_BWD_MAX];
    assert_int_equal(
        pp_layer_gemms_bwd(&m, &p, b, PP_LAYER_GEMMS_BWD_MAX, &n, &e), 0);
    assert_int_equal(n, 14);
    assert_string_equal(b[0].name, "experts fc2 dgrad");
    assert_true(b[0].batch == 16 && b[0].m == 2048 && b[0].n == 768 &&
                b[0].k == 2048 && b[0].grouped);
    assert_string_equal(b[3].name, "experts fc1 wgrad");
    assert_true(b[3].m == 2048 && b[3].n == 1536 && b[3].k == 2048 &&
                b[3].grouped);
    assert_string_equal(b[13].name, "qkv wgrad");
    assert_true(b[13].m == 2048 && b[13].n == 5120 && b[13].k == 4096 &&
                !b[13].grouped);
    assert_int_equal(pp_layer_gemms_bwd(&m, &p, b, 13, &n, &e), PP_ERANGE);
    valid_layout(&m, "tp=2,dp=8,cp=2,ep=8,etp=2,mbs=1,sp=on", &p);
    assert_int_equal(pp_layer_gemms(&m, &p, g, PP_LAYER_GEMMS_MAX, &n, &e), 0);
    assert_true(g[4].m == 1024); /* 4096 / cp 2 / tp 2 */
    assert_true(g[5].batch == 16 && g[5].m == 1024 && g[5].n == 768);
    assert_true(g[6].k == 384);
}

static void test_cli_model_list(void **state) {
    (void)state;
    cli_result r;
    cli_runf(
        &r, "exec gemm --model gpt3-175b --parallel tp=8 --list --format json");
    if (r.status != 0) fail_msg("status %d: %s", r.status, r.err);
    json_t *j = cli_json(&r);
    json_t *s = json_object_get(j, "shapes");
    assert_int_equal(json_array_size(s), 6);
    json_t *qkv = json_array_get(s, 0);
    assert_string_equal(json_string_value(json_object_get(qkv, "name")), "qkv");
    assert_int_equal(json_integer_value(json_object_get(qkv, "n")), 4608);
    assert_int_equal(json_integer_value(json_object_get(qkv, "k")), 12288);
    json_t *fc2 = json_array_get(s, 5);
    assert_int_equal(json_integer_value(json_object_get(fc2, "k")), 6144);
    json_decref(j);
    cli_result_free(&r);
    cli_runf(&r, "exec gemm -m 1024:4096:x2 -n 512,768 -k 64 --list");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "4096    768     64"));
    assert_null(strstr(r.out, "grouped"));
    cli_result_free(&r);
    /* An MoE model's experts are listed as the grouped GEMM they run as;
     * the dense shapes say nothing of it. */
    j = cli_json_ok("exec gemm --model qwen3-30b-a3b --parallel tp=1,dp=8,"
                    "ep=8 --list --format json");
    s = json_object_get(j, "shapes");
    assert_int_equal(json_array_size(s), 7);
    assert_null(json_object_get(json_array_get(s, 4), "grouped"));
    json_t *x = json_array_get(s, 5);
    assert_string_equal(json_string_value(json_object_get(x, "name")),
                        "experts fc1");
    assert_true(json_is_true(json_object_get(x, "grouped")));
    json_decref(j);
    cli_runf(&r, "exec gemm --model qwen3-30b-a3b --parallel tp=1,dp=8,ep=8 "
                 "--list");
    assert_non_null(strstr(r.out, "experts fc2     16   2048   2048    768"));
    assert_non_null(strstr(r.out, "grouped"));
    cli_result_free(&r);
    /* --pass all: the 6 forward GEMMs, then their 12 backward ones, the
     * name column widened for them. */
    j = cli_json_ok("exec gemm --model gpt3-175b --parallel tp=8 --pass all "
                    "--list --format json");
    s = json_object_get(j, "shapes");
    assert_int_equal(json_array_size(s), 18);
    x = json_array_get(s, 7);
    assert_string_equal(json_string_value(json_object_get(x, "name")),
                        "mlp fc2 wgrad");
    assert_int_equal(json_integer_value(json_object_get(x, "m")), 6144);
    json_decref(j);
    cli_runf(&r, "exec gemm --model gpt3-175b --parallel tp=8 --pass bwd "
                 "--list");
    assert_non_null(strstr(r.out, "attn values dgrad    12   2048   2048"));
    cli_result_free(&r);
}

static void test_cli_cpu_run(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "exec gemm --backend cpu -m 64,33 -n 48 -k 32 --iters 5 "
                 "--warmup 1 --peak 1TFLOPS --format json");
    if (r.status != 0) fail_msg("status %d: %s", r.status, r.err);
    json_t *j = cli_json(&r);
    json_t *res = json_object_get(j, "results");
    assert_int_equal(json_array_size(res), 2);
    json_t *x = json_array_get(res, 1);
    assert_int_equal(json_integer_value(json_object_get(x, "m")), 33);
    double med = json_number_value(json_object_get(x, "time_median_s"));
    double p10 = json_number_value(json_object_get(x, "time_p10_s"));
    double tf = json_number_value(json_object_get(x, "tflops"));
    double frac = json_number_value(json_object_get(x, "fraction_of_peak"));
    assert_true(med > 0 && p10 <= med && tf > 0);
    assert_true(fabs(frac - tf) < 1e-9 * (1 + tf)); /* peak 1 TFLOP/s */
    assert_true(json_is_true(json_object_get(x, "checked")));
    assert_string_equal(json_string_value(json_object_get(x, "backend")),
                        "cpu");
    json_decref(j);
    cli_result_free(&r);
}

static void expect_usage(const char *cmdline, const char *msg) {
    cli_result r;
    cli_runf(&r, "%s", cmdline);
    if (r.status != 2 || !strstr(r.err, msg))
        fail_msg("%s: status %d, stderr \"%s\", want 2 and \"%s\"", cmdline,
                 r.status, r.err, msg);
    cli_result_free(&r);
}

static void test_cli_usage(void **state) {
    (void)state;
    expect_usage(
        "exec gemm -m 8192:1024:x2 -n 1 -k 1 --list",
        "podplan exec gemm: -m: bad range \"8192:1024:x2\": hi is below lo");
    expect_usage("exec gemm -m abc -n 1 -k 1",
                 "-m: expected a positive integer");
    expect_usage("exec gemm -m 64 -n 64", "-m, -n and -k are all needed");
    expect_usage("exec gemm --model gpt3-175b --square 64",
                 "give one of --model");
    expect_usage("exec gemm --square 64 --parallel tp=8",
                 "--parallel goes with --model");
    expect_usage("exec gemm --square 64 --pass bwd",
                 "--pass goes with --model");
    expect_usage("exec gemm --model gpt3-175b --pass sideways --list",
                 "--pass");
    expect_usage("exec gemm --backend cpu --dtype bf16 --square 64",
                 "fp32 only");
    expect_usage("exec gemm --backend tpu --square 64", "--backend");
    expect_usage("exec gemm --square 1:65536:+1", "more than 64 sizes");
    expect_usage("exec gemm --model gpt3-175b --parallel tp=7 --list", "tp");
    expect_usage("exec gemm --backend cpu --square 64 --gpu h100-sxm",
                 "did you mean \"h100-sxm5\"");
    expect_usage("exec gemm --backend cpu --square 64 --streams 4",
                 "--streams: grouped issue needs --backend cuda");
    expect_usage("exec gemm --backend cpu --square 64 --setup per-call",
                 "--setup goes with --streams");
    expect_usage("exec gemm --square 64 --streams 17", "1..16");
    expect_usage("exec gemm --backend cpu --square 64 --reserve-sms 20",
                 "--reserve-sms needs --backend cuda");
    expect_usage("exec gemm --backend cuda --square 64 --reserve-sms 20 "
                 "--streams 4",
                 "not a group over --streams");
    expect_usage("exec gemm --square 64 --reserve-sms -1", "--reserve-sms");
    expect_usage("exec gemm --square 64 --streams 4 --setup twice", "--setup");
    expect_usage("exec gem", "did you mean \"gemm\"");
    expect_usage("exec membw --sizes 12", "--sizes");
    expect_usage("exec membw --kernel scale", "--kernel: expected copy, triad");
}

/* --- membw on the host --------------------------------------------------- */

static void test_membw_host(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    for (int threads = 1; threads <= 2; threads++)
        for (int k = 0; k < PP_MEMBW__KINDS; k++) {
            pp_exec_membw_result r;
            if (pp_exec_membw_run(PP_EXEC_CPU, (pp_membw_kind)k, 8u << 20, 5,
                                  threads, 0, &r, &e))
                fail_msg("%s", e.msg);
            assert_int_equal(r.time.n, 5);
            assert_true(r.bytes_moved ==
                        (k == PP_MEMBW_TRIAD ? 3 : 2) * (double)(8u << 20));
            /* Plausible: above 100 MB/s, below 10 TB/s, finite. */
            assert_true(isfinite(r.bw_Bps) && r.bw_Bps > 1e8 &&
                        r.bw_Bps < 1e13);
            assert_true(r.best_Bps >= r.bw_Bps);
        }
    pp_exec_membw_result r;
    assert_int_equal(
        pp_exec_membw_run(PP_EXEC_CPU, PP_MEMBW_COPY, 8, 5, 1, 0, &r, &e),
        PP_EINVAL);
}

static void test_cli_membw(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r,
             "exec membw --sizes 4MiB --kernel all --iters 4 --format json");
    if (r.status != 0) fail_msg("status %d: %s", r.status, r.err);
    json_t *j = cli_json(&r);
    json_t *res = json_object_get(j, "results");
    assert_int_equal(json_array_size(res), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *x = json_array_get(res, i);
        double bw = json_number_value(json_object_get(x, "bandwidth_Bps"));
        assert_true(isfinite(bw) && bw > 0);
        assert_int_equal(json_integer_value(json_object_get(x, "array_bytes")),
                         4 << 20);
    }
    json_decref(j);
    cli_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_parse_dims),
        cmocka_unit_test(test_cpu_gemm_correct),
        cmocka_unit_test(test_cpu_gemm_run),
        cmocka_unit_test(test_cuda_absent),
        cmocka_unit_test(test_layer_gemms),
        cmocka_unit_test(test_layer_gemms_moe),
        cmocka_unit_test(test_cli_model_list),
        cmocka_unit_test(test_cli_cpu_run),
        cmocka_unit_test(test_cli_usage),
        cmocka_unit_test(test_membw_host),
        cmocka_unit_test(test_cli_membw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
