/*
 * gemm_cuda.cu: `exec gemm --backend cuda`, cuBLASLt.
 *
 * The problem is posed as torch.nn.Linear poses it to cuBLAS (so the
 * heuristic sees what Megatron-LM's GEMMs show it): column-major
 * D[n x m] = op(W)^T X with W [k x n] transposed ("T") and X [k x m] not
 * ("N"), which is row-major C [m x n] = X W^T.  TN is also the only
 * layout cuBLASLt runs fp8 in.  Batched shapes are strided batches.
 *
 * Algorithm choice: cublasLtMatmulAlgoGetHeuristic's top `algos`
 * candidates are each timed briefly (2 + 10 runs); the fastest is then
 * timed properly.  Timing: CUDA events recorded between back-to-back
 * launches (iters + 1 events, one sync at the end), so host launch gaps
 * are not counted unless the GEMM is shorter than a launch.  Workspace:
 * 32 MiB on Hopper and later, 4 MiB before, as the cuBLAS documentation
 * recommends for cublasLtMatmul.
 */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "gemm_int.h"

#define MAX_SETS 16
#define MAX_ALGOS 32

#define CU(call)                                                               \
    do {                                                                       \
        cudaError_t err_ = (call);                                             \
        if (err_ != cudaSuccess) {                                             \
            rc = pp_error_set(                                                 \
                e, err_ == cudaErrorMemoryAllocation ? PP_ENOMEM : PP_EFAIL,   \
                "%s: %s", #call, cudaGetErrorString(err_));                    \
            goto out;                                                          \
        }                                                                      \
    } while (0)
#define LT(call)                                                               \
    do {                                                                       \
        cublasStatus_t st_ = (call);                                           \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                    \
            rc = pp_error_set(e, PP_EFAIL, "%s: %s", #call,                    \
                              cublasLtGetStatusString(st_));                   \
            goto out;                                                          \
        }                                                                      \
    } while (0)

typedef struct dt_info {
    cudaDataType_t ab, cd;
    cublasComputeType_t compute;
    size_t ab_size, cd_size;
} dt_info;

static dt_info dt_of(pp_gemm_dtype t) {
    switch (t) {
    case PP_GEMM_BF16:
        return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2};
    case PP_GEMM_FP16:
        return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2};
    case PP_GEMM_TF32:
        return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4};
    case PP_GEMM_FP32:
        return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4};
    default: return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2};
    }
}

/* Random values in [-1, 1), never 0, rounded to the element type. */
template <typename T> __device__ T from_float(float x);
template <> __device__ float from_float<float>(float x) {
    return x;
}
template <> __device__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
    return __float2bfloat16(x);
}
template <> __device__ __half from_float<__half>(float x) {
    return __float2half(x);
}
template <> __device__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float x) {
    return __nv_fp8_e4m3(x);
}

template <typename T>
__global__ void rand_kernel(T *p, size_t n, uint64_t seed) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        float v = pp__rand_unit(seed, i);
        /* bf16/fp16/fp8 could round a tiny value to 0: keep it away. */
        if (fabsf(v) < 1.0f / 64) v = v < 0 ? -1.0f / 64 : 1.0f / 64;
        p[i] = from_float<T>(v);
    }
}

static void fill(cudaDataType_t t, void *p, size_t n, uint64_t seed) {
    int g = (int)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
    if (g < 1) g = 1;
    switch (t) {
    case CUDA_R_16BF:
        rand_kernel<<<g, 256>>>((__nv_bfloat16 *)p, n, seed);
        break;
    case CUDA_R_16F: rand_kernel<<<g, 256>>>((__half *)p, n, seed); break;
    case CUDA_R_8F_E4M3:
        rand_kernel<<<g, 256>>>((__nv_fp8_e4m3 *)p, n, seed);
        break;
    default: rand_kernel<<<g, 256>>>((float *)p, n, seed); break;
    }
}

static float to_float(cudaDataType_t t, const unsigned char *p, size_t i) {
    switch (t) {
    case CUDA_R_16BF: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case CUDA_R_16F: return __half2float(((const __half *)p)[i]);
    case CUDA_R_8F_E4M3: return (float)((const __nv_fp8_e4m3 *)p)[i];
    default: return ((const float *)p)[i];
    }
}

/* The worst |err| / bound over 16 sampled outputs of set 0: the inputs
 * read back are the rounded values the GPU used. */
static int check(const dt_info &dt, pp_gemm_dtype t, const pp_gemm_shape *s,
                 const void *x, const void *w, const void *d, double *worst,
                 pp_error *e) {
    int rc = 0;
    size_t k = (size_t)s->k;
    unsigned char *hx = (unsigned char *)pp_xmalloc(k * dt.ab_size);
    unsigned char *hw = (unsigned char *)pp_xmalloc(k * dt.ab_size);
    unsigned char hd[8];
    *worst = 0;
    for (uint64_t q = 0; q < 16; q++) {
        uint64_t r = pp__mix64(q + 77);
        size_t b = (size_t)(r % (uint64_t)s->batch);
        size_t i = (size_t)((r >> 16) % (uint64_t)s->m);
        size_t j = (size_t)((r >> 40) % (uint64_t)s->n);
        size_t m = (size_t)s->m, n = (size_t)s->n;
        CU(cudaMemcpy(hx, (const char *)x + ((b * m + i) * k) * dt.ab_size,
                      k * dt.ab_size, cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(hw, (const char *)w + ((b * n + j) * k) * dt.ab_size,
                      k * dt.ab_size, cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(hd, (const char *)d + ((b * m + i) * n + j) * dt.cd_size,
                      dt.cd_size, cudaMemcpyDeviceToHost));
        double ref = 0, mag = 0;
        for (size_t l = 0; l < k; l++) {
            double p = (double)to_float(dt.ab, hx, l) * to_float(dt.ab, hw, l);
            ref += p;
            mag += fabs(p);
        }
        double got = to_float(dt.cd, hd, 0);
        double ratio = fabs(got - ref) / (pp__check_tol(t) * mag + 1e-30);
        if (!(ratio <= 1.0)) {
            rc = pp_error_set(e, PP_EFAIL,
                              "check failed at batch %zu, C[%zu][%zu]: got "
                              "%.6g, reference %.6g (bound %.3g)",
                              b, i, j, got, ref, pp__check_tol(t) * mag);
            goto out;
        }
        if (ratio > *worst) *worst = ratio;
    }
out:
    free(hx);
    free(hw);
    return rc;
}

static int layout(cublasLtMatrixLayout_t *l, cudaDataType_t t, uint64_t rows,
                  uint64_t cols, int32_t batch, pp_error *e) {
    int rc = 0;
    int64_t stride = (int64_t)(rows * cols);
    LT(cublasLtMatrixLayoutCreate(l, t, rows, cols, (int64_t)rows));
    if (batch > 1) {
        LT(cublasLtMatrixLayoutSetAttribute(
            *l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
        LT(cublasLtMatrixLayoutSetAttribute(
            *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
            sizeof stride));
    }
out:
    return rc;
}

static void algo_words(const cublasLtMatmulAlgo_t *a, int *id, char *buf,
                       size_t len, int rank, int of) {
    int32_t cfg = -1;
    uint32_t tile = 0, stages = 0, splitk = 0;
    size_t w;
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &cfg,
                                         sizeof cfg, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                         sizeof tile, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID,
                                         &stages, sizeof stages, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                         &splitk, sizeof splitk, &w);
    *id = cfg;
    snprintf(buf, len, "lt algo %d tile %u stages %u splitk %u (#%d of %d)",
             cfg, tile, stages, splitk, rank + 1, of);
}

extern "C" int pp__cuda_device_info(int device, pp_exec_device *out,
                                    pp_error *e) {
    int rc = 0, rt = 0, drv = 0;
    cudaDeviceProp p;
    char why[256];
    if (!pp_cuda_available(why, sizeof why))
        return pp_error_set(e, PP_ENODEV, "--backend cuda: %s", why);
    CU(cudaSetDevice(device));
    CU(cudaGetDeviceProperties(&p, device));
    CU(cudaRuntimeGetVersion(&rt));
    CU(cudaDriverGetVersion(&drv));
    snprintf(out->name, sizeof out->name, "%s", p.name);
    out->cc_major = p.major;
    out->cc_minor = p.minor;
    snprintf(out->info, sizeof out->info,
             "CUDA runtime %d.%d, driver %d.%d, cuBLASLt %zu, %d SMs, "
             "L2 %d MiB, %.0f GiB",
             rt / 1000, rt % 1000 / 10, drv / 1000, drv % 1000 / 10,
             cublasLtGetVersion(), p.multiProcessorCount, p.l2CacheSize >> 20,
             (double)p.totalGlobalMem / (1 << 30));
out:
    return rc;
}

extern "C" int pp__cuda_gemm_run(const pp_exec_gemm_opts *o,
                                 const pp_gemm_shape *s,
                                 pp_exec_gemm_result *out, pp_error *e) {
    int rc = 0, sets = 1, n_algos = 0, best = -1, best_id = -1;
    dt_info dt = dt_of(o->dtype);
    cudaDeviceProp prop;
    cublasLtHandle_t lt = NULL;
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur[MAX_ALGOS];
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    void *x[MAX_SETS] = {0}, *w[MAX_SETS] = {0}, *d[MAX_SETS] = {0};
    void *ws = NULL;
    float *scale = NULL;
    cudaEvent_t *ev = NULL;
    int n_ev = 0;
    double *samples = NULL, best_t = INFINITY;
    size_t ws_bytes, free_b = 0, total_b = 0;
    size_t nx = (size_t)(s->batch * s->m * s->k);
    size_t nw = (size_t)(s->batch * s->n * s->k);
    size_t nd = (size_t)(s->batch * s->m * s->n);
    double set_bytes = (double)(nx + nw) * dt.ab_size + (double)nd * dt.cd_size;
    const float alpha = 1.0f, beta = 0.0f;
    int32_t batch = (int32_t)s->batch;
    pp_exec_gemm_result r;
    char why[256];

    memset(&r, 0, sizeof r);
    if (!pp_cuda_available(why, sizeof why))
        return pp_error_set(e, PP_ENODEV, "--backend cuda: %s", why);
    if (o->algos < 1 || o->algos > MAX_ALGOS)
        return pp_error_set(e, PP_EINVAL, "--algos: 1 to %d", MAX_ALGOS);
    CU(cudaSetDevice(o->device));
    CU(cudaGetDeviceProperties(&prop, o->device));
    if (o->dtype == PP_GEMM_FP8 && prop.major * 10 + prop.minor < 89)
        return pp_error_set(e, PP_ENODEV,
                            "fp8 needs compute capability 8.9 or later; %s "
                            "is %d.%d",
                            prop.name, prop.major, prop.minor);
    ws_bytes = (size_t)(prop.major >= 9 ? 32 : 4) << 20;
    CU(cudaMemGetInfo(&free_b, &total_b));
    /* Rotate until a pass over the sets is twice L2, within half the free
     * memory (the rest for the workspace and whatever else runs). */
    sets = pp__rotate_sets(set_bytes, (double)prop.l2CacheSize,
                           0.5 * (double)free_b, MAX_SETS);
    if (set_bytes + ws_bytes > 0.9 * (double)free_b) {
        rc =
            pp_error_set(e, PP_ENOMEM, "needs %.3g GB, %.3g GB free on %s",
                         (set_bytes + ws_bytes) / 1e9, free_b / 1e9, prop.name);
        goto out;
    }
    for (int i = 0; i < sets; i++) {
        CU(cudaMalloc(&x[i], nx * dt.ab_size));
        CU(cudaMalloc(&w[i], nw * dt.ab_size));
        CU(cudaMalloc(&d[i], nd * dt.cd_size));
        fill(dt.ab, x[i], nx, o->seed * 1000003u + 2 * (uint64_t)i);
        fill(dt.ab, w[i], nw, o->seed * 1000003u + 2 * (uint64_t)i + 1);
        CU(cudaMemset(d[i], 0, nd * dt.cd_size));
    }
    CU(cudaGetLastError());
    CU(cudaMalloc(&ws, ws_bytes));

    LT(cublasLtCreate(&lt));
    LT(cublasLtMatmulDescCreate(&op, dt.compute, CUDA_R_32F));
    LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                      sizeof ta));
    LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                      sizeof tb));
    if (o->dtype == PP_GEMM_FP8) {
        /* Per-tensor scales (1: the inputs are already in e4m3's range),
         * as Transformer Engine passes them. */
        const float one = 1.0f;
        CU(cudaMalloc((void **)&scale, sizeof one));
        CU(cudaMemcpy(scale, &one, sizeof one, cudaMemcpyHostToDevice));
        LT(cublasLtMatmulDescSetAttribute(
            op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale, sizeof scale));
        LT(cublasLtMatmulDescSetAttribute(
            op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale, sizeof scale));
    }
    /* A = W (k x n, transposed), B = X (k x m), C = D (n x m). */
    if ((rc = layout(&la, dt.ab, (uint64_t)s->k, (uint64_t)s->n, batch, e)) <
            0 ||
        (rc = layout(&lb, dt.ab, (uint64_t)s->k, (uint64_t)s->m, batch, e)) <
            0 ||
        (rc = layout(&lc, dt.cd, (uint64_t)s->n, (uint64_t)s->m, batch, e)) < 0)
        goto out;
    LT(cublasLtMatmulPreferenceCreate(&pref));
    LT(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
        sizeof ws_bytes));
    LT(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, o->algos,
                                      heur, &n_algos));
    if (n_algos == 0) {
        rc = pp_error_set(e, PP_EFAIL,
                          "cuBLASLt has no algorithm for this "
                          "shape and dtype%s",
                          o->dtype == PP_GEMM_FP8
                              ? " (fp8 wants m, n, k multiples of 16)"
                              : "");
        goto out;
    }
    n_ev = (o->iters > 10 ? o->iters : 10) + 1;
    ev = (cudaEvent_t *)pp_xcalloc((size_t)n_ev, sizeof *ev);
    for (int i = 0; i < n_ev; i++) CU(cudaEventCreate(&ev[i]));

    /* Each candidate: 2 untimed runs, 10 timed back to back. */
    for (int a = 0; a < n_algos; a++) {
        if (heur[a].state != CUBLAS_STATUS_SUCCESS) continue;
        cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
        for (int it = 0; it < 12 && st == CUBLAS_STATUS_SUCCESS; it++) {
            int q = it % sets;
            if (it == 2) CU(cudaEventRecord(ev[0]));
            st = cublasLtMatmul(lt, op, &alpha, w[q], la, x[q], lb, &beta, d[q],
                                lc, d[q], lc, &heur[a].algo, ws, ws_bytes, 0);
        }
        if (st != CUBLAS_STATUS_SUCCESS) continue; /* not runnable: skip */
        CU(cudaEventRecord(ev[1]));
        CU(cudaEventSynchronize(ev[1]));
        float ms = 0;
        CU(cudaEventElapsedTime(&ms, ev[0], ev[1]));
        if (ms < best_t) {
            best_t = ms;
            best = a;
        }
    }
    if (best < 0) {
        rc = pp_error_set(e, PP_EFAIL,
                          "none of the %d cuBLASLt candidates "
                          "ran",
                          n_algos);
        goto out;
    }

    for (int it = 0; it < o->warmup; it++) {
        int q = it % sets;
        LT(cublasLtMatmul(lt, op, &alpha, w[q], la, x[q], lb, &beta, d[q], lc,
                          d[q], lc, &heur[best].algo, ws, ws_bytes, 0));
    }
    CU(cudaEventRecord(ev[0]));
    for (int it = 0; it < o->iters; it++) {
        int q = it % sets;
        LT(cublasLtMatmul(lt, op, &alpha, w[q], la, x[q], lb, &beta, d[q], lc,
                          d[q], lc, &heur[best].algo, ws, ws_bytes, 0));
        CU(cudaEventRecord(ev[it + 1]));
    }
    CU(cudaEventSynchronize(ev[o->iters]));
    CU(cudaGetLastError());
    samples = (double *)pp_xmalloc((size_t)o->iters * sizeof *samples);
    for (int it = 0; it < o->iters; it++) {
        float ms = 0;
        CU(cudaEventElapsedTime(&ms, ev[it], ev[it + 1]));
        samples[it] = 1e-3 * (double)ms;
    }
    if (o->check) {
        if ((rc = check(dt, o->dtype, s, x[0], w[0], d[0], &r.check_err, e)) <
            0)
            goto out;
        r.checked = true;
    }
    if ((rc = pp_exec_stats_compute(samples, (size_t)o->iters, &r.time, e)) < 0)
        goto out;
    algo_words(&heur[best].algo, &best_id, r.algo, sizeof r.algo, best,
               n_algos);
    r.algo_id = best_id;
    r.algos_tried = n_algos;
    r.buffers = sets;
    *out = r;
out:
    if (ev)
        for (int i = 0; i < n_ev; i++)
            if (ev[i]) cudaEventDestroy(ev[i]);
    free(ev);
    free(samples);
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (op) cublasLtMatmulDescDestroy(op);
    if (lt) cublasLtDestroy(lt);
    for (int i = 0; i < MAX_SETS; i++) {
        if (x[i]) cudaFree(x[i]);
        if (w[i]) cudaFree(w[i]);
        if (d[i]) cudaFree(d[i]);
    }
    if (ws) cudaFree(ws);
    if (scale) cudaFree(scale);
    return rc;
}
