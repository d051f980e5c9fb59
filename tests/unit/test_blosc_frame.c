/* Blosc1 chunks framed by zgpu around streams compressed apart (src/gpuencode/blosc_frame.h; CPU only). Each case
 * plans a chunk, shuffles it, compresses every stream on its own with the library c-blosc calls (as a GPU batch
 * would, each with room for its worst case), frames the streams, and then:
 *   - the chunk is byte for byte what c-blosc's blosc_compress_ctx writes for the same data and parameters (so its
 *     block size, split and flags are c-blosc's, plain copies included);
 *   - c-blosc's blosc_decompress_ctx, zgpu's blosc codec (whole and a range of blocks) and the GPU decoder's parser
 *     (gpucodec/blosc/blosc_parse.h: the streams it lists are the plan's) give the data back.
 * Also: the plan's block size and flags against c-blosc over a wider sweep (every compressor, forced block sizes,
 * odd item sizes), the shuffle against the parser's unshuffle, and bad arguments. */
#include <blosc.h>
#include <lz4.h>
#include <lz4hc.h>
#include <zlib.h>
#include <zstd.h>

#include "codec/codec.h"
#include "common/endian.h"
#include "gpucodec/blosc/blosc_parse.h"
#include "gpuencode/blosc_frame.h"
#include "sampling.h"
#include "test.h"
#include "zgpu.h"

/* ---- data ---- */

static uint32_t rng_next(uint32_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

/* kind 0: slowly growing items of ts bytes (little-endian) with noise in their low bits, which shuffling makes
 * compress; 1: random bytes (incompressible: a plain copy); 2: random first half, zeros after (raw and compressed
 * streams in one chunk); 3: zeros. */
static void make_data(uint8_t *p, size_t n, size_t ts, int kind, uint32_t seed) {
    uint32_t x = seed * 2654435761u + 12345u;
    if (kind == 3) {
        memset(p, 0, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const uint32_t r = rng_next(&x);
        if (kind == 1 || (kind == 2 && i < n / 2)) {
            p[i] = (uint8_t)(r >> 11);
        } else if (kind == 2) {
            p[i] = 0;
        } else {
            const size_t e = i / ts, j = i % ts;
            const uint64_t v = (uint64_t)e * 37 / 5 + (r & 3);
            p[i] = j < 8 ? (uint8_t)(v >> (8 * j)) : (uint8_t)(e >> 12);
        }
    }
}

/* ---- streams compressed as c-blosc does, each on its own ---- */

static const char *const cname_of[ZG_BLOSC_COMP_N] = {"blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"};

static size_t stream_bound(int comp, size_t len) {
    switch (comp) {
    case ZG_BLOSC_COMP_LZ4:
    case ZG_BLOSC_COMP_LZ4HC: return (size_t)LZ4_compressBound((int)len);
    case ZG_BLOSC_COMP_ZLIB: return compressBound((uLong)len);
    default: return ZSTD_compressBound(len);
    }
}

static ZSTD_CCtx *zstd_cctx; /* (reused: ZSTD_compress makes one a call, costly at zstd's top levels) */

/* c-blosc's call for one stream (blosc.c: lz4_wrap_compress with get_accel, lz4hc_wrap_compress,
 * zlib_wrap_compress, zstd_wrap_compress) with room for cap bytes; 0 where it fails or they do not suffice. */
static size_t compress_stream(int comp, int clevel, const uint8_t *in, size_t len, uint8_t *out, size_t cap) {
    switch (comp) {
    case ZG_BLOSC_COMP_LZ4: {
        const int r = LZ4_compress_fast((const char *)in, (char *)out, (int)len, (int)cap, 10 - clevel);
        return r > 0 ? (size_t)r : 0;
    }
    case ZG_BLOSC_COMP_LZ4HC: {
        const int r = LZ4_compress_HC((const char *)in, (char *)out, (int)len, (int)cap, clevel);
        return r > 0 ? (size_t)r : 0;
    }
    case ZG_BLOSC_COMP_ZLIB: {
        uLongf cl = (uLongf)cap;
        return compress2(out, &cl, in, (uLong)len, clevel) == Z_OK ? (size_t)cl : 0;
    }
    default: {
        const int level = zg_blosc_frame_zstd_level(clevel, ZSTD_maxCLevel());
        const size_t r = ZSTD_compressCCtx(zstd_cctx, out, cap, in, len, level);
        return ZSTD_isError(r) ? 0 : r;
    }
    }
}

/* ---- one chunk, end to end ---- */

typedef struct counts {
    int cases, framed, plain, raw_streams, streams, identical, range_decodes;
    int zstd_roomy; /* zstd chunks of streams compressed with room for their worst case: not c-blosc's bytes */
} counts;

static zg_codec *blosc_codec; /* zgpu's "numcodecs.blosc" (decode needs no configuration) */

/* Frames `src` (n bytes) as planned for the parameters and checks the chunk against c-blosc and every decoder.
 * raw_own: raw streams point at their own copy of the shuffled bytes instead of the shuffled chunk.
 * cblosc_room: each stream is compressed with the room c-blosc gives it (its length, less near the chunk's bound),
 * in order, as blosc_c does; else each with room for its worst case, apart, as a GPU batch does. zstd's output
 * depends on its room (in c-blosc's it comes out a few bytes longer, or not at all), so a zstd chunk is c-blosc's
 * byte for byte only with the first. */
static void frame_case(const zg_blosc_frame_params *prm, const uint8_t *src, int raw_own, int cblosc_room,
                       counts *ct) {
    const size_t n = prm->nbytes;
    char what[160];
    snprintf(what, sizeof what, "%s clevel %d shuffle %d typesize %zu n %zu blocksize %zu",
             cname_of[prm->compressor], prm->clevel, prm->shuffle, prm->typesize, n, prm->blocksize);
    zg_blosc_frame_plan p;
    zgpu_status st = zg_blosc_frame_plan_for(prm, &p);
    CHECK_MSG(st == ZGPU_OK, "%s: plan: %s", what, zgpu_last_error());
    if (st != ZGPU_OK) return;
    ct->cases++;

    uint8_t *shuffled = malloc(n + 1);
    zg_blosc_frame_shuffle(&p, src, shuffled);
    zg_blosc_frame_stream *streams = calloc(p.nstreams + 1, sizeof *streams);
    uint8_t **bufs = calloc(p.nstreams + 1, sizeof *bufs);
    int raw_here = 0, gave_up = 0;
    int64_t at = 16 + 4 * (int64_t)p.nblocks; /* c-blosc's ntbytes */
    const int64_t bound = (int64_t)n + 16;
    for (uint32_t i = 0; i < p.nstreams; i++) {
        uint32_t off, len;
        zg_blosc_frame_span(&p, i, &off, &len);
        const size_t cap = stream_bound(prm->compressor, len);
        bufs[i] = malloc(cap);
        size_t room = cap;
        if (cblosc_room) {
            at += 4;
            room = len;
            if (at + (int64_t)room > bound) room = bound - at > 0 ? (size_t)(bound - at) : 0;
        }
        const size_t cs = gave_up || room == 0 ? 0
                          : compress_stream(prm->compressor, prm->clevel, shuffled + off, len, bufs[i], room);
        streams[i] = cs ? (zg_blosc_frame_stream){bufs[i], cs, 0} : (zg_blosc_frame_stream){NULL, 0, 1};
        if (cblosc_room) {
            at += cs == 0 || cs >= len ? len : (int64_t)cs;
            gave_up |= at > bound; /* (the rest then raw: the builder makes the chunk a plain copy) */
        }
        if (cs == 0 || cs >= len) {
            raw_here++;
            if (raw_own) { /* the raw bytes handed over as the stream's own */
                memcpy(bufs[i], shuffled + off, len);
                streams[i] = (zg_blosc_frame_stream){bufs[i], len, 1};
            }
        }
    }

    /* the size and form first, reading nothing but the streams' sizes */
    size_t need = 0, wrote = 0;
    int plain = -1, plain2 = -1;
    CHECK_OK(zg_blosc_frame_build(&p, NULL, NULL, streams, p.nstreams, NULL, 0, &need, &plain));
    CHECK(need <= zg_blosc_frame_bound(n) && need >= 16);
    uint8_t *chunk = malloc(need);
    st = zg_blosc_frame_build(&p, src, raw_own ? NULL : shuffled, streams, p.nstreams, chunk, need, &wrote, &plain2);
    CHECK_MSG(st == ZGPU_OK && wrote == need && plain2 == plain, "%s: build -> %s (%s), %zu of %zu bytes", what,
              zgpu_status_name(st), zgpu_last_error(), wrote, need);
    if (st != ZGPU_OK) goto done;
    ct->streams += (int)p.nstreams;
    ct->raw_streams += plain ? 0 : raw_here;
    if (plain) ct->plain++;
    else ct->framed++;

    /* c-blosc's chunk for the same data: the same bytes */
    {
        const size_t rcap = n + BLOSC_MAX_OVERHEAD;
        uint8_t *ref = malloc(rcap);
        const int rn = blosc_compress_ctx(prm->clevel, prm->shuffle, prm->typesize, n, src, ref, rcap,
                                          cname_of[prm->compressor], prm->blocksize, 1);
        CHECK_MSG(rn >= 16, "%s: blosc_compress_ctx -> %d", what, rn);
        size_t first = 0; /* the first byte that differs */
        while (rn >= 16 && first < wrote && first < (size_t)rn && ref[first] == chunk[first]) first++;
        const int same = rn >= 16 && (size_t)rn == wrote && first == wrote;
        const int must = cblosc_room || prm->compressor != ZG_BLOSC_COMP_ZSTD;
        if (!must) ct->zstd_roomy++;
        else CHECK_MSG(same, "%s: differs from c-blosc's chunk at byte %zu (%d bytes, flags %02x, blocksize %u; ours "
                       "%zu bytes, flags %02x, blocksize %u)", what, first, rn, rn >= 16 ? ref[2] : 0,
                       rn >= 16 ? zg_le32(ref + 8) : 0, wrote, chunk[2], zg_le32(chunk + 8));
        ct->identical += same && must;
        free(ref);
    }

    /* c-blosc decodes it */
    uint8_t *dec = malloc(n + 1);
    {
        memset(dec, 0xa5, n + 1);
        const int r = blosc_decompress_ctx(chunk, dec, n + 1, 1);
        CHECK_MSG(r == (int)n && memcmp(dec, src, n) == 0, "%s: blosc_decompress_ctx -> %d", what, r);
    }
    /* zgpu's codec decodes it, whole and in part */
    {
        zg_buf out = zg_buf_wrap(dec, n + 1);
        memset(dec, 0x5a, n + 1);
        st = blosc_codec->vt->decode_bytes(blosc_codec, chunk, wrote, &out, zg_out_exact(n));
        CHECK_MSG(st == ZGPU_OK && out.size == n && memcmp(dec, src, n) == 0, "%s: zgpu decode -> %s (%s)", what,
                  zgpu_status_name(st), zgpu_last_error());
        if (n >= 3 && p.nblocks > 1) {
            const size_t lo = n / 3, hi = n - n / 5;
            memset(dec, 0x5a, n + 1);
            st = blosc_codec->vt->decode_bytes_range(blosc_codec, chunk, wrote, dec, n, lo, hi);
            CHECK_MSG(st == ZGPU_OK && memcmp(dec + lo, src + lo, hi - lo) == 0, "%s: zgpu range decode -> %s (%s)",
                      what, zgpu_status_name(st), zgpu_last_error());
            ct->range_decodes++;
        }
    }
    /* the GPU decoder's parser reads the chunk as planned: the same streams, the raw ones raw */
    {
        zg_blosc_header h;
        st = zg_blosc_parse_header(chunk, wrote, n, &h);
        CHECK_MSG(st == ZGPU_OK, "%s: parse -> %s", what, zgpu_last_error());
        if (st == ZGPU_OK && !plain) {
            size_t cap = zg_blosc_max_streams(&h), got = 0;
            zg_blosc_stream *ls = calloc(cap + 1, sizeof *ls);
            CHECK_OK(zg_blosc_streams(chunk, wrote, &h, ls, cap, &got));
            int ok = got == p.nstreams && h.blocksize == p.blocksize && h.nblocks == p.nblocks;
            for (size_t i = 0; ok && i < got; i++) {
                uint32_t off, len;
                zg_blosc_frame_span(&p, (uint32_t)i, &off, &len);
                const int raw = streams[i].raw || streams[i].size >= len;
                ok = ls[i].dst_off == off && ls[i].dst_len == len && ls[i].raw == raw &&
                     (raw || ls[i].src_len == streams[i].size);
            }
            CHECK_MSG(ok, "%s: the parser's streams are not the plan's (%zu listed, %u planned)", what, got,
                      p.nstreams);
            free(ls);
        } else if (st == ZGPU_OK) {
            CHECK(h.memcpyed && wrote == n + 16);
        }
    }
    free(dec);
done:
    free(chunk);
    for (uint32_t i = 0; i < p.nstreams; i++) free(bufs[i]);
    free(bufs);
    free(streams);
    free(shuffled);
}

/* The grid of the brief: sizes from 0 to past 1 MiB, item sizes 1..16, every level, every shuffle, lz4 and zstd
 * (and lz4hc, zlib), data of every kind. The slowest levels (zstd's 15..22, i.e. clevel 8 and 9) run on the
 * smaller sizes, and once on a large one. */
static void test_round_trips(void) {
    static const size_t sizes[] = {0, 1, 7, 100, 127, 128, 129, 1000, 4099, 32768, 65539, 262149, 1 << 20,
                                   (2 << 20) + 13};
    static const size_t typesizes[] = {1, 2, 4, 8, 16};
    static const int comps[] = {ZG_BLOSC_COMP_LZ4, ZG_BLOSC_COMP_ZSTD, ZG_BLOSC_COMP_LZ4HC, ZG_BLOSC_COMP_ZLIB};
    counts ct = {0};
    size_t maxn = sizes[sizeof sizes / sizeof *sizes - 1];
    uint8_t *src = malloc(maxn);
    uint32_t seed = 1;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (size_t ti = 0; ti < sizeof typesizes / sizeof *typesizes; ti++)
            for (size_t ci = 0; ci < sizeof comps / sizeof *comps; ci++)
                for (int clevel = 1; clevel <= 9; clevel++)
                    for (int sh = 0; sh <= 2; sh++) {
                        const size_t n = sizes[si];
                        const int comp = comps[ci];
                        const int kind = (int)(seed % 7 == 0 ? 1 : seed % 7 == 3 ? 2 : seed % 11 == 5 ? 3 : 0);
                        seed++;
                        /* chunks of MiBs: two levels each, every shuffle and item size; zstd's slowest level (22,
                         * about 2 MB/s) up to 64 KiB, and once on 1 MiB */
                        const int zstd9 = comp == ZG_BLOSC_COMP_ZSTD && clevel == 9;
                        const int big_zstd9 = zstd9 && sh == 1 && typesizes[ti] == 4 && n == (1 << 20);
                        const int high = comp == ZG_BLOSC_COMP_LZ4 ? 9 : comp == ZG_BLOSC_COMP_ZSTD ? 6 : 5;
                        if (n > 300000 && !big_zstd9 && clevel != 1 && clevel != high) continue;
                        if (zstd9 && n > 70000 && !big_zstd9) continue;
                        if (!zt_take()) continue;
                        make_data(src, n, typesizes[ti], kind, seed);
                        const zg_blosc_frame_params prm = {n, typesizes[ti], clevel, comp, sh, 0};
                        /* zstd mostly with c-blosc's room (its bytes), else with each stream's worst case */
                        const int room = comp == ZG_BLOSC_COMP_ZSTD ? seed % 5 != 0 : seed % 3 == 0;
                        frame_case(&prm, src, (int)(seed % 2), room, &ct);
                    }
    free(src);
    printf("round trips: %d chunks (%d framed, %d plain copies), %d streams (%d stored raw), %d identical to "
           "c-blosc's (and %d zstd chunks of roomier streams), %d range decodes\n",
           ct.cases, ct.framed, ct.plain, ct.streams, ct.raw_streams, ct.identical, ct.zstd_roomy, ct.range_decodes);
    CHECK(ct.identical + ct.zstd_roomy == ct.cases);
    if (!zt_sampled()) CHECK(ct.cases > 5000 && ct.plain > 100 && ct.raw_streams > 1000 && ct.framed > 2500);
}

/* Forced block sizes and odd item sizes (3, 12, 17, 300: above 255 taken as 1), round trips as above. */
static void test_forced_and_odd(void) {
    static const size_t forced[] = {0, 1, 129, 1000, 5000, 65536, 100000, 1 << 20, INT32_MAX};
    static const size_t typesizes[] = {1, 3, 4, 12, 16, 17, 300};
    static const size_t sizes[] = {200, 5000, 70001, 400000};
    static const int comps[] = {ZG_BLOSC_COMP_LZ4, ZG_BLOSC_COMP_ZSTD, ZG_BLOSC_COMP_LZ4HC, ZG_BLOSC_COMP_ZLIB};
    counts ct = {0};
    uint8_t *src = malloc(400000);
    uint32_t seed = 1000;
    for (size_t fi = 0; fi < sizeof forced / sizeof *forced; fi++)
        for (size_t ti = 0; ti < sizeof typesizes / sizeof *typesizes; ti++)
            for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
                for (size_t ci = 0; ci < sizeof comps / sizeof *comps; ci++) {
                    const int clevel = 1 + (int)(seed % 7), sh = (int)(seed % 3);
                    const int kind = seed % 9 == 4 ? 2 : 0;
                    seed++;
                    if (!zt_take()) continue;
                    make_data(src, sizes[si], typesizes[ti], kind, seed);
                    const zg_blosc_frame_params prm = {sizes[si], typesizes[ti], clevel, comps[ci], sh, forced[fi]};
                    frame_case(&prm, src, 0, comps[ci] == ZG_BLOSC_COMP_ZSTD || seed % 2, &ct);
                }
    free(src);
    printf("forced block sizes, odd item sizes: %d chunks (%d framed, %d plain), %d identical to c-blosc's\n", ct.cases,
           ct.framed, ct.plain, ct.identical);
    CHECK(ct.identical == ct.cases);
}

/* The plan's header fields against c-blosc's over every compressor, the block-size thresholds (32 KiB, 256 KiB,
 * 1 MiB) and clevel 0, on zeros (which every compressor takes quickly). */
static void test_plan_sweep(void) {
    static const size_t sizes[] = {0, 1, 15, 16, 17, 127, 128, 255, 256, 2047, 2048, 32767, 32768, 32769, 65536,
                                   131071, 262144, 524288 + 3, 1 << 20, (2 << 20) + 5, 4 << 20};
    static const size_t typesizes[] = {1, 2, 3, 4, 8, 16, 17, 32, 255, 256};
    static const size_t forced[] = {0, 1000, 40000};
    uint8_t *src = calloc(4 << 20, 1), *ref = malloc((4 << 20) + 16);
    int checked = 0, skipped = 0;
    for (int comp = 0; comp < ZG_BLOSC_COMP_N; comp++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (size_t ti = 0; ti < sizeof typesizes / sizeof *typesizes; ti++)
                for (int clevel = 0; clevel <= 9; clevel++)
                    for (size_t fi = 0; fi < sizeof forced / sizeof *forced; fi++) {
                        const int sh = (int)((si + ti + (size_t)clevel) % 3);
                        if (!zt_take()) continue;
                        const size_t n = sizes[si];
                        if (n > 300000 && (clevel % 3 != 0 || fi)) continue; /* (the large ones: 0, 3, 6, 9) */
                        const zg_blosc_frame_params prm = {n, typesizes[ti], clevel, comp, sh, forced[fi]};
                        zg_blosc_frame_plan p;
                        CHECK_OK(zg_blosc_frame_plan_for(&prm, &p));
                        /* (zstd's level 22 costs milliseconds a block however small: a few blocks) */
                        if (comp == ZG_BLOSC_COMP_ZSTD && clevel == 9 && p.nblocks > 8) continue;
                        const int rn = blosc_compress_ctx(clevel, sh, typesizes[ti], n, src, ref, n + 16,
                                                          cname_of[comp], forced[fi], 1);
                        if (rn < 0) { /* a compressor this c-blosc lacks */
                            skipped++;
                            continue;
                        }
                        const int ok = rn >= 16 && ref[0] == p.version && ref[1] == p.versionlz &&
                                       (ref[2] & ~0x02) == p.flags && ref[3] == p.typesize &&
                                       zg_le32(ref + 4) == p.nbytes && zg_le32(ref + 8) == p.blocksize &&
                                       (!p.plain_copy || (ref[2] & 0x02));
                        CHECK_MSG(ok, "%s clevel %d shuffle %d typesize %zu n %zu forced %zu: c-blosc's header "
                                  "flags %02x typesize %u blocksize %u, planned %02x %u %u", cname_of[comp], clevel,
                                  sh, typesizes[ti], n, forced[fi], ref[2], ref[3], zg_le32(ref + 8), p.flags,
                                  p.typesize, p.blocksize);
                        checked++;
                    }
    free(src);
    free(ref);
    printf("plan sweep: %d headers equal to c-blosc's (%d skipped: compressor not built in)\n", checked, skipped);
    if (!zt_sampled()) CHECK(checked > 10000);
}

/* The shuffle undone by the GPU parser's reference unshuffle (c-blosc's decode rules), short blocks and bit
 * shuffles of item counts that are not multiples of 8 included. */
static void test_shuffle_inverse(void) {
    static const size_t sizes[] = {1, 8, 100, 4096, 4100, 70001};
    static const size_t typesizes[] = {1, 2, 3, 4, 7, 8, 16, 33};
    static const size_t forced[] = {0, 128, 1000, 1001};
    int n_checked = 0;
    uint8_t *src = malloc(70001), *sh = malloc(70001), *back = malloc(70001);
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (size_t ti = 0; ti < sizeof typesizes / sizeof *typesizes; ti++)
            for (size_t fi = 0; fi < sizeof forced / sizeof *forced; fi++)
                for (int shuffle = 1; shuffle <= 2; shuffle++) {
                    const size_t n = sizes[si];
                    make_data(src, n, typesizes[ti], 1, (uint32_t)(si * 100 + ti * 10 + fi));
                    const zg_blosc_frame_params prm = {n, typesizes[ti], 5, ZG_BLOSC_COMP_ZSTD, shuffle, forced[fi]};
                    zg_blosc_frame_plan p;
                    CHECK_OK(zg_blosc_frame_plan_for(&prm, &p));
                    zg_blosc_frame_shuffle(&p, src, sh);
                    /* a header of the plan, framed (not a plain copy), for the reference unshuffle */
                    zg_blosc_header h = {0};
                    h.version = 2, h.typesize = (uint8_t)p.typesize, h.nbytes = p.nbytes, h.blocksize = p.blocksize;
                    h.shuffle = shuffle == 1 && p.typesize > 1 ? ZG_BLOSC_SHUFFLE
                                : shuffle == 2                 ? ZG_BLOSC_BITSHUFFLE
                                                               : ZG_BLOSC_NOSHUFFLE;
                    h.nblocks = p.nblocks, h.leftover = p.leftover;
                    zg_blosc_unshuffle_ref(&h, sh, back);
                    CHECK_MSG(memcmp(back, src, n) == 0, "shuffle %d typesize %zu n %zu blocksize %u: not undone",
                              shuffle, typesizes[ti], n, p.blocksize);
                    int moved = 0; /* a shuffled block differs from its bytes unless the plan leaves it */
                    for (uint32_t b = 0; b < p.nblocks; b++) moved |= zg_blosc_frame_block_shuffle(&p, b) != 0;
                    if (moved && n >= 16) CHECK(memcmp(sh, src, n) != 0);
                    n_checked++;
                }
    free(src);
    free(sh);
    free(back);
    printf("shuffle: %d chunks undone by the reference unshuffle\n", n_checked);
}

/* Spans tile the chunk in order; the block's split count and the short block as documented. */
static void test_spans(void) {
    const zg_blosc_frame_params prm = {(1 << 20) + 13, 4, 5, ZG_BLOSC_COMP_LZ4, 1, 0};
    zg_blosc_frame_plan p;
    CHECK_OK(zg_blosc_frame_plan_for(&prm, &p));
    CHECK(p.splits == 4 && p.leftover == 13 && p.blocksize == 1 << 19); /* 32 KiB x 4 (clevel 5) x 4 (split) */
    CHECK_EQ_U64(p.nstreams, (p.nblocks - 1) * 4 + 1);
    uint64_t next = 0;
    int ok = 1;
    for (uint32_t i = 0; i < p.nstreams; i++) {
        uint32_t off, len;
        zg_blosc_frame_span(&p, i, &off, &len);
        ok &= off == next && len > 0;
        next = (uint64_t)off + len;
    }
    CHECK(ok && next == p.nbytes);
    /* zstd never splits; clevel 0 and small chunks are plain copies with no streams */
    const zg_blosc_frame_params z = {1 << 20, 4, 5, ZG_BLOSC_COMP_ZSTD, 1, 0};
    CHECK_OK(zg_blosc_frame_plan_for(&z, &p));
    CHECK(p.splits == 1 && (p.flags & 0x10) && p.nstreams == p.nblocks && (p.flags >> 5) == 4);
    const zg_blosc_frame_params c0 = {1 << 20, 4, 0, ZG_BLOSC_COMP_LZ4, 1, 0};
    CHECK_OK(zg_blosc_frame_plan_for(&c0, &p));
    CHECK(p.plain_copy && p.nstreams == 0);
    const zg_blosc_frame_params small = {127, 1, 9, ZG_BLOSC_COMP_LZ4, 0, 0};
    CHECK_OK(zg_blosc_frame_plan_for(&small, &p));
    CHECK(p.plain_copy && p.nstreams == 0);
    CHECK(zg_blosc_compressor_code("lz4hc") == ZG_BLOSC_COMP_LZ4HC && zg_blosc_compressor_code("zstd") == 5);
    CHECK(zg_blosc_compressor_code("lz5") == -1 && zg_blosc_compressor_code(NULL) == -1);
    CHECK(zg_blosc_frame_zstd_level(1, 22) == 1 && zg_blosc_frame_zstd_level(8, 22) == 15 &&
          zg_blosc_frame_zstd_level(9, 22) == 22);
}

static void test_bad_arguments(void) {
    zg_blosc_frame_plan p;
    const zg_blosc_frame_params good = {100000, 4, 5, ZG_BLOSC_COMP_LZ4, 1, 0};
    zg_blosc_frame_params b = good;
    b.typesize = 0;
    CHECK_STATUS(zg_blosc_frame_plan_for(&b, &p), ZGPU_ERR_INVALID_ARGUMENT);
    b = good, b.clevel = 10;
    CHECK_STATUS(zg_blosc_frame_plan_for(&b, &p), ZGPU_ERR_INVALID_ARGUMENT);
    b = good, b.clevel = -1;
    CHECK_STATUS(zg_blosc_frame_plan_for(&b, &p), ZGPU_ERR_INVALID_ARGUMENT);
    b = good, b.compressor = ZG_BLOSC_COMP_N;
    CHECK_STATUS(zg_blosc_frame_plan_for(&b, &p), ZGPU_ERR_INVALID_ARGUMENT);
    b = good, b.shuffle = 3;
    CHECK_STATUS(zg_blosc_frame_plan_for(&b, &p), ZGPU_ERR_INVALID_ARGUMENT);
    b = good, b.blocksize = (size_t)INT32_MAX + 1;
    CHECK_STATUS(zg_blosc_frame_plan_for(&b, &p), ZGPU_ERR_INVALID_ARGUMENT);
    b = good, b.nbytes = (size_t)INT32_MAX - 15;
    CHECK_STATUS(zg_blosc_frame_plan_for(&b, &p), ZGPU_ERR_UNSUPPORTED);
    b.nbytes = (size_t)INT32_MAX - 16; /* c-blosc's largest: planned (nothing is allocated) */
    CHECK_OK(zg_blosc_frame_plan_for(&b, &p));
    CHECK_STATUS(zg_blosc_frame_plan_for(NULL, &p), ZGPU_ERR_INVALID_ARGUMENT);

    /* build: stream count, NULL data, NULL sources where read, an output too small */
    CHECK_OK(zg_blosc_frame_plan_for(&good, &p));
    uint8_t *src = malloc(good.nbytes), *sh = malloc(good.nbytes), *out = malloc(good.nbytes + 16);
    make_data(src, good.nbytes, 4, 0, 3);
    zg_blosc_frame_shuffle(&p, src, sh);
    zg_blosc_frame_stream *s = calloc(p.nstreams, sizeof *s);
    uint8_t tiny[4] = {1, 2, 3, 4};
    for (uint32_t i = 0; i < p.nstreams; i++) s[i] = (zg_blosc_frame_stream){tiny, 4, 0}; /* (not valid LZ4) */
    size_t w;
    int plain;
    CHECK_STATUS(zg_blosc_frame_build(&p, src, sh, s, p.nstreams - 1, out, good.nbytes + 16, &w, NULL),
                 ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(zg_blosc_frame_build(&p, src, sh, NULL, p.nstreams, out, good.nbytes + 16, &w, NULL),
                 ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_OK(zg_blosc_frame_build(&p, NULL, NULL, s, p.nstreams, NULL, 0, &w, &plain));
    CHECK(!plain && w == 16 + 4 * p.nblocks + 8 * p.nstreams);
    CHECK_STATUS(zg_blosc_frame_build(&p, src, sh, s, p.nstreams, out, w - 1, &w, NULL), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(w == 16 + 4 * p.nblocks + 8 * p.nstreams); /* the size needed, still reported */
    s[3].data = NULL;
    CHECK_STATUS(zg_blosc_frame_build(&p, src, sh, s, p.nstreams, out, good.nbytes + 16, &w, NULL),
                 ZGPU_ERR_INVALID_ARGUMENT);
    s[3] = (zg_blosc_frame_stream){NULL, 0, 1}; /* raw, from the shuffled chunk: which must be given */
    CHECK_STATUS(zg_blosc_frame_build(&p, src, NULL, s, p.nstreams, out, good.nbytes + 16, &w, NULL),
                 ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_OK(zg_blosc_frame_build(&p, NULL, sh, s, p.nstreams, out, good.nbytes + 16, &w, &plain));
    CHECK(!plain);
    /* every stream raw: past nbytes + 16, a plain copy, which reads src */
    for (uint32_t i = 0; i < p.nstreams; i++) s[i] = (zg_blosc_frame_stream){NULL, 0, 1};
    CHECK_OK(zg_blosc_frame_build(&p, NULL, NULL, s, p.nstreams, NULL, 0, &w, &plain));
    CHECK(plain && w == good.nbytes + 16);
    CHECK_STATUS(zg_blosc_frame_build(&p, NULL, sh, s, p.nstreams, out, w, &w, NULL), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_OK(zg_blosc_frame_build(&p, src, NULL, s, p.nstreams, out, w, &w, &plain));
    CHECK(plain && (out[2] & 0x02) && memcmp(out + 16, src, good.nbytes) == 0);
    uint8_t *dec = malloc(good.nbytes);
    CHECK(blosc_decompress_ctx(out, dec, good.nbytes, 1) == (int)good.nbytes && memcmp(dec, src, good.nbytes) == 0);
    free(dec);
    free(s);
    free(src);
    free(sh);
    free(out);
    CHECK_STATUS(zg_blosc_frame_build(NULL, NULL, NULL, NULL, 0, NULL, 0, &w, NULL), ZGPU_ERR_INVALID_ARGUMENT);
}

int main(void) {
    zt_sample_init();
    zstd_cctx = ZSTD_createCCtx();
    CHECK_OK(zg_codec_find("numcodecs.blosc")->create(NULL, NULL, &blosc_codec));
    if (!blosc_codec) TEST_MAIN_END();
    test_spans();
    test_bad_arguments();
    test_shuffle_inverse();
    test_plan_sweep();
    test_forced_and_odd();
    test_round_trips();
    blosc_codec->vt->destroy(blosc_codec);
    ZSTD_freeCCtx(zstd_cctx);
    zt_sample_report();
    TEST_MAIN_END();
}
