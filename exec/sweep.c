/*
 * sweep.c: what every timed sweep shares: the clock, the statistics of
 * the samples, the --m/--n/--k size lists, and how many buffer sets to
 * rotate.
 */
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm_int.h"

/* The one clock of exec: timed loops and every transport deadline. */
double pp_exec_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pp_exec_quantile(const double *sorted, size_t n, double p) {
    if (n == 1) return sorted[0];
    if (p <= 0) return sorted[0];
    if (p >= 1) return sorted[n - 1];
    double r = p * (double)(n - 1);
    size_t i = (size_t)r;
    double f = r - (double)i;
    if (i + 1 >= n) return sorted[n - 1];
    return sorted[i] + f * (sorted[i + 1] - sorted[i]);
}

int pp_exec_stats_compute(double *samples, size_t n, pp_exec_stats *out,
                          pp_error *e) {
    if (n == 0) return pp_error_set(e, PP_EINVAL, "statistics of no samples");
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(samples[i]))
            return pp_error_set(e, PP_EINVAL, "sample %zu is not finite", i);
        sum += samples[i];
    }
    qsort(samples, n, sizeof *samples, cmp_double);
    pp_exec_stats s;
    memset(&s, 0, sizeof s);
    s.n = n;
    s.mean = sum / (double)n;
    double var = 0;
    for (size_t i = 0; i < n; i++)
        var += (samples[i] - s.mean) * (samples[i] - s.mean);
    s.cv = n > 1 && s.mean > 0 ? sqrt(var / (double)n) / s.mean : 0;
    s.min = samples[0];
    s.max = samples[n - 1];
    s.median = pp_exec_quantile(samples, n, 0.5);
    s.p10 = pp_exec_quantile(samples, n, 0.1);
    s.p90 = pp_exec_quantile(samples, n, 0.9);
    *out = s;
    return 0;
}

/* A positive integer of at most 2^31 - 1 (cuBLAS takes 32-bit sizes for
 * most dimensions): 0 or -1. */
static int parse_pos(const char *t, size_t len, int64_t *out) {
    char buf[32];
    if (len == 0 || len >= sizeof buf) return -1;
    memcpy(buf, t, len);
    buf[len] = '\0';
    for (size_t i = 0; i < len; i++)
        if (buf[i] < '0' || buf[i] > '9') return -1;
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    if (errno || v < 1 || v > 2147483647LL) return -1;
    *out = v;
    return 0;
}

/* One comma-separated item: "N" or "lo:hi:xF" / "lo:hi:+S". */
static int parse_item(const char *t, size_t len, const char *what, int64_t *out,
                      size_t max, size_t *n, pp_error *e) {
    const char *c1 = memchr(t, ':', len);
    int64_t lo, hi, step;
    if (!c1) {
        if (parse_pos(t, len, &lo))
            return pp_error_set(e, PP_EUSAGE,
                                "%s: expected a positive integer or a range "
                                "lo:hi:xF / lo:hi:+S, got \"%.*s\"",
                                what, (int)len, t);
        if (*n == max) goto too_many;
        out[(*n)++] = lo;
        return 0;
    }
    const char *c2 = memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - t));
    const char *end = t + len;
    if (!c2 || c2 + 1 >= end || (c2[1] != 'x' && c2[1] != '+') ||
        parse_pos(t, (size_t)(c1 - t), &lo) ||
        parse_pos(c1 + 1, (size_t)(c2 - c1 - 1), &hi) ||
        parse_pos(c2 + 2, (size_t)(end - c2 - 2), &step))
        return pp_error_set(e, PP_EUSAGE,
                            "%s: bad range \"%.*s\": expected lo:hi:xF "
                            "(1024:8192:x2) or lo:hi:+S (1024:4096:+1024)",
                            what, (int)len, t);
    bool mul = c2[1] == 'x';
    if (hi < lo || (mul && step < 2))
        return pp_error_set(
            e, PP_EUSAGE, "%s: bad range \"%.*s\": %s", what, (int)len, t,
            hi < lo ? "hi is below lo" : "the factor must be at least 2");
    for (int64_t v = lo; v <= hi; v = mul ? v * step : v + step) {
        if (*n == max) goto too_many;
        out[(*n)++] = v;
    }
    return 0;
too_many:
    return pp_error_set(e, PP_ERANGE, "%s: more than %zu sizes", what, max);
}

int pp_exec_parse_dims(const char *text, const char *what, int64_t *out,
                       size_t max, size_t *n, pp_error *e) {
    size_t k = 0;
    if (!text || !*text)
        return pp_error_set(e, PP_EUSAGE, "%s: empty list", what);
    int64_t *tmp = pp_xmalloc((max ? max : 1) * sizeof *tmp);
    const char *p = text;
    int rc = 0;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if ((rc = parse_item(p, len, what, tmp, max, &k, e)) < 0) break;
        if (!c) break;
        p = c + 1;
    }
    if (rc == 0) {
        memcpy(out, tmp, k * sizeof *tmp);
        *n = k;
    }
    free(tmp);
    return rc;
}

int pp__rotate_sets(double set_bytes, double cache_bytes, double budget,
                    int max_sets) {
    if (set_bytes <= 0) return 1;
    int sets = 1;
    while (sets < max_sets && set_bytes * sets < 2.0 * cache_bytes &&
           set_bytes * (sets + 1) <= budget)
        sets++;
    return sets;
}

/* Seconds with the unit a reader wants: "812.3us", "16.19ms", "7.132s". */
const char *pp__fmt_s(double t, char *buf, size_t len) {
    if (t < 1e-3)
        snprintf(buf, len, "%.1fus", t * 1e6);
    else if (t < 1)
        snprintf(buf, len, "%.2fms", t * 1e3);
    else
        snprintf(buf, len, "%.3fs", t);
    return buf;
}
