/* A codec chain bound to one chunk representation: decode a stored chunk into a C-order native buffer,
 * and encode one back. Messages name the codec that failed; the caller adds the array and chunk. */
#ifndef ZG_CHAIN_H
#define ZG_CHAIN_H
#include "codec/codec.h"

typedef struct zg_chain {
    int n_a2a;
    zg_codec *a2a[ZG_MAX_CODECS];
    zg_codec *a2b;
    int n_b2b;
    zg_codec *b2b[ZG_MAX_CODECS];
    zg_repr repr;  /* the decoded chunk */
    /* What bytes->bytes codec k decodes to, from the array->bytes codec outward (encoded_size entries):
     * b2b_size[k] is exact when b2b_exact[k], else an upper bound; SIZE_MAX: no bound (the cap applies). */
    size_t b2b_size[ZG_MAX_CODECS];
    unsigned char b2b_exact[ZG_MAX_CODECS];
    size_t decode_cap; /* zg_chain_set_decode_cap; 0: the default (4x the chunk's decoded size, at least 1 MiB) */
    /* The device driver's analysis of this chain (src/device/route.c), made on its first device read and kept
     * (plain heap memory, freed with the chain; set once, atomically). */
    void *device_route;
} zg_chain;

/* Per-thread scratch reused across chunks (owned heap buffers). */
typedef struct zg_scratch {
    zg_buf a, b, c;
    const zg_decode_par *par; /* set around a decode: threads it may spread the chunk over (NULL: this one) */
} zg_scratch;
#define ZG_SCRATCH_INIT {ZG_BUF_INIT, ZG_BUF_INIT, ZG_BUF_INIT, NULL}
void zg_scratch_free(zg_scratch *s);

/** Builds a chain from a v3 codec list. `repr` is copied (its fill_value pointer must outlive the chain). */
zgpu_status zg_chain_create(const zj_value *codecs, const zg_repr *repr, zg_chain **out);
void zg_chain_free(zg_chain *ch);
zj_value *zg_chain_to_json(const zg_chain *ch);
/** 1 when decode is one bytes->bytes pipeline ending in a native-endian `bytes` codec (no array->array
 *  stage): the last stage can then write straight into the destination. */
int zg_chain_is_plain(const zg_chain *ch);
/** Caps what any stage of the chain may decode to where no exact size or compressor bound is known (the
 *  context's max_decoded_chunk_bytes); 0 restores the default, 4x the chunk's decoded size and at least
 *  1 MiB. Applies to a sharding codec's inner chains too (their default: 4x the inner chunk). Not thread-safe:
 *  call right after zg_chain_create, before the chain is shared. */
void zg_chain_set_decode_cap(zg_chain *ch, size_t bytes);
/** The cap in effect (the default resolved). */
size_t zg_chain_decode_cap(const zg_chain *ch);
/** Recomputes b2b_size / b2b_exact from the codecs' encoded_size entries (zg_chain_create does; call it
 *  again after changing a chain's codecs by hand). */
void zg_chain_update_sizes(zg_chain *ch);
/** The size of a stored chunk of this chain: exact (*exact = 1) or an upper bound (*exact = 0); SIZE_MAX
 *  when some codec gives no bound. */
size_t zg_chain_encoded_size(const zg_chain *ch, int *exact);
/** Decodes n stored bytes into out (nbytes of repr, C order, native endian). Every stage is bounded by the
 *  size it must produce (see zg_out_size): a stored chunk that decodes to more fails with
 *  ZGPU_ERR_CORRUPT_DATA before it allocates more than that. */
zgpu_status zg_chain_decode(const zg_chain *ch, const uint8_t *in, size_t n, uint8_t *out, zg_scratch *s);
/** 1 when zg_chain_decode_range decodes less than the whole chunk: a plain chain whose last bytes->bytes stage
 *  (the one next to `bytes`) can decode part of its output, or that has none (zg_chain_stores_raw). */
int zg_chain_decodes_ranges(const zg_chain *ch);
/** 1 for a chain of the `bytes` codec alone (no compressor, no checksum, no array->array stage; either byte order):
 *  a chunk's stored bytes are its elements, so any range of it is the same range of the stored chunk, read alone
 *  (zg_chain_stored_span) and copied or swapped. */
int zg_chain_stores_raw(const zg_chain *ch);
/** zg_chain_decode for a read that needs only bytes [lo, hi) of the decoded chunk (C order): where the chain
 *  decodes ranges (zg_chain_decodes_ranges), out[lo, hi) hold the decoded bytes and the rest of out is
 *  unspecified; elsewhere the whole chunk is decoded. out holds the whole chunk either way. */
zgpu_status zg_chain_decode_range(const zg_chain *ch, const uint8_t *in, size_t n, uint8_t *out, size_t lo, size_t hi,
                                  zg_scratch *s);
/** 1 when the chain's one bytes->bytes codec decodes byte runs (decode_bytes_runs: zstd). */
int zg_chain_decodes_runs(const zg_chain *ch);
/** zg_chain_decode_range for a read that needs only the byte runs `runs` (ascending; every one within the chunk) of
 *  the decoded chunk: where the chain decodes runs (zg_chain_decodes_runs: zstd frames of long matches or of
 *  literals), only those bytes are written, each run's at its dst or (dst NULL) its place in out; else [first
 *  run's start, last one's end) of out as zg_chain_decode_range, then the runs with a dst copied there. With
 *  `part` (in == part->buf), the n stored bytes are read from the file as the codec needs them (zg_part_input: a
 *  local chunk's few blocks instead of all), else in holds them all. */
zgpu_status zg_chain_decode_runs(const zg_chain *ch, const uint8_t *in, size_t n, uint8_t *out, const zg_byte_run *runs,
                                 size_t n_runs, const zg_part_input *part, zg_scratch *s);
/** What zg_chain_decode_runs of runs of `bytes` bytes, the first starting at byte lo and the last ending at byte hi,
 *  is expected to cost with `ways` threads at compression `ratio`, in bytes of an in-order decode (the codec's
 *  runs_cost); hi where the chain decodes the prefix. */
double zg_chain_runs_cost(const zg_chain *ch, double ratio, uint64_t bytes, uint64_t lo, uint64_t hi, int ways);
/** How much faster than one thread a chunk decodes with `ways` threads lent to its decode (zg_scratch.par) at
 *  compression `ratio` (decoded / stored bytes): the split_speedup of the stage that splits, else 1. */
double zg_chain_split_speedup(const zg_chain *ch, double ratio, int ways);
/** 1 when zg_chain_stored_span can name a part of the stored chunk (blosc): a partial decode then costs about what
 *  it reads and decodes, so boxes far apart in one chunk are better read and decoded apart. */
int zg_chain_reads_spans(const zg_chain *ch);
/** For a chain of one bytes->bytes codec that can say which stored bytes a range needs (blosc): the codec's
 *  stored_span (see codec.h). 0: read the whole stored chunk. */
int zg_chain_stored_span(const zg_chain *ch, const uint8_t *head, size_t head_n, size_t n, size_t lo, size_t hi,
                         size_t *head_need, uint64_t *off, uint64_t *end);
/** For chains whose array->bytes codec has no fixed-size decoded form (vlen-utf8, vlen-bytes): the bytes->bytes
 *  stages only, undone, so that *out[0, *out_n) is what the array->bytes codec wrote (in itself when there are
 *  none; else scratch a or b). Bounded as zg_chain_decode's stages. */
zgpu_status zg_chain_decode_serialized(const zg_chain *ch, const uint8_t *in, size_t n, const uint8_t **out,
                                       size_t *out_n, zg_scratch *s);
/** The inverse: the bytes->bytes stages over in[0, n) (the array->bytes codec's output, which must not be in
 *  scratch a or b), into out (out->size set). */
zgpu_status zg_chain_encode_serialized(const zg_chain *ch, const uint8_t *in, size_t n, zg_buf *out, zg_scratch *s);
/** Encodes a chunk (nbytes of repr) into out (out->size set). */
zgpu_status zg_chain_encode(const zg_chain *ch, const uint8_t *chunk, zg_buf *out, zg_scratch *s);

#endif
