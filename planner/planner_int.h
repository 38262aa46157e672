/*
 * planner/planner_int.h: private to planner/.
 *
 * space.c walks the search space and applies the rules; estimate.c scores
 * a layout in closed form; search.c drives both, simulates the best and
 * ranks; cost.c prices the cluster; emit.c and launch.c write the result.
 */
#ifndef PODPLAN_PLANNER_INT_H
#define PODPLAN_PLANNER_INT_H

#include "podplan/planner.h"

#include <jansson.h>

/* ------------------------------------------------------------------------
 * The plan (opaque in planner.h).
 * ---------------------------------------------------------------------- */
struct pp_plan {
    pp_model model;
    char cluster_name[PP_NAME_MAX];
    pp_gpu_spec gpu; /* copied from the cluster's catalogue */
    int32_t gpus_per_node, cluster_gpus;
    pp_plan_options opt; /* copied; profile and prices point into
                                   the plan's own copies below */
    pp_gpu_profile profile;
    pp_plan_prices prices;
    bool has_prices;
    double peak_flops;       /* bf16 dense, for MFU */
    char placements[2][3];   /* the rank orders searched, in order */
    int n_placements;        /* 1 (pinned) or 2 */
    pp_plan_candidate *cand; /* ranked */
    size_t n, cap;
    pp_plan_stats st;
};

/* ------------------------------------------------------------------------
 * space.c: the walk over every layout.
 * ---------------------------------------------------------------------- */
typedef struct pp__space {
    const pp_model *m;
    int64_t gpus_per_node;
    int64_t cluster_gpus;
    int64_t gpus; /* 0: every count up to cluster_gpus */
    int64_t gbs;
    bool cross_node_tp;
    bool uneven;
    pp_plan_target target;
    const pp_plan_filter *filter;
    uint64_t *rejected; /* PP_PLAN_REJECT__COUNT counters, or NULL */
    /* The software stack's (profile.sw): FlashAttention for attn=auto;
     * when the stack was asked for, the recomputations it offers (bit
     * per mode, 0: all) and its highest ZeRO stage (-1: any). */
    bool flash;
    bool deepep;          /* the stack's MoE dispatcher routes as DeepEP's */
    bool hybridep;        /* ... and is HybridEP */
    bool permute_unfused; /* the stack permutes MoE tokens unfused */
    bool a2a;             /* the stack offers the MoE all-to-all overlap */
    bool fp8;    /* the stack and the GPU train in FP8: dtype searched */
    bool fp4;    /* ... and in NVFP4 (dtype=fp4, pinned only) */
    pp_fp8 fp8_recipe; /* the stack's FP8 recipe (fp8.recipe) */
    bool mxfp8;        /* the GPU runs MXFP8 GEMMs */
    bool fp8_attn;     /* the profile times FP8 attention (Blackwell's) */
    bool fp8_any_layout; /* its FP8 GEMMs take any layout (pp_gpu_spec) */
    uint32_t recompute_mask;
    const char *stack; /* its name, for messages */
    int zero_max;
    int zero_min; /* lowest ZeRO stage with dp > 1 (the optimizer's) */
    /* The recompute module sets a candidate may carry (PP_RECOMP_* sets,
     * 0 first): pp__space_recompute_menu fills them once. */
    uint8_t recompute_menu[12];
    size_t n_recompute_menu;
} pp__space;

/* plan's recompute dimension holds the base mode with its modules above
 * it: filter.c writes a pin so, space.c compares and reads it. */
static inline int64_t pp__recompute_pin(pp_recompute r, uint8_t mods) {
    return (int64_t)r | (int64_t)mods << 2;
}
static inline pp_recompute pp__pin_recompute(int64_t v) {
    return (pp_recompute)(v & 3);
}
static inline uint8_t pp__pin_mods(int64_t v) {
    return (uint8_t)(v >> 2);
}

/* Fills s->recompute_menu from the pins, the stack and the model. */
void pp__space_recompute_menu(pp__space *s);

/* Called for every layout that passes the rules (not yet the memory
 * check).  Returns 0 to go on, 1 to stop the walk, or a negative PP_E*. */
typedef int (*pp__space_fn)(void *ctx, const pp_parallel *p, bool overlap,
                            pp_error *e);

/* Walks the space in a fixed order (tp, pp, dp, mbs, vp, first, last, sp,
 * recompute, zero, the number format, overlap, each ascending).  Returns
 * 0, 1 when fn stopped it, or fn's error. */
int pp__space_walk(const pp__space *s, pp__space_fn fn, void *ctx, pp_error *e);

/* Whether some unit count of m (its layers, or with --uneven the
 * embedding, loss and MTP counted as layers) is divisible by n. */
bool pp__units_divide(const pp_model *m, int64_t n);

/* space_pins.c: checks pins against rules that no layout could meet (a
 * pinned tp that does not divide the heads, ...): PP_EUSAGE naming
 * "--fix". */
int pp__space_check_pins(const pp__space *s, pp_error *e);

/* space_moe.c: the cp degrees to try (out[0] = 1 unless pinned), the ep
 * degrees of an MoE model, and the etp values (0 = tp, or 1) for layout
 * p; each returns the count. */
size_t pp__space_cp_degrees(const pp__space *s, int64_t *out, size_t max);
size_t pp__space_ep_degrees(const pp__space *s, const pp_parallel *p,
                            int64_t *out, size_t max);
size_t pp__space_etp_degrees(const pp__space *s, const pp_parallel *p,
                             int64_t out[2]);

/* space_moe.c: Megatron-core's --moe-layer-freq for model m, into buf:
 * "" when every layer is MoE, the integer N for one in N, or the list
 * form "([0]*3+[1]*58)" with leading dense layers. */
void pp__moe_flags(const pp_model *m, const pp_parallel *q, char *buf,
                   size_t len);

/* Positive divisors of n in ascending order into out (at most max);
 * returns the count. */
size_t pp__divisors(int64_t n, int64_t *out, size_t max);

/* pp_plan_estimate, and in *a2a (when not NULL) the transfers one
 * iteration's MoE all-to-alls start under layout p (0 without expert
 * parallelism): what the simulation budget (pp_plan_options.a2a_budget)
 * counts, from the same layer costs. */
int pp__plan_estimate(pp_plan_estimator *x, const pp_parallel *p, bool overlap,
                      double *time_s, pp_breakdown *out, double *a2a,
                      pp_error *e);

/* ------------------------------------------------------------------------
 * simulate.c: the best `top` of plan->cand (ranked by the estimate)
 * simulated on pp__plan_jobs(jobs) threads; fills their sim fields, drops
 * those the simulator finds too large (counted), records the first other
 * failure in plan->st.sim_error.  Metrics are the caller's.
 * ---------------------------------------------------------------------- */
void pp__plan_simulate(pp_plan *plan, const pp_model *m, const pp_cluster *c,
                       int top, int jobs);
/* jobs, or the number of online CPUs when jobs <= 0. */
int pp__plan_jobs(int jobs);

/* ------------------------------------------------------------------------
 * search.c helpers used by emit.c.
 * ---------------------------------------------------------------------- */
/* The objective's name and unit ("iteration time", "s"). */
const char *pp__objective_name(pp_plan_objective o);
const char *pp__placement_name(const char order[3]);
/* "a100 (uncalibrated: published figures)" or "h100 (calibrated: <date>,
 * <source>)": which GPU profile the times rest on, for every output. */
const char *pp__plan_profile_note(const pp_plan *p, char *buf, size_t len);

/* ------------------------------------------------------------------------
 * emit.c: the JSON tree every structured format is written from.
 * ---------------------------------------------------------------------- */
json_t *pp__plan_json(const pp_plan *p, bool timing);
/* A short reason candidate i loses to candidate 0 ("bubble +1.2 s, TP
 * comm +0.3 s"), into buf. */
const char *pp__plan_why(const pp_plan *p, size_t i, char *buf, size_t len);

/* launch.c: the launch formats' shared helpers (each documented there)
 * and the Megatron-LM and DeepSpeed formats; launch_nemo.c: NeMo's. */
const char *pp__graph_impl(const pp_parallel *q);
const char *pp__fp8_recipe(const pp_parallel *q);
const char *pp__cp_comm_type(const pp_parallel *q);
bool pp__cp_levels(const pp_parallel *q);
bool pp__fp8_delayed(const pp_parallel *q);
char *pp__graph_scope_list(const pp_parallel *q, const char *sep,
                           const char *qu, char *buf, size_t len);
void pp__launch_header(const pp_plan *p, pp_plan_format f, FILE *fp,
                       const char *cmt);
int64_t pp__train_iters(const pp_plan *p);
void pp__nodes_of(const pp_plan *p, int64_t gpus, int64_t *nodes, int64_t *per);
bool pp__use_fp16(const pp_plan *p);
int64_t pp__ffn_of(const pp_model *m);
int pp__write_megatron(const pp_plan *p, FILE *fp, pp_error *e);
/* How NeMo's formats spell a TransformerConfig field: NeMo 1's YAML
 * ("  key: v", true/false, bare strings) or NeMo 2.0's Python arguments
 * ("    key=v,", True/False, quoted strings; py). */
typedef struct pp__kv_style {
    const char *ind, *eq, *end, *yes, *no, *qt;
    bool py;
} pp__kv_style;
extern const pp__kv_style pp__nemo_yaml, pp__nemo_py;
/* One TransformerConfig field in a style's syntax (launch_nemo.c): a
 * value printed as it stands, a boolean, or a string in the style's
 * quotes. */
void pp__kv_field(FILE *fp, const pp__kv_style *st, const char *key,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void pp__kv_flag(FILE *fp, const pp__kv_style *st, const char *key, bool b);
void pp__kv_text(FILE *fp, const pp__kv_style *st, const char *key,
                 const char *v);
/* launch_moe.c: the MoE arguments of the Megatron-LM and NeMo formats
 * (nothing for a dense model). */
void pp__megatron_moe(const pp_plan *p, FILE *fp);
void pp__nemo_moe(const pp_plan *p, FILE *fp, const pp__kv_style *st);
int pp__write_nemo(const pp_plan *p, FILE *fp, pp_error *e);
int pp__write_deepspeed(const pp_plan *p, FILE *fp, pp_error *e);
int pp__write_nemo2(const pp_plan *p, FILE *fp, pp_error *e);

/* launch_moe.c: one pretrain_gpt.py argument line, indented and ended
 * with a continuation, as every Megatron-LM argument is written. */
void pp__megatron_arg(FILE *fp, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* launch_rope.c: the model's positions and QK-norm as Megatron-LM's
 * arguments (after --position-embedding-type) or as TransformerConfig's
 * fields in a NeMo syntax; pp__rope_note writes, as the last line of
 * format f's launch header, the comment saying what the format cannot set
 * (nothing when it can set everything). */
void pp__megatron_rope_args(const pp_model *m, FILE *fp);
void pp__nemo_rope_fields(const pp_model *m, FILE *fp, const pp__kv_style *st);
void pp__rope_note(const pp_model *m, pp_plan_format f, FILE *fp,
                   const char *cmt);

#endif
