/*
 * planner/launch_rope.c: a model's positions (rotary base, rope scaling)
 * and QK-norm in the launch formats, and what a format cannot say about
 * them, which its header then says instead of leaving it out silently.
 *
 * Sources (one stored version each; the argument names are checked, not
 * run):
 *   Megatron-LM megatron/training/arguments.py @000c4ac2: --rotary-base
 *     (int, default 10000), --use-rope-scaling with --rope-scaling-factor
 *     (Llama 3.x's: megatron/core/models/common/embeddings/rope_utils.py
 *     fixes low and high frequency factors 1 and 4 over 8192 positions),
 *     --qk-layernorm, and, for multi-latent attention only,
 *     --rotary-scaling-factor, --mscale and --mscale-all-dim;
 *     --position-embedding-type has no yarn, and no argument sets the
 *     original positions: MLATransformerConfig's 4096 stands
 *     (megatron/core/transformer/transformer_config.py @002526d8, whose
 *     rope_type defaults to yarn, which core_transformer_config_from_args
 *     keeps when --rope-type is not given).
 *   NeMo 2.0 nemo/collections/llm/gpt/model/base.py (GPTConfig.
 *     rotary_base), deepseek.py (DeepSeekConfig: rotary_scaling_factor,
 *     mscale, mscale_all_dim, from MLATransformerConfig with
 *     original_max_position_embeddings); Llama 3.1's scaling is
 *     Llama31Config's own (scale_factor), not GPTConfig's.
 *   NeMo 1 examples/nlp/language_modeling/conf/megatron_mcore_config.yaml:
 *     rotary_base, qk_layernorm; the MLA fields by the rule the nemo
 *     format relies on (the model section's TransformerConfig names are
 *     copied into it).
 */
#include "planner_int.h"

#include <stdio.h>

/* What the format cannot set, written into buf; NULL when nothing. */
static const char *unsaid(const pp_model *m, pp_plan_format f, char *buf,
                          size_t n) {
    if (!pp_model_has_rope(m) || m->rope_scaling == PP_ROPE_SCALING_NONE)
        return NULL;
    bool mla = pp_model_is_mla(m);
    bool yarn = m->rope_scaling == PP_ROPE_SCALING_YARN;
    int64_t orig = pp_model_rope_original_seq(m);
    const char *what = NULL;
    if (!mla && yarn)
        what = f == PP_PLAN_FMT_MEGATRON
                   ? "Megatron-LM's arguments set YaRN for multi-latent "
                     "attention only (Megatron-core's yarn_* fields, as "
                     "Megatron-Bridge's providers set them, carry it)"
                   : "TransformerConfig's fields here set YaRN for "
                     "multi-latent attention only (Megatron-core's "
                     "yarn_* fields, as Megatron-Bridge's providers set "
                     "them, carry it)";
    else if (mla && !yarn)
        what = "multi-latent attention's rotary key takes YaRN, not "
               "Llama 3.1's scaling";
    else if (!yarn && f == PP_PLAN_FMT_NEMO2)
        what = "Llama 3.1's scaling is llm.Llama31Config's (scale_factor), "
               "not GPTConfig's";
    else if (!yarn && f == PP_PLAN_FMT_NEMO)
        what = "NeMo 1's model keys have no Llama 3.1 scaling";
    else if (!yarn && orig != 8192)
        what = "Megatron-LM's --use-rope-scaling fixes 8192 original "
               "positions";
    else if (yarn && orig != 4096 && f == PP_PLAN_FMT_MEGATRON)
        what = "no Megatron-LM argument sets the original positions "
               "(MLATransformerConfig's 4096 stands)";
    if (!what) return NULL;
    snprintf(buf, n,
             "%s scaling (factor %g over %lld positions) is not set: %s; "
             "this trains %s",
             pp_rope_scaling_name(m->rope_scaling), m->rope_factor,
             (long long)orig, what,
             yarn && mla ? "YaRN over 4096 positions" : "unscaled RoPE");
    return buf;
}

void pp__rope_note(const pp_model *m, pp_plan_format f, FILE *fp,
                   const char *cmt) {
    char buf[512];
    const char *s = unsaid(m, f, buf, sizeof buf);
    if (s) fprintf(fp, "%s positions: %s\n", cmt, s);
}

void pp__megatron_rope_args(const pp_model *m, FILE *fp) {
#define ARG(...) pp__megatron_arg(fp, __VA_ARGS__)
    if (m->qk_norm) ARG("--qk-layernorm");
    if (!pp_model_has_rope(m)) return;
    if (m->rotary_base) ARG("--rotary-base %lld", (long long)m->rotary_base);
    bool mla = pp_model_is_mla(m);
    if (m->rope_scaling == PP_ROPE_SCALING_LLAMA3 && !mla &&
        pp_model_rope_original_seq(m) == 8192) {
        ARG("--use-rope-scaling");
        ARG("--rope-scaling-factor %g", m->rope_factor);
    } else if (m->rope_scaling == PP_ROPE_SCALING_YARN && mla) {
        ARG("--rotary-scaling-factor %g", m->rope_factor);
        if (m->rope_mscale) ARG("--mscale %g", m->rope_mscale);
        if (m->rope_mscale_all_dim)
            ARG("--mscale-all-dim %g", m->rope_mscale_all_dim);
    }
#undef ARG
}

void pp__nemo_rope_fields(const pp_model *m, FILE *fp, const pp__kv_style *st) {
    if (m->qk_norm) pp__kv_flag(fp, st, "qk_layernorm", true);
    if (!pp_model_has_rope(m)) return;
    if (m->rotary_base)
        pp__kv_field(fp, st, "rotary_base", "%lld", (long long)m->rotary_base);
    if (m->rope_scaling == PP_ROPE_SCALING_YARN && pp_model_is_mla(m)) {
        pp__kv_field(fp, st, "rotary_scaling_factor", "%g", m->rope_factor);
        pp__kv_field(fp, st, "original_max_position_embeddings", "%lld",
                     (long long)pp_model_rope_original_seq(m));
        if (m->rope_mscale)
            pp__kv_field(fp, st, "mscale", "%g", m->rope_mscale);
        if (m->rope_mscale_all_dim)
            pp__kv_field(fp, st, "mscale_all_dim", "%g",
                         m->rope_mscale_all_dim);
    }
}
