/* The host route of a device read (route/route.h): the host executor decodes the boxes straight into pinned
 * memory, each box packed C-contiguous, and the bytes go to the device in slabs of whole rows along axis 0, each
 * copied as soon as its last row is written (host/read_progress.h) while the rest decodes: into the destinations
 * where they are C-contiguous (one copy per run of destinations that follow each other), else into device scratch,
 * then the scatter kernel. For reads of one or a few chunks this beats the GPU decoders, which are built for
 * throughput over many chunks (a lone chunk leaves the GPU idle and pays launches and syncs). */
#include <limits.h>
#include <stdatomic.h>

#include "device/job.h"
#include "host/host_read.h"

/* A slab is at least SLAB_MIN bytes (a copy of 256 KiB reaches a third of the link's rate on the H200: 13.5 us; 2 MiB
 * 47 us) and a read has at most SLAB_MAX of them; a read of under two slabs' bytes, or of more rows along axis 0 than
 * SLAB_ROWS_MAX (a 1-D array's elements), is copied whole after its decode. */
#define SLAB_MIN ((size_t)512 << 10)
#define SLAB_MAX 32
#define SLAB_ROWS_MAX ((size_t)1 << 16)

/* Slabs that finish while under a quarter of the read's reports are still to come wait for its end, and go with the
 * rest in one copy per run of them: copied one by one as the last units came in, the 32 slabs of a batch of 8 label
 * crops (16 MiB) made the read 20% slower on the H200, where the copies had nothing left to overlap. */
#define SLAB_LATE 4

static atomic_ulong slabs_planned, slabs_reported, slabs_after; /* (tests: dev_host_route_slabs) */

void dev_host_route_slabs(unsigned long *planned, unsigned long *reported, unsigned long *after) {
    *planned = atomic_load(&slabs_planned);
    *reported = atomic_load(&slabs_reported);
    *after = atomic_load(&slabs_after);
}

/* Whether byte strides are C-contiguous for a box of `count` elements. */
static int c_contiguous(int nd, const uint64_t *count, size_t itemsize, const int64_t *strides) {
    int64_t c[ZGPU_MAX_DIMS];
    zg_c_strides(nd, count, itemsize, c);
    for (int d = 0; d < nd; d++)
        if (count[d] > 1 && strides[d] != c[d]) return 0;
    return 1;
}

int dev_pack_boxes(int nd, size_t n, const uint64_t *counts, size_t itemsize, const int64_t *strides, size_t *off) {
    int all_contiguous = 1;
    off[0] = 0;
    for (size_t r = 0; r < n; r++) {
        const uint64_t *c = counts + r * (size_t)nd;
        uint64_t bytes = itemsize;
        for (int d = 0; d < nd; d++) bytes *= c[d];
        off[r + 1] = off[r] + (size_t)bytes;
        if (bytes && !c_contiguous(nd, c, itemsize, strides + r * (size_t)nd)) all_contiguous = 0;
    }
    return all_contiguous;
}

typedef struct slab_copier {
    zg_read_progress pr;
    const zg_dev_request *rq;
    const size_t *off;      /* the packed boxes' offsets (dev_pack_boxes) */
    size_t n;
    const uint8_t *h;       /* pinned staging */
    uint8_t *d;             /* device scratch (strided destinations), or NULL: the destinations themselves */
    size_t *slab_lo, *slab_hi;
    atomic_uint *copied;    /* per slab: the host read's attempt (zg_read_progress.attempt) that copied it last */
    atomic_int error;       /* the first failed copy's cudaError_t */
    cudaStream_t stream;
    int device;
} slab_copier;

/* Bytes [lo, hi) of the packed boxes to the device: to scratch, or to each destination (runs of destinations that
 * follow each other in memory in one copy). 0, or the copy's CUDA error. */
static cudaError_t copy_packed(const slab_copier *c, size_t lo, size_t hi) {
    if (hi <= lo) return cudaSuccess;
    if (c->d) return cudaMemcpyAsync(c->d + lo, c->h + lo, hi - lo, cudaMemcpyHostToDevice, c->stream);
    size_t r = 0;
    while (r < c->n && c->off[r + 1] <= lo) r++;
    for (size_t p = lo; p < hi && r < c->n;) {
        uint8_t *dst = (uint8_t *)c->rq->outs[r] + (p - c->off[r]);
        size_t q = c->off[r + 1] < hi ? c->off[r + 1] : hi;
        while (q < hi && r + 1 < c->n &&
               (uint8_t *)c->rq->outs[r + 1] == (uint8_t *)c->rq->outs[r] + (c->off[r + 1] - c->off[r])) {
            r++;
            q = c->off[r + 1] < hi ? c->off[r + 1] : hi;
        }
        const cudaError_t ce = cudaMemcpyAsync(dst, c->h + p, q - p, cudaMemcpyHostToDevice, c->stream);
        if (ce != cudaSuccess) return ce;
        p = q;
        r++;
    }
    return cudaSuccess;
}

/* Slab s is written (on the pool thread that wrote its last row): copied once an attempt of the host read, unless the
 * read is nearly done. */
static void slab_done(void *user, size_t s) {
    slab_copier *c = user;
    if (SLAB_LATE * atomic_load(&c->pr.reports_left) < c->pr.reports) return; /* (late: copied after the read) */
    const unsigned now = atomic_load(&c->pr.attempt);
    unsigned was = atomic_load(&c->copied[s]);
    if (was == now || !atomic_compare_exchange_strong(&c->copied[s], &was, now)) return;
    atomic_fetch_add(&slabs_reported, 1);
    cudaError_t ce = cudaSetDevice(c->device); /* (a pool thread's current device may be another) */
    if (ce == cudaSuccess) ce = copy_packed(c, c->slab_lo[s], c->slab_hi[s]);
    int ok = cudaSuccess;
    if (ce != cudaSuccess) atomic_compare_exchange_strong(&c->error, &ok, (int)ce);
}

/* After the read: the slabs no report copied (late ones, any of no rows), one copy per run of them. */
static cudaError_t slabs_rest(slab_copier *c) {
    const unsigned now = atomic_load(&c->pr.attempt);
    for (size_t k = 0; k < c->pr.n_slabs;) {
        if (atomic_load(&c->copied[k]) == now) {
            k++;
            continue;
        }
        size_t e = k;
        while (e < c->pr.n_slabs && atomic_load(&c->copied[e]) != now) atomic_store(&c->copied[e++], now);
        atomic_fetch_add(&slabs_after, e - k);
        const cudaError_t ce = copy_packed(c, c->slab_lo[k], c->slab_hi[e - 1]);
        if (ce != cudaSuccess) return ce;
        k = e;
    }
    return cudaSuccess;
}

/* The slabs of n packed boxes (rows along axis 0, box after box, greedily up to the slab size); 0 where the read
 * is copied whole (too small, too many rows, no memory). */
static int slabs_plan(slab_copier *c, int nd, const uint64_t *counts) {
    const size_t total = c->off[c->n];
    size_t rows = 0;
    for (size_t r = 0; r < c->n; r++) rows += nd ? (size_t)counts[r * (size_t)nd] : 1;
    if (total < 2 * SLAB_MIN || rows > SLAB_ROWS_MAX) return 0;
    const size_t target = total / SLAB_MAX > SLAB_MIN ? total / SLAB_MAX : SLAB_MIN;
    /* (slabs of target bytes or more, and a last one: SLAB_MAX + 1 at most, the rows of empty planes counting a byte
     * each adding under an eighth of one; past that the last slab takes the rest) */
    const size_t cap = rows < SLAB_MAX + 1 ? rows : SLAB_MAX + 1;
    size_t *row_base = malloc((c->n + 1) * sizeof *row_base);
    uint32_t *slab_of = malloc(rows * sizeof *slab_of);
    c->slab_lo = malloc(cap * sizeof *c->slab_lo);
    c->slab_hi = malloc(cap * sizeof *c->slab_hi);
    if (!row_base || !slab_of || !c->slab_lo || !c->slab_hi) {
        free(row_base), free(slab_of);
        return 0;
    }
    size_t g = 0, slab = 0, acc = 0;
    for (size_t r = 0; r < c->n; r++) {
        row_base[r] = g;
        const size_t box_rows = nd ? (size_t)counts[r * (size_t)nd] : 1;
        const size_t plane = box_rows ? (c->off[r + 1] - c->off[r]) / box_rows : 0;
        for (size_t z = 0; z < box_rows; z++, g++) {
            if (!acc) c->slab_lo[slab] = c->off[r] + z * plane;
            slab_of[g] = (uint32_t)slab;
            c->slab_hi[slab] = c->off[r] + (z + 1) * plane;
            acc += plane ? plane : 1;
            if (acc >= target && slab + 1 < cap) slab++, acc = 0;
        }
    }
    row_base[c->n] = g;
    c->pr.n_slabs = acc ? slab + 1 : slab;
    c->pr.row_base = row_base;
    c->pr.slab_of_row = slab_of;
    c->pr.slab_done = slab_done;
    c->pr.user = c;
    c->pr.pending = calloc(c->pr.n_slabs ? c->pr.n_slabs : 1, sizeof *c->pr.pending);
    c->copied = malloc((c->pr.n_slabs ? c->pr.n_slabs : 1) * sizeof *c->copied);
    if (!c->pr.pending || !c->copied) return 0;
    /* (no attempt copied any yet: were the host read never to count one, slabs_rest would still copy them all) */
    for (size_t k = 0; k < c->pr.n_slabs; k++) atomic_init(&c->copied[k], UINT_MAX);
    atomic_fetch_add(&slabs_planned, c->pr.n_slabs);
    return 1;
}

static void slabs_free(slab_copier *c) {
    free((void *)c->pr.row_base), free((void *)c->pr.slab_of_row), free(c->pr.pending), free(c->copied);
    free(c->slab_lo), free(c->slab_hi);
}

zgpu_status dev_host_route(zgpu_array *a, struct zg_device_state *st, const zg_dev_request *rq, const zg_xform *x,
                           void *user_stream, int order_user, zgpu_read_stats *stats, zg_plan *plan) {
    const int nd = a->meta.ndim;
    const size_t n = rq->n, isz = x->out_itemsize; /* (the host converts while placing) */
    const double t0 = zg_now();
    int64_t *strides = NULL;
    zgpu_status s = zg_resolve_region_strides(a, isz, n, rq->counts, rq->strides, &strides);
    size_t *off = s == ZGPU_OK ? malloc((n + 1) * sizeof *off) : NULL;
    void **packed = s == ZGPU_OK ? malloc((n ? n : 1) * sizeof *packed) : NULL;
    if (s == ZGPU_OK && (!off || !packed))
        s = zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for a read of %zu boxes", n);
    if (s != ZGPU_OK) {
        free(off);
        free(strides);
        free(packed);
        if (plan) zg_plan_free(plan);
        return s;
    }
    const int all_contiguous = dev_pack_boxes(nd, n, rq->counts, isz, strides, off);
    const size_t total = off[n];
    /* scatter items for strided destinations, behind the data (8-byte aligned) */
    const size_t items_at = zg_align_up(total, 256), counts_at = items_at + zg_align_up(n * sizeof(zg_k_scatter), 256);
    const size_t need = all_contiguous ? total : counts_at + n * (size_t)(nd ? nd : 1) * sizeof(uint64_t);
    pthread_mutex_lock(&st->lock);
    bufset *b = &st->set[0]; /* (free: every read holds the lock until its work on the device is done) */
    cudaStream_t str = st->stream;
    cudaError_t ce = cudaSetDevice(st->device);
    if (s == ZGPU_OK && ce == cudaSuccess && order_user) ce = cudaEventRecord(st->ev[1], (cudaStream_t)user_stream);
    if (s == ZGPU_OK && ce == cudaSuccess && order_user) ce = cudaStreamWaitEvent(str, st->ev[1], 0);
    if (s == ZGPU_OK && ce == cudaSuccess && rq->after) ce = cudaStreamWaitEvent(str, (cudaEvent_t)rq->after, 0);
    if (s == ZGPU_OK && ce != cudaSuccess)
        s = zg_error(ZGPU_ERR_CUDA, "CUDA error ordering after the caller's stream: %s", cudaGetErrorString(ce));
    if (s == ZGPU_OK) s = dev_ensure_pinned(st, b, need ? need : 1, 0);
    if (s == ZGPU_OK && !all_contiguous) s = dev_ensure_device(str, &b->d, &b->d_cap, need, 0);
    for (size_t r = 0; s == ZGPU_OK && r < n; r++) packed[r] = b->h + off[r];
    /* the slabs copied as the host read writes them (none planned: all of it after the read) */
    slab_copier c;
    memset(&c, 0, sizeof c);
    c.rq = rq, c.off = off, c.n = n, c.h = b->h, c.d = all_contiguous ? NULL : b->d, c.stream = str;
    c.device = st->device;
    const int slabs = s == ZGPU_OK && slabs_plan(&c, nd, rq->counts);
    const double t_read = zg_now();
    if (s == ZGPU_OK && plan) {
        s = zg_host_read_regions_planned(a, plan, n, rq->starts, rq->counts, packed, NULL, rq->opts,
                                         slabs ? &c.pr : NULL);
        plan = NULL;
    } else if (s == ZGPU_OK) {
        s = zg_host_read_regions(a, n, rq->starts, rq->counts, packed, NULL, rq->opts, slabs ? &c.pr : NULL);
    }
    if (s == ZGPU_OK) zgpu_array_last_read_stats(a, stats); /* the host read's stages */
    const double t_copy = zg_now();
    /* the late slabs (and any no report finished) go now, or the whole read where none were planned; then the
     * scatter items */
    if (s == ZGPU_OK && slabs) {
        ce = atomic_load(&c.error) != cudaSuccess ? (cudaError_t)atomic_load(&c.error) : slabs_rest(&c);
    } else if (s == ZGPU_OK) {
        ce = copy_packed(&c, 0, total);
    }
    if (s == ZGPU_OK && ce != cudaSuccess)
        s = zg_error(ZGPU_ERR_CUDA, "CUDA error copying a host-decoded read to the device: %s", cudaGetErrorString(ce));
    if (s == ZGPU_OK && !all_contiguous) {
        /* the scatter into the strided destinations, per region (its strides are its own), its items first */
        zg_k_scatter *items = (zg_k_scatter *)(b->h + items_at);
        uint64_t *cnt = (uint64_t *)(b->h + counts_at);
        for (size_t r = 0; r < n; r++) {
            items[r] = (zg_k_scatter){b->d + off[r], rq->outs[r]};
            memcpy(cnt + r * (size_t)nd, rq->counts + r * (size_t)nd, (size_t)nd * sizeof *cnt);
        }
        if ((ce = cudaMemcpyAsync(b->d + items_at, b->h + items_at, need - items_at, cudaMemcpyHostToDevice, str)))
            s = zg_error(ZGPU_ERR_CUDA, "CUDA error copying a host-decoded read to the device: %s",
                         cudaGetErrorString(ce));
        zg_k_scatter_params sp;
        memset(&sp, 0, sizeof sp);
        sp.ndim = nd;
        sp.itemsize = (int)isz;
        for (size_t r = 0; s == ZGPU_OK && r < n; r++) {
            if (off[r + 1] == off[r]) continue;
            const uint64_t *cr = rq->counts + r * (size_t)nd;
            zg_c_strides(nd, cr, isz, sp.src_strides);
            memcpy(sp.dst_strides, strides + r * (size_t)nd, (size_t)nd * sizeof(int64_t));
            uint64_t row_len;
            int outer;
            const uint64_t rows = zg_k_scatter_rows(nd, sp.src_strides, sp.dst_strides, sp.itemsize, cr, 1, &row_len,
                                                    &outer);
            if ((ce = zg_k_scatter_launch(&sp, (const zg_k_scatter *)(b->d + items_at) + r,
                                          (const uint64_t *)(b->d + counts_at) + r * (size_t)nd, 1, rows, str)))
                s = zg_error(ZGPU_ERR_CUDA, "CUDA error in the scatter kernel: %s", cudaGetErrorString(ce));
        }
    }
    /* later work on the caller's stream comes after ours; the pinned buffer is free once the copies are done (a
     * failed read too may have copied slabs already) */
    if (s == ZGPU_OK) {
        ce = cudaEventRecord(st->ev[2], str);
        if (ce == cudaSuccess && order_user) ce = cudaStreamWaitEvent((cudaStream_t)user_stream, st->ev[2], 0);
        if (ce == cudaSuccess) ce = cudaStreamSynchronize(str);
        if (ce != cudaSuccess) s = zg_error(ZGPU_ERR_CUDA, "CUDA error finishing the read: %s", cudaGetErrorString(ce));
    } else if (slabs) {
        cudaStreamSynchronize(str);
    }
    pthread_mutex_unlock(&st->lock);
    slabs_free(&c);
    if (plan) zg_plan_free(plan); /* (an error before the read) */
    if (s == ZGPU_OK) {
        stats->h2d_s = zg_now() - t_copy;
        stats->plan_s += t_read - t0;
        stats->total_s = zg_now() - t0;
        stats->route = ZGPU_ROUTE_HOST;
        stats->gpu_decoded = 0;
        stats->cpu_decoded = stats->chunks;
    }
    free(off);
    free(strides);
    free(packed);
    return s;
}
