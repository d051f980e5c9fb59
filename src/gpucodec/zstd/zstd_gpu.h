/* The block-parallel zstd decoder on the GPU (kernels in zstd_kernels.cu; rules in zstd_decode.h; host
 * planning in zstd_plan.h). One call decodes a batch of frames: every array is device memory. */
#ifndef ZG_ZSTD_GPU_H
#define ZG_ZSTD_GPU_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>
#include "gpucodec/zstd/zstd_rules.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where the rows of a chunk wholly selected in a larger output lie (frames with mapped = ZG_ZD_MAPPED from their
 * dst, ZG_ZD_MAPPED_AFTER from their place): no scatter pass (0.8 ms a GB). Byte p of such a frame lies in row
 * r = p >> row_shift, at (r & (2^mid_shift - 1)) * mid_stride + (r >> mid_shift) * top_stride +
 * (p & (2^row_shift - 1)): a chunk of up to two dimensions above its rows, the nearer of power-of-two extent
 * (mid_shift 31 with one). Rows are at least 16 bytes and every row's offset and the base are multiples of 16, so a
 * byte's address is its position modulo 16 and no aligned 4- or 16-byte word straddles two rows. Every offset
 * within a chunk fits 31 bits, for 32-bit arithmetic: with 64-bit offsets a field wave's literal placement (K3a)
 * took 3.0 ms, with these 2.2 (2.0 flat). */
typedef struct zg_zd_rows {
    uint32_t row_shift, mid_shift;
    int32_t mid_stride, top_stride;
} zg_zd_rows;

typedef struct zg_zd_batch {
    const zg_zd_block *blocks; /* block src/lit/seq hold device addresses */
    const zg_zd_frame *frames; /* frame dst holds a device address */
    const zg_zd_huf_desc *hufs;
    const zg_zd_fse_desc *fses;
    uint32_t n_blocks, n_frames;
    zg_zd_bres *res;   /* scratch, n_blocks */
    uint32_t *sync;    /* scratch, 1 word: K3b's ticket counter (zeroed by the call) */
    int *status;       /* per frame at frames[f].status_index: 0 on entry, ZG_ZD_E_* after */
    size_t *actual;    /* per frame: bytes the blocks decode to */
    const uint32_t *order; /* n_blocks: the block that takes each of K3b's tickets (zg_zd_ticket_order) */
    /* optional (NULL: one stream): a second stream and two events, on which the Huffman literals decode beside
     * the sequences (forked from and joined back to the call's stream) */
    cudaStream_t aux;
    cudaEvent_t fork, join;
    zg_zd_rows rows; /* for frames with mapped = ZG_ZD_MAPPED or ZG_ZD_MAPPED_AFTER */
    int huf_probe;   /* bits above its run where a Huffman lane starts its guess (zgpu_tuning's zstd_huf_probe;
                      * < 0: the default) */
    int profile;     /* per-kernel times on stderr, waiting for each (zgpu_tuning's profile) */
} zg_zd_batch;

/** Device scratch bytes a batch needs for res and sync. */
size_t zg_zd_scratch_bytes(uint32_t n_blocks);
/** Launches the decoder's kernels on stream s. The kernels read whole aligned 4- and 8-byte words, so every
 *  buffer (stored frames, literals, outputs) must stay readable up to the next multiple of 8 bytes past its end
 *  (true inside zgpu's staging layout, whose regions are 256-byte aligned). */
cudaError_t zg_zd_decode(const zg_zd_batch *b, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
