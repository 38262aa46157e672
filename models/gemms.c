/*
 * gemms.c: the forward GEMMs of one transformer layer, per GPU.
 *
 * The same shapes sim/train prices (compute.c's pp__ops_layer_fwd,
 * attn.c's pp__ops_attn_fwd), kept here as a pure function so that exec
 * can time exactly those GEMMs without depending on sim.  Shoeybi et al.
 * 2019 (Megatron-LM) split the QKV and first MLP GEMMs by columns and the
 * attention projection and second MLP GEMM by rows over the tp GPUs; the
 * attention core is two batched GEMMs over the b a / tp heads of this
 * GPU (Narayanan et al. 2021).  GQA narrows the K and V parts of QKV;
 * SwiGLU doubles fc1.
 * Multi-head latent attention (Megatron-core's MLASelfAttention) has
 * four projections in place of QKV: the two down projections, whole on
 * every TP rank (over its s/t tokens with sequence parallelism), and the
 * two up projections, split by columns; the core is head_dim wide.
 * An MoE layer (sim/train/moe.c) has the router (replicated, over the
 * rank's s b / (cp t) tokens), the shared experts as a dense MLP split
 * over tp, and the E / ep local experts, each expert's width split over
 * etp, as one grouped GEMM of E / ep groups (Transformer Engine's
 * GroupedLinear: a call per expert); balanced routing gives each expert
 * tokens x top_k x capacity x etp / (E / ep) rows.
 */
#include <stdio.h>
#include <string.h>

#include "podplan/models.h"

static void put(pp_gemm_shape *g, const char *name, int64_t batch, int64_t m,
                int64_t n, int64_t k) {
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    g->batch = batch;
    g->m = m;
    g->n = n;
    g->k = k;
}

/* Nearest integer of a size. */
static int64_t whole(double v) {
    return (int64_t)(v + 0.5);
}

/* The MoE block's GEMMs after the attention's, as moe.c prices them
 * (pp_moe_local_experts gives both the routed experts' shape). */
static int moe_gemms(const pp_model *m, const pp_parallel *p, int64_t tok,
                     pp_gemm_shape *g) {
    int i = 0;
    int64_t t = p->tp, cp = p->cp > 1 ? p->cp : 1, h = m->hidden;
    int64_t glu = m->ffn == PP_FFN_SWIGLU ? 2 : 1, tr = tok / cp;
    pp_moe_local x = pp_moe_local_experts(m, p);
    int64_t loc = whole(x.groups), rows = whole(x.rows), w = whole(x.width);
    put(&g[i++], "router", 1, whole(x.tokens), m->experts, h);
    if (m->shared_experts > 0) {
        int64_t ws = m->shared_experts * m->expert_ffn_hidden / t;
        put(&g[i++], "shared fc1", 1, tr, glu * ws, h);
        put(&g[i++], "shared fc2", 1, tr, h, ws);
    }
    put(&g[i], "experts fc1", loc, rows, glu * w, h);
    g[i++].grouped = true;
    put(&g[i], "experts fc2", loc, rows, h, w);
    g[i++].grouped = true;
    return i;
}

int pp_layer_gemms(const pp_model *m, const pp_parallel *p, pp_gemm_shape *out,
                   size_t max, size_t *n, pp_error *e) {
    bool mla = pp_model_is_mla(m), moe = pp_model_is_moe(m);
    int need = (mla ? (m->q_lora_rank > 0 ? 7 : 6) : 4) +
               (moe ? (m->shared_experts > 0 ? 5 : 3) : 2);
    if (m->arch != PP_ARCH_TRANSFORMER)
        return pp_error_set(e, PP_EINVAL,
                            "layer GEMMs: model %s is generic (no layers)",
                            m->name);
    if (max < (size_t)need)
        return pp_error_set(e, PP_ERANGE,
                            "layer GEMMs: room for %zu shapes, need %d", max,
                            need);
    int64_t t = p->tp, b = p->mbs, s = m->seq, h = m->hidden;
    int64_t a = m->heads, d = (int64_t)pp_model_kv_channels(m), q = a * d;
    int64_t kvd = (m->kv_heads > 0 ? m->kv_heads : a) * d;
    int64_t f = m->ffn_hidden > 0 ? m->ffn_hidden : 4 * h;
    int64_t f_in = (m->ffn == PP_FFN_SWIGLU ? 2 : 1) * f / t;
    if (t < 1 || b < 1 || a % t != 0 || h % t != 0 || f % t != 0)
        return pp_error_set(e, PP_EINVAL,
                            "layer GEMMs: tp=%lld must divide heads (%lld), "
                            "hidden and ffn_hidden",
                            (long long)t, (long long)a);
    int64_t tok = s * b, dc = m->head_dim > 0 ? m->head_dim : d;
    pp_gemm_shape g[PP_LAYER_GEMMS_MAX];
    int i = 0;
    if (mla) {
        int64_t nope = m->qk_nope_head_dim, rope = m->qk_rope_head_dim;
        int64_t vd = m->v_head_dim, ql = m->q_lora_rank;
        int64_t down = p->sp && t > 1 ? tok / t : tok;
        if (ql > 0) {
            put(&g[i++], "q down", 1, down, ql, h);
            put(&g[i++], "q up", 1, tok, a * (nope + rope) / t, ql);
        } else {
            put(&g[i++], "q proj", 1, tok, a * (nope + rope) / t, h);
        }
        put(&g[i++], "kv down", 1, down, m->kv_lora_rank + rope, h);
        put(&g[i++], "kv up", 1, tok, a * (nope + vd) / t, m->kv_lora_rank);
        q = a * vd;
    } else {
        put(&g[i++], "qkv", 1, tok, (q + 2 * kvd) / t, h);
    }
    put(&g[i++], "attn scores", b * a / t, s, s, dc);
    put(&g[i++], "attn values", b * a / t, s, dc, s);
    put(&g[i++], "attn proj", 1, tok, h, q / t);
    if (moe) {
        i += moe_gemms(m, p, tok, &g[i]);
    } else {
        put(&g[i++], "mlp fc1", 1, tok, f_in, h);
        put(&g[i++], "mlp fc2", 1, tok, h, f / t);
    }
    memcpy(out, g, (size_t)i * sizeof g[0]);
    *n = (size_t)i;
    return 0;
}

/* A forward GEMM's two backward ones, as compute.c's glgemm_bwd and the
 * unfused core's backward price them: the input's gradient (m x k, inner
 * n) and the weight's (k x n, inner m).  The core's batched GEMMs keep
 * the simulator's names, and the scores' second one is dK (n x k, inner
 * m). */
static void bwd_pair(const pp_gemm_shape *f, pp_gemm_shape *d,
                     pp_gemm_shape *w) {
    bool values = !strcmp(f->name, "attn values");
    bool scores = !strcmp(f->name, "attn scores");
    *d = *f;
    *w = *f;
    d->n = f->k;
    d->k = f->n;
    w->m = scores ? f->n : f->k;
    w->n = scores ? f->k : f->n;
    w->k = f->m;
    if (values || scores) {
        snprintf(d->name, sizeof d->name, "%s",
                 values ? "attn values dgrad" : "attn scores dq");
        snprintf(w->name, sizeof w->name, "%s",
                 values ? "attn values wgrad" : "attn scores dk");
    } else {
        snprintf(d->name, sizeof d->name, "%.25s dgrad", f->name);
        snprintf(w->name, sizeof w->name, "%.25s wgrad", f->name);
    }
}

int pp_layer_gemms_bwd(const pp_model *m, const pp_parallel *p,
                       pp_gemm_shape *out, size_t max, size_t *n, pp_error *e) {
    pp_gemm_shape f[PP_LAYER_GEMMS_MAX], b[PP_LAYER_GEMMS_BWD_MAX];
    size_t nf = 0;
    int rc = pp_layer_gemms(m, p, f, PP_LAYER_GEMMS_MAX, &nf, e);
    if (rc < 0) return rc;
    if (max < 2 * nf)
        return pp_error_set(e, PP_ERANGE,
                            "layer GEMMs: room for %zu shapes, need %zu", max,
                            2 * nf);
    for (size_t i = 0; i < nf; i++)
        bwd_pair(&f[nf - 1 - i], &b[2 * i], &b[2 * i + 1]);
    memcpy(out, b, 2 * nf * sizeof b[0]);
    *n = 2 * nf;
    return 0;
}
