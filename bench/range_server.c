/* zgpu_range_server: a small static file server over HTTP/1.1 with byte ranges, for benchmarks and tests only
 * (not a production server: no TLS, no auth, no access control beyond refusing `..`).
 *
 * The remote-read benchmark (bench/bench_remote.py) and tests/remote need a server that is not the bottleneck:
 * the Python test server and moto answer a few hundred to a few thousand requests/s, so a benchmark against them
 * measures the servers, not the readers. This one answers GET and HEAD for the files under --root with
 * keep-alive, single byte ranges (bytes=a-b, a-, -n -> 206; unsatisfiable -> 416) and sendfile(2) bodies, on a
 * pool of threads with blocking I/O: one thread per connection at a time, --threads of them kept ready, and a
 * thread of its own for a connection that finds them all busy (so idle keep-alive connections of one client never
 * hold up another's).
 *
 * --s3 makes it a read-only, path-style S3 endpoint over the same tree: /bucket/key is ROOT/bucket/key (a bucket
 * is a subdirectory), query parameters and auth headers are ignored (any credentials work), errors are S3 XML
 * (NoSuchKey, NoSuchBucket, ...), answers carry x-amz-request-id, and GET /bucket?list-type=2 (or any GET of a
 * bucket) is a ListObjectsV2 over the directory tree (prefix, delimiter, max-keys, start-after,
 * continuation-token, encoding-type=url). HEAD /bucket answers 200 for a bucket.
 *
 * Counters: GET /__stats__ -> {"GET": n, "HEAD": n, "connections": n} (requests other than /__stats__ itself);
 * DELETE /__stats__ resets them.
 *
 * Usage: zgpu_range_server --root DIR [--port N] [--host 127.0.0.1] [--threads T] [--s3] [--ignore-stdin]
 * It prints "PORT <n>" on stdout once listening (port 0: any free port), then serves until SIGTERM or SIGINT, or
 * until its stdin reaches EOF (so a parent that dies takes the server along) unless --ignore-stdin. */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define HEADER_MAX (16 * 1024)  /* the request line and headers: more is 431 */
#define SMALL_BODY (64 * 1024)  /* bodies up to this size go out with the headers in one send */
#define IDLE_TIMEOUT_S 30       /* a keep-alive connection idle this long is closed; also the send timeout */
#define THREAD_STACK (256 * 1024)
#define LIST_MAX_KEYS 1000

/* ---- settings and shared state ------------------------------------------------------------------------------ */
static const char *g_root;
static int g_s3;
static atomic_uint_fast64_t g_gets, g_heads, g_conns, g_request_ids;

/* the queue of accepted connections for the ready threads */
#define QUEUE_CAP 4096
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static int q_fds[QUEUE_CAP];
static size_t q_head, q_len, q_idle; /* q_idle: ready threads waiting for a connection */

/* ---- small helpers -------------------------------------------------------------------------------------------- */
/* a growable byte buffer (listing bodies) */
typedef struct {
  char *p;
  size_t n, cap;
  int failed;
} buf_t;

static void buf_add(buf_t *b, const char *s, size_t n) {
  if (b->failed)
    return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->failed = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void buf_str(buf_t *b, const char *s) { buf_add(b, s, strlen(s)); }

static void buf_fmt(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_fmt(buf_t *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof tmp) {
    b->failed = 1;
    return;
  }
  buf_add(b, tmp, (size_t)n);
}

/* XML text: & < > " ' escaped */
static void buf_xml(buf_t *b, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '&': buf_str(b, "&amp;"); break;
    case '<': buf_str(b, "&lt;"); break;
    case '>': buf_str(b, "&gt;"); break;
    case '"': buf_str(b, "&quot;"); break;
    case '\'': buf_str(b, "&apos;"); break;
    default: buf_add(b, s, 1);
    }
  }
}

/* a key percent-encoded as S3 does for encoding-type=url (unreserved characters and '/' kept) */
static void buf_urlenc(buf_t *b, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      buf_add(b, s, 1);
    } else {
      char e[3] = {'%', hex[c >> 4], hex[c & 15]};
      buf_add(b, e, 3);
    }
  }
}

static int hexval(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Percent-decodes src[0, n) into dst (room for n + 1 bytes); plus_space: '+' is a space (query strings).
 * -1 for a bad escape or a decoded NUL. */
static int pct_decode(char *dst, const char *src, size_t n, int plus_space) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char c = src[i];
    if (c == '%') {
      if (i + 2 >= n)
        return -1;
      int h = hexval((unsigned char)src[i + 1]), l = hexval((unsigned char)src[i + 2]);
      if (h < 0 || l < 0)
        return -1;
      c = (char)(h * 16 + l);
      i += 2;
    } else if (c == '+' && plus_space) {
      c = ' ';
    }
    if (c == '\0')
      return -1;
    dst[o++] = c;
  }
  dst[o] = '\0';
  return 0;
}

static int send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR)
        continue;
      return -1; /* EAGAIN: the send timeout; EPIPE / ECONNRESET: the client left */
    }
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static void http_date(char *out, size_t cap, time_t t) {
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, cap, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static void iso_date(char *out, size_t cap, time_t t) {
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, cap, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

static void etag_of(char *out, size_t cap, const struct stat *st) {
  snprintf(out, cap, "\"%llx-%llx\"", (unsigned long long)st->st_size,
           (unsigned long long)st->st_mtim.tv_sec * 1000000000ull + (unsigned long long)st->st_mtim.tv_nsec);
}

/* ---- a request ------------------------------------------------------------------------------------------------ */
typedef struct {
  int fd;
  char in[HEADER_MAX + 1]; /* what has been received and not yet consumed */
  size_t in_len;
  char out[SMALL_BODY + 4096]; /* headers, and a small body after them */
  char path[PATH_MAX];         /* the decoded request path */
  char query[HEADER_MAX + 1];  /* the raw query string (without '?'), possibly empty */
  /* of the current request */
  int head, keep_alive;
  const char *range, *if_match, *if_none_match;
  unsigned long long request_id;
} conn_t;

/* The response's common headers into c->out: status line, Date, Server, Connection, and in S3 mode
 * x-amz-request-id. Returns the length written. */
static size_t start_response(conn_t *c, int code, const char *reason) {
  char date[64];
  http_date(date, sizeof date, time(NULL));
  int n = snprintf(c->out, sizeof c->out, "HTTP/1.1 %d %s\r\nDate: %s\r\nServer: zgpu-range-server\r\n%s", code,
                   reason, date, c->keep_alive ? "" : "Connection: close\r\n");
  if (g_s3)
    n += snprintf(c->out + n, sizeof c->out - (size_t)n, "x-amz-request-id: %016llX\r\nx-amz-id-2: %016llX\r\n",
                  c->request_id, c->request_id);
  return (size_t)n;
}

/* A whole answer with a small body from memory (errors, stats, listings up to the buffer; larger bodies are
 * sent after the headers). extra: more header lines, each ending in CRLF, or NULL. */
static int respond(conn_t *c, int code, const char *reason, const char *type, const char *extra, const char *body,
                   size_t body_len) {
  size_t n = start_response(c, code, reason);
  n += (size_t)snprintf(c->out + n, sizeof c->out - n, "%s%s%s%sContent-Length: %zu\r\n\r\n", extra ? extra : "",
                        type ? "Content-Type: " : "", type ? type : "", type ? "\r\n" : "", body_len);
  if (!c->head && body_len > 0 && n + body_len <= sizeof c->out) {
    memcpy(c->out + n, body, body_len);
    return send_all(c->fd, c->out, n + body_len);
  }
  if (send_all(c->fd, c->out, n) < 0)
    return -1;
  return c->head || body_len == 0 ? 0 : send_all(c->fd, body, body_len);
}

/* An error answer: plain text, or in S3 mode S3's XML <Error>. resource: the key or bucket it is about. */
static int respond_error(conn_t *c, int code, const char *reason, const char *s3_code, const char *message,
                         const char *resource) {
  if (!g_s3) {
    char body[256];
    int n = snprintf(body, sizeof body, "%d %s: %s\n", code, reason, message);
    return respond(c, code, reason, "text/plain", NULL, body, (size_t)n);
  }
  buf_t b = {0};
  buf_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>");
  buf_str(&b, s3_code);
  buf_str(&b, "</Code><Message>");
  buf_xml(&b, message);
  buf_str(&b, "</Message>");
  if (resource && strcmp(s3_code, "NoSuchKey") == 0 && resource[0] == '/' && strchr(resource + 1, '/')) {
    buf_str(&b, "<Key>"); /* the key without its bucket, as S3 says it */
    buf_xml(&b, strchr(resource + 1, '/') + 1);
    buf_str(&b, "</Key>");
  }
  if (resource) {
    buf_str(&b, "<Resource>");
    buf_xml(&b, resource);
    buf_str(&b, "</Resource>");
  }
  buf_fmt(&b, "<RequestId>%016llX</RequestId></Error>", c->request_id);
  int rc = b.failed ? -1 : respond(c, code, reason, "application/xml", NULL, b.p, b.n);
  free(b.p);
  return rc;
}

/* ---- ranges ------------------------------------------------------------------------------------------------ */
/* Parses a decimal number of digits [p, *end); -1 if there are none or it overflows. */
static long long parse_num(const char *p, const char **end) {
  long long v = 0;
  const char *s = p;
  while (*p >= '0' && *p <= '9') {
    if (v > (LLONG_MAX - 9) / 10)
      return -1;
    v = v * 10 + (*p - '0');
    p++;
  }
  *end = p;
  return p == s ? -1 : v;
}

/* The Range header against a file of `total` bytes: 0 = no (usable) range, the whole file; 1 = [*a, *b]; -1 =
 * unsatisfiable (416). Several ranges, another unit or a malformed value: the whole file. */
static int parse_range(const char *h, long long total, long long *a, long long *b) {
  if (!h)
    return 0;
  while (*h == ' ' || *h == '\t')
    h++;
  if (strncasecmp(h, "bytes=", 6) != 0)
    return 0;
  h += 6;
  while (*h == ' ' || *h == '\t')
    h++;
  if (strchr(h, ','))
    return 0; /* multiple ranges: not supported, the whole file */
  const char *e;
  long long first = -1, last = -1;
  if (*h == '-') {
    last = parse_num(h + 1, &e);
    if (last < 0)
      return 0;
  } else {
    first = parse_num(h, &e);
    if (first < 0 || *e != '-')
      return 0;
    e++;
    if (*e >= '0' && *e <= '9') {
      last = parse_num(e, &e);
      if (last < 0)
        return 0;
    }
  }
  while (*e == ' ' || *e == '\t')
    e++;
  if (*e)
    return 0;
  if (first < 0) { /* suffix: the last `last` bytes */
    if (last == 0 || total == 0)
      return -1;
    *a = last >= total ? 0 : total - last;
    *b = total - 1;
    return 1;
  }
  if (first >= total || (last >= 0 && last < first))
    return -1;
  *a = first;
  *b = last < 0 || last >= total ? total - 1 : last;
  return 1;
}

/* ETag lists of If-Match / If-None-Match: does `list` name `etag` (or "*")? */
static int etag_listed(const char *list, const char *etag) {
  size_t n = strlen(etag);
  for (const char *p = list; *p;) {
    while (*p == ' ' || *p == ',' || *p == '\t')
      p++;
    if (*p == '*')
      return 1;
    if (strncmp(p, "W/", 2) == 0)
      p += 2;
    if (strncmp(p, etag, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' ' || p[n] == '\t'))
      return 1;
    while (*p && *p != ',')
      p++;
  }
  return 0;
}

/* ---- files ---------------------------------------------------------------------------------------------------- */
/* Sends [a, a + n) of fd after the headers already in c->out[0, hlen). */
static int send_body(conn_t *c, size_t hlen, int fd, long long a, long long n) {
  if (n <= SMALL_BODY && hlen + (size_t)n <= sizeof c->out) {
    size_t got = 0;
    while (got < (size_t)n) {
      ssize_t k = pread(fd, c->out + hlen + got, (size_t)n - got, a + (off_t)got);
      if (k < 0 && errno == EINTR)
        continue;
      if (k <= 0)
        return -1; /* the file shrank: the client sees a short body and a closed connection */
      got += (size_t)k;
    }
    return send_all(c->fd, c->out, hlen + (size_t)n);
  }
  if (send_all(c->fd, c->out, hlen) < 0)
    return -1;
  off_t off = a;
  while (n > 0) {
    size_t step = n > (1ll << 30) ? (size_t)1 << 30 : (size_t)n;
    ssize_t k = sendfile(c->fd, fd, &off, step);
    if (k < 0) {
      if (errno == EINTR)
        continue;
      return -1; /* EAGAIN here is the send timeout (blocking socket); a reset: close */
    }
    if (k == 0)
      return -1; /* the file shrank */
    n -= k;
  }
  return 0;
}

static int serve_file(conn_t *c, int fd, const struct stat *st) {
  char etag[64], lm[64], hdr[512];
  etag_of(etag, sizeof etag, st);
  http_date(lm, sizeof lm, st->st_mtim.tv_sec);
  long long total = (long long)st->st_size, a = 0, b = total - 1;
  if (c->if_match && !etag_listed(c->if_match, etag))
    return respond_error(c, 412, "Precondition Failed", "PreconditionFailed",
                         "At least one of the preconditions you specified did not hold", c->path);
  if (c->if_none_match && etag_listed(c->if_none_match, etag)) {
    snprintf(hdr, sizeof hdr, "ETag: %s\r\nLast-Modified: %s\r\n", etag, lm);
    size_t n = start_response(c, 304, "Not Modified");
    n += (size_t)snprintf(c->out + n, sizeof c->out - n, "%s\r\n", hdr);
    return send_all(c->fd, c->out, n);
  }
  int r = parse_range(c->range, total, &a, &b);
  if (r < 0) {
    snprintf(hdr, sizeof hdr, "Content-Range: bytes */%lld\r\nAccept-Ranges: bytes\r\nETag: %s\r\n", total, etag);
    if (!g_s3)
      return respond(c, 416, "Range Not Satisfiable", NULL, hdr, "", 0);
    /* S3's body for it (InvalidRange), with the same headers */
    buf_t x = {0};
    buf_fmt(&x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InvalidRange</Code><Message>The requested "
                "range is not satisfiable</Message><RangeRequested>");
    buf_xml(&x, c->range);
    buf_fmt(&x, "</RangeRequested><ActualObjectSize>%lld</ActualObjectSize><RequestId>%016llX</RequestId></Error>",
            total, c->request_id);
    int rc = x.failed ? -1 : respond(c, 416, "Requested Range Not Satisfiable", "application/xml", hdr, x.p, x.n);
    free(x.p);
    return rc;
  }
  long long n = r ? b - a + 1 : total;
  size_t h = start_response(c, r ? 206 : 200, r ? "Partial Content" : "OK");
  if (r)
    h += (size_t)snprintf(c->out + h, sizeof c->out - h, "Content-Range: bytes %lld-%lld/%lld\r\n", a, b, total);
  h += (size_t)snprintf(c->out + h, sizeof c->out - h,
                        "Content-Type: application/octet-stream\r\nAccept-Ranges: bytes\r\nETag: %s\r\n"
                        "Last-Modified: %s\r\nContent-Length: %lld\r\n\r\n",
                        etag, lm, n);
  if (c->head || n == 0)
    return send_all(c->fd, c->out, h);
  return send_body(c, h, fd, r ? a : 0, n);
}

/* ---- S3 listing (ListObjectsV2) ------------------------------------------------------------------------------ */
typedef struct {
  char *key;
  long long size;
  time_t mtime;
  int is_prefix;
} entry_t;

typedef struct {
  entry_t *v;
  size_t n, cap;
  int failed;
} entries_t;

static void entries_add(entries_t *e, const char *key, long long size, time_t mtime, int is_prefix) {
  if (e->failed)
    return;
  if (e->n == e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 64;
    entry_t *v = realloc(e->v, cap * sizeof *v);
    if (!v) {
      e->failed = 1;
      return;
    }
    e->v = v;
    e->cap = cap;
  }
  char *k = strdup(key);
  if (!k) {
    e->failed = 1;
    return;
  }
  e->v[e->n++] = (entry_t){k, size, mtime, is_prefix};
}

static int entry_cmp(const void *x, const void *y) {
  return strcmp(((const entry_t *)x)->key, ((const entry_t *)y)->key);
}

/* Adds the objects under directory `dir` (whose keys start with `keypfx`, "" or ending in '/') that start with
 * `prefix`; with a delimiter, a subdirectory is one common prefix. depth bounds symlink loops. */
static void list_dir(entries_t *out, const char *dir, const char *keypfx, const char *prefix, int delim, int depth) {
  if (depth > 64 || out->failed)
    return;
  DIR *d = opendir(dir);
  if (!d)
    return;
  size_t pl = strlen(prefix);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    const char *nm = de->d_name;
    if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
      continue;
    char key[PATH_MAX], full[PATH_MAX];
    if ((size_t)snprintf(key, sizeof key, "%s%s", keypfx, nm) >= sizeof key - 1 ||
        (size_t)snprintf(full, sizeof full, "%s/%s", dir, nm) >= sizeof full)
      continue;
    struct stat st;
    if (stat(full, &st) != 0)
      continue;
    size_t kl = strlen(key);
    if (S_ISDIR(st.st_mode)) {
      key[kl] = '/';
      key[kl + 1] = '\0';
      size_t m = kl + 1 < pl ? kl + 1 : pl;
      if (strncmp(key, prefix, m) != 0)
        continue; /* neither a prefix of the prefix nor under it */
      if (delim && kl + 1 > pl)
        entries_add(out, key, 0, 0, 1); /* a common prefix: the first '/' after the prefix */
      else
        list_dir(out, full, key, prefix, delim, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      if (kl >= pl && strncmp(key, prefix, pl) == 0)
        entries_add(out, key, (long long)st.st_size, st.st_mtim.tv_sec, 0);
    }
  }
  closedir(d);
}

/* The value of query parameter `name` percent-decoded into out (cap bytes); 1 if present. */
static int query_param(const char *q, const char *name, char *out, size_t cap) {
  size_t nl = strlen(name);
  for (const char *p = q; p && *p;) {
    const char *amp = strchr(p, '&');
    size_t len = amp ? (size_t)(amp - p) : strlen(p);
    if (len >= nl && strncmp(p, name, nl) == 0 && (len == nl || p[nl] == '=')) {
      const char *v = len == nl ? p + nl : p + nl + 1;
      size_t vl = len == nl ? 0 : len - nl - 1;
      if (vl + 1 > cap || pct_decode(out, v, vl, 1) != 0)
        return -1;
      return 1;
    }
    p = amp ? amp + 1 : NULL;
  }
  return 0;
}

static int serve_list(conn_t *c, const char *bucket, const char *bucket_dir) {
  char prefix[PATH_MAX], delim[16], after[PATH_MAX], token[PATH_MAX], enc[16], mk[32];
  if (query_param(c->query, "prefix", prefix, sizeof prefix) <= 0)
    prefix[0] = '\0';
  if (query_param(c->query, "delimiter", delim, sizeof delim) <= 0)
    delim[0] = '\0';
  if (query_param(c->query, "start-after", after, sizeof after) <= 0)
    after[0] = '\0';
  int has_token = query_param(c->query, "continuation-token", token, sizeof token) > 0;
  if (!has_token)
    token[0] = '\0';
  if (query_param(c->query, "encoding-type", enc, sizeof enc) <= 0)
    enc[0] = '\0';
  long max_keys = LIST_MAX_KEYS;
  if (query_param(c->query, "max-keys", mk, sizeof mk) > 0) {
    char *e;
    max_keys = strtol(mk, &e, 10);
    if (*e || max_keys < 0)
      return respond_error(c, 400, "Bad Request", "InvalidArgument", "Invalid max-keys", bucket);
    if (max_keys > LIST_MAX_KEYS)
      max_keys = LIST_MAX_KEYS;
  }
  if (delim[0] && strcmp(delim, "/") != 0)
    return respond_error(c, 400, "Bad Request", "InvalidArgument", "only the delimiter / is supported", bucket);
  if (strstr(prefix, "..") && (strncmp(prefix, "..", 2) == 0 || strstr(prefix, "/..")))
    return respond_error(c, 400, "Bad Request", "InvalidArgument", "'..' in the prefix", bucket);

  /* start at the deepest directory the prefix names in full */
  char dir[PATH_MAX], keypfx[PATH_MAX];
  const char *slash = strrchr(prefix, '/');
  size_t dl = slash ? (size_t)(slash - prefix) + 1 : 0;
  memcpy(keypfx, prefix, dl);
  keypfx[dl] = '\0';
  if ((size_t)snprintf(dir, sizeof dir, "%s/%s", bucket_dir, keypfx) >= sizeof dir)
    return respond_error(c, 400, "Bad Request", "InvalidArgument", "prefix too long", bucket);
  entries_t es = {0};
  list_dir(&es, dir, keypfx, prefix, delim[0] != 0, 0);
  if (es.n > 1)
    qsort(es.v, es.n, sizeof *es.v, entry_cmp);
  const char *from = has_token ? token : after; /* keys after this one */
  size_t i = 0;
  if (from[0])
    while (i < es.n && strcmp(es.v[i].key, from) <= 0)
      i++;
  size_t end = i + (size_t)max_keys < es.n ? i + (size_t)max_keys : es.n;
  int urlenc = strcmp(enc, "url") == 0;
  void (*put)(buf_t *, const char *) = urlenc ? buf_urlenc : buf_xml;

  buf_t b = {0};
  buf_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
              "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>");
  buf_xml(&b, bucket);
  buf_str(&b, "</Name><Prefix>");
  put(&b, prefix);
  buf_fmt(&b, "</Prefix><KeyCount>%zu</KeyCount><MaxKeys>%ld</MaxKeys>", end - i, max_keys);
  if (delim[0]) {
    buf_str(&b, "<Delimiter>");
    put(&b, delim);
    buf_str(&b, "</Delimiter>");
  }
  if (urlenc)
    buf_str(&b, "<EncodingType>url</EncodingType>");
  if (has_token) {
    buf_str(&b, "<ContinuationToken>");
    buf_xml(&b, token);
    buf_str(&b, "</ContinuationToken>");
  }
  if (after[0]) {
    buf_str(&b, "<StartAfter>");
    put(&b, after);
    buf_str(&b, "</StartAfter>");
  }
  buf_str(&b, end < es.n ? "<IsTruncated>true</IsTruncated>" : "<IsTruncated>false</IsTruncated>");
  if (end < es.n && end > i) {
    buf_str(&b, "<NextContinuationToken>");
    buf_xml(&b, es.v[end - 1].key);
    buf_str(&b, "</NextContinuationToken>");
  }
  for (size_t k = i; k < end; k++) {
    const entry_t *e = &es.v[k];
    if (e->is_prefix) {
      buf_str(&b, "<CommonPrefixes><Prefix>");
      put(&b, e->key);
      buf_str(&b, "</Prefix></CommonPrefixes>");
      continue;
    }
    char date[64];
    iso_date(date, sizeof date, e->mtime);
    buf_str(&b, "<Contents><Key>");
    put(&b, e->key);
    buf_fmt(&b, "</Key><LastModified>%s</LastModified><ETag>&quot;%llx&quot;</ETag><Size>%lld</Size>"
                "<StorageClass>STANDARD</StorageClass></Contents>",
            date, (unsigned long long)e->size ^ ((unsigned long long)e->mtime << 20), e->size);
  }
  buf_str(&b, "</ListBucketResult>");
  for (size_t k = 0; k < es.n; k++)
    free(es.v[k].key);
  free(es.v);
  int rc;
  if (b.failed || es.failed)
    rc = respond_error(c, 500, "Internal Server Error", "InternalError", "out of memory", bucket);
  else
    rc = respond(c, 200, "OK", "application/xml", NULL, b.p, b.n);
  free(b.p);
  return rc;
}

/* ---- dispatch ------------------------------------------------------------------------------------------------- */
static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Answers one GET or HEAD of c->path (decoded, starting with '/'). */
static int serve_path(conn_t *c) {
  /* refuse `..` segments (the path is decoded: %2e%2e too) */
  for (const char *p = c->path; (p = strstr(p, "..")) != NULL; p += 2) {
    if ((p == c->path || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
      return respond_error(c, 400, "Bad Request", "InvalidURI", "'..' in the path", c->path);
  }
  char full[PATH_MAX];
  if ((size_t)snprintf(full, sizeof full, "%s%s", g_root, c->path) >= sizeof full)
    return respond_error(c, 414, "URI Too Long", "KeyTooLongError", "the path is too long", c->path);

  if (g_s3) {
    /* /bucket or /bucket/: the bucket itself (HEAD: exists?, GET: ListObjectsV2) */
    const char *b = c->path + 1, *slash = strchr(b, '/');
    if (*b == '\0')
      return respond_error(c, 400, "Bad Request", "InvalidRequest", "no bucket in the path (path-style only)",
                           "/");
    if (!slash || slash[1] == '\0') {
      char bucket[256];
      size_t bl = slash ? (size_t)(slash - b) : strlen(b);
      if (bl >= sizeof bucket)
        return respond_error(c, 400, "Bad Request", "InvalidBucketName", "bucket name too long", NULL);
      memcpy(bucket, b, bl);
      bucket[bl] = '\0';
      char bdir[PATH_MAX];
      snprintf(bdir, sizeof bdir, "%s/%s", g_root, bucket);
      if (!is_dir(bdir))
        return respond_error(c, 404, "Not Found", "NoSuchBucket", "The specified bucket does not exist", bucket);
      if (c->head)
        return respond(c, 200, "OK", NULL, "x-amz-bucket-region: us-east-1\r\n", "", 0);
      return serve_list(c, bucket, bdir);
    }
  }

  int fd = open(full, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    close(fd);
    fd = -1;
    errno = ENOENT;
  }
  if (fd < 0) {
    if (errno == EACCES)
      return respond_error(c, 403, "Forbidden", "AccessDenied", "Access Denied", c->path);
    if (g_s3) {
      const char *b = c->path + 1, *slash = strchr(b, '/');
      char bdir[PATH_MAX];
      snprintf(bdir, sizeof bdir, "%s/%.*s", g_root, (int)(slash - b), b);
      if (!is_dir(bdir))
        return respond_error(c, 404, "Not Found", "NoSuchBucket", "The specified bucket does not exist", c->path);
      return respond_error(c, 404, "Not Found", "NoSuchKey", "The specified key does not exist.", c->path);
    }
    return respond_error(c, 404, "Not Found", "NoSuchKey", "no such file", c->path);
  }
  int rc = serve_file(c, fd, &st);
  close(fd);
  return rc;
}

static int serve_stats(conn_t *c, int reset) {
  if (reset) {
    atomic_store(&g_gets, 0);
    atomic_store(&g_heads, 0);
    atomic_store(&g_conns, 0);
    return respond(c, 200, "OK", "application/json", NULL, "{}", 2);
  }
  char body[256];
  int n = snprintf(body, sizeof body, "{\"GET\": %" PRIuFAST64 ", \"HEAD\": %" PRIuFAST64
                   ", \"connections\": %" PRIuFAST64 "}",
                   atomic_load(&g_gets), atomic_load(&g_heads), atomic_load(&g_conns));
  return respond(c, 200, "OK", "application/json", NULL, body, (size_t)n);
}

/* Receives more bytes into c->in; 0 on EOF, an error or the idle timeout. */
static ssize_t recv_more(conn_t *c) {
  for (;;) {
    ssize_t k = recv(c->fd, c->in + c->in_len, HEADER_MAX - c->in_len, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return 0;
    c->in_len += (size_t)k;
    c->in[c->in_len] = '\0';
    return k;
  }
}

/* Reads and drops n bytes of request body (some may be in c->in already); -1 when the connection ends first. */
static int discard_body(conn_t *c, size_t consumed, unsigned long long n) {
  size_t have = c->in_len - consumed;
  if (n <= have) {
    memmove(c->in, c->in + consumed + n, have - (size_t)n);
    c->in_len = have - (size_t)n;
    return 0;
  }
  n -= have;
  c->in_len = 0;
  char tmp[16384];
  while (n > 0) {
    ssize_t k = recv(c->fd, tmp, n < sizeof tmp ? (size_t)n : sizeof tmp, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    n -= (unsigned long long)k;
  }
  return 0;
}

static int token_in(const char *v, const char *tok) {
  size_t n = strlen(tok);
  for (const char *p = v; *p;) {
    while (*p == ' ' || *p == ',' || *p == '\t')
      p++;
    if (strncasecmp(p, tok, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' ' || p[n] == '\t'))
      return 1;
    while (*p && *p != ',')
      p++;
  }
  return 0;
}

/* One request of the connection: 1 to go on (keep-alive), 0 to close. */
static int handle_request(conn_t *c) {
  /* the header section, up to the blank line */
  char *end;
  while ((end = strstr(c->in, "\r\n\r\n")) == NULL) {
    if (c->in_len >= HEADER_MAX) {
      c->keep_alive = 0;
      c->head = 0;
      respond_error(c, 431, "Request Header Fields Too Large", "RequestHeaderSectionTooLarge",
                    "the request's header section is over 16 KiB", NULL);
      return 0;
    }
    if (memchr(c->in, '\0', c->in_len))
      break; /* a NUL in the headers: malformed, below */
    if (recv_more(c) == 0)
      return 0; /* the client left, or the idle timeout */
  }
  c->request_id = atomic_fetch_add(&g_request_ids, 1) + 0x5EED0000ull;
  c->keep_alive = 0;
  c->head = 0;
  if (!end || memchr(c->in, '\0', (size_t)(end - c->in))) {
    respond_error(c, 400, "Bad Request", "BadRequest", "malformed request", NULL);
    return 0;
  }
  size_t consumed = (size_t)(end - c->in) + 4;
  *end = '\0';
  /* tolerate blank lines before the request line (RFC 9112 2.2) */
  char *line = c->in;
  while (line[0] == '\r' && line[1] == '\n')
    line += 2;
  char *eol = strstr(line, "\r\n");
  if (eol)
    *eol = '\0';
  /* METHOD SP target SP HTTP/1.x */
  char *sp1 = strchr(line, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
  if (!sp1 || !sp2 || sp1 == line || sp2 == sp1 + 1 || strchr(sp2 + 1, ' ') || strncmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
      !isdigit((unsigned char)sp2[8]) || sp2[9] != '\0') {
    respond_error(c, 400, "Bad Request", "BadRequest", "malformed request line", NULL);
    return 0;
  }
  *sp1 = *sp2 = '\0';
  const char *method = line, *target = sp1 + 1;
  int http10 = sp2[8] == '0';
  c->keep_alive = !http10;
  /* headers */
  c->range = c->if_match = c->if_none_match = NULL;
  const char *content_length = NULL, *transfer_encoding = NULL;
  for (char *h = eol ? eol + 2 : NULL; h && *h;) {
    char *next = strstr(h, "\r\n");
    if (next)
      *next = '\0';
    char *colon = strchr(h, ':');
    if (!colon || colon == h || h[0] == ' ' || h[0] == '\t') {
      c->keep_alive = 0;
      respond_error(c, 400, "Bad Request", "BadRequest", "malformed header line", NULL);
      return 0;
    }
    *colon = '\0';
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
      v++;
    char *ve = v + strlen(v);
    while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
      *--ve = '\0';
    if (strcasecmp(h, "range") == 0)
      c->range = v;
    else if (strcasecmp(h, "connection") == 0) {
      if (token_in(v, "close"))
        c->keep_alive = 0;
      else if (token_in(v, "keep-alive"))
        c->keep_alive = 1;
    } else if (strcasecmp(h, "content-length") == 0)
      content_length = v;
    else if (strcasecmp(h, "transfer-encoding") == 0)
      transfer_encoding = v;
    else if (strcasecmp(h, "if-match") == 0)
      c->if_match = v;
    else if (strcasecmp(h, "if-none-match") == 0)
      c->if_none_match = v;
    h = next ? next + 2 : NULL;
  }
  /* a request body: dropped (Content-Length), or the connection closes after the answer (chunked) */
  unsigned long long body = 0;
  if (transfer_encoding) {
    c->keep_alive = 0;
  } else if (content_length) {
    const char *e;
    long long n = parse_num(content_length, &e);
    if (n < 0 || *e) {
      c->keep_alive = 0;
      respond_error(c, 400, "Bad Request", "BadRequest", "bad Content-Length", NULL);
      return 0;
    }
    body = (unsigned long long)n;
  }
  int is_get = strcmp(method, "GET") == 0, is_head = strcmp(method, "HEAD") == 0;
  int is_delete = strcmp(method, "DELETE") == 0;
  c->head = is_head;
  /* the target: origin form, or absolute form (its authority skipped) */
  const char *t = target;
  if (strncasecmp(t, "http://", 7) == 0 || strncasecmp(t, "https://", 8) == 0) {
    t = strchr(strchr(t, ':') + 3, '/');
    if (!t)
      t = "/";
  }
  if (t[0] != '/') {
    c->keep_alive = 0;
    respond_error(c, 400, "Bad Request", "InvalidURI", "the request target is not a path", NULL);
    return 0;
  }
  const char *q = strchr(t, '?');
  size_t plen = q ? (size_t)(q - t) : strlen(t);
  snprintf(c->query, sizeof c->query, "%s", q ? q + 1 : "");
  int rc;
  /* the body goes before the answer, so the connection stays in step */
  if (body && discard_body(c, consumed, body) < 0)
    return 0;
  if (!body) {
    memmove(c->in, c->in + consumed, c->in_len - consumed);
    c->in_len -= consumed;
  }
  c->in[c->in_len] = '\0';
  if (plen >= sizeof c->path || pct_decode(c->path, t, plen, 0) != 0) {
    c->keep_alive = 0;
    respond_error(c, 400, "Bad Request", "InvalidURI", "bad percent-encoding or path too long", NULL);
    return 0;
  }
  if (strcmp(c->path, "/__stats__") == 0 && (is_get || is_delete)) {
    rc = serve_stats(c, is_delete);
  } else if (!is_get && !is_head) {
    rc = respond_error(c, 405, "Method Not Allowed", "MethodNotAllowed",
                       "The specified method is not allowed against this resource (read-only server)", c->path);
  } else {
    atomic_fetch_add(is_get ? &g_gets : &g_heads, 1);
    rc = serve_path(c);
  }
  return rc == 0 && c->keep_alive;
}

static void serve_connection(conn_t *c, int fd) {
  atomic_fetch_add(&g_conns, 1);
  struct timeval tv = {IDLE_TIMEOUT_S, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->fd = fd;
  c->in_len = 0;
  c->in[0] = '\0';
  while (handle_request(c)) {
  }
  /* a lingering close: stop sending, let the client see the whole answer before the socket goes */
  shutdown(fd, SHUT_WR);
  close(fd);
}

/* ---- threads -------------------------------------------------------------------------------------------------- */
static void *worker(void *arg) {
  (void)arg;
  conn_t *c = malloc(sizeof *c);
  if (!c) {
    fprintf(stderr, "zgpu_range_server: out of memory\n");
    return NULL;
  }
  for (;;) {
    pthread_mutex_lock(&q_lock);
    q_idle++;
    while (q_len == 0)
      pthread_cond_wait(&q_cond, &q_lock);
    int fd = q_fds[q_head];
    q_head = (q_head + 1) % QUEUE_CAP;
    q_len--;
    q_idle--;
    pthread_mutex_unlock(&q_lock);
    serve_connection(c, fd);
  }
  return NULL;
}

/* a thread of its own for a connection that found every ready thread busy; it ends with the connection */
static void *overflow(void *arg) {
  int fd = (int)(intptr_t)arg;
  conn_t *c = malloc(sizeof *c);
  if (c)
    serve_connection(c, fd);
  else
    close(fd);
  free(c);
  return NULL;
}

static int start_thread(void *(*fn)(void *), void *arg) {
  pthread_attr_t at;
  pthread_t t;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, THREAD_STACK);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&t, &at, fn, arg);
  pthread_attr_destroy(&at);
  return rc;
}

static void *acceptor(void *arg) {
  int lfd = (int)(intptr_t)arg;
  for (;;) {
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS)
        usleep(10000); /* out of descriptors for a moment: let connections close */
      continue;
    }
    pthread_mutex_lock(&q_lock);
    int queued = q_idle > q_len && q_len < QUEUE_CAP;
    if (queued) {
      q_fds[(q_head + q_len) % QUEUE_CAP] = fd;
      q_len++;
      pthread_cond_signal(&q_cond);
    }
    pthread_mutex_unlock(&q_lock);
    if (!queued && start_thread(overflow, (void *)(intptr_t)fd) != 0)
      close(fd); /* no thread to be had: the client sees the connection close */
  }
  return NULL;
}

static void *stdin_watch(void *arg) {
  (void)arg;
  char tmp[4096];
  for (;;) {
    ssize_t k = read(STDIN_FILENO, tmp, sizeof tmp);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      break;
  }
  kill(getpid(), SIGTERM);
  return NULL;
}

/* ---- main ----------------------------------------------------------------------------------------------------- */
static void usage(FILE *f) {
  fprintf(f, "usage: zgpu_range_server --root DIR [--port N] [--host ADDR] [--threads T] [--s3] [--ignore-stdin]\n"
             "  A static HTTP/1.1 file server with byte ranges (and, with --s3, a read-only path-style S3\n"
             "  endpoint) for zgpu's benchmarks and tests. Prints \"PORT <n>\" once listening; stops on SIGTERM,\n"
             "  SIGINT or EOF on stdin (unless --ignore-stdin).\n");
}

int main(int argc, char **argv) {
  const char *root = NULL, *host = "127.0.0.1";
  long port = 0, threads = 64;
  int ignore_stdin = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *e;
    if (strcmp(a, "--root") == 0 && v) {
      root = v;
      i++;
    } else if (strcmp(a, "--host") == 0 && v) {
      host = v;
      i++;
    } else if (strcmp(a, "--port") == 0 && v) {
      port = strtol(v, &e, 10);
      if (*e || port < 0 || port > 65535) {
        fprintf(stderr, "zgpu_range_server: bad --port %s\n", v);
        return 2;
      }
      i++;
    } else if (strcmp(a, "--threads") == 0 && v) {
      threads = strtol(v, &e, 10);
      if (*e || threads < 1 || threads > 4096) {
        fprintf(stderr, "zgpu_range_server: bad --threads %s\n", v);
        return 2;
      }
      i++;
    } else if (strcmp(a, "--s3") == 0) {
      g_s3 = 1;
    } else if (strcmp(a, "--ignore-stdin") == 0) {
      ignore_stdin = 1;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (!root) {
    usage(stderr);
    return 2;
  }
  static char rootbuf[PATH_MAX];
  if (!realpath(root, rootbuf) || !is_dir(rootbuf)) {
    fprintf(stderr, "zgpu_range_server: --root %s: not a directory\n", root);
    return 2;
  }
  if (strcmp(rootbuf, "/") == 0)
    rootbuf[0] = '\0'; /* paths are root + "/..." */
  g_root = rootbuf;

  /* SIGTERM and SIGINT are taken by sigwait below: blocked in every thread */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  signal(SIGPIPE, SIG_IGN);

  struct addrinfo hints = {0}, *ai = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  char portstr[16];
  snprintf(portstr, sizeof portstr, "%ld", port);
  int gai = getaddrinfo(host, portstr, &hints, &ai);
  if (gai != 0) {
    fprintf(stderr, "zgpu_range_server: --host %s: %s\n", host, gai_strerror(gai));
    return 2;
  }
  int lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (lfd >= 0)
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (lfd < 0 || bind(lfd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(lfd, 4096) != 0) {
    fprintf(stderr, "zgpu_range_server: cannot listen on %s:%ld: %s\n", host, port, strerror(errno));
    return 1;
  }
  freeaddrinfo(ai);
  struct sockaddr_storage sa;
  socklen_t sl = sizeof sa;
  getsockname(lfd, (struct sockaddr *)&sa, &sl);
  int bound = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                             : ((struct sockaddr_in *)&sa)->sin_port);

  for (long i = 0; i < threads; i++) {
    if (start_thread(worker, NULL) != 0) {
      fprintf(stderr, "zgpu_range_server: cannot start thread %ld\n", i);
      return 1;
    }
  }
  if (start_thread(acceptor, (void *)(intptr_t)lfd) != 0 ||
      (!ignore_stdin && start_thread(stdin_watch, NULL) != 0)) {
    fprintf(stderr, "zgpu_range_server: cannot start threads\n");
    return 1;
  }
  printf("PORT %d\n", bound);
  fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  return 0;
}
