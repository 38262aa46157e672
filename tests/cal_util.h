/*
 * tests/cal_util.h: a shipped profile, a measurement set through its
 * JSON and back, and a fitted profile through its YAML and back, for the
 * calibrate tests (test_calibrate_import.c, test_calibrate_fit.c,
 * test_calibrate_beside.c).  Include after <cmocka.h> (and its
 * prerequisites).
 */
#ifndef PODPLAN_TESTS_CAL_UTIL_H
#define PODPLAN_TESTS_CAL_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "podplan/calibrate.h"
#include "podplan/hw.h"

/* The shipped profile `name` (topologies/profiles/) for catalogue GPU
 * `gpu`, with no stack applied. */
static inline void cal_shipped_profile(const char *name, const char *gpu,
                                       pp_gpu_profile *g) {
    pp_error e = PP_ERROR_INIT;
    pp_catalog *cat = NULL;
    if (pp_catalog_load(NULL, &cat, &e) ||
        pp_profile_load(name, pp_catalog_gpu(cat, gpu), g, &e))
        fail_msg("%s", e.msg);
    pp_catalog_free(cat);
}

/* Writes s with pp_cal_set_write and reads it into back (initialised
 * here; the caller finis it): as many points come back. */
static inline void cal_roundtrip(const pp_cal_set *s, pp_cal_set *back) {
    pp_error e = PP_ERROR_INIT;
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    assert_non_null(fp);
    if (pp_cal_set_write(s, fp, &e)) fail_msg("%s", e.msg);
    fclose(fp);
    pp_cal_set_init(back);
    if (pp_cal_import_text(back, "set.json", buf, len, NULL, &e))
        fail_msg("%s", e.msg);
    free(buf);
    assert_int_equal(back->n, s->n);
}

/* Writes r's profile (pp_cal_profile_write, provenance pv) to the file
 * `path` and loads it back onto the catalogue's `gpu` into out; the file
 * is removed. */
static inline void cal_profile_reload(const pp_cal_result *r,
                                      const pp_cal_provenance *pv,
                                      const char *path, const char *gpu,
                                      pp_gpu_profile *out) {
    pp_error e = PP_ERROR_INIT;
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    if (pp_cal_profile_write(r, pv, fp, &e)) fail_msg("%s", e.msg);
    fclose(fp);
    pp_catalog *cat = NULL;
    if (pp_catalog_load(NULL, &cat, &e) ||
        pp_profile_load(path, pp_catalog_gpu(cat, gpu), out, &e))
        fail_msg("%s", e.msg);
    pp_catalog_free(cat);
    unlink(path);
}

#endif
