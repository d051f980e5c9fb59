/* Test inputs for the block-parallel zstd decoder (test_zstd_decode.c on the CPU, test_gpu_zstd.c on the GPU):
 * data of several kinds compressed by libzstd with settings that reach every part of the format (raw, RLE
 * and compressed blocks; raw, RLE, Huffman and treeless literals; 1 and 4 streams; predefined, RLE, FSE and
 * repeat sequence tables; repeat offsets; overlapping matches; content checksums; matches across blocks). */
#ifndef ZG_ZSTD_CASES_H
#define ZG_ZSTD_CASES_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_targetCBlockSize */
#include <zstd.h>

typedef struct zcase {
    uint8_t *raw, *comp;
    size_t n, cn;
    char name[96];
} zcase;

static uint64_t zc_rng(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* kind: 0 random bytes, 1 zeros, 2 words from a small vocabulary, 3 smooth u16 noise (microscopy-like),
 * 4 float32 field, 5 u32 labels with long runs, 6 short periodic patterns, 7 mixed segments, 8 a segmentation's
 * labels, 9 random bytes repeated at a long period */
static void zc_fill(uint8_t *p, size_t n, int kind, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    switch (kind) {
    case 0: for (size_t i = 0; i < n; i++) p[i] = (uint8_t)zc_rng(&s); break;
    case 1: memset(p, 0, n); break;
    case 2: {
        static const char *words[] = {"zarr ", "chunk ", "shard ", "gpu ", "decode ", "array ", "the ", "of ", "\n"};
        size_t i = 0;
        while (i < n) {
            const char *w = words[zc_rng(&s) % 9];
            for (size_t k = 0; w[k] && i < n; k++) p[i++] = (uint8_t)w[k];
        }
        break;
    }
    case 3: {
        int v = 1000;
        for (size_t i = 0; i + 1 < n; i += 2) {
            v += (int)(zc_rng(&s) % 17) - 8;
            v &= 0xfff;
            p[i] = (uint8_t)v;
            p[i + 1] = (uint8_t)(v >> 8);
        }
        if (n & 1) p[n - 1] = 7;
        break;
    }
    case 4: {
        float x = 0;
        for (size_t i = 0; i + 4 <= n; i += 4) {
            x += ((float)(zc_rng(&s) % 1000) - 500.0f) * 1e-3f;
            memcpy(p + i, &x, 4);
        }
        for (size_t i = n & ~(size_t)3; i < n; i++) p[i] = 1;
        break;
    }
    case 5: {
        uint32_t lab = 1;
        size_t i = 0;
        while (i + 4 <= n) {
            size_t run = 1 + zc_rng(&s) % 5000;
            for (size_t k = 0; k < run && i + 4 <= n; k++, i += 4) memcpy(p + i, &lab, 4);
            lab += 1 + (uint32_t)(zc_rng(&s) % 3);
        }
        for (; i < n; i++) p[i] = 0;
        break;
    }
    case 6: {
        size_t period = 1 + zc_rng(&s) % 13;
        for (size_t i = 0; i < n; i++) p[i] = (uint8_t)('a' + (i % period));
        break;
    }
    case 8: { /* a segmentation's labels: uint32 cells of 16 planes x 24 rows x 20 columns, rows of 256 (the label
               * benchmark volume's chunks: long chains of short matches in a frame's first plane) */
        for (size_t i = 0; i + 4 <= n; i += 4) {
            const size_t e = i / 4, z = e >> 16, y = (e >> 8) & 255, x = e & 255;
            const uint32_t v = (uint32_t)(((z / 16) * 7919 + (y / 24) * 104729 + (x / 20) * 1299709 + seed) % 50000);
            memcpy(p + i, &v, 4);
        }
        for (size_t i = n & ~(size_t)3; i < n; i++) p[i] = 3;
        break;
    }
    case 9: { /* random bytes repeated at a long period: matches at offsets of 5-200 KB whose sources lie in earlier
               * blocks, partly literals and partly long matches (the GPU decoder's matches copied in pieces) */
        static const size_t periods[] = {5000, 70000, 200000};
        const size_t period = periods[seed % 3];
        for (size_t i = 0; i < n; i++) p[i] = i < period ? (uint8_t)zc_rng(&s) : p[i - period];
        break;
    }
    default: {
        size_t i = 0;
        while (i < n) {
            size_t seg = 1 + zc_rng(&s) % 40000;
            if (seg > n - i) seg = n - i;
            zc_fill(p + i, seg, (int)(zc_rng(&s) % 7), zc_rng(&s));
            i += seg;
        }
    }
    }
}

/* Compresses with a level and options: checksum, a small window, small target blocks. */
static size_t zc_compress(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, int level, int checksum, int wlog,
                          int target_block) {
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, checksum);
    if (wlog) ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, wlog);
    if (target_block) ZSTD_CCtx_setParameter(c, ZSTD_c_targetCBlockSize, target_block);
    size_t r = ZSTD_compress2(c, dst, cap, src, n);
    ZSTD_freeCCtx(c);
    return ZSTD_isError(r) ? 0 : r;
}

/* Builds the case list: every kind at several sizes, levels and options. Returns the count. */
static size_t zc_build(zcase **out, int small) {
    static const size_t sizes[] = {1, 7, 100, 3000, 70000, 300000, 1 << 21};
    static const int levels[] = {-5, 1, 3, 9, 19};
    size_t cap = 1024, n = 0;
    zcase *cs = (zcase *)calloc(cap, sizeof *cs);
    uint64_t seed = 1;
    for (int kind = 0; kind < 10; kind++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (size_t li = 0; li < sizeof levels / sizeof *levels; li++) {
                size_t sz = sizes[si];
                int level = levels[li];
                if (small && sz > 300000) continue;
                if (level == 19 && sz > 300000) continue; /* slow to compress, adds nothing new */
                int variant = (int)(seed % 4);             /* 0 plain, 1 checksum, 2 small window, 3 small blocks */
                zcase *c = &cs[n];
                c->n = sz;
                c->raw = (uint8_t *)malloc(sz);
                zc_fill(c->raw, sz, kind, seed++);
                size_t cb = ZSTD_compressBound(sz);
                c->comp = (uint8_t *)malloc(cb);
                c->cn = zc_compress(c->raw, sz, c->comp, cb, level, variant == 1, variant == 2 ? 12 : 0,
                                    variant == 3 ? 1500 : 0);
                snprintf(c->name, sizeof c->name, "kind %d size %zu level %d variant %d", kind, sz, level, variant);
                if (c->cn) n++;
                else {
                    free(c->raw);
                    free(c->comp);
                }
            }
    *out = cs;
    return n;
}

/* ---- Huffman literal streams not read exactly to their first bit (issue 25) ----
 * RFC 8878 4.2.2 (Huffman-Coded Streams): decoding "continues up to reading the required number of symbols per
 * stream. If a bitstream is not entirely and exactly consumed, hence reaching exactly its beginning position
 * with all bits consumed, the decoding process is considered faulty." zgpu's decoder holds every stream to it
 * (zd_huf_stream; K1h on the GPU): ZG_ZD_E_LITERALS. */

static void zc_put_bits(uint8_t *p, uint32_t *pos, uint32_t v, uint32_t len) { /* v's bits from the lowest up */
    for (uint32_t b = 0; b < len; b++, ++*pos)
        if (v >> b & 1) p[*pos >> 3] |= (uint8_t)(1u << (*pos & 7));
}

/* The 40 literals of the hand-made frames (symbols 0-2; the last of the 1 stream and of streams 0 and 3 of 4 take
 * a 2-bit code). */
static inline void zc_hand_literals(uint8_t lit[40]) {
    for (uint32_t i = 0; i < 40; i++) lit[i] = (uint8_t)((i * 7 + i / 5) % 3);
    lit[9] = lit[39] = 1;
}

/* A frame written by hand: one compressed block of `nlit` (< 256) Huffman-coded literals (symbols 0, 1, 2 of weights
 * 2, 1 and the implied 1: Max_Number_of_Bits 2, codes 1, 00, 01), in 1 or 4 streams, no sequences. Stream `bad`
 * is damaged: how 1, two codes more below its literals' (2 bits left over); how 2, its last literal's 2-bit code
 * written short by one bit (its decode reads 1 bit before the stream). f needs 128 bytes; returns its size. */
static inline size_t zc_hand_frame(uint8_t *f, const uint8_t *lit, uint32_t nlit, int four, int bad, int how) {
    static const uint32_t code[3] = {1, 0, 1}, len[3] = {1, 2, 2};
    uint8_t streams[4][80];
    uint32_t sn[4], ns = four ? 4 : 1, seg = four ? (nlit + 3) / 4 : nlit;
    for (uint32_t k = 0, first = 0; k < ns; first += seg, k++) {
        const uint32_t cnt = k + 1 < ns ? seg : nlit - first;
        uint32_t pos = 0;
        memset(streams[k], 0, sizeof streams[k]);
        if ((int)k == bad && how == 1) zc_put_bits(streams[k], &pos, 3, 2); /* two codes '1' after its last literal */
        for (uint32_t i = cnt; i-- > 0;) { /* the last literal first: decoding reads from the top */
            const uint8_t s = lit[first + i];
            if ((int)k == bad && how == 2 && i == cnt - 1) zc_put_bits(streams[k], &pos, code[s] >> 1, len[s] - 1);
            else zc_put_bits(streams[k], &pos, code[s], len[s]);
        }
        zc_put_bits(streams[k], &pos, 1, 1); /* the start mark */
        sn[k] = (pos + 7) / 8;
    }
    const uint32_t lit_c = 2 + (four ? 6 : 0) + sn[0] + (four ? sn[1] + sn[2] + sn[3] : 0);
    const uint8_t head[6] = {0x28, 0xb5, 0x2f, 0xfd, 0x20, (uint8_t)nlit}; /* single segment, 1-byte size */
    memcpy(f, head, 6);
    size_t m = 6;
    const uint32_t bsize = 3 + lit_c + 1, bh = 1u | 2u << 1 | bsize << 3; /* last, compressed */
    const uint32_t lh = 2u | (four ? 1u : 0u) << 2 | nlit << 4 | lit_c << 14; /* Huffman, 10-bit sizes */
    for (int b = 0; b < 3; b++) f[m++] = (uint8_t)(bh >> (8 * b));
    for (int b = 0; b < 3; b++) f[m++] = (uint8_t)(lh >> (8 * b));
    f[m++] = 0x81; /* weights given directly, 2 of them: 2, 1 */
    f[m++] = 0x21;
    for (uint32_t k = 0; four && k < 3; k++) { /* jump table */
        f[m++] = (uint8_t)sn[k];
        f[m++] = (uint8_t)(sn[k] >> 8);
    }
    for (uint32_t k = 0; k < ns; k++) {
        memcpy(f + m, streams[k], sn[k]);
        m += sn[k];
    }
    f[m++] = 0; /* Number_of_Sequences */
    return m;
}

/* test_gpu_hostile.c's set-up "zstd": its array's one chunk, 64 x 64 uint32 ramps with noise (the 12th array that
 * test writes, from the same generator), written as src/codec/zstd.c writes it (level 3, no checksum, the content
 * size). data: 4096 values; returns the frame's size (0: failed). The test flips bit k % 8 of byte k * (n - 1) / 47,
 * k < 48. With libzstd 1.5.4 the frame has XXH64 ZC_HOSTILE_XXH64, and 8 of the flips (zc_hostile_loose) leave a
 * Huffman literals stream of its only block (4 streams) not read exactly, which libzstd decodes and zgpu rejects. */
#define ZC_HOSTILE_XXH64 UINT64_C(0x5606fd319e3a77ca)
static const int zc_hostile_loose[8] = {2, 3, 4, 8, 10, 12, 22, 23};
static inline size_t zc_hostile_chunk(uint32_t *data, uint8_t *frame, size_t cap) {
    uint32_t rng = 2025;
    for (int i = 0; i < 12 * 4096; i++) {
        rng = rng * 1664525u + 1013904223u;
        if (i >= 11 * 4096) data[i - 11 * 4096] = (uint32_t)((i - 11 * 4096) / 7 * 3 + ((rng >> 8) & 7));
    }
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 0);
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
    const size_t r = ZSTD_compress2(c, frame, cap, data, 4096 * 4);
    ZSTD_freeCCtx(c);
    return ZSTD_isError(r) ? 0 : r;
}

static void zc_free(zcase *cs, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(cs[i].raw);
        free(cs[i].comp);
    }
    free(cs);
}

#endif
