/* Array handles: open, create, resize, metadata queries and attributes. */
#include "api/array.h"
#include "api/consolidated.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/stage.h"
#include "cache/chunk_cache.h"
#include "codec/sharding.h"
#include "common/status.h"
#include "format/tiff/tiff.h"
#include "store/url.h"

/* Reads a small text value (metadata). *text = NULL when absent. */
zgpu_status zg_store_get_text(zg_store *s, const char *key, char **text, size_t *len) {
    zg_buf b = ZG_BUF_INIT;
    int found = 0;
    *text = NULL;
    *len = 0;
    zgpu_status st = s->vt->get(s, key, &b, &found);
    if (st != ZGPU_OK || !found) {
        zg_buf_free(&b);
        return st;
    }
    st = zg_buf_reserve(&b, b.size + 1);
    if (st != ZGPU_OK) {
        zg_buf_free(&b);
        return st;
    }
    b.data[b.size] = '\0';
    *text = (char *)b.data;
    *len = b.size;
    return ZGPU_OK;
}

zgpu_status zg_store_get_json(zg_store *s, const char *key, zj_value **out) {
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    ZG_FORWARD(zg_store_get_text(s, key, &text, &len));
    if (!text) return ZGPU_OK;
    zgpu_status st = zj_parse(text, len, key, out);
    free(text);
    return st;
}

static zgpu_status write_text(zg_store *s, const char *key, char *text) {
    if (!text) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory serialising %s", key);
    zgpu_status st = s->vt->set(s, key, text, strlen(text));
    free(text);
    return st;
}

/* Writes the metadata document(s) of the array now (v2: .zarray last, the document that makes it a node). */
static zgpu_status write_metadata_now(zgpu_array *a) {
    if (a->meta.zarr_format == 3) return write_text(a->store, "zarr.json", zg_meta_to_json(&a->meta));
    ZG_FORWARD(write_text(a->store, ".zattrs", zg_meta_attrs_json(&a->meta)));
    return write_text(a->store, ".zarray", zg_meta_to_json(&a->meta));
}

/* Writes the metadata document(s), except in a staged array, whose metadata waits for the commit: a staging
 * directory never looks like a complete array. */
static zgpu_status write_metadata(zgpu_array *a) {
    if (a->stage) return ZGPU_OK;
    ZG_FORWARD(write_metadata_now(a));
    /* (the groups above keep a copy where they consolidate their members' metadata) */
    return a->remote_staged ? ZGPU_OK : zg_consolidated_changed(a->ctx, a->path, ZG_NODE_WRITTEN);
}

/* Binds the codec chain once metadata is parsed. */
static zgpu_status array_init(zgpu_array *a) {
    zg_repr repr;
    memset(&repr, 0, sizeof repr);
    repr.ndim = a->meta.ndim;
    memcpy(repr.shape, a->meta.chunk_shape, sizeof(uint64_t) * (size_t)a->meta.ndim);
    repr.dtype = a->meta.dtype;
    repr.fill_value = a->meta.fill_value;
    zgpu_status st = zg_chain_create(a->meta.codecs, &repr, &a->chain);
    if (st != ZGPU_OK) {
        zg_error_prefix(ZG_ARRAY_WHERE_FMT ": ", a->path);
        return st;
    }
    zg_chain_set_decode_cap(a->chain, a->ctx->opts.max_decoded_chunk_bytes);
    memcpy(a->read_chunk, a->meta.chunk_shape, sizeof a->read_chunk);
    if (zg_is_sharding(a->chain->a2b)) {
        a->sharding = a->chain->a2b;
        /* A codec after sharding (allowed, if unusual) transforms the whole shard: no partial reads then. */
        if (a->chain->n_b2b == 0) {
            a->shard = a->sharding;
            memcpy(a->read_chunk, zg_sharding_inner_shape(a->shard), sizeof(uint64_t) * (size_t)a->meta.ndim);
        }
    }
    return ZGPU_OK;
}

static zgpu_status array_alloc(zgpu_context *ctx, const char *path, zgpu_array **out) {
    *out = NULL;
    if (!ctx || !path) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "context and path are required");
    zgpu_array *a = calloc(1, sizeof *a);
    if (!a || !(a->path = zg_location_canonical(path))) {
        free(a);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    a->ctx = ctx;
    atomic_init(&a->stats_owner, 0);
    zgpu_status st = zg_store_open(ctx, a->path, &a->store);
    if (st != ZGPU_OK) {
        zgpu_array_close(a);
        return st;
    }
    *out = a;
    return ZGPU_OK;
}

/* The array's metadata from its document, fetched already: zarr.json (v2 = 0) or .zarray (v2 = 1, its .zattrs
 * read here). */
static zgpu_status array_from_doc(zgpu_array *a, const char *where, const char *text, size_t len, int v2) {
    if (!v2) return zg_meta_parse_v3(text, len, where, &a->meta);
    char *attrs = NULL;
    size_t attrs_len = 0;
    zgpu_status st = zg_store_get_text(a->store, ".zattrs", &attrs, &attrs_len);
    if (st == ZGPU_OK) st = zg_meta_parse_v2(text, len, attrs, attrs_len, where, &a->meta);
    free(attrs);
    return st;
}

zgpu_status zg_array_open_doc(zgpu_context *ctx, const char *path, const char *text, size_t len, int v2,
                              zgpu_array **out) {
    zgpu_array *a;
    ZG_FORWARD(array_alloc(ctx, path, &a));
    char where[1100];
    snprintf(where, sizeof where, ZG_ARRAY_WHERE_FMT, path);
    zgpu_status st = array_from_doc(a, where, text, len, v2);
    if (st == ZGPU_OK) st = array_init(a);
    if (st != ZGPU_OK) {
        zgpu_array_close(a);
        return st;
    }
    *out = a;
    return ZGPU_OK;
}

zgpu_status zg_array_open_built(zgpu_context *ctx, const char *path, const char *store_location, const char *doc,
                                const char *single_key, const char *read_only, zgpu_array **out) {
    *out = NULL;
    if (!ctx || !path) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "context and path are required");
    zgpu_array *a = calloc(1, sizeof *a);
    if (!a || !(a->path = strdup(path))) {
        free(a);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    a->ctx = ctx;
    a->read_only = read_only;
    atomic_init(&a->stats_owner, 0);
    char where[1100];
    snprintf(where, sizeof where, ZG_ARRAY_WHERE_FMT, path);
    zgpu_status st = zg_store_open(ctx, store_location, &a->store);
    if (st == ZGPU_OK) st = zg_meta_parse_v3(doc, strlen(doc), where, &a->meta);
    if (st == ZGPU_OK && !(a->meta.single_key = strdup(single_key))) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    if (st == ZGPU_OK) st = array_init(a);
    if (st != ZGPU_OK) {
        zgpu_array_close(a);
        return st;
    }
    *out = a;
    return ZGPU_OK;
}

zgpu_status zg_array_check_writable(const zgpu_array *a, const char *what) {
    if (!a || !a->read_only) return ZGPU_OK;
    return zg_error(ZGPU_ERR_UNSUPPORTED, ZG_ARRAY_WHERE_FMT ": %s: %s is read-only", a->path, what, a->read_only);
}

ZGPU_API zgpu_status zgpu_array_open(zgpu_context *ctx, const char *path, zgpu_array **out) {
    if (!out) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_open: out is NULL");
    if (path && ctx && zg_tiff_path_is_tiff(path)) {
        /* a TIFF file opens as an array of its pages (docs/tiff.md) */
        int is_tiff = 0;
        zgpu_status st = zg_tiff_open_array(ctx, path, out, &is_tiff);
        if (is_tiff || st != ZGPU_ERR_NOT_FOUND) return st;
    }
    if (!zg_is_url(path))
        zg_stage_recover(path); /* nothing there: perhaps a writer died mid-swap, with the old array beside it */
    zgpu_array *a;
    ZG_FORWARD(array_alloc(ctx, path, &a));
    char where[1100];
    snprintf(where, sizeof where, ZG_ARRAY_WHERE_FMT, path);
    char *text = NULL;
    size_t len = 0;
    int v2 = 0;
    zgpu_status st = zg_store_get_text(a->store, "zarr.json", &text, &len);
    if (st == ZGPU_OK && !text) {
        v2 = 1;
        st = zg_store_get_text(a->store, ".zarray", &text, &len);
        if (st == ZGPU_OK && !text) {
            char *g = NULL;
            size_t glen;
            zg_store_get_text(a->store, ".zgroup", &g, &glen);
            st = zg_error(ZGPU_ERR_NOT_FOUND, "%s: %s", where,
                          g ? "is a group, not an array" : "no array there (no zarr.json or .zarray)");
            free(g);
        }
    }
    if (st == ZGPU_OK) st = array_from_doc(a, where, text, len, v2);
    free(text);
    if (st == ZGPU_OK) st = array_init(a);
    if (st != ZGPU_OK) {
        zgpu_array_close(a);
        return st;
    }
    *out = a;
    return ZGPU_OK;
}

/* The array's store at `root` (its own path, or its staging directory). */
static zgpu_status open_store(zgpu_array *a, const char *root) {
    zg_store *st;
    ZG_FORWARD(zg_store_open(a->ctx, root, &st));
    zg_store_free(a->store);
    a->store = st;
    return ZGPU_OK;
}

/* Swaps the staged array in at its path; the handle then reads and writes there. */
static zgpu_status commit_stage(zgpu_array *a, int overwrite, const char *where) {
    ZG_FORWARD(write_metadata_now(a));
    if (a->remote_staged) { /* an object store: the metadata, written last, is what makes the array appear */
        a->remote_staged = 0;
        return zg_consolidated_changed(a->ctx, a->path, ZG_NODE_REPLACED);
    }
    ZG_FORWARD(zg_stage_commit(a->stage, overwrite, where));
    zg_stage_discard(a->stage); /* committed: frees it, removes nothing */
    a->stage = NULL;
    ZG_FORWARD(open_store(a, a->path));
    return zg_consolidated_changed(a->ctx, a->path, ZG_NODE_REPLACED);
}

#define CREATE_FLAGS (ZGPU_CREATE_OVERWRITE | ZGPU_CREATE_STAGED)

/* Where a new array's files go: in place when nothing is there to lose, else (or when staged) a staging
 * directory beside the path, swapped in at once (overwrite) or at zgpu_array_commit (staged). */
/* On an object store (no directories to rename): a node there is replaced only with overwrite, by deleting its
 * objects first; staged, the new array's metadata waits for zgpu_array_commit (readers see no array before). */
static zgpu_status place_new_remote(zgpu_array *a, int overwrite, int staged, const char *where) {
    ZG_FORWARD(zg_remote_clear_node(a->store, overwrite, where));
    zg_chunk_cache_invalidate_prefix_all(a->store->id, ""); /* as in place_new: nothing cached of it stands */
    if (staged) {
        a->remote_staged = 1;
        return ZGPU_OK;
    }
    ZG_FORWARD(write_metadata_now(a));
    return zg_consolidated_changed(a->ctx, a->path, ZG_NODE_REPLACED);
}

static zgpu_status place_new(zgpu_array *a, int flags, const char *where) {
    int overwrite = (flags & ZGPU_CREATE_OVERWRITE) != 0, staged = (flags & ZGPU_CREATE_STAGED) != 0;
    if (a->store->vt->remote) return place_new_remote(a, overwrite, staged, where);
    char *dir = NULL, *name = NULL;
    int state, replace;
    ZG_FORWARD(zg_stage_prepare(a->path, overwrite, where, &dir, &name, &state, &replace));
    zgpu_status st = ZGPU_OK;
    if (state == ZG_DEST_OTHER_DIR && staged && !overwrite)
        st = zg_error(ZGPU_ERR_EXISTS, "%s: a directory that is not empty (and holds no Zarr node) is there; "
                      "overwrite replaces it", where);
    int mount = st == ZGPU_OK && state != ZG_DEST_ABSENT && zg_stage_is_mount_root(dir, name);
    if (st == ZGPU_OK && (staged || replace)) {
        /* An empty directory that renames cannot replace (a mount point, a parent we may not write): built in
         * place, its metadata still last, so an interruption leaves no node there either. */
        st = mount ? ZGPU_ERR_IO : zg_stage_begin(dir, name, &a->stage);
        if (st != ZGPU_OK && state == ZG_DEST_EMPTY_DIR) st = zg_stage_begin_in_place(dir, name, &a->stage);
        if (st == ZGPU_OK) a->stage->overwrite = overwrite;
        if (st == ZGPU_OK) st = open_store(a, a->stage->path);
        if (st == ZGPU_OK && !staged) st = commit_stage(a, overwrite, where);
    } else if (st == ZGPU_OK) {
        st = write_metadata_now(a);
        /* a new array in place of nothing, or of what only outside zgpu deleted: nothing cached of it stands
         * (a swap in, above, drops the destination's chunks in zg_stage_commit) */
        if (st == ZGPU_OK) zg_chunk_cache_invalidate_prefix_all(a->store->id, "");
        if (st == ZGPU_OK) st = zg_consolidated_changed(a->ctx, a->path, ZG_NODE_REPLACED);
    }
    free(dir);
    free(name);
    return st;
}

ZGPU_API zgpu_status zgpu_array_create(zgpu_context *ctx, const char *path, const char *metadata_json, int overwrite,
                                       zgpu_array **out) {
    if (!out || !metadata_json) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_create: out and metadata are required");
    if (overwrite & ~CREATE_FLAGS)
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_create: unknown bits 0x%x in overwrite",
                        (unsigned)(overwrite & ~CREATE_FLAGS));
    zgpu_array *a;
    ZG_FORWARD(array_alloc(ctx, path, &a)); /* directories appear with the first write, after validation */
    char where[1100];
    snprintf(where, sizeof where, ZG_ARRAY_WHERE_FMT, path);
    zgpu_status st = zg_meta_parse_create(metadata_json, where, &a->meta);
    if (st == ZGPU_OK) st = array_init(a); /* validate the codecs before touching storage */
    if (st == ZGPU_OK) st = place_new(a, overwrite, where);
    if (st != ZGPU_OK) {
        zgpu_array_close(a);
        return st;
    }
    *out = a;
    return ZGPU_OK;
}

ZGPU_API zgpu_status zgpu_array_commit(zgpu_array *a) {
    if (!a) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_commit: array is NULL");
    if (!a->stage && !a->remote_staged) return ZGPU_OK;
    char where[1100];
    snprintf(where, sizeof where, ZG_ARRAY_WHERE_FMT, a->path);
    return commit_stage(a, a->stage ? a->stage->overwrite : 0, where);
}

ZGPU_API void zgpu_array_close(zgpu_array *a) {
    if (!a) return;
    zg_chain_free(a->chain);
    zg_meta_free(&a->meta);
    zg_store_free(a->store);
    zg_stage_discard(a->stage); /* never committed: the stage goes, whatever was at the path stays */

    free(a->path);
    free(a);
}

/* Deletes the stored objects whose grid coordinates lie wholly outside new_shape. */
static zgpu_status delete_outside(zgpu_array *a, const uint64_t *new_shape) {
    const zg_array_meta *m = &a->meta;
    int nd = m->ndim;
    uint64_t hi[ZGPU_MAX_DIMS], keep[ZGPU_MAX_DIMS], c[ZGPU_MAX_DIMS] = {0};
    for (int d = 0; d < nd; d++) {
        hi[d] = m->shape[d] / m->chunk_shape[d] + (m->shape[d] % m->chunk_shape[d] != 0);
        keep[d] = new_shape[d] / m->chunk_shape[d] + (new_shape[d] % m->chunk_shape[d] != 0);
        if (hi[d] == 0) return ZGPU_OK;
    }
    if (nd == 0) return ZGPU_OK;
    for (;;) {
        int outside = 0;
        for (int d = 0; d < nd; d++) outside |= c[d] >= keep[d];
        if (outside) {
            char key[1024];
            zg_meta_chunk_key(m, c, key, sizeof key);
            zgpu_status st = a->store->vt->erase(a->store, key);
            zg_chunk_cache_invalidate_object_all(a->store->id, key); /* after the delete (host_write.c) */
            ZG_FORWARD(st);
        }
        int d = nd - 1;
        while (d >= 0 && ++c[d] == hi[d]) c[d--] = 0;
        if (d < 0) break;
    }
    return ZGPU_OK;
}

ZGPU_API zgpu_status zgpu_array_resize(zgpu_array *a, const uint64_t *new_shape) {
    if (!a || (!new_shape && a->meta.ndim > 0)) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_resize: array and shape are required");
    ZG_FORWARD(zg_array_check_writable(a, "zgpu_array_resize"));
    ZG_FORWARD(delete_outside(a, new_shape));
    uint64_t old[ZGPU_MAX_DIMS];
    memcpy(old, a->meta.shape, sizeof old);
    memcpy(a->meta.shape, new_shape, sizeof(uint64_t) * (size_t)a->meta.ndim);
    zgpu_status st = write_metadata(a);
    if (st != ZGPU_OK) memcpy(a->meta.shape, old, sizeof old);
    return st;
}

ZGPU_API int zgpu_array_zarr_format(const zgpu_array *a) { return a->meta.zarr_format; }
ZGPU_API int zgpu_array_ndim(const zgpu_array *a) { return a->meta.ndim; }
ZGPU_API const char *zgpu_array_path(const zgpu_array *a) { return a->path; }
ZGPU_API void zgpu_array_shape(const zgpu_array *a, uint64_t *shape) {
    memcpy(shape, a->meta.shape, sizeof(uint64_t) * (size_t)a->meta.ndim);
}
ZGPU_API void zgpu_array_chunk_shape(const zgpu_array *a, uint64_t *chunk_shape) {
    const uint64_t *c = a->sharding ? zg_sharding_inner_shape(a->sharding) : a->meta.chunk_shape;
    memcpy(chunk_shape, c, sizeof(uint64_t) * (size_t)a->meta.ndim);
}
ZGPU_API int zgpu_array_shard_shape(const zgpu_array *a, uint64_t *shard_shape) {
    memcpy(shard_shape, a->meta.chunk_shape, sizeof(uint64_t) * (size_t)a->meta.ndim);
    return a->sharding != NULL;
}
ZGPU_API zgpu_dtype zgpu_array_dtype(const zgpu_array *a) { return a->meta.dtype.id; }
ZGPU_API size_t zgpu_array_itemsize(const zgpu_array *a) { return a->meta.dtype.size; }
ZGPU_API const char *zgpu_array_dtype_name(const zgpu_array *a) { return a->meta.dtype.name; }
ZGPU_API const void *zgpu_array_fill_value(const zgpu_array *a) { return a->meta.fill_value; }

static zgpu_status json_out(zj_value *v, int indent, int owned, char **json) {
    char *text = v ? zj_write(v, indent) : NULL;
    if (owned) zj_free(v);
    if (!text) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory serialising JSON");
    *json = text;
    return ZGPU_OK;
}

ZGPU_API zgpu_status zgpu_array_numpy_dtype(const zgpu_array *a, char **json) {
    if (!a || !json) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_numpy_dtype: NULL argument");
    const zg_dtype *dt = &a->meta.dtype;
    if (dt->kind == ZG_KIND_STRUCT) /* records are read as stored: the fields keep their byte order */
        return json_out((zj_value *)zj_get(a->meta.doc, "dtype"), 0, 0, json);
    const uint16_t one = 1;
    uint8_t low;
    memcpy(&low, &one, 1);
    char typestr[ZG_DTYPE_V2_MAX];
    return json_out(zj_new_string(zg_dtype_to_v2(dt, low == 0, typestr)), 0, 1, json);
}

ZGPU_API zgpu_status zgpu_array_metadata_json(const zgpu_array *a, char **json) {
    if (!a || !json) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "NULL argument");
    char *doc = zg_meta_to_json(&a->meta);
    if (!doc) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    if (a->meta.zarr_format == 3) {
        *json = doc;
        return ZGPU_OK;
    }
    zj_value *v = NULL;
    zgpu_status st = zj_parse(doc, strlen(doc), ".zarray", &v);
    free(doc);
    ZG_FORWARD(st);
    zj_value *attrs = zj_clone(a->meta.attributes);
    if (!attrs || zj_set(v, "attributes", attrs) != ZGPU_OK) {
        zj_free(v);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    return json_out(v, 2, 1, json);
}

ZGPU_API zgpu_status zgpu_array_codecs_json(const zgpu_array *a, char **json) {
    if (!a || !json) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "NULL argument");
    return json_out(a->meta.codecs, 0, 0, json);
}

ZGPU_API zgpu_status zgpu_array_attributes(const zgpu_array *a, char **json) {
    if (!a || !json) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "NULL argument");
    return json_out(a->meta.attributes, 0, 0, json);
}

zgpu_status zg_parse_attributes(const char *json, zj_value **out) {
    if (!json) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "attributes JSON is NULL");
    zj_value *v = NULL;
    ZG_FORWARD(zj_parse(json, strlen(json), "attributes", &v));
    if (v->type != ZJ_OBJECT) {
        zj_free(v);
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "attributes must be a JSON object");
    }
    *out = v;
    return ZGPU_OK;
}

ZGPU_API zgpu_status zgpu_array_set_attributes(zgpu_array *a, const char *json) {
    if (!a) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "NULL array");
    ZG_FORWARD(zg_array_check_writable(a, "zgpu_array_set_attributes"));
    zj_value *v = NULL;
    ZG_FORWARD(zg_parse_attributes(json, &v));
    zj_value *old = a->meta.attributes;
    a->meta.attributes = v;
    zgpu_status st = write_metadata(a);
    if (st != ZGPU_OK) {
        a->meta.attributes = old;
        zj_free(v);
        return st;
    }
    zj_free(old);
    return ZGPU_OK;
}

static int is_metadata_name(const char *name) {
    return !strcmp(name, "zarr.json") || !strcmp(name, ".zarray") || !strcmp(name, ".zattrs") ||
           !strcmp(name, ".zgroup") || !strcmp(name, ".zmetadata");
}

static zgpu_status walk_sizes(zg_store *s, const char *prefix, uint64_t *n, uint64_t *bytes) {
    zg_list_entry *e;
    size_t count;
    ZG_FORWARD(s->vt->list(s, prefix, &e, &count));
    zgpu_status st = ZGPU_OK;
    for (size_t i = 0; i < count && st == ZGPU_OK; i++) {
        char child[4096];
        snprintf(child, sizeof child, "%s%s%s", prefix, prefix[0] ? "/" : "", e[i].name);
        if (e[i].is_dir) st = walk_sizes(s, child, n, bytes);
        else if (!is_metadata_name(e[i].name)) {
            (*n)++;
            *bytes += e[i].size;
        }
    }
    zg_list_free(e, count);
    return st;
}

ZGPU_API zgpu_status zgpu_array_storage_info(const zgpu_array *a, uint64_t *n_objects, uint64_t *n_bytes) {
    if (!a || !n_objects || !n_bytes) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "NULL argument");
    *n_objects = *n_bytes = 0;
    /* a container whose index came with the array (a TIFF page): its stored tiles, not the files beside it */
    if (a->shard && zg_sharding_fixed_index(a->shard, NULL)) {
        zg_sharding_fixed_stored(a->shard, n_objects, n_bytes);
        return ZGPU_OK;
    }
    return walk_sizes(a->store, "", n_objects, n_bytes);
}

/* The stats lock, held for a struct copy. A mutex held by a parent's thread at a fork() would stay locked in the
 * child for ever (its next read of the array would hang at the end): the lock word is the holder's pid instead, and
 * a word that is neither free nor this process's can only be a parent's hold, which the child takes over. */
static void stats_lock(zgpu_array *a) {
    const int me = (int)getpid();
    for (;;) {
        int cur = atomic_load(&a->stats_owner);
        if (cur != me && atomic_compare_exchange_weak(&a->stats_owner, &cur, me)) return;
        sched_yield();
    }
}

static void stats_unlock(zgpu_array *a) { atomic_store(&a->stats_owner, 0); }

void zg_array_set_stats(zgpu_array *a, const zgpu_read_stats *s) {
    stats_lock(a);
    a->last_stats = *s;
    a->last_stats.struct_size = sizeof a->last_stats;
    stats_unlock(a);
}

ZGPU_API void zgpu_array_last_read_stats(const zgpu_array *a, zgpu_read_stats *stats) {
    size_t n = stats->struct_size && stats->struct_size < sizeof *stats ? stats->struct_size : sizeof *stats;
    zgpu_array *w = (zgpu_array *)a; /* (the lock word changes; the array does not) */
    stats_lock(w);
    memcpy(stats, &a->last_stats, n);
    stats_unlock(w);
    stats->struct_size = n;
}
