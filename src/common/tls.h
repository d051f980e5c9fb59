/* Per-thread objects that live until their thread exits: codec contexts and scratch buffers are made once
 * per thread, not once per chunk. */
#ifndef ZG_TLS_H
#define ZG_TLS_H
#include <stddef.h>

/** Returns *slot (a _Thread_local pointer of the caller's), first setting it to `size` zeroed bytes whose
 *  `destroy` (which frees the contents and the object) runs when the thread exits. NULL on allocation failure. */
void *zg_tls_get(void **slot, size_t size, void (*destroy)(void *));

#endif
