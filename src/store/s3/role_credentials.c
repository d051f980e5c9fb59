/* The role's temporary credentials: a container endpoint, EC2's instance metadata, STS for a web identity
 * (role_credentials.h). Plain libcurl easy transfers with short timeouts; the link-local and loopback endpoints never
 * through a proxy, STS through the environment's proxy as any HTTPS request (a cluster's egress may need it). */
/* (timegm: _GNU_SOURCE, which the build defines) */
#include "store/s3/role_credentials.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/env.h"
#include "common/json.h"
#include "common/status.h"
#include "store/s3/xml.h"

#define CONTAINER_HOST "http://169.254.170.2"
#define IMDS_DEFAULT "http://169.254.169.254"
#define ANSWER_MAX ((size_t)64 << 10)   /* a credentials document is about 1.5 KiB */
#define TIMEOUT_MS 1000L                /* botocore's: one attempt of a second */
#define CONTAINER_TIMEOUT_MS 2000L
#define STS_TIMEOUT_MS 10000L

int zg_s3_web_identity_configured(void) {
    return zg_env_remote("AWS_ROLE_ARN") && zg_env_remote("AWS_WEB_IDENTITY_TOKEN_FILE");
}

zg_s3_role_source zg_s3_role_source_of_environment(void) {
    if (zg_env_remote("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") || zg_env_remote("AWS_CONTAINER_CREDENTIALS_FULL_URI"))
        return ZG_S3_ROLE_CONTAINER;
    if (zg_env_remote_true("AWS_EC2_METADATA_DISABLED")) return ZG_S3_ROLE_NONE;
    return ZG_S3_ROLE_INSTANCE;
}

static size_t collect(char *p, size_t size, size_t n, void *user) {
    zg_buf *b = user;
    const size_t k = size * n;
    if (b->size + k > ANSWER_MAX || zg_buf_append(b, p, k) != ZGPU_OK) return 0; /* (ends the transfer: an error) */
    return k;
}

/* One request (a POST sends `form`, form-encoded); *code the HTTP status (0: no answer). ZGPU_ERR_NOT_FOUND when
 * nothing answered. */
static zgpu_status request(const char *method, const char *url, const char *header, const char *form, long timeout_ms,
                           zg_buf *body, long *code) {
    const int direct = form == NULL; /* (the form is STS's, a public endpoint: proxies apply) */
    *code = 0;
    body->size = 0;
    CURL *e = curl_easy_init();
    if (!e) return zg_error(ZGPU_ERR_NO_MEMORY, "S3 credentials: out of memory for a request to %s", url);
    struct curl_slist *hl = header ? curl_slist_append(NULL, header) : NULL;
    if (form) hl = curl_slist_append(hl, "Content-Type: application/x-www-form-urlencoded");
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    if (direct) curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    if (strcmp(method, "PUT") == 0) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
    }
    if (form) curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, form);
    if (hl) curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
    const CURLcode rc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, code);
    curl_easy_cleanup(e);
    curl_slist_free_all(hl);
    if (rc == CURLE_OK) return ZGPU_OK;
    if (*code == 0)
        return zg_error(ZGPU_ERR_NOT_FOUND, "S3 credentials: %s %s: no answer (%s)", method, url, curl_easy_strerror(rc));
    return zg_error(ZGPU_ERR_IO, "S3 credentials: %s %s: %s", method, url, curl_easy_strerror(rc));
}

static zgpu_status copy_field(char *dst, size_t cap, const zj_value *doc, const char *key, const char *where,
                              int required) {
    const char *v = zj_string(zj_get(doc, key));
    if (!v) {
        dst[0] = '\0';
        ZG_RETURN_IF(required, ZGPU_ERR_BAD_METADATA, "S3 credentials from %s: no \"%s\" string in the answer", where,
                     key);
        return ZGPU_OK;
    }
    ZG_RETURN_IF(strlen(v) >= cap, ZGPU_ERR_BAD_METADATA, "S3 credentials from %s: \"%s\" is too long (%zu bytes)",
                 where, key, strlen(v));
    memcpy(dst, v, strlen(v) + 1);
    return ZGPU_OK;
}

/* "YYYY-MM-DDTHH:MM:SS[.fff]Z" (or +00:00) to a time_t; 0 if it is not that. */
static time_t parse_utc(const char *s) {
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int used = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
               &tm.tm_sec, &used) != 6)
        return 0;
    const char *rest = s + used;
    if (*rest == '.')
        for (rest++; *rest >= '0' && *rest <= '9'; rest++) {
        }
    if (strcmp(rest, "Z") != 0 && strcmp(rest, "+00:00") != 0) return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return timegm(&tm);
}

zgpu_status zg_s3_role_credentials_parse(const char *json, size_t n, const char *where, zg_s3_role_credentials *out) {
    memset(out, 0, sizeof *out);
    zj_value *doc = NULL;
    zgpu_status st = zj_parse(json, n, where, &doc);
    if (st != ZGPU_OK) return zg_error(ZGPU_ERR_BAD_METADATA, "S3 credentials from %s: the answer is not JSON", where);
    const char *code = zj_string(zj_get(doc, "Code"));
    if (code && strcmp(code, "Success") != 0)
        st = zg_error(ZGPU_ERR_IO, "S3 credentials from %s: the answer's Code is '%.64s'", where, code);
    if (st == ZGPU_OK) st = copy_field(out->access_key_id, sizeof out->access_key_id, doc, "AccessKeyId", where, 1);
    if (st == ZGPU_OK)
        st = copy_field(out->secret_access_key, sizeof out->secret_access_key, doc, "SecretAccessKey", where, 1);
    if (st == ZGPU_OK) st = copy_field(out->session_token, sizeof out->session_token, doc, "Token", where, 0);
    const char *exp = st == ZGPU_OK ? zj_string(zj_get(doc, "Expiration")) : NULL;
    if (exp && !(out->expiration = parse_utc(exp)))
        st = zg_error(ZGPU_ERR_BAD_METADATA, "S3 credentials from %s: Expiration '%.40s' is not a UTC time", where, exp);
    zj_free(doc);
    if (st == ZGPU_OK && (!out->access_key_id[0] || !out->secret_access_key[0]))
        st = zg_error(ZGPU_ERR_BAD_METADATA, "S3 credentials from %s: an empty key", where);
    if (st != ZGPU_OK) memset(out, 0, sizeof *out);
    return st;
}

/* A full URI's host must be loopback or the container agent's (or the scheme https), as the AWS SDKs require: the
 * token goes to it. */
static int full_uri_allowed(const char *uri) {
    if (strncmp(uri, "https://", 8) == 0) return 1;
    if (strncmp(uri, "http://", 7) != 0) return 0;
    static const char *const hosts[] = {"127.", "localhost:", "localhost/", "[::1]", "169.254.170.2:", "169.254.170.2/",
                                        "169.254.170.23:", "169.254.170.23/", "[fd00:ec2::23]"};
    const char *h = uri + 7;
    for (size_t i = 0; i < sizeof hosts / sizeof *hosts; i++)
        if (strncmp(h, hosts[i], strlen(hosts[i])) == 0) return 1;
    return strcmp(h, "localhost") == 0 || strcmp(h, "169.254.170.2") == 0 || strcmp(h, "169.254.170.23") == 0;
}

/* A token file's contents into buf (cap bytes; a longer file is cut), trailing line breaks and spaces dropped; `var`
 * names the variable that gave the path, for the message. */
static zgpu_status read_token_file(const char *path, const char *var, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    ZG_RETURN_IF(!f, ZGPU_ERR_IO, "%s '%.200s' cannot be read", var, path);
    size_t k = fread(buf, 1, cap - 1, f);
    fclose(f);
    while (k && (buf[k - 1] == '\n' || buf[k - 1] == '\r' || buf[k - 1] == ' ')) k--;
    buf[k] = '\0';
    return ZGPU_OK;
}

static zgpu_status fetch_container(zg_s3_role_credentials *out, zg_buf *body) {
    char url[2048], header[4200] = "";
    const char *rel = zg_env_remote("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    const char *full = zg_env_remote("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    if (rel) {
        ZG_RETURN_IF((size_t)snprintf(url, sizeof url, "%s%s%s", CONTAINER_HOST, rel[0] == '/' ? "" : "/", rel) >=
                         sizeof url,
                     ZGPU_ERR_INVALID_ARGUMENT, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is too long");
    } else {
        ZG_RETURN_IF(strlen(full) >= sizeof url, ZGPU_ERR_INVALID_ARGUMENT, "AWS_CONTAINER_CREDENTIALS_FULL_URI is too long");
        ZG_RETURN_IF(!full_uri_allowed(full), ZGPU_ERR_INVALID_ARGUMENT,
                     "AWS_CONTAINER_CREDENTIALS_FULL_URI '%.200s' is neither https nor a loopback or container-agent "
                     "address: the credentials token is not sent there", full);
        snprintf(url, sizeof url, "%s", full);
    }
    const char *token = zg_env_remote("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    char file_token[4096];
    const char *token_file = zg_env_remote("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    if (!token && token_file) {
        ZG_FORWARD(read_token_file(token_file, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", file_token, sizeof file_token));
        token = file_token;
    }
    if (token) {
        ZG_RETURN_IF(strpbrk(token, "\r\n") || strlen(token) + 16 > sizeof header, ZGPU_ERR_INVALID_ARGUMENT,
                     "the container credentials' authorization token is malformed or too long");
        snprintf(header, sizeof header, "Authorization: %s", token);
    }
    long code;
    ZG_FORWARD(request("GET", url, token ? header : NULL, NULL, CONTAINER_TIMEOUT_MS, body, &code));
    ZG_RETURN_IF(code != 200, ZGPU_ERR_IO, "S3 credentials: GET %s answered HTTP %ld", url, code);
    char where[2200];
    snprintf(where, sizeof where, "container credentials (%s)", url);
    ZG_FORWARD(zg_s3_role_credentials_parse((const char *)body->data, body->size, where, out));
    snprintf(out->source, sizeof out->source, "container credentials (%.100s)", url);
    return ZGPU_OK;
}

static zgpu_status fetch_instance(zg_s3_role_credentials *out, zg_buf *body) {
    const char *base = zg_env_remote("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    if (!base) base = IMDS_DEFAULT;
    size_t bl = strlen(base);
    while (bl && base[bl - 1] == '/') bl--;
    ZG_RETURN_IF(bl > 1000, ZGPU_ERR_INVALID_ARGUMENT, "AWS_EC2_METADATA_SERVICE_ENDPOINT is too long");
    char url[2400], header[256];
    long code;
    snprintf(url, sizeof url, "%.*s/latest/api/token", (int)bl, base);
    ZG_FORWARD(request("PUT", url, "X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL, TIMEOUT_MS, body, &code));
    ZG_RETURN_IF(code != 200 || body->size == 0 || body->size >= 200, ZGPU_ERR_IO,
                 "S3 credentials: PUT %s (IMDSv2's session token) answered HTTP %ld", url, code);
    char token[200];
    memcpy(token, body->data, body->size);
    token[body->size] = '\0';
    ZG_RETURN_IF(strpbrk(token, "\r\n"), ZGPU_ERR_BAD_METADATA, "S3 credentials: %s answered a malformed token", url);
    snprintf(header, sizeof header, "X-aws-ec2-metadata-token: %s", token);
    snprintf(url, sizeof url, "%.*s/latest/meta-data/iam/security-credentials/", (int)bl, base);
    ZG_FORWARD(request("GET", url, header, NULL, TIMEOUT_MS, body, &code));
    ZG_RETURN_IF(code == 404, ZGPU_ERR_NOT_FOUND, "S3 credentials: this instance has no IAM role (GET %s: 404)", url);
    ZG_RETURN_IF(code != 200, ZGPU_ERR_IO, "S3 credentials: GET %s answered HTTP %ld", url, code);
    char role[256];
    size_t rl = body->size < sizeof role - 1 ? body->size : sizeof role - 1;
    memcpy(role, body->data, rl);
    role[rl] = '\0';
    role[strcspn(role, "\r\n")] = '\0'; /* (one role; the first line) */
    ZG_RETURN_IF(!role[0] || strpbrk(role, "/?#% "), ZGPU_ERR_BAD_METADATA,
                 "S3 credentials: GET %s answered no usable role name", url);
    snprintf(url, sizeof url, "%.*s/latest/meta-data/iam/security-credentials/%s", (int)bl, base, role);
    ZG_FORWARD(request("GET", url, header, NULL, TIMEOUT_MS, body, &code));
    ZG_RETURN_IF(code != 200, ZGPU_ERR_IO, "S3 credentials: GET %s answered HTTP %ld", url, code);
    char where[2600];
    snprintf(where, sizeof where, "the instance profile (%s)", url);
    ZG_FORWARD(zg_s3_role_credentials_parse((const char *)body->data, body->size, where, out));
    snprintf(out->source, sizeof out->source, "instance profile '%.40s' (%.*s)", role, (int)(bl < 60 ? bl : 60), base);
    return ZGPU_OK;
}

/* Appends `v` form-encoded (RFC 3986 unreserved kept) to `b`. */
static zgpu_status form_add(zg_buf *b, const char *name, const char *v) {
    static const char hex[] = "0123456789ABCDEF";
    if (b->size) ZG_FORWARD(zg_buf_append(b, "&", 1));
    ZG_FORWARD(zg_buf_append(b, name, strlen(name)));
    ZG_FORWARD(zg_buf_append(b, "=", 1));
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
        const int plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
                          *p == '-' || *p == '_' || *p == '.' || *p == '~';
        ZG_FORWARD(zg_buf_append(b, plain ? (const char *)p : e, plain ? 1 : 3));
    }
    return ZGPU_OK;
}

/* STS AssumeRoleWithWebIdentity (unsigned: the token is the proof): AWS_ROLE_ARN and the token in
 * AWS_WEB_IDENTITY_TOKEN_FILE (EKS's IAM roles for service accounts), at AWS_ENDPOINT_URL_STS or the region's STS. */
static zgpu_status fetch_web_identity(zg_s3_role_credentials *out, zg_buf *body) {
    const char *arn = zg_env_remote("AWS_ROLE_ARN"), *file = zg_env_remote("AWS_WEB_IDENTITY_TOKEN_FILE");
    ZG_RETURN_IF(!arn || !file, ZGPU_ERR_NOT_FOUND, "S3 credentials: no AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE");
    char token[16384];
    ZG_FORWARD(read_token_file(file, "AWS_WEB_IDENTITY_TOKEN_FILE", token, sizeof token));
    ZG_RETURN_IF(!token[0], ZGPU_ERR_IO, "AWS_WEB_IDENTITY_TOKEN_FILE '%.200s' is empty", file);
    char url[1200], session[64];
    const char *sts = zg_env_remote("AWS_ENDPOINT_URL_STS");
    const char *region = zg_env_remote("AWS_REGION");
    if (!region) region = zg_env_remote("AWS_DEFAULT_REGION");
    if (sts) snprintf(url, sizeof url, "%s", sts);
    else if (region) snprintf(url, sizeof url, "https://sts.%.60s.amazonaws.com/", region);
    else snprintf(url, sizeof url, "https://sts.amazonaws.com/");
    const char *name = zg_env_remote("AWS_ROLE_SESSION_NAME");
    if (!name) {
        snprintf(session, sizeof session, "zgpu-%ld", (long)time(NULL));
        name = session;
    }
    zg_buf form = {0};
    zgpu_status st = form_add(&form, "Action", "AssumeRoleWithWebIdentity");
    if (st == ZGPU_OK) st = form_add(&form, "Version", "2011-06-15");
    if (st == ZGPU_OK) st = form_add(&form, "RoleArn", arn);
    if (st == ZGPU_OK) st = form_add(&form, "RoleSessionName", name);
    if (st == ZGPU_OK) st = form_add(&form, "WebIdentityToken", token);
    if (st == ZGPU_OK) st = zg_buf_append(&form, "", 1); /* (a C string for libcurl) */
    explicit_bzero(token, sizeof token);
    long code = 0;
    if (st == ZGPU_OK) st = request("POST", url, NULL, (const char *)form.data, STS_TIMEOUT_MS, body, &code);
    if (form.data) explicit_bzero(form.data, form.size);
    zg_buf_free(&form);
    ZG_FORWARD(st);
    zg_sts_credentials sc;
    st = zg_s3_parse_sts_credentials((const char *)body->data, body->size, &sc);
    if (st != ZGPU_OK) {
        zg_error_prefix("S3 credentials: POST %s (role %.100s, HTTP %ld): ", url, arn, code);
        return st;
    }
    snprintf(out->access_key_id, sizeof out->access_key_id, "%s", sc.access_key_id);
    snprintf(out->secret_access_key, sizeof out->secret_access_key, "%s", sc.secret_access_key);
    snprintf(out->session_token, sizeof out->session_token, "%s", sc.session_token);
    out->expiration = sc.expiration[0] ? parse_utc(sc.expiration) : 0;
    explicit_bzero(&sc, sizeof sc);
    ZG_RETURN_IF(code != 200, ZGPU_ERR_IO, "S3 credentials: POST %s answered HTTP %ld", url, code);
    snprintf(out->source, sizeof out->source, "web identity role %.80s", arn);
    return ZGPU_OK;
}

zgpu_status zg_s3_role_credentials_fetch(zg_s3_role_source source, zg_s3_role_credentials *out) {
    memset(out, 0, sizeof *out);
    zg_buf body = {0};
    zgpu_status st = source == ZG_S3_ROLE_CONTAINER      ? fetch_container(out, &body)
                     : source == ZG_S3_ROLE_INSTANCE     ? fetch_instance(out, &body)
                     : source == ZG_S3_ROLE_WEB_IDENTITY ? fetch_web_identity(out, &body)
                                                         : zg_error(ZGPU_ERR_NOT_FOUND, "S3 credentials: no role source");
    if (body.data) explicit_bzero(body.data, body.size);
    zg_buf_free(&body);
    if (st != ZGPU_OK) explicit_bzero(out, sizeof *out);
    return st;
}

/* ---- the process's cache: one fetch serves every store, again only near expiry ---- */

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER; /* held for copies only, never across a fetch */
static struct {
    int state; /* 0 nothing, 1 credentials, 2 the source is not there (no metadata service, no role) */
    char key[1100]; /* the endpoint or URI they came from: another one is another source */
    time_t fetched;  /* when: credentials near expiry are fetched again at most once a minute until they expire
                      * (EC2 may hand out ones with only 5 minutes left: not a fetch for every request) */
    zg_s3_role_credentials creds;
} cache[4];
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void after_fork_child(void) { pthread_mutex_init(&cache_mu, NULL); } /* (a parent thread may have held it) */
static void register_fork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

static void source_key(zg_s3_role_source s, char *key, size_t cap) {
    const char *k = s == ZG_S3_ROLE_CONTAINER ? zg_env_remote("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") : NULL;
    if (s == ZG_S3_ROLE_CONTAINER && !k) k = zg_env_remote("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    if (s == ZG_S3_ROLE_INSTANCE) k = zg_env_remote("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    if (s == ZG_S3_ROLE_WEB_IDENTITY) {
        const char *arn = zg_env_remote("AWS_ROLE_ARN"), *sts = zg_env_remote("AWS_ENDPOINT_URL_STS");
        snprintf(key, cap, "%d %.400s %.300s %.300s", (int)s, arn ? arn : "", sts ? sts : "",
                 zg_env_remote("AWS_WEB_IDENTITY_TOKEN_FILE") ? zg_env_remote("AWS_WEB_IDENTITY_TOKEN_FILE") : "");
        return;
    }
    snprintf(key, cap, "%d %s", (int)s, k ? k : "");
}

zgpu_status zg_s3_role_credentials_get(zg_s3_role_source source, int min_valid_s, zg_s3_role_credentials *out) {
    ZG_RETURN_IF(source != ZG_S3_ROLE_CONTAINER && source != ZG_S3_ROLE_INSTANCE && source != ZG_S3_ROLE_WEB_IDENTITY,
                 ZGPU_ERR_NOT_FOUND, "S3 credentials: no role source");
    pthread_once(&fork_once, register_fork);
    char key[1100];
    source_key(source, key, sizeof key);
    const time_t now = time(NULL);
    pthread_mutex_lock(&cache_mu);
    const int state = strcmp(cache[source].key, key) == 0 ? cache[source].state : 0;
    const time_t fetched = cache[source].fetched;
    if (state == 1) *out = cache[source].creds;
    pthread_mutex_unlock(&cache_mu);
    ZG_RETURN_IF(state == 2, ZGPU_ERR_NOT_FOUND, "S3 credentials: the %s gave none earlier in this process",
                 source == ZG_S3_ROLE_INSTANCE ? "instance metadata service" : "container credentials endpoint");
    if (state == 1 && (out->expiration == 0 || out->expiration - now > min_valid_s ||
                       (out->expiration > now && now - fetched < 60)))
        return ZGPU_OK;
    zg_s3_role_credentials fresh;
    const zgpu_status st = zg_s3_role_credentials_fetch(source, &fresh);
    /* (the instance's metadata service is only tried: a machine not on EC2 may have nothing there, or something
     * that answers 403, as botocore finds; either way no credentials, and not asked again) */
    if (st == ZGPU_OK || (source == ZG_S3_ROLE_INSTANCE && state == 0)) {
        pthread_mutex_lock(&cache_mu);
        snprintf(cache[source].key, sizeof cache[source].key, "%s", key);
        cache[source].state = st == ZGPU_OK ? 1 : 2;
        cache[source].fetched = now;
        if (st == ZGPU_OK) cache[source].creds = fresh;
        pthread_mutex_unlock(&cache_mu);
    }
    if (st == ZGPU_OK) {
        *out = fresh;
        explicit_bzero(&fresh, sizeof fresh);
        return ZGPU_OK;
    }
    /* a refresh that failed while the credentials held still last: they serve until they expire, and the next try is
     * a minute away (not one per request while the endpoint is down) */
    if (state == 1 && out->expiration > now) {
        pthread_mutex_lock(&cache_mu);
        if (strcmp(cache[source].key, key) == 0) cache[source].fetched = now;
        pthread_mutex_unlock(&cache_mu);
        return ZGPU_OK;
    }
    if (state == 1) explicit_bzero(out, sizeof *out);
    return st;
}
