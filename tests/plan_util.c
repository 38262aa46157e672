/*
 * plan_util.c: helpers shared by the planner's test files (plan_util.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "plan_util.h"

double num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v)) fail_msg("key %s missing or not a number", key);
    return json_number_value(v);
}

pp_cluster *load_cluster(const char *name) {
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = NULL;
    if (pp_cluster_load(name, NULL, 0, NULL, &c, &e))
        fail_msg("loading %s: %s", name, e.msg);
    return c;
}

pp_cluster *load_cluster_set(const char *name, const char *set) {
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = NULL;
    if (pp_cluster_load(name, &set, 1, NULL, &c, &e))
        fail_msg("loading %s (%s): %s", name, set, e.msg);
    return c;
}

pp_gpu_profile load_gpu_profile(const char *gpu, const char *stack) {
    static pp_catalog *cat;
    pp_error e = PP_ERROR_INIT;
    if (!cat && pp_catalog_load(NULL, &cat, &e))
        fail_msg("catalogue: %s", e.msg);
    pp_gpu_profile g;
    if (pp_profile_load_stack(NULL, pp_catalog_gpu(cat, gpu), stack, &g, NULL,
                              &e))
        fail_msg("%s: %s", gpu, e.msg);
    return g;
}

void load_model(const char *spec, pp_model *m) {
    pp_error e = PP_ERROR_INIT;
    if (pp_model_load(spec, m, &e)) fail_msg("loading %s: %s", spec, e.msg);
}

double sim_and_estimate(const pp_step_config *cfg, double *est,
                        pp_breakdown *bd) {
    pp_error e = PP_ERROR_INIT;
    pp_step_result r;
    if (pp_step_simulate(cfg, &r, &e)) fail_msg("%s", e.msg);
    if (bd) *bd = r.total;
    double t = r.iteration_time_s;
    pp_step_result_fini(&r);
    pp_plan_estimator *x = NULL;
    if (pp_plan_estimator_new(cfg->model, cfg->cluster, cfg->profile, &x, &e))
        fail_msg("%s", e.msg);
    pp_breakdown eb;
    if (pp_plan_estimate(x, cfg->par, false, est, &eb, &e))
        fail_msg("%s", e.msg);
    pp_plan_estimator_free(x);
    return t;
}

/* Argument names of Megatron-LM (megatron/training/arguments.py,
 * NVIDIA/Megatron-LM main, 2025: _add_network_size_args,
 * _add_training_args, _add_distributed_args, _add_mixed_precision_args,
 * _add_data_args), the ones a launch line for a GPT layout may need. */
static const char *const megatron_args[] = {
    "--num-layers", "--encoder-num-layers", "--decoder-num-layers",
    "--hidden-size", "--ffn-hidden-size", "--num-attention-heads",
    "--kv-channels", "--group-query-attention", "--num-query-groups",
    "--max-position-embeddings", "--position-embedding-type",
    "--use-rotary-position-embeddings", "--rotary-base", "--rotary-percent",
    "--make-vocab-size-divisible-by", "--normalization", "--norm-epsilon",
    "--swiglu", "--squared-relu", "--openai-gelu",
    "--untie-embeddings-and-output-weights", "--seq-length",
    "--micro-batch-size", "--global-batch-size", "--rampup-batch-size",
    "--recompute-activations", "--recompute-granularity", "--recompute-method",
    "--recompute-num-layers", "--recompute-modules",
    "--distribute-saved-activations", "--train-iters", "--train-samples",
    "--sequence-parallel", "--tensor-model-parallel-size",
    "--pipeline-model-parallel-size", "--num-layers-per-virtual-pipeline-stage",
    "--num-virtual-stages-per-pipeline-rank", "--use-distributed-optimizer",
    "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
    "--overlap-grad-reduce", "--overlap-param-gather", "--ddp-bucket-size",
    "--context-parallel-size", "--distributed-backend", "--bf16", "--fp16",
    /* _add_distributed_args: how CP exchanges K/V (Transformer Engine's
     * p2p, all_gather, a2a, a2a+p2p) and a2a+p2p's levels */
    "--cp-comm-type", "--hierarchical-context-parallel-sizes",
    /* _add_network_size_args: --disable-bias-linear (add_bias_linear
     * False, LLaMA-style models); _add_mixed_precision_args: --fp16 (GPUs
     * without bf16, the catalogue's fp16_only) */
    "--disable-bias-linear", "--use-flash-attn", "--optimizer", "--lr",
    "--data-path", "--vocab-file", "--merge-file", "--tokenizer-type",
    /* _add_distributed_args: rank order tp-cp-ep-pp-dp instead of the
     * default tp-cp-ep-dp-pp */
    "--use-tp-pp-dp-mapping",
    /* _add_distributed_args: Megatron-core's pipeline layout (vp from it) */
    "--pipeline-model-parallel-layout",
    /* _add_mtp_args: multi-token prediction (Megatron-core 0.11+) */
    "--mtp-num-layers",
    /* _add_network_size_args: the projections' width per head */
    "--kv-channels",
    /* _add_transformer_engine_args: FP8 (H100 and newer layouts), its
     * attention, NVFP4 */
    "--fp8-format", "--fp8-recipe", "--fp8-amax-history-len",
    "--fp8-amax-compute-algo", "--fp8-dot-product-attention", "--fp4-format",
    "--fp4-recipe",
    /* _add_network_size_args: GPT-OSS's sliding window, its sinks and its
     * experts' clamped quick-GeGLU with the linear offset */
    "--window-size", "--window-attn-skip-freq", "--softmax-type",
    "--quick-geglu", "--activation-func-clamp-value", "--glu-linear-offset",
    /* _add_moe_args, _add_distributed_args: an all-to-all MoE layout */
    "--num-experts", "--moe-router-topk", "--moe-ffn-hidden-size",
    "--expert-model-parallel-size", "--expert-tensor-parallel-size",
    "--moe-token-dispatcher-type", "--moe-grouped-gemm", "--moe-permute-fusion",
    NULL};

bool megatron_arg(const char *name) {
    for (int i = 0; megatron_args[i]; i++)
        if (strcmp(name, megatron_args[i]) == 0) return true;
    return false;
}

const char *megatron_value(const char *script, const char *want, char *buf,
                           size_t len) {
    const char *p = strstr(script, "pretrain_gpt.py");
    assert_non_null(p);
    p += strlen("pretrain_gpt.py");
    const char *found = NULL;
    char tok[256], prev[256] = "";
    while (*p) {
        while (*p == ' ' || *p == '\\' || *p == '\n') p++;
        size_t n = strcspn(p, " \\\n");
        if (!n) break;
        snprintf(tok, sizeof tok, "%.*s", (int)n, p);
        p += n;
        if (strncmp(tok, "--", 2) == 0) {
            if (!megatron_arg(tok))
                fail_msg("%s is not a Megatron-LM argument", tok);
            if (strcmp(tok, want) == 0) {
                found = "";
                if (buf) buf[0] = '\0';
            }
        } else if (strcmp(tok, "\"$@\"") != 0 && strcmp(prev, want) == 0 &&
                   buf) {
            snprintf(buf, len, "%.*s", (int)len - 1, tok);
            found = buf;
        }
        snprintf(prev, sizeof prev, "%s", tok);
    }
    return found;
}
