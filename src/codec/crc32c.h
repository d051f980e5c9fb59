/* CRC32C (Castagnoli, reflected polynomial 0x82F63B78), as used by the Zarr v3 "crc32c" codec. */
#ifndef ZG_CRC32C_H
#define ZG_CRC32C_H
#include <stddef.h>
#include <stdint.h>
#include "codec/codec.h"

extern const zg_codec_vtable zg_codec_crc32c;

/** Continues a CRC32C: start with crc = 0; zg_crc32c(zg_crc32c(0, a, n), b, m) == crc of a followed by b.
 *  Uses SSE4.2 when the CPU has it. Thread-safe. */
uint32_t zg_crc32c(uint32_t crc, const void *p, size_t n);

/** The table-driven implementation alone (for tests and for comparing against the SSE4.2 path). */
uint32_t zg_crc32c_portable(uint32_t crc, const void *p, size_t n);

#endif
