/* The GPU encoder's framing rules (src/gpuencode/encode_frames.h) on the CPU, no GPU needed: headers against the
 * bytes zlib and libdeflate write, frames built around raw streams compressed on the host and decoded by zlib,
 * libdeflate, LZ4 and zstd, the empty chunk's streams, the slot layout, the level mapping, and the checksum
 * kernel's arithmetic (segments, per-thread ranges and shifts, the fold) run here thread by thread against zlib's
 * crc32 and adler32. */
#include <libdeflate.h>
#include <lz4.h>
#include <zlib.h>
#include <zstd.h>

#include "gpuencode/encode_frames.h"
#include "test.h"

static uint32_t g_tab[8 * 256], g_pow[ZG_CRC_POW_N];

/* The checksum kernel's work for one chunk, done thread by thread as its blocks do (encode_kernels.cu). */
static uint32_t kernel_checksum(int kind, const uint8_t *p, uint64_t n) {
    const uint64_t ns = zg_ge_segments(n);
    uint32_t *seg = calloc(ns + 1, sizeof *seg);
    for (uint64_t s = 0; s < ns; s++) {
        const uint8_t *q = p + s * ZG_GE_SEG_BYTES;
        const uint32_t len = (uint32_t)(n - s * ZG_GE_SEG_BYTES < ZG_GE_SEG_BYTES ? n - s * ZG_GE_SEG_BYTES
                                                                                 : ZG_GE_SEG_BYTES);
        uint32_t x = 0, sa = 0, sb = 0;
        for (unsigned t = 0; t < ZG_GE_SEG_THREADS; t++) {
            if (kind == ZG_CHECK_CRC32) {
                x ^= zg_ge_crc_term(g_tab, g_pow, zg_ge_thread_shift(t, g_pow, ZG_CRC32_POLY), q, len, t);
            } else {
                uint32_t ta, tb;
                zg_ge_adler_terms(q, len, t, &ta, &tb);
                sa += ta, sb += tb;
            }
        }
        seg[s] = kind == ZG_CHECK_CRC32 ? zg_crc_finish(x, len, g_pow, ZG_CRC32_POLY) : zg_adler_finish(sa, sb, len);
    }
    const uint32_t v = zg_ge_fold(kind, seg, (uint32_t)ns, n, g_pow);
    free(seg);
    return v;
}

/* Test data: 0 random, 1 compressible text-like bytes, 2 uint16 ramps. */
static void fill(uint8_t *p, size_t n, int kind, uint32_t seed) {
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        if (kind == 0) p[i] = (uint8_t)(x >> 24);
        else if (kind == 1) p[i] = (uint8_t)("the quick brown fox "[(i / 3 + (x >> 30)) % 20]);
        else p[i] = (uint8_t)((i / 2 * 7 + seed) >> (i % 2 ? 8 : 0));
    }
}

static void test_checksums(void) {
    static const size_t sizes[] = {0, 1, 7, 8, 9, 255, 256, 257, 4095, 65535, 65536, 65537, 131072, 200003, 1 << 20};
    const size_t cap = (1 << 20) + 16;
    uint8_t *buf = malloc(cap);
    fill(buf, cap, 0, 7);
    size_t bad = 0, runs = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        for (size_t off = 0; off < 4; off++) { /* unaligned starts take the kernel's byte-by-byte head */
            const size_t n = sizes[k];
            const uint8_t *p = buf + off * 3;
            const uint32_t crc = (uint32_t)crc32(0, p, (uInt)n), ad = (uint32_t)adler32(1, p, (uInt)n);
            const uint32_t gc = kernel_checksum(ZG_CHECK_CRC32, p, n), ga = kernel_checksum(ZG_CHECK_ADLER32, p, n);
            if (gc != crc || ga != ad) {
                bad++;
                fprintf(stderr, "n=%zu off=%zu: crc %08x/%08x adler %08x/%08x\n", n, off, gc, crc, ga, ad);
            }
            runs++;
        }
    /* all 0xff: the Adler sums' largest values */
    memset(buf, 0xff, cap);
    for (size_t n = 65536 * 3 + 5; n <= 65536 * 3 + 5; n++) {
        CHECK_EQ_U64(kernel_checksum(ZG_CHECK_ADLER32, buf, n), adler32(1, buf, (uInt)n));
        CHECK_EQ_U64(kernel_checksum(ZG_CHECK_CRC32, buf + 1, n), crc32(0, buf + 1, (uInt)n));
    }
    printf("checksums: %zu sizes and offsets, %zu wrong\n", runs, bad);
    CHECK_EQ_U64(bad, 0);
    free(buf);
}

static void test_headers(void) {
    uint8_t in[1000], out[2000], h[16];
    fill(in, sizeof in, 1, 3);
    for (int level = -1; level <= 9; level++) {
        /* zlib: FLG as zlib's own compress2 writes it (and as libdeflate does) */
        uLongf zn = sizeof out;
        CHECK(compress2(out, &zn, in, sizeof in, level) == Z_OK);
        zg_ge_write_header(ZG_GE_ZLIB, level, sizeof in, h);
        CHECK_MSG(h[0] == out[0] && h[1] == out[1], "zlib level %d: %02x %02x, zlib wrote %02x %02x", level, h[0],
                  h[1], out[0], out[1]);
        CHECK((h[0] * 256 + h[1]) % 31 == 0);
        CHECK(h[1] == zg_ge_zlib_flg(level));
        if (level < 0) continue;
        struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
        /* libdeflate agrees but at level 7, where it writes FLEVEL 2 (zlib's default) and zlib 3 (numcodecs' Zlib
         * is zlib's) */
        size_t m = libdeflate_zlib_compress(c, in, sizeof in, out, sizeof out);
        CHECK(m > 2 && out[0] == h[0] && (level == 7 ? out[1] == zg_ge_zlib_flg(6) : out[1] == h[1]));
        /* gzip: every byte of libdeflate's header (zgpu's host gzip encoder) */
        m = libdeflate_gzip_compress(c, in, sizeof in, out, sizeof out);
        zg_ge_write_header(ZG_GE_GZIP, level, sizeof in, h);
        CHECK_MSG(m > 18 && memcmp(h, out, 10) == 0, "gzip level %d header differs from libdeflate's", level);
        libdeflate_free_compressor(c);
    }
    /* numcodecs' LZ4: the size, little-endian */
    zg_ge_write_header(ZG_GE_LZ4, 0, 0x01020304u, h);
    CHECK(h[0] == 4 && h[1] == 3 && h[2] == 2 && h[3] == 1);
    /* trailers */
    zg_ge_write_trailer(ZG_GE_GZIP, 0xa1b2c3d4u, 0x100000005ull, h);
    static const uint8_t gz_trl[8] = {0xd4, 0xc3, 0xb2, 0xa1, 5, 0, 0, 0}; /* ISIZE is the size mod 2^32 */
    CHECK(memcmp(h, gz_trl, 8) == 0);
    zg_ge_write_trailer(ZG_GE_ZLIB, 0xa1b2c3d4u, 5, h);
    CHECK(h[0] == 0xa1 && h[1] == 0xb2 && h[2] == 0xc3 && h[3] == 0xd4);
    CHECK(zg_ge_header_bytes(ZG_GE_ZSTD) == 0 && zg_ge_trailer_bytes(ZG_GE_ZSTD) == 0);
    CHECK(zg_ge_trailer_bytes(ZG_GE_LZ4) == 0);
}

static void test_layout_and_levels(void) {
    /* nvCOMP 6's Deflate compressor wants its output 8-byte aligned; LZ4 and zstd 1 */
    CHECK_EQ_U64(zg_ge_raw_offset(ZG_GE_GZIP, 8), 16);
    CHECK_EQ_U64(zg_ge_raw_offset(ZG_GE_ZLIB, 8), 8);
    CHECK_EQ_U64(zg_ge_raw_offset(ZG_GE_LZ4, 1), 4);
    CHECK_EQ_U64(zg_ge_raw_offset(ZG_GE_LZ4, 4), 4);
    CHECK_EQ_U64(zg_ge_raw_offset(ZG_GE_ZSTD, 4), 0);
    CHECK_EQ_U64(zg_ge_raw_offset(ZG_GE_GZIP, 1), 10);
    static const int alg[11] = {2, 0, 2, 2, 2, 2, 2, 2, 2, 5, 5}; /* levels -1..9 */
    for (int level = -1; level <= 9; level++) CHECK_EQ_U64(zg_ge_deflate_algorithm(level), alg[level + 1]);
}

/* Frames format f around `raw` (a raw stream of the n bytes at p) as the framing kernel does: header, stream,
 * trailer with the kernel's checksum. Returns the frame's length. */
static size_t frame(int f, int level, const uint8_t *p, size_t n, const uint8_t *raw, size_t raw_n, uint8_t *out) {
    const unsigned h = zg_ge_header_bytes(f);
    zg_ge_write_header(f, level, n, out);
    memcpy(out + h, raw, raw_n);
    const int kind = zg_ge_check_kind(f);
    zg_ge_write_trailer(f, kind ? kernel_checksum(kind, p, n) : 0, n, out + h + raw_n);
    return h + raw_n + zg_ge_trailer_bytes(f);
}

/* zlib's inflate over a whole gzip (window_bits 31) or zlib (15) stream: the bytes, all input used, trailer
 * checked by zlib. */
static int inflate_all(const uint8_t *in, size_t n, int window_bits, uint8_t *out, size_t cap, size_t *got) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, window_bits) != Z_OK) return 0;
    z.next_in = (Bytef *)in, z.avail_in = (uInt)n;
    z.next_out = out, z.avail_out = (uInt)cap;
    const int r = inflate(&z, Z_FINISH);
    *got = z.total_out;
    const int ok = r == Z_STREAM_END && z.avail_in == 0;
    inflateEnd(&z);
    return ok;
}

static void test_frames(void) {
    static const size_t sizes[] = {0, 1, 100, 4096, 65536, 100003, 1 << 20};
    const size_t cap = (1 << 20) + 64;
    uint8_t *in = malloc(cap), *raw = malloc(2 * cap + 1024), *fr = malloc(2 * cap + 1024), *back = malloc(cap + 16);
    struct libdeflate_decompressor *dd = libdeflate_alloc_decompressor();
    size_t frames = 0, bad = 0;
    for (int kind = 0; kind < 3; kind++)
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            const size_t n = sizes[k];
            fill(in, n, kind, (uint32_t)k);
            for (int level = 0; level <= 9; level += 3) {
                /* raw DEFLATE from the host, framed as gzip and as zlib */
                struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
                size_t rn = libdeflate_deflate_compress(c, n ? in : (const uint8_t *)"", n, raw, 2 * cap);
                libdeflate_free_compressor(c);
                for (int f = ZG_GE_GZIP; f <= ZG_GE_ZLIB; f++) {
                    const size_t m = frame(f, level, in, n, raw, rn, fr);
                    size_t got = 0, got2 = 0;
                    const int ok = inflate_all(fr, m, f == ZG_GE_GZIP ? 31 : 15, back, cap, &got) && got == n &&
                                   memcmp(back, in, n) == 0;
                    const enum libdeflate_result r =
                        f == ZG_GE_GZIP ? libdeflate_gzip_decompress(dd, fr, m, back, cap, &got2)
                                        : libdeflate_zlib_decompress(dd, fr, m, back, cap, &got2);
                    frames++;
                    if (!ok || r != LIBDEFLATE_SUCCESS || got2 != n) {
                        bad++;
                        fprintf(stderr, "%s n=%zu kind=%d level=%d: zlib %d, libdeflate %d\n",
                                f == ZG_GE_GZIP ? "gzip" : "zlib", n, kind, level, ok, (int)r);
                    }
                }
            }
            /* numcodecs' LZ4: a block from the host after the size */
            const int bn = LZ4_compress_default((const char *)in, (char *)raw, (int)n, LZ4_compressBound((int)n));
            const size_t m = frame(ZG_GE_LZ4, 0, in, n, raw, (size_t)bn, fr);
            const uint32_t size =
                (uint32_t)fr[0] | (uint32_t)fr[1] << 8 | (uint32_t)fr[2] << 16 | (uint32_t)fr[3] << 24;
            const int d = LZ4_decompress_safe((const char *)fr + 4, (char *)back, (int)(m - 4), (int)cap);
            frames++;
            if (size != n || d != (int)n || memcmp(back, in, n) != 0) bad++;
        }
    printf("frames around host-compressed streams: %zu, %zu wrong\n", frames, bad);
    CHECK_EQ_U64(bad, 0);

    /* the empty chunk's streams, framed */
    uint8_t e[ZG_GE_EMPTY_MAX + 16];
    size_t got;
    for (int f = ZG_GE_GZIP; f <= ZG_GE_ZLIB; f++) {
        const unsigned rn = zg_ge_write_empty_raw(f, raw);
        const size_t m = frame(f, 6, in, 0, raw, rn, e);
        CHECK(inflate_all(e, m, f == ZG_GE_GZIP ? 31 : 15, back, cap, &got) && got == 0);
        CHECK(m == (f == ZG_GE_GZIP ? 20u : 8u));
    }
    unsigned rn = zg_ge_write_empty_raw(ZG_GE_LZ4, raw);
    size_t m = frame(ZG_GE_LZ4, 0, in, 0, raw, rn, e);
    CHECK(m == 5 && e[0] == 0 && e[3] == 0 && LZ4_decompress_safe((const char *)e + 4, (char *)back, 1, 16) == 0);
    rn = zg_ge_write_empty_raw(ZG_GE_ZSTD, e);
    CHECK(rn <= ZG_GE_EMPTY_MAX);
    CHECK(ZSTD_getFrameContentSize(e, rn) == 0);
    CHECK(ZSTD_findFrameCompressedSize(e, rn) == rn);
    CHECK(ZSTD_decompress(back, 16, e, rn) == 0);
    const size_t zn = ZSTD_compress(raw, 64, "", 0, 3); /* what libzstd writes for no input */
    CHECK(zn == rn && memcmp(raw, e, rn) == 0);
    libdeflate_free_decompressor(dd);
    free(in), free(raw), free(fr), free(back);
}

int main(void) {
    zg_crc_tables8_init(g_tab, ZG_CRC32_POLY);
    zg_crc_pow_init(g_pow, ZG_CRC32_POLY);
    test_checksums();
    test_headers();
    test_layout_and_levels();
    test_frames();
    TEST_MAIN_END();
}
