/* Host-side frame checks before GPU decompression (see frames.h). */
#include "cuda/frames.h"

#include <string.h>

#include "util/status.h"

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* LSB-first bit reader (deflate, zstd FSE table descriptions). Bits past the end read as zero; callers check
 * bits_over() before trusting what they read. */
typedef struct zg_bits {
    const uint8_t *p;
    size_t n;
    uint64_t pos; /* in bits */
} zg_bits;

static uint32_t bits_peek(const zg_bits *b, int k) { /* k <= 25 */
    uint64_t byte = b->pos >> 3, w = 0;
    for (int i = 0; i < 4; i++)
        if (byte + (uint64_t)i < b->n) w |= (uint64_t)b->p[byte + (uint64_t)i] << (8 * i);
    return (uint32_t)(w >> (b->pos & 7)) & ((1u << k) - 1u);
}
static uint32_t bits_get(zg_bits *b, int k) {
    uint32_t v = bits_peek(b, k);
    b->pos += (uint64_t)k;
    return v;
}
static int bits_over(const zg_bits *b) { return b->pos > (uint64_t)b->n * 8; }

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
    uint32_t isize = rd32(p + n - 4);
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

zgpu_status zg_lz4_block_check(const uint8_t *p, size_t n, size_t expected) {
    size_t ip = 0, op = 0;
    ZG_RETURN_IF(n == 0, ZGPU_ERR_CORRUPT_DATA, "lz4: empty block");
    for (;;) {
        ZG_RETURN_IF(ip >= n, ZGPU_ERR_CORRUPT_DATA, "lz4: block ends inside a sequence");
        unsigned token = p[ip++];
        size_t lit = token >> 4;
        if (lit == 15) {
            unsigned b;
            do {
                ZG_RETURN_IF(ip >= n, ZGPU_ERR_CORRUPT_DATA, "lz4: literal length runs past the end");
                b = p[ip++];
                lit += b;
            } while (b == 255);
        }
        ZG_RETURN_IF(lit > n - ip, ZGPU_ERR_CORRUPT_DATA, "lz4: %zu literals at %zu run past the block end", lit, ip);
        ip += lit;
        op += lit;
        ZG_RETURN_IF(op > expected, ZGPU_ERR_CORRUPT_DATA, "lz4: decodes to more than %zu bytes", expected);
        if (ip == n) break; /* the last sequence holds literals only */
        ZG_RETURN_IF(n - ip < 2, ZGPU_ERR_CORRUPT_DATA, "lz4: truncated match offset");
        size_t offset = (size_t)p[ip] | (size_t)p[ip + 1] << 8;
        ip += 2;
        ZG_RETURN_IF(offset == 0 || offset > op, ZGPU_ERR_CORRUPT_DATA,
                     "lz4: match offset %zu at output position %zu", offset, op);
        size_t ml = token & 15;
        if (ml == 15) {
            unsigned b;
            do {
                ZG_RETURN_IF(ip >= n, ZGPU_ERR_CORRUPT_DATA, "lz4: match length runs past the end");
                b = p[ip++];
                ml += b;
            } while (b == 255);
        }
        op += ml + 4;
        ZG_RETURN_IF(op > expected, ZGPU_ERR_CORRUPT_DATA, "lz4: decodes to more than %zu bytes", expected);
    }
    ZG_RETURN_IF(op != expected, ZGPU_ERR_CORRUPT_DATA, "lz4: decodes to %zu bytes, expected %zu", op, expected);
    return ZGPU_OK;
}

zgpu_status zg_lz4nc_locate(const uint8_t *p, size_t n, size_t expected, size_t *off, size_t *len) {
    ZG_RETURN_IF(n < 5, ZGPU_ERR_CORRUPT_DATA, "lz4: %zu bytes is too short for the size prefix and a block", n);
    uint32_t sz = rd32(p);
    ZG_RETURN_IF(expected != SIZE_MAX && sz != expected, ZGPU_ERR_CORRUPT_DATA,
                 "lz4: size prefix says %u bytes, expected %zu", sz, expected);
    ZG_FORWARD(zg_lz4_block_check(p + 4, n - 4, sz));
    *off = 4;
    *len = n - 4;
    return ZGPU_OK;
}


/* ------------------------------------------------------------------------------------------------ deflate */
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

/* ------------------------------------------------------------------------------------------------ zstd */
/* Parses an FSE table description (RFC 8878 4.1.1) in p[0, n): accuracy log at most max_log, symbols at
 * most max_sym, normalized probabilities summing exactly to 1 << log. *used: its size in bytes. */
static zgpu_status fse_table_desc(const uint8_t *p, size_t n, int max_log, int max_sym, const char *what,
                                  size_t *used) {
    zg_bits b = {p, n, 0};
    int log = (int)bits_get(&b, 4) + 5;
    ZG_RETURN_IF(log > max_log, ZGPU_ERR_CORRUPT_DATA, "zstd: %s table accuracy log %d exceeds %d", what, log, max_log);
    int32_t remaining = (1 << log) + 1, threshold = 1 << log;
    int nbits = log + 1, sym = 0;
    while (remaining > 1) {
        ZG_RETURN_IF(sym > max_sym, ZGPU_ERR_CORRUPT_DATA, "zstd: %s table probabilities do not sum to %d", what,
                     1 << log);
        ZG_RETURN_IF(bits_over(&b), ZGPU_ERR_CORRUPT_DATA, "zstd: %s table description runs past the end", what);
        int32_t max = 2 * threshold - 1 - remaining;
        uint32_t raw = bits_peek(&b, nbits);
        int32_t v = (int32_t)(raw & (uint32_t)(threshold - 1));
        if (v < max) {
            b.pos += (uint64_t)(nbits - 1);
        } else {
            v = (int32_t)(raw & (uint32_t)(2 * threshold - 1));
            if (v >= threshold) v -= max;
            b.pos += (uint64_t)nbits;
        }
        int32_t count = v - 1; /* -1: "less than 1" probability, takes one cell */
        remaining -= count < 0 ? -count : count;
        sym++;
        if (count == 0) { /* 2-bit repeat flags: more zero-probability symbols */
            uint32_t r;
            do {
                ZG_RETURN_IF(bits_over(&b), ZGPU_ERR_CORRUPT_DATA, "zstd: %s table description runs past the end", what);
                r = bits_get(&b, 2);
                sym += (int)r;
                ZG_RETURN_IF(sym > max_sym + 1, ZGPU_ERR_CORRUPT_DATA, "zstd: %s table has too many symbols", what);
            } while (r == 3);
        }
        if (remaining <= 1) break;
        while (remaining < threshold) {
            nbits--;
            threshold >>= 1;
        }
    }
    ZG_RETURN_IF(remaining != 1, ZGPU_ERR_CORRUPT_DATA, "zstd: %s table probabilities over-subscribed", what);
    uint64_t bytes = (b.pos + 7) / 8;
    ZG_RETURN_IF(bytes > n, ZGPU_ERR_CORRUPT_DATA, "zstd: %s table description runs past the end", what);
    *used = (size_t)bytes;
    return ZGPU_OK;
}

static int highbit32(uint32_t v) { /* v > 0 */
    int h = 0;
    while (v >>= 1) h++;
    return h;
}

/* Huffman_Tree_Description (RFC 8878 4.2.1) at the start of p[0, n). */
static zgpu_status zstd_huffman_desc(const uint8_t *p, size_t n, size_t *used) {
    ZG_RETURN_IF(n < 1, ZGPU_ERR_CORRUPT_DATA, "zstd: missing Huffman tree description");
    unsigned hb = p[0];
    if (hb < 128) { /* FSE-compressed weights: hb bytes */
        ZG_RETURN_IF(hb == 0 || hb > n - 1, ZGPU_ERR_CORRUPT_DATA, "zstd: Huffman weights of %u bytes in %zu", hb, n - 1);
        size_t u = 0;
        ZG_FORWARD(fse_table_desc(p + 1, hb, 6, 255, "Huffman weight", &u));
        ZG_RETURN_IF(u >= hb, ZGPU_ERR_CORRUPT_DATA, "zstd: no Huffman weight bitstream");
        ZG_RETURN_IF(p[hb] == 0, ZGPU_ERR_CORRUPT_DATA, "zstd: Huffman weight bitstream lacks its end mark");
        *used = 1 + hb;
        return ZGPU_OK;
    }
    /* direct 4-bit weights: check that they describe a valid code (the last weight is implied) */
    unsigned nsym = hb - 127, bytes = (nsym + 1) / 2;
    ZG_RETURN_IF(bytes > n - 1, ZGPU_ERR_CORRUPT_DATA, "zstd: Huffman weights run past the literals");
    uint32_t total = 0, rank1 = 0;
    for (unsigned i = 0; i < nsym; i++) {
        unsigned w = (i & 1) ? p[1 + i / 2] & 15 : p[1 + i / 2] >> 4;
        ZG_RETURN_IF(w > 11, ZGPU_ERR_CORRUPT_DATA, "zstd: Huffman weight %u exceeds 11", w);
        if (w) total += 1u << (w - 1);
        rank1 += w == 1;
    }
    ZG_RETURN_IF(total == 0, ZGPU_ERR_CORRUPT_DATA, "zstd: all Huffman weights are zero");
    int log = highbit32(total) + 1;
    ZG_RETURN_IF(log > 11, ZGPU_ERR_CORRUPT_DATA, "zstd: Huffman code of %d bits exceeds 11", log);
    uint32_t rest = (1u << log) - total;
    ZG_RETURN_IF(rest & (rest - 1), ZGPU_ERR_CORRUPT_DATA, "zstd: Huffman weights leave no valid last weight");
    rank1 += highbit32(rest) + 1 == 1;
    ZG_RETURN_IF(rank1 < 2 || (rank1 & 1), ZGPU_ERR_CORRUPT_DATA, "zstd: Huffman weights give %u codes of the longest length",
                 rank1);
    *used = 1 + bytes;
    return ZGPU_OK;
}

typedef struct zstd_state {
    int have_huffman;   /* a previous block's literals defined a Huffman table (treeless literals reuse it) */
    int have_seq_codes; /* a previous block defined the sequence tables (Repeat mode reuses them) */
    size_t block_max;
} zstd_state;

/* Huffman-coded streams: non-empty, each ending in a byte with the end mark. */
static zgpu_status zstd_huffman_streams(const uint8_t *q, size_t qn, int four) {
    if (!four) {
        ZG_RETURN_IF(qn < 1 || q[qn - 1] == 0, ZGPU_ERR_CORRUPT_DATA, "zstd: literals stream is empty or lacks its end mark");
        return ZGPU_OK;
    }
    ZG_RETURN_IF(qn < 6, ZGPU_ERR_CORRUPT_DATA, "zstd: no room for the literals jump table");
    size_t sz[4], sum = 0;
    for (int i = 0; i < 3; i++) sum += sz[i] = (size_t)q[2 * i] | (size_t)q[2 * i + 1] << 8;
    ZG_RETURN_IF(sum >= qn - 6, ZGPU_ERR_CORRUPT_DATA, "zstd: literals jump table runs past the literals");
    sz[3] = qn - 6 - sum;
    size_t at = 6;
    for (int i = 0; i < 4; i++) {
        at += sz[i];
        ZG_RETURN_IF(sz[i] == 0 || q[at - 1] == 0, ZGPU_ERR_CORRUPT_DATA,
                     "zstd: literals stream %d is empty or lacks its end mark", i + 1);
    }
    return ZGPU_OK;
}

/* Literals_Section (RFC 8878 3.1.1.3.1) at the start of a compressed block's content p[0, n). */
static zgpu_status zstd_literals(const uint8_t *p, size_t n, zstd_state *st, size_t *used, size_t *regen_out) {
    ZG_RETURN_IF(n < 1, ZGPU_ERR_CORRUPT_DATA, "zstd: empty compressed block");
    int type = p[0] & 3, sf = (p[0] >> 2) & 3;
    size_t hs, regen;
    if (type <= 1) { /* raw or RLE */
        if ((sf & 1) == 0) {
            hs = 1;
            regen = p[0] >> 3;
        } else {
            hs = sf == 1 ? 2 : 3;
            ZG_RETURN_IF(n < hs, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated literals header");
            regen = (size_t)(p[0] >> 4) + ((size_t)p[1] << 4) + (sf == 3 ? (size_t)p[2] << 12 : 0);
        }
        ZG_RETURN_IF(regen > st->block_max, ZGPU_ERR_CORRUPT_DATA, "zstd: %zu literals exceed the block maximum %zu",
                     regen, st->block_max);
        size_t content = type == 0 ? regen : 1;
        ZG_RETURN_IF(content > n - hs, ZGPU_ERR_CORRUPT_DATA, "zstd: literals run past the block");
        *used = hs + content;
        *regen_out = regen;
        return ZGPU_OK;
    }
    /* Huffman-compressed (2) or treeless (3) */
    ZG_RETURN_IF(type == 3 && !st->have_huffman, ZGPU_ERR_CORRUPT_DATA,
                 "zstd: treeless literals with no previous Huffman table");
    hs = sf <= 1 ? 3 : (size_t)sf + 2;
    int bits = sf <= 1 ? 10 : (sf == 2 ? 14 : 18), four = sf != 0;
    ZG_RETURN_IF(n < hs, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated literals header");
    uint64_t h = 0;
    for (size_t i = 0; i < hs; i++) h |= (uint64_t)p[i] << (8 * i);
    uint64_t mask = (1u << bits) - 1;
    regen = (size_t)((h >> 4) & mask);
    size_t csize = (size_t)((h >> (4 + bits)) & mask);
    ZG_RETURN_IF(regen > st->block_max, ZGPU_ERR_CORRUPT_DATA, "zstd: %zu literals exceed the block maximum %zu", regen,
                 st->block_max);
    ZG_RETURN_IF(regen == 0 || (four && regen < 6), ZGPU_ERR_CORRUPT_DATA, "zstd: %zu compressed literals in %d streams",
                 regen, four ? 4 : 1);
    ZG_RETURN_IF(csize > n - hs, ZGPU_ERR_CORRUPT_DATA, "zstd: compressed literals of %zu bytes run past the block",
                 csize);
    const uint8_t *q = p + hs;
    size_t qn = csize;
    if (type == 2) {
        size_t u = 0;
        ZG_FORWARD(zstd_huffman_desc(q, qn, &u));
        q += u;
        qn -= u;
        st->have_huffman = 1;
    }
    ZG_FORWARD(zstd_huffman_streams(q, qn, four));
    *used = hs + csize;
    *regen_out = regen;
    return ZGPU_OK;
}

/* Sequences_Section (RFC 8878 3.1.1.3.2): the rest of the block, p[0, n). */
static zgpu_status zstd_sequences(const uint8_t *p, size_t n, zstd_state *st, size_t *nseq_out) {
    ZG_RETURN_IF(n < 1, ZGPU_ERR_CORRUPT_DATA, "zstd: missing sequences section");
    size_t pos, nseq;
    if (p[0] < 128) {
        nseq = p[0];
        pos = 1;
    } else if (p[0] < 255) {
        ZG_RETURN_IF(n < 2, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated sequences header");
        nseq = ((size_t)(p[0] - 128) << 8) + p[1];
        pos = 2;
    } else {
        ZG_RETURN_IF(n < 3, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated sequences header");
        nseq = (size_t)p[1] + ((size_t)p[2] << 8) + 0x7f00;
        pos = 3;
    }
    *nseq_out = nseq;
    if (nseq == 0) {
        ZG_RETURN_IF(pos != n, ZGPU_ERR_CORRUPT_DATA, "zstd: %zu bytes after an empty sequences section", n - pos);
        return ZGPU_OK;
    }
    ZG_RETURN_IF(pos >= n, ZGPU_ERR_CORRUPT_DATA, "zstd: missing symbol compression modes");
    unsigned modes = p[pos++];
    ZG_RETURN_IF(modes & 3, ZGPU_ERR_CORRUPT_DATA, "zstd: reserved bits of the compression modes set (0x%02x)", modes);
    static const char *const names[3] = {"literal length", "offset", "match length"};
    static const int max_sym[3] = {35, 31, 52}, max_log[3] = {9, 8, 9};
    for (int k = 0; k < 3; k++) {
        unsigned mode = (modes >> (6 - 2 * k)) & 3;
        if (mode == 1) { /* RLE: one symbol byte */
            ZG_RETURN_IF(pos >= n, ZGPU_ERR_CORRUPT_DATA, "zstd: missing %s RLE symbol", names[k]);
            ZG_RETURN_IF(p[pos] > max_sym[k], ZGPU_ERR_CORRUPT_DATA, "zstd: %s RLE symbol %u exceeds %d", names[k],
                         p[pos], max_sym[k]);
            pos++;
        } else if (mode == 2) {
            size_t u = 0;
            ZG_FORWARD(fse_table_desc(p + pos, n - pos, max_log[k], max_sym[k], names[k], &u));
            pos += u;
        } else if (mode == 3) {
            ZG_RETURN_IF(!st->have_seq_codes, ZGPU_ERR_CORRUPT_DATA, "zstd: %s repeat mode with no previous table",
                         names[k]);
        }
    }
    st->have_seq_codes = 1;
    ZG_RETURN_IF(pos >= n, ZGPU_ERR_CORRUPT_DATA, "zstd: %zu sequences with an empty bitstream", nseq);
    ZG_RETURN_IF(p[n - 1] == 0, ZGPU_ERR_CORRUPT_DATA, "zstd: sequence bitstream lacks its end mark");
    return ZGPU_OK;
}

zgpu_status zg_zstd_check(const uint8_t *p, size_t n, size_t expected) {
    ZG_RETURN_IF(n < 6, ZGPU_ERR_CORRUPT_DATA, "zstd: %zu bytes is shorter than a frame", n);
    uint32_t magic = rd32(p);
    if ((magic & 0xfffffff0u) == 0x184d2a50u) return zg_error(ZGPU_ERR_UNSUPPORTED, "zstd: skippable frame");
    ZG_RETURN_IF(magic != 0xfd2fb528u, ZGPU_ERR_CORRUPT_DATA, "zstd: bad magic 0x%08x", magic);
    uint8_t fhd = p[4];
    ZG_RETURN_IF(fhd & 0x08, ZGPU_ERR_CORRUPT_DATA, "zstd: reserved frame header bit set");
    int fcs_flag = fhd >> 6, single = (fhd >> 5) & 1, checksum = (fhd >> 2) & 1, did_flag = fhd & 3;
    static const int did_size[4] = {0, 1, 2, 4};
    int fcs_size = fcs_flag == 0 ? single : (fcs_flag == 1 ? 2 : (fcs_flag == 2 ? 4 : 8));
    size_t pos = 5;
    uint64_t window = 0;
    if (!single) {
        unsigned wd = p[5], wlog = 10 + (wd >> 3);
        ZG_RETURN_IF(wlog > 31, ZGPU_ERR_UNSUPPORTED, "zstd: window of 2^%u bytes", wlog);
        window = (1ull << wlog) + ((1ull << wlog) >> 3) * (wd & 7);
        pos++;
    }
    ZG_RETURN_IF(pos + did_size[did_flag] + fcs_size > n, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated frame header");
    uint64_t did = 0;
    for (int i = 0; i < did_size[did_flag]; i++) did |= (uint64_t)p[pos + i] << (8 * i);
    pos += did_size[did_flag];
    if (did) return zg_error(ZGPU_ERR_UNSUPPORTED, "zstd: frame needs dictionary %llu", (unsigned long long)did);
    uint64_t target = expected == SIZE_MAX ? UINT64_MAX : (uint64_t)expected; /* UINT64_MAX: unknown */
    if (fcs_size) {
        uint64_t fcs = 0;
        for (int i = 0; i < fcs_size; i++) fcs |= (uint64_t)p[pos + i] << (8 * i);
        if (fcs_size == 2) fcs += 256;
        pos += fcs_size;
        ZG_RETURN_IF(expected != SIZE_MAX && fcs != expected, ZGPU_ERR_CORRUPT_DATA,
                     "zstd: frame content size %llu, expected %zu", (unsigned long long)fcs, expected);
        target = fcs;
        if (single) window = fcs;
    }
    zstd_state st;
    memset(&st, 0, sizeof st);
    st.block_max = window < (128u << 10) ? (size_t)window : (128u << 10);
    /* bounds of the decoded size: exact for raw/RLE blocks and compressed blocks without sequences; otherwise
     * a compressed block makes at least its literals plus 3 bytes per sequence and at most block_max */
    uint64_t lo = 0, hi = 0;
    for (;;) {
        ZG_RETURN_IF(pos + 3 > n, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated block header at %zu", pos);
        uint32_t bh = (uint32_t)p[pos] | (uint32_t)p[pos + 1] << 8 | (uint32_t)p[pos + 2] << 16;
        pos += 3;
        int last = bh & 1, type = (bh >> 1) & 3;
        size_t bsize = bh >> 3;
        ZG_RETURN_IF(type == 3, ZGPU_ERR_CORRUPT_DATA, "zstd: reserved block type");
        /* raw/RLE sizes are decoded sizes, limited by the window; a compressed block's stored size only by
         * 128 KiB (libzstd takes one larger than a small single-segment frame's content) */
        size_t limit = type == 2 ? (128u << 10) : st.block_max;
        ZG_RETURN_IF(bsize > limit, ZGPU_ERR_CORRUPT_DATA, "zstd: block of %zu bytes exceeds the maximum %zu", bsize, limit);
        size_t stored = type == 1 ? 1 : bsize;
        ZG_RETURN_IF(stored > n - pos, ZGPU_ERR_CORRUPT_DATA, "zstd: block of %zu bytes runs past the end", stored);
        if (type == 2) {
            size_t used = 0, lit = 0, nseq = 0;
            ZG_FORWARD(zstd_literals(p + pos, bsize, &st, &used, &lit));
            ZG_FORWARD(zstd_sequences(p + pos + used, bsize - used, &st, &nseq));
            ZG_RETURN_IF(lit + 3 * (uint64_t)nseq > st.block_max, ZGPU_ERR_CORRUPT_DATA,
                         "zstd: %zu literals and %zu sequences exceed the block maximum %zu", lit, nseq, st.block_max);
            lo += lit + 3 * (uint64_t)nseq;
            hi += nseq ? st.block_max : lit; /* without sequences the block is its literals */
        } else {
            lo += bsize;
            hi += bsize;
        }
        ZG_RETURN_IF(target != UINT64_MAX && lo > target, ZGPU_ERR_CORRUPT_DATA,
                     "zstd: blocks decode to more than %llu bytes", (unsigned long long)target);
        pos += stored;
        if (last) break;
    }
    ZG_RETURN_IF(target != UINT64_MAX && hi < target, ZGPU_ERR_CORRUPT_DATA,
                 "zstd: blocks decode to at most %llu bytes, expected %llu", (unsigned long long)hi,
                 (unsigned long long)target);
    if (checksum) {
        ZG_RETURN_IF(n - pos < 4, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated content checksum");
        pos += 4;
    }
    if (pos != n) return zg_error(ZGPU_ERR_UNSUPPORTED, "zstd: %zu bytes follow the first frame", n - pos);
    return ZGPU_OK;
}
