/*
 * tests/models_util.h: what test_models.c, test_models_cost.c and
 * test_layout.c share: tolerant comparisons, loading a model or a layout
 * or failing the test, SPECs that must be refused.
 */
#ifndef PODPLAN_TESTS_MODELS_UTIL_H
#define PODPLAN_TESTS_MODELS_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "podplan/models.h"

#define DAY_S 86400.0
#define YEAR_S (365.0 * DAY_S)

/* |got - want| <= rel * |want|, with a message naming both. */
#define assert_rel(got, want, rel)                                             \
    do {                                                                       \
        double g_ = (got), w_ = (want);                                        \
        if (!(fabs(g_ - w_) <= (rel)*fabs(w_))) {                              \
            print_error("%s = %.10g, want %.10g (rel %.3g)\n", #got, g_, w_,   \
                        (double)(rel));                                        \
            fail();                                                            \
        }                                                                      \
    } while (0)

#define assert_contains(hay, needle)                                           \
    do {                                                                       \
        if (!strstr((hay), (needle))) {                                        \
            print_error("\"%s\" does not contain \"%s\"\n", (hay), (needle));  \
            fail();                                                            \
        }                                                                      \
    } while (0)

static inline pp_model load(const char *name) {
    pp_model m;
    pp_error e = PP_ERROR_INIT;
    int rc = pp_model_load(name, &m, &e);
    if (rc != 0) print_error("pp_model_load(%s): %s\n", name, e.msg);
    assert_int_equal(rc, 0);
    return m;
}

static inline pp_parallel layout(const char *spec) {
    pp_parallel p;
    pp_error e = PP_ERROR_INIT;
    pp_parallel_init(&p);
    int rc = pp_parallel_parse(spec, &p, &e);
    if (rc != 0) print_error("pp_parallel_parse(%s): %s\n", spec, e.msg);
    assert_int_equal(rc, 0);
    return p;
}

/* A SPEC the parser refuses: exit code 2, the message, *p untouched. */
static inline void expect_parallel_error(const char *spec, const char *msg) {
    pp_parallel p, before;
    pp_error e = PP_ERROR_INIT;
    pp_parallel_init(&p);
    before = p;
    int rc = pp_parallel_parse(spec, &p, &e);
    assert_int_equal(rc, PP_EINPUT);
    assert_int_equal(pp_exit_code(rc), 2);
    assert_contains(e.msg, msg);
    assert_memory_equal(&p, &before, sizeof p);
}

/* A SPEC that parses but that pp_parallel_validate refuses for model m. */
static inline void expect_invalid(const pp_model *m, const char *spec,
                                  const char *msg) {
    pp_parallel p = layout(spec);
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_parallel_validate(&p, m, &e), PP_EINPUT);
    assert_contains(e.msg, msg);
}

/* A model spec (inline, file or zoo name) the loader refuses: exit code
 * 2, the message, *m untouched. */
static inline void expect_model_error(const char *spec, const char *msg) {
    pp_model m;
    memset(&m, 0x5a, sizeof m);
    pp_model before = m;
    pp_error e = PP_ERROR_INIT;
    int rc = pp_model_load(spec, &m, &e);
    assert_int_equal(rc, PP_EINPUT);
    assert_int_equal(pp_exit_code(rc), 2);
    assert_int_equal(e.code, PP_EINPUT);
    assert_contains(e.msg, msg);
    assert_memory_equal(&m, &before, sizeof m); /* untouched on failure */
}

/* Loads a model from YAML text; returns the status, message in e. */
static inline int model_from_text(const char *name, const char *text,
                                  pp_model *m, pp_error *e) {
    pp_doc *doc = NULL;
    int rc = pp_doc_load_string(name, text, strlen(text), &doc, e);
    if (rc == 0) rc = pp_model_from_node(pp_doc_root(doc), "", m, e);
    pp_doc_free(doc);
    return rc;
}

#endif
