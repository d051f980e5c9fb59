// zgpu's LZ4 encoder on the GPU (lz4_encode_kernels.h). A warp a chunk: each lane matches a segment (a 32nd of it)
// (zstd_encode.h's matcher), lane 0 joins the sequences and applies LZ4's rules (lz4_encode.h), then each lane sums
// the bytes of its share of the sequences and writes them at the offset the warp's scan gives. The bytes equal
// lz4_encode.h's CPU reference.
#include "gpuencode/lz4_encode_kernels.h"

#include "gpuencode/encode_warp.cuh"
#include "gpuencode/lz4_encode.h"

namespace {

constexpr unsigned kWarpsPerSm = 12; /* of the 13 its shared memory allows */

struct WarpScratch {
    zg_ze_seq seqs[ZG_ZE_BLOCK_SEQS];
};

struct Shared {
    uint16_t table[ZG_ZE_LANES][ZG_ZE_HASH_ENTRIES];
    zg_ze_lane lanes[ZG_ZE_LANES];
    uint32_t nseq, tail;
};

__global__ void __launch_bounds__(32) chunks_kernel(const zg_lz_chunk *chunks, size_t n_chunks, zg_ze_hints hints,
                                                    WarpScratch *scratch, size_t *out_bytes, int *status) {
    __shared__ Shared sm;
    WarpScratch *ws = scratch + blockIdx.x;
    const unsigned lane = threadIdx.x;
    for (size_t k = blockIdx.x; k < n_chunks; k += gridDim.x) {
        const zg_lz_chunk ch = chunks[k];
        const uint8_t *in = ch.in;
        const uint32_t n = ch.len, seg = zg_lz_seg_bytes(n), nl = (n + seg - 1) / seg;
        const uint32_t sb = min(lane * seg, n), se = min(sb + seg, n);
        uint32_t tail = 0;
        const uint32_t got = zg_ze_match_segment(in, sb, se, &hints, sm.table[lane],
                                                 ws->seqs + (size_t)lane * ZG_ZE_SEG_SEQS, &tail);
        sm.lanes[lane].n = got;
        sm.lanes[lane].tail = tail;
        sm.lanes[lane].len = se - sb;
        __syncwarp();
        const uint32_t ext_off =
            lane ? zg_ze_lane_end_off(&sm.lanes[lane - 1], ws->seqs + (size_t)(lane - 1) * ZG_ZE_SEG_SEQS) : 0;
        const uint32_t ext = zg_ze_extend(in, sb, se, ext_off);
        __syncwarp();
        sm.lanes[lane].ext_off = ext_off;
        sm.lanes[lane].ext = ext;
        __syncwarp();
        if (lane == 0) {
            uint32_t ns = zg_ze_join(ws->seqs, sm.lanes, nl, &sm.tail);
            zg_lz_fix(ws->seqs, &ns, &sm.tail, n);
            sm.nseq = ns;
        }
        __syncwarp();
        const uint32_t ns = sm.nseq;
        const uint32_t i0 = (uint32_t)((uint64_t)ns * lane / 32), i1 = (uint32_t)((uint64_t)ns * (lane + 1) / 32);
        uint32_t span = 0, bytes = 0;
        for (uint32_t i = i0; i < i1; i++) {
            const zg_ze_seq q = ws->seqs[i];
            span += q.lit + q.len;
            bytes += zg_lz_seq_bytes(q.lit, q.len);
        }
        if (lane == 31) bytes += zg_lz_last_bytes(sm.tail);
        uint32_t all, total;
        uint32_t pos = zg_ew_exclusive_sum(span, &all);
        const uint32_t at = zg_ew_exclusive_sum(bytes, &total);
        uint8_t *p = ch.slot + 4 + at;
        for (uint32_t i = i0; i < i1; i++) {
            const zg_ze_seq q = ws->seqs[i];
            p = zg_lz_put_seq(p, in + pos, q.lit, q.len, q.off);
            pos += q.lit + q.len;
        }
        if (lane == 31) zg_lz_put_seq(p, in + pos, sm.tail, 0, 0);
        if (lane == 0) {
            for (int b = 0; b < 4; b++) ch.slot[b] = (uint8_t)(n >> (8 * b));
            out_bytes[k] = 4 + (size_t)total;
            status[k] = 0;
        }
        __syncwarp(); /* the shared tables are the next chunk's */
    }
}

}  // namespace

extern "C" size_t zg_lz_warp_scratch_bytes(void) { return (sizeof(WarpScratch) + 255) & ~(size_t)255; }

extern "C" cudaError_t zg_lz_resident_warps(size_t *out) { return zg_ew_warps(kWarpsPerSm, out); }

extern "C" cudaError_t zg_lz_chunks_launch(const zg_lz_chunk *d_chunks, size_t n, zg_ze_hints hints,
                                           void *d_warp_scratch, size_t n_warps, size_t *d_out_bytes, int *d_status,
                                           cudaStream_t s) {
    if (n == 0 || n_warps == 0) return cudaSuccess;
    const size_t grid = n_warps < n ? n_warps : n;
    chunks_kernel<<<(unsigned)grid, 32, 0, s>>>(d_chunks, n, zg_lz_hints(hints), (WarpScratch *)d_warp_scratch,
                                                d_out_bytes, d_status);
    return cudaGetLastError();
}
