/*
 * test_util.h: helpers for the cmocka tests.
 *
 *   assert_close(actual, expected, rel_tol)
 *       fails unless |actual - expected| <= rel_tol x |expected|, printing
 *       both values and the relative error (cmocka's own asserts print
 *       integers only, which hides what a float comparison missed by).
 *   skip_because("no GPU")
 *       prints the reason and exits 77, which CTest reports as SKIPPED
 *       (SKIP_RETURN_CODE 77 in tests/CMakeLists.txt).
 *
 * Include after <cmocka.h> (and its prerequisites).
 */
#ifndef PODPLAN_TEST_UTIL_H
#define PODPLAN_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static inline void pp_test_assert_close(double actual, double expected,
                                        double rel_tol, const char *what,
                                        const char *file, int line) {
    double err = fabs(actual - expected);
    double rel = expected != 0 ? err / fabs(expected) : err;
    /* NaN on either side never compares close. */
    if (err <= rel_tol * fabs(expected) || (actual == expected)) return;
    print_error("%s: actual %.17g, expected %.17g: relative error %.3g "
                "exceeds %.3g\n",
                what, actual, expected, rel, rel_tol);
    _fail(file, line);
}

#define assert_close(actual, expected, rel_tol)                                \
    pp_test_assert_close((double)(actual), (double)(expected),                 \
                         (double)(rel_tol), #actual, __FILE__, __LINE__)

#define skip_because(reason)                                                   \
    do {                                                                       \
        printf("SKIP: %s\n", (reason));                                        \
        fflush(stdout);                                                        \
        exit(77);                                                              \
    } while (0)

#endif
