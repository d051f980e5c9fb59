/* The data types beyond plain numbers: numpy.datetime64 / timedelta64 (v2 typestrings and v3 objects, fill values,
 * whole arrays), v2 structured records, and variable-length strings and bytes (the vlen codec, its hostile
 * inputs, and the vlen read/write entry points). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/chain.h"
#include "codec/vlen.h"
#include "common/json.h"
#include "common/status.h"
#include "meta/dtype.h"
#include "meta/metadata.h"
#include "test.h"
#include "meta_helpers.h"
#include "zgpu_meta.h"

static char g_dir[64];

static zj_value *parse(const char *text) {
    zj_value *v = NULL;
    if (zj_parse(text, strlen(text), "test", &v) != ZGPU_OK) {
        fprintf(stderr, "bad test JSON: %s\n", text);
        exit(2);
    }
    return v;
}

static void path_in_dir(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", g_dir, name); }

/* The array `s` describes, its document built (handed back in *doc when doc is not NULL: the caller frees it) and
 * created in the test directory as `name` (its path in path[0, n)); NULL (a failed check) where either step fails. */
static zgpu_array *create_from_spec(zgpu_context *ctx, const zgpu_array_spec *s, const char *name, char *path,
                                    size_t n, char **doc) {
    char *built = NULL;
    CHECK_OK(zgpu_metadata_build(s, &built));
    path_in_dir(path, n, name);
    zgpu_array *a = NULL;
    if (built) CHECK_OK(zgpu_array_create(ctx, path, built, 0, &a));
    if (doc) *doc = built;
    else zgpu_free(built);
    return a;
}

/* ---- numpy.datetime64 / numpy.timedelta64 ---- */

static void test_time_v3(void) {
    static const struct { const char *json; zg_dtype_kind kind; const char *unit; uint32_t scale; const char *v2; } ok[] = {
        {"{\"name\": \"numpy.datetime64\", \"configuration\": {\"unit\": \"ns\", \"scale_factor\": 1}}",
         ZG_KIND_DATETIME, "ns", 1, "<M8[ns]"},
        {"{\"name\": \"numpy.datetime64\", \"configuration\": {\"unit\": \"ms\", \"scale_factor\": 10}}",
         ZG_KIND_DATETIME, "ms", 10, "<M8[10ms]"},
        {"{\"name\": \"numpy.timedelta64\", \"configuration\": {\"scale_factor\": 1, \"unit\": \"generic\"}}",
         ZG_KIND_TIMEDELTA, "generic", 1, "<m8"},
        {"{\"name\": \"numpy.timedelta64\", \"configuration\": {\"unit\": \"\\u03bcs\", \"scale_factor\": 3}}",
         ZG_KIND_TIMEDELTA, "us", 3, "<m8[3us]"},
        {"{\"name\": \"numpy.datetime64\", \"configuration\": {\"unit\": \"D\", \"scale_factor\": 2147483647}}",
         ZG_KIND_DATETIME, "D", 2147483647u, "<M8[2147483647D]"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        zj_value *v = parse(ok[i].json);
        zg_dtype dt;
        CHECK_OK(zg_dtype_from_v3(v, &dt));
        CHECK(dt.id == ZGPU_INT64 && dt.size == 8 && dt.kind == ok[i].kind && dt.scale == ok[i].scale);
        CHECK_STR(dt.unit, ok[i].unit);
        char buf[ZG_DTYPE_V2_MAX];
        CHECK_STR(zg_dtype_to_v2(&dt, 0, buf), ok[i].v2);
        /* the v2 typestring names the same type */
        zg_dtype back;
        int big = 1;
        CHECK_OK(zg_dtype_from_v2(buf, &back, &big));
        CHECK(big == 0 && back.kind == dt.kind && back.scale == dt.scale && !strcmp(back.unit, dt.unit));
        zj_value *j = zg_dtype_to_v3_json(&dt);
        zg_dtype again;
        CHECK_OK(zg_dtype_from_v3(j, &again));
        CHECK(again.kind == dt.kind && again.scale == dt.scale && !strcmp(again.unit, dt.unit));
        zj_free(j);
        zj_free(v);
    }
    static const struct { const char *json; const char *needle; } bad[] = {
        {"{\"name\": \"numpy.datetime64\"}", "needs a configuration"},
        {"{\"name\": \"numpy.datetime64\", \"configuration\": {\"unit\": \"ns\"}}", "scale_factor"},
        {"{\"name\": \"numpy.datetime64\", \"configuration\": {\"unit\": \"ns\", \"scale_factor\": 0}}", "scale_factor"},
        {"{\"name\": \"numpy.datetime64\", \"configuration\": {\"unit\": \"ns\", \"scale_factor\": 2147483648}}",
         "scale_factor"},
        {"{\"name\": \"numpy.datetime64\", \"configuration\": {\"unit\": \"ns\", \"scale_factor\": 1.5}}", "scale_factor"},
        {"{\"name\": \"numpy.datetime64\", \"configuration\": {\"unit\": \"nanos\", \"scale_factor\": 1}}",
         "\"nanos\" is not a NumPy time unit"},
        {"{\"name\": \"numpy.datetime64\", \"configuration\": {\"unit\": 5, \"scale_factor\": 1}}", "unit"},
        {"{\"name\": \"numpy.timedelta64\", \"configuration\": {\"unit\": \"s\", \"scale_factor\": 1, \"x\": 1}}",
         "\"x\" is not allowed"},
        {"{\"name\": \"numpy.timedelta64\", \"configuration\": {\"unit\": \"s\", \"scale_factor\": 1}, \"y\": 2}",
         "\"y\" is not allowed"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zj_value *v = parse(bad[i].json);
        zg_dtype dt;
        CHECK_STATUS(zg_dtype_from_v3(v, &dt), ZGPU_ERR_BAD_METADATA);
        CHECK_MSG(last_error_has(bad[i].needle), "%s: '%s'", bad[i].json, zgpu_last_error());
        zj_free(v);
    }
}

static void test_time_v2(void) {
    static const struct { const char *ts; int big; zg_dtype_kind kind; const char *unit; uint32_t scale; } ok[] = {
        {"<M8[ns]", 0, ZG_KIND_DATETIME, "ns", 1},  {">M8[10ms]", 1, ZG_KIND_DATETIME, "ms", 10},
        {"<M8", 0, ZG_KIND_DATETIME, "generic", 1}, {"<m8[s]", 0, ZG_KIND_TIMEDELTA, "s", 1},
        {">m8[7D]", 1, ZG_KIND_TIMEDELTA, "D", 7},  {"<M8[as]", 0, ZG_KIND_DATETIME, "as", 1},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        zg_dtype dt;
        int big = -1;
        CHECK_OK(zg_dtype_from_v2(ok[i].ts, &dt, &big));
        CHECK_MSG(big == ok[i].big && dt.kind == ok[i].kind && dt.scale == ok[i].scale && !strcmp(dt.unit, ok[i].unit),
                  "%s", ok[i].ts);
        CHECK(zg_dtype_swap_unit(&dt) == 8);
        char buf[ZG_DTYPE_V2_MAX];
        CHECK_STR(zg_dtype_to_v2(&dt, ok[i].big, buf), ok[i].ts);
    }
    static const char *const bad[] = {"<M8[]", "<M8[10]", "<M8[010ms]", "<M8ms", "<M8[ms", "<M8[0ms]",
                                      "<M8[2147483648s]", "<M8[99999999999s]", "|M8[s]", "<M8[ns]x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zg_dtype dt;
        int big;
        CHECK_MSG(zg_dtype_from_v2(bad[i], &dt, &big) == ZGPU_ERR_BAD_METADATA, "%s", bad[i]);
        CHECK_MSG(last_error_has(bad[i]), "%s: '%s'", bad[i], zgpu_last_error());
    }
}

static void test_time_fill(void) {
    zg_dtype dt;
    int big;
    CHECK_OK(zg_dtype_from_v2("<M8[s]", &dt, &big));
    for (int fmt = 2; fmt <= 3; fmt++) {
        uint8_t out[8];
        int64_t v;
        zj_value *nat = parse("\"NaT\""), *num = parse("-5"), *low = parse("-9223372036854775808");
        CHECK_OK(zg_fill_from_json(nat, &dt, fmt, out, NULL));
        memcpy(&v, out, 8);
        CHECK(v == INT64_MIN);
        /* written back as zarr-python writes NaT: the integer */
        zj_value *back = zg_fill_to_json(out, &dt, fmt);
        CHECK_JSON(back, "-9223372036854775808");
        zj_free(back);
        CHECK_OK(zg_fill_from_json(low, &dt, fmt, out, NULL));
        memcpy(&v, out, 8);
        CHECK(v == INT64_MIN);
        CHECK_OK(zg_fill_from_json(num, &dt, fmt, out, NULL));
        memcpy(&v, out, 8);
        CHECK(v == -5);
        zj_value *lower = parse("\"nat\""), *text = parse("\"2020-01-01\"");
        CHECK_STATUS(zg_fill_from_json(lower, &dt, fmt, out, NULL), ZGPU_ERR_BAD_METADATA);
        CHECK(last_error_has("\"NaT\""));
        CHECK_STATUS(zg_fill_from_json(text, &dt, fmt, out, NULL), ZGPU_ERR_BAD_METADATA);
        zj_free(nat), zj_free(num), zj_free(low), zj_free(lower), zj_free(text);
    }
}

/* A datetime array built, written, read and reopened through the public API, in both formats. */
static void test_time_array(zgpu_context *ctx) {
    for (int fmt = 2; fmt <= 3; fmt++) {
        uint64_t shape[1] = {7}, chunks[1] = {3};
        zgpu_array_spec s;
        memset(&s, 0, sizeof s);
        s.struct_size = sizeof s;
        s.zarr_format = fmt;
        s.ndim = 1;
        s.shape = shape;
        s.chunks = chunks;
        s.data_type = fmt == 3 ? "{\"name\": \"numpy.timedelta64\", \"configuration\": {\"unit\": \"ms\", "
                                 "\"scale_factor\": 10}}"
                               : "\">m8[10ms]\"";
        s.big_endian = fmt == 3; /* (v2: the typestring's order) */
        s.fill_value = "\"NaT\"";
        char path[128];
        zgpu_array *a = create_from_spec(ctx, &s, fmt == 3 ? "td3" : "td2", path, sizeof path, NULL);
        if (!a) continue;
        CHECK(zgpu_array_dtype(a) == ZGPU_INT64 && zgpu_array_itemsize(a) == 8);
        CHECK_STR(zgpu_array_dtype_name(a), "numpy.timedelta64");
        char *np = NULL;
        CHECK_OK(zgpu_array_numpy_dtype(a, &np));
        CHECK_STR(np, "\"<m8[10ms]\"");
        zgpu_free(np);
        int64_t in[2] = {-3, 40}, out[7];
        uint64_t start[1] = {2}, count[1] = {2}, all[1] = {0};
        CHECK_OK(zgpu_array_write(a, start, count, in, NULL));
        zgpu_array_close(a);
        CHECK_OK(zgpu_array_open(ctx, path, &a));
        if (!a) continue;
        CHECK_OK(zgpu_array_read(a, all, shape, out, NULL));
        CHECK(out[0] == INT64_MIN && out[2] == -3 && out[3] == 40 && out[6] == INT64_MIN);
        char *meta = NULL;
        CHECK_OK(zgpu_array_metadata_json(a, &meta));
        if (fmt == 3)
            CHECK_MSG(meta && strstr(meta, "\"scale_factor\": 10") && strstr(meta, "\"endian\": \"big\"") &&
                          strstr(meta, "-9223372036854775808"), "%s", meta);
        else
            CHECK_MSG(meta && strstr(meta, "\">m8[10ms]\"") && strstr(meta, "-9223372036854775808"), "%s", meta);
        zgpu_free(meta);
        zgpu_array_close(a);
        /* the other format: the conversion writes each format's form of the type */
        char *conv = NULL, *text = NULL;
        size_t len;
        char file[160];
        snprintf(file, sizeof file, "%s/%s", path, fmt == 3 ? "zarr.json" : ".zarray");
        FILE *f = fopen(file, "rb");
        CHECK(f != NULL);
        if (!f) continue;
        text = calloc(1, 1 << 16);
        len = fread(text, 1, (1 << 16) - 1, f);
        fclose(f);
        (void)len;
        CHECK_OK(zgpu_metadata_convert(text, fmt == 3 ? 2 : 3, 0, &conv));
        if (fmt == 3) CHECK_MSG(conv && strstr(conv, "\"dtype\": \">m8[10ms]\""), "%s", conv);
        else CHECK_MSG(conv && strstr(conv, "\"numpy.timedelta64\"") && strstr(conv, "\"unit\": \"ms\""), "%s", conv);
        zgpu_free(conv);
        free(text);
    }
}

/* ---- v2 structured dtypes ---- */

static void test_struct_parse(void) {
    static const struct { const char *json; uint32_t size; } ok[] = {
        {"[[\"a\", \"<i4\"], [\"b\", \">f8\"]]", 12},
        {"[[\"a\", \"<i4\"], [\"b\", \"<f8\", [2, 3]]]", 52},
        {"[[\"a\", [[\"x\", \"|u1\", [4]], [\"y\", \"<u2\"]]], [\"s\", \"|S5\"], [\"u\", \"<U2\"]]", 19},
        {"[[\"t\", \"<M8[ns]\"], [\"r\", \"|V3\"], [\"c\", \"<c16\"], [\"b\", \"|b1\"]]", 28},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        zj_value *v = parse(ok[i].json);
        zg_dtype dt;
        CHECK_OK(zg_dtype_from_v2_struct(v, &dt));
        CHECK_MSG(dt.id == ZGPU_RAW && dt.kind == ZG_KIND_STRUCT && dt.size == ok[i].size, "%s: %u", ok[i].json, dt.size);
        CHECK_STR(dt.name, "structured");
        CHECK(zg_dtype_swap_unit(&dt) == 1); /* records are stored and read as they are */
        zj_free(v);
    }
    /* nesting: 16 levels pass, 17 do not (and 200, 400 JSON levels, neither, without deep recursion) */
    for (int depth = 15; depth <= 200; depth += depth == 17 ? 183 : 1) {
        char *text = malloc(32 * (size_t)depth + 64), *p = text;
        for (int d = 0; d < depth; d++) p += sprintf(p, "[[\"x\", ");
        p += sprintf(p, "\"<i4\"");
        for (int d = 0; d < depth; d++) p += sprintf(p, "]]");
        zj_value *v = parse(text);
        zg_dtype dt;
        if (depth <= 16) CHECK_OK(zg_dtype_from_v2_struct(v, &dt));
        else CHECK(zg_dtype_from_v2_struct(v, &dt) == ZGPU_ERR_UNSUPPORTED && last_error_has("deeper than 16"));
        zj_free(v);
        free(text);
    }
    static const struct { const char *json; zgpu_status st; const char *needle; } bad[] = {
        {"[]", ZGPU_ERR_BAD_METADATA, "non-empty"},
        {"[[\"a\", \"<i4\"], [\"a\", \"<i8\"]]", ZGPU_ERR_BAD_METADATA, "\"a\" appears twice"},
        {"[[\"\", \"<i4\"]]", ZGPU_ERR_BAD_METADATA, "empty name"},
        {"[[\"a\", \"|O\"]]", ZGPU_ERR_UNSUPPORTED, "fixed-size"},
        {"[[\"a\", \"<U0\"]]", ZGPU_ERR_UNSUPPORTED, "fixed-size"},
        {"[[\"a\", \"|U2\"]]", ZGPU_ERR_UNSUPPORTED, "fixed-size"},
        {"[[\"a\", \"<i4\", []]]", ZGPU_ERR_BAD_METADATA, "1 to 32 extents"},
        {"[[\"a\", \"<i4\", [0]]]", ZGPU_ERR_BAD_METADATA, "positive"},
        {"[[\"a\", \"<i4\", [2.5]]]", ZGPU_ERR_BAD_METADATA, "positive"},
        {"[[\"a\", \"<f8\", [1048576, 1048576, 1048576]]]", ZGPU_ERR_UNSUPPORTED, "larger than"},
        {"[[\"a\", \"<f8\", [18446744073709551615]]]", ZGPU_ERR_UNSUPPORTED, "larger than"},
        {"[[\"a\", \"|V1048576\"], [\"b\", \"|u1\"]]", ZGPU_ERR_UNSUPPORTED, "larger than"},
        {"[[\"a\", \"<i4\", [1], 4]]", ZGPU_ERR_BAD_METADATA, "field 0"},
        {"[[5, \"<i4\"]]", ZGPU_ERR_BAD_METADATA, "field 0"},
        {"[[\"a\", 5]]", ZGPU_ERR_BAD_METADATA, "non-empty list"},
        {"[\"a\"]", ZGPU_ERR_BAD_METADATA, "field 0"},
        {"[[\"a\\u0001\", \"<i4\"]]", ZGPU_ERR_BAD_METADATA, "control"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zj_value *v = parse(bad[i].json);
        zg_dtype dt;
        CHECK_STATUS(zg_dtype_from_v2_struct(v, &dt), bad[i].st);
        CHECK_MSG(last_error_has(bad[i].needle), "%s: '%s'", bad[i].json, zgpu_last_error());
        zj_free(v);
    }
}

/* A structured array through the public API: records as stored, a base64 fill value, the name in messages. */
static void test_struct_array(zgpu_context *ctx) {
    uint64_t shape[1] = {5}, chunks[1] = {2};
    zgpu_array_spec s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    s.zarr_format = 2;
    s.ndim = 1;
    s.shape = shape;
    s.chunks = chunks;
    s.data_type = "[[\"a\", \"<i2\"], [\"b\", \">u2\", [2]]]";
    s.fill_value = "\"AQACAAMA\""; /* 01 00 02 00 03 00 */
    char *doc = NULL, path[128];
    zgpu_array *a = create_from_spec(ctx, &s, "st2", path, sizeof path, &doc);
    CHECK_MSG(doc && strstr(doc, "\"dtype\": [[\"a\", \"<i2\"], [\"b\", \">u2\", [2]]]"), "%s", doc);
    zgpu_free(doc);
    if (!a) return;
    CHECK(zgpu_array_dtype(a) == ZGPU_RAW && zgpu_array_itemsize(a) == 6);
    CHECK_STR(zgpu_array_dtype_name(a), "structured");
    char *np = NULL;
    CHECK_OK(zgpu_array_numpy_dtype(a, &np));
    CHECK_STR(np, "[[\"a\", \"<i2\"], [\"b\", \">u2\", [2]]]");
    zgpu_free(np);
    uint8_t rec[6] = {9, 8, 7, 6, 5, 4}, out[30];
    uint64_t start[1] = {3}, one[1] = {1}, all[1] = {0};
    CHECK_OK(zgpu_array_write(a, start, one, rec, NULL));
    CHECK_OK(zgpu_array_read(a, all, shape, out, NULL));
    static const uint8_t fill[6] = {1, 0, 2, 0, 3, 0};
    CHECK(!memcmp(out, fill, 6) && !memcmp(out + 18, rec, 6) && !memcmp(out + 24, fill, 6));
    zgpu_array_close(a);
    /* v3 and conversion are refused by name */
    s.zarr_format = 3;
    CHECK_STATUS(zgpu_metadata_build(&s, &doc), ZGPU_ERR_UNSUPPORTED);
    CHECK(last_error_has("Zarr v2 only"));
}

/* ---- variable-length strings and bytes ---- */

/* A chain of one vlen codec over `count` elements of the given kind. */
static zg_chain *vlen_chain(const char *dtype, const char *codec, uint64_t count) {
    zj_value *dt = parse(dtype);
    zg_repr r;
    memset(&r, 0, sizeof r);
    r.ndim = 1;
    r.shape[0] = count;
    if (zg_dtype_from_v3(dt, &r.dtype) != ZGPU_OK) exit(2);
    zj_free(dt);
    char text[128];
    snprintf(text, sizeof text, "[{\"name\": \"%s\", \"configuration\": {}}]", codec);
    zj_value *codecs = parse(text);
    zg_chain *ch = NULL;
    CHECK_OK(zg_chain_create(codecs, &r, &ch));
    zj_free(codecs);
    return ch;
}

static void test_vlen_codec(void) {
    zg_chain *ch = vlen_chain("\"string\"", "vlen-utf8", 3);
    if (!ch) return;
    const uint8_t *ptrs[3] = {(const uint8_t *)"ab", (const uint8_t *)"", (const uint8_t *)"\xc3\xa9"};
    uint32_t lens[3] = {2, 0, 2};
    zg_buf out = ZG_BUF_INIT;
    CHECK_OK(zg_vlen_encode(ch->a2b, 3, ptrs, lens, &out));
    static const uint8_t want[] = {3, 0, 0, 0, 2, 0, 0, 0, 'a', 'b', 0, 0, 0, 0, 2, 0, 0, 0, 0xc3, 0xa9};
    CHECK(out.size == sizeof want && !memcmp(out.data, want, sizeof want));
    uint64_t offs[3];
    uint32_t got[3];
    CHECK_OK(zg_vlen_parse(ch->a2b, out.data, out.size, 3, offs, got));
    CHECK(offs[0] == 8 && got[0] == 2 && got[1] == 0 && offs[2] == 18 && got[2] == 2);
    /* every truncation of a valid chunk is an error, never a read past it */
    for (size_t n = 0; n < out.size; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exactly n bytes: ASan sees any read past them */
        memcpy(copy, out.data, n);
        CHECK_MSG(zg_vlen_parse(ch->a2b, copy, n, 3, offs, got) == ZGPU_ERR_CORRUPT_DATA, "truncated at %zu", n);
        free(copy);
    }
    static const struct { const char *bytes; size_t n; const char *needle; } bad[] = {
        {"\x02\x00\x00\x00", 4, "holds 2 items, its shape holds 3"},
        {"\x03\x00\x00\x00\xff\xff\xff\xff", 8, "says it has 4294967295 bytes"},
        {"\x03\x00\x00\x00\x01\x00\x00\x00\x80\x00\x00\x00\x00\x00\x00\x00\x00", 17, "item 0 is not valid UTF-8"},
        {"\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00!", 17, "1 bytes follow the last"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_STATUS(zg_vlen_parse(ch->a2b, (const uint8_t *)bad[i].bytes, bad[i].n, 3, offs, got),
                     ZGPU_ERR_CORRUPT_DATA);
        CHECK_MSG(last_error_has(bad[i].needle) && last_error_has("vlen-utf8"), "%zu: '%s'", i, zgpu_last_error());
    }
    const uint8_t *badp[3] = {(const uint8_t *)"\xff", (const uint8_t *)"", (const uint8_t *)""};
    uint32_t badl[3] = {1, 0, 0};
    out.size = 0;
    CHECK_STATUS(zg_vlen_encode(ch->a2b, 3, badp, badl, &out), ZGPU_ERR_INVALID_ARGUMENT);
    /* the fixed-element entry points refuse the chain */
    uint8_t sink[8];
    CHECK_STATUS(zg_chain_decode(ch, want, sizeof want, sink, &(zg_scratch){0}), ZGPU_ERR_UNSUPPORTED);
    zg_buf_free(&out);
    zg_chain_free(ch);
    /* bytes elements are not checked as text; the pairing of data type and codec is */
    ch = vlen_chain("\"variable_length_bytes\"", "vlen-bytes", 1);
    CHECK_OK(zg_vlen_parse(ch->a2b, (const uint8_t *)"\x01\x00\x00\x00\x01\x00\x00\x00\xff", 9, 1, offs, got));
    zg_chain_free(ch);
    zj_value *codecs = parse("[{\"name\": \"vlen-bytes\"}]"), *dt = parse("\"string\"");
    zg_repr r;
    memset(&r, 0, sizeof r);
    r.ndim = 1;
    r.shape[0] = 2;
    CHECK_OK(zg_dtype_from_v3(dt, &r.dtype));
    CHECK_STATUS(zg_chain_create(codecs, &r, &ch), ZGPU_ERR_BAD_METADATA);
    CHECK(last_error_has("not variable_length_bytes"));
    zj_free(codecs);
    zj_free(dt);
    /* UTF-8 rules */
    CHECK(zg_utf8_valid((const uint8_t *)"\xf0\x9f\x98\x80", 4));
    CHECK(!zg_utf8_valid((const uint8_t *)"\xf4\x90\x80\x80", 4)); /* past U+10FFFF */
    CHECK(!zg_utf8_valid((const uint8_t *)"\xe0\x80\xaf", 3));     /* overlong */
    CHECK(!zg_utf8_valid((const uint8_t *)"\xed\xa0\x80", 3));     /* a surrogate */
    CHECK(!zg_utf8_valid((const uint8_t *)"\xe2\x82", 2));          /* cut short */
}

/* The public vlen entry points over both formats, with a compressor. */
static void test_vlen_array(zgpu_context *ctx) {
    for (int fmt = 2; fmt <= 3; fmt++) {
        uint64_t shape[2] = {3, 4}, chunks[2] = {2, 3};
        zgpu_array_spec s;
        memset(&s, 0, sizeof s);
        s.struct_size = sizeof s;
        s.zarr_format = fmt;
        s.ndim = 2;
        s.shape = shape;
        s.chunks = chunks;
        s.data_type = "\"string\"";
        s.codec_spec = "zstd";
        s.fill_value = "\"-\"";
        char path[128];
        zgpu_array *a = create_from_spec(ctx, &s, fmt == 3 ? "vs3" : "vs2", path, sizeof path, NULL);
        if (!a) continue;
        CHECK(zgpu_array_dtype(a) == ZGPU_STRING && zgpu_array_itemsize(a) == 0);
        /* write the box [1..3) x [1..4): "a", "", "ccc" / "dd", "e", "" */
        uint64_t start[2] = {1, 1}, count[2] = {2, 3}, offs_in[7] = {0, 1, 1, 4, 6, 7, 7};
        CHECK_OK(zgpu_array_write_vlen(a, start, count, offs_in, "acccdde"));
        uint64_t all0[2] = {0, 0}, *offs = NULL;
        void *data = NULL;
        size_t size = 0;
        CHECK_OK(zgpu_array_read_vlen(a, all0, shape, &offs, &data, &size));
        static const char *const want[12] = {"-", "-", "-", "-", "-", "a", "", "ccc", "-", "dd", "e", ""};
        for (int i = 0; offs && i < 12; i++)
            CHECK_MSG(offs[i + 1] - offs[i] == strlen(want[i]) && !memcmp((char *)data + offs[i], want[i], strlen(want[i])),
                      "fmt %d element %d", fmt, i);
        zgpu_free(offs);
        zgpu_free(data);
        /* fixed-size paths refuse it by name */
        uint8_t sink[64];
        CHECK_STATUS(zgpu_array_read(a, all0, shape, sink, NULL), ZGPU_ERR_UNSUPPORTED);
        CHECK(last_error_has("variable-length") && last_error_has(path));
        CHECK_STATUS(zgpu_array_write(a, all0, shape, sink, NULL), ZGPU_ERR_UNSUPPORTED);
        /* bad input: invalid UTF-8, offsets going back, a box outside */
        uint64_t one[2] = {1, 1}, offs_bad[2] = {0, 1}, offs_back[2] = {3, 1}, far[2] = {3, 0};
        CHECK_STATUS(zgpu_array_write_vlen(a, all0, one, offs_bad, "\xff"), ZGPU_ERR_INVALID_ARGUMENT);
        CHECK(last_error_has("not valid UTF-8"));
        CHECK_STATUS(zgpu_array_write_vlen(a, all0, one, offs_back, "abc"), ZGPU_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(zgpu_array_read_vlen(a, far, one, &offs, &data, &size), ZGPU_ERR_OUT_OF_RANGE);
        CHECK(offs == NULL && data == NULL);
        /* writing the fill value everywhere deletes the chunk */
        uint64_t c0[2] = {0, 0}, c0n[2] = {2, 3}, fills[7] = {0, 1, 2, 3, 4, 5, 6};
        CHECK_OK(zgpu_array_write_vlen(a, c0, c0n, fills, "------"));
        char chunk[160];
        snprintf(chunk, sizeof chunk, "%s/%s", path, fmt == 3 ? "c/0/0" : "0.0");
        CHECK(access(chunk, F_OK) != 0);
        zgpu_array_close(a);
    }
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/zgpu_dtypes_XXXXXX");
    if (!mkdtemp(g_dir)) return 1;
    zgpu_context *ctx = NULL;
    CHECK_OK(zgpu_context_create(NULL, &ctx));
    test_time_v3();
    test_time_v2();
    test_time_fill();
    test_time_array(ctx);
    test_struct_parse();
    test_struct_array(ctx);
    test_vlen_codec();
    test_vlen_array(ctx);
    zgpu_context_free(ctx);
    zt_remove_dir(g_dir);
    TEST_MAIN_END();
}
