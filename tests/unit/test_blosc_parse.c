/* Host-side parsing for the GPU decoder (CPU only, runs in CI): Blosc1 chunks made by c-blosc are parsed,
 * every listed stream is decoded with the reference libraries (lz4, zstd, zlib), unshuffled with the
 * reference filters and compared byte for byte with the original; corrupt headers are rejected. Also the
 * gzip/zlib/lz4/zstd frame checks of cuda/frames.h. */
#include <blosc.h>
#include <lz4.h>
#include <zlib.h>
#include <zstd.h>

#include "cuda/blosc_parse.h"
#include "cuda/frames.h"
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
            break;
        case ZG_BLOSC_ZSTD:
            if (ZSTD_decompress(d, st[i].dst_len, s, st[i].src_len) != st[i].dst_len) rc = -3;
            if (zg_zstd_check(s, st[i].src_len, st[i].dst_len) != ZGPU_OK) rc = -4;
            break;
        case ZG_BLOSC_ZLIB: {
            size_t off, len;
            if (zg_zlib_locate(s, st[i].src_len, &off, &len) != ZGPU_OK) { rc = -4; break; }
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
            break;
        }
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
    const char *comps[] = {"lz4", "lz4hc", "zstd", "zlib", "blosclz"};
    const size_t sizes[] = {0, 1, 100, 4096, 100000, 300001};
    const int typesizes[] = {1, 2, 4, 8, 3, 16, 32};
    const size_t blocksizes[] = {0, 1024, 6000};
    int n_checked = 0, n_blosclz_raw = 0;
    for (size_t ci = 0; ci < sizeof comps / sizeof *comps; ci++)
        for (int sh = 0; sh <= 2; sh++)
            for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
                for (size_t ti = 0; ti < sizeof typesizes / sizeof *typesizes; ti++)
                    for (size_t bi = 0; bi < sizeof blocksizes / sizeof *blocksizes; bi++) {
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
    CHECK(n_checked > 500);
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
    CHECK_OK(zg_zlib_locate(c, zn, &off, &len));
    CHECK(off == 2 && len == zn - 6);
    c[1] ^= 1;
    CHECK_STATUS(zg_zlib_locate(c, zn, &off, &len), ZGPU_ERR_CORRUPT_DATA);
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

int main(void) {
    blosc_init();
    test_shuffle_refs();
    test_roundtrips();
    test_corrupt_blosc();
    test_frames();
    blosc_destroy();
    TEST_MAIN_END();
}
