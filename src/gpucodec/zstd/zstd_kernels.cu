// The block-parallel zstd decoder's kernels (see zstd_decode.h for the scheme and zstd_gpu.h for the call).
// One warp per zstd block in K1, K1h (a lane per run of a Huffman stream), K3a and K3b, a thread per frame in K2 and K4.
#include "gpucodec/zstd/zstd_gpu.h"
#include "gpucodec/common/gpu_limits.h"

#include <stdio.h>
#include <stdlib.h>

namespace {

__constant__ zg_zd_consts kConsts = ZG_ZD_CONSTS_INIT;

#ifdef ZG_ZD_BLOCK_TIMES /* tuning aid (scripts/gpu/profile-zstd.sh BLOCK_TIMES=1): each K3b block's start and end */
constexpr uint32_t kTimesMax = 1024;
__device__ unsigned long long g_times[kTimesMax][2];
__device__ __forceinline__ unsigned long long gtimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#endif

constexpr unsigned kFull = 0xffffffffu;

// Loads: CG (through L2 only) for output bytes other warps may have written, plain for everything else.
template <bool CG> __device__ __forceinline__ uint8_t ld8(const uint8_t *p) { return CG ? __ldcg(p) : *p; }
template <bool CG> __device__ __forceinline__ uint32_t ld32(const uint32_t *p) { return CG ? __ldcg(p) : *p; }

template <bool CG> __device__ __forceinline__ uint4 ld128(const uint4 *p) { return CG ? __ldcg(p) : *p; }

// Where bytes are, by position: Flat is a plain buffer (literals, stored blocks, a frame decoded to scratch or to
// a contiguous chunk of the output); Rows is a mapped frame (zg_zd_rows), whose rows lie apart in the output.
// Both keep a byte's address congruent to its position modulo 16 (relative to the first byte's), so the copies
// below choose their word paths from the first addresses alone.
// Positions are below 2^31 (ZG_ZD_MAX_FRAME), and a Flat position may be a little below 0 as an unsigned wrap: a
// copy's first aligned source word can lie before an unaligned buffer's first byte. (Rows' dst is aligned, so
// theirs never does.)
struct Flat {
    uint8_t *p;
    __device__ __forceinline__ uint8_t *at(uint32_t pos) const { return p + (int32_t)pos; }
};
struct Rows {
    uint8_t *p;
    zg_zd_rows m;
    __device__ __forceinline__ uint8_t *at(uint32_t pos) const {
        const uint32_t row = pos >> m.row_shift;
        return p + ((int32_t)(row & ((1u << m.mid_shift) - 1u)) * m.mid_stride +
                    (int32_t)(row >> m.mid_shift) * m.top_stride + (int32_t)(pos & ((1u << m.row_shift) - 1u)));
    }
};
__device__ __forceinline__ Flat flat(const void *p) { return Flat{(uint8_t *)p}; }

// D[dp, dp + n) = S[sp, sp + n), the ranges not overlapping, by the whole warp. Long copies whose ends are 16
// bytes apart modulo 16 move 16-byte words, 8 a lane in flight (4 KiB per memory round trip: a label volume's
// blocks are single 128 KiB matches, one after the other along a frame, so the copy's latency is the chain's).
// Otherwise each lane moves 16 bytes a step as four aligned 4-byte stores, built with funnel shifts from the five
// aligned source words they straddle (a word is read only when it holds a byte of the source), and keeps U steps
// of loads in flight before storing: 2 KiB per round trip (U = 8 made the literal copies of K3a slower, oct and
// field 1.8 -> 2.3, 2.4 -> 4.0 ms). Every word is addressed on its own, so a word never crosses a Rows row.
template <bool CG, class DP, class SP>
__device__ void wcopy(const DP &D, uint32_t dp, const SP &S, uint32_t sp, uint32_t n, int lane) {
    const uintptr_t dst = (uintptr_t)D.at(dp), src = (uintptr_t)S.at(sp);
    if (n >= 1024 && ((dst - src) & 15) == 0) {
        const uint32_t head = (uint32_t)(16 - (dst & 15)) & 15;
        if ((uint32_t)lane < head) *D.at(dp + lane) = ld8<CG>(S.at(sp + lane));
        const uint32_t vecs = (n - head) / 16, d0 = dp + head, s0 = sp + head;
        constexpr int V = 8;
        for (uint32_t q0 = lane; q0 < vecs; q0 += 32 * V) {
            uint4 v[V];
#pragma unroll
            for (int u = 0; u < V; u++)
                if (q0 + 32 * u < vecs) v[u] = ld128<CG>((const uint4 *)S.at(s0 + 16 * (q0 + 32 * u)));
#pragma unroll
            for (int u = 0; u < V; u++)
                if (q0 + 32 * u < vecs) *(uint4 *)D.at(d0 + 16 * (q0 + 32 * u)) = v[u];
        }
        const uint32_t done = head + 16 * vecs;
        if (done + lane < n) *D.at(dp + done + lane) = ld8<CG>(S.at(sp + done + lane));
        return;
    }
    uint32_t head = (4u - (uint32_t)(dst & 3)) & 3;
    if (head > n) head = n;
    if ((uint32_t)lane < head) *D.at(dp + lane) = ld8<CG>(S.at(sp + lane));
    const uint32_t words = (n - head) / 4, quads = words / 4;
    const uint32_t skew = (uint32_t)((src + head) & 3), sh = skew * 8;
    const uint32_t sw = sp + head - skew, d0 = dp + head; /* positions of the first source / destination word */
    const bool d16 = ((dst + head) & 15) == 0;
#define ZD_SW(w) ld32<CG>((const uint32_t *)S.at(sw + 4 * (w)))
#define ZD_DW(w) (*(uint32_t *)D.at(d0 + 4 * (w)))
    constexpr int U = 4;
    for (uint32_t q0 = lane; q0 < quads; q0 += 32 * U) {
        uint32_t v[U][5];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const uint32_t q = q0 + 32 * u;
            if (q < quads) {
#pragma unroll
                for (int k = 0; k < 4; k++) v[u][k] = ZD_SW(4 * q + k);
                v[u][4] = sh ? ZD_SW(4 * q + 4) : 0;
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const uint32_t q = q0 + 32 * u;
            if (q < quads) {
                uint32_t o[4];
#pragma unroll
                for (int k = 0; k < 4; k++) o[k] = sh ? __funnelshift_r(v[u][k], v[u][k + 1], sh) : v[u][k];
                if (d16) {
                    *(uint4 *)D.at(d0 + 16 * q) = make_uint4(o[0], o[1], o[2], o[3]);
                } else {
#pragma unroll
                    for (int k = 0; k < 4; k++) ZD_DW(4 * q + k) = o[k];
                }
            }
        }
    }
    for (uint32_t w = 4 * quads + lane; w < words; w += 32) {
        const uint32_t lo = ZD_SW(w), hi = sh ? ZD_SW(w + 1) : 0;
        ZD_DW(w) = sh ? __funnelshift_r(lo, hi, sh) : lo;
    }
#undef ZD_SW
#undef ZD_DW
    const uint32_t done = head + 4 * words;
    if (done + lane < n) *D.at(dp + done + lane) = ld8<CG>(S.at(sp + done + lane));
}

template <bool CG> __device__ void wcopy(uint8_t *dst, const uint8_t *src, uint32_t n, int lane) {
    wcopy<CG>(flat(dst), 0, flat(src), 0, n, lane);
}

template <class DP> __device__ void wfill(const DP &D, uint32_t dp, uint8_t v, uint32_t n, int lane) {
    uint32_t head = (4u - (uint32_t)((uintptr_t)D.at(dp) & 3)) & 3;
    if (head > n) head = n;
    if ((uint32_t)lane < head) *D.at(dp + lane) = v;
    const uint32_t words = (n - head) / 4, v4 = v * 0x01010101u;
    for (uint32_t w = lane; w < words; w += 32) *(uint32_t *)D.at(dp + head + 4 * w) = v4;
    const uint32_t done = head + 4 * words;
    if (done + lane < n) *D.at(dp + done + lane) = v;
}

// A match: out[pos, pos + n) = the bytes `off` before each, all lanes. With off >= n it is one copy; else the
// periodic run doubles: the valid run [pos - off, pos + L) is copied onto [pos + L, ...) while L < n.
template <class DP> __device__ void wmatch(const DP &out, uint32_t pos, uint32_t off, uint32_t n, int lane) {
    const uint32_t from = pos - off;
    uint32_t L = 0;
    while (L < n) {
        const uint32_t m = min(off + L, n - L);
        wcopy<true>(out, pos + L, out, from, m, lane);
        L += m;
        __syncwarp();
    }
}

__device__ void report(int *status, uint32_t idx, int e) { atomicCAS(&status[idx], 0, e); }

// ---------------------------------------------------------------- K1: sequences (and raw / RLE literals) of one block
__global__ void __launch_bounds__(32) k1_entropy(const zg_zd_block *blocks, const zg_zd_fse_desc *fses,
                                                 zg_zd_bres *res) {
    __shared__ struct {
        zd_fse_cell ll[512], ml[512], of[256];
        uint16_t next[3][64];
    } sm;
    static_assert(sizeof(sm) == ZG_LC_ZD_K1_SMEM, "launch_config.h: K1's shared memory");
    const int lane = threadIdx.x;
    const zg_zd_block b = blocks[blockIdx.x];
    zg_zd_bres *r = &res[blockIdx.x];
    if (b.type != ZG_ZD_BLOCK_COMPRESSED) {
        if (lane == 0) {
            r->size = b.lit_n;
            for (int k = 0; k < 3; k++) r->rep_out[k] = ZD_SYM(k, 0);
        }
        return;
    }
    const uint8_t *src = (const uint8_t *)b.src;
    uint8_t *lit = (uint8_t *)b.lit;
    int err = 0;
    if (b.lit_type == ZG_ZD_LIT_RAW) wcopy<false>(lit, src + b.lit_off, b.lit_n, lane);
    else if (b.lit_type == ZG_ZD_LIT_RLE) wfill(flat(lit), 0, src[b.lit_off], b.lit_n, lane);
    /* Huffman literals: K1h */
    uint32_t size = b.lit_n, rep[3] = {ZD_SYM(0, 0), ZD_SYM(1, 0), ZD_SYM(2, 0)};
    if (b.nseq) {
        const uint32_t which[3] = {b.ll, b.of, b.ml};
        zd_fse_cell *const tab[3] = {sm.ll, sm.of, sm.ml};
        if (lane < 3) zd_fse_build(tab[lane], &fses[which[lane]], sm.next[lane]);
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
        if (err) atomicCAS(&r->err, 0u, (uint32_t)err); /* (K1h may run beside: the first error stays) */
        for (int k = 0; k < 3; k++) r->rep_out[k] = rep[k];
    }
}

// ---------------------------------------------------------------- K1h: Huffman literals, a warp a block
// A Huffman stream decodes as one chain of dependent steps (peek, table lookup, shift): its time is that chain's
// latency, with the SM all but idle (one lane a stream: 3.85 ms for a wave of field blocks, 2.6 warps an SM).
// So each of a block's (up to) 4 streams is cut into kParts runs of its bits, a lane each, and decoded twice:
// once counting the symbols that start in each run, then writing them after those of the runs before. A run's
// first symbol starts where the path from the stream's top first reaches the run, known only once the run before
// is decoded; but a Huffman decode falls back in step with the true path within a few symbols of a wrong start,
// so a lane guesses it by decoding from kProbe bits above its run. The count pass then checks each guess against
// the end of the run before, and recounts from that end where they differ, until all agree: the result is the
// sequential decode's whatever the guesses (a wrong one costs a recount, at most kParts rounds).
// ZGPU_ZSTD_HUF_PROBE=bits sets kProbe (0: every guess the run's own first bit, mostly wrong: tests the recounts).
// 8 runs a stream (a warp a block): 16 or 32 (two or four warps a block) were no faster (H100, the one-wave K1
// stage of field / oct / labels zstd: 5.1-6.5 / 5.0-6.5 / 1.4-1.5 ms for all three; reads within run-to-run
// spread), the K1h of a large wave being bound by issue slots then.
#ifndef ZG_ZD_HUF_PARTS
#define ZG_ZD_HUF_PARTS 8
#endif
constexpr uint32_t kParts = ZG_ZD_HUF_PARTS, kProbe = 512, kHufThreads = 4 * kParts;
static_assert(kHufThreads == ZG_LC_ZD_HUF_THREADS, "launch_config.h: K1h's threads");
static_assert(kParts <= 32 && (kParts & (kParts - 1)) == 0, "a stream's runs are lanes of one warp");

// The stream bytes a lane is about to read pass through its ring of kRing 16-byte chunks in shared memory,
// copied by cp.async kAhead chunks ahead: a load into registers would stall the chain at its first use, and
// the chain is all this kernel waits on. cp.async needs sm_80: on Turing (sm_75) the lane copies each chunk
// itself when asked, and the waits are empty (each lane reads only its own ring, so its own stores suffice).
constexpr int32_t kRing = 8, kAhead = 6;
__device__ __forceinline__ void ring_fetch(uint4 *ring, const uint8_t *P0, int32_t k) {
#if __CUDA_ARCH__ >= 800
    if (k >= 0) {
        const uint32_t sa = (uint32_t)__cvta_generic_to_shared(&ring[k & (kRing - 1)]);
        asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(P0 + 16 * k) : "memory");
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory"); /* (empty below the stream: keeps the count) */
#else
    if (k >= 0) ring[k & (kRing - 1)] = *(const uint4 *)(P0 + 16 * k);
#endif
}
__device__ __forceinline__ void ring_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kAhead) : "memory");
#endif
}
/* Every cp.async of this thread has landed (nothing to wait for without cp.async). */
__device__ __forceinline__ void ring_drain() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}
__device__ __forceinline__ uint32_t ring_word(const uint4 *ring, int32_t m) { /* word m (4-byte units from P0) */
    return m >= 0 ? ((const uint32_t *)&ring[(m >> 2) & (kRing - 1)])[m & 3] : 0u;
}

// A lane's reader of one Huffman stream, backwards. Bits count from P0, the 16-byte aligned address at or before
// the stream, so words are aligned (bytes between P0 and the stream may be read when a path runs below the
// stream; that never changes a symbol whose code lies inside it: codes are prefix-free). The next bits sit at the
// top of a 64-bit container c (avail valid bits), refilled 32 bits at a time with the word below it (nw), read
// from the ring one refill ahead; pos() = 32 q + avail is the bit index just above the next unread bit.
struct HufReader {
    const uint16_t *t; /* decoding table: symbol | code length << 8 */
    const uint8_t *P0;
    uint4 *ring;
    uint32_t rs; /* 32 - the code's longest length */
    uint64_t c;
    int32_t avail, q;
    uint32_t nw;
    __device__ __forceinline__ int32_t pos() const { return 32 * q + avail; }
    __device__ __forceinline__ void start(int32_t a) { /* read on from bit index a down */
        ring_drain(); /* the last run's copies land before the ring is reused */
        q = (a - 1) >> 5; /* the word holding the first bit */
        for (int32_t d = 0; d <= kAhead; d++) ring_fetch(ring, P0, (q >> 2) - d);
        ring_wait(); /* that word's chunk */
        const uint32_t drop = (uint32_t)(32 * (q + 1) - a); /* bits of that word above a */
        c = ((uint64_t)ring_word(ring, q) << 32) << drop;
        avail = 32 - (int32_t)drop;
        next_word();
    }
    __device__ __forceinline__ void next_word() {
        if (((q - 1) & 3) == 3) { /* the next word is in the next chunk down */
            ring_fetch(ring, P0, ((q - 1) >> 2) - kAhead);
            ring_wait();
        }
        nw = ring_word(ring, q - 1);
    }
    __device__ __forceinline__ void refill() { /* avail >= 32 after it: two symbols of at most 11 bits each */
        if (avail < 32) {
            c |= (uint64_t)nw << (32 - avail);
            avail += 32;
            q--;
            next_word();
        }
    }
    __device__ __forceinline__ uint32_t sym() {
        const uint32_t e = t[(uint32_t)(c >> 32) >> rs];
        const uint32_t nb = e >> 8;
        c <<= nb;
        avail -= (int32_t)nb;
        return e;
    }
    /* Symbols from bit index a while pos() > stop, at most cap of them (a valid run has fewer: the cap only ends
     * a corrupt one); returns their count, pos() then where the next symbol starts. */
    __device__ uint32_t count(int32_t a, int32_t stop, uint32_t cap, uint32_t log) {
        start(a);
        uint32_t n = 0;
        while (pos() - stop >= (int32_t)(16 * log) && n + 16 <= cap) { /* 16 symbols cannot pass stop */
#pragma unroll
            for (int k = 0; k < 8; k++) {
                refill();
                sym();
                sym();
            }
            n += 16;
        }
        while (pos() > stop && n <= cap) {
            refill();
            sym();
            n++;
        }
        return n;
    }
    /* Exactly n symbols from bit index a into dst, 16 bytes a store where aligned. */
    __device__ void write(int32_t a, uint8_t *dst, uint32_t n) {
        start(a);
        uint32_t i = 0;
        for (; i < n && ((uintptr_t)(dst + i) & 15); i++) {
            refill();
            dst[i] = (uint8_t)sym();
        }
        for (; i + 16 <= n; i += 16) {
            uint32_t w[4];
#pragma unroll
            for (int k = 0; k < 4; k++) {
                refill();
                const uint32_t e0 = sym(), e1 = sym();
                refill();
                const uint32_t e2 = sym(), e3 = sym();
                w[k] = __byte_perm(__byte_perm(e0, e1, 0x40), __byte_perm(e2, e3, 0x40), 0x5410); /* low bytes */
            }
            *(uint4 *)(dst + i) = make_uint4(w[0], w[1], w[2], w[3]);
        }
        for (; i < n; i++) {
            refill();
            dst[i] = (uint8_t)sym();
        }
    }
};

// A thread block per zstd block: thread = stream * kParts + run. A stream of n bytes must decode to exactly its
// literal count and end exactly at its first bit (zd_huf_stream's rule, which the CPU test checks).
__global__ void __launch_bounds__(kHufThreads) k1_huffman(const zg_zd_block *blocks, const zg_zd_huf_desc *hufs,
                                                          zg_zd_bres *res, int32_t probe) {
    __shared__ uint16_t huf[1 << ZG_ZD_HUF_LOG_MAX];
    __shared__ uint16_t start[256];
    __shared__ uint4 ring[kHufThreads][kRing];
    static_assert(sizeof(huf) + sizeof(start) + sizeof(ring) == ZG_LC_ZD_K1H_SMEM, "launch_config.h: K1h's shared");
    const int lane = threadIdx.x, k = lane / (int)kParts, j = lane % (int)kParts;
    const zg_zd_block *b = &blocks[blockIdx.x];
    if (b->type != ZG_ZD_BLOCK_COMPRESSED || b->lit_type != ZG_ZD_LIT_HUF) return; /* (the whole thread block) */
    const zg_zd_huf_desc *hd = &hufs[b->huf];
    if (lane == 0) zd_huf_starts(hd, start);
    __syncthreads();
    for (uint32_t s = (uint32_t)lane; s < hd->nsym; s += kHufThreads) zd_huf_fill(huf, hd, start, s);
    __syncthreads();
    /* this lane's stream: bytes [at, at + n) of the block's literal section, literals [out, out + want) */
    const bool mine = k < b->n_streams;
    uint32_t at = b->lit_off, out = 0;
    for (int p = 0; p < k && mine; p++) {
        at += b->stream_len[p];
        out += zd_stream_count(b, p);
    }
    const uint8_t *src = (const uint8_t *)b->src + at;
    const uint32_t n = mine ? b->stream_len[k] : 0, want = mine ? zd_stream_count(b, k) : 0;
    const uint32_t log = hd->max_bits;
    HufReader r{huf, (const uint8_t *)((uintptr_t)src & ~(uintptr_t)15), ring[lane], 32 - log};
    /* bit indices from P0: the stream's first bit lo, its top (below the end mark) top; run j is the bits
     * (top - (j+1) * len, top - j * len], clamped at lo */
    bool bad = !mine || n == 0 || src[n - 1] == 0;
    const int32_t lo = 8 * (int32_t)(src - r.P0);
    const int32_t top = bad ? lo : lo + 8 * (int32_t)(n - 1) + zd_highbit(src[n - 1]);
    const int32_t len = (top - lo + (int32_t)kParts - 1) / (int32_t)kParts;
    const int32_t hi_j = max(top - j * len, lo), stop = j + 1 == (int)kParts ? lo : max(top - (j + 1) * len, lo);
    /* guess where the path enters this run */
    int32_t from = top;
    if (!bad && j > 0) {
        r.count(min(hi_j + probe, top), hi_j, want, log);
        from = r.pos();
    }
    uint32_t cnt = bad ? 0 : r.count(from, stop, want, log);
    int32_t end = bad ? stop : r.pos();
    for (;;) { /* until every run starts where the one before ends (a stream's runs are kParts aligned lanes) */
        const int32_t prev = __shfl_up_sync(kFull, end, 1, kParts);
        const bool redo = !bad && j > 0 && prev != from;
        if (!__any_sync(kFull, redo)) break;
        if (redo) {
            from = prev;
            cnt = r.count(from, stop, want, log);
            end = r.pos();
        }
    }
    uint32_t before = cnt; /* inclusive prefix of the counts within the stream */
    for (int d = 1; d < (int)kParts; d <<= 1) {
        const uint32_t v = __shfl_up_sync(kFull, before, d, kParts);
        if (j >= d) before += v;
    }
    const uint32_t total = __shfl_sync(kFull, before, (int)kParts - 1, kParts);
    const int32_t last_end = __shfl_sync(kFull, end, (int)kParts - 1, kParts);
    /* the stream's decode: exactly `want` symbols, ending exactly at its first bit */
    bad = bad || total != want || last_end != lo;
    if (!bad && cnt) r.write(from, (uint8_t *)b->lit + out + (before - cnt), cnt);
    ring_drain(); /* no copy may land after the block's shared memory is freed */
    const unsigned bad_lanes = __ballot_sync(kFull, mine && bad);
    if ((lane & 31) == 0 && bad_lanes) atomicCAS(&res[blockIdx.x].err, 0u, (uint32_t)ZG_ZD_E_LITERALS);
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

// A short match by one lane: its source bytes (all final, at most kShortMatch) loaded first, then stored.
constexpr uint32_t kShortMatch = 48;
template <class DP> __device__ void lane_match(const DP &out, uint32_t pos, uint32_t off, uint32_t n) {
    uint8_t buf[kShortMatch];
    const uint32_t m = min(off, n);
    for (uint32_t k = 0; k < m; k++) buf[k] = __ldcg(out.at(pos - off + k));
    for (uint32_t k = 0, q = 0; k < n; k++) {
        *out.at(pos + k) = buf[q];
        if (++q == m) q = 0;
    }
}

// K3a turns a block's sequences into its matches: {frame position of the match, length, concrete offset} in
// the fields {ll, ml, of}. kDone in the length marks a match K3b has copied (later blocks poll it).
constexpr uint32_t kDone = 0x80000000u;

// ---------------------------------------------------------------- K3a: literals placed, matches resolved
// A group's literal runs up to kLaneLits bytes are copied together, a byte a lane and kLitUnroll bytes a lane in
// flight (512 bytes a memory round trip); longer ones by the whole warp each. One warp-wide copy per run, a round
// trip each, made K3a 1.6 ms of a field wave's 6 ms decode (22 frames of 16 MiB, 740 sequences a block, runs of
// 150-200 bytes) and 0.44 of a label volume's sharded read (512 frames of 2 MiB).
constexpr uint32_t kLaneLits = 1024;
constexpr uint32_t kLitUnroll = 16;
// Every literal run goes to its place (positions from prefix sums of the sequences), raw and RLE blocks are
// written, and every match gets its position and concrete offset. No block waits for another; afterwards
// every output byte that is not a match's copy is final, so K3b needs to wait only for matches.
template <class DP>
__device__ void place_block(const DP &out, const zg_zd_block &b, const zg_zd_bres &r, const zg_zd_frame &fr,
                            int *status, int lane) {
    const uint32_t bstart = (uint32_t)r.out;
    const uint8_t *src = (const uint8_t *)b.src;
    if (b.type == ZG_ZD_BLOCK_RAW) {
        wcopy<false>(out, bstart, flat(src), 0, b.lit_n, lane);
        return;
    }
    if (b.type == ZG_ZD_BLOCK_RLE) {
        wfill(out, bstart, src[0], b.lit_n, lane);
        return;
    }
    const uint8_t *lit = (const uint8_t *)b.lit;
    zg_zd_seq *seq = (zg_zd_seq *)b.seq;
    uint32_t pos = bstart, lp = 0;
    for (uint32_t g = 0; g < b.nseq; g += 32) {
        const uint32_t i = g + lane;
        const bool have = i < b.nseq;
        zg_zd_seq sq = {0, 0, 1};
        if (have) sq = seq[i];
        const uint32_t ll = sq.ll, len = ll + sq.ml;
        uint32_t sl = ll, st = len; /* inclusive warp scans */
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const uint32_t a = __shfl_up_sync(kFull, sl, d), c = __shfl_up_sync(kFull, st, d);
            if (lane >= d) {
                sl += a;
                st += c;
            }
        }
        const uint32_t my_lit = lp + sl - ll, my_out = pos + st - len;
        /* long runs one after another by the whole warp */
        unsigned longs = __ballot_sync(kFull, ll > kLaneLits);
        while (longs) {
            const int k = __ffs(longs) - 1;
            longs &= longs - 1;
            wcopy<false>(out, __shfl_sync(kFull, my_out, k), flat(lit), __shfl_sync(kFull, my_lit, k),
                         __shfl_sync(kFull, ll, k), lane);
        }
        /* the short runs together, a byte a lane: byte t of their concatenation belongs to the run k whose
         * inclusive scan is the first above t, and goes from lit[t + lit_d[k]] to out[t + out_d[k]] */
        const uint32_t ls = ll > kLaneLits ? 0u : ll;
        uint32_t ss = ls;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const uint32_t a = __shfl_up_sync(kFull, ss, d);
            if (lane >= d) ss += a;
        }
        const uint32_t lit_d = my_lit - (ss - ls), out_d = my_out - (ss - ls);
        const uint32_t short_total = __shfl_sync(kFull, ss, 31);
        for (uint32_t t0 = 0; t0 < short_total; t0 += 32 * kLitUnroll) {
            uint8_t v[kLitUnroll];
            uint32_t to[kLitUnroll];
#pragma unroll
            for (uint32_t u = 0; u < kLitUnroll; u++) { /* every load of the round before any store */
                const uint32_t t = t0 + 32 * u + lane;
                uint32_t k = 0; /* runs whose scan is <= t */
#pragma unroll
                for (uint32_t step = 16; step; step >>= 1)
                    if (__shfl_sync(kFull, ss, k + step - 1) <= t) k += step;
                const uint32_t ld = __shfl_sync(kFull, lit_d, k), od = __shfl_sync(kFull, out_d, k);
                to[u] = t + od;
                if (t < short_total) v[u] = lit[t + ld];
            }
#pragma unroll
            for (uint32_t u = 0; u < kLitUnroll; u++)
                if (t0 + 32 * u + lane < short_total) *out.at(to[u]) = v[u];
        }
        uint32_t off = 1;
        const int e = have ? zd_seq_offset(&sq, r.rep_in, my_out + ll, &off) : 0;
        if (e) report(status, fr.status_index, e);
        if (have) seq[i] = zg_zd_seq{my_out + ll, sq.ml, off};
        lp += __shfl_sync(kFull, sl, 31);
        pos += __shfl_sync(kFull, st, 31);
    }
    if (lp <= b.lit_n) wcopy<false>(out, pos, flat(lit), lp, b.lit_n - lp, lane);
}

// (16 blocks an SM, as before mapped frames: the Rows instance alone would take 168 registers.)
__global__ void __launch_bounds__(32, 16) k3a_place(const zg_zd_block *blocks, const zg_zd_frame *frames,
                                                    const zg_zd_bres *res, int *status, zg_zd_rows rows) {
    const zg_zd_block b = blocks[blockIdx.x];
    const zg_zd_frame fr = frames[b.frame];
    if (status[fr.status_index] != 0) return;
    const zg_zd_bres r = res[blockIdx.x];
    if (fr.mapped == ZG_ZD_MAPPED) place_block(Rows{(uint8_t *)fr.dst, rows}, b, r, fr, status, threadIdx.x);
    else place_block(flat((void *)fr.dst), b, r, fr, status, threadIdx.x);
}

// ---------------------------------------------------------------- K3b: matches
// The starts of the earlier blocks of this block's frame, in shared memory for the frame's last kCached blocks
// before this one (older blocks are looked up in global memory).
constexpr uint32_t kCached = 1024;
struct earlier {
    uint32_t first, bi, base; /* blocks [first, bi) of the frame; [base, bi) cached */
    uint32_t start[kCached];
};

__device__ uint32_t block_start(const earlier &E, const zg_zd_bres *res, uint32_t k) {
    return k >= E.base ? E.start[k - E.base] : (uint32_t)res[k].out;
}

// The earlier block holding frame position a (a before this block).
__device__ uint32_t block_at(const earlier &E, const zg_zd_bres *res, uint32_t a) {
    uint32_t lo = E.first, hi = E.bi - 1;
    while (lo < hi) {
        const uint32_t mid = (lo + hi + 1) / 2;
        if (block_start(E, res, mid) <= a) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

// Block k's matches (none for raw / RLE blocks): *m and the count.
__device__ uint32_t block_matches(const zg_zd_block *blocks, uint32_t k, const zg_zd_seq **m) {
    if (blocks[k].type != ZG_ZD_BLOCK_COMPRESSED) return 0;
    *m = (const zg_zd_seq *)blocks[k].seq;
    return blocks[k].nseq;
}

// The first of n matches (sorted, disjoint) that ends after frame position a.
__device__ uint32_t first_match_after(const zg_zd_seq *m, uint32_t n, uint32_t a) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (__ldcg(&m[mid].ll) + (__ldcg(&m[mid].ml) & ~kDone) <= a) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// Whether every match overlapping frame bytes [a, e) (all before the asking match) has been copied: then those
// bytes are final (the others are literal bytes, final since K3a). Checks the matches of this block (own, own_n)
// and of earlier blocks. By one lane, without waiting.
__device__ bool bytes_final(const earlier &E, const zg_zd_block *blocks, const zg_zd_bres *res, const zg_zd_seq *own,
                            uint32_t own_n, uint32_t bstart, uint32_t a, uint32_t e) {
    if (a < bstart)
        for (uint32_t k = block_at(E, res, a); k < E.bi && block_start(E, res, k) < e; k++) {
            const zg_zd_seq *m = nullptr;
            const uint32_t n = block_matches(blocks, k, &m);
            for (uint32_t j = n ? first_match_after(m, n, a) : 0; j < n && m[j].ll < e; j++)
                if (!(*(volatile const uint32_t *)&m[j].ml & kDone)) return false;
        }
    if (e > bstart) {
        const uint32_t lo = a > bstart ? a : bstart;
        for (uint32_t j = first_match_after(own, own_n, lo); j < own_n && own[j].ll < e; j++)
            if (!(*(volatile const uint32_t *)&own[j].ml & kDone)) return false;
    }
    return true;
}

// Waits (whole warp) until every match of earlier blocks overlapping frame bytes [a, e) (before this block) has
// been copied.
__device__ void wait_matches(const earlier &E, const zg_zd_block *blocks, const zg_zd_bres *res, uint32_t a,
                             uint32_t e, int lane) {
    for (uint32_t k = block_at(E, res, a); k < E.bi && block_start(E, res, k) < e; k++) {
        const zg_zd_seq *m = nullptr;
        const uint32_t n = block_matches(blocks, k, &m);
        for (uint32_t j = (n ? first_match_after(m, n, a) : 0) + lane; j < n && m[j].ll < e; j += 32)
            while (!(*(volatile const uint32_t *)&m[j].ml & kDone)) __nanosleep(64);
    }
    __syncwarp();
    __threadfence();
}

// Copies the matches of one warp's lanes marked in `go` (short ones by their lane, long ones by the whole warp),
// then marks them done for other blocks.
template <class DP>
__device__ void copy_matches(const DP &out, zg_zd_seq *seq, uint32_t i, const zg_zd_seq &m, unsigned go, int lane) {
    const bool mine = (go >> lane) & 1;
    if (mine && m.ml <= kShortMatch) lane_match(out, m.ll, m.of, m.ml);
    unsigned longs = __ballot_sync(kFull, mine && m.ml > kShortMatch);
    while (longs) {
        const int k = __ffs(longs) - 1;
        longs &= longs - 1;
        wmatch(out, __shfl_sync(kFull, m.ll, k), __shfl_sync(kFull, m.of, k), __shfl_sync(kFull, m.ml, k), lane);
    }
    __syncwarp();
    __threadfence();
    if (mine) *(volatile uint32_t *)&seq[i].ml = m.ml | kDone;
}

// ---- K3b's matches in order, through a window of the block's last kWin output bytes in shared memory
// A label volume's first plane is thousands of short matches each reading the bytes the one before wrote (cell
// values repeated at offset 4, rows at offset ~1 KiB): copied in rounds through global memory, each link cost a
// round trip to L2 and a fence (3,500 links a block, 6.3 ms of K3b for one 16 MiB frame on an H100). Here the warp
// takes the block's remaining sequences one by one, in order: a match whose source lies in the window is read from
// shared memory (each byte k of it is byte k mod offset of its source: no lane waits for another's byte), written
// there and to the output; others (sources in earlier blocks, long matches) go through global memory as before,
// and the window is refilled from what they wrote. Literal runs (final since K3a) are loaded for a group of 32
// sequences at once, a lane each. Matches through global memory are marked copied at once, the others a group at
// a time, after one fence.
constexpr uint32_t kWin = 4096, kWinMask = kWin - 1;
constexpr uint32_t kLitCarry = 8; /* literal bytes a lane loads ahead for its sequence; longer runs are read then */
static_assert((kWin & kWinMask) == 0, "the window is a ring of a power of two bytes");

// Output bytes [a, b) (final) into the window: only the last kWin of them are kept.
template <class DP> __device__ void win_fill(const DP &out, uint8_t *win, uint32_t a, uint32_t b, int lane) {
    if (b - a > kWin) a = b - kWin;
    for (uint32_t p = a + (uint32_t)lane; p < b; p += 32) win[p & kWinMask] = __ldcg(out.at(p));
}

// The block's sequences from `from` on (every one before it copied, so every byte of the block before the first
// of them is final), whole warp.
template <class DP>
__device__ void block_matches_in_order(const DP &out, const earlier &E, const zg_zd_block *blocks, const zg_zd_bres *res,
                                       zg_zd_seq *seq, uint32_t nseq, uint32_t from, uint32_t bstart, uint8_t *win,
                                       int lane) {
    if (from >= nseq) return;
    /* where sequence `from`'s literals start: the end of the match before it, or the block's start */
    uint32_t pos = bstart;
    if (from) pos = seq[from - 1].ll + (*(volatile const uint32_t *)&seq[from - 1].ml & ~kDone);
    win_fill(out, win, pos - bstart > kWin ? pos - kWin : bstart, pos, lane);
    __syncwarp();
    uint32_t final_from = bstart; /* matches of earlier blocks in [final_from, bstart) are known copied */
    for (uint32_t g = from; g < nseq; g += 32) {
        const uint32_t i = g + (uint32_t)lane, n = min(32u, nseq - g);
        zg_zd_seq m = {pos, 0, 1};
        if (i < nseq) {
            m = seq[i];
            m.ml = *(volatile const uint32_t *)&seq[i].ml;
        }
        /* my sequence's literal run [lit, m.ll): from the end of the match before */
        const uint32_t end = m.ll + (m.ml & ~kDone);
        uint32_t lit = __shfl_up_sync(kFull, end, 1);
        if (lane == 0) lit = pos;
        const uint32_t nlit = i < nseq ? m.ll - lit : 0;
        uint64_t carry = 0; /* (unrolled: the loads go out together, one round trip) */
        uint8_t cb[kLitCarry];
#pragma unroll
        for (uint32_t k = 0; k < kLitCarry; k++) cb[k] = k < nlit && nlit <= kLitCarry ? __ldcg(out.at(lit + k)) : 0;
#pragma unroll
        for (uint32_t k = 0; k < kLitCarry; k++) carry |= (uint64_t)cb[k] << (8 * k);
        for (uint32_t q = 0; q < n; q++) {
            const uint32_t mp = __shfl_sync(kFull, m.ll, q), mlf = __shfl_sync(kFull, m.ml, q);
            const uint32_t mo = __shfl_sync(kFull, m.of, q), lp = __shfl_sync(kFull, lit, q);
            const uint32_t ln = __shfl_sync(kFull, nlit, q);
            const uint64_t cv = __shfl_sync(kFull, carry, q);
            if (ln <= kLitCarry) {
                if ((uint32_t)lane < ln) win[(lp + (uint32_t)lane) & kWinMask] = (uint8_t)(cv >> (8 * lane));
            } else {
                win_fill(out, win, lp, mp, lane);
            }
            __syncwarp();
            const uint32_t ml = mlf & ~kDone;
            if (mlf & kDone) { /* copied by a sweep: final */
                win_fill(out, win, mp, mp + ml, lane);
            } else if (mp - mo >= bstart && mo + ml <= kWin) {
                /* from the window: reads only bytes before mp, writes only from mp on, and ml + mo <= kWin keeps
                 * the two apart in the ring */
                const uint32_t src = mp - mo;
                if (mo >= ml) {
                    for (uint32_t k = (uint32_t)lane; k < ml; k += 32) {
                        const uint8_t v = win[(src + k) & kWinMask];
                        win[(mp + k) & kWinMask] = v;
                        *out.at(mp + k) = v;
                    }
                } else {
                    for (uint32_t k = (uint32_t)lane; k < ml; k += 32) {
                        const uint8_t v = win[(src + k % mo) & kWinMask];
                        win[(mp + k) & kWinMask] = v;
                        *out.at(mp + k) = v;
                    }
                }
            } else { /* through global memory, as the sweeps copy */
                const uint32_t a = mp - mo, e = a + min(ml, mo);
                if (a < bstart && a < final_from) {
                    const uint32_t ek = min(e, bstart);
                    wait_matches(E, blocks, res, a, ek, lane);
                    if (ek == bstart) final_from = a;
                }
                wmatch(out, mp, mo, ml, lane);
                win_fill(out, win, mp, mp + ml, lane);
                /* marked at once: later blocks (the next plane of a label volume) wait on such matches, and start
                 * as soon as theirs are copied (marked a group at a time, a plane's link took 76 us, not 30) */
                __syncwarp();
                __threadfence();
                if ((uint32_t)lane == q) *(volatile uint32_t *)&seq[i].ml = m.ml | kDone;
            }
            __syncwarp();
        }
        pos = __shfl_sync(kFull, end, (int)n - 1);
        /* the group's copies, then their marks (other blocks wait on them) */
        __threadfence();
        if (i < nseq && !(m.ml & kDone)) *(volatile uint32_t *)&seq[i].ml = m.ml | kDone;
    }
}

// The matches of each block. First in sweeps over those not yet copied: a sweep copies every match whose source
// bytes are final (all literals, or copied matches), in any order. The first sweep takes almost every match of
// low-ratio data (sources of literals only) and the next ones follow its short chains, so such a block never
// waits for whole earlier blocks. When a sweep copies under a quarter of what was pending (long chains, which
// would cost a sweep a link), the rest go in order, 32 at a time, each group waiting for the matches of earlier
// blocks its sources copy. A block of few literals a sequence (label volumes) skips the sweeps and copies its
// matches one by one through a window in shared memory (block_matches_in_order). Thread blocks take tickets in launch order, and ticket t
// decodes zstd block order[t] (round robin over the frames, zg_zd_ticket_order): a block depends only on
// earlier blocks of its frame, which hold smaller tickets and have all started, so every wait ends. Output
// bytes are read through L2 (__ldcg): L1 is not coherent across SMs.
constexpr uint32_t kChainLits = 4; /* literal bytes a sequence below which a block's matches go in order at once */
template <class DP>
__device__ void block_matches_copy(const DP &out, const earlier &E, const zg_zd_block *blocks, const zg_zd_bres *res,
                                   const zg_zd_block &b, zg_zd_seq *seq, uint32_t bstart, uint8_t *win, int lane) {
    uint32_t from_group = 0; /* groups before it are all copied */
    /* A block of few literals a sequence copies its matches mostly from one another (a label volume's first plane:
     * 174 literal bytes for 3,499 sequences; its other blocks: none for 12): a sweep would find little ready, at two
     * binary searches in global memory a match, so such a block goes in order from the start. */
    if (b.lit_n < kChainLits * b.nseq) {
        block_matches_in_order(out, E, blocks, res, seq, b.nseq, 0, bstart, win, lane);
        return;
    }
    for (;;) {
        uint32_t n_pending = 0, n_copied = 0;
        for (uint32_t g = from_group; g < b.nseq; g += 32) {
            const uint32_t i = g + lane;
            zg_zd_seq m = {0, 0, 1};
            if (i < b.nseq) {
                m = seq[i];
                m.ml = *(volatile const uint32_t *)&seq[i].ml;
            }
            const bool mine = i < b.nseq && !(m.ml & kDone);
            const unsigned pend = __ballot_sync(kFull, mine);
            if (!pend) {
                if (g == from_group) from_group += 32;
                continue;
            }
            const bool go = mine && bytes_final(E, blocks, res, seq, b.nseq, bstart, m.ll - m.of,
                                                m.ll - m.of + min(m.ml, m.of));
            const unsigned rdy = __ballot_sync(kFull, go);
            n_pending += (uint32_t)__popc(pend);
            n_copied += (uint32_t)__popc(rdy);
            if (rdy) copy_matches(out, seq, i, m, rdy, lane);
        }
        if (from_group >= b.nseq) return;
        if (4 * n_copied < n_pending) break;
    }
    /* the rest in order, 32 at a time: earlier groups of this block are then all copied */
    uint32_t final_from = bstart; /* matches of earlier blocks in [final_from, bstart) are known copied */
    for (uint32_t g = from_group; g < b.nseq; g += 32) {
        const uint32_t i = g + lane;
        zg_zd_seq m = {0, 0, 1};
        if (i < b.nseq) {
            m = seq[i];
            m.ml = *(volatile const uint32_t *)&seq[i].ml;
        }
        const bool mine = i < b.nseq && !(m.ml & kDone);
        unsigned pending = __ballot_sync(kFull, mine);
        if (!pending) continue;
        m.ml &= ~kDone;
        const uint32_t from = m.ll - m.of, to = from + min(m.ml, m.of);
        unsigned cross = __ballot_sync(kFull, mine && from < bstart);
        while (cross) {
            const int k = __ffs(cross) - 1;
            cross &= cross - 1;
            const uint32_t fk = __shfl_sync(kFull, from, k), ek = __shfl_sync(kFull, min(to, bstart), k);
            if (fk >= final_from) continue;
            wait_matches(E, blocks, res, fk, ek, lane);
            if (ek == bstart) final_from = fk;
        }
        /* which pending matches of the group my source overlaps */
        unsigned dep = 0;
        for (int j = 0; j < 32; j++) {
            const uint32_t pj = __shfl_sync(kFull, m.ll, j), mj = __shfl_sync(kFull, mine ? m.ml : 0u, j);
            if (j < lane && mj && pj < to && pj + mj > from) dep |= 1u << j;
        }
        while (pending) {
            const bool go = ((pending >> lane) & 1) && !(dep & pending);
            const unsigned rdy = __ballot_sync(kFull, go);
            copy_matches(out, seq, i, m, rdy, lane);
            pending &= ~rdy;
        }
    }
}

__global__ void __launch_bounds__(32) k3b_matches(const zg_zd_block *blocks, const zg_zd_frame *frames,
                                                  const zg_zd_bres *res, const uint32_t *order, uint32_t *sync,
                                                  int *status, zg_zd_rows rows) {
    __shared__ uint32_t ticket;
    __shared__ earlier E;
    __shared__ uint8_t win[kWin];
    static_assert(sizeof(ticket) + sizeof(E) + sizeof(win) == ZG_LC_ZD_K3B_SMEM, "launch_config.h: K3b's shared memory");
    const int lane = threadIdx.x;
    if (lane == 0) ticket = atomicAdd(&sync[0], 1u);
    __syncwarp();
    const uint32_t bi = order[ticket];
#ifdef ZG_ZD_BLOCK_TIMES
    if (lane == 0 && bi < kTimesMax) g_times[bi][0] = gtimer();
#endif
    const zg_zd_block b = blocks[bi];
    const zg_zd_frame fr = frames[b.frame];
    if (status[fr.status_index] != 0) return; /* rejected by K1-K3a: no block of the frame runs */
    const uint32_t bstart = (uint32_t)res[bi].out;
    if (b.type == ZG_ZD_BLOCK_COMPRESSED && b.nseq != 0) {
        zg_zd_seq *seq = (zg_zd_seq *)b.seq;
        E.first = fr.first_block;
        E.bi = bi;
        E.base = bi - fr.first_block > kCached ? bi - kCached : fr.first_block;
        for (uint32_t k = E.base + lane; k < bi; k += 32) E.start[k - E.base] = (uint32_t)res[k].out;
        __syncwarp();
        if (fr.mapped == ZG_ZD_MAPPED)
            block_matches_copy(Rows{(uint8_t *)fr.dst, rows}, E, blocks, res, b, seq, bstart, win, lane);
        else
            block_matches_copy(flat((void *)fr.dst), E, blocks, res, b, seq, bstart, win, lane);
    }
    /* The block's bytes are final (its literals since K3a, its matches copied by this warp): into their rows.
     * Highly compressible frames (a label volume's long match chains) are latency bound, and these copies of
     * finished blocks fill the idle memory system while later blocks copy their matches; only the frame's last
     * block's copy is left at the end, instead of a scatter pass over everything (0.8 ms a GB). */
    if (fr.mapped == ZG_ZD_MAPPED_AFTER)
        wcopy<true>(Rows{(uint8_t *)fr.place, rows}, bstart, flat((void *)fr.dst), bstart, res[bi].size, lane);
#ifdef ZG_ZD_BLOCK_TIMES
    if (lane == 0 && bi < kTimesMax) g_times[bi][1] = gtimer();
#endif
}

// ---------------------------------------------------------------- K4: content checksums
__global__ void k4_checksum(const zg_zd_frame *frames, uint32_t n_frames, int *status) {
    const uint32_t f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= n_frames) return;
    const zg_zd_frame fr = frames[f];
    if (!fr.has_checksum || status[fr.status_index]) return; /* (never ZG_ZD_MAPPED: its dst is not flat) */
    if ((uint32_t)zd_xxh64((const uint8_t *)fr.dst, fr.size) != fr.checksum)
        report(status, fr.status_index, ZG_ZD_E_CHECKSUM);
}

}  // namespace

extern "C" size_t zg_zd_scratch_bytes(uint32_t n_blocks) {
    return (size_t)n_blocks * sizeof(zg_zd_bres) + sizeof(uint32_t);
}

extern "C" cudaError_t zg_zd_decode(const zg_zd_batch *b, cudaStream_t s) {
    if (b->n_frames == 0) return cudaSuccess;
    /* every launch's shape (launch_config.h): fixed, but checked against the device before anything runs */
    zg_gpu_limits L;
    (void)zg_gpu_limits_current(&L);
    zg_lc_zstd c;
    if (zg_lc_zstd_config(&L, b->n_blocks, b->n_frames, &c, NULL, 0) != 0) return cudaErrorNotSupported;
    cudaError_t e = cudaMemsetAsync(b->sync, 0, sizeof(uint32_t), s);
    if (e != cudaSuccess) return e;
    const int profile = b->profile; /* per-kernel times on stderr (tuning) */
    enum { K = 5 };
    cudaEvent_t ev[K + 1];
    if (profile)
        for (int i = 0; i <= K; i++) cudaEventCreate(&ev[i]);
    if (profile) cudaEventRecord(ev[0], s);
    if (b->n_blocks) {
        /* K1 (sequences) and K1h (Huffman literals) are independent, and each is bound by its longest chain
         * with most of the GPU idle: given a second stream, K1h runs beside K1 (a wave of 43 oct chunks: K1 2.0,
         * K1h 3.8 ms one after the other). Both only ever set a block's err from 0 (zeroed here). */
        e = cudaMemsetAsync(b->res, 0, (size_t)b->n_blocks * sizeof(zg_zd_bres), s);
        if (e != cudaSuccess) return e;
        cudaStream_t sh = s;
        if (b->aux) {
            if ((e = cudaEventRecord(b->fork, s)) != cudaSuccess) return e;
            if ((e = cudaStreamWaitEvent(b->aux, b->fork, 0)) != cudaSuccess) return e;
            sh = b->aux;
        }
        const int probe = b->huf_probe < 0 ? (int)kProbe : b->huf_probe;
        k1_huffman<<<c.k1h.grid_x, c.k1h.threads, 0, sh>>>(b->blocks, b->hufs, b->res,
                                                            probe < 0 ? 0 : probe > 4096 ? 4096 : probe);
        k1_entropy<<<c.k1.grid_x, c.k1.threads, 0, s>>>(b->blocks, b->fses, b->res);
        if (b->aux) {
            if ((e = cudaEventRecord(b->join, b->aux)) != cudaSuccess) return e;
            if ((e = cudaStreamWaitEvent(s, b->join, 0)) != cudaSuccess) return e;
        }
    }
    if (profile) cudaEventRecord(ev[1], s);
    k2_link<<<c.k2.grid_x, c.k2.threads, 0, s>>>(b->frames, b->n_frames, b->res, b->status, b->actual);
    if (profile) cudaEventRecord(ev[2], s);
    if (b->n_blocks) k3a_place<<<c.k3a.grid_x, c.k3a.threads, 0, s>>>(b->blocks, b->frames, b->res, b->status, b->rows);
    if (profile) cudaEventRecord(ev[3], s);
    if (b->n_blocks) k3b_matches<<<c.k3b.grid_x, c.k3b.threads, 0, s>>>(b->blocks, b->frames, b->res, b->order,
                                                                         b->sync, b->status, b->rows);
    if (profile) cudaEventRecord(ev[4], s);
    k4_checksum<<<c.k4.grid_x, c.k4.threads, 0, s>>>(b->frames, b->n_frames, b->status);
    if (profile) {
        cudaEventRecord(ev[K], s);
        cudaEventSynchronize(ev[K]);
        float ms[K];
        for (int i = 0; i < K; i++) cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]);
        fprintf(stderr, "zstd decoder: %u frames, %u blocks: K1 %.3f K2 %.3f K3a %.3f K3b %.3f K4 %.3f ms\n",
                b->n_frames, b->n_blocks, ms[0], ms[1], ms[2], ms[3], ms[4]);
#ifdef ZG_ZD_BLOCK_TIMES
        if (b->n_frames == 1 && b->n_blocks <= kTimesMax) { /* us from K3b's first block start: start+length */
            static unsigned long long t[kTimesMax][2];
            cudaMemcpyFromSymbol(t, g_times, sizeof t);
            unsigned long long t0 = ~0ull;
            for (uint32_t i = 0; i < b->n_blocks; i++) t0 = t[i][0] < t0 ? t[i][0] : t0;
            fprintf(stderr, "zstd K3b blocks:");
            for (uint32_t i = 0; i < b->n_blocks; i++)
                fprintf(stderr, " %u:%.0f+%.0f", i, (t[i][0] - t0) * 1e-3, (t[i][1] - t[i][0]) * 1e-3);
            fprintf(stderr, "\n");
        }
#endif
        for (int i = 0; i <= K; i++) cudaEventDestroy(ev[i]);
    }
    return cudaGetLastError();
}
