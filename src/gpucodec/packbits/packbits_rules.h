/* TIFF's PackBits (TIFF 6.0 section 9), as plain functions shared by the reference decoder (packbits_check.c),
 * zgpu's GPU decoder (packbits_kernels.cu) and the CPU tests. A stream is runs, each a header byte h: 0..127, the
 * next h + 1 bytes as they are; 129..255 (-127..-1), the next byte 257 - h times; 128, nothing. As libtiff
 * decodes a tile, the stream stops where the output is full (bytes after that are ignored); a run that would
 * pass the expected size is ZG_PB_E_TOO_LONG, a stream ending before it ZG_PB_E_SHORT, a run cut off by the
 * stream's end ZG_PB_E_TRUNC. Header-only: static inline, __host__ __device__ under nvcc. */
#ifndef ZG_PACKBITS_RULES_H
#define ZG_PACKBITS_RULES_H
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define ZG_PB_FN static __host__ __device__ inline
#else
#define ZG_PB_FN static inline
#endif
#ifdef __CUDA_ARCH__
#define ZG_PB_LOAD(p, i) __ldg((p) + (i))
#else
#define ZG_PB_LOAD(p, i) ((p)[i])
#endif

enum {
    ZG_PB_OK = 0,
    ZG_PB_E_TRUNC,    /* a run is cut off by the stream's end */
    ZG_PB_E_TOO_LONG, /* a run would pass the expected size */
    ZG_PB_E_SHORT,    /* the stream ends before the expected size */
    ZG_PB_E_TOO_LARGE /* a stream or output of 2 GiB or more (the GPU decoder's positions are 32 bits) */
};

/* One run: `len` output bytes, from the stream at `src` (literal) or the byte `fill` repeated. */
typedef struct zg_pb_run {
    uint32_t src, len;
    int literal;
    uint8_t fill;
} zg_pb_run;

/* The run at *ip of p[0, n), with *op of `expected` bytes decoded before it: 0 and *r (len 0: a no-op header),
 * *ip and *op past it; or a ZG_PB_E_* code. The caller stops when *op == expected, or *ip == n (short). */
ZG_PB_FN int zg_pb_next(const uint8_t *p, uint32_t n, uint32_t expected, uint32_t *ip, uint32_t *op, zg_pb_run *r) {
    const uint32_t h = ZG_PB_LOAD(p, *ip);
    r->len = 0;
    r->literal = h < 128;
    r->fill = 0;
    if (h < 128) {
        r->len = h + 1;
        r->src = *ip + 1;
        if (r->len > n - r->src) return ZG_PB_E_TRUNC;
        *ip = r->src + r->len;
    } else if (h > 128) {
        r->len = 257 - h;
        if (n - *ip < 2) return ZG_PB_E_TRUNC;
        r->src = *ip + 1;
        r->fill = ZG_PB_LOAD(p, *ip + 1);
        *ip += 2;
    } else {
        *ip += 1;
    }
    if (r->len > expected - *op) return ZG_PB_E_TOO_LONG;
    *op += r->len;
    return ZG_PB_OK;
}

/* The reference decoder: p[0, n) into out (NULL: check only), which must receive exactly `expected` bytes.
 * Returns 0 or a ZG_PB_E_* code, *ip_out / *op_out where it stopped. */
ZG_PB_FN int zg_pb_walk(const uint8_t *p, size_t n_bytes, size_t expected_bytes, uint8_t *out, size_t *ip_out,
                        size_t *op_out) {
    uint32_t ip = 0, op = 0;
    int e = ZG_PB_OK;
    if (n_bytes >= 0x80000000u || expected_bytes >= 0x80000000u) e = ZG_PB_E_TOO_LARGE;
    const uint32_t n = (uint32_t)n_bytes, expected = (uint32_t)expected_bytes;
    while (!e && op < expected) {
        if (ip >= n) {
            e = ZG_PB_E_SHORT;
            break;
        }
        zg_pb_run r;
        const uint32_t at = op;
        e = zg_pb_next(p, n, expected, &ip, &op, &r);
        if (!e && out)
            for (uint32_t t = 0; t < r.len; t++) out[at + t] = r.literal ? p[r.src + t] : r.fill;
    }
    *ip_out = ip;
    *op_out = op;
    return e;
}

#endif
