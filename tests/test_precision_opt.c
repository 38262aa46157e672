/*
 * tests/test_precision_opt.c: Megatron-core's precision-aware optimizer
 * (--optimizer adam-bf16-moments: bf16 moments, the fp32 master as a
 * 16-bit remainder, no fp32 gradient copy at the step): its bytes, the
 * rules on the layout, the stacks that offer it, the simulated step and
 * the planner's search and launch lines.
 */
#include "models_util.h"

#include <jansson.h>

#include "cli_run.h"
#include "podplan/hw.h"

/* Model states per parameter: the optimizer's 12 bytes become 6, the
 * step's fp32 gradient copy goes, weights and gradients stay. */
static void test_bytes(void **state) {
    (void)state;
    pp_model m = load("llama3-70b");
    pp_parallel p = layout("tp=8,pp=4,dp=4,mbs=1,gbs=512,zero=1");
    pp_memory a, b;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &a, &e), 0);
    assert_int_equal(
        pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_BF16_MOMENTS, &b, &e), 0);
    assert_true(b.weights == a.weights && b.grads == a.grads);
    assert_true(fabs(b.optimizer / a.optimizer - 0.5) < 1e-12);
    assert_true(a.step_grads > 0 && b.step_grads == 0);
    /* The states are sharded as before: 6 bytes over dp. */
    assert_true(fabs(b.optimizer - b.params_per_gpu * 6.0 / 4.0) <
                1e-6 * b.optimizer);
    const pp_optimizer_bytes *x = pp_optimizer_bytes_get(PP_OPT_ADAM_MIXED),
                             *y = pp_optimizer_bytes_get(
                                 PP_OPT_ADAM_BF16_MOMENTS);
    assert_true(y->step_traffic < x->step_traffic);
    assert_string_equal(pp_optimizer_name(PP_OPT_ADAM_BF16_MOMENTS),
                        "adam-bf16-moments");
}

static void expect_refused(const char *spec, const char *needle) {
    pp_parallel p = layout(spec);
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_optimizer_check(PP_OPT_ADAM_BF16_MOMENTS, &p, &e),
                     PP_EUSAGE);
    assert_contains(e.msg, needle);
}

/* bf16 weights (the remainder is their missing half) and the distributed
 * optimizer, which dp 1 runs as zero=0; the other optimizers are free. */
static void test_rules(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    expect_refused("dp=8,zero=1,dtype=fp16", "not dtype=fp16");
    expect_refused("dp=8,zero=0", "zero=1 or above with dp=8");
    const char *ok[] = {"dp=8,zero=1", "dp=8,zero=3,dtype=fp8", "dp=1,zero=0",
                        "tp=8,dp=1"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        pp_parallel p = layout(ok[i]);
        assert_int_equal(pp_optimizer_check(PP_OPT_ADAM_BF16_MOMENTS, &p, &e),
                         0);
    }
    pp_parallel f = layout("dp=8,zero=0,dtype=fp16");
    assert_int_equal(pp_optimizer_check(PP_OPT_ADAM_MIXED, &f, &e), 0);
    assert_int_equal(pp_optimizer_check(PP_OPT_ADAM_FP32, &f, &e), 0);
}

static void expect_stack_error(const char *yaml, const char *needle) {
    const char *path = "/tmp/podplan-test-precision-opt-stack.yaml";
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(yaml, f);
    fclose(f);
    pp_stack s;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_stack_load(path, &s, &e), PP_EINPUT);
    assert_contains(e.msg, needle);
    remove(path);
}

/* nemo-2025 offers it, the 2024 stacks do not (and say where to look);
 * the key is read as a boolean, located when it is not one. */
static void test_stacks(void **state) {
    (void)state;
    pp_stack s;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_stack_load("nemo-2025", &s, &e), 0);
    assert_true(s.precision_aware_opt);
    assert_int_equal(pp_stack_optimizer_check(&s, PP_OPT_ADAM_BF16_MOMENTS, &e),
                     0);
    const char *no[] = {"megatron-core-2024", "nemo-2024", "deepspeed-2024",
                        "pytorch-fsdp2", "megatron-lm-2021"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        e = (pp_error)PP_ERROR_INIT;
        assert_int_equal(pp_stack_load(no[i], &s, &e), 0);
        assert_false(s.precision_aware_opt);
        assert_int_equal(pp_stack_optimizer_check(&s, PP_OPT_ADAM_MIXED, &e),
                         0);
        assert_int_equal(
            pp_stack_optimizer_check(&s, PP_OPT_ADAM_BF16_MOMENTS, &e),
            PP_EUSAGE);
        assert_contains(e.msg, "optimizer.precision_aware");
        assert_contains(e.msg, no[i]);
    }
    expect_stack_error("name: x\noptimizer:\n  precision_aware: maybe\n",
                       ":3:20: optimizer.precision_aware");
    expect_stack_error("name: x\noptimizer:\n  precision: true\n",
                       ":3:3: optimizer");
    expect_stack_error("name: x\noptimizer: [true]\n", ":2:12: optimizer");
}

#define SIM                                                                    \
    "simulate --model llama3-8b --cluster dgx-h100-ndr --set node.count=1 "    \
    "--parallel tp=1,pp=1,dp=8,mbs=1,gbs=128,zero=%d --stack %s%s "            \
    "--format json"

/* The same kernels and transfers; 6 bytes less per parameter over dp,
 * no step copy, and a step that moves 28 bytes a parameter, not 38. */
static void test_simulate(void **state) {
    (void)state;
    json_t *a = cli_json_ok(SIM, 1, "nemo-2025", "");
    json_t *b =
        cli_json_ok(SIM, 1, "nemo-2025", " --optimizer adam-bf16-moments");
    const char *on = json_string_value(json_object_get(b, "optimizer"));
    assert_non_null(on);
    assert_string_equal(on, "adam-bf16-moments");
    assert_string_equal(json_string_value(json_object_get(a, "optimizer")),
                        "adam-mixed");
    double ma = cli_num(a, "memory_per_gpu_bytes"),
           mb = cli_num(b, "memory_per_gpu_bytes");
    printf("  llama3-8b on 8 H100, zero 1: %.2f GB -> %.2f GB per GPU, "
           "%.4f s -> %.4f s\n",
           ma / 1e9, mb / 1e9, cli_num(a, "iteration_time_s"),
           cli_num(b, "iteration_time_s"));
    pp_model m = load("llama3-8b");
    double states = pp_model_params(&m) * 6.0 / 8.0;
    assert_true(fabs((ma - mb) - states) < 1e-6 * states);
    json_t *ba = json_object_get(a, "breakdown"),
           *bb = json_object_get(b, "breakdown");
    assert_true(cli_num(bb, "compute_s") == cli_num(ba, "compute_s"));
    assert_true(cli_num(bb, "other_s") < cli_num(ba, "other_s"));
    assert_true(cli_num(b, "iteration_time_s") <
                cli_num(a, "iteration_time_s"));
    json_decref(a);
    json_decref(b);
    cli_expect(2, "stack megatron-core-2024 does not offer", SIM, 1,
               "megatron-core-2024", " --optimizer adam-bf16-moments");
    cli_expect(2, "zero=1 or above with dp=8", SIM, 0, "nemo-2025",
               " --optimizer adam-bf16-moments");
    cli_expect(2, "expected one of adam-mixed|adam-fp32|adam-bf16-moments", SIM,
               1, "nemo-2025", " --optimizer adam-bf16");
    cli_expect(0, "optimizer    adam-bf16-moments\n",
               "simulate --model llama3-8b --cluster dgx-h100-ndr --set "
               "node.count=1 --parallel tp=1,pp=1,dp=8,mbs=1,gbs=128,zero=1 "
               "--stack nemo-2025 --optimizer adam-bf16-moments");
    cli_expect(0, "optimizer states                3.406GB",
               "memory --model llama3-70b --parallel "
               "tp=8,pp=4,dp=4,mbs=1,gbs=512,zero=1 --optimizer "
               "adam-bf16-moments");
    cli_expect(2, "stack megatron-core-2024 does not offer",
               "memory --model llama3-70b --parallel "
               "tp=8,pp=4,dp=4,mbs=1,gbs=512,zero=1 --optimizer "
               "adam-bf16-moments --stack megatron-core-2024");
}

#define PLAN                                                                   \
    "plan --model llama3-8b --cluster dgx-h100-ndr --set node.count=1 "        \
    "--gpus 8 --global-batch 128 --stack %s --optimizer adam-bf16-moments "    \
    "%s --format %s"

/* The planner keeps to the distributed optimizer (no zero=0 beside
 * dp > 1), sizes the states at 6 bytes, and the launch lines ask for the
 * optimizer where the format can; NeMo 1's options cannot. */
static void test_plan(void **state) {
    (void)state;
    json_t *j = cli_json_ok(PLAN, "nemo-2025", "--top 3", "json");
    assert_string_equal(json_string_value(json_object_get(j, "optimizer")),
                        "adam-bf16-moments");
    json_t *cands = json_object_get(j, "candidates");
    assert_true(json_array_size(cands) > 0);
    size_t i;
    json_t *c;
    json_array_foreach(cands, i, c) {
        const char *spec = json_string_value(json_object_get(c, "parallel"));
        assert_non_null(spec);
        pp_parallel p = layout(spec);
        assert_true(p.dp == 1 || p.zero >= 1);
    }
    json_decref(j);
    cli_expect(0,
               "        use_distributed_optimizer=True,\n"
               "        use_precision_aware_optimizer=True,\n"
               "        exp_avg_dtype=torch.bfloat16,\n"
               "        exp_avg_sq_dtype=torch.bfloat16,\n",
               PLAN, "nemo-2025", "--fix zero=1 --top 1", "nemo2");
    cli_expect(2, "NeMo 1's optimizer options cannot ask", PLAN, "nemo-2025",
               "--fix zero=1 --top 1", "nemo");
    cli_expect(2, "stack megatron-core-2024 does not offer", PLAN,
               "megatron-core-2024", "--top 1", "table");
    /* Megatron-LM's flags, through a stack that launches it and offers
     * the optimizer. */
    const char *yaml = "/tmp/podplan-test-precision-opt-launch.yaml";
    FILE *f = fopen(yaml, "w");
    assert_non_null(f);
    fputs("name: pao\nframework: Megatron-LM\nversion: core 0.16\n"
          "launch: [megatron]\noptimizer:\n  precision_aware: true\n",
          f);
    fclose(f);
    cli_expect(0,
               "--use-distributed-optimizer \\\n"
               "    --use-precision-aware-optimizer --exp-avg-dtype bf16 "
               "--exp-avg-sq-dtype bf16 \\\n",
               PLAN, yaml, "--fix zero=1 --top 1", "megatron");
    remove(yaml);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes),  cmocka_unit_test(test_rules),
        cmocka_unit_test(test_stacks), cmocka_unit_test(test_simulate),
        cmocka_unit_test(test_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
