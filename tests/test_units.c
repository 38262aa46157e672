/*
 * test_units.c: pp_unit_parse, pp_unit_format, pp_qkind_name.
 *
 * Values are compared exactly (==) where the parser promises exactness: a
 * decimal prefix must not cost a rounding step ("1.5us" is the double
 * nearest 1.5e-6, not 1.5 * 1e-6).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "podplan/common.h"

#define SENTINEL 12345.678

static void parses_to(const char *text, pp_qkind kind, const char *def,
                      double want) {
    double got = SENTINEL;
    char why[256] = "";
    int rc = pp_unit_parse(text, kind, def, &got, why, sizeof why);
    if (rc != 0) {
        print_error("\"%s\" (%s): rc %d: %s\n", text, pp_qkind_name(kind), rc,
                    why);
        fail();
    }
    if (got != want) {
        print_error("\"%s\" (%s): got %.17g, want %.17g\n", text,
                    pp_qkind_name(kind), got, want);
        fail();
    }
}

/* Expects a refusal whose reason contains `needle`, with *out untouched. */
static void refuses(const char *text, pp_qkind kind, const char *def,
                    const char *needle) {
    double got = SENTINEL;
    char why[256] = "x"; /* must be overwritten */
    int rc = pp_unit_parse(text, kind, def, &got, why, sizeof why);
    if (rc != PP_EINPUT || got != SENTINEL || why[0] == '\0' ||
        strcmp(why, "x") == 0 || (needle && !strstr(why, needle))) {
        print_error("\"%s\" (%s): rc %d, out %.17g, why \"%s\"; wanted "
                    "PP_EINPUT with \"%s\"\n",
                    text, pp_qkind_name(kind), rc, got, why,
                    needle ? needle : "");
        fail();
    }
}

static void test_parse_count(void **state) {
    (void)state;
    parses_to("300G", PP_Q_COUNT, NULL, 3e11);
    parses_to("300e9", PP_Q_COUNT, NULL, 3e11);
    parses_to("1.5k", PP_Q_COUNT, NULL, 1.5e3);
    parses_to("2K", PP_Q_COUNT, NULL, 2e3);
    parses_to("7M", PP_Q_COUNT, NULL, 7e6);
    parses_to("1.2T", PP_Q_COUNT, NULL, 1.2e12);
    parses_to("3P", PP_Q_COUNT, NULL, 3e15);
    parses_to("42", PP_Q_COUNT, NULL, 42);
    parses_to(".5", PP_Q_COUNT, NULL, 0.5);
    parses_to("5.", PP_Q_COUNT, NULL, 5);
    parses_to("-3", PP_Q_COUNT, NULL, -3); /* callers check ranges */
    parses_to("+1E3", PP_Q_COUNT, NULL, 1e3);
    parses_to("  300 G  ", PP_Q_COUNT, NULL, 3e11);
    parses_to("4", PP_Q_COUNT, "G", 4e9);
}

static void test_parse_bytes(void **state) {
    (void)state;
    parses_to("80GiB", PP_Q_BYTES, NULL, 85899345920.0);
    parses_to("1B", PP_Q_BYTES, NULL, 1);
    parses_to("1.5kB", PP_Q_BYTES, NULL, 1500);
    parses_to("3MB", PP_Q_BYTES, NULL, 3e6);
    parses_to("80GB", PP_Q_BYTES, NULL, 80e9);
    parses_to("2.5TB", PP_Q_BYTES, NULL, 2.5e12);
    parses_to("1PB", PP_Q_BYTES, NULL, 1e15);
    parses_to("1KiB", PP_Q_BYTES, NULL, 1024);
    parses_to("1.5MiB", PP_Q_BYTES, NULL, 1572864);
    parses_to("2TiB", PP_Q_BYTES, NULL, 2199023255552.0);
    parses_to("1PiB", PP_Q_BYTES, NULL, 1125899906842624.0);
    parses_to("80 GiB", PP_Q_BYTES, NULL, 85899345920.0);
    parses_to("4096", PP_Q_BYTES, "B", 4096);
    parses_to("16", PP_Q_BYTES, "GiB", 17179869184.0);
}

static void test_parse_bandwidth(void **state) {
    (void)state;
    parses_to("10Gbps", PP_Q_BANDWIDTH, NULL, 1.25e9);
    parses_to("200Gbps", PP_Q_BANDWIDTH, NULL, 25e9);
    parses_to("200 Gbps", PP_Q_BANDWIDTH, NULL, 25e9);
    parses_to("8bps", PP_Q_BANDWIDTH, NULL, 1);
    parses_to("8kbps", PP_Q_BANDWIDTH, NULL, 1e3);
    parses_to("8Kbps", PP_Q_BANDWIDTH, NULL, 1e3);
    parses_to("100Mbps", PP_Q_BANDWIDTH, NULL, 12.5e6);
    parses_to("1.6Tbps", PP_Q_BANDWIDTH, NULL, 2e11);
    parses_to("8Kb/s", PP_Q_BANDWIDTH, NULL, 1e3);
    parses_to("8Mb/s", PP_Q_BANDWIDTH, NULL, 1e6);
    parses_to("400Gb/s", PP_Q_BANDWIDTH, NULL, 50e9);
    parses_to("8Tb/s", PP_Q_BANDWIDTH, NULL, 1e12);
    parses_to("8kbit/s", PP_Q_BANDWIDTH, NULL, 1e3);
    parses_to("8Mbit/s", PP_Q_BANDWIDTH, NULL, 1e6);
    parses_to("800Gbit/s", PP_Q_BANDWIDTH, NULL, 100e9);
    parses_to("1.6Tbit/s", PP_Q_BANDWIDTH, NULL, 2e11);
    parses_to("5B/s", PP_Q_BANDWIDTH, NULL, 5);
    parses_to("5kB/s", PP_Q_BANDWIDTH, NULL, 5e3);
    parses_to("5MB/s", PP_Q_BANDWIDTH, NULL, 5e6);
    parses_to("25GB/s", PP_Q_BANDWIDTH, NULL, 25e9);
    parses_to("0.9TB/s", PP_Q_BANDWIDTH, NULL, 0.9e12);
    parses_to("1KiB/s", PP_Q_BANDWIDTH, NULL, 1024);
    parses_to("1MiB/s", PP_Q_BANDWIDTH, NULL, 1048576);
    parses_to("1GiB/s", PP_Q_BANDWIDTH, NULL, 1073741824.0);
    parses_to("1TiB/s", PP_Q_BANDWIDTH, NULL, 1099511627776.0);
    parses_to("200", PP_Q_BANDWIDTH, "Gbps", 25e9);
    parses_to("25", PP_Q_BANDWIDTH, "GB/s", 25e9);
}

static void test_parse_flops(void **state) {
    (void)state;
    parses_to("1FLOP", PP_Q_FLOPS, NULL, 1);
    parses_to("2kFLOP", PP_Q_FLOPS, NULL, 2e3);
    parses_to("2MFLOP", PP_Q_FLOPS, NULL, 2e6);
    parses_to("2GFLOP", PP_Q_FLOPS, NULL, 2e9);
    parses_to("2TFLOP", PP_Q_FLOPS, NULL, 2e12);
    parses_to("2PFLOP", PP_Q_FLOPS, NULL, 2e15);
    parses_to("3.14EFLOP", PP_Q_FLOPS, NULL, 3.14e18);
    parses_to("1.5ZFLOP", PP_Q_FLOPS, NULL, 1.5e21);
    parses_to("3e18 FLOPs", PP_Q_FLOPS, NULL, 3e18);
    parses_to("3e18FLOP", PP_Q_FLOPS, NULL, 3e18);
    parses_to("5TFLOPs", PP_Q_FLOPS, NULL, 5e12);
    parses_to("3.15e23", PP_Q_FLOPS, "FLOP", 3.15e23);

    parses_to("312TFLOPS", PP_Q_FLOPRATE, NULL, 3.12e14);
    parses_to("312TFLOP/s", PP_Q_FLOPRATE, NULL, 3.12e14);
    parses_to("7FLOPS", PP_Q_FLOPRATE, NULL, 7);
    parses_to("7FLOP/s", PP_Q_FLOPRATE, NULL, 7);
    parses_to("7kFLOPS", PP_Q_FLOPRATE, NULL, 7e3);
    parses_to("7MFLOPS", PP_Q_FLOPRATE, NULL, 7e6);
    parses_to("19.5GFLOPS", PP_Q_FLOPRATE, NULL, 19.5e9);
    parses_to("1.98PFLOPS", PP_Q_FLOPRATE, NULL, 1.98e15);
    parses_to("1.98PFLOP/s", PP_Q_FLOPRATE, NULL, 1.98e15);
    parses_to("1.1EFLOPS", PP_Q_FLOPRATE, NULL, 1.1e18);
    parses_to("1.1EFLOP/s", PP_Q_FLOPRATE, NULL, 1.1e18);
    parses_to("989", PP_Q_FLOPRATE, "TFLOPS", 9.89e14);
}

static void test_parse_time_ratio(void **state) {
    (void)state;
    parses_to("1.5us", PP_Q_TIME, NULL, 1.5e-6);
    parses_to("1.5\xc2\xb5s", PP_Q_TIME, NULL, 1.5e-6);
    parses_to("0.1ns", PP_Q_TIME, NULL, 1e-10);
    parses_to("700ns", PP_Q_TIME, NULL, 700e-9);
    parses_to("2.5ms", PP_Q_TIME, NULL, 2.5e-3);
    parses_to("3s", PP_Q_TIME, NULL, 3);
    parses_to("1.5min", PP_Q_TIME, NULL, 90);
    parses_to("1.5h", PP_Q_TIME, NULL, 5400);
    parses_to("2d", PP_Q_TIME, NULL, 172800);
    parses_to("5", PP_Q_TIME, "us", 5e-6);

    parses_to("2:1", PP_Q_RATIO, NULL, 2.0);
    parses_to("1:1", PP_Q_RATIO, NULL, 1.0);
    parses_to("3:2", PP_Q_RATIO, NULL, 1.5);
    parses_to(" 3 : 2 ", PP_Q_RATIO, NULL, 1.5);
    parses_to("2", PP_Q_RATIO, NULL, 2.0);
    parses_to("1.5", PP_Q_RATIO, NULL, 1.5);
}

static void test_parse_errors(void **state) {
    (void)state;
    refuses("200GB", PP_Q_BANDWIDTH, NULL, "got a byte size");
    refuses("200GB", PP_Q_BANDWIDTH, NULL, "200Gbps or 25GB/s");
    refuses("200Gb", PP_Q_BANDWIDTH, NULL,
            "got a bit count; did you mean 200Gbps?");
    refuses("80Gb", PP_Q_BYTES, NULL, "\"Gb\" is bits");
    refuses("80Gb", PP_Q_BYTES, NULL, "80GB or 80GiB");
    refuses("80gb", PP_Q_BYTES, NULL, "unknown unit \"gb\"");
    refuses("4KB", PP_Q_BYTES, NULL, "KiB");
    refuses("4KB", PP_Q_BYTES, NULL, "kB");
    refuses("4KB/s", PP_Q_BANDWIDTH, NULL, "ambiguous");
    /* "B" is billions on a count (175B parameters) and bytes on a size;
     * every other byte unit stays refused on a count. */
    parses_to("300B", PP_Q_COUNT, NULL, 300e9);
    parses_to("175B", PP_Q_COUNT, NULL, 175e9);
    parses_to("300B", PP_Q_BYTES, NULL, 300);
    refuses("300GB", PP_Q_COUNT, NULL,
            "expected a count such as 300e9, 300G or 300B (\"GB\" is not "
            "a count suffix)");
    refuses("300b", PP_Q_COUNT, NULL, "\"b\" is not a count suffix");
    refuses("25GBps", PP_Q_BANDWIDTH, NULL, "ambiguous");
    refuses("25GBps", PP_Q_BANDWIDTH, NULL, "GB/s");
    refuses("312TFLOPs", PP_Q_FLOPRATE, NULL,
            "write TFLOPS or TFLOP/s for a rate");
    refuses("312TFLOP", PP_Q_FLOPRATE, NULL, "got a FLOP count");
    refuses("3EFLOPS", PP_Q_FLOPS, NULL, "got a FLOP rate");
    refuses("200", PP_Q_BANDWIDTH, NULL,
            "a bandwidth needs a unit, such as 200Gbps or 25GB/s");
    refuses("80", PP_Q_BYTES, NULL, "needs a unit");
    refuses("3e18", PP_Q_FLOPS, NULL, "needs a unit");
    refuses("5", PP_Q_TIME, NULL, "needs a unit");
    refuses("200", PP_Q_BANDWIDTH, "GB", "default unit");
    refuses("5s", PP_Q_BYTES, NULL, "got a time");
    refuses("5ms", PP_Q_COUNT, NULL, "not a count suffix");
    refuses("", PP_Q_COUNT, NULL, "empty");
    refuses("   ", PP_Q_BYTES, NULL, "empty");
    refuses("abc", PP_Q_COUNT, NULL, NULL);
    refuses("abc", PP_Q_BYTES, NULL, NULL);
    refuses("1e999", PP_Q_COUNT, NULL, "out of range");
    refuses("1e-999", PP_Q_TIME, "s", "out of range");
    refuses("1e308PiB", PP_Q_BYTES, NULL, "out of range");
    refuses("nan", PP_Q_COUNT, NULL, NULL);
    refuses("inf", PP_Q_COUNT, NULL, NULL);
    refuses("-inf", PP_Q_TIME, "s", NULL);
    refuses("0x10", PP_Q_COUNT, NULL, "hexadecimal");
    refuses("-", PP_Q_COUNT, NULL, NULL);
    refuses(".", PP_Q_COUNT, NULL, NULL);
    refuses("1e", PP_Q_COUNT, NULL, NULL);
    refuses("1.2.3", PP_Q_COUNT, NULL, NULL);
    refuses("5 5GB", PP_Q_BYTES, NULL, NULL);
    refuses("2:0", PP_Q_RATIO, NULL, "positive");
    refuses("0:1", PP_Q_RATIO, NULL, "positive");
    refuses("-2:1", PP_Q_RATIO, NULL, "positive");
    refuses("2:", PP_Q_RATIO, NULL, NULL);
    refuses("2:1:1", PP_Q_RATIO, NULL, NULL);
    refuses("2x", PP_Q_RATIO, NULL, NULL);
    refuses("2:1", PP_Q_COUNT, NULL, NULL);

    /* a number too long to convert exactly is refused, not truncated */
    char longnum[420];
    memset(longnum, '1', 400);
    strcpy(longnum + 400, "B");
    refuses(longnum, PP_Q_BYTES, NULL, "digits");
}

/* why may be NULL, and a short buffer is truncated but NUL-terminated. */
static void test_why_buffer(void **state) {
    (void)state;
    double v = SENTINEL;
    assert_int_equal(pp_unit_parse("200GB", PP_Q_BANDWIDTH, NULL, &v, NULL, 0),
                     PP_EINPUT);
    assert_true(v == SENTINEL);
    char why[8];
    memset(why, 'z', sizeof why);
    assert_int_equal(
        pp_unit_parse("200GB", PP_Q_BANDWIDTH, NULL, &v, why, sizeof why),
        PP_EINPUT);
    assert_int_equal(strlen(why), sizeof why - 1);
    assert_true(v == SENTINEL);
    /* success clears a stale reason */
    strcpy(why, "stale");
    assert_int_equal(pp_unit_parse("1B", PP_Q_BYTES, NULL, &v, why, sizeof why),
                     0);
    assert_string_equal(why, "");
    assert_true(v == 1);
}

static void formats_as(double v, pp_qkind kind, int digits, const char *want) {
    char buf[64];
    assert_ptr_equal(pp_unit_format(v, kind, digits, buf, sizeof buf), buf);
    if (strcmp(buf, want) != 0) {
        print_error("format(%.17g, %s, %d) = \"%s\", want \"%s\"\n", v,
                    pp_qkind_name(kind), digits, buf, want);
        fail();
    }
}

static void test_format(void **state) {
    (void)state;
    formats_as(85899345920.0, PP_Q_BYTES, 6, "80GiB");
    formats_as(80e9, PP_Q_BYTES, 6, "80GB");
    formats_as(1024, PP_Q_BYTES, 6, "1KiB");
    formats_as(2048000, PP_Q_BYTES, 6, "2.048MB"); /* 1000- and 1024-ish */
    formats_as(1536, PP_Q_BYTES, 6, "1.536kB");
    formats_as(999999, PP_Q_BYTES, 3, "1MB"); /* rounds up a prefix */
    formats_as(0, PP_Q_BYTES, 6, "0B");
    formats_as(25e9, PP_Q_BANDWIDTH, 6, "200Gbps");
    formats_as(2e11, PP_Q_BANDWIDTH, 6, "1.6Tbps");
    formats_as(1.25e9, PP_Q_BANDWIDTH, 6, "10Gbps");
    formats_as(0, PP_Q_BANDWIDTH, 6, "0bps");
    formats_as(3.007e18, PP_Q_FLOPS, 4, "3.007EFLOP");
    formats_as(3.12e14, PP_Q_FLOPRATE, 6, "312TFLOPS");
    formats_as(1.5e-6, PP_Q_TIME, 6, "1.5us");
    formats_as(0.02, PP_Q_TIME, 6, "20ms");
    formats_as(30, PP_Q_TIME, 6, "30s");
    formats_as(90, PP_Q_TIME, 6, "1.5min");
    formats_as(5400, PP_Q_TIME, 6, "1.5h");
    formats_as(33.4 * 86400, PP_Q_TIME, 3, "33.4d");
    formats_as(2.0, PP_Q_RATIO, 6, "2:1");
    formats_as(1.5, PP_Q_RATIO, 6, "1.5:1");
    formats_as(3e11, PP_Q_COUNT, 6, "3e+11");
    formats_as(1536, PP_Q_COUNT, 6, "1536");
    formats_as(-25e9, PP_Q_BANDWIDTH, 6, "-200Gbps");
    formats_as(1e-12, PP_Q_TIME, 6, "0.001ns");    /* below the last unit */
    formats_as(1e30, PP_Q_FLOPS, 6, "1e+09ZFLOP"); /* above the first: %g */
    formats_as(1e-5, PP_Q_BYTES, 6, "1e-05B");
    formats_as(1.1e18, PP_Q_FLOPRATE, 17,
               "1.1EFLOPS"); /* no 1.1000000000000001 */

    char small[4];
    pp_unit_format(85899345920.0, PP_Q_BYTES, 6, small, sizeof small);
    assert_string_equal(small, "80G");
}

/* parse(format(x)) == x to the printed precision, for values spread over
 * every unit of every kind, at several precisions. */
static void test_round_trip(void **state) {
    (void)state;
    static const struct {
        pp_qkind kind;
        double v[24];
    } cases[] = {
        {PP_Q_COUNT, {1, 42, 1536, 3e11, 1.5e3, 0.25, 123456789, -7, 1e300}},
        {PP_Q_BYTES,
         {1,
          999,
          1000,
          1024,
          1536,
          1.5e6,
          2048000,
          1048576,
          80e9,
          85899345920.0,
          3.3e12,
          1099511627776.0,
          7e15,
          1125899906842624.0,
          1e18,
          0.5,
          123456789012.0,
          999999,
          0x1p60,
          1e-5,
          1e25}},
        {PP_Q_BANDWIDTH,
         {1, 12.5, 125, 1.25e5, 1.25e8, 1.25e9, 25e9, 50e9, 2e11, 1.25e12, 4e14,
          900e9, 1024, 1073741824.0, 0.1, 3.3e15, -25e9}},
        {PP_Q_FLOPS,
         {1, 500, 2e3, 2e6, 2e9, 2e12, 2e15, 3.007e18, 3.15e23, 1.5e21, 6.2e25,
          0.5, 1e30}},
        {PP_Q_FLOPRATE,
         {1, 7e3, 7e6, 19.5e9, 3.12e14, 9.89e14, 1.98e15, 1.1e18, 4.4e20, 0.5}},
        {PP_Q_TIME, {1e-10, 7e-9,   1.5e-6, 2.5e-3, 0.02,  1,      59.99,
                     60,    90,     3599,   3600,   5400,  86399,  86400,
                     2.9e6, 3.15e7, 1e-3,   1e-12,  -4e-4, 1.0 / 3}},
        {PP_Q_RATIO, {1, 2, 1.5, 4, 0.5, 1.0 / 3, 100, 1e-3}},
    };
    static const int digits[] = {3, 4, 6, 10, 17};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (size_t i = 0; cases[c].v[i] != 0; i++) {
            for (size_t d = 0; d < sizeof digits / sizeof digits[0]; d++) {
                double x = cases[c].v[i], y = SENTINEL;
                char buf[64], why[256] = "";
                pp_unit_format(x, cases[c].kind, digits[d], buf, sizeof buf);
                int rc = pp_unit_parse(buf, cases[c].kind, NULL, &y, why,
                                       sizeof why);
                double tol = pow(10, -(digits[d] - 1)) * fabs(x);
                /* At 17 digits a double prints exactly; only min, h and d
                 * (dividing by 60, 3600, 86400) may cost an ulp. */
                if (digits[d] == 17)
                    tol = cases[c].kind == PP_Q_TIME && fabs(x) >= 60
                              ? 2 * DBL_EPSILON * fabs(x)
                              : 0;
                if (rc != 0 || !(fabs(y - x) <= tol)) {
                    print_error("%s %.17g at %d digits: \"%s\" -> rc %d "
                                "%.17g (%s)\n",
                                pp_qkind_name(cases[c].kind), x, digits[d], buf,
                                rc, y, why);
                    fail();
                }
            }
        }
    }
    /* zero prints in the base unit and parses back */
    for (int k = 0; k < PP_Q__COUNT; k++) {
        char buf[64];
        double y = SENTINEL;
        pp_unit_format(0, (pp_qkind)k, 6, buf, sizeof buf);
        assert_int_equal(pp_unit_parse(buf, (pp_qkind)k, NULL, &y, NULL, 0), 0);
        assert_true(y == 0);
    }
}

static void test_kind_names(void **state) {
    (void)state;
    for (int a = 0; a < PP_Q__COUNT; a++) {
        const char *na = pp_qkind_name((pp_qkind)a);
        assert_non_null(na);
        assert_memory_equal(na, "a ", 2); /* getters print name + 2 */
        for (int b = a + 1; b < PP_Q__COUNT; b++)
            assert_string_not_equal(na, pp_qkind_name((pp_qkind)b));
    }
    assert_string_equal(pp_qkind_name(PP_Q_BANDWIDTH), "a bandwidth");
    assert_string_equal(pp_qkind_name(PP_Q_BYTES), "a byte size");
    assert_non_null(pp_qkind_name(PP_Q__COUNT));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_count),
        cmocka_unit_test(test_parse_bytes),
        cmocka_unit_test(test_parse_bandwidth),
        cmocka_unit_test(test_parse_flops),
        cmocka_unit_test(test_parse_time_ratio),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_why_buffer),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_kind_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
