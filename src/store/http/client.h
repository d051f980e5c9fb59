/* HTTP(S) requests in batches over libcurl: many requests in flight on one multi handle (HTTP/1.1 keep-alive
 * connections reused across batches, HTTP/2 multiplexing where the server offers it), retries with exponential
 * backoff and jitter, and every response body checked against Content-Length / Content-Range so a short or
 * misplaced body is an error, never a silently short value. The HTTP and S3 stores (store/http.c, store/s3.c)
 * are its only users.
 *
 * Thread safety: a client may be used by several threads at once; each zg_http_run call drives its own multi
 * handle, and connections, DNS and TLS sessions are shared through the client. */
#ifndef ZG_HTTP_CLIENT_H
#define ZG_HTTP_CLIENT_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"
#include "common/buf.h"

typedef struct zg_http_client zg_http_client;

typedef struct zg_http_client_options {
    int max_in_flight;          /* requests in flight per zg_http_run once the client has seen HTTP/2 (streams
                                 * share connections); 0 = 64 */
    int max_host_connections;   /* 0 = 16: connections one zg_http_run keeps busy, i.e. its requests in flight
                                 * over HTTP/1.1 (idle connections are kept for later runs and other threads) */
    long connect_timeout_ms;    /* 0 = 10000 */
    long request_timeout_ms;    /* one attempt, headers to last byte; 0 = 60000 (a stalled transfer also fails
                                 * after low_speed_time_s below low_speed_bytes_s) */
    long low_speed_bytes_s;     /* 0 = 1 */
    long low_speed_time_s;      /* 0 = 30 */
    int max_retries;            /* retries after the first attempt of a request; -1 = 0, 0 = 6 */
    long retry_base_ms;         /* first backoff; doubles each retry, full jitter; 0 = 100 */
    long retry_max_ms;          /* backoff cap; 0 = 10000 */
    int verify_tls;             /* 1 (default through zg_http_client_options_init): verify peer and host name */
    const char *ca_file;        /* a CA bundle instead of the system's; NULL = system */
    const char *user_agent;     /* NULL = "zgpu/<version>" */
    int threads;                /* a batch of many requests is shared by up to this many threads, each with its
                                 * own multi handle and a share of the connections (receiving is then no longer
                                 * one core's work); 0 = 4, 1 = the calling thread alone */
} zg_http_client_options;

void zg_http_client_options_init(zg_http_client_options *o);
zgpu_status zg_http_client_create(const zg_http_client_options *o, zg_http_client **out);
void zg_http_client_free(zg_http_client *c); /* accepts NULL */

typedef enum zg_http_method { ZG_HTTP_GET = 0, ZG_HTTP_HEAD, ZG_HTTP_PUT, ZG_HTTP_POST, ZG_HTTP_DELETE } zg_http_method;

/* Called before every attempt of a request (the first and each retry), e.g. to sign it with a fresh date:
 * it may set headers (zg_http_req_set_header). Nonzero = the request fails with that status (message set). */
struct zg_http_req;
typedef zgpu_status (*zg_http_prepare_fn)(void *user, struct zg_http_req *r);

#define ZG_HTTP_MAX_HEADERS 16
#define ZG_HTTP_WHOLE UINT64_MAX

typedef struct zg_http_req {
    /* ---- set by the caller ---- */
    zg_http_method method;
    const char *url;              /* full URL, already percent-encoded */
    uint64_t range_offset;        /* GET: a Range request for [range_offset, range_offset + range_length) ... */
    uint64_t range_length;        /* ... unless range_length == ZG_HTTP_WHOLE (the whole object; 0 bytes is a
                                   * valid whole object). range_length == 0 is not sent (the result is 0 bytes). */
    int range_suffix;             /* 1: the last range_length bytes ("bytes=-N"); range_offset ignored */
    int range_upto;               /* 1 (with range_offset 0): the object's first range_length bytes, or all of it
                                   * where it is shorter (received < range_length; object_size tells its size) */
    uint8_t *out;                 /* GET into caller memory: exactly the range's bytes (range_length of them), or
                                   * NULL to collect the body in `body` (grown as needed). An object shorter than
                                   * the range is ZGPU_ERR_CORRUPT_DATA with `out`; without it, a suffix longer
                                   * than the object gives the whole object (received < range_length). A server
                                   * that ignores Range (200, whole body) is fine: the range is cut out of it. */
    const uint8_t *upload;        /* PUT / POST body (may be NULL with upload_len 0) */
    size_t upload_len;
    zg_http_prepare_fn prepare;   /* NULL, or called before each attempt */
    void *prepare_user;
    char *headers[ZG_HTTP_MAX_HEADERS]; /* "Name: value" lines owned by the request (zg_http_req_set_header);
                                         * freed by zg_http_req_clear */
    int n_headers;
    int want_etag;                /* 1: keep the ETag response header in `etag` */

    /* ---- results (zg_http_run) ---- */
    long http_status;             /* last attempt's HTTP status; 0 when no response came */
    zgpu_status status;           /* ZGPU_OK when the final attempt got 2xx with a complete, consistent body, or
                                   * 404 (found = 0); else the error, with its message in `error` */
    int found;                    /* 0 for 404 (and for 403 where not_found_403 is set); `body` then holds the
                                   * error body (S3: NoSuchKey vs NoSuchBucket) */
    zg_buf body;                  /* the body when out == NULL (GET whole / error bodies of S3 are also kept
                                   * here, up to 64 KiB, for messages); owned, freed by zg_http_req_clear */
    uint64_t object_size;         /* total size of the object when the response says it (Content-Range's total,
                                   * or Content-Length of a 200), else ZG_HTTP_WHOLE */
    uint64_t received;            /* body bytes delivered into out/body */
    int attempts;                 /* attempts made */
    char etag[128];
    char error[512];              /* a one-line message when status != ZGPU_OK: method, URL, what went wrong */
    int not_found_403;            /* caller sets: treat 403 as absent (public buckets answer 403 for a missing key
                                   * when listing is not allowed) */
    const char *auth_note;        /* caller sets, or NULL: how the request is authorised, added to a 401 or 403's
                                   * message ("unsigned: no S3 credentials found"); not owned */
    /* called once the request has its final result (any status), from the thread running its part of the batch
     * (zg_http_run may use several): e.g. to start decoding a value while the rest of the batch is in flight */
    void (*done)(void *user, struct zg_http_req *r);
    void *done_user;
    /* private to the client */
    void *priv;
} zg_http_req;

/** Adds (or replaces, matched case-insensitively by name) a header on the request: "Name: value". */
zgpu_status zg_http_req_set_header(zg_http_req *r, const char *name, const char *value);
/** Frees the request's headers and body; keeps the caller's fields. */
void zg_http_req_clear(zg_http_req *r);

/** Runs n requests (shared by up to `threads` threads when there are many), up to max_in_flight at once, retrying each on connection errors, timeouts, 5xx, 429 and a
 *  body that does not match its headers (short, long, wrong Content-Range), with backoff. Returns ZGPU_OK when
 *  every request got a final result (each request's own `status` says which failed), or an error that stopped
 *  the batch (out of memory, libcurl failure). 4xx other than 404/408/429 are final errors (no retry). */
zgpu_status zg_http_run(zg_http_client *c, zg_http_req *reqs, size_t n);

/** Statistics since the client was created (for tests and the benchmark). */
typedef struct zg_http_stats {
    uint64_t requests, attempts, retries, bytes_received, connections_opened;
} zg_http_stats;
void zg_http_client_stats(const zg_http_client *c, zg_http_stats *out);

/* Merging of nearby ranges of one object into one request (the planner's reads of a shard's inner chunks):
 * ranges sorted by offset are grouped while the gap between one's end and the next's start is <= max_gap and
 * the group stays <= max_span bytes; a range of at least alone_min bytes is a group of its own (it goes straight
 * into its caller's memory and keeps a connection busy by itself), but overlapping ranges always share one.
 * groups[i] = the group of range i (ranges given in any order). Returns the number of groups; group g covers
 * [group_off[g], group_off[g] + group_len[g]). */
size_t zg_http_merge_ranges(size_t n, const uint64_t *offset, const uint64_t *length, uint64_t max_gap,
                            uint64_t max_span, uint64_t alone_min, uint32_t *groups, uint64_t *group_off,
                            uint64_t *group_len);
/** The link as this client's answers have seen it: *wait_s the moving average of the wait for a response's first
 *  byte after its request went out (-1: no answer yet), *bytes_per_s that of one response's body rate, from bodies
 *  of 256 KiB or more (0: none yet). */
void zg_http_client_link(const zg_http_client *c, double *wait_s, double *bytes_per_s);
/** Threads a batch of many requests is received by (the options' threads, at most one per connection). */
int zg_http_client_threads(const zg_http_client *c);

#endif
