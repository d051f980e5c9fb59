/* The converting scatter's CUDA source (scatter_source.h). Its loop is scatter_kernel's (post_kernels.cu): a
 * warp per output row, rows numbered over the outer axes, items along blockIdx.y; each element goes through
 * zg_cvt, which is convert_ops.h's element code pasted as text. */
#include "jit/scatter_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/convert_ops.h"
#include "gpucodec/common/launch_config.h"

/* the element code, as text for the device */
#define ZG_STR_(...) #__VA_ARGS__
#define ZG_STR(...) ZG_STR_(__VA_ARGS__)
static const char ops_text[] = ZG_STR(ZG_CONVERT_OPS(static __device__ __forceinline__));

typedef struct dev_type {
    zgpu_dtype id;
    const char *tag, *ctype;
    int size;
} dev_type;
#define DEV_TYPE(tag, T, id, small) {id, #tag, #T, (int)sizeof(T)},
static const dev_type dev_types[] = {ZG_CONVERT_TYPES(DEV_TYPE)};

static const dev_type *dev_type_of(zgpu_dtype t) {
    for (size_t i = 0; i < sizeof dev_types / sizeof dev_types[0]; i++)
        if (dev_types[i].id == t) return &dev_types[i];
    return NULL;
}

zg_jit_scatter_cfg zg_jit_scatter_cfg_of(const zg_xform *x, int64_t src_inner_stride, int64_t dst_inner_stride) {
    zg_jit_scatter_cfg c;
    memset(&c, 0, sizeof c);
    c.in_dtype = x->in_dtype;
    c.out_dtype = x->out_dtype;
    c.compute64 = x->compute64;
    c.clamp = x->clamp;
    c.contiguous = src_inner_stride == (int64_t)x->in_itemsize && dst_inner_stride == (int64_t)x->out_itemsize;
    return c;
}

const char *zg_jit_scatter_what(const zg_jit_scatter_cfg *c, char *buf, size_t n) {
    snprintf(buf, n, "scatter gen=%d in=%s out=%s compute=%s clamp=%d layout=%s dims=%d threads=%u",
             ZG_JIT_SCATTER_GEN, zg_convert_dtype_name(c->in_dtype), zg_convert_dtype_name(c->out_dtype),
             c->compute64 ? "f64" : "f32", c->clamp, c->contiguous ? "contiguous" : "strided", ZGPU_MAX_DIMS,
             ZG_LC_POST_THREADS);
    return buf;
}

/* What the host's compiler and NVRTC must agree on: the descriptors of post_kernels.h, field by field. */
static const char prelude[] =
    "typedef unsigned long long zg_u64;\n"
    "struct zg_k_scatter_params {\n"
    "    int ndim;\n"
    "    int itemsize;\n"
    "    long long src_strides[ZG_DIMS];\n"
    "    long long dst_strides[ZG_DIMS];\n"
    "    const unsigned char *d_fill;\n"
    "};\n"
    "struct zg_k_scatter {\n"
    "    const unsigned char *src;\n"
    "    unsigned char *dst;\n"
    "};\n"
    "static __device__ __forceinline__ unsigned int zg_f2u(float f) { return __float_as_uint(f); }\n"
    "static __device__ __forceinline__ float zg_u2f(unsigned int u) { return __uint_as_float(u); }\n"
    "static __device__ __forceinline__ unsigned long long zg_d2u(double d) {\n"
    "    return (unsigned long long)__double_as_longlong(d);\n"
    "}\n"
    "static __device__ __forceinline__ double zg_u2d(unsigned long long u) {\n"
    "    return __longlong_as_double((long long)u);\n"
    "}\n";

/* An element load / store at any alignment (a caller's buffer may be offset by a byte). Misaligned: byte by
 * byte, written out (NVRTC turned a memcpy of a 2-byte value into one 2-byte store, which faults at an odd
 * address: compute-sanitizer, H200). */
static const char access[] =
    "template <typename T> static __device__ __forceinline__ T zg_get(const unsigned char *p) {\n"
    "    T v;\n"
    "    if (((zg_u64)p & (sizeof(T) - 1)) == 0) return *(const T *)p;\n"
    "    unsigned char b[sizeof(T)];\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < (int)sizeof(T); i++) b[i] = ((const volatile unsigned char *)p)[i];\n"
    "    memcpy(&v, b, sizeof(T));\n"
    "    return v;\n"
    "}\n"
    "template <typename T> static __device__ __forceinline__ void zg_put(unsigned char *p, T v) {\n"
    "    if (((zg_u64)p & (sizeof(T) - 1)) == 0) {\n"
    "        *(T *)p = v;\n"
    "        return;\n"
    "    }\n"
    "    unsigned char b[sizeof(T)];\n"
    "    memcpy(b, &v, sizeof(T));\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < (int)sizeof(T); i++) ((volatile unsigned char *)p)[i] = b[i];\n"
    "}\n";

/* The kernel's head and row loop (the row body follows per layout). */
static const char kernel_head[] =
    "extern \"C\" __global__ void __launch_bounds__(ZG_THREADS)\n"
    "zg_xscatter(zg_k_scatter_params p, const zg_k_scatter *items, const zg_u64 *counts, zg_u64 n_items,\n"
    "            zg_ct_t sc, zg_ct_t of, zg_ct_t lo, zg_ct_t hi) {\n"
    "    const int nd = p.ndim;\n"
    "    const int lane = threadIdx.x & 31;\n"
    "    const zg_u64 warp = ((zg_u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;\n"
    "    const zg_u64 n_warps = ((zg_u64)gridDim.x * blockDim.x) >> 5;\n"
    "    for (zg_u64 c = blockIdx.y; c < n_items; c += gridDim.y) {\n"
    "        const zg_k_scatter it = items[c];\n"
    "        const zg_u64 *cnt = counts + c * (zg_u64)nd;\n"
    "        const long long ss = nd > 0 ? p.src_strides[nd - 1] : (long long)sizeof(zg_in_t);\n"
    "        const long long ds = nd > 0 ? p.dst_strides[nd - 1] : (long long)sizeof(zg_out_t);\n"
    /* (a row: the innermost axes that lie alike on both sides, as the plain scatter's: not an RGB pixel alone) */
    "        int last = nd - 1;\n"
    "        zg_u64 rowlen = nd > 0 ? cnt[nd - 1] : 1;\n"
    "        while (last > 0 && (!it.src || p.src_strides[last - 1] == (long long)rowlen * ss) &&\n"
    "               p.dst_strides[last - 1] == (long long)rowlen * ds) {\n"
    "            rowlen *= cnt[last - 1];\n"
    "            last--;\n"
    "        }\n"
    "        if (rowlen == 0) continue;\n"
    "        zg_u64 rows = 1;\n"
    "        for (int d = 0; d < last; d++) rows *= cnt[d];\n"
    "        zg_out_t fill_v = zg_out_t();\n"
    "        if (!it.src) {\n"
    "            zg_in_t f;\n"
    "            memcpy(&f, p.d_fill, sizeof f);\n"
    "            fill_v = zg_cvt(f, sc, of, lo, hi);\n"
    "        }\n"
    "        for (zg_u64 r = warp; r < rows; r += n_warps) {\n"
    "            long long so = 0, dof = 0;\n"
    "            zg_u64 rem = r;\n"
    "            for (int d = last - 1; d >= 0; d--) {\n"
    "                const zg_u64 i = rem % cnt[d];\n"
    "                rem /= cnt[d];\n"
    "                so += (long long)i * p.src_strides[d];\n"
    "                dof += (long long)i * p.dst_strides[d];\n"
    "            }\n"
    "            unsigned char *drow = it.dst + dof;\n"
    "            if (!it.src) {\n"
    "                for (zg_u64 e = lane; e < rowlen; e += 32) zg_put<zg_out_t>(drow + (long long)e * ds, fill_v);\n"
    "                continue;\n"
    "            }\n"
    "            const unsigned char *srow = it.src + so;\n";

/* Contiguous rows: ZG_VEC elements a lane a step, as one aligned load and one aligned store, where both rows
 * start aligned to them; the rest (and misaligned rows) element by element. */
static const char row_contiguous[] =
    "            zg_u64 e0 = 0;\n"
    "            if ((((zg_u64)srow % sizeof(zg_vin_t)) | ((zg_u64)drow % sizeof(zg_vout_t))) == 0) {\n"
    "                const zg_u64 nv = rowlen / ZG_VEC;\n"
    "                const zg_vin_t *sv = (const zg_vin_t *)srow;\n"
    "                zg_vout_t *dv = (zg_vout_t *)drow;\n"
    "                for (zg_u64 q = lane; q < nv; q += 32) {\n"
    "                    const zg_vin_t a = sv[q];\n"
    "                    zg_vout_t b;\n"
    "#pragma unroll\n"
    "                    for (int k = 0; k < ZG_VEC; k++) b.v[k] = zg_cvt(a.v[k], sc, of, lo, hi);\n"
    "                    dv[q] = b;\n"
    "                }\n"
    "                e0 = nv * ZG_VEC;\n"
    "            }\n"
    "            for (zg_u64 e = e0 + lane; e < rowlen; e += 32)\n"
    "                zg_put<zg_out_t>(drow + e * sizeof(zg_out_t),\n"
    "                                 zg_cvt(zg_get<zg_in_t>(srow + e * sizeof(zg_in_t)), sc, of, lo, hi));\n";

static const char row_strided[] =
    "            for (zg_u64 e = lane; e < rowlen; e += 32)\n"
    "                zg_put<zg_out_t>(drow + (long long)e * ds,\n"
    "                                 zg_cvt(zg_get<zg_in_t>(srow + (long long)e * ss), sc, of, lo, hi));\n";

static const char kernel_tail[] = "        }\n    }\n}\n";

char *zg_jit_scatter_source(const zg_jit_scatter_cfg *c) {
    const dev_type *in = dev_type_of(c->in_dtype), *out = dev_type_of(c->out_dtype);
    if (!in || !out) return NULL;
    const char *ct = c->compute64 ? "f64" : "f32";
    const int widest = in->size > out->size ? in->size : out->size, vec = 16 / widest;
    char what[256];
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    fprintf(f, "// zgpu, generated: converting scatter, %s\n", zg_jit_scatter_what(c, what, sizeof what));
    fprintf(f, "#define ZG_DIMS %d\n#define ZG_THREADS %u\n#define ZG_VEC %d\n", ZGPU_MAX_DIMS, ZG_LC_POST_THREADS,
            vec);
    fputs(prelude, f);
    fputs(ops_text, f);
    fputc('\n', f);
    fprintf(f, "typedef %s zg_in_t;\ntypedef %s zg_out_t;\ntypedef %s zg_ct_t;\n", in->ctype, out->ctype,
            c->compute64 ? "double" : "float");
    fprintf(f, "struct alignas(%d) zg_vin_t { zg_in_t v[ZG_VEC]; };\n", vec * in->size);
    fprintf(f, "struct alignas(%d) zg_vout_t { zg_out_t v[ZG_VEC]; };\n", vec * out->size);
    /* one element: load, scale and offset (one rounding each: built with --fmad=false), clamp, store */
    fprintf(f,
            "static __device__ __forceinline__ zg_out_t zg_cvt(zg_in_t v, zg_ct_t sc, zg_ct_t of, zg_ct_t lo,"
            " zg_ct_t hi) {\n"
            "    zg_ct_t y = zg_ld_%s_%s(v) * sc + of;\n",
            in->tag, ct);
    if (c->clamp) fputs("    y = y < lo ? lo : y;\n    y = y > hi ? hi : y;\n", f);
    fprintf(f, "    return zg_st_%s_%s(y);\n}\n", out->tag, ct);
    fputs(access, f);
    fputs(kernel_head, f);
    fputs(c->contiguous ? row_contiguous : row_strided, f);
    fputs(kernel_tail, f);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
