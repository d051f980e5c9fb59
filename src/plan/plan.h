/* Planning a read: the selection box ∩ the chunk grid -> one task per chunk to decode, with where its
 * encoded bytes are (whole object, or a byte range inside a shard found through the shard index) and
 * where its decoded elements go. Shared by the host executor and the device executor. */
#ifndef ZG_PLAN_H
#define ZG_PLAN_H
#include "api/array.h"
#include "store/store.h"

enum { ZG_TASK_PENDING = 0, ZG_TASK_PRESENT = 1, ZG_TASK_MISSING = 2 };

typedef struct zg_chunk_task {
    uint32_t object;                  /* index into plan->objects */
    uint32_t inner;                   /* inner chunk index in its shard (C order); 0 when unsharded */
    uint64_t offset, nbytes;          /* encoded bytes inside the object (set by zg_plan_resolve) */
    int state;                        /* ZG_TASK_*: MISSING reads as the fill value */
    int covers_chunk;                 /* the overlap is the whole chunk */
    uint64_t coords[ZGPU_MAX_DIMS];   /* chunk coordinates in the read-chunk grid */
    uint64_t in_chunk[ZGPU_MAX_DIMS]; /* first selected element, relative to the chunk */
    uint64_t in_box[ZGPU_MAX_DIMS];   /* where that element goes, relative to the selection box */
    uint64_t count[ZGPU_MAX_DIMS];    /* overlap extent */
    uint32_t region;                  /* the box of a multi-region read (zg_plan_build_regions) it lands in; else 0 */
    uint32_t unit_n;                  /* tasks of one stored chunk are adjacent, the first (the unit's leader: decodes
                                       * it once and places it for all of them) holding their count; 0 for the
                                       * others, which only say where the leader's chunk also goes. 1 without
                                       * regions */
    uint8_t decoded_elsewhere;        /* a leader whose decoded chunk the executor has already (the context's chunk
                                       * cache): nothing of it is resolved or fetched */
} zg_chunk_task;

/* Bytes of an object already in memory (fetched from a remote store by zg_plan_resolve). */
typedef struct zg_plan_span {
    uint64_t offset, length;          /* in the object */
    const uint8_t *data;
} zg_plan_span;

typedef struct zg_plan_object {
    char *key;                        /* store key of the chunk or shard */
    uint64_t coords[ZGPU_MAX_DIMS];   /* grid coordinates of the stored object */
    int found;                        /* set by zg_plan_resolve */
    uint64_t size;                    /* object size in bytes (set by zg_plan_resolve when found) */
    size_t first_task, n_tasks;       /* its tasks are contiguous in plan->tasks */
    zg_store_file *file;              /* a shard read for several inner chunks: open from its index read on (the
                                       * same version of it for all of them), closed by zg_plan_free; or NULL */
    zg_plan_span *spans;              /* remote stores: the object's needed bytes, fetched by zg_plan_resolve or
                                       * zg_plan_fetch_objects, pointing into `fetched` */
    size_t n_spans;
    zg_buf fetched;                   /* remote stores: the object whole, or its needed inner chunks, or (a chunk
                                       * fetched in part) room for all of it with its head and needed span in place */
    uint64_t fetched_bytes;           /* remote stores, unsharded: the stored bytes fetched for it */
    int fetch_failed;                 /* remote stores: its fetch (or what it brought) failed */
    int raw_span;                     /* remote stores: an uncompressed chunk fetched as the one span its tasks need
                                       * (fetch_raw_spans): its size must be the chunk's (size) */
    int decoded_elsewhere;            /* every unit of it is decoded_elsewhere: not resolved, not fetched */
    char *etag;                       /* remote shards: the strong ETag of the version whose index the tasks come
                                       * from (sent as If-Match with its inner-chunk requests), or NULL */
} zg_plan_object;

typedef struct zg_plan {
    int ndim;
    uint64_t start[ZGPU_MAX_DIMS], count[ZGPU_MAX_DIMS]; /* the selection box (the first box of regions) */
    size_t n_regions;                 /* boxes planned together (zg_plan_build_regions); 1 for one box */
    uint64_t chunk[ZGPU_MAX_DIMS];    /* read-chunk shape */
    zg_chunk_task *tasks;             /* grouped by object, C order within */
    size_t n_tasks;
    zg_plan_object *objects;
    size_t n_objects;
    uint64_t stored_bytes;            /* sum of task nbytes after resolve */
    zg_store *store;                  /* set by zg_plan_resolve: the store of the objects' open files */
} zg_plan;

/** Default capacity of a context's shard index cache (zgpu_remote_options.shard_index_cache_bytes). */
#define ZG_SHARD_INDEX_CACHE_DEFAULT ((size_t)32 << 20)

/** How often reads found a shard replaced mid-read: one of the array's on the server (a cached index or an index
 *  read moments before no longer matching), or any object of its local store kept without a descriptor (store.h
 *  zg_store.replaced). A read that failed while this count moved is run again (host and device reads alike). */
unsigned zg_plan_shard_changes(const zgpu_array *a);

/** Checks the box against the array (ZGPU_ERR_OUT_OF_RANGE) and lists tasks and objects. */
zgpu_status zg_plan_build(const zgpu_array *a, const uint64_t *start, const uint64_t *count, zg_plan *plan);
/** Plans n boxes (starts / counts: n * ndim values) together: objects listed once, and a chunk that several boxes
 *  need is one unit (tasks' region and unit_n) so that it is fetched and decoded once. n = 1 is zg_plan_build.
 *  A box outside the array: ZGPU_ERR_OUT_OF_RANGE naming it. */
zgpu_status zg_plan_build_regions(const zgpu_array *a, size_t n, const uint64_t *starts, const uint64_t *counts,
                                  zg_plan *plan);
/** As zg_plan_build, with whole_objects = 1 making each stored object (a whole shard) one task — the
 *  unit of writing. */
zgpu_status zg_plan_build_units(const zgpu_array *a, const uint64_t *start, const uint64_t *count, int whole_objects,
                                zg_plan *plan);
/** Finds every task's byte range: object sizes for plain chunks; for sharded arrays reads and decodes each
 *  needed shard's index (small range reads, run on the context's pool) and marks empty inner chunks
 *  MISSING. Absent objects -> MISSING. On a remote store (a request is a round trip) it also fetches every
 *  task's bytes, all requests of a stage in one batch (store get_many: many in flight, nearby ranges merged):
 *  whole chunks at once (their size comes with them), or shard indexes and then the inner chunks; the
 *  executors then read them from memory (zg_plan_bytes). */
zgpu_status zg_plan_resolve(zgpu_array *a, zg_plan *plan);
/* What zg_plan_resolve_remote fetches besides shard indexes. */
typedef enum zg_remote_fetch {
    ZG_FETCH_ALL = 0,   /* every task's bytes (what zg_plan_resolve does) */
    ZG_FETCH_SIZES,     /* what the task sizes need: unsharded chunks whole (their size comes with them), of a
                         * sharded array nothing more, not even shards needed whole (the device path fetches
                         * inner chunks wave by wave) */
    ZG_FETCH_NONE       /* nothing more: the caller fetches windows of objects (zg_plan_fetch_objects); the
                         * tasks of an unsharded array have no state or size until then */
} zg_remote_fetch;
/** zg_plan_resolve for a remote store, fetching as `fetch` says. */
zgpu_status zg_plan_resolve_remote(zgpu_array *a, zg_plan *plan, zg_remote_fetch fetch);
/** What a zg_plan_fetch_objects batch tells its caller as its reads end, from any thread of the batch, maybe while
 *  the rest is in flight: each object once all of its reads are done (ok = 0: one failed), and each task whose
 *  inner chunk is read as a range of its own (a shard's, where the shard is not fetched whole) once that range is
 *  in (its index in the plan): a crop's inner chunks decode as they come instead of when the shard's last does.
 *  Either function may be NULL. */
typedef struct zg_plan_fetch_hooks {
    void (*object_ready)(void *user, size_t object, int ok);
    void (*task_ready)(void *user, size_t task, int ok);
    void *user;
} zg_plan_fetch_hooks;
/** Fetches objects [o0, o1) in one batch: unsharded ones whole (setting their tasks), or the present inner chunks
 *  of shards whose indexes were read; then zg_plan_bytes finds them. hooks (or NULL) hear of each object, and
 *  each inner chunk fetched alone, as it is done. `part` (or NULL): the chain of a read that decodes chunks needed in
 *  part only in part (zg_chain_decode_range): an unsharded chunk whose codec can name the stored bytes a range needs
 *  (blosc), needed in small part, is fetched head first and then only those bytes; its other bytes are not set, so
 *  every decode of it must be a range of what its tasks need. */
zgpu_status zg_plan_fetch_objects(zgpu_array *a, zg_plan *plan, size_t o0, size_t o1, const zg_chain *part,
                                  const zg_plan_fetch_hooks *hooks);
/** Whether fetching part of a chunk pays for its second round trip: the stored bytes it saves take longer to
 *  receive at bytes_per_s (0: not measured yet, an object store's 100 MB/s assumed) than wait_s (the wait for a
 *  first byte; < 0: not measured yet, none assumed). */
int zg_plan_part_fetch_pays(double saved_bytes, double wait_s, double bytes_per_s);
/** Frees what zg_plan_fetch_objects fetched for objects [o0, o1). */
void zg_plan_release_objects(zg_plan *plan, size_t o0, size_t o1);
/** Fetches tasks[i] for each of the n indices into outs[i] (task nbytes each), in one batch of the store. */
zgpu_status zg_plan_fetch_tasks(zgpu_array *a, const zg_plan *plan, const size_t *tasks, uint8_t *const *outs,
                                size_t n);
/** `length` bytes at `offset` of an object of the plan: from its open file when it has one, else a range read
 *  of its key (absent: *found = 0). */
zgpu_status zg_plan_read(zg_store *s, const zg_plan_object *ob, uint64_t offset, uint64_t length, uint8_t *out,
                         int *found);
void zg_plan_free(zg_plan *plan);
struct zg_chunk_cache;
struct zg_cache_ref;
/** Looks every unit of the plan up in a decoded-chunk cache (chunks of `size` decoded bytes: an entry of another
 *  size is another version's chunk, e.g. seen through a handle of older metadata: a miss): a hit is held in
 *  hits[i] (its task and, when all of an object's units hit, the object marked decoded_elsewhere: neither resolved
 *  nor fetched), a miss leaves in gens[i] the generation it saw (for the put after its decode). hits and gens are
 *  n_tasks long, zeroed; the counts go to *n_hits and *n_misses. Units already decoded_elsewhere (hits of a cache
 *  looked up before: the device cache, then the host cache) are skipped. */
void zg_plan_cache_lookup(zg_plan *plan, struct zg_chunk_cache *c, const char *store_id, size_t size,
                          struct zg_cache_ref **hits, uint64_t *gens, int *n_hits, int *n_misses);
/** The object's bytes [offset, offset + length) when zg_plan_resolve fetched them, else NULL. */
const uint8_t *zg_plan_bytes(const zg_plan_object *ob, uint64_t offset, uint64_t length);

/** Copies an N-d box of elements between two strided layouts (byte strides), innermost contiguous runs
 *  merged into memcpy calls. Used for scatter into the output and gather on write. */
void zg_copy_box(int ndim, const uint64_t *count, size_t itemsize, uint8_t *dst, const int64_t *dst_strides,
                 const uint8_t *src, const int64_t *src_strides);
/** The part of task t's chunk that lies inside an array of `shape`: its first element and its extent. */
void zg_plan_chunk_in_array(const zg_plan *plan, const uint64_t *shape, const zg_chunk_task *t, uint64_t *origin,
                            uint64_t *extent);
/** Whether t covers every element of its chunk that lies in the array: a write of it has no old value to merge. */
int zg_plan_covers_in_array(const zg_plan *plan, const uint64_t *shape, const zg_chunk_task *t);
/** Fills an N-d strided box with one element value. */
void zg_fill_box(int ndim, const uint64_t *count, size_t itemsize, uint8_t *dst, const int64_t *dst_strides,
                 const uint8_t *value);
/** The caller's byte strides for a box (given, or C-contiguous when given is NULL); rejects zero strides. */
zgpu_status zg_resolve_strides(const zgpu_array *a, const uint64_t *count, const int64_t *given, int64_t *strides);
/** The same for destination elements of `itemsize` bytes (a read converting to another type). */
zgpu_status zg_resolve_strides_item(const zgpu_array *a, size_t itemsize, const uint64_t *count, const int64_t *given,
                                    int64_t *strides);
/** zg_resolve_strides_item for the n boxes of a region read (counts, given: n * ndim; given NULL: each box
 *  C-contiguous) into *out (n * ndim, malloc'd; freed and NULL on failure, the error naming the region). */
zgpu_status zg_resolve_region_strides(const zgpu_array *a, size_t itemsize, size_t n, const uint64_t *counts,
                                      const int64_t *given, int64_t **out);
struct zg_xform;
/** A read's conversion (zgpu_read_options, NULL: none) compiled for the array's type, errors naming the array. */
zgpu_status zg_read_xform(const zgpu_array *a, const zgpu_read_options *opts, struct zg_xform *x);
/** C-contiguous byte strides for a shape. */
void zg_c_strides(int ndim, const uint64_t *shape, size_t itemsize, int64_t *strides);
/** The bytes of a decoded chunk (C order, byte strides chunk_strides) that tasks t[0..n) of one unit need: from the
 *  first element of any to the last ([0, 0) when every box is empty). Partial decodes (zg_chain_decode_range) take
 *  this. */
void zg_plan_unit_range(const zg_plan *plan, const zg_chunk_task *t, uint32_t n, size_t itemsize,
                        const int64_t *chunk_strides, size_t *lo, size_t *hi);
/** The bytes the boxes of tasks t[0..n) of one unit hold, overlaps counted twice (what a decode of their rows writes:
 *  zg_chain_decode_runs). */
uint64_t zg_plan_unit_bytes(const zg_plan *plan, const zg_chunk_task *t, uint32_t n, size_t itemsize);

#endif
