/* Internal layout of the public handles (include/zgpu.h). */
#ifndef ZG_ARRAY_H
#define ZG_ARRAY_H
#include <pthread.h>
#include <stdatomic.h>
#include "zgpu.h"
#include "zgpu_experimental.h"
#include "codec/chain.h"
#include "host/pool.h"
#include "meta/metadata.h"
#include "store/store.h"

struct zg_device_state; /* owned by src/device/ (NULL until the first device read) */

struct zgpu_context {
    zgpu_context_options opts;     /* opts.tuning is NULL: the context's own copy is `tuning` */
    zgpu_tuning tuning;            /* the options' tuning with the environment's overrides (common/env.h) */
    zg_pool *pool;                 /* host decode threads */
    pthread_mutex_t device_lock;   /* guards lazy creation of `device` */
    struct zg_device_state *device;
    zgpu_remote_options remote;    /* opts.remote copied, strings owned (opts.remote is NULL) */
    pthread_mutex_t remote_lock;   /* guards lazy creation of `http` */
    struct zg_http_client *http;   /* shared by every remote store of the context: one pool of connections */
    struct zg_chunk_cache *cache;  /* decoded chunks (opts.cache_bytes; cache/chunk_cache.h); NULL when off */
    struct zg_chunk_cache *shard_indexes; /* decoded shard indexes of remote arrays with their shards' ETags
                                   * (remote.shard_index_cache_bytes; plan/fetch_remote.c), made with `http`; NULL when off
                                   * or before the first remote store */
};

struct zgpu_array {
    zgpu_context *ctx;
    char *path;
    zg_store *store;
    zg_array_meta meta;
    zg_chain *chain;               /* decodes one stored object (a chunk, or a whole shard) */
    const zg_codec *sharding;      /* chain->a2b when it is sharding_indexed, else NULL */
    const zg_codec *shard;         /* `sharding` when reads can fetch inner chunks alone (no bytes->bytes codec
                                    * follows it), else NULL: then a whole shard is the unit of decoding */
    uint64_t read_chunk[ZGPU_MAX_DIMS]; /* the unit a read decodes: the inner chunk when `shard` is set */
    atomic_int stats_owner;        /* a spin lock around last_stats: 0, or the pid of the process whose thread holds
                                    * it (a forked child takes over a hold of its parent's: zg_array_set_stats) */
    zgpu_read_stats last_stats;
    struct zg_stage *stage;        /* ZGPU_CREATE_STAGED until zgpu_array_commit: `store` is the staging
                                    * directory and metadata waits for the commit (api/stage.h) */
    int remote_staged;             /* ZGPU_CREATE_STAGED on an object store: the metadata waits for the commit */
    atomic_uint shard_changes;     /* remote shards found replaced mid-read (plan/plan.h zg_plan_shard_changes) */
    _Atomic uint64_t stored_chunk_bits; /* remote, unsharded: a moving average of a chunk's stored size, as fetches
                                    * found them (the bits of a double; 0: none yet), for fetch_remote.c's part fetches */
    const char *read_only;         /* NULL, or what the array is when it cannot be written ("a TIFF file") */
};

struct zgpu_group {
    zgpu_context *ctx;
    char *path;
    zg_store *store;
    zg_group_meta meta;
};

/** "array '<path>'" prefix used in messages. */
#define ZG_ARRAY_WHERE_FMT "array '%s'"

/** Records stats of a finished read (thread-safe). */
void zg_array_set_stats(zgpu_array *a, const zgpu_read_stats *s);
/** Monotonic clock in seconds. */
double zg_now(void);

/* Shared by array.c and group.c */
/** Bytes of chunks per window of a remote read or write (zgpu_remote_options.window_bytes, or its default). */
static inline uint64_t zg_remote_window_bytes(const zgpu_context *ctx) {
    return ctx->remote.window_bytes ? ctx->remote.window_bytes : (uint64_t)256 << 20;
}
/** Kind of node in a store's root: 1 array, 2 group, 0 none; *format its Zarr format. */
zgpu_status zg_store_node_kind(zg_store *s, int *kind, int *format);
/** Before a new node on an object store (no renames to swap one in): ZGPU_ERR_EXISTS if a node is there and
 *  overwrite is 0, else its objects deleted. `where` names the node for messages. */
zgpu_status zg_remote_clear_node(zg_store *s, int overwrite, const char *where);
zgpu_status zg_store_get_text(zg_store *s, const char *key, char **text, size_t *len);
/** zg_store_get_text parsed as JSON (messages name the key); *out = NULL when absent. */
zgpu_status zg_store_get_json(zg_store *s, const char *key, zj_value **out);
/** zgpu_array_open with the array's document fetched already: zarr.json (v2 = 0), or .zarray (v2 = 1; .zattrs
 *  is read here). For zgpu_context_open_node, which fetches a node's document once whatever the node is. */
zgpu_status zg_array_open_doc(zgpu_context *ctx, const char *path, const char *text, size_t len, int v2,
                              zgpu_array **out);
zgpu_status zg_parse_attributes(const char *json, zj_value **out);
/** An array of a format module (src/format/): `doc` a v3 zarr.json built for it, its chunks all in the one object
 *  `single_key` of the store at `store_location`; `path` names it. Read-only (`read_only` says what it is). */
zgpu_status zg_array_open_built(zgpu_context *ctx, const char *path, const char *store_location, const char *doc,
                                const char *single_key, const char *read_only, zgpu_array **out);
/** ZGPU_ERR_UNSUPPORTED naming the array and `what` (the call) when the array is read-only; else ZGPU_OK. */
zgpu_status zg_array_check_writable(const zgpu_array *a, const char *what);

#endif
