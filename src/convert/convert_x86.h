/* The host rows built for AVX2, and rows of float16 through F16C's conversions, on x86-64 CPUs that have both
 * (cpuid, asked once); convert.c's portable rows otherwise. They give the same bits as the portable rows
 * (tests/unit/test_convert.c runs every pair both ways). */
#ifndef ZG_CONVERT_X86_H
#define ZG_CONVERT_X86_H
#include <stdint.h>
#include "convert/convert.h"

/* (as in convert_rows.h, which is not included here: convert_x86.c includes it under its target pragmas) */
typedef void (*zg_convert_row_fn)(uint64_t n, const zg_xform *x, uint8_t *dst, int64_t ds, const uint8_t *src,
                                  int64_t ss);

/** The row for x's pair when the CPU has AVX2 and F16C (and zg_convert_force_portable is off); else NULL. */
zg_convert_row_fn zg_convert_x86_row(const zg_xform *x);
#endif
