/* The device chunk cache (zgpu_context_options.device_cache_bytes): decoded chunks kept in device memory, so that
 * a device read of a chunk decoded before is one scatter from the cache, with no read, copy or decode.
 *
 * It is an external cache (cache/chunk_cache.h: the host cache's names, generations, LRU, invalidation by every
 * zgpu write, and stats), one per device state, whose entries are device allocations:
 *  - filled by a device read that decodes the chunk on the GPU: the chunk decodes into scratch (never straight
 *    into the output) and one device-to-device copy after its last decode stage moves it into a new allocation;
 *    the entry goes into the cache only once its wave's checks passed (dev_cache_commit), so a corrupt chunk is
 *    never kept;
 *  - laid out as the device route decodes it (dev_pipe.src_strides: transposes folded in), which only that route
 *    reads;
 *  - given back by the cache from whichever thread drops them (a writer's invalidation, an eviction by another
 *    read): into the state's `dead` list, which the next read frees in stream order (cudaFreeAsync on the state's
 *    stream under its lock: no device-wide synchronisation). Nothing can still use such memory: a read holds its
 *    hits until its stream is synchronised, and entries are put only after their wave's `done` event. */
#include "cache/chunk_cache.h"
#include "device/job.h"

static void give_back(void *ctx, void *data, size_t n) {
    (void)n;
    dev_cache_drop(ctx, data);
}

zgpu_status dev_cache_init(struct zg_device_state *st, size_t capacity) {
    pthread_mutex_init(&st->dead_lock, NULL);
    if (!capacity) return ZGPU_OK;
    st->dcache = zg_chunk_cache_create_external(capacity, give_back, st);
    ZG_RETURN_IF(!st->dcache, ZGPU_ERR_NO_MEMORY, "out of host memory for the device chunk cache");
    return ZGPU_OK;
}

void dev_cache_drop(struct zg_device_state *st, void *p) {
    if (!p) return;
    pthread_mutex_lock(&st->dead_lock);
    if (st->n_dead == st->cap_dead) {
        size_t cap = st->cap_dead ? 2 * st->cap_dead : 64;
        void **d = realloc(st->dead, cap * sizeof *d);
        if (d) {
            st->dead = d;
            st->cap_dead = cap;
        }
    }
    if (st->n_dead < st->cap_dead) st->dead[st->n_dead++] = p;
    /* (out of host memory for the list: the allocation leaks rather than being freed under a kernel using it) */
    pthread_mutex_unlock(&st->dead_lock);
}

void dev_cache_reap(struct zg_device_state *st) {
    pthread_mutex_lock(&st->dead_lock);
    for (size_t i = 0; i < st->n_dead; i++) cudaFreeAsync(st->dead[i], st->stream);
    st->n_dead = 0;
    pthread_mutex_unlock(&st->dead_lock);
}

void dev_cache_free(struct zg_device_state *st) {
    zg_chunk_cache_free(st->dcache); /* (every entry's memory into `dead`) */
    st->dcache = NULL;
    dev_cache_reap(st);
    free(st->dead);
    st->dead = NULL;
    st->cap_dead = 0;
    pthread_mutex_destroy(&st->dead_lock);
}

void *dev_cache_alloc(size_t n, cudaStream_t s) {
    void *p = NULL;
    if (cudaMallocAsync(&p, n ? n : 1, s) != cudaSuccess) {
        cudaGetLastError(); /* (out of device memory: the chunk is just not cached) */
        return NULL;
    }
    return p;
}

void dev_cache_commit(job *j, const wave_check *wc) {
    for (size_t i = wc->first; i < wc->first + wc->count && i < j->n_t; i++) {
        dtask *t = &j->t[i];
        if (!t->dentry) continue;
        const zg_chunk_task *pt = &j->plan->tasks[t->plan_i];
        zg_chunk_cache_put_external(j->dcache, j->a->store->id, j->plan->objects[pt->object].key, pt->inner, t->dgen,
                                    t->dentry, (size_t)j->pp.chunk_nbytes);
        t->dentry = NULL; /* (the cache's now, kept or given back) */
    }
}
