/* The GPU decoder contract: what every decoder of compressed streams on the device (zgpu's zstd, DEFLATE, LZ4,
 * TIFF LZW and PackBits decoders, nVIDIA nvCOMP's) gives the device driver (src/device/), and the registry that lists them
 * (registry_gpu.c, one line a decoder). The driver never names a decoder: it picks one per stream kind and read
 * (zg_gpu_pick), asks it to check each stream on the host, lets it reserve and fill its descriptors and scratch in
 * the wave's buffers, launches it on the wave's stream over nvCOMP-style batch arrays and turns its per-stream
 * statuses into messages with its error_text.
 *
 * A wave's streams are laid out by decoder, in registry order: decoder d owns status slots [base, base + n) of
 * the wave's batch arrays (input pointers and sizes, output capacities and pointers, actual sizes, statuses,
 * prechecks), all in one device buffer the driver copies from pinned host memory in ONE transfer.
 *
 * CUDA-only (the adapters are *_gpu.c files); plain C over the CUDA runtime. */
#ifndef ZG_GPU_DECODER_H
#define ZG_GPU_DECODER_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>
#include "common/status.h"
#include "gpucodec/common/checksum_combine.h"
#include "zgpu.h"
#include "zgpu_experimental.h"

/* Every region of a wave's staging (stored bytes, descriptors, scratch) starts on this boundary. */
#define ZG_GPU_ALIGN 256
static inline uint64_t zg_gpu_take(uint64_t *pos, uint64_t n) {
    const uint64_t at = (*pos + (ZG_GPU_ALIGN - 1)) & ~(uint64_t)(ZG_GPU_ALIGN - 1);
    *pos = at + n;
    return at;
}

/* A launch's CUDA error as the driver words it ("CUDA error in <what>: ..."). */
static inline zgpu_status zg_gpu_cuda(cudaError_t e, const char *what) {
    return e == cudaSuccess ? ZGPU_OK : zg_error(ZGPU_ERR_CUDA, "CUDA error in %s: %s", what, cudaGetErrorString(e));
}

/* The kinds of compressed stream a decoder takes (a stored format's, or blosc's inner compressor's). */
typedef enum zg_gpu_stream {
    ZG_GPU_STREAM_NONE = -1,
    ZG_GPU_STREAM_ZSTD = 0,
    ZG_GPU_STREAM_DEFLATE, /* raw DEFLATE: gzip's and zlib's payloads, blosc's zlib streams */
    ZG_GPU_STREAM_LZ4,     /* one LZ4 block: numcodecs' LZ4 payload, blosc's LZ4 streams */
    ZG_GPU_STREAM_SNAPPY,
    ZG_GPU_STREAM_LZW,      /* a TIFF tile or strip compressed with LZW */
    ZG_GPU_STREAM_PACKBITS, /* a TIFF tile or strip compressed with PackBits */
    ZG_GPU_STREAM_N
} zg_gpu_stream;

#define ZG_GPU_MAX_DECODERS 16
#define ZG_GPU_WAVE_STATE 512 /* bytes of per-wave state a decoder keeps (zg_gpu_wave.state) */
#define ZG_GPU_SAFE_BYTES 16  /* zeroed device bytes every wave has (zg_gpu_batch.safe) */

/* One wave as a decoder's per-wave members see it. The driver fills it at the start of the wave's layout; the
 * decoder keeps what it needs in `state` (zeroed then). */
typedef struct zg_gpu_wave {
    _Alignas(16) unsigned char state[ZG_GPU_WAVE_STATE];
    size_t n;          /* the decoder's streams in the wave */
    size_t base;       /* its first status slot */
    int container;     /* zg_gpu_format (codec/codec.h) of the stored chunks: ZG_GPU_FORMAT_BLOSC for inner streams */
    size_t n_tasks;    /* the wave's chunks */
    uint64_t room;     /* device bytes the wave leaves in its buffer set's share of the budget */
    const zgpu_tuning *tune;
    int trace;         /* tuning's trace: lines about the wave on stderr */
    struct zg_pool *pool; /* the context's host threads */
    /* the driver's view of the wave's chunks (i in [0, n_tasks)): the host plan the decoder's check made for
     * chunk i (NULL: none, or not a GPU chunk), and the offset of its stored bytes in the wave's buffers */
    const void *(*plan_of)(const void *ctx, size_t i);
    uint64_t (*staged_at)(const void *ctx, size_t i);
    /* the read's output rows as a decoder that places chunks in their rows takes them (zstd: zg_zd_rows of
     * zstd_gpu.h); 0: the read's rows cannot be mapped */
    int (*map_rows)(const void *ctx, void *rows);
    const void *ctx;
    uint8_t *H, *D;    /* the wave's pinned and device buffers (same offsets), set before emit */
    int rows_mappable; /* set by reserve_host: chunks may be placed in their output rows (zstd_mapped) */
} zg_gpu_wave;

/* A decoder's streams of one wave, as nvCOMP's batch API takes them: device arrays of n entries. */
typedef struct zg_gpu_batch {
    size_t n;
    const void **in;          /* device addresses of the streams (a precheck may swap invalid ones for `safe`) */
    size_t *in_bytes;
    const size_t *out_cap;    /* exact decoded size of each stream */
    void *const *out;
    size_t *actual;           /* bytes written, read back and compared with out_cap */
    int *status;              /* 0 or the decoder's code (error_text), read back */
    int *precheck;            /* 0 or a code of a validation pass before the decode (error_text, prechecked 1) */
    const uint64_t *h_out_cap; /* pinned host copy of out_cap */
    const void *safe;         /* ZG_GPU_SAFE_BYTES zeroed device bytes (a valid empty LZ4 block) */
    cudaStream_t stream;      /* the wave's stream: every launch goes here (or to aux, joined back) */
    cudaStream_t aux;         /* a second stream forked from and joined to `stream` by the two events */
    cudaEvent_t fork, join;
    /* device temp memory of at least `bytes`, kept with the buffer set (grown in stream order) */
    zgpu_status (*temp)(void *temp_ctx, size_t bytes, void **p);
    void *temp_ctx;
} zg_gpu_batch;

typedef struct zg_gpu_decoder zg_gpu_decoder;
struct zg_gpu_decoder {
    const char *name;     /* in messages: "GPU <name> decompression produced ..." */
    zg_gpu_stream stream; /* the kind of stream it decodes */
    zgpu_decoder_choice choice; /* the tuning value that selects it: ZGPU_DECODER_ZGPU (AUTO too) or _NVCOMP */
    unsigned containers;  /* bit 1u << zg_gpu_format per stored format whose streams it takes */
    int needs_nvcomp;     /* it runs only with nvCOMP loaded (else its chunks decode on the host) */
    int plans;            /* its check plans into the chunk's host plan (the device state's kept zg_zd_plan) */
    int waves;            /* wave count for reads of its stored format: 1 (fewest the budget allows: a chunk's
                           * time is one thread block's), 0 the driver's default, or n (see waves.c) */
    int one_wave_ratio;   /* reads compressing better than this many to one take one wave (0: 4; see waves.c) */
    unsigned min_wave_mib; /* a pipelined read's smallest wave, MiB (0: the driver's 128; see waves.c) */
    unsigned verifies;    /* bits 1u << ZG_CHECK_* (checksum_combine.h): checksums a stream carries that its launch
                           * verifies itself (zgpu's zstd: XXH64); the driver's check kernel verifies the others */
    /* Per read (may be NULL: 1 and 1): minimum alignments of its input and output; nonzero: unusable. */
    int (*alignments)(size_t *in, size_t *out);
    /* Per read (may be NULL: usable everywhere): 0 when the current device cannot run it (e.g. a block needs
     * more shared memory than the device has), with the reason in why; its streams then decode on the host. */
    int (*usable)(char *why, size_t n);
    /* Host, per stream (reading threads): 0 if the stream (p, n bytes, decoding to exactly out bytes; at its
     * offset in the stored chunk) may go to the GPU, else the chunk decodes on the host, whose codec names the
     * fault. plan: the chunk's host plan when `plans` (streams of a chunk are planned in order). NULL: 0. */
    int (*check)(void *plan, const uint8_t *p, size_t n, size_t out, size_t at);
    /* Per wave, on the launching thread, in this order; each may be NULL.
     * count: once per stream (stored and decoded bytes) before the layout.
     * reserve_host: its descriptors, in the part of the buffer copied to the device (zg_gpu_take on *pos).
     * reserve_device: its device-only scratch, after that part.
     * emit: write its descriptors (w->H) once the buffers exist; may allocate, which seal frees.
     * put: once per stream, in slot order within each chunk: the stream's slot (relative to base), its device
     *      destination and, if whole (the stream is the whole chunk), how the chunk is placed: mapped (its
     *      rows by the decoder, dst their base) or place (decoded to dst, then copied into rows at place).
     * seal: after every put (and on the way out of a failed wave layout): finish and free per-wave memory.
     * launch: queue the decode of the batch on b->stream. */
    void (*count)(zg_gpu_wave *w, uint64_t in_bytes, uint64_t out_bytes);
    void (*reserve_host)(zg_gpu_wave *w, uint64_t *pos);
    void (*reserve_device)(zg_gpu_wave *w, uint64_t *pos);
    zgpu_status (*emit)(zg_gpu_wave *w);
    void (*put)(zg_gpu_wave *w, size_t task, size_t slot, uint8_t *dst, int whole, int mapped, uint8_t *place);
    zgpu_status (*seal)(zg_gpu_wave *w);
    zgpu_status (*launch)(zg_gpu_wave *w, const zg_gpu_batch *b);
    /* After the wave: the message for a stream's nonzero status (prechecked: a precheck's code). */
    void (*error_text)(int status, int prechecked, char *buf, size_t n);
};

/* ---- registry_gpu.c ---- */
/** The decoders, in slot and launch order (zgpu's first, then nvCOMP's); *n their count. */
const zg_gpu_decoder *const *zg_gpu_decoders(size_t *n);
/** The decoder a read sends streams of `kind` in chunks of stored format `container` to, by the tuning's choice
 *  for that kind; NULL: host threads decode them. nvc_ok: nvCOMP is loaded (and gave its alignments). */
const zg_gpu_decoder *zg_gpu_pick(const zgpu_tuning *tune, int container, zg_gpu_stream kind, int nvc_ok);
/** The index of d in zg_gpu_decoders. */
size_t zg_gpu_decoder_index(const zg_gpu_decoder *d);
/** 1 if nvCOMP is loaded (loads it on the first call; thread-safe): its decoders can run. */
int zg_gpu_nvcomp_loaded(void);

/* Stored formats that wrap one stream (codec.h's zg_gpu_format other than NONE and BLOSC): the kind of stream
 * inside, and how to find it. */
typedef struct zg_gpu_container {
    int format;          /* zg_gpu_format */
    zg_gpu_stream stream;
    /* the payload of a stored chunk (p, n bytes, decoding to out): 0 and *off, *len, and the checksum the chunk
     * carries of its decoded payload, *check of kind *kind (ZG_CHECK_NONE, or check_kind: a zstd frame carries one
     * only with its flag), verified on the GPU; else nonzero: the chunk decodes on the host */
    int (*locate)(const uint8_t *p, size_t n, size_t out, size_t *off, size_t *len, uint32_t *check, int *kind);
    unsigned check_kind;  /* ZG_CHECK_*: the checksum the format carries (1 CRC32, 2 Adler-32, 3 XXH64) */
    const char *check_name; /* "CRC32", "Adler-32", "XXH64" */
} zg_gpu_container;
/** The container entry of a stored format, or NULL (none, or blosc: see blosc_gpu.h). */
const zg_gpu_container *zg_gpu_container_of(int format);
/** The name of a ZG_CHECK_* kind in messages ("Adler-32", ...). */
const char *zg_gpu_check_name(int kind);

#endif
