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

/* Where the walk reads the block's bytes: p[i], or on the device (ring != NULL) through a ring of
 * ZG_LZ4_RING bytes in shared memory that a whole warp walks together: every lane takes the same steps (so
 * the warp never diverges, as threads walking different blocks would at every branch), and a refill is one
 * 16-byte cp.async copy per lane. The ring holds block bytes [lo - off, lo - off + RING) where off is p's
 * offset from the 16-byte boundary below it (the copies are aligned); reads past the block's end stay within
 * the 16 bytes after it. */
#define ZG_LZ4_RING 512
typedef struct zg_lz4_src {
    const uint8_t *p;
    uint8_t *ring; /* NULL: read p[i] */
    size_t lo;     /* first byte held, counted from base */
    size_t n;
    uintptr_t base; /* the 16-byte boundary at or below p */
    size_t off;     /* p - base */
} zg_lz4_src;

ZG_LZ4_FN unsigned zg_lz4_byte(zg_lz4_src *s, size_t i) {
#ifdef __CUDA_ARCH__
    if (s->ring) {
        const size_t k = i + s->off;
        if (k - s->lo >= ZG_LZ4_RING) { /* (below lo wraps around too) */
            s->lo = k & ~(size_t)15;
            const size_t c = 16 * (threadIdx.x & 31);
            __syncwarp(); /* every lane is done reading the ring */
            if (s->lo + c < s->off + s->n) { /* copies up to the block's end */
                const uint32_t sa = (uint32_t)__cvta_generic_to_shared(s->ring + ((s->lo + c) % ZG_LZ4_RING));
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(s->base + s->lo + c) : "memory");
            }
            asm volatile("cp.async.wait_all;\n" ::: "memory");
            __syncwarp();
        }
        return s->ring[k % ZG_LZ4_RING];
    }
#endif
    return s->p[i];
}

/* Walks block p[0, n) that must decode to exactly `expected` bytes (ring: NULL, or on the device ZG_LZ4_RING
 * bytes of shared memory, with the whole warp calling). On an error, *ip / *op say where (input position,
 * output bytes so far). */
ZG_LZ4_FN int zg_lz4_walk(const uint8_t *p, size_t n, size_t expected, uint8_t *ring, size_t *ip_out,
                          size_t *op_out) {
    const uintptr_t base = (uintptr_t)p & ~(uintptr_t)15;
    zg_lz4_src src = {p, ring, (size_t)-1 / 2, n, base, (size_t)((uintptr_t)p - base)};
    zg_lz4_src *S = &src;
    size_t ip = 0, op = 0;
    int e = ZG_LZ4_OK;
    if (n == 0) e = ZG_LZ4_E_EMPTY;
    while (!e) {
        if (ip >= n) {
            e = ZG_LZ4_E_SEQ_END;
            break;
        }
        const unsigned token = zg_lz4_byte(S, ip++);
        size_t lit = token >> 4;
        if (lit == 15) {
            unsigned b;
            do {
                if (ip >= n) return *ip_out = ip, *op_out = op, ZG_LZ4_E_LIT_LEN;
                b = zg_lz4_byte(S, ip++);
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
        const size_t offset = (size_t)zg_lz4_byte(S, ip) | (size_t)zg_lz4_byte(S, ip + 1) << 8;
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
                b = zg_lz4_byte(S, ip++);
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
