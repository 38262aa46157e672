/*
 * tests/verbs_fake.h: a fake HCA behind exec/verbs_shim.h, for
 * test_exec_verbs.c.  The test links with -Wl,--wrap=pp__ibv_<name> for
 * every shim function, so xport_verbs.c's calls land in verbs_fake.c.
 *
 * The fake is a loopback fabric inside the process: SENDs are copied
 * into the receive the destination QP (found by the dest_qp_num given at
 * RTR) has at the head of its queue, RDMA WRITEs are copied to their
 * remote address (the peer transport lives in the same process), and
 * completions go to each side's CQ.  It counts live objects so every
 * test can check that nothing leaked, logs every modify_qp, and can be
 * told to fail any call.
 */
#ifndef PODPLAN_TESTS_VERBS_FAKE_H
#define PODPLAN_TESTS_VERBS_FAKE_H

#include <infiniband/verbs.h>
#include <stdbool.h>

#define FAKE_MAX_DEV 4
#define FAKE_MAX_LOG 256
#define FAKE_MAX_GID 8

typedef struct fake_modify {
    uint32_t qpn;
    struct ibv_qp_attr attr;
    int mask;
} fake_modify;

typedef struct fake_state {
    /* the devices: configure before create() */
    int n_dev;
    const char *dev_name[FAKE_MAX_DEV];
    enum ibv_port_state port_state[FAKE_MAX_DEV];
    uint8_t link_layer; /* every device */
    enum ibv_mtu mtu;   /* read at ibv_query_port time */
    uint16_t lid;       /* idem */
    uint32_t max_msg;   /* idem */
    int gid_tbl_len;
    union ibv_gid gid[FAKE_MAX_GID];
    /* failure injection */
    const char *fail;             /* "open_device", "alloc_pd", "create_cq",
                                   "create_qp", "reg_mr", "post_send",
                                   "post_recv", "query_port",
                                   "query_device", "modify_qp" */
    int fail_after;               /* that many calls succeed first */
    enum ibv_qp_state fail_state; /* modify_qp: fail the move to this */
    int fail_errno;
    enum ibv_wc_status wc_status; /* != 0: the next send completes so */
    uint32_t wc_vendor_err;
    bool hold_sends; /* SENDs neither delivered nor completed */
    /* what happened */
    int live_ctx, live_pd, live_cq, live_qp, live_mr, live_list;
    int n_modify;
    fake_modify modify[FAKE_MAX_LOG];
    int n_send_posted, n_credit_posted, n_recv_posted;
    int rnr;             /* SENDs that found no receive posted */
    int query_gid_index; /* last index asked for, -1 if none */
} fake_state;

extern fake_state fake;

/* Resets the fake to one ACTIVE InfiniBand device "mlx5_0". */
void fake_reset(void);
/* 0 when every object created was destroyed, else prints the counts. */
int fake_leaks(void);

#endif /* PODPLAN_TESTS_VERBS_FAKE_H */
