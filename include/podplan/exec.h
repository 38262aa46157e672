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

#include "podplan/common.h"
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
    const char *launcher;   /* "torchrun", "srun", "mpirun", "np", "single" */
    bool use_mpi;           /* bootstrap with MPI_Allgather (mpirun, MPI build) */
    char master_addr[256];  /* TCP rendezvous: rank 0's address */
    int master_port;
    int listen_fd;          /* rank 0 under --np: the rendezvous socket
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

typedef enum { PP_EXEC_DT_FP32, PP_EXEC_DT_BF16, PP_EXEC_DT_FP16 } pp_exec_dtype;
typedef enum { PP_EXEC_RED_SUM, PP_EXEC_RED_MAX, PP_EXEC_RED_MIN } pp_exec_redop;

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
    int algo;              /* PP_ALGO_RING, PP_ALGO_RD, or -1 = auto */
    pp_exec_dtype dtype;
    pp_exec_redop redop;
    int root;
    size_t min_bytes, max_bytes; /* as nccl-tests counts the size */
    double step_factor;    /* > 1: multiply; used when step_bytes is 0 */
    size_t step_bytes;     /* > 0: add */
    int iters, warmup;
    bool check;            /* run once outside the timed loop and compare */
    const char *transport; /* "tcp" or "verbs" */
    int channels;          /* connections per peer */
    double timeout_s;      /* per wait and for the bootstrap */
    bool on_device;        /* --device cuda */
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
    double time_s;         /* over ranks (opts.average; default the mean) of
                              (loop time / (iters * agg_iters)) */
    double algbw_Bps, busbw_Bps;
    int64_t wrong;         /* elements that differ from the expected value,
                              summed over ranks; -1 when not checked */
    double median_s, p99_s, cv; /* of the per-iteration time (the slowest
                                   rank's time in that iteration) */
    int *slowest;          /* iters entries: the slowest rank per iteration */
} pp_exec_coll_side;

typedef struct pp_exec_coll_row {
    size_t bytes, count;   /* count: elements, as nccl-tests prints it */
    int root;              /* -1 where the op has none */
    pp_coll_algo algo;     /* the algorithm used for this size */
    const char *impl;      /* static: how it ran, "ring", "rd" (whole-buffer
                              recursive doubling), "rabenseifner", "chain",
                              "pairwise" */
    pp_exec_coll_side side[2]; /* 0 out-of-place, 1 in-place */
} pp_exec_coll_row;

/* What rank 0 gets back (pp_exec_coll_result_free frees it). */
typedef struct pp_exec_coll_result {
    pp_exec_coll_opts opts;        /* as run (transport string is static) */
    int nranks, nhosts;
    char **rank_host;              /* nranks hostnames */
    int *rank_pid;
    const char *launcher;
    pp_exec_coll_row *rows;
    size_t n_rows;
    int64_t wrong_total;           /* -1 when not checked */
    double avg_busbw_Bps;          /* mean over rows, out-of-place */
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

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_EXEC_H */
