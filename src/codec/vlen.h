/* The variable-length codecs vlen-utf8 and vlen-bytes (numcodecs' format, which zarr-python writes for both Zarr
 * formats): a chunk of n elements is a u32 LE count n, then per element a u32 LE length and that many bytes.
 * They are array->bytes codecs of the chain, but a chunk of them has no fixed-size decoded form: the chain's
 * fixed-element entry points refuse them, and the vlen entry points (src/api/vlen.c) use these two functions,
 * with the bytes->bytes stages around them (zg_chain_decode_serialized / zg_chain_encode_serialized). */
#ifndef ZG_CODEC_VLEN_H
#define ZG_CODEC_VLEN_H
#include "codec/codec.h"

/** 1 if c is vlen-utf8 or vlen-bytes. */
int zg_is_vlen_codec(const zg_codec *c);
/** Splits a serialized chunk in[0, n) into its elements: element i is in[offs[i], offs[i] + lens[i]). The chunk
 *  must hold exactly `count` elements (the chunk's shape) and end with the last one; each length must fit what is
 *  left; vlen-utf8 elements must be well-formed UTF-8. Errors: ZGPU_ERR_CORRUPT_DATA naming the codec, the
 *  element and what is wrong. offs and lens hold count entries (caller memory). No reads outside in[0, n). */
zgpu_status zg_vlen_parse(const zg_codec *c, const uint8_t *in, size_t n, uint64_t count, uint64_t *offs,
                          uint32_t *lens);
/** Serializes `count` elements (element i: ptrs[i][0, lens[i])) onto out. vlen-utf8 checks each is UTF-8
 *  (ZGPU_ERR_INVALID_ARGUMENT naming the element). */
zgpu_status zg_vlen_encode(const zg_codec *c, uint64_t count, const uint8_t *const *ptrs, const uint32_t *lens,
                           zg_buf *out);

#endif
