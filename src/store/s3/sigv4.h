/* AWS Signature Version 4 for S3 requests (header-based signing), written from the AWS documentation
 * ("Signature Version 4 signing process") and checked against AWS's published test vectors. SHA-256 and
 * HMAC come from OpenSSL's libcrypto. Pure functions of their inputs: no clock, no environment. */
#ifndef ZG_S3_SIGV4_H
#define ZG_S3_SIGV4_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

typedef struct zg_sigv4_credentials {
    const char *access_key_id;
    const char *secret_access_key;
    const char *session_token; /* NULL or "" when none: then no X-Amz-Security-Token header */
} zg_sigv4_credentials;

typedef struct zg_sigv4_header {
    const char *name;  /* any case; signed lower-cased, values trimmed and inner runs of spaces folded */
    const char *value;
} zg_sigv4_header;

typedef struct zg_sigv4_request {
    const char *method;          /* "GET", "PUT", ... */
    const char *host;            /* the Host header's value (with ":port" when not the scheme's default) */
    const char *path;            /* already URI-encoded absolute path, e.g. "/bucket/a%20b/c" (S3: not
                                  * normalised and not encoded twice) */
    const char *query;           /* raw query string without '?', "" or NULL for none; parameters are sorted and
                                  * re-encoded canonically (%XX escapes decoded first, so "a/b" and "a%2Fb" sign
                                  * alike; '+' is a literal plus: write a space as %20) */
    const zg_sigv4_header *headers; /* extra headers to sign (e.g. range, content-type, x-amz-*); host,
                                  * x-amz-date, x-amz-content-sha256 and x-amz-security-token are added (passing
                                  * one of those, or Authorization, is an error); a name given twice is signed as
                                  * one header, values joined by ',' */
    size_t n_headers;
    const char *payload_sha256;  /* lower-case hex SHA-256 of the body, or "UNSIGNED-PAYLOAD"; NULL = hash of "" */
    const char *region;          /* e.g. "us-east-1" */
    const char *service;         /* "s3" */
    const char *amz_date;        /* "YYYYMMDDTHHMMSSZ" (the caller's clock, UTC) */
    const unsigned char *signing_key; /* NULL: derived from the secret; else zg_sigv4_signing_key's 32 bytes for
                                  * amz_date's day, this region and service, and the credentials' secret */
} zg_sigv4_request;

/* What the caller must send: each as a full header line "Name: value". */
typedef struct zg_sigv4_result {
    char authorization[1024];
    char x_amz_date[64];
    char x_amz_content_sha256[128];
    char x_amz_security_token[4096]; /* "" when no session token */
    /* for tests: the intermediate strings */
    char canonical_request[8192];
    char string_to_sign[1024];
} zg_sigv4_result;

/** Signs the request. ZGPU_ERR_INVALID_ARGUMENT for a missing field or a string that does not fit. */
zgpu_status zg_sigv4_sign(const zg_sigv4_request *req, const zg_sigv4_credentials *cred, zg_sigv4_result *out);
/** The day's signing key, kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, day), region), service),
 *  "aws4_request") with day "YYYYMMDD": the same for every request of that day, so a store signing many caches
 *  it (eight of a signature's eleven SHA-256 runs). ZGPU_ERR_INVALID_ARGUMENT for a missing or malformed part. */
zgpu_status zg_sigv4_signing_key(const char *secret, const char *day, const char *region, const char *service,
                                 unsigned char key[32]);
/** Lower-case hex SHA-256 of data into hex[65]. */
void zg_sha256_hex(const void *data, size_t n, char hex[65]);
/** S3's URI encoding of one path segment or query value (RFC 3986 unreserved kept, every other byte %XX
 *  upper-case); encode_slash = 0 keeps '/' (object keys in paths). Returns bytes written (without NUL), or
 *  (size_t)-1 if out (cap bytes) is too small. */
size_t zg_s3_uri_encode(const char *in, int encode_slash, char *out, size_t cap);
/** The current UTC time as "YYYYMMDDTHHMMSSZ" into out[17]. */
void zg_sigv4_now(char out[17]);

#endif
