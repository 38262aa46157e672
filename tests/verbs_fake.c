/*
 * tests/verbs_fake.c: the fake HCA (see verbs_fake.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_fake.h"

fake_state fake;

#define RQ_MAX 1024
#define CQ_MAX 8192
#define QP_MAX 512

typedef struct fctx {
    struct ibv_context c;
    int dev;
} fctx;

typedef struct fcq {
    struct ibv_cq c;
    struct ibv_wc wc[CQ_MAX];
    int head, n;
} fcq;

typedef struct frecv {
    uint64_t wr_id;
    char *addr;
    uint32_t len;
} frecv;

typedef struct fqp {
    struct ibv_qp q;
    fcq *cq;
    enum ibv_qp_state state;
    uint32_t dest;
    frecv rq[RQ_MAX];
    int rq_head, rq_n;
} fqp;

static struct ibv_device devs[FAKE_MAX_DEV];
static fqp *qps[QP_MAX];
static uint32_t next_qpn, next_key;

void fake_reset(void) {
    memset(&fake, 0, sizeof fake);
    memset(qps, 0, sizeof qps);
    fake.n_dev = 1;
    fake.dev_name[0] = "mlx5_0";
    fake.port_state[0] = IBV_PORT_ACTIVE;
    fake.link_layer = IBV_LINK_LAYER_INFINIBAND;
    fake.mtu = IBV_MTU_4096;
    fake.lid = 7;
    fake.max_msg = 1u << 30;
    fake.gid_tbl_len = FAKE_MAX_GID;
    fake.query_gid_index = -1;
    next_qpn = 0x1234; /* not 0, not contiguous: see create_qp */
    next_key = 0x100;
}

int fake_leaks(void) {
    int n = fake.live_ctx + fake.live_pd + fake.live_cq + fake.live_qp +
            fake.live_mr + fake.live_list;

    if (n)
        fprintf(stderr,
                "fake: leaked ctx %d pd %d cq %d qp %d mr %d "
                "list %d\n",
                fake.live_ctx, fake.live_pd, fake.live_cq, fake.live_qp,
                fake.live_mr, fake.live_list);
    return n;
}

/* Whether the call named `what` fails now (errno set). */
static bool failing(const char *what) {
    if (!fake.fail || strcmp(fake.fail, what)) return false;
    if (fake.fail_after > 0) {
        fake.fail_after--;
        return false;
    }
    errno = fake.fail_errno ? fake.fail_errno : EINVAL;
    return true;
}

struct ibv_device **__wrap_pp__ibv_get_device_list(int *n) {
    struct ibv_device **l = calloc((size_t)fake.n_dev + 1, sizeof *l);

    for (int i = 0; i < fake.n_dev; i++) l[i] = &devs[i];
    *n = fake.n_dev;
    fake.live_list++;
    return l;
}

void __wrap_pp__ibv_free_device_list(struct ibv_device **l) {
    fake.live_list--;
    free(l);
}

const char *__wrap_pp__ibv_get_device_name(struct ibv_device *d) {
    return fake.dev_name[d - devs];
}

struct ibv_context *__wrap_pp__ibv_open_device(struct ibv_device *d) {
    fctx *c;

    if (failing("open_device")) return NULL;
    c = calloc(1, sizeof *c);
    c->dev = (int)(d - devs);
    fake.live_ctx++;
    return &c->c;
}

int __wrap_pp__ibv_close_device(struct ibv_context *c) {
    fake.live_ctx--;
    free(c);
    return 0;
}

int __wrap_pp__ibv_query_device(struct ibv_context *c,
                                struct ibv_device_attr *a) {
    if (failing("query_device")) return errno;
    memset(a, 0, sizeof *a);
    a->max_qp_wr = 32768;
    a->max_cqe = 4194303;
    return 0;
}

int __wrap_pp__ibv_query_port(struct ibv_context *c, uint8_t port,
                              struct ibv_port_attr *a) {
    if (failing("query_port")) return errno;
    memset(a, 0, sizeof *a);
    a->state = fake.port_state[((fctx *)c)->dev];
    a->link_layer = fake.link_layer;
    a->active_mtu = fake.mtu;
    a->max_mtu = IBV_MTU_4096;
    a->lid = fake.lid;
    a->max_msg_sz = fake.max_msg;
    a->gid_tbl_len = fake.gid_tbl_len;
    return 0;
}

int __wrap_pp__ibv_query_gid(struct ibv_context *c, uint8_t port, int i,
                             union ibv_gid *gid) {
    fake.query_gid_index = i;
    if (i < 0 || i >= FAKE_MAX_GID) return EINVAL;
    *gid = fake.gid[i];
    return 0;
}

struct ibv_pd *__wrap_pp__ibv_alloc_pd(struct ibv_context *c) {
    struct ibv_pd *pd;

    if (failing("alloc_pd")) return NULL;
    pd = calloc(1, sizeof *pd);
    pd->context = c;
    fake.live_pd++;
    return pd;
}

int __wrap_pp__ibv_dealloc_pd(struct ibv_pd *pd) {
    fake.live_pd--;
    free(pd);
    return 0;
}

struct ibv_cq *__wrap_pp__ibv_create_cq(struct ibv_context *c, int cqe) {
    fcq *cq;

    if (failing("create_cq")) return NULL;
    cq = calloc(1, sizeof *cq);
    cq->c.cqe = cqe;
    fake.live_cq++;
    return &cq->c;
}

int __wrap_pp__ibv_destroy_cq(struct ibv_cq *cq) {
    fake.live_cq--;
    free(cq);
    return 0;
}

struct ibv_qp *__wrap_pp__ibv_create_qp(struct ibv_pd *pd,
                                        struct ibv_qp_init_attr *a) {
    fqp *q;
    int slot = 0;

    if (failing("create_qp")) return NULL;
    while (slot < QP_MAX && qps[slot]) slot++;
    if (slot == QP_MAX || a->qp_type != IBV_QPT_RC ||
        a->send_cq != a->recv_cq || a->cap.max_inline_data < 8) {
        errno = EINVAL;
        return NULL;
    }
    q = calloc(1, sizeof *q);
    q->q.qp_num = next_qpn;
    next_qpn += 3 + (next_qpn & 7); /* gaps, as real HCAs have */
    q->q.pd = pd;
    q->q.qp_type = IBV_QPT_RC;
    q->cq = (fcq *)a->send_cq;
    q->state = IBV_QPS_RESET;
    qps[slot] = q;
    fake.live_qp++;
    return &q->q;
}

static fqp *find_qp(uint32_t qpn) {
    for (int i = 0; i < QP_MAX; i++)
        if (qps[i] && qps[i]->q.qp_num == qpn) return qps[i];
    return NULL;
}

int __wrap_pp__ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a,
                             int mask) {
    fqp *q = (fqp *)qp;

    if (fake.fail && !strcmp(fake.fail, "modify_qp") &&
        a->qp_state == fake.fail_state)
        return fake.fail_errno ? fake.fail_errno : EINVAL;
    if (fake.n_modify < FAKE_MAX_LOG) {
        fake.modify[fake.n_modify].qpn = qp->qp_num;
        fake.modify[fake.n_modify].attr = *a;
        fake.modify[fake.n_modify].mask = mask;
        fake.n_modify++;
    }
    q->state = a->qp_state;
    if (a->qp_state == IBV_QPS_RTR) q->dest = a->dest_qp_num;
    return 0;
}

int __wrap_pp__ibv_destroy_qp(struct ibv_qp *qp) {
    for (int i = 0; i < QP_MAX; i++)
        if (qps[i] == (fqp *)qp) qps[i] = NULL;
    fake.live_qp--;
    free(qp);
    return 0;
}

struct ibv_mr *__wrap_pp__ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
                                     int access) {
    struct ibv_mr *mr;

    if (failing("reg_mr")) return NULL;
    mr = calloc(1, sizeof *mr);
    mr->pd = pd;
    mr->addr = addr;
    mr->length = len;
    mr->lkey = next_key++;
    mr->rkey = next_key++;
    fake.live_mr++;
    return mr;
}

struct ibv_mr *__wrap_pp__ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t off,
                                            size_t len, uint64_t iova, int fd,
                                            int access) {
    errno = EOPNOTSUPP;
    return NULL;
}

int __wrap_pp__ibv_dereg_mr(struct ibv_mr *mr) {
    fake.live_mr--;
    free(mr);
    return 0;
}

static void push(fcq *cq, uint64_t wr_id, enum ibv_wc_status st,
                 enum ibv_wc_opcode op, uint32_t len, uint32_t vendor) {
    struct ibv_wc *wc;

    if (cq->n == CQ_MAX)
        abort(); /* a CQ overrun: the transport posted too much */
    wc = &cq->wc[(cq->head + cq->n++) % CQ_MAX];
    memset(wc, 0, sizeof *wc);
    wc->wr_id = wr_id;
    wc->status = st;
    wc->opcode = op;
    wc->byte_len = len;
    wc->vendor_err = vendor;
}

int __wrap_pp__ibv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                             struct ibv_recv_wr **bad) {
    fqp *q = (fqp *)qp;

    if (failing("post_recv") || q->rq_n == RQ_MAX) {
        *bad = wr;
        return ENOMEM;
    }
    frecv *r = &q->rq[(q->rq_head + q->rq_n++) % RQ_MAX];
    r->wr_id = wr->wr_id;
    r->addr = wr->num_sge ? (char *)(uintptr_t)wr->sg_list[0].addr : NULL;
    r->len = wr->num_sge ? wr->sg_list[0].length : 0;
    fake.n_recv_posted++;
    return 0;
}

int __wrap_pp__ibv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                             struct ibv_send_wr **bad) {
    fqp *q = (fqp *)qp, *d;
    uint32_t len = wr->num_sge ? wr->sg_list[0].length : 0;
    const char *src =
        wr->num_sge ? (const char *)(uintptr_t)wr->sg_list[0].addr : NULL;

    if (failing("post_send") || q->state != IBV_QPS_RTS) {
        *bad = wr;
        return q->state != IBV_QPS_RTS ? EINVAL : errno;
    }
    if (wr->opcode == IBV_WR_RDMA_WRITE) {
        /* The credit: lands at once in the peer's memory. */
        memcpy((void *)(uintptr_t)wr->wr.rdma.remote_addr, src, len);
        fake.n_credit_posted++;
        push(q->cq, wr->wr_id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, 0);
        return 0;
    }
    fake.n_send_posted++;
    if (fake.hold_sends) return 0;
    if (fake.wc_status != IBV_WC_SUCCESS) {
        push(q->cq, wr->wr_id, fake.wc_status, 0, 0, fake.wc_vendor_err);
        fake.wc_status = IBV_WC_SUCCESS;
        return 0;
    }
    d = find_qp(q->dest);
    if (!d || d->rq_n == 0 || d->dest != qp->qp_num) {
        fake.rnr++; /* the credit protocol must make this impossible */
        push(q->cq, wr->wr_id, IBV_WC_RNR_RETRY_EXC_ERR, 0, 0, 0);
        return 0;
    }
    frecv r = d->rq[d->rq_head];
    d->rq_head = (d->rq_head + 1) % RQ_MAX;
    d->rq_n--;
    if (len > r.len) {
        push(d->cq, r.wr_id, IBV_WC_LOC_LEN_ERR, 0, 0, 0);
        push(q->cq, wr->wr_id, IBV_WC_REM_INV_REQ_ERR, 0, 0, 0);
        return 0;
    }
    if (len) memcpy(r.addr, src, len);
    push(d->cq, r.wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, len, 0);
    push(q->cq, wr->wr_id, IBV_WC_SUCCESS, IBV_WC_SEND, 0, 0);
    return 0;
}

int __wrap_pp__ibv_poll_cq(struct ibv_cq *c, int n, struct ibv_wc *wc) {
    fcq *cq = (fcq *)c;
    int k = 0;

    while (k < n && cq->n) {
        wc[k++] = cq->wc[cq->head];
        cq->head = (cq->head + 1) % CQ_MAX;
        cq->n--;
    }
    return k;
}
