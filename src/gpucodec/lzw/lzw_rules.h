/* TIFF's LZW (TIFF 6.0 section 13, as libtiff writes it), as plain functions shared by the host check and
 * reference decoder (lzw_check.c), zgpu's GPU decoder (lzw_kernels.cu) and the CPU tests:
 *   - codes are MSB-first, 9 to 12 bits wide; 256 is ClearCode, 257 EndOfInformation (EOI), 258... the
 *     dictionary's entries;
 *   - a segment is the codes between two ClearCodes (the stream's start counts as one). Code k of a segment
 *     (k = 0, 1, ...) is read at width zg_lzw_width(k): "early change", as libtiff writes, switches to 10, 11
 *     and 12 bits once the next free entry is 511, 1023 and 2047, so where each code of a segment starts is a
 *     function of k alone (zg_lzw_bit_at), which lets a warp read 32 codes at once;
 *   - code k >= 1 creates entry 258 + k - 1 = the string of code k - 1 followed by the first byte of code k's
 *     string (entries up to 4095; later codes of a full table create none). So a code c >= 258 refers to the
 *     entry code m + 1 created, m = c - 258, and must have m <= k - 1 (m = k - 1: KwKwK, the entry code k itself
 *     creates); its string is code m's string plus the first byte of code m + 1's, its length one more than code
 *     m's, its first byte code m's first byte;
 *   - the stream ends at EOI, where its bits run out (libtiff accepts a stream without EOI), or once the output
 *     is full (what follows is padding, as libtiff reads it, and as src/codec/tiff_lzw.c decodes on the host);
 *     it must decode to exactly the expected size: a code whose string would pass it is ZG_LZW_E_TOO_LONG,
 *     fewer bytes ZG_LZW_E_SHORT (at EOI) or ZG_LZW_E_TRUNC (out of bits).
 * Old-style LZW (libtiff before 5.0: LSB-first codes, a stream starting 0x00 0x01) is not this format
 * (zg_lzw_old_style): the GPU never takes it. Header-only: static inline, __host__ __device__ under nvcc. */
#ifndef ZG_LZW_RULES_H
#define ZG_LZW_RULES_H
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define ZG_LZW_FN static __host__ __device__ inline
#else
#define ZG_LZW_FN static inline
#endif
/* The stream's bytes are read where they are (on the device through the read-only cache: a warp's 32 codes lie
 * in 36 to 48 neighbouring bytes). */
#ifdef __CUDA_ARCH__
#define ZG_LZW_LOAD(p, i) __ldg((p) + (i))
#else
#define ZG_LZW_LOAD(p, i) ((p)[i])
#endif

enum {
    ZG_LZW_OK = 0,
    ZG_LZW_E_CODE,     /* a code refers to a dictionary entry not yet made (or the first code after a
                        * ClearCode is not a literal) */
    ZG_LZW_E_TOO_LONG, /* decodes to more bytes than expected */
    ZG_LZW_E_SHORT,    /* EOI before the expected size */
    ZG_LZW_E_TRUNC,    /* the stream's bits run out before the expected size */
    ZG_LZW_E_TOO_LARGE /* a stream or output of 2 GiB or more (the GPU decoder's positions are 32 bits) */
};

#define ZG_LZW_CLEAR 256u
#define ZG_LZW_EOI 257u
#define ZG_LZW_FIRST 258u
#define ZG_LZW_MAX_ENTRY 4095u
/* Codes of a segment that create an entry are k = 1 ... ZG_LZW_LAST_MAKER (entries 258 ... 4095); the arrays a
 * decoder keeps per code of a segment (its code, length, first byte) need ZG_LZW_SEG_CODES slots. */
#define ZG_LZW_LAST_MAKER (ZG_LZW_MAX_ENTRY - ZG_LZW_FIRST + 1u) /* 3838 */
#define ZG_LZW_SEG_CODES (ZG_LZW_LAST_MAKER + 2u)                 /* 3840 */

/* The width in bits of code k of a segment. */
ZG_LZW_FN unsigned zg_lzw_width(uint32_t k) { return k < 254u ? 9u : k < 766u ? 10u : k < 1790u ? 11u : 12u; }

/* Bits of a segment before its code k. */
ZG_LZW_FN uint64_t zg_lzw_bit_at(uint32_t k) {
    if (k <= 254u) return 9ull * k;
    if (k <= 766u) return 2286ull + 10ull * (k - 254u);
    if (k <= 1790u) return 7406ull + 11ull * (k - 766u);
    return 18670ull + 12ull * (k - 1790u);
}

/* Reads the `width`-bit code at bit `bit` of p[0, n) (MSB-first): 1 and *code, or 0 where the stream's bits run
 * out first. Reads only bytes inside p[0, n). */
ZG_LZW_FN int zg_lzw_read(const uint8_t *p, uint64_t n, uint64_t bit, unsigned width, uint32_t *code) {
    if (bit + width > 8 * n) return 0;
    const uint64_t at = bit >> 3;
    uint32_t v = (uint32_t)ZG_LZW_LOAD(p, at) << 16;
    if (at + 1 < n) v |= (uint32_t)ZG_LZW_LOAD(p, at + 1) << 8;
    if (at + 2 < n) v |= ZG_LZW_LOAD(p, at + 2);
    *code = (v >> (24u - (unsigned)(bit & 7) - width)) & ((1u << width) - 1u);
    return 1;
}

/* Whether code c may be code k of a segment: a literal, ClearCode, EOI, or an entry made before it (KwKwK: the
 * one it makes). */
ZG_LZW_FN int zg_lzw_code_ok(uint32_t c, uint32_t k) { return c < ZG_LZW_FIRST || c <= ZG_LZW_FIRST - 1u + k; }

/* Old-style LZW (LSB-first, libtiff's compatibility decoder), which libtiff recognises by its first two bytes. */
ZG_LZW_FN int zg_lzw_old_style(const uint8_t *p, size_t n) { return n >= 2 && p[0] == 0 && (p[1] & 1); }

/* The reference decoder: walks p[0, n), which must decode to exactly `expected` bytes, code by code with a
 * dictionary of (length, first byte) by code index of the segment (the layout the GPU decoder keeps): out NULL
 * to check only, else decodes there (expected bytes). Returns 0 or a ZG_LZW_E_* code; *bit_out and *op_out say
 * where it stopped (bits read, bytes decoded). seg_code, seg_len, seg_first: ZG_LZW_SEG_CODES slots each. */
ZG_LZW_FN int zg_lzw_walk_with(const uint8_t *p, size_t n, size_t expected, uint8_t *out, uint64_t *bit_out,
                               size_t *op_out, uint16_t *seg_code, uint16_t *seg_len, uint8_t *seg_first) {
    uint64_t seg = 0, bit = 0;
    size_t op = 0;
    uint32_t k = 0;
    int e = ZG_LZW_OK;
    for (;;) {
        uint32_t c;
        const unsigned w = zg_lzw_width(k);
        bit = seg + zg_lzw_bit_at(k);
        if (op == expected) break; /* (the rest is padding) */
        if (!zg_lzw_read(p, n, bit, w, &c)) {
            e = op == expected ? ZG_LZW_OK : ZG_LZW_E_TRUNC;
            break;
        }
        if (c == ZG_LZW_EOI) {
            bit += w;
            e = op == expected ? ZG_LZW_OK : ZG_LZW_E_SHORT;
            break;
        }
        if (c == ZG_LZW_CLEAR) {
            seg = bit + w;
            k = 0;
            continue;
        }
        if (!zg_lzw_code_ok(c, k)) {
            e = ZG_LZW_E_CODE;
            break;
        }
        uint32_t len;
        uint8_t first;
        if (c < 256u) {
            len = 1;
            first = (uint8_t)c;
        } else {
            const uint32_t m = c - ZG_LZW_FIRST;
            len = seg_len[m] + 1u;
            first = seg_first[m];
        }
        if (len > expected - op) {
            e = ZG_LZW_E_TOO_LONG;
            break;
        }
        if (k < ZG_LZW_SEG_CODES) {
            seg_code[k] = (uint16_t)c;
            seg_len[k] = (uint16_t)len;
            seg_first[k] = first;
        }
        if (out) { /* backwards along the entries: the last byte of entry (m + 1) is code m + 1's first byte */
            size_t at = op + len - 1;
            uint32_t cur = c;
            while (cur >= ZG_LZW_FIRST) {
                const uint32_t m = cur - ZG_LZW_FIRST;
                out[at--] = seg_first[m + 1];
                cur = seg_code[m];
            }
            out[at] = (uint8_t)cur;
        }
        op += len;
        k++;
    }
    *bit_out = bit;
    *op_out = op;
    return e;
}

/* ---- the segmented decode (lzw_kernels.cu's path for waves of few, large streams; its CPU model is in
 * test_lzw_check.c). A stream is cut at its ClearCodes into segments that decode side by side: a boundary pass
 * records each segment's first bit and its codes before the special code that ends it; a lengths pass the bytes
 * its codes decode to (dictionary lengths only) and whether one of its codes is bad; then a segment decodes into
 * the sum of the lengths before it. The first segment that "decides" the stream (zg_lzw_seg_decides: it ends at
 * EOI or where the bits run out, holds a bad code, or the output is full by its end) decodes exactly as the
 * serial walk from its start and gives the stream's status; the segments after it are not decoded. A stream with
 * more segments than its slots has its last slot "open": that segment decodes serially to the end. */
enum {
    ZG_LZW_SEG_FINAL = 1u, /* ends at EOI, out of bits, or is the open last slot: no ClearCode after it */
    ZG_LZW_SEG_BAD = 2u    /* (lengths pass) one of its codes refers to an entry not yet made */
};
typedef struct zg_lzw_seg {
    uint64_t bit;   /* its first code's bit in the stream */
    uint32_t codes; /* its codes before the special code that ends it (FINAL: unused) */
    uint32_t len;   /* bytes its codes (those before a bad one) decode to, at most the stream's expected size */
    uint32_t kind;  /* ZG_LZW_SEG_* bits */
    uint32_t pad;
} zg_lzw_seg;

/* Whether the segment at output offset `at` decides its stream (see above). */
ZG_LZW_FN int zg_lzw_seg_decides(uint32_t kind, uint64_t at, uint32_t len, uint64_t expected) {
    return (kind & (ZG_LZW_SEG_FINAL | ZG_LZW_SEG_BAD)) != 0 || at + len >= expected;
}

#endif
