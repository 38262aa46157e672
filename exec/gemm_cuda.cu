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
 *
 * Grouped issue (opts.streams > 0): the batch's GEMMs as separate calls,
 * the way Transformer Engine's GroupedLinear runs an MoE layer's local
 * experts (nvte_multi_stream_cublas_gemm: an event forks its 4 compute
 * streams from the caller's, GEMM i goes to stream i mod 4 with that
 * stream's own workspace, and the caller's stream waits on each stream's
 * event).  Whether such a group shares the GPU's waves like one batched
 * call, and what the host pays to issue it, are what the planner's price
 * of grouped GEMMs assumes; this times both.
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
#include <unistd.h>

#include "devmem.h"
#include "gemm_int.h"

#define MAX_SETS 16
#define MAX_ALGOS 32
#define MAX_STREAMS 16

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

/* One GEMM's (or one strided batch's) descriptors: TN, FP8's per-tensor
 * scale pointers where the dtype is fp8 (as Transformer Engine passes
 * them).  A = W (k x n, transposed), B = X (k x m), C = D (n x m). */
typedef struct gemm_desc {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
} gemm_desc;

static void desc_free(gemm_desc *g) {
    if (g->la) cublasLtMatrixLayoutDestroy(g->la);
    if (g->lb) cublasLtMatrixLayoutDestroy(g->lb);
    if (g->lc) cublasLtMatrixLayoutDestroy(g->lc);
    if (g->op) cublasLtMatmulDescDestroy(g->op);
    memset(g, 0, sizeof *g);
}

/* sm_target > 0: cuBLASLt's heuristic and kernels aim at that many SMs
 * (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, what Transformer Engine sets
 * when communication runs beside a GEMM). */
static int describe(const dt_info &dt, bool fp8, const float *scale,
                    const pp_gemm_shape *s, int32_t batch, int32_t sm_target,
                    gemm_desc *g, pp_error *e) {
    int rc = 0;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    memset(g, 0, sizeof *g);
    LT(cublasLtMatmulDescCreate(&g->op, dt.compute, CUDA_R_32F));
    LT(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                      sizeof ta));
    LT(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                      sizeof tb));
    if (sm_target > 0)
        LT(cublasLtMatmulDescSetAttribute(g->op,
                                          CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET,
                                          &sm_target, sizeof sm_target));
    if (fp8) {
        LT(cublasLtMatmulDescSetAttribute(
            g->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale, sizeof scale));
        LT(cublasLtMatmulDescSetAttribute(
            g->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale, sizeof scale));
    }
    if ((rc = layout(&g->la, dt.ab, (uint64_t)s->k, (uint64_t)s->n, batch, e)) <
            0 ||
        (rc = layout(&g->lb, dt.ab, (uint64_t)s->k, (uint64_t)s->m, batch, e)) <
            0 ||
        (rc = layout(&g->lc, dt.cd, (uint64_t)s->n, (uint64_t)s->m, batch, e)) <
            0)
        goto out;
out:
    if (rc < 0) desc_free(g);
    return rc;
}

/* The heuristic's first `want` candidates for g within ws_bytes of
 * workspace; *got of them.  No candidate is an error. */
static int heuristic(cublasLtHandle_t lt, const gemm_desc *g, size_t ws_bytes,
                     int want, bool fp8, cublasLtMatmulHeuristicResult_t *h,
                     int *got, pp_error *e) {
    int rc = 0;
    cublasLtMatmulPreference_t pref = NULL;
    *got = 0;
    LT(cublasLtMatmulPreferenceCreate(&pref));
    LT(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
        sizeof ws_bytes));
    LT(cublasLtMatmulAlgoGetHeuristic(lt, g->op, g->la, g->lb, g->lc, g->lc,
                                      pref, want, h, got));
    if (*got == 0)
        rc = pp_error_set(e, PP_EFAIL,
                          "cuBLASLt has no algorithm for this "
                          "shape and dtype%s",
                          fp8 ? " (fp8 wants m, n, k multiples of 16)" : "");
out:
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
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

/* Grouped issue's state: the timing stream, the compute streams with a
 * workspace each, the fork and join events, and the descriptors built
 * once (also what a CUDA graph captures under per-call set-up). */
typedef struct group {
    cublasLtHandle_t lt;
    const dt_info *dt;
    bool fp8, per_call;
    const float *scale;
    const pp_gemm_shape *s;
    int ns; /* streams used: min(streams, batch) */
    cudaStream_t main, str[MAX_STREAMS];
    cudaEvent_t fork, join[MAX_STREAMS];
    void *ws[MAX_STREAMS];
    size_t ws_bytes;
    gemm_desc once;
    cublasLtMatmulAlgo_t algo;
} group;

/* One GEMM of the group, as TE's cublas_gemm runs it under per-call
 * set-up: descriptors, heuristic (first candidate), matmul, destroy. */
static int group_call(group *g, int i, const void *x, const void *w, void *d,
                      bool per_call, pp_error *e) {
    int rc = 0;
    const float alpha = 1.0f, beta = 0.0f;
    gemm_desc tmp, *dsc = &g->once;
    const cublasLtMatmulAlgo_t *algo = &g->algo;
    cublasLtMatmulHeuristicResult_t h;
    int got = 0;
    memset(&tmp, 0, sizeof tmp);
    if (per_call) {
        if ((rc = describe(*g->dt, g->fp8, g->scale, g->s, 1, 0, &tmp, e)) <
                0 ||
            (rc = heuristic(g->lt, &tmp, g->ws_bytes, 1, g->fp8, &h, &got, e)) <
                0)
            goto out;
        dsc = &tmp;
        algo = &h.algo;
    }
    LT(cublasLtMatmul(g->lt, dsc->op, &alpha, w, dsc->la, x, dsc->lb, &beta, d,
                      dsc->lc, d, dsc->lc, algo, g->ws[i % g->ns], g->ws_bytes,
                      g->str[i % g->ns]));
out:
    desc_free(&tmp);
    return rc;
}

/* Issues one group (operands x, w, d) on g->main: fork, the batch's
 * GEMMs round-robin over the streams, join. */
static int group_issue(group *g, void *x, void *w, void *d, bool per_call,
                       pp_error *e) {
    int rc = 0;
    const pp_gemm_shape *s = g->s;
    size_t ab = g->dt->ab_size, cd = g->dt->cd_size;
    CU(cudaEventRecord(g->fork, g->main));
    for (int k = 0; k < g->ns; k++)
        CU(cudaStreamWaitEvent(g->str[k], g->fork, 0));
    for (int64_t i = 0; i < s->batch; i++)
        if ((rc = group_call(g, (int)i, (char *)x + i * s->m * s->k * ab,
                             (char *)w + i * s->n * s->k * ab,
                             (char *)d + i * s->m * s->n * cd, per_call, e)) <
            0)
            goto out;
    for (int k = 0; k < g->ns; k++) {
        CU(cudaEventRecord(g->join[k], g->str[k]));
        CU(cudaStreamWaitEvent(g->main, g->join[k], 0));
    }
out:
    return rc;
}

/*
 * The load beside the GEMMs (opts.load_sms): what a NCCL collective does
 * to the kernels it overlaps, one block per channel on an SM of its own,
 * streaming its buffers through HBM and L2 while the GEMM's blocks take
 * the other SMs.  Each block copies its own slice of src into dst in
 * chunks of 32 KiB and, when throttled, waits on the global timer until
 * its share of the asked rate allows the next chunk.  The GEMM stream
 * cannot wait for it (it runs on a non-blocking stream until the host
 * sets ctl->stop), so the timed GEMMs see it throughout.
 */
#define LOAD_THREADS 512
#define LOAD_CHUNK (LOAD_THREADS * 4) /* uint4s: 32 KiB */

typedef struct load_ctl {
    unsigned long long bytes, t0, t1;
    int started, stop;
} load_ctl;

static __device__ unsigned long long now_ns(void) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* ns_per_chunk: 0 copies flat out; < 0 holds the SM and copies nothing. */
static __global__ void __launch_bounds__(LOAD_THREADS)
    load_kernel(const uint4 *src, uint4 *dst, size_t per_block,
                double ns_per_chunk, load_ctl *ctl) {
    __shared__ int stop;
    const uint4 *s = src + blockIdx.x * per_block;
    uint4 *d = dst + blockIdx.x * per_block;
    unsigned long long t0 = now_ns(), chunks = 0;
    size_t at = 0;
    if (threadIdx.x == 0) atomicAdd(&ctl->started, 1);
    for (;;) {
        if (threadIdx.x == 0) {
            int halt = *(volatile int *)&ctl->stop;
            if (!halt && ns_per_chunk != 0) {
                unsigned long long due =
                    ns_per_chunk < 0
                        ? now_ns() + 2000
                        : t0 + (unsigned long long)(ns_per_chunk *
                                                    (double)(chunks + 1));
                while (now_ns() < due && !(halt = *(volatile int *)&ctl->stop))
                    __nanosleep(500);
            }
            stop = halt;
        }
        __syncthreads();
        if (stop) break;
        if (ns_per_chunk >= 0) {
            for (int j = 0; j < 4; j++) {
                size_t i = at + (size_t)j * LOAD_THREADS + threadIdx.x;
                d[i] = s[i];
            }
            at += LOAD_CHUNK;
            if (at + LOAD_CHUNK > per_block) at = 0;
            chunks++;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        atomicAdd(&ctl->bytes, chunks * 2ull * LOAD_CHUNK * sizeof(uint4));
        atomicMin(&ctl->t0, t0);
        atomicMax(&ctl->t1, now_ns());
    }
}

typedef struct load_run {
    cudaStream_t str;
    void *src, *dst;
    load_ctl *ctl;
    bool running;
} load_run;

/* Starts the load and waits (up to a second) until all its blocks run. */
static int load_start(load_run *L, int sms, double rate, pp_error *e) {
    int rc = 0, started = 0;
    size_t per_block = ((size_t)16 << 20) / sizeof(uint4); /* 16 MiB */
    load_ctl init;
    double ns = rate < 0 ? 0
                : rate == 0
                    ? -1
                    : 2.0 * LOAD_CHUNK * sizeof(uint4) / (rate / sms) * 1e9;
    memset(&init, 0, sizeof init);
    init.t0 = ~0ull;
    CU(cudaStreamCreateWithFlags(&L->str, cudaStreamNonBlocking));
    CU(cudaMalloc(&L->src, per_block * sizeof(uint4) * sms));
    CU(cudaMalloc(&L->dst, per_block * sizeof(uint4) * sms));
    CU(cudaMemset(L->src, 1, per_block * sizeof(uint4) * sms));
    CU(cudaMalloc((void **)&L->ctl, sizeof *L->ctl));
    CU(cudaMemcpy(L->ctl, &init, sizeof init, cudaMemcpyHostToDevice));
    CU(cudaDeviceSynchronize());
    load_kernel<<<sms, LOAD_THREADS, 0, L->str>>>(
        (const uint4 *)L->src, (uint4 *)L->dst, per_block, ns, L->ctl);
    CU(cudaGetLastError());
    L->running = true;
    for (int tries = 0; tries < 1000 && started < sms; tries++) {
        CU(cudaMemcpy(&started, &L->ctl->started, sizeof started,
                      cudaMemcpyDeviceToHost));
        if (started < sms) usleep(1000);
    }
    if (started < sms)
        rc = pp_error_set(e, PP_EFAIL,
                          "--load-sms %d: only %d of its blocks started", sms,
                          started);
out:
    return rc;
}

/* Stops the load (also on an error path) and reads what it moved. */
static int load_stop(load_run *L, double *rate, pp_error *e) {
    int rc = 0;
    const int one = 1;
    load_ctl c;
    if (L->running) {
        L->running = false;
        CU(cudaMemcpy(&L->ctl->stop, &one, sizeof one, cudaMemcpyHostToDevice));
        CU(cudaStreamSynchronize(L->str));
        CU(cudaGetLastError());
        CU(cudaMemcpy(&c, L->ctl, sizeof c, cudaMemcpyDeviceToHost));
        if (rate)
            *rate = c.t1 > c.t0 ? (double)c.bytes / ((c.t1 - c.t0) * 1e-9) : 0;
    }
out:
    return rc;
}

static void load_free(load_run *L) {
    pp_error ignored = PP_ERROR_INIT;
    load_stop(L, NULL, &ignored);
    if (L->str) cudaStreamDestroy(L->str);
    if (L->src) cudaFree(L->src);
    if (L->dst) cudaFree(L->dst);
    if (L->ctl) cudaFree(L->ctl);
}

/* --reserve-sms and --load-sms leave the GEMM at least one SM. */
static int sms_left(const cudaDeviceProp &prop, const char *opt, int k,
                    pp_error *e) {
    if (k < prop.multiProcessorCount) return 0;
    return pp_error_set(e, PP_EUSAGE,
                        "%s %d: %s has %d SMs; the GEMM needs at least one",
                        opt, k, prop.name, prop.multiProcessorCount);
}

/* The statistics of the n intervals between events ev[0..n]. */
static int event_samples(cudaEvent_t *ev, int n, double *samples,
                         pp_exec_stats *st, pp_error *e) {
    int rc = 0;
    for (int it = 0; it < n; it++) {
        float ms = 0;
        CU(cudaEventElapsedTime(&ms, ev[it], ev[it + 1]));
        samples[it] = 1e-3 * (double)ms;
    }
    rc = pp_exec_stats_compute(samples, (size_t)n, st, e);
out:
    return rc;
}

/* The grouped run: eager groups back to back (r->time), each group's
 * host issue onto an idle GPU (r->issue_s), and one group captured in a
 * CUDA graph and replayed (r->graph_s, always with the descriptors built
 * once: a graph holds kernels, not their set-up). */
static int grouped_run(const pp_exec_gemm_opts *o, const pp_gemm_shape *s,
                       const dt_info &dt, const float *scale, void **x,
                       void **w, void **d, int sets, size_t ws_bytes,
                       cudaEvent_t *ev, double *samples, pp_exec_gemm_result *r,
                       pp_error *e) {
    int rc = 0, got = 0, lo = 0, hi = 0;
    group g;
    cublasLtMatmulHeuristicResult_t h;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    pp_exec_stats st;

    memset(&g, 0, sizeof g);
    g.dt = &dt;
    g.fp8 = o->dtype == PP_GEMM_FP8;
    g.per_call = o->setup_per_call;
    g.scale = scale;
    g.s = s;
    g.ws_bytes = ws_bytes;
    g.ns = o->streams < s->batch ? o->streams : (int)s->batch;
    LT(cublasLtCreate(&g.lt));
    CU(cudaStreamCreateWithFlags(&g.main, cudaStreamNonBlocking));
    CU(cudaEventCreateWithFlags(&g.fork, cudaEventDisableTiming));
    /* TE's compute streams: non-blocking, priority -1 (above the
     * caller's 0), within the device's range. */
    CU(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    for (int k = 0; k < g.ns; k++) {
        CU(cudaStreamCreateWithPriority(&g.str[k], cudaStreamNonBlocking,
                                        -1 < hi ? hi : -1));
        CU(cudaEventCreateWithFlags(&g.join[k], cudaEventDisableTiming));
        CU(cudaMalloc(&g.ws[k], ws_bytes));
    }
    if ((rc = describe(dt, g.fp8, scale, s, 1, 0, &g.once, e)) < 0 ||
        (rc = heuristic(g.lt, &g.once, ws_bytes, 1, g.fp8, &h, &got, e)) < 0)
        goto out;
    g.algo = h.algo;

    for (int it = 0; it < o->warmup; it++)
        if ((rc = group_issue(&g, x[it % sets], w[it % sets], d[it % sets],
                              g.per_call, e)) < 0)
            goto out;
    CU(cudaEventRecord(ev[0], g.main));
    for (int it = 0; it < o->iters; it++) {
        int q = it % sets;
        if ((rc = group_issue(&g, x[q], w[q], d[q], g.per_call, e)) < 0)
            goto out;
        CU(cudaEventRecord(ev[it + 1], g.main));
    }
    CU(cudaEventSynchronize(ev[o->iters]));
    CU(cudaGetLastError());
    if ((rc = event_samples(ev, o->iters, samples, &r->time, e)) < 0) goto out;

    /* The host's part: each group issued onto an idle GPU, so no queue
     * back-pressure is timed. */
    for (int it = 0; it < o->iters; it++) {
        int q = it % sets;
        CU(cudaStreamSynchronize(g.main));
        double t0 = pp_exec_now();
        if ((rc = group_issue(&g, x[q], w[q], d[q], g.per_call, e)) < 0)
            goto out;
        samples[it] = pp_exec_now() - t0;
    }
    CU(cudaStreamSynchronize(g.main));
    if ((rc = pp_exec_stats_compute(samples, (size_t)o->iters, &st, e)) < 0)
        goto out;
    r->issue_s = st.median;

    /* The GPU's part: set 0's group in a graph, replayed back to back. */
    CU(cudaStreamBeginCapture(g.main, cudaStreamCaptureModeThreadLocal));
    rc = group_issue(&g, x[0], w[0], d[0], false, e);
    {
        cudaError_t ce = cudaStreamEndCapture(g.main, &graph);
        if (rc < 0) goto out;
        CU(ce);
    }
    CU(cudaGraphInstantiate(&exec, graph, 0));
    for (int it = 0; it < 3; it++) CU(cudaGraphLaunch(exec, g.main));
    CU(cudaEventRecord(ev[0], g.main));
    for (int it = 0; it < o->iters; it++) {
        CU(cudaGraphLaunch(exec, g.main));
        CU(cudaEventRecord(ev[it + 1], g.main));
    }
    CU(cudaEventSynchronize(ev[o->iters]));
    CU(cudaGetLastError());
    if ((rc = event_samples(ev, o->iters, samples, &st, e)) < 0) goto out;
    r->graph_s = st.median;
    r->streams = o->streams;
    r->setup_per_call = g.per_call;
    {
        int id = -1;
        algo_words(&g.algo, &id, r->algo, sizeof r->algo, 0, got);
        r->algo_id = id;
    }
    r->algos_tried = 1;
    r->buffers = sets;
out:
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    desc_free(&g.once);
    for (int k = 0; k < g.ns; k++) {
        if (g.join[k]) cudaEventDestroy(g.join[k]);
        if (g.str[k]) cudaStreamDestroy(g.str[k]);
        if (g.ws[k]) cudaFree(g.ws[k]);
    }
    if (g.fork) cudaEventDestroy(g.fork);
    if (g.main) cudaStreamDestroy(g.main);
    if (g.lt) cublasLtDestroy(g.lt);
    return rc;
}

extern "C" int pp__cuda_gemm_run(const pp_exec_gemm_opts *o,
                                 const pp_gemm_shape *s,
                                 pp_exec_gemm_result *out, pp_error *e) {
    int rc = 0, sets = 1, n_algos = 0, best = -1, best_id = -1;
    dt_info dt = dt_of(o->dtype);
    bool fp8 = o->dtype == PP_GEMM_FP8;
    cudaDeviceProp prop;
    cublasLtHandle_t lt = NULL;
    gemm_desc g;
    cublasLtMatmulHeuristicResult_t heur[MAX_ALGOS];
    void *x[MAX_SETS] = {0}, *w[MAX_SETS] = {0}, *d[MAX_SETS] = {0};
    void *ws = NULL;
    float *scale = NULL;
    cudaEvent_t *ev = NULL;
    int n_ev = 0;
    double *samples = NULL, best_t = INFINITY;
    load_run load;
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
    memset(&g, 0, sizeof g);
    memset(&load, 0, sizeof load);
    if (!pp_cuda_available(why, sizeof why))
        return pp_error_set(e, PP_ENODEV, "--backend cuda: %s", why);
    if (o->algos < 1 || o->algos > MAX_ALGOS)
        return pp_error_set(e, PP_EINVAL, "--algos: 1 to %d", MAX_ALGOS);
    if (o->streams < 0 || o->streams > MAX_STREAMS)
        return pp_error_set(e, PP_EINVAL, "--streams: 1 to %d", MAX_STREAMS);
    CU(cudaSetDevice(o->device));
    CU(cudaGetDeviceProperties(&prop, o->device));
    if (fp8 && prop.major * 10 + prop.minor < 89)
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
    if (fp8) {
        /* Per-tensor scales (1: the inputs are already in e4m3's range),
         * as Transformer Engine passes them. */
        const float one = 1.0f;
        CU(cudaMalloc((void **)&scale, sizeof one));
        CU(cudaMemcpy(scale, &one, sizeof one, cudaMemcpyHostToDevice));
    }
    n_ev = (o->iters > 10 ? o->iters : 10) + 1;
    ev = (cudaEvent_t *)pp_xcalloc((size_t)n_ev, sizeof *ev);
    for (int i = 0; i < n_ev; i++) CU(cudaEventCreate(&ev[i]));
    samples = (double *)pp_xmalloc((size_t)n_ev * sizeof *samples);
    if (o->streams > 0) {
        CU(cudaDeviceSynchronize());
        if ((rc = grouped_run(o, s, dt, scale, x, w, d, sets, ws_bytes, ev,
                              samples, &r, e)) < 0)
            goto out;
        goto checked;
    }
    CU(cudaMalloc(&ws, ws_bytes));

    LT(cublasLtCreate(&lt));
    if ((rc = sms_left(prop, "--reserve-sms", o->reserve_sms, e)) < 0 ||
        (rc = sms_left(prop, "--load-sms", o->load_sms, e)) < 0)
        goto out;
    if ((rc = describe(
             dt, fp8, scale, s, batch,
             o->reserve_sms > 0 ? prop.multiProcessorCount - o->reserve_sms : 0,
             &g, e)) < 0 ||
        (rc = heuristic(lt, &g, ws_bytes, o->algos, fp8, heur, &n_algos, e)) <
            0)
        goto out;

    /* Each candidate: 2 untimed runs, 10 timed back to back. */
    for (int a = 0; a < n_algos; a++) {
        if (heur[a].state != CUBLAS_STATUS_SUCCESS) continue;
        cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
        for (int it = 0; it < 12 && st == CUBLAS_STATUS_SUCCESS; it++) {
            int q = it % sets;
            if (it == 2) CU(cudaEventRecord(ev[0]));
            st = cublasLtMatmul(lt, g.op, &alpha, w[q], g.la, x[q], g.lb, &beta,
                                d[q], g.lc, d[q], g.lc, &heur[a].algo, ws,
                                ws_bytes, 0);
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
    if (o->load_sms > 0 &&
        (rc = load_start(&load, o->load_sms, o->load_rate, e)) < 0)
        goto out;

    for (int it = 0; it < o->warmup; it++) {
        int q = it % sets;
        LT(cublasLtMatmul(lt, g.op, &alpha, w[q], g.la, x[q], g.lb, &beta, d[q],
                          g.lc, d[q], g.lc, &heur[best].algo, ws, ws_bytes, 0));
    }
    CU(cudaEventRecord(ev[0]));
    for (int it = 0; it < o->iters; it++) {
        int q = it % sets;
        LT(cublasLtMatmul(lt, g.op, &alpha, w[q], g.la, x[q], g.lb, &beta, d[q],
                          g.lc, d[q], g.lc, &heur[best].algo, ws, ws_bytes, 0));
        CU(cudaEventRecord(ev[it + 1]));
    }
    CU(cudaEventSynchronize(ev[o->iters]));
    CU(cudaGetLastError());
    if (o->load_sms > 0) {
        if ((rc = load_stop(&load, &r.load_rate, e)) < 0) goto out;
        r.load_sms = o->load_sms;
        r.load_rate_asked = o->load_rate;
    }
    if ((rc = event_samples(ev, o->iters, samples, &r.time, e)) < 0) goto out;
    algo_words(&heur[best].algo, &best_id, r.algo, sizeof r.algo, best,
               n_algos);
    r.algo_id = best_id;
    r.algos_tried = n_algos;
    r.buffers = sets;
    if (o->reserve_sms > 0) {
        r.sms_reserved = o->reserve_sms;
        r.sm_target = prop.multiProcessorCount - o->reserve_sms;
    }
checked:
    if (o->check) {
        if ((rc = check(dt, o->dtype, s, x[0], w[0], d[0], &r.check_err, e)) <
            0)
            goto out;
        r.checked = true;
    }
    *out = r;
out:
    if (ev)
        for (int i = 0; i < n_ev; i++)
            if (ev[i]) cudaEventDestroy(ev[i]);
    free(ev);
    free(samples);
    load_free(&load);
    desc_free(&g);
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
