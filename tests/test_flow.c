/*
 * test_flow.c: the flow network with max-min sharing (sim/net/flow.c,
 * flow_solve.c), built with its invariant checker on (PODPLAN_FLOW_CHECK:
 * sim/net/flow_check.c runs after every update and aborts on a broken
 * invariant).
 *
 * Hand-worked cases, then a dynamic run in which, after every update, the
 * incremental network's rates are compared with a fresh full solve and the
 * bytes each flow carried are integrated from those rates; and the checker
 * itself must catch a corrupted network.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "flow_util.h"
#include "flow_int.h" /* the checker, and a network to corrupt */

/* ======================================================================
 * The flow network, dynamic
 * ==================================================================== */

typedef struct finrec {
    double t[256];
    int n_done;
    int order[256];
} finrec;

static pp_engine *g_eng; /* for the simple callbacks below */

static void note_done(pp_flownet *net, pp_flow_id id, void *ctx, uint64_t arg) {
    (void)net;
    (void)arg;
    finrec *fr = ctx;
    fr->t[id] = pp_engine_now(g_eng);
    fr->order[fr->n_done++] = id;
}

static void test_flow_two_share(void **state) {
    (void)state;
    g_eng = pp_engine_new();
    double cap[] = {10.0};
    int32_t p[] = {0};
    pp_flownet *net = pp_flownet_new(g_eng, cap, 1);
    finrec fr = {0};
    pp_flow_start(net, p, 1, 10.0, 0.0, note_done, &fr, 0);
    pp_flow_start(net, p, 1, 20.0, 0.0, note_done, &fr, 0);
    pp_engine_run(g_eng, 0.0);
    assert_true(pp_flow_rate(net, 0) == 5.0);
    assert_true(pp_flow_rate(net, 1) == 5.0);
    pp_engine_run(g_eng, INFINITY);
    assert_true(fr.t[0] == 2.0);
    assert_true(fr.t[1] == 3.0);
    assert_true(pp_flow_rate(net, 0) == -1.0);
    assert_close(pp_flownet_link_bytes(net)[0], 30.0, 1e-15);
    pp_flownet_stats st;
    pp_flownet_stats_get(net, &st);
    assert_int_equal(st.flows_started, 2);
    assert_int_equal(st.flows_done, 2);
    assert_int_equal(st.updates, 3); /* start, first end, second end */
    assert_int_equal(st.max_active, 2);
    pp_flownet_free(net);
    pp_engine_free(g_eng);
}

static void test_flow_latency_first(void **state) {
    (void)state;
    g_eng = pp_engine_new();
    double cap[] = {50e9, 25e9, 100e9, 10.0};
    pp_flownet *net = pp_flownet_new(g_eng, cap, 4);
    finrec fr = {0};
    int32_t p1[] = {3};
    int32_t p3[] = {0, 1, 2};
    pp_flow_start(net, p1, 1, 10.0, 1.0, note_done, &fr, 0);
    pp_engine_run(g_eng, 0.5);
    assert_true(pp_flow_rate(net, 0) == 0.0); /* still in its latency */
    pp_engine_run(g_eng, 1.5);
    assert_true(pp_flow_rate(net, 0) == 10.0);
    pp_engine_run(g_eng, INFINITY);
    assert_true(fr.t[0] == 2.0);

    /* Uncontended: exactly L + S/B, the analytic formula, to the bit. */
    double t0 = pp_engine_now(g_eng);
    double L = 1.7e-6, S = 123456789.0;
    pp_flow_id id = pp_flow_start(net, p3, 3, S, L, note_done, &fr, 0);
    pp_engine_run(g_eng, INFINITY);
    assert_true(fr.t[id] == (t0 + L) + S / 25e9);
    pp_flownet_free(net);
    pp_engine_free(g_eng);
}

static void test_flow_zero_and_invalid(void **state) {
    (void)state;
    g_eng = pp_engine_new();
    double cap[] = {10.0};
    pp_flownet *net = pp_flownet_new(g_eng, cap, 1);
    finrec fr = {0};
    int32_t p[] = {0};
    int32_t bad[] = {1};
    assert_int_equal(pp_flow_start(net, bad, 1, 1.0, 0.0, NULL, NULL, 0),
                     PP_EINVAL);
    assert_int_equal(pp_flow_start(net, p, 1, -1.0, 0.0, NULL, NULL, 0),
                     PP_EINVAL);
    assert_int_equal(pp_flow_start(net, p, 1, NAN, 0.0, NULL, NULL, 0),
                     PP_EINVAL);
    assert_int_equal(pp_flow_start(net, p, 1, 1.0, -1.0, NULL, NULL, 0),
                     PP_EINVAL);
    pp_flow_id a = pp_flow_start(net, p, 1, 0.0, 0.25, note_done, &fr, 0);
    pp_flow_id b = pp_flow_start(net, NULL, 0, 5.0, 0.5, note_done, &fr, 0);
    pp_flow_id c = pp_flow_start(net, p, 1, 0.0, 0.0, note_done, &fr, 0);
    assert_int_equal(fr.n_done, 0); /* never inside pp_flow_start */
    assert_true(pp_flow_rate(net, 999) == -1.0);
    assert_true(pp_flow_rate(net, -3) == -1.0);
    pp_engine_run(g_eng, INFINITY);
    assert_int_equal(fr.n_done, 3);
    assert_true(fr.t[a] == 0.25);
    assert_true(fr.t[b] == 0.5);
    assert_true(fr.t[c] == 0.0);
    pp_flownet_stats st;
    pp_flownet_stats_get(net, &st);
    assert_int_equal(st.updates, 0); /* none of them entered the network */
    assert_true(pp_flownet_link_bytes(net)[0] == 0.0);
    pp_flownet_free(net);
    pp_engine_free(g_eng);
}

/* One armed engine event for any number of flows. */
static void test_flow_one_event_armed(void **state) {
    (void)state;
    enum { N = 1000 };
    g_eng = pp_engine_new();
    double *cap = malloc(N * sizeof *cap);
    for (int i = 0; i < N; i++) cap[i] = 1e9;
    pp_flownet *net = pp_flownet_new(g_eng, cap, N);
    for (int32_t i = 0; i < N; i++)
        pp_flow_start(net, &i, 1, 1e6 * (1 + i % 7), 0.0, NULL, NULL, 0);
    pp_engine_run(g_eng, 0.0);
    assert_int_equal(pp_engine_pending(g_eng), 1);
    pp_engine_run(g_eng, INFINITY);
    /* the seven sizes end at seven instants: 1 + 7 updates, all exact */
    pp_flownet_stats st;
    pp_flownet_stats_get(net, &st);
    assert_int_equal(st.updates, 8);
    assert_true(pp_engine_now(g_eng) == 7e6 / 1e9);
    pp_flownet_free(net);
    free(cap);
    pp_engine_free(g_eng);
}

/* Ends that differ only by rounding are one update, not two: 0.1 + 0.2
 * bytes and 0.3 bytes at 1 B/s end 1 ulp apart. */
static void test_flow_rounding_batch(void **state) {
    (void)state;
    g_eng = pp_engine_new();
    double cap[] = {1.0, 1.0};
    pp_flownet *net = pp_flownet_new(g_eng, cap, 2);
    finrec fr = {0};
    int32_t p0[] = {0}, p1[] = {1};
    volatile double a = 0.1, b = 0.2;
    assert_true(a + b != 0.3);
    pp_flow_start(net, p0, 1, a + b, 0.0, note_done, &fr, 0);
    pp_flow_start(net, p1, 1, 0.3, 0.0, note_done, &fr, 0);
    pp_engine_run(g_eng, INFINITY);
    pp_flownet_stats st;
    pp_flownet_stats_get(net, &st);
    assert_int_equal(fr.n_done, 2);
    assert_true(fr.t[0] == fr.t[1]);
    assert_int_equal(st.updates, 2); /* the start, and both ends */
    pp_flownet_free(net);
    pp_engine_free(g_eng);
}

/* Disjoint groups: a change in one touches only that group, and there only
 * the flows whose rates it can move. */
static void test_flow_selective(void **state) {
    (void)state;
    enum { G = 50, K = 6 };
    g_eng = pp_engine_new();
    double cap[G * 2];
    for (int i = 0; i < G * 2; i++) cap[i] = 100.0;
    pp_flownet *net = pp_flownet_new(g_eng, cap, G * 2);
    for (int g = 0; g < G; g++)
        for (int k = 0; k < K; k++) {
            int32_t p[2] = {2 * g, 2 * g + 1};
            pp_flow_start(net, p, k % 2 ? 2 : 1, 1e3, 0.0, NULL, NULL, 0);
        }
    pp_engine_run(g_eng, 0.0);
    pp_flownet_stats a, b;
    pp_flownet_stats_get(net, &a);
    assert_int_equal(a.updates, 1);
    assert_int_equal(a.flows_touched, G * K);
    assert_int_equal(a.full_solves, 1);
    /* A new flow on group 7's second link at t = 1.  That link carries 3
     * of the group's flows at 100/6 each, limited by the first link; the
     * newcomer would fill the second link only at 50, so the others keep
     * their rates and only it is solved (for the 50 they leave). */
    int32_t p7[] = {15};
    pp_flow_id id = pp_flow_start(net, p7, 1, 1.0, 1.0, NULL, NULL, 0);
    pp_engine_run(g_eng, 1.0);
    pp_flownet_stats_get(net, &b);
    assert_int_equal(b.updates, a.updates + 1);
    assert_int_equal(b.flows_touched, a.flows_touched + 1);
    assert_int_equal(b.full_solves, a.full_solves);
    assert_int_equal(b.active_sum, a.active_sum + G * K + 1);
    assert_close(pp_flow_rate(net, id), 50.0, 1e-12);
    /* Its end frees 50 on a link whose other flows are limited below
     * that: nothing to solve. */
    pp_engine_run(g_eng, 1.5);
    pp_flownet_stats_get(net, &a);
    assert_int_equal(a.updates, b.updates + 1);
    assert_int_equal(a.flows_touched, b.flows_touched);
    /* A flow on the first link at t = 2 lowers group 7's level: its 6
     * flows and the newcomer are solved again, and nothing else. */
    int32_t p7b[] = {14};
    id = pp_flow_start(net, p7b, 1, 1.0, 0.5, NULL, NULL, 0);
    pp_engine_run(g_eng, 2.0);
    pp_flownet_stats_get(net, &b);
    assert_int_equal(b.flows_touched, a.flows_touched + K + 1);
    assert_close(pp_flow_rate(net, id), 100.0 / (K + 1), 1e-12);
    pp_flownet_free(net);
    pp_engine_free(g_eng);
}

/* ---- the dynamic property test ----------------------------------------
 * Flows with random sizes join at random times.  After every update the
 * rates are compared with a full solve of the flows active then, and each
 * flow's bytes are integrated from the rates seen; at its end they must
 * add up to its size. */
typedef struct dyn {
    pp_engine *eng;
    pp_flownet *net;
    const inst *in;
    double bytes[MAXF], join[MAXF], fin[MAXF];
    double acc[MAXF], r[MAXF];
    bool done[MAXF];
    double t_prev;
    int checks;
} dyn;

static void dyn_check(pp_engine *eng, void *ctx, uint64_t arg) {
    (void)arg;
    dyn *d = ctx;
    double now = pp_engine_now(eng);
    const inst *in = d->in;
    for (size_t f = 0; f < in->nf; f++)
        d->acc[f] += d->r[f] * (now - d->t_prev);
    d->t_prev = now;
    /* the active set in CSR */
    int32_t off[MAXF + 1] = {0}, links[MAXF * 6], map[MAXF];
    size_t na = 0;
    for (size_t f = 0; f < in->nf; f++) {
        if (d->done[f] || d->join[f] > now) continue;
        map[na] = (int32_t)f;
        int32_t n = in->off[f + 1] - in->off[f];
        memcpy(links + off[na], in->links + in->off[f],
               (size_t)n * sizeof *links);
        off[na + 1] = off[na] + n;
        na++;
    }
    double want[MAXF];
    solve(in->nl, in->cap, na, off, links, want);
    memset(d->r, 0, sizeof d->r);
    for (size_t i = 0; i < na; i++) {
        double got = pp_flow_rate(d->net, map[i]);
        assert_close(got, want[i], REL);
        d->r[map[i]] = got;
    }
    d->checks++;
}

static void dyn_check_later(pp_engine *eng, void *ctx, uint64_t arg) {
    pp_engine_after(eng, 0.0, dyn_check, ctx, arg); /* after the update */
}

static void dyn_done(pp_flownet *net, pp_flow_id id, void *ctx, uint64_t arg) {
    (void)net;
    (void)arg;
    dyn *d = ctx;
    double now = pp_engine_now(d->eng);
    double carried = d->acc[id] + d->r[id] * (now - d->t_prev);
    assert_close(carried, d->bytes[id], 4 * REL);
    d->done[id] = true;
    d->fin[id] = now;
    pp_engine_after(d->eng, 0.0, dyn_check, d, 0);
}

/* Runs instance `in` (sizes and join times drawn from `seed`); fills
 * bytes[], fin[] and link_bytes[]. */
static void dyn_run(const inst *in, uint64_t seed, double *bytes, double *fin,
                    double *link_bytes, pp_flownet_stats *st) {
    dyn *d = calloc(1, sizeof *d);
    d->in = in;
    d->eng = pp_engine_new();
    d->net = pp_flownet_new(d->eng, in->cap, in->nl);
    rng_state = seed;
    for (size_t f = 0; f < in->nf; f++) {
        /* few distinct join times and sizes, so ties happen */
        d->join[f] = rnd() % 3 == 0 ? 0.0 : 0.25 * rnd_int(0, 8);
        d->bytes[f] = rnd() % 2 ? 10.0 * rnd_int(1, 4) : 40 * rnd_unit();
    }
    for (size_t f = 0; f < in->nf; f++) {
        pp_flow_id id = pp_flow_start(d->net, in->links + in->off[f],
                                      (size_t)(in->off[f + 1] - in->off[f]),
                                      d->bytes[f], d->join[f], dyn_done, d, 0);
        assert_int_equal(id, (int)f); /* ids in start order */
    }
    for (size_t f = 0; f < in->nf; f++)
        pp_engine_at(d->eng, d->join[f], dyn_check_later, d, 0);
    pp_engine_run(d->eng, INFINITY);
    for (size_t f = 0; f < in->nf; f++) assert_true(d->done[f]);
    memcpy(fin, d->fin, in->nf * sizeof *fin);
    memcpy(bytes, d->bytes, in->nf * sizeof *bytes);
    memcpy(link_bytes, pp_flownet_link_bytes(d->net),
           in->nl * sizeof *link_bytes);
    pp_flownet_stats_get(d->net, st);
    pp_flownet_free(d->net);
    pp_engine_free(d->eng);
    free(d);
}

static void dynamic_random(int runs, uint64_t seed, int max_groups,
                           size_t nl_lo, size_t nl_hi, size_t nf_lo,
                           size_t nf_hi) {
    uint64_t touched = 0, active = 0;
    for (int it = 0; it < runs; it++) {
        rng_state = seed + (uint64_t)it;
        inst in;
        random_inst(&in, rnd_int(1, max_groups),
                    (size_t)rnd_int((int)nl_lo, (int)nl_hi),
                    (size_t)rnd_int((int)nf_lo, (int)nf_hi));
        double bytes[MAXF], fin[MAXF], fin2[MAXF], lb[MAXL], lb2[MAXL];
        pp_flownet_stats st, st2;
        dyn_run(&in, seed + 77 + (uint64_t)it, bytes, fin, lb, &st);
        /* link counters: every byte of every flow crossing the link */
        for (size_t l = 0; l < in.nl; l++) {
            double want = 0;
            for (size_t f = 0; f < in.nf; f++)
                for (int32_t j = in.off[f]; j < in.off[f + 1]; j++)
                    if (in.links[j] == (int32_t)l) want += bytes[f];
            assert_close(lb[l], want, 4 * REL);
        }
        /* determinism: the same run again, bit for bit */
        dyn_run(&in, seed + 77 + (uint64_t)it, bytes, fin2, lb2, &st2);
        assert_memory_equal(fin, fin2, in.nf * sizeof *fin);
        assert_memory_equal(lb, lb2, in.nl * sizeof *lb);
        assert_memory_equal(&st, &st2, sizeof st);
        touched += st.flows_touched;
        active += st.active_sum;
    }
    /* several components per instance: selective updates did less work */
    assert_true(touched < active);
}

static void test_flow_dynamic_random(void **state) {
    (void)state;
    dynamic_random(200, 1000, 6, 5, 40, 5, 60);
}

/* Larger components: the bulk rebuild of the completion heap. */
static void test_flow_dynamic_large(void **state) {
    (void)state;
    dynamic_random(20, 5000, 2, 20, MAXL, 100, 200);
}

/* One capacity everywhere (a 1:1 fat tree): rates tie at 1/k of it, so
 * the flows kept below an update's level and those re-solved at it meet
 * exactly at the level. */
static void test_flow_dynamic_uniform(void **state) {
    (void)state;
    g_uniform_cap = 25.0;
    dynamic_random(100, 9000, 4, 5, 40, 10, 80);
    g_uniform_cap = 0;
}

/* Ties inserted in another order: same finish times (to rounding). */
static void test_flow_order_independent(void **state) {
    (void)state;
    double cap[] = {10.0, 4.0, 7.0};
    int32_t paths[4][2] = {{0, 1}, {0, -1}, {1, 2}, {2, -1}};
    size_t lens[] = {2, 1, 2, 1};
    double sizes[] = {12.0, 30.0, 8.0, 21.0};
    double fin[2][4];
    for (int pass = 0; pass < 2; pass++) {
        g_eng = pp_engine_new();
        pp_flownet *net = pp_flownet_new(g_eng, cap, 3);
        finrec fr = {0};
        pp_flow_id ids[4];
        for (int k = 0; k < 4; k++) {
            int i = pass ? 3 - k : k;
            ids[i] = pp_flow_start(net, paths[i], lens[i], sizes[i], 0.0,
                                   note_done, &fr, 0);
        }
        pp_engine_run(g_eng, INFINITY);
        for (int i = 0; i < 4; i++) fin[pass][i] = fr.t[ids[i]];
        pp_flownet_free(net);
        pp_engine_free(g_eng);
    }
    for (int i = 0; i < 4; i++) assert_close(fin[1][i], fin[0][i], 1e-12);
}

/* Freeing a network with events pending leaves the engine usable. */
static void test_flow_free_pending(void **state) {
    (void)state;
    pp_engine *eng = pp_engine_new();
    double cap[] = {1.0};
    int32_t p[] = {0};
    pp_flownet *net = pp_flownet_new(eng, cap, 1);
    pp_flow_start(net, p, 1, 5.0, 0.0, NULL, NULL, 0);
    pp_flow_start(net, p, 1, 5.0, 2.0, NULL, NULL, 0);
    pp_engine_run(eng, 1.0);
    pp_flownet_free(net);
    assert_int_equal(pp_engine_pending(eng), 0);
    assert_int_equal(pp_engine_run(eng, INFINITY), 0);
    pp_flownet_free(NULL);
    pp_engine_free(eng);
}

/* ---- the invariant checker -------------------------------------------- */

/* Two flows sharing link 0, active after the first update; the checker
 * passes, then fails on each kind of corruption with the invariant named,
 * and passes again once the state is restored. */
static void expect_broken(const pp_flownet *net, const char *what) {
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp__flownet_check(net, &e), PP_EINVAL);
    if (!strstr(e.msg, what)) {
        print_error("checker said \"%s\", expected \"%s\"\n", e.msg, what);
        fail();
    }
}

static void test_flow_check_catches_corruption(void **state) {
    (void)state;
    pp_engine *eng = pp_engine_new();
    double cap[] = {10.0, 10.0, 10.0};
    pp_flownet *net = pp_flownet_new(eng, cap, 3);
    int32_t p0[] = {0, 1}, p1[] = {0, 2};
    pp_flow_id a = pp_flow_start(net, p0, 2, 100, 0, NULL, NULL, 0);
    pp_flow_id b = pp_flow_start(net, p1, 2, 100, 0, NULL, NULL, 0);
    pp_engine_run(eng, 0); /* the update: both at 5 B/s */
    assert_close(pp_flow_rate(net, a), 5.0, REL);
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp__flownet_check(net, &e), 0);

    flow *fa = &net->fl[net->slot_of[a]];
    double r = fa->rate;
    fa->rate = 6.0; /* 6 + 5 on a link of 10 */
    expect_broken(net, "over its capacity");
    fa->rate = NAN;
    expect_broken(net, "active with rate");
    fa->rate = r;

    link *l0 = &net->links[0]; /* a rate and its copy in the link's list */
    double key = l0->fl[0].key;
    l0->fl[0].key = key / 2;
    expect_broken(net, "has key");
    l0->fl[0].key = key;

    int32_t *pos = fa->path + fa->n; /* a's slot in link 0's list */
    int32_t p = pos[0];
    pos[0] = 1 - p;
    expect_broken(net, "is stale");
    pos[0] = p;

    int32_t s = net->slot_of[b];
    int32_t h = net->hpos[s];
    net->hpos[s] = 1 - h;
    expect_broken(net, "heap");
    net->hpos[s] = h;

    net->links[2].bpos = -1; /* busy, but out of the busy list */
    expect_broken(net, "busy");
    net->links[2].bpos = net->busy[0] == 2 ? 0 : net->busy[1] == 2 ? 1 : 2;

    assert_int_equal(pp__flownet_check(net, &e), 0);
    pp_engine_run(eng, INFINITY); /* and the run ends normally */
    assert_true(pp_flow_rate(net, a) < 0 && pp_flow_rate(net, b) < 0);
    pp_flownet_free(net);
    pp_engine_free(eng);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flow_two_share),
        cmocka_unit_test(test_flow_latency_first),
        cmocka_unit_test(test_flow_zero_and_invalid),
        cmocka_unit_test(test_flow_one_event_armed),
        cmocka_unit_test(test_flow_rounding_batch),
        cmocka_unit_test(test_flow_selective),
        cmocka_unit_test(test_flow_dynamic_random),
        cmocka_unit_test(test_flow_dynamic_large),
        cmocka_unit_test(test_flow_dynamic_uniform),
        cmocka_unit_test(test_flow_order_independent),
        cmocka_unit_test(test_flow_free_pending),
        cmocka_unit_test(test_flow_check_catches_corruption),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
