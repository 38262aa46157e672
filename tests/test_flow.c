/*
 * test_flow.c: the event engine (sim/net/engine.c) and the flow network with
 * max-min sharing (sim/net/flow.c).
 *
 * The max-min checks do not trust the solver: hand-worked cases, the
 * definition of max-min fairness checked on random instances (every flow has
 * a saturated link on which no flow is faster), a second, naive solver
 * written here, and a dynamic run in which, after every update, the
 * incremental network's rates are compared with a fresh full solve and the
 * bytes each flow carried are integrated from those rates.
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

#include "podplan/sim.h"

#define REL 1e-9

static bool close_rel(double got, double want, double rel) {
    if (got == want)
        return true;
    return fabs(got - want) <= rel * fmax(fabs(want), fabs(got));
}

#define assert_close(got, want, rel)                                       \
    do {                                                                   \
        double g_ = (got), w_ = (want);                                    \
        if (!close_rel(g_, w_, (rel))) {                                   \
            print_error("%s:%d: got %.17g, want %.17g\n", __FILE__,        \
                        __LINE__, g_, w_);                                 \
            fail();                                                        \
        }                                                                  \
    } while (0)

/* A small deterministic PRNG (splitmix64): the same instances everywhere. */
static uint64_t rng_state;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int rnd_int(int lo, int hi) { /* inclusive */
    return lo + (int)(rnd() % (uint64_t)(hi - lo + 1));
}
static double rnd_unit(void) { return (double)(rnd() >> 11) * 0x1p-53; }

/* ======================================================================
 * The event engine
 * ==================================================================== */

typedef struct trace {
    uint64_t got[64];
    double at[64];
    int n;
} trace;

static void rec(pp_engine *eng, void *ctx, uint64_t arg) {
    trace *tr = ctx;
    tr->at[tr->n] = pp_engine_now(eng);
    tr->got[tr->n++] = arg;
}

static void test_engine_order(void **state) {
    (void)state;
    pp_engine *eng = pp_engine_new();
    trace tr = {0};
    pp_engine_at(eng, 3.0, rec, &tr, 30);
    pp_engine_at(eng, 1.0, rec, &tr, 10);
    pp_engine_at(eng, 2.0, rec, &tr, 20);
    pp_engine_at(eng, 1.0, rec, &tr, 11); /* ties: insertion order */
    pp_engine_at(eng, 1.0, rec, &tr, 12);
    pp_engine_after(eng, 0.5, rec, &tr, 5);
    assert_int_equal(pp_engine_pending(eng), 6);
    assert_int_equal(pp_engine_run(eng, INFINITY), 6);
    uint64_t want[] = {5, 10, 11, 12, 20, 30};
    double want_t[] = {0.5, 1, 1, 1, 2, 3};
    assert_int_equal(tr.n, 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(tr.got[i], want[i]);
        assert_true(tr.at[i] == want_t[i]);
    }
    assert_int_equal(pp_engine_events(eng), 6);
    assert_int_equal(pp_engine_pending(eng), 0);
    assert_true(pp_engine_now(eng) == 3.0);
    pp_engine_free(eng);
    pp_engine_free(NULL);
}

static void test_engine_cancel(void **state) {
    (void)state;
    pp_engine *eng = pp_engine_new();
    trace tr = {0};
    pp_timer a = pp_engine_at(eng, 1.0, rec, &tr, 1);
    pp_timer b = pp_engine_at(eng, 2.0, rec, &tr, 2);
    pp_timer c = pp_engine_at(eng, 3.0, rec, &tr, 3);
    assert_true(a != 0 && b != 0 && c != 0);
    assert_true(pp_engine_cancel(eng, b));
    assert_false(pp_engine_cancel(eng, b)); /* twice */
    assert_false(pp_engine_cancel(eng, 0));
    assert_int_equal(pp_engine_pending(eng), 2);
    /* b's slot is reused: the stale handle must not cancel the new event */
    pp_timer d = pp_engine_at(eng, 2.5, rec, &tr, 4);
    assert_true(d != b);
    assert_false(pp_engine_cancel(eng, b));
    pp_engine_run(eng, INFINITY);
    assert_int_equal(tr.n, 3);
    assert_int_equal(tr.got[0], 1);
    assert_int_equal(tr.got[1], 4);
    assert_int_equal(tr.got[2], 3);
    assert_false(pp_engine_cancel(eng, a)); /* already ran */
    pp_engine_free(eng);
}

static void test_engine_run_until(void **state) {
    (void)state;
    pp_engine *eng = pp_engine_new();
    trace tr = {0};
    for (int i = 1; i <= 4; i++)
        pp_engine_at(eng, (double)i, rec, &tr, (uint64_t)i);
    assert_int_equal(pp_engine_run(eng, 2.0), 2); /* inclusive */
    assert_true(pp_engine_now(eng) == 2.0);
    assert_int_equal(pp_engine_run(eng, 3.5), 1);
    assert_true(pp_engine_now(eng) == 3.5); /* the clock moves on */
    assert_int_equal(pp_engine_pending(eng), 1);
    /* the past is clamped to now (a rounding hair below) */
    pp_engine_at(eng, 3.5 * (1 - 1e-15), rec, &tr, 9);
    assert_int_equal(pp_engine_run(eng, INFINITY), 2);
    assert_int_equal(tr.got[3], 9);
    assert_true(tr.at[3] == 3.5);
    assert_int_equal(pp_engine_events(eng), 5);
    pp_engine_free(eng);
}

/* Handlers scheduling at now: they run after what was already due now. */
static void chain(pp_engine *eng, void *ctx, uint64_t arg) {
    trace *tr = ctx;
    rec(eng, ctx, arg);
    if (arg < 3)
        pp_engine_after(eng, 0.0, chain, tr, arg + 1);
}

static void test_engine_reentrant_schedule(void **state) {
    (void)state;
    pp_engine *eng = pp_engine_new();
    trace tr = {0};
    pp_engine_at(eng, 1.0, chain, &tr, 0);
    pp_engine_at(eng, 1.0, rec, &tr, 100);
    pp_engine_run(eng, INFINITY);
    uint64_t want[] = {0, 100, 1, 2, 3};
    assert_int_equal(tr.n, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(tr.got[i], want[i]);
    pp_engine_free(eng);
}

/* Many events with random times (many ties) and random cancellations
 * against a sort of what should run. */
typedef struct ev_ref { double t; uint64_t seq; bool cancelled; } ev_ref;

static int ev_cmp(const void *a, const void *b) {
    const ev_ref *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

typedef struct order_ck { const ev_ref *want; size_t next; bool ok; } order_ck;

static void ck_order(pp_engine *eng, void *ctx, uint64_t arg) {
    order_ck *ck = ctx;
    while (ck->want[ck->next].cancelled)
        ck->next++;
    const ev_ref *w = &ck->want[ck->next];
    if (w->seq != arg || pp_engine_now(eng) != w->t)
        ck->ok = false;
    ck->next++;
}

static void test_engine_stress(void **state) {
    (void)state;
    enum { N = 20000 };
    rng_state = 7;
    pp_engine *eng = pp_engine_new();
    ev_ref *ev = calloc(N, sizeof *ev);
    pp_timer *h = calloc(N, sizeof *h);
    order_ck ck = {ev, 0, true};
    for (uint64_t i = 0; i < N; i++) {
        ev[i].t = (double)rnd_int(0, 999);
        ev[i].seq = i;
        h[i] = pp_engine_at(eng, ev[i].t, ck_order, &ck, i);
    }
    size_t live = N;
    for (int i = 0; i < N / 3; i++) {
        size_t k = (size_t)rnd_int(0, N - 1);
        bool was = !ev[k].cancelled;
        assert_true(pp_engine_cancel(eng, h[k]) == was);
        ev[k].cancelled = true;
        live -= was;
    }
    assert_int_equal(pp_engine_pending(eng), live);
    qsort(ev, N, sizeof *ev, ev_cmp);
    assert_int_equal(pp_engine_run(eng, INFINITY), live);
    assert_true(ck.ok);
    free(ev);
    free(h);
    pp_engine_free(eng);
}

/* ======================================================================
 * The max-min solver
 * ==================================================================== */

static void solve(size_t nl, const double *cap, size_t nf, const int32_t *off,
                  const int32_t *links, double *rates) {
    pp_error e = PP_ERROR_INIT;
    int rc = pp_maxmin_solve(nl, cap, nf, off, links, rates, &e);
    if (rc != 0) {
        print_error("pp_maxmin_solve: %s\n", e.msg);
        fail();
    }
}

static void test_maxmin_one_bottleneck(void **state) {
    (void)state;
    double cap[] = {9.0, 100.0};
    int32_t off[] = {0, 1, 3, 5};
    int32_t links[] = {0, 0, 1, 1, 0};
    double r[3];
    solve(2, cap, 3, off, links, r);
    for (int i = 0; i < 3; i++)
        assert_close(r[i], 3.0, 1e-15);
}

/* The textbook case: a flow limited elsewhere frees capacity. */
static void test_maxmin_limited_elsewhere(void **state) {
    (void)state;
    double cap[] = {10.0, 2.0}; /* A, B */
    int32_t off[] = {0, 1, 2, 4};
    int32_t links[] = {0, 0, 0, 1};
    double r[3];
    solve(2, cap, 3, off, links, r);
    assert_close(r[0], 4.0, 1e-15);
    assert_close(r[1], 4.0, 1e-15);
    assert_close(r[2], 2.0, 1e-15);
}

/* Parking lot: a long flow over every link, a short one on each. */
static void test_maxmin_parking_lot(void **state) {
    (void)state;
    double cap[] = {1.0, 1.0, 1.0, 1.0};
    int32_t off[] = {0, 4, 5, 6, 7, 8};
    int32_t links[] = {0, 1, 2, 3, 0, 1, 2, 3};
    double r[5];
    solve(4, cap, 5, off, links, r);
    for (int i = 0; i < 5; i++)
        assert_close(r[i], 0.5, 1e-15);
    /* Growing capacities: the long flow is held at the first link and the
     * short ones take the rest. */
    double cap2[] = {1.0, 2.0, 3.0, 4.0};
    solve(4, cap2, 5, off, links, r);
    double want[] = {0.5, 0.5, 1.5, 2.5, 3.5};
    for (int i = 0; i < 5; i++)
        assert_close(r[i], want[i], 1e-15);
}

/* Paths of different lengths and three bottleneck levels:
 * A(1): f0 f1   B(3): f0 f2 f4   C(1.5): f2 f3.
 * A saturates first (0.5 each), then C (0.75 each), then B gives f4
 * 3 - 0.5 - 0.75 = 1.75. */
static void test_maxmin_levels(void **state) {
    (void)state;
    double cap[] = {1.0, 3.0, 1.5};
    int32_t off[] = {0, 2, 3, 5, 6, 7};
    int32_t links[] = {0, 1, 0, 1, 2, 2, 1};
    double r[5];
    solve(3, cap, 5, off, links, r);
    double want[] = {0.5, 0.5, 0.75, 0.75, 1.75};
    for (int i = 0; i < 5; i++)
        assert_close(r[i], want[i], 1e-15);
}

static void test_maxmin_edges(void **state) {
    (void)state;
    double cap[] = {0.0, 5.0};
    int32_t off[] = {0, 0, 2, 3};  /* no links; {0,1}; {1} */
    int32_t links[] = {0, 1, 1};
    double r[3];
    solve(2, cap, 3, off, links, r);
    assert_true(isinf(r[0]));
    assert_true(r[1] == 0.0);  /* a dead link holds it at 0 */
    assert_true(r[2] == 5.0);  /* and the other takes everything */

    pp_error e = PP_ERROR_INIT;
    int32_t bad[] = {0, 2, 3};
    assert_int_equal(pp_maxmin_solve(2, cap, 3, off, bad, r, &e), PP_EINVAL);
    assert_non_null(strstr(e.msg, "out of range"));
    double negcap[] = {-1.0, 1.0};
    pp_error_clear(&e);
    assert_int_equal(pp_maxmin_solve(2, negcap, 3, off, links, r, &e),
                     PP_EINVAL);
}

/* ---- random instances ------------------------------------------------- */

#define MAXL 64
#define MAXF 256

typedef struct inst {
    size_t nl, nf;
    double cap[MAXL];
    int32_t off[MAXF + 1];
    int32_t links[MAXF * 6];
} inst;

/* nl links in `groups` blocks and nf flows of 1-6 hops; most flows stay in
 * one block, so instances have several components. */
/* Every link of the next random_inst at this capacity when > 0: a
 * non-blocking fabric, where equal shares tie at every level. */
static double g_uniform_cap;

static void random_inst(inst *in, int groups, size_t nl, size_t nf) {
    in->nl = nl;
    in->nf = nf;
    static const double caps[] = {1, 2, 2.5, 10, 10, 40};
    for (size_t l = 0; l < in->nl; l++)
        in->cap[l] = rnd() % 2 ? caps[rnd() % 6] : 1 + 99 * rnd_unit();
    if (g_uniform_cap > 0)
        for (size_t l = 0; l < in->nl; l++)
            in->cap[l] = g_uniform_cap;
    size_t per = (in->nl + (size_t)groups - 1) / (size_t)groups;
    in->off[0] = 0;
    for (size_t f = 0; f < in->nf; f++) {
        int len = rnd_int(1, 6);
        size_t g = (size_t)rnd_int(0, groups - 1);
        int32_t *p = in->links + in->off[f];
        int n = 0;
        for (int tries = 0; n < len && tries < 50; tries++) {
            size_t l = rnd() % 8 == 0 ? rnd() % in->nl
                                      : g * per + rnd() % per;
            if (l >= in->nl)
                continue;
            bool dup = false;
            for (int k = 0; k < n; k++)
                dup |= p[k] == (int32_t)l;
            if (!dup)
                p[n++] = (int32_t)l;
        }
        if (n == 0)
            p[n++] = 0;
        in->off[f + 1] = in->off[f] + n;
    }
}

/* The definition: feasible, and every flow has a saturated link on which
 * its rate is the largest. */
static void check_maxmin_definition(const inst *in, const double *r) {
    double load[MAXL] = {0}, top[MAXL] = {0};
    for (size_t f = 0; f < in->nf; f++) {
        assert_true(r[f] > 0 && isfinite(r[f]));
        for (int32_t j = in->off[f]; j < in->off[f + 1]; j++) {
            load[in->links[j]] += r[f];
            top[in->links[j]] = fmax(top[in->links[j]], r[f]);
        }
    }
    for (size_t l = 0; l < in->nl; l++)
        assert_true(load[l] <= in->cap[l] * (1 + REL));
    for (size_t f = 0; f < in->nf; f++) {
        bool has = false;
        for (int32_t j = in->off[f]; j < in->off[f + 1]; j++) {
            int32_t l = in->links[j];
            has |= load[l] >= in->cap[l] * (1 - REL) &&
                   r[f] >= top[l] * (1 - REL);
        }
        if (!has) {
            print_error("flow %zu (rate %g) has no bottleneck\n", f, r[f]);
            fail();
        }
    }
}

/* A second solver, written plainly: O(levels x (F + hops)). */
static void naive_maxmin(const inst *in, double *r) {
    double rc[MAXL];
    int cnt[MAXL];
    memcpy(rc, in->cap, sizeof rc);
    for (size_t f = 0; f < in->nf; f++)
        r[f] = -1;
    for (;;) {
        memset(cnt, 0, sizeof cnt);
        for (size_t f = 0; f < in->nf; f++)
            if (r[f] < 0)
                for (int32_t j = in->off[f]; j < in->off[f + 1]; j++)
                    cnt[in->links[j]]++;
        int best = -1;
        for (size_t l = 0; l < in->nl; l++)
            if (cnt[l] > 0 &&
                (best < 0 || rc[l] / cnt[l] < rc[best] / cnt[best]))
                best = (int)l;
        if (best < 0)
            return;
        double s = rc[best] / cnt[best];
        for (size_t f = 0; f < in->nf; f++) {
            if (r[f] >= 0)
                continue;
            bool on = false;
            for (int32_t j = in->off[f]; j < in->off[f + 1]; j++)
                on |= in->links[j] == best;
            if (!on)
                continue;
            r[f] = s;
            for (int32_t j = in->off[f]; j < in->off[f + 1]; j++)
                rc[in->links[j]] -= s;
        }
    }
}

static void test_maxmin_random(void **state) {
    (void)state;
    rng_state = 42;
    for (int it = 0; it < 200; it++) {
        inst in;
        random_inst(&in, rnd_int(1, 4), (size_t)rnd_int(5, 40),
                    (size_t)rnd_int(5, 60));
        double r[MAXF], nv[MAXF];
        solve(in.nl, in.cap, in.nf, in.off, in.links, r);
        check_maxmin_definition(&in, r);
        naive_maxmin(&in, nv);
        for (size_t f = 0; f < in.nf; f++)
            assert_close(r[f], nv[f], REL);

        /* The network: every flow at t=0, rates after the first update. */
        pp_engine *eng = pp_engine_new();
        pp_flownet *net = pp_flownet_new(eng, in.cap, in.nl);
        for (size_t f = 0; f < in.nf; f++)
            assert_int_equal(pp_flow_start(net, in.links + in.off[f],
                                           (size_t)(in.off[f + 1] - in.off[f]),
                                           1e6, 0.0, NULL, NULL, 0), (int)f);
        pp_engine_run(eng, 0.0);
        pp_flownet_stats st;
        pp_flownet_stats_get(net, &st);
        assert_int_equal(st.updates, 1);
        for (size_t f = 0; f < in.nf; f++)
            assert_close(pp_flow_rate(net, (pp_flow_id)f), r[f], REL);
        pp_flownet_free(net);
        pp_engine_free(eng);
    }
}

/* ======================================================================
 * The flow network, dynamic
 * ==================================================================== */

typedef struct finrec {
    double t[256];
    int n_done;
    int order[256];
} finrec;

static pp_engine *g_eng; /* for the simple callbacks below */

static void note_done(pp_flownet *net, pp_flow_id id, void *ctx,
                      uint64_t arg) {
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
    for (int i = 0; i < N; i++)
        cap[i] = 1e9;
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
    for (int i = 0; i < G * 2; i++)
        cap[i] = 100.0;
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
        if (d->done[f] || d->join[f] > now)
            continue;
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
    for (size_t f = 0; f < in->nf; f++)
        assert_true(d->done[f]);
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
                    if (in.links[j] == (int32_t)l)
                        want += bytes[f];
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
        for (int i = 0; i < 4; i++)
            fin[pass][i] = fr.t[ids[i]];
        pp_flownet_free(net);
        pp_engine_free(g_eng);
    }
    for (int i = 0; i < 4; i++)
        assert_close(fin[1][i], fin[0][i], 1e-12);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_order),
        cmocka_unit_test(test_engine_cancel),
        cmocka_unit_test(test_engine_run_until),
        cmocka_unit_test(test_engine_reentrant_schedule),
        cmocka_unit_test(test_engine_stress),
        cmocka_unit_test(test_maxmin_one_bottleneck),
        cmocka_unit_test(test_maxmin_limited_elsewhere),
        cmocka_unit_test(test_maxmin_parking_lot),
        cmocka_unit_test(test_maxmin_levels),
        cmocka_unit_test(test_maxmin_edges),
        cmocka_unit_test(test_maxmin_random),
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
