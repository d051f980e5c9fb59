/* Conversion on the fly (zgpu_read_options, include/zgpu.h): a read's options checked and compiled once into a
 * zg_xform, then applied to boxes of elements on the host (zg_convert_box / zg_convert_fill, rows vectorised),
 * or on the GPU by a kernel built for it at run time (src/jit/, zg_jit_scatter_launch). Both sides compute each
 * element with the same code (convert_ops.h), so they agree bit for bit. Plain C, in every build. */
#ifndef ZG_CONVERT_H
#define ZG_CONVERT_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

/** A read's conversion, compiled. Value fields are what the element code uses: an offset of zero is kept as
 *  -0.0 (adding it leaves every value, -0.0 included, as it is); without clamp the bounds are -inf and +inf
 *  (comparisons that never hold). Copy it freely; it owns nothing. */
typedef struct zg_xform {
    zgpu_dtype in_dtype, out_dtype; /* out_dtype resolved: never 0 */
    size_t in_itemsize, out_itemsize;
    int identity;  /* 1: the stored bytes are copied as they are (zg_copy_box / the plain scatter) */
    int compute64; /* 1: arithmetic in float64; 0: float32 (both types "small", zgpu.h) */
    int clamp;     /* 1: clamp after scale and offset */
    double scale, offset, clamp_min, clamp_max;         /* float64 compute */
    float scale32, offset32, clamp_min32, clamp_max32;  /* float32 compute: the same rounded to float32 */
} zg_xform;

/** Checks read options against an array's stored type: struct_size, supported types in and out (complex and raw:
 *  ZGPU_ERR_UNSUPPORTED unless no conversion is asked), finite scale and offset, clamp bounds not NaN and
 *  clamp_min <= clamp_max (else ZGPU_ERR_INVALID_ARGUMENT). `where` names the array in the message ("array
 *  'a/b'"); o NULL is no conversion (ZGPU_OK). */
zgpu_status zg_convert_check(const zgpu_read_options *o, zgpu_dtype in_dtype, size_t in_itemsize, const char *where);
/** zg_convert_check, then compiles o into *x (o NULL: the identity over in_dtype / in_itemsize). */
zgpu_status zg_xform_make(const zgpu_read_options *o, zgpu_dtype in_dtype, size_t in_itemsize, const char *where,
                          zg_xform *x);

/** Converts an N-d box (ndim 0: one element) from src (x->in_dtype, byte strides src_strides) into dst
 *  (x->out_dtype, byte strides dst_strides; strides may be negative). Rows along the innermost axis run
 *  vectorised when contiguous on both sides (axes that are contiguous together are merged first). The
 *  identity is zg_copy_box. src and dst must not overlap. */
void zg_convert_box(int ndim, const uint64_t *count, const zg_xform *x, uint8_t *dst, const int64_t *dst_strides,
                    const uint8_t *src, const int64_t *src_strides);
/** Fills an N-d box of dst with `fill` (one element of x->in_dtype, e.g. the array's fill value), converted
 *  once. */
void zg_convert_fill(int ndim, const uint64_t *count, const zg_xform *x, uint8_t *dst, const int64_t *dst_strides,
                     const uint8_t *fill);
/** Converts one element: in (x->in_itemsize bytes) -> out (x->out_itemsize bytes). */
void zg_convert_value(const zg_xform *x, const uint8_t *in, uint8_t *out);

/** "uint16", "float16"...; "?" for others. Static. */
const char *zg_convert_dtype_name(zgpu_dtype t);
/** Bytes of a convertible type; 0 for complex, raw and unknown. */
size_t zg_convert_dtype_size(zgpu_dtype t);
/** 1 when both types are small (every value exact in float32): the pair computes in float32. */
int zg_convert_small_pair(zgpu_dtype in, zgpu_dtype out);

/** Host rows of float16: 1 when F16C instructions convert them (chosen once from cpuid), 0 for the portable
 *  code. zg_convert_force_portable(1) turns F16C off (tests compare both ways; not thread-safe). */
int zg_convert_uses_f16c(void);
void zg_convert_force_portable(int on);

#endif
