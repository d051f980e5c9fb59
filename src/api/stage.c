/* Staged creation and the atomic swap (stage.h). */
#include "api/stage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#include "cache/chunk_cache.h"
#include "common/dirs.h"
#include "common/status.h"
#include "store/store.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static atomic_int force_fallback, crash_at;
void zg_stage_force_fallback(int on) { atomic_store(&force_fallback, on); }
void zg_stage_test_crash(int where) { atomic_store(&crash_at, where); }
static void test_crash(int where) {
    if (atomic_load(&crash_at) == where) raise(SIGKILL);
}

/* renameat2 through the system call (glibc before 2.28 has no wrapper); -1 with ENOSYS where there is none. */
static int rename2(const char *from, const char *to, unsigned flags) {
#if defined(__linux__) && defined(SYS_renameat2)
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, flags);
#else
    (void)from;
    (void)to;
    (void)flags;
    errno = ENOSYS;
    return -1;
#endif
}

static char *join(const char *dir, const char *prefix, const char *name, const char *suffix) {
    size_t n = strlen(dir) + strlen(prefix) + strlen(name) + strlen(suffix) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s%s%s", strcmp(dir, "/") ? dir : "", prefix, name, suffix);
    return p;
}

/* mkdir -p of dir. */
static zgpu_status make_dirs(const char *dir) {
    char failed[4096];
    const int e = zg_make_dirs(dir, 0777, failed, sizeof failed);
    return e ? zg_error(ZGPU_ERR_IO, "cannot create directory '%s': %s", failed, strerror(e)) : ZGPU_OK;
}

zgpu_status zg_stage_resolve(const char *path, int make_parents, char **dir, char **name) {
    *dir = *name = NULL;
    if (!path || !path[0]) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "empty path");
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') len--;
    char *p = strndup(path, len);
    if (!p) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    /* An existing destination: its real place, so that a link to an array stages beside the array itself. */
    char *real = realpath(p, NULL);
    char *full = real ? real : p;
    char *slash = strrchr(full, '/');
    const char *base = slash ? slash + 1 : full;
    zgpu_status st = ZGPU_OK;
    if (!base[0] || !strcmp(base, ".") || !strcmp(base, ".."))
        st = zg_error(ZGPU_ERR_INVALID_ARGUMENT, "'%s': cannot create a node there (name it by its own name)", path);
    if (st == ZGPU_OK) {
        *name = strdup(base);
        *dir = slash ? (slash == full ? strdup("/") : strndup(full, (size_t)(slash - full))) : strdup(".");
        if (!*name || !*dir) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    if (st == ZGPU_OK && !real && make_parents) st = make_dirs(*dir);
    free(real);
    free(p);
    if (st != ZGPU_OK) {
        free(*dir);
        free(*name);
        *dir = *name = NULL;
    }
    return st;
}

static int is_file(const char *dir, const char *name) {
    char path[PATH_MAX + 16];
    struct stat sb;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return 0;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

zgpu_status zg_stage_dest_state(const char *dir, const char *name, int *state) {
    char *dest = join(dir, "", name, "");
    if (!dest) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    struct stat sb;
    zgpu_status st = ZGPU_OK;
    if (lstat(dest, &sb) != 0) {
        if (errno == ENOENT) *state = ZG_DEST_ABSENT;
        else st = zg_error(ZGPU_ERR_IO, "cannot stat '%s': %s", dest, strerror(errno));
    } else if (!S_ISDIR(sb.st_mode)) {
        *state = ZG_DEST_NOT_DIR;
    } else if (is_file(dest, "zarr.json") || is_file(dest, ".zarray") || is_file(dest, ".zgroup")) {
        *state = ZG_DEST_NODE;
    } else {
        DIR *d = opendir(dest);
        if (!d) {
            st = zg_error(ZGPU_ERR_IO, "cannot list '%s': %s", dest, strerror(errno));
        } else {
            *state = ZG_DEST_EMPTY_DIR;
            struct dirent *e;
            while ((e = readdir(d)))
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                    *state = ZG_DEST_OTHER_DIR;
                    break;
                }
            closedir(d);
        }
    }
    free(dest);
    return st;
}

/* rm -rf, going on past what cannot be removed (a read-only subdirectory): the first failure is returned. */
static zgpu_status remove_tree(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return errno == ENOENT ? ZGPU_OK : zg_error(ZGPU_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) {
        if (unlink(path) != 0 && errno != ENOENT)
            return zg_error(ZGPU_ERR_IO, "cannot delete '%s': %s", path, strerror(errno));
        return ZGPU_OK;
    }
    zgpu_status first = ZGPU_OK;
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char *child = join(path, "", e->d_name, "");
            zgpu_status st = child ? remove_tree(child) : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
            if (first == ZGPU_OK) first = st;
            free(child);
        }
        closedir(d);
    } else {
        first = zg_error(ZGPU_ERR_IO, "cannot open directory '%s': %s", path, strerror(errno));
    }
    if (rmdir(path) != 0 && errno != ENOENT && first == ZGPU_OK)
        first = zg_error(ZGPU_ERR_IO, "cannot remove '%s': %s", path, strerror(errno));
    return first;
}

/* Tokens are "<pid>-<16 hex digits>": anything else after ".NAME.zgpu-stage-" is not ours (another node's name
 * may contain ".zgpu-"). */
static int valid_token(const char *t) {
    size_t i = 0;
    while (t[i] >= '0' && t[i] <= '9') i++;
    if (i == 0 || i > 10 || t[i] != '-') return 0;
    const char *h = t + i + 1;
    for (i = 0; i < 16; i++)
        if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f'))) return 0;
    return h[16] == '\0';
}

/* Takes the lock file `lock` for cleaning or writing: 0 with *fd held, -1 when another process holds it (or it
 * was replaced meanwhile), -2 when it cannot be opened or made (errno says why). create: make it, which must
 * not exist (O_EXCL, so two takers never share one); else open it, or make it if absent. */
static int take_lock(const char *lock, int create, int *fd) {
    int f = open(lock, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0), 0644);
    if (f < 0 && !create && errno == ENOENT) f = open(lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (f < 0) return errno == EEXIST ? -1 : -2;
    struct stat a, b;
    /* Still the file at that name once locked: a cleaner unlinks a lock file after taking it, so a taker that
     * locked the unlinked file would otherwise think itself alone. */
    if (flock(f, LOCK_EX | LOCK_NB) != 0 || fstat(f, &a) != 0 || stat(lock, &b) != 0 || a.st_ino != b.st_ino ||
        a.st_dev != b.st_dev) {
        close(f);
        return -1;
    }
    *fd = f;
    return 0;
}

/* Drops what the decoded-chunk caches hold below `path` (cache/chunk_cache.h): its tree was replaced. */
static void invalidate_tree(const char *path) {
    if (!path || !zg_chunk_cache_active()) return; /* no cache in the process: not even a realpath */
    char *id = zg_store_fs_id(path);
    zg_chunk_cache_invalidate_prefix_all(id, ""); /* NULL (out of memory): every entry */
    free(id);
}

/* Cleans one dead writer's leftovers: 1 if it was dead (and handled), 0 if alive or unreachable. */
static int clean_token(const char *dir, const char *name, const char *token) {
    char *lock = join(dir, ".", name, ".zgpu-lock-"), *full_lock = NULL, *old = NULL, *stage = NULL, *dest = NULL;
    int fd = -1, done = 0;
    if (!lock) return 0;
    size_t n = strlen(lock) + strlen(token) + 1;
    full_lock = malloc(n);
    old = join(dir, ".", name, ".zgpu-old-");
    stage = join(dir, ".", name, ".zgpu-stage-");
    dest = join(dir, "", name, "");
    if (full_lock && old && stage && dest) {
        snprintf(full_lock, n, "%s%s", lock, token);
        char *o = malloc(strlen(old) + strlen(token) + 1), *s = malloc(strlen(stage) + strlen(token) + 1);
        if (o && s && take_lock(full_lock, 0, &fd) == 0) {
            sprintf(o, "%s%s", old, token);
            sprintf(s, "%s%s", stage, token);
            struct stat sb;
            if (lstat(o, &sb) == 0) {
                /* The writer died between its two renames: the old tree goes back if the new one is not there. */
                if (lstat(dest, &sb) != 0 && errno == ENOENT) {
                    if (rename(o, dest) != 0) remove_tree(o);
                    else invalidate_tree(dest); /* an older tree is back */
                } else {
                    remove_tree(o);
                }
            }
            remove_tree(s);
            unlink(full_lock);
            close(fd);
            done = 1;
        }
        free(o);
        free(s);
    }
    free(lock);
    free(full_lock);
    free(old);
    free(stage);
    free(dest);
    return done;
}

int zg_stage_clean(const char *dir, const char *name) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t plen = strlen(name) + 7;
    char *prefix = malloc(plen + 1);
    char **tokens = NULL;
    size_t nt = 0, cap = 0;
    if (prefix) {
        snprintf(prefix, plen + 1, ".%s.zgpu-", name);
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strncmp(e->d_name, prefix, plen)) continue;
            const char *rest = e->d_name + plen, *t = NULL;
            if (!strncmp(rest, "stage-", 6)) t = rest + 6;
            else if (!strncmp(rest, "lock-", 5)) t = rest + 5;
            else if (!strncmp(rest, "old-", 4)) t = rest + 4;
            if (!t || !valid_token(t)) continue;
            int seen = 0;
            for (size_t i = 0; i < nt && !seen; i++) seen = !strcmp(tokens[i], t);
            if (seen) continue;
            if (nt == cap) {
                size_t c = cap ? cap * 2 : 8;
                char **g = realloc(tokens, c * sizeof *g);
                if (!g) break;
                tokens = g;
                cap = c;
            }
            if (!(tokens[nt] = strdup(t))) break;
            nt++;
        }
    }
    closedir(d);
    int cleaned = 0;
    for (size_t i = 0; i < nt; i++) {
        cleaned += clean_token(dir, name, tokens[i]);
        free(tokens[i]);
    }
    free(tokens);
    free(prefix);
    return cleaned;
}

int zg_stage_recover(const char *path) {
    struct stat sb;
    if (!path || !path[0] || lstat(path, &sb) == 0 || errno != ENOENT) return 0;
    char *dir = NULL, *name = NULL;
    int restored = 0;
    char *saved = malloc(ZG_ERRMSG_MAX);
    if (saved) zg_error_save(saved); /* resolving must not replace the caller's message */
    if (zg_stage_resolve(path, 0, &dir, &name) == ZGPU_OK) {
        zg_stage_clean(dir, name);
        restored = lstat(path, &sb) == 0;
    }
    if (saved) zg_error_restore(saved);
    free(saved);
    free(dir);
    free(name);
    return restored;
}

/* 64 bits that differ between processes and calls (names, not secrets). */
static uint64_t random_bits(void) {
    static atomic_uint_fast64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 42) ^
                 (atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15ull);
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

zgpu_status zg_stage_begin(const char *dir, const char *name, zg_stage **out) {
    *out = NULL;
    zg_stage *s = calloc(1, sizeof *s);
    if (!s) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    s->lock_fd = -1;
    s->dir = strdup(dir);
    s->name = strdup(name);
    s->dest = join(dir, "", name, "");
    if (!s->dir || !s->name || !s->dest) {
        zg_stage_discard(s);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    for (int attempt = 0; attempt < 16 && s->lock_fd < 0; attempt++) {
        char token[48];
        snprintf(token, sizeof token, "%ld-%016llx", (long)getpid(), (unsigned long long)random_bits());
        free(s->lock);
        s->lock = join(dir, ".", name, ".zgpu-lock-");
        char *l = s->lock ? malloc(strlen(s->lock) + strlen(token) + 1) : NULL;
        char *p = join(dir, ".", name, ".zgpu-stage-");
        char *sp = p ? malloc(strlen(p) + strlen(token) + 1) : NULL;
        if (!l || !sp) {
            free(l);
            free(p);
            free(sp);
            zg_stage_discard(s);
            return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        }
        sprintf(l, "%s%s", s->lock, token);
        sprintf(sp, "%s%s", p, token);
        free(p);
        free(s->lock);
        s->lock = l;
        free(s->path);
        s->path = sp;
        int r = take_lock(s->lock, 1, &s->lock_fd);
        if (r == 0) {
            snprintf(s->token, sizeof s->token, "%s", token);
            break;
        }
        if (r == -2) {
            zgpu_status st = zg_error(ZGPU_ERR_IO, "cannot create the lock file '%s': %s", s->lock, strerror(errno));
            free(s->path);
            s->path = NULL; /* nothing of ours to remove */
            zg_stage_discard(s);
            return st;
        }
    }
    if (s->lock_fd < 0) {
        free(s->path);
        s->path = NULL;
        zg_stage_discard(s);
        return zg_error(ZGPU_ERR_IO, "cannot take a lock file beside '%s/%s'", dir, name);
    }
    if (mkdir(s->path, 0777) != 0) {
        zgpu_status st = zg_error(ZGPU_ERR_IO, "cannot create the staging directory '%s': %s", s->path, strerror(errno));
        free(s->path);
        s->path = NULL;
        zg_stage_discard(s);
        return st;
    }
    *out = s;
    return ZGPU_OK;
}

int zg_stage_is_leftover(const char *name) {
    static const char *marks[] = {".zgpu-stage-", ".zgpu-old-"};
    if (name[0] != '.') return 0;
    for (int k = 0; k < 2; k++) {
        size_t ml = strlen(marks[k]);
        for (const char *p = strstr(name + 1, marks[k]); p; p = strstr(p + 1, marks[k]))
            if (valid_token(p + ml)) return 1;
    }
    return 0;
}

int zg_stage_is_mount_root(const char *dir, const char *name) {
    char *dest = join(dir, "", name, "");
    if (!dest) return 0;
    int root = 0;
#if defined(STATX_ATTR_MOUNT_ROOT)
    struct statx sx;
    if (statx(AT_FDCWD, dest, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) == 0 &&
        (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)) {
        free(dest);
        return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
    }
#endif
    struct stat a, b; /* older kernels: another device than the parent's (misses bind mounts of one device) */
    root = lstat(dest, &a) == 0 && stat(dir, &b) == 0 && a.st_dev != b.st_dev;
    free(dest);
    return root;
}

zgpu_status zg_stage_begin_in_place(const char *dir, const char *name, zg_stage **out) {
    *out = NULL;
    zg_stage *s = calloc(1, sizeof *s);
    if (!s) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    s->lock_fd = -1;
    s->in_place = 1;
    s->dir = strdup(dir);
    s->name = strdup(name);
    s->dest = join(dir, "", name, "");
    s->path = s->dest ? strdup(s->dest) : NULL;
    if (!s->dir || !s->name || !s->path) {
        free(s->path);
        s->path = NULL;
        zg_stage_discard(s);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    *out = s;
    return ZGPU_OK;
}

/* Empties directory `path` (keeping it): an in-place stage discarded. */
static void empty_dir(const char *path) {
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *child = join(path, "", e->d_name, "");
        if (child) remove_tree(child);
        free(child);
    }
    closedir(d);
}

/* The end of a successful swap: the old tree (at `old`) goes, then the lock. Its metadata goes first, so that
 * whatever cannot be removed (a read-only subdirectory) is no longer a node that a group listing would show. */
static void finish(zg_stage *s, const char *old) {
    if (old) {
        static const char *meta[] = {"zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"};
        for (int i = 0; i < 5; i++) {
            char *p = join(old, "", meta[i], "");
            if (p) unlink(p);
            free(p);
        }
        remove_tree(old); /* what remains is hidden, and cleaned by the next writer */
    }
    free(s->path);
    s->path = NULL;
    unlink(s->lock);
    close(s->lock_fd);
    s->lock_fd = -1;
}

static zgpu_status swap_in(zg_stage *s, int overwrite, const char *where) {
    if (s->in_place) { /* the array is already there: its metadata, written by the caller, completed it */
        free(s->path);
        s->path = NULL;
        return ZGPU_OK;
    }
    /* The destination may change under us (another writer): look again when a rename says it did. */
    for (int attempt = 0; attempt < 8; attempt++) {
        int state;
        ZG_FORWARD(zg_stage_dest_state(s->dir, s->name, &state));
        if (state == ZG_DEST_NOT_DIR)
            return zg_error(ZGPU_ERR_IO, "%s: '%s' exists and is not a directory", where, s->dest);
        if (!overwrite && state == ZG_DEST_NODE)
            return zg_error(ZGPU_ERR_EXISTS, "%s: a Zarr node already exists there", where);
        if (!overwrite && state == ZG_DEST_OTHER_DIR)
            return zg_error(ZGPU_ERR_EXISTS, "%s: '%s' is a directory that is not empty (and holds no Zarr node); "
                            "overwrite replaces it", where, s->dest);
        if (state == ZG_DEST_ABSENT) {
            int r = rename2(s->path, s->dest, RENAME_NOREPLACE);
            if (r != 0 && (errno == EINVAL || errno == ENOSYS)) r = rename(s->path, s->dest);
            if (r == 0) {
                finish(s, NULL);
                return ZGPU_OK;
            }
            if (errno == EEXIST || errno == ENOTEMPTY) continue;
            return zg_error(ZGPU_ERR_IO, "%s: cannot rename '%s' to '%s': %s", where, s->path, s->dest, strerror(errno));
        }
        if (!atomic_load(&force_fallback)) {
            if (rename2(s->path, s->dest, RENAME_EXCHANGE) == 0) {
                test_crash(2);
                char *old = strdup(s->path); /* the old tree now has the staging name */
                finish(s, old ? old : NULL);
                free(old);
                return ZGPU_OK;
            }
            if (errno == ENOENT) continue;
            if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP && errno != EOPNOTSUPP)
                return zg_error(ZGPU_ERR_IO, "%s: cannot exchange '%s' and '%s': %s", where, s->path, s->dest,
                                strerror(errno));
        }
        /* No RENAME_EXCHANGE here: the old tree steps aside under a name tied to our lock, so that if we die
         * before the second rename, the next opener or writer puts it back (zg_stage_clean). */
        const char *token = s->token;
        char *old = join(s->dir, ".", s->name, ".zgpu-old-");
        char *o = old ? malloc(strlen(old) + strlen(token) + 1) : NULL;
        if (!o) {
            free(old);
            return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        }
        sprintf(o, "%s%s", old, token);
        free(old);
        if (rename(s->dest, o) != 0) {
            int e = errno;
            free(o);
            if (e == ENOENT) continue;
            return zg_error(ZGPU_ERR_IO, "%s: cannot move '%s' aside: %s", where, s->dest, strerror(e));
        }
        test_crash(1);
        if (rename(s->path, s->dest) != 0) {
            int e = errno;
            rename(o, s->dest); /* put the old tree back */
            free(o);
            return zg_error(ZGPU_ERR_IO, "%s: cannot rename '%s' to '%s': %s", where, s->path, s->dest, strerror(e));
        }
        test_crash(2);
        finish(s, o);
        free(o);
        return ZGPU_OK;
    }
    return zg_error(ZGPU_ERR_IO, "%s: '%s' kept changing while it was being replaced", where, s->dest);
}

zgpu_status zg_stage_commit(zg_stage *s, int overwrite, const char *where) {
    if (!s || !s->path) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "%s: nothing staged to commit", where);
    char *staged = strdup(s->path); /* the staged handle's store, while it has this name */
    zgpu_status st = swap_in(s, overwrite, where);
    if (st == ZGPU_OK) {
        /* the new tree is in place: what the caches hold of the old one (or of the stage, under its name) goes,
         * and reads that fetched the old tree's chunks cannot put them (cache/chunk_cache.h) */
        invalidate_tree(s->dest);
        invalidate_tree(staged);
    }
    free(staged);
    return st;
}

void zg_stage_discard(zg_stage *s) {
    if (!s) return;
    if (s->path && s->in_place) empty_dir(s->path);
    else if (s->path) remove_tree(s->path);
    if (s->path) invalidate_tree(s->path); /* what the staged handle read is gone */
    if (s->lock_fd >= 0) {
        unlink(s->lock);
        close(s->lock_fd);
    }
    free(s->dir);
    free(s->name);
    free(s->dest);
    free(s->path);
    free(s->lock);
    free(s);
}

zgpu_status zg_stage_prepare(const char *path, int overwrite, const char *where, char **dir, char **name, int *state,
                             int *replace) {
    *state = ZG_DEST_ABSENT;
    *replace = 0;
    ZG_FORWARD(zg_stage_resolve(path, 1, dir, name));
    zg_stage_clean(*dir, *name); /* what killed writers of this path left */
    zgpu_status st = zg_stage_dest_state(*dir, *name, state);
    if (st == ZGPU_OK && *state == ZG_DEST_NOT_DIR)
        st = zg_error(ZGPU_ERR_IO, "%s: something that is not a directory is there", where);
    if (st == ZGPU_OK && *state == ZG_DEST_NODE && !overwrite)
        st = zg_error(ZGPU_ERR_EXISTS, "%s: a Zarr node already exists there", where);
    *replace = overwrite && (*state == ZG_DEST_NODE || *state == ZG_DEST_OTHER_DIR);
    if (st == ZGPU_OK && *replace && zg_stage_is_mount_root(*dir, *name))
        st = zg_error(ZGPU_ERR_IO, "%s: the path is a mount point, which cannot be replaced atomically: empty it, "
                      "or write below it", where);
    if (st != ZGPU_OK) {
        free(*dir);
        free(*name);
        *dir = *name = NULL;
    }
    return st;
}
