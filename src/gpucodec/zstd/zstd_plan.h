/* Host side of the block-parallel zstd decoder (zstd_decode.h): checks a zstd frame without decoding it and
 * lists its blocks, with the table descriptions they use decoded, as descriptors for the GPU. Pure C. */
#ifndef ZG_ZSTD_PLAN_H
#define ZG_ZSTD_PLAN_H
#include <stddef.h>
#include <stdint.h>
#include "gpucodec/zstd/zstd_rules.h"
#include "zgpu.h"

/* Descriptors of any number of frames. Block offsets: src relative to what the caller passed as src_off,
 * lit in bytes of the plan's literal buffer, seq in sequences of its sequence buffer; table indices into
 * hufs / fses. */
typedef struct zg_zd_plan {
    zg_zd_frame *frames;
    zg_zd_block *blocks;
    zg_zd_huf_desc *hufs;
    zg_zd_fse_desc *fses;
    size_t n_frames, n_blocks, n_hufs, n_fses;
    size_t cap_frames, cap_blocks, cap_hufs, cap_fses;
    uint64_t lit_bytes, n_seq;
    int32_t predefined[3]; /* fses index of the predefined LL / OF / ML tables, -1 until used */
    int streams_unread;    /* set by the caller: the frame's Huffman streams are not in memory (a sparse read of a
                            * local chunk, zstd_split.c), so their end marks are not checked here */
} zg_zd_plan;

/* A literals section's header (RFC 8878 3.1.1.3.1.1), as its first bytes give it. */
typedef struct zg_zd_lit_head {
    int type;     /* 0 raw, 1 RLE, 2 Huffman, 3 treeless */
    int four;     /* Huffman or treeless: in four streams (else one) */
    size_t hs;    /* the header's bytes (1 to 5) */
    size_t regen; /* the literals it regenerates */
    size_t csize; /* Huffman or treeless: the bytes after the header (table description, jump table, streams) */
} zg_zd_lit_head;

/** The size of the header of a literals section whose first byte is h0. */
size_t zg_zd_lit_header_size(uint8_t h0);
/** The header of the literals section at p[0, n): 0, or -1 where n bytes do not hold it all. Nothing is checked
 *  against a block (the planner does: zg_zd_plan_frame). */
int zg_zd_lit_header(const uint8_t *p, size_t n, zg_zd_lit_head *h);

void zg_zd_plan_init(zg_zd_plan *pl);
void zg_zd_plan_free(zg_zd_plan *pl);
/** Empties the plan but keeps its arrays for the next frames: planning into fresh arrays cost 2.5 us a small
 *  frame (a label volume's 2 MiB inner chunk, 16 blocks), 0.5 us into kept ones (first touches of new pages). */
void zg_zd_plan_reset(zg_zd_plan *pl);
/** Bytes the plan's arrays hold (their capacity). */
size_t zg_zd_plan_bytes(const zg_zd_plan *pl);

/** Checks the single zstd frame p[0, n) (see zg_zstd_check in zstd_check.h for what is checked) whose decoded
 *  size must be `expected` (SIZE_MAX: not known). With a plan, appends the frame's descriptors (its dst and
 *  status_index are the caller's to set); block src offsets are src_off + the offset in the frame. On any
 *  error the plan is left as it was. ZGPU_ERR_UNSUPPORTED: valid but not for this decoder (dictionary,
 *  skippable or trailing frames; with a plan also frames of 2 GiB or more, or of unknown size). */
zgpu_status zg_zd_plan_frame(zg_zd_plan *pl, const uint8_t *p, size_t n, size_t expected, uint64_t src_off);

/* Where a plan's descriptors land in a batch: device addresses of the stored bytes its src offsets are
 * relative to, of its part of the literal and sequence buffers, and the counts of blocks, frames and table
 * descriptions that precede it in the batch. */
typedef struct zg_zd_bases {
    uint64_t src, lit, seq;
    uint32_t block, frame, huf, fse;
} zg_zd_bases;

/** Writes the plan's descriptors into the batch arrays (each at its base index) with addresses and indices
 *  rebased; frames keep dst 0 and status_index 0 for the caller to set. */
void zg_zd_plan_emit(const zg_zd_plan *pl, const zg_zd_bases *at, zg_zd_block *blocks, zg_zd_frame *frames,
                     zg_zd_huf_desc *hufs, zg_zd_fse_desc *fses);

/** K3b's ticket order for a batch's n_frames frames (first_block / n_blocks as emitted): order[t] is the block
 *  that takes ticket t, round robin over the frames (every frame's first block, then every second block, ...).
 *  A block waits only for earlier blocks of its frame, which take smaller tickets in this order too; and where
 *  a frame's blocks chain (highly compressible volumes), every frame's chain runs at once instead of the frames
 *  that fit on the GPU first, then the rest. ZGPU_ERR_NO_MEMORY if a work list cannot be allocated. */
zgpu_status zg_zd_ticket_order(const zg_zd_frame *frames, size_t n_frames, uint32_t *order);

/** Text of a ZG_ZD_E_* code. */
const char *zg_zd_error_text(int code);

#endif
