/*
 * models/model_inline.c: a model given on the command line,
 * "layers=96,hidden=12288,heads=96,seq=2048,vocab=51200[,...]", parsed
 * into the pp_model a zoo file would give (model.c's defaults, derived
 * fields and checks).
 */
#include <stdio.h>
#include <string.h>

#include "models_int.h"

/* The index of val in a NULL-ended name list, -1 if absent (an inline
 * spec's enum keys; YAML's go through pp_map_enum). */
static int name_index(const char *const *names, const char *val) {
    for (int i = 0; names[i]; i++)
        if (strcmp(val, names[i]) == 0) return i;
    return -1;
}

static const char *const inline_keys[] = {"layers",
                                          "hidden",
                                          "heads",
                                          "seq",
                                          "vocab",
                                          "kv_heads",
                                          "ffn_hidden",
                                          "head_dim",
                                          "ffn",
                                          "tied_embeddings",
                                          "name",
                                          "bias",
                                          "experts",
                                          "top_k",
                                          "expert_ffn_hidden",
                                          "shared_experts",
                                          "moe_layer_freq",
                                          "first_dense_layers",
                                          "expert_groups",
                                          "group_top_k",
                                          "capacity_factor",
                                          "mtp_layers",
                                          "kv_channels",
                                          "window",
                                          "window_skip",
                                          "q_lora_rank",
                                          "kv_lora_rank",
                                          "qk_nope_head_dim",
                                          "qk_rope_head_dim",
                                          "v_head_dim",
                                          "glu_act",
                                          "glu_clamp",
                                          "glu_offset",
                                          "softmax",
                                          "rotary_base",
                                          "rope_scaling",
                                          "rope_factor",
                                          "rope_original_seq",
                                          "rope_mscale",
                                          "rope_mscale_all_dim",
                                          "qk_norm",
                                          NULL};

enum {
    I_LAYERS,
    I_HIDDEN,
    I_HEADS,
    I_SEQ,
    I_VOCAB,
    I_KV_HEADS,
    I_FFN_HIDDEN,
    I_HEAD_DIM,
    I_FFN,
    I_TIED,
    I_NAME,
    I_BIAS,
    I_EXPERTS,
    I_TOP_K,
    I_EXPERT_FFN,
    I_SHARED,
    I_MOE_FREQ,
    I_FIRST_DENSE,
    I_GROUPS,
    I_GROUP_TOPK,
    I_CAPACITY,
    I_MTP,
    I_KV_CHANNELS,
    I_WINDOW,
    I_WINDOW_SKIP,
    I_Q_LORA,
    I_KV_LORA,
    I_QK_NOPE,
    I_QK_ROPE,
    I_V_HEAD,
    I_GLU_ACT,
    I_GLU_CLAMP,
    I_GLU_OFFSET,
    I_SOFTMAX,
    I_ROTARY_BASE,
    I_ROPE_SCALING,
    I_ROPE_FACTOR,
    I_ROPE_ORIG,
    I_ROPE_MSCALE,
    I_ROPE_MSCALE_ALL,
    I_QK_NORM
};

/* The integer keys: where each goes and its range (a count from 0 or
 * 1, or MTP's few modules). */
typedef struct {
    int key;
    int64_t *dst;
    int64_t lo, hi;
} int_key;

static int inline_value(void *ctx, int k, const char *val, pp_error *e) {
    pp_model *m = ctx;
    const char *pre = "--model: ";
    const int64_t big = PP_MODEL_DIM_MAX;
    const int_key ints[] = {
        {I_LAYERS, &m->layers, 1, big},
        {I_HIDDEN, &m->hidden, 1, big},
        {I_HEADS, &m->heads, 1, big},
        {I_SEQ, &m->seq, 1, big},
        {I_VOCAB, &m->vocab, 1, big},
        {I_KV_HEADS, &m->kv_heads, 1, big},
        {I_FFN_HIDDEN, &m->ffn_hidden, 1, big},
        {I_HEAD_DIM, &m->head_dim, 1, big},
        {I_EXPERTS, &m->experts, 1, big},
        {I_TOP_K, &m->top_k, 1, big},
        {I_EXPERT_FFN, &m->expert_ffn_hidden, 1, big},
        {I_SHARED, &m->shared_experts, 0, big},
        {I_MOE_FREQ, &m->moe_layer_freq, 1, big},
        {I_FIRST_DENSE, &m->first_dense_layers, 0, big},
        {I_GROUPS, &m->expert_groups, 1, big},
        {I_GROUP_TOPK, &m->group_top_k, 1, big},
        {I_KV_CHANNELS, &m->kv_channels, 1, big},
        {I_Q_LORA, &m->q_lora_rank, 0, big},
        {I_KV_LORA, &m->kv_lora_rank, 1, big},
        {I_QK_NOPE, &m->qk_nope_head_dim, 1, big},
        {I_QK_ROPE, &m->qk_rope_head_dim, 1, big},
        {I_V_HEAD, &m->v_head_dim, 1, big},
        {I_WINDOW, &m->window, 0, big},
        {I_WINDOW_SKIP, &m->window_skip, 0, big},
        {I_MTP, &m->mtp_layers, 0, PP_MTP_MAX},
        {I_ROTARY_BASE, &m->rotary_base, 1, big},
        {I_ROPE_ORIG, &m->rope_original_seq, 1, big},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        const int_key *ik = &ints[i];
        if (ik->key != k) continue;
        if (pp_parse_i64(val, ik->lo, ik->hi, ik->dst) == 0) return 0;
        if (ik->hi < big)
            return pp_error_set(
                e, PP_EINPUT, "%s%s: expected %lld to %lld, got \"%.100s\"",
                pre, inline_keys[k], (long long)ik->lo, (long long)ik->hi, val);
        return pp_error_set(
            e, PP_EINPUT, "%s%s: expected a%s integer, got \"%.100s\"", pre,
            inline_keys[k], ik->lo ? " positive" : " non-negative", val);
    }
    if (k == I_CAPACITY) {
        double x;
        if (pp_parse_f64(val, 0, 64, &x) < 0)
            return pp_error_set(e, PP_EINPUT,
                                "%scapacity_factor: expected 0 (dropless) "
                                "or 1 to 64, got \"%.100s\"",
                                pre, val);
        m->capacity_factor = x;
        return 0;
    }
    if (k == I_GLU_CLAMP) {
        if (pp_parse_f64(val, 0, 1e6, &m->glu_clamp) < 0)
            return pp_error_set(e, PP_EINPUT,
                                "%sglu_clamp: expected 0 (none) to 1e6, got "
                                "\"%.100s\"",
                                pre, val);
        return 0;
    }
    if (k == I_GLU_OFFSET) {
        if (pp_parse_f64(val, -1e6, 1e6, &m->glu_offset) < 0)
            return pp_error_set(e, PP_EINPUT,
                                "%sglu_offset: expected a number from -1e6 "
                                "to 1e6, got \"%.100s\"",
                                pre, val);
        return 0;
    }
    if (k >= I_ROPE_FACTOR && k <= I_ROPE_MSCALE_ALL) {
        /* rope_factor 1 to 1e6; rope_mscale above 0 (0 is its unset);
         * rope_mscale_all_dim 0 to 100. */
        double lo = k == I_ROPE_FACTOR ? 1 : k == I_ROPE_MSCALE ? 1e-6 : 0;
        double hi = k == I_ROPE_FACTOR ? 1e6 : 100;
        double *dst = k == I_ROPE_FACTOR   ? &m->rope_factor
                      : k == I_ROPE_MSCALE ? &m->rope_mscale
                                           : &m->rope_mscale_all_dim;
        if (pp_parse_f64(val, lo, hi, dst) < 0)
            return pp_error_set(e, PP_EINPUT,
                                "%s%s: expected a number from %g to %g, got "
                                "\"%.100s\"",
                                pre, inline_keys[k], lo, hi, val);
        return 0;
    }
    if (k == I_ROPE_SCALING) {
        int i = name_index(pp__rope_scaling_names, val);
        if (i < 0)
            return pp_error_set(e, PP_EINPUT,
                                "%srope_scaling: expected none, llama3 or "
                                "yarn, got \"%.100s\"",
                                pre, val);
        m->rope_scaling = (pp_rope_scaling)i;
        return 0;
    }
    if (k == I_SOFTMAX) {
        int i = name_index(pp__softmax_names, val);
        if (i < 0)
            return pp_error_set(e, PP_EINPUT,
                                "%ssoftmax: expected vanilla, off-by-one or "
                                "learnable, got \"%.100s\"",
                                pre, val);
        m->softmax = (pp_softmax)i;
        return 0;
    }
    if (k == I_GLU_ACT) {
        int i = name_index(pp__glu_names, val);
        if (i < 0)
            return pp_error_set(e, PP_EINPUT,
                                "%sglu_act: expected silu or quick_gelu, got "
                                "\"%.100s\"",
                                pre, val);
        m->glu_quick = i == 1;
        return 0;
    }
    if (k == I_FFN) {
        int i = name_index(pp__ffn_names, val);
        if (i >= 0) {
            m->ffn = (pp_ffn)i;
            return 0;
        }
        return pp_error_set(
            e, PP_EINPUT,
            "%sffn: expected gelu, swiglu or squared_relu, got \"%.100s\"", pre,
            val);
    }
    if (k == I_TIED || k == I_BIAS || k == I_QK_NORM) {
        bool *dst = k == I_TIED   ? &m->tied_embeddings
                    : k == I_BIAS ? &m->bias
                                  : &m->qk_norm;
        if (strcmp(val, "true") == 0)
            *dst = true;
        else if (strcmp(val, "false") == 0)
            *dst = false;
        else
            return pp_error_set(e, PP_EINPUT,
                                "%s%s: expected true or false, got "
                                "\"%.100s\"",
                                pre, inline_keys[k], val);
        return 0;
    }
    if (val[0] == '\0' || strlen(val) >= PP_NAME_MAX)
        return pp_error_set(e, PP_EINPUT,
                            "%sname: expected a name of 1 to %d characters",
                            pre, PP_NAME_MAX - 1);
    strcpy(m->name, val);
    return 0;
}

int pp__model_parse_inline(const char *spec, pp_model *out, pp_error *e) {
    const char *pre = "--model: ";
    pp_model m;
    uint64_t seen = 0; /* bit i: inline_keys[i] given */

    pp__model_defaults(&m);
    int rc =
        pp_kv_parse(spec, "--model", inline_keys, inline_value, &m, &seen, e);
    if (rc < 0) return rc;
    /* The first five keys are required. */
    for (int k = I_LAYERS; k <= I_VOCAB; k++)
        if (!(seen & (UINT64_C(1) << k)))
            return pp_error_set(e, PP_EINPUT,
                                "%s%s: missing (an inline model needs "
                                "layers, hidden, heads, seq and vocab)",
                                pre, inline_keys[k]);
    if (m.experts > 0 && m.top_k == 0)
        return pp_error_set(e, PP_EINPUT,
                            "%stop_k: missing (an MoE model needs the "
                            "experts each token is routed to)",
                            pre);
    pp__model_derive(&m);
    if (!(seen & (UINT64_C(1) << I_BIAS)))
        m.bias = m.ffn == PP_FFN_GELU; /* as pp_model_from_node */
    if (m.name[0] == '\0')
        snprintf(m.name, sizeof m.name, "custom-%lldL-%lldh",
                 (long long)m.layers, (long long)m.hidden);
    if ((rc = pp__model_check(&m, pre, e)) < 0) return rc;
    *out = m;
    return 0;
}
