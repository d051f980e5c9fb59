/* Little-endian loads from byte buffers (format fields, checksums, bit readers). Written byte by byte so they
 * need no alignment; compilers fold them into single loads on little-endian machines. */
#ifndef ZG_ENDIAN_H
#define ZG_ENDIAN_H
#include <stdint.h>

static inline uint32_t zg_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t zg_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

#endif
