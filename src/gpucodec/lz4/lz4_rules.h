/* The LZ4 block format's rules (lz4's Block_format.md), as one step over a block's next sequence that checks
 * every length and offset (zg_lz4_next), and a walk over the whole block that may also decode: shared by the
 * host check (frames.c, numcodecs LZ4 chunks), the GPU check kernel (kernels.cu, blosc's LZ4 streams before
 * nvCOMP, which assumes valid input, decodes them), zgpu's GPU LZ4 decoder (kernels.cu, blosc's LZ4 streams by
 * default, which steps through sequences with zg_lz4_next) and the CPU unit tests, which compare the walk's
 * output with liblz4's. A check that fails stops before anything is written out of bounds. Header-only: static
 * inline, __host__ __device__ under nvcc. */
#ifndef ZG_LZ4_RULES_H
#define ZG_LZ4_RULES_H
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define ZG_LZ4_FN static __host__ __device__ inline
#else
#define ZG_LZ4_FN static inline
#endif

enum {
    ZG_LZ4_OK = 0,
    ZG_LZ4_E_EMPTY,        /* empty block */
    ZG_LZ4_E_SEQ_END,      /* the block ends inside a sequence */
    ZG_LZ4_E_LIT_LEN,      /* the literal length runs past the end */
    ZG_LZ4_E_LIT_PAST,     /* the literals run past the block end */
    ZG_LZ4_E_TOO_LONG,     /* decodes to more than expected */
    ZG_LZ4_E_OFF_TRUNC,    /* truncated match offset */
    ZG_LZ4_E_OFFSET,       /* match offset 0 or before the output's start */
    ZG_LZ4_E_MATCH_LEN,    /* the match length runs past the end */
    ZG_LZ4_E_SIZE          /* decodes to fewer bytes than expected */
};

/* Positions and lengths: 32 bits on the device (blosc's blocks are under 2 GiB; the walk refuses larger ones
 * there), which keeps the chain of dependent steps short; size_t on the host (whole numcodecs chunks). The
 * block's bytes are read where they are (on the device through the read-only cache: a warp's lanes read the
 * same byte, and a sequence's bytes mostly share a cache line), never past the block's end. */
#ifdef __CUDA_ARCH__
typedef uint32_t zg_lz4_size;
#define ZG_LZ4_LOAD(p, i) __ldg((p) + (i))
#else
typedef size_t zg_lz4_size;
#define ZG_LZ4_LOAD(p, i) ((p)[i])
#endif

/* One sequence: literals block[lit_ip, + lit) to out[op, + lit), then (unless last) a match of ml bytes
 * copying from `offset` bytes back (ml 0: the block's last sequence, literals only). */
typedef struct zg_lz4_seq {
    zg_lz4_size lit_ip, lit, op, offset, ml;
} zg_lz4_seq;

/* The sequence at *ip of block p[0, n), with *op bytes decoded before it out of `expected`: every length and
 * the offset checked against the block, the output so far and the expected size. Advances *ip and *op past it
 * (on an error, to where the walk stopped). 0, or a ZG_LZ4_E_* code. */
ZG_LZ4_FN int zg_lz4_next(const uint8_t *p, zg_lz4_size n, zg_lz4_size expected, zg_lz4_size *ip_io,
                          zg_lz4_size *op_io, zg_lz4_seq *q) {
    zg_lz4_size ip = *ip_io, op = *op_io;
    int e = ZG_LZ4_OK;
    q->ml = 0;
    q->offset = 0;
    do {
        if (ip >= n) {
            e = ZG_LZ4_E_SEQ_END;
            break;
        }
        const unsigned token = ZG_LZ4_LOAD(p, ip++);
        zg_lz4_size lit = token >> 4;
        if (lit == 15) {
            unsigned b;
            do {
                if (ip >= n) {
                    e = ZG_LZ4_E_LIT_LEN;
                    break;
                }
                b = ZG_LZ4_LOAD(p, ip++);
                lit += b;
            } while (b == 255 && lit <= n); /* (past n the check below fails: stop before lit could wrap) */
            if (e) break;
        }
        if (lit > n - ip) {
            e = ZG_LZ4_E_LIT_PAST;
            break;
        }
        if (lit > expected - op) {
            e = ZG_LZ4_E_TOO_LONG;
            ip += lit;
            op += lit;
            break;
        }
        q->lit_ip = ip;
        q->lit = lit;
        q->op = op;
        ip += lit;
        op += lit;
        if (ip == n) break; /* the last sequence holds literals only */
        if (n - ip < 2) {
            e = ZG_LZ4_E_OFF_TRUNC;
            break;
        }
        const zg_lz4_size offset = (zg_lz4_size)(ZG_LZ4_LOAD(p, ip) | (unsigned)ZG_LZ4_LOAD(p, ip + 1) << 8);
        if (offset == 0 || offset > op) {
            e = ZG_LZ4_E_OFFSET;
            break;
        }
        ip += 2;
        zg_lz4_size ml = token & 15;
        if (ml == 15) {
            unsigned b;
            do {
                if (ip >= n) {
                    e = ZG_LZ4_E_MATCH_LEN;
                    break;
                }
                b = ZG_LZ4_LOAD(p, ip++);
                ml += b;
            } while (b == 255 && ml <= expected); /* (past expected the check below fails) */
            if (e) break;
        }
        if (ml + 4 > expected - op) {
            e = ZG_LZ4_E_TOO_LONG;
            op += ml + 4;
            break;
        }
        q->offset = offset;
        q->ml = ml + 4;
        op += ml + 4;
    } while (0);
    *ip_io = ip;
    *op_io = op;
    return e;
}

/* A block's sizes as the walk takes them (32 bits on the device, see zg_lz4_size): 0, or the error a walk of it
 * fails with before its first sequence (too large for the device; empty). */
ZG_LZ4_FN int zg_lz4_begin(size_t n_bytes, size_t expected_bytes, zg_lz4_size *n, zg_lz4_size *expected) {
    *n = *expected = 0;
#ifdef __CUDA_ARCH__
    if (n_bytes >= 0x80000000u || expected_bytes >= 0x80000000u) return ZG_LZ4_E_TOO_LONG;
#endif
    if (n_bytes == 0) return ZG_LZ4_E_EMPTY;
    *n = (zg_lz4_size)n_bytes;
    *expected = (zg_lz4_size)expected_bytes;
    return ZG_LZ4_OK;
}

/* Walks block p[0, n) that must decode to exactly `expected` bytes, sequence by sequence (zg_lz4_next); out:
 * NULL to check only, or where to decode (host only: the GPU decoder, kernels.cu, copies a warp-wide batch of
 * sequences at a time). On the device every lane of a warp may walk the same block together. On an error,
 * *ip / *op say where (input position, output bytes so far). */
ZG_LZ4_FN int zg_lz4_walk(const uint8_t *p, size_t n_bytes, size_t expected_bytes, uint8_t *out, size_t *ip_out,
                          size_t *op_out) {
    zg_lz4_size n, expected, ip = 0, op = 0;
    int e = zg_lz4_begin(n_bytes, expected_bytes, &n, &expected);
    while (!e) {
        zg_lz4_seq q;
        e = zg_lz4_next(p, n, expected, &ip, &op, &q);
        if (e) break;
        if (out) {
            for (zg_lz4_size k = 0; k < q.lit; k++) out[q.op + k] = p[q.lit_ip + k];
            /* (a match may overlap its source: byte by byte, forward) */
            for (zg_lz4_size k = 0, m = q.op + q.lit; k < q.ml; k++) out[m + k] = out[m - q.offset + k];
        }
        if (!q.ml) break; /* the last sequence */
    }
    if (!e && op != expected) e = ZG_LZ4_E_SIZE;
    *ip_out = ip;
    *op_out = op;
    return e;
}

#endif
