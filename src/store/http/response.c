/* One transfer's response (transfer.h): headers and body taken as they arrive, into the caller's memory or the
 * request's buffer, and checked against the request and the response's own headers (Content-Length,
 * Content-Range, a 200 to a range request sliced) before the request counts as done. */
#include "store/http/transfer.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/status.h"

int64_t zg_http_now_ms(void) {
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
void xfer_final(xfer *x, zgpu_status s, int suffix_attempts) {
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
            /* a server answers a range running past the end with what there is: the value is too short, but for a
             * head read (range_upto), which takes what there is */
            const int short_value = !exact && x->cr_start == off && total != ZG_HTTP_WHOLE && x->cr_end == total - 1 &&
                                    x->cr_end < off + len - 1;
            if (short_value && r->range_upto) exact = 1;
            else if (short_value) {
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
        if (r->out && got < len && !r->range_upto) {
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
        if (x->have_clen && x->clen < off + len && !r->range_upto) {
            xfail(x, F_FINAL, ZGPU_ERR_CORRUPT_DATA, "object has %" PRIu64 " bytes, range past its end", x->clen);
            return;
        }
        x->skip = off;
        x->take = x->have_clen && r->range_upto && x->clen < off + len ? x->clen - off : len;
    }
    x->mode = M_SLICE;
    if (!r->out) body_reserve(x, x->take);
}

void xfer_reset(xfer *x) {
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

size_t xfer_on_header(char *p, size_t size, size_t n, void *user) {
    xfer *x = user;
    size_t len = size * n;
    const char *end = p + len;
    while (end > p && (end[-1] == '\n' || end[-1] == '\r')) end--;
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) { /* a new response (after a 100 or a redirect) */
        xfer_reset(x);
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

size_t xfer_on_body(char *p, size_t size, size_t n, void *user) {
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

size_t xfer_on_upload(char *buf, size_t size, size_t n, void *user) {
    xfer *x = user;
    size_t room = size * n, left = x->r->upload_len - x->up_pos;
    size_t k = left < room ? left : room;
    if (k) memcpy(buf, x->r->upload + x->up_pos, k);
    x->up_pos += k;
    return k;
}

int xfer_on_seek(void *user, curl_off_t off, int origin) {
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
int xfer_judge(xfer *x, CURLcode rc) {
    zg_http_req *r = x->r;
    uint64_t off = r->range_offset, len = r->range_length;
    long code = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
    r->http_status = code;
    if (x->fail) { /* a callback's verdict comes before curl's CURLE_WRITE_ERROR it caused */
        if (x->fail == F_RETRY) return O_RETRY;
        xfer_final(x, x->fail_status, 0);
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
            xfer_final(x, ZGPU_ERR_NO_MEMORY, 0);
            return O_DONE;
        case CURLE_TOO_MANY_REDIRECTS: what = "too many redirects"; retry = 0; break;
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CERTPROBLEM: what = "TLS verification failed"; retry = 0; break;
        default: what = "transfer failed"; retry = 0; break;
        }
        snprintf(x->why, sizeof x->why, "%s (curl: %s)", what, detail);
        if (retry) return O_RETRY;
        xfer_final(x, ZGPU_ERR_IO, 0);
        return O_DONE;
    }
    char s3[300];
    if (code == 404 || (code == 403 && r->not_found_403)) {
        r->found = 0;
        r->received = 0;
        xfer_final(x, ZGPU_OK, 0);
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
            xfer_final(x, ZGPU_ERR_CORRUPT_DATA, 0);
            return O_DONE;
        }
        const int denied = code == 401 || code == 403;
        snprintf(x->why, sizeof x->why, "%sHTTP %ld%s%s%s%s", denied ? "access denied: " : "", code, s3,
                 denied && r->auth_note ? " [" : "", denied && r->auth_note ? r->auth_note : "",
                 denied && r->auth_note ? "]" : "");
        xfer_final(x, ZGPU_ERR_IO, 0);
        return O_DONE;
    }
    /* 2xx: the body must be complete and consistent with the headers */
    if (r->method == ZG_HTTP_HEAD) {
        r->object_size = x->have_clen ? x->clen : ZG_HTTP_WHOLE;
        r->found = 1;
        xfer_final(x, ZGPU_OK, 0);
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
        if (r->range_upto && x->seen < off + len) { /* (a head read of a shorter value: what there is) */
            r->received = x->seen > off ? x->seen - off : 0;
            break;
        }
        if (!r->range_suffix && x->seen < off + len) {
            snprintf(x->why, sizeof x->why, "object has %" PRIu64 " bytes, range past its end", x->seen);
            xfer_final(x, ZGPU_ERR_CORRUPT_DATA, 0);
            return O_DONE;
        }
        r->received = x->take;
        break;
    case M_RING:
        if (x->seen < x->take) {
            snprintf(x->why, sizeof x->why, "object has %" PRIu64 " bytes, range past its start", x->seen);
            xfer_final(x, ZGPU_ERR_CORRUPT_DATA, 0);
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
    xfer_final(x, ZGPU_OK, 0);
    return O_DONE;
}
