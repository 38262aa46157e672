/*
 * test_stack_cli.c: --stack on the command line: the stack is stated in
 * every output (table line, JSON key), a broken stack file exits 2 with
 * file:line:col and no output, a launch format picks its stack, and what
 * a stack cannot run is refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"

static const char *const SIM =
    "simulate --model megatron-1.7b --cluster selene-like "
    "--parallel tp=2,pp=2,dp=2,mbs=1,gbs=8";

static void test_stated(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "%s", SIM);
    assert_int_equal(r.status, 0);
    assert_non_null(
        strstr(r.out, "stack        megatron-lm-2021 (the GPU's default"));
    cli_result_free(&r);
    cli_runf(&r, "%s --stack megatron-core-2024 --format json", SIM);
    assert_int_equal(r.status, 0);
    json_t *j = cli_json(&r);
    assert_string_equal(json_string_value(json_object_get(j, "stack")),
                        "megatron-core-2024");
    /* Megatron-core: whole tensors between stages, async. */
    assert_false(json_is_true(json_object_get(j, "p2p_sync")));
    assert_false(json_is_true(json_object_get(j, "p2p_scatter_gather")));
    json_decref(j);
    cli_result_free(&r);
    cli_runf(&r, "memory --model megatron-1.7b --parallel tp=2 --stack "
                 "nemo-2024 --format json");
    assert_int_equal(r.status, 0);
    j = cli_json(&r);
    assert_string_equal(json_string_value(json_object_get(j, "stack")),
                        "nemo-2024");
    assert_true(json_is_true(json_object_get(j, "flash_attention")));
    json_decref(j);
    cli_result_free(&r);
}

/* A layout the memory model does not fit is refused (exit 1, by how
 * much); --memory-check off simulates it anyway and the memory line
 * still shows the excess.  Without recompute= the 2024 stacks recompute
 * nothing, the 2021 one everything. */
static void test_memory_check(void **state) {
    (void)state;
    const char *base = "simulate --model gpt3-175b --cluster dgx-h100-ndr "
                       "--set node.count=1 --parallel tp=8,pp=1,dp=1,mbs=1,"
                       "gbs=1 --stack megatron-core-2024";
    cli_result r;
    cli_runf(&r, "%s", base);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "does not fit in memory"));
    assert_non_null(strstr(r.err, "recompute=none"));
    cli_result_free(&r);
    cli_runf(&r, "%s --memory-check off --format json", base);
    assert_int_equal(r.status, 0);
    json_t *j = cli_json(&r);
    assert_true(json_number_value(json_object_get(j, "iteration_time_s")) > 0);
    json_decref(j);
    cli_result_free(&r);
    cli_runf(&r, "%s --memory-check sometimes", base);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "memory-check"));
    cli_result_free(&r);
}

static void test_broken(void **state) {
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/podplan-stack-cli-%d.yaml",
             (int)getpid());
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("name: broken\npipeline:\n  sync: maybe\n", fp);
    fclose(fp);
    cli_result r;
    cli_runf(&r, "%s --stack %s", SIM, path);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, ":3:9: pipeline.sync"));
    cli_result_free(&r);
    cli_runf(&r, "%s --stack megatron-lm-2022", SIM);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "megatron-lm-2021"));
    cli_result_free(&r);
    unlink(path);
}

static void test_refused(void **state) {
    (void)state;
    cli_result r;
    /* A100: no FP8 tensor cores; Megatron-LM 2021: no FP8 at all. */
    cli_runf(&r, "%s,dtype=fp8 --stack megatron-core-2024", SIM);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "no FP8 tensor cores"));
    cli_result_free(&r);
    cli_runf(&r, "%s,dtype=fp8", SIM);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "does not train in FP8"));
    cli_result_free(&r);
    /* A stack that was asked for limits ZeRO to what it implements. */
    cli_runf(&r, "%s,zero=3 --stack megatron-core-2024", SIM);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "zero.max_stage"));
    cli_result_free(&r);
    /* A launch format runs its own stack, and refuses another. */
    cli_runf(&r, "plan --model megatron-1.7b --cluster selene-like --gpus 16 "
                 "--global-batch 64 --top 1 --format nemo --stack "
                 "megatron-lm-2021");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "does not run --format nemo"));
    cli_result_free(&r);
    cli_runf(&r, "plan --model megatron-1.7b --cluster selene-like --gpus 16 "
                 "--global-batch 64 --top 1 --format nemo");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "software stack: nemo-2024"));
    cli_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stated),
        cmocka_unit_test(test_broken),
        cmocka_unit_test(test_memory_check),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
