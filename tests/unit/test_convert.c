/* Conversion on the fly on the host (src/convert/): every (input, output) type pair under several transforms,
 * element by element against a reference written apart from the library (binary16 and integer rounding in long
 * double with nearbyintl, saturation by comparison); edge values (type limits, -0.0, NaNs, infinities, ties at .5,
 * float16 subnormals and overflow), every float16 input, a sweep of float32 bit patterns into float16; the AVX2 /
 * F16C rows and the portable ones both; strided, negative-stride and merged-axis boxes; fills; the identity;
 * option checks and their messages. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "test.h"
#include "zgpu.h"
#include "common/status.h"
#include "convert/convert.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd64(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const zgpu_dtype all_types[] = {ZGPU_BOOL,   ZGPU_INT8,   ZGPU_INT16,   ZGPU_INT32,   ZGPU_INT64,  ZGPU_UINT8,
                                       ZGPU_UINT16, ZGPU_UINT32, ZGPU_UINT64, ZGPU_FLOAT16, ZGPU_FLOAT32, ZGPU_FLOAT64};
#define N_ALL (sizeof all_types / sizeof all_types[0])

/* ------------------------------------------------------------------ the reference */
static int is_small(zgpu_dtype t) {
    return t == ZGPU_BOOL || t == ZGPU_INT8 || t == ZGPU_INT16 || t == ZGPU_UINT8 || t == ZGPU_UINT16 ||
           t == ZGPU_FLOAT16 || t == ZGPU_FLOAT32;
}
static int is_float(zgpu_dtype t) { return t == ZGPU_FLOAT16 || t == ZGPU_FLOAT32 || t == ZGPU_FLOAT64; }

static long double ref_half_to_ld(uint16_t h) {
    const int e = (h >> 10) & 31, m = h & 1023;
    const long double s = (h & 0x8000) ? -1.0L : 1.0L;
    if (e == 31) return m ? (long double)NAN : s * (long double)INFINITY;
    if (e == 0) return s * ldexpl((long double)m, -24);
    return s * ldexpl((long double)(1024 + m), e - 25);
}

/* nearest binary16, ties to even; NaN -> 0x7e00 */
static uint16_t ref_ld_to_half(long double y) {
    if (isnan(y)) return 0x7e00;
    const uint16_t s = signbit(y) ? 0x8000 : 0;
    const long double a = fabsl(y);
    if (a < ldexpl(1.0L, -14)) return (uint16_t)(s | (uint16_t)nearbyintl(a * ldexpl(1.0L, 24))); /* 1024 = 2^-14 */
    if (a >= 65520.0L) return (uint16_t)(s | 0x7c00);
    int e;
    (void)frexpl(a, &e); /* a = f 2^e, f in [0.5, 1) */
    int E = e - 1;
    long double mant = nearbyintl((a / ldexpl(1.0L, E) - 1.0L) * 1024.0L);
    if (mant >= 1024.0L) {
        mant = 0;
        E++;
    }
    if (E + 15 >= 31) return (uint16_t)(s | 0x7c00);
    return (uint16_t)(s | (uint16_t)((E + 15) << 10) | (uint16_t)mant);
}

/* the stored element as a long double (exact for every type) */
static long double ref_load(zgpu_dtype t, const uint8_t *p) {
    switch (t) {
    case ZGPU_BOOL: return *p ? 1.0L : 0.0L;
    case ZGPU_INT8: { int8_t v; memcpy(&v, p, 1); return v; }
    case ZGPU_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case ZGPU_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case ZGPU_INT64: { int64_t v; memcpy(&v, p, 8); return (long double)v; }
    case ZGPU_UINT8: return *p;
    case ZGPU_UINT16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case ZGPU_UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case ZGPU_UINT64: { uint64_t v; memcpy(&v, p, 8); return (long double)v; }
    case ZGPU_FLOAT16: { uint16_t v; memcpy(&v, p, 2); return ref_half_to_ld(v); }
    case ZGPU_FLOAT32: { float v; memcpy(&v, p, 4); return v; }
    case ZGPU_FLOAT64: { double v; memcpy(&v, p, 8); return v; }
    default: return 0;
    }
}

static void ref_int(long double y, long double lo, long double hi, int64_t *si, uint64_t *ui) {
    long double r = isnan(y) ? 0.0L : nearbyintl(y);
    if (r < lo) r = lo;
    if (r > hi) r = hi;
    if (r < 0) {
        *si = (int64_t)r;
        *ui = 0;
    } else {
        *ui = (uint64_t)r;
        *si = r <= (long double)INT64_MAX ? (int64_t)r : INT64_MAX;
    }
}

static void ref_store(zgpu_dtype t, long double y, uint8_t *p) {
    int64_t si;
    uint64_t ui;
    switch (t) {
    case ZGPU_BOOL: *p = (!isnan(y) && y != 0) ? 1 : 0; return;
    case ZGPU_INT8: ref_int(y, -128, 127, &si, &ui); { int8_t v = (int8_t)si; memcpy(p, &v, 1); } return;
    case ZGPU_INT16: ref_int(y, -32768, 32767, &si, &ui); { int16_t v = (int16_t)si; memcpy(p, &v, 2); } return;
    case ZGPU_INT32: ref_int(y, INT32_MIN, INT32_MAX, &si, &ui); { int32_t v = (int32_t)si; memcpy(p, &v, 4); } return;
    case ZGPU_INT64: ref_int(y, (long double)INT64_MIN, (long double)INT64_MAX, &si, &ui); memcpy(p, &si, 8); return;
    case ZGPU_UINT8: ref_int(y, 0, 255, &si, &ui); *p = (uint8_t)ui; return;
    case ZGPU_UINT16: ref_int(y, 0, 65535, &si, &ui); { uint16_t v = (uint16_t)ui; memcpy(p, &v, 2); } return;
    case ZGPU_UINT32: ref_int(y, 0, UINT32_MAX, &si, &ui); { uint32_t v = (uint32_t)ui; memcpy(p, &v, 4); } return;
    case ZGPU_UINT64: ref_int(y, 0, (long double)UINT64_MAX, &si, &ui); memcpy(p, &ui, 8); return;
    case ZGPU_FLOAT16: { uint16_t v = ref_ld_to_half(y); memcpy(p, &v, 2); } return;
    case ZGPU_FLOAT32: { float v = isnan(y) ? NAN : (float)y; if (isnan(v)) { uint32_t b = 0x7fc00000u; memcpy(p, &b, 4); } else memcpy(p, &v, 4); } return;
    case ZGPU_FLOAT64: { double v = (double)y; if (isnan(y)) { uint64_t b = 0x7ff8000000000000ull; memcpy(p, &b, 8); } else memcpy(p, &v, 8); } return;
    default: return;
    }
}

typedef struct xf {
    double scale, offset;
    int clamp;
    double lo, hi;
} xf;

/* the documented rule: the value, scaled and offset in float32 or float64 (IEEE operations, as written in
 * zgpu.h), clamped, stored */
static void ref_convert(zgpu_dtype in, zgpu_dtype out, const xf *t, const uint8_t *src, uint8_t *dst) {
    if (in == out && t->scale == 1 && t->offset == 0 && !t->clamp) { /* the identity: a copy */
        memcpy(dst, src, zg_convert_dtype_size(in));
        return;
    }
    const long double v = ref_load(in, src);
    long double y;
    const double off = t->offset == 0.0 ? -0.0 : t->offset;
    if (is_small(in) && is_small(out)) {
        float f = (float)v;
        f = f * (float)t->scale;
        f = f + (float)off;
        if (t->clamp) {
            if (f < (float)t->lo) f = (float)t->lo;
            if (f > (float)t->hi) f = (float)t->hi;
        }
        y = f;
    } else {
        double d = (double)v; /* (64-bit integers round here, once) */
        d = d * t->scale;
        d = d + off;
        if (t->clamp) {
            if (d < t->lo) d = t->lo;
            if (d > t->hi) d = t->hi;
        }
        y = d;
    }
    ref_store(out, y, dst);
}

/* ------------------------------------------------------------------ inputs */
static size_t put(uint8_t *buf, size_t n, zgpu_dtype t, long double v) {
    const size_t sz = zg_convert_dtype_size(t);
    uint8_t *p = buf + n * sz;
    switch (t) {
    case ZGPU_BOOL: *p = v != 0; break;
    case ZGPU_INT8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); } break;
    case ZGPU_INT16: { int16_t x = (int16_t)v; memcpy(p, &x, 2); } break;
    case ZGPU_INT32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); } break;
    case ZGPU_INT64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); } break;
    case ZGPU_UINT8: *p = (uint8_t)v; break;
    case ZGPU_UINT16: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); } break;
    case ZGPU_UINT32: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); } break;
    case ZGPU_UINT64: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); } break;
    case ZGPU_FLOAT16: { uint16_t x = ref_ld_to_half(v); memcpy(p, &x, 2); } break;
    case ZGPU_FLOAT32: { float x = (float)v; memcpy(p, &x, 4); } break;
    case ZGPU_FLOAT64: { double x = (double)v; memcpy(p, &x, 8); } break;
    default: break;
    }
    return n + 1;
}

#define MAX_VALUES 70000
/* Edge values of type t into buf (count returned): limits, neighbours of limits, zeros, ties, random values. */
static size_t make_values(zgpu_dtype t, uint8_t *buf) {
    size_t n = 0;
    const size_t sz = zg_convert_dtype_size(t);
    static const long double common[] = {0, 1, -1, 2, 3, 0.5L, 1.5L, 2.5L, -0.5L, -1.5L, -2.5L, 7, 100, 126.5L,
                                         127, 127.5L, 128, 128.5L, -127.5L, -128, -128.5L, -129, 254.5L, 255,
                                         255.5L, 256, 32767, 32767.5L, 32768, -32768, -32768.5L, -32769, 65504,
                                         65519, 65520, 65535, 65535.5L, 65536, 2147483647.0L, 2147483647.5L,
                                         -2147483648.5L, 4294967295.0L, 4294967296.0L, 16777217.0L, 1e10L,
                                         9007199254740993.0L, 9223372036854775807.0L, -9223372036854775808.0L,
                                         18446744073709551615.0L, 1e-3L, 1e-5L, 6e-8L, 3e-8L, 1e-10L, -1e-6L};
    if (t == ZGPU_FLOAT16) { /* every half */
        for (uint32_t h = 0; h < 65536; h++) {
            const uint16_t x = (uint16_t)h;
            memcpy(buf + 2 * n++, &x, 2);
        }
        return n;
    }
    for (size_t i = 0; i < sizeof common / sizeof common[0]; i++) {
        const long double v = common[i];
        int ok = 1;
        switch (t) { /* only values the type holds (the rest would wrap) */
        case ZGPU_BOOL: ok = v == 0 || v == 1; break;
        case ZGPU_INT8: ok = v == floorl(v) && v >= -128 && v <= 127; break;
        case ZGPU_INT16: ok = v == floorl(v) && v >= -32768 && v <= 32767; break;
        case ZGPU_INT32: ok = v == floorl(v) && v >= INT32_MIN && v <= INT32_MAX; break;
        case ZGPU_INT64: ok = v == floorl(v) && v >= -9223372036854775808.0L && v < 9223372036854775808.0L; break;
        case ZGPU_UINT8: ok = v == floorl(v) && v >= 0 && v <= 255; break;
        case ZGPU_UINT16: ok = v == floorl(v) && v >= 0 && v <= 65535; break;
        case ZGPU_UINT32: ok = v == floorl(v) && v >= 0 && v <= UINT32_MAX; break;
        case ZGPU_UINT64: ok = v == floorl(v) && v >= 0 && v < 18446744073709551616.0L; break;
        default: break;
        }
        if (ok) n = put(buf, n, t, v);
    }
    if (t == ZGPU_INT64) { /* values near 2^53 and the limits, which round when made double */
        const int64_t e[] = {INT64_MAX, INT64_MIN, INT64_MAX - 511, INT64_MAX - 512, (1ll << 53) + 1, -(1ll << 53) - 1};
        for (size_t i = 0; i < sizeof e / sizeof e[0]; i++) memcpy(buf + 8 * n++, &e[i], 8);
    }
    if (t == ZGPU_UINT64) {
        const uint64_t e[] = {UINT64_MAX, UINT64_MAX - 1023, UINT64_MAX - 1024, 1ull << 63, (1ull << 63) + 1025};
        for (size_t i = 0; i < sizeof e / sizeof e[0]; i++) memcpy(buf + 8 * n++, &e[i], 8);
    }
    if (t == ZGPU_FLOAT32) {
        const uint32_t bits[] = {0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u,
                                 0x7fbfffffu, 0x00000001u, 0x807fffffu, 0x7f7fffffu, 0xff7fffffu, 0x33000000u,
                                 0x33000001u, 0x387fe000u, 0x387ff000u, 0x477fefffu, 0x477ff000u, 0x4f000000u,
                                 0xcf000000u, 0x5f000000u, 0xdf000000u, 0x5f800000u};
        for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++) memcpy(buf + 4 * n++, &bits[i], 4);
        for (int i = 0; i < 2000; i++) {
            const uint32_t b = (uint32_t)rnd64();
            memcpy(buf + 4 * n++, &b, 4);
        }
    }
    if (t == ZGPU_FLOAT64) {
        const uint64_t bits[] = {0x8000000000000000ull, 0x7ff0000000000000ull, 0xfff0000000000000ull,
                                 0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff0000000000001ull,
                                 0x0000000000000001ull, 0x7fefffffffffffffull, 0x3f10000000000000ull,
                                 0x3f0fffffffffffffull, 0x3e70000000000000ull, 0x3e70000000000001ull,
                                 0x40effc0000000000ull, 0x40effc0000000001ull, 0x40effbffffffffffull,
                                 0x3ff0020000000001ull, 0x43e0000000000000ull, 0xc3e0000000000000ull,
                                 0x43f0000000000000ull, 0x41dfffffffe00000ull};
        for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++) memcpy(buf + 8 * n++, &bits[i], 8);
        for (int i = 0; i < 2000; i++) {
            uint64_t b = rnd64();
            if (i & 1) { /* more of them near the range of the narrower types */
                double d = ldexp((double)(b >> 11) / 9007199254740992.0, (int)(b % 80) - 30);
                if (b & 1) d = -d;
                memcpy(&b, &d, 8);
            }
            memcpy(buf + 8 * n++, &b, 8);
        }
    }
    if (!is_float(t) && t != ZGPU_BOOL)
        for (int i = 0; i < 500; i++) {
            const uint64_t b = rnd64();
            memcpy(buf + sz * n++, &b, sz);
        }
    return n;
}

/* ------------------------------------------------------------------ pairs */
static const xf transforms[] = {
    {1, 0, 0, 0, 0},                         /* type conversion only */
    {1.0 / 65535, 0, 0, 0, 0},               /* normalisation */
    {2, 0.5, 0, 0, 0},
    {-3, 100, 1, -5, 1000},
    {0.5, -0.25, 1, 0, 1},
    {1e10, 0, 0, 0, 0},                      /* overflows */
    {1, 0, 1, -INFINITY, 5},                 /* an upper bound only */
    {0.1, 1e-30, 1, -1e-3, 2.5e9},           /* bounds that round in float32 */
};
#define N_XF (sizeof transforms / sizeof transforms[0])

static uint8_t g_in[MAX_VALUES * 8], g_out[MAX_VALUES * 8], g_ref[8];

static int test_pair(zgpu_dtype in, zgpu_dtype out, const xf *t, size_t n_vals) {
    zgpu_read_options o;
    zgpu_read_options_init(&o);
    o.out_dtype = out;
    o.scale = t->scale;
    o.offset = t->offset;
    o.clamp = t->clamp;
    o.clamp_min = t->lo;
    o.clamp_max = t->hi;
    zg_xform x;
    const size_t isz = zg_convert_dtype_size(in), osz = zg_convert_dtype_size(out);
    if (zg_xform_make(&o, in, isz, "array 't'", &x) != ZGPU_OK) {
        CHECK_MSG(0, "%s -> %s: %s", zg_convert_dtype_name(in), zg_convert_dtype_name(out), zgpu_last_error());
        return 1;
    }
    const uint64_t count[1] = {n_vals};
    const int64_t ss[1] = {(int64_t)isz}, ds[1] = {(int64_t)osz};
    memset(g_out, 0xcd, n_vals * osz);
    zg_convert_box(1, count, &x, g_out, ds, g_in, ss);
    int bad = 0;
    for (size_t i = 0; i < n_vals && bad < 3; i++) {
        ref_convert(in, out, t, g_in + i * isz, g_ref);
        if (memcmp(g_ref, g_out + i * osz, osz) != 0) {
            uint64_t a = 0, b = 0, v = 0;
            memcpy(&a, g_out + i * osz, osz);
            memcpy(&b, g_ref, osz);
            memcpy(&v, g_in + i * isz, isz);
            CHECK_MSG(0, "%s -> %s (scale %g offset %g clamp %d [%g, %g]) input 0x%llx: got 0x%llx, want 0x%llx",
                      zg_convert_dtype_name(in), zg_convert_dtype_name(out), t->scale, t->offset, t->clamp, t->lo,
                      t->hi, (unsigned long long)v, (unsigned long long)a, (unsigned long long)b);
            bad++;
        }
    }
    if (!bad) zt_pass++;
    return bad;
}

static void test_all_pairs(void) {
    for (int portable = 0; portable < 2; portable++) {
        zg_convert_force_portable(portable);
        int bad = 0;
        for (size_t i = 0; i < N_ALL; i++) {
            const size_t n = make_values(all_types[i], g_in);
            for (size_t j = 0; j < N_ALL; j++)
                for (size_t k = 0; k < N_XF; k++) bad += test_pair(all_types[i], all_types[j], &transforms[k], n);
        }
        printf("every pair, %s rows: %d mismatches\n", portable ? "portable" : (zg_convert_uses_f16c() ? "AVX2/F16C" : "portable"), bad);
    }
    zg_convert_force_portable(0);
}

/* float32 -> float16 over a sweep of bit patterns (every 127th, both rows), against the reference */
static void test_f32_to_f16_sweep(void) {
    zgpu_read_options o;
    zgpu_read_options_init(&o);
    o.out_dtype = ZGPU_FLOAT16;
    zg_xform x;
    CHECK_OK(zg_xform_make(&o, ZGPU_FLOAT32, 4, "sweep", &x));
    enum { BATCH = 4096 };
    float in[BATCH];
    uint16_t out[BATCH], out2[BATCH];
    const uint64_t count[1] = {BATCH};
    const int64_t ss[1] = {4}, ds[1] = {2};
    long bad = 0;
    uint64_t b = 0;
    while (b < (1ull << 32)) {
        for (int i = 0; i < BATCH; i++, b += 127) {
            const uint32_t u = (uint32_t)b;
            memcpy(&in[i], &u, 4);
        }
        zg_convert_force_portable(0);
        zg_convert_box(1, count, &x, (uint8_t *)out, ds, (const uint8_t *)in, ss);
        zg_convert_force_portable(1);
        zg_convert_box(1, count, &x, (uint8_t *)out2, ds, (const uint8_t *)in, ss);
        for (int i = 0; i < BATCH; i++) {
            const uint16_t want = ref_ld_to_half(in[i]);
            if ((out[i] != want || out2[i] != want) && bad++ < 3)
                fprintf(stderr, "f32 %a -> f16: got 0x%04x / 0x%04x, want 0x%04x\n", (double)in[i], out[i], out2[i], want);
        }
    }
    zg_convert_force_portable(0);
    CHECK_MSG(bad == 0, "%ld float32 -> float16 mismatches", bad);
}

/* ------------------------------------------------------------------ boxes */
static void test_boxes(void) {
    /* a 3-D box 5 x 6 x 7 of uint16 read from a 9 x 8 x 10 chunk at an offset, written to a float32 destination
     * with negative and transposed strides, against element-by-element zg_convert_value */
    enum { A = 9, B = 8, C = 10 };
    uint16_t chunk[A * B * C];
    for (int i = 0; i < A * B * C; i++) chunk[i] = (uint16_t)(rnd64() & 0xffff);
    zgpu_read_options o;
    zgpu_read_options_init(&o);
    o.out_dtype = ZGPU_FLOAT32;
    o.scale = 1.0 / 65535;
    o.offset = -0.5;
    o.clamp = 1;
    o.clamp_min = -0.25;
    o.clamp_max = 0.25;
    zg_xform x;
    CHECK_OK(zg_xform_make(&o, ZGPU_UINT16, 2, "box", &x));
    const uint64_t count[3] = {5, 6, 7};
    const int64_t ss[3] = {B * C * 2, C * 2, 2};
    const uint8_t *src = (const uint8_t *)(chunk + 1 * B * C + 2 * C + 3);
    float dst[5 * 6 * 7 + 8];
    /* destination laid out [k][j][i] reversed along j: strides (4, -7*4*... ) */
    const int64_t ds[3] = {4, -(int64_t)(5 * 7 * 4), 5 * 4};
    uint8_t *d0 = (uint8_t *)dst + 5 * (5 * 7 * 4);
    for (int portable = 0; portable < 2; portable++) {
        zg_convert_force_portable(portable);
        memset(dst, 0, sizeof dst);
        zg_convert_box(3, count, &x, d0, ds, src, ss);
        int bad = 0;
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 6; j++)
                for (int k = 0; k < 7; k++) {
                    float want;
                    zg_convert_value(&x, src + i * ss[0] + j * ss[1] + k * ss[2], (uint8_t *)&want);
                    float got;
                    memcpy(&got, d0 + i * ds[0] + j * ds[1] + k * ds[2], 4);
                    bad += memcmp(&got, &want, 4) != 0;
                }
        CHECK_MSG(bad == 0, "strided box: %d mismatches", bad);
    }
    zg_convert_force_portable(0);

    /* contiguous inner axes merge into one row; negative source strides; ndim 0 */
    int16_t s2[4 * 3 * 5];
    for (int i = 0; i < 60; i++) s2[i] = (int16_t)(i * 1000 - 30000);
    o.out_dtype = ZGPU_INT8;
    o.scale = 0.01;
    o.offset = 0;
    o.clamp = 0;
    CHECK_OK(zg_xform_make(&o, ZGPU_INT16, 2, "merge", &x));
    int8_t d2[60];
    const uint64_t c2[3] = {4, 3, 5};
    const int64_t s2s[3] = {-30, -10, -2}, d2s[3] = {15, 5, 1};
    zg_convert_box(3, c2, &x, (uint8_t *)d2, d2s, (const uint8_t *)(s2 + 59), s2s);
    int bad = 0;
    for (int i = 0; i < 60; i++) {
        const int16_t v = s2[59 - i];
        long want = lrint((float)v * 0.01f);
        want = want < -128 ? -128 : want > 127 ? 127 : want;
        bad += d2[i] != want;
    }
    CHECK_MSG(bad == 0, "merged negative-stride box: %d mismatches", bad);
    int8_t one = 0;
    const int16_t v1 = 250;
    zg_convert_box(0, NULL, &x, (uint8_t *)&one, NULL, (const uint8_t *)&v1, NULL);
    CHECK(one == 2); /* 2.5 -> 2 (ties to even) */

    /* a zero extent writes nothing */
    const uint64_t c0[2] = {3, 0};
    int8_t untouched = 77;
    zg_convert_box(2, c0, &x, (uint8_t *)&untouched, d2s, (const uint8_t *)s2, s2s);
    CHECK(untouched == 77);
}

static void test_fill(void) {
    zgpu_read_options o;
    zgpu_read_options_init(&o);
    o.out_dtype = ZGPU_FLOAT16;
    o.scale = 1.0 / 255;
    zg_xform x;
    CHECK_OK(zg_xform_make(&o, ZGPU_UINT8, 1, "fill", &x));
    uint16_t d[4][6];
    memset(d, 0, sizeof d);
    const uint64_t count[2] = {3, 4};
    const int64_t ds[2] = {12, 2};
    const uint8_t fill = 255;
    zg_convert_fill(2, count, &x, (uint8_t *)&d[1][1], ds, &fill);
    int bad = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++) {
            const int in = i >= 1 && j >= 1 && j <= 4;
            bad += d[i][j] != (in ? 0x3c00 : 0); /* 255 / 255 = 1.0 */
        }
    CHECK_MSG(bad == 0, "fill: %d wrong", bad);
    /* the identity fills the stored bytes, any type */
    CHECK_OK(zg_xform_make(NULL, ZGPU_COMPLEX64, 8, "fill", &x));
    uint64_t c[3] = {0};
    const uint64_t cv = 0x0123456789abcdefull, n3[1] = {3};
    const int64_t s8[1] = {8};
    zg_convert_fill(1, n3, &x, (uint8_t *)c, s8, (const uint8_t *)&cv);
    CHECK(c[0] == cv && c[2] == cv);
}

/* ------------------------------------------------------------------ identity and checks */
static void test_identity(void) {
    zg_xform x;
    zgpu_read_options o;
    zgpu_read_options_init(&o);
    CHECK_OK(zg_xform_make(&o, ZGPU_FLOAT32, 4, "id", &x));
    CHECK(x.identity && x.out_dtype == ZGPU_FLOAT32 && x.out_itemsize == 4);
    o.out_dtype = ZGPU_FLOAT32;
    CHECK_OK(zg_xform_make(&o, ZGPU_FLOAT32, 4, "id", &x));
    CHECK(x.identity);
    CHECK_OK(zg_xform_make(NULL, ZGPU_RAW, 3, "id", &x)); /* anything copies */
    CHECK(x.identity && x.out_itemsize == 3);
    /* the identity keeps NaN payloads and -0.0 (a plain copy); a conversion makes NaN canonical */
    const uint32_t in[3] = {0x7f800123u, 0x80000000u, 0xffc00000u};
    uint32_t out[3];
    const uint64_t n[1] = {3};
    const int64_t s[1] = {4};
    CHECK_OK(zg_xform_make(&o, ZGPU_FLOAT32, 4, "id", &x));
    zg_convert_box(1, n, &x, (uint8_t *)out, s, (const uint8_t *)in, s);
    CHECK(memcmp(in, out, sizeof in) == 0);
    o.scale = 2;
    CHECK_OK(zg_xform_make(&o, ZGPU_FLOAT32, 4, "id", &x));
    CHECK(!x.identity && !x.compute64);
    zg_convert_box(1, n, &x, (uint8_t *)out, s, (const uint8_t *)in, s);
    CHECK(out[0] == 0x7fc00000u && out[1] == 0x80000000u && out[2] == 0x7fc00000u);
    /* out_dtype 0 with a scale: the conversion runs in the stored type */
    o.out_dtype = 0;
    o.scale = 3;
    CHECK_OK(zg_xform_make(&o, ZGPU_UINT8, 1, "id", &x));
    CHECK(!x.identity && x.out_dtype == ZGPU_UINT8);
    const uint8_t u = 100;
    uint8_t r;
    zg_convert_value(&x, &u, &r);
    CHECK(r == 255);
    /* the compute type: float32 only when both types are small */
    o.scale = 1;
    o.out_dtype = ZGPU_FLOAT64;
    CHECK_OK(zg_xform_make(&o, ZGPU_UINT16, 2, "id", &x));
    CHECK(x.compute64);
    o.out_dtype = ZGPU_FLOAT16;
    CHECK_OK(zg_xform_make(&o, ZGPU_UINT16, 2, "id", &x));
    CHECK(!x.compute64);
    CHECK_OK(zg_xform_make(&o, ZGPU_INT32, 4, "id", &x));
    CHECK(x.compute64);
}

static void test_checks(void) {
    zgpu_read_options o;
    zgpu_read_options_init(&o);
    CHECK_OK(zg_convert_check(NULL, ZGPU_RAW, 5, "array 'a'"));
    CHECK_OK(zg_convert_check(&o, ZGPU_COMPLEX128, 16, "array 'a'"));
    o.struct_size = 8;
    CHECK_STATUS(zg_convert_check(&o, ZGPU_UINT8, 1, "array 'a'"), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(strstr(zgpu_last_error(), "struct_size") && strstr(zgpu_last_error(), "array 'a'"));
    zgpu_read_options_init(&o);
    o.out_dtype = ZGPU_COMPLEX64;
    CHECK_STATUS(zg_convert_check(&o, ZGPU_FLOAT32, 4, "array 'img'"), ZGPU_ERR_UNSUPPORTED);
    CHECK(strstr(zgpu_last_error(), "complex64") && strstr(zgpu_last_error(), "array 'img'"));
    o.out_dtype = ZGPU_FLOAT32;
    CHECK_STATUS(zg_convert_check(&o, ZGPU_RAW, 2, "array 'r'"), ZGPU_ERR_UNSUPPORTED);
    CHECK(strstr(zgpu_last_error(), "raw"));
    CHECK_STATUS(zg_convert_check(&o, ZGPU_COMPLEX128, 16, "array 'c'"), ZGPU_ERR_UNSUPPORTED);
    CHECK(strstr(zgpu_last_error(), "complex128"));
    o.out_dtype = (zgpu_dtype)99;
    CHECK_STATUS(zg_convert_check(&o, ZGPU_FLOAT32, 4, "array 'a'"), ZGPU_ERR_INVALID_ARGUMENT);
    o.out_dtype = ZGPU_FLOAT16;
    o.scale = NAN;
    CHECK_STATUS(zg_convert_check(&o, ZGPU_UINT16, 2, "array 'a'"), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(strstr(zgpu_last_error(), "finite"));
    o.scale = 1;
    o.offset = INFINITY;
    CHECK_STATUS(zg_convert_check(&o, ZGPU_UINT16, 2, "array 'a'"), ZGPU_ERR_INVALID_ARGUMENT);
    o.offset = 0;
    o.clamp = 1;
    o.clamp_min = 2;
    o.clamp_max = 1;
    CHECK_STATUS(zg_convert_check(&o, ZGPU_UINT16, 2, "array 'a'"), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(strstr(zgpu_last_error(), "clamp_min"));
    o.clamp_min = NAN;
    CHECK_STATUS(zg_convert_check(&o, ZGPU_UINT16, 2, "array 'a'"), ZGPU_ERR_INVALID_ARGUMENT);
    o.clamp_min = -INFINITY;
    o.clamp_max = 1;
    CHECK_OK(zg_convert_check(&o, ZGPU_UINT16, 2, "array 'a'"));
    o.clamp = 2;
    CHECK_STATUS(zg_convert_check(&o, ZGPU_UINT16, 2, "array 'a'"), ZGPU_ERR_INVALID_ARGUMENT);
    o.clamp = 0;
    o.clamp_min = 5; /* bounds are not looked at without clamp */
    CHECK_OK(zg_convert_check(&o, ZGPU_UINT16, 2, "array 'a'"));
}

int main(void) {
    printf("host rows: %s\n", zg_convert_uses_f16c() ? "AVX2 + F16C" : "portable");
    test_checks();
    test_identity();
    test_fill();
    test_boxes();
    test_all_pairs();
    test_f32_to_f16_sweep();
    TEST_MAIN_END();
}
