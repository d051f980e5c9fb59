/* The GPU batch encoder (src/gpuencode/) against the host libraries: batches of varied chunks (0, 1, 100 bytes up
 * to 1 MiB; random, text-like, uint16 ramps and zeros; inputs at unaligned addresses where nvCOMP allows them)
 * compressed on the GPU in every format and level, each stored chunk decoded by zlib's inflate (gzip, zlib: their
 * CRC32 / Adler-32 and ISIZE checked by zlib), libdeflate, LZ4_decompress_safe after numcodecs' size,
 * ZSTD_decompress, and compared byte for byte; compressible data must shrink (ratios printed beside the host
 * libraries'). Then chunks of 4 and 16 MiB, the errors (a chunk over nvCOMP's limit, a misaligned input, a slot or
 * scratch too small), and throughput (CUDA events; printed, not asserted) beside one host thread's.
 * ZGPU_TEST_QUICK=1: the batches and errors alone, at one level a format (for compute-sanitizer).
 * ZGPU_ENCODE_DUMP=FILE writes a sample of stored chunks and their data, for a check with numcodecs. Skips (77)
 * without a GPU or nvCOMP. */
#include "test.h"
#include "zgpu.h"

#ifndef ZGPU_HAVE_CUDA
TEST_MAIN_WITHOUT_CUDA()
#else
#include <cuda_runtime.h>
#include <libdeflate.h>
#include <time.h>
#include <lz4.h>
#include <zlib.h>
#include <zstd.h>

#include "gpucodec/nvcomp/nvcomp_lib.h"
#include "gpuencode/encode_kernels.h"
#include "gpuencode/gpu_encode.h"
#include "gpuencode/deflate_fixed.h"
#include "gpuencode/deflate_pieces.h"
#include "gpuencode/lz4_encode.h"
#include "gpuencode/zstd_encode.h"

/* The batches' options: zstd through zgpu's encoder (0) or nvCOMP's (1). */
static zg_gpu_encode_opts g_opts;
static zg_ze_ref_scratch *g_ref; /* zgpu's zstd encoder on the CPU: its frames must be the GPU's, byte for byte */
static size_t zstd_ref_differ;

enum { DATA_RANDOM, DATA_TEXT, DATA_RAMP, DATA_ZEROS, DATA_KINDS };
static const char *const data_names[DATA_KINDS] = {"random", "text", "u16 ramp", "zeros"};

static void fill(uint8_t *p, size_t n, int kind, uint32_t seed) {
    static const char *const words[16] = {"lorem ", "ipsum ", "dolor ", "sit ", "amet, ", "consectetur ",
                                          "adipiscing ", "elit; ", "sed ", "do ", "eiusmod ", "tempor ",
                                          "incididunt ", "ut ", "labore ", "magna. "};
    uint32_t x = seed * 2654435761u + 12345;
    size_t i = 0;
    while (i < n) {
        x = x * 1664525u + 1013904223u;
        if (kind == DATA_RANDOM) {
            p[i++] = (uint8_t)(x >> 24);
        } else if (kind == DATA_TEXT) { /* words drawn at random */
            for (const char *w = words[x >> 28]; *w && i < n; w++) p[i++] = (uint8_t)*w;
        } else if (kind == DATA_RAMP) { /* a uint16 ramp, little-endian, each value thrice: a smooth image row */
            const uint16_t v = (uint16_t)(i / 2 / 3 + seed);
            p[i] = (uint8_t)(i % 2 ? v >> 8 : v);
            i++;
        } else {
            p[i++] = 0;
        }
    }
}

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

typedef struct batch {
    size_t n;
    size_t *bytes;     /* uncompressed sizes */
    int *kind;         /* DATA_* */
    uint8_t **host;    /* uncompressed bytes */
    uint8_t *d_in;     /* one buffer, chunks at `at` */
    size_t *at, total, max;
} batch;

/* Chunks placed 256 bytes apart plus (i % 4) * in_align, so that a format that allows it gets unaligned inputs. */
static void batch_make(batch *b, const size_t *sizes, size_t n_sizes, int kinds, size_t in_align) {
    memset(b, 0, sizeof *b);
    b->n = n_sizes * (size_t)kinds;
    b->bytes = calloc(b->n, sizeof *b->bytes), b->kind = calloc(b->n, sizeof *b->kind);
    b->host = calloc(b->n, sizeof *b->host), b->at = calloc(b->n, sizeof *b->at);
    size_t pos = 0;
    for (size_t i = 0; i < b->n; i++) {
        b->bytes[i] = sizes[i % n_sizes];
        b->kind[i] = (int)(i / n_sizes) % DATA_KINDS;
        b->host[i] = malloc(b->bytes[i] + 1);
        fill(b->host[i], b->bytes[i], b->kind[i], (uint32_t)i);
        pos = align_up(pos, 256) + (i % 4) * in_align;
        b->at[i] = pos;
        pos += b->bytes[i];
        b->total += b->bytes[i];
        if (b->bytes[i] > b->max) b->max = b->bytes[i];
    }
    CUOK(cudaMalloc((void **)&b->d_in, pos + 256));
    for (size_t i = 0; i < b->n; i++)
        CUOK(cudaMemcpy(b->d_in + b->at[i], b->host[i], b->bytes[i], cudaMemcpyHostToDevice));
}

static void batch_free(batch *b) {
    for (size_t i = 0; i < b->n; i++) free(b->host[i]);
    free(b->bytes), free(b->kind), free(b->host), free(b->at);
    cudaFree(b->d_in);
}

/* One encode of a batch; fills stored[i] (host copies of the stored chunks) and returns the median time of
 * `reps` runs in ms (the first run, which loads nvCOMP's kernels, not counted when reps > 1). */
typedef struct encoded {
    uint8_t **stored;
    size_t *stored_bytes;
    int *status;
    zgpu_status rc;
} encoded;

static double encode(const batch *b, zg_ge_format f, int level, int reps, encoded *e) {
    memset(e, 0, sizeof *e);
    zg_gpu_encode_layout lay;
    e->rc = zg_gpu_encode_layout_for(f, level, &g_opts, b->n, b->max, b->total, &lay);
    if (e->rc != ZGPU_OK) return 0;
    const size_t slot = align_up(lay.slot_bytes, 256);
    uint8_t *d_out = NULL, *d_scratch = NULL;
    size_t *d_sizes = NULL;
    int *d_status = NULL;
    CUOK(cudaMalloc((void **)&d_out, slot * b->n));
    CUOK(cudaMalloc((void **)&d_scratch, lay.scratch_bytes));
    CUOK(cudaMalloc((void **)&d_sizes, b->n * sizeof *d_sizes));
    CUOK(cudaMalloc((void **)&d_status, b->n * sizeof *d_status));
    const void **in = malloc(b->n * sizeof *in);
    void **out = malloc(b->n * sizeof *out);
    for (size_t i = 0; i < b->n; i++) in[i] = b->d_in + b->at[i], out[i] = d_out + i * slot;
    cudaEvent_t t0, t1;
    cudaEventCreate(&t0), cudaEventCreate(&t1);
    double ms[16] = {0};
    int runs = reps > 1 ? reps + 1 : 1;
    if (runs > 16) runs = 16;
    for (int r = 0; r < runs; r++) {
        if (r > 1 && ms[r - 1] > 1500) { /* a slow algorithm: one timed run is enough */
            runs = r;
            break;
        }
        cudaMemset(d_status, 0x7f, b->n * sizeof *d_status);
        cudaEventRecord(t0, 0);
        e->rc = zg_gpu_encode_batch(f, level, &g_opts, in, b->bytes, b->n, out, slot, d_sizes, d_status, d_scratch,
                                    lay.scratch_bytes, 0);
        cudaEventRecord(t1, 0);
        CUOK(cudaEventSynchronize(t1));
        float m = 0;
        cudaEventElapsedTime(&m, t0, t1);
        ms[r] = m;
        if (e->rc != ZGPU_OK) break;
    }
    CUOK(cudaDeviceSynchronize());
    e->stored = calloc(b->n, sizeof *e->stored);
    e->stored_bytes = calloc(b->n, sizeof *e->stored_bytes);
    e->status = calloc(b->n, sizeof *e->status);
    if (e->rc == ZGPU_OK) {
        CUOK(cudaMemcpy(e->stored_bytes, d_sizes, b->n * sizeof *d_sizes, cudaMemcpyDeviceToHost));
        CUOK(cudaMemcpy(e->status, d_status, b->n * sizeof *d_status, cudaMemcpyDeviceToHost));
        uint8_t *all = malloc(slot * b->n);
        CUOK(cudaMemcpy(all, d_out, slot * b->n, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < b->n; i++) {
            const size_t m = e->stored_bytes[i] <= slot - lay.frame_offset ? e->stored_bytes[i] : 0;
            e->stored[i] = malloc(m + 1);
            memcpy(e->stored[i], all + i * slot + lay.frame_offset, m);
        }
        free(all);
    }
    cudaEventDestroy(t0), cudaEventDestroy(t1);
    cudaFree(d_out), cudaFree(d_scratch), cudaFree(d_sizes), cudaFree(d_status);
    free(in), free(out);
    if (runs == 2) return ms[1];
    if (runs > 2) { /* median of the timed runs */
        for (int i = 1; i < runs; i++)
            for (int j = i + 1; j < runs; j++)
                if (ms[j] < ms[i]) { double t = ms[i]; ms[i] = ms[j]; ms[j] = t; }
        return ms[1 + (runs - 1) / 2];
    }
    return ms[0];
}

static void encoded_free(encoded *e, size_t n) {
    if (e->stored)
        for (size_t i = 0; i < n; i++) free(e->stored[i]);
    free(e->stored), free(e->stored_bytes), free(e->status);
}

static size_t zstd_without_size; /* GPU zstd frames whose header has no content size */
static size_t zstd_frames;
static uint8_t zstd_fhd = 0xff; /* the frame header descriptor of a GPU zstd frame of 65536 bytes */

/* Decodes stored chunk p[0, m) of format f with the host libraries; 1 if it gives exactly want[0, n). */
static int host_decodes(zg_ge_format f, int level, const uint8_t *p, size_t m, const uint8_t *want, size_t n) {
    uint8_t *back = malloc(n + 64);
    int ok = 0;
    if (f == ZG_GE_GZIP || f == ZG_GE_ZLIB) {
        z_stream z;
        memset(&z, 0, sizeof z);
        inflateInit2(&z, f == ZG_GE_GZIP ? 31 : 15); /* zlib checks the CRC32 / Adler-32 and ISIZE */
        z.next_in = (Bytef *)p, z.avail_in = (uInt)m, z.next_out = back, z.avail_out = (uInt)(n + 64);
        ok = inflate(&z, Z_FINISH) == Z_STREAM_END && z.avail_in == 0 && z.total_out == n;
        inflateEnd(&z);
        struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
        size_t got = 0;
        const enum libdeflate_result r = f == ZG_GE_GZIP ? libdeflate_gzip_decompress(d, p, m, back, n + 64, &got)
                                                         : libdeflate_zlib_decompress(d, p, m, back, n + 64, &got);
        libdeflate_free_decompressor(d);
        ok = ok && r == LIBDEFLATE_SUCCESS && got == n;
        uint8_t h[10];
        zg_ge_write_header(f, level, n, h);
        ok = ok && m >= zg_ge_header_bytes(f) && memcmp(h, p, zg_ge_header_bytes(f)) == 0;
    } else if (f == ZG_GE_LZ4) {
        const uint32_t size =
            m >= 4 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24 : UINT32_MAX;
        ok = size == n && LZ4_decompress_safe((const char *)p + 4, (char *)back, (int)(m - 4), (int)n + 64) == (int)n;
    } else {
        zstd_frames++;
        zstd_without_size += ZSTD_getFrameContentSize(p, m) == ZSTD_CONTENTSIZE_UNKNOWN;
        if (n == 65536 && m > 4) zstd_fhd = p[4];
        ok = ZSTD_findFrameCompressedSize(p, m) == m && ZSTD_decompress(back, n + 64, p, m) == n;
        if (!g_opts.zstd_nvcomp) { /* the CPU reference writes the same frame */
            uint8_t *ref = malloc(n + n / 64 + 64);
            const size_t rn = zg_ze_frame_ref(want, n, &g_opts.hints, ref, g_ref);
            const int same = rn == m && memcmp(ref, p, m) == 0;
            zstd_ref_differ += !same;
            ok = ok && same;
            free(ref);
        }
    }
    ok = ok && memcmp(back, want, n) == 0;
    free(back);
    return ok;
}

/* Host ratios at the corresponding level, for the table beside the GPU's. */
static size_t host_compressed(zg_ge_format f, int level, const uint8_t *p, size_t n) {
    size_t cap = n + n / 2 + 1024;
    uint8_t *o = malloc(cap);
    size_t m = 0;
    if (f == ZG_GE_GZIP || f == ZG_GE_ZLIB) {
        uLongf zn = cap;
        compress2(o, &zn, p, n, level);
        m = zn + (f == ZG_GE_GZIP ? 12 : 0);
    } else if (f == ZG_GE_LZ4) {
        m = 4 + (size_t)LZ4_compress_default((const char *)p, (char *)o, (int)n, (int)cap);
    } else {
        m = ZSTD_compress(o, cap, p, n, 3);
    }
    free(o);
    return m;
}

static FILE *g_dump;

/* Every format and level over one batch: statuses, host decodes, ratios. */
static void test_formats(int quick) {
    static const size_t sizes[] = {0, 1, 100, 1000, 65536, 65537, 300001, 1 << 20};
    const size_t n_sizes = sizeof sizes / sizeof *sizes - (quick ? 1 : 0); /* quick: up to 300001 bytes */
    static const int deflate_levels[] = {-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    for (int v = 0; v <= ZG_GE_N; v++) { /* zstd twice: zgpu's encoder, then nvCOMP's */
        const int f = v ? v - 1 : 0;
        g_opts.zstd_nvcomp = v == 1;
        size_t in_a = 1, out_a, temp_a;
        zg_nvc_compress_alignments(f == ZG_GE_ZSTD ? ZG_NVC_ZSTD : f == ZG_GE_LZ4 ? ZG_NVC_LZ4 : ZG_NVC_DEFLATE, 1,
                                   &in_a, &out_a, &temp_a);
        batch b;
        batch_make(&b, sizes, n_sizes, DATA_KINDS, in_a);
        const int deflate = f == ZG_GE_GZIP || f == ZG_GE_ZLIB;
        const int n_levels = deflate && !quick ? 11 : 1;
        for (int li = 0; li < n_levels; li++) {
            const int level = deflate ? (quick ? (f == ZG_GE_GZIP ? 1 : 6) : deflate_levels[li]) : 0;
            encoded e;
            const double ms = encode(&b, (zg_ge_format)f, level, 1, &e);
            CHECK_OK(e.rc);
            if (e.rc != ZGPU_OK) {
                encoded_free(&e, b.n);
                continue;
            }
            const zgpu_status st = zg_gpu_encode_check((zg_ge_format)f, e.status, b.n);
            CHECK_MSG(st == ZGPU_OK, "%s level %d: %s", zg_gpu_encode_format_name(f), level, zgpu_last_error());
            size_t wrong = 0, in_k[DATA_KINDS] = {0}, out_k[DATA_KINDS] = {0}, host_k[DATA_KINDS] = {0};
            for (size_t i = 0; i < b.n; i++) {
                const int ok = e.status[i] == 0 &&
                               host_decodes(f, level, e.stored[i], e.stored_bytes[i], b.host[i], b.bytes[i]);
                if (!ok) {
                    wrong++;
                    fprintf(stderr, "  %s level %d chunk %zu (%zu bytes, %s): status %d, %zu stored bytes, wrong\n",
                            zg_gpu_encode_format_name(f), level, i, b.bytes[i], data_names[b.kind[i]], e.status[i],
                            e.stored_bytes[i]);
                }
                in_k[b.kind[i]] += b.bytes[i];
                out_k[b.kind[i]] += e.stored_bytes[i];
                if (b.bytes[i]) host_k[b.kind[i]] += host_compressed(f, level < 0 ? 6 : level, b.host[i], b.bytes[i]);
                /* a sample for numcodecs: default-ish levels, chunks up to 64 KiB */
                if (g_dump && (!deflate || level == 1 || level == 6) && b.bytes[i] <= 65536 && ok) {
                    const uint32_t hdr[4] = {(uint32_t)f, (uint32_t)level, (uint32_t)b.bytes[i],
                                             (uint32_t)e.stored_bytes[i]};
                    fwrite(hdr, sizeof hdr, 1, g_dump);
                    fwrite(b.host[i], 1, b.bytes[i], g_dump);
                    fwrite(e.stored[i], 1, e.stored_bytes[i], g_dump);
                }
            }
            CHECK_EQ_U64(wrong, 0);
            printf("%-4s%s level %2d: %zu chunks, %zu wrong, %.2f ms; ratio GPU/host:", zg_gpu_encode_format_name(f),
                   f == ZG_GE_ZSTD ? (g_opts.zstd_nvcomp ? " (nvCOMP)" : " (zgpu)") : "", level, b.n, wrong, ms);
            for (int k = 0; k < DATA_KINDS; k++)
                printf(" %s %.2f/%.2f", data_names[k], (double)in_k[k] / (double)out_k[k],
                       (double)in_k[k] / (double)host_k[k]);
            printf("\n");
            /* compressible data shrinks (entropy coding alone, level 0, finds no repeats: the ramp and zeros only
             * lose their bits' entropy), random data hardly grows */
            CHECK((double)in_k[DATA_TEXT] / (double)out_k[DATA_TEXT] > 1.5);
            CHECK((double)in_k[DATA_ZEROS] / (double)out_k[DATA_ZEROS] > (deflate && level == 0 ? 4.0 : 20.0));
            CHECK((double)in_k[DATA_RAMP] / (double)out_k[DATA_RAMP] > 0.95);
            CHECK((double)in_k[DATA_RANDOM] / (double)out_k[DATA_RANDOM] > 0.95);
            encoded_free(&e, b.n);
        }
        batch_free(&b);
    }
    g_opts.zstd_nvcomp = 0;
    printf("zstd (zgpu): %zu frames differ from the CPU reference's\n", zstd_ref_differ);
    CHECK_EQ_U64(zstd_ref_differ, 0);
    if (zstd_frames)
        printf("zstd: %zu of %zu GPU frames have no content size in their header; a 64 KiB chunk's frame header "
               "descriptor: 0x%02x (content size field %d, single segment %d, checksum %d)\n",
               zstd_without_size, zstd_frames, zstd_fhd, zstd_fhd >> 6, (zstd_fhd >> 5) & 1, (zstd_fhd >> 2) & 1);
}

/* Chunks up to nvCOMP's limits (16 MiB for zstd and LZ4; Deflate's header says 2 GiB, its CompressAsync 64 KiB). */
static void test_large(void) {
    static const size_t sizes[] = {(size_t)4 << 20, (size_t)16 << 20};
    batch b;
    batch_make(&b, sizes, 2, 2, 0); /* random, then text */
    for (int v = 0; v <= ZG_GE_N; v++) { /* zstd twice: zgpu's encoder, then nvCOMP's */
        const int f = v ? v - 1 : 0;
        g_opts.zstd_nvcomp = v == 1;
        encoded e;
        const double ms = encode(&b, (zg_ge_format)f, 1, 1, &e);
        CHECK_OK(e.rc);
        size_t bad = 0;
        for (size_t i = 0; e.rc == ZGPU_OK && i < b.n; i++) {
            const int ok = e.status[i] == 0 &&
                           host_decodes((zg_ge_format)f, 1, e.stored[i], e.stored_bytes[i], b.host[i], b.bytes[i]);
            if (!ok)
                printf("  large %s chunk %zu (%zu bytes): status %d (%s)\n", zg_gpu_encode_format_name(f), i,
                       b.bytes[i], e.status[i], zg_nvc_status_text(e.status[i]));
            bad += !ok;
        }
        printf("large chunks (4 and 16 MiB) %s%s: %s, %.1f ms, %zu wrong\n", zg_gpu_encode_format_name(f),
               f == ZG_GE_ZSTD ? (g_opts.zstd_nvcomp ? " (nvCOMP)" : " (zgpu)") : "",
               e.rc == ZGPU_OK ? "encoded" : zgpu_last_error(), ms, bad);
        CHECK_EQ_U64(bad, 0);
        encoded_free(&e, b.n);
    }
    batch_free(&b);
}

/* zgpu's zstd encoder on what its other paths meet: blosc-like streams (byte planes of a random third and a ramp,
 * 32 to 400 bytes, at odd addresses: Huffman tables that do not pay, raw and RLE literals), literals of a hundred
 * skewed symbols (a Huffman table that passes its estimate but not its size), fill runs of uint8 chunks, and the
 * benchmark's label cells with their strides as hints (plane repeats 256 KiB back, custom FSE tables, repeat
 * offsets); every frame equal to the CPU reference's and decoded by libzstd. */
static void test_zstd_cases(void) {
    enum { N_SMALL = 3000 };
    const size_t n = N_SMALL + 2 + 1;
    batch b;
    memset(&b, 0, sizeof b);
    b.n = n;
    b.bytes = calloc(n, sizeof *b.bytes), b.kind = calloc(n, sizeof *b.kind);
    b.host = calloc(n, sizeof *b.host), b.at = calloc(n, sizeof *b.at);
    uint32_t x = 77;
    for (size_t i = 0; i < n; i++) {
        const size_t len = i < N_SMALL ? 32 + (size_t)(i * 7919 % 369) : i == N_SMALL ? 300000 : i == N_SMALL + 1
                                                                                              ? 70000
                                                                                              : (size_t)16 << 20;
        uint8_t *p = b.host[i] = malloc(len + 1);
        b.bytes[i] = len;
        for (size_t k = 0; k < len; k++) {
            x = x * 1664525u + 1013904223u;
            if (i < N_SMALL && i % 3 == 0) p[k] = (uint8_t)(x >> 24);                         /* random */
            else if (i < N_SMALL && i % 3 == 1) p[k] = (uint8_t)((k / 3 + i) >> (8 * (i % 2))); /* ramp plane */
            else if (i < N_SMALL) p[k] = (uint8_t)((x >> 24) % 100 < 60 ? (x >> 16) % 8 : (x >> 16) % 100);
            else if (i == N_SMALL) p[k] = (uint8_t)(k % 9000 < 5000 ? 9 : (x >> 24));            /* fill runs */
            else if (i == N_SMALL + 1) p[k] = (uint8_t)(k < 35000 ? 9 : 10);
        }
        b.total += len;
        if (len > b.max) b.max = len;
    }
    /* the label cells: 64 x 256 x 256 uint32, cells of 16 x 24 x 20 */
    uint32_t *cells = (uint32_t *)b.host[n - 1];
    for (size_t z = 0, k = 0; z < 64; z++)
        for (size_t y = 0; y < 256; y++)
            for (size_t xx = 0; xx < 256; xx++, k++)
                cells[k] = (uint32_t)((z / 16 * 7919 + y / 24 * 104729 + xx / 20 * 1299709) % 50000);
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        b.at[i] = pos + (i % 4); /* odd addresses, as blosc's streams have */
        pos = align_up(b.at[i] + b.bytes[i], 256);
    }
    CUOK(cudaMalloc((void **)&b.d_in, pos + 256));
    for (size_t i = 0; i < n; i++) CUOK(cudaMemcpy(b.d_in + b.at[i], b.host[i], b.bytes[i], cudaMemcpyHostToDevice));
    const zg_gpu_encode_opts saved = g_opts;
    g_opts.zstd_nvcomp = 0;
    for (int hinted = 0; hinted < 2; hinted++) {
        g_opts.hints = hinted ? (zg_ze_hints){{4, 1024, 262144}} : (zg_ze_hints){{0, 0, 0}};
        encoded e;
        const size_t differ_before = zstd_ref_differ;
        encode(&b, ZG_GE_ZSTD, 3, 1, &e);
        CHECK_OK(e.rc);
        size_t wrong = 0;
        for (size_t i = 0; e.rc == ZGPU_OK && i < n; i++) {
            const int ok = e.status[i] == 0 &&
                           host_decodes(ZG_GE_ZSTD, 3, e.stored[i], e.stored_bytes[i], b.host[i], b.bytes[i]);
            if (!ok && wrong++ < 5)
                fprintf(stderr, "  zstd case %zu (%zu bytes, hints %d): status %d, %zu stored bytes, wrong\n", i,
                        b.bytes[i], hinted, e.status[i], e.stored_bytes[i]);
        }
        CHECK_EQ_U64(wrong, 0);
        if (e.rc == ZGPU_OK)
            printf("zstd (zgpu) cases, hints %s: %zu chunks, %zu wrong, %zu differ from the CPU reference; labels "
                   "chunk ratio %.1f\n",
                   hinted ? "4/1024/262144" : "none", n, wrong, zstd_ref_differ - differ_before,
                   (double)b.bytes[n - 1] / (double)e.stored_bytes[n - 1]);
        encoded_free(&e, n);
    }
    /* gzip of the same batch with the hints: every piece the shorter of nvCOMP's and the fixed-Huffman block, so the
     * label cells come out no longer than the CPU reference's fixed-Huffman pieces (plus the joins and framing) */
    size_t fixed = 0;
    {
        const zg_ze_hints h = zg_df_hints(g_opts.hints);
        uint8_t *out = malloc(zg_df_bound(ZG_DP_PIECE_BYTES));
        for (size_t at = 0; at < b.bytes[n - 1]; at += ZG_DP_PIECE_BYTES)
            fixed += zg_df_piece_ref(b.host[n - 1], (uint32_t)at, ZG_DP_PIECE_BYTES, &h, out, g_ref->seqs,
                                     g_ref->table) + ZG_DP_JOIN_BYTES;
        free(out);
    }
    /* (the last three chunks only: slots are sized by the largest chunk) */
    batch last = b;
    last.n = 3, last.bytes += n - 3, last.kind += n - 3, last.host += n - 3, last.at += n - 3;
    last.total = last.bytes[0] + last.bytes[1] + last.bytes[2];
    encoded e;
    encode(&last, ZG_GE_GZIP, 5, 1, &e);
    CHECK_OK(e.rc);
    size_t wrong = 0;
    for (size_t i = 0; e.rc == ZGPU_OK && i < last.n; i++)
        wrong += !(e.status[i] == 0 &&
                   host_decodes(ZG_GE_GZIP, 5, e.stored[i], e.stored_bytes[i], last.host[i], last.bytes[i]));
    CHECK_EQ_U64(wrong, 0);
    if (e.rc == ZGPU_OK) {
        printf("gzip cases, hints: %zu chunks, %zu wrong; labels chunk %.1f:1 (fixed-Huffman pieces on the CPU "
               "%.1f:1)\n",
               last.n, wrong, (double)last.bytes[2] / (double)e.stored_bytes[2], (double)last.bytes[2] / (double)fixed);
        CHECK(e.stored_bytes[2] <= fixed + 18);
    }
    encoded_free(&e, last.n);
    /* LZ4 of the small chunks (blosc's streams): zgpu's encoder, the same bytes as its CPU reference */
    batch small = b;
    small.n = N_SMALL, small.total = 0, small.max = 0;
    for (size_t i = 0; i < N_SMALL; i++) {
        small.total += b.bytes[i];
        if (b.bytes[i] > small.max) small.max = b.bytes[i];
    }
    encode(&small, ZG_GE_LZ4, 1, 1, &e);
    CHECK_OK(e.rc);
    size_t lz_wrong = 0, lz_differ = 0;
    uint8_t *ref = malloc(4 + zg_lz_bound(ZG_LZ_MAX_INPUT));
    const zg_ze_hints lh = zg_lz_hints(g_opts.hints);
    for (size_t i = 0; e.rc == ZGPU_OK && i < small.n; i++) {
        lz_wrong += !(e.status[i] == 0 && host_decodes(ZG_GE_LZ4, 1, e.stored[i], e.stored_bytes[i], small.host[i],
                                                       small.bytes[i]));
        const uint32_t rn = zg_lz_block_ref(small.host[i], (uint32_t)small.bytes[i], &lh, ref, g_ref->seqs, g_ref->table);
        lz_differ += e.stored_bytes[i] != 4 + (size_t)rn || memcmp(e.stored[i] + 4, ref, rn) != 0;
    }
    free(ref);
    printf("lz4 (zgpu) cases: %zu chunks, %zu wrong, %zu differ from the CPU reference\n", small.n, lz_wrong,
           lz_differ);
    CHECK_EQ_U64(lz_wrong, 0);
    CHECK_EQ_U64(lz_differ, 0);
    encoded_free(&e, small.n);
    g_opts = saved;
    batch_free(&b);
}

static void test_errors(void) {
    zg_gpu_encode_layout lay;
    /* over nvCOMP's limit: a clear refusal, before anything is launched */
    CHECK_STATUS(zg_gpu_encode_layout_for(ZG_GE_LZ4, 0, NULL, 1, (16u << 20) + 1, (16u << 20) + 1, &lay),
                 ZGPU_ERR_UNSUPPORTED);
    printf("over the limit: %s\n", zgpu_last_error());
    CHECK(strstr(zgpu_last_error(), "limit") != NULL);
    CHECK_STATUS(zg_gpu_encode_layout_for(ZG_GE_GZIP, 10, NULL, 1, 100, 100, &lay), ZGPU_ERR_INVALID_ARGUMENT);
    const zg_gpu_encode_opts nvc = {1, {{0, 0, 0}}};
    CHECK_OK(zg_gpu_encode_layout_for(ZG_GE_ZSTD, 3, &nvc, 4, 4096, 16384, &lay));
    printf("zstd layout for 4 x 4 KiB: in align %zu, out align %zu, frame offset %zu, slot %zu, scratch %zu\n",
           lay.in_align, lay.out_align, lay.frame_offset, lay.slot_bytes, lay.scratch_bytes);
    uint8_t *d = NULL;
    CUOK(cudaMalloc((void **)&d, (size_t)1 << 20));
    size_t *d_sizes = (size_t *)(d + 4096);
    int *d_status = (int *)(d + 8192);
    void *scratch = d + (64 << 10);
    const size_t scratch_bytes = (size_t)(960 << 10);
    const void *in[2] = {d, d + 1024};
    void *out[2] = {d + 16384, d + 16384 + 8192};
    size_t bytes[2] = {1000, (16u << 20) + 1};
    CHECK_STATUS(zg_gpu_encode_batch(ZG_GE_LZ4, 0, NULL, in, bytes, 2, out, 8192, d_sizes, d_status, scratch, scratch_bytes,
                                     0),
                 ZGPU_ERR_UNSUPPORTED);
    bytes[1] = 1000;
    if (lay.in_align > 1) {
        const void *odd[2] = {d + 1, d + 1024};
        CHECK_STATUS(zg_gpu_encode_batch(ZG_GE_ZSTD, 3, &nvc, odd, bytes, 2, out, 8192, d_sizes, d_status, scratch,
                                         scratch_bytes, 0),
                     ZGPU_ERR_INVALID_ARGUMENT);
        printf("misaligned: %s\n", zgpu_last_error());
    }
    CHECK_STATUS(zg_gpu_encode_batch(ZG_GE_GZIP, 6, NULL, in, bytes, 2, out, 64, d_sizes, d_status, scratch, scratch_bytes,
                                     0),
                 ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(zg_gpu_encode_batch(ZG_GE_ZSTD, 3, &nvc, in, bytes, 2, out, 8192, d_sizes, d_status, scratch, 512,
                                     0),
                 ZGPU_ERR_INVALID_ARGUMENT);
    printf("scratch too small: %s\n", zgpu_last_error());
    /* zgpu's zstd encoder: a slot or scratch too small, a chunk past its limit */
    CHECK_STATUS(zg_gpu_encode_batch(ZG_GE_ZSTD, 3, NULL, in, bytes, 2, out, 512, d_sizes, d_status, scratch,
                                     scratch_bytes, 0),
                 ZGPU_ERR_INVALID_ARGUMENT);
    printf("zgpu zstd, slot too small: %s\n", zgpu_last_error());
    CHECK_STATUS(zg_gpu_encode_batch(ZG_GE_ZSTD, 3, NULL, in, bytes, 2, out, 8192, d_sizes, d_status, scratch, 512,
                                     0),
                 ZGPU_ERR_INVALID_ARGUMENT);
    bytes[1] = (size_t)ZG_ZE_MAX_CHUNK + 1;
    CHECK_STATUS(zg_gpu_encode_layout_for(ZG_GE_ZSTD, 3, NULL, 1, bytes[1], bytes[1], &lay), ZGPU_ERR_UNSUPPORTED);
    printf("zgpu zstd, over the limit: %s\n", zgpu_last_error());
    bytes[1] = 1000;
    CUOK(cudaDeviceSynchronize());
    cudaFree(d);
}

/* One host thread over the same batch, for scale: libdeflate (zgpu's host gzip / zlib encoder), libzstd, liblz4. */
static void host_throughput(const batch *b) {
    struct { zg_ge_format f; int level; } runs[] = {{ZG_GE_ZSTD, 3}, {ZG_GE_LZ4, 1}, {ZG_GE_GZIP, 1}, {ZG_GE_GZIP, 6}};
    uint8_t *o = malloc(b->max * 2 + 1024);
    for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
        struct libdeflate_compressor *c = libdeflate_alloc_compressor(runs[r].level);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        size_t out = 0;
        for (size_t i = 0; i < b->n; i++) {
            const size_t cap = b->max * 2 + 1024;
            if (runs[r].f == ZG_GE_ZSTD) out += ZSTD_compress(o, cap, b->host[i], b->bytes[i], runs[r].level);
            else if (runs[r].f == ZG_GE_LZ4)
                out += 4 + (size_t)LZ4_compress_default((const char *)b->host[i], (char *)o, (int)b->bytes[i],
                                                        (int)cap);
            else out += libdeflate_gzip_compress(c, b->host[i], b->bytes[i], o, cap);
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        const double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        printf("host, one thread: %-4s level %d: %.1f ms, %.2f GB/s, ratio %.2f\n",
               zg_gpu_encode_format_name(runs[r].f), runs[r].level, ms, (double)b->total / ms / 1e6,
               (double)b->total / (double)out);
        libdeflate_free_compressor(c);
    }
    free(o);
}

/* The checksum kernel alone over a batch's 64 KiB segments: its speed, and each segment against zlib. */
static void checksum_throughput(const batch *b) {
    size_t ns = 0;
    for (size_t i = 0; i < b->n; i++) ns += (size_t)zg_ge_segments(b->bytes[i]);
    zg_ge_seg *segs = malloc(ns * sizeof *segs);
    const uint8_t **host_p = malloc(ns * sizeof *host_p);
    size_t s = 0;
    for (size_t i = 0; i < b->n; i++)
        for (size_t at = 0; at < b->bytes[i]; at += ZG_GE_SEG_BYTES, s++) {
            const size_t left = b->bytes[i] - at;
            segs[s].p = b->d_in + b->at[i] + at;
            segs[s].len = (uint32_t)(left < ZG_GE_SEG_BYTES ? left : ZG_GE_SEG_BYTES);
            host_p[s] = b->host[i] + at;
        }
    zg_ge_seg *d_segs = NULL;
    uint32_t *d_check = NULL, *check = malloc(ns * sizeof *check);
    CUOK(cudaMalloc((void **)&d_segs, ns * sizeof *segs));
    CUOK(cudaMalloc((void **)&d_check, ns * sizeof *check));
    CUOK(cudaMemcpy(d_segs, segs, ns * sizeof *segs, cudaMemcpyHostToDevice));
    cudaEvent_t t0, t1;
    cudaEventCreate(&t0), cudaEventCreate(&t1);
    for (int kind = ZG_CHECK_CRC32; kind <= ZG_CHECK_ADLER32; kind++) {
        float best = 1e9f;
        for (int r = 0; r < 4; r++) {
            cudaEventRecord(t0, 0);
            CUOK(zg_ge_checksum_launch(kind, d_segs, ns, d_check, 0));
            cudaEventRecord(t1, 0);
            CUOK(cudaEventSynchronize(t1));
            float m = 0;
            cudaEventElapsedTime(&m, t0, t1);
            if (r && m < best) best = m;
        }
        CUOK(cudaMemcpy(check, d_check, ns * sizeof *check, cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (size_t k = 0; k < ns; k++) {
            const uint32_t want = kind == ZG_CHECK_CRC32 ? (uint32_t)crc32(0, host_p[k], segs[k].len)
                                                         : (uint32_t)adler32(1, host_p[k], segs[k].len);
            bad += check[k] != want;
        }
        CHECK_EQ_U64(bad, 0);
        size_t total = 0;
        for (size_t k = 0; k < ns; k++) total += segs[k].len;
        printf("checksum kernel %s: %zu segments, %.3f ms, %.1f GB/s, %zu wrong\n",
               kind == ZG_CHECK_CRC32 ? "CRC32" : "Adler-32", ns, best, (double)total / best / 1e6, bad);
    }
    cudaEventDestroy(t0), cudaEventDestroy(t1);
    cudaFree(d_segs), cudaFree(d_check);
    free(segs), free(host_p), free(check);
}

/* Throughput of whole batches (uint16 ramps, text and random in turn), chunks of 64 KiB (nvCOMP's advice) and of
 * 1 MiB, 128 MiB a batch; and the checksum kernel alone. */
static void test_throughput(void) {
    const size_t total = (size_t)128 << 20;
    static const size_t chunk_sizes[2] = {(size_t)64 << 10, (size_t)1 << 20};
    for (int c = 0; c < 2; c++) {
        const size_t cs = chunk_sizes[c], n = total / cs;
        size_t *sizes = malloc(n * sizeof *sizes);
        for (size_t i = 0; i < n; i++) sizes[i] = cs;
        batch b;
        batch_make(&b, sizes, n / DATA_KINDS + 1, DATA_KINDS, 0);
        /* level -1: zstd through nvCOMP */
        struct { zg_ge_format f; int level; } runs[] = {{ZG_GE_ZSTD, 0}, {ZG_GE_ZSTD, -1}, {ZG_GE_LZ4, 0},
                                                         {ZG_GE_GZIP, 0}, {ZG_GE_GZIP, 1}, {ZG_GE_GZIP, 5},
                                                         {ZG_GE_GZIP, 6}, {ZG_GE_GZIP, 9}, {ZG_GE_ZLIB, 1},
                                                         {ZG_GE_ZLIB, 6}};
        for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
            g_opts.zstd_nvcomp = runs[r].f == ZG_GE_ZSTD && runs[r].level < 0;
            encoded e;
            const double ms = encode(&b, runs[r].f, runs[r].level, 3, &e);
            if (e.rc != ZGPU_OK) {
                printf("throughput %s level %d: %s\n", zg_gpu_encode_format_name(runs[r].f), runs[r].level,
                       zgpu_last_error());
                encoded_free(&e, b.n);
                continue;
            }
            size_t out = 0, bad = 0;
            for (size_t i = 0; i < b.n; i++) out += e.stored_bytes[i], bad += e.status[i] != 0;
            /* every 16th chunk decoded on the host too */
            for (size_t i = 0; i < b.n; i += 16)
                bad += !host_decodes(runs[r].f, runs[r].level, e.stored[i], e.stored_bytes[i], b.host[i], b.bytes[i]);
            CHECK_EQ_U64(bad, 0);
            printf("throughput %-4s%s level %d, %zu x %zu KiB: %.2f ms, %.2f GB/s, ratio %.2f\n",
                   zg_gpu_encode_format_name(runs[r].f),
                   runs[r].f == ZG_GE_ZSTD ? (g_opts.zstd_nvcomp ? " (nvCOMP)" : " (zgpu)") : "", runs[r].level, b.n,
                   cs >> 10, ms,
                   (double)b.total / ms / 1e6, (double)b.total / (double)out);
            encoded_free(&e, b.n);
        }
        g_opts.zstd_nvcomp = 0;
        if (c == 0) host_throughput(&b);
        if (c == 1) checksum_throughput(&b);
        free(sizes);
        batch_free(&b);
    }
}

int main(void) {
    if (!zgpu_gpu_available()) {
        printf("skipped: no GPU (%s)\n", zgpu_last_error());
        return 77;
    }
    const char *why = NULL;
    if (!zg_nvc_available(&why)) {
        printf("skipped: no nvCOMP (%s)\n", why);
        return 77;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines survive a timeout (compute-sanitizer runs) */
    g_ref = malloc(sizeof *g_ref);
    zg_ze_tables_build(&g_ref->tables);
    const int quick = getenv("ZGPU_TEST_QUICK") != NULL;
    const char *dump = getenv("ZGPU_ENCODE_DUMP");
    if (dump) g_dump = fopen(dump, "wb");
    test_formats(quick);
    if (g_dump) fclose(g_dump);
    test_zstd_cases();
    test_errors();
    if (!quick) test_large();
    if (!quick) test_throughput();
    free(g_ref);
    TEST_MAIN_END();
}
#endif
