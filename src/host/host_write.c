/* Host executor for writes: one pool task per stored object (chunk or whole shard). Objects only partly
 * covered are read and merged first; objects equal to the fill value everywhere are deleted. */
#include <string.h>

#include "host/scratch.h"
#include "plan/plan.h"
#include "common/status.h"

typedef struct write_job {
    zgpu_array *a;
    const zg_plan *plan;
    const uint8_t *in;
    const int64_t *strides;
    int64_t chunk_strides[ZGPU_MAX_DIMS];
    size_t chunk_nbytes;
} write_job;

static int all_equal_to(const uint8_t *buf, size_t nbytes, const uint8_t *value, size_t itemsize) {
    if (nbytes < itemsize) return 1;
    if (memcmp(buf, value, itemsize) != 0) return 0;
    return nbytes == itemsize || memcmp(buf, buf + itemsize, nbytes - itemsize) == 0;
}

static zgpu_status write_object(void *arg, size_t i) {
    write_job *j = arg;
    zgpu_array *a = j->a;
    const zg_chunk_task *t = &j->plan->tasks[i];
    const zg_plan_object *ob = &j->plan->objects[t->object];
    const int nd = j->plan->ndim;
    const size_t itemsize = a->meta.dtype.size;
    zg_thread_scratch *ts = zg_thread_scratch_get();
    if (!ts) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for thread scratch");
    ZG_FORWARD(zg_buf_reserve(&ts->chunk, j->chunk_nbytes));
    uint8_t *chunk = ts->chunk.data;

    /* Does the write cover every in-bounds element of this object? */
    int covers = 1;
    for (int d = 0; d < nd; d++) {
        uint64_t c0 = t->coords[d] * j->plan->chunk[d];
        uint64_t inb = a->meta.shape[d] - c0 < j->plan->chunk[d] ? a->meta.shape[d] - c0 : j->plan->chunk[d];
        if (t->in_chunk[d] != 0 || t->count[d] != inb) covers = 0;
    }
    zg_store *s = a->store;
    int found = 0;
    /* held from the read of the old value to the replacement, full writes included, so that two writers of
     * one object (processes or handles) never merge into a value the other is replacing (docs/concurrency.md) */
    zg_store_lock lk;
    zgpu_status st = s->vt->lock(s, ob->key, &lk);
    if (st != ZGPU_OK) {
        zg_error_prefix(ZG_ARRAY_WHERE_FMT ", chunk '%s': ", a->path, ob->key);
        return st;
    }
    if (!covers) {
        ts->io.size = 0;
        st = s->vt->get(s, ob->key, &ts->io, &found);
        if (st == ZGPU_OK && found) st = zg_chain_decode(a->chain, ts->io.data, ts->io.size, chunk, &ts->codec);
    }
    if (st != ZGPU_OK) {
        s->vt->unlock(s, &lk);
        zg_error_prefix(ZG_ARRAY_WHERE_FMT ", chunk '%s' (reading it to merge a partial write): ", a->path, ob->key);
        return st;
    }
    if (!found) {
        uint64_t one[1] = {j->chunk_nbytes / itemsize};
        int64_t unit[1] = {(int64_t)itemsize};
        zg_fill_box(1, one, itemsize, chunk, unit, a->meta.fill_value);
    }
    uint8_t *dst = chunk;
    const uint8_t *src = j->in;
    for (int d = 0; d < nd; d++) {
        dst += (int64_t)t->in_chunk[d] * j->chunk_strides[d];
        src += (int64_t)t->in_box[d] * j->strides[d];
    }
    zg_copy_box(nd, t->count, itemsize, dst, j->chunk_strides, src, j->strides);

    if (all_equal_to(chunk, j->chunk_nbytes, a->meta.fill_value, itemsize)) {
        st = s->vt->erase(s, ob->key);
    } else {
        ts->io.size = 0;
        st = zg_chain_encode(a->chain, chunk, &ts->io, &ts->codec);
        if (st == ZGPU_OK) st = s->vt->set(s, ob->key, ts->io.data, ts->io.size);
    }
    s->vt->unlock(s, &lk);
    if (st != ZGPU_OK) zg_error_prefix(ZG_ARRAY_WHERE_FMT ", chunk '%s': ", a->path, ob->key);
    return st;
}

ZGPU_API zgpu_status zgpu_array_write(zgpu_array *a, const uint64_t *start, const uint64_t *count, const void *in,
                                      const int64_t *in_strides) {
    if (!a || !in || (a->meta.ndim > 0 && (!start || !count)))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_write: array, start, count and in are required");
    int64_t strides[ZGPU_MAX_DIMS];
    ZG_FORWARD(zg_resolve_strides(a, count, in_strides, strides));
    zg_plan plan;
    ZG_FORWARD(zg_plan_build_units(a, start, count, 1, &plan));
    write_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.plan = &plan;
    j.in = in;
    j.strides = strides;
    zg_c_strides(plan.ndim, plan.chunk, a->meta.dtype.size, j.chunk_strides);
    j.chunk_nbytes = (size_t)zg_repr_nbytes(&a->chain->repr);
    zgpu_status st = zg_pool_run(a->ctx->pool, plan.n_tasks, write_object, &j);
    zg_plan_free(&plan);
    return st;
}
