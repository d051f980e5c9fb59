/* The GPU Blosc1 encoder (src/gpuencode/blosc_encode.h). Each case encodes a batch of chunks (ramps of items,
 * random bytes, a third random then a ramp, text) at unaligned input and output addresses, then for every chunk:
 *   - the shuffled streams the GPU compressed are zg_blosc_frame_shuffle's, byte for byte;
 *   - the chunk is byte for byte what zg_blosc_frame_build (the host's specification) writes around the same
 *     compressed streams, copied back from the scratch (so block starts, raw streams, plain copies and the header
 *     are the host's), and what c-blosc's blosc_compress_ctx writes where the plan is a plain copy;
 *   - c-blosc's blosc_decompress_ctx gives the data back;
 *   - ramps shrink more than 2:1, random data becomes a plain copy, the mixed chunk has raw and compressed streams.
 * The matrix: typesize 1, 2, 4, 8, 3, 12 x shuffle 0, 1, 2 x lz4, lz4hc, zstd, zlib x clevel 0, 1, 5, 9 (sizes
 * rotating over 70001, 1 MiB + 12345, 3000001 and 256 KiB bytes: short last blocks, sizes no multiple of the
 * typesize); forced block sizes (128, 1000, 4096, 65536); tiny chunks (0 to 129 bytes); 8 MiB chunks; the errors.
 * Then throughput over 1 GiB of 8 MiB chunks (CUDA events; printed, not asserted). ZGPU_TEST_QUICK=1: a smaller
 * matrix and no throughput. Skips (77) without a GPU or nvCOMP, as the other GPU tests do. */
#include "test.h"
#include "zgpu.h"

#ifndef ZGPU_HAVE_CUDA
TEST_MAIN_WITHOUT_CUDA()
#else
#include <blosc.h>
#include <cuda_runtime.h>

#include "gpucodec/nvcomp/nvcomp_lib.h"
#include "gpuencode/blosc_encode.h"
#include "gpuencode/blosc_frame.h"
#include "gpuencode/gpu_encode.h"

static const char *const cname_of[ZG_BLOSC_COMP_N] = {"blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"};

enum { DATA_RAMP, DATA_RANDOM, DATA_MIXED, DATA_TEXT, DATA_KINDS };
static const char *const data_names[DATA_KINDS] = {"ramp", "random", "mixed", "text"};

static uint32_t lcg(uint32_t *x) { return *x = *x * 1664525u + 1013904223u; }

/* Items of `ts` bytes: value k / 3 + seed little-endian (a smooth signal), the bytes above the eighth zero. */
static void fill_ramp(uint8_t *p, size_t n, size_t ts, uint32_t seed) {
    for (size_t i = 0; i < n; i++) {
        const uint64_t v = (uint64_t)(i / ts) / 3 + seed;
        const size_t b = i % ts;
        p[i] = b < 8 ? (uint8_t)(v >> (8 * b)) : 0;
    }
}

static void fill(uint8_t *p, size_t n, size_t ts, int kind, uint32_t seed) {
    static const char *const words[16] = {"lorem ", "ipsum ", "dolor ", "sit ", "amet, ", "consectetur ",
                                          "adipiscing ", "elit; ", "sed ", "do ", "eiusmod ", "tempor ",
                                          "incididunt ", "ut ", "labore ", "magna. "};
    uint32_t x = seed * 2654435761u + 12345;
    if (kind == DATA_RAMP || kind == DATA_MIXED) {
        const size_t r = kind == DATA_MIXED ? n / 3 : 0;
        fill(p, r, ts, DATA_RANDOM, seed);
        fill_ramp(p + r, n - r, ts, seed);
        return;
    }
    for (size_t i = 0; i < n;) {
        lcg(&x);
        if (kind == DATA_RANDOM) {
            p[i++] = (uint8_t)(x >> 24);
        } else {
            for (const char *w = words[x >> 28]; *w && i < n; w++) p[i++] = (uint8_t)*w;
        }
    }
}

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

static void put_le32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}
static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static size_t n_chunks_checked, n_plain, n_raw_streams, n_comp_streams, n_cblosc_same;

/* Encodes n chunks of kinds[i] with prm on the GPU and checks every one (see the top). 1 if all were right. */
static int run_case(const zg_blosc_frame_params *prm, size_t n, const int *kinds, const char *what) {
    zg_gpu_encode_layout lay;
    zgpu_status st = zg_gpu_blosc_encode_layout_for(prm, n, &lay);
    CHECK_MSG(st == ZGPU_OK, "%s: layout: %s", what, zgpu_last_error());
    if (st != ZGPU_OK) return 0;
    zg_gpu_blosc_scratch map;
    CHECK_OK(zg_gpu_blosc_encode_scratch_map(prm, n, &map));
    zg_blosc_frame_plan plan;
    CHECK_OK(zg_blosc_frame_plan_for(prm, &plan));
    CHECK_EQ_U64(lay.slot_bytes, prm->nbytes + 16);
    CHECK_EQ_U64(lay.frame_offset, 0);
    const size_t nb = prm->nbytes;

    /* inputs: 256 bytes apart, plus i % 3 bytes where any alignment is allowed; outputs at odd addresses too */
    uint8_t **host = calloc(n, sizeof *host);
    size_t *at = calloc(n, sizeof *at), pos = 0;
    for (size_t i = 0; i < n; i++) {
        host[i] = malloc(nb + 1);
        fill(host[i], nb, prm->typesize, kinds[i], (uint32_t)(i * 7 + nb));
        pos = align_up(pos, 256) + (lay.in_align == 1 ? i % 3 : 0);
        at[i] = pos;
        pos += nb;
    }
    const size_t pitch = align_up(lay.slot_bytes + 8, 256);
    uint8_t *d_in = NULL, *d_out = NULL, *d_scratch = NULL;
    size_t *d_sizes = NULL;
    int *d_status = NULL;
    CUOK(cudaMalloc((void **)&d_in, pos + 256));
    CUOK(cudaMalloc((void **)&d_out, pitch * n));
    CUOK(cudaMalloc((void **)&d_scratch, lay.scratch_bytes ? lay.scratch_bytes : 256));
    CUOK(cudaMalloc((void **)&d_sizes, n * sizeof *d_sizes));
    CUOK(cudaMalloc((void **)&d_status, n * sizeof *d_status));
    for (size_t i = 0; i < n; i++) CUOK(cudaMemcpy(d_in + at[i], host[i], nb, cudaMemcpyHostToDevice));
    /* garbage everywhere the encoder writes, so that a byte it forgets shows */
    CUOK(cudaMemset(d_out, 0xa5, pitch * n));
    CUOK(cudaMemset(d_scratch, 0x5a, lay.scratch_bytes));
    CUOK(cudaMemset(d_status, 0x7f, n * sizeof *d_status));
    const void **in = malloc(n * sizeof *in);
    void **out = malloc(n * sizeof *out);
    for (size_t i = 0; i < n; i++) in[i] = d_in + at[i], out[i] = d_out + i * pitch + i % 4;
    st = zg_gpu_blosc_encode_batch(prm, in, n, out, lay.slot_bytes, d_sizes, d_status, d_scratch, lay.scratch_bytes,
                                   0);
    CHECK_MSG(st == ZGPU_OK, "%s: batch: %s", what, zgpu_last_error());
    free(in), free(out);
    const cudaError_t ce = cudaDeviceSynchronize();
    CHECK_MSG(ce == cudaSuccess, "%s: %s", what, cudaGetErrorString(ce));
    int all_ok = st == ZGPU_OK && ce == cudaSuccess;

    size_t *sizes = calloc(n, sizeof *sizes);
    int *status = calloc(n, sizeof *status);
    uint8_t *outs = malloc(pitch * n), *scratch = malloc(lay.scratch_bytes + 1);
    if (all_ok) {
        CUOK(cudaMemcpy(sizes, d_sizes, n * sizeof *sizes, cudaMemcpyDeviceToHost));
        CUOK(cudaMemcpy(status, d_status, n * sizeof *status, cudaMemcpyDeviceToHost));
        CUOK(cudaMemcpy(outs, d_out, pitch * n, cudaMemcpyDeviceToHost));
        CUOK(cudaMemcpy(scratch, d_scratch, lay.scratch_bytes, cudaMemcpyDeviceToHost));
        CHECK_OK(zg_gpu_blosc_encode_check(status, n));
    }
    uint8_t *shuffled = malloc(nb + 1), *ref = malloc(nb + 16 + 1), *dec = malloc(nb + 1);
    zg_blosc_frame_stream *streams = calloc(plan.nstreams + 1, sizeof *streams);
    for (size_t i = 0; all_ok && i < n; i++) {
        const uint8_t *chunk = outs + i * pitch + i % 4;
        const size_t m = sizes[i];
        int ok = status[i] == 0 && m >= 16 && m <= lay.slot_bytes;
        CHECK_MSG(ok, "%s chunk %zu: status %d, %zu bytes", what, i, status[i], m);
        if (!ok) {
            all_ok = 0;
            continue;
        }
        zg_blosc_frame_shuffle(&plan, host[i], shuffled);
        /* the GPU's shuffled streams are the host's */
        if (plan.nstreams && !map.direct) {
            size_t bad = 0;
            for (uint32_t j = 0; j < plan.nstreams; j++) {
                uint32_t off, len;
                zg_blosc_frame_span(&plan, j, &off, &len);
                bad += memcmp(scratch + map.shuffled + i * map.chunk_pitch + j * map.stream_pitch, shuffled + off,
                              len) != 0;
            }
            CHECK_MSG(bad == 0, "%s chunk %zu: %zu of %u shuffled streams differ from the host's", what, i, bad,
                      plan.nstreams);
            ok = ok && bad == 0;
        }
        /* the host's frame around the GPU's streams */
        size_t raw = 0;
        for (uint32_t j = 0; j < plan.nstreams; j++) {
            const size_t g = i * plan.nstreams + j;
            const size_t cb = ((const size_t *)(scratch + map.comp_bytes))[g];
            const int cs = ((const int *)(scratch + map.comp_status))[g];
            uint32_t off, len;
            zg_blosc_frame_span(&plan, j, &off, &len);
            if (cs == 0 && cb > map.skip)
                streams[j] = (zg_blosc_frame_stream){scratch + map.slots + g * map.slot_pitch + map.slot_offset +
                                                         map.skip,
                                                     cb - map.skip, 0};
            else
                streams[j] = (zg_blosc_frame_stream){NULL, 0, 1};
            raw += streams[j].raw || streams[j].size >= len;
        }
        size_t wrote = 0;
        int plain = 0;
        CHECK_OK(zg_blosc_frame_build(&plan, host[i], shuffled, streams, plan.nstreams, ref, nb + 16, &wrote, &plain));
        const int same = wrote == m && memcmp(ref, chunk, m) == 0;
        CHECK_MSG(same, "%s chunk %zu (%s): GPU chunk of %zu bytes, host frame of %zu bytes%s", what, i,
                  data_names[kinds[i]], m, wrote, wrote == m ? ", bytes differ" : "");
        ok = ok && same;
        CHECK_EQ_U64(le32(chunk + 12), m);
        CHECK_EQ_U64(!!(chunk[2] & 0x02), plain);
        if (!same && wrote == m)
            for (size_t k = 0; k < m; k++)
                if (ref[k] != chunk[k]) {
                    fprintf(stderr, "  first difference at byte %zu: GPU %02x, host %02x\n", k, chunk[k], ref[k]);
                    break;
                }
        /* c-blosc decodes it */
        memset(dec, 0xa5, nb + 1);
        const int r = blosc_decompress_ctx(chunk, dec, nb + 1, 1);
        const int back = r == (int)nb && memcmp(dec, host[i], nb) == 0;
        CHECK_MSG(back, "%s chunk %zu (%s): blosc_decompress_ctx -> %d of %zu bytes", what, i, data_names[kinds[i]], r,
                  nb);
        ok = ok && back;
        /* a plain-copy plan is c-blosc's own chunk */
        if (plan.plain_copy) {
            const int rn = blosc_compress_ctx(prm->clevel, prm->shuffle, prm->typesize, nb, host[i], ref, nb + 16,
                                              cname_of[prm->compressor], prm->blocksize, 1);
            const int eq = rn == (int)m && memcmp(ref, chunk, m) == 0;
            if (rn >= 0 || prm->compressor != ZG_BLOSC_COMP_SNAPPY) { /* (a c-blosc built without snappy) */
                CHECK_MSG(eq, "%s chunk %zu: blosc_compress_ctx -> %d bytes, GPU %zu", what, i, rn, m);
                n_cblosc_same += eq;
            }
        }
        /* what the data must give: ramps shrink (2:1 byte-shuffled in blocks of 1000 bytes or more), random data is
         * a plain copy, and where a whole block lies in the mixed chunk's random third, its streams are stored raw
         * in a chunk that is no plain copy */
        if (prm->clevel > 0 && !plan.plain_copy && nb >= 4096) {
            if (kinds[i] == DATA_RAMP) {
                CHECK_MSG(!plain && m * 10 < nb * 9, "%s: a ramp of %zu bytes gave %zu", what, nb, m);
                if (prm->shuffle == 1 && plan.blocksize >= 1000)
                    CHECK_MSG(m * 2 < nb, "%s: a byte-shuffled ramp of %zu bytes gave %zu", what, nb, m);
            }
            if (kinds[i] == DATA_RANDOM) CHECK_MSG(plain, "%s: random data, yet not a plain copy", what);
            if (kinds[i] == DATA_MIXED && plan.blocksize <= nb / 3)
                CHECK_MSG(!plain && raw > 0 && raw < plan.nstreams, "%s: mixed data: plain %d, %zu of %u raw", what,
                          plain, raw, plan.nstreams);
        }
        n_chunks_checked++;
        n_plain += plain;
        if (!plain) n_raw_streams += raw, n_comp_streams += plan.nstreams - raw;
        all_ok = all_ok && ok;
    }
    free(streams), free(shuffled), free(ref), free(dec), free(sizes), free(status), free(outs), free(scratch);
    for (size_t i = 0; i < n; i++) free(host[i]);
    free(host), free(at);
    cudaFree(d_in), cudaFree(d_out), cudaFree(d_scratch), cudaFree(d_sizes), cudaFree(d_status);
    return all_ok;
}

static const int comps[4] = {ZG_BLOSC_COMP_LZ4, ZG_BLOSC_COMP_LZ4HC, ZG_BLOSC_COMP_ZSTD, ZG_BLOSC_COMP_ZLIB};

static void test_matrix(int quick) {
    static const size_t typesizes[] = {1, 2, 4, 8, 3, 12};
    static const int clevels[] = {0, 1, 5, 9};
    static const size_t sizes[] = {70001, (1 << 20) + 12345, 3000001, 262144};
    static const int kinds[4] = {DATA_RAMP, DATA_RANDOM, DATA_MIXED, DATA_TEXT};
    size_t cases = 0, bad = 0;
    for (size_t ti = 0; ti < 6; ti++)
        for (int sh = 0; sh < 3; sh++)
            for (int ci = 0; ci < 4; ci++)
                for (int li = 0; li < 4; li++) {
                    if (quick && (ti + (size_t)sh + (size_t)ci + (size_t)li) % 4) continue;
                    zg_blosc_frame_params p = {sizes[(ti + (size_t)sh + (size_t)li) % 4], typesizes[ti], clevels[li],
                                               comps[ci], sh, 0};
                    if (quick && p.nbytes > (1 << 20)) p.nbytes = 70001;
                    char what[160];
                    snprintf(what, sizeof what, "%s clevel %d typesize %zu shuffle %d, %zu bytes",
                             cname_of[p.compressor], p.clevel, p.typesize, p.shuffle, p.nbytes);
                    bad += !run_case(&p, 4, kinds, what);
                    cases++;
                }
    printf("matrix: %zu batches of 4 chunks, %zu wrong\n", cases, bad);
    CHECK_EQ_U64(bad, 0);
}

static void test_forced_blocksize(void) {
    static const size_t forced[] = {128, 1000, 4096, 65536};
    static const int kinds[3] = {DATA_MIXED, DATA_RAMP, DATA_TEXT};
    size_t cases = 0, bad = 0;
    for (int ci = 0; ci < 4; ci++)
        for (size_t fi = 0; fi < 4; fi++)
            for (int sh = 1; sh <= 2; sh++)
                for (size_t ts = 3; ts <= 4; ts++) {
                    const zg_blosc_frame_params p = {300007, ts, 5, comps[ci], sh, forced[fi]};
                    char what[160];
                    snprintf(what, sizeof what, "%s blocksize %zu typesize %zu shuffle %d", cname_of[p.compressor],
                             p.blocksize, ts, sh);
                    bad += !run_case(&p, 3, kinds, what);
                    cases++;
                }
    printf("forced block sizes: %zu batches, %zu wrong\n", cases, bad);
    CHECK_EQ_U64(bad, 0);
}

static void test_tiny(void) {
    static const size_t sizes[] = {0, 1, 7, 100, 127, 128, 129};
    static const int kinds[3] = {DATA_RAMP, DATA_RANDOM, DATA_TEXT};
    size_t cases = 0, bad = 0;
    for (int ci = 0; ci < 4; ci++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (int sh = 0; sh < 3; sh++) {
                const zg_blosc_frame_params p = {sizes[si], 4, 5, comps[ci], sh, 0};
                char what[160];
                snprintf(what, sizeof what, "%s tiny %zu bytes shuffle %d", cname_of[p.compressor], p.nbytes, sh);
                bad += !run_case(&p, 3, kinds, what);
                cases++;
            }
    /* a plan that compresses nothing needs no compressor: blosclz and snappy too */
    for (int c = ZG_BLOSC_COMP_BLOSCLZ; c <= ZG_BLOSC_COMP_SNAPPY; c += ZG_BLOSC_COMP_SNAPPY) {
        zg_blosc_frame_params p = {100, 4, 5, c, 1, 0};
        bad += !run_case(&p, 3, kinds, "tiny, no compressor");
        p.nbytes = 100000, p.clevel = 0;
        bad += !run_case(&p, 3, kinds, "clevel 0, no compressor");
        cases += 2;
    }
    printf("tiny chunks and plain-copy plans: %zu batches, %zu wrong\n", cases, bad);
    CHECK_EQ_U64(bad, 0);
}

static void test_large(void) {
    static const int kinds[3] = {DATA_RAMP, DATA_MIXED, DATA_RANDOM};
    size_t bad = 0, cases = 0;
    for (int ci = 0; ci < 4; ci++)
        for (int sh = 1; sh <= 2; sh++) {
            const zg_blosc_frame_params p = {(size_t)8 << 20, 4, 5, comps[ci], sh, 0};
            char what[160];
            snprintf(what, sizeof what, "%s 8 MiB shuffle %d", cname_of[p.compressor], sh);
            bad += !run_case(&p, 3, kinds, what);
            cases++;
        }
    const zg_blosc_frame_params p = {((size_t)8 << 20) + 5, 8, 9, ZG_BLOSC_COMP_LZ4, 0, 0};
    bad += !run_case(&p, 3, kinds, "lz4 8 MiB + 5 clevel 9 typesize 8 no shuffle");
    cases++;
    printf("8 MiB chunks: %zu batches, %zu wrong\n", cases, bad);
    CHECK_EQ_U64(bad, 0);
}

static void test_errors(void) {
    zg_gpu_encode_layout lay;
    zg_blosc_frame_params p = {100000, 4, 5, ZG_BLOSC_COMP_BLOSCLZ, 1, 0};
    CHECK_STATUS(zg_gpu_blosc_encode_layout_for(&p, 4, &lay), ZGPU_ERR_UNSUPPORTED);
    printf("blosclz: %s\n", zgpu_last_error());
    CHECK(strstr(zgpu_last_error(), "blosclz") != NULL);
    p.compressor = ZG_BLOSC_COMP_SNAPPY;
    CHECK_STATUS(zg_gpu_blosc_encode_layout_for(&p, 4, &lay), ZGPU_ERR_UNSUPPORTED);
    CHECK(strstr(zgpu_last_error(), "snappy") != NULL);
    /* a forced block of 32 MiB: its zstd stream was over nvCOMP's 16 MiB; zgpu's encoder takes it */
    p = (zg_blosc_frame_params){(size_t)64 << 20, 4, 5, ZG_BLOSC_COMP_ZSTD, 1, (size_t)32 << 20};
    CHECK_OK(zg_gpu_blosc_encode_layout_for(&p, 1, &lay));
    p = (zg_blosc_frame_params){1000, 0, 5, ZG_BLOSC_COMP_LZ4, 1, 0};
    CHECK_STATUS(zg_gpu_blosc_encode_layout_for(&p, 1, &lay), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(zg_gpu_blosc_encode_layout_for(NULL, 1, &lay), ZGPU_ERR_INVALID_ARGUMENT);

    /* bad batches: nothing launched */
    p = (zg_blosc_frame_params){65536, 4, 5, ZG_BLOSC_COMP_LZ4, 0, 0}; /* unshuffled: streams read in place */
    CHECK_OK(zg_gpu_blosc_encode_layout_for(&p, 2, &lay));
    printf("lz4 unshuffled layout for 2 x 64 KiB: in align %zu, slot %zu, scratch %zu\n", lay.in_align,
           lay.slot_bytes, lay.scratch_bytes);
    uint8_t *d = NULL, *scratch = NULL;
    CUOK(cudaMalloc((void **)&d, (size_t)1 << 20));
    CUOK(cudaMalloc((void **)&scratch, lay.scratch_bytes));
    size_t *d_sizes = (size_t *)(d + 512 * 1024);
    int *d_status = (int *)(d + 513 * 1024);
    const void *in[2] = {d, d + 65536};
    void *out[2] = {d + 131072, d + 131072 + 65552};
    CHECK_STATUS(zg_gpu_blosc_encode_batch(&p, in, 2, out, lay.slot_bytes - 1, d_sizes, d_status, scratch,
                                           lay.scratch_bytes, 0),
                 ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(zg_gpu_blosc_encode_batch(&p, in, 2, out, lay.slot_bytes, d_sizes, d_status, scratch,
                                           lay.scratch_bytes - 256, 0),
                 ZGPU_ERR_INVALID_ARGUMENT);
    printf("scratch too small: %s\n", zgpu_last_error());
    CHECK_STATUS(zg_gpu_blosc_encode_batch(&p, in, 2, out, lay.slot_bytes, d_sizes, d_status, scratch + 16,
                                           lay.scratch_bytes, 0),
                 ZGPU_ERR_INVALID_ARGUMENT);
    if (lay.in_align > 1) {
        const void *odd[2] = {d + 1, d + 65536};
        CHECK_STATUS(zg_gpu_blosc_encode_batch(&p, odd, 2, out, lay.slot_bytes, d_sizes, d_status, scratch,
                                               lay.scratch_bytes, 0),
                     ZGPU_ERR_INVALID_ARGUMENT);
        printf("misaligned: %s\n", zgpu_last_error());
    }
    CHECK_OK(zg_gpu_blosc_encode_batch(&p, in, 0, out, lay.slot_bytes, d_sizes, d_status, scratch, lay.scratch_bytes,
                                       0));
    CUOK(cudaDeviceSynchronize());
    cudaFree(d), cudaFree(scratch);
    /* the check names the first chunk that failed */
    const int sts[3] = {0, 5, 7};
    CHECK_STATUS(zg_gpu_blosc_encode_check(sts, 3), ZGPU_ERR_CUDA);
    CHECK(strstr(zgpu_last_error(), "chunk 1") != NULL);
    CHECK_OK(zg_gpu_blosc_encode_check(sts, 1));
}

/* gpu_encode.h's encoder alone over the streams a blosc batch left shuffled in its scratch: what the shuffle, the
 * framing and the copy add to nvCOMP's time (blosc_ms). */
static void nvcomp_alone(const zg_blosc_frame_params *p, size_t n, uint8_t *d_blosc_scratch, cudaEvent_t t0,
                         cudaEvent_t t1, float blosc_ms) {
    zg_gpu_blosc_scratch map;
    zg_blosc_frame_plan plan;
    CHECK_OK(zg_gpu_blosc_encode_scratch_map(p, n, &map));
    CHECK_OK(zg_blosc_frame_plan_for(p, &plan));
    if (map.direct || !plan.nstreams) return;
    const zg_ge_format f = p->compressor == ZG_BLOSC_COMP_ZSTD ? ZG_GE_ZSTD
                           : p->compressor == ZG_BLOSC_COMP_ZLIB ? ZG_GE_ZLIB : ZG_GE_LZ4;
    const size_t ns = n * plan.nstreams;
    const void **in = malloc(ns * sizeof *in);
    size_t *bytes = malloc(ns * sizeof *bytes), max = 0;
    void **out = malloc(ns * sizeof *out);
    zg_gpu_encode_layout lay;
    for (size_t k = 0; k < ns; k++) {
        uint32_t off, len;
        zg_blosc_frame_span(&plan, (uint32_t)(k % plan.nstreams), &off, &len);
        in[k] = d_blosc_scratch + map.shuffled + k / plan.nstreams * map.chunk_pitch +
                k % plan.nstreams * map.stream_pitch;
        bytes[k] = len;
        if (len > max) max = len;
    }
    uint8_t *d_slots = NULL, *d_scratch = NULL, *d_meta = NULL;
    if (zg_gpu_encode_layout_for(f, p->clevel, NULL, ns, max, n * p->nbytes, &lay) == ZGPU_OK &&
        cudaMalloc((void **)&d_slots, ns * align_up(lay.slot_bytes, 256)) == cudaSuccess &&
        cudaMalloc((void **)&d_scratch, lay.scratch_bytes) == cudaSuccess &&
        cudaMalloc((void **)&d_meta, ns * (sizeof(size_t) + sizeof(int))) == cudaSuccess) {
        for (size_t k = 0; k < ns; k++) out[k] = d_slots + k * align_up(lay.slot_bytes, 256);
        float best = 1e30f;
        for (int rep = 0; rep < 3; rep++) {
            cudaEventRecord(t0, 0);
            CHECK_OK(zg_gpu_encode_batch(f, p->clevel, NULL, in, bytes, ns, out, align_up(lay.slot_bytes, 256),
                                         (size_t *)d_meta, (int *)(d_meta + ns * sizeof(size_t)), d_scratch,
                                         lay.scratch_bytes, 0));
            cudaEventRecord(t1, 0);
            CUOK(cudaEventSynchronize(t1));
            float ms = 0;
            cudaEventElapsedTime(&ms, t0, t1);
            if (ms < best) best = ms;
        }
        printf("  of which nvCOMP (gpu_encode.h's batch alone over the same %zu shuffled streams): %.2f ms; shuffle, "
               "framing and copy: %.2f ms\n",
               ns, best, blosc_ms - best);
    } else {
        printf("  (no room to time nvCOMP alone)\n");
        cudaGetLastError();
    }
    cudaFree(d_slots), cudaFree(d_scratch), cudaFree(d_meta);
    free(in), free(bytes), free(out);
}

/* 128 chunks of 8 MiB (1 GiB): a uint32 signal with a little noise, four distinct chunks repeated. */
static void test_throughput(void) {
    const size_t cs = (size_t)8 << 20, n = 128;
    uint8_t *h = malloc(cs);
    uint8_t *d_in = NULL, *d_out = NULL, *d_scratch = NULL;
    size_t *d_sizes = NULL;
    int *d_status = NULL;
    CUOK(cudaMalloc((void **)&d_in, cs * n));
    CUOK(cudaMalloc((void **)&d_out, (cs + 256) * n));
    CUOK(cudaMalloc((void **)&d_sizes, n * sizeof *d_sizes));
    CUOK(cudaMalloc((void **)&d_status, n * sizeof *d_status));
    for (size_t c = 0; c < 4; c++) {
        uint32_t x = (uint32_t)c + 1;
        for (size_t i = 0; i < cs / 4; i++) {
            const uint32_t v = (uint32_t)(i / 7 % 5000) * 3 + (lcg(&x) >> 30) + (uint32_t)c * 1000;
            put_le32(h + 4 * i, v);
        }
        for (size_t k = c; k < n; k += 4) CUOK(cudaMemcpy(d_in + k * cs, h, cs, cudaMemcpyHostToDevice));
    }
    const void **in = malloc(n * sizeof *in);
    void **out = malloc(n * sizeof *out);
    for (size_t i = 0; i < n; i++) in[i] = d_in + i * cs, out[i] = d_out + i * (cs + 256);
    struct { int comp, shuffle; } runs[] = {{ZG_BLOSC_COMP_LZ4, 1}, {ZG_BLOSC_COMP_LZ4, 2}, {ZG_BLOSC_COMP_LZ4, 0},
                                            {ZG_BLOSC_COMP_ZSTD, 1}, {ZG_BLOSC_COMP_ZLIB, 1}};
    cudaEvent_t t0, t1;
    cudaEventCreate(&t0), cudaEventCreate(&t1);
    size_t *sizes = malloc(n * sizeof *sizes);
    int *status = malloc(n * sizeof *status);
    uint8_t *chunk = malloc(cs + 16), *dec = malloc(cs);
    for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
        const zg_blosc_frame_params p = {cs, 4, 5, runs[r].comp, runs[r].shuffle, 0};
        zg_gpu_encode_layout lay;
        CHECK_OK(zg_gpu_blosc_encode_layout_for(&p, n, &lay));
        if (cudaMalloc((void **)&d_scratch, lay.scratch_bytes) != cudaSuccess) {
            printf("throughput %s: no room for %zu bytes of scratch\n", cname_of[p.compressor], lay.scratch_bytes);
            cudaGetLastError();
            continue;
        }
        float best = 1e30f;
        zgpu_status st = ZGPU_OK;
        for (int rep = 0; rep < 4 && st == ZGPU_OK; rep++) {
            cudaEventRecord(t0, 0);
            st = zg_gpu_blosc_encode_batch(&p, in, n, out, cs + 256, d_sizes, d_status, d_scratch, lay.scratch_bytes,
                                           0);
            cudaEventRecord(t1, 0);
            CUOK(cudaEventSynchronize(t1));
            float ms = 0;
            cudaEventElapsedTime(&ms, t0, t1);
            if (rep && ms < best) best = ms; /* the first run loads nvCOMP's kernels */
        }
        CHECK_OK(st);
        CUOK(cudaMemcpy(sizes, d_sizes, n * sizeof *sizes, cudaMemcpyDeviceToHost));
        CUOK(cudaMemcpy(status, d_status, n * sizeof *status, cudaMemcpyDeviceToHost));
        CHECK_OK(zg_gpu_blosc_encode_check(status, n));
        size_t total = 0, bad = 0;
        for (size_t i = 0; i < n; i++) total += sizes[i];
        for (size_t i = 0; i < n; i += 9) { /* a sample decoded by c-blosc */
            CUOK(cudaMemcpy(chunk, out[i], sizes[i], cudaMemcpyDeviceToHost));
            CUOK(cudaMemcpy(h, in[i], cs, cudaMemcpyDeviceToHost));
            bad += blosc_decompress_ctx(chunk, dec, cs, 1) != (int)cs || memcmp(dec, h, cs) != 0;
        }
        CHECK_EQ_U64(bad, 0);
        printf("throughput %-5s shuffle %d, %zu x 8 MiB (clevel 5, typesize 4): %.2f ms, %.1f GB/s, ratio %.2f, "
               "scratch %.2f GiB\n",
               cname_of[p.compressor], p.shuffle, n, best, (double)(cs * n) / best / 1e6,
               (double)(cs * n) / (double)total, (double)lay.scratch_bytes / (1 << 30));
        if (runs[r].shuffle == 1) nvcomp_alone(&p, n, d_scratch, t0, t1, best);
        cudaFree(d_scratch);
    }
    cudaEventDestroy(t0), cudaEventDestroy(t1);
    free(sizes), free(status), free(chunk), free(dec), free(h), free(in), free(out);
    cudaFree(d_in), cudaFree(d_out), cudaFree(d_sizes), cudaFree(d_status);
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
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines survive a timeout */
    const int quick = getenv("ZGPU_TEST_QUICK") != NULL;
    test_errors();
    test_tiny();
    test_forced_blocksize();
    test_matrix(quick);
    if (!quick) test_large();
    printf("%zu chunks checked: %zu plain copies; in the others %zu streams compressed, %zu raw; %zu plain copies "
           "equal to c-blosc's\n",
           n_chunks_checked, n_plain, n_comp_streams, n_raw_streams, n_cblosc_same);
    if (!quick) test_throughput();
    TEST_MAIN_END();
}
#endif
