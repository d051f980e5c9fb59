/* From a path or URL to a store (store/url.h), with the context's settings for remote stores: every remote
 * store of a context shares one HTTP client, so connections are reused across arrays. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/array.h"
#include "store/remote.h"
#include "store/url.h"
#include "cache/chunk_cache.h"
#include "common/status.h"
#include "plan/plan.h"

/* The context's HTTP client, made at the first remote store, and its shard index cache (plan/fetch_remote.c; made here, not
 * with the context: a cache in the process makes every writer work out what it invalidates). */
static zgpu_status context_client(zgpu_context *ctx, zg_http_client **out) {
    pthread_mutex_lock(&ctx->remote_lock);
    zgpu_status st = ZGPU_OK;
    const long long index_bytes = ctx->remote.shard_index_cache_bytes;
    if (!ctx->shard_indexes && index_bytes >= 0 &&
        !(ctx->shard_indexes = zg_chunk_cache_create(index_bytes ? (size_t)index_bytes : ZG_SHARD_INDEX_CACHE_DEFAULT)))
        st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for the shard index cache");
    if (st == ZGPU_OK && !ctx->http) {
        const zgpu_remote_options *r = &ctx->remote;
        zg_http_client_options o;
        zg_http_client_options_init(&o);
        if (r->max_in_flight) o.max_in_flight = r->max_in_flight;
        if (r->max_host_connections) o.max_host_connections = r->max_host_connections;
        /* receiving is a core's work per connection (about 2 GB/s each on loopback): as many as the pool's threads
         * by default, capped by the connections (a 64-plane OCT volume over HTTP into GPU memory: 30 ms with 4,
         * 16 ms with 16, H200) */
        o.threads = r->fetch_threads ? r->fetch_threads : ctx->opts.num_threads;
        if (r->connect_timeout_ms) o.connect_timeout_ms = r->connect_timeout_ms;
        if (r->request_timeout_ms) o.request_timeout_ms = r->request_timeout_ms;
        if (r->max_retries) o.max_retries = r->max_retries;
        if (r->retry_base_ms) o.retry_base_ms = r->retry_base_ms;
        o.verify_tls = !r->tls_no_verify;
        o.ca_file = r->ca_file;
        st = zg_http_client_create(&o, &ctx->http);
    }
    *out = ctx->http;
    pthread_mutex_unlock(&ctx->remote_lock);
    return st;
}

zgpu_status zg_store_open(const zgpu_context *cctx, const char *location, zg_store **out) {
    *out = NULL;
    zgpu_context *ctx = (zgpu_context *)cctx; /* the client is made lazily; the options stay as they are */
    zg_location loc;
    ZG_FORWARD(zg_location_parse(location, &loc));
    zgpu_status st;
    if (loc.kind == ZG_LOC_FILE) {
        st = zg_store_fs_open_confined(loc.path, ctx->opts.confine_to_store, out);
    } else {
        const zgpu_remote_options *r = &ctx->remote;
        zg_remote_settings set = {0};
        set.opts = r;
        set.merge_gap = r->range_merge_gap < 0 ? UINT64_MAX : r->range_merge_gap ? (uint64_t)r->range_merge_gap
                                                                                 : (uint64_t)64 << 10;
        set.multipart_threshold = r->multipart_threshold ? r->multipart_threshold : (uint64_t)64 << 20;
        set.multipart_part_size = r->multipart_part_size ? r->multipart_part_size : (uint64_t)16 << 20;
        st = context_client(ctx, &set.client);
        if (st == ZGPU_OK)
            st = loc.kind == ZG_LOC_HTTP ? zg_store_http_open(loc.base, &set, out)
                                         : zg_store_s3_open(loc.bucket, loc.prefix, &set, out);
    }
    zg_location_free(&loc);
    return st;
}
