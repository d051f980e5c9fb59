/* The converting scatter on the GPU (src/jit/scatter_gpu.c) against the host's conversion (zg_convert_box /
 * zg_convert_fill) bit for bit: descriptors built by hand for several chunks of a 3-D box (one of them missing:
 * the fill value), for type pairs with and without clamp in both compute types, with the innermost axis
 * contiguous (vector path), strided, and misaligned by a byte; random bit patterns in (NaN, infinities,
 * subnormals included). Prints the kernel cache's cold (NVRTC) and warm (disk) times and the kernel's bandwidth
 * next to the plain scatter's. Skips (77) without a GPU, without CUDA support, or without NVRTC. */
#include "test.h"
#include "zgpu.h"

#ifndef ZGPU_HAVE_CUDA
TEST_MAIN_WITHOUT_CUDA()
#else
#include <cuda_runtime.h>
#include <time.h>
#include <unistd.h>

#include "convert/convert.h"
#include "gpucodec/post/post_kernels.h"
#include "jit/jit_cache.h"
#include "jit/nvrtc_lib.h"
#include "jit/scatter_gpu.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd64(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct combo {
    zgpu_dtype in, out;
    double scale, offset;
    int clamp;
    double lo, hi;
} combo;

static const combo combos[] = {
    {ZGPU_UINT16, ZGPU_FLOAT16, 1.0 / 65535, 0, 0, 0, 0},
    {ZGPU_UINT16, ZGPU_FLOAT16, 1.0 / 4096, -0.5, 1, 0, 1},
    {ZGPU_UINT16, ZGPU_FLOAT32, 1.0 / 65535, 0, 0, 0, 0},
    {ZGPU_FLOAT32, ZGPU_UINT8, 255, 0, 1, 0, 255},
    {ZGPU_FLOAT32, ZGPU_FLOAT16, 1, 0, 0, 0, 0},
    {ZGPU_FLOAT16, ZGPU_FLOAT32, 2, 0.25, 0, 0, 0},
    {ZGPU_FLOAT16, ZGPU_INT8, 100, 0, 1, -50.5, 50.5},
    {ZGPU_INT32, ZGPU_FLOAT32, 1e-3, 0, 0, 0, 0},
    {ZGPU_FLOAT64, ZGPU_INT64, 1e6, 0.5, 0, 0, 0},
    {ZGPU_FLOAT64, ZGPU_FLOAT16, 1, 0, 1, -0.0, 70000},
    {ZGPU_INT64, ZGPU_FLOAT16, 1e-15, 0, 0, 0, 0},
    {ZGPU_UINT64, ZGPU_UINT32, 1, 0, 0, 0, 0},
    {ZGPU_UINT8, ZGPU_BOOL, 1, -3, 0, 0, 0},
    {ZGPU_BOOL, ZGPU_FLOAT64, 0.5, 0, 0, 0, 0},
    {ZGPU_INT16, ZGPU_UINT16, -1, 0, 1, 0, 40000},
    {ZGPU_FLOAT32, ZGPU_FLOAT32, 1, 0, 1, 0, 1}, /* same type, clamp only */
    {ZGPU_FLOAT32, ZGPU_FLOAT32, 1, 0, 0, 0, 0}, /* the identity: the plain scatter */
};
#define N_COMBOS (sizeof combos / sizeof combos[0])

/* random bits, with special values every so often */
static void fill_input(zgpu_dtype t, uint8_t *p, size_t n) {
    const size_t sz = zg_convert_dtype_size(t);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = rnd64();
        if (t == ZGPU_FLOAT32 && i % 7 == 0) {
            const uint32_t sp[] = {0x7fc00000u, 0xff800000u, 0x80000000u, 0x00000001u, 0x3f000000u, 0x437f8000u};
            v = sp[(i / 7) % 6];
        } else if (t == ZGPU_FLOAT32 && i % 2) { /* values in a sensible range too */
            float f = (float)((double)(v % 100000) / 300.0 - 10.0);
            uint32_t u;
            memcpy(&u, &f, 4);
            v = u;
        } else if (t == ZGPU_FLOAT64 && i % 2) {
            double d = (double)(int64_t)(v % 2000000) / 7.0;
            memcpy(&v, &d, 8);
        } else if (t == ZGPU_BOOL) {
            v &= 1;
        }
        memcpy(p + i * sz, &v, sz);
    }
}

enum { ND = 3, N_ITEMS = 4 };
static const uint64_t chunk[ND] = {6, 10, 37};
static const uint64_t out_shape[ND] = {12, 20, 80};

/* One launch over 4 chunks (the last missing: fill) into a 12 x 20 x 80 output. layout 0: innermost contiguous on
 * both sides; 1: every other element on both sides; 2: contiguous, the output one byte off alignment. */
static int run_combo(const combo *cb, int layout) {
    zgpu_read_options o;
    zgpu_read_options_init(&o);
    o.out_dtype = cb->out;
    o.scale = cb->scale;
    o.offset = cb->offset;
    o.clamp = cb->clamp;
    o.clamp_min = cb->lo;
    o.clamp_max = cb->hi;
    zg_xform x;
    const size_t isz = zg_convert_dtype_size(cb->in), osz = zg_convert_dtype_size(cb->out);
    CHECK_OK(zg_xform_make(&o, cb->in, isz, "gpu", &x));
    const int step = layout == 1 ? 2 : 1;
    int64_t ss[ND], ds[ND];
    ss[2] = (int64_t)(isz * step);
    ss[1] = ss[2] * (int64_t)chunk[2];
    ss[0] = ss[1] * (int64_t)chunk[1];
    ds[2] = (int64_t)(osz * step);
    ds[1] = ds[2] * (int64_t)out_shape[2];
    ds[0] = ds[1] * (int64_t)out_shape[1];
    const size_t chunk_bytes = (size_t)ss[0] * chunk[0], out_bytes = (size_t)ds[0] * out_shape[0] + 16;
    const uint64_t counts[N_ITEMS][ND] = {{6, 10, 37}, {6, 10, 37}, {5, 7, 20}, {4, 9, 33}};
    const uint64_t at[N_ITEMS][ND] = {{0, 0, 0}, {6, 10, 40}, {1, 11, 3}, {7, 0, 44}};
    const size_t off = layout == 2 ? 1 : 0;

    uint8_t *h_in = malloc(chunk_bytes * N_ITEMS), *h_ref = malloc(out_bytes), *h_out = malloc(out_bytes);
    fill_input(cb->in, h_in, chunk_bytes * N_ITEMS / isz);
    uint8_t fill[8];
    fill_input(cb->in, fill, 1);
    memset(h_ref, 0x5a, out_bytes);
    uint8_t *d_in = NULL, *d_out = NULL, *d_fill = NULL;
    zg_k_scatter *d_items = NULL;
    uint64_t *d_counts = NULL;
    CUOK(cudaMalloc((void **)&d_in, chunk_bytes * N_ITEMS));
    CUOK(cudaMalloc((void **)&d_out, out_bytes));
    CUOK(cudaMalloc((void **)&d_fill, 8));
    CUOK(cudaMalloc((void **)&d_items, sizeof(zg_k_scatter) * N_ITEMS));
    CUOK(cudaMalloc((void **)&d_counts, sizeof counts));
    CUOK(cudaMemcpy(d_in, h_in, chunk_bytes * N_ITEMS, cudaMemcpyHostToDevice));
    CUOK(cudaMemcpy(d_out, h_ref, out_bytes, cudaMemcpyHostToDevice));
    CUOK(cudaMemcpy(d_fill, fill, isz, cudaMemcpyHostToDevice));
    CUOK(cudaMemcpy(d_counts, counts, sizeof counts, cudaMemcpyHostToDevice));

    zg_k_scatter items[N_ITEMS];
    uint64_t max_rows = 0;
    for (int i = 0; i < N_ITEMS; i++) {
        size_t o_at = off;
        for (int d = 0; d < ND; d++) o_at += (size_t)at[i][d] * (size_t)ds[d];
        const int missing = i == N_ITEMS - 1;
        items[i].src = missing ? NULL : d_in + (size_t)i * chunk_bytes;
        items[i].dst = d_out + o_at;
        if (missing) zg_convert_fill(ND, counts[i], &x, h_ref + o_at, ds, fill);
        else zg_convert_box(ND, counts[i], &x, h_ref + o_at, ds, h_in + (size_t)i * chunk_bytes, ss);
        const uint64_t rows = counts[i][0] * counts[i][1];
        max_rows = rows > max_rows ? rows : max_rows;
    }
    CUOK(cudaMemcpy(d_items, items, sizeof items, cudaMemcpyHostToDevice));
    zg_k_scatter_params p;
    memset(&p, 0, sizeof p);
    p.ndim = ND;
    p.itemsize = (int)isz;
    memcpy(p.src_strides, ss, sizeof ss);
    memcpy(p.dst_strides, ds, sizeof ds);
    p.d_fill = d_fill;
    const zgpu_status st = zg_jit_scatter_launch(&x, &p, d_items, d_counts, N_ITEMS, max_rows, 0);
    CHECK_MSG(st == ZGPU_OK, "%s", zgpu_last_error());
    CUOK(cudaDeviceSynchronize());
    CUOK(cudaMemcpy(h_out, d_out, out_bytes, cudaMemcpyDeviceToHost));
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < out_bytes; i++)
        if (h_out[i] != h_ref[i] && !bad++) first = i;
    CHECK_MSG(bad == 0, "%s -> %s (scale %g offset %g clamp %d) layout %d: %zu bytes differ, first at %zu: 0x%02x,"
              " host 0x%02x", zg_convert_dtype_name(cb->in), zg_convert_dtype_name(cb->out), cb->scale, cb->offset,
              cb->clamp, layout, bad, first, h_out[first], h_ref[first]);
    cudaFree(d_in);
    cudaFree(d_out);
    cudaFree(d_fill);
    cudaFree(d_items);
    cudaFree(d_counts);
    free(h_in);
    free(h_ref);
    free(h_out);
    return bad != 0;
}

/* cold: NVRTC + load; warm: a new process's path (disk + load); hot: a lookup */
static void timings(void) {
    zgpu_read_options o;
    zgpu_read_options_init(&o);
    o.out_dtype = ZGPU_FLOAT16;
    o.scale = 1.0 / 1023;
    o.clamp = 1;
    o.clamp_max = 1;
    zg_xform x;
    CHECK_OK(zg_xform_make(&o, ZGPU_UINT16, 2, "timing", &x));
    zg_jit_stats s;
    zg_jit_stats_reset();
    double t = now_s();
    CHECK_OK(zg_jit_scatter_prepare(&x, 1));
    const double cold = now_s() - t;
    zg_jit_stats_get(&s);
    printf("kernel cache, cold: %.1f ms (NVRTC %.1f ms, cubin load %.2f ms), %llu compile\n", 1000 * cold,
           1000 * s.compile_s, 1000 * s.module_load_s, (unsigned long long)s.compiles);
    zg_jit_scatter_forget();
    zg_jit_cache_forget_memory();
    zg_jit_stats_reset();
    t = now_s();
    CHECK_OK(zg_jit_scatter_prepare(&x, 1));
    const double warm = now_s() - t;
    zg_jit_stats_get(&s);
    CHECK(s.disk_hits == 1 && s.compiles == 0);
    printf("kernel cache, warm: %.2f ms (disk %.3f ms, cubin load %.2f ms)\n", 1000 * warm, 1000 * s.disk_load_s,
           1000 * s.module_load_s);
    t = now_s();
    for (int i = 0; i < 1000; i++) CHECK_OK(zg_jit_scatter_prepare(&x, 1));
    printf("kernel cache, hot: %.2f us a lookup\n", (now_s() - t) * 1000);
}

/* u16 -> f16 normalised over 256 MiB of input in 64 chunks, next to the plain scatter of the same bytes */
static void bandwidth(void) {
    enum { CH = 64 };
    const uint64_t rows = 1024, row = 2048; /* a chunk: 1024 rows of 2048 uint16 (4 MiB) */
    const size_t in_chunk = rows * row * 2;
    uint8_t *d_in = NULL, *d_out = NULL;
    zg_k_scatter *d_items = NULL;
    uint64_t *d_counts = NULL;
    if (cudaMalloc((void **)&d_in, in_chunk * CH) != cudaSuccess ||
        cudaMalloc((void **)&d_out, in_chunk * CH * 2) != cudaSuccess) {
        printf("bandwidth: not enough device memory, skipped\n");
        cudaFree(d_in);
        return;
    }
    /* every chunk holds the same varied values; rows are 16-byte aligned: the vector path throughout */
    uint16_t *h_pat = malloc(in_chunk), *h_ref = malloc(in_chunk), *h_got = malloc(in_chunk);
    for (size_t i = 0; i < rows * row; i++) h_pat[i] = (uint16_t)((i * 2654435761u) >> 16);
    for (int i = 0; i < CH; i++) CUOK(cudaMemcpy(d_in + (size_t)i * in_chunk, h_pat, in_chunk, cudaMemcpyHostToDevice));
    zg_k_scatter items[CH];
    uint64_t counts[CH][2];
    for (int i = 0; i < CH; i++) {
        items[i] = (zg_k_scatter){d_in + (size_t)i * in_chunk, d_out + (size_t)i * in_chunk * 2};
        counts[i][0] = rows;
        counts[i][1] = row;
    }
    CUOK(cudaMalloc((void **)&d_items, sizeof items));
    CUOK(cudaMalloc((void **)&d_counts, sizeof counts));
    CUOK(cudaMemcpy(d_items, items, sizeof items, cudaMemcpyHostToDevice));
    CUOK(cudaMemcpy(d_counts, counts, sizeof counts, cudaMemcpyHostToDevice));
    zgpu_read_options o;
    zgpu_read_options_init(&o);
    o.out_dtype = ZGPU_FLOAT16;
    o.scale = 1.0 / 65535;
    zg_xform x;
    CHECK_OK(zg_xform_make(&o, ZGPU_UINT16, 2, "bw", &x));
    zg_k_scatter_params p;
    memset(&p, 0, sizeof p);
    p.ndim = 2;
    p.itemsize = 2;
    p.src_strides[0] = (int64_t)row * 2;
    p.src_strides[1] = 2;
    p.dst_strides[0] = (int64_t)row * 2;
    p.dst_strides[1] = 2;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    float ms_conv = 1e9f, ms_plain = 1e9f, ms;
    for (int r = 0; r < 5; r++) {
        cudaEventRecord(e0, 0);
        CHECK_OK(zg_jit_scatter_launch(&x, &p, d_items, d_counts, CH, rows, 0));
        cudaEventRecord(e1, 0);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms, e0, e1);
        ms_conv = ms < ms_conv ? ms : ms_conv;
        cudaEventRecord(e0, 0);
        CUOK(zg_k_scatter_launch(&p, d_items, d_counts, CH, rows, 0));
        cudaEventRecord(e1, 0);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms, e0, e1);
        ms_plain = ms < ms_plain ? ms : ms_plain;
    }
    const uint64_t n_all[1] = {rows * row};
    const int64_t st2[1] = {2};
    zg_convert_box(1, n_all, &x, (uint8_t *)h_ref, st2, (const uint8_t *)h_pat, st2);
    CHECK_OK(zg_jit_scatter_launch(&x, &p, d_items, d_counts, CH, rows, 0)); /* (the plain scatter ran last) */
    CUOK(cudaDeviceSynchronize());
    int bad = 0;
    for (int i = 0; i < CH; i += CH - 1) { /* the first and the last chunk */
        CUOK(cudaMemcpy(h_got, d_out + (size_t)i * in_chunk * 2, in_chunk, cudaMemcpyDeviceToHost));
        bad += memcmp(h_got, h_ref, in_chunk) != 0;
    }
    CHECK_MSG(bad == 0, "u16 -> f16 over aligned rows: %d chunks differ from the host", bad);
    free(h_pat);
    free(h_ref);
    free(h_got);
    const double gb = (double)in_chunk * CH * 2 / 1e9; /* read + write */
    printf("u16 -> f16 /65535, 256 MiB in 64 chunks: converting scatter %.3f ms (%.0f GB/s), plain scatter %.3f ms "
           "(%.0f GB/s)\n", ms_conv, gb / (ms_conv / 1e3), ms_plain, gb / (ms_plain / 1e3));
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(d_in);
    cudaFree(d_out);
    cudaFree(d_items);
    cudaFree(d_counts);
}

int main(void) {
    if (!zgpu_gpu_available()) {
        printf("skipped: no GPU (%s)\n", zgpu_last_error());
        return 77;
    }
    const char *why = NULL;
    if (!zg_nvrtc_available(&why)) {
        printf("skipped: no NVRTC (%s)\n", why);
        return 77;
    }
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/zgpu-gpu-jit-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    zg_jit_cache_configure(dir, 0); /* an empty cache: the first build is cold */
    timings();
    int bad = 0;
    for (size_t c = 0; c < N_COMBOS; c++)
        for (int layout = 0; layout < 3; layout++) bad += run_combo(&combos[c], layout);
    printf("%zu pairs x 3 layouts: %d differ from the host\n", N_COMBOS, bad);
    bandwidth();
    zg_jit_stats s;
    zg_jit_stats_get(&s);
    printf("kernel cache: %llu compiles (%.2f s), %llu disk hits, %llu memory hits, %llu loads (%.3f s)\n",
           (unsigned long long)s.compiles, s.compile_s, (unsigned long long)s.disk_hits,
           (unsigned long long)s.memory_hits, (unsigned long long)s.module_loads, s.module_load_s);
    zg_jit_cache_configure("", 0);
    zt_remove_dir(dir);
    TEST_MAIN_END();
}
#endif
