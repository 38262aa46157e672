/*
 * gemm.c: `exec gemm`'s driver and its CPU back-end (OpenBLAS).
 *
 * Both back-ends time the same thing the same way: warm-up runs, then one
 * sample per call, C = A W^T in the layout of pp_gemm_shape (the layout
 * of torch.nn.Linear, so cuBLASLt runs it "TN" like Megatron-LM does).
 * Inputs are rotated among several buffer sets when one set would sit in
 * the last-level cache, so a small GEMM is not timed on warm operands
 * that a training step would not have.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "devmem.h"
#include "gemm_int.h"

#ifdef PODPLAN_HAVE_CBLAS
#include <cblas.h>
#endif

const char *const pp_exec_backend_names[] = {"cpu", "cuda", NULL};
const char *const pp_gemm_dtype_names[] = {"bf16", "fp16", "tf32",
                                           "fp32", "fp8",  NULL};

bool pp_exec_cuda_usable(char *why, size_t len) {
    return pp_cuda_available(why, len);
}

void pp_exec_gemm_opts_init(pp_exec_gemm_opts *o, pp_exec_backend b) {
    memset(o, 0, sizeof *o);
    o->backend = b;
    o->dtype = b == PP_EXEC_CUDA ? PP_GEMM_BF16 : PP_GEMM_FP32;
    o->warmup = 10;
    o->iters = 100;
    o->algos = 8;
    o->check = true;
    o->seed = 1;
    o->load_rate = -1;
}

void pp_exec_gemm_ref(const float *a, const float *w, double *c, int64_t batch,
                      int64_t m, int64_t n, int64_t k) {
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                const float *x = a + (b * m + i) * k, *y = w + (b * n + j) * k;
                double s = 0;
                for (int64_t l = 0; l < k; l++) s += (double)x[l] * y[l];
                c[(b * m + i) * n + j] = s;
            }
}

/* The error bound of a dot product of k terms whose inputs are exact
 * (the check uses the rounded values the GPU read), relative to
 * sum |a w|: fp32 accumulation ~ k eps32 at worst but far less in
 * practice; tf32 rounds inputs to 10 mantissa bits inside the tensor
 * core; 16-bit and fp8 runs round the output to bf16/fp16 (8/11 bits). */
double pp__check_tol(pp_gemm_dtype t) {
    switch (t) {
    case PP_GEMM_FP32: return 1e-4;
    case PP_GEMM_TF32: return 4e-3;
    case PP_GEMM_FP16: return 4e-3;
    default: return 1.6e-2; /* bf16, fp8 (bf16 out) */
    }
}

#ifdef PODPLAN_HAVE_CBLAS
int pp_exec_sgemm_cpu(const float *a, const float *w, float *c, int64_t batch,
                      int64_t m, int64_t n, int64_t k, pp_error *e) {
    for (int64_t b = 0; b < batch; b++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n,
                    (int)k, 1.0f, a + b * m * k, (int)k, w + b * n * k, (int)k,
                    0.0f, c + b * m * n, (int)n);
    return 0;
}
static int blas_threads(int want) {
    if (want > 0) openblas_set_num_threads(want);
    return openblas_get_num_threads();
}
static const char *blas_config(void) {
    return openblas_get_config();
}
#else
int pp_exec_sgemm_cpu(const float *a, const float *w, float *c, int64_t batch,
                      int64_t m, int64_t n, int64_t k, pp_error *e) {
    return pp_error_set(e, PP_ENODEV, "cpu GEMM: built without a CBLAS");
}
static int blas_threads(int want) {
    return want > 0 ? want : 1;
}
static const char *blas_config(void) {
    return "no BLAS";
}
#endif

static double llc_bytes(void) {
#ifdef _SC_LEVEL3_CACHE_SIZE
    long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (v > 0) return (double)v;
#endif
    return 32.0 * 1024 * 1024; /* unknown: a generous server L3 */
}

/* Spot check of up to 16 output elements of set 0 against the double
 * reference; *worst gets the largest |err| / bound. */
static int cpu_check(const float *a, const float *w, const float *c,
                     const pp_gemm_shape *s, pp_gemm_dtype t, double *worst,
                     pp_error *e) {
    *worst = 0;
    for (uint64_t q = 0; q < 16; q++) {
        uint64_t r = pp__mix64(q + 77);
        int64_t b = (int64_t)(r % (uint64_t)s->batch);
        int64_t i = (int64_t)((r >> 16) % (uint64_t)s->m);
        int64_t j = (int64_t)((r >> 40) % (uint64_t)s->n);
        const float *x = a + (b * s->m + i) * s->k;
        const float *y = w + (b * s->n + j) * s->k;
        double ref = 0, mag = 0;
        for (int64_t l = 0; l < s->k; l++) {
            ref += (double)x[l] * y[l];
            mag += fabs((double)x[l] * y[l]);
        }
        double got = c[(b * s->m + i) * s->n + j];
        double ratio = fabs(got - ref) / (pp__check_tol(t) * mag + 1e-30);
        if (!(ratio <= 1.0))
            return pp_error_set(e, PP_EFAIL,
                                "check failed at batch %lld, C[%lld][%lld]: "
                                "got %.6g, reference %.6g",
                                (long long)b, (long long)i, (long long)j, got,
                                ref);
        if (ratio > *worst) *worst = ratio;
    }
    return 0;
}

static int cpu_run(const pp_exec_gemm_opts *o, const pp_gemm_shape *s,
                   pp_exec_gemm_result *out, pp_error *e) {
    if (o->dtype != PP_GEMM_FP32)
        return pp_error_set(e, PP_EUSAGE,
                            "--backend cpu runs fp32 only, not %s",
                            pp_gemm_dtype_names[o->dtype]);
    int rc = 0, sets;
    size_t na = (size_t)(s->batch * s->m * s->k);
    size_t nw = (size_t)(s->batch * s->n * s->k);
    size_t nc = (size_t)(s->batch * s->m * s->n);
    double set_bytes = 4.0 * (double)(na + nw + nc);
    float *buf[3 * 16] = {0};
    double *samples = NULL;
    sets = pp__rotate_sets(set_bytes, llc_bytes(), 4.0 * (1u << 30), 16);
    for (int i = 0; i < sets; i++) {
        size_t len[3] = {na, nw, nc};
        for (int j = 0; j < 3; j++) {
            buf[3 * i + j] = malloc(len[j] * sizeof(float));
            if (!buf[3 * i + j]) {
                rc = pp_error_set(e, PP_ENOMEM,
                                  "cpu GEMM: cannot allocate %.3g GB",
                                  set_bytes * sets / 1e9);
                goto out;
            }
            if (j < 2)
                for (size_t q = 0; q < len[j]; q++)
                    buf[3 * i + j][q] = pp__rand_unit(
                        o->seed * 1000003u + (uint64_t)(3 * i + j), q);
        }
    }
    int threads = blas_threads(o->threads);
    samples = pp_xmalloc((size_t)o->iters * sizeof *samples);
    for (int it = 0; it < o->warmup + o->iters; it++) {
        int x = it % sets;
        double t0 = pp_exec_now();
        if ((rc = pp_exec_sgemm_cpu(buf[3 * x], buf[3 * x + 1], buf[3 * x + 2],
                                    s->batch, s->m, s->n, s->k, e)) < 0)
            goto out;
        double t1 = pp_exec_now();
        if (it >= o->warmup) samples[it - o->warmup] = t1 - t0;
    }
    pp_exec_gemm_result r;
    memset(&r, 0, sizeof r);
    if (o->check) {
        if ((rc = cpu_check(buf[0], buf[1], buf[2], s, o->dtype, &r.check_err,
                            e)) < 0)
            goto out;
        r.checked = true;
    }
    if ((rc = pp_exec_stats_compute(samples, (size_t)o->iters, &r.time, e)))
        goto out;
    r.buffers = sets;
    r.algo_id = -1;
    r.threads = threads;
    snprintf(r.algo, sizeof r.algo, "cblas_sgemm");
    *out = r;
out:
    for (int i = 0; i < 3 * sets; i++) free(buf[i]);
    free(samples);
    return rc;
}

/* --reserve-sms and --load-sms (k SMs): a count, on cuda (why_cuda says
 * why), for one call at a time. */
static int sm_opt(const pp_exec_gemm_opts *o, const char *flag, int k,
                  const char *why_cuda, pp_error *e) {
    if (k < 0) return pp_error_set(e, PP_EINVAL, "%s: must be >= 0", flag);
    if (k > 0 && o->backend != PP_EXEC_CUDA)
        return pp_error_set(e, PP_EUSAGE, "%s needs --backend cuda (%s)", flag,
                            why_cuda);
    if (k > 0 && o->streams > 0)
        return pp_error_set(e, PP_EUSAGE,
                            "%s times one call at a time, not a group over "
                            "--streams",
                            flag);
    return 0;
}

int pp_exec_gemm_opts_check(const pp_exec_gemm_opts *o, pp_error *e) {
    if (o->streams > 0 && o->backend != PP_EXEC_CUDA)
        return pp_error_set(e, PP_EUSAGE,
                            "--streams: grouped issue needs --backend cuda "
                            "(the cpu back-end runs a batch one GEMM after "
                            "another)");
    int rc;
    if ((rc = sm_opt(o, "--reserve-sms", o->reserve_sms,
                     "an SM target is cuBLASLt's", e)) < 0 ||
        (rc = sm_opt(o, "--load-sms", o->load_sms, "the load is a CUDA kernel",
                     e)) < 0)
        return rc;
    return 0;
}

int pp_exec_gemm_run(const pp_exec_gemm_opts *o, const pp_gemm_shape *s,
                     pp_exec_gemm_result *out, pp_error *e) {
    if (s->batch < 1 || s->m < 1 || s->n < 1 || s->k < 1)
        return pp_error_set(e, PP_EINVAL, "GEMM %s: sizes must be positive",
                            s->name);
    if (o->iters < 1 || o->warmup < 0)
        return pp_error_set(e, PP_EINVAL, "GEMM: iterations must be >= 1");
    if (o->setup_per_call && o->streams < 1)
        return pp_error_set(e, PP_EUSAGE,
                            "--setup per-call goes with --streams");
    int rc = pp_exec_gemm_opts_check(o, e);
    if (rc < 0) return rc;
    pp_exec_gemm_result r;
    rc = o->backend == PP_EXEC_CUDA ? pp__cuda_gemm_run(o, s, &r, e)
                                    : cpu_run(o, s, &r, e);
    if (rc < 0) {
        pp_error_prefix(e, "GEMM %s%s%lldx%lldx%lld", s->name,
                        s->name[0] ? " " : "", (long long)s->m, (long long)s->n,
                        (long long)s->k);
        return rc;
    }
    r.shape = *s;
    r.dtype = o->dtype;
    r.backend = o->backend;
    r.flops =
        2.0 * (double)s->batch * (double)s->m * (double)s->n * (double)s->k;
    r.flops_per_s = r.flops / r.time.median;
    *out = r;
    return 0;
}

static void cpu_name(char *buf, size_t len) {
    snprintf(buf, len, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *c = strchr(line, ':');
        if (!c) break;
        c++;
        while (*c == ' ' || *c == '\t') c++;
        snprintf(buf, len, "%s", c);
        buf[strcspn(buf, "\n")] = '\0';
        break;
    }
    fclose(f);
}

int pp_exec_device_info(pp_exec_backend b, int device, int threads,
                        pp_exec_device *out, pp_error *e) {
    pp_exec_device d;
    memset(&d, 0, sizeof d);
    if (b == PP_EXEC_CUDA) {
        int rc = pp__cuda_device_info(device, &d, e);
        if (rc < 0) return rc;
    } else {
        cpu_name(d.name, sizeof d.name);
        d.threads = blas_threads(threads);
        snprintf(d.info, sizeof d.info, "%s", blas_config());
    }
    *out = d;
    return 0;
}

void pp_exec_gemm_print(FILE *fp, const pp_exec_device *dev,
                        const pp_exec_gemm_result *r, size_t n,
                        double peak_flops) {
    if (dev) {
        fprintf(fp, "device  %s", dev->name);
        if (dev->cc_major)
            fprintf(fp, " (cc %d.%d)", dev->cc_major, dev->cc_minor);
        if (dev->threads) fprintf(fp, ", %d BLAS threads", dev->threads);
        fprintf(fp, "\n        %s\n", dev->info);
    }
    if (n == 0) return;
    fprintf(fp,
            "timing  %zu samples per shape (median, p10, p90, cv); "
            "%d buffer set(s) rotated for the first shape\n",
            r[0].time.n, r[0].buffers);
    if (peak_flops > 0)
        fprintf(fp, "peak    %.1f TFLOP/s (%s)\n", peak_flops / 1e12,
                pp_gemm_dtype_names[r[0].dtype]);
    int w = 12; /* wider for the backward's names */
    for (size_t i = 0; i < n; i++)
        if ((int)strlen(r[i].shape.name) > w) w = (int)strlen(r[i].shape.name);
    fprintf(fp, "\n%-*s %5s %6s %6s %6s %-5s %10s %10s %10s %6s %8s", w, "gemm",
            "batch", "m", "n", "k", "dtype", "median", "p10", "p90", "cv",
            "TFLOP/s");
    if (peak_flops > 0) fprintf(fp, " %6s", "%peak");
    fprintf(fp, "  %s\n", "algorithm");
    for (size_t i = 0; i < n; i++) {
        const pp_exec_gemm_result *x = &r[i];
        char t0[32], t1[32], t2[32];
        fprintf(fp,
                "%-*s %5lld %6lld %6lld %6lld %-5s %10s %10s "
                "%10s %5.1f%% %8.3f",
                w, x->shape.name[0] ? x->shape.name : "-",
                (long long)x->shape.batch, (long long)x->shape.m,
                (long long)x->shape.n, (long long)x->shape.k,
                pp_gemm_dtype_names[x->dtype],
                pp__fmt_s(x->time.median, t0, sizeof t0),
                pp__fmt_s(x->time.p10, t1, sizeof t1),
                pp__fmt_s(x->time.p90, t2, sizeof t2), 100 * x->time.cv,
                x->flops_per_s / 1e12);
        if (peak_flops > 0)
            fprintf(fp, " %5.1f%%", 100 * x->flops_per_s / peak_flops);
        fprintf(fp, "  %s%s\n", x->algo, x->checked ? "" : " (unchecked)");
        if (x->streams > 0)
            fprintf(fp,
                    "%*s grouped over %d stream(s), set-up %s: host issue "
                    "%s, CUDA graph %s (%.3f TFLOP/s)\n",
                    w, "", x->streams, x->setup_per_call ? "per call" : "once",
                    pp__fmt_s(x->issue_s, t0, sizeof t0),
                    pp__fmt_s(x->graph_s, t1, sizeof t1),
                    x->flops / x->graph_s / 1e12);
        if (x->sms_reserved > 0)
            fprintf(fp, "%*s aimed at %d SMs, %d left to communication\n", w,
                    "", x->sm_target, x->sms_reserved);
        if (x->load_sms > 0) {
            snprintf(t0, sizeof t0, "%.1f GB/s", x->load_rate_asked / 1e9);
            fprintf(fp,
                    "%*s beside a copy on %d SMs moving %.1f GB/s "
                    "(asked: %s)\n",
                    w, "", x->load_sms, x->load_rate / 1e9,
                    x->load_rate_asked < 0 ? "max" : t0);
        }
    }
}
