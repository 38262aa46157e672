/*
 * test_traffic.c: the traffic-matrix reader (sim/traffic.c): good files in
 * both formats, and broken ones, each with the exact located message
 * (file:line:col: field: what was expected).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "podplan/traffic.h"
#include "test_util.h"

static pp_cluster *cluster;
static char dir[64];

static int setup(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    if (pp_cluster_load("ethernet-10g", NULL, 0, NULL, &cluster, &e)) {
        print_error("ethernet-10g: %s\n", e.msg);
        return -1;
    }
    snprintf(dir, sizeof dir, "/tmp/pp_traffic_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    pp_cluster_free(cluster);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes text to <dir>/name and returns the path (static buffer). */
static const char *put(const char *name, const char *text) {
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    return path;
}

/* Loading `text` as `name` fails with PP_EINPUT and the message
 * "<path>:<want>" exactly, leaving the output untouched. */
static void expect_error(const char *name, const char *text, int code,
                         const char *want) {
    const char *path = put(name, text);
    pp_traffic *t = (pp_traffic *)0x1;
    pp_error e = PP_ERROR_INIT;
    int rc = pp_traffic_load(path, cluster, 0, &t, &e);
    if (rc != code) fail_msg("%s: rc %d, want %d (%s)", name, rc, code, e.msg);
    assert_ptr_equal(t, (pp_traffic *)0x1);
    char full[512];
    snprintf(full, sizeof full, "%s:%s", path, want);
    if (strcmp(e.msg, full) != 0)
        fail_msg("%s:\n  got  %s\n  want %s", name, e.msg, full);
}

static void test_csv(void **state) {
    (void)state;
    const char *path = put("ok.csv", "# measured traffic\n"
                                     "src, dst, bytes, start\n"
                                     "n0.gpu0, n1.gpu0, 1GB, 0s\n"
                                     "\n"
                                     "n2.gpu0,n0.gpu0,500MB,10ms\n");
    pp_traffic *t = NULL;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_traffic_load(path, cluster, 0, &t, &e), 0);
    assert_int_equal(t->n, 2);
    assert_string_equal(t->file, path);
    assert_int_equal(t->flows[0].src, pp_cluster_find(cluster, "n0.gpu0"));
    assert_int_equal(t->flows[0].dst, pp_cluster_find(cluster, "n1.gpu0"));
    assert_close(t->flows[0].bytes, 1e9, 1e-15);
    assert_close(t->flows[1].bytes, 5e8, 1e-15);
    assert_close(t->flows[1].start_s, 0.01, 1e-15);
    assert_int_equal(t->flows[1].line, 5);
    pp_traffic_free(t);
    pp_traffic_free(NULL);
}

/* Columns in any order; start optional. */
static void test_csv_columns(void **state) {
    (void)state;
    const char *path = put("cols.csv", "bytes,dst,src\n2MB,n0.hca0,n1.gpu3\n");
    pp_traffic *t = NULL;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_traffic_load(path, cluster, 0, &t, &e), 0);
    assert_int_equal(t->n, 1);
    assert_close(t->flows[0].bytes, 2e6, 1e-15);
    assert_close(t->flows[0].start_s, 0, 0);
    assert_int_equal(t->flows[0].src, pp_cluster_find(cluster, "n1.gpu3"));
    pp_traffic_free(t);
}

static void test_yaml(void **state) {
    (void)state;
    const char *path =
        put("ok.yaml", "flows:\n"
                       "  - {src: n0.gpu0, dst: n1.gpu0, bytes: 1GB}\n"
                       "  - {src: n0.gpu1, dst: n1.gpu0, bytes: 1GiB, "
                       "start: 2ms}\n");
    pp_traffic *t = NULL;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_traffic_load(path, cluster, 0, &t, &e), 0);
    assert_int_equal(t->n, 2);
    assert_close(t->flows[1].bytes, 1073741824.0, 1e-15);
    assert_close(t->flows[1].start_s, 2e-3, 1e-15);
    assert_int_equal(t->flows[1].line, 3);
    assert_int_equal(t->flows[1].col, 5);
    pp_traffic_free(t);
}

static void test_csv_broken(void **state) {
    (void)state;
    expect_error("col.csv", "src,dst,byts\n", PP_EINPUT,
                 "1:9: header: unknown column \"byts\" (did you mean "
                 "\"bytes\"?)");
    expect_error("twice.csv", "src,dst,bytes,src\n", PP_EINPUT,
                 "1:15: header: column \"src\" given twice");
    expect_error("missing.csv", "src,bytes\n", PP_EINPUT,
                 "1:1: header: missing column \"dst\" (the header is "
                 "src,dst,bytes[,start])");
    expect_error("empty.csv", "# nothing\n", PP_EINPUT,
                 "1:1: header: no header line (expected src,dst,bytes,start)");
    expect_error("fields.csv", "src,dst,bytes\nn0.gpu0,n1.gpu0\n", PP_EINPUT,
                 "2:16: expected 3 fields as in the header, got 2");
    expect_error("bytes.csv", "src,dst,bytes\nn0.gpu0,n1.gpu0,1Gb\n", PP_EINPUT,
                 "2:17: bytes: expected a byte size such as 80GB or 80GiB; "
                 "\"Gb\" is bits, got \"1Gb\"");
    expect_error("start.csv", "src,dst,bytes,start\nn0.gpu0,n1.gpu0,1GB,soon\n",
                 PP_EINPUT,
                 "2:21: start: expected a time such as 1.5us or 20ms, not a "
                 "number, got \"soon\"");
    expect_error("dev.csv", "src,dst,bytes\nn0.gpu9,n1.gpu0,1GB\n", PP_EINPUT,
                 "2:1: src: unknown device \"n0.gpu9\" (did you mean "
                 "\"n0.gpu0\"?); gpu devices are n0.gpu0 .. n2.gpu7");
}

static void test_yaml_broken(void **state) {
    (void)state;
    expect_error("nolist.yaml", "flows: 3\n", PP_EINPUT,
                 "1:8: flows: expected a list, got \"3\"");
    expect_error("nobytes.yaml", "flows:\n  - {src: n0.gpu0, dst: n1.gpu0}\n",
                 PP_EINPUT, "2:5: flows[0].bytes: missing (required)");
    expect_error("key.yaml",
                 "flows:\n  - {src: n0.gpu0, dst: n1.gpu0, bytes: 1GB, "
                 "strat: 0s}\n",
                 PP_EINPUT,
                 "2:46: flows[0].strat: unknown key (did you mean "
                 "\"start\"?)");
    expect_error("dst.yaml",
                 "flows:\n  - {src: n0.gpu0, dst: spine0, bytes: 1GB}\n",
                 PP_EINPUT,
                 "2:25: flows[0].dst: unknown device \"spine0\" (devices are "
                 "named as `podplan topo export` names them: n0.gpu0, "
                 "n0.hca0, leaf0, ...)");
}

static void test_missing_file(void **state) {
    (void)state;
    pp_traffic *t = NULL;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(
        pp_traffic_load("/nonexistent/flows.csv", cluster, 0, &t, &e),
        PP_ENOENT);
    assert_null(t);
    assert_non_null(strstr(e.msg, "/nonexistent/flows.csv"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv),         cmocka_unit_test(test_csv_columns),
        cmocka_unit_test(test_yaml),        cmocka_unit_test(test_csv_broken),
        cmocka_unit_test(test_yaml_broken), cmocka_unit_test(test_missing_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
