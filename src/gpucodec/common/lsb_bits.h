/* LSB-first forward bit reader over a byte buffer (deflate, zstd FSE table descriptions), shared by the host
 * frame checks (frames.c, zstd_plan.c). */
#ifndef ZG_LSB_BITS_H
#define ZG_LSB_BITS_H
#include <stddef.h>
#include <stdint.h>

/* Bits past the end read as zero; callers check bits_over() before trusting what they read. */
typedef struct zg_bits {
    const uint8_t *p;
    size_t n;
    uint64_t pos; /* in bits */
} zg_bits;

static inline uint32_t bits_peek(const zg_bits *b, int k) { /* k <= 25 */
    uint64_t byte = b->pos >> 3, w = 0;
    for (int i = 0; i < 4; i++)
        if (byte + (uint64_t)i < b->n) w |= (uint64_t)b->p[byte + (uint64_t)i] << (8 * i);
    return (uint32_t)(w >> (b->pos & 7)) & ((1u << k) - 1u);
}
static inline uint32_t bits_get(zg_bits *b, int k) {
    uint32_t v = bits_peek(b, k);
    b->pos += (uint64_t)k;
    return v;
}
static inline int bits_over(const zg_bits *b) { return b->pos > (uint64_t)b->n * 8; }

#endif
