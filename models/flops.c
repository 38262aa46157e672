/*
 * models/flops.c: FLOPs per iteration (F_iter) and time to train (T_train).
 *
 * Sources: Narayanan et al. 2021, "Efficient Large-Scale Language Model
 * Training on GPU Clusters Using Megatron-LM", sec. 5.1 and appendix;
 * Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
 * Transformer Models", sec. 5 and 6; domain.md sec. 4.
 */
#include <math.h>
#include <string.h>

#include "models_int.h"

/* ------------------------------------------------------------------------
 * Closed forms.
 *
 * One forward pass of one layer is 24 B s h^2 (1 + s/(6h)) FLOPs: the four
 * GEMMs (QKV 6h^2, output projection 2h^2, MLP 16h^2 per token) and the
 * attention core (QK^T and scores x V, 4 s h per token).  The backward pass
 * is twice the forward, so one iteration without recomputation is
 * 3 x 24 = 72 B s l h^2 (1 + s/(6h)) for the layers.
 *
 * The logit layer (h x V output projection) costs 2 B s h V forward, 6 B s h
 * V with its backward.  Written against 72 B s l h^2 that is the term
 * V/(12 l h).  With full recomputation the layers run one more forward
 * (4 x 24 = 96), but the logit layer is never recomputed (it is outside the
 * checkpointed transformer blocks), so its 6 B s h V stays the same and,
 * written against the larger leading 96, its denominator becomes 16:
 *   6 B s h V = 96 B s l h^2 * V/(16 l h) = 72 B s l h^2 * V/(12 l h).
 * That is why Narayanan's full-recompute formula has 16 and Korthikanti's
 * model-FLOPs formula has 12: the same logit FLOPs, a different prefactor.
 *
 * Selective recomputation (Korthikanti et al. 2022, sec. 4.2) recomputes
 * only the attention core: one more forward of QK^T and scores x V,
 * 4 B s^2 l h FLOPs, on top of the 'none' total.
 * ---------------------------------------------------------------------- */
int pp_flops_closed(const pp_model *m, int64_t batch, pp_recompute r,
                    pp_flops *out, pp_error *e) {
    if (batch < 1)
        return pp_error_set(e, PP_EINVAL,
                            "flops: batch must be a positive integer, got "
                            "%lld",
                            (long long)batch);
    if (m->arch != PP_ARCH_TRANSFORMER || m->ffn != PP_FFN_GELU ||
        m->ffn_hidden != 4 * m->hidden || m->kv_heads != m->heads ||
        pp_model_is_mla(m))
        return pp_error_set(e, PP_EINVAL,
                            "flops: the closed form of F_iter holds only for "
                            "GPT-style models (GeLU, ffn_hidden = 4h, no "
                            "GQA or MLA); model %s is not one: count its "
                            "FLOPs matrix by matrix",
                            m->name);
    double B = (double)batch, s = (double)m->seq, l = (double)m->layers;
    double h = (double)m->hidden, V = (double)m->vocab;
    double base72 = 72.0 * B * s * l * h * h;
    pp_flops f;

    /* The 'none' terms: model FLOPs, the work the model needs. */
    double dense = base72;
    double attn = base72 * s / (6.0 * h);
    double logit = base72 * V / (12.0 * l * h);
    f.model = dense + attn + logit;

    switch (r) {
    case PP_RECOMPUTE_NONE: break;
    case PP_RECOMPUTE_SELECTIVE: attn += 4.0 * B * s * s * l * h; break;
    case PP_RECOMPUTE_FULL: {
        double base96 = 96.0 * B * s * l * h * h;
        dense = base96;
        attn = base96 * s / (6.0 * h);
        logit = base96 * V / (16.0 * l * h);
        break;
    }
    case PP_RECOMPUTE__COUNT: break;
    }
    f.dense = dense;
    f.attn = attn;
    f.logit = logit;
    f.total = dense + attn + logit;
    *out = f;
    return 0;
}

/* ------------------------------------------------------------------------
 * Counted matrix by matrix, per token, forward (2 FLOPs per multiply-add):
 *   QKV          2 h (q + 2 kv)       q = heads * d, kv = kv_heads * d
 *                                     (GQA), d = kv_channels or h/heads;
 *                                     under MLA 2 x its projections'
 *                                     weights (pp_model_attn_shape)
 *   scores       2 s q                QK^T, every head, no causal saving
 *                                     (s: the window in a windowed layer)
 *   over values  2 s q                scores x V (q: heads x head_dim
 *                                     where the model sets head_dim)
 *   out-proj     2 q h
 *   MLP          2 * 2 h f (GeLU: up, down) or 3 * 2 h f (SwiGLU: gate, up,
 *                down; Shazeer 2020)
 *   logits       2 h V                once, after the last layer (and
 *                                     once per MTP module)
 * Backward is twice the forward (gradients of the input and of the
 * weights).  Full recompute adds one forward of the layers, selective the
 * attention core only; the logits are never recomputed.  Element-wise work
 * (norms, softmax, activations) is ignored, as in the closed form.
 * ---------------------------------------------------------------------- */
int pp_flops_count(const pp_model *m, int64_t batch, pp_recompute r,
                   pp_flops *out, pp_error *e) {
    if (batch < 1)
        return pp_error_set(e, PP_EINVAL,
                            "flops: batch must be a positive integer, got "
                            "%lld",
                            (long long)batch);
    double B = (double)batch;
    pp_flops f;

    if (m->arch == PP_ARCH_GENERIC) {
        /* forward + backward (2x) = 3 forwards; full recompute adds one. */
        double fwd = m->flops_per_sample * B;
        f.model = 3.0 * fwd;
        f.dense = r == PP_RECOMPUTE_FULL ? 4.0 * fwd : 3.0 * fwd;
        f.attn = 0.0;
        f.logit = 0.0;
        f.total = f.dense;
        *out = f;
        return 0;
    }

    double s = (double)m->seq, l = (double)m->layers, h = (double)m->hidden;
    double V = (double)m->vocab, ff = (double)m->ffn_hidden;
    double mlp_mats = m->ffn == PP_FFN_SWIGLU ? 3.0 : 2.0;
    double tokens = B * s;
    pp_attn_shape at;
    pp_model_attn_shape(m, &at);
    double q = at.q;

    /* per token, per layer, forward */
    double gemm = 2.0 * at.matrices + mlp_mats * 2.0 * h * ff;
    /* head_dim (MLA's wider heads) widens the core only.  A windowed
     * layer's query meets `window` keys, not s (the layers' mean; still
     * no causal saving, as for full attention). */
    double ac = m->head_dim > 0 ? (double)m->heads * (double)m->head_dim : q;
    double keys = s, ws = pp_model_window_share(m);
    if (ws > 0 && (double)m->window < s)
        keys = ws * (double)m->window + (1.0 - ws) * s;
    double core = 2.0 * keys * ac + 2.0 * keys * ac;
    double logits = 2.0 * h * V; /* per token, forward */

    /* An MoE layer (models/moe.c) runs the router (2 h E per token) and
     * top_k + shared experts of expert_ffn_hidden instead of the FFN: the
     * FLOPs of the active parameters (Jiang et al. 2024; DeepSeek-V3's
     * 6 N_active per token).  Capacity padding is not counted. */
    double gemm_sum = l * gemm, gemm_mtp = gemm;
    if (pp_model_is_moe(m)) {
        double n = (double)pp_model_moe_layers(m);
        double fe = (double)m->expert_ffn_hidden;
        double moe =
            gemm - mlp_mats * 2.0 * h * ff + 2.0 * h * (double)m->experts +
            (double)(m->top_k + m->shared_experts) * mlp_mats * 2.0 * h * fe;
        gemm_sum = (l - n) * gemm + n * moe;
        if (pp_model_layer_is_moe(m, m->layers - 1)) gemm_mtp = moe;
    }
    /* Multi-token prediction (DeepSeek-V3 sec. 2.2): per module, the
     * projection of [norm(h); norm(embedding)] (2h -> h), one layer of
     * the last layer's kind, and the shared output layer once more.
     * Megatron-LM's num_floating_point_operations counts the same. */
    double D = (double)m->mtp_layers;
    gemm_sum += D * (gemm_mtp + 2.0 * 2.0 * h * h);
    double dense = 3.0 * tokens * gemm_sum;
    double attn = 3.0 * tokens * (l + D) * core;
    double logit = 3.0 * tokens * logits * (1.0 + D);
    f.model = dense + attn + logit;
    if (r == PP_RECOMPUTE_FULL) {
        dense += tokens * gemm_sum;
        attn += tokens * (l + D) * core;
    } else if (r == PP_RECOMPUTE_SELECTIVE) {
        attn += tokens * (l + D) * core;
    }
    f.dense = dense;
    f.attn = attn;
    f.logit = logit;
    f.total = dense + attn + logit;
    *out = f;
    return 0;
}

double pp_flops_recompute_mods(const pp_model *m, int64_t batch, uint8_t mods) {
    uint8_t gm =
        PP_RECOMP_MLP | PP_RECOMP_MOE | PP_RECOMP_SHARED | PP_RECOMP_MLA_UP;
    if (m->arch == PP_ARCH_GENERIC || !(mods & gm) || batch < 1) return 0;
    double tokens = (double)batch * (double)m->seq, h = (double)m->hidden;
    double mats = m->ffn == PP_FFN_SWIGLU ? 3.0 : 2.0;
    double fe = (double)m->expert_ffn_hidden;
    /* The MTP modules' layer is of the last layer's kind. */
    double n = (double)pp_model_moe_layers(m), D = (double)m->mtp_layers;
    double dense = (double)m->layers - n;
    if (pp_model_layer_is_moe(m, m->layers - 1))
        n += D;
    else
        dense += D;
    double f = 0;
    if (mods & PP_RECOMP_MLP)
        f += dense * mats * 2.0 * h * (double)m->ffn_hidden;
    if (mods & PP_RECOMP_MOE)
        f += n * (2.0 * h * (double)m->experts +
                  (double)(m->top_k + m->shared_experts) * mats * 2.0 * h * fe);
    if (mods & PP_RECOMP_SHARED)
        f += n * (double)m->shared_experts * mats * 2.0 * h * fe;
    if (mods & PP_RECOMP_MLA_UP) {
        pp_attn_shape at;
        pp_model_attn_shape(m, &at);
        f += ((double)m->layers + D) * 2.0 * at.up;
    }
    return tokens * f;
}

/* T_train = 8 T P / (n X) with full recomputation, 6 T P / (n X) without
 * (Narayanan et al. 2021, eq. 4; domain.md sec. 4): 2 FLOPs per parameter
 * per token forward, 4 backward, 2 more for the recompute forward.  It
 * drops the attention and logit terms (a few % for GPT-3). */
double pp_train_time_s(double tokens, double params, double gpus,
                       double flops_per_gpu, bool recompute) {
    double k = recompute ? 8.0 : 6.0;
    if (!(gpus > 0) || !(flops_per_gpu > 0)) return INFINITY;
    return k * tokens * params / (gpus * flops_per_gpu);
}
