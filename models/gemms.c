/*
 * gemms.c: the forward GEMMs of one transformer layer, per GPU.
 *
 * The same shapes sim/train/compute.c prices (pp__ops_layer_fwd and core_fwd),
 * kept here as a pure function so that exec can time exactly those GEMMs
 * without depending on sim.  Shoeybi et al. 2019 (Megatron-LM) split the
 * QKV and first MLP GEMMs by columns and the attention projection and
 * second MLP GEMM by rows over the tp GPUs; the attention core is two
 * batched GEMMs over the b a / tp heads of this GPU (Narayanan et al.
 * 2021).  GQA narrows the K and V parts of QKV; SwiGLU doubles fc1.
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

int pp_layer_gemms(const pp_model *m, const pp_parallel *p, pp_gemm_shape *out,
                   size_t max, size_t *n, pp_error *e) {
    enum { COUNT = 6 };
    if (m->arch != PP_ARCH_TRANSFORMER)
        return pp_error_set(e, PP_EINVAL,
                            "layer GEMMs: model %s is generic (no layers)",
                            m->name);
    if (max < COUNT)
        return pp_error_set(e, PP_ERANGE,
                            "layer GEMMs: room for %zu shapes, need %d", max,
                            COUNT);
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
    int64_t tok = s * b;
    pp_gemm_shape g[COUNT];
    put(&g[0], "qkv", 1, tok, (q + 2 * kvd) / t, h);
    put(&g[1], "attn scores", b * a / t, s, s, d);
    put(&g[2], "attn values", b * a / t, s, d, s);
    put(&g[3], "attn proj", 1, tok, h, q / t);
    put(&g[4], "mlp fc1", 1, tok, f_in, h);
    put(&g[5], "mlp fc2", 1, tok, h, f / t);
    memcpy(out, g, sizeof g);
    *n = COUNT;
    return 0;
}
