/*
 * test_route.c: routing (sim/topo/route.c), the simulation's two fidelities
 * (sim/net/sim.c), the trace (sim/net/trace.c) and `podplan flows`.
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

/* ---- helpers ------------------------------------------------------------ */

static pp_cluster *load(const char *spec, const char *set) {
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = NULL;
    const char *sets[1] = {set};
    if (pp_cluster_load(spec, sets, set ? 1 : 0, NULL, &c, &e))
        fail_msg("loading %s: %s", spec, e.msg);
    return c;
}

static int32_t dev(const pp_cluster *c, const char *name) {
    int32_t d = pp_cluster_find(c, name);
    if (d < 0) fail_msg("no device %s", name);
    return d;
}

typedef struct route {
    const int32_t *path;
    size_t n;
    double lat, bw;
} route;

static route get(pp_router *r, const pp_cluster *c, const char *a,
                 const char *b, uint64_t key) {
    pp_error e = PP_ERROR_INIT;
    route x;
    if (pp_route(r, dev(c, a), dev(c, b), key, &x.path, &x.n, &x.lat, &x.bw,
                 &e))
        fail_msg("route %s -> %s: %s", a, b, e.msg);
    return x;
}

/* The kinds of the devices along a path, "gpu nvswitch gpu". */
static void kinds(const pp_cluster *c, const route *x, char *buf, size_t len) {
    size_t nd, nl;
    const pp_device *d = pp_cluster_devices(c, &nd);
    const pp_link *l = pp_cluster_links(c, &nl);
    buf[0] = '\0';
    for (size_t i = 0; i <= x->n; i++) {
        int32_t v = i < x->n ? l[x->path[i]].src : l[x->path[i - 1]].dst;
        size_t u = strlen(buf);
        snprintf(buf + u, len - u, "%s%s", i ? " " : "",
                 pp_dev_kind_name(d[v].kind));
    }
}

/* Sum of latencies and min of capacities, recomputed, and the path
 * joined end to end. */
static void check_consistent(const pp_cluster *c, const route *x, int32_t src,
                             int32_t dst) {
    size_t nl;
    const pp_link *l = pp_cluster_links(c, &nl);
    double lat = 0, bw = INFINITY;
    int32_t at = src;
    for (size_t i = 0; i < x->n; i++) {
        assert_int_equal(l[x->path[i]].src, at);
        at = l[x->path[i]].dst;
        lat += l[x->path[i]].lat_s;
        bw = fmin(bw, l[x->path[i]].bw_Bps);
    }
    assert_int_equal(at, dst);
    assert_true(lat == x->lat);
    assert_true(bw == x->bw);
}

static void assert_rel(double got, double want, double tol) {
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("got %.15g, want %.15g within %g relative", got, want, tol);
}

/* ---- routing on hyperconnect-superpod ----------------------------------- */

static void test_intra_nvswitch(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = load("hyperconnect-superpod", NULL);
    pp_router *r;
    assert_int_equal(pp_router_new(c, 0, &r, &e), 0);
    route x = get(r, c, "n0.gpu0", "n0.gpu5", 0);
    char k[256];
    kinds(c, &x, k, sizeof k);
    assert_string_equal(k, "gpu nvswitch gpu");
    check_consistent(c, &x, dev(c, "n0.gpu0"), dev(c, "n0.gpu5"));
    /* One logical NVSwitch: the GPU's whole NVLink bandwidth, 300 GB/s
     * per direction on the A100. */
    assert_rel(x.bw, pp_cluster_info_get(c)->gpu->nvlink_Bps, 1e-12);
    assert_rel(x.bw, 300e9, 1e-12);
    pp_router_free(r);
    pp_cluster_free(c);
}

static void test_cross_node(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = load("hyperconnect-superpod", NULL);
    pp_router *r;
    char k[256];
    assert_int_equal(pp_router_new(c, 0, &r, &e), 0);

    /* Same rail: the rail's leaf joins the two HCAs, no spine. */
    route x = get(r, c, "n0.gpu3", "n7.gpu3", 0);
    kinds(c, &x, k, sizeof k);
    assert_string_equal(k, "gpu pcie-switch hca leaf hca pcie-switch gpu");
    check_consistent(c, &x, dev(c, "n0.gpu3"), dev(c, "n7.gpu3"));
    size_t nl;
    const pp_link *l = pp_cluster_links(c, &nl);
    assert_int_equal(l[x.path[1]].dst,
                     pp_cluster_gpu_hca(c, dev(c, "n0.gpu3")));
    assert_int_equal(l[x.path[4]].src,
                     pp_cluster_gpu_hca(c, dev(c, "n7.gpu3")));
    assert_rel(x.bw, 25e9, 1e-12); /* HDR, 200 Gb/s */
    /* Hand-computed: four PCIe gen4 hops of 500 ns, HCA -> leaf 600 ns of
     * cable + 130 ns of QM8700, leaf -> HCA 600 ns. */
    assert_rel(x.lat, 4 * 500e-9 + 730e-9 + 600e-9, 1e-12);

    /* Different rails: up through a spine. */
    x = get(r, c, "n0.gpu0", "n1.gpu3", 0);
    kinds(c, &x, k, sizeof k);
    assert_string_equal(k, "gpu pcie-switch hca leaf spine leaf hca "
                           "pcie-switch gpu");
    check_consistent(c, &x, dev(c, "n0.gpu0"), dev(c, "n1.gpu3"));

    /* GPU to its own HCA: PCIe only (GPUDirect RDMA's first leg). */
    x = get(r, c, "n2.gpu1", "n2.hca1", 0);
    kinds(c, &x, k, sizeof k);
    assert_string_equal(k, "gpu pcie-switch hca");
    pp_router_free(r);
    pp_cluster_free(c);
}

static void test_ecmp(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = load("hyperconnect-superpod", NULL);
    pp_router *r;
    size_t nl, nd;
    const pp_link *l = pp_cluster_links(c, &nl);
    const pp_device *d = pp_cluster_devices(c, &nd);
    assert_int_equal(pp_router_new(c, 0, &r, &e), 0);
    bool used[64] = {false};
    int spines = 0;
    for (uint64_t key = 0; key < 64; key++) {
        route x = get(r, c, "n0.gpu0", "n1.gpu3", key);
        int32_t s = l[x.path[3]].dst;
        assert_int_equal(d[s].kind, PP_DEV_SPINE);
        if (!used[d[s].local]) spines++;
        used[d[s].local] = true;
        /* Same key, same path; a key equal mod the class count too. */
        route y = get(r, c, "n0.gpu0", "n1.gpu3", key);
        route z = get(r, c, "n0.gpu0", "n1.gpu3", key + 64);
        assert_int_equal(x.n, y.n);
        assert_memory_equal(x.path, y.path, x.n * sizeof *x.path);
        assert_memory_equal(x.path, z.path, x.n * sizeof *x.path);
    }
    /* 64 flows over the 4 spines of the 1:1 fabric reach at least 3. */
    assert_true(spines >= 3);
    pp_router_free(r);
    pp_cluster_free(c);
}

static void test_seed(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = load("hyperconnect-superpod", NULL);
    pp_router *a, *b, *other;
    assert_int_equal(pp_router_new(c, 7, &a, &e), 0);
    assert_int_equal(pp_router_new(c, 7, &b, &e), 0);
    assert_int_equal(pp_router_new(c, 8, &other, &e), 0);
    int differ = 0;
    for (uint64_t key = 0; key < 32; key++) {
        /* Asked in a different order: the cache must not matter. */
        route x = get(a, c, "n3.gpu2", "n9.gpu6", key);
        route y = get(b, c, "n3.gpu2", "n9.gpu6", 31 - key);
        y = get(b, c, "n3.gpu2", "n9.gpu6", key);
        route z = get(other, c, "n3.gpu2", "n9.gpu6", key);
        assert_int_equal(x.n, y.n);
        assert_memory_equal(x.path, y.path, x.n * sizeof *x.path);
        differ += memcmp(x.path, z.path, x.n * sizeof *x.path) != 0;
    }
    assert_true(differ > 0);
    pp_router_free(a);
    pp_router_free(b);
    pp_router_free(other);
    pp_cluster_free(c);
}

static void test_other_servers(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    char k[256];
    /* PCIe only: GPU 0 and GPU 7 sit under different sockets. */
    pp_cluster *c = load("pcie-only", NULL);
    pp_router *r;
    assert_int_equal(pp_router_new(c, 0, &r, &e), 0);
    route x = get(r, c, "n0.gpu0", "n0.gpu7", 0);
    kinds(c, &x, k, sizeof k);
    assert_string_equal(k, "gpu pcie-switch cpu cpu pcie-switch gpu");
    check_consistent(c, &x, dev(c, "n0.gpu0"), dev(c, "n0.gpu7"));
    pp_router_free(r);
    pp_cluster_free(c);

    /* DGX-1's hybrid cube-mesh: GPU 0 and 5 are two NVLink hops apart. */
    c = load("ethernet-10g", NULL);
    assert_int_equal(pp_router_new(c, 0, &r, &e), 0);
    x = get(r, c, "n0.gpu0", "n0.gpu5", 0);
    kinds(c, &x, k, sizeof k);
    assert_string_equal(k, "gpu gpu gpu");
    x = get(r, c, "n0.gpu0", "n0.gpu1", 0);
    assert_int_equal(x.n, 1);
    pp_router_free(r);
    pp_cluster_free(c);
}

/* Every GPU to the same GPU of the next server on the 16k fat-tree, and
 * to one across the machine: every path joins up. */
static void test_fat_tree_ring(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = load("fat-tree-16k", NULL);
    const pp_cluster_info *in = pp_cluster_info_get(c);
    pp_router *r;
    assert_int_equal(pp_router_new(c, 0, &r, &e), 0);
    int32_t N = in->nodes, G = in->gpus_per_node;
    size_t cores = 0, nd;
    const pp_device *d = pp_cluster_devices(c, &nd);
    size_t nl;
    const pp_link *l = pp_cluster_links(c, &nl);
    for (int32_t n = 0; n < N; n++)
        for (int32_t g = 0; g < G; g++) {
            int32_t a = pp_cluster_gpu(c, n, g);
            int32_t b = pp_cluster_gpu(c, (n + 1) % N, g);
            int32_t far = pp_cluster_gpu(c, (n + N / 2) % N, (g + 1) % G);
            route x, y;
            assert_int_equal(
                pp_route(r, a, b, 0, &x.path, &x.n, &x.lat, &x.bw, &e), 0);
            check_consistent(c, &x, a, b);
            assert_int_equal(pp_route(r, a, far, (uint64_t)n, &y.path, &y.n,
                                      &y.lat, &y.bw, &e),
                             0);
            check_consistent(c, &y, a, far);
            for (size_t h = 0; h < y.n; h++)
                cores += d[l[y.path[h]].dst].kind == PP_DEV_CORE;
        }
    assert_true(cores > 0); /* across pods: through the core */
    pp_router_free(r);
    pp_cluster_free(c);
}

/* ---- the simulation ----------------------------------------------------- */

typedef struct done_log {
    int count;
    double t;
    bool in_send;
} done_log;

static void on_done(pp_sim *s, void *ctx, uint64_t arg) {
    (void)arg;
    done_log *d = ctx;
    assert_false(d->in_send);
    d->count++;
    d->t = pp_sim_now(s);
}

/* One transfer alone; returns its finish time and copies link bytes. */
static double one(const pp_cluster *c, pp_fidelity f, const char *a,
                  const char *b, double bytes, double *link_bytes) {
    pp_error e = PP_ERROR_INIT;
    pp_sim *s;
    done_log d = {0, -1, false};
    assert_int_equal(pp_sim_new(c, f, 0, &s, &e), 0);
    assert_int_equal(f == PP_FIDELITY_FLOW, pp_sim_net(s) != NULL);
    /* Not at time zero: the sum must be done in the same order. */
    pp_engine_run(pp_sim_engine(s), 0);
    d.in_send = true;
    assert_int_equal(
        pp_sim_send(s, dev(c, a), dev(c, b), bytes, on_done, &d, 0, &e), 0);
    d.in_send = false;
    pp_engine_run(pp_sim_engine(s), INFINITY);
    assert_int_equal(d.count, 1);
    size_t n;
    const double *lb = pp_sim_link_bytes(s, &n);
    if (link_bytes) memcpy(link_bytes, lb, n * sizeof *lb);
    pp_sim_free(s);
    return d.t;
}

static void test_fidelities_agree(void **state) {
    (void)state;
    static const struct {
        const char *cluster, *set, *a, *b;
    } cases[] = {
        {"hyperconnect-superpod", NULL, "n0.gpu0", "n0.gpu5"},
        {"hyperconnect-superpod", NULL, "n0.gpu3", "n7.gpu3"},
        {"hyperconnect-superpod", NULL, "n0.gpu0", "n1.gpu3"},
        {"hyperconnect-superpod", "node.nvswitches=6", "n0.gpu0", "n0.gpu5"},
        {"pcie-only", NULL, "n0.gpu0", "n0.gpu7"},
        {"ethernet-10g", NULL, "n0.gpu0", "n2.gpu5"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pp_cluster *c = load(cases[i].cluster, cases[i].set);
        size_t nl;
        pp_cluster_links(c, &nl);
        double *fb = calloc(nl, sizeof *fb), *ab = calloc(nl, sizeof *ab);
        double bytes = 1.5e9;
        double tf = one(c, PP_FIDELITY_FLOW, cases[i].a, cases[i].b, bytes, fb);
        double ta =
            one(c, PP_FIDELITY_ANALYTIC, cases[i].a, cases[i].b, bytes, ab);
        assert_rel(tf, ta, 1e-9);
        /* And both are latency + bytes / bottleneck. */
        pp_error e = PP_ERROR_INIT;
        pp_router *r;
        assert_int_equal(pp_router_new(c, 0, &r, &e), 0);
        route x = get(r, c, cases[i].a, cases[i].b, 0);
        double bw = x.bw;
        if (cases[i].set) bw *= 6; /* split over the six NVSwitch chips */
        assert_rel(ta, x.lat + bytes / bw, 1e-12);
        for (size_t k = 0; k < nl; k++)
            if (fabs(fb[k] - ab[k]) > 1e-6 * bytes)
                fail_msg("%s: link %zu carried %g (flow) and %g (analytic)",
                         cases[i].cluster, k, fb[k], ab[k]);
        pp_router_free(r);
        free(fb);
        free(ab);
        pp_cluster_free(c);
    }
}

/* Six NVSwitch chips: a transfer is six sub-flows, one per chip, each
 * with a sixth of the bytes. */
static void test_nvswitch_split(void **state) {
    (void)state;
    pp_cluster *c = load("hyperconnect-superpod", "node.nvswitches=6");
    size_t nl, nd;
    const pp_link *l = pp_cluster_links(c, &nl);
    const pp_device *d = pp_cluster_devices(c, &nd);
    double *lb = calloc(nl, sizeof *lb);
    one(c, PP_FIDELITY_FLOW, "n0.gpu2", "n0.gpu6", 6e9, lb);
    int chips = 0;
    for (size_t k = 0; k < nl; k++)
        if (l[k].src == dev(c, "n0.gpu2") &&
            d[l[k].dst].kind == PP_DEV_NVSWITCH) {
            assert_rel(lb[k], 1e9, 1e-9);
            chips++;
        }
    assert_int_equal(chips, 6);
    free(lb);
    pp_cluster_free(c);
}

/* Two flows through one HCA get half of it each. */
static void test_share_hca(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = load("hyperconnect-superpod", NULL);
    pp_sim *s;
    done_log a = {0, -1, false}, b = {0, -1, false};
    assert_int_equal(pp_sim_new(c, PP_FIDELITY_FLOW, 0, &s, &e), 0);
    assert_int_equal(pp_sim_send(s, dev(c, "n0.gpu0"), dev(c, "n1.gpu0"), 1e9,
                                 on_done, &a, 0, &e),
                     0);
    assert_int_equal(pp_sim_send(s, dev(c, "n0.gpu0"), dev(c, "n2.gpu0"), 1e9,
                                 on_done, &b, 0, &e),
                     0);
    pp_engine_run(pp_sim_engine(s), INFINITY);
    double lat = 4 * 500e-9 + 730e-9 + 600e-9;
    assert_rel(a.t, lat + 1e9 / 12.5e9, 1e-9);
    assert_rel(b.t, lat + 1e9 / 12.5e9, 1e-9);
    pp_sim_free(s);

    /* Analytic ignores the contention. */
    assert_int_equal(pp_sim_new(c, PP_FIDELITY_ANALYTIC, 0, &s, &e), 0);
    a.count = b.count = 0;
    pp_sim_send(s, dev(c, "n0.gpu0"), dev(c, "n1.gpu0"), 1e9, on_done, &a, 0,
                &e);
    pp_sim_send(s, dev(c, "n0.gpu0"), dev(c, "n2.gpu0"), 1e9, on_done, &b, 0,
                &e);
    pp_engine_run(pp_sim_engine(s), INFINITY);
    assert_rel(a.t, lat + 1e9 / 25e9, 1e-12);
    assert_rel(b.t, lat + 1e9 / 25e9, 1e-12);
    pp_sim_free(s);
    pp_cluster_free(c);
}

static void test_self_and_errors(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = load("hyperconnect-superpod", NULL);
    for (int f = 0; f < 2; f++) {
        pp_sim *s;
        done_log d = {0, -1, true};
        assert_int_equal(pp_sim_new(c, (pp_fidelity)f, 0, &s, &e), 0);
        /* To itself: done runs from the engine, at once. */
        assert_int_equal(pp_sim_send(s, dev(c, "n4.gpu4"), dev(c, "n4.gpu4"),
                                     1e9, on_done, &d, 0, &e),
                         0);
        assert_int_equal(d.count, 0);
        d.in_send = false;
        pp_engine_run(pp_sim_engine(s), INFINITY);
        assert_int_equal(d.count, 1);
        assert_true(d.t == 0);
        /* Zero bytes: the latency alone. */
        route x;
        pp_router *r;
        assert_int_equal(pp_router_new(c, 0, &r, &e), 0);
        x = get(r, c, "n4.gpu4", "n5.gpu4", 0);
        assert_int_equal(pp_sim_send(s, dev(c, "n4.gpu4"), dev(c, "n5.gpu4"), 0,
                                     on_done, &d, 0, &e),
                         0);
        pp_engine_run(pp_sim_engine(s), INFINITY);
        assert_int_equal(d.count, 2);
        assert_rel(d.t, x.lat, 1e-12);
        pp_router_free(r);
        /* Bad arguments leave nothing behind. */
        assert_int_equal(pp_sim_send(s, -1, 3, 1, on_done, &d, 0, &e),
                         PP_EINVAL);
        pp_error_clear(&e);
        assert_int_equal(pp_sim_send(s, 0, 3, -1, on_done, &d, 0, &e),
                         PP_EINVAL);
        pp_error_clear(&e);
        assert_int_equal(pp_engine_pending(pp_sim_engine(s)), 0);
        pp_sim_free(s);
    }
    pp_cluster_free(c);
}

/* ---- the trace ---------------------------------------------------------- */

/* sim/net/internal/sim_run.h (internal to sim/): the hook collectives and
 * the training step add spans with. */
void pp__sim_trace_span(pp_sim *s, int32_t gpu_dev, const char *name, double t0,
                        double t1);

static char *traced_run(const pp_cluster *c) {
    pp_error e = PP_ERROR_INIT;
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    pp_sim *s;
    done_log d = {0, -1, false};
    assert_int_equal(pp_sim_new(c, PP_FIDELITY_FLOW, 0, &s, &e), 0);
    assert_int_equal(pp_sim_trace(s, fp, &e), 0);
    const char *pairs[][2] = {{"n0.gpu0", "n1.gpu0"},
                              {"n0.gpu0", "n2.gpu0"},
                              {"n0.gpu1", "n0.gpu2"},
                              {"n3.gpu3", "n4.gpu5"}};
    for (size_t i = 0; i < 4; i++)
        pp_sim_send(s, dev(c, pairs[i][0]), dev(c, pairs[i][1]), 1e8 * (i + 1),
                    on_done, &d, 0, &e);
    pp_engine_run(pp_sim_engine(s), INFINITY);
    assert_int_equal(d.count, 4);
    /* What the training step adds on a GPU's own track. */
    pp__sim_trace_span(s, dev(c, "n0.gpu0"), "forward \"mb 0\"", 0, 0.001);
    pp_sim_free(s);
    fclose(fp);
    return buf;
}

static void test_trace(void **state) {
    (void)state;
    pp_cluster *c = load("hyperconnect-superpod", NULL);
    char *a = traced_run(c), *b = traced_run(c);
    assert_string_equal(a, b); /* deterministic to the byte */
    json_error_t err;
    json_t *j = json_loads(a, 0, &err);
    if (!j) fail_msg("trace is not JSON: %s at line %d", err.text, err.line);
    json_t *ev = json_object_get(j, "traceEvents");
    assert_true(json_is_array(ev));
    int sends = 0, busy = 0, spans = 0, names = 0;
    size_t i;
    json_t *x;
    json_array_foreach(ev, i, x) {
        const char *ph = json_string_value(json_object_get(x, "ph"));
        const char *name = json_string_value(json_object_get(x, "name"));
        assert_non_null(ph);
        assert_non_null(name);
        if (strcmp(ph, "M") == 0) {
            names += strcmp(name, "thread_name") == 0;
            continue;
        }
        assert_string_equal(ph, "X");
        assert_true(json_is_number(json_object_get(x, "ts")));
        assert_true(json_is_number(json_object_get(x, "dur")));
        int pid = (int)json_integer_value(json_object_get(x, "pid"));
        if (pid == 2)
            busy++;
        else if (strncmp(name, "send ", 5) == 0)
            sends++;
        else
            spans++;
    }
    assert_int_equal(sends, 4);
    assert_int_equal(spans, 1);
    assert_true(busy >= 8);
    assert_true(names >= 6);
    /* Times are microseconds with three decimals. */
    assert_non_null(strstr(a, "\"ts\":0.000,\"dur\":1000.000"));
    json_decref(j);
    free(a);
    free(b);
    pp_cluster_free(c);
}

/* ---- podplan flows ------------------------------------------------------ */

static char dir[64];

static const char *write_file(const char *name, const char *text) {
    static char path[8][128];
    static int next;
    char *p = path[next++ & 7];
    snprintf(p, 128, "%s/%s", dir, name);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    return p;
}

static double flow_num(json_t *j, size_t i, const char *key) {
    json_t *f = json_array_get(json_object_get(j, "flows"), i);
    json_t *v = json_object_get(f, key);
    if (!json_is_number(v)) fail_msg("flows[%zu].%s missing", i, key);
    return json_number_value(v);
}

/* Hand-computed on hyperconnect-superpod: HDR 25 GB/s per HCA, NVLink
 * 300 GB/s, a same-rail path's latency 3.33 us (4 x 500 ns of PCIe,
 * 730 ns HCA -> leaf with the switch, 600 ns leaf -> HCA), an NVSwitch
 * path's 600 ns. */
#define LAT_RAIL 3.33e-6
#define LAT_NVS 0.6e-6

static void test_flows_yaml(void **state) {
    (void)state;
    const char *in = write_file(
        "flows.yaml",
        "# two flows share n0.hca0; one later, alone; one on NVLink\n"
        "flows:\n"
        "  - {src: n0.gpu0, dst: n1.gpu0, bytes: 1GB, start: 0s}\n"
        "  - {src: n0.gpu0, dst: n2.gpu0, bytes: 1GB}\n"
        "  - {src: n3.gpu1, dst: n4.gpu1, bytes: 500MB, start: 1s}\n"
        "  - {src: n0.gpu2, dst: n0.gpu3, bytes: 3GB, start: 1s}\n");
    cli_result r;
    cli_runf(&r,
             "flows --cluster hyperconnect-superpod --input %s --format json",
             in);
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    json_t *j = cli_json(&r);
    assert_rel(flow_num(j, 0, "finish_s"), LAT_RAIL + 1e9 / 12.5e9, 1e-9);
    assert_rel(flow_num(j, 1, "finish_s"), LAT_RAIL + 1e9 / 12.5e9, 1e-9);
    assert_rel(flow_num(j, 2, "finish_s"), 1 + LAT_RAIL + 5e8 / 25e9, 1e-9);
    assert_rel(flow_num(j, 3, "finish_s"), 1 + LAT_NVS + 3e9 / 300e9, 1e-9);
    assert_rel(flow_num(j, 2, "start_s"), 1, 1e-12);
    assert_rel(flow_num(j, 2, "mean_rate_Bps"), 5e8 / (LAT_RAIL + 0.02), 1e-9);
    assert_rel(json_number_value(json_object_get(j, "makespan_s")),
               1 + LAT_RAIL + 0.02, 1e-9);
    json_decref(j);
    cli_result_free(&r);

    /* Analytic: no sharing. */
    cli_runf(&r,
             "flows --cluster hyperconnect-superpod --input %s --format "
             "json --fidelity analytic",
             in);
    assert_int_equal(r.status, 0);
    j = cli_json(&r);
    assert_rel(flow_num(j, 1, "finish_s"), LAT_RAIL + 1e9 / 25e9, 1e-9);
    json_decref(j);
    cli_result_free(&r);

    /* The table and a trace; the same run twice is byte-identical. */
    char t1[128], t2[128];
    snprintf(t1, sizeof t1, "%s/t1.json", dir);
    snprintf(t2, sizeof t2, "%s/t2.json", dir);
    cli_result r2;
    cli_runf(&r, "flows --cluster hyperconnect-superpod --input %s --trace %s",
             in, t1);
    cli_runf(&r2, "flows --cluster hyperconnect-superpod --input %s --trace %s",
             in, t2);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, r2.out);
    assert_non_null(strstr(r.out, "makespan"));
    assert_non_null(strstr(r.out, "n0.gpu3"));
    FILE *a = fopen(t1, "r"), *b = fopen(t2, "r");
    assert_non_null(a);
    assert_non_null(b);
    int ca, cb;
    do {
        ca = fgetc(a);
        cb = fgetc(b);
        assert_int_equal(ca, cb);
    } while (ca != EOF);
    fclose(a);
    fclose(b);
    cli_result_free(&r);
    cli_result_free(&r2);
}

static void test_flows_csv(void **state) {
    (void)state;
    const char *in = write_file("flows.csv", "# measured traffic\n"
                                             "src,dst,bytes,start\n"
                                             "n0.gpu0, n1.gpu0, 1GB, 0s\n"
                                             "n0.gpu0, n2.gpu0, 1000000000, 0\n"
                                             "n5.gpu7, n6.gpu7, 250MB, 10ms\n");
    cli_result r;
    cli_runf(&r,
             "flows --cluster hyperconnect-superpod --input %s --format json",
             in);
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    json_t *j = cli_json(&r);
    assert_rel(flow_num(j, 0, "finish_s"), LAT_RAIL + 0.08, 1e-9);
    assert_rel(flow_num(j, 1, "finish_s"), LAT_RAIL + 0.08, 1e-9);
    assert_rel(flow_num(j, 2, "finish_s"), 0.01 + LAT_RAIL + 0.01, 1e-9);
    assert_rel(flow_num(j, 1, "bytes"), 1e9, 1e-12);
    json_decref(j);
    cli_result_free(&r);
}

static void expect_bad(const char *name, const char *text, const char *want) {
    const char *in = write_file(name, text);
    cli_result r;
    cli_runf(&r, "flows --cluster hyperconnect-superpod --input %s", in);
    if (r.status != 2)
        fail_msg("%s: exit %d, want 2: %s", name, r.status, r.err);
    char full[512];
    snprintf(full, sizeof full, "%s:%s", in, want);
    if (!strstr(r.err, full))
        fail_msg("%s: got \"%s\", want \"%s\"", name, r.err, full);
    cli_result_free(&r);
}

static void test_flows_bad(void **state) {
    (void)state;
    expect_bad("b1.yaml",
               "flows:\n  - {src: n1.gpo0, dst: n1.gpu0, bytes: 1GB}\n",
               "2:11: flows[0].src: unknown device \"n1.gpo0\" (did you mean "
               "\"n1.gpu0\"?)");
    expect_bad("b2.yaml",
               "flows:\n  - src: n0.gpu0\n    dst: n1.gpu0\n    bytes: 1Gb\n",
               "4:12: flows[0].bytes: expected a byte size");
    expect_bad("b3.yaml", "flows:\n  - {dst: n1.gpu0, bytes: 1GB}\n",
               "2:5: flows[0].src: missing");
    expect_bad(
        "b4.yaml",
        "flows:\n  - {src: n0.gpu0, dst: n1.gpu0, bytes: 1GB, strat: 1s}\n",
        "2:46: flows[0].strat: unknown key (did you mean \"start\"?)");
    expect_bad("b5.csv",
               "src,dst,bytes,start\nn0.gpu0,n1.gpu0,1GB,0s\n"
               "n0.gpu0,n1.gpu0,1Gb,0s\n",
               "3:17: bytes: expected a byte size");
    expect_bad(
        "b6.csv", "src,dst,bytes,start\nn0.gpu0,spine9,1GB,0\n",
        "2:9: dst: unknown device \"spine9\" (did you mean \"spine0\"?); "
        "spine devices are spine0 .. spine3");
    expect_bad("b7.csv", "src,dest,bytes\n",
               "1:5: header: unknown column \"dest\" (did you mean \"dst\"?)");
    expect_bad("b8.csv", "src,dst,bytes,start\nn0.gpu0,n1.gpu0,1GB\n",
               "2:20: expected 4 fields as in the header, got 3");
}

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/podplan-route-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intra_nvswitch),
        cmocka_unit_test(test_cross_node),
        cmocka_unit_test(test_ecmp),
        cmocka_unit_test(test_seed),
        cmocka_unit_test(test_other_servers),
        cmocka_unit_test(test_fat_tree_ring),
        cmocka_unit_test(test_fidelities_agree),
        cmocka_unit_test(test_nvswitch_split),
        cmocka_unit_test(test_share_hca),
        cmocka_unit_test(test_self_and_errors),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_flows_yaml),
        cmocka_unit_test(test_flows_csv),
        cmocka_unit_test(test_flows_bad),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
