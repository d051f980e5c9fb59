/* The filesystem store's parts (fs.c: paths, opens, reads, kept files, listing; fs_write.c: writes and their
 * locks): its struct and the helpers both use. Internal to src/store. */
#ifndef ZG_STORE_FS_INTERNAL_H
#define ZG_STORE_FS_INTERNAL_H
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "store/store.h"

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

/** The confined store's root directory (O_PATH), opened once; -1 with errno. */
int zg_fs_root_fd(fs_store *fs);
/** Opens a key (by its path, or beneath the root when confined), counted in the descriptor budget and waiting for
 *  one when the process is out of them; -1 with errno (EXDEV: the key leaves a confined store). */
int zg_fs_counted_open(fs_store *fs, const char *key, const char *path, int flags);
/** "'path' is a directory / a FIFO / ..." for a value that is not a regular file. */
zgpu_status zg_fs_not_regular(const char *path, mode_t m);
/** The error of a failed open of key (errno e). */
zgpu_status zg_fs_open_error(fs_store *fs, const char *key, const char *path, int e);

/* fs_write.c: store.h's set, erase, erase_prefix, lock and unlock */
zgpu_status zg_fs_set(zg_store *s, const char *key, const void *data, size_t n);
zgpu_status zg_fs_erase(zg_store *s, const char *key);
zgpu_status zg_fs_erase_prefix(zg_store *s, const char *prefix);
zgpu_status zg_fs_lock(zg_store *s, const char *key, zg_store_lock *lk);
void zg_fs_unlock(zg_store *s, zg_store_lock *lk);

#endif
