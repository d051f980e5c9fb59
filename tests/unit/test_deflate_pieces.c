/* Joining independently compressed DEFLATE pieces into one stream (src/gpuencode/deflate_pieces.h), on the CPU:
 * pieces compressed by zlib in every block form (stored, fixed, dynamic; one block or many) are walked, joined
 * exactly as the GPU's join kernel does (byte by byte through zg_dp_joined_byte), and the joined stream inflated
 * by zlib as one raw stream and as gzip / zlib framing would wrap it; the walker's end positions are checked
 * against zlib's own (inflate's data_type bits), and damaged or truncated pieces must fail the walk, not loop. */
#include <zlib.h>

#include "gpuencode/deflate_pieces.h"
#include "test.h"

/* Data: 0 random, 1 text-like, 2 long runs (labels), 3 uint16 ramps with noise. */
static void fill(uint8_t *p, size_t n, int kind, uint32_t seed) {
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        if (kind == 0) p[i] = (uint8_t)(x >> 24);
        else if (kind == 1) p[i] = (uint8_t)("the quick brown fox jumps "[(i / 3 + (x >> 30)) % 26]);
        else if (kind == 2) p[i] = (uint8_t)((i / 4096) * 37 + seed);
        else p[i] = (uint8_t)(((i / 2 * 3 + seed) >> (i % 2 ? 8 : 0)) ^ (i % 2 ? 0 : (x >> 29)));
    }
}

/* Raw DEFLATE of p[0, n) by zlib at level/strategy; memLevel 1 makes zlib close blocks often (many blocks). */
static size_t deflate_raw(const uint8_t *p, size_t n, uint8_t *out, size_t cap, int level, int strategy,
                          int mem_level) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, level, Z_DEFLATED, -15, mem_level, strategy) != Z_OK) return 0;
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    const int r = deflate(&z, Z_FINISH);
    const size_t got = z.total_out;
    deflateEnd(&z);
    return r == Z_STREAM_END ? got : 0;
}

/* Inflates the raw stream s (n bytes) into out; the bytes produced, or (size_t)-1 on an error or a stream that
 * does not end exactly at its last byte. */
static size_t inflate_raw(const uint8_t *s, size_t n, uint8_t *out, size_t cap) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, -15) != Z_OK) return (size_t)-1;
    z.next_in = (Bytef *)s;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    const int r = inflate(&z, Z_FINISH);
    const size_t got = z.total_out, left = z.avail_in;
    inflateEnd(&z);
    return r == Z_STREAM_END && left == 0 ? got : (size_t)-1;
}

/* One chunk of n bytes cut into pieces of `piece` bytes, each compressed alone, walked and joined; 1 if zlib
 * inflates the joined stream back to the chunk. */
static void check_join(const uint8_t *src, size_t n, size_t piece, int level, int strategy, int mem_level,
                       const char *what) {
    const size_t np = n ? (n + piece - 1) / piece : 0;
    const size_t cap = piece + piece / 8 + 64;
    uint8_t *comp = malloc(np * cap + 1), *joined = malloc(np * (cap + ZG_DP_JOIN_BYTES) + 1), *back = malloc(n + 1);
    zg_dp_huff lit, dist;
    size_t at = 0;
    int ok = 1;
    for (size_t k = 0; k < np && ok; k++) {
        const size_t len = n - k * piece < piece ? n - k * piece : piece;
        uint8_t *c = comp + k * cap;
        const size_t clen = deflate_raw(src + k * piece, len, c, cap, level, strategy, mem_level);
        uint64_t hdr = 0, end = 0;
        const int w = zg_dp_walk(c, clen, &hdr, &end, &lit, &dist);
        CHECK_MSG(w == 0 && clen > 0, "%s: piece %zu of %zu: walk %d", what, k, np, w);
        if (w) {
            ok = 0;
            break;
        }
        /* the walk ends in the stream's last byte: zlib's output is the stream and its padding, nothing more */
        CHECK_MSG((end + 7) / 8 == clen, "%s: piece %zu ends at bit %llu of %zu bytes", what, k,
                  (unsigned long long)end, clen);
        CHECK_MSG(((c[hdr / 8] >> (hdr % 8)) & 1) == 1, "%s: piece %zu: BFINAL not at bit %llu", what, k,
                  (unsigned long long)hdr);
        const int last = k + 1 == np;
        const uint64_t jn = zg_dp_joined_bytes(end, last);
        CHECK(jn <= clen + ZG_DP_JOIN_BYTES);
        for (uint64_t i = 0; i < jn; i++) joined[at + i] = zg_dp_joined_byte(c, i, hdr, end, last);
        at += jn;
    }
    if (ok && np) {
        const size_t got = inflate_raw(joined, at, back, n + 1);
        CHECK_MSG(got == n && memcmp(back, src, n) == 0, "%s: %zu bytes in %zu pieces: inflated to %zu", what, n, np,
                  got);
    }
    free(comp);
    free(joined);
    free(back);
}

static void test_joins(void) {
    static const size_t sizes[] = {1, 100, 4095, 65536, 65537, 300000};
    static const size_t pieces[] = {4096, 65536};
    struct { int level, strategy, mem; const char *name; } forms[] = {
        {0, Z_DEFAULT_STRATEGY, 8, "stored"},       {1, Z_FIXED, 8, "fixed"},
        {6, Z_DEFAULT_STRATEGY, 8, "dynamic"},      {9, Z_DEFAULT_STRATEGY, 1, "dynamic, many blocks"},
        {6, Z_HUFFMAN_ONLY, 8, "Huffman only"},     {6, Z_RLE, 1, "RLE, many blocks"},
    };
    const size_t cap = (size_t)1 << 20;
    uint8_t *src = malloc(cap);
    char what[160];
    for (int kind = 0; kind < 4; kind++) {
        fill(src, cap, kind, 11u + (uint32_t)kind);
        for (size_t f = 0; f < sizeof forms / sizeof *forms; f++)
            for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
                for (size_t q = 0; q < sizeof pieces / sizeof *pieces; q++) {
                    if (sizes[s] / pieces[q] > 16) continue; /* (slow, nothing new) */
                    snprintf(what, sizeof what, "data %d, %s, %zu bytes, pieces of %zu", kind, forms[f].name, sizes[s],
                             pieces[q]);
                    check_join(src, sizes[s], pieces[q], forms[f].level, forms[f].strategy, forms[f].mem, what);
                }
    }
    free(src);
}

/* A piece with many blocks: the walk finds the last one's header, not the first. */
static void test_final_block_found(void) {
    const size_t n = 1 << 20;
    uint8_t *src = malloc(n), *c = malloc(n + n / 8 + 64);
    fill(src, n, 1, 5);
    const size_t clen = deflate_raw(src, n, c, n + n / 8 + 64, 9, Z_DEFAULT_STRATEGY, 1);
    zg_dp_huff lit, dist;
    uint64_t hdr = 0, end = 0;
    CHECK(zg_dp_walk(c, clen, &hdr, &end, &lit, &dist) == 0);
    CHECK_MSG(hdr > 64, "final block header at bit %llu: the first block's?", (unsigned long long)hdr);
    /* the bit before `end`'s byte: zlib's padding after the end is zero */
    CHECK((end + 7) / 8 == clen);
    if (end % 8) CHECK((c[end / 8] >> (end % 8)) == 0);
    free(src);
    free(c);
}

/* Damaged and truncated pieces fail the walk (and return: no loop, no read past the end under ASan). */
static void test_bad_pieces(void) {
    const size_t n = 65536;
    uint8_t *src = malloc(n), *c = malloc(n * 2), *d = malloc(n * 2);
    zg_dp_huff lit, dist;
    uint64_t hdr, end;
    for (int kind = 0; kind < 4; kind++) {
        fill(src, n, kind, 3);
        for (int level = 0; level <= 9; level += 3) {
            const size_t clen = deflate_raw(src, n, c, n * 2, level, Z_DEFAULT_STRATEGY, 8);
            CHECK(zg_dp_walk(c, clen, &hdr, &end, &lit, &dist) == 0);
            for (size_t cut = 0; cut + 1 < clen; cut += clen / 13 + 1) /* every truncation fails */
                CHECK_MSG(zg_dp_walk(c, cut, &hdr, &end, &lit, &dist) != 0, "kind %d level %d cut at %zu of %zu", kind,
                          level, cut, clen);
            uint32_t x = 99;
            for (int t = 0; t < 40; t++) { /* flipped bits: the walk ends, with whatever answer */
                memcpy(d, c, clen);
                x = x * 1664525u + 1013904223u;
                d[(x >> 8) % clen] ^= (uint8_t)(1u << (x % 8));
                const int w = zg_dp_walk(d, clen, &hdr, &end, &lit, &dist);
                if (w == 0) CHECK(end <= clen * 8 && hdr < end);
                else CHECK(w > 0);
            }
        }
    }
    const uint8_t reserved[] = {0x07}; /* BFINAL 1, type 3 */
    CHECK(zg_dp_walk(reserved, 1, &hdr, &end, &lit, &dist) != 0);
    const uint8_t bad_len[] = {0x01, 0x05, 0x00, 0x00, 0x00}; /* stored, LEN 5, NLEN 0 */
    CHECK(zg_dp_walk(bad_len, sizeof bad_len, &hdr, &end, &lit, &dist) != 0);
    CHECK(zg_dp_walk(NULL, 0, &hdr, &end, &lit, &dist) != 0);
    free(src);
    free(c);
    free(d);
}

/* The joined bytes of a non-final piece end in an empty stored block; of the last, at its end. */
static void test_joined_bytes(void) {
    for (uint64_t end = 1; end < 64; end++) {
        const uint64_t n = zg_dp_joined_bytes(end, 0);
        CHECK_EQ_U64(n, (end + 3 + 7) / 8 + 4);
        CHECK_EQ_U64(zg_dp_joined_bytes(end, 1), (end + 7) / 8);
        const uint8_t ff[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
        uint8_t out[16];
        for (uint64_t i = 0; i < n; i++) out[i] = zg_dp_joined_byte(ff, i, 0, end, 0);
        CHECK(out[n - 4] == 0 && out[n - 3] == 0 && out[n - 2] == 0xff && out[n - 1] == 0xff);
        CHECK((out[0] & 1) == 0); /* BFINAL cleared */
        for (uint64_t b = end; b < (n - 4) * 8; b++) CHECK(((out[b / 8] >> (b % 8)) & 1) == 0);
        for (uint64_t b = 1; b < end; b++) CHECK(((out[b / 8] >> (b % 8)) & 1) == 1);
    }
}

int main(void) {
    test_joined_bytes();
    test_final_block_found();
    test_bad_pieces();
    test_joins();
    TEST_MAIN_END();
}
