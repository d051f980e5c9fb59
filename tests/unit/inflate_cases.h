/* DEFLATE test streams shared by test_inflate_decode.c (the decoder's rules on the CPU) and test_gpu_inflate.c
 * (the kernel): data like the benchmark volumes and text, compressed by zlib and libdeflate. */
#ifndef ZG_INFLATE_CASES_H
#define ZG_INFLATE_CASES_H
#include <libdeflate.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

typedef struct sample {
    const char *name;
    uint8_t *p;
    size_t n;
} sample;

static sample make(const char *name, size_t n, int kind) {
    sample s = {name, malloc(n ? n : 1), n};
    switch (kind) {
    case 0: /* noisy 16-bit image rows (like oct_u16): smooth base + noise */
        for (size_t i = 0; i + 1 < n; i += 2) {
            uint32_t v = 1000 + (uint32_t)((i / 2) % 512) * 3 + (rnd() % 200);
            s.p[i] = (uint8_t)v;
            s.p[i + 1] = (uint8_t)(v >> 8);
        }
        if (n & 1) s.p[n - 1] = 7;
        break;
    case 1: { /* labels: runs of one 32-bit value */
        size_t i = 0;
        while (i < n) {
            uint32_t v = rnd() % 50, run = 4 * (1 + rnd() % 20000);
            for (uint32_t k = 0; k < run && i < n; k++, i++) s.p[i] = (uint8_t)(v >> (8 * (k & 3)));
        }
        break;
    }
    case 2: { /* text: words of a small vocabulary */
        static const char *w[] = {"zarr ", "chunk ", "shard ", "the ", "gpu ", "decode ", "array ", "of ", "deflate ",
                                  "window ", "lane ", "\n"};
        size_t i = 0;
        while (i < n) {
            const char *x = w[rnd() % 12];
            for (; *x && i < n; x++) s.p[i++] = (uint8_t)*x;
        }
        break;
    }
    case 3: /* random bytes: stored blocks */
        for (size_t i = 0; i < n; i++) s.p[i] = (uint8_t)rnd();
        break;
    case 4: /* floats of a smooth field with noise in the low mantissa */
        for (size_t i = 0; i + 3 < n; i += 4) {
            float f = (float)((i / 4) % 1000) * 0.01f + (float)(rnd() % 1000) * 1e-6f;
            memcpy(s.p + i, &f, 4);
        }
        for (size_t i = n & ~(size_t)3; i < n; i++) s.p[i] = 0;
        break;
    default: /* zeros */
        memset(s.p, 0, n);
    }
    return s;
}

/* raw deflate by zlib */
static uint8_t *zlib_raw(const sample *s, int level, int strategy, int mem, size_t *cn) {
    z_stream z;
    memset(&z, 0, sizeof z);
    *cn = 0;
    if (deflateInit2(&z, level, Z_DEFLATED, -15, mem, strategy) != Z_OK) return NULL;
    size_t cap = deflateBound(&z, (uLong)s->n) + 16;
    uint8_t *c = malloc(cap);
    z.next_in = s->p;
    z.avail_in = (uInt)s->n;
    z.next_out = c;
    z.avail_out = (uInt)cap;
    int r = deflate(&z, Z_FINISH);
    *cn = z.total_out;
    deflateEnd(&z);
    if (r != Z_STREAM_END) {
        free(c);
        return NULL;
    }
    return c;
}

static uint8_t *libdeflate_raw(const sample *s, int level, size_t *cn) {
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
    size_t cap = libdeflate_deflate_compress_bound(c, s->n) + 16;
    uint8_t *o = malloc(cap);
    *cn = libdeflate_deflate_compress(c, s->p, s->n, o, cap);
    libdeflate_free_compressor(c);
    return o;
}

/* Our verdict on a damaged stream must be libdeflate's (which also requires the exact size and the whole
 * input): 1 = it decodes. */
static int reference_decode(const uint8_t *c, size_t cn, uint8_t *out, size_t cap) {
    static struct libdeflate_decompressor *d;
    if (!d) d = libdeflate_alloc_decompressor();
    size_t in_used = 0, out_n = 0;
    enum libdeflate_result r = libdeflate_deflate_decompress_ex(d, c, cn, out, cap, &in_used, &out_n);
    return r == LIBDEFLATE_SUCCESS && in_used == cn && out_n == cap;
}

/* Damage number `trial` (of 6 kinds) done to a copy of c in d (room for cn + 8 bytes); returns its length. */
static size_t damage(const uint8_t *c, size_t cn, uint8_t *d, int trial) {
    memcpy(d, c, cn);
    size_t dn = cn;
    switch (trial % 6) {
    case 0: /* one bit early (a header) */ d[rnd() % (cn < 64 ? cn : 64)] ^= (uint8_t)(1u << (rnd() % 8)); break;
    case 1: d[rnd() % cn] ^= (uint8_t)(1u << (rnd() % 8)); break;
    case 2: for (int k = 0; k < 8; k++) d[rnd() % cn] = (uint8_t)rnd(); break;
    case 3: dn = rnd() % cn; break; /* truncated */
    case 4: for (int k = 0; k < 8; k++) d[cn + k] = (uint8_t)rnd(); dn = cn + 8; break; /* trailing */
    default: memset(d + rnd() % (cn / 2), 0xff, 16); break;
    }
    return dn;
}

#endif
