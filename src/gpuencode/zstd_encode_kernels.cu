// zgpu's zstd encoder on the GPU (zstd_encode_kernels.h). The format's rules are zstd_encode.h's, shared with the
// CPU test that checks every frame with libzstd; here is only how a warp divides a block among its lanes:
//   - each lane matches its segment (its hash table in shared memory), then measures how far the previous lane's
//     last match runs on into its segment, and the warp joins the lanes' sequences (match_warp.cuh);
//   - the lanes gather the literals and count them; lane 0 builds the Huffman
//     code; the lanes write the streams (8 lanes a stream, each its share of literals, ORed into place); lane 0
//     codes the sequences;
//   - a block of one byte is an RLE block, one that does not shrink is copied raw by all lanes.
// Warps are persistent (as many as stay resident, at most 8 a multiprocessor), each taking blocks in turn with its
// own scratch.
#include "gpuencode/zstd_encode_kernels.h"

#include "gpuencode/match_warp.cuh"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

namespace {

constexpr unsigned kFull = 0xffffffffu;

struct WarpScratch {
    zg_ze_seq seqs[ZG_ZE_BLOCK_SEQS];
    uint8_t lits[ZG_ZE_BLOCK_BYTES];
    zg_ze_fse fse[4]; /* the Huffman description's table, then the sequences' own */
};

enum : uint32_t { kRawBlock = 0, kLitRle, kLitHuf, kLitRaw };

struct Shared {
    union {
        uint16_t table[ZG_ZE_LANES][ZG_ZE_HASH_ENTRIES];
        zg_ze_huf huf;
    } u;
    zg_ze_lane lanes[ZG_ZE_LANES];
    zg_mw_join_state js;
    uint32_t nseq, trailing, mode, lit_bytes, huf_total, size;
};

__global__ void __launch_bounds__(32) blocks_kernel(const zg_ze_bdesc *blocks, size_t n_blocks, zg_ze_hints hints,
                                                    const zg_ze_tables *tables, WarpScratch *scratch,
                                                    uint8_t *block_out, uint32_t *block_sizes) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Shared *sm = reinterpret_cast<Shared *>(smem_raw);
    WarpScratch *ws = scratch + blockIdx.x;
    const unsigned lane = threadIdx.x;
    for (size_t bi = blockIdx.x; bi < n_blocks; bi += gridDim.x) {
        const zg_ze_bdesc d = blocks[bi];
        const uint8_t *c = d.chunk, *in = c + d.at;
        const uint32_t n = d.len;
        uint8_t *dst = block_out + bi * ZG_ZE_BLOCK_PITCH;
        /* one repeated byte: an RLE block */
        bool same = true;
        for (uint32_t k = lane; k < n && same; k += 32) same = in[k] == in[0];
        if (__all_sync(kFull, same) && n > 0) {
            if (lane == 0) {
                zg_ze_block_header(dst, d.last, 1, n);
                dst[3] = in[0];
                block_sizes[bi] = 4;
            }
            continue;
        }
        /* matches, a segment a lane, joined by the warp */
        uint32_t trailing;
        const uint32_t joined = zg_mw_match(c, d.at, n, ZG_ZE_SEG_BYTES, &hints, sm->u.table[lane], ws->seqs, sm->lanes,
                                            &sm->js, &trailing);
        if (lane == 0) sm->nseq = joined, sm->trailing = trailing;
        __syncwarp();
        /* the literals gathered by the warp, a sequence at a time */
        const uint32_t nseq = sm->nseq;
        uint32_t nl = 0;
        {
            uint32_t pos = 0;
            for (uint32_t i = 0; i < nseq; i++) {
                const zg_ze_seq q = ws->seqs[i];
                for (uint32_t k = lane; k < q.lit; k += 32) ws->lits[nl + k] = in[pos + k];
                nl += q.lit;
                pos += q.lit + q.len;
            }
            for (uint32_t k = lane; k < sm->trailing; k += 32) ws->lits[nl + k] = in[pos + k];
            nl += sm->trailing;
        }
        /* their histogram, by the lanes */
        zg_ze_huf *h = &sm->u.huf;
        for (uint32_t s = lane; s < 256; s += 32) h->count[s] = 0;
        __syncwarp();
        for (uint32_t k = lane; k < nl; k += 32) atomicAdd(&h->count[ws->lits[k]], 1u);
        __syncwarp();
        uint8_t *body = dst + 3;
        uint8_t plain[3];
        const uint32_t raw_total = zg_ze_lit_plain_header(0, nl, plain) + nl;
        if (lane == 0) { /* RLE, Huffman (to be sized), raw, or the whole block raw */
            uint32_t mode = kRawBlock, lit_bytes = 0;
            if (nl > 0 && h->count[ws->lits[0]] == nl) {
                mode = kLitRle;
                lit_bytes = zg_ze_lit_plain_header(1, nl, body);
                body[lit_bytes++] = ws->lits[0];
            } else if (zg_ze_huf_build(h, nl, &ws->fse[0], raw_total < n ? raw_total : n)) {
                mode = kLitHuf;
            } else if (raw_total < n) {
                mode = kLitRaw;
                lit_bytes = zg_ze_lit_plain_header(0, nl, body);
            }
            sm->mode = mode;
            sm->lit_bytes = lit_bytes;
        }
        __syncwarp();
        if (sm->mode == kLitHuf) {
            /* each stream's literals split among lps lanes; a lane's bits start after those of the lanes with
             * later literals (a stream is written from its last literal) */
            const uint32_t streams = zg_ze_huf_streams(nl), lps = 32 / streams, st = lane / lps, sub = lane % lps;
            uint32_t b0, b1;
            zg_ze_huf_stream_range(nl, st, &b0, &b1);
            const uint32_t s0 = b0 + (uint32_t)((uint64_t)(b1 - b0) * sub / lps);
            const uint32_t s1 = b0 + (uint32_t)((uint64_t)(b1 - b0) * (sub + 1) / lps);
            uint32_t bits = 0;
            for (uint32_t i = s0; i < s1; i++) bits += h->len[ws->lits[i]];
            uint32_t suffix = bits;
            for (uint32_t dl = 1; dl < lps; dl <<= 1) {
                const uint32_t t = __shfl_down_sync(kFull, suffix, dl, lps);
                if (sub + dl < lps) suffix += t;
            }
            const uint32_t stream_bits = __shfl_sync(kFull, suffix, st * lps);
            if (sub == 0) h->stream_bytes[st] = stream_bits / 8 + 1;
            __syncwarp();
            if (lane == 0) {
                const uint32_t total = zg_ze_huf_finish(h, nl, raw_total < n ? raw_total : n);
                if (total) {
                    sm->lit_bytes = zg_ze_huf_head(h, nl, total, body); /* the streams follow */
                    sm->huf_total = total;
                } else if (raw_total < n) {
                    sm->mode = kLitRaw;
                    sm->lit_bytes = zg_ze_lit_plain_header(0, nl, body);
                } else {
                    sm->mode = kRawBlock;
                }
            }
            __syncwarp();
            if (sm->mode == kLitHuf) {
                const uint32_t at = sm->lit_bytes;
                for (uint32_t k = at + lane; k < sm->huf_total; k += 32) body[k] = 0;
                uint32_t start = at;
                for (uint32_t t = 0; t < st; t++) start += h->stream_bytes[t];
                __syncwarp();
                /* the lane's codes into whole words of memory, ORed in: neighbours share the edge words */
                const uint64_t bit0 = (uint64_t)(uintptr_t)(body + start) * 8 + (suffix - bits);
                uint32_t *w = (uint32_t *)(uintptr_t)((bit0 >> 5) << 2);
                uint64_t acc = 0;
                uint32_t nacc = (uint32_t)(bit0 & 31);
                for (uint32_t i = s1; i-- > s0;) {
                    const uint8_t sym = ws->lits[i];
                    acc |= (uint64_t)h->code[sym] << nacc;
                    nacc += h->len[sym];
                    if (nacc >= 32) {
                        atomicOr(w++, (uint32_t)acc);
                        acc >>= 32;
                        nacc -= 32;
                    }
                }
                if (nacc) atomicOr(w, (uint32_t)acc);
                if (sub == 0) { /* the end marker, after the stream's first literal */
                    const uint64_t end = (uint64_t)(uintptr_t)(body + start) * 8 + stream_bits;
                    atomicOr((uint32_t *)(uintptr_t)((end >> 5) << 2), 1u << (end & 31));
                }
            }
        }
        if (sm->mode == kLitRaw) /* (also where the Huffman streams came out no smaller) */
            for (uint32_t k = lane; k < nl; k += 32) body[sm->lit_bytes + k] = ws->lits[k];
        const uint32_t mode = sm->mode;
        __syncwarp();
        if (lane == 0) {
            uint32_t size = 0;
            if (mode != kRawBlock) {
                const uint32_t lit_bytes = mode == kLitHuf ? sm->huf_total : mode == kLitRaw ? sm->lit_bytes + nl
                                                                                             : sm->lit_bytes;
                const uint32_t sq = lit_bytes < n ? zg_ze_sequences(body + lit_bytes, n - lit_bytes, ws->seqs, nseq,
                                                                    tables, &ws->fse[1])
                                                  : 0;
                if (sq && lit_bytes + sq < n) {
                    zg_ze_block_header(dst, d.last, 2, lit_bytes + sq);
                    size = 3 + lit_bytes + sq;
                }
            }
            sm->size = size;
        }
        __syncwarp();
        if (sm->size == 0) { /* stored raw */
            for (uint32_t k = lane; k < n; k += 32) body[k] = in[k];
            if (lane == 0) {
                zg_ze_block_header(dst, d.last, 0, n);
                sm->size = 3 + n;
            }
            __syncwarp();
        }
        if (lane == 0) block_sizes[bi] = sm->size;
        __syncwarp(); /* the shared tables are the next block's */
    }
}

constexpr unsigned kFrameThreads = 256;

// A chunk a block: its frame header, and where each of its blocks goes (0: nowhere, the frame is over its cap).
__global__ void __launch_bounds__(kFrameThreads) frame_place_kernel(const zg_ze_cdesc *chunks, size_t n,
                                                                    uint32_t window_log, const uint32_t *block_sizes,
                                                                    uint64_t *block_at, size_t *out_bytes,
                                                                    int *status) {
    using Scan = cub::BlockScan<uint64_t, kFrameThreads>;
    using Reduce = cub::BlockReduce<uint64_t, kFrameThreads>;
    __shared__ typename Scan::TempStorage tmp;
    __shared__ typename Reduce::TempStorage rt;
    __shared__ uint64_t carry_sh, frame_sh;
    const size_t i = blockIdx.x;
    if (i >= n) return;
    const zg_ze_cdesc c = chunks[i];
    uint8_t hdr[ZG_ZE_FRAME_HEADER_MAX];
    const uint32_t hb = zg_ze_frame_header(c.in_bytes, window_log, hdr);
    /* total first (a chunk over its cap writes nothing) */
    uint64_t mine = 0;
    for (uint32_t j = threadIdx.x; j < c.n_blocks; j += kFrameThreads) mine += block_sizes[c.first_block + j];
    const uint64_t total = Reduce(rt).Sum(mine);
    if (threadIdx.x == 0) frame_sh = hb + total + (c.n_blocks == 0 ? 3 : 0);
    __syncthreads();
    const uint64_t frame = frame_sh;
    const bool fits = frame <= c.cap;
    if (threadIdx.x == 0) {
        out_bytes[i] = fits ? frame : 0;
        status[i] = fits ? 0 : 15;
        if (fits) {
            for (uint32_t k = 0; k < hb; k++) c.slot[k] = hdr[k];
            if (c.n_blocks == 0) zg_ze_block_header(c.slot + hb, 1, 0, 0);
        }
        carry_sh = hb;
    }
    __syncthreads();
    for (uint32_t t = 0; t < c.n_blocks; t += kFrameThreads) {
        const uint32_t j = t + threadIdx.x;
        const uint64_t sz = j < c.n_blocks ? block_sizes[c.first_block + j] : 0;
        uint64_t before, tile_total;
        Scan(tmp).ExclusiveSum(sz, before, tile_total);
        const uint64_t base = carry_sh;
        if (j < c.n_blocks) block_at[c.first_block + j] = fits ? (uint64_t)(uintptr_t)(c.slot + base + before) : 0;
        __syncthreads();
        if (threadIdx.x == 0) carry_sh = base + tile_total;
        __syncthreads();
    }
}

// A block a thread block: its bytes to their place in the frame.
__global__ void __launch_bounds__(kFrameThreads) frame_copy_kernel(size_t n_blocks, const uint32_t *block_sizes,
                                                                   const uint64_t *block_at,
                                                                   const uint8_t *block_out) {
    for (size_t b = blockIdx.x; b < n_blocks; b += gridDim.x) {
        uint8_t *dst = (uint8_t *)(uintptr_t)block_at[b];
        if (!dst) continue;
        const uint8_t *src = block_out + b * ZG_ZE_BLOCK_PITCH;
        const uint32_t sz = block_sizes[b];
        for (uint32_t k = threadIdx.x; k < sz; k += kFrameThreads) dst[k] = src[k];
    }
}

}  // namespace

extern "C" size_t zg_ze_warp_scratch_bytes(void) { return (sizeof(WarpScratch) + 255) & ~(size_t)255; }

extern "C" cudaError_t zg_ze_resident_warps(size_t *out) {
    int dev = 0, sms = 0, per_sm = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess) e = cudaFuncSetAttribute(blocks_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                   (int)sizeof(Shared));
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, blocks_kernel, 32, sizeof(Shared));
    /* at most 8 a multiprocessor: each holds its scratch (zg_ze_warp_scratch_bytes, ~330 KiB) */
    if (per_sm > 8) per_sm = 8;
    *out = e == cudaSuccess ? (size_t)sms * (size_t)(per_sm > 0 ? per_sm : 1) : 0;
    return e;
}

extern "C" cudaError_t zg_ze_blocks_launch(const zg_ze_bdesc *d_blocks, size_t n_blocks, zg_ze_hints hints,
                                           const zg_ze_tables *d_tables, void *d_warp_scratch, size_t n_warps,
                                           uint8_t *d_block_out, uint32_t *d_block_sizes, cudaStream_t s) {
    if (n_blocks == 0) return cudaSuccess;
    cudaError_t e = cudaFuncSetAttribute(blocks_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)sizeof(Shared));
    if (e != cudaSuccess) return e;
    const size_t grid = n_warps < n_blocks ? n_warps : n_blocks;
    blocks_kernel<<<(unsigned)grid, 32, sizeof(Shared), s>>>(d_blocks, n_blocks, hints, d_tables,
                                                            (WarpScratch *)d_warp_scratch, d_block_out,
                                                            d_block_sizes);
    return cudaGetLastError();
}

extern "C" cudaError_t zg_ze_frames_launch(const zg_ze_cdesc *d_chunks, size_t n, uint32_t window_log,
                                           const uint32_t *d_block_sizes, uint64_t *d_block_at,
                                           const uint8_t *d_block_out, size_t n_blocks, size_t *d_out_bytes,
                                           int *d_status, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    frame_place_kernel<<<(unsigned)n, kFrameThreads, 0, s>>>(d_chunks, n, window_log, d_block_sizes, d_block_at,
                                                             d_out_bytes, d_status);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || n_blocks == 0) return e;
    const size_t grid = n_blocks < 65535 ? n_blocks : 65535;
    frame_copy_kernel<<<(unsigned)grid, kFrameThreads, 0, s>>>(n_blocks, d_block_sizes, d_block_at, d_block_out);
    return cudaGetLastError();
}
