/* The zgpu command: info, bench, and the dispatch to read (read.c), write and cp (copy.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "args.h"

/* ---- shared helpers ---- */
int cli_fail_status(zgpu_status s) {
    const char *m = zgpu_last_error();
    fprintf(stderr, "zgpu: error: %s\n", m && *m ? m : zgpu_status_name(s));
    return 1;
}

int cli_fail(void) {
    fprintf(stderr, "zgpu: error: %s\n", cli_errmsg());
    return 1;
}

int cli_usage_error(const char *cmd) {
    fprintf(stderr, "zgpu: error: %s\n", cli_errmsg());
    fprintf(stderr, "Try 'zgpu %s--help'.\n", cmd ? cmd : "");
    return 2;
}

int cli_check_threads(const char *threads, int *n) {
    int64_t v = 0;
    if (threads && (cli_parse_i64(threads, strlen(threads), &v) != 0 || v < 0 || v > 4096))
        return cli_err("--threads '%s': expected an integer in [0, 4096]", threads);
    if (n) *n = (int)v;
    return 0;
}

int cli_make_context(const char *threads, int device, zgpu_context **ctx) {
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    if (cli_check_threads(threads, &o.num_threads)) return -1;
    if (device >= 0) o.device = device;
    zgpu_status s = zgpu_context_create(&o, ctx);
    if (s != ZGPU_OK) return cli_err("cannot create a context: %s", zgpu_last_error());
    return 0;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void print_u64_list(FILE *f, int n, const uint64_t *v) {
    fputc('[', f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
    fputc(']', f);
}

static int open_array(zgpu_context *ctx, const char *path, zgpu_array **a) {
    zgpu_status s = zgpu_array_open(ctx, path, a);
    return s == ZGPU_OK ? 0 : cli_fail_status(s);
}

static uint64_t product(int n, const uint64_t *v) {
    uint64_t p = 1;
    for (int i = 0; i < n; i++) p *= v[i];
    return p;
}

/* ---- help ---- */
static const char usage_main[] =
    "usage: zgpu <command> [options]\n"
    "\n"
    "Reads and writes Zarr v2 and v3 arrays into host or GPU memory.\n"
    "\n"
    "commands:\n"
    "  info PATH            describe an array or group (or a TIFF file: pages, levels, tiles, codec, geo keys)\n"
    "  read PATH -o F.npy   read an array (or a region of it) into a NumPy .npy file\n"
    "  write PATH F.npy     create an array from a NumPy .npy file\n"
    "  cp SRC DST           copy an array, changing format, chunks, shards or codecs\n"
    "  bench PATH           time repeated reads of an array\n"
    "\n"
    "options:\n"
    "  --help, -h           show help (also after a command: zgpu read --help)\n"
    "  --version            show the versions of the command and of the library\n"
    "\n"
    "Errors print one line 'zgpu: error: ...' and exit with 1; usage errors exit with 2.\n";

static const char usage_info[] =
    "usage: zgpu info PATH [--json]\n"
    "\n"
    "Describes the array or group at PATH: format, shape, data type, chunk and shard shapes, fill value,\n"
    "codecs, dimension names, stored objects and bytes, and the compression ratio; for a group, its members.\n"
    "\n"
    "  --json               print the metadata document instead (zarr.json; for v2 .zarray with attributes)\n";

static const char usage_bench[] =
    "usage: zgpu bench PATH [--region R] [--repeat N] [--device cuda:N] [--threads N]\n"
    "\n"
    "Reads the selection N times (default 5) into one preallocated buffer (host or GPU) and reports the\n"
    "median and best wall time, decoded and stored throughput, and the per-stage times of the library.\n"
    "\n"
    "  --region R           as for 'zgpu read'\n"
    "  --repeat N           number of timed reads (default 5)\n"
    "  --warmup N           untimed reads before (default 1)\n"
    "  --device cuda:N      read into GPU memory on device N\n"
    "  --threads N          host decode threads (0 = all CPUs)\n";

/* ---- info ---- */
/* "label  value" with the value written without whitespace; nothing when v is absent or null. */
static void print_json_line(const zj_value *v, const char *label) {
    if (!v || v->type == ZJ_NULL) return;
    char *t = cli_json_tight(v);
    if (t) printf("%-18s%s\n", label, t);
    free(t);
}

/* The attributes line, left out for {}. */
static void print_attributes(const char *json) {
    zj_value *v = NULL;
    if (cli_json_parse(json, "attributes", &v) == 0 && v->n) print_json_line(v, "attributes:");
    zj_free(v);
}

/* A transformation list's scale and translation ([scale] or [scale, translation]), n numbers each; 0 if it is
 * not one (the line then says so). */
static int ome_transforms(const zj_value *t, int n, double *scale, double *trans) {
    for (int d = 0; d < n; d++) scale[d] = 1, trans[d] = 0;
    if (!t) return 1;
    if (t->type != ZJ_ARRAY || t->n < 1 || t->n > 2) return 0;
    for (size_t k = 0; k < t->n; k++) {
        const char *type = zj_string(zj_get(t->items[k], "type"));
        const int is_scale = k == 0;
        if (!type || strcmp(type, is_scale ? "scale" : "translation")) return 0;
        const zj_value *v = zj_get(t->items[k], is_scale ? "scale" : "translation");
        if (!v || v->type != ZJ_ARRAY || (int)v->n != n) return 0;
        for (int d = 0; d < n; d++) {
            if (v->items[d]->type != ZJ_NUMBER) return 0;
            (is_scale ? scale : trans)[d] = v->items[d]->num;
        }
    }
    return 1;
}

static void print_doubles(const char *label, int n, const double *v) {
    printf("%s [", label);
    for (int d = 0; d < n; d++) printf("%s%g", d ? ", " : "", v[d]);
    printf("]");
}

/* OME-Zarr images (OME-NGFF 0.5: the attributes' "ome"; 0.4: their "multiscales"): version, axes with types and
 * units, and each level's shape, scale and translation (the dataset's composed with the multiscale's). */
static void print_ome(zgpu_context *ctx, const char *path, const zj_value *attrs) {
    const zj_value *ome = zj_get(attrs, "ome"), *ms = zj_get(ome, "multiscales");
    const char *version = zj_string(zj_get(ome, "version"));
    if (!ms) {
        ms = zj_get(attrs, "multiscales");
        version = zj_string(zj_get(zj_at(ms, 0), "version"));
    }
    if (!ms || ms->type != ZJ_ARRAY) return;
    for (size_t i = 0; i < ms->n; i++) {
        const zj_value *m = ms->items[i], *axes = zj_get(m, "axes"), *ds = zj_get(m, "datasets");
        const char *name = zj_string(zj_get(m, "name"));
        printf("%-18sOME-NGFF %s%s%s%s\n", "multiscale:", version ? version : "0.4", name ? " \"" : "",
               name ? name : "", name ? "\"" : "");
        const int n = axes && axes->type == ZJ_ARRAY && axes->n <= ZGPU_MAX_DIMS ? (int)axes->n : 0;
        printf("%-18s", "  axes:");
        for (int d = 0; d < n; d++) {
            const zj_value *a = axes->items[d];
            const char *an = a->type == ZJ_STRING ? zj_string(a) : zj_string(zj_get(a, "name"));
            const char *type = zj_string(zj_get(a, "type")), *unit = zj_string(zj_get(a, "unit"));
            printf("%s%s", d ? ", " : "", an ? an : "?");
            if (type || unit) printf(" (%s%s%s)", type ? type : "", type && unit ? ", " : "", unit ? unit : "");
        }
        printf("\n");
        double gs[ZGPU_MAX_DIMS], gt[ZGPU_MAX_DIMS];
        const int global_ok = ome_transforms(zj_get(m, "coordinateTransformations"), n, gs, gt);
        for (size_t k = 0; ds && ds->type == ZJ_ARRAY && k < ds->n; k++) {
            const char *dp = zj_string(zj_get(ds->items[k], "path"));
            printf("  level %-10zu'%s'", k, dp ? dp : "?");
            char child[4200];
            snprintf(child, sizeof child, "%s/%s", path, dp ? dp : "");
            zgpu_array *a = NULL;
            if (dp && zgpu_array_open(ctx, child, &a) == ZGPU_OK) {
                uint64_t shape[ZGPU_MAX_DIMS];
                const int nd = zgpu_array_ndim(a);
                zgpu_array_shape(a, shape);
                printf("  ");
                print_u64_list(stdout, nd, shape);
                printf(" %s", zgpu_array_dtype_name(a));
                zgpu_array_close(a);
            } else {
                printf("  (no array there)");
            }
            double s[ZGPU_MAX_DIMS], t[ZGPU_MAX_DIMS];
            if (global_ok && n && ome_transforms(zj_get(ds->items[k], "coordinateTransformations"), n, s, t)) {
                for (int d = 0; d < n; d++) {
                    t[d] = gs[d] * t[d] + gt[d];
                    s[d] *= gs[d];
                }
                print_doubles("  scale", n, s);
                print_doubles("  translation", n, t);
            } else {
                printf("  (transformations not [scale] or [scale, translation])");
            }
            printf("\n");
        }
    }
}

/* (info_group and info_array close the node they are given) */
static int info_group(zgpu_context *ctx, zgpu_group *g, const char *path, int json) {
    char *members = NULL, *attrs = NULL;
    zgpu_status s = zgpu_group_members(g, &members);
    if (s == ZGPU_OK) s = zgpu_group_attributes(g, &attrs);
    if (s != ZGPU_OK) {
        int rc = cli_fail_status(s);
        zgpu_free(members);
        zgpu_group_close(g);
        return rc;
    }
    if (json) {
        printf("{\"zarr_format\": %d, \"node_type\": \"group\", \"attributes\": %s, \"members\": %s}\n",
               zgpu_group_zarr_format(g), attrs, members);
    } else {
        printf("%-18s%s\n", "path:", path);
        printf("%-18s%s\n", "node:", "group");
        printf("%-18s%d\n", "zarr_format:", zgpu_group_zarr_format(g));
        print_attributes(attrs);
        zj_value *av = NULL;
        if (cli_json_parse(attrs, "attributes", &av) == 0) print_ome(ctx, path, av);
        zj_free(av);
        printf("members:\n");
        zj_value *list = NULL;
        cli_json_parse(members, "group members", &list);
        size_t count = list && list->type == ZJ_ARRAY ? list->n : 0;
        for (size_t i = 0; i < count; i++) {
            const char *name = zj_string(zj_get(list->items[i], "name"));
            const char *kind = zj_string(zj_get(list->items[i], "kind"));
            printf("  %-6s %s\n", kind ? kind : "?", name ? name : "?");
        }
        if (!count) printf("  (none)\n");
        zj_free(list);
    }
    zgpu_free(members);
    zgpu_free(attrs);
    zgpu_group_close(g);
    return 0;
}

/* A JSON number, or `otherwise` where the value is absent or no number. */
static double json_number(const zj_value *v, double otherwise) {
    return v && v->type == ZJ_NUMBER ? v->num : otherwise;
}

/* An array opened from a TIFF file (its attributes' "tiff", src/format/tiff/): the file, this array's pages and
 * layout, the codec and predictor, every resolution level's shape and tiles, and the geo metadata. */
static void print_tiff(zgpu_context *ctx, const char *path, const zj_value *tiff, const zj_value *geo) {
    const char *file = zj_string(zj_get(tiff, "file")), *order = zj_string(zj_get(tiff, "byte_order"));
    const zj_value *bt = zj_get(tiff, "bigtiff");
    (void)path;
    const double pages = json_number(zj_get(tiff, "n_pages"), 0), levels = json_number(zj_get(tiff, "n_levels"), 1);
    printf("%-18s%s, %s-endian, %.0f page%s, %.0f level%s\n", "tiff:", bt && bt->type == ZJ_BOOL && bt->boolean ? "BigTIFF" : "TIFF",
           order ? order : "?", pages, pages == 1 ? "" : "s", levels, levels == 1 ? "" : "s");
    print_json_line(zj_get(tiff, "pages"), "  pages:");
    const char *layout = zj_string(zj_get(tiff, "layout"));
    const zj_value *tile = zj_get(tiff, "tile_shape");
    printf("%-18s%s", "  layout:", layout ? layout : "?");
    if (tile && tile->type == ZJ_ARRAY && tile->n == 2)
        printf(" of %gx%g", json_number(tile->items[0], 0), json_number(tile->items[1], 0));
    const zj_value *rps = zj_get(tiff, "rows_per_strip");
    if (rps) printf(" (%g rows a strip)", json_number(rps, 0));
    printf(", %g sample%s a pixel, planar configuration %g, photometric %g\n",
           json_number(zj_get(tiff, "samples_per_pixel"), 1), json_number(zj_get(tiff, "samples_per_pixel"), 1) == 1 ? "" : "s",
           json_number(zj_get(tiff, "planar_configuration"), 1), json_number(zj_get(tiff, "photometric"), 0));
    const char *comp = zj_string(zj_get(tiff, "compression"));
    printf("%-18s%s (%g), predictor %g\n", "  codec:", comp ? comp : "?", json_number(zj_get(tiff, "compression_code"), 0),
           json_number(zj_get(tiff, "predictor"), 1));
    /* each level through its own selector: the full image and every reduced-resolution one */
    char base[4096];
    snprintf(base, sizeof base, "%s", file ? file : path);
    char *hash = strchr(base, '#');
    if (hash) *hash = 0;
    for (int k = 0; k < (int)levels && k < 64; k++) {
        char sel[4200];
        snprintf(sel, sizeof sel, "%s#level=%d", base, k);
        zgpu_array *lv = NULL;
        printf("  level %-10d", k);
        if (zgpu_array_open(ctx, sel, &lv) != ZGPU_OK) {
            printf("(%s)\n", zgpu_last_error());
            continue;
        }
        uint64_t shape[ZGPU_MAX_DIMS], chunk[ZGPU_MAX_DIMS];
        const int nd = zgpu_array_ndim(lv);
        zgpu_array_shape(lv, shape);
        zgpu_array_chunk_shape(lv, chunk);
        print_u64_list(stdout, nd, shape);
        printf(" in chunks of ");
        print_u64_list(stdout, nd, chunk);
        printf("%s\n", k == (int)json_number(zj_get(tiff, "level"), 0) ? "  (this array)" : "");
        zgpu_array_close(lv);
    }
    if (!geo || geo->type != ZJ_OBJECT || !geo->n) return;
    const zj_value *epsg = zj_get(geo, "epsg");
    if (epsg) printf("%-18sEPSG:%g\n", "geo:", json_number(epsg, 0));
    else printf("%-18s%s\n", "geo:", "(no EPSG code)");
    print_json_line(zj_get(geo, "geotransform"), "  geotransform:");
    print_json_line(zj_get(geo, "nodata"), "  nodata:");
    print_json_line(zj_get(geo, "raster_type"), "  raster_type:");
    print_json_line(zj_get(geo, "geokeys"), "  geokeys:");
}

static int info_array(zgpu_context *ctx, zgpu_array *a, const char *path, int json) {
    char *meta = NULL, *codecs = NULL;
    zgpu_status s = zgpu_array_metadata_json(a, &meta);
    if (s != ZGPU_OK) goto fail;
    if (json) {
        printf("%s\n", meta);
        zgpu_free(meta);
        zgpu_array_close(a);
        return 0;
    }
    s = zgpu_array_codecs_json(a, &codecs);
    if (s != ZGPU_OK) goto fail;
    int nd = zgpu_array_ndim(a);
    uint64_t shape[ZGPU_MAX_DIMS], chunk[ZGPU_MAX_DIMS], shard[ZGPU_MAX_DIMS];
    zgpu_array_shape(a, shape);
    zgpu_array_chunk_shape(a, chunk);
    int sharded = zgpu_array_shard_shape(a, shard);
    size_t itemsize = zgpu_array_itemsize(a);
    uint64_t nobj = 0, nbytes = 0;
    s = zgpu_array_storage_info(a, &nobj, &nbytes);
    const int listed = s == ZGPU_OK; /* an HTTP server cannot list what is stored */
    if (s == ZGPU_ERR_UNSUPPORTED) s = ZGPU_OK;
    if (s != ZGPU_OK) goto fail;

    /* the attributes: an array opened from a TIFF file says so in them (src/format/tiff/) */
    char *attrs = NULL;
    zj_value *attrs_v = NULL;
    if (zgpu_array_attributes(a, &attrs) == ZGPU_OK && cli_json_parse(attrs, "attributes", &attrs_v) != 0) attrs_v = NULL;
    const zj_value *tiff = zj_get(attrs_v, "tiff");
    printf("%-18s%s\n", "path:", path);
    printf("%-18s%s\n", "node:", tiff ? "array (read-only, from a TIFF file)" : "array");
    if (!tiff) printf("%-18s%d\n", "zarr_format:", zgpu_array_zarr_format(a));
    printf("%-18s", "shape:");
    print_u64_list(stdout, nd, shape);
    printf("\n%-18s%s (%zu byte%s)\n", "dtype:", zgpu_array_dtype_name(a), itemsize, itemsize == 1 ? "" : "s");
    printf("%-18s", "chunk_shape:");
    print_u64_list(stdout, nd, chunk);
    printf("\n");
    if (sharded && !tiff) { /* (a TIFF's one "shard" is the whole file) */
        printf("%-18s", "shard_shape:");
        print_u64_list(stdout, nd, shard);
        printf("\n");
    }
    char *fill = NULL;
    zgpu_fill_json_from_bytes(zgpu_array_fill_value(a), zgpu_array_dtype(a), itemsize, zgpu_array_zarr_format(a),
                              &fill);
    printf("%-18s%s\n", "fill_value:", fill ? fill : "?");
    zgpu_free(fill);
    zj_value *v = NULL;
    if (cli_json_parse(codecs, "codecs", &v) == 0) print_json_line(v, "codecs:");
    else printf("%-18s%s\n", "codecs:", codecs);
    zj_free(v);
    if (cli_json_parse(meta, "metadata", &v) == 0) print_json_line(zj_get(v, "dimension_names"), "dimension_names:");
    zj_free(v);
    if (tiff) print_tiff(ctx, path, tiff, zj_get(attrs_v, "geo"));
    else if (attrs) print_attributes(attrs);
    uint64_t nelem = product(nd, shape);
    /* Saturate rather than wrap for absurd shapes. */
    uint64_t ubytes = itemsize && nelem > UINT64_MAX / itemsize ? UINT64_MAX : nelem * itemsize;
    const uint64_t *obj = sharded && !tiff ? shard : chunk; /* (a TIFF's objects are its tiles) */
    const char *objs = tiff ? "tiles or strips" : sharded ? "shards" : "chunks";
    uint64_t grid_objs = 1;
    for (int i = 0; i < nd; i++) grid_objs *= obj[i] ? (shape[i] + obj[i] - 1) / obj[i] : 0;
    if (listed) {
        printf("%-18s%llu of %llu %s\n", "stored_objects:", (unsigned long long)nobj, (unsigned long long)grid_objs,
               objs);
        printf("%-18s%llu\n", "stored_bytes:", (unsigned long long)nbytes);
    } else {
        printf("%-18s- of %llu %s (the store cannot list them)\n", "stored_objects:", (unsigned long long)grid_objs,
               objs);
    }
    printf("%-18s%llu\n", "uncompressed:", (unsigned long long)ubytes);
    if (!listed) printf("%-18s%s\n", "ratio:", "- (unknown)");
    else if (nbytes) printf("%-18s%.3f\n", "ratio:", (double)ubytes / (double)nbytes);
    else printf("%-18s%s\n", "ratio:", "- (nothing stored)");
    zgpu_free(meta);
    zgpu_free(codecs);
    zgpu_free(attrs);
    zj_free(attrs_v);
    zgpu_array_close(a);
    return 0;
fail:;
    int rc = cli_fail_status(s);
    zgpu_free(meta);
    zgpu_free(codecs);
    zgpu_array_close(a);
    return rc;
}

static int cmd_info(int argc, char **argv) {
    static const cli_opt_def defs[] = {{"json", 0, 0}, {NULL, 0, 0}};
    cli_args ar;
    if (cli_args_parse(argc, argv, defs, &ar)) return cli_usage_error("info ");
    if (ar.help) { fputs(usage_info, stdout); return 0; }
    if (ar.npos != 1) { cli_err("info takes one PATH"); return cli_usage_error("info "); }
    const char *path = ar.pos[0];
    zgpu_context *ctx = NULL;
    if (cli_make_context(NULL, -1, &ctx)) return cli_fail();
    /* one read of the node's metadata (one request on a remote store) */
    zgpu_array *a = NULL;
    zgpu_group *g = NULL;
    zgpu_status s = zgpu_context_open_node(ctx, path, &a, &g);
    if (s != ZGPU_OK) {
        zgpu_context_free(ctx);
        if (s != ZGPU_ERR_NOT_FOUND) return cli_fail_status(s);
        cli_err("no Zarr array or group at '%s'", path);
        return cli_fail();
    }
    int rc = a ? info_array(ctx, a, path, ar.set[0]) : info_group(ctx, g, path, ar.set[0]);
    zgpu_context_free(ctx);
    return rc;
}

/* ---- bench: the opening steps ---- */
typedef struct read_setup {
    zgpu_context *ctx;
    zgpu_array *array;
    int ndim;
    uint64_t start[ZGPU_MAX_DIMS], count[ZGPU_MAX_DIMS];
    uint64_t nbytes;
    int device; /* -1: host */
    cli_cuda cu;
    void *device_buf;
} read_setup;

static void read_setup_free(read_setup *r) {
    if (r->device_buf && r->cu.free_) r->cu.free_(r->device_buf);
    zgpu_array_close(r->array);
    zgpu_context_free(r->ctx);
    memset(r, 0, sizeof *r);
}

/* Returns 0, or the exit code. */
static int read_setup_open(read_setup *r, const char *cmd, const char *path, const char *region,
                           const char *device, const char *threads) {
    memset(r, 0, sizeof *r);
    r->device = -1;
    if (device && cli_parse_device(device, &r->device)) return cli_usage_error(cmd);
    if (cli_check_threads(threads, NULL)) return cli_usage_error(cmd);
    /* --threads was valid: failing to start those threads (memory, limits) is a runtime failure */
    if (cli_make_context(threads, r->device, &r->ctx)) return cli_fail();
    if (open_array(r->ctx, path, &r->array)) return 1;
    r->ndim = zgpu_array_ndim(r->array);
    uint64_t shape[ZGPU_MAX_DIMS];
    zgpu_array_shape(r->array, shape);
    if (cli_parse_region(region, r->ndim, shape, r->start, r->count)) return cli_usage_error(cmd);
    uint64_t nelem = 0;
    if (cli_shape_nbytes(r->ndim, r->count, zgpu_array_itemsize(r->array), &nelem, &r->nbytes)) return cli_fail();
    if (r->nbytes > SIZE_MAX) { cli_err("selection of %llu bytes is too large", (unsigned long long)r->nbytes); return cli_fail(); }
    if (r->device >= 0) {
        if (cli_cuda_load(&r->cu, r->device)) return cli_fail();
        if (cli_cuda_alloc(&r->cu, &r->device_buf, (size_t)r->nbytes)) return cli_fail();
    }
    return 0;
}

/* One read of the selection into host_buf (host) or the device buffer. */
static zgpu_status read_once(read_setup *r, void *host_buf) {
    if (r->nbytes == 0) return ZGPU_OK;
    if (r->device >= 0) return zgpu_array_read_device(r->array, r->start, r->count, r->device_buf, NULL, NULL);
    return zgpu_array_read(r->array, r->start, r->count, host_buf, NULL);
}

/* ---- bench ---- */
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int cmd_bench(int argc, char **argv) {
    enum { O_REGION, O_REPEAT, O_WARMUP, O_DEVICE, O_THREADS };
    static const cli_opt_def defs[] = {{"region", 0, 1}, {"repeat", 'n', 1}, {"warmup", 0, 1},
                                       {"device", 0, 1}, {"threads", 0, 1}, {NULL, 0, 0}};
    cli_args ar;
    if (cli_args_parse(argc, argv, defs, &ar)) return cli_usage_error("bench ");
    if (ar.help) { fputs(usage_bench, stdout); return 0; }
    if (ar.npos != 1) { cli_err("bench takes one PATH"); return cli_usage_error("bench "); }
    int64_t repeat = 5, warmup = 1;
    if (ar.value[O_REPEAT] && (cli_parse_i64(ar.value[O_REPEAT], strlen(ar.value[O_REPEAT]), &repeat) || repeat < 1 ||
                               repeat > 100000)) {
        cli_err("--repeat '%s': expected an integer in [1, 100000]", ar.value[O_REPEAT]);
        return cli_usage_error("bench ");
    }
    if (ar.value[O_WARMUP] && (cli_parse_i64(ar.value[O_WARMUP], strlen(ar.value[O_WARMUP]), &warmup) || warmup < 0 ||
                               warmup > 1000)) {
        cli_err("--warmup '%s': expected an integer in [0, 1000]", ar.value[O_WARMUP]);
        return cli_usage_error("bench ");
    }
    read_setup r;
    int rc = read_setup_open(&r, "bench ", ar.pos[0], ar.value[O_REGION], ar.value[O_DEVICE], ar.value[O_THREADS]);
    if (rc) { read_setup_free(&r); return rc; }
    void *host = NULL;
    if (r.device < 0) {
        host = malloc(r.nbytes ? (size_t)r.nbytes : 1);
        if (!host) {
            cli_err("out of memory for a %llu-byte selection", (unsigned long long)r.nbytes);
            read_setup_free(&r);
            return cli_fail();
        }
        memset(host, 0, r.nbytes ? (size_t)r.nbytes : 1); /* fault the pages in before timing */
    }
    int n = (int)repeat;
    double *wall = calloc((size_t)n, sizeof *wall);
    double *st[6];
    zgpu_read_stats *stats = calloc((size_t)n, sizeof *stats);
    for (int k = 0; k < 6; k++) st[k] = calloc((size_t)n, sizeof(double));
    if (!wall || !stats || !st[0] || !st[1] || !st[2] || !st[3] || !st[4] || !st[5]) {
        cli_err("out of memory");
        rc = cli_fail();
        goto done;
    }
    for (int i = 0; i < (int)warmup; i++) {
        zgpu_status s = read_once(&r, host);
        if (s != ZGPU_OK) { rc = cli_fail_status(s); goto done; }
    }
    for (int i = 0; i < n; i++) {
        double t0 = now_s();
        zgpu_status s = read_once(&r, host);
        wall[i] = now_s() - t0;
        if (s != ZGPU_OK) { rc = cli_fail_status(s); goto done; }
        stats[i].struct_size = sizeof stats[i];
        zgpu_array_last_read_stats(r.array, &stats[i]);
        st[0][i] = stats[i].plan_s;
        st[1][i] = stats[i].io_s;
        st[2][i] = stats[i].h2d_s;
        st[3][i] = stats[i].decode_s;
        st[4][i] = stats[i].scatter_s;
        st[5][i] = stats[i].total_s;
    }
    {
        const zgpu_read_stats *last = &stats[n - 1];
        double best = wall[0];
        for (int i = 1; i < n; i++) best = wall[i] < best ? wall[i] : best;
        double med = median(wall, n);
        double gb = (double)r.nbytes / 1e9, sgb = (double)last->stored_bytes / 1e9;
        uint64_t shape[ZGPU_MAX_DIMS], chunk[ZGPU_MAX_DIMS];
        zgpu_array_shape(r.array, shape);
        zgpu_array_chunk_shape(r.array, chunk);
        printf("array:      %s (%s, shape ", ar.pos[0], zgpu_array_dtype_name(r.array));
        print_u64_list(stdout, r.ndim, shape);
        printf(", chunks ");
        print_u64_list(stdout, r.ndim, chunk);
        printf(", zarr v%d)\n", zgpu_array_zarr_format(r.array));
        printf("selection:  ");
        print_u64_list(stdout, r.ndim, r.count);
        printf(" at ");
        print_u64_list(stdout, r.ndim, r.start);
        printf(" = %.3f MB decoded\n", (double)r.nbytes / 1e6);
        if (r.device >= 0) printf("target:     cuda:%d device memory\n", r.device);
        else printf("target:     host memory (%s threads)\n", ar.value[O_THREADS] ? ar.value[O_THREADS] : "default");
        printf("runs:       %d timed, %d warm-up\n", n, (int)warmup);
        printf("wall:       median %.3f ms, min %.3f ms\n", med * 1e3, best * 1e3);
        printf("decoded:    %.3f GB/s median, %.3f GB/s best\n", med > 0 ? gb / med : 0.0, best > 0 ? gb / best : 0.0);
        printf("stored:     %.3f MB read per run, %.3f GB/s median\n", sgb * 1e3, med > 0 ? sgb / med : 0.0);
        printf("stages:     plan %.3f ms, io %.3f ms, h2d %.3f ms, decode %.3f ms, scatter %.3f ms, total %.3f ms"
               " (medians)\n",
               median(st[0], n) * 1e3, median(st[1], n) * 1e3, median(st[2], n) * 1e3, median(st[3], n) * 1e3,
               median(st[4], n) * 1e3, median(st[5], n) * 1e3);
        printf("chunks:     %d in %d wave%s", last->chunks, last->waves, last->waves == 1 ? "" : "s");
        if (r.device >= 0)
            printf("; %d GPU-decoded, %d CPU-decoded; GDS %s", last->gpu_decoded, last->cpu_decoded,
                   last->gds_used ? "used" : "not used");
        printf("\n");
    }
done:
    for (int k = 0; k < 6; k++) free(st[k]);
    free(stats);
    free(wall);
    free(host);
    read_setup_free(&r);
    return rc;
}

/* ---- dispatch ---- */
int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(usage_main, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage_main, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("zgpu %d.%d.%d (library %s)\n", ZGPU_VERSION_MAJOR, ZGPU_VERSION_MINOR, ZGPU_VERSION_PATCH,
               zgpu_version_string());
        return 0;
    }
    if (!strcmp(cmd, "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(cmd, "read")) return cli_cmd_read(argc - 2, argv + 2);
    if (!strcmp(cmd, "write")) return cli_cmd_write(argc - 2, argv + 2);
    if (!strcmp(cmd, "cp")) return cli_cmd_cp(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 2, argv + 2);
    cli_err("unknown command '%s'", cmd);
    return cli_usage_error(NULL);
}
