/* One transfer of the HTTP client (private to src/store/http/): the state of a request's attempt, libcurl's
 * callbacks that take its response, and the check of that response against the request (response.c); the batch
 * that runs transfers is client.c. */
#ifndef ZG_HTTP_TRANSFER_H
#define ZG_HTTP_TRANSFER_H
#include <curl/curl.h>
#include <stdint.h>
#include "store/http/client.h"

#define ERROR_BODY_MAX (64 * 1024) /* enough for any S3 error document */
#define PREALLOC_MAX ((size_t)256 << 20) /* past this, a body grows as it arrives (a lying Content-Length) */

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

/** Monotonic milliseconds. */
int64_t zg_http_now_ms(void);
/** The request's final result (its error text "GET url (bytes=a-b): <why>"); tells its `done`. */
void xfer_final(xfer *x, zgpu_status s, int suffix_attempts);
/** Forgets the last attempt's response before a new one. */
void xfer_reset(xfer *x);
/* libcurl's callbacks of a transfer (user: the xfer) */
size_t xfer_on_header(char *p, size_t size, size_t n, void *user);
size_t xfer_on_body(char *p, size_t size, size_t n, void *user);
size_t xfer_on_upload(char *buf, size_t size, size_t n, void *user);
int xfer_on_seek(void *user, curl_off_t off, int origin);
/** After an attempt ends (rc: libcurl's result): O_DONE when the request has its final result, O_RETRY when the
 *  attempt failed in a way worth another. */
int xfer_judge(xfer *x, CURLcode rc);

#endif
