/*
 * test_exec_cuda.c: the CUDA half of exec, on a GPU: the reduction
 * kernels against the CPU for every dtype and op, cuBLASLt GEMMs in every
 * dtype the GPU has against the CPU reference (the run's own spot check,
 * 16 elements in double), device STREAM, and the devmem round trip.
 *
 * Without a usable GPU it exits 77 (CTest: skipped) saying what was
 * missing.  Plain C with a CHECK macro rather than cmocka: it must also
 * build on a lent GPU machine with nothing but nvcc and a C compiler
 * (tools/gpu-check.sh's standalone path).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "podplan/exec.h"

static int failures;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            failures++;                                                        \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                        \
            printf(__VA_ARGS__);                                               \
            printf("\n");                                                      \
        }                                                                      \
    } while (0)

/* exec gemm's options on the GPU, timed over iters calls after 2 warm-up
 * ones. */
static pp_exec_gemm_opts timed_opts(int iters) {
    pp_exec_gemm_opts o;
    pp_exec_gemm_opts_init(&o, PP_EXEC_CUDA);
    o.iters = iters;
    o.warmup = 2;
    return o;
}

/* Exact encodings for the values used (quarters below 64): no rounding
 * on either side, so the comparisons are exact. */
static uint16_t f2bf(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}
static float bf2f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t f2h(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    if ((u & 0x7fffffff) == 0) return sign;
    int ex = (int)((u >> 23) & 0xff) - 127 + 15;
    return (uint16_t)(sign | (ex << 10) | ((u >> 13) & 0x3ff));
}
static float h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    int ex = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff, u;
    if (ex == 0 && man == 0)
        u = sign;
    else
        u = sign | ((uint32_t)(ex - 15 + 127) << 23) | (man << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void put(pp_xdtype t, void *p, size_t i, float v) {
    if (t == PP_XDT_FP32)
        ((float *)p)[i] = v;
    else if (t == PP_XDT_BF16)
        ((uint16_t *)p)[i] = f2bf(v);
    else
        ((uint16_t *)p)[i] = f2h(v);
}
static float get(pp_xdtype t, const void *p, size_t i) {
    if (t == PP_XDT_FP32) return ((const float *)p)[i];
    if (t == PP_XDT_BF16) return bf2f(((const uint16_t *)p)[i]);
    return h2f(((const uint16_t *)p)[i]);
}

static void test_reduce(void) {
    static const char *tn[] = {"fp32", "bf16", "fp16"},
                      *on[] = {"sum", "max", "min"};
    const size_t n = (1u << 20) + 3; /* not a multiple of anything nice */
    for (int t = 0; t < PP_XDT__COUNT; t++)
        for (int op = 0; op < PP_XOP__COUNT; op++) {
            pp_error e = PP_ERROR_INIT;
            size_t es = pp_xdtype_size((pp_xdtype)t), bad = 0;
            void *hd = malloc(n * es), *hs = malloc(n * es),
                 *out = malloc(n * es);
            void *dd = NULL, *ds = NULL;
            for (size_t i = 0; i < n; i++) {
                put((pp_xdtype)t, hd, i, (float)((int)(i % 61) - 30) * 0.25f);
                put((pp_xdtype)t, hs, i,
                    (float)((int)(i * 7 % 53) - 26) * 0.25f);
            }
            int rc = pp_cuda_malloc(&dd, n * es, &e);
            if (!rc) rc = pp_cuda_malloc(&ds, n * es, &e);
            if (!rc) rc = pp_cuda_h2d(dd, hd, n * es, &e);
            if (!rc) rc = pp_cuda_h2d(ds, hs, n * es, &e);
            if (!rc)
                rc = pp_cuda_reduce((pp_xdtype)t, (pp_xredop)op, dd, ds, n, &e);
            if (!rc) rc = pp_cuda_d2h(out, dd, n * es, &e);
            CHECK(rc == 0, "reduce %s %s: %s", tn[t], on[op], e.msg);
            for (size_t i = 0; rc == 0 && i < n; i++) {
                float a = get((pp_xdtype)t, hd, i),
                      b = get((pp_xdtype)t, hs, i);
                float want = op == PP_XOP_SUM   ? a + b
                             : op == PP_XOP_MAX ? fmaxf(a, b)
                                                : fminf(a, b);
                if (get((pp_xdtype)t, out, i) != want && bad++ < 3)
                    CHECK(0, "reduce %s %s: [%zu] = %g, want %g", tn[t], on[op],
                          i, get((pp_xdtype)t, out, i), want);
            }
            printf("reduce %-4s %-3s %zu elements: %s\n", tn[t], on[op], n,
                   rc == 0 && bad == 0 ? "ok" : "FAILED");
            pp_cuda_free(dd);
            pp_cuda_free(ds);
            free(hd);
            free(hs);
            free(out);
        }
    /* count 0 is a no-op, a bad dtype an error. */
    pp_error e = PP_ERROR_INIT;
    CHECK(pp_cuda_reduce(PP_XDT_FP32, PP_XOP_SUM, NULL, NULL, 0, &e) == 0,
          "count 0");
    CHECK(pp_cuda_reduce(PP_XDT__COUNT, PP_XOP_SUM, NULL, NULL, 1, &e) ==
              PP_EINVAL,
          "bad dtype");
}

static void test_gemm(int cc) {
    static const pp_gemm_shape shapes[] = {
        {"square", 1, 256, 256, 256, false},
        {"rect", 1, 384, 640, 1024, false},
        {"batched", 6, 128, 96, 64, false},
        {"odd", 1, 33, 17, 65, false},
    };
    for (int t = 0; t < PP_GEMM__DTYPES; t++) {
        if (t == PP_GEMM_FP8 && cc < 89) {
            printf("gemm fp8: skipped (compute capability %d.%d < 8.9)\n",
                   cc / 10, cc % 10);
            continue;
        }
        for (size_t q = 0; q < sizeof shapes / sizeof shapes[0]; q++) {
            const pp_gemm_shape *s = &shapes[q];
            /* cuBLASLt's fp8 needs sizes that are multiples of 16. */
            if (t == PP_GEMM_FP8 && (s->m % 16 || s->n % 16 || s->k % 16))
                continue;
            pp_exec_gemm_opts o = timed_opts(20);
            o.dtype = (pp_gemm_dtype)t;
            pp_exec_gemm_result r;
            pp_error e = PP_ERROR_INIT;
            int rc = pp_exec_gemm_run(&o, s, &r, &e);
            CHECK(rc == 0, "gemm %s %s: %s", pp_gemm_dtype_names[t], s->name,
                  e.msg);
            if (rc) continue;
            CHECK(r.checked && r.check_err <= 1, "gemm %s %s: not checked",
                  pp_gemm_dtype_names[t], s->name);
            CHECK(r.time.median > 0 && r.flops_per_s > 0, "gemm timing");
            printf("gemm %-4s %-8s %lldx%lldx%lldx%lld: %.2f us, %.2f TFLOP/s, "
                   "error %.3f of bound, %s\n",
                   pp_gemm_dtype_names[t], s->name, (long long)s->batch,
                   (long long)s->m, (long long)s->n, (long long)s->k,
                   r.time.median * 1e6, r.flops_per_s / 1e12, r.check_err,
                   r.algo);
        }
    }
}

/* Grouped issue (--streams): the batch's GEMMs as separate calls over
 * 1 and 4 streams, descriptors once and per call; each group's outputs
 * checked like a batch's, and all three times measured. */
static void test_gemm_grouped(int cc) {
    static const pp_gemm_shape s = {"grouped", 6, 256, 384, 512, true};
    for (int t = 0; t < PP_GEMM__DTYPES; t++) {
        if (t != PP_GEMM_BF16 && t != PP_GEMM_FP8) continue;
        if (t == PP_GEMM_FP8 && cc < 89) continue;
        for (int streams = 1; streams <= 4; streams += 3)
            for (int per_call = 0; per_call < 2; per_call++) {
                pp_exec_gemm_opts o = timed_opts(20);
                o.dtype = (pp_gemm_dtype)t;
                o.streams = streams;
                o.setup_per_call = per_call;
                pp_exec_gemm_result r;
                pp_error e = PP_ERROR_INIT;
                int rc = pp_exec_gemm_run(&o, &s, &r, &e);
                CHECK(rc == 0, "grouped %s %d streams: %s",
                      pp_gemm_dtype_names[t], streams, e.msg);
                if (rc) continue;
                CHECK(r.checked && r.check_err <= 1, "grouped: not checked");
                CHECK(r.streams == streams && r.setup_per_call == per_call,
                      "grouped: the run's issue echoed");
                CHECK(r.time.median > 0 && r.issue_s > 0 && r.graph_s > 0,
                      "grouped: three times");
                printf("grouped %-4s %d stream(s), set-up %s: eager %.2f us, "
                       "issue %.2f us, graph %.2f us\n",
                       pp_gemm_dtype_names[t], streams,
                       per_call ? "per call" : "once", r.time.median * 1e6,
                       r.issue_s * 1e6, r.graph_s * 1e6);
            }
    }
}

/* --reserve-sms: aimed at all but 60 SMs, a GEMM large enough to fill
 * every SM many times over must slow down by at least a quarter of what
 * the SM ratio would (total / the rest: 1.83 on 132 SMs, so 1.21x);
 * an ignored target leaves it at 1.0x.  GEMMs lose less than their
 * share of SMs (1.40x on a lent H100, README "GEMMs aimed at fewer
 * SMs").  A target of no SM is refused. */
static void test_gemm_reserve(void) {
    static const pp_gemm_shape s = {"reserve", 1, 8192, 8192, 8192, true};
    pp_exec_gemm_result r[2];
    for (int k = 0; k < 2; k++) {
        pp_exec_gemm_opts o = timed_opts(10);
        o.check = false;
        o.reserve_sms = k ? 60 : 0;
        pp_error e = PP_ERROR_INIT;
        int rc = pp_exec_gemm_run(&o, &s, &r[k], &e);
        if (rc == PP_EUSAGE && k) {
            printf("reserve: skipped (%s)\n", e.msg);
            return;
        }
        CHECK(rc == 0, "reserve %d: %s", o.reserve_sms, e.msg);
        if (rc) return;
    }
    int all = r[1].sms_reserved + r[1].sm_target;
    CHECK(r[0].sms_reserved == 0 && r[1].sms_reserved == 60 &&
              r[1].sm_target > 0,
          "reserve: %d reserved, target %d", r[1].sms_reserved, r[1].sm_target);
    double ratio = (double)all / r[1].sm_target;
    double slow = r[1].time.median / r[0].time.median;
    CHECK(slow >= 1 + 0.25 * (ratio - 1),
          "reserve: aimed at %d of %d SMs, the GEMM only %.2fx slower",
          r[1].sm_target, all, slow);
    printf("gemm bf16 8192^3: %.1f TFLOP/s on %d SMs, %.1f aimed at %d "
           "(%.2fx the time; SM ratio %.2f)\n",
           r[0].flops_per_s / 1e12, all, r[1].flops_per_s / 1e12,
           r[1].sm_target, slow, ratio);
    fflush(stdout);
    pp_exec_gemm_opts o;
    pp_exec_gemm_opts_init(&o, PP_EXEC_CUDA);
    o.reserve_sms = 4096;
    pp_error e = PP_ERROR_INIT;
    CHECK(pp_exec_gemm_run(&o, &s, &r[0], &e) == PP_EUSAGE &&
              strstr(e.msg, "SMs"),
          "reserve: no SM left: %s", e.msg);
}

/* --load-sms: the copy load beside a GEMM starts, stops (the call
 * returns: no hang) and moves what it is asked.  Held: 0 bytes; 200 GB/s
 * throttled: within 15% (its blocks catch up after the GEMM slows them);
 * flat out on 16 SMs: more than 200 GB/s.  Each leaves the GEMM running,
 * and no slower than the SMs it leaves would make it (132/116: 1.14x)
 * by more than half again. */
static void test_gemm_load(void) {
    static const pp_gemm_shape s = {"load", 1, 8192, 8192, 8192, true};
    static const double rates[] = {-1, 0, 200e9, -1};
    pp_exec_gemm_result r[4];
    for (int k = 0; k < 4; k++) {
        pp_exec_gemm_opts o = timed_opts(20);
        o.check = false;
        o.load_sms = k ? 16 : 0;
        o.load_rate = rates[k];
        pp_error e = PP_ERROR_INIT;
        int rc = pp_exec_gemm_run(&o, &s, &r[k], &e);
        CHECK(rc == 0, "load %d: %s", k, e.msg);
        if (rc) return;
        printf("gemm bf16 8192^3 beside %d SMs (asked %.0f GB/s): %.1f "
               "TFLOP/s, the load %.1f GB/s\n",
               r[k].load_sms, o.load_rate / 1e9, r[k].flops_per_s / 1e12,
               r[k].load_rate / 1e9);
        fflush(stdout);
        if (k)
            CHECK(r[k].time.median < 1.5 * 1.14 * r[0].time.median,
                  "load %d: the GEMM %.2fx slower", k,
                  r[k].time.median / r[0].time.median);
    }
    CHECK(r[1].load_sms == 16 && r[1].load_rate == 0,
          "load held: %d SMs, %g B/s", r[1].load_sms, r[1].load_rate);
    CHECK(fabs(r[2].load_rate / 200e9 - 1) < 0.15,
          "load 200 GB/s: moved %.1f GB/s", r[2].load_rate / 1e9);
    CHECK(r[3].load_rate > 200e9, "load max: %.1f GB/s", r[3].load_rate / 1e9);
}

static void test_membw(void) {
    for (int k = 0; k < PP_MEMBW__KINDS; k++) {
        pp_exec_membw_result r;
        pp_error e = PP_ERROR_INIT;
        int rc = pp_exec_membw_run(PP_EXEC_CUDA, (pp_membw_kind)k, 256u << 20,
                                   10, 1, 0, &r, &e);
        CHECK(rc == 0, "membw %s: %s", pp_membw_kind_names[k], e.msg);
        if (rc) continue;
        CHECK(isfinite(r.bw_Bps) && r.bw_Bps > 1e10, "membw %s: %g B/s",
              pp_membw_kind_names[k], r.bw_Bps);
        printf("membw %-6s 256 MiB: %.0f GB/s\n", pp_membw_kind_names[k],
               r.bw_Bps / 1e9);
    }
}

int main(void) {
    char why[256];
    if (!pp_exec_cuda_usable(why, sizeof why)) {
        printf("test_exec_cuda: skipped: no CUDA device: %s\n", why);
        return 77;
    }
    pp_error e = PP_ERROR_INIT;
    char name[128];
    int major = 0, minor = 0;
    if (pp_cuda_set_device(0, &e) ||
        pp_cuda_device_name(name, sizeof name, &major, &minor, &e)) {
        printf("test_exec_cuda: %s\n", e.msg);
        return 1;
    }
    printf("device: %s (cc %d.%d)\n", name, major, minor);
    test_reduce();
    test_gemm(major * 10 + minor);
    test_gemm_grouped(major * 10 + minor);
    test_gemm_reserve();
    test_gemm_load();
    test_membw();
    printf("test_exec_cuda: %s (%d failure%s)\n",
           failures ? "FAILED" : "passed", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
