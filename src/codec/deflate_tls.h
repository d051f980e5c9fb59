/* Per-thread libdeflate objects shared by the gzip and zlib codecs: decoding is the hot path, so no
 * allocation per chunk; freed when the thread exits. */
#ifndef ZG_DEFLATE_TLS_H
#define ZG_DEFLATE_TLS_H
#include <libdeflate.h>

/* DEFLATE cannot expand data by more than 1032:1 (a 258-byte match costs at least 2 bits), which bounds
 * how far an output of unknown size may grow. */
#define DEFLATE_MAX_RATIO 1032u

/** This thread's decompressor, or NULL when it cannot be allocated. */
struct libdeflate_decompressor *zg_deflate_decompressor(void);
/** This thread's compressor at `level` (re-created when the level changes), or NULL. */
struct libdeflate_compressor *zg_deflate_compressor(int level);

#endif
