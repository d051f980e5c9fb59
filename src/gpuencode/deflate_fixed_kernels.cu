// zgpu's fixed-Huffman DEFLATE pieces on the GPU (deflate_fixed_kernels.h). A warp a piece, as the zstd encoder's
// block kernel: each lane matches a 4 KiB segment (zstd_encode.h's matcher), the warp joins the sequences
// (match_warp.cuh); then each lane sizes its share of the sequences in bits, and where the whole is shorter than
// nvCOMP's piece, the lanes OR their bits into the zeroed slot at their offsets. The bytes equal deflate_fixed.h's
// CPU reference.
#include "gpuencode/deflate_fixed_kernels.h"

#include "gpuencode/encode_warp.cuh"
#include "gpuencode/match_warp.cuh"
#include "gpuencode/deflate_fixed.h"

namespace {

constexpr unsigned kLanes = 16; /* 64 KiB pieces: 16 segments */
constexpr unsigned kWarpsPerSm = 4;

struct WarpScratch {
    zg_ze_seq seqs[kLanes * ZG_ZE_SEG_SEQS];
};

struct Shared {
    uint16_t table[kLanes][ZG_ZE_HASH_ENTRIES];
    zg_ze_lane lanes[kLanes];
    zg_mw_join_state js;
    uint32_t nseq, tail;
};

// Bits ORed into memory at an absolute bit address, a word at a time.
struct OrBits {
    uint32_t *w;
    uint64_t acc;
    uint32_t n;
    __device__ void start(const uint8_t *base, uint64_t bit) {
        const uint64_t a = (uint64_t)(uintptr_t)base * 8 + bit;
        w = (uint32_t *)(uintptr_t)((a >> 5) << 2);
        acc = 0;
        n = (uint32_t)(a & 31);
    }
    __device__ void put(uint32_t v, uint32_t bits) {
        acc |= (uint64_t)v << n;
        n += bits;
        if (n >= 32) {
            atomicOr(w++, (uint32_t)acc);
            acc >>= 32;
            n -= 32;
        }
    }
    __device__ void flush() {
        if (n) atomicOr(w, (uint32_t)acc);
    }
};

__device__ uint32_t lit_bits(const uint8_t *p, uint32_t n) {
    uint32_t b = 0;
    for (uint32_t k = 0; k < n; k++) b += zg_df_lit_bits(p[k]);
    return b;
}

__device__ void put_lits(OrBits &o, const uint8_t *p, uint32_t n) {
    for (uint32_t k = 0; k < n; k++) {
        uint32_t b;
        const uint32_t c = zg_df_litlen_code(p[k], &b);
        o.put(c, b);
    }
}

__device__ void put_match(OrBits &o, uint32_t len, uint32_t d) {
    uint32_t dx, dv, b, xb, xv;
    const uint32_t dc = zg_df_dist_code(d, &dx, &dv);
    const uint32_t rdc = __brev(dc) >> 27;
    while (len) {
        const uint32_t part = zg_df_match_part(&len);
        const uint32_t c = zg_df_litlen_code(zg_df_len_sym(part, &xb, &xv), &b);
        o.put(c, b);
        o.put(xv, xb);
        o.put(rdc, 5);
        o.put(dv, dx);
    }
}

__global__ void __launch_bounds__(32) pieces_kernel(const zg_df_piece_in *pin, size_t n_pieces, zg_ze_hints hints,
                                                    const zg_ge_piece *pieces, size_t *nvc_bytes, int *nvc_status,
                                                    size_t piece_slot, WarpScratch *scratch) {
    __shared__ Shared sm;
    WarpScratch *ws = scratch + blockIdx.x;
    const unsigned lane = threadIdx.x;
    for (size_t k = blockIdx.x; k < n_pieces; k += gridDim.x) {
        const zg_df_piece_in pi = pin[k];
        const uint8_t *c = pi.chunk;
        const uint32_t n = pi.len;
        /* matches, a segment a lane (16 of them), joined by the warp */
        uint32_t tail;
        const uint32_t joined = zg_mw_match(c, pi.at, n, ZG_ZE_SEG_BYTES, &hints, sm.table[lane < kLanes ? lane : 0],
                                            ws->seqs, sm.lanes, &sm.js, &tail);
        if (lane == 0) sm.nseq = joined, sm.tail = tail;
        __syncwarp();
        /* each lane's share of the sequences: where its bytes start, and its bits */
        const uint32_t ns = sm.nseq;
        const uint32_t i0 = (uint32_t)((uint64_t)ns * lane / 32), i1 = (uint32_t)((uint64_t)ns * (lane + 1) / 32);
        uint32_t span = 0;
        for (uint32_t i = i0; i < i1; i++) span += ws->seqs[i].lit + ws->seqs[i].len;
        uint32_t all;
        const uint32_t start = pi.at + zg_ew_exclusive_sum(span, &all);
        uint32_t bits = lane == 0 ? 3 : 0, pos = start;
        for (uint32_t i = i0; i < i1; i++) {
            const zg_ze_seq q = ws->seqs[i];
            bits += lit_bits(c + pos, q.lit) + zg_df_match_bits(q.len, q.off);
            pos += q.lit + q.len;
        }
        uint32_t eb;
        if (lane == 31) bits += lit_bits(c + pos, sm.tail) + (zg_df_litlen_code(256, &eb), eb);
        uint32_t total_bits;
        const uint32_t bit0 = zg_ew_exclusive_sum(bits, &total_bits);
        const size_t bytes = (total_bits + 7) / 8;
        const bool better = (nvc_status[k] != 0 || bytes < nvc_bytes[k]) && bytes + 4 <= piece_slot;
        if (!better) continue; /* (uniform: every lane computed the same) */
        uint8_t *out = (uint8_t *)pieces[k].out;
        for (size_t b = lane; b < bytes; b += 32) out[b] = 0;
        __syncwarp();
        OrBits o;
        o.start(out, bit0);
        if (lane == 0) o.put(3, 3); /* BFINAL, fixed codes */
        pos = start;
        for (uint32_t i = i0; i < i1; i++) {
            const zg_ze_seq q = ws->seqs[i];
            put_lits(o, c + pos, q.lit);
            put_match(o, q.len, q.off);
            pos += q.lit + q.len;
        }
        if (lane == 31) {
            put_lits(o, c + pos, sm.tail);
            const uint32_t eob = zg_df_litlen_code(256, &eb);
            o.put(eob, eb);
        }
        o.flush();
        __syncwarp();
        if (lane == 0) {
            nvc_bytes[k] = bytes;
            nvc_status[k] = 0;
        }
    }
}

}  // namespace

extern "C" size_t zg_df_warp_scratch_bytes(void) { return (sizeof(WarpScratch) + 255) & ~(size_t)255; }

extern "C" cudaError_t zg_df_resident_warps(size_t *out) { return zg_ew_warps(kWarpsPerSm, out); }

extern "C" cudaError_t zg_df_pieces_launch(const zg_df_piece_in *d_in, size_t n, zg_ze_hints hints,
                                           const zg_ge_piece *d_pieces, size_t *d_nvc_bytes, int *d_nvc_status,
                                           size_t piece_slot, void *d_warp_scratch, size_t n_warps, cudaStream_t s) {
    if (n == 0 || n_warps == 0) return cudaSuccess;
    const size_t grid = n_warps < n ? n_warps : n;
    pieces_kernel<<<(unsigned)grid, 32, 0, s>>>(d_in, n, zg_df_hints(hints), d_pieces, d_nvc_bytes, d_nvc_status,
                                                piece_slot, (WarpScratch *)d_warp_scratch);
    return cudaGetLastError();
}
