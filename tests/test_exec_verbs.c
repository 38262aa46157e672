/*
 * tests/test_exec_verbs.c: the verbs transport (exec/xport_verbs.c) on a
 * fake HCA (verbs_fake.c, wrapped in at link time over exec/verbs_shim.c).
 *
 * What is checked: device and port choice, the RoCE v2 GID choice from a
 * fake sysfs tree, the QP transitions (order, masks, key attributes),
 * the blob, data through the credit protocol (chunked, deeper than the
 * queues, no SEND ever finding no receive), and every error path's code
 * and message, each followed by a check that no verbs object leaked
 * (heap leaks: `make test-asan`).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "verbs_fake.h"
#include "verbs_int.h"

#define NR 4

typedef struct world {
    int n, C;
    pp_xport *t[NR];
    char addr[NR][PP_XPORT_ADDR_MAX * 4];
    const char *ap[NR];
    size_t len[NR];
} world;

static const pp_xport_ops *V = &pp_xport_verbs;

static pp_xport_opts opts(int rank, int n, int C) {
    pp_xport_opts o = {rank, n, C, 5.0, NULL, 1, -1, false};
    return o;
}

static int setup(void **state) {
    fake_reset();
    pp__vb_sysfs_root = "/nonexistent";
    return 0;
}

static int teardown(void **state) {
    return fake_leaks() ? -1 : 0;
}

/* Creates n ranks; lid and MTU may differ per rank. */
static void world_create(world *w, int n, int C, const enum ibv_mtu *mtu) {
    pp_error e = PP_ERROR_INIT;

    memset(w, 0, sizeof *w);
    w->n = n;
    w->C = C;
    for (int r = 0; r < n; r++) {
        pp_xport_opts o = opts(r, n, C);

        fake.lid = (uint16_t)(10 + r);
        if (mtu) fake.mtu = mtu[r];
        assert_int_equal(V->create(&o, &w->t[r], w->addr[r], &w->len[r], &e),
                         0);
        w->ap[r] = w->addr[r];
    }
}

static int world_connect(world *w, int r, pp_error *e) {
    int peers[NR], k = 0;

    for (int p = w->n - 1; p >= 0; p--) /* high first: connect sorts */
        if (p != r) peers[k++] = p;
    return V->connect(w->t[r], peers, (size_t)k, w->ap, w->len, e);
}

static void world_up(world *w, int n, int C) {
    pp_error e = PP_ERROR_INIT;

    world_create(w, n, C, NULL);
    for (int r = 0; r < n; r++) assert_int_equal(world_connect(w, r, &e), 0);
}

static void world_free(world *w) {
    for (int r = 0; r < w->n; r++) V->destroy(w->t[r]);
}

/* Runs one poll-and-progress round on each rank in turn (deadline in
 * the past) until every rank's requests are done. */
static int drive(world *w, pp_xreq **reqs[NR], const size_t *nreq,
                 pp_error *e) {
    for (int round = 0; round < 10000; round++) {
        bool all = true;

        for (int r = 0; r < w->n; r++) {
            pp_error tmp = PP_ERROR_INIT;
            int rc = nreq[r] ? V->wait(w->t[r], reqs[r], nreq[r], 0, &tmp) : 0;
            if (rc == PP_ETIMEOUT)
                all = false;
            else if (rc)
                return pp_error_set(e, rc, "%s", tmp.msg);
        }
        if (all) return 0;
    }
    return PP_ETIMEOUT;
}

static void expect_msg(const pp_error *e, const char *want) {
    if (!strstr(e->msg, want))
        fail_msg("message \"%s\" lacks \"%s\"", e->msg, want);
}

/* ---- create(): device, port, resources ------------------------------ */

typedef struct create_case {
    const char *fail;
    int fail_after, err, code;
    const char *msg;
} create_case;

static const create_case create_cases[] = {
    {"open_device", 0, EACCES, PP_EIO, "ibv_open_device: Permission denied"},
    {"query_port", 0, EIO, PP_EIO, "ibv_query_port(1)"},
    {"query_device", 0, EIO, PP_EIO, "ibv_query_device(mlx5_0)"},
    {"alloc_pd", 0, ENOMEM, PP_EIO, "ibv_alloc_pd(mlx5_0)"},
    {"reg_mr", 0, EFAULT, PP_EIO, "bytes of credit slots): Bad address"},
    {"create_cq", 0, ENOMEM, PP_EIO, "ibv_create_cq(mlx5_0"},
    {"create_qp", 3, ENOSYS, PP_EIO,
     "ibv_create_qp for rank 2 (channel 1) on mlx5_0: Function not "
     "implemented"},
};

static void test_create_fails(void **state) {
    const create_case *c = *state;
    pp_xport_opts o = opts(1, 4, 2);
    pp_xport *sentinel = (pp_xport *)&o, *t = sentinel;
    pp_error e = PP_ERROR_INIT;
    char addr[PP_XPORT_ADDR_MAX];
    size_t len = 0;

    fake.fail = c->fail;
    fake.fail_after = c->fail_after;
    fake.fail_errno = c->err;
    assert_int_equal(V->create(&o, &t, addr, &len, &e), c->code);
    expect_msg(&e, c->msg);
    expect_msg(&e, "rank 1: ");
    assert_ptr_equal(t, sentinel); /* outputs untouched */
    assert_int_equal(len, 0);
}

static void test_no_device(void **state) {
    pp_xport_opts o = opts(0, 2, 1);
    pp_xport *t = NULL;
    pp_error e = PP_ERROR_INIT;
    char addr[PP_XPORT_ADDR_MAX];
    size_t len = 0;

    fake.n_dev = 0;
    assert_int_equal(V->create(&o, &t, addr, &len, &e), PP_ENODEV);
    expect_msg(&e, "no RDMA device found");
    assert_null(t);
}

static void test_no_active_port(void **state) {
    pp_xport_opts o = opts(0, 2, 1);
    pp_xport *t = NULL;
    pp_error e = PP_ERROR_INIT;
    char addr[PP_XPORT_ADDR_MAX];
    size_t len = 0;

    fake.n_dev = 2;
    fake.dev_name[1] = "mlx5_1";
    fake.port_state[0] = IBV_PORT_DOWN;
    fake.port_state[1] = IBV_PORT_INIT;
    assert_int_equal(V->create(&o, &t, addr, &len, &e), PP_ENODEV);
    expect_msg(&e, "no usable RDMA port 1: mlx5_0 port 1 is down, not "
                   "ACTIVE; mlx5_1 port 1 is init, not ACTIVE");
    assert_null(t);
}

static void test_device_choice(void **state) {
    pp_xport_opts o = opts(0, 2, 1);
    pp_xport *t = NULL;
    pp_error e = PP_ERROR_INIT;
    char addr[PP_XPORT_ADDR_MAX];
    size_t len = 0;

    fake.n_dev = 3;
    fake.dev_name[1] = "mlx5_1";
    fake.dev_name[2] = "mlx5_2";
    fake.port_state[0] = IBV_PORT_DOWN;
    fake.port_state[1] = IBV_PORT_ACTIVE;
    fake.port_state[2] = IBV_PORT_ACTIVE;
    /* The first ACTIVE one... */
    assert_int_equal(V->create(&o, &t, addr, &len, &e), 0);
    assert_string_equal(t->devname, "mlx5_1");
    assert_int_equal(fake.live_ctx, 1); /* mlx5_0 was closed */
    V->destroy(t);
    /* ...or the one named, */
    o.device = "mlx5_2";
    assert_int_equal(V->create(&o, &t, addr, &len, &e), 0);
    assert_string_equal(t->devname, "mlx5_2");
    V->destroy(t);
    /* and a name that is not there says what is. */
    o.device = "mlx5_9";
    t = NULL;
    assert_int_equal(V->create(&o, &t, addr, &len, &e), PP_ENODEV);
    expect_msg(&e, "no RDMA device named \"mlx5_9\" (have: mlx5_0, mlx5_1, "
                   "mlx5_2)");
    assert_null(t);
}

static void test_bad_options(void **state) {
    pp_xport_opts o = opts(2, 2, 1);
    pp_xport *t = NULL;
    pp_error e = PP_ERROR_INIT;
    char addr[PP_XPORT_ADDR_MAX];
    size_t len = 0;

    assert_int_equal(V->create(&o, &t, addr, &len, &e), PP_EINVAL);
    expect_msg(&e, "rank 2 of 2");
    assert_int_equal(fake.live_list, 0);
}

/* ---- the blob --------------------------------------------------------- */

static void test_blob(void **state) {
    world w;
    pp__vb_addr a;
    pp_error e = PP_ERROR_INIT;
    pp_xport_opts big = opts(0, 128, 4), small = opts(0, 2, 1);

    world_create(&w, 3, 2, NULL);
    assert_int_equal(w.len[1], PP_VB_HDR_BYTES + 3 * 3 * 2);
    assert_int_equal(pp__vb_addr_decode(w.t[0], 1, w.addr[1], w.len[1], &a, &e),
                     0);
    assert_int_equal(a.rank, 1);
    assert_int_equal(a.lid, 11);
    assert_int_equal(a.psn, w.t[1]->psn);
    assert_int_equal(a.ctl_rkey, w.t[1]->ctl_mr->rkey);
    for (int p = 0; p < 3; p++)
        for (int c = 0; c < 2; c++)
            assert_int_equal(pp__vb_addr_qpn(&a, p, c),
                             p == 1 ? 0 : w.t[1]->qps[p * 2 + c].qp->qp_num);
    /* Sizes: the additive hook of xport.h. */
    assert_int_equal(pp_xport_addr_max(V, &small), PP_XPORT_ADDR_MAX);
    assert_int_equal(pp_xport_addr_max(V, &big), 64 + 3 * 128 * 4);
    /* A blob that is not ours, or not the rank it claims, is refused. */
    w.addr[2][0] ^= 0x55;
    assert_int_equal(world_connect(&w, 0, &e), PP_EPEER);
    expect_msg(&e, "rank 0: rank 2's address is not a verbs address");
    w.addr[2][0] ^= 0x55;
    pp_error_clear(&e);
    w.ap[2] = w.addr[1];
    assert_int_equal(world_connect(&w, 0, &e), PP_EPEER);
    expect_msg(&e, "the address given for rank 2 says rank 1");
    w.ap[2] = w.addr[2];
    pp_error_clear(&e);
    w.len[2] = 70;
    assert_int_equal(world_connect(&w, 0, &e), PP_EPEER);
    expect_msg(&e, "is 70 bytes, 82 expected");
    world_free(&w);
}

/* ---- connect(): the transitions --------------------------------------- */

static const int MASK_INIT =
    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
static const int MASK_RTR = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                            IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                            IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
static const int MASK_RTS = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                            IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                            IBV_QP_MAX_QP_RD_ATOMIC;

/* Checks rank r's log of one peer's QPs from entry k; returns the next. */
static int check_peer(world *w, int r, int p, int k, bool roce) {
    pp_xport *t = w->t[r], *u = w->t[p];

    for (int c = 0; c < w->C; c++, k += 3) {
        const fake_modify *m = &fake.modify[k];
        uint32_t qpn = t->qps[p * w->C + c].qp->qp_num;

        for (int s = 0; s < 3; s++) assert_int_equal(m[s].qpn, qpn);
        assert_int_equal(m[0].attr.qp_state, IBV_QPS_INIT);
        assert_int_equal(m[0].mask, MASK_INIT);
        assert_int_equal(m[0].attr.port_num, 1);
        assert_int_equal(m[0].attr.pkey_index, 0);
        assert_int_equal(m[0].attr.qp_access_flags,
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                             IBV_ACCESS_REMOTE_READ);
        assert_int_equal(m[1].attr.qp_state, IBV_QPS_RTR);
        assert_int_equal(m[1].mask, MASK_RTR);
        assert_int_equal(m[1].attr.dest_qp_num,
                         u->qps[r * w->C + c].qp->qp_num);
        assert_int_equal(m[1].attr.rq_psn, u->psn);
        assert_int_equal(m[1].attr.path_mtu,
                         t->port.active_mtu < u->port.active_mtu
                             ? t->port.active_mtu
                             : u->port.active_mtu);
        assert_int_equal(m[1].attr.max_dest_rd_atomic, 1);
        assert_int_equal(m[1].attr.min_rnr_timer, 12);
        assert_int_equal(m[1].attr.ah_attr.port_num, 1);
        assert_int_equal(m[1].attr.ah_attr.is_global, roce ? 1 : 0);
        if (roce) {
            assert_int_equal(m[1].attr.ah_attr.grh.sgid_index, t->gid_index);
            assert_memory_equal(m[1].attr.ah_attr.grh.dgid.raw, u->gid.raw, 16);
            assert_int_equal(m[1].attr.ah_attr.grh.hop_limit, 64);
        } else {
            assert_int_equal(m[1].attr.ah_attr.dlid, 10 + p);
        }
        assert_int_equal(m[2].attr.qp_state, IBV_QPS_RTS);
        assert_int_equal(m[2].mask, MASK_RTS);
        assert_int_equal(m[2].attr.sq_psn, t->psn);
        assert_int_equal(m[2].attr.timeout, 14);
        assert_int_equal(m[2].attr.retry_cnt, 7);
        assert_int_equal(m[2].attr.rnr_retry, 7);
        assert_int_equal(m[2].attr.max_rd_atomic, 1);
    }
    return k;
}

static void test_connect_ib(void **state) {
    const enum ibv_mtu mtu[3] = {IBV_MTU_1024, IBV_MTU_4096, IBV_MTU_2048};
    int peers[2] = {2, 0};
    pp_error e = PP_ERROR_INIT;
    world w;
    int k;

    world_create(&w, 3, 2, mtu);
    fake.n_modify = 0;
    assert_int_equal(V->connect(w.t[1], peers, 2, w.ap, w.len, &e), 0);
    assert_int_equal(fake.n_modify, 2 * 2 * 3);
    k = check_peer(&w, 1, 0, 0, false); /* rank 0 first... */
    k = check_peer(&w, 1, 2, k, false); /* ...then rank 2 */
    assert_int_equal(fake.modify[1].attr.path_mtu, IBV_MTU_1024);
    assert_int_equal(fake.modify[7].attr.path_mtu, IBV_MTU_2048);
    /* Connecting again moves nothing. */
    assert_int_equal(V->connect(w.t[1], peers, 2, w.ap, w.len, &e), 0);
    assert_int_equal(fake.n_modify, k);
    /* Not a peer: itself. */
    peers[0] = 1;
    assert_int_equal(V->connect(w.t[1], peers, 1, w.ap, w.len, &e), PP_EINVAL);
    expect_msg(&e, "peer 1 is not another rank");
    world_free(&w);
}

static void test_modify_fails(void **state) {
    static const enum ibv_qp_state st[3] = {IBV_QPS_INIT, IBV_QPS_RTR,
                                            IBV_QPS_RTS};
    static const char *const msg[3] = {"ibv_modify_qp to INIT: Invalid",
                                       "ibv_modify_qp to RTR: Invalid",
                                       "ibv_modify_qp to RTS: Invalid"};

    for (int i = 0; i < 3; i++) {
        pp_error e = PP_ERROR_INIT;
        world w;

        world_create(&w, 2, 1, NULL);
        fake.fail = "modify_qp";
        fake.fail_state = st[i];
        assert_int_equal(world_connect(&w, 0, &e), PP_EIO);
        expect_msg(&e, "rank 0: connect to rank 1 (channel 0): ");
        expect_msg(&e, msg[i]);
        assert_false(w.t[0]->qps[1].up);
        world_free(&w);
        fake.fail = NULL;
    }
}

/* ---- RoCE: the GID choice --------------------------------------------- */

static char sysfs[64];

static void put_file(const char *sub, int i, const char *text) {
    char path[256], cmd[320];
    FILE *f;

    snprintf(path, sizeof path, "%s/mlx5_0/ports/1/%s", sysfs, sub);
    snprintf(cmd, sizeof cmd, "mkdir -p %s", path);
    assert_int_equal(system(cmd), 0);
    snprintf(path + strlen(path), sizeof path - strlen(path), "/%d", i);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", text);
    fclose(f);
}

static void put_gid(int i, const char *type, const char *gid) {
    put_file("gid_attrs/types", i, type);
    put_file("gids", i, gid);
    fake.gid[i].raw[0] = (uint8_t)(0xa0 + i); /* what query_gid says */
}

static void roce_setup(void) {
    snprintf(sysfs, sizeof sysfs, "/tmp/pp_sysfs_XXXXXX");
    assert_non_null(mkdtemp(sysfs));
    pp__vb_sysfs_root = sysfs;
    fake.link_layer = IBV_LINK_LAYER_ETHERNET;
    fake.lid = 0;
    fake.gid_tbl_len = 5;
}

static void roce_cleanup(void) {
    char cmd[128];

    snprintf(cmd, sizeof cmd, "rm -rf %s", sysfs);
    assert_int_equal(system(cmd), 0);
}

static void test_roce_gid(void **state) {
    pp_error e = PP_ERROR_INIT;
    world w;

    roce_setup();
    put_gid(0, "IB/RoCE v1", "fe80:0000:0000:0000:0a00:00ff:fe00:0001");
    put_gid(1, "RoCE v2", "fe80:0000:0000:0000:0a00:00ff:fe00:0001");
    put_gid(2, "IB/RoCE v1", "0000:0000:0000:0000:0000:ffff:0a00:0001");
    put_gid(3, "RoCE v2", "0000:0000:0000:0000:0000:ffff:0a00:0001");
    put_gid(4, "RoCE v2", "0000:0000:0000:0000:0000:ffff:0a00:0002");
    world_create(&w, 2, 2, NULL);
    assert_int_equal(w.t[0]->gid_index, 3);
    assert_int_equal(fake.query_gid_index, 3);
    assert_int_equal(w.t[0]->gid.raw[0], 0xa3);
    fake.n_modify = 0;
    assert_int_equal(world_connect(&w, 0, &e), 0);
    check_peer(&w, 0, 1, 0, true);
    world_free(&w);
    roce_cleanup();
}

static void test_roce_gid_fallback(void **state) {
    pp_xport_opts o = opts(0, 2, 1);
    pp_error e = PP_ERROR_INIT;
    char addr[PP_XPORT_ADDR_MAX];
    pp_xport *t = NULL;
    size_t len;

    roce_setup();
    /* No IPv4 GID: the first non-zero RoCE v2 one. */
    put_gid(0, "IB/RoCE v1", "fe80:0000:0000:0000:0a00:00ff:fe00:0001");
    put_gid(1, "RoCE v2", "0000:0000:0000:0000:0000:0000:0000:0000");
    put_gid(2, "RoCE v2", "fe80:0000:0000:0000:0a00:00ff:fe00:0001");
    assert_int_equal(V->create(&o, &t, addr, &len, &e), 0);
    assert_int_equal(t->gid_index, 2);
    V->destroy(t);
    /* gid_index given: used as is, no sysfs. */
    o.gid_index = 0;
    assert_int_equal(V->create(&o, &t, addr, &len, &e), 0);
    assert_int_equal(t->gid_index, 0);
    V->destroy(t);
    /* No RoCE v2 GID at all. */
    o.gid_index = -1;
    put_gid(1, "IB/RoCE v1", "0000:0000:0000:0000:0000:ffff:0a00:0001");
    put_gid(2, "IB/RoCE v1", "0000:0000:0000:0000:0000:ffff:0a00:0001");
    t = NULL;
    assert_int_equal(V->create(&o, &t, addr, &len, &e), PP_ENODEV);
    expect_msg(&e, "mlx5_0 port 1 is RoCE but has no RoCE v2 GID");
    assert_null(t);
    roce_cleanup();
}

/* ---- data: credits, chunks, completions ------------------------------- */

static pp_xreq req(int peer, bool send, void *buf, size_t len, int ch) {
    pp_xreq r = {peer, send, buf, len, ch, false, NULL};
    return r;
}

static void fill(char *p, size_t n, int seed) {
    for (size_t i = 0; i < n; i++) p[i] = (char)(i * 31 + (size_t)seed);
}

static void test_sendrecv(void **state) {
    enum { BIG = 64 * 300 + 17, SMALL = 150 };
    char *a0 = calloc(1, BIG), *b1 = calloc(1, BIG);
    char *a1 = calloc(1, SMALL), *b0 = calloc(1, SMALL);
    pp_xmr *m[4];
    pp_xreq s0, r0, z0, s1, r1, z1;
    pp_xreq *l0[3] = {&s0, &r0, &z0}, *l1[3] = {&r1, &s1, &z1};
    pp_xreq **reqs[NR] = {l0, l1};
    size_t nreq[NR] = {3, 3};
    pp_error e = PP_ERROR_INIT;
    world w;

    fake.max_msg = 64; /* 301 chunks: more than a queue holds */
    world_up(&w, 2, 2);
    fill(a0, BIG, 1);
    fill(a1, SMALL, 2);
    assert_int_equal(V->reg(w.t[0], a0, BIG, false, &m[0], &e), 0);
    assert_int_equal(V->reg(w.t[0], b0, SMALL, false, &m[1], &e), 0);
    assert_int_equal(V->reg(w.t[1], b1, BIG, false, &m[2], &e), 0);
    assert_int_equal(V->reg(w.t[1], a1, SMALL, false, &m[3], &e), 0);
    /* The send comes first: it must wait for the peer's credit. */
    s0 = req(1, true, a0, BIG, 0);
    assert_int_equal(V->post(w.t[0], &s0, m[0], &e), 0);
    assert_int_equal(fake.n_send_posted, 0);
    r1 = req(0, false, b1, BIG, 0);
    assert_int_equal(V->post(w.t[1], &r1, m[2], &e), 0);
    assert_int_equal(fake.n_recv_posted, PP_VB_RQ_DEPTH);
    assert_int_equal(fake.n_credit_posted, 1);
    assert_int_equal(w.t[0]->ctl[1 * 2 + 0], PP_VB_RQ_DEPTH);
    /* The other way on channel 1: 3 chunks, and an empty message. */
    s1 = req(0, true, a1, SMALL, 1);
    z1 = req(0, true, a1, 0, 1);
    r0 = req(1, false, b0, SMALL, 1);
    z0 = req(1, false, b0, 0, 1);
    assert_int_equal(V->post(w.t[1], &s1, m[3], &e), 0);
    assert_int_equal(V->post(w.t[1], &z1, m[3], &e), 0);
    assert_int_equal(V->post(w.t[0], &r0, m[1], &e), 0);
    assert_int_equal(V->post(w.t[0], &z0, m[1], &e), 0);
    assert_int_equal(drive(&w, reqs, nreq, &e), 0);
    assert_true(s0.done && r0.done && z0.done && s1.done && r1.done && z1.done);
    assert_memory_equal(a0, b1, BIG);
    assert_memory_equal(a1, b0, SMALL);
    assert_int_equal(fake.rnr, 0);
    assert_int_equal(fake.n_send_posted, 301 + 3 + 1);
    assert_null(w.t[0]->live);
    assert_null(w.t[1]->live);
    V->dereg(w.t[0], m[0]); /* m[1..3]: destroy deregisters */
    world_free(&w);
    free(a0);
    free(b1);
    free(a1);
    free(b0);
}

/* Rank 1 posts a receive (its credit reaches rank 0), then rank 0 posts
 * a send that the fake completes with `status`. */
static int failed_send(enum ibv_wc_status status, pp_error *e, world *w,
                       pp_xreq *s, pp_xreq *r, char *buf, pp_xmr **m) {
    pp_xreq *l[1] = {s};

    world_up(w, 2, 1);
    assert_int_equal(V->reg(w->t[0], buf, 64, false, &m[0], e), 0);
    assert_int_equal(V->reg(w->t[1], buf + 64, 64, false, &m[1], e), 0);
    *r = req(0, false, buf + 64, 64, 0);
    assert_int_equal(V->post(w->t[1], r, m[1], e), 0);
    fake.wc_status = status;
    fake.wc_vendor_err = 0x81;
    *s = req(1, true, buf, 64, 0);
    assert_int_equal(V->post(w->t[0], s, m[0], e), 0);
    return V->wait(w->t[0], l, 1, pp__vb_now() + 5, e);
}

static void test_wc_error(void **state) {
    char buf[128], want[160];
    pp_error e = PP_ERROR_INIT;
    pp_xreq s, r, s2;
    pp_xmr *m[2];
    world w;

    assert_int_equal(failed_send(IBV_WC_RETRY_EXC_ERR, &e, &w, &s, &r, buf, m),
                     PP_EPEER);
    snprintf(want, sizeof want,
             "rank 0: send to rank 1 (channel 0): wc "
             "status %d (%s), vendor_err 0x81",
             IBV_WC_RETRY_EXC_ERR, ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
    expect_msg(&e, want);
    /* The QP is in error now: the transport keeps saying so. */
    pp_error_clear(&e);
    s2 = req(1, true, buf, 8, 0);
    assert_int_equal(V->post(w.t[0], &s2, m[0], &e), PP_EPEER);
    expect_msg(&e, want);
    world_free(&w); /* r is still posted: destroy frees it */
    assert_null(r.priv);

    pp_error_clear(&e);
    assert_int_equal(failed_send(IBV_WC_LOC_PROT_ERR, &e, &w, &s, &r, buf, m),
                     PP_EIO);
    expect_msg(&e, ibv_wc_status_str(IBV_WC_LOC_PROT_ERR));
    world_free(&w);
}

static void test_post_fails(void **state) {
    char buf[128];
    pp_error e = PP_ERROR_INIT;
    pp_xreq s, r;
    pp_xmr *m[2];
    world w;

    world_up(&w, 2, 1);
    assert_int_equal(V->reg(w.t[0], buf, 64, false, &m[0], &e), 0);
    assert_int_equal(V->reg(w.t[1], buf + 64, 64, false, &m[1], &e), 0);
    r = req(0, false, buf + 64, 64, 0);
    assert_int_equal(V->post(w.t[1], &r, m[1], &e), 0);
    fake.fail = "post_send";
    fake.fail_errno = ENOMEM;
    s = req(1, true, buf, 64, 0);
    assert_int_equal(V->post(w.t[0], &s, m[0], &e), PP_EIO);
    expect_msg(&e, "rank 0: send to rank 1 (channel 0): ibv_post_send: "
                   "Cannot allocate memory");
    fake.fail = "post_recv";
    pp_error_clear(&e);
    r = req(0, false, buf + 64, 64, 0);
    assert_int_equal(V->post(w.t[1], &r, m[1], &e), PP_EIO);
    expect_msg(&e, "rank 1: recv from rank 0 (channel 0): ibv_post_recv");
    /* Outside the region, unconnected channel: refused before verbs. */
    pp_error_clear(&e);
    s = req(1, true, buf + 32, 64, 0);
    assert_int_equal(V->post(w.t[0], &s, m[0], &e), PP_EIO); /* sticky */
    world_free(&w);

    fake.fail = NULL;
    world_up(&w, 2, 1);
    assert_int_equal(V->reg(w.t[0], buf, 64, false, &m[0], &e), 0);
    pp_error_clear(&e);
    s = req(1, true, buf + 32, 64, 0);
    assert_int_equal(V->post(w.t[0], &s, m[0], &e), PP_EINVAL);
    expect_msg(&e, "outside the registered region");
    world_free(&w);
}

static void test_reg_fails(void **state) {
    char buf[4096];
    pp_error e = PP_ERROR_INIT;
    pp_xmr *m = NULL;
    world w;

    world_up(&w, 2, 1);
    fake.fail = "reg_mr";
    fake.fail_errno = ENOMEM;
    assert_int_equal(V->reg(w.t[0], buf, sizeof buf, false, &m, &e), PP_EIO);
    expect_msg(&e, "rank 0: ibv_reg_mr(4096 bytes) on mlx5_0: Cannot "
                   "allocate memory");
    assert_null(m);
    pp_error_clear(&e);
    assert_int_equal(V->reg(w.t[0], NULL, 0, false, &m, &e), PP_EINVAL);
    world_free(&w);
}

static void test_wait_timeout(void **state) {
    char buf[128];
    pp_error e = PP_ERROR_INIT;
    pp_xreq s, r;
    pp_xreq *l[2] = {&r, &s};
    pp_xmr *m;
    double t0;
    world w;

    world_up(&w, 2, 1);
    assert_int_equal(V->reg(w.t[0], buf, sizeof buf, false, &m, &e), 0);
    r = req(1, false, buf, 64, 0);
    s = req(1, true, buf + 64, 64, 0); /* rank 1 posts no receive */
    assert_int_equal(V->post(w.t[0], &r, m, &e), 0);
    assert_int_equal(V->post(w.t[0], &s, m, &e), 0);
    t0 = pp__vb_now();
    assert_int_equal(V->wait(w.t[0], l, 2, t0 + 0.05, &e), PP_ETIMEOUT);
    assert_true(pp__vb_now() - t0 >= 0.05);
    expect_msg(&e, "rank 0: timed out");
    expect_msg(&e,
               "2 transfers not done: recv from rank 1 (channel 0, 0 "
               "of 1 chunks done), send to rank 1 (channel 0, 0 of 1 chunks "
               "done, no credit from the peer yet)");
    assert_int_equal(fake.n_send_posted, 0);
    world_free(&w);
}

static void test_on_device(void **state) {
    char buf[64];
    pp_error e = PP_ERROR_INIT;
    pp_xmr *m = NULL;
    world w;
    int rc;

    /* Without CUDA: PP_ENOSYS.  With CUDA but no libcuda.so.1 here:
     * PP_ENODEV.  With a driver: a host pointer is not device memory,
     * dma-buf export fails and staging registers a host copy. */
    world_up(&w, 2, 1);
    rc = V->reg(w.t[0], buf, sizeof buf, true, &m, &e);
    if (rc) {
        assert_true(rc == PP_ENOSYS || rc == PP_ENODEV);
        assert_true(e.msg[0] != '\0');
        assert_null(m);
    } else {
        assert_non_null(m->stage);
        V->dereg(w.t[0], m);
    }
    world_free(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_active_port, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_choice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
#define CASE(i)                                                                \
    cmocka_unit_test_prestate_setup_teardown(                                  \
        test_create_fails, setup, teardown, (void *)&create_cases[i])
        CASE(0),
        CASE(1),
        CASE(2),
        CASE(3),
        CASE(4),
        CASE(5),
        CASE(6),
#undef CASE
        cmocka_unit_test_setup_teardown(test_blob, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_ib, setup, teardown),
        cmocka_unit_test_setup_teardown(test_modify_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roce_gid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roce_gid_fallback, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sendrecv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wc_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_post_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reg_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_on_device, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
