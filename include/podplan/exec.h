/*
 * podplan/exec.h: real runs on this machine and its peers (the exec layer).
 *
 * Where sim/ predicts, exec/ measures: a collective over TCP sockets or
 * RDMA verbs between processes started by torchrun, srun, mpirun or by
 * podplan itself (--np), a GEMM on cuBLAS or the CPU, a memory copy.
 * Figures are reported as nccl-tests reports them, so the same parsers
 * (calibrate/import_nccl.c) read both.
 *
 * Depends on models (the op/algorithm vocabulary, bus-bandwidth factors)
 * and common only; never on sim.
 */
#ifndef PODPLAN_EXEC_H
#define PODPLAN_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "podplan/common.h"
#include "podplan/models.h"
#include "podplan/vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Monotonic clock in seconds (CLOCK_MONOTONIC): every deadline in exec is
 * an absolute value of this clock. */
double pp_exec_now(void);

/* ------------------------------------------------------------------------
 * Launch: who am I, and the local launcher.
 * ---------------------------------------------------------------------- */

/* Where this process stands, from the launcher's environment (plain data). */
typedef struct pp_exec_world {
    int rank, nranks, local_rank;
    int local_size; /* ranks on this host: --np, or the launcher's
                       LOCAL_WORLD_SIZE / OMPI_COMM_WORLD_LOCAL_SIZE /
                       SLURM_NTASKS_PER_NODE; 0 unknown */
    const char *launcher; /* "torchrun", "srun", "mpirun", "np", "single" */
    bool use_mpi;         /* bootstrap with MPI_Allgather (mpirun, MPI build) */
    char master_addr[256]; /* TCP rendezvous: rank 0's address */
    int master_port;
    int listen_fd; /* rank 0 under --np: the rendezvous socket
                               inherited from the launcher; -1 otherwise */
} pp_exec_world;

/* Reads the launcher's variables: RANK/WORLD_SIZE/LOCAL_RANK (torchrun),
 * SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID (srun),
 * OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK (mpirun), with MASTER_ADDR and
 * MASTER_PORT for the rendezvous (required when nranks > 1 and MPI is not
 * used).  None of them set: one rank.  PP_EUSAGE on inconsistent or
 * malformed values (w untouched). */
int pp_exec_world_from_env(pp_exec_world *w, pp_error *e);

/* Called in each child of pp_exec_spawn_local with its world; returns
 * the child's exit code. */
typedef int (*pp_exec_rank_fn)(const pp_exec_world *w, void *ctx);

/* Forks np local ranks (127.0.0.1, a free port chosen here and handed to
 * rank 0 as an open socket), each calling fn and exiting with its return
 * value.  The children are in their own process group and die with the
 * parent (PR_SET_PDEATHSIG).  When one fails, the others get grace_s
 * seconds to fail on their own (so they can say which peer they lost),
 * then the group is killed.  Returns the worst exit code (a child killed
 * by a signal counts as 1), or 2 with e filled when nothing could be
 * started. */
int pp_exec_spawn_local(int np, pp_exec_rank_fn fn, void *ctx, double grace_s,
                        pp_error *e);

/* ------------------------------------------------------------------------
 * Collectives: `podplan exec collective`.
 * ---------------------------------------------------------------------- */

typedef enum {
    PP_EXEC_DT_FP32,
    PP_EXEC_DT_BF16,
    PP_EXEC_DT_FP16
} pp_exec_dtype;
typedef enum {
    PP_EXEC_RED_SUM,
    PP_EXEC_RED_MAX,
    PP_EXEC_RED_MIN
} pp_exec_redop;

/* nccl-tests' names: "float", "bfloat16", "half"; "sum", "max", "min". */
const char *pp_exec_dtype_name(pp_exec_dtype t);
const char *pp_exec_redop_name(pp_exec_redop op);
size_t pp_exec_dtype_size(pp_exec_dtype t);

/* The default of pp_exec_coll_opts.rd_max_bytes (--rd-max): up to this
 * many bytes per rank `--algo auto` picks recursive doubling for allreduce
 * (its log2(n) latency beats the ring's 2(n-1) steps while the bandwidth
 * term is small); above, the ring.  Under `--algo rd`, whole-buffer
 * recursive doubling runs up to it and Rabenseifner's algorithm above. */
#define PP_EXEC_RD_MAX_BYTES (64 * 1024)

/* Options of a run (plain data, caller-owned; pp_exec_coll_opts_init
 * fills the defaults). */
typedef struct pp_exec_coll_opts {
    pp_coll_op op;
    int algo; /* PP_ALGO_RING, PP_ALGO_RD, or -1 = auto */
    pp_exec_dtype dtype;
    pp_exec_redop redop;
    int root;
    size_t min_bytes, max_bytes; /* as nccl-tests counts the size */
    double step_factor;          /* > 1: multiply; used when step_bytes is 0 */
    size_t step_bytes;           /* > 0: add */
    int iters, warmup;
    bool check;            /* run once outside the timed loop and compare */
    const char *transport; /* "tcp" or "verbs" */
    int channels;          /* connections per peer */
    double timeout_s;      /* per wait and for the bootstrap */
    bool on_device;        /* --device cuda */
    bool reduce_on_device; /* --reduce-on cuda: with on_device, each staged
                              slice is reduced by a CUDA kernel, not the
                              CPU */
    size_t slice_bytes;    /* pipelining granularity of the ring; 0 = default */
    size_t rd_max_bytes;   /* see PP_EXEC_RD_MAX_BYTES (its default) */
    int agg_iters;         /* collectives per timed iteration (nccl-tests'
                              -m); the time reported is per collective */
    int average;           /* how the ranks' times combine (nccl-tests' -a):
                              0 rank 0's, 1 the mean, 2 the min, 3 the max */
} pp_exec_coll_opts;

void pp_exec_coll_opts_init(pp_exec_coll_opts *o);

/* One size: the figures nccl-tests prints, out-of-place then in-place,
 * plus the per-iteration statistics of the JSON output. */
typedef struct pp_exec_coll_side {
    double time_s; /* over ranks (opts.average; default the mean) of
                              (loop time / (iters * agg_iters)) */
    double algbw_Bps, busbw_Bps;
    int64_t wrong;              /* elements that differ from the expected value,
                              summed over ranks; -1 when not checked */
    double median_s, p99_s, cv; /* of the per-iteration time (the slowest
                                   rank's time in that iteration) */
    int *slowest; /* iters entries: the slowest rank per iteration */
} pp_exec_coll_side;

typedef struct pp_exec_coll_row {
    size_t bytes, count;       /* count: elements, as nccl-tests prints it */
    int root;                  /* -1 where the op has none */
    pp_coll_algo algo;         /* the algorithm used for this size */
    const char *impl;          /* static: how it ran, "ring", "rd" (whole-buffer
                              recursive doubling), "rabenseifner", "chain",
                              "pairwise" */
    pp_exec_coll_side side[2]; /* 0 out-of-place, 1 in-place */
} pp_exec_coll_row;

/* What rank 0 gets back (pp_exec_coll_result_free frees it). */
typedef struct pp_exec_coll_result {
    pp_exec_coll_opts opts; /* as run (transport string is static) */
    int nranks, nhosts;
    char **rank_host; /* nranks hostnames */
    int *rank_pid;
    int *rank_dev; /* CUDA device of each rank; -1: host */
    const char *launcher;
    const char *bootstrap; /* "mpi" (MPI_Allgather) or "rendezvous" (TCP) */
    pp_exec_coll_row *rows;
    size_t n_rows;
    int64_t wrong_total;  /* -1 when not checked */
    double avg_busbw_Bps; /* mean over rows, out-of-place */
} pp_exec_coll_result;

void pp_exec_coll_result_free(pp_exec_coll_result *r); /* NULL is a no-op */

/* Runs the sweep on this rank of world w.  Every rank calls it with the
 * same options.  On rank 0 *out receives the results (other ranks get
 * NULL).  Returns 0 when every rank finished and the check passed;
 * PP_EFAIL when a check found wrong values (rank 0 still gets *out);
 * PP_EPEER / PP_ETIMEOUT when a peer died or stalled, with e saying
 * "rank 2: allreduce ring step 3/6: recv from rank 1: connection closed";
 * PP_EUSAGE for options this build or world cannot run; PP_ENODEV for
 * --device cuda without a GPU. */
int pp_exec_coll_run(const pp_exec_world *w, const pp_exec_coll_opts *o,
                     pp_exec_coll_result **out, pp_error *e);

/* ========================================================================
 * GEMM and memory bandwidth (issue 13, part 1)
 * ===================================================================== */

/* Timing statistics of n samples, seconds.  Percentiles interpolate
 * linearly between the two nearest ranks (NumPy's default: rank
 * p (n - 1)), so the median of an even count is the mean of the middle
 * two. */
typedef struct pp_exec_stats {
    size_t n;
    double median, p10, p90;
    double mean, min, max;
    double cv; /* standard deviation / mean (population); 0 when n < 2 */
} pp_exec_stats;

/* Sorts samples[0..n-1] in place and fills *out.  Returns PP_EINVAL when
 * n is 0 or a sample is not finite (out untouched). */
int pp_exec_stats_compute(double *samples, size_t n, pp_exec_stats *out,
                          pp_error *e);
/* The p-quantile (0 <= p <= 1) of sorted[0..n-1], n > 0. */
double pp_exec_quantile(const double *sorted, size_t n, double p);

/* Parses a list of positive sizes for --m/--n/--k: items separated by
 * commas, each a number ("4096") or a range "lo:hi:xF" (multiply by F)
 * or "lo:hi:+S" (add S), hi included when reached.  Messages start with
 * `what` ("-m: ..."). Writes at most max values; returns PP_EUSAGE on bad
 * text and PP_ERANGE when more than max values result.  *n is untouched
 * on failure. */
int pp_exec_parse_dims(const char *text, const char *what, int64_t *out,
                       size_t max, size_t *n, pp_error *e);

typedef enum {
    PP_EXEC_CPU,  /* OpenBLAS cblas_sgemm, fp32 */
    PP_EXEC_CUDA, /* cuBLASLt */
    PP_EXEC__BACKENDS
} pp_exec_backend;

typedef enum {
    PP_GEMM_BF16, /* bf16 in/out, fp32 accumulate */
    PP_GEMM_FP16, /* fp16 in/out, fp32 accumulate */
    PP_GEMM_TF32, /* fp32 in/out, tf32 tensor cores */
    PP_GEMM_FP32, /* fp32, no tensor cores */
    PP_GEMM_FP8,  /* e4m3 inputs with scale pointers, bf16 out, cc >= 8.9 */
    PP_GEMM__DTYPES
} pp_gemm_dtype;

/* "cpu", "cuda" / "bf16", ... : NULL-terminated, for option parsing. */
extern const char *const pp_exec_backend_names[];
extern const char *const pp_gemm_dtype_names[];

/* Whether the cuda back-end can run here (built with CUDA and a device
 * found); when not, why (may be NULL) says what is missing. */
bool pp_exec_cuda_usable(char *why, size_t len);

typedef struct pp_exec_gemm_opts {
    pp_exec_backend backend;
    pp_gemm_dtype dtype;
    int warmup;  /* untimed runs first (default 10) */
    int iters;   /* timed runs, each one sample (default 100) */
    int algos;   /* cuda: heuristic candidates to try (default 8) */
    int threads; /* cpu: BLAS threads, 0 = the library's default */
    int device;  /* cuda: device ordinal */
    bool check;  /* spot-check a sample of C against a CPU reference */
    uint64_t seed;
    /* cuda, grouped issue: 0 runs the batch as one strided-batched call;
     * S >= 1 issues the batch's GEMMs as separate cuBLASLt calls spread
     * round-robin over S streams, forked from and joined to the timing
     * stream by events, as Transformer Engine's GroupedLinear issues an
     * MoE layer's experts (nvte_multi_stream_cublas_gemm, 4 streams).
     * Each call runs the heuristic's first candidate, as TE's does. */
    int streams;
    /* With streams: every call creates its descriptors and asks the
     * heuristic, then destroys them, as TE's cublas_gemm does; false
     * builds them once. */
    bool setup_per_call;
    /* cuda: K > 0 aims the GEMM at all but K of the device's SMs
     * (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET), as Transformer Engine does
     * when communication kernels take K SMs beside it; the K are left
     * idle here.  Not with streams. */
    int reserve_sms;
    /* cuda: K > 0 runs a communication-like load beside the timed GEMMs:
     * a copy kernel of K blocks of 512 threads on its own stream, as a
     * NCCL collective runs one block per channel, moving load_rate bytes
     * per second through HBM (read plus written; 0 holds its SMs without
     * traffic, < 0 copies as fast as it can).  It starts before the
     * warm-up and stops after the last timed run.  Not with streams. */
    int load_sms;
    double load_rate;
} pp_exec_gemm_opts;

/* Defaults as documented above; bf16 on cuda, fp32 on cpu. */
void pp_exec_gemm_opts_init(pp_exec_gemm_opts *o, pp_exec_backend b);

typedef struct pp_exec_gemm_result {
    pp_gemm_shape shape;
    pp_gemm_dtype dtype;
    pp_exec_backend backend;
    pp_exec_stats time; /* seconds per GEMM (per batched call) */
    double flops;       /* 2 batch m n k */
    double flops_per_s; /* flops / median time */
    int buffers;        /* input/output sets rotated (1 = none) */
    int algo_id;        /* cuBLASLt CUBLASLT_ALGO_CONFIG_ID, -1 cpu */
    int algos_tried;    /* cuda: heuristic candidates timed */
    char algo[96];      /* what ran, in words */
    int threads;        /* cpu: BLAS threads used */
    bool checked;       /* a spot check ran */
    double check_err;   /* its worst error / error bound (<= 1 good) */
    /* Grouped issue (opts.streams > 0); time is then per group. */
    int streams;
    bool setup_per_call;
    double issue_s; /* host time to issue one group onto an idle GPU
                     * (median of iters) */
    double graph_s; /* one group captured in a CUDA graph and replayed:
                     * the GPU's time without the host's (median) */
    int sms_reserved; /* opts.reserve_sms that ran (0: none) */
    int sm_target;    /* the SMs the GEMM was aimed at then */
    int load_sms;     /* opts.load_sms that ran (0: none) */
    double load_rate_asked; /* opts.load_rate */
    double load_rate;       /* what the load moved, bytes read and written
                             * per second over its whole run */
} pp_exec_gemm_result;

/* The options' back-end constraints: --streams, --reserve-sms and
 * --load-sms are cuda's, and the last two time one call at a time, not
 * a group over streams.  PP_EUSAGE (PP_EINVAL for a negative count) with
 * the flag named; pp_exec_gemm_run checks them too. */
int pp_exec_gemm_opts_check(const pp_exec_gemm_opts *o, pp_error *e);

/* Times one GEMM shape: random inputs (never zeros), o->warmup runs,
 * then o->iters timed runs; on cuda the best of the heuristic's
 * candidates (each timed briefly) is kept and then timed.  Inputs are
 * rotated among several buffer sets when one set would stay in the last
 * level cache.  A failed spot check returns PP_EFAIL with the worst
 * element named.  PP_ENODEV when the back-end is absent from the build or
 * the machine (the message says which); PP_ENOMEM when the buffers do
 * not fit.  *out is filled only on success. */
int pp_exec_gemm_run(const pp_exec_gemm_opts *o, const pp_gemm_shape *s,
                     pp_exec_gemm_result *out, pp_error *e);

/* The device a back-end runs on: name ("NVIDIA H100 80GB HBM3", or the
 * CPU model), compute capability (cuda), BLAS threads and config (cpu). */
typedef struct pp_exec_device {
    char name[128];
    int cc_major, cc_minor;
    int threads;
    char info[160]; /* cuda: driver/runtime/cuBLASLt versions; cpu: BLAS */
} pp_exec_device;

int pp_exec_device_info(pp_exec_backend b, int device, int threads,
                        pp_exec_device *out, pp_error *e);

/* Memory bandwidth, STREAM's definitions (McCalpin): copy c = a moves
 * 2 x size bytes, triad a = b + s c moves 3 x size (read + written,
 * write-allocate traffic not counted); memcpy (device: cudaMemcpy D2D,
 * host: memcpy) moves 2 x size. */
typedef enum {
    PP_MEMBW_COPY,
    PP_MEMBW_TRIAD,
    PP_MEMBW_MEMCPY,
    PP_MEMBW__KINDS
} pp_membw_kind;
extern const char *const pp_membw_kind_names[];

typedef struct pp_exec_membw_result {
    pp_membw_kind kind;
    pp_exec_backend device; /* PP_EXEC_CPU = host memory */
    size_t array_bytes;     /* each array */
    double bytes_moved;     /* per iteration */
    int threads;            /* host threads */
    pp_exec_stats time;     /* seconds per iteration */
    double bw_Bps;          /* bytes_moved / median time */
    double best_Bps;        /* bytes_moved / min time */
} pp_exec_membw_result;

/* Runs kind on arrays of array_bytes each (rounded down to 16 bytes) for
 * iters timed iterations after 2 warm-ups; host with `threads` threads
 * (>= 1), cuda on device `device`.  PP_ENODEV without CUDA; PP_ENOMEM
 * when the arrays cannot be allocated. */
int pp_exec_membw_run(pp_exec_backend where, pp_membw_kind kind,
                      size_t array_bytes, int iters, int threads, int device,
                      pp_exec_membw_result *out, pp_error *e);

/* Reference GEMM in double, the layout of pp_gemm_shape (A [m x k],
 * W [n x k], C [m x n], row-major, batches contiguous), for tests and
 * the spot checks. */
void pp_exec_gemm_ref(const float *a, const float *w, double *c, int64_t batch,
                      int64_t m, int64_t n, int64_t k);

/* C = A W^T on the CPU back-end (cblas_sgemm, per batch), same layout as
 * pp_exec_gemm_ref.  PP_ENODEV in a build without a CBLAS. */
int pp_exec_sgemm_cpu(const float *a, const float *w, float *c, int64_t batch,
                      int64_t m, int64_t n, int64_t k, pp_error *e);

/* Prints results as the CLI's table (also used by tools/gpucheck);
 * peak_flops 0 = unknown (no "% peak" column). */
void pp_exec_gemm_print(FILE *fp, const pp_exec_device *dev,
                        const pp_exec_gemm_result *r, size_t n,
                        double peak_flops);
void pp_exec_membw_print(FILE *fp, const pp_exec_membw_result *r, size_t n);

/* ===================================================================== */

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_EXEC_H */
