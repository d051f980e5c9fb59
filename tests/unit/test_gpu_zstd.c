/* The block-parallel zstd decoder on the GPU (src/gpucodec/zstd/zstd_kernels.cu) against libzstd and against the CPU
 * run of the same rules (zstd_cpu_ref.h): every case of zstd_cases.h in one batch at unaligned offsets,
 * small batches, damaged frames (same status and bytes as the CPU run), Huffman streams not read exactly (issue 25:
 * rejected as the CPU run rejects them), valid and damaged frames again with
 * their bytes placed in rows apart (zg_zd_rows), and a throughput figure (printed, not asserted). ZGPU_TEST_QUICK=1 keeps it small for compute-sanitizer. Skips (77) without a GPU. */
#include "test.h"
#include "zgpu.h"
#include "zgpu_experimental.h"

#ifndef ZGPU_HAVE_CUDA
TEST_MAIN_WITHOUT_CUDA()
#else
#include <cuda_runtime.h>

#include "gpucodec/zstd/zstd_gpu.h"
#include "zstd_cases.h"
#include "zstd_cpu_ref.h"

typedef struct frame_in {
    const uint8_t *p;
    size_t n, expected;
} frame_in;

/* Mapped frames (zg_zd_rows): with g_row_shift set, every frame whose size is a multiple of R = 2^g_row_shift goes
 * to rows placed apart: groups of 4 rows, each group's rows going downwards (a negative stride) with 16 bytes
 * between rows, and the groups 48 bytes apart upwards. Every other such frame, and every one with a checksum, is
 * ZG_ZD_MAPPED_AFTER (decoded flat, its blocks then copied into the rows: both are checked), the rest
 * ZG_ZD_MAPPED. The other frames of the batch stay flat. */
static unsigned g_row_shift;
/* zgpu_tuning's zstd_huf_probe for the batches (-1: the default; 0: every run's guess mostly wrong) */
static int g_huf_probe = -1;
/* zgpu_tuning's profile, as a default context has it (ZGPU_PROFILE=1 from the shell: per-kernel times) */
static int g_profile;
#define ROW_GAP 16
#define GROUP_ROWS 4
#define MID_STRIDE (-(int32_t)((1u << g_row_shift) + ROW_GAP))
#define TOP_STRIDE ((int32_t)(GROUP_ROWS * ((1u << g_row_shift) + ROW_GAP) + 48))
/* Row r's offset from the region's first byte (dst lies (GROUP_ROWS - 1) rows into the region). */
static size_t row_at(size_t r) {
    return (size_t)((int64_t)(GROUP_ROWS - 1) * -MID_STRIDE + (int64_t)(r % GROUP_ROWS) * MID_STRIDE +
                    (int64_t)(r / GROUP_ROWS) * TOP_STRIDE);
}
static size_t region_bytes(size_t rows) { return (rows / GROUP_ROWS + 1) * (size_t)TOP_STRIDE; }
static size_t mapped_rows(size_t expected) {
    const size_t R = (size_t)1 << g_row_shift;
    return g_row_shift && expected && expected % R == 0 ? expected / R : 0;
}
static size_t mapped_errors;   /* bytes outside a mapped frame's rows that a decode changed, or rows of a valid
                                * ZG_ZD_MAPPED_AFTER frame that differ from its flat bytes */
static size_t mapped_frames[3]; /* by mode */

/* Plans and decodes the frames as one batch on the GPU. planned[i]: the host plan took frame i; err[i] and
 * out[i] (expected bytes): the GPU's status and output. Returns the median decode time in ms of `reps` runs. */
static double gpu_batch(const frame_in *fr, size_t n, int *planned, int *err, uint8_t **out, int reps) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += fr[i].n + 3; /* +3: frames start at odd offsets */
    uint8_t *h = (uint8_t *)calloc(total + 64, 1);
    uint64_t *at = (uint64_t *)malloc(n * sizeof *at), *dst_at = (uint64_t *)malloc(n * sizeof *dst_at);
    uint64_t *rows_at = (uint64_t *)calloc(n + 1, sizeof *rows_at);
    int *mode = (int *)calloc(n + 1, sizeof *mode);
    zg_zd_plan pl;
    zg_zd_plan_init(&pl);
    size_t pos = 0, out_total = 0, nf = 0;
    for (size_t i = 0; i < n; i++) {
        pos += 1 + i % 3;
        memcpy(h + pos, fr[i].p, fr[i].n);
        planned[i] = zg_zd_plan_frame(&pl, h + pos, fr[i].n, fr[i].expected, pos) == ZGPU_OK;
        at[i] = pos;
        pos += fr[i].n;
    }
    /* outputs: flat bytes back to back (any alignment), rows on 16 bytes with room for their row slots */
    const size_t R = (size_t)1 << g_row_shift;
    size_t *rows = (size_t *)calloc(n + 1, sizeof *rows);
    for (size_t i = 0, f = 0; i < n; i++) {
        if (!planned[i]) continue;
        rows[i] = mapped_rows(fr[i].expected);
        mode[i] = !rows[i] ? ZG_ZD_FLAT : pl.frames[f].has_checksum || i % 2 ? ZG_ZD_MAPPED_AFTER : ZG_ZD_MAPPED;
        f++;
        mapped_frames[mode[i]]++;
        if (mode[i] != ZG_ZD_MAPPED) {
            dst_at[i] = out_total;
            out_total += fr[i].expected;
        }
        if (rows[i]) {
            out_total = (out_total + 15) & ~(size_t)15;
            rows_at[i] = out_total;
            out_total += region_bytes(rows[i]);
        }
    }
    uint8_t *d_src, *d_lit, *d_seq, *d_out, *d_scr;
    zg_zd_block *d_blocks;
    zg_zd_frame *d_frames;
    zg_zd_huf_desc *d_hufs;
    zg_zd_fse_desc *d_fses;
    int *d_status;
    size_t *d_actual;
    const size_t nb = pl.n_blocks;
    CUOK(cudaMalloc((void **)&d_src, total + 64));
    CUOK(cudaMemcpy(d_src, h, total + 64, cudaMemcpyHostToDevice));
    CUOK(cudaMalloc((void **)&d_lit, pl.lit_bytes + 4));
    CUOK(cudaMalloc((void **)&d_seq, pl.n_seq * sizeof(zg_zd_seq) + 4));
    CUOK(cudaMalloc((void **)&d_out, out_total + 4));
    CUOK(cudaMemset(d_out, 0xa5, out_total + 4));
    CUOK(cudaMalloc((void **)&d_scr, zg_zd_scratch_bytes((uint32_t)nb)));
    CUOK(cudaMalloc((void **)&d_blocks, (nb + 1) * sizeof(zg_zd_block)));
    CUOK(cudaMalloc((void **)&d_frames, (pl.n_frames + 1) * sizeof(zg_zd_frame)));
    CUOK(cudaMalloc((void **)&d_hufs, (pl.n_hufs + 1) * sizeof(zg_zd_huf_desc)));
    CUOK(cudaMalloc((void **)&d_fses, (pl.n_fses + 1) * sizeof(zg_zd_fse_desc)));
    CUOK(cudaMalloc((void **)&d_status, (n + 1) * sizeof(int)));
    CUOK(cudaMalloc((void **)&d_actual, (n + 1) * sizeof(size_t)));
    zg_zd_block *hb = (zg_zd_block *)malloc((nb + 1) * sizeof *hb);
    zg_zd_frame *hf = (zg_zd_frame *)malloc((pl.n_frames + 1) * sizeof *hf);
    zg_zd_huf_desc *hh = (zg_zd_huf_desc *)malloc((pl.n_hufs + 1) * sizeof *hh);
    zg_zd_fse_desc *hs = (zg_zd_fse_desc *)malloc((pl.n_fses + 1) * sizeof *hs);
    zg_zd_bases bases = {(uint64_t)(uintptr_t)d_src, (uint64_t)(uintptr_t)d_lit, (uint64_t)(uintptr_t)d_seq, 0, 0, 0, 0};
    zg_zd_plan_emit(&pl, &bases, hb, hf, hh, hs);
    for (size_t i = 0, f = 0; i < n; i++) {
        if (!planned[i]) continue;
        uint8_t *in_rows = d_out + rows_at[i] + row_at(0);
        hf[f].dst = (uint64_t)(uintptr_t)(mode[i] == ZG_ZD_MAPPED ? in_rows : d_out + dst_at[i]);
        hf[f].place = mode[i] == ZG_ZD_MAPPED_AFTER ? (uint64_t)(uintptr_t)in_rows : 0;
        hf[f].status_index = (uint32_t)i;
        hf[f].mapped = (uint32_t)mode[i];
        nf = ++f;
    }
    CUOK(cudaMemcpy(d_blocks, hb, nb * sizeof *hb, cudaMemcpyHostToDevice));
    CUOK(cudaMemcpy(d_frames, hf, nf * sizeof *hf, cudaMemcpyHostToDevice));
    CUOK(cudaMemcpy(d_hufs, hh, pl.n_hufs * sizeof *hh, cudaMemcpyHostToDevice));
    CUOK(cudaMemcpy(d_fses, hs, pl.n_fses * sizeof *hs, cudaMemcpyHostToDevice));
    uint32_t *h_order = (uint32_t *)malloc((nb + 1) * sizeof *h_order), *d_order;
    if (!h_order || zg_zd_ticket_order(hf, nf, h_order) != ZGPU_OK) {
        fprintf(stderr, "out of host memory\n");
        exit(2);
    }
    CUOK(cudaMalloc((void **)&d_order, (nb + 1) * sizeof *d_order));
    CUOK(cudaMemcpy(d_order, h_order, nb * sizeof *h_order, cudaMemcpyHostToDevice));
    zg_zd_batch b = {d_blocks, d_frames, d_hufs, d_fses, (uint32_t)nb, (uint32_t)nf, (zg_zd_bres *)d_scr,
                     (uint32_t *)(d_scr + nb * sizeof(zg_zd_bres)), d_status, d_actual, d_order, NULL, NULL, NULL,
                     {g_row_shift, 2, MID_STRIDE, TOP_STRIDE}, g_huf_probe, g_profile};
    /* every other batch decodes its Huffman literals on a second stream, beside the sequences (as reads do) */
    static int batches;
    cudaStream_t aux = NULL;
    cudaEvent_t fork = NULL, join = NULL;
    if (batches++ % 2) {
        CUOK(cudaStreamCreateWithFlags(&aux, cudaStreamNonBlocking));
        CUOK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
        CUOK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
        b.aux = aux;
        b.fork = fork;
        b.join = join;
    }
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    double ms[16] = {0};
    if (reps > 16) reps = 16;
    for (int r = 0; r < reps; r++) {
        CUOK(cudaMemset(d_status, 0, (n + 1) * sizeof(int)));
        cudaEventRecord(e0, 0);
        CUOK(zg_zd_decode(&b, 0));
        cudaEventRecord(e1, 0);
        CUOK(cudaDeviceSynchronize());
        float t = 0;
        cudaEventElapsedTime(&t, e0, e1);
        ms[r] = t;
    }
    CUOK(cudaMemcpy(err, d_status, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) {
        if (!planned[i]) continue;
        if (mode[i] != ZG_ZD_MAPPED)
            CUOK(cudaMemcpy(out[i], d_out + dst_at[i], fr[i].expected, cudaMemcpyDeviceToHost));
        if (!rows[i]) continue;
        /* gather the rows; every byte outside them must still be the 0xa5 the buffer was filled with */
        const size_t span = region_bytes(rows[i]);
        uint8_t *region = (uint8_t *)malloc(span), *used = (uint8_t *)calloc(span, 1);
        CUOK(cudaMemcpy(region, d_out + rows_at[i], span, cudaMemcpyDeviceToHost));
        for (size_t r = 0; r < rows[i]; r++) {
            if (mode[i] == ZG_ZD_MAPPED) memcpy(out[i] + r * R, region + row_at(r), R);
            else if (!err[i]) mapped_errors += memcmp(out[i] + r * R, region + row_at(r), R) != 0;
            memset(used + row_at(r), 1, R);
        }
        for (size_t k = 0; k < span; k++) mapped_errors += !used[k] && region[k] != 0xa5;
        free(region);
        free(used);
    }
    for (int a = 0; a < reps; a++) /* median */
        for (int c = a + 1; c < reps; c++)
            if (ms[c] < ms[a]) {
                double t = ms[a];
                ms[a] = ms[c];
                ms[c] = t;
            }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (aux) {
        cudaStreamDestroy(aux);
        cudaEventDestroy(fork);
        cudaEventDestroy(join);
    }
    cudaFree(d_order); free(h_order); free(rows); free(rows_at); free(mode);
    cudaFree(d_src); cudaFree(d_lit); cudaFree(d_seq); cudaFree(d_out); cudaFree(d_scr); cudaFree(d_blocks);
    cudaFree(d_frames); cudaFree(d_hufs); cudaFree(d_fses); cudaFree(d_status); cudaFree(d_actual);
    free(hb); free(hf); free(hh); free(hs); free(h); free(at); free(dst_at);
    zg_zd_plan_free(&pl);
    return ms[reps / 2];
}

static void test_valid(zcase *cs, size_t n, size_t per_batch) {
    frame_in *fr = (frame_in *)malloc(n * sizeof *fr);
    int *planned = (int *)malloc(n * sizeof(int)), *err = (int *)malloc(n * sizeof(int));
    uint8_t **out = (uint8_t **)malloc(n * sizeof *out);
    for (size_t i = 0; i < n; i++) {
        fr[i] = (frame_in){cs[i].comp, cs[i].cn, cs[i].n};
        out[i] = (uint8_t *)malloc(cs[i].n + 1);
    }
    size_t good = 0, bad_shown = 0;
    for (size_t first = 0; first < n; first += per_batch) {
        size_t m = n - first < per_batch ? n - first : per_batch;
        gpu_batch(fr + first, m, planned + first, err + first, out + first, 1);
    }
    for (size_t i = 0; i < n; i++) {
        int ok = planned[i] && err[i] == 0 && memcmp(out[i], cs[i].raw, cs[i].n) == 0;
        good += ok;
        if (!ok && bad_shown++ < 10)
            fprintf(stderr, "%s: planned %d status %d (%s)\n", cs[i].name, planned[i], err[i], zg_zd_error_text(err[i]));
    }
    printf("valid frames, batches of %zu: %zu of %zu equal libzstd's input\n", per_batch, good, n);
    CHECK_EQ_U64(good, n);
    for (size_t i = 0; i < n; i++) free(out[i]);
    free(out); free(err); free(planned); free(fr);
}

/* Runs frame f on the CPU model of the GPU decoder: 1 when it agrees with the GPU (both reject, or both decode to
 * the same bytes). *cpu_err: the model's status. (Which error a frame with several faults reports may differ: the
 * GPU's kernels race to report first.) */
static int cpu_agrees(const frame_in *f, int gpu_err, const uint8_t *gpu_out, int *cpu_err) {
    zg_zd_plan pl;
    zg_zd_plan_init(&pl);
    zg_zd_plan_frame(&pl, f->p, f->n, f->expected, 0);
    uint8_t *ref = (uint8_t *)malloc(f->expected + 1);
    *cpu_err = -1;
    zc_cpu_run(&pl, f->p, &ref, cpu_err);
    const int same = (*cpu_err != 0) == (gpu_err != 0) && (*cpu_err != 0 || memcmp(ref, gpu_out, f->expected) == 0);
    free(ref);
    zg_zd_plan_free(&pl);
    return same;
}

/* Damaged frames: the GPU's status and bytes equal the CPU run of the same rules. */
static void test_damaged(zcase *cs, size_t n) {
    enum { PER = 8 };
    size_t cap = n * PER, m = 0;
    frame_in *fr = (frame_in *)malloc(cap * sizeof *fr);
    uint8_t **bufs = (uint8_t **)malloc(cap * sizeof *bufs);
    uint64_t s = 99;
    for (size_t i = 0; i < n; i++) {
        if (cs[i].cn < 40 || cs[i].n > 300000) continue;
        for (int t = 0; t < PER; t++) {
            uint8_t *bad = (uint8_t *)malloc(cs[i].cn);
            memcpy(bad, cs[i].comp, cs[i].cn);
            size_t len = cs[i].cn;
            if (t < PER - 1) bad[8 + zc_rng(&s) % (len - 8)] ^= (uint8_t)(1 + zc_rng(&s) % 255);
            else len = 8 + zc_rng(&s) % (len - 8);
            bufs[m] = bad;
            fr[m++] = (frame_in){bad, len, cs[i].n};
        }
    }
    int *planned = (int *)malloc(m * sizeof(int)), *err = (int *)malloc(m * sizeof(int));
    uint8_t **out = (uint8_t **)malloc(m * sizeof *out);
    for (size_t i = 0; i < m; i++) out[i] = (uint8_t *)malloc(fr[i].expected + 1);
    gpu_batch(fr, m, planned, err, out, 1);
    size_t n_planned = 0, agree = 0, gpu_rejects = 0;
    for (size_t i = 0; i < m; i++) {
        if (!planned[i]) continue;
        n_planned++;
        int cerr;
        const int same = cpu_agrees(&fr[i], err[i], out[i], &cerr);
        agree += same;
        gpu_rejects += err[i] != 0;
        if (!same && agree + 5 > n_planned)
            fprintf(stderr, "damaged frame %zu: GPU status %d, CPU status %d\n", i, err[i], cerr);
    }
    printf("damaged frames: %zu made, %zu pass the host plan, the GPU rejects %zu; GPU and CPU agree on %zu\n", m,
           n_planned, gpu_rejects, agree);
    CHECK(n_planned > 100);
    CHECK_EQ_U64(agree, n_planned);
    for (size_t i = 0; i < m; i++) {
        free(out[i]);
        free(bufs[i]);
    }
    free(out); free(err); free(planned); free(fr); free(bufs);
}

/* Frames with a Huffman literals stream not read exactly to its first bit (RFC 8878 4.2.2; zstd_cases.h), in one
 * batch: the hand-made ones (1 and 4 streams; undamaged, 2 bits left over, a code read past the start) and
 * test_gpu_hostile.c's "zstd" chunk with its 48 bit flips. The GPU rejects what the CPU model rejects and decodes
 * the rest to its bytes; every damaged hand-made frame and (libzstd 1.5.4's frame) the 8 flips libzstd decodes
 * are rejected as ZG_ZD_E_LITERALS, the one fault each of them has. */
static void test_huf_not_consumed(void) {
    enum { HAND = 6, FLIPS = 48, N = HAND + FLIPS };
    const size_t size = 64 * 64 * 4, cap = ZSTD_compressBound(size);
    uint32_t *data = (uint32_t *)malloc(size);
    uint8_t *chunk = (uint8_t *)malloc(cap), *bufs[N], *out[N], lit[40];
    const size_t cn = zc_hostile_chunk(data, chunk, cap);
    CHECK(cn > 0);
    const int known = cn == 5030 && zd_xxh64(chunk, cn) == ZC_HOSTILE_XXH64;
    zc_hand_literals(lit);
    frame_in fr[N];
    for (int i = 0; i < N; i++) {
        bufs[i] = (uint8_t *)malloc(cap > 128 ? cap : 128);
        if (i < HAND) { /* i / 3: 1 or 4 streams; i % 3: undamaged, bits left over, read past the start */
            const int four = i / 3, how = i % 3;
            fr[i] = (frame_in){bufs[i], zc_hand_frame(bufs[i], lit, 40, four, how == 0 ? -1 : four ? 2 * how - 1 : 0,
                                                      how), 40};
        } else {
            const int k = i - HAND;
            const size_t at = cn ? (size_t)k * (cn - 1) / 47 : 0;
            memcpy(bufs[i], chunk, cn);
            if (cn) bufs[i][at] ^= (uint8_t)(1u << (k % 8));
            fr[i] = (frame_in){bufs[i], cn, size};
        }
        out[i] = (uint8_t *)malloc(fr[i].expected + 1);
    }
    int planned[N], err[N];
    gpu_batch(fr, N, planned, err, out, 1);
    size_t agree = 0, n_planned = 0, literals = 0, want_literals = 0;
    for (int i = 0; i < N; i++) {
        if (!planned[i]) continue;
        n_planned++;
        int cerr;
        const int same = cpu_agrees(&fr[i], err[i], out[i], &cerr);
        agree += same;
        CHECK_MSG(same, "frame %d: GPU status %d, CPU status %d", i, err[i], cerr);
        literals += err[i] == ZG_ZD_E_LITERALS;
    }
    for (int i = 0; i < HAND; i++) {
        CHECK_MSG(planned[i] && err[i] == (i % 3 ? ZG_ZD_E_LITERALS : ZG_ZD_OK), "hand-made frame %d: GPU status %d",
                  i, err[i]);
        if (i % 3 == 0) CHECK(planned[i] && memcmp(out[i], lit, 40) == 0);
        want_literals += i % 3 != 0;
    }
    for (int q = 0; q < 8 && known; q++) {
        const int i = HAND + zc_hostile_loose[q];
        CHECK_MSG(planned[i] && err[i] == ZG_ZD_E_LITERALS, "hostile chunk, flip %d: GPU status %d",
                  zc_hostile_loose[q], err[i]);
        want_literals++;
    }
    printf("Huffman streams not read exactly: %d frames, %zu planned, the GPU rejects %zu for it (at least %zu "
           "expected); GPU and CPU agree on %zu\n", N, n_planned, literals, want_literals, agree);
    CHECK(literals >= want_literals);
    CHECK_EQ_U64(agree, n_planned);
    for (int i = 0; i < N; i++) {
        free(bufs[i]);
        free(out[i]);
    }
    free(chunk);
    free(data);
}

/* Throughput on copies of one raw chunk from a file ($ZGPU_ZSTD_SAMPLE, e.g. a benchmark volume's chunk),
 * compressed at level 3 (zarr's default), for tuning: batches of $ZGPU_ZSTD_SAMPLE_COPIES copies (64; a list). */
static void test_sample(const char *path, int copies) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return;
    fseek(fp, 0, SEEK_END);
    size_t sz = (size_t)ftell(fp);
    rewind(fp);
    uint8_t *raw = (uint8_t *)malloc(sz);
    if (fread(raw, 1, sz, fp) != sz) sz = 0;
    fclose(fp);
    enum { N_MAX = 64 };
    const int N = copies < 1 ? 1 : copies > N_MAX ? N_MAX : copies;
    uint8_t *comp = (uint8_t *)malloc(ZSTD_compressBound(sz)), *out[N_MAX];
    size_t cn = zc_compress(raw, sz, comp, ZSTD_compressBound(sz), 3, 0, 0, 0);
    frame_in fr[N_MAX];
    int planned[N_MAX], err[N_MAX];
    for (int i = 0; i < N; i++) {
        fr[i] = (frame_in){comp, cn, sz};
        out[i] = (uint8_t *)malloc(sz);
    }
    double ms = gpu_batch(fr, N, planned, err, out, 5);
    int good = 0;
    for (int i = 0; i < N; i++) good += planned[i] && !err[i] && memcmp(out[i], raw, sz) == 0;
    CHECK_EQ_U64(good, N);
    printf("sample %s: %d frames of %zu bytes (ratio %.2f): %.2f ms, %.1f GB/s decoded\n", path, N, sz,
           (double)sz / cn, ms, (double)N * sz / (ms * 1e6));
    for (int i = 0; i < N; i++) free(out[i]);
    free(comp);
    free(raw);
}

/* Throughput on chunks like the benchmark's: 64 chunks of 4 MiB of each kind, level 1 and 3. */
static void test_speed(void) {
    enum { N = 64 };
    const size_t sz = 4u << 20;
    static const int kinds[] = {3, 4, 5, 0};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        frame_in fr[N];
        uint8_t *raw[N], *comp[N], *out[N];
        int planned[N], err[N];
        size_t stored = 0;
        for (int i = 0; i < N; i++) {
            raw[i] = (uint8_t *)malloc(sz);
            zc_fill(raw[i], sz, kinds[k], 1000 + (uint64_t)i);
            comp[i] = (uint8_t *)malloc(ZSTD_compressBound(sz));
            size_t cn = zc_compress(raw[i], sz, comp[i], ZSTD_compressBound(sz), 1, 0, 0, 0);
            fr[i] = (frame_in){comp[i], cn, sz};
            out[i] = (uint8_t *)malloc(sz);
            stored += cn;
        }
        double ms = gpu_batch(fr, N, planned, err, out, 7);
        int good = 0;
        for (int i = 0; i < N; i++) good += planned[i] && !err[i] && memcmp(out[i], raw[i], sz) == 0;
        CHECK_EQ_U64(good, N);
        printf("speed: kind %d, %d frames of %zu MiB (ratio %.2f): %.2f ms, %.1f GB/s decoded\n", kinds[k], N,
               sz >> 20, (double)N * sz / stored, ms, (double)N * sz / (ms * 1e6));
        for (int i = 0; i < N; i++) {
            free(raw[i]);
            free(comp[i]);
            free(out[i]);
        }
    }
}

int main(void) {
    if (!zgpu_gpu_available()) {
        printf("skipped: no GPU (%s)\n", zgpu_last_error());
        return 77;
    }
    zgpu_context *ctx = NULL;
    if (zgpu_context_create(NULL, &ctx) == ZGPU_OK) {
        zgpu_tuning t;
        zgpu_context_tuning(ctx, &t);
        g_profile = t.profile;
        zgpu_context_free(ctx);
    }
    const int quick = getenv("ZGPU_TEST_QUICK") != NULL, samples_only = getenv("ZGPU_ZSTD_SAMPLE_ONLY") != NULL;
    zcase *cs;
    size_t n = samples_only ? 0 : zc_build(&cs, quick);
    if (!samples_only) {
        test_valid(cs, n, n);
        test_valid(cs, n, 1 + n / 40);
        test_damaged(cs, n);
        test_huf_not_consumed();
        /* again with frames mapped through 16-byte rows (the frames of 70000 bytes and up) */
        g_row_shift = 4;
        test_valid(cs, n, n);
        test_damaged(cs, n);
        g_row_shift = 0;
        printf("frames in 16-byte rows: %zu mapped, %zu copied after; %zu bytes or rows wrong\n",
               mapped_frames[ZG_ZD_MAPPED], mapped_frames[ZG_ZD_MAPPED_AFTER], mapped_errors);
        CHECK(mapped_frames[ZG_ZD_MAPPED] > 0 && mapped_frames[ZG_ZD_MAPPED_AFTER] > 0);
        CHECK_EQ_U64(mapped_errors, 0);
        /* again with K1h guessing each run's start at the run's own first bit (mostly not a code's start), so
         * that its recounts from the run before's end decide the literals */
        g_huf_probe = 0;
        printf("Huffman runs started at guesses that are mostly wrong:\n");
        test_valid(cs, n, n);
        test_damaged(cs, n);
        test_huf_not_consumed();
        g_huf_probe = -1;
        if (!quick) test_speed();
        zc_free(cs, n);
    }
    for (const char *p = getenv("ZGPU_ZSTD_SAMPLE"); p && *p;) { /* a list of files, ':'-separated */
        char one[4096];
        size_t k = strcspn(p, ":");
        snprintf(one, sizeof one, "%.*s", (int)k, p);
        for (const char *c = getenv("ZGPU_ZSTD_SAMPLE_COPIES") ? getenv("ZGPU_ZSTD_SAMPLE_COPIES") : "64"; *c;) {
            test_sample(one, atoi(c)); /* copies a batch: a ','-separated list */
            c += strcspn(c, ",");
            c += *c == ',';
        }
        p += k + (p[k] == ':');
    }
    TEST_MAIN_END();
}
#endif
