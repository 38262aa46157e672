/*
 * podplan/whatif.h: what-if procurement studies (`podplan whatif`).
 *
 * A study file (studies/NAME.yaml, schema in studies/README.md) names a base
 * model and cluster, a token budget and a batch, and what to vary: cluster
 * fields by the dotted paths of `--set` (a cartesian product, `vary:`),
 * lists that change together (`zip:`) and named hardware bundles.  Each
 * variant is a cluster built with those overrides, planned (the planner's
 * best layout) or simulated at a fixed layout, then priced from the built
 * fabric (capital, power, amortisation or rental), with its expected
 * time-to-train under failures (per-component rates, checkpoints at the
 * Young/Daly interval, restarts, spare nodes).  Depends on planner, sim,
 * models and common.
 */
#ifndef PODPLAN_WHATIF_H
#define PODPLAN_WHATIF_H

#include "podplan/common.h"
#include "podplan/planner.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pp_whatif_study pp_whatif_study;

/* Loads and checks a study: every key, every list non-empty, zip lists
 * of equal length, units where a field has one.  Errors are PP_EINPUT
 * with "file:line:col: path: what" (PP_ENOENT for a missing file); *out
 * is untouched on failure. */
int pp_whatif_study_load(const char *path, pp_whatif_study **out,
                         pp_error *e);
void pp_whatif_study_free(pp_whatif_study *s); /* NULL is a no-op */

size_t pp_whatif_variant_count(const pp_whatif_study *s);
const char *pp_whatif_study_name(const pp_whatif_study *s);

/* ------------------------------------------------------------------------
 * Prices and failures (plain data; the study fills them, a caller may
 * override any figure).
 * ---------------------------------------------------------------------- */
typedef struct pp_whatif_prices {
    double amortization_years; /* capital spread over (default 4) */
    double usd_per_kwh;        /* default 0.10 */
    double pue;                /* default 1.3 */
    double rent_usd_per_gpu_hour; /* > 0: rent instead of owning */
    double spare_nodes;           /* bought, powered, idle (default 0) */
} pp_whatif_prices;

/* The fabric as built, item by item (counts and dollars).  Cables are
 * physical (bidirectional) links, host (HCA to leaf) and fabric (switch to
 * switch); each is priced as a cable with its two transceivers (the
 * catalogue's cable_usd). */
enum { PP_WI_LEAF, PP_WI_SPINE, PP_WI_CORE, PP_WI_LEVELS };
enum { PP_WI_CABLE_HOST, PP_WI_CABLE_FABRIC, PP_WI_CABLE_KINDS };

typedef struct pp_whatif_cost {
    double nodes, gpus, hcas; /* counts, spares included */
    double switches[PP_WI_LEVELS], cables[PP_WI_CABLE_KINDS];
    double server_usd, gpu_usd, hca_usd;         /* unit prices */
    double switch_usd, cable_usd;                /* unit prices */
    double servers_total_usd, gpus_total_usd, hcas_total_usd;
    double switches_total_usd[PP_WI_LEVELS];
    double cables_total_usd[PP_WI_CABLE_KINDS];
    double capex_usd;   /* the sum of the totals */
    double it_power_w;  /* GPUs, servers, HCAs, switches at full load */
    double facility_w;  /* it_power_w x PUE */
    /* Per trained model (over the expected time to train). */
    double capital_usd; /* amortised share (0 when renting) */
    double energy_usd;  /* 0 when renting (in the rate) */
    double rent_usd;    /* 0 when owning */
    double total_usd;
    double usd_per_gpu_hour; /* what the model's hours cost per GPU */
    bool gpu_swapped; /* the server's price included other GPUs: their
                         catalogue price was replaced by this GPU's */
} pp_whatif_cost;

/* Failure rates per component-hour, checkpoint and restart figures. */
typedef struct pp_whatif_failures {
    bool enabled;
    double gpu_per_h, hbm_per_h, nic_per_h, switch_per_h, host_per_h,
        software_per_h; /* software: per GPU-hour of the job */
    double checkpoint_bw_Bps;      /* aggregate write bandwidth */
    double checkpoint_node_Bps;    /* per node, caps the aggregate */
    double checkpoint_bytes_per_param; /* weights + optimizer states */
    double restart_s;              /* detect, reschedule, reload */
    double repair_s;               /* a node back without a spare */
} pp_whatif_failures;

/* Defaults: Llama 3 (Dubey et al. 2024, sec. 3.3.4, Table 5) rates, see
 * whatif/failures.c. */
void pp_whatif_failures_default(pp_whatif_failures *f);

/* What failures do to one run (failures.c). */
typedef struct pp_whatif_goodput {
    double mtbf_s;            /* of the whole job */
    double checkpoint_bytes;  /* weights + optimizer states */
    double checkpoint_s;      /* delta: one checkpoint write */
    double restart_s;         /* R: restart, plus repair without a spare */
    double interval_young_s;  /* sqrt(2 delta M) (Young 1974) */
    double interval_s;        /* Daly 2006's higher-order optimum, used */
    double ideal_s;           /* failure-free time to train */
    double expected_s;        /* with checkpoints, lost work, restarts */
    double goodput;           /* ideal_s / expected_s */
    double failures;          /* expected interruptions in expected_s */
    double p_no_spare;        /* P(more nodes in repair than spares) */
} pp_whatif_goodput;

/* Young's first-order optimum, sqrt(2 delta M). */
double pp_whatif_young(double delta_s, double mtbf_s);
/* Daly's higher-order optimum (FGCS 22, 2006, eq. 37): for delta < 2M,
 * sqrt(2 delta M) [1 + sqrt(delta/2M)/3 + (delta/2M)/9] - delta; else M. */
double pp_whatif_daly(double delta_s, double mtbf_s);
/* Daly's expected wall time (eq. 13) for solve time Ts, compute interval
 * tau, checkpoint delta, restart R, MTBF M:
 *   M e^{R/M} (e^{(tau+delta)/M} - 1) Ts / tau. */
double pp_whatif_expected_time(double ts_s, double tau_s, double delta_s,
                               double r_s, double mtbf_s);

/* Goodput of a run of ideal_s seconds on nodes x gpus_per_node GPUs with
 * hcas_per_node NICs and `switches` switches, a model of `params`
 * parameters, `spares` spare nodes. */
void pp_whatif_goodput_compute(const pp_whatif_failures *f, double ideal_s,
                               double nodes, double gpus_per_node,
                               double hcas_per_node, double switches,
                               double params, double spares,
                               pp_whatif_goodput *out);

/* Unit prices that replace the catalogue's (NAN: keep the catalogue's). */
typedef struct pp_whatif_unit_prices {
    double server_usd, gpu_usd, hca_usd, switch_usd, cable_usd;
} pp_whatif_unit_prices;

/* Prices a built cluster item by item (cost.c): the catalogue's prices,
 * replaced by those of `over` (NULL: none), for a run of `hours` on it;
 * p->spare_nodes more nodes are bought and powered too.  A server whose
 * price includes GPUs of another type (its catalogue `gpu:`) has their
 * price and TDP replaced by this cluster's GPU's.  PP_EINPUT when a price
 * is missing from both. */
int pp_whatif_cost_compute(const pp_cluster *c, const pp_whatif_prices *p,
                           const pp_whatif_unit_prices *over, double hours,
                           pp_whatif_cost *out, pp_error *e);

/* "$1,234,567" below ten million, "$12.3M", "$1.23B"; "-" for NaN. */
char *pp_whatif_money(double usd, char *buf, size_t len);

/* ------------------------------------------------------------------------
 * Running a study.
 * ---------------------------------------------------------------------- */
#define PP_WI_LABEL_MAX 200

/* One variant's result: plain data with no pointers, so that MPI ranks
 * can send it as bytes (dist.c). */
typedef struct pp_whatif_result {
    int32_t index;
    int32_t status;   /* 0 ok; 1 nothing fits (error says why) */
    char label[PP_WI_LABEL_MAX];
    char error[512];
    char parallel[160]; /* the layout's SPEC */
    int64_t gpus;       /* the layout's */
    int64_t cluster_gpus;
    double iteration_time_s, tflops_per_gpu, mfu;
    double ideal_days, expected_days;
    pp_whatif_cost cost;
    pp_whatif_goodput fail;
    double tokens_per_usd;
    double ratio;   /* iteration time over the first variant's */
    double speedup; /* the first variant's failure-free days over this
                       one's (throughput on the same tokens) */
    bool meets_deadline, within_budget, within_power;
    bool pareto; /* on the (expected time, cost) front */
} pp_whatif_result;

/* Runs variant i (0-based) into *r.  PP_EINPUT for an input error, located
 * in the study file (a --set path the cluster does not have, a value with
 * the wrong unit); a variant where nothing fits is status 1, not an
 * error. */
int pp_whatif_run(const pp_whatif_study *s, size_t i, pp_whatif_result *r,
                  pp_error *e);
/* After every variant ran: ratios to the first, the constraints and the
 * Pareto front over (expected time, total cost) among those meeting the
 * constraints. */
void pp_whatif_finish(const pp_whatif_study *s, pp_whatif_result *r,
                      size_t n);

typedef enum { PP_WI_FMT_TABLE, PP_WI_FMT_CSV, PP_WI_FMT_JSON } pp_wi_format;
extern const char *const pp_whatif_format_names[]; /* NULL-terminated */

int pp_whatif_write(const pp_whatif_study *s, const pp_whatif_result *r,
                    size_t n, pp_wi_format f, FILE *fp, pp_error *e);
/* One self-contained HTML page: inputs, the table, inline SVG charts. */
int pp_whatif_write_html(const pp_whatif_study *s, const pp_whatif_result *r,
                         size_t n, FILE *fp, pp_error *e);
/* The gnuplot script and data that --plot runs (gnuplot's svg terminal
 * writes to out_svg). */
int pp_whatif_write_gnuplot(const pp_whatif_study *s,
                            const pp_whatif_result *r, size_t n,
                            const char *out_svg, FILE *fp, pp_error *e);

/* ------------------------------------------------------------------------
 * Distribution over MPI ranks (dist.c; serial without PODPLAN_HAVE_MPI or
 * outside mpirun/srun).
 * ---------------------------------------------------------------------- */
/* Starts MPI when launched by mpirun or srun; *rank, *size (0, 1 when
 * serial). */
int pp_whatif_dist_init(int *argc, char ***argv, int *rank, int *size);
void pp_whatif_dist_fini(void);
/* Gathers every rank's results into r on rank 0: rank k ran the variants
 * i with i % size == k.  *rc (the first failing variant's code, by index)
 * and e are made the same on every rank. */
int pp_whatif_dist_gather(pp_whatif_result *r, size_t n, int rank, int size,
                          int *rc, pp_error *e);

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_WHATIF_H */
