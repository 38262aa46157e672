/*
 * test_topo.c: `podplan topo`, end to end through the binary: the
 * acceptance figures of issue 3 (hyperconnect-superpod's counts and
 * max-flow bisection, 2:1 halving it, TITAN's counts, the PCIe lane
 * shortfall of pcie-7dev), DOT that Graphviz renders, GraphML and JSON
 * exports that match the loaded graph, determinism and usage errors.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "podplan/sim.h"
#include "cli_run.h"

extern char **environ;

#define HDR_Bps 25e9 /* 200 Gb/s */

static double num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v)) fail_msg("key %s missing or not a number", key);
    return json_number_value(v);
}

static json_t *obj(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_object(v)) fail_msg("key %s missing or not an object", key);
    return v;
}

static void assert_rel(double got, double want, double tol) {
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("got %.9g, want %.9g within %g relative", got, want, tol);
}

static json_t *stats_json(const char *args) {
    cli_result r;
    cli_runf(&r, "topo stats --format json %s", args);
    if (r.status != 0)
        fail_msg("topo stats %s: exit %d: %s", args, r.status, r.err);
    json_t *j = cli_json(&r);
    cli_result_free(&r);
    return j;
}

/* Issue 3 acceptance: 160 GPUs, 160 HCAs, 8 leaves, non-blocking, and a
 * max-flow bisection of 80 x 200 Gb/s. */
static void test_hyperconnect_stats(void **state) {
    (void)state;
    json_t *j = stats_json("--cluster hyperconnect-superpod");
    assert_int_equal((int)num(j, "nodes"), 20);
    assert_int_equal((int)num(j, "gpus"), 160);
    assert_int_equal((int)num(j, "hcas"), 160);
    json_t *sw = obj(j, "switches");
    assert_int_equal((int)num(sw, "leaf"), 8);
    assert_int_equal(
        (int)num(sw, "total"),
        (int)(num(sw, "leaf") + num(sw, "spine") + num(sw, "core")));
    json_t *cab = obj(j, "cables");
    assert_int_equal((int)num(cab, "host"), 160);
    /* rail-optimised 1:1: every leaf has as many uplinks as downlinks */
    assert_int_equal((int)num(cab, "fabric"), 160);
    assert_int_equal((int)num(cab, "total"), 320);
    json_t *ports = obj(j, "ports_used");
    assert_int_equal((int)num(ports, "leaf"), 320);
    assert_rel(num(j, "injection_bandwidth_Bps"), HDR_Bps, 1e-12);
    assert_rel(num(j, "bisection_bandwidth_Bps"), 80 * HDR_Bps, 1e-9);
    assert_rel(num(j, "bisection_bandwidth_Bps"), 2e12, 1e-9);
    assert_true(json_is_true(json_object_get(j, "non_blocking")));
    assert_true(json_is_string(json_object_get(j, "bisection_split")));
    json_t *ov = obj(j, "oversubscription");
    assert_rel(num(ov, "leaf"), 1.0, 1e-12);
    json_decref(j);
}

/* 2:1 halves the leaf uplinks: the rail split forces all traffic onto
 * them, so the bisection halves and the fabric blocks. */
static void test_hyperconnect_2to1(void **state) {
    (void)state;
    json_t *j = stats_json("--cluster hyperconnect-superpod "
                           "--set fabric.oversubscription=2:1");
    assert_int_equal((int)num(j, "gpus"), 160);
    assert_rel(num(j, "bisection_bandwidth_Bps"), 40 * HDR_Bps, 1e-9);
    assert_true(json_is_false(json_object_get(j, "non_blocking")));
    assert_string_equal(
        json_string_value(json_object_get(j, "bisection_split")), "rail");
    assert_rel(num(obj(j, "oversubscription"), "leaf"), 2.0, 1e-9);
    json_decref(j);
}

/* TITAN: 130 nodes of 8 A100 80GB.  The switch and cable counts are the
 * built graph's own (56 leaves of 40-port QM8700 with 7 per rail, 26
 * spines); topologies/titan.yaml compares them with the real machine's 68
 * switches and 1,577 cables.  Every level is 1:1, but 26 spines against
 * 18-19 uplinks per leaf means no leaf reaches every spine, and max-flow
 * finds a split (by leaf) that the fabric cannot carry in full: the
 * bisection is at most half the injection and non_blocking says whether
 * it reaches it. */
static void test_titan(void **state) {
    (void)state;
    json_t *j = stats_json("--cluster titan");
    assert_int_equal((int)num(j, "nodes"), 130);
    assert_int_equal((int)num(j, "gpus"), 1040);
    assert_int_equal((int)num(j, "hcas"), 1040);
    json_t *sw = obj(j, "switches"), *cab = obj(j, "cables");
    assert_int_equal((int)num(sw, "leaf"), 56);
    assert_int_equal((int)num(sw, "spine"), 26);
    assert_int_equal((int)num(sw, "core"), 0);
    assert_int_equal((int)num(sw, "total"), 82);
    assert_int_equal((int)num(cab, "host"), 1040);
    assert_int_equal((int)num(cab, "fabric"), 1040);
    assert_int_equal((int)num(cab, "total"), 2080);
    json_t *ov = obj(j, "oversubscription");
    assert_rel(num(ov, "leaf"), 1.0, 1e-12);
    assert_rel(num(ov, "spine"), 1.0, 1e-12);
    double bis = num(j, "bisection_bandwidth_Bps");
    assert_true(bis > 0 && bis <= 520 * HDR_Bps * (1 + 1e-9));
    assert_int_equal(json_is_true(json_object_get(j, "non_blocking")),
                     bis >= 520 * HDR_Bps * (1 - 1e-9));
    json_decref(j);

    cli_result r;
    cli_runf(&r, "topo stats --cluster titan");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "1040"));
    assert_non_null(strstr(r.out, "bisection"));
    cli_result_free(&r);
}

/* Writes text to a fresh temporary .yaml file; the caller unlinks it. */
static void write_yaml(char *path, size_t len, const char *text) {
    char tmpl[] = "/tmp/podplan-topo-XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    close(fd);
    unlink(tmpl);
    snprintf(path, len, "%s.yaml", tmpl);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static const char *find_problem(json_t *list, const char *sev,
                                const char *where) {
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *p = json_array_get(list, i);
        if (strcmp(json_string_value(json_object_get(p, "severity")), sev) ==
                0 &&
            strcmp(json_string_value(json_object_get(p, "where")), where) == 0)
            return json_string_value(json_object_get(p, "message"));
    }
    return NULL;
}

/* An explicit fabric with three faults the generators never build: a
 * server with no cable (its GPUs cut off), a rail with no leaf, and a
 * 40-port switch given 43 cables. */
static void test_check_faults(void **state) {
    (void)state;
    char path[64];
    write_yaml(
        path, sizeof path,
        "name: broken\n"
        "node:\n"
        "  count: 3\n"
        "  gpus: {count: 8, type: a100-sxm4-40gb}\n"
        "  intra: nvswitch\n"
        "  pcie: {gen: 4, sockets: 2, lanes_per_socket: 128, switches: 4}\n"
        "  nics: {count: 2, type: hdr}\n"
        "fabric:\n"
        "  kind: explicit\n"
        "  switch: qm8700\n"
        "  link: hdr\n"
        "  switches:\n"
        "    - {name: leaf-a, level: leaf, rail: 0}\n"
        "    - {name: spine0, level: spine}\n"
        "  links:\n"
        "    - {a: n0.hca0, b: leaf-a}\n"
        "    - {a: n1.hca0, b: leaf-a}\n"
        "    - {a: leaf-a, b: spine0, count: 41}\n");
    cli_result r;
    cli_runf(&r, "topo check --cluster %s --format json", path);
    assert_int_equal(r.status, 1);
    json_t *j = cli_json(&r);
    json_t *list = json_object_get(j, "problems");
    const char *m;
    m = find_problem(list, "error", "n2");
    if (!m) fail_msg("no cut-off server: %s", r.out);
    assert_non_null(strstr(m, "all 8 GPUs of server n2 are cut off"));
    m = find_problem(list, "error", "rail 1");
    if (!m) fail_msg("no rail error: %s", r.out);
    assert_non_null(strstr(m, "no leaf serves rail 1"));
    m = find_problem(list, "error", "leaf-a");
    if (!m) fail_msg("no port error: %s", r.out);
    assert_non_null(strstr(m, "43 links"));
    assert_non_null(strstr(m, "40 ports"));
    assert_non_null(find_problem(list, "error", "n2.hca0"));
    json_decref(j);
    cli_result_free(&r);

    /* A cut-off HCA blocks: the fabric cannot carry what it is rated for. */
    char args[128];
    snprintf(args, sizeof args, "--cluster %s", path);
    json_t *s = stats_json(args);
    assert_true(json_is_false(json_object_get(s, "non_blocking")));
    assert_int_equal((int)num(s, "hcas"), 6);
    json_decref(s);
    unlink(path);
}

/* explicit-example: 4 host ports against 2 spine uplinks and 1 cable to
 * the other leaf per leaf; a lateral cable carries traffic out of the
 * leaf too, so the leaf level is 4:3, as the file says. */
static void test_explicit_ratio(void **state) {
    (void)state;
    json_t *j = stats_json("--cluster explicit-example");
    assert_rel(num(obj(j, "oversubscription"), "leaf"), 4.0 / 3.0, 1e-9);
    assert_true(json_is_false(json_object_get(j, "non_blocking")));
    assert_int_equal((int)num(obj(j, "cables"), "fabric"), 5);
    json_decref(j);
}

/* Two sockets of 48 lanes and seven x16 devices: the socket with four
 * gives two of them x8; check names them, says what each is left with,
 * and exits 1 because a lane shortfall is an error. */
static void test_pcie_lanes(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "topo check --cluster pcie-7dev --format json");
    assert_int_equal(r.status, 1);
    json_t *j = cli_json(&r);
    json_t *list = json_object_get(j, "problems");
    assert_true(json_is_array(list));
    const char *lane_msg = NULL;
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *p = json_array_get(list, i);
        const char *sev = json_string_value(json_object_get(p, "severity"));
        const char *msg = json_string_value(json_object_get(p, "message"));
        assert_non_null(json_string_value(json_object_get(p, "where")));
        if (sev && strcmp(sev, "error") == 0 && msg && strstr(msg, "x8"))
            lane_msg = msg;
    }
    if (!lane_msg) fail_msg("no lane error in: %s", r.out);
    assert_non_null(strstr(lane_msg, "48"));
    assert_non_null(strstr(lane_msg, "drop to x8"));
    assert_non_null(strstr(lane_msg, "GB/s"));
    /* two devices named: "<a> and <b> drop to x8" */
    assert_non_null(strstr(lane_msg, " and "));
    json_decref(j);
    cli_result_free(&r);

    cli_runf(&r, "topo check --cluster pcie-7dev");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "error"));
    assert_non_null(strstr(r.out, "x8"));
    cli_result_free(&r);
}

/* A clean cluster has no errors and exits 0. */
static void test_check_clean(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "topo check --cluster hyperconnect-superpod --format json");
    assert_int_equal(r.status, 0);
    json_t *j = cli_json(&r);
    assert_int_equal((int)num(j, "errors"), 0);
    json_decref(j);
    cli_result_free(&r);
}

/* An odd number of HCAs on one switch: the halves are 1 and 2 HCAs, so
 * full bisection is what the smaller half injects. */
static void test_single_switch(void **state) {
    (void)state;
    json_t *j = stats_json("--cluster ethernet-10g");
    assert_int_equal((int)num(j, "gpus"), 24);
    assert_int_equal((int)num(j, "hcas"), 3);
    assert_rel(num(j, "bisection_bandwidth_Bps"), 1.25e9, 1e-9);
    assert_true(json_is_true(json_object_get(j, "non_blocking")));
    json_decref(j);
}

/* Runs /usr/bin/dot -Tsvg on a file; returns its exit status. */
static int run_dot(const char *in, const char *out) {
    const char *argv[] = {"dot", "-Tsvg", in, "-o", out, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, "/usr/bin/dot", &fa, NULL, (char *const *)argv,
                         environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return -1;
    int st;
    if (waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void check_dot(const char *extra) {
    char dotf[] = "/tmp/podplan-topo-XXXXXX";
    int fd = mkstemp(dotf);
    assert_true(fd >= 0);
    close(fd);
    char svg[sizeof dotf + 8];
    snprintf(svg, sizeof svg, "%s.svg", dotf);
    cli_result r;
    cli_runf(&r, "topo dot --cluster hyperconnect-superpod %s -o %s", extra,
             dotf);
    if (r.status != 0) fail_msg("topo dot: exit %d: %s", r.status, r.err);
    cli_result_free(&r);
    assert_int_equal(run_dot(dotf, svg), 0);
    struct stat st;
    assert_int_equal(stat(svg, &st), 0);
    assert_true(st.st_size > 1000);
    unlink(svg);
    unlink(dotf);
}

static void test_dot_renders(void **state) {
    (void)state;
    check_dot("");
    check_dot("--expand");
    /* collapsed: one vertex per server, host links merged with a count */
    cli_result r;
    cli_runf(&r, "topo dot --cluster titan");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\"n129\""));
    assert_null(strstr(r.out, "gpu"));
    cli_result_free(&r);
}

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

static void load(const char *name, pp_cluster **c, size_t *nd, size_t *nl) {
    pp_error e = PP_ERROR_INIT;
    if (pp_cluster_load(name, NULL, 0, NULL, c, &e))
        fail_msg("loading %s: %s", name, e.msg);
    pp_cluster_devices(*c, nd);
    pp_cluster_links(*c, nl);
}

static void test_export(void **state) {
    (void)state;
    pp_cluster *c;
    size_t nd, nl;
    load("hyperconnect-superpod", &c, &nd, &nl);

    cli_result r;
    cli_runf(&r, "topo export --cluster hyperconnect-superpod");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "<graphml"));
    assert_non_null(strstr(r.out, "</graphml>"));
    assert_int_equal(count(r.out, "<node "), nd);
    assert_int_equal(count(r.out, "<edge "), nl);
    assert_non_null(strstr(r.out, "attr.name=\"bw_Bps\""));
    assert_non_null(strstr(r.out, "attr.name=\"lat_s\""));
    assert_non_null(strstr(r.out, "attr.name=\"kind\""));
    cli_result_free(&r);

    cli_runf(&r, "topo export --cluster hyperconnect-superpod --format json");
    assert_int_equal(r.status, 0);
    json_t *j = cli_json(&r);
    json_t *vs = json_object_get(j, "vertices"),
           *es = json_object_get(j, "edges");
    assert_int_equal(json_array_size(vs), nd);
    assert_int_equal(json_array_size(es), nl);
    size_t gpus = 0, hcas = 0, host = 0;
    for (size_t i = 0; i < nd; i++) {
        const char *k =
            json_string_value(json_object_get(json_array_get(vs, i), "kind"));
        assert_non_null(k);
        if (strcmp(k, pp_dev_kind_name(PP_DEV_GPU)) == 0) gpus++;
        if (strcmp(k, pp_dev_kind_name(PP_DEV_HCA)) == 0) hcas++;
    }
    for (size_t i = 0; i < nl; i++) {
        json_t *x = json_array_get(es, i);
        assert_true(num(x, "bw_Bps") > 0);
        assert_true(num(x, "lat_s") >= 0);
        const char *k = json_string_value(json_object_get(x, "kind"));
        if (k && strcmp(k, pp_link_kind_name(PP_LINK_HOST)) == 0) host++;
    }
    assert_int_equal(gpus, 160);
    assert_int_equal(hcas, 160);
    assert_int_equal(host, 2 * 160); /* one edge per direction */
    json_decref(j);
    cli_result_free(&r);
    pp_cluster_free(c);
}

/* In-process: the library's figures equal the CLI's, and a second call
 * on the same cluster gives the same answer (igraph state is not left
 * behind by the GraphML writer's attribute handler). */
static void test_library(void **state) {
    (void)state;
    pp_cluster *c;
    size_t nd, nl;
    pp_error e = PP_ERROR_INIT;
    load("hyperconnect-superpod", &c, &nd, &nl);
    pp_topo_stats a, b;
    assert_int_equal(pp_topo_stats_compute(c, &a, &e), 0);
    FILE *fp = tmpfile();
    assert_non_null(fp);
    assert_int_equal(pp_topo_export(c, PP_EXPORT_GRAPHML, fp, &e), 0);
    fclose(fp);
    assert_int_equal(pp_topo_stats_compute(c, &b, &e), 0);
    assert_memory_equal(&a, &b, sizeof a);
    assert_rel(a.bisection_Bps, 2e12, 1e-9);
    assert_true(a.non_blocking);
    pp_problem *p = NULL;
    size_t n = 0;
    assert_int_equal(pp_topo_check(c, &p, &n, &e), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_not_equal(p[i].severity, PP_SEV_ERROR);
    free(p);
    pp_cluster_free(c);
}

static void test_deterministic(void **state) {
    (void)state;
    static const char *const cmds[] = {
        "topo stats --cluster hyperconnect-superpod --format json",
        "topo check --cluster pcie-7dev --format json",
        "topo dot --cluster hyperconnect-superpod",
        "topo export --cluster hyperconnect-superpod --format json",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        cli_result a, b;
        cli_runf(&a, "%s", cmds[i]);
        cli_runf(&b, "%s", cmds[i]);
        assert_int_equal(a.status, b.status);
        if (strcmp(a.out, b.out) != 0) fail_msg("%s: output differs", cmds[i]);
        cli_result_free(&a);
        cli_result_free(&b);
    }
}

static void expect_usage(const char *line, const char *msg) {
    cli_result r;
    cli_runf(&r, "%s", line);
    if (r.status != 2)
        fail_msg("%s: exit %d, want 2: %s", line, r.status, r.err);
    if (msg && !strstr(r.err, msg))
        fail_msg("%s: stderr lacks \"%s\": %s", line, msg, r.err);
    assert_string_equal(r.out, "");
    cli_result_free(&r);
}

static void test_usage(void **state) {
    (void)state;
    expect_usage("topo frobnicate --cluster hyperconnect-superpod",
                 "unknown subcommand \"frobnicate\"");
    expect_usage("topo stat --cluster hyperconnect-superpod",
                 "did you mean \"stats\"");
    expect_usage("topo stats", "--cluster is required");
    expect_usage("topo", "expected a subcommand");
    expect_usage("topo stats --cluster hyperconnect-superpod --format graphml",
                 "--format");
    expect_usage("topo export --cluster hyperconnect-superpod --format table",
                 "--format");
    expect_usage("topo stats --cluster no-such-cluster", NULL);
    expect_usage("topo stats --cluster hyperconnect-superpod --set "
                 "fabric.oversubscription=two",
                 "--set:1");
    cli_result r;
    cli_runf(&r, "topo --help");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "--cluster"));
    assert_non_null(strstr(r.out, "bisection"));
    cli_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hyperconnect_stats),
        cmocka_unit_test(test_hyperconnect_2to1),
        cmocka_unit_test(test_titan),
        cmocka_unit_test(test_pcie_lanes),
        cmocka_unit_test(test_check_clean),
        cmocka_unit_test(test_check_faults),
        cmocka_unit_test(test_explicit_ratio),
        cmocka_unit_test(test_single_switch),
        cmocka_unit_test(test_export),
        cmocka_unit_test(test_library),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_usage),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    /* DOT rendering needs Graphviz: a missing dot is a skip, not a fail. */
    if (access("/usr/bin/dot", X_OK) != 0) {
        printf("graphviz dot not found: skipping the DOT rendering test\n");
        return rc ? rc : 77;
    }
    const struct CMUnitTest dot_tests[] = {cmocka_unit_test(test_dot_renders)};
    return rc | cmocka_run_group_tests_name("dot", dot_tests, NULL, NULL);
}
