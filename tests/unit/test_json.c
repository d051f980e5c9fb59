/* Unit tests for the JSON DOM (src/common/json.c): parsing (strict RFC 8259 + NaN/Infinity), 64-bit integers,
 * string escapes, error messages, builders, equality, clone, and Python-compatible output. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "common/json.h"
#include "zgpu.h"

/* Reference output produced with Python 3.11: json.dumps(json.loads(DOC), ensure_ascii=False[, indent=2]). */
static const char *DOC =
     "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[10000,1000],\"data_type\":\"float64\",\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[1000,100]}},\"chunk_key_encoding\":{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}},\"fill_value\":\"NaN\",\"codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},{\"name\":\"zstd\",\"configuration\":{\"level\":0,\"checksum\":false}}],\"attributes\":{\"a\":[],\"b\":{},\"c\":null,\"d\":1.5e-7,\"e\":\"caf\\u00e9 \\\"q\\\" \\n\\t\\u0001\",\"f\":[1,[2,[]]],\"g\":-0.0,\"h\":NaN,\"i\":-Infinity,\"j\":18446744073709551615}}";
static const char *DOC_COMPACT =
     "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [10000, 1000], \"data_type\": \"float64\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [1000, 100]}}, \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, \"fill_value\": \"NaN\", \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"zstd\", \"configuration\": {\"level\": 0, \"checksum\": false}}], \"attributes\": {\"a\": [], \"b\": {}, \"c\": null, \"d\": 1.5e-07, \"e\": \"caf\xc3""\xa9"" \\\"q\\\" \\n\\t\\u0001\", \"f\": [1, [2, []]], \"g\": -0.0, \"h\": NaN, \"i\": -Infinity, \"j\": 18446744073709551615}}";
static const char *DOC_INDENT2 =
     "{\n"
    "  \"zarr_format\": 3,\n"
    "  \"node_type\": \"array\",\n"
    "  \"shape\": [\n"
    "    10000,\n"
    "    1000\n"
    "  ],\n"
    "  \"data_type\": \"float64\",\n"
    "  \"chunk_grid\": {\n"
    "    \"name\": \"regular\",\n"
    "    \"configuration\": {\n"
    "      \"chunk_shape\": [\n"
    "        1000,\n"
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
    "  \"fill_value\": \"NaN\",\n"
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
    "  \"attributes\": {\n"
    "    \"a\": [],\n"
    "    \"b\": {},\n"
    "    \"c\": null,\n"
    "    \"d\": 1.5e-07,\n"
    "    \"e\": \"caf\xc3""\xa9"" \\\"q\\\" \\n\\t\\u0001\",\n"
    "    \"f\": [\n"
    "      1,\n"
    "      [\n"
    "        2,\n"
    "        []\n"
    "      ]\n"
    "    ],\n"
    "    \"g\": -0.0,\n"
    "    \"h\": NaN,\n"
    "    \"i\": -Infinity,\n"
    "    \"j\": 18446744073709551615\n"
    "  }\n"
    "}";

/* Parses text (must succeed) and returns the value, or NULL after recording a failure. */
static zj_value *parse_ok(const char *text) {
    zj_value *v = NULL;
    zgpu_status s = zj_parse(text, strlen(text), NULL, &v);
    CHECK_MSG(s == ZGPU_OK && v != NULL, "parse of %s failed: %s", text, zgpu_last_error());
    return s == ZGPU_OK ? v : NULL;
}

/* Parses then writes compactly; returns the malloc'd text ("<parse failed>" copy on failure). */
static char *roundtrip(const char *text, int indent) {
    zj_value *v = parse_ok(text);
    char *out = v ? zj_write(v, indent) : NULL;
    zj_free(v);
    return out ? out : strdup("<parse failed>");
}

static void check_roundtrip(const char *text, const char *want) {
    char *got = roundtrip(text, 0);
    CHECK_STR(got, want);
    free(got);
}

/* Parsing must fail with ZGPU_ERR_BAD_METADATA, a message with a position, and every `needle` in it. */
static void check_error(const char *text, size_t len, const char *needle) {
    zj_value *v = (zj_value *)0x1;
    zgpu_status s = zj_parse(text, len, "zarr.json", &v);
    CHECK_MSG(s == ZGPU_ERR_BAD_METADATA, "parse of [%.*s] should fail", (int)len, text);
    CHECK(v == NULL);
    const char *msg = zgpu_last_error();
    CHECK_MSG(strstr(msg, "zarr.json: JSON: ") == msg, "message: %s", msg);
    CHECK_MSG(strstr(msg, " at line ") && strstr(msg, " column "), "message: %s", msg);
    if (needle) CHECK_MSG(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg, needle);
    if (s == ZGPU_OK) zj_free(v);
}
#define CHECK_ERROR(lit, needle) check_error(lit, sizeof(lit) - 1, needle)

static void test_document(void) {
    zj_value *v = parse_ok(DOC);
    if (!v) return;
    CHECK(v->type == ZJ_OBJECT);
    CHECK_EQ_U64(v->n, 9);
    uint64_t u = 0;
    CHECK(zj_is_uint(zj_get(v, "zarr_format"), &u) && u == 3);
    CHECK_STR(zj_string(zj_get(v, "node_type")), "array");
    zj_value *shape = zj_get(v, "shape");
    CHECK(shape && shape->type == ZJ_ARRAY && shape->n == 2);
    CHECK(zj_is_uint(zj_at(shape, 0), &u) && u == 10000);
    CHECK(zj_is_uint(zj_at(shape, 1), &u) && u == 1000);
    CHECK(zj_at(shape, 2) == NULL);
    CHECK(zj_at(v, 0) == NULL); /* not an array */
    CHECK(zj_get(shape, "x") == NULL); /* not an object */
    CHECK(zj_get(v, "missing") == NULL);
    zj_value *codecs = zj_get(v, "codecs");
    CHECK_STR(zj_string(zj_get(zj_at(codecs, 1), "name")), "zstd");
    zj_value *cfg = zj_get(zj_at(codecs, 1), "configuration");
    int64_t i = -1;
    CHECK(zj_is_int(zj_get(cfg, "level"), &i) && i == 0);
    zj_value *chk = zj_get(cfg, "checksum");
    CHECK(chk && chk->type == ZJ_BOOL && chk->boolean == 0);
    zj_value *attrs = zj_get(v, "attributes");
    CHECK(zj_get(attrs, "c") && zj_get(attrs, "c")->type == ZJ_NULL);
    zj_value *d = zj_get(attrs, "d");
    CHECK(d && d->type == ZJ_NUMBER && !d->is_int && d->num == 1.5e-7);
    CHECK_STR(zj_string(zj_get(attrs, "e")), "caf\xc3\xa9 \"q\" \n\t\x01");
    zj_value *g = zj_get(attrs, "g");
    CHECK(g && g->num == 0.0 && signbit(g->num) && !g->is_int);
    CHECK(zj_get(attrs, "h") && isnan(zj_get(attrs, "h")->num));
    CHECK(zj_get(attrs, "i") && zj_get(attrs, "i")->num == -INFINITY);
    CHECK(zj_is_uint(zj_get(attrs, "j"), &u) && u == UINT64_MAX);
    CHECK(zj_string(zj_get(attrs, "j")) == NULL);
    CHECK(!zj_is_uint(zj_get(attrs, "d"), &u)); /* a double is not an integer */

    char *compact = zj_write(v, 0);
    CHECK_STR(compact, DOC_COMPACT);
    char *pretty = zj_write(v, 2);
    CHECK_STR(pretty, DOC_INDENT2);
    /* Both outputs parse back to an equal document. */
    zj_value *v2 = compact ? parse_ok(compact) : NULL;
    zj_value *v3 = pretty ? parse_ok(pretty) : NULL;
    CHECK(zj_equal(v, v2));
    CHECK(zj_equal(v, v3));
    free(compact);
    free(pretty);
    zj_free(v2);
    zj_free(v3);

    zj_value *c = zj_clone(v);
    CHECK(c != NULL && c != v && zj_equal(v, c));
    char *cw = c ? zj_write(c, 0) : NULL;
    CHECK_STR(cw, DOC_COMPACT);
    free(cw);
    /* A change deep inside the clone makes it differ, and leaves the original alone. */
    CHECK_OK(zj_set(zj_get(c, "attributes"), "c", zj_new_int(7)));
    CHECK(!zj_equal(v, c));
    CHECK(zj_get(zj_get(v, "attributes"), "c")->type == ZJ_NULL);
    zj_free(c);
    zj_free(v);
}

static void test_indent(void) {
    char *s = roundtrip("{\"x\":[[],{}],\"y\":[1]}", 4);
    CHECK_STR(s, "{\n    \"x\": [\n        [],\n        {}\n    ],\n    \"y\": [\n        1\n    ]\n}");
    free(s);
    s = roundtrip("[]", 2);
    CHECK_STR(s, "[]");
    free(s);
    s = roundtrip("{}", 2);
    CHECK_STR(s, "{}");
    free(s);
    s = roundtrip("\"x\"", 3);
    CHECK_STR(s, "\"x\"");
    free(s);
    s = roundtrip(" [ 1 , {\"a\" : [ ]} ] ", 1);
    CHECK_STR(s, "[\n 1,\n {\n  \"a\": []\n }\n]");
    free(s);
    check_roundtrip(" [ 1 , {\"a\" : [ ], \"b\":{ } } ] ", "[1, {\"a\": [], \"b\": {}}]");
}

/* Python's repr() of each double (checked against CPython 3.11). */
static const struct { double d; const char *py; } DOUBLES[] = {
    {0.1, "0.1"},
    {1e-05, "1e-05"},
    {1e16, "1e+16"},
    {1.5, "1.5"},
    {100.0, "100.0"},
    {1e15, "1000000000000000.0"},
    {9999999999999998.0, "9999999999999998.0"},
    {0.0001, "0.0001"},
    {0.00012345, "0.00012345"},
    {1.2345e-5, "1.2345e-05"},
    {123456789012345678.0, "1.2345678901234568e+17"},
    {5e-324, "5e-324"},
    {1.7976931348623157e308, "1.7976931348623157e+308"},
    {2.2250738585072014e-308, "2.2250738585072014e-308"},
    {1.0 / 3.0, "0.3333333333333333"},
    {2.0 / 3.0, "0.6666666666666666"},
    {1e22, "1e+22"},
    {1e23, "1e+23"},
    {-2.5, "-2.5"},
    {-0.0, "-0.0"},
    {0.0, "0.0"},
    {123.456, "123.456"},
    {9007199254740993.0, "9007199254740992.0"},
    {1e100, "1e+100"},
    {1.1e-100, "1.1e-100"},
    {9223372036854775808.0, "9.223372036854776e+18"},
    {0.3, "0.3"},
    {4.35, "4.35"},
    {1e-7, "1e-07"},
    {0x1p-1074 * 3, "1.5e-323"},
    {1234567890123456.7, "1234567890123456.8"},
    /* a power of two whose nearest 16-digit decimal does not read back, but its neighbour does */
    {0x1p-1017, "7.120236347223045e-307"},
    {-1e-300, "-1e-300"},
};

static void test_doubles(void) {
    for (size_t k = 0; k < sizeof DOUBLES / sizeof DOUBLES[0]; k++) {
        zj_value *v = zj_new_double(DOUBLES[k].d);
        char *s = v ? zj_write(v, 0) : NULL;
        CHECK_STR(s, DOUBLES[k].py);
        /* and the text reads back as the same bits */
        zj_value *back = s ? parse_ok(s) : NULL;
        CHECK_MSG(back && back->type == ZJ_NUMBER && !back->is_int &&
                      memcmp(&back->num, &DOUBLES[k].d, sizeof(double)) == 0,
                  "%s did not read back exactly", s ? s : "(null)");
        free(s);
        zj_free(v);
        zj_free(back);
    }
    /* Non-integer literals stay doubles and print in Python's form. */
    check_roundtrip("1.0", "1.0");
    check_roundtrip("1e2", "100.0");
    check_roundtrip("1E+2", "100.0");
    check_roundtrip("-0.0", "-0.0");
    check_roundtrip("0.1e-3", "0.0001");
    check_roundtrip("123456789e-20", "1.23456789e-12");
    check_roundtrip("1e400", "Infinity");   /* overflow to infinity, as Python's float() */
    check_roundtrip("-1e400", "-Infinity");
    check_roundtrip("1e-400", "0.0");
    check_roundtrip("[0.5,2.5e-3]", "[0.5, 0.0025]");
}

static void test_integers(void) {
    zj_value *v = parse_ok("18446744073709551615");
    if (v) {
        CHECK(v->is_int && !v->is_negative && v->u64 == UINT64_MAX);
        uint64_t u = 0;
        int64_t i = 0;
        CHECK(zj_is_uint(v, &u) && u == UINT64_MAX);
        CHECK(!zj_is_int(v, &i)); /* does not fit int64 */
        CHECK(v->num == 18446744073709551615.0);
    }
    zj_free(v);
    v = parse_ok("-9223372036854775808");
    if (v) {
        int64_t i = 0;
        uint64_t u = 0;
        CHECK(v->is_int && v->is_negative && v->i64 == INT64_MIN);
        CHECK(zj_is_int(v, &i) && i == INT64_MIN);
        CHECK(!zj_is_uint(v, &u));
    }
    zj_free(v);
    v = parse_ok("9223372036854775807");
    if (v) {
        int64_t i = 0;
        uint64_t u = 0;
        CHECK(zj_is_int(v, &i) && i == INT64_MAX);
        CHECK(zj_is_uint(v, &u) && u == (uint64_t)INT64_MAX);
        CHECK(v->i64 == INT64_MAX);
    }
    zj_free(v);
    v = parse_ok("-0");
    if (v) CHECK(v->is_int && !v->is_negative && v->u64 == 0 && v->i64 == 0);
    zj_free(v);

    check_roundtrip("18446744073709551615", "18446744073709551615");
    check_roundtrip("-9223372036854775808", "-9223372036854775808");
    check_roundtrip("9007199254740993", "9007199254740993"); /* beyond double precision, kept exact */
    check_roundtrip("-0", "0");
    check_roundtrip("[0,-1,42]", "[0, -1, 42]");
    /* Beyond 64 bits: not a 64-bit integer (num is the nearest double), but the literal is kept and written back
     * exactly, as Python's json does (zarr-python reads attributes such as 2**70 as ints). */
    v = parse_ok("18446744073709551616");
    if (v) CHECK(!v->is_int && v->num == 18446744073709551616.0 && v->digits && !strcmp(v->digits, "18446744073709551616"));
    if (v) CHECK(!zj_is_uint(v, NULL) && !zj_is_int(v, NULL));
    zj_free(v);
    v = parse_ok("-9223372036854775809");
    if (v) CHECK(!v->is_int && v->num == -9223372036854775808.0 && v->digits && !strcmp(v->digits, "-9223372036854775809"));
    zj_free(v);
    check_roundtrip("18446744073709551616", "18446744073709551616");
    check_roundtrip("100000000000000000000000000000", "100000000000000000000000000000");
    check_roundtrip("{\"a\": [-1180591620717411303424, 1e30]}", "{\"a\": [-1180591620717411303424, 1e+30]}");
    /* Clones own their digits; equality compares them exactly. */
    zj_value *b1 = parse_ok("[1180591620717411303424]"), *b2 = parse_ok("[1180591620717411303425]");
    zj_value *c1 = zj_clone(b1);
    CHECK(c1 && zj_equal(b1, c1) && !zj_equal(b1, b2));
    zj_free(b1); /* c1's digits must outlive b1 */
    char *cs = zj_write(c1, 0);
    CHECK_STR(cs, "[1180591620717411303424]");
    free(cs);
    zj_value *u = parse_ok("18446744073709551615"), *big = parse_ok("18446744073709551616");
    CHECK(!zj_equal(u, big));
    zj_free(u);
    zj_free(big);
    zj_free(c1);
    zj_free(b2);

    /* Builders keep exact values. */
    zj_value *a = zj_new_array();
    CHECK_OK(zj_append(a, zj_new_int(INT64_MIN)));
    CHECK_OK(zj_append(a, zj_new_uint(UINT64_MAX)));
    CHECK_OK(zj_append(a, zj_new_int(-1)));
    CHECK_OK(zj_append(a, zj_new_uint(7)));
    char *s = zj_write(a, 0);
    CHECK_STR(s, "[-9223372036854775808, 18446744073709551615, -1, 7]");
    free(s);
    int64_t i = 0;
    CHECK(zj_is_int(zj_at(a, 3), &i) && i == 7);
    CHECK(!zj_is_uint(zj_at(a, 2), NULL));
    zj_free(a);
}

static void test_nonfinite(void) {
    zj_value *v = parse_ok("[NaN, Infinity, -Infinity]");
    if (v) {
        CHECK(isnan(zj_at(v, 0)->num) && !zj_at(v, 0)->is_int);
        CHECK(zj_at(v, 1)->num == INFINITY);
        CHECK(zj_at(v, 2)->num == -INFINITY);
        zj_value *w = parse_ok("[NaN,Infinity,-Infinity]");
        CHECK(zj_equal(v, w)); /* NaN equals NaN here */
        zj_free(w);
        char *s = zj_write(v, 0);
        CHECK_STR(s, "[NaN, Infinity, -Infinity]");
        free(s);
    }
    zj_free(v);
    zj_value *n = zj_new_double(NAN), *m = zj_new_double(-NAN);
    CHECK(zj_equal(n, m));
    char *s = zj_write(m, 0);
    CHECK_STR(s, "NaN");
    free(s);
    zj_value *one = zj_new_double(1.0);
    CHECK(!zj_equal(n, one));
    zj_free(n);
    zj_free(m);
    zj_free(one);
    CHECK_ERROR("nan", "invalid literal (expected null)");
    CHECK_ERROR("-NaN", "invalid number");
    CHECK_ERROR("+1", "unexpected '+'");
    CHECK_ERROR("Inf", "Infinity");
    CHECK_ERROR("-Inf", "-Infinity");
    CHECK_ERROR("[NaNa]", "expected ',' or ']'");
    CHECK_ERROR("infinity", "unexpected 'i'");
}

static void test_strings(void) {
    zj_value *v = parse_ok("\"\\ud83d\\ude00 \\u00e9\\u20ac \\/\\b\\f\\n\\r\\t\\\"\\\\ \\u0041\"");
    if (v) {
        const char *want = "\xF0\x9F\x98\x80 \xC3\xA9\xE2\x82\xAC /\b\f\n\r\t\"\\ A";
        CHECK_STR(v->str, want);
        CHECK_EQ_U64(v->len, strlen(want));
        char *s = zj_write(v, 0);
        /* Written as UTF-8, with only quote, backslash and control characters escaped. */
        CHECK_STR(s, "\"\xF0\x9F\x98\x80 \xC3\xA9\xE2\x82\xAC /\\b\\f\\n\\r\\t\\\"\\\\ A\"");
        free(s);
    }
    zj_free(v);
    /* \u0000 is kept as a byte inside a value string and written back escaped. */
    v = parse_ok("\"a\\u0000b\\u001f\\u007f\"");
    if (v) {
        CHECK_EQ_U64(v->len, 5);
        CHECK(memcmp(v->str, "a\0b\x1f\x7f", 6) == 0);
        char *s = zj_write(v, 0);
        CHECK_STR(s, "\"a\\u0000b\\u001f\x7f\"");
        free(s);
        zj_value *w = zj_new_string_len("a\0b\x1f\x7f", 5);
        CHECK(zj_equal(v, w));
        zj_value *x = zj_new_string("a");
        CHECK(!zj_equal(v, x)); /* same C string prefix, different length */
        zj_free(w);
        zj_free(x);
    }
    zj_free(v);
    /* Raw UTF-8 passes through; the 4-byte maximum is accepted. */
    check_roundtrip("\"\xF4\x8F\xBF\xBF\xE4\xB8\xAD\"", "\"\xF4\x8F\xBF\xBF\xE4\xB8\xAD\"");
    check_roundtrip("{\"k\\u00e9y\": \"\\ud800\\udc00\"}", "{\"k\xC3\xA9y\": \"\xF0\x90\x80\x80\"}");

    CHECK_ERROR("\"\\ud83d\"", "unpaired high surrogate \\ud83d");
    CHECK_ERROR("\"\\ude00\"", "unpaired low surrogate \\ude00");
    CHECK_ERROR("\"\\ud83dx\"", "unpaired high surrogate");
    CHECK_ERROR("\"\\ud83d\\u0041\"", "unpaired high surrogate");
    CHECK_ERROR("\"\\ud83d\\ud83d\"", "unpaired high surrogate");
    CHECK_ERROR("\"\\ud83d\\ue000\"", "unpaired high surrogate");
    check_roundtrip("\"\\udbff\\udfff\"", "\"\xF4\x8F\xBF\xBF\"");
    CHECK_ERROR("\"\\x41\"", "invalid escape \\'x'");
    CHECK_ERROR("\"\\U0041\"", "invalid escape");
    CHECK_ERROR("\"\\u12g4\"", "invalid \\u escape");
    CHECK_ERROR("\"\\u12\"", "invalid \\u escape");
    CHECK_ERROR("\"a\tb\"", "control character 0x09");
    CHECK_ERROR("\"a\nb\"", "control character 0x0a");
    CHECK_ERROR("\"a\0b\"", "control character 0x00");
    CHECK_ERROR("\"abc", "unterminated string");
    CHECK_ERROR("\"abc\\\"", "unterminated string");
    CHECK_ERROR("\"\\", "unterminated string");
    CHECK_ERROR("\"\xC3\"", "invalid UTF-8");          /* truncated sequence */
    CHECK_ERROR("\"\xC0\xAF\"", "invalid UTF-8");      /* overlong */
    CHECK_ERROR("\"\xED\xA0\x80\"", "invalid UTF-8");  /* encoded surrogate */
    CHECK_ERROR("\"\xF4\x90\x80\x80\"", "invalid UTF-8"); /* beyond U+10FFFF */
    CHECK_ERROR("\"\xFF\"", "invalid UTF-8");
    CHECK_ERROR("{\"a\\u0000\": 1}", "\\u0000");
}

static void test_errors(void) {
    /* Position of the error: line and column (1-based, in bytes). */
    const char *text = "{\n  \"a\": 1,\n  \"b\": x\n}";
    zj_value *v = NULL;
    CHECK_STATUS(zj_parse(text, strlen(text), "arr/zarr.json", &v), ZGPU_ERR_BAD_METADATA);
    CHECK(v == NULL);
    CHECK_MSG(strstr(zgpu_last_error(), "arr/zarr.json: JSON: unexpected 'x' (expected a value) at line 3 column 8"),
              "%s", zgpu_last_error());
    CHECK_STATUS(zj_parse("[1,\n2,,3]", 9, NULL, &v), ZGPU_ERR_BAD_METADATA);
    CHECK_MSG(strcmp(zgpu_last_error(), "JSON: unexpected ',' (expected a value) at line 2 column 3") == 0, "%s",
              zgpu_last_error());

    CHECK_ERROR("", "unexpected end of input");
    CHECK_ERROR("   \n ", "line 2 column 2");
    CHECK_ERROR("[1,2", "expected ',' or ']' in an array, found end of input");
    CHECK_ERROR("[1,2,]", "unexpected ']'");
    CHECK_ERROR("{\"a\":1,}", "expected a string key");
    CHECK_ERROR("{\"a\" 1}", "expected ':'");
    CHECK_ERROR("{a:1}", "expected a string key in an object, found 'a'");
    CHECK_ERROR("{\"a\":1", "expected ',' or '}'");
    CHECK_ERROR("{\"a\":1]", "expected ',' or '}' in an object, found ']'");
    CHECK_ERROR("[1}", "expected ',' or ']'");
    CHECK_ERROR("01", "unexpected '1' after the JSON value");
    CHECK_ERROR("1 2", "after the JSON value");
    CHECK_ERROR("{} x", "line 1 column 4");
    CHECK_ERROR("1.", "expected a digit after '.'");
    CHECK_ERROR(".5", "unexpected '.'");
    CHECK_ERROR("1e", "exponent");
    CHECK_ERROR("1e+", "exponent");
    CHECK_ERROR("-", "expected a digit after '-'");
    CHECK_ERROR("- 1", "expected a digit");
    CHECK_ERROR("0x10", "unexpected 'x'");
    CHECK_ERROR("tru", "expected true or false");
    CHECK_ERROR("nul", "expected null");
    CHECK_ERROR("True", "unexpected 'T'");
    CHECK_ERROR("'a'", "unexpected '''");
    CHECK_ERROR("[1]\0", "byte 0x00");
    CHECK_ERROR("\xEF\xBB\xBF", "end of input");
    CHECK_ERROR("[\f1]", "byte 0x0c"); /* form feed is not JSON whitespace */
    CHECK_ERROR("/* c */ 1", "unexpected '/'");

    /* A UTF-8 byte order mark is skipped; JSON whitespace is accepted everywhere. */
    check_roundtrip("\xEF\xBB\xBF{\"a\":1}", "{\"a\": 1}");
    check_roundtrip(" \t\r\n[ \t\r\n1 \t\r\n] \t\r\n", "[1]");

    /* Bad arguments. */
    CHECK_STATUS(zj_parse("1", 1, NULL, NULL), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(zj_parse(NULL, 3, NULL, &v), ZGPU_ERR_INVALID_ARGUMENT);
    /* The length bounds the text: what follows is not read. */
    CHECK_OK(zj_parse("[1]garbage", 3, NULL, &v));
    CHECK(v && v->type == ZJ_ARRAY && v->n == 1);
    zj_free(v);
}

static char *nested(int depth) {
    char *s = malloc((size_t)depth * 2 + 1);
    for (int i = 0; i < depth; i++) {
        s[i] = '[';
        s[depth * 2 - 1 - i] = ']';
    }
    s[depth * 2] = '\0';
    return s;
}

static void test_nesting(void) {
    char *s = nested(512);
    zj_value *v = NULL;
    CHECK_OK(zj_parse(s, strlen(s), NULL, &v));
    char *w = v ? zj_write(v, 0) : NULL;
    CHECK_STR(w, s);
    free(w);
    zj_free(v);
    free(s);
    s = nested(513);
    v = NULL;
    CHECK_STATUS(zj_parse(s, strlen(s), NULL, &v), ZGPU_ERR_BAD_METADATA);
    CHECK(strstr(zgpu_last_error(), "nesting deeper than 512") && strstr(zgpu_last_error(), "column 513"));
    CHECK(v == NULL);
    free(s);
    /* Objects count too: 300 objects around 300 arrays. */
    size_t n = 300 * 6 + 300 * 2 + 1;
    s = malloc(n + 1);
    size_t p = 0;
    for (int i = 0; i < 300; i++) p += (size_t)sprintf(s + p, "{\"k\":");
    for (int i = 0; i < 300; i++) s[p++] = '[';
    s[p++] = '1';
    for (int i = 0; i < 300; i++) s[p++] = ']';
    for (int i = 0; i < 300; i++) s[p++] = '}';
    s[p] = '\0';
    CHECK_STATUS(zj_parse(s, p, NULL, &v), ZGPU_ERR_BAD_METADATA);
    CHECK(strstr(zgpu_last_error(), "nesting deeper than 512") != NULL);
    free(s);
}

static void test_duplicates_and_order(void) {
    /* Document order is kept; a duplicate key keeps its first position and takes the last value (as Python). */
    zj_value *v = parse_ok("{\"b\":1,\"a\":2,\"b\":3}");
    if (v) {
        CHECK_EQ_U64(v->n, 2);
        CHECK_STR(v->keys[0], "b");
        CHECK_STR(v->keys[1], "a");
        uint64_t u = 0;
        CHECK(zj_is_uint(zj_get(v, "b"), &u) && u == 3);
        char *s = zj_write(v, 0);
        CHECK_STR(s, "{\"b\": 3, \"a\": 2}");
        free(s);
    }
    zj_free(v);
    /* A large object (hash-indexed while parsing) with every key repeated. */
    size_t nkeys = 2000, cap = nkeys * 2 * 24 + 16, p = 0;
    char *text = malloc(cap);
    text[p++] = '{';
    for (size_t pass = 0; pass < 2; pass++)
        for (size_t k = 0; k < nkeys; k++)
            p += (size_t)snprintf(text + p, cap - p, "%s\"key%zu\":%zu", p > 1 ? "," : "", k, k + pass * 100000);
    text[p++] = '}';
    text[p] = '\0';
    v = parse_ok(text);
    if (v) {
        CHECK_EQ_U64(v->n, nkeys);
        int ok = 1;
        for (size_t k = 0; k < nkeys && ok; k++) {
            char key[32];
            snprintf(key, sizeof key, "key%zu", k);
            uint64_t u = 0;
            ok = strcmp(v->keys[k], key) == 0 && zj_is_uint(zj_get(v, key), &u) && u == k + 100000;
        }
        CHECK(ok);
    }
    zj_free(v);
    free(text);
}

static void test_builders_and_equality(void) {
    zj_value *o = zj_new_object();
    CHECK_OK(zj_set(o, "zarr_format", zj_new_int(2)));
    CHECK_OK(zj_set(o, "name", zj_new_string("x")));
    CHECK_OK(zj_set(o, "flag", zj_new_bool(1)));
    CHECK_OK(zj_set(o, "nothing", zj_new_null()));
    CHECK_OK(zj_set(o, "fill", zj_new_double(0.5)));
    zj_value *arr = zj_new_array();
    for (int i = 0; i < 5; i++) CHECK_OK(zj_append(arr, zj_new_int(i)));
    CHECK_OK(zj_set(o, "list", arr));
    CHECK_OK(zj_set(o, "name", zj_new_string_len("y\"z", 3))); /* replaces in place */
    char *s = zj_write(o, 0);
    CHECK_STR(s, "{\"zarr_format\": 2, \"name\": \"y\\\"z\", \"flag\": true, \"nothing\": null, \"fill\": 0.5, "
                 "\"list\": [0, 1, 2, 3, 4]}");
    free(s);
    CHECK(zj_remove(o, "flag") == 1);
    CHECK(zj_remove(o, "flag") == 0);
    CHECK(zj_remove(o, "zarr_format") == 1);
    CHECK(zj_get(o, "flag") == NULL);
    s = zj_write(o, 0);
    CHECK_STR(s, "{\"name\": \"y\\\"z\", \"nothing\": null, \"fill\": 0.5, \"list\": [0, 1, 2, 3, 4]}");
    free(s);

    /* Objects compare as mappings: order does not matter; values and key sets do. */
    zj_value *p = parse_ok("{\"list\":[0,1,2,3,4],\"fill\":0.5,\"nothing\":null,\"name\":\"y\\\"z\"}");
    CHECK(zj_equal(o, p));
    zj_value *q = parse_ok("{\"list\":[0,1,2,3,4],\"fill\":0.5,\"nothing\":null,\"nome\":\"y\\\"z\"}");
    CHECK(!zj_equal(o, q));
    zj_value *r = parse_ok("{\"list\":[0,1,2,4,3],\"fill\":0.5,\"nothing\":null,\"name\":\"y\\\"z\"}");
    CHECK(!zj_equal(o, r));
    zj_free(p);
    zj_free(q);
    zj_free(r);
    zj_free(o);

    /* Numbers: an integer equals a double only when the double is exactly that integer (as in Python). */
    zj_value *i5 = zj_new_int(5), *d5 = zj_new_double(5.0), *d55 = zj_new_double(5.5);
    zj_value *big = zj_new_uint(9007199254740993ULL), *bigd = zj_new_double(9007199254740992.0);
    zj_value *m1 = zj_new_int(-1), *u1 = zj_new_uint(1), *dm1 = zj_new_double(-1.0), *inf = zj_new_double(INFINITY);
    CHECK(zj_equal(i5, d5) && zj_equal(d5, i5));
    CHECK(!zj_equal(i5, d55));
    CHECK(!zj_equal(big, bigd));
    CHECK(!zj_equal(m1, u1));
    CHECK(zj_equal(m1, dm1));
    CHECK(!zj_equal(u1, dm1));
    CHECK(!zj_equal(i5, inf));
    zj_value *t = zj_new_bool(1), *f = zj_new_bool(0), *nul = zj_new_null(), *str = zj_new_string("5");
    CHECK(!zj_equal(t, f) && zj_equal(t, t) && !zj_equal(nul, f) && !zj_equal(str, i5));
    zj_value *a1 = parse_ok("[1,2]"), *a2 = parse_ok("[1,2,3]"), *a3 = parse_ok("[2,1]");
    CHECK(!zj_equal(a1, a2) && !zj_equal(a1, a3));
    CHECK(!zj_equal(a1, NULL) && zj_equal(NULL, NULL));
    zj_value *all[] = {i5, d5, d55, big, bigd, m1, u1, dm1, inf, t, f, nul, str, a1, a2, a3};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) zj_free(all[k]);

    /* Misuse is reported, and ownership is still taken. */
    zj_value *notarr = zj_new_object();
    CHECK_STATUS(zj_append(notarr, zj_new_int(1)), ZGPU_ERR_INVALID_ARGUMENT);
    zj_value *notobj = zj_new_array();
    CHECK_STATUS(zj_set(notobj, "a", zj_new_int(1)), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(zj_append(notobj, NULL), ZGPU_ERR_NO_MEMORY);
    CHECK(zj_remove(notobj, "a") == 0);
    CHECK(zj_write(NULL, 0) == NULL);
    CHECK(zj_clone(NULL) == NULL);
    CHECK(zj_string(notobj) == NULL);
    zj_free(notarr);
    zj_free(notobj);
    zj_free(NULL);
}

static void test_large(void) {
    /* 200000 items: parse and write stay linear (this would take minutes if either were quadratic). */
    size_t n = 200000, cap = n * 12 + 16, p = 0;
    char *text = malloc(cap);
    text[p++] = '[';
    for (size_t i = 0; i < n; i++) p += (size_t)snprintf(text + p, cap - p, "%s%zu.25", i ? ", " : "", i);
    text[p++] = ']';
    text[p] = '\0';
    zj_value *v = parse_ok(text);
    CHECK(v && v->n == n && zj_at(v, n - 1)->num == (double)(n - 1) + 0.25);
    char *w = v ? zj_write(v, 0) : NULL;
    CHECK_STR(w, text);
    free(w);
    zj_free(v);
    free(text);
}

int main(void) {
    test_document();
    test_indent();
    test_doubles();
    test_integers();
    test_nonfinite();
    test_strings();
    test_errors();
    test_nesting();
    test_duplicates_and_order();
    test_builders_and_equality();
    test_large();
    TEST_MAIN_END();
}
