/* AWS Signature Version 4 (header-based) for S3: the canonical request, the string to sign, the derived signing
 * key and the Authorization header, as the AWS documentation describes them. SHA-256 and HMAC-SHA256 come from
 * OpenSSL's libcrypto (SHA-256 fetched once; HMAC built on it). Every string is
 * built with explicit bounds: an input that does not fit the result's fixed buffers is an error, never a
 * silently truncated (and so wrongly signed) request. */
#include "store/s3/sigv4.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "common/status.h"

/* Extra headers a request may sign, plus the four the signer adds. */
#define MAX_SIGNED_HEADERS 40

static const char HEX_LOWER[] = "0123456789abcdef";

static void to_hex(const unsigned char *d, size_t n, char *hex) {
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = HEX_LOWER[d[i] >> 4];
        hex[2 * i + 1] = HEX_LOWER[d[i] & 15];
    }
    hex[2 * n] = '\0';
}

/* SHA-256, fetched from the default provider once: EVP_sha256() is fetched again on every digest in OpenSSL 3,
 * and the one-shot HMAC() fetches the MAC and the digest by name each call (about 23 us a request signed with
 * them on the 2-core machine, most of a small crop's extra cost over S3). NULL if the fetch failed: then every
 * digest fails and the request is refused rather than signed wrongly. */
static EVP_MD *g_sha256;
static pthread_once_t g_sha256_once = PTHREAD_ONCE_INIT;
static void fetch_sha256(void) { g_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL); }

/* SHA-256 of the concatenation a || b (b may be NULL) into out[32]; 0 on success. */
static int sha256_two(const void *a, size_t an, const void *b, size_t bn, unsigned char out[32]) {
    pthread_once(&g_sha256_once, fetch_sha256);
    EVP_MD_CTX *c = g_sha256 ? EVP_MD_CTX_new() : NULL;
    unsigned int len = 0;
    int ok = c && EVP_DigestInit_ex(c, g_sha256, NULL) == 1 && EVP_DigestUpdate(c, a, an) == 1 &&
             (!b || EVP_DigestUpdate(c, b, bn) == 1) && EVP_DigestFinal_ex(c, out, &len) == 1 && len == 32;
    EVP_MD_CTX_free(c);
    return ok ? 0 : -1;
}

void zg_sha256_hex(const void *data, size_t n, char hex[65]) {
    unsigned char md[32];
    /* fails only on allocation failure inside OpenSSL; an all-zero digest then never matches, so the server
     * refuses the request rather than zgpu sending garbage silently */
    if (sha256_two(data ? data : "", data ? n : 0, NULL, 0, md) != 0) memset(md, 0, 32);
    to_hex(md, 32, hex);
}

/* HMAC-SHA256 (RFC 2104) on the fetched digest: H((K ^ opad) || H((K ^ ipad) || msg)). */
static int hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len, unsigned char out[32]) {
    unsigned char k[64] = {0}, pad[64], inner[32];
    if (key_len > sizeof k) {
        if (sha256_two(key, key_len, NULL, 0, k) != 0) return -1;
    } else {
        memcpy(k, key, key_len);
    }
    for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x36;
    int bad = sha256_two(pad, 64, msg, msg_len, inner);
    for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x5c;
    bad = bad || sha256_two(pad, 64, inner, 32, out);
    OPENSSL_cleanse(k, sizeof k);
    OPENSSL_cleanse(pad, sizeof pad);
    return bad ? -1 : 0;
}

static int unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.' || c == '~';
}

/* Encodes n bytes of in (which may hold anything but is not NUL-terminated) into out; (size_t)-1 if too small. */
static size_t uri_encode_n(const char *in, size_t n, int encode_slash, char *out, size_t cap) {
    static const char HEX_UPPER[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (unreserved(c) || (c == '/' && !encode_slash)) {
            if (o + 1 >= cap) return (size_t)-1;
            out[o++] = (char)c;
        } else {
            if (o + 3 >= cap) return (size_t)-1;
            out[o++] = '%';
            out[o++] = HEX_UPPER[c >> 4];
            out[o++] = HEX_UPPER[c & 15];
        }
    }
    if (o >= cap) return (size_t)-1; /* cap == 0 */
    out[o] = '\0';
    return o;
}

size_t zg_s3_uri_encode(const char *in, int encode_slash, char *out, size_t cap) {
    if (!in || !out) return (size_t)-1;
    return uri_encode_n(in, strlen(in), encode_slash, out, cap);
}

void zg_sigv4_now(char out[17]) {
    time_t t = time(NULL);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) != 16) snprintf(out, 17, "19700101T000000Z");
}

/* ---- bounded string building ---- */

typedef struct {
    char *p;
    size_t cap, len;
    int overflow;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
    if (b->overflow) return;
    if (n >= b->cap - b->len) { b->overflow = 1; return; }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}
static void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }
static void sb_chr(sbuf *b, char c) { sb_add(b, &c, 1); }

/* ---- canonical query ---- */

typedef struct {
    char *name, *value; /* canonically encoded, malloc'd */
} qparam;

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decodes [s, s+n) and re-encodes it canonically (so "a%2fb", "a%2Fb" and "a/b" all sign as "a%2Fb"). A
 * '%' not followed by two hex digits is taken literally. '+' is taken literally too (S3 reads it as a plus in
 * a query only when encoded; callers encode spaces as %20). */
static char *canonical_component(const char *s, size_t n) {
    char *raw = malloc(n + 1);
    if (!raw) return NULL;
    size_t r = 0;
    for (size_t i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = hexval((unsigned char)s[i + 1])) >= 0 &&
            (lo = hexval((unsigned char)s[i + 2])) >= 0) {
            raw[r++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            raw[r++] = s[i];
        }
    }
    size_t cap = 3 * r + 1;
    char *enc = malloc(cap);
    if (enc && uri_encode_n(raw, r, 1, enc, cap) == (size_t)-1) { free(enc); enc = NULL; }
    free(raw);
    return enc;
}

static int qparam_cmp(const void *a, const void *b) {
    const qparam *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->value, y->value);
}

static void free_params(qparam *p, size_t n) {
    for (size_t i = 0; i < n; i++) { free(p[i].name); free(p[i].value); }
    free(p);
}

static zgpu_status canonical_query(const char *q, sbuf *out) {
    if (!q || !*q) return ZGPU_OK;
    size_t qn = strlen(q), count = 1;
    for (size_t i = 0; i < qn; i++) count += q[i] == '&';
    qparam *p = calloc(count, sizeof *p);
    if (!p) return zg_error(ZGPU_ERR_NO_MEMORY, "sigv4: out of memory for the query's parameters");
    size_t n = 0;
    for (size_t start = 0; start <= qn;) {
        const char *amp = memchr(q + start, '&', qn - start);
        size_t end = amp ? (size_t)(amp - q) : qn;
        if (end > start) { /* "a&&b": the empty piece is no parameter */
            const char *eq = memchr(q + start, '=', end - start);
            size_t name_end = eq ? (size_t)(eq - q) : end;
            p[n].name = canonical_component(q + start, name_end - start);
            p[n].value = eq ? canonical_component(eq + 1, end - name_end - 1) : canonical_component("", 0);
            if (!p[n].name || !p[n].value) {
                free_params(p, n + 1);
                return zg_error(ZGPU_ERR_NO_MEMORY, "sigv4: out of memory for the query's parameters");
            }
            n++;
        }
        start = end + 1;
    }
    qsort(p, n, sizeof *p, qparam_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i) sb_chr(out, '&');
        sb_str(out, p[i].name);
        sb_chr(out, '='); /* "name=" also for an empty value, as S3 expects ("lifecycle=") */
        sb_str(out, p[i].value);
    }
    free_params(p, n);
    return ZGPU_OK;
}

/* ---- canonical headers ---- */

typedef struct {
    char name[64];
    char value[4200]; /* fits a session token */
} cheader;

static int cheader_cmp(const void *a, const void *b) {
    return strcmp(((const cheader *)a)->name, ((const cheader *)b)->name);
}

/* Lower-cases a trimmed header name into h->name. */
static zgpu_status set_name(cheader *h, const char *name) {
    while (*name == ' ' || *name == '\t') name++;
    size_t n = strlen(name);
    while (n && (name[n - 1] == ' ' || name[n - 1] == '\t')) n--;
    ZG_RETURN_IF(n == 0, ZGPU_ERR_INVALID_ARGUMENT, "sigv4: a header to sign has an empty name");
    ZG_RETURN_IF(n >= sizeof h->name, ZGPU_ERR_INVALID_ARGUMENT, "sigv4: header name '%.40s...' is too long", name);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        ZG_RETURN_IF(c <= ' ' || c == ':' || c >= 127, ZGPU_ERR_INVALID_ARGUMENT,
                     "sigv4: header name '%.*s' has a character not allowed in a header name", (int)n, name);
        h->name[i] = (char)tolower(c);
    }
    h->name[n] = '\0';
    return ZGPU_OK;
}

/* Trims the value and folds each run of spaces (and tabs) inside it to one space, as SigV4 asks. */
static zgpu_status set_value(cheader *h, const char *value) {
    size_t o = 0;
    int pending_space = 0;
    for (const char *s = value ? value : ""; *s; s++) {
        unsigned char c = (unsigned char)*s;
        ZG_RETURN_IF(c == '\r' || c == '\n', ZGPU_ERR_INVALID_ARGUMENT,
                     "sigv4: the value of header '%s' has a line break", h->name);
        if (c == ' ' || c == '\t') { pending_space = o > 0; continue; }
        if (pending_space) {
            ZG_RETURN_IF(o + 1 >= sizeof h->value, ZGPU_ERR_INVALID_ARGUMENT, "sigv4: header '%s' is too long", h->name);
            h->value[o++] = ' ';
            pending_space = 0;
        }
        ZG_RETURN_IF(o + 1 >= sizeof h->value, ZGPU_ERR_INVALID_ARGUMENT, "sigv4: header '%s' is too long", h->name);
        h->value[o++] = (char)c;
    }
    h->value[o] = '\0';
    return ZGPU_OK;
}

static int is_added_by_signer(const char *lname) {
    return strcmp(lname, "host") == 0 || strcmp(lname, "x-amz-date") == 0 ||
           strcmp(lname, "x-amz-content-sha256") == 0 || strcmp(lname, "x-amz-security-token") == 0 ||
           strcmp(lname, "authorization") == 0;
}

static int valid_amz_date(const char *d) {
    if (strlen(d) != 16 || d[8] != 'T' || d[15] != 'Z') return 0;
    for (int i = 0; i < 15; i++)
        if (i != 8 && !isdigit((unsigned char)d[i])) return 0;
    return 1;
}

static int valid_payload_hash(const char *h) {
    if (strcmp(h, "UNSIGNED-PAYLOAD") == 0) return 1;
    if (strlen(h) != 64) return 0;
    for (int i = 0; i < 64; i++)
        if (!strchr(HEX_LOWER, h[i]) || h[i] == '\0') return 0;
    return 1;
}

/* A scope part (region, service) goes into the credential string unescaped: keep it to plain characters. */
static int plain_token(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '-' || *s == '_' || *s == '.')) return 0;
    return 1;
}

zgpu_status zg_sigv4_signing_key(const char *secret, const char *day, const char *region, const char *service,
                                 unsigned char key[32]) {
    ZG_RETURN_IF(!secret || !*secret, ZGPU_ERR_INVALID_ARGUMENT, "sigv4: no secret access key");
    ZG_RETURN_IF(!day || strlen(day) != 8 || strspn(day, "0123456789") != 8, ZGPU_ERR_INVALID_ARGUMENT,
                 "sigv4: the day must be YYYYMMDD, got '%s'", day ? day : "(null)");
    ZG_RETURN_IF(!region || !plain_token(region), ZGPU_ERR_INVALID_ARGUMENT, "sigv4: bad region '%s'",
                 region ? region : "(null)");
    ZG_RETURN_IF(!service || !plain_token(service), ZGPU_ERR_INVALID_ARGUMENT, "sigv4: bad service '%s'",
                 service ? service : "(null)");
    size_t slen = strlen(secret);
    char *k0 = malloc(slen + 5);
    if (!k0) return zg_error(ZGPU_ERR_NO_MEMORY, "sigv4: out of memory");
    memcpy(k0, "AWS4", 4);
    memcpy(k0 + 4, secret, slen + 1);
    unsigned char k1[32], k2[32], k3[32];
    int bad = hmac_sha256(k0, slen + 4, day, 8, k1) || hmac_sha256(k1, 32, region, strlen(region), k2) ||
              hmac_sha256(k2, 32, service, strlen(service), k3) || hmac_sha256(k3, 32, "aws4_request", 12, key);
    OPENSSL_cleanse(k0, slen + 4); /* the secret, and keys derived from it, do not outlive the call */
    free(k0);
    OPENSSL_cleanse(k1, sizeof k1);
    OPENSSL_cleanse(k2, sizeof k2);
    OPENSSL_cleanse(k3, sizeof k3);
    if (bad) OPENSSL_cleanse(key, 32);
    ZG_RETURN_IF(bad, ZGPU_ERR_INTERNAL, "sigv4: OpenSSL's SHA-256 failed");
    return ZGPU_OK;
}

zgpu_status zg_sigv4_sign(const zg_sigv4_request *req, const zg_sigv4_credentials *cred, zg_sigv4_result *out) {
    ZG_RETURN_IF(!req || !cred || !out, ZGPU_ERR_INVALID_ARGUMENT, "sigv4: NULL request, credentials or result");
    /* each field's string ends at its first NUL: no need to clear 14 KiB a request */
    out->authorization[0] = out->x_amz_date[0] = out->x_amz_content_sha256[0] = out->x_amz_security_token[0] = '\0';
    out->canonical_request[0] = out->string_to_sign[0] = '\0';
    ZG_RETURN_IF(!req->method || !*req->method, ZGPU_ERR_INVALID_ARGUMENT, "sigv4: no method");
    ZG_RETURN_IF(!req->host || !*req->host, ZGPU_ERR_INVALID_ARGUMENT, "sigv4: no host");
    ZG_RETURN_IF(!req->path || req->path[0] != '/', ZGPU_ERR_INVALID_ARGUMENT,
                 "sigv4: the path must be absolute (start with '/'), got '%s'", req->path ? req->path : "(null)");
    ZG_RETURN_IF(!req->region || !plain_token(req->region), ZGPU_ERR_INVALID_ARGUMENT, "sigv4: bad region '%s'",
                 req->region ? req->region : "(null)");
    ZG_RETURN_IF(!req->service || !plain_token(req->service), ZGPU_ERR_INVALID_ARGUMENT, "sigv4: bad service '%s'",
                 req->service ? req->service : "(null)");
    ZG_RETURN_IF(!req->amz_date || !valid_amz_date(req->amz_date), ZGPU_ERR_INVALID_ARGUMENT,
                 "sigv4: amz_date must be YYYYMMDDTHHMMSSZ, got '%s'", req->amz_date ? req->amz_date : "(null)");
    ZG_RETURN_IF(!cred->access_key_id || !*cred->access_key_id || !cred->secret_access_key ||
                     !*cred->secret_access_key,
                 ZGPU_ERR_INVALID_ARGUMENT, "sigv4: no access key id or secret access key");
    ZG_RETURN_IF(strchr(cred->access_key_id, '/') || strchr(cred->access_key_id, ',') ||
                     strpbrk(cred->access_key_id, " \r\n"),
                 ZGPU_ERR_INVALID_ARGUMENT, "sigv4: the access key id has a character it cannot have ('/', ',', space)");
    for (const char *m = req->method; *m; m++)
        ZG_RETURN_IF(!isupper((unsigned char)*m), ZGPU_ERR_INVALID_ARGUMENT, "sigv4: bad method '%s'", req->method);
    for (const char *c = req->path; *c; c++)
        ZG_RETURN_IF((unsigned char)*c <= ' ' || (unsigned char)*c >= 127, ZGPU_ERR_INVALID_ARGUMENT,
                     "sigv4: the path must be URI-encoded (it has a space, control or non-ASCII byte)");
    const char *payload = req->payload_sha256
                              ? req->payload_sha256
                              : "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    ZG_RETURN_IF(!valid_payload_hash(payload), ZGPU_ERR_INVALID_ARGUMENT,
                 "sigv4: payload_sha256 must be 64 lower-case hex digits or UNSIGNED-PAYLOAD");
    ZG_RETURN_IF(req->n_headers > MAX_SIGNED_HEADERS - 4 || (req->n_headers && !req->headers),
                 ZGPU_ERR_INVALID_ARGUMENT, "sigv4: %zu headers to sign (at most %d)", req->n_headers,
                 MAX_SIGNED_HEADERS - 4);
    const char *token = cred->session_token && *cred->session_token ? cred->session_token : NULL;

    /* Headers: the caller's, then the signer's own; sorted by name, a name given twice joined with ','. */
    /* as many as there are (each is 4 KiB: a session token fits), each filled by set_name/set_value */
    cheader *h = malloc((req->n_headers + 4) * sizeof *h);
    if (!h) return zg_error(ZGPU_ERR_NO_MEMORY, "sigv4: out of memory");
    size_t nh = 0;
    zgpu_status st = ZGPU_OK;
    for (size_t i = 0; i < req->n_headers && st == ZGPU_OK; i++) {
        if (!req->headers[i].name) { st = zg_error(ZGPU_ERR_INVALID_ARGUMENT, "sigv4: header %zu has no name", i); break; }
        st = set_name(&h[nh], req->headers[i].name);
        if (st == ZGPU_OK && is_added_by_signer(h[nh].name))
            st = zg_error(ZGPU_ERR_INVALID_ARGUMENT, "sigv4: header '%s' is the signer's to set, not the caller's",
                          h[nh].name);
        if (st == ZGPU_OK) st = set_value(&h[nh], req->headers[i].value);
        nh++;
    }
    if (st == ZGPU_OK) {
        const char *own[4][2] = {{"host", req->host},
                                 {"x-amz-date", req->amz_date},
                                 {"x-amz-content-sha256", payload},
                                 {"x-amz-security-token", token}};
        for (int i = 0; i < 4 && st == ZGPU_OK; i++) {
            if (!own[i][1]) continue;
            snprintf(h[nh].name, sizeof h[nh].name, "%s", own[i][0]);
            st = set_value(&h[nh], own[i][1]);
            nh++;
        }
    }
    if (st != ZGPU_OK) { free(h); return st; }
    qsort(h, nh, sizeof *h, cheader_cmp);

    sbuf cr = {out->canonical_request, sizeof out->canonical_request, 0, 0};
    char signed_headers[MAX_SIGNED_HEADERS * 65];
    sbuf sh = {signed_headers, sizeof signed_headers, 0, 0};
    signed_headers[0] = '\0';
    sb_str(&cr, req->method);
    sb_chr(&cr, '\n');
    sb_str(&cr, req->path); /* as given: S3 neither normalises nor double-encodes the path */
    sb_chr(&cr, '\n');
    st = canonical_query(req->query, &cr);
    if (st != ZGPU_OK) { free(h); return st; }
    sb_chr(&cr, '\n');
    for (size_t i = 0; i < nh;) {
        size_t j = i + 1;
        sb_str(&cr, h[i].name);
        sb_chr(&cr, ':');
        sb_str(&cr, h[i].value);
        for (; j < nh && strcmp(h[j].name, h[i].name) == 0; j++) { /* repeated header: values joined by ',' */
            sb_chr(&cr, ',');
            sb_str(&cr, h[j].value);
        }
        sb_chr(&cr, '\n');
        if (sh.len) sb_chr(&sh, ';');
        sb_str(&sh, h[i].name);
        i = j;
    }
    free(h);
    sb_chr(&cr, '\n');
    sb_str(&cr, signed_headers);
    sb_chr(&cr, '\n');
    sb_str(&cr, payload);
    ZG_RETURN_IF(cr.overflow || sh.overflow, ZGPU_ERR_INVALID_ARGUMENT,
                 "sigv4: the canonical request is longer than %zu bytes", sizeof out->canonical_request - 1);

    char date[9], cr_hash[65], scope[256];
    memcpy(date, req->amz_date, 8);
    date[8] = '\0';
    zg_sha256_hex(out->canonical_request, cr.len, cr_hash);
    int sn = snprintf(scope, sizeof scope, "%s/%s/%s/aws4_request", date, req->region, req->service);
    ZG_RETURN_IF(sn < 0 || (size_t)sn >= sizeof scope, ZGPU_ERR_INVALID_ARGUMENT, "sigv4: region or service too long");
    sn = snprintf(out->string_to_sign, sizeof out->string_to_sign, "AWS4-HMAC-SHA256\n%s\n%s\n%s", req->amz_date,
                  scope, cr_hash);
    ZG_RETURN_IF(sn < 0 || (size_t)sn >= sizeof out->string_to_sign, ZGPU_ERR_INVALID_ARGUMENT,
                 "sigv4: the string to sign is too long");

    unsigned char derived[32], sig[32];
    const unsigned char *key = req->signing_key;
    if (!key) {
        ZG_FORWARD(zg_sigv4_signing_key(cred->secret_access_key, date, req->region, req->service, derived));
        key = derived;
    }
    int bad = hmac_sha256(key, 32, out->string_to_sign, (size_t)sn, sig);
    OPENSSL_cleanse(derived, sizeof derived);
    ZG_RETURN_IF(bad, ZGPU_ERR_INTERNAL, "sigv4: OpenSSL's SHA-256 failed");
    char sig_hex[65];
    to_hex(sig, 32, sig_hex);

    sn = snprintf(out->authorization, sizeof out->authorization,
                  "Authorization: AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                  cred->access_key_id, scope, signed_headers, sig_hex);
    ZG_RETURN_IF(sn < 0 || (size_t)sn >= sizeof out->authorization, ZGPU_ERR_INVALID_ARGUMENT,
                 "sigv4: the Authorization header is too long (access key id or headers)");
    snprintf(out->x_amz_date, sizeof out->x_amz_date, "x-amz-date: %s", req->amz_date);
    snprintf(out->x_amz_content_sha256, sizeof out->x_amz_content_sha256, "x-amz-content-sha256: %s", payload);
    if (token) {
        sn = snprintf(out->x_amz_security_token, sizeof out->x_amz_security_token, "x-amz-security-token: %s", token);
        ZG_RETURN_IF(sn < 0 || (size_t)sn >= sizeof out->x_amz_security_token, ZGPU_ERR_INVALID_ARGUMENT,
                     "sigv4: the session token is too long (%zu bytes)", strlen(token));
    }
    return ZGPU_OK;
}
