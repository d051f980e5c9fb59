/* zstd with zgpu's own GPU encoder (zstd_encode_gpu.h): the batch's blocks and chunks described on the host and
 * copied in one copy with the predefined FSE tables, then two launches (blocks, frames) on the caller's stream. */
#include "gpuencode/zstd_encode_gpu.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "gpuencode/zstd_encode_kernels.h"
#include "plan/waves.h"

/* Blocks a chunk of n bytes has. */
static size_t blocks_of(size_t n) { return (n + ZG_ZE_BLOCK_BYTES - 1) / ZG_ZE_BLOCK_BYTES; }

/* A stored chunk of n bytes is at most this long: the header, each block's header and bytes (an empty chunk: one
 * empty block). */
static size_t frame_bound(size_t n) { return ZG_ZE_FRAME_HEADER_MAX + 3 * (blocks_of(n) + 1) + n; }

/* The scratch, in order (each 256-byte aligned): the descriptors copied from the host (tables, blocks, chunks), then
 * the block sizes, block places, the warps' scratch and the blocks' outputs. */
typedef struct ze_map {
    size_t tables, blocks, chunks, desc_end, sizes, at, warps, outs, end;
} ze_map;

static ze_map map_scratch(size_t n, size_t n_blocks, size_t n_warps) {
    ze_map m;
    size_t at = 0;
#define PART(field, bytes) (m.field = at, at = zg_align_up(at + (bytes), 256))
    PART(tables, sizeof(zg_ze_tables));
    PART(blocks, n_blocks * sizeof(zg_ze_bdesc));
    PART(chunks, n * sizeof(zg_ze_cdesc));
    m.desc_end = at;
    PART(sizes, n_blocks * sizeof(uint32_t));
    PART(at, n_blocks * sizeof(uint64_t));
    PART(warps, n_warps * zg_ze_warp_scratch_bytes());
    PART(outs, n_blocks * ZG_ZE_BLOCK_PITCH);
#undef PART
    m.end = at;
    return m;
}

/* Warps for n_blocks blocks: as many as stay resident, at most one a block. */
static size_t warps_for(size_t n_blocks) {
    size_t w = 0;
    if (zg_ze_resident_warps(&w) != cudaSuccess || w == 0) {
        cudaGetLastError(); /* (no device here: the launch will say so) */
        w = 1024;
    }
    return w < n_blocks ? w : n_blocks ? n_blocks : 1;
}

zgpu_status zg_ze_gpu_layout(size_t n, size_t max_in_bytes, size_t total_in_bytes, zg_gpu_encode_layout *out) {
    memset(out, 0, sizeof *out);
    out->max_chunk_bytes = ZG_ZE_MAX_CHUNK;
    ZG_RETURN_IF(max_in_bytes > ZG_ZE_MAX_CHUNK, ZGPU_ERR_UNSUPPORTED,
                 "GPU zstd encode: chunks of %zu bytes are over zgpu's encoder's limit of %zu bytes a chunk (encode "
                 "them on the host)",
                 max_in_bytes, (size_t)ZG_ZE_MAX_CHUNK);
    out->in_align = 1;
    out->out_align = 16;
    out->frame_offset = 0;
    out->slot_bytes = zg_align_up(frame_bound(max_in_bytes), 16);
    const size_t n_blocks = total_in_bytes / ZG_ZE_BLOCK_BYTES + n;
    out->scratch_bytes = map_scratch(n, n_blocks, warps_for(n_blocks)).end;
    out->temp_bytes = 0;
    return ZGPU_OK;
}

#define CUDA_TRY(call, what)                                                                                        \
    do {                                                                                                           \
        cudaError_t e_ = (call);                                                                                   \
        ZG_RETURN_IF(e_ != cudaSuccess, ZGPU_ERR_CUDA, "GPU zstd encode of %zu chunks: %s failed: %s", n, what,   \
                     cudaGetErrorString(e_));                                                                      \
    } while (0)

zgpu_status zg_ze_gpu_batch(const zg_ze_hints *hints, const void *const *in, const size_t *in_bytes, size_t n,
                            void *const *out, size_t slot_bytes, size_t *d_out_bytes, int *d_status, void *d_scratch,
                            size_t scratch_bytes, cudaStream_t stream) {
    if (n == 0) return ZGPU_OK;
    ZG_RETURN_IF(!in || !in_bytes || !out || !d_out_bytes || !d_status || !d_scratch, ZGPU_ERR_INVALID_ARGUMENT,
                 "GPU zstd encode: NULL array");
    ZG_RETURN_IF((uintptr_t)d_scratch % 256, ZGPU_ERR_INVALID_ARGUMENT,
                 "GPU zstd encode: scratch at %p is not 256-byte aligned", d_scratch);
    size_t n_blocks = 0;
    for (size_t i = 0; i < n; i++) {
        ZG_RETURN_IF(in_bytes[i] > ZG_ZE_MAX_CHUNK, ZGPU_ERR_UNSUPPORTED,
                     "GPU zstd encode: chunk %zu of %zu bytes is over zgpu's encoder's limit of %zu bytes a chunk "
                     "(encode it on the host)",
                     i, in_bytes[i], (size_t)ZG_ZE_MAX_CHUNK);
        ZG_RETURN_IF(in_bytes[i] && !in[i], ZGPU_ERR_INVALID_ARGUMENT, "GPU zstd encode: chunk %zu's input is NULL",
                     i);
        ZG_RETURN_IF(!out[i] || (uintptr_t)out[i] % 16, ZGPU_ERR_INVALID_ARGUMENT,
                     "GPU zstd encode: chunk %zu's output slot %p is NULL or not aligned to 16 bytes", i, out[i]);
        ZG_RETURN_IF(slot_bytes < frame_bound(in_bytes[i]), ZGPU_ERR_INVALID_ARGUMENT,
                     "GPU zstd encode: output slots of %zu bytes are too small for chunk %zu of %zu bytes (%zu "
                     "needed)",
                     slot_bytes, i, in_bytes[i], frame_bound(in_bytes[i]));
        n_blocks += blocks_of(in_bytes[i]);
    }
    const size_t n_warps = warps_for(n_blocks);
    const ze_map m = map_scratch(n, n_blocks, n_warps);
    ZG_RETURN_IF(scratch_bytes < m.end, ZGPU_ERR_INVALID_ARGUMENT,
                 "GPU zstd encode: scratch of %zu bytes is too small for this batch (%zu needed)", scratch_bytes, m.end);
    uint8_t *host = malloc(m.desc_end);
    ZG_RETURN_IF(!host, ZGPU_ERR_NO_MEMORY, "GPU zstd encode: out of host memory for %zu block descriptors",
                 n_blocks);
    zg_ze_tables_build((zg_ze_tables *)(host + m.tables));
    zg_ze_bdesc *blocks = (zg_ze_bdesc *)(host + m.blocks);
    zg_ze_cdesc *chunks = (zg_ze_cdesc *)(host + m.chunks);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t nb = blocks_of(in_bytes[i]);
        chunks[i] = (zg_ze_cdesc){(uint8_t *)out[i], in_bytes[i], slot_bytes, (uint32_t)k, (uint32_t)nb};
        for (size_t b = 0; b < nb; b++, k++) {
            const size_t at = b * ZG_ZE_BLOCK_BYTES, left = in_bytes[i] - at;
            blocks[k] = (zg_ze_bdesc){(const uint8_t *)in[i], (uint32_t)at,
                                      (uint32_t)(left < ZG_ZE_BLOCK_BYTES ? left : ZG_ZE_BLOCK_BYTES), b + 1 == nb, 0};
        }
    }
    uint8_t *d = (uint8_t *)d_scratch;
    /* (from pageable memory: cudaMemcpyAsync stages it before returning, so `host` may go now) */
    cudaError_t ce = cudaMemcpyAsync(d, host, m.desc_end, cudaMemcpyHostToDevice, stream);
    free(host);
    CUDA_TRY(ce, "the descriptor copy");
    const zg_ze_hints none = {{0, 0, 0}};
    const zg_ze_hints h = zg_ze_hints_clean(hints ? *hints : none);
    CUDA_TRY(zg_ze_blocks_launch((const zg_ze_bdesc *)(d + m.blocks), n_blocks, h, (const zg_ze_tables *)(d + m.tables),
                                 d + m.warps, n_warps, d + m.outs, (uint32_t *)(d + m.sizes), stream),
             "the block kernel");
    CUDA_TRY(zg_ze_frames_launch((const zg_ze_cdesc *)(d + m.chunks), n, zg_ze_window_log(&h),
                                 (const uint32_t *)(d + m.sizes), (uint64_t *)(d + m.at), d + m.outs, n_blocks,
                                 d_out_bytes, d_status, stream),
             "the frame kernels");
    return ZGPU_OK;
}
