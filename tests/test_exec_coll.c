/*
 * test_exec_coll.c: `podplan exec collective` between real processes on
 * this machine (--np), end to end through the JSON: every op, dtype and
 * reduction on 2, 3, 4 and 7 ranks, counts 0, 1, odd, not divisible by the
 * ranks, and a few MiB; a rank that corrupts its output, dies or stalls
 * (PODPLAN_EXEC_FAULT) and what the others say; usage errors.
 *
 * Sizes: -b 0 -f 3 walks 0, one element (per rank for the blocked ops),
 * then x3: counts 1, 3, 9, ... 3^k, odd and prime to 2, 4 and 7.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cli_run.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Runs the sweep -b 0 -e max -f f and requires exit 0, every size
 * present and nothing wrong; returns the JSON (the caller frees it). */
static json_t *sweep_json(const char *coll, int np, const char *dt,
                          const char *red, long max, long f,
                          const char *extra) {
    cli_result r;
    cli_runf(&r,
             "exec collective --coll %s --np %d -d %s -o %s -n 1 -w 0 "
             "--timeout 10 --format json -b 0 -e %ld -f %ld %s",
             coll, np, dt, red, max, f, extra);
    bool blocked = !strcmp(coll, "allgather") ||
                   !strcmp(coll, "reducescatter") || !strcmp(coll, "alltoall");
    long unit = (strcmp(dt, "float") ? 2 : 4) * (blocked ? np : 1);
    size_t rows = 1;
    for (long s = unit; s <= max; s *= f) rows++;
    if (r.status != 0)
        fail_msg("%s np=%d %s %s %s: exit %d: %s", coll, np, dt, red, extra,
                 r.status, r.err);
    json_t *j = cli_json(&r);
    json_t *res = json_object_get(j, "results");
    assert_int_equal(json_array_size(res), rows);
    assert_true(rows >= 3);
    assert_int_equal(json_integer_value(json_object_get(j, "wrong_total")), 0);
    size_t i;
    json_t *row;
    json_array_foreach(res, i, row) {
        json_t *o = json_object_get(row, "out_of_place");
        json_t *p = json_object_get(row, "in_place");
        assert_int_equal(json_integer_value(json_object_get(o, "wrong")), 0);
        assert_int_equal(json_integer_value(json_object_get(p, "wrong")), 0);
        assert_int_equal(json_array_size(json_object_get(o, "slowest_rank")),
                         1);
    }
    json_t *setup = json_object_get(j, "setup");
    assert_int_equal(json_integer_value(json_object_get(setup, "ranks")), np);
    cli_result_free(&r);
    return j;
}

static void sweep(const char *coll, int np, const char *dt, const char *red,
                  long max, long f, const char *extra) {
    json_decref(sweep_json(coll, np, dt, red, max, f, extra));
}

/* Every row's impl: want_above for sizes above rd_max, want_upto for the
 * others. */
static void expect_impl(json_t *j, long rd_max, const char *want_upto,
                        const char *want_above) {
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(j, "results"), i, row) {
        long bytes =
            (long)json_integer_value(json_object_get(row, "size_bytes"));
        const char *impl = json_string_value(json_object_get(row, "impl"));
        const char *want = bytes > rd_max ? want_above : want_upto;
        if (!impl || strcmp(impl, want))
            fail_msg("%ld bytes: impl %s, want %s", bytes,
                     impl ? impl : "(none)", want);
    }
}

static const char *const colls[] = {"allreduce", "allgather", "reducescatter",
                                    "broadcast", "alltoall",  "sendrecv"};
static const char *const dts[] = {"float", "bfloat16", "half"};
static const char *const reds[] = {"sum", "max", "min"};

/* Every op x dtype x reduction on 3 and 4 ranks, small counts. */
static void test_matrix(void **state) {
    (void)state;
    for (int n = 3; n <= 4; n++)
        for (int c = 0; c < 6; c++)
            for (int d = 0; d < 3; d++) {
                bool reduces = c == 0 || c == 2;
                for (int o = 0; o < (reduces ? 3 : 1); o++)
                    /* 0 .. 3^6 elements: 0,1,3,...,729 -> 8 sizes */
                    sweep(colls[c], n, dts[d], reds[o], 3000, 3,
                          "--slice 64 --channels 3 -r 1");
            }
}

/* Up to a few MiB on 2, 3, 4, 7 ranks: the pipeline with many slices. */
static void test_large(void **state) {
    (void)state;
    static const int nps[] = {2, 3, 4, 7};
    for (int k = 0; k < 4; k++)
        for (int c = 0; c < 6; c++) {
            char extra[64];
            bool blocked = c == 1 || c == 2 || c == 4;
            snprintf(extra, sizeof extra, "-r %d", nps[k] - 1);
            /* one element (per rank), then 3^13 = 1594323 of them (6 MiB
             * in fp32), or 3^11 per rank for the blocked ops (4.8 MiB on
             * 7 ranks) */
            sweep(colls[c], nps[k], c % 2 ? "half" : "float", "sum", 7 << 20,
                  blocked ? 177147 : 1594323, extra);
        }
}

/* Recursive doubling, forced, on powers of two and not (the fix-up), and
 * the ring forced where auto would take rd. */
static void test_algos(void **state) {
    (void)state;
    for (int n = 2; n <= 7; n++) {
        sweep("allreduce", n, "bfloat16", "sum", 300000, 3, "--algo rd");
        sweep("allreduce", n, "float", "min", 3000, 3, "--algo ring");
    }
    cli_result r;
    cli_runf(
        &r,
        "exec collective --np 3 -b 1K -e 1M -f 1024 -n 1 -w 0 --format json");
    json_t *j = cli_json(&r);
    json_t *res = json_object_get(j, "results");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(res, 0), "algo")),
        "rd");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(res, 1), "algo")),
        "ring");
    json_decref(j);
    cli_result_free(&r);
}

/* Rabenseifner (--algo rd above --rd-max; --rd-max 0 puts every size
 * but 0 on it): 2..7 ranks (powers of two and the fix-up), counts 0, 1,
 * odd, fewer than the ranks' blocks, not divisible, every dtype and
 * reduction across the rank counts, and a few MiB. */
static void test_rabenseifner(void **state) {
    (void)state;
    for (int n = 2; n <= 7; n++) {
        for (int k = 0; k < 3; k++) {
            json_t *j =
                sweep_json("allreduce", n, dts[(n + k) % 3], reds[k], 3000, 3,
                           "--algo rd --rd-max 0 --channels 3 "
                           "--slice 64");
            expect_impl(j, 0, "rd", "rabenseifner");
            json_decref(j);
        }
        /* 1 element, then 3^13 (6 MiB fp32, 3 MiB half): uneven blocks */
        json_t *j = sweep_json("allreduce", n, n % 2 ? "half" : "float", "sum",
                               7 << 20, 1594323, "--algo rd");
        expect_impl(j, 65536, "rd", "rabenseifner");
        json_decref(j);
    }
    /* --rd-max moves auto's switch to the ring too */
    json_t *j =
        sweep_json("allreduce", 3, "float", "sum", 3000, 3, "--rd-max 100");
    expect_impl(j, 100, "rd", "ring");
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(j, "setup"), "rd_max_bytes")),
                     100);
    json_decref(j);
}

/* A wrong value is counted and fails the run. */
static void test_check_fails(void **state) {
    (void)state;
    cli_result r;
    setenv("PODPLAN_EXEC_FAULT", "rank=1,step=1,mode=corrupt", 1);
    cli_runf(&r, "exec collective --np 3 -b 4K -e 4K -n 1 -w 0");
    unsetenv("PODPLAN_EXEC_FAULT");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "# Out of bounds values : 2 FAILED"));
    assert_non_null(strstr(r.err, "2 wrong values"));
    cli_result_free(&r);
}

static pid_t fault_pid(const char *err) {
    const char *p = strstr(err, "(pid ");
    return p ? (pid_t)atoi(p + 5) : 0;
}

/* A rank dies at step 3 of 6: every other rank exits within the timeout,
 * saying which peer and which step; the launcher returns 1. */
static void test_peer_dies(void **state) {
    (void)state;
    cli_result r;
    setenv("PODPLAN_EXEC_FAULT", "rank=2,step=3,mode=kill", 1);
    double t0 = now();
    cli_runf(&r, "exec collective --np 4 -b 4M -e 4M -n 3 -w 0 --timeout 3");
    double dt = now() - t0;
    unsetenv("PODPLAN_EXEC_FAULT");
    assert_int_equal(r.status, 1);
    assert_true(dt < 3.0);
    assert_non_null(strstr(r.err, "rank 2 (pid"));
    /* its ring neighbours name it */
    assert_non_null(strstr(r.err, "rank 3: allreduce ring step"));
    assert_non_null(strstr(r.err, "recv from rank 2: connection closed"));
    assert_non_null(strstr(r.err, "rank 1: allreduce ring step"));
    assert_non_null(strstr(r.err, "rank 0: allreduce ring step"));
    cli_result_free(&r);
}

/* A rank stalls (SIGSTOP): its neighbours time out, the rest follow, and
 * the launcher kills the stopped one: no orphan. */
static void test_peer_stalls(void **state) {
    (void)state;
    cli_result r;
    setenv("PODPLAN_EXEC_FAULT", "rank=1,step=2,mode=stop", 1);
    double t0 = now();
    cli_runf(&r, "exec collective --np 3 -b 1M -e 1M -n 2 -w 0 --timeout 2");
    double dt = now() - t0;
    unsetenv("PODPLAN_EXEC_FAULT");
    assert_int_equal(r.status, 1);
    assert_true(dt >= 2.0 && dt < 9.0);
    assert_non_null(
        strstr(r.err, "injected fault at allreduce ring step 2: stopping"));
    assert_non_null(strstr(r.err, "from rank 1: no progress within 2 s"));
    pid_t pid = fault_pid(r.err);
    assert_true(pid > 0);
    /* gone (and reaped by the launcher) */
    assert_int_equal(kill(pid, 0), -1);
    assert_int_equal(errno, ESRCH);
    cli_result_free(&r);
}

static void expect_usage(const char *args, int status, const char *msg) {
    cli_result r;
    cli_runf(&r, "exec collective %s", args);
    if (r.status != status || !strstr(r.err, msg))
        fail_msg("%s: exit %d (want %d), stderr: %s (want \"%s\")", args,
                 r.status, status, r.err, msg);
    cli_result_free(&r);
}

static void test_usage(void **state) {
    (void)state;
    expect_usage("--coll allreduse --np 2", 2, "did you mean \"allreduce\"");
    expect_usage("--coll allgather --algo rd --np 2", 2,
                 "recursive doubling is an allreduce algorithm");
    expect_usage("-d double --np 2", 2,
                 "--datatype: expected float|bfloat16|half");
    expect_usage("-b 2M -e 1M --np 2", 2,
                 "--minbytes 2097152 is above --maxbytes");
    expect_usage("--np 2 -r 2 --coll broadcast", 2,
                 "--root 2: not a rank of 0..1");
    expect_usage("--np 2 --transport ucx", 2,
                 "--transport: expected tcp|verbs");
    expect_usage("--np 2 --reduce-on cuda", 2,
                 "--reduce-on cuda: the buffers are in host memory");
    expect_usage("--np 2 --device cuda --reduce-on gpu", 2,
                 "--reduce-on: expected cpu|cuda");
    /* GPU buffers, the staged slices reduced on the CPU (default) and on
     * the GPU: where a GPU is usable the run must be right (#wrong 0);
     * elsewhere it must say why it cannot run. */
    for (int on_gpu = 0; on_gpu < 2; on_gpu++) {
        cli_result g;
        cli_runf(&g,
                 "exec collective --np 2 --device cuda%s -b 1K -e 64K -f 8 "
                 "-n 2 -w 1",
                 on_gpu ? " --reduce-on cuda -d bfloat16" : "");
        if (g.status == 0)
            assert_non_null(strstr(g.out, "# Out of bounds values : 0 OK\n"));
        else if (g.status != 1 ||
                 !strstr(g.err, "--device cuda: no usable GPU"))
            fail_msg("--device cuda: exit %d, stderr: %s", g.status, g.err);
        cli_result_free(&g);
    }
    cli_result r;
    cli_runf(&r, "exec gemmm");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "unknown subcommand \"gemmm\""));
    cli_result_free(&r);
}

/* nccl-tests' whole option list is taken with its syntax (-b8 too):
 * -m and -a act, -J writes the JSON, -T is the timeout, the flags with no
 * meaning here are ignored with a note where the value asks for
 * something. */
static void test_nccl_flags(void **state) {
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/podplan_test_J_%d.json", (int)getpid());
    cli_result r;
    cli_runf(&r,
             "exec collective --np 3 -b8 -e 4K -f 8 -n 2 -w 1 -c 3 -z 1 "
             "-t 2 -g 1 -p 1 -N 1 -y 0 -G 1 -C 1 -S 0 -R 1 -x 0 -D 0 -V 16 "
             "-M 0 -m 3 -a 2 -T 5 -J %s",
             path);
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "minBytes 8 maxBytes 4096 "));
    assert_non_null(strstr(r.out, " agg iters: 3 validation: 1 "));
    assert_non_null(strstr(r.out, "# Out of bounds values : 0 OK\n"));
    assert_non_null(strstr(r.err, "note: --nthreads 2 ignored"));
    assert_non_null(strstr(r.err, "note: --cudagraph 1 ignored"));
    assert_null(strstr(r.err, "--blocking"));
    assert_null(strstr(r.err, "--ngpus"));
    cli_result_free(&r);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    unlink(path);
    assert_non_null(j);
    json_t *setup = json_object_get(j, "setup");
    assert_int_equal(json_integer_value(json_object_get(setup, "agg_iters")),
                     3);
    assert_string_equal(json_string_value(json_object_get(setup, "average")),
                        "min");
    assert_int_equal(json_array_size(json_object_get(j, "results")), 4);
    assert_int_equal(json_integer_value(json_object_get(j, "wrong_total")), 0);
    json_decref(j);
    expect_usage("--np 2 -a 4", 2, "--average: expected an integer in 0..3");
    expect_usage("--np 2 -m 0", 2, "--agg_iters: expected");
    expect_usage("--np 2 -z yes", 2, "--blocking: expected an integer");
    expect_usage("--np 2 -q 1", 2, "unknown option -q");
}

/* The table is nccl-tests': the lines its parsers look for. */
static void test_table(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "exec collective --np 2 -b 8 -e 64 -f 2 -n 2 -w 1");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(
        r.out, "#       size         count      type   redop    root     time  "
               " algbw   busbw #wrong     time   algbw   busbw #wrong\n"));
    assert_non_null(strstr(r.out, "#  Rank  1 Group  0 Pid "));
    assert_non_null(strstr(r.out, "# Out of bounds values : 0 OK\n"));
    assert_non_null(strstr(r.out, "# Avg bus bandwidth    : "));
    assert_non_null(strstr(
        r.out, "\n           8             2     float     sum      -1  "));
    assert_non_null(strstr(
        r.out, "\n          64            16     float     sum      -1  "));
    cli_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_nccl_flags),   cmocka_unit_test(test_matrix),
        cmocka_unit_test(test_large),        cmocka_unit_test(test_algos),
        cmocka_unit_test(test_rabenseifner), cmocka_unit_test(test_check_fails),
        cmocka_unit_test(test_peer_dies),    cmocka_unit_test(test_peer_stalls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
