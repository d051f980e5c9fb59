/* The batched HTTP client (store/http/client.h) against tests/remote/http_server.py on 127.0.0.1: whole, range
 * and suffix GETs into caller memory, HEAD, PUT, DELETE, absent objects; every fault the server injects (5xx,
 * 429, 403, Retry-After, short and reset bodies, a stalled server, a Range answered wrong or ignored), each
 * retried or failed but never accepted with wrong bytes; 500 range GETs in one batch over a few kept-alive
 * connections, and batches from several threads on one client; zg_http_merge_ranges. Skips without python3. */
#include <errno.h>
#include <ftw.h>
#include <libgen.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "store/http/client.h"
#include "plan/plan.h"
#include "common/status.h"

enum { DATA_N = 1 << 20, SMALL_N = 100 };
static uint8_t data[DATA_N], small[SMALL_N];
static char root[256];
static char base[64];
static pid_t server_pid = -1;
static int server_stdin = -1;

/* ---- the server ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f) {
    (void)st, (void)flag, (void)f;
    return remove(path);
}

static void cleanup(void) {
    if (server_pid > 0) {
        kill(server_pid, SIGTERM);
        waitpid(server_pid, NULL, 0);
        server_pid = -1;
    }
    if (server_stdin >= 0) close(server_stdin);
    if (root[0]) nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int write_file(const char *rel, const void *p, size_t n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* Starts the server over `root`: 1 with `base` set, 0 on failure. Its stdin is a pipe we hold, so it ends with
 * this process however that ends. */
static int start_server(void) {
    char src[1024], script[1100];
    snprintf(src, sizeof src, "%s", __FILE__);
    snprintf(script, sizeof script, "%s/../remote/http_server.py", dirname(src));
    int in[2], out[2];
    if (pipe(in) || pipe(out)) return 0;
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        execlp("python3", "python3", script, "--root", root, "--port", "0", (char *)NULL);
        _exit(127);
    }
    server_pid = pid;
    close(in[0]);
    close(out[1]);
    server_stdin = in[1];
    char line[64] = "";
    size_t got = 0;
    struct pollfd pf = {out[0], POLLIN, 0};
    while (got < sizeof line - 1 && !memchr(line, '\n', got) && poll(&pf, 1, 15000) > 0) {
        ssize_t k = read(out[0], line + got, sizeof line - 1 - got);
        if (k <= 0) break;
        got += (size_t)k;
        line[got] = 0;
    }
    close(out[0]);
    int port = 0;
    if (sscanf(line, "PORT %d", &port) != 1 || port <= 0) {
        fprintf(stderr, "http_server.py (%s) did not start: '%s'\n", script, line);
        return 0;
    }
    snprintf(base, sizeof base, "http://127.0.0.1:%d", port);
    return 1;
}

/* ---- helpers ---- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static zg_http_client *client(int max_retries, long timeout_ms) {
    zg_http_client_options o;
    zg_http_client_options_init(&o);
    o.max_retries = max_retries;
    o.retry_base_ms = 5;
    o.retry_max_ms = 200;
    o.request_timeout_ms = timeout_ms;
    zg_http_client *c = NULL;
    if (zg_http_client_create(&o, &c) != ZGPU_OK) {
        fprintf(stderr, "client: %s\n", zgpu_last_error());
        exit(1);
    }
    return c;
}

static char urls[64][256];
static int url_i;
static const char *url(const char *key) { /* a few live at once, round robin */
    char *u = urls[url_i++ % 64];
    snprintf(u, 256, "%s/%s", base, key);
    return u;
}

/* A request of `u`, a URL the caller keeps alive (many(): a batch's own, not url()'s shared slots). */
static zg_http_req req_url(zg_http_method m, const char *u) {
    zg_http_req r;
    memset(&r, 0, sizeof r);
    r.method = m;
    r.url = u;
    r.range_length = ZG_HTTP_WHOLE;
    return r;
}

static zg_http_req req(zg_http_method m, const char *key) { return req_url(m, url(key)); }

static zg_http_req range_url(const char *u, uint64_t off, uint64_t len, int suffix, uint8_t *out) {
    zg_http_req r = req_url(ZG_HTTP_GET, u);
    r.range_offset = off;
    r.range_length = len;
    r.range_suffix = suffix;
    r.out = out;
    return r;
}

static zg_http_req range(const char *key, uint64_t off, uint64_t len, int suffix, uint8_t *out) {
    return range_url(url(key), off, len, suffix, out);
}

/* One request alone; the run itself must succeed. */
static void run1(zg_http_client *c, zg_http_req *r) { CHECK_OK(zg_http_run(c, r, 1)); }

/* Sets the server's fault rules; the JSON is written with ' for ". */
static void faults(zg_http_client *c, const char *json) {
    char body[1024];
    snprintf(body, sizeof body, "%s", json);
    for (char *p = body; *p; p++)
        if (*p == '\'') *p = '"';
    zg_http_req r = req(body[0] ? ZG_HTTP_POST : ZG_HTTP_DELETE, "__faults__");
    r.upload = (const uint8_t *)body;
    r.upload_len = strlen(body);
    run1(c, &r);
    CHECK_MSG(r.status == ZGPU_OK && r.http_status == 200, "fault setup: %ld %s", r.http_status, r.error);
    zg_http_req_clear(&r);
}

static uint64_t stat_of(zg_http_client *c, const char *name) {
    zg_http_req r = req(ZG_HTTP_GET, "__stats__");
    run1(c, &r);
    uint64_t v = 0;
    char key[32];
    snprintf(key, sizeof key, "\"%s\": ", name);
    if (zg_buf_append(&r.body, "", 1) == ZGPU_OK) {
        const char *p = strstr((const char *)r.body.data, key);
        if (p) v = strtoull(p + strlen(key), NULL, 10);
    }
    zg_http_req_clear(&r);
    return v;
}

static int has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

/* Prints a final error, so the log shows what a user would read. */
static void show(const zg_http_req *r) { printf("  %s: %s\n", zgpu_status_name(r->status), r->error); }

static zg_http_stats stats(zg_http_client *c) {
    zg_http_stats s;
    zg_http_client_stats(c, &s);
    return s;
}

/* ---- plain requests ---- */

/* A head read (range_upto) of `key`'s first `len` bytes into out: what came must be the first min(len, size) bytes
 * of `ref` (size bytes), with the object's size told. */
static void check_head(zg_http_client *c, const char *key, uint64_t len, const uint8_t *ref, uint64_t size,
                       uint8_t *out, long want_status) {
    zg_http_req r = range(key, 0, len, 0, out);
    r.range_upto = 1;
    memset(out, 0xEE, (size_t)len);
    run1(c, &r);
    const uint64_t want = len < size ? len : size;
    CHECK_MSG(r.status == ZGPU_OK && r.http_status == want_status && r.received == want &&
                  memcmp(out, ref, (size_t)want) == 0,
              "head of %s, %llu of %llu bytes: status %d, HTTP %ld, %llu received: %s", key, (unsigned long long)len,
              (unsigned long long)size, (int)r.status, r.http_status, (unsigned long long)r.received, r.error);
    CHECK_EQ_U64(r.object_size, size);
    zg_http_req_clear(&r);
}

static void test_basic(zg_http_client *c) {
    zg_http_req r = req(ZG_HTTP_GET, "small");
    run1(c, &r);
    CHECK_OK(r.status);
    CHECK(r.found == 1 && r.http_status == 200 && r.attempts == 1);
    CHECK_EQ_U64(r.body.size, SMALL_N);
    CHECK_EQ_U64(r.received, SMALL_N);
    CHECK_EQ_U64(r.object_size, SMALL_N);
    CHECK(r.body.size == SMALL_N && memcmp(r.body.data, small, SMALL_N) == 0);
    zg_http_req_clear(&r);

    uint8_t *out = malloc(5000);
    r = range("data", 1000, 5000, 0, out);
    r.want_etag = 1;
    run1(c, &r);
    CHECK_OK(r.status);
    CHECK(r.http_status == 206 && memcmp(out, data + 1000, 5000) == 0);
    CHECK_EQ_U64(r.received, 5000);
    CHECK_EQ_U64(r.object_size, DATA_N);
    CHECK_EQ_U64(r.body.size, 0);
    CHECK(r.etag[0] == '"');
    zg_http_req_clear(&r);

    r = range("data", 0, 300, 1, out); /* the last 300 bytes */
    run1(c, &r);
    CHECK_OK(r.status);
    CHECK(r.http_status == 206 && memcmp(out, data + DATA_N - 300, 300) == 0);
    CHECK_EQ_U64(r.object_size, DATA_N);
    zg_http_req_clear(&r);

    r = range("data", 4096, 64, 0, NULL); /* a range into `body` */
    run1(c, &r);
    CHECK(r.status == ZGPU_OK && r.body.size == 64 && memcmp(r.body.data, data + 4096, 64) == 0);
    zg_http_req_clear(&r);

    r = range("small", 0, 500, 1, NULL); /* a suffix longer than the object: all of it, into body */
    run1(c, &r);
    CHECK(r.status == ZGPU_OK && r.body.size == SMALL_N && memcmp(r.body.data, small, SMALL_N) == 0);
    zg_http_req_clear(&r);
    r = range("small", 0, 500, 1, out); /* ... but `out` wants 500 bytes: the value is too short */
    run1(c, &r);
    CHECK_MSG(r.status == ZGPU_ERR_CORRUPT_DATA && has(r.error, "100 bytes"), "%s", r.error);
    zg_http_req_clear(&r);

    r = range("small", 90, 20, 0, out); /* past the end: the server sends 90-99 */
    run1(c, &r);
    CHECK_MSG(r.status == ZGPU_ERR_CORRUPT_DATA && has(r.error, "past its end") && has(r.error, "bytes=90-109"),
              "%s", r.error);
    show(&r);
    zg_http_req_clear(&r);
    /* head reads (range_upto): the first bytes of a value of unknown size, all of it where it is shorter */
    check_head(c, "small", 500, small, SMALL_N, out, 206);
    check_head(c, "small", 60, small, SMALL_N, out, 206);
    check_head(c, "data", 4096, data, DATA_N, out, 206);
    r = range("small", 200, 10, 0, out); /* all past the end: 416 */
    run1(c, &r);
    CHECK_MSG(r.status == ZGPU_ERR_CORRUPT_DATA && r.http_status == 416 && has(r.error, "100 bytes"), "%s",
              r.error);
    CHECK_EQ_U64(r.object_size, SMALL_N);
    CHECK_EQ_U64(r.attempts, 1);
    zg_http_req_clear(&r);

    r = range("data", 7, 0, 0, out); /* nothing asked: no request */
    run1(c, &r);
    CHECK(r.status == ZGPU_OK && r.received == 0 && r.attempts == 0);
    free(out);

    r = req(ZG_HTTP_GET, "empty");
    run1(c, &r);
    CHECK(r.status == ZGPU_OK && r.found == 1 && r.body.size == 0 && r.object_size == 0 && r.http_status == 200);
    zg_http_req_clear(&r);

    r = req(ZG_HTTP_GET, "no/such/key");
    run1(c, &r);
    CHECK(r.status == ZGPU_OK && r.found == 0 && r.http_status == 404 && r.attempts == 1);
    zg_http_req_clear(&r);

    zg_http_req h[3] = {req(ZG_HTTP_HEAD, "data"), req(ZG_HTTP_HEAD, "empty"), req(ZG_HTTP_HEAD, "missing")};
    CHECK_OK(zg_http_run(c, h, 3));
    CHECK(h[0].status == ZGPU_OK && h[0].found && h[0].object_size == DATA_N && h[0].body.size == 0);
    CHECK(h[1].status == ZGPU_OK && h[1].found && h[1].object_size == 0);
    CHECK(h[2].status == ZGPU_OK && !h[2].found && h[2].http_status == 404);
    for (int i = 0; i < 3; i++) zg_http_req_clear(&h[i]);

    /* PUT, GET it back, DELETE */
    zg_http_req p = req(ZG_HTTP_PUT, "new/a/b");
    p.upload = data + 12345;
    p.upload_len = 100000;
    p.want_etag = 1;
    run1(c, &p);
    CHECK_MSG(p.status == ZGPU_OK && p.http_status == 200 && p.etag[0], "%s", p.error);
    zg_http_req_clear(&p);
    r = req(ZG_HTTP_GET, "new/a/b");
    run1(c, &r);
    CHECK(r.status == ZGPU_OK && r.body.size == 100000 && memcmp(r.body.data, data + 12345, 100000) == 0);
    zg_http_req_clear(&r);
    p = req(ZG_HTTP_PUT, "new/zero");
    run1(c, &p);
    CHECK(p.status == ZGPU_OK && p.http_status == 200);
    r = req(ZG_HTTP_HEAD, "new/zero");
    run1(c, &r);
    CHECK(r.status == ZGPU_OK && r.found && r.object_size == 0);
    zg_http_req d[3] = {req(ZG_HTTP_DELETE, "new/a/b"), req(ZG_HTTP_DELETE, "new/zero"),
                        req(ZG_HTTP_DELETE, "new/never")};
    CHECK_OK(zg_http_run(c, d, 3));
    CHECK(d[0].status == ZGPU_OK && d[0].found && d[0].http_status == 204);
    CHECK(d[1].status == ZGPU_OK && d[1].found);
    CHECK(d[2].status == ZGPU_OK && !d[2].found);
    for (int i = 0; i < 3; i++) zg_http_req_clear(&d[i]);
    r = req(ZG_HTTP_GET, "new/a/b");
    run1(c, &r);
    CHECK(r.status == ZGPU_OK && !r.found);
    zg_http_req_clear(&r);

    /* requests the client refuses before sending */
    uint8_t one;
    r = req(ZG_HTTP_HEAD, "data");
    r.out = &one;
    r.range_length = 1;
    run1(c, &r);
    CHECK(r.status == ZGPU_ERR_INVALID_ARGUMENT && r.attempts == 0);
    r = req(ZG_HTTP_GET, "data");
    r.out = &one; /* `out` without a length */
    run1(c, &r);
    CHECK(r.status == ZGPU_ERR_INVALID_ARGUMENT);

    /* headers: set replaces by name */
    r = req(ZG_HTTP_GET, "small");
    CHECK_OK(zg_http_req_set_header(&r, "X-One", "1"));
    CHECK_OK(zg_http_req_set_header(&r, "x-one", "2"));
    CHECK_OK(zg_http_req_set_header(&r, "X-Two", "3"));
    CHECK(r.n_headers == 2 && strcmp(r.headers[0], "x-one: 2") == 0);
    CHECK_STATUS(zg_http_req_set_header(&r, "Bad\r\nName", "x"), ZGPU_ERR_INVALID_ARGUMENT);
    run1(c, &r);
    CHECK(r.status == ZGPU_OK && r.body.size == SMALL_N);
    zg_http_req_clear(&r);
    CHECK(r.n_headers == 0 && r.body.data == NULL);
}

/* ---- faults ---- */

typedef struct prep {
    int calls, fail_at;
} prep;

static zgpu_status prepare(void *user, zg_http_req *r) {
    prep *p = user;
    p->calls++;
    char v[16];
    snprintf(v, sizeof v, "%d", p->calls);
    if (p->calls == p->fail_at) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "signing failed on purpose");
    return zg_http_req_set_header(r, "X-Attempt", v);
}

static void test_status_faults(zg_http_client *c) {
    uint8_t out[1000];
    zg_http_stats s0 = stats(c);
    faults(c, "{'rules':[{'path_re':'/data$','kind':'status','code':500,'times':2}]}");
    prep pp = {0, 0};
    zg_http_req r = range("data", 500, 1000, 0, out);
    r.prepare = prepare;
    r.prepare_user = &pp;
    run1(c, &r);
    CHECK_MSG(r.status == ZGPU_OK && r.attempts == 3 && r.http_status == 206, "%d %s", r.attempts, r.error);
    CHECK(memcmp(out, data + 500, 1000) == 0);
    CHECK(pp.calls == 3 && r.n_headers == 1 && strcmp(r.headers[0], "X-Attempt: 3") == 0);
    zg_http_stats s1 = stats(c);
    CHECK_EQ_U64(s1.retries - s0.retries, 2);
    zg_http_req_clear(&r);

    faults(c, "{'rules':[{'path_re':'/data$','kind':'status','code':500,'times':1}]}");
    pp = (prep){0, 2}; /* the retry's prepare fails: its status and message are the request's */
    r = range("data", 500, 1000, 0, out);
    r.prepare = prepare;
    r.prepare_user = &pp;
    run1(c, &r);
    CHECK_MSG(r.status == ZGPU_ERR_INVALID_ARGUMENT && has(r.error, "signing failed"), "%s", r.error);
    zg_http_req_clear(&r);

    faults(c, "{'rules':[{'path_re':'/data$','kind':'status','code':429,'times':1}]}");
    r = range("data", 0, 1000, 0, out);
    run1(c, &r);
    CHECK(r.status == ZGPU_OK && r.attempts == 2 && memcmp(out, data, 1000) == 0);
    zg_http_req_clear(&r);

    faults(c, "{'rules':[{'path_re':'/data$','kind':'status','code':403,'body':"
              "'<?xml version=\\'1.0\\'?><Error><Code>AccessDenied</Code><Message>No way</Message></Error>'}]}");
    r = range("data", 0, 100, 0, out);
    run1(c, &r);
    CHECK_MSG(r.status == ZGPU_ERR_IO && r.attempts == 1 && r.http_status == 403 && has(r.error, "GET ") &&
                  has(r.error, base) && has(r.error, "/data") && has(r.error, "403") &&
                  has(r.error, "access denied") && has(r.error, "AccessDenied: No way") &&
                  has(r.error, "bytes=0-99"),
              "%s", r.error);
    show(&r);
    CHECK(r.body.size > 0 && has((const char *)r.body.data, "<Code>")); /* the error body is kept */
    zg_http_req_clear(&r);
    r = range("data", 0, 100, 0, out);
    r.not_found_403 = 1;
    run1(c, &r);
    CHECK(r.status == ZGPU_OK && r.found == 0);
    zg_http_req_clear(&r);

    zg_http_client *c2 = client(2, 0);
    faults(c, "{'rules':[{'path_re':'/data$','kind':'status','code':503}]}");
    r = range("data", 0, 100, 0, out);
    run1(c2, &r);
    CHECK_MSG(r.status == ZGPU_ERR_IO && r.attempts == 3 && has(r.error, "HTTP 503 after 3 attempts"), "%s",
              r.error);
    show(&r);
    zg_http_req_clear(&r);

    /* Retry-After: 1 s, capped at retry_max_ms (200 ms): the retry waits that long, not 5 ms */
    faults(c, "{'rules':[{'path_re':'/data$','kind':'status','code':503,'times':1,'headers':{'Retry-After':'1'}}]}");
    double t0 = now_s();
    r = range("data", 0, 100, 0, out);
    run1(c2, &r);
    double dt = now_s() - t0;
    CHECK_MSG(r.status == ZGPU_OK && r.attempts == 2 && dt >= 0.18 && dt < 0.9, "%s %.3f s", r.error, dt);
    zg_http_req_clear(&r);
    zg_http_client_free(c2);
    faults(c, "");
}

static void test_body_faults(zg_http_client *c) {
    uint8_t *out = malloc(100000);
    zg_http_client *c2 = client(2, 0);
    /* a body cut short: retried, then an error naming both lengths; never OK with short data */
    faults(c, "{'rules':[{'path_re':'/data$','kind':'short'}]}");
    zg_http_req r = range("data", 100, 100000, 0, out);
    run1(c2, &r);
    CHECK_MSG(r.status == ZGPU_ERR_IO && r.attempts == 3 && has(r.error, "body has 50000 bytes") &&
                  has(r.error, "Content-Length said 100000") && has(r.error, "after 3 attempts"),
              "%s", r.error);
    show(&r);
    zg_http_req_clear(&r);
    r = req(ZG_HTTP_GET, "data");
    run1(c2, &r);
    CHECK_MSG(r.status == ZGPU_ERR_IO && has(r.error, "Content-Length said 1048576"), "%s", r.error);
    zg_http_req_clear(&r);
    faults(c, "{'rules':[{'path_re':'/data$','kind':'short','times':1}]}");
    memset(out, 0, 100000);
    r = range("data", 100, 100000, 0, out);
    run1(c2, &r);
    CHECK(r.status == ZGPU_OK && r.attempts == 2 && memcmp(out, data + 100, 100000) == 0);
    zg_http_req_clear(&r);

    /* a connection reset mid-body */
    faults(c, "{'rules':[{'path_re':'/data$','kind':'reset','times':1}]}");
    memset(out, 0, 100000);
    r = range("data", 7, 100000, 0, out);
    run1(c2, &r);
    CHECK_MSG(r.status == ZGPU_OK && r.attempts == 2 && memcmp(out, data + 7, 100000) == 0, "%s", r.error);
    zg_http_req_clear(&r);
    faults(c, "{'rules':[{'path_re':'/data$','kind':'reset'}]}");
    r = range("data", 7, 100000, 0, out);
    run1(c2, &r);
    CHECK_MSG(r.status == ZGPU_ERR_IO && r.attempts == 3 &&
                  (has(r.error, "connection reset") || has(r.error, "body has")),
              "%s", r.error);
    show(&r);
    zg_http_req_clear(&r);

    /* a 206 for another range than the one asked */
    faults(c, "{'rules':[{'path_re':'/data$','kind':'bad_range'}]}");
    r = range("data", 10, 1000, 0, out);
    run1(c2, &r);
    CHECK_MSG(r.status == ZGPU_ERR_IO && r.attempts == 3 && has(r.error, "bytes 11-1010/1048576 does not match"),
              "%s", r.error);
    show(&r);
    zg_http_req_clear(&r);
    r = range("data", 0, 1000, 1, out);
    run1(c2, &r);
    CHECK_MSG(r.status == ZGPU_ERR_IO && has(r.error, "does not match"), "%s", r.error);
    zg_http_req_clear(&r);
    faults(c, "{'rules':[{'path_re':'/data$','kind':'bad_range','times':1}]}");
    r = range("data", 10, 1000, 0, out);
    run1(c2, &r);
    CHECK(r.status == ZGPU_OK && r.attempts == 2 && memcmp(out, data + 10, 1000) == 0);
    zg_http_req_clear(&r);

    /* a wrong total: a suffix (whose place depends on it) is refused; a plain range's bytes are right anyway */
    faults(c, "{'rules':[{'path_re':'/data$','kind':'wrong_total'}]}");
    r = range("data", 0, 1000, 1, out);
    run1(c2, &r);
    CHECK_MSG(r.status == ZGPU_ERR_IO && has(r.error, "does not match"), "%s", r.error);
    zg_http_req_clear(&r);
    r = range("data", 10, 1000, 0, out);
    run1(c2, &r);
    CHECK(r.status == ZGPU_OK && memcmp(out, data + 10, 1000) == 0);
    zg_http_req_clear(&r);

    /* a server ignoring Range (200, the whole object): the wanted part is sliced out */
    faults(c, "{'rules':[{'path_re':'/(data|small)$','kind':'ignore_range'}]}");
    memset(out, 0, 100000);
    r = range("data", 5000, 100000, 0, out);
    run1(c2, &r);
    CHECK(r.status == ZGPU_OK && r.http_status == 200 && r.received == 100000 &&
          memcmp(out, data + 5000, 100000) == 0);
    CHECK_EQ_U64(r.object_size, DATA_N);
    zg_http_req_clear(&r);
    r = range("data", 0, 777, 1, out);
    run1(c2, &r);
    CHECK(r.status == ZGPU_OK && memcmp(out, data + DATA_N - 777, 777) == 0);
    zg_http_req_clear(&r);
    r = range("data", 9, 33, 0, NULL);
    run1(c2, &r);
    CHECK(r.status == ZGPU_OK && r.body.size == 33 && memcmp(r.body.data, data + 9, 33) == 0);
    zg_http_req_clear(&r);
    r = range("small", 90, 20, 0, out);
    run1(c2, &r);
    CHECK_MSG(r.status == ZGPU_ERR_CORRUPT_DATA && r.attempts == 1 && has(r.error, "100 bytes"), "%s", r.error);
    zg_http_req_clear(&r);
    check_head(c2, "small", 500, small, SMALL_N, out, 200); /* a head read takes what there is */
    check_head(c2, "data", 4096, data, DATA_N, out, 200);
    /* ... and sends it chunked, its size known only at the end */
    faults(c, "{'rules':[{'path_re':'/(data|small)$','kind':'ignore_range','chunked':true}]}");
    memset(out, 0, 100000);
    r = range("data", 0, 70000, 1, out); /* the last bytes, kept round `out` as they pass */
    run1(c2, &r);
    CHECK(r.status == ZGPU_OK && r.received == 70000 && memcmp(out, data + DATA_N - 70000, 70000) == 0);
    CHECK_EQ_U64(r.object_size, DATA_N);
    zg_http_req_clear(&r);
    r = range("data", 0, 4096, 1, out); /* a suffix dividing the object's size */
    run1(c2, &r);
    CHECK(r.status == ZGPU_OK && memcmp(out, data + DATA_N - 4096, 4096) == 0);
    zg_http_req_clear(&r);
    r = range("data", 0, 777, 1, NULL);
    run1(c2, &r);
    CHECK(r.status == ZGPU_OK && r.body.size == 777 && memcmp(r.body.data, data + DATA_N - 777, 777) == 0);
    zg_http_req_clear(&r);
    r = range("small", 0, 500, 1, NULL);
    run1(c2, &r);
    CHECK(r.status == ZGPU_OK && r.body.size == SMALL_N && memcmp(r.body.data, small, SMALL_N) == 0);
    zg_http_req_clear(&r);
    r = range("small", 0, 500, 1, out);
    run1(c2, &r);
    CHECK_MSG(r.status == ZGPU_ERR_CORRUPT_DATA && has(r.error, "100 bytes"), "%s", r.error);
    zg_http_req_clear(&r);
    check_head(c2, "small", 500, small, SMALL_N, out, 200);
    check_head(c2, "data", 4096, data, DATA_N, out, 200);
    r = range("data", 99999, 100000, 0, out);
    run1(c2, &r);
    CHECK(r.status == ZGPU_OK && memcmp(out, data + 99999, 100000) == 0);
    zg_http_req_clear(&r);
    r = range("small", 90, 20, 0, out);
    run1(c2, &r);
    CHECK_MSG(r.status == ZGPU_ERR_CORRUPT_DATA && has(r.error, "100 bytes"), "%s", r.error);
    zg_http_req_clear(&r);
    faults(c, "{'rules':[{'path_re':'/data$','kind':'plain','chunked':true}]}"); /* a chunked 206 */
    r = range("data", 5, 50000, 0, out);
    run1(c2, &r);
    CHECK(r.status == ZGPU_OK && r.http_status == 206 && memcmp(out, data + 5, 50000) == 0);
    zg_http_req_clear(&r);
    r = req(ZG_HTTP_GET, "data");
    run1(c2, &r);
    CHECK(r.status == ZGPU_OK && r.body.size == DATA_N && memcmp(r.body.data, data, DATA_N) == 0);
    CHECK_EQ_U64(r.object_size, DATA_N);
    zg_http_req_clear(&r);
    faults(c, "");
    zg_http_client_free(c2);

    /* a server that stops sending: a timeout within bounded time */
    zg_http_client *c3 = client(1, 300);
    faults(c, "{'rules':[{'path_re':'/data$','kind':'stall','delay_s':30}]}");
    double t0 = now_s();
    r = range("data", 0, 100000, 0, out);
    run1(c3, &r);
    double dt = now_s() - t0;
    CHECK_MSG(r.status == ZGPU_ERR_IO && r.attempts == 2 && has(r.error, "timed out") && dt < 3, "%s (%.2f s)",
              r.error, dt);
    show(&r);
    zg_http_req_clear(&r);
    /* slow but within the timeout: fine */
    faults(c, "{'rules':[{'path_re':'/small$','kind':'slow','delay_s':0.1}]}");
    r = req(ZG_HTTP_GET, "small");
    run1(c3, &r);
    CHECK(r.status == ZGPU_OK && r.attempts == 1 && r.body.size == SMALL_N);
    zg_http_req_clear(&r);
    faults(c, "");
    zg_http_client_free(c3);

    /* nobody listening */
    zg_http_client *c4 = client(1, 0);
    r = req(ZG_HTTP_GET, "x");
    r.url = "http://127.0.0.1:1/x";
    run1(c4, &r);
    CHECK_MSG(r.status == ZGPU_ERR_IO && r.attempts == 2 && has(r.error, "cannot connect"), "%s", r.error);
    show(&r);
    zg_http_req_clear(&r);
    zg_http_client_free(c4);
    free(out);
}

/* ---- many at once ---- */

enum { MANY = 500 };

static uint64_t rnd(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* MANY range GETs (some of them suffixes) in one run; returns how many came back wrong. */
static int many(zg_http_client *c, uint64_t seed) {
    zg_http_req *rs = calloc(MANY, sizeof *rs);
    uint8_t *buf = malloc((size_t)MANY * 8192);
    if (!rs || !buf) return MANY;
    /* the batch's own URL: url()'s round-robin slots are shared, and threads running batches at once rewrote a
     * slot while the client read it ("no URL") */
    char data_url[256];
    snprintf(data_url, sizeof data_url, "%s/data", base);
    for (int i = 0; i < MANY; i++) {
        uint64_t len = 1 + rnd(&seed) % 8192, off = rnd(&seed) % (DATA_N - len + 1);
        rs[i] = range_url(data_url, off, len, i % 10 == 9, buf + (size_t)i * 8192);
    }
    int bad = zg_http_run(c, rs, MANY) != ZGPU_OK ? MANY : 0;
    for (int i = 0; i < MANY && !bad; i++) {
        zg_http_req *r = &rs[i];
        const uint8_t *want = data + (r->range_suffix ? DATA_N - r->range_length : r->range_offset);
        if (r->status != ZGPU_OK || r->received != r->range_length || memcmp(r->out, want, r->range_length)) {
            if (!bad) fprintf(stderr, "request %d: %s\n", i, r->error);
            bad++;
        }
        zg_http_req_clear(r);
    }
    free(rs);
    free(buf);
    return bad;
}

typedef struct worker {
    zg_http_client *c;
    uint64_t seed;
    int bad;
} worker;

static void *many_thread(void *arg) {
    worker *w = arg;
    for (int k = 0; k < 2; k++) w->bad += many(w->c, w->seed + (uint64_t)k);
    return NULL;
}

static void test_many(void) {
    /* Reuse, measured where it does not depend on the scheduler: one thread (threads = 1) keeps 4 requests in
     * flight over HTTP/1.1, so the first batch opens exactly 4 connections (none is idle yet) and the second,
     * finding those 4 idle in the client's cache, opens none. */
    zg_http_client_options o1;
    zg_http_client_options_init(&o1);
    o1.threads = 1;
    o1.max_host_connections = 4;
    o1.max_retries = 0;
    zg_http_client *c1 = NULL;
    CHECK_OK(zg_http_client_create(&o1, &c1));
    if (c1) {
        zg_http_stats a0 = stats(c1);
        CHECK_EQ_U64(many(c1, 42ull), 0);
        zg_http_stats a1 = stats(c1);
        CHECK_EQ_U64(many(c1, 43ull), 0);
        zg_http_stats a2 = stats(c1);
        printf("one thread, 4 in flight: %" PRIu64 " connections for %d range GETs, %" PRIu64 " more for %d more\n",
               a1.connections_opened - a0.connections_opened, MANY, a2.connections_opened - a1.connections_opened,
               MANY);
        CHECK_EQ_U64(a1.connections_opened - a0.connections_opened, 4);
        CHECK_EQ_U64(a2.connections_opened - a1.connections_opened, 0);
        CHECK_EQ_U64(a2.requests - a0.requests, 2 * MANY);
        zg_http_client_free(c1);
    }

    /* The default client: a batch shared by 4 threads, each keeping 4 requests in flight */
    zg_http_client *c = client(0, 0);
    zg_http_stats s0 = stats(c);
    double t0 = now_s();
    CHECK_EQ_U64(many(c, 88172645463325252ull), 0);
    double dt = now_s() - t0;
    zg_http_stats s1 = stats(c);
    uint64_t conns = s1.connections_opened - s0.connections_opened;
    printf("%d range GETs in one run: %.0f ms over %" PRIu64 " connections\n", MANY, dt * 1e3, conns);
    CHECK_MSG(conns >= 1 && conns <= 16, "%" PRIu64 " connections", conns);
    CHECK_EQ_U64(s1.requests - s0.requests, MANY);
    CHECK_EQ_U64(s1.attempts - s0.attempts, MANY);
    /* A second batch reuses the first one's connections, so the two together open no more than the 16 that
     * one batch keeps in flight (and 2 to spare). Not "the second opens at most 2": how many the first opens
     * depends on the scheduler. A thread that starts late (a loaded machine) finds the connections of a part
     * that has ended idle and takes them, so the first batch may open only 12 of the 16, and a second batch
     * whose threads do run together then opens the other 4. */
    CHECK_EQ_U64(many(c, 1234567ull), 0);
    zg_http_stats s2 = stats(c);
    CHECK_MSG(s2.connections_opened - s0.connections_opened <= 16 + 2,
              "%" PRIu64 " connections for two batches, %" PRIu64 " of them for the second",
              s2.connections_opened - s0.connections_opened, s2.connections_opened - s1.connections_opened);
    printf("a second run of %d: %" PRIu64 " new connections\n", MANY, s2.connections_opened - s1.connections_opened);

    /* four threads' batches on one client at once (the shared connection cache under its locks) */
    worker w[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){c, 1000 + (uint64_t)i * 77, 0};
        pthread_create(&th[i], NULL, many_thread, &w[i]);
    }
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        bad += w[i].bad;
    }
    CHECK_EQ_U64(bad, 0);
    zg_http_stats s3 = stats(c);
    printf("4 threads x 2 x %d range GETs: %" PRIu64 " connections opened, %" PRIu64 " MB received in all\n", MANY,
           s3.connections_opened - s2.connections_opened, s3.bytes_received >> 20);
    CHECK_EQ_U64(s3.retries, 0);
    zg_http_client_free(c);
}

/* ---- merging ranges ---- */

static void test_merge(void) {
    static const struct {
        size_t n;
        uint64_t off[6], len[6], gap, span, alone;
        size_t n_groups;
        uint32_t groups[6];
        uint64_t goff[6], glen[6];
    } cases[] = {
        {0, {0}, {0}, 10, 100, 1000, 0, {0}, {0}, {0}},
        {1, {5}, {10}, 0, 0, 1000, 1, {0}, {5}, {10}},                                /* alone, even past max_span */
        {3, {0, 10, 20}, {10, 10, 10}, 0, 1000, 1000, 1, {0, 0, 0}, {0}, {30}},       /* adjacent */
        {3, {20, 0, 10}, {10, 10, 10}, 0, 1000, 1000, 1, {0, 0, 0}, {0}, {30}},       /* any order */
        {3, {0, 15, 40}, {10, 10, 10}, 5, 1000, 1000, 2, {0, 0, 1}, {0, 40}, {25, 10}}, /* gap 5 joins, 15 does not */
        {4, {0, 10, 20, 30}, {10, 10, 10, 10}, 0, 20, 1000, 2, {0, 0, 1, 1}, {0, 20}, {20, 20}}, /* max_span */
        {3, {0, 5, 100}, {50, 10, 1}, 0, 1000, 1000, 2, {0, 0, 1}, {0, 100}, {50, 1}}, /* one inside another */
        {3, {100, 0, 100}, {5, 3, 10}, 0, 1000, 1000, 2, {1, 0, 1}, {0, 100}, {3, 10}}, /* equal offsets */
        {2, {UINT64_MAX - 10, 0}, {10, 1}, UINT64_MAX, UINT64_MAX, UINT64_MAX, 1, {0, 0}, {0}, {UINT64_MAX - 0}},
        /* alone_min 20: a long range keeps to itself, before or after short ones, which still join each other */
        {5, {0, 10, 20, 50, 60}, {10, 10, 30, 10, 10}, 0, 1000, 20, 3, {0, 0, 1, 2, 2}, {0, 20, 50}, {20, 30, 20}},
        {3, {0, 40, 80}, {40, 40, 40}, 0, 1000, 40, 3, {0, 1, 2}, {0, 40, 80}, {40, 40, 40}}, /* each long: apart */
        {2, {0, 30}, {40, 5}, 0, 1000, 20, 1, {0, 0}, {0}, {40}},                     /* inside a long one: shared */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        uint32_t groups[6] = {0};
        uint64_t goff[6] = {0}, glen[6] = {0};
        size_t g = zg_http_merge_ranges(cases[k].n, cases[k].off, cases[k].len, cases[k].gap, cases[k].span,
                                        cases[k].alone, groups, goff, glen);
        int ok = g == cases[k].n_groups;
        for (size_t i = 0; ok && i < cases[k].n; i++) ok = groups[i] == cases[k].groups[i];
        for (size_t i = 0; ok && i < g; i++) ok = goff[i] == cases[k].goff[i] && glen[i] == cases[k].glen[i];
        CHECK_MSG(ok, "merge case %zu: %zu groups", k, g);
    }
}

/* When a chunk fetched in part (head, then span) pays for its second round trip: the bytes it saves against the
 * wait for a first byte, at the measured rate or an object store's guessed one. */
static void test_part_fetch_rule(void) {
    CHECK(zg_plan_part_fetch_pays(2.5e6, 1e-4, 2e9));   /* loopback: 1.25 ms saved, 0.1 ms to wait */
    CHECK(!zg_plan_part_fetch_pays(0.35e6, 0.03, 0));   /* S3, a small chunk: 3.5 ms at 100 MB/s against 30 */
    CHECK(zg_plan_part_fetch_pays(8e6, 0.03, 8e7));     /* S3, a large chunk: 100 ms against 30 */
    CHECK(!zg_plan_part_fetch_pays(0, 1e-6, 1e9));      /* nothing saved */
    CHECK(zg_plan_part_fetch_pays(1, -1, 0));           /* nothing measured yet: no wait assumed */
}

/* The link a client's answers have shown: a first byte's wait on loopback, well under a second, and the rate of a
 * 1 MiB body. A new client knows nothing yet. */
static void test_link(zg_http_client *c) {
    zg_http_req r = req(ZG_HTTP_GET, "data");
    run1(c, &r);
    CHECK(r.status == ZGPU_OK && r.body.size == DATA_N);
    zg_http_req_clear(&r);
    double wait = 0, rate = 0;
    zg_http_client_link(c, &wait, &rate);
    CHECK_MSG(wait > 0 && wait < 1 && rate > 1e6, "link: wait %g s, rate %g B/s", wait, rate);
    zg_http_client *fresh = client(0, 0);
    zg_http_client_link(fresh, &wait, &rate);
    CHECK(wait == -1 && rate == 0);
    zg_http_client_free(fresh);
}

int main(void) {
    test_merge();
    test_part_fetch_rule();
    if (system("python3 -c '' >/dev/null 2>&1") != 0) {
        printf("%d passed, %d failed (merge)\n", zt_pass, zt_fail);
        TEST_SKIP("no python3");
    }
    signal(SIGPIPE, SIG_IGN);
    snprintf(root, sizeof root, "/tmp/zgpu-http-XXXXXX");
    if (!mkdtemp(root)) {
        root[0] = 0;
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    atexit(cleanup);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < DATA_N; i++) data[i] = (uint8_t)(rnd(&s) >> 32);
    for (size_t i = 0; i < SMALL_N; i++) small[i] = (uint8_t)('a' + i % 26);
    CHECK(write_file("data", data, DATA_N) && write_file("small", small, SMALL_N) && write_file("empty", "", 0));
    if (!start_server()) {
        CHECK(0);
        TEST_MAIN_END();
    }
    zg_http_client *c = client(0, 0);
    double t0 = now_s();
    test_basic(c);
    test_link(c);
    test_status_faults(c);
    test_body_faults(c);
    test_many();
    printf("server: %" PRIu64 " GETs over %" PRIu64 " connections; whole test %.1f s\n", stat_of(c, "GET"),
           stat_of(c, "connections"), now_s() - t0);
    zg_http_client_free(c);
    TEST_MAIN_END();
}
