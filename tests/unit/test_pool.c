/* The host thread pool: every index runs exactly once, the first failure's status and message come back to the
 * caller, and a started job (zg_pool_start) runs on the pool's threads while its caller does other work, a
 * zg_pool_run of its own included, and workers polling for the next job before they sleep run every job as
 * sleeping ones do (CPU only, runs in CI). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host/pool.h"
#include "test.h"
#include "common/status.h"

typedef struct counts {
    size_t n;
    atomic_int *hits;   /* per index */
    size_t fail_at;     /* the index that fails (n: none) */
    atomic_int started; /* calls made */
    int slow;           /* each call sleeps this many microseconds */
} counts;

static zgpu_status count_index(void *arg, size_t i) {
    counts *c = arg;
    atomic_fetch_add(&c->started, 1);
    if (c->slow) {
        struct timespec ts = {0, (long)c->slow * 1000};
        nanosleep(&ts, NULL);
    }
    atomic_fetch_add(&c->hits[i], 1);
    if (i == c->fail_at) return zg_error(ZGPU_ERR_IO, "index %zu failed", i);
    return ZGPU_OK;
}

static void counts_init(counts *c, size_t n, size_t fail_at, int slow) {
    c->n = n;
    c->hits = calloc(n ? n : 1, sizeof *c->hits);
    c->fail_at = fail_at;
    atomic_init(&c->started, 0);
    c->slow = slow;
}

/* Every index ran exactly once. */
static int all_once(const counts *c) {
    for (size_t i = 0; i < c->n; i++)
        if (atomic_load(&c->hits[i]) != 1) return 0;
    return 1;
}

static void test_sizes(int threads) {
    zg_pool *p;
    CHECK_OK(zg_pool_create(threads, &p));
    for (size_t n = 0; n < 300; n += 37) {
        counts a;
        counts_init(&a, n, n, 0);
        CHECK_OK(zg_pool_run(p, n, count_index, &a));
        CHECK(all_once(&a));
        counts b;
        counts_init(&b, n, n, 0);
        zg_pool_job *job;
        CHECK_OK(zg_pool_start(p, n, count_index, &b, &job));
        CHECK(n == 0 ? job == NULL : job != NULL);
        CHECK_OK(zg_pool_finish(p, job));
        CHECK(all_once(&b));
        free(a.hits);
        free(b.hits);
    }
    zg_pool_free(p);
}

/* A started job goes on while its caller runs another job on the same pool, then is finished. */
static void test_overlap(int threads) {
    zg_pool *p;
    CHECK_OK(zg_pool_create(threads, &p));
    counts bg, fg;
    counts_init(&bg, 64, 64, 200);
    counts_init(&fg, 100, 100, 0);
    zg_pool_job *job;
    CHECK_OK(zg_pool_start(p, bg.n, count_index, &bg, &job));
    CHECK_OK(zg_pool_run(p, fg.n, count_index, &fg));
    CHECK(all_once(&fg));
    if (threads > 1) { /* the pool's threads took up the started job before it was finished */
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        CHECK(atomic_load(&bg.started) > 0);
    }
    CHECK_OK(zg_pool_finish(p, job));
    CHECK(all_once(&bg));
    free(bg.hits);
    free(fg.hits);
    zg_pool_free(p);
}

/* A failing index: its status and message reach the caller of zg_pool_finish, and no index runs twice. */
static void test_failure(int threads) {
    zg_pool *p;
    CHECK_OK(zg_pool_create(threads, &p));
    counts c;
    counts_init(&c, 200, 17, 0);
    zg_pool_job *job;
    CHECK_OK(zg_pool_start(p, c.n, count_index, &c, &job));
    CHECK(zg_pool_finish(p, job) == ZGPU_ERR_IO);
    CHECK(strstr(zgpu_last_error(), "index 17 failed") != NULL);
    CHECK_EQ_U64(atomic_load(&c.hits[17]), 1);
    int twice = 0;
    for (size_t i = 0; i < c.n; i++) twice |= atomic_load(&c.hits[i]) > 1;
    CHECK(!twice);
    free(c.hits);
    zg_pool_free(p);
}

/* fork() while another thread keeps the pool's workers waking (each takes the pool's lock as it wakes): the
 * child has none of the workers and may inherit the lock held, so it must start workers of its own, on a lock of
 * its own, and never touch the parent's. Before the pool knew, 23 of the 40 children hung here (SIGALRM after
 * 10 s) and none ran cleanly. Children run with several threads (distinct threads ran indices), free a pool they
 * never used without waiting on the parent's lock or condition variables, and fork a grandchild that does the
 * same. */
typedef struct churn {
    zg_pool *p;
    atomic_int stop;
} churn;

/* Records which thread ran each index (slowly enough that the pool's workers take some). */
typedef struct who {
    pthread_t t[200];
} who;

static zgpu_status note_thread(void *arg, size_t i) {
    who *w = arg;
    w->t[i] = pthread_self();
    struct timespec ts = {0, 50 * 1000};
    nanosleep(&ts, NULL);
    return ZGPU_OK;
}

static int distinct_threads(const who *w) {
    int n = 0;
    for (size_t i = 0; i < 200; i++) {
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++) seen = pthread_equal(w->t[k], w->t[i]);
        n += !seen;
    }
    return n;
}

/* A forked child's use of p: 0 if every job ran once each, with more than one thread. */
static int child_work(zg_pool *p) {
    counts kc;
    counts_init(&kc, 1000, 1000, 0);
    zgpu_status st = zg_pool_run(p, 1000, count_index, &kc);
    int bad = st != ZGPU_OK || zg_pool_size(p) != 4;
    for (size_t i = 0; i < 1000; i++) bad |= atomic_load(&kc.hits[i]) != 1;
    zg_pool_job *j = NULL; /* the two halves too */
    counts ks;
    counts_init(&ks, 100, 100, 0);
    bad |= zg_pool_start(p, 100, count_index, &ks, &j) != ZGPU_OK || zg_pool_finish(p, j) != ZGPU_OK;
    for (size_t i = 0; i < 100; i++) bad |= atomic_load(&ks.hits[i]) != 1;
    who w;
    bad |= zg_pool_run(p, 200, note_thread, &w) != ZGPU_OK || distinct_threads(&w) < 2;
    free(kc.hits);
    free(ks.hits);
    return bad;
}

static void *churn_main(void *arg) {
    churn *c = arg;
    while (!atomic_load(&c->stop)) {
        counts k;
        counts_init(&k, 64, 64, 0);
        (void)zg_pool_run(c->p, 64, count_index, &k);
        free(k.hits);
    }
    return NULL;
}

/* A grandchild forked from a child: its own workers on the pool, then it exits; 1 if it failed or hung. */
static int grandchild_work(zg_pool *p) {
    pid_t g = fork();
    if (g == 0) {
        alarm(10);
        int gb = child_work(p);
        zg_pool_free(p);
        _exit(gb);
    }
    int gs = 0;
    return g < 0 || waitpid(g, &gs, 0) != g || !WIFEXITED(gs) || WEXITSTATUS(gs) != 0;
}

static void test_fork(void) {
    zg_pool *p = NULL;
    CHECK_OK(zg_pool_create(4, &p));
    if (!p) return;
    churn c = {p, 0};
    pthread_t t;
    int ok = 0, hung = 0, forks = 40, asan = 0;
#ifdef ZT_ASAN
    /* Under AddressSanitizer a fork while another thread is inside malloc, or inside the sanitizer's own thread
     * set-up or exit, can leave the child's allocator locked (GCC 12's libasan: 1 child in 40 hung here in `make
     * test`; clang's: the first child, forked while the pool's new workers and the churn thread started, in 3 runs
     * of 5). glibc's own malloc is fork-safe, and the Release build runs the churn. Here the forks come from a quiet
     * parent (no churn; every worker started and parked by a job first), which still checks the pool's re-creation,
     * and no grandchild is forked from a child whose own workers have just started. */
    atomic_store(&c.stop, 1);
    asan = 1;
    counts warm;
    counts_init(&warm, 64, 64, 0);
    CHECK_OK(zg_pool_run(p, 64, count_index, &warm));
    free(warm.hits);
    usleep(100 * 1000);
#endif
    CHECK(asan || pthread_create(&t, NULL, churn_main, &c) == 0);
    for (int k = 0; k < forks; k++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            alarm(10); /* a hang ends the child with SIGALRM */
            int bad = 0;
            if (k % 4 == 3) { /* a child that changes its settings first: frees the inherited pool unused */
                zg_pool_free(p);
                _exit(0);
            }
            if (k % 4 == 2) { /* a grandchild forked before the child used the pool, then the child */
                bad |= grandchild_work(p);
            }
            bad |= child_work(p);
            if (k % 4 == 1 && !asan) { /* a grandchild of a child that runs its own workers */
                bad |= grandchild_work(p);
            }
            zg_pool_free(p); /* the child's own workers stop; the parent's part is left alone */
            _exit(bad ? 1 : 0);
        }
        int status = 0;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
        ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
        hung += WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
    }
    atomic_store(&c.stop, 1);
    if (!asan) pthread_join(t, NULL);
    CHECK_MSG(ok == forks, "%d of %d forked children ran their jobs (%d hung)", ok, forks, hung);
    /* the parent's pool still works */
    counts kp;
    counts_init(&kp, 500, 500, 0);
    CHECK_OK(zg_pool_run(p, 500, count_index, &kp));
    for (size_t i = 0; i < 500; i++) CHECK(atomic_load(&kp.hits[i]) == 1);
    free(kp.hits);
    zg_pool_free(p);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct spin_caller {
    zg_pool *p;
    int bad; /* jobs whose indices did not all run exactly once */
} spin_caller;

static void *spin_caller_main(void *arg) {
    spin_caller *sc = arg;
    for (int k = 0; k < 300; k++) {
        counts c;
        counts_init(&c, (size_t)(k % 7), (size_t)(k % 7), 0);
        if (zg_pool_run(sc->p, c.n, count_index, &c) != ZGPU_OK || !all_once(&c)) sc->bad++;
        free(c.hits);
    }
    return NULL;
}

/* Workers that poll for the next job (zg_pool_set_spin) before sleeping: back-to-back small jobs from two callers
 * at once each run every index exactly once, whether a job finds the workers polling or asleep; started jobs too;
 * and freeing the pool does not wait out a worker's polling time (stop ends it: a second of polling here). */
static void test_spin(int threads) {
    zg_pool *p;
    CHECK_OK(zg_pool_create(threads, &p));
    zg_pool_set_spin(NULL, 100); /* (no pool: nothing) */
    zg_pool_set_spin(p, 50);
    spin_caller a = {p, 0}, b = {p, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, spin_caller_main, &a) == 0);
    spin_caller_main(&b);
    pthread_join(t, NULL);
    CHECK_EQ_U64(a.bad, 0);
    CHECK_EQ_U64(b.bad, 0);
    counts c;
    counts_init(&c, 40, 40, 100);
    zg_pool_job *job;
    CHECK_OK(zg_pool_start(p, c.n, count_index, &c, &job));
    CHECK_OK(zg_pool_finish(p, job));
    CHECK(all_once(&c));
    free(c.hits);
    zg_pool_set_spin(p, 1000000);
    counts d;
    counts_init(&d, 30, 30, 0);
    CHECK_OK(zg_pool_run(p, d.n, count_index, &d)); /* (the workers then poll for a second) */
    CHECK(all_once(&d));
    free(d.hits);
    const double t0 = now_s();
    zg_pool_free(p);
    const double took = now_s() - t0;
    if (took >= 0.5) fprintf(stderr, "zg_pool_free with polling workers took %.3f s\n", took);
    CHECK(took < 0.5);
}

int main(void) {
    test_fork();
    const int threads[] = {1, 2, 5};
    for (size_t k = 0; k < sizeof threads / sizeof *threads; k++) {
        test_sizes(threads[k]);
        test_overlap(threads[k]);
        test_failure(threads[k]);
        test_spin(threads[k]);
    }
    TEST_MAIN_END();
}
