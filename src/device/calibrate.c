/* The route model of a GPU (route/route.h): read from zgpu's cache directory, or measured once and written there.
 *
 * Measuring: for each codec class, low-ratio and high-ratio synthetic arrays (uint16: one chunk of 32 x 128 x 128 =
 * 1 MiB, and as many chunks of 64 x 256 x 256 = 8 MiB as the host has threads, at most 16, in a temporary
 * directory, /dev/shm when there is one) are read through both routes, each forced in a context of its own: a box
 * in a chunk never written (the fixed cost), one chunk of each size, and every big chunk at once; the least of five
 * timed reads after one warm-up. A few seconds, once per machine and GPU (and zgpu version): the file is keyed by
 * the GPU's name and UUID. */
#include <dirent.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/env.h"
#include "device/job.h"
#include "route/route.h"
#include "zgpu_experimental.h"

#define CAL_CHUNK_Z 32
#define CAL_CHUNK_YX 128
#define CAL_MAX_CHUNKS 16
#define CAL_REPEAT 5

static pthread_mutex_t models_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int device, ready;
    zg_route_model m;
    zg_route_memory mem; /* what this process's reads taught it (guarded by models_mu) */
} models[16];

/* Seconds of a device read of [start, start + count): the least of CAL_REPEAT after a warm-up (what the machine
 * shares with other work only adds time). */
static double timed_read(zgpu_array *a, const uint64_t *start, const uint64_t *count, void *d_out, int *ok) {
    double best = INFINITY;
    for (int r = -1; r < CAL_REPEAT; r++) {
        const double t0 = zg_now();
        if (zgpu_array_read_device(a, start, count, d_out, NULL, NULL) != ZGPU_OK) *ok = 0;
        const double t = zg_now() - t0;
        if (r >= 0 && t < best) best = t;
    }
    return best;
}

/* The synthetic values, shaped like the benchmark volumes (../shared/bench/datasets.py): low ratio, a smooth
 * layered field with noise in its low 4 bits (the OCT volume, ~1.1-1.5:1); high ratio, piecewise-constant cells
 * (the label volume, several hundred to one). */
static void fill_values(uint16_t *v, size_t n, int high, uint64_t cy, uint64_t cx) {
    uint32_t r = 12345;
    for (size_t i = 0; i < n; i++) {
        r = r * 1664525u + 1013904223u;
        const size_t x = i % cx, y = i / cx % cy, z = i / (cx * cy);
        if (high) {
            v[i] = (uint16_t)(((z / 16) * 7919 + (y / 24) * 104729 + (x / 20) * 1299709) % 50000);
        } else {
            const double base = 12000 + 9000 * sin((double)z / 37) * cos((double)y / 53) +
                                5000 * sin((double)x / 29 + (double)y / 71);
            v[i] = (uint16_t)(((uint16_t)base & 0xFFF0) | (r >> 28));
        }
    }
}

static const char *codecs_of(int c) {
    switch (c) {
    case ZG_RC_ZSTD:
        return "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"zstd\", "
               "\"configuration\": {\"level\": 3, \"checksum\": false}}]";
    case ZG_RC_DEFLATE:
        return "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"gzip\", "
               "\"configuration\": {\"level\": 5}}]";
    case ZG_RC_LZ4:
        return "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"blosc\", "
               "\"configuration\": {\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": \"shuffle\", \"typesize\": 2, "
               "\"blocksize\": 0}}]";
    default:
        return "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]";
    }
}

/* An array of n chunks of (cz, cy, cx) uint16 side by side along x (so that, as in most reads, a chunk is not one
 * contiguous block of the output) at dir/name, written whole; one more row of chunks along z is never written
 * (reads of it time the fixed cost). Opened in both contexts. 0 on success. */
static int make_array(zgpu_context *ctx_dev, zgpu_context *ctx_host, const char *dir, const char *name, int c,
                      int high, size_t n, uint64_t cz, uint64_t cy, uint64_t cx, zgpu_array **ad, zgpu_array **ah) {
    char path[600], meta[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(meta, sizeof meta,
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [%llu, %llu, %llu], \"data_type\": "
             "\"uint16\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [%llu, %llu, "
             "%llu]}}, \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, "
             "\"fill_value\": 0, \"codecs\": %s}",
             (unsigned long long)(2 * cz), (unsigned long long)cy, (unsigned long long)(n * cx),
             (unsigned long long)cz, (unsigned long long)cy, (unsigned long long)cx, codecs_of(c));
    const size_t per = (size_t)(cz * cy * cx), total = per * n;
    uint16_t *v = malloc(total * sizeof *v);
    zgpu_array *w = NULL;
    int ok = v && zgpu_array_create(ctx_dev, path, meta, 1, &w) == ZGPU_OK;
    const uint64_t z0[3] = {0, 0, 0}, all[3] = {cz, cy, n * cx};
    if (ok) fill_values(v, total, high, cy, n * cx);
    if (ok) ok = zgpu_array_write(w, z0, all, v, NULL) == ZGPU_OK;
    zgpu_array_close(w);
    free(v);
    return ok && zgpu_array_open(ctx_dev, path, ad) == ZGPU_OK && zgpu_array_open(ctx_host, path, ah) == ZGPU_OK ? 0 : -1;
}

/* One calibration point: both routes timed on a missing chunk's box, one chunk of 1 MiB, one of 8 MiB, and
 * n_big chunks of 8 MiB at once (the throughput: host reads of big chunks are bound by memory, not by the
 * threads, and GPU reads of small ones by launches). 0 on success. */
static int measure_point(zgpu_context *ctx_dev, zgpu_context *ctx_host, const char *dir, int c, int high,
                         size_t n_big, void *d_out, zg_route_point *p) {
    char name[64];
    zgpu_array *ad = NULL, *ah = NULL, *bd = NULL, *bh = NULL;
    snprintf(name, sizeof name, "c%d-%d", c, high);
    int ok = make_array(ctx_dev, ctx_host, dir, name, c, high, 1, CAL_CHUNK_Z, CAL_CHUNK_YX, CAL_CHUNK_YX, &ad,
                        &ah) == 0;
    snprintf(name, sizeof name, "c%d-%d-big", c, high);
    ok = ok && make_array(ctx_dev, ctx_host, dir, name, c, high, n_big, 64, 256, 256, &bd, &bh) == 0;
    if (ok) {
        const uint64_t z0[3] = {0, 0, 0}, all[3] = {64, 256, n_big * 256};
        const uint64_t one[3] = {CAL_CHUNK_Z, CAL_CHUNK_YX, CAL_CHUNK_YX}, big[3] = {64, 256, 256};
        const uint64_t gap[3] = {CAL_CHUNK_Z, 0, 0}, tiny[3] = {1, 1, 1};
        p->bytes = (double)CAL_CHUNK_Z * CAL_CHUNK_YX * CAL_CHUNK_YX * 2;
        p->big_bytes = 64.0 * 256 * 256 * 2;
        p->d0 = timed_read(ad, gap, tiny, d_out, &ok);
        p->d1 = timed_read(ad, z0, one, d_out, &ok);
        p->d1_big = timed_read(bd, z0, big, d_out, &ok);
        p->dn = timed_read(bd, z0, all, d_out, &ok);
        zgpu_read_stats s;
        s.struct_size = sizeof s;
        zgpu_array_last_read_stats(bd, &s);
        p->ratio = s.stored_bytes > 0 ? p->big_bytes * (double)n_big / (double)s.stored_bytes : 1;
        p->h0 = timed_read(ah, gap, tiny, d_out, &ok);
        p->h1 = timed_read(ah, z0, one, d_out, &ok);
        p->h1_big = timed_read(bh, z0, big, d_out, &ok);
        p->hn = timed_read(bh, z0, all, d_out, &ok);
        /* many chunks: each big one's share of the time past the fixed cost */
        p->dn = fmax((p->dn - p->d0) / (double)n_big, 1e-7);
        p->hn = fmax((p->hn - p->h0) / (double)n_big, 1e-7);
        /* (a lone chunk never faster than the fixed cost: noise aside) */
        p->d1 = fmax(p->d1, p->d0 * 1.01);
        p->h1 = fmax(p->h1, p->h0 * 1.01);
        p->d1_big = fmax(p->d1_big, p->d1);
        p->h1_big = fmax(p->h1_big, p->h1);
    }
    zgpu_array_close(ad);
    zgpu_array_close(ah);
    zgpu_array_close(bd);
    zgpu_array_close(bh);
    return ok ? 0 : -1;
}

static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) remove_tree(p);
        else unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

/* Measures a model with contexts like ctx's (device, threads, budget). 0 on success. */
static int calibrate(const zgpu_context *ctx, zg_route_model *m) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/zgpu-route-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(dir)) return -1;
    zgpu_context *cd = NULL, *ch = NULL;
    zgpu_context_options o = ctx->opts;
    o.tuning = NULL;
    o.remote = NULL;
    o.cache_bytes = 0;
    zgpu_tuning t = ctx->tuning;
    t.read_route = ZGPU_ROUTE_DEVICE;
    o.tuning = &t;
    int ok = zgpu_context_create(&o, &cd) == ZGPU_OK;
    zgpu_tuning th = ctx->tuning;
    th.read_route = ZGPU_ROUTE_HOST;
    o.tuning = &th;
    ok = ok && zgpu_context_create(&o, &ch) == ZGPU_OK;
    const int threads = zg_pool_size(ctx->pool);
    size_t n_big = (size_t)threads; /* (a round of chunks for every host thread) */
    if (n_big > CAL_MAX_CHUNKS) n_big = CAL_MAX_CHUNKS;
    if (n_big < 2) n_big = 2;
    const size_t out_bytes = n_big * (size_t)64 * 256 * 256 * 2;
    void *d_out = NULL, *h_pin = NULL;
    ok = ok && cudaSetDevice(ctx->opts.device) == cudaSuccess && cudaMalloc(&d_out, out_bytes) == cudaSuccess &&
         cudaHostAlloc(&h_pin, out_bytes, cudaHostAllocDefault) == cudaSuccess;
    if (ok) { /* the pinned copy rate: one warm-up, then the better of two */
        double best = 0;
        for (int r = 0; r < 3 && ok; r++) {
            const double t0 = zg_now();
            ok = cudaMemcpy(d_out, h_pin, out_bytes, cudaMemcpyHostToDevice) == cudaSuccess;
            const double bps = (double)out_bytes / (zg_now() - t0);
            if (r && bps > best) best = bps;
        }
        m->h2d_bps = best;
    }
    m->threads = threads;
    for (int c = 0; ok && c < ZG_RC_N; c++)
        for (int p = 0; ok && p < ZG_RP_N; p++) {
            if (c == ZG_RC_NONE && p == ZG_RP_HIGH) { /* (uncompressed: the ratio is 1 either way) */
                m->pt[c][p] = m->pt[c][ZG_RP_LOW];
                continue;
            }
            ok = measure_point(cd, ch, dir, c, p == ZG_RP_HIGH, n_big, d_out, &m->pt[c][p]) == 0;
        }
    if (d_out) cudaFree(d_out);
    if (h_pin) cudaFreeHost(h_pin);
    zgpu_context_free(cd);
    zgpu_context_free(ch);
    remove_tree(dir);
    m->calibrated = ok;
    return ok ? 0 : -1;
}

/* The models slot of the context's device, its model loaded from the cache directory or measured first; -1 when
 * every slot is another GPU's (zgpu's defaults then serve, without memory). A slot once ready stays as it is. */
static int model_slot(zgpu_context *ctx) {
    const int device = ctx->opts.device;
    pthread_mutex_lock(&models_mu);
    int slot = -1;
    for (int i = 0; i < (int)(sizeof models / sizeof *models); i++) {
        if (models[i].ready && models[i].device == device) {
            pthread_mutex_unlock(&models_mu);
            return i;
        }
        if (!models[i].ready && slot < 0) slot = i;
    }
    if (slot < 0) {
        pthread_mutex_unlock(&models_mu);
        return -1;
    }
    /* (held while measuring: other threads' first AUTO reads wait for the one model rather than measure too) */
    zg_route_model *m = &models[slot].m;
    struct cudaDeviceProp prop;
    char key[512], uuid[40] = "", name[160], path[4600];
    const char *cache = zg_env_cache_dir();
    int have = 0;
    if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
        for (int i = 0; i < 16; i++) snprintf(uuid + 2 * i, 3, "%02x", (unsigned char)prop.uuid.bytes[i]);
        snprintf(key, sizeof key, "%s %s zgpu %d.%d.%d", prop.name, uuid, ZGPU_VERSION_MAJOR, ZGPU_VERSION_MINOR,
                 ZGPU_VERSION_PATCH);
        zg_route_file_name(prop.name, uuid, name, sizeof name);
        if (cache) {
            snprintf(path, sizeof path, "%s/%s", cache, name);
            have = zg_route_model_load(path, key, m);
        }
        if (!have && calibrate(ctx, m) == 0) {
            have = 1;
            if (cache) zg_route_model_save(path, key, m); /* (else this process keeps it in memory) */
        }
    }
    if (!have) zg_route_model_default(m); /* no properties, or the measurement failed: zgpu's defaults */
    models[slot].device = device;
    models[slot].ready = 1;
    pthread_mutex_unlock(&models_mu);
    return slot;
}

zg_route_pick dev_route_decide(zgpu_context *ctx, const zg_route_read *r) {
    const int i = model_slot(ctx);
    if (i < 0) {
        zg_route_model defaults;
        zg_route_model_default(&defaults);
        return zg_route_decide(&defaults, NULL, r);
    }
    pthread_mutex_lock(&models_mu);
    const zg_route_pick p = zg_route_decide(&models[i].m, &models[i].mem, r);
    pthread_mutex_unlock(&models_mu);
    return p;
}

void dev_route_learn(zgpu_context *ctx, const zg_route_pick *p, double seconds) {
    const int i = model_slot(ctx);
    if (i < 0) return;
    pthread_mutex_lock(&models_mu);
    zg_route_learn(&models[i].mem, p, seconds);
    pthread_mutex_unlock(&models_mu);
}
