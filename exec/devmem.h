/*
 * exec/devmem.h: the CUDA runtime seam of podplan exec (private to exec/).
 *
 * The collectives and the memory benchmarks keep their logic in C and
 * reach the GPU only through these few calls, implemented in
 * exec/cuda_rt.cu when the build has CUDA (PODPLAN_HAVE_CUDA) and by
 * stubs that answer PP_ENODEV otherwise, so every caller compiles the
 * same way on a machine without a GPU.
 */
#ifndef PODPLAN_EXEC_DEVMEM_H
#define PODPLAN_EXEC_DEVMEM_H

#include <stdbool.h>
#include <stddef.h>

#include "podplan/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element types and reductions of exec's collectives. */
typedef enum { PP_XDT_FP32, PP_XDT_BF16, PP_XDT_FP16, PP_XDT__COUNT } pp_xdtype;
typedef enum { PP_XOP_SUM, PP_XOP_MAX, PP_XOP_MIN, PP_XOP__COUNT } pp_xredop;

/* Bytes per element. */
size_t pp_xdtype_size(pp_xdtype t);

/* Whether a CUDA device can be used; when not, why says what was missing
 * ("built without CUDA", "cudaGetDeviceCount: no CUDA-capable device is
 * detected").  Never fails otherwise. */
bool pp_cuda_available(char *why, size_t len);
/* Selects device `dev` modulo the number of devices for this process
 * (LOCAL_RANK, say: local ranks beyond the GPU count share GPUs). */
int pp_cuda_set_device(int dev, pp_error *e);
/* The device this process uses (after pp_cuda_set_device). */
int pp_cuda_get_device(int *dev, pp_error *e);
/* Device name and compute capability of the current device. */
int pp_cuda_device_name(char *buf, size_t len, int *cc_major, int *cc_minor,
                        pp_error *e);

int pp_cuda_malloc(void **out, size_t bytes, pp_error *e);
void pp_cuda_free(void *p); /* NULL is a no-op */
/* Page-locks [p, p+bytes) of host memory for fast copies
 * (cudaHostRegister), and undoes it. */
int pp_cuda_host_register(void *p, size_t bytes, pp_error *e);
void pp_cuda_host_unregister(void *p);
int pp_cuda_h2d(void *dst, const void *src, size_t bytes, pp_error *e);
int pp_cuda_d2h(void *dst, const void *src, size_t bytes, pp_error *e);
/* dst[i] = op(dst[i], src[i]) for count elements, both in device memory;
 * synchronous. */
int pp_cuda_reduce(pp_xdtype t, pp_xredop op, void *dst, const void *src,
                   size_t count, pp_error *e);

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_EXEC_DEVMEM_H */
