/* Filesystem store: a key is a path below the root directory. Writes go to a temporary file in the same
 * directory and are renamed into place, so a crash never leaves a half-written chunk or metadata file. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "common/status.h"

zgpu_status zg_store_fs_path(const zg_store *s, const char *key, char *out) {
    int n = key[0] ? snprintf(out, ZG_PATH_MAX, "%s/%s", s->root, key) : snprintf(out, ZG_PATH_MAX, "%s", s->root);
    if (n < 0 || n >= ZG_PATH_MAX) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "path too long: %s/%s", s->root, key);
    return ZGPU_OK;
}

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

/* Opens key for reading; *fd = -1 and ZGPU_OK when absent, and also when the process is out of descriptors
 * and no_fd is given (*no_fd = 1 then). */
static zgpu_status fs_open_read(const zg_store *s, const char *key, char *path, int *fd, uint64_t *size,
                                int *no_fd) {
    ZG_FORWARD(zg_store_fs_path(s, key, path));
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return ZGPU_OK;
        if (no_fd && (errno == EMFILE || errno == ENFILE)) {
            *no_fd = 1;
            return ZGPU_OK;
        }
        return zg_error(ZGPU_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int is_dir = S_ISDIR(st.st_mode);
        close(*fd);
        *fd = -1;
        if (is_dir) return ZGPU_OK; /* a directory is not a value */
        return zg_error(ZGPU_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    }
    *size = (uint64_t)st.st_size;
    return ZGPU_OK;
}

static zgpu_status fs_get(zg_store *s, const char *key, zg_buf *out, int *found) {
    char path[ZG_PATH_MAX];
    int fd;
    uint64_t size = 0;
    *found = 0;
    ZG_FORWARD(fs_open_read(s, key, path, &fd, &size, NULL));
    if (fd < 0) return ZGPU_OK;
    zgpu_status st = zg_buf_reserve(out, (size_t)size);
    if (st == ZGPU_OK) st = read_full(fd, out->data, 0, size, path);
    close(fd);
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
    ZG_FORWARD(fs_open_read(s, key, path, &fd, &size, NULL));
    if (fd < 0) return ZGPU_OK;
    zgpu_status st = ZGPU_OK;
    if (from_end) {
        if (offset > size) st = zg_error(ZGPU_ERR_CORRUPT_DATA, "'%s' has %llu bytes, fewer than the %llu needed",
                                         path, (unsigned long long)size, (unsigned long long)offset);
        else offset = size - offset;
    }
    if (st == ZGPU_OK) st = check_range(path, size, offset, length);
    if (st == ZGPU_OK) st = read_full(fd, out, offset, length, path);
    close(fd);
    if (st == ZGPU_OK) *found = 1;
    return st;
}

struct zg_store_file {
    int fd;
    uint64_t size;
    char path[]; /* for messages */
};

static zgpu_status fs_size(zg_store *s, const char *key, uint64_t *size, int *found);

/* store.h's open_file. Out of descriptors (other reads holding theirs) it keeps no file: presence and size as
 * fs_size finds them, and the caller reads ranges by key. */
static zgpu_status fs_open_file(zg_store *s, const char *key, zg_store_file **f, uint64_t *size, int *found) {
    char path[ZG_PATH_MAX];
    int fd, no_fd = 0;
    *f = NULL;
    *found = 0;
    *size = 0;
    ZG_FORWARD(fs_open_read(s, key, path, &fd, size, &no_fd));
    if (no_fd) return fs_size(s, key, size, found);
    if (fd < 0) return ZGPU_OK;
    const size_t n = strlen(path) + 1;
    zg_store_file *file = malloc(sizeof *file + n);
    if (!file) {
        close(fd);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory opening '%s'", path);
    }
    file->fd = fd;
    file->size = *size;
    memcpy(file->path, path, n);
    *f = file;
    *found = 1;
    return ZGPU_OK;
}

static zgpu_status fs_read_file(zg_store_file *f, uint64_t offset, uint64_t length, uint8_t *out) {
    ZG_FORWARD(check_range(f->path, f->size, offset, length));
    return read_full(f->fd, out, offset, length, f->path);
}

static void fs_close_file(zg_store_file *f) {
    if (!f) return;
    close(f->fd);
    free(f);
}

static zgpu_status fs_size(zg_store *s, const char *key, uint64_t *size, int *found) {
    char path[ZG_PATH_MAX];
    ZG_FORWARD(zg_store_fs_path(s, key, path));
    struct stat st;
    *found = 0;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return ZGPU_OK;
        return zg_error(ZGPU_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) return ZGPU_OK;
    *size = (uint64_t)st.st_size;
    *found = 1;
    return ZGPU_OK;
}

/* mkdir -p for the parent directories of path. */
static zgpu_status make_parents(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        int r = mkdir(path, 0777);
        int e = errno;
        *p = '/';
        if (r != 0 && e != EEXIST) return zg_error(ZGPU_ERR_IO, "cannot create directory for '%s': %s", path, strerror(e));
    }
    return ZGPU_OK;
}

static atomic_uint tmp_counter;

static zgpu_status fs_set(zg_store *s, const char *key, const void *data, size_t n) {
    char path[ZG_PATH_MAX], tmp[ZG_PATH_MAX + 64];
    ZG_FORWARD(zg_store_fs_path(s, key, path));
    ZG_FORWARD(make_parents(path));
    snprintf(tmp, sizeof tmp, "%s.zgpu-tmp-%ld-%u", path, (long)getpid(), atomic_fetch_add(&tmp_counter, 1));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return zg_error(ZGPU_ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
    const uint8_t *p = data;
    size_t left = n;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            return zg_error(ZGPU_ERR_IO, "cannot write '%s': %s", tmp, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    if (close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        return zg_error(ZGPU_ERR_IO, "cannot write '%s': %s", tmp, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return zg_error(ZGPU_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(e));
    }
    return ZGPU_OK;
}

static zgpu_status fs_erase(zg_store *s, const char *key) {
    char path[ZG_PATH_MAX];
    ZG_FORWARD(zg_store_fs_path(s, key, path));
    if (unlink(path) != 0 && errno != ENOENT && errno != ENOTDIR && errno != EISDIR)
        return zg_error(ZGPU_ERR_IO, "cannot delete '%s': %s", path, strerror(errno));
    return ZGPU_OK;
}

static zgpu_status remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? ZGPU_OK : zg_error(ZGPU_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (!d) return zg_error(ZGPU_ERR_IO, "cannot open directory '%s': %s", path, strerror(errno));
        struct dirent *e;
        zgpu_status status = ZGPU_OK;
        while (status == ZGPU_OK && (e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char child[ZG_PATH_MAX];
            if (snprintf(child, sizeof child, "%s/%s", path, e->d_name) >= (int)sizeof child)
                status = zg_error(ZGPU_ERR_IO, "path too long under '%s'", path);
            else status = remove_tree(child);
        }
        closedir(d);
        if (status != ZGPU_OK) return status;
        if (rmdir(path) != 0) return zg_error(ZGPU_ERR_IO, "cannot remove '%s': %s", path, strerror(errno));
        return ZGPU_OK;
    }
    if (unlink(path) != 0) return zg_error(ZGPU_ERR_IO, "cannot delete '%s': %s", path, strerror(errno));
    return ZGPU_OK;
}

static zgpu_status fs_erase_prefix(zg_store *s, const char *prefix) {
    char path[ZG_PATH_MAX];
    ZG_FORWARD(zg_store_fs_path(s, prefix, path));
    if (prefix[0]) return remove_tree(path);
    /* "" = the root's contents, keeping the root itself */
    zg_list_entry *entries;
    size_t n;
    ZG_FORWARD(s->vt->list(s, "", &entries, &n));
    zgpu_status st = ZGPU_OK;
    for (size_t i = 0; i < n && st == ZGPU_OK; i++) st = fs_erase_prefix(s, entries[i].name);
    zg_list_free(entries, n);
    return st;
}

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const zg_list_entry *)a)->name, ((const zg_list_entry *)b)->name);
}

static zgpu_status fs_list(zg_store *s, const char *prefix, zg_list_entry **entries, size_t *n) {
    char path[ZG_PATH_MAX];
    *entries = NULL;
    *n = 0;
    ZG_FORWARD(zg_store_fs_path(s, prefix, path));
    DIR *d = opendir(path);
    if (!d) {
        if (errno == ENOENT || errno == ENOTDIR) return ZGPU_OK;
        return zg_error(ZGPU_ERR_IO, "cannot list '%s': %s", path, strerror(errno));
    }
    size_t cap = 0;
    zg_list_entry *list = NULL;
    struct dirent *e;
    zgpu_status st = ZGPU_OK;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || strstr(e->d_name, ".zgpu-tmp-")) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            zg_list_entry *grown = realloc(list, cap * sizeof *list);
            if (!grown) { st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory listing '%s'", path); break; }
            list = grown;
        }
        char child[ZG_PATH_MAX];
        struct stat sb;
        if (snprintf(child, sizeof child, "%s/%s", path, e->d_name) >= (int)sizeof child) continue;
        if (stat(child, &sb) != 0) continue; /* vanished meanwhile */
        list[*n].name = strdup(e->d_name);
        if (!list[*n].name) { st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory listing '%s'", path); break; }
        list[*n].is_dir = S_ISDIR(sb.st_mode);
        list[*n].size = (uint64_t)sb.st_size;
        (*n)++;
    }
    closedir(d);
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
    free(s->root);
    free(s);
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
};

zgpu_status zg_store_fs_open(const char *root, zg_store **out) {
    *out = NULL;
    if (!root || !root[0]) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "empty path");
    size_t len = strlen(root);
    while (len > 1 && root[len - 1] == '/') len--;
    if (len >= ZG_PATH_MAX - 256) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "path too long: %s", root);
    zg_store *s = calloc(1, sizeof *s);
    char *r = s ? strndup(root, len) : NULL;
    if (!r) { free(s); return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory"); }
    s->vt = &fs_vtable;
    s->root = r;
    *out = s;
    return ZGPU_OK;
}

void zg_store_free(zg_store *s) {
    if (s) s->vt->destroy(s);
}

void zg_list_free(zg_list_entry *entries, size_t n) {
    for (size_t i = 0; i < n; i++) free(entries[i].name);
    free(entries);
}
