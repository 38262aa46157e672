/*
 * podplan/train.h: one training iteration as a task graph on a simulation
 * (podplan_sim_train): the per-layer compute cost and the step simulator.
 * The top of sim/: depends on coll, net, topo, hw, models and common.
 */
#ifndef PODPLAN_TRAIN_H
#define PODPLAN_TRAIN_H

#include "podplan/common.h"
#include "podplan/models.h"
#include "podplan/forward.h"
#include "podplan/hw.h"
#include "podplan/coll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Training iteration (sim/train/compute.c and cost.c, sim/train/schedule.c,
 * sim/train/step.c, sim/train/step_build.c): one
 * iteration of a model under TP x PP x DP on a cluster, as a task graph on
 * the event engine.  Compute is a roofline per operation, timed with a GPU
 * profile; communication is real: TP collectives inside each TP group,
 * pipeline sends and DP gradient synchronisation, all on the simulation
 * (flows that share links contend at `flow` fidelity).
 * ---------------------------------------------------------------------- */

/* One transformer layer on one GPU for one micro-batch, after the TP
 * split (sequence parallelism, GQA, SwiGLU as the layout and model say):
 * the time and FLOPs of each pass, and the TP collectives each holds. */
typedef struct pp_layer_cost {
    double fwd_s, bwd_s, recompute_s; /* compute only, no comm */
    double fwd_flops, bwd_flops, recompute_flops;
    double gemm_s; /* of fwd_s: GEMMs and bmms */
    /* TP collectives of the activation's size, coll_bytes, not
     * overlapped with a GEMM (those are tp_overlap_*'s). */
    int32_t fwd_colls, bwd_colls, recompute_colls;
    double coll_bytes; /* each collective's buffer */
    /* Other TP collectives not overlapped (the loss's AllReduces, MLA's
     * latents, an MoE layer's expert-TP gathers, FP8 and NVFP4 inputs'
     * gathers), of mean size aux_coll_bytes. */
    int32_t aux_colls;
    double aux_coll_bytes;
    double params; /* parameters on this GPU */
    /* Of those, an MoE layer's routed experts', whose gradients go over
     * the expert data-parallel group (tp cp dp / (ep etp) ranks). */
    double expert_params;
    /* Context and expert parallelism (sim/train/moe.c, compute.c): the
     * MoE all-to-alls of the forward, backward and recomputation (each
     * ep_coll_bytes per rank) and the CP K/V exchanges (bytes of the
     * ring all-gather and the attention compute they overlap, which
     * fwd_s/bwd_s/recompute_s include). */
    int32_t ep_fwd_colls, ep_bwd_colls, ep_recompute_colls;
    double ep_coll_bytes;
    /* Of fwd_s, the compute between the forward's two all-to-alls (the
     * experts); of bwd_s + recompute_s, between the backward's two (their
     * gradients): what a2a_overlap's pairs split on (step_pair.c). */
    double ep_inner_fwd_s, ep_inner_bwd_s;
    double cp_fwd_bytes, cp_bwd_bytes, cp_recompute_bytes;
    double cp_fwd_overlap_s, cp_bwd_overlap_s, cp_recompute_overlap_s;
    /* TP collectives a stack overlaps with their GEMMs (stack
     * tensor_parallel.overlap_comm and async_backward), over all three
     * passes, the GEMM time they run under (which the compute times
     * include) and their mean size. */
    int32_t tp_overlap_colls;
    double tp_overlap_s;
    double tp_overlap_bytes;
    /* The host's time to issue the layer's kernels, forward, backward and
     * recomputation together (the stack's host.kernel_issue; 0 when it
     * does not model the host). */
    double host_s;
} pp_layer_cost;

/* Fills *out for model m (a transformer; PP_EINVAL for a generic model)
 * under layout p with profile g.  recompute_* is what p->recompute adds
 * to the backward pass (the whole forward for full, the attention core
 * for selective).  On failure *out is untouched. */
int pp_layer_cost_get(const pp_gpu_profile *g, const pp_model *m,
                      const pp_parallel *p, pp_layer_cost *out, pp_error *e);

/* Whether the stack's TP overlap (tensor_parallel.overlap_comm,
 * Transformer Engine's userbuffers) takes layout p's number format: not
 * dtype=fp4, since userbuffers take 16-bit, FP8 and MXFP8 inputs only
 * (base.py fill_userbuffers_buffer_for_all_gather: "Unsupported
 * quantizer for Userbuffers"; NVIDIA's MLPerf v5.1 config_common_fp4.sh:
 * "TP overlap not supported yet", TP_COMM_OVERLAP=False). */
bool pp_tp_overlap_offered(const pp_gpu_profile *g, const pp_parallel *p);
/* Whether layout p's TP collectives run under their GEMMs: offered, and
 * sp=on with tp > 1. */
bool pp_tp_overlap_in_force(const pp_gpu_profile *g, const pp_parallel *p);
/* The same for the first virtual stage's embedding (word and position
 * tables, vocab-parallel) and the last one's head (final norm, logits,
 * cross-entropy, and with a pipeline the tied table's copy): the kernels
 * and collectives the simulator runs for them; recompute_* are 0. */
int pp_embed_cost_get(const pp_gpu_profile *g, const pp_model *m,
                      const pp_parallel *p, pp_layer_cost *out, pp_error *e);
int pp_head_cost_get(const pp_gpu_profile *g, const pp_model *m,
                     const pp_parallel *p, pp_layer_cost *out, pp_error *e);
/* One multi-token-prediction module's own part (pp_model.mtp_layers):
 * the next tokens' embedding, the norms and the 2h -> h projection; its
 * params with (pipeline) the last stage's one copy of the word table,
 * held once whatever the modules.  Its layer and its pass through the
 * output layer cost what pp_layer_cost_get and pp_head_cost_get say. */
int pp_mtp_cost_get(const pp_gpu_profile *g, const pp_model *m,
                    const pp_parallel *p, pp_layer_cost *out, pp_error *e);
/* An MoE layer's MoE block alone (pp_model_is_moe; PP_EINVAL else), as
 * Megatron-core's MoELayer runs it: router, permutation, the EP
 * all-to-alls (ep_*: counted, not timed), the local and the shared
 * experts; recompute_* are 0.  What a one-layer benchmark of MoELayer
 * times, less the all-to-alls' transfer. */
int pp_moe_cost_get(const pp_gpu_profile *g, const pp_model *m,
                    const pp_parallel *p, pp_layer_cost *out, pp_error *e);
/* One part of a transformer as the simulator runs it on each GPU of a
 * stage: the first virtual stage's embedding, a layer without and one
 * with routed experts, a multi-token-prediction module (its layer and
 * its pass through the output layer included; the first module's,
 * which also carries the word table's gradient) and the last stage's
 * head (final norm, logits, loss). */
typedef enum {
    PP_OPS_EMBED,
    PP_OPS_DENSE,
    PP_OPS_MOE,
    PP_OPS_MTP,
    PP_OPS_HEAD
} pp_ops_part;
#define PP_OPS_PARTS 5

/* One operation of such a part, in the order it runs: a GEMM, a
 * memory-bound kernel, a collective (its transfer runs on the network,
 * so time_s is 0 and overlap_s is the compute run under it) or a mark
 * (`params` parameters' gradients final, for the DP buckets).  time_s is
 * the roofline time on the profile with the launch; kernels, the
 * launches the framework makes for it (host.kernel_issue each, a
 * fraction where one eager operation stands for several); host_kernels,
 * those the host pays under the layout's CUDA graphs; sync, the host
 * waits for the GPU first (the dropless dispatch's token counts). */
typedef struct pp_op_row {
    const char *name;  /* static */
    const char *kind;  /* "gemm", "memory", "collective", "mark" */
    const char *group; /* collectives: "tp", "cp" or "ep"; else NULL */
    const char *coll;  /* collectives: pp_coll_op_name; else NULL */
    double flops, bytes, time_s, overlap_s, params;
    double kernels, host_kernels;
    bool sync;
} pp_op_row;

typedef struct pp_op_table {
    pp_op_row *v;
    size_t n;
} pp_op_table;

const char *pp_ops_part_name(pp_ops_part part);
/* Whether model m runs such a part (a transformer; a dense or an MoE
 * layer where some layer is one; MTP where it has modules). */
bool pp_ops_part_present(const pp_model *m, pp_ops_part part);
/* Fills *out with `part`'s forward (bwd false) or backward operations,
 * recomputation included where p asks for it, under layout p with
 * profile g (resolved: pp_stack_resolve).  PP_EINVAL when m has no such
 * part.  Free with pp_op_table_fini. */
int pp_ops_get(const pp_gpu_profile *g, const pp_model *m, const pp_parallel *p,
               pp_ops_part part, bool bwd, pp_op_table *out, pp_error *e);
void pp_op_table_fini(pp_op_table *t);

/* The point-to-point transfers one iteration's MoE all-to-alls start,
 * as pp_step_simulate issues them (sim/train/step_group.c), lc being an
 * MoE layer's pp_layer_cost_get: lc's all-to-alls per MoE layer (and per
 * MTP module, of the last layer's kind) and micro-batch on each of the
 * tp cp dp / ep groups; a plain all-to-all is ep (ep - 1) transfers,
 * DeepEP's over `servers` servers of ep / servers members each
 * ep (servers - 1) + ep (ep / servers - 1) (servers 0: the plain count).
 * What a flow simulation's cost grows with; 0 without expert
 * parallelism. */
double pp_a2a_transfers(const pp_model *m, const pp_parallel *p,
                        const pp_layer_cost *lc, int64_t servers);
/* The optimizer step over `params` parameters (one GPU's shard):
 * memory-bound, pp_optimizer_bytes' step_traffic per parameter. */
double pp_optimizer_time_s(const pp_gpu_profile *g, pp_optimizer opt,
                           double params);

/* Megatron-LM's default DP bucket with overlap (40M parameters would be
 * 80 MB in 16 bits; PyTorch DDP's default is 25 MB): 40 MB.  The
 * simulator's default and the planner's estimate of the last bucket. */
#define PP_STEP_BUCKET_BYTES 40e6

typedef struct pp_step_config {
    const pp_model *model;         /* borrowed */
    const pp_parallel *par;        /* borrowed */
    const pp_cluster *cluster;     /* borrowed */
    const pp_gpu_profile *profile; /* borrowed; NULL: the shipped one */
    pp_fidelity fidelity;          /* default flow */
    pp_schedule schedule;          /* default: interleaved when vp > 1,
                                     else 1F1B */
    bool schedule_set;             /* false: choose as above */
    char placement[3];             /* default 't','p','d' */
    bool dp_overlap;               /* DP buckets during the last backward
                                     (default false: Megatron-LM 2021
                                     reduces after the pipeline flush) */
    double bucket_bytes;           /* DP bucket size with overlap (default
                                     PP_STEP_BUCKET_BYTES; one bucket
                                     without) */
    double compute_time_s;         /* generic models: compute per
                                     iteration per GPU; 0 = derived from
                                     flops_per_sample */
    double grad_bytes;             /* bytes per gradient in the DP
                                     synchronisation: 2 (fp16/bf16,
                                     default) or 4 (fp32: Megatron-LM
                                     with bf16 reduces in fp32) */
    pp_optimizer optimizer;        /* default adam-mixed */
    bool check_memory;             /* default true */
    bool p2p_sync;                 /* a stage waits for its own pipeline
                                     sends to arrive (default true:
                                     Megatron-LM 2021 synchronises after
                                     batch_isend_irecv) */
    bool p2p_scatter;              /* without sp, each TP rank sends 1/tp of
                                     a pipeline tensor and the receiver
                                     all-gathers it over its TP group
                                     (default true: Megatron-LM 2021's
                                     --scatter-gather-tensors-in-pipeline);
                                     false: every TP rank sends the whole
                                     tensor (Megatron-core's p2p) */
    pp_coll_algo dp_algo, tp_algo; /* default ring */
    pp_granularity gran;           /* of every collective (default
                                     stream: NCCL's pipelined steady
                                     state, a few flows per collective) */
    int dp_channels;               /* rings of a DP collective; 0 = the
                                     collective's default (one per NIC) */
    FILE *trace;                   /* Perfetto trace to write, or NULL */
    uint64_t seed;                 /* ECMP hashing */
} pp_step_config;

void pp_step_config_init(pp_step_config *c);
/* The software stack's choices for a step: pipeline sends (p2p_sync,
 * p2p_scatter), DP overlap, bucket and gradient reduction bytes.  Callers
 * override what an option or a plan decided after it. */
void pp_step_config_stack(pp_step_config *c, const pp_stack *s);

/* Where a stage's time went; the six parts add up to the iteration time
 * (for one stage of one replica: all replicas are alike). */
typedef struct pp_breakdown {
    double compute_s;         /* running kernels */
    double tp_comm_s;         /* blocked in TP collectives */
    double pp_comm_s;         /* waiting for a pipeline transfer in flight */
    double dp_comm_exposed_s; /* DP synchronisation not hidden */
    double bubble_s;          /* waiting for a stage that is still busy */
    double other_s;           /* optimizer step, embedding grad sync */
    double ep_comm_s;         /* blocked in MoE all-to-alls (ep > 1) */
    double cp_comm_s;         /* CP's K/V exchange beyond the attention
                                 it overlaps (cp > 1) */
    double host_s;            /* idle while the host issues kernels
                                 (the stack's host.kernel_issue) */
} pp_breakdown;

typedef struct pp_step_result {
    double iteration_time_s;
    double flops_iter;       /* F_iter with recomputation (hardware) */
    double model_flops_iter; /* without recomputation (MFU) */
    double tflops_per_gpu;   /* F_iter / (n x iteration_time), in
                                  TFLOP/s as the Megatron-LM table */
    double mfu;              /* model FLOPs / (n x time x peak) */
    int64_t gpus;
    pp_memory memory;        /* per GPU, the most loaded stage */
    double gpu_memory_bytes; /* HBM of the cluster's GPU */
    pp_schedule schedule;
    pp_breakdown total;   /* the mean over stages */
    pp_breakdown *stages; /* pp of them; owned (pp_step_result_fini) */
    size_t n_stages;
    /* Work done by the simulator. */
    uint64_t events, transfers, collectives;
    pp_flownet_stats net; /* zero at analytic fidelity */
} pp_step_result;

/* Simulates one iteration.  Checks the layout against the model and the
 * cluster (n = tp pp dp GPUs must exist; PP_EINPUT otherwise) and, with
 * check_memory, the memory per GPU against the GPU's HBM: a layout that
 * does not fit fails with PP_EINFEASIBLE and a message that gives the
 * memory needed, the HBM and the shortfall.  On success *out holds the
 * result; free it with pp_step_result_fini.  On failure *out is
 * untouched. */
int pp_step_simulate(const pp_step_config *cfg, pp_step_result *out,
                     pp_error *e);
void pp_step_result_fini(pp_step_result *r);

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_TRAIN_H */
