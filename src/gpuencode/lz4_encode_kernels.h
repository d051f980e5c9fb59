/* zgpu's LZ4 encoder on the GPU (lz4_encode.h): a warp a chunk of up to 128 KiB, each stored as numcodecs' LZ4
 * (4-byte little-endian size, then the block) at the start of its slot. C interface; arrays in device memory. */
#ifndef ZG_LZ4_ENCODE_KERNELS_H
#define ZG_LZ4_ENCODE_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>

#include "gpuencode/zstd_encode.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A chunk: len (<= ZG_LZ_MAX_INPUT) bytes at `in`, stored at `slot`. */
typedef struct zg_lz_chunk {
    const uint8_t *in;
    uint8_t *slot;
    uint32_t len, pad_;
} zg_lz_chunk;

/* Device scratch a warp needs (its lanes' sequences); warps worth launching on the current device. */
size_t zg_lz_warp_scratch_bytes(void);
cudaError_t zg_lz_resident_warps(size_t *out);

/* Encodes n chunks with n_warps warps (each zg_lz_warp_scratch_bytes at d_warp_scratch): d_out_bytes[i] gets chunk
 * i's stored size, d_status[i] 0. hints: through zg_lz_hints. */
cudaError_t zg_lz_chunks_launch(const zg_lz_chunk *d_chunks, size_t n, zg_ze_hints hints, void *d_warp_scratch,
                                size_t n_warps, size_t *d_out_bytes, int *d_status, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
