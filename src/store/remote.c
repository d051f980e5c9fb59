/* The part of the HTTP and S3 stores that does not depend on the kind of server (remote.h). */
#include "store/remote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "store/s3/xml.h"

zgpu_status zg_remote_init(zg_remote_store *r, const zg_store_vtable *vt, const char *root,
                           const zg_remote_settings *set, const zg_remote_ops *ops) {
    r->base.vt = vt;
    r->base.root = strdup(root);
    r->base.id = r->base.root ? strdup(root) : NULL; /* HTTP: the base URL (S3 sets its own, with the endpoint) */
    if (!r->base.id) {
        free(r->base.root);
        r->base.root = NULL;
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    r->set = *set;
    r->ops = ops;
    return ZGPU_OK;
}

void zg_remote_fini(zg_remote_store *r) { free(r->base.root); }

/* S3 and most HTTP servers take any byte in a path segment once escaped; RFC 3986's unreserved set and '/'
 * stay as they are, so keys look in logs as they do in the store. */
char *zg_remote_append_key(char *url, const char *key) {
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(url), k = strlen(key);
    char *o = realloc(url, n + 3 * k + 1);
    if (!o) {
        free(url);
        return NULL;
    }
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        unsigned char c = *p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
            c == '_' || c == '~' || c == '/') {
            o[n++] = (char)c;
        } else {
            o[n++] = '%';
            o[n++] = hex[c >> 4];
            o[n++] = hex[c & 15];
        }
    }
    o[n] = '\0';
    return o;
}

char *zg_remote_append_query(char *url, const char *query) {
    if (!url || !query || !*query) return url;
    size_t m = strlen(url), qn = strlen(query);
    char *v = realloc(url, m + qn + 2);
    if (!v) {
        free(url);
        return NULL;
    }
    v[m] = '?';
    memcpy(v + m + 1, query, qn + 1);
    return v;
}

zgpu_status zg_remote_req(zg_remote_store *r, zg_http_req *q, zg_http_method m, const char *key, const char *query) {
    memset(q, 0, sizeof *q);
    q->method = m;
    q->range_length = ZG_HTTP_WHOLE;
    q->not_found_403 = r->not_found_403;
    q->auth_note = r->auth_note[0] ? r->auth_note : NULL;
    q->prepare = r->ops->prepare;
    q->prepare_user = r;
    q->url = r->ops->url(r, key, query);
    return q->url ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
}

static void req_free(zg_http_req *q) {
    free((char *)q->url);
    q->url = NULL;
    zg_http_req_clear(q);
}

/* "absent" answers that are errors: any answer naming a bucket that does not exist (S3's NoSuchBucket: the
 * store's root is not there, not one key), and a 404 to a write (the bucket or the server's path is missing, so
 * nothing was stored). */
static zgpu_status absent_error(zg_remote_store *r, const zg_http_req *q, const char *key) {
    static const char *const names[] = {"GET", "HEAD", "PUT", "POST", "DELETE"};
    char code[128], msg[256];
    zg_s3_parse_error((const char *)q->body.data, q->body.size, code, sizeof code, msg, sizeof msg);
    if (!strcmp(code, "NoSuchBucket"))
        return zg_error(ZGPU_ERR_NOT_FOUND, "store '%s': the bucket does not exist (%s %s: HTTP %ld NoSuchBucket)",
                        r->base.root, names[q->method], q->url, q->http_status);
    if (q->method == ZG_HTTP_PUT || q->method == ZG_HTTP_POST)
        return zg_error(ZGPU_ERR_IO, "store '%s', key '%s': %s %s: HTTP %ld%s%s: nothing was written", r->base.root,
                        key, names[q->method], q->url, q->http_status, code[0] ? " " : "", code);
    return ZGPU_OK;
}

zgpu_status zg_remote_run(zg_remote_store *r, zg_http_req *reqs, size_t n, const char *const *keys) {
    ZG_FORWARD(zg_http_run(r->set.client, reqs, n));
    for (size_t i = 0; i < n; i++) {
        const char *key = keys ? keys[i] : "";
        if (reqs[i].status != ZGPU_OK)
            return zg_error(reqs[i].status, "store '%s', key '%s': %s", r->base.root, key, reqs[i].error);
        if (!reqs[i].found) ZG_FORWARD(absent_error(r, &reqs[i], key));
    }
    return ZGPU_OK;
}

/* The request's body becomes the caller's buffer: handed over when the caller's is growable, else copied
 * (a fixed buffer too small for it is the error zg_buf_append gives). */
static zgpu_status take_body(zg_http_req *q, zg_buf *out) {
    if (!out->fixed) {
        zg_buf_free(out);
        *out = q->body;
        q->body = (zg_buf)ZG_BUF_INIT;
        return ZGPU_OK;
    }
    out->size = 0;
    return zg_buf_append(out, q->body.data, q->body.size);
}

zgpu_status zg_remote_get(zg_store *s, const char *key, zg_buf *out, int *found) {
    zg_remote_store *r = (zg_remote_store *)s;
    zg_http_req q;
    ZG_FORWARD(zg_remote_req(r, &q, ZG_HTTP_GET, key, NULL));
    zgpu_status st = zg_remote_run(r, &q, 1, &key);
    *found = st == ZGPU_OK && q.found;
    if (*found) st = take_body(&q, out);
    req_free(&q);
    return st;
}

zgpu_status zg_remote_get_range(zg_store *s, const char *key, uint64_t offset, uint64_t length, int from_end,
                                uint8_t *out, int *found) {
    zg_store_get g = {.key = key, .offset = offset, .length = length, .from_end = from_end, .out = out};
    zgpu_status st = zg_remote_get_many(s, &g, 1);
    *found = g.found;
    return st;
}

zgpu_status zg_remote_size(zg_store *s, const char *key, uint64_t *size, int *found) {
    zg_remote_store *r = (zg_remote_store *)s;
    zg_http_req q;
    ZG_FORWARD(zg_remote_req(r, &q, ZG_HTTP_HEAD, key, NULL));
    zgpu_status st = zg_remote_run(r, &q, 1, &key);
    *found = st == ZGPU_OK && q.found;
    if (*found && q.object_size == ZG_HTTP_WHOLE)
        st = zg_error(ZGPU_ERR_IO, "store '%s', key '%s': the server gave no Content-Length for HEAD", s->root, key);
    *size = *found ? q.object_size : 0;
    req_free(&q);
    return st;
}

void zg_remote_link(zg_store *s, double *wait_s, double *bytes_per_s) {
    zg_http_client_link(((zg_remote_store *)s)->set.client, wait_s, bytes_per_s);
}

/* ---- batched reads ---- */

/* A plain range of the batch, sorted by key and offset so that the ranges of one object are neighbours. */
typedef struct range_ref {
    const char *key;
    uint64_t offset;
    size_t get;
} range_ref;

static int by_key_offset(const void *pa, const void *pb) {
    const range_ref *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
    if (c) return c;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* The gets of a batch, finished request by request (request_done). */
typedef struct many_done {
    zg_store_get *g;
    zg_http_req *q;
    uint8_t **tmp;        /* a merged request's buffer, or NULL */
    const uint64_t *base; /* a request's first byte in its object */
    size_t *first, *next; /* per request its first get, per get the next of its request (1-based, 0 ends) */
} many_done;

/* A request has its result: the gets it serves take their bytes (a whole body handed over, or their part of a
 * merged range copied out) and are told (on_done). */
static void request_done(void *user, zg_http_req *h) {
    many_done *md = user;
    const size_t k = (size_t)(h - md->q);
    for (size_t i1 = md->first[k]; i1; i1 = md->next[i1 - 1]) {
        zg_store_get *g = &md->g[i1 - 1];
        g->status = h->status;
        g->found = h->status == ZGPU_OK && h->found;
        g->changed = h->http_status == 412 && g->if_match;
        /* (and where a server ignored If-Match, the answer's own ETag tells of another version; a 404 where a
         * version was named: the object was deleted since) */
        if (g->if_match && h->status == ZGPU_OK && (!h->found || (h->etag[0] && strcmp(h->etag, g->if_match) != 0))) {
            g->changed = 1;
            g->found = 0;
            g->status = ZGPU_ERR_IO;
        }
        if (g->etag) snprintf(g->etag, ZG_STORE_ETAG_MAX, "%s", h->status == ZGPU_OK ? h->etag : "");
        g->object_size = h->object_size == ZG_HTTP_WHOLE ? ZG_STORE_WHOLE : h->object_size;
        if (g->found && g->length == ZG_STORE_WHOLE) {
            g->status = take_body(h, g->buf);
            if (g->status == ZGPU_OK) g->object_size = g->buf->size;
        } else if (g->found && md->tmp[k] && g->length) {
            memcpy(g->out, md->tmp[k] + (g->offset - md->base[k]), (size_t)g->length);
        }
        if (g->on_done) g->on_done(g);
    }
}

/* A get's version check and ETag wish on the request serving it. */
static zgpu_status conditional(zg_http_req *q, const zg_store_get *g) {
    if (g->etag || g->if_match) q->want_etag = 1;
    return g->if_match ? zg_http_req_set_header(q, "If-Match", g->if_match) : ZGPU_OK;
}

/* Largest request that merged ranges may make: past it the bytes between ranges cost more memory than a
 * request saves. A batch's merged requests are also kept to about 1/(2 x receiving threads) of its ranges' bytes,
 * at least MERGE_MIN_SPAN, so that every thread has requests to receive: a device read's wave of a sharded OCT
 * volume (45 MB of adjacent 1 MB inner chunks) was three 16 MiB requests on three of sixteen threads. */
#define MERGE_MAX_SPAN ((uint64_t)16 << 20)
#define MERGE_MIN_SPAN ((uint64_t)1 << 20)
/* A range this long is a request of its own: straight into the caller's memory (a merged request's bytes are
 * received into a buffer of its own, then copied out), and enough bytes to keep a connection busy. */
#define MERGE_ALONE_MIN ((uint64_t)256 << 10)

/* A plain range, which may share a request with its object's other ranges (not a whole value, a suffix or a head
 * read, whose lengths are the object's to say). */
static int merges(const zg_remote_store *r, const zg_store_get *g) {
    return g->length != ZG_STORE_WHOLE && !g->from_end && !g->upto && r->set.merge_gap != UINT64_MAX;
}

zgpu_status zg_remote_get_many(zg_store *s, zg_store_get *g, size_t n) {
    zg_remote_store *r = (zg_remote_store *)s;
    if (n == 0) return ZGPU_OK;
    /* plain ranges sorted by key and offset, so the ranges of one object are neighbours and can merge */
    range_ref *ref = malloc(n * sizeof *ref);
    size_t *order = malloc(n * sizeof *order);
    uint32_t *group = malloc(n * sizeof *group);
    uint64_t *goff = malloc(n * sizeof *goff), *glen = malloc(n * sizeof *glen);
    uint64_t *off = malloc(n * sizeof *off), *len = malloc(n * sizeof *len);
    zg_http_req *q = calloc(n, sizeof *q);
    size_t *req_of = malloc(n * sizeof *req_of);   /* request that serves get i */
    uint64_t *req_base = calloc(n, sizeof *req_base); /* offset of request i's first byte in its object */
    uint8_t **tmp = calloc(n, sizeof *tmp);         /* request i's own buffer (a merged range), or NULL */
    const char **keys = calloc(n, sizeof *keys);
    zgpu_status st = ZGPU_OK;
    if (!ref || !order || !group || !goff || !glen || !off || !len || !q || !req_of || !req_base || !tmp || !keys)
        st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for %zu reads", n);
    size_t nq = 0, nr = 0;
    if (st == ZGPU_OK) {
        for (size_t i = 0; i < n; i++) {
            g[i].found = 0;
            g[i].changed = 0;
            g[i].object_size = ZG_STORE_WHOLE;
            if (g[i].etag) g[i].etag[0] = 0;
            if (merges(r, &g[i])) ref[nr++] = (range_ref){g[i].key, g[i].offset, i};
        }
        qsort(ref, nr, sizeof *ref, by_key_offset);
        for (size_t k = 0; k < nr; k++) order[k] = ref[k].get;
    }
    uint64_t range_bytes = 0;
    for (size_t k = 0; k < nr; k++) range_bytes += g[order[k]].length;
    const uint64_t share = range_bytes / (2 * (uint64_t)zg_http_client_threads(r->set.client));
    const uint64_t max_span = share < MERGE_MIN_SPAN ? MERGE_MIN_SPAN : share > MERGE_MAX_SPAN ? MERGE_MAX_SPAN : share;
    /* merged requests for the sorted ranges, object by object */
    for (size_t a = 0; st == ZGPU_OK && a < nr;) {
        size_t b = a;
        while (b < nr && strcmp(g[order[b]].key, g[order[a]].key) == 0) b++;
        for (size_t k = a; k < b; k++) {
            off[k - a] = g[order[k]].offset;
            len[k - a] = g[order[k]].length;
        }
        size_t ng = zg_http_merge_ranges(b - a, off, len, r->set.merge_gap, max_span, MERGE_ALONE_MIN, group, goff,
                                         glen);
        for (size_t k = 0; k < ng && st == ZGPU_OK; k++) {
            st = zg_remote_req(r, &q[nq + k], ZG_HTTP_GET, g[order[a]].key, NULL);
            keys[nq + k] = g[order[a]].key;
            q[nq + k].range_offset = goff[k];
            q[nq + k].range_length = glen[k];
            req_base[nq + k] = goff[k];
        }
        for (size_t k = a; k < b && st == ZGPU_OK; k++) /* (the gets of one object name one version) */
            st = conditional(&q[nq + group[k - a]], &g[order[k]]);
        size_t *members = calloc(ng, sizeof *members);
        if (!members && st == ZGPU_OK) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        for (size_t k = a; k < b && st == ZGPU_OK; k++) {
            req_of[order[k]] = nq + group[k - a];
            members[group[k - a]]++;
        }
        for (size_t k = 0; k < ng && st == ZGPU_OK; k++) {
            if (members[k] == 1 && glen[k] > 0) { /* alone: straight into the caller's memory */
                for (size_t m = a; m < b; m++)
                    if (group[m - a] == k) q[nq + k].out = g[order[m]].out;
            } else {
                tmp[nq + k] = malloc(glen[k] ? (size_t)glen[k] : 1);
                if (!tmp[nq + k]) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for a merged range");
                q[nq + k].out = tmp[nq + k];
            }
        }
        free(members);
        nq += ng;
        a = b;
    }
    /* whole values, suffixes, and (merging off) plain ranges: one request each */
    for (size_t i = 0; st == ZGPU_OK && i < n; i++) {
        if (merges(r, &g[i])) continue;
        st = zg_remote_req(r, &q[nq], ZG_HTTP_GET, g[i].key, NULL);
        keys[nq] = g[i].key;
        if (g[i].length != ZG_STORE_WHOLE) {
            q[nq].range_offset = g[i].offset;
            q[nq].range_length = g[i].length;
            q[nq].range_suffix = g[i].from_end;
            q[nq].range_upto = g[i].upto;
            q[nq].out = g[i].out;
        }
        if (st == ZGPU_OK) st = conditional(&q[nq], &g[i]);
        req_of[i] = nq++;
    }
    /* each request's gets (a merged range serves several), finished as the request ends */
    many_done md = {g, q, tmp, req_base, calloc(nq ? nq : 1, sizeof(size_t)), calloc(n, sizeof(size_t))};
    if (st == ZGPU_OK && (!md.first || !md.next)) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; st == ZGPU_OK && i < n; i++) { /* lists of 1-based get indices */
        md.next[i] = md.first[req_of[i]];
        md.first[req_of[i]] = i + 1;
    }
    for (size_t k = 0; st == ZGPU_OK && k < nq; k++) {
        q[k].done = request_done;
        q[k].done_user = &md;
    }
    if (st == ZGPU_OK) st = zg_remote_run(r, q, nq, keys);
    for (size_t i = 0; st == ZGPU_OK && i < n; i++)
        if (g[i].status != ZGPU_OK)
            st = zg_error(g[i].status, "store '%s', key '%s': the value could not be kept (%s)", s->root, g[i].key,
                          zgpu_status_name(g[i].status));
    free(md.first);
    free(md.next);
    for (size_t i = 0; q && i < nq; i++) {
        req_free(&q[i]);
        free(tmp[i]);
    }
    free(ref);
    free(order);
    free(group);
    free(goff);
    free(glen);
    free(off);
    free(len);
    free(q);
    free(req_of);
    free(req_base);
    free(tmp);
    free(keys);
    return st;
}

/* ---- writes ---- */

zgpu_status zg_remote_put(zg_store *s, const char *key, const void *data, size_t n) {
    zg_remote_store *r = (zg_remote_store *)s;
    zg_http_req q;
    ZG_FORWARD(zg_remote_req(r, &q, ZG_HTTP_PUT, key, NULL));
    q.upload = data;
    q.upload_len = n;
    zgpu_status st = zg_remote_run(r, &q, 1, &key);
    req_free(&q);
    return st;
}

zgpu_status zg_remote_erase_keys(zg_remote_store *r, char *const *keys, size_t n) {
    if (n == 0) return ZGPU_OK;
    zg_http_req *q = calloc(n, sizeof *q);
    if (!q) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    zgpu_status st = ZGPU_OK;
    for (size_t i = 0; i < n && st == ZGPU_OK; i++) st = zg_remote_req(r, &q[i], ZG_HTTP_DELETE, keys[i], NULL);
    if (st == ZGPU_OK) st = zg_remote_run(r, q, n, (const char *const *)keys);
    for (size_t i = 0; i < n; i++) req_free(&q[i]);
    free(q);
    return st;
}

zgpu_status zg_remote_erase(zg_store *s, const char *key) {
    char *k = (char *)key;
    return zg_remote_erase_keys((zg_remote_store *)s, &k, 1);
}

zgpu_status zg_remote_set_many(zg_store *s, const zg_store_put *puts, size_t n) {
    zg_remote_store *r = (zg_remote_store *)s;
    if (n == 0) return ZGPU_OK;
    zg_http_req *q = calloc(n, sizeof *q);
    const char **keys = calloc(n, sizeof *keys);
    zgpu_status st = q && keys ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < n && st == ZGPU_OK; i++) {
        st = zg_remote_req(r, &q[i], puts[i].erase ? ZG_HTTP_DELETE : ZG_HTTP_PUT, puts[i].key, NULL);
        q[i].upload = puts[i].erase ? NULL : puts[i].data;
        q[i].upload_len = puts[i].erase ? 0 : puts[i].n;
        keys[i] = puts[i].key;
    }
    if (st == ZGPU_OK) st = zg_remote_run(r, q, n, keys);
    for (size_t i = 0; q && i < n; i++) req_free(&q[i]);
    free(q);
    free(keys);
    return st;
}

/* Object stores have no locks: writers of this process are serialised per object (as the filesystem store's
 * threads are), across all its handles of the store, by a process-wide table of mutexes; writers in other
 * processes are not (docs/concurrency.md). */
#define N_STRIPES ZG_STORE_LOCK_SET_BITS
static pthread_mutex_t stripes[N_STRIPES];
static pthread_once_t stripes_once = PTHREAD_ONCE_INIT;
static void stripes_reset(void) {
    for (int i = 0; i < N_STRIPES; i++) pthread_mutex_init(&stripes[i], NULL);
}
/* a forked child has only the forking thread: no writer of its holds a stripe there */
static void stripes_init(void) {
    stripes_reset();
    pthread_atfork(NULL, NULL, stripes_reset);
}

static uint64_t stripe_of(const zg_store *s, const char *key) {
    uint64_t h = 1469598103934665603ull;
    for (const char *k = s->root; *k; k++) h = (h ^ (unsigned char)*k) * 1099511628211ull;
    h = (h ^ '/') * 1099511628211ull;
    for (const char *k = key; *k; k++) h = (h ^ (unsigned char)*k) * 1099511628211ull;
    return h % N_STRIPES;
}

zgpu_status zg_remote_lock(zg_store *s, const char *key, zg_store_lock *lk) {
    pthread_once(&stripes_once, stripes_init);
    lk->slot = stripe_of(s, key);
    pthread_mutex_lock(&stripes[lk->slot]);
    lk->held = 1;
    return ZGPU_OK;
}

void zg_remote_unlock(zg_store *s, zg_store_lock *lk) {
    (void)s;
    if (!lk->held) return;
    pthread_mutex_unlock(&stripes[lk->slot]);
    lk->held = 0;
}

/* The objects' stripes, each once, in ascending order: two batches never wait for each other in a cycle. */
zgpu_status zg_remote_lock_many(zg_store *s, const char *const *keys, size_t n, zg_store_lock_set *held) {
    pthread_once(&stripes_once, stripes_init);
    memset(held, 0, sizeof *held);
    for (size_t i = 0; i < n; i++) {
        uint64_t k = stripe_of(s, keys[i]);
        held->bits[k / 64] |= (uint64_t)1 << (k % 64);
    }
    for (int k = 0; k < N_STRIPES; k++)
        if (held->bits[k / 64] >> (k % 64) & 1) pthread_mutex_lock(&stripes[k]);
    return ZGPU_OK;
}

void zg_remote_unlock_many(zg_store *s, zg_store_lock_set *held) {
    (void)s;
    for (int k = N_STRIPES - 1; k >= 0; k--)
        if (held->bits[k / 64] >> (k % 64) & 1) pthread_mutex_unlock(&stripes[k]);
    memset(held, 0, sizeof *held);
}
