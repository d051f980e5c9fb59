/* GPU throughput of zgpu's TIFF LZW decoder and horizontal predictor (issue 22's target: >= 20 GB/s decoded on an
 * H100): an 8192 x 8192 uint16 image tiled 256 x 256 (1024 tiles of 128 KiB) and 512 x 512 (256 tiles of 512 KiB),
 * each tile differenced (predictor 2) and LZW-compressed by the host codec's encoder (libtiff's choices), decoded
 * as one batch. Times are device events around the launches only (the data is on the GPU already), after a
 * warm-up, the median of the repeats; GB/s are decoded bytes (10^9) a second. Every decoded byte is checked once.
 * Two images: "smooth" (a microscope-like field, noise +-4) and "noisy" (noise +-64: little to compress). Both
 * paths of the decoder: a warp a stream ("streams") and segments side by side ("segments").
 *   bench_tiff_gpu [repeats]     (default 30) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "codec/tiff_lzw.h"
#include "common/buf.h"
#include "gpucodec/lzw/lzw_check.h"
#include "gpucodec/lzw/lzw_kernels.h"
#include "gpucodec/post/post_kernels.h"
#include "tiff_gpu_cases.h"

#define SIDE 8192u
#define CK(x)                                                                                                  \
    do {                                                                                                       \
        cudaError_t e_ = (x);                                                                                  \
        if (e_ != cudaSuccess) {                                                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                 \
            exit(1);                                                                                           \
        }                                                                                                      \
    } while (0)

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* The median of `reps` timings (ms) of what(arg) on the default stream, after 3 warm-ups. */
static float median_ms(int reps, void (*what)(void *), void *arg) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) what(arg);
    CK(cudaDeviceSynchronize());
    float *t = malloc((size_t)reps * sizeof *t);
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(a, 0));
        what(arg);
        CK(cudaEventRecord(b, 0));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&t[i], a, b));
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_float);
    const float m = t[reps / 2];
    free(t);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return m;
}

typedef struct job {
    size_t n; /* tiles */
    const void **d_in;
    size_t *d_in_n, *d_out_n, *d_act;
    void **d_out;
    int *d_st;
    zg_k_buf *d_bufs;
    uint32_t tile;
    size_t tile_bytes;
    int seg;       /* the segmented path (else a warp a stream) */
    size_t slots;  /* its slots a stream */
    void *d_scr;   /* and scratch */
} job;

static void run_lzw(void *p) {
    const job *j = p;
    if (j->seg)
        CK(zg_k_lzw_decode_seg_launch((const void *const *)j->d_in, j->d_in_n, j->d_out, j->d_out_n, j->d_act, j->d_st,
                                      j->n, j->slots, j->d_scr, 0));
    else
        CK(zg_k_lzw_decode_launch((const void *const *)j->d_in, j->d_in_n, j->d_out, j->d_out_n, j->d_act, j->d_st,
                                  j->n, 0));
}
static void run_pred(void *p) {
    const job *j = p;
    CK(zg_k_row_delta_launch(j->d_bufs, j->n, j->tile_bytes, 2, j->tile, 1, 0));
}
static void run_both(void *p) {
    run_lzw(p);
    run_pred(p);
}

/* The image: smooth, or noisy (noise +-noise). */
static uint16_t *make_image(int noise) {
    uint16_t *img = malloc((size_t)SIDE * SIDE * 2);
    uint64_t s = 12345;
    for (uint32_t y = 0; y < SIDE; y++)
        for (uint32_t x = 0; x < SIDE; x++) {
            const double v = 2048.0 + 900.0 * sin(x * 0.0031) * cos(y * 0.0047) + 300.0 * sin((x + 2.0 * y) * 0.00071) +
                             200.0 * cos(x * 0.021 + y * 0.013);
            img[(size_t)y * SIDE + x] = (uint16_t)((int)v + (int)(zt_rng(&s) % (2 * noise + 1)) - noise);
        }
    return img;
}

static void bench(const char *name, const uint16_t *img, uint32_t tile, int reps) {
    const size_t per_side = SIDE / tile, n = per_side * per_side, tb = (size_t)tile * tile * 2;
    /* tiles in row-major order of tiles, each differenced then compressed */
    uint8_t *tiles = malloc(n * tb);
    zg_buf *comp = calloc(n, sizeof *comp);
    size_t total_c = 0;
    for (size_t t = 0; t < n; t++) {
        const size_t ty = t / per_side, tx = t % per_side;
        uint8_t *dst = tiles + t * tb;
        for (uint32_t r = 0; r < tile; r++)
            memcpy(dst + (size_t)r * tile * 2, img + (ty * tile + r) * SIDE + tx * tile, (size_t)tile * 2);
        uint8_t *diffed = malloc(tb);
        memcpy(diffed, dst, tb);
        zt_pred2(diffed, tb, 2, tile, 1, 0);
        if (zg_tiff_lzw_encode(diffed, tb, &comp[t], 0) != ZGPU_OK) {
            fprintf(stderr, "encode failed\n");
            exit(1);
        }
        total_c += (comp[t].size + 255) / 256 * 256;
        free(diffed);
    }
    uint8_t *h_in = malloc(total_c), *d_in, *d_out;
    const void **in_p = malloc(n * sizeof *in_p);
    void **out_p = malloc(n * sizeof *out_p);
    size_t *in_n = malloc(n * sizeof *in_n), *out_n = malloc(n * sizeof *out_n);
    zg_k_buf *bufs = malloc(n * sizeof *bufs);
    CK(cudaMalloc((void **)&d_in, total_c));
    CK(cudaMalloc((void **)&d_out, n * tb));
    size_t pos = 0, stored = 0, max_in = 0;
    for (size_t t = 0; t < n; t++) {
        memcpy(h_in + pos, comp[t].data, comp[t].size);
        in_p[t] = d_in + pos;
        in_n[t] = comp[t].size;
        stored += comp[t].size;
        if (comp[t].size > max_in) max_in = comp[t].size;
        pos += (comp[t].size + 255) / 256 * 256;
        out_p[t] = d_out + t * tb;
        out_n[t] = tb;
        bufs[t] = (zg_k_buf){d_out + t * tb, tb};
        zg_buf_free(&comp[t]);
    }
    free(comp);
    CK(cudaMemcpy(d_in, h_in, total_c, cudaMemcpyHostToDevice));
    job j = {n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, tile, tb, 0, zg_lzw_seg_slots(max_in), NULL};
    CK(cudaMalloc(&j.d_scr, zg_lzw_seg_scratch_bytes(n, j.slots)));
    uint8_t *A;
    CK(cudaMalloc((void **)&A, n * (48 + sizeof(zg_k_buf))));
    j.d_in = (const void **)A;
    j.d_in_n = (size_t *)(A + 8 * n);
    j.d_out = (void **)(A + 16 * n);
    j.d_out_n = (size_t *)(A + 24 * n);
    j.d_act = (size_t *)(A + 32 * n);
    j.d_st = (int *)(A + 40 * n);
    j.d_bufs = (zg_k_buf *)(A + 48 * n);
    CK(cudaMemcpy(j.d_in, in_p, 8 * n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(j.d_in_n, in_n, 8 * n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(j.d_out, out_p, 8 * n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(j.d_out_n, out_n, 8 * n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(j.d_bufs, bufs, n * sizeof *bufs, cudaMemcpyHostToDevice));
    /* each path: correctness once (LZW then the predictor, every byte, every status), then the timings */
    uint8_t *back = malloc(n * tb);
    int *st = malloc(n * sizeof *st);
    for (int seg = 0; seg < 2; seg++) {
        j.seg = seg;
        CK(cudaMemset(d_out, 0xa5, n * tb));
        CK(cudaMemset(j.d_st, 0x7f, 4 * n));
        run_both(&j);
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(back, d_out, n * tb, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(st, j.d_st, 4 * n, cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (size_t t = 0; t < n; t++) bad += st[t] != 0 || memcmp(back + t * tb, tiles + t * tb, tb) != 0;
        const float t_lzw = median_ms(reps, run_lzw, &j), t_pred = median_ms(reps, run_pred, &j),
                    t_both = median_ms(reps, run_both, &j);
        const double gb = (double)(n * tb) / 1e9;
        printf("%-7s %3ux%-3u %5zu tiles %-8s ratio %.2f  LZW %7.3f ms %6.1f GB/s   predictor %6.3f ms %6.1f GB/s   "
               "LZW+predictor %7.3f ms %6.1f GB/s   %s\n",
               name, tile, tile, n, seg ? "segments" : "streams", (double)(n * tb) / (double)stored, t_lzw,
               gb / (t_lzw / 1e3), t_pred, gb / (t_pred / 1e3), t_both, gb / (t_both / 1e3),
               bad ? "WRONG BYTES" : "bytes ok");
        if (bad) fprintf(stderr, "%zu of %zu tiles decoded wrong\n", bad, n);
    }
    free(back);
    free(st);
    cudaFree(A);
    cudaFree(j.d_scr);
    cudaFree(d_in);
    cudaFree(d_out);
    free(h_in);
    free(in_p);
    free(out_p);
    free(in_n);
    free(out_n);
    free(bufs);
    free(tiles);
}

int main(int argc, char **argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 30;
    int dev = 0;
    struct cudaDeviceProp prop;
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    printf("%s, %d SMs; 8192 x 8192 uint16 (%.1f MB decoded), median of %d after 3 warm-ups\n", prop.name,
           prop.multiProcessorCount, (double)SIDE * SIDE * 2 / 1e6, reps);
    static const struct {
        const char *name;
        int noise;
    } images[] = {{"smooth", 4}, {"noisy", 64}};
    for (int i = 0; i < 2; i++) {
        uint16_t *img = make_image(images[i].noise);
        bench(images[i].name, img, 256, reps);
        bench(images[i].name, img, 512, reps);
        free(img);
    }
    return 0;
}
