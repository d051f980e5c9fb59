/* zgpu's zstd encoder on the GPU (zstd_encode.h): a warp compresses a 128 KiB block, every block of a batch in one
 * launch; then each chunk's frame is its header and its blocks end to end, copied into its output slot. C interface;
 * every array is device memory unless said otherwise. */
#ifndef ZG_ZSTD_ENCODE_KERNELS_H
#define ZG_ZSTD_ENCODE_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>

#include "gpuencode/zstd_encode.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A block: bytes [at, at + len) of the chunk at `chunk`; last: its chunk's last block. */
typedef struct zg_ze_bdesc {
    const uint8_t *chunk;
    uint32_t at, len;
    uint32_t last, pad_;
} zg_ze_bdesc;

/* A chunk: its frame goes to `slot` (at most cap bytes); its blocks are blocks[first_block, + n_blocks). */
typedef struct zg_ze_cdesc {
    uint8_t *slot;
    uint64_t in_bytes, cap;
    uint32_t first_block, n_blocks;
} zg_ze_cdesc;

/* Each block's output area in the scratch (its header and at most ZG_ZE_BLOCK_BYTES). */
#define ZG_ZE_BLOCK_PITCH ((size_t)((ZG_ZE_BLOCK_OUT + 255u) & ~255u))

/* Device scratch one warp of the block kernel needs (its sequences, literals and FSE tables). */
size_t zg_ze_warp_scratch_bytes(void);

/* The most warps the block kernel keeps resident on the current device (*out; more would only wait). */
cudaError_t zg_ze_resident_warps(size_t *out);

/* Compresses n_blocks blocks with n_warps warps (each its zg_ze_warp_scratch_bytes at d_warp_scratch): block i's
 * output (header included) to d_block_out + i * ZG_ZE_BLOCK_PITCH, its size to d_block_sizes[i]. d_tables: the
 * predefined tables (zg_ze_tables_build). */
cudaError_t zg_ze_blocks_launch(const zg_ze_bdesc *d_blocks, size_t n_blocks, zg_ze_hints hints,
                                const zg_ze_tables *d_tables, void *d_warp_scratch, size_t n_warps,
                                uint8_t *d_block_out, uint32_t *d_block_sizes, cudaStream_t s);

/* Puts each of the n chunks' frames together in its slot: header (window 2^window_log), then its blocks.
 * d_out_bytes[i] gets the frame's size and d_status[i] 0, or 15 (and size 0) where it would pass the slot's cap.
 * d_block_at: a word of scratch a block. */
cudaError_t zg_ze_frames_launch(const zg_ze_cdesc *d_chunks, size_t n, uint32_t window_log,
                                const uint32_t *d_block_sizes, uint64_t *d_block_at, const uint8_t *d_block_out,
                                size_t n_blocks, size_t *d_out_bytes, int *d_status, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
