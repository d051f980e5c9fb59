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
 * 4 float32 field, 5 u32 labels with long runs, 6 short periodic patterns, 7 mixed segments */
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
    for (int kind = 0; kind < 8; kind++)
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

static void zc_free(zcase *cs, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(cs[i].raw);
        free(cs[i].comp);
    }
    free(cs);
}

#endif
