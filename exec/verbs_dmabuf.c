/*
 * exec/verbs_dmabuf.c: registering GPU memory for the verbs transport.
 *
 * With CUDA (PODPLAN_HAVE_CUDA):
 *   1. dma-buf: cuMemGetHandleForAddressRange(CU_MEM_RANGE_HANDLE_TYPE_
 *      DMA_BUF_FD) exports the buffer's pages as a dma-buf file and
 *      ibv_reg_dmabuf_mr registers them: the HCA reads and writes GPU
 *      memory directly (GPUDirect RDMA; Linux >= 5.12, the open NVIDIA
 *      kernel module, rdma-core >= 34).  The range must start and end on
 *      host-page boundaries, so the page-aligned cover is exported and
 *      the MR's iova is the buffer's own address.
 *   2. Otherwise staging: a host buffer of the same size is registered;
 *      a send copies device -> host before posting, a receive copies
 *      host -> device when its last chunk arrives.  Slower (two copies
 *      and a synchronous cuMemcpy) but needs nothing but CUDA.
 * The driver API is opened with dlopen, as NCCL does, so a CUDA build
 * still loads (and the host path still works) where libcuda.so.1 is not
 * installed.
 *
 * Without CUDA there is no GPU memory to register: PP_ENOSYS.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_int.h"

#ifdef PODPLAN_HAVE_CUDA
#include <dlfcn.h>
#include <unistd.h>
#include <cuda.h>

typedef CUresult (*handle_fn)(void *, CUdeviceptr, size_t, CUmemRangeHandleType,
                              unsigned long long);
typedef CUresult (*dtoh_fn)(void *, CUdeviceptr, size_t);
typedef CUresult (*htod_fn)(CUdeviceptr, const void *, size_t);

static struct {
    void *lib;
    handle_fn get_handle; /* NULL before CUDA 11.7 drivers */
    dtoh_fn dtoh;
    htod_fn htod;
} cu;

static int cu_load(pp_error *e) {
    if (cu.lib) return 0;
    cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) return pp_error_set(e, PP_ENODEV, "GPU memory: %s", dlerror());
    cu.get_handle = (handle_fn)dlsym(cu.lib, "cuMemGetHandleForAddressRange");
    cu.dtoh = (dtoh_fn)dlsym(cu.lib, "cuMemcpyDtoH_v2");
    cu.htod = (htod_fn)dlsym(cu.lib, "cuMemcpyHtoD_v2");
    if (!cu.dtoh || !cu.htod)
        return pp_error_set(e, PP_ENODEV,
                            "GPU memory: libcuda.so.1 lacks "
                            "cuMemcpyDtoH_v2/cuMemcpyHtoD_v2");
    return 0;
}

int pp__vb_reg_device(pp_xport *t, pp_xmr *x, pp_error *e) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)x->buf, lo = a & ~(pg - 1);
    size_t cover = ((a + x->len + pg - 1) & ~(pg - 1)) - lo;
    int fd = -1, rc = cu_load(e), access = IBV_ACCESS_LOCAL_WRITE;

    if (rc) goto out;
    if (cu.get_handle &&
        cu.get_handle(&fd, (CUdeviceptr)lo, cover,
                      CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) == CUDA_SUCCESS) {
        x->mr = pp__ibv_reg_dmabuf_mr(t->pd, a - lo, x->len, a, fd, access);
        close(fd); /* the MR holds its own reference */
        if (x->mr) goto out;
    }
    /* No GPUDirect RDMA here: stage through registered host memory. */
    x->stage = malloc(x->len);
    if (!x->stage) {
        rc = pp_error_set(e, PP_ENOMEM,
                          "rank %d: no memory for a %zu-byte "
                          "staging buffer",
                          t->o.rank, x->len);
        goto out;
    }
    x->mr = pp__ibv_reg_mr(t->pd, x->stage, x->len, access);
    if (!x->mr) {
        rc = pp_error_set(e, PP_EIO,
                          "rank %d: ibv_reg_mr(%zu-byte staging "
                          "buffer): %s",
                          t->o.rank, x->len, strerror(errno));
        free(x->stage);
        x->stage = NULL;
    }
out:
    return rc;
}

int pp__vb_stage_out(pp_xmr *x, const char *buf, size_t len, pp_error *e) {
    if (len && cu.dtoh(x->stage + (buf - x->buf), (CUdeviceptr)buf, len) !=
                   CUDA_SUCCESS)
        return pp_error_set(e, PP_EIO,
                            "cuMemcpyDtoH(%zu bytes) to the "
                            "staging buffer failed",
                            len);
    return 0;
}

int pp__vb_stage_in(pp_xmr *x, char *buf, size_t len, pp_error *e) {
    if (len && cu.htod((CUdeviceptr)buf, x->stage + (buf - x->buf), len) !=
                   CUDA_SUCCESS)
        return pp_error_set(e, PP_EIO,
                            "cuMemcpyHtoD(%zu bytes) from the "
                            "staging buffer failed",
                            len);
    return 0;
}

#else /* !PODPLAN_HAVE_CUDA */

int pp__vb_reg_device(pp_xport *t, pp_xmr *x, pp_error *e) {
    return pp_error_set(e, PP_ENOSYS,
                        "rank %d: registering %zu bytes of GPU "
                        "memory needs a CUDA build (PODPLAN_HAVE_CUDA)",
                        t->o.rank, x->len);
}

int pp__vb_stage_out(pp_xmr *x, const char *buf, size_t len, pp_error *e) {
    return pp_error_set(e, PP_ENOSYS, "GPU staging needs a CUDA build");
}

int pp__vb_stage_in(pp_xmr *x, char *buf, size_t len, pp_error *e) {
    return pp_error_set(e, PP_ENOSYS, "GPU staging needs a CUDA build");
}

#endif /* PODPLAN_HAVE_CUDA */

void pp__vb_dereg_device(pp_xmr *x) {
    if (x->mr) pp__ibv_dereg_mr(x->mr);
    free(x->stage);
}
