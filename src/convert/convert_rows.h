/* The host's row functions, as macros that a .c file expands under its own code-generation settings: convert.c
 * for any x86-64 / other CPU, convert_x86.c again with AVX2 (chosen at run time). Internal to src/convert/.
 *
 * Include it once per .c file, after `#pragma GCC optimize("no-trapping-math")`: under GCC's default
 * -ftrapping-math a float compare may trap, so the selects of the element code stay branches and no row
 * vectorises (zgpu installs no FP trap handler; results are the same, only exception flags could differ). */
#ifndef ZG_CONVERT_ROWS_H
#define ZG_CONVERT_ROWS_H
#include <stdint.h>
#include <string.h>

#include "convert/convert.h"
#include "convert/convert_ops.h"

typedef void (*zg_convert_row_fn)(uint64_t n, const zg_xform *x, uint8_t *dst, int64_t ds, const uint8_t *src,
                                  int64_t ss);

/* ---- the element code, for the host ---- */
static inline unsigned int zg_f2u(float f) {
    unsigned int u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline float zg_u2f(unsigned int u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline unsigned long long zg_d2u(double d) {
    unsigned long long u;
    memcpy(&u, &d, sizeof u);
    return u;
}
static inline double zg_u2d(unsigned long long u) {
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
ZG_CONVERT_OPS(static inline)
static inline float clamp_f32(float y, float lo, float hi) {
    y = y < lo ? lo : y;
    return y > hi ? hi : y;
}
static inline double clamp_f64(double y, double lo, double hi) {
    y = y < lo ? lo : y;
    return y > hi ? hi : y;
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/* ---- one row function per type pair ---- */
#define ZG_CTYPE_f32 float
#define ZG_CTYPE_f64 double
#define ZG_SCALE_f32(x) (x)->scale32
#define ZG_SCALE_f64(x) (x)->scale
#define ZG_OFFSET_f32(x) (x)->offset32
#define ZG_OFFSET_f64(x) (x)->offset
#define ZG_LO_f32(x) (x)->clamp_min32
#define ZG_LO_f64(x) (x)->clamp_min
#define ZG_HI_f32(x) (x)->clamp_max32
#define ZG_HI_f64(x) (x)->clamp_max
/* the compute type of a pair from the two "small" flags */
#define ZG_CT_11 f32
#define ZG_CT_10 f64
#define ZG_CT_01 f64
#define ZG_CT_00 f64
#define ZG_PASTE_(a, b) a##b
#define ZG_PASTE(a, b) ZG_PASTE_(a, b)
#define ZG_CT_OF(ins, outs) ZG_PASTE(ZG_CT_, ZG_PASTE(ins, outs))

/* one element: load, scale and offset, clamp (bounds +-inf when off: no-ops), store */
#define ZG_ELEM(in, out, ct, v) zg_st_##out##_##ct(clamp_##ct(zg_ld_##in##_##ct(v) * sc + of, lo, hi))

/* row_<P><in>_<out>(n, x, dst, dst stride, src, src stride): the contiguous case is a counted loop over
 * unaligned loads and stores, which GCC vectorises */
#define ZG_ROW_DEF(P, in, IT, out, OT, ct)                                                                      \
    static void row_##P##in##_##out(uint64_t n, const zg_xform *x, uint8_t *restrict d, int64_t ds,            \
                                    const uint8_t *restrict s, int64_t ss) {                                   \
        const ZG_CTYPE_##ct sc = ZG_SCALE_##ct(x), of = ZG_OFFSET_##ct(x), lo = ZG_LO_##ct(x),                  \
                           hi = ZG_HI_##ct(x);                                                                  \
        if (ss == (int64_t)sizeof(IT) && ds == (int64_t)sizeof(OT)) {                                           \
            for (uint64_t i = 0; i < n; i++) {                                                                  \
                IT v;                                                                                           \
                memcpy(&v, s + i * sizeof(IT), sizeof v);                                                       \
                const OT o = ZG_ELEM(in, out, ct, v);                                                           \
                memcpy(d + i * sizeof(OT), &o, sizeof o);                                                       \
            }                                                                                                   \
            return;                                                                                             \
        }                                                                                                       \
        for (uint64_t i = 0; i < n; i++, s += ss, d += ds) {                                                    \
            IT v;                                                                                               \
            memcpy(&v, s, sizeof v);                                                                            \
            const OT o = ZG_ELEM(in, out, ct, v);                                                               \
            memcpy(d, &o, sizeof o);                                                                            \
        }                                                                                                       \
    }
#define ZG_ROW_CT(P, in, IT, out, OT, ct) ZG_ROW_DEF(P, in, IT, out, OT, ct)
#define ZG_ROW(P, in, IT, ins, out, OT, outs) ZG_ROW_CT(P, in, IT, out, OT, ZG_CT_OF(ins, outs))

/* Every output type, after the input's arguments (a second list: a macro cannot expand inside itself). */
#define ZG_FOR_OUTS(M, ...)                                                                                     \
    M(__VA_ARGS__, b, unsigned char, 1) M(__VA_ARGS__, i8, signed char, 1) M(__VA_ARGS__, i16, short, 1)        \
    M(__VA_ARGS__, i32, int, 0) M(__VA_ARGS__, i64, long long, 0) M(__VA_ARGS__, u8, unsigned char, 1)          \
    M(__VA_ARGS__, u16, unsigned short, 1) M(__VA_ARGS__, u32, unsigned int, 0)                                 \
    M(__VA_ARGS__, u64, unsigned long long, 0) M(__VA_ARGS__, f16, unsigned short, 1)                           \
    M(__VA_ARGS__, f32, float, 1) M(__VA_ARGS__, f64, double, 0)

#define ZG_TYPE_ID_b ZGPU_BOOL
#define ZG_TYPE_ID_i8 ZGPU_INT8
#define ZG_TYPE_ID_i16 ZGPU_INT16
#define ZG_TYPE_ID_i32 ZGPU_INT32
#define ZG_TYPE_ID_i64 ZGPU_INT64
#define ZG_TYPE_ID_u8 ZGPU_UINT8
#define ZG_TYPE_ID_u16 ZGPU_UINT16
#define ZG_TYPE_ID_u32 ZGPU_UINT32
#define ZG_TYPE_ID_u64 ZGPU_UINT64
#define ZG_TYPE_ID_f16 ZGPU_FLOAT16
#define ZG_TYPE_ID_f32 ZGPU_FLOAT32
#define ZG_TYPE_ID_f64 ZGPU_FLOAT64
#define ZG_N_IDS (ZGPU_FLOAT64 + 1)

/* Defines row_<P>* for every pair and `static const zg_convert_row_fn NAME[ZG_N_IDS][ZG_N_IDS]` indexed by
 * zgpu_dtype. */
#define ZG_ROWS_OF_INPUT(P, in, IT, id, ins) ZG_FOR_OUTS(ZG_ROW, P, in, IT, ins)
#define ZG_ROW_ENTRY(P, in, IT, ins, out, OT, outs) [ZG_TYPE_ID_##in][ZG_TYPE_ID_##out] = row_##P##in##_##out,
#define ZG_ENTRIES_OF_INPUT(P, in, IT, id, ins) ZG_FOR_OUTS(ZG_ROW_ENTRY, P, in, IT, ins)
#define ZG_DEFINE_ROWS(P, NAME)                                                                                 \
    ZG_CONVERT_TYPES_P(ZG_ROWS_OF_INPUT, P)                                                                     \
    static const zg_convert_row_fn NAME[ZG_N_IDS][ZG_N_IDS] = {ZG_CONVERT_TYPES_P(ZG_ENTRIES_OF_INPUT, P)};
/* ZG_CONVERT_TYPES with a leading argument */
#define ZG_CONVERT_TYPES_P(M, P)                                                                                \
    M(P, b, unsigned char, ZGPU_BOOL, 1) M(P, i8, signed char, ZGPU_INT8, 1) M(P, i16, short, ZGPU_INT16, 1)    \
    M(P, i32, int, ZGPU_INT32, 0) M(P, i64, long long, ZGPU_INT64, 0) M(P, u8, unsigned char, ZGPU_UINT8, 1)    \
    M(P, u16, unsigned short, ZGPU_UINT16, 1) M(P, u32, unsigned int, ZGPU_UINT32, 0)                           \
    M(P, u64, unsigned long long, ZGPU_UINT64, 0) M(P, f16, unsigned short, ZGPU_FLOAT16, 1)                    \
    M(P, f32, float, ZGPU_FLOAT32, 1) M(P, f64, double, ZGPU_FLOAT64, 0)

#endif
