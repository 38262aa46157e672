/*
 * exec/verbs_int.h: the verbs transport's private state, shared by
 * xport_verbs.c (open, connect, register, close), verbs_post.c (the data
 * path), verbs_addr.c (the address blob, the GID choice) and
 * verbs_dmabuf.c (GPU memory).  Nothing outside exec/ includes it; the
 * tests do, to look inside.
 */
#ifndef PODPLAN_EXEC_VERBS_INT_H
#define PODPLAN_EXEC_VERBS_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "podplan/exec.h"
#include "verbs_shim.h"
#include "xport.h"

/* Work requests outstanding per queue pair.  Small on purpose: every
 * rank creates (nranks - 1) * channels QPs in create(), and the credit
 * protocol (verbs_post.c) keeps the pipe full with 128 chunks of up to
 * the port's message size each. */
#define PP_VB_SQ_DEPTH 128
#define PP_VB_RQ_DEPTH 128

/* The address blob: a fixed 64-byte header, then the 24-bit QP numbers
 * this rank created for every (peer, channel), peer-major, its own slots
 * zero.  Little-endian on the wire.  Layout in verbs_addr.c. */
#define PP_VB_MAGIC 0x42565050u /* "PPVB" */
#define PP_VB_VERSION 1
#define PP_VB_HDR_BYTES 64
#define PP_VB_FLAG_GID 1u /* the GID is valid and the rank wants a GRH */

/* A peer's blob, decoded (verbs_addr.c). */
typedef struct pp__vb_addr {
    uint8_t link_layer; /* IBV_LINK_LAYER_* */
    uint8_t port;
    uint8_t mtu;   /* enum ibv_mtu, the port's active MTU */
    uint8_t flags; /* PP_VB_FLAG_* */
    uint16_t lid;
    uint16_t channels;
    uint32_t rank, nranks;
    uint32_t psn;     /* first PSN of every QP this rank sends on */
    uint32_t max_msg; /* the port's max_msg_sz */
    union ibv_gid gid;
    uint64_t ctl_addr; /* the credit slots (verbs_post.c) */
    uint32_t ctl_rkey;
    const unsigned char *qpns; /* borrowed: into the blob */
} pp__vb_addr;

typedef struct pp__vb_req pp__vb_req;

/* One RC queue pair: this rank's end of (peer, channel). */
typedef struct pp__vb_qp {
    struct ibv_qp *qp;
    int peer, ch;
    bool up;                   /* in RTS */
    size_t chunk;              /* bytes per work request: min of both ports */
    uint32_t sq_used, rq_used; /* work requests outstanding */
    uint64_t rx_posted;        /* receive WQEs posted on this QP, ever */
    uint64_t credit_sent;      /* rx_posted as last written to the peer */
    uint64_t tx_posted;        /* send chunks posted, ever */
    uint64_t remote_ctl;       /* the peer's credit slot for this QP */
    uint32_t remote_rkey;
    pp__vb_req *txq, *txq_tail; /* sends not fully posted, in order */
    pp__vb_req *rxq, *rxq_tail; /* receives not fully posted */
} pp__vb_qp;

/* A registered region.  For GPU memory that cannot be registered by
 * dma-buf, `stage` is a registered host copy (verbs_dmabuf.c). */
struct pp_xmr {
    struct ibv_mr *mr; /* covers buf, or stage when staged */
    char *buf;
    size_t len;
    bool on_device;
    char *stage;         /* NULL unless staged */
    pp_xmr *prev, *next; /* in the transport's list */
};

/* A posted transfer (pp_xreq.priv). */
struct pp__vb_req {
    pp_xreq *r;
    pp__vb_qp *q;
    pp_xmr *mr;
    size_t nchunks, posted, completed;
    size_t bytes;              /* received so far */
    pp__vb_req *next;          /* in q's txq/rxq */
    pp__vb_req *lprev, *lnext; /* in the transport's live list */
};

struct pp_xport {
    pp_xport_opts o; /* device points at devname */
    char devname[64];
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq; /* one CQ for every QP, send and receive */
    struct ibv_port_attr port;
    int gid_index; /* -1: no GID (IB without GRH) */
    union ibv_gid gid;
    uint32_t psn;
    pp__vb_qp *qps; /* nranks * channels, [peer * channels + ch] */
    int *conn;      /* indices into qps of the QPs in RTS */
    size_t n_conn;
    uint64_t *ctl; /* credit slots: [peer * channels + ch] */
    struct ibv_mr *ctl_mr;
    pp__vb_req *live; /* posted, not yet done */
    pp_xmr *mrs;      /* registered, not yet deregistered */
    int err_code;     /* sticky: a completion failed, QPs in error */
    char err_msg[PP_ERROR_MSG_MAX];
};

/* The sysfs root the RoCE GID choice reads ("/sys/class/infiniband");
 * tests point it at a fake tree. */
extern const char *pp__vb_sysfs_root;

/* verbs_addr.c */
size_t pp__vb_addr_size(int nranks, int channels);
size_t pp__vb_addr_max(const pp_xport_opts *o); /* ops->addr_size */
void pp__vb_addr_encode(const pp_xport *t, char *buf, size_t *len);
int pp__vb_addr_decode(const pp_xport *t, int peer, const char *buf, size_t len,
                       pp__vb_addr *out, pp_error *e);
uint32_t pp__vb_addr_qpn(const pp__vb_addr *a, int peer, int ch);
/* Picks the GID index of a RoCE port: the first RoCE v2 GID holding an
 * IPv4-mapped address, else the first RoCE v2 GID.  PP_ENODEV if none. */
int pp__vb_choose_gid(const char *dev, int port, int tbl_len, int *out,
                      pp_error *e);

/* verbs_post.c */
int pp__vb_post(pp_xport *t, pp_xreq *r, pp_xmr *mr, pp_error *e);
int pp__vb_wait(pp_xport *t, pp_xreq *const *reqs, size_t n, double deadline,
                pp_error *e);
void pp__vb_free_reqs(pp_xport *t);
/* Deadlines are pp_exec_now()'s, as every transport's (xport.h). */
#define pp__vb_now pp_exec_now

/* verbs_dmabuf.c: GPU memory; PP_ENOSYS without CUDA. */
int pp__vb_reg_device(pp_xport *t, pp_xmr *x, pp_error *e);
void pp__vb_dereg_device(pp_xmr *x);
int pp__vb_stage_out(pp_xmr *x, const char *buf, size_t len, pp_error *e);
int pp__vb_stage_in(pp_xmr *x, char *buf, size_t len, pp_error *e);

#endif /* PODPLAN_EXEC_VERBS_INT_H */
