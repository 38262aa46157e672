/*
 * sim/train/moe.c: the kernels and collectives of an MoE layer's FFN, as
 * Megatron-core's MoELayer runs them with its all-to-all token dispatcher
 * (megatron/core/transformer/moe/: router.py, token_dispatcher.py
 * MoEAlltoAllTokenDispatcher, experts.py GroupedMLP, shared_experts.py).
 *
 * Per micro-batch, one GPU holds T = s b / (cp tp) tokens (sequence
 * parallelism is required with tp > 1, models/moe.c).  The router scores
 * them against the E experts (a T x h x E GEMM), each token goes to top_k
 * experts: the dispatch is an all-to-all over the EP group of
 * T k h elements per rank (k h cf with a capacity factor: the padding is
 * sent), balanced routing assumed (each rank receives as much as it
 * sends).  With expert TP (etp > 1) the received tokens are all-gathered
 * over the expert-TP group before the experts and reduce-scattered after;
 * the group is the TP group when etp == tp (the default), and for
 * 1 < etp < tp that exchange is not simulated.  The E / ep local experts
 * run as a grouped GEMM (Transformer Engine's GroupedLinear: one GEMM per
 * expert) of T k cf etp tokens in all, an equal share each,
 * expert_ffn_hidden / etp wide; each expert's wgrad reduces over its own
 * share.  The combine all-to-all brings the outputs back.  Shared experts
 * run as a dense MLP of shared x expert_ffn_hidden, split over tp like any
 * MLP.
 * The backward mirrors it: the combine's and the dispatch's all-to-alls
 * again (the gradients travel back), the GEMMs' dgrad and wgrad.
 *
 * Not modelled: routing imbalance and dropped tokens (balanced routing is
 * assumed, as with an auxiliary loss), node-limited routing (DeepSeek-V3
 * sends each token to at most 4 nodes, which bounds its inter-node bytes;
 * here dispatch is uniform over the EP group), and the overlap of the
 * shared experts with the all-to-all.
 *
 * The host: a dropless dispatch waits for the token counts once per
 * forward (op.sync: step.c's host clock; drop-and-pad does not), and the
 * router and the first permutation are the CUDA-graph scopes moe_router
 * and moe_preprocess.
 *
 * The permutation: Transformer Engine's fused kernels (--moe-permute-
 * fusion) move the rows at HBM's rate.  Unfused (permute=unfused,
 * Megatron-core's default), moe_utils.py gathers them with index_select
 * and sums them back with scatter_add_; the backward of each is the
 * other, so each pass adds T k rows atomically into T targets once
 * (the unpermute forward, the permute's backward), far below HBM's rate
 * (the profile's memory.scatter_add_bw).
 */
#include "step_int.h"

typedef struct moe_dims {
    double tn;  /* tokens on this GPU entering the layer */
    double tok; /* tokens of the TP region (s b / cp) */
    double h, t, etp, ep, E, k, S, fe, cf;
    bool swiglu;
    bool etp_tp; /* expert-TP exchange runs over the TP group */
} moe_dims;

static moe_dims moe_dims_of(const pp__shape *s) {
    const pp_model *m = s->m;
    const pp_parallel *p = s->p;
    moe_dims x;
    double cp = p->cp > 1 ? (double)p->cp : 1.0;
    x.t = (double)p->tp;
    x.tok = (double)m->seq / cp * (double)p->mbs;
    x.tn = x.tok / x.t;
    x.h = (double)m->hidden;
    x.etp = (double)pp_parallel_etp(p);
    x.ep = p->ep > 1 ? (double)p->ep : 1.0;
    x.E = (double)m->experts;
    x.k = (double)m->top_k;
    x.S = (double)m->shared_experts;
    x.fe = (double)m->expert_ffn_hidden;
    x.cf = m->capacity_factor > 0 ? m->capacity_factor : 1.0;
    x.swiglu = m->ffn == PP_FFN_SWIGLU;
    x.etp_tp = x.etp > 1 && pp_parallel_etp(p) == p->tp;
    return x;
}

/* Bytes of one rank's routed tokens (dispatch or combine). */
static double routed_bytes(const moe_dims *x) {
    return PP_ACT_BYTES * x->tn * x->k * x->cf * x->h;
}

static void a2a(const moe_dims *x, pp__oplist *l, const char *name) {
    if (x->ep > 1)
        pp__op_comm(l, name, PP_COLL_ALLTOALL, routed_bytes(x), PP__GRP_EP);
}

static void etp_comm(const moe_dims *x, pp__oplist *l, pp_coll_op op) {
    if (x->etp_tp)
        pp__op_comm(
            l, op == PP_COLL_ALLGATHER ? "etp allgather" : "etp reducescatter",
            op, x->etp * routed_bytes(x), PP__GRP_TP);
}

static void shared_fwd(const pp__shape *s, const moe_dims *x, pp__oplist *l) {
    if (!(x->S > 0)) return;
    double w = x->S * x->fe / x->t, act = PP_ACT_BYTES * x->tok * x->h;
    if (x->t > 1) pp__op_comm(l, "tp allgather", PP_COLL_ALLGATHER, act, 0);
    pp__op_lgemm(s, l, "shared fc1", x->tok, (x->swiglu ? 2.0 : 1.0) * w,
                 x->h);
    pp__op_mem(s, l, "shared swiglu", (x->swiglu ? 6.0 : 4.0) * x->tok * w);
    pp__op_lgemm(s, l, "shared fc2", x->tok, x->h, w);
    if (x->t > 1)
        pp__op_comm(l, "tp reducescatter", PP_COLL_REDUCESCATTER, act, 0);
}

/* One eager operation podplan lists one for one, in the kernels whose
 * count the host prices: host.op_issue over host.kernel_issue (1 without
 * a host model). */
static double op_kernels(const pp__shape *s) {
    double sw_k = s->g->sw.host_kernel_s, sw_o = s->g->sw.host_op_s;
    return sw_k > 0 ? sw_o / sw_k : 1.0;
}

/* The routed experts' fc2 biases (a model with bias: true).  Megatron-
 * core's TEGroupedMLP builds fc2 with skip_bias_add and adds the biases
 * itself after the grouped GEMM, weighted by the routing probabilities,
 * in a Python loop over the local experts (experts.py, _apply_bias:
 * torch.cat([t + b * p for t, b, p in zip(torch.split(out, tokens_per_
 * expert), biases, torch.split(probs, ...))])); fc1's bias stays in
 * Transformer Engine's GEMM epilogue, free here.  In 16-bit (the router's
 * probabilities in the activations' dtype unless moe_router_dtype says
 * fp32), per routed row of h: forward b * p writes 2h bytes, the sum
 * reads 4h and writes 2h, the concatenation reads and writes 2h (12h),
 * two kernels an expert and the cat; backward the bias gradient (g * p,
 * then a sum over the rows: 6h), the probabilities' (g * b, a sum over
 * h: 6h) and the split's concatenated gradient (4h): 16h, and per expert
 * the two products, the two sums and the bias's main_grad accumulation,
 * plus two cats.  Each is an eager op issued one for one: the host pays
 * the stack's host.op_issue for it, not kernel_issue (whose factor is
 * for kernels podplan does not count). */
static void expert_bias(const pp__shape *s, const moe_dims *x, pp__oplist *l,
                        bool bwd) {
    if (!s->m->bias) return;
    pp_moe_local lx = pp_moe_local_experts(s->m, s->p);
    double ops = bwd ? 5.0 * lx.groups + 2.0 : 2.0 * lx.groups + 1.0;
    pp__op *o =
        pp__op_mem(s, l, bwd ? "experts fc2 bias bwd" : "experts fc2 bias",
                   (bwd ? 16.0 : 12.0) * lx.routed * x->h);
    o->kernels = ops * op_kernels(s);
}

/* The experts' gated activation, one fused kernel: SwiGLU's two halves
 * read and one written, 6 bytes a row element of the width (4 ungated).
 * A model's glu_clamp runs first, as weighted_bias_quick_geglu_impl does
 * it (megatron/core/fusions/fused_bias_geglu.py @034fd2d3): the
 * gate half clamped (read 2, write 2), the linear half (the same), the
 * two concatenated again (read 4, write 4): 16 bytes, three eager
 * operations at the stack's host.op_issue.  glu_act quick_gelu's offset
 * tensor is one more operation, a copy from the host that waits for the
 * GPU where the stack's moe.quick_geglu_sync says so, except in a graph
 * holding the experts (full, moe), which it would have broken.
 * recompute=moe_act runs all of it again (`name`). */
static void expert_act(const pp__shape *s, const moe_dims *x, pp__oplist *l,
                       const char *name, double te, double w) {
    double op = op_kernels(s);
    if (s->m->glu_clamp > 0)
        pp__op_mem(s, l, "experts act clamp", 16.0 * te * w)->kernels =
            3.0 * op;
    pp__op *o = pp__op_mem(s, l, name, (x->swiglu ? 6.0 : 4.0) * te * w);
    if (s->m->glu_quick) {
        o->kernels += op;
        o->sync = s->g->sw.moe_quick_geglu_sync &&
                  !(s->p->graphs & (PP_GRAPH_FULL | PP_GRAPH_MOE));
    }
}

/* The clamps' backward (autograd's clamp_backward, where(mask, grad, 0):
 * the gate half's mask one comparison, read 2 write 1, and the where,
 * read 3 write 2, 8 bytes; the linear half's two comparisons and their
 * logical_and, 14 bytes) and the split's (the two gradients
 * concatenated, 8): 30 bytes a row element of the width, seven kernels
 * the autograd engine issues, priced as operations. */
static void expert_act_clamp_bwd(const pp__shape *s, pp__oplist *l, double te,
                                 double w) {
    if (!(s->m->glu_clamp > 0)) return;
    pp__op_mem(s, l, "experts act clamp bwd", 30.0 * te * w)->kernels =
        7.0 * op_kernels(s);
}

void pp__ops_moe_fwd(const pp__shape *s, pp__oplist *l) {
    moe_dims x = moe_dims_of(s);
    /* The local experts (expert TP splits each one's width, not their
     * number); balanced routing gives each the same share of the rows. */
    pp_moe_local lx = pp_moe_local_experts(s->m, s->p);
    double te = lx.routed, w = lx.width;
    /* Router: logits, softmax and top-k in fp32 (read 4, write 4 per
     * score, twice). */
    size_t r0 = l->n;
    pp__op_gemm(s, l, "router", 1, x.tn, x.E, x.h);
    pp__op_mem(s, l, "router topk", 16.0 * x.tn * x.E);
    pp__op_scope(l, r0, PP_GRAPH_MOE_ROUTER);
    /* Permute: gather each token's k copies by expert (read 2, write 2):
     * the dispatcher's preprocessing (its T k rows are known without the
     * counts, so a graph can hold it: moe_preprocess). */
    pp__op_mem(s, l, "moe permute", 4.0 * x.tn * x.k * x.cf * x.h);
    pp__op_scope(l, l->n - 1, PP_GRAPH_MOE_PREPROCESS);
    /* Dropless, the host needs each rank's token counts (the all-to-all's
     * split sizes, the grouped GEMM's m_splits) before it can issue the
     * dispatch: it copies them from the GPU and waits (token_dispatcher.py:
     * "A synchronization is needed before expert parallel AlltoAll
     * communication to get the input_splits and output_splits CPU
     * values").  Once per layer forward, recomputation included. */
    size_t sync_at = l->n;
    a2a(&x, l, "ep dispatch alltoall");
    etp_comm(&x, l, PP_COLL_ALLGATHER);
    /* Transformer Engine's grouped GEMMs run the experts in FP8 under
     * dtype=fp8; the router stays in higher precision (above). */
    double g = lx.groups, me = lx.rows;
    pp__op_glgemm(s, l, "experts fc1", g, me, (x.swiglu ? 2.0 : 1.0) * w,
                  x.h);
    /* Drop-and-pad (a capacity factor): every split is the capacity,
     * known without the counts (Megatron-core's alltoall dispatcher keeps
     * its sync point at no_sync when it pads), so the host runs on; as
     * with a rank capacity, whose buffers are sized ahead ("sync-free":
     * Megatron-core's paged-stash documentation). */
    l->v[sync_at].sync =
        !(s->m->capacity_factor > 0) && !(s->p->rank_capacity > 0);
    expert_act(s, &x, l, "experts swiglu", te, w);
    pp__op_glgemm(s, l, "experts fc2", g, me, x.h, w);
    expert_bias(s, &x, l, false);
    etp_comm(&x, l, PP_COLL_REDUCESCATTER);
    a2a(&x, l, "ep combine alltoall");
    /* Unpermute and the weighted sum of the k outputs: fused, one pass;
     * unfused, the rows scaled by their probabilities, then added into
     * their tokens. */
    if (s->p->permute_unfused) {
        pp__op_mem(s, l, "moe unpermute scale", 4.0 * x.tn * x.k * x.cf * x.h);
        pp__op_scatter_add(s, l, "moe unpermute scatter-add", routed_bytes(&x));
    } else {
        pp__op_mem(s, l, "moe unpermute",
                   4.0 * x.tn * x.k * x.cf * x.h + 2.0 * x.tn * x.h);
    }
    shared_fwd(s, &x, l);
}

static void gemm_bwd(const pp__shape *s, pp__oplist *l, const char *d,
                     const char *w, double m, double n, double k) {
    pp__op_gemm(s, l, d, 1, m, k, n);
    pp__op_gemm(s, l, w, 1, k, n, m);
}

void pp__ops_moe_bwd(const pp__shape *s, pp__oplist *l) {
    moe_dims x = moe_dims_of(s);
    pp_moe_local lx = pp_moe_local_experts(s->m, s->p);
    double te = lx.routed, w = lx.width;
    if (x.S > 0) {
        double ws = x.S * x.fe / x.t, act = PP_ACT_BYTES * x.tok * x.h;
        /* recompute=shared_experts: their forward again first. */
        if (s->p->recompute_mods & PP_RECOMP_SHARED) shared_fwd(s, &x, l);
        if (x.t > 1) pp__op_comm(l, "tp allgather", PP_COLL_ALLGATHER, act, 0);
        pp__op_lgemm_bwd(s, l, "shared fc2 dgrad", "shared fc2 wgrad", x.tok,
                         x.h, ws);
        pp__op_mem(s, l, "shared swiglu bwd",
                   (x.swiglu ? 10.0 : 8.0) * x.tok * ws);
        pp__op_lgemm_bwd(s, l, "shared fc1 dgrad", "shared fc1 wgrad", x.tok,
                         (x.swiglu ? 2.0 : 1.0) * ws, x.h);
        if (x.t > 1)
            pp__op_comm(l, "tp reducescatter", PP_COLL_REDUCESCATTER, act, 0);
    }
    pp__op_mem(s, l, "moe unpermute bwd", 6.0 * x.tn * x.k * x.cf * x.h);
    a2a(&x, l, "ep combine alltoall bwd");
    etp_comm(&x, l, PP_COLL_ALLGATHER);
    double g = lx.groups, me = lx.rows;
    expert_bias(s, &x, l, true);
    /* recompute=moe_act: the activation's output, fc2's saved input, was
     * freed after the forward; it runs again before fc2's backward. */
    if (s->p->recompute_mods & PP_RECOMP_MOE_ACT)
        expert_act(s, &x, l, "experts act recompute", te, w);
    pp__op_glgemm_bwd(s, l, "experts fc2 dgrad", "experts fc2 wgrad", g, me,
                      x.h, w);
    pp__op_mem(s, l, "experts swiglu bwd", (x.swiglu ? 10.0 : 8.0) * te * w);
    expert_act_clamp_bwd(s, l, te, w);
    pp__op_glgemm_bwd(s, l, "experts fc1 dgrad", "experts fc1 wgrad", g, me,
                      (x.swiglu ? 2.0 : 1.0) * w, x.h);
    etp_comm(&x, l, PP_COLL_REDUCESCATTER);
    a2a(&x, l, "ep dispatch alltoall bwd");
    if (s->p->permute_unfused)
        pp__op_scatter_add(s, l, "moe permute bwd scatter-add",
                           routed_bytes(&x));
    else
        pp__op_mem(s, l, "moe permute bwd", 4.0 * x.tn * x.k * x.cf * x.h);
    pp__op_scope(l, l->n - 1, PP_GRAPH_MOE_PREPROCESS);
    size_t r0 = l->n;
    /* The pre-MLP norm's output is the router's saved input. */
    pp__op_ln_recompute(s, l, 0);
    pp__op_mem(s, l, "router topk bwd", 16.0 * x.tn * x.E);
    gemm_bwd(s, l, "router dgrad", "router wgrad", x.tn, x.E, x.h);
    pp__op_scope(l, r0, PP_GRAPH_MOE_ROUTER);
}

/* One expert's MLP parameters (a shared expert's, or a routed one's
 * before the expert-TP split). */
static double expert_mlp_params(const pp_model *m, const moe_dims *x) {
    double mlp = (x->swiglu ? 3.0 : 2.0) * x->h * x->fe;
    if (m->bias) mlp += (x->swiglu ? 2.0 : 1.0) * x->fe + x->h;
    return mlp;
}

/* Attention and norms as in a dense layer (split over tp; the norms and
 * MLA's down projections replicated, 4h as compute.c counts the norms),
 * the router replicated, the
 * shared experts split over tp, the routed experts over ep x etp. */
double pp__moe_layer_params_gpu(const pp__shape *s) {
    const pp_model *m = s->m;
    moe_dims x = moe_dims_of(s);
    pp_attn_shape at;
    pp_model_attn_shape(m, &at);
    return at.split / x.t + at.replicated + 4.0 * x.h +
           pp__moe_block_params_gpu(s);
}

/* The MoE block alone: the router, the shared and the local experts. */
double pp__moe_block_params_gpu(const pp__shape *s) {
    moe_dims x = moe_dims_of(s);
    double mlp = expert_mlp_params(s->m, &x);
    return x.h * x.E + x.S * mlp / x.t + pp__moe_expert_params_gpu(s);
}

/* The routed experts alone: E / ep of them, each split over etp. */
double pp__moe_expert_params_gpu(const pp__shape *s) {
    moe_dims x = moe_dims_of(s);
    return x.E / x.ep * expert_mlp_params(s->m, &x) / x.etp;
}
