/* The element conversions of zgpu_read_options (include/zgpu.h), written once for the host and the GPU: the host
 * expands ZG_CONVERT_OPS into C functions (convert.c), the kernel generator pastes the same expansion, as text,
 * into the source NVRTC compiles (src/jit/scatter_source.c). One text, so both sides round alike bit for bit.
 *
 * Rules of the text: C that is also CUDA C++ (no stdint types: unsigned short, int, long long...), no library
 * calls, only IEEE operations that both sides round to nearest even (+, -, *, conversions). The expander defines
 * first the bit casts zg_f2u / zg_u2f (float <-> unsigned int) and zg_d2u / zg_u2d (double <-> unsigned long
 * long). The code is branch-free (selects only) so that GCC vectorises the host rows built from it.
 *
 * Names: zg_ld_<in>_<ct> turns a stored element into the compute type ct (f32 or f64); zg_st_<out>_<ct> turns
 * the computed value into an output element: NaN becomes the output's canonical quiet NaN (positive, no payload)
 * for floats and 0 for integers and bool; integers round to nearest, ties to even, and saturate. Type tags: b
 * (bool), i8..i64, u8..u64, f16 (as its unsigned short bits), f32, f64. */
#ifndef ZG_CONVERT_OPS_H
#define ZG_CONVERT_OPS_H

/* Every type: X(tag, C type, zgpu_dtype, small) where small = 1 when float32 holds every value exactly (then
 * a pair of small types computes in float32, zg_xform.compute64 = 0). */
#define ZG_CONVERT_TYPES(X)                                                                                     \
    X(b, unsigned char, ZGPU_BOOL, 1)                                                                           \
    X(i8, signed char, ZGPU_INT8, 1)                                                                            \
    X(i16, short, ZGPU_INT16, 1)                                                                                \
    X(i32, int, ZGPU_INT32, 0)                                                                                  \
    X(i64, long long, ZGPU_INT64, 0)                                                                            \
    X(u8, unsigned char, ZGPU_UINT8, 1)                                                                         \
    X(u16, unsigned short, ZGPU_UINT16, 1)                                                                      \
    X(u32, unsigned int, ZGPU_UINT32, 0)                                                                        \
    X(u64, unsigned long long, ZGPU_UINT64, 0)                                                                  \
    X(f16, unsigned short, ZGPU_FLOAT16, 1)                                                                     \
    X(f32, float, ZGPU_FLOAT32, 1)                                                                              \
    X(f64, double, ZGPU_FLOAT64, 0)

/* ---- loads: stored element -> compute type (integers and halves exactly; 64-bit integers round once) ---- */
#define ZG_OPS_LD(Q, tag, T, ct, CT) Q CT zg_ld_##tag##_##ct(T v) { return (CT)v; }
#define ZG_OPS_LOADS(Q)                                                                                         \
    Q float zg_ld_b_f32(unsigned char v) { return v != 0 ? 1.0f : 0.0f; }                                       \
    Q double zg_ld_b_f64(unsigned char v) { return v != 0 ? 1.0 : 0.0; }                                       \
    ZG_OPS_LD(Q, i8, signed char, f32, float) ZG_OPS_LD(Q, i8, signed char, f64, double)                        \
    ZG_OPS_LD(Q, i16, short, f32, float) ZG_OPS_LD(Q, i16, short, f64, double)                                  \
    ZG_OPS_LD(Q, u8, unsigned char, f32, float) ZG_OPS_LD(Q, u8, unsigned char, f64, double)                    \
    ZG_OPS_LD(Q, u16, unsigned short, f32, float) ZG_OPS_LD(Q, u16, unsigned short, f64, double)                \
    ZG_OPS_LD(Q, i32, int, f64, double) ZG_OPS_LD(Q, u32, unsigned int, f64, double)                            \
    ZG_OPS_LD(Q, i64, long long, f64, double) ZG_OPS_LD(Q, u64, unsigned long long, f64, double)                \
    ZG_OPS_LD(Q, f32, float, f32, float) ZG_OPS_LD(Q, f32, float, f64, double)                                  \
    ZG_OPS_LD(Q, f64, double, f64, double)                                                                      \
    Q float zg_ld_f16_f32(unsigned short v) { return zg_h2f(v); }                                               \
    Q double zg_ld_f16_f64(unsigned short v) { return (double)zg_h2f(v); }

/* ---- stores: computed value -> output element ---- */
/* Outputs of 32 bits or fewer: NaN -> 0, clamp to the type's range (integers, exact in ct), round the now small
 * value (|y| < 2^23 resp. 2^52) by adding and subtracting 2^23 (2^52) of its sign: the sum's last place is 1, so
 * the hardware's round-to-nearest-even does the rounding. Equals rounding then saturating, as the bounds are
 * integers. CI is the integer type the rounded value goes through. */
#define ZG_OPS_ST_INT(Q, tag, T, ct, CT, CI, LO, HI, MAGIC)                                                   \
    Q T zg_st_##tag##_##ct(CT y) {                                                                              \
        y = y == y ? y : (CT)0;                                                                                 \
        y = y < (CT)(LO) ? (CT)(LO) : y;                                                                        \
        y = y > (CT)(HI) ? (CT)(HI) : y;                                                                        \
        CT c = y < (CT)0 ? -(CT)(MAGIC) : (CT)(MAGIC);                                                          \
        return (T)(CI)((y + c) - c);                                                                            \
    }
#define ZG_OPS_STORES(Q)                                                                                        \
    ZG_OPS_ST_INT(Q, i8, signed char, f32, float, int, -128, 127, 8388608.0f)                                   \
    ZG_OPS_ST_INT(Q, i16, short, f32, float, int, -32768, 32767, 8388608.0f)                                    \
    ZG_OPS_ST_INT(Q, u8, unsigned char, f32, float, int, 0, 255, 8388608.0f)                                    \
    ZG_OPS_ST_INT(Q, u16, unsigned short, f32, float, int, 0, 65535, 8388608.0f)                                \
    ZG_OPS_ST_INT(Q, i8, signed char, f64, double, int, -128, 127, 4503599627370496.0)                          \
    ZG_OPS_ST_INT(Q, i16, short, f64, double, int, -32768, 32767, 4503599627370496.0)                           \
    ZG_OPS_ST_INT(Q, u8, unsigned char, f64, double, int, 0, 255, 4503599627370496.0)                           \
    ZG_OPS_ST_INT(Q, u16, unsigned short, f64, double, int, 0, 65535, 4503599627370496.0)                       \
    ZG_OPS_ST_INT(Q, i32, int, f64, double, long long, -2147483648.0, 2147483647.0, 4503599627370496.0)         \
    ZG_OPS_ST_INT(Q, u32, unsigned int, f64, double, long long, 0, 4294967295.0, 4503599627370496.0)            \
    /* 64-bit: round first (values of 2^52 or more are integers already), then saturate: 2^63 and 2^64 are     \
     * the first values out of range, and exact */                                                              \
    Q double zg_rne_f64(double y) {                                                                             \
        double c = y < 0.0 ? -4503599627370496.0 : 4503599627370496.0;                                         \
        return (y < 4503599627370496.0 && y > -4503599627370496.0) ? (y + c) - c : y;                          \
    }                                                                                                           \
    Q long long zg_st_i64_f64(double y) {                                                                       \
        double r = zg_rne_f64(y == y ? y : 0.0);                                                                \
        return r >= 9223372036854775808.0 ? 0x7fffffffffffffffll                                                \
               : r < -9223372036854775808.0 ? (-0x7fffffffffffffffll - 1) : (long long)r;                       \
    }                                                                                                           \
    Q unsigned long long zg_st_u64_f64(double y) {                                                              \
        double r = zg_rne_f64(y == y ? y : 0.0);                                                                \
        return r >= 18446744073709551616.0 ? 0xffffffffffffffffull                                             \
               : r < 0.0 ? 0ull : (unsigned long long)r;                                                        \
    }                                                                                                           \
    Q unsigned char zg_st_b_f32(float y) { return (y == y && y != 0.0f) ? 1 : 0; }                              \
    Q unsigned char zg_st_b_f64(double y) { return (y == y && y != 0.0) ? 1 : 0; }                              \
    Q float zg_st_f32_f32(float y) { return y == y ? y : zg_u2f(0x7fc00000u); }                                 \
    Q float zg_st_f32_f64(double y) { return y == y ? (float)y : zg_u2f(0x7fc00000u); }                         \
    Q double zg_st_f64_f32(float y) { return y == y ? (double)y : zg_u2d(0x7ff8000000000000ull); }              \
    Q double zg_st_f64_f64(double y) { return y == y ? y : zg_u2d(0x7ff8000000000000ull); }                     \
    Q unsigned short zg_st_f16_f32(float y) { return zg_f2h(y); }                                               \
    Q unsigned short zg_st_f16_f64(double y) { return zg_d2h(y); }

/* ---- binary16 ---- */
#define ZG_OPS_HALF(Q)                                                                                          \
    /* half -> float, exact: normals re-biased (exponent + 112), subnormals as integer * 2^-24, inf / NaN       \
     * keep their payload (a NaN is made canonical when stored) */                                              \
    Q float zg_h2f(unsigned short h) {                                                                          \
        unsigned int s = (unsigned int)(h & 0x8000u) << 16;                                                     \
        int em = h & 0x7fff;                                                                                    \
        unsigned int sub = zg_f2u((float)em * 5.9604644775390625e-8f);                                          \
        unsigned int nrm = ((unsigned int)em << 13) + 0x38000000u;                                              \
        unsigned int inf = ((unsigned int)em << 13) | 0x7f800000u;                                              \
        unsigned int r = em < 0x400 ? sub : em >= 0x7c00 ? inf : nrm;                                           \
        return zg_u2f(r | s);                                                                                   \
    }                                                                                                           \
    /* float -> half, nearest even. Normal results: drop 13 mantissa bits adding half a unit less one plus the  \
     * kept last bit (ties to even), a carry runs into the exponent, 0x7c00 and above is infinity. Subnormal    \
     * results (below 2^-14): adding 0.5, whose last place is 2^-24, rounds to a multiple of 2^-24 and leaves   \
     * that multiple in the low bits. Every NaN becomes 0x7e00 (positive). */                                   \
    Q unsigned short zg_f2h(float f) {                                                                          \
        unsigned int x = zg_f2u(f);                                                                             \
        int s = (int)((x >> 16) & 0x8000u);                                                                     \
        int a = (int)(x & 0x7fffffffu);                                                                         \
        int sub = (int)zg_f2u(zg_u2f((unsigned int)a) + 0.5f) - 0x3f000000;                                     \
        int nrm = (a - 0x38000000 + 0xfff + ((a >> 13) & 1)) >> 13;                                             \
        int r = a < 0x38800000 ? sub : nrm > 0x7c00 ? 0x7c00 : nrm;                                             \
        return (unsigned short)(a > 0x7f800000 ? 0x7e00 : (r | s));                                             \
    }                                                                                                           \
    /* double -> half rounded once, as zg_f2h with the double layout (42 bits dropped; 2^28's last place is     \
     * 2^-24) */                                                                                                \
    Q unsigned short zg_d2h(double d) {                                                                         \
        unsigned long long x = zg_d2u(d);                                                                       \
        long long s = (long long)((x >> 48) & 0x8000u);                                                         \
        long long a = (long long)(x & 0x7fffffffffffffffull);                                                   \
        long long sub = (long long)zg_d2u(zg_u2d((unsigned long long)a) + 268435456.0) - 0x41b0000000000000ll;  \
        long long nrm = (a - 0x3f00000000000000ll + 0x1ffffffffffll + ((a >> 42) & 1)) >> 42;                  \
        long long r = a < 0x3f10000000000000ll ? sub : nrm > 0x7c00 ? 0x7c00 : nrm;                             \
        return (unsigned short)(a > 0x7ff0000000000000ll ? 0x7e00 : (r | s));                                   \
    }

#define ZG_CONVERT_OPS(Q) ZG_OPS_HALF(Q) ZG_OPS_LOADS(Q) ZG_OPS_STORES(Q)

#endif
