/* A persistent thread pool with a queue of index-range jobs. The submitting thread works on its own job
 * too, so a pool of N threads decodes with N workers plus the caller, and nested or concurrent callers
 * never deadlock waiting for a busy pool.
 *
 * fork(): the threads, the lock, the condition variables and the queue live in a `core` that belongs to one
 * process (its pid). After fork() the child has none of the parent's workers, and the core's lock may have been
 * held by one of them at the fork (they take it each time they wake), so a pool used in a forked child (a
 * DataLoader or multiprocessing worker reading through a context its parent made) never touches the inherited
 * core: its first use there makes a new one (fresh lock and conditions, the configured number of threads, an
 * empty queue: the parent's jobs are the parent's threads' business) and leaves the old one as it is, leaked on
 * purpose (see zg_pool_free). The check is a pid comparison at every use, so a child of a child does the same. */
#include "host/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "api/array.h"
#include "common/status.h"

typedef struct core core;

typedef struct zg_job {
    zg_pool_fn fn;
    void *arg;
    size_t n;
    atomic_size_t next;
    atomic_int failed;
    atomic_int active;          /* threads inside run_job (changed under the core's lock; read without it by a
                                 * caller spinning in join_job) */
    zgpu_status status;         /* first failure */
    char message[ZG_ERRMSG_MAX];
    struct zg_job *link;
    core *queued;               /* the core whose queue holds it (zg_pool_start with worker threads), or NULL */
} zg_job;

/* One process's half of a pool: its threads and everything they synchronise on. */
struct core {
    pid_t pid;                  /* the process whose threads these are */
    pthread_t *threads;
    int n_threads;              /* workers started (the caller is not one of them) */
    pthread_mutex_t lock;
    pthread_cond_t work;        /* a job was queued, or stop */
    pthread_cond_t idle;        /* a job's active count dropped */
    zg_job *jobs;               /* queue (singly linked, newest last) */
    int stop;
    atomic_int queued_count;    /* jobs ever queued, wrapping (changed under the lock): what a polling worker watches */
    int sleepers;               /* workers waiting on `work` (under the lock): queue_job wakes only those */
    const atomic_llong *spin_ns; /* the pool's polling time (the pool outlives its cores' threads: zg_pool_free
                                  * joins them first) */
    atomic_int live;            /* workers inside worker_main (tests: zg_test_pool_info) */
    atomic_llong worker_items;  /* indices run by workers rather than by callers (tests) */
};

struct zg_pool {
    int size;                   /* configured: workers + the caller */
    atomic_llong spin_ns;       /* how long an idle worker polls for the next job before it sleeps (zg_pool_set_spin) */
    _Atomic(core *) core;       /* this process's core, or an ancestor's until the first use after a fork */
};

static int job_open(zg_job *j) {
    return atomic_load(&j->next) < j->n && !atomic_load(&j->failed);
}

/* Called without the lock; `active` was incremented under it. */
static void run_job(core *c, zg_job *j, int worker) {
    long long done = 0;
    for (;;) {
        if (atomic_load(&j->failed)) break;
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n) break;
        zgpu_status st = j->fn(j->arg, i);
        done++;
        if (st != ZGPU_OK) {
            pthread_mutex_lock(&c->lock);
            if (!atomic_load(&j->failed)) {
                j->status = st;
                zg_error_save(j->message);
                atomic_store(&j->failed, 1);
            }
            pthread_mutex_unlock(&c->lock);
            break;
        }
    }
    if (worker && done) atomic_fetch_add(&c->worker_items, done);
    pthread_mutex_lock(&c->lock);
    if (atomic_fetch_sub(&j->active, 1) == 1) pthread_cond_broadcast(&c->idle);
    pthread_mutex_unlock(&c->lock);
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Polls *word until it equals `value` (until_equal) or differs from it (!until_equal), for at most spin_ns;
 * 1 if it got there. Waking a thread asleep on a condition takes 20-100 us on a VM (the idle vCPU halts, and its
 * wake-up goes through the host), as long as a small read's whole decode: a thread that polls a little first
 * sees the next job, or its job's end, at once. Every 16th poll yields the core, so that a thread of another
 * job or process waiting for it runs (more threads than cores: DataLoader workers with a pool each). */
static int spin_for(const atomic_int *word, int value, int until_equal, long long spin_ns) {
    if (spin_ns <= 0) return 0;
    const double end = zg_now() + (double)spin_ns * 1e-9;
    for (unsigned k = 1;; k++) {
        if ((atomic_load_explicit(word, memory_order_acquire) == value) == until_equal) return 1;
        if (k & 15) {
            cpu_relax();
        } else {
            if (zg_now() >= end) return 0;
            sched_yield();
        }
    }
}

static void *worker_main(void *arg) {
    core *c = arg;
    atomic_fetch_add(&c->live, 1);
    pthread_mutex_lock(&c->lock);
    for (;;) {
        zg_job *j = c->jobs;
        while (j && !job_open(j)) j = j->link;
        if (j) {
            atomic_fetch_add(&j->active, 1);
            pthread_mutex_unlock(&c->lock);
            run_job(c, j, 1);
            pthread_mutex_lock(&c->lock);
            continue;
        }
        if (c->stop) break;
        /* poll for the next job a while before sleeping; a job queued meanwhile changes queued_count (under the
         * lock), and one queued once this thread counts as a sleeper wakes it */
        const int seen = atomic_load(&c->queued_count);
        const long long spin = atomic_load(c->spin_ns);
        if (spin > 0) {
            pthread_mutex_unlock(&c->lock);
            spin_for(&c->queued_count, seen, 0, spin);
            pthread_mutex_lock(&c->lock);
            if (atomic_load(&c->queued_count) != seen || c->stop) continue;
        }
        c->sleepers++;
        pthread_cond_wait(&c->work, &c->lock);
        c->sleepers--;
    }
    pthread_mutex_unlock(&c->lock);
    atomic_fetch_sub(&c->live, 1);
    return NULL;
}

/* Stops and joins the core's workers and frees it: only for a core of this process. */
static void core_free(core *c) {
    if (!c) return;
    pthread_mutex_lock(&c->lock);
    c->stop = 1;
    atomic_fetch_add(&c->queued_count, 1); /* (a polling worker sees it at once) */
    pthread_cond_broadcast(&c->work);
    pthread_mutex_unlock(&c->lock);
    for (int i = 0; i < c->n_threads; i++) pthread_join(c->threads[i], NULL);
    free(c->threads);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->work);
    pthread_cond_destroy(&c->idle);
    free(c);
}

/* A core of this process with up to `workers` threads: NULL when out of memory; *started tells how many threads
 * did start (the rest could not be had). */
static core *core_new(int workers, const atomic_llong *spin_ns, int *started) {
    *started = 0;
    core *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->pid = getpid();
    c->spin_ns = spin_ns;
    atomic_init(&c->live, 0);
    atomic_init(&c->worker_items, 0);
    atomic_init(&c->queued_count, 0);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->work, NULL);
    pthread_cond_init(&c->idle, NULL);
    if (workers > 0) {
        c->threads = calloc((size_t)workers, sizeof *c->threads);
        if (!c->threads) {
            core_free(c);
            return NULL;
        }
        while (c->n_threads < workers && pthread_create(&c->threads[c->n_threads], NULL, worker_main, c) == 0)
            c->n_threads++;
    }
    *started = c->n_threads;
    return c;
}

/* This process's core, made now if the pool's is an ancestor's (first use after a fork); NULL when none can be
 * had (out of memory): the caller then runs the job on its own thread. Threads of one child racing here each make
 * one; the first to install its core wins and the others free theirs (never used, so safe to stop). */
static core *pool_core(zg_pool *p) {
    const pid_t me = getpid();
    core *c = atomic_load(&p->core);
    while (!c || c->pid != me) {
        int started;
        core *n = core_new(p->size - 1, &p->spin_ns, &started);
        if (!n) return NULL;
        /* the ancestor's core is left behind untouched (zg_pool_free says why) */
        if (atomic_compare_exchange_strong(&p->core, &c, n)) return n;
        core_free(n); /* another thread of this process installed one first: c is now that one */
    }
    return c;
}

zgpu_status zg_pool_create(int n_threads, zg_pool **out) {
    *out = NULL;
    if (n_threads < 1) n_threads = 1;
    zg_pool *p = calloc(1, sizeof *p);
    if (!p) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory creating the thread pool");
    p->size = n_threads;
    atomic_init(&p->spin_ns, (long long)ZG_POOL_SPIN_US_DEFAULT * 1000);
    int started;
    core *c = core_new(n_threads - 1, &p->spin_ns, &started);
    if (!c) {
        free(p);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory creating the thread pool");
    }
    if (started < n_threads - 1) {
        core_free(c);
        free(p);
        return zg_error(ZGPU_ERR_INTERNAL, "cannot start thread %d of the pool", started + 1);
    }
    atomic_init(&p->core, c);
    *out = p;
    return ZGPU_OK;
}

void zg_pool_free(zg_pool *p) {
    if (!p) return;
    core *c = atomic_load(&p->core);
    /* A core made by another process (this is a forked child that never used the pool, e.g. a DataLoader worker
     * changing zgpu.config) is leaked, never stopped or destroyed: its workers exist only in that process, its
     * lock may be held forever by one of them, and glibc's pthread_cond_destroy waits for the condition's
     * waiters (the parent's idle workers) to leave, which in the child they never do: destroying it here hung
     * forever (issue 20). What leaks is the core's struct and thread array, once per pool and fork. */
    if (c && c->pid == getpid()) core_free(c);
    free(p);
}

void zg_pool_set_spin(zg_pool *p, int spin_us) {
    if (p) atomic_store(&p->spin_ns, spin_us > 0 ? (long long)spin_us * 1000 : 0);
}

int zg_pool_size(const zg_pool *p) {
    if (!p || p->size <= 1) return 1;
    core *c = pool_core((zg_pool *)p); /* the struct is the caller's, not const: only the view of it is */
    return c ? c->n_threads + 1 : 1;
}

static void job_init(zg_job *j, size_t n, zg_pool_fn fn, void *arg) {
    memset(j, 0, sizeof *j);
    j->fn = fn;
    j->arg = arg;
    j->n = n;
    atomic_init(&j->next, 0);
    atomic_init(&j->failed, 0);
    atomic_init(&j->active, 0);
    j->status = ZGPU_OK;
}

/* Appends j to c's queue and wakes the workers; `caller`: the calling thread counts as one of its workers. */
static void queue_job(core *c, zg_job *j, int caller) {
    pthread_mutex_lock(&c->lock);
    zg_job **tail = &c->jobs;
    while (*tail) tail = &(*tail)->link;
    *tail = j;
    j->queued = c;
    atomic_store(&j->active, caller);
    atomic_fetch_add(&c->queued_count, 1); /* (the polling workers see it) */
    if (c->sleepers) pthread_cond_broadcast(&c->work);
    pthread_mutex_unlock(&c->lock);
}

/* The caller (counted in j->active) works on the queued job j until it has no indices left, waits for the
 * other workers, takes it off the queue and returns its status (the first failure's message restored here). */
static zgpu_status join_job(core *c, zg_job *j, long long spin_ns) {
    run_job(c, j, 0);
    spin_for(&j->active, 0, 1, spin_ns); /* (the last workers' ends without a wake-up: the caller has nothing else to do) */
    pthread_mutex_lock(&c->lock);
    while (atomic_load(&j->active) > 0) pthread_cond_wait(&c->idle, &c->lock);
    for (zg_job **q = &c->jobs; *q; q = &(*q)->link)
        if (*q == j) { *q = j->link; break; }
    pthread_mutex_unlock(&c->lock);
    if (atomic_load(&j->failed)) {
        zg_error_restore(j->message);
        return j->status;
    }
    return ZGPU_OK;
}

/* The core a job of n indices is queued on, or NULL to run it on the calling thread. */
static core *core_for(zg_pool *p, size_t n) {
    if (!p || p->size <= 1 || n <= 1) return NULL;
    core *c = pool_core(p);
    return c && c->n_threads > 0 ? c : NULL;
}

zgpu_status zg_pool_run(zg_pool *p, size_t n, zg_pool_fn fn, void *arg) {
    if (n == 0) return ZGPU_OK;
    core *c = core_for(p, n);
    if (!c) {
        for (size_t i = 0; i < n; i++) ZG_FORWARD(fn(arg, i));
        return ZGPU_OK;
    }
    zg_job j;
    job_init(&j, n, fn, arg);
    queue_job(c, &j, 1);
    return join_job(c, &j, (long long)ZG_POOL_JOIN_SPIN_US * 1000);
}

/* The queue's part of zg_pool_run, for a job on the heap. */
zgpu_status zg_pool_start(zg_pool *p, size_t n, zg_pool_fn fn, void *arg, zg_pool_job **out) {
    *out = NULL;
    if (n == 0) return ZGPU_OK;
    zg_job *j = malloc(sizeof *j);
    if (!j) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory queueing pool work");
    job_init(j, n, fn, arg);
    core *c = p && p->size > 1 ? pool_core(p) : NULL; /* queued even for n == 1: the caller does other work */
    if (c && c->n_threads > 0) queue_job(c, j, 0);
    *out = j;
    return ZGPU_OK;
}

zgpu_status zg_pool_finish(zg_pool *p, zg_pool_job *j) {
    (void)p; /* the job knows its core */
    if (!j) return ZGPU_OK;
    zgpu_status s = ZGPU_OK;
    core *c = j->queued;
    if (!c) {
        for (size_t i = 0; i < j->n && s == ZGPU_OK; i++) s = j->fn(j->arg, i);
        free(j);
        return s;
    }
    if (c->pid != getpid()) { /* started before a fork (in a callback of the forking thread): its indices were
                               * taken by the parent's workers, which are not here, and its core's lock may be
                               * held: nothing here can finish it */
        free(j);
        return zg_error(ZGPU_ERR_INTERNAL, "a thread-pool job started before fork() cannot finish in the child");
    }
    pthread_mutex_lock(&c->lock);
    atomic_fetch_add(&j->active, 1); /* the caller */
    pthread_mutex_unlock(&c->lock);
    s = join_job(c, j, (long long)ZG_POOL_JOIN_SPIN_US * 1000);
    free(j);
    return s;
}

/* Tests only (python/tests/test_fork.py, through ctypes; in no header): the context's pool as this process sees
 * it, without re-creating it. out[0] configured size, out[1] worker threads running in this process, out[2]
 * indices those workers ran (not callers). Returns 1 when the pool's threads are this process's, 0 when they are
 * an ancestor's (a forked child that has not used the pool yet; out[1], out[2] are then 0), -1 for no pool. */
ZGPU_API int zg_test_pool_info(const zgpu_context *ctx, long long out[3]) {
    out[0] = out[1] = out[2] = 0;
    if (!ctx || !ctx->pool) return -1;
    core *c = atomic_load(&ctx->pool->core);
    out[0] = ctx->pool->size;
    if (!c || c->pid != getpid()) return 0;
    out[1] = atomic_load(&c->live);
    out[2] = atomic_load(&c->worker_items);
    return 1;
}
