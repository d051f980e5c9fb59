/* A persistent thread pool with a queue of index-range jobs. The submitting thread works on its own job
 * too, so a pool of N threads decodes with N workers plus the caller, and nested or concurrent callers
 * never deadlock waiting for a busy pool.
 *
 * After fork() the child has none of the workers, and the pool's lock may have been held by one of them at the
 * fork (they take it each time they wake): a pool used in a forked child (a DataLoader or multiprocessing
 * worker reading through a context its parent made) runs every job on the calling thread and never touches the
 * lock, rather than wait forever. */
#include "host/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/status.h"

typedef struct zg_job {
    zg_pool_fn fn;
    void *arg;
    size_t n;
    atomic_size_t next;
    atomic_int failed;
    int active;                 /* threads inside run_job (under the pool lock) */
    zgpu_status status;         /* first failure */
    char message[ZG_ERRMSG_MAX];
    struct zg_job *link;
    int queued;                 /* on the pool's queue (zg_pool_start with worker threads) */
} zg_job;

struct zg_pool {
    int size;                   /* workers + the caller */
    pthread_t *threads;
    int n_threads;
    pthread_mutex_t lock;
    pthread_cond_t work;        /* a job was queued, or stop */
    pthread_cond_t idle;        /* a job's active count dropped */
    zg_job *jobs;               /* queue (singly linked, newest last) */
    int stop;
    pid_t pid;                  /* the process whose threads these are */
};

/* 1 in a child forked after the pool was made: no workers, and the lock may be held forever. */
static int forked(const zg_pool *p) { return p->pid != getpid(); }

static int job_open(zg_job *j) {
    return atomic_load(&j->next) < j->n && !atomic_load(&j->failed);
}

/* Called without the lock; `active` was incremented under it. */
static void run_job(zg_pool *p, zg_job *j) {
    for (;;) {
        if (atomic_load(&j->failed)) break;
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n) break;
        zgpu_status st = j->fn(j->arg, i);
        if (st != ZGPU_OK) {
            pthread_mutex_lock(&p->lock);
            if (!atomic_load(&j->failed)) {
                j->status = st;
                zg_error_save(j->message);
                atomic_store(&j->failed, 1);
            }
            pthread_mutex_unlock(&p->lock);
            break;
        }
    }
    pthread_mutex_lock(&p->lock);
    if (--j->active == 0) pthread_cond_broadcast(&p->idle);
    pthread_mutex_unlock(&p->lock);
}

static void *worker_main(void *arg) {
    zg_pool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        zg_job *j = p->jobs;
        while (j && !job_open(j)) j = j->link;
        if (j) {
            j->active++;
            pthread_mutex_unlock(&p->lock);
            run_job(p, j);
            pthread_mutex_lock(&p->lock);
            continue;
        }
        if (p->stop) break;
        pthread_cond_wait(&p->work, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

zgpu_status zg_pool_create(int n_threads, zg_pool **out) {
    *out = NULL;
    if (n_threads < 1) n_threads = 1;
    zg_pool *p = calloc(1, sizeof *p);
    if (!p) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory creating the thread pool");
    p->size = n_threads;
    p->pid = getpid();
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->idle, NULL);
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads - 1, sizeof *p->threads);
        if (!p->threads) { zg_pool_free(p); return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory creating the thread pool"); }
        for (int i = 0; i < n_threads - 1; i++) {
            if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0) {
                zg_pool_free(p);
                return zg_error(ZGPU_ERR_INTERNAL, "cannot start thread %d of the pool", i + 1);
            }
            p->n_threads++;
        }
    }
    *out = p;
    return ZGPU_OK;
}

void zg_pool_free(zg_pool *p) {
    if (!p) return;
    if (forked(p)) { /* the workers are the parent's: nothing to stop or join; the lock may be held, so left as is */
        free(p->threads);
        free(p);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->idle);
    free(p);
}

int zg_pool_size(const zg_pool *p) { return p && !forked(p) ? p->size : 1; }

static void job_init(zg_job *j, size_t n, zg_pool_fn fn, void *arg) {
    memset(j, 0, sizeof *j);
    j->fn = fn;
    j->arg = arg;
    j->n = n;
    atomic_init(&j->next, 0);
    atomic_init(&j->failed, 0);
    j->status = ZGPU_OK;
}

/* Appends j to the queue and wakes the workers; `caller`: the calling thread counts as one of its workers. */
static void queue_job(zg_pool *p, zg_job *j, int caller) {
    pthread_mutex_lock(&p->lock);
    zg_job **tail = &p->jobs;
    while (*tail) tail = &(*tail)->link;
    *tail = j;
    j->queued = 1;
    j->active = caller;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
}

/* The caller (counted in j->active) works on the queued job j until it has no indices left, waits for the
 * other workers, takes it off the queue and returns its status (the first failure's message restored here). */
static zgpu_status join_job(zg_pool *p, zg_job *j) {
    run_job(p, j);
    pthread_mutex_lock(&p->lock);
    while (j->active > 0) pthread_cond_wait(&p->idle, &p->lock);
    for (zg_job **q = &p->jobs; *q; q = &(*q)->link)
        if (*q == j) { *q = j->link; break; }
    pthread_mutex_unlock(&p->lock);
    if (atomic_load(&j->failed)) {
        zg_error_restore(j->message);
        return j->status;
    }
    return ZGPU_OK;
}

zgpu_status zg_pool_run(zg_pool *p, size_t n, zg_pool_fn fn, void *arg) {
    if (n == 0) return ZGPU_OK;
    if (!p || p->n_threads == 0 || n == 1 || forked(p)) {
        for (size_t i = 0; i < n; i++) ZG_FORWARD(fn(arg, i));
        return ZGPU_OK;
    }
    zg_job j;
    job_init(&j, n, fn, arg);
    queue_job(p, &j, 1);
    return join_job(p, &j);
}

/* The queue's part of zg_pool_run, for a job on the heap. */
zgpu_status zg_pool_start(zg_pool *p, size_t n, zg_pool_fn fn, void *arg, zg_pool_job **out) {
    *out = NULL;
    if (n == 0) return ZGPU_OK;
    zg_job *j = malloc(sizeof *j);
    if (!j) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory queueing pool work");
    job_init(j, n, fn, arg);
    if (p && p->n_threads > 0 && !forked(p)) queue_job(p, j, 0);
    *out = j;
    return ZGPU_OK;
}

zgpu_status zg_pool_finish(zg_pool *p, zg_pool_job *j) {
    if (!j) return ZGPU_OK;
    zgpu_status s = ZGPU_OK;
    if (!j->queued) {
        for (size_t i = 0; i < j->n && s == ZGPU_OK; i++) s = j->fn(j->arg, i);
        free(j);
        return s;
    }
    pthread_mutex_lock(&p->lock);
    j->active++; /* the caller */
    pthread_mutex_unlock(&p->lock);
    s = join_job(p, j);
    free(j);
    return s;
}
