/* The host read's progress (host/read_progress.h), which the host route of a device read copies its staging by:
 * every slab of the boxes' rows is reported exactly once a read, and only once its bytes are final. Each report is
 * checked, as it comes, against the same read without a progress, in an output filled with a marker first; for
 * reads that take each of the executor's paths: zstd chunks decoded in part (their rows straight into the boxes),
 * blosc chunks cut into pieces (a box of few chunks) or read box by box, a sharded array's inner chunks (a plan
 * handed over too), missing chunks (the fill value), boxes that share chunks, a read converted to float32; slabs of
 * one row and of several rows across boxes. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/host_read.h"
#include "plan/plan.h"
#include "meta_json.h"
#include "test.h"
#include "zgpu.h"

static char tmpdir[256];

#define SHAPE "[48, 96, 80]"
#define META3(codecs) ZT_META3_U16(SHAPE, codecs)
#define BYTES ZT_BYTES
#define ZSTD ZT_ZSTD

static const struct {
    const char *name, *meta_fmt, *chunks;
} layouts[] = {
    {"zstd", META3("[" BYTES ", " ZSTD "]"), "[16, 32, 40]"},
    {"sharded", META3("[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [16, 32, 40], "
                      "\"codecs\": [" BYTES ", " ZSTD "], \"index_codecs\": [" BYTES ", {\"name\": \"crc32c\"}], "
                      "\"index_location\": \"end\"}}]"),
     "[32, 64, 80]"},
    {"blosc", "{\"zarr_format\": 2, \"shape\": " SHAPE ", \"chunks\": %s, \"dtype\": \"<u2\", \"fill_value\": 7, "
              "\"order\": \"C\", \"filters\": null, \"compressor\": {\"id\": \"blosc\", \"cname\": \"lz4\", "
              "\"clevel\": 5, \"shuffle\": 1, \"blocksize\": 4096}}",
     "[24, 48, 80]"},
};

/* The batches: one large box over many chunks; one box inside a chunk (blosc: cut into pieces); boxes that share
 * chunks, one of them twice. */
typedef struct batch {
    size_t n;
    uint64_t st[4][3], ct[4][3];
} batch;
static const batch batches[] = {
    {1, {{3, 5, 7}}, {{42, 85, 70}}},
    {1, {{1, 2, 3}}, {{14, 28, 35}}},
    {4, {{0, 0, 0}, {10, 40, 20}, {0, 0, 0}, {30, 60, 0}}, {{12, 50, 40}, {20, 30, 60}, {12, 50, 40}, {18, 36, 80}}},
};

/* What a report finds: its slab's bytes against the read without a progress. */
typedef struct watch {
    zg_read_progress pr;
    const uint8_t *out, *ref;
    size_t *lo, *hi;          /* per slab: its bytes in the packed output */
    atomic_int *calls;        /* per slab */
    atomic_int early;         /* reports of a slab whose bytes were not final yet */
} watch;

static void on_slab(void *user, size_t s) {
    watch *w = user;
    atomic_fetch_add(&w->calls[s], 1);
    if (memcmp(w->out + w->lo[s], w->ref + w->lo[s], w->hi[s] - w->lo[s])) atomic_fetch_add(&w->early, 1);
}

/* A read of batch b into one packed output (C-contiguous boxes one after another) of esz-byte elements, with
 * slabs of `rows` rows (counted across boxes), checked against ref; plan: hand the read its plan (sharded). */
static void check_read(zgpu_array *a, const char *name, const batch *b, size_t esz, const zgpu_read_options *opts,
                       size_t rows, int plan) {
    size_t off[5] = {0}, row_base[5] = {0};
    for (size_t r = 0; r < b->n; r++) {
        off[r + 1] = off[r] + (size_t)(b->ct[r][0] * b->ct[r][1] * b->ct[r][2]) * esz;
        row_base[r + 1] = row_base[r] + (size_t)b->ct[r][0];
    }
    const size_t total = off[b->n], n_rows = row_base[b->n];
    uint8_t *ref = malloc(total), *out = malloc(total);
    void *outs[4];
    for (size_t r = 0; r < b->n; r++) outs[r] = ref + off[r];
    CHECK_OK(zg_host_read_regions(a, b->n, &b->st[0][0], &b->ct[0][0], outs, NULL, opts, NULL));
    watch w;
    memset(&w, 0, sizeof w);
    uint32_t *slab_of = malloc(n_rows * sizeof *slab_of);
    w.lo = calloc(n_rows, sizeof *w.lo);
    w.hi = calloc(n_rows, sizeof *w.hi);
    for (size_t r = 0, g = 0; r < b->n; r++)
        for (uint64_t z = 0; z < b->ct[r][0]; z++, g++) {
            const size_t s = g / rows, plane = (off[r + 1] - off[r]) / (size_t)b->ct[r][0];
            slab_of[g] = (uint32_t)s;
            if (g % rows == 0) w.lo[s] = off[r] + (size_t)z * plane;
            w.hi[s] = off[r] + (size_t)(z + 1) * plane;
        }
    w.pr.row_base = row_base;
    w.pr.slab_of_row = slab_of;
    w.pr.n_slabs = (n_rows + rows - 1) / rows;
    w.pr.slab_done = on_slab;
    w.pr.user = &w;
    w.pr.pending = calloc(w.pr.n_slabs, sizeof *w.pr.pending);
    w.calls = calloc(w.pr.n_slabs, sizeof *w.calls);
    w.out = out;
    w.ref = ref;
    memset(out, 0xAB, total);
    for (size_t r = 0; r < b->n; r++) outs[r] = out + off[r];
    zgpu_status st;
    if (plan) {
        zg_plan p;
        CHECK_OK(zg_plan_build_regions(a, b->n, &b->st[0][0], &b->ct[0][0], &p));
        CHECK_OK(zg_plan_resolve(a, &p));
        st = zg_host_read_regions_planned(a, &p, b->n, &b->st[0][0], &b->ct[0][0], outs, NULL, opts, &w.pr);
    } else {
        st = zg_host_read_regions(a, b->n, &b->st[0][0], &b->ct[0][0], outs, NULL, opts, &w.pr);
    }
    CHECK_MSG(st == ZGPU_OK, "%s: read with a progress: %s", name, zgpu_last_error());
    CHECK_MSG(!memcmp(out, ref, total), "%s: a read with a progress differs from one without", name);
    CHECK_MSG(atomic_load(&w.early) == 0, "%s, %zu boxes, slabs of %zu rows: %d slabs reported before they were final",
              name, b->n, rows, atomic_load(&w.early));
    int once = 1;
    for (size_t s = 0; s < w.pr.n_slabs; s++) {
        once &= atomic_load(&w.calls[s]) == 1 && atomic_load(&w.pr.pending[s]) == 0;
        if (atomic_load(&w.calls[s]) != 1)
            fprintf(stderr, "  %s: slab %zu of %zu reported %d times\n", name, s, w.pr.n_slabs,
                    atomic_load(&w.calls[s]));
    }
    CHECK_MSG(once, "%s, %zu boxes, slabs of %zu rows: every slab reported exactly once", name, b->n, rows);
    CHECK_MSG(w.pr.reports > 0 && atomic_load(&w.pr.reports_left) == 0, "%s: %zu reports expected, %zu never came", name,
              w.pr.reports, (size_t)atomic_load(&w.pr.reports_left));
    free(ref), free(out), free(slab_of), free(w.lo), free(w.hi), free(w.pr.pending), free(w.calls);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zgpu_test_read_progress_%d", (int)getpid());
    mkdir(tmpdir, 0755);
    zgpu_context *ctx = NULL;
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.num_threads = 4; /* (pieces and split decodes need several) */
    CHECK_OK(zgpu_context_create(&o, &ctx));
    const size_t n = 48 * 96 * 80;
    uint16_t *data = malloc(n * 2);
    uint32_t x = 99;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        data[i] = (uint16_t)((i / 7) ^ (x >> 28)); /* runs and noise: matches and literals */
    }
    zgpu_read_options conv;
    zgpu_read_options_init(&conv);
    conv.out_dtype = ZGPU_FLOAT32;
    conv.scale = 0.5;
    for (size_t l = 0; l < sizeof layouts / sizeof *layouts; l++) {
        char path[512], meta[2048];
        snprintf(path, sizeof path, "%s/%s", tmpdir, layouts[l].name);
        snprintf(meta, sizeof meta, layouts[l].meta_fmt, layouts[l].chunks);
        zgpu_array *a = NULL;
        CHECK_OK(zgpu_array_create(ctx, path, meta, 1, &a));
        if (!a) continue;
        /* all but the first planes' corner: those chunks stay missing (the fill value) */
        const uint64_t s0[3] = {0, 40, 0}, c0[3] = {48, 56, 80}, s1[3] = {16, 0, 0}, c1[3] = {32, 40, 80};
        CHECK_OK(zgpu_array_write(a, s0, c0, data + 40 * 80, (const int64_t[]){96 * 80 * 2, 80 * 2, 2}));
        CHECK_OK(zgpu_array_write(a, s1, c1, data + 16 * 96 * 80, (const int64_t[]){96 * 80 * 2, 80 * 2, 2}));
        for (size_t b = 0; b < sizeof batches / sizeof *batches; b++) {
            char name[128];
            snprintf(name, sizeof name, "%s batch %zu", layouts[l].name, b);
            check_read(a, name, &batches[b], 2, NULL, 1, 0);
            check_read(a, name, &batches[b], 2, NULL, 5, 0);
            check_read(a, name, &batches[b], 4, &conv, 3, 0);
            if (l == 1) check_read(a, name, &batches[b], 2, NULL, 2, 1);
        }
        zgpu_array_close(a);
    }
    free(data);
    zgpu_context_free(ctx);
    zt_remove_dir(tmpdir);
    TEST_MAIN_END();
}
