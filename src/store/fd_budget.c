/* The process's descriptor budget (fd_budget.h). */
#include "store/fd_budget.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"

static atomic_int fd_brief;                  /* descriptors zgpu holds for one operation (soon released) */
static atomic_int fd_kept;                   /* descriptors zgpu keeps open across operations */
static atomic_int fd_waiters;
static atomic_int kept_busy;                 /* kept files being read now (evictions skip them) */
static atomic_int kept_limit = INT_MAX;      /* set when the process runs out of descriptors */
static _Atomic long shortage_at = -1000000;  /* when it last did (CLOCK_MONOTONIC seconds) */
static atomic_uint fd_gen;                   /* bumped at every release */
static _Thread_local int fd_mine;            /* brief descriptors this thread holds */
static int (*evict)(void);                   /* the stores' eviction of an idle kept descriptor */
static pthread_mutex_t fd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fd_cv = PTHREAD_COND_INITIALIZER;

int zg_fd_out_of(int e) { return e == EMFILE || e == ENFILE; }

/* Counted before the open, so that a thread that finds the process out of descriptors sees every descriptor
 * another thread is opening or holds. */
void zg_fd_took(void) {
    atomic_fetch_add(&fd_brief, 1);
    fd_mine++;
}

void zg_fd_untake(void) { /* the open failed: nothing to release, nobody to wake */
    atomic_fetch_sub(&fd_brief, 1);
    fd_mine--;
}

int zg_fd_openat(int dir, const char *name, int flags, mode_t mode) {
    zg_fd_took();
    int fd = openat(dir, name, flags, mode);
    if (fd < 0) {
        int e = errno;
        zg_fd_untake();
        errno = e;
    }
    return fd;
}

/* Wakes threads waiting for a descriptor. Releases bump fd_gen before their counts drop, so that a thread
 * that sees the lower count also sees the new generation (and tries again rather than giving up). */
void zg_fd_wake(void) {
    atomic_fetch_add(&fd_gen, 1);
    if (atomic_load(&fd_waiters) > 0) {
        pthread_mutex_lock(&fd_mu);
        pthread_cond_broadcast(&fd_cv);
        pthread_mutex_unlock(&fd_mu);
    }
}

/* A brief descriptor no longer held (closed by the caller, e.g. through closedir). */
void zg_fd_forget(void) {
    atomic_fetch_add(&fd_gen, 1);
    atomic_fetch_sub(&fd_brief, 1);
    fd_mine--;
    zg_fd_wake();
}

void zg_fd_close(int fd) {
    close(fd);
    zg_fd_forget();
}

/* A brief descriptor of this thread becomes a kept one (counted kept before it stops counting as brief). */
void zg_fd_keep(void) {
    atomic_fetch_add(&fd_kept, 1);
    atomic_fetch_sub(&fd_brief, 1);
    fd_mine--;
}

void zg_fd_close_kept(int fd) {
    close(fd);
    atomic_fetch_add(&fd_gen, 1);
    atomic_fetch_sub(&fd_kept, 1);
    zg_fd_wake();
}

static long mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec;
}

/* Files open_file may keep open at once: a quarter of the descriptor limit; for 10 s after a shortage, half
 * of what was kept when it struck (lowered again by each shortage meanwhile). */
int zg_fd_kept_cap(void) {
    struct rlimit rl;
    long cap = INT_MAX;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) cap = (long)(rl.rlim_cur / 4);
    if (mono_s() - atomic_load(&shortage_at) >= 10) return (int)cap;
    int lim = atomic_load(&kept_limit);
    return cap < lim ? (int)cap : lim;
}

zg_fd_waiter zg_fd_waiter_start(void) { return (zg_fd_waiter){atomic_load(&fd_gen), 0}; }

/* After an open failed for want of descriptors: 1 = try again, because one was released since w->gen, or a
 * kept file gave up its descriptor (the stores' eviction); it waits while other threads hold (or are opening) brief
 * ones. With nothing of zgpu's to wait for it still retries for a second, every 10 ms: the C library opens
 * descriptors of its own for a moment (malloc reads /sys/devices/system/cpu/online for a new thread's arena),
 * and so may the application. 0 = give up: that second passed, or this thread holds descriptors itself and
 * nothing came back for a second (threads each holding one and waiting for another). */
int zg_fd_wait(zg_fd_waiter *w) {
    const int saved = errno;
    int kept = atomic_load(&fd_kept);
    const long t = mono_s();
    if (t - atomic_exchange(&shortage_at, t) >= 10 || kept / 2 < atomic_load(&kept_limit))
        atomic_store(&kept_limit, kept / 2); /* a new shortage, or a worse one */
    int again = 0, waited_ms = 0;
    pthread_mutex_lock(&fd_mu);
    atomic_fetch_add(&fd_waiters, 1);
    for (;;) {
        unsigned g = atomic_load(&fd_gen);
        if (g != w->gen) {
            w->gen = g;
            again = 1;
            break;
        }
        const int others = atomic_load(&fd_brief) - fd_mine + atomic_load(&kept_busy);
        if (others <= 0 || (fd_mine > 0 && waited_ms >= 1000)) break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L; /* re-checked every 100 ms: a failed open undoes its count silently */
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (pthread_cond_timedwait(&fd_cv, &fd_mu, &ts) == ETIMEDOUT) waited_ms += 100;
    }
    atomic_fetch_sub(&fd_waiters, 1);
    pthread_mutex_unlock(&fd_mu);
    if (!again && evict) again = evict();
    unsigned g = atomic_load(&fd_gen); /* another thread's eviction or release meanwhile counts too */
    again |= g != w->gen;
    w->gen = g;
    if (!again && w->idle_ms < 1000) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
        w->idle_ms += 10;
        again = 1;
    }
    errno = saved;
    return again;
}

zgpu_status zg_fd_no_fds_error(const char *path) {
    return zg_error(ZGPU_ERR_IO, "cannot open '%s': %s (zgpu holds %d descriptors for reads in progress and %d "
                    "kept open; raise the limit, e.g. ulimit -n)", path, strerror(EMFILE),
                    atomic_load(&fd_brief), atomic_load(&fd_kept));
}

void zg_fd_kept_add(void) { atomic_fetch_add(&fd_kept, 1); }

void zg_fd_kept_dropped(void) {
    atomic_fetch_add(&fd_gen, 1);
    atomic_fetch_sub(&fd_kept, 1);
}

int zg_fd_kept_count(void) { return atomic_load(&fd_kept); }

void zg_fd_busy_begin(void) { atomic_fetch_add(&kept_busy, 1); }

/* Bumps the generation first, as every release does (see zg_fd_wake). */
void zg_fd_busy_end(void) {
    atomic_fetch_add(&fd_gen, 1);
    atomic_fetch_sub(&kept_busy, 1);
}

int zg_fd_waiting(void) { return atomic_load(&fd_waiters) > 0; }

/* A forked child has only the forking thread: descriptors other threads held for a moment will never be
 * released there (their copies stay open), and no kept file is being read, so waiting for them would hang. */
static void fd_after_fork_child(void) {
    pthread_mutex_init(&fd_mu, NULL);
    pthread_cond_init(&fd_cv, NULL);
    atomic_store(&fd_brief, 0);
    atomic_store(&fd_waiters, 0);
    atomic_store(&kept_busy, 0);
    fd_mine = 0;
}

void zg_fd_budget_init(int (*evict_fn)(void)) {
    evict = evict_fn;
    pthread_atfork(NULL, NULL, fd_after_fork_child);
}
