// The GPU encoder's kernels (encode_kernels.h): per-segment checksums of the uncompressed chunks and the framing
// around nvCOMP's raw streams. The byte-level rules live in encode_frames.h, which the CPU tests check.
#include "gpuencode/encode_kernels.h"

#include "gpucodec/common/gpu_limits.h"
#include "gpuencode/deflate_pieces.h"
#include "gpuencode/encode_frames.h"

namespace {

constexpr unsigned kThreads = ZG_GE_SEG_THREADS;

struct Pows {  // x^(8 * 2^k) mod P for CRC32, by value (256 bytes of kernel parameters)
    uint32_t pow[ZG_CRC_POW_N];
};

const Pows &crc32_pows() {
    static const Pows p = [] {
        Pows q;
        zg_crc_pow_init(q.pow, ZG_CRC32_POLY);
        return q;
    }();
    return p;
}

// Block-wide XOR and sum, valid in thread 0; `sh` holds a word a warp. The leading barrier lets them run back to
// back on the same `sh`.
__device__ uint32_t block_xor(uint32_t v, uint32_t *sh) {
    for (int o = 16; o > 0; o >>= 1) v ^= __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    uint32_t r = 0;
    if (threadIdx.x == 0)
        for (unsigned w = 0; w < kThreads / 32; w++) r ^= sh[w];
    return r;
}
__device__ uint32_t block_sum(uint32_t v, uint32_t *sh) {  // values below 65521: 256 of them fit 32 bits
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    uint32_t r = 0;
    if (threadIdx.x == 0)
        for (unsigned w = 0; w < kThreads / 32; w++) r += sh[w];
    return r;
}

// A block a segment (grid-stride). The tables are built once per block and serve every segment it takes; the
// kind is the same for the whole launch, so every thread takes the same branches and barriers.
__global__ void __launch_bounds__(kThreads) checksum_kernel(int kind, const zg_ge_seg *segs, size_t n,
                                                            uint32_t *check, Pows pw) {
    __shared__ uint32_t tab[8 * 256];
    __shared__ uint32_t pow[ZG_CRC_POW_N];
    __shared__ uint32_t sh[kThreads / 32];
    uint32_t shift_t = 0;
    if (kind == ZG_CHECK_CRC32) {
        for (unsigned i = threadIdx.x; i < 256; i += kThreads) tab[i] = zg_crc_table0_entry(i, ZG_CRC32_POLY);
        for (unsigned i = threadIdx.x; i < ZG_CRC_POW_N; i += kThreads) pow[i] = pw.pow[i];
        __syncthreads();
        for (unsigned e = threadIdx.x; e < 7 * 256; e += kThreads) {  // table k: table 0 applied k + 1 times
            const unsigned k = 1 + e / 256, i = e % 256;
            uint32_t c = tab[i];
            for (unsigned r = 0; r < k; r++) c = (c >> 8) ^ tab[c & 0xff];
            tab[k * 256 + i] = c;
        }
        __syncthreads();
        shift_t = zg_ge_thread_shift(threadIdx.x, pow, ZG_CRC32_POLY);
    }
    for (size_t s = blockIdx.x; s < n; s += gridDim.x) {
        const zg_ge_seg g = segs[s];
        if (kind == ZG_CHECK_CRC32) {
            const uint32_t x = block_xor(zg_ge_crc_term(tab, pow, shift_t, g.p, g.len, threadIdx.x), sh);
            if (threadIdx.x == 0) check[s] = zg_crc_finish(x, g.len, pow, ZG_CRC32_POLY);
        } else {
            uint32_t ta, tb;
            zg_ge_adler_terms(g.p, g.len, threadIdx.x, &ta, &tb);
            const uint32_t sa = block_sum(ta, sh);
            const uint32_t sb = block_sum(tb, sh);
            if (threadIdx.x == 0) check[s] = zg_adler_finish(sa, sb, g.len);
        }
    }
}

// A thread a chunk: a few header and trailer bytes each, and the fold of its segments' checksums.
__global__ void frame_kernel(int format, int level, size_t raw_offset, const zg_ge_chunk *chunks, size_t n,
                             const size_t *nvc_bytes, const int *nvc_status, const uint32_t *check, size_t *out_bytes,
                             int *status, Pows pw) {
    const int kind = zg_ge_check_kind(format);
    const unsigned hdr = zg_ge_header_bytes(format), trl = zg_ge_trailer_bytes(format);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const zg_ge_chunk c = chunks[i];
        uint8_t *raw = c.slot + raw_offset;
        size_t raw_len;
        int st = 0;
        if (c.nvc < 0) {
            raw_len = zg_ge_write_empty_raw(format, raw);
        } else {
            st = nvc_status[c.nvc];
            raw_len = nvc_bytes[c.nvc];
            if (st == 0 && raw_len > c.raw_cap) st = 15;  // nvCOMP's "output buffer too small": never trust past it
        }
        if (st != 0) {
            out_bytes[i] = 0;
            status[i] = st;
            continue;
        }
        zg_ge_write_header(format, level, c.in_bytes, raw - hdr);
        if (trl) {
            const uint32_t v = kind != ZG_CHECK_NONE ? zg_ge_fold(kind, check + c.first_seg, c.n_segs, c.in_bytes,
                                                                  pw.pow)
                                                     : 0u;
            zg_ge_write_trailer(format, v, c.in_bytes, raw + raw_len);
        }
        out_bytes[i] = hdr + raw_len + trl;
        status[i] = 0;
    }
}

// A warp a piece, walked by its lane 0 (deflate_pieces.h) with the code tables in shared memory. A walk is one long
// chain of dependent, data-dependent loads: 32 lanes walking 32 pieces made every load of the warp 32 transactions
// (a thread a piece: 447 ms for 512 pieces of 64 KiB, H200), one lane a warp makes each one.
// walk[3k..3k+2] = the final block's header bit, its end bit, the piece's joined bytes; or, in walk[3k+2], the
// failure's status, inverted (nvCOMP's status, or 100 + the walk's).
constexpr unsigned kWalkWarps = 8;
__global__ void __launch_bounds__(32 * kWalkWarps) walk_kernel(const zg_ge_piece *pieces, size_t n,
                                                               const size_t *nvc_bytes, const int *nvc_status,
                                                               uint64_t *walk) {
    __shared__ zg_dp_huff lit[kWalkWarps], dist[kWalkWarps];
    const unsigned w = threadIdx.x / 32;
    if (threadIdx.x % 32) return;
    for (size_t k = (size_t)blockIdx.x * kWalkWarps + w; k < n; k += (size_t)gridDim.x * kWalkWarps) {
        const zg_ge_piece p = pieces[k];
        int st = nvc_status[k];
        uint64_t hdr = 0, end = 0;
        if (st == 0) {
            const int r = zg_dp_walk(p.out, nvc_bytes[k], &hdr, &end, &lit[w], &dist[w]);
            if (r) st = 100 + r;
        }
        walk[3 * k] = hdr;
        walk[3 * k + 1] = end;
        walk[3 * k + 2] = st ? ~(uint64_t)(unsigned)st : zg_dp_joined_bytes(end, (int)p.last);
    }
}

// A thread a chunk: its pieces' offsets in the joined stream (walk[3k + 2] becomes the offset), its size, status.
__global__ void place_kernel(const zg_ge_chunk *chunks, size_t n, uint64_t *walk, size_t *raw_bytes, int *raw_status) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const zg_ge_chunk c = chunks[i];
        if (c.nvc < 0) continue;
        uint64_t at = 0;
        int st = 0;
        for (uint32_t k = c.first_piece; k < c.first_piece + c.n_pieces; k++) {
            const uint64_t len = walk[3 * k + 2];
            if (len >> 63) {
                st = (int)(unsigned)~len;
                break;
            }
            walk[3 * k + 2] = at;
            at += len;
        }
        if (st == 0 && at > c.raw_cap) st = 15;  // nvCOMP's "output buffer too small"
        raw_bytes[c.nvc] = st ? 0 : at;
        raw_status[c.nvc] = st;
    }
}

// A block a piece: its bytes copied into its chunk's stream, joined (deflate_pieces.h), 4 bytes a thread a step.
__global__ void __launch_bounds__(256) join_kernel(const zg_ge_chunk *chunks, const zg_ge_piece *pieces, size_t n,
                                                   const uint64_t *walk, size_t raw_offset, const int *raw_status) {
    for (size_t k = blockIdx.x; k < n; k += gridDim.x) {
        const zg_ge_piece p = pieces[k];
        const zg_ge_chunk c = chunks[p.chunk];
        if (raw_status[c.nvc] != 0) continue;
        const uint64_t hdr = walk[3 * k], end = walk[3 * k + 1], off = walk[3 * k + 2];
        const uint64_t len = zg_dp_joined_bytes(end, (int)p.last);
        uint8_t *dst = c.slot + raw_offset + off;
        for (uint64_t i = threadIdx.x; i < len; i += blockDim.x) dst[i] = zg_dp_joined_byte(p.out, i, hdr, end, (int)p.last);
    }
}

unsigned grid_for(size_t items, unsigned per_block, unsigned blocks_per_sm) {
    zg_gpu_limits L;
    zg_gpu_limits_current(&L);
    const size_t want = (items + per_block - 1) / per_block;
    const size_t cap = (size_t)L.sm_count * blocks_per_sm;
    return (unsigned)(want < cap ? want : cap);
}

}  // namespace

extern "C" cudaError_t zg_ge_checksum_launch(int kind, const zg_ge_seg *d_segs, size_t n, uint32_t *d_check,
                                             cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    if (kind != ZG_CHECK_CRC32 && kind != ZG_CHECK_ADLER32) return cudaErrorInvalidValue;
    // 9 KiB of shared memory and 256 threads a block: 8 blocks an SM fit on every current GPU
    checksum_kernel<<<grid_for(n, 1, 8), kThreads, 0, s>>>(kind, d_segs, n, d_check, crc32_pows());
    return cudaGetLastError();
}

extern "C" cudaError_t zg_ge_frame_launch(int format, int level, size_t raw_offset, const zg_ge_chunk *d_chunks,
                                          size_t n, const size_t *d_nvc_bytes, const int *d_nvc_status,
                                          const uint32_t *d_check, size_t *d_out_bytes, int *d_status,
                                          cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    if (format < 0 || format >= ZG_GE_N) return cudaErrorInvalidValue;
    frame_kernel<<<grid_for(n, 128, 4), 128, 0, s>>>(format, level, raw_offset, d_chunks, n, d_nvc_bytes,
                                                      d_nvc_status, d_check, d_out_bytes, d_status, crc32_pows());
    return cudaGetLastError();
}

extern "C" cudaError_t zg_ge_join_launch(const zg_ge_chunk *d_chunks, size_t n, const zg_ge_piece *d_pieces,
                                         size_t n_pieces, const size_t *d_nvc_bytes, const int *d_nvc_status,
                                         uint64_t *d_walk, size_t raw_offset, size_t *d_raw_bytes, int *d_raw_status,
                                         cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    if (n_pieces) {
        walk_kernel<<<grid_for(n_pieces, kWalkWarps, 6), 32 * kWalkWarps, 0, s>>>(d_pieces, n_pieces, d_nvc_bytes,
                                                                                  d_nvc_status, d_walk);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) return e;
    }
    place_kernel<<<grid_for(n, 128, 4), 128, 0, s>>>(d_chunks, n, d_walk, d_raw_bytes, d_raw_status);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || n_pieces == 0) return e;
    join_kernel<<<grid_for(n_pieces, 1, 16), 256, 0, s>>>(d_chunks, d_pieces, n_pieces, d_walk, raw_offset, d_raw_status);
    return cudaGetLastError();
}
