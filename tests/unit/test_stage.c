/* Staged creation and the atomic swap (src/api/stage.c): overwrite, staged arrays and their commit, the
 * two-rename fallback, recovery of a writer killed between its renames, cleaning of dead writers' leftovers
 * (and never a live writer's), groups. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/stage.h"
#include "test.h"
#include "zgpu.h"

static char root[256];
static zgpu_context *ctx;

static const char *doc_i32(int n) {
    static char buf[512];
    snprintf(buf, sizeof buf,
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [%d], \"data_type\": \"int32\","
             " \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [4]}},"
             " \"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": -1,"
             " \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]}",
             n);
    return buf;
}

/* Writes n int32 values base, base+1, ... to path (flags as zgpu_array_create); commits; closes. */
static int make(const char *path, int n, int base, int flags) {
    zgpu_array *a = NULL;
    zgpu_status s = zgpu_array_create(ctx, path, doc_i32(n), flags, &a);
    if (s != ZGPU_OK) return -1;
    int32_t v[64];
    for (int i = 0; i < n; i++) v[i] = base + i;
    uint64_t st = 0, cnt = (uint64_t)n;
    s = zgpu_array_write(a, &st, &cnt, v, NULL);
    if (s == ZGPU_OK) s = zgpu_array_commit(a);
    zgpu_array_close(a);
    return s == ZGPU_OK ? 0 : -1;
}

/* The first value of the array at path, or -1000 when it cannot be opened; *n its length. */
static int first_value(const char *path, int *n) {
    zgpu_array *a = NULL;
    if (zgpu_array_open(ctx, path, &a) != ZGPU_OK) return -1000;
    uint64_t shape[1];
    zgpu_array_shape(a, shape);
    int32_t v[64] = {0};
    uint64_t st = 0;
    zgpu_status s = zgpu_array_read(a, &st, shape, v, NULL);
    zgpu_array_close(a);
    if (n) *n = (int)shape[0];
    return s == ZGPU_OK ? v[0] : -1000;
}

/* Entries of root other than `keep` (and "." / ".."). */
static int extra_entries(const char *keep) {
    DIR *d = opendir(root);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && (!keep || strcmp(e->d_name, keep))) n++;
    if (d) closedir(d);
    return n;
}

static void rm_rf(const char *p) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'", p, p);
    if (system(cmd) != 0) fprintf(stderr, "rm -rf %s failed\n", p);
}

static void path_of(char *out, const char *name) { snprintf(out, 512, "%s/%s", root, name); }

static void test_overwrite(int fallback) {
    zg_stage_force_fallback(fallback);
    char p[512];
    path_of(p, "a");
    rm_rf(p);
    CHECK(make(p, 8, 100, 0) == 0);
    CHECK(first_value(p, NULL) == 100);
    /* overwrite = 1: the empty new array replaces the old one at once */
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_create(ctx, p, doc_i32(8), ZGPU_CREATE_OVERWRITE, &a));
    CHECK(first_value(p, NULL) == -1);
    zgpu_array_close(a);
    CHECK(extra_entries("a") == 0);
    /* staged: others see the old array until the commit */
    CHECK(make(p, 8, 200, 0) == -1); /* exists */
    CHECK(make(p, 8, 200, ZGPU_CREATE_OVERWRITE) == 0);
    CHECK_OK(zgpu_array_create(ctx, p, doc_i32(12), ZGPU_CREATE_OVERWRITE | ZGPU_CREATE_STAGED, &a));
    int32_t v[12];
    for (int i = 0; i < 12; i++) v[i] = 300 + i;
    uint64_t st = 0, cnt = 12;
    CHECK_OK(zgpu_array_write(a, &st, &cnt, v, NULL));
    int n = 0;
    CHECK(first_value(p, &n) == 200 && n == 8);
    int32_t back[12] = {0};
    CHECK_OK(zgpu_array_read(a, &st, &cnt, back, NULL)); /* the staged handle reads its own writes */
    CHECK(back[11] == 311);
    CHECK_OK(zgpu_array_commit(a));
    CHECK(first_value(p, &n) == 300 && n == 12);
    CHECK_OK(zgpu_array_commit(a)); /* again: nothing to do */
    v[0] = 7; /* after the commit the handle writes at the path */
    cnt = 1;
    CHECK_OK(zgpu_array_write(a, &st, &cnt, v, NULL));
    CHECK(first_value(p, NULL) == 7);
    zgpu_array_close(a);
    CHECK(extra_entries("a") == 0);
    /* staged and closed without a commit: discarded */
    CHECK_OK(zgpu_array_create(ctx, p, doc_i32(4), ZGPU_CREATE_OVERWRITE | ZGPU_CREATE_STAGED, &a));
    cnt = 4;
    CHECK_OK(zgpu_array_write(a, &st, &cnt, v, NULL));
    zgpu_array_close(a);
    CHECK(first_value(p, &n) == 7 && n == 12);
    CHECK(extra_entries("a") == 0);
    /* staged without overwrite over a node: refused at once */
    CHECK_STATUS(zgpu_array_create(ctx, p, doc_i32(4), ZGPU_CREATE_STAGED, &a), ZGPU_ERR_EXISTS);
    CHECK_STATUS(zgpu_array_create(ctx, p, doc_i32(4), 4, &a), ZGPU_ERR_INVALID_ARGUMENT);
    rm_rf(p);
    /* staged onto a new path: nothing there until the commit */
    CHECK_OK(zgpu_array_create(ctx, p, doc_i32(4), ZGPU_CREATE_STAGED, &a));
    int kind = -1;
    CHECK_OK(zgpu_node_kind(p, &kind));
    CHECK(kind == 0);
    /* another writer creates the path meanwhile: the commit refuses, the stage stays until closed */
    CHECK(make(p, 4, 50, 0) == 0);
    CHECK_STATUS(zgpu_array_commit(a), ZGPU_ERR_EXISTS);
    zgpu_array_close(a);
    CHECK(first_value(p, NULL) == 50);
    CHECK(extra_entries("a") == 0);
    rm_rf(p);
    zg_stage_force_fallback(0);
}

/* Writes an old array under a leftover name as a writer killed between its two renames leaves it. */
static void test_recover(void) {
    char p[512], old[512], lock[512], tmp[512];
    path_of(p, "r");
    path_of(tmp, "r-src");
    rm_rf(p);
    CHECK(make(tmp, 8, 40, 0) == 0);
    path_of(old, ".r.zgpu-old-4242-00000000deadbeef");
    CHECK(rename(tmp, old) == 0);
    /* the dead writer's lock file, unlocked, and its stage holding the complete new array */
    path_of(lock, ".r.zgpu-lock-4242-00000000deadbeef");
    int fd = open(lock, O_CREAT | O_WRONLY, 0644);
    CHECK(fd >= 0);
    close(fd);
    path_of(tmp, ".r.zgpu-stage-4242-00000000deadbeef");
    CHECK(make(tmp, 8, 90, 0) == 0);
    /* an opener puts the old array back; every leftover goes */
    CHECK(first_value(p, NULL) == 40);
    CHECK(extra_entries("r") == 0);
    rm_rf(p);
    /* the old tree without a lock file (nothing live can own it), found by a writer */
    CHECK(make(tmp, 8, 40, 0) == 0);
    path_of(old, ".r.zgpu-old-7-0123456789abcdef");
    CHECK(rename(tmp, old) == 0);
    zgpu_array *a = NULL;
    CHECK_STATUS(zgpu_array_create(ctx, p, doc_i32(4), 0, &a), ZGPU_ERR_EXISTS); /* it came back first */
    CHECK(first_value(p, NULL) == 40);
    CHECK(extra_entries("r") == 0);
    rm_rf(p);
}

static void test_leftovers(void) {
    char p[512], dir[512], s1[512], other[512];
    path_of(p, "c");
    rm_rf(p);
    CHECK(make(p, 4, 1, 0) == 0);
    /* a live writer's stage (its lock held by this process's stage object) is left alone */
    zg_stage *live = NULL;
    CHECK_OK(zg_stage_begin(root, "c", &live));
    struct stat sb;
    CHECK(stat(live->path, &sb) == 0);
    CHECK(zg_stage_clean(root, "c") == 0);
    CHECK(stat(live->path, &sb) == 0);
    CHECK(first_value(p, NULL) == 1); /* an opener too */
    CHECK(stat(live->path, &sb) == 0);
    /* a dead writer's stage (an old tree after an exchange: a complete node under the hidden name) goes */
    path_of(s1, ".c.zgpu-stage-1-ffffffffffffffff");
    CHECK(make(s1, 4, 9, 0) == 0);
    /* a name that only looks like ours is not touched */
    path_of(other, ".c.zgpu-stage-x");
    CHECK(mkdir(other, 0777) == 0);
    CHECK(zg_stage_clean(root, "c") == 1);
    CHECK(stat(s1, &sb) != 0);
    CHECK(stat(other, &sb) == 0);
    CHECK(stat(live->path, &sb) == 0);
    zg_stage_discard(live);
    CHECK(stat(other, &sb) == 0);
    rmdir(other);
    CHECK(extra_entries("c") == 0);
    CHECK(zg_stage_is_leftover(".c.zgpu-stage-1-ffffffffffffffff"));
    CHECK(zg_stage_is_leftover(".a.zgpu-old-b.zgpu-old-22-0123456789abcdef"));
    CHECK(!zg_stage_is_leftover(".c.zgpu-stage-x"));
    CHECK(!zg_stage_is_leftover("c.zgpu-stage-1-ffffffffffffffff"));
    CHECK(!zg_stage_is_leftover(".c.zgpu-lock-1-ffffffffffffffff"));
    /* resolve: parents are made; "/" and ".." are refused */
    char *d = NULL, *n = NULL;
    snprintf(dir, sizeof dir, "%s/x/y/z", root);
    CHECK_OK(zg_stage_resolve(dir, 1, &d, &n));
    CHECK(n && !strcmp(n, "z"));
    CHECK(stat(d, &sb) == 0 && S_ISDIR(sb.st_mode));
    free(d);
    free(n);
    CHECK_STATUS(zg_stage_resolve("/", 0, &d, &n), ZGPU_ERR_INVALID_ARGUMENT);
    snprintf(dir, sizeof dir, "%s/x/", root);
    rm_rf(dir);
    rm_rf(p);
}

static void test_group(void) {
    char g[512], m[512];
    path_of(g, "g");
    rm_rf(g);
    zgpu_group *grp = NULL;
    CHECK_OK(zgpu_group_create(ctx, g, 3, "{\"v\": 1}", 0, &grp));
    zgpu_group_close(grp);
    snprintf(m, sizeof m, "%s/member", g);
    CHECK(make(m, 4, 5, 0) == 0);
    CHECK_STATUS(zgpu_group_create(ctx, g, 3, NULL, 0, &grp), ZGPU_ERR_EXISTS);
    CHECK_OK(zgpu_group_create(ctx, g, 2, "{\"v\": 2}", 1, &grp));
    char *members = NULL, *attrs = NULL;
    CHECK_OK(zgpu_group_members(grp, &members));
    CHECK_STR(members, "[]");
    CHECK_OK(zgpu_group_set_attributes(grp, "{\"v\": 3}")); /* the handle writes at the path */
    zgpu_group_close(grp);
    CHECK_OK(zgpu_group_open(ctx, g, &grp));
    CHECK_OK(zgpu_group_attributes(grp, &attrs));
    CHECK(attrs && strstr(attrs, "3"));
    CHECK(zgpu_group_zarr_format(grp) == 2);
    zgpu_group_close(grp);
    zgpu_free(members);
    zgpu_free(attrs);
    CHECK(extra_entries("g") == 0);
    /* a staged array inside the group is not one of its members */
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_create(ctx, m, doc_i32(4), ZGPU_CREATE_STAGED, &a));
    uint64_t st = 0, cnt = 4;
    int32_t v[4] = {1, 2, 3, 4};
    CHECK_OK(zgpu_array_write(a, &st, &cnt, v, NULL));
    CHECK_OK(zgpu_group_open(ctx, g, &grp));
    CHECK_OK(zgpu_group_members(grp, &members));
    CHECK_STR(members, "[]");
    zgpu_free(members);
    CHECK_OK(zgpu_array_commit(a));
    CHECK_OK(zgpu_group_members(grp, &members));
    CHECK(members && strstr(members, "\"member\""));
    zgpu_free(members);
    zgpu_group_close(grp);
    zgpu_array_close(a);
    rm_rf(g);
}

/* A read-only subdirectory in the old array: its deletion fails after the swap, which must still leave the new
 * array whole and the old one hidden (and not a node). Root ignores the permission: skipped then. */
static void test_readonly_old(void) {
    if (geteuid() == 0) {
        printf("skipped: read-only old array (running as root, which chmod does not stop)\n");
        return;
    }
    char p[512], c[512];
    path_of(p, "ro");
    rm_rf(p);
    CHECK(make(p, 8, 10, 0) == 0);
    snprintf(c, sizeof c, "%s/c", p);
    CHECK(chmod(c, 0555) == 0);
    CHECK(make(p, 8, 20, ZGPU_CREATE_OVERWRITE | ZGPU_CREATE_STAGED) == 0);
    CHECK(first_value(p, NULL) == 20);
    CHECK(extra_entries("ro") == 1); /* the old tree, hidden, without its metadata */
    DIR *d = opendir(root);
    struct dirent *e;
    char left[600] = "";
    while (d && (e = readdir(d)))
        if (zg_stage_is_leftover(e->d_name)) snprintf(left, sizeof left, "%s/%s/zarr.json", root, e->d_name);
    if (d) closedir(d);
    struct stat sb;
    CHECK(left[0] && stat(left, &sb) != 0);
    /* once it can be removed, the next writer of the path does */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'", root);
    CHECK(system(cmd) == 0);
    CHECK(make(p, 8, 30, ZGPU_CREATE_OVERWRITE) == 0);
    CHECK(extra_entries("ro") == 0);
    rm_rf(p);
}

/* An empty directory whose parent may not be written: no stage can be made beside it, so a staged array is built
 * in it (metadata at the commit) and a discarded one leaves it empty. Root writes anyway: skipped then. */
static void test_in_place(void) {
    if (geteuid() == 0) {
        printf("skipped: in-place staging under a read-only parent (running as root)\n");
        return;
    }
    char parent[512], p[512];
    path_of(parent, "locked");
    snprintf(p, sizeof p, "%s/arr", parent);
    CHECK(mkdir(parent, 0777) == 0 && mkdir(p, 0777) == 0);
    CHECK(chmod(parent, 0555) == 0);
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_create(ctx, p, doc_i32(4), ZGPU_CREATE_STAGED, &a));
    uint64_t st = 0, cnt = 4;
    int32_t v[4] = {4, 3, 2, 1};
    CHECK_OK(zgpu_array_write(a, &st, &cnt, v, NULL));
    int kind = -1;
    CHECK_OK(zgpu_node_kind(p, &kind));
    CHECK(kind == 0); /* chunks there, but no metadata yet: no node */
    zgpu_array_close(a);
    CHECK_OK(zgpu_node_kind(p, &kind));
    CHECK(kind == 0);
    DIR *d = opendir(p);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) n += e->d_name[0] != '.';
    if (d) closedir(d);
    CHECK(n == 0); /* discarded: emptied again */
    CHECK(make(p, 4, 60, ZGPU_CREATE_STAGED) == 0);
    CHECK(first_value(p, NULL) == 60);
    chmod(parent, 0777);
    rm_rf(parent);
}

/* A writer killed inside its commit (fork + the test crash points): between the fallback's two renames the old
 * array comes back; after the swap the new one stays and the next writer removes the old tree. */
static void test_crash_points(void) {
    char p[512];
    path_of(p, "k");
    for (int fallback = 0; fallback < 2; fallback++)
        for (int where = 1; where <= 2; where++) {
            if (where == 1 && !fallback) continue; /* an exchange has no state between two renames */
            rm_rf(p);
            CHECK(make(p, 8, 70, 0) == 0);
            fflush(NULL);
            pid_t pid = fork();
            if (pid == 0) {
                zg_stage_force_fallback(fallback);
                zg_stage_test_crash(where);
                make(p, 8, 80, ZGPU_CREATE_OVERWRITE | ZGPU_CREATE_STAGED);
                _exit(3); /* not reached: the commit kills the process */
            }
            int status = 0;
            CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
            CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "fallback %d, crash %d: status %d",
                      fallback, where, status);
            CHECK_MSG(extra_entries("k") > 0, "fallback %d, crash %d: no leftovers?", fallback, where);
            int want = where == 1 ? 70 : 80;
            CHECK_MSG(first_value(p, NULL) == want, "fallback %d, crash %d", fallback, where);
            if (where == 2) CHECK(make(p, 8, 90, ZGPU_CREATE_OVERWRITE) == 0); /* the next writer cleans */
            CHECK_MSG(extra_entries("k") == 0, "fallback %d, crash %d: leftovers stay", fallback, where);
        }
    rm_rf(p);
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/zgpu_test_stage_%d", (int)getpid());
    mkdir(root, 0777);
    CHECK_OK(zgpu_context_create(NULL, &ctx));
    test_overwrite(0);
    test_overwrite(1);
    test_recover();
    test_leftovers();
    test_group();
    test_readonly_old();
    test_in_place();
    test_crash_points();
    zgpu_context_free(ctx);
    rm_rf(root);
    TEST_MAIN_END();
}
