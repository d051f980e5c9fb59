/* Device reads (zgpu_array_read_device) of arrays written by zgpu itself, for many codec chains, compared
 * byte for byte with host reads (zgpu_array_read): whole arrays, random regions, strided outputs, missing
 * chunks, sharding, small memory budgets (many waves), gpu_decode = 0, async reads; corrupt chunks must give
 * ZGPU_ERR_CORRUPT_DATA naming the chunk. Without a GPU the arrays are still written and read on the host
 * (checking the test's own setup), then the test reports skipped (77). */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "zgpu.h"
#include "zgpu_experimental.h"

#ifdef ZGPU_HAVE_CUDA
#include <cuda_runtime.h>
#include "codec/codec.h"
#include "gpucodec/gpu_decoder.h"
#endif

static uint32_t rng = 777;
static uint32_t rnd(void) {
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

/* The main contexts force zgpu's DEFLATE decoder (tuning deflate_decoder = ZGPU); these differ from them: */
static zgpu_context *ctx_trust; /* gpu_trust_input = 1 and nvCOMP's DEFLATE decoder */
static zgpu_context *ctx_gds;   /* gds_mode = ZGPU_GDS_ON */
static zgpu_context *ctx_auto;  /* default tuning: the automatic decoder choice */
static zgpu_context *ctx_waves; /* tuning pipeline_waves = 4 (lifts the minimum wave size) */

#include "codec_cases.h"

static const uint64_t shape[3] = {40, 50, 60};

/* compressible contents: smooth ramps with a little noise, a hole of fill value (missing chunks) */
static void make_data(uint8_t *p, size_t isz) {
    size_t n = 40 * 50 * 60;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = (i / 60) * 3 + (i % 60) / 4 + (rnd() & 3);
        memcpy(p + i * isz, &v, isz); /* little-endian host: low bytes */
        if (isz == 4 && (i % 7) == 0) { float f = (float)v * 0.25f; memcpy(p + i * isz, &f, 4); }
    }
}

static char tmpdir[256];

static int gpu = 0;
static int quick_mode; /* ZGPU_TEST_QUICK: whole reads and the corruption cases only (for compute-sanitizer) */
#ifdef ZGPU_HAVE_CUDA
static int nvcomp_loaded = -1;

/* device read of a box -> host buffer */
static zgpu_status dev_read(zgpu_array *a, const uint64_t *st, const uint64_t *ct, uint8_t *host, const int64_t *strides,
                            size_t span, size_t offset) {
    void *d = NULL;
    if (cudaMalloc(&d, span) != cudaSuccess) return ZGPU_ERR_NO_MEMORY;
    cudaMemset(d, 0xcd, span);
    zgpu_status s = zgpu_array_read_device(a, st, ct, (uint8_t *)d + offset, strides, NULL);
    cudaMemcpy(host, d, span, cudaMemcpyDeviceToHost);
    cudaFree(d);
    return s;
}
#endif

#ifdef ZGPU_HAVE_CUDA
/* A tall array of short rows (uint16, 2048 x 160 x 12, chunks 512 x 80 x 12: 327,680 rows of 24 bytes), so that
 * the scatter gives a warp many rows (zg_k_scatter_launch: up to 16 while the grid still fills the GPU twice):
 * whole read, a box cutting every chunk, and the box with its last axis reversed, against host reads. */
static void scatter_many_rows(zgpu_context *ctx) {
    static const char meta[] =
        "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [2048, 160, 12], \"data_type\": \"uint16\", "
        "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [512, 80, 12]}}, "
        "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, "
        "\"fill_value\": 0, \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
        "{\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": false}}]}";
    char path[512];
    snprintf(path, sizeof path, "%s/scatter_many_rows", tmpdir);
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_create(ctx, path, meta, 1, &a));
    if (!a) return;
    const uint64_t full[3] = {2048, 160, 12}, z[3] = {0, 0, 0};
    const size_t n = 2048 * 160 * 12;
    uint16_t *data = malloc(n * 2), *ref = malloc(n * 2), *got = malloc(n * 2);
    for (size_t i = 0; i < n; i++) data[i] = (uint16_t)(i / 12 * 7 + (i % 12) * 3 + (rnd() & 7));
    CHECK_OK(zgpu_array_write(a, z, full, data, NULL));
    zgpu_status s = dev_read(a, z, full, (uint8_t *)got, NULL, n * 2, 0);
    CHECK_MSG(s == ZGPU_OK && memcmp(got, data, n * 2) == 0, "scatter_many_rows: whole read: %s",
              s == ZGPU_OK ? "data differs" : zgpu_last_error());
    const uint64_t st[3] = {1, 3, 1}, ct[3] = {2046, 155, 10};
    const size_t cnt = 2046 * 155 * 10;
    int64_t strides[3] = {155 * 10 * 2, 10 * 2, 2};
    for (int rev = 0; rev < 2; rev++) {
        size_t offset = 0;
        if (rev) { /* last axis reversed: element k of a row at (9 - k) */
            strides[2] = -2;
            offset = 9 * 2;
        }
        CHECK_OK(zgpu_array_read(a, st, ct, (uint8_t *)ref + offset, strides));
        s = dev_read(a, st, ct, (uint8_t *)got, strides, cnt * 2, offset);
        CHECK_MSG(s == ZGPU_OK && memcmp(got, ref, cnt * 2) == 0, "scatter_many_rows: box%s: %s",
                  rev ? " (last axis reversed)" : "", s == ZGPU_OK ? "data differs" : zgpu_last_error());
    }
    free(data);
    free(ref);
    free(got);
    zgpu_array_close(a);
}
#endif

#ifdef ZGPU_HAVE_CUDA
/* zstd chunks that zgpu's decoder places in their rows of the output (zg_zd_rows; device_read.c zstd_rows and
 * zstd_place): rows of a power of two of at least 16 bytes, contiguous in the output and on 16 bytes; chunks
 * compressed less than 8:1 without a checksum straight into their rows, others decoded flat and copied there
 * block by block. Three arrays: uint16 9 x 150 x 1100, chunks 4 x 64 x 512 (rows of 1 KiB, 256 KiB chunks of two
 * zstd blocks), whose chunks are random (raw blocks, straight), constant (RLE), periodic with a period of 37
 * bytes (these two compress too well: copied), or a noisy ramp (straight); uint8 20 x 40 x 50 with chunks
 * 1 x 16 x 16 (rows of 16 bytes, one dimension above them); and float32 6 x 40 x 130, chunks 2 x 16 x 32, with
 * content checksums (copied). Each read against the host read of the same box: the whole array
 * (interior chunks mapped, edge chunks scattered), the first axis reversed (negative strides), an output 16 bytes
 * into its buffer (mapped) and 8 bytes in (rows off 16 bytes: scattered), and a box cutting chunks. */
static void zstd_rows_in_place(zgpu_context *ctx) {
    static const struct {
        const char *name, *dtype;
        uint64_t shape[3], chunk[3];
        size_t isz;
        const char *checksum;
    } arrays[] = {{"zrows_u16", "uint16", {9, 150, 1100}, {4, 64, 512}, 2, "false"},
                  {"zrows_u8", "uint8", {20, 40, 50}, {1, 16, 16}, 1, "false"},
                  {"zrows_ck_f32", "float32", {6, 40, 130}, {2, 16, 32}, 4, "true"}};
    for (size_t ai = 0; ai < sizeof arrays / sizeof *arrays; ai++) {
        const uint64_t *shp = arrays[ai].shape, *ch = arrays[ai].chunk;
        const size_t isz = arrays[ai].isz, n = shp[0] * shp[1] * shp[2];
        char meta[1024], path[512];
        snprintf(meta, sizeof meta,
                 "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [%llu, %llu, %llu], \"data_type\": \"%s\", "
                 "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [%llu, %llu, %llu]}}, "
                 "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, "
                 "\"fill_value\": 0, \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
                 "{\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": %s}}]}",
                 (unsigned long long)shp[0], (unsigned long long)shp[1], (unsigned long long)shp[2], arrays[ai].dtype,
                 (unsigned long long)ch[0], (unsigned long long)ch[1], (unsigned long long)ch[2], arrays[ai].checksum);
        snprintf(path, sizeof path, "%s/%s", tmpdir, arrays[ai].name);
        zgpu_array *a = NULL;
        CHECK_OK(zgpu_array_create(ctx, path, meta, 1, &a));
        if (!a) continue;
        uint8_t *data = malloc(n * isz), *ref = malloc(n * isz + 64), *got = malloc(n * isz + 64);
        for (size_t i = 0; i < n * isz; i++) {
            const size_t e = i / isz, x = e % shp[2], y = e / shp[2] % shp[1], z = e / shp[2] / shp[1];
            switch ((z / ch[0] + y / ch[1] + x / ch[2]) % 4) { /* by chunk */
            case 0: data[i] = (uint8_t)rnd(); break;
            case 1: data[i] = 0x3c; break;
            case 2: data[i] = (uint8_t)(i % 37 * 7); break;
            default: data[i] = (uint8_t)(e / 5 + (rnd() & 1)); break;
            }
        }
        const uint64_t z0[3] = {0, 0, 0};
        CHECK_OK(zgpu_array_write(a, z0, shp, data, NULL));
        zgpu_status s = dev_read(a, z0, shp, got, NULL, n * isz, 0);
        CHECK_MSG(s == ZGPU_OK && memcmp(got, data, n * isz) == 0, "%s: whole read: %s", arrays[ai].name,
                  s == ZGPU_OK ? "data differs" : zgpu_last_error());
        const int64_t plane = (int64_t)(shp[1] * shp[2] * isz);
        int64_t rev[3] = {-plane, (int64_t)(shp[2] * isz), (int64_t)isz};
        const size_t rev_off = (shp[0] - 1) * (size_t)plane;
        CHECK_OK(zgpu_array_read(a, z0, shp, ref + rev_off, rev));
        s = dev_read(a, z0, shp, got, rev, n * isz, rev_off);
        CHECK_MSG(s == ZGPU_OK && memcmp(got, ref, n * isz) == 0, "%s: first axis reversed: %s", arrays[ai].name,
                  s == ZGPU_OK ? "data differs" : zgpu_last_error());
        for (size_t off = 8; off <= 16; off += 8) {
            s = dev_read(a, z0, shp, got, NULL, n * isz + off, off);
            CHECK_MSG(s == ZGPU_OK && memcmp(got + off, data, n * isz) == 0, "%s: output %zu bytes in: %s",
                      arrays[ai].name, off, s == ZGPU_OK ? "data differs" : zgpu_last_error());
        }
        const uint64_t bst[3] = {1, 3, 5}, bct[3] = {shp[0] - 2, shp[1] - 9, shp[2] - 17};
        const size_t bn = bct[0] * bct[1] * bct[2] * isz;
        CHECK_OK(zgpu_array_read(a, bst, bct, ref, NULL));
        s = dev_read(a, bst, bct, got, NULL, bn, 0);
        CHECK_MSG(s == ZGPU_OK && memcmp(got, ref, bn) == 0, "%s: box: %s", arrays[ai].name,
                  s == ZGPU_OK ? "data differs" : zgpu_last_error());
        free(data);
        free(ref);
        free(got);
        zgpu_array_close(a);
    }
}

/* Chunks stored in more than one of phase A's read pieces (READ_PIECE, 2 MiB in device_read.c): uint16
 * 96 x 256 x 256, chunks 40 x 256 x 256 (5 MiB: two whole pieces and a part; the edge chunk 16 planes, exactly
 * one piece), of noisy data that stays large stored. Each layout: the whole array and a box against the data
 * written, with the default context and with GDS (where cuFile takes the files); then bytes damaged in a middle piece of a checksummed zstd
 * chunk, and the chunk cut short in its second piece: errors naming that chunk. */
static void large_chunks(zgpu_context *ctx) {
#define LC_META(codecs)                                                                                          \
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [96, 256, 256], \"data_type\": \"uint16\", "    \
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [40, 256, 256]}}, "         \
    "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, "              \
    "\"fill_value\": 0, \"codecs\": " codecs "}"
#define LC_BYTES "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"
    static const char *const metas[][2] = {
        {"lc_raw", LC_META("[" LC_BYTES "]")},
        {"lc_zstd", LC_META("[" LC_BYTES ", {\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": true}}]")},
        {"lc_blosc_lz4", LC_META("[" LC_BYTES ", {\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": 5, "
                                 "\"shuffle\": \"shuffle\", \"typesize\": 2, \"blocksize\": 0}}]")},
        {"lc_gzip", LC_META("[" LC_BYTES ", {\"name\": \"gzip\", \"configuration\": {\"level\": 1}}]")},
        {"lc_sharded_raw", LC_META("[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [20, 256, 256], "
                                   "\"codecs\": [" LC_BYTES "], \"index_codecs\": [" LC_BYTES ", {\"name\": \"crc32c\"}], "
                                   "\"index_location\": \"end\"}}]")},
    };
    const uint64_t full[3] = {96, 256, 256}, z[3] = {0, 0, 0}, bst[3] = {5, 17, 3}, bct[3] = {80, 200, 250};
    const size_t n = 96 * 256 * 256, bn = 80 * 200 * 250;
    uint16_t *data = malloc(n * 2), *got = malloc(n * 2), *want = malloc(bn * 2);
    for (size_t i = 0; i < n; i++) data[i] = (uint16_t)((i % 256) * 9 + (rnd() & 0x3fff));
    for (size_t p = 0; p < bn; p++) {
        const size_t x = p % 250, y = p / 250 % 200, zz = p / 250 / 200;
        want[p] = data[((zz + 5) * 256 + y + 17) * 256 + x + 3];
    }
    for (size_t m = 0; m < sizeof metas / sizeof metas[0]; m++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", tmpdir, metas[m][0]);
        zgpu_array *a = NULL;
        CHECK_OK(zgpu_array_create(ctx, path, metas[m][1], 1, &a));
        if (!a) continue;
        CHECK_OK(zgpu_array_write(a, z, full, data, NULL));
        zgpu_array_close(a);
        zgpu_context *const ctxs[2] = {ctx, ctx_gds};
        for (int c = 0; c < 2; c++) {
            a = NULL;
            CHECK_OK(zgpu_array_open(ctxs[c], path, &a));
            if (!a) continue;
            for (int box = 0; box < 2; box++) {
                zgpu_status s = box ? dev_read(a, bst, bct, (uint8_t *)got, NULL, bn * 2, 0)
                                    : dev_read(a, z, full, (uint8_t *)got, NULL, n * 2, 0);
                /* GDS where cuFile refuses the files: the read fails saying so (as in run_case) */
                if (c == 1 && s == ZGPU_ERR_CUDA && strstr(zgpu_last_error(), "GPUDirect Storage required")) continue;
                CHECK_MSG(s == ZGPU_OK && memcmp(got, box ? want : data, (box ? bn : n) * 2) == 0,
                          "large_chunks %s%s: %s: %s", metas[m][0], c ? " (GDS)" : "", box ? "box" : "whole read",
                          s == ZGPU_OK ? "data differs" : zgpu_last_error());
            }
            zgpu_array_close(a);
        }
    }
    /* damage: c/1/0/0 of lc_zstd (5 MB stored, ends in a content checksum) */
    char file[700];
    snprintf(file, sizeof file, "%s/lc_zstd/c/1/0/0", tmpdir);
    FILE *f = fopen(file, "rb");
    CHECK_MSG(f != NULL, "large_chunks: no chunk file %s", file);
    long size = 0;
    uint8_t *orig = NULL;
    if (f) {
        fseek(f, 0, SEEK_END);
        size = ftell(f);
        fseek(f, 0, SEEK_SET);
        orig = malloc((size_t)size);
        CHECK(fread(orig, 1, (size_t)size, f) == (size_t)size);
        fclose(f);
    }
    CHECK_MSG(size > (4l << 20), "large_chunks: lc_zstd's chunk is %ld bytes stored, meant to span 3 pieces", size);
    for (int mode = 0; orig && size > (4l << 20) && mode < 2; mode++) {
        f = fopen(file, "wb");
        if (mode == 0) { /* bytes flipped at 3 MiB + 5: the second piece */
            uint8_t *bad = malloc((size_t)size);
            memcpy(bad, orig, (size_t)size);
            for (long i = (3l << 20) + 5; i < (3l << 20) + 13; i++) bad[i] ^= 0x5a;
            fwrite(bad, 1, (size_t)size, f);
            free(bad);
        } else { /* cut in its second piece */
            fwrite(orig, 1, (size_t)(3l << 20), f);
        }
        fclose(f);
        char path[512];
        snprintf(path, sizeof path, "%s/lc_zstd", tmpdir);
        zgpu_array *a = NULL;
        CHECK_OK(zgpu_array_open(ctx, path, &a));
        if (!a) continue;
        zgpu_status s = dev_read(a, z, full, (uint8_t *)got, NULL, n * 2, 0);
        CHECK_MSG(s == ZGPU_ERR_CORRUPT_DATA && strstr(zgpu_last_error(), "c/1/0/0") != NULL,
                  "large_chunks: lc_zstd %s: %s: %s", mode ? "cut short" : "damaged", zgpu_status_name(s),
                  s == ZGPU_OK ? "read succeeded" : zgpu_last_error());
        if (s != ZGPU_OK) printf("  large_chunks lc_zstd %s -> %s\n", mode ? "cut short" : "damaged", zgpu_last_error());
        zgpu_array_close(a);
    }
    if (orig) {
        f = fopen(file, "wb");
        fwrite(orig, 1, (size_t)size, f);
        fclose(f);
    }
    free(orig);
    free(data);
    free(got);
    free(want);
#undef LC_META
#undef LC_BYTES
}
#endif

static void run_case(zgpu_context *ctx, zgpu_context *ctx_cpu, zgpu_context *ctx_small, const tcase *c) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, c->name);
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_create(ctx, path, c->meta, 1, &a));
    if (!a) return;
    size_t isz = zgpu_array_itemsize(a), n = 40 * 50 * 60, nb = n * isz;
    uint8_t *data = malloc(nb), *ref = malloc(nb), *got = malloc(nb);
    make_data(data, isz);
    /* write all but a region so that some chunks stay missing (fill value) */
    const uint64_t z[3] = {0, 0, 0};
    CHECK_OK(zgpu_array_write(a, z, shape, data, NULL));
    const uint64_t hs[3] = {16, 20, 24}, hc[3] = {16, 20, 24};
    uint8_t *fillbuf = malloc(16 * 20 * 24 * isz);
    for (size_t i = 0; i < 16 * 20 * 24; i++) memcpy(fillbuf + i * isz, zgpu_array_fill_value(a), isz);
    CHECK_OK(zgpu_array_write(a, hs, hc, fillbuf, NULL)); /* equal to fill: the chunk is deleted */
    free(fillbuf);
    CHECK_OK(zgpu_array_read(a, z, shape, ref, NULL));
#ifdef ZGPU_HAVE_CUDA
    if (gpu) {
        /* whole array */
        zgpu_status s = dev_read(a, z, shape, got, NULL, nb, 0);
        CHECK_MSG(s == ZGPU_OK, "%s: whole read -> %s: %s", c->name, zgpu_status_name(s), zgpu_last_error());
        CHECK_MSG(memcmp(got, ref, nb) == 0, "%s: whole device read differs from host read", c->name);
        zgpu_read_stats stt;
        memset(&stt, 0, sizeof stt);
        stt.struct_size = sizeof stt;
        zgpu_array_last_read_stats(a, &stt);
        /* DEFLATE chains (gzip, zlib, blosc's zlib) decode on the GPU by zgpu's own decoder, no nvCOMP needed */
        const int deflate = (strstr(c->name, "gzip") || strstr(c->name, "zlib")) && !strstr(c->name, "blosc");
        int want_gpu = c->gpu_expected == 1 && (!c->needs_nvcomp || nvcomp_loaded);
        CHECK_MSG(!want_gpu || (stt.gpu_decoded > 0 && stt.cpu_decoded == 0), "%s: %d chunks on GPU, %d on CPU",
                  c->name, stt.gpu_decoded, stt.cpu_decoded);
        CHECK_MSG(c->gpu_expected != 0 || (stt.cpu_decoded > 0 && stt.gpu_decoded == 0),
                  "%s: expected the CPU fallback", c->name);
        if (deflate) { /* the default decodes on the GPU too, whatever the ratio (serial mode above 8:1) */
            zgpu_array *b = NULL;
            CHECK_OK(zgpu_array_open(ctx_auto, path, &b));
            zgpu_read_stats sa;
            memset(&sa, 0, sizeof sa);
            sa.struct_size = sizeof sa;
            s = b ? dev_read(b, z, shape, got, NULL, nb, 0) : ZGPU_ERR_INTERNAL;
            if (b) zgpu_array_last_read_stats(b, &sa);
            CHECK_MSG(s == ZGPU_OK && memcmp(got, ref, nb) == 0, "%s: auto read: %s", c->name, zgpu_last_error());
            CHECK_MSG(sa.gpu_decoded > 0 && sa.cpu_decoded == 0, "%s: auto (stored %llu): %d chunks on GPU, %d on CPU",
                      c->name, (unsigned long long)sa.stored_bytes, sa.gpu_decoded, sa.cpu_decoded);
            zgpu_array_close(b);
        }
        printf("%-34s chunks %3d gpu %3d cpu %3d waves %d stored %8llu  plan %.2f io %.2f h2d %.2f dec %.2f sc %.2f ms\n",
               c->name, stt.chunks, stt.gpu_decoded, stt.cpu_decoded, stt.waves, (unsigned long long)stt.stored_bytes,
               stt.plan_s * 1e3, stt.io_s * 1e3, stt.h2d_s * 1e3, stt.decode_s * 1e3, stt.scatter_s * 1e3);
        if (quick_mode) goto done_gpu;
        /* random regions, C-contiguous and F-ordered / reversed outputs */
        for (int r = 0; r < 6; r++) {
            uint64_t st[3], ct[3];
            for (int d = 0; d < 3; d++) {
                st[d] = rnd() % shape[d];
                ct[d] = 1 + rnd() % (shape[d] - st[d]);
            }
            size_t cnt = ct[0] * ct[1] * ct[2];
            uint8_t *h_ref = malloc(cnt * isz), *h_got = malloc(cnt * isz);
            int64_t strides[3];
            size_t offset = 0;
            if (r % 3 == 0) { strides[2] = (int64_t)isz; strides[1] = strides[2] * (int64_t)ct[2]; strides[0] = strides[1] * (int64_t)ct[1]; }
            else if (r % 3 == 1) { strides[0] = (int64_t)isz; strides[1] = strides[0] * (int64_t)ct[0]; strides[2] = strides[1] * (int64_t)ct[1]; }
            else { strides[2] = -(int64_t)isz; strides[1] = (int64_t)(isz * ct[2]); strides[0] = strides[1] * (int64_t)ct[1]; offset = (ct[2] - 1) * isz; }
            CHECK_OK(zgpu_array_read(a, st, ct, h_ref + offset, strides));
            s = dev_read(a, st, ct, h_got, strides, cnt * isz, offset);
            CHECK_MSG(s == ZGPU_OK && memcmp(h_got, h_ref, cnt * isz) == 0, "%s: region %d [%llu+%llu, %llu+%llu, %llu+%llu] layout %d: %s",
                      c->name, r, (unsigned long long)st[0], (unsigned long long)ct[0], (unsigned long long)st[1],
                      (unsigned long long)ct[1], (unsigned long long)st[2], (unsigned long long)ct[2], r % 3,
                      s == ZGPU_OK ? "data differs" : zgpu_last_error());
            free(h_ref);
            free(h_got);
        }
        /* chunk-aligned boxes: one whole interior chunk, and two chunks stacked on axis 0; each chunk is
         * contiguous in the output, so GPU-decoded chunks land there without a scatter */
        {
            const uint64_t boxes[2][2][3] = {{{16, 20, 24}, {16, 20, 24}}, {{0, 20, 24}, {32, 20, 24}}};
            for (int b = 0; b < 2; b++) {
                size_t cnt = boxes[b][1][0] * boxes[b][1][1] * boxes[b][1][2];
                uint8_t *h_ref = malloc(cnt * isz), *h_got = malloc(cnt * isz);
                CHECK_OK(zgpu_array_read(a, boxes[b][0], boxes[b][1], h_ref, NULL));
                s = dev_read(a, boxes[b][0], boxes[b][1], h_got, NULL, cnt * isz, 0);
                CHECK_MSG(s == ZGPU_OK && memcmp(h_got, h_ref, cnt * isz) == 0, "%s: chunk-aligned box %d: %s", c->name, b,
                          s == ZGPU_OK ? "data differs" : zgpu_last_error());
                free(h_ref);
                free(h_got);
            }
        }
        /* the same array through a CPU-decode context, a tiny budget (many waves) and a context that trusts
         * its input (DEFLATE by nvCOMP: tuning deflate_decoder = NVCOMP) */
        zgpu_context *others[3] = {ctx_cpu, ctx_small, ctx_trust};
        for (int o = 0; o < 3; o++) {
            zgpu_array *b = NULL;
            CHECK_OK(zgpu_array_open(others[o], path, &b));
            if (!b) continue;
            s = dev_read(b, z, shape, got, NULL, nb, 0);
            CHECK_MSG(s == ZGPU_OK && memcmp(got, ref, nb) == 0, "%s: %s read: %s", c->name, o ? "small-budget" : "gpu_decode=0",
                      s == ZGPU_OK ? "data differs" : zgpu_last_error());
            zgpu_array_last_read_stats(b, &stt);
            if (o == 0) CHECK(stt.gpu_decoded == 0);
            if (o == 1) CHECK_MSG(stt.waves > 1, "%s: %d waves", c->name, stt.waves);
            if (o == 2 && deflate && nvcomp_loaded)
                CHECK_MSG(stt.gpu_decoded > 0 && stt.cpu_decoded == 0, "%s: trusted: %d chunks on GPU, %d on CPU", c->name,
                          stt.gpu_decoded, stt.cpu_decoded);
            zgpu_array_close(b);
        }
        /* GPUDirect Storage required: where cuFile loads (compatibility mode included) the read must take it and
         * equal the host read; elsewhere it must fail saying why, never fall back silently */
        {
            zgpu_array *b = NULL;
            CHECK_OK(zgpu_array_open(ctx_gds, path, &b));
            if (b) {
                memset(got, 0, nb);
                s = dev_read(b, z, shape, got, NULL, nb, 0);
                zgpu_array_last_read_stats(b, &stt);
                if (s == ZGPU_OK) {
                    CHECK_MSG(memcmp(got, ref, nb) == 0 && stt.gds_used == 1, "%s: GDS read: %s, gds_used %d", c->name,
                              memcmp(got, ref, nb) ? "data differs" : "same data", stt.gds_used);
                    if (c == &cases[0]) printf("GDS (cuFile) read: used, equal to the host read\n");
                } else {
                    CHECK_MSG(s == ZGPU_ERR_CUDA && strstr(zgpu_last_error(), "GPUDirect Storage required"),
                              "%s: GDS read: %s: %s", c->name, zgpu_status_name(s), zgpu_last_error());
                    if (c == &cases[0]) printf("GDS (cuFile) not usable here: %s\n", zgpu_last_error());
                }
                zgpu_array_close(b);
            }
        }
        /* pipelined: the whole array in 4 waves (tuning pipeline_waves lifts the minimum wave size), of which
         * the default budget keeps all in flight on 4 buffer sets */
        {
            zgpu_array *b = NULL;
            CHECK_OK(zgpu_array_open(ctx_waves, path, &b));
            memset(got, 0, nb);
            s = b ? dev_read(b, z, shape, got, NULL, nb, 0) : ZGPU_ERR_INTERNAL;
            if (b) zgpu_array_last_read_stats(b, &stt);
            zgpu_array_close(b);
        }
        CHECK_MSG(s == ZGPU_OK && memcmp(got, ref, nb) == 0, "%s: 4-wave read: %s", c->name,
                  s == ZGPU_OK ? "data differs" : zgpu_last_error());
        CHECK_MSG(stt.waves >= 3, "%s: 4-wave read in %d waves", c->name, stt.waves);
        /* async read on a stream */
        void *d = NULL;
        cudaStream_t stream;
        cudaStreamCreate(&stream);
        cudaMalloc(&d, nb);
        zgpu_event *ev = NULL;
        CHECK_OK(zgpu_array_read_device_async(a, z, shape, d, NULL, stream, &ev));
        CHECK_OK(zgpu_event_wait(ev));
        CHECK(zgpu_event_query(ev) == 1);
        zgpu_event_free(ev);
        memset(got, 0, nb);
        cudaMemcpyAsync(got, d, nb, cudaMemcpyDeviceToHost, stream);
        cudaStreamSynchronize(stream);
        CHECK_MSG(memcmp(got, ref, nb) == 0, "%s: async read differs", c->name);
        cudaFree(d);
        cudaStreamDestroy(stream);
    done_gpu:;
    }
#else
    (void)ctx_cpu, (void)ctx_small, (void)got;
#endif
    free(data);
    free(ref);
    free(got);
    zgpu_array_close(a);
}

#ifdef ZGPU_HAVE_CUDA
/* Corrupts one stored chunk file in a few ways. Truncation, a damaged header and a garbage body must make the
 * device read fail with CORRUPT_DATA naming the chunk: the host checks (gpucodec's deflate_check.h, lz4_check.h,
 * zstd_check.h) reject such streams before any GPU decoder sees them, because nvCOMP's zstd and deflate decoders
 * only take valid input (nvCOMP "Known issues"; garbage once made one fault and poison the CUDA context), and
 * the CPU decoder then reports
 * the error. A few flipped bytes inside a zstd/deflate compressed block can leave a stream whose headers,
 * tables and block structure are all valid: that is beyond what can be checked without decoding, so for that
 * mode the read may fail (CORRUPT_DATA from a decoder status or checksum) or succeed with exactly the data
 * the host decoder makes of the same bytes (e.g. a flip inside stored literals). */
static void corrupt_case(zgpu_context *ctx, const char *name, const char *key) {
    char path[512], file[700];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    snprintf(file, sizeof file, "%s/%s", path, key);
    FILE *f = fopen(file, "rb");
    CHECK_MSG(f != NULL, "%s: no chunk file %s", name, file);
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *orig = malloc((size_t)n), *bad = malloc((size_t)n);
    CHECK(fread(orig, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    for (int mode = 0; mode < 4; mode++) {
        memcpy(bad, orig, (size_t)n);
        long m = n;
        if (mode == 0) m = n / 2;                                   /* truncated */
        else if (mode == 1) for (long i = n / 3; i < n / 3 + 8 && i < n; i++) bad[i] ^= 0x5a; /* flipped bytes */
        else if (mode == 2) bad[0] ^= 0xff;                         /* header */
        else for (long i = 16; i < n; i++) bad[i] = (uint8_t)rnd(); /* garbage body */
        f = fopen(file, "wb");
        fwrite(bad, 1, (size_t)m, f);
        fclose(f);
        zgpu_array *a = NULL;
        CHECK_OK(zgpu_array_open(ctx, path, &a));
        size_t nb = 40 * 50 * 60 * zgpu_array_itemsize(a);
        uint8_t *got = malloc(nb);
        const uint64_t z[3] = {0, 0, 0};
        zgpu_status s = dev_read(a, z, shape, got, NULL, nb, 0);
        /* only flips (mode 1) can leave a stream that passes every check without decoding (see above): then
         * the data must equal what the host decoder makes of the same bytes */
        CHECK_MSG(mode == 1 || s != ZGPU_OK, "%s corrupt mode %d: the device read succeeded", name, mode);
        if (s == ZGPU_OK) {
            uint8_t *ref = malloc(nb);
            zgpu_status hs = zgpu_array_read(a, z, shape, ref, NULL);
            CHECK_MSG(hs == ZGPU_OK && memcmp(ref, got, nb) == 0, "%s corrupt mode %d: device read succeeded, host %s",
                      name, mode, zgpu_status_name(hs));
            free(ref);
        } else {
            CHECK_MSG(s == ZGPU_ERR_CORRUPT_DATA && strstr(zgpu_last_error(), key) != NULL,
                      "%s corrupt mode %d: %s: %s", name, mode, zgpu_status_name(s), zgpu_last_error());
            printf("  corrupt %s mode %d -> %s\n", name, mode, zgpu_last_error());
        }
        free(got);
        zgpu_array_close(a);
    }
    f = fopen(file, "wb");
    fwrite(orig, 1, (size_t)n, f);
    fclose(f);
    free(orig);
    free(bad);
}
#endif

#ifdef ZGPU_HAVE_CUDA
/* The GPU decoder registry (gpucodec/gpu_decoder.h), no GPU needed: every entry complete, and the decoder each
 * tuning choice picks for each stream kind and stored format (what device/route.c sends streams to). */
static const char *picked(zgpu_decoder_choice zstd, zgpu_decoder_choice deflate, zgpu_decoder_choice lz4, int container,
                          zg_gpu_stream kind, int nvc_ok) {
    zgpu_tuning t;
    zgpu_tuning_init(&t);
    t.zstd_decoder = zstd;
    t.deflate_decoder = deflate;
    t.lz4_decoder = lz4;
    const zg_gpu_decoder *d = zg_gpu_pick(&t, container, kind, nvc_ok);
    return !d ? "host" : d->needs_nvcomp ? (kind == ZG_GPU_STREAM_LZ4 ? "nvCOMP LZ4" : d->name) : d->name;
}

static void test_decoder_registry(void) {
    size_t n = 0;
    const zg_gpu_decoder *const *decs = zg_gpu_decoders(&n);
    CHECK(n > 0 && n <= ZG_GPU_MAX_DECODERS);
    int seen_nvcomp = 0;
    for (size_t i = 0; i < n; i++) {
        const zg_gpu_decoder *d = decs[i];
        CHECK(d->name && d->launch && d->error_text && d->containers);
        CHECK(d->stream >= 0 && d->stream < ZG_GPU_STREAM_N);
        CHECK(d->choice == (d->needs_nvcomp ? ZGPU_DECODER_NVCOMP : ZGPU_DECODER_ZGPU));
        CHECK(!d->plans || d->check); /* a planning decoder plans in its check */
        CHECK(!seen_nvcomp || d->needs_nvcomp); /* zgpu's decoders first: their slots and launches come first */
        seen_nvcomp |= d->needs_nvcomp;
        CHECK_EQ_U64(zg_gpu_decoder_index(d), i);
    }
    const zgpu_decoder_choice A = ZGPU_DECODER_AUTO, Z = ZGPU_DECODER_ZGPU, N = ZGPU_DECODER_NVCOMP, H = ZGPU_DECODER_HOST;
    const int BL = ZG_GPU_FORMAT_BLOSC;
    /* defaults: zgpu's decoders, nvCOMP's for numcodecs' LZ4 and Snappy */
    CHECK_STR(picked(A, A, A, ZG_GPU_FORMAT_ZSTD, ZG_GPU_STREAM_ZSTD, 1), "zstd");
    CHECK_STR(picked(A, A, A, ZG_GPU_FORMAT_GZIP, ZG_GPU_STREAM_DEFLATE, 1), "DEFLATE");
    CHECK_STR(picked(A, A, A, ZG_GPU_FORMAT_ZLIB, ZG_GPU_STREAM_DEFLATE, 0), "DEFLATE");
    CHECK_STR(picked(A, A, A, ZG_GPU_FORMAT_LZ4_NUMCODECS, ZG_GPU_STREAM_LZ4, 1), "nvCOMP LZ4");
    CHECK_STR(picked(A, A, A, BL, ZG_GPU_STREAM_ZSTD, 1), "zstd");
    CHECK_STR(picked(A, A, A, BL, ZG_GPU_STREAM_DEFLATE, 1), "DEFLATE");
    CHECK_STR(picked(A, A, A, BL, ZG_GPU_STREAM_LZ4, 1), "LZ4");
    CHECK_STR(picked(A, A, A, BL, ZG_GPU_STREAM_SNAPPY, 1), "Snappy");
    /* nvCOMP asked for: taken where it is loaded; else zgpu's (zstd, LZ4) or host threads (DEFLATE: the
     * nvCOMP entry stays picked and its chunks fail its needs_nvcomp test) */
    CHECK_STR(picked(N, A, A, ZG_GPU_FORMAT_ZSTD, ZG_GPU_STREAM_ZSTD, 1), "Zstd");
    CHECK_STR(picked(N, A, A, BL, ZG_GPU_STREAM_ZSTD, 0), "zstd");
    CHECK_STR(picked(A, N, A, ZG_GPU_FORMAT_GZIP, ZG_GPU_STREAM_DEFLATE, 1), "Deflate");
    CHECK_STR(picked(A, N, A, BL, ZG_GPU_STREAM_DEFLATE, 0), "Deflate");
    CHECK_STR(picked(A, A, N, BL, ZG_GPU_STREAM_LZ4, 1), "nvCOMP LZ4");
    CHECK_STR(picked(A, A, N, BL, ZG_GPU_STREAM_LZ4, 0), "LZ4");
    CHECK_STR(picked(Z, Z, Z, ZG_GPU_FORMAT_LZ4_NUMCODECS, ZG_GPU_STREAM_LZ4, 1), "nvCOMP LZ4");
    /* host: DEFLATE streams (blosc's too) go to host threads; blosc's zstd streams stay on zgpu's decoder */
    CHECK_STR(picked(A, H, A, BL, ZG_GPU_STREAM_DEFLATE, 1), "host");
    CHECK_STR(picked(H, A, H, BL, ZG_GPU_STREAM_ZSTD, 1), "zstd");
    CHECK_STR(picked(H, A, H, BL, ZG_GPU_STREAM_LZ4, 1), "LZ4");
    CHECK(zg_gpu_pick(NULL, BL, ZG_GPU_STREAM_NONE, 1) == NULL);
    /* stored formats wrapping one stream, and the messages the driver reports */
    CHECK(zg_gpu_container_of(ZG_GPU_FORMAT_NONE) == NULL && zg_gpu_container_of(BL) == NULL);
    const zg_gpu_container *gz = zg_gpu_container_of(ZG_GPU_FORMAT_GZIP), *zl = zg_gpu_container_of(ZG_GPU_FORMAT_ZLIB);
    CHECK(gz && gz->check_kind == 1 && zl && zl->check_kind == 2);
    if (gz && zl) {
        CHECK_STR(gz->check_name, "CRC32");
        CHECK_STR(zl->check_name, "Adler-32");
    }
    /* zstd: a frame with the checksum flag carries its XXH64 in its last 4 bytes (one without carries none);
     * zgpu's zstd decoder verifies it itself, nVIDIA's does not (the check kernel then does) */
    const zg_gpu_container *zs = zg_gpu_container_of(ZG_GPU_FORMAT_ZSTD);
    CHECK(zs && zs->check_kind == ZG_CHECK_XXH64);
    if (zs) {
        uint8_t fr[16] = {0x28, 0xb5, 0x2f, 0xfd, 0x24, 3, 0x19, 0, 0, 'a', 'b', 'c', 0x11, 0x22, 0x33, 0x44};
        size_t off = 9, len = 0;
        uint32_t check = 0;
        int kind = ZG_CHECK_NONE;
        CHECK(zs->locate(fr, 16, 3, &off, &len, &check, &kind) == 0);
        CHECK(off == 0 && len == 16 && kind == ZG_CHECK_XXH64 && check == 0x44332211u);
        fr[4] = 0x20; /* no checksum flag */
        kind = ZG_CHECK_NONE;
        CHECK(zs->locate(fr, 12, 3, &off, &len, &check, &kind) == 0 && kind == ZG_CHECK_NONE);
    }
    CHECK_STR(zg_gpu_check_name(ZG_CHECK_ADLER32), "Adler-32");
    CHECK_STR(zg_gpu_check_name(ZG_CHECK_XXH64), "XXH64");
    for (size_t i = 0; i < n; i++)
        if (decs[i]->stream == ZG_GPU_STREAM_ZSTD)
            CHECK_MSG(!!(decs[i]->verifies & 1u << ZG_CHECK_XXH64) == !decs[i]->needs_nvcomp,
                      "%s: verifies XXH64 itself exactly when it is zgpu's", decs[i]->name);
    char text[256];
    for (size_t i = 0; i < n; i++) {
        decs[i]->error_text(1, 0, text, sizeof text);
        CHECK(strstr(text, "LZ4 stream invalid: ") == text || strstr(text, "GPU ") == text);
    }
}
#endif

int main(void) {
#ifdef ZGPU_HAVE_CUDA
    test_decoder_registry();
#endif
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zgpu_test_gpu_read_%d", (int)getpid());
    mkdir(tmpdir, 0755);
    /* cuFile without the nvidia-fs driver reads in compatibility mode only where its configuration allows
     * it: allow it, so that GDS-required reads run cuFile's read path here too (unless the caller set one) */
    char cufile_json[300];
    snprintf(cufile_json, sizeof cufile_json, "%s/cufile.json", tmpdir);
    if (!getenv("CUFILE_ENV_PATH_JSON")) {
        FILE *cj = fopen(cufile_json, "w");
        if (cj) {
            fputs("{\"logging\": {\"level\": \"ERROR\"}, \"properties\": {\"allow_compat_mode\": true}}\n", cj);
            fclose(cj);
            setenv("CUFILE_ENV_PATH_JSON", cufile_json, 1);
        }
    }
    gpu = zgpu_gpu_available();
    const char *why = gpu ? "" : zgpu_last_error();
    char whybuf[512];
    snprintf(whybuf, sizeof whybuf, "%s", why);
#ifdef ZGPU_HAVE_CUDA
    if (gpu) {
        const char *lib = getenv("ZGPU_NVCOMP_LIB");
        nvcomp_loaded = lib && *lib; /* refined by the stats: a GPU-decoded zstd chunk proves it */
    }
#endif
    /* every context reads through the device route (the GPU decoders are what this tests; the cost model would
     * send these small arrays' reads to the host route: test_read_regions and test_route cover it) */
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    zgpu_tuning tune;
    zgpu_tuning_init(&tune);
    tune.read_route = ZGPU_ROUTE_DEVICE;
    o.tuning = &tune;
    CHECK_OK(zgpu_context_create(&o, &ctx_auto));
    /* DEFLATE chains on zgpu's GPU decoder throughout (the automatic choice is checked per array) */
    zgpu_context *ctx = NULL, *ctx_cpu = NULL, *ctx_small = NULL;
    CHECK_OK(zgpu_context_create(&o, &ctx));
    tune.pipeline_waves = 4;
    CHECK_OK(zgpu_context_create(&o, &ctx_waves));
    tune.pipeline_waves = 0;
    o.gpu_decode = 0;
    CHECK_OK(zgpu_context_create(&o, &ctx_cpu));
    o.gpu_decode = 1;
    o.device_memory_budget = 400000; /* a chunk of 16*20*24*8 bytes plus staging fits; several waves */
    CHECK_OK(zgpu_context_create(&o, &ctx_small));
    o.device_memory_budget = 0;
    o.gpu_trust_input = 1;
    tune.deflate_decoder = ZGPU_DECODER_NVCOMP;
    CHECK_OK(zgpu_context_create(&o, &ctx_trust));
    tune.deflate_decoder = ZGPU_DECODER_ZGPU;
    o.gpu_trust_input = 0;
    o.gds_mode = ZGPU_GDS_ON;
    CHECK_OK(zgpu_context_create(&o, &ctx_gds));
    /* arrays whose chunks the corruption cases damage (one per GPU decoder) */
    static const char *const corrupt[][2] = {
        {"v3_zstd_u16", "c/0/0/1"}, {"v3_blosc_lz4_shuffle_u16", "c/0/1/0"}, {"v3_gzip_f64", "c/1/0/1"},
        {"v2_lz4_u32", "0.0.1"},    {"v2_zlib_i16", "0.1.2"},                {"v3_bigendian_crc32c_i32", "c/0/0/0"},
    };
    const size_t n_corrupt = sizeof corrupt / sizeof corrupt[0];
    /* ZGPU_TEST_QUICK=1 (for compute-sanitizer, which slows nvCOMP a hundredfold): only those arrays */
    const char *quick = getenv("ZGPU_TEST_QUICK");
    quick_mode = quick && *quick && *quick != '0';
    /* ZGPU_TEST_SHARD=k/n: only every n-th array from the k-th (parallel compute-sanitizer runs) */
    unsigned shard_k = 0, shard_n = 1;
    const char *shard = getenv("ZGPU_TEST_SHARD");
    if (shard && (sscanf(shard, "%u/%u", &shard_k, &shard_n) != 2 || shard_n == 0 || shard_k >= shard_n)) {
        fprintf(stderr, "ZGPU_TEST_SHARD must be k/n with k < n\n");
        return 2;
    }
    for (size_t i = 0; i < N_CASES; i++) {
        if (i % shard_n != shard_k) continue;
        int wanted = !quick_mode;
        for (size_t k = 0; k < n_corrupt && !wanted; k++) wanted = !strcmp(cases[i].name, corrupt[k][0]);
        if (wanted) run_case(ctx, ctx_cpu, ctx_small, &cases[i]);
    }
#ifdef ZGPU_HAVE_CUDA
    if (gpu && !quick_mode && shard_k == 0) scatter_many_rows(ctx);
    if (gpu && !quick_mode && shard_k == 0) large_chunks(ctx);
    if (gpu && shard_k == 0) zstd_rows_in_place(ctx);
    if (gpu)
        for (size_t k = 0; k < n_corrupt; k++) /* in the shard that wrote the array */
            for (size_t i = 0; i < N_CASES; i++)
                if (!strcmp(cases[i].name, corrupt[k][0]) && i % shard_n == shard_k)
                    corrupt_case(ctx, corrupt[k][0], corrupt[k][1]);
#endif
    zgpu_context_free(ctx);
    zgpu_context_free(ctx_cpu);
    zgpu_context_free(ctx_small);
    zgpu_context_free(ctx_trust);
    zgpu_context_free(ctx_gds);
    zgpu_context_free(ctx_auto);
    zgpu_context_free(ctx_waves);
    zt_remove_dir(tmpdir);
    TEST_MAIN_END_GPU(gpu, whybuf);
}
