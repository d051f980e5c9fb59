/* The device chunk cache (zgpu_context_options.device_cache_bytes, src/device/chunk_cache_dev.c): a device read
 * fills it with the chunks it decodes on the GPU, and the same read again is served from it (every chunk a
 * device_cache_hit, nothing read or decoded) with data equal to the host read, for every layout the device route
 * decodes (zstd with and without checksums, sharded, v2 blosc, gzip, a transposing chain), for single boxes,
 * batches of boxes and converting reads; a write through zgpu (this context or another) drops what it changed; a
 * read that fails on a corrupt chunk keeps nothing of its wave; least recently used chunks go first; a chunk over
 * a quarter of the cache is never kept; the host route never uses it. GPU only: skipped (77) without one. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "zgpu.h"
#include "zgpu_experimental.h"

#ifdef ZGPU_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#ifdef ZGPU_HAVE_CUDA
static char tmpdir[256];

#define SHAPE "[40, 50, 60]"
#define META3(codecs)                                                                                           \
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": " SHAPE ", \"data_type\": \"uint16\", "         \
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [16, 20, 24]}}, "             \
    "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, "              \
    "\"fill_value\": 7, \"codecs\": " codecs "}"
#define BYTES "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"
#define ZSTD "{\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": false}}"
#define ZSTD_SUM "{\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": true}}"

typedef struct layout {
    const char *name, *meta;
    uint64_t chunk[3]; /* the decoded unit (inner chunk when sharded) */
} layout;

static const layout layouts[] = {
    {"zstd", META3("[" BYTES ", " ZSTD "]"), {16, 20, 24}},
    {"zstd_checksum", META3("[" BYTES ", " ZSTD_SUM "]"), {16, 20, 24}},
    {"gzip", META3("[" BYTES ", {\"name\": \"gzip\", \"configuration\": {\"level\": 5}}]"), {16, 20, 24}},
    {"transpose", META3("[{\"name\": \"transpose\", \"configuration\": {\"order\": [2, 0, 1]}}, " BYTES ", " ZSTD "]"),
     {16, 20, 24}},
    {"sharded", META3("[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [8, 10, 12], "
                      "\"codecs\": [" BYTES ", " ZSTD "], \"index_codecs\": [" BYTES ", {\"name\": \"crc32c\"}], "
                      "\"index_location\": \"end\"}}]"),
     {8, 10, 12}},
    {"v2_blosc", "{\"zarr_format\": 2, \"shape\": " SHAPE ", \"chunks\": [16, 20, 24], \"dtype\": \"<u2\", "
                 "\"fill_value\": 7, \"order\": \"C\", \"filters\": null, \"compressor\": {\"id\": \"blosc\", "
                 "\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": 1, \"blocksize\": 0}}",
     {16, 20, 24}},
};

#define N_ELEMS (40 * 50 * 60)

static zgpu_read_stats last(zgpu_array *a) {
    zgpu_read_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    zgpu_array_last_read_stats(a, &s);
    return s;
}

static int chunks_of(const uint64_t *st, const uint64_t *ct, const uint64_t *chunk) {
    int n = 1;
    for (int d = 0; d < 3; d++) n *= (int)((st[d] + ct[d] - 1) / chunk[d] - st[d] / chunk[d] + 1);
    return n;
}

/* The units (L's chunks) of box (st, ct) whose stored object (a 16x20x24 chunk or shard) the box (wst, wct) writes:
 * a write replaces whole objects, so every unit of one is dropped from the cache. */
static int units_rewritten(const uint64_t *st, const uint64_t *ct, const uint64_t *chunk, const uint64_t *wst,
                           const uint64_t *wct) {
    const uint64_t obj[3] = {16, 20, 24};
    int n = 0;
    for (uint64_t z = st[0] / chunk[0]; z <= (st[0] + ct[0] - 1) / chunk[0]; z++)
        for (uint64_t y = st[1] / chunk[1]; y <= (st[1] + ct[1] - 1) / chunk[1]; y++)
            for (uint64_t x = st[2] / chunk[2]; x <= (st[2] + ct[2] - 1) / chunk[2]; x++) {
                const uint64_t u[3] = {z, y, x};
                int in = 1;
                for (int d = 0; d < 3; d++) {
                    const uint64_t o = u[d] * chunk[d] / obj[d];
                    in &= o >= wst[d] / obj[d] && o <= (wst[d] + wct[d] - 1) / obj[d];
                }
                n += in;
            }
    return n;
}

/* The box read into device memory, compared with the host reference `ref` (the whole array). */
static int device_box_equals(zgpu_array *a, const uint16_t *ref, const uint64_t *st, const uint64_t *ct,
                             const char *what, const char *name) {
    const size_t n = (size_t)(ct[0] * ct[1] * ct[2]);
    uint16_t *d = NULL, *got = malloc(n * 2);
    cudaMalloc((void **)&d, n * 2);
    cudaMemset(d, 0xEE, n * 2);
    zgpu_status s = zgpu_array_read_device(a, st, ct, d, NULL, NULL);
    cudaMemcpy(got, d, n * 2, cudaMemcpyDeviceToHost);
    size_t bad = 0;
    for (uint64_t z = 0; s == ZGPU_OK && z < ct[0]; z++)
        for (uint64_t y = 0; y < ct[1]; y++)
            for (uint64_t x = 0; x < ct[2]; x++)
                bad += got[(z * ct[1] + y) * ct[2] + x] != ref[((st[0] + z) * 50 + st[1] + y) * 60 + st[2] + x];
    CHECK_MSG(s == ZGPU_OK && !bad, "%s, %s: %s", name, what, s == ZGPU_OK ? "data differs" : zgpu_last_error());
    cudaFree(d);
    free(got);
    return s == ZGPU_OK && !bad;
}

static void fill(uint16_t *v, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) v[i] = (uint16_t)((i % 61) * 3 + (i / 997) + seed * 11 + ((i * seed) % 5));
}

/* Filled, hit, refilled after writes, batches and conversions, for one layout. */
static void layout_case(const layout *L, zgpu_context *ctx, zgpu_context *other) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, L->name);
    zgpu_array *a = NULL, *b = NULL;
    CHECK_OK(zgpu_array_create(ctx, path, L->meta, 1, &a));
    if (!a) return;
    uint16_t *ref = malloc(N_ELEMS * 2);
    fill(ref, N_ELEMS, 1);
    const uint64_t z0[3] = {0, 0, 0}, all[3] = {40, 50, 60};
    CHECK_OK(zgpu_array_write(a, z0, all, ref, NULL));
    const uint64_t st[3] = {5, 7, 9}, ct[3] = {20, 25, 30};
    const int n = chunks_of(st, ct, L->chunk);
    /* first read: every chunk decoded on the GPU and kept */
    device_box_equals(a, ref, st, ct, "first device read", L->name);
    zgpu_read_stats s = last(a);
    CHECK_MSG(s.route == ZGPU_ROUTE_DEVICE && s.gpu_decoded == n && s.device_cache_hits == 0 && s.cache_misses == n,
              "%s: first read: route %d, %d GPU-decoded, %d device hits, %d misses (%d chunks)", L->name, s.route,
              s.gpu_decoded, s.device_cache_hits, s.cache_misses, n);
    /* again: all from the device cache, nothing read */
    device_box_equals(a, ref, st, ct, "second device read", L->name);
    s = last(a);
    CHECK_MSG(s.device_cache_hits == n && s.cache_hits == n && s.gpu_decoded == 0 && s.cpu_decoded == 0 &&
                  s.stored_bytes == 0 && s.cache_misses == 0,
              "%s: second read: %d device hits of %d, %d GPU-decoded, %d host-decoded, %llu stored bytes", L->name,
              s.device_cache_hits, n, s.gpu_decoded, s.cpu_decoded, (unsigned long long)s.stored_bytes);
    /* a box overlapping it: the shared chunks hit, the others decode */
    const uint64_t st2[3] = {0, 20, 30}, ct2[3] = {40, 30, 30};
    device_box_equals(a, ref, st2, ct2, "overlapping read", L->name);
    s = last(a);
    CHECK_MSG(s.device_cache_hits > 0 && s.device_cache_hits < chunks_of(st2, ct2, L->chunk) &&
                  s.device_cache_hits + s.gpu_decoded == chunks_of(st2, ct2, L->chunk),
              "%s: overlapping read: %d hits + %d decoded of %d", L->name, s.device_cache_hits, s.gpu_decoded,
              chunks_of(st2, ct2, L->chunk));
    /* several boxes at once (two equal, one inside another), hits and misses mixed */
    enum { NB = 4 };
    const uint64_t bst[NB * 3] = {5, 7, 9, 5, 7, 9, 30, 0, 0, 6, 8, 10}, bct[NB * 3] = {3, 4, 5, 3, 4, 5, 10, 50, 60, 2, 2, 2};
    size_t off[NB + 1] = {0};
    for (int k = 0; k < NB; k++) off[k + 1] = off[k] + (size_t)(bct[k * 3] * bct[k * 3 + 1] * bct[k * 3 + 2]);
    uint16_t *d = NULL, *got = malloc(off[NB] * 2);
    cudaMalloc((void **)&d, off[NB] * 2);
    void *outs[NB];
    for (int k = 0; k < NB; k++) outs[k] = d + off[k];
    zgpu_status rs = zgpu_array_read_regions_device(a, NB, bst, bct, outs, NULL, NULL, NULL, NULL);
    cudaMemcpy(got, d, off[NB] * 2, cudaMemcpyDeviceToHost);
    size_t bad = 0;
    for (int k = 0; rs == ZGPU_OK && k < NB; k++) {
        const uint64_t *p = bst + k * 3, *c = bct + k * 3;
        for (uint64_t z = 0; z < c[0]; z++)
            for (uint64_t y = 0; y < c[1]; y++)
                for (uint64_t x = 0; x < c[2]; x++)
                    bad += got[off[k] + (z * c[1] + y) * c[2] + x] != ref[((p[0] + z) * 50 + p[1] + y) * 60 + p[2] + x];
    }
    CHECK_MSG(rs == ZGPU_OK && !bad, "%s: regions: %s", L->name, rs == ZGPU_OK ? "data differs" : zgpu_last_error());
    CHECK_MSG(last(a).device_cache_hits > 0, "%s: regions: no device hits", L->name);
    /* a converting read of cached chunks (the conversion fused into the scatter from the cache) */
    zgpu_read_options ro;
    zgpu_read_options_init(&ro);
    ro.out_dtype = ZGPU_FLOAT32;
    ro.scale = 0.5;
    ro.offset = -3;
    const size_t nb = (size_t)(ct[0] * ct[1] * ct[2]);
    float *df = NULL, *gf = malloc(nb * 4);
    cudaMalloc((void **)&df, nb * 4);
    rs = zgpu_array_read_device_ex(a, st, ct, df, NULL, NULL, &ro, NULL);
    cudaMemcpy(gf, df, nb * 4, cudaMemcpyDeviceToHost);
    bad = 0;
    for (uint64_t z = 0; rs == ZGPU_OK && z < ct[0]; z++)
        for (uint64_t y = 0; y < ct[1]; y++)
            for (uint64_t x = 0; x < ct[2]; x++)
                bad += gf[(z * ct[1] + y) * ct[2] + x] != (float)ref[((st[0] + z) * 50 + st[1] + y) * 60 + st[2] + x] * 0.5f - 3;
    if (rs == ZGPU_ERR_UNSUPPORTED) {
        printf("%s: converting read not checked: %s\n", L->name, zgpu_last_error());
    } else {
        CHECK_MSG(rs == ZGPU_OK && !bad, "%s: converting read: %s", L->name,
                  rs == ZGPU_OK ? "data differs" : zgpu_last_error());
        s = last(a);
        CHECK_MSG(s.route != ZGPU_ROUTE_DEVICE || s.device_cache_hits == n,
                  "%s: converting read on the device route: %d device hits of %d", L->name, s.device_cache_hits, n);
    }
    cudaFree(df);
    free(gf);
    cudaFree(d);
    free(got);
    /* a write through this context drops the chunks it changed: the next read decodes those, hits the rest */
    const uint64_t wst[3] = {10, 10, 10}, wct[3] = {2, 2, 2};
    uint16_t patch[8];
    for (int i = 0; i < 8; i++) patch[i] = (uint16_t)(50000 + i);
    CHECK_OK(zgpu_array_write(a, wst, wct, patch, NULL));
    for (int i = 0; i < 8; i++) ref[((10 + i / 4) * 50 + 10 + (i / 2) % 2) * 60 + 10 + i % 2] = patch[i];
    device_box_equals(a, ref, st, ct, "read after a write", L->name);
    s = last(a);
    const int changed = units_rewritten(st, ct, L->chunk, wst, wct);
    CHECK_MSG(s.gpu_decoded == changed && s.device_cache_hits == n - changed,
              "%s: after a write of %d chunk(s): %d decoded, %d hits of %d", L->name, changed, s.gpu_decoded,
              s.device_cache_hits, n);
    /* a write through another context reaches this context's device cache too */
    CHECK_OK(zgpu_array_open(other, path, &b));
    if (b) {
        for (int i = 0; i < 8; i++) patch[i] = (uint16_t)(60000 + i);
        CHECK_OK(zgpu_array_write(b, wst, wct, patch, NULL));
        for (int i = 0; i < 8; i++) ref[((10 + i / 4) * 50 + 10 + (i / 2) % 2) * 60 + 10 + i % 2] = patch[i];
        device_box_equals(a, ref, st, ct, "read after another context's write", L->name);
        CHECK_MSG(last(a).gpu_decoded == changed, "%s: another context's write: %d decoded", L->name,
                  last(a).gpu_decoded);
        /* the whole array rewritten: nothing cached stands */
        fill(ref, N_ELEMS, 2);
        CHECK_OK(zgpu_array_write(b, z0, all, ref, NULL));
        device_box_equals(a, ref, st, ct, "read after a whole rewrite", L->name);
        CHECK_MSG(last(a).device_cache_hits == 0, "%s: after a whole rewrite: %d hits", L->name,
                  last(a).device_cache_hits);
        zgpu_array_close(b);
    }
    zgpu_array_close(a);
    free(ref);
}

/* A read that fails on a corrupt chunk keeps none of its wave's chunks; a good read of the same chunks then fills. */
static void corrupt_case(zgpu_context *ctx) {
    char path[512], chunk[600];
    snprintf(path, sizeof path, "%s/corrupt", tmpdir);
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_create(ctx, path, layouts[0].meta, 1, &a));
    if (!a) return;
    uint16_t *ref = malloc(N_ELEMS * 2);
    fill(ref, N_ELEMS, 3);
    const uint64_t z0[3] = {0, 0, 0}, all[3] = {40, 50, 60};
    CHECK_OK(zgpu_array_write(a, z0, all, ref, NULL));
    zgpu_array_close(a);
    snprintf(chunk, sizeof chunk, "%s/c/1/0/0", path);
    FILE *f = fopen(chunk, "r+b");
    CHECK(f != NULL);
    if (f) { /* a literal byte of the frame's body changed: still a valid frame shape, wrong sizes or data */
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, size / 2, SEEK_SET);
        int c = fgetc(f);
        fseek(f, size / 2, SEEK_SET);
        fputc(c ^ 0x5A, f);
        fseek(f, 8, SEEK_SET); /* and the frame header's block size field, so no decoder can miss it */
        fputc(0xFF, f);
        fclose(f);
    }
    CHECK_OK(zgpu_array_open(ctx, path, &a));
    if (!a) return;
    const uint64_t st[3] = {0, 0, 0}, ct[3] = {32, 20, 24}; /* chunks 0/0/0 (good) and 1/0/0 (corrupt) */
    uint16_t *d = NULL;
    cudaMalloc((void **)&d, 32 * 20 * 24 * 2);
    zgpu_status s = zgpu_array_read_device(a, st, ct, d, NULL, NULL);
    CHECK_MSG(s == ZGPU_ERR_CORRUPT_DATA && strstr(zgpu_last_error(), "c/1/0/0"),
              "corrupt chunk: status %d, %s", (int)s, zgpu_last_error());
    cudaFree(d);
    const uint64_t ct1[3] = {16, 20, 24};
    device_box_equals(a, ref, st, ct1, "good chunk after a failed read", "corrupt");
    CHECK_MSG(last(a).device_cache_hits == 0 && last(a).gpu_decoded == 1,
              "the failed read kept a chunk: %d device hits", last(a).device_cache_hits);
    device_box_equals(a, ref, st, ct1, "good chunk again", "corrupt");
    CHECK_MSG(last(a).device_cache_hits == 1, "good chunk not kept: %d device hits", last(a).device_cache_hits);
    zgpu_array_close(a);
    free(ref);
}

/* Capacity: least recently used chunks go first; a chunk over a quarter of the cache is never kept. */
static void capacity_case(zgpu_tuning *t) {
    const size_t chunk_bytes = 16 * 20 * 24 * 2;
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.tuning = t;
    o.device_cache_bytes = 5 * (chunk_bytes + 512); /* five entries (each its chunk plus a header and name) */
    zgpu_context *ctx = NULL, *tiny = NULL;
    CHECK_OK(zgpu_context_create(&o, &ctx));
    o.device_cache_bytes = 3 * chunk_bytes; /* a chunk is over a quarter of it */
    CHECK_OK(zgpu_context_create(&o, &tiny));
    char path[512];
    snprintf(path, sizeof path, "%s/capacity", tmpdir);
    zgpu_array *a = NULL, *b = NULL;
    CHECK_OK(zgpu_array_create(ctx, path, layouts[0].meta, 1, &a));
    uint16_t *ref = malloc(N_ELEMS * 2);
    fill(ref, N_ELEMS, 4);
    const uint64_t z0[3] = {0, 0, 0}, all[3] = {40, 50, 60};
    if (a) CHECK_OK(zgpu_array_write(a, z0, all, ref, NULL));
    const uint64_t ct[3] = {16, 20, 24};
    for (int k = 0; a && k < 8; k++) { /* eight chunks in turn, the first (0/0/0) read first, 1/1/1 last */
        const uint64_t st[3] = {0, (uint64_t)(k % 2) * 20, (uint64_t)(k / 2) * 24 % 48};
        const uint64_t st2[3] = {16, st[1], st[2]};
        device_box_equals(a, ref, k < 4 ? st : st2, ct, "filling", "capacity");
    }
    if (a) {
        const uint64_t first[3] = {0, 0, 0}, lastc[3] = {16, 20, 24};
        device_box_equals(a, ref, first, ct, "the first chunk again", "capacity");
        CHECK_MSG(last(a).device_cache_hits == 0, "least recently used chunk still held");
        device_box_equals(a, ref, lastc, ct, "the last chunk again", "capacity");
        CHECK_MSG(last(a).device_cache_hits == 1, "most recently used chunk not held");
    }
    CHECK_OK(zgpu_array_open(tiny, path, &b));
    for (int k = 0; b && k < 2; k++) {
        device_box_equals(b, ref, z0, ct, "a chunk over a quarter", "capacity");
        CHECK_MSG(last(b).device_cache_hits == 0, "a chunk over a quarter of the cache was kept");
    }
    zgpu_array_close(a);
    zgpu_array_close(b);
    zgpu_context_free(ctx);
    zgpu_context_free(tiny);
    free(ref);
}

/* With both caches on, chunks a host read kept in the host cache go into the device cache once a device read has
 * copied them to the device: the read after that scatters them from device memory. A transposing chain's chunks
 * (laid out otherwise on the device) are not promoted, and still read right. */
static void promote_case(zgpu_tuning *t) {
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.tuning = t; /* (the device route) */
    o.cache_bytes = (size_t)64 << 20;
    o.device_cache_bytes = (size_t)64 << 20;
    for (int l = 0; l < 4; l += 3) { /* layouts[0] (zstd), layouts[3] (transpose) */
        zgpu_context *ctx = NULL;
        CHECK_OK(zgpu_context_create(&o, &ctx));
        char path[512];
        snprintf(path, sizeof path, "%s/promote_%s", tmpdir, layouts[l].name);
        zgpu_array *a = NULL;
        CHECK_OK(zgpu_array_create(ctx, path, layouts[l].meta, 1, &a));
        uint16_t *ref = malloc(N_ELEMS * 2), *host = malloc(N_ELEMS * 2);
        fill(ref, N_ELEMS, 5);
        const uint64_t z0[3] = {0, 0, 0}, all[3] = {40, 50, 60}, st[3] = {2, 3, 4}, ct[3] = {20, 30, 40};
        if (a) {
            CHECK_OK(zgpu_array_write(a, z0, all, ref, NULL));
            CHECK_OK(zgpu_array_read(a, z0, all, host, NULL)); /* fills the host cache */
            const int n = chunks_of(st, ct, layouts[l].chunk), promoted = l == 0;
            device_box_equals(a, ref, st, ct, "device read of host-cached chunks", layouts[l].name);
            zgpu_read_stats s = last(a);
            CHECK_MSG(s.cache_hits == n && s.device_cache_hits == 0 && s.gpu_decoded == 0,
                      "%s: %d hits (%d device), %d decoded of %d", layouts[l].name, s.cache_hits, s.device_cache_hits,
                      s.gpu_decoded, n);
            device_box_equals(a, ref, st, ct, "device read again", layouts[l].name);
            s = last(a);
            CHECK_MSG(s.device_cache_hits == (promoted ? n : 0) && s.cache_hits == n,
                      "%s: again: %d device hits of %d (promoted: %d)", layouts[l].name, s.device_cache_hits, n, promoted);
        }
        zgpu_array_close(a);
        zgpu_context_free(ctx);
        free(ref);
        free(host);
    }
}

/* The host route neither fills nor reads the device cache. */
static void host_route_case(void) {
    zgpu_tuning t;
    zgpu_tuning_init(&t);
    t.read_route = ZGPU_ROUTE_HOST;
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.tuning = &t;
    o.device_cache_bytes = (size_t)64 << 20;
    zgpu_context *ctx = NULL;
    CHECK_OK(zgpu_context_create(&o, &ctx));
    char path[512];
    snprintf(path, sizeof path, "%s/capacity", tmpdir);
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_open(ctx, path, &a));
    uint16_t *ref = malloc(N_ELEMS * 2);
    fill(ref, N_ELEMS, 4);
    const uint64_t st[3] = {3, 4, 5}, ct[3] = {20, 20, 20};
    for (int k = 0; a && k < 2; k++) {
        device_box_equals(a, ref, st, ct, "host route", "host route");
        CHECK_MSG(last(a).route == ZGPU_ROUTE_HOST && last(a).device_cache_hits == 0, "host route: route %d, %d hits",
                  last(a).route, last(a).device_cache_hits);
    }
    zgpu_array_close(a);
    zgpu_context_free(ctx);
    free(ref);
}
#endif

int main(void) {
    const int gpu = zgpu_gpu_available();
    char why[512];
    snprintf(why, sizeof why, "%s", gpu ? "" : zgpu_last_error());
#ifdef ZGPU_HAVE_CUDA
    if (gpu) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/zgpu_test_gpu_cache_%d", (int)getpid());
        mkdir(tmpdir, 0755);
        zgpu_tuning t;
        zgpu_tuning_init(&t);
        t.read_route = ZGPU_ROUTE_DEVICE; /* (the cache belongs to the device route) */
        zgpu_context_options o;
        zgpu_context_options_init(&o);
        o.tuning = &t;
        o.device_cache_bytes = (size_t)64 << 20;
        zgpu_context *ctx = NULL, *other = NULL;
        CHECK_OK(zgpu_context_create(&o, &ctx));
        zgpu_context_options_init(&o);
        CHECK_OK(zgpu_context_create(&o, &other));
        for (size_t l = 0; ctx && other && l < sizeof layouts / sizeof *layouts; l++) layout_case(&layouts[l], ctx, other);
        if (ctx) corrupt_case(ctx);
        capacity_case(&t);
        promote_case(&t);
        host_route_case();
        zgpu_context_free(ctx);
        zgpu_context_free(other);
        zt_remove_dir(tmpdir);
    }
#endif
    TEST_MAIN_END_GPU(gpu, why);
}
