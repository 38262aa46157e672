/*
 * cuda_rt.cu: the CUDA runtime seam (devmem.h) and the device STREAM
 * kernels of `exec membw --device cuda`.
 *
 * Every CUDA call is checked and its cudaGetErrorString ends up in the
 * pp_error, named after the call, so a failure on a lent GPU can be read
 * from the log alone.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

#include "devmem.h"
#include "gemm_int.h"

#define CK(call)                                                               \
    do {                                                                       \
        cudaError_t err_ = (call);                                             \
        if (err_ != cudaSuccess)                                               \
            return pp_error_set(e, PP_EFAIL, "%s: %s", #call,                  \
                                cudaGetErrorString(err_));                     \
    } while (0)

extern "C" bool pp_cuda_available(char *why, size_t len) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        if (why && len)
            snprintf(why, len, "cudaGetDeviceCount: %s",
                     cudaGetErrorString(err));
        (void)cudaGetLastError(); /* clear the sticky-free error */
        return false;
    }
    if (n == 0) {
        if (why && len) snprintf(why, len, "no CUDA device");
        return false;
    }
    if (why && len) why[0] = '\0';
    return true;
}

extern "C" int pp_cuda_set_device(int dev, pp_error *e) {
    /* Local ranks beyond the GPU count share GPUs round-robin (--np 4 on
     * one GPU tests the device path; a real run has one rank per GPU). */
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    if (n > 0 && dev >= 0) dev %= n;
    CK(cudaSetDevice(dev));
    return 0;
}

extern "C" int pp_cuda_get_device(int *dev, pp_error *e) {
    CK(cudaGetDevice(dev));
    return 0;
}

extern "C" int pp_cuda_device_name(char *buf, size_t len, int *cc_major,
                                   int *cc_minor, pp_error *e) {
    int dev;
    cudaDeviceProp p;
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&p, dev));
    if (buf && len) snprintf(buf, len, "%s", p.name);
    if (cc_major) *cc_major = p.major;
    if (cc_minor) *cc_minor = p.minor;
    return 0;
}

extern "C" int pp_cuda_malloc(void **out, size_t bytes, pp_error *e) {
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err != cudaSuccess)
        return pp_error_set(
            e, err == cudaErrorMemoryAllocation ? PP_ENOMEM : PP_EFAIL,
            "cudaMalloc(%zu bytes): %s", bytes, cudaGetErrorString(err));
    *out = p;
    return 0;
}

extern "C" void pp_cuda_free(void *p) {
    if (p) cudaFree(p);
}

extern "C" int pp_cuda_host_register(void *p, size_t bytes, pp_error *e) {
    CK(cudaHostRegister(p, bytes, cudaHostRegisterDefault));
    return 0;
}

extern "C" void pp_cuda_host_unregister(void *p) {
    if (p) cudaHostUnregister(p);
}

extern "C" int pp_cuda_h2d(void *dst, const void *src, size_t bytes,
                           pp_error *e) {
    CK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    return 0;
}

extern "C" int pp_cuda_d2h(void *dst, const void *src, size_t bytes,
                           pp_error *e) {
    CK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    return 0;
}

/* ------------------------------------------------------------------------
 * Reductions: dst = op(dst, src), element-wise, accumulated in float and
 * rounded once to the element type (what NCCL does for bf16/fp16).
 * ---------------------------------------------------------------------- */
template <typename T> struct cvt;
template <> struct cvt<float> {
    __device__ static float load(float x) {
        return x;
    }
    __device__ static float store(float x) {
        return x;
    }
};
template <> struct cvt<__nv_bfloat16> {
    __device__ static float load(__nv_bfloat16 x) {
        return __bfloat162float(x);
    }
    __device__ static __nv_bfloat16 store(float x) {
        return __float2bfloat16(x);
    }
};
template <> struct cvt<__half> {
    __device__ static float load(__half x) {
        return __half2float(x);
    }
    __device__ static __half store(float x) {
        return __float2half(x);
    }
};

template <typename T, int OP>
__global__ void reduce_kernel(T *dst, const T *src, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        float a = cvt<T>::load(dst[i]), b = cvt<T>::load(src[i]);
        float r = OP == PP_XOP_SUM   ? a + b
                  : OP == PP_XOP_MAX ? fmaxf(a, b)
                                     : fminf(a, b);
        dst[i] = cvt<T>::store(r);
    }
}

static int grid_for(size_t n, int block) {
    int dev = 0, sms = 80;
    if (cudaGetDevice(&dev) == cudaSuccess)
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    size_t want = (n + (size_t)block - 1) / (size_t)block;
    size_t cap = (size_t)sms * 8; /* enough blocks to fill every SM */
    if (want > cap) want = cap;
    return want ? (int)want : 1;
}

template <typename T>
static void launch_reduce(pp_xredop op, void *dst, const void *src, size_t n) {
    int g = grid_for(n, 256);
    T *d = (T *)dst;
    const T *s = (const T *)src;
    switch (op) {
    case PP_XOP_SUM: reduce_kernel<T, PP_XOP_SUM><<<g, 256>>>(d, s, n); break;
    case PP_XOP_MAX: reduce_kernel<T, PP_XOP_MAX><<<g, 256>>>(d, s, n); break;
    default: reduce_kernel<T, PP_XOP_MIN><<<g, 256>>>(d, s, n); break;
    }
}

extern "C" int pp_cuda_reduce(pp_xdtype t, pp_xredop op, void *dst,
                              const void *src, size_t count, pp_error *e) {
    if ((unsigned)t >= PP_XDT__COUNT || (unsigned)op >= PP_XOP__COUNT)
        return pp_error_set(e, PP_EINVAL, "reduce: bad dtype or op");
    if (count == 0) return 0;
    switch (t) {
    case PP_XDT_FP32: launch_reduce<float>(op, dst, src, count); break;
    case PP_XDT_BF16: launch_reduce<__nv_bfloat16>(op, dst, src, count); break;
    default: launch_reduce<__half>(op, dst, src, count); break;
    }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    return 0;
}

/* ------------------------------------------------------------------------
 * STREAM on the device: 16-byte (float4) accesses, grid-stride loops,
 * the float tail (sizes are multiples of 16 bytes: none) handled anyway.
 * ---------------------------------------------------------------------- */
__global__ void copy_kernel(float4 *__restrict__ c,
                            const float4 *__restrict__ a, size_t n4) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4;
         i += stride)
        c[i] = a[i];
}

__global__ void triad_kernel(float4 *__restrict__ a,
                             const float4 *__restrict__ b,
                             const float4 *__restrict__ c, float s, size_t n4) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4;
         i += stride) {
        float4 x = b[i], y = c[i], r;
        r.x = x.x + s * y.x;
        r.y = x.y + s * y.y;
        r.z = x.z + s * y.z;
        r.w = x.w + s * y.w;
        a[i] = r;
    }
}

__global__ void fill_kernel(float *p, size_t n, float v) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride)
        p[i] = v;
}

extern "C" int pp__cuda_membw(pp_membw_kind kind, size_t bytes, int iters,
                              int device, double *samples, pp_error *e) {
    float *a = NULL, *b = NULL, *c = NULL;
    cudaEvent_t ev0 = NULL, ev1 = NULL;
    int rc = 0;
    size_t n4 = bytes / 16;
    int grid;
    char why[256];
    if (!pp_cuda_available(why, sizeof why))
        return pp_error_set(e, PP_ENODEV, "--device cuda: %s", why);
    if ((rc = pp_cuda_set_device(device, e)) < 0 ||
        (rc = pp_cuda_malloc((void **)&a, bytes, e)) < 0 ||
        (rc = pp_cuda_malloc((void **)&b, bytes, e)) < 0 ||
        (rc = pp_cuda_malloc((void **)&c, bytes, e)) < 0)
        goto out;
#define CKG(call)                                                              \
    do {                                                                       \
        cudaError_t err_ = (call);                                             \
        if (err_ != cudaSuccess) {                                             \
            rc = pp_error_set(e, PP_EFAIL, "%s: %s", #call,                    \
                              cudaGetErrorString(err_));                       \
            goto out;                                                          \
        }                                                                      \
    } while (0)
    grid = grid_for(n4, 256);
    fill_kernel<<<grid, 256>>>(a, bytes / 4, 1.0f);
    fill_kernel<<<grid, 256>>>(b, bytes / 4, 2.0f);
    fill_kernel<<<grid, 256>>>(c, bytes / 4, 0.5f);
    CKG(cudaGetLastError());
    CKG(cudaEventCreate(&ev0));
    CKG(cudaEventCreate(&ev1));
    for (int it = 0; it < iters + 2; it++) {
        CKG(cudaEventRecord(ev0));
        if (kind == PP_MEMBW_COPY)
            copy_kernel<<<grid, 256>>>((float4 *)c, (const float4 *)a, n4);
        else if (kind == PP_MEMBW_TRIAD)
            triad_kernel<<<grid, 256>>>((float4 *)a, (const float4 *)b,
                                        (const float4 *)c, 3.0f, n4);
        else
            CKG(cudaMemcpyAsync(c, a, bytes, cudaMemcpyDeviceToDevice));
        CKG(cudaGetLastError());
        CKG(cudaEventRecord(ev1));
        CKG(cudaEventSynchronize(ev1));
        float ms = 0;
        CKG(cudaEventElapsedTime(&ms, ev0, ev1));
        if (it >= 2) samples[it - 2] = 1e-3 * (double)ms;
    }
out:
    if (ev0) cudaEventDestroy(ev0);
    if (ev1) cudaEventDestroy(ev1);
    pp_cuda_free(a);
    pp_cuda_free(b);
    pp_cuda_free(c);
    return rc;
}
