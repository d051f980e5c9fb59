/* Host executor for writes: one pool task per stored object (chunk or whole shard). Objects only partly
 * covered are read and merged first; objects equal to the fill value everywhere are deleted. */
#include <stdlib.h>
#include <string.h>

#include "cache/chunk_cache.h"
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

/* Whether the write covers every in-bounds element of task t's object (no old value to merge). */
static int covers_object(const write_job *j, const zg_chunk_task *t) {
    return zg_plan_covers_in_array(j->plan, j->a->meta.shape, t);
}

/* Task t's object: its old value (old/old_n, when found) decoded, the written box copied in, and the result
 * encoded into enc — or *erase = 1 when it is the fill value everywhere (deleted instead). enc may hold the old
 * value: it is decoded before enc is written. */
static zgpu_status build_object(const write_job *j, const zg_chunk_task *t, const uint8_t *old, size_t old_n,
                                int found, zg_thread_scratch *ts, zg_buf *enc, int *erase) {
    zgpu_array *a = j->a;
    const int nd = j->plan->ndim;
    const size_t itemsize = a->meta.dtype.size;
    ZG_FORWARD(zg_buf_reserve(&ts->chunk, j->chunk_nbytes));
    uint8_t *chunk = ts->chunk.data;
    if (found) {
        zgpu_status st = zg_chain_decode(a->chain, old, old_n, chunk, &ts->codec);
        if (st != ZGPU_OK) {
            zg_error_prefix("(reading it to merge a partial write) ");
            return st;
        }
    } else {
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
    *erase = all_equal_to(chunk, j->chunk_nbytes, a->meta.fill_value, itemsize);
    if (*erase) return ZGPU_OK;
    enc->size = 0;
    return zg_chain_encode(a->chain, chunk, enc, &ts->codec);
}

static zgpu_status write_object(void *arg, size_t i) {
    write_job *j = arg;
    zgpu_array *a = j->a;
    const zg_chunk_task *t = &j->plan->tasks[i];
    const zg_plan_object *ob = &j->plan->objects[t->object];
    zg_thread_scratch *ts = zg_thread_scratch_get();
    if (!ts) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for thread scratch");
    zg_store *s = a->store;
    int found = 0, erase = 0;
    /* held from the read of the old value to the replacement, full writes included, so that two writers of
     * one object (processes or handles) never merge into a value the other is replacing (docs/concurrency.md) */
    zg_store_lock lk;
    zgpu_status st = s->vt->lock(s, ob->key, &lk);
    if (st == ZGPU_OK && !covers_object(j, t)) {
        ts->io.size = 0;
        st = s->vt->get(s, ob->key, &ts->io, &found);
    }
    if (st == ZGPU_OK) st = build_object(j, t, ts->io.data, ts->io.size, found, ts, &ts->io, &erase);
    if (st == ZGPU_OK) {
        st = erase ? s->vt->erase(s, ob->key) : s->vt->set(s, ob->key, ts->io.data, ts->io.size);
        /* after the new value is in place (and even if the write failed part way): a reader that fetched the
         * old bytes had its cache lookup before this, and its put is refused (cache/chunk_cache.h) */
        zg_chunk_cache_invalidate_object_all(s->id, ob->key);
    }
    s->vt->unlock(s, &lk);
    if (st != ZGPU_OK) zg_error_prefix(ZG_ARRAY_WHERE_FMT ", chunk '%s': ", a->path, ob->key);
    return st;
}

/* ---- remote stores: windows of objects, each with one batch of reads and one of writes ---- */

typedef struct remote_window {
    write_job *j;
    size_t first;       /* task index of the window's first object (one task per object in a write plan) */
    zg_buf *bufs;       /* per object: its old value, then its encoded new one */
    int *found, *erase;
} remote_window;

static zgpu_status build_in_window(void *arg, size_t i) {
    remote_window *w = arg;
    const zg_chunk_task *t = &w->j->plan->tasks[w->first + i];
    zg_thread_scratch *ts = zg_thread_scratch_get();
    if (!ts) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for thread scratch");
    zgpu_status st = build_object(w->j, t, w->bufs[i].data, w->bufs[i].size, w->found[i], ts, &w->bufs[i],
                                  &w->erase[i]);
    if (st != ZGPU_OK)
        zg_error_prefix(ZG_ARRAY_WHERE_FMT ", chunk '%s': ", w->j->a->path, w->j->plan->objects[t->object].key);
    return st;
}

/* A window of objects at [first, first + n): their locks, the old values of those written in part (one batch),
 * merge and encode on the pool, then every PUT and DELETE in one batch. */
static zgpu_status write_window(write_job *j, size_t first, size_t n) {
    zgpu_array *a = j->a;
    zg_store *s = a->store;
    remote_window w = {j, first, calloc(n, sizeof(zg_buf)), calloc(n, sizeof(int)), calloc(n, sizeof(int))};
    const char **keys = calloc(n, sizeof *keys);
    zg_store_get *g = calloc(n, sizeof *g);
    zg_store_put *p = calloc(n, sizeof *p);
    if (!w.bufs || !w.found || !w.erase || !keys || !g || !p) {
        free(w.bufs); free(w.found); free(w.erase); free(keys); free(g); free(p);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for a batch of %zu chunks", n);
    }
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        const zg_chunk_task *t = &j->plan->tasks[first + i];
        keys[i] = j->plan->objects[t->object].key;
        if (!covers_object(j, t)) g[ng++] = (zg_store_get){.key = keys[i], .length = ZG_STORE_WHOLE, .buf = &w.bufs[i]};
    }
    zg_store_lock_set held;
    zgpu_status st = s->vt->lock_many(s, keys, n, &held);
    if (st == ZGPU_OK) st = zg_store_get_batch(s, g, ng);
    if (st != ZGPU_OK) zg_error_prefix(ZG_ARRAY_WHERE_FMT " (reading chunks to merge a partial write): ", a->path);
    for (size_t k = 0, i = 0; st == ZGPU_OK && k < ng; k++) {
        while (&w.bufs[i] != g[k].buf) i++;
        w.found[i] = g[k].found;
    }
    if (st == ZGPU_OK) st = zg_pool_run(a->ctx->pool, n, build_in_window, &w);
    for (size_t i = 0; i < n; i++)
        p[i] = (zg_store_put){.key = keys[i], .data = w.bufs[i].data, .n = w.bufs[i].size, .erase = w.erase[i]};
    if (st == ZGPU_OK) {
        st = s->vt->set_many(s, p, n);
        /* every object of the batch, after its PUT or DELETE: some may have landed even if the batch failed */
        for (size_t i = 0; i < n; i++) zg_chunk_cache_invalidate_object_all(s->id, keys[i]);
    }
    if (st != ZGPU_OK && !strstr(zg_error_message(), a->path)) zg_error_prefix(ZG_ARRAY_WHERE_FMT ": ", a->path);
    s->vt->unlock_many(s, &held);
    for (size_t i = 0; i < n; i++) zg_buf_free(&w.bufs[i]);
    free(w.bufs); free(w.found); free(w.erase); free(keys); free(g); free(p);
    return st;
}

/* Objects per window: as many as window_bytes (zgpu_remote_options) of decoded chunks (about what the window's
 * encoded values cost at most), at least one, at most 4096. */
static zgpu_status write_remote(write_job *j) {
    size_t per = (size_t)(zg_remote_window_bytes(j->a->ctx) / (j->chunk_nbytes ? j->chunk_nbytes : 1));
    if (per < 1) per = 1;
    if (per > 4096) per = 4096;
    for (size_t first = 0; first < j->plan->n_tasks; first += per) {
        size_t n = j->plan->n_tasks - first < per ? j->plan->n_tasks - first : per;
        ZG_FORWARD(write_window(j, first, n));
    }
    return ZGPU_OK;
}

ZGPU_API zgpu_status zgpu_array_write(zgpu_array *a, const uint64_t *start, const uint64_t *count, const void *in,
                                      const int64_t *in_strides) {
    if (!a || !in || (a->meta.ndim > 0 && (!start || !count)))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_write: array, start, count and in are required");
    ZG_FORWARD(zg_array_check_writable(a, "zgpu_array_write"));
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
    /* a remote store: batches of requests, not one blocking request per pool task */
    zgpu_status st = a->store->vt->set_many ? write_remote(&j) : zg_pool_run(a->ctx->pool, plan.n_tasks, write_object, &j);
    zg_plan_free(&plan);
    return st;
}
