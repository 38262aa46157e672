/*
 * podplan/models.h: model descriptions and the closed-form models.
 *
 * Pure functions of a model shape and a parallel layout: FLOPs per
 * iteration (F_iter), time to train (T_train), parameter count, memory per
 * GPU and communication volume per iteration.  Every formula cites its
 * source in the .c files of models/.  Depends on common only.
 */
#ifndef PODPLAN_MODELS_H
#define PODPLAN_MODELS_H

#include "podplan/common.h"
#include "podplan/vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Model description (plain data).
 * ---------------------------------------------------------------------- */
typedef enum { PP_ARCH_TRANSFORMER, PP_ARCH_GENERIC } pp_arch;
/* The MLP and what comes with it: gelu, GPT's (LayerNorm with a bias,
 * learned positions); swiglu, LLaMA's (three matrices, RMSNorm, rotary
 * positions); squared_relu, Nemotron's (two matrices and a squared ReLU,
 * LayerNorm with a bias, rotary positions). */
typedef enum { PP_FFN_GELU, PP_FFN_SWIGLU, PP_FFN_SQRELU } pp_ffn;
/* Megatron-core's softmax_type values, in its order and spelling
 * (pp_softmax_name). */
typedef enum {
    PP_SOFTMAX_VANILLA,
    PP_SOFTMAX_OFF_BY_ONE,
    PP_SOFTMAX_LEARNABLE
} pp_softmax;
/* Rotary positions' scaling for a longer context (pp_rope_scaling_name):
 * none; llama3, Llama 3.1's (Megatron-LM's --use-rope-scaling: low and
 * high frequency factors 1 and 4 over 8192 original positions); yarn
 * (Peng et al. 2023, arXiv:2309.00071: DeepSeek-V3's, GPT-OSS's). */
typedef enum {
    PP_ROPE_SCALING_NONE,
    PP_ROPE_SCALING_LLAMA3,
    PP_ROPE_SCALING_YARN
} pp_rope_scaling;

#define PP_NAME_MAX 64

typedef struct pp_model {
    char name[PP_NAME_MAX];
    pp_arch arch;
    /* transformer (decoder-only GPT family) */
    int64_t layers;   /* l */
    int64_t hidden;   /* h */
    int64_t heads;    /* a */
    int64_t kv_heads; /* GQA: heads sharing K/V; == heads for MHA */
    /* The attention core's width per head (QK^T and PV: 4 s head_dim
     * FLOPs per token and head), 0 = hidden / heads.  Only the core:
     * the projections stay h wide.  For DeepSeek's MLA it is the mean of
     * the q/k (192) and v (128) head widths. */
    int64_t head_dim;
    /* The projections' width per head (Megatron-core's kv_channels,
     * Hugging Face's head_dim): Q and the attention output are heads x
     * kv_channels wide, K and V kv_heads x kv_channels; 0 = hidden /
     * heads.  Qwen3's are wider than hidden (64 x 128 against 4096).
     * The core takes it too unless head_dim says otherwise. */
    int64_t kv_channels;
    /* Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 sec.
     * 2.1; Megatron-core's MLASelfAttention), on when kv_lora_rank > 0:
     * K and V are projected up from a kv_lora_rank-wide latent (beside a
     * qk_rope_head_dim-wide rotary key shared by the heads), Q from a
     * q_lora_rank-wide one (0: straight from h); Q and K heads are
     * qk_nope_head_dim + qk_rope_head_dim wide, V heads v_head_dim.
     * head_dim then defaults to the core's mean width, (qk + v) / 2, and
     * kv_heads is heads. */
    int64_t q_lora_rank, kv_lora_rank;
    int64_t qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    int64_t seq;        /* s */
    int64_t vocab;      /* V */
    int64_t ffn_hidden; /* default 4h */
    pp_ffn ffn;
    bool tied_embeddings; /* input embedding == output projection */
    bool bias;            /* linear layers have biases (GPT, Megatron-LM's
                            default); LLaMA-style models have none.  The
                            loaders default it to ffn == gelu. */
    /* Mixture of experts (Shazeer et al. 2017; Fedus et al. 2022; the
     * keys of models/moe.c): experts == 0 is a dense model.  A layer i
     * (from 0) is an MoE layer when i >= first_dense_layers and
     * i % moe_layer_freq == 0 (DeepSeek-V3's and Megatron-core's rule);
     * its FFN is `experts` routed experts of expert_ffn_hidden each
     * (top_k per token) plus shared_experts always-active ones of that
     * width, and a router (h x experts).  capacity_factor 0 = dropless.
     * Group-limited routing (DeepSeek-V3's node-limited routing,
     * Megatron-core's moe_router_num_groups / moe_router_group_topk):
     * the experts are cut into expert_groups equal groups and a token's
     * top_k experts come from its best group_top_k groups; both 0 = no
     * limit. */
    int64_t experts, top_k, expert_ffn_hidden, shared_experts;
    int64_t moe_layer_freq, first_dense_layers;
    int64_t expert_groups, group_top_k;
    double capacity_factor;
    /* The routed experts' gated activation as Megatron-core's MoE path
     * runs it (GPT-OSS: activation_func quick_gelu, activation_func_
     * clamp_value 7, glu_linear_offset 1).  glu_quick (key glu_act:
     * quick_gelu; default silu): the experts go through
     * weighted_bias_quick_geglu_impl (megatron/core/fusions/
     * fused_bias_geglu.py), whose offset tensor is a host-to-device copy
     * that waits for the GPU where the stack says so (moe.quick_geglu_
     * sync).  glu_clamp > 0: before it the gate half is clamped to at
     * most glu_clamp and the linear half to +-glu_clamp, then the two
     * are concatenated again (two clamps and a cat, eager, and their
     * backward).  0 = no clamp.  Gated FFNs whose every layer is routed
     * experts only (models/model.c). */
    bool glu_quick;
    double glu_clamp;
    /* glu_offset (key glu_offset; GPT-OSS 1): added to the linear half
     * before the product (Megatron-core's glu_linear_offset).  Any gated
     * FFN; it costs nothing, and goes to the launch lines. */
    double glu_offset;
    /* Multi-token prediction (DeepSeek-V3 sec. 2.2; Megatron-core's
     * --mtp-num-layers): mtp_layers modules after the last layer, each
     * the embedding of the next token and the previous hidden state,
     * normed and projected (2h -> h), then one transformer layer of the
     * last layer's kind, then the shared output layer and its own loss.
     * They sit on the last pipeline stage (Megatron-core's rule).  Not in
     * pp_model_params (the published counts leave them out, as the 671B
     * of DeepSeek-V3 does); in the FLOPs and the stage's memory. */
    int64_t mtp_layers;
#define PP_MTP_MAX 16
    /* Sliding-window attention (Mistral 7B, Gemma, GPT-OSS; Megatron-
     * core's --window-size and --window-attn-skip-freq): a windowed
     * layer's query attends to the `window` tokens before it, not the
     * whole causal prefix; 0 = no window.  window_skip k > 1: every k-th
     * layer (the k-th, 2k-th, ..., counting from 1) attends fully, the
     * others in the window (GPT-OSS: 2, alternate); 0 = every layer
     * windowed.  The simulator and the FLOP count give each layer the
     * layers' mean attention (pp_model_window_share). */
    int64_t window, window_skip;
    /* The attention softmax (Megatron-core's softmax_type): vanilla, or
     * with an offset in the denominator, fixed (off-by-one) or learned
     * per head (learnable: GPT-OSS's sinks).  Not priced: cuDNN's fused
     * kernels take the offset in their softmax, whose cost podplan's
     * attention curves do not separate; it goes to the launch lines. */
    pp_softmax softmax;
    /* Rotary positions (pp_model_has_rope: SwiGLU and squared-ReLU
     * models, and MLA's rotary key; GeLU models have GPT's learned
     * table).  rotary_base: the frequencies' base theta, 0 = Megatron's
     * 10000 (pp_model_rotary_base); rope_scaling with rope_factor (> 1),
     * rope_original_seq (the positions before scaling; 0 = llama3's 8192,
     * yarn's 4096) and, for yarn, rope_mscale and rope_mscale_all_dim
     * (DeepSeek's attention temperature terms; Megatron-core's defaults 1
     * and 0).  Priced alike: Transformer Engine's fused kernel rotates Q
     * and K (sim/train/compute.c); the frequencies are computed once.
     * They go to the launch lines. */
    int64_t rotary_base;
    pp_rope_scaling rope_scaling;
    double rope_factor;
    int64_t rope_original_seq;
    double rope_mscale, rope_mscale_all_dim;
    /* QK-norm (Qwen3's q_norm and k_norm; Megatron-core's qk_layernorm):
     * each head's query and key normalized over its kv_channels, with a
     * gain (and a bias under LayerNorm) of that width per norm.  Not
     * with MLA, whose latent norms are its own. */
    bool qk_norm;
    /* generic: a model known only by its size and cost (ResNet-50, ViT) */
    double params;           /* generic: parameter count */
    double flops_per_sample; /* generic: forward FLOPs per sample */
} pp_model;

/* The attention sublayer's linear layers, per layer (models/model.c):
 * the widths per token of Q, K, V and of the output projection's input;
 * under MLA the latents'; and the weights, `split` those Megatron splits
 * over tensor parallelism (the column- and row-parallel projections),
 * `replicated` the rest (MLA's down projections and latent norms, which
 * Megatron-core runs as TELinear on every TP rank), biases as the
 * model's bias key says; `matrices` the weights of the matrices alone
 * (what a token's forward multiplies, 2 FLOPs each), `up` those of MLA's
 * up projections (what recompute=mla_up_proj runs again).  The layer
 * norms are not in it. */
typedef struct pp_attn_shape {
    bool mla;
    double q, k, v, o;
    double q_rank, kv_rank, rope; /* MLA; q_rank 0: Q straight from h */
    double split, replicated, matrices, up;
} pp_attn_shape;
void pp_model_attn_shape(const pp_model *m, pp_attn_shape *out);
/* Whether m's attention is multi-head latent attention. */
bool pp_model_is_mla(const pp_model *m);

/* The share of m's layers that attend in a window (0 without one). */
double pp_model_window_share(const pp_model *m);
/* Megatron-core's name of a softmax_type ("vanilla", "off-by-one",
 * "learnable"). */
const char *pp_softmax_name(pp_softmax s);
const char *pp_rope_scaling_name(pp_rope_scaling r);

/* Loads a model from `spec`: a YAML file path, a name in models/zoo/
 * ("gpt3-175b"), or inline "layers=96,hidden=12288,heads=96,seq=2048,
 * vocab=51200".  On failure returns PP_EINPUT/PP_ENOENT with a located
 * message and leaves *out untouched. */
int pp_model_load(const char *spec, pp_model *out, pp_error *e);
/* Reads a model from an already loaded YAML mapping (used by study files).
 * path is the dotted path of the mapping for messages. */
int pp_model_from_node(pp_node *map, const char *path, pp_model *out,
                       pp_error *e);
/* Checks a model's internal consistency (heads divide hidden, kv_heads
 * divide heads, ...).  Returns PP_EINPUT with a message on failure. */
int pp_model_validate(const pp_model *m, pp_error *e);

/* Parameter count from the shape.  For GPT (tied embeddings, learned
 * positions) this is 12 l h^2 (1 + 13/(12h) + (V+s)/(12lh)). */
double pp_model_params(const pp_model *m);
/* The projections' width per head: kv_channels, else hidden / heads. */
double pp_model_kv_channels(const pp_model *m);
/* The attention core's width per head: head_dim, else kv_channels. */
static inline double pp_model_core_head_dim(const pp_model *m) {
    return m->head_dim > 0 ? (double)m->head_dim : pp_model_kv_channels(m);
}
/* What the ffn type brings besides the MLP: a learned position table
 * (gelu: GPT's; the others rotate), and RMSNorm with a gain only
 * (swiglu: LLaMA's; the others' LayerNorm has a bias too). */
static inline bool pp_model_learned_positions(const pp_model *m) {
    return m->ffn == PP_FFN_GELU;
}
static inline bool pp_model_rmsnorm(const pp_model *m) {
    return m->ffn == PP_FFN_SWIGLU;
}
/* Whether the attention rotates Q and K by position (the models without
 * a learned table, and MLA's rotary key); the frequencies' base (10000
 * unless rotary_base says); the positions before rope scaling (0
 * without it). */
bool pp_model_has_rope(const pp_model *m);
double pp_model_rotary_base(const pp_model *m);
int64_t pp_model_rope_original_seq(const pp_model *m);

/* Mixture of experts (models/moe.c).  Whether m has experts; whether
 * layer i (0-based) is an MoE layer; how many are; the parameters a token
 * goes through (top_k + shared experts of each MoE layer, every other
 * parameter): the N of 6 N tokens.  For a dense model active == total. */
bool pp_model_is_moe(const pp_model *m);
bool pp_model_layer_is_moe(const pp_model *m, int64_t layer);
int64_t pp_model_moe_layers(const pp_model *m);
double pp_model_active_params(const pp_model *m);
/* Routing spread: with the experts cut into `bins` equal contiguous
 * slices (the servers, or the ranks, of an expert-parallel group), the
 * expected number of slices holding at least one of a token's top_k
 * experts.  Routing is taken as uniform over the experts a token may use
 * (balanced, as an auxiliary loss or Megatron's force-balancing makes
 * it), within its group_top_k groups under group-limited routing; a
 * group that neither holds nor sits inside whole slices is treated as if
 * routing were not group-limited.  bins must divide experts. */
double pp_model_moe_spread(const pp_model *m, int64_t bins);

/* ------------------------------------------------------------------------
 * Pipeline layout (Megatron-core's --pipeline-model-parallel-layout): the
 * transformer layers of every virtual pipeline stage, in Megatron's
 * grammar, e.g. "Et|(tt|)*30L": E the embedding, t a layer, L the loss,
 * "|" between virtual stages, "(X)*n" and "c*n" repeat.  Virtual stage k
 * is chunk k / pp of pipeline rank k % pp.  Kept run-length: `run[i]` is
 * `stages` virtual stages in a row with `layers` layers each; stage 0 (E)
 * and the last (L) are runs of their own.  models/layout.c says where each
 * rule comes from.
 * ---------------------------------------------------------------------- */
#define PP_LAYOUT_RUNS 32
typedef struct pp_layout_run {
    int32_t stages, layers;
} pp_layout_run;
typedef struct pp_layout {
    int32_t stages; /* virtual stages (pp x vp); 0: no layout given */
    int32_t mtp;    /* m units: at the end of the last stage, before L */
    int32_t nrun;
    pp_layout_run run[PP_LAYOUT_RUNS];
} pp_layout;

/* Parses Megatron's layout string; errors name "--parallel: layout" and
 * say what was expected.  m (multi-token prediction) only in the last
 * virtual stage, before L; pp_parallel_validate checks that their count
 * is the model's mtp_layers.  *out is untouched on failure. */
int pp_layout_parse(const char *text, pp_layout *out, pp_error *e);
/* The canonical string ("Et|(tt|)*30L"), truncated to len. */
char *pp_layout_format(const pp_layout *l, char *buf, size_t len);
/* Transformer layers in all, in virtual stage v (model order), and in
 * the virtual stages before v. */
int64_t pp_layout_layers(const pp_layout *l);
int64_t pp_layout_stage(const pp_layout *l, int64_t v);
int64_t pp_layout_before(const pp_layout *l, int64_t v);

/* ------------------------------------------------------------------------
 * Parallel layout: tp=8,pp=8,dp=16,mbs=1,gbs=1536[,vp=2][,sp=on]
 * [,recompute=full|selective|none|MODULES][,zero=0..3]
 * ---------------------------------------------------------------------- */
typedef struct pp_parallel {
    int64_t tp, pp, dp; /* tensor, pipeline, data parallel degrees */
    int64_t mbs;        /* micro-batch size (sequences) */
    int64_t gbs;        /* global batch size (sequences) */
    int64_t vp;         /* interleaved model chunks per GPU; 1 = plain 1F1B */
    bool sp;            /* sequence parallelism (needs tp > 1 to matter) */
    pp_recompute recompute;
    /* Megatron-core's selective recomputation of modules beyond the
     * attention core (recompute=core_attn+layernorm+moe_act: --recompute-
     * granularity selective --recompute-modules ...): PP_RECOMP_* bits,
     * on top of recompute none (no core_attn) or selective (core_attn).
     * What they keep is freed after the forward (layernorm and moe_act
     * their outputs, mlp, moe and shared_experts their blocks' insides)
     * and their forward runs again in the backward.  0 none. */
    uint8_t recompute_mods;
    int zero; /* ZeRO stage 0..3, sharded over dp */
    /* Uneven pipeline split (Megatron-LM --decoder-first/last-pipeline-
     * num-layers): layers on the first and on the last stage, 0 = an even
     * share; the stages between split the rest evenly.  Lightening the
     * end stages balances the embedding and the logit layer they carry. */
    int64_t first, last;
    /* Or every virtual stage's layers (layout=, Megatron-core's pipeline
     * layout); vp then follows from it (stages / pp).  Not with first/last. */
    pp_layout layout;
    /* Training number format (dtype=bf16|fp16|fp8, default bf16) and the
     * attention kernels (attn=flash|standard; auto: the software stack's,
     * pp_stack_resolve in sim/hw).  `flash` is the resolved choice the
     * closed forms read: set by attn=flash|standard, else by the stack. */
    pp_prec dtype;
    pp_attn attn;
    bool flash;
    /* Context parallelism (Megatron-core's --context-parallel-size): the
     * sequence split over cp ranks, which ring-exchange K/V per layer.
     * GPUs = tp x cp x pp x dp.  Expert parallelism: the experts of an
     * MoE layer split over ep ranks taken from the tp x cp x dp ranks of
     * a stage, each expert split over etp ranks (0: etp = tp, Megatron-
     * core's default for --expert-tensor-parallel-size); see
     * pp_parallel_etp. */
    int64_t cp, ep, etp;
    /* How the CP ranks exchange K/V (cp_comm=p2p|all_gather|a2a|a2a+p2p;
     * p2p, Megatron-core's default, unless set): sim/train/attn.c prices
     * each as Transformer Engine runs it.  cp_a2a: with a2a+p2p, the
     * ranks of the all-to-all level (Megatron-core's
     * --hierarchical-context-parallel-sizes cp_a2a cp/cp_a2a), 0
     * otherwise; pp_parallel_cp_a2a and pp_parallel_cp_ring give the two
     * levels' sizes for every exchange. */
    pp_cp_comm cp_comm;
    int64_t cp_a2a;
    /* The MoE token dispatcher (dispatcher=alltoall|deepep; auto: the
     * stack's, pp_stack_resolve).  `deepep` is the resolved choice the
     * simulator reads: DeepEP's (and DeepSeek-V3's) dispatch, one copy of
     * a token per target server over the network, forwarded over NVLink
     * once per GPU holding its experts (inside a server only the
     * latter). */
    pp_dispatch dispatch;
    bool deepep;
    /* dispatcher=hybridep (resolved likewise): NVIDIA's HybridEP, Megatron-
     * core's flex dispatcher with --moe-flex-dispatcher-backend hybridep.
     * Its tokens take DeepEP's route (`deepep` is true with it); what
     * differs is its kernels' SMs (stack moe.overlap_sms.hybridep), its
     * launch flags, and that it alone takes rank_capacity. */
    bool hybridep;
    /* Megatron-core's per-rank expert capacity (rank_capacity=X,
     * --moe-expert-rank-capacity-factor; 0 none): HybridEP's dispatch and
     * the grouped experts' buffers are sized at X times a rank's balanced
     * share, so the token counts never reach the host (sync-free) and the
     * whole iteration can be captured (graphs=full).  Still dropless
     * under balanced routing; podplan prices the tokens routed, as with
     * the paged stash (--moe-paged-stash) the launch formats ask for,
     * whose pages hold what arrived. */
    double rank_capacity;
    /* The MoE token permutation (permute=fused|unfused; auto: the
     * stack's).  `permute_unfused`, the resolved choice: Megatron-core's
     * unfused permute and unpermute (moe_utils.py: index_select, then
     * scatter_add_), whose atomic row adds the simulator times at the
     * profile's memory.scatter_add_bw; false: Transformer Engine's fused
     * kernels (--moe-permute-fusion), at HBM's rate. */
    pp_permute permute;
    bool permute_unfused;
    /* dtype=fp8's scaling recipe (fp8=delayed|tensorwise|mxfp8|blockwise;
     * auto: the stack's fp8.recipe).  `fp8_recipe`, the resolved one
     * (never auto): what each FP8 cast costs (kernels, an amax pass) and
     * the launch flags. */
    pp_fp8 fp8;
    pp_fp8 fp8_recipe;
    /* Resolved from the GPU (pp_stack_resolve; default true): whether
     * Transformer Engine keeps a transposed FP8 copy of each weight
     * scaled per tensor (delayed, tensorwise), as it does where FP8 GEMMs
     * take only the TN layout (Hopper), and not where they take any
     * (Blackwell: quantizer.cpp's create_transpose = columnwise_usage &&
     * !nvte_is_non_tn_fp8_gemm_supported()).  Memory only. */
    bool fp8_transpose;
    /* CUDA graphs (graphs=none, or scopes joined by '+': attn, mlp,
     * moe_router, moe_preprocess, or full alone): Transformer Engine's
     * per-layer graphs (--cuda-graph-impl transformer_engine, Megatron-
     * core's --cuda-graph-scope) or the whole iteration's (local,
     * full_iteration).  A graphed scope's kernels cost the host one graph
     * launch instead of one issue each (stack host.kernel_issue).  A
     * PP_GRAPH_* mask, 0 none. */
    uint8_t graphs;
    /* Activation offloading to host memory (offload=N, Megatron-core's
     * --cpu-offloading --cpu-offloading-num-layers N, Transformer Engine's
     * CPU offload context): the activations of the model's first N
     * transformer layers go to the CPU after their forward and come back
     * before their backward.  Megatron-core allows it only with pp 1, no
     * recomputation and no CUDA graphs, and N below the layers.  0 none. */
    int64_t offload;
    /* Megatron-core's overlap of the MoE all-to-alls (a2a_overlap=on,
     * --overlap-moe-expert-parallel-comm; NeMo's moe_a2a_overlap): the
     * combined 1F1B schedule pairs each steady-state forward with a
     * backward of another micro-batch and runs their layers together, each
     * one's dispatch and combine beside the other's attention and experts
     * (models/validate.c says where Megatron-core allows it).  One more
     * micro-batch warms up. */
    bool a2a_overlap;
    /* Transformer Engine's FP8 dot-product attention (fp8_attn=on,
     * Megatron-core's --fp8-dot-product-attention): Q, K and V cast to FP8
     * and cuDNN's FP8 kernel, at the GPU profile's FP8 / BF16 time ratios
     * (sim/train/compute.c). */
    bool fp8_attn;
    /* recompute= was given; otherwise pp_stack_resolve replaces the
     * default (full) with the software stack's own default. */
    bool recompute_set;
} pp_parallel;

enum {
    PP_GRAPH_ATTN = 1,           /* the attention sublayer, norm included */
    PP_GRAPH_MLP = 2,            /* a dense layer's MLP sublayer */
    PP_GRAPH_MOE_ROUTER = 4,     /* an MoE layer's router */
    PP_GRAPH_MOE_PREPROCESS = 8, /* its dispatcher's preprocessing */
    PP_GRAPH_FULL = 16,          /* the whole iteration */
    /* an MoE layer's whole MLP sublayer: its norm, router, dispatch,
     * experts and combine (static shapes only: drop-and-pad or a rank
     * capacity); with attn, Megatron-core's per-layer graph of a whole
     * MoE layer (its empty scope list, the "full" layer scope of 2025) */
    PP_GRAPH_MOE = 32
};

enum {
    PP_RECOMP_LAYERNORM = 1, /* both norms' outputs (the GEMM/router input) */
    PP_RECOMP_MOE_ACT = 2,   /* the routed experts' activation output */
    PP_RECOMP_MLP = 4,       /* a dense layer's MLP, from its input */
    PP_RECOMP_MOE = 8,       /* an MoE layer's MoE block, from its input */
    PP_RECOMP_SHARED = 16,   /* an MoE layer's shared experts */
    PP_RECOMP_MLA_UP = 32    /* MLA's up projections and RoPE (Q, K, V) */
};

/* The recompute= value of a base and its modules ("none", "selective",
 * "full", or e.g. "core_attn+layernorm+moe_act" when modules are set):
 * buf; and back (PP_EINPUT naming what was expected: "selective" is core_attn
 * alone; Megatron-core modules podplan does not model are refused by
 * name).  pp_recompute_list writes the modules of a selective layout
 * each in `quote`, separated by `sep` (launch formats' lists). */
char *pp_recompute_format(pp_recompute r, uint8_t mods, char *buf, size_t len);
char *pp_recompute_list(pp_recompute r, uint8_t mods, const char *sep,
                        const char *quote, char *buf, size_t len);
int pp_recompute_parse(const char *val, pp_recompute *r, uint8_t *mods,
                       pp_error *e);
/* Whether model m has what the modules recompute (PP_EINPUT, "recompute:
 * ..." naming what is missing); pp_parallel_validate's check, for the
 * planner's pins too. */
int pp_recompute_check(const pp_model *m, pp_recompute r, uint8_t mods,
                       pp_error *e);

/* The graphs= value of a mask ("none", "attn+moe_router", ...): buf; and
 * back (PP_EINPUT naming what was expected).  pp_graphs_list writes the
 * scopes of a mask each in `quote`, separated by `sep` (launch formats'
 * lists; "" for none). */
char *pp_graphs_format(uint8_t graphs, char *buf, size_t len);
char *pp_graphs_list(uint8_t graphs, const char *sep, const char *quote,
                     char *buf, size_t len);
int pp_graphs_parse(const char *val, uint8_t *out, pp_error *e);

/* Defaults: everything 1, gbs = mbs * dp, no sp, full recompute (until a
 * stack resolves it), zero 0. */
void pp_parallel_init(pp_parallel *p);
/* Parses a SPEC string (keys in any order; missing keys keep their value in
 * *p, so call pp_parallel_init first).  Errors name the key and the text:
 * "--parallel: tp: expected a positive integer, got "x"".  Returns
 * PP_EINPUT and leaves *p untouched on failure. */
int pp_parallel_parse(const char *spec, pp_parallel *p, pp_error *e);
/* Writes the canonical SPEC string (keys in a fixed order).  A buffer of
 * PP_SPEC_MAX holds any layout's (a layout= of 32 runs included). */
#define PP_SPEC_MAX 768
char *pp_parallel_format(const pp_parallel *p, char *buf, size_t len);
/* Checks divisibility rules against a model (Megatron-LM's): tp | heads,
 * pp | layers, (pp*vp) | layers, mbs*dp | gbs, ...  Returns PP_EINPUT. */
int pp_parallel_validate(const pp_parallel *p, const pp_model *m, pp_error *e);
/* The pipeline split alone (layout=, or first= / last= against the
 * model's layers, pp and vp), whatever the other keys hold: what the
 * planner checks before it has chosen sp, ep and the rest (a full
 * pp_parallel_validate there would refuse an MoE split at tp > 1 for the
 * sp it has not set yet).  Returns PP_EINPUT. */
int pp_parallel_validate_split(const pp_parallel *p, const pp_model *m,
                               pp_error *e);
/* Transformer layers on pipeline stage `stage` (0..pp-1) of a validated
 * layout: first/last where set, an even share of the rest elsewhere; with
 * layout= the sum over the stage's chunks. */
int64_t pp_parallel_stage_layers(const pp_parallel *p, const pp_model *m,
                                 int64_t stage);
/* Layers of virtual stage v (0..pp*vp-1, model order: chunk v / pp of
 * stage v % pp), and the model-order index of its first layer.  Without
 * layout= a stage splits its layers evenly over its chunks (Megatron-
 * core's rule, uneven ends included). */
int64_t pp_parallel_chunk_layers(const pp_parallel *p, const pp_model *m,
                                 int64_t v);
int64_t pp_parallel_chunk_first(const pp_parallel *p, const pp_model *m,
                                int64_t v);
/* Whether stages may differ in layers (first=, last= or layout=). */
bool pp_parallel_uneven(const pp_parallel *p);
/* The expert tensor-parallel degree in force: etp, or tp when unset. */
int64_t pp_parallel_etp(const pp_parallel *p);
/* Whether Transformer Engine runs layout p's cp_comm for model m (true
 * without CP): a2a where cp divides each TP rank's query heads and K/V
 * heads (its all-to-all gives each CP rank 1/cp of them; K/V heads fewer
 * than tp count one), a2a+p2p likewise with cp_a2a; p2p and a2a+p2p, the
 * ring, where no layer has a sliding window (its tests skip "CP
 * implementation with KV P2P does not support sliding window yet");
 * all_gather always. */
bool pp_parallel_cp_comm_ok(const pp_parallel *p, const pp_model *m);
/* The CP ranks one all-to-all spans: cp under a2a, cp_a2a under
 * a2a+p2p, 1 otherwise (no all-to-all). */
int64_t pp_parallel_cp_a2a(const pp_parallel *p);
/* The CP ranks round one ring: cp under p2p, cp / cp_a2a under a2a+p2p,
 * 1 otherwise (no ring). */
int64_t pp_parallel_cp_ring(const pp_parallel *p);
/* One rank's routed experts in an MoE layer under layout p, balanced
 * routing (models/moe.c; what sim/train/moe.c prices and models/gemms.c
 * lists): the rank's tokens s b / (cp tp); its local experts E / ep (at
 * least 1); the rows they receive, tokens x top_k x capacity x etp (expert
 * TP gathers its peers'), and each one's share; each expert's width on
 * this rank, expert_ffn_hidden / etp. */
typedef struct pp_moe_local {
    double tokens, groups, routed, rows, width;
} pp_moe_local;
pp_moe_local pp_moe_local_experts(const pp_model *m, const pp_parallel *p);
/* GPUs of a layout: tp x cp x pp x dp. */
int64_t pp_parallel_gpus(const pp_parallel *p);
/* Micro-batches per iteration per pipeline: gbs / (mbs * dp), at least 1. */
double pp_parallel_microbatches(const pp_parallel *p);
/* The GPU (cluster rank, node-major) of TP rank t, stage p, replica d
 * under placement `order` (pp_placement_parse). */
int64_t pp_placement_rank(const pp_parallel *par, const char order[3],
                          int64_t t, int64_t p, int64_t d);

/* ------------------------------------------------------------------------
 * FLOPs.
 * ---------------------------------------------------------------------- */
typedef struct pp_flops {
    double total; /* FLOPs per iteration (hardware FLOPs: with recompute) */
    double dense; /* the "1" term: the GEMMs of the layers */
    double attn;  /* the s/(6h) term: attention scores and values */
    double logit; /* the V/(16lh) term: the output projection */
    double model; /* model FLOPs: the same without recomputation (for MFU) */
} pp_flops;

/* F_iter by the closed form of Narayanan et al. 2021 (domain.md sec. 4):
 *   full:      96 B s l h^2 (1 + s/(6h) + V/(16 l h))
 *   none:      72 B s l h^2 (1 + s/(6h) + V/(12 l h))
 *   selective: none + the attention-score recompute, 4 B s^2 l h... (see
 *              models/flops.c)
 * Only for transformer models with ffn_hidden = 4h, MHA, GeLU; returns
 * PP_EINVAL otherwise (use pp_flops_count). */
int pp_flops_closed(const pp_model *m, int64_t batch, pp_recompute r,
                    pp_flops *out, pp_error *e);
/* FLOPs counted matrix by matrix (GQA, SwiGLU, any ffn_hidden, untied
 * embeddings); equals pp_flops_closed for a GPT model.  For generic models:
 * 3 x forward FLOPs per sample x batch (x 4/3 with full recompute). */
int pp_flops_count(const pp_model *m, int64_t batch, pp_recompute r,
                   pp_flops *out, pp_error *e);
/* The hardware FLOPs recompute modules add to pp_flops_count's total
 * (PP_RECOMP_*: the GEMMs of the dense MLPs, MoE blocks, shared experts
 * or MLA's up projections run again; the norms and activations have
 * none); 0 for a generic
 * model or no such module. */
double pp_flops_recompute_mods(const pp_model *m, int64_t batch, uint8_t mods);

/* T_train = 8 T P / (n X) seconds with recomputation, 6 T P / (n X)
 * without (domain.md sec. 4).  tokens T, params P, gpus n, X FLOP/s. */
double pp_train_time_s(double tokens, double params, double gpus,
                       double flops_per_gpu, bool recompute);

/* ------------------------------------------------------------------------
 * Memory per GPU (bytes), on the most loaded GPU: usually the first
 * pipeline stage (the embedding and the most micro-batches in flight); the
 * last (the logits) or, with an uneven split, a middle one can exceed it.
 * ---------------------------------------------------------------------- */
typedef struct pp_memory {
    double params_per_gpu; /* parameters held by this GPU */
    double weights;        /* bytes */
    double grads;
    double optimizer;
    double model_states;          /* weights + grads + optimizer */
    double activations;           /* stored activations, all micro-batches */
    double offloaded;             /* of those, held in host memory (offload=):
                                     not in total */
    double activations_per_layer; /* one layer, one micro-batch */
    double inflight;              /* micro-batches in flight on that stage */
    int64_t stage;                /* which pipeline stage that is */
    double buffers;               /* embedding/logit/loss buffers */
    double step_grads;            /* fp32 gradient copy of the optimizer step */
    double total;                 /* model_states + max(activations + buffers,
                               step_grads) */
} pp_memory;

/* Bytes per parameter under an optimizer: what memory (pp_memory_per_gpu)
 * keeps and what the optimizer step moves (sim's optimizer time and the
 * planner's estimate).  The one owner of these figures; models/memory.c
 * says what each rests on. */
typedef struct pp_optimizer_bytes {
    double weights;      /* kept weights: 2 (16-bit) or 4 (fp32) */
    double grads;        /* kept gradients */
    double states;       /* fp32 master copy, momentum, variance */
    double step_grads;   /* fp32 gradient copy made for the step (0: none) */
    double step_traffic; /* HBM bytes the (memory-bound) step moves */
} pp_optimizer_bytes;

/* The figures of optimizer o (adam-mixed for an out-of-range value). */
const pp_optimizer_bytes *pp_optimizer_bytes_get(pp_optimizer o);
/* Whether layout p can train with optimizer o: adam-bf16-moments keeps
 * its fp32 master as the low half of a bf16 weight (not with dtype=fp16)
 * and runs in Megatron-core's distributed optimizer only (zero >= 1 when
 * dp > 1).  PP_EUSAGE with the reason when not. */
int pp_optimizer_check(pp_optimizer o, const pp_parallel *p, pp_error *e);

/* Bytes per element of what crosses the network, shared by models/comm.c,
 * the simulator (sim/step*.c) and the planner's estimator:
 *   PP_GRAD_SYNC_BYTES   a gradient in the DP synchronisation: bf16, as
 *                        DeepSpeed and PyTorch DDP reduce by default
 *                        (Megatron-LM's --accumulate-allreduce-grads-in-
 *                        fp32 makes it 4: pp_step_config.grad_bytes);
 *   PP_PARAM_GATHER_BYTES a parameter all-gathered by ZeRO (16-bit
 *                        weights, Rajbhandari et al. 2020 sec. 7);
 *   PP_ACT_BYTES         an activation element (fp16/bf16 mixed
 *                        precision, Micikevicius et al. 2018);
 *   PP_LOSS_BYTES        an element of the fp32 per-token statistics that
 *                        vocab-parallel cross-entropy all-reduces over TP
 *                        (Megatron-LM's _VocabParallelCrossEntropy). */
#define PP_GRAD_SYNC_BYTES 2.0
#define PP_PARAM_GATHER_BYTES 2.0
#define PP_ACT_BYTES 2.0
#define PP_LOSS_BYTES 4.0
/* An NVFP4 element (dtype=fp4) as Transformer Engine stores a GEMM
 * operand: E2M1, half a byte, and an E4M3 scale per 16 elements
 * (NVFP4Quantizer: data (M, N/2), scales (M, N/16)). */
#define PP_NVFP4_BYTES (0.5 + 1.0 / 16.0)

/* One activation tensor of a micro-batch, s x mbs x h elements of
 * PP_ACT_BYTES: what a TP collective carries (nccl-tests' S) and what a
 * pipeline stage sends to the next (before any split over tp). */
double pp_activation_bytes(const pp_model *m, int64_t mbs);

/* Whether the optimizer step's fp32 gradients, not the activations and
 * buffers, set the peak that total counts. */
bool pp_memory_peak_at_step(const pp_memory *x);

int pp_memory_per_gpu(const pp_model *m, const pp_parallel *p, pp_optimizer opt,
                      pp_memory *out, pp_error *e);

/* ------------------------------------------------------------------------
 * Communication volume per iteration, bytes sent per GPU.
 * ---------------------------------------------------------------------- */
typedef struct pp_comm_volume {
    double tp_bytes; /* TP AllReduce (or RS+AG with sp) per GPU */
    double tp_ops;   /* number of TP collectives per GPU */
    double pp_bytes; /* activations sent to the next stage per GPU */
    double pp_msgs;
    double dp_bytes;      /* gradient AllReduce / ZeRO RS+AG per GPU */
    double dp_grad_bytes; /* the gradient buffer S synchronised over dp */
} pp_comm_volume;

int pp_comm_per_iter(const pp_model *m, const pp_parallel *p,
                     pp_comm_volume *out, pp_error *e);

/* ------------------------------------------------------------------------
 * The GEMMs of one transformer layer's forward pass on one GPU, after the
 * TP split, as Megatron-LM runs them (the list sim/train/compute.c prices):
 * what `podplan exec gemm --model M --parallel SPEC` times on real
 * hardware.  Row-major C[m x n] = A[m x k] W^T, W stored [n x k] like a
 * torch.nn.Linear weight; batch > 1 is a strided batched GEMM (bmm).
 * ---------------------------------------------------------------------- */
typedef struct pp_gemm_shape {
    char name[32]; /* "qkv", "attn scores", ... or "" for a sweep */
    int64_t batch; /* 1 for a plain GEMM */
    int64_t m, n, k;
    /* The batch is a grouped GEMM: separate calls, one per group (an MoE
     * layer's local experts under Transformer Engine's GroupedLinear),
     * not one strided-batched call. */
    bool grouped;
} pp_gemm_shape;

/* Fills out[0..*n-1] with the forward GEMMs of one layer of transformer
 * model m under layout p (tp, mbs, sp for MLA's down projections; cp,
 * ep and etp for an MoE block's): qkv, attn scores, attn values, attn
 * proj, then mlp fc1 and mlp fc2; under multi-head latent attention q
 * down, q up (or q proj), kv down and kv up in place of qkv.  A model
 * with experts gives an MoE layer's in place of the MLP: router, shared
 * fc1 and fc2 (with shared experts), and experts fc1 and fc2 grouped over
 * the E / ep local experts, each with the rows balanced routing gives
 * it.  Returns PP_EINVAL for a generic model, PP_ERANGE when max is too
 * small (PP_LAYER_GEMMS_MAX suffice); outputs are untouched on failure. */
#define PP_LAYER_GEMMS_MAX 12
int pp_layer_gemms(const pp_model *m, const pp_parallel *p, pp_gemm_shape *out,
                   size_t max, size_t *n, pp_error *e);
/* The backward GEMMs of the same layer in the order backward runs them
 * (the last forward GEMM's first), named as the simulator names them:
 * each linear GEMM's "dgrad" (m x k, the input's gradient, inner n) and
 * "wgrad" (k x n, the weight's, inner m: a grouped GEMM's reduce over
 * each expert's rows); the attention core's four batched GEMMs as the
 * unfused path runs them (values dgrad and wgrad, scores dq and dk).
 * Same errors; PP_LAYER_GEMMS_BWD_MAX suffice. */
#define PP_LAYER_GEMMS_BWD_MAX (2 * PP_LAYER_GEMMS_MAX)
int pp_layer_gemms_bwd(const pp_model *m, const pp_parallel *p,
                       pp_gemm_shape *out, size_t max, size_t *n, pp_error *e);

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_MODELS_H */
