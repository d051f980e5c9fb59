// zgpu's LZ4 encoder on the GPU (lz4_encode_kernels.h). A warp a chunk: each lane matches a segment (a 32nd of it)
// (zstd_encode.h's matcher), the warp joins the lanes' sequences and applies LZ4's rules (lz4_encode.h; lane 0 only
// where segments meet and for the end rules), then each lane sums the bytes of its share of the sequences and writes
// them at the offset the warp's scan gives, except the literal runs of kLongLit bytes or more, which the whole warp
// copies afterwards. Lane 0 alone joining every sequence, and a lane alone copying a noisy byte plane's 32 KiB run a
// byte a load, had left the kernel at 4.9 active lanes of 32: 21.6 ms for blosc's streams of 256 MiB of the OCT
// volume on an H100, 13.4 ms now. The bytes equal lz4_encode.h's CPU reference.
#include "gpuencode/lz4_encode_kernels.h"

#include "gpuencode/encode_warp.cuh"
#include "gpuencode/lz4_encode.h"
#include "gpuencode/match_warp.cuh"

namespace {

constexpr unsigned kWarpsPerSm = 12; /* of the 13 its shared memory allows */
constexpr uint32_t kLongLit = 64;   /* literal runs this long or longer: copied by the whole warp */

/* A literal run the warp copies: in[src, src + len) to the chunk's block at dst. */
struct LongCopy {
    uint32_t src, dst, len;
};

struct WarpScratch {
    zg_ze_seq seqs[ZG_ZE_BLOCK_SEQS];
    LongCopy longs[ZG_LZ_MAX_INPUT / kLongLit]; /* (runs of kLongLit bytes or more in a block: no more) */
};

struct Shared {
    uint16_t table[ZG_ZE_LANES][ZG_ZE_HASH_ENTRIES];
    zg_ze_lane lanes[ZG_ZE_LANES];
    zg_mw_join_state js;
    uint32_t nseq, tail, n_long;
};

/* zg_lz_fix_short by the warp, 32 sequences at a time: a match under 4 bytes dropped, its bytes added to the literals
 * of the next one kept (an inclusive scan of the dropped bytes; the previous kept lane's sum subtracted). Returns the
 * bytes the kept sequences cover. */
__device__ uint32_t warp_fix_short(zg_ze_seq *seqs, uint32_t *ns_io, uint32_t tail, uint32_t n, unsigned lane) {
    const uint32_t ns = *ns_io;
    uint32_t k = 0, carry = 0;
    for (uint32_t b = 0; b < ns; b += 32) {
        const bool has = b + lane < ns;
        zg_ze_seq q = {0, 0, 0};
        if (has) q = seqs[b + lane];
        const bool keep = has && q.len >= ZG_LZ_MIN_MATCH;
        const unsigned keeps = __ballot_sync(0xffffffffu, keep);
        if (keeps == 0xffffffffu && carry == 0 && k == b) { /* (the usual case: nothing dropped so far) */
            k += 32;
            continue;
        }
        uint32_t sum = has && !keep ? q.lit + q.len : 0; /* inclusive scan of the dropped bytes */
        for (int d = 1; d < 32; d <<= 1) {
            const uint32_t o = __shfl_up_sync(0xffffffffu, sum, d);
            if ((int)lane >= d) sum += o;
        }
        const unsigned before = keeps & ((1u << lane) - 1u);
        const int prev = before ? 31 - __clz((int)before) : -1;
        const uint32_t at_prev = __shfl_sync(0xffffffffu, sum, prev < 0 ? 0 : prev);
        if (keep) q.lit += sum - (prev < 0 ? 0 : at_prev) + (prev < 0 ? carry : 0);
        const int last = keeps ? 31 - __clz((int)keeps) : -1;
        const uint32_t total = __shfl_sync(0xffffffffu, sum, 31);
        const uint32_t at_last = __shfl_sync(0xffffffffu, sum, last < 0 ? 0 : last);
        __syncwarp();
        if (keep) seqs[k + __popc(before)] = q;
        __syncwarp();
        carry = (last < 0 ? carry : 0) + total - (last < 0 ? 0 : at_last);
        k += __popc(keeps);
    }
    *ns_io = k;
    return n - tail - carry;
}

/* zg_lz_put_seq at block + at, the literals in[src, src + lit), a long run of them left to the warp (longs). */
__device__ uint32_t put_seq(uint8_t *block, uint32_t at, const uint8_t *in, uint32_t src, uint32_t lit, uint32_t len,
                            uint32_t off, LongCopy *longs, uint32_t *n_long) {
    const uint32_t ml = len ? len - ZG_LZ_MIN_MATCH : 0;
    uint8_t *p = block + at;
    *p++ = (uint8_t)((lit < 15 ? lit : 15) << 4 | (len ? (ml < 15 ? ml : 15) : 0));
    p = zg_lz_put_ext(p, lit);
    if (lit >= kLongLit) {
        longs[atomicAdd(n_long, 1u)] = LongCopy{src, (uint32_t)(p - block), lit};
    } else {
        for (uint32_t k = 0; k < lit; k++) p[k] = in[src + k];
    }
    p += lit;
    if (len) {
        *p++ = (uint8_t)off;
        *p++ = (uint8_t)(off >> 8);
        p = zg_lz_put_ext(p, ml);
    }
    return (uint32_t)(p - block);
}

/* The warp copies the long literal runs, four bytes a lane in flight. */
__device__ void copy_longs(uint8_t *__restrict__ block, const uint8_t *__restrict__ in, const LongCopy *longs,
                           uint32_t n, unsigned lane) {
    for (uint32_t e = 0; e < n; e++) {
        const LongCopy c = longs[e];
        const uint8_t *s = in + c.src;
        uint8_t *d = block + c.dst;
        uint32_t k = lane;
        for (; k + 96 < c.len; k += 128) {
            const uint8_t a = s[k], b = s[k + 32], x = s[k + 64], y = s[k + 96];
            d[k] = a, d[k + 32] = b, d[k + 64] = x, d[k + 96] = y;
        }
        for (; k < c.len; k += 32) d[k] = s[k];
    }
}

__global__ void __launch_bounds__(32) chunks_kernel(const zg_lz_chunk *chunks, size_t n_chunks, zg_ze_hints hints,
                                                    WarpScratch *scratch, size_t *out_bytes, int *status) {
    __shared__ Shared sm;
    WarpScratch *ws = scratch + blockIdx.x;
    const unsigned lane = threadIdx.x;
    for (size_t k = blockIdx.x; k < n_chunks; k += gridDim.x) {
        const zg_lz_chunk ch = chunks[k];
        const uint8_t *in = ch.in;
        const uint32_t n = ch.len;
        uint32_t tail_j, nj = zg_mw_match(in, 0, n, zg_lz_seg_bytes(n), &hints, sm.table[lane], ws->seqs, sm.lanes,
                                          &sm.js, &tail_j);
        const uint32_t end = warp_fix_short(ws->seqs, &nj, tail_j, n, lane);
        if (lane == 0) {
            zg_lz_fix_end(ws->seqs, &nj, &tail_j, n, end);
            sm.nseq = nj;
            sm.tail = tail_j;
            sm.n_long = 0;
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
        uint8_t *block = ch.slot + 4;
        uint32_t w = at;
        for (uint32_t i = i0; i < i1; i++) {
            const zg_ze_seq q = ws->seqs[i];
            w = put_seq(block, w, in, pos, q.lit, q.len, q.off, ws->longs, &sm.n_long);
            pos += q.lit + q.len;
        }
        if (lane == 31) put_seq(block, w, in, pos, sm.tail, 0, 0, ws->longs, &sm.n_long);
        __syncwarp(); /* (orders the lanes' writes of longs and n_long before the warp reads them) */
        copy_longs(block, in, ws->longs, sm.n_long, lane);
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
