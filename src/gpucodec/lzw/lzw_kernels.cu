// zgpu's TIFF LZW decoder (see lzw_kernels.h); the format's rules are lzw_rules.h's, shared with the host.
//
// LZW is serial in its dictionary, but not in where its codes are: code k of a segment (the codes since the last
// ClearCode) starts at a bit that depends on k alone (zg_lzw_bit_at). So a warp decodes a stream 64 codes at a
// time, lane l taking codes k0 + l and k0 + 32 + l of the segment (two independent chains of work a lane: a stream
// is a warp's, and with few streams a warp is alone on its SM partition):
//   read     each lane reads its codes where they would be if no ClearCode / EOI came before them in the batch
//            (one batch ahead: the loads run while the batch before is decoded); the first such special code (a
//            ballot) ends the batch, and the codes past it are dropped (a ClearCode starts the next segment right
//            after itself, so they are read again there);
//   resolve  each code's length and first byte: a literal's are 1 and itself, code c >= 258's are one more than
//            code m = c - 258's and code m's (lzw_rules.h); m of an earlier batch is looked up in the segment's
//            arrays in shared memory, m of this batch (KwKwK: m = k - 1) is taken from its lane by shuffles, as
//            many rounds as the longest chain inside the batch;
//   place    warp scans of the lengths give each code's place in the output; in code order, the output full
//            (the rest is padding, as libtiff reads it), a code beyond the dictionary or a string past the
//            expected size ends the stream there, before anything of the batch is written;
//   write    each lane writes its strings backwards, from the last byte of entry (m + 1) (code m + 1's first
//            byte) along the entries' chain of codes to a literal, from the segment's arrays.
// The arrays (code, length, first byte of each code of the segment: 19 KiB) are the warp's in shared memory.
// H100, an 8192 x 8192 uint16 image with predictor 2, ratio 2.6 (bench/bench_tiff_gpu.c): 256 x 256 tiles 135 GB/s,
// 512 x 512 (256 streams: two warps an SM) 37 GB/s; at 32 codes a batch (a code a lane) 106 and 28.
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

// A code's length and first byte, resolved or not, as one word (one shuffle hands it over).
__device__ __forceinline__ uint32_t pack(uint32_t len, uint32_t first, bool done) {
    return len | first << 16 | (uint32_t)done << 31;
}

// Decodes one stream with the whole warp, 64 codes a batch (lane l holds codes k0 + l and k0 + 32 + l: two
// independent chains of work a lane, which a warp alone on its SM partition needs to hide latency); returns its
// status (every lane), *op the bytes decoded.
__device__ int decode_stream(LzwSegment *S, const uint8_t *p, size_t n_bytes, uint8_t *out, size_t out_bytes,
                             unsigned lane, uint32_t *op_out) {
    *op_out = 0;
    if (n_bytes >= 0x80000000u || out_bytes >= 0x80000000u) return ZG_LZW_E_TOO_LARGE;
    const uint64_t n = n_bytes;
    const uint32_t expected = (uint32_t)out_bytes;
    uint64_t seg = 0; // the segment's first bit
    uint32_t k0 = 0;  // codes of the segment before this batch
    uint32_t op = 0;  // bytes decoded
    // the batch read ahead: codes k0' + lane (+ 32) of the segment at seg' (the next batch, if no ClearCode comes
    // first)
    uint64_t ahead_seg = 0;
    uint32_t ahead_k0 = 0;
    RawCode ahead_a = load_code(p, n, zg_lzw_bit_at(lane), zg_lzw_width(lane)),
            ahead_b = load_code(p, n, zg_lzw_bit_at(lane + 32), zg_lzw_width(lane + 32));
    for (;;) {
        *op_out = op;
        if (op == expected) return ZG_LZW_OK; // (the rest is padding, as libtiff reads it)
        const uint32_t ka = k0 + lane, kb = ka + 32;
        const unsigned wa = zg_lzw_width(ka), wb = zg_lzw_width(kb);
        const uint64_t bit_a = seg + zg_lzw_bit_at(ka), bit_b = seg + zg_lzw_bit_at(kb);
        const bool reuse = ahead_seg == seg && ahead_k0 == k0;
        const RawCode raw_a = reuse ? ahead_a : load_code(p, n, bit_a, wa);
        const RawCode raw_b = reuse ? ahead_b : load_code(p, n, bit_b, wb);
        // read the next batch ahead, and have the lines after it fetched into L1
        ahead_seg = seg;
        ahead_k0 = k0 + 64;
        ahead_a = load_code(p, n, seg + zg_lzw_bit_at(ka + 64), zg_lzw_width(ka + 64));
        ahead_b = load_code(p, n, seg + zg_lzw_bit_at(kb + 64), zg_lzw_width(kb + 64));
        if (lane < 2) {
            const uint64_t later = (seg + zg_lzw_bit_at(k0 + 128 + 64 * lane)) >> 3;
            if (later < n) asm volatile("prefetch.global.L1 [%0];" ::"l"(p + later));
        }
        const bool have_a = raw_a.in, have_b = raw_b.in;
        const uint32_t ca = have_a ? code_of(raw_a, bit_a, wa) : 0u, cb = have_b ? code_of(raw_b, bit_b, wb) : 0u;
        const bool sp_a = !have_a || ca == ZG_LZW_CLEAR || ca == ZG_LZW_EOI;
        const bool sp_b = !have_b || cb == ZG_LZW_CLEAR || cb == ZG_LZW_EOI;
        const uint64_t sp = (uint64_t)__ballot_sync(kFull, sp_a) | (uint64_t)__ballot_sync(kFull, sp_b) << 32;
        const unsigned nb = sp ? (unsigned)(__ffsll((long long)sp) - 1) : 64u; // codes of the batch before it
        const bool act_a = lane < nb, act_b = lane + 32 < nb;
        const bool bad_a = act_a && !zg_lzw_code_ok(ca, ka), bad_b = act_b && !zg_lzw_code_ok(cb, kb);
        // resolve: length and first byte of each code (a bad code: 1, to keep the scan going). Code m of an
        // earlier batch from the arrays, of this batch from its lane: the first half by rounds among itself, then
        // the second half from the first half and by rounds among itself.
        uint32_t len_a = 1, first_a = ca & 0xff, len_b = 1, first_b = cb & 0xff;
        bool done_a = !act_a || bad_a || ca < 256u, done_b = !act_b || bad_b || cb < 256u;
        unsigned src_a = lane, src_b = lane, from_a = lane; // (from_a: a second-half code's source in the first)
        bool b_from_a = false;
        if (!done_a) {
            const uint32_t m = ca - ZG_LZW_FIRST;
            if (m < k0) {
                len_a = S->len[m] + 1u;
                first_a = S->first[m];
                done_a = true;
            } else {
                src_a = m - k0; // (< lane)
            }
        }
        if (!done_b) {
            const uint32_t m = cb - ZG_LZW_FIRST;
            if (m < k0) {
                len_b = S->len[m] + 1u;
                first_b = S->first[m];
                done_b = true;
            } else if (m - k0 < 32) {
                from_a = m - k0;
                b_from_a = true;
            } else {
                src_b = m - k0 - 32; // (< lane)
            }
        }
        while (__ballot_sync(kFull, !done_a)) {
            const uint32_t got = __shfl_sync(kFull, pack(len_a, first_a, done_a), src_a);
            if (!done_a && (got >> 31)) {
                len_a = (got & 0xffffu) + 1u;
                first_a = (got >> 16) & 0xffu;
                done_a = true;
            }
        }
        {
            const uint32_t got = __shfl_sync(kFull, pack(len_a, first_a, true), from_a);
            if (b_from_a) {
                len_b = (got & 0xffffu) + 1u;
                first_b = (got >> 16) & 0xffu;
                done_b = true;
            }
        }
        while (__ballot_sync(kFull, !done_b)) {
            const uint32_t got = __shfl_sync(kFull, pack(len_b, first_b, done_b), src_b);
            if (!done_b && (got >> 31)) {
                len_b = (got & 0xffffu) + 1u;
                first_b = (got >> 16) & 0xffu;
                done_b = true;
            }
        }
        // place: inclusive scans of the lengths, the second half after the first
        const uint32_t mine_a = act_a ? len_a : 0, mine_b = act_b ? len_b : 0;
        uint32_t end_a = mine_a, end_b = mine_b;
#pragma unroll
        for (unsigned d = 1; d < 32; d <<= 1) {
            const uint32_t ta = __shfl_up_sync(kFull, end_a, d), tb = __shfl_up_sync(kFull, end_b, d);
            if (lane >= d) end_a += ta, end_b += tb;
        }
        end_b += __shfl_sync(kFull, end_a, 31);
        // in code order: the output full before code f (the rest is padding), a bad code, a string past the end
        const uint64_t after_a = (uint64_t)op + end_a, after_b = (uint64_t)op + end_b;
        const uint64_t f_mask = (uint64_t)__ballot_sync(kFull, act_a && after_a - mine_a >= expected) |
                                (uint64_t)__ballot_sync(kFull, act_b && after_b - mine_b >= expected) << 32;
        const uint64_t b_mask = (uint64_t)__ballot_sync(kFull, bad_a) | (uint64_t)__ballot_sync(kFull, bad_b) << 32;
        const uint64_t t_mask = (uint64_t)__ballot_sync(kFull, act_a && after_a > expected) |
                                (uint64_t)__ballot_sync(kFull, act_b && after_b > expected) << 32;
        const unsigned f = f_mask ? (unsigned)(__ffsll((long long)f_mask) - 1) : nb;
        const unsigned b = b_mask ? (unsigned)(__ffsll((long long)b_mask) - 1) : 64u;
        const unsigned t = t_mask ? (unsigned)(__ffsll((long long)t_mask) - 1) : 64u;
        if (b < f || t < f) return b <= t ? ZG_LZW_E_CODE : ZG_LZW_E_TOO_LONG;
        const bool put_a = lane < f, put_b = lane + 32 < f;
        if (put_a && ka < ZG_LZW_SEG_CODES) {
            S->code[ka] = (uint16_t)ca;
            S->len[ka] = (uint16_t)len_a;
            S->first[ka] = (uint8_t)first_a;
        }
        if (put_b && kb < ZG_LZW_SEG_CODES) {
            S->code[kb] = (uint16_t)cb;
            S->len[kb] = (uint16_t)len_b;
            S->first[kb] = (uint8_t)first_b;
        }
        __syncwarp();
        // write: backwards along the chains of entries, both of a lane's strings at once
        {
            uint32_t at_a = op + end_a - 1, cur_a = put_a ? ca : 0u, at_b = op + end_b - 1, cur_b = put_b ? cb : 0u;
            while (cur_a >= ZG_LZW_FIRST || cur_b >= ZG_LZW_FIRST) {
                if (cur_a >= ZG_LZW_FIRST) {
                    const uint32_t m = cur_a - ZG_LZW_FIRST;
                    out[at_a--] = S->first[m + 1];
                    cur_a = S->code[m];
                }
                if (cur_b >= ZG_LZW_FIRST) {
                    const uint32_t m = cur_b - ZG_LZW_FIRST;
                    out[at_b--] = S->first[m + 1];
                    cur_b = S->code[m];
                }
            }
            if (put_a) out[at_a] = (uint8_t)cur_a;
            if (put_b) out[at_b] = (uint8_t)cur_b;
        }
        __syncwarp(); // (the next segment's codes overwrite the arrays)
        if (f) op += f <= 32 ? __shfl_sync(kFull, end_a, f - 1) : __shfl_sync(kFull, end_b, f - 33);
        k0 += f;
        if (f < nb || nb == 64) continue; // (full: returns at the top)
        // the special code that ended the batch
        const unsigned sl = nb & 31;
        const bool in_a = nb < 32;
        const uint32_t sc = __shfl_sync(kFull, in_a ? ca : cb, sl);
        const bool s_have = __shfl_sync(kFull, (int)(in_a ? have_a : have_b), sl);
        *op_out = op;
        if (!s_have) return op == expected ? ZG_LZW_OK : ZG_LZW_E_TRUNC;
        if (sc == ZG_LZW_EOI) return op == expected ? ZG_LZW_OK : ZG_LZW_E_SHORT;
        // ClearCode: a new segment after it
        seg = __shfl_sync(kFull, in_a ? bit_a : bit_b, sl) + __shfl_sync(kFull, in_a ? wa : wb, sl);
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
