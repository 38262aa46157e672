/*
 * exec/exec_int.h: what the files of exec/ share (private to exec/).
 *
 *   bootstrap.c   the rendezvous (TCP star on rank 0, or MPI): all-gather
 *                 of the transports' address blobs, barrier, gather to 0
 *   launch.c      the launcher's environment, --np forking
 *   coll_sched.c  chunking and the pipelined step engine (ring, chain)
 *   coll_algos.c  the collectives over the ops table
 *   coll_reduce.c the CPU reductions, fp32/bf16/fp16
 *   coll_run.c    the sweep: buffers, data, checks, timing, statistics
 */
#ifndef PODPLAN_EXEC_INT_H
#define PODPLAN_EXEC_INT_H

#include "podplan/exec.h"
#include "devmem.h"
#include "xport.h"

/* ---- bootstrap ---------------------------------------------------------- */
typedef struct pp__boot pp__boot;

/* Joins the world: rank 0 listens (or takes w->listen_fd), the others
 * connect and say who they are (or MPI_Init under mpirun with MPI).  On
 * success the local address this rank is seen at is in local_ip (for the
 * TCP transport's blob). */
int pp__boot_open(const pp_exec_world *w, double timeout_s, pp__boot **out,
                  char local_ip[64], pp_error *e);
/* The largest blob the all-gather carries (default and minimum
 * PP_XPORT_ADDR_MAX; at most 1 MiB): pp_xport_addr_max() of the transport,
 * the same on every rank.  Call before pp__boot_allgather. */
int pp__boot_set_blob_max(pp__boot *b, size_t n, pp_error *e);
size_t pp__boot_blob_max(const pp__boot *b);
/* All-gather of blobs of at most blob_max bytes: blobs is
 * nranks * blob_max bytes, rank r's blob at r * blob_max,
 * its length in lens[r].  Rank 0 rejects (and names) duplicate or
 * out-of-range ranks, wrong world sizes and oversized blobs. */
int pp__boot_allgather(pp__boot *b, const void *mine, size_t len, char *blobs,
                       size_t *lens, pp_error *e);
/* Rank 0 receives len bytes from every rank into all (nranks * len, its
 * own first); the others send.  all may be NULL off rank 0. */
int pp__boot_gather(pp__boot *b, const void *mine, size_t len, void *all,
                    pp_error *e);
/* Rank 0's len bytes to every rank. */
int pp__boot_bcast(pp__boot *b, void *buf, size_t len, pp_error *e);
int pp__boot_barrier(pp__boot *b, pp_error *e);
void pp__boot_close(pp__boot *b); /* NULL is a no-op */

/* The rendezvous' wire format, shared with the tests that forge bad
 * hellos: all fields little-endian uint32. */
#define PP__BOOT_MAGIC 0x70704231u /* "ppB1" */
#define PP__BOOT_VERSION 1u
typedef struct pp__boot_hello {
    uint32_t magic, version, rank, nranks, blob_len;
} pp__boot_hello;

/* ---- helpers (xport_tcp.c) ---------------------------------------------- */
/* Writes / reads exactly len bytes on a blocking-or-not socket before
 * deadline; "connection closed" is PP_EPEER.  what names the other side in
 * messages ("rank 3"). */
int pp__sock_write_all(int fd, const void *buf, size_t len, double deadline,
                       const char *what, pp_error *e);
int pp__sock_read_all(int fd, void *buf, size_t len, double deadline,
                      const char *what, pp_error *e);
void pp__sock_tune(int fd); /* TCP_NODELAY, large buffers */
struct sockaddr_in;
/* Connects a new (tuned, blocking-mode) socket to sa before deadline:
 * connect() is non-blocking and completed by poll(), so an unreachable
 * host costs the time left, not the kernel's minutes of SYN retries; a
 * refusal (the listener not up yet, a full backlog) is retried until the
 * deadline.  what names the other side ("rank 3", "rank 0's
 * rendezvous").  Returns 0 with *fd_out set; PP_ETIMEOUT "connect to
 * rank 3 at 10.0.0.5:4000: no connection after 5.0 s (12 attempts; last:
 * Connection refused)"; PP_EPEER for a final error; *fd_out untouched on
 * failure. */
int pp__sock_connect(const struct sockaddr_in *sa, double deadline,
                     const char *what, int *fd_out, pp_error *e);

/* ---- chunking and the step engine (coll_sched.c) ------------------------ */
/* [begin, end) of part i when n items are cut into parts nearly equal
 * parts, the first n % parts one larger. */
void pp__split(size_t n, size_t parts, size_t i, size_t *begin, size_t *end);

/* A pipelined schedule on one rank: steps t = 0..n_steps-1, each sending
 * chunk send_chunk(t) to send_peer(t) and receiving chunk recv_chunk(t)
 * from recv_peer(t) (-1: none), the received bytes reduced into or copied
 * onto the buffer.  Every chunk is cut into `channels` parts (part c goes
 * over connection c) and every part into slices of at most slice_elems;
 * slice j of step t is sent once slice j of step t-1 has been received and
 * reduced, so steps overlap at slice granularity (NCCL's ring). */
typedef struct pp__step {
    int send_peer, recv_peer;
    size_t send_chunk, recv_chunk;
    bool reduce; /* received bytes: reduce into the chunk (else copy) */
} pp__step;

typedef struct pp__sched {
    const pp__step *steps;
    int n_steps;
    size_t n_chunks;           /* the buffer is n_chunks chunks of ... */
    const size_t *chunk_begin; /* n_chunks + 1 element offsets */
    int channels;
    size_t slice_elems;
    /* Out of place: this rank's input, the same layout as the buffer, or
     * NULL (in place).  Step 0 sends its chunk from src, and a reduction
     * writes src op received into the buffer, so the buffer never needs a
     * copy of the input first: the ring's schedules write every chunk of
     * the buffer (by a reduction or a receive) before reading it. */
    const char *src;
} pp__sched;

/* Slices per part: the largest part of any chunk divided by slice_elems,
 * rounded up (smaller parts have empty trailing slices). */
size_t pp__sched_slices(const pp__sched *s);
/* Element range of slice j of channel c's part of chunk k. */
void pp__sched_slice(const pp__sched *s, size_t k, int c, size_t j,
                     size_t *begin, size_t *end);

/* What a collective needs at run time (coll_algos.c). */
typedef struct pp__reducer {
    /* dst[i] = op(a[i], b[i]) for count elements; a may be dst (never b) */
    int (*fn)(void *ctx, void *dst, const void *a, const void *b, size_t count,
              pp_error *e);
    void *ctx;
} pp__reducer;

typedef struct pp__comm {
    const pp_xport_ops *ops;
    pp_xport *x;
    pp_xmr *mr_buf, *mr_tmp; /* the work buffer and the scratch */
    int rank, nranks, channels;
    double timeout_s;
    pp_xdtype dtype;
    size_t esize;
    pp__reducer red;
    char *tmp;    /* scratch: channels * PP__SLOTS slices */
    char *rd_tmp; /* scratch of a whole buffer (recursive doubling) */
    size_t tmp_bytes;
    size_t slice_bytes;
    /* debug fault injection (PODPLAN_EXEC_FAULT) */
    int fault_rank, fault_step;
    char fault_mode; /* 'x' _exit, 's' stop, 0 none */
    /* what is running, for messages: "allreduce ring" */
    const char *what;
} pp__comm;

#define PP__SLOTS 4 /* receive slices in flight per channel */

/* Runs a schedule over buf (chunks from s), pipelined.  Messages name the
 * step: "allreduce ring step 3/6: recv from rank 1: connection closed". */
int pp__sched_run(pp__comm *c, const pp__sched *s, char *buf, pp_error *e);

/* The collectives, in place on buf unless stated (coll_algos.c).  count
 * is in elements; see each for the layout. */
/* The ring ones take src: this rank's input when out of place (buf is then
 * written without being copied from it first), or NULL (in place). */
int pp__coll_allreduce_ring(pp__comm *c, char *buf, const char *src,
                            size_t count, pp_error *e);
int pp__coll_allreduce_rd(pp__comm *c, char *buf, size_t count, pp_error *e);
/* Recursive-halving reduce-scatter then recursive-doubling all-gather
 * (Rabenseifner), with rd's fix-up for n not a power of two. */
int pp__coll_allreduce_rabenseifner(pp__comm *c, char *buf, size_t count,
                                    pp_error *e);
/* buf: nranks * count elements, this rank's slice at rank * count gets the
 * reduction. */
int pp__coll_reducescatter_ring(pp__comm *c, char *buf, const char *src,
                                size_t count, pp_error *e);
/* buf: nranks * count elements, this rank's part already in place. */
int pp__coll_allgather_ring(pp__comm *c, char *buf, size_t count, pp_error *e);
int pp__coll_broadcast_chain(pp__comm *c, char *buf, size_t count, int root,
                             pp_error *e);
/* send and recv: nranks * count elements each; not in place. */
int pp__coll_alltoall_pairwise(pp__comm *c, const char *send, char *recv,
                               size_t count, pp_error *e);
int pp__coll_sendrecv_ring(pp__comm *c, const char *send, char *recv,
                           size_t count, pp_error *e);

/* The ring's steps for rank r of n (coll_algos.c): n-1 reduce-scatter
 * steps with chunk offset o (see there), then n-1 all-gather steps when
 * allgather_after.  out has room for 2(n-1); returns the count. */
int pp__ring_steps(int n, int r, int o, bool allgather_after, pp__step *out);

/* One exchange of recursive doubling / Rabenseifner: send blocks
 * [send_lo, send_hi) to send_peer and receive blocks [recv_lo, recv_hi)
 * from recv_peer (-1: none; both -1: this rank sits the step out), the
 * received bytes reduced into those blocks or copied onto them.  Blocks:
 * the buffer cut into p nearly equal parts, p the largest power of two
 * <= n. */
typedef struct pp__xstep {
    int send_peer, recv_peer;
    int send_lo, send_hi, recv_lo, recv_hi;
    bool reduce;
} pp__xstep;
#define PP__RD_STEPS_MAX 64 /* 2 log2(p) + 2 for any int n */
/* The steps of rank r of n (coll_algos.c), the same count on every rank:
 * [fix-up in] log2(p) whole-buffer exchanges (rd) or log2(p) halvings
 * then log2(p) doublings (Rabenseifner) [fix-up out].  out has room for
 * PP__RD_STEPS_MAX; returns the count. */
int pp__rd_steps(int n, int r, bool rabenseifner, pp__xstep *out);

/* The failure injected by PODPLAN_EXEC_FAULT="rank=R,step=S,mode=M" fires
 * here when this rank and step (from 1) match: M = exit (_exit(1)), kill
 * (SIGKILL), stop (SIGSTOP: a stalled rank); corrupt spoils rank R's
 * checked output instead (coll_run.c). */
void pp__fault_point(const pp__comm *c, int step);
/* Makes "rank R: <what> step t/n: <msg>" of a transport error. */
int pp__step_error(const pp__comm *c, int step, int n_steps, int rc,
                   pp_error *e);

/* ---- the sweep (coll_run.c) --------------------------------------------- */
/* all: nranks x iters times (rank r's at r * iters).  Fills sd's figures
 * but wrong; sd->slowest is allocated here (the caller frees it).  The
 * time is each rank's mean, combined over ranks as nccl-tests' -a says
 * (average 0 rank 0's, 1 the mean, 2 the min, 3 the max). */
void pp__coll_stats(pp_exec_coll_side *sd, const double *all, int n, int iters,
                    double bytes, double factor, int average);

/* The CPUs this process may run on (launch.c); set, when not NULL, gets
 * them as a cpu_set_t.  0 when they cannot be read. */
int pp__cpus_allowed(void *set);

/* ---- reductions (coll_reduce.c) ----------------------------------------- */
/* dst[i] = op(dst[i], src[i]) on the CPU; bf16/fp16 through float, rounded
 * to nearest even. */
void pp__reduce_cpu(pp_xdtype t, pp_xredop op, void *dst, const void *src,
                    size_t count);
/* dst[i] = op(a[i], b[i]); dst overlaps neither. */
void pp__reduce_cpu3(pp_xdtype t, pp_xredop op, void *dst, const void *a,
                     const void *b, size_t count);
float pp__bf16_to_f32(uint16_t h);
uint16_t pp__f32_to_bf16(float f);
float pp__fp16_to_f32(uint16_t h);
uint16_t pp__f32_to_fp16(float f);

#endif /* PODPLAN_EXEC_INT_H */
