/*
 * test_planner_launch_variants.c: the model's variants in the launch
 * formats.  GPT-OSS (zoo gpt-oss-120b): its sliding window, sinks and
 * clamped quick-GeGLU with the linear offset as Megatron-LM's arguments
 * and NeMo 2.0's GPTConfig fields, NeMo 1's YAML refused (no
 * quick-GeGLU there); the same keys on a dense model in NeMo 1's YAML;
 * an MoE model's expert fields in NeMo 2.0's script, which builds the
 * model from GPTConfig alone.
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
#include "plan_util.h"

#define OSS                                                                    \
    "plan --model gpt-oss-120b --cluster dgx-b200-ndr --gpus 64 "              \
    "--global-batch 512 --top 0 --fix pp=4,ep=8 "

/* Python parses the script, where there is a Python. */
static void python_parses(const char *script) {
    if (system("command -v python3 >/dev/null 2>&1") != 0) return;
    char path[] = "/tmp/podplan-variants-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, script, strlen(script)),
                     (ssize_t)strlen(script));
    close(fd);
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import ast,sys; ast.parse(open(sys.argv[1]).read())' "
             "%s",
             path);
    int st = system(cmd);
    unlink(path);
    assert_int_equal(st, 0);
}

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

static void test_oss_megatron(void **state) {
    (void)state;
    cli_result r;
    char v[64];
    cli_runf(&r, OSS "--format megatron");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    /* megatron_value fails on any flag Megatron-LM does not have. */
    assert_non_null(megatron_value(r.out, "--quick-geglu", NULL, 0));
    assert_null(megatron_value(r.out, "--swiglu", NULL, 0));
    assert_string_equal(
        megatron_value(r.out, "--activation-func-clamp-value", v, sizeof v),
        "7");
    assert_string_equal(
        megatron_value(r.out, "--glu-linear-offset", v, sizeof v), "1");
    assert_string_equal(megatron_value(r.out, "--window-size", v, sizeof v),
                        "128,0");
    assert_string_equal(
        megatron_value(r.out, "--window-attn-skip-freq", v, sizeof v), "2");
    assert_string_equal(megatron_value(r.out, "--softmax-type", v, sizeof v),
                        "learnable");
    assert_string_equal(megatron_value(r.out, "--normalization", v, sizeof v),
                        "RMSNorm");
    cli_result_free(&r);
    /* A plain LLaMA-style model has none of them. */
    cli_runf(&r, "plan --model llama3-8b --cluster dgx-h100-ndr --gpus 8 "
                 "--global-batch 64 --top 0 --format megatron");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(megatron_value(r.out, "--swiglu", NULL, 0));
    assert_null(strstr(r.out, "--window-size"));
    assert_null(strstr(r.out, "--softmax-type"));
    assert_null(strstr(r.out, "--glu-linear-offset"));
    assert_null(strstr(r.out, "--quick-geglu"));
    cli_result_free(&r);
}

static void test_oss_nemo2(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, OSS "--format nemo2");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    static const char *const want[] = {
        "from megatron.core.fusions.fused_bias_geglu import quick_gelu\n",
        "    activation_func=quick_gelu,\n",
        "    window_size=(128, 0),\n",
        "    window_attn_skip_freq=2,\n",
        "    softmax_type=\"learnable\",\n",
        "    activation_func_clamp_value=7,\n",
        "    glu_linear_offset=1,\n",
        "    num_moe_experts=128,\n",
        "    moe_router_topk=4,\n",
        "    moe_ffn_hidden_size=2880,\n",
        "    moe_token_dispatcher_type=\"alltoall\",\n",
        "    moe_grouped_gemm=True,\n",
        "    moe_permute_fusion=True,\n",
        "    expert_model_parallel_size=8,\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(r.out, want[i])) fail_msg("no %s in\n%s", want[i], r.out);
    /* The expert sizes are the strategy's, said once. */
    assert_int_equal(count(r.out, "expert_model_parallel_size="), 1);
    assert_null(strstr(r.out, "torch.nn.functional.silu"));
    python_parses(r.out);
    cli_result_free(&r);
}

/* NeMo 1's activation key has no quick-GeGLU: refused, nothing written. */
static void test_oss_nemo_refused(void **state) {
    (void)state;
    char path[] = "/tmp/podplan-variants-out-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    cli_result r;
    cli_runf(&r, OSS "--format nemo -o %s", path);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "no quick-GeGLU"));
    assert_int_equal(access(path, F_OK), -1);
    cli_result_free(&r);
}

/* The window, softmax and offset keys on a dense gated model, in NeMo 1's
 * YAML (TransformerConfig's field names) and Megatron-LM's words. */
static void test_dense_variants(void **state) {
    (void)state;
    const char *model = "layers=8,hidden=1024,heads=8,seq=2048,vocab=32000,"
                        "ffn=swiglu,window=64,window_skip=4,"
                        "softmax=off-by-one,glu_offset=0.5";
    cli_result r;
    cli_runf(&r,
             "plan --model %s --cluster dgx-h100-ndr --gpus 8 "
             "--global-batch 64 --top 0 --format nemo",
             model);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "\n  window_size: [64, 0]\n"));
    assert_non_null(strstr(r.out, "\n  window_attn_skip_freq: 4\n"));
    assert_non_null(strstr(r.out, "\n  softmax_type: off-by-one\n"));
    assert_non_null(strstr(r.out, "\n  glu_linear_offset: 0.5\n"));
    assert_non_null(strstr(r.out, "\n  activation: fast-swiglu\n"));
    assert_null(strstr(r.out, "activation_func_clamp_value"));
    cli_result_free(&r);
    char v[64];
    cli_runf(&r,
             "plan --model %s --cluster dgx-h100-ndr --gpus 8 "
             "--global-batch 64 --top 0 --format megatron",
             model);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(megatron_value(r.out, "--swiglu", NULL, 0));
    assert_string_equal(megatron_value(r.out, "--window-size", v, sizeof v),
                        "64,0");
    assert_string_equal(megatron_value(r.out, "--softmax-type", v, sizeof v),
                        "off-by-one");
    assert_string_equal(
        megatron_value(r.out, "--glu-linear-offset", v, sizeof v), "0.5");
    cli_result_free(&r);
}

/* NeMo 2.0 builds the model from GPTConfig: an MoE model's experts are
 * there, DeepSeek-V3's dense first layers as a list Python evaluates (not
 * the string the shell and YAML formats quote). */
static void test_moe_nemo2(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "plan --model deepseek-v3 --cluster dgx-h800-2048 --gpus 2048 "
                 "--global-batch 4096 --top 0 --fix ep=64,pp=1 --format nemo2");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "    num_moe_experts=256,\n"));
    assert_non_null(strstr(r.out, "    moe_router_topk=8,\n"));
    assert_non_null(strstr(r.out, "    moe_shared_expert_intermediate_size="));
    assert_non_null(strstr(r.out, "    moe_layer_freq=([0]*3+[1]*58),\n"));
    assert_non_null(strstr(r.out, "    moe_router_num_groups=8,\n"));
    python_parses(r.out);
    cli_result_free(&r);
    /* NeMo 1's YAML keeps its spelling. */
    cli_runf(&r, "plan --model mixtral-8x7b --cluster dgx-h100-ndr --gpus 64 "
                 "--global-batch 64 --top 0 --fix ep=8,cp=1 --format nemo");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "\n  num_moe_experts: 8\n"));
    assert_non_null(strstr(r.out, "\n  expert_model_parallel_size: 8\n"));
    assert_non_null(strstr(r.out, "\n  moe_token_dispatcher_type: alltoall\n"));
    assert_non_null(strstr(r.out, "\n  moe_grouped_gemm: true\n"));
    cli_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oss_megatron),
        cmocka_unit_test(test_oss_nemo2),
        cmocka_unit_test(test_oss_nemo_refused),
        cmocka_unit_test(test_dense_variants),
        cmocka_unit_test(test_moe_nemo2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
