/* Host-side parsing for the GPU decoder (CPU only, runs in CI): Blosc1 chunks made by c-blosc are parsed,
 * every listed stream is decoded with the reference libraries (lz4, zstd, zlib), unshuffled with the
 * reference filters and compared byte for byte with the original; corrupt headers are rejected. Also the
 * gzip/zlib/lz4/zstd/deflate frame checks (gpucodec: deflate_check.h, lz4_check.h, zstd_check.h; valid streams
 * from libzstd / libdeflate / zlib pass; hand-made invalid ones and thousands of corrupted variants are
 * rejected) and the split-and-combine checksum math of gpucodec/common/checksum_combine.h that the GPU checksum kernels use. */
#include <blosc.h>
#include <libdeflate.h>
#include <lz4.h>
#include <lz4hc.h>
#include <zlib.h>
#include <zstd.h>

#include "codec/crc32c.h"
#include "common/endian.h"
#include "gpucodec/blosc/blosc_parse.h"
#include "gpucodec/common/checksum_combine.h"
#include "gpucodec/deflate/deflate_check.h"
#include "gpucodec/lz4/lz4_check.h"
#include "gpucodec/zstd/zstd_check.h"
#include "gpucodec/zstd/zstd_plan.h"
#include "gpucodec/lz4/lz4_rules.h"
#include "gpucodec/nvcomp/snappy_check.h"
#include "gpucodec/zstd/zstd_rules.h"
#include "sampling.h"
#include "test.h"
#include "zgpu.h"

static uint8_t *make_data(size_t n, unsigned seed) {
    uint8_t *d = malloc(n);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        /* compressible but not trivial: slow ramps plus low-bit noise */
        d[i] = (uint8_t)((i / 7) + ((x >> 16) & 3));
    }
    return d;
}

/* Decodes one chunk through the parsed stream list; returns 0 on success. */
static int decode_via_streams(const uint8_t *c, size_t cn, size_t expected, uint8_t *out, zg_blosc_header *h) {
    if (zg_blosc_parse_header(c, cn, expected, h) != ZGPU_OK) return -1;
    size_t cap = zg_blosc_max_streams(h), ns = 0;
    zg_blosc_stream *st = calloc(cap ? cap : 1, sizeof *st);
    if (zg_blosc_streams(c, cn, h, st, cap, &ns) != ZGPU_OK) {
        free(st);
        return -2;
    }
    uint8_t *tmp = malloc(expected + 1);
    int rc = 0;
    size_t covered = 0;
    for (size_t i = 0; i < ns && rc == 0; i++) {
        const uint8_t *s = c + st[i].src_off;
        uint8_t *d = tmp + st[i].dst_off;
        covered += st[i].dst_len;
        if (st[i].raw) {
            memcpy(d, s, st[i].dst_len);
            continue;
        }
        switch (h->compformat) {
        case ZG_BLOSC_LZ4:
            if (LZ4_decompress_safe((const char *)s, (char *)d, (int)st[i].src_len, (int)st[i].dst_len) !=
                (int)st[i].dst_len)
                rc = -3;
            if (zg_lz4_block_check(s, st[i].src_len, st[i].dst_len) != ZGPU_OK) rc = -4;
            { /* the LZ4 walk, decoding on the host by the rules the GPU decoder steps by, makes the same bytes */
                uint8_t *w = malloc(st[i].dst_len ? st[i].dst_len : 1);
                size_t ip, op;
                if (zg_lz4_walk(s, st[i].src_len, st[i].dst_len, w, &ip, &op) != ZG_LZ4_OK ||
                    memcmp(w, d, st[i].dst_len) != 0)
                    rc = -7;
                free(w);
            }
            break;
        case ZG_BLOSC_ZSTD:
            if (ZSTD_decompress(d, st[i].dst_len, s, st[i].src_len) != st[i].dst_len) rc = -3;
            if (zg_zstd_check(s, st[i].src_len, st[i].dst_len) != ZGPU_OK) rc = -4;
            if (zg_blosc_stream_payload(h, c, &st[i]) != ZGPU_OK || st[i].check_kind != ZG_CHECK_NONE) rc = -8;
            break;
        case ZG_BLOSC_ZLIB: {
            size_t off, len;
            if (zg_zlib_locate(s, st[i].src_len, st[i].dst_len, &off, &len) != ZGPU_OK) { rc = -4; break; }
            /* the payload as the GPU reads it, and the Adler-32 it verifies over the stream's decoded bytes */
            zg_blosc_stream ps = st[i];
            if (zg_blosc_stream_payload(h, c, &ps) != ZGPU_OK || ps.check_kind != ZG_CHECK_ADLER32 ||
                ps.src_off != st[i].src_off + off || ps.src_len != len) {
                rc = -8;
                break;
            }
            z_stream zs;
            memset(&zs, 0, sizeof zs);
            inflateInit2(&zs, -15); /* the located payload is raw deflate */
            zs.next_in = (Bytef *)(s + off);
            zs.avail_in = (uInt)len;
            zs.next_out = d;
            zs.avail_out = st[i].dst_len;
            int zr = inflate(&zs, Z_FINISH);
            if (zr != Z_STREAM_END || zs.total_out != st[i].dst_len) rc = -3;
            inflateEnd(&zs);
            if (rc == 0 && adler32(adler32(0, NULL, 0), d, st[i].dst_len) != ps.check) rc = -9;
            break;
        }
        case ZG_BLOSC_SNAPPY: /* (the walk nVIDIA's decoder gets its streams past, decoding) */
            if (zg_snappy_walk(s, st[i].src_len, st[i].dst_len, d) != ZGPU_OK) rc = -3;
            break;
        default: rc = -5; /* blosclz: no reference decoder here */
        }
    }
    if (rc == 0 && covered != expected) rc = -6;
    if (rc == 0) zg_blosc_unshuffle_ref(h, tmp, out);
    free(tmp);
    free(st);
    return rc;
}

static void test_roundtrips(void) {
    const char *comps[] = {"lz4", "lz4hc", "zstd", "zlib", "blosclz", "snappy"};
    const size_t sizes[] = {0, 1, 100, 4096, 100000, 300001};
    const int typesizes[] = {1, 2, 4, 8, 3, 16, 32};
    const size_t blocksizes[] = {0, 1024, 6000};
    int n_checked = 0, n_blosclz_raw = 0;
    for (size_t ci = 0; ci < sizeof comps / sizeof *comps; ci++)
        for (int sh = 0; sh <= 2; sh++)
            for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
                for (size_t ti = 0; ti < sizeof typesizes / sizeof *typesizes; ti++)
                    for (size_t bi = 0; bi < sizeof blocksizes / sizeof *blocksizes; bi++) {
                        if (!zt_take()) continue; /* (each case's data comes from its own seed) */
                        size_t n = sizes[si] - sizes[si] % (size_t)typesizes[ti];
                        uint8_t *src = make_data(n, (unsigned)(ci * 131 + sh * 17 + si));
                        size_t cap = n + 16 + 64;
                        uint8_t *c = malloc(cap);
                        int cn = blosc_compress_ctx(5, sh, (size_t)typesizes[ti], n, src, c, cap, comps[ci],
                                                    blocksizes[bi], 1);
                        CHECK_MSG(cn > 0, "blosc_compress_ctx %s failed", comps[ci]);
                        if (cn <= 0) { free(src); free(c); continue; }
                        uint8_t *out = malloc(n + 1);
                        zg_blosc_header h;
                        int rc = decode_via_streams(c, (size_t)cn, n, out, &h);
                        if (rc == -5) { /* blosclz: parsing must still work */
                            n_blosclz_raw++;
                            CHECK(h.compformat == ZG_BLOSC_BLOSCLZ);
                        } else {
                            CHECK_MSG(rc == 0 && memcmp(out, src, n) == 0,
                                      "%s shuffle %d n %zu typesize %d blocksize %zu: rc %d", comps[ci], sh, n,
                                      typesizes[ti], blocksizes[bi], rc);
                            n_checked++;
                        }
                        CHECK(h.nbytes == n && h.cbytes == (uint32_t)cn);
                        /* wrong expected size and truncation are rejected */
                        CHECK_STATUS(zg_blosc_parse_header(c, (size_t)cn, n + 1, &h), ZGPU_ERR_CORRUPT_DATA);
                        CHECK_STATUS(zg_blosc_parse_header(c, (size_t)cn - 1, n, &h), ZGPU_ERR_CORRUPT_DATA);
                        free(out);
                        free(src);
                        free(c);
                    }
    CHECK(zt_enough((uint64_t)n_checked, 500));
    printf("blosc: %d chunks decoded through the stream list, %d blosclz chunks parsed\n", n_checked, n_blosclz_raw);
}

static void test_corrupt_blosc(void) {
    size_t n = 1 << 20;
    uint8_t *src = make_data(n, 7);
    uint8_t *c = malloc(n + 64);
    int cn = blosc_compress_ctx(5, 1, 4, n, src, c, n + 64, "lz4", 4096, 1);
    CHECK(cn > 16);
    zg_blosc_header h;
    CHECK_OK(zg_blosc_parse_header(c, (size_t)cn, n, &h));
    CHECK(h.nblocks >= 4 && h.nblocks == (n + h.blocksize - 1) / h.blocksize);
    CHECK(h.shuffle == ZG_BLOSC_SHUFFLE && h.compformat == ZG_BLOSC_LZ4);
    uint8_t *bad = malloc((size_t)cn);
    zg_blosc_stream st[4096];
    size_t ns;
    /* a block start pointing past the end */
    memcpy(bad, c, (size_t)cn);
    bad[16 + 4 * 3 + 3] = 0x7f;
    CHECK_OK(zg_blosc_parse_header(bad, (size_t)cn, n, &h));
    CHECK_STATUS(zg_blosc_streams(bad, (size_t)cn, &h, st, 4096, &ns), ZGPU_ERR_CORRUPT_DATA);
    /* a stream size running past the end */
    memcpy(bad, c, (size_t)cn);
    uint32_t b0 = (uint32_t)bad[16] | (uint32_t)bad[17] << 8 | (uint32_t)bad[18] << 16 | (uint32_t)bad[19] << 24;
    bad[b0 + 3] = 0x40;
    CHECK_OK(zg_blosc_parse_header(bad, (size_t)cn, n, &h));
    CHECK_STATUS(zg_blosc_streams(bad, (size_t)cn, &h, st, 4096, &ns), ZGPU_ERR_CORRUPT_DATA);
    /* header fields */
    memcpy(bad, c, (size_t)cn);
    bad[0] = 9;
    CHECK_STATUS(zg_blosc_parse_header(bad, (size_t)cn, n, &h), ZGPU_ERR_CORRUPT_DATA);
    memcpy(bad, c, (size_t)cn);
    bad[3] = 0;
    CHECK_STATUS(zg_blosc_parse_header(bad, (size_t)cn, n, &h), ZGPU_ERR_CORRUPT_DATA);
    memcpy(bad, c, (size_t)cn);
    bad[8] = bad[9] = bad[10] = bad[11] = 0;
    CHECK_STATUS(zg_blosc_parse_header(bad, (size_t)cn, n, &h), ZGPU_ERR_CORRUPT_DATA);
    CHECK_STATUS(zg_blosc_parse_header(c, 10, SIZE_MAX, &h), ZGPU_ERR_CORRUPT_DATA);
    /* the stream array is never overrun */
    CHECK_OK(zg_blosc_parse_header(c, (size_t)cn, n, &h));
    CHECK_STATUS(zg_blosc_streams(c, (size_t)cn, &h, st, 3, &ns), ZGPU_ERR_INTERNAL);
    free(bad);
    free(c);
    free(src);
}

static void test_shuffle_refs(void) {
    /* byte shuffle: 3 elements of 2 bytes + 1 trailing byte */
    const uint8_t sh[7] = {0xa0, 0xa1, 0xa2, 0xb0, 0xb1, 0xb2, 0xee};
    uint8_t un[7];
    zg_unshuffle_bytes_ref(2, 7, sh, un);
    const uint8_t want[7] = {0xa0, 0xb0, 0xa1, 0xb1, 0xa2, 0xb2, 0xee};
    CHECK(memcmp(un, want, 7) == 0);
    /* bit shuffle of 8 one-byte elements: row k holds bit k of every element, element e in bit e */
    uint8_t elems[8] = {1, 2, 4, 8, 16, 32, 64, 128}, rows[8], back[8];
    for (int k = 0; k < 8; k++) {
        rows[k] = 0;
        for (int e = 0; e < 8; e++) rows[k] |= (uint8_t)(((elems[e] >> k) & 1) << e);
    }
    CHECK(rows[0] == 1 && rows[7] == 128 && rows[3] == 8);
    zg_bitunshuffle_ref(1, 8, rows, back);
    CHECK(memcmp(back, elems, 8) == 0);
}

static void test_frames(void) {
    size_t n = 200000;
    uint8_t *src = make_data(n, 3);
    size_t cap = 2 * n + 1024, off, len;
    uint8_t *c = malloc(cap), *out = malloc(n);
    /* gzip */
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
    zs.next_in = src;
    zs.avail_in = (uInt)n;
    zs.next_out = c;
    zs.avail_out = (uInt)cap;
    CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    size_t gn = zs.total_out;
    deflateEnd(&zs);
    CHECK_OK(zg_gzip_locate(c, gn, n, &off, &len));
    CHECK_EQ_U64(off, 10);
    memset(&zs, 0, sizeof zs);
    inflateInit2(&zs, -15);
    zs.next_in = c + off;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)n;
    CHECK(inflate(&zs, Z_FINISH) == Z_STREAM_END && zs.total_out == n && memcmp(out, src, n) == 0);
    inflateEnd(&zs);
    CHECK_STATUS(zg_gzip_locate(c, gn, n - 1, &off, &len), ZGPU_ERR_CORRUPT_DATA);
    c[0] ^= 1;
    CHECK_STATUS(zg_gzip_locate(c, gn, n, &off, &len), ZGPU_ERR_CORRUPT_DATA);
    /* zlib */
    uLongf zn = (uLongf)cap;
    CHECK(compress2(c, &zn, src, n, 6) == Z_OK);
    CHECK_OK(zg_zlib_locate(c, zn, n, &off, &len));
    CHECK(off == 2 && len == zn - 6);
    c[1] ^= 1;
    CHECK_STATUS(zg_zlib_locate(c, zn, n, &off, &len), ZGPU_ERR_CORRUPT_DATA);
    /* numcodecs lz4: size prefix + block */
    int ln = LZ4_compress_default((const char *)src, (char *)c + 4, (int)n, (int)cap - 4);
    CHECK(ln > 0);
    c[0] = (uint8_t)n; c[1] = (uint8_t)(n >> 8); c[2] = (uint8_t)(n >> 16); c[3] = 0;
    CHECK_OK(zg_lz4nc_locate(c, (size_t)ln + 4, n, &off, &len));
    CHECK(off == 4 && len == (size_t)ln);
    CHECK_STATUS(zg_lz4nc_locate(c, (size_t)ln + 4, n + 1, &off, &len), ZGPU_ERR_CORRUPT_DATA);
    CHECK_STATUS(zg_lz4nc_locate(c, (size_t)ln + 3, n, &off, &len), ZGPU_ERR_CORRUPT_DATA);
    /* every truncation is caught (the walk ends short of n bytes or inside a sequence) */
    int caught = 0;
    for (int i = 1; i < ln; i += 1 + ln / 500) {
        c[0] = (uint8_t)n; /* keep the prefix */
        if (zg_lz4_block_check(c + 4, (size_t)i, n) != ZGPU_OK) caught++;
        else fprintf(stderr, "truncation to %d not caught\n", i);
    }
    CHECK(caught > 400);
    /* a match offset reaching before the start of the output is caught */
    const uint8_t badblk[] = {0x10, 'a', 0x05, 0x00, 0x00};
    CHECK_STATUS(zg_lz4_block_check(badblk, sizeof badblk, 5), ZGPU_ERR_CORRUPT_DATA);
    const uint8_t goodblk[] = {0x10, 'a', 0x01, 0x00, 0x00};
    CHECK_OK(zg_lz4_block_check(goodblk, sizeof goodblk, 5));
    /* zstd: one frame; two frames are UNSUPPORTED (CPU path); wrong content size is CORRUPT */
    size_t zsn = ZSTD_compress(c, cap, src, n, 3);
    CHECK(!ZSTD_isError(zsn));
    CHECK_OK(zg_zstd_check(c, zsn, n));
    CHECK_STATUS(zg_zstd_check(c, zsn, n + 1), ZGPU_ERR_CORRUPT_DATA);
    CHECK_STATUS(zg_zstd_check(c, zsn - 1, n), ZGPU_ERR_CORRUPT_DATA);
    memcpy(c + zsn, c, zsn);
    CHECK_STATUS(zg_zstd_check(c, 2 * zsn, n), ZGPU_ERR_UNSUPPORTED);
    c[0] ^= 1;
    CHECK_STATUS(zg_zstd_check(c, zsn, n), ZGPU_ERR_CORRUPT_DATA);
    free(c);
    free(out);
    free(src);
}

/* The LZ4 walk that zgpu's GPU decoder runs (lz4_rules.h), on the host: blocks made by liblz4 (fast and HC,
 * from noisy ramps, long runs of one value, incompressible bytes) decode to their source; thousands of
 * corrupted variants either fail or decode exactly as liblz4 does, writing only into an exact-size buffer
 * (AddressSanitizer watches it in `make test-asan`). */
static void test_lz4_decode_walk(void) {
    const size_t n = 200000;
    uint8_t *src[3] = {make_data(n, 5), malloc(n), malloc(n)};
    uint32_t x = 99;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        src[1][i] = (uint8_t)((i / 3000) % 5 == 0 ? x >> 24 : (i / 3000) * 7); /* runs, some noise */
        src[2][i] = (uint8_t)(x >> 24);                                      /* incompressible */
    }
    const int cap = LZ4_compressBound((int)n);
    uint8_t *c = malloc((size_t)cap), *ref = malloc(n);
    int mutants = 0, failed = 0, agreed = 0, differed = 0;
    for (int k = 0; k < 3; k++)
        for (int hc = 0; hc < 2; hc++) {
            const int cn = hc ? LZ4_compress_HC((const char *)src[k], (char *)c, (int)n, cap, 9)
                              : LZ4_compress_default((const char *)src[k], (char *)c, (int)n, cap);
            CHECK(cn > 0);
            uint8_t *out = malloc(n);
            size_t ip, op;
            CHECK_EQ_U64((uint64_t)zg_lz4_walk(c, (size_t)cn, n, out, &ip, &op), (uint64_t)ZG_LZ4_OK);
            CHECK(op == n && ip == (size_t)cn && memcmp(out, src[k], n) == 0);
            /* one more or one fewer byte expected: an error, nothing written past the buffer */
            CHECK_EQ_U64((uint64_t)zg_lz4_walk(c, (size_t)cn, n - 1, out, &ip, &op),
                         (uint64_t)ZG_LZ4_E_TOO_LONG);
            free(out);
            out = malloc(n + 1);
            CHECK_EQ_U64((uint64_t)zg_lz4_walk(c, (size_t)cn, n + 1, out, &ip, &op), (uint64_t)ZG_LZ4_E_SIZE);
            free(out);
            /* corrupted variants: a byte changed, or the block cut short */
            for (int m = 0; m < 400; m++) {
                x = x * 1664525u + 1013904223u;
                const size_t at = (x >> 8) % (size_t)cn;
                const uint8_t was = c[at];
                size_t len = (size_t)cn;
                if (m % 4 == 3) len = at + 1;
                else c[at] = (uint8_t)(was ^ (1u + (x >> 27)));
                out = malloc(n);
                const int e = zg_lz4_walk(c, len, n, out, &ip, &op);
                const int r = LZ4_decompress_safe((const char *)c, (char *)ref, (int)len, (int)n);
                mutants++;
                if (e) failed++;
                else if (r == (int)n && memcmp(out, ref, n) == 0) agreed++;
                else differed++;
                free(out);
                c[at] = was;
            }
        }
    CHECK(mutants == 2400 && failed > 400 && agreed > 400 && differed == 0);
    if (differed) fprintf(stderr, "LZ4 walk: %d corrupted blocks decoded unlike liblz4\n", differed);
    fprintf(stderr, "LZ4 walk: %d corrupted blocks: %d rejected, %d decoded as liblz4 does\n", mutants, failed, agreed);
    for (int k = 0; k < 3; k++) free(src[k]);
    free(c);
    free(ref);
}

/* ---------------------------------------------------------------- checksum split-and-combine math */
static uint32_t trng = 777;
static uint32_t trand(void) {
    trng = trng * 1664525u + 1013904223u;
    return trng >> 8;
}

static void test_checksum_combine(void) {
    uint32_t pw32[ZG_CRC_POW_N], pw32c[ZG_CRC_POW_N], tab32[2048], tab32c[2048];
    zg_crc_pow_init(pw32, ZG_CRC32_POLY);
    zg_crc_pow_init(pw32c, ZG_CRC32C_POLY);
    zg_crc_tables8_init(tab32, ZG_CRC32_POLY);
    zg_crc_tables8_init(tab32c, ZG_CRC32C_POLY);
    /* known vectors: CRC32 / CRC32C / Adler-32 of "123456789" (the catalogue check values) */
    const uint8_t *nine = (const uint8_t *)"123456789";
    CHECK_EQ_U64(zg_crc_finish(zg_crc_shift(zg_crc_raw_bytes(tab32, 0, nine, 9), 0, pw32, ZG_CRC32_POLY), 9, pw32,
                               ZG_CRC32_POLY), 0xCBF43926u);
    CHECK_EQ_U64(zg_crc_finish(zg_crc_raw_bytes(tab32c, 0, nine, 9), 9, pw32c, ZG_CRC32C_POLY), 0xE3069283u);
    uint32_t a9, b9;
    zg_adler_range(nine, 9, &a9, &b9);
    CHECK_EQ_U64(zg_adler_finish(a9, b9, 9), 0x091E01DEu);
    /* x^0 is the identity, and x^32 = P (without its x^32 term) */
    CHECK_EQ_U64(zg_gf2_mulmod(0x80000000u, 0x12345678u, ZG_CRC32_POLY), 0x12345678u);
    CHECK_EQ_U64(zg_crc_shift(0x80000000u, 4, pw32, ZG_CRC32_POLY), ZG_CRC32_POLY);
    /* shift(v, m) == the raw register advanced over m zero bytes; shifts compose */
    uint8_t zeros[3000];
    memset(zeros, 0, sizeof zeros);
    int ok_shift = 1;
    for (int t = 0; t < 200; t++) {
        uint32_t v = trand() ^ trand() << 16;
        size_t m = trand() % 3000, m2 = trand() % 100000;
        ok_shift &= zg_crc_shift(v, m, pw32, ZG_CRC32_POLY) == zg_crc_raw_bytes(tab32, v, zeros, m);
        ok_shift &= zg_crc_shift(v, m, pw32c, ZG_CRC32C_POLY) == zg_crc_raw_bytes(tab32c, v, zeros, m);
        ok_shift &= zg_crc_shift(zg_crc_shift(v, m, pw32, ZG_CRC32_POLY), m2, pw32, ZG_CRC32_POLY) ==
                    zg_crc_shift(v, m + m2, pw32, ZG_CRC32_POLY);
    }
    CHECK_MSG(ok_shift, "CRC shift disagrees with zero bytes or does not compose");
    /* huge shifts use the high powers: x^(8 * 2^40) applied twice == x^(8 * 2^41) */
    CHECK_EQ_U64(zg_crc_shift(zg_crc_shift(0x1234567u, 1ull << 40, pw32, ZG_CRC32_POLY), 1ull << 40, pw32, ZG_CRC32_POLY),
                 zg_crc_shift(0x1234567u, 1ull << 41, pw32, ZG_CRC32_POLY));

    /* buffers split into ranges of random lengths (empty ranges included), each range's terms combined the
     * way the kernels do it, against zlib's crc32 / adler32 and zg_crc32c; plus the pairwise combines */
    const size_t lens[] = {0, 1, 3, 7, 8, 9, 4095, 4096, 4097, 5552, 5553, 65536, 1u << 20, (8u << 20) + 13};
    size_t maxn = (8u << 20) + 13;
    uint8_t *buf = malloc(maxn);
    for (size_t i = 0; i < maxn; i++) buf[i] = (uint8_t)trand();
    int ok = 1;
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
        for (int kind = 0; kind < 2; kind++) {
            size_t n = lens[li];
            uint8_t *d = buf;
            if (kind == 1) { /* all 0xff: the largest Adler-32 sums */
                d = malloc(n + 1);
                memset(d, 0xff, n);
            }
            const uint32_t want32 = (uint32_t)crc32(0, d, (uInt)n), wantc = zg_crc32c(0, d, n);
            const uint32_t wanta = (uint32_t)adler32(1, d, (uInt)n);
            for (int split = 0; split < 4; split++) {
                size_t nr = split == 0 ? 1 : (split == 1 ? 7 : (split == 2 ? 1024 : 1 + trand() % 5000));
                uint32_t lin32 = 0, linc = 0, pair32 = 0, pairc = 0, paira = 1;
                uint64_t sa = 0, sb = 0;
                size_t at = 0;
                for (size_t r = 0; r < nr; r++) {
                    size_t len = r == nr - 1 ? n - at : (n - at) * (trand() % 1000) / (1000 * (nr - r) / 2 + 1);
                    if (len > n - at) len = n - at;
                    const uint8_t *q = d + at;
                    size_t end = at + len;
                    /* slicing-by-8 over the aligned middle of the range, bytes around it */
                    uint32_t r32 = 0, rc = 0;
                    size_t i = 0;
                    for (; i + 8 <= len; i += 8) {
                        uint32_t lo, hi;
                        memcpy(&lo, q + i, 4);
                        memcpy(&hi, q + i + 4, 4);
                        r32 = zg_crc_raw_word8(tab32, r32, lo, hi);
                        rc = zg_crc_raw_word8(tab32c, rc, lo, hi);
                    }
                    r32 = zg_crc_raw_bytes(tab32, r32, q + i, len - i);
                    rc = zg_crc_raw_bytes(tab32c, rc, q + i, len - i);
                    lin32 ^= zg_crc_shift(r32, n - end, pw32, ZG_CRC32_POLY);
                    linc ^= zg_crc_shift(rc, n - end, pw32c, ZG_CRC32C_POLY);
                    uint32_t ar, br;
                    zg_adler_range(q, len, &ar, &br);
                    sa += ar;
                    sb += zg_adler_b_term(ar, br, n - end);
                    /* pairwise: the running checksum combined with this range's own checksum */
                    pair32 = zg_crc_combine(pair32, (uint32_t)crc32(0, q, (uInt)len), len, pw32, ZG_CRC32_POLY);
                    pairc = zg_crc_combine(pairc, zg_crc32c(0, q, len), len, pw32c, ZG_CRC32C_POLY);
                    paira = zg_adler_combine(paira, (uint32_t)adler32(1, q, (uInt)len), len);
                    at = end;
                }
                uint32_t g32 = zg_crc_finish(lin32, n, pw32, ZG_CRC32_POLY), gc = zg_crc_finish(linc, n, pw32c, ZG_CRC32C_POLY);
                uint32_t ga = zg_adler_finish(sa, sb, n);
                if (at != n || g32 != want32 || gc != wantc || ga != wanta || pair32 != want32 || pairc != wantc ||
                    paira != wanta) {
                    ok = 0;
                    fprintf(stderr, "n %zu kind %d ranges %zu: crc32 %08x/%08x/%08x crc32c %08x/%08x/%08x adler %08x/%08x/%08x\n",
                            n, kind, nr, g32, pair32, want32, gc, pairc, wantc, ga, paira, wanta);
                }
            }
            if (kind == 1) free(d);
        }
    CHECK_MSG(ok, "split checksums differ from zlib / zg_crc32c");
    /* pairwise combines against zlib's own */
    int okc = 1;
    for (int t = 0; t < 100; t++) {
        uint32_t c1 = trand(), c2 = trand() ^ trand() << 16;
        z_off_t l2 = (z_off_t)(trand() % 10000000);
        okc &= zg_crc_combine(c1, c2, (uint64_t)l2, pw32, ZG_CRC32_POLY) == (uint32_t)crc32_combine(c1, c2, l2);
        uint32_t a1 = (trand() % 65521) | (trand() % 65521) << 16, a2 = (trand() % 65521) | (trand() % 65521) << 16;
        okc &= zg_adler_combine(a1, a2, (uint64_t)l2) == (uint32_t)adler32_combine(a1, a2, l2);
    }
    CHECK_MSG(okc, "pairwise combines differ from zlib's crc32_combine / adler32_combine");
    free(buf);
}

/* ---------------------------------------------------------------- zstd / deflate stream validation */
/* Test inputs: 0 random, 1 zeros, 2 text-like, 3 ramps with noise, 4 random and text in turns, 5 four-letter
 * alphabet (Huffman literals, few matches). */
static uint8_t *make_kind(size_t n, int kind, unsigned seed) {
    static const char *const words[] = {"the ", "zarr ", "chunk ", "array ", "of ", "data ", "GPU ", "decode ",
                                        "and ", "shard ", "\n", "index ", "value, ", "3.14159 "};
    uint8_t *d = malloc(n + 1);
    uint32_t x = seed * 2654435761u + 7;
    size_t i = 0;
    while (i < n) {
        x = x * 1103515245u + 12345u;
        uint32_t r = x >> 8;
        int k = kind == 4 ? (int)((i / 3000) % 2 ? 2 : 0) : kind;
        if (k == 0) d[i++] = (uint8_t)r;
        else if (k == 1) d[i++] = 0;
        else if (k == 2) {
            const char *w = words[r % (sizeof words / sizeof *words)];
            for (; *w && i < n; w++) d[i++] = (uint8_t)*w;
        } else if (k == 3) {
            d[i] = (uint8_t)((i / 7) + (r & 3));
            i++;
        } else d[i++] = (uint8_t)("ACGT"[r & 3]);
    }
    return d;
}

typedef struct corrupt_stats {
    int garbage, garbage_rej, flips, flips_rej, flips_lib_rej, flips_gap, truncs, truncs_rej;
} corrupt_stats;

/* Frame header size of a zstd frame (where the first block header starts). */
static size_t zstd_fh_size(const uint8_t *c) {
    uint8_t fhd = c[4];
    int fcs_flag = fhd >> 6, single = (fhd >> 5) & 1, did = fhd & 3;
    static const int dsz[4] = {0, 1, 2, 4};
    int fcs = fcs_flag == 0 ? single : (fcs_flag == 1 ? 2 : (fcs_flag == 2 ? 4 : 8));
    return 5 + (size_t)(single ? 0 : 1) + (size_t)dsz[did] + (size_t)fcs;
}

static void zstd_corrupt_variants(const uint8_t *c, size_t cn, const uint8_t *src, size_t n, corrupt_stats *cs) {
    uint8_t *bad = malloc(cn), *out = malloc(n + 1);
    size_t body = zstd_fh_size(c) + 3; /* keep the frame header and the first block header */
    int first_compressed = ((c[body - 3] >> 1) & 3) == 2;
    /* garbage block content (what made nvCOMP fault on an H100): counted where the first block is compressed */
    for (int v = 0; v < 40 && body < cn && first_compressed; v++) {
        memcpy(bad, c, cn);
        for (size_t i = body; i < cn; i++) bad[i] = (uint8_t)trand();
        cs->garbage++;
        if (zg_zstd_check(bad, cn, n) != ZGPU_OK) cs->garbage_rej++;
    }
    /* a few flipped bytes inside the blocks */
    for (int v = 0; v < 40 && body < cn; v++) {
        memcpy(bad, c, cn);
        int nf = 1 + (int)(trand() % 4);
        for (int f = 0; f < nf; f++) bad[body + trand() % (cn - body)] ^= (uint8_t)(1 + trand() % 255);
        cs->flips++;
        int rej = zg_zstd_check(bad, cn, n) != ZGPU_OK;
        size_t r = ZSTD_decompress(out, n + 1, bad, cn);
        int lib_rej = ZSTD_isError(r) || r != n || memcmp(out, src, n) != 0;
        cs->flips_rej += rej;
        cs->flips_lib_rej += lib_rej;
        cs->flips_gap += lib_rej && !rej; /* left for the GPU decoder to find */
    }
    /* every truncation (sampled on big frames) */
    size_t step = cn > 2000 ? cn / 500 : 1;
    for (size_t m = 0; m < cn; m += step) { /* exact-size copies: ASan sees any read past the end */
        uint8_t *t = malloc(m ? m : 1);
        memcpy(t, c, m);
        cs->truncs++;
        if (zg_zstd_check(t, m, n) != ZGPU_OK) cs->truncs_rej++;
        else fprintf(stderr, "zstd: truncation to %zu of %zu bytes passes\n", m, cn);
        free(t);
    }
    free(bad);
    free(out);
}

static void test_zstd_valid_and_corrupt(void) {
    const size_t sizes[] = {0, 1, 3, 100, 1000, 5000, 70000, 200000, 1u << 20};
    const int levels[] = {-5, 1, 3, 7, 12, 19};
    corrupt_stats cs;
    memset(&cs, 0, sizeof cs);
    int n_valid = 0;
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int kind = 0; kind < 6; kind++)
            for (size_t li = 0; li < sizeof levels / sizeof *levels; li++) {
                size_t n = sizes[si];
                if (levels[li] >= 12 && n > 200000) continue; /* slow and adds nothing */
                uint8_t *src = make_kind(n, kind, (unsigned)(si * 31 + (size_t)kind * 7 + li));
                size_t cap = ZSTD_compressBound(n);
                uint8_t *c = malloc(cap);
                ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
                ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, levels[li]);
                ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, (int)(li & 1));
                ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, li != 2);
                size_t cn = ZSTD_compress2(cctx, c, cap, src, n);
                CHECK(!ZSTD_isError(cn));
                if (ZSTD_isError(cn)) { free(src); free(c); continue; }
                zgpu_status st = zg_zstd_check(c, cn, n);
                CHECK_MSG(st == ZGPU_OK, "zstd valid frame (n %zu kind %d level %d): %s", n, kind, levels[li],
                          zgpu_last_error());
                n_valid++;
                if (n >= 1000 && n <= 70000 && kind != 0) zstd_corrupt_variants(c, cn, src, n, &cs);
                free(src);
                free(c);
            }
    ZSTD_freeCCtx(cctx);
    printf("zstd: %d valid frames pass; garbage content rejected %d/%d; flips rejected %d/%d (libzstd rejects %d, "
           "%d left to the decoder); truncations rejected %d/%d\n",
           n_valid, cs.garbage_rej, cs.garbage, cs.flips_rej, cs.flips, cs.flips_lib_rej, cs.flips_gap, cs.truncs_rej,
           cs.truncs);
    CHECK(cs.garbage > 1000 && cs.flips > 1000 && cs.truncs > 5000);
    CHECK_MSG(cs.garbage_rej >= cs.garbage * 0.9, "zstd garbage rejected %d/%d", cs.garbage_rej, cs.garbage);
    CHECK_EQ_U64(cs.truncs_rej, cs.truncs);
}

/* Hand-made zstd frames: one compressed block (content `blk`, k bytes) in a single-segment frame of
 * content size fcs. */
static size_t zstd_frame(uint8_t *f, const uint8_t *blk, size_t k, unsigned fcs) {
    const uint8_t hdr[6] = {0x28, 0xb5, 0x2f, 0xfd, 0x20, (uint8_t)fcs};
    memcpy(f, hdr, 6);
    uint32_t bh = 1u | 2u << 1 | (uint32_t)k << 3;
    f[6] = (uint8_t)bh;
    f[7] = (uint8_t)(bh >> 8);
    f[8] = (uint8_t)(bh >> 16);
    memcpy(f + 9, blk, k);
    return 9 + k;
}

static void test_zstd_crafted(void) {
    uint8_t f[128], out[64];
    /* valid: raw literals "hello", no sequences; RLE literals "aaaaa" */
    const uint8_t ok1[] = {5 << 3, 'h', 'e', 'l', 'l', 'o', 0};
    size_t fn = zstd_frame(f, ok1, sizeof ok1, 5);
    CHECK_OK(zg_zstd_check(f, fn, 5));
    CHECK(ZSTD_decompress(out, sizeof out, f, fn) == 5 && memcmp(out, "hello", 5) == 0);
    const uint8_t ok2[] = {1 | 5 << 3, 'a', 0};
    fn = zstd_frame(f, ok2, sizeof ok2, 5);
    CHECK_OK(zg_zstd_check(f, fn, 5));
    CHECK(ZSTD_decompress(out, sizeof out, f, fn) == 5 && memcmp(out, "aaaaa", 5) == 0);
    /* each invalid frame below is also refused by libzstd (checked), and must be refused here */
    struct {
        const char *what;
        uint8_t blk[16];
        size_t k;
        unsigned fcs;
    } bad[] = {
        {"bytes after an empty sequences section", {5 << 3, 'h', 'e', 'l', 'l', 'o', 0, 9}, 8, 5},
        {"treeless literals in the first block", {3 | 0 << 2, 0x50, 0x00, 1, 0x80, 0}, 6, 5},
        {"raw literals past the block", {20 << 3, 'h', 'e', 'l', 'l', 'o', 0}, 7, 20},
        {"no sequences section", {5 << 3, 'h', 'e', 'l', 'l', 'o'}, 6, 5},
        {"repeat modes in the first block", {5 << 3, 'h', 'e', 'l', 'l', 'o', 1, 0xfc, 0x81}, 9, 8},
        {"reserved mode bits", {5 << 3, 'h', 'e', 'l', 'l', 'o', 1, 0x01, 0x81}, 9, 8},
        {"literal length RLE symbol 36", {5 << 3, 'h', 'e', 'l', 'l', 'o', 1, 0x40, 36, 0x81}, 10, 8},
        {"match length RLE symbol 53", {5 << 3, 'h', 'e', 'l', 'l', 'o', 1, 0x04, 53, 0x81}, 10, 8},
        {"literal length accuracy log 10", {5 << 3, 'h', 'e', 'l', 'l', 'o', 1, 0x80, 0x05, 0xff, 0x81}, 11, 8},
        {"offset accuracy log 9", {5 << 3, 'h', 'e', 'l', 'l', 'o', 1, 0x20, 0x04, 0xff, 0x81}, 11, 8},
        {"sequence bitstream without end mark", {5 << 3, 'h', 'e', 'l', 'l', 'o', 1, 0x00, 0x00}, 9, 8},
        {"sequences with an empty bitstream", {5 << 3, 'h', 'e', 'l', 'l', 'o', 1, 0x00}, 8, 8},
        {"content size beyond the blocks", {5 << 3, 'h', 'e', 'l', 'l', 'o', 0}, 7, 9},
        {"literals beyond the content size", {5 << 3, 'h', 'e', 'l', 'l', 'o', 0}, 7, 4},
        {"Huffman weights of 0 bytes", {2 | 0 << 2, 0x50, 0x00, 0x00, 0x80}, 5, 5},
        {"direct Huffman weights that are no code", {2 | 0 << 2, 0x50, 0x00, 0x81, 0x11, 0x80, 0}, 7, 5},
        {"literals stream without end mark", {2 | 0 << 2, 0x50, 0x00, 0x80, 0x10, 0x00, 0}, 7, 5},
        {"4 streams of 5 literals", {2 | 1 << 2, 0x50, 0x00, 0x80, 0x10, 0x00, 0}, 7, 5},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        fn = zstd_frame(f, bad[i].blk, bad[i].k, bad[i].fcs);
        size_t r = ZSTD_decompress(out, sizeof out, f, fn);
        CHECK_MSG(ZSTD_isError(r) || r != bad[i].fcs, "libzstd takes the '%s' frame", bad[i].what);
        zgpu_status st = zg_zstd_check(f, fn, bad[i].fcs);
        CHECK_MSG(st == ZGPU_ERR_CORRUPT_DATA, "'%s' frame: %s (%s)", bad[i].what, zgpu_status_name(st),
                  zgpu_last_error());
    }
    /* a window descriptor caps the block size: window 1 KiB, raw block of 1025 bytes */
    uint8_t big[1100];
    memset(big, 0, sizeof big);
    const uint8_t wh[5] = {0x28, 0xb5, 0x2f, 0xfd, 0x00};
    memcpy(big, wh, 5);
    big[5] = 0; /* window 2^10 */
    uint32_t bh = 1u | 0u << 1 | 1025u << 3;
    big[6] = (uint8_t)bh;
    big[7] = (uint8_t)(bh >> 8);
    big[8] = (uint8_t)(bh >> 16);
    CHECK_STATUS(zg_zstd_check(big, 9 + 1025, 1025), ZGPU_ERR_CORRUPT_DATA);
    bh = 1u | 1024u << 3;
    big[6] = (uint8_t)bh;
    big[7] = (uint8_t)(bh >> 8);
    big[8] = (uint8_t)(bh >> 16);
    CHECK_OK(zg_zstd_check(big, 9 + 1024, 1024));
}

/* Bit writer for hand-made deflate streams: values LSB first, Huffman codes MSB first. */
typedef struct bw {
    uint8_t b[256];
    size_t bit;
} bw;
static void bw_put(bw *w, uint32_t v, int k) {
    for (int i = 0; i < k; i++, w->bit++)
        if ((v >> i) & 1) w->b[w->bit / 8] |= (uint8_t)(1u << (w->bit % 8));
}
static void bw_code(bw *w, uint32_t code, int len) {
    for (int i = len - 1; i >= 0; i--) bw_put(w, (code >> i) & 1, 1);
}
/* fixed literal/length code of symbol s */
static void bw_fixed(bw *w, int s) {
    if (s < 144) bw_code(w, 0x30u + (uint32_t)s, 8);
    else if (s < 256) bw_code(w, 0x190u + (uint32_t)(s - 144), 9);
    else if (s < 280) bw_code(w, (uint32_t)(s - 256), 7);
    else bw_code(w, 0xc0u + (uint32_t)(s - 280), 8);
}

static int inflate_raw(const uint8_t *c, size_t cn, uint8_t *out, size_t cap, size_t *got) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    inflateInit2(&zs, -15);
    zs.next_in = (Bytef *)c;
    zs.avail_in = (uInt)cn;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    int r = inflate(&zs, Z_FINISH);
    *got = zs.total_out;
    inflateEnd(&zs);
    return r == Z_STREAM_END ? 0 : -1;
}

static void test_deflate_crafted(void) {
    uint8_t out[64];
    size_t got;
    /* stored "hello" */
    const uint8_t st[] = {0x01, 5, 0, 0xfa, 0xff, 'h', 'e', 'l', 'l', 'o'};
    CHECK_OK(zg_deflate_check(st, sizeof st, 5));
    CHECK_STATUS(zg_deflate_check(st, sizeof st, 6), ZGPU_ERR_CORRUPT_DATA);
    CHECK_STATUS(zg_deflate_check(st, sizeof st - 1, 5), ZGPU_ERR_CORRUPT_DATA);
    uint8_t st2[sizeof st];
    memcpy(st2, st, sizeof st);
    st2[3] = 0xfb; /* NLEN no longer the complement */
    CHECK_STATUS(zg_deflate_check(st2, sizeof st2, 5), ZGPU_ERR_CORRUPT_DATA);
    st2[0] = 0x07; /* BTYPE 3 */
    CHECK_STATUS(zg_deflate_check(st2, sizeof st2, 5), ZGPU_ERR_CORRUPT_DATA);
    CHECK_STATUS(zg_deflate_check(st, 0, 0), ZGPU_ERR_CORRUPT_DATA);
    /* fixed block: 'a', then length 3 at distance 1 -> "aaaa" (zlib agrees) */
    bw w;
    memset(&w, 0, sizeof w);
    bw_put(&w, 1, 1);
    bw_put(&w, 1, 2);
    bw_fixed(&w, 'a');
    bw_fixed(&w, 257);
    bw_code(&w, 0, 5);
    bw_fixed(&w, 256);
    size_t wn = (w.bit + 7) / 8;
    CHECK(inflate_raw(w.b, wn, out, sizeof out, &got) == 0 && got == 4 && memcmp(out, "aaaa", 4) == 0);
    CHECK_OK(zg_deflate_check(w.b, wn, 4));
    CHECK_STATUS(zg_deflate_check(w.b, wn, 3), ZGPU_ERR_CORRUPT_DATA);
    CHECK_STATUS(zg_deflate_check(w.b, wn, 5), ZGPU_ERR_CORRUPT_DATA);
    /* a distance before the start of the output; distance code 30; length symbol 286 */
    const int bad_first[3][3] = {{257, 1, -1}, {'a', 257, 30}, {'a', 286, -1}};
    for (int t = 0; t < 3; t++) {
        memset(&w, 0, sizeof w);
        bw_put(&w, 1, 1);
        bw_put(&w, 1, 2);
        for (int k = 0; k < 3 && bad_first[t][k] >= 0; k++) {
            if (t == 1 && k == 2) {
                bw_code(&w, 30, 5);
                break;
            }
            bw_fixed(&w, bad_first[t][k]);
            if (bad_first[t][k] == 257 && t == 0) bw_code(&w, 1, 5); /* distance 2 at output 0 */
        }
        bw_fixed(&w, 256);
        wn = (w.bit + 7) / 8;
        CHECK_MSG(inflate_raw(w.b, wn, out, sizeof out, &got) != 0, "zlib takes crafted bad fixed block %d", t);
        CHECK_STATUS(zg_deflate_check(w.b, wn, 4), ZGPU_ERR_CORRUPT_DATA);
    }
    /* dynamic headers: code length codes that are incomplete / over-subscribed / fine but describing an
     * over-subscribed literal code / a literal code without end-of-block */
    for (int t = 0; t < 4; t++) {
        memset(&w, 0, sizeof w);
        bw_put(&w, 1, 1);
        bw_put(&w, 2, 2);
        bw_put(&w, 0, 5); /* HLIT 257 */
        bw_put(&w, 0, 5); /* HDIST 1 */
        bw_put(&w, 15, 4); /* HCLEN 19, order 16 17 18 0 8 7 9 6 10 5 11 4 12 3 13 2 14 1 15 */
        uint8_t cl[19] = {0};
        if (t == 0) cl[3] = 1;                             /* only symbol 0, length 1: incomplete */
        else if (t == 1) cl[3] = cl[4] = cl[5] = 1;        /* three codes of length 1 */
        else cl[0] = cl[2] = cl[3] = cl[18] = 2;           /* 16, 18, 0, 1: two bits each, complete */
        for (int i = 0; i < 19; i++) bw_put(&w, cl[i], 3);
        if (t >= 2) {
            /* canonical codes: 0 -> 00, 1 -> 01, 16 -> 10, 18 -> 11 */
            if (t == 2) { /* 258 lengths of 1: over-subscribed */
                bw_code(&w, 1, 2);
                for (int i = 0; i < 257; i++) {
                    bw_code(&w, 2, 2);
                    bw_put(&w, 0, 2);
                    i += 2;
                }
            } else { /* 257 zero lengths (no end-of-block), one distance length 1 */
                bw_code(&w, 3, 2);
                bw_put(&w, 138 - 11, 7);
                bw_code(&w, 3, 2);
                bw_put(&w, 119 - 11, 7);
                bw_code(&w, 1, 2);
            }
        }
        wn = (w.bit + 7) / 8 + 4;
        CHECK_MSG(inflate_raw(w.b, wn, out, sizeof out, &got) != 0, "zlib takes crafted dynamic header %d", t);
        zgpu_status s = zg_deflate_check(w.b, wn, 4);
        CHECK_MSG(s == ZGPU_ERR_CORRUPT_DATA, "crafted dynamic header %d: %s", t, zgpu_last_error());
    }
}

typedef struct dstream {
    uint8_t *c;
    size_t cn;
} dstream;

static void deflate_corrupt_variants(const uint8_t *c, size_t cn, const uint8_t *src, size_t n, corrupt_stats *cs) {
    uint8_t *bad = malloc(cn), *out = malloc(n + 1);
    for (int v = 0; v < 25; v++) { /* the whole payload random */
        for (size_t i = 0; i < cn; i++) bad[i] = (uint8_t)trand();
        cs->garbage++;
        if (zg_deflate_check(bad, cn, n) != ZGPU_OK) cs->garbage_rej++;
    }
    for (int v = 0; v < 25; v++) { /* a few flipped bytes */
        memcpy(bad, c, cn);
        int nf = 1 + (int)(trand() % 4);
        for (int f = 0; f < nf; f++) bad[trand() % cn] ^= (uint8_t)(1 + trand() % 255);
        cs->flips++;
        int rej = zg_deflate_check(bad, cn, n) != ZGPU_OK;
        size_t got = 0;
        int lib_rej = inflate_raw(bad, cn, out, n + 1, &got) != 0 || got != n || memcmp(out, src, n) != 0;
        cs->flips_rej += rej;
        cs->flips_lib_rej += lib_rej;
        cs->flips_gap += lib_rej && !rej;
    }
    size_t step = cn > 400 ? cn / 200 : 1;
    for (size_t m = 0; m < cn; m += step) {
        uint8_t *t = malloc(m ? m : 1);
        memcpy(t, c, m);
        cs->truncs++;
        if (zg_deflate_check(t, m, n) != ZGPU_OK) cs->truncs_rej++;
        free(t);
    }
    free(bad);
    free(out);
}

static void test_deflate_valid_and_corrupt(void) {
    const size_t sizes[] = {0, 1, 3, 100, 1000, 5000, 70000, 200000, 1u << 20};
    corrupt_stats cs, gz;
    memset(&cs, 0, sizeof cs);
    memset(&gz, 0, sizeof gz);
    int n_valid = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int kind = 0; kind < 6; kind++)
            for (int enc = 0; enc < 13 + 6; enc++) { /* libdeflate levels 0..12, zlib strategies and levels */
                size_t n = sizes[si];
                if (n > 70000 && enc != 0 && enc != 1 && enc != 6 && enc != 13 && enc != 14) continue; /* quick */
                uint8_t *src = make_kind(n, kind, (unsigned)(si * 13 + (size_t)kind * 5 + (size_t)enc));
                size_t cap = n + n / 8 + 1024, cn = 0;
                uint8_t *c = malloc(cap);
                if (enc < 13) {
                    struct libdeflate_compressor *lc = libdeflate_alloc_compressor(enc);
                    cn = libdeflate_deflate_compress(lc, src, n, c, cap);
                    libdeflate_free_compressor(lc);
                } else {
                    static const int strat[6] = {Z_FIXED, Z_HUFFMAN_ONLY, Z_RLE, Z_FILTERED, Z_DEFAULT_STRATEGY,
                                                 Z_DEFAULT_STRATEGY};
                    z_stream zs;
                    memset(&zs, 0, sizeof zs);
                    deflateInit2(&zs, enc == 17 ? 1 : (enc == 18 ? 9 : 6), Z_DEFLATED, -15, 8, strat[enc - 13]);
                    zs.next_in = src;
                    zs.avail_in = (uInt)n;
                    zs.next_out = c;
                    zs.avail_out = (uInt)cap;
                    cn = deflate(&zs, Z_FINISH) == Z_STREAM_END ? zs.total_out : 0;
                    deflateEnd(&zs);
                }
                CHECK(cn > 0);
                zgpu_status st = zg_deflate_check(c, cn, n);
                CHECK_MSG(st == ZGPU_OK, "deflate valid stream (n %zu kind %d encoder %d): %s", n, kind, enc,
                          zgpu_last_error());
                n_valid++;
                if (n >= 1000 && n <= 70000 && kind != 0 && (enc % 3 == 0 || enc >= 13))
                    deflate_corrupt_variants(c, cn, src, n, &cs);
                free(c);
                free(src);
            }
    /* gzip and zlib wrappers: valid members pass; truncated gzip members all fail (ISIZE, payload) */
    struct libdeflate_compressor *lc = libdeflate_alloc_compressor(6);
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si], off, len;
        uint8_t *src = make_kind(n, 2, (unsigned)si), *c = malloc(n + 1024);
        size_t cn = libdeflate_gzip_compress(lc, src, n, c, n + 1024);
        CHECK_OK(zg_gzip_locate(c, cn, n, &off, &len));
        for (size_t m = 0; m < cn; m += cn > 400 ? cn / 200 : 1) {
            uint8_t *t = malloc(m ? m : 1);
            memcpy(t, c, m);
            gz.truncs++;
            if (zg_gzip_locate(t, m, n, &off, &len) != ZGPU_OK) gz.truncs_rej++;
            free(t);
        }
        cn = libdeflate_zlib_compress(lc, src, n, c, n + 1024);
        CHECK_OK(zg_zlib_locate(c, cn, n, &off, &len));
        CHECK_STATUS(zg_zlib_locate(c, cn, n + 1, &off, &len), n < 70000 ? ZGPU_ERR_CORRUPT_DATA : ZGPU_OK);
        free(src);
        free(c);
    }
    libdeflate_free_compressor(lc);
    printf("deflate: %d valid streams pass; garbage rejected %d/%d; flips rejected %d/%d (zlib rejects %d, %d left "
           "to the decoder); raw truncations rejected %d/%d; gzip truncations rejected %d/%d\n",
           n_valid, cs.garbage_rej, cs.garbage, cs.flips_rej, cs.flips, cs.flips_lib_rej, cs.flips_gap, cs.truncs_rej,
           cs.truncs, gz.truncs_rej, gz.truncs);
    CHECK(cs.garbage > 1000 && cs.flips > 1000);
    CHECK_MSG(cs.garbage_rej >= cs.garbage * 0.9, "deflate garbage rejected %d/%d", cs.garbage_rej, cs.garbage);
    CHECK_EQ_U64(gz.truncs_rej, gz.truncs);
}

/* Short random inputs (exact-size buffers, so ASan sees any overread): zstd frames with a valid magic and
 * random header and blocks, raw deflate, gzip and zlib wrappers. Nothing may crash; a random zstd frame
 * essentially never passes. */
static void test_random_inputs(void) {
    int zstd_pass = 0, total = 20000;
    for (int t = 0; t < total; t++) {
        size_t n = trand() % 300;
        uint8_t *p = malloc(n ? n : 1);
        for (size_t i = 0; i < n; i++) p[i] = (uint8_t)trand();
        size_t expected = trand() % 2 ? SIZE_MAX : trand() % 1000, off, len;
        (void)zg_deflate_check(p, n, expected);
        (void)zg_gzip_locate(p, n, expected, &off, &len);
        (void)zg_zlib_locate(p, n, expected, &off, &len);
        if (n >= 4) {
            p[0] = 0x28, p[1] = 0xb5, p[2] = 0x2f, p[3] = 0xfd;
            if (n > 4) p[4] &= 0xf4; /* no reserved bit, no dictionary id: reach the blocks */
        }
        zstd_pass += zg_zstd_check(p, n, expected) == ZGPU_OK;
        free(p);
    }
    printf("random inputs: %d of %d random zstd frames pass\n", zstd_pass, total);
    CHECK(zstd_pass < total / 100);
}

/* ---- the device path against the host path on damaged blosc chunks (issue 25: the GPU path must never accept
 * what the CPU path rejects) ----
 * gpu_model does what the device path does with a chunk, the CPU standing in for the kernels, which follow the same
 * rules (lz4_rules.h's walk, exact stream sizes, a DEFLATE stream ending at its payload's end, the checksums the
 * check kernel verifies): the planner (blosc_parse.h and the decoders' host checks, device/route.c) sends the chunk
 * to host threads (GPU_HOST), or the GPU decodes it (GPU_OK, into out) or fails it (GPU_FAIL; GPU_FAIL_STRICTER: by a
 * rule of the format liblz4 does not check, see below). host_blosc does
 * what the host codec (src/codec/blosc.c) does. A chunk the host rejects must never decode on the GPU; one it
 * accepts must decode to the same bytes on the GPU, or go to the host. */
enum { GPU_OK, GPU_HOST, GPU_FAIL, GPU_FAIL_STRICTER };
static int n_adler_catches, n_xxh_catches; /* GPU_FAIL by a checksum alone: the stream decoded by every rule */
static int n_lz4_offset0;

static int host_blosc(const uint8_t *c, size_t cn, size_t expected, uint8_t *out) {
    if (cn < BLOSC_MIN_HEADER_LENGTH) return -1;
    size_t nbytes = 0, cbytes = 0, bsize = 0;
    blosc_cbuffer_sizes(c, &nbytes, &cbytes, &bsize);
    if (cbytes == 0 || cbytes != cn || blosc_cbuffer_validate(c, cn, &nbytes) != 0 || nbytes != expected) return -1;
    if (nbytes == 0) return 0;
    return blosc_decompress_ctx(c, out, nbytes, 1) == (int)nbytes ? 0 : -1;
}

static uint64_t xxh64_lanes(const uint8_t *p, uint64_t n) {
    uint64_t v[4];
    for (int k = 0; k < 4; k++) v[k] = zg_xxh64_lane(p, n, k);
    return zg_xxh64_finish(v, p, n);
}

static int gpu_model(const uint8_t *c, size_t cn, size_t expected, uint8_t *out) {
    zg_blosc_header h;
    if (zg_blosc_parse_header(c, cn, expected, &h) != ZGPU_OK) return GPU_HOST;
    size_t cap = zg_blosc_max_streams(&h), ns = 0;
    zg_blosc_stream *st = calloc(cap ? cap : 1, sizeof *st);
    int r = zg_blosc_streams(c, cn, &h, st, cap, &ns) == ZGPU_OK ? GPU_OK : GPU_HOST;
    for (size_t i = 0; i < ns && r == GPU_OK; i++) { /* route.c's parse of each compressed stream */
        if (st[i].raw) continue;
        if (h.compformat == ZG_BLOSC_BLOSCLZ || h.compformat > ZG_BLOSC_ZSTD)
            r = GPU_HOST; /* blosclz: no GPU decoder */
        else if (zg_blosc_stream_payload(&h, c, &st[i]) != ZGPU_OK)
            r = GPU_HOST;
        else if (h.compformat == ZG_BLOSC_ZSTD && zg_zstd_check(c + st[i].src_off, st[i].src_len, st[i].dst_len) != ZGPU_OK)
            r = GPU_HOST;
        else if (h.compformat == ZG_BLOSC_SNAPPY && zg_snappy_walk(c + st[i].src_off, st[i].src_len, st[i].dst_len, NULL) != ZGPU_OK)
            r = GPU_HOST; /* (nVIDIA's Snappy decoder sees only streams the walk passes: valid ones) */
    }
    uint8_t *tmp = malloc((size_t)h.nbytes + 1);
    for (size_t i = 0; i < ns && r == GPU_OK; i++) { /* the kernels */
        const uint8_t *s = c + st[i].src_off;
        uint8_t *d = tmp + st[i].dst_off;
        const size_t sl = st[i].src_len, dl = st[i].dst_len;
        if (st[i].raw) {
            memcpy(d, s, dl);
            continue;
        }
        int ok;
        if (h.compformat == ZG_BLOSC_LZ4) {
            size_t ip, op;
            const int e = zg_lz4_walk(s, sl, dl, d, &ip, &op);
            ok = e == ZG_LZ4_OK;
            /* match offset 0: invalid by the LZ4 format, and the GPU rejects it; liblz4 1.9 does not check it (it
             * copies output not yet written): the one case where the GPU fails a chunk the host decodes */
            if (e == ZG_LZ4_E_OFFSET && ip + 1 < sl && (s[ip] | s[ip + 1]) == 0) {
                n_lz4_offset0++;
                r = GPU_FAIL_STRICTER;
                break;
            }
        } else if (h.compformat == ZG_BLOSC_SNAPPY) {
            ok = zg_snappy_walk(s, sl, dl, d) == ZGPU_OK;
        } else if (h.compformat == ZG_BLOSC_ZSTD && st[i].check_kind == ZG_CHECK_XXH64) {
            /* decoded without libzstd's own check (the flag cleared, the checksum cut): the model's XXH64 checks it */
            uint8_t *f = malloc(sl);
            memcpy(f, s, sl);
            f[4] &= (uint8_t)~0x04;
            ok = ZSTD_decompress(d, dl, f, sl - 4) == dl;
            free(f);
        } else if (h.compformat == ZG_BLOSC_ZSTD) {
            ok = ZSTD_decompress(d, dl, s, sl) == dl;
        } else {
            z_stream zs;
            memset(&zs, 0, sizeof zs);
            inflateInit2(&zs, -15);
            zs.next_in = (Bytef *)s;
            zs.avail_in = (uInt)sl;
            zs.next_out = d;
            zs.avail_out = (uInt)dl;
            ok = inflate(&zs, Z_FINISH) == Z_STREAM_END && zs.avail_in == 0 && zs.total_out == dl;
            inflateEnd(&zs);
        }
        if (ok && st[i].check_kind == ZG_CHECK_ADLER32 && adler32(adler32(0, NULL, 0), d, (uInt)dl) != st[i].check) {
            ok = 0;
            n_adler_catches++;
        }
        if (ok && st[i].check_kind == ZG_CHECK_XXH64 && (uint32_t)xxh64_lanes(d, dl) != st[i].check) {
            ok = 0;
            n_xxh_catches++;
        }
        if (!ok) r = GPU_FAIL;
    }
    if (r == GPU_OK) zg_blosc_unshuffle_ref(&h, tmp, out);
    free(tmp);
    free(st);
    return r;
}

typedef struct agree_stats {
    int cases, gpu_ok, gpu_host, gpu_fail, host_ok;
} agree_stats;

/* One damaged chunk through both paths. */
static void agree(const uint8_t *c, size_t cn, size_t expected, const char *what, size_t at, agree_stats *as) {
    uint8_t *g = malloc(expected + 1), *hb = malloc(expected + 1);
    const int m = gpu_model(c, cn, expected, g);
    const int host = host_blosc(c, cn, expected, hb);
    as->cases++;
    as->gpu_ok += m == GPU_OK;
    as->gpu_host += m == GPU_HOST;
    as->gpu_fail += m == GPU_FAIL || m == GPU_FAIL_STRICTER;
    as->host_ok += host == 0;
    if (m == GPU_OK)
        CHECK_MSG(host == 0 && memcmp(g, hb, expected) == 0, "%s at %zu: the GPU path decodes what the host %s", what, at,
                  host == 0 ? "decodes differently" : "rejects");
    if (m == GPU_FAIL) CHECK_MSG(host != 0, "%s at %zu: the GPU path fails a chunk the host decodes", what, at);
    free(g);
    free(hb);
}

static void put_le32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}

static void damage_all(const uint8_t *c, size_t cn, size_t n, agree_stats *as) {
    uint8_t *d = malloc(cn + 64);
    agree(c, cn, n, "undamaged", 0, as); /* always; the damaged ones are sampled under ASan (sampling.h) */
    for (size_t i = 0; i < 16 && i < cn; i++) /* every value of the header's bytes 0-3, some of the sizes' bytes */
        for (int v = 0; v < 256; v++) {
            if (i >= 4 && v > 4 && v < 252 && abs(v - c[i]) > 2 && v != 0x80 && v != 0x7f) continue;
            memcpy(d, c, cn);
            d[i] = (uint8_t)v;
            if (zt_take()) agree(d, cn, n, "header byte", i, as);
        }
    for (size_t i = 0; i < cn; i++) /* bit flips: every bit of the first 64 bytes, then one bit a byte */
        for (int bit = 0; bit < 8; bit++) {
            if (i >= 64 && bit != (int)((i * 5 + 3) % 8)) continue;
            memcpy(d, c, cn);
            d[i] ^= (uint8_t)(1u << bit);
            if (zt_take()) agree(d, cn, n, "bit flip", i * 8 + (size_t)bit, as);
        }
    const size_t cuts[] = {cn - 1, cn - 2, cn - 4, cn / 2, 17, 16, 15};
    for (size_t k = 0; k < sizeof cuts / sizeof *cuts; k++) { /* truncations, with cbytes as stored and made to match */
        if (cuts[k] > cn) continue;
        memcpy(d, c, cn);
        if (zt_take()) agree(d, cuts[k], n, "truncated to", cuts[k], as);
        if (cuts[k] >= 16) {
            put_le32(d + 12, (uint32_t)cuts[k]);
            if (zt_take()) agree(d, cuts[k], n, "truncated with cbytes to", cuts[k], as);
        }
    }
    for (size_t extra = 1; extra <= 33; extra += 8) { /* bytes past cbytes, and inside a cbytes that counts them */
        memcpy(d, c, cn);
        for (size_t k = 0; k < extra; k++) d[cn + k] = (uint8_t)(0xa5 + k);
        if (zt_take()) agree(d, cn + extra, n, "trailing bytes", extra, as);
        put_le32(d + 12, (uint32_t)(cn + extra));
        if (zt_take()) agree(d, cn + extra, n, "trailing bytes in cbytes", extra, as);
    }
    free(d);
}

/* A blosc chunk whose blocks are zstd frames with the content checksum (c-blosc writes none; any zstd frame is
 * valid to its decoder, which verifies the checksum): typesize 4, not split, not shuffled. */
static size_t blosc_zstd_checksummed(const uint8_t *src, size_t n, uint32_t blocksize, uint8_t *out, size_t cap) {
    const uint32_t nblocks = (uint32_t)((n + blocksize - 1) / blocksize);
    out[0] = 2, out[1] = 1, out[2] = (uint8_t)(ZG_BLOSC_ZSTD << 5 | 0x10), out[3] = 4;
    put_le32(out + 4, (uint32_t)n);
    put_le32(out + 8, blocksize);
    size_t pos = 16 + 4 * (size_t)nblocks;
    ZSTD_CCtx *z = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1);
    for (uint32_t b = 0; b < nblocks; b++) {
        const size_t off = (size_t)b * blocksize, len = n - off < blocksize ? n - off : blocksize;
        put_le32(out + 16 + 4 * (size_t)b, (uint32_t)pos);
        const size_t cs = ZSTD_compress2(z, out + pos + 4, cap - pos - 4, src + off, len);
        CHECK(!ZSTD_isError(cs) && cs < len);
        put_le32(out + pos, (uint32_t)cs);
        pos += 4 + cs;
    }
    ZSTD_freeCCtx(z);
    put_le32(out + 12, (uint32_t)pos);
    return pos;
}

static void test_gpu_vs_host_damage(void) {
    const size_t n = 8192;
    uint8_t *src = make_data(n, 25);
    /* a zlib stream that carries little redundancy: bit flips in its literals keep it a valid stream, and only the
     * Adler-32 tells */
    uint8_t *lit = malloc(n);
    for (size_t i = 0; i < n; i++) lit[i] = (uint8_t)((i % 97) * 37 + (i / 331));
    const struct {
        const char *cname;
        int shuffle, typesize, clevel;
        size_t blocksize;
        const uint8_t *data;
    } kinds[] = {
        {"lz4", 1, 4, 5, 2048, NULL},  {"lz4", 2, 4, 5, 0, NULL},     {"zstd", 0, 4, 3, 4096, NULL},
        {"zlib", 1, 4, 5, 2048, NULL}, {"zlib", 0, 1, 1, 0, NULL},    {"blosclz", 1, 2, 5, 0, NULL},
        {"lz4", 1, 4, 0, 0, NULL},     {"zlib", 0, 1, 9, 4096, NULL},    {"snappy", 1, 4, 5, 2048, NULL},
    };
    agree_stats all = {0};
    uint8_t *c = malloc(n + 1024);
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        const uint8_t *data = k == 7 ? lit : src;
        const int cn = blosc_compress_ctx(kinds[k].clevel, kinds[k].shuffle, (size_t)kinds[k].typesize, n, data, c,
                                          n + 1024, kinds[k].cname, kinds[k].blocksize, 1);
        CHECK(cn > 16);
        if (cn <= 16) continue;
        agree_stats as = {0};
        damage_all(c, (size_t)cn, n, &as);
        printf("blosc %s shuffle %d clevel %d (%d bytes): %d damaged chunks: GPU decodes %d, host threads %d, GPU fails "
               "%d; the host decodes %d\n", kinds[k].cname, kinds[k].shuffle, kinds[k].clevel, cn, as.cases, as.gpu_ok,
               as.gpu_host, as.gpu_fail, as.host_ok);
        CHECK(as.gpu_ok >= 1 && (zt_sampled() || as.gpu_host > 0));
        all.cases += as.cases;
        all.gpu_fail += as.gpu_fail;
    }
    /* zstd frames with their content checksum inside blosc */
    const size_t zn = blosc_zstd_checksummed(src, n, 2048, c, n + 1024);
    zg_blosc_header h;
    CHECK_OK(zg_blosc_parse_header(c, zn, n, &h));
    uint8_t *out = malloc(n);
    CHECK(host_blosc(c, zn, n, out) == 0 && memcmp(out, src, n) == 0);
    CHECK(gpu_model(c, zn, n, out) == GPU_OK && memcmp(out, src, n) == 0);
    zg_blosc_stream st[8];
    size_t ns = 0;
    CHECK_OK(zg_blosc_streams(c, zn, &h, st, 8, &ns));
    CHECK(ns == 4);
    for (size_t i = 0; i < ns; i++) {
        CHECK_OK(zg_blosc_stream_payload(&h, c, &st[i]));
        CHECK(st[i].check_kind == ZG_CHECK_XXH64 && st[i].check == (uint32_t)zd_xxh64(src + 2048 * i, 2048));
    }
    agree_stats zs = {0};
    damage_all(c, zn, n, &zs);
    printf("blosc zstd with content checksums: %d damaged chunks, GPU fails %d (%d by the XXH64 alone)\n", zs.cases,
           zs.gpu_fail, n_xxh_catches);
    /* the last byte of a stream's checksum changed: everything decodes, only XXH64 disagrees (on both paths) */
    c[16 + 4 * 4 + 4 + (st[0].src_len - 1)] ^= 0x40;
    CHECK(host_blosc(c, zn, n, out) != 0);
    CHECK(gpu_model(c, zn, n, out) == GPU_FAIL && n_xxh_catches > 0);
    printf("blosc: %d damaged chunks in all; %d caught on the GPU by a zlib stream's Adler-32 alone; %d LZ4 match "
           "offsets 0 the GPU rejects and liblz4 decodes\n", all.cases + zs.cases, n_adler_catches, n_lz4_offset0);
    CHECK(zt_sampled() || n_adler_catches > 0); /* the damage issue 25 found decoding silently on the GPU */
    free(out);
    free(c);
    free(lit);
    free(src);
}

/* Each header field the host checks, one at a time: the planner rejects the chunk (it then decodes on the host,
 * which names the fault), and the host does reject it. */
static void test_blosc_header_fields(void) {
    const size_t n = 65536;
    uint8_t *src = make_data(n, 3), *c = malloc(n + 64), *d = malloc(n + 64), *out = malloc(n);
    const int cn = blosc_compress_ctx(5, 1, 4, n, src, c, n + 64, "lz4", 8192, 1);
    CHECK(cn > 16);
    zg_blosc_header h;
    CHECK_OK(zg_blosc_parse_header(c, (size_t)cn, n, &h));
    CHECK(host_blosc(c, (size_t)cn, n, out) == 0);
    struct {
        const char *what;
        size_t at;
        uint32_t value, width;
        size_t n_extra;
    } cases[] = {
        {"version 1", 0, 1, 1, 0},          {"version 3", 0, 3, 1, 0},
        {"compressor version 0", 1, 0, 1, 0}, {"compressor version 2", 1, 2, 1, 0},
        {"reserved flag 0x08", 2, 0x01 | 0x08 | ZG_BLOSC_LZ4 << 5, 1, 0},
        {"compressor code 5", 2, 0x01 | 5u << 5, 1, 0}, {"compressor code 7", 2, 0x01 | 7u << 5, 1, 0},
        {"typesize 0", 3, 0, 1, 0},         {"nbytes + 1", 4, (uint32_t)n + 1, 4, 0},
        {"nbytes over blosc's limit", 4, 0x7ffffff0u, 4, 0},
        {"blocksize 0", 8, 0, 4, 0},        {"blocksize nbytes + 1", 8, (uint32_t)n + 1, 4, 0},
        {"blocksize 2^31", 8, 0x80000000u, 4, 0},
        {"blocksize 1 (block starts past cbytes)", 8, 1, 4, 0},
        {"cbytes - 1", 12, (uint32_t)cn - 1, 4, 0}, {"cbytes + 1", 12, (uint32_t)cn + 1, 4, 0},
        {"a byte past cbytes", 12, (uint32_t)cn, 4, 1}, {"8 bytes past cbytes", 12, (uint32_t)cn, 4, 8},
        {"plain copy of a compressed chunk", 2, 0x02 | ZG_BLOSC_LZ4 << 5, 1, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        memcpy(d, c, (size_t)cn);
        memset(d + cn, 0, 8);
        for (uint32_t b = 0; b < cases[k].width; b++) d[cases[k].at + b] = (uint8_t)(cases[k].value >> (8 * b));
        const size_t dn = (size_t)cn + cases[k].n_extra;
        CHECK_MSG(zg_blosc_parse_header(d, dn, n, &h) == ZGPU_ERR_CORRUPT_DATA, "%s: the GPU planner takes it",
                  cases[k].what);
        CHECK_MSG(host_blosc(d, dn, n, out) != 0, "%s: the host decodes it", cases[k].what);
        CHECK_MSG(gpu_model(d, dn, n, out) == GPU_HOST, "%s", cases[k].what);
    }
    /* a plain copy (memcpyed) must be exactly nbytes + 16 bytes */
    const int mn = blosc_compress_ctx(0, 0, 4, 1024, src, c, n + 64, "lz4", 0, 1);
    CHECK(mn == 1024 + 16 && (c[2] & 0x02));
    CHECK_OK(zg_blosc_parse_header(c, (size_t)mn, 1024, &h));
    c[mn] = 0;
    put_le32(c + 12, (uint32_t)mn + 1);
    CHECK_STATUS(zg_blosc_parse_header(c, (size_t)mn + 1, 1024, &h), ZGPU_ERR_CORRUPT_DATA);
    CHECK(host_blosc(c, (size_t)mn + 1, 1024, out) != 0);
    /* a plain copy's compressor code and version are not read (as in c-blosc) */
    put_le32(c + 12, (uint32_t)mn);
    c[1] = 9;
    c[2] = 0x02 | 7u << 5;
    CHECK_OK(zg_blosc_parse_header(c, (size_t)mn, 1024, &h));
    CHECK(host_blosc(c, (size_t)mn, 1024, out) == 0 && memcmp(out, src, 1024) == 0);
    free(out);
    free(d);
    free(c);
    free(src);
}

/* The four-lane XXH64 of the GPU check kernel: against the one-pass reference (zstd_rules.h) and against libzstd's
 * content checksums. */
static void test_xxh64_lanes(void) {
    CHECK_EQ_U64(xxh64_lanes((const uint8_t *)"", 0), 0xEF46DB3751D8E999ull);
    uint8_t *p = make_data(70000, 9);
    const size_t lens[] = {1, 3, 4, 7, 8, 31, 32, 33, 63, 64, 65, 100, 255, 256, 1000, 4099, 65536, 70000};
    for (size_t k = 0; k < sizeof lens / sizeof *lens; k++)
        CHECK_MSG(xxh64_lanes(p, lens[k]) == zd_xxh64(p, lens[k]), "XXH64 of %zu bytes", lens[k]);
    ZSTD_CCtx *z = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1);
    uint8_t *f = malloc(ZSTD_compressBound(70000));
    for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
        const size_t fn = ZSTD_compress2(z, f, ZSTD_compressBound(70000), p, lens[k]);
        CHECK(!ZSTD_isError(fn) && fn > 4 && (f[4] & 0x04));
        CHECK_EQ_U64((uint32_t)xxh64_lanes(p, lens[k]), zg_le32(f + fn - 4));
    }
    free(f);
    ZSTD_freeCCtx(z);
    free(p);
}

/* zgpu's zstd planner sizes its descriptors by the frame's blocks: a frame of many empty blocks (3 stored bytes
 * each, valid to libzstd) must not make them many times the decoded size, so such a frame goes to the host
 * (UNSUPPORTED), while the structure check alone (nvCOMP's) still passes it. */
static void test_zstd_block_cap(void) {
    enum { EMPTY = 300, DATA = 100 };
    uint8_t f[6 + 3 * EMPTY + 3 + DATA], src[DATA], out[DATA];
    const uint8_t hdr[6] = {0x28, 0xb5, 0x2f, 0xfd, 0x20, DATA}; /* single segment, 1-byte content size */
    memcpy(f, hdr, 6);
    size_t pos = 6;
    for (int b = 0; b < EMPTY; b++) { /* raw blocks of 0 bytes */
        f[pos++] = 0, f[pos++] = 0, f[pos++] = 0;
    }
    const uint32_t bh = 1u | (uint32_t)DATA << 3; /* the last block: raw, DATA bytes */
    f[pos++] = (uint8_t)bh, f[pos++] = (uint8_t)(bh >> 8), f[pos++] = (uint8_t)(bh >> 16);
    for (int i = 0; i < DATA; i++) src[i] = (uint8_t)(i * 7);
    memcpy(f + pos, src, DATA);
    pos += DATA;
    CHECK(ZSTD_decompress(out, DATA, f, pos) == DATA && memcmp(out, src, DATA) == 0);
    CHECK_OK(zg_zstd_check(f, pos, DATA));
    zg_zd_plan pl;
    zg_zd_plan_init(&pl);
    CHECK_STATUS(zg_zd_plan_frame(&pl, f, pos, DATA, 0), ZGPU_ERR_UNSUPPORTED);
    CHECK(pl.n_blocks == 0 && pl.n_frames == 0); /* (rolled back) */
    /* 64 blocks are within the slack: planned */
    const size_t few = 6 + 3 * 60;
    memmove(f + few, f + 6 + 3 * EMPTY, 3 + DATA);
    CHECK_OK(zg_zd_plan_frame(&pl, f, few + 3 + DATA, DATA, 0));
    CHECK(pl.n_blocks == 61);
    zg_zd_plan_free(&pl);
}

int main(void) {
    zt_sample_init();
    blosc_init();
    test_shuffle_refs();
    test_roundtrips();
    test_corrupt_blosc();
    test_blosc_header_fields();
    test_xxh64_lanes();
    test_gpu_vs_host_damage();
    test_frames();
    test_lz4_decode_walk();
    test_checksum_combine();
    test_zstd_crafted();
    test_zstd_block_cap();
    test_zstd_valid_and_corrupt();
    test_deflate_crafted();
    test_deflate_valid_and_corrupt();
    test_random_inputs();
    blosc_destroy();
    zt_sample_report();
    TEST_MAIN_END();
}
