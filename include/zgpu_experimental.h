/*
 * zgpu — experimental tuning of the device path. UNSTABLE: fields may change or go between any two
 * versions, and the defaults are what zgpu measured fastest (docs/tuning.md says how and on what). Set a
 * field only to measure, to work around a problem, or to force a decoder for a test; keep the defaults
 * otherwise.
 *
 * A context takes its tuning from zgpu_context_options.tuning (NULL = defaults) when it is created and keeps
 * a copy: later changes to the caller's struct do not reach it. ZGPU_* environment variables, read once per
 * process (src/common/env.c, listed in docs/tuning.md), override fields of every context created afterwards:
 * for experiments from the shell only.
 */
#ifndef ZGPU_EXPERIMENTAL_H
#define ZGPU_EXPERIMENTAL_H

#include "zgpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Which decoder a compressed format gets on the GPU path (zgpu_tuning.zstd_encoder: which encoder). */
typedef enum zgpu_decoder_choice {
    ZGPU_DECODER_AUTO = 0,   /* zgpu's choice (today: zgpu's own decoder where there is one) */
    ZGPU_DECODER_ZGPU = 1,   /* zgpu's own GPU decoder */
    ZGPU_DECODER_NVCOMP = 2, /* nVIDIA nvCOMP's batched decoder (loaded at run time; host threads if missing) */
    ZGPU_DECODER_HOST = 3    /* host threads, then one batched copy to the device */
} zgpu_decoder_choice;

/** A three-way switch: the default, or forced on or off. */
typedef enum zgpu_switch { ZGPU_SWITCH_DEFAULT = 0, ZGPU_SWITCH_ON = 1, ZGPU_SWITCH_OFF = 2 } zgpu_switch;

#define ZGPU_TUNING_MAX_SHAPE 16

typedef struct zgpu_tuning {
    size_t struct_size; /* sizeof(zgpu_tuning): zgpu_tuning_init sets it */

    /* Decoders per format. zstd: ZGPU, NVCOMP (HOST: host threads). deflate (gzip, zlib, blosc's zlib): ZGPU,
     * NVCOMP (only with zgpu_context_options.gpu_trust_input; else host threads), HOST. lz4 (blosc's LZ4
     * streams; numcodecs LZ4 chunks always go to nvCOMP): ZGPU, NVCOMP. */
    zgpu_decoder_choice zstd_decoder, deflate_decoder, lz4_decoder;

    /* Waves of a device read. pipeline_waves: how many waves a large read is split into (0 = zgpu's choice:
     * 5, 4 with zgpu's DEFLATE decoder, fewer for reads that compress better than 4:1). wave_shape: relative
     * wave sizes (n_wave_shape of them; 0 = equal waves). wave_sets: most waves in flight, each on its own
     * buffer set and stream (0 = up to 4 as far as the memory budget holds them; 2..4 caps that: a read needs
     * two; device writes' sets too). wave_overlap: the next wave's reads start before this wave's last pieces are
     * in (DEFAULT = on). */
    int pipeline_waves;
    unsigned wave_shape[ZGPU_TUNING_MAX_SHAPE];
    int n_wave_shape;
    int wave_sets;
    zgpu_switch wave_overlap;

    /* zgpu's zstd decoder. zstd_rows: chunks wholly selected but not contiguous in the output decode into
     * their rows there (DEFAULT = on; OFF: scratch and a scatter pass). zstd_huf_probe: bits above its run of a
     * Huffman stream where a lane starts its guess (-1 = default 512; 0 makes every guess wrong, for tests). */
    zgpu_switch zstd_rows;
    int zstd_huf_probe;

    /* zgpu's DEFLATE decoder: parts each stream of a small batch is split into (0 = enough to fill the GPU;
     * 1 = no splitting). */
    int inflate_parts;

    /* Diagnostics on stderr, each waiting on the GPU where it measures (never for production runs):
     * trace: each wave's timeline; profile: the zstd decoder's per-kernel and the DEFLATE decoder's
     * per-phase times. */
    int trace;
    int profile;

    /* The zgpu command's copy (zgpu cp): bytes of one slab copied at a time (0 = 256 MiB). */
    size_t copy_slab_bytes;

    /* Device reads: ZGPU_ROUTE_AUTO (default) lets the cost model pick GPU decode or the host read plus one copy
     * (docs/tuning.md, "Routes"); DEVICE or HOST forces one. */
    zgpu_route read_route;

    /* Partial decodes on the host: a chunk a read needs only part of is decoded only as far as that part where its
     * codec can stop short. DEFAULT or ON: blosc chunks read and decode only the blocks each box needs (a 1x256x256
     * patch of a 64x256x256 chunk: 1 of its 64 blocks); uncompressed chunks read only the bytes from the first to
     * the last a box needs; zstd frames decode up to the last byte needed, or only the rows needed where their
     * matches are long or they are mostly literals (docs/tuning.md). OFF: whole chunks. A zstd frame with a content
     * checksum always decodes whole, so the checksum is verified. */
    zgpu_switch partial_decode;

    /* The compressor of zstd chunks on the GPU write path (zgpu_array_write_device; blosc's zstd streams always get
     * zgpu's). AUTO (default; today zgpu's own) or ZGPU: zgpu's own GPU zstd encoder. NVCOMP: nVIDIA nvCOMP's
     * batched zstd compressor, kept for comparison and as a fallback. HOST: host threads, after one copy of the
     * wave to the host. Reads and host writes do not use it. */
    zgpu_decoder_choice zstd_encoder;

    /* Device writes (zgpu_array_write_device): decoded bytes of the chunks one wave gathers and encodes (0 = a sixth
     * of the device memory budget, 64 to 256 MiB; at least one chunk or shard). Smaller waves overlap more of the
     * file writes and hold less memory; larger ones give the encoder more at once. wave_sets caps the write's
     * buffer sets too (by default two, up to four where a wave holds fewer objects than the pool has threads). */
    size_t write_wave_bytes;

    /* Host reads (zgpu_array_read, _ex, _regions) decoded on the GPU: the boxes read into device memory as a device
     * read, then copied back. AUTO (default): when the context has already started its GPU (a device read or write
     * ran on it; a host read never starts CUDA itself) and the route model predicts the GPU decode plus the copy
     * back faster than the host threads. DEVICE: whenever the array's chunks decode on the GPU (starts CUDA; a
     * machine without a usable GPU reads on the host). HOST: never. Strided destinations, reads larger than the
     * device memory budget and forked children read on the host. */
    zgpu_route host_read_route;

    /* Host decodes of a read of fewer chunks than threads (a crop, a patch, one chunk): DEFAULT or ON, a zstd frame of
     * 512 KiB or more is decoded by several threads at once (its blocks' literals and sequences in parallel, then
     * each thread a run of blocks, matches into other runs resolved without waiting), and a gzip or zlib chunk's
     * DEFLATE stream in parts found at guessed block headers (src/codec/deflate_split.h), where their models expect
     * it faster than one thread; OFF: one thread a chunk (libzstd, libdeflate). */
    zgpu_switch split_decode;

    /* Host threads (every read and write decoded on the host, and the host route of device reads): microseconds an
     * idle worker polls for the next job before it sleeps (0 = zgpu's default, 100; -1 = it sleeps at once).
     * Waking a sleeping thread takes 20-100 us on a VM, as long as a small read's whole decode; polling costs up
     * to that much CPU time a thread after each job, yielding the core to any other thread that wants it
     * (docs/tuning.md). */
    int pool_spin_us;
} zgpu_tuning;

/** Fills *t with the defaults (struct_size set). */
ZGPU_API void zgpu_tuning_init(zgpu_tuning *t);
/** The tuning a context runs with: its options' tuning with the environment's overrides applied. */
ZGPU_API void zgpu_context_tuning(const zgpu_context *ctx, zgpu_tuning *t);

#ifdef __cplusplus
}
#endif
#endif /* ZGPU_EXPERIMENTAL_H */
