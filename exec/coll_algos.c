/*
 * coll_algos.c: the collectives, as schedules over the ops table.
 *
 * Chunk arithmetic for rank r of n (indices mod n), as in NCCL's ring:
 *   reduce-scatter step t (0..n-2): send chunk r-t-o, receive and reduce
 *     chunk r-t-1-o; after n-1 steps chunk r+1-o is complete here
 *     (o = 0 for allreduce; o = 1 for reducescatter, so rank r ends with
 *     chunk r as NCCL's ReduceScatter defines);
 *   all-gather step u (0..n-2): send chunk r+1-u, receive chunk r-u.
 * In both, what is sent at a step is what was received at the previous
 * one, which is what lets pp__sched_run pipeline the steps.
 */
#include "exec_int.h"

#include <stdlib.h>
#include <string.h>

static size_t md(long a, int n) {
    return (size_t)(((a % n) + n) % n);
}

static int run_ring(pp__comm *c, char *buf, const char *src,
                    const size_t *bounds, int n_steps, pp__step *st,
                    pp_error *e) {
    pp__sched s = {.steps = st,
                   .n_steps = n_steps,
                   .n_chunks = (size_t)c->nranks,
                   .chunk_begin = bounds,
                   .channels = c->channels,
                   .slice_elems = c->slice_bytes / c->esize,
                   .src = src};
    return pp__sched_run(c, &s, buf, e);
}

static size_t *even_bounds(size_t count, int n) {
    size_t *b = pp_xmalloc(((size_t)n + 1) * sizeof *b);
    for (int k = 0; k <= n; k++) {
        size_t x, y;
        pp__split(count, (size_t)n, (size_t)(k < n ? k : n - 1), &x, &y);
        b[k] = k < n ? x : y;
    }
    return b;
}

static size_t *block_bounds(size_t count, int n) {
    size_t *b = pp_xmalloc(((size_t)n + 1) * sizeof *b);
    for (int k = 0; k <= n; k++) b[k] = (size_t)k * count;
    return b;
}

int pp__ring_steps(int n, int r, int o, bool allgather_after, pp__step *st) {
    int nrs = n - 1, nag = allgather_after ? n - 1 : 0;
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    for (int t = 0; t < nrs; t++)
        st[t] = (pp__step){next, prev, md(r - t - o, n), md(r - t - 1 - o, n),
                           true};
    for (int u = 0; u < nag; u++)
        st[nrs + u] =
            (pp__step){next, prev, md(r + 1 - u, n), md(r - u, n), false};
    return nrs + nag;
}

static int ring(pp__comm *c, char *buf, const char *src, const size_t *bounds,
                int o, bool allgather_after, pp_error *e) {
    pp__step *st = pp_xcalloc(2 * (size_t)c->nranks, sizeof *st);
    int ns = pp__ring_steps(c->nranks, c->rank, o, allgather_after, st);
    int rc = run_ring(c, buf, src, bounds, ns, st, e);
    free(st);
    return rc;
}

int pp__coll_allreduce_ring(pp__comm *c, char *buf, const char *src,
                            size_t count, pp_error *e) {
    if (c->nranks == 1) {
        if (src) memcpy(buf, src, count * c->esize);
        return 0;
    }
    size_t *b = even_bounds(count, c->nranks);
    c->what = "allreduce ring";
    int rc = ring(c, buf, src, b, 0, true, e);
    free(b);
    return rc;
}

int pp__coll_reducescatter_ring(pp__comm *c, char *buf, const char *src,
                                size_t count, pp_error *e) {
    if (c->nranks == 1) {
        if (src) memcpy(buf, src, count * c->esize);
        return 0;
    }
    size_t *b = block_bounds(count, c->nranks);
    c->what = "reducescatter ring";
    int rc = ring(c, buf, src, b, 1, false, e);
    free(b);
    return rc;
}

int pp__coll_allgather_ring(pp__comm *c, char *buf, size_t count, pp_error *e) {
    int n = c->nranks, r = c->rank;
    if (n == 1) return 0;
    size_t *b = block_bounds(count, n);
    pp__step *st = pp_xcalloc((size_t)n - 1, sizeof *st);
    for (int t = 0; t < n - 1; t++)
        st[t] = (pp__step){(r + 1) % n, (r + n - 1) % n, md(r - t, n),
                           md(r - t - 1, n), false};
    c->what = "allgather ring";
    int rc = run_ring(c, buf, NULL, b, n - 1, st, e);
    free(st);
    free(b);
    return rc;
}

/* A pipelined chain root -> root+1 -> ... -> root-1: each rank forwards
 * slice j as soon as it has it. */
int pp__coll_broadcast_chain(pp__comm *c, char *buf, size_t count, int root,
                             pp_error *e) {
    int n = c->nranks, r = c->rank;
    if (n == 1) return 0;
    int k = (r - root + n) % n;
    size_t b[2] = {0, count};
    pp__step st[2] = {
        {-1, k > 0 ? (r + n - 1) % n : -1, 0, 0, false},
        {k < n - 1 ? (r + 1) % n : -1, -1, 0, 0, false},
    };
    pp__sched s = {.steps = st,
                   .n_steps = 2,
                   .n_chunks = 1,
                   .chunk_begin = b,
                   .channels = c->channels,
                   .slice_elems = c->slice_bytes / c->esize};
    c->what = "broadcast chain";
    return pp__sched_run(c, &s, buf, e);
}

/* Posts buf's [0, len) to/from peer over all channels (one part each) and
 * waits for them, with the send and the receive of a step in flight
 * together. */
static int exchange(pp__comm *c, int to, const char *sbuf, size_t slen,
                    int from, char *rbuf, size_t rlen, pp_xmr *rmr, int step,
                    int n_steps, pp_error *e) {
    int nch = c->channels;
    pp_xreq *rq = pp_xcalloc((size_t)nch * 2, sizeof *rq);
    pp_xreq **wl = pp_xcalloc((size_t)nch * 2, sizeof *wl);
    size_t nw = 0;
    int rc = 0;
    pp__fault_point(c, step);
    for (int k = 0; k < nch && !rc; k++) {
        size_t b, en;
        if (to >= 0) {
            pp__split(slen, (size_t)nch, (size_t)k, &b, &en);
            if (en > b) {
                pp_xreq *r = &rq[2 * k];
                *r = (pp_xreq){.peer = to,
                               .is_send = true,
                               .buf = (char *)sbuf + b,
                               .len = en - b,
                               .channel = k};
                if (!(rc = c->ops->post(c->x, r, c->mr_buf, e))) wl[nw++] = r;
            }
        }
        if (from >= 0 && !rc) {
            pp__split(rlen, (size_t)nch, (size_t)k, &b, &en);
            if (en > b) {
                pp_xreq *r = &rq[2 * k + 1];
                *r = (pp_xreq){.peer = from,
                               .is_send = false,
                               .buf = rbuf + b,
                               .len = en - b,
                               .channel = k};
                if (!(rc = c->ops->post(c->x, r, rmr, e))) wl[nw++] = r;
            }
        }
    }
    if (!rc && nw)
        rc = c->ops->wait(c->x, wl, nw, pp_exec_now() + c->timeout_s, e);
    free(rq);
    free(wl);
    if (rc) pp__step_error(c, step, n_steps, rc, e);
    return rc;
}

/* Recursive doubling and Rabenseifner's algorithm, as lists of
 * exchanges (exec_int.h: pp__rd_steps).  p is the largest power of two
 * <= n, rem = n - p.  For n not a power of two the first 2*rem ranks pair
 * up first (the even one hands its buffer to the odd one and sits out)
 * and get the result back at the end (MPICH's allreduce); the p ranks
 * left are numbered newrank 0..p-1.  The buffer is p blocks.
 *   rd: log2(p) steps, each exchanging the whole buffer with newrank ^
 *     mask (mask 1, 2, ...) and reducing it: log2(p) * len bytes each way.
 *   Rabenseifner: a reduce-scatter by recursive halving (mask p/2 down to
 *     1: keep the half of the current range on this rank's side of the
 *     mask bit, send the other half, reduce what comes back), after which
 *     newrank k holds block k reduced; then an all-gather by recursive
 *     doubling (mask 1 up to p/2: swap the ranges held).  2 log2(p) steps
 *     but only 2 (p-1)/p * len bytes each way, so it wins on large
 *     buffers while rd wins on latency. */
static int real_rank(int nr, int rem) {
    return nr < rem ? nr * 2 + 1 : nr + rem;
}

int pp__rd_steps(int n, int r, bool rabenseifner, pp__xstep *st) {
    int p = 1, lg = 0, ns = 0, rem;
    while (p * 2 <= n) {
        p *= 2;
        lg++;
    }
    rem = n - p;
    const pp__xstep idle = {-1, -1, 0, 0, 0, 0, false};
    int newrank = r < 2 * rem ? (r % 2 ? r / 2 : -1) : r - rem;
    if (rem) {
        if (r < 2 * rem && r % 2 == 0)
            st[ns++] = (pp__xstep){r + 1, -1, 0, p, 0, 0, false};
        else if (r < 2 * rem)
            st[ns++] = (pp__xstep){-1, r - 1, 0, 0, 0, p, true};
        else
            st[ns++] = idle;
    }
    if (!rabenseifner) {
        for (int mask = 1; mask < p; mask <<= 1) {
            int peer = newrank < 0 ? -1 : real_rank(newrank ^ mask, rem);
            st[ns++] =
                newrank < 0 ? idle : (pp__xstep){peer, peer, 0, p, 0, p, true};
        }
    } else {
        int lo = 0, hi = p;
        for (int mask = p / 2; mask >= 1; mask >>= 1) {
            if (newrank < 0) {
                st[ns++] = idle;
                continue;
            }
            int peer = real_rank(newrank ^ mask, rem), mid = lo + mask;
            if (newrank & mask)
                st[ns++] = (pp__xstep){peer, peer, lo, mid, mid, hi, true},
                lo = mid;
            else
                st[ns++] = (pp__xstep){peer, peer, mid, hi, lo, mid, true},
                hi = mid;
        }
        for (int mask = 1; mask < p; mask <<= 1) {
            if (newrank < 0) {
                st[ns++] = idle;
                continue;
            }
            int peer = real_rank(newrank ^ mask, rem);
            /* the partner holds the mask-wide range on the other side */
            if (newrank & mask)
                st[ns++] =
                    (pp__xstep){peer, peer, lo, hi, lo - mask, lo, false},
                lo -= mask;
            else
                st[ns++] =
                    (pp__xstep){peer, peer, lo, hi, hi, hi + mask, false},
                hi += mask;
        }
    }
    if (rem) {
        if (r < 2 * rem && r % 2 == 0)
            st[ns++] = (pp__xstep){-1, r + 1, 0, 0, 0, p, false};
        else if (r < 2 * rem)
            st[ns++] = (pp__xstep){r - 1, -1, 0, p, 0, 0, false};
        else
            st[ns++] = idle;
    }
    return ns;
}

static int allreduce_rd(pp__comm *c, char *buf, size_t count, bool rab,
                        pp_error *e) {
    int n = c->nranks, p = 1, rc = 0;
    if (n == 1) return 0;
    while (p * 2 <= n) p *= 2;
    size_t es = c->esize;
    size_t *b = even_bounds(count, p);
    pp__xstep *st = pp_xcalloc(PP__RD_STEPS_MAX, sizeof *st);
    int ns = pp__rd_steps(n, c->rank, rab, st);
    c->what = rab ? "allreduce rabenseifner" : "allreduce rd";
    for (int t = 0; t < ns && !rc; t++) {
        const pp__xstep *x = &st[t];
        size_t soff = b[x->send_lo] * es, slen = b[x->send_hi] * es - soff;
        size_t roff = b[x->recv_lo] * es, rlen = b[x->recv_hi] * es - roff;
        /* a reduced range lands in the scratch first; a copied one (the
         * all-gather, the fix-up's result) straight in place */
        char *rbuf = x->reduce ? c->rd_tmp : buf + roff;
        rc = exchange(c, x->send_peer, buf + soff, slen, x->recv_peer, rbuf,
                      rlen, c->mr_buf, t, ns, e);
        if (!rc && x->recv_peer >= 0 && x->reduce && rlen)
            rc = c->red.fn(c->red.ctx, buf + roff, buf + roff, c->rd_tmp,
                           rlen / es, e);
    }
    free(st);
    free(b);
    return rc;
}

int pp__coll_allreduce_rd(pp__comm *c, char *buf, size_t count, pp_error *e) {
    return allreduce_rd(c, buf, count, false, e);
}

int pp__coll_allreduce_rabenseifner(pp__comm *c, char *buf, size_t count,
                                    pp_error *e) {
    return allreduce_rd(c, buf, count, true, e);
}

/* Pairwise exchange: at step s rank r sends its block for r+s and
 * receives the block of r-s, one send and one receive in flight. */
int pp__coll_alltoall_pairwise(pp__comm *c, const char *send, char *recv,
                               size_t count, pp_error *e) {
    int n = c->nranks, r = c->rank, rc = 0;
    size_t blk = count * c->esize;
    memcpy(recv + (size_t)r * blk, send + (size_t)r * blk, blk);
    c->what = "alltoall pairwise";
    for (int s = 1; s < n && !rc; s++) {
        int to = (r + s) % n, from = (r - s + n) % n;
        rc = exchange(c, to, send + (size_t)to * blk, blk, from,
                      recv + (size_t)from * blk, blk, c->mr_buf, s - 1, n - 1,
                      e);
    }
    return rc;
}

int pp__coll_sendrecv_ring(pp__comm *c, const char *send, char *recv,
                           size_t count, pp_error *e) {
    int n = c->nranks, r = c->rank;
    size_t len = count * c->esize;
    c->what = "sendrecv ring";
    if (n == 1) {
        memcpy(recv, send, len);
        return 0;
    }
    return exchange(c, (r + 1) % n, send, len, (r + n - 1) % n, recv, len,
                    c->mr_buf, 0, 1, e);
}
