/* One DEFLATE stream from pieces compressed independently (the GPU encoder's gzip and zlib, encode_kernels.cu):
 * nvCOMP's Deflate gives each chunk one thread block, so a chunk of 8-16 MiB took ~1 s a GiB; cut into pieces of
 * ZG_DP_PIECE_BYTES, every piece compresses in parallel, and the pieces are joined into the chunk's one stream as
 * pigz joins its blocks (RFC 1951 allows it; a reader sees one stream):
 *   - each piece but the last loses its final-block flag (BFINAL of its last block's header),
 *   - and is closed by an empty stored block (3 zero bits, zero bits to the byte boundary, LEN 0000, NLEN ffff),
 *     so the next piece starts on a byte boundary, as it did alone, and is copied as it is;
 *   - the last piece keeps its flag; bits past its end (the padding) are zeroed.
 * Where a piece's last block starts and ends is found by walking its blocks (zg_dp_walk: block headers, Huffman
 * tables, and each code of the compressed blocks decoded but not its output): a few per cent of the compression's
 * time. A piece that does not walk (not a DEFLATE stream, runs past its bytes) fails its chunk, which the caller
 * then encodes on the host: a chunk is never written from a piece that was not understood.
 *
 * Matches never reach across pieces (each was compressed alone), so the ratio loses only the matches the first
 * 32 KiB of each piece would have had into the one before, and pays 5 bytes a piece.
 *
 * Header-only (static inline, __host__ __device__ under nvcc): tests/unit/test_deflate_pieces.c checks it against
 * zlib without a GPU. */
#ifndef ZG_DEFLATE_PIECES_H
#define ZG_DEFLATE_PIECES_H
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define ZG_DP_FN static __host__ __device__ inline
#else
#define ZG_DP_FN static inline
#endif

/** Bytes of a chunk each piece takes (its last piece fewer). 64 KiB: nvCOMP's Deflate is fastest near it, and the
 *  5 bytes a piece cost 0.008%. */
#define ZG_DP_PIECE_BYTES ((size_t)65536)
/** Bytes a piece's stream can grow by in the join (the empty stored block: up to 1 byte of its header's bits, 4 of
 *  LEN and NLEN). */
#define ZG_DP_JOIN_BYTES 5u

/** Pieces of a chunk of n bytes (0 for an empty chunk). */
ZG_DP_FN size_t zg_dp_pieces(size_t n) { return (n + ZG_DP_PIECE_BYTES - 1) / ZG_DP_PIECE_BYTES; }

/* LSB-first bit reader over p[0, nbytes), refilled a byte at a time (no reads past the end). */
typedef struct zg_dp_bits {
    const uint8_t *p;
    uint64_t nbytes, next; /* next byte to load */
    uint64_t buf;
    unsigned cnt;          /* bits in buf */
    int bad;               /* read past the end */
} zg_dp_bits;

ZG_DP_FN uint64_t zg_dp_pos(const zg_dp_bits *b) { return b->next * 8 - b->cnt; }

/* Peeks at the next n <= 32 bits (zeros past the end), loading what is there. */
ZG_DP_FN uint32_t zg_dp_peek(zg_dp_bits *b, unsigned n) {
    while (b->cnt < n && b->next < b->nbytes) {
        b->buf |= (uint64_t)b->p[b->next++] << b->cnt;
        b->cnt += 8;
    }
    return (uint32_t)(b->buf & (((uint64_t)1 << n) - 1));
}

/* Drops n bits that zg_dp_peek saw; past what is there: bad. */
ZG_DP_FN void zg_dp_drop(zg_dp_bits *b, unsigned n) {
    if (n > b->cnt) {
        b->bad = 1;
        return;
    }
    b->buf >>= n;
    b->cnt -= n;
}

/* The next n <= 32 bits, consumed; 0 and bad where the stream ends first. */
ZG_DP_FN uint32_t zg_dp_get(zg_dp_bits *b, unsigned n) {
    const uint32_t v = zg_dp_peek(b, n);
    zg_dp_drop(b, n);
    return b->bad ? 0 : v;
}

/* Codes of up to ZG_DP_FAST_BITS bits decode with one lookup, longer ones bit by bit. */
#define ZG_DP_FAST_BITS 9

/* A canonical Huffman code as RFC 1951 builds it from code lengths: count[l] codes of length l, symbols in code
 * order; fast[v]: for the next ZG_DP_FAST_BITS bits v (first bit lowest), symbol << 4 | length of a code that
 * short, 0 where the code is longer (or none). */
typedef struct zg_dp_huff {
    uint16_t count[16];
    uint16_t symbol[288];
    uint16_t fast[1u << ZG_DP_FAST_BITS];
} zg_dp_huff;

/* Builds h from len[0, n); 0 for a usable code (complete, or incomplete as zlib allows), nonzero for an
 * over-subscribed one. */
ZG_DP_FN int zg_dp_build(zg_dp_huff *h, const uint8_t *len, unsigned n) {
    for (unsigned l = 0; l < 16; l++) h->count[l] = 0;
    for (unsigned s = 0; s < n; s++) h->count[len[s]]++;
    if (h->count[0] == n) return 0; /* no codes: decoding any fails */
    int left = 1;
    for (unsigned l = 1; l < 16; l++) {
        left <<= 1;
        left -= h->count[l];
        if (left < 0) return 1;
    }
    uint16_t offs[16];
    offs[1] = 0;
    for (unsigned l = 1; l < 15; l++) offs[l + 1] = (uint16_t)(offs[l] + h->count[l]);
    for (unsigned s = 0; s < n; s++)
        if (len[s]) h->symbol[offs[len[s]]++] = (uint16_t)s;
    /* the lookup table: each short code's bits reversed (codes are sent first bit first, read lowest first) */
    for (unsigned v = 0; v < (1u << ZG_DP_FAST_BITS); v++) h->fast[v] = 0;
    unsigned code = 0, k = 0;
    for (unsigned l = 1; l <= ZG_DP_FAST_BITS; l++) {
        for (unsigned c = 0; c < h->count[l]; c++, code++, k++) {
            unsigned r = 0;
            for (unsigned i = 0; i < l; i++) r |= ((code >> i) & 1u) << (l - 1 - i);
            for (; r < (1u << ZG_DP_FAST_BITS); r += 1u << l) h->fast[r] = (uint16_t)(h->symbol[k] << 4 | l);
        }
        code <<= 1;
    }
    return 0;
}

/* The next symbol of code h, or -1 (no such code, or past the end): one lookup for a short code, else bit by bit,
 * the first bit the code's most significant. */
ZG_DP_FN int zg_dp_decode(zg_dp_bits *b, const zg_dp_huff *h) {
    const uint32_t v = zg_dp_peek(b, 15);
    const unsigned f = h->fast[v & ((1u << ZG_DP_FAST_BITS) - 1)];
    if (f) {
        zg_dp_drop(b, f & 15);
        return b->bad ? -1 : (int)(f >> 4);
    }
    int code = 0, first = 0, index = 0;
    for (unsigned l = 1; l < 16; l++) {
        code |= (int)((v >> (l - 1)) & 1u);
        const int count = h->count[l];
        if (code - first < count) {
            zg_dp_drop(b, l);
            return b->bad ? -1 : h->symbol[index + code - first];
        }
        index += count;
        first += count;
        first <<= 1;
        code <<= 1;
    }
    return -1;
}

/** Walks the DEFLATE stream p[0, nbytes) to its final block: 0 with *final_hdr the bit position of that block's
 *  header (its first bit is BFINAL) and *end the bit just past the block (past its end-of-block code, or a stored
 *  block's last byte); nonzero where the stream is not one this accepts: a reserved block type, a bad stored
 *  length, a bad or over-subscribed code, a symbol that has no meaning, or a stream that ends first. lit and dist
 *  are working space (kept outside so a GPU thread can put them where it likes). */
ZG_DP_FN int zg_dp_walk(const uint8_t *p, uint64_t nbytes, uint64_t *final_hdr, uint64_t *end, zg_dp_huff *lit,
                        zg_dp_huff *dist) {
    /* extra bits of length codes 257..285 and distance codes 0..29 */
    const uint8_t lext[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    const uint8_t dext[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
    const uint8_t clorder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    zg_dp_bits b = {p, nbytes, 0, 0, 0, 0};
    uint8_t len[320];
    for (;;) {
        const uint64_t hdr = zg_dp_pos(&b);
        const uint32_t last = zg_dp_get(&b, 1), type = zg_dp_get(&b, 2);
        if (b.bad) return 1;
        if (type == 0) { /* stored: to the byte boundary, LEN, NLEN, LEN bytes */
            zg_dp_get(&b, b.cnt % 8);
            const uint32_t n = zg_dp_get(&b, 16), nn = zg_dp_get(&b, 16);
            if (b.bad || n != (~nn & 0xffffu)) return 2;
            const uint64_t at = zg_dp_pos(&b) / 8 + n; /* (the buffer holds whole bytes here) */
            if (at > nbytes) return 3;
            b.next = at;
            b.buf = 0;
            b.cnt = 0;
        } else if (type == 3) {
            return 4;
        } else {
            unsigned nlit = 288, ndist = 30;
            if (type == 1) { /* fixed codes */
                for (unsigned s = 0; s < 288; s++) len[s] = s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
                for (unsigned s = 0; s < 30; s++) len[288 + s] = 5;
                if (zg_dp_build(lit, len, 288) || zg_dp_build(dist, len + 288, 30)) return 5;
            } else { /* dynamic: the code-length code, then the two codes' lengths */
                nlit = zg_dp_get(&b, 5) + 257;
                ndist = zg_dp_get(&b, 5) + 1;
                const unsigned ncl = zg_dp_get(&b, 4) + 4;
                if (b.bad || nlit > 286 || ndist > 30) return 6;
                uint8_t cl[19];
                for (unsigned i = 0; i < 19; i++) cl[clorder[i]] = i < ncl ? (uint8_t)zg_dp_get(&b, 3) : 0;
                if (b.bad || zg_dp_build(lit, cl, 19)) return 7;
                for (unsigned i = 0; i < nlit + ndist;) {
                    const int s = zg_dp_decode(&b, lit);
                    if (s < 0) return 8;
                    if (s < 16) {
                        len[i++] = (uint8_t)s;
                        continue;
                    }
                    unsigned rep, v = 0;
                    if (s == 16) {
                        if (i == 0) return 9;
                        v = len[i - 1];
                        rep = 3 + zg_dp_get(&b, 2);
                    } else if (s == 17) {
                        rep = 3 + zg_dp_get(&b, 3);
                    } else {
                        rep = 11 + zg_dp_get(&b, 7);
                    }
                    if (b.bad || i + rep > nlit + ndist) return 10;
                    while (rep--) len[i++] = (uint8_t)v;
                }
                if (len[256] == 0) return 11; /* no end-of-block code */
                if (zg_dp_build(lit, len, nlit) || zg_dp_build(dist, len + nlit, ndist)) return 12;
            }
            for (;;) { /* the block's codes, to its end-of-block */
                int s = zg_dp_decode(&b, lit);
                if (s < 0) return 13;
                if (s < 256) continue;
                if (s == 256) break;
                s -= 257;
                if (s >= 29) return 14;
                zg_dp_get(&b, lext[s]);
                const int d = zg_dp_decode(&b, dist);
                if (d < 0 || d >= 30) return 15;
                zg_dp_get(&b, dext[d]);
                if (b.bad) return 16;
            }
        }
        if (last) {
            *final_hdr = hdr;
            *end = zg_dp_pos(&b);
            return 0;
        }
    }
}

/** Bytes piece's stream takes in the joined one: a piece that ends at bit `end`, the last or not. */
ZG_DP_FN uint64_t zg_dp_joined_bytes(uint64_t end, int last) {
    return last ? (end + 7) / 8 : (end + 3 + 7) / 8 + 4;
}

/** Byte i (< zg_dp_joined_bytes) of a piece's part of the joined stream, from its own stream src (of which bytes
 *  below (end + 7) / 8 are read). */
ZG_DP_FN uint8_t zg_dp_joined_byte(const uint8_t *src, uint64_t i, uint64_t final_hdr, uint64_t end, int last) {
    const uint64_t n = zg_dp_joined_bytes(end, last);
    if (!last && i >= n - 4) return i - (n - 4) < 2 ? 0x00 : 0xff; /* LEN 0, NLEN 0xffff */
    uint8_t v = i < (end + 7) / 8 ? src[i] : 0;
    if (!last && i == final_hdr / 8) v = (uint8_t)(v & ~(1u << (final_hdr % 8))); /* not the final block now */
    if (i == end / 8) v = (uint8_t)(v & ((1u << (end % 8)) - 1)); /* the stored block's header and padding: 0 */
    else if (i > end / 8) v = 0;
    return v;
}

#endif
