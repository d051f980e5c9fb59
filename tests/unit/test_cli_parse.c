/* Unit tests of the zgpu command's parsers: regions, codec specs, metadata documents, fill values,
 * .npy headers and input conversion (byte order, Fortran order), option scanning, slab sizing. */
#include <math.h>
#include <unistd.h>
#include "test.h"

#include "../../cli/util.c"
#include "../../cli/region.c"
#include "../../cli/dtype.c"
#include "../../cli/meta.c"
#include "../../cli/npy.c"
#include "../../cli/args.c"
#include "../../cli/cudart.c"

/* ---- regions ---- */
typedef struct region_case {
    const char *spec;
    int ok;
    uint64_t start[4], count[4];
} region_case;

static void test_regions(void) {
    const uint64_t shape[4] = {10, 20, 30, 40};
    static const region_case cases[] = {
        {NULL, 1, {0, 0, 0, 0}, {10, 20, 30, 40}},
        {"", 1, {0, 0, 0, 0}, {10, 20, 30, 40}},
        {"0:10,5:,:,3", 1, {0, 5, 0, 3}, {10, 15, 30, 1}},
        {"2:5", 1, {2, 0, 0, 0}, {3, 20, 30, 40}},
        {"-3:", 1, {7, 0, 0, 0}, {3, 20, 30, 40}},
        {":-1", 1, {0, 0, 0, 0}, {9, 20, 30, 40}},
        {"-1", 1, {9, 0, 0, 0}, {1, 20, 30, 40}},
        {"-10,-20", 1, {0, 0, 0, 0}, {1, 1, 30, 40}},
        {"3:3", 1, {3, 0, 0, 0}, {0, 20, 30, 40}},
        {" 1 : 4 , -5 : -2 ", 1, {1, 15, 0, 0}, {3, 3, 30, 40}},
        {":,:,:,39", 1, {0, 0, 0, 39}, {10, 20, 30, 1}},
        {"-10:10", 1, {0, 0, 0, 0}, {10, 20, 30, 40}},
        {"10:", 1, {10, 0, 0, 0}, {0, 20, 30, 40}},
        {"-11", 0, {0}, {0}},
        {"10", 0, {0}, {0}},
        {"0:11", 0, {0}, {0}},
        {"11:", 0, {0}, {0}},
        {"-11:", 0, {0}, {0}},
        {"5:3", 0, {0}, {0}},
        {"-2:-5", 0, {0}, {0}},
        {"1:2:3", 0, {0}, {0}},
        {"::2", 0, {0}, {0}},
        {"a", 0, {0}, {0}},
        {"1,,2", 0, {0}, {0}},
        {"1,", 0, {0}, {0}},
        {"0x1", 0, {0}, {0}},
        {"1.5", 0, {0}, {0}},
        {"0,0,0,0,0", 0, {0}, {0}},
        {"99999999999999999999", 0, {0}, {0}},
        {"-9223372036854775808", 0, {0}, {0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const region_case *c = &cases[i];
        uint64_t start[4], count[4];
        int rc = cli_parse_region(c->spec, 4, shape, start, count);
        CHECK_MSG((rc == 0) == c->ok, "region '%s': rc %d (%s)", c->spec ? c->spec : "(null)", rc, cli_errmsg());
        if (rc == 0 && c->ok)
            for (int k = 0; k < 4; k++) {
                CHECK_MSG(start[k] == c->start[k] && count[k] == c->count[k], "region '%s' axis %d: %llu+%llu",
                          c->spec ? c->spec : "(null)", k, (unsigned long long)start[k], (unsigned long long)count[k]);
            }
    }
    /* error messages name the axis and the problem */
    uint64_t s[4], n[4];
    CHECK(cli_parse_region("0,25", 4, shape, s, n) == -1);
    CHECK(strstr(cli_errmsg(), "axis 1") && strstr(cli_errmsg(), "out of range"));
    CHECK(cli_parse_region("1:2:3", 4, shape, s, n) == -1 && strstr(cli_errmsg(), "steps"));
    /* 0-d arrays take only the empty selection */
    CHECK(cli_parse_region("", 0, shape, s, n) == 0);
    CHECK(cli_parse_region("0", 0, shape, s, n) == -1);
    /* zero-length axis: ':' and '0:0' fine, an index is not */
    const uint64_t zshape[1] = {0};
    CHECK(cli_parse_region(":", 1, zshape, s, n) == 0 && n[0] == 0);
    CHECK(cli_parse_region("0:0", 1, zshape, s, n) == 0 && n[0] == 0);
    CHECK(cli_parse_region("0", 1, zshape, s, n) == -1);
    CHECK(cli_parse_region("-1", 1, zshape, s, n) == -1);
}

/* ---- codec specs ---- */
typedef struct codec_case {
    const char *spec;
    size_t itemsize;
    const char *v3; /* NULL: spec must be rejected */
    const char *v2; /* NULL: no v2 form */
} codec_case;

static void test_codec_specs(void) {
    static const codec_case cases[] = {
        {"none", 4, "", "null"},
        {"zstd", 4, "{\"name\":\"zstd\",\"configuration\":{\"level\":0,\"checksum\":false}}", "{\"id\":\"zstd\",\"level\":0}"},
        {"zstd:5", 4, "{\"name\":\"zstd\",\"configuration\":{\"level\":5,\"checksum\":false}}", "{\"id\":\"zstd\",\"level\":5}"},
        {"zstd:-3:checksum", 4, "{\"name\":\"zstd\",\"configuration\":{\"level\":-3,\"checksum\":true}}",
         "{\"id\":\"zstd\",\"level\":-3,\"checksum\":true}"},
        {"gzip", 2, "{\"name\":\"gzip\",\"configuration\":{\"level\":5}}", "{\"id\":\"gzip\",\"level\":5}"},
        {"gzip:9", 2, "{\"name\":\"gzip\",\"configuration\":{\"level\":9}}", "{\"id\":\"gzip\",\"level\":9}"},
        {"zlib:3", 8, "{\"name\":\"numcodecs.zlib\",\"configuration\":{\"level\":3}}", "{\"id\":\"zlib\",\"level\":3}"},
        {"bz2", 8, "{\"name\":\"numcodecs.bz2\",\"configuration\":{\"level\":1}}", "{\"id\":\"bz2\",\"level\":1}"},
        {"lz4:2", 8, "{\"name\":\"numcodecs.lz4\",\"configuration\":{\"acceleration\":2}}",
         "{\"id\":\"lz4\",\"acceleration\":2}"},
        {"blosc:lz4:7:bitshuffle", 4,
         "{\"name\":\"blosc\",\"configuration\":{\"cname\":\"lz4\",\"clevel\":7,\"shuffle\":\"bitshuffle\",\"typesize\":4,\"blocksize\":0}}",
         "{\"id\":\"blosc\",\"cname\":\"lz4\",\"clevel\":7,\"shuffle\":2,\"blocksize\":0}"},
        {"blosc:zstd", 2,
         "{\"name\":\"blosc\",\"configuration\":{\"cname\":\"zstd\",\"clevel\":5,\"shuffle\":\"shuffle\",\"typesize\":2,\"blocksize\":0}}",
         "{\"id\":\"blosc\",\"cname\":\"zstd\",\"clevel\":5,\"shuffle\":1,\"blocksize\":0}"},
        {"blosc", 1,
         "{\"name\":\"blosc\",\"configuration\":{\"cname\":\"zstd\",\"clevel\":5,\"shuffle\":\"bitshuffle\",\"typesize\":1,\"blocksize\":0}}",
         "{\"id\":\"blosc\",\"cname\":\"zstd\",\"clevel\":5,\"shuffle\":2,\"blocksize\":0}"},
        {"blosc:blosclz:0:noshuffle", 8,
         "{\"name\":\"blosc\",\"configuration\":{\"cname\":\"blosclz\",\"clevel\":0,\"shuffle\":\"noshuffle\",\"typesize\":8,\"blocksize\":0}}",
         "{\"id\":\"blosc\",\"cname\":\"blosclz\",\"clevel\":0,\"shuffle\":0,\"blocksize\":0}"},
        {"zstd:1+crc32c", 4, "{\"name\":\"zstd\",\"configuration\":{\"level\":1,\"checksum\":false}},{\"name\":\"crc32c\"}", NULL},
        {"none+crc32c", 4, "{\"name\":\"crc32c\"}", NULL},
        {"zstd:23", 4, NULL, NULL},
        {"zstd:x", 4, NULL, NULL},
        {"zstd:1:maybe", 4, NULL, NULL},
        {"gzip:10", 4, NULL, NULL},
        {"gzip:1:2", 4, NULL, NULL},
        {"bz2:0", 4, NULL, NULL},
        {"lz4:0", 4, NULL, NULL},
        {"blosc:foo", 4, NULL, NULL},
        {"blosc:lz4:10", 4, NULL, NULL},
        {"blosc:lz4:5:twice", 4, NULL, NULL},
        {"blosc:lz4:5:shuffle:1", 4, NULL, NULL},
        {"zstd+crc", 4, NULL, NULL},
        {"none:1", 4, NULL, NULL},
        {"brotli", 4, NULL, NULL},
        {"", 4, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const codec_case *c = &cases[i];
        cli_codec_spec spec;
        int rc = cli_parse_codec_spec(c->spec, &spec);
        CHECK_MSG((rc == 0) == (c->v3 != NULL), "codec '%s': rc %d (%s)", c->spec, rc, cli_errmsg());
        if (rc != 0 || !c->v3) continue;
        cli_sb sb = {0};
        CHECK(cli_codec_v3_json(&spec, c->itemsize, &sb) == 0);
        CHECK_STR(sb.p ? sb.p : "", c->v3);
        cli_sb_free(&sb);
        rc = cli_codec_v2_json(&spec, c->itemsize, &sb);
        if (c->v2) {
            CHECK_MSG(rc == 0, "codec '%s' v2: %s", c->spec, cli_errmsg());
            CHECK_STR(sb.p ? sb.p : "", c->v2);
        } else {
            CHECK_MSG(rc == -1, "codec '%s' must have no v2 form", c->spec);
        }
        cli_sb_free(&sb);
    }
}

/* ---- metadata documents ---- */
static void test_metadata(void) {
    cli_codec_spec zstd;
    CHECK(cli_parse_codec_spec("zstd:3", &zstd) == 0);
    cli_array_spec a = {.zarr_format = 3, .ndim = 2, .shape = {100, 50}, .chunks = {10, 25}, .dtype = ZGPU_UINT16,
                        .itemsize = 2, .codec = &zstd, .attributes = "{\"a\":1}"};
    char *m = NULL;
    CHECK(cli_build_metadata(&a, &m) == 0);
    CHECK_STR(m, "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[100,50],\"data_type\":\"uint16\","
                 "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[10,25]}},"
                 "\"chunk_key_encoding\":{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}},"
                 "\"fill_value\":0,\"codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},"
                 "{\"name\":\"zstd\",\"configuration\":{\"level\":3,\"checksum\":false}}],\"attributes\":{\"a\":1}}");
    free(m);

    /* sharded: the chunk grid is the shard shape, the inner chunks sit in the sharding codec */
    a.sharded = 1;
    a.shards[0] = 50;
    a.shards[1] = 50;
    a.attributes = NULL;
    a.fill_value = "7";
    a.dimension_names = "[\"y\",\"x\"]";
    CHECK(cli_build_metadata(&a, &m) == 0);
    CHECK_STR(m, "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[100,50],\"data_type\":\"uint16\","
                 "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[50,50]}},"
                 "\"chunk_key_encoding\":{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}},"
                 "\"fill_value\":7,\"codecs\":[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[10,25],"
                 "\"codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},"
                 "{\"name\":\"zstd\",\"configuration\":{\"level\":3,\"checksum\":false}}],"
                 "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},{\"name\":\"crc32c\"}],"
                 "\"index_location\":\"end\"}}],\"dimension_names\":[\"y\",\"x\"]}");
    free(m);

    /* sharded with a raw inner chain (cp keeps the source's) */
    a.v3_chunk_codecs = "[{\"name\":\"bytes\"}]";
    a.dimension_names = NULL;
    CHECK(cli_build_metadata(&a, &m) == 0);
    CHECK(m && strstr(m, "\"chunk_shape\":[10,25],\"codecs\":[{\"name\":\"bytes\"}],\"index_codecs\""));
    free(m);
    /* unsharded raw chain is spliced into the list */
    a.sharded = 0;
    a.v3_chunk_codecs = " [{\"name\":\"bytes\"}, {\"name\":\"crc32c\"}] ";
    CHECK(cli_build_metadata(&a, &m) == 0);
    CHECK(m && strstr(m, "\"codecs\":[{\"name\":\"bytes\"}, {\"name\":\"crc32c\"}]}"));
    free(m);

    /* 1-byte types write the bytes codec without an endian */
    cli_codec_spec none;
    CHECK(cli_parse_codec_spec("none", &none) == 0);
    cli_array_spec b = {.zarr_format = 3, .ndim = 1, .shape = {5}, .chunks = {5}, .dtype = ZGPU_BOOL, .itemsize = 1,
                        .codec = &none};
    CHECK(cli_build_metadata(&b, &m) == 0);
    CHECK(m && strstr(m, "\"data_type\":\"bool\"") && strstr(m, "\"fill_value\":false") &&
          strstr(m, "\"codecs\":[{\"name\":\"bytes\"}]"));
    free(m);

    /* v2 */
    cli_codec_spec blosc;
    CHECK(cli_parse_codec_spec("blosc:lz4:5:shuffle", &blosc) == 0);
    cli_array_spec c = {.zarr_format = 2, .ndim = 3, .shape = {4, 5, 6}, .chunks = {2, 5, 3}, .dtype = ZGPU_FLOAT32,
                        .itemsize = 4, .codec = &blosc, .fill_value = "\"NaN\"", .attributes = "{}"};
    CHECK(cli_build_metadata(&c, &m) == 0);
    CHECK_STR(m, "{\"zarr_format\":2,\"shape\":[4,5,6],\"chunks\":[2,5,3],\"dtype\":\"<f4\","
                 "\"compressor\":{\"id\":\"blosc\",\"cname\":\"lz4\",\"clevel\":5,\"shuffle\":1,\"blocksize\":0},"
                 "\"fill_value\":\"NaN\",\"order\":\"C\",\"filters\":null,\"dimension_separator\":\".\",\"attributes\":{}}");
    free(m);
    c.sharded = 1;
    CHECK(cli_build_metadata(&c, &m) == -1);
    c.sharded = 0;
    c.zarr_format = 4;
    CHECK(cli_build_metadata(&c, &m) == -1);
    /* complex and raw default fill values */
    cli_array_spec d = {.zarr_format = 2, .ndim = 1, .shape = {3}, .chunks = {3}, .dtype = ZGPU_RAW, .itemsize = 3};
    CHECK(cli_build_metadata(&d, &m) == 0);
    CHECK(m && strstr(m, "\"dtype\":\"|V3\"") && strstr(m, "\"fill_value\":\"AAAA\"") && strstr(m, "\"compressor\":null"));
    free(m);
    d.zarr_format = 3;
    CHECK(cli_build_metadata(&d, &m) == 0);
    CHECK(m && strstr(m, "\"data_type\":\"r24\"") && strstr(m, "\"fill_value\":[0,0,0]"));
    free(m);
}

static void test_v3_to_v2(void) {
    static const struct { const char *v3, *v2; } cases[] = {
        {"[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]", "null"},
        {"[{\"name\": \"bytes\"}, {\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}]",
         "{\"id\":\"zstd\",\"level\": 3, \"checksum\": false}"},
        {"[{\"name\":\"bytes\"},{\"name\":\"numcodecs.zlib\",\"configuration\":{\"level\":4}}]",
         "{\"id\":\"zlib\",\"level\":4}"},
        {"[{\"name\":\"bytes\"},{\"name\":\"blosc\",\"configuration\":{\"cname\":\"lz4\",\"clevel\":5,"
         "\"shuffle\":\"bitshuffle\",\"typesize\":4,\"blocksize\":0}}]",
         "{\"id\":\"blosc\",\"cname\":\"lz4\",\"clevel\":5,\"shuffle\":2,\"blocksize\":0}"},
        {"[{\"name\":\"bytes\"},{\"name\":\"gzip\",\"configuration\":{}}]", "{\"id\":\"gzip\"}"},
        {"[{\"name\":\"bytes\"},{\"name\":\"zstd\"},{\"name\":\"crc32c\"}]", NULL},
        {"[{\"name\":\"transpose\",\"configuration\":{\"order\":[1,0]}},{\"name\":\"bytes\"}]", NULL},
        {"[{\"name\":\"bytes\"},{\"name\":\"crc32c\"}]", NULL},
        {"[{\"name\":\"bytes\"", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_sb sb = {0};
        int rc = cli_v3_codecs_to_v2_compressor(cases[i].v3, &sb);
        if (cases[i].v2) {
            CHECK_MSG(rc == 0, "v3->v2 case %zu: %s", i, cli_errmsg());
            CHECK_STR(sb.p ? sb.p : "", cases[i].v2);
        } else {
            CHECK_MSG(rc == -1, "v3->v2 case %zu must fail", i);
        }
        cli_sb_free(&sb);
    }
}

static void test_v2_to_v3(void) {
    static const struct { const char *in, *out; size_t itemsize; } cases[] = {
        {"[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}},{\"name\":\"numcodecs.zstd\",\"configuration\":{\"level\":3}}]",
         "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}},{\"name\":\"zstd\",\"configuration\":{\"level\":3,\"checksum\":false}}]", 8},
        {"[{\"name\":\"bytes\"},{\"name\":\"numcodecs.blosc\",\"configuration\":{\"cname\":\"zstd\",\"clevel\":2,\"shuffle\":-1,\"blocksize\":0}}]",
         "[{\"name\":\"bytes\"},{\"name\":\"blosc\",\"configuration\":{\"cname\":\"zstd\",\"clevel\":2,\"shuffle\":\"bitshuffle\",\"typesize\":1,\"blocksize\":0}}]", 1},
        {"[{\"name\":\"numcodecs.gzip\",\"configuration\":{\"level\":4}},{\"name\":\"numcodecs.zlib\",\"configuration\":{\"level\":1}}]",
         "[{\"name\":\"gzip\",\"configuration\":{\"level\":4}},{\"name\":\"numcodecs.zlib\",\"configuration\":{\"level\":1}}]", 4},
        {"[{\"name\":\"numcodecs.blosc\",\"configuration\":{\"shuffle\":7}}]", "[{\"name\":\"numcodecs.blosc\",\"configuration\":{\"shuffle\":7}}]", 4},
        {"[]", "[]", 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_sb sb = {0};
        CHECK_MSG(cli_v2_codecs_to_v3(cases[i].in, cases[i].itemsize, &sb) == 0, "v2->v3 case %zu: %s", i, cli_errmsg());
        CHECK_STR(sb.p, cases[i].out);
        cli_sb_free(&sb);
    }
    cli_sb sb = {0};
    CHECK(cli_v2_codecs_to_v3("[{\"name\":1}]", 4, &sb) == -1);
    cli_sb_free(&sb);
    CHECK(cli_v2_codecs_to_v3("[{\"name\":\"x\"", 4, &sb) == -1);
    cli_sb_free(&sb);
}

/* ---- fill values ---- */
static void test_fill_values(void) {
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
        {"1.5", ZGPU_FLOAT32, 4, 3, "1.5"}, {"nan", ZGPU_FLOAT64, 8, 3, "\"NaN\""},
        {"NaN", ZGPU_FLOAT16, 2, 2, "\"NaN\""}, {"-inf", ZGPU_FLOAT32, 4, 3, "\"-Infinity\""},
        {"Infinity", ZGPU_FLOAT64, 8, 2, "\"Infinity\""}, {"1e3", ZGPU_FLOAT64, 8, 3, "1000"},
        {"0x10", ZGPU_FLOAT64, 8, 3, NULL}, {"abc", ZGPU_FLOAT64, 8, 3, NULL}, {"1.5", ZGPU_INT32, 4, 3, NULL},
        {"true", ZGPU_BOOL, 1, 3, "true"},  {"0", ZGPU_BOOL, 1, 2, "false"},   {"yes", ZGPU_BOOL, 1, 3, NULL},
        {"1,-2", ZGPU_COMPLEX64, 8, 3, "[1,-2]"}, {"3", ZGPU_COMPLEX128, 16, 3, "[3,0]"},
        {"nan,1", ZGPU_COMPLEX128, 16, 2, "[\"NaN\",1]"}, {"1,x", ZGPU_COMPLEX64, 8, 3, NULL},
        {"7", ZGPU_RAW, 3, 3, "[7,7,7]"},   {"1,2,3", ZGPU_RAW, 3, 3, "[1,2,3]"}, {"1,2", ZGPU_RAW, 3, 3, NULL},
        {"1,2,3", ZGPU_RAW, 3, 2, "\"AQID\""}, {"300", ZGPU_RAW, 2, 3, NULL},  {"1,2,3,4", ZGPU_RAW, 3, 3, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_sb sb = {0};
        int rc = cli_fill_json_from_text(cases[i].text, cases[i].dt, cases[i].size, cases[i].fmt, &sb);
        CHECK_MSG((rc == 0) == (cases[i].json != NULL), "fill '%s' (dtype %d): rc %d %s", cases[i].text,
                  (int)cases[i].dt, rc, cli_errmsg());
        if (rc == 0 && cases[i].json) CHECK_STR(sb.p, cases[i].json);
        cli_sb_free(&sb);
    }
    /* from native bytes */
    cli_sb sb = {0};
    uint16_t h = 0x3e00; /* 1.5 in IEEE half */
    CHECK(cli_fill_json_from_bytes(&h, ZGPU_FLOAT16, 2, 3, &sb) == 0);
    CHECK_STR(sb.p, "1.5");
    cli_sb_free(&sb);
    h = 0xfc00; /* -inf */
    cli_fill_json_from_bytes(&h, ZGPU_FLOAT16, 2, 3, &sb);
    CHECK_STR(sb.p, "\"-Infinity\"");
    cli_sb_free(&sb);
    float cf[2] = {0.25f, NAN};
    cli_fill_json_from_bytes(cf, ZGPU_COMPLEX64, 8, 3, &sb);
    CHECK_STR(sb.p, "[0.25,\"NaN\"]");
    cli_sb_free(&sb);
    double d = 0.1;
    cli_fill_json_from_bytes(&d, ZGPU_FLOAT64, 8, 3, &sb);
    CHECK(sb.p && strtod(sb.p, NULL) == 0.1);
    cli_sb_free(&sb);
    int16_t i16 = -300;
    cli_fill_json_from_bytes(&i16, ZGPU_INT16, 2, 2, &sb);
    CHECK_STR(sb.p, "-300");
    cli_sb_free(&sb);
    uint64_t u64 = UINT64_MAX;
    cli_fill_json_from_bytes(&u64, ZGPU_UINT64, 8, 3, &sb);
    CHECK_STR(sb.p, "18446744073709551615");
    cli_sb_free(&sb);
    CHECK(cli_half_to_float(0x0001) == ldexpf(1.0f, -24)); /* smallest subnormal */
    CHECK(cli_half_to_float(0x7bff) == 65504.0f);
    CHECK(isnan(cli_half_to_float(0x7e00)));
}

/* ---- default chunks and slabs ---- */
static void test_chunks_and_slabs(void) {
    uint64_t ch[3];
    const uint64_t small[2] = {1000, 1000}; /* 4 MB of float32: one chunk */
    cli_default_chunks(2, small, 4, NULL, ch);
    CHECK(ch[0] == 1000 && ch[1] == 1000);
    const uint64_t big[2] = {10000, 10000}; /* 400 MB */
    cli_default_chunks(2, big, 4, NULL, ch);
    uint64_t bytes = ch[0] * ch[1] * 4;
    CHECK_MSG(bytes <= (4u << 20) && bytes >= (1u << 20), "chunks %llu x %llu", (unsigned long long)ch[0],
              (unsigned long long)ch[1]);
    const uint64_t tall[3] = {100000000, 1, 1}; /* 800 MB in one long axis */
    cli_default_chunks(3, tall, 8, NULL, ch);
    CHECK(ch[1] == 1 && ch[2] == 1 && ch[0] * 8 <= (4u << 20) && ch[0] * 8 >= (1u << 20));
    const uint64_t zero[2] = {0, 7};
    cli_default_chunks(2, zero, 4, NULL, ch);
    CHECK(ch[0] == 1 && ch[1] == 7);
    /* inside shards every extent divides the shard */
    const uint64_t shard[2] = {3000, 2048};
    cli_default_chunks(2, big, 4, shard, ch);
    CHECK(shard[0] % ch[0] == 0 && shard[1] % ch[1] == 0 && ch[0] * ch[1] * 4 <= (4u << 20));
    const uint64_t prime_shard[2] = {7919, 7907}; /* primes: only 1 or the whole extent divide */
    cli_default_chunks(2, big, 4, prime_shard, ch);
    CHECK(ch[0] * ch[1] * 4 <= (4u << 20) && 7919 % ch[0] == 0 && 7907 % ch[1] == 0);

    /* slabs: whole rows of objects, about the budget */
    const uint64_t shape[2] = {1000, 1000};
    CHECK_EQ_U64(cli_slab_rows(2, shape, 64, 4, 256u << 20), 1000);
    CHECK_EQ_U64(cli_slab_rows(2, shape, 64, 4, 1u << 20), 256); /* 64 rows = 256000 B; 4 objects fit */
    CHECK_EQ_U64(cli_slab_rows(2, shape, 64, 4, 1000), 64);      /* one object row even over budget */
    CHECK_EQ_U64(cli_slab_rows(0, shape, 1, 4, 1000), 1);
}

/* ---- .npy ---- */
static void test_npy_headers(void) {
    /* exact bytes as numpy.save writes them */
    static const char want[] = "\x93NUMPY\x01\x00v\x00{'descr': '<u2', 'fortran_order': False, 'shape': (3, 4), }";
    const uint64_t shape34[2] = {3, 4};
    cli_sb sb = {0};
    CHECK(cli_npy_format_header(ZGPU_UINT16, 2, 2, shape34, &sb) == 0);
    CHECK_EQ_U64(sb.n, 128);
    CHECK(sb.p && memcmp(sb.p, want, sizeof want - 1) == 0 && sb.p[127] == '\n' && sb.p[126] == ' ');
    cli_sb_free(&sb);

    static const struct { zgpu_dtype dt; size_t size; const char *descr; } types[] = {
        {ZGPU_BOOL, 1, "|b1"},   {ZGPU_INT8, 1, "|i1"},    {ZGPU_INT16, 2, "<i2"},     {ZGPU_INT32, 4, "<i4"},
        {ZGPU_INT64, 8, "<i8"},  {ZGPU_UINT8, 1, "|u1"},   {ZGPU_UINT16, 2, "<u2"},    {ZGPU_UINT32, 4, "<u4"},
        {ZGPU_UINT64, 8, "<u8"}, {ZGPU_FLOAT16, 2, "<f2"}, {ZGPU_FLOAT32, 4, "<f4"},   {ZGPU_FLOAT64, 8, "<f8"},
        {ZGPU_COMPLEX64, 8, "<c8"}, {ZGPU_COMPLEX128, 16, "<c16"}, {ZGPU_RAW, 3, "|V3"}, {ZGPU_RAW, 1000, "|V1000"},
    };
    const uint64_t shapes[4][3] = {{0}, {5}, {2, 3}, {7, 0, 9}};
    const int ndims[4] = {0, 1, 2, 3};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        char d[32];
        CHECK_STR(cli_dtype_npy_descr(types[t].dt, types[t].size, d), types[t].descr);
        for (int s = 0; s < 4; s++) {
            cli_sb h = {0};
            CHECK(cli_npy_format_header(types[t].dt, types[t].size, ndims[s], shapes[s], &h) == 0);
            cli_npy_header ph;
            int rc = cli_npy_parse_header((const unsigned char *)h.p, h.n, &ph);
            CHECK_MSG(rc == 0, "%s ndim %d: %s", types[t].descr, ndims[s], cli_errmsg());
            CHECK(ph.dtype == types[t].dt && ph.itemsize == types[t].size && ph.ndim == ndims[s] &&
                  !ph.fortran_order && !ph.nonnative && ph.data_offset == h.n && h.n % 64 == 0 && ph.major == 1);
            CHECK_STR(ph.descr, types[t].descr);
            for (int k = 0; k < ndims[s]; k++) CHECK(ph.shape[k] == shapes[s][k]);
            /* every shorter prefix is "truncated", never a crash */
            CHECK(cli_npy_parse_header((const unsigned char *)h.p, h.n - 1, &ph) == -1);
            cli_sb_free(&h);
        }
    }
    /* headers numpy may write, or other writers: version 2.0, big-endian, Fortran, odd spacing, 'L' */
    static const char v2[] = "\x93NUMPY\x02\x00\x35\x00\x00\x00{\"descr\":\">f8\",\"shape\":(2,3L,),\"fortran_order\":True}\n";
    cli_npy_header ph;
    CHECK(cli_npy_parse_header((const unsigned char *)v2, sizeof v2 - 1, &ph) == 0);
    CHECK(ph.major == 2 && ph.dtype == ZGPU_FLOAT64 && ph.nonnative == cli_host_little_endian() && ph.fortran_order &&
          ph.ndim == 2 && ph.shape[0] == 2 && ph.shape[1] == 3 && ph.data_offset == 12 + 0x35);
    /* rejected headers */
    static const char *const bad[] = {
        "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,), }",
        "{'descr': '<U4', 'fortran_order': False, 'shape': (2,), }",
        "{'descr': 'O', 'fortran_order': False, 'shape': (2,), }",
        "{'descr': '<i4', 'fortran_order': 0, 'shape': (2,), }",
        "{'descr': '<i4', 'fortran_order': False, 'shape': [2], }",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (-2,), }",
        "{'descr': '<i4', 'fortran_order': False}",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'extra': 1}",
        "{'descr': '|i4', 'fortran_order': False, 'shape': (2,), }",
        "{'descr': '<i3', 'fortran_order': False, 'shape': (2,), }",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (2,)",
        "['descr']",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned char buf[512];
        size_t n = strlen(bad[i]);
        memcpy(buf, "\x93NUMPY\x01\x00", 8);
        buf[8] = (unsigned char)n;
        buf[9] = 0;
        memcpy(buf + 10, bad[i], n);
        CHECK_MSG(cli_npy_parse_header(buf, 10 + n, &ph) == -1, "bad header %zu accepted", i);
    }
    CHECK(cli_npy_parse_header((const unsigned char *)"\x93NUMPX\x01\x00\x00\x00", 10, &ph) == -1);
    CHECK(cli_npy_parse_header((const unsigned char *)"\x93NUMPY\x04\x00\x00\x00", 10, &ph) == -1);
}

/* Writes a .npy with a hand-made header and raw data bytes; returns the path (static buffer). */
static const char *write_temp_npy(const char *descr, int fortran, const char *shape, const void *data, size_t n) {
    static char path[64];
    strcpy(path, "/tmp/zgpu_test_cli_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    char dict[200];
    int dl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr,
                      fortran ? "True" : "False", shape);
    size_t total = (10 + (size_t)dl + 1 + 63) / 64 * 64;
    unsigned char head[256];
    memcpy(head, "\x93NUMPY\x01\x00", 8);
    head[8] = (unsigned char)(total - 10);
    head[9] = 0;
    memcpy(head + 10, dict, (size_t)dl);
    memset(head + 10 + dl, ' ', total - 10 - (size_t)dl);
    head[total - 1] = '\n';
    FILE *f = fdopen(fd, "wb");
    fwrite(head, 1, total, f);
    fwrite(data, 1, n, f);
    fclose(f);
    return path;
}

static void test_npy_conversion(void) {
    /* (2, 3) big-endian uint16 in Fortran order: v[i][j] = 100 i + j + 1 stored column by column. */
    const unsigned char be_f[] = {0, 1, 0, 101, 0, 2, 0, 102, 0, 3, 0, 103};
    const char *p = write_temp_npy(">u2", 1, "(2, 3)", be_f, sizeof be_f);
    CHECK(p != NULL);
    cli_npy_header h;
    void *data = NULL;
    CHECK_MSG(cli_npy_load(p, &h, &data) == 0, "%s", cli_errmsg());
    if (data) {
        const uint16_t want[6] = {1, 2, 3, 101, 102, 103};
        CHECK(memcmp(data, want, sizeof want) == 0);
        CHECK(h.dtype == ZGPU_UINT16 && h.ndim == 2 && !h.fortran_order && !h.nonnative);
    }
    free(data);
    unlink(p);

    /* big-endian complex64 swaps each 4-byte half: (1.0, -2.0) */
    const unsigned char be_c8[] = {0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0};
    p = write_temp_npy(">c8", 0, "(1,)", be_c8, sizeof be_c8);
    data = NULL;
    CHECK(cli_npy_load(p, &h, &data) == 0);
    if (data) {
        float c[2];
        memcpy(c, data, 8);
        CHECK(c[0] == 1.0f && c[1] == -2.0f);
    }
    free(data);
    unlink(p);

    /* big-endian float16 1.5 and -inf, 0-d big-endian float64 */
    const unsigned char be_f2[] = {0x3e, 0x00, 0xfc, 0x00};
    p = write_temp_npy(">f2", 0, "(2,)", be_f2, sizeof be_f2);
    data = NULL;
    CHECK(cli_npy_load(p, &h, &data) == 0);
    if (data) {
        uint16_t v[2];
        memcpy(v, data, 4);
        CHECK(v[0] == 0x3e00 && v[1] == 0xfc00);
    }
    free(data);
    unlink(p);
    const unsigned char be_f8[] = {0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18};
    p = write_temp_npy(">f8", 0, "()", be_f8, sizeof be_f8);
    data = NULL;
    CHECK(cli_npy_load(p, &h, &data) == 0);
    if (data) {
        double v;
        memcpy(&v, data, 8);
        CHECK(v == 3.141592653589793);
        CHECK(h.ndim == 0);
    }
    free(data);
    unlink(p);

    /* raw |V3 in Fortran order (2, 2): bytes are never swapped, elements move whole */
    const unsigned char v3f[] = {'a', 'a', 'a', 'c', 'c', 'c', 'b', 'b', 'b', 'd', 'd', 'd'};
    p = write_temp_npy("|V3", 1, "(2, 2)", v3f, sizeof v3f);
    data = NULL;
    CHECK(cli_npy_load(p, &h, &data) == 0);
    if (data) CHECK(memcmp(data, "aaabbbcccddd", 12) == 0);
    free(data);
    unlink(p);

    /* 3-D Fortran little-endian int64 against a reference transposition */
    int64_t f3[2 * 3 * 4], want3[2 * 3 * 4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                int64_t v = (int64_t)i * 10000000000LL + j * 100 + k;
                f3[i + 2 * j + 6 * k] = v;
                want3[(i * 3 + j) * 4 + k] = v;
            }
    p = write_temp_npy("<i8", 1, "(2, 3, 4)", f3, sizeof f3);
    data = NULL;
    CHECK(cli_npy_load(p, &h, &data) == 0);
    if (data) CHECK(memcmp(data, want3, sizeof want3) == 0);
    free(data);
    unlink(p);

    /* a file shorter than its header says is an error */
    p = write_temp_npy("<i8", 0, "(100,)", f3, sizeof f3);
    data = NULL;
    CHECK(cli_npy_load(p, &h, &data) == -1 && data == NULL);
    CHECK(strstr(cli_errmsg(), "header says") != NULL);
    unlink(p);

    /* block reads convert byte order too */
    p = write_temp_npy(">u4", 0, "(3,)", (const unsigned char[]){0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0}, 12);
    FILE *f = fopen(p, "rb");
    CHECK(f && cli_npy_read_header(f, p, &h) == 0);
    uint32_t two[2] = {0};
    CHECK(f && cli_npy_read_block(f, p, &h, 4, two, 8) == 0);
    CHECK(two[0] == 256 && two[1] == 65536);
    if (f) fclose(f);
    unlink(p);

    /* save then load: every byte comes back */
    uint16_t vals[6] = {1, 2, 3, 65535, 0, 7};
    const uint64_t shp[2] = {2, 3};
    char path[64];
    strcpy(path, "/tmp/zgpu_test_cli_saveXXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    CHECK(cli_npy_save(path, ZGPU_UINT16, 2, 2, shp, vals) == 0);
    data = NULL;
    CHECK(cli_npy_load(path, &h, &data) == 0);
    if (data) CHECK(memcmp(data, vals, sizeof vals) == 0 && h.ndim == 2 && h.shape[0] == 2 && h.shape[1] == 3);
    free(data);
    unlink(path);
    CHECK(cli_npy_save("/dev/null", ZGPU_UINT16, 2, 2, shp, vals) == 0);
    CHECK(cli_npy_save("/nonexistent-dir/x.npy", ZGPU_UINT16, 2, 2, shp, vals) == -1);

    /* swapping helpers */
    unsigned char b16[16];
    for (int i = 0; i < 16; i++) b16[i] = (unsigned char)i;
    cli_byteswap(b16, 16, 16);
    CHECK(b16[0] == 15 && b16[15] == 0 && b16[7] == 8);
    cli_byteswap(b16, 16, 4);
    CHECK(b16[0] == 12 && b16[3] == 15 && b16[4] == 8);
    CHECK(cli_dtype_swap_unit(ZGPU_COMPLEX128, 16) == 8 && cli_dtype_swap_unit(ZGPU_RAW, 5) == 1);
}

static void test_descr_parse(void) {
    zgpu_dtype dt;
    size_t sz;
    int nn;
    CHECK(cli_dtype_from_descr("<u2", &dt, &sz, &nn) == 0 && dt == ZGPU_UINT16 && sz == 2 && nn == !cli_host_little_endian());
    CHECK(cli_dtype_from_descr(">i8", &dt, &sz, &nn) == 0 && dt == ZGPU_INT64 && nn == cli_host_little_endian());
    CHECK(cli_dtype_from_descr("|u1", &dt, &sz, &nn) == 0 && dt == ZGPU_UINT8 && nn == 0);
    CHECK(cli_dtype_from_descr(">u1", &dt, &sz, &nn) == 0 && dt == ZGPU_UINT8 && nn == 0);
    CHECK(cli_dtype_from_descr("=f4", &dt, &sz, &nn) == 0 && dt == ZGPU_FLOAT32 && nn == 0);
    CHECK(cli_dtype_from_descr("|V7", &dt, &sz, &nn) == 0 && dt == ZGPU_RAW && sz == 7);
    CHECK(cli_dtype_from_descr("<c16", &dt, &sz, &nn) == 0 && dt == ZGPU_COMPLEX128);
    CHECK(cli_dtype_from_descr("|b1", &dt, &sz, &nn) == 0 && dt == ZGPU_BOOL);
    CHECK(cli_dtype_from_descr("<M8[ns]", &dt, &sz, &nn) == -1);
    CHECK(cli_dtype_from_descr("<f3", &dt, &sz, &nn) == -1);
    CHECK(cli_dtype_from_descr("u2", &dt, &sz, &nn) == -1);
    CHECK(cli_dtype_from_descr("|V0", &dt, &sz, &nn) == -1);
    CHECK(cli_dtype_from_descr("<", &dt, &sz, &nn) == -1);
    char buf[32];
    CHECK_STR(cli_dtype_v3_name(ZGPU_RAW, 3, buf), "r24");
    CHECK_STR(cli_dtype_v3_name(ZGPU_COMPLEX64, 8, buf), "complex64");
}

/* ---- JSON reader, options, devices ---- */
static void test_json_and_args(void) {
    const char *doc = "{ \"a\" : [1, {\"b\": \"x\\\"y\"}, NaN], \"c\" : -Infinity, \"dimension_names\": null, \"e\":{} }";
    const char *v;
    size_t n;
    CHECK(cli_json_member(doc, "c", &v, &n) == 1 && n == 9 && !memcmp(v, "-Infinity", 9));
    CHECK(cli_json_member(doc, "zz", &v, &n) == 0);
    CHECK(cli_json_member(doc, "a", &v, &n) == 1);
    const char *el;
    size_t en;
    CHECK(cli_json_index(v, 1, &el, &en) == 1);
    const char *bv;
    size_t bn;
    char s[16];
    CHECK(cli_json_member(el, "b", &bv, &bn) == 1 && cli_json_string(bv, bn, s, sizeof s) == 0);
    CHECK_STR(s, "x\"y");
    CHECK(cli_json_index(v, 2, &el, &en) == 1 && en == 3);
    CHECK(cli_json_index(v, 3, &el, &en) == 0);
    CHECK(cli_json_member("{\"a\": [1, 2}", "a", &v, &n) == -1);
    CHECK(cli_json_member("[1]", "a", &v, &n) == -1);
    CHECK(cli_json_skip_value("\"unterminated") == NULL);
    char deep[2000];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = '\0';
    CHECK(cli_json_skip_value(deep) == NULL);
    char *c = cli_json_compact("{ \"a b\" : [ 1 ,\n 2 ] , \"c\\\" d\": \" \" }");
    CHECK_STR(c, "{\"a b\":[1,2],\"c\\\" d\":\" \"}");
    free(c);
    CHECK(cli_json_string("\"\\u0041\\n\"", 10, s, sizeof s) == 0 && !strcmp(s, "A\n"));
    CHECK(cli_json_string("\"toolongforthebuffer\"", 21, s, 8) == -1);

    static const cli_opt_def defs[] = {{"output", 'o', 1}, {"region", 0, 1}, {"overwrite", 0, 0}, {NULL, 0, 0}};
    cli_args ar;
    char *argv1[] = {"a", "-o", "x.npy", "--region=-5:", "--overwrite", "--", "--b"};
    CHECK(cli_args_parse(7, argv1, defs, &ar) == 0);
    CHECK(ar.npos == 2 && !strcmp(ar.pos[0], "a") && !strcmp(ar.pos[1], "--b"));
    CHECK_STR(ar.value[0], "x.npy");
    CHECK_STR(ar.value[1], "-5:");
    CHECK(ar.set[2] == 1 && !ar.help);
    char *argv2[] = {"--region", "-1"};
    CHECK(cli_args_parse(2, argv2, defs, &ar) == 0 && !strcmp(ar.value[1], "-1"));
    char *argv3[] = {"--nope"};
    CHECK(cli_args_parse(1, argv3, defs, &ar) == -1 && strstr(cli_errmsg(), "--nope"));
    char *argv4[] = {"--region"};
    CHECK(cli_args_parse(1, argv4, defs, &ar) == -1);
    char *argv5[] = {"--overwrite=1"};
    CHECK(cli_args_parse(1, argv5, defs, &ar) == -1);
    char *argv6[] = {"x", "--help"};
    CHECK(cli_args_parse(2, argv6, defs, &ar) == 0 && ar.help);

    uint64_t l[3];
    CHECK(cli_parse_u64_list("64,32,1", 3, l, "--chunks") == 0 && l[0] == 64 && l[1] == 32 && l[2] == 1);
    CHECK(cli_parse_u64_list("64,32", 3, l, "--chunks") == -1);
    CHECK(cli_parse_u64_list("64,32,1,1", 3, l, "--chunks") == -1);
    CHECK(cli_parse_u64_list("64,0,1", 3, l, "--chunks") == -1);
    CHECK(cli_parse_u64_list("64,-1,1", 3, l, "--chunks") == -1);

    int dev;
    CHECK(cli_parse_device("cuda:3", &dev) == 0 && dev == 3);
    CHECK(cli_parse_device("cuda", &dev) == 0 && dev == 0);
    CHECK(cli_parse_device("cpu", &dev) == 0 && dev == -1);
    CHECK(cli_parse_device("cuda:-1", &dev) == -1);
    CHECK(cli_parse_device("gpu0", &dev) == -1);
}

int main(void) {
    test_regions();
    test_codec_specs();
    test_metadata();
    test_v3_to_v2();
    test_v2_to_v3();
    test_fill_values();
    test_chunks_and_slabs();
    test_npy_headers();
    test_npy_conversion();
    test_descr_parse();
    test_json_and_args();
    TEST_MAIN_END();
}
