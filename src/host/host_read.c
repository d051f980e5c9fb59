/* Host executor for reads: every planned chunk is fetched, decoded and placed by one pool task, straight
 * into the caller's buffer when the chunk is contiguous there. */
#include <stdatomic.h>
#include <string.h>

#include "codec/sharding.h"
#include "host/scratch.h"
#include "plan/plan.h"
#include "common/status.h"

typedef struct read_job {
    zgpu_array *a;
    const zg_plan *plan;
    const zg_chain *chain;      /* decodes one read chunk */
    uint8_t *out;
    const int64_t *strides;
    int64_t chunk_strides[ZGPU_MAX_DIMS];
    size_t task_base;           /* a window of a remote read: its first task (pool index 0) */
    atomic_uint_fast64_t io_ns, decode_ns, stored;
} read_job;

static uint64_t ns_since(double t0) { return (uint64_t)((zg_now() - t0) * 1e9); }

/* Whether a whole chunk lands as one C-contiguous block of the output. */
static int chunk_is_contiguous(const read_job *j) {
    for (int d = 0; d < j->plan->ndim; d++)
        if (j->plan->chunk[d] > 1 && j->strides[d] != j->chunk_strides[d]) return 0;
    return 1;
}

static zgpu_status chunk_failed(const read_job *j, const zg_chunk_task *t, zgpu_status st) {
    const zg_plan_object *ob = &j->plan->objects[t->object];
    if (j->a->shard) zg_error_prefix(ZG_ARRAY_WHERE_FMT ", shard '%s', inner chunk %u: ", j->a->path, ob->key, t->inner);
    else zg_error_prefix(ZG_ARRAY_WHERE_FMT ", chunk '%s': ", j->a->path, ob->key);
    return st;
}

static zgpu_status read_task(void *arg, size_t i) {
    read_job *j = arg;
    const zg_plan *plan = j->plan;
    const zg_chunk_task *t = &plan->tasks[j->task_base + i];
    const zg_plan_object *ob = &plan->objects[t->object];
    const int nd = plan->ndim;
    const size_t itemsize = j->a->meta.dtype.size;
    uint8_t *dst = j->out;
    for (int d = 0; d < nd; d++) dst += (int64_t)t->in_box[d] * j->strides[d];

    if (t->state == ZG_TASK_MISSING) {
        zg_fill_box(nd, t->count, itemsize, dst, j->strides, j->a->meta.fill_value);
        return ZGPU_OK;
    }
    zg_thread_scratch *ts = zg_thread_scratch_get();
    if (!ts) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for thread scratch");
    zg_store *s = j->a->store;
    double t0 = zg_now();
    int found = 0;
    zgpu_status st = ZGPU_OK;
    /* the stored bytes: already in memory (fetched from a remote store by the plan), a range inside a shard,
     * or the whole object */
    const uint8_t *enc = t->state == ZG_TASK_PRESENT ? zg_plan_bytes(ob, t->offset, t->nbytes) : NULL;
    size_t enc_n = (size_t)t->nbytes;
    if (enc) {
        found = 1;
    } else if (t->state == ZG_TASK_PRESENT) {
        st = zg_buf_reserve(&ts->io, (size_t)t->nbytes);
        if (st == ZGPU_OK) st = zg_plan_read(s, ob, t->offset, t->nbytes, ts->io.data, &found);
        ts->io.size = (size_t)t->nbytes;
    } else {
        ts->io.size = 0;
        st = s->vt->get(s, ob->key, &ts->io, &found);
    }
    if (st != ZGPU_OK) return chunk_failed(j, t, st);
    if (!enc) {
        enc = ts->io.data;
        enc_n = ts->io.size;
    }
    atomic_fetch_add(&j->io_ns, ns_since(t0));
    if (!found) {
        zg_fill_box(nd, t->count, itemsize, dst, j->strides, j->a->meta.fill_value);
        return ZGPU_OK;
    }
    atomic_fetch_add(&j->stored, enc_n);

    t0 = zg_now();
    const int direct = t->covers_chunk && chunk_is_contiguous(j);
    uint8_t *target = dst;
    if (!direct) {
        st = zg_buf_reserve(&ts->chunk, (size_t)zg_repr_nbytes(&j->chain->repr));
        if (st != ZGPU_OK) return st;
        target = ts->chunk.data;
    }
    st = zg_chain_decode(j->chain, enc, enc_n, target, &ts->codec);
    if (st != ZGPU_OK) return chunk_failed(j, t, st);
    if (!direct) {
        const uint8_t *src = target;
        for (int d = 0; d < nd; d++) src += (int64_t)t->in_chunk[d] * j->chunk_strides[d];
        zg_copy_box(nd, t->count, itemsize, dst, j->strides, src, j->chunk_strides);
    }
    atomic_fetch_add(&j->decode_ns, ns_since(t0));
    return ZGPU_OK;
}

/* A remote read's window: whole objects from o0 on, up to about window_bytes (zgpu_remote_options) of decoded
 * chunks, at least one object: a window's stored bytes are fetched (many requests in flight) while the window
 * before decodes, and the fetched bytes in memory stay bounded. */
static size_t window_end(const read_job *j, size_t o0) {
    const zg_plan *plan = j->plan;
    const uint64_t per_task = zg_repr_nbytes(&j->chain->repr);
    const uint64_t WINDOW_BYTES = zg_remote_window_bytes(j->a->ctx);
    uint64_t bytes = 0;
    size_t o = o0;
    while (o < plan->n_objects && (o == o0 || bytes + plan->objects[o].n_tasks * per_task <= WINDOW_BYTES))
        bytes += plan->objects[o++].n_tasks * per_task;
    return o;
}

/* Remote stores: the read in windows; the pool decodes window k while this thread fetches window k + 1 (its
 * requests in flight together), and a window's bytes are freed once it is decoded. */
static zgpu_status read_remote(read_job *j, zg_plan *plan, double *fetch_s) {
    zgpu_array *a = j->a;
    size_t w0 = 0, w1 = window_end(j, 0);
    double t0 = zg_now();
    zgpu_status st = zg_plan_fetch_objects(a, plan, w0, w1);
    *fetch_s += zg_now() - t0;
    while (st == ZGPU_OK && w0 < plan->n_objects) {
        const zg_plan_object *first = &plan->objects[w0], *last = &plan->objects[w1 - 1];
        j->task_base = first->first_task;
        zg_pool_job *job = NULL;
        st = zg_pool_start(a->ctx->pool, last->first_task + last->n_tasks - first->first_task, read_task, j, &job);
        size_t w2 = w1 < plan->n_objects ? window_end(j, w1) : w1;
        zgpu_status fs = ZGPU_OK;
        if (st == ZGPU_OK && w1 < w2) {
            t0 = zg_now();
            fs = zg_plan_fetch_objects(a, plan, w1, w2);
            *fetch_s += zg_now() - t0;
        }
        char saved[ZG_ERRMSG_MAX];
        if (fs != ZGPU_OK) zg_error_save(saved);
        if (job) st = zg_pool_finish(a->ctx->pool, job);
        if (st == ZGPU_OK && fs != ZGPU_OK) {
            zg_error_restore(saved);
            st = fs;
        }
        zg_plan_release_objects(plan, w0, w1);
        w0 = w1;
        w1 = w2;
    }
    return st;
}

ZGPU_API zgpu_status zgpu_array_read(zgpu_array *a, const uint64_t *start, const uint64_t *count, void *out,
                                     const int64_t *out_strides) {
    if (!a || !out || (a->meta.ndim > 0 && (!start || !count)))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_read: array, start, count and out are required");
    zgpu_read_stats stats;
    memset(&stats, 0, sizeof stats);
    double t_begin = zg_now();
    read_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.out = out;
    int64_t strides[ZGPU_MAX_DIMS];
    ZG_FORWARD(zg_resolve_strides(a, count, out_strides, strides));
    j.strides = strides;
    zg_plan plan;
    ZG_FORWARD(zg_plan_build(a, start, count, &plan));
    zgpu_status st = ZGPU_OK;
    const int remote = a->store->vt->remote;
    /* shard indexes (a remote store fetches the tasks' bytes window by window, read_remote) */
    if (remote) st = zg_plan_resolve_remote(a, &plan, ZG_FETCH_NONE);
    else if (a->shard) st = zg_plan_resolve(a, &plan);
    stats.plan_s = zg_now() - t_begin;
    j.plan = &plan;
    j.chain = a->shard ? zg_sharding_inner_chain(a->shard) : a->chain;
    zg_c_strides(plan.ndim, plan.chunk, a->meta.dtype.size, j.chunk_strides);
    if (st == ZGPU_OK && remote) st = read_remote(&j, &plan, &stats.io_s);
    else if (st == ZGPU_OK) st = zg_pool_run(a->ctx->pool, plan.n_tasks, read_task, &j);
    if (st == ZGPU_OK) {
        int threads = zg_pool_size(a->ctx->pool);
        stats.total_s = zg_now() - t_begin;
        stats.io_s += (double)atomic_load(&j.io_ns) * 1e-9 / threads;
        stats.decode_s = (double)atomic_load(&j.decode_ns) * 1e-9 / threads;
        stats.stored_bytes = atomic_load(&j.stored);
        stats.decoded_bytes = a->meta.dtype.size;
        for (int d = 0; d < plan.ndim; d++) stats.decoded_bytes *= count[d];
        stats.chunks = (int)plan.n_tasks;
        stats.waves = 1;
        stats.cpu_decoded = (int)plan.n_tasks;
        zg_array_set_stats(a, &stats);
    }
    zg_plan_free(&plan);
    return st;
}
