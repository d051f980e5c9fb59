/* Staged creation: a new array or group is built in a hidden directory beside its destination and swapped in
 * with renames, so an interruption leaves the old node intact or the new one complete (never a mix).
 *
 * Names, for a destination DIR/NAME and a writer's token T (pid and 64 random bits):
 *   DIR/.NAME.zgpu-lock-T    the writer's lock file, flock'ed while it lives (the kernel drops it on a crash)
 *   DIR/.NAME.zgpu-stage-T   the new tree while it is built; after an exchange, the old tree on its way out
 *   DIR/.NAME.zgpu-old-T     the old tree, where renameat2(RENAME_EXCHANGE) is unsupported (two renames)
 * A token whose lock file can be locked (or is missing) belongs to a dead writer: the next writer of NAME, and
 * an opener that finds NAME absent, clean it up; an old tree whose destination is absent is renamed back
 * (the writer died between the two renames). */
#ifndef ZG_STAGE_H
#define ZG_STAGE_H
#include "zgpu.h"

typedef struct zg_stage {
    char *dir;   /* the destination's parent directory (symbolic links resolved) */
    char *name;  /* the destination's last component */
    char *dest;  /* dir/name */
    char *path;  /* the staging directory */
    char *lock;  /* the lock file */
    char token[48];
    int overwrite; /* the creator's choice, for a commit that comes later */
    int in_place;  /* the destination is an empty directory that cannot be swapped (a mount point, or its parent
                    * is not writable): the array is built in it, and only its metadata waits for the commit */
    int lock_fd;
} zg_stage;

/* What is at a destination. */
enum { ZG_DEST_ABSENT, ZG_DEST_EMPTY_DIR, ZG_DEST_NODE, ZG_DEST_OTHER_DIR, ZG_DEST_NOT_DIR };

/** Splits `path` into its real parent directory and last component (malloc'ed). make_parents: creates missing
 *  parent directories. A path naming "/" (or ending in "." / ".." without existing) is ZGPU_ERR_INVALID_ARGUMENT. */
zgpu_status zg_stage_resolve(const char *path, int make_parents, char **dir, char **name);
/** What is at dir/name (ZG_DEST_*): a Zarr node is a directory holding zarr.json, .zarray or .zgroup. */
zgpu_status zg_stage_dest_state(const char *dir, const char *name, int *state);
/** Removes what dead writers of dir/name left, restoring an old tree whose destination is absent. Best effort:
 *  what cannot be removed stays (hidden) for a later writer. Returns how many leftovers were dealt with. */
int zg_stage_clean(const char *dir, const char *name);
/** For openers: when nothing is at `path`, restores an old tree that a writer killed mid-swap left beside it.
 *  Returns 1 when something was restored. */
int zg_stage_recover(const char *path);
/** What every creator of a node at `path` does first: resolves it (zg_stage_resolve, making parents), removes
 *  what killed writers of it left (zg_stage_clean) and finds what is there (*state, ZG_DEST_*). Refuses what
 *  is not a directory (ZGPU_ERR_IO), a node when !overwrite (ZGPU_ERR_EXISTS), and a node or directory to
 *  replace at the root of a mount (ZGPU_ERR_IO: renames cannot move it). *replace: overwrite and a node or a
 *  non-empty directory is there. On success *dir and *name are the caller's to free. `where` names the node. */
zgpu_status zg_stage_prepare(const char *path, int overwrite, const char *where, char **dir, char **name, int *state,
                             int *replace);
/** Takes a lock and makes an empty staging directory for dir/name. *out: zg_stage_discard / zg_stage_free. */
zgpu_status zg_stage_begin(const char *dir, const char *name, zg_stage **out);
/** 1 if dir/name is the root of a mount (renames cannot move it). */
int zg_stage_is_mount_root(const char *dir, const char *name);
/** A stage that is the (empty) destination itself, for when zg_stage_begin cannot work: path = dest, no lock,
 *  the commit only ends it, discarding empties the destination again. */
zgpu_status zg_stage_begin_in_place(const char *dir, const char *name, zg_stage **out);
/** Swaps the staging directory in at dir/name, then removes the old tree (a failure to remove it leaves it
 *  hidden beside the destination; the commit still succeeds). overwrite = 0: ZGPU_ERR_EXISTS if a node or a
 *  non-empty directory is there. The stage stays valid (and can be discarded) after a failure. `where` names
 *  the node in messages. */
zgpu_status zg_stage_commit(zg_stage *s, int overwrite, const char *where);
/** Removes the staging directory (if not committed), releases the lock and frees s. Accepts NULL. */
void zg_stage_discard(zg_stage *s);
/** 1 if `name` is a staging or old directory of a writer (".NAME.zgpu-stage-T" / ".NAME.zgpu-old-T"): not a
 *  member of its group. */
int zg_stage_is_leftover(const char *name);
/** Tests only: 1 forces the two-rename swap where RENAME_EXCHANGE would work (process-wide). */
void zg_stage_force_fallback(int on);
/** Tests only: the process kills itself (SIGKILL) in a commit: 1 between the two renames of the fallback,
 *  2 once the new tree is in place, before the old one is deleted; 0 (default) never. */
void zg_stage_test_crash(int where);

#endif
