/* A byte buffer that either owns growable heap memory or wraps fixed caller memory.
 * Decoders write into a zg_buf: wrapping the caller's output lets the last codec stage decode in place. */
#ifndef ZG_BUF_H
#define ZG_BUF_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

typedef struct zg_buf {
    uint8_t *data;
    size_t size;   /* bytes in use */
    size_t cap;    /* bytes available at data */
    int fixed;     /* 1: data is caller memory and cannot grow; reserve beyond cap fails */
} zg_buf;

#define ZG_BUF_INIT {0, 0, 0, 0}

/** Wraps caller memory of `cap` bytes; size starts at 0. */
zg_buf zg_buf_wrap(void *data, size_t cap);
/** Ensures cap >= n (keeping contents). Fixed buffers: ZGPU_ERR_CORRUPT_DATA if n > cap
 *  ("decoded data larger than the N bytes expected"). Heap: ZGPU_ERR_NO_MEMORY on failure. */
zgpu_status zg_buf_reserve(zg_buf *b, size_t n);
/** zg_buf_reserve gives buffers of ZG_BUF_PAGE_MIN bytes or more a page-aligned start. Chunks are read (pread) into
 *  them, and the kernel's copy out of the page cache (rep movsb) runs about 9x slower on AMD Zen where the
 *  destination lies 1 to 31 bytes past the source modulo 4 KiB: realloc's large blocks start 16 bytes into a page,
 *  so every chunk read at file offset 0 into one did (2.4 against 22 GB/s on the 2-core machine's EPYC). */
#define ZG_BUF_PAGE ((size_t)4096)
#define ZG_BUF_PAGE_MIN ((size_t)64 << 10)
/** Appends n bytes (reserve + memcpy). */
zgpu_status zg_buf_append(zg_buf *b, const void *src, size_t n);
/** Frees owned memory and resets to empty; fixed buffers are just reset. */
void zg_buf_free(zg_buf *b);

/* Buffers of megabytes that a decode fills once: the kernel backs their 2 MiB-aligned parts with transparent huge
 * pages where asked (Linux, THP "madvise" mode, Debian's and Ubuntu's default), so the first touch takes hundreds of
 * page faults instead of tens of thousands (zgpu read of a 134 MB array to /dev/null on the 2-core machine: 37,000
 * minor faults and 0.17-0.18 s a process with 4 KiB pages, 2,300 and 0.11-0.12 s with huge pages). Heap buffers
 * (zg_buf), cache entries and the CLI's slabs take the hint. */
#define ZG_HUGE_MIN ((size_t)4 << 20) /* smaller buffers are left as they are */
/** Asks for huge pages on the 2 MiB-aligned part of [p, p + n) (a hint: nothing when n < ZG_HUGE_MIN, elsewhere
 *  than Linux, or when the kernel declines). Call it before the buffer is first written. */
void zg_hugepage_hint(void *p, size_t n);
/** n bytes (free() them), 2 MiB-aligned and hinted for huge pages when n >= ZG_HUGE_MIN; NULL when out of
 *  memory. */
void *zg_alloc_big(size_t n);

#endif
