/* A TIFF file as zgpu arrays (tiff.h, docs/tiff.md). The array a path names is built as a Zarr v3 document: a
 * sharded array of one shard (the file) whose inner chunks are the tiles or strips, with the chain the page's tags
 * give ([tiff_predictor] bytes [tiff_short_strip] [compressor]); the shard index is the page's tile table, handed
 * to the sharding codec as a fixed index. Reads then take the Zarr paths unchanged: plan, fetch (local or remote),
 * decode on host threads or on the GPU, scatter. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "api/array.h"
#include "codec/sharding.h"
#include "common/base64.h"
#include "common/status.h"
#include "format/tiff/tiff.h"
#include "store/url.h"

/* ---- the path: location, file name, selector ---- */
typedef struct tiff_path {
    char *dir;   /* the store's location */
    char *name;  /* the file's key in it */
    char *file;  /* the location without the selector (for messages and attributes) */
    int kind;    /* 0 default, 1 page, 2 level */
    long long k;
} tiff_path;

static void path_free(tiff_path *t) {
    free(t->dir);
    free(t->name);
    free(t->file);
}

static int ends_with_tif(const char *s, size_t n) {
    static const char *const ext[] = {".tif", ".tiff", ".TIF", ".TIFF", ".btf", ".tf8", ".gtiff"};
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        size_t m = strlen(ext[i]);
        if (n >= m && strncmp(s + n - m, ext[i], m) == 0) return 1;
    }
    return 0;
}

/* Splits "dir/name.tif#level=2"; 0 when the selector is malformed. */
static int parse_path(const char *path, tiff_path *t) {
    memset(t, 0, sizeof *t);
    const char *hash = strrchr(path, '#');
    size_t n = strlen(path);
    if (hash && (strncmp(hash, "#page=", 6) == 0 || strncmp(hash, "#level=", 7) == 0)) {
        const char *num = strchr(hash, '=') + 1;
        char *end;
        errno = 0;
        t->k = strtoll(num, &end, 10);
        if (!isdigit((unsigned char)*num) || *end || errno || t->k < 0) return 0;
        t->kind = hash[1] == 'p' ? 1 : 2;
        n = (size_t)(hash - path);
    }
    t->file = strndup(path, n);
    if (!t->file) return 0;
    while (n > 1 && t->file[n - 1] == '/') t->file[--n] = 0;
    const char *slash = strrchr(t->file, '/');
    if (!slash) {
        t->dir = strdup(".");
        t->name = strdup(t->file);
    } else {
        t->dir = slash == t->file ? strdup("/") : strndup(t->file, (size_t)(slash - t->file));
        t->name = strdup(slash + 1);
    }
    return t->dir && t->name && t->name[0];
}

int zg_tiff_path_is_tiff(const char *path) {
    tiff_path t;
    int ok = parse_path(path, &t), yes = 0;
    if (ok) {
        if (zg_is_url(t.file)) {
            yes = ends_with_tif(t.file, strlen(t.file));
        } else {
            struct stat sb;
            const char *local = strncmp(t.file, "file://", 7) == 0 ? t.file + 7 : t.file;
            if (stat(local, &sb) == 0 && S_ISREG(sb.st_mode)) {
                FILE *f = fopen(local, "rb");
                uint8_t h[4];
                if (f) {
                    yes = fread(h, 1, 4, f) == 4 && zg_tiff_magic(h, 4);
                    fclose(f);
                }
            }
        }
    }
    path_free(&t);
    return yes;
}

/* ---- reading through the store ---- */
typedef struct store_reader {
    zg_store *s;
    const char *key;
} store_reader;

static zgpu_status read_store(void *user, uint64_t offset, uint64_t n, uint8_t *out) {
    store_reader *r = user;
    int found = 0;
    ZG_FORWARD(r->s->vt->get_range(r->s, r->key, offset, n, 0, out, &found));
    ZG_RETURN_IF(!found, ZGPU_ERR_IO, "the file vanished while being read");
    return ZGPU_OK;
}

/* ---- which pages make the array ---- */
static int alike(const zg_tiff_page *a, const zg_tiff_page *b) {
    return a->width == b->width && a->height == b->height && a->samples == b->samples && a->bits == b->bits &&
           a->sample_format == b->sample_format && a->planar == b->planar && a->compression == b->compression &&
           a->predictor == b->predictor && a->photometric == b->photometric && a->tiled == b->tiled &&
           a->tile_width == b->tile_width && a->tile_height == b->tile_height &&
           a->jpeg_tables_n == b->jpeg_tables_n &&
           (a->jpeg_tables_n == 0 || memcmp(a->jpeg_tables, b->jpeg_tables, a->jpeg_tables_n) == 0) &&
           ((a->nodata == NULL) == (b->nodata == NULL)) && (!a->nodata || strcmp(a->nodata, b->nodata) == 0);
}

static int is_full_res(const zg_tiff_page *p) { return !(p->subfile_type & 5); } /* not reduced, not a mask */

/* The levels of the file: level 0 the full-resolution pages of the main chain (a stack where they are alike, else
 * the first alone), level k >= 1 the (k-1)-th SubIFD of those pages where the first has SubIFDs, else the k-th
 * reduced-resolution page of the main chain (a COG's overviews). Fills pages[] (indices into f->pages); returns
 * the count, 0 when the level does not exist. */
static size_t level_pages(const zg_tiff_file *f, long long level, size_t *pages, size_t cap, long long *n_levels) {
    size_t n0 = 0, first = SIZE_MAX;
    for (size_t i = 0; i < f->n_main; i++)
        if (is_full_res(&f->pages[i])) {
            if (first == SIZE_MAX) first = i;
            if (alike(&f->pages[i], &f->pages[first])) n0++;
            else {
                n0 = 0; /* not a stack: the first page alone */
                break;
            }
        }
    if (first == SIZE_MAX) first = 0; /* only reduced or mask pages: the first is level 0 */
    if (n0 == 0) n0 = 1;
    const zg_tiff_page *p0 = &f->pages[first];
    size_t n_reduced = 0;
    for (size_t i = 0; i < f->n_main; i++)
        if ((f->pages[i].subfile_type & 5) == 1) n_reduced++;
    *n_levels = 1 + (long long)(p0->n_subifds ? p0->n_subifds : n_reduced);
    size_t n = 0;
    if (level == 0) {
        for (size_t i = first; i < f->n_main && n < n0 && n < cap; i++)
            if (is_full_res(&f->pages[i]) || i == first) pages[n++] = i;
        return n;
    }
    if (level >= *n_levels) return 0;
    if (p0->n_subifds) {
        /* the SubIFD of each level-0 page, while they are alike */
        size_t base[1024];
        size_t nb = level_pages(f, 0, base, 1024, n_levels);
        *n_levels = 1 + (long long)p0->n_subifds;
        for (size_t b = 0; b < nb && n < cap; b++)
            for (size_t i = f->n_main; i < f->n_pages; i++)
                if ((size_t)f->pages[i].index == base[b] && f->pages[i].subifd == level - 1) {
                    if (n && !alike(&f->pages[i], &f->pages[pages[0]])) return n;
                    pages[n++] = i;
                }
        return n;
    }
    long long k = 0;
    for (size_t i = 0; i < f->n_main; i++)
        if ((f->pages[i].subfile_type & 5) == 1 && ++k == level) {
            pages[0] = i;
            return 1;
        }
    return 0;
}

/* ---- the document ---- */
static zj_value *codec(const char *name, zj_value *conf) { return zg_codec_json(name, conf); }

/* {"name": ..., "configuration": {k: v, ...}} from integer members */
static zj_value *codec_ints(const char *name, int n, const char *const *keys, const int64_t *vals) {
    zj_value *c = zj_new_object();
    for (int i = 0; c && i < n; i++)
        if (zj_set(c, keys[i], zj_new_int(vals[i])) != ZGPU_OK) {
            zj_free(c);
            return NULL;
        }
    return c ? codec(name, c) : NULL;
}

/* The page's chain, encode order: [tiff_predictor] bytes [tiff_short_strip] [compressor]. */
static zj_value *page_chain(const zg_tiff_page *p, int big_endian, uint64_t chunk_bytes) {
    zj_value *list = zj_new_array();
    if (!list) return NULL;
    const int chunky = p->planar == 1;
    const uint64_t row = p->tile_width * (chunky ? p->samples : 1);
    int ok = 1;
    if (p->predictor >= 2) {
        static const char *const k[] = {"predictor", "row_samples", "samples_per_pixel"};
        const int64_t v[] = {p->predictor, (int64_t)row, chunky ? (int64_t)p->samples : 1};
        ok = zj_append(list, codec_ints("tiff_predictor", 3, k, v)) == ZGPU_OK;
    }
    /* bytes: the file's order; predictor 3 hands over host-order values itself */
    zj_value *bc = zj_new_object();
    const int host_big = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
    const int big = p->predictor == 3 ? host_big : big_endian;
    if (ok && bc && p->bits > 8) ok = zj_set(bc, "endian", zj_new_string(big ? "big" : "little")) == ZGPU_OK;
    ok = ok && bc && zj_append(list, codec("bytes", bc)) == ZGPU_OK;
    if (ok && !p->tiled && p->height % p->tile_height) {
        const uint64_t short_rows = p->height % p->tile_height;
        static const char *const k[] = {"short_bytes"};
        const int64_t v[] = {(int64_t)(chunk_bytes / p->tile_height * short_rows)};
        ok = zj_append(list, codec_ints("tiff_short_strip", 1, k, v)) == ZGPU_OK;
    }
    zj_value *comp = NULL;
    switch (p->compression) {
    case 1: break;
    case 5: comp = codec("tiff_lzw", NULL); break;
    case 8: case 32946: comp = codec("numcodecs.zlib", NULL); break;
    case 32773: comp = codec("packbits", NULL); break;
    case 34925: comp = codec("tiff_lzma", NULL); break;
    case 50000: comp = codec("zstd", NULL); break;
    case 7: {
        zj_value *c = zj_new_object();
        char *t = p->jpeg_tables_n ? zg_base64_encode(p->jpeg_tables, p->jpeg_tables_n) : NULL;
        if (c && (!p->jpeg_tables_n || t) &&
            (!t || zj_set(c, "tables", zj_new_string(t)) == ZGPU_OK) &&
            zj_set(c, "photometric", zj_new_int(p->photometric)) == ZGPU_OK &&
            zj_set(c, "samples_per_pixel", zj_new_int(chunky ? p->samples : 1)) == ZGPU_OK)
            comp = codec("tiff_jpeg", c);
        else zj_free(c);
        free(t);
        break;
    }
    }
    if (ok && p->compression != 1) ok = comp && zj_append(list, comp) == ZGPU_OK;
    if (!ok) {
        zj_free(list);
        return NULL;
    }
    return list;
}

/* GDAL_NODATA as the array's fill value, when the data type holds it exactly; else NULL (fill 0). */
static zj_value *nodata_value(const zg_tiff_page *p, double *out) {
    if (!p->nodata) return NULL;
    char *end;
    const char *s = p->nodata;
    while (isspace((unsigned char)*s)) s++;
    double v = strtod(s, &end);
    while (isspace((unsigned char)*end)) end++;
    if (end == s || *end) return NULL;
    *out = v;
    if (p->sample_format == 3) {
        if (isnan(v)) return zj_new_string("NaN");
        if (isinf(v)) return zj_new_string(v > 0 ? "Infinity" : "-Infinity");
        return zj_new_double(v);
    }
    if (v != floor(v)) return NULL;
    const int bits = (int)p->bits;
    if (p->sample_format == 2) {
        double lo = -ldexp(1, bits - 1), hi = ldexp(1, bits - 1);
        return v >= lo && v < hi ? zj_new_int((int64_t)v) : NULL;
    }
    return v >= 0 && v < ldexp(1, bits) ? zj_new_uint((uint64_t)v) : NULL;
}

static int has_geo(const zg_tiff_page *p) {
    return p->n_geokeys || p->n_tiepoints || p->has_pixel_scale || p->has_transform || p->nodata;
}

/* GeoTIFF keys and the geotransform: {"epsg", "geotransform", "nodata", "raster_type", "geokeys", tags...}.
 * sx, sy: how many of p's pixels one pixel of the array covers (a reduced-resolution level without geo tags of its
 * own takes its full-resolution page's, the geotransform scaled as GDAL does for overviews); else 1. */
static zj_value *geo_attrs(const zg_tiff_page *p, double sx, double sy) {
    zj_value *g = zj_new_object();
    if (!g) return NULL;
    int any = 0;
    if (p->n_geokeys >= 4) {
        zj_value *keys = zj_new_object();
        const size_t nk = p->geokeys[3] < (p->n_geokeys - 4) / 4 ? p->geokeys[3] : (p->n_geokeys - 4) / 4;
        for (size_t i = 0; keys && i < nk; i++) {
            const uint16_t *k = p->geokeys + 4 + 4 * i;
            const uint16_t id = k[0], loc = k[1], cnt = k[2], val = k[3];
            char name[16];
            snprintf(name, sizeof name, "%u", id);
            zj_value *v = NULL;
            if (loc == 0) v = zj_new_uint(val);
            else if (loc == 34736 && p->geo_doubles && (size_t)val + cnt <= p->n_geo_doubles) {
                if (cnt == 1) v = zj_new_double(p->geo_doubles[val]);
                else {
                    v = zj_new_array();
                    for (uint16_t j = 0; v && j < cnt; j++) zj_append(v, zj_new_double(p->geo_doubles[val + j]));
                }
            } else if (loc == 34737 && p->geo_ascii && (size_t)val + cnt <= strlen(p->geo_ascii)) {
                size_t len = cnt;
                while (len && (p->geo_ascii[val + len - 1] == '|' || p->geo_ascii[val + len - 1] == 0)) len--;
                v = zj_new_string_len(p->geo_ascii + val, len);
            }
            if (v) zj_set(keys, name, v);
            /* the EPSG code: ProjectedCSTypeGeoKey (3072), else GeographicTypeGeoKey (2048); 32767 = user-defined */
            if (loc == 0 && (id == 3072 || (id == 2048 && !zj_get(g, "epsg"))) && val && val != 32767)
                zj_set(g, "epsg", zj_new_uint(val));
            if (loc == 0 && id == 1025) zj_set(g, "raster_type", zj_new_string(val == 2 ? "point" : "area"));
        }
        if (keys) zj_set(g, "geokeys", keys);
        any = 1;
    }
    double gt[6];
    int have_gt = 0;
    if (p->has_transform) {
        const double *m = p->transform;
        const double t[6] = {m[3], m[0], m[1], m[7], m[4], m[5]};
        memcpy(gt, t, sizeof gt);
        have_gt = 1;
        zj_value *a = zj_new_array();
        for (int i = 0; a && i < 16; i++) zj_append(a, zj_new_double(m[i]));
        if (a) zj_set(g, "model_transformation", a);
    } else if (p->n_tiepoints >= 1 && p->has_pixel_scale) {
        const double *t = p->tiepoints, *s = p->pixel_scale;
        const double v[6] = {t[3] - t[0] * s[0], s[0], 0, t[4] + t[1] * s[1], 0, -s[1]};
        memcpy(gt, v, sizeof gt);
        have_gt = 1;
    }
    if (p->n_tiepoints) {
        zj_value *a = zj_new_array();
        for (size_t i = 0; a && i < 6 * p->n_tiepoints; i++) zj_append(a, zj_new_double(p->tiepoints[i]));
        if (a) zj_set(g, "model_tiepoint", a);
        any = 1;
    }
    if (p->has_pixel_scale) {
        zj_value *a = zj_new_array();
        for (int i = 0; a && i < 3; i++) zj_append(a, zj_new_double(p->pixel_scale[i]));
        if (a) zj_set(g, "model_pixel_scale", a);
        any = 1;
    }
    if (have_gt) {
        gt[1] *= sx;
        gt[2] *= sy;
        gt[4] *= sx;
        gt[5] *= sy;
        zj_value *a = zj_new_array();
        for (int i = 0; a && i < 6; i++) zj_append(a, zj_new_double(gt[i]));
        if (a) zj_set(g, "geotransform", a);
        any = 1;
    }
    if (p->nodata) {
        double v;
        zj_value *nv = nodata_value(p, &v);
        zj_free(nv);
        char *end;
        double d = strtod(p->nodata, &end);
        if (end != p->nodata) {
            if (isnan(d)) zj_set(g, "nodata", zj_new_string("NaN"));
            else if (isinf(d)) zj_set(g, "nodata", zj_new_string(d > 0 ? "Infinity" : "-Infinity"));
            else zj_set(g, "nodata", zj_new_double(d));
        }
        any = 1;
    }
    if (!any) {
        zj_free(g);
        return zj_new_null();
    }
    return g;
}

/* ---- messages: which page and tile an inner chunk is ---- */
typedef struct describe_ctx {
    char *file;
    size_t n_pages;
    size_t *page_numbers; /* the IFD index of each page of the array (SubIFDs: their parent's, and which) */
    int *subifd;
    uint64_t per_page, across, down, planes;
    int tiled;
} describe_ctx;

static void describe(const void *user, uint64_t inner, char *buf, size_t n) {
    const describe_ctx *d = user;
    const uint64_t page = inner / d->per_page, k = inner % d->per_page;
    const uint64_t plane = k / (d->across * d->down), rc = k % (d->across * d->down);
    char pl[48] = "";
    if (d->planes > 1) snprintf(pl, sizeof pl, ", plane %llu", (unsigned long long)plane);
    char sub[32] = "";
    if (page < d->n_pages && d->subifd[page] >= 0) snprintf(sub, sizeof sub, ", SubIFD %d", d->subifd[page]);
    if (d->tiled)
        snprintf(buf, n, "page %zu%s, tile %llu (row %llu, column %llu%s)",
                 page < d->n_pages ? d->page_numbers[page] : 0, sub, (unsigned long long)k,
                 (unsigned long long)(rc / d->across), (unsigned long long)(rc % d->across), pl);
    else
        snprintf(buf, n, "page %zu%s, strip %llu%s", page < d->n_pages ? d->page_numbers[page] : 0, sub,
                 (unsigned long long)k, pl);
}

static void describe_free(void *user) {
    describe_ctx *d = user;
    if (!d) return;
    free(d->file);
    free(d->page_numbers);
    free(d->subifd);
    free(d);
}

static zj_value *tiff_attrs(const zg_tiff_file *f, const tiff_path *t, const size_t *pages, size_t n,
                            long long n_levels, long long level) {
    const zg_tiff_page *p = &f->pages[pages[0]];
    zj_value *a = zj_new_object();
    if (!a) return NULL;
    zj_set(a, "file", zj_new_string(t->file));
    zj_set(a, "bigtiff", zj_new_bool(f->bigtiff));
    zj_set(a, "byte_order", zj_new_string(f->big_endian ? "big" : "little"));
    zj_set(a, "n_pages", zj_new_uint(f->n_main));
    zj_set(a, "n_levels", zj_new_int(n_levels));
    zj_set(a, "level", level >= 0 ? zj_new_int(level) : zj_new_null());
    zj_value *pl = zj_new_array();
    for (size_t i = 0; pl && i < n; i++) zj_append(pl, zj_new_int(f->pages[pages[i]].index));
    if (pl) zj_set(a, "pages", pl);
    if (p->subifd >= 0) zj_set(a, "subifd", zj_new_int(p->subifd));
    zj_set(a, "subfile_type", zj_new_uint(p->subfile_type));
    zj_set(a, "width", zj_new_uint(p->width));
    zj_set(a, "height", zj_new_uint(p->height));
    zj_set(a, "samples_per_pixel", zj_new_uint(p->samples));
    zj_set(a, "planar_configuration", zj_new_uint(p->planar));
    zj_set(a, "photometric", zj_new_uint(p->photometric));
    zj_set(a, "compression", zj_new_string(zg_tiff_compression_name(p->compression)));
    zj_set(a, "compression_code", zj_new_uint(p->compression));
    zj_set(a, "predictor", zj_new_uint(p->predictor));
    zj_set(a, "layout", zj_new_string(p->tiled ? "tiles" : "strips"));
    const uint64_t ts[2] = {p->tile_height, p->tile_width};
    zj_set(a, p->tiled ? "tile_shape" : "strip_shape", zj_new_uint_list(2, ts));
    zj_set(a, "n_chunks_per_page", zj_new_uint(p->n_chunks));
    return a;
}

static zgpu_status build_and_open(zgpu_context *ctx, const char *path, const tiff_path *t, const zg_tiff_file *f,
                                  const size_t *pages, size_t n, long long n_levels, long long level,
                                  zgpu_array **out) {
    const zg_tiff_page *p = &f->pages[pages[0]];
    const int stack = n > 1, chunky = p->planar == 1;
    const int spp_axis = chunky && p->samples > 1, plane_axis = !chunky;
    int nd = 0;
    uint64_t shape[ZGPU_MAX_DIMS], shard[ZGPU_MAX_DIMS], inner[ZGPU_MAX_DIMS];
    if (stack) { shape[nd] = n; shard[nd] = n; inner[nd] = 1; nd++; }
    if (plane_axis) { shape[nd] = p->samples; shard[nd] = p->samples; inner[nd] = 1; nd++; }
    shape[nd] = p->height; shard[nd] = p->tiles_down * p->tile_height; inner[nd] = p->tile_height; nd++;
    shape[nd] = p->width; shard[nd] = p->tiles_across * p->tile_width; inner[nd] = p->tile_width; nd++;
    if (spp_axis) { shape[nd] = p->samples; shard[nd] = p->samples; inner[nd] = p->samples; nd++; }
    const uint64_t chunk_bytes = p->tile_width * p->tile_height * (chunky ? p->samples : 1) * (p->bits / 8);

    zj_value *doc = zj_new_object(), *grid = zj_new_object(), *gconf = zj_new_object(), *key = zj_new_object(),
             *sconf = zj_new_object(), *codecs = zj_new_array(), *index_codecs = zj_new_array(),
             *ibytes = zj_new_object(), *attrs = zj_new_object();
    zj_value *chain = page_chain(p, f->big_endian, chunk_bytes);
    double nd_value;
    zj_value *fill = nodata_value(p, &nd_value);
    int ok = doc && grid && gconf && key && sconf && codecs && index_codecs && ibytes && attrs && chain;
    if (ok) {
        zj_set(doc, "zarr_format", zj_new_int(3));
        zj_set(doc, "node_type", zj_new_string("array"));
        zj_set(doc, "shape", zj_new_uint_list((size_t)nd, shape));
        zj_set(doc, "data_type", zj_new_string(zg_tiff_dtype_name(p)));
        zj_set(gconf, "chunk_shape", zj_new_uint_list((size_t)nd, shard));
        zj_set(grid, "name", zj_new_string("regular"));
        zj_set(grid, "configuration", gconf);
        gconf = NULL;
        zj_set(doc, "chunk_grid", grid);
        grid = NULL;
        zj_set(key, "name", zj_new_string("default"));
        zj_set(doc, "chunk_key_encoding", key);
        key = NULL;
        zj_set(doc, "fill_value", fill ? fill : (p->sample_format == 3 ? zj_new_double(0) : zj_new_int(0)));
        fill = NULL;
        zj_set(sconf, "chunk_shape", zj_new_uint_list((size_t)nd, inner));
        zj_set(sconf, "codecs", chain);
        chain = NULL;
        zj_set(ibytes, "endian", zj_new_string("little"));
        zj_append(index_codecs, codec("bytes", ibytes));
        ibytes = NULL;
        zj_set(sconf, "index_codecs", index_codecs);
        index_codecs = NULL;
        zj_set(sconf, "index_location", zj_new_string("end"));
        zj_append(codecs, codec("sharding_indexed", sconf));
        sconf = NULL;
        zj_set(doc, "codecs", codecs);
        codecs = NULL;
        zj_set(attrs, "tiff", tiff_attrs(f, t, pages, n, n_levels, level));
        /* a reduced level without geo tags of its own: those of the full-resolution page, scaled */
        const zg_tiff_page *g = p;
        if (!has_geo(p) && level > 0) {
            size_t base;
            long long nl;
            if (level_pages(f, 0, &base, 1, &nl) == 1 && has_geo(&f->pages[base])) g = &f->pages[base];
        }
        zj_set(attrs, "geo", geo_attrs(g, (double)g->width / (double)p->width, (double)g->height / (double)p->height));
        zj_set(doc, "attributes", attrs);
        attrs = NULL;
    }
    char *text = ok ? zj_write(doc, 0) : NULL;
    zj_free(doc);
    zj_free(grid);
    zj_free(gconf);
    zj_free(key);
    zj_free(sconf);
    zj_free(codecs);
    zj_free(index_codecs);
    zj_free(ibytes);
    zj_free(attrs);
    zj_free(chain);
    zj_free(fill);
    ZG_RETURN_IF(!text, ZGPU_ERR_NO_MEMORY, "TIFF file '%s': out of memory", t->file);

    zgpu_array *a = NULL;
    zgpu_status st = zg_array_open_built(ctx, path, t->dir, text, t->name, "a TIFF file (zgpu reads TIFF only)", &a);
    free(text);
    if (st != ZGPU_OK) {
        zg_error_prefix("TIFF file '%s': ", t->file);
        return st;
    }
    /* The decoded-chunk caches name a chunk by store id, key and inner chunk: every array of one file has the same
     * key, so the id names the view (its first page's IFD) and the file's size too (a file rewritten since holds
     * other tiles). */
    char *id = malloc(strlen(a->store->id) + strlen(t->name) + 64);
    if (!id) {
        zgpu_array_close(a);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    sprintf(id, "%s\n%s@ifd%llu:%llu:%zu", a->store->id, t->name, (unsigned long long)p->ifd_offset,
            (unsigned long long)f->size, n);
    free(a->store->id);
    a->store->id = id;
    /* the fixed index: inner chunk i of the shard grid (C order) is chunk i % per_page of page i / per_page */
    const uint64_t per_page = p->n_chunks, n_inner = zg_sharding_n_inner(a->shard);
    uint64_t *ol = malloc((size_t)(2 * n_inner) * sizeof *ol + 1);
    describe_ctx *d = calloc(1, sizeof *d);
    if (d) {
        d->file = strdup(t->file);
        d->page_numbers = malloc(n * sizeof *d->page_numbers);
        d->subifd = malloc(n * sizeof *d->subifd);
    }
    if (!ol || !d || !d->file || !d->page_numbers || !d->subifd || n_inner != per_page * n) {
        free(ol);
        describe_free(d);
        zgpu_array_close(a);
        return ol && d ? zg_error(ZGPU_ERR_INTERNAL, "TIFF file '%s': %llu inner chunks for %zu pages of %llu", t->file,
                                  (unsigned long long)n_inner, n, (unsigned long long)per_page)
                       : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    for (size_t pi = 0; pi < n; pi++) {
        const zg_tiff_page *pg = &f->pages[pages[pi]];
        d->page_numbers[pi] = (size_t)pg->index;
        d->subifd[pi] = pg->subifd;
        for (uint64_t k = 0; k < per_page; k++) {
            const uint64_t i = pi * per_page + k;
            const int sparse = pg->counts[k] == 0;
            ol[i] = sparse ? ZG_SHARD_EMPTY : pg->offsets[k];
            ol[n_inner + i] = sparse ? ZG_SHARD_EMPTY : pg->counts[k];
        }
    }
    d->n_pages = n;
    d->per_page = per_page;
    d->across = p->tiles_across;
    d->down = p->tiles_down;
    d->planes = p->planes;
    d->tiled = p->tiled;
    /* (a->shard is the sharding codec: const only to readers) */
    zg_sharding_set_fixed_index((zg_codec *)a->shard, ol, f->size, describe, d, describe_free);
    *out = a;
    return ZGPU_OK;
}

zgpu_status zg_tiff_open_array(zgpu_context *ctx, const char *path, zgpu_array **out, int *is_tiff) {
    *out = NULL;
    *is_tiff = 0;
    tiff_path t;
    if (!parse_path(path, &t)) {
        path_free(&t);
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "'%s': a TIFF selector is #page=K or #level=K", path);
    }
    zg_store *s = NULL;
    zgpu_status st = zg_store_open(ctx, t.dir, &s);
    uint64_t size = 0;
    int found = 0;
    uint8_t head[8];
    if (st == ZGPU_OK) st = s->vt->size(s, t.name, &size, &found);
    if (st == ZGPU_OK && !found) st = zg_error(ZGPU_ERR_NOT_FOUND, "'%s': no such file", t.file);
    if (st == ZGPU_OK && size >= 8) st = s->vt->get_range(s, t.name, 0, 8, 0, head, &found);
    if (st == ZGPU_OK && (size < 8 || !zg_tiff_magic(head, 8)))
        st = zg_error(ZGPU_ERR_NOT_FOUND, "'%s' is not a TIFF file", t.file);
    if (st != ZGPU_OK) {
        zg_store_free(s);
        path_free(&t);
        return st;
    }
    *is_tiff = 1;
    zg_tiff_file f;
    store_reader r = {s, t.name};
    st = zg_tiff_parse(read_store, &r, size, t.file, &f);
    zg_store_free(s);
    if (st != ZGPU_OK) {
        path_free(&t);
        return st;
    }
    size_t *pages = malloc((f.n_pages + 1) * sizeof *pages);
    long long n_levels = 1, level = -1;
    size_t n = 0;
    if (!pages) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    else if (t.kind == 1) {
        if ((size_t)t.k >= f.n_main)
            st = zg_error(ZGPU_ERR_NOT_FOUND, "TIFF file '%s' has %zu pages: no page %lld", t.file, f.n_main, t.k);
        pages[0] = (size_t)t.k;
        n = 1;
        level_pages(&f, -1, pages + 1, 0, &n_levels); /* (the count of levels only) */
    } else {
        level = t.kind == 2 ? t.k : 0;
        n = level_pages(&f, level, pages, f.n_pages, &n_levels);
        if (!n)
            st = zg_error(ZGPU_ERR_NOT_FOUND, "TIFF file '%s' has %lld levels: no level %lld", t.file, n_levels, level);
    }
    if (st == ZGPU_OK) st = build_and_open(ctx, path, &t, &f, pages, n, n_levels, level, out);
    free(pages);
    zg_tiff_free(&f);
    path_free(&t);
    return st;
}
