/* Building blocks of the parallel CRC32 / CRC32C / Adler-32 / XXH64 checks, shared by the GPU kernels (kernels.cu)
 * and the CPU unit test (tests/unit/test_blosc_parse.c), so that the split-and-combine math the kernels rely
 * on is checked in CI without a GPU. Header-only: every function is static inline (and __host__ __device__
 * under nvcc).
 *
 * How a buffer of n bytes is checked in parallel: it is cut into consecutive ranges, one per thread.
 *  - CRC (reflected, init ~0, final xor ~0): the CRC register is linear over GF(2) in (initial register,
 *    message), so crc(M) = ~(shift(~0, n) ^ XOR_ranges shift(raw(range), n - range_end)), where raw() runs the
 *    register from 0 over the range and shift(v, m) = v * x^(8m) mod P, i.e. the effect of m zero bytes.
 *    Each range's term is independent of the others, so the terms are XOR-reduced in any order.
 *  - Adler-32: a = 1 + sum(d_i), b = n + sum((n - i) * d_i) (mod 65521). A range [s, e) with local sums
 *    a_r = sum(d_j), b_r = sum((e - s - j) * d_j) contributes a_r to a and (n - e) * a_r + b_r to b; the
 *    terms are summed in any order. */
#ifndef ZG_CHECKSUM_COMBINE_H
#define ZG_CHECKSUM_COMBINE_H
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define ZG_CK_FN static __host__ __device__ inline
#else
#define ZG_CK_FN static inline
#endif

/* The checksums a stored format carries of its decoded bytes, as the GPU check kernel (post_kernels.h:
 * zg_k_check) takes them: gzip's CRC32, zlib's Adler-32 (whole zlib chunks and blosc's zlib streams), and the low
 * 32 bits of XXH64 of a zstd frame with the content checksum flag. */
enum { ZG_CHECK_NONE = 0, ZG_CHECK_CRC32 = 1, ZG_CHECK_ADLER32 = 2, ZG_CHECK_XXH64 = 3 };

#define ZG_CRC32_POLY 0xEDB88320u  /* gzip, reflected */
#define ZG_CRC32C_POLY 0x82F63B78u /* Castagnoli, reflected */
#define ZG_ADLER_MOD 65521u
#define ZG_ADLER_NMAX 5552u /* most bytes before a, b (< 65521 at the start) must be reduced to fit 32 bits */
#define ZG_CRC_POW_N 64     /* powers x^(8 * 2^k), k < 64, cover every 64-bit shift */

/* a * b mod P in the reflected representation (bit 31 holds x^0, bit 0 holds x^31). */
ZG_CK_FN uint32_t zg_gf2_mulmod(uint32_t a, uint32_t b, uint32_t poly) {
    uint32_t prod = 0;
    for (int i = 0; i < 32; i++) {
        prod ^= b & (0u - (a >> 31)); /* coefficient x^i of a (a is shifted left each round) */
        a <<= 1;
        b = (b >> 1) ^ (poly & (0u - (b & 1u))); /* b *= x */
    }
    return prod;
}

/* pow[k] = x^(8 * 2^k) mod P: the shift by 2^k zero bytes. */
ZG_CK_FN void zg_crc_pow_init(uint32_t pow[ZG_CRC_POW_N], uint32_t poly) {
    pow[0] = 0x80000000u >> 8; /* x^8 */
    for (int k = 1; k < ZG_CRC_POW_N; k++) pow[k] = zg_gf2_mulmod(pow[k - 1], pow[k - 1], poly);
}

/* v * x^(8m) mod P: a raw CRC register advanced over m zero bytes, by square-and-multiply. */
ZG_CK_FN uint32_t zg_crc_shift(uint32_t v, uint64_t m, const uint32_t *pow, uint32_t poly) {
    for (int k = 0; m != 0 && k < ZG_CRC_POW_N; k++, m >>= 1)
        if (m & 1u) v = zg_gf2_mulmod(v, pow[k], poly);
    return v;
}

/* Standard CRCs: crc(A || B) from crc(A), crc(B) and |B|. */
ZG_CK_FN uint32_t zg_crc_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b, const uint32_t *pow, uint32_t poly) {
    return zg_crc_shift(crc_a, len_b, pow, poly) ^ crc_b;
}

/* The final CRC of n bytes from the XOR of all ranges' shifted raw terms. */
ZG_CK_FN uint32_t zg_crc_finish(uint32_t linear, uint64_t n, const uint32_t *pow, uint32_t poly) {
    return ~(linear ^ zg_crc_shift(0xffffffffu, n, pow, poly));
}

/* Slicing-by-8 tables, tab[k * 256 + i] = the raw register after byte i followed by k zero bytes. */
ZG_CK_FN uint32_t zg_crc_table0_entry(uint32_t i, uint32_t poly) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (poly & (0u - (c & 1u)));
    return c;
}
ZG_CK_FN void zg_crc_tables8_init(uint32_t *tab, uint32_t poly) {
    for (uint32_t i = 0; i < 256; i++) tab[i] = zg_crc_table0_entry(i, poly);
    for (uint32_t k = 1; k < 8; k++)
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t prev = tab[(k - 1) * 256 + i];
            tab[k * 256 + i] = (prev >> 8) ^ tab[prev & 0xff];
        }
}

/* Raw register update over bytes (table 0 only) and over one 8-byte little-endian word (lo, hi). */
ZG_CK_FN uint32_t zg_crc_raw_bytes(const uint32_t *tab, uint32_t reg, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) reg = tab[(reg ^ p[i]) & 0xff] ^ (reg >> 8);
    return reg;
}
ZG_CK_FN uint32_t zg_crc_raw_word8(const uint32_t *tab, uint32_t reg, uint32_t lo, uint32_t hi) {
    reg ^= lo;
    return tab[7 * 256 + (reg & 0xff)] ^ tab[6 * 256 + ((reg >> 8) & 0xff)] ^ tab[5 * 256 + ((reg >> 16) & 0xff)] ^
           tab[4 * 256 + (reg >> 24)] ^ tab[3 * 256 + (hi & 0xff)] ^ tab[2 * 256 + ((hi >> 8) & 0xff)] ^
           tab[1 * 256 + ((hi >> 16) & 0xff)] ^ tab[hi >> 24];
}

/* Adler-32 local sums over one range (a_r, b_r as above, reduced mod 65521). */
ZG_CK_FN void zg_adler_range(const uint8_t *p, size_t n, uint32_t *a_out, uint32_t *b_out) {
    uint32_t a = 0, b = 0;
    size_t i = 0;
    while (i < n) {
        size_t stop = n - i < ZG_ADLER_NMAX ? n : i + ZG_ADLER_NMAX;
        for (; i < stop; i++) {
            a += p[i];
            b += a;
        }
        a %= ZG_ADLER_MOD;
        b %= ZG_ADLER_MOD;
    }
    *a_out = a;
    *b_out = b;
}
/* The range's term of b: (n - range_end) * a_r + b_r. */
ZG_CK_FN uint32_t zg_adler_b_term(uint32_t a_r, uint32_t b_r, uint64_t bytes_after) {
    return (uint32_t)(((bytes_after % ZG_ADLER_MOD) * a_r + b_r) % ZG_ADLER_MOD);
}
/* Adler-32 of n bytes from the sums of all ranges' a terms and b terms (each sum taken mod 65521 or not:
 * any value below 2^32 - 65521 works). */
ZG_CK_FN uint32_t zg_adler_finish(uint64_t sum_a, uint64_t sum_b, uint64_t n) {
    uint32_t a = (uint32_t)((1 + sum_a % ZG_ADLER_MOD) % ZG_ADLER_MOD);
    uint32_t b = (uint32_t)((n % ZG_ADLER_MOD + sum_b % ZG_ADLER_MOD) % ZG_ADLER_MOD);
    return b << 16 | a;
}
/* The classic pairwise form: adler(A || B) from adler(A), adler(B) and |B|. */
ZG_CK_FN uint32_t zg_adler_combine(uint32_t ad_a, uint32_t ad_b, uint64_t len_b) {
    uint32_t a1 = ad_a & 0xffff, b1 = ad_a >> 16, a2 = ad_b & 0xffff, b2 = ad_b >> 16;
    uint32_t rem = (uint32_t)(len_b % ZG_ADLER_MOD);
    /* a = a1 + a2 - 1, b = b1 + b2 + len_b * (a1 - 1), all mod 65521, kept non-negative */
    uint32_t a = (a1 + a2 + ZG_ADLER_MOD - 1) % ZG_ADLER_MOD;
    uint32_t b = (uint32_t)(((uint64_t)b1 + b2 + (uint64_t)rem * ((a1 + ZG_ADLER_MOD - 1) % ZG_ADLER_MOD)) % ZG_ADLER_MOD);
    return b << 16 | a;
}

/* XXH64 (seed 0) in four lanes: lane k (0..3) runs accumulator k over the 8-byte words at 32 * s + 8 * k of every
 * whole 32-byte stripe s, independently of the others (the GPU gives each lane a thread); zg_xxh64_finish merges
 * the lanes and hashes the tail. Constants and steps: the xxHash specification (XXH64). */
#define ZG_XXH_P1 11400714785074694791ull
#define ZG_XXH_P2 14029467366897019727ull
#define ZG_XXH_P3 1609587929392839161ull
#define ZG_XXH_P4 9650029242287828579ull
#define ZG_XXH_P5 2870177450012600261ull

ZG_CK_FN uint64_t zg_xxh_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
ZG_CK_FN uint64_t zg_xxh_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--) v = (v << 8) | p[k];
    return v;
}
ZG_CK_FN uint64_t zg_xxh_round(uint64_t acc, uint64_t in) { return zg_xxh_rotl(acc + in * ZG_XXH_P2, 31) * ZG_XXH_P1; }

/* Lane k's accumulator after every whole stripe of p[0, n) (meaningful only when n >= 32); its start value is
 * zstd_rules.h's zd_xxh64's v[k] too. */
ZG_CK_FN uint64_t zg_xxh64_lane(const uint8_t *p, uint64_t n, int k) {
    uint64_t v = k == 0 ? ZG_XXH_P1 + ZG_XXH_P2 : k == 1 ? ZG_XXH_P2 : k == 2 ? 0 : 0 - ZG_XXH_P1;
    for (uint64_t s = 0; s + 32 <= n; s += 32) v = zg_xxh_round(v, zg_xxh_le64(p + s + 8 * (uint64_t)k));
    return v;
}

/* XXH64 of p[0, n) from the four lanes' accumulators (ignored when n < 32). */
ZG_CK_FN uint64_t zg_xxh64_finish(const uint64_t v[4], const uint8_t *p, uint64_t n) {
    uint64_t h, i = n - n % 32;
    if (n >= 32) {
        h = zg_xxh_rotl(v[0], 1) + zg_xxh_rotl(v[1], 7) + zg_xxh_rotl(v[2], 12) + zg_xxh_rotl(v[3], 18);
        for (int k = 0; k < 4; k++) h = (h ^ zg_xxh_round(0, v[k])) * ZG_XXH_P1 + ZG_XXH_P4;
    } else {
        h = ZG_XXH_P5;
        i = 0;
    }
    h += n;
    for (; i + 8 <= n; i += 8) h = zg_xxh_rotl(h ^ zg_xxh_round(0, zg_xxh_le64(p + i)), 27) * ZG_XXH_P1 + ZG_XXH_P4;
    if (i + 4 <= n) {
        const uint64_t w = (uint64_t)p[i] | (uint64_t)p[i + 1] << 8 | (uint64_t)p[i + 2] << 16 | (uint64_t)p[i + 3] << 24;
        h = zg_xxh_rotl(h ^ (w * ZG_XXH_P1), 23) * ZG_XXH_P2 + ZG_XXH_P3;
        i += 4;
    }
    for (; i < n; i++) h = zg_xxh_rotl(h ^ (p[i] * ZG_XXH_P5), 11) * ZG_XXH_P1;
    h ^= h >> 33;
    h *= ZG_XXH_P2;
    h ^= h >> 29;
    h *= ZG_XXH_P3;
    h ^= h >> 32;
    return h;
}

#endif
