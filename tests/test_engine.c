/*
 * tests/test_engine.c: the event engine (sim/net/engine.c): order of
 * events at equal times, cancellation, running until a time, events
 * scheduled from events, and a stress run against a sorted list.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "flow_util.h"

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
    if (arg < 3) pp_engine_after(eng, 0.0, chain, tr, arg + 1);
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
    for (int i = 0; i < 5; i++) assert_int_equal(tr.got[i], want[i]);
    pp_engine_free(eng);
}

/* Many events with random times (many ties) and random cancellations
 * against a sort of what should run. */
typedef struct ev_ref {
    double t;
    uint64_t seq;
    bool cancelled;
} ev_ref;

static int ev_cmp(const void *a, const void *b) {
    const ev_ref *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

typedef struct order_ck {
    const ev_ref *want;
    size_t next;
    bool ok;
} order_ck;

static void ck_order(pp_engine *eng, void *ctx, uint64_t arg) {
    order_ck *ck = ctx;
    while (ck->want[ck->next].cancelled) ck->next++;
    const ev_ref *w = &ck->want[ck->next];
    if (w->seq != arg || pp_engine_now(eng) != w->t) ck->ok = false;
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_order),
        cmocka_unit_test(test_engine_cancel),
        cmocka_unit_test(test_engine_run_until),
        cmocka_unit_test(test_engine_reentrant_schedule),
        cmocka_unit_test(test_engine_stress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
