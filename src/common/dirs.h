/* mkdir -p, for the stores, the staged writes and the caches that make their directories. */
#ifndef ZG_COMMON_DIRS_H
#define ZG_COMMON_DIRS_H
#include <stddef.h>
#include <sys/types.h>

/** Makes directory dir and its missing parents with `mode`: dir itself first, its parents only where the mkdir says
 *  they are missing (a new directory beside existing ones is one mkdir, not one a component). Returns 0 (dir there,
 *  made or not), or the errno of the first mkdir that failed from the top down (a component that is a file: the path
 *  of that component's child), that path then in failed[0, failed_n) (failed may be NULL). */
int zg_make_dirs(const char *dir, mode_t mode, char *failed, size_t failed_n);

#endif
