/* A host read's trace (tuning trace: host/read_trace.c): one line per unit on stderr, in order of start, naming its
 * chunk and its times, then a summary with the units' count; nothing without the tuning. The read's values are the
 * same either way. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meta_json.h"
#include "test.h"
#include "zgpu.h"
#include "zgpu_experimental.h"

#define SHAPE "[32, 64, 64]"

static char tmpdir[256];

/* The stderr a host read of the box prints (into buf), and its values (into out). */
static size_t read_with_stderr(zgpu_array *a, const uint64_t *st, const uint64_t *ct, uint16_t *out, char *buf,
                               size_t cap) {
    char path[512];
    snprintf(path, sizeof path, "%s/stderr.txt", tmpdir);
    fflush(stderr);
    const int saved = dup(2);
    FILE *f = fopen(path, "w+");
    if (!f || saved < 0) {
        CHECK_MSG(0, "cannot capture stderr in %s", path);
        if (f) fclose(f);
        if (saved >= 0) close(saved);
        return 0;
    }
    dup2(fileno(f), 2);
    const zgpu_status s = zgpu_array_read(a, st, ct, out, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    CHECK_MSG(s == ZGPU_OK, "traced read: %s", zgpu_last_error());
    rewind(f);
    const size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
    return n;
}

static int count(const char *text, const char *needle) {
    int k = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) k++;
    return k;
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zgpu_test_read_trace_%d", (int)getpid());
    mkdir(tmpdir, 0755);
    zgpu_context *plain = NULL, *traced = NULL;
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.num_threads = 2;
    CHECK_OK(zgpu_context_create(&o, &plain));
    zgpu_tuning t;
    zgpu_tuning_init(&t);
    t.trace = 1;
    t.host_read_route = ZGPU_ROUTE_HOST; /* (the host executor, even where a GPU is up) */
    o.tuning = &t;
    CHECK_OK(zgpu_context_create(&o, &traced));
    char path[512], meta[1024];
    snprintf(path, sizeof path, "%s/a", tmpdir);
    snprintf(meta, sizeof meta, ZT_META3_U16(SHAPE, "[" ZT_BYTES ", " ZT_ZSTD "]"), "[16, 32, 32]");
    zgpu_array *w = NULL, *a = NULL, *b = NULL;
    CHECK_OK(zgpu_array_create(plain, path, meta, 1, &w));
    const size_t n = 32 * 64 * 64;
    uint16_t *data = malloc(n * 2), *x = malloc(n * 2), *y = malloc(n * 2);
    for (size_t i = 0; i < n; i++) data[i] = (uint16_t)(i * 3);
    const uint64_t s0[3] = {0, 0, 0}, all[3] = {32, 64, 64};
    CHECK_OK(zgpu_array_write(w, s0, all, data, NULL));
    zgpu_array_close(w);
    CHECK_OK(zgpu_array_open(traced, path, &a));
    CHECK_OK(zgpu_array_open(plain, path, &b));
    static char text[65536];
    /* a box over 2 x 2 x 2 of the 2 x 2 x 2 chunks: 8 units */
    const uint64_t st[3] = {5, 10, 20}, ct[3] = {20, 40, 30};
    if (a && b) {
        read_with_stderr(a, st, ct, x, text, sizeof text);
        CHECK_MSG(count(text, "zgpu trace: host read unit 'c/") == 8, "8 unit lines expected:\n%s", text);
        CHECK_MSG(count(text, "zgpu trace: host read '") == 1 && strstr(text, ": 8 units (0 not shown) on 2 threads"),
                  "one summary of 8 units on 2 threads expected:\n%s", text);
        CHECK(strstr(text, "'c/0/0/0' inner 0") && strstr(text, "'c/1/1/0' inner 0"));
        /* starts in order */
        double last = -1;
        int ordered = 1;
        for (const char *p = text; (p = strstr(p, ": start ")); p += 8) {
            const double v = atof(p + 8);
            ordered &= v >= last;
            last = v;
        }
        CHECK_MSG(ordered, "unit lines not in order of start:\n%s", text);
        CHECK_OK(zgpu_array_read(b, st, ct, y, NULL));
        CHECK(!memcmp(x, y, (size_t)(ct[0] * ct[1] * ct[2]) * 2));
        /* untraced: nothing */
        zgpu_array_close(a);
        a = NULL;
        CHECK_OK(zgpu_array_open(plain, path, &a));
        if (a) read_with_stderr(a, st, ct, x, text, sizeof text);
        CHECK_MSG(!strstr(text, "zgpu trace"), "an untraced read printed:\n%s", text);
    }
    zgpu_array_close(a);
    zgpu_array_close(b);
    free(data), free(x), free(y);
    zgpu_context_free(plain);
    zgpu_context_free(traced);
    zt_remove_dir(tmpdir);
    TEST_MAIN_END();
}
