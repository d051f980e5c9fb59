/* zgpu's LZ4 block encoder for inputs up to 128 KiB (blosc's LZ4 streams, small numcodecs LZ4 chunks), from the
 * matches of zgpu's zstd matcher (zstd_encode.h: one warp, 32 lanes of 4 KiB, the array's strides as offsets).
 * nvCOMP's LZ4 compressor bounded blosc-lz4 device writes (~10 GB/s); this one writes each sequence at a byte offset
 * the lanes sum up, so all lanes write at once. Larger chunks keep nvCOMP's (a chunk is one LZ4 block, whose
 * literal runs would cross this encoder's 128 KiB blocks).
 *
 * LZ4's rules (lz4_Block_format.md): matches of 4 bytes or more, offsets 1..65535, the last 5 bytes literals, the
 * last match starting at least 12 bytes before the end; the block ends with a sequence of literals alone.
 *
 * Header-only (static inline, __host__ __device__ under nvcc): tests/unit/test_lz4_encode.c decodes what the CPU
 * reference writes with liblz4, and the GPU must write the same bytes. */
#ifndef ZG_LZ4_ENCODE_H
#define ZG_LZ4_ENCODE_H
#include <stddef.h>
#include <stdint.h>

#include "gpuencode/zstd_encode.h"

#define ZG_LZ_MAX_INPUT ZG_ZE_BLOCK_BYTES
#define ZG_LZ_MIN_MATCH 4u
#define ZG_LZ_MAX_OFFSET 65535u

/* Hints a block can use: offsets LZ4 can send. */
ZG_ZE_FN zg_ze_hints zg_lz_hints(zg_ze_hints h) {
    for (uint32_t k = 0; k < ZG_ZE_HINTS; k++)
        if (h.off[k] > ZG_LZ_MAX_OFFSET) h.off[k] = 0;
    return zg_ze_hints_clean(h);
}

/* LZ4's rules on the joined sequences seqs[0, *ns) of a block of n bytes (*tail literals after them), in two passes
 * (the kernel runs the first with the whole warp, lz4_encode_kernels.cu). First: matches below 4 bytes become
 * literals of the next sequence kept; returns the bytes the kept sequences cover (n - *tail - the literals left
 * after the last kept one). */
ZG_ZE_FN uint32_t zg_lz_fix_short(zg_ze_seq *seqs, uint32_t *ns, uint32_t tail, uint32_t n) {
    uint32_t k = 0, carry = 0;
    for (uint32_t i = 0; i < *ns; i++) {
        zg_ze_seq q = seqs[i];
        if (q.len < ZG_LZ_MIN_MATCH) {
            carry += q.lit + q.len;
            continue;
        }
        q.lit += carry;
        carry = 0;
        seqs[k++] = q;
    }
    *ns = k;
    return n - tail - carry;
}

/* Second: the end rules on seqs[0, *ns), covering `end` bytes: the last match starts 12 bytes or more before the
 * block's end and ends 5 or more before it (shortened, or dropped: its bytes literals of the end); *tail becomes the
 * literals after the last sequence. */
ZG_ZE_FN void zg_lz_fix_end(zg_ze_seq *seqs, uint32_t *ns, uint32_t *tail, uint32_t n, uint32_t end) {
    uint32_t k = *ns;
    while (k > 0) {
        zg_ze_seq *q = &seqs[k - 1];
        const uint32_t ms = end - q->len, before = ms - q->lit; /* its match's start; its literals' */
        if (ms + 12 <= n) {
            if (end + 5 > n) q->len = n - 5 - ms;
            if (q->len >= ZG_LZ_MIN_MATCH) {
                end = ms + q->len;
                break;
            }
        }
        end = before; /* dropped: its bytes are literals of the end */
        k--;
    }
    *ns = k;
    *tail = n - end;
}

/* Both (the CPU reference's). */
ZG_ZE_FN void zg_lz_fix(zg_ze_seq *seqs, uint32_t *ns, uint32_t *tail, uint32_t n) {
    const uint32_t end = zg_lz_fix_short(seqs, ns, *tail, n);
    zg_lz_fix_end(seqs, ns, tail, n, end);
}

/* Bytes of a length field beyond the token's 4 bits (v = the value the token's nibble starts). */
ZG_ZE_FN uint32_t zg_lz_ext_bytes(uint32_t v) { return v < 15 ? 0 : (v - 15) / 255 + 1; }

/* Bytes of a sequence of lit literals and a match of len bytes; of the last (literals alone). */
ZG_ZE_FN uint32_t zg_lz_seq_bytes(uint32_t lit, uint32_t len) {
    return 1 + zg_lz_ext_bytes(lit) + lit + 2 + zg_lz_ext_bytes(len - ZG_LZ_MIN_MATCH);
}
ZG_ZE_FN uint32_t zg_lz_last_bytes(uint32_t lit) { return 1 + zg_lz_ext_bytes(lit) + lit; }

ZG_ZE_FN uint8_t *zg_lz_put_ext(uint8_t *p, uint32_t v) {
    if (v < 15) return p;
    v -= 15;
    while (v >= 255) *p++ = 255, v -= 255;
    *p++ = (uint8_t)v;
    return p;
}

/* Writes a sequence (lits: its literal bytes) at p; returns its end. len 0: the last, literals alone. */
ZG_ZE_FN uint8_t *zg_lz_put_seq(uint8_t *p, const uint8_t *lits, uint32_t lit, uint32_t len, uint32_t off) {
    const uint32_t ml = len ? len - ZG_LZ_MIN_MATCH : 0;
    *p++ = (uint8_t)((lit < 15 ? lit : 15) << 4 | (len ? (ml < 15 ? ml : 15) : 0));
    p = zg_lz_put_ext(p, lit);
    for (uint32_t k = 0; k < lit; k++) p[k] = lits[k];
    p += lit;
    if (!len) return p;
    *p++ = (uint8_t)off;
    *p++ = (uint8_t)(off >> 8);
    return zg_lz_put_ext(p, ml);
}

/* The bytes of each lane's segment in a block of n bytes: 32 lanes share even a small block (blosc's LZ4 streams
 * are 32-64 KiB: split by the item size from blocks of 128 KiB), down to 512 bytes a lane. */
ZG_ZE_FN uint32_t zg_lz_seg_bytes(uint32_t n) {
    uint32_t s = (n + ZG_ZE_LANES - 1) / ZG_ZE_LANES;
    s = (s + 63) & ~63u;
    return s < 512 ? 512 : s > ZG_ZE_SEG_BYTES ? ZG_ZE_SEG_BYTES : s;
}

/* The most bytes the block of n bytes can take. */
ZG_ZE_FN uint32_t zg_lz_bound(uint32_t n) { return n + n / 255 + 16; }

/* The CPU reference: the LZ4 block of in[0, n) (n <= ZG_LZ_MAX_INPUT) into dst (at most zg_lz_bound(n)); its
 * size. hints through zg_lz_hints; seqs and table as zg_ze_block_ref's. */
ZG_ZE_FN uint32_t zg_lz_block_ref(const uint8_t *in, uint32_t n, const zg_ze_hints *hints, uint8_t *dst,
                                  zg_ze_seq *seqs, uint16_t *table) {
    uint32_t tail;
    uint32_t ns = zg_ze_match_block_ref(in, 0, n, zg_lz_seg_bytes(n), hints, table, seqs, &tail);
    zg_lz_fix(seqs, &ns, &tail, n);
    uint8_t *p = dst;
    uint32_t pos = 0;
    for (uint32_t i = 0; i < ns; i++) {
        p = zg_lz_put_seq(p, in + pos, seqs[i].lit, seqs[i].len, seqs[i].off);
        pos += seqs[i].lit + seqs[i].len;
    }
    p = zg_lz_put_seq(p, in + pos, tail, 0, 0);
    return (uint32_t)(p - dst);
}

#endif
