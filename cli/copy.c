/* zgpu write (.npy -> array) and zgpu cp (array -> array), both streamed in slabs along axis 0 that
 * cover whole rows of destination objects, so every chunk or shard is written exactly once. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "args.h"
#include "slab.h"
#include "zgpu_experimental.h"

/* Slab buffers of cp: the host copy holds one; --device two in GPU memory (one read while the other is written). */
#define CP_SLOTS 2
/* --device: slabs of at most this many bytes unless copy_slab_bytes says otherwise. Large, so that each read and
 * write is one big batch for the GPU (each call has fixed costs: planning, allocations, launches). */
#define CP_DEVICE_SLAB ((uint64_t)512 << 20)

/* Bytes per slab: about 256 MiB, or the context's tuning (copy_slab_bytes; ZGPU_CLI_SLAB_BYTES sets it from the
 * environment, so that tests can force many slabs). */
static uint64_t slab_budget(const zgpu_context *ctx) {
    zgpu_tuning t;
    zgpu_context_tuning(ctx, &t);
    return t.copy_slab_bytes ? (uint64_t)t.copy_slab_bytes : (uint64_t)256 << 20;
}

static const char usage_write[] =
    "usage: zgpu write PATH FILE.npy [options]\n"
    "\n"
    "Creates an array at PATH holding the contents of a NumPy .npy file (any byte order, C or Fortran order).\n"
    "\n"
    "  --format 2|3         Zarr format (default 3)\n"
    "  --chunks C0,C1,...   chunk shape (default: the whole array under 16 MiB, else chunks of 1-4 MiB)\n"
    "  --shards S0,S1,...   shard shape (format 3): each stored object holds a grid of chunks\n"
    "  --codec SPEC         none | zstd[:LEVEL[:checksum]] | gzip[:LEVEL] | zlib[:LEVEL] | bz2[:LEVEL] |\n"
    "                       lz4[:ACCEL] | blosc[:CNAME[:CLEVEL[:SHUFFLE]]]  (CNAME blosclz, lz4, lz4hc,\n"
    "                       zlib, zstd; SHUFFLE noshuffle, shuffle, bitshuffle); append +crc32c for a\n"
    "                       checksum (format 3). Default: zstd:0 as zarr-python\n"
    "  --fill-value V       fill value (numbers, NaN, Infinity, true/false, RE,IM for complex)\n"
    "  --attrs JSON         attributes (a JSON object)\n"
    "  --overwrite          replace an existing array at PATH\n"
    "  --threads N          encode threads (0 = all CPUs)\n"
    "\n"
    "The array is built in a hidden directory beside PATH and renamed into place when complete: until then (and\n"
    "if the write is interrupted) PATH holds what it held before, or nothing.\n";

static const char usage_cp[] =
    "usage: zgpu cp SRC DST [options]\n"
    "\n"
    "Copies the array SRC to DST, optionally converting the format, rechunking or recompressing. By default\n"
    "DST keeps SRC's format, chunks, shards, codecs (with the byte order), fill value, attributes and dimension\n"
    "names.\n"
    "A TIFF SRC (docs/tiff.md; SRC#page=K, SRC#level=K) is copied chunked by its tiles or strips, with zstd;\n"
    "with --levels every resolution level of it goes into the group DST, level K the array DST/K.\n"
    "Another format gets SRC's codecs converted (zgpu_metadata_convert) unless --codec is given; Zarr v2 has no\n"
    "dimension names (a warning says they are dropped) and no sharding (DST is chunked like SRC's inner chunks).\n"
    "The copy streams slabs of DST's chunks (or shards): memory stays bounded (under 300 MB where DST's shards\n"
    "allow) whatever the array's size.\n"
    "\n"
    "  --format 2|3         Zarr format of DST\n"
    "  --chunks C0,C1,...   chunk shape of DST\n"
    "  --shards S0,...|none shard shape of DST (format 3), or none to drop sharding\n"
    "  --codec SPEC         compressor of DST (see zgpu write --help)\n"
    "  --overwrite          replace an existing array at DST\n"
    "  --levels             SRC a TIFF file: every resolution level, into the group DST (DST/0, DST/1, ...)\n"
    "  --device cuda:N|cpu  copy through GPU N: slabs decoded into its memory, then gathered and compressed there\n"
    "                       (zstd, gzip, zlib, lz4; other codecs on host threads) and written; cpu (the default):\n"
    "                       on the host. Fails (exit 1) where there is no GPU\n"
    "  --threads N          at most N decode/encode threads (0 = all CPUs), fewer where their scratch would not\n"
    "                       fit in memory beside a slab\n"
    "  -q, --quiet          no progress line and no summary\n"
    "\n"
    "With --device the slabs are up to 512 MiB, two of them in GPU memory (at most a quarter of its free memory):\n"
    "one is read while the other is written; host memory then holds the library's pinned staging beside them.\n"
    "\n"
    "DST is built in a hidden directory beside it and renamed into place when complete: until then (and if the\n"
    "copy is interrupted) DST holds what it held before, or nothing. On a terminal a progress line shows the\n"
    "chunks and bytes copied, the rate and the time left; a one-line summary ends the copy (on stderr).\n";

static int parse_format(const char *text, int *fmt) {
    if (!strcmp(text, "2")) *fmt = 2;
    else if (!strcmp(text, "3")) *fmt = 3;
    else return cli_err("--format '%s': expected 2 or 3", text);
    return 0;
}

/* Writes rows [r0, r0+rows) of a C-order slab (shape[1:] whole) to the array. */
static zgpu_status write_slab(zgpu_array *dst, int ndim, const uint64_t *shape, uint64_t r0, uint64_t rows,
                              const void *buf) {
    uint64_t start[ZGPU_MAX_DIMS] = {0}, count[ZGPU_MAX_DIMS];
    for (int i = 0; i < ndim; i++) count[i] = shape[i];
    if (ndim) {
        start[0] = r0;
        count[0] = rows;
    }
    return zgpu_array_write(dst, start, count, buf, NULL);
}

/* What the destination's metadata document is built from (zgpu_metadata_build); layout arrays owned here. */
typedef struct dst_spec {
    int zarr_format, ndim, sharded;
    uint64_t shape[ZGPU_MAX_DIMS], chunks[ZGPU_MAX_DIMS], shards[ZGPU_MAX_DIMS];
    zgpu_dtype dtype;
    size_t itemsize;
    const char *codec;  /* a codec spec */
    const char *codecs; /* v3: the chain of one (inner) chunk, JSON */
    const char *v2_compressor, *v2_filters, *fill_value, *attributes, *dimension_names, *chunk_key_encoding;
    char separator;
    char order;     /* v2: 'C' or 'F'; 0 = 'C' */
    int big_endian; /* stored byte order of multi-byte types */
} dst_spec;

static int build_document(const dst_spec *d, char **out) {
    zgpu_array_spec a = {.struct_size = sizeof a,
                         .zarr_format = d->zarr_format,
                         .ndim = d->ndim,
                         .shape = d->shape,
                         .chunks = d->chunks,
                         .shards = d->sharded ? d->shards : NULL,
                         .dtype = d->dtype,
                         .itemsize = d->itemsize,
                         .codec_spec = d->codec,
                         .codecs = d->codecs,
                         .v2_compressor = d->v2_compressor,
                         .v2_filters = d->v2_filters,
                         .fill_value = d->fill_value,
                         .attributes = d->attributes,
                         .dimension_names = d->dimension_names,
                         .chunk_key_encoding = d->chunk_key_encoding,
                         .separator = d->separator,
                         .order = d->order,
                         .big_endian = d->big_endian};
    char *doc = NULL;
    if (zgpu_metadata_build(&a, &doc) != ZGPU_OK) return cli_err("%s", zgpu_last_error());
    *out = strdup(doc);
    zgpu_free(doc);
    return *out ? 0 : cli_err("out of memory");
}

/* Checks a --codec spec's grammar (and, for format 2, that it has a v2 form) before any file is touched. */
static int check_codec(const char *codec, int fmt) {
    char *json = NULL;
    zgpu_status s = zgpu_codec_spec_json(codec, ZGPU_UINT8, 1, fmt == 2 ? 2 : 3, &json);
    zgpu_free(json);
    return s == ZGPU_OK ? 0 : cli_err("--codec: %s", zgpu_last_error());
}

/* The fill value as JSON text for the format (caller frees): zero when bytes is NULL (v2 too, not null). */
static char *fill_json(const void *bytes, zgpu_dtype dt, size_t itemsize, int fmt) {
    void *zero = bytes ? NULL : calloc(1, itemsize ? itemsize : 1);
    char *json = NULL, *out = NULL;
    if (bytes || zero) {
        if (zgpu_fill_json_from_bytes(bytes ? bytes : zero, dt, itemsize, fmt, &json) != ZGPU_OK)
            cli_err("%s", zgpu_last_error());
        else if (!(out = strdup(json)))
            cli_err("out of memory");
    } else {
        cli_err("out of memory");
    }
    zgpu_free(json);
    free(zero);
    return out;
}

/* ---- write ---- */
int cli_cmd_write(int argc, char **argv) {
    enum { O_FORMAT, O_CHUNKS, O_SHARDS, O_CODEC, O_FILL, O_OVERWRITE, O_ATTRS, O_THREADS };
    static const cli_opt_def defs[] = {{"format", 0, 1},     {"chunks", 0, 1},    {"shards", 0, 1},
                                       {"codec", 0, 1},      {"fill-value", 0, 1}, {"overwrite", 0, 0},
                                       {"attrs", 0, 1},      {"threads", 0, 1},   {NULL, 0, 0}};
    cli_args ar;
    if (cli_args_parse(argc, argv, defs, &ar)) return cli_usage_error("write ");
    if (ar.help) { fputs(usage_write, stdout); return 0; }
    if (ar.npos != 2) { cli_err("write takes PATH and FILE.npy"); return cli_usage_error("write "); }
    const char *path = ar.pos[0], *npy = ar.pos[1];

    int fmt = 3;
    if (ar.value[O_FORMAT] && parse_format(ar.value[O_FORMAT], &fmt)) return cli_usage_error("write ");
    const char *codec = ar.value[O_CODEC] ? ar.value[O_CODEC] : "zstd"; /* zstd:0, as zarr-python */
    if (check_codec(codec, fmt)) return cli_usage_error("write ");
    if (fmt == 2 && ar.value[O_SHARDS]) { cli_err("--shards needs --format 3"); return cli_usage_error("write "); }
    if (cli_check_threads(ar.value[O_THREADS], NULL)) return cli_usage_error("write ");
    FILE *f = fopen(npy, "rb");
    if (!f) { cli_err("%s: cannot open: %s", npy, strerror(errno)); return cli_fail(); }
    cli_npy_header h;
    if (cli_npy_read_header(f, npy, &h)) { fclose(f); return cli_fail(); }

    dst_spec spec = {.zarr_format = fmt, .ndim = h.ndim, .dtype = h.dtype, .itemsize = h.itemsize,
                     .codec = codec, .attributes = ar.value[O_ATTRS]};
    memcpy(spec.shape, h.shape, sizeof h.shape);
    int usage = 0;
    char *fill = NULL, *meta = NULL;
    void *data = NULL;
    zgpu_context *ctx = NULL;
    zgpu_array *arr = NULL;
    int rc = 0;
    if (ar.value[O_SHARDS]) {
        if (cli_parse_u64_list(ar.value[O_SHARDS], h.ndim, spec.shards, "--shards")) { usage = 1; goto fail; }
        spec.sharded = 1;
    }
    if (ar.value[O_CHUNKS]) {
        if (cli_parse_u64_list(ar.value[O_CHUNKS], h.ndim, spec.chunks, "--chunks")) { usage = 1; goto fail; }
    } else {
        zgpu_default_chunks(h.ndim, h.shape, h.itemsize, spec.sharded ? spec.shards : NULL, 0, spec.chunks);
    }
    if (ar.value[O_FILL]) {
        char *json = NULL;
        if (zgpu_fill_json_from_text(ar.value[O_FILL], h.dtype, h.itemsize, fmt, &json) != ZGPU_OK) {
            cli_err("--fill-value: %s", zgpu_last_error());
            usage = 1;
            goto fail;
        }
        fill = strdup(json);
        zgpu_free(json);
    } else {
        fill = fill_json(NULL, h.dtype, h.itemsize, fmt);
    }
    if (!fill) goto fail;
    spec.fill_value = fill;
    /* shards not multiples of the chunks, attributes that are not an object...: usage errors */
    if (build_document(&spec, &meta)) { usage = 1; goto fail; }
    if (cli_make_context(ar.value[O_THREADS], -1, &ctx)) goto fail; /* --threads checked: a runtime failure */

    /* Staged: PATH keeps its old array (or nothing) until the commit below; any failure before it (and an
     * interruption) discards the new one. */
    int flags = ZGPU_CREATE_STAGED | (ar.set[O_OVERWRITE] ? ZGPU_CREATE_OVERWRITE : 0);
    zgpu_status s = zgpu_array_create(ctx, path, meta, flags, &arr);
    if (s != ZGPU_OK) { rc = cli_fail_status(s); goto done; }

    uint64_t nelem = 0, nbytes = 0;
    if (cli_shape_nbytes(h.ndim, h.shape, h.itemsize, &nelem, &nbytes)) goto fail;
    if (nelem == 0) goto commit;
    if (h.fortran_order && h.ndim > 1) {
        /* Fortran order cannot be sliced along axis 0 cheaply: convert once, write once. */
        fclose(f);
        f = NULL;
        cli_npy_header h2;
        if (cli_npy_load(npy, &h2, &data)) goto fail;
        s = zgpu_array_write(arr, (uint64_t[ZGPU_MAX_DIMS]){0}, h.shape, data, NULL);
        if (s != ZGPU_OK) { rc = cli_fail_status(s); goto done; }
    } else {
        uint64_t grid0 = h.ndim ? (spec.sharded ? spec.shards[0] : spec.chunks[0]) : 1;
        uint64_t rows = cli_slab_rows(h.ndim, h.shape, grid0, h.itemsize, slab_budget(ctx));
        uint64_t row_bytes = h.ndim ? nbytes / h.shape[0] : nbytes;
        if (rows * row_bytes > SIZE_MAX) { cli_err("slab too large for this machine"); goto fail; }
        data = zg_alloc_big((size_t)(rows * row_bytes)); /* (huge pages: common/buf.h) */
        if (!data) { cli_err("out of memory for a %llu-byte slab", (unsigned long long)(rows * row_bytes)); goto fail; }
        uint64_t total_rows = h.ndim ? h.shape[0] : 1;
        for (uint64_t r0 = 0; r0 < total_rows; r0 += rows) {
            uint64_t n = total_rows - r0 < rows ? total_rows - r0 : rows;
            if (cli_npy_read_block(f, npy, &h, r0 * row_bytes, data, (size_t)(n * row_bytes))) goto fail;
            s = write_slab(arr, h.ndim, h.shape, r0, n, data);
            if (s != ZGPU_OK) { rc = cli_fail_status(s); goto done; }
        }
    }
commit:
    s = zgpu_array_commit(arr);
    if (s != ZGPU_OK) rc = cli_fail_status(s);
    goto done;
fail:
    rc = usage ? cli_usage_error("write ") : cli_fail();
done:
    if (f) fclose(f);
    free(data);
    free(meta);
    free(fill);
    zgpu_array_close(arr);
    zgpu_context_free(ctx);
    return rc;
}

/* ---- cp ---- */
/* The codec chain of one (inner) chunk of src: the sharding codec's inner list, or the whole list. */
static const zj_value *inner_codecs(const zj_value *codecs, int sharded) {
    if (!sharded) return codecs;
    const zj_value *inner = zj_get(zj_get(zj_at(codecs, 0), "configuration"), "codecs");
    if (!inner) cli_err("cannot find the sharding codec's inner codecs in the source codecs");
    return inner;
}

/* The source document (taken) in the other format, by zgpu_metadata_convert, for its codecs: a sharded source
 * stands for its inner chunks (cp re-chunks anyway), and dimension names, which v2 has no place for, are
 * dropped with a warning. NULL with a message when the codecs have no form in that format. */
static zj_value *convert_source(zj_value *doc, int sharded, int fmt) {
    zj_value *out = NULL;
    const zj_value *dn = zj_get(doc, "dimension_names");
    if (fmt == 2 && dn && dn->type == ZJ_ARRAY) {
        int named = 0;
        for (size_t i = 0; i < dn->n; i++) named |= dn->items[i]->type != ZJ_NULL;
        char *t = named ? cli_json_text(dn) : NULL;
        if (t) fprintf(stderr, "zgpu: warning: dimension names %s are not copied: Zarr v2 has none\n", t);
        free(t);
        zj_remove(doc, "dimension_names");
    }
    if (sharded) {
        const zj_value *inner = inner_codecs(zj_get(doc, "codecs"), 1);
        zj_value *copy = inner ? zj_clone(inner) : NULL;
        if (!copy || zj_set(doc, "codecs", copy) != ZGPU_OK) {
            if (inner) cli_err("out of memory");
            zj_free(doc);
            return NULL;
        }
    }
    char *text = zj_write(doc, 0), *conv = NULL;
    zj_free(doc);
    if (!text) {
        cli_err("out of memory");
        return NULL;
    }
    if (zgpu_metadata_convert(text, fmt, 0, &conv) != ZGPU_OK)
        cli_err("%s: give --codec", zgpu_last_error());
    else
        cli_json_parse(conv, "converted metadata", &out);
    free(text);
    zgpu_free(conv);
    return out;
}

/* Slabs of DST's objects (whole shards or chunks, so each is written once) read from SRC and written to DST. */
typedef struct cp_job {
    zgpu_array *src, *dst;
    int ndim;
    size_t itemsize;
    uint64_t grid[ZGPU_MAX_DIMS];
    uint64_t start[CP_SLOTS][ZGPU_MAX_DIMS], count[CP_SLOTS][ZGPU_MAX_DIMS]; /* the slab in each buffer */
    void *buf;             /* host: the one slab buffer */
    int device;            /* --device: the GPU's ordinal, -1 on the host */
    void *dev_buf[CP_SLOTS]; /* device: slab buffers in GPU memory */
    void *read_stream, *write_stream; /* device: non-blocking, so that a read and a write never wait on each other */
    cli_progress *pr;
    uint64_t objects_done, bytes_done;
} cp_job;

static int cp_status_err(zgpu_status s) {
    return cli_err("%s", *zgpu_last_error() ? zgpu_last_error() : zgpu_status_name(s));
}

static uint64_t cp_begin(void *user, int slot, uint64_t i, const uint64_t *start, const uint64_t *count) {
    (void)i;
    cp_job *j = user;
    memcpy(j->start[slot], start, sizeof j->start[slot]);
    memcpy(j->count[slot], count, sizeof j->count[slot]);
    return 1;
}

/* The slab is decoded into the buffer: on the host's pool, or (--device) on the GPU, returning once it is there. */
static int cp_read(void *user, int reader, int slot, uint64_t part) {
    (void)reader;
    (void)part;
    cp_job *j = user;
    zgpu_status s = j->device >= 0 ? zgpu_array_read_device(j->src, j->start[slot], j->count[slot], j->dev_buf[slot],
                                                            NULL, j->read_stream)
                                   : zgpu_array_read(j->src, j->start[slot], j->count[slot], j->buf, NULL);
    return s == ZGPU_OK ? 0 : cp_status_err(s);
}

/* The slab is written whole (gathered and encoded on the GPU with --device); returns once it is in the store, so its
 * buffer may take the next slab. */
static int cp_write(void *user, int slot) {
    cp_job *j = user;
    zgpu_status s = j->device >= 0 ? zgpu_array_write_device(j->dst, j->start[slot], j->count[slot],
                                                             j->dev_buf[slot], NULL, j->write_stream)
                                   : zgpu_array_write(j->dst, j->start[slot], j->count[slot], j->buf, NULL);
    if (s != ZGPU_OK) return cp_status_err(s);
    uint64_t objects = 1, bytes = j->itemsize; /* the slab lies on DST's grid: the objects it meets are its own */
    for (int d = 0; d < j->ndim; d++) {
        const uint64_t lo = j->start[slot][d], n = j->count[slot][d];
        objects *= (lo + n - 1) / j->grid[d] - lo / j->grid[d] + 1;
        bytes *= n;
    }
    j->objects_done += objects;
    j->bytes_done += bytes;
    cli_progress_update(j->pr, j->objects_done, j->bytes_done);
    return 0;
}

static void cp_plan(void *user, uint64_t budget, cli_slabs *out) {
    cp_job *j = user;
    uint64_t zero[ZGPU_MAX_DIMS] = {0}, shape[ZGPU_MAX_DIMS];
    zgpu_array_shape(j->src, shape);
    cli_slabs_plan(out, j->ndim, zero, shape, j->itemsize, j->grid, budget, 0);
}

/* Codec stages of a metadata document's (inner) chunk, as cli_codec_stages counts them. */
static int doc_stages(const char *meta) {
    zj_value *v = NULL;
    int n = 0;
    if (cli_json_parse(meta, "metadata", &v) == 0) {
        const zj_value *list = zj_get(v, "codecs");
        const char *name0 = zj_string(zj_get(zj_at(list, 0), "name"));
        if (name0 && !strcmp(name0, "sharding_indexed")) list = zj_get(zj_get(zj_at(list, 0), "configuration"), "codecs");
        for (size_t i = 0; list && list->type == ZJ_ARRAY && i < list->n; i++) {
            const char *name = zj_string(zj_get(list->items[i], "name"));
            n += !name || strcmp(name, "bytes") != 0;
        }
        const zj_value *comp = zj_get(v, "compressor"), *filters = zj_get(v, "filters"); /* v2 */
        n += comp && comp->type == ZJ_OBJECT;
        n += filters && filters->type == ZJ_ARRAY ? (int)filters->n : 0;
    }
    zj_free(v);
    return n > 1 ? n : 1;
}

/* --device: the slabs in GPU memory. Their buffers take at most a quarter of the device's free memory together (the
 * rest is the library's: the reads' staging and scratch, the writes' two waves of chunks), each slab at most
 * CP_DEVICE_SLAB (copy_slab_bytes: that size). Two buffers where they fit, so that slab k + 1 is read while slab k
 * is written (cli_pipe_run: a reader thread and this one); one where only one fits, each slab then read and written
 * in turn. */
static int cp_device_slabs(cp_job *j, cli_cuda *cu, uint64_t fixed_budget, cli_slabs *slabs, int *n_slots) {
    uint64_t free_bytes = 0;
    if (cli_cuda_free_memory(cu, &free_bytes)) return -1;
    const uint64_t cap = free_bytes / 4;
    uint64_t budget = fixed_budget ? fixed_budget : CP_DEVICE_SLAB;
    if (budget > cap / CP_SLOTS) budget = cap / CP_SLOTS;
    cp_plan(j, budget ? budget : 1, slabs);
    *n_slots = slabs->max_bytes <= cap / CP_SLOTS ? CP_SLOTS : 1;
    if (slabs->max_bytes > cap) /* one DST object alone is a slab: it must be whole in GPU memory */
        return cli_err("--device cuda:%d: one stored object of DST (%llu bytes decoded) takes more than a quarter of "
                       "the GPU's free memory (%llu bytes): give smaller --shards or --chunks, or --device cpu",
                       j->device, (unsigned long long)slabs->max_bytes, (unsigned long long)free_bytes);
    return 0;
}

static void cp_device_free(cp_job *j, cli_cuda *cu) {
    for (int k = 0; k < CP_SLOTS; k++) {
        if (j->dev_buf[k]) cu->free_(j->dev_buf[k]);
        j->dev_buf[k] = NULL;
    }
    if (j->read_stream) cu->stream_destroy(j->read_stream);
    if (j->write_stream) cu->stream_destroy(j->write_stream);
    j->read_stream = j->write_stream = NULL;
}

/* Creates DST and copies SRC into it in slabs. On the host one at a time: the slab is read on the pool, then written
 * on it, so the pool's threads keep one set of scratch for both. The pool's size and the slabs are chosen with the
 * memory model (slab.h): reading and writing threads hold the larger of their scratch each, one slab beside.
 * With a device (device >= 0, cu loaded) the slabs are decoded into GPU memory and written from there
 * (cp_device_slabs); the pool puts objects in the store and codes the chains the GPU does not, its threads' scratch
 * within the same budget. */
static int cp_stream(zgpu_context **ctx, zgpu_array **src, zgpu_array **dst, const char *src_path,
                     const char *dst_path, const char *meta, const dst_spec *spec, const char *threads_text,
                     int overwrite, int quiet, int device, cli_cuda *cu) {
    cp_job j = {.src = *src, .ndim = spec->ndim, .itemsize = spec->itemsize, .device = device};
    uint64_t obj_bytes = spec->itemsize, chunk_bytes = spec->itemsize;
    for (int d = 0; d < spec->ndim; d++) {
        j.grid[d] = spec->sharded ? spec->shards[d] : spec->chunks[d];
        obj_bytes *= j.grid[d];
        chunk_bytes *= spec->chunks[d];
    }
    int threads = 0;
    cli_check_threads(threads_text, &threads); /* checked before */
    const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    const int t_max = threads > 0 ? threads : (ncpu > 0 ? (int)ncpu : 1);
    const int remote = (strstr(src_path, "://") && strncmp(src_path, "file://", 7) != 0) +
                       (strstr(dst_path, "://") && strncmp(dst_path, "file://", 7) != 0);
    const uint64_t rs = cli_decode_scratch(*src, 0), ws = cli_encode_scratch(obj_bytes, chunk_bytes, doc_stages(meta), spec->sharded);
    const uint64_t scratch = rs > ws ? rs : ws;
    zgpu_tuning tun;
    zgpu_context_tuning(*ctx, &tun);
    cli_slabs slabs;
    int t = 1, n_slots = 1;
    if (device >= 0) {
        if (cp_device_slabs(&j, cu, tun.copy_slab_bytes, &slabs, &n_slots)) return cli_fail();
        t = scratch && (uint64_t)t_max * scratch > CLI_MEM_BUDGET ? (int)(CLI_MEM_BUDGET / scratch) : t_max;
        if (t < 1) t = 1;
    } else {
        cli_fit f = {.scratch = scratch,
                     .copies = 1 + remote, /* a remote store holds about a slab of fetched or encoded bytes */
                     .in_flight = 1,
                     .task_bytes = obj_bytes,
                     .fixed_budget = tun.copy_slab_bytes,
                     .plan = cp_plan,
                     .user = &j};
        t = cli_fit_threads(&f, t_max, &slabs);
    }
    if (t > 1 || remote) { /* the context the copy runs on: t threads, remote windows near a slab */
        zgpu_array_close(*src);
        *src = NULL;
        zgpu_context_free(*ctx);
        *ctx = NULL;
        zgpu_context_options o;
        zgpu_context_options_init(&o);
        zgpu_remote_options r;
        zgpu_remote_options_init(&r);
        r.window_bytes = slabs.max_bytes / 2 > ((uint64_t)1 << 20) ? slabs.max_bytes / 2 : (uint64_t)1 << 20;
        o.num_threads = t;
        o.remote = &r;
        if (device >= 0) o.device = device;
        if (zgpu_context_create(&o, ctx) != ZGPU_OK) {
            cli_err("cannot create a context: %s", zgpu_last_error());
            return cli_fail();
        }
        zgpu_status s = zgpu_array_open(*ctx, src_path, src);
        if (s != ZGPU_OK) return cli_fail_status(s);
        j.src = *src;
    }
    /* Staged: DST keeps what it held (or stays absent) until the commit; an interrupted copy leaves no
     * array that reads as complete. */
    zgpu_status s = zgpu_array_create(*ctx, dst_path, meta, ZGPU_CREATE_STAGED | (overwrite ? ZGPU_CREATE_OVERWRITE : 0), dst);
    if (s != ZGPU_OK) return cli_fail_status(s);
    j.dst = *dst;

    uint64_t nelem = 0, nbytes = 0, objects = 1;
    if (cli_shape_nbytes(spec->ndim, spec->shape, spec->itemsize, &nelem, &nbytes)) return cli_fail();
    for (int d = 0; d < spec->ndim; d++) objects *= (spec->shape[d] + j.grid[d] - 1) / j.grid[d];
    cli_progress pr;
    cli_progress_start(&pr, quiet, nelem ? objects : 0, nbytes, spec->sharded ? "shards" : "chunks");
    j.pr = &pr;
    if (nelem) {
        int rc = 0;
        if (slabs.max_bytes > SIZE_MAX) {
            rc = cli_err("a slab of %llu bytes is too large for this machine", (unsigned long long)slabs.max_bytes);
        } else if (device >= 0) {
            for (int k = 0; k < n_slots && !rc; k++) rc = cli_cuda_alloc(cu, &j.dev_buf[k], (size_t)slabs.max_bytes);
            if (!rc) rc = cli_cuda_stream(cu, &j.read_stream);
            if (!rc) rc = cli_cuda_stream(cu, &j.write_stream);
            if (rc) cp_device_free(&j, cu);
        } else if (!(j.buf = zg_alloc_big((size_t)slabs.max_bytes))) {
            rc = cli_err("out of memory for a %llu-byte slab", (unsigned long long)slabs.max_bytes);
        }
        if (rc) return cli_fail();
        cli_progress_begin_line(&pr);
        const cli_pipe_ops ops = {cp_begin, cp_read, cp_write, &j};
        rc = cli_pipe_run(&slabs, 1, n_slots, &ops);
        free(j.buf);
        if (device >= 0) cp_device_free(&j, cu);
        if (rc) {
            cli_progress_clear(&pr);
            return cli_fail();
        }
    }
    s = zgpu_array_commit(*dst);
    if (s != ZGPU_OK) {
        cli_progress_clear(&pr);
        return cli_fail_status(s);
    }
    cli_progress_finish(&pr);
    return 0;
}

/* cp --levels: every resolution level of a TIFF SRC into a group DST, level K the array DST/K, each copied as
 * `cp SRC#level=K DST/K` with the other options. */
static int cp_levels(int argc, char **argv, const cli_args *ar, int overwrite) {
    const char *src_path = ar->pos[0], *dst_path = ar->pos[1];
    zgpu_context *ctx = NULL;
    zgpu_array *src = NULL;
    char *attrs = NULL;
    zj_value *av = NULL;
    long long n_levels = 0;
    if (cli_make_context("1", -1, &ctx)) return cli_fail();
    zgpu_status s = zgpu_array_open(ctx, src_path, &src);
    if (s == ZGPU_OK) s = zgpu_array_attributes(src, &attrs);
    if (s != ZGPU_OK) {
        zgpu_array_close(src);
        zgpu_context_free(ctx);
        return cli_fail_status(s);
    }
    if (cli_json_parse(attrs, "source attributes", &av) == 0) {
        const zj_value *t = zj_get(av, "tiff");
        int64_t v;
        if (t && t->type == ZJ_OBJECT && zj_is_int(zj_get(t, "n_levels"), &v)) n_levels = v;
    }
    zj_free(av);
    zgpu_free(attrs);
    zgpu_array_close(src);
    if (n_levels < 1) {
        zgpu_context_free(ctx);
        cli_err("%s: --levels copies the resolution levels of a TIFF file, and this is none", src_path);
        return cli_usage_error("cp ");
    }
    char group_attrs[96];
    snprintf(group_attrs, sizeof group_attrs, "{\"tiff_levels\": %lld}", n_levels);
    zgpu_group *g = NULL;
    s = zgpu_group_create(ctx, dst_path, 3, group_attrs, overwrite ? ZGPU_CREATE_OVERWRITE : 0, &g);
    zgpu_group_close(g);
    zgpu_context_free(ctx);
    if (s != ZGPU_OK) return cli_fail_status(s);
    char **args = calloc((size_t)argc + 1, sizeof *args);
    if (!args) return cli_err("out of memory");
    int rc = 0;
    for (long long k = 0; k < n_levels && !rc; k++) {
        char src_k[4200], dst_k[4200];
        snprintf(src_k, sizeof src_k, "%s#level=%lld", src_path, k);
        snprintf(dst_k, sizeof dst_k, "%s/%lld", dst_path, k);
        int n = 0;
        for (int i = 0; i < argc; i++) {
            if (!strcmp(argv[i], "--levels")) continue;
            args[n++] = argv[i] == ar->pos[0] ? src_k : argv[i] == ar->pos[1] ? dst_k : argv[i];
        }
        args[n] = NULL;
        rc = cli_cmd_cp(n, args);
    }
    free(args);
    return rc;
}

int cli_cmd_cp(int argc, char **argv) {
    enum { O_FORMAT, O_CHUNKS, O_SHARDS, O_CODEC, O_OVERWRITE, O_THREADS, O_QUIET, O_LEVELS, O_DEVICE };
    static const cli_opt_def defs[] = {{"format", 0, 1},    {"chunks", 0, 1},  {"shards", 0, 1}, {"codec", 0, 1},
                                       {"overwrite", 0, 0}, {"threads", 0, 1}, {"quiet", 'q', 0}, {"levels", 0, 0},
                                       {"device", 0, 1},    {NULL, 0, 0}};
    cli_args ar;
    if (cli_args_parse(argc, argv, defs, &ar)) return cli_usage_error("cp ");
    if (ar.help) { fputs(usage_cp, stdout); return 0; }
    if (ar.npos != 2) { cli_err("cp takes SRC and DST"); return cli_usage_error("cp "); }
    int device = -1;
    if (ar.value[O_DEVICE] && cli_parse_device(ar.value[O_DEVICE], &device)) return cli_usage_error("cp ");
    /* The GPU is checked before anything is created (--levels makes the group DST first): without one, --device
     * fails with the reason rather than copying on the host behind the user's back. */
    cli_cuda cu;
    memset(&cu, 0, sizeof cu);
    if (device >= 0 && cli_cuda_load(&cu, device)) {
        char why[600];
        snprintf(why, sizeof why, "%s", cli_errmsg());
        cli_err("--device %s: %s (--device cpu copies on the host)", ar.value[O_DEVICE], why);
        return cli_fail();
    }
    if (ar.set[O_LEVELS]) return cp_levels(argc, argv, &ar, ar.set[O_OVERWRITE]); /* each level with --device */
    const char *src_path = ar.pos[0], *dst_path = ar.pos[1];

    int fmt = 0;
    if (ar.value[O_FORMAT] && parse_format(ar.value[O_FORMAT], &fmt)) return cli_usage_error("cp ");
    const char *codec = ar.value[O_CODEC];
    if (codec && check_codec(codec, 3)) return cli_usage_error("cp ");
    if (cli_check_threads(ar.value[O_THREADS], NULL)) return cli_usage_error("cp ");

    /* Refuse to copy onto itself: creating DST would delete SRC's chunks first. */
    char *rs = realpath(src_path, NULL), *rd = realpath(dst_path, NULL);
    int same = (rs && rd && !strcmp(rs, rd)) || !strcmp(src_path, dst_path); /* a URL has no realpath */
    free(rs);
    free(rd);
    if (same) { cli_err("SRC and DST are the same array"); return cli_usage_error("cp "); }

    zgpu_context *ctx = NULL;
    zgpu_array *src = NULL, *dst = NULL;
    char *src_meta = NULL, *src_attrs = NULL, *tiff_attrs = NULL;
    char *inner = NULL, *meta = NULL, *dimnames = NULL, *cke = NULL, *v2comp = NULL, *v2filt = NULL;
    char *fill = NULL;
    zj_value *src_doc = NULL, *conv = NULL;
    int rc = 0, usage = 0;
    zgpu_status s;

    /* a context of one thread opens SRC: the pool's size follows from both arrays' chunks (cp_stream) */
    if (cli_make_context("1", device, &ctx)) goto fail;
    s = zgpu_array_open(ctx, src_path, &src);
    if (s == ZGPU_OK) s = zgpu_array_metadata_json(src, &src_meta);
    if (s == ZGPU_OK) s = zgpu_array_attributes(src, &src_attrs);
    if (s != ZGPU_OK) { rc = cli_fail_status(s); goto done; }
    if (cli_json_parse(src_meta, "source metadata", &src_doc)) goto fail;

    int src_fmt = zgpu_array_zarr_format(src);
    if (!fmt) fmt = src_fmt;
    /* the copy is made from (dtype, itemsize): datetimes would become int64, records raw bytes */
    const char *dt_name = zgpu_array_dtype_name(src);
    if (strchr(dt_name, '.') || !strcmp(dt_name, "structured") || !strcmp(dt_name, "string") ||
        !strcmp(dt_name, "variable_length_bytes")) {
        cli_err("%s: data type %s is not copied by the zgpu command (copy it with the Python package)", src_path,
                dt_name);
        goto fail;
    }
    dst_spec spec = {.zarr_format = fmt, .ndim = zgpu_array_ndim(src), .dtype = zgpu_array_dtype(src),
                           .itemsize = zgpu_array_itemsize(src), .attributes = src_attrs};
    zgpu_array_shape(src, spec.shape);
    uint64_t src_chunks[ZGPU_MAX_DIMS], src_shards[ZGPU_MAX_DIMS];
    zgpu_array_chunk_shape(src, src_chunks);
    int src_sharded = zgpu_array_shard_shape(src, src_shards);
    /* a TIFF (its attributes say so, docs/tiff.md): its one "shard" is the file; DST is chunked by its tiles or
     * strips and compressed with zstd unless --codec says otherwise (TIFF's own codecs are no Zarr's) */
    int src_tiff = 0;
    zj_value *attrs_v = NULL;
    if (src_attrs && cli_json_parse(src_attrs, "source attributes", &attrs_v) == 0) {
        zj_value *t = zj_get(attrs_v, "tiff");
        src_tiff = t && t->type == ZJ_OBJECT;
        /* the copy is no TIFF: its attributes keep the source's layout as "tiff_source" (and "geo" as it is) */
        zj_value *moved = src_tiff ? zj_clone(t) : NULL;
        if (moved && zj_set(attrs_v, "tiff_source", moved) == ZGPU_OK && zj_remove(attrs_v, "tiff") &&
            (tiff_attrs = cli_json_text(attrs_v)))
            spec.attributes = tiff_attrs;
    }
    zj_free(attrs_v);
    if (src_tiff) src_sharded = 0;

    /* shards */
    if (ar.value[O_SHARDS] && strcmp(ar.value[O_SHARDS], "none") != 0) {
        if (fmt != 3) { cli_err("--shards needs format 3"); usage = 1; goto fail; }
        if (cli_parse_u64_list(ar.value[O_SHARDS], spec.ndim, spec.shards, "--shards")) { usage = 1; goto fail; }
        spec.sharded = 1;
    } else if (!ar.value[O_SHARDS] && src_sharded && fmt == 3) {
        memcpy(spec.shards, src_shards, sizeof spec.shards);
        spec.sharded = 1;
    }
    /* chunks: given, else SRC's when they fit the shards, else a default inside the shards */
    if (ar.value[O_CHUNKS]) {
        if (cli_parse_u64_list(ar.value[O_CHUNKS], spec.ndim, spec.chunks, "--chunks")) { usage = 1; goto fail; }
    } else {
        memcpy(spec.chunks, src_chunks, sizeof spec.chunks);
        int fits = 1;
        for (int i = 0; spec.sharded && i < spec.ndim; i++) fits &= spec.shards[i] % spec.chunks[i] == 0;
        if (!fits) zgpu_default_chunks(spec.ndim, spec.shape, spec.itemsize, spec.shards, 0, spec.chunks);
    }
    for (int i = 0; spec.sharded && i < spec.ndim; i++)
        if (spec.shards[i] % spec.chunks[i]) {
            cli_err("shard extent %llu on axis %d is not a multiple of the chunk extent %llu",
                    (unsigned long long)spec.shards[i], i, (unsigned long long)spec.chunks[i]);
            usage = 1;
            goto fail;
        }
    /* codecs */
    if (codec) {
        if (fmt == 2 && check_codec(codec, 2)) { usage = 1; goto fail; }
        spec.codec = codec;
    } else if (src_tiff) {
        spec.codec = "zstd";
    } else if (fmt == src_fmt) {
        if (fmt == 3) {
            const zj_value *list = inner_codecs(zj_get(src_doc, "codecs"), src_sharded);
            inner = list ? cli_json_text(list) : NULL;
            if (!inner) goto fail;
            spec.codecs = inner;
        } else {
            /* the byte order too: v2 filters name typestrings, which must match the array's */
            zgpu_dtype dt_src;
            if (zgpu_dtype_from_typestr(zj_string(zj_get(src_doc, "dtype")), &dt_src, NULL, &spec.big_endian)) {
                cli_err("%s", zgpu_last_error());
                goto fail;
            }
            v2comp = cli_json_text(zj_get(src_doc, "compressor"));
            v2filt = cli_json_text(zj_get(src_doc, "filters"));
            spec.v2_compressor = v2comp ? v2comp : "null";
            spec.v2_filters = v2filt;
        }
    } else {
        /* another format: the source's codecs as that format writes them (zgpu_metadata_convert) */
        zj_value *doc = zj_clone(src_doc);
        if (!doc) { cli_err("out of memory"); goto fail; }
        conv = convert_source(doc, src_sharded, fmt);
        if (!conv) goto fail;
        zgpu_dtype dt_conv;
        if (fmt == 3) {
            inner = cli_json_text(zj_get(conv, "codecs"));
            if (!inner) goto fail;
            spec.codecs = inner;
        } else if (zgpu_dtype_from_typestr(zj_string(zj_get(conv, "dtype")), &dt_conv, NULL, &spec.big_endian) !=
                   ZGPU_OK) {
            cli_err("%s", zgpu_last_error());
            goto fail;
        } else {
            const char *order = zj_string(zj_get(conv, "order"));
            v2comp = cli_json_text(zj_get(conv, "compressor"));
            v2filt = cli_json_text(zj_get(conv, "filters"));
            spec.v2_compressor = v2comp ? v2comp : "null";
            spec.v2_filters = v2filt;
            spec.order = order ? order[0] : 'C';
        }
    }
    /* carried over: fill value, and the key layout and dimension names where the format allows */
    fill = fill_json(zgpu_array_fill_value(src), spec.dtype, spec.itemsize, fmt);
    if (!fill) goto fail;
    spec.fill_value = fill;
    if (fmt == 3 && src_fmt == 3) {
        dimnames = cli_json_text(zj_get(src_doc, "dimension_names"));
        cke = cli_json_text(zj_get(src_doc, "chunk_key_encoding"));
        spec.dimension_names = dimnames;
        spec.chunk_key_encoding = cke;
    } else if (fmt == 2 && src_fmt == 2) {
        const char *sep = zj_string(zj_get(src_doc, "dimension_separator"));
        if (sep && strlen(sep) == 1) spec.separator = sep[0];
    }
    if (build_document(&spec, &meta)) goto fail;

    rc = cp_stream(&ctx, &src, &dst, src_path, dst_path, meta, &spec, ar.value[O_THREADS], ar.set[O_OVERWRITE],
                   ar.set[O_QUIET], device, &cu);
    goto done;
fail:
    rc = usage ? cli_usage_error("cp ") : cli_fail();
done:
    free(meta);
    free(inner);
    free(dimnames);
    free(cke);
    free(v2comp);
    free(v2filt);
    free(fill);
    zj_free(src_doc);
    zj_free(conv);
    zgpu_free(src_meta);
    zgpu_free(src_attrs);
    free(tiff_attrs);
    zgpu_array_close(dst);
    zgpu_array_close(src);
    zgpu_context_free(ctx);
    if (device >= 0) cli_cuda_unload(&cu);
    return rc;
}
