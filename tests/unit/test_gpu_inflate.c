/* zgpu's DEFLATE decoder on the GPU (src/gpucodec/deflate/inflate_kernels.cu) against zlib's input and against the CPU run
 * of the same rules (inflate_rules.h): one batch of streams of every kind at odd offsets, damaged streams (same
 * status and bytes as the CPU run, same verdict as libdeflate), both again launched in serial mode, and a
 * throughput figure on 8 MiB chunks like the benchmark's (printed, not asserted; ZGPU_INFLATE_SAMPLE: real
 * chunks). ZGPU_TEST_QUICK=1 keeps it small for compute-sanitizer. Skips (77) without a GPU. */
#include "test.h"
#include "zgpu.h"

#ifndef ZGPU_HAVE_CUDA
TEST_MAIN_WITHOUT_CUDA()
#else
#include <cuda_runtime.h>

#include "gpucodec/deflate/inflate_gpu.h"
#include "gpucodec/deflate/inflate_rules.h"
#include "inflate_cases.h"

typedef struct stream_in {
    uint8_t *c;
    size_t cn, expected;
    const sample *want; /* what it decodes to (valid streams) */
} stream_in;

/* 1: every batch is launched in serial mode (zg_inflate_launch's `serial`), whatever its streams' ratio; 0: only
 * batches whose streams all zg_inflate_serial_wanted, as reads do. */
static int force_serial;

/* Decodes the streams as one batch; status[i], out[i] (expected bytes each). Returns the median time in ms of
 * `reps` launches (events around the kernels only). parts > 0: every stream is split into that many parts at most
 * (zg_inflate_parts' `forced`); 0: the decoder's choice. */
static double gpu_batch(const stream_in *st, size_t n, int *status, uint8_t **out, int reps, const char *profile_name,
                        int parts) {
    size_t total = 0, out_total = 0;
    for (size_t i = 0; i < n; i++) total += st[i].cn + 3, out_total += st[i].expected + 1;
    uint8_t *h = calloc(total + 64, 1), *d_in, *d_out;
    const void **in_p = malloc(n * sizeof *in_p);
    void **out_p = malloc(n * sizeof *out_p);
    size_t *in_n = malloc(n * sizeof *in_n), *out_n = malloc(n * sizeof *out_n), *at = malloc(n * sizeof *at);
    CUOK(cudaMalloc((void **)&d_in, total + 64));
    CUOK(cudaMalloc((void **)&d_out, out_total + 64));
    CUOK(cudaMemset(d_out, 0xa5, out_total + 64));
    size_t pos = 0, opos = 0;
    for (size_t i = 0; i < n; i++) {
        pos += 1 + i % 3; /* odd offsets */
        memcpy(h + pos, st[i].c, st[i].cn);
        in_p[i] = d_in + pos;
        in_n[i] = st[i].cn;
        pos += st[i].cn;
        out_p[i] = d_out + opos + (i & 1); /* odd output addresses too */
        at[i] = opos + (i & 1);
        out_n[i] = st[i].expected;
        opos += st[i].expected + 1;
    }
    CUOK(cudaMemcpy(d_in, h, total + 64, cudaMemcpyHostToDevice));
    void *d_arr, *d_scr;
    const size_t arr = n * (4 * sizeof(void *) + sizeof(int) + 8);
    CUOK(cudaMalloc(&d_arr, arr));
    size_t max_out = 0;
    for (size_t i = 0; i < n; i++) max_out = st[i].expected > max_out ? st[i].expected : max_out;
    int serial = 1;
    for (size_t i = 0; i < n; i++) serial &= zg_inflate_serial_wanted(st[i].cn, st[i].expected);
    serial |= force_serial;
    const size_t P = zg_inflate_parts(n, max_out, SIZE_MAX, serial, parts > 0 ? parts : 0);
    CUOK(cudaMalloc(&d_scr, zg_inflate_scratch_bytes(n, max_out, P)));
    uint8_t *A = (uint8_t *)d_arr;
    const void **d_inp = (const void **)A;
    size_t *d_inn = (size_t *)(A + 8 * n);
    void **d_outp = (void **)(A + 16 * n);
    size_t *d_outn = (size_t *)(A + 24 * n), *d_act = (size_t *)(A + 32 * n);
    int *d_st = (int *)(A + 40 * n);
    CUOK(cudaMemcpy(d_inp, in_p, 8 * n, cudaMemcpyHostToDevice));
    CUOK(cudaMemcpy(d_inn, in_n, 8 * n, cudaMemcpyHostToDevice));
    CUOK(cudaMemcpy(d_outp, out_p, 8 * n, cudaMemcpyHostToDevice));
    CUOK(cudaMemcpy(d_outn, out_n, 8 * n, cudaMemcpyHostToDevice));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    if (profile_name) { /* one profiled run: where thread 0 of a block spends its cycles */
        unsigned long long *d_prof, prof[ZI_PHASES + 2];
        CUOK(cudaMalloc((void **)&d_prof, sizeof prof));
        CUOK(cudaMemset(d_prof, 0, sizeof prof));
        CUOK(zg_inflate_launch_profiled(d_inp, d_inn, d_outp, d_outn, d_act, d_st, n, max_out, P, serial, d_scr, d_prof, 0, 0));
        CUOK(cudaMemcpy(prof, d_prof, sizeof prof, cudaMemcpyDeviceToHost));
        cudaFree(d_prof);
        static const char *names[ZI_PHASES] = {"header", "tables", "pass1", "sync", "resolve", "pass2", "jumps", "in-order"};
        double tot = 0;
        for (int k = 0; k < ZI_PHASES; k++) tot += (double)prof[k];
        printf("profile %-9s: %.1f Mcycles per stream, %llu windows, %llu jump rounds:", profile_name, tot / 1e6 / (double)n,
               prof[ZI_PHASES], prof[ZI_PHASES + 1]);
        for (int k = 0; k < ZI_PHASES; k++) printf(" %s %.0f%%", names[k], 100.0 * (double)prof[k] / (tot > 0 ? tot : 1));
        printf("\n");
    }
    float ms[16];
    int nrep = reps < 16 ? reps : 16;
    for (int r = 0; r < nrep; r++) {
        cudaEventRecord(e0, 0);
        CUOK(zg_inflate_launch(d_inp, d_inn, d_outp, d_outn, d_act, d_st, n, max_out, P, serial, d_scr, 0, 0));
        cudaEventRecord(e1, 0);
        CUOK(cudaEventSynchronize(e1));
        cudaEventElapsedTime(&ms[r], e0, e1);
    }
    CUOK(cudaMemcpy(status, d_st, sizeof(int) * n, cudaMemcpyDeviceToHost));
    uint8_t *ho = malloc(out_total + 64);
    CUOK(cudaMemcpy(ho, d_out, out_total + 64, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) memcpy(out[i], ho + at[i], st[i].expected);
    for (int a = 0; a < nrep; a++) /* sort for the median */
        for (int b = a + 1; b < nrep; b++)
            if (ms[b] < ms[a]) {
                float t = ms[a];
                ms[a] = ms[b];
                ms[b] = t;
            }
    cudaFree(d_in);
    cudaFree(d_out);
    cudaFree(d_arr);
    cudaFree(d_scr);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    free(h);
    free(ho);
    free(in_p);
    free(out_p);
    free(in_n);
    free(out_n);
    free(at);
    return ms[nrep / 2];
}

static int quick(void) {
    const char *q = getenv("ZGPU_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

/* Every kind of data with zlib's levels and strategies and libdeflate's, in one batch (parts: as gpu_batch). */
static void test_valid_batch(int parts) {
    const char *names[] = {"u16-image", "labels", "text", "random", "floats", "zeros"};
    const size_t sizes[] = {0, 1, 300, 70000, 1u << 20};
    stream_in st[512];
    sample keep[64];
    size_t n = 0, nk = 0;
    for (int ki = 0; ki < 6; ki++)
        for (int si = 0; si < 5; si++) {
            if (quick() && si == 4) continue;
            keep[nk] = make(names[ki], sizes[si], ki);
            const sample s = keep[nk++];
            const size_t first = n;
            const int levels[] = {0, 1, 6, 9}, strategies[] = {Z_DEFAULT_STRATEGY, Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED};
            for (int l = 0; l < 4; l++)
                for (int sg = 0; sg < 4; sg++) {
                    if ((quick() || si == 4) && (l != 2 || sg == 2)) continue;
                    size_t cn;
                    uint8_t *c = zlib_raw(&s, levels[l], strategies[sg], 1 + 8 * (sg & 1), &cn);
                    if (c) st[n++] = (stream_in){c, cn, s.n, NULL};
                }
            size_t cn;
            st[n].c = libdeflate_raw(&s, 12, &cn);
            st[n].cn = cn;
            st[n++].expected = s.n;
            for (size_t k = first; k < n; k++) st[k].want = &keep[nk - 1];
        }
    int *status = malloc(n * sizeof *status);
    uint8_t **out = malloc(n * sizeof *out);
    for (size_t i = 0; i < n; i++) out[i] = malloc(st[i].expected + 1);
    gpu_batch(st, n, status, out, 1, NULL, parts);
    size_t bad = 0;
    for (size_t k = 0; k < n; k++) {
        const sample *w = st[k].want;
        const int ok = status[k] == 0 && memcmp(out[k], w->p, w->n) == 0;
        if (!ok && bad++ < 5)
            fprintf(stderr, "stream %zu (%s, %zu bytes): %s\n", k, w->name, w->n, zi_error_text(status[k]));
        CHECK(ok);
    }
    printf("valid batch (parts %d%s): %zu streams, %zu wrong\n", parts, force_serial ? ", serial mode" : "", n, bad);
    for (size_t i = 0; i < n; i++) {
        free(out[i]);
        free(st[i].c);
    }
    for (size_t i = 0; i < nk; i++) free(keep[i].p);
    free(out);
    free(status);
}

/* Damaged streams (`trials` damages of each kind's zlib stream of `size` bytes): the GPU's status and bytes are
 * the CPU run's of the whole stream, and more than n / min_share of them are errors; without parts, the verdict
 * is libdeflate's too. parts: as gpu_batch (streams split into parts give the whole decode's status: a failed
 * chain decodes again). */
static void damaged_batch(const int *kinds, int nkinds, size_t size, int trials, int parts, size_t min_share) {
    const size_t n = (size_t)nkinds * (size_t)trials;
    stream_in *st = malloc(n * sizeof *st);
    sample *s = malloc((size_t)nkinds * sizeof *s);
    size_t k = 0;
    for (int ki = 0; ki < nkinds; ki++) {
        s[ki] = make("damaged", size, kinds[ki]);
        size_t cn;
        uint8_t *c = zlib_raw(&s[ki], 6, Z_DEFAULT_STRATEGY, 8, &cn);
        for (int t = 0; t < trials; t++) {
            uint8_t *d = malloc(cn + 8);
            const size_t dn = damage(c, cn, d, t);
            st[k++] = (stream_in){d, dn, s[ki].n, NULL};
        }
        free(c);
    }
    int *status = malloc(n * sizeof *status);
    uint8_t **out = malloc(n * sizeof *out);
    for (size_t i = 0; i < n; i++) out[i] = malloc(st[i].expected + 1);
    gpu_batch(st, n, status, out, 1, NULL, parts);
    zi_shared *sh = malloc(sizeof *sh);
    void *ml = malloc(ZI_SCRATCH);
    uint8_t *cpu = malloc(size + 1), *ref = malloc(size + 1);
    size_t errors = 0;
    for (size_t i = 0; i < n; i++) {
        int cst = -1;
        size_t act;
        zi_stream(sh, st[i].c, (uint32_t)st[i].cn, cpu, (uint32_t)st[i].expected, ml, &cst, &act);
        /* (forced serial mode: the CPU run picks its mode by ratio, and the two modes may name a fault differently) */
        CHECK_MSG(force_serial ? (status[i] == 0) == (cst == 0) : status[i] == cst, "parts %d, stream %zu: GPU %s, CPU %s",
                  parts, i, zi_error_text(status[i]), zi_error_text(cst));
        if (cst == 0 && status[i] == 0) CHECK(memcmp(cpu, out[i], st[i].expected) == 0);
        if (!parts) { /* (split streams: the CPU run of the whole stream is the reference) */
            const int ok = reference_decode(st[i].c, st[i].cn, ref, st[i].expected);
            CHECK_MSG((status[i] == 0) == ok, "stream %zu: GPU %s, libdeflate %s", i, zi_error_text(status[i]),
                      ok ? "fine" : "an error");
        }
        errors += status[i] != 0;
    }
    printf("damaged batch (%zu bytes each, parts %d%s): %zu streams, %zu errors\n", size, parts,
           force_serial ? ", serial mode" : "", n, errors);
    CHECK(errors > n / min_share);
    for (size_t i = 0; i < n; i++) {
        free(out[i]);
        free(st[i].c);
    }
    for (int q = 0; q < nkinds; q++) free(s[q].p);
    free(s);
    free(st);
    free(out);
    free(status);
    free(sh);
    free(ml);
    free(cpu);
    free(ref);
}

static void test_damaged(void) {
    const int kinds[] = {0, 1, 2, 4}, big[] = {0, 4};
    damaged_batch(kinds, 4, 100000, quick() ? 12 : 48, 0, 2);
    damaged_batch(big, 2, 3u << 20, quick() ? 6 : 24, 4, 3); /* large enough to be split into parts */
}

/* 64 chunks of 8 MiB like the benchmark's volumes (zlib level 5, numcodecs' and zarr-python's default). */
static void bench(void) {
    if (quick()) return;
    const int kinds[] = {0, 4, 1, 4};
    const char *names[] = {"u16-image", "floats", "labels", "floats-libdeflate"}; /* zgpu writes with libdeflate */
    for (int ki = 0; ki < 4; ki++) {
        enum { N = 64 };
        stream_in st[N];
        sample s[4];
        size_t stored = 0;
        for (int v = 0; v < 4; v++) s[v] = make(names[ki], 8u << 20, kinds[ki]);
        for (int i = 0; i < N; i++) {
            size_t cn;
            st[i].c = ki == 3 ? libdeflate_raw(&s[i % 4], 5, &cn) : zlib_raw(&s[i % 4], 5, Z_DEFAULT_STRATEGY, 8, &cn);
            st[i].cn = cn;
            st[i].expected = s[i % 4].n;
            stored += cn;
        }
        int status[N];
        uint8_t *out[N];
        for (int i = 0; i < N; i++) out[i] = malloc(st[i].expected);
        const double ms = gpu_batch(st, N, status, out, 5, names[ki], 0);
        int ok = 1;
        for (int i = 0; i < N; i++) ok &= status[i] == 0 && memcmp(out[i], s[i % 4].p, st[i].expected) == 0;
        CHECK_MSG(ok, "%s: bench batch decodes wrong", names[ki]);
        ok = 1;
        for (int i = 0; i < N; i++) ok &= status[i] == 0;
        if (!ok) fprintf(stderr, "%s: statuses %d %d\n", names[ki], status[0], status[1]);
        printf("throughput %-9s: %d x 8 MiB (ratio %.2f) in %.2f ms = %.2f GB/s decoded\n", names[ki], N,
               (double)N * (8u << 20) / (double)stored, ms, (double)N * (8u << 20) / ms / 1e6);
        /* the same without parts, and smaller batches, whose streams the decoder splits into more parts */
        const double whole = gpu_batch(st, N, status, out, 5, NULL, 1);
        const int ns[] = {32, 16};
        double small[2];
        for (int q = 0; q < 2; q++) {
            small[q] = gpu_batch(st, (size_t)ns[q], status, out, 5, NULL, 0);
            for (int i = 0; i < ns[q]; i++) ok &= status[i] == 0 && memcmp(out[i], s[i % 4].p, st[i].expected) == 0;
        }
        CHECK_MSG(ok, "%s: small batches decode wrong", names[ki]);
        printf("throughput %-9s: %d x 8 MiB without parts %.2f GB/s; %d streams %.2f GB/s, %d streams %.2f GB/s\n",
               names[ki], N, (double)N * (8u << 20) / whole / 1e6, ns[0], (double)ns[0] * (8u << 20) / small[0] / 1e6,
               ns[1], (double)ns[1] * (8u << 20) / small[1] / 1e6);
        for (int i = 0; i < N; i++) {
            free(out[i]);
            free(st[i].c);
        }
        for (int v = 0; v < 4; v++) free(s[v].p);
    }
}

/* ZGPU_INFLATE_SAMPLE=file[:file...]: each file's bytes (a chunk of a benchmark volume), zlib level 5 as the
 * benchmark writes, 64 copies decoded as one batch: the decoder alone on real chunks (tuning aid; with
 * ZGPU_INFLATE_SAMPLE_ONLY=1 nothing else runs). */
static void bench_samples(const char *list) {
    char *paths = strdup(list);
    for (char *save = NULL, *path = strtok_r(paths, ":", &save); path; path = strtok_r(NULL, ":", &save)) {
        FILE *f = fopen(path, "rb");
        if (!f) {
            fprintf(stderr, "sample %s: cannot open\n", path);
            CHECK(0);
            continue;
        }
        fseek(f, 0, SEEK_END);
        sample sm = {path, malloc((size_t)ftell(f) + 1), (size_t)ftell(f)};
        fseek(f, 0, SEEK_SET);
        CHECK(fread(sm.p, 1, sm.n, f) == sm.n);
        fclose(f);
        enum { N = 64 };
        size_t cn;
        uint8_t *c = zlib_raw(&sm, 5, Z_DEFAULT_STRATEGY, 8, &cn);
        stream_in st[N];
        int status[N];
        uint8_t *out[N];
        for (int i = 0; i < N; i++) {
            st[i] = (stream_in){c, cn, sm.n, &sm};
            out[i] = malloc(sm.n);
        }
        const double ms = gpu_batch(st, N, status, out, 5, path, 0);
        int ok = 1;
        for (int i = 0; i < N; i++) ok &= status[i] == 0 && memcmp(out[i], sm.p, sm.n) == 0;
        CHECK_MSG(ok, "sample %s decodes wrong", path);
        printf("sample %s: %d streams of %zu bytes (ratio %.2f, %s mode): %.2f ms, %.2f GB/s decoded\n", path, N,
               sm.n, (double)sm.n / (double)cn, zi_serial_wanted((uint32_t)cn, (uint32_t)sm.n) ? "serial" : "windows",
               ms, (double)N * (double)sm.n / ms / 1e6);
        for (int i = 0; i < N; i++) free(out[i]);
        free(c);
        free(sm.p);
    }
    free(paths);
}

int main(void) {
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        (void)zt_pass, (void)zt_fail;
        TEST_SKIP("no GPU");
    }
    const char *samples = getenv("ZGPU_INFLATE_SAMPLE"), *only = getenv("ZGPU_INFLATE_SAMPLE_ONLY");
    if (samples && *samples) bench_samples(samples);
    if (only && *only == '1') TEST_MAIN_END();
    test_valid_batch(0);
    test_valid_batch(4);
    test_damaged();
    /* the same batches launched in serial mode (serial-mode blocks; every part of every stream, any ratio) */
    force_serial = 1;
    test_valid_batch(4);
    test_damaged();
    force_serial = 0;
    bench();
    TEST_MAIN_END();
}
#endif
