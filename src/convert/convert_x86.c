/* convert.c's rows again, built for AVX2 (twice the lanes of the baseline's SSE2), and the rows of float16 that
 * compute in float32 through F16C: blocks of elements go through a small float buffer, converted 8 at a time by
 * vcvtph2ps / vcvtps2ph (round to nearest even; a NaN is made canonical first, so that vcvtps2ph gives 0x7e00
 * like zg_f2h). Chosen at run time; elsewhere this file is empty but for the NULL answer. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
/* before any include, so that the inline element code is built for AVX2 too (or it could not inline) */
#pragma GCC optimize("no-trapping-math")
#pragma GCC target("avx2,f16c")
#include <immintrin.h>

#include "convert/convert_rows.h"
#include "convert/convert_x86.h"

ZG_DEFINE_ROWS(avx2_, rows_avx2)

enum { BLOCK = 256 };

/* stored elements -> float32, m of them */
#define LOAD_BLOCK(in, IT)                                                                                      \
    static inline void load_block_##in(float *restrict t, const uint8_t *restrict s, unsigned m) {             \
        for (unsigned j = 0; j < m; j++) {                                                                      \
            IT v;                                                                                               \
            memcpy(&v, s + (size_t)j * sizeof(IT), sizeof v);                                                   \
            t[j] = zg_ld_##in##_f32(v);                                                                         \
        }                                                                                                       \
    }
LOAD_BLOCK(b, unsigned char)
LOAD_BLOCK(i8, signed char)
LOAD_BLOCK(i16, short)
LOAD_BLOCK(u8, unsigned char)
LOAD_BLOCK(u16, unsigned short)
LOAD_BLOCK(f32, float)
static inline void load_block_f16(float *restrict t, const uint8_t *restrict s, unsigned m) {
    unsigned j = 0;
    for (; j + 8 <= m; j += 8) _mm256_storeu_ps(t + j, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + 2 * j))));
    for (; j < m; j++) {
        unsigned short h;
        memcpy(&h, s + 2 * j, 2);
        t[j] = zg_h2f(h);
    }
}

/* float32 -> output elements */
#define STORE_BLOCK(out, OT)                                                                                    \
    static inline void store_block_##out(uint8_t *restrict d, const float *restrict t, unsigned m) {           \
        for (unsigned j = 0; j < m; j++) {                                                                      \
            const OT o = zg_st_##out##_f32(t[j]);                                                               \
            memcpy(d + (size_t)j * sizeof(OT), &o, sizeof o);                                                   \
        }                                                                                                       \
    }
STORE_BLOCK(b, unsigned char)
STORE_BLOCK(i8, signed char)
STORE_BLOCK(i16, short)
STORE_BLOCK(u8, unsigned char)
STORE_BLOCK(u16, unsigned short)
STORE_BLOCK(f32, float)
static inline void store_block_f16(uint8_t *restrict d, float *restrict t, unsigned m) {
    for (unsigned j = 0; j < m; j++) t[j] = t[j] == t[j] ? t[j] : zg_u2f(0x7fc00000u); /* canonical NaN */
    unsigned j = 0;
    for (; j + 8 <= m; j += 8)
        _mm_storeu_si128((__m128i *)(d + 2 * j), _mm256_cvtps_ph(_mm256_loadu_ps(t + j), _MM_FROUND_TO_NEAREST_INT));
    for (; j < m; j++) {
        const unsigned short h = zg_f2h(t[j]);
        memcpy(d + 2 * j, &h, 2);
    }
}

/* a contiguous row of a float32 pair with float16 on one side: load, scale / offset / clamp, store, a block at a
 * time; strided rows take the AVX2 element rows */
#define F16C_ROW(in, IT, out, OT)                                                                               \
    static void f16c_##in##_##out(uint64_t n, const zg_xform *x, uint8_t *d, int64_t ds, const uint8_t *s,      \
                                  int64_t ss) {                                                                 \
        if (ss != (int64_t)sizeof(IT) || ds != (int64_t)sizeof(OT)) {                                           \
            row_avx2_##in##_##out(n, x, d, ds, s, ss);                                                          \
            return;                                                                                             \
        }                                                                                                       \
        const float sc = x->scale32, of = x->offset32, lo = x->clamp_min32, hi = x->clamp_max32;                \
        float t[BLOCK];                                                                                         \
        for (uint64_t i0 = 0; i0 < n; i0 += BLOCK) {                                                            \
            const unsigned m = n - i0 < BLOCK ? (unsigned)(n - i0) : BLOCK;                                     \
            load_block_##in(t, s + i0 * sizeof(IT), m);                                                         \
            for (unsigned j = 0; j < m; j++) t[j] = clamp_f32(t[j] * sc + of, lo, hi);                          \
            store_block_##out(d + i0 * sizeof(OT), t, m);                                                       \
        }                                                                                                       \
    }
F16C_ROW(b, unsigned char, f16, unsigned short)
F16C_ROW(i8, signed char, f16, unsigned short)
F16C_ROW(i16, short, f16, unsigned short)
F16C_ROW(u8, unsigned char, f16, unsigned short)
F16C_ROW(u16, unsigned short, f16, unsigned short)
F16C_ROW(f32, float, f16, unsigned short)
F16C_ROW(f16, unsigned short, f16, unsigned short)
F16C_ROW(f16, unsigned short, b, unsigned char)
F16C_ROW(f16, unsigned short, i8, signed char)
F16C_ROW(f16, unsigned short, i16, short)
F16C_ROW(f16, unsigned short, u8, unsigned char)
F16C_ROW(f16, unsigned short, u16, unsigned short)
F16C_ROW(f16, unsigned short, f32, float)

static const zg_convert_row_fn f16c_out[ZG_N_IDS] = {
    [ZGPU_BOOL] = f16c_b_f16,  [ZGPU_INT8] = f16c_i8_f16,      [ZGPU_INT16] = f16c_i16_f16,
    [ZGPU_UINT8] = f16c_u8_f16, [ZGPU_UINT16] = f16c_u16_f16,  [ZGPU_FLOAT32] = f16c_f32_f16,
    [ZGPU_FLOAT16] = f16c_f16_f16,
};
static const zg_convert_row_fn f16c_in[ZG_N_IDS] = {
    [ZGPU_BOOL] = f16c_f16_b,  [ZGPU_INT8] = f16c_f16_i8,      [ZGPU_INT16] = f16c_f16_i16,
    [ZGPU_UINT8] = f16c_f16_u8, [ZGPU_UINT16] = f16c_f16_u16,  [ZGPU_FLOAT32] = f16c_f16_f32,
    [ZGPU_FLOAT16] = f16c_f16_f16,
};

static int cpu_ok(void) {
    static int ok = -1; /* (a benign race: every thread computes the same answer) */
    if (ok < 0) {
        __builtin_cpu_init();
        ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    }
    return ok;
}
static int portable_forced;

int zg_convert_uses_f16c(void) { return !portable_forced && cpu_ok(); }
void zg_convert_force_portable(int on) { portable_forced = on; }

zg_convert_row_fn zg_convert_x86_row(const zg_xform *x) {
    if (!zg_convert_uses_f16c()) return NULL;
    if (!x->compute64 && x->out_dtype == ZGPU_FLOAT16 && f16c_out[x->in_dtype]) return f16c_out[x->in_dtype];
    if (!x->compute64 && x->in_dtype == ZGPU_FLOAT16 && f16c_in[x->out_dtype]) return f16c_in[x->out_dtype];
    return rows_avx2[x->in_dtype][x->out_dtype];
}

#else
#include "convert/convert_x86.h"
int zg_convert_uses_f16c(void) { return 0; }
void zg_convert_force_portable(int on) { (void)on; }
zg_convert_row_fn zg_convert_x86_row(const zg_xform *x) {
    (void)x;
    return NULL;
}
#endif
