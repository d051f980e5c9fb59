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
 *  on poorly compressible frames (Huffman literals, decoded by libzstd a block at a time) 0.3 a thread plus 0.8, up
 *  to 5x; highly compressible ones (long matches, which libzstd copies at memory speed) nothing from 32:1 on. */
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

/* Below this decoded size a frame needed in part is decoded in order (zg_zstd_decode_sparse declines). */
#define ZG_ZSTD_SPARSE_MIN ((size_t)64 << 10)
/* A sparse decode takes frames of long matches (labels): at most one sequence per ZG_ZSTD_SPARSE_SEQ_BYTES decoded
 * bytes, and literals at most 1 / ZG_ZSTD_SPARSE_LIT_SHARE of them; and frames of more literals than that (noisy
 * samples: OCT, fields) lazily, only the blocks its runs and their matches read decoding their literals. */
#define ZG_ZSTD_SPARSE_SEQ_BYTES 256
#define ZG_ZSTD_SPARSE_LIT_SHARE 8
/* A sparse decode of long matches costs about ZG_ZSTD_SPARSE_FIXED bytes of an in-order decode whatever it needs (a
 * frame's first blocks hold thousands of short matches whose chains every lookup into them follows), then
 * ZG_ZSTD_SPARSE_BYTE_COST bytes' worth a byte of its runs, shared among its threads (2-core machine, label frames of
 * 64x256x256 uint32, one thread: a plane 0.25 ms sparse against 0.42 in order; a 32x128x128 crop 0.76-0.96 ms whatever
 * its depth, in order 0.47 at plane 0 to 1.28 at plane 32; of 32x128x128 frames, 2 MiB, a plane 0.10 against 0.065).
 * A lazy one costs the blocks its runs fall in (zstd's 128 KiB), their literals decoded by libzstd. */
#define ZG_ZSTD_SPARSE_FIXED ((uint64_t)2 << 20)
#define ZG_ZSTD_SPARSE_BYTE_COST 4

/** Decodes only the byte runs `runs` (each within [0, size), in ascending order; a read's rows of a crop in the chunk)
 *  of the single zstd frame in[0, n) of exactly `size` decoded bytes, each at its dst (the read's destination) or, dst
 *  NULL, the same place of out, the rest of out left as it was: the frame's blocks' sequences (and, for long matches,
 *  literals) are decoded as far as the last run (on up to par->ways threads of par->pool; par may be NULL), then every
 *  run's bytes are found by following its matches back to the literals they copy (resolve), the runs shared among the
 *  threads; a literal frame's blocks decode their literals when a run first reads them. What a crop of a label chunk
 *  needs (an eighth of the chunk, long matches) costs its own bytes instead of the frame's prefix; a plane of an OCT
 *  chunk its block. *declined = 1 (out's and the runs' dst bytes unspecified) where it does not apply: where it would
 *  cost more than decoding the prefix [0, last run's end) in order (zg_zstd_sparse_cost), a frame under
 *  ZG_ZSTD_SPARSE_MIN, one with a content checksum (it covers the whole output), one of many short matches
 *  (ZG_ZSTD_SPARSE_SEQ_BYTES) and few literals, one the block rules decline (damage: the caller's decode names it), or
 *  lookups past a budget (chains too deep). Fails only for lack of memory. With `part` (in == part->buf, nothing read
 *  yet), a literal frame is read as it decodes: every block's headers and sequences, then the literals of the blocks it
 *  reads (a plane of a 1 MiB OCT inner chunk with few matches reads about 130 KiB of it; matches into earlier blocks
 *  bring those in); declined, the caller reads it whole. */
zgpu_status zg_zstd_decode_sparse(const uint8_t *in, size_t n, uint8_t *out, size_t size, const zg_byte_run *runs,
                                  size_t n_runs, const zg_decode_par *par, const zg_part_input *part, int *declined);

/** What zg_zstd_decode_sparse of runs of `bytes` bytes within [lo, hi) of a frame of `size` bytes compressed
 *  `ratio`:1 is expected to cost on `ways` threads, in bytes of the in-order decode (the route model's guess before
 *  the frame's blocks are seen: frames of ZG_ZSTD_SPARSE_RATIO:1 or more are taken for long matches, of less than
 *  ZG_ZSTD_SPARSE_LIT_RATIO:1 for literals, every block from lo's to hi's decoded); hi where it would decline. */
double zg_zstd_sparse_cost(size_t size, double ratio, uint64_t bytes, uint64_t lo, uint64_t hi, int ways);
#define ZG_ZSTD_SPARSE_RATIO 32
#define ZG_ZSTD_SPARSE_LIT_RATIO 4

/** Counters of what the split decodes of this process did (tests): frames decoded split, runs that resolved bytes
 *  of earlier runs by following matches back, runs finished in order because their lookups passed the budget,
 *  frames decoded sparse, those of them lazily (literal frames), blocks whose Huffman literals libzstd decoded. */
typedef struct zg_zstd_split_stats {
    unsigned long long frames, chased, deferred, sparse, lazy, wrapped;
} zg_zstd_split_stats;
zg_zstd_split_stats zg_zstd_split_stats_get(void);

#endif
