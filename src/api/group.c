/* Groups: open, create, members, attributes; and what kind of node a path holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/array.h"
#include "api/consolidated.h"
#include "api/stage.h"
#include "cache/chunk_cache.h"
#include "format/tiff/tiff.h"
#include "common/status.h"
#include "store/url.h"

/* (v3: the consolidated_metadata written is the store's, which zgpu's writes below this group may have updated
 * since this handle read it) */
static zgpu_status fresh_consolidated(zgpu_group *g) {
    if (g->meta.zarr_format != 3) return ZGPU_OK;
    zj_value *v = NULL;
    zgpu_status st = zg_store_get_json(g->store, "zarr.json", &v);
    zj_value *cm = st == ZGPU_OK ? zj_get(v, "consolidated_metadata") : NULL;
    if (cm) {
        zj_value *c = zj_clone(cm);
        st = c ? zj_set(g->meta.doc, "consolidated_metadata", c) : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    zj_free(v);
    return st;
}

static zgpu_status write_group(zgpu_group *g) {
    const char *key = g->meta.zarr_format == 3 ? "zarr.json" : ".zgroup";
    /* a consolidating group's document under its write lock, which member writes take to update it too (and
     * with the consolidated metadata stored now, which may be newer than this handle's) */
    zgpu_status st = fresh_consolidated(g);
    const int consolidating = st == ZGPU_OK && g->meta.zarr_format == 3 && zj_get(g->meta.doc, "consolidated_metadata");
    zg_store_lock lk;
    const int locked = consolidating && g->store->vt->lock && (st = g->store->vt->lock(g->store, key, &lk)) == ZGPU_OK;
    if (locked) st = fresh_consolidated(g);
    char *doc = st == ZGPU_OK ? zg_group_meta_to_json(&g->meta) : NULL;
    if (st == ZGPU_OK && !doc) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    if (st == ZGPU_OK) st = g->store->vt->set(g->store, key, doc, strlen(doc));
    if (locked) g->store->vt->unlock(g->store, &lk);
    free(doc);
    if (st != ZGPU_OK || g->meta.zarr_format == 3) return st;
    char *attrs = zj_write(g->meta.attributes, 2);
    if (!attrs) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    st = g->store->vt->set(g->store, ".zattrs", attrs, strlen(attrs));
    free(attrs);
    return st;
}

static zgpu_status group_alloc(zgpu_context *ctx, const char *path, zgpu_group **out) {
    *out = NULL;
    if (!ctx || !path) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "context and path are required");
    zgpu_group *g = calloc(1, sizeof *g);
    if (!g || !(g->path = zg_location_canonical(path))) {
        free(g);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    g->ctx = ctx;
    zgpu_status st = zg_store_open(ctx, g->path, &g->store);
    if (st != ZGPU_OK) {
        zgpu_group_close(g);
        return st;
    }
    *out = g;
    return ZGPU_OK;
}

zgpu_status zg_store_node_kind(zg_store *s, int *kind, int *format) {
    char *text = NULL;
    size_t len;
    *kind = 0;
    *format = 0;
    ZG_FORWARD(zg_store_get_text(s, "zarr.json", &text, &len));
    if (text) {
        zj_value *v = NULL;
        zgpu_status st = zj_parse(text, len, "zarr.json", &v);
        free(text);
        ZG_FORWARD(st);
        const char *nt = zj_string(zj_get(v, "node_type"));
        *kind = nt && !strcmp(nt, "array") ? 1 : nt && !strcmp(nt, "group") ? 2 : 0;
        *format = 3;
        zj_free(v);
        if (!*kind) return zg_error(ZGPU_ERR_BAD_METADATA, "'%s/zarr.json': node_type must be \"array\" or \"group\"", s->root);
        return ZGPU_OK;
    }
    uint64_t size;
    int found = 0;
    ZG_FORWARD(s->vt->size(s, ".zarray", &size, &found));
    if (found) { *kind = 1; *format = 2; return ZGPU_OK; }
    ZG_FORWARD(s->vt->size(s, ".zgroup", &size, &found));
    if (found) { *kind = 2; *format = 2; }
    return ZGPU_OK;
}

ZGPU_API zgpu_status zgpu_context_node_kind(zgpu_context *ctx, const char *path, int *kind) {
    if (!ctx || !path || !kind) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "NULL argument");
    if (!zg_is_url(path))
        zg_stage_recover(path); /* nothing there: perhaps a writer died mid-swap, with the old node beside it */
    zg_store *s;
    ZG_FORWARD(zg_store_open(ctx, path, &s));
    int format;
    zgpu_status st = zg_store_node_kind(s, kind, &format);
    zg_store_free(s);
    return st;
}

zgpu_status zg_remote_clear_node(zg_store *s, int overwrite, const char *where) {
    int kind = 0, format = 0;
    ZG_FORWARD(zg_store_node_kind(s, &kind, &format));
    if (kind && !overwrite)
        return zg_error(ZGPU_ERR_EXISTS, "%s: %s is there already (overwrite replaces it)", where,
                        kind == 1 ? "an array" : "a group");
    if (!kind) return ZGPU_OK;
    zgpu_status st = s->vt->erase_prefix(s, "");
    zg_chunk_cache_invalidate_prefix_all(s->id, ""); /* after the objects are gone; what went before failing too */
    return st;
}

ZGPU_API zgpu_status zgpu_node_kind(const char *path, int *kind) {
    if (!path || !kind) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "NULL argument");
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.num_threads = 1; /* only for its stores */
    zgpu_context *ctx;
    ZG_FORWARD(zgpu_context_create(&o, &ctx));
    zgpu_status st = zgpu_context_node_kind(ctx, path, kind);
    zgpu_context_free(ctx);
    return st;
}

/* The group's metadata from its document, fetched already: zarr.json (v2 = 0) or .zgroup (v2 = 1, its .zattrs
 * read here). */
static zgpu_status group_from_doc(zgpu_group *g, const char *where, const char *text, size_t len, int v2) {
    if (!v2) return zg_group_meta_parse_v3(text, len, where, &g->meta);
    char *attrs = NULL;
    size_t attrs_len = 0;
    zgpu_status st = zg_store_get_text(g->store, ".zattrs", &attrs, &attrs_len);
    if (st == ZGPU_OK) st = zg_group_meta_parse_v2(text, len, attrs, attrs_len, where, &g->meta);
    free(attrs);
    return st;
}

static zgpu_status group_open_doc(zgpu_context *ctx, const char *path, const char *text, size_t len, int v2,
                                  zgpu_group **out) {
    zgpu_group *g;
    ZG_FORWARD(group_alloc(ctx, path, &g));
    char where[1100];
    snprintf(where, sizeof where, "group '%s'", path);
    zgpu_status st = group_from_doc(g, where, text, len, v2);
    if (st != ZGPU_OK) {
        zgpu_group_close(g);
        return st;
    }
    *out = g;
    return ZGPU_OK;
}

ZGPU_API zgpu_status zgpu_group_open(zgpu_context *ctx, const char *path, zgpu_group **out) {
    if (!out) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_group_open: out is NULL");
    if (!zg_is_url(path)) zg_stage_recover(path);
    zgpu_group *g;
    ZG_FORWARD(group_alloc(ctx, path, &g));
    char where[1100];
    snprintf(where, sizeof where, "group '%s'", path);
    char *text = NULL;
    size_t len = 0;
    int v2 = 0;
    zgpu_status st = zg_store_get_text(g->store, "zarr.json", &text, &len);
    if (st == ZGPU_OK && !text) {
        v2 = 1;
        st = zg_store_get_text(g->store, ".zgroup", &text, &len);
        if (st == ZGPU_OK && !text) st = zg_error(ZGPU_ERR_NOT_FOUND, "%s: no group there (no zarr.json or .zgroup)", where);
    }
    if (st == ZGPU_OK) st = group_from_doc(g, where, text, len, v2);
    free(text);
    if (st != ZGPU_OK) {
        zgpu_group_close(g);
        return st;
    }
    *out = g;
    return ZGPU_OK;
}

/* node_type of a v3 document: 1 array, 2 group, 0 neither or not JSON (the opener then says what is wrong). */
static int v3_node_type(const char *text, size_t len) {
    zj_value *doc = NULL;
    if (zj_parse(text, len, "zarr.json", &doc) != ZGPU_OK) return 0;
    const zj_value *nt = doc->type == ZJ_OBJECT ? zj_get(doc, "node_type") : NULL;
    int kind = nt && nt->type == ZJ_STRING ? (!strcmp(nt->str, "array") ? 1 : !strcmp(nt->str, "group") ? 2 : 0) : 0;
    zj_free(doc);
    return kind;
}

ZGPU_API zgpu_status zgpu_context_open_node(zgpu_context *ctx, const char *path, zgpu_array **array,
                                            zgpu_group **group) {
    if (!ctx || !path || !array || !group) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "NULL argument");
    *array = NULL;
    *group = NULL;
    if (zg_tiff_path_is_tiff(path)) return zgpu_array_open(ctx, path, array); /* a TIFF file: an array */
    if (!zg_is_url(path)) zg_stage_recover(path);
    zg_store *s;
    ZG_FORWARD(zg_store_open(ctx, path, &s));
    char *text = NULL;
    size_t len = 0;
    int v2 = 0, kind = 0;
    zgpu_status st = zg_store_get_text(s, "zarr.json", &text, &len);
    if (st == ZGPU_OK && text) {
        kind = v3_node_type(text, len);
        if (!kind) kind = 1; /* (not an array's nor a group's document: the array parser names what is wrong) */
    } else if (st == ZGPU_OK) {
        v2 = 1;
        st = zg_store_get_text(s, ".zarray", &text, &len);
        if (st == ZGPU_OK && text) kind = 1;
        else if (st == ZGPU_OK && (st = zg_store_get_text(s, ".zgroup", &text, &len)) == ZGPU_OK && text) kind = 2;
    }
    zg_store_free(s);
    if (st == ZGPU_OK && !kind) st = zg_error(ZGPU_ERR_NOT_FOUND, "no array or group at '%s'", path);
    if (st == ZGPU_OK && kind == 1) st = zg_array_open_doc(ctx, path, text, len, v2, array);
    if (st == ZGPU_OK && kind == 2) st = group_open_doc(ctx, path, text, len, v2, group);
    free(text);
    return st;
}

/* Writes a new group at its path: in place when nothing is there to lose, else built beside it and swapped in
 * (api/stage.h), so that an interruption leaves the old node whole. */
static zgpu_status place_group(zgpu_group *g, int overwrite) {
    char where[1100];
    snprintf(where, sizeof where, "group '%s'", g->path);
    if (g->store->vt->remote) { /* an object store: replaced by deleting its objects first (no renames) */
        ZG_FORWARD(zg_remote_clear_node(g->store, overwrite, where));
        return write_group(g);
    }
    char *dir = NULL, *name = NULL;
    int state, replace;
    ZG_FORWARD(zg_stage_prepare(g->path, overwrite, where, &dir, &name, &state, &replace));
    zgpu_status st = ZGPU_OK;
    if (st == ZGPU_OK && replace) {
        zg_stage *stage = NULL;
        zg_store *final = g->store, *staged = NULL;
        st = zg_stage_begin(dir, name, &stage);
        int confine = g->ctx->opts.confine_to_store;
        if (st == ZGPU_OK) st = zg_store_fs_open_confined(stage->path, confine, &staged);
        if (st == ZGPU_OK) {
            g->store = staged;
            st = write_group(g);
            g->store = final;
        }
        zg_store_free(staged);
        if (st == ZGPU_OK) st = zg_stage_commit(stage, 1, where);
        zg_stage_discard(stage); /* after a commit this only frees it */
        zg_store *fresh = NULL;  /* the path now names another directory */
        if (st == ZGPU_OK) st = zg_store_open(g->ctx, g->path, &fresh);
        if (st == ZGPU_OK) {
            zg_store_free(g->store);
            g->store = fresh;
        }
    } else if (st == ZGPU_OK) {
        st = write_group(g);
    }
    free(dir);
    free(name);
    return st;
}

ZGPU_API zgpu_status zgpu_group_create(zgpu_context *ctx, const char *path, int zarr_format,
                                       const char *attributes_json, int overwrite, zgpu_group **out) {
    if (!out) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_group_create: out is NULL");
    if (zarr_format != 2 && zarr_format != 3)
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zarr_format must be 2 or 3, not %d", zarr_format);
    zgpu_group *g;
    ZG_FORWARD(group_alloc(ctx, path, &g)); /* directories appear with the first write */
    zgpu_status st = zg_group_meta_new(zarr_format, attributes_json, &g->meta);
    if (st == ZGPU_OK) st = place_group(g, overwrite);
    if (st == ZGPU_OK) st = zg_consolidated_changed(ctx, g->path, ZG_NODE_REPLACED);
    if (st != ZGPU_OK) {
        zgpu_group_close(g);
        return st;
    }
    *out = g;
    return ZGPU_OK;
}

ZGPU_API void zgpu_group_close(zgpu_group *g) {
    if (!g) return;
    zg_group_meta_free(&g->meta);
    zg_store_free(g->store);
    free(g->path);
    free(g);
}

ZGPU_API int zgpu_group_zarr_format(const zgpu_group *g) { return g->meta.zarr_format; }

/* Direct members named by the group's consolidated metadata (v3: keys without '/' in its zarr.json's; v2: "<name>/
 * .zarray" or ".zgroup" keys of its .zmetadata), for a store that cannot list (plain HTTP). NULL *out: none. */
static int by_name(const void *a, const void *b) {
    return strcmp(zj_string(zj_get(*(zj_value *const *)a, "name")), zj_string(zj_get(*(zj_value *const *)b, "name")));
}

static zgpu_status consolidated_members(const zgpu_group *g, zj_value **out) {
    *out = NULL;
    zj_value *v2doc = NULL;
    const zj_value *md = NULL;
    if (g->meta.zarr_format == 3) {
        md = zj_get(zj_get(g->meta.doc, "consolidated_metadata"), "metadata");
    } else {
        ZG_FORWARD(zg_store_get_json(g->store, ".zmetadata", &v2doc));
        md = zj_get(v2doc, "metadata");
    }
    zgpu_status st = ZGPU_OK;
    if (md && md->type == ZJ_OBJECT && !(*out = zj_new_array())) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; *out && st == ZGPU_OK && i < md->n; i++) {
        const char *k = md->keys[i], *slash = strchr(k, '/');
        char name[1024];
        const char *kind = NULL;
        if (g->meta.zarr_format == 3 && !slash) {
            const char *nt = zj_string(zj_get(md->items[i], "node_type"));
            kind = nt && !strcmp(nt, "group") ? "group" : nt && !strcmp(nt, "array") ? "array" : NULL;
            snprintf(name, sizeof name, "%s", k);
        } else if (g->meta.zarr_format == 2 && slash && (size_t)(slash - k) < sizeof name &&
                   (!strcmp(slash, "/.zarray") || !strcmp(slash, "/.zgroup"))) {
            kind = slash[3] == 'a' ? "array" : "group";
            snprintf(name, sizeof name, "%.*s", (int)(slash - k), k);
        }
        if (!kind || !name[0]) continue;
        zj_value *m = zj_new_object();
        if (!m || zj_set(m, "name", zj_new_string(name)) != ZGPU_OK || zj_set(m, "kind", zj_new_string(kind)) != ZGPU_OK ||
            zj_append(*out, m) != ZGPU_OK)
            st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    if (*out && st == ZGPU_OK) qsort((*out)->items, (*out)->n, sizeof *(*out)->items, by_name);
    zj_free(v2doc);
    if (st != ZGPU_OK) {
        zj_free(*out);
        *out = NULL;
    }
    return st;
}

ZGPU_API zgpu_status zgpu_group_has_consolidated(const zgpu_group *g, int *has) {
    ZG_RETURN_IF(!g || !has, ZGPU_ERR_INVALID_ARGUMENT, "zgpu_group_has_consolidated: group and has are required");
    *has = 0;
    if (g->meta.zarr_format == 3) {
        const zj_value *cm = zj_get(g->meta.doc, "consolidated_metadata");
        *has = cm && cm->type == ZJ_OBJECT && zj_get(cm, "metadata") != NULL;
        return ZGPU_OK;
    }
    zj_value *doc = NULL;
    zgpu_status st = zg_store_get_json(g->store, ".zmetadata", &doc);
    if (st != ZGPU_OK) zg_error_prefix("group '%s': ", g->path);
    const zj_value *md = zj_get(doc, "metadata");
    *has = md && md->type == ZJ_OBJECT;
    zj_free(doc);
    return st;
}

ZGPU_API zgpu_status zgpu_group_members(const zgpu_group *g, char **json) {
    if (!g || !json) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "NULL argument");
    zg_list_entry *e;
    size_t n;
    zgpu_status ls = g->store->vt->list(g->store, "", &e, &n);
    if (ls == ZGPU_ERR_UNSUPPORTED) { /* a server that cannot list: the consolidated metadata, where there is some */
        zj_value *cl = NULL;
        ZG_FORWARD(consolidated_members(g, &cl));
        if (!cl) return zg_error(ZGPU_ERR_UNSUPPORTED, "group '%s': the store cannot list its members and the group "
                                 "has no consolidated metadata", g->path);
        *json = zj_write(cl, 0);
        zj_free(cl);
        return *json ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    ZG_FORWARD(ls);
    zj_value *list = zj_new_array();
    zgpu_status st = list ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < n && st == ZGPU_OK; i++) {
        if (!e[i].is_dir || zg_stage_is_leftover(e[i].name)) continue;
        char child[4096];
        snprintf(child, sizeof child, "%s/%s", g->path, e[i].name);
        zg_store *cs;
        st = zg_store_open(g->ctx, child, &cs);
        if (st != ZGPU_OK) break;
        int kind = 0, format = 0;
        zgpu_status kst = zg_store_node_kind(cs, &kind, &format);
        zg_store_free(cs);
        if (kst != ZGPU_OK || !kind) continue; /* not a Zarr node (or unreadable): not a member */
        zj_value *m = zj_new_object();
        if (!m || zj_set(m, "name", zj_new_string(e[i].name)) != ZGPU_OK ||
            zj_set(m, "kind", zj_new_string(kind == 1 ? "array" : "group")) != ZGPU_OK || zj_append(list, m) != ZGPU_OK)
            st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    zg_list_free(e, n);
    if (st == ZGPU_OK) {
        *json = zj_write(list, 0);
        if (!*json) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    zj_free(list);
    return st;
}

ZGPU_API zgpu_status zgpu_group_attributes(const zgpu_group *g, char **json) {
    if (!g || !json) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "NULL argument");
    *json = zj_write(g->meta.attributes, 0);
    return *json ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
}

ZGPU_API zgpu_status zgpu_group_set_attributes(zgpu_group *g, const char *json) {
    if (!g) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "NULL group");
    zj_value *v = NULL;
    ZG_FORWARD(zg_parse_attributes(json, &v));
    zj_value *old = g->meta.attributes;
    g->meta.attributes = v;
    zgpu_status st = write_group(g);
    if (st == ZGPU_OK) st = zg_consolidated_changed(g->ctx, g->path, ZG_NODE_WRITTEN);
    if (st != ZGPU_OK) {
        g->meta.attributes = old;
        zj_free(v);
        return st;
    }
    zj_free(old);
    return ZGPU_OK;
}

ZGPU_API zgpu_status zgpu_group_consolidate(zgpu_group *g) {
    if (!g) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "NULL group");
    zgpu_status st = zg_consolidate_group(g);
    if (st != ZGPU_OK) return st;
    /* this handle's own document carries it from now on (written back as it is by the next attribute change) */
    st = fresh_consolidated(g);
    /* the groups above this one that consolidate see its new document */
    return st == ZGPU_OK ? zg_consolidated_changed(g->ctx, g->path, ZG_NODE_WRITTEN) : st;
}
