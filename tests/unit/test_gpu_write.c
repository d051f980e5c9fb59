/* Device writes (zgpu_array_write_device) over every codec chain of codec_cases.h: each array written from device
 * memory and its twin written from host memory by zgpu_array_write must read back (on the host) as the same
 * values, equal to what was written: a whole array with a chunk of fill value (deleted, not written), a region
 * not aligned to chunks from a Fortran-ordered device buffer (partly covered chunks merged with their stored
 * value), and one written twice (merged again); all of it again in waves of one object each (tuning
 * write_wave_bytes), so that the waves take every buffer set in turn. Bad arguments give errors, not crashes.
 * Skips (77) without a GPU. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "zgpu.h"

#ifndef ZGPU_HAVE_CUDA
TEST_MAIN_WITHOUT_CUDA()
#else
#include <cuda_runtime.h>

#include "codec_cases.h"

static const uint64_t shape[3] = {40, 50, 60};
static char tmpdir[256];
static uint32_t rng = 4242;
static uint32_t rnd(void) {
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

/* compressible values (ramps and a little noise), the first chunk all fill value */
static void make_data(uint8_t *p, size_t isz, const uint8_t *fill, uint32_t salt) {
    for (size_t i = 0; i < 40 * 50 * 60; i++) {
        uint64_t v = (i / 60) * 3 + (i % 60) / 4 + (rnd() & 3) + salt;
        memcpy(p + i * isz, &v, isz);
        if (isz == 4 && (i % 7) == 0) {
            const float f = (float)v * 0.25f;
            memcpy(p + i * isz, &f, 4);
        }
        const size_t z = i / (50 * 60), y = (i / 60) % 50, x = i % 60;
        if (z < 16 && y < 20 && x < 24) memcpy(p + i * isz, fill, isz);
    }
}

/* F-ordered copy of the box [s, s + c) of the C-ordered array a */
static void box_f_order(const uint8_t *a, size_t isz, const uint64_t *s, const uint64_t *c, uint8_t *out) {
    for (uint64_t k = 0; k < c[2]; k++)
        for (uint64_t j = 0; j < c[1]; j++)
            for (uint64_t i = 0; i < c[0]; i++)
                memcpy(out + ((k * c[1] + j) * c[0] + i) * isz,
                       a + (((s[0] + i) * shape[1] + (s[1] + j)) * shape[2] + (s[2] + k)) * isz, isz);
}

static void put_box(uint8_t *a, size_t isz, const uint64_t *s, const uint64_t *c, const uint8_t *src_c_order) {
    for (uint64_t i = 0; i < c[0]; i++)
        for (uint64_t j = 0; j < c[1]; j++)
            memcpy(a + (((s[0] + i) * shape[1] + (s[1] + j)) * shape[2] + s[2]) * isz,
                   src_c_order + ((i * c[1] + j) * c[2]) * isz, c[2] * isz);
}

static uint8_t *to_device(const void *p, size_t n) {
    void *d = NULL;
    if (cudaMalloc(&d, n ? n : 1) != cudaSuccess) return NULL;
    cudaMemcpy(d, p, n, cudaMemcpyHostToDevice);
    return (uint8_t *)d;
}

/* both arrays read back on the host equal `want` */
static void compare(zgpu_array *dev, zgpu_array *host, const uint8_t *want, size_t nb, const char *name, const char *what) {
    uint8_t *got = malloc(nb), *ref = malloc(nb);
    const uint64_t z[3] = {0, 0, 0};
    CHECK_OK(zgpu_array_read(dev, z, shape, got, NULL));
    CHECK_OK(zgpu_array_read(host, z, shape, ref, NULL));
    CHECK_MSG(memcmp(got, want, nb) == 0, "%s: %s: the device-written array reads back wrong", name, what);
    CHECK_MSG(memcmp(ref, want, nb) == 0, "%s: %s: the host-written twin reads back wrong", name, what);
    free(got);
    free(ref);
}

static void run_case(zgpu_context *ctx, const tcase *c, const char *tag) {
    char pd[512], ph[512];
    snprintf(pd, sizeof pd, "%s/%s%s_dev", tmpdir, c->name, tag);
    snprintf(ph, sizeof ph, "%s/%s%s_host", tmpdir, c->name, tag);
    zgpu_array *a = NULL, *h = NULL;
    CHECK_OK(zgpu_array_create(ctx, pd, c->meta, 1, &a));
    CHECK_OK(zgpu_array_create(ctx, ph, c->meta, 1, &h));
    if (!a || !h) return;
    const size_t isz = zgpu_array_itemsize(a), nb = 40 * 50 * 60 * isz;
    const uint8_t *fill = zgpu_array_fill_value(a);
    uint8_t *want = malloc(nb), *box = malloc(nb), *boxc = malloc(nb);
    make_data(want, isz, fill, 0);
    const uint64_t z[3] = {0, 0, 0};
    /* whole array, C order */
    uint8_t *d = to_device(want, nb);
    zgpu_status s = zgpu_array_write_device(a, z, shape, d, NULL, NULL);
    CHECK_MSG(s == ZGPU_OK, "%s: whole write -> %s: %s", c->name, zgpu_status_name(s), zgpu_last_error());
    CHECK_OK(zgpu_array_write(h, z, shape, want, NULL));
    compare(a, h, want, nb, c->name, "whole array");
    /* the chunk of fill value was deleted (v3 "c/0/0/0", v2 "0.0.0") */
    char key[600];
    snprintf(key, sizeof key, "%s/%s", pd, strstr(c->meta, "\"zarr_format\": 3") ? "c/0/0/0" : "0.0.0");
    struct stat stt;
    CHECK_MSG(stat(key, &stt) != 0, "%s: the chunk of fill value was written (%s)", c->name, key);
    /* a region not aligned to chunks, twice, from F-ordered device buffers (partly covered chunks merged) */
    for (int round = 0; round < 2; round++) {
        const uint64_t rs[3] = {3u + (uint64_t)round * 9, 7, 5}, rc[3] = {20, 31, 33};
        uint8_t *other = malloc(nb);
        make_data(other, isz, fill, 11u + (uint32_t)round);
        size_t bn = rc[0] * rc[1] * rc[2] * isz;
        box_f_order(other, isz, rs, rc, box);
        /* the C-ordered box for the expected values */
        for (uint64_t i = 0; i < rc[0]; i++)
            for (uint64_t j = 0; j < rc[1]; j++)
                memcpy(boxc + ((i * rc[1] + j) * rc[2]) * isz,
                       other + (((rs[0] + i) * shape[1] + (rs[1] + j)) * shape[2] + rs[2]) * isz, rc[2] * isz);
        put_box(want, isz, rs, rc, boxc);
        const int64_t fs[3] = {(int64_t)isz, (int64_t)(isz * rc[0]), (int64_t)(isz * rc[0] * rc[1])};
        uint8_t *db = to_device(box, bn);
        s = zgpu_array_write_device(a, rs, rc, db, fs, NULL);
        CHECK_MSG(s == ZGPU_OK, "%s: region write -> %s: %s", c->name, zgpu_status_name(s), zgpu_last_error());
        CHECK_OK(zgpu_array_write(h, rs, rc, box, fs));
        compare(a, h, want, nb, c->name, round ? "second region" : "region");
        cudaFree(db);
        free(other);
    }
    /* bad arguments */
    const uint64_t far[3] = {39, 0, 0}, two[3] = {2, 1, 1};
    CHECK_STATUS(zgpu_array_write_device(a, far, two, d, NULL, NULL), ZGPU_ERR_OUT_OF_RANGE);
    CHECK_STATUS(zgpu_array_write_device(a, z, two, NULL, NULL, NULL), ZGPU_ERR_INVALID_ARGUMENT);
    cudaFree(d);
    free(want);
    free(box);
    free(boxc);
    zgpu_array_close(a);
    zgpu_array_close(h);
}

int main(void) {
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        (void)zt_pass, (void)zt_fail;
        TEST_SKIP("no GPU");
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zgpu_test_gpu_write_%d", (int)getpid());
    mkdir(tmpdir, 0755);
    zgpu_context *ctx = NULL;
    CHECK_OK(zgpu_context_create(NULL, &ctx));
    if (!ctx) TEST_MAIN_END();
    for (size_t i = 0; i < N_CASES; i++) {
        run_case(ctx, &cases[i], "");
        printf("%-32s written from device memory, read back\n", cases[i].name);
    }
    zgpu_context_free(ctx);
    /* waves of one object each (write_wave_bytes 1), 8 threads: a wave a chunk or shard, taking the four buffer
     * sets in turn, the writes of three waves in flight while the next encodes */
    zgpu_status made;
    ctx = zt_context_waves_of_one(&made);
    CHECK_OK(made);
    if (!ctx) TEST_MAIN_END();
    for (size_t i = 0; i < N_CASES; i++) {
        run_case(ctx, &cases[i], "_waves");
        printf("%-32s written in waves of one object, read back\n", cases[i].name);
    }
    zgpu_context_free(ctx);
    zt_remove_dir(tmpdir);
    TEST_MAIN_END();
}
#endif
