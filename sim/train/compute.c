/*
 * sim/train/compute.c: the compute side of a training step, as lists of
 * kernels timed with a GPU profile (sim/hw/profile.c: the roofline and
 * the GEMM efficiency model).
 *
 * A transformer layer is the list of kernels Megatron-LM runs for it
 * (Shoeybi et al. 2019; Narayanan et al. 2021; Korthikanti et al. 2022 for
 * sequence parallelism and selective recomputation), with the shapes after
 * the TP split; the list functions below say what each kernel moves.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "step_int.h"

/* ------------------------------------------------------------------------
 * Operation lists.
 * ---------------------------------------------------------------------- */
void pp__oplist_fini(pp__oplist *l) {
    free(l->v);
    memset(l, 0, sizeof *l);
}

static pp__op *push(pp__oplist *l, const char *name, pp__op_kind kind) {
    PP_VEC_RESERVE(l->v, l->cap, l->n + 1, 64);
    pp__op *o = &l->v[l->n++];
    memset(o, 0, sizeof *o);
    o->name = name;
    o->kind = kind;
    o->kernels = 1.0;
    return o;
}

static void gemm(const pp__shape *s, pp__oplist *l, const char *name,
                 double batch, double m, double n, double k) {
    pp__op *o = push(l, name, PP__OP_GEMM);
    o->flops = 2.0 * batch * m * n * k;
    o->bytes = pp_gemm_bytes(batch, m, n, k);
    o->time_s = pp_gemm_time_s(s->g, batch, m, n, k);
}

static pp__op *mem(const pp__shape *s, pp__oplist *l, const char *name,
                   double bytes) {
    pp__op *o = push(l, name, PP__OP_MEM);
    o->bytes = bytes;
    o->time_s = pp_memop_time_s(s->g, bytes);
    return o;
}

/* A linear layer's GEMM: with dtype=fp8 (Transformer Engine) at the FP8
 * rate, after casting its activation input (m x k elements: the cast
 * kernel takes the amax too, the stack's fp8.cast_bytes per element);
 * with dtype=fp4 at the NVFP4 rate after its NVFP4 cast (nvfp4_cast).
 * The weight's FP8 copy is cast once per iteration and cached over the
 * micro-batches (is_first_microbatch), left out here: under 1% of the
 * layer's time at 8 or more micro-batches.
 *
 * groups > 1: a grouped linear layer (an MoE layer's local experts), g
 * GEMMs of m rows each.  Transformer Engine's GroupedLinear runs them as
 * one cuBLAS GEMM per group spread over its compute streams
 * (nvte_multi_stream_cublas_gemm, "for now, we only have multi-stream
 * cublas backend", transformer_engine/pytorch/csrc/extensions/gemm.cpp):
 * their tiles share the GPU's waves (batch = g in the efficiency model),
 * and each group pays its own launch (pp_gemm_grouped_time_s).  Timed as
 * TE issues it (`exec gemm --streams 4`, calibrate/examples/{h100,h200}/
 * grouped), this price under nemo-2025 (its training-loop efficiency
 * in it) is 1.00-1.40 times the GPU's own time for Qwen3-30B-A3B's small
 * experts, 0.97-1.11 times it for GPT-OSS's and DeepSeek-V3's, and
 * 0.80-1.27 times the eager time (the host's issue between); the
 * profile's model alone reads the bf16 groups within 9-10% mean.  Not
 * refitted: the profile's efficiency is one call's, fitted on dense
 * shapes.  ggemm is those GEMMs alone (FP8: 1-byte operands,
 * 2-byte output), glgemm with the FP8 input cast. */
static void ggemm(const pp__shape *s, pp__oplist *l, const char *name,
                  double g, double m, double n, double k) {
    pp_prec d = s->p->dtype;
    pp__op *o = push(l, name, PP__OP_GEMM);
    o->flops = 2.0 * g * m * n * k;
    /* Operand bytes per element: FP8's 1, NVFP4's PP_NVFP4_BYTES; the
     * output is 16-bit. */
    double ob = d == PP_PREC_FP8 ? 1.0 : PP_NVFP4_BYTES;
    o->bytes = d == PP_PREC_FP8 || d == PP_PREC_FP4
                   ? g * (ob * (m * k + k * n) + 2.0 * m * n)
                   : pp_gemm_bytes(g, m, n, k);
    pp_gemm_ops ops = d == PP_PREC_FP4                   ? PP_GEMM_OPS_NVFP4
                      : d != PP_PREC_FP8                 ? PP_GEMM_OPS_16
                      : s->p->fp8_recipe == PP_FP8_MXFP8 ? PP_GEMM_OPS_MXFP8
                                                         : PP_GEMM_OPS_FP8;
    o->time_s = pp_gemm_grouped_time_s(s->g, ops, g, m, n, k);
    o->kernels = g;
}

/* The FP8 cast of a GEMM input of g groups' rows (g > 1: an MoE layer's
 * experts, which Transformer Engine quantizes split by split,
 * tex.split_quantize), as each recipe does it (transformer_engine/
 * pytorch/csrc/quantizer.cpp and extensions/cast.cpp):
 * - delayed: one cast kernel with the scale past steps' amax gave, this
 *   amax taken on the way; a split input's pieces in one fused kernel
 *   (multi_tensor_quantize_impl: "Currently only have fused kernel for
 *   FP8 delayed scaling", nvte_multi_cast_transpose).
 * - tensorwise (current scaling): Float8CurrentScalingQuantizer's
 *   amax pass over the input, a kernel turning it into the scale, then
 *   the cast: three kernels per piece and the input read twice (2 more
 *   bytes per element).  Transformer Engine fuses the amax into a
 *   LayerNorm or activation before it in some paths; not told apart.
 * - mxfp8, blockwise: one quantize kernel per piece, the block scales
 *   found inside it; the scales (1 byte per 32, 4 bytes per 128
 *   elements) are left out of the bytes.
 * The stack's fp8.cast_bytes is the delayed cast's traffic. */
static void fp8_cast(const pp__shape *s, pp__oplist *l, double g,
                     double elems) {
    pp_fp8 r = s->p->fp8_recipe;
    double bytes = s->g->fp8_cast_bytes, kernels = g;
    if (r == PP_FP8_TENSORWISE) {
        bytes += 2.0;
        kernels = 3.0 * g;
    } else if (r == PP_FP8_DELAYED || r == PP_FP8_AUTO) {
        kernels = 1.0;
    }
    mem(s, l, "fp8 cast", bytes * elems)->kernels = kernels;
}

/* The NVFP4 cast of a GEMM input (dtype=fp4), as Transformer Engine's
 * NVFP4Quantizer does it for an activation or a gradient (transformer_
 * engine/pytorch/csrc/quantizer.cpp, quantize_impl; NVFP4BlockScaling
 * applies the random Hadamard transform to the weight gradient's
 * operands): one kernel takes the amaxes of the input and of its
 * Hadamard transform (nvte_hadamard_transform_amax, reading 2 bytes per
 * element), one quantizes it row-wise (read 2, write half a byte and an
 * E4M3 scale per 16) and one transforms and quantizes it column-wise
 * (nvte_hadamard_transform_cast_fusion_columnwise, the same bytes):
 * 7.125 bytes and three kernels per piece.  Stochastic rounding of the
 * gradients costs arithmetic, not bytes.  The weights' casts are cached
 * over the micro-batches, as with FP8. */
static void nvfp4_cast(const pp__shape *s, pp__oplist *l, double g,
                       double elems) {
    mem(s, l, "nvfp4 cast", (2.0 + 2.0 * (2.0 + PP_NVFP4_BYTES)) * elems)
        ->kernels = 3.0 * g;
}

/* A GEMM input's cast in the layout's number format; none in 16 bits. */
static void lowp_cast(const pp__shape *s, pp__oplist *l, double g,
                      double elems) {
    if (s->p->dtype == PP_PREC_FP8) fp8_cast(s, l, g, elems);
    if (s->p->dtype == PP_PREC_FP4) nvfp4_cast(s, l, g, elems);
}

static void glgemm(const pp__shape *s, pp__oplist *l, const char *name,
                   double g, double m, double n, double k) {
    lowp_cast(s, l, g, g * m * k);
    ggemm(s, l, name, g, m, n, k);
}

static void lgemm(const pp__shape *s, pp__oplist *l, const char *name, double m,
                  double n, double k) {
    glgemm(s, l, name, 1, m, n, k);
}

static void glgemm_bwd(const pp__shape *s, pp__oplist *l, const char *dname,
                       const char *wname, double g, double m, double n,
                       double k);
static void lgemm_bwd(const pp__shape *s, pp__oplist *l, const char *dname,
                      const char *wname, double m, double n, double k);

static void comm(pp__oplist *l, const char *name, pp_coll_op op, double bytes) {
    pp__op *o = push(l, name, PP__OP_COMM);
    o->coll = op;
    o->bytes = bytes;
}

void pp__op_gemm(const pp__shape *s, pp__oplist *l, const char *name,
                 double batch, double m, double n, double k) {
    gemm(s, l, name, batch, m, n, k);
}

void pp__op_lgemm(const pp__shape *s, pp__oplist *l, const char *name, double m,
                  double n, double k) {
    lgemm(s, l, name, m, n, k);
}

void pp__op_lgemm_bwd(const pp__shape *s, pp__oplist *l, const char *dname,
                      const char *wname, double m, double n, double k) {
    lgemm_bwd(s, l, dname, wname, m, n, k);
}

void pp__op_glgemm(const pp__shape *s, pp__oplist *l, const char *name,
                   double groups, double m, double n, double k) {
    glgemm(s, l, name, groups, m, n, k);
}

void pp__op_glgemm_bwd(const pp__shape *s, pp__oplist *l, const char *dname,
                       const char *wname, double groups, double m, double n,
                       double k) {
    glgemm_bwd(s, l, dname, wname, groups, m, n, k);
}

pp__op *pp__op_mem(const pp__shape *s, pp__oplist *l, const char *name,
                   double bytes) {
    return mem(s, l, name, bytes);
}

pp__op *pp__op_push(pp__oplist *l, const char *name, pp__op_kind kind) {
    return push(l, name, kind);
}

void pp__op_fp8_cast(const pp__shape *s, pp__oplist *l, double g,
                     double elems) {
    fp8_cast(s, l, g, elems);
}

void pp__op_scatter_add(const pp__shape *s, pp__oplist *l, const char *name,
                        double bytes) {
    pp__op *o = push(l, name, PP__OP_MEM);
    o->bytes = bytes;
    o->time_s = pp_scatter_add_time_s(s->g, bytes);
}

void pp__op_comm(pp__oplist *l, const char *name, pp_coll_op op, double bytes,
                 int group) {
    comm(l, name, op, bytes);
    l->v[l->n - 1].group = (uint8_t)group;
}

void pp__op_scope(pp__oplist *l, size_t from, uint8_t sc) {
    for (size_t i = from; i < l->n; i++) l->v[i].scope = sc;
}

void pp__op_scope_add(pp__oplist *l, size_t from, uint8_t sc) {
    for (size_t i = from; i < l->n; i++) l->v[i].scope |= sc;
}

static bool graphed(const pp__op *o, uint8_t graphs) {
    return o->kind != PP__OP_MARK &&
           (graphs & PP_GRAPH_FULL || (o->scope & graphs));
}

double pp__op_host_kernels(const pp__oplist *l, size_t i, uint8_t graphs) {
    const pp__op *o = &l->v[i];
    if (o->kind == PP__OP_MARK) return 0;
    if (!graphed(o, graphs)) return o->kernels;
    const pp__op *p = i > 0 ? &l->v[i - 1] : NULL;
    /* One graph while the scopes asked for stay the same: an MoE op's
     * router or preprocessing bit does not split the moe scope's. */
    bool same =
        p && graphed(p, graphs) &&
        ((p->scope & graphs) == (o->scope & graphs) || graphs & PP_GRAPH_FULL);
    return same ? 0 : 1;
}

bool pp__shape_moe(const pp__shape *s) {
    return s->kind == 2 || (s->kind == 0 && pp_model_is_moe(s->m));
}

static void mark(pp__oplist *l, double params) {
    pp__op *o = push(l, "grads ready", PP__OP_MARK);
    o->kernels = 0;
    o->params = params;
}

/* A layer's mark: its routed experts' gradients (an MoE layer) go to
 * their own buckets, reduced over the expert data-parallel group
 * (Megatron-core's expert_parallel_buffers; DeepSpeed-MoE's
 * expert-data-parallel groups), the rest over data parallelism. */
static void mark_layer(const pp__shape *s, pp__oplist *l, double params) {
    double ex = pp__shape_moe(s) ? pp__moe_expert_params_gpu(s) : 0;
    mark(l, params - ex);
    if (ex > 0) {
        mark(l, ex);
        l->v[l->n - 1].group = PP__GRP_EP;
    }
}

/* Bytes per element of a Transformer Engine linear's input as it is
 * gathered over TP (sp): TE quantizes before it gathers (linear.py,
 * layernorm_linear.py: the input quantizer, then gather_along_first_dim
 * with it; distributed.py's _all_gather_fp8 / _mxfp8 / _nvfp4 move the
 * quantized data and its scales), for the forward's input, the
 * backward's re-gather of it and the row-parallel backward's incoming
 * gradient (base.py grad_output_preprocess).  FP8 per-tensor: 1 byte
 * (the scale is shared); MXFP8 a scale byte per 32; blockwise 4 bytes
 * per 128; NVFP4 half a byte and an E4M3 scale per 16.  The
 * reduce-scatters stay 16-bit. */
static double gather_bytes(const pp_parallel *p) {
    if (p->dtype == PP_PREC_FP4) return PP_NVFP4_BYTES;
    if (p->dtype != PP_PREC_FP8) return PP_ACT_BYTES;
    if (p->fp8_recipe == PP_FP8_MXFP8) return 1.0 + 1.0 / 32.0;
    if (p->fp8_recipe == PP_FP8_BLOCKWISE) return 1.0 + 4.0 / 128.0;
    return 1.0;
}

pp__dims pp__dims_of(const pp__shape *s) {
    const pp_model *m = s->m;
    const pp_parallel *p = s->p;
    pp__dims x;
    x.b = (double)p->mbs;
    /* Context parallelism: this rank's queries and tokens are s / cp,
     * attending to all s keys (ring attention). */
    x.cp = p->cp > 1 ? (double)p->cp : 1.0;
    x.sk = (double)m->seq;
    x.sq = x.sk / x.cp;
    x.h = (double)m->hidden;
    x.t = (double)p->tp;
    x.a = (double)m->heads;
    x.d = pp_model_kv_channels(m);
    x.q = x.a * x.d;
    x.dc = pp_model_core_head_dim(m);
    x.kvd = (double)(m->kv_heads > 0 ? m->kv_heads : m->heads) * x.d;
    x.mla = pp_model_is_mla(m);
    if (x.mla) {
        /* MLA (mla.c): the output projection takes heads x v_head_dim;
         * K and V (what context parallelism passes around) are as wide
         * as kvd twice. */
        pp_attn_shape at;
        pp_model_attn_shape(m, &at);
        x.q = at.o;
        x.kvd = 0.5 * (at.k + at.v);
    }
    x.f = (double)(m->ffn_hidden > 0 ? m->ffn_hidden : 4 * m->hidden);
    x.V = (double)m->vocab;
    x.tpc = p->tp > 1;
    x.sp = p->sp && p->tp > 1;
    x.swiglu = m->ffn == PP_FFN_SWIGLU;
    x.tok = x.sq * x.b;
    x.tn = x.sp ? x.tok / x.t : x.tok;
    x.heads = x.b * x.a / x.t;
    x.qkv_n = (x.q + 2.0 * x.kvd) / x.t;
    x.f_in = (x.swiglu ? 2.0 : 1.0) * x.f / x.t;
    x.gb = gather_bytes(p);
    return x;
}

/* The activation (s b h, 2 bytes) a TP collective carries: nccl-tests' S
 * for AllReduce, the input of ReduceScatter, the output of AllGather. */
static double act_bytes(const pp__dims *x) {
    return PP_ACT_BYTES * x->tok * x->h;
}

double pp__act_bytes(const pp__shape *s) {
    pp__dims x = pp__dims_of(s);
    return act_bytes(&x);
}

/* Before a column-parallel GEMM: nothing (the f operator is the identity
 * forward), or with sp the all-gather of the sequence shards (g). */
static void tp_enter_fwd(const pp__dims *x, pp__oplist *l) {
    if (x->sp) comm(l, "tp allgather", PP_COLL_ALLGATHER, act_bytes(x));
}

/* After a row-parallel GEMM: AllReduce, or ReduceScatter with sp. */
static void tp_exit_fwd(const pp__dims *x, pp__oplist *l) {
    if (x->sp)
        comm(l, "tp reducescatter", PP_COLL_REDUCESCATTER, act_bytes(x));
    else if (x->tpc)
        comm(l, "tp allreduce", PP_COLL_ALLREDUCE, act_bytes(x));
}

/* Backward conjugates: the gradient entering a row-parallel GEMM's
 * backward is all-gathered with sp (identity without); the gradient
 * leaving a column-parallel GEMM's backward is all-reduced (RS with sp). */
static void tp_enter_bwd(const pp__dims *x, pp__oplist *l) {
    tp_enter_fwd(x, l);
}

static void tp_exit_bwd(const pp__dims *x, pp__oplist *l) {
    tp_exit_fwd(x, l);
}

/* tp_enter_fwd and tp_enter_bwd before a Transformer Engine linear (the
 * attention's and the dense MLP's), forward and backward alike: the
 * gather in its input's dtype (gather_bytes). */
static void te_gather(const pp__dims *x, pp__oplist *l) {
    if (x->sp)
        comm(l, "tp allgather", PP_COLL_ALLGATHER, x->gb * x->tok * x->h);
}

/* Op i (a collective) runs while GEMM j computes: it takes j's time,
 * FLOPs and kernels, and j leaves the list (the simulator runs the pair
 * as one: the GEMM is hidden until the collective outlasts it). */
static void comm_over(pp__oplist *l, size_t i, size_t j) {
    pp__op *c = &l->v[i];
    c->overlap_s = l->v[j].time_s;
    c->flops = l->v[j].flops;
    c->kernels += l->v[j].kernels;
    memmove(&l->v[j], &l->v[j + 1], (l->n - j - 1) * sizeof *l->v);
    l->n--;
}

/* A column-parallel linear's backward (qkv, fc1: m x k input, n
 * outputs) and its TP collectives.  Megatron-core's
 * LinearWithGradAccumulationAndAsyncCommunication.backward
 * (megatron/core/tensor_parallel/layers.py) and Transformer Engine's
 * linears issue them async_op=True beside their own GEMMs: with sp the
 * input, saved sequence-sharded, is all-gathered again for the weight
 * gradient while the dgrad GEMM runs ("the gather is scheduled before
 * the input gradient computation"), then the input gradient's
 * reduce-scatter (all-reduce without sp) while the wgrad GEMM runs.
 * Userbuffers do the same pairs as bulk overlaps (ub_bulk_dgrad,
 * ub_bulk_wgrad).  Stacks without (tensor_parallel.async_backward
 * false, Megatron-LM 2021): the all-reduce after both GEMMs. */
static void col_bwd(const pp__shape *s, const pp__dims *x, pp__oplist *l,
                    const char *dname, const char *wname, double m, double n,
                    double k) {
    lgemm_bwd(s, l, dname, wname, m, n, k);
    if (!s->g->sw.tp_async_bwd || !x->tpc) {
        tp_exit_bwd(x, l);
        return;
    }
    /* Each collective takes its GEMM's place (comm_over): the gather the
     * dgrad's, then the reduction the wgrad's. */
    size_t d = l->n - 2, w = l->n - 1;
    if (x->sp) {
        comm(l, "tp allgather (wgrad input)", PP_COLL_ALLGATHER,
             x->gb * x->tok * x->h);
        comm_over(l, l->n - 1, d);
        w = d; /* the wgrad moved down into the dgrad's slot */
    }
    tp_exit_bwd(x, l);
    comm_over(l, l->n - 1, w);
}

/* Transformer Engine's userbuffers overlap (Megatron-core
 * --tp-comm-overlap, NeMo's MegatronCommOverlapCallback, sequence
 * parallelism required): each all-gather of the sequence shards is
 * pipelined with the column-parallel GEMM that consumes it, each
 * reduce-scatter with the row-parallel GEMM that produces it (and
 * backward, the dgrad all-gather with its dgrad GEMM, the dgrad reduce-
 * scatter with the wgrad GEMM before it).  Ops [from..): every TP
 * all-gather takes the next GEMM, every TP reduce-scatter the one before
 * (FP8 casts and other memory-bound ops may sit between; another
 * collective or GEMM may not), as one collective run while that GEMM
 * computes (cp_wrap's form: the GEMM is hidden until the collective
 * outlasts it).
 * Not modelled: the SMs the reduce-scatter's kernels take from the GEMM
 * and the last chunk's exposed share. */
static bool ub_gemm(const char *name) {
    /* The attention's and the dense MLP's TE linears; MoE's grouped
     * expert GEMMs run without userbuffers. */
    return strncmp(name, "qkv", 3) == 0 || strncmp(name, "attn proj", 9) == 0 ||
           strncmp(name, "mlp fc", 6) == 0;
}

bool pp_tp_overlap_offered(const pp_gpu_profile *g, const pp_parallel *p) {
    return g->sw.tp_overlap && p->dtype != PP_PREC_FP4;
}

bool pp_tp_overlap_in_force(const pp_gpu_profile *g, const pp_parallel *p) {
    return pp_tp_overlap_offered(g, p) && p->sp && p->tp > 1;
}

static void tp_overlap(const pp__shape *s, pp__oplist *l, size_t from) {
    if (!pp_tp_overlap_in_force(s->g, s->p)) return;
    for (size_t i = from; i < l->n; i++) {
        pp__op *c = &l->v[i];
        if (c->kind != PP__OP_COMM || c->group != PP__GRP_TP ||
            c->overlap_s > 0 ||
            (c->coll != PP_COLL_ALLGATHER && c->coll != PP_COLL_REDUCESCATTER))
            continue;
        bool ag = c->coll == PP_COLL_ALLGATHER;
        size_t j = i;
        for (;;) {
            if (ag ? j + 1 >= l->n : j <= from) {
                j = SIZE_MAX;
                break;
            }
            j = ag ? j + 1 : j - 1;
            if (l->v[j].kind == PP__OP_GEMM && ub_gemm(l->v[j].name)) break;
            if (l->v[j].kind != PP__OP_MEM) {
                j = SIZE_MAX;
                break;
            }
        }
        if (j == SIZE_MAX) continue;
        comm_over(l, i, j);
        if (j < i) i--; /* the collective moved down one */
    }
}

/* The MLP activation's kernel, forward or backward, by the ffn type. */
static const char *act_name(const pp__shape *s, bool bwd) {
    static const char *const names[][2] = {
        [PP_FFN_GELU] = {"bias gelu", "bias gelu bwd"},
        [PP_FFN_SWIGLU] = {"swiglu", "swiglu bwd"},
        [PP_FFN_SQRELU] = {"squared relu", "squared relu bwd"},
    };
    return names[s->m->ffn][bwd];
}

/* A dense layer's MLP, with its TP collectives (also what recompute=mlp
 * runs again in the backward). */
static void mlp_fwd(const pp__shape *s, const pp__dims *x, pp__oplist *l) {
    te_gather(x, l);
    lgemm(s, l, "mlp fc1", x->tok, x->f_in, x->h);
    /* Fused bias-GeLU (or Nemotron's squared ReLU): read 2, write 2;
     * SwiGLU reads both halves. */
    mem(s, l, act_name(s, false),
        (x->swiglu ? 6.0 : 4.0) * x->tok * x->f / x->t);
    lgemm(s, l, "mlp fc2", x->tok, x->h, x->f / x->t);
    tp_exit_fwd(x, l);
}

void pp__ops_layer_fwd(const pp__shape *s, pp__oplist *l) {
    pp__dims x = pp__dims_of(s);
    size_t from = l->n;
    double H = x.tn * x.h; /* elements of a norm/dropout region */
    /* LayerNorm: read 2, write 2 bytes per element (fp32 statistics are
     * per token: negligible). */
    mem(s, l, "layernorm", 4.0 * H);
    if (x.mla) {
        pp__ops_mla_fwd(s, l);
    } else {
        te_gather(&x, l);
        lgemm(s, l, "qkv", x.tok, x.qkv_n, x.h);
        pp__ops_qk_pos(s, &x, l, false);
    }
    pp__ops_attn_fwd(s, &x, l);
    lgemm(s, l, "attn proj", x.tok, x.h, x.q / x.t);
    tp_exit_fwd(&x, l);
    /* Fused bias-dropout-add: read the output and the residual, write the
     * sum, write the mask: 2 + 2 + 2 + 1. */
    mem(s, l, "bias dropout add", 7.0 * H);
    /* CUDA-graph scopes as Megatron-core draws them (transformer_layer.py
     * _forward_attention, _forward_mlp): the attention sublayer with its
     * norm and residual add; a dense MLP likewise; an MoE layer's norm
     * goes with its router (moe_router). */
    pp__op_scope(l, from, PP_GRAPH_ATTN);
    size_t mlp0 = l->n;
    mem(s, l, "layernorm", 4.0 * H);
    if (pp__shape_moe(s)) {
        pp__op_scope(l, mlp0, PP_GRAPH_MOE_ROUTER);
        pp__ops_moe_fwd(s, l);
        mem(s, l, "bias dropout add", 7.0 * H);
        pp__op_scope_add(l, mlp0, PP_GRAPH_MOE);
    } else {
        mlp_fwd(s, &x, l);
        mem(s, l, "bias dropout add", 7.0 * H);
        pp__op_scope(l, mlp0, PP_GRAPH_MLP);
    }
    tp_overlap(s, l, from);
}

/* A GEMM's backward: the input gradient (dgrad) and the weight gradient
 * (wgrad), each as many FLOPs as the forward.  Forward C[m x n] =
 * A[m x k] W[k x n]: dA[m x k] = dC W^T, dW[k x n] = A^T dC. */
static void gemm_bwd(const pp__shape *s, pp__oplist *l, const char *dname,
                     const char *wname, double m, double n, double k) {
    gemm(s, l, dname, 1, m, k, n);
    gemm(s, l, wname, 1, k, n, m);
}

/* A linear layer's backward; with fp8 the incoming gradient (m x n) is
 * cast once (e5m2) and both GEMMs run at the FP8 rate (fp4: cast to
 * NVFP4, both GEMMs at the FP4 rate).  groups > 1 as
 * glgemm: each group's wgrad reduces over its own m rows. */
static void glgemm_bwd(const pp__shape *s, pp__oplist *l, const char *dname,
                       const char *wname, double g, double m, double n,
                       double k) {
    lowp_cast(s, l, g, g * m * n);
    ggemm(s, l, dname, g, m, k, n);
    ggemm(s, l, wname, g, k, n, m);
}

static void lgemm_bwd(const pp__shape *s, pp__oplist *l, const char *dname,
                      const char *wname, double m, double n, double k) {
    glgemm_bwd(s, l, dname, wname, 1, m, n, k);
}

/* LayerNorm backward (apex's fused kernels): the input gradient reads the
 * input and the gradient and writes one (6 bytes), the weight and bias
 * gradients read both again (4); then autograd adds this gradient to the
 * residual branch's (read 2 + 2, write 2). */
static void ln_bwd(const pp__shape *s, const pp__dims *x, pp__oplist *l) {
    mem(s, l, "layernorm bwd", 10.0 * x->tn * x->h);
    mem(s, l, "residual grad add", 6.0 * x->tn * x->h);
}

/* recompute=layernorm (Megatron-core's output-discarding checkpoint of
 * the input and pre-MLP norms): the norm's output, its consumer's saved
 * input, is freed after the forward and the norm runs again when that
 * consumer's backward needs it, at the forward's cost.  Under FP8 the
 * consumer kept its original input rather than its cast
 * (set_save_original_input), so its weight gradient casts the recomputed
 * input again: `cast` elements (its m x k; 0 for a 16-bit consumer). */
static void ln_recompute(const pp__shape *s, const pp__dims *x, pp__oplist *l,
                         double cast) {
    if (!(s->p->recompute_mods & PP_RECOMP_LAYERNORM)) return;
    mem(s, l, "layernorm recompute", 4.0 * x->tn * x->h);
    if (cast > 0) lowp_cast(s, l, 1, cast);
}

void pp__op_ln_recompute(const pp__shape *s, pp__oplist *l, double cast) {
    pp__dims x = pp__dims_of(s);
    ln_recompute(s, &x, l, cast);
}

void pp__ops_layer_bwd(const pp__shape *s, pp__oplist *l) {
    pp__dims x = pp__dims_of(s);
    size_t from = l->n;
    double H = x.tn * x.h;
    /* Full recomputation (Narayanan et al. 2021; Korthikanti et al. 2022
     * sec. 4.1): the layer's forward runs again, with its TP collectives,
     * just before its backward. */
    if (s->p->recompute == PP_RECOMPUTE_FULL) pp__ops_layer_fwd(s, l);

    /* MLP: dropout backward (read the gradient and the mask, write), the
     * second GEMM, GeLU backward (read input and gradient, write), the
     * first GEMM. */
    /* Dropout backward (read the gradient and the mask, write) and the
     * bias gradient, a reduction over the tokens (read 2): 7 bytes. */
    size_t mlp0 = l->n;
    mem(s, l, "bias dropout add bwd", 7.0 * H);
    /* recompute=mlp and =moe (Megatron-core's checkpoint of the MLP or
     * MoE block from its input): the block's forward, collectives
     * included, runs again before its backward. */
    uint8_t rm = s->p->recompute_mods;
    if (pp__shape_moe(s)) {
        if (rm & PP_RECOMP_MOE) pp__ops_moe_fwd(s, l);
        pp__ops_moe_bwd(s, l);
        size_t ln0 = l->n;
        ln_bwd(s, &x, l);
        pp__op_scope(l, ln0, PP_GRAPH_MOE_ROUTER);
        pp__op_scope_add(l, mlp0, PP_GRAPH_MOE);
    } else {
        if (rm & PP_RECOMP_MLP) mlp_fwd(s, &x, l);
        te_gather(&x, l);
        lgemm_bwd(s, l, "mlp fc2 dgrad", "mlp fc2 wgrad", x.tok, x.h,
                  x.f / x.t);
        /* GeLU backward reads its input and the gradient and writes one;
         * the bias gradient reads the result again. */
        mem(s, l, act_name(s, true),
            (x.swiglu ? 10.0 : 8.0) * x.tok * x.f / x.t);
        ln_recompute(s, &x, l, x.tok * x.h);
        col_bwd(s, &x, l, "mlp fc1 dgrad", "mlp fc1 wgrad", x.tok, x.f_in, x.h);
        ln_bwd(s, &x, l);
        pp__op_scope(l, mlp0, PP_GRAPH_MLP);
    }

    size_t attn0 = l->n;
    mem(s, l, "bias dropout add bwd", 7.0 * H);
    te_gather(&x, l);
    lgemm_bwd(s, l, "attn proj dgrad", "attn proj wgrad", x.tok, x.h,
              x.q / x.t);
    if (!s->p->flash) mem(s, l, "context permute bwd", 4.0 * x.tok * x.q / x.t);
    /* recompute=mla_up_proj: Q, K and V again, before the core needs
     * them (mla.c). */
    if (x.mla && rm & PP_RECOMP_MLA_UP) pp__ops_mla_up_fwd(s, l);
    /* Selective recomputation (Korthikanti et al. 2022, sec. 4.2): the
     * attention core alone runs again before its backward. */
    if (s->p->recompute == PP_RECOMPUTE_SELECTIVE) pp__ops_attn_fwd(s, &x, l);
    pp__ops_attn_bwd(s, &x, l);
    if (x.mla) {
        pp__ops_mla_bwd(s, l);
    } else {
        pp__ops_qk_pos(s, &x, l, true);
        /* The Q, K and V gradients are concatenated into one tensor. */
        mem(s, l, "qkv grad concat", 4.0 * x.tok * x.qkv_n);
        ln_recompute(s, &x, l, x.tok * x.h);
        col_bwd(s, &x, l, "qkv dgrad", "qkv wgrad", x.tok, x.qkv_n, x.h);
    }
    ln_bwd(s, &x, l);
    pp__op_scope(l, attn0, PP_GRAPH_ATTN);

    /* Megatron-LM 2021 adds each weight gradient into an fp32 main_grad
     * buffer after every micro-batch (read 2 + 4, write 4 bytes per
     * parameter) unless that is fused into the wgrad GEMM; the profile
     * says which (framework.grad_accum_bytes). */
    double params = pp__layer_params_gpu(s);
    if (s->g->grad_accum_bytes > 0)
        mem(s, l, "grad accumulate", s->g->grad_accum_bytes * params);
    tp_overlap(s, l, from);
    mark_layer(s, l, params);
}

void pp__ops_embed_fwd(const pp__shape *s, pp__oplist *l) {
    pp__dims x = pp__dims_of(s);
    /* Vocab-parallel lookup: each TP rank gathers the rows it owns and
     * writes a full s b h output (zeros elsewhere), then an AllReduce
     * (ReduceScatter with sp) sums them.  Then the position embedding is
     * added (GPT's learned table; read 2 + 2, write 2) and dropout (read
     * 2, write 2 + 1). */
    mem(s, l, "embedding", 4.0 * x.tok * x.h);
    tp_exit_fwd(&x, l);
    if (pp_model_learned_positions(s->m))
        mem(s, l, "position add", 6.0 * x.tn * x.h);
    mem(s, l, "embedding dropout", 5.0 * x.tn * x.h);
}

void pp__ops_embed_bwd(const pp__shape *s, pp__oplist *l) {
    pp__dims x = pp__dims_of(s);
    mem(s, l, "embedding dropout bwd", 5.0 * x.tn * x.h);
    tp_enter_bwd(&x, l);
    /* The word table's gradient: zero the (V/t) x h table (2 bytes), then
     * scatter-add s b h rows into it (read 2, read and write 2). */
    mem(s, l, "embedding bwd", 2.0 * x.V / x.t * x.h + 6.0 * x.tok * x.h);
    mark(l, pp__embed_params_gpu(s));
}

/* The final LayerNorm, the logits GEMM against the (tied) word table,
 * vocab-parallel cross-entropy (Megatron-LM's _VocabParallelCrossEntropy,
 * in fp32: the logits are cast (read 2, write 4), the max, exp, sum and
 * normalisation passes read and write 4 bytes per logit, 38 bytes in all,
 * with three small AllReduces of s b floats across TP).  Megatron-core's
 * fused form (stack loss.fused; fused_cross_entropy.py, torch.compile'd
 * groups: the cast with the max, the exp with the sum, the division in
 * place: 22 bytes by count) ran on a lent H100 in the time of 23.0-24.9
 * bytes per logit at the copy rate (tools/ce_torch.py, three vocabularies
 * of 128k-201k, calibrate/examples/h100/ce-torch.json), the unfused
 * steps in 43.6-44.0: 24 is the measured mean, 38 stays the count (its
 * constants were fitted with it).  The backward is the same two passes
 * in both forms. */
#define PP__CE_BYTES 38.0
#define PP__CE_FUSED_BYTES 24.0
void pp__ops_head_fwd(const pp__shape *s, pp__oplist *l) {
    pp__dims x = pp__dims_of(s);
    mem(s, l, "final layernorm", 4.0 * x.tn * x.h);
    tp_enter_fwd(&x, l);
    gemm(s, l, "logits", 1, x.tok, x.V / x.t, x.h);
    double E = x.tok * x.V / x.t;
    mem(s, l, "cross entropy",
        (s->g->sw.loss_fused ? PP__CE_FUSED_BYTES : PP__CE_BYTES) * E);
    if (x.tpc)
        for (int i = 0; i < 3; i++)
            comm(l, "tp allreduce (loss)", PP_COLL_ALLREDUCE,
                 PP_LOSS_BYTES * x.tok);
}

/* The head's backward up to its weight gradient (shared by the MTP
 * modules' passes through the same output layer). */
static void head_bwd(const pp__shape *s, const pp__dims *x, pp__oplist *l) {
    double E = x->tok * x->V / x->t;
    /* softmax - one-hot (read 4, write 4), cast back (read 4, write 2). */
    mem(s, l, "cross entropy bwd", 14.0 * E);
    gemm_bwd(s, l, "logits dgrad", "logits wgrad", x->tok, x->V / x->t, x->h);
    /* The logits' input was copied to the TP region (f): its gradient is
     * all-reduced (reduce-scattered with sp). */
    tp_exit_bwd(x, l);
    mem(s, l, "final layernorm bwd", 10.0 * x->tn * x->h);
}

void pp__ops_head_bwd(const pp__shape *s, pp__oplist *l) {
    pp__dims x = pp__dims_of(s);
    head_bwd(s, &x, l);
    /* The logits' weight gradient is accumulated whether the table is
     * this stage's own or the tied word embedding. */
    if (s->g->grad_accum_bytes > 0)
        mem(s, l, "grad accumulate",
            s->g->grad_accum_bytes * (2.0 * x.h + x.V / x.t * x.h));
    mark(l, pp__head_params_gpu(s));
}

/* Multi-token prediction, one module (Megatron-core's
 * MultiTokenPredictionLayer; DeepSeek-V3 sec. 2.2), on the last stage:
 * the next tokens' embedding (the vocab-parallel lookup and its TP
 * reduction, as the embedding's), the RMSNorms of it and of the hidden
 * state (read 2, write 2 each), and the projection of their
 * concatenation, 2h -> h, column-parallel (a Transformer Engine linear:
 * FP8 with dtype=fp8) with its output gathered over TP back to full
 * width.  Then one transformer layer and the output layer again: the
 * caller adds them (pp__ops_layer_fwd, pp__ops_head_fwd). */
void pp__ops_mtp_fwd(const pp__shape *s, pp__oplist *l) {
    pp__dims x = pp__dims_of(s);
    mem(s, l, "mtp embedding", 4.0 * x.tok * x.h);
    tp_exit_fwd(&x, l);
    mem(s, l, "mtp norms", 8.0 * x.tn * x.h);
    tp_enter_fwd(&x, l);
    lgemm(s, l, "mtp eh proj", x.tok, x.h / x.t, 2.0 * x.h);
    if (x.tpc) comm(l, "tp allgather (mtp)", PP_COLL_ALLGATHER, act_bytes(&x));
}

/* Backward in reverse; the gradient of the embedding rows goes into the
 * last stage's copy of the word table (Megatron-core keeps one there for
 * the MTP block and reduces its gradient with the first stage's), whose
 * parameters the first module (table) marks. */
void pp__ops_mtp_bwd(const pp__shape *s, pp__oplist *l, bool table) {
    pp__dims x = pp__dims_of(s);
    if (x.tpc)
        comm(l, "tp reducescatter (mtp)", PP_COLL_REDUCESCATTER, act_bytes(&x));
    lgemm_bwd(s, l, "mtp eh proj dgrad", "mtp eh proj wgrad", x.tok, x.h / x.t,
              2.0 * x.h);
    tp_exit_bwd(&x, l);
    mem(s, l, "mtp norms bwd", 20.0 * x.tn * x.h);
    tp_enter_bwd(&x, l);
    mem(s, l, "mtp embedding bwd", 6.0 * x.tok * x.h);
    double params = pp__mtp_params_gpu(s);
    if (s->g->grad_accum_bytes > 0)
        mem(s, l, "grad accumulate", s->g->grad_accum_bytes * params);
    mark(l, params + (table ? pp__mtp_embed_params_gpu(s) : 0.0));
}

/* The module's pass back through the shared output layer (forward:
 * pp__ops_head_fwd): its weight gradient adds to the head's, which has
 * no parameters of its own to mark. */
void pp__ops_mtp_head_bwd(const pp__shape *s, pp__oplist *l) {
    pp__dims x = pp__dims_of(s);
    head_bwd(s, &x, l);
}
