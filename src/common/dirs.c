/* mkdir -p (see dirs.h). */
#include "common/dirs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* p (writable, restored before returning): mkdir, and where a component is missing (ENOENT) or not a directory
 * (ENOTDIR: the walk up then names the first path that fails) its parent first, a component deep a call. */
static int make(char *p, mode_t mode, char *failed, size_t failed_n) {
    if (mkdir(p, mode) == 0) return 0;
    int e = errno;
    char *slash = e == ENOENT || e == ENOTDIR ? strrchr(p, '/') : NULL;
    if (slash && slash != p) {
        *slash = '\0';
        e = make(p, mode, failed, failed_n);
        *slash = '/';
        if (e) return e;
        e = mkdir(p, mode) == 0 ? 0 : errno;
    }
    if (e == EEXIST) return 0;
    if (failed && failed_n) snprintf(failed, failed_n, "%s", p);
    return e;
}

int zg_make_dirs(const char *dir, mode_t mode, char *failed, size_t failed_n) {
    char p[4096];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
        if (failed && failed_n) snprintf(failed, failed_n, "%s", dir);
        return ENAMETOOLONG;
    }
    return make(p, mode, failed, failed_n);
}
