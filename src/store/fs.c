/* Filesystem store: a key is a path below the root directory. Writes go to a temporary file in the same
 * directory and are renamed into place, so a crash never leaves a half-written chunk or metadata file; the
 * writer holds a flock on its temporary until the rename, so the next writer in that directory can tell a
 * killed writer's leftover (unlocked, old) from a live one and removes it.
 *
 * Only regular files are values: everything is opened non-blocking and checked with fstat, so a FIFO, socket
 * or device never blocks a read and is an error naming it (store.h). Every descriptor is counted in the
 * process's budget (fd_budget.h): an open that finds the process out of descriptors waits for one of zgpu's
 * to be released and retries, and open_file keeps fewer files open from then on. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "store/fd_budget.h"
#include "common/dirs.h"
#include "common/status.h"

enum {
    N_STRIPES = 64,      /* in-process write locks of one handle (threads sharing its lock file's description) */
    TMP_STALE_S = 10,    /* a temporary unlocked and untouched this long belongs to a writer that is gone */
};

typedef struct fs_store {
    zg_store base;          /* first: the vtable's functions cast zg_store * to fs_store * */
    int confine;
    atomic_int root_fd;     /* confined: the root directory (O_PATH), opened at first use; -1 before */
    pthread_mutex_t mu;     /* guards lock_fd's creation and `cleaned` */
    int lock_fd;            /* ZG_FS_LOCK_NAME in the root, opened at the first lock(); -1 before */
    uint64_t *cleaned;      /* open-addressed set of hashes of directories whose leftovers were cleaned */
    size_t n_cleaned, cap_cleaned;
    pthread_mutex_t stripes[N_STRIPES];
} fs_store;

/* ---- paths and resolution ---- */

static int has_dotdot(const char *key) {
    for (const char *p = key; *p;) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

zgpu_status zg_store_fs_path(const zg_store *s, const char *key, char *out) {
    if (has_dotdot(key)) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "key '%s' in store '%s' has a '..' component", key, s->root);
    int n = key[0] ? snprintf(out, ZG_PATH_MAX, "%s/%s", s->root, key) : snprintf(out, ZG_PATH_MAX, "%s", s->root);
    if (n < 0 || n >= ZG_PATH_MAX) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "path too long: %s/%s", s->root, key);
    return ZGPU_OK;
}

static atomic_int have_openat2 = 1, test_walk;

void zg_store_fs_test_walk(int on) { atomic_store(&test_walk, on); }

static int is_link_at(int dir, const char *name) {
    struct stat st;
    return fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

/* Without openat2: component by component from the root, refusing every symbolic link (errno EXDEV). */
static int walk_open(int root, const char *key, int flags) {
    char buf[ZG_PATH_MAX];
    snprintf(buf, sizeof buf, "%s", key);
    int cur = root, e = 0;
    char *p = buf;
    for (char *slash; (slash = strchr(p, '/')); p = slash + 1) {
        *slash = '\0';
        int next = openat(cur, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        e = errno;
        if (next < 0 && (e == ENOTDIR || e == ELOOP) && is_link_at(cur, p)) e = EXDEV;
        if (cur != root) close(cur);
        if (next < 0) {
            errno = e;
            return -1;
        }
        cur = next;
    }
    int fd = openat(cur, p, flags | O_NOFOLLOW);
    e = errno;
    if (fd < 0 && (e == ELOOP || e == ENOTDIR) && is_link_at(cur, p)) e = EXDEV;
    struct stat st;
    if (fd >= 0 && (flags & O_PATH) && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) { /* O_PATH opens the link */
        close(fd);
        fd = -1;
        e = EXDEV;
    }
    if (cur != root) close(cur);
    errno = e;
    return fd;
}

static int beneath_open(int root, const char *key, int flags) {
    if (!key[0]) return openat(root, ".", flags);
    if (!atomic_load(&test_walk) && atomic_load(&have_openat2)) {
        struct open_how how;
        memset(&how, 0, sizeof how);
        how.flags = (uint64_t)flags;
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
        long fd = syscall(SYS_openat2, root, key, &how, sizeof how);
        if (fd >= 0 || errno != ENOSYS) return (int)fd;
        atomic_store(&have_openat2, 0); /* kernel before 5.6 (or a filter): walk from now on */
    }
    return walk_open(root, key, flags);
}

/* The confined store's root directory, opened once (the root itself may be a link: the caller chose it). */
static int root_fd(fs_store *fs) {
    int fd = atomic_load(&fs->root_fd);
    if (fd >= 0) return fd;
    fd = open(fs->base.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int expected = -1;
    if (!atomic_compare_exchange_strong(&fs->root_fd, &expected, fd)) {
        close(fd);
        return expected;
    }
    zg_fd_kept_add();
    return fd;
}

/* Opens a key: by its path, or beneath the root when confined. -1 with errno (EXDEV: leaves the store). */
static int raw_open(fs_store *fs, const char *key, const char *path, int flags) {
    flags |= O_CLOEXEC;
    if (!(flags & O_PATH)) flags |= O_NONBLOCK; /* never block on a FIFO; regular files ignore it (openat2
                                                 * refuses it with O_PATH, which opens nothing anyway) */
    if (!fs->confine) return open(path, flags);
    int root = root_fd(fs);
    if (root < 0) return -1;
    return beneath_open(root, key, flags);
}

/* raw_open counted as brief (counted before the open: see fd_budget.h); -1 with errno. */
static int counted_open_once(fs_store *fs, const char *key, const char *path, int flags) {
    zg_fd_took();
    int fd = raw_open(fs, key, path, flags);
    if (fd < 0) {
        int e = errno;
        zg_fd_untake();
        errno = e;
    }
    return fd;
}

/* counted_open_once, waiting for descriptors when the process is out of them. */
static int counted_open(fs_store *fs, const char *key, const char *path, int flags) {
    zg_fd_waiter w = zg_fd_waiter_start();
    for (;;) {
        int fd = counted_open_once(fs, key, path, flags);
        if (fd >= 0 || !zg_fd_out_of(errno) || !zg_fd_wait(&w)) return fd;
    }
}

static const char *kind_of(mode_t m) {
    return S_ISDIR(m) ? "a directory where a stored value was expected"
           : S_ISFIFO(m) ? "a FIFO, not a regular file"
           : S_ISSOCK(m) ? "a socket, not a regular file"
           : S_ISCHR(m) ? "a character device, not a regular file"
           : S_ISBLK(m) ? "a block device, not a regular file"
           : S_ISLNK(m) ? "a symbolic link, not a regular file"
                        : "not a regular file";
}

static zgpu_status not_regular(const char *path, mode_t m) {
    return zg_error(ZGPU_ERR_IO, "'%s' is %s", path, kind_of(m));
}

/* The error of a failed open of key (errno e). */
static zgpu_status open_error(fs_store *fs, const char *key, const char *path, int e) {
    if (e == EXDEV && fs->confine)
        return zg_error(ZGPU_ERR_IO, "'%s': key '%s' leads outside the store through a symbolic link; refused because "
                        "the store '%s' is confined (confine_to_store)", path, key, fs->base.root);
    if (zg_fd_out_of(e)) return zg_fd_no_fds_error(path);
    struct stat st;
    if (e == ENXIO && lstat(path, &st) == 0) return not_regular(path, st.st_mode); /* a socket */
    return zg_error(ZGPU_ERR_IO, "cannot open '%s': %s", path, strerror(e));
}

/* Opens key for reading a stored value. *fd = -1 and ZGPU_OK when absent; out of descriptors with no_fd
 * given: *no_fd = 1 (without waiting). Anything but a regular file is an error. st_out (NULL allowed): its stat. */
static zgpu_status open_value(fs_store *fs, const char *key, char *path, int *fd, uint64_t *size, int *no_fd,
                              struct stat *st_out) {
    *fd = -1;
    ZG_FORWARD(zg_store_fs_path(&fs->base, key, path));
    /* (with no_fd, a shortage is reported rather than waited out) */
    *fd = no_fd ? counted_open_once(fs, key, path, O_RDONLY) : counted_open(fs, key, path, O_RDONLY);
    if (*fd < 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR) return ZGPU_OK;
        if (no_fd && zg_fd_out_of(e)) {
            *no_fd = 1;
            return ZGPU_OK;
        }
        return open_error(fs, key, path, e);
    }
    struct stat st;
    zgpu_status status = ZGPU_OK;
    if (fstat(*fd, &st) != 0) status = zg_error(ZGPU_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode)) status = not_regular(path, st.st_mode);
    if (status != ZGPU_OK) {
        zg_fd_close(*fd);
        *fd = -1;
        return status;
    }
    *size = (uint64_t)st.st_size;
    if (st_out) *st_out = st;
    return ZGPU_OK;
}

/* ---- reads ---- */

static zgpu_status read_full(int fd, uint8_t *dst, uint64_t offset, uint64_t n, const char *path) {
    while (n > 0) {
        size_t want = n > (1u << 30) ? (1u << 30) : (size_t)n;
        ssize_t got = pread(fd, dst, want, (off_t)offset);
        if (got < 0) {
            if (errno == EINTR) continue;
            return zg_error(ZGPU_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        }
        if (got == 0) return zg_error(ZGPU_ERR_CORRUPT_DATA, "'%s' is shorter than expected (truncated?)", path);
        dst += got;
        offset += (uint64_t)got;
        n -= (uint64_t)got;
    }
    return ZGPU_OK;
}

static zgpu_status fs_get(zg_store *s, const char *key, zg_buf *out, int *found) {
    char path[ZG_PATH_MAX];
    int fd;
    uint64_t size = 0;
    *found = 0;
    ZG_FORWARD(open_value((fs_store *)s, key, path, &fd, &size, NULL, NULL));
    if (fd < 0) return ZGPU_OK;
    zgpu_status st = zg_buf_reserve(out, (size_t)size);
    if (st == ZGPU_OK) st = read_full(fd, out->data, 0, size, path);
    zg_fd_close(fd);
    if (st != ZGPU_OK) return st;
    out->size = (size_t)size;
    *found = 1;
    return ZGPU_OK;
}

/* [offset, offset + length) inside a file of `size` bytes, or an error naming it. */
static zgpu_status check_range(const char *path, uint64_t size, uint64_t offset, uint64_t length) {
    if (offset > size || length > size - offset)
        return zg_error(ZGPU_ERR_CORRUPT_DATA, "'%s' has %llu bytes; range [%llu, %llu) lies outside it", path,
                        (unsigned long long)size, (unsigned long long)offset, (unsigned long long)(offset + length));
    return ZGPU_OK;
}

static zgpu_status fs_get_range(zg_store *s, const char *key, uint64_t offset, uint64_t length, int from_end,
                                uint8_t *out, int *found) {
    char path[ZG_PATH_MAX];
    int fd;
    uint64_t size = 0;
    *found = 0;
    ZG_FORWARD(open_value((fs_store *)s, key, path, &fd, &size, NULL, NULL));
    if (fd < 0) return ZGPU_OK;
    zgpu_status st = ZGPU_OK;
    if (from_end) {
        if (offset > size) st = zg_error(ZGPU_ERR_CORRUPT_DATA, "'%s' has %llu bytes, fewer than the %llu needed",
                                         path, (unsigned long long)size, (unsigned long long)offset);
        else offset = size - offset;
    }
    if (st == ZGPU_OK) st = check_range(path, size, offset, length);
    if (st == ZGPU_OK) st = read_full(fd, out, offset, length, path);
    zg_fd_close(fd);
    if (st == ZGPU_OK) *found = 1;
    return st;
}

/* The stat of a stored value, holding no descriptor after (a confined store: a brief O_PATH one). Absent: *found 0.
 * Anything but a regular file is an error. */
static zgpu_status stat_value(fs_store *fs, const char *key, char *path, struct stat *st, int *found) {
    ZG_FORWARD(zg_store_fs_path(&fs->base, key, path));
    *found = 0;
    int r;
    if (!fs->confine) {
        r = stat(path, st);
    } else {
        int fd = counted_open(fs, key, path, O_PATH);
        r = fd < 0 ? -1 : fstat(fd, st);
        if (fd >= 0) {
            int e = errno;
            zg_fd_close(fd);
            errno = e;
        }
    }
    if (r != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return ZGPU_OK;
        return open_error(fs, key, path, errno);
    }
    if (!S_ISREG(st->st_mode)) return not_regular(path, st->st_mode);
    *found = 1;
    return ZGPU_OK;
}

static zgpu_status fs_size(zg_store *s, const char *key, uint64_t *size, int *found) {
    char path[ZG_PATH_MAX];
    struct stat st;
    ZG_FORWARD(stat_value((fs_store *)s, key, path, &st, found));
    if (*found) *size = (uint64_t)st.st_size;
    return ZGPU_OK;
}

/* A kept file. Under a shortage of descriptors an idle one gives its descriptor up (evict_one): its ranges
 * are then read by reopening the key, checked to be the same file (device, inode, size, mtime), so a reader
 * still never mixes two versions of it. */
struct zg_store_file {
    fs_store *fs;
    pthread_mutex_t mu;       /* fd, users */
    int fd;                   /* -1 once evicted */
    int users;                /* reads in progress on fd */
    uint64_t size;
    dev_t dev;
    ino_t ino;
    struct timespec mtime;
    zg_store_file *prev, *next; /* kept_files (a file opened without a descriptor is not listed) */
    int listed;
    char *key;
    char path[];              /* for messages */
};

static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER; /* kept_files; taken before a file's mu */
static zg_store_file *kept_files;

/* Closes the descriptor of one kept file that no thread is reading; 1 if it found one. */
static int evict_one(void) {
    int done = 0;
    pthread_mutex_lock(&kept_mu);
    for (zg_store_file *f = kept_files; f && !done; f = f->next) {
        pthread_mutex_lock(&f->mu); /* held only briefly by read_file, which never takes kept_mu */
        if (f->fd >= 0 && f->users == 0) {
            close(f->fd);
            f->fd = -1;
            zg_fd_kept_dropped(); /* under kept_mu: a thread finding nothing to evict after us sees it */
            done = 1;
        }
        pthread_mutex_unlock(&f->mu);
    }
    pthread_mutex_unlock(&kept_mu);
    if (done) zg_fd_wake();
    return done;
}

/* store.h's open_file. Out of descriptors, or holding as many open as zg_fd_kept_cap allows, it keeps no descriptor:
 * the file starts as an evicted one (its identity from a stat), its ranges read by reopening the key, checked to be
 * the same file. */
static zgpu_status fs_open_file(zg_store *s, const char *key, zg_store_file **f, uint64_t *size, int *found) {
    char path[ZG_PATH_MAX];
    int fd = -1, no_fd = zg_fd_kept_count() >= zg_fd_kept_cap();
    *f = NULL;
    *found = 0;
    *size = 0;
    struct stat st;
    if (!no_fd) ZG_FORWARD(open_value((fs_store *)s, key, path, &fd, size, &no_fd, &st));
    if (no_fd) {
        int present = 0;
        ZG_FORWARD(stat_value((fs_store *)s, key, path, &st, &present));
        if (!present) return ZGPU_OK;
        *size = (uint64_t)st.st_size;
    } else if (fd < 0) {
        return ZGPU_OK;
    }
    const size_t n = strlen(path) + 1;
    zg_store_file *file = calloc(1, sizeof *file + n);
    char *k = file ? strdup(key) : NULL;
    if (!k) {
        free(file);
        if (fd >= 0) zg_fd_close(fd);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory opening '%s'", path);
    }
    file->fs = (fs_store *)s;
    pthread_mutex_init(&file->mu, NULL);
    file->fd = fd;
    file->size = *size;
    file->dev = st.st_dev;
    file->ino = st.st_ino;
    file->mtime = st.st_mtim;
    file->key = k;
    memcpy(file->path, path, n);
    if (fd >= 0) { /* (listed first: evict_one can take back every kept descriptor) */
        pthread_mutex_lock(&kept_mu);
        file->next = kept_files;
        if (kept_files) kept_files->prev = file;
        kept_files = file;
        file->listed = 1;
        zg_fd_keep();
        pthread_mutex_unlock(&kept_mu);
    }
    *f = file;
    *found = 1;
    return ZGPU_OK;
}

static zgpu_status fs_read_file(zg_store_file *f, uint64_t offset, uint64_t length, uint8_t *out) {
    ZG_FORWARD(check_range(f->path, f->size, offset, length));
    pthread_mutex_lock(&f->mu);
    const int fd = f->fd;
    if (fd >= 0 && f->users++ == 0) zg_fd_busy_begin();
    pthread_mutex_unlock(&f->mu);
    if (fd >= 0) {
        zgpu_status st = read_full(fd, out, offset, length, f->path);
        pthread_mutex_lock(&f->mu);
        const int idle = --f->users == 0;
        if (idle) {
            zg_fd_busy_end();
        }
        pthread_mutex_unlock(&f->mu);
        if (idle && zg_fd_waiting()) zg_fd_wake(); /* evictable now */
        return st;
    }
    /* evicted: the key again, and only if it is still the file opened */
    int rfd = counted_open(f->fs, f->key, f->path, O_RDONLY);
    if (rfd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) {
            atomic_fetch_add(&f->fs->base.replaced, 1u);
            return zg_error(ZGPU_ERR_IO, "'%s' was removed while being read; read again", f->path);
        }
        return open_error(f->fs, f->key, f->path, errno);
    }
    struct stat st;
    zgpu_status status = ZGPU_OK;
    if (fstat(rfd, &st) != 0 || st.st_dev != f->dev || st.st_ino != f->ino || (uint64_t)st.st_size != f->size ||
        st.st_mtim.tv_sec != f->mtime.tv_sec || st.st_mtim.tv_nsec != f->mtime.tv_nsec) {
        atomic_fetch_add(&f->fs->base.replaced, 1u);
        status = zg_error(ZGPU_ERR_IO, "'%s' was replaced while being read (reopened for want of file "
                          "descriptors); read again", f->path);
    }
    if (status == ZGPU_OK) status = read_full(rfd, out, offset, length, f->path);
    zg_fd_close(rfd);
    return status;
}

static void fs_close_file(zg_store_file *f) {
    if (!f) return;
    if (f->listed) {
        pthread_mutex_lock(&kept_mu);
        if (f->prev) f->prev->next = f->next;
        else kept_files = f->next;
        if (f->next) f->next->prev = f->prev;
        pthread_mutex_unlock(&kept_mu);
    }
    if (f->fd >= 0) zg_fd_close_kept(f->fd);
    pthread_mutex_destroy(&f->mu);
    free(f->key);
    free(f);
}

/* ---- writes ---- */

/* mkdir -p for the parent directories of path (unconfined stores, and a confined store's root): all before its
 * last '/'. */
static zgpu_status make_parents(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path) return ZGPU_OK;
    char dir[ZG_PATH_MAX], failed[ZG_PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    const int e = zg_make_dirs(dir, 0777, failed, sizeof failed);
    return e ? zg_error(ZGPU_ERR_IO, "cannot create directory for '%s': %s", failed, strerror(e)) : ZGPU_OK;
}

/* The directory that holds key, as a brief O_PATH descriptor (*dir = -1 when absent and !create), and the key's
 * last component. create: makes the directories (confined: each beneath the root, links refused as reads are). */
static zgpu_status open_parent(fs_store *fs, const char *key, char *path, int create, int *dir, const char **name) {
    *dir = -1;
    const char *slash = strrchr(key, '/');
    *name = slash ? slash + 1 : key;
    char parent[ZG_PATH_MAX];
    const size_t plen = slash ? (size_t)(slash - key) : 0;
    memcpy(parent, key, plen);
    parent[plen] = '\0';
    char ppath[ZG_PATH_MAX];
    ZG_FORWARD(zg_store_fs_path(&fs->base, parent, ppath));
    /* the directory is there for every chunk after the first of its row: one open, where creating it first cost a
     * mkdir for each component of the path (15,000 chunk writes of test_roundtrip: 79,000 mkdirs, 74,000 failing);
     * confined, the open refuses links leaving the store as the walk below does */
    if (create) {
        *dir = counted_open(fs, parent, ppath, O_PATH | O_DIRECTORY);
        if (*dir >= 0) return ZGPU_OK;
        if (errno != ENOENT) return open_error(fs, parent, ppath, errno);
        if (!fs->confine) {
            ZG_FORWARD(make_parents(path));
        } else {
            char rootpath[ZG_PATH_MAX];
            snprintf(rootpath, sizeof rootpath, "%s/", fs->base.root);
            ZG_FORWARD(make_parents(rootpath));
            int cur = counted_open(fs, "", fs->base.root, O_PATH | O_DIRECTORY);
            if (cur < 0) return open_error(fs, "", fs->base.root, errno);
            for (size_t i = 0; i <= plen && plen > 0; i++) {
                if (i < plen && parent[i] != '/') continue;
                const char *comp = parent;
                for (size_t k = i; k > 0; k--)
                    if (parent[k - 1] == '/') { comp = parent + k; break; }
                char c[ZG_PATH_MAX];
                snprintf(c, sizeof c, "%.*s", (int)(parent + i - comp), comp);
                if (mkdirat(cur, c, 0777) != 0 && errno != EEXIST) {
                    int e = errno;
                    zg_fd_close(cur);
                    return zg_error(ZGPU_ERR_IO, "cannot create directory '%s/%.*s': %s", fs->base.root, (int)i, parent, strerror(e));
                }
                char prefix[ZG_PATH_MAX];
                snprintf(prefix, sizeof prefix, "%.*s", (int)i, parent);
                int next = counted_open(fs, prefix, ppath, O_PATH | O_DIRECTORY);
                int e = errno;
                zg_fd_close(cur);
                if (next < 0) {
                    char where[ZG_PATH_MAX + 8];
                    snprintf(where, sizeof where, "%s/%s", fs->base.root, prefix);
                    return open_error(fs, prefix, where, e);
                }
                cur = next;
            }
            *dir = cur;
            return ZGPU_OK;
        }
    }
    *dir = counted_open(fs, parent, ppath, O_PATH | O_DIRECTORY);
    if (*dir < 0) {
        if (!create && (errno == ENOENT || errno == ENOTDIR)) return ZGPU_OK;
        return open_error(fs, parent, ppath, errno);
    }
    return ZGPU_OK;
}

static uint64_t hash_key(const char *key) { /* FNV-1a */
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) h = (h ^ *p) * 1099511628211ull;
    return h;
}

/* Whether this handle already cleaned the directory of hash h; records it if not. */
static int cleaned_before(fs_store *fs, uint64_t h) {
    h |= 1; /* 0 marks an empty slot */
    pthread_mutex_lock(&fs->mu);
    if (2 * (fs->n_cleaned + 1) > fs->cap_cleaned) {
        size_t cap = fs->cap_cleaned ? 2 * fs->cap_cleaned : 64;
        uint64_t *t = calloc(cap, sizeof *t);
        if (!t) { /* cannot record: skip the cleaning rather than repeat it */
            pthread_mutex_unlock(&fs->mu);
            return 1;
        }
        for (size_t i = 0; i < fs->cap_cleaned; i++) {
            uint64_t v = fs->cleaned[i];
            if (!v) continue;
            size_t k = (size_t)(v % cap);
            while (t[k]) k = (k + 1) % cap;
            t[k] = v;
        }
        free(fs->cleaned);
        fs->cleaned = t;
        fs->cap_cleaned = cap;
    }
    size_t k = (size_t)(h % fs->cap_cleaned);
    while (fs->cleaned[k] && fs->cleaned[k] != h) k = (k + 1) % fs->cap_cleaned;
    int seen = fs->cleaned[k] == h;
    if (!seen) {
        fs->cleaned[k] = h;
        fs->n_cleaned++;
    }
    pthread_mutex_unlock(&fs->mu);
    return seen;
}

/* The first write of this handle into a directory removes the temporaries that killed writers left there:
 * those older than TMP_STALE_S whose flock is free (a live writer holds its temporary's until the rename).
 * Best effort: nothing here fails the write. */
static void clean_leftovers(fs_store *fs, const char *key, int dir) {
    const char *slash = strrchr(key, '/');
    char parent[ZG_PATH_MAX];
    snprintf(parent, sizeof parent, "%.*s", slash ? (int)(slash - key) : 0, key);
    if (cleaned_before(fs, hash_key(parent))) return;
    int dfd = zg_fd_openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (dfd < 0) return;
    DIR *d = fdopendir(dfd);
    if (!d) {
        zg_fd_close(dfd);
        return;
    }
    const time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ZG_FS_TMP_MARK)) continue;
        struct stat st;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        if (now - st.st_mtime < TMP_STALE_S) continue;
        int fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) unlinkat(dfd, e->d_name, 0);
        close(fd);
    }
    closedir(d);
    zg_fd_forget();
}

static atomic_uint tmp_counter;

static zgpu_status fs_set(zg_store *s, const char *key, const void *data, size_t n) {
    fs_store *fs = (fs_store *)s;
    char path[ZG_PATH_MAX], tmp[ZG_PATH_MAX + 64], tmpname[ZG_PATH_MAX + 64];
    ZG_FORWARD(zg_store_fs_path(s, key, path));
    if (!key[0]) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "store '%s': cannot write a value at the root", s->root);
    int dir;
    const char *name;
    ZG_FORWARD(open_parent(fs, key, path, 1, &dir, &name));
    clean_leftovers(fs, key, dir);
    /* a fresh name (O_EXCL, no link followed): nothing already there — a FIFO, a device, a link — is opened */
    int fd = -1;
    zg_fd_waiter fw = zg_fd_waiter_start();
    for (;;) {
        snprintf(tmpname, sizeof tmpname, "%s" ZG_FS_TMP_MARK "%ld-%u", name, (long)getpid(), atomic_fetch_add(&tmp_counter, 1));
        snprintf(tmp, sizeof tmp, "%s" ZG_FS_TMP_MARK "%s", path, strstr(tmpname, ZG_FS_TMP_MARK) + strlen(ZG_FS_TMP_MARK));
        fd = zg_fd_openat(dir, tmpname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0) break;
        if (errno == EEXIST) continue; /* a leftover of an earlier process with this pid */
        if (zg_fd_out_of(errno) && zg_fd_wait(&fw)) continue;
        int e = errno;
        zg_fd_close(dir);
        if (zg_fd_out_of(e)) return zg_fd_no_fds_error(tmp);
        return zg_error(ZGPU_ERR_IO, "cannot create '%s': %s", tmp, strerror(e));
    }
    flock(fd, LOCK_EX | LOCK_NB); /* marks it live for clean_leftovers; a new file: nobody else holds it */
    const uint8_t *p = data;
    size_t left = n;
    zgpu_status st = ZGPU_OK;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            st = zg_error(ZGPU_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
            break;
        }
        p += w;
        left -= (size_t)w;
    }
    /* closed before the rename: close reports deferred write errors (NFS). The flock goes with it; the
     * temporary's fresh mtime keeps clean_leftovers off it until the rename, microseconds later. */
    int c = close(fd);
    zg_fd_forget();
    if (st == ZGPU_OK && c != 0) st = zg_error(ZGPU_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
    if (st == ZGPU_OK && renameat(dir, tmpname, dir, name) != 0) {
        int e = errno;
        struct stat sb;
        if ((e == EISDIR || e == ENOTEMPTY || e == EEXIST) && fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
            st = not_regular(path, sb.st_mode);
        else
            st = zg_error(ZGPU_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(e));
    }
    if (st != ZGPU_OK) unlinkat(dir, tmpname, 0);
    zg_fd_close(dir);
    return st;
}

static zgpu_status fs_erase(zg_store *s, const char *key) {
    fs_store *fs = (fs_store *)s;
    char path[ZG_PATH_MAX];
    ZG_FORWARD(zg_store_fs_path(s, key, path));
    int dir;
    const char *name;
    ZG_FORWARD(open_parent(fs, key, path, 0, &dir, &name));
    if (dir < 0) return ZGPU_OK;
    zgpu_status st = ZGPU_OK;
    if (unlinkat(dir, name, 0) != 0 && errno != ENOENT) {
        int e = errno;
        struct stat sb;
        if (e == EISDIR && fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) == 0) st = not_regular(path, sb.st_mode);
        else st = zg_error(ZGPU_ERR_IO, "cannot delete '%s': %s", path, strerror(e));
    }
    zg_fd_close(dir);
    return st;
}

/* Removes name in dir and, for a directory, everything below it; links are removed, never followed. */
static zgpu_status remove_at(int dir, const char *name, const char *path) {
    struct stat st;
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? ZGPU_OK : zg_error(ZGPU_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        if (unlinkat(dir, name, 0) != 0 && errno != ENOENT)
            return zg_error(ZGPU_ERR_IO, "cannot delete '%s': %s", path, strerror(errno));
        return ZGPU_OK;
    }
    int fd = zg_fd_openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd < 0) return zg_error(ZGPU_ERR_IO, "cannot open directory '%s': %s", path, strerror(errno));
    DIR *d = fdopendir(fd);
    if (!d) {
        zg_fd_close(fd);
        return zg_error(ZGPU_ERR_IO, "cannot open directory '%s': %s", path, strerror(errno));
    }
    struct dirent *e;
    zgpu_status status = ZGPU_OK;
    while (status == ZGPU_OK && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char child[ZG_PATH_MAX];
        if (snprintf(child, sizeof child, "%s/%s", path, e->d_name) >= (int)sizeof child)
            status = zg_error(ZGPU_ERR_IO, "path too long under '%s'", path);
        else status = remove_at(fd, e->d_name, child);
    }
    closedir(d);
    zg_fd_forget();
    if (status != ZGPU_OK) return status;
    if (unlinkat(dir, name, AT_REMOVEDIR) != 0) return zg_error(ZGPU_ERR_IO, "cannot remove '%s': %s", path, strerror(errno));
    return ZGPU_OK;
}

static zgpu_status fs_erase_prefix(zg_store *s, const char *prefix) {
    fs_store *fs = (fs_store *)s;
    char path[ZG_PATH_MAX];
    ZG_FORWARD(zg_store_fs_path(s, prefix, path));
    if (prefix[0]) {
        int dir;
        const char *name;
        ZG_FORWARD(open_parent(fs, prefix, path, 0, &dir, &name));
        if (dir < 0) return ZGPU_OK;
        zgpu_status st = remove_at(dir, name, path);
        zg_fd_close(dir);
        return st;
    }
    /* "" = the root's contents, keeping the root itself (and the lock file other writers may hold) */
    zg_list_entry *entries;
    size_t n;
    ZG_FORWARD(s->vt->list(s, "", &entries, &n));
    zgpu_status st = ZGPU_OK;
    for (size_t i = 0; i < n && st == ZGPU_OK; i++) st = fs_erase_prefix(s, entries[i].name);
    zg_list_free(entries, n);
    return st;
}

/* ---- listing ---- */

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const zg_list_entry *)a)->name, ((const zg_list_entry *)b)->name);
}

static int is_own_name(const char *name) {
    return strstr(name, ZG_FS_TMP_MARK) != NULL || !strcmp(name, ZG_FS_LOCK_NAME);
}

/* What a listed name is: 0 = skip it (vanished; confined: a link leading outside). */
static int stat_child(fs_store *fs, int dfd, const char *prefix, const char *name, struct stat *sb) {
    if (!fs->confine) return fstatat(dfd, name, sb, 0) == 0;
    if (fstatat(dfd, name, sb, AT_SYMLINK_NOFOLLOW) != 0) return 0;
    if (!S_ISLNK(sb->st_mode)) return 1;
    char key[ZG_PATH_MAX];
    if (snprintf(key, sizeof key, "%s%s%s", prefix, prefix[0] ? "/" : "", name) >= (int)sizeof key) return 0;
    int fd = counted_open(fs, key, key, O_PATH);
    if (fd < 0) return 0;
    int ok = fstat(fd, sb) == 0;
    zg_fd_close(fd);
    return ok;
}

static zgpu_status fs_list(zg_store *s, const char *prefix, zg_list_entry **entries, size_t *n) {
    fs_store *fs = (fs_store *)s;
    char path[ZG_PATH_MAX];
    *entries = NULL;
    *n = 0;
    ZG_FORWARD(zg_store_fs_path(s, prefix, path));
    int dfd = counted_open(fs, prefix, path, O_RDONLY | O_DIRECTORY);
    if (dfd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return ZGPU_OK;
        if (errno == EXDEV || zg_fd_out_of(errno)) return open_error(fs, prefix, path, errno);
        return zg_error(ZGPU_ERR_IO, "cannot list '%s': %s", path, strerror(errno));
    }
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        zg_fd_close(dfd);
        return zg_error(ZGPU_ERR_IO, "cannot list '%s': %s", path, strerror(e));
    }
    size_t cap = 0;
    zg_list_entry *list = NULL;
    struct dirent *e;
    zgpu_status st = ZGPU_OK;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || is_own_name(e->d_name)) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            zg_list_entry *grown = realloc(list, cap * sizeof *list);
            if (!grown) { st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory listing '%s'", path); break; }
            list = grown;
        }
        struct stat sb;
        if (!stat_child(fs, dfd, prefix, e->d_name, &sb)) continue;
        list[*n].name = strdup(e->d_name);
        if (!list[*n].name) { st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory listing '%s'", path); break; }
        list[*n].is_dir = S_ISDIR(sb.st_mode);
        list[*n].size = (uint64_t)sb.st_size;
        (*n)++;
    }
    closedir(d);
    zg_fd_forget();
    if (st != ZGPU_OK) {
        zg_list_free(list, *n);
        *n = 0;
        return st;
    }
    if (*n) qsort(list, *n, sizeof *list, cmp_entry);
    *entries = list;
    return ZGPU_OK;
}

/* ---- write locks ---- */

/* The lock file, opened (created) at the first lock of this handle and kept. */
static zgpu_status lock_file(fs_store *fs, int *out) {
    pthread_mutex_lock(&fs->mu);
    zgpu_status st = ZGPU_OK;
    if (fs->lock_fd < 0) {
        char path[ZG_PATH_MAX];
        st = zg_store_fs_path(&fs->base, ZG_FS_LOCK_NAME, path);
        const int flags = O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
        int fd = -1, e = 0;
        if (st == ZGPU_OK) {
            if (fs->confine) {
                int root = root_fd(fs);
                fd = root < 0 ? -1 : openat(root, ZG_FS_LOCK_NAME, flags, 0666);
            } else {
                fd = open(path, flags, 0666);
            }
            e = errno;
            struct stat sb;
            if (fd >= 0 && fstat(fd, &sb) != 0) sb.st_mode = 0;
            if (fd >= 0 && !S_ISREG(sb.st_mode)) {
                close(fd);
                fd = -1;
                st = not_regular(path, sb.st_mode);
            } else if (fd < 0) {
                st = zg_error(ZGPU_ERR_IO, "cannot create the lock file '%s' that serialises writers of this array: %s",
                              path, strerror(e));
            }
        }
        if (fd >= 0) {
            fs->lock_fd = fd;
            zg_fd_kept_add();
        }
    }
    *out = fs->lock_fd;
    pthread_mutex_unlock(&fs->mu);
    return st;
}

/* A lock request (F_WRLCK / F_UNLCK) for the byte of the lock file at `slot`. */
static struct flock one_byte(short type, uint64_t slot) {
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)slot;
    fl.l_len = 1;
    return fl;
}

static zgpu_status fs_lock(zg_store *s, const char *key, zg_store_lock *lk) {
    fs_store *fs = (fs_store *)s;
    lk->held = 0;
    int fd;
    ZG_FORWARD(lock_file(fs, &fd));
    /* one byte per object, below 2^31 so that any server's lock ranges hold it; objects whose hashes collide
     * share a byte and merely wait for each other */
    lk->slot = hash_key(key) & 0x7fffffffu;
    pthread_mutex_lock(&fs->stripes[lk->slot % N_STRIPES]); /* this handle's threads share one description */
    struct flock fl = one_byte(F_WRLCK, lk->slot);
    while (fcntl(fd, F_OFD_SETLKW, &fl) != 0) {
        if (errno == EINTR) continue;
        int e = errno;
        pthread_mutex_unlock(&fs->stripes[lk->slot % N_STRIPES]);
        return zg_error(ZGPU_ERR_IO, "cannot lock '%s/" ZG_FS_LOCK_NAME "' for writing '%s': %s", s->root, key, strerror(e));
    }
    lk->held = 1;
    return ZGPU_OK;
}

static void fs_unlock(zg_store *s, zg_store_lock *lk) {
    fs_store *fs = (fs_store *)s;
    if (!lk->held) return;
    struct flock fl = one_byte(F_UNLCK, lk->slot);
    fcntl(fs->lock_fd, F_OFD_SETLK, &fl);
    pthread_mutex_unlock(&fs->stripes[lk->slot % N_STRIPES]);
    lk->held = 0;
}

static void fs_destroy(zg_store *s) {
    fs_store *fs = (fs_store *)s;
    int root = atomic_load(&fs->root_fd);
    if (root >= 0) zg_fd_close_kept(root);
    if (fs->lock_fd >= 0) zg_fd_close_kept(fs->lock_fd);
    for (int i = 0; i < N_STRIPES; i++) pthread_mutex_destroy(&fs->stripes[i]);
    pthread_mutex_destroy(&fs->mu);
    free(fs->cleaned);
    free(s->root);
    free(fs);
}

static const zg_store_vtable fs_vtable = {
    .name = "file",
    .get = fs_get,
    .get_range = fs_get_range,
    .size = fs_size,
    .set = fs_set,
    .erase = fs_erase,
    .erase_prefix = fs_erase_prefix,
    .list = fs_list,
    .destroy = fs_destroy,
    .open_file = fs_open_file,
    .read_file = fs_read_file,
    .close_file = fs_close_file,
    .lock = fs_lock,
    .unlock = fs_unlock,
};

/* A forked child has only the forking thread: no kept file is being read there (fd_budget.c resets its counts). */
static void kept_after_fork_child(void) { pthread_mutex_init(&kept_mu, NULL); }

static void register_atfork(void) {
    zg_fd_budget_init(evict_one);
    pthread_atfork(NULL, NULL, kept_after_fork_child);
}

/* store.h: the real path, or the longest existing ancestor's and the rest resolved by name (what does not exist
 * yet is no link), so that the path an array is created at names what later opens of it find. */
char *zg_store_fs_id(const char *root) {
    char *abs = NULL;
    if (root[0] == '/') {
        abs = strdup(root);
    } else {
        char *cwd = getcwd(NULL, 0);
        size_t n = cwd ? strlen(cwd) + strlen(root) + 2 : 0;
        if (cwd && (abs = malloc(n))) snprintf(abs, n, "%s/%s", cwd, root);
        if (!cwd) abs = strdup(root); /* no working directory: the name as given */
        free(cwd);
    }
    if (!abs) return NULL;
    char *real = realpath(abs, NULL);
    size_t cut = strlen(abs);
    while (!real && cut > 0) {
        while (cut > 0 && abs[--cut] != '/') {}
        char c = abs[cut];
        abs[cut] = '\0';
        real = realpath(cut ? abs : "/", NULL);
        abs[cut] = c;
    }
    if (!real) return abs; /* not even "/" resolved (a relative name without a working directory) */
    const char *rest = abs + cut;
    char *out = malloc(strlen(real) + strlen(rest) + 2);
    if (out) {
        strcpy(out, real);
        size_t n = strlen(out);
        while (*rest) {
            while (*rest == '/') rest++;
            size_t k = strcspn(rest, "/");
            if (k == 0 || (k == 1 && rest[0] == '.')) {
            } else if (k == 2 && rest[0] == '.' && rest[1] == '.') {
                while (n > 1 && out[n - 1] != '/') n--;
                if (n > 1) n--; /* the '/' before the dropped name, except the root's */
            } else {
                if (n > 1) out[n++] = '/';
                memcpy(out + n, rest, k);
                n += k;
            }
            out[n] = '\0';
            rest += k;
        }
    }
    free(real);
    free(abs);
    return out;
}

zgpu_status zg_store_fs_open_confined(const char *root, int confine, zg_store **out) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_atfork);
    *out = NULL;
    if (!root || !root[0]) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "empty path");
    size_t len = strlen(root);
    while (len > 1 && root[len - 1] == '/') len--;
    if (len >= ZG_PATH_MAX - 256) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "path too long: %s", root);
    fs_store *fs = calloc(1, sizeof *fs);
    char *r = fs ? strndup(root, len) : NULL;
    char *id = r ? zg_store_fs_id(r) : NULL;
    if (!id) { free(r); free(fs); return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory"); }
    fs->base.vt = &fs_vtable;
    fs->base.root = r;
    fs->base.id = id;
    fs->confine = confine != 0;
    atomic_init(&fs->root_fd, -1);
    fs->lock_fd = -1;
    pthread_mutex_init(&fs->mu, NULL);
    for (int i = 0; i < N_STRIPES; i++) pthread_mutex_init(&fs->stripes[i], NULL);
    *out = &fs->base;
    return ZGPU_OK;
}

zgpu_status zg_store_fs_open(const char *root, zg_store **out) { return zg_store_fs_open_confined(root, 0, out); }

