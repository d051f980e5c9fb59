/* zgpu's fixed-Huffman DEFLATE pieces on the GPU (deflate_fixed.h): after nvCOMP has compressed a batch's gzip / zlib
 * pieces, a warp a piece encodes it again as one fixed-Huffman block and, where that is shorter (or nvCOMP failed
 * the piece), writes it over nvCOMP's in the piece's slot with its size and status, before the join
 * (encode_kernels.h). C interface; every array is device memory. */
#ifndef ZG_DEFLATE_FIXED_KERNELS_H
#define ZG_DEFLATE_FIXED_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>

#include "gpuencode/encode_kernels.h"
#include "gpuencode/zstd_encode.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A piece's input: bytes [at, at + len) of the chunk at `chunk` (len <= 64 KiB; it may match back into the chunk's
 * bytes before it, at most 32 KiB). */
typedef struct zg_df_piece_in {
    const uint8_t *chunk;
    uint32_t at, len;
} zg_df_piece_in;

/* Device scratch a warp needs (its lanes' sequences). */
size_t zg_df_warp_scratch_bytes(void);

/* Warps worth launching on the current device (*out). */
cudaError_t zg_df_resident_warps(size_t *out);

/* For each of n pieces: its fixed-Huffman encoding replaces nvCOMP's (pieces[k].out, d_nvc_bytes[k] bytes, status
 * d_nvc_status[k]) where it is shorter and fits piece_slot bytes. hints: zg_df_hints'. */
cudaError_t zg_df_pieces_launch(const zg_df_piece_in *d_in, size_t n, zg_ze_hints hints, const zg_ge_piece *d_pieces,
                                size_t *d_nvc_bytes, int *d_nvc_status, size_t piece_slot, void *d_warp_scratch,
                                size_t n_warps, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
