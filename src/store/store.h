/* Storage backends behind one vtable. Keys are '/'-separated and relative to the store's root; a key never has
 * a ".." component (the filesystem store refuses one).
 *
 * Error classes of the filesystem store: anything on the filesystem that is not a regular file where a stored
 * value (chunk, shard, metadata document) is expected — a directory, FIFO, socket, character or block device —
 * is ZGPU_ERR_IO naming the path and what it is; it is never opened in a way that can block and never read as
 * "absent". A key that is absent (or below a regular file) is not an error: *found = 0. A store opened confined
 * refuses, with ZGPU_ERR_IO naming the key, any key whose path leads outside the root through a symbolic link. */
#ifndef ZG_STORE_H
#define ZG_STORE_H
#include <stdatomic.h>
#include <stdint.h>
#include "zgpu.h"
#include "common/buf.h"

typedef struct zg_store zg_store;
typedef struct zg_store_file zg_store_file; /* one object, open for reading ranges */

typedef struct zg_list_entry {
    char *name;     /* a direct child's name */
    int is_dir;
    uint64_t size;  /* bytes, for files */
} zg_list_entry;

/* A held write lock on one stored object (store.h's lock / unlock). */
typedef struct zg_store_lock {
    uint64_t slot; /* backend's choice: for the filesystem store, the byte locked in the lock file */
    int held;
} zg_store_lock;

/* Write locks held on several objects at once (lock_many), for a batch of writes. */
#define ZG_STORE_LOCK_SET_BITS 256
typedef struct zg_store_lock_set {
    uint64_t bits[ZG_STORE_LOCK_SET_BITS / 64];
} zg_store_lock_set;

/* One write of a batch (set_many): a value, or (erase != 0) a deletion. */
typedef struct zg_store_put {
    const char *key;
    const uint8_t *data;
    size_t n;
    int erase;
} zg_store_put;

/* One read of a batch (get_many): a whole value into `buf`, or a range into `out`. */
#define ZG_STORE_WHOLE UINT64_MAX
#define ZG_STORE_ETAG_MAX 128

typedef struct zg_store_get {
    const char *key;
    uint64_t offset;      /* ignored for a whole value */
    uint64_t length;      /* ZG_STORE_WHOLE: the whole value into buf; else exactly `length` bytes into out */
    int from_end;         /* the range is the last `length` bytes */
    int upto;             /* with offset 0: the first `length` bytes, or the whole value where it is shorter (then
                           * object_size < length says how many came): a head read of a value of unknown size */
    uint8_t *out;
    zg_buf *buf;
    int found;            /* result: 0 when the key is absent */
    uint64_t object_size; /* result: the value's whole size where the store learnt it (a range read of a remote
                           * object does), else ZG_STORE_WHOLE */
    zgpu_status status;   /* result: this read's own status (the batch returns the first failure) */
    /* Remote stores only (others ignore them). if_match: an ETag the object must still have (sent as If-Match: a
     * server holding another version answers 412, and the read fails with `changed` set); etag: where to keep the
     * object's ETag from the answer (ZG_STORE_ETAG_MAX bytes; "" when the server sent none). */
    const char *if_match;
    char *etag;
    int changed;          /* result: the object is no longer the version if_match named */
    /* Optional: called once this read has its result (found, object_size, status and its bytes in place), maybe
     * while the rest of the batch is still in flight, from any thread fetching for the batch. */
    void (*on_done)(struct zg_store_get *g);
    void *user;
} zg_store_get;

typedef struct zg_store_vtable {
    const char *name;
    /* 1: each request is a network round trip: readers batch them (get_many) instead of one per task */
    int remote;
    /* Whole value into out (out->size set). Absent: *found = 0 and ZGPU_OK. */
    zgpu_status (*get)(zg_store *s, const char *key, zg_buf *out, int *found);
    /* `length` bytes at `offset` (from_end != 0: the offset counts back from the end) into out.
     * A value shorter than the range is ZGPU_ERR_CORRUPT_DATA. Absent: *found = 0. */
    zgpu_status (*get_range)(zg_store *s, const char *key, uint64_t offset, uint64_t length, int from_end,
                             uint8_t *out, int *found);
    zgpu_status (*size)(zg_store *s, const char *key, uint64_t *size, int *found);
    /* Atomic replace: written under a temporary name, then renamed. Creates parent "directories". */
    zgpu_status (*set)(zg_store *s, const char *key, const void *data, size_t n);
    /* Absent is not an error. */
    zgpu_status (*erase)(zg_store *s, const char *key);
    /* Deletes everything under prefix ("" = the whole store's contents). */
    zgpu_status (*erase_prefix)(zg_store *s, const char *prefix);
    /* Direct children of a prefix ("" = root, else without trailing '/'), sorted by name. Absent prefix: 0 entries. */
    zgpu_status (*list)(zg_store *s, const char *prefix, zg_list_entry **entries, size_t *n);
    void (*destroy)(zg_store *s);
    /* One object open for many range reads (a shard's index, then its inner chunks): the same version of it
     * throughout, even if it is replaced meanwhile, and no lookup per range. *size: its bytes. Absent:
     * *found = 0 and *f = NULL. A file the store cannot keep a descriptor for (out of them, or holding its share)
     * still comes back: each range then reopens the object and fails if it is another version. A store may
     * also leave *f NULL with *found = 1; the caller then reads ranges with get_range. */
    zgpu_status (*open_file)(zg_store *s, const char *key, zg_store_file **f, uint64_t *size, int *found);
    /* `length` bytes at `offset` of an open object; a range past its end is ZGPU_ERR_CORRUPT_DATA, as in
     * get_range. Several threads may read one file at once. */
    zgpu_status (*read_file)(zg_store_file *f, uint64_t offset, uint64_t length, uint8_t *out);
    void (*close_file)(zg_store_file *f);
    /* Write lock on one stored object, exclusive among every zgpu writer of the store (other processes and
     * other handles of this process, and threads of this handle), held from the read of an object's old value
     * to the replacement of it; released by the kernel if the process dies. Blocks while another writer holds
     * it. One object locked per thread at a time (no lock ordering is kept). */
    zgpu_status (*lock)(zg_store *s, const char *key, zg_store_lock *lk);
    void (*unlock)(zg_store *s, zg_store_lock *lk);
    /* Optional (remote stores): n reads with many in flight at once. Every read is attempted; the first failure
     * is returned, its message naming the key. Ranges past a value's end are ZGPU_ERR_CORRUPT_DATA, as in
     * get_range. */
    zgpu_status (*get_many)(zg_store *s, zg_store_get *reqs, size_t n);
    /* Optional (remote stores): what a request costs, as answers so far have shown: the wait for a first byte
     * (-1: not known yet) and one answer's body rate in bytes/s (0: not known yet). */
    void (*link)(zg_store *s, double *wait_s, double *bytes_per_s);
    /* Optional (remote stores), all three or none: the write locks of n objects taken together (in one order,
     * so two batches never deadlock), released together; and n writes and deletions with many in flight, each
     * object replaced whole (as set and erase do). */
    zgpu_status (*lock_many)(zg_store *s, const char *const *keys, size_t n, zg_store_lock_set *held);
    void (*unlock_many)(zg_store *s, zg_store_lock_set *held);
    zgpu_status (*set_many)(zg_store *s, const zg_store_put *puts, size_t n);
} zg_store_vtable;

struct zg_store {
    const zg_store_vtable *vt;
    atomic_uint replaced; /* objects found replaced (or removed) while a read held them open (read_file): a reader
                           * that failed meanwhile reads again (plan/plan.h zg_plan_shard_changes) */
    char *root; /* for messages */
    char *id;   /* where the store's objects live, the same for every store opened on one location (the
                 * decoded-chunk cache's name for it, cache/chunk_cache.h): a filesystem store's canonical
                 * absolute directory, an HTTP store's base URL, an S3 store's endpoint, bucket and prefix.
                 * Set by each backend's open; freed by zg_store_free. */
};

/** Filesystem store rooted at a directory. Nothing is created until the first set(), which makes the
 *  directories it needs. */
zgpu_status zg_store_fs_open(const char *root, zg_store **out);
/** The same, confined (confine != 0; zgpu_context_options.confine_to_store): every key resolves beneath the root
 *  (openat2 RESOLVE_BENEATH where the kernel has it, else a walk that refuses every symbolic link below the
 *  root); a key whose path leaves the root is an error naming it. The root itself may be a link. */
zgpu_status zg_store_fs_open_confined(const char *root, int confine, zg_store **out);
/** Tests only: 1 makes confined stores walk component by component as on kernels without openat2. */
void zg_store_fs_test_walk(int on);
/** Names the filesystem store keeps for itself in the store's directories: never listed as keys. */
#define ZG_FS_TMP_MARK ".zgpu-tmp-"
#define ZG_FS_LOCK_NAME ".zgpu-lock"
#define ZG_PATH_MAX 4096
/** The file of `key` in a filesystem store (the root itself for ""), into out[ZG_PATH_MAX]; too long: an error. */
zgpu_status zg_store_fs_path(const zg_store *s, const char *key, char *out);
void zg_store_free(zg_store *s);
/** A filesystem store's id (zg_store.id) for a directory `root`, existing or not: its canonical absolute path
 *  (malloc'ed; NULL when out of memory). For code that changes a directory tree without a store (api/stage.c). */
char *zg_store_fs_id(const char *root);

struct zgpu_context;
/** Opens the store a location names (store/url.h): a local directory (confined per the context's
 *  confine_to_store), http(s):// or s3://, with the context's remote options. */
zgpu_status zg_store_open(const struct zgpu_context *ctx, const char *location, zg_store **out);
/** A store's reads in one batch: get_many where the store has it, else one get / get_range per read. */
zgpu_status zg_store_get_batch(zg_store *s, zg_store_get *reqs, size_t n);
void zg_list_free(zg_list_entry *entries, size_t n);

#endif
