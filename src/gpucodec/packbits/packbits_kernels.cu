// zgpu's TIFF PackBits decoder (see packbits_kernels.h); the format's rules are packbits_rules.h's. A warp a
// stream: the lanes step through up to 32 runs together (zg_pb_next: every check; they read the same bytes),
// noting each run's source and place in shared memory, then write the batch's output bytes side by side, lane l
// every 32nd byte (found by a binary search over the runs' places), so that stores are coalesced.
#include "gpucodec/packbits/packbits_kernels.h"

#include "gpucodec/common/gpu_limits.h"
#include "gpucodec/packbits/packbits_rules.h"

#include <stdint.h>

namespace {

constexpr unsigned kWarps = ZG_LC_PACKBITS_WARPS;

struct PbBatch {
    uint32_t at[33];  // output bytes of the batch before run j (at[nb]: the batch's)
    uint32_t src[32]; // literal: its first byte in the stream; else its fill byte
    uint32_t literal[32];
};

__device__ int decode_stream(PbBatch *B, const uint8_t *p, size_t n_bytes, uint8_t *out, size_t out_bytes,
                             unsigned lane, uint32_t *op_out) {
    *op_out = 0;
    if (n_bytes >= 0x80000000u || out_bytes >= 0x80000000u) return ZG_PB_E_TOO_LARGE;
    const uint32_t n = (uint32_t)n_bytes, expected = (uint32_t)out_bytes;
    uint32_t ip = 0, op = 0;
    int e = ZG_PB_OK;
    while (op < expected && !e) {
        const uint32_t op0 = op;
        unsigned nb = 0;
        while (nb < 32 && op < expected) {
            if (ip >= n) {
                e = ZG_PB_E_SHORT;
                break;
            }
            zg_pb_run r;
            const uint32_t at = op;
            e = zg_pb_next(p, n, expected, &ip, &op, &r);
            if (e) break;
            if (!r.len) continue;
            if (lane == 0) {
                B->at[nb] = at - op0;
                B->src[nb] = r.literal ? r.src : r.fill;
                B->literal[nb] = r.literal;
            }
            nb++;
        }
        if (e) break; // (nothing of a bad stream's last batch is written)
        if (lane == 0) B->at[nb] = op - op0;
        __syncwarp();
        for (uint32_t t = lane; t < op - op0; t += 32) {
            unsigned lo = 0, hi = nb; // the run holding byte t: at[lo] <= t < at[lo + 1]
            while (hi - lo > 1) {
                const unsigned mid = (lo + hi) / 2;
                if (B->at[mid] <= t) lo = mid;
                else hi = mid;
            }
            const uint32_t s = B->src[lo];
            out[op0 + t] = B->literal[lo] ? ZG_PB_LOAD(p, s + (t - B->at[lo])) : (uint8_t)s;
        }
        __syncwarp(); // (the next batch overwrites B)
    }
    *op_out = op;
    return e;
}

__global__ void __launch_bounds__(32 * kWarps) packbits_decode_kernel(const void *const *in, const size_t *in_bytes,
                                                                      void *const *out, const size_t *out_bytes,
                                                                      size_t *actual, int *status, size_t n) {
    __shared__ PbBatch batches[kWarps];
    static_assert(sizeof(batches) == ZG_LC_PACKBITS_SMEM, "launch_config.h: the PackBits decoder's shared memory");
    const unsigned w = threadIdx.x / 32, lane = threadIdx.x & 31;
    for (size_t i = blockIdx.x * (size_t)kWarps + w; i < n; i += (size_t)gridDim.x * kWarps) {
        uint32_t op;
        const int e = decode_stream(&batches[w], (const uint8_t *)in[i], in_bytes[i], (uint8_t *)out[i],
                                    out_bytes[i], lane, &op);
        if (lane == 0) {
            status[i] = e;
            actual[i] = e ? 0 : op;
        }
        __syncwarp();
    }
}

} // namespace

extern "C" cudaError_t zg_k_packbits_decode_launch(const void *const *in, const size_t *in_bytes, void *const *out,
                                                   const size_t *out_bytes, size_t *actual, int *status, size_t n,
                                                   cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    zg_gpu_limits L;
    (void)zg_gpu_limits_current(&L);
    const zg_lc_dims d = zg_lc_packbits_decode(&L, n);
    packbits_decode_kernel<<<d.grid_x, d.threads, 0, s>>>(in, in_bytes, out, out_bytes, actual, status, n);
    return cudaGetLastError();
}
