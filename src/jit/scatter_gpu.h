/* The converting scatter on the GPU: zg_k_scatter_launch's descriptors, each element converted per a zg_xform,
 * by a kernel built at run time for the pair and cached (jit_cache.h). CUDA-only (scatter_gpu.c); C interface. */
#ifndef ZG_SCATTER_GPU_H
#define ZG_SCATTER_GPU_H
#include <cuda_runtime.h>
#include "convert/convert.h"
#include "gpucodec/post/post_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/** As zg_k_scatter_launch(p, d_items, d_counts, n, max_rows, s), converting: p->itemsize and p->src_strides are
 *  the input's (x->in_itemsize), p->dst_strides the output's (elements of x->out_itemsize), p->d_fill one
 *  element of the input type in device memory (converted by the kernel, like the data). The identity launches
 *  the plain scatter. On the calling thread's current device, ordered on s. The first launch for a (device,
 *  pair, clamp, layout) gets its kernel from the cache (memory, disk, else NVRTC: a cold start of about a second
 *  once per machine, docs/tuning.md); later ones cost a lookup. Errors: ZGPU_ERR_UNSUPPORTED without NVRTC (or
 *  for a GPU it cannot build for), ZGPU_ERR_CUDA for a failed load or launch, each naming the kernel. */
zgpu_status zg_jit_scatter_launch(const zg_xform *x, const zg_k_scatter_params *p, const zg_k_scatter *d_items,
                                  const uint64_t *d_counts, size_t n, uint64_t max_rows, cudaStream_t s);

/** Gets (builds, loads) the kernel for x and this layout on the current device without launching: to warm up
 *  before timing, or at array open. contiguous: 1 when the innermost axis is contiguous on both sides. */
zgpu_status zg_jit_scatter_prepare(const zg_xform *x, int contiguous);
/** Unloads every kernel loaded so far (tests time a warm start with it; never while launches may run). */
void zg_jit_scatter_forget(void);

#ifdef __cplusplus
}
#endif
#endif
