/* LZ4 with zgpu's own GPU encoder (lz4_encode_gpu.h): the chunks described on the host, copied in one copy, one
 * launch on the caller's stream. */
#include "gpuencode/lz4_encode_gpu.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "gpuencode/lz4_encode.h"
#include "gpuencode/lz4_encode_kernels.h"
#include "plan/waves.h"

int zg_lz_gpu_takes(size_t max_in_bytes) { return max_in_bytes <= ZG_LZ_MAX_INPUT; }

/* numcodecs' 4-byte size, then the block. */
static size_t stored_bound(size_t n) { return 4 + zg_lz_bound((uint32_t)n); }

static size_t warps_for(size_t n) {
    size_t w = 0;
    if (zg_lz_resident_warps(&w) != cudaSuccess || w == 0) {
        cudaGetLastError();
        w = 1024;
    }
    return w < n ? w : n ? n : 1;
}

/* The scratch: the chunk descriptors, then the warps' scratch (256-byte aligned). */
static size_t warps_at(size_t n) { return zg_align_up(n * sizeof(zg_lz_chunk), 256); }
static size_t scratch_for(size_t n) { return warps_at(n) + warps_for(n) * zg_lz_warp_scratch_bytes(); }

zgpu_status zg_lz_gpu_layout(size_t n, size_t max_in_bytes, zg_gpu_encode_layout *out) {
    memset(out, 0, sizeof *out);
    out->max_chunk_bytes = ZG_LZ_MAX_INPUT;
    ZG_RETURN_IF(!zg_lz_gpu_takes(max_in_bytes), ZGPU_ERR_UNSUPPORTED,
                 "GPU lz4 encode: chunks of %zu bytes are over zgpu's encoder's %u", max_in_bytes,
                 (unsigned)ZG_LZ_MAX_INPUT);
    out->in_align = 1;
    out->out_align = 16;
    out->slot_bytes = zg_align_up(stored_bound(max_in_bytes), 16);
    out->scratch_bytes = scratch_for(n);
    return ZGPU_OK;
}

zgpu_status zg_lz_gpu_batch(const zg_ze_hints *hints, const void *const *in, const size_t *in_bytes, size_t n,
                            void *const *out, size_t slot_bytes, size_t *d_out_bytes, int *d_status, void *d_scratch,
                            size_t scratch_bytes, cudaStream_t stream) {
    if (n == 0) return ZGPU_OK;
    ZG_RETURN_IF(!in || !in_bytes || !out || !d_out_bytes || !d_status || !d_scratch, ZGPU_ERR_INVALID_ARGUMENT,
                 "GPU lz4 encode: NULL array");
    ZG_RETURN_IF((uintptr_t)d_scratch % 256, ZGPU_ERR_INVALID_ARGUMENT,
                 "GPU lz4 encode: scratch at %p is not 256-byte aligned", d_scratch);
    ZG_RETURN_IF(scratch_bytes < scratch_for(n), ZGPU_ERR_INVALID_ARGUMENT,
                 "GPU lz4 encode: scratch of %zu bytes is too small for this batch (%zu needed)", scratch_bytes,
                 scratch_for(n));
    zg_lz_chunk *host = malloc(n * sizeof *host);
    ZG_RETURN_IF(!host, ZGPU_ERR_NO_MEMORY, "GPU lz4 encode: out of host memory for %zu chunk descriptors", n);
    for (size_t i = 0; i < n; i++) {
        const int bad = in_bytes[i] > ZG_LZ_MAX_INPUT || (in_bytes[i] && !in[i]) || !out[i] ||
                        slot_bytes < stored_bound(in_bytes[i]);
        if (bad) {
            free(host);
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT,
                            "GPU lz4 encode: chunk %zu (%zu bytes, input %p, slot %p of %zu bytes) does not fit zgpu's "
                            "encoder (chunks up to %u bytes, slots of %zu)",
                            i, in_bytes[i], in[i], out[i], slot_bytes, (unsigned)ZG_LZ_MAX_INPUT,
                            stored_bound(in_bytes[i]));
        }
        host[i] = (zg_lz_chunk){(const uint8_t *)in[i], (uint8_t *)out[i], (uint32_t)in_bytes[i], 0};
    }
    uint8_t *d = (uint8_t *)d_scratch;
    /* (from pageable memory: cudaMemcpyAsync stages it before returning) */
    cudaError_t e = cudaMemcpyAsync(d, host, n * sizeof *host, cudaMemcpyHostToDevice, stream);
    free(host);
    const zg_ze_hints none = {{0, 0, 0}};
    if (e == cudaSuccess)
        e = zg_lz_chunks_launch((const zg_lz_chunk *)d, n, hints ? *hints : none, d + warps_at(n), warps_for(n),
                                d_out_bytes, d_status, stream);
    ZG_RETURN_IF(e != cudaSuccess, ZGPU_ERR_CUDA, "GPU lz4 encode of %zu chunks: %s", n, cudaGetErrorString(e));
    return ZGPU_OK;
}
