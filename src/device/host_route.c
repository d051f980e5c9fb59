/* The host route of a device read (route/route.h): the host executor decodes the boxes straight into pinned
 * memory, each box packed C-contiguous, then the bytes go to the device once: one copy per run of C-contiguous
 * destinations that follow each other (a stacked batch is one copy), or for strided destinations one copy into
 * device scratch and the scatter kernel. For reads of one or a few chunks this beats the GPU decoders, which are
 * built for throughput over many chunks (a lone chunk leaves the GPU idle and pays launches and syncs). */
#include "device/job.h"
#include "host/host_read.h"

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
    cudaError_t ce = cudaSetDevice(st->device);
    if (s == ZGPU_OK && ce == cudaSuccess && order_user) ce = cudaEventRecord(st->ev[1], (cudaStream_t)user_stream);
    if (s == ZGPU_OK && ce == cudaSuccess && order_user) ce = cudaStreamWaitEvent(st->stream, st->ev[1], 0);
    if (s == ZGPU_OK && ce == cudaSuccess && rq->after) ce = cudaStreamWaitEvent(st->stream, (cudaEvent_t)rq->after, 0);
    if (s == ZGPU_OK && ce != cudaSuccess)
        s = zg_error(ZGPU_ERR_CUDA, "CUDA error ordering after the caller's stream: %s", cudaGetErrorString(ce));
    if (s == ZGPU_OK) s = dev_ensure_pinned(st, b, need ? need : 1, 0);
    for (size_t r = 0; s == ZGPU_OK && r < n; r++) packed[r] = b->h + off[r];
    const double t_read = zg_now();
    if (s == ZGPU_OK && plan) {
        s = zg_host_read_regions_planned(a, plan, n, rq->starts, rq->counts, packed, NULL, rq->opts);
        plan = NULL;
    } else if (s == ZGPU_OK) {
        s = zg_host_read_regions(a, n, rq->starts, rq->counts, packed, NULL, rq->opts);
    }
    if (s == ZGPU_OK) zgpu_array_last_read_stats(a, stats); /* the host read's stages */
    const double t_copy = zg_now();
    cudaStream_t str = st->stream;
    if (s == ZGPU_OK && all_contiguous) {
        /* one copy per run of destinations that follow each other in memory */
        for (size_t r = 0; r < n && s == ZGPU_OK;) {
            size_t e = r + 1;
            while (e < n && (uint8_t *)rq->outs[e] == (uint8_t *)rq->outs[r] + (off[e] - off[r])) e++;
            if (off[e] > off[r] &&
                (ce = cudaMemcpyAsync(rq->outs[r], b->h + off[r], off[e] - off[r], cudaMemcpyHostToDevice, str)))
                s = zg_error(ZGPU_ERR_CUDA, "CUDA error copying a host-decoded read to the device: %s",
                             cudaGetErrorString(ce));
            r = e;
        }
    } else if (s == ZGPU_OK) {
        /* the packed boxes to device scratch, then the scatter into the strided destinations, per region (its
         * strides are its own) */
        zg_k_scatter *items = (zg_k_scatter *)(b->h + items_at);
        uint64_t *cnt = (uint64_t *)(b->h + counts_at);
        s = dev_ensure_device(str, &b->d, &b->d_cap, need, 0);
        for (size_t r = 0; s == ZGPU_OK && r < n; r++) {
            items[r] = (zg_k_scatter){b->d + off[r], rq->outs[r]};
            memcpy(cnt + r * (size_t)nd, rq->counts + r * (size_t)nd, (size_t)nd * sizeof *cnt);
        }
        if (s == ZGPU_OK && (ce = cudaMemcpyAsync(b->d, b->h, need, cudaMemcpyHostToDevice, str)))
            s = zg_error(ZGPU_ERR_CUDA, "CUDA error copying a host-decoded read to the device: %s",
                         cudaGetErrorString(ce));
        zg_k_scatter_params sp;
        memset(&sp, 0, sizeof sp);
        sp.ndim = nd;
        sp.itemsize = (int)isz;
        for (size_t r = 0; s == ZGPU_OK && r < n; r++) {
            if (off[r + 1] == off[r]) continue;
            const uint64_t *c = rq->counts + r * (size_t)nd;
            zg_c_strides(nd, c, isz, sp.src_strides);
            memcpy(sp.dst_strides, strides + r * (size_t)nd, (size_t)nd * sizeof(int64_t));
            uint64_t row_len;
            int outer;
            const uint64_t rows = zg_k_scatter_rows(nd, sp.src_strides, sp.dst_strides, sp.itemsize, c, 1, &row_len,
                                                    &outer);
            if ((ce = zg_k_scatter_launch(&sp, (const zg_k_scatter *)(b->d + items_at) + r,
                                          (const uint64_t *)(b->d + counts_at) + r * (size_t)nd, 1, rows, str)))
                s = zg_error(ZGPU_ERR_CUDA, "CUDA error in the scatter kernel: %s", cudaGetErrorString(ce));
        }
    }
    /* later work on the caller's stream comes after ours; the pinned buffer is free once the copies are done */
    if (s == ZGPU_OK) {
        ce = cudaEventRecord(st->ev[2], str);
        if (ce == cudaSuccess && order_user) ce = cudaStreamWaitEvent((cudaStream_t)user_stream, st->ev[2], 0);
        if (ce == cudaSuccess) ce = cudaStreamSynchronize(str);
        if (ce != cudaSuccess) s = zg_error(ZGPU_ERR_CUDA, "CUDA error finishing the read: %s", cudaGetErrorString(ce));
    }
    pthread_mutex_unlock(&st->lock);
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
