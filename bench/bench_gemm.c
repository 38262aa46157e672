/*
 * bench_gemm.c: what `exec gemm --backend cpu` costs over calling the
 * BLAS directly.  For each shape: exec's path (rotated buffers, one
 * clock_gettime pair per call, the median) against cblas_sgemm called
 * back to back on one warm set of buffers, best of the same number of
 * runs -- the BLAS at its best.  The ratio should be near 1 for shapes
 * that outgrow the cache and may fall below it for small ones, where the
 * rotation (deliberately) takes away the warm cache.
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "podplan/exec.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* cblas_sgemm back to back on one warm set: median and best seconds. */
static void direct(int64_t m, int64_t n, int64_t k, int iters, double *med,
                   double *best) {
    float *a = malloc((size_t)(m * k) * sizeof *a);
    float *w = malloc((size_t)(n * k) * sizeof *w);
    float *c = malloc((size_t)(m * n) * sizeof *c);
    for (int64_t i = 0; i < m * k; i++) a[i] = (float)(i % 13) / 13.0f - 0.5f;
    for (int64_t i = 0; i < n * k; i++) w[i] = (float)(i % 7) / 7.0f - 0.5f;
    double *t = malloc((size_t)iters * sizeof *t);
    for (int it = 0; it < iters + 3; it++) {
        double t0 = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n,
                    (int)k, 1.0f, a, (int)k, w, (int)k, 0.0f, c, (int)n);
        if (it >= 3) t[it - 3] = now_s() - t0;
    }
    pp_exec_stats s;
    pp_exec_stats_compute(t, (size_t)iters, &s, NULL);
    *med = s.median;
    *best = s.min;
    free(t);
    free(a);
    free(w);
    free(c);
}

int main(void) {
    static const int64_t shapes[][3] = {
        {128, 128, 128},    {256, 256, 256},    {512, 512, 512},
        {1024, 1024, 1024}, {2048, 2048, 2048}, {2048, 1536, 768},
    };
    pp_exec_device dev;
    pp_error e = PP_ERROR_INIT;
    if (pp_exec_device_info(PP_EXEC_CPU, 0, 0, &dev, &e)) {
        fprintf(stderr, "bench_gemm: %s\n", e.msg);
        return 1;
    }
    printf("bench_gemm: %s, %d OpenBLAS threads\n", dev.name, dev.threads);
    printf("TFLOP/s from the median and (best) time of each path; ratio = "
           "exec / direct\n");
    printf("%6s %6s %6s %5s %4s %9s %9s %9s %9s %6s %6s\n", "m", "n", "k",
           "iters", "sets", "exec", "(best)", "direct", "(best)", "ratio",
           "(best)");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
        double fl = 2.0 * (double)m * (double)n * (double)k;
        /* About a second of work per side at ~50 GFLOP/s. */
        int iters = (int)fmin(100, fmax(5, 5e10 / fl));
        pp_exec_gemm_opts o;
        pp_exec_gemm_opts_init(&o, PP_EXEC_CPU);
        o.iters = iters;
        o.warmup = 3;
        o.check = false;
        pp_gemm_shape s = {"", 1, m, n, k, false};
        pp_exec_gemm_result r;
        if (pp_exec_gemm_run(&o, &s, &r, &e)) {
            fprintf(stderr, "bench_gemm: %s\n", e.msg);
            return 1;
        }
        double med, best;
        direct(m, n, k, iters, &med, &best);
        printf("%6lld %6lld %6lld %5d %4d %9.4f %9.4f %9.4f %9.4f %6.2f "
               "%6.2f\n",
               (long long)m, (long long)n, (long long)k, iters, r.buffers,
               fl / r.time.median / 1e12, fl / r.time.min / 1e12,
               fl / med / 1e12, fl / best / 1e12, med / r.time.median,
               best / r.time.min);
    }
    return 0;
}
