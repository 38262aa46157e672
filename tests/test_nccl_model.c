/*
 * test_nccl_model.c: the `nccl` algorithm (sim/coll/nccl.c, NCCL's own
 * tuning model, src/graph/tuning.cc) against nccl-tests figures NVIDIA
 * published, and its structure.
 *
 * Published figures (busbw as nccl-tests prints it, large messages), and
 * the tolerance: 10% each (the model is NCCL's own estimate, which its
 * authors call approximate; the graph search is our reading, see nccl.c):
 *  - 8 x H100 SXM in one DGX/HGX, all_reduce (NVLink SHARP): "On 8 GPUs,
 *    you should reach a peak busBw of ~480GB/s (algbw ~275GB/s)";
 *    non-allreduce operations or NCCL_ALGO=RING: "an effective NVLink
 *    bandwidth of 370GB/s, which you can observe as BusBw".  sjeaugey (NCCL
 *    team, NVIDIA), github.com/NVIDIA/nccl-tests/issues/212, 2024-05-06.
 *  - DGX-A100, 8 x 200 Gb/s InfiniBand per node, all_reduce between
 *    nodes: "we measure 192GB/s AllReduce BusBW".  AddyLaddy (NCCL team)
 *    in github.com/NVIDIA/nccl/issues/812, as quoted in NVIDIA/nccl#1576
 *    (the node count is not stated; 4 nodes here).
 * Nothing in nccl.c was tuned to these: its constants are NCCL's, but
 * for the two of the NVLS pipeline (test_nvls_sweep), fitted to another
 * sweep; the 8 GiB all_reduce here went from -2.9% to -3.3% with them.
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

#include "cli_run.h"
#include "coll_util.h"
#include "podplan/sim.h"

#define TOL 0.10

static void published(const char *what, double got, double want) {
    double err = got / want - 1;
    printf("  %-44s %6.1f GB/s  published %5.0f  error %+5.1f%%\n", what,
           got / 1e9, want / 1e9, 100 * err);
    assert_true(fabs(err) <= TOL);
}

static void test_published(void **state) {
    (void)state;
    double S = 8.0 * 1024 * 1024 * 1024;
    pp_cluster *h = coll_load_cluster("dgx-h100-ndr");
    pp_coll_result r = coll_run(h, PP_FIDELITY_ANALYTIC, PP_COLL_ALLREDUCE,
                                PP_ALGO_NCCL, S, 8, NULL);
    assert_string_equal(r.nccl.algo, "NVLS");
    assert_string_equal(r.nccl.proto, "Simple");
    published("H100 x8 all_reduce 8 GiB (NVLS)", r.busbw_Bps, 480e9);
    r = coll_run(h, PP_FIDELITY_ANALYTIC, PP_COLL_ALLGATHER, PP_ALGO_NCCL, S, 8,
                 NULL);
    assert_string_equal(r.nccl.algo, "Ring");
    published("H100 x8 all_gather 8 GiB (ring)", r.busbw_Bps, 370e9);
    r = coll_run(h, PP_FIDELITY_ANALYTIC, PP_COLL_REDUCESCATTER, PP_ALGO_NCCL,
                 S, 8, NULL);
    published("H100 x8 reduce_scatter 8 GiB (ring)", r.busbw_Bps, 370e9);
    pp_cluster_free(h);

    pp_cluster *a = coll_load_cluster("selene-like");
    r = coll_run(a, PP_FIDELITY_ANALYTIC, PP_COLL_ALLREDUCE, PP_ALGO_NCCL, S,
                 32, NULL);
    assert_string_equal(r.nccl.algo, "Ring");
    assert_int_equal(r.nccl.nodes, 4);
    published("DGX-A100 8xHDR, 4 nodes all_reduce 8 GiB", r.busbw_Bps, 192e9);
    pp_cluster_free(a);
}

/* NCCL's choices by size: LL for small messages (latency), the
 * bandwidth algorithms for large ones; time grows with size; the
 * latency term is the model's. */
static void test_structure(void **state) {
    (void)state;
    pp_cluster *h = coll_load_cluster("dgx-h100-ndr");
    pp_coll_result r = coll_run(h, PP_FIDELITY_ANALYTIC, PP_COLL_ALLREDUCE,
                                PP_ALGO_NCCL, 8, 8, NULL);
    assert_string_equal(r.nccl.proto, "LL");
    /* Ring/LL on one NVLink server: 6.6 + 14 x 0.6 us (tuning.cc). */
    assert_true(fabs(r.nccl.lat_s - 15.0e-6) < 1e-9);
    assert_true(fabs(r.time_s - r.nccl.time_s) < 1e-15);
    double prev = 0;
    for (double S = 8; S <= 8.6e9; S *= 8) {
        r = coll_run(h, PP_FIDELITY_ANALYTIC, PP_COLL_ALLREDUCE, PP_ALGO_NCCL,
                     S, 16, NULL);
        assert_true(r.time_s >= prev);
        prev = r.time_s;
    }
    /* Two servers, large: NVLS-Tree (NVLink SHARP in the server, a tree
     * between); four: the ring, whose bandwidth NVLS-Tree halves. */
    r = coll_run(h, PP_FIDELITY_ANALYTIC, PP_COLL_ALLREDUCE, PP_ALGO_NCCL, 8e9,
                 16, NULL);
    assert_string_equal(r.nccl.algo, "NVLSTree");
    r = coll_run(h, PP_FIDELITY_ANALYTIC, PP_COLL_ALLREDUCE, PP_ALGO_NCCL, 8e9,
                 32, NULL);
    assert_string_equal(r.nccl.algo, "Ring");
    /* Flow fidelity: the ring's transfers run, the model is a floor. */
    pp_coll_result f = coll_run(h, PP_FIDELITY_FLOW, PP_COLL_ALLREDUCE,
                                PP_ALGO_NCCL, 8e9, 32, NULL);
    assert_true(f.transfers > 0);
    assert_true(f.time_s >= r.time_s * (1 - 1e-12));
    pp_cluster_free(h);
}

/* NVLS AllReduce in one H100 server across sizes (nccl.c's pipeline
 * fill over enqueue.cc's chunks), against the published sweep its two
 * constants were fitted to: AWS p5.48xlarge (8 x H100 SXM), nccl-tests
 * all_reduce_perf, out-of-place busbw, aws-samples/awsome-distributed-
 * training micro-benchmarks/nccl-tests/aws-batch/README.md.  This checks
 * the fit (each within 10%); the validation set's NVIDIA sweep
 * (tests/validation) is what it was not fitted to. */
static void test_nvls_sweep(void **state) {
    (void)state;
    static const struct {
        double mib, busbw;
        int64_t chunk;
    } aws[] = {{1, 64.24, 16384},      {2, 84.47, 16384},
               {4, 132.41, 16384},     {8, 174.16, 32768},
               {16, 236.82, 32768},    {32, 295.63, 32768},
               {64, 359.54, 65536},    {128, 396.19, 65536},
               {256, 418.91, 65536},   {512, 433.90, 65536},
               {1024, 441.81, 131072}, {2048, 444.02, 131072},
               {4096, 475.97, 131072}, {8192, 480.43, 131072},
               {16384, 483.05, 131072}};
    pp_cluster *h = coll_load_cluster("dgx-h100-ndr");
    double sum = 0, worst = 0;
    for (size_t i = 0; i < sizeof aws / sizeof aws[0]; i++) {
        double S = aws[i].mib * 1048576;
        pp_coll_result r = coll_run(h, PP_FIDELITY_ANALYTIC, PP_COLL_ALLREDUCE,
                                    PP_ALGO_NCCL, S, 8, NULL);
        assert_string_equal(r.nccl.algo, "NVLS");
        /* enqueue.cc's chunk for 16 channels x 8 heads. */
        assert_int_equal(r.nccl.chunk, aws[i].chunk);
        assert_true(r.nccl.fill_s > 0);
        assert_true(fabs(r.nccl.time_s - (r.nccl.lat_s + S / r.nccl.algbw_Bps +
                                          r.nccl.fill_s)) < 1e-12);
        double err = r.busbw_Bps / (aws[i].busbw * 1e9) - 1;
        printf("  all_reduce %6.0f MiB: %6.1f GB/s, AWS p5 %6.1f: %+5.1f%%\n",
               aws[i].mib, r.busbw_Bps / 1e9, aws[i].busbw, 100 * err);
        assert_true(fabs(err) <= TOL);
        sum += fabs(err);
        worst = fmax(worst, fabs(err));
    }
    printf("  mean |error| %.1f%%, max %.1f%%\n", 100 * sum / 15, 100 * worst);
    /* The ring (all_gather) and NVLS between servers keep the model's
     * time: no fill. */
    pp_coll_result r = coll_run(h, PP_FIDELITY_ANALYTIC, PP_COLL_ALLGATHER,
                                PP_ALGO_NCCL, 16e6, 8, NULL);
    assert_true(r.nccl.fill_s == 0);
    r = coll_run(h, PP_FIDELITY_ANALYTIC, PP_COLL_ALLREDUCE, PP_ALGO_NCCL, 8e9,
                 16, NULL);
    assert_string_equal(r.nccl.algo, "NVLSTree");
    assert_true(r.nccl.fill_s == 0);
    pp_cluster_free(h);
}

static void test_cli(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "collective --cluster dgx-h100-ndr --gpus 8 --algo nccl "
                 "--bytes 8GiB --fidelity analytic");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "nccl         chose NVLS/Simple"));
    cli_result_free(&r);
    cli_runf(&r, "collective --cluster dgx-h100-ndr --gpus 8 --algo nccl "
                 "--op alltoall --bytes 1GiB");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "point-to-point"));
    cli_result_free(&r);
    cli_runf(&r, "collective --cluster dgx-h100-ndr --gpus 8 --collnet "
                 "--bytes 1GiB");
    assert_int_equal(r.status, 2);
    cli_result_free(&r);
    /* CollNet (SHARP) asked for between servers: a choice among more. */
    cli_runf(&r, "collective --cluster dgx-h100-ndr --gpus 32 --algo nccl "
                 "--collnet --bytes 1GiB --fidelity analytic --format json");
    assert_int_equal(r.status, 0);
    json_t *o = cli_json(&r);
    assert_non_null(json_object_get(json_object_get(o, "nccl"), "algo"));
    json_decref(o);
    cli_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_published),
        cmocka_unit_test(test_structure),
        cmocka_unit_test(test_nvls_sweep),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
