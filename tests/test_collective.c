/*
 * test_collective.c: collectives (sim/collective*.c) through the library
 * and through `podplan collective`: closed forms where nothing contends,
 * the acceptance cases of domain.md section 5 (the NCCL article's 10GbE
 * AllReduce, ETRI's parameter server), over-subscription and NIC count,
 * step == stream, determinism, and usage errors.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"
#include "podplan/sim.h"

static void assert_rel(double got, double want, double tol) {
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("got %.12g, want %.12g within %g relative", got, want, tol);
}

static double num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v)) fail_msg("key %s missing or not a number", key);
    return json_number_value(v);
}

/* ---- library helpers ----------------------------------------------------- */

static pp_cluster *load(const char *name, const char *set) {
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = NULL;
    const char *sets[1] = {set};
    if (pp_cluster_load(name, sets, set ? 1 : 0, NULL, &c, &e))
        fail_msg("loading %s: %s", name, e.msg);
    return c;
}

/* The first n GPUs, server-major. */
static int32_t *first_gpus(const pp_cluster *c, size_t n) {
    const pp_cluster_info *info = pp_cluster_info_get(c);
    int32_t *g = malloc(n * sizeof *g);
    for (size_t i = 0; i < n; i++)
        g[i] = pp_cluster_gpu(c, (int32_t)(i / (size_t)info->gpus_per_node),
                              (int32_t)(i % (size_t)info->gpus_per_node));
    return g;
}

static pp_coll_spec spec_of(pp_coll_op op, pp_coll_algo algo, double bytes,
                            const int32_t *gpus, size_t n,
                            pp_granularity gran) {
    pp_coll_spec s;
    memset(&s, 0, sizeof s);
    s.op = op;
    s.algo = algo;
    s.bytes = bytes;
    s.gpus = gpus;
    s.n_gpus = n;
    s.server = -1;
    s.gran = gran;
    return s;
}

static pp_coll_result run_spec(const pp_cluster *c, pp_fidelity f,
                               const pp_coll_spec *sp) {
    pp_error e = PP_ERROR_INIT;
    pp_sim *s = NULL;
    pp_coll_result r;
    if (pp_sim_new(c, f, 0, &s, &e)) fail_msg("pp_sim_new: %s", e.msg);
    if (pp_sim_collective(s, sp, &r, &e))
        fail_msg("%s/%s: %s", pp_coll_op_name(sp->op),
                 pp_coll_algo_name(sp->algo), e.msg);
    pp_sim_free(s);
    return r;
}

/* ---- names and factors --------------------------------------------------- */

static void test_names(void **state) {
    (void)state;
    assert_string_equal(pp_coll_op_name(PP_COLL_ALLREDUCE), "allreduce");
    assert_string_equal(pp_coll_op_name(PP_COLL_SENDRECV), "sendrecv");
    assert_string_equal(pp_coll_algo_name(PP_ALGO_SHARP), "sharp");
    assert_string_equal(pp_coll_algo_name(PP_ALGO_HIER), "hier");
    /* nccl-tests doc/PERFORMANCE.md */
    assert_rel(pp_coll_busbw_factor(PP_COLL_ALLREDUCE, 8), 2.0 * 7 / 8, 1e-15);
    assert_rel(pp_coll_busbw_factor(PP_COLL_ALLGATHER, 8), 7.0 / 8, 1e-15);
    assert_rel(pp_coll_busbw_factor(PP_COLL_REDUCESCATTER, 4), 3.0 / 4, 1e-15);
    assert_rel(pp_coll_busbw_factor(PP_COLL_ALLTOALL, 16), 15.0 / 16, 1e-15);
    assert_rel(pp_coll_busbw_factor(PP_COLL_BROADCAST, 16), 1, 1e-15);
    assert_rel(pp_coll_busbw_factor(PP_COLL_SENDRECV, 2), 1, 1e-15);
}

/* ---- closed forms ---------------------------------------------------------- */

/* A ring over etri-ps servers (one GPU and one EDR NIC each, one switch):
 * every hop is the same path, so the ring is the closed form
 *   2(n-1) (lat + S/(n B)) + (n-1) (S/n) / R
 * with B the hop's bottleneck (EDR), lat its latency and R the summing
 * rate, at both fidelities and both granularities, to 1e-9. */
static void test_ring_closed_form(void **state) {
    (void)state;
    pp_cluster *c = load("etri-ps", NULL);
    pp_error e = PP_ERROR_INIT;
    pp_router *rt;
    assert_int_equal(pp_router_new(c, 0, &rt, &e), 0);
    const int32_t *path;
    size_t np;
    double lat, bw;
    const size_t n = 8;
    int32_t *g = first_gpus(c, n);
    assert_int_equal(pp_route(rt, g[0], g[1], 0, &path, &np, &lat, &bw, &e), 0);
    assert_rel(bw, 12.5e9, 1e-12); /* EDR 100Gb/s */
    const double S = 256e6, R = 100e9;
    double want = 2.0 * (n - 1) * (lat + S / n / bw) + (n - 1) * (S / n) / R;
    for (int f = 0; f < 2; f++)
        for (int gr = PP_GRAN_STEP; gr <= PP_GRAN_STREAM; gr++) {
            pp_coll_spec sp = spec_of(PP_COLL_ALLREDUCE, PP_ALGO_RING, S, g, n,
                                      (pp_granularity)gr);
            sp.reduce_Bps = R;
            pp_coll_result r = run_spec(c, (pp_fidelity)f, &sp);
            assert_rel(r.time_s, want, 1e-9);
            assert_rel(r.algbw_Bps, S / want, 1e-9);
            assert_rel(r.busbw_Bps, S / want * 2.0 * (n - 1) / n, 1e-9);
            /* one channel (one NIC), n transfers per step */
            assert_int_equal(r.transfers,
                             gr == PP_GRAN_STEP ? 2 * (n - 1) * n : n);
            /* every link of the ring carries 2(n-1)/n S */
            assert_rel(r.busiest_bytes, 2.0 * (n - 1) / n * S, 1e-9);
        }
    /* The default summing rate is the GPU's HBM bandwidth / 3. */
    const pp_gpu_spec *gpu = pp_cluster_info_get(c)->gpu;
    pp_coll_spec sp =
        spec_of(PP_COLL_ALLREDUCE, PP_ALGO_RING, S, g, n, PP_GRAN_AUTO);
    pp_coll_result r = run_spec(c, PP_FIDELITY_FLOW, &sp);
    assert_rel(r.time_s,
               2.0 * (n - 1) * (lat + S / n / bw) +
                   (n - 1) * (S / n) / (gpu->hbm_Bps / 3),
               1e-9);
    /* AllGather: n-1 steps, no reduction; ReduceScatter: n-1 with it. */
    sp.op = PP_COLL_ALLGATHER;
    r = run_spec(c, PP_FIDELITY_FLOW, &sp);
    assert_rel(r.time_s, (n - 1) * (lat + S / n / bw), 1e-9);
    assert_rel(r.busbw_Bps, S / r.time_s * (n - 1) / n, 1e-12);
    sp.op = PP_COLL_REDUCESCATTER;
    sp.reduce_Bps = R;
    r = run_spec(c, PP_FIDELITY_FLOW, &sp);
    assert_rel(r.time_s, (n - 1) * (lat + S / n / bw) + (n - 1) * (S / n) / R,
               1e-9);
    /* SendRecv: one transfer. */
    sp.op = PP_COLL_SENDRECV;
    r = run_spec(c, PP_FIDELITY_FLOW, &sp);
    assert_rel(r.time_s, lat + S / bw, 1e-9);
    assert_int_equal(r.transfers, 1);
    /* Parameter server: workers push S, the server sums n S, sends S back
     * to each: its link carries n S each way. */
    sp = spec_of(PP_COLL_ALLREDUCE, PP_ALGO_PS, S, g, n, PP_GRAN_AUTO);
    sp.server = pp_cluster_gpu(c, 16, 0);
    sp.reduce_Bps = R;
    r = run_spec(c, PP_FIDELITY_FLOW, &sp);
    assert_rel(r.time_s, 2 * (lat + n * S / bw) + n * S / R, 1e-9);
    r = run_spec(c, PP_FIDELITY_ANALYTIC, &sp); /* no contention: one S */
    assert_rel(r.time_s, 2 * (lat + S / bw) + n * S / R, 1e-9);
    free(g);
    pp_router_free(rt);
    pp_cluster_free(c);
}

/* Where nothing contends, flow == analytic to 1e-9: rings (channels over
 * the NICs, rail-aligned, so no two share a link that limits them),
 * broadcast, hier, sharp, on two and four DGX-A100 servers. */
static void test_flow_equals_analytic(void **state) {
    (void)state;
    pp_cluster *c = load("hyperconnect-superpod", NULL);
    static const struct {
        pp_coll_op op;
        pp_coll_algo algo;
        size_t n;
    } cases[] = {
        {PP_COLL_ALLREDUCE, PP_ALGO_RING, 8},
        {PP_COLL_ALLREDUCE, PP_ALGO_RING, 16},
        {PP_COLL_ALLREDUCE, PP_ALGO_RING, 40},
        {PP_COLL_ALLGATHER, PP_ALGO_RING, 32},
        {PP_COLL_REDUCESCATTER, PP_ALGO_RING, 24},
        {PP_COLL_BROADCAST, PP_ALGO_RING, 32},
        {PP_COLL_SENDRECV, PP_ALGO_RING, 2},
        {PP_COLL_ALLREDUCE, PP_ALGO_HIER, 32},
        {PP_COLL_ALLREDUCE, PP_ALGO_SHARP, 32},
    };
    int32_t *g = first_gpus(c, 40);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int gr = PP_GRAN_STEP; gr <= PP_GRAN_STREAM; gr++) {
            pp_coll_spec sp = spec_of(cases[i].op, cases[i].algo, 512e6, g,
                                      cases[i].n, (pp_granularity)gr);
            pp_coll_result a = run_spec(c, PP_FIDELITY_ANALYTIC, &sp);
            pp_coll_result f = run_spec(c, PP_FIDELITY_FLOW, &sp);
            if (!(fabs(a.time_s - f.time_s) <= 1e-9 * a.time_s))
                fail_msg("%s/%s n=%zu gran=%d: analytic %.12g flow %.12g",
                         pp_coll_op_name(cases[i].op),
                         pp_coll_algo_name(cases[i].algo), cases[i].n, gr,
                         a.time_s, f.time_s);
            assert_int_equal(a.transfers, f.transfers);
        }
    free(g);
    pp_cluster_free(c);
}

/* step and stream agree where both run on uncontended rings: 16 GPUs,
 * 1 GB (the same reduction charged, the same latency terms). */
static void test_step_equals_stream(void **state) {
    (void)state;
    pp_cluster *c = load("hyperconnect-superpod", NULL);
    int32_t *g = first_gpus(c, 64);
    static const size_t sizes[] = {16, 64};
    for (size_t k = 0; k < 2; k++)
        for (int op = PP_COLL_ALLREDUCE; op <= PP_COLL_REDUCESCATTER; op++)
            for (int algo = PP_ALGO_RING; algo <= PP_ALGO_HIER; algo += 2) {
                if (algo == PP_ALGO_HIER && op != PP_COLL_ALLREDUCE) continue;
                pp_coll_spec sp = spec_of((pp_coll_op)op, (pp_coll_algo)algo,
                                          1e9, g, sizes[k], PP_GRAN_STEP);
                pp_coll_result st = run_spec(c, PP_FIDELITY_FLOW, &sp);
                sp.gran = PP_GRAN_STREAM;
                pp_coll_result sm = run_spec(c, PP_FIDELITY_FLOW, &sp);
                assert_rel(sm.time_s, st.time_s, 1e-6);
                assert_true(sm.transfers < st.transfers);
                /* the same bytes cross the busiest link */
                assert_rel(sm.busiest_bytes, st.busiest_bytes, 1e-9);
            }
    free(g);
    pp_cluster_free(c);
}

/* Channels use every NIC: on two DGX-A100 (8 HDR NICs each) the ring's
 * inter-node busbw is about the server's 8 x 25 GB/s, and with one NIC
 * about one NIC's 25 GB/s.  Within 10%: the reduction (each GPU sums
 * (n-1)/n S at 2039/3 GB/s, ~13% of the 8-NIC time, ~2% of the 1-NIC
 * time) and 30 step latencies come on top. */
static void test_channels_and_nics(void **state) {
    (void)state;
    pp_cluster *c8 = load("hyperconnect-superpod", NULL);
    pp_cluster *c1 = load("hyperconnect-superpod", "node.nics.count=1");
    int32_t *g8 = first_gpus(c8, 16), *g1 = first_gpus(c1, 16);
    pp_coll_spec sp =
        spec_of(PP_COLL_ALLREDUCE, PP_ALGO_RING, 1e9, g8, 16, PP_GRAN_AUTO);
    sp.reduce_Bps = 1e30; /* communication only */
    pp_coll_result r8 = run_spec(c8, PP_FIDELITY_FLOW, &sp);
    assert_rel(r8.busbw_Bps, 8 * 25e9, 0.05);
    sp.gpus = g1;
    pp_coll_result r1 = run_spec(c1, PP_FIDELITY_FLOW, &sp);
    assert_rel(r1.busbw_Bps, 25e9, 0.01);
    /* One channel on 8 NICs uses one NIC per server. */
    sp.gpus = g8;
    sp.channels = 1;
    pp_coll_result one = run_spec(c8, PP_FIDELITY_FLOW, &sp);
    assert_rel(one.busbw_Bps, 25e9, 0.01);
    /* SHARP: each GPU's link carries S each way once: algbw ~ HDR. */
    sp = spec_of(PP_COLL_ALLREDUCE, PP_ALGO_SHARP, 1e9, g8, 16, PP_GRAN_AUTO);
    pp_coll_result sh = run_spec(c8, PP_FIDELITY_FLOW, &sp);
    assert_rel(sh.algbw_Bps, 25e9, 0.01);
    /* The double binary tree moves 2 S / channels through each NIC, like
     * the ring: on 4 servers within 15% of the ring's time. */
    int32_t *g32 = first_gpus(c8, 32);
    sp = spec_of(PP_COLL_ALLREDUCE, PP_ALGO_TREE, 1e9, g32, 32, PP_GRAN_AUTO);
    sp.reduce_Bps = 1e30;
    pp_coll_result tr = run_spec(c8, PP_FIDELITY_FLOW, &sp);
    sp.algo = PP_ALGO_RING;
    pp_coll_result rg = run_spec(c8, PP_FIDELITY_FLOW, &sp);
    assert_rel(tr.time_s, rg.time_s, 0.15);
    /* Naive: the root's NIC takes (GPUs off its server) x S each way. */
    sp.algo = PP_ALGO_NAIVE;
    pp_coll_result nv = run_spec(c8, PP_FIDELITY_FLOW, &sp);
    assert_true(nv.time_s >= 2 * 24 * 1e9 / 25e9);
    free(g32);
    free(g8);
    free(g1);
    pp_cluster_free(c8);
    pp_cluster_free(c1);
}

/* Two collectives at once on disjoint servers do not meet: each takes
 * what it takes alone; done callbacks run once each. */
static void count_done(pp_sim *s, void *ctx, uint64_t arg) {
    double *t = ctx;
    t[arg] = pp_sim_now(s);
}

static void test_concurrent(void **state) {
    (void)state;
    pp_cluster *c = load("hyperconnect-superpod", NULL);
    int32_t *g = first_gpus(c, 32);
    pp_coll_spec a =
        spec_of(PP_COLL_ALLREDUCE, PP_ALGO_RING, 1e9, g, 16, PP_GRAN_STREAM);
    pp_coll_spec b = a;
    b.gpus = g + 16;
    pp_coll_result alone = run_spec(c, PP_FIDELITY_FLOW, &a);
    pp_error e = PP_ERROR_INIT;
    pp_sim *s;
    assert_int_equal(pp_sim_new(c, PP_FIDELITY_FLOW, 0, &s, &e), 0);
    double t[2] = {-1, -1};
    assert_int_equal(pp_sim_collective_start(s, &a, count_done, t, 0, &e), 0);
    assert_int_equal(pp_sim_collective_start(s, &b, count_done, t, 1, &e), 0);
    assert_true(t[0] < 0 && t[1] < 0); /* never inside start */
    pp_engine_run(pp_sim_engine(s), INFINITY);
    assert_rel(t[0], alone.time_s, 1e-9);
    assert_rel(t[1], alone.time_s, 1e-9);
    pp_sim_free(s);
    free(g);
    pp_cluster_free(c);
}

static void test_library_errors(void **state) {
    (void)state;
    pp_cluster *c = load("hyperconnect-superpod", NULL);
    pp_error e = PP_ERROR_INIT;
    pp_sim *s;
    pp_coll_result r;
    assert_int_equal(pp_sim_new(c, PP_FIDELITY_FLOW, 0, &s, &e), 0);
    int32_t g[3] = {pp_cluster_gpu(c, 0, 0), pp_cluster_gpu(c, 0, 1),
                    pp_cluster_gpu(c, 0, 0)};
    pp_coll_spec sp =
        spec_of(PP_COLL_ALLREDUCE, PP_ALGO_RING, 1e6, g, 3, PP_GRAN_AUTO);
    assert_int_equal(pp_sim_collective(s, &sp, &r, &e), PP_EINVAL);
    assert_non_null(strstr(e.msg, "twice"));
    pp_error_clear(&e);
    g[2] = pp_cluster_hca(c, 0, 0);
    assert_int_equal(pp_sim_collective(s, &sp, &r, &e), PP_EINVAL);
    assert_non_null(strstr(e.msg, "not a GPU"));
    pp_error_clear(&e);
    sp.n_gpus = 2;
    sp.op = PP_COLL_ALLGATHER;
    sp.algo = PP_ALGO_TREE;
    assert_int_equal(pp_sim_collective(s, &sp, &r, &e), PP_EINVAL);
    assert_non_null(strstr(e.msg, "allreduce only"));
    pp_error_clear(&e);
    sp.algo = PP_ALGO_RING;
    sp.bytes = -1;
    assert_int_equal(pp_sim_collective(s, &sp, &r, &e), PP_EINVAL);
    pp_error_clear(&e);
    sp.bytes = 1e6;
    sp.n_gpus = 1;
    assert_int_equal(pp_sim_collective(s, &sp, &r, &e), PP_EINVAL);
    pp_error_clear(&e);
    /* The sim is still usable after refused starts. */
    sp.n_gpus = 2;
    assert_int_equal(pp_sim_collective(s, &sp, &r, &e), 0);
    assert_true(r.time_s > 0);
    pp_sim_free(s);
    pp_cluster_free(c);
}

/* ---- the CLI: domain.md section 5 -------------------------------------- */

static json_t *coll_json(const char *args) {
    cli_result r;
    cli_runf(&r, "collective %s --format json", args);
    if (r.status != 0)
        fail_msg("collective %s: exit %d: %s", args, r.status, r.err);
    json_t *j = cli_json(&r);
    cli_result_free(&r);
    return j;
}

/* The NCCL article: ViT-Base's 172 MB of fp16 gradients on three 8-GPU
 * servers joined by 10GbE take 2S/B = 0.275 s per AllReduce.  The model
 * gives 0.2659 s, 3.4% less, within the 5% we hold it to: a ring of 24
 * GPUs moves 2(n-1)/n S = 2 x 23/24 S through each server's one NIC, not
 * 2S (-4.2%), and adds 46 step latencies and 23 reductions of S/24 at
 * V100 HBM/3 (+0.8%).  Inside one server NVLink and PCIe take hundredths
 * of a second ("NVLink only saves hundredths of a second"). */
static void test_nccl_article(void **state) {
    (void)state;
    json_t *j = coll_json("--cluster ethernet-10g --op allreduce --algo ring "
                          "--bytes 172MB --gpus 24");
    double t = num(j, "time_s");
    assert_rel(t, 2 * 172e6 / 1.25e9, 0.05);
    assert_true(t > 2.0 * 23 / 24 * 172e6 / 1.25e9); /* the ring's bound */
    assert_rel(num(j, "busbw_GBps"), 1.25, 0.02);    /* the 10GbE link */
    assert_string_equal(json_string_value(json_object_get(j, "op")),
                        "allreduce");
    assert_string_equal(json_string_value(json_object_get(j, "algo")), "ring");
    assert_int_equal((int)num(j, "gpus"), 24);
    assert_rel(num(j, "bytes"), 172e6, 1e-12);
    assert_string_equal(json_string_value(json_object_get(j, "fidelity")),
                        "flow");
    assert_true(num(j, "transfers") > 0);
    json_decref(j);

    j = coll_json("--cluster ethernet-10g --bytes 172MB --gpus 8");
    t = num(j, "time_s");
    assert_true(t >= 0.01 && t < 0.1);
    json_decref(j);

    /* Iteration time: 0.4 s of compute + the AllReduce = 0.675 s; three
     * times the GPUs give 3 x 0.42 / (0.4 + t) = 1.86x the throughput. */
    j = coll_json(
        "--cluster ethernet-10g --bytes 172MB --gpus 24 --fidelity analytic");
    assert_rel(3 * 0.42 / (0.4 + num(j, "time_s")), 1.86, 0.03);
    json_decref(j);
}

/* ETRI: 16 workers, ResNet-50's 100 MB: 3.2 GB through the server's link
 * per step; 16 GB/s = 128 Gb/s for a 200 ms step, more than its EDR port
 * (12.5 GB/s) carries, so the step takes at least 3.2 GB / 2 / 12.5 GB/s
 * each way. */
static void test_etri_ps(void **state) {
    (void)state;
    json_t *j = coll_json("--cluster etri-ps --algo ps --bytes 100MB --gpus 16 "
                          "--step-time 200ms");
    assert_rel(num(j, "server_bytes"), 3.2e9, 1e-9);
    assert_rel(num(j, "server_Bps_needed_for_step"), 16e9, 1e-9);
    assert_rel(num(j, "server_Bps_needed_for_step") * 8, 128e9, 1e-9);
    assert_rel(num(j, "server_link_Bps"), 12.5e9, 1e-9);
    assert_true(num(j, "time_s") >= 3.2e9 / 12.5e9);
    assert_int_equal((int)num(j, "transfers"), 32);
    json_decref(j);
}

/* Over-subscription.  Rail-aligned rings never leave a rail's leaf on
 * hyperconnect-superpod, so 2:1 leaves the ring untouched.  An all-to-all
 * crosses rails through the spines.  On 10 of its servers (80 GPUs, to
 * keep the test fast) each GPU sends 9 x 7 / 80 of S to another rail on
 * another server, so a leaf (10 GPUs of one rail) sends 10 x 63 / 80 S
 * up; at 2:1 it has 5 uplinks of 25 GB/s instead of 10, and the
 * all-to-all takes at least that load over the uplinks.  Both times are
 * the most utilised link's bytes over its capacity, a leaf-spine cable:
 * ECMP by flow hash loads some cables above the average (at 1:1 too,
 * where the mean uplink load is below the host link's 9 x 8 / 80 S). */
static void test_oversubscription(void **state) {
    (void)state;
    json_t *a =
        coll_json("--cluster hyperconnect-superpod --bytes 256MB --gpus 160");
    json_t *b =
        coll_json("--cluster hyperconnect-superpod --bytes 256MB --gpus 160 "
                  "--set fabric.oversubscription=2:1");
    assert_rel(num(b, "time_s"), num(a, "time_s"), 1e-12);
    json_decref(a);
    json_decref(b);

    const double S = 1e9;
    double t[2];
    for (int k = 0; k < 2; k++) {
        char args[256];
        snprintf(args, sizeof args,
                 "--cluster hyperconnect-superpod --op alltoall "
                 "--bytes 1GB --gpus 80 --links --set node.count=10 "
                 "--pxn off --set fabric.oversubscription=%s",
                 k ? "2:1" : "1:1");
        json_t *j = coll_json(args);
        t[k] = num(j, "time_s");
        json_t *top = json_array_get(json_object_get(j, "links"), 0);
        assert_non_null(top);
        assert_rel(num(top, "utilisation"), 1.0, 0.01);
        assert_rel(t[k], num(top, "bytes") / num(top, "capacity_Bps"), 0.01);
        const char *name = json_string_value(json_object_get(top, "link"));
        assert_non_null(strstr(name, "spine"));
        json_decref(j);
    }
    assert_true(t[1] >= 10 * 63 / 80.0 * S / 5 / 25e9); /* uplinks at 2:1 */
    assert_true(t[0] >= 9 * 8 / 80.0 * S / 25e9);       /* host link */
    assert_true(t[1] > 1.5 * t[0]);
}

/* NCCL's all-to-all between servers relays each transfer through the GPU
 * on the destination's rail (PXN), so on a rail-optimised fabric it stays
 * on one rail's leaf and each NIC runs at its rate.  NVIDIA's statement of
 * what that reaches (nccl-tests issues #130, sjeaugey: busbw = N/(N-1) x
 * the network bandwidth per GPU over N servers; #267, AddyLaddy: "CX-7
 * NICs at NDR rate (400Gbps) should achieve up to 48-49GB/s per NIC"):
 * at 48.5, 97 GB/s on 2 servers and 64.7 on 4, which with nccl-tests'
 * (n-1)/n over the n GPUs (the statement rounds it away) is 90.9 and
 * 62.6.  podplan's NIC runs at the line rate, 50 GB/s, so it may read 3%
 * above those; 5% is the tolerance.
 * Without PXN the transfers cross the spines and collide on their hashed
 * paths: well below. */
static void test_alltoall_pxn(void **state) {
    (void)state;
    const int nodes[2] = {2, 4};
    for (int k = 0; k < 2; k++) {
        int N = nodes[k], n = 8 * N;
        char args[256];
        snprintf(args, sizeof args,
                 "--cluster dgx-h100-ndr --set node.count=%d --op alltoall "
                 "--bytes 1GiB --gpus %d --links",
                 N, n);
        json_t *j = coll_json(args);
        double want = 48.5 * N / (N - 1.0) * (n - 1.0) / n;
        assert_rel(num(j, "busbw_GBps"), want, 0.05);
        assert_true(json_is_true(json_object_get(j, "pxn")));
        /* Every pair of GPUs on different servers and rails is relayed:
         * n (n - 8) pairs across servers, n (N - 1) of them on one rail. */
        assert_int_equal((int)num(j, "relayed_transfers"),
                         n * (n - 8) - n * (N - 1));
        /* No byte crosses a spine. */
        json_t *ls = json_object_get(j, "links");
        for (size_t i = 0; i < json_array_size(ls); i++) {
            const char *name =
                json_string_value(json_object_get(json_array_get(ls, i), "link"));
            assert_null(strstr(name, "spine"));
        }
        double on = num(j, "busbw_GBps");
        json_decref(j);
        snprintf(args, sizeof args,
                 "--cluster dgx-h100-ndr --set node.count=%d --op alltoall "
                 "--bytes 1GiB --gpus %d --pxn off",
                 N, n);
        j = coll_json(args);
        assert_int_equal((int)num(j, "relayed_transfers"), 0);
        assert_true(num(j, "busbw_GBps") < 0.9 * on);
        json_decref(j);
    }
}

/* One HDR NIC per server instead of eight: the inter-node ring's busbw
 * falls to about one NIC's 25 GB/s. */
static void test_one_nic(void **state) {
    (void)state;
    json_t *a =
        coll_json("--cluster hyperconnect-superpod --bytes 1GB --gpus 160");
    json_t *b =
        coll_json("--cluster hyperconnect-superpod --bytes 1GB --gpus 160 "
                  "--set node.nics.count=1");
    assert_true(num(a, "busbw_GBps") > 6 * 25);
    assert_rel(num(b, "busbw_GBps"), 25, 0.05);
    json_decref(a);
    json_decref(b);
}

/* The same command twice: byte-identical JSON and trace; the trace has a
 * span per GPU for the collective. */
static void test_determinism(void **state) {
    (void)state;
    char t1[] = "/tmp/podplan-coll-XXXXXX", t2[] = "/tmp/podplan-coll-XXXXXX";
    int f1 = mkstemp(t1), f2 = mkstemp(t2);
    assert_true(f1 >= 0 && f2 >= 0);
    close(f1);
    close(f2);
    static const char *const cmds[] = {
        "--cluster hyperconnect-superpod --bytes 64MB --gpus 32 --algo tree",
        "--cluster hyperconnect-superpod --bytes 64MB --gpus 24 --op alltoall",
    };
    for (size_t k = 0; k < 2; k++) {
        cli_result a, b;
        cli_runf(&a, "collective %s --format json --trace %s", cmds[k], t1);
        char *ta = cli_slurp(t1);
        cli_runf(&b, "collective %s --format json --trace %s", cmds[k], t2);
        char *tb = cli_slurp(t2);
        assert_int_equal(a.status, 0);
        assert_int_equal(b.status, 0);
        assert_string_equal(a.out, b.out);
        assert_string_equal(ta, tb);
        json_error_t err;
        json_t *tr = json_loads(ta, 0, &err);
        if (!tr) fail_msg("trace is not JSON: %s", err.text);
        /* one span per GPU named after the collective */
        const char *nm = k == 0 ? "\"allreduce tree\"" : "\"alltoall ring\"";
        size_t spans = 0;
        for (const char *p = ta; (p = strstr(p, nm)); p++) spans++;
        assert_int_equal(spans, k == 0 ? 32 : 24);
        json_decref(tr);
        free(ta);
        free(tb);
        cli_result_free(&a);
        cli_result_free(&b);
    }
    unlink(t1);
    unlink(t2);
}

static void expect_usage(const char *args, const char *msg) {
    cli_result r;
    cli_runf(&r, "collective %s", args);
    if (r.status != 2)
        fail_msg("collective %s: exit %d, want 2", args, r.status);
    if (!strstr(r.err, msg))
        fail_msg("collective %s: stderr \"%s\" lacks \"%s\"", args, r.err, msg);
    assert_string_equal(r.out, "");
    cli_result_free(&r);
}

static void test_usage_errors(void **state) {
    (void)state;
    expect_usage("--cluster ethernet-10g --bytes lots --gpus 8",
                 "--bytes: expected a byte size");
    expect_usage("--cluster ethernet-10g --bytes 64Mb --gpus 8", "is bits");
    expect_usage("--cluster ethernet-10g --gpus 8", "--bytes is required");
    expect_usage("--cluster ethernet-10g --bytes 64MB --gpus 48",
                 "--gpus: 48 is more than the 24 GPUs of ethernet-10g");
    expect_usage("--cluster etri-ps --algo ps --bytes 64MB --gpus 17",
                 "more than the 16 worker GPUs of etri-ps");
    expect_usage("--cluster ethernet-10g --bytes 64MB --algo rign",
                 "--algo: expected one of ring|tree|hier|naive|ps|sharp|rd|nccl, "
                 "got \"rign\" (did you mean \"ring\"?)");
    expect_usage("--cluster dgx-h100-ndr --op alltoall --bytes 1MB "
                 "--pxn maybe",
                 "--pxn: expected on or off");
    expect_usage("--cluster ethernet-10g --bytes 64MB --algo butterfly",
                 "--algo: expected one of ring|tree");
    /* In the registry, but only exec runs it: said so, not "unknown". */
    expect_usage("--cluster ethernet-10g --bytes 64MB --algo rd",
                 "--algo rd: recursive doubling is not simulated");
    expect_usage("--cluster ethernet-10g --bytes 64MB --op allredcue",
                 "did you mean \"allreduce\"?");
    expect_usage(
        "--cluster ethernet-10g --bytes 64MB --op allgather --algo tree",
        "the tree algorithm implements allreduce only");
    expect_usage("--cluster ethernet-10g --bytes 64MB --gpus 1", "at least 2");
    expect_usage("--cluster ethernet-10g --bytes 64MB --gpus 12 --algo hier",
                 "hier needs the same number of GPUs on every server");
    expect_usage("--cluster ethernet-10g --bytes 64MB --step-time 1s",
                 "--step-time only applies to --algo ps");
    expect_usage("--cluster no-such-cluster --bytes 64MB", "no-such-cluster");
}

/* The table names what it ran and the busiest links. */
static void test_table(void **state) {
    (void)state;
    cli_result r;
    cli_runf(
        &r,
        "collective --cluster ethernet-10g --bytes 172MB --gpus 24 --links");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "allreduce, ring, 24 GPUs of ethernet-10g"));
    assert_non_null(strstr(r.out, "busbw"));
    assert_non_null(strstr(r.out, "util"));
    assert_non_null(strstr(r.out, "-> "));
    cli_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_ring_closed_form),
        cmocka_unit_test(test_flow_equals_analytic),
        cmocka_unit_test(test_step_equals_stream),
        cmocka_unit_test(test_channels_and_nics),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_library_errors),
        cmocka_unit_test(test_nccl_article),
        cmocka_unit_test(test_etri_ps),
        cmocka_unit_test(test_oversubscription),
        cmocka_unit_test(test_one_nic),
        cmocka_unit_test(test_alltoall_pxn),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
