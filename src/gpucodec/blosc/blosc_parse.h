/* Host-side parsing of Blosc1 chunks (the "blosc" / numcodecs.blosc codecs) for the device decoder: the
 * header is checked against the sizes we expect, and every compressed stream of every block is listed so
 * that the streams of all chunks can be decompressed as one batch on the GPU. Pure C, no CUDA.
 *
 * Format (c-blosc 1.x): 16-byte header {version, versionlz, flags, typesize, nbytes u32le, blocksize u32le,
 * cbytes u32le}; then (unless the chunk is a plain copy) nblocks u32le block starts; each block holds
 * nsplits streams of {u32le csize, csize bytes}; csize == the split's size means the bytes are stored raw.
 * flags: 0x01 byte shuffle, 0x02 plain copy (data follows the header), 0x04 bit shuffle, 0x10 blocks not
 * split, bits 5-7 the inner compressor (0 blosclz, 1 lz4/lz4hc, 2 snappy, 3 zlib, 4 zstd). */
#ifndef ZG_BLOSC_PARSE_H
#define ZG_BLOSC_PARSE_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

#define ZG_BLOSC_HEADER 16

enum { ZG_BLOSC_BLOSCLZ = 0, ZG_BLOSC_LZ4 = 1, ZG_BLOSC_SNAPPY = 2, ZG_BLOSC_ZLIB = 3, ZG_BLOSC_ZSTD = 4 };
enum { ZG_BLOSC_NOSHUFFLE = 0, ZG_BLOSC_SHUFFLE = 1, ZG_BLOSC_BITSHUFFLE = 2 };

typedef struct zg_blosc_header {
    uint8_t version, versionlz, flags, typesize;
    uint32_t nbytes, blocksize, cbytes;
    int compformat; /* ZG_BLOSC_BLOSCLZ.. */
    int shuffle;    /* ZG_BLOSC_NOSHUFFLE / SHUFFLE / BITSHUFFLE as applied on decode (byte shuffle needs typesize > 1) */
    int memcpyed;   /* data stored uncompressed right after the header */
    int dont_split;
    uint32_t nblocks, leftover; /* leftover: bytes of the last, short block (0 if none) */
} zg_blosc_header;

/* One stream to decode: `src_len` bytes at `src_off` of the chunk decompress to `dst_len` bytes at `dst_off`
 * of the (still shuffled) decoded buffer. raw = 1: the bytes are a plain copy. check_kind (checksum_combine.h:
 * ZG_CHECK_*, set by zg_blosc_stream_payload): the checksum the stream carries of its decoded bytes, `check`. */
typedef struct zg_blosc_stream {
    uint32_t src_off, src_len, dst_off, dst_len;
    int raw;
    int check_kind;
    uint32_t check;
} zg_blosc_stream;

/** Parses and checks the header of a chunk of n stored bytes whose decoded size must be `expected`
 *  (SIZE_MAX: not known). Every check c-blosc 1.21 makes of a header before it decodes is made here too
 *  (format version 2, compressor version 1, cbytes == n, blocksize within (0, nbytes], a plain copy exactly
 *  nbytes + 16 bytes, block starts within cbytes, ...), so that a chunk the host rejects never goes to the GPU.
 *  Errors: ZGPU_ERR_CORRUPT_DATA naming what is wrong. */
zgpu_status zg_blosc_parse_header(const uint8_t *src, size_t n, size_t expected, zg_blosc_header *h);
/** Upper bound of the number of streams of a chunk (for sizing the array given to zg_blosc_streams). */
size_t zg_blosc_max_streams(const zg_blosc_header *h);
/** Lists the streams in chunk order (checks every block start and stream size against n). */
zgpu_status zg_blosc_streams(const uint8_t *src, size_t n, const zg_blosc_header *h, zg_blosc_stream *out,
                             size_t cap, size_t *count);
/** The blocks holding decoded bytes [lo, hi) (lo < hi <= nbytes; not a plain copy): b0..b1. */
void zg_blosc_blocks_of(const zg_blosc_header *h, size_t lo, size_t hi, uint32_t *b0, uint32_t *b1);
/** Where blocks b0..b1 are stored, from the block starts (`src` holds at least the header and the block starts;
 *  n: the chunk's stored size): [*off, *end), from the least start among them to the next start above the
 *  greatest (or n). A partial read needs the header, the block starts and this span. */
void zg_blosc_blocks_span(const uint8_t *src, size_t n, const zg_blosc_header *h, uint32_t b0, uint32_t b1,
                          uint64_t *off, uint64_t *end);
/** Checks blocks b0..b1 of a chunk of n stored bytes before a partial decode reads them: each starts in the data
 *  area, and each of its streams lies between its start and the next block start above it (or n), so that
 *  decoding them reads nothing outside the span zg_blosc_blocks_span gives. ZGPU_ERR_CORRUPT_DATA names the block. */
zgpu_status zg_blosc_check_blocks(const uint8_t *src, size_t n, const zg_blosc_header *h, uint32_t b0, uint32_t b1);
/** A compressed stream (not raw) of the chunk at `chunk` as a GPU decoder reads it, with the checksum it carries:
 *  zlib streams become their DEFLATE payload (header and Adler-32 checked off, the Adler-32 kept in s->check);
 *  a zstd frame with the content checksum flag keeps the low 32 bits of its XXH64 (the frame must then fill the
 *  stream, as the zstd decoders' checks require). Errors: ZGPU_ERR_CORRUPT_DATA (the chunk decodes on the host,
 *  whose codec names the fault). */
zgpu_status zg_blosc_stream_payload(const zg_blosc_header *h, const uint8_t *chunk, zg_blosc_stream *s);
/** Name of an inner compressor code ("blosclz", "lz4", ...). */
const char *zg_blosc_compname(int compformat);

/** CPU references of the per-block filters, as c-blosc applies them on decode (used by tests and as the
 *  specification of the GPU kernels): whole decoded chunk `src` (nbytes) -> dst, block by block. */
void zg_blosc_unshuffle_ref(const zg_blosc_header *h, const uint8_t *src, uint8_t *dst);
/** Byte unshuffle of one buffer of `n` bytes with element size ts (numcodecs.shuffle and blosc blocks). */
void zg_unshuffle_bytes_ref(size_t ts, size_t n, const uint8_t *src, uint8_t *dst);
/** Bit unshuffle (bitshuffle library layout) of nelem elements of ts bytes; nelem must be a multiple of 8. */
void zg_bitunshuffle_ref(size_t ts, size_t nelem, const uint8_t *src, uint8_t *dst);

#endif
