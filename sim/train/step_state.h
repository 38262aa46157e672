/*
 * step_state.h: private to sim/train/step.c and sim/train/step_build.c, the state of
 * one simulated training iteration (step.c's top comment says what runs).
 * step_build.c builds it (programs, placement, mirrors) and reads the
 * results; step.c runs the actors on the event engine.
 */
#ifndef PODPLAN_STEP_STATE_H
#define PODPLAN_STEP_STATE_H

#include "step_int.h"

/* Parameters are gathered (ZeRO) in PP_PARAM_GATHER_BYTES; gradients are
 * synchronised in cfg->grad_bytes per parameter (PP_GRAD_SYNC_BYTES by
 * default, as in models/comm.c); both in models.h. */
/* Generic models: their backward is cut into this many equal parts, each
 * making 1/K of the gradients ready (for buckets). */
#define GENERIC_PARTS 8

/* ------------------------------------------------------------------------
 * Programs.
 * ---------------------------------------------------------------------- */
enum {
    IT_COMPUTE,
    IT_COLL,
    IT_MARK,
    IT_ZG,   /* ZeRO-3 (zero3.c): a layer's weights all-gathered, x params */
    IT_OFFL, /* waiting t seconds for an offloaded layer's activations */
    /* a2a_overlap's paired programs (step_pair.c): an EP all-to-all
     * started without waiting (x bytes), and the wait for it. */
    IT_ASTART,
    IT_AWAIT
};

typedef struct item {
    uint8_t kind;
    uint8_t coll;      /* pp_coll_op */
    const char *label; /* trace span */
    double t;          /* compute seconds */
    double x;          /* COLL: bytes S; MARK: parameters */
    uint8_t grp;       /* COLL: PP__GRP_TP, _CP (t: overlapped compute), _EP */
    uint8_t sync;      /* the host waits for the GPU before issuing it */
    double h;          /* host seconds to issue its kernels */
} item;

typedef struct program {
    item *it;
    size_t n, cap;
} program;

enum {
    ST_IDLE, /* between states (no time passes here) */
    ST_COMPUTE,
    ST_TP,      /* in a TP collective */
    ST_WAIT,    /* for a pipeline input */
    ST_SEND,    /* for its own pipeline send (p2p_sync) */
    ST_GATHER,  /* all-gathering a received input over its TP group */
    ST_DP,      /* for the DP synchronisation after its last task */
    ST_DPMB,    /* for a micro-batch's gradient reduction (ZeRO >= 2) */
    ST_BARRIER, /* for the other stages */
    ST_EMB,     /* embedding gradient AllReduce */
    ST_OPT,     /* optimizer step */
    ST_ZAG,     /* ZeRO parameter AllGather */
    ST_DONE,
    ST_EP,     /* in an MoE all-to-all (sim/train/step_group.c) */
    ST_CP,     /* in CP's K/V exchange after the overlapped compute */
    ST_HOST,   /* idle until the host has issued the next kernels */
    ST_OFFLOAD /* for activations moving to or from host memory */
};

typedef struct msg {
    double t_send, t_arr;
    int32_t pending;
    int32_t src; /* sending stage */
} msg;

/* Gradient buckets on one communicator, which runs its collectives in
 * order (NCCL): the dense gradients over the DP group, or an MoE
 * model's routed experts' over the expert data-parallel group (the
 * ranks holding the same experts: tp cp dp / (ep etp) of them).  Two
 * communicators run side by side, as Megatron-core's two buffers'. */
enum { DPQ_DENSE, DPQ_EXPERT, DPQ__COUNT };

typedef struct dp_queue {
    double pend; /* gradients ready, not yet in a bucket, bytes */
    double *q;   /* buckets waiting, bytes */
    size_t qh, qt, qcap;
    int32_t pending; /* collectives of the running bucket */
} dp_queue;

typedef struct stage {
    int32_t p;
    pp__task *tasks;
    int32_t n_tasks, cur;
    int32_t *last_bwd;   /* [vp] index of each chunk's final backward */
    const program *prog; /* the running task's, or NULL */
    size_t ip;
    bool final_bwd; /* the running task is a chunk's last bwd */
    bool gathered;  /* the next task's input is gathered */
    bool zgathered; /* ZeRO-3: the next task's weights are */
    int state;
    double t_state;
    int32_t wait_msg, send_msg;
    int32_t pending; /* collectives in flight */
    double t_task0;
    pp_breakdown bd;
    /* DP: the dense gradients' buckets and the routed experts' (an MoE
     * model), each on its own communicator. */
    dp_queue dq[DPQ__COUNT];
    bool tasks_done;
    bool dp_wait;      /* ZeRO >= 2: the reductions of the backward
                                just run end before the next task */
    double params;     /* on this GPU */
    double eparams;    /* of those, the routed experts' (DPQ_EXPERT) */
    double opt_params; /* what its optimizer updates (ZeRO shard) */
    /* ZeRO-3 per-layer gathers (zero3.c): in the running program, the
     * gathers, how many are issued, the next to use, the one waited for,
     * and per gather the collectives in flight (-1: not issued). */
    int32_t zn, zissued, znext, zwait, zcap;
    int32_t *zpend;
    /* ZeRO-1/2 with the stack's overlap_param_gather: the previous
     * step's parameter all-gather, chunk by chunk at the start of this
     * one: chunks arrived, collectives of the one in flight. */
    int32_t pag_ready, pag_pending;
    double t_done;
    /* When the host will have issued every kernel up to the running
     * item: the GPU cannot finish the item before (step.c). */
    double host_t;
    /* a2a_overlap: the running program is a pair (two tasks end with
     * it); collectives of its all-to-all in flight (IT_ASTART), and
     * whether the stage waits for them (IT_AWAIT). */
    bool in_pair;
    int32_t ep_async;
    bool ep_waiting;
    /* The running compute item (step.c): it runs comp_fac times slower
     * than alone while communication kernels share the GPU with it (its
     * own all-to-all under a2a_overlap, its DP collectives' NCCL
     * kernels), and is re-timed when they start or end: its timer, its
     * work left in seconds alone as of comp_t0, and that factor. */
    bool comp_on;
    pp_timer comp_timer;
    double comp_alone, comp_t0, comp_fac;
} stage;

typedef struct step {
    const pp_step_config *cfg;
    const pp_model *m;
    const pp_parallel *par;
    const pp_cluster *c;
    pp_gpu_profile prof;
    /* a2a_overlap: compute beside the all-to-all's kernels takes this
     * many times as long (the stack's moe.overlap_sms for the
     * dispatcher, priced by pp_profile_a2a_beside; 1: none). */
    double beside;
    /* Compute beside c of the stage's DP collectives' NCCL kernels (a
     * parameter gather and a bucket on each queue) takes beside_dp[c]
     * times as long: the profile's compute_beside_nccl at c times the
     * stack's collectives.dp_sms, read once here; [0] is 1. */
    double beside_dp[DPQ__COUNT + 2];
    pp_sim *sim;
    pp_engine *eng;
    /* dp here counts the replicas of the simulation: dp x cp (the CP
     * ranks of a replica run the same program; their gradients are
     * reduced with the DP ones, as Megatron-core's dp-cp group does);
     * replica d' is DP rank d' / cp, CP rank d' % cp. */
    int32_t tp, pp, dp, vp, V, nmb, cp;
    /* cp_comm=a2a+p2p: the CP ranks of its all-to-all level (cp_a2a); 1
     * otherwise. */
    int32_t cp_a2a;
    int32_t *dev;       /* [(d pp + p) tp + t] */
    program *fwd, *bwd; /* [V] */
    /* [V x V] a forward of chunk vf run with a backward of chunk vb
     * (a2a_overlap), built when first needed (step_pair.c). */
    program **pairs;
    double *vparams;    /* [V] parameters of each virtual stage */
    double *veparams;   /* [V] of those, the routed experts' */
    /* The expert data-parallel group's size (1: the experts' gradients
     * need no reduction), and the groups a stage has: ep x etp. */
    int32_t edp, n_edp;
    char (*labels)[32];
    size_t n_labels;
    stage *st;
    msg *msgs;
    int32_t **tpm; /* per stage: replicas mirroring its TP group */
    int32_t *n_tpm;
    int32_t **ppm; /* per stage p: the link p -> (p+1) % pp */
    int32_t *n_ppm;
    double act_bytes; /* 2 s b h */
    double p2p_bytes; /* what each TP rank sends between stages */
    bool gather;      /* receivers all-gather (tp > 1, no sp) */
    int32_t barrier, emb_ready, emb_pending;
    bool emb_sync;
    bool pag; /* ZeRO-1/2 parameter all-gather under the next forward */
    bool mb_reduce; /* ZeRO >= 2: every backward reduces */
    bool z3_layer;  /* ZeRO-3 as the stack implements it (zero3.c) */
    double emb_bytes;
    double host_k; /* host seconds per kernel launched (0: not modelled) */
    /* Activation offloading (offload=): one layer's activations of one
     * micro-batch, and the rate they move at to and from host memory. */
    double off_bytes, off_Bps;
    int failed;
    pp_error err;
    uint64_t transfers, collectives;
    int32_t *grp; /* scratch: a DP or embedding group */
} step;

#define D(S, t, p, d) ((S)->dev[((int64_t)(d) * (S)->pp + (p)) * (S)->tp + (t)])

enum {
    K_COMPUTE = 1,
    K_TP,
    K_FLOW,
    K_GATHER,
    K_DP,  /* a dense gradient bucket's collective */
    K_EDP, /* an expert gradient bucket's */
    K_EMB,
    K_OPT,
    K_ZAG,
    K_Z3,
    K_Z3L,
    K_GRP,  /* a CP or EP collective (counts down st->pending) */
    K_PAG,  /* a chunk's overlapped ZeRO parameter all-gather */
    K_HOST, /* the host has issued the running item's last kernel */
    K_EPA   /* an IT_ASTART's collective (counts down st->ep_async) */
};
#define ARG(k, i) ((uint64_t)(k) << 56 | (uint64_t)(i))
#define ARG_K(a) ((int)((a) >> 56))
#define ARG_I(a) ((int64_t)((a) & (((uint64_t)1 << 56) - 1)))

/* step_group.c: a CP or EP collective of stage st's item `it` (all
 * groups of the stage: every replica's, so that they contend); the stage
 * goes on when they (and a CP item's overlapped compute) are done. */
void pp__step_group_coll(step *S, stage *st, const item *it);
/* step_group.c: DP group j of stage p's queue q (DPQ_*) into g: for the
 * dense gradients TP rank j's DP group (j < tp), for the experts' the
 * ranks holding expert slice j = e etp + et (j < n_edp); returns its
 * size. */
size_t pp__step_dp_group(const step *S, int32_t p, int q, int32_t j,
                         int32_t *g);
/* step.c, for step_group.c. */
void pp__step_enter(step *S, stage *st, int state);
void pp__step_run(step *S, stage *st);
/* The compute a collective overlaps is done (an engine event): the stage
 * runs on if the collective is too, else waits in state `exposed` for
 * what is left of it. */
void pp__step_overlap_end(step *S, stage *st, int exposed);
/* A communication kernel of the stage started or ended (its IT_ASTART
 * all-to-all, a DP collective): the running compute item runs the rest
 * of its work at the new factor. */
void pp__step_comm_changed(step *S, stage *st);
int pp__step_coll(step *S, pp_coll_op op, pp_coll_algo algo, double bytes,
                  const int32_t *g, size_t n, int channels, uint64_t arg);

/* step_group.c: IT_ASTART's all-to-all, started on every EP group of
 * the stage; it counts down st->ep_async and resumes a stage waiting in
 * IT_AWAIT. */
void pp__step_ep_async(step *S, stage *st, const item *it);
void pp__step_ep_async_done(step *S, stage *st);
/* step_pair.c: the program of a forward of chunk vf paired with a
 * backward of chunk vb (a2a_overlap), and freeing them. */
const program *pp__step_pair_program(step *S, int32_t vf, int32_t vb);
void pp__step_pairs_free(step *S);

/* step_build.c */
void pp__prog_push(program *pr, item it);
void pp__step_build(step *S);
double pp__step_stage_params(step *S, int32_t p);
void pp__step_mirrors(step *S, int32_t a, int32_t b, int32_t **out,
                      int32_t *n_out);
/* step.c: starts every stage (then run the engine), and names states. */
void pp__step_start(step *S);
extern const char *const pp__step_state_names[];
/* step.c, for zero3.c: a DP-channel collective and leaving a wait (idle,
 * then run on); pp__step_enter above. */
int pp__step_dp_coll(step *S, pp_coll_op op, double bytes, const int32_t *g,
                     size_t n, uint64_t arg);
void pp__step_resume(step *S, stage *st);
/* zero3.c: a task's program starts (issues the first gathers), an IT_ZG
 * item is reached (returns 1 when the stage must wait), a gather's
 * collective ends.  stage.zpend is freed with the stage (step_build.c). */
void pp__z3_task_start(step *S, stage *st);
int pp__z3_item(step *S, stage *st);
void pp__z3_done(step *S, int64_t arg_i);

#endif
