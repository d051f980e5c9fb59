/* Consolidated metadata: a group's copy of every node's metadata below it, which zarr-python and xarray read to
 * open a hierarchy in one request (v2: the group's .zmetadata; v3: its zarr.json's "consolidated_metadata", not
 * in the v3 spec but written by zarr-python 3). zgpu keeps such copies current: every node whose metadata zgpu
 * writes is copied into the consolidated metadata of each group above it that has one (zg_consolidated_changed),
 * so an array zgpu adds to a consolidated group is one that zarr-python lists. zgpu_group_consolidate writes one
 * from scratch. The entries are what zarr-python 3.1 writes: v3, "<relative path>": the node's zarr.json; v2,
 * "<relative path>/.zarray" (or .zgroup) and "/.zattrs", and the group's own ".zgroup" and ".zattrs"; a member
 * group's document with an empty consolidated_metadata of its own. */
#include "api/consolidated.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/array.h"
#include "api/stage.h"
#include "common/json.h"
#include "common/status.h"

/* The parent location of a canonical node location, and the node's name in it; 0 at a root (a filesystem's, a
 * bucket's or a server's: nothing above to update). */
static int split_parent(const char *loc, char **parent, const char **name) {
    const char *scheme = strstr(loc, "://");
    const char *start = scheme ? scheme + 3 : loc;
    if (scheme && !(start = strchr(start, '/'))) return 0; /* "s3://bucket": the root */
    const char *slash = strrchr(loc, '/');
    if (!slash || slash < start || (!scheme && slash == loc) || !slash[1]) return 0;
    if (!(*parent = strndup(loc, (size_t)(slash - loc)))) return 0;
    *name = slash + 1;
    return 1;
}

static zgpu_status write_json(zg_store *s, const char *key, const zj_value *v) {
    char *text = zj_write(v, 2);
    if (!text) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    zgpu_status st = s->vt->set(s, key, text, strlen(text));
    free(text);
    return st;
}

/* A node's documents as its store holds them: format 3 (main: zarr.json), 2 (main: .zarray or .zgroup, attrs:
 * .zattrs or {}), or 0 (nothing there). */
typedef struct node_docs {
    int format, group;
    zj_value *main, *attrs;
} node_docs;

static void docs_free(node_docs *d) {
    zj_free(d->main);
    zj_free(d->attrs);
    memset(d, 0, sizeof *d);
}

static zgpu_status read_docs(zg_store *s, node_docs *d) {
    memset(d, 0, sizeof *d);
    ZG_FORWARD(zg_store_get_json(s, "zarr.json", &d->main));
    if (d->main) {
        const char *nt = zj_string(zj_get(d->main, "node_type"));
        d->format = 3;
        d->group = nt && !strcmp(nt, "group");
        return ZGPU_OK;
    }
    ZG_FORWARD(zg_store_get_json(s, ".zarray", &d->main));
    if (!d->main) {
        ZG_FORWARD(zg_store_get_json(s, ".zgroup", &d->main));
        d->group = d->main != NULL;
    }
    if (!d->main) return ZGPU_OK;
    d->format = 2;
    zgpu_status st = zg_store_get_json(s, ".zattrs", &d->attrs);
    if (st == ZGPU_OK && !d->attrs && !(d->attrs = zj_new_object())) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    return st;
}

/* Drops the entries of `rel` and everything below it (v2 keys are "<rel>/<document>"). */
static void drop_entries(zj_value *md, const char *rel) {
    const size_t n = strlen(rel);
    for (size_t i = md->n; i-- > 0;) {
        const char *k = md->keys[i];
        if (!strncmp(k, rel, n) && (k[n] == 0 || k[n] == '/')) zj_remove(md, k);
    }
}

static zgpu_status set_clone(zj_value *obj, const char *key, const zj_value *v) {
    zj_value *c = zj_clone(v);
    if (!c) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    return zj_set(obj, key, c);
}

/* A v3 group's entry: its zarr.json with an empty consolidated_metadata of its own (as zarr-python writes). */
static zj_value *empty_consolidated(void) {
    zj_value *cm = zj_new_object();
    if (!cm || zj_set(cm, "kind", zj_new_string("inline")) != ZGPU_OK ||
        zj_set(cm, "must_understand", zj_new_bool(0)) != ZGPU_OK || zj_set(cm, "metadata", zj_new_object()) != ZGPU_OK) {
        zj_free(cm);
        return NULL;
    }
    return cm;
}

/* Puts one node's entries (docs, at rel) into a consolidated metadata object `md` of its format. */
static zgpu_status put_entries(zj_value *md, const char *rel, const node_docs *d) {
    if (d->format == 3) {
        zj_value *c = zj_clone(d->main);
        zgpu_status st = c ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        if (st == ZGPU_OK && d->group) {
            zj_value *cm = empty_consolidated();
            st = cm ? zj_set(c, "consolidated_metadata", cm) : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        }
        if (st == ZGPU_OK) return zj_set(md, rel, c);
        zj_free(c);
        return st;
    }
    char key[4200];
    snprintf(key, sizeof key, "%s%s%s", rel, rel[0] ? "/" : "", d->group ? ".zgroup" : ".zarray");
    if (d->group && rel[0]) { /* (a member group's .zgroup: with an empty consolidated_metadata, as zarr-python's) */
        zj_value *c = zj_clone(d->main), *cm = empty_consolidated();
        zgpu_status st = c && cm ? zj_set(c, "consolidated_metadata", cm) : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        if (st != ZGPU_OK) zj_free(cm);
        if (st == ZGPU_OK) st = zj_set(md, key, c);
        else zj_free(c);
        ZG_FORWARD(st);
    } else {
        ZG_FORWARD(set_clone(md, key, d->main));
    }
    snprintf(key, sizeof key, "%s%s.zattrs", rel, rel[0] ? "/" : "");
    return set_clone(md, key, d->attrs);
}

/* The consolidated metadata object ("metadata": path -> documents) of the group in store s, if it has one; with
 * the document that holds it (to write back under *key). *is_group: whether s holds a group of `format`. A
 * document that does not parse is no group here (the node below was written all the same). */
static zgpu_status consolidated_of(zg_store *s, int format, zj_value **holder, zj_value **md, const char **key,
                                   int *is_group) {
    *holder = *md = NULL;
    *is_group = 0;
    zgpu_status st;
    if (format == 3) {
        *key = "zarr.json";
        st = zg_store_get_json(s, "zarr.json", holder);
        const char *nt = *holder ? zj_string(zj_get(*holder, "node_type")) : NULL;
        *is_group = nt && !strcmp(nt, "group");
        zj_value *m = *is_group ? zj_get(zj_get(*holder, "consolidated_metadata"), "metadata") : NULL;
        if (m && m->type == ZJ_OBJECT) *md = m;
    } else {
        uint64_t size;
        *key = ".zmetadata";
        st = s->vt->size(s, ".zgroup", &size, is_group);
        if (st == ZGPU_OK && *is_group) st = zg_store_get_json(s, ".zmetadata", holder);
        zj_value *m = *holder ? zj_get(*holder, "metadata") : NULL;
        if (m && m->type == ZJ_OBJECT) *md = m;
    }
    return st == ZGPU_ERR_BAD_METADATA ? ZGPU_OK : st;
}

/* Puts a node's entries (d, at rel from it) into the consolidated metadata of the group at `loc`, if it has some,
 * under the store's write lock of that document (another zgpu writer adding a member meanwhile is not lost);
 * a replaced node's old entries below rel go first. *is_group: whether loc holds a group of the node's format. */
static zgpu_status update_group(zgpu_context *ctx, const char *loc, const char *rel, const node_docs *d, int how,
                                int *is_group) {
    zg_store *s = NULL;
    ZG_FORWARD(zg_store_open(ctx, loc, &s));
    zj_value *holder = NULL, *md = NULL;
    const char *key = NULL;
    zgpu_status st = consolidated_of(s, d->format, &holder, &md, &key, is_group);
    if (st == ZGPU_OK && md) { /* (locked only where there is something to update: no lock files elsewhere) */
        zj_free(holder);
        holder = NULL;
        zg_store_lock lk;
        const int locked = s->vt->lock && (st = s->vt->lock(s, key, &lk)) == ZGPU_OK;
        if (st == ZGPU_OK) st = consolidated_of(s, d->format, &holder, &md, &key, is_group); /* (again, locked) */
        if (st == ZGPU_OK && md) {
            if (how == ZG_NODE_REPLACED) drop_entries(md, rel);
            st = put_entries(md, rel, d);
            if (st == ZGPU_OK) st = write_json(s, key, holder);
        }
        if (locked) s->vt->unlock(s, &lk);
    }
    if (st != ZGPU_OK) zg_error_prefix("updating the consolidated metadata of group '%s': ", loc);
    zj_free(holder);
    zg_store_free(s);
    return st;
}

zgpu_status zg_consolidated_changed(zgpu_context *ctx, const char *path, int how) {
    node_docs d;
    zg_store *s = NULL;
    ZG_FORWARD(zg_store_open(ctx, path, &s));
    zgpu_status st = read_docs(s, &d);
    zg_store_free(s);
    int is_group = 0;
    /* a v2 group's own entries (".zgroup", ".zattrs") in its own .zmetadata */
    if (st == ZGPU_OK && d.format == 2 && d.group) st = update_group(ctx, path, "", &d, ZG_NODE_WRITTEN, &is_group);
    /* every group above it, up to the first node that is not a group of its format */
    char *cur = strdup(path), *rel = strdup("");
    if (st == ZGPU_OK && d.format && (!cur || !rel)) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    while (st == ZGPU_OK && d.format) {
        char *parent = NULL;
        const char *name = NULL;
        if (!split_parent(cur, &parent, &name)) break;
        char *r = malloc(strlen(name) + strlen(rel) + 2);
        if (!r) {
            free(parent);
            st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
            break;
        }
        sprintf(r, "%s%s%s", name, rel[0] ? "/" : "", rel);
        free(rel);
        rel = r;
        free(cur);
        cur = parent;
        st = update_group(ctx, cur, rel, &d, how, &is_group);
        if (!is_group) break;
    }
    if (st != ZGPU_OK) zg_error_prefix("'%s' was written, but ", path);
    free(cur);
    free(rel);
    docs_free(&d);
    return st;
}

/* ---- zgpu_group_consolidate: the whole hierarchy below a group ---- */

/* Adds the entries of every node below the group at `loc` (rel: its path from the consolidating group). */
static zgpu_status collect(zgpu_context *ctx, const char *loc, const char *rel, int format, zj_value *md, int depth) {
    if (depth > 64) return zg_error(ZGPU_ERR_UNSUPPORTED, "'%s': a hierarchy more than 64 groups deep", loc);
    zg_store *s = NULL;
    ZG_FORWARD(zg_store_open(ctx, loc, &s));
    zg_list_entry *e = NULL;
    size_t n = 0;
    zgpu_status st = s->vt->list(s, "", &e, &n);
    zg_store_free(s);
    for (size_t i = 0; st == ZGPU_OK && i < n; i++) {
        if (!e[i].is_dir || zg_stage_is_leftover(e[i].name)) continue;
        char child[4200], crel[4200];
        snprintf(child, sizeof child, "%s/%s", loc, e[i].name);
        snprintf(crel, sizeof crel, "%s%s%s", rel, rel[0] ? "/" : "", e[i].name);
        zg_store *cs = NULL;
        node_docs d;
        memset(&d, 0, sizeof d);
        st = zg_store_open(ctx, child, &cs);
        if (st == ZGPU_OK) st = read_docs(cs, &d);
        zg_store_free(cs);
        if (st == ZGPU_OK && d.format == format) {
            st = put_entries(md, crel, &d);
            if (st == ZGPU_OK && d.group) st = collect(ctx, child, crel, format, md, depth + 1);
        }
        docs_free(&d);
    }
    zg_list_free(e, n);
    return st;
}

zgpu_status zg_consolidate_group(zgpu_group *g) {
    zj_value *md = zj_new_object();
    if (!md) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    const int format = g->meta.zarr_format;
    node_docs self;
    memset(&self, 0, sizeof self);
    zgpu_status st = format == 2 ? read_docs(g->store, &self) : ZGPU_OK;
    if (st == ZGPU_OK && format == 2 && self.format == 2) st = put_entries(md, "", &self);
    docs_free(&self);
    if (st == ZGPU_OK) st = collect(g->ctx, g->path, "", format, md, 0);
    zj_value *holder = NULL;
    if (st == ZGPU_OK && format == 3) {
        st = zg_store_get_json(g->store, "zarr.json", &holder);
        if (st == ZGPU_OK && !holder) st = zg_error(ZGPU_ERR_NOT_FOUND, "group '%s': zarr.json is gone", g->path);
        zj_value *cm = st == ZGPU_OK ? empty_consolidated() : NULL;
        if (st == ZGPU_OK && !cm) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        if (st == ZGPU_OK) {
            zj_set(cm, "metadata", md);
            md = NULL;
            st = zj_set(holder, "consolidated_metadata", cm);
        }
        if (st == ZGPU_OK) st = write_json(g->store, "zarr.json", holder);
    } else if (st == ZGPU_OK) {
        holder = zj_new_object();
        if (!holder || zj_set(holder, "metadata", md) != ZGPU_OK) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        else md = NULL;
        if (st == ZGPU_OK) st = zj_set(holder, "zarr_consolidated_format", zj_new_int(1));
        if (st == ZGPU_OK) st = write_json(g->store, ".zmetadata", holder);
    }
    zj_free(holder);
    zj_free(md);
    return st;
}
