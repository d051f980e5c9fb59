/* A zstd frame decoded in order through a small window, keeping only the byte runs a read needs. The in-order decode
 * of a crop's chunk wrote the whole prefix into the chunk's buffer, then copied the crop's rows out: on the H200
 * machine's cores (about 11 GB/s of memory a core) writing a 2 MiB label inner chunk took 100-280 us and a 16 MiB
 * label chunk 1-3 ms, whatever the crop took of it. Here each block is decoded into one of two alternating buffers
 * of a segment's size (this thread's, kept in cache), and the runs' bytes of the block are copied to their places
 * as it is done. */
#ifndef ZG_ZSTD_WINDOW_H
#define ZG_ZSTD_WINDOW_H
#include "codec/codec.h"

struct ZSTD_DCtx_s;

/* The segments tried, smallest first: 256 KiB (a match may reach 128 KiB back at any byte: a 32x128x128 label inner
 * chunk's planes of 64 KiB), then 1 MiB (the 256 KiB planes of a 64x256x256 one). Smaller segments stay in the
 * faster cache (H200 machine, a 2 MiB label inner chunk: 22% faster than in order with 256 KiB, 15% with 512). */
#define ZG_ZSTD_WINDOW_SEGMENT_MIN ((size_t)256 << 10)
#define ZG_ZSTD_WINDOW_SEGMENT_MAX ((size_t)1 << 20)
/* Only frames whose needed prefix is longer than this go through the window (a shorter one stays in cache anyway). */
#define ZG_ZSTD_WINDOW_MIN ((size_t)512 << 10)

/** Decodes the single zstd frame in[0, n) of exactly `size` bytes with context d in order as far as the last run's
 *  end (to the frame's end where it has a content checksum, which libzstd then verifies), its blocks through two
 *  alternating buffers of `segment` bytes, every run's bytes written at its dst or, dst NULL, its place in out (the
 *  rest of out left alone). A match reaching further back than the segment before its own holds is refused by
 *  libzstd (it checks every offset against the history it was given), as is any damage: *declined = 2 then (the
 *  runs' bytes unspecified), and the caller decodes in order, which names a fault; *declined = 1 (nothing done) for
 *  another layout (several or skippable frames, no recorded size). Runs ascending, within [0, size). Fails only for
 *  lack of memory. */
zgpu_status zg_zstd_decode_windowed(struct ZSTD_DCtx_s *d, const uint8_t *in, size_t n, uint8_t *out, size_t size,
                                    const zg_byte_run *runs, size_t n_runs, size_t segment, int *declined);

/** Frames decoded through the window in this process, and those declined (tests). */
typedef struct zg_zstd_window_stats {
    unsigned long long frames, declined;
} zg_zstd_window_stats;
zg_zstd_window_stats zg_zstd_window_stats_get(void);

#endif
