/*
 * step_int.h: private to sim/train/ (compute.c, cost.c, moe.c, schedule.c,
 * step.c, step_build.c).
 *
 * compute.c turns a model and a layout into lists of operations (a GEMM,
 * a memory-bound kernel, a TP collective, a "gradients ready" mark) with
 * their times; step.c runs those lists on the event engine in the order
 * schedule.c gives.
 */
#ifndef PODPLAN_STEP_INT_H
#define PODPLAN_STEP_INT_H

#include "podplan/train.h"

typedef enum {
    PP__OP_GEMM, /* compute: a (batched) GEMM */
    PP__OP_MEM,  /* compute: a memory-bound kernel */
    PP__OP_COMM, /* a TP collective over the stage's TP group */
    PP__OP_MARK  /* the weight gradients of `params` parameters are final
                     (once the last micro-batch passes): DP buckets;
                     group PP__GRP_EP: a layer's routed experts, reduced
                     over the expert data-parallel group */
} pp__op_kind;

typedef struct pp__op {
    const char *name; /* static string: trace span names */
    pp__op_kind kind;
    double flops;    /* GEMM */
    double bytes;    /* GEMM, MEM: HBM traffic; COMM: the buffer S */
    double time_s;   /* GEMM, MEM: roofline time with launch */
    pp_coll_op coll; /* COMM */
    double params;   /* MARK */
    /* COMM: the group it runs on (PP__GRP_TP unless said), and the
     * compute that runs while it does (CP's ring attention overlaps the
     * K/V exchange with the attention core: flops and overlap_s are that
     * compute's). */
    uint8_t group;
    double overlap_s;
    /* The kernels the framework launches for it, each costing the host
     * the stack's host.kernel_issue (1; a grouped GEMM one per group),
     * and whether the host first waits for the GPU to reach it (a
     * device-to-host synchronisation: the dropless MoE dispatch). */
    double kernels;
    bool sync;
    /* The CUDA-graph scope it belongs to (PP_GRAPH_*, 0 none): graphed
     * (pp_parallel.graphs), its kernels cost the host nothing beyond the
     * graph's one launch. */
    uint8_t scope;
} pp__op;

/* A collective's group: TP, CP (all the CP ranks; under cp_comm=a2a+p2p
 * the ring's outer level), EP, or CPA (a2a+p2p's all-to-all level). */
enum { PP__GRP_TP = 0, PP__GRP_CP, PP__GRP_EP, PP__GRP_CPA };

typedef struct pp__oplist {
    pp__op *v;
    size_t n, cap;
} pp__oplist;

void pp__oplist_fini(pp__oplist *l);
/* Puts ops [from, l->n) in graph scope sc; _add adds sc to their scopes
 * (an MoE op is in the moe scope and in its router's or preprocessing's
 * too). */
void pp__op_scope(pp__oplist *l, size_t from, uint8_t sc);
void pp__op_scope_add(pp__oplist *l, size_t from, uint8_t sc);
/* The kernels the host issues for op i of l under CUDA graphs `graphs`
 * (PP_GRAPH_*): its own, or for a graphed op its graph's one launch,
 * counted on the graph's first op. */
double pp__op_host_kernels(const pp__oplist *l, size_t i, uint8_t graphs);

/* What a list is built for. */
typedef struct pp__shape {
    const pp_model *m;
    const pp_parallel *p;
    const pp_gpu_profile *g;
    /* Which layer: 0 any (an MoE layer when the model has experts), 1 a
     * dense layer, 2 an MoE layer (step_build.c sets it per layer). */
    int kind;
} pp__shape;

/* Whether the layer a shape describes is an MoE layer. */
bool pp__shape_moe(const pp__shape *s);

/* compute.c's list builders, for moe.c: a GEMM, a memory-bound kernel,
 * a collective over a group (PP__GRP_*). */
void pp__op_gemm(const pp__shape *s, pp__oplist *l, const char *name,
                 double batch, double m, double n, double k);
/* A linear layer's GEMM, and its dgrad + wgrad, at the layout's number
 * format (dtype=fp8: the FP8 rate and the casts, as the dense MLP). */
void pp__op_lgemm(const pp__shape *s, pp__oplist *l, const char *name,
                  double m, double n, double k);
void pp__op_lgemm_bwd(const pp__shape *s, pp__oplist *l, const char *dname,
                      const char *wname, double m, double n, double k);
/* The same for a grouped linear layer: groups GEMMs of m rows each (an
 * MoE layer's local experts). */
void pp__op_glgemm(const pp__shape *s, pp__oplist *l, const char *name,
                   double groups, double m, double n, double k);
void pp__op_glgemm_bwd(const pp__shape *s, pp__oplist *l, const char *dname,
                       const char *wname, double groups, double m, double n,
                       double k);
/* A memory-bound op of `bytes` (one kernel); returned for callers that
 * set its kernel count. */
pp__op *pp__op_mem(const pp__shape *s, pp__oplist *l, const char *name,
                   double bytes);
/* recompute=layernorm's norm, run again in the backward before the
 * weight gradient of its consumer (nothing without it): an MoE layer's
 * router (cast 0), MLA's down projections (under FP8 their input is cast
 * again: `cast` elements). */
void pp__op_ln_recompute(const pp__shape *s, pp__oplist *l, double cast);
/* An atomic scatter-add of `bytes` of rows (pp_scatter_add_time_s). */
void pp__op_scatter_add(const pp__shape *s, pp__oplist *l, const char *name,
                        double bytes);
void pp__op_comm(pp__oplist *l, const char *name, pp_coll_op op, double bytes,
                 int group);

/* compute.c: a layer's shapes after the TP split, per micro-batch. */
typedef struct pp__dims {
    double b, sq, h, t, a, d, kvd, f, V;
    double q;  /* Q's and the attention output's width: a d */
    double dc; /* the attention core's width per head (head_dim, else d) */
    double sk; /* keys each query attends to: s (sq = s / cp) */
    double cp;
    double tok;   /* tokens of a GEMM: s b */
    double tn;    /* tokens of the norm/dropout regions: s b, / t with sp */
    double heads; /* attention heads on this GPU x b: bmm batch */
    double qkv_n; /* QKV output width on this GPU */
    double f_in;  /* MLP first GEMM's output width (x2 for SwiGLU) */
    double gb;    /* bytes per element a TE linear's input gathers in */
    bool tpc;     /* there is TP communication */
    bool sp;      /* sequence parallel (tp > 1) */
    bool swiglu;
    bool mla; /* multi-head latent attention: mla.c's projections */
} pp__dims;
pp__dims pp__dims_of(const pp__shape *s);

/* An op of `kind` named `name` appended to l, all else zero. */
pp__op *pp__op_push(pp__oplist *l, const char *name, pp__op_kind kind);
/* A GEMM input's FP8 cast of `elems` elements in g pieces, as the
 * layout's recipe casts it (compute.c's fp8_cast). */
void pp__op_fp8_cast(const pp__shape *s, pp__oplist *l, double g, double elems);

/* attn.c: QK-norm and the rotary kernel on Q and K (not MLA's), after
 * the QKV GEMM and before its backward. */
void pp__ops_qk_pos(const pp__shape *s, const pp__dims *x, pp__oplist *l,
                    bool bwd);
/* attn.c: the attention core forward and backward (FlashAttention or the
 * standard core; context parallelism's ring around it). */
void pp__ops_attn_fwd(const pp__shape *s, const pp__dims *x, pp__oplist *l);
void pp__ops_attn_bwd(const pp__shape *s, const pp__dims *x, pp__oplist *l);

/* moe.c: an MoE layer's FFN part (router, dispatch, experts, combine,
 * shared experts) forward and backward, after the layer's second norm;
 * and the parameters of an MoE layer on one GPU. */
void pp__ops_moe_fwd(const pp__shape *s, pp__oplist *l);
void pp__ops_moe_bwd(const pp__shape *s, pp__oplist *l);
double pp__moe_layer_params_gpu(const pp__shape *s);
/* Of those, the MoE block's: router, shared and local experts; and of
 * those the routed (local) experts', whose gradients are reduced over
 * the expert data-parallel group instead of the data-parallel one. */
double pp__moe_block_params_gpu(const pp__shape *s);
double pp__moe_expert_params_gpu(const pp__shape *s);

/* One layer's forward (fwd, with its TP collectives) and backward (bwd:
 * with the recomputation p->recompute asks for, then a MARK of the
 * layer's parameters).  Appended to *l. */
void pp__ops_layer_fwd(const pp__shape *s, pp__oplist *l);
void pp__ops_layer_bwd(const pp__shape *s, pp__oplist *l);
/* The first virtual stage's embedding (word + position, vocab-parallel)
 * and the last one's final norm, logits and cross-entropy. */
void pp__ops_embed_fwd(const pp__shape *s, pp__oplist *l);
void pp__ops_embed_bwd(const pp__shape *s, pp__oplist *l);
void pp__ops_head_fwd(const pp__shape *s, pp__oplist *l);
void pp__ops_head_bwd(const pp__shape *s, pp__oplist *l);
/* Multi-token prediction (pp_model.mtp_layers): a module's embedding,
 * norms and projection, and its pass through the shared output layer. */
void pp__ops_mtp_fwd(const pp__shape *s, pp__oplist *l);
void pp__ops_mtp_bwd(const pp__shape *s, pp__oplist *l, bool table);
void pp__ops_mtp_head_bwd(const pp__shape *s, pp__oplist *l);
/* A whole module as step_build.c runs it after the last layer (ops.c):
 * forward its embedding, norms and projection, a layer, the output
 * layer; backward the reverse (table: pp__ops_mtp_bwd's).  s->kind must
 * be pp__mtp_layer_kind's, the last layer's kind. */
void pp__ops_mtp_module(const pp__shape *s, pp__oplist *l, bool bwd,
                        bool table);
int pp__mtp_layer_kind(const pp_model *m);
double pp__mtp_params_gpu(const pp__shape *s);
double pp__mtp_embed_params_gpu(const pp__shape *s);
/* Parameters of one layer and of the embedding, on one GPU (/tp). */
double pp__layer_params_gpu(const pp__shape *s);
double pp__embed_params_gpu(const pp__shape *s);
double pp__head_params_gpu(const pp__shape *s); /* final norm, output */
/* The bytes of the activation a TP collective carries (s b h / cp, 2
 * bytes): what pp_layer_cost counts its collectives against (cost.c). */
double pp__act_bytes(const pp__shape *s);

/* ------------------------------------------------------------------------
 * schedule.c: the order in which one stage runs its tasks.
 * ---------------------------------------------------------------------- */
typedef struct pp__task {
    uint8_t bwd;   /* 0 forward, 1 backward */
    /* A forward run together with the backward after it (a2a_overlap's
     * combined 1F1B: their layers interleave, each one's all-to-alls
     * beside the other's compute). */
    uint8_t pair;
    int32_t chunk; /* model chunk on this GPU, 0..vp-1 */
    int32_t mb;    /* micro-batch */
} pp__task;

/* Fills tasks[0 .. 2*nmb*vp-1] for stage p of pp.  GPipe and 1F1B need
 * vp == 1; interleaved needs nmb % pp == 0 (Megatron-LM's rule).  pair:
 * Megatron-core's combined 1F1B (a2a_overlap): one more warm-up forward,
 * then each steady-state forward paired with the backward after it
 * (1F1B or interleaved only). */
int pp__schedule_tasks(pp_schedule kind, int32_t pp, int32_t p, int32_t vp,
                       int32_t nmb, bool pair, pp__task *tasks, pp_error *e);

/* mla.c: multi-head latent attention's projections, forward (down and
 * up), the up projections alone (forward and recompute=mla_up_proj), and
 * backward. */
void pp__ops_mla_fwd(const pp__shape *s, pp__oplist *l);
void pp__ops_mla_up_fwd(const pp__shape *s, pp__oplist *l);
void pp__ops_mla_bwd(const pp__shape *s, pp__oplist *l);

#endif
