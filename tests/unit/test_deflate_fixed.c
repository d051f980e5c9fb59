/* zgpu's fixed-Huffman DEFLATE pieces (src/gpuencode/deflate_fixed.h) on the CPU: the length and distance codes
 * against RFC 1951's tables, then chunks of several kinds cut in 64 KiB pieces, each piece encoded as the GPU
 * encodes it and inflated by zlib as a raw stream with the 32 KiB before it as its dictionary (a piece may reach
 * back into the one before: they are joined into one stream), walked by deflate_pieces.h's walker (which the join
 * needs) to its exact end; and the ratio on the benchmark's label cells against zlib's level 6. */
#include <zlib.h>

#include "gpuencode/deflate_fixed.h"
#include "gpuencode/deflate_pieces.h"
#include "test.h"

static void test_codes(void) {
    /* lengths: every 3..258 maps to a symbol whose base + extra gives it back */
    static const uint16_t base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
    static const uint8_t extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    uint32_t bad = 0;
    for (uint32_t len = 3; len <= 258; len++) {
        uint32_t xb, xv;
        const uint32_t s = zg_df_len_sym(len, &xb, &xv);
        bad += s < 257 || s > 285 || xb != extra[s - 257] || base[s - 257] + xv != len || xv >= (1u << xb);
    }
    CHECK_EQ_U64(bad, 0);
    /* distances 1..32768 against the table built from RFC 1951 3.2.5 */
    uint32_t dbase[30], dextra[30];
    for (uint32_t c = 0; c < 30; c++) {
        dextra[c] = c < 4 ? 0 : c / 2 - 1;
        dbase[c] = c == 0 ? 1 : dbase[c - 1] + (1u << dextra[c - 1]);
    }
    bad = 0;
    for (uint32_t d = 1; d <= 32768; d++) {
        uint32_t xb, xv;
        const uint32_t c = zg_df_dist_code(d, &xb, &xv);
        bad += c > 29 || xb != dextra[c] || dbase[c] + xv != d;
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(dbase[29], 24577);
    /* matches split into parts of 3..258 */
    bad = 0;
    for (uint32_t len = 3; len < 2000; len++) {
        uint32_t left = len, sum = 0;
        while (left) {
            const uint32_t part = zg_df_match_part(&left);
            bad += part < 3 || part > 258;
            sum += part;
        }
        bad += sum != len;
    }
    CHECK_EQ_U64(bad, 0);
}

/* Data: 0 random, 1 zeros, 2 label cells (the benchmark's: uint32, 256 x 256 planes, cells of 16 x 24 x 20), 3 text,
 * 4 short periods with noise. */
static void fill(uint8_t *p, size_t n, int kind, uint32_t seed) {
    uint32_t x = seed * 2654435761u + 3;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        if (kind == 0) p[i] = (uint8_t)(x >> 24);
        else if (kind == 1) p[i] = 0;
        else if (kind == 3) p[i] = (uint8_t)("deflate pieces of zarr chunks "[(i * 3 / 2 + (x >> 30)) % 30]);
        else if (kind == 4) p[i] = (uint8_t)((x >> 24) < 8 ? x >> 16 : (i % (2 + seed % 5)) * 17);
    }
    if (kind == 2)
        for (size_t i = 0; i + 4 <= n; i += 4) {
            const size_t e = i / 4, xx = e % 256, y = e / 256 % 256, z = e / (256 * 256);
            const uint32_t v = (uint32_t)((z / 16 * 7919 + y / 24 * 104729 + xx / 20 * 1299709) % 50000);
            memcpy(p + i, &v, 4);
        }
}

/* Encodes chunk c (n bytes) piece by piece, checks each; returns the total of the pieces' sizes. */
static size_t check_chunk(const uint8_t *c, size_t n, const zg_ze_hints *hints, zg_ze_seq *seqs, uint16_t *table,
                          const char *what) {
    uint8_t *out = malloc(zg_df_bound(ZG_DP_PIECE_BYTES)), *back = malloc(ZG_DP_PIECE_BYTES);
    zg_dp_huff *lit = malloc(sizeof *lit), *dist = malloc(sizeof *dist);
    size_t total = 0, bad = 0;
    for (size_t b = 0; b < n; b += ZG_DP_PIECE_BYTES) {
        const uint32_t len = (uint32_t)(n - b < ZG_DP_PIECE_BYTES ? n - b : ZG_DP_PIECE_BYTES);
        const uint32_t m = zg_df_piece_ref(c, (uint32_t)b, len, hints, out, seqs, table);
        total += m;
        z_stream z;
        memset(&z, 0, sizeof z);
        inflateInit2(&z, -15);
        const size_t dict = b < ZG_DF_WINDOW ? b : ZG_DF_WINDOW;
        if (dict) inflateSetDictionary(&z, c + b - dict, (uInt)dict);
        z.next_in = out, z.avail_in = m, z.next_out = back, z.avail_out = len;
        const int r = inflate(&z, Z_FINISH);
        const int ok = m > 0 && r == Z_STREAM_END && z.avail_in == 0 && z.total_out == len && !memcmp(back, c + b, len);
        inflateEnd(&z);
        uint64_t final_hdr = 0, end = 0;
        const int walked = zg_dp_walk(out, m, &final_hdr, &end, lit, dist);
        const int walk_ok = walked == 0 && final_hdr == 0 && (end + 7) / 8 == m;
        if ((!ok || !walk_ok) && bad++ < 4)
            fprintf(stderr, "  %s: piece at %zu (%u bytes, %u stored): inflate %d%s, walk %d (end bit %llu)\n", what,
                    b, len, m, r, ok ? "" : " wrong", walked, (unsigned long long)end);
    }
    CHECK_MSG(bad == 0, "%s: %zu pieces wrong", what, bad);
    free(out), free(back), free(lit), free(dist);
    return total;
}

int main(void) {
    test_codes();
    zg_ze_seq *seqs = malloc(ZG_ZE_BLOCK_SEQS * sizeof *seqs);
    uint16_t table[ZG_ZE_HASH_ENTRIES];
    const size_t n = (size_t)16 << 20; /* a benchmark chunk: 64 x 256 x 256 uint32 */
    uint8_t *c = malloc(n);
    static const char *const names[5] = {"random", "zeros", "labels", "text", "periods"};
    const size_t sizes[] = {1, 3, 100, 4096, 65535, 65536, 65537, 200000 + 3};
    char what[64];
    for (int kind = 0; kind < 5; kind++)
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            fill(c, sizes[k], kind, (uint32_t)k);
            const zg_ze_hints h = zg_df_hints((zg_ze_hints){{kind == 2 ? 4u : 1u, 1024, 262144}});
            snprintf(what, sizeof what, "%s, %zu bytes", names[kind], sizes[k]);
            check_chunk(c, sizes[k], &h, seqs, table, what);
        }
    /* the label cells: hints (element, row; the plane is past the window), the ratio against zlib's level 5 (the
     * benchmark's gzip level; zlib: 33:1 on this chunk, 151:1 on its first 32 planes at level 6) */
    fill(c, n, 2, 0);
    const zg_ze_hints h = zg_df_hints((zg_ze_hints){{4, 1024, 262144}});
    CHECK(h.off[0] == 4 && h.off[1] == 1024 && h.off[2] == 0);
    const size_t ours = check_chunk(c, n, &h, seqs, table, "labels 16 MiB");
    uLongf zn = compressBound(n);
    uint8_t *z = malloc(zn);
    compress2(z, &zn, c, n, 5);
    printf("labels 16 MiB: fixed-Huffman pieces %.1f:1, zlib level 5 %.1f:1\n", (double)n / (double)ours,
           (double)n / (double)zn);
    CHECK_MSG(ours * 9 <= zn * 10, "labels: %zu bytes against zlib's %lu", ours, (unsigned long)zn);
    free(z);
    free(c);
    free(seqs);
    TEST_MAIN_END();
}
