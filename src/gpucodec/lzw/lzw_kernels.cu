// zgpu's TIFF LZW decoder (see lzw_kernels.h); the format's rules are lzw_rules.h's, shared with the host.
//
// LZW is serial in its dictionary, but not in where its codes are: code k of a segment (the codes since the last
// ClearCode) starts at a bit that depends on k alone (zg_lzw_bit_at). So a warp decodes a stream 32 codes at a
// time, lane l taking code k0 + l of the segment:
//   read     each lane reads its code where it would be if no ClearCode / EOI came before it in the batch
//            (one batch ahead: the loads run while the batch before is decoded); the first such special code (a
//            ballot) ends the batch, and the codes past it are dropped (a ClearCode starts the next segment right
//            after itself, so they are read again there);
//   resolve  each code's length and first byte: a literal's are 1 and itself, code c >= 258's are one more than
//            code m = c - 258's and code m's (lzw_rules.h); m of an earlier batch is looked up in the segment's
//            arrays in shared memory, m of this batch (KwKwK: m = k - 1) is taken from its lane by shuffles, as
//            many rounds as the longest chain inside the batch;
//   place    a warp scan of the lengths gives each code's place in the output; in code order, the output full
//            (the rest is padding, as libtiff reads it), a code beyond the dictionary or a string past the
//            expected size ends the stream there, before anything of the batch is written;
//   write    each lane writes its string backwards, from the last byte of entry (m + 1) (code m + 1's first
//            byte) along the entries' chain of codes to a literal, from the segment's arrays.
// The arrays (code, length, first byte of each code of the segment: 19 KiB) are the warp's in shared memory.
// H100, an 8192 x 8192 uint16 image with predictor 2 (bench/bench_tiff_gpu.c): 256 x 256 tiles 107 GB/s, 512 x 512
// (256 streams: two warps an SM) 28 GB/s.
#include "gpucodec/lzw/lzw_kernels.h"

#include "gpucodec/common/gpu_limits.h"
#include "gpucodec/lzw/lzw_rules.h"

#include <stdint.h>

namespace {

constexpr unsigned kWarps = ZG_LC_LZW_WARPS;
constexpr unsigned kFull = 0xffffffffu;

struct LzwSegment {
    uint16_t code[ZG_LZW_SEG_CODES];
    uint16_t len[ZG_LZW_SEG_CODES];
    uint8_t first[ZG_LZW_SEG_CODES];
};

// The bytes holding a code (read ahead: kept raw, so that the loads' latency runs while the batch before is
// decoded; the code is cut out of them when the batch that needs it starts).
struct RawCode {
    uint32_t b0, b1, b2;
    bool in; // the code lies inside the stream
};
__device__ __forceinline__ RawCode load_code(const uint8_t *p, uint64_t n, uint64_t bit, unsigned w) {
    RawCode r;
    const uint64_t at = bit >> 3;
    r.in = bit + w <= 8 * n;
    r.b0 = r.in ? __ldg(p + at) : 0u;
    r.b1 = r.in && at + 1 < n ? __ldg(p + at + 1) : 0u;
    r.b2 = r.in && at + 2 < n ? __ldg(p + at + 2) : 0u;
    return r;
}
__device__ __forceinline__ uint32_t code_of(const RawCode &r, uint64_t bit, unsigned w) {
    const uint32_t v = r.b0 << 16 | r.b1 << 8 | r.b2;
    return (v >> (24u - (unsigned)(bit & 7) - w)) & ((1u << w) - 1u); // (as zg_lzw_read)
}

// Decodes one stream with the whole warp, 32 codes a batch; returns its status (every lane), *op the bytes decoded.
__device__ int decode_stream(LzwSegment *S, const uint8_t *p, size_t n_bytes, uint8_t *out, size_t out_bytes,
                             unsigned lane, uint32_t *op_out) {
    *op_out = 0;
    if (n_bytes >= 0x80000000u || out_bytes >= 0x80000000u) return ZG_LZW_E_TOO_LARGE;
    const uint64_t n = n_bytes;
    const uint32_t expected = (uint32_t)out_bytes;
    uint64_t seg = 0; // the segment's first bit
    uint32_t k0 = 0;  // codes of the segment before this batch
    uint32_t op = 0;  // bytes decoded
    // the batch read ahead: codes k0' + lane of the segment at seg' (the next batch, if no ClearCode comes first)
    uint64_t ahead_seg = 0;
    uint32_t ahead_k0 = 0;
    RawCode ahead = load_code(p, n, zg_lzw_bit_at(lane), zg_lzw_width(lane));
    for (;;) {
        *op_out = op;
        if (op == expected) return ZG_LZW_OK; // (the rest is padding, as libtiff reads it)
        const uint32_t k = k0 + lane;
        const unsigned w = zg_lzw_width(k);
        const uint64_t bit = seg + zg_lzw_bit_at(k);
        const RawCode raw = ahead_seg == seg && ahead_k0 == k0 ? ahead : load_code(p, n, bit, w);
        // read the next batch ahead, and have the lines after it fetched into L1
        ahead_seg = seg;
        ahead_k0 = k0 + 32;
        ahead = load_code(p, n, seg + zg_lzw_bit_at(k + 32), zg_lzw_width(k + 32));
        if (lane < 2) {
            const uint64_t later = (seg + zg_lzw_bit_at(k0 + 64 + 32 * lane)) >> 3;
            if (later < n) asm volatile("prefetch.global.L1 [%0];" ::"l"(p + later));
        }
        const bool have = raw.in;
        const uint32_t c = have ? code_of(raw, bit, w) : 0u;
        const bool special = !have || c == ZG_LZW_CLEAR || c == ZG_LZW_EOI;
        const unsigned sp_mask = __ballot_sync(kFull, special);
        const unsigned nb = sp_mask ? (unsigned)(__ffs(sp_mask) - 1) : 32u; // codes of the batch before it
        const bool active = lane < nb, bad = active && !zg_lzw_code_ok(c, k);
        // resolve: length and first byte of each code (a bad code: 1, to keep the scan going)
        uint32_t len = 1, first = c & 0xff;
        bool done = !active || bad || c < 256u;
        unsigned src = lane;
        if (!done) {
            const uint32_t m = c - ZG_LZW_FIRST;
            if (m < k0) {
                len = S->len[m] + 1u;
                first = S->first[m];
                done = true;
            } else {
                src = m - k0; // (< lane)
            }
        }
        while (__ballot_sync(kFull, !done)) { // (one shuffle a round: length, first byte and done in a word)
            const uint32_t got = __shfl_sync(kFull, len | first << 16 | (uint32_t)done << 31, src);
            if (!done && (got >> 31)) {
                len = (got & 0xffffu) + 1u;
                first = (got >> 16) & 0xffu;
                done = true;
            }
        }
        // place: inclusive scan of the lengths
        const uint32_t mine = active ? len : 0;
        uint32_t end = mine;
#pragma unroll
        for (unsigned d = 1; d < 32; d <<= 1) {
            const uint32_t t = __shfl_up_sync(kFull, end, d);
            if (lane >= d) end += t;
        }
        // in code order: the output full before code f (the rest is padding), a bad code, a string past the end
        const uint64_t before = (uint64_t)op + end - mine, after = (uint64_t)op + end;
        const unsigned f_mask = __ballot_sync(kFull, active && before >= expected);
        const unsigned b_mask = __ballot_sync(kFull, bad), t_mask = __ballot_sync(kFull, active && after > expected);
        const unsigned f = f_mask ? (unsigned)(__ffs(f_mask) - 1) : nb;
        const unsigned b = b_mask ? (unsigned)(__ffs(b_mask) - 1) : 32u, t = t_mask ? (unsigned)(__ffs(t_mask) - 1) : 32u;
        if (b < f || t < f) return b <= t ? ZG_LZW_E_CODE : ZG_LZW_E_TOO_LONG;
        const bool put = lane < f;
        if (put && k < ZG_LZW_SEG_CODES) {
            S->code[k] = (uint16_t)c;
            S->len[k] = (uint16_t)len;
            S->first[k] = (uint8_t)first;
        }
        __syncwarp();
        // write: backwards along the chain of entries
        if (put) {
            uint32_t at = op + end - 1, cur = c;
            while (cur >= ZG_LZW_FIRST) {
                const uint32_t m = cur - ZG_LZW_FIRST;
                out[at--] = S->first[m + 1];
                cur = S->code[m];
            }
            out[at] = (uint8_t)cur;
        }
        __syncwarp(); // (the next segment's codes overwrite the arrays)
        op += __shfl_sync(kFull, end, f ? f - 1 : 0) * (f != 0);
        k0 += f;
        if (f < nb || nb == 32) continue; // (full: returns at the top)
        // the special code that ended the batch
        const uint32_t sc = __shfl_sync(kFull, c, nb);
        const bool s_have = __shfl_sync(kFull, (int)have, nb);
        *op_out = op;
        if (!s_have) return op == expected ? ZG_LZW_OK : ZG_LZW_E_TRUNC;
        if (sc == ZG_LZW_EOI) return op == expected ? ZG_LZW_OK : ZG_LZW_E_SHORT;
        seg = __shfl_sync(kFull, bit, nb) + __shfl_sync(kFull, w, nb); // ClearCode: a new segment after it
        k0 = 0;
    }
}

__global__ void __launch_bounds__(32 * kWarps) lzw_decode_kernel(const void *const *in, const size_t *in_bytes,
                                                                 void *const *out, const size_t *out_bytes,
                                                                 size_t *actual, int *status, size_t n) {
    __shared__ LzwSegment segs[kWarps];
    static_assert(sizeof(segs) == ZG_LC_LZW_DECODE_SMEM, "launch_config.h: the LZW decoder's shared memory");
    const unsigned w = threadIdx.x / 32, lane = threadIdx.x & 31;
    for (size_t i = blockIdx.x * (size_t)kWarps + w; i < n; i += (size_t)gridDim.x * kWarps) {
        uint32_t op;
        const int e = decode_stream(&segs[w], (const uint8_t *)in[i], in_bytes[i], (uint8_t *)out[i], out_bytes[i],
                                    lane, &op);
        if (lane == 0) {
            status[i] = e;
            actual[i] = e ? 0 : op;
        }
        __syncwarp();
    }
}

} // namespace

extern "C" cudaError_t zg_k_lzw_decode_launch(const void *const *in, const size_t *in_bytes, void *const *out,
                                              const size_t *out_bytes, size_t *actual, int *status, size_t n,
                                              cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    zg_gpu_limits L;
    (void)zg_gpu_limits_current(&L);
    const zg_lc_dims d = zg_lc_lzw_decode(&L, n);
    lzw_decode_kernel<<<d.grid_x, d.threads, 0, s>>>(in, in_bytes, out, out_bytes, actual, status, n);
    return cudaGetLastError();
}
