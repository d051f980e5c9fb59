/* zgpu_array_read_regions and _device: n boxes read as one plan must equal n single-box reads, whatever the
 * boxes (overlapping, identical, empty, whole chunks, edge chunks), the destinations (separate buffers, one
 * stacked buffer, strided and reversed), the layout (plain, sharded, v2 blosc) and the route of device reads; a
 * chunk that several boxes need is decoded once (the read's `chunks` counts distinct chunks); a host read handed
 * its plan (zg_host_read_regions_planned) reads the same; a bad box is an error naming it. Without a GPU the host
 * part runs and the device part (the device route, the host route and the model's pick, host reads too) reports
 * skipped (77). */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/host_read.h"
#include "plan/plan.h"
#include "meta_json.h"
#include "test.h"
#include "zgpu.h"
#include "zgpu_experimental.h"

#ifdef ZGPU_HAVE_CUDA
#include <cuda_runtime.h>

#include "device/device.h"
#endif

static char tmpdir[256];
static uint32_t rng = 2024;
static uint32_t rnd(void) {
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

#define SHAPE "[40, 50, 60]"
#define META3(codecs) ZT_META3_U16(SHAPE, codecs)
#define BYTES ZT_BYTES
#define ZSTD ZT_ZSTD

typedef struct layout {
    const char *name, *meta_fmt, *chunks;
    uint64_t chunk[3]; /* the read chunk (inner chunk when sharded) */
} layout;

static const layout layouts[] = {
    {"zstd", META3("[" BYTES ", " ZSTD "]"), "[16, 20, 24]", {16, 20, 24}},
    {"sharded", META3("[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [8, 10, 12], "
                      "\"codecs\": [" BYTES ", " ZSTD "], \"index_codecs\": [" BYTES ", {\"name\": \"crc32c\"}], "
                      "\"index_location\": \"end\"}}]"),
     "[16, 20, 24]", {8, 10, 12}},
    {"v2_blosc", "{\"zarr_format\": 2, \"shape\": " SHAPE ", \"chunks\": %s, \"dtype\": \"<u2\", "
                 "\"fill_value\": 7, \"order\": \"C\", \"filters\": null, \"compressor\": {\"id\": \"blosc\", "
                 "\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": 1, \"blocksize\": 0}}",
     "[16, 20, 24]", {16, 20, 24}},
};

#define NB 9 /* boxes per batch */

/* Boxes with overlaps (box 1 is box 0 shifted by one, box 2 equals box 0), an empty box, a box of whole chunks,
 * and random ones. */
static void make_boxes(uint64_t *st, uint64_t *ct, const uint64_t *chunk) {
    const uint64_t shape[3] = {40, 50, 60};
    for (int b = 0; b < NB; b++)
        for (int d = 0; d < 3; d++) {
            uint64_t c = 1 + rnd() % (shape[d] / 2);
            st[b * 3 + d] = rnd() % (shape[d] - c + 1);
            ct[b * 3 + d] = c;
        }
    for (int d = 0; d < 3; d++) {
        st[3 + d] = st[d] + (st[d] + ct[d] < shape[d]);
        ct[3 + d] = ct[d];
        st[6 + d] = st[d];
        ct[6 + d] = ct[d];
        st[12 + d] = chunk[d]; /* box 4: exactly one read chunk */
        ct[12 + d] = chunk[d];
    }
    ct[3 * 3 + 1] = 0; /* box 3: empty */
}

static size_t box_elems(const uint64_t *ct) { return (size_t)(ct[0] * ct[1] * ct[2]); }

/* Distinct read chunks the boxes touch. */
static int distinct_chunks(const uint64_t *st, const uint64_t *ct, const uint64_t *chunk) {
    static unsigned char seen[64 * 64 * 64];
    memset(seen, 0, sizeof seen);
    int n = 0;
    for (int b = 0; b < NB; b++) {
        const uint64_t *s = st + b * 3, *c = ct + b * 3;
        if (!box_elems(c)) continue;
        for (uint64_t z = s[0] / chunk[0]; z <= (s[0] + c[0] - 1) / chunk[0]; z++)
            for (uint64_t y = s[1] / chunk[1]; y <= (s[1] + c[1] - 1) / chunk[1]; y++)
                for (uint64_t x = s[2] / chunk[2]; x <= (s[2] + c[2] - 1) / chunk[2]; x++) {
                    unsigned char *p = &seen[(z * 64 + y) * 64 + x];
                    if (!*p) n++;
                    *p = 1;
                }
    }
    return n;
}

/* Every box read alone: the reference. */
static uint16_t *reference(zgpu_array *a, const uint64_t *st, const uint64_t *ct, size_t *offs) {
    size_t total = 0;
    for (int b = 0; b < NB; b++) {
        offs[b] = total;
        total += box_elems(ct + b * 3);
    }
    uint16_t *ref = malloc((total + 1) * 2);
    for (int b = 0; b < NB; b++)
        if (box_elems(ct + b * 3)) CHECK_OK(zgpu_array_read(a, st + b * 3, ct + b * 3, ref + offs[b], NULL));
    return ref;
}

/* The last read decoded each distinct chunk of the boxes once. */
static void check_distinct(const layout *L, zgpu_array *a, const uint64_t *st, const uint64_t *ct, int round) {
    zgpu_read_stats s;
    s.struct_size = sizeof s;
    zgpu_array_last_read_stats(a, &s);
    CHECK_MSG(s.chunks == distinct_chunks(st, ct, L->chunk), "%s round %d: %d chunks decoded, %d distinct", L->name,
              round, s.chunks, distinct_chunks(st, ct, L->chunk));
}

static void host_regions(const layout *L, zgpu_array *a) {
    for (int round = 0; round < 4; round++) {
        uint64_t st[NB * 3], ct[NB * 3];
        size_t offs[NB];
        make_boxes(st, ct, L->chunk);
        uint16_t *ref = reference(a, st, ct, offs);
        size_t total = offs[NB - 1] + box_elems(ct + (NB - 1) * 3);
        /* separate C-contiguous buffers */
        uint16_t *got = malloc((total + 1) * 2);
        memset(got, 0xEE, (total + 1) * 2);
        void *outs[NB];
        for (int b = 0; b < NB; b++) outs[b] = got + offs[b];
        CHECK_OK(zgpu_array_read_regions(a, NB, st, ct, outs, NULL, NULL));
        CHECK_MSG(!memcmp(got, ref, total * 2), "%s round %d: separate buffers differ", L->name, round);
        check_distinct(L, a, st, ct, round);
        /* the same boxes with their plan built and resolved first, as a device read's automatic pick of the host
         * route hands it over (an unsharded array's plan is dropped and the read plans afresh) */
        memset(got, 0xEE, (total + 1) * 2);
        zg_plan plan;
        CHECK_OK(zg_plan_build_regions(a, NB, st, ct, &plan));
        CHECK_OK(zg_plan_resolve(a, &plan));
        CHECK_OK(zg_host_read_regions_planned(a, &plan, NB, st, ct, outs, NULL, NULL, NULL));
        CHECK_MSG(!memcmp(got, ref, total * 2), "%s round %d: a read of a given plan differs", L->name, round);
        check_distinct(L, a, st, ct, round);
        /* strided destinations: box b written reversed along its last axis into a padded buffer */
        int64_t strides[NB * 3];
        uint16_t *pad = calloc(total * 2 + 64, 2);
        size_t at = 0;
        for (int b = 0; b < NB; b++) {
            const uint64_t *c = ct + b * 3;
            strides[b * 3 + 2] = -2;
            strides[b * 3 + 1] = (int64_t)(c[2] + 1) * 2; /* one element of padding a row */
            strides[b * 3 + 0] = strides[b * 3 + 1] * (int64_t)(c[1] ? c[1] : 1); /* (empty box: any non-zero) */
            outs[b] = pad + at + (c[2] ? c[2] - 1 : 0);
            at += (size_t)(c[0] * c[1] * (c[2] + 1));
        }
        CHECK_OK(zgpu_array_read_regions(a, NB, st, ct, outs, strides, NULL));
        int bad = 0;
        for (int b = 0; b < NB; b++) {
            const uint64_t *c = ct + b * 3;
            for (uint64_t z = 0; z < c[0]; z++)
                for (uint64_t y = 0; y < c[1]; y++)
                    for (uint64_t x = 0; x < c[2]; x++) {
                        const uint16_t *p = (const uint16_t *)((const char *)outs[b] + (int64_t)z * strides[b * 3] +
                                                               (int64_t)y * strides[b * 3 + 1] - (int64_t)x * 2);
                        bad += *p != ref[offs[b] + (z * c[1] + y) * c[2] + x];
                    }
        }
        CHECK_MSG(!bad, "%s round %d: %d elements differ in strided destinations", L->name, round, bad);
        free(pad);
        free(got);
        free(ref);
    }
    /* one stacked buffer: 16 boxes of one shape, two of them equal */
    uint64_t st[16 * 3], ct[16 * 3];
    for (int b = 0; b < 16; b++) {
        const uint64_t c[3] = {5, 9, 13}, shape[3] = {40, 50, 60};
        for (int d = 0; d < 3; d++) {
            ct[b * 3 + d] = c[d];
            st[b * 3 + d] = b == 15 ? st[d] : rnd() % (shape[d] - c[d] + 1);
        }
    }
    const size_t one = 5 * 9 * 13;
    uint16_t *stack = malloc(16 * one * 2), *ref = malloc(16 * one * 2);
    void *outs[16];
    for (int b = 0; b < 16; b++) {
        outs[b] = stack + b * one;
        CHECK_OK(zgpu_array_read(a, st + b * 3, ct + b * 3, ref + b * one, NULL));
    }
    CHECK_OK(zgpu_array_read_regions(a, 16, st, ct, outs, NULL, NULL));
    CHECK_MSG(!memcmp(stack, ref, 16 * one * 2), "%s: stacked buffer differs", L->name);
    free(stack);
    free(ref);
}

static void bad_boxes(zgpu_array *a) {
    uint64_t st[3 * 3] = {0, 0, 0, 1, 1, 1, 30, 0, 0}, ct[3 * 3] = {2, 2, 2, 3, 3, 3, 11, 1, 1};
    uint16_t buf[64];
    void *outs[3] = {buf, buf + 8, buf + 40};
    CHECK_STATUS(zgpu_array_read_regions(a, 3, st, ct, outs, NULL, NULL), ZGPU_ERR_OUT_OF_RANGE);
    CHECK_MSG(strstr(zgpu_last_error(), "region 2") != NULL, "error does not name the box: %s", zgpu_last_error());
    outs[1] = NULL;
    CHECK_STATUS(zgpu_array_read_regions(a, 3, st, ct, outs, NULL, NULL), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_OK(zgpu_array_read_regions(a, 0, NULL, NULL, NULL, NULL, NULL));
}

#ifdef ZGPU_HAVE_CUDA
/* Device regions against host regions, through both routes: separate device buffers and one stacked buffer. */
static void device_regions(const layout *L, zgpu_array *a, const char *route) {
    for (int round = 0; round < 3; round++) {
        uint64_t st[NB * 3], ct[NB * 3];
        size_t offs[NB];
        make_boxes(st, ct, L->chunk);
        uint16_t *ref = reference(a, st, ct, offs);
        size_t total = offs[NB - 1] + box_elems(ct + (NB - 1) * 3);
        uint16_t *d = NULL, *got = malloc((total + 1) * 2);
        cudaMalloc((void **)&d, (total + 1) * 2);
        cudaMemset(d, 0xEE, (total + 1) * 2);
        void *outs[NB];
        for (int b = 0; b < NB; b++) outs[b] = d + offs[b];
        zgpu_status s = zgpu_array_read_regions_device(a, NB, st, ct, outs, NULL, NULL, NULL, NULL);
        cudaMemcpy(got, d, total * 2, cudaMemcpyDeviceToHost);
        CHECK_MSG(s == ZGPU_OK && !memcmp(got, ref, total * 2), "%s (%s) round %d: device regions: %s", L->name,
                  route, round, s == ZGPU_OK ? "data differs" : zgpu_last_error());
        zgpu_event *ev = NULL;
        cudaMemset(d, 0xEE, (total + 1) * 2);
        s = zgpu_array_read_regions_device(a, NB, st, ct, outs, NULL, NULL, NULL, &ev);
        if (s == ZGPU_OK) s = zgpu_event_wait(ev);
        zgpu_event_free(ev);
        cudaMemcpy(got, d, total * 2, cudaMemcpyDeviceToHost);
        CHECK_MSG(s == ZGPU_OK && !memcmp(got, ref, total * 2), "%s (%s) round %d: async device regions: %s",
                  L->name, route, round, s == ZGPU_OK ? "data differs" : zgpu_last_error());
        cudaFree(d);
        free(got);
        free(ref);
    }
}
#endif

#ifdef ZGPU_HAVE_CUDA
/* The host route of reads of several MiB: copied in slabs as the host read writes them (each slab once, as it is
 * reported or with the read's last ones after it), into one box, a stacked batch, batch members apart in memory, a strided destination (device
 * scratch, then the scatter) and a converted read; each equal to the host read of the same boxes. */
static void host_route_slabs(zgpu_context *host_route, zgpu_context *plain) {
    char path[512];
    snprintf(path, sizeof path, "%s/slabs", tmpdir);
    const char *meta = "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [64, 256, 256], \"data_type\": "
                       "\"uint16\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": "
                       "[16, 64, 128]}}, \"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 3, "
                       "\"codecs\": [" BYTES ", " ZSTD "]}";
    zgpu_array *w = NULL, *a = NULL;
    CHECK_OK(zgpu_array_create(plain, path, meta, 1, &w));
    const size_t n = 64 * 256 * 256;
    uint16_t *data = malloc(n * 2);
    for (size_t i = 0; i < n; i++) data[i] = (uint16_t)((i / 5) ^ (rnd() & 7));
    const uint64_t s0[3] = {0, 0, 0}, c0[3] = {64, 192, 256}; /* (the last rows' chunks stay missing) */
    CHECK_OK(zgpu_array_write(w, s0, c0, data, NULL));
    zgpu_array_close(w);
    free(data);
    CHECK_OK(zgpu_array_open(host_route, path, &a));
    if (!a) return;
    enum { NS = 8 };
    uint64_t st[NS * 3], ct[NS * 3];
    for (int b = 0; b < NS; b++) {
        const uint64_t c[3] = {6, 150, 150};
        for (int d = 0; d < 3; d++) {
            ct[b * 3 + d] = c[d];
            st[b * 3 + d] = rnd() % ((d ? 256 : 64) - c[d] + 1);
        }
    }
    const uint64_t big_st[3] = {5, 20, 30}, big_ct[3] = {44, 230, 200};
    zgpu_read_options conv;
    zgpu_read_options_init(&conv);
    conv.out_dtype = ZGPU_FLOAT32;
    conv.scale = 0.25;
    for (int kind = 0; kind < 5; kind++) {
        const int one = kind == 0 || kind == 3, converted = kind == 4;
        const size_t nb = one ? 1 : NS, esz = converted ? 4 : 2, per = (size_t)(one ? big_ct[0] * big_ct[1] * big_ct[2]
                                                                                  : ct[0] * ct[1] * ct[2]) * esz;
        const uint64_t *bst = one ? big_st : st, *bct = one ? big_ct : ct;
        const size_t gap = kind == 2 ? 4096 : 0, pitch = kind == 3 ? 256 * esz : 0; /* (kind 3: rows 256 apart) */
        const size_t dev_bytes = pitch ? (size_t)(big_ct[0] * big_ct[1]) * pitch : nb * (per + gap);
        uint8_t *ref = malloc(nb * per), *got = malloc(dev_bytes), *d = NULL;
        void *outs[NS];
        for (size_t b = 0; b < nb; b++) outs[b] = ref + b * per;
        CHECK_OK(zgpu_array_read_regions(a, nb, bst, bct, outs, NULL, converted ? &conv : NULL));
        if (cudaMalloc((void **)&d, dev_bytes) != cudaSuccess) {
            free(ref), free(got);
            continue;
        }
        cudaMemset(d, 0xEE, dev_bytes);
        for (size_t b = 0; b < nb; b++) outs[b] = d + b * (per + gap);
        int64_t strides[3] = {(int64_t)(big_ct[1] * pitch), (int64_t)pitch, (int64_t)esz};
        unsigned long plan0, rep0, after0, plan1, rep1, after1;
        dev_host_route_slabs(&plan0, &rep0, &after0);
        const zgpu_status s = zgpu_array_read_regions_device(a, nb, bst, bct, outs, pitch ? strides : NULL, NULL,
                                                             converted ? &conv : NULL, NULL);
        dev_host_route_slabs(&plan1, &rep1, &after1);
        cudaMemcpy(got, d, dev_bytes, cudaMemcpyDeviceToHost);
        int same = s == ZGPU_OK;
        for (size_t b = 0; same && b < nb && !pitch; b++) same = !memcmp(got + b * (per + gap), ref + b * per, per);
        for (size_t r = 0; same && pitch && r < big_ct[0] * big_ct[1]; r++)
            same = !memcmp(got + r * pitch, ref + r * big_ct[2] * esz, big_ct[2] * esz);
        CHECK_MSG(same, "host route in slabs, read kind %d: %s", kind, s == ZGPU_OK ? "data differs" : zgpu_last_error());
        CHECK_MSG(plan1 - plan0 > 1 && rep1 - rep0 + after1 - after0 == plan1 - plan0,
                  "host route, read kind %d: %lu slabs, %lu copied as they were written, %lu after the read", kind,
                  plan1 - plan0, rep1 - rep0, after1 - after0);
        cudaFree(d);
        free(ref), free(got);
    }
    zgpu_array_close(a);
}
#endif

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zgpu_test_read_regions_%d", (int)getpid());
    mkdir(tmpdir, 0755);
    const int gpu = zgpu_gpu_available();
    char why[512];
    snprintf(why, sizeof why, "%s", gpu ? "" : zgpu_last_error());
    /* device reads: the device route, the host route, and the model's pick (host reads too) */
    zgpu_context *ctx = NULL, *ctx_route[3] = {NULL, NULL, NULL};
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    CHECK_OK(zgpu_context_create(&o, &ctx));
    zgpu_tuning t;
    for (int r = 0; r < 3; r++) {
        zgpu_tuning_init(&t);
        t.read_route = r == 2 ? ZGPU_ROUTE_AUTO : r ? ZGPU_ROUTE_HOST : ZGPU_ROUTE_DEVICE;
        if (r == 2) t.host_read_route = ZGPU_ROUTE_AUTO;
        o.tuning = &t;
        CHECK_OK(zgpu_context_create(&o, &ctx_route[r]));
    }
    const size_t n = 40 * 50 * 60;
    uint16_t *data = malloc(n * 2);
    for (size_t i = 0; i < n; i++) data[i] = (uint16_t)(i * 7 + (rnd() & 3));
    for (size_t l = 0; l < sizeof layouts / sizeof *layouts; l++) {
        const layout *L = &layouts[l];
        char path[512], meta[2048];
        snprintf(path, sizeof path, "%s/%s", tmpdir, L->name);
        snprintf(meta, sizeof meta, L->meta_fmt, L->chunks);
        zgpu_array *a = NULL;
        CHECK_OK(zgpu_array_create(ctx, path, meta, 1, &a));
        if (!a) continue;
        /* everything but the first stored chunk's box: it stays missing (fill value) */
        const uint64_t s0[3] = {16, 0, 0}, c0[3] = {24, 50, 60}, s1[3] = {0, 20, 0}, c1[3] = {16, 30, 60};
        CHECK_OK(zgpu_array_write(a, s0, c0, data + 16 * 50 * 60, NULL));
        uint16_t *part = malloc(16 * 30 * 60 * 2);
        for (size_t i = 0; i < 16 * 30 * 60; i++) part[i] = (uint16_t)(i ^ 0x5A5A);
        CHECK_OK(zgpu_array_write(a, s1, c1, part, NULL));
        free(part);
        host_regions(L, a);
        if (l == 0) bad_boxes(a);
        zgpu_array_close(a);
#ifdef ZGPU_HAVE_CUDA
        for (int r = 0; gpu && r < 3; r++) {
            zgpu_array *b = NULL;
            CHECK_OK(zgpu_array_open(ctx_route[r], path, &b));
            if (b) device_regions(L, b, r == 2 ? "auto" : r ? "host route" : "device route");
            zgpu_array_close(b);
        }
#endif
    }
    free(data);
#ifdef ZGPU_HAVE_CUDA
    if (gpu) host_route_slabs(ctx_route[1], ctx);
#endif
    zgpu_context_free(ctx);
    for (int r = 0; r < 3; r++) zgpu_context_free(ctx_route[r]);
    zt_remove_dir(tmpdir);
    TEST_MAIN_END_GPU(gpu, why);
}
