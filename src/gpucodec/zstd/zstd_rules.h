/* zgpu's block-parallel zstd decoder: the data it works on and the per-block steps, shared by the CUDA kernels
 * (zstd_kernels.cu) and the CPU unit test (tests/unit/test_zstd_decode.c), so that every decoding rule runs in
 * CI without a GPU. Header-only: static inline, and __host__ __device__ under nvcc. C and C++ compatible.
 *
 * Why our own decoder: nvCOMP decodes a zstd frame with one thread block, so a batch of 64-128 chunks of
 * 8-16 MiB keeps most of an H100 idle. Here every zstd *block* (at most 128 KiB decoded) is a unit of work:
 *   host  (zstd_plan.c) walks each frame's block headers and decodes the small table descriptions (Huffman
 *         weights, FSE normalized counts) into descriptors;
 *   K1    per block: raw / RLE literals into a literal buffer, sequences into a sequence buffer; the block's
 *         decoded size and its repeat offsets, symbolically in terms of the offsets the block starts with
 *         (they depend on earlier blocks);
 *   K1h   per Huffman stream (a lane each, 8 blocks a warp): Huffman literals into the literal buffer;
 *   K2    per frame: block output offsets (prefix sum of sizes) and each block's incoming repeat offsets;
 *   K3a   per block: literal runs to their places, raw/RLE blocks written, matches given their frame position
 *         and concrete offset (no waits: afterwards only match bytes are missing);
 *   K3b   per block: the matches, in sweeps that copy every match whose source bytes are final, in any order
 *         (long chains then go in order), each match waiting only for the matches its source copies (blocks
 *         start in ticket order, so every wait ends). Low-ratio data has short chains; waiting for whole
 *         earlier blocks, as K3 did, serialized every frame.
 * Format: RFC 8878. */
#ifndef ZG_ZSTD_DECODE_H
#define ZG_ZSTD_DECODE_H
#include <stddef.h>
#include <stdint.h>

#include "gpucodec/common/checksum_combine.h"

#ifdef __CUDACC__
#define ZD_FN static __host__ __device__ inline
#else
#define ZD_FN static inline
#endif

#define ZG_ZD_BLOCK_MAX (128u << 10)
#define ZG_ZD_HUF_LOG_MAX 11
#define ZG_ZD_FSE_LOG_MAX 9
#define ZG_ZD_MAX_FRAME 0x7fffffffu /* offsets and sizes fit 31 bits (larger frames go to another decoder) */

enum { ZG_ZD_BLOCK_RAW = 0, ZG_ZD_BLOCK_RLE = 1, ZG_ZD_BLOCK_COMPRESSED = 2 };
enum { ZG_ZD_LIT_RAW = 0, ZG_ZD_LIT_RLE = 1, ZG_ZD_LIT_HUF = 2 };

/* Per-frame error codes (0 = fine); zg_zd_error_text() names them. */
enum {
    ZG_ZD_OK = 0,
    ZG_ZD_E_LITERALS = 1,  /* a Huffman stream does not decode to its literal count / end exactly */
    ZG_ZD_E_SEQUENCES = 2, /* the sequence bitstream does not end exactly after its sequences */
    ZG_ZD_E_LITLEN = 3,    /* sequences take more literals than the block has */
    ZG_ZD_E_BLOCKSIZE = 4, /* a block decodes to more than 128 KiB */
    ZG_ZD_E_OFFSET = 5,    /* a match offset is zero or reaches before the frame's start */
    ZG_ZD_E_SIZE = 6,      /* the blocks decode to a size other than the frame's */
    ZG_ZD_E_CHECKSUM = 7   /* the frame's content checksum (XXH64) does not match */
};

/* Table descriptions, decoded on the host. Huffman: a weight for each of nsym symbols (the implied last one
 * included), code length max_bits. FSE: normalized counts (-1: "less than one") of nsym symbols, table of
 * 1 << log cells; an RLE table is log 0 with one count of 1. */
typedef struct zg_zd_huf_desc {
    uint8_t w[256];
    uint16_t nsym;
    uint8_t max_bits, pad;
} zg_zd_huf_desc;

typedef struct zg_zd_fse_desc {
    int16_t norm[53];
    uint8_t log, nsym;
} zg_zd_fse_desc;

/* One zstd block. Offsets (src, lit, seq) are relative on the host and become device addresses at launch. */
typedef struct zg_zd_block {
    uint64_t src;             /* block content, after the 3-byte block header */
    uint64_t lit;             /* where its literals go (literal buffer) */
    uint64_t seq;             /* where its sequences go (zg_zd_seq array) */
    uint32_t frame;           /* index of its frame in the batch */
    uint8_t type, lit_type, n_streams, last;
    uint32_t lit_n;           /* literal count (raw / RLE block: its decoded size) */
    uint32_t lit_off;         /* from src: raw literals, the RLE byte, or the first Huffman stream */
    uint32_t stream_len[4];   /* Huffman streams, back to back from lit_off */
    uint32_t seq_off, seq_len, nseq; /* sequence bitstream (from src) and sequence count */
    uint32_t huf, ll, of, ml; /* table description indices */
} zg_zd_block;

typedef struct zg_zd_frame {
    uint64_t dst;             /* decoded output (device) */
    uint64_t size;            /* decoded size (from the frame header, or what the caller expects) */
    uint32_t first_block, n_blocks;
    uint32_t checksum, has_checksum; /* low 32 bits of XXH64 of the content, when the frame carries it */
    uint32_t status_index;    /* where the frame's status / actual size are reported */
    uint32_t mapped;          /* ZG_ZD_FLAT / ZG_ZD_MAPPED / ZG_ZD_MAPPED_AFTER: where the bytes go (below) */
    uint64_t place;           /* ZG_ZD_MAPPED_AFTER: the rows' address (device) */
} zg_zd_frame;

/* A frame's bytes: ZG_ZD_FLAT, at dst + p; ZG_ZD_MAPPED, straight into rows at dst (zg_zd_rows in zstd_gpu.h;
 * never with has_checksum, as K4 reads dst flat); ZG_ZD_MAPPED_AFTER, at dst + p, and each block, once final,
 * copied into the rows at place. */
enum { ZG_ZD_FLAT = 0, ZG_ZD_MAPPED = 1, ZG_ZD_MAPPED_AFTER = 2 };

typedef struct zg_zd_seq {
    uint32_t ll, ml, of; /* literal length, match length, offset (ZD_SYM_* when taken from incoming repeats) */
} zg_zd_seq;

/* What K1 leaves per block for K2 and K3. */
typedef struct zg_zd_bres {
    uint32_t size;       /* decoded size */
    uint32_t err;        /* ZG_ZD_E_* */
    uint32_t rep_out[3]; /* repeat offsets after the block, possibly symbolic */
    uint32_t rep_in[3];  /* K2: concrete repeat offsets at the block's start */
    uint64_t out;        /* K2: the block's offset in its frame's output */
} zg_zd_bres;

/* Constants of the sequence codes (RFC 8878 3.1.1.3.2.1.1), passed by pointer: a __constant__ copy on the
 * device, a static one on the host. */
typedef struct zg_zd_consts {
    uint32_t ll_base[36];
    uint8_t ll_bits[36];
    uint32_t ml_base[53];
    uint8_t ml_bits[53];
} zg_zd_consts;

#define ZG_ZD_CONSTS_INIT                                                                                         \
    {{0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10,  11,  12,  13,  14,  15,   16,   18,                            \
      20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536},                \
     {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14,  \
      15, 16},                                                                                                    \
     {3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,  17,  18,  19,  20,   21,   22,   23,   24,   25,    \
      26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 37, 39, 41, 43,  47,  51,  59,  67,   83,   99,   131,  259,  515,   \
      1027, 2051, 4099, 8195, 16387, 32771, 65539},                                                               \
     {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,              \
      1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}

/* ------------------------------------------------------------------------------------------------
 * Symbolic repeat offsets: a value with bit 31 set stands for "incoming repeat offset k, minus d" (k in bits
 * 29-30, d in bits 0-28); a concrete offset is below 2^31. 0 marks an invalid offset (zstd's "rep - 1 == 0").
 * ---------------------------------------------------------------------------------------------- */
#define ZD_SYM(k, d) (0x80000000u | ((uint32_t)(k) << 29) | (uint32_t)(d))

ZD_FN uint32_t zd_rep_minus1(uint32_t v) {
    if (v & 0x80000000u) return (v & 0x1fffffffu) == 0x1fffffffu ? 0 : v + 1;
    return v > 1 ? v - 1 : 0;
}

ZD_FN uint32_t zd_rep_resolve(uint32_t v, const uint32_t in[3]) {
    if (!(v & 0x80000000u)) return v;
    uint32_t base = in[(v >> 29) & 3], d = v & 0x1fffffffu;
    return base > d ? base - d : 0;
}

/* ------------------------------------------------------------------------------------------------
 * Backward bitstream (RFC 8878 4.1: read from the end, the last byte's highest set bit is the start mark).
 * The 8-byte window [ptr, ptr + 8) sits in c (little endian); bc bits of it are consumed from the top. Bytes
 * before the stream read as zero, so an over-read shows as zd_br_left() < 0, never as a wild access.
 * ---------------------------------------------------------------------------------------------- */
typedef struct zd_br {
    const uint8_t *p;
    int64_t ptr;
    uint64_t c;
    uint32_t bc;
} zd_br;

ZD_FN int zd_highbit(uint32_t v) { /* v > 0 */
#ifdef __CUDA_ARCH__
    return 31 - __clz(v);
#else
    return 31 - __builtin_clz(v);
#endif
}

ZD_FN uint64_t zd_load(const uint8_t *p, int64_t ptr) {
#ifdef __CUDA_ARCH__
    if (ptr >= 0) {
        /* two aligned 8-byte loads: callers keep >= 16 bytes of slack after every stream (the staging layout),
         * and the word holding ptr never starts before the chunk (chunks start 256-byte aligned) */
        const uint8_t *q = p + ptr;
        const uint64_t *w = (const uint64_t *)((uintptr_t)q & ~(uintptr_t)7);
        unsigned sh = (unsigned)((uintptr_t)q & 7) * 8;
        uint64_t lo = __ldg(w);
        if (!sh) return lo;
        uint64_t hi = __ldg(w + 1);
        return (lo >> sh) | (hi << (64 - sh));
    }
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (ptr >= 0) { /* one load on the host (zstd_split.c): a stream's window never passes its end */
        uint64_t w;
        __builtin_memcpy(&w, p + ptr, 8);
        return w;
    }
#endif
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--) {
        int64_t i = ptr + k;
        v = (v << 8) | (i >= 0 ? p[i] : 0u);
    }
    return v;
}

/* 0, or -1 when the stream is empty or lacks its start mark. */
ZD_FN int zd_br_init(zd_br *r, const uint8_t *p, uint32_t n) {
    if (n == 0 || p[n - 1] == 0) return -1;
    r->p = p;
    r->ptr = (int64_t)n - 8;
    r->c = zd_load(p, r->ptr);
    r->bc = 8u - (uint32_t)zd_highbit(p[n - 1]);
    return 0;
}

ZD_FN void zd_br_reload(zd_br *r) {
    uint32_t nb = r->bc >> 3;
    if (!nb) return;
    r->ptr -= nb;
    r->bc &= 7;
    r->c = zd_load(r->p, r->ptr);
}

/* Bits not yet read (negative after an over-read). */
ZD_FN int64_t zd_br_left(const zd_br *r) { return 8 * (r->ptr + 8) - (int64_t)r->bc; }

ZD_FN uint32_t zd_br_peek(const zd_br *r, uint32_t k) { /* 1 <= k, bc + k <= 64 */
    return (uint32_t)((r->c << r->bc) >> (64 - k));
}

ZD_FN uint32_t zd_br_read(zd_br *r, uint32_t k) { /* k <= 32 */
    if (!k) return 0;
    if (r->bc + k > 64) zd_br_reload(r);
    uint32_t v = zd_br_peek(r, k);
    r->bc += k;
    return v;
}

/* ------------------------------------------------------------------------------------------------
 * Tables
 * ---------------------------------------------------------------------------------------------- */
typedef struct zd_fse_cell {
    uint16_t base; /* next state = base + read(nbits) */
    uint8_t nbits, sym;
} zd_fse_cell;

/* FSE decoding table (RFC 8878 4.1.1) of 1 << d->log cells; `next` is scratch for 64 symbols. The host checked
 * that the counts sum to the table size. */
ZD_FN void zd_fse_build(zd_fse_cell *t, const zg_zd_fse_desc *d, uint16_t *next) {
    const uint32_t size = 1u << d->log, mask = size - 1;
    uint32_t high = size - 1;
    for (uint32_t s = 0; s < d->nsym; s++) {
        if (d->norm[s] == -1) {
            t[high--].sym = (uint8_t)s;
            next[s] = 1;
        } else {
            next[s] = (uint16_t)(d->norm[s] > 0 ? d->norm[s] : 0);
        }
    }
    const uint32_t step = (size >> 1) + (size >> 3) + 3;
    uint32_t pos = 0;
    for (uint32_t s = 0; s < d->nsym; s++)
        for (int i = 0; i < d->norm[s]; i++) {
            t[pos].sym = (uint8_t)s;
            do pos = (pos + step) & mask;
            while (pos > high);
        }
    for (uint32_t u = 0; u < size; u++) {
        uint32_t x = next[t[u].sym]++;
        uint32_t nb = d->log - (uint32_t)zd_highbit(x);
        t[u].nbits = (uint8_t)nb;
        t[u].base = (uint16_t)((x << nb) - size);
    }
}

/* Start index of each symbol's run of cells in a Huffman decoding table (weight-1 symbols first, then by
 * weight, symbols in order within a weight): what zd_huf_fill needs. */
ZD_FN void zd_huf_starts(const zg_zd_huf_desc *d, uint16_t *start) {
    uint32_t cnt[ZG_ZD_HUF_LOG_MAX + 2] = {0}, rank[ZG_ZD_HUF_LOG_MAX + 2];
    for (uint32_t s = 0; s < d->nsym; s++) cnt[d->w[s]]++;
    uint32_t pos = 0;
    for (uint32_t w = 1; w <= d->max_bits; w++) {
        rank[w] = pos;
        pos += cnt[w] << (w - 1);
    }
    for (uint32_t s = 0; s < d->nsym; s++) {
        uint32_t w = d->w[s];
        if (!w) continue;
        start[s] = (uint16_t)rank[w];
        rank[w] += 1u << (w - 1);
    }
}

/* Cells of symbol s: 2^(w-1) entries of (symbol | code length << 8). */
ZD_FN void zd_huf_fill(uint16_t *t, const zg_zd_huf_desc *d, const uint16_t *start, uint32_t s) {
    uint32_t w = d->w[s];
    if (!w) return;
    uint16_t e = (uint16_t)(s | ((d->max_bits + 1 - w) << 8));
    for (uint32_t i = 0, n = 1u << (w - 1); i < n; i++) t[start[s] + i] = e;
}

/* ------------------------------------------------------------------------------------------------
 * Literals
 * ---------------------------------------------------------------------------------------------- */
/* One Huffman stream of n bytes -> exactly `count` literals; the stream must end exactly. */
ZD_FN int zd_huf_stream(const uint16_t *t, uint32_t log, const uint8_t *src, uint32_t n, uint8_t *dst,
                        uint32_t count) {
    zd_br r;
    if (zd_br_init(&r, src, n)) return ZG_ZD_E_LITERALS;
    uint32_t i = 0;
    for (; i < count && ((uintptr_t)(dst + i) & 3); i++) { /* up to an aligned output word */
        zd_br_reload(&r);
        uint16_t e = t[zd_br_peek(&r, log)];
        dst[i] = (uint8_t)e;
        r.bc += e >> 8;
    }
    for (; i + 4 <= count; i += 4) { /* after a reload bc <= 7, and 7 + 4 * 11 <= 64; one word store */
        zd_br_reload(&r);
        uint32_t w = 0;
        for (int k = 0; k < 4; k++) {
            uint16_t e = t[zd_br_peek(&r, log)];
            w |= (uint32_t)(e & 0xff) << (8 * k);
            r.bc += e >> 8;
        }
        *(uint32_t *)(dst + i) = w; /* little endian: byte k is symbol k */
        if (zd_br_left(&r) < 0) return ZG_ZD_E_LITERALS;
    }
    for (; i < count; i++) {
        zd_br_reload(&r);
        uint16_t e = t[zd_br_peek(&r, log)];
        dst[i] = (uint8_t)e;
        r.bc += e >> 8;
    }
    return zd_br_left(&r) == 0 ? ZG_ZD_OK : ZG_ZD_E_LITERALS;
}

/* Literal count of Huffman stream k of a block (4 streams: three of (n + 3) / 4, the last the rest). */
ZD_FN uint32_t zd_stream_count(const zg_zd_block *b, int k) {
    if (b->n_streams == 1) return b->lit_n;
    uint32_t seg = (b->lit_n + 3) / 4;
    return k < 3 ? seg : b->lit_n - 3 * seg;
}

/* ------------------------------------------------------------------------------------------------
 * Sequences
 * ---------------------------------------------------------------------------------------------- */
/* Decodes nseq sequences from the bitstream src[0, n) with the three tables, into out[]. rep: the repeat
 * offsets at the block's start (symbolic) in, at its end out. *ml_sum: total match length; literal lengths
 * must not exceed lit_n. */
ZD_FN int zd_sequences(const zg_zd_consts *K, const zd_fse_cell *tll, uint32_t lll, const zd_fse_cell *tof,
                       uint32_t lof, const zd_fse_cell *tml, uint32_t lml, const uint8_t *src, uint32_t n,
                       uint32_t nseq, uint32_t lit_n, zg_zd_seq *out, uint32_t rep[3], uint32_t *ml_sum) {
    zd_br r;
    if (zd_br_init(&r, src, n)) return ZG_ZD_E_SEQUENCES;
    uint32_t sll = zd_br_read(&r, lll), sof = zd_br_read(&r, lof), sml = zd_br_read(&r, lml);
    uint64_t ll_sum = 0, mls = 0;
    for (uint32_t i = 0; i < nseq; i++) {
        const zd_fse_cell cll = tll[sll], cof = tof[sof], cml = tml[sml];
        uint32_t ofc = cof.sym;
        uint32_t ofv = (1u << ofc) + zd_br_read(&r, ofc);
        uint32_t ml = K->ml_base[cml.sym] + zd_br_read(&r, K->ml_bits[cml.sym]);
        uint32_t ll = K->ll_base[cll.sym] + zd_br_read(&r, K->ll_bits[cll.sym]);
        uint32_t off;
        if (ofv > 3) {
            off = ofv - 3;
            if (off >= 0x80000000u) off = 0;
            rep[2] = rep[1];
            rep[1] = rep[0];
            rep[0] = off;
        } else {
            uint32_t idx = ofv - 1 + (ll == 0);
            if (idx == 0) {
                off = rep[0];
            } else {
                off = idx == 3 ? zd_rep_minus1(rep[0]) : rep[idx];
                if (idx != 1) rep[2] = rep[1];
                rep[1] = rep[0];
                rep[0] = off;
            }
        }
        out[i].ll = ll;
        out[i].ml = ml;
        out[i].of = off;
        ll_sum += ll;
        mls += ml;
        if (i + 1 < nseq) {
            sll = cll.base + zd_br_read(&r, cll.nbits);
            sml = cml.base + zd_br_read(&r, cml.nbits);
            sof = cof.base + zd_br_read(&r, cof.nbits);
        }
        if (zd_br_left(&r) < 0) return ZG_ZD_E_SEQUENCES;
    }
    if (zd_br_left(&r) != 0) return ZG_ZD_E_SEQUENCES;
    if (ll_sum > lit_n) return ZG_ZD_E_LITLEN;
    if (mls + lit_n > ZG_ZD_BLOCK_MAX) return ZG_ZD_E_BLOCKSIZE;
    *ml_sum = (uint32_t)mls;
    return ZG_ZD_OK;
}

/* K2 for one frame: offsets and incoming repeats of its blocks; returns the decoded size, or an error via *err. */
ZD_FN uint64_t zd_frame_link(zg_zd_bres *res, uint32_t n_blocks, uint32_t *err) {
    uint32_t rep[3] = {1, 4, 8};
    uint64_t pos = 0;
    for (uint32_t b = 0; b < n_blocks; b++) {
        zg_zd_bres *r = &res[b];
        if (r->err && !*err) *err = r->err;
        r->out = pos;
        pos += r->size;
        uint32_t nr[3];
        for (int k = 0; k < 3; k++) {
            r->rep_in[k] = rep[k];
            nr[k] = zd_rep_resolve(r->rep_out[k], rep);
        }
        for (int k = 0; k < 3; k++) rep[k] = nr[k];
    }
    return pos;
}

/* One sequence of K3 before its copies: the concrete offset, checked against the bytes already out. */
ZD_FN int zd_seq_offset(const zg_zd_seq *s, const uint32_t rep_in[3], uint64_t pos_after_lits, uint32_t *off) {
    uint32_t o = zd_rep_resolve(s->of, rep_in);
    if (o == 0 || o > pos_after_lits) return ZG_ZD_E_OFFSET;
    *off = o;
    return ZG_ZD_OK;
}

/* XXH64 of a whole frame in one thread (the frame's content checksum keeps its low 32 bits): the four lanes of
 * checksum_combine.h side by side over each 32-byte stripe, one pass over the bytes, then its finish. */
ZD_FN uint64_t zd_xxh64(const uint8_t *p, uint64_t n) {
    uint64_t v[4] = {ZG_XXH_P1 + ZG_XXH_P2, ZG_XXH_P2, 0, 0 - ZG_XXH_P1};
    for (uint64_t s = 0; s + 32 <= n; s += 32)
        for (int k = 0; k < 4; k++) v[k] = zg_xxh_round(v[k], zg_xxh_le64(p + s + 8 * (uint64_t)k));
    return zg_xxh64_finish(v, p, n);
}

#endif
