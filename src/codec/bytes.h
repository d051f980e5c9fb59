/* bytes codec (Zarr v3): the array->bytes codec that lays elements out in a given byte order. */
#ifndef ZG_BYTES_H
#define ZG_BYTES_H
#include "codec/codec.h"

extern const zg_codec_vtable zg_codec_bytes;

/** 1 if c is a bytes codec whose stored byte order equals the host's (decode is a plain copy). */
int zg_bytes_is_native(const zg_codec *c);
/** Bytes [lo, hi) of a chunk stored by bytes codec c (in: the whole stored chunk, or at least those bytes of it) into
 *  out[lo, hi) in the host's byte order: copied, or swapped. 0 where [lo, hi) does not fall on whole elements. */
int zg_bytes_decode_range(const zg_codec *c, const uint8_t *in, uint8_t *out, size_t lo, size_t hi);
/** Reverses the byte order of n units of `unit` bytes (1, 2, 4 or 8) from src to dst (may be equal). */
void zg_byteswap(void *dst, const void *src, size_t n, uint32_t unit);

#endif
