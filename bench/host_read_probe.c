/* Where a whole host read of a benchmark cell goes (issue 21: zarr-python's pipeline on the host).
 *
 *   zgpu_host_read_probe ARRAY
 *
 * ARRAY: a Zarr v3 array of the benchmark layout written by zgpu (bench_gpu.cell_array: 3-D, one row of chunks
 * along axis 0, "/" keys, codecs [bytes, zstd] or [bytes, gzip]). The probe times, on one thread a chunk (as
 * zgpu's pool runs a read of as many chunks as threads), each step of a read done by hand with the same libraries
 * — the files read into memory, the chunks decoded into per-thread buffers, the boxes copied into the output —
 * then all three fused per thread, and zgpu_array_read of the whole array into an output already written once
 * ("warm") and into one fresh from malloc (what a caller's np.empty gives: the kernel's first touch of every page
 * is in the read). Least of 6 runs after one warm-up; milliseconds. */
#define _GNU_SOURCE
#include <libdeflate.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "zgpu.h"

enum { MAX_CHUNKS = 256, RUNS = 7 };

typedef struct probe {
    zgpu_array *a;
    int nd, gz, esz, n;
    uint64_t shape[3], chunk[3], grid[3];
    char keys[MAX_CHUNKS][64];
    uint8_t *enc[MAX_CHUNKS], *dec[MAX_CHUNKS];
    size_t enc_n[MAX_CHUNKS], dec_n;
    uint8_t *out;
    const char *dir;
} probe;

typedef enum { STEP_READ, STEP_DECODE, STEP_PLACE, STEP_FUSED } step;

typedef struct job { probe *p; step s; int i; } job;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what) {
    fprintf(stderr, "host_read_probe: %s\n", what);
    exit(1);
}

static void read_chunk(probe *p, int i) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", p->dir, p->keys[i]);
    FILE *f = fopen(path, "rb");
    if (!f || fread(p->enc[i], 1, p->enc_n[i], f) != p->enc_n[i]) die(path);
    fclose(f);
}

static void decode_chunk(probe *p, int i) {
    if (p->gz) {
        static _Thread_local struct libdeflate_decompressor *d;
        if (!d) d = libdeflate_alloc_decompressor();
        size_t got = 0;
        if (libdeflate_gzip_decompress(d, p->enc[i], p->enc_n[i], p->dec[i], p->dec_n, &got) || got != p->dec_n)
            die("gzip decode");
    } else {
        static _Thread_local ZSTD_DCtx *c;
        if (!c) c = ZSTD_createDCtx();
        if (ZSTD_decompressDCtx(c, p->dec[i], p->dec_n, p->enc[i], p->enc_n[i]) != p->dec_n) die("zstd decode");
    }
}

/* chunk i's rows into the C-order output (edge chunks: only the part inside the array) */
static void place_chunk(probe *p, int i) {
    const uint64_t c1 = (uint64_t)i / p->grid[2] % p->grid[1], c2 = (uint64_t)i % p->grid[2], c0 = (uint64_t)i / (p->grid[1] * p->grid[2]);
    const uint64_t o0 = c0 * p->chunk[0], o1 = c1 * p->chunk[1], o2 = c2 * p->chunk[2];
    const uint64_t n0 = p->shape[0] - o0 < p->chunk[0] ? p->shape[0] - o0 : p->chunk[0];
    const uint64_t n1 = p->shape[1] - o1 < p->chunk[1] ? p->shape[1] - o1 : p->chunk[1];
    const uint64_t n2 = p->shape[2] - o2 < p->chunk[2] ? p->shape[2] - o2 : p->chunk[2];
    for (uint64_t z = 0; z < n0; z++)
        for (uint64_t y = 0; y < n1; y++)
            memcpy(p->out + (((o0 + z) * p->shape[1] + o1 + y) * p->shape[2] + o2) * (uint64_t)p->esz,
                   p->dec[i] + ((z * p->chunk[1] + y) * p->chunk[2]) * (uint64_t)p->esz, n2 * (uint64_t)p->esz);
}

static void *run_job(void *arg) {
    job *j = arg;
    if (j->s == STEP_READ || j->s == STEP_FUSED) read_chunk(j->p, j->i);
    if (j->s == STEP_DECODE || j->s == STEP_FUSED) decode_chunk(j->p, j->i);
    if (j->s == STEP_PLACE || j->s == STEP_FUSED) place_chunk(j->p, j->i);
    return NULL;
}

static double time_step(probe *p, step s) {
    double best = 1e30;
    pthread_t th[MAX_CHUNKS];
    job jobs[MAX_CHUNKS];
    for (int r = 0; r < RUNS; r++) {
        const double t0 = now();
        for (int i = 0; i < p->n; i++) {
            jobs[i] = (job){p, s, i};
            pthread_create(&th[i], NULL, run_job, &jobs[i]);
        }
        for (int i = 0; i < p->n; i++) pthread_join(th[i], NULL);
        const double t = now() - t0;
        if (r > 0 && t < best) best = t;
    }
    return best * 1e3;
}

static double time_zgpu(probe *p, int fresh) {
    const uint64_t start[3] = {0, 0, 0};
    const int64_t strides[3] = {(int64_t)(p->shape[1] * p->shape[2]) * p->esz, (int64_t)p->shape[2] * p->esz, p->esz};
    const size_t bytes = (size_t)(p->shape[0] * p->shape[1] * p->shape[2]) * (size_t)p->esz;
    double best = 1e30;
    for (int r = 0; r < RUNS; r++) {
        uint8_t *out = fresh ? malloc(bytes) : p->out;
        if (!out) die("out of memory");
        const double t0 = now();
        if (zgpu_array_read(p->a, start, p->shape, out, strides) != ZGPU_OK) die(zgpu_last_error());
        const double t = now() - t0;
        if (fresh) free(out);
        if (r > 0 && t < best) best = t;
    }
    return best * 1e3;
}

int main(int argc, char **argv) {
    if (argc != 2) die("usage: zgpu_host_read_probe ARRAY");
    probe *p = calloc(1, sizeof *p);
    p->dir = argv[1];
    zgpu_context *ctx;
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    if (zgpu_context_create(&o, &ctx) != ZGPU_OK || zgpu_array_open(ctx, p->dir, &p->a) != ZGPU_OK)
        die(zgpu_last_error());
    if (zgpu_array_ndim(p->a) != 3 || zgpu_array_shard_shape(p->a, p->shape)) die("the probe reads 3-D unsharded arrays");
    char *codecs = NULL;
    if (zgpu_array_codecs_json(p->a, &codecs) != ZGPU_OK) die(zgpu_last_error());
    p->gz = strstr(codecs, "\"gzip\"") != NULL;
    if (!p->gz && !strstr(codecs, "\"zstd\"")) die("the probe decodes [bytes, zstd] or [bytes, gzip] chunks");
    zgpu_free(codecs);
    p->esz = (int)zgpu_array_itemsize(p->a);
    zgpu_array_shape(p->a, p->shape);
    zgpu_array_chunk_shape(p->a, p->chunk);
    p->n = 1;
    for (int d = 0; d < 3; d++) {
        p->grid[d] = (p->shape[d] + p->chunk[d] - 1) / p->chunk[d];
        p->n *= (int)p->grid[d];
    }
    if (p->n > MAX_CHUNKS) die("too many chunks for the probe");
    p->dec_n = (size_t)(p->chunk[0] * p->chunk[1] * p->chunk[2]) * (size_t)p->esz;
    for (int i = 0; i < p->n; i++) {
        snprintf(p->keys[i], sizeof p->keys[i], "c/%llu/%llu/%llu",
                 (unsigned long long)((uint64_t)i / (p->grid[1] * p->grid[2])),
                 (unsigned long long)((uint64_t)i / p->grid[2] % p->grid[1]), (unsigned long long)((uint64_t)i % p->grid[2]));
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", p->dir, p->keys[i]);
        FILE *f = fopen(path, "rb");
        if (!f || fseek(f, 0, SEEK_END)) die(path);
        p->enc_n[i] = (size_t)ftell(f);
        fclose(f);
        p->enc[i] = malloc(p->enc_n[i]);
        p->dec[i] = malloc(p->dec_n);
        if (!p->enc[i] || !p->dec[i]) die("out of memory");
        memset(p->enc[i], 0, p->enc_n[i]);
        memset(p->dec[i], 0, p->dec_n);
    }
    const size_t bytes = (size_t)(p->shape[0] * p->shape[1] * p->shape[2]) * (size_t)p->esz;
    if (!(p->out = malloc(bytes))) die("out of memory");
    memset(p->out, 0, bytes);

    const double t_read = time_step(p, STEP_READ), t_decode = time_step(p, STEP_DECODE),
                 t_place = time_step(p, STEP_PLACE), t_fused = time_step(p, STEP_FUSED);
    double t0 = now();
    decode_chunk(p, 0);
    const double t_one = (now() - t0) * 1e3;
    const double t_warm = time_zgpu(p, 0), t_fresh = time_zgpu(p, 1);
    printf("%s: %d chunks of %.1f MiB (%s), a thread each: read %.2f ms, decode %.2f ms (one chunk alone %.2f ms), "
           "place %.2f ms, the three fused %.2f ms; zgpu_array_read into a warm output %.2f ms, into a fresh one "
           "%.2f ms\n", p->dir, p->n, (double)p->dec_n / (1 << 20), p->gz ? "gzip" : "zstd", t_read, t_decode, t_one,
           t_place, t_fused, t_warm, t_fresh);
    return 0;
}
