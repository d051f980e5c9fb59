/* One zstd frame decoded by several host threads (a read of fewer chunks than threads: one 8-16 MiB chunk took
 * one core 2-12 ms while fifteen idled). Built on the GPU decoder's block rules (gpucodec/zstd/zstd_rules.h) and
 * host planner: the blocks' literals and sequences decode in parallel, their places and repeat offsets follow in
 * one cheap pass, then each thread writes a contiguous run of blocks. A match reaching back into another thread's
 * run is resolved without waiting, by following matches back to the literals they copy; data whose chains run too
 * deep for that finishes in order afterwards. */
#ifndef ZG_ZSTD_SPLIT_H
#define ZG_ZSTD_SPLIT_H
#include "codec/codec.h"

/* Below this decoded size a frame is decoded on one thread (a few blocks: the parallel steps cost more than
 * they save). */
#define ZG_ZSTD_SPLIT_MIN ((size_t)512 << 10)
/* Splits expected to gain less (zg_zstd_split_speedup) decode on one thread (the codec's decode_bytes_split). */
#define ZG_ZSTD_SPLIT_GAIN_MIN 1.2

/** What a split decode of a frame of `ratio` (decoded / stored bytes) over `ways` threads is expected to gain over
 *  one thread, before its blocks are seen (the route model's guess; zg_zstd_decode_split decides on the blocks):
 *  on poorly compressible frames (Huffman literals, which libzstd decodes two symbols a lookup) 0.25 a thread plus
 *  0.5, up to 4.5x; highly compressible ones (long matches, which libzstd copies at memory speed) nothing from 32:1
 *  on. */
double zg_zstd_split_speedup(double ratio, int ways);

/** Decodes the single zstd frame in[0, n) of exactly `size` decoded bytes into out as far as byte hi (the whole
 *  frame when hi == size, its content checksum then verified), with up to par->ways threads of par->pool, where
 *  the frame's blocks say the split gains min_gain or more: its literals are at least half its bytes and it has at
 *  most 32 sequences a KiB (each thread of the split decodes sequences and executes matches at a third of
 *  libzstd's speed or less, literals at about half: a random walk's frames, 150 sequences a KiB, decoded 1.7x
 *  slower on two threads than libzstd on one).
 *  *declined = 1 (nothing else done) where it does not apply: another frame layout (skippable or trailing frames,
 *  a dictionary, no recorded size), a frame under ZG_ZSTD_SPLIT_MIN, one thread, or a frame the block decoder
 *  finds damaged (the caller's one-thread decode then names what is wrong). Fails only for lack of memory. */
zgpu_status zg_zstd_decode_split(const uint8_t *in, size_t n, uint8_t *out, size_t size, size_t hi,
                                 const zg_decode_par *par, double min_gain, int *declined);

/** Counters of what the split decodes of this process did (tests): frames decoded split, runs that resolved bytes
 *  of earlier runs by following matches back, runs finished in order because their lookups passed the budget. */
typedef struct zg_zstd_split_stats {
    unsigned long long frames, chased, deferred;
} zg_zstd_split_stats;
zg_zstd_split_stats zg_zstd_split_stats_get(void);

#endif
