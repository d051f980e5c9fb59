/* Little-endian loads from byte buffers (format fields, checksums, bit readers). Written byte by byte so they
 * need no alignment; compilers fold them into single loads on little-endian machines. */
#ifndef ZG_ENDIAN_H
#define ZG_ENDIAN_H
#include <stdint.h>
#include <string.h>

static inline uint32_t zg_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint32_t zg_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* (GCC 12 does not fold a byte loop of eight into one load: a memcpy, swapped on big-endian machines) */
static inline uint64_t zg_le64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

#endif
