/* Per-thread libdeflate objects shared by the gzip and zlib codecs: decoding is the hot path, so no
 * allocation per chunk; freed when the thread exits. */
#ifndef ZG_DEFLATE_TLS_H
#define ZG_DEFLATE_TLS_H
#include <libdeflate.h>
#include <stdint.h>

/* DEFLATE cannot expand data by more than 1032:1 (a 258-byte match costs at least 2 bits), which bounds
 * how far an output of unknown size may grow. */
#define DEFLATE_MAX_RATIO 1032u

/* Bytes allowed for gzip's optional header fields (file name, comment, extra field) in the bound of a member:
 * zarr writers leave them out; gzip(1) and others write a name or a short field. */
#define ZG_GZIP_HEADER_SLACK 1024u

/** The most a sane DEFLATE encoder writes for n bytes: the data in stored blocks (5 bytes of header per
 *  block), blocks of at least 1 KiB (zlib and libdeflate use 16-64 KiB when they fall back to storing), and a
 *  final empty block. SIZE_MAX on overflow. */
static inline size_t zg_deflate_bound(size_t n) {
    size_t blocks = n / 1024 + 2;
    return n > SIZE_MAX - 5 * blocks ? SIZE_MAX : n + 5 * blocks;
}

/** This thread's decompressor, or NULL when it cannot be allocated. */
struct libdeflate_decompressor *zg_deflate_decompressor(void);
/** This thread's compressor at `level` (re-created when the level changes), or NULL. */
struct libdeflate_compressor *zg_deflate_compressor(int level);

#endif
