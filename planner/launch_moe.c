/*
 * planner/launch_moe.c: the MoE part of the launch formats (launch.c,
 * launch_nemo.c): Megatron-LM's arguments, and NeMo's TransformerConfig
 * fields as NeMo 1's YAML keys or NeMo 2.0's GPTConfig arguments, for the
 * experts, their parallelism, the token dispatcher and its buffers, as
 * sim/train/moe.c and step_group.c simulate them.
 */
#include "planner_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void pp__megatron_arg(FILE *fp, const char *fmt, ...) {
    va_list ap;
    fputs("    ", fp);
    va_start(ap, fmt);
    vfprintf(fp, fmt, ap);
    va_end(ap);
    fputs(" \\\n", fp);
}

/* The SMs the stack gives HybridEP's kernels (moe.overlap_sms.hybridep),
 * which the simulated compute beside them pays for; 0 when not set, and
 * then Megatron-core's own default is left alone. */
static double hybridep_sms(const pp_plan *p) {
    return p->profile.sw.moe_overlap_sms[PP_MOE_HYBRIDEP];
}

void pp__megatron_moe(const pp_plan *p, FILE *fp) {
    const pp_parallel *q = &p->cand[0].par;
    const pp_model *m = &p->model;
    if (!pp_model_is_moe(m)) return;
    char lf[64];
    pp__moe_flags(m, q, lf, sizeof lf);
    pp__megatron_arg(fp, "--num-experts %lld", (long long)m->experts);
    pp__megatron_arg(fp, "--moe-router-topk %lld", (long long)m->top_k);
    pp__megatron_arg(fp, "--moe-ffn-hidden-size %lld",
                     (long long)m->expert_ffn_hidden);
    if (m->shared_experts)
        pp__megatron_arg(fp, "--moe-shared-expert-intermediate-size %lld",
                         (long long)(m->shared_experts * m->expert_ffn_hidden));
    if (lf[0]) pp__megatron_arg(fp, "--moe-layer-freq %s", lf);
    /* podplan sends and computes the padding (drop-and-pad). */
    if (m->capacity_factor > 0) {
        pp__megatron_arg(fp, "--moe-expert-capacity-factor %g",
                         m->capacity_factor);
        pp__megatron_arg(fp, "--moe-pad-expert-input-to-capacity");
    }
    pp__megatron_arg(fp, "--expert-model-parallel-size %lld", (long long)q->ep);
    pp__megatron_arg(fp, "--expert-tensor-parallel-size %lld",
                     (long long)pp_parallel_etp(q));
    if (m->expert_groups > 0) {
        pp__megatron_arg(fp, "--moe-router-num-groups %lld",
                         (long long)m->expert_groups);
        pp__megatron_arg(fp, "--moe-router-group-topk %lld",
                         (long long)m->group_top_k);
    }
    /* What sim/train/moe.c and step_group.c model: the all-to-all
     * dispatcher, DeepEP's or HybridEP's (flex), the local experts as one
     * grouped GEMM, and the permutation fused unless the layout says not
     * (Megatron-core's default is unfused). */
    if (q->hybridep) {
        pp__megatron_arg(fp, "--moe-token-dispatcher-type flex");
        pp__megatron_arg(fp, "--moe-flex-dispatcher-backend hybridep");
        if (hybridep_sms(p) > 0)
            pp__megatron_arg(fp, "--moe-hybridep-num-sms %g", hybridep_sms(p));
    } else if (q->deepep) {
        pp__megatron_arg(fp, "--moe-token-dispatcher-type flex");
        pp__megatron_arg(fp, "--moe-enable-deepep");
    } else {
        pp__megatron_arg(fp, "--moe-token-dispatcher-type alltoall");
    }
    pp__megatron_arg(fp, "--moe-grouped-gemm");
    if (!q->permute_unfused) pp__megatron_arg(fp, "--moe-permute-fusion");
    /* Sync-free buffers, and the paged stash whose pages hold the tokens
     * that arrived, which is what podplan's memory counts (Megatron-LM's
     * paged-stash documentation: the rank capacity with HybridEP and TE's
     * op fuser for the grouped experts). */
    if (q->rank_capacity > 0) {
        pp__megatron_arg(fp, "--moe-expert-rank-capacity-factor %g",
                         q->rank_capacity);
        pp__megatron_arg(fp, "--moe-paged-stash");
        pp__megatron_arg(fp, "--use-transformer-engine-op-fuser");
    }
    /* The combined 1F1B schedule (sim/train/step_pair.c); delayed
     * weight gradients are not modelled, so not asked for. */
    if (q->a2a_overlap)
        pp__megatron_arg(fp, "--overlap-moe-expert-parallel-comm");
}

void pp__nemo_moe(const pp_plan *p, FILE *fp, const pp__kv_style *st) {
    const pp_parallel *q = &p->cand[0].par;
    const pp_model *m = &p->model;
    if (!pp_model_is_moe(m)) return;
    char lf[64];
    pp__moe_flags(m, q, lf, sizeof lf);
    pp__kv_field(fp, st, "num_moe_experts", "%lld", (long long)m->experts);
    pp__kv_field(fp, st, "moe_router_topk", "%lld", (long long)m->top_k);
    pp__kv_field(fp, st, "moe_ffn_hidden_size", "%lld",
                 (long long)m->expert_ffn_hidden);
    /* NeMo 2.0's MegatronStrategy takes the two sizes (launch_nemo.c). */
    if (!st->py) {
        pp__kv_field(fp, st, "expert_model_parallel_size", "%lld",
                     (long long)q->ep);
        pp__kv_field(fp, st, "expert_tensor_parallel_size", "%lld",
                     (long long)pp_parallel_etp(q));
    }
    if (q->hybridep) {
        pp__kv_text(fp, st, "moe_token_dispatcher_type", "flex");
        pp__kv_text(fp, st, "moe_flex_dispatcher_backend", "hybridep");
        if (hybridep_sms(p) > 0)
            pp__kv_field(fp, st, "moe_hybridep_num_sms", "%g", hybridep_sms(p));
    } else {
        pp__kv_text(fp, st, "moe_token_dispatcher_type",
                    q->deepep ? "flex" : "alltoall");
        if (q->deepep) pp__kv_flag(fp, st, "moe_enable_deepep", true);
    }
    pp__kv_flag(fp, st, "moe_grouped_gemm", true);
    pp__kv_flag(fp, st, "moe_permute_fusion", !q->permute_unfused);
    if (m->expert_groups > 0) {
        pp__kv_field(fp, st, "moe_router_num_groups", "%lld",
                     (long long)m->expert_groups);
        pp__kv_field(fp, st, "moe_router_group_topk", "%lld",
                     (long long)m->group_top_k);
    }
    if (m->shared_experts)
        pp__kv_field(fp, st, "moe_shared_expert_intermediate_size", "%lld",
                     (long long)(m->shared_experts * m->expert_ffn_hidden));
    /* TransformerConfig takes an int or a list: Python evaluates the
     * pattern (pp__moe_flags quotes it for the shell and YAML). */
    if (lf[0]) {
        size_t n = strlen(lf);
        if (st->py && lf[0] == '"')
            pp__kv_field(fp, st, "moe_layer_freq", "%.*s", (int)(n - 2),
                         lf + 1);
        else
            pp__kv_field(fp, st, "moe_layer_freq", "%s", lf);
    }
    if (m->capacity_factor > 0) {
        pp__kv_field(fp, st, "moe_expert_capacity_factor", "%g",
                     m->capacity_factor);
        pp__kv_flag(fp, st, "moe_pad_expert_input_to_capacity", true);
    }
    if (q->rank_capacity > 0) {
        pp__kv_field(fp, st, "moe_expert_rank_capacity_factor", "%g",
                     q->rank_capacity);
        pp__kv_flag(fp, st, "moe_paged_stash", true);
        pp__kv_flag(fp, st, "use_transformer_engine_op_fuser", true);
    }
    if (q->a2a_overlap)
        pp__kv_flag(fp, st, "overlap_moe_expert_parallel_comm", true);
}
