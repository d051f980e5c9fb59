/* The LZ4 block format's rules (lz4's Block_format.md), as one walk over a block's sequences that checks every
 * length and offset without decoding: shared by the host check (frames.c, numcodecs LZ4 chunks) and the GPU
 * check kernel (kernels.cu, blosc's LZ4 streams, checked on the device before nvCOMP, which assumes valid
 * input, decodes them). Header-only: static inline, __host__ __device__ under nvcc. */
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

/* Walks block p[0, n) that must decode to exactly `expected` bytes. On an error, *ip / *op say where (input
 * position, output bytes so far). */
ZG_LZ4_FN int zg_lz4_walk(const uint8_t *p, size_t n, size_t expected, size_t *ip_out, size_t *op_out) {
    size_t ip = 0, op = 0;
    int e = ZG_LZ4_OK;
    if (n == 0) e = ZG_LZ4_E_EMPTY;
    while (!e) {
        if (ip >= n) {
            e = ZG_LZ4_E_SEQ_END;
            break;
        }
        const unsigned token = p[ip++];
        size_t lit = token >> 4;
        if (lit == 15) {
            unsigned b;
            do {
                if (ip >= n) return *ip_out = ip, *op_out = op, ZG_LZ4_E_LIT_LEN;
                b = p[ip++];
                lit += b;
            } while (b == 255);
        }
        if (lit > n - ip) {
            e = ZG_LZ4_E_LIT_PAST;
            break;
        }
        ip += lit;
        op += lit;
        if (op > expected) {
            e = ZG_LZ4_E_TOO_LONG;
            break;
        }
        if (ip == n) break; /* the last sequence holds literals only */
        if (n - ip < 2) {
            e = ZG_LZ4_E_OFF_TRUNC;
            break;
        }
        const size_t offset = (size_t)p[ip] | (size_t)p[ip + 1] << 8;
        if (offset == 0 || offset > op) {
            e = ZG_LZ4_E_OFFSET;
            break;
        }
        ip += 2;
        size_t ml = token & 15;
        if (ml == 15) {
            unsigned b;
            do {
                if (ip >= n) return *ip_out = ip, *op_out = op, ZG_LZ4_E_MATCH_LEN;
                b = p[ip++];
                ml += b;
            } while (b == 255);
        }
        op += ml + 4;
        if (op > expected) e = ZG_LZ4_E_TOO_LONG;
    }
    if (!e && op != expected) e = ZG_LZ4_E_SIZE;
    *ip_out = ip;
    *op_out = op;
    return e;
}

#endif
