/* zgpu_metadata_convert: whole array documents between Zarr v2 and v3. Exact documents both ways for several
 * arrays, v3 -> v2 -> v3 round trips of what zgpu_metadata_build writes, and the features v2 cannot express, each
 * refused with ZGPU_ERR_UNSUPPORTED and a message naming it. */
#include "test.h"

#include "zgpu_meta.h"

/* convert(in, fmt, flags) must give exactly `want`. */
static void check_convert(const char *in, int fmt, unsigned flags, const char *want, int line) {
    char *out = NULL;
    zgpu_status s = zgpu_metadata_convert(in, fmt, flags, &out);
    CHECK_MSG(s == ZGPU_OK, "line %d: %s: %s", line, zgpu_status_name(s), zgpu_last_error());
    CHECK_MSG(out && !strcmp(out, want), "line %d: to v%d:\n  got  %s\n  want %s", line, fmt, out ? out : "(null)",
              want);
    zgpu_free(out);
}
#define CONVERT(in, fmt, flags, want) check_convert(in, fmt, flags, want, __LINE__)

/* convert must fail with `want` status and a message containing `needle`. */
static void check_refused(const char *in, int fmt, unsigned flags, zgpu_status want, const char *needle, int line) {
    char *out = (char *)1;
    zgpu_status s = zgpu_metadata_convert(in, fmt, flags, &out);
    CHECK_MSG(s == want, "line %d: %s, wanted %s (%s)", line, zgpu_status_name(s), zgpu_status_name(want),
              s ? zgpu_last_error() : out);
    CHECK_MSG(out == NULL, "line %d: *out is not NULL after a failure", line);
    CHECK_MSG(s == ZGPU_OK || strstr(zgpu_last_error(), needle), "line %d: message '%s' does not name '%s'", line,
              zgpu_last_error(), needle);
    if (s == ZGPU_OK) zgpu_free(out);
}
#define REFUSED(in, fmt, flags, want, needle) check_refused(in, fmt, flags, want, needle, __LINE__)

/* A pair of documents that are each other's conversion (the v3 one as zgpu writes it). */
typedef struct doc_pair {
    const char *v3, *v2;
} doc_pair;

static const doc_pair k_pairs[] = {
    /* order F, an element filter, a byte filter and a standard compressor; big-endian; NaN; attributes */
    {"{\"shape\": [10, 20], \"data_type\": \"float32\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
     "{\"chunk_shape\": [5, 5]}}, \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": "
     "\"/\"}}, \"fill_value\": \"NaN\", \"codecs\": [{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}, "
     "{\"name\": \"numcodecs.delta\", \"configuration\": {\"dtype\": \">f4\"}}, {\"name\": \"bytes\", "
     "\"configuration\": {\"endian\": \"big\"}}, {\"name\": \"numcodecs.shuffle\", \"configuration\": {\"elementsize\": "
     "4}}, {\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}], \"attributes\": {\"a\": 1, "
     "\"b\": [\"x\", null]}, \"zarr_format\": 3, \"node_type\": \"array\", \"storage_transformers\": []}",
     "{\"shape\": [10, 20], \"chunks\": [5, 5], \"dtype\": \">f4\", \"fill_value\": \"NaN\", \"order\": \"F\", "
     "\"filters\": [{\"id\": \"delta\", \"dtype\": \">f4\"}, {\"id\": \"shuffle\", \"elementsize\": 4}], "
     "\"dimension_separator\": \"/\", \"compressor\": {\"id\": \"zstd\", \"level\": 3, \"checksum\": false}, "
     "\"zarr_format\": 2, \"attributes\": {\"a\": 1, \"b\": [\"x\", null]}}"},
    /* one-byte type without compressor, "." keys */
    {"{\"shape\": [3, 4], \"data_type\": \"uint8\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
     "{\"chunk_shape\": [2, 2]}}, \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": "
     "\".\"}}, \"fill_value\": 7, \"codecs\": [{\"name\": \"bytes\"}], \"attributes\": {}, \"zarr_format\": 3, "
     "\"node_type\": \"array\", \"storage_transformers\": []}",
     "{\"shape\": [3, 4], \"chunks\": [2, 2], \"dtype\": \"|u1\", \"fill_value\": 7, \"order\": \"C\", \"filters\": "
     "null, \"dimension_separator\": \".\", \"compressor\": null, \"zarr_format\": 2, \"attributes\": {}}"},
    /* blosc: v3 names the shuffle, v2 numbers it; typesize comes from the data type */
    {"{\"shape\": [8], \"data_type\": \"int16\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
     "{\"chunk_shape\": [4]}}, \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": "
     "\"/\"}}, \"fill_value\": -1, \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
     "{\"name\": \"blosc\", \"configuration\": {\"typesize\": 2, \"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": "
     "\"shuffle\", \"blocksize\": 0}}], \"attributes\": {}, \"zarr_format\": 3, \"node_type\": \"array\", "
     "\"storage_transformers\": []}",
     "{\"shape\": [8], \"chunks\": [4], \"dtype\": \"<i2\", \"fill_value\": -1, \"order\": \"C\", \"filters\": null, "
     "\"dimension_separator\": \"/\", \"compressor\": {\"id\": \"blosc\", \"cname\": \"lz4\", \"clevel\": 5, "
     "\"shuffle\": 1, \"blocksize\": 0}, \"zarr_format\": 2, \"attributes\": {}}"},
    /* complex fill value with a NaN part; gzip */
    {"{\"shape\": [6], \"data_type\": \"complex64\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
     "{\"chunk_shape\": [3]}}, \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": "
     "\".\"}}, \"fill_value\": [\"NaN\", 1.5], \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": "
     "\"little\"}}, {\"name\": \"gzip\", \"configuration\": {\"level\": 6}}], \"attributes\": {}, \"zarr_format\": 3, "
     "\"node_type\": \"array\", \"storage_transformers\": []}",
     "{\"shape\": [6], \"chunks\": [3], \"dtype\": \"<c8\", \"fill_value\": [\"NaN\", 1.5], \"order\": \"C\", "
     "\"filters\": null, \"dimension_separator\": \".\", \"compressor\": {\"id\": \"gzip\", \"level\": 6}, "
     "\"zarr_format\": 2, \"attributes\": {}}"},
    /* raw bytes: v3 byte list, v2 base64; numcodecs.zlib keeps its numcodecs name in v3 */
    {"{\"shape\": [5, 5], \"data_type\": \"r24\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
     "{\"chunk_shape\": [5, 5]}}, \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": "
     "\".\"}}, \"fill_value\": [1, 2, 3], \"codecs\": [{\"name\": \"bytes\"}, {\"name\": \"numcodecs.zlib\", "
     "\"configuration\": {\"level\": 2}}], \"attributes\": {}, \"zarr_format\": 3, \"node_type\": \"array\", "
     "\"storage_transformers\": []}",
     "{\"shape\": [5, 5], \"chunks\": [5, 5], \"dtype\": \"|V3\", \"fill_value\": \"AQID\", \"order\": \"C\", "
     "\"filters\": null, \"dimension_separator\": \".\", \"compressor\": {\"id\": \"zlib\", \"level\": 2}, "
     "\"zarr_format\": 2, \"attributes\": {}}"},
    /* zero-dimensional bool */
    {"{\"shape\": [], \"data_type\": \"bool\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
     "{\"chunk_shape\": []}}, \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": "
     "\".\"}}, \"fill_value\": true, \"codecs\": [{\"name\": \"bytes\"}, {\"name\": \"numcodecs.bz2\", "
     "\"configuration\": {\"level\": 1}}], \"attributes\": {}, \"zarr_format\": 3, \"node_type\": \"array\", "
     "\"storage_transformers\": []}",
     "{\"shape\": [], \"chunks\": [], \"dtype\": \"|b1\", \"fill_value\": true, \"order\": \"C\", \"filters\": null, "
     "\"dimension_separator\": \".\", \"compressor\": {\"id\": \"bz2\", \"level\": 1}, \"zarr_format\": 2, "
     "\"attributes\": {}}"},
};

static void test_pairs(void) {
    for (size_t i = 0; i < sizeof k_pairs / sizeof k_pairs[0]; i++) {
        const doc_pair *p = &k_pairs[i];
        CONVERT(p->v3, 2, 0, p->v2);
        CONVERT(p->v2, 3, 0, p->v3);
        /* each format to itself: unchanged */
        CONVERT(p->v3, 3, 0, p->v3);
        CONVERT(p->v2, 2, 0, p->v2);
    }
}

/* v2 forms with no exact v3 counterpart and documents with defaults left out. */
static void test_one_way(void) {
    /* v2 null fill: v3 has no null, zero then; order F of one axis is no transpose */
    CONVERT("{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [4], \"dtype\": \"<f8\", \"fill_value\": null, "
            "\"order\": \"F\", \"filters\": null, \"compressor\": {\"id\": \"lz4\", \"acceleration\": 1}, "
            "\"dimension_separator\": \".\"}",
            3, 0,
            "{\"shape\": [4], \"data_type\": \"float64\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
            "{\"chunk_shape\": [4]}}, \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": "
            "{\"separator\": \".\"}}, \"fill_value\": 0.0, \"codecs\": [{\"name\": \"bytes\", \"configuration\": "
            "{\"endian\": \"little\"}}, {\"name\": \"numcodecs.lz4\", \"configuration\": {\"acceleration\": 1}}], "
            "\"attributes\": {}, \"zarr_format\": 3, \"node_type\": \"array\", \"storage_transformers\": []}");
    /* a minimal v3 creation document; all-null dimension names are no names; the identity transpose is order C */
    CONVERT("{\"shape\": [2, 3], \"data_type\": \"uint16\", \"chunk_grid\": {\"name\": \"regular\", "
            "\"configuration\": {\"chunk_shape\": [2, 3]}}, \"codecs\": [{\"name\": \"transpose\", \"configuration\": "
            "{\"order\": [0, 1]}}, \"bytes\"], \"dimension_names\": [null, null]}",
            2, 0,
            "{\"shape\": [2, 3], \"chunks\": [2, 3], \"dtype\": \"<u2\", \"fill_value\": 0, \"order\": \"C\", "
            "\"filters\": null, \"dimension_separator\": \"/\", \"compressor\": null, \"zarr_format\": 2, "
            "\"attributes\": {}}");
    /* several byte filters: the last codec is the compressor */
    CONVERT("{\"shape\": [4], \"data_type\": \"int32\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
            "{\"chunk_shape\": [4]}}, \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": "
            "\"little\"}}, {\"name\": \"numcodecs.shuffle\", \"configuration\": {\"elementsize\": 4}}, {\"name\": "
            "\"gzip\", \"configuration\": {\"level\": 1}}, {\"name\": \"numcodecs.zlib\", \"configuration\": "
            "{\"level\": 9}}]}",
            2, 0,
            "{\"shape\": [4], \"chunks\": [4], \"dtype\": \"<i4\", \"fill_value\": 0, \"order\": \"C\", \"filters\": "
            "[{\"id\": \"shuffle\", \"elementsize\": 4}, {\"id\": \"gzip\", \"level\": 1}], \"dimension_separator\": "
            "\"/\", \"compressor\": {\"id\": \"zlib\", \"level\": 9}, \"zarr_format\": 2, \"attributes\": {}}");
}

/* ZGPU_CONVERT_KEEP_CHUNK_KEYS: the document addresses the chunks already stored. */
static void test_keep_keys(void) {
    static const char v2[] = "{\"shape\": [4, 4], \"chunks\": [2, 2], \"dtype\": \"<u4\", \"fill_value\": 3, "
                             "\"order\": \"C\", \"filters\": null, \"dimension_separator\": \".\", \"compressor\": "
                             "null, \"zarr_format\": 2, \"attributes\": {}}";
    static const char v3[] = "{\"shape\": [4, 4], \"data_type\": \"uint32\", \"chunk_grid\": {\"name\": \"regular\", "
                             "\"configuration\": {\"chunk_shape\": [2, 2]}}, \"chunk_key_encoding\": {\"name\": "
                             "\"v2\", \"configuration\": {\"separator\": \".\"}}, \"fill_value\": 3, \"codecs\": "
                             "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}], \"attributes\": "
                             "{}, \"zarr_format\": 3, \"node_type\": \"array\", \"storage_transformers\": []}";
    CONVERT(v2, 3, ZGPU_CONVERT_KEEP_CHUNK_KEYS, v3);
    CONVERT(v3, 2, ZGPU_CONVERT_KEEP_CHUNK_KEYS, v2);
    CONVERT(v3, 2, 0, v2); /* the "v2" encoding converts either way */
    /* the "default" encoding's keys (c/0/0) have no v2 form */
    REFUSED(k_pairs[0].v3, 2, ZGPU_CONVERT_KEEP_CHUNK_KEYS, ZGPU_ERR_UNSUPPORTED, "chunk_key_encoding 'default'");
}

/* Every document zgpu_metadata_build writes for these specs survives v3 -> v2 -> v3, and its v2 form is the
 * document zgpu_metadata_build writes for format 2 from the same spec. */
static void test_built_round_trips(void) {
    static const char *const specs[] = {"none", "zstd", "zstd:3:checksum", "gzip:6", "zlib:2", "bz2:9", "lz4:3",
                                        "blosc", "blosc:lz4:5:shuffle", "blosc:zstd:1:noshuffle"};
    static const struct { zgpu_dtype dt; size_t size; int big; } types[] = {
        {ZGPU_UINT8, 1, 0}, {ZGPU_INT16, 2, 1}, {ZGPU_FLOAT32, 4, 0}, {ZGPU_COMPLEX128, 16, 1}, {ZGPU_BOOL, 1, 0},
        {ZGPU_RAW, 5, 0}};
    const uint64_t shape[3] = {30, 20, 10}, chunks[3] = {8, 20, 3};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
            zgpu_array_spec s = {.struct_size = sizeof s, .zarr_format = 3, .ndim = 3, .shape = shape,
                                 .chunks = chunks, .dtype = types[t].dt, .itemsize = types[t].size,
                                 .big_endian = types[t].big, .codec_spec = specs[k],
                                 .attributes = "{\"k\": [1, 2.5, \"s\"]}"};
            char *b3 = NULL, *b2 = NULL, *n3 = NULL, *n2 = NULL, *v2 = NULL, *back = NULL;
            char *f3 = NULL, *f2 = NULL;
            CHECK_OK(zgpu_fill_json_from_text("0", types[t].dt, types[t].size, 3, &f3));
            CHECK_OK(zgpu_fill_json_from_text("0", types[t].dt, types[t].size, 2, &f2));
            s.fill_value = f3;
            CHECK_OK(zgpu_metadata_build(&s, &b3));
            s.zarr_format = 2;
            s.fill_value = f2;
            s.separator = '/';
            CHECK_OK(zgpu_metadata_build(&s, &b2));
            zgpu_free(f3);
            zgpu_free(f2);
            CHECK_OK(zgpu_metadata_convert(b3, 3, 0, &n3));
            CHECK_OK(zgpu_metadata_convert(b2, 2, 0, &n2));
            CHECK_OK(zgpu_metadata_convert(b3, 2, 0, &v2));
            CHECK_OK(zgpu_metadata_convert(v2, 3, 0, &back));
            CHECK_MSG(n3 && back && !strcmp(n3, back), "%s / type %zu: v3 -> v2 -> v3\n  got  %s\n  want %s",
                      specs[k], t, back, n3);
            CHECK_MSG(n2 && v2 && !strcmp(n2, v2), "%s / type %zu: v2 of the v3 document\n  got  %s\n  want %s",
                      specs[k], t, v2, n2);
            zgpu_free(b3);
            zgpu_free(b2);
            zgpu_free(n3);
            zgpu_free(n2);
            zgpu_free(v2);
            zgpu_free(back);
        }
}

#define V3_HEAD(codecs) \
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4, 4, 4], \"data_type\": \"uint16\", " \
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [2, 2, 2]}}, \"codecs\": " codecs

static void test_refused(void) {
    /* sharding */
    REFUSED(V3_HEAD("[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [1, 1, 1], \"codecs\": "
                    "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}], \"index_codecs\": "
                    "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], "
                    "\"index_location\": \"end\"}}]}"),
            2, 0, ZGPU_ERR_UNSUPPORTED, "sharding");
    /* dimension names: named in the message */
    REFUSED(V3_HEAD("[\"bytes\"], \"dimension_names\": [\"z\", null, \"x\"]}"), 2, 0, ZGPU_ERR_UNSUPPORTED,
            "dimension_names [\"z\", null, \"x\"]");
    /* transposes v2's order cannot say */
    REFUSED(V3_HEAD("[{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0, 2]}}, \"bytes\"]}"), 2, 0,
            ZGPU_ERR_UNSUPPORTED, "transpose' with order [1, 0, 2]");
    REFUSED(V3_HEAD("[{\"name\": \"numcodecs.delta\", \"configuration\": {\"dtype\": \"<u2\"}}, {\"name\": "
                    "\"transpose\", \"configuration\": {\"order\": [2, 1, 0]}}, \"bytes\"]}"),
            2, 0, ZGPU_ERR_UNSUPPORTED, "transpose' after other array->array codecs");
    /* codecs without a numcodecs form, or in places v2 cannot put them */
    REFUSED(V3_HEAD("[\"bytes\", \"crc32c\"]}"), 2, 0, ZGPU_ERR_UNSUPPORTED, "codec 'crc32c'");
    REFUSED(V3_HEAD("[\"bytes\", {\"name\": \"numcodecs.delta\", \"configuration\": {\"dtype\": \"<u2\"}}]}"), 2, 0,
            ZGPU_ERR_UNSUPPORTED, "'numcodecs.delta' after the array->bytes codec");
    REFUSED(V3_HEAD("[{\"name\": \"numcodecs.shuffle\", \"configuration\": {\"elementsize\": 2}}, \"bytes\"]}"), 2, 0,
            ZGPU_ERR_UNSUPPORTED, "'numcodecs.shuffle' before the array->bytes codec");
    REFUSED(V3_HEAD("[\"vlen-bytes\"]}"), 2, 0, ZGPU_ERR_UNSUPPORTED, "'vlen-bytes'");
    REFUSED(V3_HEAD("[\"bytes\", {\"name\": \"frobnicate\"}]}"), 2, 0, ZGPU_ERR_UNSUPPORTED, "'frobnicate'");
    /* bad input and arguments */
    REFUSED("{\"zarr_format\": 3, \"shape\": [2]}", 2, 0, ZGPU_ERR_BAD_METADATA, "data_type");
    REFUSED("[1, 2]", 2, 0, ZGPU_ERR_BAD_METADATA, "JSON object");
    REFUSED("{\"zarr_format\": 2, \"shape\": [2], \"chunks\": [2], \"dtype\": \"<U4\"}", 3, 0, ZGPU_ERR_UNSUPPORTED,
            "U4");
    REFUSED(V3_HEAD("[\"bytes\"]}"), 4, 0, ZGPU_ERR_INVALID_ARGUMENT, "zarr_format 4");
    REFUSED(V3_HEAD("[\"bytes\"]}"), 2, 2, ZGPU_ERR_INVALID_ARGUMENT, "flags");
    REFUSED(NULL, 2, 0, ZGPU_ERR_INVALID_ARGUMENT, "json is NULL");
    CHECK_STATUS(zgpu_metadata_convert(V3_HEAD("[\"bytes\"]}"), 2, 0, NULL), ZGPU_ERR_INVALID_ARGUMENT);
}

int main(void) {
    uint16_t probe = 1;
    if (*(uint8_t *)&probe != 1) TEST_SKIP("the expected documents assume a little-endian host");
    test_pairs();
    test_one_way();
    test_keep_keys();
    test_built_round_trips();
    test_refused();
    TEST_MAIN_END();
}
