/* Tests of src/meta: v2/v3 array and group metadata documents (data types, half floats, fill values and bad
 * documents: test_meta_types.c; the exported builders: test_meta_build.c).
 * The documents below are exactly what zarr-python 3.1 writes (zarr 3.1.6, numcodecs 0.16). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meta/dtype.h"
#include "meta/metadata.h"
#include "test.h"
#include "meta_helpers.h"
#include "common/json.h"
#include "common/status.h"

/* ---- zarr-python 3.1 documents ---- */
static const char k_v3_sharded[] =
    "{\n"
    "  \"shape\": [\n"
    "    100,\n"
    "    200\n"
    "  ],\n"
    "  \"data_type\": \"uint16\",\n"
    "  \"chunk_grid\": {\n"
    "    \"name\": \"regular\",\n"
    "    \"configuration\": {\n"
    "      \"chunk_shape\": [\n"
    "        50,\n"
    "        100\n"
    "      ]\n"
    "    }\n"
    "  },\n"
    "  \"chunk_key_encoding\": {\n"
    "    \"name\": \"default\",\n"
    "    \"configuration\": {\n"
    "      \"separator\": \"/\"\n"
    "    }\n"
    "  },\n"
    "  \"fill_value\": 7,\n"
    "  \"codecs\": [\n"
    "    {\n"
    "      \"name\": \"sharding_indexed\",\n"
    "      \"configuration\": {\n"
    "        \"chunk_shape\": [\n"
    "          10,\n"
    "          20\n"
    "        ],\n"
    "        \"codecs\": [\n"
    "          {\n"
    "            \"name\": \"bytes\",\n"
    "            \"configuration\": {\n"
    "              \"endian\": \"little\"\n"
    "            }\n"
    "          },\n"
    "          {\n"
    "            \"name\": \"zstd\",\n"
    "            \"configuration\": {\n"
    "              \"level\": 3,\n"
    "              \"checksum\": false\n"
    "            }\n"
    "          }\n"
    "        ],\n"
    "        \"index_codecs\": [\n"
    "          {\n"
    "            \"name\": \"bytes\",\n"
    "            \"configuration\": {\n"
    "              \"endian\": \"little\"\n"
    "            }\n"
    "          },\n"
    "          {\n"
    "            \"name\": \"crc32c\"\n"
    "          }\n"
    "        ],\n"
    "        \"index_location\": \"end\"\n"
    "      }\n"
    "    }\n"
    "  ],\n"
    "  \"attributes\": {\n"
    "    \"a\": 1\n"
    "  },\n"
    "  \"dimension_names\": [\n"
    "    \"y\",\n"
    "    \"x\"\n"
    "  ],\n"
    "  \"zarr_format\": 3,\n"
    "  \"node_type\": \"array\",\n"
    "  \"storage_transformers\": []\n"
    "}"
    ;
static const char k_v2_blosc_f[] =
    "{\n"
    "  \"shape\": [\n"
    "    30,\n"
    "    40\n"
    "  ],\n"
    "  \"chunks\": [\n"
    "    10,\n"
    "    10\n"
    "  ],\n"
    "  \"dtype\": \">f8\",\n"
    "  \"fill_value\": \"NaN\",\n"
    "  \"order\": \"F\",\n"
    "  \"filters\": [\n"
    "    {\n"
    "      \"id\": \"delta\",\n"
    "      \"dtype\": \">f8\",\n"
    "      \"astype\": \">f8\"\n"
    "    }\n"
    "  ],\n"
    "  \"dimension_separator\": \".\",\n"
    "  \"compressor\": {\n"
    "    \"id\": \"blosc\",\n"
    "    \"cname\": \"lz4\",\n"
    "    \"clevel\": 5,\n"
    "    \"shuffle\": 1,\n"
    "    \"blocksize\": 0\n"
    "  },\n"
    "  \"zarr_format\": 2\n"
    "}"
    ;
static const char k_v2_shuffle[] =
    "{\n"
    "  \"shape\": [\n"
    "    3,\n"
    "    4\n"
    "  ],\n"
    "  \"chunks\": [\n"
    "    3,\n"
    "    2\n"
    "  ],\n"
    "  \"dtype\": \"<i4\",\n"
    "  \"fill_value\": 0,\n"
    "  \"order\": \"C\",\n"
    "  \"filters\": [\n"
    "    {\n"
    "      \"id\": \"shuffle\",\n"
    "      \"elementsize\": 4\n"
    "    }\n"
    "  ],\n"
    "  \"dimension_separator\": \"/\",\n"
    "  \"compressor\": null,\n"
    "  \"zarr_format\": 2\n"
    "}"
    ;
static const char k_v2_shuffle_attrs[] =
    "{\n"
    "  \"units\": \"m\"\n"
    "}"
    ;
static const char k_v3_bool0d[] =
    "{\n"
    "  \"shape\": [],\n"
    "  \"data_type\": \"bool\",\n"
    "  \"chunk_grid\": {\n"
    "    \"name\": \"regular\",\n"
    "    \"configuration\": {\n"
    "      \"chunk_shape\": []\n"
    "    }\n"
    "  },\n"
    "  \"chunk_key_encoding\": {\n"
    "    \"name\": \"default\",\n"
    "    \"configuration\": {\n"
    "      \"separator\": \"/\"\n"
    "    }\n"
    "  },\n"
    "  \"fill_value\": true,\n"
    "  \"codecs\": [\n"
    "    {\n"
    "      \"name\": \"bytes\"\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"zstd\",\n"
    "      \"configuration\": {\n"
    "        \"level\": 0,\n"
    "        \"checksum\": false\n"
    "      }\n"
    "    }\n"
    "  ],\n"
    "  \"attributes\": {},\n"
    "  \"zarr_format\": 3,\n"
    "  \"node_type\": \"array\",\n"
    "  \"storage_transformers\": []\n"
    "}"
    ;
static const char k_v3_complex[] =
    "{\n"
    "  \"shape\": [\n"
    "    3,\n"
    "    4\n"
    "  ],\n"
    "  \"data_type\": \"complex64\",\n"
    "  \"chunk_grid\": {\n"
    "    \"name\": \"regular\",\n"
    "    \"configuration\": {\n"
    "      \"chunk_shape\": [\n"
    "        3,\n"
    "        2\n"
    "      ]\n"
    "    }\n"
    "  },\n"
    "  \"chunk_key_encoding\": {\n"
    "    \"name\": \"default\",\n"
    "    \"configuration\": {\n"
    "      \"separator\": \"/\"\n"
    "    }\n"
    "  },\n"
    "  \"fill_value\": [\n"
    "    \"NaN\",\n"
    "    \"Infinity\"\n"
    "  ],\n"
    "  \"codecs\": [\n"
    "    {\n"
    "      \"name\": \"bytes\",\n"
    "      \"configuration\": {\n"
    "        \"endian\": \"little\"\n"
    "      }\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"zstd\",\n"
    "      \"configuration\": {\n"
    "        \"level\": 0,\n"
    "        \"checksum\": false\n"
    "      }\n"
    "    }\n"
    "  ],\n"
    "  \"attributes\": {},\n"
    "  \"zarr_format\": 3,\n"
    "  \"node_type\": \"array\",\n"
    "  \"storage_transformers\": []\n"
    "}"
    ;
static const char k_v2_complex[] =
    "{\n"
    "  \"shape\": [\n"
    "    3,\n"
    "    4\n"
    "  ],\n"
    "  \"chunks\": [\n"
    "    3,\n"
    "    2\n"
    "  ],\n"
    "  \"dtype\": \"<c8\",\n"
    "  \"fill_value\": [\n"
    "    \"NaN\",\n"
    "    \"Infinity\"\n"
    "  ],\n"
    "  \"order\": \"C\",\n"
    "  \"filters\": null,\n"
    "  \"dimension_separator\": \".\",\n"
    "  \"compressor\": {\n"
    "    \"id\": \"zstd\",\n"
    "    \"level\": 0\n"
    "  },\n"
    "  \"zarr_format\": 2\n"
    "}"
    ;
static const char k_v3_raw_bytes[] =
    "{\n"
    "  \"shape\": [\n"
    "    3\n"
    "  ],\n"
    "  \"data_type\": {\n"
    "    \"name\": \"raw_bytes\",\n"
    "    \"configuration\": {\n"
    "      \"length_bytes\": 3\n"
    "    }\n"
    "  },\n"
    "  \"chunk_grid\": {\n"
    "    \"name\": \"regular\",\n"
    "    \"configuration\": {\n"
    "      \"chunk_shape\": [\n"
    "        3\n"
    "      ]\n"
    "    }\n"
    "  },\n"
    "  \"chunk_key_encoding\": {\n"
    "    \"name\": \"default\",\n"
    "    \"configuration\": {\n"
    "      \"separator\": \"/\"\n"
    "    }\n"
    "  },\n"
    "  \"fill_value\": \"AQID\",\n"
    "  \"codecs\": [\n"
    "    {\n"
    "      \"name\": \"bytes\"\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"zstd\",\n"
    "      \"configuration\": {\n"
    "        \"level\": 0,\n"
    "        \"checksum\": false\n"
    "      }\n"
    "    }\n"
    "  ],\n"
    "  \"attributes\": {},\n"
    "  \"zarr_format\": 3,\n"
    "  \"node_type\": \"array\",\n"
    "  \"storage_transformers\": []\n"
    "}"
    ;
static const char k_v2_raw[] =
    "{\n"
    "  \"shape\": [\n"
    "    3\n"
    "  ],\n"
    "  \"chunks\": [\n"
    "    3\n"
    "  ],\n"
    "  \"dtype\": \"|V3\",\n"
    "  \"fill_value\": \"AQID\",\n"
    "  \"order\": \"C\",\n"
    "  \"filters\": null,\n"
    "  \"dimension_separator\": \".\",\n"
    "  \"compressor\": {\n"
    "    \"id\": \"zstd\",\n"
    "    \"level\": 0\n"
    "  },\n"
    "  \"zarr_format\": 2\n"
    "}"
    ;
static const char k_v3_v2keys[] =
    "{\n"
    "  \"shape\": [\n"
    "    3,\n"
    "    4\n"
    "  ],\n"
    "  \"data_type\": \"int64\",\n"
    "  \"chunk_grid\": {\n"
    "    \"name\": \"regular\",\n"
    "    \"configuration\": {\n"
    "      \"chunk_shape\": [\n"
    "        3,\n"
    "        2\n"
    "      ]\n"
    "    }\n"
    "  },\n"
    "  \"chunk_key_encoding\": {\n"
    "    \"name\": \"v2\",\n"
    "    \"configuration\": {\n"
    "      \"separator\": \".\"\n"
    "    }\n"
    "  },\n"
    "  \"fill_value\": -5,\n"
    "  \"codecs\": [\n"
    "    {\n"
    "      \"name\": \"bytes\",\n"
    "      \"configuration\": {\n"
    "        \"endian\": \"little\"\n"
    "      }\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"zstd\",\n"
    "      \"configuration\": {\n"
    "        \"level\": 0,\n"
    "        \"checksum\": false\n"
    "      }\n"
    "    }\n"
    "  ],\n"
    "  \"attributes\": {},\n"
    "  \"zarr_format\": 3,\n"
    "  \"node_type\": \"array\",\n"
    "  \"storage_transformers\": []\n"
    "}"
    ;
static const char k_v3_f16[] =
    "{\n"
    "  \"shape\": [\n"
    "    7\n"
    "  ],\n"
    "  \"data_type\": \"float16\",\n"
    "  \"chunk_grid\": {\n"
    "    \"name\": \"regular\",\n"
    "    \"configuration\": {\n"
    "      \"chunk_shape\": [\n"
    "        3\n"
    "      ]\n"
    "    }\n"
    "  },\n"
    "  \"chunk_key_encoding\": {\n"
    "    \"name\": \"default\",\n"
    "    \"configuration\": {\n"
    "      \"separator\": \"/\"\n"
    "    }\n"
    "  },\n"
    "  \"fill_value\": \"-Infinity\",\n"
    "  \"codecs\": [\n"
    "    {\n"
    "      \"name\": \"bytes\",\n"
    "      \"configuration\": {\n"
    "        \"endian\": \"little\"\n"
    "      }\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"zstd\",\n"
    "      \"configuration\": {\n"
    "        \"level\": 0,\n"
    "        \"checksum\": false\n"
    "      }\n"
    "    }\n"
    "  ],\n"
    "  \"attributes\": {},\n"
    "  \"zarr_format\": 3,\n"
    "  \"node_type\": \"array\",\n"
    "  \"storage_transformers\": []\n"
    "}"
    ;
static const char k_v2_nullfill[] =
    "{\n"
    "  \"shape\": [\n"
    "    3\n"
    "  ],\n"
    "  \"chunks\": [\n"
    "    3\n"
    "  ],\n"
    "  \"dtype\": \"<i2\",\n"
    "  \"fill_value\": null,\n"
    "  \"order\": \"C\",\n"
    "  \"filters\": null,\n"
    "  \"dimension_separator\": \".\",\n"
    "  \"compressor\": {\n"
    "    \"id\": \"zstd\",\n"
    "    \"level\": 0\n"
    "  },\n"
    "  \"zarr_format\": 2\n"
    "}"
    ;
static const char k_group_v3[] =
    "{\n"
    "  \"attributes\": {\n"
    "    \"x\": 1\n"
    "  },\n"
    "  \"zarr_format\": 3,\n"
    "  \"node_type\": \"group\"\n"
    "}"
    ;

/* ---- helpers (and meta_helpers.h) ---- */

/* Compact form of a JSON text (so expected documents can be written on one line). */
static char *compact_text(const char *text) {
    zj_value *v = NULL;
    if (!text || zj_parse(text, strlen(text), "test", &v) != ZGPU_OK) return NULL;
    char *s = zj_write(v, 0);
    zj_free(v);
    return s;
}


/* Every field of two parsed metadata structs agrees. */
static int meta_equal(const zg_array_meta *a, const zg_array_meta *b) {
    if (a->zarr_format != b->zarr_format || a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i] || a->chunk_shape[i] != b->chunk_shape[i]) return 0;
    if (a->dtype.id != b->dtype.id || a->dtype.size != b->dtype.size || strcmp(a->dtype.name, b->dtype.name)) return 0;
    if (memcmp(a->fill_value, b->fill_value, a->dtype.size) || a->fill_is_null != b->fill_is_null) return 0;
    if (a->key_v2 != b->key_v2 || a->separator != b->separator) return 0;
    if (!zj_equal(a->codecs, b->codecs) || !zj_equal(a->attributes, b->attributes)) return 0;
    for (int i = 0; i < a->ndim; i++) {
        const char *x = a->dimension_names[i], *y = b->dimension_names[i];
        if ((x == NULL) != (y == NULL) || (x && strcmp(x, y))) return 0;
    }
    return 1;
}

/* to_json reproduces the document zarr-python wrote, byte for byte, and parses back to the same struct. */
static void check_v3_exact_roundtrip(const char *doc) {
    zg_array_meta m, m2;
    CHECK_OK(zg_meta_parse_v3(doc, strlen(doc), "array 'rt'", &m));
    if (!m.doc) return;
    char *out = zg_meta_to_json(&m);
    CHECK_STR(out, doc);
    CHECK_OK(zg_meta_parse_v3(out, out ? strlen(out) : 0, "array 'rt'", &m2));
    CHECK(meta_equal(&m, &m2));
    free(out);
    zg_meta_free(&m);
    zg_meta_free(&m2);
}

static void check_v2_exact_roundtrip(const char *doc, const char *attrs) {
    zg_array_meta m, m2;
    CHECK_OK(zg_meta_parse_v2(doc, strlen(doc), attrs, attrs ? strlen(attrs) : 0, "array 'rt'", &m));
    if (!m.doc) return;
    char *out = zg_meta_to_json(&m), *aout = zg_meta_attrs_json(&m);
    CHECK_STR(out, doc);
    if (attrs) CHECK_STR(aout, attrs);
    CHECK_OK(zg_meta_parse_v2(out, out ? strlen(out) : 0, aout, aout ? strlen(aout) : 0, "array 'rt'", &m2));
    CHECK(meta_equal(&m, &m2));
    free(out);
    free(aout);
    zg_meta_free(&m);
    zg_meta_free(&m2);
}

/* ---- zarr-python documents ---- */

static void test_v3_sharded(void) {
    zg_array_meta m;
    CHECK_OK(zg_meta_parse_v3(k_v3_sharded, strlen(k_v3_sharded), "array 'data/s.zarr'", &m));
    CHECK_EQ_U64(m.zarr_format, 3);
    CHECK_EQ_U64(m.ndim, 2);
    CHECK_EQ_U64(m.shape[0], 100);
    CHECK_EQ_U64(m.shape[1], 200);
    CHECK_EQ_U64(m.chunk_shape[0], 50);
    CHECK_EQ_U64(m.chunk_shape[1], 100);
    CHECK(m.dtype.id == ZGPU_UINT16 && m.dtype.size == 2);
    CHECK_STR(m.dtype.name, "uint16");
    CHECK(m.fill_value && bytes_equal_hex(m.fill_value, 2, "0700"));
    CHECK_EQ_U64(m.fill_is_null, 0);
    CHECK_EQ_U64(m.key_v2, 0);
    CHECK(m.separator == '/');
    CHECK_JSON(m.codecs,
               "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [10, 20], \"codecs\": "
               "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"zstd\", "
               "\"configuration\": {\"level\": 3, \"checksum\": false}}], \"index_codecs\": [{\"name\": \"bytes\", "
               "\"configuration\": {\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], \"index_location\": \"end\"}}]");
    CHECK_JSON(m.attributes, "{\"a\": 1}");
    CHECK_STR(m.dimension_names[0], "y");
    CHECK_STR(m.dimension_names[1], "x");
    CHECK(m.dimension_names[2] == NULL);
    uint64_t c[2] = {1, 0};
    char key[64];
    zg_meta_chunk_key(&m, c, key, sizeof key);
    CHECK_STR(key, "c/1/0");

    /* resize and attribute updates show in the written document */
    m.shape[0] = 1000;
    zj_set(m.attributes, "b", zj_new_string("new"));
    char *out = zg_meta_to_json(&m);
    zg_array_meta m2;
    CHECK_OK(zg_meta_parse_v3(out, out ? strlen(out) : 0, "array 'resized'", &m2));
    CHECK_EQ_U64(m2.shape[0], 1000);
    CHECK_EQ_U64(m2.shape[1], 200);
    CHECK_JSON(m2.attributes, "{\"a\": 1, \"b\": \"new\"}");
    CHECK(meta_equal(&m, &m2));
    free(out);
    zg_meta_free(&m2);
    zg_meta_free(&m);
    CHECK(m.doc == NULL && m.fill_value == NULL); /* free resets */
    zg_meta_free(&m);                             /* and is safe twice */
}

static void test_v2_blosc_f_delta(void) {
    zg_array_meta m;
    CHECK_OK(zg_meta_parse_v2(k_v2_blosc_f, strlen(k_v2_blosc_f), "{}", 2, "array 'v2.zarr'", &m));
    CHECK_EQ_U64(m.zarr_format, 2);
    CHECK_EQ_U64(m.ndim, 2);
    CHECK_EQ_U64(m.shape[0], 30);
    CHECK_EQ_U64(m.shape[1], 40);
    CHECK_EQ_U64(m.chunk_shape[0], 10);
    CHECK_EQ_U64(m.chunk_shape[1], 10);
    CHECK(m.dtype.id == ZGPU_FLOAT64);
    CHECK_STR(m.dtype.name, "float64");
    CHECK(m.fill_value && bytes_equal_hex(m.fill_value, 8, "000000000000f87f")); /* canonical NaN */
    CHECK_EQ_U64(m.fill_is_null, 0);
    CHECK_EQ_U64(m.key_v2, 1);
    CHECK(m.separator == '.');
    CHECK_JSON(m.codecs,
               "[{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}, "
               "{\"name\": \"numcodecs.delta\", \"configuration\": {\"dtype\": \">f8\", \"astype\": \">f8\"}}, "
               "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}, "
               "{\"name\": \"numcodecs.blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": 5, "
               "\"shuffle\": 1, \"blocksize\": 0}}]");
    CHECK_JSON(m.attributes, "{}");
    CHECK(m.dimension_names[0] == NULL && m.dimension_names[1] == NULL);
    uint64_t c[2] = {2, 3};
    char key[64];
    zg_meta_chunk_key(&m, c, key, sizeof key);
    CHECK_STR(key, "2.3");
    zg_meta_free(&m);
}

static void test_v2_shuffle_slash(void) {
    zg_array_meta m;
    CHECK_OK(zg_meta_parse_v2(k_v2_shuffle, strlen(k_v2_shuffle), k_v2_shuffle_attrs, strlen(k_v2_shuffle_attrs),
                              "array 'h'", &m));
    CHECK(m.dtype.id == ZGPU_INT32);
    CHECK(m.fill_value && bytes_equal_hex(m.fill_value, 4, "00000000"));
    CHECK(m.separator == '/' && m.key_v2 == 1);
    CHECK_JSON(m.codecs, "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
                         "{\"name\": \"numcodecs.shuffle\", \"configuration\": {\"elementsize\": 4}}]");
    CHECK_JSON(m.attributes, "{\"units\": \"m\"}");
    uint64_t c[2] = {1, 0};
    char key[64];
    zg_meta_chunk_key(&m, c, key, sizeof key);
    CHECK_STR(key, "1/0");
    zg_meta_free(&m);
}

static void test_more_documents(void) {
    zg_array_meta m;
    /* 0-d bool */
    CHECK_OK(zg_meta_parse_v3(k_v3_bool0d, strlen(k_v3_bool0d), "array 'b'", &m));
    CHECK_EQ_U64(m.ndim, 0);
    CHECK(m.dtype.id == ZGPU_BOOL && m.fill_value && m.fill_value[0] == 1);
    CHECK_JSON(m.codecs, "[{\"name\": \"bytes\"}, {\"name\": \"zstd\", \"configuration\": {\"level\": 0, \"checksum\": false}}]");
    char key[64];
    zg_meta_chunk_key(&m, NULL, key, sizeof key);
    CHECK_STR(key, "c");
    zg_meta_free(&m);
    /* complex with NaN/Infinity parts */
    CHECK_OK(zg_meta_parse_v3(k_v3_complex, strlen(k_v3_complex), "array 'i'", &m));
    CHECK(m.dtype.id == ZGPU_COMPLEX64 && m.fill_value && bytes_equal_hex(m.fill_value, 8, "0000c07f0000807f"));
    zg_meta_free(&m);
    CHECK_OK(zg_meta_parse_v2(k_v2_complex, strlen(k_v2_complex), NULL, 0, "array 'j'", &m));
    CHECK(m.dtype.id == ZGPU_COMPLEX64 && m.fill_value && bytes_equal_hex(m.fill_value, 8, "0000c07f0000807f"));
    CHECK_JSON(m.codecs, "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
                         "{\"name\": \"numcodecs.zstd\", \"configuration\": {\"level\": 0}}]");
    zg_meta_free(&m);
    /* raw bytes: zarr-python's object form with a base64 fill, and v2 |V3 */
    CHECK_OK(zg_meta_parse_v3(k_v3_raw_bytes, strlen(k_v3_raw_bytes), "array 'rb'", &m));
    CHECK(m.dtype.id == ZGPU_RAW && m.dtype.size == 3 && m.fill_value && bytes_equal_hex(m.fill_value, 3, "010203"));
    zg_meta_free(&m);
    CHECK_OK(zg_meta_parse_v2(k_v2_raw, strlen(k_v2_raw), NULL, 0, "array 'r2'", &m));
    CHECK(m.dtype.id == ZGPU_RAW && m.dtype.size == 3 && m.fill_value && bytes_equal_hex(m.fill_value, 3, "010203"));
    CHECK_JSON(m.codecs, "[{\"name\": \"bytes\"}, {\"name\": \"numcodecs.zstd\", \"configuration\": {\"level\": 0}}]");
    zg_meta_free(&m);
    /* v3 with v2 chunk keys */
    CHECK_OK(zg_meta_parse_v3(k_v3_v2keys, strlen(k_v3_v2keys), "array 'k'", &m));
    CHECK(m.key_v2 == 1 && m.separator == '.');
    CHECK(m.fill_value && bytes_equal_hex(m.fill_value, 8, "fbffffffffffffff"));
    uint64_t c[2] = {0, 12};
    zg_meta_chunk_key(&m, c, key, sizeof key);
    CHECK_STR(key, "0.12");
    zg_meta_free(&m);
    /* float16 -inf */
    CHECK_OK(zg_meta_parse_v3(k_v3_f16, strlen(k_v3_f16), "array 'f16'", &m));
    CHECK(m.dtype.id == ZGPU_FLOAT16 && m.fill_value && bytes_equal_hex(m.fill_value, 2, "00fc"));
    zg_meta_free(&m);
    /* v2 null fill */
    CHECK_OK(zg_meta_parse_v2(k_v2_nullfill, strlen(k_v2_nullfill), NULL, 0, "array 'n2'", &m));
    CHECK(m.fill_is_null == 1 && m.fill_value && bytes_equal_hex(m.fill_value, 2, "0000"));
    zg_meta_free(&m);

    /* every zarr-python document is written back byte for byte */
    check_v3_exact_roundtrip(k_v3_sharded);
    check_v3_exact_roundtrip(k_v3_bool0d);
    check_v3_exact_roundtrip(k_v3_complex);
    check_v3_exact_roundtrip(k_v3_raw_bytes);
    check_v3_exact_roundtrip(k_v3_v2keys);
    check_v3_exact_roundtrip(k_v3_f16);
    check_v2_exact_roundtrip(k_v2_blosc_f, "{}");
    check_v2_exact_roundtrip(k_v2_shuffle, k_v2_shuffle_attrs);
    check_v2_exact_roundtrip(k_v2_complex, NULL);
    check_v2_exact_roundtrip(k_v2_raw, NULL);
    check_v2_exact_roundtrip(k_v2_nullfill, NULL);
}

/* v2 filter placement around the bytes codec, transpose for F order, 1-byte types. */
static void test_v2_codec_synthesis(void) {
    static const struct { const char *doc; const char *codecs; } rows[] = {
        {"{\"zarr_format\": 2, \"shape\": [4, 5, 6], \"chunks\": [2, 2, 2], \"dtype\": \"<i2\", \"fill_value\": 0, "
         "\"order\": \"F\", \"compressor\": {\"id\": \"zlib\", \"level\": 1}, \"filters\": [{\"id\": \"delta\", "
         "\"dtype\": \"<i2\"}, {\"id\": \"fixedscaleoffset\", \"offset\": 1, \"scale\": 2, \"dtype\": \"<i2\"}, "
         "{\"id\": \"shuffle\", \"elementsize\": 2}, {\"id\": \"fletcher32\"}]}",
         "[{\"name\": \"transpose\", \"configuration\": {\"order\": [2, 1, 0]}}, "
         "{\"name\": \"numcodecs.delta\", \"configuration\": {\"dtype\": \"<i2\"}}, "
         "{\"name\": \"numcodecs.fixedscaleoffset\", \"configuration\": {\"offset\": 1, \"scale\": 2, \"dtype\": \"<i2\"}}, "
         "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
         "{\"name\": \"numcodecs.shuffle\", \"configuration\": {\"elementsize\": 2}}, "
         "{\"name\": \"numcodecs.fletcher32\", \"configuration\": {}}, "
         "{\"name\": \"numcodecs.zlib\", \"configuration\": {\"level\": 1}}]"},
        /* F order on one dimension needs no transpose; |u1 has no endianness */
        {"{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": \"|u1\", \"fill_value\": 0, \"order\": \"F\", "
         "\"compressor\": {\"id\": \"gzip\", \"level\": 5}, \"filters\": null}",
         "[{\"name\": \"bytes\"}, {\"name\": \"numcodecs.gzip\", \"configuration\": {\"level\": 5}}]"},
        {"{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": \">u4\", \"fill_value\": 0, \"order\": \"C\", "
         "\"compressor\": null, \"filters\": [{\"id\": \"astype\", \"encode_dtype\": \"<u2\", \"decode_dtype\": \">u4\"}, "
         "{\"id\": \"quantize\", \"digits\": 3, \"dtype\": \">u4\"}]}",
         "[{\"name\": \"numcodecs.astype\", \"configuration\": {\"encode_dtype\": \"<u2\", \"decode_dtype\": \">u4\"}}, "
         "{\"name\": \"numcodecs.quantize\", \"configuration\": {\"digits\": 3, \"dtype\": \">u4\"}}, "
         "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}]"},
        /* an empty filter list is like null; minimal document */
        {"{\"zarr_format\": 2, \"shape\": [], \"chunks\": [], \"dtype\": \"<f4\", \"fill_value\": 1.5, "
         "\"compressor\": {\"id\": \"zstd\", \"level\": 1}, \"filters\": []}",
         "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
         "{\"name\": \"numcodecs.zstd\", \"configuration\": {\"level\": 1}}]"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        zg_array_meta m;
        CHECK_OK(zg_meta_parse_v2(rows[i].doc, strlen(rows[i].doc), NULL, 0, "array 'syn'", &m));
        if (!m.codecs) continue;
        CHECK_JSON(m.codecs, rows[i].codecs);
        /* the written .zarray keeps the original filter and compressor objects */
        char *out = zg_meta_to_json(&m);
        zj_value *w = NULL, *orig = NULL;
        CHECK_OK(zj_parse(out, out ? strlen(out) : 0, "out", &w));
        CHECK_OK(zj_parse(rows[i].doc, strlen(rows[i].doc), "in", &orig));
        CHECK(zj_equal(zj_get(w, "compressor"), zj_get(orig, "compressor")));
        CHECK(zj_equal(zj_get(w, "filters"), zj_get(orig, "filters")));
        zg_array_meta m2;
        CHECK_OK(zg_meta_parse_v2(out, out ? strlen(out) : 0, NULL, 0, "array 'syn2'", &m2));
        CHECK(meta_equal(&m, &m2));
        zg_meta_free(&m2);
        zj_free(w);
        zj_free(orig);
        free(out);
        zg_meta_free(&m);
    }
    zg_array_meta m;
    const char *zero_d = "{\"zarr_format\": 2, \"shape\": [], \"chunks\": [], \"dtype\": \"<f4\", \"fill_value\": 1.5, "
                         "\"compressor\": null, \"filters\": null, \"order\": \"C\"}";
    CHECK_OK(zg_meta_parse_v2(zero_d, strlen(zero_d), NULL, 0, "array 'z'", &m));
    char key[16];
    zg_meta_chunk_key(&m, NULL, key, sizeof key);
    CHECK_STR(key, "0");
    CHECK(m.fill_value && bytes_equal_hex(m.fill_value, 4, "0000c03f"));
    zg_meta_free(&m);
}

static void test_chunk_keys(void) {
    zg_array_meta m;
    memset(&m, 0, sizeof m);
    m.ndim = 3;
    uint64_t c[3] = {1, 0, 3};
    char key[64];
    m.key_v2 = 0; m.separator = '/';
    zg_meta_chunk_key(&m, c, key, sizeof key);
    CHECK_STR(key, "c/1/0/3");
    m.separator = '.';
    zg_meta_chunk_key(&m, c, key, sizeof key);
    CHECK_STR(key, "c.1.0.3");
    m.key_v2 = 1;
    zg_meta_chunk_key(&m, c, key, sizeof key);
    CHECK_STR(key, "1.0.3");
    m.separator = '/';
    zg_meta_chunk_key(&m, c, key, sizeof key);
    CHECK_STR(key, "1/0/3");
    uint64_t big[3] = {UINT64_MAX, 12345678901234ull, 0};
    m.key_v2 = 0;
    zg_meta_chunk_key(&m, big, key, sizeof key);
    CHECK_STR(key, "c/18446744073709551615/12345678901234/0");
    /* a short buffer is truncated and terminated, never overrun */
    char small[8];
    memset(small, 'X', sizeof small);
    zg_meta_chunk_key(&m, big, small, 6);
    CHECK_STR(small, "c/184");
    CHECK(small[6] == 'X' && small[7] == 'X');
    m.ndim = 0;
    zg_meta_chunk_key(&m, NULL, key, sizeof key);
    CHECK_STR(key, "c");
    m.key_v2 = 1;
    zg_meta_chunk_key(&m, NULL, key, sizeof key);
    CHECK_STR(key, "0");
}

/* ---- creation documents ---- */

static void test_create(void) {
    zg_array_meta m;
    const char *v3 = "{\"shape\": [10, 20], \"data_type\": \"float32\", \"chunk_grid\": {\"name\": \"regular\", "
                     "\"configuration\": {\"chunk_shape\": [5, 5]}}}";
    CHECK_OK(zg_meta_parse_create(v3, "array 'new'", &m));
    CHECK(m.zarr_format == 3 && m.ndim == 2 && m.dtype.id == ZGPU_FLOAT32 && m.key_v2 == 0 && m.separator == '/');
    CHECK(m.fill_value && bytes_equal_hex(m.fill_value, 4, "00000000"));
    char *out = zg_meta_to_json(&m), *c = compact_text(out);
    CHECK_STR(c, "{\"shape\": [10, 20], \"data_type\": \"float32\", \"chunk_grid\": {\"name\": \"regular\", "
                 "\"configuration\": {\"chunk_shape\": [5, 5]}}, \"chunk_key_encoding\": {\"name\": \"default\", "
                 "\"configuration\": {\"separator\": \"/\"}}, \"fill_value\": 0.0, \"codecs\": [{\"name\": \"bytes\", "
                 "\"configuration\": {\"endian\": \"little\"}}], \"attributes\": {}, \"zarr_format\": 3, "
                 "\"node_type\": \"array\", \"storage_transformers\": []}");
    free(out);
    free(c);
    zg_meta_free(&m);

    const char *v3u8 = "{\"zarr_format\": 3, \"shape\": [3], \"data_type\": \"uint8\", \"chunk_grid\": {\"name\": "
                       "\"regular\", \"configuration\": {\"chunk_shape\": [3]}}, \"attributes\": {\"k\": [1]}, "
                       "\"dimension_names\": [null]}";
    CHECK_OK(zg_meta_parse_create(v3u8, "array 'u8'", &m));
    CHECK_JSON(m.codecs, "[{\"name\": \"bytes\"}]");
    CHECK_JSON(m.attributes, "{\"k\": [1]}");
    CHECK(m.dimension_names[0] == NULL);
    zg_meta_free(&m);

    const char *v3c = "{\"shape\": [3], \"data_type\": \"complex128\", \"chunk_grid\": {\"name\": \"regular\", "
                      "\"configuration\": {\"chunk_shape\": [3]}}, \"chunk_key_encoding\": {\"name\": \"v2\"}, "
                      "\"fill_value\": [1, \"NaN\"]}";
    CHECK_OK(zg_meta_parse_create(v3c, "array 'c'", &m));
    CHECK(m.key_v2 == 1 && m.separator == '.');
    CHECK(m.fill_value && bytes_equal_hex(m.fill_value, 16, "000000000000f03f000000000000f87f"));
    zg_meta_free(&m);

    const char *v2 = "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": \"<f8\", "
                     "\"attributes\": {\"a\": [1, 2]}}";
    CHECK_OK(zg_meta_parse_create(v2, "array 'v2new'", &m));
    CHECK(m.zarr_format == 2 && m.key_v2 == 1 && m.separator == '.' && m.fill_is_null == 0);
    CHECK_JSON(m.attributes, "{\"a\": [1, 2]}");
    CHECK_JSON(m.codecs, "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]");
    out = zg_meta_to_json(&m);
    c = compact_text(out);
    CHECK_STR(c, "{\"shape\": [4], \"chunks\": [2], \"dtype\": \"<f8\", \"fill_value\": 0.0, \"order\": \"C\", "
                 "\"filters\": null, \"dimension_separator\": \".\", \"compressor\": null, \"zarr_format\": 2}");
    free(out);
    free(c);
    out = zg_meta_attrs_json(&m);
    CHECK_STR(out, "{\n  \"a\": [\n    1,\n    2\n  ]\n}");
    free(out);
    zg_meta_free(&m);

    const char *v2raw = "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": \"|V2\", "
                        "\"dimension_separator\": \"/\", \"fill_value\": null}";
    CHECK_OK(zg_meta_parse_create(v2raw, "array 'v2raw'", &m));
    CHECK(m.fill_is_null == 1 && m.separator == '/');
    out = zg_meta_to_json(&m);
    c = compact_text(out);
    CHECK_STR(c, "{\"shape\": [4], \"chunks\": [2], \"dtype\": \"|V2\", \"fill_value\": null, \"order\": \"C\", "
                 "\"filters\": null, \"dimension_separator\": \"/\", \"compressor\": null, \"zarr_format\": 2}");
    free(out);
    free(c);
    zg_meta_free(&m);

    static const struct { const char *doc; zgpu_status st; const char *needle; } bad[] = {
        {"{\"zarr_format\": 4, \"shape\": [1]}", ZGPU_ERR_BAD_METADATA, "zarr_format must be 2 or 3"},
        {"{\"shape\": [1], \"data_type\": \"int8\"}", ZGPU_ERR_BAD_METADATA, "chunk_grid is missing"},
        {"{\"shape\": [1], \"data_type\": \"text\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
         "{\"chunk_shape\": [1]}}}", ZGPU_ERR_UNSUPPORTED, "data_type 'text'"},
        {"{\"zarr_format\": 2, \"shape\": [1], \"chunks\": [1], \"dtype\": \"<U4\"}", ZGPU_ERR_UNSUPPORTED, "'<U4'"},
        {"{\"shape\": [1], ", ZGPU_ERR_BAD_METADATA, "JSON"},
        {"[1]", ZGPU_ERR_BAD_METADATA, "must be a JSON object"},
        {"{\"zarr_format\": 2, \"shape\": [1], \"chunks\": [1], \"dtype\": \"<i4\", \"attributes\": 3}",
         ZGPU_ERR_BAD_METADATA, "attributes must be a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_STATUS(zg_meta_parse_create(bad[i].doc, "array 'bad'", &m), bad[i].st);
        CHECK_MSG(last_error_has(bad[i].needle) && strncmp(zgpu_last_error(), "array 'bad': ", 13) == 0,
                  "create %zu: '%s'", i, zgpu_last_error());
        CHECK(m.doc == NULL && m.codecs == NULL);
    }
}

/* ---- must_understand and extension members ---- */

static void test_extensions(void) {
    zg_array_meta m;
    const char *doc = "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4], \"data_type\": \"int16\", "
                      "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [2]}, "
                      "\"note\": {\"must_understand\": false}}, \"chunk_key_encoding\": \"default\", "
                      "\"fill_value\": 1, \"codecs\": [\"bytes\", {\"name\": \"gzip\", \"configuration\": "
                      "{\"level\": 1}}], \"storage_transformers\": [{\"name\": \"x\", \"must_understand\": false}], "
                      "\"my_ext\": {\"must_understand\": false, \"v\": [1, 2]}}";
    CHECK_OK(zg_meta_parse_v3(doc, strlen(doc), "array 'ext'", &m));
    CHECK(m.key_v2 == 0 && m.separator == '/');
    CHECK_JSON(m.codecs, "[{\"name\": \"bytes\"}, {\"name\": \"gzip\", \"configuration\": {\"level\": 1}}]");
    char *out = zg_meta_to_json(&m);
    zj_value *w = NULL;
    CHECK_OK(zj_parse(out, out ? strlen(out) : 0, "out", &w));
    CHECK_JSON(zj_get(w, "my_ext"), "{\"must_understand\": false, \"v\": [1, 2]}");
    CHECK_JSON(zj_get(w, "storage_transformers"), "[{\"name\": \"x\", \"must_understand\": false}]");
    zg_array_meta m2;
    CHECK_OK(zg_meta_parse_v3(out, out ? strlen(out) : 0, "array 'ext2'", &m2));
    CHECK(meta_equal(&m, &m2));
    zg_meta_free(&m2);
    zj_free(w);
    free(out);
    zg_meta_free(&m);
}

/* ---- groups ---- */

static void test_groups(void) {
    zg_group_meta g;
    CHECK_OK(zg_group_meta_parse_v3(k_group_v3, strlen(k_group_v3), "group 'g'", &g));
    CHECK_EQ_U64(g.zarr_format, 3);
    CHECK_JSON(g.attributes, "{\"x\": 1}");
    char *out = zg_group_meta_to_json(&g);
    CHECK_STR(out, k_group_v3);
    free(out);
    zg_group_meta_free(&g);

    const char *consolidated = "{\n  \"attributes\": {},\n  \"zarr_format\": 3,\n  \"consolidated_metadata\": {\n"
                               "    \"kind\": \"inline\",\n    \"must_understand\": false,\n    \"metadata\": {}\n  },\n"
                               "  \"node_type\": \"group\"\n}";
    CHECK_OK(zg_group_meta_parse_v3(consolidated, strlen(consolidated), "group 'c'", &g));
    out = zg_group_meta_to_json(&g);
    CHECK_STR(out, consolidated);
    free(out);
    zg_group_meta_free(&g);
    const char *cnull = "{\"zarr_format\": 3, \"node_type\": \"group\", \"consolidated_metadata\": null}";
    CHECK_OK(zg_group_meta_parse_v3(cnull, strlen(cnull), "group 'c'", &g));
    CHECK_JSON(g.attributes, "{}");
    zg_group_meta_free(&g);

    CHECK_OK(zg_group_meta_parse_v2("{\n  \"zarr_format\": 2\n}", 22, "{\"a\": \"b\"}", 10, "group 'g2'", &g));
    CHECK_EQ_U64(g.zarr_format, 2);
    CHECK_JSON(g.attributes, "{\"a\": \"b\"}");
    out = zg_group_meta_to_json(&g);
    CHECK_STR(out, "{\n  \"zarr_format\": 2\n}");
    free(out);
    zg_group_meta_free(&g);
    CHECK_OK(zg_group_meta_parse_v2("{\"zarr_format\": 2}", 18, NULL, 0, "group 'g2'", &g));
    CHECK_JSON(g.attributes, "{}");
    zg_group_meta_free(&g);

    CHECK_OK(zg_group_meta_new(3, "{\"k\": true}", &g));
    out = zg_group_meta_to_json(&g);
    CHECK_STR(out, "{\n  \"attributes\": {\n    \"k\": true\n  },\n  \"zarr_format\": 3,\n  \"node_type\": \"group\"\n}");
    free(out);
    zg_group_meta_free(&g);
    CHECK_OK(zg_group_meta_new(2, NULL, &g));
    out = zg_group_meta_to_json(&g);
    CHECK_STR(out, "{\n  \"zarr_format\": 2\n}");
    CHECK_JSON(g.attributes, "{}");
    free(out);
    zg_group_meta_free(&g);
    CHECK_STATUS(zg_group_meta_new(3, "[1]", &g), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(zg_group_meta_new(4, NULL, &g), ZGPU_ERR_INVALID_ARGUMENT);

    static const struct { int fmt; const char *doc, *attrs, *needle; zgpu_status st; } bad[] = {
        {3, "{\"zarr_format\": 3, \"node_type\": \"array\"}", NULL, "zarr.json: node_type is 'array', expected 'group'",
         ZGPU_ERR_BAD_METADATA},
        {3, "{\"zarr_format\": 3, \"node_type\": \"group\", \"attributes\": 1}", NULL, "attributes must be",
         ZGPU_ERR_BAD_METADATA},
        {3, "{\"zarr_format\": 3, \"node_type\": \"group\", \"ext\": {}}", NULL, "member 'ext'", ZGPU_ERR_UNSUPPORTED},
        {3, "{\"zarr_format\": 2}", NULL, "zarr_format is 2, expected 3", ZGPU_ERR_BAD_METADATA},
        {2, "{\"zarr_format\": 3}", NULL, ".zgroup: zarr_format is 3, expected 2", ZGPU_ERR_BAD_METADATA},
        {2, "{\"zarr_format\": 2}", "\"x\"", ".zattrs: the attributes must be", ZGPU_ERR_BAD_METADATA},
        {2, "nope", NULL, ".zgroup: JSON", ZGPU_ERR_BAD_METADATA},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zgpu_status s = bad[i].fmt == 3
                            ? zg_group_meta_parse_v3(bad[i].doc, strlen(bad[i].doc), "group 'bad'", &g)
                            : zg_group_meta_parse_v2(bad[i].doc, strlen(bad[i].doc), bad[i].attrs,
                                                     bad[i].attrs ? strlen(bad[i].attrs) : 0, "group 'bad'", &g);
        CHECK_STATUS(s, bad[i].st);
        CHECK_MSG(last_error_has(bad[i].needle) && strncmp(zgpu_last_error(), "group 'bad': ", 13) == 0,
                  "group row %zu: '%s'", i, zgpu_last_error());
        CHECK(g.doc == NULL && g.attributes == NULL);
    }
}

int main(void) {
    uint16_t probe = 1;
    if (*(uint8_t *)&probe != 1) TEST_SKIP("the expected byte strings assume a little-endian host");
    test_v3_sharded();
    test_v2_blosc_f_delta();
    test_v2_shuffle_slash();
    test_more_documents();
    test_v2_codec_synthesis();
    test_chunk_keys();
    test_create();
    test_extensions();
    test_groups();
    TEST_MAIN_END();
}
