/*
 * exec/xport_verbs.c: the verbs transport of `podplan exec collective`:
 * RC queue pairs over libibverbs, behind the ops table of exec/xport.h.
 *
 * What a run needs
 *   - rdma-core (libibverbs and the provider of the HCA, e.g. mlx5) and
 *     an RDMA device with an ACTIVE port (`ibv_devinfo`; port 1 unless
 *     ib_port says otherwise).  No device: create() fails with
 *     PP_ENODEV and names what it found.
 *   - Locked memory: every QP's rings and every registered buffer is
 *     pinned; run with `ulimit -l unlimited` (containers: --ulimit
 *     memlock=-1).  A registration refused for it says so.
 *   - GPU buffers: a CUDA build; dma-buf registration needs GPUDirect
 *     RDMA (Linux >= 5.12, an open NVIDIA kernel module, rdma-core >= 34).
 *     Without it the transport stages through registered host memory
 *     (verbs_dmabuf.c).
 *
 * IB or RoCE: the port's link layer decides.  InfiniBand addresses a
 * peer by LID, no GRH unless gid_index is given (routing between
 * subnets).  Ethernet (RoCE) needs a GRH and a GID: gid_index if given,
 * else the first RoCE v2 GID holding an IPv4-mapped address, read from
 * /sys/class/infiniband/<dev>/ports/<port>/gid_attrs/types/<i> and
 * gids/<i> as NCCL and perftest do (verbs_addr.c).
 *
 * Connection: create() makes every QP this rank could use ((nranks - 1)
 * * channels, left in RESET) so that the one all-gather of address blobs
 * carries their numbers; connect() moves the QPs of the peers asked for
 * through INIT, RTR and RTS, peers in increasing rank order.  Moving a
 * QP is local (no message is exchanged), so the order cannot deadlock;
 * a rank that sends before its peer reached RTR is covered by the
 * credits of verbs_post.c (nothing is sent before the peer said it has a
 * receive posted, which it can only do once in RTS).
 *
 * Every verbs call goes through exec/verbs_shim.c so that the tests can
 * put a fake HCA behind them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include "verbs_int.h"

/* The cap on one work request when a port reports none. */
#define PP_VB_MAX_MSG_DEFAULT (1u << 30)

/* " (ulimit -l is 8 MiB: run with ulimit -l unlimited)" for the errnos
 * a memlock limit produces, "" otherwise. */
static const char *memlock_hint(int err, char *buf, size_t len) {
    struct rlimit rl;

    buf[0] = '\0';
    if (err != ENOMEM && err != EPERM && err != EAGAIN) return buf;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        snprintf(buf, len,
                 " (locked memory is limited to %llu KiB: run "
                 "with ulimit -l unlimited)",
                 (unsigned long long)(rl.rlim_cur / 1024));
    return buf;
}

/* Opens dev and checks its port; on success t->ctx and t->port are set. */
static int open_port(pp_xport *t, struct ibv_device *dev, char *why,
                     size_t why_len, pp_error *e) {
    const char *name = pp__ibv_get_device_name(dev);
    int port = t->o.ib_port, rc = 0, err;

    t->ctx = pp__ibv_open_device(dev);
    if (!t->ctx) {
        rc = PP_EIO;
        snprintf(why, why_len, "%s: ibv_open_device: %s", name,
                 strerror(errno ? errno : ENODEV));
        goto out;
    }
    err = pp__ibv_query_port(t->ctx, (uint8_t)port, &t->port);
    if (err) {
        rc = PP_EIO;
        snprintf(why, why_len, "%s: ibv_query_port(%d): %s", name, port,
                 strerror(err > 0 ? err : errno));
        goto close;
    }
    if (t->port.state != IBV_PORT_ACTIVE) {
        rc = PP_ENODEV;
        snprintf(why, why_len, "%s port %d is %s, not ACTIVE", name, port,
                 ibv_port_state_str(t->port.state));
        goto close;
    }
    snprintf(t->devname, sizeof t->devname, "%s", name);
    goto out;
close:
    pp__ibv_close_device(t->ctx);
    t->ctx = NULL;
out:
    (void)e;
    return rc;
}

/* opts->device, or the first device whose port is ACTIVE. */
static int pick_device(pp_xport *t, pp_error *e) {
    struct ibv_device **list;
    char why[256], all[768] = "";
    int n = 0, rc = PP_ENODEV, code = PP_ENODEV;
    bool found = false;

    list = pp__ibv_get_device_list(&n);
    if (!list || n == 0) {
        pp_error_set(e, PP_ENODEV,
                     "rank %d: no RDMA device found "
                     "(ibv_get_device_list: %s): is an HCA present, its "
                     "driver loaded and rdma-core's provider installed?",
                     t->o.rank, list ? "none" : strerror(errno));
        goto free;
    }
    for (int i = 0; i < n; i++) {
        const char *name = pp__ibv_get_device_name(list[i]);
        int r;

        if (t->o.device && strcmp(name, t->o.device)) continue;
        found = true;
        r = open_port(t, list[i], why, sizeof why, e);
        if (r == 0) {
            rc = 0;
            goto free;
        }
        if (r == PP_EIO)
            code = PP_EIO; /* a device that failed beats one not up */
        size_t used = strlen(all);
        snprintf(all + used, sizeof all - used, "%s%s", used ? "; " : "", why);
    }
    if (!found) {
        size_t used = 0;
        for (int i = 0; i < n; i++) {
            used = strlen(all);
            snprintf(all + used, sizeof all - used, "%s%s", i ? ", " : "",
                     pp__ibv_get_device_name(list[i]));
        }
        rc = pp_error_set(e, PP_ENODEV,
                          "rank %d: no RDMA device named "
                          "\"%s\" (have: %s)",
                          t->o.rank, t->o.device, all);
        goto free;
    }
    rc = pp_error_set(e, code, "rank %d: no usable RDMA port %d: %s", t->o.rank,
                      t->o.ib_port, all);
free:
    /* Opened contexts outlive the list (libibverbs' rule). */
    if (list) pp__ibv_free_device_list(list);
    return rc;
}

/* The GID: IB uses it only when gid_index is given; RoCE always. */
static int pick_gid(pp_xport *t, pp_error *e) {
    int rc = 0, err;

    t->gid_index = t->o.gid_index;
    if (t->gid_index < 0 && t->port.link_layer == IBV_LINK_LAYER_ETHERNET) {
        rc = pp__vb_choose_gid(t->devname, t->o.ib_port, t->port.gid_tbl_len,
                               &t->gid_index, e);
        if (rc) goto out;
    }
    if (t->gid_index < 0) goto out;
    if (t->gid_index >= t->port.gid_tbl_len) {
        rc = pp_error_set(e, PP_ERANGE,
                          "rank %d: gid_index %d: %s port %d "
                          "has %d GIDs",
                          t->o.rank, t->gid_index, t->devname, t->o.ib_port,
                          t->port.gid_tbl_len);
        goto out;
    }
    err =
        pp__ibv_query_gid(t->ctx, (uint8_t)t->o.ib_port, t->gid_index, &t->gid);
    if (err)
        rc = pp_error_set(e, PP_EIO,
                          "rank %d: ibv_query_gid(%s port %d, "
                          "index %d): %s",
                          t->o.rank, t->devname, t->o.ib_port, t->gid_index,
                          strerror(err > 0 ? err : errno));
out:
    return rc;
}

static int create_qps(pp_xport *t, int max_wr, pp_error *e) {
    struct ibv_qp_init_attr ia;
    char hint[160];
    int rc = 0, C = t->o.channels;

    for (int p = 0; p < t->o.nranks; p++) {
        for (int c = 0; c < C && p != t->o.rank; c++) {
            pp__vb_qp *q = &t->qps[p * C + c];

            memset(&ia, 0, sizeof ia);
            ia.send_cq = t->cq;
            ia.recv_cq = t->cq;
            ia.qp_type = IBV_QPT_RC;
            ia.sq_sig_all = 1; /* every WR completes: simple accounting */
            ia.cap.max_send_wr = (uint32_t)max_wr;
            ia.cap.max_recv_wr = (uint32_t)max_wr;
            ia.cap.max_send_sge = 1;
            ia.cap.max_recv_sge = 1;
            ia.cap.max_inline_data = 16; /* the credit writes */
            q->qp = pp__ibv_create_qp(t->pd, &ia);
            if (!q->qp) {
                int err = errno ? errno : ENOMEM;
                rc = pp_error_set(e, PP_EIO,
                                  "rank %d: ibv_create_qp for "
                                  "rank %d (channel %d) on %s: %s%s",
                                  t->o.rank, p, c, t->devname, strerror(err),
                                  memlock_hint(err, hint, sizeof hint));
                goto out;
            }
        }
    }
out:
    return rc;
}

static void vb_destroy(pp_xport *t);

static int vb_create(const pp_xport_opts *o, pp_xport **out, char *addr,
                     size_t *addr_len, pp_error *e) {
    pp_xport *t = NULL;
    struct ibv_device_attr da;
    struct timespec ts;
    char hint[160];
    int rc = PP_EINVAL, err, cqe, wr;
    size_t nq;

    if (!o || !out || !addr || !addr_len || o->nranks < 1 || o->rank < 0 ||
        o->rank >= o->nranks || o->channels < 1 || o->channels > 0xffff) {
        pp_error_set(e, rc,
                     "verbs: bad options (rank %d of %d, %d "
                     "channels)",
                     o ? o->rank : -1, o ? o->nranks : 0, o ? o->channels : 0);
        goto out;
    }
    t = pp_xcalloc(1, sizeof *t);
    t->o = *o;
    t->o.device = NULL;
    if (t->o.ib_port <= 0) t->o.ib_port = 1;
    t->gid_index = -1;
    nq = (size_t)o->nranks * (size_t)o->channels;
    t->qps = pp_xcalloc(nq, sizeof *t->qps);
    t->conn = pp_xcalloc(nq, sizeof *t->conn);
    for (size_t i = 0; i < nq; i++) {
        t->qps[i].peer = (int)(i / (size_t)o->channels);
        t->qps[i].ch = (int)(i % (size_t)o->channels);
    }
    t->o.device = o->device; /* borrowed for pick_device only */
    rc = pick_device(t, e);
    t->o.device = t->devname;
    if (rc) goto fail;
    err = pp__ibv_query_device(t->ctx, &da);
    if (err) {
        rc = pp_error_set(e, PP_EIO, "rank %d: ibv_query_device(%s): %s",
                          t->o.rank, t->devname,
                          strerror(err > 0 ? err : errno));
        goto fail;
    }
    rc = pick_gid(t, e);
    if (rc) goto fail;
    if (!t->port.max_msg_sz) t->port.max_msg_sz = PP_VB_MAX_MSG_DEFAULT;
    /* A fresh PSN per run, so late packets of a previous run that reused
     * a QP number do not match (rc_pingpong draws it the same way). */
    clock_gettime(CLOCK_REALTIME, &ts);
    t->psn =
        ((uint32_t)ts.tv_nsec ^ (uint32_t)getpid() * 2654435761u) & 0xffffffu;

    t->pd = pp__ibv_alloc_pd(t->ctx);
    if (!t->pd) {
        rc = pp_error_set(e, PP_EIO, "rank %d: ibv_alloc_pd(%s): %s", t->o.rank,
                          t->devname, strerror(errno));
        goto fail;
    }
    /* The credit slots (verbs_post.c): peers RDMA-write into them. */
    t->ctl = pp_xcalloc(nq, sizeof *t->ctl);
    t->ctl_mr =
        pp__ibv_reg_mr(t->pd, t->ctl, nq * sizeof *t->ctl,
                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!t->ctl_mr) {
        err = errno;
        rc = pp_error_set(e, PP_EIO,
                          "rank %d: ibv_reg_mr(%zu bytes of "
                          "credit slots): %s%s",
                          t->o.rank, nq * sizeof *t->ctl, strerror(err),
                          memlock_hint(err, hint, sizeof hint));
        goto fail;
    }
    wr = PP_VB_SQ_DEPTH;
    if (da.max_qp_wr > 0 && da.max_qp_wr < wr) wr = da.max_qp_wr;
    cqe = 2 * wr * (int)(nq > 1 ? nq - (size_t)o->channels : 1);
    if (da.max_cqe > 0 && cqe > da.max_cqe) cqe = da.max_cqe;
    t->cq = pp__ibv_create_cq(t->ctx, cqe);
    if (!t->cq) {
        rc = pp_error_set(e, PP_EIO,
                          "rank %d: ibv_create_cq(%s, %d "
                          "entries): %s",
                          t->o.rank, t->devname, cqe, strerror(errno));
        goto fail;
    }
    rc = create_qps(t, wr, e);
    if (rc) goto fail;
    pp__vb_addr_encode(t, addr, addr_len);
    *out = t;
    goto out;
fail:
    vb_destroy(t);
out:
    return rc;
}

/* RESET -> INIT -> RTR -> RTS for one QP.  The attribute masks are the
 * ones the verbs spec requires for RC in each transition (rc_pingpong's
 * pp_connect_ctx). */
static int qp_up(pp_xport *t, pp__vb_qp *q, const pp__vb_addr *a, pp_error *e) {
    struct ibv_qp_attr at;
    const char *step = "INIT";
    int rc = 0, err;

    memset(&at, 0, sizeof at);
    at.qp_state = IBV_QPS_INIT;
    at.pkey_index = 0;
    at.port_num = (uint8_t)t->o.ib_port;
    at.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                         IBV_ACCESS_REMOTE_READ;
    err = pp__ibv_modify_qp(q->qp, &at,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                IBV_QP_ACCESS_FLAGS);
    if (err) goto fail;

    step = "RTR";
    memset(&at, 0, sizeof at);
    at.qp_state = IBV_QPS_RTR;
    at.path_mtu = (enum ibv_mtu)(
        a->mtu < t->port.active_mtu ? a->mtu : t->port.active_mtu);
    at.dest_qp_num = pp__vb_addr_qpn(a, t->o.rank, q->ch);
    at.rq_psn = a->psn;
    at.max_dest_rd_atomic = 1;
    at.min_rnr_timer = 12; /* 0.64 ms */
    at.ah_attr.dlid = a->lid;
    at.ah_attr.sl = 0;
    at.ah_attr.src_path_bits = 0;
    at.ah_attr.port_num = (uint8_t)t->o.ib_port;
    if (t->port.link_layer == IBV_LINK_LAYER_ETHERNET ||
        (t->gid_index >= 0 && (a->flags & PP_VB_FLAG_GID))) {
        at.ah_attr.is_global = 1;
        at.ah_attr.grh.dgid = a->gid;
        at.ah_attr.grh.sgid_index = (uint8_t)t->gid_index;
        at.ah_attr.grh.hop_limit = 64; /* RoCE v2 crosses IP routers */
        at.ah_attr.grh.flow_label = 0;
        at.ah_attr.grh.traffic_class = 0;
    }
    err = pp__ibv_modify_qp(
        q->qp, &at,
        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (err) goto fail;

    step = "RTS";
    memset(&at, 0, sizeof at);
    at.qp_state = IBV_QPS_RTS;
    at.timeout = 14; /* 4.096 us * 2^14 = 67 ms */
    at.retry_cnt = 7;
    at.rnr_retry = 7; /* 7 = retry forever */
    at.sq_psn = t->psn;
    at.max_rd_atomic = 1;
    err = pp__ibv_modify_qp(q->qp, &at,
                            IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                IBV_QP_MAX_QP_RD_ATOMIC);
    if (err) goto fail;
    goto out;
fail:
    rc = pp_error_set(
        e, PP_EIO,
        "rank %d: connect to rank %d (channel %d): "
        "ibv_modify_qp to %s: %s%s",
        t->o.rank, q->peer, q->ch, step, strerror(err > 0 ? err : errno),
        step[1] == 'T' && step[2] == 'R' ? " (peer address, MTU or GID wrong?)"
                                         : "");
out:
    return rc;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int vb_connect(pp_xport *t, const int *peers, size_t n_peers,
                      const char *const *addrs, const size_t *addr_lens,
                      pp_error *e) {
    pp__vb_addr a;
    int *order = NULL, rc = 0, C = t->o.channels;

    if (n_peers && (!peers || !addrs || !addr_lens)) {
        rc = pp_error_set(e, PP_EINVAL, "rank %d: connect: no addresses",
                          t->o.rank);
        goto out;
    }
    /* Lower ranks first, whatever order the collective listed them in:
     * every rank then brings its QPs up in the same global order. */
    order = pp_xcalloc(n_peers ? n_peers : 1, sizeof *order);
    memcpy(order, peers, n_peers * sizeof *order);
    qsort(order, n_peers, sizeof *order, cmp_int);
    for (size_t i = 0; i < n_peers; i++) {
        int p = order[i];

        if (p < 0 || p >= t->o.nranks || p == t->o.rank) {
            rc = pp_error_set(e, PP_EINVAL,
                              "rank %d: connect: peer %d is "
                              "not another rank of %d",
                              t->o.rank, p, t->o.nranks);
            goto out;
        }
        if (i && p == order[i - 1]) continue;
        rc = pp__vb_addr_decode(t, p, addrs[p], addr_lens[p], &a, e);
        if (rc) goto out;
        for (int c = 0; c < C; c++) {
            pp__vb_qp *q = &t->qps[p * C + c];

            if (q->up) continue;
            rc = qp_up(t, q, &a, e);
            if (rc) goto out;
            q->up = true;
            q->chunk = a.max_msg && a.max_msg < t->port.max_msg_sz
                           ? a.max_msg
                           : t->port.max_msg_sz;
            q->remote_ctl = a.ctl_addr + 8u * (uint64_t)(t->o.rank * C + c);
            q->remote_rkey = a.ctl_rkey;
            t->conn[t->n_conn++] = p * C + c;
        }
    }
out:
    free(order);
    return rc;
}

static int vb_reg(pp_xport *t, void *buf, size_t len, bool on_device,
                  pp_xmr **out, pp_error *e) {
    pp_xmr *x = NULL;
    char hint[160];
    int rc = 0, err;

    if (!buf || !len || !out) {
        rc = pp_error_set(e, PP_EINVAL, "rank %d: register: empty buffer",
                          t->o.rank);
        goto out;
    }
    x = pp_xcalloc(1, sizeof *x);
    x->buf = buf;
    x->len = len;
    x->on_device = on_device;
    if (on_device) {
        rc = pp__vb_reg_device(t, x, e);
        if (rc) goto fail;
    } else {
        /* Local write only: SEND/RECV never let the peer address it. */
        x->mr = pp__ibv_reg_mr(t->pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
        if (!x->mr) {
            err = errno;
            rc = pp_error_set(e, PP_EIO,
                              "rank %d: ibv_reg_mr(%zu bytes) "
                              "on %s: %s%s",
                              t->o.rank, len, t->devname, strerror(err),
                              memlock_hint(err, hint, sizeof hint));
            goto fail;
        }
    }
    x->next = t->mrs;
    if (t->mrs) t->mrs->prev = x;
    t->mrs = x;
    *out = x;
    goto out;
fail:
    free(x);
out:
    return rc;
}

static void vb_dereg(pp_xport *t, pp_xmr *x) {
    if (!t || !x) return;
    if (x->prev)
        x->prev->next = x->next;
    else
        t->mrs = x->next;
    if (x->next) x->next->prev = x->prev;
    if (x->on_device)
        pp__vb_dereg_device(x);
    else if (x->mr)
        pp__ibv_dereg_mr(x->mr);
    free(x);
}

/* Frees in the reverse order of create(); every step checks what exists,
 * so a transport that failed half-way is freed the same way.  Regions
 * the caller did not deregister are deregistered here. */
static void vb_destroy(pp_xport *t) {
    size_t nq;

    if (!t) return;
    nq = (size_t)t->o.nranks * (size_t)t->o.channels;
    pp__vb_free_reqs(t);
    while (t->mrs) vb_dereg(t, t->mrs);
    for (size_t i = nq; t->qps && i-- > 0;)
        if (t->qps[i].qp) pp__ibv_destroy_qp(t->qps[i].qp);
    if (t->cq) pp__ibv_destroy_cq(t->cq);
    if (t->ctl_mr) pp__ibv_dereg_mr(t->ctl_mr);
    free(t->ctl);
    if (t->pd) pp__ibv_dealloc_pd(t->pd);
    if (t->ctx) pp__ibv_close_device(t->ctx);
    free(t->conn);
    free(t->qps);
    free(t);
}

size_t pp__vb_addr_max(const pp_xport_opts *o) {
    return pp__vb_addr_size(o->nranks, o->channels);
}

const pp_xport_ops pp_xport_verbs = {
    .name = "verbs",
    .create = vb_create,
    .connect = vb_connect,
    .reg = vb_reg,
    .dereg = vb_dereg,
    .post = pp__vb_post,
    .wait = pp__vb_wait,
    .destroy = vb_destroy,
    .addr_size = pp__vb_addr_max,
};
