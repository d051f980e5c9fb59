/* zgpu's DEFLATE decoder, part 2 of 6 (see inflate_rules.h): Huffman decode tables, one token, block headers and
 * their code lengths, and the output's elements (bytes, or a part's 16-bit elements). */
#ifndef ZG_INFLATE_HUFFMAN_H
#define ZG_INFLATE_HUFFMAN_H
#include "gpucodec/deflate/inflate_base.h"

/* ------------------------------------------------------------------------------------------------ tables */
/* A decode table entry: bits 0-3 code length (whole code, subtable part included), 4-6 kind, 8-11 extra bits
 * (subtable pointers: the subtable's index bits), 16-31 value (literal byte, length / distance base,
 * subtable offset). */
enum { ZI_LIT = 0, ZI_LEN = 1, ZI_EOB = 2, ZI_SUB = 3, ZI_BAD = 4, ZI_DISTK = 5 };
#define ZI_ENTRY(len, kind, extra, value) \
    ((uint32_t)(len) | (uint32_t)(kind) << 4 | (uint32_t)(extra) << 8 | (uint32_t)(value) << 16)
#define ZI_E_LEN(e) ((e) & 15u)
#define ZI_E_KIND(e) (((e) >> 4) & 7u)
#define ZI_E_EXTRA(e) (((e) >> 8) & 15u)
#define ZI_E_VAL(e) ((e) >> 16)

/* The meaning of symbol s of a literal/length (dist = 0) or distance (dist = 1) code, for an entry. */
ZI_FN uint32_t zi_symbol_entry(int dist, uint32_t s, uint32_t len) {
    if (dist) {
        if (s >= 30) return ZI_ENTRY(len, ZI_BAD, 0, 0);
        if (s < 4) return ZI_ENTRY(len, ZI_DISTK, 0, s + 1);
        const uint32_t x = s / 2 - 1;
        return ZI_ENTRY(len, ZI_DISTK, x, ((2u + (s & 1)) << x) + 1);
    }
    if (s < 256) return ZI_ENTRY(len, ZI_LIT, 0, s);
    if (s == 256) return ZI_ENTRY(len, ZI_EOB, 0, 0);
    if (s >= 286) return ZI_ENTRY(len, ZI_BAD, 0, 0);
    if (s == 285) return ZI_ENTRY(len, ZI_LEN, 0, 258);
    const uint32_t i = s - 257;
    if (i < 8) return ZI_ENTRY(len, ZI_LEN, 0, 3 + i);
    const uint32_t x = (i - 4) / 4;
    return ZI_ENTRY(len, ZI_LEN, x, ((4u + (i & 3)) << x) + 3);
}

/* One code's table: its lengths, each symbol's bit-reversed canonical code (codes[]), the table whose first
 * level zi_table_clear sets to ZI_BAD and zi_tables_sub_* (inflate_driver.h) fill with subtable pointers; fill
 * (every lane, symbols lane, lane + nl, ...) then writes each symbol's entries. The lengths are checked (zi_code_first) the
 * way zlib and libdeflate do: no over-subscribed code; an incomplete code only as a single 1-bit code; an empty
 * code is allowed. */
typedef struct zi_code {
    const uint8_t *lens;
    uint16_t *codes;
    uint32_t *tab;
    uint32_t n, root, cap;
    int dist;
} zi_code;

ZI_FN void zi_table_clear(const zi_code *c, uint32_t lane, uint32_t nl) {
    for (uint32_t i = lane; i < (1u << c->root); i += nl) c->tab[i] = ZI_ENTRY(0, ZI_BAD, 0, 0);
}

/* A code's first canonical code of each length from its count of each (count[0] ignored), checked. */
ZI_FN int zi_code_first(const uint32_t *count, uint32_t *first) {
    int32_t left = 1;
    uint32_t max = 0;
    for (uint32_t l = 1; l < 16; l++) {
        left = left * 2 - (int32_t)count[l];
        if (left < 0) return ZI_E_CODE;
        if (count[l]) max = l;
    }
    if (left > 0 && max != 0 && !(max == 1 && count[1] == 1)) return ZI_E_CODE;
    first[1] = 0;
    for (uint32_t l = 1; l < 15; l++) first[l + 1] = (first[l] + count[l]) << 1;
    return ZI_OK;
}

ZI_FN uint32_t zi_reverse(uint32_t code, uint32_t l) {
#ifdef __CUDA_ARCH__
    return __brev(code) >> (32 - l);
#else
    uint32_t rev = 0;
    for (uint32_t k = 0; k < l; k++) rev |= ((code >> k) & 1u) << (l - 1 - k);
    return rev;
#endif
}

ZI_FN void zi_table_fill(const zi_code *c, uint32_t lane, uint32_t nl) {
    const uint32_t mask = (1u << c->root) - 1;
    for (uint32_t s = lane; s < c->n; s += nl) {
        const uint32_t l = c->lens[s];
        if (!l) continue;
        const uint32_t rev = c->codes[s], e = zi_symbol_entry(c->dist, s, l);
        if (l <= c->root) {
            for (uint32_t i = rev; i <= mask; i += 1u << l) c->tab[i] = e;
        } else {
            const uint32_t sub = c->tab[rev & mask], size = 1u << ZI_E_EXTRA(sub);
            for (uint32_t i = rev >> c->root; i < size; i += 1u << (l - c->root)) c->tab[ZI_E_VAL(sub) + i] = e;
        }
    }
}

ZI_FN uint32_t zi_lookup(const uint32_t *tab, uint32_t root, uint64_t buf) {
    uint32_t e = tab[buf & ((1u << root) - 1)];
    if (ZI_E_KIND(e) == ZI_SUB) e = tab[ZI_E_VAL(e) + ((uint32_t)(buf >> root) & ((1u << ZI_E_EXTRA(e)) - 1))];
    return e;
}

/* ------------------------------------------------------------------------------------------------ tokens */
enum { ZI_T_LIT = 0, ZI_T_MATCH = 1, ZI_T_EOB = 2 };

/* The token at b->pos: a literal (*a = byte), a match (*a = length, *d = distance) or the end of block;
 * negative: -ZI_E_SYMBOL. The caller compares b->pos with the stream's bit count. */
ZI_FN int zi_token(zi_br *b, const uint32_t *lt, const uint32_t *dt, uint32_t *a, uint32_t *d) {
    zi_refill(b);
    uint32_t e = zi_lookup(lt, ZI_LROOT, b->buf);
    const uint32_t k = ZI_E_KIND(e);
    if (k == ZI_LIT) {
        zi_bits(b, ZI_E_LEN(e));
        *a = ZI_E_VAL(e);
        return ZI_T_LIT;
    }
    if (k == ZI_EOB) {
        zi_bits(b, ZI_E_LEN(e));
        return ZI_T_EOB;
    }
    if (k != ZI_LEN) return -ZI_E_SYMBOL;
    zi_bits(b, ZI_E_LEN(e));
    *a = ZI_E_VAL(e) + zi_bits(b, ZI_E_EXTRA(e));
    zi_refill(b);
    e = zi_lookup(dt, ZI_DROOT, b->buf);
    if (ZI_E_KIND(e) != ZI_DISTK) return -ZI_E_SYMBOL;
    zi_bits(b, ZI_E_LEN(e));
    *d = ZI_E_VAL(e) + zi_bits(b, ZI_E_EXTRA(e));
    return ZI_T_MATCH;
}

/* ------------------------------------------------------------------------------------------------ headers */
/* A dynamic block's header (RFC 1951 3.2.7), in steps (zi_block_header and the driver run them):
 *   head    one lane: HLIT, HDIST, HCLEN and the code-length code's lengths (cl), its canonical codes;
 *   table   lane per entry of the code-length table pt (128 entries: which of the 19 symbols it decodes);
 *   lengths one lane: the literal/length and distance code lengths, as sent, into tmp (320 bytes);
 *   split   every lane: tmp into lens[0, 288) and lens[288, 320).
 * One lane building the table and copying the lengths took a third of the header's time. */
ZI_FN int zi_dynamic_head(zi_br *b, uint32_t nbits, uint8_t *cl, uint16_t *codes, uint32_t *nlit, uint32_t *ndist) {
    const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    *nlit = 257 + zi_get(b, 5);
    *ndist = 1 + zi_get(b, 5);
    const uint32_t ncl = 4 + zi_get(b, 4);
    for (uint32_t i = 0; i < 19; i++) cl[i] = 0;
    for (uint32_t i = 0; i < ncl; i++) cl[order[i]] = (uint8_t)zi_get(b, 3);
    if (b->pos > nbits) return ZI_E_TRUNC;
    uint32_t count[16] = {0}, next[16];
    for (uint32_t s = 0; s < 19; s++) count[cl[s]]++;
    if (zi_code_first(count, next) != ZI_OK) return ZI_E_HEADER;
    for (uint32_t s = 0; s < 19; s++)
        if (cl[s]) codes[s] = (uint16_t)zi_reverse(next[cl[s]]++, cl[s]);
    return ZI_OK;
}

/* A code-length table entry: a byte, symbol << 3 | code length (0: no code matches). Bytes keep the finder's
 * copy small ("parts"). */
ZI_FN uint8_t zi_cl_byte(uint32_t s, uint32_t len) { return (uint8_t)(s << 3 | len); }

/* Entry i of the code-length table: the symbol whose reversed code is i's low bits (a valid code has at most
 * one). */
ZI_FN uint8_t zi_cl_entry(const uint8_t *cl, const uint16_t *codes, uint32_t i) {
    for (uint32_t s = 0; s < 19; s++)
        if (cl[s] && (i & ((1u << cl[s]) - 1)) == codes[s]) return zi_cl_byte(s, cl[s]);
    return 0;
}

/* One symbol of the code-length code at b, as a run of rep lengths of value v: a length (rep 1), 16 (the previous
 * length, prev, 3-6 times), 17 or 18 (zeros). ZI_E_HEADER for no code, or a repeat with no previous length (first). */
ZI_FN int zi_cl_run(zi_br *b, const uint8_t *pt, int first, uint32_t prev, uint32_t *v, uint32_t *rep) {
    zi_refill(b);
    const uint32_t e = pt[b->buf & 127];
    if (!(e & 7)) return ZI_E_HEADER;
    zi_bits(b, e & 7);
    const uint32_t s = e >> 3;
    *v = s;
    *rep = 1;
    if (s == 16) {
        if (first) return ZI_E_HEADER;
        *v = prev;
        *rep = 3 + zi_bits(b, 2);
    } else if (s == 17) {
        *v = 0;
        *rep = 3 + zi_bits(b, 3);
    } else if (s == 18) {
        *v = 0;
        *rep = 11 + zi_bits(b, 7);
    }
    return ZI_OK;
}

/* The code lengths as sent, into tmp[0, total). */
ZI_FN int zi_dynamic_lengths(zi_br *b, uint32_t nbits, const uint8_t *pt, uint8_t *tmp, uint32_t total) {
    uint32_t i = 0;
    while (i < total) {
        uint32_t v, rep;
        if (zi_cl_run(b, pt, i == 0, i ? tmp[i - 1] : 0, &v, &rep) || i + rep > total) return ZI_E_HEADER;
        while (rep--) tmp[i++] = (uint8_t)v;
    }
    if (b->pos > nbits) return ZI_E_TRUNC;
    if (tmp[256] == 0) return ZI_E_NO_EOB; /* (nlit >= 257) */
    return ZI_OK;
}

/* The finder's version of zi_dynamic_lengths (the same verdict, 0 or not): how many literal/length and distance
 * lengths of each value, count[0] / count[1], without writing the lengths, a run as one step, and stopping at
 * the first length that over-subscribes either code (which the tables would reject): random bits decode to a
 * few hundred lengths otherwise, and do over-subscribe within dozens. */
ZI_FN int zi_length_counts(zi_br *b, uint32_t nbits, const uint8_t *pt, uint32_t nlit, uint32_t total,
                           uint32_t count[2][16]) {
    uint32_t i = 0, prev = 0, eob = 0, kraft[2] = {0, 0}; /* kraft: in units of 2^-15 */
    for (uint32_t l = 0; l < 16; l++) count[0][l] = count[1][l] = 0;
    while (i < total) {
        uint32_t v, rep;
        if (zi_cl_run(b, pt, i == 0, prev, &v, &rep) || i + rep > total) return ZI_E_HEADER;
        const uint32_t lit = i < nlit ? (nlit - i < rep ? nlit - i : rep) : 0; /* of the run, literal/length lengths */
        if (i <= 256 && 256 < i + rep) eob = v;
        count[0][v] += lit;
        count[1][v] += rep - lit;
        if (v && ((kraft[0] += lit * (32768u >> v)) > 32768u || (kraft[1] += (rep - lit) * (32768u >> v)) > 32768u))
            return ZI_E_CODE;
        prev = v;
        i += rep;
    }
    if (b->pos > nbits) return ZI_E_TRUNC;
    return eob ? ZI_OK : ZI_E_NO_EOB;
}

ZI_FN void zi_fixed_lengths(uint8_t *lens) {
    for (uint32_t s = 0; s < 288; s++) lens[s] = s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
    for (uint32_t s = 0; s < 32; s++) lens[288 + s] = 5;
}

/* ------------------------------------------------------------------------------------------------ output */
/* Output elements: bytes, or, for a part of a stream decoded before the bytes ahead of it are known (see
 * inflate_parts.h), 16-bit values: a byte (below 256), or the mark 255 + d of "the byte d before the part's
 * first", d in [1, ZI_WINDOW]. Such a part's output starts with ZI_WINDOW marks (d = ZI_WINDOW .. 1), so that its matches
 * copy them like any earlier byte and every match byte ends up a byte or a mark. */
#define ZI_WINDOW 32768u
ZI_FN void zi_put(void *out, uint32_t wide, uint32_t i, uint32_t v) {
    if (wide) ((uint16_t *)out)[i] = (uint16_t)v;
    else ((uint8_t *)out)[i] = (uint8_t)v;
}

ZI_FN uint32_t zi_at(const void *out, uint32_t wide, uint32_t i) {
    return wide ? ((const uint16_t *)out)[i] : ((const uint8_t *)out)[i];
}

#endif
