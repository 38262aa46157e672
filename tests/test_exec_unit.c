/*
 * test_exec_unit.c: the exec layer's logic without a network: chunking,
 * the ring's schedule (played symbolically for 2..9 ranks), the CPU
 * reductions and 16-bit conversions, the launcher environment, and the
 * rendezvous' refusals (a forked rank 0 and forged hellos).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec_int.h"

static void test_split(void **state) {
    (void)state;
    for (size_t n = 0; n < 40; n++)
        for (size_t parts = 1; parts < 9; parts++) {
            size_t prev_end = 0;
            for (size_t i = 0; i < parts; i++) {
                size_t b, e;
                pp__split(n, parts, i, &b, &e);
                assert_int_equal(b, prev_end);
                assert_true(e - b == n / parts || e - b == n / parts + 1);
                prev_end = e;
            }
            assert_int_equal(prev_end, n);
        }
}

/* Every element of every chunk is in exactly one (channel, slice). */
static void test_slices_cover(void **state) {
    (void)state;
    size_t bounds[5] = {0, 7, 7, 20, 1001};
    for (int ch = 1; ch <= 5; ch++)
        for (size_t sl = 1; sl < 300; sl += 37) {
            pp__sched s = {.n_chunks = 4,
                           .chunk_begin = bounds,
                           .channels = ch,
                           .slice_elems = sl};
            size_t nsl = pp__sched_slices(&s);
            unsigned char seen[1001] = {0};
            for (size_t k = 0; k < 4; k++)
                for (int c = 0; c < ch; c++)
                    for (size_t j = 0; j < nsl; j++) {
                        size_t b, e;
                        pp__sched_slice(&s, k, c, j, &b, &e);
                        assert_true(b <= e && e - b <= sl);
                        assert_true(b >= bounds[k] && e <= bounds[k + 1]);
                        for (size_t i = b; i < e; i++) seen[i]++;
                    }
            for (size_t i = 0; i < 1001; i++) assert_int_equal(seen[i], 1);
        }
}

/* Plays the ring on sets of contributions: at each step every rank sends
 * the chunk its schedule names, its successor must be expecting exactly
 * that chunk from it, and the step's dependency (what is sent at t was
 * received at t-1) must hold.  At the end every rank holds every rank's
 * contribution in every chunk (allreduce), or in chunk r only
 * (reducescatter: NCCL's layout). */
static void play_ring(int n, int o, bool ag) {
    pp__step st[32][32];
    int ns = 0;
    uint32_t have[32][32]; /* [rank][chunk]: bit set per contribution */
    for (int r = 0; r < n; r++) {
        ns = pp__ring_steps(n, r, o, ag, st[r]);
        for (int k = 0; k < n; k++) have[r][k] = 1u << r;
    }
    assert_int_equal(ns, ag ? 2 * (n - 1) : n - 1);
    for (int t = 0; t < ns; t++) {
        uint32_t sent[32];
        for (int r = 0; r < n; r++) sent[r] = have[r][st[r][t].send_chunk];
        for (int r = 0; r < n; r++) {
            const pp__step *s = &st[r][t];
            int from = s->recv_peer;
            assert_int_equal(st[from][t].send_peer, r);
            assert_int_equal(st[from][t].send_chunk, s->recv_chunk);
            if (t > 0) assert_int_equal(s->send_chunk, st[r][t - 1].recv_chunk);
            if (s->reduce) {
                assert_int_equal(have[r][s->recv_chunk] & sent[from], 0);
                have[r][s->recv_chunk] |= sent[from];
            } else {
                have[r][s->recv_chunk] = sent[from];
            }
        }
    }
    uint32_t all = (n == 32) ? 0xFFFFFFFFu : (1u << n) - 1;
    for (int r = 0; r < n; r++)
        if (ag)
            for (int k = 0; k < n; k++) assert_int_equal(have[r][k], all);
        else
            assert_int_equal(have[r][r], all);
}

static void test_ring_schedule(void **state) {
    (void)state;
    for (int n = 2; n <= 9; n++) {
        play_ring(n, 0, true);  /* allreduce */
        play_ring(n, 1, false); /* reducescatter */
    }
}

/* Plays recursive doubling or Rabenseifner on sets of contributions per
 * block: every send has a matching receive of the same blocks at the same
 * step, a reduction never adds a contribution twice, and at the end every
 * rank holds every contribution in every block. */
static void play_rd(int n, bool rab) {
    enum { N = 17 };
    pp__xstep st[N][PP__RD_STEPS_MAX];
    uint32_t have[N][16]; /* [rank][block], p <= 16 */
    int ns = -1, p = 1, lg = 0;
    while (p * 2 <= n) {
        p *= 2;
        lg++;
    }
    for (int r = 0; r < n; r++) {
        int k = pp__rd_steps(n, r, rab, st[r]);
        if (ns >= 0) assert_int_equal(k, ns); /* the same count everywhere */
        ns = k;
        for (int b = 0; b < p; b++) have[r][b] = 1u << r;
    }
    assert_int_equal(ns, (rab ? 2 : 1) * lg + (n > p ? 2 : 0));
    for (int t = 0; t < ns; t++) {
        uint32_t sent[N][16];
        for (int r = 0; r < n; r++)
            for (int b = 0; b < p; b++) sent[r][b] = have[r][b];
        for (int r = 0; r < n; r++) {
            const pp__xstep *x = &st[r][t];
            if (x->send_peer >= 0) { /* its peer expects exactly this */
                const pp__xstep *y = &st[x->send_peer][t];
                assert_int_equal(y->recv_peer, r);
                assert_int_equal(y->recv_lo, x->send_lo);
                assert_int_equal(y->recv_hi, x->send_hi);
            }
            if (x->recv_peer < 0) continue;
            const pp__xstep *y = &st[x->recv_peer][t];
            assert_int_equal(y->send_peer, r);
            assert_true(x->recv_lo < x->recv_hi && x->recv_hi <= p);
            for (int b = x->recv_lo; b < x->recv_hi; b++) {
                uint32_t got = sent[x->recv_peer][b];
                if (x->reduce) {
                    assert_int_equal(have[r][b] & got, 0);
                    have[r][b] |= got;
                } else {
                    have[r][b] = got;
                }
            }
        }
    }
    uint32_t all = (1u << n) - 1;
    for (int r = 0; r < n; r++)
        for (int b = 0; b < p; b++) assert_int_equal(have[r][b], all);
}

static void test_rd_schedule(void **state) {
    (void)state;
    for (int n = 2; n <= 17; n++) {
        play_rd(n, false);
        play_rd(n, true);
    }
}

/* nccl-tests' -a: rank 0's mean, the mean, the min or the max over the
 * ranks of each rank's mean time; the percentiles are of the slowest rank
 * per iteration whatever the mode. */
static void test_stats_average(void **state) {
    (void)state;
    const double all[3 * 2] = {2, 4,  /* rank 0: mean 3 */
                               1, 1,  /* rank 1: mean 1 */
                               5, 7}; /* rank 2: mean 6 */
    const double want[4] = {3, 10.0 / 3, 1, 6};
    for (int a = 0; a < 4; a++) {
        pp_exec_coll_side sd;
        memset(&sd, 0, sizeof sd);
        pp__coll_stats(&sd, all, 3, 2, 100.0, 2.0, a);
        assert_true(fabs(sd.time_s - want[a]) < 1e-12);
        assert_true(fabs(sd.algbw_Bps - 100.0 / want[a]) < 1e-9);
        assert_true(fabs(sd.busbw_Bps - 200.0 / want[a]) < 1e-9);
        assert_true(sd.median_s == 6.0 && sd.p99_s == 7.0);
        assert_int_equal(sd.slowest[0], 2);
        assert_int_equal(sd.slowest[1], 2);
        free(sd.slowest);
    }
}

static void test_bf16_fp16(void **state) {
    (void)state;
    /* round to nearest even: 1 + 2^-8 is halfway between two bf16 values
     * and goes to the even one (1.0); 1 + 3 * 2^-8 goes up to 1 + 2^-6 */
    assert_true(pp__bf16_to_f32(pp__f32_to_bf16(1.0f + ldexpf(1, -8))) == 1.0f);
    assert_true(pp__bf16_to_f32(pp__f32_to_bf16(1.0f + 3 * ldexpf(1, -8))) ==
                1.0f + ldexpf(1, -6));
    assert_true(isnan(pp__bf16_to_f32(pp__f32_to_bf16(NAN))));
    assert_true(isinf(pp__bf16_to_f32(pp__f32_to_bf16(INFINITY))));
    /* fp16: 1 + 2^-11 halfway, to even; overflow, subnormals, NaN */
    assert_true(pp__fp16_to_f32(pp__f32_to_fp16(1.0f + ldexpf(1, -11))) ==
                1.0f);
    assert_true(pp__fp16_to_f32(pp__f32_to_fp16(1.0f + 3 * ldexpf(1, -11))) ==
                1.0f + ldexpf(1, -9));
    assert_true(pp__fp16_to_f32(pp__f32_to_fp16(65504.0f)) == 65504.0f);
    assert_true(isinf(pp__fp16_to_f32(pp__f32_to_fp16(70000.0f))));
    assert_true(pp__fp16_to_f32(pp__f32_to_fp16(ldexpf(1, -24))) ==
                ldexpf(1, -24));
    assert_true(pp__fp16_to_f32(pp__f32_to_fp16(-ldexpf(3, -20))) ==
                -ldexpf(3, -20));
    assert_true(isnan(pp__fp16_to_f32(pp__f32_to_fp16(NAN))));
    /* every finite fp16 and bf16 value survives the round trip */
    for (uint32_t h = 0; h < 65536; h++) {
        if ((h & 0x7C00) != 0x7C00)
            assert_int_equal(pp__f32_to_fp16(pp__fp16_to_f32((uint16_t)h)), h);
        if ((h & 0x7F80) != 0x7F80)
            assert_int_equal(pp__f32_to_bf16(pp__bf16_to_f32((uint16_t)h)), h);
    }
}

/* The three-operand form (the ring's out-of-place reductions) gives the
 * same bits as the in-place one, and writes only dst. */
static void test_reduce_cpu3(void **state) {
    (void)state;
    enum { N = 1003 };
    float a[N], b[N], d[N], ref[N];
    for (int t = 0; t < 3; t++)
        for (int op = 0; op < 3; op++) {
            size_t es = t == PP_XDT_FP32 ? 4 : 2;
            for (int i = 0; i < N; i++) {
                a[i] = (float)((i * 37) % 101) * 0.37f - 11;
                b[i] = (float)((i * 53) % 89) * 0.29f - 9;
                d[i] = -1;
            }
            if (t != PP_XDT_FP32) { /* reuse the arrays as 16-bit halves */
                uint16_t *ha = (uint16_t *)a, *hb = (uint16_t *)b;
                for (int i = 0; i < N; i++) {
                    uint16_t (*from)(float) =
                        t == PP_XDT_BF16 ? pp__f32_to_bf16 : pp__f32_to_fp16;
                    ha[i] = from(a[i]);
                    hb[i] = from(b[i]);
                }
            }
            float a0[N], b0[N];
            memcpy(a0, a, sizeof a);
            memcpy(b0, b, sizeof b);
            memcpy(ref, a, sizeof a);
            pp__reduce_cpu((pp_xdtype)t, (pp_xredop)op, ref, b, N);
            pp__reduce_cpu3((pp_xdtype)t, (pp_xredop)op, d, a, b, N);
            assert_memory_equal(d, ref, N * es);
            assert_memory_equal(a, a0, sizeof a);
            assert_memory_equal(b, b0, sizeof b);
            /* nothing past the N elements */
            if (es == 2) assert_true(d[N / 2 + 1] == -1);
        }
}

static void test_reduce_cpu(void **state) {
    (void)state;
    enum { N = 1003 };
    float a[N], b[N];
    uint16_t ha[N], hb[N];
    for (int t = 0; t < 3; t++)
        for (int op = 0; op < 3; op++) {
            for (int i = 0; i < N; i++) {
                float x = (float)((i * 37) % 101) * 0.37f - 11,
                      y = (float)((i * 53) % 89) * 0.29f - 9;
                a[i] = x;
                b[i] = y;
                if (t == PP_XDT_BF16) {
                    ha[i] = pp__f32_to_bf16(x);
                    hb[i] = pp__f32_to_bf16(y);
                }
                if (t == PP_XDT_FP16) {
                    ha[i] = pp__f32_to_fp16(x);
                    hb[i] = pp__f32_to_fp16(y);
                }
            }
            if (t == PP_XDT_FP32)
                pp__reduce_cpu(PP_XDT_FP32, (pp_xredop)op, a, b, N);
            else
                pp__reduce_cpu((pp_xdtype)t, (pp_xredop)op, ha, hb, N);
            for (int i = 0; i < N; i++) {
                float x = (float)((i * 37) % 101) * 0.37f - 11,
                      y = (float)((i * 53) % 89) * 0.29f - 9;
                if (t == PP_XDT_FP32) {
                    float want = op == 0   ? x + y
                                 : op == 1 ? fmaxf(x, y)
                                           : fminf(x, y);
                    assert_true(a[i] == want);
                    continue;
                }
                float (*to)(uint16_t) =
                    t == PP_XDT_BF16 ? pp__bf16_to_f32 : pp__fp16_to_f32;
                uint16_t (*from)(float) =
                    t == PP_XDT_BF16 ? pp__f32_to_bf16 : pp__f32_to_fp16;
                float xa = to(from(x)), yb = to(from(y));
                float want = op == 0   ? xa + yb
                             : op == 1 ? fmaxf(xa, yb)
                                       : fminf(xa, yb);
                assert_int_equal(ha[i], from(want));
            }
        }
}

static void clear_env(void) {
    const char *v[] = {"RANK",
                       "WORLD_SIZE",
                       "LOCAL_RANK",
                       "SLURM_PROCID",
                       "SLURM_NTASKS",
                       "SLURM_LOCALID",
                       "OMPI_COMM_WORLD_RANK",
                       "OMPI_COMM_WORLD_SIZE",
                       "OMPI_COMM_WORLD_LOCAL_RANK",
                       "SLURM_NTASKS_PER_NODE",
                       "MASTER_ADDR",
                       "MASTER_PORT",
                       NULL};
    for (int i = 0; v[i]; i++) unsetenv(v[i]);
}

static void test_world_env(void **state) {
    (void)state;
    pp_exec_world w;
    pp_error e = PP_ERROR_INIT;
    clear_env();
    assert_int_equal(pp_exec_world_from_env(&w, &e), 0);
    assert_int_equal(w.nranks, 1);
    setenv("SLURM_PROCID", "3", 1);
    setenv("SLURM_NTASKS", "8", 1);
    setenv("SLURM_LOCALID", "1", 1);
    assert_int_equal(pp_exec_world_from_env(&w, &e), PP_EUSAGE);
    assert_non_null(strstr(e.msg, "MASTER_ADDR"));
    setenv("MASTER_ADDR", "node17", 1);
    setenv("MASTER_PORT", "29500", 1);
    pp_error_clear(&e);
    assert_int_equal(pp_exec_world_from_env(&w, &e), 0);
    assert_int_equal(w.rank, 3);
    assert_int_equal(w.nranks, 8);
    assert_int_equal(w.local_rank, 1);
    assert_string_equal(w.launcher, "srun");
    assert_int_equal(w.master_port, 29500);
    assert_int_equal(w.local_size, 0); /* not said: unknown */
    setenv("SLURM_NTASKS_PER_NODE", "4", 1);
    assert_int_equal(pp_exec_world_from_env(&w, &e), 0);
    assert_int_equal(w.local_size, 4);
    setenv("SLURM_NTASKS_PER_NODE", "4(x2)", 1); /* informative: unknown */
    assert_int_equal(pp_exec_world_from_env(&w, &e), 0);
    assert_int_equal(w.local_size, 0);
    /* torchrun's variables win inside an allocation */
    setenv("RANK", "9", 1);
    setenv("WORLD_SIZE", "8", 1);
    pp_error_clear(&e);
    assert_int_equal(pp_exec_world_from_env(&w, &e), PP_EUSAGE);
    assert_non_null(strstr(e.msg, "RANK=9 is not below WORLD_SIZE=8"));
    setenv("RANK", "x", 1);
    pp_error_clear(&e);
    assert_int_equal(pp_exec_world_from_env(&w, &e), PP_EUSAGE);
    clear_env();
}

/* ---- the rendezvous ------------------------------------------------------ */

static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* Sends a hello (and blob_len bytes of blob when sane) and returns rank
 * 0's answer: status, and the reason in why. */
static uint32_t hello(int port, uint32_t magic, uint32_t rank, uint32_t nranks,
                      uint32_t blob_len, char *why, size_t why_len, int *keep) {
    int fd = connect_to(port);
    pp__boot_hello h = {magic, PP__BOOT_VERSION, rank, nranks, blob_len};
    assert_int_equal(write(fd, &h, sizeof h), (ssize_t)sizeof h);
    if (blob_len && blob_len <= PP_XPORT_ADDR_MAX) {
        char blob[PP_XPORT_ADDR_MAX];
        snprintf(blob, sizeof blob, "blob of %u", rank);
        assert_int_equal(write(fd, blob, blob_len), (ssize_t)blob_len);
    }
    if (keep) {
        *keep = fd;
        return 0;
    }
    uint32_t hdr[2] = {0, 0};
    ssize_t k = read(fd, hdr, sizeof hdr);
    assert_int_equal(k, (ssize_t)sizeof hdr);
    size_t n = hdr[1] < why_len - 1 ? hdr[1] : why_len - 1;
    size_t got = 0;
    while (got < n) {
        ssize_t m = read(fd, why + got, n - got);
        if (m <= 0) break;
        got += (size_t)m;
    }
    why[got] = '\0';
    close(fd);
    return hdr[0];
}

static void test_rendezvous_rejects(void **state) {
    (void)state;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(lfd, 16), 0);
    getsockname(lfd, (struct sockaddr *)&sa, &sl);
    int port = ntohs(sa.sin_port);
    pid_t pid = fork();
    if (pid == 0) { /* rank 0 of 3 */
        pp_exec_world w = {.rank = 0, .nranks = 3, .listen_fd = lfd};
        pp__boot *b;
        char ip[64], blobs[3 * PP_XPORT_ADDR_MAX];
        size_t lens[3];
        pp_error e = PP_ERROR_INIT;
        if (pp__boot_open(&w, 5.0, &b, ip, &e) != 0) _exit(10);
        int rc = pp__boot_allgather(b, "blob of 0", 10, blobs, lens, &e);
        pp__boot_close(b);
        _exit(rc == 0 && lens[1] == 10 &&
                      strcmp(blobs + PP_XPORT_ADDR_MAX, "blob of 1") == 0
                  ? 0
                  : 11);
    }
    close(lfd);
    char why[300];
    assert_int_equal(
        hello(port, PP__BOOT_MAGIC, 5, 3, 10, why, sizeof why, NULL), 1);
    assert_string_equal(why, "rank 5 out of range 1..2");
    assert_int_equal(
        hello(port, PP__BOOT_MAGIC, 1, 4, 10, why, sizeof why, NULL), 1);
    assert_string_equal(why, "rank 1 says the world has 4 ranks; rank 0 has 3");
    assert_int_equal(
        hello(port, PP__BOOT_MAGIC, 1, 3, 100000, why, sizeof why, NULL), 1);
    assert_string_equal(
        why, "rank 1: address blob of 100000 bytes (1..256 allowed)");
    assert_int_equal(hello(port, 0xdeadbeef, 1, 3, 10, why, sizeof why, NULL),
                     1);
    assert_non_null(strstr(why, "not a podplan rank"));
    int r1, r2;
    hello(port, PP__BOOT_MAGIC, 1, 3, 10, why, sizeof why, &r1);
    assert_int_equal(
        hello(port, PP__BOOT_MAGIC, 1, 3, 10, why, sizeof why, NULL), 1);
    assert_string_equal(why, "duplicate rank 1");
    hello(port, PP__BOOT_MAGIC, 2, 3, 10, why, sizeof why, &r2);
    /* both good ranks get status 0 and the address book */
    for (int k = 0; k < 2; k++) {
        uint32_t hdr[2];
        assert_int_equal(read(k ? r2 : r1, hdr, sizeof hdr),
                         (ssize_t)sizeof hdr);
        assert_int_equal(hdr[0], 0);
        assert_int_equal(hdr[1], 3 * (4 + PP_XPORT_ADDR_MAX));
        close(k ? r2 : r1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* A rank told off by rank 0 fails at once with rank 0's reason. */
static void test_rendezvous_client_told(void **state) {
    (void)state;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(lfd, 16), 0);
    getsockname(lfd, (struct sockaddr *)&sa, &sl);
    pid_t pid = fork();
    if (pid == 0) {
        pp_exec_world w = {.rank = 0, .nranks = 2, .listen_fd = lfd};
        pp__boot *b;
        char ip[64], blobs[2 * PP_XPORT_ADDR_MAX];
        size_t lens[2];
        pp_error e = PP_ERROR_INIT;
        if (pp__boot_open(&w, 1.0, &b, ip, &e) == 0)
            pp__boot_allgather(b, "x", 2, blobs, lens, &e);
        _exit(0);
    }
    close(lfd);
    pp_exec_world w = {.rank = 1, .nranks = 3, .listen_fd = -1};
    snprintf(w.master_addr, sizeof w.master_addr, "127.0.0.1");
    w.master_port = ntohs(sa.sin_port);
    pp__boot *b;
    char ip[64], blobs[3 * PP_XPORT_ADDR_MAX];
    size_t lens[3];
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp__boot_open(&w, 5.0, &b, ip, &e), 0);
    assert_int_equal(pp__boot_allgather(b, "y", 2, blobs, lens, &e), PP_EUSAGE);
    assert_non_null(strstr(e.msg, "rank 0 rejected this rank: rank 1 says the "
                                  "world has 3 ranks; rank 0 has 2"));
    pp__boot_close(b);
    waitpid(pid, NULL, 0);
}

/* ---- bounded connects ---------------------------------------------------- */

static double now_s(void) {
    return pp_exec_now();
}

/* A port on 127.0.0.1 that is bound but never listened on: every connect
 * is refused. */
static int refusing_port(int *fd_out) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    *fd_out = fd;
    return ntohs(sa.sin_port);
}

/* A listener that never accepts, its backlog (0) filled by two clients:
 * the kernel drops further SYNs, so a blocking connect() would sit in its
 * SYN retries for minutes.  fds[0] is the listener, fds[1..2] the fillers. */
static int silent_port(int fds[3]) {
    fds[0] = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(fds[0], (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fds[0], 0), 0);
    getsockname(fds[0], (struct sockaddr *)&sa, &sl);
    for (int i = 1; i < 3; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fds[i], (struct sockaddr *)&sa, sizeof sa);
    }
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL); /* let the handshakes that can finish, finish */
    return ntohs(sa.sin_port);
}

static void close_all(int *fds, int n) {
    for (int i = 0; i < n; i++) close(fds[i]);
}

/* Refused until the deadline: PP_ETIMEOUT, the address, the time waited. */
static void test_connect_refused_bounded(void **state) {
    (void)state;
    int bfd, port = refusing_port(&bfd);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    pp_error e = PP_ERROR_INIT;
    int fd = -7;
    double t0 = now_s();
    assert_int_equal(pp__sock_connect(&sa, t0 + 1.0, "rank 5", &fd, &e),
                     PP_ETIMEOUT);
    double dt = now_s() - t0;
    assert_true(dt >= 0.9 && dt < 1.0 + 3.0);
    assert_int_equal(fd, -7);
    char want[64];
    snprintf(want, sizeof want, "connect to rank 5 at 127.0.0.1:%d: ", port);
    if (!strstr(e.msg, want) || !strstr(e.msg, "no connection after 1.") ||
        !strstr(e.msg, "Connection refused"))
        fail_msg("message: %s", e.msg);
    close(bfd);
}

/* Nobody answers (SYNs dropped): the poll, not the kernel, ends it. */
static void test_connect_silent_bounded(void **state) {
    (void)state;
    int fds[3], port = silent_port(fds);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    pp_error e = PP_ERROR_INIT;
    int fd = -1;
    double t0 = now_s();
    int rc = pp__sock_connect(&sa, t0 + 1.0, "rank 2", &fd, &e);
    double dt = now_s() - t0;
    if (rc == 0) { /* a kernel that takes the SYN after all: nothing to bound */
        close(fd);
        close_all(fds, 3);
        skip();
    }
    assert_int_equal(rc, PP_ETIMEOUT);
    assert_true(dt < 1.0 + 3.0);
    if (!strstr(e.msg, "no connection after") || !strstr(e.msg, "no answer"))
        fail_msg("message: %s", e.msg);
    close_all(fds, 3);
}

/* The TCP transport's connect to a peer that never listens, and a rank's
 * rendezvous with a rank 0 that never answers, both end at --timeout. */
static void test_connect_bounded_callers(void **state) {
    (void)state;
    int bfd, port = refusing_port(&bfd);
    pp_xport_opts o = {.rank = 0,
                       .nranks = 2,
                       .channels = 2,
                       .timeout_s = 1.0,
                       .device = "127.0.0.1"};
    pp_xport *x = NULL;
    char addr[PP_XPORT_ADDR_MAX], peer[PP_XPORT_ADDR_MAX];
    size_t alen, lens[2];
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_xport_tcp.create(&o, &x, addr, &alen, &e), 0);
    snprintf(peer, sizeof peer, "tcp 127.0.0.1 %d", port);
    const char *addrs[2] = {addr, peer};
    lens[0] = alen;
    lens[1] = strlen(peer) + 1;
    int peers[1] = {1};
    double t0 = now_s();
    assert_int_equal(pp_xport_tcp.connect(x, peers, 1, addrs, lens, &e),
                     PP_ETIMEOUT);
    assert_true(now_s() - t0 < 1.0 + 3.0);
    char want[80];
    snprintf(want, sizeof want,
             "rank 0: connect to rank 1 at 127.0.0.1:%d: "
             "no connection after",
             port);
    if (!strstr(e.msg, want)) fail_msg("message: %s", e.msg);
    pp_xport_tcp.destroy(x);
    close(bfd);

    int fds[3];
    pp_exec_world w = {.rank = 1, .nranks = 2, .listen_fd = -1};
    snprintf(w.master_addr, sizeof w.master_addr, "127.0.0.1");
    w.master_port = silent_port(fds);
    pp__boot *b = NULL;
    char ip[64];
    pp_error_clear(&e);
    t0 = now_s();
    int rc = pp__boot_open(&w, 1.0, &b, ip, &e);
    double dt = now_s() - t0;
    if (rc == 0) {
        pp__boot_close(b);
        close_all(fds, 3);
        skip();
    }
    assert_int_equal(rc, PP_ETIMEOUT);
    assert_true(dt < 1.0 + 3.0);
    snprintf(want, sizeof want,
             "rank 1: connect to rank 0's rendezvous at "
             "127.0.0.1:%d: no connection after",
             w.master_port);
    if (!strstr(e.msg, want)) fail_msg("message: %s", e.msg);
    close_all(fds, 3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_slices_cover),
        cmocka_unit_test(test_ring_schedule),
        cmocka_unit_test(test_rd_schedule),
        cmocka_unit_test(test_stats_average),
        cmocka_unit_test(test_bf16_fp16),
        cmocka_unit_test(test_reduce_cpu),
        cmocka_unit_test(test_reduce_cpu3),
        cmocka_unit_test(test_world_env),
        cmocka_unit_test(test_rendezvous_rejects),
        cmocka_unit_test(test_rendezvous_client_told),
        cmocka_unit_test(test_connect_refused_bounded),
        cmocka_unit_test(test_connect_silent_bounded),
        cmocka_unit_test(test_connect_bounded_callers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
