/*
 * podplan/calibrate.h: measurements in, a fitted profile out.
 *
 * Four steps, one per group of functions below:
 *   import    nccl-tests, perftest, `podplan exec` JSON, GEMM sweep CSVs,
 *             iteration times (YAML, Megatron-LM logs) -> one measurement
 *             set in which every point keeps the file and line it came from;
 *   fit       network alpha-beta per link class, scope and algorithm
 *             (weighted least squares, a piecewise fit for the protocol
 *             knee), the GEMM and memory parameters of the GPU profile
 *             (nonlinear least squares through sim's own GEMM model), the
 *             training loop's framework efficiency (1-D fit through
 *             pp_step_simulate at analytic fidelity);
 *   write     the profile YAML that `simulate`, `plan` and `collective`
 *             take with --profile, with its provenance and a `network:`
 *             section (schema in calibrate/README.md);
 *   validate  prediction beside measurement, k-fold hold-out, gnuplot.
 *
 * GSL is used with its error handler off (pp_cal_gsl_init); its codes are
 * mapped to PP_E* with GSL's message.  Depends on sim, models and common.
 */
#ifndef PODPLAN_CALIBRATE_H
#define PODPLAN_CALIBRATE_H

#include "podplan/common.h"
#include "podplan/models.h"
#include "podplan/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Measurement points (plain data).
 * ---------------------------------------------------------------------- */
typedef enum {
    PP_CAL_COLL,  /* a collective at one buffer size (nccl-tests, exec) */
    PP_CAL_P2P,   /* a point-to-point transfer (perftest, exec sendrecv) */
    PP_CAL_GEMM,  /* one GEMM shape */
    PP_CAL_MEMBW, /* a memory-bound kernel moving `bytes` */
    PP_CAL_ITER,  /* a training iteration of a stated layout */
    PP_CAL__KINDS
} pp_cal_kind;

typedef enum {
    PP_CAL_SCOPE_UNKNOWN,
    PP_CAL_SCOPE_INTRA,
    PP_CAL_SCOPE_INTER
} pp_cal_scope;

#define PP_CAL_STR 64

typedef struct pp_cal_point {
    pp_cal_kind kind;
    int source;             /* index into the set's sources */
    int line;               /* 1-based line in that file; 0 for JSON */
    char where[PP_CAL_STR]; /* JSON path ("results[3]") or "" */
    /* network (COLL, P2P) */
    char op[PP_CAL_STR];      /* "allreduce", "write_bw", "send_lat" ...;
                                 GEMM: its name in its run ("qkv", "mlp
                                 fc1 wgrad": exec gemm's) or "" */
    char algo[PP_CAL_STR];    /* "ring", "tree", ... or "auto" (NCCL's pick) */
    char link[PP_CAL_STR];    /* nvlink|pcie|infiniband|roce|ethernet|unknown */
    char variant[PP_CAL_STR]; /* "out-of-place", "in-place", "" */
    pp_cal_scope scope;
    int64_t ranks, nodes; /* 0 = not stated */
    double bytes;         /* buffer per GPU (nccl-tests' size) */
    /* the measurement */
    double time_s;    /* per operation */
    double time_sd_s; /* stated spread, 0 = none */
    int64_t repeats;  /* iterations averaged, 0 = not stated */
    double bw_Bps;    /* as reported (busbw for collectives), 0 = none */
    /* GEMM */
    double m, n, k, batch;
    /* GEMM issued grouped (`exec gemm --streams S`): the batch's GEMMs as
     * separate calls over S streams, time_s the GPU's own time of one
     * group (its CUDA-graph replay); 0: one (strided-batched) call. */
    int64_t streams;
    /* GEMM aimed at all but this many SMs (`exec gemm --reserve-sms`);
     * 0: all.  Not fitted into the GEMM figures: it measures the
     * profile's compute_beside_comm (pp_cal_fit_beside). */
    int64_t sms_reserved;
    /* GEMM timed beside exec gemm's copy load (`--load-sms K --load-rate
     * R`): K SMs held by a kernel moving load_rate bytes per second
     * through HBM (load_rate_asked: R, -1 when it copied flat out); 0:
     * no load.  Not fitted into the GEMM figures: it measures the
     * profile's compute_beside_nccl (pp_cal_fit_beside_nccl). */
    int64_t load_sms;
    double load_rate_asked, load_rate;
    char dtype[16];  /* GEMM: "bf16", "fp8", ... "" = not stated */
    char device[16]; /* GEMM, MEMBW: "cuda" or "cpu" (host memory,
                                the CPU BLAS); "" = not stated (a GPU) */
    /* ITER */
    char model[PP_CAL_STR], cluster[PP_CAL_STR];
    char parallel[128];
    double tflops;       /* published TFLOP/s per GPU, when given as such */
    bool dp_overlap;     /* DP reduce overlapped with backward */
    double bucket_bytes; /* its bucket (0 = default) */
} pp_cal_point;

typedef struct pp_cal_source {
    char *path;      /* as given */
    char format[32]; /* "nccl-tests", "perftest", ... */
    char sha256[65]; /* of the file's bytes */
} pp_cal_source;

/* A measurement set: owns its points and sources. */
typedef struct pp_cal_set {
    pp_cal_point *pts;
    size_t n, cap;
    pp_cal_source *src;
    size_t n_src, cap_src;
} pp_cal_set;

void pp_cal_set_init(pp_cal_set *s);
void pp_cal_set_fini(pp_cal_set *s);
const char *pp_cal_kind_name(pp_cal_kind k);
const char *pp_cal_scope_name(pp_cal_scope s);
/* "file:line" (or "file:results[3]") of a point, into buf. */
const char *pp_cal_point_loc(const pp_cal_set *s, const pp_cal_point *p,
                             char *buf, size_t len);

/* Hints for formats that do not say everything (nccl-tests does not name
 * the link class; a Megatron-LM log does not name its layout).  Every
 * field may be NULL / 0. */
typedef struct pp_cal_hints {
    const char *link; /* link class of the measured path */
    const char *op;   /* collective, when the file does not say */
    const char *algo; /* NCCL_ALGO of the run (default "auto") */
    const char *model, *cluster, *parallel; /* Megatron-LM logs */
} pp_cal_hints;

/* Reads one file of any supported format (detected from its content, see
 * calibrate/README.md) and appends its points.  A measurement set written
 * by pp_cal_set_write is read back as is.  On a malformed input returns
 * PP_EINPUT with "file:line: what was expected" and leaves s unchanged;
 * PP_ENOENT/PP_EIO when the file cannot be read. */
int pp_cal_import(pp_cal_set *s, const char *path, const pp_cal_hints *h,
                  pp_error *e);
/* The same from memory (name is used in messages).  For the tests. */
int pp_cal_import_text(pp_cal_set *s, const char *name, const char *text,
                       size_t len, const pp_cal_hints *h, pp_error *e);

/* Writes the set as JSON (schema in calibrate/README.md). */
int pp_cal_set_write(const pp_cal_set *s, FILE *fp, pp_error *e);

/* ------------------------------------------------------------------------
 * Fits.
 * ---------------------------------------------------------------------- */
#define PP_CAL_MAX_PARAMS 12

typedef struct pp_cal_param {
    char name[PP_CAL_STR];
    double value, se; /* estimate and standard error (NAN: none) */
} pp_cal_param;

typedef struct pp_cal_fit {
    char what[128]; /* "allreduce/auto/infiniband/inter ranks=16" */
    pp_cal_param p[PP_CAL_MAX_PARAMS];
    size_t n_params;
    size_t n_points;   /* points used */
    double r2;         /* weighted R^2 (NAN when undefined) */
    double chi2_dof;   /* reduced chi^2 */
    double rel_rms;    /* rms relative residual */
    double knee_bytes; /* network: protocol knee, 0 = none */
    bool ill;          /* ill-conditioned or too few points */
    char advice[512];  /* what to measure to fix it ("" when fine) */
    size_t *idx;       /* points used (indices into the set), owned */
    double *resid;     /* relative residuals (pred/meas - 1), owned */
} pp_cal_fit;

/* The alpha-beta fit of one group of network points:
 *   t(S) = alpha + S / beta                                 (one line)
 *   t(S) = alpha_lo + S/beta_lo up to a knee, then the line above (knee)
 * by weighted least squares (gsl_multifit_wlinear).  Weights are 1/var,
 * var from the spread of repeated sizes (several points at one size, or a
 * stated time_sd_s; the noise is pooled across sizes as a relative
 * error), else a 2% relative error is assumed (stated in the fit's
 * advice).  The knee is kept when it lowers chi^2 by more than noise
 * could (calibrate/README.md). */
typedef struct pp_cal_netfit {
    char op[PP_CAL_STR], algo[PP_CAL_STR], link[PP_CAL_STR];
    pp_cal_kind kind;
    pp_cal_scope scope;
    int64_t ranks, nodes;
    double alpha_s, alpha_se, beta_Bps, beta_se;
    bool knee; /* the small-message line below */
    double alpha_lo_s, alpha_lo_se, beta_lo_Bps, beta_lo_se, knee_bytes;
    pp_cal_fit fit;
} pp_cal_netfit;

/* One alpha-beta for a collective and algorithm across rank counts,
 * from the algorithm's structure (calibrate/fit_ranks.c):
 *   t(n, S) = steps(n) alpha + bw(n) S / beta
 * ring allreduce 2(n-1), 2(n-1)/n; ring allgather/reducescatter (n-1),
 * (n-1)/n; rd allreduce: floor(log2 n) + 2 if n is not a power of two,
 * times S.  It predicts rank counts that were not measured. */
typedef struct pp_cal_rankfit {
    char op[PP_CAL_STR], algo[PP_CAL_STR], link[PP_CAL_STR];
    pp_cal_scope scope;
    int64_t ranks_min, ranks_max; /* the counts fitted */
    int n_counts;                 /* distinct counts */
    double alpha_s, alpha_se;     /* per step */
    double beta_Bps, beta_se;     /* per link */
    pp_cal_fit fit;
} pp_cal_rankfit;

typedef struct pp_cal_result {
    pp_gpu_profile profile; /* the base profile with fitted fields */
    bool gemm_fitted, mem_fitted, stack_fitted, beside_fitted;
    bool beside_nccl_fitted;
    pp_cal_fit gemm, mem, stack, beside, beside_nccl;
    pp_cal_netfit *net; /* owned */
    size_t n_net;
    pp_cal_rankfit *rank; /* owned: the rank models (with net) */
    size_t n_rank;
    char warnings[1024]; /* things the fits could not do, "" if none */
} pp_cal_result;

void pp_cal_result_init(pp_cal_result *r);
void pp_cal_result_fini(pp_cal_result *r);
void pp_cal_fit_fini(pp_cal_fit *f);

typedef struct pp_cal_fit_opts {
    const char *cluster;        /* for the GPU and, for ITER points that
                                    name none, their cluster */
    const pp_gpu_profile *base; /* NULL: the cluster GPU's shipped one */
    bool net, gemm, mem, stack; /* which fits to run (all by default) */
    const bool *use;            /* per point: false = held out (k-fold);
                                    NULL = all */
} pp_cal_fit_opts;

void pp_cal_fit_opts_init(pp_cal_fit_opts *o);

/* Runs the fits for which the set has points.  An ill-conditioned fit is
 * not an error: it is reported in its pp_cal_fit (ill, advice).  Returns
 * PP_EINPUT for points that cannot be used (an unknown model), PP_EFAIL
 * when GSL fails, with e filled; r is then partly filled, free it with
 * pp_cal_result_fini either way. */
int pp_cal_fit_all(const pp_cal_set *s, const pp_cal_fit_opts *o,
                   pp_cal_result *r, pp_error *e);

/* The single fits, for the tests and for callers with their own data. */
int pp_cal_fit_net(const pp_cal_set *s, const bool *use, pp_cal_netfit **out,
                   size_t *n_out, pp_error *e);
/* The rank models: one per (op, algo, link, scope) of COLL points whose
 * algorithm has one (pp_cal_rank_terms), over all their rank counts. */
int pp_cal_fit_net_ranks(const pp_cal_set *s, const bool *use,
                         pp_cal_rankfit **out, size_t *n_out, pp_error *e);
/* steps(n) and bw(n) of op/algo on n ranks; false when there is no model
 * (other ops and algorithms, n < 2). */
bool pp_cal_rank_terms(const char *op, const char *algo, int64_t n,
                       double *steps, double *bw);
/* t(n, S) of a rank model (NAN when n has no model). */
double pp_cal_rankfit_time(const pp_cal_rankfit *f, int64_t ranks,
                           double bytes);
/* GEMM: gemm.efficiency, gemm.k_half and the efficiencies of the tiles
 * the measured shapes select (gsl_multifit_nlinear on pp_gemm_time_s).
 * g is read for the starting point and updated on success. */
int pp_cal_fit_gemm(const pp_cal_set *s, const bool *use, pp_gpu_profile *g,
                    pp_cal_fit *f, pp_error *e);
/* compute_beside_comm from GEMMs timed both on all SMs and aimed at
 * fewer (`exec gemm --reserve-sms K`): for each K, the mean over the
 * shapes timed both ways (each at least 50 us on all SMs) of the time
 * with K reserved over the time without.  g updated when there is a
 * pair; f->n_params 0 (and advice) when there is none. */
int pp_cal_fit_beside(const pp_cal_set *s, const bool *use, pp_gpu_profile *g,
                      pp_cal_fit *f, pp_error *e);
/* compute_beside_nccl from GEMMs timed both alone and beside exec gemm's
 * copy load on K SMs (`exec gemm --load-sms K`, the load flat out or at
 * 1 TB/s and more; the attention's batched products left out), paired by
 * shape and name: for each K, the summed time of
 * the loaded GEMMs over the summed time of their twins alone (time-
 * weighted: what a layer's compute pays), measured_on_sms g->sms.  g
 * updated when there is a pair; f->n_params 0 (and advice) when there is
 * none. */
int pp_cal_fit_beside_nccl(const pp_cal_set *s, const bool *use,
                           pp_gpu_profile *g, pp_cal_fit *f, pp_error *e);
/* memory.efficiency and launch_overhead from MEMBW points. */
int pp_cal_fit_mem(const pp_cal_set *s, const bool *use, pp_gpu_profile *g,
                   pp_cal_fit *f, pp_error *e);
/* framework.efficiency from ITER points (cluster_default for points that
 * name no cluster).  g updated on success. */
int pp_cal_fit_stack(const pp_cal_set *s, const bool *use,
                     const char *cluster_default, pp_gpu_profile *g,
                     pp_cal_fit *f, pp_error *e);

/* Predicted iteration time of an ITER point with profile g (analytic
 * fidelity), and its measured time (seconds; from tflops via the
 * simulator's F_iter when given that way). */
int pp_cal_iter_predict(const pp_cal_point *p, const char *cluster_default,
                        const pp_gpu_profile *g, double *pred_s, double *meas_s,
                        pp_error *e);

/* ------------------------------------------------------------------------
 * Profiles.
 * ---------------------------------------------------------------------- */
typedef struct pp_cal_provenance {
    const pp_cal_set *set; /* inputs and their checksums */
    const char *cluster;
    const char *command; /* the command line, or NULL */
    bool plain;          /* provenance as comments, no network: a file
                                today's pp_profile_load accepts */
} pp_cal_provenance;

/* Writes the fitted profile as YAML (topologies/profiles/ schema plus
 * `network:` and `provenance:`).  The date is SOURCE_DATE_EPOCH when set,
 * else now (UTC). */
int pp_cal_profile_write(const pp_cal_result *r, const pp_cal_provenance *pv,
                         FILE *fp, pp_error *e);

/* The `network:` section of a profile (calibrate/README.md). */
typedef struct pp_cal_net_entry {
    char link[PP_CAL_STR]; /* nvlink|nvswitch|pcie|infiniband|roce|ethernet */
    pp_cal_scope scope;    /* intra|inter node */
    char op[PP_CAL_STR];   /* allreduce, ..., or p2p ops (write_bw) */
    char algo[PP_CAL_STR]; /* ring|tree|auto|... */
    int64_t ranks;         /* 0 = any */
    double alpha_s, beta_Bps;
    double alpha_lo_s, beta_lo_Bps, knee_bytes; /* 0 = no knee */
    double alpha_se, beta_se;
    int line; /* where it was in the file */
} pp_cal_net_entry;

typedef struct pp_cal_network {
    pp_cal_net_entry *v; /* owned */
    size_t n;
} pp_cal_network;

/* Loads the `network:` section of a profile (a YAML path).  A profile
 * without one gives n = 0.  Errors are located.  Free with
 * pp_cal_network_fini.  Read through sim's profile reader (the
 * simulator's collectives use the same entries, pp_coll_fit_find). */
int pp_cal_network_load(const char *path, pp_cal_network *out, pp_error *e);
void pp_cal_network_fini(pp_cal_network *n);
/* Loads a fitted profile: its GPU part through sim's pp_profile_load
 * (path may also be a name in topologies/profiles/), and its network
 * section into *net (may be NULL).  On failure outputs are untouched. */
int pp_cal_profile_load(const char *path, const pp_gpu_spec *gpu,
                        pp_gpu_profile *prof, pp_cal_network *net, pp_error *e);
/* t(S) of an entry: the small-message line up to the knee, the main
 * line above it. */
double pp_cal_net_time_s(const pp_cal_net_entry *x, double bytes);

/* ------------------------------------------------------------------------
 * Validation.
 * ---------------------------------------------------------------------- */
typedef struct pp_cal_vpoint {
    size_t idx;                            /* into the set */
    double measured_s, predicted_s, error; /* error = pred/meas - 1 */
    int fold;                              /* -1: no hold-out */
} pp_cal_vpoint;

typedef struct pp_cal_validation {
    pp_cal_vpoint *v; /* owned */
    size_t n;
    double mean_abs, max_abs;
    size_t skipped; /* points no fit covers */
} pp_cal_validation;

/* Predicts every point with result r (a profile's GPU part and network
 * fits).  With holdout k >= 2 the points are split into k folds (every
 * k-th point of each kind after a fixed shuffle, seed 1) and each fold is
 * predicted by a fit of the others (o gives what to fit).  */
int pp_cal_validate(const pp_cal_set *s, const pp_cal_result *r, int holdout,
                    const pp_cal_fit_opts *o, pp_cal_validation *out,
                    pp_error *e);
void pp_cal_validation_fini(pp_cal_validation *v);
/* Leave one rank count out: the rank model fitted on the collective
 * points of every other count (use: NULL = all points) predicts the
 * points measured on `held` ranks.  Points no model covers are counted
 * in skipped.  Free with pp_cal_validation_fini. */
int pp_cal_validate_ranks(const pp_cal_set *s, const bool *use, int64_t held,
                          pp_cal_validation *out, pp_error *e);
/* Draws measured vs predicted with gnuplot (a subprocess): PP_ENOSYS with
 * "gnuplot not found: apt-get install gnuplot-nox" when missing. */
int pp_cal_plot(const pp_cal_set *s, const pp_cal_validation *v,
                const char *svg_path, pp_error *e);

/* Turns GSL's abort-on-error handler off (idempotent; every pp_cal_ entry
 * point calls it). */
void pp_cal_gsl_init(void);

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_CALIBRATE_H */
