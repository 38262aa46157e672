/*
 * exec/verbs_shim.c: one-line forwards to libibverbs, so that tests can
 * wrap them at link time (see verbs_shim.h for why).  No logic here: what
 * is not in this file is what the tests exercise.
 */
#include "verbs_shim.h"

struct ibv_device **pp__ibv_get_device_list(int *num_devices) {
    return ibv_get_device_list(num_devices);
}

void pp__ibv_free_device_list(struct ibv_device **list) {
    ibv_free_device_list(list);
}

const char *pp__ibv_get_device_name(struct ibv_device *device) {
    return ibv_get_device_name(device);
}

struct ibv_context *pp__ibv_open_device(struct ibv_device *device) {
    return ibv_open_device(device);
}

int pp__ibv_close_device(struct ibv_context *context) {
    return ibv_close_device(context);
}

int pp__ibv_query_device(struct ibv_context *context,
                         struct ibv_device_attr *attr) {
    return ibv_query_device(context, attr);
}

int pp__ibv_query_port(struct ibv_context *context, uint8_t port,
                       struct ibv_port_attr *attr) {
    return ibv_query_port(context, port, attr);
}

int pp__ibv_query_gid(struct ibv_context *context, uint8_t port, int index,
                      union ibv_gid *gid) {
    return ibv_query_gid(context, port, index, gid);
}

struct ibv_pd *pp__ibv_alloc_pd(struct ibv_context *context) {
    return ibv_alloc_pd(context);
}

int pp__ibv_dealloc_pd(struct ibv_pd *pd) {
    return ibv_dealloc_pd(pd);
}

struct ibv_cq *pp__ibv_create_cq(struct ibv_context *context, int cqe) {
    return ibv_create_cq(context, cqe, NULL, NULL, 0);
}

int pp__ibv_destroy_cq(struct ibv_cq *cq) {
    return ibv_destroy_cq(cq);
}

struct ibv_qp *pp__ibv_create_qp(struct ibv_pd *pd,
                                 struct ibv_qp_init_attr *attr) {
    return ibv_create_qp(pd, attr);
}

int pp__ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask) {
    return ibv_modify_qp(qp, attr, mask);
}

int pp__ibv_destroy_qp(struct ibv_qp *qp) {
    return ibv_destroy_qp(qp);
}

struct ibv_mr *pp__ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
                              int access) {
    return ibv_reg_mr(pd, addr, len, access);
}

struct ibv_mr *pp__ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
                                     size_t len, uint64_t iova, int fd,
                                     int access) {
    return ibv_reg_dmabuf_mr(pd, offset, len, iova, fd, access);
}

int pp__ibv_dereg_mr(struct ibv_mr *mr) {
    return ibv_dereg_mr(mr);
}

int pp__ibv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                      struct ibv_send_wr **bad) {
    return ibv_post_send(qp, wr, bad);
}

int pp__ibv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                      struct ibv_recv_wr **bad) {
    return ibv_post_recv(qp, wr, bad);
}

int pp__ibv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
    return ibv_poll_cq(cq, n, wc);
}
