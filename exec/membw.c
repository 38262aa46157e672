/*
 * membw.c: STREAM copy and triad (McCalpin), on the host and, through
 * cuda_rt.cu, on a GPU.
 *
 * Host arrays are doubles, as in STREAM; several threads each take a
 * contiguous slice and meet at a barrier around every iteration, so one
 * sample is the time the slowest thread took.  Threads are started once,
 * not per iteration: at small sizes a thread start would be most of the
 * time.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm_int.h"

const char *const pp_membw_kind_names[] = {"copy", "triad", "memcpy", NULL};

typedef struct host_job {
    pp_membw_kind kind;
    double *a, *b, *c;
    size_t count;
    int threads, iters;
    pthread_barrier_t start, done;
} host_job;

typedef struct worker {
    host_job *job;
    int id;
} worker;

static void slice(const host_job *j, int id, size_t *lo, size_t *hi) {
    size_t per = j->count / (size_t)j->threads;
    *lo = per * (size_t)id;
    *hi = id == j->threads - 1 ? j->count : *lo + per;
}

static void kernel(host_job *j, int id) {
    size_t lo, hi;
    slice(j, id, &lo, &hi);
    double *restrict a = j->a, *restrict b = j->b, *restrict c = j->c;
    const double s = 3.0;
    switch (j->kind) {
    case PP_MEMBW_COPY:
        for (size_t i = lo; i < hi; i++) c[i] = a[i];
        break;
    case PP_MEMBW_TRIAD:
        for (size_t i = lo; i < hi; i++) a[i] = b[i] + s * c[i];
        break;
    default: memcpy(c + lo, a + lo, (hi - lo) * sizeof *a); break;
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    host_job *j = w->job;
    for (int it = 0; it < j->iters; it++) {
        pthread_barrier_wait(&j->start);
        kernel(j, w->id);
        pthread_barrier_wait(&j->done);
    }
    return NULL;
}

static int host_run(pp_membw_kind kind, size_t bytes, int iters, int threads,
                    double *samples, pp_error *e) {
    host_job j;
    memset(&j, 0, sizeof j);
    j.kind = kind;
    j.count = bytes / sizeof(double);
    j.threads = threads;
    j.iters = iters + 2; /* two warm-ups: first touch, then the caches */
    j.a = malloc(bytes);
    j.b = malloc(bytes);
    j.c = malloc(bytes);
    pthread_t tid[256];
    worker w[256];
    int started = 0, rc = 0;
    if (!j.a || !j.b || !j.c) {
        rc = pp_error_set(e, PP_ENOMEM, "membw: cannot allocate 3 x %zu bytes",
                          bytes);
        goto out;
    }
    /* STREAM's non-zero values; this loop and the warm-ups fault every
     * page in before timing starts. */
    for (size_t i = 0; i < j.count; i++) {
        j.a[i] = 1.0;
        j.b[i] = 2.0;
        j.c[i] = 0.5;
    }
    pthread_barrier_init(&j.start, NULL, (unsigned)threads);
    pthread_barrier_init(&j.done, NULL, (unsigned)threads);
    for (int t = 1; t < threads; t++) {
        w[t].job = &j;
        w[t].id = t;
        if (pthread_create(&tid[t], NULL, worker_main, &w[t]) != 0) {
            rc = pp_error_set(e, PP_EFAIL, "membw: cannot start thread %d", t);
            /* Let the started ones finish their iterations alone. */
            threads = t;
            break;
        }
        started++;
    }
    if (rc == 0) {
        for (int it = 0; it < j.iters; it++) {
            pthread_barrier_wait(&j.start);
            double t0 = pp_exec_now();
            kernel(&j, 0);
            pthread_barrier_wait(&j.done);
            double t1 = pp_exec_now();
            if (it >= 2) samples[it - 2] = t1 - t0;
        }
    }
    for (int t = 1; t <= started; t++) pthread_join(tid[t], NULL);
    pthread_barrier_destroy(&j.start);
    pthread_barrier_destroy(&j.done);
out:
    free(j.a);
    free(j.b);
    free(j.c);
    return rc;
}

int pp_exec_membw_run(pp_exec_backend where, pp_membw_kind kind,
                      size_t array_bytes, int iters, int threads, int device,
                      pp_exec_membw_result *out, pp_error *e) {
    array_bytes &= ~(size_t)15;
    if (array_bytes < 16 * (size_t)(threads > 0 ? threads : 1))
        return pp_error_set(e, PP_EINVAL,
                            "membw: arrays of %zu bytes are "
                            "too small",
                            array_bytes);
    if (iters < 1 || threads < 1 || threads > 256)
        return pp_error_set(e, PP_EINVAL,
                            "membw: need iters >= 1 and 1..256 threads");
    double *samples = pp_xmalloc((size_t)iters * sizeof *samples);
    int rc = where == PP_EXEC_CUDA
                 ? pp__cuda_membw(kind, array_bytes, iters, device, samples, e)
                 : host_run(kind, array_bytes, iters, threads, samples, e);
    pp_exec_membw_result r;
    memset(&r, 0, sizeof r);
    if (rc == 0) rc = pp_exec_stats_compute(samples, (size_t)iters, &r.time, e);
    free(samples);
    if (rc < 0) return rc;
    r.kind = kind;
    r.device = where;
    r.array_bytes = array_bytes;
    r.bytes_moved = (kind == PP_MEMBW_TRIAD ? 3.0 : 2.0) * (double)array_bytes;
    r.threads = where == PP_EXEC_CUDA ? 0 : threads;
    r.bw_Bps = r.bytes_moved / r.time.median;
    r.best_Bps = r.bytes_moved / r.time.min;
    *out = r;
    return 0;
}

void pp_exec_membw_print(FILE *fp, const pp_exec_membw_result *r, size_t n) {
    fprintf(fp, "%-6s %-7s %12s %12s %10s %10s %6s %10s %10s\n", "where",
            "kernel", "array", "moved", "median", "p90", "cv", "GB/s",
            "best GB/s");
    for (size_t i = 0; i < n; i++) {
        const pp_exec_membw_result *x = &r[i];
        char where[16], t0[32], t1[32];
        if (x->device == PP_EXEC_CUDA)
            snprintf(where, sizeof where, "cuda");
        else
            snprintf(where, sizeof where, "host%d", x->threads);
        fprintf(fp,
                "%-6s %-7s %10.1fMB %10.1fMB %10s %10s %5.1f%% "
                "%10.1f %10.1f\n",
                where, pp_membw_kind_names[x->kind],
                (double)x->array_bytes / 1e6, x->bytes_moved / 1e6,
                pp__fmt_s(x->time.median, t0, sizeof t0),
                pp__fmt_s(x->time.p90, t1, sizeof t1), 100 * x->time.cv,
                x->bw_Bps / 1e9, x->best_Bps / 1e9);
    }
}
