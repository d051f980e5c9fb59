/* One DEFLATE stream (a gzip member, a zlib stream) decoded by several host threads: a read of fewer chunks than
 * threads (a crop, a patch, one chunk) decoded each 16 MiB label chunk on one core in 5-10 ms while the others
 * idled, and DEFLATE has no block index to split it by. Built on the GPU decoder's parts rules
 * (gpucodec/deflate/inflate_parts.h), run by host threads:
 *   find     part k > 0 of P starts at the first bit past its share of the stream where a dynamic Huffman
 *            block header passes every check (a guess), searched by the part itself as its first step, or by the
 *            part before once it has decoded that far, whichever comes first;
 *   decode   part 0 into the output (at once), each other part from its guess into its tokens (matches, runs of
 *            literals) and its last 32 KiB as 16-bit elements (marks for the window before it that it cannot
 *            know), each stopping at the first block that starts at a later part's guess;
 *   chain    part 0 is true, the part it stopped at starts at a true block boundary, and so on: the parts' output
 *            offsets; a broken chain (an error, a size that is not the chunk's) is declined, and the caller's
 *            one-thread decode names any fault (a wrong guess is decoded over by the part before);
 *   tails    each part's last 32 KiB into bytes, in chain order (its marks name bytes of the parts before);
 *   replay   every part's tokens into bytes at its place at once (what they read is final), each part's range then
 *            checked (CRC32 or Adler-32, combined), so no read skips the checksum the data carries. */
#ifndef ZG_DEFLATE_SPLIT_H
#define ZG_DEFLATE_SPLIT_H
#include "codec/codec.h"

/* Stored bytes a part gets at least (a part's fixed costs, a block header found and its 32 KiB tail resolved, are
 * small next to decoding that much). */
#define ZG_DEFLATE_PART_MIN_BYTES ((size_t)16 << 10)
/* Splits expected to gain less (zg_deflate_split_speedup) decode on one thread. */
#define ZG_DEFLATE_SPLIT_GAIN_MIN 1.25

/* The checksum of the decoded bytes a stream carries. */
typedef enum zg_deflate_check_kind { ZG_DEFLATE_CRC32, ZG_DEFLATE_ADLER32 } zg_deflate_check_kind;

/** What a split decode of a stream of `ratio` (decoded / stored bytes) over `ways` threads is expected to gain over
 *  libdeflate on one thread (the route model's guess, and the codecs' rule for taking the split): 2.1-3.2 one-thread
 *  decodes (dense to literal-heavy streams) spread over the parts, plus a tenth of one (deflate_split.c). 1: not
 *  worth it. */
double zg_deflate_split_speedup(size_t stored, double ratio, int ways);

/** The same for a chunk of `decoded` bytes compressed `ratio`:1: the gzip and zlib codecs' split_speedup (c unused). */
double zg_deflate_chunk_split_speedup(const zg_codec *c, size_t decoded, double ratio, int ways);

/** Decodes the raw DEFLATE stream in[0, n) of exactly `size` decoded bytes into out with up to par->ways threads of
 *  par->pool, in parts of part_min stored bytes or more, where zg_deflate_split_speedup expects min_gain or more
 *  (the codecs: ZG_DEFLATE_PART_MIN_BYTES, ZG_DEFLATE_SPLIT_GAIN_MIN; tests and fuzzers force small parts), and
 *  checks the decoded bytes against `check` (CRC32 or Adler-32, as `kind` says). *declined = 1 (out then
 *  unspecified) where it does not apply or does not hold: one thread, a stream too small to split, or too large for
 *  the rules (256 MiB), a chain of parts that breaks, a fault anywhere (a bad code, a distance before the output, a
 *  size that is not `size`, a checksum mismatch, a part without memory for its tokens): the caller's one-thread
 *  decode then decodes it or names what is wrong. Fails only for lack of memory for the split's own state. */
zgpu_status zg_deflate_decode_split(const uint8_t *in, size_t n, uint8_t *out, size_t size, zg_deflate_check_kind kind,
                                    uint32_t check, const zg_decode_par *par, size_t part_min, double min_gain,
                                    int *declined);

/* Streams decoded split, parts decoded, and split decodes declined after the parts ran (a broken chain, a fault or
 * a checksum mismatch), since the process started (tests); and the wall time spent in each phase (find and decode,
 * tails, replay), with the decode phase's slowest part and its parts' mean summed over the splits, in seconds (the
 * tests' time lines: a slowest part near the mean but far above the one-thread share is contention, not balance). */
typedef struct zg_deflate_split_stats {
    unsigned long long streams, parts, fallbacks;
    double phase_s[3], part_max_s, part_mean_s;
} zg_deflate_split_stats;
zg_deflate_split_stats zg_deflate_split_stats_get(void);

#endif
