// The block-parallel zstd decoder's kernels (see zstd_decode.h for the scheme and zstd_gpu.h for the call).
// One warp per zstd block in K1 and K3, one thread per frame in K2 and K4.
#include "cuda/zstd_gpu.h"

namespace {

__constant__ zg_zd_consts kConsts = ZG_ZD_CONSTS_INIT;

constexpr unsigned kFull = 0xffffffffu;

__device__ void warp_copy(uint8_t *dst, const uint8_t *src, uint32_t n, int lane) {
    for (uint32_t i = lane; i < n; i += 32) dst[i] = src[i];
}

__device__ void report(int *status, uint32_t idx, int e) { atomicCAS(&status[idx], 0, e); }

// ---------------------------------------------------------------- K1: literals and sequences of one block
__global__ void __launch_bounds__(32) k1_entropy(const zg_zd_block *blocks, const zg_zd_huf_desc *hufs,
                                                 const zg_zd_fse_desc *fses, zg_zd_bres *res) {
    __shared__ uint16_t huf[1 << ZG_ZD_HUF_LOG_MAX];
    __shared__ uint16_t start[256];
    __shared__ zd_fse_cell tab[3][512];
    __shared__ uint16_t next[3][64];
    const int lane = threadIdx.x;
    const zg_zd_block b = blocks[blockIdx.x];
    zg_zd_bres *r = &res[blockIdx.x];
    if (b.type != ZG_ZD_BLOCK_COMPRESSED) {
        if (lane == 0) {
            r->size = b.lit_n;
            r->err = 0;
            for (int k = 0; k < 3; k++) r->rep_out[k] = ZD_SYM(k, 0);
        }
        return;
    }
    const uint8_t *src = (const uint8_t *)b.src;
    uint8_t *lit = (uint8_t *)b.lit;
    int err = 0;
    if (b.lit_type == ZG_ZD_LIT_RAW) {
        warp_copy(lit, src + b.lit_off, b.lit_n, lane);
    } else if (b.lit_type == ZG_ZD_LIT_RLE) {
        const uint8_t v = src[b.lit_off];
        for (uint32_t i = lane; i < b.lit_n; i += 32) lit[i] = v;
    } else {
        const zg_zd_huf_desc *hd = &hufs[b.huf];
        if (lane == 0) zd_huf_starts(hd, start);
        __syncwarp();
        for (uint32_t s = lane; s < hd->nsym; s += 32) zd_huf_fill(huf, hd, start, s);
        __syncwarp();
        int e = 0;
        if (lane < b.n_streams) {
            uint32_t at = b.lit_off, out = 0;
            for (int k = 0; k < lane; k++) {
                at += b.stream_len[k];
                out += zd_stream_count(&b, k);
            }
            e = zd_huf_stream(huf, hd->max_bits, src + at, b.stream_len[lane], lit + out, zd_stream_count(&b, lane));
        }
        if (__any_sync(kFull, e != 0)) err = ZG_ZD_E_LITERALS;
    }
    uint32_t size = b.lit_n, rep[3] = {ZD_SYM(0, 0), ZD_SYM(1, 0), ZD_SYM(2, 0)};
    if (b.nseq && !err) {
        const uint32_t which[3] = {b.ll, b.of, b.ml};
        if (lane < 3) zd_fse_build(tab[lane], &fses[which[lane]], next[lane]);
        __syncwarp();
        if (lane == 0) {
            uint32_t mls = 0;
            err = zd_sequences(&kConsts, tab[0], fses[b.ll].log, tab[1], fses[b.of].log, tab[2], fses[b.ml].log,
                               src + b.seq_off, b.seq_len, b.nseq, b.lit_n, (zg_zd_seq *)b.seq, rep, &mls);
            size += mls;
        }
    }
    if (lane == 0) {
        r->size = size;
        r->err = (uint32_t)err;
        for (int k = 0; k < 3; k++) r->rep_out[k] = rep[k];
    }
}

// ---------------------------------------------------------------- K2: block offsets and repeat offsets
__global__ void k2_link(const zg_zd_frame *frames, uint32_t n_frames, zg_zd_bres *res, int *status, size_t *actual) {
    const uint32_t f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= n_frames) return;
    const zg_zd_frame fr = frames[f];
    uint32_t err = 0;
    const uint64_t total = zd_frame_link(res + fr.first_block, fr.n_blocks, &err);
    if (!err && total != fr.size) err = ZG_ZD_E_SIZE;
    actual[fr.status_index] = total;
    if (err) report(status, fr.status_index, (int)err);
}

// ---------------------------------------------------------------- K3: sequence execution
// Blocks take tickets in launch order and wait only for blocks with smaller tickets, which have all started,
// so every wait ends. Output bytes of other blocks are read through L2 (__ldcg): L1 is not coherent.
__global__ void __launch_bounds__(32) k3_execute(const zg_zd_block *blocks, const zg_zd_frame *frames,
                                                 const zg_zd_bres *res, uint32_t *sync, int *status) {
    __shared__ uint32_t ticket;
    const int lane = threadIdx.x;
    uint32_t *done = sync + 1;
    if (lane == 0) ticket = atomicAdd(&sync[0], 1u);
    __syncwarp();
    const uint32_t bi = ticket;
    const zg_zd_block b = blocks[bi];
    const zg_zd_frame fr = frames[b.frame];
    const zg_zd_bres r = res[bi];
    if (*(volatile int *)&status[fr.status_index] == 0) {
        uint8_t *out = (uint8_t *)fr.dst;
        const uint8_t *src = (const uint8_t *)b.src;
        uint64_t pos = r.out;
        if (b.type == ZG_ZD_BLOCK_RAW) {
            warp_copy(out + pos, src, b.lit_n, lane);
        } else if (b.type == ZG_ZD_BLOCK_RLE) {
            const uint8_t v = src[0];
            for (uint32_t i = lane; i < b.lit_n; i += 32) out[pos + i] = v;
        } else {
            const uint8_t *lit = (const uint8_t *)b.lit;
            const zg_zd_seq *seq = (const zg_zd_seq *)b.seq;
            uint64_t ready = r.out;  // output before the block known complete from here on
            uint32_t kb = bi;        // blocks [kb, bi) of the frame are done
            uint32_t used = 0;
            for (uint32_t i = 0; i < b.nseq; i++) {
                const zg_zd_seq s = seq[i];
                warp_copy(out + pos, lit + used, s.ll, lane);
                used += s.ll;
                pos += s.ll;
                uint32_t off = 0;
                const int e = zd_seq_offset(&s, r.rep_in, pos, &off);
                if (e) {
                    if (lane == 0) report(status, fr.status_index, e);
                    break;
                }
                const uint64_t from = pos - off;
                if (from < ready) {
                    while (from < ready && kb > fr.first_block) {
                        kb--;
                        while (*(volatile uint32_t *)&done[kb] == 0) __nanosleep(100);
                        ready = res[kb].out;
                    }
                    __threadfence();
                }
                __syncwarp();  // this warp's earlier bytes are visible to all its lanes
                for (uint32_t j = lane; j < s.ml; j += 32)
                    out[pos + j] = __ldcg(out + from + (j < off ? j : j % off));
                __syncwarp();
                pos += s.ml;
            }
            if (used <= b.lit_n) warp_copy(out + pos, lit + used, b.lit_n - used, lane);
        }
    }
    __syncwarp();
    __threadfence();
    if (lane == 0) atomicExch(&done[bi], 1u);
}

// ---------------------------------------------------------------- K4: content checksums
__global__ void k4_checksum(const zg_zd_frame *frames, uint32_t n_frames, int *status) {
    const uint32_t f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= n_frames) return;
    const zg_zd_frame fr = frames[f];
    if (!fr.has_checksum || status[fr.status_index]) return;
    if ((uint32_t)zd_xxh64((const uint8_t *)fr.dst, fr.size) != fr.checksum)
        report(status, fr.status_index, ZG_ZD_E_CHECKSUM);
}

}  // namespace

extern "C" size_t zg_zd_scratch_bytes(uint32_t n_blocks) {
    return (size_t)n_blocks * sizeof(zg_zd_bres) + ((size_t)n_blocks + 1) * sizeof(uint32_t);
}

extern "C" cudaError_t zg_zd_decode(const zg_zd_batch *b, cudaStream_t s) {
    if (b->n_frames == 0) return cudaSuccess;
    cudaError_t e = cudaMemsetAsync(b->sync, 0, ((size_t)b->n_blocks + 1) * sizeof(uint32_t), s);
    if (e != cudaSuccess) return e;
    const unsigned fgrid = (b->n_frames + 127) / 128;
    if (b->n_blocks) k1_entropy<<<b->n_blocks, 32, 0, s>>>(b->blocks, b->hufs, b->fses, b->res);
    k2_link<<<fgrid, 128, 0, s>>>(b->frames, b->n_frames, b->res, b->status, b->actual);
    if (b->n_blocks) k3_execute<<<b->n_blocks, 32, 0, s>>>(b->blocks, b->frames, b->res, b->sync, b->status);
    k4_checksum<<<fgrid, 128, 0, s>>>(b->frames, b->n_frames, b->status);
    return cudaGetLastError();
}
