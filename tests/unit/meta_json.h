/* Zarr v3 metadata documents the array tests build (test_read_regions.c, test_read_progress.c): a uint16 array of
 * `shape` (a JSON list) with fill value 7 and "/" keys, its chunk shape left as %s for snprintf; and the codecs they
 * put in it. */
#ifndef ZG_TEST_META_JSON_H
#define ZG_TEST_META_JSON_H

#define ZT_META3_U16(shape, codecs)                                                                             \
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": " shape ", \"data_type\": \"uint16\", "         \
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": %s}}, "                       \
    "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, "              \
    "\"fill_value\": 7, \"codecs\": " codecs "}"
#define ZT_BYTES "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"
#define ZT_ZSTD "{\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": false}}"

#endif
