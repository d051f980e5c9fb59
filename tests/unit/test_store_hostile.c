/* The filesystem store against a hostile tree, through the public API: FIFOs, sockets, devices and directories
 * where a chunk or zarr.json should be (an error naming it, at once, never a block or the fill value); stores
 * confined to their tree (links out refused for reads and writes and left out of group members, links inside
 * followed; the walk used without openat2 refuses every link); leftover temporaries of killed writers (removed
 * by the next writer, a live writer's kept); sharded reads under a low descriptor limit (they wait for
 * descriptors and keep fewer files open instead of failing). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "zgpu.h"
#include "store/store.h"

#define META_1D(shape, chunk)                                                                                    \
    "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[" shape "],\"data_type\":\"int32\",\"chunk_grid\":" \
    "{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[" chunk "]}},\"chunk_key_encoding\":{\"name\":"  \
    "\"default\",\"configuration\":{\"separator\":\"/\"}},\"fill_value\":0,\"codecs\":"
#define BYTES "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}"

static const char *META_PLAIN = META_1D("8", "4") "[" BYTES "]}";
/* 200 shards of 16 elements, inner chunks of 4 */
static const char *META_SHARDED = META_1D("3200", "16") "[{\"name\":\"sharding_indexed\",\"configuration\":{"
    "\"chunk_shape\":[4],\"codecs\":[" BYTES "],\"index_codecs\":[" BYTES ",{\"name\":\"crc32c\"}]}}]}";

static char dir[] = "/tmp/zgpu_hostile_XXXXXX";
static zgpu_context *ctx, *cctx; /* unconfined, confined */

#include <stdarg.h>
static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...) {
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (system(cmd) != 0) fprintf(stderr, "command failed: %s\n", cmd);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int has(const char *needle) { return strstr(zgpu_last_error(), needle) != NULL; }

/* A fresh plain array at dir/name holding 1..8 (chunks c/0 and c/1). */
static void make_plain(const char *name, char *path) {
    snprintf(path, 512, "%s/%s", dir, name);
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_create(ctx, path, META_PLAIN, 1, &a));
    int32_t v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint64_t start = 0, count = 8;
    if (a) CHECK_OK(zgpu_array_write(a, &start, &count, v, NULL));
    zgpu_array_close(a);
}

/* Reads all 8 elements of the plain array at path with c; the status, values in v. */
static zgpu_status read8(zgpu_context *c, const char *path, int32_t *v) {
    zgpu_array *a = NULL;
    zgpu_status st = zgpu_array_open(c, path, &a);
    uint64_t start = 0, count = 8;
    if (st == ZGPU_OK) st = zgpu_array_read(a, &start, &count, v, NULL);
    zgpu_array_close(a);
    return st;
}

static void special_chunks(void) {
    char path[512], chunk[600];
    int32_t v[8];
    make_plain("special", path);
    snprintf(chunk, sizeof chunk, "%s/c/1", path);
    alarm(20); /* a blocked open would hang the test: the watchdog kills it */

    /* FIFO as a chunk: an error at once naming it */
    CHECK(unlink(chunk) == 0 && mkfifo(chunk, 0666) == 0);
    double t0 = now();
    CHECK_STATUS(read8(ctx, path, v), ZGPU_ERR_IO);
    CHECK_MSG(has("c/1' is a FIFO, not a regular file") && has("chunk 'c/1'"), "message: %s", zgpu_last_error());
    CHECK(now() - t0 < 1.0);
    /* a full write over it replaces the FIFO (rename), never opening it; a partial one must read it: error */
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_open(ctx, path, &a));
    int32_t w[4] = {50, 60, 70, 80};
    uint64_t start = 4, count = 4;
    start = 5, count = 2;
    if (a) CHECK_STATUS(zgpu_array_write(a, &start, &count, w, NULL), ZGPU_ERR_IO);
    CHECK_MSG(has("FIFO"), "message: %s", zgpu_last_error());
    start = 4, count = 4;
    if (a) CHECK_OK(zgpu_array_write(a, &start, &count, w, NULL));
    zgpu_array_close(a);
    struct stat sb;
    CHECK(lstat(chunk, &sb) == 0 && S_ISREG(sb.st_mode));
    CHECK_OK(read8(ctx, path, v));
    CHECK(v[0] == 1 && v[3] == 4 && v[4] == 50 && v[7] == 80);

    /* a directory where the chunk should be: an error naming it (it used to read as the fill value) */
    CHECK(unlink(chunk) == 0 && mkdir(chunk, 0777) == 0);
    CHECK_STATUS(read8(ctx, path, v), ZGPU_ERR_IO);
    CHECK_MSG(has("c/1' is a directory where a stored value was expected"), "message: %s", zgpu_last_error());
    /* and a write that would delete it (all fill values) or replace it says so too */
    CHECK_OK(zgpu_array_open(ctx, path, &a));
    int32_t zeros[4] = {0};
    if (a) CHECK_STATUS(zgpu_array_write(a, &start, &count, zeros, NULL), ZGPU_ERR_IO);
    CHECK_MSG(has("c/1' is a directory"), "message: %s", zgpu_last_error());
    if (a) CHECK_STATUS(zgpu_array_write(a, &start, &count, w, NULL), ZGPU_ERR_IO);
    CHECK_MSG(has("c/1' is a directory"), "message: %s", zgpu_last_error());
    zgpu_array_close(a);
    CHECK(rmdir(chunk) == 0);

    /* a link to /dev/null (a character device) */
    CHECK(symlink("/dev/null", chunk) == 0);
    CHECK_STATUS(read8(ctx, path, v), ZGPU_ERR_IO);
    CHECK_MSG(has("c/1' is a character device, not a regular file"), "message: %s", zgpu_last_error());
    CHECK(unlink(chunk) == 0);

    /* a socket */
    int so = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", chunk);
    CHECK(so >= 0 && bind(so, (struct sockaddr *)&sa, sizeof sa) == 0);
    CHECK_STATUS(read8(ctx, path, v), ZGPU_ERR_IO);
    CHECK_MSG(has("c/1' is a socket, not a regular file"), "message: %s", zgpu_last_error());
    close(so);
    CHECK(unlink(chunk) == 0);
    CHECK_OK(read8(ctx, path, v)); /* absent again: fill value */
    CHECK(v[0] == 1 && v[4] == 0);

    /* zarr.json as a FIFO, then as a directory: opening fails at once naming it */
    char meta[600];
    snprintf(meta, sizeof meta, "%s/zarr.json", path);
    CHECK(unlink(meta) == 0 && mkfifo(meta, 0666) == 0);
    t0 = now();
    CHECK_STATUS(read8(ctx, path, v), ZGPU_ERR_IO);
    CHECK_MSG(has("zarr.json' is a FIFO"), "message: %s", zgpu_last_error());
    int kind = -1;
    CHECK_STATUS(zgpu_node_kind(path, &kind), ZGPU_ERR_IO);
    CHECK(now() - t0 < 1.0);
    CHECK(unlink(meta) == 0 && mkdir(meta, 0777) == 0);
    CHECK_STATUS(read8(ctx, path, v), ZGPU_ERR_IO);
    CHECK_MSG(has("zarr.json' is a directory where a stored value was expected"), "message: %s", zgpu_last_error());

    /* a FIFO as the lock file: writes fail at once saying so */
    make_plain("fifo_lock", path);
    char lock[600];
    snprintf(lock, sizeof lock, "%s/" ZG_FS_LOCK_NAME, path);
    unlink(lock);
    CHECK(mkfifo(lock, 0666) == 0);
    CHECK_OK(zgpu_array_open(ctx, path, &a));
    start = 0, count = 4;
    if (a) CHECK_STATUS(zgpu_array_write(a, &start, &count, w, NULL), ZGPU_ERR_IO);
    CHECK_MSG(has(ZG_FS_LOCK_NAME "' is a FIFO"), "message: %s", zgpu_last_error());
    zgpu_array_close(a);
    alarm(0);

    /* a shard that is a FIFO */
    snprintf(path, 512, "%s/sharded_fifo", dir);
    CHECK_OK(zgpu_array_create(ctx, path, META_SHARDED, 1, &a));
    int32_t big[64];
    for (int i = 0; i < 64; i++) big[i] = i + 1;
    start = 0, count = 64;
    if (a) CHECK_OK(zgpu_array_write(a, &start, &count, big, NULL));
    snprintf(chunk, sizeof chunk, "%s/c/2", path);
    CHECK(unlink(chunk) == 0 && mkfifo(chunk, 0666) == 0);
    alarm(20);
    if (a) CHECK_STATUS(zgpu_array_read(a, &start, &count, big, NULL), ZGPU_ERR_IO);
    CHECK_MSG(has("c/2' is a FIFO"), "message: %s", zgpu_last_error());
    alarm(0);
    zgpu_array_close(a);
}

/* Reads of a link out, a link in, and writes through a link out, confined and not, with openat2 or the walk. */
static void confinement(int walk) {
    char path[512], out_dir[512], p1[600], p2[600];
    int32_t v[8];
    zg_store_fs_test_walk(walk);
    make_plain(walk ? "conf_walk" : "conf", path);
    snprintf(out_dir, sizeof out_dir, "%s/outside%d", dir, walk);
    sh("mkdir -p %s && cp %s/c/0 %s/chunk && cp %s/c/0 %s/c0", out_dir, path, out_dir, path, out_dir);

    /* chunk c/1 a link to a file outside the store */
    snprintf(p1, sizeof p1, "%s/c/1", path);
    snprintf(p2, sizeof p2, "%s/chunk", out_dir);
    CHECK(unlink(p1) == 0 && symlink(p2, p1) == 0);
    CHECK_OK(read8(ctx, path, v)); /* unconfined: followed, as zarr-python does */
    CHECK(v[4] == 1 && v[7] == 4);
    CHECK_STATUS(read8(cctx, path, v), ZGPU_ERR_IO);
    CHECK_MSG(has("key 'c/1' leads outside the store") && has("confined"), "message: %s", zgpu_last_error());

    /* a relative link inside the store: followed when confined with openat2; the walk refuses every link */
    CHECK(unlink(p1) == 0 && symlink("0", p1) == 0);
    zgpu_status st = read8(cctx, path, v);
    if (!walk) {
        CHECK_OK(st);
        CHECK(v[4] == 1 && v[7] == 4);
    } else {
        CHECK_STATUS(st, ZGPU_ERR_IO);
        CHECK_MSG(has("key 'c/1'") && has("confined"), "message: %s", zgpu_last_error());
    }
    /* a link that climbs out with ".." */
    CHECK(unlink(p1) == 0);
    char rel[700];
    snprintf(rel, sizeof rel, "../../outside%d/chunk", walk);
    CHECK(symlink(rel, p1) == 0);
    CHECK_OK(read8(ctx, path, v));
    CHECK(v[4] == 1);
    CHECK_STATUS(read8(cctx, path, v), ZGPU_ERR_IO);
    CHECK(unlink(p1) == 0);

    /* the chunk directory "c" a link to a directory outside: reads and writes refused, nothing written there */
    sh("rm -rf %s/c", path);
    snprintf(p1, sizeof p1, "%s/c", path);
    CHECK(symlink(out_dir, p1) == 0); /* outside holds "c0", not "0": write chunk 0 */
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_open(cctx, path, &a));
    int32_t w[4] = {9, 9, 9, 9};
    uint64_t start = 0, count = 4;
    if (a) CHECK_STATUS(zgpu_array_write(a, &start, &count, w, NULL), ZGPU_ERR_IO);
    CHECK_MSG(has("confined"), "message: %s", zgpu_last_error());
    start = 1, count = 2; /* partial: the read of the old chunk is refused first */
    if (a) CHECK_STATUS(zgpu_array_write(a, &start, &count, w, NULL), ZGPU_ERR_IO);
    start = 0, count = 8;
    if (a) CHECK_STATUS(zgpu_array_read(a, &start, &count, v, NULL), ZGPU_ERR_IO);
    zgpu_array_close(a);
    snprintf(p2, sizeof p2, "%s/0", out_dir);
    CHECK(access(p2, F_OK) != 0); /* nothing written outside */
    CHECK_OK(zgpu_array_open(ctx, path, &a)); /* unconfined: the write goes through the link */
    start = 0, count = 4;
    if (a) CHECK_OK(zgpu_array_write(a, &start, &count, w, NULL));
    zgpu_array_close(a);
    CHECK(access(p2, F_OK) == 0);

    /* the root itself may be a link, confined or not */
    char root_link[600];
    snprintf(root_link, sizeof root_link, "%s/root_link%d", dir, walk);
    CHECK(unlink(p1) == 0);
    CHECK(symlink(path, root_link) == 0);
    CHECK_OK(zgpu_array_open(cctx, root_link, &a));
    start = 0, count = 8;
    int32_t w8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    if (a) CHECK_OK(zgpu_array_write(a, &start, &count, w8, NULL)); /* makes c/ beneath the root */
    memset(v, 0, sizeof v);
    if (a) CHECK_OK(zgpu_array_read(a, &start, &count, v, NULL));
    CHECK(v[0] == 1 && v[7] == 8);
    zgpu_array_close(a);
    zg_store_fs_test_walk(0);
}

/* A confined group lists no member that a link leads outside; unconfined, it does. */
static void confined_members(void) {
    char group[512], inside[600], outside[600], link[600];
    snprintf(group, sizeof group, "%s/grp", dir);
    zgpu_group *g = NULL;
    CHECK_OK(zgpu_group_create(ctx, group, 3, NULL, 0, &g));
    zgpu_group_close(g);
    snprintf(inside, sizeof inside, "%s/grp/inner", dir);
    make_plain("grp/inner", inside);
    make_plain("elsewhere", outside);
    snprintf(link, sizeof link, "%s/grp/linked", dir);
    CHECK(symlink(outside, link) == 0);
    char *json = NULL;
    CHECK_OK(zgpu_group_open(ctx, group, &g));
    if (g) CHECK_OK(zgpu_group_members(g, &json));
    CHECK_MSG(json && strstr(json, "\"inner\"") && strstr(json, "\"linked\""), "unconfined: %s", json ? json : "");
    zgpu_free(json);
    json = NULL;
    zgpu_group_close(g);
    CHECK_OK(zgpu_group_open(cctx, group, &g));
    if (g) CHECK_OK(zgpu_group_members(g, &json));
    CHECK_MSG(json && strstr(json, "\"inner\"") && !strstr(json, "\"linked\""), "confined: %s", json ? json : "");
    zgpu_free(json);
    zgpu_group_close(g);
}

/* A stale temporary (unlocked, old) goes with the next write into its directory; a live one (locked by a
 * child standing for a writer in progress) stays; neither is ever listed as a key. */
static void leftovers(void) {
    char path[512], stale[700], live[700];
    make_plain("leftovers", path);
    snprintf(stale, sizeof stale, "%s/c/0" ZG_FS_TMP_MARK "999999-7", path);
    snprintf(live, sizeof live, "%s/c/1" ZG_FS_TMP_MARK "999998-3", path);
    int fd = open(stale, O_WRONLY | O_CREAT | O_EXCL, 0666);
    CHECK(fd >= 0 && write(fd, "junk", 4) == 4);
    close(fd);
    fd = open(live, O_WRONLY | O_CREAT | O_EXCL, 0666);
    CHECK(fd >= 0);
    close(fd);
    struct timespec old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
    CHECK(utimensat(AT_FDCWD, stale, old, 0) == 0 && utimensat(AT_FDCWD, live, old, 0) == 0);
    int ready[2], done[2];
    CHECK(pipe(ready) == 0 && pipe(done) == 0);
    pid_t child = fork();
    if (child == 0) {
        int lfd = open(live, O_RDWR);
        char c = 1;
        if (lfd < 0 || flock(lfd, LOCK_EX) != 0 || write(ready[1], &c, 1) != 1) _exit(1);
        if (read(done[0], &c, 1) < 0) _exit(1); /* hold the lock until the parent has written */
        _exit(0);
    }
    char c;
    CHECK(read(ready[0], &c, 1) == 1);
    uint64_t n_objects = 0, n_bytes = 0;
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_open(ctx, path, &a));
    if (a) CHECK_OK(zgpu_array_storage_info(a, &n_objects, &n_bytes));
    CHECK_EQ_U64(n_objects, 2); /* c/0 and c/1; temporaries are not keys */
    CHECK_EQ_U64(n_bytes, 32);
    int32_t w[2] = {11, 12};
    uint64_t start = 0, count = 2;
    if (a) CHECK_OK(zgpu_array_write(a, &start, &count, w, NULL));
    zgpu_array_close(a);
    CHECK_MSG(access(stale, F_OK) != 0, "stale temporary %s still there", stale);
    CHECK_MSG(access(live, F_OK) == 0, "live temporary %s removed", live);
    CHECK(write(done[1], &c, 1) == 1);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(ready[0]), close(ready[1]), close(done[0]), close(done[1]);
    /* the child is gone, its lock with it: the next handle's first write there removes it */
    CHECK_OK(zgpu_array_open(ctx, path, &a));
    start = 4;
    if (a) CHECK_OK(zgpu_array_write(a, &start, &count, w, NULL));
    zgpu_array_close(a);
    CHECK_MSG(access(live, F_OK) != 0, "temporary %s of a gone writer still there", live);
    int32_t v[8];
    CHECK_OK(read8(ctx, path, v));
    CHECK(v[0] == 11 && v[1] == 12 && v[2] == 3 && v[4] == 11 && v[5] == 12 && v[6] == 7);
}

/* In a child: a sharded read of 200 shards by 16 threads with `spare` descriptors above those already open.
 * Exit 0 when every value is right, 2 when the read failed with want_fail's message, else 1. */
static int low_fd_child(const char *path, int spare, int want_fail) {
    zgpu_context *c = NULL;
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.num_threads = 16;
    if (zgpu_context_create(&o, &c) != ZGPU_OK) return 1;
    zgpu_array *a = NULL;
    if (zgpu_array_open(c, path, &a) != ZGPU_OK) return 1;
    static int32_t v[3200];
    const int lowest = dup(0);
    close(lowest);
    struct rlimit lim;
    getrlimit(RLIMIT_NOFILE, &lim);
    struct rlimit tight = {(rlim_t)(lowest + spare), lim.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &tight) != 0) return 1;
    int bad = 0;
    for (int round = 0; round < 3; round++) {
        uint64_t start = 0, count = 3200;
        memset(v, 0, sizeof v);
        zgpu_status st = zgpu_array_read(a, &start, &count, v, NULL);
        if (want_fail) {
            int ok = st == ZGPU_ERR_IO && has("Too many open files") && has("ulimit");
            if (!ok) fprintf(stderr, "spare %d: %s: %s\n", spare, zgpu_status_name(st), zgpu_last_error());
            return ok ? 2 : 1;
        }
        if (st != ZGPU_OK) {
            fprintf(stderr, "spare %d: %s\n", spare, zgpu_last_error());
            return 1;
        }
        for (int i = 0; i < 3200; i++) bad += v[i] != 3 * i + 1;
    }
    zgpu_array_close(a);
    zgpu_context_free(c);
    return bad ? 1 : 0;
}

static void low_descriptors(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/sharded", dir);
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_create(ctx, path, META_SHARDED, 1, &a));
    static int32_t v[3200];
    for (int i = 0; i < 3200; i++) v[i] = 3 * i + 1;
    uint64_t start = 0, count = 3200;
    if (a) CHECK_OK(zgpu_array_write(a, &start, &count, v, NULL));
    zgpu_array_close(a);
    const int spares[] = {12, 4, 1, 0};
    for (int k = 0; k < 4; k++) {
        pid_t child = fork();
        if (child == 0) _exit(low_fd_child(path, spares[k], spares[k] == 0));
        int status = 0;
        CHECK(waitpid(child, &status, 0) == child);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == (spares[k] == 0 ? 2 : 0),
                  "%d spare descriptors: child status %d", spares[k], status);
    }
}

int main(void) {
    if (!mkdtemp(dir)) return 2;
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.num_threads = 4;
    CHECK_OK(zgpu_context_create(&o, &ctx));
    o.confine_to_store = 1;
    CHECK_OK(zgpu_context_create(&o, &cctx));
    if (!ctx || !cctx) return 1;
    special_chunks();
    confinement(0);
    confinement(1);
    confined_members();
    leftovers();
    low_descriptors();
    zgpu_context_free(ctx);
    zgpu_context_free(cctx);
    sh("rm -rf %s", dir);
    TEST_MAIN_END();
}
