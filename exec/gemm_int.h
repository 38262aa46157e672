/*
 * exec/gemm_int.h: GEMM and memory-bandwidth internals, private to exec/.
 *
 * The driver (gemm.c, membw.c) is C; the CUDA halves live in
 * gemm_cuda.cu and cuda_rt.cu when the build has CUDA, and in
 * gemm_nocuda.c's stubs (PP_ENODEV, "built without CUDA") otherwise.
 */
#ifndef PODPLAN_EXEC_GEMM_INT_H
#define PODPLAN_EXEC_GEMM_INT_H

#include "podplan/exec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cuBLASLt: the whole timed run of one shape (gemm_cuda.cu). */
int pp__cuda_gemm_run(const pp_exec_gemm_opts *o, const pp_gemm_shape *s,
                      pp_exec_gemm_result *out, pp_error *e);
int pp__cuda_device_info(int device, pp_exec_device *out, pp_error *e);

/* Device STREAM kernels (cuda_rt.cu): iters samples of seconds into
 * samples[]. */
int pp__cuda_membw(pp_membw_kind kind, size_t array_bytes, int iters,
                   int device, double *samples, pp_error *e);

/* How many input sets to rotate so that one pass over them exceeds
 * twice the cache: 1 when one set already does, at most max_sets, and
 * never more than fit in budget bytes. */
int pp__rotate_sets(double set_bytes, double cache_bytes, double budget,
                    int max_sets);

/* Seconds with the unit a reader wants: "812.3us", "16.19ms", "7.132s";
 * returns buf. */
const char *pp__fmt_s(double t, char *buf, size_t len);

/* Spot-check tolerance bound for a dtype: |c - ref| <= tol x sum |a w|. */
double pp__check_tol(pp_gemm_dtype t);

#ifdef __CUDACC__
#define PP__HD __host__ __device__
#else
#define PP__HD
#endif

/* Deterministic uniform values in [-1, 1) that are never 0 (splitmix64),
 * shared by the CPU fill and the GPU fill kernel. */
PP__HD static inline uint64_t pp__mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
PP__HD static inline float pp__rand_unit(uint64_t seed, uint64_t i) {
    uint64_t r = pp__mix64(seed ^ pp__mix64(i));
    /* 23 random mantissa bits, then an odd offset: never exactly 0. */
    float u = (float)((r >> 41) | 1u) * (1.0f / 8388608.0f); /* (0, 1) */
    return 2.0f * u - 1.0f; /* odd/2^22 - 1: never 0 */
}

#ifdef __cplusplus
}
#endif
#endif
