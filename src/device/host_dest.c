/* Host reads decoded on the GPU (zgpu_tuning.host_read_route). A read into host memory whose chunks the GPU decodes
 * faster than the host threads (incompressible zstd and DEFLATE data, many chunks, remote reads bound by decode)
 * runs as a device read into device scratch, every box packed C-contiguous, and comes back in pieces of
 * ZG_ROUTE_BACK_PIECE bytes through two pinned buffers: one piece crosses the link while the pool's threads copy the
 * one before into the caller's boxes. The route model counts that copy back (route/route.h, host_dest); where the
 * host read wins, the device read declines before fetching anything and the host reads as usual.
 *
 * Host reads never start CUDA under AUTO: a process that has not used its GPU through the context (a DataLoader
 * worker, a CPU-only script on a GPU machine) reads as before. */
#include "device/job.h"
#include "host/pool.h"
#include "route/route.h"

/* One piece's copy out of pinned memory, split over the pool: part i of n_parts of the packed bytes [from, to). */
typedef struct copy_back {
    const uint8_t *pinned; /* holds packed bytes [from, to) */
    size_t from, to, n_parts;
    const size_t *off; /* region r's packed bytes: [off[r], off[r + 1]) */
    size_t n;
    void *const *outs;
} copy_back;

static zgpu_status copy_part(void *arg, size_t i) {
    const copy_back *c = arg;
    const size_t len = c->to - c->from;
    size_t s = c->from + len * i / c->n_parts;
    const size_t e = c->from + len * (i + 1) / c->n_parts;
    size_t lo = 0, hi = c->n; /* the region holding s: the last r with off[r] <= s */
    while (hi - lo > 1) {
        const size_t mid = (lo + hi) / 2;
        if (c->off[mid] <= s) lo = mid;
        else hi = mid;
    }
    for (size_t r = lo; s < e && r < c->n; r++) {
        const size_t end = c->off[r + 1] < e ? c->off[r + 1] : e;
        if (end <= s) continue; /* (an empty box) */
        memcpy((uint8_t *)c->outs[r] + (s - c->off[r]), c->pinned + (s - c->from), end - s);
        s = end;
    }
    return ZGPU_OK;
}

/* Device scratch kept from one host read to the next, at most (a larger read's is freed after it). */
#define HOST_DEST_KEEP ((size_t)256 << 20)

/* The packed bytes [0, total) of device buffer d into the boxes, piece by piece (hbuf's two pinned halves). */
static zgpu_status copy_back_all(zgpu_array *a, struct zg_device_state *st, const uint8_t *d, size_t total,
                                 const size_t *off, size_t n, void *const *outs) {
    const size_t piece = ZG_ROUTE_BACK_PIECE;
    const size_t n_pieces = (total + piece - 1) / piece;
    const int threads = zg_pool_size(a->ctx->pool);
    cudaStream_t s = st->hbuf.stream;
    zgpu_status rs = ZGPU_OK;
    cudaError_t ce = cudaSuccess;
    for (size_t k = 0; k <= n_pieces && rs == ZGPU_OK; k++) {
        if (k < n_pieces) { /* piece k crosses while piece k - 1 (in the other half) is copied out */
            const size_t from = k * piece, len = total - from < piece ? total - from : piece;
            ce = cudaMemcpyAsync(st->hbuf.h + (k % 2) * piece, d + from, len, cudaMemcpyDeviceToHost, s);
            if (ce == cudaSuccess) ce = cudaEventRecord(st->hbuf.ev[k % 2], s);
            if (ce != cudaSuccess) break;
        }
        if (k > 0) {
            const size_t p = k - 1, from = p * piece, to = total - from < piece ? total : from + piece;
            if ((ce = cudaEventSynchronize(st->hbuf.ev[p % 2])) != cudaSuccess) break;
            /* parts of at least 1 MiB: below that the pool's hand-out costs more than the copy */
            size_t parts = (to - from) >> 20;
            parts = parts < 1 ? 1 : parts > (size_t)threads ? (size_t)threads : parts;
            copy_back c = {st->hbuf.h + (p % 2) * piece, from, to, parts, off, n, outs};
            rs = parts > 1 ? zg_pool_run(a->ctx->pool, parts, copy_part, &c) : copy_part(&c, 0);
        }
    }
    if (ce != cudaSuccess) {
        cudaStreamSynchronize(s); /* (nothing may still write into the pinned halves) */
        return zg_error(ZGPU_ERR_CUDA, ZG_ARRAY_WHERE_FMT ": CUDA error copying a read decoded on the GPU back to host "
                        "memory: %s", a->path, cudaGetErrorString(ce));
    }
    return rs;
}

/* hbuf's stream, events and pinned halves, made on first use (under hlock). */
static zgpu_status hbuf_ready(struct zg_device_state *st) {
    if (!st->hbuf.stream) {
        cudaError_t ce = cudaStreamCreateWithFlags(&st->hbuf.stream, cudaStreamNonBlocking);
        for (int i = 0; i < 2 && ce == cudaSuccess; i++)
            ce = cudaEventCreateWithFlags(&st->hbuf.ev[i], cudaEventDisableTiming);
        if (ce != cudaSuccess) {
            cudaGetLastError();
            return zg_error(ZGPU_ERR_CUDA, "CUDA error preparing the copy back of host reads: %s", cudaGetErrorString(ce));
        }
    }
    return dev_grow_pinned(st, &st->hbuf.h, &st->hbuf.h_cap, 2 * ZG_ROUTE_BACK_PIECE);
}

zgpu_status zg_cuda_host_read(zgpu_array *a, size_t n, const uint64_t *starts, const uint64_t *counts,
                              void *const *outs, const int64_t *out_strides, const zgpu_read_options *opts, int *taken,
                              zg_host_lesson *lesson) {
    *taken = 0;
    lesson->valid = 0;
    lesson->plan = NULL;
    const zgpu_route want = a->ctx->tuning.host_read_route;
    if (want == ZGPU_ROUTE_HOST || n == 0) return ZGPU_OK;
    /* AUTO: only where the context's GPU is already up (a host read never starts CUDA itself) */
    if (want == ZGPU_ROUTE_AUTO && !__atomic_load_n(&a->ctx->device, __ATOMIC_ACQUIRE)) return ZGPU_OK;
    if (zg_dtype_is_vlen(&a->meta.dtype)) return ZGPU_OK; /* (the host read says how those are read) */
    const int nd = a->meta.ndim;
    zg_xform x;
    if (zg_read_xform(a, opts, &x) != ZGPU_OK) return ZGPU_OK; /* (the host read reports what is wrong) */
    int64_t *strides = NULL;
    if (zg_resolve_region_strides(a, x.out_itemsize, n, counts, out_strides, &strides) != ZGPU_OK) return ZGPU_OK;
    size_t *off = malloc((n + 1) * sizeof *off);
    void **douts = malloc(n * sizeof *douts);
    /* (strided destinations read on the host) */
    const int usable = off && douts && dev_pack_boxes(nd, n, counts, x.out_itemsize, strides, off);
    free(strides);
    const size_t total = usable ? off[n] : 0;
    /* the GPU's side: its state (not in a forked child, nor without a GPU: zg_cuda_probe), within the budget */
    struct zg_device_state *st = NULL;
    zg_device_scope sc;
    int scoped = 0;
    if (total && zg_cuda_probe() == ZGPU_OK && zg_device_scope_enter(a->ctx->opts.device, &sc) == ZGPU_OK) {
        scoped = 1;
        if (dev_get_state(a->ctx, &st) != ZGPU_OK) st = NULL;
    }
    const size_t budget = a->ctx->opts.device_memory_budget ? a->ctx->opts.device_memory_budget
                                                            : st ? st->auto_budget : 0;
    zgpu_status s = ZGPU_OK;
    /* one such read at a time uses the scratch: under AUTO another thread's finds it busy and reads on the host
     * meanwhile (the cores are idle then), under DEVICE it waits */
    if (st && total <= budget &&
        (want == ZGPU_ROUTE_DEVICE ? pthread_mutex_lock(&st->hlock) : pthread_mutex_trylock(&st->hlock)) == 0) {
        const double t0 = zg_now();
        const size_t h_cap0 = st->hbuf.h_cap;
        s = hbuf_ready(st);
        if (s == ZGPU_OK) s = dev_ensure_device(st->hbuf.stream, &st->hbuf.d, &st->hbuf.d_cap, total, 0);
        /* a read larger than any before teaches the model nothing: on an H100 a field volume's first such read took
         * 189 ms against 33 after (the scratch, the pinned halves, first touches), and its lesson had sent the next
         * reads to the host threads at 50 ms */
        const int grew = total > st->hbuf.peak || st->hbuf.h_cap != h_cap0;
        if (total > st->hbuf.peak) st->hbuf.peak = total;
        if (s == ZGPU_OK && cudaStreamSynchronize(st->hbuf.stream) != cudaSuccess) s = ZGPU_ERR_CUDA;
        if (s != ZGPU_OK) { /* no room on the device: the host reads it */
            pthread_mutex_unlock(&st->hlock);
            goto out;
        }
        for (size_t r = 0; r < n; r++) douts[r] = st->hbuf.d + off[r];
        int declined = 0;
        const zg_dev_request rq = {n, starts, counts, douts, NULL, NULL, opts, 1, &declined, lesson};
        s = dev_run_read(a, &rq, NULL, 0);
        if (s == ZGPU_OK && !declined) {
            zgpu_read_stats stats;
            stats.struct_size = sizeof stats;
            zgpu_array_last_read_stats(a, &stats); /* the device read's stages */
            const double t_back = zg_now();
            s = copy_back_all(a, st, st->hbuf.d, total, off, n, outs);
            if (s == ZGPU_OK) {
                stats.h2d_s += zg_now() - t_back; /* (the link's time, this way) */
                stats.total_s = zg_now() - t0;
                zg_array_set_stats(a, &stats);
                /* (the model predicted the copy back too; the pick's own time is no route's) */
                if (!grew) zg_cuda_host_read_learn(a, lesson, stats.total_s - lesson->t_pick);
            }
        }
        /* the scratch kept for the next such read is bounded: the GPU's memory is the caller's first (a larger one is
         * allocated again by its next read, from the stream-ordered pool) */
        if (st->hbuf.d_cap > HOST_DEST_KEEP) {
            cudaFreeAsync(st->hbuf.d, st->hbuf.stream);
            st->hbuf.d = NULL;
            st->hbuf.d_cap = 0;
        }
        pthread_mutex_unlock(&st->hlock);
        *taken = !declined;
        /* the GPU's own trouble (its memory, a CUDA error) is not the data's: the host reads it then */
        if (s == ZGPU_ERR_NO_MEMORY || s == ZGPU_ERR_CUDA) *taken = 0;
        if (!*taken) s = ZGPU_OK;
        if (!declined) lesson->valid = 0; /* (learnt above, or a failed read: nothing) */
    }
out:
    if (scoped) zg_device_scope_leave(&sc);
    free(off);
    free(douts);
    return s;
}
