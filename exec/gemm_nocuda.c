/*
 * gemm_nocuda.c: the CUDA halves of exec gemm / membw (gemm_int.h) for a
 * build without CUDA: PP_ENODEV "built without CUDA", so the drivers
 * compile and link the same way everywhere.  devmem.h's own stubs and
 * pp_xdtype_size are in devmem_nocuda.c.
 */
#include "gemm_int.h"

#ifndef PODPLAN_HAVE_CUDA
#define NODEV(what) pp_error_set(e, PP_ENODEV, "%s: built without CUDA", what)

int pp__cuda_gemm_run(const pp_exec_gemm_opts *o, const pp_gemm_shape *s,
                      pp_exec_gemm_result *out, pp_error *e) {
    return NODEV("--backend cuda");
}
int pp__cuda_device_info(int device, pp_exec_device *out, pp_error *e) {
    return NODEV("--backend cuda");
}
int pp__cuda_membw(pp_membw_kind kind, size_t array_bytes, int iters,
                   int device, double *samples, pp_error *e) {
    return NODEV("--device cuda");
}
#else
/* ISO C forbids an empty translation unit. */
typedef int pp__gemm_nocuda_unused;
#endif
