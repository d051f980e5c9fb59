/* The filesystem store's writes (see fs.c): each value written to a temporary in its directory, flocked until it is
 * renamed into place, so a crash never leaves a half-written chunk or metadata file and the next writer in that
 * directory removes a killed writer's leftovers; erasing; and the write locks, one byte per object of the root's
 * lock file (open file description locks), plus in-process stripes for threads sharing one handle. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "common/dirs.h"
#include "common/status.h"
#include "store/fd_budget.h"
#include "store/fs_internal.h"

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
        *dir = zg_fs_counted_open(fs, parent, ppath, O_PATH | O_DIRECTORY);
        if (*dir >= 0) return ZGPU_OK;
        if (errno != ENOENT) return zg_fs_open_error(fs, parent, ppath, errno);
        if (!fs->confine) {
            ZG_FORWARD(make_parents(path));
        } else {
            char rootpath[ZG_PATH_MAX];
            snprintf(rootpath, sizeof rootpath, "%s/", fs->base.root);
            ZG_FORWARD(make_parents(rootpath));
            int cur = zg_fs_counted_open(fs, "", fs->base.root, O_PATH | O_DIRECTORY);
            if (cur < 0) return zg_fs_open_error(fs, "", fs->base.root, errno);
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
                int next = zg_fs_counted_open(fs, prefix, ppath, O_PATH | O_DIRECTORY);
                int e = errno;
                zg_fd_close(cur);
                if (next < 0) {
                    char where[ZG_PATH_MAX + 8];
                    snprintf(where, sizeof where, "%s/%s", fs->base.root, prefix);
                    return zg_fs_open_error(fs, prefix, where, e);
                }
                cur = next;
            }
            *dir = cur;
            return ZGPU_OK;
        }
    }
    *dir = zg_fs_counted_open(fs, parent, ppath, O_PATH | O_DIRECTORY);
    if (*dir < 0) {
        if (!create && (errno == ENOENT || errno == ENOTDIR)) return ZGPU_OK;
        return zg_fs_open_error(fs, parent, ppath, errno);
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

zgpu_status zg_fs_set(zg_store *s, const char *key, const void *data, size_t n) {
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
            st = zg_fs_not_regular(path, sb.st_mode);
        else
            st = zg_error(ZGPU_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(e));
    }
    if (st != ZGPU_OK) unlinkat(dir, tmpname, 0);
    zg_fd_close(dir);
    return st;
}

zgpu_status zg_fs_erase(zg_store *s, const char *key) {
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
        if (e == EISDIR && fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) == 0) st = zg_fs_not_regular(path, sb.st_mode);
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

zgpu_status zg_fs_erase_prefix(zg_store *s, const char *prefix) {
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
    for (size_t i = 0; i < n && st == ZGPU_OK; i++) st = zg_fs_erase_prefix(s, entries[i].name);
    zg_list_free(entries, n);
    return st;
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
                int root = zg_fs_root_fd(fs);
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
                st = zg_fs_not_regular(path, sb.st_mode);
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

zgpu_status zg_fs_lock(zg_store *s, const char *key, zg_store_lock *lk) {
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

void zg_fs_unlock(zg_store *s, zg_store_lock *lk) {
    fs_store *fs = (fs_store *)s;
    if (!lk->held) return;
    struct flock fl = one_byte(F_UNLCK, lk->slot);
    fcntl(fs->lock_fd, F_OFD_SETLK, &fl);
    pthread_mutex_unlock(&fs->stripes[lk->slot % N_STRIPES]);
    lk->held = 0;
}
