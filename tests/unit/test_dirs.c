/* zg_make_dirs (common/dirs.h): a new tree, a directory beside existing ones, one already there, a trailing slash,
 * the mode, and a component that is a file (its errno and the path that failed). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "common/dirs.h"

static int is_dir(const char *p, mode_t mode) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == mode;
}

int main(void) {
    char root[] = "/tmp/zgpu_test_dirs_XXXXXX";
    if (!mkdtemp(root)) return 2;
    umask(022);
    char p[512], q[512], failed[512];
    snprintf(p, sizeof p, "%s/a/b/c", root);
    CHECK(zg_make_dirs(p, 0700, failed, sizeof failed) == 0);
    CHECK(is_dir(p, 0700));
    snprintf(q, sizeof q, "%s/a", root);
    CHECK(is_dir(q, 0700)); /* (the parents made with the same mode) */
    snprintf(q, sizeof q, "%s/a/b/d/", root); /* beside c, with a trailing slash */
    CHECK(zg_make_dirs(q, 0755, NULL, 0) == 0);
    CHECK(is_dir(q, 0755));
    CHECK(zg_make_dirs(p, 0700, NULL, 0) == 0); /* already there */
    CHECK(zg_make_dirs("/", 0755, NULL, 0) == 0);
    snprintf(q, sizeof q, "%s/a/file", root);
    FILE *f = fopen(q, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    snprintf(p, sizeof p, "%s/a/file/x/y", root);
    failed[0] = 0;
    const int e = zg_make_dirs(p, 0755, failed, sizeof failed);
    CHECK_MSG(e == ENOTDIR, "errno %d", e);
    snprintf(q, sizeof q, "%s/a/file/x", root);
    CHECK_MSG(!strcmp(failed, q), "failed at '%s'", failed);
    zt_remove_dir(root);
    TEST_MAIN_END();
}
