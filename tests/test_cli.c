/*
 * test_cli.c: the podplan binary, end to end: the acceptance figures of
 * domain.md section 4 through the CLI's JSON, usage errors, determinism.
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
#include <unistd.h>

#include "cli_run.h"

static double num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v)) fail_msg("key %s missing or not a number", key);
    return json_number_value(v);
}

static void assert_rel(double got, double want, double tol) {
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("got %.6g, want %.6g within %g relative", got, want, tol);
}

static void assert_abs(double got, double want, double tol) {
    if (!(fabs(got - want) <= tol))
        fail_msg("got %.6g, want %.6g within %g", got, want, tol);
}

/* domain.md: GPT-3 175B at B=1024 is 3.00e18 FLOPs per iteration; the
 * exact closed form gives 3.00728e18. */
static void test_flops_gpt3(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "flops --model gpt3-175b --global-batch 1024 --format json");
    assert_int_equal(r.status, 0);
    json_t *j = cli_json(&r);
    assert_rel(num(j, "flops_per_iteration"), 3.007e18, 5e-4);
    json_t *t = json_object_get(j, "terms");
    assert_non_null(t);
    double sum = num(t, "dense") + num(t, "attention") + num(t, "logit");
    assert_rel(sum, num(j, "flops_per_iteration"), 1e-12);
    assert_rel(num(t, "attention") / num(t, "dense"), 2048.0 / (6 * 12288),
               1e-9);
    assert_rel(num(t, "logit") / num(t, "dense"), 51200.0 / (16.0 * 96 * 12288),
               1e-9);
    json_decref(j);
    cli_result_free(&r);

    cli_runf(&r, "flops --model gpt3-175b --global-batch 1024");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "dense"));
    assert_non_null(strstr(r.out, "attention"));
    assert_non_null(strstr(r.out, "logit"));
    assert_non_null(strstr(r.out, "3.0073e+18"));
    cli_result_free(&r);
}

static double estimate_days(const char *args) {
    cli_result r;
    cli_runf(&r, "estimate %s --format json", args);
    if (r.status != 0)
        fail_msg("estimate %s: exit %d: %s", args, r.status, r.err);
    json_t *j = cli_json(&r);
    double d = num(j, "training_days");
    json_decref(j);
    cli_result_free(&r);
    return d;
}

/* domain.md section 4: 33.4 days, 5.7 days, 30.5 years. */
static void test_estimate(void **state) {
    (void)state;
    assert_abs(
        estimate_days("--params 175e9 --tokens 300e9 --gpus 1040 --tflops 140"),
        33.4, 0.05);
    assert_abs(
        estimate_days(
            "--params 7.5e9 --tokens 300G --gpus 256 --tflops 142TFLOPS"),
        5.7, 0.05);
    double years = estimate_days("--model gpt3-175b --iterations 100000 "
                                 "--global-batch 1024 --gpus 1 --tflops 312") /
                   365.0;
    assert_abs(years, 30.5, 0.1);
    /* 6TP/nX without recomputation is 3/4 of 8TP/nX. */
    assert_rel(estimate_days("--params 175e9 --tokens 300e9 --gpus 1040 "
                             "--tflops 140 --recompute none"),
               0.75 * 33.4, 0.01);
}

/* domain.md: 700 GB + 700 GB + 1,400 GB = 2.8 TB of model states with fp32
 * Adam; the shape gives 174.6e9 parameters, not 175e9, hence 0.5%. */
static void test_memory_gpt3(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r,
             "memory --model gpt3-175b --parallel tp=1,pp=1,dp=1,mbs=1,gbs=1 "
             "--optimizer adam-fp32 --format json");
    assert_int_equal(r.status, 0);
    json_t *j = cli_json(&r);
    json_t *m = json_object_get(j, "memory");
    assert_rel(num(m, "weights_bytes"), 700e9, 5e-3);
    assert_rel(num(m, "gradients_bytes"), 700e9, 5e-3);
    assert_rel(num(m, "optimizer_bytes"), 1400e9, 5e-3);
    double states = num(m, "model_states_bytes");
    assert_rel(states, 2.8e12, 5e-3);
    json_decref(j);
    cli_result_free(&r);

    cli_runf(&r, "memory --model gpt3-175b --parallel "
                 "tp=1,pp=1,dp=64,mbs=1,gbs=64,zero=3 --optimizer adam-fp32 "
                 "--format json");
    assert_int_equal(r.status, 0);
    j = cli_json(&r);
    m = json_object_get(j, "memory");
    assert_rel(num(m, "model_states_bytes"), states / 64, 1e-12);
    json_decref(j);
    cli_result_free(&r);
}

static void test_memory_fit(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "memory --model gpt3-175b --parallel "
                 "tp=1,pp=1,dp=1,mbs=1,gbs=1 --gpu-memory 80GB --format json");
    assert_int_equal(r.status, 0);
    json_t *j = cli_json(&r);
    assert_true(json_is_false(json_object_get(j, "fits")));
    assert_true(num(j, "headroom_bytes") < -2e12);
    json_decref(j);
    cli_result_free(&r);
    cli_runf(&r,
             "memory --model gpt3-175b --parallel "
             "tp=8,pp=16,dp=8,mbs=1,gbs=1536 --gpu-memory 80GB --format json");
    assert_int_equal(r.status, 0);
    j = cli_json(&r);
    assert_true(json_is_true(json_object_get(j, "fits")));
    /* plan's limit: the same 80 GB less its default 10% reserve */
    assert_rel(num(j, "planner_limit_bytes"), 72e9, 1e-12);
    json_decref(j);
    cli_result_free(&r);
    /* The table says both: the fit and what plan allows. */
    cli_runf(&r, "memory --model gpt3-175b --parallel "
                 "tp=8,pp=16,dp=8,mbs=1,gbs=1536 --gpu-memory 80GB");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\nfits in 80GB with "));
    assert_non_null(strstr(
        r.out, "\nplan keeps 10% free (--memory-reserve): 72GB usable, "));
    cli_result_free(&r);
}

static void expect_usage_error(const char *args, const char *msg) {
    cli_result r;
    cli_runf(&r, "%s", args);
    if (r.status != 2 || !strstr(r.err, msg))
        fail_msg("`podplan %s`: exit %d, stderr: %s\nwant exit 2 and: %s", args,
                 r.status, r.err, msg);
    assert_string_equal(r.out, "");
    cli_result_free(&r);
}

static void test_usage_errors(void **state) {
    (void)state;
    expect_usage_error(
        "flops --model gpt3-175b --global-bacth 8",
        "unknown option --global-bacth (did you mean --global-batch?)");
    expect_usage_error("flops --model gpt3-175b", "--global-batch is required");
    expect_usage_error(
        "flops --model gpt3-175b --global-batch -3",
        "--global-batch: expected a positive integer, got \"-3\"");
    expect_usage_error("flops --model gpt3-175b --global-batch 8 --format xml",
                       "--format: expected table|json, got \"xml\"");
    expect_usage_error("flops --model no-such-model --global-batch 8",
                       "no-such-model");
    expect_usage_error("flops --model layers=96,hidden=12288 --global-batch 8",
                       "--model");
    expect_usage_error(
        "estimate --params 175e9 --tokens 300GB --gpus 8 --tflops 140",
        "--tokens");
    expect_usage_error(
        "estimate --params 175e9 --tokens 300e9 --gpus 8 --tflops 140Gbps",
        "--tflops");
    expect_usage_error("memory --model gpt3-175b --parallel tp=7", "tp");
    expect_usage_error("memory --model gpt3-175b --parallel tp=8,zero=9",
                       "zero");
    expect_usage_error("flosp",
                       "unknown command \"flosp\" (did you mean \"flops\"?)");
    expect_usage_error("flops --model gpt3-175b --global-batch 8 --format",
                       "--format needs a value");
}

static void test_help_and_version(void **state) {
    (void)state;
    const char *cmds[] = {"flops --help", "estimate --help", "memory -h",
                          "help",         "--version",       "help memory"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        cli_result r;
        cli_runf(&r, "%s", cmds[i]);
        if (r.status != 0) fail_msg("%s: exit %d", cmds[i], r.status);
        assert_true(strlen(r.out) > 0);
        cli_result_free(&r);
    }
    cli_result r;
    cli_runf(&r, "--version");
    assert_non_null(strstr(r.out, "podplan 0."));
    cli_result_free(&r);
}

static void test_deterministic_and_atomic_output(void **state) {
    (void)state;
    cli_result a, b, c;
    const char *cmd = "memory --model megatron-145.6b --parallel "
                      "tp=8,pp=8,dp=24,mbs=1,gbs=2304,vp=2,sp=on --format json";
    cli_runf(&a, "%s", cmd);
    cli_runf(&b, "%s", cmd);
    assert_int_equal(a.status, 0);
    assert_string_equal(a.out, b.out);
    char path[] = "/tmp/podplan-o-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    cli_runf(&c, "%s -o %s", cmd, path);
    assert_int_equal(c.status, 0);
    assert_string_equal(c.out, "");
    FILE *fp = fopen(path, "r");
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    assert_string_equal(buf, a.out);
    remove(path);
    cli_result_free(&a);
    cli_result_free(&b);
    cli_result_free(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flops_gpt3),
        cmocka_unit_test(test_estimate),
        cmocka_unit_test(test_memory_gpt3),
        cmocka_unit_test(test_memory_fit),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_help_and_version),
        cmocka_unit_test(test_deterministic_and_atomic_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
