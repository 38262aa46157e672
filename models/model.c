/*
 * models/model.c: model descriptions (YAML files in models/zoo/, inline
 * specs) and the parameter count.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models_int.h"

static const char *const arch_names[] = {"transformer", "generic", NULL};
const char *const pp__ffn_names[] = {"gelu", "swiglu", "squared_relu", NULL};
const char *const pp__glu_names[] = {"silu", "quick_gelu", NULL};
/* pp_softmax's order: Megatron-core's softmax_type values. */
const char *const pp__softmax_names[] = {"vanilla", "off-by-one", "learnable",
                                         NULL};

const char *const pp__rope_scaling_names[] = {"none", "llama3", "yarn", NULL};

const char *pp_softmax_name(pp_softmax s) {
    return (unsigned)s <= PP_SOFTMAX_LEARNABLE ? pp__softmax_names[s]
                                               : "vanilla";
}

const char *pp_rope_scaling_name(pp_rope_scaling r) {
    return (unsigned)r <= PP_ROPE_SCALING_YARN ? pp__rope_scaling_names[r]
                                               : "none";
}

bool pp_model_has_rope(const pp_model *m) {
    return !pp_model_learned_positions(m) || pp_model_is_mla(m);
}

double pp_model_rotary_base(const pp_model *m) {
    return m->rotary_base > 0 ? (double)m->rotary_base : 10000.0;
}

/* Megatron-LM's llama3 scaling fixes 8192 (megatron/core/models/common/
 * embeddings/rope_utils.py), MLATransformerConfig's yarn defaults to
 * original_max_position_embeddings 4096. */
int64_t pp_model_rope_original_seq(const pp_model *m) {
    if (m->rope_scaling == PP_ROPE_SCALING_NONE) return 0;
    if (m->rope_original_seq > 0) return m->rope_original_seq;
    return m->rope_scaling == PP_ROPE_SCALING_LLAMA3 ? 8192 : 4096;
}

/* ------------------------------------------------------------------------
 * Parameter count.
 *
 * GPT (Radford et al. 2019; Brown et al. 2020) and Megatron-LM: every
 * linear layer has a bias, LayerNorm has a gain and a bias (2h), positions
 * are a learned s x h table.  Per layer: QKV h(h + 2 kv) + (h + 2 kv),
 * output projection h^2 + h, MLP 2 h f + f + h, two LayerNorms 4h.  With
 * kv = h and f = 4h that is 12 h^2 + 13 h, and the whole model is
 * 12 l h^2 (1 + 13/(12h) + (V+s)/(12lh)) + 2h (the final LayerNorm), the
 * formula of Narayanan et al. 2021, sec. 5.1.
 *
 * SwiGLU models follow LLaMA (Touvron et al. 2023, sec. 2.2): RMSNorm
 * with a gain only (h per norm), rotary positions (no table), and three
 * MLP matrices (gate, up, down).  Biases are the model's `bias` key (the
 * loaders default it to none for SwiGLU, LLaMA's choice); with them a
 * SwiGLU MLP has 2f + h of them (gate, up, down).  This reproduces the
 * published counts exactly: LLaMA-2 7B 6,738,415,616, LLaMA-2 70B
 * 68,976,648,192.
 * ---------------------------------------------------------------------- */
double pp_model_kv_channels(const pp_model *m) {
    return m->kv_channels > 0 ? (double)m->kv_channels
                              : (double)(m->hidden / m->heads);
}

/* Windowed layers: all but every window_skip-th (from 1). */
double pp_model_window_share(const pp_model *m) {
    if (m->window <= 0 || m->layers <= 0) return 0.0;
    if (m->window_skip <= 1) return 1.0;
    double l = (double)m->layers;
    return (l - (double)(m->layers / m->window_skip)) / l;
}

bool pp_model_is_mla(const pp_model *m) {
    return m->kv_lora_rank > 0;
}

/* MLA (DeepSeek-V2 sec. 2.1, Megatron-core's MLASelfAttention): Q from
 * h through a q_rank latent (linear_q_down_proj, q_layernorm,
 * linear_q_up_proj) or straight (linear_q_proj); K's and V's non-rotary
 * parts from a kv_rank latent (linear_kv_down_proj, which also gives the
 * shared rotary key, kv_layernorm, linear_kv_up_proj); the output
 * projection from heads x v_head_dim.  DeepSeek-V3's shape gives
 * 187,107,328 weights a layer (with both latent norms), as its
 * checkpoint's q_a_proj, q_a_layernorm, q_b_proj, kv_a_proj_with_mqa,
 * kv_a_layernorm, kv_b_proj and o_proj hold. */
void pp_model_attn_shape(const pp_model *m, pp_attn_shape *out) {
    pp_attn_shape a;
    memset(&a, 0, sizeof a);
    double h = (double)m->hidden, heads = (double)m->heads;
    if (pp_model_is_mla(m)) {
        double qk = (double)(m->qk_nope_head_dim + m->qk_rope_head_dim);
        a.mla = true;
        a.q_rank = (double)m->q_lora_rank;
        a.kv_rank = (double)m->kv_lora_rank;
        a.rope = (double)m->qk_rope_head_dim;
        a.q = a.k = heads * qk;
        a.v = a.o = heads * (double)m->v_head_dim;
        double kv_up = heads * (double)(m->qk_nope_head_dim + m->v_head_dim);
        a.up = (a.q_rank > 0 ? a.q_rank : h) * a.q + a.kv_rank * kv_up;
        a.split = a.up + a.o * h;
        a.replicated = h * (a.q_rank + a.kv_rank + a.rope);
        a.matrices = a.split + a.replicated;
        a.replicated += a.q_rank + a.kv_rank; /* the latents' norms */
        if (m->bias) a.split += a.q + kv_up + h;
    } else {
        double d = pp_model_kv_channels(m);
        a.q = a.o = heads * d;
        a.k = a.v = (double)m->kv_heads * d;
        a.split = a.matrices = h * (a.q + a.k + a.v) + a.o * h;
        /* QKV and output-projection biases */
        if (m->bias) a.split += (a.q + a.k + a.v) + h;
    }
    *out = a;
}

double pp__attn_replicated_extra(const pp_model *m, double layers, double tp) {
    if (!pp_model_is_mla(m) || tp <= 1) return 0;
    pp_attn_shape at;
    pp_model_attn_shape(m, &at);
    return layers * at.replicated * (1.0 - 1.0 / tp);
}

double pp__layer_params(const pp_model *m) {
    double h = (double)m->hidden;
    double f = (double)m->ffn_hidden;
    bool llama = m->ffn == PP_FFN_SWIGLU;
    pp_attn_shape at;
    pp_model_attn_shape(m, &at);

    double attn = at.split + at.replicated;
    double mlp = llama ? 3.0 * h * f : 2.0 * h * f;
    double norms = pp_model_rmsnorm(m) ? 2.0 * h : 4.0 * h;
    /* QK-norm: one norm over kv_channels for the queries, one for the
     * keys (a gain each, and a bias under LayerNorm). */
    if (m->qk_norm)
        norms += (pp_model_rmsnorm(m) ? 2.0 : 4.0) * pp_model_kv_channels(m);
    if (m->bias) mlp += (llama ? 2.0 * f : f) + h;
    return attn + mlp + norms;
}

double pp__embedding_params(const pp_model *m) {
    double p = (double)m->vocab * (double)m->hidden;
    if (pp_model_learned_positions(m))
        p += (double)m->seq * (double)m->hidden; /* learned positions */
    return p;
}

double pp__mtp_params(const pp_model *m, double *experts) {
    double D = (double)m->mtp_layers, h = (double)m->hidden;
    int64_t last = m->layers - 1;
    if (experts) *experts = D * pp__expert_params_at(m, last);
    return D * (pp__layer_params_at(m, last) + 2.0 * h * h + 2.0 * h);
}

double pp_model_params(const pp_model *m) {
    if (m->arch == PP_ARCH_GENERIC) return m->params;
    double h = (double)m->hidden;
    double p = pp__layers_params(m, 0, m->layers);
    p += pp__embedding_params(m);
    p += pp_model_rmsnorm(m) ? h : 2.0 * h; /* final norm */
    if (!m->tied_embeddings)
        p += (double)m->vocab * h; /* separate output projection */
    return p;
}

/* ------------------------------------------------------------------------
 * Validation.  One function serves the three callers: a YAML map (located
 * messages naming the key's node), an inline spec (prefix "--model: ") and
 * pp_model_validate (no prefix).
 * ---------------------------------------------------------------------- */
typedef struct {
    pp_node *map;       /* NULL when not from YAML */
    const char *path;   /* dotted path of map */
    const char *prefix; /* for unlocated messages */
} pp_where;

static int model_bad(const pp_where *w, pp_error *e, const char *key,
                     const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int model_bad(const pp_where *w, pp_error *e, const char *key,
                     const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (w->map) {
        char kp[256];
        pp_node *n = pp_map_get(w->map, key);
        return pp_error_at(e, PP_EINPUT, n ? n : w->map,
                           pp_path(kp, sizeof kp, w->path, key), "%s", msg);
    }
    return pp_error_set(e, PP_EINPUT, "%s%s: %s", w->prefix, key, msg);
}

/* glu_act and glu_clamp price the routed experts' activation as
 * Megatron-core's MoE path runs it; the dense MLP's clamp and the shared
 * experts' are not priced, so a model that has them is refused rather
 * than half priced. */
static int glu_check(const pp_model *m, const pp_where *w, pp_error *e) {
    if (!m->glu_quick && !(m->glu_clamp > 0)) return 0;
    const char *k = m->glu_quick ? "glu_act" : "glu_clamp";
    if (m->ffn != PP_FFN_SWIGLU)
        return model_bad(w, e, k, "needs a gated FFN (ffn: swiglu)");
    if (m->shared_experts || m->first_dense_layers || m->moe_layer_freq > 1)
        return model_bad(w, e, k,
                         "prices the routed experts' activation only: a "
                         "model with dense MLP layers or shared experts "
                         "is not supported");
    return 0;
}

/* The positions' keys.  A learned table has no frequencies to set, MLA
 * normalizes its latents, not its heads, and the scaling's terms mean
 * nothing without a scaling. */
static int rope_check(const pp_model *m, const pp_where *w, pp_error *e) {
    if (m->qk_norm && pp_model_is_mla(m))
        return model_bad(w, e, "qk_norm",
                         "not used with multi-head latent attention (its "
                         "latent norms are part of it)");
    bool scaled = m->rope_scaling != PP_ROPE_SCALING_NONE;
    const char *k = m->rotary_base           ? "rotary_base"
                    : scaled                 ? "rope_scaling"
                    : m->rope_factor         ? "rope_factor"
                    : m->rope_original_seq   ? "rope_original_seq"
                    : m->rope_mscale         ? "rope_mscale"
                    : m->rope_mscale_all_dim ? "rope_mscale_all_dim"
                                             : NULL;
    if (!k) return 0;
    if (!pp_model_has_rope(m))
        return model_bad(w, e, k,
                         "needs rotary positions (ffn swiglu or "
                         "squared_relu, or MLA): a GeLU model has a "
                         "learned position table");
    if (!scaled && (m->rope_factor || m->rope_original_seq || m->rope_mscale ||
                    m->rope_mscale_all_dim))
        return model_bad(w, e, k, "needs rope_scaling (llama3 or yarn)");
    if (scaled && !(m->rope_factor > 1))
        return model_bad(w, e, "rope_factor",
                         "expected a factor above 1 for rope_scaling %s",
                         pp_rope_scaling_name(m->rope_scaling));
    if (m->rope_scaling == PP_ROPE_SCALING_LLAMA3 &&
        (m->rope_mscale || m->rope_mscale_all_dim))
        return model_bad(w, e,
                         m->rope_mscale ? "rope_mscale" : "rope_mscale_all_dim",
                         "is a yarn term (rope_scaling: yarn)");
    return 0;
}

/* The MoE keys (models/moe.c), once the dense shape is known good. */
static int moe_check(const pp_model *m, const pp_where *w, pp_error *e) {
    int rc;
    if (m->experts == 0) {
        const char *k = m->top_k                ? "top_k"
                        : m->shared_experts     ? "shared_experts"
                        : m->capacity_factor    ? "capacity_factor"
                        : m->first_dense_layers ? "first_dense_layers"
                        : m->expert_ffn_hidden  ? "expert_ffn_hidden"
                        : m->moe_layer_freq     ? "moe_layer_freq"
                        : m->expert_groups      ? "expert_groups"
                        : m->group_top_k        ? "group_top_k"
                        : m->glu_quick          ? "glu_act"
                        : m->glu_clamp          ? "glu_clamp"
                                                : NULL;
        if (k)
            return model_bad(w, e, k,
                             "is an MoE key, but the model has no experts "
                             "(set experts)");
        return 0;
    }
    if (m->experts < 1 || m->experts > PP_MODEL_DIM_MAX)
        return model_bad(w, e, "experts", "expected a positive integer");
    if (m->top_k < 1 || m->top_k > m->experts)
        return model_bad(w, e, "top_k",
                         "expected 1 to experts (%lld), got %lld",
                         (long long)m->experts, (long long)m->top_k);
    if (m->expert_ffn_hidden < 1 || m->expert_ffn_hidden > PP_MODEL_DIM_MAX)
        return model_bad(w, e, "expert_ffn_hidden",
                         "expected a positive integer");
    if (m->shared_experts < 0 || m->shared_experts > PP_MODEL_DIM_MAX)
        return model_bad(w, e, "shared_experts",
                         "expected a non-negative integer");
    if (m->moe_layer_freq < 1 || m->moe_layer_freq > m->layers)
        return model_bad(w, e, "moe_layer_freq",
                         "expected 1 to layers (%lld), got %lld",
                         (long long)m->layers, (long long)m->moe_layer_freq);
    if (m->first_dense_layers < 0 || m->first_dense_layers >= m->layers)
        return model_bad(w, e, "first_dense_layers",
                         "expected 0 to layers - 1 (%lld), got %lld",
                         (long long)(m->layers - 1),
                         (long long)m->first_dense_layers);
    /* A capacity below 1 drops tokens even when routing is balanced;
     * Switch Transformer (Fedus et al. 2022) uses 1 to 2. */
    if (m->capacity_factor != 0 &&
        !(m->capacity_factor >= 1.0 && m->capacity_factor <= 64.0))
        return model_bad(w, e, "capacity_factor",
                         "expected 0 (dropless) or 1 to 64, got %g",
                         m->capacity_factor);
    if (m->arch == PP_ARCH_TRANSFORMER && pp_model_moe_layers(m) == 0)
        return model_bad(w, e, "first_dense_layers", "leaves no MoE layer");
    if ((rc = glu_check(m, w, e)) < 0) return rc;
    if (m->expert_groups || m->group_top_k) {
        if (m->expert_groups == 0)
            return model_bad(w, e, "group_top_k",
                             "needs expert_groups (the groups it picks "
                             "from)");
        if (m->experts % m->expert_groups)
            return model_bad(w, e, "expert_groups",
                             "expected a divisor of experts (%lld), got %lld",
                             (long long)m->experts,
                             (long long)m->expert_groups);
        if (m->group_top_k == 0)
            return model_bad(w, e, "expert_groups",
                             "needs group_top_k (how many groups a token "
                             "picks)");
        int64_t per = m->experts / m->expert_groups;
        if (m->group_top_k < 1 || m->group_top_k > m->expert_groups ||
            m->group_top_k * per < m->top_k)
            return model_bad(w, e, "group_top_k",
                             "expected 1 to expert_groups (%lld) groups "
                             "holding at least top_k (%lld) experts, got "
                             "%lld",
                             (long long)m->expert_groups, (long long)m->top_k,
                             (long long)m->group_top_k);
    }
    return 0;
}

/* The MLA keys, once heads and kv_heads are known good. */
static int mla_check(const pp_model *m, const pp_where *w, pp_error *e) {
    if (!pp_model_is_mla(m)) {
        const char *k = m->q_lora_rank        ? "q_lora_rank"
                        : m->qk_nope_head_dim ? "qk_nope_head_dim"
                        : m->qk_rope_head_dim ? "qk_rope_head_dim"
                        : m->v_head_dim       ? "v_head_dim"
                                              : NULL;
        if (k)
            return model_bad(w, e, k,
                             "is a multi-head latent attention key, but the "
                             "model has no kv_lora_rank (set it)");
        return 0;
    }
    const char *need = m->qk_nope_head_dim < 1   ? "qk_nope_head_dim"
                       : m->qk_rope_head_dim < 1 ? "qk_rope_head_dim"
                       : m->v_head_dim < 1       ? "v_head_dim"
                                                 : NULL;
    if (need)
        return model_bad(w, e, need,
                         "missing: multi-head latent attention (kv_lora_rank "
                         "%lld) needs qk_nope_head_dim, qk_rope_head_dim and "
                         "v_head_dim",
                         (long long)m->kv_lora_rank);
    if (m->kv_heads != m->heads)
        return model_bad(w, e, "kv_heads",
                         "multi-head latent attention projects a K and a V "
                         "per head: expected heads (%lld), got %lld",
                         (long long)m->heads, (long long)m->kv_heads);
    if (m->kv_channels)
        return model_bad(w, e, "kv_channels",
                         "not used with multi-head latent attention (its "
                         "widths are qk_nope_head_dim, qk_rope_head_dim and "
                         "v_head_dim)");
    return 0;
}

static int model_check(const pp_model *m, const pp_where *w, pp_error *e) {
    int rc;
    if (m->arch == PP_ARCH_GENERIC) {
        if (!(m->params > 0))
            return model_bad(w, e, "params", "expected a positive count");
        if (!(m->flops_per_sample > 0))
            return model_bad(w, e, "flops_per_sample",
                             "expected a positive FLOP count");
        return 0;
    }
    struct {
        const char *key;
        int64_t v;
    } dims[] = {{"layers", m->layers},
                {"hidden", m->hidden},
                {"heads", m->heads},
                {"kv_heads", m->kv_heads},
                {"seq", m->seq},
                {"vocab", m->vocab},
                {"ffn_hidden", m->ffn_hidden}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i].v < 1 || dims[i].v > PP_MODEL_DIM_MAX)
            return model_bad(w, e, dims[i].key,
                             "expected a positive integer at most %lld, "
                             "got %lld",
                             PP_MODEL_DIM_MAX, (long long)dims[i].v);
    /* Attention splits h into a heads of h/a each (Vaswani et al. 2017). */
    if (m->hidden % m->heads != 0)
        return model_bad(w, e, "hidden",
                         "%lld is not divisible by heads (%lld)",
                         (long long)m->hidden, (long long)m->heads);
    /* GQA: each K/V head serves heads/kv_heads query heads (Ainslie et al.
     * 2023), so kv_heads must divide heads. */
    if (m->heads % m->kv_heads != 0)
        return model_bad(w, e, "kv_heads", "%lld does not divide heads (%lld)",
                         (long long)m->kv_heads, (long long)m->heads);
    if ((rc = mla_check(m, w, e)) < 0) return rc;
    if ((rc = rope_check(m, w, e)) < 0) return rc;
    if (m->mtp_layers < 0 || m->mtp_layers > PP_MTP_MAX)
        return model_bad(w, e, "mtp_layers", "expected 0 to %d, got %lld",
                         PP_MTP_MAX, (long long)m->mtp_layers);
    /* window_skip 1 would make every layer full: no window at all. */
    if (m->window_skip == 1 || (m->window_skip > 1 && m->window == 0))
        return model_bad(w, e, "window_skip",
                         m->window_skip == 1
                             ? "expected 0 (every layer windowed) or at "
                               "least 2 (every k-th layer full), got 1"
                             : "needs a window (window: tokens)");
    /* Megatron-core adds the offset in its GLU: a gated FFN's. */
    if (m->glu_offset != 0 && m->ffn != PP_FFN_SWIGLU)
        return model_bad(w, e, "glu_offset", "needs a gated FFN (ffn: swiglu)");
    return moe_check(m, w, e);
}

int pp__model_check(const pp_model *m, const char *prefix, pp_error *e) {
    pp_where w = {NULL, NULL, prefix};
    return model_check(m, &w, e);
}

int pp_model_validate(const pp_model *m, pp_error *e) {
    return pp__model_check(m, "", e);
}

/* ------------------------------------------------------------------------
 * Defaults and names.
 * ---------------------------------------------------------------------- */
void pp__model_defaults(pp_model *m) {
    memset(m, 0, sizeof *m);
    m->arch = PP_ARCH_TRANSFORMER;
    m->ffn = PP_FFN_GELU;
    m->tied_embeddings = true;
}

/* Fills the defaults that depend on other fields (kv_heads = heads,
 * ffn_hidden = 4h), for fields still 0. */
void pp__model_derive(pp_model *m) {
    if (pp_model_is_mla(m) && m->head_dim == 0)
        m->head_dim =
            (m->qk_nope_head_dim + m->qk_rope_head_dim + m->v_head_dim) / 2;
    if (m->kv_heads == 0) m->kv_heads = m->heads;
    if (m->ffn_hidden == 0) m->ffn_hidden = 4 * m->hidden;
    if (m->experts > 0) {
        if (m->expert_ffn_hidden == 0) m->expert_ffn_hidden = m->ffn_hidden;
        if (m->moe_layer_freq == 0) m->moe_layer_freq = 1;
    }
}

/* ------------------------------------------------------------------------
 * YAML.
 * ---------------------------------------------------------------------- */
int pp_model_from_node(pp_node *map, const char *path, pp_model *out,
                       pp_error *e) {
    pp_model m;
    const char *name = NULL;
    int arch = PP_ARCH_TRANSFORMER, ffn = PP_FFN_GELU;
    int rc;

    if (!path) path = "";
    if ((rc = pp_node_expect(map, path, PP_NODE_MAP, e)) < 0) return rc;
    pp__model_defaults(&m);
    if ((rc = pp_map_string(map, path, "name", PP_OPTIONAL, &name, e)) < 0)
        return rc;
    if ((rc = pp_map_enum(map, path, "arch", PP_OPTIONAL, arch_names, &arch,
                          e)) < 0)
        return rc;
    m.arch = (pp_arch)arch;

    if (m.arch == PP_ARCH_GENERIC) {
        /* A model known by its size and cost only (ResNet-50, ViT). */
        if ((rc = pp_map_quantity(map, path, "params", PP_REQUIRED, PP_Q_COUNT,
                                  NULL, false, &m.params, e)) < 0)
            return rc;
        if ((rc = pp_map_quantity(map, path, "flops_per_sample", PP_REQUIRED,
                                  PP_Q_FLOPS, "FLOP", false,
                                  &m.flops_per_sample, e)) < 0)
            return rc;
    } else {
        struct {
            const char *key;
            int flags;
            int64_t *dst;
        } ints[] = {{"layers", PP_REQUIRED, &m.layers},
                    {"hidden", PP_REQUIRED, &m.hidden},
                    {"heads", PP_REQUIRED, &m.heads},
                    {"kv_heads", PP_OPTIONAL, &m.kv_heads},
                    {"head_dim", PP_OPTIONAL, &m.head_dim},
                    {"kv_channels", PP_OPTIONAL, &m.kv_channels},
                    {"seq", PP_REQUIRED, &m.seq},
                    {"vocab", PP_REQUIRED, &m.vocab},
                    {"ffn_hidden", PP_OPTIONAL, &m.ffn_hidden},
                    {"experts", PP_OPTIONAL, &m.experts},
                    {"top_k", PP_OPTIONAL, &m.top_k},
                    {"expert_ffn_hidden", PP_OPTIONAL, &m.expert_ffn_hidden},
                    {"moe_layer_freq", PP_OPTIONAL, &m.moe_layer_freq},
                    {"expert_groups", PP_OPTIONAL, &m.expert_groups},
                    {"group_top_k", PP_OPTIONAL, &m.group_top_k},
                    {"kv_lora_rank", PP_OPTIONAL, &m.kv_lora_rank},
                    {"qk_nope_head_dim", PP_OPTIONAL, &m.qk_nope_head_dim},
                    {"qk_rope_head_dim", PP_OPTIONAL, &m.qk_rope_head_dim},
                    {"v_head_dim", PP_OPTIONAL, &m.v_head_dim}};
        for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
            if ((rc = pp_map_int(map, path, ints[i].key, ints[i].flags, 1,
                                 PP_MODEL_DIM_MAX, ints[i].dst, e)) < 0)
                return rc;
        /* These may be 0. */
        if ((rc = pp_map_int(map, path, "q_lora_rank", PP_OPTIONAL, 0,
                             PP_MODEL_DIM_MAX, &m.q_lora_rank, e)) < 0 ||
            (rc = pp_map_int(map, path, "shared_experts", PP_OPTIONAL, 0,
                             PP_MODEL_DIM_MAX, &m.shared_experts, e)) < 0 ||
            (rc = pp_map_int(map, path, "first_dense_layers", PP_OPTIONAL, 0,
                             PP_MODEL_DIM_MAX, &m.first_dense_layers, e)) < 0 ||
            (rc = pp_map_int(map, path, "mtp_layers", PP_OPTIONAL, 0,
                             PP_MTP_MAX, &m.mtp_layers, e)) < 0 ||
            (rc = pp_map_int(map, path, "window", PP_OPTIONAL, 0,
                             PP_MODEL_DIM_MAX, &m.window, e)) < 0 ||
            (rc = pp_map_int(map, path, "window_skip", PP_OPTIONAL, 0,
                             PP_MODEL_DIM_MAX, &m.window_skip, e)) < 0 ||
            (rc = pp_map_number(map, path, "capacity_factor", PP_OPTIONAL, 0,
                                64, &m.capacity_factor, e)) < 0 ||
            (rc = pp_map_number(map, path, "glu_clamp", PP_OPTIONAL, 0, 1e6,
                                &m.glu_clamp, e)) < 0 ||
            (rc = pp_map_number(map, path, "glu_offset", PP_OPTIONAL, -1e6, 1e6,
                                &m.glu_offset, e)) < 0 ||
            (rc = pp_map_int(map, path, "rotary_base", PP_OPTIONAL, 1,
                             PP_MODEL_DIM_MAX, &m.rotary_base, e)) < 0 ||
            (rc = pp_map_number(map, path, "rope_factor", PP_OPTIONAL, 1, 1e6,
                                &m.rope_factor, e)) < 0 ||
            (rc = pp_map_int(map, path, "rope_original_seq", PP_OPTIONAL, 1,
                             PP_MODEL_DIM_MAX, &m.rope_original_seq, e)) < 0 ||
            (rc = pp_map_number(map, path, "rope_mscale", PP_OPTIONAL, 1e-6,
                                100, &m.rope_mscale, e)) < 0 ||
            (rc = pp_map_number(map, path, "rope_mscale_all_dim", PP_OPTIONAL,
                                0, 100, &m.rope_mscale_all_dim, e)) < 0 ||
            (rc = pp_map_bool(map, path, "qk_norm", PP_OPTIONAL, &m.qk_norm,
                              e)) < 0)
            return rc;
        int glu = 0, softmax = 0, scaling = 0;
        if ((rc = pp_map_enum(map, path, "ffn", PP_OPTIONAL, pp__ffn_names,
                              &ffn, e)) < 0 ||
            (rc = pp_map_enum(map, path, "glu_act", PP_OPTIONAL, pp__glu_names,
                              &glu, e)) < 0 ||
            (rc = pp_map_enum(map, path, "softmax", PP_OPTIONAL,
                              pp__softmax_names, &softmax, e)) < 0 ||
            (rc = pp_map_enum(map, path, "rope_scaling", PP_OPTIONAL,
                              pp__rope_scaling_names, &scaling, e)) < 0)
            return rc;
        m.rope_scaling = (pp_rope_scaling)scaling;
        m.ffn = (pp_ffn)ffn;
        m.glu_quick = glu == 1;
        m.softmax = (pp_softmax)softmax;
        if ((rc = pp_map_bool(map, path, "tied_embeddings", PP_OPTIONAL,
                              &m.tied_embeddings, e)) < 0)
            return rc;
        /* Absent: GPT-style models have biases, LLaMA-style (SwiGLU)
         * and Nemotron-style (squared ReLU) ones do not. */
        m.bias = m.ffn == PP_FFN_GELU;
        if ((rc = pp_map_bool(map, path, "bias", PP_OPTIONAL, &m.bias, e)) < 0)
            return rc;
    }
    if ((rc = pp_map_done(map, path, e)) < 0) return rc;

    pp_where w = {map, path, ""};
    /* Blame the key the user wrote, not the default derived from it. */
    if (m.arch == PP_ARCH_TRANSFORMER && m.experts == 0 && m.top_k)
        return model_bad(&w, e, "top_k",
                         "is an MoE key, but the model has no experts "
                         "(set experts)");
    if (m.experts > 0 && m.top_k == 0)
        return model_bad(&w, e, "top_k",
                         "missing: an MoE model (experts: %lld) needs the "
                         "experts each token is routed to",
                         (long long)m.experts);
    if (m.arch == PP_ARCH_TRANSFORMER && m.ffn_hidden == 0 &&
        m.hidden > PP_MODEL_DIM_MAX / 4)
        return model_bad(&w, e, "hidden",
                         "%lld is too large: the default ffn_hidden "
                         "(4 * hidden = %lld) exceeds %lld",
                         (long long)m.hidden, 4 * (long long)m.hidden,
                         PP_MODEL_DIM_MAX);
    pp__model_derive(&m);
    if (name) {
        if (name[0] == '\0' || strlen(name) >= PP_NAME_MAX)
            return model_bad(&w, e, "name",
                             "expected a name of 1 to %d characters, "
                             "got %zu characters",
                             PP_NAME_MAX - 1, strlen(name));
        strcpy(m.name, name);
    } else {
        pp_file_stem(map->file, m.name, sizeof m.name);
    }
    if ((rc = model_check(&m, &w, e)) < 0) return rc;
    *out = m;
    return 0;
}

/* ------------------------------------------------------------------------
 * Loading.
 * ---------------------------------------------------------------------- */
int pp_model_load(const char *spec, pp_model *out, pp_error *e) {
    char path[4096];
    pp_doc *doc = NULL;
    int rc;

    if (!spec || spec[0] == '\0')
        return pp_error_set(e, PP_EINPUT, "--model: empty model name");
    if (strchr(spec, '=') && !strchr(spec, '/'))
        return pp__model_parse_inline(spec, out, e);
    if ((rc = pp_data_find("models/zoo", spec, path, sizeof path, e)) < 0)
        return rc;
    if ((rc = pp_doc_load_file(path, &doc, e)) < 0) return rc;
    rc = pp_model_from_node(pp_doc_root(doc), "", out, e);
    pp_doc_free(doc);
    return rc;
}
