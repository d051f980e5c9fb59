/* zgpu's GPU decoders of TIFF tiles (src/gpucodec/lzw/, src/gpucodec/packbits/) and the predictor stages
 * (src/gpucodec/post/: horizontal and floating point) against the CPU references: LZW streams of random, constant,
 * ramp and 16-bit image data from the test encoder (every width switch, ClearCodes mid-stream, KwKwK, a table full
 * without a ClearCode, no EOI, padding) and from the host codec's encoder, one batch at odd offsets; damaged streams
 * (cut, bits flipped, sizes that lie) give the reference's verdict, and nothing is written outside a stream's
 * output (guard bytes around each); the same batch through the segmented path (slots by size, and forced to 1, 2, 3
 * and 64 a stream). PackBits the same; the predictors for every element size, samples a pixel 1 to
 * 33 and a short last row. The adapters through the registry. ZGPU_TEST_QUICK=1 keeps it small (compute-sanitizer).
 * Skips (77) without a GPU. */
#include "test.h"
#include "zgpu.h"

#ifndef ZGPU_HAVE_CUDA
TEST_MAIN_WITHOUT_CUDA()
#else
#include <cuda_runtime.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec/codec.h"
#include "codec/tiff_lzw.h"
#include "common/buf.h"
#include "gpucodec/gpu_decoder.h"
#include "gpucodec/lzw/lzw_check.h"
#include "gpucodec/lzw/lzw_kernels.h"
#include "gpucodec/packbits/packbits_check.h"
#include "gpucodec/packbits/packbits_kernels.h"
#include "gpucodec/packbits/packbits_rules.h"
#include "gpucodec/post/post_kernels.h"
#include "tiff_gpu_cases.h"

static int quick;
enum { GUARD = 64 };

typedef struct stream {
    uint8_t *c; /* owned */
    size_t cn, expected;
    const uint8_t *want; /* valid streams: what it decodes to; NULL: compare with the reference */
    char what[96];
} stream;

typedef struct batch {
    stream *s;
    size_t n, cap;
} batch;

static void add(batch *b, const uint8_t *c, size_t cn, size_t expected, const uint8_t *want, const char *what) {
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->s = realloc(b->s, b->cap * sizeof *b->s);
    }
    stream *s = &b->s[b->n++];
    s->c = malloc(cn ? cn : 1);
    memcpy(s->c, c, cn);
    s->cn = cn;
    s->expected = expected;
    s->want = want;
    snprintf(s->what, sizeof s->what, "%s", what);
}

static void batch_free(batch *b) {
    for (size_t i = 0; i < b->n; i++) free(b->s[i].c);
    free(b->s);
    memset(b, 0, sizeof *b);
}

typedef cudaError_t (*launch_fn)(const void *const *, const size_t *, void *const *, const size_t *, size_t *, int *,
                                 size_t, cudaStream_t);

/* Decodes the batch in one launch; out[i] (expected bytes), status[i], actual[i]; checks the guard bytes. */
static void run(const batch *b, launch_fn launch, uint8_t **out, int *status, size_t *actual) {
    const size_t n = b->n;
    size_t in_total = 64, out_total = GUARD;
    for (size_t i = 0; i < n; i++) in_total += b->s[i].cn + 3, out_total += b->s[i].expected + GUARD + 1;
    uint8_t *h = calloc(in_total, 1), *d_in, *d_out;
    const void **in_p = malloc(n * sizeof *in_p);
    void **out_p = malloc(n * sizeof *out_p);
    size_t *in_n = malloc(n * sizeof *in_n), *out_n = malloc(n * sizeof *out_n), *at = malloc(n * sizeof *at);
    CUOK(cudaMalloc((void **)&d_in, in_total));
    CUOK(cudaMalloc((void **)&d_out, out_total));
    CUOK(cudaMemset(d_out, 0xa5, out_total));
    size_t pos = 0, opos = GUARD;
    for (size_t i = 0; i < n; i++) {
        pos += 1 + i % 3; /* odd offsets */
        memcpy(h + pos, b->s[i].c, b->s[i].cn);
        in_p[i] = d_in + pos;
        in_n[i] = b->s[i].cn;
        pos += b->s[i].cn;
        at[i] = opos + (i & 1); /* odd output addresses too */
        out_p[i] = d_out + at[i];
        out_n[i] = b->s[i].expected;
        opos += b->s[i].expected + GUARD + 1;
    }
    CUOK(cudaMemcpy(d_in, h, in_total, cudaMemcpyHostToDevice));
    uint8_t *A;
    CUOK(cudaMalloc((void **)&A, n * 48 + 64));
    const void **d_inp = (const void **)A;
    size_t *d_inn = (size_t *)(A + 8 * n), *d_outn = (size_t *)(A + 24 * n), *d_act = (size_t *)(A + 32 * n);
    void **d_outp = (void **)(A + 16 * n);
    int *d_st = (int *)(A + 40 * n);
    CUOK(cudaMemcpy(d_inp, in_p, 8 * n, cudaMemcpyHostToDevice));
    CUOK(cudaMemcpy(d_inn, in_n, 8 * n, cudaMemcpyHostToDevice));
    CUOK(cudaMemcpy(d_outp, out_p, 8 * n, cudaMemcpyHostToDevice));
    CUOK(cudaMemcpy(d_outn, out_n, 8 * n, cudaMemcpyHostToDevice));
    CUOK(cudaMemset(d_st, 0x7f, 4 * n));
    CUOK(launch(d_inp, d_inn, d_outp, d_outn, d_act, d_st, n, 0));
    CUOK(cudaDeviceSynchronize());
    uint8_t *ho = malloc(out_total);
    CUOK(cudaMemcpy(ho, d_out, out_total, cudaMemcpyDeviceToHost));
    CUOK(cudaMemcpy(status, d_st, 4 * n, cudaMemcpyDeviceToHost));
    CUOK(cudaMemcpy(actual, d_act, 8 * n, cudaMemcpyDeviceToHost));
    /* the guards: nothing before, between or after the outputs is written */
    size_t g = 0;
    for (size_t i = 0; i < n; i++) {
        for (; g < at[i]; g++) CHECK_MSG(ho[g] == 0xa5, "%s: byte %zu before its output written", b->s[i].what, at[i] - g);
        out[i] = malloc(b->s[i].expected + 1);
        memcpy(out[i], ho + at[i], b->s[i].expected);
        g = at[i] + b->s[i].expected;
    }
    for (; g < out_total; g++) CHECK_MSG(ho[g] == 0xa5, "byte %zu past the last output written", g);
    free(ho);
    cudaFree(A);
    cudaFree(d_in);
    cudaFree(d_out);
    free(h);
    free(in_p);
    free(out_p);
    free(in_n);
    free(out_n);
    free(at);
}

/* The batch on the GPU against ref (the reference decoder: its status; out NULL to check only). */
static void compare(const batch *b, launch_fn launch, int (*ref)(const uint8_t *, size_t, size_t, uint8_t *),
                    const char *(*text)(int)) {
    uint8_t **out = calloc(b->n, sizeof *out);
    int *status = malloc(b->n * sizeof *status);
    size_t *actual = malloc(b->n * sizeof *actual);
    run(b, launch, out, status, actual);
    size_t bad = 0;
    for (size_t i = 0; i < b->n && bad < 20; i++) {
        const stream *s = &b->s[i];
        uint8_t *want = malloc(s->expected + 1);
        const int e = ref(s->c, s->cn, s->expected, want);
        const int ok = (e == 0) == (status[i] == 0);
        CHECK_MSG(ok, "%s: GPU %s (%d), reference %s", s->what, text(status[i]), status[i], text(e));
        bad += !ok;
        if (!e && !status[i]) {
            const uint8_t *w = s->want ? s->want : want;
            size_t first = 0;
            while (first < s->expected && out[i][first] == w[first]) first++;
            CHECK_MSG(first == s->expected, "%s: byte %zu of %zu differs", s->what, first, s->expected);
            CHECK_EQ_U64(actual[i], s->expected);
            bad += first != s->expected;
        } else if (status[i]) {
            CHECK_EQ_U64(actual[i], 0);
        }
        free(want);
        free(out[i]);
        out[i] = NULL;
    }
    for (size_t i = 0; i < b->n; i++) free(out[i]); /* (those after 20 failures) */
    free(out);
    free(status);
    free(actual);
}

static uint16_t r_code[ZG_LZW_SEG_CODES], r_len[ZG_LZW_SEG_CODES];
static uint8_t r_first[ZG_LZW_SEG_CODES];
static int lzw_ref(const uint8_t *p, size_t n, size_t expected, uint8_t *out) {
    uint64_t bit;
    size_t op;
    return zg_lzw_walk_with(p, n, expected, out, &bit, &op, r_code, r_len, r_first);
}
static int pb_ref(const uint8_t *p, size_t n, size_t expected, uint8_t *out) {
    size_t ip, op;
    return zg_pb_walk(p, n, expected, out, &ip, &op);
}

/* The segmented path as a launch_fn: slots from the largest stream (seg_slots 0) or forced (few: streams of more
 * segments decode their rest serially from the open last slot). */
static size_t seg_slots;
static cudaError_t seg_launch(const void *const *in, const size_t *in_bytes, void *const *out, const size_t *out_bytes,
                              size_t *actual, int *status, size_t n, cudaStream_t s) {
    size_t *h = malloc(n * sizeof *h), max_in = 0;
    CUOK(cudaMemcpy(h, in_bytes, n * sizeof *h, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) max_in = h[i] > max_in ? h[i] : max_in;
    free(h);
    const size_t slots = seg_slots ? seg_slots : zg_lzw_seg_slots(max_in);
    void *scr;
    CUOK(cudaMalloc(&scr, zg_lzw_seg_scratch_bytes(n, slots)));
    CUOK(cudaMemset(scr, 0xa5, zg_lzw_seg_scratch_bytes(n, slots))); /* (nothing may be read unwritten) */
    const cudaError_t e = zg_k_lzw_decode_seg_launch(in, in_bytes, out, out_bytes, actual, status, n, slots, scr, s);
    CUOK(cudaStreamSynchronize(s));
    CUOK(cudaFree(scr));
    return e;
}

static void test_lzw(void) {
    batch b = {0};
    static const size_t sizes[] = {1, 2, 33, 255, 4096, 65536, 131072, 262144, 524288};
    static const zt_lzw_opts opts[] = {
        {0, 0, 0, 0, 0},   {0, 1, 0, 0, 0},   {0, 0, 1, 0, 0},   {0, 0, 0, 1, 0},    {0, 0, 0, 0, 9},
        {1, 0, 0, 0, 0},   {31, 0, 0, 0, 0},  {32, 0, 0, 0, 0},  {253, 0, 0, 0, 0},  {254, 0, 0, 0, 0},
        {766, 0, 0, 0, 0}, {1790, 0, 0, 0, 0}, {1791, 0, 0, 0, 0}, {3000, 1, 0, 1, 3},
    };
    const size_t n_sizes = quick ? 6 : sizeof sizes / sizeof *sizes;
    uint8_t **data = calloc(n_sizes * ZT_KINDS, sizeof *data);
    char what[96];
    for (size_t si = 0; si < n_sizes; si++) {
        const size_t n = sizes[si];
        uint8_t *s = malloc(zt_lzw_bound(n, 16));
        for (int kind = 0; kind < ZT_KINDS; kind++) {
            uint8_t *d = data[si * ZT_KINDS + kind] = malloc(n);
            zt_fill(d, n, kind, si + 1, 256, 1);
            for (size_t oi = 0; oi < sizeof opts / sizeof *opts; oi++) {
                if ((n > 70000 || quick) && oi % 4) continue;
                const size_t sn = zt_lzw_encode(d, n, &opts[oi], s, zt_lzw_bound(n, 16));
                snprintf(what, sizeof what, "LZW %s %zu bytes, options %zu", zt_kind_name[kind], n, oi);
                add(&b, s, sn, n, d, what);
            }
            zg_buf h = ZG_BUF_INIT;
            CHECK_OK(zg_tiff_lzw_encode(d, n, &h, 0));
            snprintf(what, sizeof what, "LZW %s %zu bytes, host encoder", zt_kind_name[kind], n);
            add(&b, h.data, h.size, n, d, what);
            /* damaged: cut, a bit flipped, bytes replaced, sizes that lie */
            uint64_t seed = si * 31 + (uint64_t)kind;
            for (int trial = 0; trial < (quick ? 5 : 20); trial++) {
                uint8_t *bad = malloc(h.size);
                memcpy(bad, h.data, h.size);
                size_t bn = h.size, want = n;
                switch (trial % 5) {
                case 0: bn = (size_t)(zt_rng(&seed) % h.size); break;
                case 1: bad[zt_rng(&seed) % h.size] ^= (uint8_t)(1u << (zt_rng(&seed) & 7)); break;
                case 2:
                    for (int j = 0; j < 3; j++) bad[zt_rng(&seed) % h.size] = (uint8_t)zt_rng(&seed);
                    break;
                case 3: want = n + 1 + zt_rng(&seed) % 64; break;
                default: want = zt_rng(&seed) % n; break;
                }
                snprintf(what, sizeof what, "LZW %s %zu bytes, damaged %d", zt_kind_name[kind], n, trial);
                add(&b, bad, bn, want, NULL, what);
                free(bad);
            }
            zg_buf_free(&h);
        }
        free(s);
    }
    /* an empty stream, and one of nothing at all */
    static const uint8_t empty[] = {0x80, 0x00, 0x40};
    add(&b, empty, 3, 0, NULL, "LZW ClearCode, EOI");
    add(&b, empty, 0, 5, NULL, "LZW no bytes");
    printf("LZW: %zu streams\n", b.n);
    compare(&b, zg_k_lzw_decode_launch, lzw_ref, zg_lzw_error_text);
    static const size_t forced[] = {0, 1, 2, 3, 64};
    for (size_t f = 0; f < sizeof forced / sizeof *forced; f++) {
        if (quick && f % 2) continue;
        printf("LZW segmented, %zu slots a stream%s\n", forced[f], forced[f] ? "" : " (by size)");
        seg_slots = forced[f];
        compare(&b, seg_launch, lzw_ref, zg_lzw_error_text);
    }
    seg_slots = 0;
    CHECK(zg_k_lzw_decode_seg_launch(NULL, NULL, NULL, NULL, NULL, NULL, 1, 0, NULL, 0) == cudaErrorInvalidValue);
    batch_free(&b);
    for (size_t i = 0; i < n_sizes * ZT_KINDS; i++) free(data[i]);
    free(data);
}

static void test_packbits(void) {
    batch b = {0};
    static const size_t sizes[] = {1, 7, 128, 129, 4096, 131072};
    const size_t n_sizes = quick ? 4 : sizeof sizes / sizeof *sizes;
    uint8_t **data = calloc(n_sizes * ZT_KINDS, sizeof *data);
    char what[96];
    for (size_t si = 0; si < n_sizes; si++) {
        const size_t n = sizes[si];
        uint8_t *s = malloc(2 * n + 64);
        for (int kind = 0; kind < ZT_KINDS; kind++) {
            uint8_t *d = data[si * ZT_KINDS + kind] = malloc(n);
            zt_fill(d, n, kind, si + 5, 128, 0);
            for (unsigned noop = 0; noop < 2; noop++) {
                const size_t sn = zt_packbits_encode(d, n, s, noop * 3);
                snprintf(what, sizeof what, "PackBits %s %zu bytes, no-ops %u", zt_kind_name[kind], n, noop);
                add(&b, s, sn, n, d, what);
                uint64_t seed = si * 7 + (uint64_t)kind;
                for (int trial = 0; trial < (quick ? 3 : 10); trial++) {
                    uint8_t *bad = malloc(sn);
                    memcpy(bad, s, sn);
                    size_t bn = sn, want = n;
                    switch (trial % 4) {
                    case 0: bn = (size_t)(zt_rng(&seed) % sn); break;
                    case 1: bad[zt_rng(&seed) % sn] = (uint8_t)zt_rng(&seed); break;
                    case 2: want = n + 1 + zt_rng(&seed) % 200; break;
                    default: want = zt_rng(&seed) % n; break;
                    }
                    snprintf(what, sizeof what, "PackBits %s %zu bytes, damaged %d", zt_kind_name[kind], n, trial);
                    add(&b, bad, bn, want, NULL, what);
                    free(bad);
                }
            }
        }
        free(s);
    }
    printf("PackBits: %zu streams\n", b.n);
    compare(&b, zg_k_packbits_decode_launch, pb_ref, zg_packbits_error_text);
    batch_free(&b);
    for (size_t i = 0; i < n_sizes * ZT_KINDS; i++) free(data[i]);
    free(data);
}

/* The predictor stages: items of rows (the last one short in some) for each element size and samples a pixel. */
static void test_predictors(void) {
    static const unsigned sizes[] = {1, 2, 4, 8}, samples[] = {1, 2, 3, 4, 33};
    static const size_t widths[] = {256, 7, 100, 2500}; /* 2500: rows of several warp steps */
    uint64_t seed = 9;
    for (int fp = 0; fp < 2; fp++)
        for (int si = fp; si < 4; si++)
            for (int sa = 0; sa < 5; sa++)
                for (int wi = 0; wi < 4; wi++) {
                    const unsigned es = sizes[si], s = samples[sa];
                    const size_t row = widths[wi] * s, n_items = 5;
                    size_t nb[5], total = 0;
                    for (size_t i = 0; i < n_items; i++) {
                        nb[i] = row * es * (1 + i * (quick ? 1 : 7)) + (i == 3 ? es * s * 2 : 0); /* item 3: short row */
                        total += nb[i] + 256;
                    }
                    uint8_t *h = malloc(total), *want = malloc(total), *got = malloc(total), *tmp = malloc(total);
                    for (size_t i = 0; i < total; i++) h[i] = (uint8_t)zt_rng(&seed);
                    memcpy(tmp, h, total);
                    uint8_t *d_a, *d_b;
                    CUOK(cudaMalloc((void **)&d_a, total));
                    CUOK(cudaMalloc((void **)&d_b, total));
                    CUOK(cudaMemcpy(d_a, h, total, cudaMemcpyHostToDevice));
                    CUOK(cudaMemset(d_b, 0xa5, total));
                    zg_k_buf bufs[5];
                    zg_k_copy copies[5];
                    size_t off = 0, max_n = 0;
                    memcpy(want, h, total);
                    for (size_t i = 0; i < n_items; i++) {
                        bufs[i] = (zg_k_buf){d_a + off, nb[i]};
                        copies[i] = (zg_k_copy){d_a + off, d_b + off, nb[i]};
                        if (fp) zt_pred3(tmp + off, want + off, nb[i], es, row, s, 1);
                        else zt_pred2(want + off, nb[i], es, row, s, 1);
                        max_n = nb[i] > max_n ? nb[i] : max_n;
                        off += nb[i] + 256;
                    }
                    void *d_items;
                    CUOK(cudaMalloc(&d_items, sizeof copies));
                    CUOK(cudaMemcpy(d_items, fp ? (void *)copies : (void *)bufs, fp ? sizeof copies : sizeof bufs,
                                    cudaMemcpyHostToDevice));
                    if (fp) CUOK(zg_k_row_float_launch(d_items, n_items, max_n, (int)es, (uint32_t)row, s, 0));
                    else CUOK(zg_k_row_delta_launch(d_items, n_items, max_n, (int)es, (uint32_t)row, s, 0));
                    CUOK(cudaDeviceSynchronize());
                    CUOK(cudaMemcpy(got, fp ? d_b : d_a, total, cudaMemcpyDeviceToHost));
                    off = 0;
                    for (size_t i = 0; i < n_items; i++) {
                        size_t first = 0;
                        while (first < nb[i] && got[off + first] == want[off + first]) first++;
                        CHECK_MSG(first == nb[i], "predictor %d, %u bytes, %u samples, row %zu, item %zu: byte %zu of %zu",
                                  fp ? 3 : 2, es, s, row, i, first, nb[i]);
                        if (fp)
                            for (size_t g = nb[i]; g < nb[i] + 256; g++)
                                CHECK_MSG(got[off + g] == 0xa5, "predictor 3: byte %zu past item %zu written", g, i);
                        off += nb[i] + 256;
                    }
                    cudaFree(d_items);
                    cudaFree(d_a);
                    cudaFree(d_b);
                    free(h);
                    free(want);
                    free(got);
                    free(tmp);
                }
    /* sizes the kernels do not take */
    CHECK(zg_k_row_delta_launch(NULL, 1, 16, 3, 4, 1, 0) == cudaErrorInvalidValue);
    CHECK(zg_k_row_float_launch(NULL, 1, 16, 1, 4, 1, 0) == cudaErrorInvalidValue);
    CHECK(zg_k_row_delta_launch(NULL, 1, 16, 2, 0, 1, 0) == cudaErrorInvalidValue);
    (void)cudaGetLastError();
}

/* The decoders as the driver finds them: picked for their stored formats, their messages. */
static void test_registry(void) {
    zgpu_tuning t;
    memset(&t, 0, sizeof t);
    const zg_gpu_decoder *d = zg_gpu_pick(&t, ZG_GPU_FORMAT_TIFF_LZW, ZG_GPU_STREAM_LZW, 0);
    CHECK(d && strcmp(d->name, "LZW") == 0);
    const zg_gpu_container *c = zg_gpu_container_of(ZG_GPU_FORMAT_TIFF_LZW);
    CHECK(c && c->stream == ZG_GPU_STREAM_LZW);
    char buf[200];
    if (d) {
        d->error_text(ZG_LZW_E_CODE, 0, buf, sizeof buf);
        CHECK_STR(buf, "GPU LZW decoding failed: a code refers to a dictionary entry not yet made");
        static const uint8_t old[] = {0x00, 0x01, 0x02, 0x03};
        CHECK(d->check(NULL, old, sizeof old, 100, 0) != 0); /* old-style: the host */
    }
    d = zg_gpu_pick(&t, ZG_GPU_FORMAT_PACKBITS, ZG_GPU_STREAM_PACKBITS, 0);
    CHECK(d && strcmp(d->name, "PackBits") == 0);
    if (d) {
        d->error_text(ZG_PB_E_TRUNC, 0, buf, sizeof buf);
        CHECK_STR(buf, "GPU PackBits decoding failed: a run is cut off by the stream's end");
    }
    c = zg_gpu_container_of(ZG_GPU_FORMAT_PACKBITS);
    CHECK(c && c->stream == ZG_GPU_STREAM_PACKBITS);
}

/* ---- end to end: arrays whose chains hold the TIFF codecs, read into device memory through the pipeline (route.c,
 * launch.c: the decoders and the predictor stages), against host reads; a cut chunk fails naming chunk and codec */
static char tmpdir[256];

typedef struct array_case {
    const char *name, *dtype, *codecs;
    uint64_t shape[3], chunk[3];
    int ndim, isz;
} array_case;

static void read_case(zgpu_context *ctx, const array_case *c, const char *codec_word) {
    char meta[1400], path[400];
    int pos = snprintf(meta, sizeof meta, "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [");
    for (int d = 0; d < c->ndim; d++) pos += snprintf(meta + pos, sizeof meta - (size_t)pos, "%s%llu", d ? ", " : "", (unsigned long long)c->shape[d]);
    pos += snprintf(meta + pos, sizeof meta - (size_t)pos, "], \"data_type\": \"%s\", \"chunk_grid\": {\"name\": \"regular\", "
                    "\"configuration\": {\"chunk_shape\": [", c->dtype);
    for (int d = 0; d < c->ndim; d++) pos += snprintf(meta + pos, sizeof meta - (size_t)pos, "%s%llu", d ? ", " : "", (unsigned long long)c->chunk[d]);
    snprintf(meta + pos, sizeof meta - (size_t)pos, "]}}, \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": "
             "{\"separator\": \"/\"}}, \"fill_value\": 0, \"codecs\": %s}", c->codecs);
    snprintf(path, sizeof path, "%s/%s", tmpdir, c->name);
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_create(ctx, path, meta, 1, &a));
    if (!a) return;
    size_t n = 1;
    uint64_t z[3] = {0, 0, 0};
    for (int d = 0; d < c->ndim; d++) n *= c->shape[d];
    const size_t nb = n * (size_t)c->isz;
    uint8_t *data = malloc(nb), *got = malloc(nb), *host = malloc(nb);
    uint64_t seed = 77;
    for (size_t i = 0; i < n; i++) { /* smooth values with noise (floats: small steps) */
        const uint64_t v = (i % 97) * 5 + (i / 1000) + (zt_rng(&seed) & 3);
        if (strcmp(c->dtype, "float32") == 0) {
            const float f = (float)v * 0.37f - 11.0f;
            memcpy(data + i * 4, &f, 4);
        } else if (strcmp(c->dtype, "float64") == 0) {
            const double f = (double)v * 0.37 - 11.0;
            memcpy(data + i * 8, &f, 8);
        } else {
            memcpy(data + i * (size_t)c->isz, &v, (size_t)c->isz);
        }
    }
    CHECK_OK(zgpu_array_write(a, z, c->shape, data, NULL));
    void *d = NULL;
    CUOK(cudaMalloc(&d, nb));
    CUOK(cudaMemset(d, 0xcd, nb));
    zgpu_status st = zgpu_array_read_device(a, z, c->shape, d, NULL, NULL);
    CUOK(cudaMemcpy(got, d, nb, cudaMemcpyDeviceToHost));
    zgpu_read_stats rs;
    memset(&rs, 0, sizeof rs);
    rs.struct_size = sizeof rs;
    zgpu_array_last_read_stats(a, &rs);
    CHECK_MSG(st == ZGPU_OK && memcmp(got, data, nb) == 0, "%s: device read: %s", c->name,
              st == ZGPU_OK ? "data differs" : zgpu_last_error());
    CHECK_MSG(rs.gpu_decoded > 0 && rs.cpu_decoded == 0, "%s: %d chunks decoded on the GPU, %d on the host", c->name,
              rs.gpu_decoded, rs.cpu_decoded);
    printf("%s: device read %s, %d chunks on the GPU\n", c->name, st == ZGPU_OK ? "ok" : "FAILED", rs.gpu_decoded);
    /* a box cutting every chunk */
    uint64_t bs[3], bc[3];
    size_t bn = 1;
    for (int dd = 0; dd < c->ndim; dd++) bs[dd] = c->shape[dd] > 2 ? 1 : 0, bc[dd] = c->shape[dd] - 2 * bs[dd], bn *= bc[dd];
    CUOK(cudaMemset(d, 0xcd, nb));
    st = zgpu_array_read_device(a, bs, bc, d, NULL, NULL);
    CUOK(cudaMemcpy(got, d, bn * (size_t)c->isz, cudaMemcpyDeviceToHost));
    CHECK_OK(zgpu_array_read(a, bs, bc, host, NULL));
    CHECK_MSG(st == ZGPU_OK && memcmp(got, host, bn * (size_t)c->isz) == 0, "%s: box read: %s", c->name,
              st == ZGPU_OK ? "data differs" : zgpu_last_error());
    /* a chunk cut in half: the GPU's decoder finds it, the read names the chunk and the codec */
    char key[500];
    snprintf(key, sizeof key, "%s/c/0/1%s", path, c->ndim == 3 ? "/0" : "");
    FILE *f = fopen(key, "rb");
    CHECK_MSG(f != NULL, "%s: chunk %s", c->name, key);
    if (f) {
        uint8_t *buf = malloc(1 << 22);
        const size_t k = fread(buf, 1, 1 << 22, f);
        fclose(f);
        f = fopen(key, "wb");
        fwrite(buf, 1, k / 2, f);
        fclose(f);
        free(buf);
        st = zgpu_array_read_device(a, z, c->shape, d, NULL, NULL);
        const char *msg = zgpu_last_error();
        CHECK_MSG(st == ZGPU_ERR_CORRUPT_DATA && strstr(msg, "c/0/1") && strstr(msg, codec_word),
                  "%s: cut chunk: %s: %s", c->name, zgpu_status_name(st), msg);
        printf("%s: cut chunk: %s\n", c->name, msg);
    }
    cudaFree(d);
    zgpu_array_close(a);
    free(data);
    free(got);
    free(host);
}

static void test_arrays(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zgpu_test_gpu_lzw_%d", (int)getpid());
    mkdir(tmpdir, 0755);
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    zgpu_tuning tune;
    zgpu_tuning_init(&tune);
    tune.read_route = ZGPU_ROUTE_DEVICE; /* (the cost model would send arrays this small to the host route) */
    o.tuning = &tune;
    zgpu_context *ctx = NULL;
    CHECK_OK(zgpu_context_create(&o, &ctx));
    if (!ctx) return;
    static const array_case cases[] = {
        {"lzw_u16", "uint16", "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"tiff_lzw\"}]",
         {512, 384, 0}, {256, 128, 0}, 2, 2},
        {"lzw_pred2_u16x3", "uint16",
         "[{\"name\": \"tiff_predictor\", \"configuration\": {\"predictor\": 2, \"row_samples\": 288, \"samples_per_pixel\": 3}}, "
         "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"tiff_lzw\"}]",
         {256, 192, 3}, {128, 96, 3}, 3, 2},
        {"lzw_pred2_big_u32", "uint32",
         "[{\"name\": \"tiff_predictor\", \"configuration\": {\"predictor\": 2, \"row_samples\": 64}}, "
         "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}, {\"name\": \"tiff_lzw\"}]",
         {200, 256, 0}, {100, 64, 0}, 2, 4},
        {"lzw_pred3_f32", "float32",
         "[{\"name\": \"tiff_predictor\", \"configuration\": {\"predictor\": 3, \"row_samples\": 100}}, "
         "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"tiff_lzw\"}]",
         {256, 300, 0}, {64, 100, 0}, 2, 4},
        {"lzw_pred3_f64", "float64",
         "[{\"name\": \"tiff_predictor\", \"configuration\": {\"predictor\": 3, \"row_samples\": 64}}, "
         "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"tiff_lzw\"}]",
         {128, 128, 0}, {32, 64, 0}, 2, 8},
        {"packbits_u8", "uint8", "[{\"name\": \"bytes\"}, {\"name\": \"packbits\"}]", {300, 500, 0}, {100, 250, 0}, 2, 1},
        {"packbits_pred2_u16", "uint16",
         "[{\"name\": \"tiff_predictor\", \"configuration\": {\"predictor\": 2, \"row_samples\": 128}}, "
         "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"packbits\"}]",
         {256, 256, 0}, {64, 128, 0}, 2, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        read_case(ctx, &cases[i], strstr(cases[i].name, "packbits") ? "packbits" : "tiff_lzw");
    zgpu_context_free(ctx);
    zt_remove_dir(tmpdir);
}

int main(void) {
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        (void)zt_pass, (void)zt_fail;
        TEST_SKIP("no GPU");
    }
    const char *q = getenv("ZGPU_TEST_QUICK");
    quick = q && *q == '1';
    test_registry();
    test_lzw();
    test_packbits();
    test_predictors();
    test_arrays();
    TEST_MAIN_END();
}
#endif
