/* The batched HTTP client of client.h over libcurl: each zg_http_run drives its own multi handle; easy handles
 * come from a per-client free list; connections, DNS and TLS sessions live in the client's share handle, so
 * they outlive a batch and serve every thread. Every body is checked against the response's own headers and
 * the range asked for before a request counts as done: a short, long or misplaced body is retried, then an
 * error, never a silently wrong value. A batch of many requests is split into parts run by up to `threads`
 * threads (the caller's among them), each part driving its own multi handle; a request's callbacks run in the
 * thread of its part. Taking and checking one transfer's response is response.c (transfer.h); merging ranges
 * is ranges.c.
 *
 * fork(): the connections (and the share's locks and the free list) live in a `net` that belongs to one process.
 * A forked child must never send on the parent's sockets (two processes writing one connection interleave their
 * requests and steal each other's responses), and the share's locks may have been held by a parent thread at the
 * fork, so the child's first batch makes a net of its own (new connections, its own locks) and leaves the
 * parent's untouched, only closing the child's copies of the parent's sockets (close() of a descriptor the parent
 * still has sends nothing). */
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"
#include "store/http/transfer.h"

#define ZG_HTTP_STR_(x) #x
#define ZG_HTTP_STR(x) ZG_HTTP_STR_(x)
#define DEFAULT_USER_AGENT \
    "zgpu/" ZG_HTTP_STR(ZGPU_VERSION_MAJOR) "." ZG_HTTP_STR(ZGPU_VERSION_MINOR) "." ZG_HTTP_STR(ZGPU_VERSION_PATCH)
#define FREE_EASY_MAX 256
#define FREE_MULTI_MAX 64 /* a batch's parts each take one (zg_http_run: at most 64 threads) */
#define MAX_SOCKETS 1024 /* sockets tracked for closing in a forked child (beyond: left open there, harmless) */

/* One process's connections and what guards them. */
typedef struct net {
    pid_t pid;
    CURLSH *share;
    pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
    pthread_mutex_t free_mu;
    CURL *free_easy[FREE_EASY_MAX];
    size_t n_free;
    /* multi handles of ended batches, empty: a new one costs a wake-up socket pair and its set-up, 15-30 us of a
     * one-request batch's 180-200 on the 2-core machine (a remote crop's batch is often one request). A forked
     * child leaves its copies of their pairs alone: they connect nothing, and its own net makes its own */
    CURLM *free_multi[FREE_MULTI_MAX];
    size_t n_free_multi;
    atomic_int sockets[MAX_SOCKETS]; /* descriptor + 1 of each socket libcurl opened and has not closed; 0 free.
                                      * Lock-free: a child reads it whatever the parent's threads were doing */
} net;

/* Bodies shorter than this say little of a connection's rate (their time is mostly the wait for the first byte). */
#define LINK_RATE_MIN_BODY ((curl_off_t)256 << 10)

struct zg_http_client {
    zg_http_client_options o; /* defaults resolved */
    char *ca_file, *user_agent;
    _Atomic(net *) net;       /* this process's, or an ancestor's until the first batch after a fork */
    atomic_uint_fast64_t requests, attempts, retries, bytes_received, connections_opened;
    atomic_int multiplexed; /* a response came over HTTP/2 or later */
    /* the link as answers see it (zg_http_client_link): moving averages of the wait for a response's first byte
     * and of one response's body rate, kept as the bits of doubles (0: none yet); updated without a lock, so two
     * answers ending at once may lose one's sample, which an average can spare */
    _Atomic uint64_t wait_bits, rate_bits;
};

/* ---- client ---- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;
static void global_init(void) { global_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *user) {
    (void)h, (void)a;
    net *g = user;
    pthread_mutex_lock(&g->locks[(unsigned)d < CURL_LOCK_DATA_LAST ? (int)d : 0]);
}
static void share_unlock(CURL *h, curl_lock_data d, void *user) {
    (void)h;
    net *g = user;
    pthread_mutex_unlock(&g->locks[(unsigned)d < CURL_LOCK_DATA_LAST ? (int)d : 0]);
}

/* libcurl's socket callbacks: every socket of a net is in its table from creation to close. */
static int on_socket(void *user, curl_socket_t fd, curlsocktype purpose) {
    (void)purpose;
    net *g = user;
    for (int i = 0; i < MAX_SOCKETS; i++) {
        int free_slot = 0;
        if (atomic_compare_exchange_strong(&g->sockets[i], &free_slot, (int)fd + 1)) break;
    }
    return CURL_SOCKOPT_OK;
}

static int on_close_socket(void *user, curl_socket_t fd) {
    net *g = user;
    for (int i = 0; i < MAX_SOCKETS; i++) { /* out of the table first: a fork in between leaves it open, not lost */
        int mine = (int)fd + 1;
        if (atomic_compare_exchange_strong(&g->sockets[i], &mine, 0)) break;
    }
    return close(fd) == 0 ? 0 : 1;
}

static void net_free(net *g) {
    if (!g) return;
    /* easy handles first: the share refuses to go while a handle still uses it */
    for (size_t i = 0; i < g->n_free; i++) curl_easy_cleanup(g->free_easy[i]);
    for (size_t i = 0; i < g->n_free_multi; i++) curl_multi_cleanup(g->free_multi[i]);
    if (g->share) curl_share_cleanup(g->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_destroy(&g->locks[i]);
    pthread_mutex_destroy(&g->free_mu);
    free(g);
}

/* A net of this process (no connections yet). */
static zgpu_status net_new(net **out) {
    *out = NULL;
    net *g = calloc(1, sizeof *g);
    ZG_RETURN_IF(!g, ZGPU_ERR_NO_MEMORY, "out of memory creating an HTTP client");
    g->pid = getpid();
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&g->locks[i], NULL);
    pthread_mutex_init(&g->free_mu, NULL);
    for (int i = 0; i < MAX_SOCKETS; i++) atomic_init(&g->sockets[i], 0);
    g->share = curl_share_init();
    if (!g->share) {
        net_free(g);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory creating an HTTP client");
    }
    CURLSHcode sc = curl_share_setopt(g->share, CURLSHOPT_LOCKFUNC, share_lock);
    if (sc == CURLSHE_OK) sc = curl_share_setopt(g->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    if (sc == CURLSHE_OK) sc = curl_share_setopt(g->share, CURLSHOPT_USERDATA, g);
    if (sc == CURLSHE_OK) sc = curl_share_setopt(g->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    if (sc == CURLSHE_OK) sc = curl_share_setopt(g->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    if (sc == CURLSHE_OK) sc = curl_share_setopt(g->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    if (sc != CURLSHE_OK) {
        net_free(g);
        return zg_error(ZGPU_ERR_INTERNAL, "libcurl share setup failed: %s", curl_share_strerror(sc));
    }
    *out = g;
    return ZGPU_OK;
}

/* In a forked child: closes the child's copies of an ancestor's sockets (the parent's stay open: close() of one of
 * several descriptors of a socket sends nothing), so the server sees the parent's connections end when the parent
 * ends them. Nothing else of the ancestor's net is touched: its share's locks may be held by threads that are not
 * here, and a cleanup of its connections would shut them down (TLS close_notify, HTTP/2 GOAWAY) under the parent. */
static void net_drop_inherited(net *g) {
    for (int i = 0; i < MAX_SOCKETS; i++) {
        int v = atomic_exchange(&g->sockets[i], 0);
        struct stat sb;
        if (v > 0 && fstat(v - 1, &sb) == 0 && S_ISSOCK(sb.st_mode)) close(v - 1);
    }
}

/* This process's net, made now if the client's is an ancestor's (the first batch after a fork). Threads of one
 * child racing here each make one; the first installed wins and the others are freed unused. */
static zgpu_status client_net(zg_http_client *c, net **out) {
    const pid_t me = getpid();
    net *g = atomic_load(&c->net);
    while (!g || g->pid != me) {
        net *n = NULL;
        ZG_FORWARD(net_new(&n));
        net *old = g;
        if (atomic_compare_exchange_strong(&c->net, &g, n)) {
            if (old) net_drop_inherited(old); /* the rest of it leaks, on purpose (above) */
            *out = n;
            return ZGPU_OK;
        }
        net_free(n);
    }
    *out = g;
    return ZGPU_OK;
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
    if (!c->user_agent || (d.ca_file && !c->ca_file)) {
        zg_http_client_free(c);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory creating an HTTP client");
    }
    net *g = NULL;
    zgpu_status st = net_new(&g);
    if (st != ZGPU_OK) {
        zg_http_client_free(c);
        return st;
    }
    atomic_init(&c->net, g);
    *out = c;
    return ZGPU_OK;
}

void zg_http_client_free(zg_http_client *c) {
    if (!c) return;
    net *g = atomic_load(&c->net);
    if (g && g->pid == getpid()) net_free(g);
    else if (g) net_drop_inherited(g); /* an ancestor's (a forked child that made no request): see client_net */
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

static CURL *easy_get(net *g) {
    CURL *e = NULL;
    pthread_mutex_lock(&g->free_mu);
    if (g->n_free) e = g->free_easy[--g->n_free];
    pthread_mutex_unlock(&g->free_mu);
    if (e) curl_easy_reset(e);
    else e = curl_easy_init();
    return e;
}

static void easy_put(net *g, CURL *e) {
    if (!e) return;
    pthread_mutex_lock(&g->free_mu);
    if (g->n_free < FREE_EASY_MAX) {
        g->free_easy[g->n_free++] = e;
        e = NULL;
    }
    pthread_mutex_unlock(&g->free_mu);
    if (e) curl_easy_cleanup(e);
}

static CURLM *multi_get(net *g) {
    CURLM *m = NULL;
    pthread_mutex_lock(&g->free_mu);
    if (g->n_free_multi) m = g->free_multi[--g->n_free_multi];
    pthread_mutex_unlock(&g->free_mu);
    return m ? m : curl_multi_init();
}

/* Back to the net for the next batch; every easy handle must have left it. */
static void multi_put(net *g, CURLM *m) {
    if (!m) return;
    pthread_mutex_lock(&g->free_mu);
    if (g->n_free_multi < FREE_MULTI_MAX) {
        g->free_multi[g->n_free_multi++] = m;
        m = NULL;
    }
    pthread_mutex_unlock(&g->free_mu);
    if (m) curl_multi_cleanup(m);
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

/* ---- the batch ---- */

typedef struct run {
    zg_http_client *c;
    net *g;
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
            xfer_final(x, s, 0);
            return 0;
        }
    }
    r->attempts++;
    atomic_fetch_add(&c->attempts, 1);
    xfer_reset(x);
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
    CURL *e = x->easy = ok ? easy_get(u->g) : NULL;
    if (!e) {
        snprintf(x->why, sizeof x->why, "out of memory starting a transfer");
        xfer_final(x, ZGPU_ERR_NO_MEMORY, 0);
        return 0;
    }
    SETOPT(CURLOPT_SHARE, u->g->share);
    SETOPT(CURLOPT_SOCKOPTFUNCTION, on_socket);
    SETOPT(CURLOPT_SOCKOPTDATA, u->g);
    SETOPT(CURLOPT_CLOSESOCKETFUNCTION, on_close_socket);
    SETOPT(CURLOPT_CLOSESOCKETDATA, u->g);
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
    SETOPT(CURLOPT_HEADERFUNCTION, xfer_on_header);
    SETOPT(CURLOPT_HEADERDATA, x);
    SETOPT(CURLOPT_WRITEFUNCTION, xfer_on_body);
    SETOPT(CURLOPT_WRITEDATA, x);
    switch (r->method) {
    case ZG_HTTP_GET: SETOPT(CURLOPT_HTTPGET, 1L); break;
    case ZG_HTTP_HEAD: SETOPT(CURLOPT_NOBODY, 1L); break;
    case ZG_HTTP_PUT:
        SETOPT(CURLOPT_UPLOAD, 1L);
        SETOPT(CURLOPT_READFUNCTION, xfer_on_upload);
        SETOPT(CURLOPT_READDATA, x);
        SETOPT(CURLOPT_SEEKFUNCTION, xfer_on_seek); /* a redirect or an auth round rewinds the upload */
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
        easy_put(u->g, e);
        x->easy = NULL;
        xfer_final(x, ZGPU_ERR_INTERNAL, 0);
        return 0;
    }
    return 1;
}

static double bits_double(uint64_t b) {
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

/* An average that moves a quarter of the way towards each sample (the first sample is taken as is). */
static void average_in(_Atomic uint64_t *bits, double sample) {
    const double old = bits_double(atomic_load(bits));
    const double now = old > 0 ? old + (sample - old) / 4 : sample;
    uint64_t b;
    memcpy(&b, &now, sizeof b);
    atomic_store(bits, b);
}

/* A successful answer's timing: its first byte's wait (after the request went out) and, for a body long enough to
 * measure, its rate. */
static void note_link(zg_http_client *c, CURL *e, long code) {
    curl_off_t pre = 0, start = 0, total = 0, size = 0;
    if (code < 200 || code > 299 || curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &pre) != CURLE_OK ||
        curl_easy_getinfo(e, CURLINFO_STARTTRANSFER_TIME_T, &start) != CURLE_OK ||
        curl_easy_getinfo(e, CURLINFO_TOTAL_TIME_T, &total) != CURLE_OK ||
        curl_easy_getinfo(e, CURLINFO_SIZE_DOWNLOAD_T, &size) != CURLE_OK)
        return;
    if (start >= pre) average_in(&c->wait_bits, (double)(start - pre) * 1e-6 + 1e-6);
    if (size >= LINK_RATE_MIN_BODY && total > start)
        average_in(&c->rate_bits, (double)size / ((double)(total - start) * 1e-6));
}

void zg_http_client_link(const zg_http_client *c, double *wait_s, double *bytes_per_s) {
    zg_http_client *m = (zg_http_client *)c; /* atomic loads want non-const objects in C11 */
    const double w = bits_double(atomic_load(&m->wait_bits)), r = bits_double(atomic_load(&m->rate_bits));
    *wait_s = w > 0 ? w : -1;
    *bytes_per_s = r > 0 ? r : 0;
}

/* x's attempt ended: 1 if the request is done, 0 if it waits to retry. */
static int end_attempt(run *u, xfer *x, CURLcode rc) {
    zg_http_client *c = u->c;
    zg_http_req *r = x->r;
    long conns = 0;
    curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &conns);
    atomic_fetch_add(&c->connections_opened, (uint64_t)(conns > 0 ? conns : 0));
    atomic_fetch_add(&c->bytes_received, x->seen);
    long version = 0, code = 0;
    if (curl_easy_getinfo(x->easy, CURLINFO_HTTP_VERSION, &version) == CURLE_OK && version >= CURL_HTTP_VERSION_2_0)
        atomic_store(&c->multiplexed, 1);
    if (rc == CURLE_OK && curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK)
        note_link(c, x->easy, code);
    int verdict = xfer_judge(x, rc);
    curl_multi_remove_handle(u->multi, x->easy);
    easy_put(u->g, x->easy);
    x->easy = NULL;
    curl_slist_free_all(x->hdrs);
    x->hdrs = NULL;
    if (verdict == O_DONE) return 1;
    if (r->attempts > c->o.max_retries) {
        xfer_final(x, ZGPU_ERR_IO, 1);
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
    x->not_before = zg_http_now_ms() + (int64_t)delay;
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
        xfer_final(x, ZGPU_ERR_INVALID_ARGUMENT, 0);
        return 0;
    }
    if (r->method == ZG_HTTP_GET && r->range_length != ZG_HTTP_WHOLE) {
        if (r->range_length == 0) { /* nothing to fetch (no request: found is not checked) */
            r->found = 1;
            xfer_final(x, ZGPU_OK, 0); /* final all the same: its `done` is told */
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
            easy_put(u->g, x->easy);
            x->easy = NULL;
        }
        curl_slist_free_all(x->hdrs);
        x->hdrs = NULL;
        if (!x->final) {
            snprintf(x->why, sizeof x->why, "%s", why);
            xfer_final(x, s, 0);
        }
    }
}

/* One thread's part of a batch: requests [0, n) with at most `conns` of them in flight over HTTP/1.1. */
static zgpu_status run_part(zg_http_client *c, net *g, zg_http_req *reqs, size_t n, int conns, char *why_out) {
    run u = {c, g, NULL, calloc(n, sizeof(xfer)), malloc(n * sizeof(size_t)), 0, 0};
    u.multi = multi_get(g);
    if (!u.xs || !u.retry || !u.multi) {
        multi_put(g, u.multi);
        free(u.xs);
        free(u.retry);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory starting %zu HTTP requests", n);
    }
    u.rng = (uint64_t)zg_http_now_ms() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)u.xs;
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
        int64_t now = zg_http_now_ms();
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
    multi_put(g, u.multi); /* (every transfer has left it: ended, or abandoned) */
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
    net *g;
    zg_http_req *reqs;
    size_t n;
    int conns;
    zgpu_status st;
    char why[256];
} part;

static void *part_main(void *arg) {
    part *p = arg;
    p->st = run_part(p->c, p->g, p->reqs, p->n, p->conns, p->why);
    return NULL;
}

int zg_http_client_threads(const zg_http_client *c) {
    return c->o.threads < c->o.max_host_connections ? c->o.threads : c->o.max_host_connections;
}

zgpu_status zg_http_run(zg_http_client *c, zg_http_req *reqs, size_t n) {
    ZG_RETURN_IF(!c || (n && !reqs), ZGPU_ERR_INVALID_ARGUMENT, "zg_http_run: no client or no requests");
    if (n == 0) return ZGPU_OK;
    net *g = NULL;
    ZG_FORWARD(client_net(c, &g)); /* a forked child's first batch: connections of its own */
    atomic_fetch_add(&c->requests, n);
    /* many requests: contiguous parts on several threads, the connections shared out among them (a part
     * keeps its share busy: the batch as a whole still keeps max_host_connections requests in flight) */
    int t = zg_http_client_threads(c);
    if ((size_t)t > n / MIN_PER_THREAD) t = (int)(n / MIN_PER_THREAD);
    if (t <= 1) {
        char why[256];
        zgpu_status st = run_part(c, g, reqs, n, c->o.max_host_connections, why);
        return st == ZGPU_OK ? ZGPU_OK : zg_error(st, "HTTP batch of %zu requests failed: libcurl: %s", n, why);
    }
    part parts[64];
    pthread_t th[64];
    int started[64] = {0};
    if (t > 64) t = 64;
    size_t at = 0;
    for (int k = 0; k < t; k++) {
        size_t len = n / (size_t)t + ((size_t)k < n % (size_t)t);
        parts[k] = (part){c, g, reqs + at, len, c->o.max_host_connections / t, ZGPU_OK, ""};
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
