/* The host's part of a write from device memory (src/device/write_device.c), plain C so that the CPU tests run it
 * (tests/unit/test_write_units.c): which stages of an array's chain the GPU runs, where a shard's inner chunks lie
 * in its buffer, and the stored layout of a wave from the sizes the GPU's encoders report.
 *
 * Units: what the GPU encoder compresses, one batch a wave — the objects' chunks, or a sharded array's inner chunks
 * (upo of them an object, each split out of its shard's buffer in C order). */
#ifndef ZG_WRITE_UNITS_H
#define ZG_WRITE_UNITS_H
#include <stddef.h>
#include <stdint.h>

#include "codec/chain.h"
#include "gpuencode/blosc_frame.h"
#include "gpuencode/encode_frames.h"

/** How a chain encodes on the GPU: gpu 0 (host threads; why says why) or 1, with its stages. */
typedef struct zg_wu_encoder {
    int gpu;
    int blosc;                       /* 1: the Blosc1 encoder with bp; else format */
    zg_ge_format format;
    zg_blosc_frame_params bp;        /* (nbytes set by the caller once a unit's size is known) */
    int level;                       /* the compressor's configured level */
    int swap;                        /* the `bytes` codec's byte swap (its element size), or 0 */
    int crc32c;                      /* a crc32c after the compressor: 4 bytes the host computes */
    int delta;                       /* numcodecs.delta of integers as a kernel: the item size, or 0 */
    int shuffle;                     /* numcodecs.shuffle before the compressor: the element size, or 0 */
    int transposed;                  /* transposes, folded into the gather: */
    int64_t strides[ZGPU_MAX_DIMS];  /* each decoded axis's stride in the encoded (transposed) chunk */
    const zg_codec *shard;           /* a sharding_indexed chain: its codec (units: its inner chunks), else NULL */
    char why[160];
} zg_wu_encoder;

/** The encoder of an array's chain: [transpose ...] [numcodecs.delta] `bytes` [numcodecs.shuffle] compressor
 *  [crc32c], the compressor one the GPU encoders write (zstd, gzip, zlib, numcodecs' lz4, blosc); or a
 *  sharding_indexed codec alone whose inner chain is `bytes` and such a compressor [crc32c]. Anything else: gpu 0. */
void zg_wu_analyse(const zg_chain *ch, zg_wu_encoder *e);

/** Makes e host-only, why being fmt with name (a "%s" format). */
void zg_wu_host_only(zg_wu_encoder *e, const char *fmt, const char *name);

/** Byte offset of inner chunk k (C order over the shard's grid of inner chunks) in a shard buffer whose axes have
 *  `strides` (bytes). */
int64_t zg_wu_inner_offset(const zg_codec *shard, int ndim, const int64_t *strides, uint64_t k);

/** A wave's stored layout: its objects packed one after another for one copy to the host. */
typedef struct zg_wu_pack {
    /* in */
    size_t n, upo;            /* objects, units an object */
    const size_t *sizes;      /* [n * upo] units' stored sizes (without a crc32c) */
    const int *differs;       /* [n] 0: the object is the fill value everywhere (deleted: nothing packed) */
    const int *udiffers;      /* sharded: [n * upo] 0: the inner chunk is (left out of the index); else NULL */
    int crc32c;               /* 4 bytes of room after each stored unit */
    const zg_codec *shard;    /* sharded: the codec (its index is encoded here), else NULL */
    /* out (caller's arrays) */
    size_t *off;              /* [n + 1] objects' offsets in the packed bytes */
    size_t *uoff;             /* [n * upo] each unit's offset, SIZE_MAX where it is not stored */
    size_t *ipos;             /* sharded: [n] where each object's index goes */
    uint8_t *index;           /* sharded: [n * index_nbytes] the encoded indexes */
    uint64_t *pairs;          /* sharded: scratch of 2 * upo */
} zg_wu_pack;

/** Plans the layout. Errors (the index codecs failing): *failed the object. */
zgpu_status zg_wu_pack_plan(zg_wu_pack *p, size_t *failed);

/** Object i's stored bytes completed in place once the units are copied to `data` (the packed bytes): its index
 *  put where ipos says, each unit's crc32c after it. */
void zg_wu_finish_object(const zg_wu_pack *p, size_t i, uint8_t *data);

#endif
