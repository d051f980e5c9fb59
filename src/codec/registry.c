/* The codec registry: Zarr v3 names (and the aliases zarr-python writes) -> implementations. */
#include <string.h>

#include "codec/codec.h"

extern const zg_codec_vtable zg_codec_bytes, zg_codec_transpose, zg_codec_crc32c, zg_codec_sharding,
    zg_codec_blosc, zg_codec_numcodecs_blosc, zg_codec_gzip, zg_codec_zstd, zg_codec_zlib, zg_codec_bz2,
    zg_codec_lz4, zg_codec_delta, zg_codec_shuffle, zg_codec_fixedscaleoffset, zg_codec_vlen_utf8,
    zg_codec_vlen_bytes, zg_codec_tiff_lzw, zg_codec_packbits, zg_codec_tiff_predictor, zg_codec_tiff_lzma,
    zg_codec_tiff_jpeg, zg_codec_tiff_short_strip;

typedef struct {
    const char *name;
    const zg_codec_vtable *vt;
} zg_codec_entry;

static const zg_codec_entry registry[] = {
    {"bytes", &zg_codec_bytes},
    {"endian", &zg_codec_bytes}, /* the name used by early v3 drafts */
    {"transpose", &zg_codec_transpose},
    {"sharding_indexed", &zg_codec_sharding},
    {"crc32c", &zg_codec_crc32c},
    {"blosc", &zg_codec_blosc},
    {"gzip", &zg_codec_gzip},
    {"zstd", &zg_codec_zstd},
    {"numcodecs.blosc", &zg_codec_numcodecs_blosc},
    {"numcodecs.gzip", &zg_codec_gzip},
    {"numcodecs.zstd", &zg_codec_zstd},
    {"numcodecs.zlib", &zg_codec_zlib},
    {"numcodecs.bz2", &zg_codec_bz2},
    {"numcodecs.lz4", &zg_codec_lz4},
    {"numcodecs.delta", &zg_codec_delta},
    {"numcodecs.shuffle", &zg_codec_shuffle},
    {"numcodecs.fixedscaleoffset", &zg_codec_fixedscaleoffset},
    {"vlen-utf8", &zg_codec_vlen_utf8},
    {"vlen-bytes", &zg_codec_vlen_bytes},
    /* TIFF's codecs (src/format/tiff/ builds chains of them from a page's tags) */
    {"tiff_lzw", &zg_codec_tiff_lzw},
    {"packbits", &zg_codec_packbits},
    {"tiff_predictor", &zg_codec_tiff_predictor},
    {"tiff_lzma", &zg_codec_tiff_lzma},
    {"tiff_jpeg", &zg_codec_tiff_jpeg},
    {"tiff_short_strip", &zg_codec_tiff_short_strip},
};
#define N_REGISTRY (sizeof registry / sizeof registry[0])

const zg_codec_vtable *zg_codec_find(const char *name) {
    for (size_t i = 0; i < N_REGISTRY; i++)
        if (strcmp(registry[i].name, name) == 0) return registry[i].vt;
    return NULL;
}

