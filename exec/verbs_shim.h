/*
 * exec/verbs_shim.h: every libibverbs call of the verbs transport, as real
 * functions (private to exec/).
 *
 * Why: half of the verbs API is `static inline` in <infiniband/verbs.h>
 * (ibv_post_send, ibv_post_recv, ibv_poll_cq go straight to the provider's
 * function table; ibv_query_port and ibv_reg_mr are macros over inline
 * helpers), so a test cannot replace them at link time.  xport_verbs.c
 * calls only these pp__ibv_* functions; each is a one-line forward, and
 * tests/test_exec_verbs.c links with -Wl,--wrap=pp__ibv_... to put a fake
 * HCA behind them.  The signatures and return conventions are those of
 * the ibv_* call of the same name (NULL + errno, or an errno value).
 */
#ifndef PODPLAN_EXEC_VERBS_SHIM_H
#define PODPLAN_EXEC_VERBS_SHIM_H

#include <infiniband/verbs.h>

struct ibv_device **pp__ibv_get_device_list(int *num_devices);
void pp__ibv_free_device_list(struct ibv_device **list);
const char *pp__ibv_get_device_name(struct ibv_device *device);
struct ibv_context *pp__ibv_open_device(struct ibv_device *device);
int pp__ibv_close_device(struct ibv_context *context);
int pp__ibv_query_device(struct ibv_context *context,
                         struct ibv_device_attr *attr);
int pp__ibv_query_port(struct ibv_context *context, uint8_t port,
                       struct ibv_port_attr *attr);
int pp__ibv_query_gid(struct ibv_context *context, uint8_t port, int index,
                      union ibv_gid *gid);
struct ibv_pd *pp__ibv_alloc_pd(struct ibv_context *context);
int pp__ibv_dealloc_pd(struct ibv_pd *pd);
struct ibv_cq *pp__ibv_create_cq(struct ibv_context *context, int cqe);
int pp__ibv_destroy_cq(struct ibv_cq *cq);
struct ibv_qp *pp__ibv_create_qp(struct ibv_pd *pd,
                                 struct ibv_qp_init_attr *attr);
int pp__ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int pp__ibv_destroy_qp(struct ibv_qp *qp);
struct ibv_mr *pp__ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
                              int access);
/* ibv_reg_dmabuf_mr (rdma-core >= 34; Debian 12 has 44). */
struct ibv_mr *pp__ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
                                     size_t len, uint64_t iova, int fd,
                                     int access);
int pp__ibv_dereg_mr(struct ibv_mr *mr);
int pp__ibv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                      struct ibv_send_wr **bad);
int pp__ibv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                      struct ibv_recv_wr **bad);
int pp__ibv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);

#endif /* PODPLAN_EXEC_VERBS_SHIM_H */
