#include "common/buf.h"

#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include "common/status.h"

zg_buf zg_buf_wrap(void *data, size_t cap) {
    zg_buf b = {(uint8_t *)data, 0, cap, 1};
    return b;
}

zgpu_status zg_buf_reserve(zg_buf *b, size_t n) {
    if (n <= b->cap) return ZGPU_OK;
    if (b->fixed)
        return zg_error(ZGPU_ERR_CORRUPT_DATA, "decoded data larger than the %zu bytes expected", b->cap);
    size_t cap = b->cap ? b->cap : 256;
    while (cap < n) cap = cap > SIZE_MAX / 2 ? n : cap * 2;
    uint8_t *p = NULL;
    if (cap >= ZG_BUF_PAGE_MIN) { /* (page-aligned: see buf.h; the old bytes kept as realloc keeps them) */
        if (posix_memalign((void **)&p, ZG_BUF_PAGE, cap)) p = NULL;
        if (p && b->cap) memcpy(p, b->data, b->cap);
        if (p) free(b->data);
    } else {
        p = realloc(b->data, cap);
    }
    if (!p) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory allocating %zu bytes", cap);
    zg_hugepage_hint(p + b->size, cap - b->size); /* (the part not written yet) */
    b->data = p;
    b->cap = cap;
    return ZGPU_OK;
}

zgpu_status zg_buf_append(zg_buf *b, const void *src, size_t n) {
    if (n > SIZE_MAX - b->size) return zg_error(ZGPU_ERR_NO_MEMORY, "buffer size overflow");
    ZG_FORWARD(zg_buf_reserve(b, b->size + n));
    if (n) memcpy(b->data + b->size, src, n);
    b->size += n;
    return ZGPU_OK;
}

void zg_buf_free(zg_buf *b) {
    if (!b->fixed) free(b->data);
    b->data = NULL;
    b->size = b->cap = 0;
    b->fixed = 0;
}

#define HUGE_PAGE ((uintptr_t)2 << 20)

void zg_hugepage_hint(void *p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (!p || n < ZG_HUGE_MIN) return;
    const uintptr_t a = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1), e = ((uintptr_t)p + n) & ~(HUGE_PAGE - 1);
    if (e > a) (void)madvise((void *)a, (size_t)(e - a), MADV_HUGEPAGE); /* (declined: 4 KiB pages, as without) */
#else
    (void)p;
    (void)n;
#endif
}

void *zg_alloc_big(size_t n) {
    if (n < ZG_HUGE_MIN) return malloc(n ? n : 1);
    void *p = NULL;
    if (posix_memalign(&p, (size_t)HUGE_PAGE, n)) return NULL;
    zg_hugepage_hint(p, n);
    return p;
}

ZGPU_API void zgpu_free(void *ptr) { free(ptr); }
