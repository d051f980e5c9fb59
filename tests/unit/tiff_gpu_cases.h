/* Test-only encoders and references for the GPU TIFF decoders (test_lzw_check.c, test_gpu_lzw.c,
 * bench/bench_tiff_gpu.c): an LZW encoder with knobs the host's (src/codec/tiff_lzw.c) does not have (ClearCode
 * every N codes, a table that fills up without a ClearCode, no EOI), a PackBits encoder, plain-C references of
 * the predictors, and data that looks like the field's (random, constant, ramps, smooth 16-bit images). */
#ifndef ZG_TIFF_GPU_CASES_H
#define ZG_TIFF_GPU_CASES_H
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpucodec/lzw/lzw_rules.h"

/* ---- LZW ---- */
typedef struct zt_lzw_opts {
    uint32_t clear_every; /* a ClearCode after this many codes of a segment (0: when the table fills) */
    int freeze;           /* a full table stays full (no ClearCode: later codes make no entries) */
    int no_first_clear;   /* the stream does not start with a ClearCode */
    int no_eoi;           /* no EOI at the end */
    uint32_t pad_codes;   /* literal codes after the data (padding a reader ignores once its output is full) */
} zt_lzw_opts;

typedef struct zt_bits {
    uint8_t *p;
    size_t cap, n;
    uint64_t acc;
    unsigned nacc;
} zt_bits;

static inline void zt_put(zt_bits *b, uint32_t code, unsigned width) {
    b->acc = b->acc << width | code;
    b->nacc += width;
    while (b->nacc >= 8) {
        if (b->n < b->cap) b->p[b->n] = (uint8_t)(b->acc >> (b->nacc - 8));
        b->n++;
        b->nacc -= 8;
    }
    b->acc &= (1ull << b->nacc) - 1;
}

/* The encoder's dictionary: child of (code, byte), valid when its stamp is the segment's. */
typedef struct zt_lzw_dict {
    uint16_t *child;
    uint32_t *stamp;
    uint32_t gen;
} zt_lzw_dict;

static inline int zt_lzw_dict_init(zt_lzw_dict *d) {
    d->child = (uint16_t *)malloc(4096u * 256u * sizeof *d->child);
    d->stamp = (uint32_t *)calloc(4096u * 256u, sizeof *d->stamp);
    d->gen = 1;
    return d->child && d->stamp;
}
static inline void zt_lzw_dict_free(zt_lzw_dict *d) {
    free(d->child);
    free(d->stamp);
}

/* Encodes in[0, n) into out (cap bytes); returns the stream's size (> cap: it did not fit). Code k of a segment
 * is written at zg_lzw_width(k) bits, which the tests check against libtiff's streams (imagecodecs, GDAL) and the
 * host codec's encoder. */
static inline size_t zt_lzw_encode_with(zt_lzw_dict *d, const uint8_t *in, size_t n, const zt_lzw_opts *o, uint8_t *out,
                                 size_t cap) {
    zt_bits b = {out, cap, 0, 0, 0};
    uint32_t k = 0, next = ZG_LZW_FIRST;
    d->gen++;
    if (!o->no_first_clear) zt_put(&b, ZG_LZW_CLEAR, zg_lzw_width(k));
    int w = -1;
    for (size_t i = 0; i < n; i++) {
        const uint8_t c = in[i];
        if (w < 0) {
            w = c;
            continue;
        }
        const size_t at = (size_t)w * 256u + c;
        if (d->stamp[at] == d->gen) {
            w = d->child[at];
            continue;
        }
        zt_put(&b, (uint32_t)w, zg_lzw_width(k++));
        if (next <= ZG_LZW_MAX_ENTRY) {
            d->child[at] = (uint16_t)next++;
            d->stamp[at] = d->gen;
        }
        const int full = o->freeze ? 0 : next > ZG_LZW_MAX_ENTRY - 2; /* (libtiff clears at 4094) */
        if (full || (o->clear_every && k >= o->clear_every)) {
            zt_put(&b, ZG_LZW_CLEAR, zg_lzw_width(k));
            k = 0;
            next = ZG_LZW_FIRST;
            d->gen++;
        }
        w = c;
    }
    if (w >= 0) zt_put(&b, (uint32_t)w, zg_lzw_width(k++));
    for (uint32_t i = 0; i < o->pad_codes; i++) zt_put(&b, i & 0xff, zg_lzw_width(k++));
    if (!o->no_eoi) zt_put(&b, ZG_LZW_EOI, zg_lzw_width(k));
    if (b.nacc) zt_put(&b, 0, 8 - b.nacc);
    return b.n;
}

static inline size_t zt_lzw_encode(const uint8_t *in, size_t n, const zt_lzw_opts *o, uint8_t *out, size_t cap) {
    zt_lzw_dict d;
    size_t r = SIZE_MAX;
    if (zt_lzw_dict_init(&d)) r = zt_lzw_encode_with(&d, in, n, o, out, cap);
    zt_lzw_dict_free(&d);
    return r;
}
/* The most an encode of n bytes takes: 12 bits a byte, a ClearCode every code, EOI and padding codes. */
static inline size_t zt_lzw_bound(size_t n, uint32_t pad) { return (n + pad) * 3 + 16; }

/* ---- PackBits: runs of 3 or more as runs, -128 no-op headers every `noop` runs (0: none) ---- */
static inline size_t zt_packbits_encode(const uint8_t *in, size_t n, uint8_t *out, unsigned noop) {
    size_t i = 0, k = 0, runs = 0;
    while (i < n) {
        if (noop && ++runs % noop == 0) out[k++] = 0x80;
        size_t run = 1;
        while (i + run < n && run < 128 && in[i + run] == in[i]) run++;
        if (run >= 3) {
            out[k++] = (uint8_t)(257 - run);
            out[k++] = in[i];
            i += run;
            continue;
        }
        size_t lit = 0;
        while (i + lit < n && lit < 128) {
            if (i + lit + 2 < n && in[i + lit] == in[i + lit + 1] && in[i + lit] == in[i + lit + 2]) break;
            lit++;
        }
        out[k++] = (uint8_t)(lit - 1);
        memcpy(out + k, in + i, lit);
        k += lit;
        i += lit;
    }
    return k;
}

/* ---- predictors, over rows of `row` elements of `es` bytes, differences every `s` elements ---- */
static inline uint64_t zt_get(const uint8_t *p, unsigned es) {
    uint64_t v = 0;
    memcpy(&v, p, es); /* (little-endian hosts) */
    return v;
}
static inline void zt_set(uint8_t *p, unsigned es, uint64_t v) { memcpy(p, &v, es); }

/* Predictor 2, in place: decode sums, encode differences. */
static inline void zt_pred2(uint8_t *x, size_t nbytes, unsigned es, size_t row, size_t s, int decode) {
    const size_t rb = row * es;
    for (size_t off = 0; off < nbytes; off += rb) {
        const size_t m = (nbytes - off < rb ? nbytes - off : rb) / es;
        uint8_t *r = x + off;
        if (decode) {
            for (size_t i = s; i < m; i++) zt_set(r + i * es, es, zt_get(r + i * es, es) + zt_get(r + (i - s) * es, es));
        } else {
            for (size_t i = m; i-- > s;) zt_set(r + i * es, es, zt_get(r + i * es, es) - zt_get(r + (i - s) * es, es));
        }
    }
}
/* Predictor 3: decode src (summed in place) -> dst; encode src -> dst (byte planes, most significant first, then
 * byte differences). */
static inline void zt_pred3(uint8_t *src, uint8_t *dst, size_t nbytes, unsigned es, size_t row, size_t s, int decode) {
    const size_t rb = row * es;
    for (size_t off = 0; off < nbytes; off += rb) {
        const size_t len = nbytes - off < rb ? nbytes - off : rb, m = len / es;
        uint8_t *a = src + off, *o = dst + off;
        if (decode) {
            for (size_t i = s; i < len; i++) a[i] = (uint8_t)(a[i] + a[i - s]);
            for (size_t w = 0; w < m; w++)
                for (unsigned b = 0; b < es; b++) o[w * es + b] = a[(es - 1 - b) * m + w];
            for (size_t t = m * es; t < len; t++) o[t] = a[t];
        } else {
            for (size_t w = 0; w < m; w++)
                for (unsigned b = 0; b < es; b++) o[(es - 1 - b) * m + w] = a[w * es + b];
            for (size_t t = m * es; t < len; t++) o[t] = a[t];
            for (size_t i = len; i-- > s;) o[i] = (uint8_t)(o[i] - o[i - s]);
        }
    }
}

/* ---- data ---- */
static inline uint64_t zt_rng(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}
enum { ZT_RANDOM, ZT_CONSTANT, ZT_RAMP, ZT_IMAGE16, ZT_FEW, ZT_KINDS };
static const char *const zt_kind_name[ZT_KINDS] = {"random", "constant", "ramp", "image16", "few-symbols"};
/* n bytes of kind `kind`; ZT_IMAGE16: a smooth uint16 image `width` pixels wide with a little noise (a microscope
 * or elevation tile), as stored after predictor 2 when diff is set. */
static inline void zt_fill(uint8_t *p, size_t n, int kind, uint64_t seed, size_t width, int diff) {
    uint64_t s = seed * 2654435761u + 88172645463325252ull;
    switch (kind) {
    case ZT_RANDOM:
        for (size_t i = 0; i < n; i++) p[i] = (uint8_t)zt_rng(&s);
        break;
    case ZT_CONSTANT: memset(p, (int)(seed & 0xff), n); break;
    case ZT_RAMP:
        for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * (seed % 7 + 1) / 3);
        break;
    case ZT_FEW:
        for (size_t i = 0; i < n; i++) p[i] = (uint8_t)("\x00\x01\x02\xff"[zt_rng(&s) & 3]);
        break;
    default: {
        const size_t m = n / 2, w = width ? width : 256;
        for (size_t i = 0; i < m; i++) {
            const size_t y = i / w, x = i % w;
            const double v = 2048.0 + 900.0 * sin((double)x * 0.031 + (double)seed) *
                                          cos((double)y * 0.017) + 300.0 * sin((double)(x + 2 * y) * 0.0041);
            const uint16_t u = (uint16_t)((int)v + (int)(zt_rng(&s) % 9) - 4);
            p[2 * i] = (uint8_t)u;
            p[2 * i + 1] = (uint8_t)(u >> 8);
        }
        if (n & 1) p[n - 1] = 0;
        if (diff) zt_pred2(p, m * 2, 2, w, 1, 0);
    }
    }
}

#endif
