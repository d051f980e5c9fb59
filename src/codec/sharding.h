/* sharding_indexed (Zarr v3): an array->bytes codec whose stored object (a shard) holds a grid of inner
 * chunks, each encoded with an inner codec chain, plus an index of (offset, nbytes) uint64 LE pairs
 * (2^64-1 twice = empty inner chunk) encoded with its own codec chain (bytes + optional crc32c).
 * Besides full-shard decode/encode through the codec vtable, the read engine uses the functions below
 * to fetch only the inner chunks a selection needs. */
#ifndef ZG_SHARDING_H
#define ZG_SHARDING_H
#include "codec/chain.h"

extern const zg_codec_vtable zg_codec_sharding;

#define ZG_SHARD_EMPTY UINT64_MAX

/** 1 if c is a sharding_indexed codec. */
int zg_is_sharding(const zg_codec *c);
/** Inner chunk shape (ndim values). */
const uint64_t *zg_sharding_inner_shape(const zg_codec *c);
/** Inner chunks per shard along each axis. */
const uint64_t *zg_sharding_chunks_per_shard(const zg_codec *c);
/** Total inner chunks per shard. */
uint64_t zg_sharding_n_inner(const zg_codec *c);
/** Chain that decodes one inner chunk (repr: the inner chunk shape, same dtype and fill value). */
const zg_chain *zg_sharding_inner_chain(const zg_codec *c);
/** Size in bytes of the encoded index, and where it sits (1: last bytes of the shard, 0: first bytes). */
uint64_t zg_sharding_index_nbytes(const zg_codec *c);
int zg_sharding_index_at_end(const zg_codec *c);
/** Encodes an index (n_inner (offset, nbytes) pairs, native uint64, C order over the inner grid; ZG_SHARD_EMPTY
 *  twice for an empty inner chunk) with the index codecs into out (size set to index_nbytes). */
zgpu_status zg_sharding_encode_index(const zg_codec *c, const uint64_t *pairs, zg_buf *out);
/** Sets the decode cap of the inner and index chains (zg_chain_set_decode_cap calls it). */
void zg_sharding_set_decode_cap(zg_codec *c, size_t bytes);
/** Decodes an encoded index (n must equal index_nbytes; checksums verified) into n_inner offsets and
 *  lengths (C order over the inner grid; ZG_SHARD_EMPTY for empty). Every non-empty range must lie inside
 *  [0, shard_size): else ZGPU_ERR_CORRUPT_DATA. */
zgpu_status zg_sharding_decode_index(const zg_codec *c, const uint8_t *index, size_t n, uint64_t shard_size,
                                     uint64_t *offsets, uint64_t *lengths);

/* ---- A fixed index: a container whose index is known before any read (a TIFF page: its TileOffsets and
 * TileByteCounts, src/format/tiff/). The array's plan then reads no index: every stored object is the one file
 * (zg_array_meta.single_key) and its inner chunks lie where the index says. ---- */
/** Writes what inner chunk `inner` is for messages ("page 2, tile 17 (row 1, column 3)"). */
typedef void (*zg_shard_describe_fn)(const void *user, uint64_t inner, char *buf, size_t n);
/** Gives the codec an index: offsets_lengths (malloc'd, taken) holds n_inner offsets then n_inner lengths
 *  (ZG_SHARD_EMPTY for an absent inner chunk), object_size the object's size when the index was read;
 *  index_nbytes becomes 0. describe / user (freed with free_user, may be NULL) name inner chunks in messages. */
void zg_sharding_set_fixed_index(zg_codec *c, uint64_t *offsets_lengths, uint64_t object_size,
                                 zg_shard_describe_fn describe, void *user, void (*free_user)(void *));
/** 1 when the codec has a fixed index (*object_size, if given: the size it was made for). */
int zg_sharding_fixed_index(const zg_codec *c, uint64_t *object_size);
/** With a fixed index: how many inner chunks are stored (not empty) and their stored bytes. */
void zg_sharding_fixed_stored(const zg_codec *c, uint64_t *n_present, uint64_t *n_bytes);
/** What inner chunk `inner` of the object `key` is, for messages: "shard '<key>', inner chunk N", or the fixed
 *  index's own description. */
void zg_sharding_describe_inner(const zg_codec *c, const char *key, uint64_t inner, char *buf, size_t n);

#endif
