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
/** Appends n bytes (reserve + memcpy). */
zgpu_status zg_buf_append(zg_buf *b, const void *src, size_t n);
/** Frees owned memory and resets to empty; fixed buffers are just reset. */
void zg_buf_free(zg_buf *b);

#endif
