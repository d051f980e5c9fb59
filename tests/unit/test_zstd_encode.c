/* zgpu's zstd encoder (src/gpuencode/zstd_encode.h) on the CPU: chunks of many kinds and sizes are encoded as the
 * GPU kernel encodes them (the same functions, a warp's lanes run one after another here) and every frame is
 * decoded by libzstd and compared byte for byte, its content size checked; the parts are checked on their own too
 * (canonical Huffman codes complete and within 11 bits, FSE tables' state counts, length codes against the RFC's
 * tables), and the ratios on volume-like data are compared with libzstd's level 3. */
#include <math.h>
#include <zstd.h>

#include "gpuencode/zstd_encode.h"
#include "test.h"

typedef zg_ze_ref_scratch enc_scratch;

static size_t encode_frame(const uint8_t *in, size_t n, const zg_ze_hints *hints, uint8_t *dst, enc_scratch *s) {
    return zg_ze_frame_ref(in, n, hints, dst, s);
}

static size_t frame_bound(size_t n) {
    return ZG_ZE_FRAME_HEADER_MAX + (n / ZG_ZE_BLOCK_BYTES + 1) * 3 + n;
}

/* Data kinds: 0 random, 1 zeros, 2 labels (uint32 runs), 3 smooth float32, 4 uint16 noise about a level (OCT-like),
 * 5 text, 6 short periods (1-7 bytes) with noise, 7 mixed (runs, then random, then text by pieces). */
static void fill(uint8_t *p, size_t n, int kind, uint32_t seed) {
    uint32_t x = seed * 2654435761u + 12345;
#define RNG() (x = x * 1664525u + 1013904223u, x >> 8)
    if (kind == 2) {
        uint32_t label = seed, left = 0;
        for (size_t i = 0; i + 4 <= n; i += 4) {
            if (left == 0) label = RNG() % 50 == 0 ? 0 : (uint32_t)(RNG() % 1000), left = 1 + RNG() % 20000;
            left--;
            memcpy(p + i, &label, 4);
        }
        for (size_t i = n & ~(size_t)3; i < n; i++) p[i] = 7;
        return;
    }
    if (kind == 3) {
        for (size_t i = 0; i + 4 <= n; i += 4) {
            const float v = (float)(sin((double)i * 0.0007 + seed) * 100.0 + cos((double)i * 0.00003) * 20.0);
            memcpy(p + i, &v, 4);
        }
        for (size_t i = n & ~(size_t)3; i < n; i++) p[i] = (uint8_t)i;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const uint32_t r = RNG();
        switch (kind) {
        case 0: p[i] = (uint8_t)r; break;
        case 1: p[i] = 0; break;
        case 4: {
            if (i % 2 == 0) {
                const uint16_t v = (uint16_t)(1000 + (int)(r % 64) + (int)((r >> 8) % 64) - 64 + (int)(i % 7));
                p[i] = (uint8_t)v;
                if (i + 1 < n) p[i + 1] = (uint8_t)(v >> 8);
            }
            break;
        }
        case 5: p[i] = (uint8_t)("zarr arrays of chunks, compressed, on the GPU "[(i * 7 / 5 + (r % 3 == 0)) % 47]); break;
        case 6: p[i] = (uint8_t)((r % 97 == 0) ? r >> 8 : (i % (1 + seed % 7)) * 31); break;
        default: {
            const size_t piece = (i / 5000) % 3;
            p[i] = piece == 0 ? (uint8_t)(i / 3000) : piece == 1 ? (uint8_t)r : (uint8_t)("abcabd"[i % 6]);
        }
        }
    }
#undef RNG
}

static const char *kind_name[8] = {"random", "zeros", "labels", "float", "u16 noise", "text", "periods", "mixed"};

/* Encodes (with hints, or none), decodes with libzstd, compares; returns the frame's size (0 on failure). */
static size_t round_trip_hinted(const uint8_t *in, size_t n, const zg_ze_hints *hints, enc_scratch *s,
                                const char *what) {
    uint8_t *f = malloc(frame_bound(n)), *back = malloc(n + 1);
    const size_t fn = encode_frame(in, n, hints, f, s);
    CHECK_MSG(fn <= frame_bound(n), "%s: frame of %zu bytes over the bound %zu", what, fn, frame_bound(n));
    const unsigned long long cs = ZSTD_getFrameContentSize(f, fn);
    CHECK_MSG(cs == n, "%s: content size %llu, expected %zu", what, cs, n);
    const size_t got = ZSTD_decompress(back, n + 1, f, fn);
    int ok = !ZSTD_isError(got) && got == n && memcmp(back, in, n) == 0;
    CHECK_MSG(ok, "%s (%zu bytes): libzstd %s (%zu bytes back)", what, n,
              ZSTD_isError(got) ? ZSTD_getErrorName(got) : "decoded other bytes", ZSTD_isError(got) ? 0 : got);
    free(f);
    free(back);
    return ok ? fn : 0;
}

static size_t round_trip(const uint8_t *in, size_t n, enc_scratch *s, const char *what) {
    const zg_ze_hints none = {{0, 0, 0}};
    return round_trip_hinted(in, n, &none, s, what);
}

/* A labels volume as the benchmark's (piecewise-constant uint32 cells of 16 x 24 x 20) in a chunk of planes x 128 x
 * 256: its hints are the element, row and plane sizes. */
static void fill_cells(uint8_t *p, size_t planes, uint32_t seed) {
    size_t i = 0;
    for (size_t z = 0; z < planes; z++)
        for (size_t y = 0; y < 128; y++)
            for (size_t x = 0; x < 256; x++, i += 4) {
                const uint32_t v = (uint32_t)(((z + seed) / 16 * 7919 + y / 24 * 104729 + x / 20 * 1299709) % 50000);
                memcpy(p + i, &v, 4);
            }
}

static void test_codes(void) {
    /* length codes against RFC 8878's baselines (decoding base + extra bits gives the value back) */
    for (uint32_t ll = 0; ll < 131072; ll += ll < 300 ? 1 : 97) {
        uint32_t base, bits;
        const uint32_t c = zg_ze_ll_code(ll, &base, &bits);
        CHECK_MSG(c <= 35 && base <= ll && ll - base < (1u << bits) && (c < 16 ? bits == 0 : 1), "ll %u -> code %u", ll,
                  c);
    }
    for (uint32_t ml = 3; ml < 131075; ml += ml < 300 ? 1 : 89) {
        uint32_t base, bits;
        const uint32_t c = zg_ze_ml_code(ml, &base, &bits);
        CHECK_MSG(c <= 52 && base <= ml && ml - base < (1u << bits), "ml %u -> code %u", ml, c);
    }
    /* the codes' ranges meet: the next value after a code's range is the next code's base */
    uint32_t b0, x0, b1, x1;
    CHECK_EQ_U64(zg_ze_ll_code(63, &b0, &x0) + 1, zg_ze_ll_code(64, &b1, &x1));
    CHECK_EQ_U64(zg_ze_ml_code(130, &b0, &x0) + 1, zg_ze_ml_code(131, &b1, &x1));
    CHECK_EQ_U64(b1, 131);
    /* predefined tables: every state of the table appears once */
    zg_ze_tables t;
    zg_ze_tables_build(&t);
    const zg_ze_fse *f[3] = {&t.ll, &t.of, &t.ml};
    for (int k = 0; k < 3; k++) {
        const uint32_t size = 1u << f[k]->log;
        uint32_t seen[64] = {0}, dup = 0;
        for (uint32_t u = 0; u < size; u++) {
            const uint32_t st = f[k]->state[u];
            if (st < size || st >= 2 * size || seen[st - size]++) dup++;
        }
        CHECK_MSG(dup == 0, "table %d: %u states repeated or out of range", k, dup);
    }
}

static void test_huffman(void) {
    /* skewed histograms, many shapes: lengths <= 11, the code complete, codes prefix-free */
    zg_ze_huf h;
    zg_ze_fse fse;
    uint8_t lits[4096];
    for (uint32_t shape = 0; shape < 40; shape++) {
        uint32_t x = shape * 7919 + 1;
        memset(h.count, 0, sizeof h.count);
        for (uint32_t i = 0; i < sizeof lits; i++) {
            x = x * 1664525u + 1013904223u;
            uint32_t sym = (x >> 8) % 256;
            if (shape % 4 == 1) sym = (uint32_t)(zg_ze_highbit((x >> 8) | 1) * 11 + shape) % 256; /* geometric */
            if (shape % 4 == 2) sym = (x >> 8) % (2 + shape);
            if (shape % 4 == 3) sym = i < 4000 ? 65 : (x >> 8) % 256; /* one dominant symbol */
            lits[i] = (uint8_t)sym;
            h.count[sym]++;
        }
        const uint32_t total = zg_ze_huf_plan(&h, lits, sizeof lits, &fse, 1u << 20);
        if (!total) continue;
        uint64_t kraft = 0;
        uint32_t too_long = 0, collide = 0;
        for (uint32_t s = 0; s < 256; s++) {
            if (!h.len[s]) continue;
            kraft += 1u << (ZG_ZE_HUF_MAX_BITS - h.len[s]);
            too_long += h.len[s] > ZG_ZE_HUF_MAX_BITS;
            for (uint32_t r = 0; r < s; r++) /* prefix-free: no code is the start of another */
                if (h.len[r]) {
                    const uint32_t l = h.len[r] < h.len[s] ? h.len[r] : h.len[s];
                    collide += (uint32_t)(h.code[r] >> (h.len[r] - l)) == (uint32_t)(h.code[s] >> (h.len[s] - l));
                }
        }
        CHECK_MSG(kraft == 1u << ZG_ZE_HUF_MAX_BITS && !too_long && !collide,
                  "shape %u: Kraft %llu of %u, %u too long, %u collisions", shape, (unsigned long long)kraft,
                  1u << ZG_ZE_HUF_MAX_BITS, too_long, collide);
    }
}

int main(void) {
    enc_scratch *s = malloc(sizeof *s);
    zg_ze_tables_build(&s->tables);
    test_codes();
    test_huffman();

    /* sizes around blocks, segments and the literal header's limits */
    const size_t sizes[] = {0, 1, 2, 3, 4, 5, 31, 32, 63, 64, 100, 255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097,
                            16383, 16384, 65535, 65791, 65792, 131071, 131072, 131073, 262144 + 77, 1u << 20};
    uint8_t *buf = malloc(16u << 20);
    char what[96];
    for (int kind = 0; kind < 8; kind++)
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            fill(buf, sizes[k], kind, (uint32_t)(k + 3));
            snprintf(what, sizeof what, "%s, %zu bytes", kind_name[kind], sizes[k]);
            round_trip(buf, sizes[k], s, what);
        }
    /* many seeds of the kinds that exercise Huffman tables and sequences most */
    for (uint32_t seed = 0; seed < 24; seed++)
        for (int kind = 2; kind < 8; kind++) {
            const size_t n = 200000 + seed * 3331;
            fill(buf, n, kind, seed);
            snprintf(what, sizeof what, "%s, seed %u", kind_name[kind], seed);
            round_trip(buf, n, s, what);
        }
    /* hints: right ones (the cells' strides), wrong ones (odd offsets, past the data, repeated), windows up to 2^27 */
    {
        const size_t planes = 32, n = planes * 128 * 256 * 4;
        fill_cells(buf, planes, 3);
        const zg_ze_hints right = {{4, 1024, 128 * 1024}}, wrong = {{3, 7777777, 3}}, none = {{0, 0, 0}};
        const zg_ze_hints big = zg_ze_hints_clean((zg_ze_hints){{1u << 27, (1u << 27) + 1, 5}});
        CHECK(big.off[0] == 1u << 27 && big.off[1] == 0 && big.off[2] == 5);
        CHECK_EQ_U64(zg_ze_window_log(&big), 27);
        CHECK_EQ_U64(zg_ze_window_log(&right), 17);
        const size_t with = round_trip_hinted(buf, n, &right, s, "cells, hinted");
        const size_t without = round_trip_hinted(buf, n, &none, s, "cells, no hints");
        CHECK(round_trip_hinted(buf, n, &wrong, s, "cells, wrong hints") > 0);
        CHECK(round_trip_hinted(buf, n, &big, s, "cells, 2^27 hint") > 0);
        uint8_t *ref = malloc(ZSTD_compressBound(n));
        const size_t theirs = ZSTD_compress(ref, ZSTD_compressBound(n), buf, n, 3);
        free(ref);
        printf("ratio cells     zgpu %8.2f hinted, %8.2f not; libzstd-3 %8.2f\n", (double)n / (double)with,
               (double)n / (double)without, (double)n / (double)theirs);
        CHECK_MSG(with && with * 9 <= theirs * 10, "cells: hinted frame %zu bytes against libzstd's %zu", with, theirs);
        CHECK_MSG(with && with < without, "cells: hints did not help (%zu against %zu bytes)", with, without);
    }
    /* the benchmark's OCT and field volumes (bench/datasets.py's formulas, another noise generator), chunks of
     * 32 x 256 x 256 with their strides as hints: ratios within 5% of libzstd level 3's */
    {
        const size_t planes = 32, n16 = planes * 256 * 256 * 2, n32 = n16 * 2;
        uint32_t x = 99;
        uint16_t *oct = (uint16_t *)buf;
        float *field = (float *)(buf + n16);
        size_t i = 0;
        for (size_t z = 0; z < planes; z++)
            for (size_t y = 0; y < 256; y++)
                for (size_t xx = 0; xx < 256; xx++, i++) {
                    x = x * 1664525u + 1013904223u;
                    const double base = 12000 + 9000 * sin(z / 37.0) * cos(y / 53.0) + 5000 * sin(xx / 29.0 + y / 71.0);
                    oct[i] = (uint16_t)(((uint16_t)base & 0xfff0) | (x >> 28));
                    const double u1 = ((x >> 8) + 1.0) / 16777217.0, u2 = ((x * 69069u >> 8) + 1.0) / 16777217.0;
                    const double g = sqrt(-2 * log(u1)) * cos(6.283185307 * u2);
                    field[i] = (float)(280 + 15 * sin(z / 11.0) * cos(y / 97.0) + 10 * cos(xx / 61.0 - y / 43.0) +
                                       g * 0.01);
                }
        const zg_ze_hints h16 = {{2, 512, 131072}}, h32 = {{4, 1024, 262144}};
        const size_t sizes2[2] = {n16, n32};
        const uint8_t *data[2] = {buf, buf + n16};
        const zg_ze_hints *hs[2] = {&h16, &h32};
        const char *names[2] = {"oct", "field"};
        uint8_t *ref = malloc(ZSTD_compressBound(n32));
        for (int k = 0; k < 2; k++) {
            const size_t ours = round_trip_hinted(data[k], sizes2[k], hs[k], s, names[k]);
            const size_t theirs = ZSTD_compress(ref, ZSTD_compressBound(n32), data[k], sizes2[k], 3);
            printf("ratio %-9s zgpu %8.3f  libzstd-3 %8.3f\n", names[k], (double)sizes2[k] / (double)ours,
                   (double)sizes2[k] / (double)theirs);
            CHECK_MSG(ours && ours * 95 <= theirs * 100, "%s: %zu bytes against libzstd's %zu", names[k], ours, theirs);
        }
        free(ref);
    }
    /* ratios on 4 MiB of volume-like data against libzstd level 3 (the CPU codec's default in zarr) */
    const size_t n = 4u << 20;
    uint8_t *ref = malloc(ZSTD_compressBound(n));
    for (int kind = 2; kind <= 4; kind++) {
        fill(buf, n, kind, 5);
        const size_t ours = round_trip(buf, n, s, kind_name[kind]);
        const size_t theirs = ZSTD_compress(ref, ZSTD_compressBound(n), buf, n, 3);
        const double r_ours = ours ? (double)n / (double)ours : 0, r_theirs = (double)n / (double)theirs;
        printf("ratio %-9s zgpu %8.2f  libzstd-3 %8.2f  (%.0f%%)\n", kind_name[kind], r_ours, r_theirs,
               100.0 * r_ours / r_theirs);
        /* labels and float within 10%; the noise of short periods 85% (libzstd's longer search finds more) */
        CHECK_MSG(r_ours >= (kind == 4 ? 0.85 : 0.9) * r_theirs, "%s: ratio %.2f against libzstd's %.2f",
                  kind_name[kind], r_ours, r_theirs);
    }
    free(ref);
    free(buf);
    free(s);
    TEST_MAIN_END();
}
