/* zgpu read: the selection streamed slab by slab into a .npy file (slab.h), with bounded memory whatever the
 * array's size: slabs cut on the chunk (or shard) grid, sized with the threads' decode scratch so that the process
 * stays under 300 MB, read on reader threads while the slab before is written. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "args.h"
#include "slab.h"
#include "zgpu_experimental.h"

#define MAX_SLOTS 3

static const char usage_read[] =
    "usage: zgpu read PATH -o FILE.npy [--region R] [--page K | --level K] [--device cuda:N] [--threads N] [-v]\n"
    "\n"
    "Reads the array at PATH (or a region of it) into a NumPy .npy file (native byte order, C order).\n"
    "The selection streams in slabs cut on the chunk grid: memory stays bounded (under 300 MB) whatever its\n"
    "size. The file is written under a temporary name beside FILE.npy and renamed into place when complete.\n"
    "\n"
    "  -o, --output FILE    the .npy to write; /dev/null reads without writing; - writes to standard output\n"
    "  --region R           comma-separated per-axis selection, NumPy style without steps:\n"
    "                         a:b, a:, :b, :  a half-open range (negative values count from the end)\n"
    "                         i               one index; the axis is KEPT with length 1 in the output\n"
    "                       fewer entries than dimensions select the rest whole. Example: 0:10,-5:,3\n"
    "  --page K, --level K  a TIFF file: its K-th page, or its K-th resolution level (0 full, 1... the\n"
    "                       overviews); the same as PATH#page=K, PATH#level=K (docs/tiff.md)\n"
    "  --device cuda:N      read into GPU memory on device N (each slab then copied back for the file)\n"
    "  --threads N          at most N host decode threads (0 = all CPUs), fewer where their scratch would not\n"
    "                       fit in memory beside the slabs\n"
    "  -v, --verbose        print a summary: bytes, time, throughput, slabs and threads (on stderr)\n";

enum { MODE_SLAB, MODE_CHUNK, MODE_DEVICE };
static const char *const mode_name[] = {"slabs", "chunks", "device"};

typedef struct read_job {
    zgpu_array *a;
    int mode, ndim;
    size_t itemsize;
    uint64_t sel_start[ZGPU_MAX_DIMS], sel_count[ZGPU_MAX_DIMS];
    uint64_t chunk[ZGPU_MAX_DIMS], object[ZGPU_MAX_DIMS];
    int sharded, stream, remote;
    cli_slabs slabs;
    int n_slots;
    void *buf[MAX_SLOTS];
    cli_blocks blk[MAX_SLOTS];
    cli_out out;
    cli_cuda cu;
    void *dev_buf;
} read_job;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int status_err(zgpu_status s) {
    const char *m = zgpu_last_error();
    return cli_err("%s", m && *m ? m : zgpu_status_name(s));
}

/* ---- the pipeline's callbacks ---- */
static uint64_t rd_begin(void *user, int slot, uint64_t i, const uint64_t *start, const uint64_t *count) {
    (void)i;
    read_job *j = user;
    if (j->mode == MODE_CHUNK) {
        cli_blocks_layout(&j->blk[slot], &j->slabs, j->chunk, start, count, j->buf[slot]);
        return j->blk[slot].n;
    }
    cli_blocks_single(&j->blk[slot], &j->slabs, start, count, j->buf[slot]);
    return 1;
}

static int rd_read(void *user, int reader, int slot, uint64_t part) {
    (void)reader;
    read_job *j = user;
    const cli_blocks *b = &j->blk[slot];
    const size_t nd = (size_t)j->ndim, at = (size_t)part * nd;
    zgpu_status s;
    if (j->mode == MODE_DEVICE) {
        uint64_t bytes = j->itemsize;
        for (size_t d = 0; d < nd; d++) bytes *= b->counts[d];
        s = zgpu_array_read_device(j->a, b->starts, b->counts, j->dev_buf, NULL, NULL);
        if (s != ZGPU_OK) return status_err(s);
        return cli_cuda_to_host(&j->cu, j->buf[slot], j->dev_buf, (size_t)bytes);
    }
    /* MODE_CHUNK: one chunk, decoded straight into its box; MODE_SLAB: the slab in one call */
    s = zgpu_array_read(j->a, b->starts + at, b->counts + at, b->outs[part], NULL);
    return s == ZGPU_OK ? 0 : status_err(s);
}

static int rd_write(void *user, int slot) {
    read_job *j = user;
    return cli_out_write_slab(&j->out, &j->blk[slot], j->sel_start, j->sel_count);
}

/* ---- planning ---- */
/* The slabs a budget gives: contiguous runs for a stream; else slabs on the shard grid, or on the chunk grid
 * where that cuts fewer axes (runs in the file are longer) or keeps slabs within the budget. */
static void rd_plan(void *user, uint64_t budget, cli_slabs *out) {
    read_job *j = user;
    if (j->stream) {
        cli_slabs_plan(out, j->ndim, j->sel_start, j->sel_count, j->itemsize, j->chunk, budget, 1);
        return;
    }
    cli_slabs_plan(out, j->ndim, j->sel_start, j->sel_count, j->itemsize, j->chunk, budget, 0);
    if (!j->sharded || j->mode == MODE_CHUNK) return;
    cli_slabs by_shard;
    cli_slabs_plan(&by_shard, j->ndim, j->sel_start, j->sel_count, j->itemsize, j->object, budget, 0);
    if (by_shard.k <= out->k && (by_shard.max_bytes <= budget || by_shard.max_bytes <= out->max_bytes))
        *out = by_shard; /* each shard's index read once */
}

/* Whether every chunk the selection meets is whole in it: a box of one chunk then decodes in place. */
static int chunk_aligned(const read_job *j) {
    for (int d = 0; d < j->ndim; d++)
        if (j->sel_start[d] % j->chunk[d] || (j->sel_start[d] + j->sel_count[d]) % j->chunk[d]) return 0;
    return 1;
}

static int make_context(int threads, int device, uint64_t window, zgpu_context **ctx) {
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    zgpu_remote_options r;
    zgpu_remote_options_init(&r);
    r.window_bytes = window; /* a remote store's fetched bytes stay near the slabs' */
    o.num_threads = threads;
    o.remote = &r;
    if (device >= 0) o.device = device;
    zgpu_status s = zgpu_context_create(&o, ctx);
    if (s != ZGPU_OK) return cli_err("cannot create a context: %s", zgpu_last_error());
    return 0;
}

/* Mode, threads and slabs. Returns the decode threads (the pool's size is set from them by the caller). */
static int rd_choose(read_job *j, int threads_asked, uint64_t fixed_budget) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    const int t_max = threads_asked > 0 ? threads_asked : (ncpu > 0 ? (int)ncpu : 1);
    uint64_t chunk_bytes = j->itemsize;
    for (int d = 0; d < j->ndim; d++) chunk_bytes *= j->chunk[d];
    if (j->mode != MODE_DEVICE) /* large whole chunks decode into place, one call each: no decode scratch */
        j->mode = !j->stream && !j->remote && !j->sharded && j->ndim > 0 && chunk_bytes >= ((uint64_t)1 << 20) &&
                          chunk_aligned(j) ? MODE_CHUNK : MODE_SLAB;
    const int writes = j->out.kind != CLI_OUT_NULL;
    cli_fit f = {.scratch = cli_decode_scratch(j->a, j->mode == MODE_CHUNK),
                 .task_bytes = chunk_bytes,
                 .fixed_budget = fixed_budget,
                 .plan = rd_plan,
                 .user = j};
    if (j->mode == MODE_DEVICE) { /* one reader; the library's pinned staging of a slab counted twice */
        j->n_slots = writes ? 2 : 1;
        f.copies = j->n_slots + 2;
        f.in_flight = 1;
    } else {
        const int readers = j->mode == MODE_CHUNK ? t_max : (t_max < 2 ? 1 : 2);
        j->n_slots = (readers < 2 ? 1 : 2) + writes;
        if (j->n_slots > MAX_SLOTS) j->n_slots = MAX_SLOTS;
        f.in_flight = j->n_slots - writes;
        f.copies = j->n_slots + (j->remote ? f.in_flight : 0);
    }
    return cli_fit_threads(&f, t_max, &j->slabs);
}

/* ---- the command ---- */
static void human(double b, char *out, size_t n) {
    static const char *unit[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (b >= 1000 && u < 4) {
        b /= 1000;
        u++;
    }
    snprintf(out, n, u ? "%.2f %s" : "%.0f %s", b, unit[u]);
}

static void free_slots(read_job *j) {
    for (int k = 0; k < MAX_SLOTS; k++) {
        if (j->buf[k]) {
            if (j->mode == MODE_DEVICE && j->cu.host_free) j->cu.host_free(j->buf[k]);
            else free(j->buf[k]);
        }
        free(j->blk[k].starts);
        free(j->blk[k].counts);
        free(j->blk[k].outs);
    }
    if (j->dev_buf && j->cu.free_) j->cu.free_(j->dev_buf);
}

static int alloc_slots(read_job *j) {
    const uint64_t bytes = j->slabs.max_bytes ? j->slabs.max_bytes : 1;
    if (bytes > SIZE_MAX) return cli_err("a slab of %llu bytes is too large", (unsigned long long)bytes);
    const uint64_t boxes = j->mode == MODE_CHUNK ? cli_blocks_max(&j->slabs, j->chunk) : 1;
    const size_t nd = j->ndim ? (size_t)j->ndim : 1;
    if (j->mode == MODE_DEVICE && cli_cuda_alloc(&j->cu, &j->dev_buf, (size_t)bytes)) return -1;
    for (int k = 0; k < j->n_slots; k++) {
        if (j->mode == MODE_DEVICE) {
            if (cli_cuda_host_alloc(&j->cu, &j->buf[k], (size_t)bytes)) return -1;
        } else if (!(j->buf[k] = zg_alloc_big((size_t)bytes))) { /* (huge pages: common/buf.h) */
            return cli_err("out of memory for a %llu-byte slab", (unsigned long long)bytes);
        }
        j->blk[k].starts = calloc((size_t)boxes * nd, sizeof(uint64_t));
        j->blk[k].counts = calloc((size_t)boxes * nd, sizeof(uint64_t));
        j->blk[k].outs = calloc((size_t)boxes, sizeof(void *));
        if (!j->blk[k].starts || !j->blk[k].counts || !j->blk[k].outs) return cli_err("out of memory");
    }
    return 0;
}

int cli_cmd_read(int argc, char **argv) {
    enum { O_OUT, O_REGION, O_DEVICE, O_THREADS, O_VERBOSE, O_PAGE, O_LEVEL };
    static const cli_opt_def defs[] = {{"output", 'o', 1},  {"region", 0, 1},   {"device", 0, 1},
                                       {"threads", 0, 1},   {"verbose", 'v', 0}, {"page", 0, 1},
                                       {"level", 0, 1},     {NULL, 0, 0}};
    cli_args ar;
    if (cli_args_parse(argc, argv, defs, &ar)) return cli_usage_error("read ");
    if (ar.help) { fputs(usage_read, stdout); return 0; }
    if (ar.npos != 1) { cli_err("read takes one PATH"); return cli_usage_error("read "); }
    if (!ar.value[O_OUT]) { cli_err("read needs -o FILE.npy"); return cli_usage_error("read "); }
    const char *path = ar.pos[0];
    char tiff_path[4200];
    if (ar.value[O_PAGE] || ar.value[O_LEVEL]) { /* a TIFF's page or level: its path selector (docs/tiff.md) */
        const char *k = ar.value[O_PAGE] ? ar.value[O_PAGE] : ar.value[O_LEVEL];
        if ((ar.value[O_PAGE] && ar.value[O_LEVEL]) || !*k || strspn(k, "0123456789") != strlen(k)) {
            cli_err("--page and --level take one count of 0 or more, and not both");
            return cli_usage_error("read ");
        }
        snprintf(tiff_path, sizeof tiff_path, "%s#%s=%s", path, ar.value[O_PAGE] ? "page" : "level", k);
        path = tiff_path;
    }
    int device = -1, threads = 0;
    if (ar.value[O_DEVICE] && cli_parse_device(ar.value[O_DEVICE], &device)) return cli_usage_error("read ");
    if (cli_check_threads(ar.value[O_THREADS], &threads)) return cli_usage_error("read ");
    const double t0 = now_s();

    read_job j;
    memset(&j, 0, sizeof j);
    j.out.kind = CLI_OUT_NULL;
    j.out.fd = -1;
    j.mode = device >= 0 ? MODE_DEVICE : MODE_SLAB;
    j.remote = strstr(path, "://") && strncmp(path, "file://", 7) != 0;
    zgpu_context *ctx = NULL;
    int rc = 0, opened = 0;
    /* A first context of one thread opens the array: the pool's size follows from its chunks (rd_choose). */
    if (make_context(1, device, 0, &ctx)) return cli_fail();
    zgpu_status s = zgpu_array_open(ctx, path, &j.a);
    if (s != ZGPU_OK) { rc = cli_fail_status(s); goto done; }
    j.ndim = zgpu_array_ndim(j.a);
    j.itemsize = zgpu_array_itemsize(j.a);
    uint64_t shape[ZGPU_MAX_DIMS];
    zgpu_array_shape(j.a, shape);
    if (cli_parse_region(ar.value[O_REGION], j.ndim, shape, j.sel_start, j.sel_count)) {
        rc = cli_usage_error("read ");
        goto done;
    }
    uint64_t nelem = 0, nbytes = 0;
    if (cli_shape_nbytes(j.ndim, j.sel_count, j.itemsize, &nelem, &nbytes)) { rc = cli_fail(); goto done; }
    zgpu_array_chunk_shape(j.a, j.chunk);
    j.sharded = zgpu_array_shard_shape(j.a, j.object);
    if (!j.sharded) memcpy(j.object, j.chunk, sizeof j.object);
    if (device >= 0 && cli_cuda_load(&j.cu, device)) { rc = cli_fail(); goto done; }

    if (cli_out_open(&j.out, ar.value[O_OUT], zgpu_array_dtype(j.a), j.itemsize, j.ndim, j.sel_count)) {
        rc = cli_fail();
        goto done;
    }
    opened = 1;
    j.stream = j.out.kind == CLI_OUT_STREAM;
    zgpu_tuning tun;
    zgpu_context_tuning(ctx, &tun);
    const int decoders = rd_choose(&j, threads, (uint64_t)tun.copy_slab_bytes);
    /* the pool: MODE_CHUNK's readers decode themselves (one thread); two slab readers decode beside the pool's
     * workers (pool size minus one); a device read decodes on host threads only what the GPU does not take */
    const int readers = j.mode == MODE_CHUNK ? decoders : j.mode == MODE_DEVICE ? 1 : (decoders < 2 ? 1 : 2);
    const int pool = j.mode == MODE_CHUNK ? 1 : j.mode == MODE_DEVICE ? decoders : decoders - readers + 1;
    if (pool > 1 || j.remote) {
        zgpu_array_close(j.a);
        j.a = NULL;
        zgpu_context_free(ctx);
        ctx = NULL;
        uint64_t window = j.remote ? j.slabs.max_bytes / 2 : 0;
        if (j.remote && window < ((uint64_t)1 << 20)) window = (uint64_t)1 << 20;
        if (make_context(pool, device, window, &ctx)) { rc = cli_fail(); goto done; }
        s = zgpu_array_open(ctx, path, &j.a);
        if (s != ZGPU_OK) { rc = cli_fail_status(s); goto done; }
    }
    if (alloc_slots(&j)) { rc = cli_fail(); goto done; }
    const double t1 = now_s();
    static const cli_pipe_ops ops_write = {rd_begin, rd_read, rd_write, NULL};
    static const cli_pipe_ops ops_null = {rd_begin, rd_read, NULL, NULL};
    cli_pipe_ops ops = j.out.kind == CLI_OUT_NULL ? ops_null : ops_write;
    ops.user = &j;
    if (cli_pipe_run(&j.slabs, readers, j.n_slots, &ops) || cli_out_finish(&j.out)) {
        rc = cli_fail();
        goto done;
    }
    opened = 0;
    if (ar.set[O_VERBOSE]) {
        const double t2 = now_s();
        char b[32], sb[32];
        human((double)nbytes, b, sizeof b);
        human((double)j.slabs.max_bytes, sb, sizeof sb);
        fprintf(stderr,
                "zgpu: read %s (%llu bytes) in %.3f s, %.3f GB/s (%.3f s with the start); %llu slab%s of up to %s, "
                "%d decode thread%s, %s\n",
                b, (unsigned long long)nbytes, t2 - t1, t2 > t1 ? (double)nbytes / 1e9 / (t2 - t1) : 0.0, t2 - t0,
                (unsigned long long)j.slabs.n, j.slabs.n == 1 ? "" : "s", sb, decoders, decoders == 1 ? "" : "s",
                mode_name[j.mode]);
    }
done:
    if (opened) cli_out_abort(&j.out);
    free_slots(&j);
    zgpu_array_close(j.a);
    zgpu_context_free(ctx);
    return rc;
}
