/* Per-thread scratch buffers for the host executor, reused across chunks and reads and freed when the
 * thread exits. */
#ifndef ZG_SCRATCH_H
#define ZG_SCRATCH_H
#include "codec/chain.h"

typedef struct zg_thread_scratch {
    zg_scratch codec; /* codec stage buffers */
    zg_buf io;        /* encoded bytes as read from the store */
    zg_buf chunk;     /* one decoded chunk, when it cannot decode in place */
    zg_buf runs;      /* the byte runs a chunk needed in part is decoded for (zg_byte_run) */
} zg_thread_scratch;

/** This thread's scratch, or NULL when it cannot be allocated. */
zg_thread_scratch *zg_thread_scratch_get(void);

#endif
