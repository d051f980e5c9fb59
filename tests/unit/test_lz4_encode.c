/* zgpu's LZ4 block encoder (src/gpuencode/lz4_encode.h) on the CPU: blocks of many kinds and sizes (0 to 128 KiB,
 * around LZ4's end rules) encoded as the GPU encodes them, decoded by liblz4's LZ4_decompress_safe and compared byte
 * for byte; the end rules checked on every block; ratios on the benchmark's OCT volume as blosc shuffles it
 * against liblz4's default level. */
#include <lz4.h>
#include <math.h>

#include "gpuencode/lz4_encode.h"
#include "test.h"

/* Data: 0 random, 1 zeros, 2 text, 3 short periods with noise, 4 runs of 3 then random, 5 uint32 label cells. */
static void fill(uint8_t *p, size_t n, int kind, uint32_t seed) {
    uint32_t x = seed * 2654435761u + 5;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        if (kind == 0) p[i] = (uint8_t)(x >> 24);
        else if (kind == 1) p[i] = 0;
        else if (kind == 2) p[i] = (uint8_t)("blosc streams of lz4 blocks "[(i * 5 / 3 + (x >> 31)) % 28]);
        else if (kind == 3) p[i] = (uint8_t)((x >> 24) < 6 ? x >> 16 : (i % (1 + seed % 9)) * 29);
        else if (kind == 4) p[i] = (uint8_t)(i < n / 2 ? i / 3 : x >> 24);
        else p[i] = (uint8_t)(i % 4 == 0 ? (i / 80) * 7 : 0);
    }
}

/* Encodes, checks the end rules and decodes; returns the block's size (0 on failure). */
static uint32_t round_trip(const uint8_t *in, uint32_t n, const zg_ze_hints *h, zg_ze_seq *seqs, uint16_t *table,
                           const char *what) {
    uint8_t *out = malloc(zg_lz_bound(n)), *back = malloc(n + 64);
    const uint32_t m = zg_lz_block_ref(in, n, h, out, seqs, table);
    const int got = LZ4_decompress_safe((const char *)out, (char *)back, (int)m, (int)n + 64);
    int ok = m <= zg_lz_bound(n) && got == (int)n && memcmp(back, in, n) == 0;
    /* the end rules: walk the sequences; the last match starts 12 or more bytes before the end, ends 5 before */
    uint32_t at = 0, pos = 0, last_ms = 0, last_me = 0;
    int matches = 0;
    while (ok && at < m) {
        const uint8_t tok = out[at++];
        uint32_t lit = tok >> 4, ml = tok & 15;
        if (lit == 15)
            do lit += out[at]; while (out[at++] == 255);
        at += lit, pos += lit;
        if (at >= m) break; /* the last sequence: literals alone */
        at += 2;
        if (ml == 15)
            do ml += out[at]; while (out[at++] == 255);
        last_ms = pos, last_me = pos + ml + 4, pos = last_me, matches = 1;
    }
    if (matches) ok = ok && last_ms + 12 <= n && last_me + 5 <= n;
    CHECK_MSG(ok, "%s (%u bytes): %u stored, LZ4_decompress_safe %d, last match %u..%u", what, n, m, got, last_ms,
              last_me);
    free(out), free(back);
    return ok ? m : 0;
}

int main(void) {
    zg_ze_seq *seqs = malloc(ZG_ZE_BLOCK_SEQS * sizeof *seqs);
    uint16_t table[ZG_ZE_HASH_ENTRIES];
    uint8_t *buf = malloc(ZG_LZ_MAX_INPUT);
    static const char *const names[6] = {"random", "zeros", "text", "periods", "runs then random", "cells"};
    const uint32_t sizes[] = {0, 1, 4, 5, 11, 12, 13, 16, 17, 20, 64, 255, 4095, 4096, 4097, 65535, 65536, 100000,
                              131071, 131072};
    char what[64];
    const zg_ze_hints none = {{0, 0, 0}};
    for (int kind = 0; kind < 6; kind++)
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
            for (uint32_t seed = 0; seed < 3; seed++) {
                fill(buf, sizes[k], kind, seed);
                const zg_ze_hints h = zg_lz_hints((zg_ze_hints){{4, 1024, 65536 + seed}});
                snprintf(what, sizeof what, "%s, seed %u", names[kind], seed);
                round_trip(buf, sizes[k], seed ? &h : &none, seqs, table, what);
            }
    /* hints past LZ4's offsets are dropped */
    const zg_ze_hints far = zg_lz_hints((zg_ze_hints){{2, 65535, 65536}});
    CHECK(far.off[0] == 2 && far.off[1] == 65535 && far.off[2] == 0);
    /* the benchmark's OCT volume (bench/datasets.py's formula, another noise generator) as blosc stores a chunk of
     * 64 x 256 x 256 at clevel 5: blocks of 128 KiB shuffled by byte, each byte plane one stream of 64 KiB with its
     * rows 256 bytes apart; ratio within 10% of liblz4's */
    size_t ours = 0, theirs = 0, total = 0;
    uint16_t *oct = malloc(ZG_LZ_MAX_INPUT * 2);
    uint8_t *plane = malloc(ZG_LZ_MAX_INPUT), *o = malloc(LZ4_compressBound(ZG_LZ_MAX_INPUT));
    uint32_t x = 11;
    for (uint32_t blk = 0; blk < 16; blk++) {
        for (uint32_t i = 0; i < ZG_LZ_MAX_INPUT; i++) {
            const uint32_t e = blk * ZG_LZ_MAX_INPUT + i, xx = e % 256, y = e / 256 % 256, z = e / 65536;
            const double base = 12000 + 9000 * sin(z / 37.0) * cos(y / 53.0) + 5000 * sin(xx / 29.0 + y / 71.0);
            x = x * 1664525u + 1013904223u;
            oct[i] = (uint16_t)(((uint16_t)base & 0xfff0) | (x >> 28));
        }
        for (uint32_t half = 0; half < 2; half++)
            for (uint32_t b = 0; b < 2; b++) {
                const uint32_t ne = ZG_LZ_MAX_INPUT / 2;
                for (uint32_t i = 0; i < ne; i++) plane[i] = (uint8_t)(oct[half * ne + i] >> (8 * b));
                const zg_ze_hints h = zg_lz_hints((zg_ze_hints){{1, 256, 65536}});
                ours += round_trip(plane, ne, &h, seqs, table, "oct plane");
                theirs += (size_t)LZ4_compress_default((const char *)plane, (char *)o, (int)ne,
                                                       LZ4_compressBound(ZG_LZ_MAX_INPUT));
                total += ne;
            }
    }
    printf("oct, shuffled planes of 64 KiB: zgpu %.3f, liblz4 %.3f\n", (double)total / (double)ours,
           (double)total / (double)theirs);
    CHECK_MSG(ours * 9 <= theirs * 10, "oct: %zu bytes against liblz4's %zu", ours, theirs);
    free(oct), free(plane), free(o), free(buf), free(seqs);
    TEST_MAIN_END();
}
