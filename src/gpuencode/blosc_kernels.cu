// The GPU Blosc1 encoder's kernels (blosc_kernels.h). The rules they follow are blosc_frame.c's (plan, shuffle,
// zg_blosc_frame_build), restated here for the device; tests/unit/test_gpu_blosc_encode.c compares every chunk
// with zg_blosc_frame_build's over the same streams.
#include "gpuencode/blosc_kernels.h"

#include "gpucodec/common/gpu_limits.h"

namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kShufTile = 4096;  // bytes of a chunk a thread block shuffles at a time
constexpr unsigned kHeader = 16;

__device__ inline uint32_t block_bytes(const zg_bk_geom &g, uint32_t b) {
    return g.leftover && b == g.nblocks - 1 ? g.leftover : g.blocksize;
}

// zg_blosc_frame_block_shuffle
__device__ inline int block_shuffle(const zg_bk_geom &g, uint32_t b) {
    const uint32_t bsize = block_bytes(g, b);
    if (g.shuffle == 1) return g.typesize > 1 ? 1 : 0;
    if (g.shuffle == 2) return bsize >= g.typesize && (bsize / g.typesize) % 8 == 0 ? 2 : 0;
    return 0;
}

// zg_blosc_frame_span
__device__ inline void span(const zg_bk_geom &g, uint32_t j, uint32_t *off, uint32_t *len) {
    const uint32_t b = j / g.splits, s = j % g.splits;
    if (g.leftover && b == g.nblocks - 1) {
        *off = b * g.blocksize;
        *len = g.leftover;
        return;
    }
    *off = b * g.blocksize + s * g.stream_len;
    *len = g.stream_len;
}

// Where byte q of block b lands in a chunk's shuffled buffer: its stream's padded place, then its offset in it.
__device__ inline uint64_t shuffled_at(const zg_bk_geom &g, uint32_t b, uint32_t q) {
    if (g.leftover && b == g.nblocks - 1) return (uint64_t)b * g.splits * g.stream_pitch + q;
    const uint32_t s = q / g.stream_len;
    return ((uint64_t)b * g.splits + s) * g.stream_pitch + (q - s * g.stream_len);
}

__device__ inline void put_le32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}

// A thread an output byte (gathering), so that writes are coalesced; the reads (strided by typesize, or 8 bytes a
// bit-shuffled byte) hit the same few cache lines across a warp.
__global__ void __launch_bounds__(kThreads) shuffle_kernel(zg_bk_geom g, const uint8_t *const *in, size_t n,
                                                           uint8_t *shuf) {
    const uint32_t tiles = (g.nbytes + kShufTile - 1) / kShufTile;
    for (size_t it = blockIdx.x; it < n * tiles; it += gridDim.x) {
        const size_t c = it / tiles;
        const uint32_t t = (uint32_t)(it % tiles);
        const uint8_t *src = in[c];
        uint8_t *dst = shuf + c * g.chunk_pitch;
        for (uint32_t k = threadIdx.x; k < kShufTile; k += kThreads) {
            const uint32_t p = t * kShufTile + k;
            if (p >= g.nbytes) break;
            const uint32_t b = p / g.blocksize, q = p - b * g.blocksize;
            const uint32_t ts = g.typesize, ne = block_bytes(g, b) / ts;
            const uint8_t *blk = src + (size_t)b * g.blocksize;
            const int kind = block_shuffle(g, b);
            uint8_t v;
            if (kind == 1 && q < ne * ts) {  // row j holds byte j of every item
                const uint32_t j = q / ne, i = q - j * ne;
                v = blk[(size_t)i * ts + j];
            } else if (kind == 2 && q < ne * ts) {  // bit row 8j + k holds bit k of byte j of every item
                const uint32_t row = ne / 8, r = q / row, gi = q - r * row, j = r >> 3, bit = r & 7;
                const uint8_t *x = blk + (size_t)8 * gi * ts + j;
                v = 0;
                for (uint32_t e = 0; e < 8; e++) v |= (uint8_t)(((x[(size_t)e * ts] >> bit) & 1u) << e);
            } else {  // unshuffled blocks, and bytes past a block's last whole item
                v = blk[q];
            }
            dst[shuffled_at(g, b, q)] = v;
        }
    }
}

// A thread block a chunk: an exclusive scan of the streams' stored sizes (4 + bytes each) gives their places.
__global__ void __launch_bounds__(kThreads) frame_kernel(zg_bk_geom g, uint8_t *const *out, size_t n,
                                                         const size_t *comp_bytes, const int *comp_status,
                                                         zg_bk_stream *streams, int *plain, size_t *out_bytes,
                                                         int *status) {
    __shared__ uint64_t warp_sum[kThreads / 32];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (size_t c = blockIdx.x; c < n; c += gridDim.x) {
        uint64_t total = kHeader + 4ull * g.nblocks;
        int pl = g.plain_copy;
        for (uint32_t t0 = 0; !pl && t0 < g.nstreams; t0 += kThreads) {
            const uint32_t j = t0 + threadIdx.x;
            const size_t gi = c * g.nstreams + j;
            uint32_t stored = 0, raw = 0;
            uint64_t v = 0;
            if (j < g.nstreams) {
                uint32_t off, len;
                span(g, j, &off, &len);
                const size_t cb = comp_bytes[gi];
                const uint64_t size = comp_status[gi] == 0 && cb > g.skip ? cb - g.skip : 0;
                raw = size == 0 || size >= len;  // failed, or did not shrink: stored raw, as c-blosc does
                stored = raw ? len : (uint32_t)size;
                v = 4ull + stored;
            }
            uint64_t x = v;  // inclusive scan within the warp, then across warps
            for (unsigned o = 1; o < 32; o <<= 1) {
                const uint64_t y = __shfl_up_sync(0xffffffffu, x, o);
                if (lane >= o) x += y;
            }
            if (lane == 31) warp_sum[warp] = x;
            __syncthreads();
            uint64_t before = 0, tile = 0;
            for (unsigned w = 0; w < kThreads / 32; w++) {
                if (w < warp) before += warp_sum[w];
                tile += warp_sum[w];
            }
            if (j < g.nstreams) streams[gi] = {(uint32_t)(total + before + x - v), stored | raw << 31};
            total += tile;
            __syncthreads();  // warp_sum is written again by the next tile
        }
        if (!pl) pl = total > (uint64_t)g.nbytes + kHeader;  // c-blosc's bound: then a plain copy
        if (threadIdx.x == 0) {
            const uint64_t size = pl ? (uint64_t)g.nbytes + kHeader : total;
            uint8_t *o = out[c];
            o[0] = g.version;
            o[1] = g.versionlz;
            o[2] = (uint8_t)(g.flags | (pl ? 0x02 : 0));
            o[3] = (uint8_t)g.typesize;
            put_le32(o + 4, g.nbytes);
            put_le32(o + 8, g.blocksize);
            put_le32(o + 12, (uint32_t)size);
            plain[c] = pl;
            out_bytes[c] = (size_t)size;
            status[c] = 0;
        }
    }
}

// The thread block copies src[0, len) to dst: 16 bytes a thread and step where both are equally aligned, else
// aligned 4-byte stores of bytes gathered one by one.
__device__ void block_copy(uint8_t *dst, const uint8_t *src, uint32_t len) {
    const unsigned a = ((uintptr_t)dst ^ (uintptr_t)src) & 15 ? 4 : 16;
    uint32_t head = (uint32_t)((a - ((uintptr_t)dst & (a - 1))) & (a - 1));
    if (head > len) head = len;
    if (threadIdx.x < head) dst[threadIdx.x] = src[threadIdx.x];
    const uint32_t words = (len - head) / a, body = head + words * a;
    if (a == 16) {
        uint4 *d = reinterpret_cast<uint4 *>(dst + head);
        const uint4 *s = reinterpret_cast<const uint4 *>(src + head);
        for (uint32_t w = threadIdx.x; w < words; w += kThreads) d[w] = s[w];
    } else {
        uint32_t *d = reinterpret_cast<uint32_t *>(dst + head);
        const uint8_t *s = src + head;
        for (uint32_t w = threadIdx.x; w < words; w += kThreads) {
            const uint8_t *p = s + 4 * (size_t)w;
            d[w] = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        }
    }
    for (uint32_t i = body + threadIdx.x; i < len; i += kThreads) dst[i] = src[i];
}

// A thread block a tile of a piece of a chunk. A plain copy's pieces are the streams' spans of the input (they
// tile it), or ZG_BK_TILE parts of it where the plan has no streams.
__global__ void __launch_bounds__(kThreads) copy_kernel(zg_bk_geom g, const uint8_t *const *in, uint8_t *const *out,
                                                        size_t n, const uint8_t *shuf, const uint8_t *slots,
                                                        const zg_bk_stream *streams, const int *plain) {
    const size_t per_chunk = (size_t)g.npieces * g.tiles;
    for (size_t it = blockIdx.x; it < n * per_chunk; it += gridDim.x) {
        const size_t c = it / per_chunk;
        const uint32_t piece = (uint32_t)(it % per_chunk / g.tiles), t = (uint32_t)(it % g.tiles);
        uint8_t *o = out[c];
        const uint8_t *src;
        uint8_t *dst;
        uint32_t len;
        if (g.plain_copy) {
            const uint32_t off = piece * ZG_BK_TILE;
            len = g.nbytes - off < ZG_BK_TILE ? g.nbytes - off : ZG_BK_TILE;
            src = in[c] + off;
            dst = o + kHeader + off;
        } else {
            uint32_t off, slen;
            span(g, piece, &off, &slen);
            if (plain[c]) {
                src = in[c] + off;
                dst = o + kHeader + off;
                len = slen;
            } else {
                const size_t gi = c * g.nstreams + piece;
                const zg_bk_stream st = streams[gi];
                len = st.stored & 0x7fffffffu;
                if (t == 0 && threadIdx.x == 0) {
                    put_le32(o + st.pos, len);
                    if (piece % g.splits == 0) put_le32(o + kHeader + 4 * (piece / g.splits), st.pos);
                }
                if (st.stored >> 31)
                    src = g.direct ? in[c] + off : shuf + c * g.chunk_pitch + (uint64_t)piece * g.stream_pitch;
                else
                    src = slots + gi * g.slot_pitch + g.slot_offset;
                dst = o + st.pos + 4;
            }
        }
        const uint32_t lo = t * ZG_BK_TILE;
        if (lo >= len) continue;
        block_copy(dst + lo, src + lo, len - lo < ZG_BK_TILE ? len - lo : ZG_BK_TILE);
    }
}

unsigned grid_for(size_t blocks, unsigned blocks_per_sm) {
    zg_gpu_limits L;
    zg_gpu_limits_current(&L);
    const size_t cap = (size_t)L.sm_count * blocks_per_sm;
    return (unsigned)(blocks < cap ? blocks : cap);
}

}  // namespace

extern "C" cudaError_t zg_bk_shuffle_launch(const zg_bk_geom *g, const uint8_t *const *d_in, size_t n,
                                            uint8_t *d_shuf, cudaStream_t s) {
    if (n == 0 || g->nbytes == 0) return cudaSuccess;
    const size_t tiles = ((size_t)g->nbytes + kShufTile - 1) / kShufTile;
    shuffle_kernel<<<grid_for(n * tiles, 8), kThreads, 0, s>>>(*g, d_in, n, d_shuf);
    return cudaGetLastError();
}

extern "C" cudaError_t zg_bk_frame_launch(const zg_bk_geom *g, uint8_t *const *d_out, size_t n,
                                          const size_t *d_comp_bytes, const int *d_comp_status,
                                          zg_bk_stream *d_streams, int *d_plain, size_t *d_out_bytes, int *d_status,
                                          cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    frame_kernel<<<grid_for(n, 8), kThreads, 0, s>>>(*g, d_out, n, d_comp_bytes, d_comp_status, d_streams, d_plain,
                                                     d_out_bytes, d_status);
    return cudaGetLastError();
}

extern "C" cudaError_t zg_bk_copy_launch(const zg_bk_geom *g, const uint8_t *const *d_in, uint8_t *const *d_out,
                                         size_t n, const uint8_t *d_shuf, const uint8_t *d_slots,
                                         const zg_bk_stream *d_streams, const int *d_plain, cudaStream_t s) {
    const size_t items = n * g->npieces * (size_t)g->tiles;
    if (items == 0) return cudaSuccess;
    copy_kernel<<<grid_for(items, 8), kThreads, 0, s>>>(*g, d_in, d_out, n, d_shuf, d_slots, d_streams, d_plain);
    return cudaGetLastError();
}
