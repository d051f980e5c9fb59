/* bytes codec (Zarr v3): the array->bytes codec that lays elements out in a given byte order. */
#ifndef ZG_BYTES_H
#define ZG_BYTES_H
#include "codec/codec.h"

extern const zg_codec_vtable zg_codec_bytes;

/** 1 if c is a bytes codec whose stored byte order equals the host's (decode is a plain copy). */
int zg_bytes_is_native(const zg_codec *c);
/** Reverses the byte order of n units of `unit` bytes (1, 2, 4 or 8) from src to dst (may be equal). */
void zg_byteswap(void *dst, const void *src, size_t n, uint32_t unit);

#endif
