/*
 * tests/test_maxmin.c: the reference max-min solver (sim/net/maxmin.c,
 * pp_maxmin_solve).  It is not trusted: hand-worked cases, the definition
 * of max-min fairness checked on random instances (every flow has a
 * saturated link on which no flow is faster) and a second, naive solver
 * written here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "flow_util.h"

/* ======================================================================
 * The max-min solver
 * ==================================================================== */

static void test_maxmin_one_bottleneck(void **state) {
    (void)state;
    double cap[] = {9.0, 100.0};
    int32_t off[] = {0, 1, 3, 5};
    int32_t links[] = {0, 0, 1, 1, 0};
    double r[3];
    solve(2, cap, 3, off, links, r);
    for (int i = 0; i < 3; i++) assert_close(r[i], 3.0, 1e-15);
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
    for (int i = 0; i < 5; i++) assert_close(r[i], 0.5, 1e-15);
    /* Growing capacities: the long flow is held at the first link and the
     * short ones take the rest. */
    double cap2[] = {1.0, 2.0, 3.0, 4.0};
    solve(4, cap2, 5, off, links, r);
    double want[] = {0.5, 0.5, 1.5, 2.5, 3.5};
    for (int i = 0; i < 5; i++) assert_close(r[i], want[i], 1e-15);
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
    for (int i = 0; i < 5; i++) assert_close(r[i], want[i], 1e-15);
}

static void test_maxmin_edges(void **state) {
    (void)state;
    double cap[] = {0.0, 5.0};
    int32_t off[] = {0, 0, 2, 3}; /* no links; {0,1}; {1} */
    int32_t links[] = {0, 1, 1};
    double r[3];
    solve(2, cap, 3, off, links, r);
    assert_true(isinf(r[0]));
    assert_true(r[1] == 0.0); /* a dead link holds it at 0 */
    assert_true(r[2] == 5.0); /* and the other takes everything */

    pp_error e = PP_ERROR_INIT;
    int32_t bad[] = {0, 2, 3};
    assert_int_equal(pp_maxmin_solve(2, cap, 3, off, bad, r, &e), PP_EINVAL);
    assert_non_null(strstr(e.msg, "out of range"));
    double negcap[] = {-1.0, 1.0};
    pp_error_clear(&e);
    assert_int_equal(pp_maxmin_solve(2, negcap, 3, off, links, r, &e),
                     PP_EINVAL);
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
            has |=
                load[l] >= in->cap[l] * (1 - REL) && r[f] >= top[l] * (1 - REL);
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
    for (size_t f = 0; f < in->nf; f++) r[f] = -1;
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
        if (best < 0) return;
        double s = rc[best] / cnt[best];
        for (size_t f = 0; f < in->nf; f++) {
            if (r[f] >= 0) continue;
            bool on = false;
            for (int32_t j = in->off[f]; j < in->off[f + 1]; j++)
                on |= in->links[j] == best;
            if (!on) continue;
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
        for (size_t f = 0; f < in.nf; f++) assert_close(r[f], nv[f], REL);

        /* The network: every flow at t=0, rates after the first update. */
        pp_engine *eng = pp_engine_new();
        pp_flownet *net = pp_flownet_new(eng, in.cap, in.nl);
        for (size_t f = 0; f < in.nf; f++)
            assert_int_equal(pp_flow_start(net, in.links + in.off[f],
                                           (size_t)(in.off[f + 1] - in.off[f]),
                                           1e6, 0.0, NULL, NULL, 0),
                             (int)f);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maxmin_one_bottleneck),
        cmocka_unit_test(test_maxmin_limited_elsewhere),
        cmocka_unit_test(test_maxmin_parking_lot),
        cmocka_unit_test(test_maxmin_levels),
        cmocka_unit_test(test_maxmin_edges),
        cmocka_unit_test(test_maxmin_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
