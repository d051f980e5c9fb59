/* Host thread pool: runs `fn(arg, i)` for i in [0, n) across the pool's threads and the caller. */
#ifndef ZG_POOL_H
#define ZG_POOL_H
#include <stddef.h>
#include "zgpu.h"

typedef struct zg_pool zg_pool;

/** n_threads total workers including the calling thread (1 = run inline). In a child forked afterwards the
 *  pool's first use there starts n_threads - 1 new workers of the child's own (the parent's stay in the parent;
 *  their lock and queue are never touched in the child), and zg_pool_free leaves the parent's part alone. */
zgpu_status zg_pool_create(int n_threads, zg_pool **out);
void zg_pool_free(zg_pool *p);
/* How long a caller that has run out of its job's indices polls for the workers still on it before it sleeps
 * until they are done (a wake-up takes 20-100 us on a VM; H200 VM, 16 threads, crops of the sharded label volume
 * one at a time: 1,270 -> 1,420 a second; the caller is idle then anyway). */
#define ZG_POOL_JOIN_SPIN_US 100
/* How long an idle worker polls for the next job before it sleeps, unless set (zgpu_tuning.pool_spin_us). */
#define ZG_POOL_SPIN_US_DEFAULT 100
/** Sets that time (0: the workers sleep at once); takes effect at their next wait. */
void zg_pool_set_spin(zg_pool *p, int spin_us);
/** Workers + the caller as this process has them (a forked child's workers are started by this call if not yet;
 *  fewer than configured only if threads could not be had): 1 means jobs run on the calling thread alone. */
int zg_pool_size(const zg_pool *p);
/** Runs fn for every index; returns when all are done. Indices are handed out dynamically (atomic counter).
 *  Several threads may call zg_pool_run on one pool at once (jobs queue up). fn returns a status; the
 *  first failure stops handing out further indices, its message is restored on the calling thread and
 *  its status returned. Per-thread scratch: use thread-local storage (see zg_thread_scratch in host/). */
typedef zgpu_status (*zg_pool_fn)(void *arg, size_t index);
zgpu_status zg_pool_run(zg_pool *p, size_t n, zg_pool_fn fn, void *arg);

/** zg_pool_run in two halves, so that the caller can do something else while the pool's threads work:
 *  zg_pool_start queues the job and returns at once (*out NULL for n == 0); zg_pool_finish makes the caller a
 *  worker of it too, waits until every index is done, frees the job and returns as zg_pool_run would. Every
 *  started job must be finished. A job queued behind a started one gets the pool's threads only once the
 *  started one has no indices left (its caller still works on it). Without worker threads the whole job runs
 *  in zg_pool_finish. */
typedef struct zg_job zg_pool_job;
zgpu_status zg_pool_start(zg_pool *p, size_t n, zg_pool_fn fn, void *arg, zg_pool_job **out);
zgpu_status zg_pool_finish(zg_pool *p, zg_pool_job *job);

#endif
