/* Tests of the exported metadata builders (include/zgpu_meta.h): data type names and typestrings, fill value
 * JSON, codec specs, v2 <-> v3 codec conversions, default chunks, whole documents, status names and messages,
 * struct layouts. Documents built here are also created and reopened, so what is written is what zgpu reads. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "zgpu.h"
#include "zgpu_meta.h"

static int last_error_has(const char *needle) { return strstr(zgpu_last_error(), needle) != NULL; }

/* ---- data types ---- */
static void test_dtypes(void) {
    static const struct {
        const char *name, *le, *be;
        zgpu_dtype dt;
        size_t size;
    } rows[] = {
        {"bool", "|b1", "|b1", ZGPU_BOOL, 1},          {"int8", "|i1", "|i1", ZGPU_INT8, 1},
        {"int16", "<i2", ">i2", ZGPU_INT16, 2},        {"int32", "<i4", ">i4", ZGPU_INT32, 4},
        {"int64", "<i8", ">i8", ZGPU_INT64, 8},        {"uint8", "|u1", "|u1", ZGPU_UINT8, 1},
        {"uint16", "<u2", ">u2", ZGPU_UINT16, 2},      {"uint32", "<u4", ">u4", ZGPU_UINT32, 4},
        {"uint64", "<u8", ">u8", ZGPU_UINT64, 8},      {"float16", "<f2", ">f2", ZGPU_FLOAT16, 2},
        {"float32", "<f4", ">f4", ZGPU_FLOAT32, 4},    {"float64", "<f8", ">f8", ZGPU_FLOAT64, 8},
        {"complex64", "<c8", ">c8", ZGPU_COMPLEX64, 8}, {"complex128", "<c16", ">c16", ZGPU_COMPLEX128, 16},
        {"r24", "|V3", "|V3", ZGPU_RAW, 3},            {"r8000", "|V1000", "|V1000", ZGPU_RAW, 1000},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char buf[32];
        zgpu_dtype dt = 0;
        size_t size = 0;
        int big = -1;
        CHECK_OK(zgpu_dtype_from_name(rows[i].name, &dt, &size));
        CHECK(dt == rows[i].dt && size == rows[i].size);
        CHECK_OK(zgpu_dtype_name(rows[i].dt, rows[i].size, buf, sizeof buf));
        CHECK_STR(buf, rows[i].name);
        CHECK_OK(zgpu_dtype_typestr(rows[i].dt, rows[i].size, '<', buf, sizeof buf));
        CHECK_STR(buf, rows[i].le);
        CHECK_OK(zgpu_dtype_typestr(rows[i].dt, rows[i].size, '>', buf, sizeof buf));
        CHECK_STR(buf, rows[i].be);
        CHECK_OK(zgpu_dtype_from_typestr(rows[i].le, &dt, &size, &big));
        CHECK(dt == rows[i].dt && size == rows[i].size && big == 0);
        CHECK_OK(zgpu_dtype_from_typestr(rows[i].be, &dt, &size, &big));
        CHECK(dt == rows[i].dt && size == rows[i].size && big == (rows[i].size > 1 && rows[i].dt != ZGPU_RAW));
    }
    zgpu_dtype dt;
    size_t size;
    int big;
    CHECK_OK(zgpu_dtype_from_typestr("=f4", &dt, &size, &big));
    CHECK(dt == ZGPU_FLOAT32 && size == 4 && big == 0); /* the tests run on little-endian hosts only */
    CHECK_OK(zgpu_dtype_from_typestr(">u1", &dt, &size, &big));
    CHECK(dt == ZGPU_UINT8 && big == 0);
    char buf[32];
    CHECK_OK(zgpu_dtype_typestr(ZGPU_UINT16, 0, '=', buf, sizeof buf));
    CHECK_STR(buf, "<u2");
    CHECK_OK(zgpu_dtype_from_typestr("<M8[ns]", &dt, &size, &big)); /* datetimes are int64 counts */
    CHECK(dt == ZGPU_INT64 && size == 8 && big == 0);
    CHECK(zgpu_dtype_from_typestr("<M8[0s]", &dt, &size, &big) == ZGPU_ERR_BAD_METADATA && last_error_has("M8"));
    CHECK(zgpu_dtype_from_typestr("<U4", &dt, &size, &big) == ZGPU_ERR_UNSUPPORTED && last_error_has("unicode"));
    CHECK(zgpu_dtype_from_typestr("<u2x", &dt, &size, &big) != ZGPU_OK);
    CHECK(zgpu_dtype_from_typestr("|u2", &dt, &size, &big) == ZGPU_ERR_BAD_METADATA);
    CHECK(zgpu_dtype_from_name("string", &dt, &size) == ZGPU_ERR_UNSUPPORTED && last_error_has("'string'"));
    CHECK(zgpu_dtype_name(ZGPU_UINT16, 4, buf, sizeof buf) == ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(zgpu_dtype_name(ZGPU_RAW, 0, buf, sizeof buf) == ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(zgpu_dtype_name(ZGPU_COMPLEX128, 0, buf, 5) == ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(zgpu_dtype_typestr(ZGPU_INT8, 0, '|', buf, sizeof buf) == ZGPU_ERR_INVALID_ARGUMENT);
}

/* ---- fill values ---- */
static void test_fill_from_text(void) {
    static const struct {
        const char *text;
        zgpu_dtype dt;
        size_t size;
        int fmt;
        const char *json; /* NULL: rejected */
    } cases[] = {
        {"5", ZGPU_UINT8, 1, 3, "5"},       {"255", ZGPU_UINT8, 1, 3, "255"},  {"256", ZGPU_UINT8, 1, 3, NULL},
        {"-1", ZGPU_UINT16, 2, 3, NULL},    {"-128", ZGPU_INT8, 1, 3, "-128"}, {"128", ZGPU_INT8, 1, 3, NULL},
        {"18446744073709551615", ZGPU_UINT64, 8, 3, "18446744073709551615"},
        {"18446744073709551616", ZGPU_UINT64, 8, 3, NULL},
        {"-9223372036854775808", ZGPU_INT64, 8, 2, "-9223372036854775808"},
        {"9223372036854775808", ZGPU_INT64, 8, 2, NULL},
        {"1.5", ZGPU_FLOAT32, 4, 3, "1.5"}, {"nan", ZGPU_FLOAT64, 8, 3, "\"NaN\""},
        {"NaN", ZGPU_FLOAT32, 4, 2, "\"NaN\""}, {"NaN", ZGPU_FLOAT16, 2, 2, "\"NaN\""},
        {"-inf", ZGPU_FLOAT32, 4, 3, "\"-Infinity\""}, {"Infinity", ZGPU_FLOAT64, 8, 2, "\"Infinity\""},
        {"1.00048828125000091", ZGPU_FLOAT16, 2, 3, "1.0009765625"}, /* just above a tie: rounded once */
        {"1e3", ZGPU_FLOAT64, 8, 3, "1000.0"}, {"0.1", ZGPU_FLOAT32, 4, 3, "0.10000000149011612"},
        {"0x10", ZGPU_FLOAT64, 8, 3, NULL}, {"abc", ZGPU_FLOAT64, 8, 3, NULL}, {"1.5", ZGPU_INT32, 4, 3, NULL},
        {"true", ZGPU_BOOL, 1, 3, "true"},  {"0", ZGPU_BOOL, 1, 2, "false"},   {"yes", ZGPU_BOOL, 1, 3, NULL},
        {"1,-2", ZGPU_COMPLEX64, 8, 3, "[1.0, -2.0]"}, {"3", ZGPU_COMPLEX128, 16, 3, "[3.0, 0.0]"},
        {"nan,1", ZGPU_COMPLEX128, 16, 2, "[\"NaN\", 1.0]"}, {"1,x", ZGPU_COMPLEX64, 8, 3, NULL},
        {"7", ZGPU_RAW, 3, 3, "[7, 7, 7]"}, {"1,2,3", ZGPU_RAW, 3, 3, "[1, 2, 3]"}, {"1,2", ZGPU_RAW, 3, 3, NULL},
        {"1,2,3", ZGPU_RAW, 3, 2, "\"AQID\""}, {"300", ZGPU_RAW, 2, 3, NULL},  {"1,2,3,4", ZGPU_RAW, 3, 3, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *json = NULL;
        zgpu_status st = zgpu_fill_json_from_text(cases[i].text, cases[i].dt, cases[i].size, cases[i].fmt, &json);
        CHECK_MSG((st == ZGPU_OK) == (cases[i].json != NULL), "fill '%s' (dtype %d): status %d %s", cases[i].text,
                  (int)cases[i].dt, (int)st, zgpu_last_error());
        if (st == ZGPU_OK && cases[i].json) CHECK_STR(json, cases[i].json);
        if (st != ZGPU_OK)
            CHECK_MSG(st == ZGPU_ERR_INVALID_ARGUMENT && last_error_has(cases[i].text), "%s", zgpu_last_error());
        zgpu_free(json);
    }
}

static void test_fill_from_bytes(void) {
    char *json = NULL;
    uint16_t h = 0x3e00; /* 1.5 in IEEE half */
    CHECK_OK(zgpu_fill_json_from_bytes(&h, ZGPU_FLOAT16, 0, 3, &json));
    CHECK_STR(json, "1.5");
    zgpu_free(json);
    h = 0xfc00;
    CHECK_OK(zgpu_fill_json_from_bytes(&h, ZGPU_FLOAT16, 2, 3, &json));
    CHECK_STR(json, "\"-Infinity\"");
    zgpu_free(json);
    float cf[2] = {0.25f, NAN};
    CHECK_OK(zgpu_fill_json_from_bytes(cf, ZGPU_COMPLEX64, 8, 3, &json));
    CHECK_STR(json, "[0.25, \"NaN\"]");
    zgpu_free(json);
    uint32_t payload_nan = 0x7fc00001u; /* a NaN with payload: v3 keeps its bits, v2 cannot */
    CHECK_OK(zgpu_fill_json_from_bytes(&payload_nan, ZGPU_FLOAT32, 4, 3, &json));
    CHECK_STR(json, "\"0x7fc00001\"");
    zgpu_free(json);
    CHECK_OK(zgpu_fill_json_from_bytes(&payload_nan, ZGPU_FLOAT32, 4, 2, &json));
    CHECK_STR(json, "\"NaN\"");
    zgpu_free(json);
    double d = 0.1;
    CHECK_OK(zgpu_fill_json_from_bytes(&d, ZGPU_FLOAT64, 8, 3, &json));
    CHECK_STR(json, "0.1");
    zgpu_free(json);
    int16_t i16 = -300;
    CHECK_OK(zgpu_fill_json_from_bytes(&i16, ZGPU_INT16, 2, 2, &json));
    CHECK_STR(json, "-300");
    zgpu_free(json);
    uint64_t u64 = UINT64_MAX;
    CHECK_OK(zgpu_fill_json_from_bytes(&u64, ZGPU_UINT64, 8, 3, &json));
    CHECK_STR(json, "18446744073709551615");
    zgpu_free(json);
    const uint8_t raw[3] = {0, 0, 0};
    CHECK_OK(zgpu_fill_json_from_bytes(raw, ZGPU_RAW, 3, 2, &json));
    CHECK_STR(json, "\"AAAA\"");
    zgpu_free(json);
    /* NULL bytes: the format's default */
    CHECK_OK(zgpu_fill_json_from_bytes(NULL, ZGPU_FLOAT32, 4, 2, &json));
    CHECK_STR(json, "null");
    zgpu_free(json);
    CHECK_OK(zgpu_fill_json_from_bytes(NULL, ZGPU_BOOL, 1, 3, &json));
    CHECK_STR(json, "false");
    zgpu_free(json);
    CHECK_OK(zgpu_fill_json_from_bytes(NULL, ZGPU_RAW, 2, 3, &json));
    CHECK_STR(json, "[0, 0]");
    zgpu_free(json);
    CHECK(zgpu_fill_json_from_bytes(raw, ZGPU_INT8, 1, 4, &json) == ZGPU_ERR_INVALID_ARGUMENT && !json);
    CHECK(zgpu_fill_json_from_bytes(raw, (zgpu_dtype)99, 1, 3, &json) == ZGPU_ERR_INVALID_ARGUMENT);
}

/* ---- codec specs ---- */
static void test_codec_specs(void) {
    static const struct {
        const char *spec;
        size_t itemsize;
        const char *v3, *v2; /* v3 NULL: rejected; v2 NULL: no v2 form */
    } cases[] = {
        {"none", 4, "[]", "null"},
        {"zstd:3", 2, "[{\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}]",
         "{\"id\": \"zstd\", \"level\": 3, \"checksum\": false}"},
        {"ZSTD", 2, "[{\"name\": \"zstd\", \"configuration\": {\"level\": 0, \"checksum\": false}}]",
         "{\"id\": \"zstd\", \"level\": 0, \"checksum\": false}"},
        {"zstd:-5:checksum", 8, "[{\"name\": \"zstd\", \"configuration\": {\"level\": -5, \"checksum\": true}}]",
         "{\"id\": \"zstd\", \"level\": -5, \"checksum\": true}"},
        {"gzip", 8, "[{\"name\": \"gzip\", \"configuration\": {\"level\": 5}}]", "{\"id\": \"gzip\", \"level\": 5}"},
        {"zlib:3", 8, "[{\"name\": \"numcodecs.zlib\", \"configuration\": {\"level\": 3}}]",
         "{\"id\": \"zlib\", \"level\": 3}"},
        {"bz2", 8, "[{\"name\": \"numcodecs.bz2\", \"configuration\": {\"level\": 1}}]", "{\"id\": \"bz2\", "
         "\"level\": 1}"},
        {"lz4:2", 8, "[{\"name\": \"numcodecs.lz4\", \"configuration\": {\"acceleration\": 2}}]",
         "{\"id\": \"lz4\", \"acceleration\": 2}"},
        {"blosc:lz4:7:bitshuffle", 4,
         "[{\"name\": \"blosc\", \"configuration\": {\"typesize\": 4, \"cname\": \"lz4\", \"clevel\": 7, \"shuffle\": "
         "\"bitshuffle\", \"blocksize\": 0}}]",
         "{\"id\": \"blosc\", \"cname\": \"lz4\", \"clevel\": 7, \"shuffle\": 2, \"blocksize\": 0}"},
        {"blosc:lz4:5:shuffle", 4,
         "[{\"name\": \"blosc\", \"configuration\": {\"typesize\": 4, \"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": "
         "\"shuffle\", \"blocksize\": 0}}]",
         "{\"id\": \"blosc\", \"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": 1, \"blocksize\": 0}"},
        {"blosc", 1,
         "[{\"name\": \"blosc\", \"configuration\": {\"typesize\": 1, \"cname\": \"zstd\", \"clevel\": 5, \"shuffle\": "
         "\"bitshuffle\", \"blocksize\": 0}}]",
         "{\"id\": \"blosc\", \"cname\": \"zstd\", \"clevel\": 5, \"shuffle\": 2, \"blocksize\": 0}"},
        {"blosc:blosclz:0:0", 8,
         "[{\"name\": \"blosc\", \"configuration\": {\"typesize\": 8, \"cname\": \"blosclz\", \"clevel\": 0, "
         "\"shuffle\": "
         "\"noshuffle\", \"blocksize\": 0}}]",
         "{\"id\": \"blosc\", \"cname\": \"blosclz\", \"clevel\": 0, \"shuffle\": 0, \"blocksize\": 0}"},
        {"zstd:1+crc32c", 4,
         "[{\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": false}}, "
         "{\"name\": \"crc32c\"}]", NULL},
        {"none+crc32c", 4, "[{\"name\": \"crc32c\"}]", NULL},
        {"+crc32c", 4, "[{\"name\": \"crc32c\"}]", NULL},
        {"crc32c", 4, "[{\"name\": \"crc32c\"}]", NULL},
        {"zstd:23", 4, NULL, NULL},       {"zstd:x", 4, NULL, NULL},        {"zstd:1:maybe", 4, NULL, NULL},
        {"gzip:10", 4, NULL, NULL},       {"gzip:1:2", 4, NULL, NULL},      {"bz2:0", 4, NULL, NULL},
        {"lz4:0", 4, NULL, NULL},         {"blosc:foo", 4, NULL, NULL},     {"blosc:lz4:10", 4, NULL, NULL},
        {"blosc:lz4:5:twice", 4, NULL, NULL}, {"blosc:lz4:5:shuffle:1", 4, NULL, NULL},
        {"zstd+crc", 4, NULL, NULL},      {"none:1", 4, NULL, NULL},        {"brotli", 4, NULL, NULL},
        {"", 4, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *json = NULL;
        zgpu_status st = zgpu_codec_spec_json(cases[i].spec, ZGPU_RAW, cases[i].itemsize, 3, &json);
        CHECK_MSG((st == ZGPU_OK) == (cases[i].v3 != NULL), "codec '%s': status %d (%s)", cases[i].spec, (int)st,
                  zgpu_last_error());
        if (st != ZGPU_OK) {
            CHECK_MSG(st == ZGPU_ERR_INVALID_ARGUMENT, "codec '%s': status %d", cases[i].spec, (int)st);
            continue;
        }
        CHECK_STR(json, cases[i].v3);
        zgpu_free(json);
        json = NULL;
        st = zgpu_codec_spec_json(cases[i].spec, ZGPU_RAW, cases[i].itemsize, 2, &json);
        if (cases[i].v2) {
            CHECK_MSG(st == ZGPU_OK, "codec '%s' v2: %s", cases[i].spec, zgpu_last_error());
            CHECK_STR(json, cases[i].v2);
        } else {
            CHECK_MSG(st == ZGPU_ERR_UNSUPPORTED && last_error_has("crc32c"), "codec '%s' must have no v2 form",
                      cases[i].spec);
        }
        zgpu_free(json);
    }
    char *json = NULL;
    CHECK(zgpu_codec_spec_json("blosc:lz4:10", ZGPU_UINT16, 2, 3, &json) == ZGPU_ERR_INVALID_ARGUMENT &&
          last_error_has("clevel '10'"));
    CHECK(zgpu_codec_spec_json("brotli", ZGPU_UINT16, 2, 3, &json) == ZGPU_ERR_INVALID_ARGUMENT &&
          last_error_has("unknown codec 'brotli'"));
    CHECK(zgpu_codec_spec_json("zstd", ZGPU_UINT16, 4, 3, &json) == ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(zgpu_codec_spec_json("zstd", ZGPU_UINT16, 2, 1, &json) == ZGPU_ERR_INVALID_ARGUMENT);
}

static void test_codec_conversions(void) {
    static const struct { const char *in, *out; size_t itemsize; } to_v3[] = {
        {"[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}},"
         "{\"name\":\"numcodecs.zstd\",\"configuration\":{\"level\":3}}]",
         "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}, {\"name\": \"zstd\", \"configuration\": "
         "{\"level\": 3, \"checksum\": false}}]", 8},
        {"[{\"name\":\"bytes\"},{\"name\":\"numcodecs.blosc\",\"configuration\":{\"cname\":\"zstd\",\"clevel\":2,"
         "\"shuffle\":-1,\"blocksize\":0}}]",
         "[{\"name\": \"bytes\"}, {\"name\": \"blosc\", \"configuration\": {\"typesize\": 1, \"cname\": \"zstd\", "
         "\"clevel\": 2, \"shuffle\": \"bitshuffle\", \"blocksize\": 0}}]", 1},
        {"[{\"name\":\"numcodecs.gzip\",\"configuration\":{\"level\":4}},"
         "{\"name\":\"numcodecs.zlib\",\"configuration\":{\"level\":1}}]",
         "[{\"name\": \"gzip\", \"configuration\": {\"level\": 4}}, {\"name\": \"numcodecs.zlib\", \"configuration\": "
         "{\"level\": 1}}]", 4},
        /* a configuration the standard codec refuses is kept: opening the array says why */
        {"[{\"name\":\"numcodecs.blosc\",\"configuration\":{\"shuffle\":7}}]",
         "[{\"name\": \"numcodecs.blosc\", \"configuration\": {\"shuffle\": 7}}]", 4},
        {"[]", "[]", 4},
    };
    for (size_t i = 0; i < sizeof to_v3 / sizeof to_v3[0]; i++) {
        char *json = NULL;
        CHECK_MSG(zgpu_codecs_v2_to_v3(to_v3[i].in, to_v3[i].itemsize, &json) == ZGPU_OK, "v2->v3 case %zu: %s", i,
                  zgpu_last_error());
        CHECK_STR(json, to_v3[i].out);
        zgpu_free(json);
    }
    char *json = NULL;
    CHECK(zgpu_codecs_v2_to_v3("[{\"name\":1}]", 4, &json) == ZGPU_ERR_INVALID_ARGUMENT && last_error_has("name"));
    CHECK(zgpu_codecs_v2_to_v3("[{\"name\":\"x\"", 4, &json) == ZGPU_ERR_BAD_METADATA && !json);
    CHECK(zgpu_codecs_v2_to_v3("{}", 4, &json) == ZGPU_ERR_INVALID_ARGUMENT && last_error_has("not a JSON list"));

    static const struct { const char *v3, *v2; } to_v2[] = {
        {"[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]", "null"},
        {"[{\"name\": \"bytes\"}, {\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}]",
         "{\"id\": \"zstd\", \"level\": 3, \"checksum\": false}"},
        {"[{\"name\":\"bytes\"},{\"name\":\"numcodecs.zlib\",\"configuration\":{\"level\":4}}]",
         "{\"id\": \"zlib\", \"level\": 4}"},
        {"[{\"name\":\"bytes\"},{\"name\":\"blosc\",\"configuration\":{\"cname\":\"lz4\",\"clevel\":5,"
         "\"shuffle\":\"bitshuffle\",\"typesize\":4,\"blocksize\":0}}]",
         "{\"id\": \"blosc\", \"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": 2, \"blocksize\": 0}"},
        {"[{\"name\":\"bytes\"},{\"name\":\"gzip\",\"configuration\":{}}]", "{\"id\": \"gzip\", \"level\": 5}"},
        {"[{\"name\":\"bytes\"},{\"name\":\"zstd\"},{\"name\":\"crc32c\"}]", NULL},
        {"[{\"name\":\"transpose\",\"configuration\":{\"order\":[1,0]}},{\"name\":\"bytes\"}]", NULL},
        {"[{\"name\":\"bytes\"},{\"name\":\"crc32c\"}]", NULL},
        {"[{\"name\":\"bytes\"", NULL},
    };
    for (size_t i = 0; i < sizeof to_v2 / sizeof to_v2[0]; i++) {
        json = NULL;
        zgpu_status st = zgpu_codecs_v3_to_v2(to_v2[i].v3, &json);
        if (to_v2[i].v2) {
            CHECK_MSG(st == ZGPU_OK, "v3->v2 case %zu: %s", i, zgpu_last_error());
            CHECK_STR(json, to_v2[i].v2);
        } else {
            CHECK_MSG(st != ZGPU_OK && !json, "v3->v2 case %zu must fail", i);
        }
        zgpu_free(json);
    }
    CHECK(zgpu_codecs_v3_to_v2("[{\"name\":\"bytes\"},{\"name\":\"zstd\"},{\"name\":\"crc32c\"}]", &json) ==
              ZGPU_ERR_UNSUPPORTED &&
          last_error_has("'zstd' and 'crc32c'"));
    CHECK(zgpu_codecs_v3_to_v2("[{\"name\":\"bytes\"},{\"name\":\"crc32c\"}]", &json) == ZGPU_ERR_UNSUPPORTED &&
          last_error_has("'crc32c' has no Zarr v2 form"));
}

/* ---- default chunks ---- */
static void test_default_chunks(void) {
    uint64_t ch[3];
    const uint64_t small[2] = {1000, 1000}; /* 4 MB of float32: one chunk */
    zgpu_default_chunks(2, small, 4, NULL, 0, ch);
    CHECK(ch[0] == 1000 && ch[1] == 1000);
    const uint64_t big[2] = {10000, 10000}; /* 400 MB */
    zgpu_default_chunks(2, big, 4, NULL, 0, ch);
    uint64_t bytes = ch[0] * ch[1] * 4;
    CHECK_MSG(bytes <= (4u << 20) && bytes >= (1u << 20), "chunks %llu x %llu", (unsigned long long)ch[0],
              (unsigned long long)ch[1]);
    const uint64_t tall[3] = {100000000, 1, 1}; /* 800 MB in one long axis */
    zgpu_default_chunks(3, tall, 8, NULL, 0, ch);
    CHECK(ch[1] == 1 && ch[2] == 1 && ch[0] * 8 <= (4u << 20) && ch[0] * 8 >= (1u << 20));
    const uint64_t zero[2] = {0, 7};
    zgpu_default_chunks(2, zero, 4, NULL, 0, ch);
    CHECK(ch[0] == 1 && ch[1] == 7);
    const uint64_t shard[2] = {3000, 2048}; /* inside shards every extent divides the shard */
    zgpu_default_chunks(2, big, 4, shard, 0, ch);
    CHECK(shard[0] % ch[0] == 0 && shard[1] % ch[1] == 0 && ch[0] * ch[1] * 4 <= (4u << 20));
    const uint64_t prime_shard[2] = {7919, 7907}; /* primes: only 1 or the whole extent divide */
    zgpu_default_chunks(2, big, 4, prime_shard, 0, ch);
    CHECK(ch[0] * ch[1] * 4 <= (4u << 20) && 7919 % ch[0] == 0 && 7907 % ch[1] == 0);
    /* another target: 1 MiB chunks, arrays under 4 MiB whole */
    zgpu_default_chunks(2, big, 4, NULL, 1u << 20, ch);
    CHECK(ch[0] * ch[1] * 4 <= (1u << 20) && ch[0] * ch[1] * 4 >= (256u << 10));
    const uint64_t mid[2] = {1000, 500}; /* 2 MB */
    zgpu_default_chunks(2, mid, 4, NULL, 1u << 20, ch);
    CHECK(ch[0] == 1000 && ch[1] == 500);
}

/* ---- whole documents ---- */
static char g_dir[256];

/* The document is accepted by zgpu_array_create and reads back with the same metadata. */
static void check_creates(const char *doc, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    zgpu_context *ctx = NULL;
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_context_create(NULL, &ctx));
    CHECK_MSG(zgpu_array_create(ctx, path, doc, 1, &a) == ZGPU_OK, "%s: %s", name, zgpu_last_error());
    zgpu_array_close(a);
    zgpu_context_free(ctx);
}

static zgpu_array_spec spec_init(int fmt, int ndim, const uint64_t *shape, zgpu_dtype dt, size_t itemsize) {
    zgpu_array_spec s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    s.zarr_format = fmt;
    s.ndim = ndim;
    s.shape = shape;
    s.dtype = dt;
    s.itemsize = itemsize;
    return s;
}

static void test_documents(void) {
    const uint64_t shape[2] = {100, 50}, chunks[2] = {10, 25}, shards[2] = {50, 50};
    zgpu_array_spec s = spec_init(3, 2, shape, ZGPU_UINT16, 2);
    s.chunks = chunks;
    s.codec_spec = "zstd:3";
    s.attributes = "{\"a\":1}";
    char *m = NULL;
    CHECK_OK(zgpu_metadata_build(&s, &m));
    CHECK_STR(m, "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [100, 50], \"data_type\": \"uint16\", "
                 "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [10, 25]}}, "
                 "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, "
                 "\"fill_value\": 0, \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
                 "{\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}], "
                 "\"attributes\": {\"a\": 1}}");
    check_creates(m, "v3_zstd");
    zgpu_free(m);

    /* sharded: the chunk grid is the shard shape, the inner chunks sit in the sharding codec */
    s.shards = shards;
    s.attributes = NULL;
    s.fill_value = "7";
    s.dimension_names = "[\"y\", null]";
    s.big_endian = 1;
    CHECK_OK(zgpu_metadata_build(&s, &m));
    CHECK_STR(m, "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [100, 50], \"data_type\": \"uint16\", "
                 "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [50, 50]}}, "
                 "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, "
                 "\"fill_value\": 7, \"codecs\": [{\"name\": \"sharding_indexed\", "
                 "\"configuration\": {\"chunk_shape\": "
                 "[10, 25], \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}, "
                 "{\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}], \"index_codecs\": "
                 "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], "
                 "\"index_location\": \"end\"}}], \"dimension_names\": [\"y\", null]}");
    check_creates(m, "v3_sharded");
    zgpu_free(m);
    s.big_endian = 0;

    /* an explicit chain: strings are codec specs, bytes->bytes objects get their defaults, `bytes` is inserted
     * after the array->array codecs when the list has no serializer */
    s.shards = NULL;
    s.dimension_names = NULL;
    s.codecs = "[{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}, {\"name\": \"blosc\"}, "
               "\"+crc32c\"]";
    CHECK_OK(zgpu_metadata_build(&s, &m));
    CHECK(m && strstr(m, "\"codecs\": [{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}, {\"name\": "
                         "\"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"blosc\", "
                         "\"configuration\": {\"typesize\": 2, \"cname\": \"zstd\", \"clevel\": 5, \"shuffle\": "
                         "\"shuffle\", \"blocksize\": 0}}, {\"name\": \"crc32c\"}]"));
    check_creates(m, "v3_chain");
    zgpu_free(m);
    s.codecs = "[{\"name\": \"bytes\"}, {\"name\": \"crc32c\"}]"; /* a serializer given: kept as it is */
    CHECK_OK(zgpu_metadata_build(&s, &m));
    CHECK(m && strstr(m, "\"codecs\": [{\"name\": \"bytes\"}, {\"name\": \"crc32c\"}]"));
    zgpu_free(m);
    s.codecs = "[{\"id\": \"zstd\"}]";
    CHECK(zgpu_metadata_build(&s, &m) == ZGPU_ERR_INVALID_ARGUMENT && last_error_has("Zarr v2 form") && !m);
    s.codecs = "[{\"name\": \"zstd\", \"configuration\": {\"level\": 99}}]";
    CHECK(zgpu_metadata_build(&s, &m) != ZGPU_OK && last_error_has("level"));
    s.codecs = "[\"brotli\"]";
    CHECK(zgpu_metadata_build(&s, &m) == ZGPU_ERR_INVALID_ARGUMENT && last_error_has("brotli"));
    s.codecs = NULL;

    /* 1-byte types write the bytes codec without an endian; default chunks */
    const uint64_t five[1] = {5};
    zgpu_array_spec b = spec_init(3, 1, five, ZGPU_BOOL, 0);
    CHECK_OK(zgpu_metadata_build(&b, &m));
    CHECK(m && strstr(m, "\"data_type\": \"bool\"") && strstr(m, "\"fill_value\": false") &&
          strstr(m, "\"chunk_shape\": [5]") && strstr(m, "\"codecs\": [{\"name\": \"bytes\"}]"));
    zgpu_free(m);

    /* v2 */
    const uint64_t shape3[3] = {4, 5, 6}, chunks3[3] = {2, 5, 3};
    zgpu_array_spec c = spec_init(2, 3, shape3, ZGPU_FLOAT32, 4);
    c.chunks = chunks3;
    c.codec_spec = "blosc:lz4:5:shuffle";
    c.fill_value = "\"NaN\"";
    c.attributes = "{}";
    CHECK_OK(zgpu_metadata_build(&c, &m));
    CHECK_STR(m, "{\"zarr_format\": 2, \"shape\": [4, 5, 6], \"chunks\": [2, 5, 3], \"dtype\": \"<f4\", "
                 "\"compressor\": {\"id\": \"blosc\", \"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": 1, "
                 "\"blocksize\": 0}, "
                 "\"fill_value\": \"NaN\", \"order\": \"C\", \"filters\": null, \"dimension_separator\": \".\", "
                 "\"attributes\": {}}");
    check_creates(m, "v2_blosc");
    zgpu_free(m);
    c.order = 'F';
    c.separator = '/';
    c.big_endian = 1;
    c.codec_spec = NULL;
    c.v2_compressor = "{\"id\": \"zlib\", \"level\": 1}";
    c.v2_filters = "[{\"id\": \"delta\", \"dtype\": \">f4\"}]";
    c.fill_value = NULL;
    CHECK_OK(zgpu_metadata_build(&c, &m));
    CHECK(m && strstr(m, "\"dtype\": \">f4\", \"compressor\": {\"id\": \"zlib\", \"level\": 1}, \"fill_value\": null, "
                         "\"order\": \"F\", \"filters\": [{\"id\": \"delta\", \"dtype\": \">f4\"}], "
                         "\"dimension_separator\": \"/\""));
    check_creates(m, "v2_f_delta");
    zgpu_free(m);
    c.v2_compressor = NULL;
    c.v2_filters = NULL;
    c.codec_spec = "zstd+crc32c";
    CHECK(zgpu_metadata_build(&c, &m) == ZGPU_ERR_UNSUPPORTED && last_error_has("crc32c"));
    c.codec_spec = NULL;
    c.shards = chunks3;
    CHECK(zgpu_metadata_build(&c, &m) == ZGPU_ERR_INVALID_ARGUMENT && last_error_has("sharding"));
    c.shards = NULL;
    c.zarr_format = 4;
    CHECK(zgpu_metadata_build(&c, &m) == ZGPU_ERR_INVALID_ARGUMENT && last_error_has("zarr_format 4"));
    c.zarr_format = 2;
    c.attributes = "[1]";
    CHECK(zgpu_metadata_build(&c, &m) == ZGPU_ERR_INVALID_ARGUMENT && last_error_has("attributes must be an object"));
    c.attributes = "{";
    CHECK(zgpu_metadata_build(&c, &m) == ZGPU_ERR_INVALID_ARGUMENT && last_error_has("attributes"));
    c.attributes = NULL;

    /* bad shapes and members */
    const uint64_t bad_shards[2] = {50, 40};
    s.shards = bad_shards;
    CHECK(zgpu_metadata_build(&s, &m) == ZGPU_ERR_INVALID_ARGUMENT && last_error_has("not a multiple"));
    s.shards = NULL;
    s.dimension_names = "[\"y\"]";
    CHECK(zgpu_metadata_build(&s, &m) == ZGPU_ERR_INVALID_ARGUMENT && last_error_has("1 entries"));
    s.dimension_names = NULL;
    s.struct_size = 8;
    CHECK(zgpu_metadata_build(&s, &m) == ZGPU_ERR_INVALID_ARGUMENT && last_error_has("struct_size"));
    s.struct_size = sizeof s;
    s.dtype = ZGPU_RAW;
    s.itemsize = 0;
    CHECK(zgpu_metadata_build(&s, &m) == ZGPU_ERR_INVALID_ARGUMENT && last_error_has("data type"));

    /* raw types: default fill values in both formats */
    const uint64_t three[1] = {3};
    zgpu_array_spec d = spec_init(2, 1, three, ZGPU_RAW, 3);
    CHECK_OK(zgpu_metadata_build(&d, &m));
    CHECK(m && strstr(m, "\"dtype\": \"|V3\"") && strstr(m, "\"fill_value\": null") &&
          strstr(m, "\"compressor\": null"));
    check_creates(m, "v2_raw");
    zgpu_free(m);
    d.zarr_format = 3;
    CHECK_OK(zgpu_metadata_build(&d, &m));
    CHECK(m && strstr(m, "\"data_type\": \"r24\"") && strstr(m, "\"fill_value\": [0, 0, 0]"));
    check_creates(m, "v3_raw");
    zgpu_free(m);
    /* a scalar array */
    zgpu_array_spec z = spec_init(3, 0, NULL, ZGPU_FLOAT64, 8);
    CHECK_OK(zgpu_metadata_build(&z, &m));
    CHECK(m && strstr(m, "\"shape\": []") && strstr(m, "\"chunk_shape\": []"));
    check_creates(m, "v3_scalar");
    zgpu_free(m);
}

/* ---- statuses and struct layouts ---- */
static void test_status_and_abi(void) {
    CHECK(ZGPU_ERR_INVALID_ARGUMENT == 1 && ZGPU_ERR_INTERNAL == 12 && ZGPU_STATUS_COUNT == 13);
    CHECK_STR(zgpu_status_name(ZGPU_OK), "ZGPU_OK");
    CHECK_STR(zgpu_status_name(ZGPU_ERR_CORRUPT_DATA), "ZGPU_ERR_CORRUPT_DATA");
    CHECK_STR(zgpu_status_name((zgpu_status)99), "ZGPU_ERR_UNKNOWN");
    CHECK_STR(zgpu_status_message((zgpu_status)99), "unknown status");
    for (int i = 0; i < ZGPU_STATUS_COUNT; i++)
        CHECK(strlen(zgpu_status_message((zgpu_status)i)) > 5 && !strchr(zgpu_status_message((zgpu_status)i), '\n'));
    CHECK(zgpu_max_dims() == ZGPU_MAX_DIMS);
    CHECK(zgpu_struct_size("zgpu_context_options") == sizeof(zgpu_context_options));
    CHECK(zgpu_struct_size("zgpu_read_stats") == sizeof(zgpu_read_stats));
    CHECK(zgpu_struct_size("zgpu_array_spec") == sizeof(zgpu_array_spec));
    CHECK(zgpu_struct_size("zgpu_tuning") > 0);
    CHECK(zgpu_struct_size("nope") == 0 && zgpu_struct_size(NULL) == 0);
    CHECK(zgpu_struct_offset("zgpu_read_stats", "cpu_decoded") == (long)offsetof(zgpu_read_stats, cpu_decoded));
    CHECK(zgpu_struct_offset("zgpu_array_spec", "order") == (long)offsetof(zgpu_array_spec, order));
    CHECK(zgpu_struct_offset("zgpu_read_stats", "nope") == -1 && zgpu_struct_offset("nope", "struct_size") == -1);
}

int main(void) {
    uint16_t probe = 1;
    if (*(uint8_t *)&probe != 1) TEST_SKIP("the expected typestrings assume a little-endian host");
    snprintf(g_dir, sizeof g_dir, "/tmp/zgpu_test_meta_build_%d", (int)getpid());
    test_dtypes();
    test_fill_from_text();
    test_fill_from_bytes();
    test_codec_specs();
    test_codec_conversions();
    test_default_chunks();
    test_documents();
    test_status_and_abi();
    zt_remove_dir(g_dir);
    TEST_MAIN_END();
}
