/*
 * test_cli_fixes.c: what a new user tripped over (issue 12), through the
 * binary: suggestions for GPU, model and cluster names, `podplan list`,
 * defaults said on stderr, plan's layouts pasting into simulate, blanks
 * after commas, B/M/T on counts, the trace size limit, README's flows.yaml,
 * and --help listing every registry's choices.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"
#include "podplan/vocab.h"
#include "test_util.h"

static void expect_fail(const char *args, int status, const char *msg) {
    cli_result r;
    cli_runf(&r, "%s", args);
    if (r.status != status || !strstr(r.err, msg))
        fail_msg("`podplan %s`: exit %d, stderr: %s\nwant exit %d and: %s",
                 args, r.status, r.err, status, msg);
    assert_string_equal(r.out, "");
    cli_result_free(&r);
}

static void test_gpu_suggestions(void **state) {
    (void)state;
    const char *base = "topo stats --cluster titan --set node.gpus.type=";
    char cmd[160];
    snprintf(cmd, sizeof cmd, "%sa100", base);
    expect_fail(
        cmd, 2,
        "unknown GPU \"a100\" (did you mean \"a100-pcie-40gb\", "
        "\"a100-sxm4-40gb\", \"a100-pcie-80gb\" or \"a100-sxm4-80gb\"?)");
    snprintf(cmd, sizeof cmd, "%sA100", base);
    expect_fail(cmd, 2, "\"a100-sxm4-80gb\"?)");
    snprintf(cmd, sizeof cmd, "%sh100", base);
    expect_fail(cmd, 2, "(did you mean \"h100-pcie\" or \"h100-sxm5\"?)");
    snprintf(cmd, sizeof cmd, "%sH200-SXM", base);
    expect_fail(cmd, 2, "(did you mean \"h200-sxm\"?)");
    /* Spelling still works where no prefix does. */
    snprintf(cmd, sizeof cmd, "%sb201", base);
    expect_fail(cmd, 2, "(did you mean \"b200\"?)");
}

static void test_name_suggestions(void **state) {
    (void)state;
    expect_fail("flops --model gtp3-175b --global-batch 8", 2,
                "\"gtp3-175b\" is neither a file nor a name in models/zoo/ "
                "(did you mean \"gpt3-175b\"?); `podplan list models` shows "
                "them");
    expect_fail(
        "topo stats --cluster titn", 2,
        "(did you mean \"titan\"?); `podplan list clusters` shows them");
    expect_fail(
        "simulate --model llama2 --cluster titan --parallel tp=8", 2,
        "(did you mean \"llama2-13b\", \"llama2-70b\" or \"llama2-7b\"?)");
}

static void test_list(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "list gpus");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\na100-sxm4-80gb  80GiB HBM"));
    /* and as nvidia-smi reports it */
    assert_non_null(strstr(r.out, "\nh100-sxm5       85.52GB HBM (81559 MiB)"));
    cli_result_free(&r);
    static const char *const kinds[] = {"models", "clusters", "profiles",
                                        "gpus",   "switches", "links",
                                        "servers"};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        cli_runf(&r, "list %s --format json", kinds[k]);
        if (r.status != 0) fail_msg("list %s: %s", kinds[k], r.err);
        json_t *j = cli_json(&r), *items = json_object_get(j, "items");
        assert_true(json_array_size(items) > 0);
        for (size_t i = 0; i < json_array_size(items); i++) {
            const char *d = json_string_value(
                json_object_get(json_array_get(items, i), "description"));
            assert_non_null(d);
            if (strstr(d, "does not load"))
                fail_msg("list %s: %s", kinds[k], d);
        }
        json_decref(j);
        cli_result_free(&r);
    }
    cli_runf(&r, "list models");
    assert_non_null(strstr(r.out, "gpt3-175b"));
    assert_non_null(strstr(r.out, "1.746e+11 parameters"));
    cli_result_free(&r);
    expect_fail("list gpu", 2, "unknown list \"gpu\" (did you mean \"gpus\"?)");
}

/* Every output that rests on a GPU profile says whether it was fitted
 * (issue 14): the shipped a100 profile is published figures, the h100 one
 * carries provenance from `podplan calibrate fit`. */
static void test_profile_calibrated(void **state) {
    (void)state;
    static const struct {
        const char *cluster;
        bool calibrated;
    } cases[] = {{"titan", false}, {"dgx-h100-ndr", true}};
    for (size_t i = 0; i < 2; i++) {
        cli_result r;
        cli_runf(&r,
                 "simulate --model megatron-1.7b --cluster %s "
                 "--parallel tp=1,pp=1,dp=8,mbs=4,gbs=32 --fidelity analytic "
                 "--format json",
                 cases[i].cluster);
        if (r.status) fail_msg("simulate on %s: %s", cases[i].cluster, r.err);
        json_t *j = cli_json(&r);
        assert_int_equal(json_is_true(json_object_get(j, "profile_calibrated")),
                         cases[i].calibrated);
        json_decref(j);
        cli_result_free(&r);
        cli_runf(&r,
                 "plan --model megatron-1.7b --cluster %s --gpus 8 "
                 "--global-batch 32 --top 0 --format json",
                 cases[i].cluster);
        if (r.status) fail_msg("plan on %s: %s", cases[i].cluster, r.err);
        j = cli_json(&r);
        assert_int_equal(json_is_true(json_object_get(j, "profile_calibrated")),
                         cases[i].calibrated);
        json_decref(j);
        cli_result_free(&r);
        cli_runf(&r,
                 "plan --model megatron-1.7b --cluster %s --gpus 8 "
                 "--global-batch 32 --top 0",
                 cases[i].cluster);
        assert_int_equal(r.status, 0);
        assert_non_null(strstr(
            r.out, cases[i].calibrated ? "(calibrated: "
                                       : "(uncalibrated: published figures)"));
        cli_result_free(&r);
    }
}

static void test_defaults_said(void **state) {
    (void)state;
    cli_result a, b;
    cli_runf(&a, "memory --model gpt3-175b --parallel tp=8,pp=8,dp=2");
    cli_runf(&b, "memory --model gpt3-175b --parallel tp=8,pp=8,dp=2,gbs=2");
    assert_int_equal(a.status, 0);
    assert_non_null(strstr(a.err, "podplan memory: --parallel has no gbs=; "
                                  "using gbs=2 (mbs x dp = 1 x 2)"));
    assert_string_equal(b.err, "");
    assert_string_equal(a.out, b.out); /* stdout unchanged */
    cli_result_free(&a);
    cli_result_free(&b);
    cli_runf(&a, "plan --model megatron-1.7b --cluster titan --gpus 16 --top 0 "
                 "--no-timing");
    assert_int_equal(a.status, 0);
    assert_non_null(strstr(a.err,
                           "podplan plan: no --global-batch; using "
                           "gbs=16 (one sequence per GPU of --gpus 16)"));
    cli_result_free(&a);
}

/* Every layout plan prints, with its DP overlap, pastes into simulate. */
static void test_plan_pastes_into_simulate(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "plan --model megatron-1.7b --cluster titan --gpus 16 "
                 "--global-batch 64 --top 0 --show 6 --format json");
    assert_int_equal(r.status, 0);
    json_t *j = cli_json(&r), *cands = json_object_get(j, "candidates");
    assert_true(json_array_size(cands) >= 2);
    int n_on = 0;
    for (size_t i = 0; i < json_array_size(cands) && i < 6; i++) {
        json_t *c = json_array_get(cands, i);
        bool ov = json_is_true(json_object_get(c, "dp_overlap"));
        n_on += ov;
        char spec[300];
        snprintf(spec, sizeof spec, "%s,overlap=%s",
                 json_string_value(json_object_get(c, "parallel")),
                 ov ? "on" : "off");
        const char *argv[] = {"simulate",  "--model",    "megatron-1.7b",
                              "--cluster", "titan",      "--parallel",
                              spec,        "--fidelity", "analytic",
                              "--format",  "json",       NULL};
        cli_result s;
        cli_run(&s, argv);
        if (s.status != 0) fail_msg("simulate --parallel %s: %s", spec, s.err);
        json_t *k = cli_json(&s);
        assert_int_equal(json_is_true(json_object_get(k, "dp_overlap")), ov);
        json_decref(k);
        cli_result_free(&s);
    }
    json_decref(j);
    cli_result_free(&r);
    expect_fail("simulate --model megatron-1.7b --cluster titan --parallel "
                "tp=8,dp=2,overlap=maybe",
                2, "--parallel: overlap: expected on or off, got \"maybe\"");
    expect_fail("simulate --model megatron-1.7b --cluster titan --parallel "
                "tp=8,dp=2,gbs=2,overlap=on --dp-overlap off",
                2, "--parallel says overlap=on but --dp-overlap says off");
}

/* --tp-overlap overrides the stack's TP overlap (an MLPerf config's
 * TP_COMM_OVERLAP=False under nemo-2025, which overlaps): exposed TP
 * collectives make the iteration longer and the JSON says which. */
static void test_tp_overlap_option(void **state) {
    (void)state;
    const char *base = "simulate --model llama3-8b --cluster dgx-h100-ndr "
                       "--set node.count=1 --stack nemo-2025 --parallel "
                       "tp=4,pp=1,dp=2,mbs=1,gbs=4,sp=on --format json";
    double t[2];
    for (int ov = 0; ov < 2; ov++) {
        json_t *j = cli_json_ok("%s --tp-overlap %s", base, ov ? "on" : "off");
        assert_int_equal(json_is_true(json_object_get(j, "tp_overlap")), ov);
        t[ov] = json_real_value(json_object_get(j, "iteration_time_s"));
        json_decref(j);
    }
    json_t *j = cli_json_ok("%s", base); /* the stack's: on */
    assert_true(json_is_true(json_object_get(j, "tp_overlap")));
    assert_true(json_real_value(json_object_get(j, "iteration_time_s")) ==
                t[1]);
    json_decref(j);
    if (!(t[0] > t[1] * 1.01))
        fail_msg("tp overlap off %.4f s, on %.4f s: want off slower", t[0],
                 t[1]);
    expect_fail("simulate --model llama3-8b --cluster dgx-h100-ndr "
                "--parallel tp=4,dp=2,sp=on --tp-overlap maybe",
                2, "--tp-overlap");
    /* Userbuffers take no NVFP4: the stack's on is dropped under
     * dtype=fp4 (the JSON says off), an explicit on is refused. */
    const char *fp4 = "simulate --model llama3-8b --cluster dgx-b200-ndr "
                      "--set node.count=1 --stack nemo-2025 --parallel "
                      "tp=4,pp=1,dp=2,mbs=1,gbs=4,sp=on,dtype=fp4";
    j = cli_json_ok("%s --format json", fp4);
    assert_false(json_is_true(json_object_get(j, "tp_overlap")));
    json_decref(j);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s --tp-overlap on", fp4);
    expect_fail(cmd, 2, "not NVFP4");
}

static void test_blanks_after_commas(void **state) {
    (void)state;
    const char *argv[] = {"memory",
                          "--model",
                          "gpt3-175b",
                          "--parallel",
                          "tp=8, pp=8, dp = 2, gbs=4",
                          NULL};
    cli_result r;
    cli_run(&r, argv);
    if (r.status != 0) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "parallel     tp=8,pp=8,dp=2,mbs=1,gbs=4,"));
    cli_result_free(&r);
    const char *inl[] = {"flops",
                         "--model",
                         "layers=96, hidden=12288, heads=96, seq=2048, "
                         "vocab=51200",
                         "--global-batch",
                         "1024",
                         NULL};
    cli_run(&r, inl);
    if (r.status != 0) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "3.0073e+18"));
    cli_result_free(&r);
}

static double days(const char *args) {
    cli_result r;
    cli_runf(&r, "estimate %s --format json", args);
    if (r.status != 0) fail_msg("estimate %s: %s", args, r.err);
    json_t *j = cli_json(&r);
    double d = json_number_value(json_object_get(j, "training_days"));
    json_decref(j);
    cli_result_free(&r);
    return d;
}

static void test_count_suffixes(void **state) {
    (void)state;
    double want =
        days("--params 175e9 --tokens 300e9 --gpus 1040 --tflops 140");
    assert_close(days("--params 175B --tokens 300B --gpus 1040 --tflops 140"),
                 want, 1e-12);
    assert_close(
        days("--params 175000M --tokens 0.3T --gpus 1040 --tflops 140"), want,
        1e-12);
    assert_close(
        days("--params 175000000K --tokens 300G --gpus 1040 --tflops 140"),
        want, 1e-12);
    /* A byte unit is never a count. */
    expect_fail("estimate --params 175GB --tokens 300B --gpus 8 --tflops 140",
                2,
                "--params: expected a count such as 300e9, 300G or 300B "
                "(\"GB\" is not a count suffix)");
}

static void test_trace_limit(void **state) {
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/pp_trace_%ld.json", (long)getpid());
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "simulate --model gpt3-175b --cluster "
             "selene-like --parallel tp=8,pp=16,dp=8,mbs=1,gbs=1536 --trace %s",
             path);
    expect_fail(cmd, 2,
                "--trace: this iteration's trace would be about "
                "785.9MB (192 micro-batches x 96 layers x 8 TP ranks");
    expect_fail(cmd, 2, "add --trace-force to write it anyway");
    assert_int_equal(access(path, F_OK), -1); /* nothing written */
    /* A small one is written without asking. */
    cli_result r;
    cli_runf(&r,
             "simulate --model megatron-1.7b --cluster titan --parallel "
             "tp=8,dp=1,gbs=2 --fidelity analytic --trace %s",
             path);
    if (r.status != 0) fail_msg("%s", r.err);
    assert_int_equal(access(path, F_OK), 0);
    remove(path);
    cli_result_free(&r);
}

static void test_readme_flows_example(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "flows --cluster ethernet-10g --input flows.yaml");
    if (r.status != 0) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "3 flows"));
    assert_non_null(strstr(r.out, "makespan 1.6s"));
    cli_result_free(&r);
    expect_fail("flows --cluster ethernet-10g --input flow.yaml", 2,
                "(did you mean \"flows\"?)");
}

/* --help lists every choice of every registry an option uses, with its
 * help, so a new choice in vocab.h shows up without a CLI change. */
static void help_lists(const char *cmd, const pp_registry *reg) {
    cli_result r;
    cli_runf(&r, "%s --help", cmd);
    assert_int_equal(r.status, 0);
    for (int i = 0; i < reg->n; i++) {
        if (!strstr(r.out, reg->items[i].name) ||
            !strstr(r.out, reg->items[i].help))
            fail_msg("`podplan %s --help` lacks %s \"%s\"", cmd, reg->what,
                     reg->items[i].name);
    }
    cli_result_free(&r);
}

static void test_help_from_registries(void **state) {
    (void)state;
    help_lists("collective", &pp_reg_coll_op);
    help_lists("collective", &pp_reg_coll_algo);
    help_lists("collective", &pp_reg_fidelity);
    help_lists("simulate", &pp_reg_schedule);
    help_lists("simulate", &pp_reg_fidelity);
    help_lists("plan", &pp_reg_optimizer);
    help_lists("memory", &pp_reg_optimizer);
    help_lists("simulate", &pp_reg_optimizer);
    help_lists("flops", &pp_reg_recompute);
    help_lists("estimate", &pp_reg_recompute);
    help_lists("flows", &pp_reg_fidelity);
    expect_fail("simulate --model gpt3-175b --cluster titan --parallel tp=8 "
                "--schedule 1f1c",
                2,
                "--schedule: expected one of gpipe|1f1b|interleaved, got "
                "\"1f1c\" (did you mean \"1f1b\"?)");
    expect_fail("memory --model gpt3-175b --parallel tp=8 --optimizer adam", 2,
                "--optimizer: expected one of adam-mixed|adam-fp32");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_suggestions),
        cmocka_unit_test(test_name_suggestions),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_profile_calibrated),
        cmocka_unit_test(test_defaults_said),
        cmocka_unit_test(test_plan_pastes_into_simulate),
        cmocka_unit_test(test_tp_overlap_option),
        cmocka_unit_test(test_blanks_after_commas),
        cmocka_unit_test(test_count_suffixes),
        cmocka_unit_test(test_trace_limit),
        cmocka_unit_test(test_readme_flows_example),
        cmocka_unit_test(test_help_from_registries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
