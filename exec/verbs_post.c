/*
 * exec/verbs_post.c: the data path of the verbs transport.
 *
 * Protocol: two-sided SEND/RECV on the RC QP of (peer, channel).  Why not
 * RDMA WRITE with immediate: it needs the receiver's buffer address and
 * rkey for every message, i.e. a rendezvous round trip per message; a
 * SEND lands in whatever receive the peer posted, and RC delivers a QP's
 * messages in order, so the k-th send on (peer, channel) fills the k-th
 * receive there.  The collectives post matching sends and receives in
 * the same order with the same lengths on both sides (the ring does).
 *
 * Chunking: a message longer than the smaller of the two ports'
 * max_msg_sz is cut into chunks of that size; both sides compute the
 * same cut from the same length, so chunk j meets receive WQE j.
 *
 * Receives before sends (credits): a SEND that finds no receive posted
 * gets an RNR NAK and is retried after min_rnr_timer (rnr_retry = 7:
 * forever), which is correct but stalls the QP for 0.64 ms each time.
 * So nothing is sent before the receive it will land in is posted: each
 * rank counts the receive WQEs it has posted per QP (rx_posted) and
 * RDMA-writes that count (8 bytes, inline, signalled) into the peer's
 * credit slot for the QP, registered in create() and published in the
 * address blob.  The sender posts chunk j only once the slot reads more
 * than j.  Chunks and receives beyond the queue depths wait in per-QP
 * FIFOs (txq, rxq) and are posted by progress() from post() and wait().
 *
 * Completions: one CQ; wr_id is the request (data) or the QP with the
 * low bit set (a credit write).  Only wr_id, status, vendor_err and
 * qp_num are defined for a failed completion, so the request, not the
 * opcode, says which queue it came from.  A failed completion puts the
 * QP in the error state and every later WR flushes: the transport keeps
 * the first error (err_code, err_msg) and answers it from then on.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verbs_int.h"

#define POLL_BATCH 32
#define LIST_MAX 4 /* outstanding transfers named in a timeout */

/* The local address of buf: the region itself, or its staging copy. */
static uint64_t local_addr(const pp_xmr *x, const char *buf) {
    return (uint64_t)(uintptr_t)(x->stage ? x->stage + (buf - x->buf) : buf);
}

static const char *dir(const pp_xreq *r) {
    return r->is_send ? "send to" : "recv from";
}

/* Keeps the first failure: from now on the transport answers it. */
static int fail(pp_xport *t, pp_error *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(pp_xport *t, pp_error *e, int code, const char *fmt, ...) {
    va_list ap;

    if (!t->err_code) {
        va_start(ap, fmt);
        vsnprintf(t->err_msg, sizeof t->err_msg, fmt, ap);
        va_end(ap);
        t->err_code = code;
    }
    return pp_error_set(e, t->err_code, "%s", t->err_msg);
}

static void chunk_of(const pp__vb_req *v, size_t j, size_t *off, size_t *len) {
    size_t c = v->q->chunk;

    *off = j * c;
    *len = v->r->len - *off < c ? v->r->len - *off : c;
}

static int post_recv_chunk(pp_xport *t, pp__vb_req *v, pp_error *e) {
    struct ibv_recv_wr wr, *bad = NULL;
    struct ibv_sge sge;
    size_t off, len;
    int err;

    chunk_of(v, v->posted, &off, &len);
    memset(&wr, 0, sizeof wr);
    sge.addr = local_addr(v->mr, (char *)v->r->buf + off);
    sge.length = (uint32_t)len;
    sge.lkey = v->mr->mr->lkey;
    wr.wr_id = (uint64_t)(uintptr_t)v;
    wr.sg_list = len ? &sge : NULL;
    wr.num_sge = len ? 1 : 0;
    err = pp__ibv_post_recv(v->q->qp, &wr, &bad);
    if (err)
        return fail(t, e, PP_EIO,
                    "rank %d: recv from rank %d (channel %d): "
                    "ibv_post_recv: %s",
                    t->o.rank, v->q->peer, v->q->ch, strerror(err));
    v->posted++;
    v->q->rq_used++;
    v->q->rx_posted++;
    return 0;
}

static int post_send_chunk(pp_xport *t, pp__vb_req *v, pp_error *e) {
    struct ibv_send_wr wr, *bad = NULL;
    struct ibv_sge sge;
    size_t off, len;
    int err;

    chunk_of(v, v->posted, &off, &len);
    memset(&wr, 0, sizeof wr);
    sge.addr = local_addr(v->mr, (char *)v->r->buf + off);
    sge.length = (uint32_t)len;
    sge.lkey = v->mr->mr->lkey;
    wr.wr_id = (uint64_t)(uintptr_t)v;
    wr.sg_list = len ? &sge : NULL;
    wr.num_sge = len ? 1 : 0;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    err = pp__ibv_post_send(v->q->qp, &wr, &bad);
    if (err)
        return fail(t, e, PP_EIO,
                    "rank %d: send to rank %d (channel %d): "
                    "ibv_post_send: %s",
                    t->o.rank, v->q->peer, v->q->ch, strerror(err));
    v->posted++;
    v->q->sq_used++;
    v->q->tx_posted++;
    return 0;
}

/* Tells the peer how many receives this QP has posted: an RDMA WRITE of
 * the count into its credit slot.  Inline, so the value is copied when
 * posted and a later count cannot race the DMA read. */
static int post_credit(pp_xport *t, pp__vb_qp *q, pp_error *e) {
    struct ibv_send_wr wr, *bad = NULL;
    struct ibv_sge sge;
    uint64_t val = q->rx_posted;
    int err;

    memset(&wr, 0, sizeof wr);
    sge.addr = (uint64_t)(uintptr_t)&val;
    sge.length = sizeof val;
    sge.lkey = 0;
    wr.wr_id = (uint64_t)(uintptr_t)q | 1u;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
    wr.wr.rdma.remote_addr = q->remote_ctl;
    wr.wr.rdma.rkey = q->remote_rkey;
    err = pp__ibv_post_send(q->qp, &wr, &bad);
    if (err)
        return fail(t, e, PP_EIO,
                    "rank %d: credit to rank %d (channel %d): "
                    "ibv_post_send: %s",
                    t->o.rank, q->peer, q->ch, strerror(err));
    q->sq_used++;
    q->credit_sent = val;
    return 0;
}

/* Posts what the queue depths and the peer's credits allow on q. */
static int progress(pp_xport *t, pp__vb_qp *q, pp_error *e) {
    uint64_t credits;
    int rc = 0;

    while (q->rxq && q->rq_used < PP_VB_RQ_DEPTH) {
        pp__vb_req *v = q->rxq;

        rc = post_recv_chunk(t, v, e);
        if (rc) goto out;
        if (v->posted == v->nchunks) {
            q->rxq = v->next;
            if (!q->rxq) q->rxq_tail = NULL;
        }
    }
    if (q->rx_posted > q->credit_sent && q->sq_used < PP_VB_SQ_DEPTH) {
        rc = post_credit(t, q, e);
        if (rc) goto out;
    }
    /* Written by the peer's NIC: read it once, with acquire order. */
    credits = __atomic_load_n(&t->ctl[q->peer * t->o.channels + q->ch],
                              __ATOMIC_ACQUIRE);
    /* One send slot stays free for the next credit write, so two ranks
     * sending to each other never both fill their queues with data. */
    while (q->txq && q->sq_used + 1 < PP_VB_SQ_DEPTH &&
           q->tx_posted < credits) {
        pp__vb_req *v = q->txq;

        rc = post_send_chunk(t, v, e);
        if (rc) goto out;
        if (v->posted == v->nchunks) {
            q->txq = v->next;
            if (!q->txq) q->txq_tail = NULL;
        }
    }
out:
    return rc;
}

static void unlink_req(pp_xport *t, pp__vb_req *v) {
    if (v->lprev)
        v->lprev->lnext = v->lnext;
    else
        t->live = v->lnext;
    if (v->lnext) v->lnext->lprev = v->lprev;
}

int pp__vb_post(pp_xport *t, pp_xreq *r, pp_xmr *mr, pp_error *e) {
    pp__vb_req *v = NULL;
    pp__vb_qp *q;
    int rc = PP_EINVAL;

    if (t->err_code) {
        rc = pp_error_set(e, t->err_code, "%s", t->err_msg);
        goto out;
    }
    if (!r || r->peer < 0 || r->peer >= t->o.nranks || r->peer == t->o.rank ||
        r->channel < 0 || r->channel >= t->o.channels) {
        pp_error_set(e, rc, "rank %d: post: bad peer %d or channel %d",
                     t->o.rank, r ? r->peer : -1, r ? r->channel : -1);
        goto out;
    }
    q = &t->qps[r->peer * t->o.channels + r->channel];
    if (!q->up) {
        pp_error_set(e, rc,
                     "rank %d: %s rank %d (channel %d): not "
                     "connected",
                     t->o.rank, dir(r), r->peer, r->channel);
        goto out;
    }
    if (!mr || (char *)r->buf < mr->buf ||
        r->len > mr->len - (size_t)((char *)r->buf - mr->buf)) {
        pp_error_set(e, rc,
                     "rank %d: %s rank %d (channel %d): %zu bytes "
                     "outside the registered region",
                     t->o.rank, dir(r), r->peer, r->channel, r->len);
        goto out;
    }
    if (r->is_send && mr->stage) {
        rc = pp__vb_stage_out(mr, r->buf, r->len, e);
        if (rc) goto out;
    }
    v = pp_xcalloc(1, sizeof *v);
    v->r = r;
    v->q = q;
    v->mr = mr;
    v->nchunks = r->len ? (r->len + q->chunk - 1) / q->chunk : 1;
    r->done = false;
    r->priv = v;
    v->lnext = t->live;
    if (t->live) t->live->lprev = v;
    t->live = v;
    if (r->is_send) {
        if (q->txq_tail)
            q->txq_tail->next = v;
        else
            q->txq = v;
        q->txq_tail = v;
    } else {
        if (q->rxq_tail)
            q->rxq_tail->next = v;
        else
            q->rxq = v;
        q->rxq_tail = v;
    }
    rc = progress(t, q, e);
out:
    return rc;
}

/* wc status -> code: the peer's side failed or never answered (retries
 * exhausted, remote errors) is PP_EPEER; the rest is local, PP_EIO. */
static int wc_code(enum ibv_wc_status s) {
    switch (s) {
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
    case IBV_WC_REM_OP_ERR:
    case IBV_WC_REM_ABORT_ERR:
    case IBV_WC_REM_INV_RD_REQ_ERR: return PP_EPEER;
    default: return PP_EIO;
    }
}

static int complete(pp_xport *t, const struct ibv_wc *wc, pp_error *e) {
    pp__vb_qp *q;
    pp__vb_req *v;
    int rc = 0;

    if (wc->wr_id & 1u) {
        q = (pp__vb_qp *)(uintptr_t)(wc->wr_id & ~(uint64_t)1);
        q->sq_used--;
        if (wc->status != IBV_WC_SUCCESS)
            rc = fail(t, e, wc_code(wc->status),
                      "rank %d: credit to rank "
                      "%d (channel %d): wc status %d (%s), vendor_err 0x%x",
                      t->o.rank, q->peer, q->ch, (int)wc->status,
                      ibv_wc_status_str(wc->status), wc->vendor_err);
        goto out;
    }
    v = (pp__vb_req *)(uintptr_t)wc->wr_id;
    q = v->q;
    if (v->r->is_send)
        q->sq_used--;
    else
        q->rq_used--;
    if (wc->status != IBV_WC_SUCCESS) {
        rc = fail(t, e, wc_code(wc->status),
                  "rank %d: %s rank %d (channel "
                  "%d): wc status %d (%s), vendor_err 0x%x",
                  t->o.rank, dir(v->r), q->peer, q->ch, (int)wc->status,
                  ibv_wc_status_str(wc->status), wc->vendor_err);
        goto out;
    }
    v->completed++;
    if (!v->r->is_send) v->bytes += wc->byte_len;
    if (v->completed < v->nchunks) goto out;
    if (!v->r->is_send && v->bytes != v->r->len) {
        rc = fail(t, e, PP_EPEER,
                  "rank %d: recv from rank %d (channel %d): "
                  "got %zu bytes, expected %zu (the ranks' schedules "
                  "differ)",
                  t->o.rank, q->peer, q->ch, v->bytes, v->r->len);
        goto out;
    }
    if (!v->r->is_send && v->mr->stage) {
        rc = pp__vb_stage_in(v->mr, v->r->buf, v->r->len, e);
        if (rc) goto out;
    }
    v->r->done = true;
    v->r->priv = NULL;
    unlink_req(t, v);
    free(v);
out:
    return rc;
}

static int timed_out(pp_xport *t, pp_xreq *const *reqs, size_t n,
                     double deadline, pp_error *e) {
    char list[512] = "";
    size_t used = 0, left = 0;

    for (size_t i = 0; i < n; i++) {
        const pp_xreq *r = reqs[i];
        const pp__vb_req *v = r->priv;

        if (r->done) continue;
        if (left++ >= LIST_MAX) continue;
        used = strlen(list);
        snprintf(list + used, sizeof list - used,
                 "%s%s rank %d (channel "
                 "%d, %zu of %zu chunks done%s)",
                 used ? ", " : "", dir(r), r->peer, r->channel,
                 v ? v->completed : 0, v ? v->nchunks : 0,
                 v && r->is_send && v->posted == 0
                     ? ", no credit from the peer yet"
                     : "");
    }
    return pp_error_set(e, PP_ETIMEOUT,
                        "rank %d: timed out (deadline "
                        "passed %.3f s ago) with %zu transfer%s not done: "
                        "%s%s",
                        t->o.rank, pp__vb_now() - deadline, left,
                        left == 1 ? "" : "s", list,
                        left > LIST_MAX ? ", ..." : "");
}

int pp__vb_wait(pp_xport *t, pp_xreq *const *reqs, size_t n, double deadline,
                pp_error *e) {
    struct ibv_wc wc[POLL_BATCH];
    int rc = 0, got;

    for (size_t i = 0; i < n; i++) {
        if (!reqs[i]->done && !reqs[i]->priv) {
            rc = pp_error_set(e, PP_EINVAL,
                              "rank %d: wait: %s rank %d "
                              "was never posted",
                              t->o.rank, dir(reqs[i]), reqs[i]->peer);
            goto out;
        }
    }
    for (;;) {
        size_t i = 0;

        if (t->err_code) {
            rc = pp_error_set(e, t->err_code, "%s", t->err_msg);
            goto out;
        }
        while (i < n && reqs[i]->done) i++;
        if (i == n) goto out;
        got = pp__ibv_poll_cq(t->cq, POLL_BATCH, wc);
        if (got < 0) {
            rc = fail(t, e, PP_EIO, "rank %d: ibv_poll_cq failed (%d)",
                      t->o.rank, got);
            goto out;
        }
        for (int k = 0; k < got; k++) {
            rc = complete(t, &wc[k], e);
            if (rc) goto out;
        }
        /* Freed slots and credits that arrived let more be posted. */
        for (size_t c = 0; c < t->n_conn; c++) {
            rc = progress(t, &t->qps[t->conn[c]], e);
            if (rc) goto out;
        }
        if (got == 0 && pp__vb_now() >= deadline) {
            rc = timed_out(t, reqs, n, deadline, e);
            goto out;
        }
    }
out:
    return rc;
}

/* Frees the requests still posted (destroy(), after a failure): their
 * WRs die with the QPs. */
void pp__vb_free_reqs(pp_xport *t) {
    while (t->live) {
        pp__vb_req *v = t->live;

        unlink_req(t, v);
        v->r->priv = NULL;
        free(v);
    }
}
