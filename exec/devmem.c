/*
 * devmem.c: what the CUDA seam needs without CUDA: the element sizes,
 * and, in a build without CUDA (no PODPLAN_HAVE_CUDA), stubs for
 * devmem.h and gemm_int.h that answer PP_ENODEV "built without CUDA", so
 * every caller compiles and links the same way on any machine.
 */
#include <string.h>

#include "devmem.h"
#include "gemm_int.h"

size_t pp_xdtype_size(pp_xdtype t) {
    switch (t) {
    case PP_XDT_FP32: return 4;
    case PP_XDT_BF16:
    case PP_XDT_FP16: return 2;
    default: return 0;
    }
}

#ifndef PODPLAN_HAVE_CUDA
#define NODEV(what) \
    pp_error_set(e, PP_ENODEV, "%s: built without CUDA", what)

bool pp_cuda_available(char *why, size_t len) {
    if (why && len) snprintf(why, len, "built without CUDA");
    return false;
}
int pp_cuda_set_device(int dev, pp_error *e) { return NODEV("cudaSetDevice"); }
int pp_cuda_device_name(char *buf, size_t len, int *cc_major, int *cc_minor,
                        pp_error *e) {
    return NODEV("cudaGetDeviceProperties");
}
int pp_cuda_malloc(void **out, size_t bytes, pp_error *e) {
    return NODEV("cudaMalloc");
}
void pp_cuda_free(void *p) { (void)p; }
int pp_cuda_h2d(void *dst, const void *src, size_t bytes, pp_error *e) {
    return NODEV("cudaMemcpy");
}
int pp_cuda_d2h(void *dst, const void *src, size_t bytes, pp_error *e) {
    return NODEV("cudaMemcpy");
}
int pp_cuda_reduce(pp_xdtype t, pp_xredop op, void *dst, const void *src,
                   size_t count, pp_error *e) {
    return NODEV("reduce");
}
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
#endif
