/* The kernel cache (jit_cache.h): a process-wide hash map of compiled images behind one mutex, a directory of
 * cache files, NVRTC behind both. Nothing slow runs under the mutex: a thread that finds a key being built waits
 * on the condition variable for that build instead of compiling it again. */
#include "jit/jit_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "codec/crc32c.h"
#include "common/dirs.h"
#include "common/env.h"
#include "common/status.h"

#define N_BUCKETS 256
#define MAX_FILE_BYTES (64u << 20)   /* a cache file larger than this is not ours: rejected unread */
#define STALE_TEMP_SECONDS 600       /* a temporary file this old was left by a writer that died */
#define HEADER_BYTES 56
static const char magic[8] = {'Z', 'G', 'P', 'U', 'J', 'I', 'T', 'K'};

typedef struct entry {
    struct entry *next;
    uint64_t hash;
    char *key;
    int ready; /* 0 while a thread builds it */
    zg_jit_image img;
} entry;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t built;
    entry *buckets[N_BUCKETS];
    zg_jit_stats stats;
    /* the disk cache */
    int dir_known;          /* dir / disk_ok decided */
    int disk_ok;
    char dir[4096];
    char why[512];          /* why memory only */
    int configured;         /* zg_jit_cache_configure was called */
    char configured_dir[4096];
    uint64_t max_bytes;
    unsigned seq;           /* temporary names */
} C = {.mu = PTHREAD_MUTEX_INITIALIZER, .built = PTHREAD_COND_INITIALIZER, .max_bytes = ZG_JIT_CACHE_MAX_BYTES};

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* ------------------------------------------------------------------ fork: a child starts with a usable lock and
 * without the builds its parent's other threads had under way (their threads are not in the child) */
static void before_fork(void) { pthread_mutex_lock(&C.mu); }
static void after_fork_parent(void) { pthread_mutex_unlock(&C.mu); }
static void after_fork_child(void) {
    pthread_mutex_unlock(&C.mu); /* (the forking thread holds it: before_fork) */
    pthread_cond_init(&C.built, NULL);
    for (int b = 0; b < N_BUCKETS; b++) {
        entry **pp = &C.buckets[b];
        while (*pp) {
            entry *e = *pp;
            if (e->ready) {
                pp = &e->next;
                continue;
            }
            *pp = e->next;
            free(e->key);
            free(e);
        }
    }
}
static void register_fork(void) { pthread_atfork(before_fork, after_fork_parent, after_fork_child); }

/* Every entry point locks through here, so the fork handlers are in place before the lock is first held. */
static void lock(void) {
    pthread_once(&fork_once, register_fork);
    pthread_mutex_lock(&C.mu);
}
static void unlock(void) { pthread_mutex_unlock(&C.mu); }

/* ------------------------------------------------------------------ keys */
static uint64_t fnv1a(const void *p, size_t n, uint64_t h) {
    const uint8_t *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}
#define FNV_START 0xcbf29ce484222325ull

size_t zg_jit_key_text(const zg_jit_key *k, char *buf, size_t n) {
    const char *src = k->source ? k->source : "";
    int w = snprintf(buf, n,
                     "zgpu-jit-key/1\nwhat=%s\nsource=%016llx:%zu\narch=%s\ndriver=%s\nnvrtc=%s\nzgpu=%s\nnames=",
                     k->what ? k->what : "", (unsigned long long)fnv1a(src, strlen(src), FNV_START), strlen(src),
                     k->arch ? k->arch : "", k->driver ? k->driver : "", k->nvrtc ? k->nvrtc : "",
                     k->zgpu ? k->zgpu : "");
    if (w < 0 || (size_t)w >= n) return 0;
    size_t at = (size_t)w;
    for (size_t i = 0; i < k->n_names; i++) {
        w = snprintf(buf + at, n - at, "%s%s", i ? "\x1f" : "", k->names[i]);
        if (w < 0 || (size_t)w >= n - at) return 0;
        at += (size_t)w;
    }
    return at;
}

/* ------------------------------------------------------------------ the directory */
static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Decides the directory once (under C.mu): created if missing, and used only when it is a directory of this user
 * that nobody else can write (another user's files would be code run on the GPU). */
static void decide_dir(void) {
    if (C.dir_known) return;
    C.dir_known = 1;
    C.disk_ok = 0;
    C.dir[0] = 0;
    if (C.configured) {
        if (!C.configured_dir[0]) {
            snprintf(C.why, sizeof C.why, "the disk cache is off");
            return;
        }
        snprintf(C.dir, sizeof C.dir, "%s", C.configured_dir);
    } else {
        const char *base = zg_env_cache_dir();
        if (!base || !*base) {
            snprintf(C.why, sizeof C.why, "no cache directory (ZGPU_CACHE_DIR, XDG_CACHE_HOME and HOME unset)");
            return;
        }
        if (snprintf(C.dir, sizeof C.dir, "%s/kernels", base) >= (int)sizeof C.dir) {
            C.dir[0] = 0;
            snprintf(C.why, sizeof C.why, "the cache directory's name is too long");
            return;
        }
    }
    struct stat st;
    const int e = zg_make_dirs(C.dir, 0700, NULL, 0);
    if (e || lstat(C.dir, &st) != 0) {
        snprintf(C.why, sizeof C.why, "cannot create %s: %s", C.dir, strerror(e ? e : errno));
        C.dir[0] = 0;
        return;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
        snprintf(C.why, sizeof C.why, "%s is not a directory of this user closed to others", C.dir);
        C.dir[0] = 0;
        return;
    }
    C.disk_ok = 1;
    C.why[0] = 0;
}

const char *zg_jit_cache_dir(const char **why_memory_only) {
    lock();
    decide_dir();
    unlock();
    if (why_memory_only) *why_memory_only = C.disk_ok ? "" : C.why;
    return C.disk_ok ? C.dir : "";
}

static void file_of(const char *dir, uint64_t hash, char *buf, size_t n) {
    snprintf(buf, n, "%s/%016llx.zgk", dir, (unsigned long long)hash);
}

void zg_jit_cache_file(const char *key_text, char *buf, size_t n) {
    const char *dir = zg_jit_cache_dir(NULL);
    if (!*dir) {
        if (n) buf[0] = 0;
        return;
    }
    file_of(dir, fnv1a(key_text, strlen(key_text), FNV_START), buf, n);
}

/* ------------------------------------------------------------------ cache files */
static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

enum { LOAD_MISS = 0, LOAD_HIT = 1, LOAD_BAD = 2 };

/* Layout: magic[8], format, is_ptx, key length, names length, name count, CRC32C of everything after the header
 * (u32 each, little-endian), code length (u64), target[16]; then key, names, code. */
static int parse_file(const uint8_t *b, size_t size, const char *key, zg_jit_image *img) {
    if (size < HEADER_BYTES || memcmp(b, magic, 8) != 0) return LOAD_BAD;
    if (get32(b + 8) != ZG_JIT_CACHE_FORMAT) return LOAD_MISS; /* another format: replaced by this build's */
    const uint32_t is_ptx = get32(b + 12), key_len = get32(b + 16), names_len = get32(b + 20);
    const uint32_t n_names = get32(b + 24), crc = get32(b + 28);
    const uint64_t code_len = get64(b + 32);
    if (is_ptx > 1 || code_len == 0 || (uint64_t)key_len + names_len + code_len != size - HEADER_BYTES)
        return LOAD_BAD;
    if (zg_crc32c(0, b + HEADER_BYTES, size - HEADER_BYTES) != crc) return LOAD_BAD;
    const uint8_t *k = b + HEADER_BYTES, *names = k + key_len, *code = names + names_len;
    if (b[40 + 15] != 0) return LOAD_BAD; /* target, NUL-terminated */
    if (key_len != strlen(key) || memcmp(k, key, key_len) != 0) return LOAD_MISS; /* a different key */
    size_t seen = 0;
    for (uint32_t i = 0; i < names_len; i++) seen += names[i] == 0;
    if (seen != n_names || (names_len && names[names_len - 1] != 0)) return LOAD_BAD;
    memset(img, 0, sizeof *img);
    img->code = malloc(code_len);
    img->names = names_len ? malloc(names_len) : NULL;
    if (!img->code || (names_len && !img->names)) {
        zg_jit_image_free(img);
        return LOAD_MISS;
    }
    memcpy(img->code, code, code_len);
    if (names_len) memcpy(img->names, names, names_len);
    img->code_size = code_len;
    img->names_size = names_len;
    img->n_names = n_names;
    img->is_ptx = (int)is_ptx;
    memcpy(img->target, b + 40, 16);
    return LOAD_HIT;
}

static int read_all(int fd, uint8_t *p, size_t n) {
    while (n) {
        const ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int write_all(int fd, const uint8_t *p, size_t n) {
    while (n) {
        const ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* LOAD_HIT (img filled, the file's mtime refreshed), LOAD_MISS, or LOAD_BAD (the file deleted). */
static int disk_load(const char *path, const char *key, zg_jit_image *img) {
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return LOAD_MISS;
    struct stat st;
    int r;
    uint8_t *b = NULL;
    if (fstat(fd, &st) != 0) r = LOAD_MISS;
    else if (!S_ISREG(st.st_mode) || st.st_size < HEADER_BYTES || st.st_size > MAX_FILE_BYTES) r = LOAD_BAD;
    else if ((b = malloc((size_t)st.st_size)) == NULL) r = LOAD_MISS; /* no fault of the file */
    else if (read_all(fd, b, (size_t)st.st_size) != 0) r = LOAD_BAD;
    else r = parse_file(b, (size_t)st.st_size, key, img);
    free(b);
    if (r == LOAD_HIT) { /* most recently used: the last to be trimmed */
        const struct timespec t[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_NOW}};
        (void)futimens(fd, t);
    }
    close(fd);
    if (r == LOAD_BAD) (void)unlink(path); /* (if another process replaced it meanwhile, one more compile) */
    return r;
}

typedef struct file_info {
    char name[64];
    uint64_t size;
    struct timespec mtime;
} file_info;

static int older_first(const void *a, const void *b) {
    const file_info *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int ends_with(const char *s, const char *tail) {
    const size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* Keeps the directory's cache files within max_bytes, oldest out first, never `keep` (the file just written);
 * deletes temporaries of writers that died. Files that vanish meanwhile (another process trimming) are skipped.
 * Returns the files deleted to keep the bound. */
static uint64_t trim(const char *dir, uint64_t max_bytes, const char *keep) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    const int dfd = dirfd(d);
    file_info *files = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0, evicted = 0;
    const time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *nm = de->d_name;
        const int is_file = ends_with(nm, ".zgk"), is_temp = strstr(nm, ".zgk.tmp.") != NULL;
        if ((!is_file && !is_temp) || strlen(nm) >= sizeof files->name) continue;
        struct stat st;
        if (fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        if (is_temp) {
            if (now - st.st_mtime > STALE_TEMP_SECONDS) (void)unlinkat(dfd, nm, 0);
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            file_info *g = realloc(files, cap * sizeof *files);
            if (!g) break;
            files = g;
        }
        snprintf(files[n].name, sizeof files[n].name, "%s", nm);
        files[n].size = (uint64_t)st.st_size;
        files[n].mtime = st.st_mtim;
        total += files[n].size;
        n++;
    }
    if (total > max_bytes) {
        qsort(files, n, sizeof *files, older_first);
        for (size_t i = 0; i < n && total > max_bytes; i++) {
            if (keep && strcmp(files[i].name, keep) == 0) continue;
            if (unlinkat(dfd, files[i].name, 0) == 0) evicted++;
            total -= files[i].size; /* (ENOENT: another process took it out) */
        }
    }
    free(files);
    closedir(d);
    return evicted;
}

/* Writes the image under a temporary name, renames it into place, trims the directory. 0 on success. */
static int disk_store(const char *dir, const char *path, const char *key, const zg_jit_image *img,
                      uint64_t max_bytes, unsigned seq, uint64_t *evicted) {
    const size_t key_len = strlen(key), total = HEADER_BYTES + key_len + img->names_size + img->code_size;
    uint8_t *b = malloc(total);
    if (!b) return -1;
    memcpy(b, magic, 8);
    put32(b + 8, ZG_JIT_CACHE_FORMAT);
    put32(b + 12, (uint32_t)img->is_ptx);
    put32(b + 16, (uint32_t)key_len);
    put32(b + 20, (uint32_t)img->names_size);
    put32(b + 24, (uint32_t)img->n_names);
    put64(b + 32, img->code_size);
    memset(b + 40, 0, 16);
    memcpy(b + 40, img->target, strnlen(img->target, 15));
    uint8_t *p = b + HEADER_BYTES;
    memcpy(p, key, key_len);
    if (img->names_size) memcpy(p + key_len, img->names, img->names_size);
    memcpy(p + key_len + img->names_size, img->code, img->code_size);
    put32(b + 28, zg_crc32c(0, p, total - HEADER_BYTES));

    char tmp[4200];
    int fd = -1;
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    for (int attempt = 0; attempt < 8 && fd < 0; attempt++) {
        const uint64_t r = fnv1a(&t, sizeof t, fnv1a(&seq, sizeof seq, FNV_START ^ (uint64_t)getpid())) + attempt;
        snprintf(tmp, sizeof tmp, "%s.tmp.%d.%08x", path, (int)getpid(), (unsigned)(r ^ (r >> 32)));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 && errno != EEXIST) break;
    }
    int rc = -1;
    if (fd >= 0) {
        const int ok = write_all(fd, b, total) == 0;
        if (close(fd) == 0 && ok && rename(tmp, path) == 0) rc = 0;
        else (void)unlink(tmp);
    }
    free(b);
    if (rc == 0) *evicted = trim(dir, max_bytes, strrchr(path, '/') + 1);
    return rc;
}

/* ------------------------------------------------------------------ the map */
static entry *find(uint64_t hash, const char *key) {
    for (entry *e = C.buckets[hash % N_BUCKETS]; e; e = e->next)
        if (e->hash == hash && strcmp(e->key, key) == 0) return e;
    return NULL;
}

static void unlink_entry(entry *x) {
    for (entry **pp = &C.buckets[x->hash % N_BUCKETS]; *pp; pp = &(*pp)->next)
        if (*pp == x) {
            *pp = x->next;
            return;
        }
}

zgpu_status zg_jit_cache_get(const char *what, const char *source, const char *const *names, size_t n_names,
                             const char *arch, const char *driver, const zg_jit_image **out) {
    char version[32];
    snprintf(version, sizeof version, "%d.%d.%d", ZGPU_VERSION_MAJOR, ZGPU_VERSION_MINOR, ZGPU_VERSION_PATCH);
    const zg_jit_key k = {what, source, names, n_names, arch, driver, zg_nvrtc_version(), version};
    size_t cap = 512 + strlen(what);
    for (size_t i = 0; i < n_names; i++) cap += strlen(names[i]) + 1;
    char *key = malloc(cap);
    if (!key || !zg_jit_key_text(&k, key, cap)) {
        free(key);
        return zg_error(ZGPU_ERR_NO_MEMORY, "JIT %s: out of memory", what);
    }
    const uint64_t hash = fnv1a(key, strlen(key), FNV_START);

    lock();
    decide_dir();
    entry *e;
    while ((e = find(hash, key)) != NULL && !e->ready) pthread_cond_wait(&C.built, &C.mu);
    if (e) {
        C.stats.memory_hits++;
        unlock();
        free(key);
        *out = &e->img;
        return ZGPU_OK;
    }
    e = calloc(1, sizeof *e);
    if (!e) {
        unlock();
        free(key);
        return zg_error(ZGPU_ERR_NO_MEMORY, "JIT %s: out of memory", what);
    }
    e->hash = hash;
    e->key = key;
    e->next = C.buckets[hash % N_BUCKETS];
    C.buckets[hash % N_BUCKETS] = e;
    char dir[sizeof C.dir], path[sizeof C.dir + 32];
    snprintf(dir, sizeof dir, "%s", C.disk_ok ? C.dir : "");
    const uint64_t max_bytes = C.max_bytes;
    const unsigned seq = C.seq++;
    unlock();

    /* this thread builds it: from disk, else with NVRTC */
    path[0] = 0;
    if (dir[0]) file_of(dir, hash, path, sizeof path);
    zgpu_status st = ZGPU_OK;
    int from_disk = 0, rejected = 0, stored = 0;
    uint64_t evicted = 0;
    double t_load = 0, t_compile = 0, t_store = 0;
    if (path[0]) {
        const double t0 = now_s();
        const int r = disk_load(path, key, &e->img);
        t_load = now_s() - t0;
        from_disk = r == LOAD_HIT;
        rejected = r == LOAD_BAD;
    }
    if (!from_disk) {
        const double t0 = now_s();
        st = zg_jit_compile(source, names, n_names, arch, what, &e->img);
        t_compile = now_s() - t0;
        if (st == ZGPU_OK && path[0]) {
            const double t1 = now_s();
            stored = disk_store(dir, path, key, &e->img, max_bytes, seq, &evicted) == 0;
            t_store = now_s() - t1;
        }
    }

    lock();
    C.stats.disk_rejects += (uint64_t)rejected;
    C.stats.evictions += evicted;
    C.stats.disk_load_s += t_load;
    if (from_disk) C.stats.disk_hits++;
    else {
        C.stats.compiles++;
        C.stats.compile_s += t_compile;
        C.stats.disk_writes += (uint64_t)stored;
        C.stats.disk_store_s += t_store;
    }
    if (st == ZGPU_OK) e->ready = 1;
    else unlink_entry(e); /* the next caller tries again */
    pthread_cond_broadcast(&C.built);
    unlock();
    if (st != ZGPU_OK) {
        free(e->key);
        free(e);
        return st;
    }
    *out = &e->img;
    return ZGPU_OK;
}

/* ------------------------------------------------------------------ counters and test hooks */
void zg_jit_stats_get(zg_jit_stats *out) {
    lock();
    *out = C.stats;
    unlock();
}

void zg_jit_stats_reset(void) {
    lock();
    memset(&C.stats, 0, sizeof C.stats);
    unlock();
}

void zg_jit_stats_add_module_load(double seconds) {
    lock();
    C.stats.module_loads++;
    C.stats.module_load_s += seconds;
    unlock();
}

void zg_jit_cache_configure(const char *dir, uint64_t max_bytes) {
    lock();
    C.configured = dir != NULL;
    snprintf(C.configured_dir, sizeof C.configured_dir, "%s", dir ? dir : "");
    C.max_bytes = max_bytes ? max_bytes : ZG_JIT_CACHE_MAX_BYTES;
    C.dir_known = 0;
    unlock();
}

void zg_jit_cache_forget_memory(void) {
    lock();
    for (int b = 0; b < N_BUCKETS; b++) {
        entry *e = C.buckets[b];
        while (e) {
            entry *next = e->next;
            if (e->ready) {
                zg_jit_image_free(&e->img);
                free(e->key);
                free(e);
            }
            e = next;
        }
        C.buckets[b] = NULL;
    }
    unlock();
}
