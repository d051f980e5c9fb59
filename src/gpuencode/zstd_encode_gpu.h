/* The GPU batch encoder's zstd path with zgpu's own encoder (zstd_encode.h, zstd_encode_kernels.h): the launch side
 * behind zg_gpu_encode_layout_for / zg_gpu_encode_batch (gpu_encode.h) for format zstd unless the caller asks for
 * nvCOMP. Needs no nvCOMP. CUDA-only; C interface. */
#ifndef ZG_ZSTD_ENCODE_GPU_H
#define ZG_ZSTD_ENCODE_GPU_H
#include <stddef.h>
#include <cuda_runtime.h>

#include "gpuencode/gpu_encode.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The layout of a batch of n chunks, the largest max_in_bytes, total_in_bytes together (gpu_encode.h). */
zgpu_status zg_ze_gpu_layout(size_t n, size_t max_in_bytes, size_t total_in_bytes, zg_gpu_encode_layout *out);

/** zg_gpu_encode_batch for zstd with zgpu's encoder; hints: the array's strides in bytes (zstd_encode.h). */
zgpu_status zg_ze_gpu_batch(const zg_ze_hints *hints, const void *const *in, const size_t *in_bytes, size_t n,
                            void *const *out, size_t slot_bytes, size_t *d_out_bytes, int *d_status, void *d_scratch,
                            size_t scratch_bytes, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
