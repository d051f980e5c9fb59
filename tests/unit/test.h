/* Minimal test harness: CHECK macros count failures; TEST_MAIN prints "N passed, N failed" and exits 1 on failure. */
#ifndef ZG_TEST_H
#define ZG_TEST_H
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int zt_pass, zt_fail;

/* ZT_ASAN: built with AddressSanitizer (GCC's macro, or clang's feature test) */
#if defined(__SANITIZE_ADDRESS__)
#define ZT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ZT_ASAN 1
#endif
#endif

/* Removes a test's scratch directory and everything under it; 0, or nonzero (said on stderr) where that failed. */
static inline int zt_remove_dir(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    const int r = system(cmd);
    if (r != 0) fprintf(stderr, "could not remove %s\n", dir);
    return r;
}

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (cond) zt_pass++;                                                             \
        else { zt_fail++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } \
    } while (0)
#define CHECK_MSG(cond, ...)                                                             \
    do {                                                                                 \
        if (cond) zt_pass++;                                                             \
        else { zt_fail++; fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
               fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); }                      \
    } while (0)
#define CHECK_EQ_U64(a, b)                                                               \
    do {                                                                                 \
        uint64_t zt_a = (uint64_t)(a), zt_b = (uint64_t)(b);                             \
        if (zt_a == zt_b) zt_pass++;                                                     \
        else { zt_fail++; fprintf(stderr, "%s:%d: %s == %s failed: %" PRIu64 " != %" PRIu64 "\n", \
                                  __FILE__, __LINE__, #a, #b, zt_a, zt_b); }             \
    } while (0)
#define CHECK_STR(a, b)                                                                  \
    do {                                                                                 \
        const char *zt_a = (a), *zt_b = (b);                                             \
        if (zt_a && zt_b && strcmp(zt_a, zt_b) == 0) zt_pass++;                          \
        else { zt_fail++; fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n",  \
                                  __FILE__, __LINE__, #a, #b, zt_a ? zt_a : "(null)", zt_b ? zt_b : "(null)"); } \
    } while (0)
/* A zgpu call that must succeed. */
#define CHECK_OK(expr)                                                                   \
    do {                                                                                 \
        zgpu_status zt_s = (expr);                                                       \
        if (zt_s == ZGPU_OK) zt_pass++;                                                  \
        else { zt_fail++; fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #expr, \
                                  zgpu_status_name(zt_s), zgpu_last_error()); }          \
    } while (0)
/* A zgpu call that must fail with a given status. */
#define CHECK_STATUS(expr, want)                                                         \
    do {                                                                                 \
        zgpu_status zt_s = (expr);                                                       \
        if (zt_s == (want)) zt_pass++;                                                   \
        else { zt_fail++; fprintf(stderr, "%s:%d: %s -> %s, wanted %s (%s)\n", __FILE__, __LINE__, #expr, \
                                  zgpu_status_name(zt_s), zgpu_status_name(want), zgpu_last_error()); } \
    } while (0)

#define TEST_MAIN_END()                                                                  \
    do {                                                                                 \
        printf("%d passed, %d failed\n", zt_pass, zt_fail);                              \
        return zt_fail ? 1 : 0;                                                          \
    } while (0)
/* The end of a GPU test whose host part ran without a GPU: that part's result, then a visible skip (`why`: what
 * zgpu_gpu_available said); with a GPU, TEST_MAIN_END. */
#define TEST_MAIN_END_GPU(gpu, why)                                                      \
    do {                                                                                 \
        if (!(gpu)) {                                                                    \
            printf("%d passed, %d failed (host part)\n", zt_pass, zt_fail);              \
            if (zt_fail) return 1;                                                       \
            printf("skipped: no GPU (%s)\n", why);                                       \
            return 77;                                                                   \
        }                                                                                \
        TEST_MAIN_END();                                                                 \
    } while (0)
/* Exit code ctest reads as "skipped". */
#define TEST_SKIP(why) do { printf("skipped: %s\n", why); return 77; } while (0)
/* A GPU test's main in a build without CUDA: a visible skip. */
#define TEST_MAIN_WITHOUT_CUDA()                                                         \
    int main(void) {                                                                     \
        (void)zt_pass, (void)zt_fail;                                                    \
        TEST_SKIP("no GPU (built without CUDA)");                                        \
    }
/* A CUDA runtime call that must succeed (GPU tests). */
#define CUOK(x) CHECK_MSG((x) == cudaSuccess, "%s", cudaGetErrorString(cudaGetLastError()))

#endif
