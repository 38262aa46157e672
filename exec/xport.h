/*
 * exec/xport.h: the transport seam of podplan exec (private to exec/).
 *
 * A collective (exec/coll_*.c) is a schedule of point-to-point sends and
 * receives between ranks; it never knows how bytes move.  A transport
 * moves them: `tcp` over sockets (several connections per peer), `verbs`
 * over libibverbs RC queue pairs.  Both sit behind this one ops table, so
 * the ring and recursive-doubling logic, the chunking, the reductions and
 * the checks are the same code whatever the wire, and the TCP path tests
 * all of it on a machine with no RDMA device.
 *
 * The life of a transport:
 *   1. ops->create(): open the device / listening socket; produce this
 *      rank's address blob (at most pp_xport_addr_max(ops, o) bytes:
 *      PP_XPORT_ADDR_MAX unless the transport's addr_size says more).
 *   2. The bootstrap (TCP rendezvous or MPI) all-gathers the blobs.
 *   3. ops->connect(): connect to every peer in `peers` (a rank list; the
 *      collectives talk to few peers) using their blobs.  Connections are
 *      made in a fixed order (lower rank connects, higher accepts) so no
 *      two ranks wait on each other.
 *   4. Buffers are registered once (ops->reg) and transfers posted
 *      (isend/irecv) and completed (wait) many times.
 *   5. ops->destroy() frees everything; it is safe after any failure.
 *
 * Errors: every op returns 0 or a negative PP_E* code and fills e with the
 * peer and what failed ("rank 3: recv from rank 2: connection reset",
 * "rank 1: send to rank 2: wc status 12 (transport retry counter
 * exceeded)").  A wait past its deadline returns PP_ETIMEOUT naming the
 * peers still outstanding.
 */
#ifndef PODPLAN_EXEC_XPORT_H
#define PODPLAN_EXEC_XPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "podplan/common.h"

#define PP_XPORT_ADDR_MAX 256 /* bytes of one rank's address blob */

typedef struct pp_xport pp_xport; /* a transport instance, one per rank */
typedef struct pp_xmr pp_xmr;     /* a registered memory region */

/* One posted transfer.  The caller owns the struct and keeps it alive
 * until wait() says it is done; `done` and `bytes` are set by the
 * transport. */
typedef struct pp_xreq {
    int peer; /* rank on the other side */
    bool is_send;
    void *buf;   /* where the bytes are read from / written to */
    size_t len;  /* bytes */
    int channel; /* connection to use: 0 .. channels-1 */
    bool done;   /* set by the transport */
    void *priv;  /* the transport's */
} pp_xreq;

/* Options common to every transport (plain data, caller-owned). */
typedef struct pp_xport_opts {
    int rank, nranks;
    int channels;       /* connections per peer (tcp sockets, verbs QPs) */
    double timeout_s;   /* connect and per-wait limit */
    const char *device; /* verbs: HCA name ("mlx5_0"), NULL = first
                            active; tcp: interface address to bind, NULL
                            = any */
    int ib_port;        /* verbs: port number (default 1) */
    int gid_index;      /* verbs: -1 = choose (RoCE v2 IPv4 GID if any) */
    bool spin;          /* tcp: poll without sleeping a while before
                           sleeping (set when each rank has a core) */
} pp_xport_opts;

typedef struct pp_xport_ops {
    const char *name; /* "tcp", "verbs" */
    /* Opens the transport and writes this rank's address blob into
     * addr (*addr_len bytes used).  On failure *out is untouched. */
    int (*create)(const pp_xport_opts *o, pp_xport **out, char *addr,
                  size_t *addr_len, pp_error *e);
    /* Connects to each rank in peers[0..n_peers) (never o->rank) using
     * addrs[r] (addr_lens[r] bytes) for rank r. */
    int (*connect)(pp_xport *t, const int *peers, size_t n_peers,
                   const char *const *addrs, const size_t *addr_lens,
                   pp_error *e);
    /* Registers [buf, buf+len) for transfers; on_device says it is GPU
     * memory (verbs registers it by dma-buf or stages it; tcp stages).
     * A transport with nothing to register returns a dummy region. */
    int (*reg)(pp_xport *t, void *buf, size_t len, bool on_device, pp_xmr **out,
               pp_error *e);
    void (*dereg)(pp_xport *t, pp_xmr *mr);
    /* Posts a transfer described by *r (buf inside a registered region
     * mr).  Returns at once; completion is seen through wait(). */
    int (*post)(pp_xport *t, pp_xreq *r, pp_xmr *mr, pp_error *e);
    /* Drives progress until every request in reqs[0..n) is done, or the
     * deadline (absolute, pp_exec_now() seconds) passes: PP_ETIMEOUT. */
    int (*wait)(pp_xport *t, pp_xreq *const *reqs, size_t n, double deadline,
                pp_error *e);
    void (*destroy)(pp_xport *t); /* NULL is a no-op */
    /* Optional (NULL: PP_XPORT_ADDR_MAX suffices).  The bytes create()
     * may write into addr for these options, for a transport whose blob
     * grows with the job: verbs carries 3 bytes per (peer, channel) QP
     * number after a 64-byte header, so more than 64 QPs per rank do not
     * fit in PP_XPORT_ADDR_MAX.  Size the addr buffer and the all-gather
     * with pp_xport_addr_max(). */
    size_t (*addr_size)(const pp_xport_opts *o);
    /* Optional (NULL allowed; added for the pipelined ring): drives
     * progress until at least one request in reqs[0..n) is done (at once
     * when one already is), or the deadline passes: PP_ETIMEOUT.  A
     * pipeline of several channels reduces whichever slice lands first
     * instead of the oldest.  Without it, callers wait() on one request. */
    int (*wait_any)(pp_xport *t, pp_xreq *const *reqs, size_t n,
                    double deadline, pp_error *e);
} pp_xport_ops;

/* The room create() needs in its addr buffer: the larger of
 * PP_XPORT_ADDR_MAX and ops->addr_size(o). */
static inline size_t pp_xport_addr_max(const pp_xport_ops *ops,
                                       const pp_xport_opts *o) {
    size_t n = ops->addr_size ? ops->addr_size(o) : 0;
    return n > PP_XPORT_ADDR_MAX ? n : PP_XPORT_ADDR_MAX;
}

extern const pp_xport_ops pp_xport_tcp;
#ifdef PODPLAN_HAVE_VERBS
extern const pp_xport_ops pp_xport_verbs;
#endif

#endif /* PODPLAN_EXEC_XPORT_H */
