/* The decoded-chunk cache (zgpu_context_options.cache_bytes): a bounded LRU of decoded chunks in host memory,
 * one per context, shared by its arrays and threads. An external cache (zg_chunk_cache_create_external) keeps the
 * same names, generations and LRU over bytes its owner allocates and frees (device memory:
 * zgpu_context_options.device_cache_bytes, src/device/chunk_cache_dev.c).
 *
 * An entry is named by where its object lives and which decoded unit of it it is: the store's identity
 * (zg_store.id: the canonical absolute directory of a filesystem store, the base URL of an HTTP store, the
 * endpoint, bucket and prefix of an S3 store), the object's key in that store, and `inner` (a sharded array's
 * inner chunk index within its shard, 0 otherwise). The cache joins the first two as "<store_id>/<key>", so a
 * group's store and an array's store below it name one object alike; a prefix invalidation of a group's
 * location drops its arrays' chunks too.
 *
 * Readers: zg_chunk_cache_get; on a hit, copy from ref->data (ref->size bytes) and zg_chunk_cache_release; on
 * a miss, fetch and decode, then zg_chunk_cache_put with the generation the miss returned. A write that
 * replaced the object meanwhile bumped its generation, and the put is refused, so a decode of the old bytes is
 * never kept (writers invalidate AFTER the new object is in place: a reader that fetched after the
 * invalidation reads the new bytes).
 *
 * Writers (every zgpu write path): zg_chunk_cache_invalidate_object_all / _prefix_all, which reach every cache
 * of the process (a context's arrays may be written through another context).
 *
 * Every function takes a NULL cache (the cache is off): get misses, put keeps nothing, the rest do nothing.
 * Every function is thread-safe. After fork() the child's caches work (their locks are taken around the fork). */
#ifndef ZG_CHUNK_CACHE_H
#define ZG_CHUNK_CACHE_H
#include <stddef.h>
#include <stdint.h>

typedef struct zg_chunk_cache zg_chunk_cache;

/* A held entry: read-only bytes that stay valid until released, even if the entry is evicted or invalidated
 * meanwhile. */
typedef struct zg_cache_ref {
    const uint8_t *data;
    size_t size;
} zg_cache_ref;

/* Counters since the cache was made (bytes and entries: now). */
typedef struct zg_chunk_cache_stats {
    uint64_t hits, misses;
    uint64_t inserts;        /* puts kept */
    uint64_t evictions;      /* entries dropped to make room */
    uint64_t invalidations;  /* entries dropped by invalidate_* */
    uint64_t refused_stale;  /* puts refused: the object was written since their get */
    uint64_t refused_large;  /* puts refused: over a quarter of the capacity */
    uint64_t bytes;          /* what the kept entries cost (zg_chunk_cache_entry_cost each) */
    uint64_t entries;
    uint64_t capacity;
} zg_chunk_cache_stats;

/** A cache of up to capacity_bytes; NULL for 0 (off) or when out of memory. */
zg_chunk_cache *zg_chunk_cache_create(size_t capacity_bytes);
/** Gives an external entry's bytes back to their owner: called once per kept entry when it is freed (evicted,
 *  invalidated or replaced with no reader holding it, its last release, or the cache freed), and for a put that was
 *  not kept; never under the cache's lock, from whichever thread dropped it (a writer's invalidation included). */
typedef void (*zg_cache_release_fn)(void *ctx, void *data, size_t n);
/** A cache of up to capacity_bytes whose entries' bytes live elsewhere (zg_chunk_cache_put_external), each counted
 *  at its size plus its header; NULL for 0, a NULL release, or out of memory. */
zg_chunk_cache *zg_chunk_cache_create_external(size_t capacity_bytes, zg_cache_release_fn release, void *ctx);
/** Frees the cache and its entries (an external cache's bytes released); no reference may be held. Accepts NULL. */
void zg_chunk_cache_free(zg_chunk_cache *c);

/** What an entry of n bytes for this object costs against the capacity: n plus the entry's header and name. */
size_t zg_chunk_cache_entry_cost(const char *store_id, const char *key, size_t n);

/** A hit: the entry, held (zg_chunk_cache_release), moved to the most recently used end. A miss: NULL, and
 *  *gen_out (if not NULL) the object's generation now, for zg_chunk_cache_put. No allocation either way. */
zg_cache_ref *zg_chunk_cache_get(zg_chunk_cache *c, const char *store_id, const char *key, uint32_t inner,
                                 uint64_t *gen_out);
/** As zg_chunk_cache_get, but an entry of another size than `size` is a miss: what readers should call, with the
 *  size their handle's metadata decodes the chunk to. A handle opened before its array was replaced (its old
 *  metadata) may share the name of a chunk with a handle of the new array; a hit of the wrong size would have
 *  the reader copy past the entry's end. ZG_CACHE_ANY_SIZE: any size (zg_chunk_cache_get). */
#define ZG_CACHE_ANY_SIZE SIZE_MAX
zg_cache_ref *zg_chunk_cache_get_sized(zg_chunk_cache *c, const char *store_id, const char *key, uint32_t inner,
                                       size_t size, uint64_t *gen_out);
/** Lets go of a hit. Accepts NULL ref. */
void zg_chunk_cache_release(zg_chunk_cache *c, zg_cache_ref *ref);
/** The object's generation now (what a miss reports), for a reader that fetches without a get first. */
uint64_t zg_chunk_cache_generation(zg_chunk_cache *c, const char *store_id, const char *key);

/** Keeps a copy of data[0..n) for (store_id, key, inner), evicting least recently used entries to make room.
 *  Refused (returns 0, nothing kept) when:
 *  - the object's generation is no longer `gen` (written or invalidated since the get that reported gen: the
 *    bytes may be the old value's), or
 *  - its cost (zg_chunk_cache_entry_cost) is over a quarter of the capacity: one huge chunk would flush most
 *    of the cache for a single entry, and at least four chunks always fit, or
 *  - out of memory.
 *  An entry already there for the key of the same size stays (it holds the same generation's bytes): returns
 *  1, as for a put kept; one of another size (decoded under other metadata) is replaced. The copy is made
 *  before the cache's lock is taken. An external cache refuses every put of this kind (0). */
int zg_chunk_cache_put(zg_chunk_cache *c, const char *store_id, const char *key, uint32_t inner, uint64_t gen,
                       const void *data, size_t n);

/** zg_chunk_cache_put for an external cache: data[0..n) is the owner's, and the cache takes it over whether kept
 *  or not (refused: released at once, 0 returned). A plain cache refuses it (0, data not released). */
int zg_chunk_cache_put_external(zg_chunk_cache *c, const char *store_id, const char *key, uint32_t inner,
                                uint64_t gen, void *data, size_t n);

/** Drops every inner chunk of one object and bumps its generation (refusing puts of reads begun before). */
void zg_chunk_cache_invalidate_object(zg_chunk_cache *c, const char *store_id, const char *key);
/** Drops everything at or below "<store_id>/<prefix>" ("" = the whole store) and refuses every put whose get
 *  came before (all objects', not only those below the prefix: see the generations in chunk_cache.c). */
void zg_chunk_cache_invalidate_prefix(zg_chunk_cache *c, const char *store_id, const char *prefix);
/** The two above on every cache of the process: what writers call. Without a cache, one atomic load. */
void zg_chunk_cache_invalidate_object_all(const char *store_id, const char *key);
void zg_chunk_cache_invalidate_prefix_all(const char *store_id, const char *prefix);
/** 1 while a cache exists in the process: writers may skip working out what to invalidate when 0 (a cache made
 *  after that check cannot hold what the write replaced: its reads begin after the write's new value is in). */
int zg_chunk_cache_active(void);

/** The counters (zeros for NULL). */
void zg_chunk_cache_get_stats(zg_chunk_cache *c, zg_chunk_cache_stats *out);

#endif
