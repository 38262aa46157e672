/*
 * devmem_nocuda.c: devmem.h for builds without CUDA, so that every caller
 * compiles and links the same way and learns at run time that there is no
 * GPU (PP_ENODEV with the reason).  The CUDA build replaces the device
 * calls with exec/cuda_rt.cu (another branch); pp_xdtype_size is plain C
 * and stays here.
 */
#include "devmem.h"

#include <stdio.h>

size_t pp_xdtype_size(pp_xdtype t) {
    return t == PP_XDT_FP32 ? 4 : t == PP_XDT_BF16 || t == PP_XDT_FP16 ? 2 : 0;
}

#ifndef PODPLAN_HAVE_CUDA
#define NODEV(e)                                                               \
    pp_error_set(e, PP_ENODEV, "no GPU: podplan was built without CUDA")

bool pp_cuda_available(char *why, size_t len) {
    if (why && len) snprintf(why, len, "built without CUDA");
    return false;
}
int pp_cuda_set_device(int dev, pp_error *e) {
    return NODEV(e);
}
int pp_cuda_get_device(int *dev, pp_error *e) {
    return NODEV(e);
}
int pp_cuda_device_name(char *buf, size_t len, int *cc_major, int *cc_minor,
                        pp_error *e) {
    return NODEV(e);
}
int pp_cuda_malloc(void **out, size_t bytes, pp_error *e) {
    return NODEV(e);
}
void pp_cuda_free(void *p) {}
int pp_cuda_host_register(void *p, size_t bytes, pp_error *e) {
    return NODEV(e);
}
void pp_cuda_host_unregister(void *p) {}
int pp_cuda_h2d(void *dst, const void *src, size_t bytes, pp_error *e) {
    return NODEV(e);
}
int pp_cuda_d2h(void *dst, const void *src, size_t bytes, pp_error *e) {
    return NODEV(e);
}
int pp_cuda_reduce(pp_xdtype t, pp_xredop op, void *dst, const void *src,
                   size_t count, pp_error *e) {
    return NODEV(e);
}
#endif
