/* The kernel cache of src/jit/ without a GPU: the key changes with every parameter; NVRTC compiles the converting
 * scatter for sm_90 (every type pair), and a PTX fallback for an architecture it does not know; a compile error
 * carries NVRTC's log; the disk round trip (memory, disk and compile counted apart, cold and warm times printed);
 * truncated, flipped, foreign-key, other-format and empty files are ignored, deleted and rebuilt; the size bound
 * evicts the oldest files and stale temporaries; a load refreshes mtime; a directory open to others is not used;
 * threads asking at once compile once; 8 processes forked at once end with one valid file and no temporaries.
 * Without NVRTC the key tests run and the rest reports "skipped: no NVRTC". */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "zgpu.h"
#include "convert/convert.h"
#include "jit/jit_cache.h"
#include "jit/nvrtc_lib.h"
#include "jit/scatter_source.h"

static char tmpdir[64];

static const char *tiny_source = "extern \"C\" __global__ void k(int *p) { p[threadIdx.x] = threadIdx.x; }\n";

static char *tiny_variant(int i) { /* distinct sources, distinct keys */
    char *s = malloc(256);
    snprintf(s, 256, "extern \"C\" __global__ void k(int *p) { p[threadIdx.x] = threadIdx.x + %d; }\n", i);
    return s;
}

static void rm_rf(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    char p[512];
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) rm_rf(p);
        else unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

/* files in dir: cache files, temporaries, bytes of cache files */
static void count_files(const char *dir, int *files, int *temps, uint64_t *bytes) {
    *files = *temps = 0;
    *bytes = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    char p[512];
    while ((de = readdir(d)) != NULL) {
        const size_t l = strlen(de->d_name);
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat st;
        if (strstr(de->d_name, ".tmp.")) (*temps)++;
        else if (l > 4 && !strcmp(de->d_name + l - 4, ".zgk") && stat(p, &st) == 0) {
            (*files)++;
            *bytes += (uint64_t)st.st_size;
        }
    }
    closedir(d);
}

static void key_path(const char *what, const char *source, char *path, size_t n) {
    char version[32];
    snprintf(version, sizeof version, "%d.%d.%d", ZGPU_VERSION_MAJOR, ZGPU_VERSION_MINOR, ZGPU_VERSION_PATCH);
    const zg_jit_key k = {what, source, NULL, 0, "sm_90", "13000", zg_nvrtc_version(), version};
    char key[4096];
    CHECK(zg_jit_key_text(&k, key, sizeof key) > 0);
    zg_jit_cache_file(key, path, n);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ keys */
/* The usual first step of a model: uint16 normalised into float16. */
static void u16_to_f16(zg_xform *x) {
    zgpu_read_options o;
    zgpu_read_options_init(&o);
    o.out_dtype = ZGPU_FLOAT16;
    o.scale = 1.0 / 65535;
    CHECK_OK(zg_xform_make(&o, ZGPU_UINT16, 2, "k", x));
}

static void test_keys(void) {
    const char *names_a[] = {"k<int>"}, *names_b[] = {"k<float>"};
    const zg_jit_key base = {"scatter gen=1 in=uint16", "src", names_a, 1, "sm_90", "13000", "13.0", "0.1.0"};
    char k0[2048], k1[2048];
    CHECK(zg_jit_key_text(&base, k0, sizeof k0) > 0);
    for (int field = 0; field < 8; field++) {
        zg_jit_key k = base;
        switch (field) {
        case 0: k.what = "scatter gen=1 in=int16"; break;
        case 1: k.source = "src "; break;
        case 2: k.names = names_b; break;
        case 3: k.n_names = 0; break;
        case 4: k.arch = "sm_80"; break;
        case 5: k.driver = "12080"; break;
        case 6: k.nvrtc = "12.8"; break;
        case 7: k.zgpu = "0.1.1"; break;
        }
        CHECK(zg_jit_key_text(&k, k1, sizeof k1) > 0);
        CHECK_MSG(strcmp(k0, k1) != 0, "field %d does not change the key", field);
    }
    CHECK(zg_jit_key_text(&base, k1, 16) == 0); /* too small: refused, not cut */

    /* every code-generation parameter of the scatter changes its `what` and its source */
    zg_xform x;
    u16_to_f16(&x);
    const zg_jit_scatter_cfg c0 = zg_jit_scatter_cfg_of(&x, 2, 2);
    CHECK(c0.contiguous && !c0.clamp && !c0.compute64);
    char w0[256], w1[256];
    zg_jit_scatter_what(&c0, w0, sizeof w0);
    char *s0 = zg_jit_scatter_source(&c0);
    for (int field = 0; field < 5; field++) {
        zg_jit_scatter_cfg c = c0;
        switch (field) {
        case 0: c.in_dtype = ZGPU_INT16; break;
        case 1: c.out_dtype = ZGPU_FLOAT32; break;
        case 2: c.compute64 = 1; break;
        case 3: c.clamp = 1; break;
        case 4: c.contiguous = 0; break;
        }
        zg_jit_scatter_what(&c, w1, sizeof w1);
        char *s1 = zg_jit_scatter_source(&c);
        CHECK_MSG(strcmp(w0, w1) != 0, "scatter parameter %d does not change `what`", field);
        CHECK_MSG(s1 && strcmp(s0, s1) != 0, "scatter parameter %d does not change the source", field);
        free(s1);
    }
    free(s0);
    const zg_jit_scatter_cfg strided = zg_jit_scatter_cfg_of(&x, 2, 4);
    CHECK(!strided.contiguous);
}

/* ------------------------------------------------------------------ NVRTC */
static void test_compile(void) {
    zg_jit_image img;
    double t = now_s();
    CHECK_OK(zg_jit_compile(tiny_source, NULL, 0, "sm_90", "tiny", &img));
    printf("NVRTC %s: a tiny kernel for sm_90 in %.3f s (first compile, NVRTC loaded), %zu bytes\n",
           zg_nvrtc_version(), now_s() - t, img.code_size);
    CHECK(!img.is_ptx && !strcmp(img.target, "sm_90") && img.code_size > 100);
    CHECK(img.code && img.code[0] == 0x7f && img.code[1] == 'E'); /* an ELF cubin */
    zg_jit_image_free(&img);

    /* a GPU newer than NVRTC knows: PTX of the newest architecture it knows */
    CHECK_OK(zg_jit_compile(tiny_source, NULL, 0, "sm_990", "tiny", &img));
    CHECK(img.is_ptx && !strncmp(img.target, "compute_", 8) && img.code[img.code_size - 1] == 0);
    CHECK(strstr((const char *)img.code, ".entry k") != NULL);
    zg_jit_image_free(&img);
    CHECK_STATUS(zg_jit_compile(tiny_source, NULL, 0, "sm_10", "tiny", &img), ZGPU_ERR_UNSUPPORTED);
    CHECK_STATUS(zg_jit_compile(tiny_source, NULL, 0, "gfx90a", "tiny", &img), ZGPU_ERR_INVALID_ARGUMENT);

    /* name expressions: lowered names come back */
    const char *tsrc = "template <typename T> __global__ void fill(T *p, T v) { p[threadIdx.x] = v; }\n";
    const char *names[] = {"fill<int>", "fill<double>"};
    CHECK_OK(zg_jit_compile(tsrc, names, 2, "sm_90", "template", &img));
    CHECK(img.n_names == 2 && img.names && !strncmp(img.names, "_Z", 2));
    if (img.names) CHECK(strstr(img.names + strlen(img.names) + 1, "fill") != NULL);
    zg_jit_image_free(&img);

    /* a compile error names the program and carries NVRTC's log */
    CHECK_STATUS(zg_jit_compile("__global__ void broken( { }\n", NULL, 0, "sm_90", "the broken one", &img),
                 ZGPU_ERR_INTERNAL);
    CHECK(strstr(zgpu_last_error(), "the broken one") && strstr(zgpu_last_error(), "error"));

    /* the converting scatter compiles with every type once as input and once as output (pairs spread over the
     * table; layouts and clamp alternating; both compute types). (All 144 pairs: ~50 s here; test_gpu_convert
     * builds and runs many more on the GPU machine.) */
    int bad = 0, n = 0;
    t = now_s();
    const zgpu_dtype types[] = {ZGPU_BOOL,   ZGPU_INT8,   ZGPU_INT16,   ZGPU_INT32,   ZGPU_INT64,   ZGPU_UINT8,
                                ZGPU_UINT16, ZGPU_UINT32, ZGPU_UINT64, ZGPU_FLOAT16, ZGPU_FLOAT32, ZGPU_FLOAT64};
    for (int k = 0; k < 12; k++) {
        const int i = k, j = (k * 5 + 3) % 12;
        const zg_jit_scatter_cfg c = {types[i], types[j], !zg_convert_small_pair(types[i], types[j]),
                                      (i + j) & 1, ((i + 2 * j) & 2) != 0};
        char *src = zg_jit_scatter_source(&c);
        char what[256];
        zg_jit_scatter_what(&c, what, sizeof what);
        const zgpu_status st = src ? zg_jit_compile(src, NULL, 0, "sm_90", what, &img) : ZGPU_ERR_NO_MEMORY;
        if (st != ZGPU_OK && bad++ < 3) fprintf(stderr, "%s: %s\n", what, zgpu_last_error());
        if (st == ZGPU_OK) zg_jit_image_free(&img);
        free(src);
        n++;
    }
    printf("converting scatter: %d kernels compiled for sm_90 in %.2f s (%.0f ms each)\n", n, now_s() - t,
           1000 * (now_s() - t) / n);
    CHECK_MSG(bad == 0, "%d scatter kernels do not compile", bad);
}

/* ------------------------------------------------------------------ the disk cache */
static const zg_jit_image *get(const char *what, const char *source) {
    const zg_jit_image *img = NULL;
    const zgpu_status st = zg_jit_cache_get(what, source, NULL, 0, "sm_90", "13000", &img);
    CHECK_MSG(st == ZGPU_OK, "%s", zgpu_last_error());
    return st == ZGPU_OK ? img : NULL;
}

static void write_file(const char *path, const uint8_t *p, size_t n) {
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && write(fd, p, n) == (ssize_t)n);
    close(fd);
}

static uint8_t *read_file(const char *path, size_t *n) {
    struct stat st;
    if (stat(path, &st) != 0) return NULL;
    uint8_t *b = malloc((size_t)st.st_size + 1);
    const int fd = open(path, O_RDONLY);
    *n = (size_t)read(fd, b, (size_t)st.st_size);
    close(fd);
    return b;
}

static void test_round_trip(void) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/kernels", tmpdir);
    zg_jit_cache_configure(dir, 0);
    zg_jit_cache_forget_memory();
    zg_jit_stats_reset();
    const char *why = NULL;
    CHECK_STR(zg_jit_cache_dir(&why), dir);
    struct stat st;
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);

    /* the real kernel: cold (compile), warm (disk), hot (memory) */
    zg_xform x;
    u16_to_f16(&x);
    const zg_jit_scatter_cfg c = zg_jit_scatter_cfg_of(&x, 2, 2);
    char what[256];
    zg_jit_scatter_what(&c, what, sizeof what);
    char *src = zg_jit_scatter_source(&c);
    const zg_jit_image *a = get(what, src);
    zg_jit_stats s;
    zg_jit_stats_get(&s);
    CHECK(s.compiles == 1 && s.disk_writes == 1 && s.disk_hits == 0 && s.memory_hits == 0);
    const double cold = s.compile_s + s.disk_store_s;
    uint8_t *first = NULL;
    size_t first_size = 0;
    if (a) {
        first = malloc(a->code_size);
        memcpy(first, a->code, a->code_size);
        first_size = a->code_size;
    }
    zg_jit_cache_forget_memory();
    const zg_jit_image *b = get(what, src);
    zg_jit_stats_get(&s);
    CHECK(s.compiles == 1 && s.disk_hits == 1);
    CHECK(b && b->code_size == first_size && first && !memcmp(b->code, first, first_size) && !b->is_ptx &&
          !strcmp(b->target, "sm_90"));
    const double warm = s.disk_load_s;
    const zg_jit_image *b2 = get(what, src);
    zg_jit_stats_get(&s);
    CHECK(b2 == b && s.memory_hits == 1);
    printf("kernel cache, %s: cold %.1f ms (NVRTC %.1f ms + store %.2f ms, %zu-byte cubin), warm %.3f ms (disk)\n",
           what, 1000 * cold, 1000 * s.compile_s, 1000 * s.disk_store_s, first_size, 1000 * warm);

    /* a load refreshes the file's mtime (least recently used goes first) */
    char path[512];
    key_path(what, src, path, sizeof path);
    const struct timespec old[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
    CHECK(utimensat(AT_FDCWD, path, old, 0) == 0);
    zg_jit_cache_forget_memory();
    (void)get(what, src);
    CHECK(stat(path, &st) == 0 && st.st_mtime > 1000000000 + 86400);

    /* damaged files: ignored, deleted (or replaced), rebuilt */
    size_t n = 0;
    uint8_t *good = read_file(path, &n);
    CHECK(good && n > 100);
    for (int kind = 0; kind < 6 && good; kind++) {
        uint8_t *bad = malloc(n);
        memcpy(bad, good, n);
        size_t bad_n = n;
        switch (kind) {
        case 0: bad_n = n / 2; break;            /* truncated */
        case 1: bad[n - 100] ^= 0x10; break;     /* a flipped byte in the code */
        case 2: bad[60] ^= 0x01; break;          /* ... in the key: the checksum fails first */
        case 3: bad_n = 0; break;                /* empty */
        case 4: bad[8] = 99; break;              /* another format version: a miss, replaced */
        case 5: bad[5] = 'X'; break;             /* not our magic */
        }
        write_file(path, bad, bad_n);
        free(bad);
        zg_jit_cache_forget_memory();
        zg_jit_stats_reset();
        const zg_jit_image *r = get(what, src);
        zg_jit_stats_get(&s);
        CHECK_MSG(s.compiles == 1 && s.disk_hits == 0 && s.disk_writes == 1, "damage %d: %llu compiles", kind,
                  (unsigned long long)s.compiles);
        CHECK_MSG(s.disk_rejects == (kind == 4 ? 0u : 1u), "damage %d: %llu rejects", kind,
                  (unsigned long long)s.disk_rejects);
        CHECK(r && r->code_size == first_size && !memcmp(r->code, first, first_size));
        size_t n2 = 0;
        uint8_t *again = read_file(path, &n2);
        CHECK_MSG(again && n2 == n && !memcmp(again, good, n), "damage %d: the file is not rebuilt", kind);
        free(again);
    }
    /* a file of another key under this key's name (a hash collision): a miss, and replaced */
    char other_path[512];
    char *other_src = tiny_variant(7);
    (void)get("tiny", other_src);
    key_path("tiny", other_src, other_path, sizeof other_path);
    size_t on = 0;
    uint8_t *other = read_file(other_path, &on);
    CHECK(other != NULL);
    if (other) write_file(path, other, on);
    free(other);
    zg_jit_cache_forget_memory();
    zg_jit_stats_reset();
    (void)get(what, src);
    zg_jit_stats_get(&s);
    CHECK(s.compiles == 1 && s.disk_hits == 0 && s.disk_rejects == 0);
    free(other_src);
    free(good);
    free(first);
    free(src);

    /* memory only */
    zg_jit_cache_configure("", 0);
    CHECK_STR(zg_jit_cache_dir(&why), "");
    zg_jit_stats_reset();
    char *s9 = tiny_variant(9);
    (void)get("tiny", s9);
    zg_jit_stats_get(&s);
    CHECK(s.compiles == 1 && s.disk_writes == 0);
    free(s9);
    /* a directory others may write to is not used */
    char open_dir[128];
    snprintf(open_dir, sizeof open_dir, "%s/shared", tmpdir);
    mkdir(open_dir, 0700);
    chmod(open_dir, 0777);
    zg_jit_cache_configure(open_dir, 0);
    CHECK_STR(zg_jit_cache_dir(&why), "");
    CHECK(strstr(why, "closed to others") != NULL);
}

static void touch_at(const char *path, size_t bytes, time_t mtime) {
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)bytes) == 0);
    close(fd);
    const struct timespec t[2] = {{.tv_sec = mtime}, {.tv_sec = mtime}};
    CHECK(utimensat(AT_FDCWD, path, t, 0) == 0);
}

static void test_bound(void) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/bound", tmpdir);
    mkdir(dir, 0700);
    /* 20 files of 4 MiB (80 MiB), the oldest first; a stale temporary, a fresh one, a file not ours */
    const time_t t0 = time(NULL) - 100000;
    char p[256];
    for (int i = 0; i < 20; i++) {
        snprintf(p, sizeof p, "%s/%016x.zgk", dir, i);
        touch_at(p, 4u << 20, t0 + i * 10);
    }
    snprintf(p, sizeof p, "%s/0000000000000001.zgk.tmp.1.deadbeef", dir);
    touch_at(p, 1000, t0);
    snprintf(p, sizeof p, "%s/0000000000000002.zgk.tmp.2.deadbeef", dir);
    touch_at(p, 1000, time(NULL));
    snprintf(p, sizeof p, "%s/notes.txt", dir);
    touch_at(p, 8u << 20, t0);
    zg_jit_cache_configure(dir, 60ull << 20);
    zg_jit_stats_reset();
    char *src = tiny_variant(11);
    (void)get("bound", src);
    zg_jit_stats s;
    zg_jit_stats_get(&s);
    CHECK(s.compiles == 1 && s.disk_writes == 1);
    /* 80 MiB + the new file: the 6 oldest go (then 56 MiB and a little), the new one stays */
    CHECK_MSG(s.evictions == 6, "%llu evictions", (unsigned long long)s.evictions);
    int gone = 0, kept = 0;
    for (int i = 0; i < 20; i++) {
        snprintf(p, sizeof p, "%s/%016x.zgk", dir, i);
        struct stat st;
        const int there = stat(p, &st) == 0;
        if (i < 6) gone += !there;
        else kept += there;
    }
    CHECK(gone == 6 && kept == 14);
    int files, temps;
    uint64_t bytes;
    count_files(dir, &files, &temps, &bytes);
    CHECK(files == 15 && bytes <= (60ull << 20));
    CHECK(temps == 1); /* the stale temporary went, the fresh one (a writer at work) stayed */
    snprintf(p, sizeof p, "%s/notes.txt", dir);
    struct stat st;
    CHECK(stat(p, &st) == 0); /* not a cache file: never touched */
    free(src);
}

/* ------------------------------------------------------------------ concurrency */
typedef struct racer {
    const char *source;
    const zg_jit_image *img;
    zgpu_status st;
} racer;

static void *race_thread(void *arg) {
    racer *r = arg;
    r->st = zg_jit_cache_get("race", r->source, NULL, 0, "sm_90", "13000", &r->img);
    return NULL;
}

static void test_threads(void) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/threads", tmpdir);
    zg_jit_cache_configure(dir, 0);
    zg_jit_stats_reset();
    char *src = tiny_variant(21);
    enum { N = 8 };
    pthread_t th[N];
    racer r[N];
    for (int i = 0; i < N; i++) {
        r[i] = (racer){src, NULL, ZGPU_ERR_INTERNAL};
        pthread_create(&th[i], NULL, race_thread, &r[i]);
    }
    int ok = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        ok += r[i].st == ZGPU_OK && r[i].img == r[0].img;
    }
    zg_jit_stats s;
    zg_jit_stats_get(&s);
    CHECK(ok == N);
    CHECK_MSG(s.compiles == 1 && s.memory_hits == N - 1, "%llu compiles, %llu memory hits",
              (unsigned long long)s.compiles, (unsigned long long)s.memory_hits);
    free(src);
}

/* 8 processes started together (DataLoader workers) build the same kernel into one directory */
static void test_processes(void) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/procs", tmpdir);
    zg_jit_cache_configure(dir, 0);
    (void)zg_jit_cache_dir(NULL); /* created before the fork, as a worker's parent would have */
    char *src = tiny_variant(31);
    enum { N = 8 };
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t pids[N];
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            char c;
            close(go[1]);
            if (read(go[0], &c, 1) < 0) _exit(3); /* wait for the start: all at once */
            const zg_jit_image *img = NULL;
            const zgpu_status st = zg_jit_cache_get("procs", src, NULL, 0, "sm_90", "13000", &img);
            _exit(st == ZGPU_OK && img && img->code_size > 100 ? 0 : 1);
        }
    }
    close(go[0]);
    close(go[1]); /* EOF: every child starts */
    int ok = 0;
    for (int i = 0; i < N; i++) {
        int status = 0;
        waitpid(pids[i], &status, 0);
        ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    CHECK_MSG(ok == N, "%d of %d processes built the kernel", ok, N);
    int files, temps;
    uint64_t bytes;
    count_files(dir, &files, &temps, &bytes);
    CHECK_MSG(files == 1 && temps == 0, "%d files, %d temporaries", files, temps);
    /* and the file is whole: this process loads it from disk */
    zg_jit_cache_forget_memory();
    zg_jit_stats_reset();
    (void)get("procs", src);
    zg_jit_stats s;
    zg_jit_stats_get(&s);
    CHECK(s.disk_hits == 1 && s.compiles == 0 && s.disk_rejects == 0);
    free(src);
}

int main(void) {
    test_keys();
    const char *why = NULL;
    if (!zg_nvrtc_available(&why)) {
        printf("%d passed, %d failed (keys)\n", zt_pass, zt_fail);
        if (zt_fail) return 1;
        printf("skipped: no NVRTC (%s)\n", why);
        return 77;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zgpu-jit-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_compile();
    test_round_trip();
    test_bound();
    test_threads();
    test_processes();
    zg_jit_cache_configure("", 0);
    rm_rf(tmpdir);
    TEST_MAIN_END();
}
