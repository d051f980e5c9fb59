/* Conversion on the fly on the host (convert.h): the options checked and compiled, then rows of elements converted
 * by one function per (input, output) type pair, all built from the element code of convert_ops.h that the GPU
 * kernels compile too. A row contiguous on both sides is a plain counted loop over memcpy loads and stores of
 * branch-free element code, which GCC vectorises (-O3; -fopt-info-vec-optimized lists them); on CPUs with AVX2
 * the same rows built for it run instead, and rows of float16 use F16C (convert_x86.c). Arithmetic is never contracted into FMA: zgpu builds as ISO C
 * (-std=c11, so -ffp-contract=off) for x86-64 without -mfma, and the kernels compile with --fmad=false. */
#include "convert/convert.h"

/* (convert_rows.h says why) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "common/status.h"
#include "convert/convert_rows.h"
#include "convert/convert_x86.h"
#include "plan/plan.h"

/* the portable rows: rows[in][out] (convert_rows.h) */
ZG_DEFINE_ROWS(, rows)

/* ------------------------------------------------------------------ types */
#define TYPE_INFO(tag, T, id, small) {id, #tag, sizeof(T), small},
static const struct {
    zgpu_dtype id;
    const char *tag;
    size_t size;
    int small;
} type_info[] = {ZG_CONVERT_TYPES(TYPE_INFO)};
#define N_TYPES (sizeof type_info / sizeof type_info[0])

const char *zg_convert_dtype_name(zgpu_dtype t) {
    switch (t) {
    case ZGPU_BOOL: return "bool";
    case ZGPU_INT8: return "int8";
    case ZGPU_INT16: return "int16";
    case ZGPU_INT32: return "int32";
    case ZGPU_INT64: return "int64";
    case ZGPU_UINT8: return "uint8";
    case ZGPU_UINT16: return "uint16";
    case ZGPU_UINT32: return "uint32";
    case ZGPU_UINT64: return "uint64";
    case ZGPU_FLOAT16: return "float16";
    case ZGPU_FLOAT32: return "float32";
    case ZGPU_FLOAT64: return "float64";
    case ZGPU_COMPLEX64: return "complex64";
    case ZGPU_COMPLEX128: return "complex128";
    case ZGPU_RAW: return "raw";
    default: return "?";
    }
}

static int type_index(zgpu_dtype t) {
    for (size_t i = 0; i < N_TYPES; i++)
        if (type_info[i].id == t) return (int)i;
    return -1;
}

size_t zg_convert_dtype_size(zgpu_dtype t) {
    const int i = type_index(t);
    return i < 0 ? 0 : type_info[i].size;
}

int zg_convert_small_pair(zgpu_dtype in, zgpu_dtype out) {
    const int a = type_index(in), b = type_index(out);
    return a >= 0 && b >= 0 && type_info[a].small && type_info[b].small;
}

/* ------------------------------------------------------------------ options */
static const char *where_or(const char *where) { return where && *where ? where : "read"; }

static int wants_conversion(const zgpu_read_options *o, zgpu_dtype in) {
    return (o->out_dtype != 0 && o->out_dtype != in) || o->scale != 1.0 || o->offset != 0.0 || o->clamp;
}

zgpu_status zg_convert_check(const zgpu_read_options *o, zgpu_dtype in_dtype, size_t in_itemsize, const char *where) {
    if (!o) return ZGPU_OK;
    const char *w = where_or(where);
    const size_t need = offsetof(zgpu_read_options, clamp_max) + sizeof o->clamp_max;
    ZG_RETURN_IF(o->struct_size < need || o->struct_size > sizeof *o, ZGPU_ERR_INVALID_ARGUMENT,
                 "%s: zgpu_read_options.struct_size is %zu; use zgpu_read_options_init", w, o->struct_size);
    ZG_RETURN_IF(o->out_dtype != 0 && (o->out_dtype < ZGPU_BOOL || o->out_dtype > ZGPU_RAW),
                 ZGPU_ERR_INVALID_ARGUMENT, "%s: read options: out_dtype %d is no zgpu_dtype", w, (int)o->out_dtype);
    ZG_RETURN_IF(o->clamp != 0 && o->clamp != 1, ZGPU_ERR_INVALID_ARGUMENT,
                 "%s: read options: clamp is %d (0 or 1)", w, o->clamp);
    ZG_RETURN_IF(!isfinite(o->scale) || !isfinite(o->offset), ZGPU_ERR_INVALID_ARGUMENT,
                 "%s: read options: scale (%g) and offset (%g) must be finite", w, o->scale, o->offset);
    if (o->clamp) {
        ZG_RETURN_IF(isnan(o->clamp_min) || isnan(o->clamp_max), ZGPU_ERR_INVALID_ARGUMENT,
                     "%s: read options: clamp bounds are NaN", w);
        ZG_RETURN_IF(o->clamp_min > o->clamp_max, ZGPU_ERR_INVALID_ARGUMENT,
                     "%s: read options: clamp_min %g is above clamp_max %g", w, o->clamp_min, o->clamp_max);
    }
    if (!wants_conversion(o, in_dtype)) return ZGPU_OK; /* a plain copy: any stored type */
    const zgpu_dtype out = o->out_dtype ? o->out_dtype : in_dtype;
    ZG_RETURN_IF(type_index(in_dtype) < 0, ZGPU_ERR_UNSUPPORTED,
                 "%s: read options: converting from %s is not supported (conversions take bool, integers and "
                 "float16/32/64)", w, zg_convert_dtype_name(in_dtype));
    ZG_RETURN_IF(type_index(out) < 0, ZGPU_ERR_UNSUPPORTED,
                 "%s: read options: converting to %s is not supported (conversions give bool, integers and "
                 "float16/32/64)", w, zg_convert_dtype_name(out));
    ZG_RETURN_IF(in_itemsize != zg_convert_dtype_size(in_dtype), ZGPU_ERR_INTERNAL,
                 "%s: read options: %s elements of %zu bytes", w, zg_convert_dtype_name(in_dtype), in_itemsize);
    return ZGPU_OK;
}

zgpu_status zg_xform_make(const zgpu_read_options *o, zgpu_dtype in_dtype, size_t in_itemsize, const char *where,
                          zg_xform *x) {
    ZG_FORWARD(zg_convert_check(o, in_dtype, in_itemsize, where));
    memset(x, 0, sizeof *x);
    x->in_dtype = in_dtype;
    x->in_itemsize = in_itemsize;
    if (!o || !wants_conversion(o, in_dtype)) {
        x->out_dtype = in_dtype;
        x->out_itemsize = in_itemsize;
        x->identity = 1;
        x->scale = 1.0;
        x->scale32 = 1.0f;
        x->offset = -0.0;
        x->offset32 = -0.0f;
        x->clamp_min = -INFINITY;
        x->clamp_max = INFINITY;
        x->clamp_min32 = -INFINITY;
        x->clamp_max32 = INFINITY;
        return ZGPU_OK;
    }
    x->out_dtype = o->out_dtype ? o->out_dtype : in_dtype;
    x->out_itemsize = zg_convert_dtype_size(x->out_dtype);
    x->compute64 = !zg_convert_small_pair(in_dtype, x->out_dtype);
    x->clamp = o->clamp;
    x->scale = o->scale;
    x->offset = o->offset == 0.0 ? -0.0 : o->offset; /* +0.0 would turn -0.0 into +0.0 */
    x->clamp_min = o->clamp ? o->clamp_min : -INFINITY;
    x->clamp_max = o->clamp ? o->clamp_max : INFINITY;
    x->scale32 = (float)x->scale;
    x->offset32 = (float)x->offset;
    x->clamp_min32 = (float)x->clamp_min;
    x->clamp_max32 = (float)x->clamp_max;
    return ZGPU_OK;
}

/* ------------------------------------------------------------------ boxes */
/* Drops axes of extent 1 and merges an axis into the next inner one where both sides step over it exactly one
 * inner run, so that rows are as long as the layouts allow. Returns the new ndim (at least 1). */
static int merge_axes(int ndim, const uint64_t *count, const int64_t *ds_in, const int64_t *ss_in, uint64_t *cnt,
                      int64_t *ds, int64_t *ss, int64_t in_size, int64_t out_size) {
    int m = 0;
    for (int d = 0; d < ndim; d++) {
        if (count[d] == 1) continue;
        cnt[m] = count[d];
        ds[m] = ds_in[d];
        ss[m] = ss_in ? ss_in[d] : 0;
        m++;
    }
    if (m == 0) {
        cnt[0] = 1;
        ds[0] = out_size;
        ss[0] = in_size;
        return 1;
    }
    int k = m - 1; /* merge from the innermost axis outwards */
    for (int d = m - 2; d >= 0; d--) {
        if (ds[d] == ds[k] * (int64_t)cnt[k] && ss[d] == ss[k] * (int64_t)cnt[k]) {
            cnt[k] *= cnt[d];
            continue;
        }
        k--;
        cnt[k] = cnt[d];
        ds[k] = ds[d];
        ss[k] = ss[d];
    }
    const int n = m - k;
    memmove(cnt, cnt + k, (size_t)n * sizeof *cnt);
    memmove(ds, ds + k, (size_t)n * sizeof *ds);
    memmove(ss, ss + k, (size_t)n * sizeof *ss);
    return n;
}

static zg_convert_row_fn row_for(const zg_xform *x) {
    const zg_convert_row_fn f = rows[x->in_dtype][x->out_dtype];
    const zg_convert_row_fn fast = zg_convert_x86_row(x);
    return fast ? fast : f;
}

void zg_convert_box(int ndim, const uint64_t *count, const zg_xform *x, uint8_t *dst, const int64_t *dst_strides,
                    const uint8_t *src, const int64_t *src_strides) {
    for (int d = 0; d < ndim; d++)
        if (count[d] == 0) return;
    if (x->identity) {
        if (ndim == 0) memcpy(dst, src, x->in_itemsize);
        else zg_copy_box(ndim, count, x->in_itemsize, dst, dst_strides, src, src_strides);
        return;
    }
    uint64_t cnt[ZGPU_MAX_DIMS];
    int64_t ds[ZGPU_MAX_DIMS], ss[ZGPU_MAX_DIMS];
    const int n = merge_axes(ndim, count, dst_strides, src_strides, cnt, ds, ss, (int64_t)x->in_itemsize,
                             (int64_t)x->out_itemsize);
    const zg_convert_row_fn row = row_for(x);
    const int inner = n - 1;
    uint64_t idx[ZGPU_MAX_DIMS] = {0};
    for (;;) { /* odometer over the outer axes */
        uint8_t *dp = dst;
        const uint8_t *sp = src;
        for (int d = 0; d < inner; d++) {
            dp += (int64_t)idx[d] * ds[d];
            sp += (int64_t)idx[d] * ss[d];
        }
        row(cnt[inner], x, dp, ds[inner], sp, ss[inner]);
        int d = inner - 1;
        while (d >= 0 && ++idx[d] == cnt[d]) idx[d--] = 0;
        if (d < 0) break;
    }
}

void zg_convert_value(const zg_xform *x, const uint8_t *in, uint8_t *out) {
    if (x->identity) {
        memcpy(out, in, x->in_itemsize);
        return;
    }
    rows[x->in_dtype][x->out_dtype](1, x, out, (int64_t)x->out_itemsize, in, (int64_t)x->in_itemsize);
}

void zg_convert_fill(int ndim, const uint64_t *count, const zg_xform *x, uint8_t *dst, const int64_t *dst_strides,
                     const uint8_t *fill) {
    for (int d = 0; d < ndim; d++)
        if (count[d] == 0) return;
    if (x->identity) { /* any stored type (raw, complex) as it is */
        if (ndim == 0) memcpy(dst, fill, x->in_itemsize);
        else zg_fill_box(ndim, count, x->in_itemsize, dst, dst_strides, fill);
        return;
    }
    uint8_t v[8];
    zg_convert_value(x, fill, v);
    if (ndim == 0) memcpy(dst, v, x->out_itemsize);
    else zg_fill_box(ndim, count, x->out_itemsize, dst, dst_strides, v);
}
