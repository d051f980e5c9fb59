/* transpose codec (Zarr v3 "transpose"): array -> array, {"order": [permutation]}.
 * encoded = numpy.transpose(decoded, order), so encoded.shape[i] = decoded.shape[order[i]]. */
#include <stdlib.h>
#include <string.h>
#include "codec/codec.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_transpose;

typedef struct transpose_codec {
    zg_codec base;
    int order[ZGPU_MAX_DIMS];
    int inverse[ZGPU_MAX_DIMS]; /* inverse[order[i]] = i */
    int identity;
} transpose_codec;

static zgpu_status tr_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(!config || config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA,
                 "transpose: a configuration object with \"order\" is required");
    static const char *const keys[] = {"order", NULL};
    ZG_FORWARD(zg_config_only(config, "transpose", NULL, keys));
    const zj_value *ord = zj_get(config, "order");
    ZG_RETURN_IF(!ord || ord->type != ZJ_ARRAY, ZGPU_ERR_BAD_METADATA,
                 "transpose: configuration \"order\" must be a list of axis numbers");
    ZG_RETURN_IF(ord->n != (size_t)decoded->ndim, ZGPU_ERR_BAD_METADATA,
                 "transpose: \"order\" has %zu entries, the array has %d dimensions", ord->n, decoded->ndim);
    transpose_codec *t = calloc(1, sizeof *t);
    ZG_RETURN_IF(!t, ZGPU_ERR_NO_MEMORY, "transpose: out of memory");
    int seen[ZGPU_MAX_DIMS] = {0};
    t->identity = 1;
    for (int i = 0; i < decoded->ndim; i++) {
        uint64_t v;
        if (!zj_is_uint(zj_at(ord, (size_t)i), &v) || v >= (uint64_t)decoded->ndim || seen[v]) {
            free(t);
            return zg_error(ZGPU_ERR_BAD_METADATA,
                            "transpose: \"order\" must be a permutation of 0..%d (entry %d is invalid or repeated)",
                            decoded->ndim - 1, i);
        }
        seen[v] = 1;
        t->order[i] = (int)v;
        t->inverse[v] = i;
        if ((int)v != i) t->identity = 0;
    }
    t->base.vt = &zg_codec_transpose;
    t->base.decoded = *decoded;
    t->base.encoded = *decoded;
    for (int i = 0; i < decoded->ndim; i++) t->base.encoded.shape[i] = decoded->shape[t->order[i]];
    *out = &t->base;
    return ZGPU_OK;
}

static void tr_destroy(zg_codec *c) { free(c); }

static zj_value *tr_to_json(const zg_codec *c) {
    const transpose_codec *t = (const transpose_codec *)c;
    zj_value *conf = zj_new_object(), *arr = zj_new_array();
    if (!conf || !arr) { zj_free(conf); zj_free(arr); return NULL; }
    for (int i = 0; i < c->decoded.ndim; i++)
        if (zj_append(arr, zj_new_int(t->order[i])) != ZGPU_OK) { zj_free(conf); zj_free(arr); return NULL; }
    if (zj_set(conf, "order", arr) != ZGPU_OK) { zj_free(conf); return NULL; }
    return zg_codec_json("transpose", conf);
}

/* Copies a rows x cols slab: out is contiguous, in element (r, c) lives at in + (r*sr + c*sc)*ES (strides
 * in elements). Tiles of 32 x 32 keep both sides in cache when neither stride is 1. Elements move with
 * fixed-size memcpy (one load and one store after optimisation; no alignment or aliasing assumptions). */
#define TILE 32
#define DEFINE_SLAB(NAME, ES)                                                                             \
    static void NAME(const uint8_t *in, uint8_t *out, uint64_t rows, uint64_t cols, uint64_t sr,          \
                     uint64_t sc) {                                                                       \
        if (sc == 1) {                                                                                    \
            for (uint64_t r = 0; r < rows; r++)                                                           \
                memcpy(out + r * cols * (ES), in + r * sr * (ES), (size_t)cols * (ES));                   \
            return;                                                                                       \
        }                                                                                                 \
        for (uint64_t r0 = 0; r0 < rows; r0 += TILE) {                                                    \
            uint64_t r1 = r0 + TILE < rows ? r0 + TILE : rows;                                            \
            for (uint64_t c0 = 0; c0 < cols; c0 += TILE) {                                                \
                uint64_t c1 = c0 + TILE < cols ? c0 + TILE : cols;                                        \
                for (uint64_t r = r0; r < r1; r++) {                                                      \
                    const uint8_t *src = in + (r * sr + c0 * sc) * (ES);                                  \
                    uint8_t *dst = out + (r * cols + c0) * (ES);                                          \
                    for (uint64_t c = c0; c < c1; c++, src += sc * (ES), dst += (ES)) memcpy(dst, src, (ES)); \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
    }

DEFINE_SLAB(slab1, 1)
DEFINE_SLAB(slab2, 2)
DEFINE_SLAB(slab4, 4)
DEFINE_SLAB(slab8, 8)
DEFINE_SLAB(slab16, 16)

/* Any element size (raw types): the same walk with a variable-size memcpy. */
static void slab_any(const uint8_t *in, uint8_t *out, uint64_t rows, uint64_t cols, uint64_t sr, uint64_t sc,
                     size_t es) {
    for (uint64_t r0 = 0; r0 < rows; r0 += TILE) {
        uint64_t r1 = r0 + TILE < rows ? r0 + TILE : rows;
        for (uint64_t c0 = 0; c0 < cols; c0 += TILE) {
            uint64_t c1 = c0 + TILE < cols ? c0 + TILE : cols;
            for (uint64_t r = r0; r < r1; r++)
                for (uint64_t c = c0; c < c1; c++) memcpy(out + (r * cols + c) * es, in + (r * sr + c * sc) * es, es);
        }
    }
}

/* out (C order, shape oshape[nd]) gets the input element at sum(idx[k] * istride[k]) (strides in elements).
 * The last two axes form a slab copied by a tiled loop; the outer axes advance an odometer that keeps the
 * input offset incrementally (no division per element). */
static void permute(const uint8_t *in, uint8_t *out, int nd, const uint64_t *oshape, const uint64_t *istride,
                    size_t es) {
    uint64_t rows = 1, cols = 1, sr = 0, sc = 0;
    int outer = nd;
    if (nd >= 1) { cols = oshape[nd - 1]; sc = istride[nd - 1]; outer = nd - 1; }
    if (nd >= 2) { rows = oshape[nd - 2]; sr = istride[nd - 2]; outer = nd - 2; }
    uint64_t n_outer = 1;
    for (int k = 0; k < outer; k++) n_outer *= oshape[k];
    if (rows == 0 || cols == 0 || n_outer == 0) return;
    uint64_t idx[ZGPU_MAX_DIMS] = {0};
    uint64_t base = 0; /* input offset of the current outer index, in elements */
    size_t slab = (size_t)(rows * cols) * es;
    for (uint64_t o = 0; o < n_outer; o++) {
        const uint8_t *src = in + base * es;
        switch (es) {
        case 1: slab1(src, out, rows, cols, sr, sc); break;
        case 2: slab2(src, out, rows, cols, sr, sc); break;
        case 4: slab4(src, out, rows, cols, sr, sc); break;
        case 8: slab8(src, out, rows, cols, sr, sc); break;
        case 16: slab16(src, out, rows, cols, sr, sc); break;
        default: slab_any(src, out, rows, cols, sr, sc, es); break;
        }
        out += slab;
        for (int k = outer - 1; k >= 0; k--) {
            base += istride[k];
            if (++idx[k] < oshape[k]) break;
            base -= istride[k] * oshape[k];
            idx[k] = 0;
        }
    }
}

static void c_strides(const zg_repr *r, uint64_t *st) {
    uint64_t s = 1;
    for (int k = r->ndim - 1; k >= 0; k--) { st[k] = s; s *= r->shape[k]; }
}

static zgpu_status tr_encode(const zg_codec *c, const uint8_t *in, uint8_t *out) {
    const transpose_codec *t = (const transpose_codec *)c;
    size_t es = c->decoded.dtype.size;
    if (t->identity) { size_t n = (size_t)zg_repr_nbytes(&c->decoded); if (n) memcpy(out, in, n); return ZGPU_OK; }
    uint64_t dst[ZGPU_MAX_DIMS], ist[ZGPU_MAX_DIMS];
    c_strides(&c->decoded, dst);
    for (int i = 0; i < c->decoded.ndim; i++) ist[i] = dst[t->order[i]]; /* encoded axis i walks decoded axis order[i] */
    permute(in, out, c->encoded.ndim, c->encoded.shape, ist, es);
    return ZGPU_OK;
}

static zgpu_status tr_decode(const zg_codec *c, const uint8_t *in, uint8_t *out) {
    const transpose_codec *t = (const transpose_codec *)c;
    size_t es = c->decoded.dtype.size;
    if (t->identity) { size_t n = (size_t)zg_repr_nbytes(&c->decoded); if (n) memcpy(out, in, n); return ZGPU_OK; }
    uint64_t est[ZGPU_MAX_DIMS], ist[ZGPU_MAX_DIMS];
    c_strides(&c->encoded, est);
    for (int k = 0; k < c->decoded.ndim; k++) ist[k] = est[t->inverse[k]]; /* decoded axis k is encoded axis inverse[k] */
    permute(in, out, c->decoded.ndim, c->decoded.shape, ist, es);
    return ZGPU_OK;
}

/* GPU: folded into the scatter's source strides. */
static void tr_gpu_stage(const zg_codec *c, zg_gpu_stage *out) {
    const transpose_codec *t = (const transpose_codec *)c;
    out->kind = ZG_GPU_STAGE_TRANSPOSE;
    for (int i = 0; i < c->decoded.ndim; i++) out->order[i] = t->order[i];
}

const zg_codec_vtable zg_codec_transpose = {
    .name = "transpose",
    .kind = ZG_ARRAY_TO_ARRAY,
    .create = tr_create,
    .destroy = tr_destroy,
    .to_json = tr_to_json,
    .to_json_v2 = NULL,
    .decode_array = tr_decode,
    .encode_array = tr_encode,
    .gpu_stage = tr_gpu_stage,
};
