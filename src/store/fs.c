/* Filesystem store: a key is a path below the root directory. This file: paths and how keys are opened (confined
 * stores beneath their root), reads, files kept open for many ranges, listing, and the store's set-up; writes and
 * their locks are in fs_write.c (a temporary renamed into place, so a crash never leaves a half-written value).
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

#include "common/dirs.h"
#include "common/status.h"
#include "store/fd_budget.h"
#include "store/fs_internal.h"
#include "store/store.h"

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
int zg_fs_root_fd(fs_store *fs) {
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
    int root = zg_fs_root_fd(fs);
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
int zg_fs_counted_open(fs_store *fs, const char *key, const char *path, int flags) {
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

zgpu_status zg_fs_not_regular(const char *path, mode_t m) {
    return zg_error(ZGPU_ERR_IO, "'%s' is %s", path, kind_of(m));
}

/* The error of a failed open of key (errno e). */
zgpu_status zg_fs_open_error(fs_store *fs, const char *key, const char *path, int e) {
    if (e == EXDEV && fs->confine)
        return zg_error(ZGPU_ERR_IO, "'%s': key '%s' leads outside the store through a symbolic link; refused because "
                        "the store '%s' is confined (confine_to_store)", path, key, fs->base.root);
    if (zg_fd_out_of(e)) return zg_fd_no_fds_error(path);
    struct stat st;
    if (e == ENXIO && lstat(path, &st) == 0) return zg_fs_not_regular(path, st.st_mode); /* a socket */
    return zg_error(ZGPU_ERR_IO, "cannot open '%s': %s", path, strerror(e));
}

/* Opens key for reading a stored value. *fd = -1 and ZGPU_OK when absent; out of descriptors with no_fd
 * given: *no_fd = 1 (without waiting). Anything but a regular file is an error. st_out (NULL allowed): its stat. */
static zgpu_status open_value(fs_store *fs, const char *key, char *path, int *fd, uint64_t *size, int *no_fd,
                              struct stat *st_out) {
    *fd = -1;
    ZG_FORWARD(zg_store_fs_path(&fs->base, key, path));
    /* (with no_fd, a shortage is reported rather than waited out) */
    *fd = no_fd ? counted_open_once(fs, key, path, O_RDONLY) : zg_fs_counted_open(fs, key, path, O_RDONLY);
    if (*fd < 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR) return ZGPU_OK;
        if (no_fd && zg_fd_out_of(e)) {
            *no_fd = 1;
            return ZGPU_OK;
        }
        return zg_fs_open_error(fs, key, path, e);
    }
    struct stat st;
    zgpu_status status = ZGPU_OK;
    if (fstat(*fd, &st) != 0) status = zg_error(ZGPU_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode)) status = zg_fs_not_regular(path, st.st_mode);
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
        int fd = zg_fs_counted_open(fs, key, path, O_PATH);
        r = fd < 0 ? -1 : fstat(fd, st);
        if (fd >= 0) {
            int e = errno;
            zg_fd_close(fd);
            errno = e;
        }
    }
    if (r != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return ZGPU_OK;
        return zg_fs_open_error(fs, key, path, errno);
    }
    if (!S_ISREG(st->st_mode)) return zg_fs_not_regular(path, st->st_mode);
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
    int rfd = zg_fs_counted_open(f->fs, f->key, f->path, O_RDONLY);
    if (rfd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) {
            atomic_fetch_add(&f->fs->base.replaced, 1u);
            return zg_error(ZGPU_ERR_IO, "'%s' was removed while being read; read again", f->path);
        }
        return zg_fs_open_error(f->fs, f->key, f->path, errno);
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
    int fd = zg_fs_counted_open(fs, key, key, O_PATH);
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
    int dfd = zg_fs_counted_open(fs, prefix, path, O_RDONLY | O_DIRECTORY);
    if (dfd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return ZGPU_OK;
        if (errno == EXDEV || zg_fd_out_of(errno)) return zg_fs_open_error(fs, prefix, path, errno);
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
    .set = zg_fs_set,
    .erase = zg_fs_erase,
    .erase_prefix = zg_fs_erase_prefix,
    .list = fs_list,
    .destroy = fs_destroy,
    .open_file = fs_open_file,
    .read_file = fs_read_file,
    .close_file = fs_close_file,
    .lock = zg_fs_lock,
    .unlock = zg_fs_unlock,
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

