/*
 * sim/train/attn.c: the attention core of a transformer layer on one GPU
 * (FlashAttention's fused kernels or the standard core's GEMMs and
 * softmax), with context parallelism's ring around it as Megatron-core
 * and Transformer Engine run it, and QK-norm and the rotary kernel before
 * it.  compute.c builds the rest of the layer around these ops.
 */
#include "podplan/hw.h"
#include "podplan/models.h"
#include "step_int.h"

/* FlashAttention (Dao et al. 2022; Dao 2023): one fused kernel, timed
 * from its FLOPs at the profile's measured fraction of peak.  Forward:
 * QK^T and PV, 4 s^2 d per head, halved by the causal mask (the kernels
 * skip the masked blocks, and the papers' rates count the halved FLOPs);
 * backward: 2.5x the forward (it recomputes QK^T: five GEMMs to two).
 * The rate falls for small kernels (pp_flash_efficiency).  With sliding
 * windows the kernels skip the blocks outside the window too: a windowed
 * layer's query meets w - w^2 / (2 s) keys on average, and the layers'
 * mean time is taken (a windowed kernel's smaller size lowers its rate). */
static double flash_time(const pp__shape *s, double f, double d, bool bwd) {
    double eff = pp_flash_efficiency(s->g, bwd, f, d);
    return f / pp_profile_tensor_rate(s->g, s->g->peak_flops, eff);
}

/* Whether the layout has CP and exchanges K/V as `c` says. */
static bool cp_is(const pp__shape *s, pp_cp_comm c) {
    return s->p->cp > 1 && s->p->cp_comm == c;
}

/* The CP ranks round Transformer Engine's ring (cp_comm=p2p: all of
 * them; a2a+p2p: the outer level's, cp / cp_a2a), 1 without a ring. */
static double ring_n(const pp__shape *s) {
    return (double)pp_parallel_cp_ring(s->p);
}

/* Whether the layout's CP passes K/V round the ring. */
static bool ring(const pp__shape *s) {
    return ring_n(s) > 1;
}

/* The CP ranks an all-to-all of Ulysses spans (cp_comm=a2a: all of
 * them; a2a+p2p: the inner level's, cp_a2a), 1 without one. */
static double a2a_n(const pp__shape *s) {
    return (double)pp_parallel_cp_a2a(s->p);
}

/* The kernels one rank's attention runs one after another: one, except
 * the backward of context parallelism's ring.  Transformer Engine's
 * AttnFuncWithCPAndKVP2P (attention/dot_product_attention/
 * context_parallel.py @9c61cd7e; the cp_comm_type "p2p" Megatron-core
 * passes by default) calls the fused
 * kernel once per ring step, each on 1/cp of the rank's work (the
 * diagonal's causal s/cp x s/cp, then s/cp x s/2cp or s/2cp x s/cp
 * unmasked).  Forward it alternates the steps over two streams ("to
 * resolve wave quantization issue of Flash Attn in each step"), so the
 * forward is priced as one kernel of all the work; backward every step
 * runs on the current stream after the last, each at its own size's
 * rate. */
static double flash_serial(const pp__shape *s, bool bwd) {
    return bwd && ring(s) ? ring_n(s) : 1.0;
}

/* The kernels launched.  cp_comm=all_gather (AttnFuncWithCPAndKVAll-
 * Gather, same file) runs a rank's two sequence chunks as two kernels on
 * two streams, forward and backward, each against the gathered keys
 * before it: priced as one kernel of both chunks' work, two launches.
 * cp_comm=a2a runs one kernel over the whole sequence and 1/cp of the
 * heads. */
static double flash_kernels(const pp__shape *s, bool bwd) {
    if (cp_is(s, PP_CPCOMM_ALL_GATHER)) return 2.0;
    return flash_serial(s, bwd);
}

static double flash_span(const pp__shape *s, double f, double d, bool bwd) {
    double n = flash_serial(s, bwd);
    return n * flash_time(s, f / n, d, bwd);
}

static void flash(const pp__shape *s, pp__oplist *l, const char *name,
                  double heads, double sq, double sk, double d, bool bwd) {
    pp__op *o = pp__op_push(l, name, PP__OP_GEMM);
    /* sq queries against sk keys (sq = sk / cp under context parallelism;
     * causal load balancing gives every CP rank 1/cp of the work). */
    double per_key = 4.0 * heads * sq * d * (bwd ? 2.5 : 1.0);
    double f = per_key * sk * 0.5, t = flash_span(s, f, d, bwd);
    double ws = pp_model_window_share(s->m), w = (double)s->m->window;
    if (ws > 0 && w < sk) {
        double fw = per_key * (w - w * w / (2.0 * sk));
        t = ws * flash_span(s, fw, d, bwd) + (1.0 - ws) * t;
        f = ws * fw + (1.0 - ws) * f;
    }
    /* fp8_attn=on: cuDNN's FP8 kernel, at the profile's FP8 / 16-bit time
     * ratio (published kernel times, the profile says which). */
    if (s->p->fp8_attn)
        t *= bwd ? s->g->attn_fp8_bwd_ratio : s->g->attn_fp8_fwd_ratio;
    double lf =
        s->g->framework_efficiency > 0 ? s->g->framework_efficiency : 1.0;
    o->flops = f;
    /* Q, K, V, O (and their gradients backward) once: s d per head. */
    o->bytes = PP_ACT_BYTES * heads * (sq + sk) * d * (bwd ? 4.0 : 2.0);
    o->kernels = flash_kernels(s, bwd);
    o->time_s = t / lf + o->kernels * s->g->launch_s;
}

/* This rank's attention kernel: its s/cp queries against all s keys;
 * after an all-to-all over n ranks, n times the queries of 1/n of its
 * heads (cp_comm=a2a: all s; a2a+p2p: s / ring, the ring's block).  The
 * same FLOPs; the size the kernel's rate reads. */
static void flash_core(const pp__shape *s, const pp__dims *x, pp__oplist *l,
                       const char *name, bool bwd) {
    double n = a2a_n(s);
    flash(s, l, name, x->heads / n, x->sq * n, x->sk, x->dc, bwd);
}

/* The bookkeeping of Transformer Engine's ring (AttnFuncWithCPAndKVP2P,
 * 16-bit path: nothing is kept in fp32 there; fp8_attn=on's FP8 path
 * sums in fp32, which is not told apart) around its kernels, in the
 * sbhd layout Megatron-core passes (its q/kv half-selects are views, not
 * copies).  Forward: K and V are packed into one send buffer before the
 * ring (torch.cat: read and write K/V); each step's output is kept and
 * folded in after the ring, one kernel a step: the first writes the
 * output from its own (read 1, write 1), a step over the whole local
 * sequence reads its own and reads and writes the sum (3), one over its
 * second half does that on half (1.5); besides, a softmax-LSE correction
 * a step.  Backward: K/V are copied into the ring's buffer, and each
 * step's dQ and dK/dV are added into their sums the same way (the first
 * a copy).  Rank r of the ring's n has r whole-sequence steps and
 * n - 1 - r half ones; the mean over the ranks is 2 + 2.25 (n - 1)
 * passes of the tensor.  Under a2a+p2p the ring runs on what the
 * all-to-all gave the rank, n times the tokens of 1/n of the heads
 * (n = cp_a2a): the same bytes. */
static double cp_passes(const pp__shape *s) {
    return 2.0 + 2.25 * (ring_n(s) - 1.0);
}

/* K and V of this rank's s/cp tokens, 16-bit: what one ring step sends. */
static double cp_kv_bytes(const pp__dims *x) {
    return 2.0 * PP_ACT_BYTES * x->sq * x->b * x->kvd / x->t;
}

/* The attention output (or dQ) of this rank's s/cp tokens, 16-bit. */
static double cp_out_bytes(const pp__dims *x) {
    return PP_ACT_BYTES * x->sq * x->b * x->q / x->t;
}

static void cp_pack(const pp__shape *s, const pp__dims *x, pp__oplist *l,
                    bool bwd) {
    if (!ring(s)) return;
    pp__op_mem(s, l, bwd ? "cp kv copy" : "cp kv pack", 2.0 * cp_kv_bytes(x));
}

/* One of the ring's sums: `kernels` kernels over a tensor of `bytes`. */
static void cp_sum(const pp__shape *s, pp__oplist *l, const char *name,
                   double bytes, double kernels) {
    if (!ring(s)) return;
    pp__op_mem(s, l, name, cp_passes(s) * bytes)->kernels = kernels;
}

/* Context parallelism (Megatron-core's ring attention, Liu et al. 2023):
 * each of the cp ranks holds s/cp of the sequence and passes its K/V
 * block around the ring, cp - 1 steps, each overlapped with the attention
 * of the block it holds.  As volume that is an all-gather of K/V over the
 * CP group (2 kvd/t values per token, PP_ACT_BYTES each); the backward
 * moves K/V again and their gradients back: twice that.  Modelled as one
 * collective run while the core's kernels (ops from..) compute: the
 * compute is hidden until the exchange is longer (the excess is cp
 * communication).  Causal load balancing (2 cp chunks) makes every rank's
 * work equal, which this assumes. */
static void cp_wrap(const pp__shape *s, const pp__dims *x, pp__oplist *l,
                    size_t from, double mult, const char *name) {
    if (!ring(s)) return;
    double t = 0, f = 0, k = 0;
    for (size_t i = from; i < l->n; i++) {
        t += l->v[i].time_s;
        f += l->v[i].flops;
        k += l->v[i].kernels;
    }
    l->n = from;
    pp__op *o = pp__op_push(l, name, PP__OP_COMM);
    o->kernels = k + 1.0;
    o->coll = PP_COLL_ALLGATHER;
    o->bytes = mult * cp_kv_bytes(x) * ring_n(s);
    o->group = PP__GRP_CP;
    o->overlap_s = t;
    o->flops = f;
}

/* A CP collective nothing overlaps (cp_comm=all_gather, a2a, and
 * a2a+p2p's all-to-alls): the stage waits for it.  On all the CP ranks;
 * the caller moves a2a+p2p's to its inner level (PP__GRP_CPA). */
static pp__op *cp_exposed(pp__oplist *l, const char *name, pp_coll_op op,
                          double bytes, double kernels) {
    pp__op *o = pp__op_push(l, name, PP__OP_COMM);
    o->kernels = kernels;
    o->coll = op;
    o->bytes = bytes;
    o->group = PP__GRP_CP;
    return o;
}

/* Q (d_qk wide per head) of this rank's s/cp tokens, 16-bit. */
static double cp_q_bytes(const pp__dims *x) {
    return PP_ACT_BYTES * x->sq * x->b * x->a * x->dc / x->t;
}

/* cp_comm=all_gather, Transformer Engine's AttnFuncWithCPAndKVAllGather
 * (context_parallel.py; "KV all-gather between CP ranks is exposed",
 * after Llama 3, arXiv:2407.21783 sec. 3.3.2).  Before the kernels, each
 * pass: K and V made contiguous and all-gathered (two collectives of
 * cp x this rank's K/V, nothing beside them), then put back in sequence
 * order (index_select: read and write the gathered K/V).  After the
 * forward's kernels the two chunks' outputs are copied into one (read
 * and write the output).  After the backward's, dK/dV accumulate into a
 * zeroed buffer of the gathered size (write it, then add the two
 * chunks' gradients: read and write it), are put back in rank order,
 * and are reduce-scattered. */
static void ag_before(const pp__shape *s, const pp__dims *x, pp__oplist *l) {
    double kv = cp_kv_bytes(x);
    pp__op_mem(s, l, "cp kv contiguous", 2.0 * kv)->kernels = 2;
    cp_exposed(l, "cp kv all-gather", PP_COLL_ALLGATHER, x->cp * kv, 2);
    pp__op_mem(s, l, "cp kv reorder", 2.0 * x->cp * kv)->kernels = 2;
}

static void ag_after(const pp__shape *s, const pp__dims *x, pp__oplist *l,
                     bool bwd) {
    if (!bwd) {
        pp__op_mem(s, l, "cp out copy", 2.0 * cp_out_bytes(x))->kernels = 2;
        return;
    }
    double kv = x->cp * cp_kv_bytes(x);
    pp__op_mem(s, l, "cp dkv sum", 3.0 * kv)->kernels = 6;
    pp__op_mem(s, l, "cp dkv reorder", 2.0 * kv)->kernels = 2;
    cp_exposed(l, "cp dkv reduce-scatter", PP_COLL_REDUCESCATTER, kv, 2);
}

/* cp_comm=a2a, Transformer Engine's AttnFuncWithCPAndQKVOA2A (DeepSpeed-
 * Ulysses, Jacobs et al. 2023): an all-to-all trades the rank's s/cp
 * tokens of all its heads for all s tokens of 1/cp of them; attention
 * runs whole on those; a second all-to-all trades the output back.
 * Backward the same with dO in and dQ, dK, dV out.  Each side of an
 * all-to-all reshapes its tensors into and out of the exchange's order
 * (flash_attn_a2a_communicate: a contiguous copy before and after, read
 * and write each time).  Nothing overlaps the exchanges.  cp_comm=
 * a2a+p2p (AttnFuncWithCPAndKVP2P given two groups) runs the same
 * all-to-alls over its inner level, cp_a2a consecutive CP ranks, before
 * and after the ring over the outer one. */
static void a2a(const pp__shape *s, pp__oplist *l, const char *name,
                double bytes, double tensors) {
    pp__op_mem(s, l, "cp a2a reorder", 4.0 * bytes)->kernels = 2 * tensors;
    cp_exposed(l, name, PP_COLL_ALLTOALL, bytes, tensors)->group =
        ring(s) ? PP__GRP_CPA : PP__GRP_CP;
}

/* The exposed exchange before the attention core's kernels (the ring's
 * runs beside them: cp_wrap). */
static void cp_before(const pp__shape *s, const pp__dims *x, pp__oplist *l,
                      bool bwd) {
    if (cp_is(s, PP_CPCOMM_ALL_GATHER))
        ag_before(s, x, l);
    else if (a2a_n(s) > 1 && bwd)
        a2a(s, l, "cp a2a dout", cp_out_bytes(x), 1);
    else if (a2a_n(s) > 1)
        a2a(s, l, "cp a2a qkv", cp_q_bytes(x) + cp_kv_bytes(x), 3);
}

/* The exposed exchange after them. */
static void cp_after(const pp__shape *s, const pp__dims *x, pp__oplist *l,
                     bool bwd) {
    if (cp_is(s, PP_CPCOMM_ALL_GATHER))
        ag_after(s, x, l, bwd);
    else if (a2a_n(s) > 1 && bwd)
        a2a(s, l, "cp a2a dqkv", cp_q_bytes(x) + cp_kv_bytes(x), 3);
    else if (a2a_n(s) > 1)
        a2a(s, l, "cp a2a out", cp_out_bytes(x), 1);
}

/* fp8_attn=on's casts around the kernel (Transformer Engine's FP8
 * dot-product attention without FP8 inputs, fp8_mha off: its
 * QKV_quantizer casts Q, K and V, one kernel each, and the output comes
 * back to 16 bits; backward the output gradient is cast and dQ, dK, dV
 * come back): the inputs as the FP8 recipe casts them (fp8_cast), the
 * way back 3 bytes an element (read 1, write 2), a kernel per tensor. */
static void fp8_attn_casts(const pp__shape *s, const pp__dims *x, pp__oplist *l,
                           bool bwd) {
    if (!s->p->fp8_attn) return;
    double o = x->tok * x->q / x->t;
    double qkv = x->tok * (x->q + 2.0 * x->kvd) / x->t;
    pp__op_fp8_cast(s, l, bwd ? 1 : 3, bwd ? o : qkv);
    pp__op_mem(s, l, "fp8 attn dequant", 3.0 * (bwd ? qkv : o))->kernels =
        bwd ? 3 : 1;
}

/* The attention core's forward: scores, softmax, dropout, scores x V.
 * Megatron-LM 2021 runs the scores and the weighted sum as batched GEMMs
 * (torch.baddbmm / bmm), the scale-mask-softmax as one fused kernel
 * reading and writing the b a/t s^2 scores in 2 bytes each, and the
 * attention dropout as its own kernel (read 2, write 2, a 1-byte mask). */
void pp__ops_attn_fwd(const pp__shape *s, const pp__dims *x, pp__oplist *l) {
    double E = x->heads * x->sq * x->sk;
    size_t from = l->n;
    /* FlashAttention writes the context in [s, b, h/t] order itself. */
    if (s->p->flash) {
        cp_pack(s, x, l, false);
        cp_before(s, x, l, false);
        from = l->n;
        fp8_attn_casts(s, x, l, false);
        flash_core(s, x, l, "flash attn", false);
        cp_wrap(s, x, l, from, 1.0, "cp ring attention");
        /* After the ring: the outputs' corrections (cp kernels) and the
         * softmax-LSE ones of the steps (cp - 1, and its first copy). */
        cp_sum(s, l, "cp out correction", cp_out_bytes(x), 2.0 * ring_n(s));
        cp_after(s, x, l, false);
        return;
    }
    cp_before(s, x, l, false);
    from = l->n;
    pp__op_gemm(s, l, "attn scores", x->heads, x->sq, x->sk, x->dc);
    pp__op_mem(s, l, "softmax", 4.0 * E);
    pp__op_mem(s, l, "attn dropout", 5.0 * E);
    pp__op_gemm(s, l, "attn values", x->heads, x->sq, x->dc, x->sk);
    cp_wrap(s, x, l, from, 1.0, "cp ring attention");
    cp_after(s, x, l, false);
    /* The context [b a/t, s, d] is permuted back to [s, b, h/t] with a
     * .contiguous() copy (read 2, write 2). */
    pp__op_mem(s, l, "context permute", 4.0 * x->tok * x->q / x->t);
}

/* The attention core's backward, after the output projection's (and a
 * recomputation's) ops: FlashAttention's backward kernel, or the
 * standard core's GEMMs and memory-bound steps; under CP the ring around
 * it. */
void pp__ops_attn_bwd(const pp__shape *s, const pp__dims *x, pp__oplist *l) {
    double E = x->heads * x->sq * x->sk;
    if (s->p->flash) cp_pack(s, x, l, true);
    cp_before(s, x, l, true);
    size_t core0 = l->n;
    if (s->p->flash) {
        fp8_attn_casts(s, x, l, true);
        flash_core(s, x, l, "flash attn bwd", true);
        /* dQ is summed while the step's dK/dV travel (before TE's "wait
         * until dKV is received"); dK/dV are summed after it arrives. */
        cp_sum(s, l, "cp dq accumulate", cp_out_bytes(x), ring_n(s));
    } else {
        /* scores x V backward: d(probs) = dO V^T and dV = P^T dO. */
        pp__op_gemm(s, l, "attn values dgrad", x->heads, x->sq, x->sk, x->dc);
        pp__op_gemm(s, l, "attn values wgrad", x->heads, x->sk, x->dc, x->sq);
        pp__op_mem(s, l, "attn dropout bwd", 5.0 * E);
        /* Softmax backward reads the output and its gradient, writes one. */
        pp__op_mem(s, l, "softmax bwd", 6.0 * E);
        /* dQ = dS K, dK = dS^T Q. */
        pp__op_gemm(s, l, "attn scores dq", x->heads, x->sq, x->dc, x->sk);
        pp__op_gemm(s, l, "attn scores dk", x->heads, x->sk, x->dc, x->sq);
    }
    cp_wrap(s, x, l, core0, 2.0, "cp ring attention bwd");
    if (s->p->flash)
        cp_sum(s, l, "cp dkv accumulate", cp_kv_bytes(x), ring_n(s));
    cp_after(s, x, l, true);
}

/* What Megatron-core's SelfAttention does to this rank's query and key
 * heads between the QKV GEMM and the core (not MLA's: mla.c): QK-norm,
 * Transformer Engine's norm over each head's kv_channels, then the
 * rotation by position, Transformer Engine's fused kernel
 * (fused_apply_rotary_pos_emb; Megatron-LM's apply_rope_fusion, on
 * unless --no-rope-fusion).  Each reads and writes 2 bytes an element of
 * Q and of K, one kernel for each (the frequencies, read once per
 * position, left out).  Backward: the rotation's reads the gradient and
 * writes one (4 bytes); the norm's reads its input and the gradient and
 * writes one (6; its gain's gradient assumed reduced in the same pass). */
void pp__ops_qk_pos(const pp__shape *s, const pp__dims *x, pp__oplist *l,
                    bool bwd) {
    double qk = x->tok * (x->q + x->kvd) / x->t;
    bool rope = pp_model_has_rope(s->m), norm = s->m->qk_norm;
    if (bwd && rope) pp__op_mem(s, l, "rope bwd", 4.0 * qk)->kernels = 2;
    if (norm)
        pp__op_mem(s, l, bwd ? "qk norm bwd" : "qk norm",
                   (bwd ? 6.0 : 4.0) * qk)
            ->kernels = 2;
    if (!bwd && rope) pp__op_mem(s, l, "rope", 4.0 * qk)->kernels = 2;
}
