/* Element conversions with NumPy's casting results (astype, casting="unsafe"), for the numcodecs filters
 * (delta, fixedscaleoffset). Internal to those codecs. Each function switches on the type once and runs a
 * typed loop; buffers may be unaligned (elements move with memcpy).
 * Integers travel as uint64 bit patterns (sign- or zero-extended per the source type); floats as double.
 * float -> integer: truncation toward zero; NaN and out-of-range values as x86 NumPy gives them (see
 * nc_double_to_bits64). int -> float: one rounding (float16 targets round twice, via float). */
#ifndef ZG_NUMCONV_H
#define ZG_NUMCONV_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "meta/dtype.h"

#define NC_BLOCK 256

static inline int nc_is_int(zgpu_dtype t) { return t >= ZGPU_INT8 && t <= ZGPU_UINT64; }
static inline int nc_is_signed(zgpu_dtype t) { return t >= ZGPU_INT8 && t <= ZGPU_INT64; }
static inline int nc_is_float(zgpu_dtype t) { return t == ZGPU_FLOAT16 || t == ZGPU_FLOAT32 || t == ZGPU_FLOAT64; }
static inline int nc_is_numeric(zgpu_dtype t) { return nc_is_int(t) || nc_is_float(t); }

static inline uint32_t nc_size(zgpu_dtype t) {
    switch (t) {
    case ZGPU_INT8: case ZGPU_UINT8: return 1;
    case ZGPU_INT16: case ZGPU_UINT16: case ZGPU_FLOAT16: return 2;
    case ZGPU_INT32: case ZGPU_UINT32: case ZGPU_FLOAT32: return 4;
    default: return 8;
    }
}

/* Unaligned typed access; each compiles to one load or store. */
#define NC_ACCESSORS(SUF, T)                                                                              \
    static inline T nc_ld_##SUF(const uint8_t *p, size_t i) { T v; memcpy(&v, p + i * sizeof(T), sizeof(T)); return v; } \
    static inline void nc_st_##SUF(uint8_t *p, size_t i, T v) { memcpy(p + i * sizeof(T), &v, sizeof(T)); }
NC_ACCESSORS(i8, int8_t)
NC_ACCESSORS(i16, int16_t)
NC_ACCESSORS(i32, int32_t)
NC_ACCESSORS(i64, int64_t)
NC_ACCESSORS(u8, uint8_t)
NC_ACCESSORS(u16, uint16_t)
NC_ACCESSORS(u32, uint32_t)
NC_ACCESSORS(u64, uint64_t)
NC_ACCESSORS(f32, float)
NC_ACCESSORS(f64, double)
#define NC_LOAD(T, p, i) nc_ld_##T(p, i)
#define NC_STORE(T, p, i, v) nc_st_##T(p, i, v)

/* Integer source -> uint64 (sign- or zero-extended). */
static inline void nc_load_int(zgpu_dtype t, const uint8_t *s, uint64_t *d, size_t n) {
    switch (t) {
    case ZGPU_INT8:   for (size_t i = 0; i < n; i++) d[i] = (uint64_t)(int64_t)NC_LOAD(i8, s, i); break;
    case ZGPU_INT16:  for (size_t i = 0; i < n; i++) d[i] = (uint64_t)(int64_t)NC_LOAD(i16, s, i); break;
    case ZGPU_INT32:  for (size_t i = 0; i < n; i++) d[i] = (uint64_t)(int64_t)NC_LOAD(i32, s, i); break;
    case ZGPU_INT64:  for (size_t i = 0; i < n; i++) d[i] = (uint64_t)NC_LOAD(i64, s, i); break;
    case ZGPU_UINT8:  for (size_t i = 0; i < n; i++) d[i] = NC_LOAD(u8, s, i); break;
    case ZGPU_UINT16: for (size_t i = 0; i < n; i++) d[i] = NC_LOAD(u16, s, i); break;
    case ZGPU_UINT32: for (size_t i = 0; i < n; i++) d[i] = NC_LOAD(u32, s, i); break;
    case ZGPU_UINT64: for (size_t i = 0; i < n; i++) d[i] = NC_LOAD(u64, s, i); break;
    default: memset(d, 0, n * sizeof *d); break; /* not an integer type: callers never get here */
    }
}

/* Float source -> double (exact). */
static inline void nc_load_float(zgpu_dtype t, const uint8_t *s, double *d, size_t n) {
    switch (t) {
    case ZGPU_FLOAT16: for (size_t i = 0; i < n; i++) d[i] = zg_half_to_float(NC_LOAD(u16, s, i)); break;
    case ZGPU_FLOAT32: for (size_t i = 0; i < n; i++) d[i] = NC_LOAD(f32, s, i); break;
    case ZGPU_FLOAT64: for (size_t i = 0; i < n; i++) d[i] = NC_LOAD(f64, s, i); break;
    default: memset(d, 0, n * sizeof *d); break; /* not a float type: callers never get here */
    }
}

/* double -> integer bits as x86 NumPy casts: targets narrower than 8 bytes (except uint32) go through a
 * 32-bit conversion (out of int32 range -> INT32_MIN's pattern), the others through a 64-bit one (out of
 * range or NaN -> INT64_MIN's pattern; uint64 also takes [2^63, 2^64) exactly). Then truncation. */
static inline uint64_t nc_double_to_bits64(double v, int to_u64) {
    if (v >= -9223372036854775808.0 && v < 9223372036854775808.0) return (uint64_t)(int64_t)v;
    if (to_u64 && v >= 9223372036854775808.0 && v < 18446744073709551616.0) return (uint64_t)v;
    return (uint64_t)1 << 63;
}
static inline uint64_t nc_double_to_bits32(double v) {
    if (v >= -2147483648.0 && v < 2147483648.0) return (uint64_t)(int64_t)(int32_t)v;
    return (uint64_t)(int64_t)INT32_MIN;
}

/* uint64 bits -> integer target (truncation). */
static inline void nc_store_int_bits(zgpu_dtype t, const uint64_t *s, uint8_t *d, size_t n) {
    switch (t) {
    case ZGPU_INT8: case ZGPU_UINT8:   for (size_t i = 0; i < n; i++) NC_STORE(u8, d, i, (uint8_t)s[i]); break;
    case ZGPU_INT16: case ZGPU_UINT16: for (size_t i = 0; i < n; i++) NC_STORE(u16, d, i, (uint16_t)s[i]); break;
    case ZGPU_INT32: case ZGPU_UINT32: for (size_t i = 0; i < n; i++) NC_STORE(u32, d, i, (uint32_t)s[i]); break;
    case ZGPU_INT64: case ZGPU_UINT64: for (size_t i = 0; i < n; i++) NC_STORE(u64, d, i, s[i]); break;
    default: break;
    }
}

/* Integer values (bits s, signedness of their source type) -> any numeric target. */
static inline void nc_store_from_int(zgpu_dtype t, const uint64_t *s, int src_signed, uint8_t *d, size_t n) {
    if (nc_is_int(t)) { nc_store_int_bits(t, s, d, n); return; }
    switch (t) {
    case ZGPU_FLOAT16:
        if (src_signed) for (size_t i = 0; i < n; i++) NC_STORE(u16, d, i, zg_float_to_half((float)(int64_t)s[i]));
        else for (size_t i = 0; i < n; i++) NC_STORE(u16, d, i, zg_float_to_half((float)s[i]));
        break;
    case ZGPU_FLOAT32:
        if (src_signed) for (size_t i = 0; i < n; i++) NC_STORE(f32, d, i, (float)(int64_t)s[i]);
        else for (size_t i = 0; i < n; i++) NC_STORE(f32, d, i, (float)s[i]);
        break;
    case ZGPU_FLOAT64:
        if (src_signed) for (size_t i = 0; i < n; i++) NC_STORE(f64, d, i, (double)(int64_t)s[i]);
        else for (size_t i = 0; i < n; i++) NC_STORE(f64, d, i, (double)s[i]);
        break;
    default: break;
    }
}

/* double values -> any numeric target (float targets round to nearest even). */
static inline void nc_store_from_double(zgpu_dtype t, const double *s, uint8_t *d, size_t n) {
    switch (t) {
    case ZGPU_FLOAT16: for (size_t i = 0; i < n; i++) NC_STORE(u16, d, i, zg_float_to_half((float)s[i])); break;
    case ZGPU_FLOAT32: for (size_t i = 0; i < n; i++) NC_STORE(f32, d, i, (float)s[i]); break;
    case ZGPU_FLOAT64: for (size_t i = 0; i < n; i++) NC_STORE(f64, d, i, s[i]); break;
    default: {
        uint64_t bits[NC_BLOCK];
        for (size_t i0 = 0; i0 < n; i0 += NC_BLOCK) {
            size_t m = n - i0 < NC_BLOCK ? n - i0 : NC_BLOCK;
            if (t == ZGPU_INT64 || t == ZGPU_UINT64 || t == ZGPU_UINT32)
                for (size_t i = 0; i < m; i++) bits[i] = nc_double_to_bits64(s[i0 + i], t == ZGPU_UINT64);
            else
                for (size_t i = 0; i < m; i++) bits[i] = nc_double_to_bits32(s[i0 + i]);
            nc_store_int_bits(t, bits, d + i0 * nc_size(t), m);
        }
        break;
    }
    }
}

/* NumPy's type promotion (np.result_type) for two numeric types. */
static inline zgpu_dtype nc_promote(zgpu_dtype a, zgpu_dtype b) {
    if (a == b) return a;
    uint32_t sa = nc_size(a), sb = nc_size(b);
    if (nc_is_float(a) && nc_is_float(b)) return sa >= sb ? a : b;
    if (nc_is_float(a) || nc_is_float(b)) {
        zgpu_dtype f = nc_is_float(a) ? a : b;
        uint32_t isz = nc_is_float(a) ? sb : sa;
        if (f == ZGPU_FLOAT16) return isz == 1 ? ZGPU_FLOAT16 : isz == 2 ? ZGPU_FLOAT32 : ZGPU_FLOAT64;
        if (f == ZGPU_FLOAT32) return isz <= 2 ? ZGPU_FLOAT32 : ZGPU_FLOAT64;
        return ZGPU_FLOAT64;
    }
    if (nc_is_signed(a) == nc_is_signed(b)) return sa >= sb ? a : b;
    zgpu_dtype sg = nc_is_signed(a) ? a : b;
    uint32_t ssz = nc_size(sg), usz = nc_is_signed(a) ? sb : sa;
    if (ssz > usz) return sg;
    switch (usz) {
    case 1: return ZGPU_INT16;
    case 2: return ZGPU_INT32;
    case 4: return ZGPU_INT64;
    default: return ZGPU_FLOAT64;
    }
}

/* n elements of type st at s -> type dt at d (NumPy astype). s and d must not overlap. */
static inline void nc_convert(zgpu_dtype st, const uint8_t *s, zgpu_dtype dt, uint8_t *d, size_t n) {
    uint32_t ssize = nc_size(st), dsize = nc_size(dt);
    if (st == dt) { if (n) memcpy(d, s, n * ssize); return; }
    for (size_t i0 = 0; i0 < n; i0 += NC_BLOCK) {
        size_t m = n - i0 < NC_BLOCK ? n - i0 : NC_BLOCK;
        if (nc_is_int(st)) {
            uint64_t w[NC_BLOCK];
            nc_load_int(st, s + i0 * ssize, w, m);
            nc_store_from_int(dt, w, nc_is_signed(st), d + i0 * dsize, m);
        } else {
            double w[NC_BLOCK];
            nc_load_float(st, s + i0 * ssize, w, m);
            nc_store_from_double(dt, w, d + i0 * dsize, m);
        }
    }
}

#endif
