/* Reads that convert on the fly (zgpu_read_options): uint16 -> float32 normalised, -> float16, -> uint8 clamped,
 * through zgpu_array_read_ex (whole chunks decoded in place are converted too), regions, the chunk cache, fill
 * values of missing chunks, strided destinations; bad options are errors naming the array. The device reads (both
 * routes) must give the same bytes as the host. Without a GPU the host part runs and the device part is skipped. */
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convert/convert.h"
#include "test.h"
#include "zgpu.h"
#include "zgpu_experimental.h"

#ifdef ZGPU_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#define Z 24
#define Y 30
#define X 40
static const char META[] =
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [24, 30, 40], \"data_type\": \"uint16\", "
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [8, 10, 40]}}, "
    "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, "
    "\"fill_value\": 4000, \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
    "{\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": false}}]}";

static uint16_t src[Z * Y * X]; /* what the array holds (the first chunk missing: fill 4000) */

typedef struct ocase {
    const char *name;
    zgpu_dtype out;
    double scale, offset;
    int clamp;
    double lo, hi;
} ocase;

static const ocase cases[] = {
    {"f32 normalised", ZGPU_FLOAT32, 1.0 / 65535.0, 0.0, 0, 0, 0},
    {"f16 centred", ZGPU_FLOAT16, 1.0 / 4096.0, -8.0, 0, 0, 0},
    {"u8 clamped", ZGPU_UINT8, 0.01, 3.0, 1, 0.0, 255.0},
    {"i32 shifted", ZGPU_INT32, -1.0, 100.0, 0, 0, 0},
};

static zgpu_read_options opts_of(const ocase *c) {
    zgpu_read_options o;
    zgpu_read_options_init(&o);
    o.out_dtype = c->out;
    o.scale = c->scale;
    o.offset = c->offset;
    o.clamp = c->clamp;
    o.clamp_min = c->lo;
    o.clamp_max = c->hi;
    return o;
}

/* The reference: each source value through zg_convert_value (its own unit tests check it against the rules). */
static void expect(const ocase *c, const uint64_t *st, const uint64_t *ct, uint8_t *out) {
    zgpu_read_options o = opts_of(c);
    zg_xform x;
    if (zg_xform_make(&o, ZGPU_UINT16, 2, "test", &x) != ZGPU_OK) abort();
    size_t k = 0;
    for (uint64_t z = st[0]; z < st[0] + ct[0]; z++)
        for (uint64_t y = st[1]; y < st[1] + ct[1]; y++)
            for (uint64_t xx = st[2]; xx < st[2] + ct[2]; xx++, k++)
                zg_convert_value(&x, (const uint8_t *)&src[(z * Y + y) * X + xx], out + k * x.out_itemsize);
}

static size_t out_size(zgpu_dtype t) { return zg_convert_dtype_size(t); }

static void host_part(zgpu_array *a, zgpu_array *cached) {
    const uint64_t boxes[3][6] = {{0, 0, 0, Z, Y, X}, {3, 7, 0, 9, 20, 40}, {8, 10, 0, 8, 10, 40}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const ocase *c = &cases[i];
        zgpu_read_options o = opts_of(c);
        const size_t osz = out_size(c->out);
        for (int b = 0; b < 3; b++) {
            const uint64_t *st = boxes[b], *ct = boxes[b] + 3;
            const size_t n = (size_t)(ct[0] * ct[1] * ct[2]);
            uint8_t *want = malloc(n * osz), *got = malloc(n * osz);
            expect(c, st, ct, want);
            for (int pass = 0; pass < 2; pass++) { /* the second from the cache (cached handle) */
                zgpu_array *h = pass ? cached : a;
                memset(got, 0xAB, n * osz);
                CHECK_OK(zgpu_array_read_ex(h, st, ct, got, NULL, &o));
                CHECK_MSG(!memcmp(got, want, n * osz), "%s box %d pass %d: values differ", c->name, b, pass);
            }
            /* reversed last axis into a strided destination */
            int64_t strides[3] = {(int64_t)(ct[1] * ct[2] * osz), (int64_t)(ct[2] * osz), -(int64_t)osz};
            memset(got, 0xAB, n * osz);
            CHECK_OK(zgpu_array_read_ex(a, st, ct, got + (ct[2] - 1) * osz, strides, &o));
            int bad = 0;
            for (size_t r = 0; r < n / ct[2]; r++)
                for (uint64_t e = 0; e < ct[2]; e++)
                    bad += memcmp(got + (r * ct[2] + (ct[2] - 1 - e)) * osz, want + (r * ct[2] + e) * osz, osz) != 0;
            CHECK_MSG(!bad, "%s box %d reversed: %d values differ", c->name, b, bad);
            free(want);
            free(got);
        }
        /* regions: two boxes sharing a chunk, converted */
        uint64_t st[6] = {1, 1, 1, 2, 2, 2}, ct[6] = {4, 4, 4, 4, 4, 4};
        uint8_t want[2][64 * 8], got[2][64 * 8];
        void *outs[2] = {got[0], got[1]};
        expect(c, st, ct, want[0]);
        expect(c, st + 3, ct + 3, want[1]);
        CHECK_OK(zgpu_array_read_regions(a, 2, st, ct, outs, NULL, &o));
        CHECK_MSG(!memcmp(got[0], want[0], 64 * osz) && !memcmp(got[1], want[1], 64 * osz), "%s: regions differ",
                  c->name);
    }
    /* bad options */
    zgpu_read_options o;
    zgpu_read_options_init(&o);
    o.out_dtype = ZGPU_COMPLEX64;
    uint64_t st[3] = {0, 0, 0}, ct[3] = {1, 1, 1};
    uint8_t buf[16];
    CHECK_STATUS(zgpu_array_read_ex(a, st, ct, buf, NULL, &o), ZGPU_ERR_UNSUPPORTED);
    o.out_dtype = ZGPU_FLOAT32;
    o.scale = NAN;
    CHECK_STATUS(zgpu_array_read_ex(a, st, ct, buf, NULL, &o), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(zgpu_last_error(), "array '") != NULL, "the error does not name the array: %s", zgpu_last_error());
}

#ifdef ZGPU_HAVE_CUDA
static void device_part(zgpu_array *a, const char *route) {
    const uint64_t st[3] = {2, 5, 0}, ct[3] = {20, 20, 40};
    const size_t n = 20 * 20 * 40;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const ocase *c = &cases[i];
        zgpu_read_options o = opts_of(c);
        const size_t osz = out_size(c->out);
        uint8_t *want = malloc(n * osz), *got = malloc(n * osz), *d = NULL;
        expect(c, st, ct, want);
        cudaMalloc((void **)&d, n * osz);
        cudaMemset(d, 0xAB, n * osz);
        zgpu_status s = zgpu_array_read_device_ex(a, st, ct, d, NULL, NULL, &o, NULL);
        cudaMemcpy(got, d, n * osz, cudaMemcpyDeviceToHost);
        CHECK_MSG(s == ZGPU_OK && !memcmp(got, want, n * osz), "%s (%s): device read: %s", c->name, route,
                  s == ZGPU_OK ? "values differ" : zgpu_last_error());
        cudaFree(d);
        free(want);
        free(got);
    }
}
#endif

int main(void) {
    char dir[128], path[256];
    snprintf(dir, sizeof dir, "/tmp/zgpu_test_read_convert_%d", (int)getpid());
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/a", dir);
    const int gpu = zgpu_gpu_available();
    char why[512];
    snprintf(why, sizeof why, "%s", gpu ? "" : zgpu_last_error());
    zgpu_context *ctx = NULL, *ctx_cache = NULL;
    zgpu_context_options co;
    zgpu_context_options_init(&co);
    CHECK_OK(zgpu_context_create(&co, &ctx));
    co.cache_bytes = 16 << 20;
    CHECK_OK(zgpu_context_create(&co, &ctx_cache));
    zgpu_array *a = NULL, *cached = NULL;
    CHECK_OK(zgpu_array_create(ctx, path, META, 1, &a));
    for (size_t i = 0; i < Z * Y * X; i++) src[i] = (uint16_t)((i * 2654435761u) >> 16);
    for (size_t z = 0; z < 8; z++) /* the first chunk [0,8) x [0,10) x [0,40) is not written: fill */
        for (size_t y = 0; y < 10; y++)
            for (size_t x = 0; x < X; x++) src[(z * Y + y) * X + x] = 4000;
    const uint64_t s1[3] = {0, 10, 0}, c1[3] = {Z, Y - 10, X}, s2[3] = {8, 0, 0}, c2[3] = {Z - 8, 10, X};
    uint16_t *part = malloc(sizeof src);
    for (int k = 0; k < 2; k++) {
        const uint64_t *s = k ? s2 : s1, *c = k ? c2 : c1;
        size_t m = 0;
        for (uint64_t z = s[0]; z < s[0] + c[0]; z++)
            for (uint64_t y = s[1]; y < s[1] + c[1]; y++)
                for (uint64_t x = 0; x < X; x++) part[m++] = src[(z * Y + y) * X + x];
        CHECK_OK(zgpu_array_write(a, s, c, part, NULL));
    }
    free(part);
    CHECK_OK(zgpu_array_open(ctx_cache, path, &cached));
    if (a && cached) {
        uint64_t z[3] = {0, 0, 0}, all[3] = {Z, Y, X};
        uint16_t *warm = malloc(sizeof src);
        CHECK_OK(zgpu_array_read(cached, z, all, warm, NULL)); /* fills the cache */
        CHECK_MSG(!memcmp(warm, src, sizeof src), "plain read differs");
        free(warm);
        host_part(a, cached);
    }
#ifdef ZGPU_HAVE_CUDA
    for (int r = 0; gpu && r < 2; r++) {
        zgpu_tuning t;
        zgpu_tuning_init(&t);
        t.read_route = r ? ZGPU_ROUTE_HOST : ZGPU_ROUTE_DEVICE;
        zgpu_context_options o2;
        zgpu_context_options_init(&o2);
        o2.tuning = &t;
        zgpu_context *ctx_route = NULL;
        zgpu_array *b = NULL;
        CHECK_OK(zgpu_context_create(&o2, &ctx_route));
        CHECK_OK(zgpu_array_open(ctx_route, path, &b));
        if (b) device_part(b, r ? "host route" : "device route");
        zgpu_array_close(b);
        zgpu_context_free(ctx_route);
    }
#endif
    zgpu_array_close(a);
    zgpu_array_close(cached);
    zgpu_context_free(ctx);
    zgpu_context_free(ctx_cache);
    zt_remove_dir(dir);
    TEST_MAIN_END_GPU(gpu, why);
}
