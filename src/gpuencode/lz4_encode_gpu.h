/* The GPU batch encoder's LZ4 path with zgpu's own encoder (lz4_encode.h, lz4_encode_kernels.h): behind
 * zg_gpu_encode_layout_for / zg_gpu_encode_batch (gpu_encode.h) for numcodecs' LZ4 (and blosc's LZ4 streams) when
 * every chunk is at most ZG_LZ_MAX_INPUT bytes; larger ones keep nvCOMP's. CUDA-only; C interface. */
#ifndef ZG_LZ4_ENCODE_GPU_H
#define ZG_LZ4_ENCODE_GPU_H
#include <stddef.h>
#include <cuda_runtime.h>

#include "gpuencode/gpu_encode.h"

#ifdef __cplusplus
extern "C" {
#endif

/** 1 if zgpu's LZ4 encoder takes a batch whose largest chunk is max_in_bytes. */
int zg_lz_gpu_takes(size_t max_in_bytes);

/** The layout of a batch of n chunks, the largest max_in_bytes (gpu_encode.h). */
zgpu_status zg_lz_gpu_layout(size_t n, size_t max_in_bytes, zg_gpu_encode_layout *out);

/** zg_gpu_encode_batch for numcodecs' LZ4 with zgpu's encoder; hints: the array's strides in bytes. */
zgpu_status zg_lz_gpu_batch(const zg_ze_hints *hints, const void *const *in, const size_t *in_bytes, size_t n,
                            void *const *out, size_t slot_bytes, size_t *d_out_bytes, int *d_status, void *d_scratch,
                            size_t scratch_bytes, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
