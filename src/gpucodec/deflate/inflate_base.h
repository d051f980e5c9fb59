/* zgpu's DEFLATE decoder, part 1 of 6 (inflate_rules.h is the whole and says how it works): the host / device
 * function qualifiers, the block's shape, the error codes, and the bit reader. C and C++ compatible. */
#ifndef ZG_INFLATE_BASE_H
#define ZG_INFLATE_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define ZI_FN static __host__ __device__ inline
#define ZI_HOT static __host__ __device__ __forceinline__ /* serial mode's token loop: its reader in registers */
#else
#define ZI_FN static inline
#define ZI_HOT static inline
#endif
#ifdef __CUDA_ARCH__
#define ZI_ATOMIC_MIN(p, v) atomicMin((p), (v))
#define ZI_ATOMIC_MAX(p, v) atomicMax((p), (v))
#else
#define ZI_ATOMIC_MIN(p, v) (*(p) = *(p) < (v) ? *(p) : (v))
#define ZI_ATOMIC_MAX(p, v) (*(p) = *(p) > (v) ? *(p) : (v))
#endif

/* Adds v to *p (shared memory on the GPU) and returns the value before. */
ZI_FN uint32_t zi_fetch_add(uint32_t *p, uint32_t v) {
#ifdef __CUDA_ARCH__
    return atomicAdd(p, v);
#else
    const uint32_t old = *p;
    *p = old + v;
    return old;
#endif
}

/* The block's shape. H100, test_gpu_inflate's 64 x 8 MiB batches (noisy 16-bit image, zlib / floats, libdeflate),
 * GB/s: 512 lanes x 256 bits, one block an SM: 12.2 / 7.6; 256 x 512, two: 14.3 / 10.1; 256 x 256, two: 15.8 /
 * 13.6 (two blocks hide each other's barriers and shared-memory waits; highly compressible labels, which read
 * on host threads by default, 9.3 -> 6.8). 512 lanes cannot run two blocks an SM: 125 KiB of shared memory.
 * Three blocks of 256 x 256 an SM (zi_shared 85 -> 67 KB, registers capped at 80, no spills), 64 real chunks
 * (ZGPU_INFLATE_SAMPLE): oct 14.5 -> 16.4, field 14.8 -> 16.7 GB/s; the waits of one chain of dependent steps a
 * lane are what more blocks hide. */
#ifndef ZI_NL
#define ZI_NL 256        /* lanes (threads) per stream */
#endif
#ifndef ZI_SEG_BITS
#define ZI_SEG_BITS 256  /* bits each lane starts apart */
#endif
#ifndef ZI_BLOCKS_PER_SM
#define ZI_BLOCKS_PER_SM 3 /* decode blocks an SM should hold at once (__launch_bounds__: caps the registers;
                           * zi_shared must fit that many too) */
#endif
#define ZI_ABSORB 8      /* successors a lane may pass through when it cannot meet the next one's path (labels: 2 -> 8 cut their windows 838 -> 240 a chunk) */
#define ZI_MCAP 4096     /* matches a list window may hold (zi_scan_cut ends it before; a first lane alone,
                          * ZI_SEG_BITS * (1 + ZI_ABSORB) + 48 bits, holds under 2400) */
#define ZI_LROOT 10      /* literal/length table: 2^10 first-level entries, then subtables */
#define ZI_LCAP 2560     /* >= 1024 + the subtables of any valid code (288 symbols, codes <= 15 bits) */
#define ZI_DROOT 8
#define ZI_DCAP 768      /* >= 256 + the subtables of any valid distance code (32 symbols) */
#ifndef ZI_MAX_PARTS
/* parts a stream may be split into (see inflate_parts.h; H100, field gzip read in 3 waves of 22 chunks: 8 -> 12 parts
 * 12.4 -> 13.9 GB/s; 16 forced: slower, oct 6 GB/s, not looked into) */
#define ZI_MAX_PARTS 12
#endif
#ifndef ZI_SERIAL_RATIO
#define ZI_SERIAL_RATIO 8u /* streams decoding to this many times their size or more: serial mode */
#endif
#ifndef ZI_SB
#define ZI_SB 32
#endif           /* serial mode: tokens a batch */
#ifndef ZI_SSPAN
#define ZI_SSPAN 1024
#endif      /* serial mode: a batch ends once it decodes to this many bytes (plus its last token) */
#ifndef ZI_SWIN
#define ZI_SWIN 4096
#endif       /* serial mode: the copier's window of the output's last bytes (shared memory) */
#define ZI_MAX_BYTES 0x0fffffffu /* streams and outputs under 256 MiB: bit positions (+ a window) fit 32 bits */

/* Per-stream error codes (0 = fine); zi_error_text() names them. */
enum {
    ZI_OK = 0,
    ZI_E_BTYPE,      /* reserved block type 3 */
    ZI_E_STORED,     /* stored block length does not match its complement */
    ZI_E_HEADER,     /* dynamic block header: invalid code-length code or code-length sequence */
    ZI_E_CODE,       /* a Huffman code is over-subscribed or incomplete */
    ZI_E_NO_EOB,     /* the literal/length code has no end-of-block symbol */
    ZI_E_SYMBOL,     /* a literal/length or distance code with no meaning (unused, 286-287, 30-31) */
    ZI_E_DIST,       /* a match reaches back before the start of the output */
    ZI_E_OVERFLOW,   /* the stream decodes to more bytes than expected */
    ZI_E_TRUNC,      /* the stream ends inside a block */
    ZI_E_SIZE,       /* the final block ends before the expected size is reached */
    ZI_E_TRAILING,   /* bytes follow the final block */
    ZI_E_TOO_BIG     /* stream or output larger than the decoder handles (ZI_MAX_BYTES) */
};

ZI_FN const char *zi_error_text(int e) {
    switch (e) {
    case ZI_E_BTYPE: return "reserved block type 3";
    case ZI_E_STORED: return "stored block length does not match its complement";
    case ZI_E_HEADER: return "invalid dynamic block header (code-length code or code lengths)";
    case ZI_E_CODE: return "over-subscribed or incomplete Huffman code";
    case ZI_E_NO_EOB: return "literal/length code without an end-of-block symbol";
    case ZI_E_SYMBOL: return "invalid literal/length or distance symbol";
    case ZI_E_DIST: return "match distance reaches before the start of the output";
    case ZI_E_OVERFLOW: return "decodes to more bytes than expected";
    case ZI_E_TRUNC: return "stream ends inside a block";
    case ZI_E_SIZE: return "decodes to fewer bytes than expected";
    case ZI_E_TRAILING: return "data after the final block";
    case ZI_E_TOO_BIG: return "stream too large for the GPU decoder";
    default: return "valid";
    }
}

/* ------------------------------------------------------------------------------------------------ bits */
/* LSB-first reader: buf holds the stream's bits [pos, pos + avail); bytes past the end read as zero (callers
 * compare pos with the stream's bit count). */
typedef struct zi_br {
    const uint8_t *p;
    uint32_t n;     /* bytes */
    uint32_t next;  /* next byte to load */
    uint32_t pos;   /* bit position of buf's bit 0 */
    uint32_t avail; /* valid bits in buf */
    uint64_t buf;
} zi_br;

ZI_FN uint32_t zi_load32(const uint8_t *p, uint32_t n, uint32_t at) {
    if (at + 4 <= n) {
#ifdef __CUDA_ARCH__
        const uintptr_t a = (uintptr_t)(p + at);
        const uint32_t *w = (const uint32_t *)(a & ~(uintptr_t)3);
        const uint32_t sh = (uint32_t)(a & 3) * 8;
        return sh ? __funnelshift_r(w[0], w[1], sh) : w[0]; /* w[1] holds a byte below p + n when sh > 0 */
#else
        return (uint32_t)p[at] | (uint32_t)p[at + 1] << 8 | (uint32_t)p[at + 2] << 16 | (uint32_t)p[at + 3] << 24;
#endif
    }
    uint32_t v = 0;
    for (uint32_t i = 0; i < 4; i++)
        if (at + i < n) v |= (uint32_t)p[at + i] << (8 * i);
    return v;
}

ZI_FN void zi_refill(zi_br *b) { /* afterwards avail >= 32 */
    if (b->avail < 32) {
        b->buf |= (uint64_t)zi_load32(b->p, b->n, b->next) << b->avail;
        b->next += 4;
        b->avail += 32;
    }
}

ZI_FN void zi_br_init(zi_br *b, const uint8_t *p, uint32_t n, uint32_t bitpos) {
    b->p = p;
    b->n = n;
    b->next = bitpos >> 3;
    b->avail = 0;
    b->buf = 0;
    zi_refill(b);
    b->buf >>= bitpos & 7;
    b->avail -= bitpos & 7;
    b->pos = bitpos;
}

ZI_FN uint32_t zi_bits(zi_br *b, uint32_t k) { /* k <= 32, after a refill */
    const uint32_t v = (uint32_t)(b->buf & ((1ull << k) - 1));
    b->buf >>= k;
    b->avail -= k;
    b->pos += k;
    return v;
}

ZI_FN uint32_t zi_get(zi_br *b, uint32_t k) { /* k <= 25: refills first */
    zi_refill(b);
    return zi_bits(b, k);
}

#endif
