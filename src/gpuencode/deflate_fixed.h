/* zgpu's own DEFLATE encoding of a gzip / zlib piece (deflate_pieces.h) as one fixed-Huffman block (RFC 1951
 * 3.2.6), from the matches of zgpu's zstd matcher (zstd_encode.h: a warp's lanes, the array's strides as offsets).
 * nvCOMP's Deflate caps highly redundant data (labels: 27.5:1 against zlib's 42.3:1); where this encoding is
 * shorter than nvCOMP's for a piece, it replaces it (encode_kernels.cu), so every piece is the shorter of the two.
 * Fixed codes cost 8-9 bits a literal, so on noisy data nvCOMP's dynamic tables win and are kept.
 *
 * Matches run back at most 32 KiB (the DEFLATE window) and may reach into the pieces before (the pieces are joined
 * into one stream, whose decoder has them); a match longer than 258 bytes is sent as several.
 *
 * Header-only (static inline, __host__ __device__ under nvcc): tests/unit/test_deflate_fixed.c inflates what the
 * CPU reference writes with zlib, and the GPU must write the same bytes. */
#ifndef ZG_DEFLATE_FIXED_H
#define ZG_DEFLATE_FIXED_H
#include <stddef.h>
#include <stdint.h>

#include "gpuencode/zstd_encode.h"

#define ZG_DF_WINDOW 32768u
#define ZG_DF_MAX_MATCH 258u

/* Bits a literal byte costs with the fixed code. */
ZG_ZE_FN uint32_t zg_df_lit_bits(uint8_t v) { return v < 144 ? 8 : 9; }

/* The fixed code of literal/length symbol s (0..287), bit-reversed for LSB-first packing; *bits its length. */
ZG_ZE_FN uint32_t zg_df_litlen_code(uint32_t s, uint32_t *bits) {
    uint32_t code, n;
    if (s < 144) code = 0x30 + s, n = 8;
    else if (s < 256) code = 0x190 + (s - 144), n = 9;
    else if (s < 280) code = s - 256, n = 7;
    else code = 0xc0 + (s - 280), n = 8;
    uint32_t r = 0;
    for (uint32_t k = 0; k < n; k++) r |= ((code >> k) & 1u) << (n - 1 - k);
    *bits = n;
    return r;
}

/* Length symbol (257..285) of a match length 3..258, its extra bits and their value. */
ZG_ZE_FN uint32_t zg_df_len_sym(uint32_t len, uint32_t *xbits, uint32_t *xval) {
    static const uint16_t base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
    uint32_t k = 28;
    while (base[k] > len) k--;
    *xbits = k == 28 ? 0 : k < 8 ? 0 : (k - 4) / 4;
    *xval = len - base[k];
    return 257 + k;
}

/* Distance code (0..29) of a distance 1..32768, its extra bits and their value. */
ZG_ZE_FN uint32_t zg_df_dist_code(uint32_t d, uint32_t *xbits, uint32_t *xval) {
    uint32_t c, x;
    if (d <= 4) {
        c = d - 1, x = 0;
    } else {
        const uint32_t hb = zg_ze_highbit(d - 1); /* d - 1 in [2^hb, 2^(hb + 1)) */
        x = hb - 1;
        c = 2 * hb + (((d - 1) >> (hb - 1)) & 1);
    }
    *xbits = x;
    *xval = (d - 1) & ((1u << x) - 1);
    return c;
}

/* The pieces a match of len bytes is sent as: 258s, with the last two split so that none is below 3. */
ZG_ZE_FN uint32_t zg_df_match_part(uint32_t *len) {
    uint32_t part = *len;
    if (part > ZG_DF_MAX_MATCH) part = *len - ZG_DF_MAX_MATCH >= 3 ? ZG_DF_MAX_MATCH : *len - 3;
    *len -= part;
    return part;
}

/* Bits of a match of len bytes at distance d. */
ZG_ZE_FN uint32_t zg_df_match_bits(uint32_t len, uint32_t d) {
    uint32_t bits = 0, b, xb, xv;
    uint32_t dx;
    zg_df_dist_code(d, &dx, &xv);
    while (len) {
        const uint32_t part = zg_df_match_part(&len);
        zg_df_litlen_code(zg_df_len_sym(part, &xb, &xv), &b);
        bits += b + xb + 5 + dx;
    }
    return bits;
}

ZG_ZE_FN void zg_df_put_lit(zg_ze_bits *w, uint8_t v) {
    uint32_t b;
    const uint32_t c = zg_df_litlen_code(v, &b);
    zg_ze_bits_put(w, c, b);
}

ZG_ZE_FN void zg_df_put_match(zg_ze_bits *w, uint32_t len, uint32_t d) {
    uint32_t dx, dv, b, xb, xv;
    const uint32_t dc = zg_df_dist_code(d, &dx, &dv);
    uint32_t rdc = 0;
    for (uint32_t k = 0; k < 5; k++) rdc |= ((dc >> k) & 1u) << (4 - k);
    while (len) {
        const uint32_t part = zg_df_match_part(&len);
        const uint32_t c = zg_df_litlen_code(zg_df_len_sym(part, &xb, &xv), &b);
        zg_ze_bits_put(w, c, b);
        zg_ze_bits_put(w, xv, xb);
        zg_ze_bits_put(w, rdc, 5);
        zg_ze_bits_put(w, dv, dx);
    }
}

/* Hints a piece can use: those within the window. */
ZG_ZE_FN zg_ze_hints zg_df_hints(zg_ze_hints h) {
    for (uint32_t k = 0; k < ZG_ZE_HINTS; k++)
        if (h.off[k] > ZG_DF_WINDOW) h.off[k] = 0;
    return zg_ze_hints_clean(h);
}

/* The CPU reference: piece [b, b + n) of chunk c (n <= ZG_DP_PIECE_BYTES of deflate_pieces.h, 64 KiB: at most
 * 16 lanes' segments) as one final fixed-Huffman block into dst (at most zg_df_bound(n) bytes); its size. `hints`
 * already through zg_df_hints. Scratch as zg_ze_block_ref's. */
ZG_ZE_FN uint32_t zg_df_bound(uint32_t n) { return n + n / 8 + 64; }

ZG_ZE_FN uint32_t zg_df_piece_ref(const uint8_t *c, uint32_t b, uint32_t n, const zg_ze_hints *hints, uint8_t *dst,
                                  zg_ze_seq *seqs, uint16_t *table) {
    uint32_t tail;
    const uint32_t ns = zg_ze_match_block_ref(c, b, n, ZG_ZE_SEG_BYTES, hints, table, seqs, &tail);
    zg_ze_bits w;
    zg_ze_bits_init(&w, dst, zg_df_bound(n));
    zg_ze_bits_put(&w, 3, 3); /* BFINAL, fixed codes */
    uint32_t pos = b;
    for (uint32_t i = 0; i < ns; i++) {
        for (uint32_t k = 0; k < seqs[i].lit; k++) zg_df_put_lit(&w, c[pos + k]);
        pos += seqs[i].lit;
        zg_df_put_match(&w, seqs[i].len, seqs[i].off);
        pos += seqs[i].len;
    }
    for (uint32_t k = 0; k < tail; k++) zg_df_put_lit(&w, c[pos + k]);
    uint32_t eb;
    const uint32_t eob = zg_df_litlen_code(256, &eb);
    zg_ze_bits_put(&w, eob, eb);
    while (w.n > 0) { /* to the byte (no end marker in DEFLATE) */
        w.p[w.at++] = (uint8_t)w.acc;
        w.acc >>= 8;
        w.n = w.n > 8 ? w.n - 8 : 0;
    }
    return w.over ? 0 : w.at;
}

#endif
