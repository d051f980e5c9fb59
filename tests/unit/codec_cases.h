/* The codec chains the GPU tests run over (test_gpu_read: device reads; test_gpu_write: device writes): 3-D arrays
 * 40 x 50 x 60 with chunks 16 x 20 x 24 (edge chunks partial), one case a chain. */
#ifndef ZGPU_TEST_CODEC_CASES_H
#define ZGPU_TEST_CODEC_CASES_H
#include "zgpu.h"
#include "zgpu_experimental.h"

typedef struct tcase {
    const char *name;
    const char *meta; /* printf format with %s = dtype-specific parts filled below */
    int gpu_expected; /* 1: the GPU path must decode (when nvCOMP is loaded, or the chain needs no nvCOMP);
                       * 0: the CPU fallback must */
    int needs_nvcomp;
} tcase;

/* 3-D arrays 40 x 50 x 60 with chunks 16 x 20 x 24 (edge chunks partial). */
#define SHAPE "[40, 50, 60]"
#define CHUNKS "[16, 20, 24]"
#define V3(dtype, fill, codecs)                                                                                 \
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": " SHAPE ", \"data_type\": \"" dtype "\", "      \
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": " CHUNKS "}}, "               \
    "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, "              \
    "\"fill_value\": " fill ", \"codecs\": " codecs "}"
#define V2(dtype, fill, filters, compressor, order)                                                             \
    "{\"zarr_format\": 2, \"shape\": " SHAPE ", \"chunks\": " CHUNKS ", \"dtype\": \"" dtype "\", "            \
    "\"fill_value\": " fill ", \"order\": \"" order "\", \"filters\": " filters ", \"compressor\": " compressor "}"

static const tcase cases[] = {
    {"v3_zstd_u16", V3("uint16", "7", "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}]"), 1, 1},
    {"v3_zstd_crc32c_u16", V3("uint16", "7", "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}, {\"name\": \"crc32c\"}]"), 1, 1},
    {"v3_zstd_checksum_f32", V3("float32", "1.5", "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": true}}]"), 1, 1},
    {"v3_blosc_lz4_shuffle_u16", V3("uint16", "0", "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": \"shuffle\", \"typesize\": 2, \"blocksize\": 0}}]"), 1, 1},
    {"v3_blosc_lz4_shuffle_f32", V3("float32", "0.5", "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": \"shuffle\", \"typesize\": 4, \"blocksize\": 0}}]"), 1, 1},
    {"v3_blosc_zstd_bitshuffle_u32", V3("uint32", "3", "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"blosc\", \"configuration\": {\"cname\": \"zstd\", \"clevel\": 3, \"shuffle\": \"bitshuffle\", \"typesize\": 4, \"blocksize\": 0}}]"), 1, 1},
    {"v3_blosc_zlib_noshuffle_i64", V3("int64", "-1", "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"blosc\", \"configuration\": {\"cname\": \"zlib\", \"clevel\": 5, \"shuffle\": \"noshuffle\", \"typesize\": 8, \"blocksize\": 0}}]"), 1, 0},
    {"v3_blosc_blosclz_u16_cpu", V3("uint16", "0", "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"blosc\", \"configuration\": {\"cname\": \"blosclz\", \"clevel\": 5, \"shuffle\": \"shuffle\", \"typesize\": 2, \"blocksize\": 0}}]"), 0, 0},
    {"v3_gzip_f64", V3("float64", "0", "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"gzip\", \"configuration\": {\"level\": 5}}]"), 1, 0},
    {"v3_bigendian_crc32c_i32", V3("int32", "0", "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}, {\"name\": \"crc32c\"}]"), 1, 0},
    {"v3_transpose_zstd_u8", V3("uint8", "9", "[{\"name\": \"transpose\", \"configuration\": {\"order\": [2, 0, 1]}}, {\"name\": \"bytes\"}, {\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}]"), 1, 1},
    {"v3_sharded_zstd_u16", V3("uint16", "5", "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [8, 10, 12], \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}], \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], \"index_location\": \"end\"}}]"), 1, 1},
    {"v2_zlib_i16", V2("<i2", "0", "null", "{\"id\": \"zlib\", \"level\": 4}", "C"), 1, 0},
    {"v2_lz4_u32", V2("<u4", "0", "null", "{\"id\": \"lz4\", \"acceleration\": 1}", "C"), 1, 1},
    {"v2_delta_zstd_i32", V2("<i4", "0", "[{\"id\": \"delta\", \"dtype\": \"<i4\"}]", "{\"id\": \"zstd\", \"level\": 3}", "C"), 1, 1},
    {"v2_shuffle_gzip_F_u16", V2("<u2", "0", "[{\"id\": \"shuffle\", \"elementsize\": 2}]", "{\"id\": \"gzip\", \"level\": 3}", "F"), 1, 0},
    {"v2_blosc_lz4_bigendian_u16", V2(">u2", "0", "null", "{\"id\": \"blosc\", \"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": 1, \"blocksize\": 0}", "C"), 1, 1},
    {"v2_bz2_u16_cpu", V2("<u2", "0", "null", "{\"id\": \"bz2\", \"level\": 5}", "C"), 0, 0},
    {"v2_raw_f32", V2("<f4", "0", "null", "null", "C"), 1, 0},
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* The device-write tests' second pass: a context whose writes go in waves of one object each (tuning write_wave_bytes
 * 1) on 8 threads, so a write takes the four buffer sets in turn with several waves' file writes in flight. NULL
 * when it cannot be made (its status is the test's failure). */
static inline zgpu_context *zt_context_waves_of_one(zgpu_status *status) {
    zgpu_tuning t;
    zgpu_tuning_init(&t);
    t.write_wave_bytes = 1;
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.num_threads = 8;
    o.tuning = &t;
    zgpu_context *ctx = NULL;
    *status = zgpu_context_create(&o, &ctx);
    return ctx;
}

#endif
