/* TIFF PackBits streams beside zgpu's GPU decoder (packbits_rules.h): the text of its status codes and the
 * reference decoder the CPU tests compare the GPU's bytes with. Pure C, no CUDA. */
#ifndef ZG_PACKBITS_CHECK_H
#define ZG_PACKBITS_CHECK_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

/** 0 when the GPU decoder may take a stream of n bytes decoding to `expected` (its positions are 32 bits). */
int zg_packbits_gpu_check(const uint8_t *p, size_t n, size_t expected);
/** Decodes p[0, n) into out, which must receive exactly `expected` bytes (NULL: check only):
 *  ZGPU_ERR_CORRUPT_DATA naming the fault and where. */
zgpu_status zg_packbits_decode_ref(const uint8_t *p, size_t n, uint8_t *out, size_t expected);
/** The text of a ZG_PB_E_* code. */
const char *zg_packbits_error_text(int e);

#endif
