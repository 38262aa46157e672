/*
 * models/memory.c: memory per GPU on the most loaded GPU: usually the
 * first pipeline stage (it holds the input embedding and, under 1F1B, the
 * most micro-batches in flight), but the last holds the logits and, with
 * an uneven split, a stage between may hold the most layers.
 *
 * Sources: Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward
 * Training Trillion Parameter Models" (model states, sec. 3.1 and 5);
 * Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
 * Transformer Models" (activations, sec. 4, Table 2); Narayanan et al.
 * 2021 (1F1B and interleaved schedules, sec. 2.2); domain.md sec. 4.
 */
#include <math.h>
#include <string.h>

#include "models_int.h"

/* Per optimizer.  Model states (ZeRO sec. 3.1): mixed-precision Adam
 * keeps fp16/bf16 weights (2) and grads (2) and fp32 master weights,
 * momentum and variance (4 + 4 + 4); plain fp32 Adam keeps weights (4),
 * grads (4), momentum and variance (4 + 4).  16 bytes per parameter
 * either way (domain.md sec. 4: 175B x 16 = 2.8 TB).
 *
 * step_grads: Megatron-LM's mixed-precision optimizer steps on fp32
 * gradients, copying the 16-bit ones into fp32 (main_param.grad), 4 bytes
 * per parameter it updates (its docs/distrib_optimizer.md: 20 bytes per
 * parameter with fp16/bf16 gradients, 4 + 16/d with the distributed
 * optimizer).
 *
 * step_traffic: the step is memory-bound (Megatron-LM's multi-tensor
 * apply).  Mixed: read the fp32 gradient for the norm (4) and for the
 * update (4), read and write the fp32 master weight, momentum and variance
 * (3 x 8), write the 16-bit weight (2), zero the gradient (4): 38 bytes.
 * The simulator has always charged both optimizers 38 (an fp32 step
 * would move 36: no 16-bit copy to write); kept, so that no simulated
 * figure moves with this table. */
/*
 * adam-bf16-moments: Megatron-core's precision-aware optimizer as
 * Megatron-Bridge's DeepSeek-V3 recipe sets it
 * (--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype
 * bf16; recipes/deepseek/deepseek_v3.py: main params fp32, main grads and
 * moments bf16; its tuned variants keep fp32 main grads, perf_recipes/
 * deepseek/common.py).  Transformer Engine's FusedAdam holds the states;
 * with bf16 weights and an fp32 master it keeps only the master's low 16
 * bits (OptimizerConfig.store_param_remainders, True by default: "store
 * the 16-bit FP32 parameter remainders ... excluding the 16 bits shared
 * with the BF16 parameters"), so master 2 + m 2 + v 2 = 6 bytes.  It
 * reads the gradient buffer where it lies (distrib_optimizer.py,
 * _copy_model_grads_to_main_grads: shard_main_param.decoupled_grad =
 * shard_model_grad, no .float() copy): no step_grads.  Its step
 * (multi_tensor_adam_param_remainder) reads the gradient for the norm and
 * the update (4 + 4, as above), reads and writes the bf16 weight and the
 * remainder (2 x 4) and the bf16 moments (2 x 4), zeroes the gradient (4):
 * 28 bytes.  Weights and gradients as adam-mixed's. */
static const pp_optimizer_bytes optimizer_bytes[PP_OPT__COUNT] = {
    [PP_OPT_ADAM_MIXED] = {2.0, 2.0, 12.0, 4.0, 38.0},
    [PP_OPT_ADAM_FP32] = {4.0, 4.0, 8.0, 0.0, 38.0},
    [PP_OPT_ADAM_BF16_MOMENTS] = {2.0, 2.0, 6.0, 0.0, 28.0},
};

const pp_optimizer_bytes *pp_optimizer_bytes_get(pp_optimizer o) {
    if ((int)o < 0 || o >= PP_OPT__COUNT) o = PP_OPT_ADAM_MIXED;
    return &optimizer_bytes[o];
}

int pp_optimizer_check(pp_optimizer o, const pp_parallel *p, pp_error *e) {
    if (o != PP_OPT_ADAM_BF16_MOMENTS) return 0;
    /* TE's FusedAdam keeps remainders for bf16 weights only; Megatron-
     * core's Float16OptimizerWithFloat16Params (no distributed optimizer)
     * has no precision-aware path. */
    if (p->dtype == PP_PREC_FP16)
        return pp_error_set(e, PP_EUSAGE,
                            "--optimizer %s: needs bf16 weights (its fp32 "
                            "master is kept as the 16 bits a bf16 weight "
                            "lacks), not dtype=fp16",
                            pp_optimizer_name(o));
    if (p->dp > 1 && p->zero == 0)
        return pp_error_set(e, PP_EUSAGE,
                            "--optimizer %s: Megatron-core runs it in its "
                            "distributed optimizer only: zero=1 or above "
                            "with dp=%lld",
                            pp_optimizer_name(o), (long long)p->dp);
    return 0;
}

double pp_activation_bytes(const pp_model *m, int64_t mbs) {
    return PP_ACT_BYTES * (double)m->seq * (double)mbs * (double)m->hidden;
}

bool pp_memory_peak_at_step(const pp_memory *x) {
    return x->step_grads > x->activations + x->buffers;
}

double pp_parallel_microbatches(const pp_parallel *p) {
    double n = floor((double)p->gbs / ((double)p->mbs * (double)p->dp));
    return n < 1.0 ? 1.0 : n;
}

/* The stages whose memory can differ: the first (embedding), stage 1 (the
 * middle one with the most micro-batches in flight) and the last (output
 * layer); every stage under layout=, whose stages may each hold a
 * different number of layers. */
static int64_t stage_count(const pp_parallel *p) {
    if (p->layout.stages > 0) return p->pp;
    return p->pp <= 1 ? 1 : p->pp == 2 ? 2 : 3;
}

static int64_t stage_at(const pp_parallel *p, int64_t i) {
    return p->layout.stages > 0 || i < 2 ? i : p->pp - 1;
}

double pp__stage_params(const pp_model *m, const pp_parallel *p) {
    double best = 0;
    for (int64_t i = 0; i < stage_count(p); i++) {
        double x = pp__stage_params_of(m, p, stage_at(p, i));
        if (x > best) best = x;
    }
    return best;
}

double pp__stage_params_of(const pp_model *m, const pp_parallel *p,
                           int64_t stage) {
    if (m->arch == PP_ARCH_GENERIC) return m->params;
    if (pp_model_is_moe(m)) return pp__stage_params_moe(m, p, stage, NULL);
    double tp = (double)p->tp;
    if (p->pp <= 1) return (pp_model_params(m) + pp__mtp_params(m, NULL)) / tp;
    /* ceil: with layers not divisible by pp (only when the caller skipped
     * pp_parallel_validate) the first stage takes the extra layer. */
    double layers = pp_parallel_uneven(p)
                        ? (double)pp_parallel_stage_layers(p, m, stage)
                        : ceil((double)m->layers / (double)p->pp);
    /* Megatron splits the word embedding over tp (vocab-parallel) and the
     * layers' matrices too; the position table, norms and some biases are
     * replicated, which we ignore (< 0.1% of a layer for h >= 1024).  The
     * first stage holds the embedding and the last the output layer (with
     * tied embeddings a copy of it): V x h either way. */
    double ends =
        (stage == 0 || stage == p->pp - 1) ? pp__embedding_params(m) : 0.0;
    /* The MTP modules and, for them, a copy of the word table. */
    if (stage == p->pp - 1 && m->mtp_layers)
        ends += pp__mtp_params(m, NULL) + (double)m->vocab * (double)m->hidden;
    return (layers * pp__layer_params(m) + ends) / tp +
           pp__attn_replicated_extra(m, layers, tp);
}

/* Activations of one layer, one micro-batch, in bytes, with 2-byte
 * (fp16/bf16) activations: Korthikanti et al. 2022, Table 2, with
 * b = mbs, t = tp, a = heads.  Derived for GPT layers (MHA, 4h GeLU MLP):
 * per layer 34 s b h (attention 11, MLP 19, norms 4) + 5 a s^2 b (softmax
 * output 2, its dropout mask 1, dropout output 2).  For GQA and SwiGLU
 * layers it is an approximation. */
/* Bytes per element of a GEMM input Transformer Engine keeps for the
 * backward: its FP8 cast (1), its NVFP4 one (E2M1 and an E4M3 scale per
 * 16: NVFP4Quantizer's columnwise data, which the weight gradient reads),
 * or the 16-bit input itself. */
static double saved_input_bytes(const pp_parallel *p) {
    return p->dtype == PP_PREC_FP8   ? 1.0
           : p->dtype == PP_PREC_FP4 ? PP_NVFP4_BYTES
                                     : 2.0;
}

static double act_layer(const pp_model *m, const pp_parallel *p,
                        pp_recompute r) {
    double s = (double)m->seq, b = (double)p->mbs, h = (double)m->hidden;
    double t = (double)p->tp, a = (double)m->heads;
    double sbh = s * b * h;
    /* Sequence parallelism splits the 10 s b h that plain TP replicates
     * (norms, dropouts, layer inputs) over t too (sec. 4.2.2).  With t = 1
     * both forms are the same. */
    bool sp = p->sp && p->tp > 1;
    /* Of the 34: 10 replicated by plain TP, 24 split over t.  FP8 and
     * NVFP4 (Transformer Engine) save the casts of the four GEMM inputs
     * for the backward instead of the 16-bit ones (te.Linear and
     * LayerNormLinear/MLP keep the casted input): the QKV and fc1 inputs
     * (h elements each, replicated) and the projection and fc2 inputs (h
     * and 4h, split) shrink from 2 bytes to saved_input_bytes (FP8:
     * halved). */
    double cut = 2.0 - saved_input_bytes(p);
    double rep = 10.0 - 2.0 * cut, split = 24.0 - 5.0 * cut;
    /* Multi-head latent attention keeps Q, K, V and the core's output at
     * their own widths (2 bytes each, split over t by heads) where the
     * 34 count 8 (four of h), and its latents: each down projection's
     * output (its norm's saved input) and its norm's output (the up
     * projection's saved input), computed on s/t tokens with sp, whole
     * on every rank without. */
    if (pp_model_is_mla(m)) {
        pp_attn_shape at;
        pp_model_attn_shape(m, &at);
        split += 2.0 * (at.q + at.k + at.v + at.o) / h - 8.0;
        double lat = 2.0 * (2.0 * at.q_rank + 2.0 * at.kv_rank + at.rope) / h;
        if (sp)
            split += lat;
        else
            rep += lat;
    }
    /* QK-norm keeps its inputs, Q and K before it (2 bytes each, split
     * over t by heads); the rotary kernel after it keeps none. */
    if (m->qk_norm) {
        pp_attn_shape at;
        pp_model_attn_shape(m, &at);
        split += 2.0 * (at.q + at.k) / h;
    }
    /* The attention core's 5 a s^2 b (/t); FlashAttention (Dao et al.
     * 2022, sec. 3.1) stores no s x s matrix, only the softmax's fp32
     * log-sum-exp per row, 4 s b a / t bytes, and regenerates its
     * dropout mask from the RNG state. */
    double core = p->flash ? 4.0 * a / h : 5.0 * a * s / h;

    switch (r) {
    case PP_RECOMPUTE_NONE:
        return sp ? sbh / t * (rep + split + core)
                  : sbh * (rep + split / t + core / t);
    case PP_RECOMPUTE_SELECTIVE:
        /* The attention core (the 5 a s^2 b term) is recomputed, not kept
         * (sec. 4.2.3). */
        return sp ? sbh * (rep + split) / t : sbh * (rep + split / t);
    case PP_RECOMPUTE_FULL:
        /* Only the layer's input is kept, 2 s b h bytes (sec. 4.1), split
         * over t with sequence parallelism. */
        return sp ? 2.0 * sbh / t : 2.0 * sbh;
    case PP_RECOMPUTE__COUNT: break;
    }
    return 0.0;
}

/* What recompute modules free per layer and micro-batch, in bytes (the
 * layers' mean: the MoE modules act in MoE layers, mlp in dense ones).
 * layernorm: the two norms' outputs, which the QKV GEMM and the MLP's
 * first GEMM (an MoE layer's router) keep as their saved input, 2 s b h
 * bytes each (1 under FP8, whose GEMMs keep the cast), replicated over TP
 * unless sp.  Under FP8, Megatron-core's TransformerLayer has those GEMMs
 * keep their original input instead of the cast (the attention's
 * set_for_recompute_input_layernorm, set_save_original_input on fc1, the
 * MoE layer's set_for_recompute_pre_mlp_layernorm), which the recompute
 * then drops: what is freed is the 1-byte cast the GEMM would have kept.
 * The MLP's internals are pp__moe_act_factor's 15 s b h (/t) that scale
 * with the FFN (11 under FP8: fc2's input cast, 8 -> 4):
 * moe_act frees the routed experts' activation output, fc2's saved input
 * (the 8 of them, scaled by k fe / 4h); mlp a dense MLP's 15; shared
 * experts their 15 scaled by shared fe / 4h; moe the MoE block's (routed
 * and shared) and its dispatched copies of the input, 2 top_k cf;
 * mla_up_proj MLA's Q, K and V (act_layer's widths), which its checkpoint
 * frees once the core has run. */
static double recompute_freed(const pp_model *m, const pp_parallel *p) {
    if (!p->recompute_mods || p->recompute == PP_RECOMPUTE_FULL) return 0;
    uint8_t r = p->recompute_mods;
    double s = (double)m->seq, b = (double)p->mbs, h = (double)m->hidden;
    double t = (double)p->tp, sbh = s * b * h;
    bool sp = p->sp && p->tp > 1;
    /* A module's saved GEMM inputs at saved_input_bytes (the MLP's 15
     * bytes hold 4 elements of them: 11 with FP8). */
    double el = saved_input_bytes(p), mlp = 15.0 - 4.0 * (2.0 - el);
    double moe = (double)pp_model_moe_layers(m) / (double)m->layers;
    double freed = 0;
    if (r & PP_RECOMP_LAYERNORM) freed += 2.0 * el * sbh / (sp ? t : 1.0);
    if (r & PP_RECOMP_MLA_UP) {
        pp_attn_shape at;
        pp_model_attn_shape(m, &at);
        freed += 2.0 * (at.q + at.k + at.v) / h * sbh / t;
    }
    if (r & PP_RECOMP_MLP) freed += (1.0 - moe) * mlp * sbh / t;
    if (moe > 0) {
        double fe = (double)m->expert_ffn_hidden;
        double cf = m->capacity_factor > 0 ? m->capacity_factor : 1.0;
        double routed = (double)m->top_k * cf * fe / (4.0 * h);
        double shared = (double)m->shared_experts * fe / (4.0 * h);
        /* The activation's checkpoint keeps fc1's output alone: its
         * output and glu_clamp's copy go. */
        double clamp = pp__moe_glu_clamp_saved(m);
        if (r & PP_RECOMP_MOE_ACT)
            freed += moe * (el * 4.0 * routed + clamp) * sbh / t;
        if (r & PP_RECOMP_SHARED) freed += moe * mlp * shared * sbh / t;
        if (r & PP_RECOMP_MOE)
            freed += moe *
                     (mlp * (routed + shared) + 2.0 * (double)m->top_k * cf +
                      clamp) *
                     sbh / t;
    }
    return freed;
}

/* Stage `st`'s memory; model states in r->weights..model_states. */
static void stage_memory(const pp_model *m, const pp_parallel *p,
                         pp_optimizer opt, int64_t st, pp_memory *out) {
    pp_memory r;
    memset(&r, 0, sizeof r);
    r.stage = st;

    /* Model states and the step's fp32 gradients: pp_optimizer_bytes. */
    const pp_optimizer_bytes *ob = pp_optimizer_bytes_get(opt);
    /* ZeRO sharding over dp (sec. 5): stage 1 the optimizer states (P_os),
     * stage 2 also the gradients (P_os+g), stage 3 also the weights
     * (P_os+g+p).  With dp == 1 it divides by 1: no effect. */
    double dp = (double)p->dp;
    double osh = p->zero >= 1 ? dp : 1.0;
    double gsh = p->zero >= 2 ? dp : 1.0;
    double wsh = p->zero >= 3 ? dp : 1.0;

    r.params_per_gpu = pp__stage_params_of(m, p, st);
    /* Megatron-core shards the distributed optimizer over dp x cp; an
     * MoE model's expert parameters over their own data-parallel group
     * (tp cp dp / (etp ep) ranks), which pp__moe_shard folds into one
     * effective divisor per kind of state.  Both are 1 for a dense model
     * without cp. */
    double sh = pp__moe_shard(m, p, st);
    if (p->zero >= 1) osh *= sh;
    if (p->zero >= 2) gsh *= sh;
    if (p->zero >= 3) wsh *= sh;
    r.weights = r.params_per_gpu * ob->weights / wsh;
    r.grads = r.params_per_gpu * ob->grads / gsh;
    r.optimizer = r.params_per_gpu * ob->states / osh;
    /* FP8 (Transformer Engine) keeps FP8 copies of each weight, 1 byte
     * each, made once per iteration and cached across the micro-batches
     * (is_first_microbatch): a row-wise and a column-wise one for the
     * block-scaled recipes (mxfp8, blockwise: the two directions scale
     * differently), and for a weight scaled per tensor the copy and its
     * transpose where FP8 GEMMs take only the TN layout (Hopper), the
     * copy alone where they take any (Blackwell; fp8_transpose). */
    if (p->dtype == PP_PREC_FP8) {
        bool block =
            p->fp8_recipe == PP_FP8_MXFP8 || p->fp8_recipe == PP_FP8_BLOCKWISE;
        double copies = block || p->fp8_transpose ? 2.0 : 1.0;
        r.weights += r.params_per_gpu * copies / wsh;
    }
    /* NVFP4 keeps a weight's row-wise and column-wise quantizations (16 x
     * 16 blocks, NVFP4BlockScaling's 2D weight scaling: the fprop and the
     * dgrad GEMM each read one), half a byte and a scale per 16 each. */
    if (p->dtype == PP_PREC_FP4)
        r.weights += r.params_per_gpu * 2.0 * saved_input_bytes(p) / wsh;
    r.model_states = r.weights + r.grads + r.optimizer;
    /* The step's fp32 gradient copy lives during the step, when the
     * iteration's activations are freed, so the peak is the larger of the
     * two. */
    r.step_grads = r.params_per_gpu * ob->step_grads / osh;

    double nmb = pp_parallel_microbatches(p);
    if (m->arch == PP_ARCH_GENERIC) {
        /* No layer shape, so no activation formula: a generic model is
         * sized by its model states only (its activations are left to the
         * calibrated profile).  One micro-batch in flight: no pipeline. */
        r.inflight = 1.0;
        r.total = r.model_states + r.step_grads;
        *out = r;
        return;
    }

    double s = (double)m->seq, b = (double)p->mbs, h = (double)m->hidden;
    double t = (double)p->tp, ppd = (double)p->pp, vp = (double)p->vp;
    double layers = pp_parallel_uneven(p)
                        ? (double)pp_parallel_stage_layers(p, m, st)
                        : ceil((double)m->layers / ppd);
    /* The MTP modules' layers keep their activations like any other. */
    if (st == p->pp - 1) layers += (double)m->mtp_layers;
    bool sp = p->sp && p->tp > 1;

    /* Context parallelism splits every activation's sequence over cp,
     * the s^2 scores too (each rank's queries against all keys); an MoE
     * layer keeps more (pp__moe_act_factor). */
    double cpf = p->cp > 1 ? (double)p->cp : 1.0;
    double moef = pp__moe_act_factor(m, p);
    r.activations_per_layer =
        (act_layer(m, p, p->recompute) * moef - recompute_freed(m, p)) / cpf;
    /* a2a_overlap: the combined schedule warms up one more micro-batch
     * (chunk), whose forward runs beside the first backward. */
    double a2a = p->a2a_overlap ? 1.0 : 0.0;
    if (p->vp > 1) {
        /* Interleaved 1F1B (Megatron-LM's schedules.py): stage st warms up
         * with 2 (pp - st - 1) + (vp - 1) pp chunk forwards before its first
         * backward, each chunk a vp-th of its layers, so it keeps one more
         * chunk than that.  For the first stage that is l/pp x (pp + (pp -
         * 1)/vp) layers' worth, Korthikanti's 1 + (pp-1)/(pp vp) factor
         * (sec. 4.2.3, citing Narayanan sec. 2.2.2). */
        double chunks =
            fmin(2.0 * (ppd - (double)st - 1.0) + (vp - 1.0) * ppd + 1.0 + a2a,
                 nmb * vp);
        r.inflight = chunks / vp;
    } else {
        /* 1F1B (Narayanan et al. 2021, sec. 2.2.1): stage st runs pp - st
         * forwards before its first backward; the first stage keeps pp
         * micro-batches of its l/pp layers, i.e. l layers' worth
         * (Korthikanti sec. 4.2.3); fewer when the iteration has fewer
         * micro-batches. */
        r.inflight = fmin(ppd - (double)st + a2a, nmb);
    }
    r.activations = r.activations_per_layer * layers * r.inflight;
    /* Offloaded layers (offload=, pp 1) hold their activations in host
     * memory from the end of their forward to their backward (Transformer
     * Engine's CPU offload handler; the one layer in transfer at a time
     * is not counted). */
    if (p->offload > 0) {
        r.offloaded = fmin((double)p->offload, layers) *
                      r.activations_per_layer * r.inflight;
        r.activations -= r.offloaded;
    }
    /* Full recompute re-runs one layer's forward during its backward and
     * holds that layer's complete activations meanwhile (Korthikanti sec.
     * 4.1). */
    if (p->recompute == PP_RECOMPUTE_FULL)
        r.activations += act_layer(m, p, PP_RECOMPUTE_NONE) *
                         pp__moe_act_factor(m, NULL) / cpf;

    /* Buffers outside the layers (Korthikanti sec. 4.3): on the first
     * stage the dropout mask of the input embedding, 1 byte per element,
     * s b h per micro-batch in flight (/t with sp); on the last the fp32
     * logits of the softmax cross-entropy, 4 s b V / t (vocab-parallel). */
    if (st == 0) r.buffers = s * b * h * r.inflight / (sp ? t : 1.0) / cpf;
    if (st == p->pp - 1)
        r.buffers += 4.0 * s * b * (double)m->vocab / t / cpf *
                     (1.0 + (double)m->mtp_layers);

    /* CP's exposed exchanges (cp_comm=, sim/train/attn.c) hold one
     * layer's worth beyond the ring's: all_gather (Transformer Engine's
     * AttnFuncWithCPAndKVAllGather) gathers K and V over the whole
     * sequence and, backward, zero-fills dK and dV at that size before
     * reduce-scattering them, 4 tensors of s b (k or v) / t at 2 bytes;
     * a2a (AttnFuncWithCPAndQKVOA2A) re-lays Q, K, V and the output, and
     * backward their gradients, each the size of the rank's own, s/cp
     * tokens.  The reorder copies come and go one tensor at a time and
     * are not counted. */
    if (p->cp > 1 && p->cp_comm != PP_CPCOMM_P2P) {
        pp_attn_shape at;
        pp_model_attn_shape(m, &at);
        double kv = s * b * (at.k + at.v) / t;
        r.buffers += p->cp_comm == PP_CPCOMM_ALL_GATHER
                         ? 2.0 * 2.0 * kv
                         : 2.0 * 2.0 * (s * b * (at.q + at.o) / t + kv) / cpf;
    }
    /* ZeRO-3 / FSDP gathers each layer's full (/tp) 16-bit weights
     * before using it and frees them after: the layer in use and the one
     * prefetched behind it (FSDP2's and DeepSpeed's default of one layer
     * ahead), plus the layer's unsharded 16-bit gradients until their
     * reduce-scatter (Zhao et al. 2023, PyTorch FSDP, sec. 3.2). */
    if (p->zero >= 3 && p->dp > 1)
        r.buffers += 3.0 * PP_PARAM_GATHER_BYTES * pp__layer_params(m) / t;

    r.total = r.model_states + fmax(r.activations + r.buffers, r.step_grads);
    *out = r;
}

int pp_memory_per_gpu(const pp_model *m, const pp_parallel *p, pp_optimizer opt,
                      pp_memory *out, pp_error *e) {
    int rc;
    if ((rc = pp_parallel_validate(p, m, e)) < 0) return rc;
    /* The most loaded kind of stage; on a tie the earlier is reported. */
    stage_memory(m, p, opt, 0, out);
    for (int64_t i = 1; i < stage_count(p); i++) {
        pp_memory r;
        stage_memory(m, p, opt, stage_at(p, i), &r);
        if (r.total > out->total) *out = r;
    }
    return 0;
}
