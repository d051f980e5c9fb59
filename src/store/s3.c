/* The S3 store: a key is an object below a bucket's prefix. Requests are signed with Signature V4 (s3/sigv4.h)
 * unless the credentials resolve to anonymous access (s3/credentials.h); listing is ListObjectsV2 with a
 * delimiter; values of multipart_threshold bytes or more are written as a multipart upload (its parts in flight
 * together), which S3 makes visible only when complete — as a single PUT is. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "store/remote.h"
#include "store/s3/credentials.h"
#include "store/s3/sigv4.h"
#include "store/s3/xml.h"
#include "common/status.h"

typedef struct s3_store {
    zg_remote_store r;        /* first */
    zg_s3_config cfg;
    char *bucket, *prefix;    /* prefix: "" or "a/b" */
    char *origin;             /* "scheme://host[:port]" requests go to */
    char *bucket_path;        /* "" (virtual host) or "/bucket" (path style): the path before a key */
    pthread_mutex_t key_lock; /* guards the day's signing key, which every request of that day signs with */
    char key_day[9];          /* "YYYYMMDD" of `key`, "" before the first request */
    unsigned char key[32];
} s3_store;

/* The full object key of a store key: "<prefix>/<key>" (or either alone). malloc'd. */
static char *full_key(const s3_store *s, const char *key) {
    size_t a = strlen(s->prefix), b = strlen(key);
    char *k = malloc(a + b + 2);
    if (!k) return NULL;
    snprintf(k, a + b + 2, "%s%s%s", s->prefix, a && b ? "/" : "", key);
    return k;
}

/* The URL of an object key (full, "" = the bucket itself) with an encoded query or NULL. */
static char *object_url(const s3_store *s, const char *object, const char *query) {
    size_t n = strlen(s->origin) + strlen(s->bucket_path) + 2;
    char *u = malloc(n);
    if (!u) return NULL;
    snprintf(u, n, "%s%s/", s->origin, s->bucket_path);
    return zg_remote_append_query(zg_remote_append_key(u, object), query);
}

static char *s3_url(const zg_remote_store *r, const char *key, const char *query) {
    const s3_store *s = (const s3_store *)r;
    char *k = full_key(s, key);
    char *u = k ? object_url(s, k, query) : NULL;
    free(k);
    return u;
}

/* Sets a header from the signer's full line "Name: value" (sigv4.h's results are lines; the request's headers
 * take a name and a value: the whole line as the value sent "Authorization: Authorization: ...", which S3 refuses). */
static zgpu_status set_header_line(zg_http_req *q, const char *line) {
    const char *colon = strchr(line, ':');
    ZG_RETURN_IF(!colon || colon == line || colon[1] != ' ' || colon - line >= 64, ZGPU_ERR_INTERNAL,
                 "sigv4: a header line without 'Name: ' (%.40s)", line);
    char name[64];
    memcpy(name, line, (size_t)(colon - line));
    name[colon - line] = '\0';
    return zg_http_req_set_header(q, name, colon + 2);
}

/* What one request signs with, copied under the store's lock (a role's keys may be replaced meanwhile). */
typedef struct signing_creds {
    char akid[256], secret[256], token[4096];
    unsigned char key[32]; /* the day's signing key */
} signing_creds;

/* The store's keys for a request signed at `date`: a role's fetched again when they near their expiration (the
 * process's cache, role_credentials.h), and the day's signing key derived once a day rather than once a request. */
static zgpu_status current_creds(s3_store *s, const char *date, signing_creds *out) {
    zgpu_status st = ZGPU_OK;
    pthread_mutex_lock(&s->key_lock);
    zg_s3_config *c = &s->cfg;
    if (c->role_source && c->expiration && c->expiration - time(NULL) <= ZG_S3_ROLE_MIN_VALID_S) {
        zg_s3_role_credentials rc;
        st = zg_s3_role_credentials_get((zg_s3_role_source)c->role_source, ZG_S3_ROLE_MIN_VALID_S, &rc);
        /* (the day's signing key derives from the secret alone: a new secret, a new key) */
        if (st == ZGPU_OK && strcmp(rc.secret_access_key, c->secret_access_key) != 0) s->key_day[0] = '\0';
        if (st == ZGPU_OK) {
            zg_s3_config_take_role_keys(c, (zg_s3_role_source)c->role_source, &rc);
        } else if (c->expiration > time(NULL)) {
            st = ZGPU_OK; /* (the keys held still last) */
        } else {
            zg_error_prefix("store '%s': the role's credentials expired and could not be fetched again: ",
                            s->r.base.root);
        }
        explicit_bzero(&rc, sizeof rc);
    }
    if (st == ZGPU_OK && strncmp(s->key_day, date, 8) != 0) {
        char day[9];
        memcpy(day, date, 8);
        day[8] = '\0';
        st = zg_sigv4_signing_key(c->secret_access_key, day, c->region, "s3", s->key);
        snprintf(s->key_day, sizeof s->key_day, "%s", st == ZGPU_OK ? day : "");
    }
    if (st == ZGPU_OK) {
        snprintf(out->akid, sizeof out->akid, "%s", c->access_key_id);
        snprintf(out->secret, sizeof out->secret, "%s", c->secret_access_key);
        snprintf(out->token, sizeof out->token, "%s", c->session_token);
        memcpy(out->key, s->key, sizeof out->key);
    }
    pthread_mutex_unlock(&s->key_lock);
    return st;
}

/* Signs one attempt: host, path and query from its URL, a fresh date, the body's hash. */
static zgpu_status s3_sign(void *user, zg_http_req *q) {
    s3_store *s = user;
    if (s->cfg.anonymous) return ZGPU_OK;
    const char *u = strstr(q->url, "://");
    if (!u) return zg_error(ZGPU_ERR_INTERNAL, "unsigned URL '%s'", q->url);
    u += 3;
    const char *slash = strchr(u, '/');
    char host[512], path[8192], query[8192];
    size_t hn = slash ? (size_t)(slash - u) : strlen(u);
    const char *qm = slash ? strchr(slash, '?') : NULL;
    size_t pn = slash ? (qm ? (size_t)(qm - slash) : strlen(slash)) : 0;
    if (hn >= sizeof host || pn >= sizeof path || (qm && strlen(qm + 1) >= sizeof query))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "URL too long to sign: %s", q->url);
    memcpy(host, u, hn);
    host[hn] = '\0';
    if (pn) memcpy(path, slash, pn);
    else path[pn++] = '/';
    path[pn] = '\0';
    snprintf(query, sizeof query, "%s", qm ? qm + 1 : "");
    static const char *const names[] = {"GET", "HEAD", "PUT", "POST", "DELETE"};
    char payload[65];
    if (q->upload) zg_sha256_hex(q->upload, q->upload_len, payload); /* else NULL: the signer's hash of "" */
    char date[17];
    zg_sigv4_now(date);
    signing_creds *sc = malloc(sizeof *sc);
    if (!sc) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    zgpu_status st = current_creds(s, date, sc);
    zg_sigv4_request sr = {.method = names[q->method], .host = host, .path = path, .query = query,
                           .payload_sha256 = q->upload ? payload : NULL, .region = s->cfg.region, .service = "s3",
                           .amz_date = date, .signing_key = sc->key};
    zg_sigv4_credentials cr = {sc->akid, sc->secret, sc->token};
    zg_sigv4_result *res = st == ZGPU_OK ? malloc(sizeof *res) : NULL;
    if (st == ZGPU_OK && !res) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    if (st == ZGPU_OK) st = zg_sigv4_sign(&sr, &cr, res);
    if (st == ZGPU_OK) st = set_header_line(q, res->authorization);
    if (st == ZGPU_OK) st = set_header_line(q, res->x_amz_date);
    if (st == ZGPU_OK) st = set_header_line(q, res->x_amz_content_sha256);
    if (st == ZGPU_OK && res->x_amz_security_token[0]) st = set_header_line(q, res->x_amz_security_token);
    free(res);
    OPENSSL_cleanse(sc, sizeof *sc);
    free(sc);
    return st;
}

/* ---- listing ---- */

/* One page of ListObjectsV2 for `object_prefix` (full key prefix), with or without a delimiter. */
static zgpu_status list_page(s3_store *s, const char *object_prefix, int delimit, const char *token,
                             zg_s3_list_page *page) {
    memset(page, 0, sizeof *page);
    size_t cap = 3 * strlen(object_prefix) + (token ? 3 * strlen(token) : 0) + 128;
    char *query = malloc(cap), *enc = malloc(cap);
    zgpu_status st = query && enc ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    if (st == ZGPU_OK) {
        /* parameters in canonical (sorted) order, values encoded as the signer will */
        size_t at = (size_t)snprintf(query, cap, "continuation-token=");
        if (token) {
            zg_s3_uri_encode(token, 1, enc, cap);
            at += (size_t)snprintf(query + at, cap - at, "%s", enc);
        } else {
            at = 0;
        }
        at += (size_t)snprintf(query + at, cap - at, "%s%s", at ? "&" : "", delimit ? "delimiter=%2F&" : "");
        at += (size_t)snprintf(query + at, cap - at, "list-type=2&prefix=");
        zg_s3_uri_encode(object_prefix, 1, enc, cap);
        snprintf(query + at, cap - at, "%s", enc);
    }
    zg_http_req q;
    memset(&q, 0, sizeof q);
    if (st == ZGPU_OK) {
        q.method = ZG_HTTP_GET;
        q.range_length = ZG_HTTP_WHOLE;
        q.prepare = s3_sign;
        q.prepare_user = s;
        q.auth_note = s->r.auth_note;
        q.url = object_url(s, "", query);
        if (!q.url) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    if (st == ZGPU_OK) {
        const char *key = object_prefix;
        st = zg_remote_run(&s->r, &q, 1, &key);
    }
    if (st == ZGPU_OK && !q.found)
        st = zg_error(ZGPU_ERR_NOT_FOUND, "store '%s': bucket '%s' not found", s->r.base.root, s->bucket);
    if (st == ZGPU_OK) st = zg_s3_parse_list((const char *)q.body.data, q.body.size, page);
    if (st != ZGPU_OK && st != ZGPU_ERR_NOT_FOUND && q.found)
        zg_error_prefix("store '%s', listing '%s': ", s->r.base.root, object_prefix);
    free((char *)q.url);
    zg_http_req_clear(&q);
    free(query);
    free(enc);
    return st;
}

/* The object-key prefix of everything below a store prefix: "<store prefix>/<prefix>/" ("" for the bucket's
 * root). malloc'd. */
static char *list_prefix(const s3_store *s, const char *prefix) {
    char *full = full_key(s, prefix);
    if (!full) return NULL;
    size_t fl = strlen(full);
    char *want = malloc(fl + 2);
    if (want) snprintf(want, fl + 2, "%s%s", full, fl ? "/" : "");
    free(full);
    return want;
}

static int entry_cmp(const void *a, const void *b) {
    const zg_list_entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : x->is_dir - y->is_dir;
}

static zgpu_status add_entry(zg_list_entry **e, size_t *n, size_t *cap, const char *name, size_t len, int is_dir,
                             uint64_t size) {
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 64;
        zg_list_entry *ne = realloc(*e, nc * sizeof *ne);
        if (!ne) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        *e = ne;
        *cap = nc;
    }
    char *nm = strndup(name, len);
    if (!nm) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    (*e)[(*n)++] = (zg_list_entry){nm, is_dir, size};
    return ZGPU_OK;
}

/* Every page of the listing of the object keys below `want` (delimit: one level, with common prefixes), in order,
 * each handed to fn and freed after it. A missing bucket is ZGPU_ERR_NOT_FOUND. A truncated page with the
 * continuation token of the page before is an error: the listing would never end (a broken or lying server). */
typedef zgpu_status (*list_page_fn)(s3_store *s, const zg_s3_list_page *page, void *arg);

static zgpu_status list_pages(s3_store *s, const char *want, int delimit, list_page_fn fn, void *arg) {
    char *token = NULL;
    zgpu_status st;
    do {
        zg_s3_list_page page;
        st = list_page(s, want, delimit, token, &page);
        if (st == ZGPU_OK) st = fn(s, &page, arg);
        /* (zg_s3_parse_list refuses a truncated page without a continuation token) */
        if (st == ZGPU_OK && page.truncated && token && strcmp(token, page.continuation) == 0)
            st = zg_error(ZGPU_ERR_IO, "store '%s', listing '%s': a truncated listing page repeats the continuation "
                          "token of the page before it", s->r.base.root, want);
        free(token);
        token = NULL;
        if (st == ZGPU_OK && page.truncated && !(token = strdup(page.continuation)))
            st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        zg_s3_list_page_free(&page);
    } while (st == ZGPU_OK && token);
    free(token);
    return st;
}

/* s3_list's page consumer: the direct children of `want` (common prefixes are "directories"). */
typedef struct list_acc {
    const char *want;
    size_t wl, n, cap;
    zg_list_entry *e;
} list_acc;

static zgpu_status list_children(s3_store *s, const zg_s3_list_page *page, void *arg) {
    (void)s;
    list_acc *acc = arg;
    zgpu_status st = ZGPU_OK;
    for (size_t i = 0; st == ZGPU_OK && i < page->n_prefixes; i++) {
        const char *p = page->prefixes[i];
        size_t pl = strlen(p);
        if (pl <= acc->wl + 1 || strncmp(p, acc->want, acc->wl) != 0) continue; /* not below it (a lying server) */
        st = add_entry(&acc->e, &acc->n, &acc->cap, p + acc->wl, pl - acc->wl - 1, 1, 0);
    }
    for (size_t i = 0; st == ZGPU_OK && i < page->n_objects; i++) {
        const char *k = page->objects[i].key;
        if (strncmp(k, acc->want, acc->wl) != 0 || !k[acc->wl] || strchr(k + acc->wl, '/')) continue;
        st = add_entry(&acc->e, &acc->n, &acc->cap, k + acc->wl, strlen(k + acc->wl), 0, page->objects[i].size);
    }
    return st;
}

static zgpu_status s3_list(zg_store *st_, const char *prefix, zg_list_entry **entries, size_t *n) {
    s3_store *s = (s3_store *)st_;
    *entries = NULL;
    *n = 0;
    char *want = list_prefix(s, prefix);
    if (!want) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    list_acc acc = {want, strlen(want), 0, 0, NULL};
    zgpu_status st = list_pages(s, want, 1, list_children, &acc);
    free(want);
    if (st != ZGPU_OK) {
        zg_list_free(acc.e, acc.n);
        return st;
    }
    qsort(acc.e, acc.n, sizeof *acc.e, entry_cmp);
    *entries = acc.e;
    *n = acc.n;
    return ZGPU_OK;
}

/* s3_erase_prefix's page consumer: the page's objects below `want`, as store keys, deleted in one batch. */
typedef struct erase_acc {
    const char *want;
    size_t wl, strip;
} erase_acc;

static zgpu_status erase_listed(s3_store *s, const zg_s3_list_page *page, void *arg) {
    const erase_acc *acc = arg;
    char **keys = calloc(page->n_objects + 1, sizeof *keys);
    if (!keys) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    size_t nk = 0;
    for (size_t i = 0; i < page->n_objects; i++)
        if (strncmp(page->objects[i].key, acc->want, acc->wl) == 0 && strlen(page->objects[i].key) >= acc->strip)
            keys[nk++] = page->objects[i].key + acc->strip;
    zgpu_status st = zg_remote_erase_keys(&s->r, keys, nk);
    free(keys);
    return st;
}

/* Every object below the store's `prefix` (recursively), as store keys; then deleted in batches. */
static zgpu_status s3_erase_prefix(zg_store *st_, const char *prefix) {
    s3_store *s = (s3_store *)st_;
    char *want = list_prefix(s, prefix);
    if (!want) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    erase_acc acc = {want, strlen(want), strlen(s->prefix) + (s->prefix[0] ? 1 : 0)};
    zgpu_status st = list_pages(s, want, 0, erase_listed, &acc);
    free(want);
    return st == ZGPU_ERR_NOT_FOUND ? ZGPU_OK : st; /* (no bucket: nothing to erase) */
}

/* ---- writes ---- */

static zgpu_status multipart_abort(s3_store *s, const char *key, const char *query) {
    zg_http_req q;
    ZG_FORWARD(zg_remote_req(&s->r, &q, ZG_HTTP_DELETE, key, query));
    zg_http_run(s->r.set.client, &q, 1); /* best effort: the upload's parts expire by the bucket's rules anyway */
    free((char *)q.url);
    zg_http_req_clear(&q);
    return ZGPU_OK;
}

/* A value of multipart_threshold bytes or more: initiate, every part in flight together, complete; on a
 * failure the upload is aborted, and the old value (if any) stays. */
static zgpu_status put_multipart(s3_store *s, const char *key, const uint8_t *data, size_t n) {
    const uint64_t part = s->r.set.multipart_part_size;
    const size_t parts = (size_t)((n + part - 1) / part);
    if (parts > 10000)
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "store '%s', key '%s': %zu bytes need %zu parts of %llu bytes; S3 "
                        "allows 10000 (raise multipart_part_size)", s->r.base.root, key, n, parts,
                        (unsigned long long)part);
    zg_http_req q;
    ZG_FORWARD(zg_remote_req(&s->r, &q, ZG_HTTP_POST, key, "uploads="));
    zgpu_status st = zg_remote_run(&s->r, &q, 1, &key);
    char upload_id[1024] = {0};
    if (st == ZGPU_OK) st = zg_s3_parse_upload_id((const char *)q.body.data, q.body.size, upload_id, sizeof upload_id);
    free((char *)q.url);
    zg_http_req_clear(&q);
    if (st != ZGPU_OK) return st;
    char enc_id[3200], query[3300];
    zg_s3_uri_encode(upload_id, 1, enc_id, sizeof enc_id);
    zg_http_req *pq = calloc(parts, sizeof *pq);
    const char **keys = calloc(parts, sizeof *keys);
    if (!pq || !keys) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; st == ZGPU_OK && i < parts; i++) {
        snprintf(query, sizeof query, "partNumber=%zu&uploadId=%s", i + 1, enc_id);
        st = zg_remote_req(&s->r, &pq[i], ZG_HTTP_PUT, key, query);
        pq[i].upload = data + i * part;
        pq[i].upload_len = (size_t)(i + 1 < parts ? part : n - i * part);
        pq[i].want_etag = 1;
        keys[i] = key;
    }
    if (st == ZGPU_OK) st = zg_remote_run(&s->r, pq, parts, keys);
    char *body = NULL;
    if (st == ZGPU_OK) {
        const char **etags = calloc(parts, sizeof *etags);
        if (!etags) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        for (size_t i = 0; st == ZGPU_OK && i < parts; i++) {
            etags[i] = pq[i].etag;
            if (!pq[i].etag[0])
                st = zg_error(ZGPU_ERR_IO, "store '%s', key '%s': part %zu of a multipart upload came back without "
                              "an ETag", s->r.base.root, key, i + 1);
        }
        if (st == ZGPU_OK && !(body = zg_s3_complete_body(parts, etags))) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        free(etags);
    }
    for (size_t i = 0; pq && i < parts; i++) {
        free((char *)pq[i].url);
        zg_http_req_clear(&pq[i]);
    }
    free(pq);
    free(keys);
    snprintf(query, sizeof query, "uploadId=%s", enc_id);
    if (st == ZGPU_OK) {
        st = zg_remote_req(&s->r, &q, ZG_HTTP_POST, key, query);
        if (st == ZGPU_OK) {
            q.upload = (const uint8_t *)body;
            q.upload_len = strlen(body);
            st = zg_remote_run(&s->r, &q, 1, &key);
            /* S3 may answer 200 and still fail the completion, in the body */
            char code[128], msg[512];
            if (st == ZGPU_OK) {
                zg_s3_parse_error((const char *)q.body.data, q.body.size, code, sizeof code, msg, sizeof msg);
                if (code[0])
                    st = zg_error(ZGPU_ERR_IO, "store '%s', key '%s': completing a multipart upload: %s: %s",
                                  s->r.base.root, key, code, msg);
            }
            free((char *)q.url);
            zg_http_req_clear(&q);
        }
    }
    free(body);
    if (st != ZGPU_OK) {
        char saved[ZG_ERRMSG_MAX];
        zg_error_save(saved);
        multipart_abort(s, key, query);
        zg_error_restore(saved);
    }
    return st;
}

static zgpu_status s3_set(zg_store *st_, const char *key, const void *data, size_t n) {
    s3_store *s = (s3_store *)st_;
    if (n >= s->r.set.multipart_threshold) return put_multipart(s, key, data, n);
    return zg_remote_put(st_, key, data, n);
}

/* Large values one multipart upload each (its parts in flight together), the rest in one batch. */
static zgpu_status s3_set_many(zg_store *st_, const zg_store_put *puts, size_t n) {
    s3_store *s = (s3_store *)st_;
    zg_store_put *small = malloc((n ? n : 1) * sizeof *small);
    if (!small) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    size_t ns = 0;
    zgpu_status st = ZGPU_OK;
    for (size_t i = 0; i < n && st == ZGPU_OK; i++) {
        if (!puts[i].erase && puts[i].n >= s->r.set.multipart_threshold)
            st = put_multipart(s, puts[i].key, puts[i].data, puts[i].n);
        else
            small[ns++] = puts[i];
    }
    if (st == ZGPU_OK) st = zg_remote_set_many(st_, small, ns);
    free(small);
    return st;
}

static void s3_destroy(zg_store *st_) {
    s3_store *s = (s3_store *)st_;
    zg_remote_fini(&s->r);
    pthread_mutex_destroy(&s->key_lock);
    OPENSSL_cleanse(s->key, sizeof s->key);
    free(s->bucket);
    free(s->prefix);
    free(s->origin);
    free(s->bucket_path);
    free(s);
}

static const zg_store_vtable s3_vtable = {
    .name = "s3",
    .remote = 1,
    .get = zg_remote_get,
    .get_range = zg_remote_get_range,
    .size = zg_remote_size,
    .set = s3_set,
    .erase = zg_remote_erase,
    .erase_prefix = s3_erase_prefix,
    .list = s3_list,
    .destroy = s3_destroy,
    .lock = zg_remote_lock,
    .unlock = zg_remote_unlock,
    .get_many = zg_remote_get_many,
    .link = zg_remote_link,
    .lock_many = zg_remote_lock_many,
    .unlock_many = zg_remote_unlock_many,
    .set_many = s3_set_many,
};

static const zg_remote_ops s3_ops = {.url = s3_url, .prepare = s3_sign};

zgpu_status zg_store_s3_open(const char *bucket, const char *prefix, const zg_remote_settings *set, zg_store **out) {
    *out = NULL;
    const zgpu_remote_options *o = set->opts;
    zg_s3_choice choice = {0};
    if (o) {
        choice.profile = o->s3_profile;
        choice.region = o->s3_region;
        choice.endpoint = o->s3_endpoint;
        choice.anonymous = o->s3_anonymous;
        choice.addressing = (int)o->s3_addressing;
    }
    s3_store *s = calloc(1, sizeof *s);
    if (!s) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    pthread_mutex_init(&s->key_lock, NULL);
    zgpu_status st = zg_s3_config_resolve(&choice, &s->cfg);
    char root[2048];
    snprintf(root, sizeof root, "s3://%s%s%s", bucket, *prefix ? "/" : "", prefix);
    if (st != ZGPU_OK) {
        zg_error_prefix("store '%s': ", root);
        pthread_mutex_destroy(&s->key_lock);
        free(s);
        return st;
    }
    s->bucket = strdup(bucket);
    s->prefix = strdup(prefix);
    /* where requests go: the endpoint (scheme://host[:port], any path ignored) or AWS's regional one */
    char origin[1200];
    if (s->cfg.endpoint[0]) snprintf(origin, sizeof origin, "%s", s->cfg.endpoint);
    else snprintf(origin, sizeof origin, "https://s3.%s.amazonaws.com", s->cfg.region[0] ? s->cfg.region : "us-east-1");
    char *sep = strstr(origin, "://");
    char *pathpart = sep ? strchr(sep + 3, '/') : NULL;
    if (pathpart) *pathpart = '\0';
    if (!sep) {
        st = zg_error(ZGPU_ERR_INVALID_ARGUMENT, "store '%s': the S3 endpoint '%s' is not a URL (http://host:port)",
                      root, s->cfg.endpoint);
    } else if (s->cfg.path_style) {
        s->origin = strdup(origin);
        size_t bl = strlen(bucket) + 2;
        s->bucket_path = malloc(bl);
        if (s->bucket_path) snprintf(s->bucket_path, bl, "/%s", bucket);
    } else {
        size_t ol = strlen(origin) + strlen(bucket) + 2;
        s->origin = malloc(ol);
        if (s->origin) snprintf(s->origin, ol, "%.*s%s.%s", (int)(sep + 3 - origin), origin, bucket, sep + 3);
        s->bucket_path = strdup("");
    }
    if (st == ZGPU_OK && (!s->bucket || !s->prefix || !s->origin || !s->bucket_path))
        st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    if (st == ZGPU_OK) st = zg_remote_init(&s->r, &s3_vtable, root, set, &s3_ops);
    if (st != ZGPU_OK) {
        free(s->bucket);
        free(s->prefix);
        free(s->origin);
        free(s->bucket_path);
        pthread_mutex_destroy(&s->key_lock);
        free(s);
        return st;
    }
    s->r.not_found_403 = s->cfg.anonymous;
    if (s->cfg.anonymous)
        snprintf(s->r.auth_note, sizeof s->r.auth_note, "requests unsigned: no S3 credentials found, or anonymous "
                 "asked for");
    else
        snprintf(s->r.auth_note, sizeof s->r.auth_note, "requests signed with the credentials of %s", s->cfg.source);
    /* its identity (store.h id): where its objects are, so that one bucket at two endpoints is two stores */
    size_t il = strlen(s->origin) + strlen(s->bucket_path) + strlen(prefix) + 2;
    char *id = malloc(il);
    if (id) {
        snprintf(id, il, "%s%s%s%s", s->origin, s->bucket_path, *prefix ? "/" : "", prefix);
        free(s->r.base.id);
        s->r.base.id = id;
    } /* out of memory: "s3://bucket/prefix" from zg_remote_init stays */
    *out = &s->r.base;
    return ZGPU_OK;
}
