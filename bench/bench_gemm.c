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

static double direct_best(int64_t m, int64_t n, int64_t k, int iters) {
    float *a = malloc((size_t)(m * k) * sizeof *a);
    float *w = malloc((size_t)(n * k) * sizeof *w);
    float *c = malloc((size_t)(m * n) * sizeof *c);
    for (int64_t i = 0; i < m * k; i++) a[i] = (float)(i % 13) / 13.0f - 0.5f;
    for (int64_t i = 0; i < n * k; i++) w[i] = (float)(i % 7) / 7.0f - 0.5f;
    double best = INFINITY;
    for (int it = 0; it < iters + 3; it++) {
        double t0 = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n,
                    (int)k, 1.0f, a, (int)k, w, (int)k, 0.0f, c, (int)n);
        double t = now_s() - t0;
        if (it >= 3 && t < best) best = t;
    }
    free(a);
    free(w);
    free(c);
    return best;
}

int main(void) {
    static const int64_t shapes[][3] = {
        {128, 128, 128}, {256, 256, 256}, {512, 512, 512},
        {1024, 1024, 1024}, {2048, 2048, 2048}, {2048, 1536, 768},
    };
    pp_exec_device dev;
    pp_error e = PP_ERROR_INIT;
    if (pp_exec_device_info(PP_EXEC_CPU, 0, 0, &dev, &e)) {
        fprintf(stderr, "bench_gemm: %s\n", e.msg);
        return 1;
    }
    printf("bench_gemm: %s, %d OpenBLAS threads\n", dev.name, dev.threads);
    printf("%6s %6s %6s %6s %12s %12s %12s %7s %5s\n", "m", "n", "k", "iters",
           "exec median", "exec TF/s", "direct TF/s", "ratio", "sets");
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
        pp_gemm_shape s = {"", 1, m, n, k};
        pp_exec_gemm_result r;
        if (pp_exec_gemm_run(&o, &s, &r, &e)) {
            fprintf(stderr, "bench_gemm: %s\n", e.msg);
            return 1;
        }
        double best = direct_best(m, n, k, iters);
        printf("%6lld %6lld %6lld %6d %10.3fms %12.4f %12.4f %7.2f %5d\n",
               (long long)m, (long long)n, (long long)k, iters,
               r.time.median * 1e3, r.flops_per_s / 1e12, fl / best / 1e12,
               (r.flops_per_s) / (fl / best), r.buffers);
    }
    return 0;
}
