/* The GPU decoders (gpu_decoder.h), one line each, and the stored formats that wrap one stream. The order of
 * zg_gpu_decoders is the order of a wave's status slots and of its launches: zgpu's decoders first, then
 * nvCOMP's. Adding a decoder: its module, then one line here. */
#include "gpucodec/gpu_decoder.h"
#include "codec/codec.h"
#include "common/endian.h"
#include "gpucodec/nvcomp/nvcomp_lib.h"
#include "gpucodec/deflate/deflate_check.h"
#include "gpucodec/lz4/lz4_check.h"

extern const zg_gpu_decoder zg_gpu_zstd, zg_gpu_inflate, zg_gpu_lz4, zg_gpu_lzw, zg_gpu_packbits;
extern const zg_gpu_decoder zg_gpu_nvc_zstd, zg_gpu_nvc_deflate, zg_gpu_nvc_lz4, zg_gpu_nvc_snappy;

static const zg_gpu_decoder *const decoders[] = {
    &zg_gpu_zstd,        /* zstd/zstd_gpu.c: zgpu's zstd decoder */
    &zg_gpu_inflate,     /* deflate/deflate_gpu.c: zgpu's DEFLATE decoder */
    &zg_gpu_lz4,         /* lz4/lz4_gpu.c: zgpu's LZ4 decoder (blosc's streams) */
    &zg_gpu_lzw,         /* lzw/lzw_gpu.c: zgpu's TIFF LZW decoder */
    &zg_gpu_packbits,    /* packbits/packbits_gpu.c: zgpu's PackBits decoder */
    &zg_gpu_nvc_zstd,    /* nvcomp/nvcomp_gpu.c: nvCOMP's */
    &zg_gpu_nvc_deflate,
    &zg_gpu_nvc_lz4,
    &zg_gpu_nvc_snappy,
};
#define N_DECODERS (sizeof decoders / sizeof *decoders)
_Static_assert(N_DECODERS <= ZG_GPU_MAX_DECODERS, "raise ZG_GPU_MAX_DECODERS");

const zg_gpu_decoder *const *zg_gpu_decoders(size_t *n) {
    *n = N_DECODERS;
    return decoders;
}

size_t zg_gpu_decoder_index(const zg_gpu_decoder *d) {
    for (size_t i = 0; i < N_DECODERS; i++)
        if (decoders[i] == d) return i;
    return 0;
}

int zg_gpu_nvcomp_loaded(void) { return zg_nvc_available(NULL); }

/* How the tuning's choice for a kind of stream reads: its member (AUTO where there is none); whether `host` sends
 * streams of this kind to host threads (zstd: a zstd chunk goes to the host (device/read.c), blosc's zstd streams
 * stay on zgpu's decoder); whether `nvcomp` without nvCOMP loaded falls back to zgpu's decoder (DEFLATE: no, the
 * chunks decode on host threads). */
static zgpu_decoder_choice choice_of(const zgpu_tuning *t, zg_gpu_stream kind) {
    switch (kind) {
    case ZG_GPU_STREAM_ZSTD: return t->zstd_decoder;
    case ZG_GPU_STREAM_DEFLATE: return t->deflate_decoder;
    case ZG_GPU_STREAM_LZ4: return t->lz4_decoder;
    default: return ZGPU_DECODER_AUTO;
    }
}
static const struct {
    int host_honoured, nvcomp_falls_back;
} kind_rules[ZG_GPU_STREAM_N] = {
    [ZG_GPU_STREAM_ZSTD] = {0, 1},
    [ZG_GPU_STREAM_DEFLATE] = {1, 0},
    [ZG_GPU_STREAM_LZ4] = {0, 1},
    [ZG_GPU_STREAM_SNAPPY] = {0, 1},
    [ZG_GPU_STREAM_LZW] = {0, 1},
    [ZG_GPU_STREAM_PACKBITS] = {0, 1},
};

const zg_gpu_decoder *zg_gpu_pick(const zgpu_tuning *tune, int container, zg_gpu_stream kind, int nvc_ok) {
    if (kind < 0 || kind >= ZG_GPU_STREAM_N) return NULL;
    zgpu_decoder_choice c = choice_of(tune, kind);
    if (c == ZGPU_DECODER_HOST && kind_rules[kind].host_honoured) return NULL;
    zgpu_decoder_choice want = c == ZGPU_DECODER_NVCOMP ? ZGPU_DECODER_NVCOMP : ZGPU_DECODER_ZGPU;
    if (want == ZGPU_DECODER_NVCOMP && !nvc_ok && kind_rules[kind].nvcomp_falls_back) want = ZGPU_DECODER_ZGPU;
    const zg_gpu_decoder *any = NULL;
    for (size_t i = 0; i < N_DECODERS; i++) {
        const zg_gpu_decoder *d = decoders[i];
        if (d->stream != kind || !(d->containers & 1u << container)) continue;
        if (d->choice == want) return d;
        if (!any) any = d; /* the only decoder of this kind for this container (numcodecs' LZ4, Snappy) */
    }
    return any;
}

/* ---- stored formats wrapping one stream ---- */
static int zstd_whole(const uint8_t *p, size_t n, size_t out, size_t *off, size_t *len, uint32_t *check, int *kind) {
    (void)out;
    *off = 0;
    *len = n;
    /* a frame with the content checksum flag ends in its XXH64's low 32 bits (the zstd decoders' checks take
     * only one frame filling the chunk; anything else decodes on the host) */
    if (n >= 9 && zg_le32(p) == 0xfd2fb528u && (p[4] & 0x04)) {
        *check = zg_le32(p + n - 4);
        *kind = ZG_CHECK_XXH64;
    }
    return 0;
}
static int gzip_payload(const uint8_t *p, size_t n, size_t out, size_t *off, size_t *len, uint32_t *check, int *kind) {
    if (zg_gzip_locate(p, n, out, off, len) != ZGPU_OK) return 1;
    *check = zg_le32(p + n - 8); /* CRC32 of the decoded payload (ISIZE: checked by zg_gzip_locate) */
    *kind = ZG_CHECK_CRC32;
    return 0;
}
static int zlib_payload(const uint8_t *p, size_t n, size_t out, size_t *off, size_t *len, uint32_t *check, int *kind) {
    if (zg_zlib_locate(p, n, out, off, len) != ZGPU_OK) return 1;
    *check = zg_be32(p + n - 4);
    *kind = ZG_CHECK_ADLER32;
    return 0;
}
static int lz4nc_payload(const uint8_t *p, size_t n, size_t out, size_t *off, size_t *len, uint32_t *check, int *kind) {
    (void)check, (void)kind;
    return zg_lz4nc_locate(p, n, out, off, len) != ZGPU_OK;
}

/* a TIFF tile or strip is the stream itself, without a checksum (whether the GPU takes it: its decoder's check) */
static int whole_stream(const uint8_t *p, size_t n, size_t out, size_t *off, size_t *len, uint32_t *check, int *kind) {
    (void)p, (void)out, (void)check, (void)kind;
    *off = 0;
    *len = n;
    return 0;
}

static const zg_gpu_container containers[] = {
    {ZG_GPU_FORMAT_ZSTD, ZG_GPU_STREAM_ZSTD, zstd_whole, ZG_CHECK_XXH64, "XXH64"},
    {ZG_GPU_FORMAT_GZIP, ZG_GPU_STREAM_DEFLATE, gzip_payload, ZG_CHECK_CRC32, "CRC32"},
    {ZG_GPU_FORMAT_ZLIB, ZG_GPU_STREAM_DEFLATE, zlib_payload, ZG_CHECK_ADLER32, "Adler-32"},
    {ZG_GPU_FORMAT_LZ4_NUMCODECS, ZG_GPU_STREAM_LZ4, lz4nc_payload, ZG_CHECK_NONE, NULL},
    {ZG_GPU_FORMAT_TIFF_LZW, ZG_GPU_STREAM_LZW, whole_stream, ZG_CHECK_NONE, NULL},
    {ZG_GPU_FORMAT_PACKBITS, ZG_GPU_STREAM_PACKBITS, whole_stream, ZG_CHECK_NONE, NULL},
};

const zg_gpu_container *zg_gpu_container_of(int format) {
    for (size_t i = 0; i < sizeof containers / sizeof *containers; i++)
        if (containers[i].format == format) return &containers[i];
    return NULL;
}

const char *zg_gpu_check_name(int kind) {
    switch (kind) {
    case ZG_CHECK_CRC32: return "CRC32";
    case ZG_CHECK_ADLER32: return "Adler-32";
    case ZG_CHECK_XXH64: return "XXH64";
    default: return "unknown";
    }
}
