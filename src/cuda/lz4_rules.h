/* The LZ4 block format's rules (lz4's Block_format.md), as one walk over a block's sequences that checks every
 * length and offset, and, given an output, decodes as it goes: shared by the host check (frames.c, numcodecs
 * LZ4 chunks), the GPU check kernel (kernels.cu, blosc's LZ4 streams before nvCOMP, which assumes valid input,
 * decodes them), zgpu's GPU LZ4 decoder (kernels.cu, blosc's LZ4 streams by default) and the CPU unit test that
 * compares the walk's output with liblz4's. A check that fails stops the walk before anything is written out of
 * bounds. Header-only: static inline, __host__ __device__ under nvcc. */
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
/* Positions and lengths: 32 bits on the device (blosc's blocks are under 2 GiB; the kernels refuse larger
 * ones), which keeps the walk's chain of dependent steps short; size_t on the host (whole numcodecs chunks). */
#ifdef __CUDA_ARCH__
typedef uint32_t zg_lz4_size;
#else
typedef size_t zg_lz4_size;
#endif
typedef struct zg_lz4_src {
    const uint8_t *p;
    uint8_t *ring;  /* NULL: read p[i] */
    zg_lz4_size lo; /* first byte held, counted from base */
    zg_lz4_size n;
    uintptr_t base;  /* the 16-byte boundary at or below p */
    zg_lz4_size off; /* p - base */
} zg_lz4_src;

/* Makes the ring hold block bytes [i, i + m) (m <= ZG_LZ4_RING - 16; the whole warp calls with the same i, m). */
ZG_LZ4_FN void zg_lz4_need(zg_lz4_src *s, zg_lz4_size i, zg_lz4_size m) {
#ifdef __CUDA_ARCH__
    const zg_lz4_size k = i + s->off;
    if (k - s->lo >= ZG_LZ4_RING || k + m - s->lo > ZG_LZ4_RING) { /* (below lo wraps around too) */
        s->lo = k & ~(zg_lz4_size)15;
        const zg_lz4_size c = 16 * (threadIdx.x & 31);
        __syncwarp(); /* every lane is done reading the ring */
        if (s->lo + c < s->off + s->n) { /* copies up to the block's end */
            const uint32_t sa = (uint32_t)__cvta_generic_to_shared(s->ring + ((s->lo + c) % ZG_LZ4_RING));
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(s->base + s->lo + c) : "memory");
        }
        asm volatile("cp.async.wait_all;\n" ::: "memory");
        __syncwarp();
    }
#else
    (void)s, (void)i, (void)m;
#endif
}

ZG_LZ4_FN unsigned zg_lz4_byte(zg_lz4_src *s, zg_lz4_size i) {
#ifdef __CUDA_ARCH__
    if (s->ring) {
        zg_lz4_need(s, i, 1);
        return s->ring[(i + s->off) % ZG_LZ4_RING];
    }
#endif
    return s->p[i];
}

/* Where a decoding walk writes: out[0, expected). On the device the whole warp copies, lane l every 32nd byte,
 * and also keeps the output's last ZG_LZ4_WIN bytes in shared memory (win[x % ZG_LZ4_WIN] = out[x]), where a
 * match reads its source when it can (a short offset and length; blosc's float and image streams: 78-96% of
 * their matches reach back at most 2 KiB) rather than waiting on global memory for bytes just written. */
#define ZG_LZ4_WIN 4096
typedef struct zg_lz4_dst {
    uint8_t *out;
    uint8_t *win; /* device: ZG_LZ4_WIN bytes of shared memory; host: unused */
} zg_lz4_dst;

/* Literals: block bytes [ip, ip + lit) to out[op, op + lit), which the walk has checked are in bounds. */
ZG_LZ4_FN void zg_lz4_put_literals(zg_lz4_src *s, const zg_lz4_dst *d, zg_lz4_size ip, zg_lz4_size op,
                                   zg_lz4_size lit) {
#ifdef __CUDA_ARCH__
    const unsigned lane = threadIdx.x & 31;
    for (zg_lz4_size done = 0; done < lit; done += 256) { /* through the ring, 256 bytes at a time */
        const zg_lz4_size m = lit - done < 256 ? lit - done : 256;
        zg_lz4_need(s, ip + done, m);
        for (zg_lz4_size k = lane; k < m; k += 32) {
            const uint8_t b = s->ring[(ip + done + k + s->off) % ZG_LZ4_RING];
            d->out[op + done + k] = b;
            d->win[(op + done + k) % ZG_LZ4_WIN] = b;
        }
    }
#else
    for (zg_lz4_size k = 0; k < lit; k++) d->out[op + k] = s->p[ip + k];
#endif
}

/* Match: out[op, op + len) := the bytes `offset` back (offset <= op, op + len in bounds: checked), which may
 * overlap the destination: byte k copies op - offset + k % offset, written before the match starts. */
ZG_LZ4_FN void zg_lz4_put_match(const zg_lz4_dst *d, zg_lz4_size op, zg_lz4_size offset, zg_lz4_size len) {
#ifdef __CUDA_ARCH__
    const unsigned lane = threadIdx.x & 31;
    __syncwarp(); /* the bytes written so far, by every lane, are visible */
    /* r = k % offset, kept up to date as k steps by 32 (a division only for offsets under 32) */
    const uint32_t step = offset >= 32 ? 32 : 32 % offset;
    uint32_t r = lane < offset ? lane : lane % offset;
    const zg_lz4_size src = op - offset;
    /* the window holds out[op - WIN, op); a match's writes there stay clear of its sources while offset + len
     * <= WIN */
    if (offset + len <= ZG_LZ4_WIN) {
        for (zg_lz4_size k = lane; k < len; k += 32) {
            const uint8_t b = d->win[(src + r) % ZG_LZ4_WIN];
            d->out[op + k] = b;
            d->win[(op + k) % ZG_LZ4_WIN] = b;
            r += step;
            if (r >= offset) r -= offset;
        }
    } else {
        for (zg_lz4_size k = lane; k < len; k += 32) { /* (k and k + WIN fall to one lane: the last write wins) */
            const uint8_t b = d->out[src + r];
            d->out[op + k] = b;
            d->win[(op + k) % ZG_LZ4_WIN] = b;
            r += step;
            if (r >= offset) r -= offset;
        }
    }
    __syncwarp();
#else
    for (zg_lz4_size k = 0; k < len; k++) d->out[op + k] = d->out[op - offset + k];
#endif
}

/* Walks block p[0, n) that must decode to exactly `expected` bytes (ring: NULL, or on the device ZG_LZ4_RING
 * bytes of shared memory, with the whole warp calling). dst: NULL to check only, or where to decode (on the
 * device with a ring and a window). On an error, *ip / *op say where (input position, output bytes so far). */
ZG_LZ4_FN int zg_lz4_walk(const uint8_t *p, size_t n_bytes, size_t expected_bytes, uint8_t *ring,
                          const zg_lz4_dst *dst, size_t *ip_out, size_t *op_out) {
#ifdef __CUDA_ARCH__
    if (n_bytes >= 0x80000000u || expected_bytes >= 0x80000000u) /* (see zg_lz4_size) */
        return *ip_out = 0, *op_out = 0, ZG_LZ4_E_TOO_LONG;
#endif
    const zg_lz4_size n = (zg_lz4_size)n_bytes, expected = (zg_lz4_size)expected_bytes;
    const uintptr_t base = (uintptr_t)p & ~(uintptr_t)15;
    zg_lz4_src src = {p, ring, (zg_lz4_size)-1 / 2, (zg_lz4_size)n, base, (zg_lz4_size)((uintptr_t)p - base)};
    zg_lz4_src *S = &src;
    zg_lz4_size ip = 0, op = 0;
    int e = ZG_LZ4_OK;
    if (n == 0) e = ZG_LZ4_E_EMPTY;
    while (!e) {
        if (ip >= n) {
            e = ZG_LZ4_E_SEQ_END;
            break;
        }
        const unsigned token = zg_lz4_byte(S, ip++);
        zg_lz4_size lit = token >> 4;
        if (lit == 15) {
            unsigned b;
            do {
                if (ip >= n) return *ip_out = ip, *op_out = op, ZG_LZ4_E_LIT_LEN;
                b = zg_lz4_byte(S, ip++);
                lit += b;
            } while (b == 255 && lit <= n); /* (past n the check below fails: stop before lit could wrap) */
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
        if (dst) zg_lz4_put_literals(S, dst, ip, op, lit);
        ip += lit;
        op += lit;
        if (ip == n) break; /* the last sequence holds literals only */
        if (n - ip < 2) {
            e = ZG_LZ4_E_OFF_TRUNC;
            break;
        }
        const zg_lz4_size offset = (zg_lz4_size)(zg_lz4_byte(S, ip) | zg_lz4_byte(S, ip + 1) << 8);
        if (offset == 0 || offset > op) {
            e = ZG_LZ4_E_OFFSET;
            break;
        }
        ip += 2;
        zg_lz4_size ml = token & 15;
        if (ml == 15) {
            unsigned b;
            do {
                if (ip >= n) return *ip_out = ip, *op_out = op, ZG_LZ4_E_MATCH_LEN;
                b = zg_lz4_byte(S, ip++);
                ml += b;
            } while (b == 255 && ml <= expected); /* (past expected the check below fails) */
        }
        if (ml + 4 > expected - op) {
            e = ZG_LZ4_E_TOO_LONG;
            op += ml + 4;
            break;
        }
        if (dst) zg_lz4_put_match(dst, op, offset, ml + 4);
        op += ml + 4;
    }
    if (!e && op != expected) e = ZG_LZ4_E_SIZE;
    *ip_out = ip;
    *op_out = op;
    return e;
}

#endif
