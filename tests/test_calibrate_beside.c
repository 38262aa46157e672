/*
 * test_calibrate_beside.c: compute_beside_nccl from `exec gemm
 * --load-sms` runs (calibrate/fit_beside.c).
 *   - the H100 files shipped in calibrate/examples/h100/load/ fit back to
 *     the shipped H100 profile's table (which tools/load_table.py printed
 *     from the same files);
 *   - the load's fields survive the measurement set's JSON; the profile
 *     written loads with the table; validate prices a loaded GEMM by it;
 *   - a load below 1 TB/s, or none, fits nothing and says so;
 *   - a broken load object is located and adds nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "podplan/calibrate.h"

#include "cal_util.h"

/* calibrate/'s internal GEMM price (cal_int.h). */
double pp__cal_gemm_pred(const pp_gpu_profile *g, const pp_cal_point *p);

/* The shipped H100 profile on the catalogue's h100-sxm5. */
static void h100(pp_gpu_profile *g) {
    cal_shipped_profile("h100", "h100-sxm5", g);
}

static void import_load_files(pp_cal_set *s) {
    glob_t gl;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(glob(PODPLAN_SOURCE_DIR
                          "/calibrate/examples/h100/load/gemm-*.json",
                          0, NULL, &gl),
                     0);
    assert_true(gl.gl_pathc >= 40);
    for (size_t i = 0; i < gl.gl_pathc; i++)
        if (pp_cal_import(s, gl.gl_pathv[i], NULL, &e)) fail_msg("%s", e.msg);
    globfree(&gl);
}

static void test_fit_shipped(void **state) {
    (void)state;
    pp_cal_set s;
    pp_error e = PP_ERROR_INIT;
    pp_cal_set_init(&s);
    import_load_files(&s);
    pp_gpu_profile shipped, g;
    h100(&shipped);
    assert_true(shipped.n_beside_nccl == 6);
    g = shipped;
    g.n_beside_nccl = 0;
    g.beside_nccl_on = 0;
    pp_cal_fit f;
    if (pp_cal_fit_beside_nccl(&s, NULL, &g, &f, &e)) fail_msg("%s", e.msg);
    /* K = 1, 2, 4: 32 GEMMs each (the second set); 8, 16, 32: 52 (both
     * sets, the first's at 1 TB/s and flat out). */
    assert_int_equal(f.n_points, 3 * 32 + 3 * 52);
    assert_int_equal(f.n_params, 6);
    assert_int_equal(g.n_beside_nccl, 6);
    assert_true(g.beside_nccl_on == 132);
    for (size_t k = 0; k < 6; k++) {
        assert_true(g.beside_nccl[k].sms == shipped.beside_nccl[k].sms);
        /* The profile states three decimals. */
        if (fabs(g.beside_nccl[k].time - shipped.beside_nccl[k].time) > 6e-4)
            fail_msg("K=%g: fitted %.5f, profile %.5f", g.beside_nccl[k].sms,
                     g.beside_nccl[k].time, shipped.beside_nccl[k].time);
        assert_true(f.p[k].se > 0 && f.p[k].se < 0.03);
    }
    /* Held SMs cost more the more there are. */
    for (size_t k = 1; k < 6; k++)
        assert_true(g.beside_nccl[k].time > g.beside_nccl[k - 1].time);
    pp_cal_fit_fini(&f);

    /* Not in the GEMM fit, nor in compute_beside_comm's. */
    pp_gpu_profile h = shipped;
    if (pp_cal_fit_gemm(&s, NULL, &h, &f, &e)) fail_msg("%s", e.msg);
    assert_non_null(strstr(f.advice, "beside a load"));
    for (size_t i = 0; i < f.n_points; i++)
        assert_int_equal(s.pts[f.idx[i]].load_sms, 0);
    pp_cal_fit_fini(&f);
    if (pp_cal_fit_beside(&s, NULL, &h, &f, &e)) fail_msg("%s", e.msg);
    assert_int_equal(f.n_points, 0);
    pp_cal_fit_fini(&f);

    /* The set's JSON keeps the load and the GEMM's name. */
    pp_cal_set back;
    cal_roundtrip(&s, &back);
    size_t flat = 0, zero = 0;
    for (size_t i = 0; i < s.n; i++) {
        assert_int_equal(back.pts[i].load_sms, s.pts[i].load_sms);
        assert_true(back.pts[i].load_rate_asked == s.pts[i].load_rate_asked);
        assert_true(fabs(back.pts[i].load_rate - s.pts[i].load_rate) <=
                    1e-9 * s.pts[i].load_rate);
        assert_string_equal(back.pts[i].op, s.pts[i].op);
        flat += s.pts[i].load_sms && s.pts[i].load_rate_asked < 0;
        zero += s.pts[i].load_sms && s.pts[i].load_rate_asked == 0;
    }
    assert_true(flat > 0 && zero > 0);
    pp_cal_fit f2;
    pp_gpu_profile g2 = shipped;
    if (pp_cal_fit_beside_nccl(&back, NULL, &g2, &f2, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(f2.n_points, 3 * 32 + 3 * 52);
    assert_true(g2.beside_nccl[5].time == g.beside_nccl[5].time);
    pp_cal_fit_fini(&f2);
    pp_cal_set_fini(&back);

    /* The profile written loads with the table and the SMs it was
     * measured on. */
    pp_cal_result r;
    pp_cal_result_init(&r);
    r.profile = g;
    pp_cal_provenance pv = {&s, "dgx-h100-ndr", NULL, true};
    cal_profile_reload(&r, &pv, "/tmp/podplan-test-beside-nccl.yaml",
                       "h100-sxm5", &h);
    assert_int_equal(h.n_beside_nccl, 6);
    assert_true(h.beside_nccl_on == 132);
    assert_true(fabs(h.beside_nccl[5].time - g.beside_nccl[5].time) < 1e-5);

    /* validate: a loaded GEMM is its time alone times the table at K. */
    pp_cal_validation v;
    if (pp_cal_validate(&s, &r, 0, NULL, &v, &e)) fail_msg("%s", e.msg);
    size_t hit = 0;
    for (size_t i = 0; i < v.n; i++) {
        const pp_cal_point *p = &s.pts[v.v[i].idx];
        if (p->load_sms != 32 || p->streams || p->sms_reserved) continue;
        pp_cal_point alone = *p;
        alone.load_sms = 0;
        double t0 = pp__cal_gemm_pred(&g, &alone);
        if (fabs(v.v[i].predicted_s / t0 - g.beside_nccl[5].time) >= 1e-9)
            fail_msg("%g / %g", v.v[i].predicted_s, t0);
        hit++;
    }
    assert_true(hit > 0);
    pp_cal_validation_fini(&v);
    pp_cal_result_fini(&r);
    pp_cal_set_fini(&s);
}

/* One GEMM alone and beside a load at `rate` (NULL: flat out). */
static void pair(pp_cal_set *s, const char *rate) {
    char text[512];
    pp_error e = PP_ERROR_INIT;
    snprintf(text, sizeof text,
             "{\"backend\": \"cuda\", \"dtype\": \"bf16\", \"results\": ["
             "{\"name\": \"mlp fc1\", \"m\": 8192, \"n\": 8192, \"k\": 8192, "
             "\"iters\": 30, \"time_median_s\": 1e-3, \"time_cv\": 0.01},"
             "{\"name\": \"mlp fc1\", \"m\": 8192, \"n\": 8192, \"k\": 8192, "
             "\"iters\": 30, \"time_median_s\": 1.2e-3, \"time_cv\": 0.01, "
             "\"load\": {\"sms\": 16, \"rate_asked\": %s, \"rate\": 2e11}}]}",
             rate ? rate : "null");
    if (pp_cal_import_text(s, "pair.json", text, strlen(text), NULL, &e))
        fail_msg("%s", e.msg);
}

static void test_fit_selects(void **state) {
    (void)state;
    pp_cal_set s;
    pp_error e = PP_ERROR_INIT;
    pp_gpu_profile g;
    pp_cal_fit f;
    h100(&g);
    double before = g.beside_nccl[4].time;

    /* A load asked for 200 GB/s: not what a NCCL channel does. */
    pp_cal_set_init(&s);
    pair(&s, "2e11");
    if (pp_cal_fit_beside_nccl(&s, NULL, &g, &f, &e)) fail_msg("%s", e.msg);
    assert_int_equal(f.n_params, 0);
    assert_non_null(strstr(f.advice, "compute_beside_nccl kept"));
    assert_true(g.beside_nccl[4].time == before);
    pp_cal_fit_fini(&f);
    pp_cal_set_fini(&s);

    /* Flat out: 1.2 at 16 SMs, the one point of the table. */
    pp_cal_set_init(&s);
    pair(&s, NULL);
    assert_int_equal(s.pts[1].load_sms, 16);
    assert_true(s.pts[1].load_rate_asked == -1);
    assert_string_equal(s.pts[1].op, "mlp fc1");
    if (pp_cal_fit_beside_nccl(&s, NULL, &g, &f, &e)) fail_msg("%s", e.msg);
    assert_int_equal(f.n_params, 1);
    assert_int_equal(g.n_beside_nccl, 1);
    assert_true(fabs(g.beside_nccl[0].time - 1.2) < 1e-12);
    assert_true(g.beside_nccl[0].sms == 16);
    pp_cal_fit_fini(&f);
    pp_cal_set_fini(&s);

    /* A measurement set that names the load's SMs and not its rate:
     * flat out, as exec gemm's null. */
    static const char set[] =
        "{\"podplan_measurements\": 1, \"sources\": [{\"file\": \"x\"}], "
        "\"points\": [{\"kind\": \"gemm\", \"source\": 0, \"m\": 4096, "
        "\"n\": 4096, \"k\": 4096, \"time_s\": 1e-3, \"op\": \"a\"}, "
        "{\"kind\": \"gemm\", \"source\": 0, \"m\": 4096, \"n\": 4096, "
        "\"k\": 4096, \"time_s\": 1.3e-3, \"op\": \"a\", \"load_sms\": 8}]}";
    pp_cal_set_init(&s);
    if (pp_cal_import_text(&s, "set.json", set, sizeof set - 1, NULL, &e))
        fail_msg("%s", e.msg);
    assert_true(s.pts[1].load_rate_asked == -1);
    if (pp_cal_fit_beside_nccl(&s, NULL, &g, &f, &e)) fail_msg("%s", e.msg);
    assert_int_equal(f.n_params, 1);
    assert_true(fabs(g.beside_nccl[0].time - 1.3) < 1e-12);
    assert_true(g.beside_nccl[0].sms == 8);
    pp_cal_fit_fini(&f);
    pp_cal_set_fini(&s);
}

static void test_broken_load(void **state) {
    (void)state;
    static const char *const bad[][2] = {
        {"\"load\": {\"sms\": 0, \"rate_asked\": null, \"rate\": 1}",
         "results[0].load: sms: expected a number >= 1"},
        {"\"load\": {\"rate_asked\": null, \"rate\": 1}",
         "results[0].load: sms: expected a number (missing)"},
        {"\"load\": {\"sms\": 8, \"rate_asked\": -5, \"rate\": 1}",
         "results[0].load: rate_asked: expected a number >= 0"},
        {"\"load\": {\"sms\": 8, \"rate\": \"fast\"}",
         "results[0].load: rate: expected a number >= 0"},
        {"\"load\": 8", "results[0].load: expected an object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        pp_error e = PP_ERROR_INIT;
        pp_cal_set s;
        pp_cal_set_init(&s);
        snprintf(text, sizeof text,
                 "{\"backend\": \"cuda\", \"dtype\": \"bf16\", \"results\": "
                 "[{\"m\": 64, \"n\": 64, \"k\": 64, \"iters\": 5, "
                 "\"time_median_s\": 1e-5, \"time_cv\": 0.1, %s}]}",
                 bad[i][0]);
        assert_int_equal(
            pp_cal_import_text(&s, "bad.json", text, strlen(text), NULL, &e),
            PP_EINPUT);
        if (!strstr(e.msg, bad[i][1]))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, e.msg, bad[i][1]);
        assert_non_null(strstr(e.msg, "bad.json:"));
        assert_int_equal(s.n, 0);
        pp_cal_set_fini(&s);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_shipped),
        cmocka_unit_test(test_fit_selects),
        cmocka_unit_test(test_broken_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
