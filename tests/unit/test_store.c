/* The filesystem store's open files (open_file / read_file / close_file): sizes, ranges, ranges past the end,
 * absent keys, several threads reading one file, the version a file keeps when its key is replaced (what a
 * sharded read relies on to take a shard's index and inner chunks from one version of it), and a process out of
 * file descriptors (no file kept; ranges then come by key). Then the rest of the vtable against special files,
 * ".." keys, names the store keeps for itself, and the write locks (store.h lock / unlock). */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "store/fd_budget.h"
#include "store/store.h"
#include "common/status.h"

enum { N = 100000 };
static uint8_t data[N];

typedef struct {
    zg_store *s;
    zg_store_file *f;
    int bad; /* ranges read wrong */
} reader;

typedef struct {
    zg_store *s;
    const char *key;
    atomic_int got; /* set once the lock is held */
} locker;

static void *lock_then_unlock(void *arg) {
    locker *l = arg;
    zg_store_lock lk;
    if (l->s->vt->lock(l->s, l->key, &lk) != ZGPU_OK) return NULL;
    atomic_store(&l->got, 1);
    l->s->vt->unlock(l->s, &lk);
    return NULL;
}

static void sleep_ms(int ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Whether a second locker of key (through store t, on another thread) waits while s holds key's lock, and gets
 * it once s lets go. */
static int excludes(zg_store *s, zg_store *t, const char *key) {
    zg_store_lock lk;
    if (s->vt->lock(s, key, &lk) != ZGPU_OK) return 0;
    locker l = {t, key, 0};
    pthread_t th;
    if (pthread_create(&th, NULL, lock_then_unlock, &l) != 0) return 0;
    sleep_ms(100);
    const int waited = atomic_load(&l.got) == 0;
    s->vt->unlock(s, &lk);
    pthread_join(th, NULL);
    return waited && atomic_load(&l.got) == 1;
}

static void rest_of_vtable(const char *root) {
    zg_store *s = NULL, *t = NULL;
    CHECK_OK(zg_store_fs_open(root, &s));
    CHECK_OK(zg_store_fs_open(root, &t));
    if (!s || !t) return;
    char path[ZG_PATH_MAX + 64];
    uint64_t size = 0;
    int found = 1;
    zg_buf b = ZG_BUF_INIT;

    /* ".." never leaves the root */
    CHECK_STATUS(s->vt->get(s, "c/../../etc/passwd", &b, &found), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(s->vt->set(s, "..", "x", 1), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_OK(s->vt->get(s, "c/..x", &b, &found)); /* only a whole ".." component is refused */
    CHECK(found == 0);

    /* size and erase of special files: errors naming them, at once */
    CHECK_OK(s->vt->set(s, "d/k", "abc", 3));
    snprintf(path, sizeof path, "%s/d/fifo", root);
    CHECK(mkfifo(path, 0666) == 0);
    CHECK_STATUS(s->vt->size(s, "d/fifo", &size, &found), ZGPU_ERR_IO);
    CHECK_MSG(strstr(zgpu_last_error(), "d/fifo' is a FIFO, not a regular file"), "message: %s", zgpu_last_error());
    CHECK_STATUS(s->vt->get_range(s, "d/fifo", 0, 1, 0, (uint8_t *)path, &found), ZGPU_ERR_IO);
    CHECK_STATUS(s->vt->size(s, "d", &size, &found), ZGPU_ERR_IO);
    CHECK_MSG(strstr(zgpu_last_error(), "d' is a directory where a stored value was expected"), "message: %s",
              zgpu_last_error());
    CHECK_STATUS(s->vt->erase(s, "d"), ZGPU_ERR_IO);
    CHECK_OK(s->vt->size(s, "d/k", &size, &found));
    CHECK(found == 1 && size == 3);
    CHECK_OK(s->vt->size(s, "d/k/x", &size, &found)); /* below a file: absent */
    CHECK(found == 0);

    /* temporaries and the lock file are never keys */
    snprintf(path, sizeof path, "%s/d/k" ZG_FS_TMP_MARK "1-1", root);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    zg_store_lock lk;
    CHECK_OK(s->vt->lock(s, "d/k", &lk));
    s->vt->unlock(s, &lk);
    snprintf(path, sizeof path, "%s/" ZG_FS_LOCK_NAME, root);
    CHECK(access(path, F_OK) == 0);
    zg_list_entry *e = NULL;
    size_t n = 0;
    CHECK_OK(s->vt->list(s, "d", &e, &n));
    CHECK_EQ_U64(n, 2); /* "fifo", "k" */
    if (n == 2) CHECK(!strcmp(e[0].name, "fifo") && !strcmp(e[1].name, "k"));
    zg_list_free(e, n);
    CHECK_OK(s->vt->list(s, "", &e, &n));
    for (size_t i = 0; i < n; i++) CHECK_MSG(strcmp(e[i].name, ZG_FS_LOCK_NAME) != 0, "listed %s", e[i].name);
    zg_list_free(e, n);

    /* write locks: one key excludes another handle and another thread of one handle; other keys do not wait */
    CHECK(excludes(s, t, "c/0/0"));
    CHECK(excludes(s, s, "c/0/0"));
    zg_store_lock a, c;
    CHECK_OK(s->vt->lock(s, "c/0/0", &a));
    CHECK_OK(t->vt->lock(t, "c/0/1", &c)); /* another byte: does not wait (this would hang) */
    CHECK(a.slot != c.slot && a.slot % 64 != c.slot % 64);
    t->vt->unlock(t, &c);
    s->vt->unlock(s, &a);

    zg_buf_free(&b);
    zg_store_free(s);
    zg_store_free(t);
}

/* Writes make the directories a key needs: a new tree several levels deep (its root too), a new directory beside
 * existing ones, none below a file (an error naming the path, nothing written), and the same confined. */
static void directories_made(const char *root, int confine) {
    char base[ZG_PATH_MAX + 64], path[ZG_PATH_MAX + 64];
    snprintf(base, sizeof base, "%s/dirs%d/new/root", root, confine);
    zg_store *s = NULL;
    CHECK_OK(zg_store_fs_open_confined(base, confine, &s));
    if (!s) return;
    CHECK_OK(s->vt->set(s, "c/1/2/3", "abc", 3));
    CHECK_OK(s->vt->set(s, "c/1/2/4", "de", 2)); /* the directory there now */
    CHECK_OK(s->vt->set(s, "c/1/5/0", "f", 1));  /* a new one beside c/1/2 */
    CHECK_OK(s->vt->set(s, "top", "g", 1));      /* the root's own */
    const char *keys[] = {"c/1/2/3", "c/1/2/4", "c/1/5/0", "top"};
    const uint64_t sizes[] = {3, 2, 1, 1};
    for (int i = 0; i < 4; i++) {
        uint64_t size = 0;
        int found = 0;
        CHECK_OK(s->vt->size(s, keys[i], &size, &found));
        CHECK_MSG(found && size == sizes[i], "%s: found %d size %llu", keys[i], found, (unsigned long long)size);
    }
    CHECK_STATUS(s->vt->set(s, "top/x/y", "h", 1), ZGPU_ERR_IO); /* "top" is a file */
    CHECK_MSG(strstr(zgpu_last_error(), "top"), "message: %s", zgpu_last_error());
    snprintf(path, sizeof path, "%s/top", base);
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 1);
    zg_store_free(s);
}

static void *read_many(void *arg) { /* 2000 ranges of a shared open file */
    reader *r = arg;
    uint8_t buf[3000];
    uint32_t x = (uint32_t)(uintptr_t)r * 2654435761u;
    for (int k = 0; k < 2000; k++) {
        x = x * 1664525u + 1013904223u;
        const uint64_t len = x % 3000, off = (x >> 8) % (N - len);
        if (r->s->vt->read_file(r->f, off, len, buf) != ZGPU_OK || memcmp(buf, data + off, len) != 0) r->bad++;
    }
    return NULL;
}

int main(void) {
    char root[] = "/tmp/zgpu_test_store_XXXXXX";
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 2;
    }
    for (int i = 0; i < N; i++) data[i] = (uint8_t)(i * 7 + i / 251);
    zg_store *s = NULL;
    CHECK_OK(zg_store_fs_open(root, &s));
    if (!s) return 1;
    CHECK_OK(s->vt->set(s, "c/0/0", data, N));

    /* absent: not an error, no file */
    zg_store_file *f = (zg_store_file *)(uintptr_t)1;
    uint64_t size = 99;
    int found = 1;
    CHECK_OK(s->vt->open_file(s, "c/9/9", &f, &size, &found));
    CHECK(found == 0 && f == NULL && size == 0);
    /* a directory is not a value: an error naming it */
    CHECK_STATUS(s->vt->open_file(s, "c", &f, &size, &found), ZGPU_ERR_IO);
    CHECK_MSG(strstr(zgpu_last_error(), "/c' is a directory where a stored value was expected"), "message: %s",
              zgpu_last_error());
    CHECK(f == NULL);

    /* present: its size, ranges anywhere in it (empty ones too), the same bytes as get_range */
    CHECK_OK(s->vt->open_file(s, "c/0/0", &f, &size, &found));
    CHECK(found == 1 && f != NULL);
    CHECK_EQ_U64(size, N);
    if (!f) return 1;
    static uint8_t buf[N], buf2[N];
    CHECK_OK(s->vt->read_file(f, 0, N, buf));
    CHECK(memcmp(buf, data, N) == 0);
    CHECK_OK(s->vt->read_file(f, N - 17, 17, buf));
    CHECK(memcmp(buf, data + N - 17, 17) == 0);
    CHECK_OK(s->vt->read_file(f, N, 0, buf));
    CHECK_OK(s->vt->read_file(f, 12345, 999, buf));
    CHECK_OK(s->vt->get_range(s, "c/0/0", 12345, 999, 0, buf2, &found));
    CHECK(found == 1 && memcmp(buf, buf2, 999) == 0);

    /* past the end: a corrupt-data error naming the file and the range */
    CHECK_STATUS(s->vt->read_file(f, N - 10, 11, buf), ZGPU_ERR_CORRUPT_DATA);
    CHECK_MSG(strstr(zgpu_last_error(), "c/0/0") && strstr(zgpu_last_error(), "[99990, 100001)"), "message: %s",
              zgpu_last_error());
    CHECK_STATUS(s->vt->read_file(f, N + 1, 0, buf), ZGPU_ERR_CORRUPT_DATA);
    CHECK_STATUS(s->vt->read_file(f, UINT64_MAX, 2, buf), ZGPU_ERR_CORRUPT_DATA);

    /* four threads reading one file at once */
    reader rs[4];
    pthread_t th[4];
    for (int t = 0; t < 4; t++) {
        rs[t] = (reader){s, f, 0};
        CHECK(pthread_create(&th[t], NULL, read_many, &rs[t]) == 0);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        CHECK_MSG(rs[t].bad == 0, "thread %d: %d ranges read wrong", t, rs[t].bad);
    }

    /* the key replaced (written under a temporary name, then renamed): the open file keeps the version it
     * opened, a new open sees the new one */
    static uint8_t other[N / 2];
    memset(other, 0xab, sizeof other);
    CHECK_OK(s->vt->set(s, "c/0/0", other, sizeof other));
    CHECK_OK(s->vt->read_file(f, 50000, 4000, buf));
    CHECK(memcmp(buf, data + 50000, 4000) == 0);
    zg_store_file *g = NULL;
    CHECK_OK(s->vt->open_file(s, "c/0/0", &g, &size, &found));
    CHECK(found == 1 && g != NULL);
    CHECK_EQ_U64(size, N / 2);
    if (g) {
        CHECK_OK(s->vt->read_file(g, 0, N / 2, buf));
        CHECK(memcmp(buf, other, N / 2) == 0);
        CHECK_STATUS(s->vt->read_file(g, 50000, 4000, buf), ZGPU_ERR_CORRUPT_DATA);
        s->vt->close_file(g);
    }
    s->vt->close_file(f);
    s->vt->close_file(NULL); /* nothing to close */

    /* out of descriptors: present, a file kept without one (its ranges reopen the key, checked to be the same
     * file); absent still absent */
    struct rlimit lim;
    CHECK(getrlimit(RLIMIT_NOFILE, &lim) == 0);
    const int lowest = dup(0); /* the lowest free descriptor: a limit of it leaves none free */
    CHECK(lowest >= 0);
    close(lowest);
    struct rlimit tight = {(rlim_t)lowest, lim.rlim_max};
    CHECK(setrlimit(RLIMIT_NOFILE, &tight) == 0);
    g = (zg_store_file *)(uintptr_t)1;
    const int kept_before = zg_fd_kept_count();
    CHECK_OK(s->vt->open_file(s, "c/0/0", &g, &size, &found));
    CHECK(found == 1 && g != NULL);
    CHECK(zg_fd_kept_count() == kept_before); /* (it holds no descriptor) */
    CHECK_EQ_U64(size, N / 2);
    zg_store_file *absent = (zg_store_file *)(uintptr_t)1;
    CHECK_OK(s->vt->open_file(s, "c/9/9", &absent, &size, &found));
    CHECK(found == 0 && absent == NULL);
    CHECK(setrlimit(RLIMIT_NOFILE, &lim) == 0);
    if (g) {
        CHECK_OK(s->vt->read_file(g, 100, 4000, buf)); /* (reopened: the same file) */
        CHECK(memcmp(buf, other + 100, 4000) == 0);
        static uint8_t third[N / 2];
        memset(third, 0x3c, sizeof third);
        CHECK_OK(s->vt->set(s, "c/0/0", third, sizeof third)); /* (another version at the key) */
        CHECK_STATUS(s->vt->read_file(g, 100, 4000, buf), ZGPU_ERR_IO);
        CHECK(strstr(zgpu_last_error(), "replaced") != NULL);
        s->vt->close_file(g);
        CHECK(zg_fd_kept_count() == kept_before);
    }

    CHECK_OK(s->vt->erase_prefix(s, ""));
    zg_store_free(s);
    rest_of_vtable(root);
    directories_made(root, 0);
    directories_made(root, 1);
    zt_remove_dir(root);
    TEST_MAIN_END();
}
