/*
 * podplan/planner.h: the planner (`podplan plan`).
 *
 * Given a model and a cluster, the planner enumerates every parallel
 * layout Megatron-LM could launch (TP x PP x DP x micro-batch x
 * interleaving x sequence parallelism x recomputation x ZeRO x DP
 * overlap), drops those that break a divisibility rule or do not fit in
 * memory (counting each by its reason), scores the rest with a closed-form
 * estimator (microseconds each), simulates the best K with the training
 * step simulator (sim.h, pp_step_simulate) and ranks them by the simulated
 * figure.  The result can be written as a table, JSON, YAML or as launch
 * configurations (a Megatron-LM command line, NeMo 1.x YAML keys, a NeMo
 * 2.0 Python recipe, a DeepSpeed ds_config).  Depends on sim, models and
 * common.
 */
#ifndef PODPLAN_PLANNER_H
#define PODPLAN_PLANNER_H

#include "podplan/common.h"
#include "podplan/models.h"
#include "podplan/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Pins and exclusions ("--fix tp=8", "--exclude recompute=none").
 * ---------------------------------------------------------------------- */

/* The dimensions of the search; the names are the SPEC keys of
 * pp_parallel_parse plus "overlap" (DP overlap on|off).  dispatcher and
 * permute are not searched: the stack's choice, unless pinned. */
typedef enum {
    PP_PLAN_DIM_TP,
    PP_PLAN_DIM_PP,
    PP_PLAN_DIM_DP,
    PP_PLAN_DIM_MBS,
    PP_PLAN_DIM_GBS,
    PP_PLAN_DIM_VP,
    PP_PLAN_DIM_SP,         /* 0 off, 1 on */
    PP_PLAN_DIM_RECOMPUTE,  /* a pp_recompute */
    PP_PLAN_DIM_ZERO,       /* 0..3 */
    PP_PLAN_DIM_OVERLAP,    /* 0 off, 1 on */
    PP_PLAN_DIM_FIRST,      /* layers on the first stage, 0 an even share */
    PP_PLAN_DIM_LAST,       /* layers on the last stage, 0 an even share */
    PP_PLAN_DIM_CP,         /* context parallel */
    PP_PLAN_DIM_EP,         /* expert parallel (MoE models) */
    PP_PLAN_DIM_ETP,        /* expert tensor parallel (the degree in force) */
    PP_PLAN_DIM_DISPATCHER, /* 0 alltoall, 1 deepep (default: the stack's),
                               2 hybridep (pinned only) */
    PP_PLAN_DIM_PERMUTE,    /* 0 fused, 1 unfused (default: the stack's) */
    PP_PLAN_DIM_GRAPHS,     /* CUDA graphs, a PP_GRAPH_* mask (default 0;
                               pinned only, not searched) */
    PP_PLAN_DIM_FP8,        /* FP8 recipe, a pp_fp8 (default: the stack's;
                               pinned only: then every candidate is FP8) */
    PP_PLAN_DIM_OFFLOAD,    /* layers whose activations go to host memory
                               (default 0; pinned only: then pp 1 and no
                               recomputation) */
    PP_PLAN_DIM_A2A,        /* the MoE all-to-all overlap, 0 off, 1 on
                               (default off; pinned only: then every
                               candidate is one Megatron-core allows) */
    PP_PLAN_DIM_RANK_CAPACITY, /* the per-rank expert capacity in
                                  thousandths (default 0, none; pinned
                                  only, with dispatcher=hybridep) */
    PP_PLAN_DIM_DTYPE,         /* a pp_prec: bf16 and fp8 (where the stack and
                          GPU train in FP8) are searched; fp4 (NVFP4)
                          is pinned only, then every candidate is */
    PP_PLAN_DIM_FP8_ATTN,      /* FP8 attention, 0 off, 1 on (default off;
                                  pinned only: then every candidate is
                                  FP8 with it) */
    PP_PLAN_DIM_CP_COMM,       /* a pp_cp_comm, how CP exchanges K/V
                                  (searched where the model allows) */
    PP_PLAN_DIM_CP_A2A,        /* a2a+p2p's all-to-all level (searched:
                                  the divisors of cp it allows) */
    PP_PLAN_DIM__COUNT
} pp_plan_dim;

#define PP_PLAN_MAX_EXCLUDE 32

/* Plain data; zero it (pp_plan_filter_init) before use. */
typedef struct pp_plan_filter {
    bool fixed[PP_PLAN_DIM__COUNT];
    int64_t value[PP_PLAN_DIM__COUNT]; /* the pinned value */
    int64_t exclude[PP_PLAN_DIM__COUNT][PP_PLAN_MAX_EXCLUDE];
    int n_exclude[PP_PLAN_DIM__COUNT];
} pp_plan_filter;

void pp_plan_filter_init(pp_plan_filter *f);
const char *pp_plan_dim_name(pp_plan_dim d);
/* Adds "key=value[,key=value...]" to the pins (exclude false) or to the
 * exclusions (exclude true).  `what` starts messages ("--fix").  Pinning a
 * dimension twice to different values, an unknown key (with "did you
 * mean") or a bad value is PP_EUSAGE; f is untouched on failure. */
int pp_plan_filter_add(pp_plan_filter *f, const char *spec, bool exclude,
                       const char *what, pp_error *e);
/* Whether a value of a dimension passes the pins and exclusions. */
bool pp_plan_filter_allows(const pp_plan_filter *f, pp_plan_dim d, int64_t v);

/* ------------------------------------------------------------------------
 * Options.
 * ---------------------------------------------------------------------- */
typedef enum {
    PP_PLAN_OBJ_TIME,  /* iteration time (default) */
    PP_PLAN_OBJ_TRAIN, /* time to train on `tokens` (the same order as
                           TIME for one global batch; reported in days) */
    PP_PLAN_OBJ_COST,  /* dollars: per trained model with `tokens`, per
                           iteration without (cost.c documents the rate) */
    PP_PLAN_OBJ__COUNT
} pp_plan_objective;

/* Launch systems whose limits the search must respect. */
typedef enum {
    PP_PLAN_TARGET_ANY,       /* no limit */
    PP_PLAN_TARGET_MEGATRON,  /* ZeRO 0 or 1 (--use-distributed-optimizer) */
    PP_PLAN_TARGET_NEMO,      /* the same (distributed_fused_adam) */
    PP_PLAN_TARGET_DEEPSPEED, /* DeepSpeed's pipeline engine: ZeRO 2 and 3
                                 only without pipelining, no interleaving,
                                 no sequence parallelism, recomputation
                                 full or none, ranks tp,dp,pp */
    PP_PLAN_TARGET_NEMO2      /* NeMo 2.0 (MegatronStrategy): as NEMO,
                                 ranks tp,dp,pp */
} pp_plan_target;

/* What the cluster costs to own and run (cost.c).  Plain data, filled by
 * pp_plan_prices_get; a caller may override any figure. */
typedef struct pp_plan_prices {
    double capex_usd;          /* servers, GPUs, HCAs, switches, cables */
    double power_w;            /* the same at full load */
    double amortization_years; /* default 4 */
    double usd_per_kwh;        /* default 0.10 */
    double pue;                /* default 1.3 */
    double usd_per_gpu_hour;   /* derived: see pp_plan_prices_get */
    bool complete;             /* every price was in the catalogue */
    char missing[128];         /* what was not, when !complete */
} pp_plan_prices;

/* The default all-to-all budget: 5e7 transfers, a minute to a few of one
 * core at flow fidelity (bench/bench_moe: DeepSeek-V3's 16 micro-batches
 * of EP 64 on 2,048 GPUs start 4.6e7 and take about three minutes; EP 256
 * there starts 1.8e9, hours). */
#define PP_PLAN_A2A_BUDGET 5e7

typedef struct pp_plan_options {
    int64_t gpus;             /* 0: every count up to the cluster's that
                                  suits the batch */
    int64_t gbs;              /* global batch (sequences); 0: the GPU
                                  count (gpus, else the cluster's) */
    int top;                  /* layouts simulated (default 10); 0 ranks
                                  by the estimator alone */
    int show;                 /* candidates reported in full (default:
                                  max(top, 10)) */
    pp_fidelity fidelity;     /* of the simulations (default flow) */
    double a2a_budget;        /* a layout whose all-to-alls start more
                                  transfers per iteration than this is
                                  not simulated: it keeps its estimate
                                  and its place among the K goes to the
                                  next (default PP_PLAN_A2A_BUDGET; 0: no
                                  limit) */
    double memory_reserve;    /* fraction of HBM kept free (default 0.1) */
    bool allow_cross_node_tp; /* TP groups may span servers */
    bool uneven;              /* also try uneven pipeline splits: one or
                                  two chunks of layers more or fewer on the
                                  first and last stages (pins of first= or
                                  last= are tried without it) */
    pp_plan_objective objective;
    double tokens;          /* training tokens; 0: unknown */
    double deadline_days;   /* > 0 with tokens: layouts that train in
                               more days rank after every one that meets
                               it (so the cost objective no longer buys
                               its cheapness with months: it picks the
                               cheapest layout that finishes in time, or
                               the fastest when none does) */
    pp_optimizer optimizer; /* default adam-mixed */
    pp_plan_target target;  /* default any */
    pp_plan_filter filter;
    const pp_gpu_profile *profile; /* borrowed; NULL: the shipped one */
    const pp_plan_prices *prices;  /* borrowed; NULL: no cost figures
                                      (then OBJ_COST is PP_EUSAGE) */
    uint64_t seed;                 /* ECMP hashing of the simulations */
    char placement[3];             /* rank order, innermost first: "tpd" (TP,
                                  then PP, then DP: Megatron-LM's
                                  --use-tp-pp-dp-mapping) or "tdp"
                                  (Megatron-LM's and DeepSpeed's default
                                  order); all zero (the default): both are
                                  searched, each layout with PP and DP
                                  estimated (and maybe simulated) under
                                  each.  The DeepSpeed and NeMo 2.0 targets
                                  allow "tdp" only. */
    int jobs;                      /* simulations run at once (threads); 0:
                                  one per online CPU.  The result does not
                                  depend on it. */
    /* Called as each simulation ends, one call at a time (from the thread
     * that ran it), with the simulations ended so far, those planned and
     * the layout just simulated: for a progress display.  NULL: none.
     * It may not call back into the plan. */
    void (*progress)(void *ctx, size_t done, size_t total,
                     const pp_parallel *par);
    void *progress_ctx;
} pp_plan_options;

void pp_plan_options_init(pp_plan_options *o);

/* ------------------------------------------------------------------------
 * Candidates and the plan.
 * ---------------------------------------------------------------------- */

/* Why a candidate was dropped.  A rule checked on a partial layout (a TP
 * degree, a (TP, PP) pair) counts once for that partial layout, not once
 * per layout it would have expanded to. */
#define PP_PLAN_REJECT_MAP(XX)                                                 \
    XX(TP_CROSS_NODE, "tp-cross-node", "TP group would span servers")          \
    XX(TP_KV_HEADS, "tp-kv-heads", "TP does not divide the K/V heads")         \
    XX(GPUS, "gpus", "TP x PP does not divide the GPU count")                  \
    XX(CLUSTER, "cluster", "more GPUs than the cluster has")                   \
    XX(BATCH, "batch", "DP does not divide the global batch")                  \
    XX(VP_PP, "vp-pp", "interleaving needs PP > 2")                            \
    XX(VP_MICROBATCHES, "vp-microbatches",                                     \
       "interleaving needs the micro-batches to be a multiple of PP")          \
    XX(SPLIT, "split", "uneven pipeline split the stages cannot share")        \
    XX(TARGET, "target", "the launch format cannot express it")                \
    XX(PINNED, "pinned", "differs from a --fix value")                         \
    XX(EXCLUDED, "excluded", "an --exclude value")                             \
    XX(MEMORY, "memory", "does not fit in HBM less the reserve")               \
    XX(RECOMPUTE, "recompute-unneeded",                                        \
       "fits with one recompute module fewer, which is faster")                \
    XX(SIMULATION, "simulation", "the simulator rejected it")

typedef enum {
#define PP__XX(id, name, why) PP_PLAN_REJECT_##id,
    PP_PLAN_REJECT_MAP(PP__XX)
#undef PP__XX
        PP_PLAN_REJECT__COUNT
} pp_plan_reject;

const char *pp_plan_reject_name(pp_plan_reject r); /* "memory" */
const char *pp_plan_reject_why(pp_plan_reject r);  /* a phrase */

/* One feasible layout and its figures (plain data, read-only). */
typedef struct pp_plan_candidate {
    pp_parallel par;
    bool dp_overlap;
    char placement[3];         /* the rank order it was planned for ("tpd"
                                   or "tdp"); a layout without both PP and
                                   DP has one candidate, under the first
                                   placement searched (the orders give it
                                   the same ranks) */
    int64_t gpus;              /* tp x pp x dp */
    pp_memory memory;          /* per GPU, the first stage */
    double memory_limit_bytes; /* HBM less the reserve */
    /* The estimator. */
    double est_time_s;
    pp_breakdown est;
    /* Point-to-point transfers the MoE all-to-alls of one iteration
     * start (0 without expert parallelism): what a simulation costs. */
    double a2a_transfers;
    /* The simulation (simulated false: not simulated, or it failed). */
    bool simulated;
    double sim_time_s;
    pp_breakdown sim;
    /* What the ranking used: the simulation when there is one. */
    double iteration_time_s;
    pp_breakdown breakdown;
    double tflops_per_gpu; /* hardware FLOPs (with recompute) */
    double mfu;            /* model FLOPs over peak */
    double training_days;  /* NAN without tokens */
    double cost_usd;       /* NAN without prices */
    double score;          /* the objective, lower is better */
} pp_plan_candidate;

typedef struct pp_plan_stats {
    uint64_t considered; /* feasible + every rejection */
    uint64_t feasible;   /* scored by the estimator */
    uint64_t rejected[PP_PLAN_REJECT__COUNT];
    uint64_t simulated;         /* simulations that succeeded */
    uint64_t over_budget;       /* passed over for simulation by the
                                   all-to-all budget (a2a_budget) */
    double search_s;            /* wall clock: enumerate + estimate */
    double simulate_s;          /* wall clock of the simulations */
    int64_t gbs;                /* the global batch used */
    int64_t gpus_min, gpus_max; /* GPU counts among feasible layouts */
    char sim_error[256];        /* the first simulation failure, or "" */
} pp_plan_stats;

typedef struct pp_plan pp_plan;

/* Searches.  m, c and o are borrowed for the call only (the plan copies
 * what it keeps).  Returns 0 with *out set when at least one layout is
 * feasible.  PP_EUSAGE/PP_EINPUT for options that can never be met (a
 * --fix tp that does not divide the heads, --gpus beyond the cluster,
 * --objective cost without prices, a placement the target cannot launch),
 * with the option named.
 * PP_EINFEASIBLE when no layout fits: the message names the closest
 * candidate, how much memory it lacks and what would make it fit (full
 * recomputation, ZeRO, the smallest GPU count that fits on this cluster).
 * On failure *out is untouched. */
int pp_plan_search(const pp_model *m, const pp_cluster *c,
                   const pp_plan_options *o, pp_plan **out, pp_error *e);
void pp_plan_free(pp_plan *p); /* NULL is a no-op */

/* The feasible candidates, ranked best first: the simulated ones by their
 * simulated score, then the others by their estimated score.  Ties break
 * on the layout (smaller degrees first), so the order is deterministic. */
size_t pp_plan_count(const pp_plan *p);
const pp_plan_candidate *pp_plan_get(const pp_plan *p, size_t i);
const pp_plan_stats *pp_plan_stats_get(const pp_plan *p);
const pp_plan_options *pp_plan_options_get(const pp_plan *p);
const pp_model *pp_plan_model(const pp_plan *p);
const char *pp_plan_cluster_name(const pp_plan *p);
/* The index of the best-ranked candidate with this layout (under any
 * placement), or -1. */
long pp_plan_find(const pp_plan *p, const pp_parallel *par, bool overlap);

/* ------------------------------------------------------------------------
 * The estimator (estimate.c), exposed for the benchmark and the tests.
 * ---------------------------------------------------------------------- */
typedef struct pp_plan_estimator pp_plan_estimator;

/* Prepares the estimator for a model on a cluster: routes the links the
 * closed forms need (NVLink, NIC), loads the GPU profile (NULL: shipped).
 * m, c and profile must outlive it. */
int pp_plan_estimator_new(const pp_model *m, const pp_cluster *c,
                          const pp_gpu_profile *profile,
                          pp_plan_estimator **out, pp_error *e);
void pp_plan_estimator_free(pp_plan_estimator *x);
/* The rank placement the estimates assume, innermost first: "tpd" (the
 * default) or "tdp"; anything else is PP_EUSAGE. */
int pp_plan_estimator_placement(pp_plan_estimator *x, const char order[3],
                                pp_error *e);
/* The optimizer the estimates assume (its step's traffic,
 * pp_optimizer_bytes): adam-mixed by default.  PP_EUSAGE for an unknown
 * value. */
int pp_plan_estimator_optimizer(pp_plan_estimator *x, pp_optimizer opt,
                                pp_error *e);
/* Estimates one iteration of a valid layout (pp_parallel_validate passes):
 * the iteration time and where it goes.  The layer costs are cached per
 * (tp, mbs, sp, recompute). */
int pp_plan_estimate(pp_plan_estimator *x, const pp_parallel *par,
                     bool dp_overlap, double *time_s, pp_breakdown *out,
                     pp_error *e);

/* ------------------------------------------------------------------------
 * Prices (cost.c).
 * ---------------------------------------------------------------------- */

/* Prices a cluster from the catalogue entries it was built from
 * (pp_cluster_info: GPU, NIC, server, fabric switch and cable types).
 *
 *   capex = nodes (server + gpus_per_node gpu [unless the server price
 *           includes them] + hcas_per_node hca [likewise])
 *           + switches x switch + network cables x cable
 *   power = the same sum of watts (GPU TDP, server, HCA, switches)
 *   usd_per_gpu_hour = (capex / (amortization_years x 8760 h)
 *                       + power / 1000 x pue x usd_per_kwh) / gpus
 *
 * A price the catalogue lacks counts as 0 and is named in `missing`. */
int pp_plan_prices_get(const pp_cluster *c, double amortization_years,
                       double usd_per_kwh, double pue, pp_plan_prices *out,
                       pp_error *e);

/* ------------------------------------------------------------------------
 * Output (emit.c, launch.c).
 * ---------------------------------------------------------------------- */
typedef enum {
    PP_PLAN_FMT_TABLE,
    PP_PLAN_FMT_JSON,
    PP_PLAN_FMT_YAML,
    PP_PLAN_FMT_MEGATRON,
    PP_PLAN_FMT_NEMO,
    PP_PLAN_FMT_DEEPSPEED,
    PP_PLAN_FMT_NEMO2,
    PP_PLAN_FMT__COUNT
} pp_plan_format;

extern const char *const pp_plan_format_names[]; /* NULL-terminated */

/* Writes the plan.  timing false leaves out the wall-clock figures, so
 * that the same search gives byte-identical output.  The launch formats
 * (megatron, nemo, deepspeed, nemo2) describe the best candidate. */
int pp_plan_write(const pp_plan *p, pp_plan_format f, bool timing, FILE *fp,
                  pp_error *e);

/* The launch target a format restricts the search to (PP_PLAN_TARGET_ANY
 * for table, json and yaml). */
pp_plan_target pp_plan_format_target(pp_plan_format f);

/* Writes what a launch format assumed that its output cannot say, one line
 * each, every line starting with `prefix`: for deepspeed (whose JSON must
 * hold DeepSpeed's keys only) the rank order, the schedule, what the model
 * code must set; nothing for the other formats, whose comments say it.
 * Returns the number of lines written. */
int pp_plan_write_assumptions(const pp_plan *p, pp_plan_format f,
                              const char *prefix, FILE *fp);

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_PLANNER_H */
