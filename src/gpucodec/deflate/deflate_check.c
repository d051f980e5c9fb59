/* Host-side checks of gzip members, zlib streams and raw DEFLATE before zgpu's (or nvCOMP's) DEFLATE decoder
 * takes them (see deflate_check.h). Pure C, no CUDA: built and unit-tested everywhere. */
#include "gpucodec/deflate/deflate_check.h"

#include <string.h>

#include "common/endian.h"
#include "common/status.h"
#include "gpucodec/common/lsb_bits.h"

zgpu_status zg_gzip_locate(const uint8_t *p, size_t n, size_t expected, size_t *off, size_t *len) {
    ZG_RETURN_IF(n < 18, ZGPU_ERR_CORRUPT_DATA, "gzip: %zu bytes is shorter than a gzip member", n);
    ZG_RETURN_IF(p[0] != 0x1f || p[1] != 0x8b, ZGPU_ERR_CORRUPT_DATA, "gzip: bad magic %02x %02x", p[0], p[1]);
    ZG_RETURN_IF(p[2] != 8, ZGPU_ERR_CORRUPT_DATA, "gzip: compression method %u (expected 8, deflate)", p[2]);
    uint8_t flg = p[3];
    ZG_RETURN_IF(flg & 0xe0, ZGPU_ERR_CORRUPT_DATA, "gzip: reserved flag bits set (0x%02x)", flg);
    size_t pos = 10;
    if (flg & 0x04) { /* FEXTRA */
        ZG_RETURN_IF(pos + 2 > n, ZGPU_ERR_CORRUPT_DATA, "gzip: truncated extra field");
        size_t xlen = (size_t)p[pos] | (size_t)p[pos + 1] << 8;
        pos += 2 + xlen;
    }
    for (int bit = 0x08; bit <= 0x10; bit <<= 1) { /* FNAME, FCOMMENT: zero-terminated */
        if (!(flg & bit)) continue;
        while (pos < n && p[pos]) pos++;
        pos++;
    }
    if (flg & 0x02) pos += 2; /* FHCRC */
    ZG_RETURN_IF(pos + 8 > n, ZGPU_ERR_CORRUPT_DATA, "gzip: header of %zu bytes leaves no room for data", pos);
    uint32_t isize = zg_le32(p + n - 4);
    ZG_RETURN_IF(expected != SIZE_MAX && isize != (uint32_t)expected, ZGPU_ERR_CORRUPT_DATA,
                 "gzip: trailer says %u decoded bytes, expected %zu", isize, expected);
    ZG_FORWARD(zg_deflate_check(p + pos, n - 8 - pos, expected));
    *off = pos;
    *len = n - 8 - pos;
    return ZGPU_OK;
}

zgpu_status zg_zlib_locate(const uint8_t *p, size_t n, size_t expected, size_t *off, size_t *len) {
    ZG_RETURN_IF(n < 7, ZGPU_ERR_CORRUPT_DATA, "zlib: %zu bytes is shorter than a zlib stream", n);
    ZG_RETURN_IF((p[0] & 0x0f) != 8 || (p[0] >> 4) > 7, ZGPU_ERR_CORRUPT_DATA, "zlib: bad CMF byte 0x%02x", p[0]);
    ZG_RETURN_IF(((unsigned)p[0] * 256 + p[1]) % 31 != 0, ZGPU_ERR_CORRUPT_DATA, "zlib: header check bits wrong");
    ZG_RETURN_IF(p[1] & 0x20, ZGPU_ERR_UNSUPPORTED, "zlib: preset dictionary");
    ZG_FORWARD(zg_deflate_check(p + 2, n - 6, expected));
    *off = 2;
    *len = n - 6;
    return ZGPU_OK;
}

/* Canonical Huffman code (RFC 1951 3.2.2) decoded one bit at a time: count[len] codes of each length,
 * symbols in code order. */
typedef struct zg_huff {
    uint16_t count[16];
    uint16_t sym[320];
    int ncodes;
} zg_huff;

/* Builds the code; returns the unused code space at 15 bits (0: complete) or -1 when over-subscribed. */
static int32_t huff_build(zg_huff *h, const uint8_t *len, int n) {
    uint16_t offs[16];
    memset(h->count, 0, sizeof h->count);
    for (int i = 0; i < n; i++) h->count[len[i]]++;
    h->ncodes = n - h->count[0];
    int32_t left = 1;
    for (int l = 1; l < 16; l++) {
        left = left * 2 - h->count[l];
        if (left < 0) return -1;
    }
    offs[1] = 0;
    for (int l = 1; l < 15; l++) offs[l + 1] = (uint16_t)(offs[l] + h->count[l]);
    for (int i = 0; i < n; i++)
        if (len[i]) h->sym[offs[len[i]]++] = (uint16_t)i;
    return left;
}

/* The next symbol, or -1 when the bits match no code (possible only in an incomplete code). */
static int huff_decode(zg_bits *b, const zg_huff *h) {
    int code = 0, first = 0, index = 0;
    for (int l = 1; l < 16; l++) {
        code |= (int)bits_get(b, 1);
        int cnt = h->count[l];
        if (code - first < cnt) return h->sym[index + code - first];
        index += cnt;
        first = (first + cnt) << 1;
        code <<= 1;
    }
    return -1;
}

/* A literal/length or distance code may be incomplete only when it has a single code of length 1 (and a
 * distance code may be empty): what zlib and libdeflate both accept. */
static int huff_ok(const zg_huff *h, int32_t left, int empty_ok) {
    if (left == 0) return 1;
    if (left < 0) return 0;
    if (h->ncodes == 0) return empty_ok;
    return h->ncodes == 1 && h->count[1] == 1;
}

/* RFC 1951 3.2.5: base values and extra bits of the length symbols 257..285 and distance codes 0..29 */
static const uint16_t len_base[29] = {3,  4,  5,  6,  7,  8,  9,  10,  11,  13,  15,  17,  19,  23, 27,
                                      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                      2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {1,    2,    3,    4,    5,    7,     9,     13,    17,    25,
                                       33,   49,   65,   97,   129,  193,   257,   385,   513,   769,
                                       1025, 1537, 2049, 3073, 4097, 6145,  8193,  12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6,
                                       6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

/* Reads a dynamic block's code descriptions (RFC 1951 3.2.7) into lit / dist and checks that they are
 * prefix codes a decoder accepts. */
static zgpu_status deflate_dynamic_header(zg_bits *b, zg_huff *lit, zg_huff *dist) {
    static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    int hlit = (int)bits_get(b, 5) + 257, hdist = (int)bits_get(b, 5) + 1, hclen = (int)bits_get(b, 4) + 4;
    ZG_RETURN_IF(hlit > 286 || hdist > 30, ZGPU_ERR_CORRUPT_DATA, "deflate: %d literal/length and %d distance codes",
                 hlit, hdist);
    uint8_t lens[286 + 30];
    memset(lens, 0, 19);
    for (int i = 0; i < hclen; i++) lens[order[i]] = (uint8_t)bits_get(b, 3);
    zg_huff lencode;
    int32_t left = huff_build(&lencode, lens, 19);
    ZG_RETURN_IF(left != 0 || lencode.ncodes == 0, ZGPU_ERR_CORRUPT_DATA,
                 "deflate: code length code is %s", left < 0 ? "over-subscribed" : "incomplete");
    int i = 0;
    while (i < hlit + hdist) {
        ZG_RETURN_IF(bits_over(b), ZGPU_ERR_CORRUPT_DATA, "deflate: stream ends inside the code lengths");
        int sym = huff_decode(b, &lencode);
        ZG_RETURN_IF(sym < 0, ZGPU_ERR_CORRUPT_DATA, "deflate: invalid code length code");
        if (sym < 16) {
            lens[i++] = (uint8_t)sym;
            continue;
        }
        int rep;
        uint8_t val = 0;
        if (sym == 16) {
            ZG_RETURN_IF(i == 0, ZGPU_ERR_CORRUPT_DATA, "deflate: length repeat with no previous length");
            val = lens[i - 1];
            rep = 3 + (int)bits_get(b, 2);
        } else if (sym == 17) {
            rep = 3 + (int)bits_get(b, 3);
        } else {
            rep = 11 + (int)bits_get(b, 7);
        }
        ZG_RETURN_IF(i + rep > hlit + hdist, ZGPU_ERR_CORRUPT_DATA, "deflate: code length repeat runs past the end");
        memset(lens + i, val, (size_t)rep);
        i += rep;
    }
    ZG_RETURN_IF(bits_over(b), ZGPU_ERR_CORRUPT_DATA, "deflate: stream ends inside the code lengths");
    ZG_RETURN_IF(lens[256] == 0, ZGPU_ERR_CORRUPT_DATA, "deflate: no end-of-block code");
    left = huff_build(lit, lens, hlit);
    ZG_RETURN_IF(!huff_ok(lit, left, 0), ZGPU_ERR_CORRUPT_DATA, "deflate: literal/length code is %s",
                 left < 0 ? "over-subscribed" : "incomplete");
    left = huff_build(dist, lens + hlit, hdist);
    ZG_RETURN_IF(!huff_ok(dist, left, 1), ZGPU_ERR_CORRUPT_DATA, "deflate: distance code is %s",
                 left < 0 ? "over-subscribed" : "incomplete");
    return ZGPU_OK;
}

static void deflate_fixed_codes(zg_huff *lit, zg_huff *dist) {
    uint8_t lens[288];
    memset(lens, 8, 144);
    memset(lens + 144, 9, 112);
    memset(lens + 256, 7, 24);
    memset(lens + 280, 8, 8);
    huff_build(lit, lens, 288);
    memset(lens, 5, 32);
    huff_build(dist, lens, 32);
}

/* Symbols of Huffman blocks walked before the check stops: enough for garbage to hit an invalid code or a
 * distance past the start of the output, small next to what a decoder does. */
#define ZG_DEFLATE_WALK_SYMBOLS 1024

zgpu_status zg_deflate_check(const uint8_t *p, size_t n, size_t expected) {
    zg_bits b = {p, n, 0};
    uint64_t out = 0;
    int budget = ZG_DEFLATE_WALK_SYMBOLS;
    for (;;) {
        ZG_RETURN_IF(b.pos + 3 > (uint64_t)n * 8, ZGPU_ERR_CORRUPT_DATA, "deflate: stream ends before a block header");
        int final = (int)bits_get(&b, 1), type = (int)bits_get(&b, 2);
        ZG_RETURN_IF(type == 3, ZGPU_ERR_CORRUPT_DATA, "deflate: reserved block type 3");
        if (type == 0) { /* stored: LEN, NLEN at the next byte boundary, then LEN bytes */
            uint64_t byte = (b.pos + 7) >> 3;
            ZG_RETURN_IF(byte > n || n - byte < 4, ZGPU_ERR_CORRUPT_DATA, "deflate: truncated stored block header");
            uint32_t len = (uint32_t)p[byte] | (uint32_t)p[byte + 1] << 8;
            uint32_t nlen = (uint32_t)p[byte + 2] | (uint32_t)p[byte + 3] << 8;
            ZG_RETURN_IF(len != (~nlen & 0xffffu), ZGPU_ERR_CORRUPT_DATA,
                         "deflate: stored block length %u does not match its complement %u", len, nlen);
            ZG_RETURN_IF(len > n - byte - 4, ZGPU_ERR_CORRUPT_DATA, "deflate: stored block of %u bytes runs past the end",
                         len);
            b.pos = (byte + 4 + len) * 8;
            out += len;
            ZG_RETURN_IF(expected != SIZE_MAX && out > expected, ZGPU_ERR_CORRUPT_DATA,
                         "deflate: decodes to more than %zu bytes", expected);
        } else {
            zg_huff lit, dist;
            if (type == 1) deflate_fixed_codes(&lit, &dist);
            else ZG_FORWARD(deflate_dynamic_header(&b, &lit, &dist));
            for (;;) {
                ZG_RETURN_IF(bits_over(&b), ZGPU_ERR_CORRUPT_DATA, "deflate: stream ends inside a block");
                if (budget-- <= 0) return ZGPU_OK; /* the rest is left to the decoder */
                int sym = huff_decode(&b, &lit);
                ZG_RETURN_IF(sym < 0, ZGPU_ERR_CORRUPT_DATA, "deflate: invalid literal/length code");
                if (sym < 256) {
                    out++;
                } else if (sym == 256) {
                    break;
                } else {
                    sym -= 257;
                    ZG_RETURN_IF(sym >= 29, ZGPU_ERR_CORRUPT_DATA, "deflate: invalid length symbol %d", sym + 257);
                    uint32_t len = len_base[sym] + bits_get(&b, len_extra[sym]);
                    int ds = huff_decode(&b, &dist);
                    ZG_RETURN_IF(ds < 0 || ds >= 30, ZGPU_ERR_CORRUPT_DATA, "deflate: invalid distance code");
                    uint32_t d = dist_base[ds] + bits_get(&b, dist_extra[ds]);
                    ZG_RETURN_IF(d > out, ZGPU_ERR_CORRUPT_DATA,
                                 "deflate: distance %u reaches before the start (%llu bytes out)", d,
                                 (unsigned long long)out);
                    out += len;
                }
                ZG_RETURN_IF(expected != SIZE_MAX && out > expected, ZGPU_ERR_CORRUPT_DATA,
                             "deflate: decodes to more than %zu bytes", expected);
            }
            ZG_RETURN_IF(bits_over(&b), ZGPU_ERR_CORRUPT_DATA, "deflate: stream ends inside a block");
        }
        if (final) {
            ZG_RETURN_IF(expected != SIZE_MAX && out != expected, ZGPU_ERR_CORRUPT_DATA,
                         "deflate: decodes to %llu bytes, expected %zu", (unsigned long long)out, expected);
            return ZGPU_OK;
        }
    }
}
