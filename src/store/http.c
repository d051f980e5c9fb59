/* The HTTP(S) store: a key is a path below the base URL. Reads are GET (ranges for shards; 404 = absent),
 * writes PUT and DELETE for servers that take them (WebDAV-style, or the test server). A plain HTTP server cannot
 * list a directory, so listing and deleting a prefix are refused with a message saying so; arrays and groups
 * open by URL without either. */
#include <stdlib.h>
#include <string.h>

#include "store/remote.h"
#include "common/status.h"

static char *http_url(const zg_remote_store *r, const char *key, const char *query) {
    size_t n = strlen(r->base.root);
    char *u = malloc(n + 2);
    if (!u) return NULL;
    memcpy(u, r->base.root, n);
    u[n] = '/';
    u[n + 1] = '\0';
    if (!*key) u[n] = '\0';
    return zg_remote_append_query(zg_remote_append_key(u, key), query);
}

static zgpu_status http_list(zg_store *s, const char *prefix, zg_list_entry **entries, size_t *n) {
    *entries = NULL;
    *n = 0;
    return zg_error(ZGPU_ERR_UNSUPPORTED, "store '%s': an HTTP server cannot list '%s/' (HTTP has no listing; open "
                    "arrays and groups by their URLs, or use an s3:// URL for an S3-compatible server)", s->root,
                    prefix);
}

static zgpu_status http_erase_prefix(zg_store *s, const char *prefix) {
    return zg_error(ZGPU_ERR_UNSUPPORTED, "store '%s': cannot delete everything below '%s/' over HTTP (it cannot "
                    "list what is there); use an s3:// URL for an S3-compatible server", s->root, prefix);
}

static void http_destroy(zg_store *s) {
    zg_remote_store *r = (zg_remote_store *)s;
    zg_remote_fini(r);
    free(r);
}

static const zg_store_vtable http_vtable = {
    .name = "http",
    .remote = 1,
    .get = zg_remote_get,
    .get_range = zg_remote_get_range,
    .size = zg_remote_size,
    .set = zg_remote_put,
    .erase = zg_remote_erase,
    .erase_prefix = http_erase_prefix,
    .list = http_list,
    .destroy = http_destroy,
    .lock = zg_remote_lock,
    .unlock = zg_remote_unlock,
    .get_many = zg_remote_get_many,
    .link = zg_remote_link,
    .lock_many = zg_remote_lock_many,
    .unlock_many = zg_remote_unlock_many,
    .set_many = zg_remote_set_many,
};

static const zg_remote_ops http_ops = {.url = http_url, .prepare = NULL};

zgpu_status zg_store_http_open(const char *base, const zg_remote_settings *set, zg_store **out) {
    *out = NULL;
    zg_remote_store *r = calloc(1, sizeof *r);
    if (!r) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    zgpu_status st = zg_remote_init(r, &http_vtable, base, set, &http_ops);
    if (st != ZGPU_OK) {
        free(r);
        return st;
    }
    *out = &r->base;
    return ZGPU_OK;
}
