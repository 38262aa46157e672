/*
 * podplan/coll.h: collectives on a simulation (podplan_sim_coll).  The
 * operation and algorithm vocabulary (pp_coll_op, pp_coll_algo, busbw
 * factors) lives in podplan/vocab.h.  Depends on net and below.
 */
#ifndef PODPLAN_COLL_H
#define PODPLAN_COLL_H

#include "podplan/common.h"
#include "podplan/models.h"
#include "podplan/forward.h"
#include "podplan/net.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Collectives (sim/coll/collective.c,
 * sim/coll/collective_sched.c), generating the transfers a real
 * implementation would.  busbw uses nccl-tests' factors: 2(n-1)/n for
 * AllReduce, (n-1)/n for AllGather, ReduceScatter and AlltoAll, 1 for
 * Broadcast and SendRecv.
 * ---------------------------------------------------------------------- */

typedef enum {
    PP_GRAN_AUTO,  /* step for small groups, stream above a threshold */
    PP_GRAN_STEP,  /* every ring step its own set of flows: exact */
    PP_GRAN_STREAM /* NCCL's pipelined steady state */
} pp_granularity;

/* What NCCL's tuning model chose for one call (sim/coll/nccl.c). */
typedef struct pp_nccl_choice {
    const char *algo;  /* NCCL's names: Ring, Tree, NVLS, NVLSTree,
                          CollNetDirect, CollNetChain; NULL: not run */
    const char *proto; /* LL, LL128, Simple */
    double time_s;     /* its predicted time */
    double lat_s;      /* the latency term */
    double algbw_Bps;  /* its bandwidth term */
    double fill_s;     /* NVLS in one server: the pipeline's fill (the
                          time is lat + bytes / algbw + fill); else 0 */
    int64_t chunk;     /* NVLS in one server: enqueue.cc's chunk, bytes */
    int channels;      /* of the graph it used */
    double chan_Bps;   /* per channel */
    int nodes;         /* servers the group spans */
} pp_nccl_choice;

typedef struct pp_coll_spec {
    pp_coll_op op;
    pp_coll_algo algo;
    double bytes;        /* S: the buffer size per GPU (nccl-tests) */
    const int32_t *gpus; /* device ids of the group, in rank order */
    size_t n_gpus;
    int32_t root;   /* rank of the root (broadcast, naive) */
    int32_t server; /* PS: device id of the server's endpoint */
    int channels;   /* ring channels; 0 = one per NIC of a node */
    pp_granularity gran;
    double reduce_Bps; /* summing rate; 0 = the GPU's HBM bandwidth/3 */
    /* A fitted profile's network (hw.h; borrowed, NULL = none): when an
     * entry covers this collective its time is the fit's (analytic) or
     * at least the fit's (flow); sim/coll/coll_fit.c. */
    const pp_net_fit *fits;
    size_t n_fits;
    bool nccl_collnet; /* algo nccl: CollNet (SHARP) enabled, as with
                          NCCL_COLLNET_ENABLE=1 */
    bool no_pxn;       /* all-to-all: every transfer direct, as with
                          NCCL_PXN_DISABLE=1 (default: relayed through the
                          GPU on the destination's rail, NCCL's PXN) */
} pp_coll_spec;

typedef struct pp_coll_result {
    double time_s;
    double algbw_Bps;     /* S / time */
    double busbw_Bps;     /* algbw x the nccl-tests factor */
    uint64_t transfers;   /* point-to-point transfers generated */
    uint64_t relayed;     /* of them, relayed by PXN (all-to-all) */
    uint64_t events;      /* engine events run */
    int32_t busiest_link; /* the link that carried the most bytes */
    double busiest_bytes;
    pp_granularity gran; /* what ran: PP_GRAN_STEP or PP_GRAN_STREAM */
    int channels;        /* channels that ran (ring family; else 1) */
    const pp_net_fit *fit; /* the spec's fitted entry used (NULL: none) */
    double fit_s;          /* its time for this collective */
    pp_nccl_choice nccl;   /* algo nccl: what NCCL's model chose */
} pp_coll_result;

/* The rate at which a GPU sums a received chunk into its own: HBM / 3
 * (read two, write one), INFINITY without a GPU.  What a collective uses
 * when spec->reduce_Bps is 0. */
double pp_coll_reduce_Bps(const pp_gpu_spec *gpu);
/* The ring (AllReduce, ReduceScatter, AllGather) in closed form, as the
 * simulator runs it where nothing contends (sim/coll/collective_sched.c):
 * n GPUs, buffer S, each hop bandwidth B and latency lat, summing at
 * reduce_Bps.  0 when n <= 1 or S <= 0; NAN for another operation. */
double pp_coll_ring_time_s(pp_coll_op op, double n, double S, double B,
                           double lat, double reduce_Bps);

/* The fitted entry (a profile's network:, hw.h) that covers collective
 * `op` ("allreduce", or a p2p name such as "write_bw") run by `algo` on
 * `ranks` ranks at `scope`: the same algorithm before "auto" (NCCL's
 * choice), the same group size before an entry for any size before the
 * nearest size.  NULL when none. */
const pp_net_fit *pp_coll_fit_find(const pp_net_fit *v, size_t n,
                                   const char *op, const char *algo,
                                   pp_net_scope scope, int64_t ranks);
/* The rank model of a collective and algorithm: steps(n) and the bytes
 * each rank sends in units of S, bw(n), in t(n, S) = steps(n) alpha +
 * bw(n) S / beta.  ring (and "auto", NCCL's choice, a ring for large
 * messages) allreduce 2(n-1), 2(n-1)/n; ring allgather/reducescatter
 * n-1, (n-1)/n; rd allreduce floor(log2 n) (+2 when n is not a power of
 * two), the same times S.  false for others or n < 2. */
bool pp_coll_rank_terms(const char *op, const char *algo, int64_t n,
                        double *steps, double *bw);
/* The entry's time for `bytes` per GPU on `ranks` ranks: its
 * small-message line up to the knee, rescaled by the algorithm's steps
 * and per-rank bytes when the group size differs from the one measured
 * (sim/coll/coll_fit.c).  NAN for an entry without a bandwidth. */
double pp_coll_fit_time_s(const pp_net_fit *f, int64_t ranks, double bytes);

/* NCCL's tuning model (src/graph/tuning.cc, sim/coll/nccl.c) for `op` of
 * `bytes` (nccl-tests' S) on the GPUs `gpus` of cluster c: the algorithm
 * and protocol NCCL picks and its predicted time.  PP_EINVAL for
 * alltoall/sendrecv (point-to-point in NCCL) and uneven groups. */
int pp_coll_nccl_choose(const pp_cluster *c, const int32_t *gpus, size_t n,
                        pp_coll_op op, double bytes, bool collnet,
                        pp_nccl_choice *out, pp_error *e);

/* Starts a collective now; done runs when the last rank finishes. */
int pp_sim_collective_start(pp_sim *s, const pp_coll_spec *spec,
                            pp_sim_done_fn done, void *ctx, uint64_t arg,
                            pp_error *e);
/* Runs one collective to completion from now and reports it. */
int pp_sim_collective(pp_sim *s, const pp_coll_spec *spec, pp_coll_result *out,
                      pp_error *e);

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_COLL_H */
