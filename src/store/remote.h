/* What the HTTP and S3 stores share: reads, batched reads (many in flight, nearby ranges of one object merged),
 * single-object writes and deletes over the HTTP client (store/http/client.h), and in-process write locks. A
 * store of each kind (http.c, s3.c) adds how a key becomes a URL, how a request is signed, and listing. */
#ifndef ZG_STORE_REMOTE_H
#define ZG_STORE_REMOTE_H
#include <pthread.h>
#include "store/store.h"
#include "store/http/client.h"

/* Settings of a remote store, from the context's zgpu_remote_options (api/location.c). */
typedef struct zg_remote_settings {
    zg_http_client *client;          /* the context's; outlives the store */
    uint64_t merge_gap;              /* ranges of one object this close are fetched as one; UINT64_MAX = never */
    uint64_t multipart_threshold, multipart_part_size;
    const zgpu_remote_options *opts; /* for the S3 choices */
} zg_remote_settings;

typedef struct zg_remote_store zg_remote_store;

typedef struct zg_remote_ops {
    /* The URL of `key` (and a raw, already encoded query, or NULL), malloc'd; NULL when out of memory. */
    char *(*url)(const zg_remote_store *r, const char *key, const char *query);
    zg_http_prepare_fn prepare;      /* signs each attempt (S3), or NULL */
} zg_remote_ops;

struct zg_remote_store {
    zg_store base;                   /* first: vtable functions cast zg_store * to zg_remote_store * */
    zg_remote_settings set;
    const zg_remote_ops *ops;
    int not_found_403;               /* anonymous S3 reads: a bucket that forbids listing answers 403 for a
                                      * missing key */
    char auth_note[200];             /* how its requests are authorised, for access-denied messages; "" none */
};

/** Initialises the shared part (root copied for messages). */
zgpu_status zg_remote_init(zg_remote_store *r, const zg_store_vtable *vt, const char *root,
                           const zg_remote_settings *set, const zg_remote_ops *ops);
void zg_remote_fini(zg_remote_store *r);

/** Fills a request for `key` (URL from ops->url, with `query`), prepare hook set. */
zgpu_status zg_remote_req(zg_remote_store *r, zg_http_req *q, zg_http_method m, const char *key, const char *query);
/** Runs requests; the first failed one becomes this thread's error, naming the store and key. */
zgpu_status zg_remote_run(zg_remote_store *r, zg_http_req *reqs, size_t n, const char *const *keys);

/* vtable entries common to both kinds */
zgpu_status zg_remote_get(zg_store *s, const char *key, zg_buf *out, int *found);
zgpu_status zg_remote_get_range(zg_store *s, const char *key, uint64_t offset, uint64_t length, int from_end,
                                uint8_t *out, int *found);
zgpu_status zg_remote_size(zg_store *s, const char *key, uint64_t *size, int *found);
zgpu_status zg_remote_get_many(zg_store *s, zg_store_get *g, size_t n);
void zg_remote_link(zg_store *s, double *wait_s, double *bytes_per_s);
zgpu_status zg_remote_put(zg_store *s, const char *key, const void *data, size_t n);
zgpu_status zg_remote_erase(zg_store *s, const char *key);
/** Deletes many keys, many requests in flight (absent keys are not an error). */
zgpu_status zg_remote_erase_keys(zg_remote_store *r, char *const *keys, size_t n);
zgpu_status zg_remote_lock(zg_store *s, const char *key, zg_store_lock *lk);
void zg_remote_unlock(zg_store *s, zg_store_lock *lk);
zgpu_status zg_remote_lock_many(zg_store *s, const char *const *keys, size_t n, zg_store_lock_set *held);
void zg_remote_unlock_many(zg_store *s, zg_store_lock_set *held);
/** PUTs and DELETEs in one batch (values of any size in one PUT each). */
zgpu_status zg_remote_set_many(zg_store *s, const zg_store_put *puts, size_t n);

/** `key` percent-encoded for a URL path ('/' kept), appended to `url` (a malloc'd string, reallocated). */
char *zg_remote_append_key(char *url, const char *key);
/** "?query" appended to `url` (reallocated) when query is neither NULL nor ""; NULL when out of memory. */
char *zg_remote_append_query(char *url, const char *query);

/** The HTTP store: `base` is "http(s)://host[:port]/path" (store/url.h). */
zgpu_status zg_store_http_open(const char *base, const zg_remote_settings *set, zg_store **out);
/** The S3 store for a bucket and key prefix ("" = the bucket's root). */
zgpu_status zg_store_s3_open(const char *bucket, const char *prefix, const zg_remote_settings *set, zg_store **out);

#endif
