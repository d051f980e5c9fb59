/* zgpu_context: options and the host thread pool. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/array.h"
#include "cache/chunk_cache.h"
#include "device/device.h"
#include "common/env.h"
#include "common/status.h"
#include "store/http/client.h"

double zg_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

ZGPU_API void zgpu_context_options_init(zgpu_context_options *opts) {
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
    opts->num_threads = 0;
    opts->device = 0;
    opts->device_memory_budget = 0;
    opts->gds_mode = ZGPU_GDS_AUTO;
    opts->gpu_decode = 1;
    opts->gpu_trust_input = 0;
}

ZGPU_API void zgpu_remote_options_init(zgpu_remote_options *o) {
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
}

static void free_remote(zgpu_remote_options *r) {
    free((char *)r->ca_file);
    free((char *)r->s3_endpoint);
    free((char *)r->s3_region);
    free((char *)r->s3_profile);
    memset(r, 0, sizeof *r);
}

/* Copies the caller's remote options (perhaps an older, shorter struct), strings included, and checks them. */
static zgpu_status take_remote(const zgpu_remote_options *in, zgpu_remote_options *r) {
    zgpu_remote_options_init(r);
    if (!in) return ZGPU_OK;
    ZG_RETURN_IF(in->struct_size < offsetof(zgpu_remote_options, max_in_flight) + sizeof(int) ||
                 in->struct_size > sizeof *r, ZGPU_ERR_INVALID_ARGUMENT,
                 "zgpu_remote_options.struct_size is %zu; use zgpu_remote_options_init", in->struct_size);
    memcpy(r, in, in->struct_size);
    r->struct_size = sizeof *r;
    const char **strs[] = {&r->ca_file, &r->s3_endpoint, &r->s3_region, &r->s3_profile};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++) *strs[i] = NULL;
    const char *src[] = {in->ca_file, in->s3_endpoint, in->s3_region, in->s3_profile};
    const size_t ends[] = {offsetof(zgpu_remote_options, ca_file), offsetof(zgpu_remote_options, s3_endpoint),
                           offsetof(zgpu_remote_options, s3_region), offsetof(zgpu_remote_options, s3_profile)};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++) {
        if (in->struct_size < ends[i] + sizeof(char *) || !src[i]) continue;
        if (!(*strs[i] = strdup(src[i]))) {
            free_remote(r);
            return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        }
    }
    const char *bad = r->max_in_flight < 0 || r->max_in_flight > 4096          ? "max_in_flight (0..4096)"
                      : r->fetch_threads < 0 || r->fetch_threads > 64 ? "fetch_threads (0..64)"
                      : r->max_host_connections < 0 || r->max_host_connections > 1024
                          ? "max_host_connections (0..1024)"
                      : r->connect_timeout_ms < 0 || r->request_timeout_ms < 0 ? "timeouts (>= 0)"
                      : r->max_retries < -1 || r->max_retries > 100            ? "max_retries (-1..100)"
                      : r->retry_base_ms < 0                                    ? "retry_base_ms (>= 0)"
                      : r->range_merge_gap < -1                                 ? "range_merge_gap (-1 or >= 0)"
                      : r->shard_index_cache_bytes < -1 ? "shard_index_cache_bytes (-1 or >= 0)"
                      : (unsigned)r->s3_addressing > ZGPU_S3_ADDRESSING_VIRTUAL ? "s3_addressing"
                      : r->multipart_part_size && r->multipart_part_size < (5ull << 20)
                          ? "multipart_part_size (S3 parts are at least 5 MiB)"
                          : NULL;
    if (bad) {
        free_remote(r);
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_remote_options: %s is out of range", bad);
    }
    return ZGPU_OK;
}

ZGPU_API void zgpu_tuning_init(zgpu_tuning *t) {
    memset(t, 0, sizeof *t);
    t->struct_size = sizeof *t;
    t->zstd_huf_probe = -1;
}

ZGPU_API void zgpu_context_tuning(const zgpu_context *ctx, zgpu_tuning *t) { *t = ctx->tuning; }

/* Copies the caller's tuning (which may be an older, shorter struct) and checks it. */
static zgpu_status take_tuning(const zgpu_tuning *in, zgpu_tuning *t) {
    zgpu_tuning_init(t);
    if (in) {
        ZG_RETURN_IF(in->struct_size < offsetof(zgpu_tuning, zstd_decoder) || in->struct_size > sizeof *t,
                     ZGPU_ERR_INVALID_ARGUMENT, "zgpu_tuning.struct_size is %zu; use zgpu_tuning_init", in->struct_size);
        memcpy(t, in, in->struct_size);
        t->struct_size = sizeof *t;
    }
    zg_env_apply_tuning(t);
    const zgpu_decoder_choice d[3] = {t->zstd_decoder, t->deflate_decoder, t->lz4_decoder};
    for (int i = 0; i < 3; i++)
        ZG_RETURN_IF((unsigned)d[i] > ZGPU_DECODER_HOST || (i == 2 && d[i] == ZGPU_DECODER_HOST),
                     ZGPU_ERR_INVALID_ARGUMENT, "zgpu_tuning: %s_decoder %d is not a decoder choice for it",
                     i == 0 ? "zstd" : i == 1 ? "deflate" : "lz4", (int)d[i]);
    ZG_RETURN_IF((unsigned)t->zstd_encoder > ZGPU_DECODER_HOST, ZGPU_ERR_INVALID_ARGUMENT,
                 "zgpu_tuning: zstd_encoder %d is not an encoder choice (0 auto, 1 zgpu, 2 nvcomp, 3 host)",
                 (int)t->zstd_encoder);
    ZG_RETURN_IF(t->pipeline_waves < 0 || t->pipeline_waves > 64, ZGPU_ERR_INVALID_ARGUMENT,
                 "zgpu_tuning: pipeline_waves %d is out of range (0..64)", t->pipeline_waves);
    ZG_RETURN_IF(t->n_wave_shape < 0 || t->n_wave_shape > ZGPU_TUNING_MAX_SHAPE, ZGPU_ERR_INVALID_ARGUMENT,
                 "zgpu_tuning: n_wave_shape %d is out of range (0..%d)", t->n_wave_shape, ZGPU_TUNING_MAX_SHAPE);
    for (int i = 0; i < t->n_wave_shape; i++)
        ZG_RETURN_IF(t->wave_shape[i] == 0 || t->wave_shape[i] > 1000000, ZGPU_ERR_INVALID_ARGUMENT,
                     "zgpu_tuning: wave_shape[%d] is %u (1..1000000)", i, t->wave_shape[i]);
    ZG_RETURN_IF(t->wave_sets < 0 || t->wave_sets == 1 || t->wave_sets > 4, ZGPU_ERR_INVALID_ARGUMENT,
                 "zgpu_tuning: wave_sets %d is out of range (0, or 2..4: a read needs two buffer sets)",
                 t->wave_sets);
    ZG_RETURN_IF((unsigned)t->wave_overlap > ZGPU_SWITCH_OFF || (unsigned)t->zstd_rows > ZGPU_SWITCH_OFF ||
                     (unsigned)t->partial_decode > ZGPU_SWITCH_OFF || (unsigned)t->split_decode > ZGPU_SWITCH_OFF,
                 ZGPU_ERR_INVALID_ARGUMENT, "zgpu_tuning: wave_overlap / zstd_rows / partial_decode / split_decode must be a zgpu_switch");
    ZG_RETURN_IF(t->zstd_huf_probe < -1 || t->zstd_huf_probe > 4096, ZGPU_ERR_INVALID_ARGUMENT,
                 "zgpu_tuning: zstd_huf_probe %d is out of range (-1..4096)", t->zstd_huf_probe);
    ZG_RETURN_IF(t->inflate_parts < 0, ZGPU_ERR_INVALID_ARGUMENT, "zgpu_tuning: inflate_parts %d is negative",
                 t->inflate_parts);
    ZG_RETURN_IF((unsigned)t->read_route > ZGPU_ROUTE_HOST, ZGPU_ERR_INVALID_ARGUMENT,
                 "zgpu_tuning: read_route %d is not a zgpu_route (0 auto, 1 device, 2 host)", (int)t->read_route);
    ZG_RETURN_IF((unsigned)t->host_read_route > ZGPU_ROUTE_HOST, ZGPU_ERR_INVALID_ARGUMENT,
                 "zgpu_tuning: host_read_route %d is not a zgpu_route (0 auto, 1 device, 2 host)",
                 (int)t->host_read_route);
    ZG_RETURN_IF(t->pool_spin_us < -1 || t->pool_spin_us > 1000000, ZGPU_ERR_INVALID_ARGUMENT,
                 "zgpu_tuning: pool_spin_us %d is out of range (-1 = never, 0 = the default, up to 1000000)",
                 t->pool_spin_us);
    return ZGPU_OK;
}

ZGPU_API zgpu_status zgpu_context_create(const zgpu_context_options *opts, zgpu_context **out) {
    if (!out) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_context_create: out is NULL");
    *out = NULL;
    zgpu_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    zgpu_context_options_init(&ctx->opts);
    if (opts) {
        if (opts->struct_size < offsetof(zgpu_context_options, gpu_decode) + sizeof(int) ||
            opts->struct_size > sizeof *opts) {
            free(ctx);
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_context_options.struct_size is %zu; use zgpu_context_options_init",
                            opts->struct_size);
        }
        memcpy(&ctx->opts, opts, opts->struct_size);
        ctx->opts.struct_size = sizeof ctx->opts;
    }
    zgpu_status ts = take_tuning(ctx->opts.tuning, &ctx->tuning);
    ctx->opts.tuning = NULL; /* the caller's struct need not outlive the call */
    if (ts == ZGPU_OK)
        ts = take_remote(ctx->opts.struct_size >= offsetof(zgpu_context_options, remote) + sizeof(void *)
                             ? ctx->opts.remote : NULL, &ctx->remote);
    ctx->opts.remote = NULL;
    if (ts != ZGPU_OK) {
        free(ctx);
        return ts;
    }
    if (ctx->opts.num_threads < 0 || ctx->opts.num_threads > 4096) {
        int n = ctx->opts.num_threads;
        free_remote(&ctx->remote);
        free(ctx);
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "num_threads %d is out of range (0..4096)", n);
    }
    if (ctx->opts.num_threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        ctx->opts.num_threads = n > 0 ? (int)n : 1;
    }
    pthread_mutex_init(&ctx->device_lock, NULL);
    pthread_mutex_init(&ctx->remote_lock, NULL);
    zgpu_status st = zg_pool_create(ctx->opts.num_threads, &ctx->pool);
    if (st == ZGPU_OK)
        zg_pool_set_spin(ctx->pool, ctx->tuning.pool_spin_us == 0  ? ZG_POOL_SPIN_US_DEFAULT
                                    : ctx->tuning.pool_spin_us < 0 ? 0
                                                                   : ctx->tuning.pool_spin_us);
    if (st == ZGPU_OK && ctx->opts.cache_bytes && !(ctx->cache = zg_chunk_cache_create(ctx->opts.cache_bytes))) {
        zg_pool_free(ctx->pool);
        st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for the chunk cache");
    }
    if (st != ZGPU_OK) {
        pthread_mutex_destroy(&ctx->device_lock);
        pthread_mutex_destroy(&ctx->remote_lock);
        free_remote(&ctx->remote);
        free(ctx);
        return st;
    }
    *out = ctx;
    return ZGPU_OK;
}

ZGPU_API void zgpu_context_free(zgpu_context *ctx) {
    if (!ctx) return;
    zg_device_state_free(ctx->device);
    zg_pool_free(ctx->pool);
    zg_http_client_free(ctx->http);
    zg_chunk_cache_free(ctx->cache);
    zg_chunk_cache_free(ctx->shard_indexes);
    pthread_mutex_destroy(&ctx->device_lock);
    pthread_mutex_destroy(&ctx->remote_lock);
    free_remote(&ctx->remote);
    free(ctx);
}
