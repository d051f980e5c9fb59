/* Bytes in memory read through the library's read callback shape (zgpu_status (*)(ctx, off, len, out)): a TIFF
 * file for its parser, a zstd frame read in part. A read past the end is a bug (abort): every caller checks its
 * ranges first. */
#ifndef ZG_FUZZ_MEM_H
#define ZG_FUZZ_MEM_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zgpu.h"

typedef struct fuzz_mem {
    const uint8_t *p;
    size_t n;
} fuzz_mem;

static inline zgpu_status fuzz_mem_read(void *user, uint64_t off, uint64_t n, uint8_t *out) {
    const fuzz_mem *m = user;
    if (off > m->n || n > m->n - off) abort();
    memcpy(out, m->p + off, (size_t)n);
    return ZGPU_OK;
}
#endif
