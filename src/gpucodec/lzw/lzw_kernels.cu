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
//
// Few streams starve that: the segmented path (zg_k_lzw_decode_seg_launch; lzw_rules.h, "the segmented decode")
// cuts each stream at its ClearCodes (TIFF writers clear every ~3,800 codes: a 512 KiB tile holds dozens of
// segments) in three launches: bounds (a block a stream finds each segment's start and codes, 2048 code positions
// a step), lengths (a warp a segment: the bytes it decodes to, by the dictionary's lengths alone), and segments (a
// warp a segment: its offset is the sum of the lengths before it; decode_stream from there, the segment that
// decides the stream giving its status exactly as the serial walk would). Same H100 and images: 512 x 512 tiles
// 96 GB/s smooth, 60 noisy (from 37 and 23); with 1024 streams in one launch a warp a stream stays faster (135 /
// 86 against 92 / 60), hence zg_lc_lzw_segmented.
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
// From bit seg0 of the stream (a segment's start) with op0 bytes already decoded before it; one_segment: return
// (ZG_LZW_OK) at the segment's ClearCode (the segmented path's segments that do not decide their stream).
__device__ int decode_stream(LzwSegment *S, const uint8_t *p, size_t n_bytes, uint8_t *out, size_t out_bytes,
                             unsigned lane, uint32_t *op_out, uint64_t seg0 = 0, uint32_t op0 = 0,
                             bool one_segment = false) {
    *op_out = 0;
    if (n_bytes >= 0x80000000u || out_bytes >= 0x80000000u) return ZG_LZW_E_TOO_LARGE;
    const uint64_t n = n_bytes;
    const uint32_t expected = (uint32_t)out_bytes;
    uint64_t seg = seg0; // the segment's first bit
    uint32_t k0 = 0;     // codes of the segment before this batch
    uint32_t op = op0;   // bytes decoded
    // the batch read ahead: codes k0' + lane (+ 32) of the segment at seg' (the next batch, if no ClearCode comes
    // first)
    uint64_t ahead_seg = seg0;
    uint32_t ahead_k0 = 0;
    RawCode ahead_a = load_code(p, n, seg0 + zg_lzw_bit_at(lane), zg_lzw_width(lane)),
            ahead_b = load_code(p, n, seg0 + zg_lzw_bit_at(lane + 32), zg_lzw_width(lane + 32));
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
        if (one_segment) return ZG_LZW_OK;
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


// Asks L2 for the bytes of a segment's first `codes` codes (at most a table's worth) at once, so that its batches
// do not each wait on memory.
__device__ __forceinline__ void prefetch_l2(const uint8_t *p, uint64_t n, uint64_t bit, uint32_t codes, unsigned lane) {
    const uint64_t first = bit >> 3;
    uint64_t last = (bit + zg_lzw_bit_at(codes < ZG_LZW_SEG_CODES ? codes + 1 : ZG_LZW_SEG_CODES)) >> 3;
    if (last >= n) last = n ? n - 1 : 0;
    for (uint64_t at = (first & ~(uint64_t)127) + 128ull * lane; at <= last && at < n; at += 128ull * 32)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(p + at));
}

// ---- the segmented path (lzw_rules.h, "the segmented decode"): three launches over a scratch of
// zg_lzw_seg_scratch_bytes: descriptors (slots a stream), then each stream's segment count.

// Boundaries: a block a stream reads 32 * ZG_LC_LZW_SCAN_WARPS * 4 code positions of the segment at once (four a
// thread, a warp's neighbouring) and takes the first special code (ClearCode, EOI, out of bits) by a minimum over
// the block; a ClearCode starts the next segment. (A warp a stream, 128 codes a step, waited on memory: 512 x 512
// tiles, 2 ms of a 5.5 ms decode.)
__global__ void __launch_bounds__(32 * ZG_LC_LZW_SCAN_WARPS)
    lzw_bounds_kernel(const void *const *in, const size_t *in_bytes, const size_t *out_bytes, size_t *actual,
                      int *status, size_t n, zg_lzw_seg *segs, uint32_t *nseg, uint32_t slots) {
    constexpr uint32_t kThreads = 32 * ZG_LC_LZW_SCAN_WARPS, kStep = 4 * kThreads;
    __shared__ uint32_t first_special;
    const unsigned tid = threadIdx.x, lane = tid & 31;
    for (size_t i = blockIdx.x; i < n; i += gridDim.x) {
        const uint8_t *p = (const uint8_t *)in[i];
        const uint64_t nb = in_bytes[i], expected = out_bytes[i];
        zg_lzw_seg *D = segs + i * slots;
        if (nb >= 0x80000000u || expected >= 0x80000000u) { // (as decode_stream)
            if (tid == 0) status[i] = ZG_LZW_E_TOO_LARGE, actual[i] = 0, nseg[i] = 0;
            continue;
        }
        uint32_t ns = 0;
        uint64_t seg = 0;
        for (;;) {
            if (expected == 0 || ns + 1 == slots) { // the open last slot (an empty tile: done at once)
                if (tid == 0) D[ns] = zg_lzw_seg{seg, 0u, 0u, ZG_LZW_SEG_FINAL, 0u};
                ns++;
                break;
            }
            uint32_t codes = 0;
            for (uint32_t k0 = 0;; k0 += kStep) {
                if (tid == 0) first_special = 0xffffffffu;
                __syncthreads();
                uint32_t first = 0xffffffffu;
#pragma unroll
                for (unsigned r = 0; r < 4; r++) {
                    const uint32_t k = k0 + r * kThreads + tid;
                    uint32_t c = 0;
                    const bool have = zg_lzw_read(p, nb, seg + zg_lzw_bit_at(k), zg_lzw_width(k), &c);
                    if ((!have || c == ZG_LZW_CLEAR || c == ZG_LZW_EOI) && k < first) first = k;
                }
#pragma unroll
                for (unsigned o = 16; o; o >>= 1) first = min(first, __shfl_xor_sync(kFull, first, o));
                if (lane == 0 && first != 0xffffffffu) atomicMin(&first_special, first);
                __syncthreads();
                codes = first_special;
                __syncthreads(); // (before the next step resets it)
                if (codes != 0xffffffffu) break;
            }
            const uint64_t sbit = seg + zg_lzw_bit_at(codes);
            const unsigned sw = zg_lzw_width(codes);
            uint32_t sc = 0;
            const bool have = zg_lzw_read(p, nb, sbit, sw, &sc);
            const uint32_t kind = have && sc == ZG_LZW_CLEAR ? 0u : (uint32_t)ZG_LZW_SEG_FINAL;
            if (tid == 0) D[ns] = zg_lzw_seg{seg, codes, 0u, kind, 0u};
            ns++;
            seg = sbit + sw;
            if (kind) break;
        }
        if (tid == 0) nseg[i] = ns;
    }
}

// Lengths: a warp a segment slot walks its codes 32 at a time with the dictionary's lengths alone (an earlier
// batch's from shared memory, this batch's by shuffles, as decode_stream), until a bad code or the stream's
// expected size is reached (the segment then decides its stream, whatever follows).
__global__ void __launch_bounds__(32 * ZG_LC_LZW_LENGTHS_WARPS)
    lzw_lengths_kernel(const void *const *in, const size_t *in_bytes, const size_t *out_bytes, size_t n,
                       zg_lzw_seg *segs, const uint32_t *nseg, uint32_t slots) {
    __shared__ uint16_t lens[ZG_LC_LZW_LENGTHS_WARPS][ZG_LZW_SEG_CODES];
    static_assert(sizeof(lens) == ZG_LC_LZW_LENGTHS_SMEM, "launch_config.h: the LZW lengths pass's shared memory");
    const unsigned w = threadIdx.x / 32, lane = threadIdx.x & 31;
    uint16_t *L = lens[w];
    for (size_t g = blockIdx.x * (size_t)ZG_LC_LZW_LENGTHS_WARPS + w; g < n * slots;
         g += (size_t)gridDim.x * ZG_LC_LZW_LENGTHS_WARPS) {
        const size_t i = g / slots;
        if (g - i * slots >= nseg[i]) continue;
        const zg_lzw_seg d = segs[g];
        if (d.kind & ZG_LZW_SEG_FINAL) continue; // (decides its stream whatever its length: the bounds pass's 0)
        const uint8_t *p = (const uint8_t *)in[i];
        const uint64_t nb = in_bytes[i], expected = out_bytes[i];
        prefetch_l2(p, nb, d.bit, d.codes, lane);
        uint64_t total = 0;
        bool bad = false;
        uint32_t next = 0; // (code k0 + lane, read a batch ahead)
        if (lane < d.codes) (void)zg_lzw_read(p, nb, d.bit + zg_lzw_bit_at(lane), zg_lzw_width(lane), &next);
        for (uint32_t k0 = 0; k0 < d.codes && total < expected; k0 += 32) {
            const uint32_t k = k0 + lane;
            const bool act = k < d.codes;
            const uint32_t c = act ? next : 0u;
            next = 0;
            if (k + 32 < d.codes) (void)zg_lzw_read(p, nb, d.bit + zg_lzw_bit_at(k + 32), zg_lzw_width(k + 32), &next);
            const bool b = act && !zg_lzw_code_ok(c, k);
            uint32_t len = 1;
            bool done = !act || b || c < 256u;
            unsigned src = lane;
            if (!done) {
                const uint32_t m = c - ZG_LZW_FIRST;
                if (m < k0) len = L[m] + 1u, done = true;
                else src = m - k0; // (< lane)
            }
            while (__ballot_sync(kFull, !done)) {
                const uint32_t got = __shfl_sync(kFull, len | (uint32_t)done << 31, src);
                if (!done && (got >> 31)) len = (got & 0xffffu) + 1u, done = true;
            }
            const unsigned bm = __ballot_sync(kFull, b);
            const unsigned before = bm ? __ffs(bm) - 1 : 32u; // codes before the first bad one
            if (act && k < ZG_LZW_SEG_CODES) L[k] = (uint16_t)len;
            uint32_t sum = act && lane < before ? len : 0u;
#pragma unroll
            for (unsigned o = 16; o; o >>= 1) sum += __shfl_xor_sync(kFull, sum, o);
            total += sum;
            __syncwarp(); // (the next batch reads the lengths)
            if (bm) {
                bad = true;
                break;
            }
        }
        if (lane == 0) {
            segs[g].len = (uint32_t)(total < expected ? total : expected);
            segs[g].kind = d.kind | (bad ? (uint32_t)ZG_LZW_SEG_BAD : 0u);
        }
        __syncwarp(); // (the next slot's lengths overwrite these)
    }
}

// Decode: a warp a segment slot. Its output offset is the sum of the lengths before it; if an earlier segment
// decides the stream it has nothing to do; else it decodes its segment there, and, if it decides the stream,
// on to the stream's end as decode_stream does (the open slot: serially over the rest), giving its status.
__global__ void __launch_bounds__(32 * kWarps)
    lzw_segments_kernel(const void *const *in, const size_t *in_bytes, void *const *out, const size_t *out_bytes,
                        size_t *actual, int *status, size_t n, const zg_lzw_seg *segs, const uint32_t *nseg,
                        uint32_t slots) {
    __shared__ LzwSegment sh[kWarps];
    const unsigned w = threadIdx.x / 32, lane = threadIdx.x & 31;
    for (size_t g = blockIdx.x * (size_t)kWarps + w; g < n * slots; g += (size_t)gridDim.x * kWarps) {
        const size_t i = g / slots;
        const uint32_t j = (uint32_t)(g - i * slots);
        if (j >= nseg[i]) continue;
        const uint64_t expected = out_bytes[i];
        const zg_lzw_seg *D = segs + i * slots;
        uint64_t at = 0;
        bool earlier = false;
        for (uint32_t t0 = 0; t0 < j && !earlier; t0 += 32) {
            const uint32_t t = t0 + lane;
            const bool has = t < j;
            const uint32_t len = has ? D[t].len : 0u, kind = has ? D[t].kind : 0u;
            uint64_t incl = len;
#pragma unroll
            for (unsigned o = 1; o < 32; o <<= 1) {
                const uint64_t v = __shfl_up_sync(kFull, incl, o);
                if (lane >= o) incl += v;
            }
            earlier = __ballot_sync(kFull, has && zg_lzw_seg_decides(kind, at + incl - len, len, expected)) != 0;
            at += __shfl_sync(kFull, incl, 31);
        }
        if (earlier) continue;
        const zg_lzw_seg d = D[j];
        const bool decides = zg_lzw_seg_decides(d.kind, at, d.len, expected);
        prefetch_l2((const uint8_t *)in[i], in_bytes[i], d.bit, decides ? ZG_LZW_SEG_CODES : d.codes, lane);
        uint32_t op;
        const int e = decode_stream(&sh[w], (const uint8_t *)in[i], in_bytes[i], (uint8_t *)out[i], expected, lane,
                                    &op, d.bit, (uint32_t)at, !decides);
        if (decides && lane == 0) {
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

extern "C" cudaError_t zg_k_lzw_decode_seg_launch(const void *const *in, const size_t *in_bytes, void *const *out,
                                                  const size_t *out_bytes, size_t *actual, int *status, size_t n,
                                                  size_t slots, void *scratch, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    if (slots < 1 || slots > 0xffffffffu || !scratch) return cudaErrorInvalidValue;
    zg_gpu_limits L;
    (void)zg_gpu_limits_current(&L);
    zg_lzw_seg *segs = (zg_lzw_seg *)scratch;
    uint32_t *nseg = (uint32_t *)(segs + n * slots);
    const zg_lc_dims b = zg_lc_lzw_bounds(&L, n), l = zg_lc_lzw_lengths(&L, n * slots),
                     d = zg_lc_lzw_decode(&L, n * slots);
    lzw_bounds_kernel<<<b.grid_x, b.threads, 0, s>>>(in, in_bytes, out_bytes, actual, status, n, segs, nseg,
                                                     (uint32_t)slots);
    lzw_lengths_kernel<<<l.grid_x, l.threads, 0, s>>>(in, in_bytes, out_bytes, n, segs, nseg, (uint32_t)slots);
    lzw_segments_kernel<<<d.grid_x, d.threads, 0, s>>>(in, in_bytes, out, out_bytes, actual, status, n, segs, nseg,
                                                       (uint32_t)slots);
    return cudaGetLastError();
}
