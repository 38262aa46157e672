/*
 * collective_int.h: private to sim/collective*.c.
 *
 * A running collective is a program of phases.  A phase is a set of
 * point-to-point transfers started together; the phase ends when the last
 * of them has arrived (and, where a transfer carries a `tail`, that much
 * longer), then a post-phase delay runs (the reduction of what arrived),
 * then the next phase starts.  The schedules (collective_sched.c) only
 * say which transfers make up phase p; the machinery that sends them,
 * counts arrivals and reports the result lives in collective.c.  Phases
 * are generated one at a time so that a 16,384-GPU ring in step mode
 * never holds 2(n-1) phases of transfers at once.
 */
#ifndef PODPLAN_COLLECTIVE_INT_H
#define PODPLAN_COLLECTIVE_INT_H

#include "podplan/coll.h"

/* One transfer of a phase.  src and dst index k->dev (endpoints): ranks
 * 0..n-1 are the group's GPUs, anything after is an extra endpoint (the
 * parameter server, SHARP's switches). */
typedef struct pp__xfer {
    int32_t src, dst;
    int32_t via;  /* relay device id (NCCL's PXN), -1: direct */
    uint64_t key; /* ECMP key: one NCCL channel keeps one path */
    double bytes;
    double tail_s; /* extra wait after arrival (pipeline latency terms) */
} pp__xfer;

typedef struct pp__coll pp__coll;
/* Fills k->x (pp__coll_add) and k->post_s for phase `phase`. */
typedef int (*pp__coll_gen)(pp__coll *k, int64_t phase, pp_error *e);

/* Where pp_sim_collective collects what it reports. */
typedef struct pp__coll_sink {
    bool finished;
    double t_end;
    uint64_t transfers;
    uint64_t relayed;
    pp_granularity gran; /* as resolved by the plan */
    int channels;
    const pp_net_fit *fit;
    double fit_s;
    pp_nccl_choice nccl;
    int rc;
    pp_error err;
} pp__coll_sink;

struct pp__coll {
    pp_sim *s;
    const pp_cluster *c;
    pp_coll_op op;
    pp_coll_algo algo;
    pp_granularity gran; /* resolved: STEP or STREAM */
    double S;            /* bytes per GPU */
    size_t n;            /* group size */
    int32_t root;        /* rank */
    double reduce_Bps;   /* INFINITY: summing is free */
    int C;               /* ring channels */

    int32_t *dev; /* endpoint -> device id; n_dev long */
    size_t n_dev;

    /* The group by server: nodes in order of first appearance, each
     * node's ranks (mem[off[k] .. off[k+1]-1]) in "NIC order": GPUs that
     * own different NICs first, so that taking consecutive positions
     * spreads over the NICs (see collective_sched.c). */
    int32_t m;
    int32_t *off, *mem;

    /* Schedules' data. */
    int32_t *ring;           /* C x n: rings, endpoint indices */
    int32_t inst;            /* tree instances */
    int32_t *parent;         /* inst x n: parent rank, -1 at the root */
    int32_t *depth, *height; /* inst x n */
    int32_t hmax, dmax;
    double *acc;          /* n: scratch (bytes reduced per rank) */
    int64_t bcast_chunks; /* broadcast step mode: pipeline chunks */
    /* All-to-all's relays (NCCL's PXN, collective_sched.c): each rank's
     * server index and rail (its nearest NIC's), and per server and rail
     * the rank that relays there (-1 none); relay NULL: every transfer
     * direct. */
    int32_t *srv_of, *rail_of, *relay;
    int32_t n_rail;
    bool no_pxn; /* pp_coll_spec.no_pxn */

    /* The phase machine. */
    pp__coll_gen gen;
    int64_t n_phases, phase;
    pp__xfer *x;
    size_t nx, cap_x;
    double post_s;
    size_t pending;
    bool failed;
    bool in_start; /* inside pp_sim_collective_start */
    bool silent;   /* failed while starting: no callback */
    double t0;
    double t_fit;  /* > 0: the fitted network's time (coll_fit.c) */
    const pp_net_fit *fit; /* its entry */
    pp_nccl_choice nccl;   /* algo nccl: NCCL's model's choice */
    bool fit_held; /* finish already held back to t0 + t_fit */
    double *end;   /* n: when each rank last finished something */
    uint64_t transfers;
    uint64_t relayed;
    const char *name; /* trace span name */

    uint64_t key; /* ECMP key of the transfers being added */

    pp_sim_done_fn done;
    void *ctx;
    uint64_t arg;
    pp__coll_sink *sink;
};

/* Appends a transfer to the phase being generated, with ECMP key k->key
 * (a schedule sets it to the channel, tree instance or rail). */
void pp__coll_add(pp__coll *k, int32_t src, int32_t dst, double bytes,
                  double tail_s);
/* The same relayed through device `via` (-1: direct). */
void pp__coll_add_via(pp__coll *k, int32_t src, int32_t via, int32_t dst,
                      double bytes);
/* The latency of the routed path between two endpoints (key k->key). */
int pp__coll_lat(pp__coll *k, int32_t src, int32_t dst, double *lat_s,
                 pp_error *e);
/* Builds k->off/mem (the group by server); needs k->dev and k->n. */
int pp__coll_group(pp__coll *k, pp_error *e);
/* Chooses the schedule for k->op/algo/gran: sets k->gen and k->n_phases
 * and builds what it needs.  PP_EINVAL for a combination that does not
 * exist (naive all-gather) or a group it cannot serve. */
int pp__coll_plan(pp__coll *k, pp_error *e);

#endif
