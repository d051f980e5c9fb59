/* Host reads decoded on the GPU (zgpu_tuning.host_read_route; device/host_dest.c). With host_read_route DEVICE every
 * read into host memory equals the host executor's byte for byte, whatever the layout (zstd, gzip, blosc-lz4,
 * sharded zstd, uncompressed; missing chunks at the fill value), the boxes (the whole array, many boxes into
 * separate buffers, a stacked batch, a read of several pieces of the copy back) and a conversion on the fly, and
 * it took the GPU (the read's stats: route device, chunks decoded there); strided destinations read on the host.
 * AUTO reads on the host until the context's GPU has run a device read; HOST never uses the GPU. A damaged chunk is
 * an error naming it, as the device read's. Without a GPU the same reads under DEVICE must come from the host (route
 * 0) and equal: that part runs everywhere, then the test reports skipped (77). */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "zgpu.h"
#include "zgpu_experimental.h"

#ifdef ZGPU_HAVE_CUDA
#include <cuda_runtime.h>
#endif

static char tmpdir[256];
static uint32_t rng = 77;
static uint32_t rnd(void) {
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

#define META3(shape, chunks, codecs)                                                                           \
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": " shape ", \"data_type\": \"uint16\", "         \
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": " chunks "}}, "              \
    "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, "              \
    "\"fill_value\": 7, \"codecs\": " codecs "}"
#define BYTES "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"
#define ZSTD "{\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": false}}"
#define GZIP "{\"name\": \"gzip\", \"configuration\": {\"level\": 1}}"
#define BLOSC "{\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": \"shuffle\", " \
              "\"typesize\": 2, \"blocksize\": 0}}"
#define SMALL "[40, 50, 60]"
#define SMALL_CHUNKS "[16, 20, 24]"

typedef struct layout {
    const char *name, *meta;
    uint64_t shape[3];
} layout;

static const layout layouts[] = {
    {"zstd", META3(SMALL, SMALL_CHUNKS, "[" BYTES ", " ZSTD "]"), {40, 50, 60}},
    {"gzip", META3(SMALL, SMALL_CHUNKS, "[" BYTES ", " GZIP "]"), {40, 50, 60}},
    {"blosc", META3(SMALL, SMALL_CHUNKS, "[" BYTES ", " BLOSC "]"), {40, 50, 60}},
    {"sharded", META3(SMALL, SMALL_CHUNKS, "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": "
                                           "[8, 10, 12], \"codecs\": [" BYTES ", " ZSTD "], \"index_codecs\": [" BYTES
                                           ", {\"name\": \"crc32c\"}], \"index_location\": \"end\"}}]"),
     {40, 50, 60}},
    {"raw", META3(SMALL, SMALL_CHUNKS, "[" BYTES "]"), {40, 50, 60}},
    /* 48 MiB: the copy back in three pieces (ZG_ROUTE_BACK_PIECE, 16 MiB) */
    {"big_zstd", META3("[96, 512, 512]", "[32, 256, 256]", "[" BYTES ", " ZSTD "]"), {96, 512, 512}},
};

static size_t elems(const uint64_t *c) { return (size_t)(c[0] * c[1] * c[2]); }

static int last_route(zgpu_array *a, int *gpu_decoded) {
    zgpu_read_stats s;
    s.struct_size = sizeof s;
    zgpu_array_last_read_stats(a, &s);
    if (gpu_decoded) *gpu_decoded = s.gpu_decoded;
    return s.route;
}

/* Every read of the layout through `dev` (host_read_route DEVICE) against the same through `host`. want_route:
 * what a contiguous read's stats must say (ZGPU_ROUTE_DEVICE with a GPU, 0 without). */
static void compare(const layout *L, zgpu_array *host, zgpu_array *dev, int want_route) {
    const uint64_t *shape = L->shape, zero[3] = {0, 0, 0};
    const size_t n = elems(shape);
    uint16_t *ref = malloc(n * 2), *got = malloc(n * 2);
    /* the whole array */
    CHECK_OK(zgpu_array_read(host, zero, shape, ref, NULL));
    memset(got, 0xEE, n * 2);
    CHECK_OK(zgpu_array_read(dev, zero, shape, got, NULL));
    CHECK_MSG(!memcmp(got, ref, n * 2), "%s: whole read differs", L->name);
    int gd = 0;
    const int route = last_route(dev, &gd);
    CHECK_MSG(route == want_route, "%s: whole read took route %d, wanted %d", L->name, route, want_route);
    if (want_route == ZGPU_ROUTE_DEVICE && strcmp(L->name, "raw") != 0)
        CHECK_MSG(gd > 0, "%s: whole read decoded no chunk on the GPU", L->name);
    /* many boxes into separate buffers (one empty, two equal, one of a missing chunk only) */
    enum { NB = 7 };
    uint64_t st[NB * 3], ct[NB * 3];
    for (int b = 0; b < NB; b++)
        for (int d = 0; d < 3; d++) {
            ct[b * 3 + d] = 1 + rnd() % (shape[d] / 2);
            st[b * 3 + d] = rnd() % (shape[d] - ct[b * 3 + d] + 1);
        }
    for (int d = 0; d < 3; d++) {
        st[3 + d] = st[d];
        ct[3 + d] = ct[d];
        st[6 + d] = 0; /* box 2: inside the first chunk, which stays missing */
        ct[6 + d] = 4;
    }
    ct[3 * 3 + 2] = 0; /* box 3: empty */
    size_t off[NB + 1] = {0};
    for (int b = 0; b < NB; b++) off[b + 1] = off[b] + elems(ct + b * 3);
    const uint64_t c[3] = {5, 9, 13}; /* (the stacked batch's boxes, below) */
    const size_t one = elems(c), cap = off[NB] > 12 * one ? off[NB] : 12 * one;
    uint16_t *rb = malloc(cap * 2 + 2), *gb = malloc(cap * 2 + 2);
    void *ro[NB], *go[NB];
    for (int b = 0; b < NB; b++) {
        ro[b] = rb + off[b];
        go[b] = gb + off[b];
    }
    CHECK_OK(zgpu_array_read_regions(host, NB, st, ct, ro, NULL, NULL));
    memset(gb, 0xEE, off[NB] * 2);
    CHECK_OK(zgpu_array_read_regions(dev, NB, st, ct, go, NULL, NULL));
    CHECK_MSG(!memcmp(gb, rb, off[NB] * 2), "%s: regions differ", L->name);
    CHECK_MSG(last_route(dev, NULL) == want_route, "%s: regions took route %d", L->name, last_route(dev, NULL));
    CHECK_MSG(rb[off[2]] == 7 && gb[off[2]] == 7, "%s: a missing chunk's box reads %u, not the fill value",
              L->name, (unsigned)gb[off[2]]);
    /* a stacked batch: 12 boxes of one shape, back to back */
    uint64_t bs[12 * 3], bc[12 * 3];
    void *bo[12];
    for (int b = 0; b < 12; b++) {
        for (int d = 0; d < 3; d++) {
            bc[b * 3 + d] = c[d];
            bs[b * 3 + d] = rnd() % (shape[d] - c[d] + 1);
        }
        bo[b] = gb + (size_t)b * one;
        CHECK_OK(zgpu_array_read(host, bs + b * 3, c, rb + (size_t)b * one, NULL));
    }
    CHECK_OK(zgpu_array_read_regions(dev, 12, bs, bc, bo, NULL, NULL));
    CHECK_MSG(!memcmp(gb, rb, 12 * one * 2), "%s: stacked batch differs", L->name);
    /* converted on the fly: uint16 -> float32, scaled, offset and clamped */
    zgpu_read_options o;
    zgpu_read_options_init(&o);
    o.out_dtype = ZGPU_FLOAT32;
    o.scale = 1.0 / 65535;
    o.offset = -0.25;
    o.clamp = 1;
    o.clamp_min = 0;
    o.clamp_max = 0.5;
    const uint64_t cs[3] = {shape[0] / 2, shape[1] / 3, shape[2] / 2}, cc[3] = {shape[0] / 2, shape[1] / 2, 17};
    float *rf = malloc(elems(cc) * 4), *gf = malloc(elems(cc) * 4);
    CHECK_OK(zgpu_array_read_ex(host, cs, cc, rf, NULL, &o));
    CHECK_OK(zgpu_array_read_ex(dev, cs, cc, gf, NULL, &o));
    CHECK_MSG(!memcmp(gf, rf, elems(cc) * 4), "%s: converted read differs", L->name);
    /* a strided destination (rows padded by one element): the host's */
    const uint64_t sc[3] = {3, 7, 11};
    int64_t strides[3] = {7 * 12 * 2, 12 * 2, 2};
    memset(gb, 0, 3 * 7 * 12 * 2);
    CHECK_OK(zgpu_array_read(dev, cs, sc, gb, strides));
    CHECK_OK(zgpu_array_read(host, cs, sc, rb, NULL));
    int bad = 0;
    for (size_t z = 0; z < 3; z++)
        for (size_t y = 0; y < 7; y++)
            for (size_t x = 0; x < 11; x++) bad += gb[(z * 7 + y) * 12 + x] != rb[(z * 7 + y) * 11 + x];
    CHECK_MSG(!bad, "%s: %d elements of a strided destination differ", L->name, bad);
    CHECK_MSG(last_route(dev, NULL) == 0, "%s: a strided destination took route %d", L->name, last_route(dev, NULL));
    free(rf);
    free(gf);
    free(rb);
    free(gb);
    free(ref);
    free(got);
}

static zgpu_context *context_with(zgpu_route host_read_route) {
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    zgpu_tuning t;
    zgpu_tuning_init(&t);
    t.host_read_route = host_read_route;
    o.tuning = &t;
    zgpu_context *ctx = NULL;
    CHECK_OK(zgpu_context_create(&o, &ctx));
    return ctx;
}

#ifdef ZGPU_HAVE_CUDA
/* AUTO: host reads until a device read starts the context's GPU, then the model's pick (either way equal). */
static void auto_route(const char *path, const uint16_t *ref) {
    zgpu_context *ctx = context_with(ZGPU_ROUTE_AUTO);
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_open(ctx, path, &a));
    if (!a) return;
    const uint64_t zero[3] = {0, 0, 0}, shape[3] = {96, 512, 512}, one[3] = {1, 1, 1};
    const size_t n = elems(shape);
    uint16_t *got = malloc(n * 2);
    CHECK_OK(zgpu_array_read(a, zero, shape, got, NULL));
    CHECK_MSG(last_route(a, NULL) == 0, "auto: a host read before any device read took route %d", last_route(a, NULL));
    void *d = NULL;
    CUOK(cudaMalloc(&d, 2));
    CHECK_OK(zgpu_array_read_device(a, zero, one, d, NULL, NULL));
    cudaFree(d);
    memset(got, 0, n * 2);
    CHECK_OK(zgpu_array_read(a, zero, shape, got, NULL));
    CHECK_MSG(!memcmp(got, ref, n * 2), "auto: whole read after a device read differs");
    printf("auto: after a device read, the whole 48 MiB zstd array took route %d\n", last_route(a, NULL));
    free(got);
    zgpu_array_close(a);
    zgpu_context_free(ctx);
}

/* A damaged chunk: an error naming it, never other bytes. */
static void damaged(zgpu_context *dev, const char *path) {
    char file[700];
    snprintf(file, sizeof file, "%s/c/1/1/1", path);
    FILE *f = fopen(file, "rb");
    CHECK_MSG(f != NULL, "no chunk file %s", file);
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *orig = malloc((size_t)n);
    CHECK(fread(orig, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    f = fopen(file, "wb");
    fwrite(orig, 1, (size_t)n / 2, f); /* cut short */
    fclose(f);
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_open(dev, path, &a));
    const uint64_t zero[3] = {0, 0, 0}, shape[3] = {40, 50, 60};
    uint16_t *got = malloc(elems(shape) * 2);
    const zgpu_status s = zgpu_array_read(a, zero, shape, got, NULL);
    CHECK_MSG(s == ZGPU_ERR_CORRUPT_DATA && strstr(zgpu_last_error(), "c/1/1/1") != NULL,
              "a chunk cut short: %s: %s", zgpu_status_name(s), zgpu_last_error());
    printf("  damaged chunk -> %s\n", zgpu_last_error());
    free(got);
    zgpu_array_close(a);
    f = fopen(file, "wb");
    fwrite(orig, 1, (size_t)n, f);
    fclose(f);
    free(orig);
}
#endif

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zgpu_test_host_dest_%d", (int)getpid());
    mkdir(tmpdir, 0755);
    const int gpu = zgpu_gpu_available();
    char why[512];
    snprintf(why, sizeof why, "%s", gpu ? "" : zgpu_last_error());
    zgpu_context *host = context_with(ZGPU_ROUTE_HOST), *dev = context_with(ZGPU_ROUTE_DEVICE);
    uint16_t *big_ref = NULL;
    char big_path[512] = "";
    for (size_t l = 0; l < sizeof layouts / sizeof *layouts; l++) {
        const layout *L = &layouts[l];
        char path[512];
        snprintf(path, sizeof path, "%s/%s", tmpdir, L->name);
        zgpu_array *a = NULL, *b = NULL;
        CHECK_OK(zgpu_array_create(host, path, L->meta, 1, &a));
        if (!a) continue;
        /* noisy values (the codecs keep most bytes), everything but the first chunk written */
        const size_t n = elems(L->shape);
        uint16_t *data = malloc(n * 2);
        for (size_t i = 0; i < n; i++) data[i] = (uint16_t)(i * 7 + (rnd() & 0x3ff));
        const uint64_t s0[3] = {L->shape[0] / 2, 0, 0}, c0[3] = {L->shape[0] - L->shape[0] / 2, L->shape[1], L->shape[2]};
        const uint64_t s1[3] = {0, L->shape[1] / 2, 0}, c1[3] = {L->shape[0] / 2, L->shape[1] - L->shape[1] / 2, L->shape[2]};
        CHECK_OK(zgpu_array_write(a, s0, c0, data, NULL));
        CHECK_OK(zgpu_array_write(a, s1, c1, data + elems(c0), NULL));
        CHECK_OK(zgpu_array_open(dev, path, &b));
        if (b) compare(L, a, b, gpu ? ZGPU_ROUTE_DEVICE : 0);
        if (!strcmp(L->name, "big_zstd")) {
            const uint64_t zero[3] = {0, 0, 0};
            big_ref = malloc(n * 2);
            CHECK_OK(zgpu_array_read(a, zero, L->shape, big_ref, NULL));
            snprintf(big_path, sizeof big_path, "%s", path);
        }
        free(data);
        zgpu_array_close(a);
        zgpu_array_close(b);
    }
#ifdef ZGPU_HAVE_CUDA
    if (gpu && big_ref) auto_route(big_path, big_ref);
    if (gpu) {
        char path[512];
        snprintf(path, sizeof path, "%s/zstd", tmpdir);
        damaged(dev, path);
    }
    /* HOST: never the GPU, even once the context's GPU is up */
    if (gpu && big_ref) {
        zgpu_array *a = NULL;
        CHECK_OK(zgpu_array_open(host, big_path, &a));
        const uint64_t zero[3] = {0, 0, 0}, shape[3] = {96, 512, 512}, one[3] = {1, 1, 1};
        void *d = NULL;
        CUOK(cudaMalloc(&d, 2));
        CHECK_OK(zgpu_array_read_device(a, zero, one, d, NULL, NULL));
        cudaFree(d);
        uint16_t *got = malloc(elems(shape) * 2);
        CHECK_OK(zgpu_array_read(a, zero, shape, got, NULL));
        CHECK_MSG(last_route(a, NULL) == 0 && !memcmp(got, big_ref, elems(shape) * 2), "host: route %d",
                  last_route(a, NULL));
        free(got);
        zgpu_array_close(a);
    }
#endif
    free(big_ref);
    zgpu_context_free(host);
    zgpu_context_free(dev);
    zt_remove_dir(tmpdir);
    TEST_MAIN_END_GPU(gpu, why);
}
