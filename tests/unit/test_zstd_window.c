/* Frames decoded in order through the window, keeping only the runs (src/codec/zstd_window.c), directly and through
 * the codec's decode_bytes_runs as reads call it: label chunks' boxes at their places and at destinations of their
 * own, against the original bytes; every case of zstd_cases.h in part; frames whose matches reach past a segment (the
 * codec then tries the larger one, then decodes in order) with the same bytes; content checksums verified; damaged
 * frames give exactly what the in-order decode of the same prefix gives (its error, or its bytes). */
#include <stdio.h>

#include "codec/zstd_window.h"
#include "common/status.h"
#include "test.h"
#include "zstd_cases.h"

extern const zg_codec_vtable zg_codec_zstd;

/* The rows of box [z0, z0 + nz) x [y0, y0 + ny) x [x0, x0 + nx) of a chunk of planes `plane` x `row` uint32 elements
 * (rows of the box's width; dst NULL). */
static size_t box_runs(zg_byte_run *runs, size_t rows, size_t cols, size_t z0, size_t nz, size_t y0, size_t ny,
                       size_t x0, size_t nx) {
    size_t m = 0;
    for (size_t z = z0; z < z0 + nz; z++)
        for (size_t y = y0; y < y0 + ny; y++)
            runs[m++] = (zg_byte_run){((z * rows + y) * cols + x0) * 4, nx * 4, NULL};
    return m;
}

/* runs[0, m) at their own destinations, in order: dst points into dbuf */
static uint8_t *own_dst(zg_byte_run *runs, size_t m) {
    size_t total = 0;
    for (size_t r = 0; r < m; r++) total += runs[r].len;
    uint8_t *d = malloc(total ? total : 1);
    memset(d, 0x5A, total);
    for (size_t r = 0, at = 0; r < m; at += runs[r].len, r++) runs[r].dst = d + at;
    return d;
}

static int runs_match(const uint8_t *out, const uint8_t *raw, const zg_byte_run *runs, size_t m) {
    for (size_t r = 0; r < m; r++)
        if (memcmp(runs[r].dst ? runs[r].dst : out + runs[r].off, raw + runs[r].off, runs[r].len)) return 0;
    return 1;
}

static ZSTD_DCtx *dctx;

/* A label chunk (zc_fill kind 8: cells of 16 planes x 24 rows x 20 columns) of nz x 128 x 128 or nz x 256 x 256
 * uint32, boxes of it decoded through the window directly at each segment size and through the codec. */
static void test_labels(void) {
    const size_t side[] = {128, 256}, planes[] = {32, 16};
    for (int s = 0; s < 2; s++) {
        const size_t rows = side[s], nz = planes[s], n = nz * rows * rows * 4, plane = rows * rows * 4;
        uint8_t *raw = malloc(n), *out = malloc(n), *comp = malloc(ZSTD_compressBound(n));
        /* labels of this size's rows: kind 8 lays rows of 256; the 128-wide chunk takes its own cells */
        if (rows == 256) zc_fill(raw, n, 8, 5);
        else
            for (size_t e = 0; e < n / 4; e++) {
                const size_t z = e / (rows * rows), y = (e / rows) % rows, x = e % rows;
                const uint32_t v = (uint32_t)(((z / 16) * 7919 + (y / 24) * 104729 + (x / 20) * 1299709) % 50000);
                memcpy(raw + 4 * e, &v, 4);
            }
        const size_t cn = zc_compress(raw, n, comp, ZSTD_compressBound(n), 3, 0, 0, 0);
        CHECK(cn > 0);
        zg_byte_run *runs = malloc(nz * rows * sizeof *runs);
        /* boxes: a crop's suffix (the whole prefix decoded), a corner, one plane late in the chunk, all of it */
        const size_t boxes[4][6] = {{3, nz - 3, rows / 3, rows - rows / 3, rows / 4, rows - rows / 4},
                                    {nz - 1, 1, rows - 8, 8, rows - 8, 8},
                                    {nz / 2 + 3, 1, 0, rows, 0, rows},
                                    {0, nz, 0, rows, 0, rows}};
        for (int b = 0; b < 4; b++) {
            const size_t *x = boxes[b];
            const size_t m = box_runs(runs, rows, rows, x[0], x[1], x[2], x[3], x[4], x[5]);
            /* the smallest segment reaches back 128 KiB: a 128-wide chunk's planes (64 KiB), not a 256-wide one's */
            for (size_t seg = ZG_ZSTD_WINDOW_SEGMENT_MIN; seg <= ZG_ZSTD_WINDOW_SEGMENT_MAX; seg *= 4) {
                memset(out, 0xA5, n);
                int declined = -1;
                const zg_zstd_window_stats s0 = zg_zstd_window_stats_get();
                CHECK(zg_zstd_decode_windowed(dctx, comp, cn, out, n, runs, m, seg, &declined) == ZGPU_OK);
                /* (a segment reaches at least its size less a block back: a 128-wide chunk's planes of 64 KiB at
                 * the smallest; the 256-wide one's matches may or may not reach further) */
                const int reach = plane <= seg - (size_t)ZSTD_BLOCKSIZE_MAX;
                CHECK_MSG(reach ? declined == 0 : declined == 0 || declined == 2, "%zu-wide box %d, segment %zu: "
                          "declined %d", rows, b, seg, declined);
                if (!declined) CHECK_MSG(runs_match(out, raw, runs, m), "%zu-wide box %d, segment %zu", rows, b, seg);
                const zg_zstd_window_stats s1 = zg_zstd_window_stats_get();
                CHECK_EQ_U64(s1.frames - s0.frames, declined ? 0 : 1);
                CHECK_EQ_U64(s1.declined - s0.declined, declined ? 1 : 0);
                /* bytes outside the runs untouched (out holds only the runs' places) */
                size_t untouched = 1;
                for (size_t r = 0, at = 0; r <= m && untouched; r++) {
                    const size_t end = r < m ? runs[r].off : n;
                    for (size_t i = at; i < end && untouched; i++) untouched = out[i] == 0xA5;
                    if (r < m) at = runs[r].off + runs[r].len;
                }
                CHECK_MSG(declined || untouched, "%zu-wide box %d: bytes between the runs written", rows, b);
            }
            /* through the codec: the bytes right each time, at their places and at destinations of their own,
             * both decodes through the window (from the second on where the first declined: the next segment) */
            zg_codec *codec;
            CHECK(zg_codec_zstd.create(NULL, NULL, &codec) == ZGPU_OK);
            for (int pass = 0; pass < 3; pass++) {
                memset(out, 0xA5, n);
                const zg_zstd_window_stats s0 = zg_zstd_window_stats_get();
                for (size_t r = 0; r < m; r++) runs[r].dst = NULL;
                zgpu_status st = codec->vt->decode_bytes_runs(codec, comp, cn, out, n, runs, m, NULL, NULL);
                CHECK_MSG(st == ZGPU_OK && runs_match(out, raw, runs, m), "%zu-wide box %d pass %d through the codec",
                          rows, b, pass);
                uint8_t *d = own_dst(runs, m);
                st = codec->vt->decode_bytes_runs(codec, comp, cn, out, n, runs, m, NULL, NULL);
                CHECK_MSG(st == ZGPU_OK && runs_match(out, raw, runs, m), "%zu-wide box %d pass %d, own dst", rows, b,
                          pass);
                free(d);
                const zg_zstd_window_stats s1 = zg_zstd_window_stats_get();
                const size_t hi = runs[m - 1].off + runs[m - 1].len;
                /* (decoded sparse, or a prefix under ZG_ZSTD_WINDOW_MIN: the window not asked) */
                const unsigned long long asked = s1.frames - s0.frames + s1.declined - s0.declined;
                const int all_through = s1.frames - s0.frames == 2, one_through = asked == 2 && s1.frames > s0.frames;
                if (hi >= ZG_ZSTD_WINDOW_MIN && asked)
                    CHECK_MSG(rows == 128 || pass > 0 ? all_through : one_through,
                              "%zu-wide box %d pass %d: %llu through the window, %llu declined", rows, b, pass,
                              s1.frames - s0.frames, s1.declined - s0.declined);
                if (rows == 128) CHECK_MSG(asked == 2, "128-wide box %d: the window asked %llu times", b, asked);
            }
            codec->vt->destroy(codec);
        }
        free(runs);
        free(raw);
        free(out);
        free(comp);
    }
}

/* Matches reaching 2.25 MiB back (random bytes repeated at that period), most of the frame needed: declined at both
 * segments, so the codec decodes such frames in order from the third on, the bytes right every time. (With the two
 * buffers side by side, libzstd took them for one history of 2 MiB, and the matches of the third segment's second
 * quarter read its first, already written again: other bytes, no error.) */
static void test_far_matches(void) {
    const size_t n = (size_t)4 << 20, period = (size_t)9 << 18;
    uint8_t *raw = malloc(n), *out = malloc(n), *comp = malloc(ZSTD_compressBound(n));
    uint64_t s = 7;
    for (size_t i = 0; i < n; i++) raw[i] = i < period ? (uint8_t)zc_rng(&s) : raw[i - period];
    const size_t cn = zc_compress(raw, n, comp, ZSTD_compressBound(n), 3, 0, 23, 0);
    CHECK(cn > 0 && cn < n / 4 * 3); /* (the repeats are matches) */
    zg_byte_run run = {4096, n - 8192, NULL}; /* (most of the frame: a lazy sparse decode would cost more) */
    zg_codec *codec;
    CHECK(zg_codec_zstd.create(NULL, NULL, &codec) == ZGPU_OK);
    const unsigned long long want_declined[] = {1, 1, 0, 0};
    for (int pass = 0; pass < 4; pass++) {
        memset(out, 0, n);
        const zg_zstd_window_stats s0 = zg_zstd_window_stats_get();
        CHECK(codec->vt->decode_bytes_runs(codec, comp, cn, out, n, &run, 1, NULL, NULL) == ZGPU_OK);
        CHECK_MSG(!memcmp(out + run.off, raw + run.off, run.len), "far matches, pass %d", pass);
        const zg_zstd_window_stats s1 = zg_zstd_window_stats_get();
        CHECK_EQ_U64(s1.declined - s0.declined, want_declined[pass]);
        CHECK_EQ_U64(s1.frames - s0.frames, 0);
    }
    codec->vt->destroy(codec);
    free(raw);
    free(out);
    free(comp);
}

/* Every case of zstd_cases.h (kinds, levels, checksums, small windows and blocks) in part: the window's bytes, or
 * a decline, never other bytes. */
static void test_cases(zcase *cs, size_t ncases) {
    size_t windowed = 0, tried = 0;
    zg_byte_run runs[3];
    for (size_t i = 0; i < ncases; i++) {
        const zcase *c = &cs[i];
        if (c->n < 4096) continue;
        tried++;
        uint8_t *out = malloc(c->n);
        const size_t third = c->n / 3;
        runs[0] = (zg_byte_run){third / 2, 100, NULL};
        runs[1] = (zg_byte_run){third, third / 2, NULL};
        runs[2] = (zg_byte_run){c->n - third - 10, 7, NULL};
        for (size_t seg = ZG_ZSTD_WINDOW_SEGMENT_MIN; seg <= ZG_ZSTD_WINDOW_SEGMENT_MAX; seg *= 4) {
            memset(out, 0xA5, c->n);
            int declined = -1;
            CHECK(zg_zstd_decode_windowed(dctx, c->comp, c->cn, out, c->n, runs, 3, seg, &declined) == ZGPU_OK);
            CHECK_MSG(declined >= 0 && declined <= 2, "%s: declined %d", c->name, declined);
            if (!declined) {
                CHECK_MSG(runs_match(out, c->raw, runs, 3), "%s, segment %zu", c->name, seg);
                windowed++;
            }
        }
        free(out);
    }
    printf("zstd cases: %zu of %zu decodes through the window\n", windowed, 2 * tried);
    CHECK(windowed > tried);
}

/* A frame with a content checksum decodes to its end through the window, where libzstd verifies it: right, and a
 * wrong checksum declined (the codec's in-order decode then names it). */
static void test_checksum(void) {
    const size_t n = (size_t)4 << 20;
    uint8_t *raw = malloc(n), *out = malloc(n), *comp = malloc(ZSTD_compressBound(n));
    zc_fill(raw, n, 8, 9);
    const size_t cn = zc_compress(raw, n, comp, ZSTD_compressBound(n), 3, 1, 0, 0);
    CHECK(cn > 8);
    zg_byte_run run = {n / 4, 1000, NULL};
    int declined = -1;
    CHECK(zg_zstd_decode_windowed(dctx, comp, cn, out, n, &run, 1, ZG_ZSTD_WINDOW_SEGMENT_MAX, &declined) == ZGPU_OK);
    CHECK(declined == 0 && !memcmp(out + run.off, raw + run.off, run.len));
    comp[cn - 1] ^= 0x40; /* (the checksum's last byte) */
    CHECK(zg_zstd_decode_windowed(dctx, comp, cn, out, n, &run, 1, ZG_ZSTD_WINDOW_SEGMENT_MAX, &declined) == ZGPU_OK);
    CHECK(declined == 2);
    zg_codec *codec;
    CHECK(zg_codec_zstd.create(NULL, NULL, &codec) == ZGPU_OK);
    zgpu_status st = codec->vt->decode_bytes_runs(codec, comp, cn, out, n, &run, 1, NULL, NULL);
    CHECK_MSG(st == ZGPU_ERR_CORRUPT_DATA && strstr(zgpu_last_error(), "checksum"), "status %d: %s", st,
              zgpu_last_error());
    codec->vt->destroy(codec);
    free(raw);
    free(out);
    free(comp);
}

/* Damaged label frames (bytes flipped or cut): through the codec, exactly what the in-order decode of the prefix and
 * a copy of the runs give, error or bytes. */
static void test_damaged(void) {
    const size_t n = (size_t)2 << 20;
    uint8_t *raw = malloc(n), *out = malloc(n), *ref = malloc(n), *comp = malloc(ZSTD_compressBound(n)),
            *bad = malloc(ZSTD_compressBound(n));
    zc_fill(raw, n, 8, 3);
    const size_t cn = zc_compress(raw, n, comp, ZSTD_compressBound(n), 3, 0, 0, 0);
    zg_codec *codec;
    CHECK(zg_codec_zstd.create(NULL, NULL, &codec) == ZGPU_OK);
    uint64_t s = 11;
    zg_byte_run run = {n - 300000, 200000, NULL};
    size_t same = 0, errors = 0;
    for (int k = 0; k < 200; k++) {
        memcpy(bad, comp, cn);
        size_t bn = cn;
        if (k % 10 == 9) bn = 6 + zc_rng(&s) % (cn - 6);
        else bad[6 + zc_rng(&s) % (cn - 6)] ^= (uint8_t)(1 + zc_rng(&s) % 255);
        memset(out, 0xA5, n);
        memset(ref, 0xA5, n);
        zgpu_status st = codec->vt->decode_bytes_runs(codec, bad, bn, out, n, &run, 1, NULL, NULL);
        zgpu_status want = codec->vt->decode_bytes_range(codec, bad, bn, ref, n, run.off, run.off + run.len);
        CHECK_MSG(st == want, "damage %d: status %d, in order %d", k, st, want);
        if (st == ZGPU_OK && want == ZGPU_OK) {
            const int eq = !memcmp(out + run.off, ref + run.off, run.len);
            CHECK_MSG(eq, "damage %d: other bytes than in order", k);
            same += eq;
        }
        errors += st != ZGPU_OK;
    }
    CHECK(errors > 0);
    printf("damaged label frames: %zu errors, %zu decoded as in order\n", errors, same);
    codec->vt->destroy(codec);
    free(raw);
    free(out);
    free(ref);
    free(comp);
    free(bad);
}

int main(void) {
    dctx = ZSTD_createDCtx();
    test_labels();
    test_far_matches();
    test_checksum();
    test_damaged();
    zcase *cs;
    const size_t n = zc_build(&cs, 0);
    test_cases(cs, n);
    zc_free(cs, n);
    ZSTD_freeDCtx(dctx);
    TEST_MAIN_END();
}
