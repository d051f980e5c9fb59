/* The converting scatter kernel, as CUDA source built at run time for one set of code-generation parameters.
 * It takes exactly the plain scatter's descriptors (post_kernels.h: zg_k_scatter_params, zg_k_scatter items,
 * per-item counts) and converts each element as zg_convert_box does on the host (the same element code,
 * convert_ops.h), so both give the same bits. Plain C, in every build (the source text needs no GPU).
 *
 * Kernel: extern "C" __global__ void zg_xscatter(zg_k_scatter_params p, const zg_k_scatter *items,
 *         const unsigned long long *counts, unsigned long long n_items, CT scale, CT offset, CT clamp_min,
 *         CT clamp_max), CT float or double (compute64); launched like zg_k_scatter_launch (zg_lc_scatter's grid,
 *         ZG_LC_POST_THREADS threads). p.itemsize is the input's; strides are bytes of each side; p.d_fill holds
 *         one element of the input type (converted by the kernel). */
#ifndef ZG_SCATTER_SOURCE_H
#define ZG_SCATTER_SOURCE_H
#include <stddef.h>
#include <stdint.h>
#include "convert/convert.h"

/** Bumped whenever the generated text changes in a way its parameters do not show (the source hash in the cache
 *  key catches the rest). */
#define ZG_JIT_SCATTER_GEN 2
#define ZG_JIT_SCATTER_KERNEL "zg_xscatter"

/** Everything that changes the generated code. */
typedef struct zg_jit_scatter_cfg {
    zgpu_dtype in_dtype, out_dtype;
    int compute64;  /* float64 arithmetic */
    int clamp;      /* clamp code present (bounds are arguments) */
    int contiguous; /* the innermost axis is contiguous on both sides: vector loads and stores */
} zg_jit_scatter_cfg;

/** The configuration for a launch: x (not the identity) and the innermost byte strides of both sides (ndim 0:
 *  pass the item sizes). */
zg_jit_scatter_cfg zg_jit_scatter_cfg_of(const zg_xform *x, int64_t src_inner_stride, int64_t dst_inner_stride);
/** "scatter gen=1 in=uint16 out=float16 compute=f32 clamp=1 layout=contiguous dims=32 threads=256": the
 *  generator's part of the cache key. Returns buf. */
const char *zg_jit_scatter_what(const zg_jit_scatter_cfg *c, char *buf, size_t n);
/** The CUDA source (malloc'd; the caller frees it); NULL when out of memory or for a type it cannot convert. */
char *zg_jit_scatter_source(const zg_jit_scatter_cfg *c);

#endif
