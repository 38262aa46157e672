/*
 * sim/train/mla.c: the projections of multi-head latent attention
 * (DeepSeek-V2, arXiv:2405.04434 sec. 2.1), as Megatron-core's
 * MLASelfAttention runs them (get_query_key_value_tensors,
 * qkv_up_proj_and_rope_apply), in place of a dense layer's QKV GEMM.
 *
 * Forward, per GPU: the down projections (linear_q_down_proj and
 * linear_kv_down_proj, TELinear: whole on every TP rank, over its s/t
 * tokens with sequence parallelism), their RMSNorms (q_layernorm,
 * kv_layernorm), then the latents gathered over the sequence (the up
 * projections are column-parallel with a sequence-parallel input), the
 * up projections (linear_q_up_proj, linear_kv_up_proj: heads / t each)
 * and the fused MLA RoPE kernels, which rotate Q's rotary part and build
 * K (the shared rotary key broadcast to every head) and V from the
 * kv up projection's output.  The attention core and the output
 * projection stay compute.c's.  Backward mirrors it; the input gradients
 * of the two down projections are added.
 *
 * recompute=mla_up_proj (Megatron-core's recompute_up_proj: a
 * CheckpointWithoutOutput around qkv_up_proj_and_rope_apply, whose Q, K
 * and V are freed once the core has run and recomputed when the
 * gradient reaches the core's output): the up projections and the RoPE
 * run again before the core's backward.
 */
#include "step_int.h"

typedef struct mla_dims {
    double tok;   /* tokens of the up projections: s b (/ cp) */
    double tn;    /* tokens of the down projections: / t with sp */
    double t, h;  /* tp, hidden */
    double qr;    /* q_lora_rank (0: Q straight from h) */
    double kvr;   /* kv_lora_rank */
    double rope;  /* the shared rotary key's width */
    double q, kv; /* the up projections' outputs on this GPU */
    double k, v;  /* K and V on this GPU */
    bool sp, tpc;
} mla_dims;

static mla_dims mla_dims_of(const pp__shape *s) {
    const pp_model *m = s->m;
    const pp_parallel *p = s->p;
    pp_attn_shape at;
    pp_model_attn_shape(m, &at);
    mla_dims x;
    double cp = p->cp > 1 ? (double)p->cp : 1.0;
    x.t = (double)p->tp;
    x.h = (double)m->hidden;
    x.tok = (double)m->seq / cp * (double)p->mbs;
    x.sp = p->sp && p->tp > 1;
    x.tpc = p->tp > 1;
    x.tn = x.sp ? x.tok / x.t : x.tok;
    x.qr = at.q_rank;
    x.kvr = at.kv_rank;
    x.rope = at.rope;
    x.q = at.q / x.t;
    x.kv =
        (double)m->heads * (double)(m->qk_nope_head_dim + m->v_head_dim) / x.t;
    x.k = at.k / x.t;
    x.v = at.v / x.t;
    return x;
}

/* What crosses TP between the down and the up projections, per token:
 * the two latents and the rotary key, or with Q straight from h the
 * layer's input instead of Q's latent. */
static double latent_width(const mla_dims *x) {
    return (x->qr > 0 ? x->qr : x->h) + x->kvr + x->rope;
}

/* The fused MLA RoPE kernels (fused_apply_mla_rope_for_q / _for_kv):
 * Q read and written; the kv up projection's output and the rotary key
 * read, K and V written; 2 bytes each. */
static double rope_bytes(const mla_dims *x) {
    return PP_ACT_BYTES * x->tok * (2.0 * x->q + x->kv + x->rope + x->k + x->v);
}

void pp__ops_mla_up_fwd(const pp__shape *s, pp__oplist *l) {
    mla_dims x = mla_dims_of(s);
    pp__op_lgemm(s, l, x.qr > 0 ? "q up" : "q proj", x.tok, x.q,
                 x.qr > 0 ? x.qr : x.h);
    pp__op_lgemm(s, l, "kv up", x.tok, x.kv, x.kvr);
    pp__op_mem(s, l, "mla rope", rope_bytes(&x));
}

void pp__ops_mla_fwd(const pp__shape *s, pp__oplist *l) {
    mla_dims x = mla_dims_of(s);
    if (x.qr > 0) {
        pp__op_lgemm(s, l, "q down", x.tn, x.qr, x.h);
        /* RMSNorm: read 2, write 2 bytes per element. */
        pp__op_mem(s, l, "q norm", 4.0 * x.tn * x.qr);
    }
    pp__op_lgemm(s, l, "kv down", x.tn, x.kvr + x.rope, x.h);
    pp__op_mem(s, l, "kv norm", 4.0 * x.tn * x.kvr);
    if (x.sp)
        pp__op_comm(l, "tp allgather", PP_COLL_ALLGATHER,
                    PP_ACT_BYTES * x.tok * latent_width(&x), PP__GRP_TP);
    pp__ops_mla_up_fwd(s, l);
}

void pp__ops_mla_bwd(const pp__shape *s, pp__oplist *l) {
    mla_dims x = mla_dims_of(s);
    pp__op_mem(s, l, "mla rope bwd", rope_bytes(&x));
    pp__op_lgemm_bwd(s, l, "kv up dgrad", "kv up wgrad", x.tok, x.kv, x.kvr);
    if (x.qr > 0)
        pp__op_lgemm_bwd(s, l, "q up dgrad", "q up wgrad", x.tok, x.q, x.qr);
    else
        pp__op_lgemm_bwd(s, l, "q proj dgrad", "q proj wgrad", x.tok, x.q, x.h);
    /* The latents' gradients, partial sums over the heads of each TP
     * rank: reduce-scattered over the sequence with sp, all-reduced
     * without. */
    double lb = PP_ACT_BYTES * x.tok * latent_width(&x);
    if (x.sp)
        pp__op_comm(l, "tp reducescatter", PP_COLL_REDUCESCATTER, lb,
                    PP__GRP_TP);
    else if (x.tpc)
        pp__op_comm(l, "tp allreduce", PP_COLL_ALLREDUCE, lb, PP__GRP_TP);
    /* RMSNorm backward: as a LayerNorm's input gradient (6 bytes) and its
     * weight gradient (4). */
    pp__op_mem(s, l, "kv norm bwd", 10.0 * x.tn * x.kvr);
    if (x.qr > 0) pp__op_mem(s, l, "q norm bwd", 10.0 * x.tn * x.qr);
    pp__op_ln_recompute(s, l, x.tn * x.h);
    pp__op_lgemm_bwd(s, l, "kv down dgrad", "kv down wgrad", x.tn,
                     x.kvr + x.rope, x.h);
    if (x.qr > 0) {
        pp__op_lgemm_bwd(s, l, "q down dgrad", "q down wgrad", x.tn, x.qr, x.h);
        /* The two input gradients added (read 2 + 2, write 2). */
        pp__op_mem(s, l, "mla dgrad add", 6.0 * x.tn * x.h);
    }
}
