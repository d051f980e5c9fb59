/* The batched HTTP client of client.h over libcurl: each zg_http_run drives its own multi handle; easy handles
 * come from a per-client free list; connections, DNS and TLS sessions live in the client's share handle, so
 * they outlive a batch and serve every thread. Every body is checked against the response's own headers and
 * the range asked for before a request counts as done: a short, long or misplaced body is retried, then an
 * error, never a silently wrong value. A batch of many requests is split into parts run by up to `threads`
 * threads (the caller's among them), each part driving its own multi handle; a request's callbacks run in the
 * thread of its part. */
#include "store/http/client.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/status.h"

#define ZG_HTTP_STR_(x) #x
#define ZG_HTTP_STR(x) ZG_HTTP_STR_(x)
#define DEFAULT_USER_AGENT \
    "zgpu/" ZG_HTTP_STR(ZGPU_VERSION_MAJOR) "." ZG_HTTP_STR(ZGPU_VERSION_MINOR) "." ZG_HTTP_STR(ZGPU_VERSION_PATCH)
#define ERROR_BODY_MAX (64 * 1024) /* enough for any S3 error document */
#define PREALLOC_MAX ((size_t)256 << 20) /* past this, a body grows as it arrives (a lying Content-Length) */
#define FREE_EASY_MAX 256

struct zg_http_client {
    zg_http_client_options o; /* defaults resolved */
    char *ca_file, *user_agent;
    CURLSH *share;
    pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
    pthread_mutex_t free_mu;
    CURL *free_easy[FREE_EASY_MAX];
    size_t n_free;
    atomic_uint_fast64_t requests, attempts, retries, bytes_received, connections_opened;
    atomic_int multiplexed; /* a response came over HTTP/2 or later */
};

/* ---- client ---- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;
static void global_init(void) { global_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *user) {
    (void)h, (void)a;
    zg_http_client *c = user;
    pthread_mutex_lock(&c->locks[(unsigned)d < CURL_LOCK_DATA_LAST ? (int)d : 0]);
}
static void share_unlock(CURL *h, curl_lock_data d, void *user) {
    (void)h;
    zg_http_client *c = user;
    pthread_mutex_unlock(&c->locks[(unsigned)d < CURL_LOCK_DATA_LAST ? (int)d : 0]);
}

void zg_http_client_options_init(zg_http_client_options *o) {
    memset(o, 0, sizeof *o);
    o->verify_tls = 1;
}

zgpu_status zg_http_client_create(const zg_http_client_options *opt, zg_http_client **out) {
    *out = NULL;
    pthread_once(&global_once, global_init);
    ZG_RETURN_IF(global_rc != CURLE_OK, ZGPU_ERR_INTERNAL, "libcurl initialisation failed: %s",
                 curl_easy_strerror(global_rc));
    zg_http_client_options d;
    if (opt) d = *opt;
    else zg_http_client_options_init(&d);
    if (d.max_in_flight <= 0) d.max_in_flight = 64;
    if (d.max_host_connections <= 0) d.max_host_connections = 16;
    if (d.threads <= 0) d.threads = 4;
    if (d.connect_timeout_ms <= 0) d.connect_timeout_ms = 10000;
    if (d.request_timeout_ms <= 0) d.request_timeout_ms = 60000;
    if (d.low_speed_bytes_s <= 0) d.low_speed_bytes_s = 1;
    if (d.low_speed_time_s <= 0) d.low_speed_time_s = 30;
    d.max_retries = d.max_retries < 0 ? 0 : d.max_retries == 0 ? 6 : d.max_retries;
    if (d.retry_base_ms <= 0) d.retry_base_ms = 100;
    if (d.retry_max_ms <= 0) d.retry_max_ms = 10000;

    zg_http_client *c = calloc(1, sizeof *c);
    ZG_RETURN_IF(!c, ZGPU_ERR_NO_MEMORY, "out of memory creating an HTTP client");
    c->o = d;
    c->ca_file = d.ca_file ? strdup(d.ca_file) : NULL;
    c->user_agent = strdup(d.user_agent ? d.user_agent : DEFAULT_USER_AGENT);
    c->o.ca_file = c->ca_file;
    c->o.user_agent = c->user_agent;
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&c->locks[i], NULL);
    pthread_mutex_init(&c->free_mu, NULL);
    c->share = curl_share_init();
    if (!c->share || !c->user_agent || (d.ca_file && !c->ca_file)) {
        zg_http_client_free(c);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory creating an HTTP client");
    }
    CURLSHcode sc = curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
    if (sc == CURLSHE_OK) sc = curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    if (sc == CURLSHE_OK) sc = curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
    if (sc == CURLSHE_OK) sc = curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    if (sc == CURLSHE_OK) sc = curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    if (sc == CURLSHE_OK) sc = curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    if (sc != CURLSHE_OK) {
        zg_http_client_free(c);
        return zg_error(ZGPU_ERR_INTERNAL, "libcurl share setup failed: %s", curl_share_strerror(sc));
    }
    *out = c;
    return ZGPU_OK;
}

void zg_http_client_free(zg_http_client *c) {
    if (!c) return;
    /* easy handles first: the share refuses to go while a handle still uses it */
    for (size_t i = 0; i < c->n_free; i++) curl_easy_cleanup(c->free_easy[i]);
    if (c->share) curl_share_cleanup(c->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_destroy(&c->locks[i]);
    pthread_mutex_destroy(&c->free_mu);
    free(c->ca_file);
    free(c->user_agent);
    free(c);
}

void zg_http_client_stats(const zg_http_client *c, zg_http_stats *out) {
    zg_http_client *m = (zg_http_client *)c; /* atomic loads want non-const objects in C11 */
    out->requests = atomic_load(&m->requests);
    out->attempts = atomic_load(&m->attempts);
    out->retries = atomic_load(&m->retries);
    out->bytes_received = atomic_load(&m->bytes_received);
    out->connections_opened = atomic_load(&m->connections_opened);
}

static CURL *easy_get(zg_http_client *c) {
    CURL *e = NULL;
    pthread_mutex_lock(&c->free_mu);
    if (c->n_free) e = c->free_easy[--c->n_free];
    pthread_mutex_unlock(&c->free_mu);
    if (e) curl_easy_reset(e);
    else e = curl_easy_init();
    return e;
}

static void easy_put(zg_http_client *c, CURL *e) {
    if (!e) return;
    pthread_mutex_lock(&c->free_mu);
    if (c->n_free < FREE_EASY_MAX) {
        c->free_easy[c->n_free++] = e;
        e = NULL;
    }
    pthread_mutex_unlock(&c->free_mu);
    if (e) curl_easy_cleanup(e);
}

/* ---- requests ---- */

zgpu_status zg_http_req_set_header(zg_http_req *r, const char *name, const char *value) {
    size_t nl = strlen(name);
    ZG_RETURN_IF(nl == 0 || strpbrk(name, ":\r\n") || strpbrk(value, "\r\n"), ZGPU_ERR_INVALID_ARGUMENT,
                 "bad HTTP header '%s'", name);
    size_t len = nl + 2 + strlen(value) + 1;
    char *line = malloc(len);
    ZG_RETURN_IF(!line, ZGPU_ERR_NO_MEMORY, "out of memory for an HTTP header");
    snprintf(line, len, "%s: %s", name, value);
    for (int i = 0; i < r->n_headers; i++) {
        if (strncasecmp(r->headers[i], name, nl) == 0 && r->headers[i][nl] == ':') {
            free(r->headers[i]);
            r->headers[i] = line;
            return ZGPU_OK;
        }
    }
    if (r->n_headers >= ZG_HTTP_MAX_HEADERS) {
        free(line);
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "more than %d headers on one HTTP request", ZG_HTTP_MAX_HEADERS);
    }
    r->headers[r->n_headers++] = line;
    return ZGPU_OK;
}

void zg_http_req_clear(zg_http_req *r) {
    for (int i = 0; i < r->n_headers; i++) {
        free(r->headers[i]);
        r->headers[i] = NULL;
    }
    r->n_headers = 0;
    zg_buf_free(&r->body);
}

/* ---- one transfer ---- */

enum { M_NONE, M_DISCARD, M_ERRBODY, M_INTO, M_SLICE, M_RING };
enum { F_NONE, F_RETRY, F_FINAL };
enum { O_DONE, O_RETRY };

typedef struct xfer {
    zg_http_req *r;
    zg_http_client *c;
    CURL *easy;
    struct curl_slist *hdrs;
    int64_t not_before;   /* a retry waits until then (monotonic ms) */
    int ranged;           /* a Range header is sent */
    char range[64];       /* "bytes=a-b" / "bytes=-n" */
    /* the response being received */
    long code;
    int headers_done;
    int have_clen;
    uint64_t clen;
    int have_crange;      /* Content-Range parsed: cr_start..cr_end of cr_total (ZG_HTTP_WHOLE for '*') */
    int crange_unsat;     /* "bytes * / total" (a 416's) */
    uint64_t cr_start, cr_end, cr_total;
    long retry_after_s;   /* -1: none */
    int mode;             /* where body bytes go (M_*) */
    uint64_t skip, take;  /* M_INTO: take = most bytes accepted (WHOLE = any); M_SLICE: body bytes
                           * [skip, skip + take) are kept; M_RING: the last `take` bytes */
    uint64_t seen;        /* body bytes of this response */
    uint64_t suffix_trim; /* M_INTO into body of a suffix the server answered whole: keep the last N at the end */
    size_t up_pos;
    int fail;             /* a callback found the response wrong (F_*) */
    int final;            /* the request has its result */
    zgpu_status fail_status;
    char why[384];        /* the reason of the last failed attempt */
    char curl_err[CURL_ERROR_SIZE];
} xfer;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *method_name(zg_http_method m) {
    switch (m) {
    case ZG_HTTP_GET: return "GET";
    case ZG_HTTP_HEAD: return "HEAD";
    case ZG_HTTP_PUT: return "PUT";
    case ZG_HTTP_POST: return "POST";
    case ZG_HTTP_DELETE: return "DELETE";
    }
    return "?";
}

/* A callback's verdict: the transfer is then aborted (the callback returns a short count). */
static void xfail(xfer *x, int kind, zgpu_status s, const char *fmt, ...) ZG_PRINTF(4, 5);
static void xfail(xfer *x, int kind, zgpu_status s, const char *fmt, ...) {
    if (x->fail) return;
    x->fail = kind;
    x->fail_status = s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->why, sizeof x->why, fmt, ap);
    va_end(ap);
}

/* The request's final result: "GET url (bytes=a-b): <why>". */
static void req_final(xfer *x, zgpu_status s, int suffix_attempts) {
    zg_http_req *r = x->r;
    x->final = 1;
    r->status = s;
    if (s == ZGPU_OK) {
        r->error[0] = 0;
    } else {
        char tail[32] = "";
        if (suffix_attempts && r->attempts > 1) snprintf(tail, sizeof tail, " after %d attempts", r->attempts);
        snprintf(r->error, sizeof r->error, "%s %s%s%s%s: %s%s", method_name(r->method), r->url ? r->url : "(null)",
                 x->ranged ? " (" : "", x->ranged ? x->range : "", x->ranged ? ")" : "", x->why, tail);
    }
    if (r->done) r->done(r->done_user, r);
}

static int parse_u64(const char *s, const char *end, uint64_t *v) {
    uint64_t n = 0;
    if (s >= end) return 0;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9' || n > (UINT64_MAX - 9) / 10) return 0;
        n = n * 10 + (uint64_t)(*s - '0');
    }
    *v = n;
    return 1;
}

/* "bytes a-b/total", "bytes a-b/(star)" or "bytes (star)/total" (a 416's). */
static int parse_content_range(xfer *x, const char *v, const char *end) {
    if (end - v < 6 || strncasecmp(v, "bytes", 5) != 0) return 0;
    v += 5;
    while (v < end && (*v == ' ' || *v == '=')) v++;
    const char *slash = memchr(v, '/', (size_t)(end - v));
    if (!slash) return 0;
    if (slash - v == 1 && *v == '*') {
        x->crange_unsat = parse_u64(slash + 1, end, &x->cr_total);
        return 0;
    }
    const char *dash = memchr(v, '-', (size_t)(slash - v));
    if (!dash || !parse_u64(v, dash, &x->cr_start) || !parse_u64(dash + 1, slash, &x->cr_end)) return 0;
    if (slash + 2 == end && slash[1] == '*') x->cr_total = ZG_HTTP_WHOLE;
    else if (!parse_u64(slash + 1, end, &x->cr_total)) return 0;
    return x->cr_end >= x->cr_start && (x->cr_total == ZG_HTTP_WHOLE || x->cr_end < x->cr_total);
}

static int body_reserve(xfer *x, uint64_t n) {
    if (n > PREALLOC_MAX) n = PREALLOC_MAX;
    zgpu_status s = zg_buf_reserve(&x->r->body, (size_t)n);
    if (s != ZGPU_OK) xfail(x, F_FINAL, s, "%s", zg_error_message());
    return s == ZGPU_OK;
}

/* The final response's headers are in: decide where its body goes, or refuse it (a range that does not match
 * what was asked, an object shorter than the range) before any of it is read. */
static void begin_body(xfer *x) {
    zg_http_req *r = x->r;
    uint64_t off = r->range_offset, len = r->range_length;
    x->mode = M_ERRBODY;
    if (x->code < 200 || x->code > 299) return;
    if (r->method == ZG_HTTP_HEAD) {
        x->mode = M_DISCARD;
        return;
    }
    x->mode = M_INTO;
    x->take = ZG_HTTP_WHOLE;
    if (r->method != ZG_HTTP_GET || !x->ranged) {
        if (x->code == 206) xfail(x, F_RETRY, ZGPU_ERR_IO, "HTTP 206 (a partial body) to a request for all of it");
        else if (x->have_clen) body_reserve(x, x->clen);
        return;
    }
    if (x->code == 206) {
        if (!x->have_crange) {
            xfail(x, F_RETRY, ZGPU_ERR_IO, "HTTP 206 without a valid Content-Range");
            return;
        }
        uint64_t got = x->cr_end - x->cr_start + 1, total = x->cr_total;
        int exact;
        if (r->range_suffix) {
            exact = total == ZG_HTTP_WHOLE ? got == len
                                           : x->cr_end == total - 1 && got == (total < len ? total : len);
        } else {
            exact = x->cr_start == off && x->cr_end == off + len - 1;
            /* a server answers a range running past the end with what there is: the value is too short */
            if (!exact && x->cr_start == off && total != ZG_HTTP_WHOLE && x->cr_end == total - 1 &&
                x->cr_end < off + len - 1) {
                xfail(x, F_FINAL, ZGPU_ERR_CORRUPT_DATA, "object has %" PRIu64 " bytes, range past its end", total);
                return;
            }
        }
        if (!exact) {
            char tot[24] = "*";
            if (total != ZG_HTTP_WHOLE) snprintf(tot, sizeof tot, "%" PRIu64, total);
            xfail(x, F_RETRY, ZGPU_ERR_IO, "Content-Range bytes %" PRIu64 "-%" PRIu64 "/%s does not match the range"
                  " asked", x->cr_start, x->cr_end, tot);
            return;
        }
        if (x->have_clen && x->clen != got) {
            xfail(x, F_RETRY, ZGPU_ERR_IO, "Content-Length %" PRIu64 " but Content-Range names %" PRIu64 " bytes",
                  x->clen, got);
            return;
        }
        if (r->out && got < len) {
            xfail(x, F_FINAL, ZGPU_ERR_CORRUPT_DATA, "object has %" PRIu64 " bytes, range past its start", total);
            return;
        }
        x->take = got;
        if (!r->out) body_reserve(x, got);
        return;
    }
    if (x->code != 200) {
        xfail(x, F_FINAL, ZGPU_ERR_IO, "HTTP %ld to a range request", x->code);
        return;
    }
    /* 200: the server ignored Range and sends the whole object; keep the part asked for */
    if (r->range_suffix) {
        if (!x->have_clen) { /* its size shows only at the end */
            if (r->out) {
                x->mode = M_RING;
                x->take = len;
            } else {
                x->suffix_trim = len;
            }
            return;
        }
        if (x->clen < len && r->out) {
            xfail(x, F_FINAL, ZGPU_ERR_CORRUPT_DATA, "object has %" PRIu64 " bytes, range past its start", x->clen);
            return;
        }
        x->skip = x->clen > len ? x->clen - len : 0;
        x->take = x->clen < len ? x->clen : len;
    } else {
        if (x->have_clen && x->clen < off + len) {
            xfail(x, F_FINAL, ZGPU_ERR_CORRUPT_DATA, "object has %" PRIu64 " bytes, range past its end", x->clen);
            return;
        }
        x->skip = off;
        x->take = len;
    }
    x->mode = M_SLICE;
    if (!r->out) body_reserve(x, x->take);
}

static void reset_response(xfer *x) {
    x->code = 0;
    x->headers_done = 0;
    x->have_clen = x->have_crange = x->crange_unsat = 0;
    x->cr_start = x->cr_end = 0;
    x->cr_total = ZG_HTTP_WHOLE;
    x->retry_after_s = -1;
    x->mode = M_NONE;
    x->skip = x->take = x->seen = x->suffix_trim = 0;
    x->r->body.size = 0;
    x->r->etag[0] = 0;
}

static size_t on_header(char *p, size_t size, size_t n, void *user) {
    xfer *x = user;
    size_t len = size * n;
    const char *end = p + len;
    while (end > p && (end[-1] == '\n' || end[-1] == '\r')) end--;
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) { /* a new response (after a 100 or a redirect) */
        reset_response(x);
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        uint64_t code = 0;
        if (sp && end - sp >= 4 && parse_u64(sp + 1, sp + 4, &code)) x->code = (long)code;
        return len;
    }
    if (x->headers_done) return len; /* trailers */
    if (end == p) { /* the blank line: headers done */
        if (x->code >= 200) {
            x->headers_done = 1;
            begin_body(x);
        }
        return x->fail ? 0 : len;
    }
    const char *colon = memchr(p, ':', (size_t)(end - p));
    if (!colon) return len;
    size_t nl = (size_t)(colon - p);
    const char *v = colon + 1;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    const char *ve = end;
    while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
#define IS(name) (nl == sizeof(name) - 1 && strncasecmp(p, name, nl) == 0)
    if (IS("Content-Length")) {
        x->have_clen = parse_u64(v, ve, &x->clen);
    } else if (IS("Content-Range")) {
        x->have_crange = parse_content_range(x, v, ve);
    } else if (IS("Retry-After")) {
        uint64_t s;
        if (parse_u64(v, ve, &s)) x->retry_after_s = s > 86400 ? 86400 : (long)s;
    } else if (IS("ETag") && x->r->want_etag) {
        size_t k = (size_t)(ve - v) < sizeof x->r->etag - 1 ? (size_t)(ve - v) : sizeof x->r->etag - 1;
        memcpy(x->r->etag, v, k);
        x->r->etag[k] = 0;
    }
#undef IS
    return len;
}

static uint8_t *dest(xfer *x, uint64_t at, const char *p, size_t k) {
    zg_http_req *r = x->r;
    if (r->out) return memcpy(r->out + at, p, k);
    if (zg_buf_append(&r->body, p, k) != ZGPU_OK) {
        xfail(x, F_FINAL, ZGPU_ERR_NO_MEMORY, "%s", zg_error_message());
        return NULL;
    }
    return r->body.data;
}

static size_t on_body(char *p, size_t size, size_t n, void *user) {
    xfer *x = user;
    size_t len = size * n;
    if (x->mode == M_NONE) { /* no blank line seen (should not happen): decide now */
        x->headers_done = 1;
        begin_body(x);
    }
    if (x->fail) return 0;
    uint64_t at = x->seen;
    x->seen += len;
    switch (x->mode) {
    case M_DISCARD:
        break;
    case M_ERRBODY: {
        size_t room = ERROR_BODY_MAX - (x->r->body.size < ERROR_BODY_MAX ? x->r->body.size : ERROR_BODY_MAX);
        if (room) (void)zg_buf_append(&x->r->body, p, len < room ? len : room);
        break;
    }
    case M_INTO:
        if (x->take != ZG_HTTP_WHOLE && x->seen > x->take) {
            xfail(x, F_RETRY, ZGPU_ERR_IO, "body longer than the %" PRIu64 " bytes its headers announced", x->take);
            return 0;
        }
        if (len && !dest(x, at, p, len)) return 0;
        break;
    case M_SLICE: { /* keep body bytes [skip, skip + take) */
        uint64_t lo = at > x->skip ? at : x->skip, hi = x->seen < x->skip + x->take ? x->seen : x->skip + x->take;
        if (lo < hi && !dest(x, lo - x->skip, p + (lo - at), (size_t)(hi - lo))) return 0;
        break;
    }
    case M_RING: /* the last `take` bytes, written round out; rotated into place at the end */
        for (size_t done = 0; done < len;) {
            uint64_t pos = (at + done) % x->take;
            size_t k = (size_t)(x->take - pos) < len - done ? (size_t)(x->take - pos) : len - done;
            memcpy(x->r->out + pos, p + done, k);
            done += k;
        }
        break;
    }
    return len;
}

static size_t on_upload(char *buf, size_t size, size_t n, void *user) {
    xfer *x = user;
    size_t room = size * n, left = x->r->upload_len - x->up_pos;
    size_t k = left < room ? left : room;
    if (k) memcpy(buf, x->r->upload + x->up_pos, k);
    x->up_pos += k;
    return k;
}

static int on_seek(void *user, curl_off_t off, int origin) {
    xfer *x = user;
    if (origin != SEEK_SET || off < 0 || (uint64_t)off > x->r->upload_len) return CURL_SEEKFUNC_FAIL;
    x->up_pos = (size_t)off;
    return CURL_SEEKFUNC_OK;
}

static void reverse(uint8_t *a, uint64_t n) {
    for (uint64_t i = 0, j = n; i + 1 < j; i++, j--) {
        uint8_t t = a[i];
        a[i] = a[j - 1];
        a[j - 1] = t;
    }
}

/* " (S3 Code: Message)" from an XML error body, or "". */
static void s3_detail(const zg_buf *b, char *out, size_t cap) {
    out[0] = 0;
    if (!b->size || !b->data) return;
    char tmp[1024];
    size_t n = b->size < sizeof tmp - 1 ? b->size : sizeof tmp - 1;
    memcpy(tmp, b->data, n);
    tmp[n] = 0;
    char *code = strstr(tmp, "<Code>"), *msg = strstr(tmp, "<Message>");
    if (!code) return;
    code += 6;
    char *ce = strstr(code, "</Code>");
    if (!ce) return;
    *ce = 0;
    char *me = msg ? strstr(msg + 9, "</Message>") : NULL;
    if (me) *me = 0;
    snprintf(out, cap, " (%s%s%s)", code, me ? ": " : "", me ? msg + 9 : "");
}

/* The attempt ended with curl's result rc: O_DONE (r->status set) or O_RETRY (x->why says why). */
static int judge(xfer *x, CURLcode rc) {
    zg_http_req *r = x->r;
    uint64_t off = r->range_offset, len = r->range_length;
    long code = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
    r->http_status = code;
    if (x->fail) { /* a callback's verdict comes before curl's CURLE_WRITE_ERROR it caused */
        if (x->fail == F_RETRY) return O_RETRY;
        req_final(x, x->fail_status, 0);
        return O_DONE;
    }
    if (rc != CURLE_OK) {
        const char *detail = x->curl_err[0] ? x->curl_err : curl_easy_strerror(rc);
        const char *what;
        int retry = 1;
        switch (rc) {
        case CURLE_PARTIAL_FILE:
            if (x->have_clen) {
                snprintf(x->why, sizeof x->why, "body has %" PRIu64 " bytes, Content-Length said %" PRIu64, x->seen,
                         x->clen);
                return O_RETRY;
            }
            what = "body cut short";
            break;
        case CURLE_OPERATION_TIMEDOUT: what = "timed out"; break;
        case CURLE_COULDNT_CONNECT: what = "cannot connect"; break;
        case CURLE_COULDNT_RESOLVE_HOST: what = "cannot resolve the host"; break;
        case CURLE_COULDNT_RESOLVE_PROXY: what = "cannot resolve the proxy"; break;
        case CURLE_GOT_NOTHING: what = "empty reply"; break;
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR: what = strstr(detail, "reset") ? "connection reset" : "connection error"; break;
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
        case CURLE_HTTP3:
        case CURLE_SSL_CONNECT_ERROR: what = "connection error"; break;
        case CURLE_OUT_OF_MEMORY:
            snprintf(x->why, sizeof x->why, "out of memory (curl: %s)", detail);
            req_final(x, ZGPU_ERR_NO_MEMORY, 0);
            return O_DONE;
        case CURLE_TOO_MANY_REDIRECTS: what = "too many redirects"; retry = 0; break;
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CERTPROBLEM: what = "TLS verification failed"; retry = 0; break;
        default: what = "transfer failed"; retry = 0; break;
        }
        snprintf(x->why, sizeof x->why, "%s (curl: %s)", what, detail);
        if (retry) return O_RETRY;
        req_final(x, ZGPU_ERR_IO, 0);
        return O_DONE;
    }
    char s3[300];
    if (code == 404 || (code == 403 && r->not_found_403)) {
        r->found = 0;
        r->received = 0;
        req_final(x, ZGPU_OK, 0);
        return O_DONE;
    }
    if (code < 200 || code > 299) {
        s3_detail(&r->body, s3, sizeof s3);
        if (code == 408 || code == 429 || (code >= 500 && code <= 599)) {
            snprintf(x->why, sizeof x->why, "HTTP %ld%s", code, s3);
            return O_RETRY;
        }
        if (code == 416) {
            if (x->crange_unsat) {
                r->object_size = x->cr_total;
                snprintf(x->why, sizeof x->why, "object has %" PRIu64 " bytes, range past its %s", x->cr_total,
                         r->range_suffix ? "start" : "end");
            } else {
                snprintf(x->why, sizeof x->why, "range not satisfiable (HTTP 416): the object is shorter");
            }
            req_final(x, ZGPU_ERR_CORRUPT_DATA, 0);
            return O_DONE;
        }
        snprintf(x->why, sizeof x->why, "%sHTTP %ld%s", code == 401 || code == 403 ? "access denied: " : "", code,
                 s3);
        req_final(x, ZGPU_ERR_IO, 0);
        return O_DONE;
    }
    /* 2xx: the body must be complete and consistent with the headers */
    if (r->method == ZG_HTTP_HEAD) {
        r->object_size = x->have_clen ? x->clen : ZG_HTTP_WHOLE;
        r->found = 1;
        req_final(x, ZGPU_OK, 0);
        return O_DONE;
    }
    if (x->have_clen && x->seen != x->clen) {
        snprintf(x->why, sizeof x->why, "body has %" PRIu64 " bytes, Content-Length said %" PRIu64, x->seen, x->clen);
        return O_RETRY;
    }
    uint64_t object_size = x->have_clen ? x->clen : x->seen;
    switch (x->mode) {
    case M_INTO:
        if (x->take != ZG_HTTP_WHOLE && x->seen != x->take) {
            snprintf(x->why, sizeof x->why, "body has %" PRIu64 " bytes, Content-Range said %" PRIu64, x->seen,
                     x->take);
            return O_RETRY;
        }
        if (x->code == 206) object_size = x->cr_total;
        if (x->suffix_trim && r->body.size > x->suffix_trim) {
            memmove(r->body.data, r->body.data + r->body.size - x->suffix_trim, (size_t)x->suffix_trim);
            r->body.size = (size_t)x->suffix_trim;
        }
        r->received = r->out ? x->seen : r->body.size;
        break;
    case M_SLICE:
        if (!r->range_suffix && x->seen < off + len) {
            snprintf(x->why, sizeof x->why, "object has %" PRIu64 " bytes, range past its end", x->seen);
            req_final(x, ZGPU_ERR_CORRUPT_DATA, 0);
            return O_DONE;
        }
        r->received = x->take;
        break;
    case M_RING:
        if (x->seen < x->take) {
            snprintf(x->why, sizeof x->why, "object has %" PRIu64 " bytes, range past its start", x->seen);
            req_final(x, ZGPU_ERR_CORRUPT_DATA, 0);
            return O_DONE;
        }
        { /* the oldest byte is at seen % take: rotate it to the front */
            uint64_t k = x->seen % x->take;
            reverse(r->out, k);
            reverse(r->out + k, x->take - k);
            reverse(r->out, x->take);
        }
        r->received = x->take;
        break;
    default:
        r->received = x->seen;
        break;
    }
    r->object_size = object_size;
    r->found = 1;
    req_final(x, ZGPU_OK, 0);
    return O_DONE;
}

/* ---- the batch ---- */

typedef struct run {
    zg_http_client *c;
    CURLM *multi;
    xfer *xs;
    size_t *retry; /* indexes of requests waiting to retry */
    size_t n_retry;
    uint64_t rng;
} run;

static uint64_t next_rand(run *u) { /* splitmix64: jitter needs no quality beyond spreading */
    uint64_t z = (u->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#define SETOPT(opt, val) ok = ok && curl_easy_setopt(e, opt, val) == CURLE_OK

/* Starts one attempt of x: 1 if it is in flight, 0 if it ended at once (r->status set). */
static int start_attempt(run *u, xfer *x) {
    zg_http_client *c = u->c;
    zg_http_req *r = x->r;
    const zg_http_client_options *o = &c->o;
    if (r->prepare) {
        zgpu_status s = r->prepare(r->prepare_user, r);
        if (s != ZGPU_OK) {
            snprintf(x->why, sizeof x->why, "%s", zg_error_message());
            req_final(x, s, 0);
            return 0;
        }
    }
    r->attempts++;
    atomic_fetch_add(&c->attempts, 1);
    reset_response(x);
    x->fail = F_NONE;
    x->up_pos = 0;
    x->curl_err[0] = 0;
    r->http_status = 0;
    r->received = 0;
    r->found = 0;
    r->object_size = ZG_HTTP_WHOLE;

    curl_slist_free_all(x->hdrs);
    x->hdrs = NULL;
    int ok = 1;
    /* "Expect:" off: a 100-continue round trip per PUT costs a latency and some servers mishandle it */
    struct curl_slist *h = curl_slist_append(NULL, "Expect:");
    ok = h != NULL;
    int has_ctype = 0;
    for (int i = 0; ok && i < r->n_headers; i++) {
        struct curl_slist *t = curl_slist_append(h, r->headers[i]);
        if (!t) ok = 0;
        else h = t;
        has_ctype |= strncasecmp(r->headers[i], "Content-Type:", 13) == 0;
    }
    if (ok && x->ranged) {
        char line[80];
        snprintf(line, sizeof line, "Range: %s", x->range);
        struct curl_slist *t = curl_slist_append(h, line);
        if (!t) ok = 0;
        else h = t;
    }
    if (ok && r->method == ZG_HTTP_POST && !has_ctype) { /* no made-up form encoding on a POST */
        struct curl_slist *t = curl_slist_append(h, "Content-Type:");
        if (!t) ok = 0;
        else h = t;
    }
    x->hdrs = h;
    CURL *e = x->easy = ok ? easy_get(c) : NULL;
    if (!e) {
        snprintf(x->why, sizeof x->why, "out of memory starting a transfer");
        req_final(x, ZGPU_ERR_NO_MEMORY, 0);
        return 0;
    }
    SETOPT(CURLOPT_SHARE, c->share);
    SETOPT(CURLOPT_PRIVATE, x);
    SETOPT(CURLOPT_URL, r->url);
    SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
    SETOPT(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    SETOPT(CURLOPT_NOSIGNAL, 1L);
    /* the largest receive buffer libcurl takes: a chunk of megabytes arrives in fewer, larger reads */
    SETOPT(CURLOPT_BUFFERSIZE, (long)CURL_MAX_READ_SIZE);
    SETOPT(CURLOPT_FOLLOWLOCATION, 1L);
    SETOPT(CURLOPT_MAXREDIRS, 5L);
    /* No CURLOPT_PIPEWAIT: a transfer waiting for another run's connection to turn out multiplexable is only
     * woken by its own multi handle (the hang described in zg_http_run) */
    SETOPT(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    SETOPT(CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
    SETOPT(CURLOPT_TIMEOUT_MS, o->request_timeout_ms);
    SETOPT(CURLOPT_LOW_SPEED_LIMIT, o->low_speed_bytes_s);
    SETOPT(CURLOPT_LOW_SPEED_TIME, o->low_speed_time_s);
    SETOPT(CURLOPT_SSL_VERIFYPEER, o->verify_tls ? 1L : 0L);
    SETOPT(CURLOPT_SSL_VERIFYHOST, o->verify_tls ? 2L : 0L);
    if (o->ca_file) SETOPT(CURLOPT_CAINFO, o->ca_file);
    SETOPT(CURLOPT_USERAGENT, o->user_agent);
    SETOPT(CURLOPT_TCP_KEEPALIVE, 1L);
    SETOPT(CURLOPT_HTTPHEADER, x->hdrs);
    SETOPT(CURLOPT_ERRORBUFFER, x->curl_err);
    SETOPT(CURLOPT_HEADERFUNCTION, on_header);
    SETOPT(CURLOPT_HEADERDATA, x);
    SETOPT(CURLOPT_WRITEFUNCTION, on_body);
    SETOPT(CURLOPT_WRITEDATA, x);
    switch (r->method) {
    case ZG_HTTP_GET: SETOPT(CURLOPT_HTTPGET, 1L); break;
    case ZG_HTTP_HEAD: SETOPT(CURLOPT_NOBODY, 1L); break;
    case ZG_HTTP_PUT:
        SETOPT(CURLOPT_UPLOAD, 1L);
        SETOPT(CURLOPT_READFUNCTION, on_upload);
        SETOPT(CURLOPT_READDATA, x);
        SETOPT(CURLOPT_SEEKFUNCTION, on_seek); /* a redirect or an auth round rewinds the upload */
        SETOPT(CURLOPT_SEEKDATA, x);
        SETOPT(CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->upload_len);
        break;
    case ZG_HTTP_POST:
        SETOPT(CURLOPT_POST, 1L);
        SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->upload_len);
        SETOPT(CURLOPT_POSTFIELDS, r->upload ? (const char *)r->upload : "");
        break;
    case ZG_HTTP_DELETE: SETOPT(CURLOPT_CUSTOMREQUEST, "DELETE"); break;
    }
    CURLMcode mc = ok ? curl_multi_add_handle(u->multi, e) : CURLM_OK;
    if (!ok || mc != CURLM_OK) {
        snprintf(x->why, sizeof x->why, "libcurl refused the transfer%s%s", ok ? ": " : "",
                 ok ? curl_multi_strerror(mc) : "");
        easy_put(c, e);
        x->easy = NULL;
        req_final(x, ZGPU_ERR_INTERNAL, 0);
        return 0;
    }
    return 1;
}

/* x's attempt ended: 1 if the request is done, 0 if it waits to retry. */
static int end_attempt(run *u, xfer *x, CURLcode rc) {
    zg_http_client *c = u->c;
    zg_http_req *r = x->r;
    long conns = 0;
    curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &conns);
    atomic_fetch_add(&c->connections_opened, (uint64_t)(conns > 0 ? conns : 0));
    atomic_fetch_add(&c->bytes_received, x->seen);
    long version = 0;
    if (curl_easy_getinfo(x->easy, CURLINFO_HTTP_VERSION, &version) == CURLE_OK && version >= CURL_HTTP_VERSION_2_0)
        atomic_store(&c->multiplexed, 1);
    int verdict = judge(x, rc);
    curl_multi_remove_handle(u->multi, x->easy);
    easy_put(c, x->easy);
    x->easy = NULL;
    curl_slist_free_all(x->hdrs);
    x->hdrs = NULL;
    if (verdict == O_DONE) return 1;
    if (r->attempts > c->o.max_retries) {
        req_final(x, ZGPU_ERR_IO, 1);
        return 1;
    }
    /* full jitter: uniform in [0, min(cap, base * 2^(attempts - 1))]; Retry-After (capped) as a floor */
    int sh = r->attempts - 1 < 30 ? r->attempts - 1 : 30;
    uint64_t span = (uint64_t)c->o.retry_base_ms << sh;
    if (span > (uint64_t)c->o.retry_max_ms) span = (uint64_t)c->o.retry_max_ms;
    uint64_t delay = next_rand(u) % (span + 1);
    if (x->retry_after_s >= 0) {
        uint64_t ra = (uint64_t)x->retry_after_s * 1000;
        if (ra > (uint64_t)c->o.retry_max_ms) ra = (uint64_t)c->o.retry_max_ms;
        if (ra > delay) delay = ra;
    }
    x->not_before = now_ms() + (int64_t)delay;
    atomic_fetch_add(&c->retries, 1);
    u->retry[u->n_retry++] = (size_t)(x - u->xs);
    return 0;
}

/* Checks a request before its first attempt: 1 if it is to be sent, 0 if it is already final. */
static int check_request(xfer *x) {
    zg_http_req *r = x->r;
    r->status = ZGPU_OK;
    r->http_status = 0;
    r->found = 0;
    r->body.size = 0;
    r->object_size = ZG_HTTP_WHOLE;
    r->received = 0;
    r->attempts = 0;
    r->etag[0] = 0;
    r->error[0] = 0;
    const char *bad = NULL;
    if (!r->url || !*r->url) bad = "no URL";
    else if ((unsigned)r->method > ZG_HTTP_DELETE) bad = "unknown method";
    else if (r->out && r->method != ZG_HTTP_GET) bad = "`out` is for GET only";
    else if (r->out && r->range_length == ZG_HTTP_WHOLE) bad = "`out` needs a range_length";
    else if ((r->method == ZG_HTTP_PUT || r->method == ZG_HTTP_POST) && !r->upload && r->upload_len)
        bad = "upload_len without upload";
    else if (r->method == ZG_HTTP_GET && r->range_length != ZG_HTTP_WHOLE && !r->range_suffix &&
             r->range_length > UINT64_MAX - r->range_offset)
        bad = "range past 2^64";
    if (bad) {
        snprintf(x->why, sizeof x->why, "%s", bad);
        req_final(x, ZGPU_ERR_INVALID_ARGUMENT, 0);
        return 0;
    }
    if (r->method == ZG_HTTP_GET && r->range_length != ZG_HTTP_WHOLE) {
        if (r->range_length == 0) { /* nothing to fetch (no request: found is not checked) */
            r->found = 1;
            req_final(x, ZGPU_OK, 0); /* final all the same: its `done` is told */
            return 0;
        }
        x->ranged = 1;
        if (r->range_suffix) snprintf(x->range, sizeof x->range, "bytes=-%" PRIu64, r->range_length);
        else
            snprintf(x->range, sizeof x->range, "bytes=%" PRIu64 "-%" PRIu64, r->range_offset,
                     r->range_offset + r->range_length - 1);
    }
    return 1;
}

/* Ends every transfer still in flight or waiting after a failure of the batch itself. */
static void abandon(run *u, size_t n, zgpu_status s, const char *why) {
    for (size_t i = 0; i < n; i++) {
        xfer *x = &u->xs[i];
        if (x->easy) {
            curl_multi_remove_handle(u->multi, x->easy);
            easy_put(u->c, x->easy);
            x->easy = NULL;
        }
        curl_slist_free_all(x->hdrs);
        x->hdrs = NULL;
        if (!x->final) {
            snprintf(x->why, sizeof x->why, "%s", why);
            req_final(x, s, 0);
        }
    }
}

/* One thread's part of a batch: requests [0, n) with at most `conns` of them in flight over HTTP/1.1. */
static zgpu_status run_part(zg_http_client *c, zg_http_req *reqs, size_t n, int conns, char *why_out) {
    run u = {c, NULL, calloc(n, sizeof(xfer)), malloc(n * sizeof(size_t)), 0, 0};
    u.multi = curl_multi_init();
    if (!u.xs || !u.retry || !u.multi) {
        if (u.multi) curl_multi_cleanup(u.multi);
        free(u.xs);
        free(u.retry);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory starting %zu HTTP requests", n);
    }
    u.rng = (uint64_t)now_ms() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)u.xs;
    long max_conn = c->o.max_host_connections;
    curl_multi_setopt(u.multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    /* No CURLMOPT_MAX_HOST_CONNECTIONS: with the connection cache in a share, libcurl 7.x counts every run's
     * connections against each multi's limit and parks the excess transfers until a transfer of the same multi
     * ends, so a run whose transfers all wait hangs forever (and 8.13+ ignores the limit with a share). The
     * connections are bounded here instead, by the transfers a run keeps in flight (see `cap`). */
    /* the idle connections kept (in the share) for the next batch: curl's default, 4 per transfer still in the
     * multi, would close most of them as a batch drains */
    curl_multi_setopt(u.multi, CURLMOPT_MAXCONNECTS, 4 * max_conn > c->o.max_in_flight ? 4 * max_conn
                                                                                        : (long)c->o.max_in_flight);

    size_t done = 0, next = 0;
    int active = 0;
    /* HTTP/1.1 needs a connection per transfer: max_host_connections in flight; once the client has seen
     * HTTP/2 (streams share connections), max_in_flight */
    int cap = conns < c->o.max_in_flight ? conns : c->o.max_in_flight;
    zgpu_status st = ZGPU_OK;
    const char *why = NULL;
    for (size_t i = 0; i < n; i++) {
        u.xs[i].r = &reqs[i];
        u.xs[i].c = c;
        reqs[i].priv = NULL;
    }
    while (done < n) {
        int64_t now = now_ms();
        /* start what may start: due retries first (they are older), then new requests */
        if (atomic_load(&c->multiplexed)) cap = c->o.max_in_flight / (c->o.max_host_connections / conns);
        while (active < cap) {
            xfer *x = NULL;
            for (size_t k = 0; k < u.n_retry; k++) {
                if (u.xs[u.retry[k]].not_before <= now) {
                    x = &u.xs[u.retry[k]];
                    u.retry[k] = u.retry[--u.n_retry];
                    break;
                }
            }
            while (!x && next < n) {
                xfer *y = &u.xs[next++];
                if (check_request(y)) x = y;
                else done++;
            }
            if (!x) break;
            if (start_attempt(&u, x)) active++;
            else done++;
        }
        if (done == n) break;
        int running = 0;
        CURLMcode mc = curl_multi_perform(u.multi, &running);
        if (mc != CURLM_OK) {
            st = mc == CURLM_OUT_OF_MEMORY ? ZGPU_ERR_NO_MEMORY : ZGPU_ERR_INTERNAL;
            why = curl_multi_strerror(mc);
            break;
        }
        CURLMsg *msg;
        int left;
        int ended = 0;
        while ((msg = curl_multi_info_read(u.multi, &left))) {
            if (msg->msg != CURLMSG_DONE) continue;
            char *priv = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
            xfer *x = (xfer *)priv;
            CURLcode rc = msg->data.result; /* msg is invalid once its handle leaves the multi */
            active--;
            ended++;
            if (end_attempt(&u, x, rc)) done++;
        }
        if (done == n) break;
        if (ended) continue; /* start the next ones before waiting */
        /* wait for sockets, curl's timers, or the next retry falling due */
        long wait = 1000;
        if (active < cap) {
            for (size_t k = 0; k < u.n_retry; k++) {
                int64_t d = u.xs[u.retry[k]].not_before - now;
                if (d < wait) wait = d < 0 ? 0 : (long)d;
            }
        }
        if (wait > 0) {
            mc = curl_multi_poll(u.multi, NULL, 0, (int)wait, NULL);
            if (mc != CURLM_OK) {
                st = ZGPU_ERR_INTERNAL;
                why = curl_multi_strerror(mc);
                break;
            }
        }
    }
    if (st != ZGPU_OK) abandon(&u, n, st, why);
    curl_multi_cleanup(u.multi);
    free(u.xs);
    free(u.retry);
    if (st != ZGPU_OK) snprintf(why_out, 256, "%s", why ? why : "?");
    return st;
}

/* Requests per thread below which a batch is not split. One: a few large values (whole shards of tens of MiB)
 * are the batches that need the threads most, and a thread costs tens of microseconds next to milliseconds of
 * transfer. */
#define MIN_PER_THREAD 1

typedef struct part {
    zg_http_client *c;
    zg_http_req *reqs;
    size_t n;
    int conns;
    zgpu_status st;
    char why[256];
} part;

static void *part_main(void *arg) {
    part *p = arg;
    p->st = run_part(p->c, p->reqs, p->n, p->conns, p->why);
    return NULL;
}

zgpu_status zg_http_run(zg_http_client *c, zg_http_req *reqs, size_t n) {
    ZG_RETURN_IF(!c || (n && !reqs), ZGPU_ERR_INVALID_ARGUMENT, "zg_http_run: no client or no requests");
    if (n == 0) return ZGPU_OK;
    atomic_fetch_add(&c->requests, n);
    /* many requests: contiguous parts on several threads, the connections shared out among them (a part
     * keeps its share busy: the batch as a whole still keeps max_host_connections requests in flight) */
    int t = c->o.threads < c->o.max_host_connections ? c->o.threads : c->o.max_host_connections;
    if ((size_t)t > n / MIN_PER_THREAD) t = (int)(n / MIN_PER_THREAD);
    if (t <= 1) {
        char why[256];
        zgpu_status st = run_part(c, reqs, n, c->o.max_host_connections, why);
        return st == ZGPU_OK ? ZGPU_OK : zg_error(st, "HTTP batch of %zu requests failed: libcurl: %s", n, why);
    }
    part parts[64];
    pthread_t th[64];
    int started[64] = {0};
    if (t > 64) t = 64;
    size_t at = 0;
    for (int k = 0; k < t; k++) {
        size_t len = n / (size_t)t + ((size_t)k < n % (size_t)t);
        parts[k] = (part){c, reqs + at, len, c->o.max_host_connections / t, ZGPU_OK, ""};
        at += len;
    }
    for (int k = 1; k < t; k++) started[k] = pthread_create(&th[k], NULL, part_main, &parts[k]) == 0;
    for (int k = 1; k < t; k++)
        if (!started[k]) part_main(&parts[k]); /* no thread to be had: this one runs that part too */
    part_main(&parts[0]);
    for (int k = 1; k < t; k++)
        if (started[k]) pthread_join(th[k], NULL);
    for (int k = 0; k < t; k++)
        if (parts[k].st != ZGPU_OK)
            return zg_error(parts[k].st, "HTTP batch of %zu requests failed: libcurl: %s", n, parts[k].why);
    return ZGPU_OK;
}

/* ---- merging ranges ---- */

typedef struct span_ix {
    uint64_t off, end;
    size_t i;
} span_ix;

static int span_cmp(const void *a, const void *b) {
    const span_ix *x = a, *y = b;
    if (x->off != y->off) return x->off < y->off ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

size_t zg_http_merge_ranges(size_t n, const uint64_t *offset, const uint64_t *length, uint64_t max_gap,
                            uint64_t max_span, uint32_t *groups, uint64_t *group_off, uint64_t *group_len) {
    if (n == 0) return 0;
    span_ix *s = malloc(n * sizeof *s);
    if (!s) { /* no memory to sort: one group a range is still right, only slower */
        for (size_t i = 0; i < n; i++) {
            groups[i] = (uint32_t)i;
            group_off[i] = offset[i];
            group_len[i] = length[i];
        }
        return n;
    }
    for (size_t i = 0; i < n; i++) {
        s[i].off = offset[i];
        s[i].end = length[i] > UINT64_MAX - offset[i] ? UINT64_MAX : offset[i] + length[i];
        s[i].i = i;
    }
    qsort(s, n, sizeof *s, span_cmp);
    size_t g = 0;
    uint64_t start = s[0].off, end = s[0].end;
    groups[s[0].i] = 0;
    for (size_t k = 1; k < n; k++) {
        uint64_t new_end = s[k].end > end ? s[k].end : end;
        /* overlapping ranges (off < end) have no gap */
        int join = (s[k].off <= end || s[k].off - end <= max_gap) && new_end - start <= max_span;
        if (join) {
            end = new_end;
        } else {
            group_off[g] = start;
            group_len[g] = end - start;
            g++;
            start = s[k].off;
            end = s[k].end;
        }
        groups[s[k].i] = (uint32_t)g;
    }
    group_off[g] = start;
    group_len[g] = end - start;
    free(s);
    return g + 1;
}
