/* Tests of src/meta: data types, half floats, fill values, and documents that must be refused (with the
 * message naming what is wrong). Documents zarr-python writes: test_meta.c. */
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


/* ---- helpers (and meta_helpers.h) ---- */


/* ---- data types ---- */

static void test_dtypes(void) {
    static const struct { const char *name; zgpu_dtype id; uint32_t size, swap; const char *v2le, *v2be; } rows[] = {
        {"bool", ZGPU_BOOL, 1, 1, "|b1", "|b1"},
        {"int8", ZGPU_INT8, 1, 1, "|i1", "|i1"},
        {"int16", ZGPU_INT16, 2, 2, "<i2", ">i2"},
        {"int32", ZGPU_INT32, 4, 4, "<i4", ">i4"},
        {"int64", ZGPU_INT64, 8, 8, "<i8", ">i8"},
        {"uint8", ZGPU_UINT8, 1, 1, "|u1", "|u1"},
        {"uint16", ZGPU_UINT16, 2, 2, "<u2", ">u2"},
        {"uint32", ZGPU_UINT32, 4, 4, "<u4", ">u4"},
        {"uint64", ZGPU_UINT64, 8, 8, "<u8", ">u8"},
        {"float16", ZGPU_FLOAT16, 2, 2, "<f2", ">f2"},
        {"float32", ZGPU_FLOAT32, 4, 4, "<f4", ">f4"},
        {"float64", ZGPU_FLOAT64, 8, 8, "<f8", ">f8"},
        {"complex64", ZGPU_COMPLEX64, 8, 4, "<c8", ">c8"},
        {"complex128", ZGPU_COMPLEX128, 16, 8, "<c16", ">c16"},
        {"r8", ZGPU_RAW, 1, 1, "|V1", "|V1"},
        {"r24", ZGPU_RAW, 3, 1, "|V3", "|V3"},
        {"r1024", ZGPU_RAW, 128, 1, "|V128", "|V128"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        zg_dtype dt, dt2, dt3;
        char buf[16];
        int be = -1;
        CHECK(zg_dtype_from_name(rows[i].name, &dt));
        CHECK(dt.id == rows[i].id);
        CHECK_EQ_U64(dt.size, rows[i].size);
        CHECK_STR(dt.name, rows[i].name);
        CHECK_EQ_U64(zg_dtype_swap_unit(&dt), rows[i].swap);
        CHECK_STR(zg_dtype_to_v2(&dt, 0, buf), rows[i].v2le);
        CHECK_STR(zg_dtype_to_v2(&dt, 1, buf), rows[i].v2be);
        /* v2 typestrings parse back to the same type and byte order */
        CHECK_OK(zg_dtype_from_v2(rows[i].v2be, &dt2, &be));
        CHECK(dt2.id == dt.id && dt2.size == dt.size && strcmp(dt2.name, dt.name) == 0);
        CHECK(be == (rows[i].v2be[0] == '>'));
        zj_value *s = zj_new_string(rows[i].name);
        CHECK_OK(zg_dtype_from_v3(s, &dt3));
        CHECK(dt3.id == dt.id && dt3.size == dt.size);
        zj_free(s);
    }
    static const char *const bad_names[] = {"r0", "r7", "r012", "r", "float128", "int", "Int8", "complex256", ""};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        zg_dtype dt;
        CHECK_MSG(!zg_dtype_from_name(bad_names[i], &dt), "%s", bad_names[i]);
        zj_value *s = zj_new_string(bad_names[i]);
        CHECK_STATUS(zg_dtype_from_v3(s, &dt), ZGPU_ERR_UNSUPPORTED);
        zj_free(s);
    }
    zg_dtype dt;
    int be = 7;
    CHECK_OK(zg_dtype_from_v2("<u2", &dt, &be));
    CHECK(dt.id == ZGPU_UINT16 && be == 0);
    CHECK_OK(zg_dtype_from_v2("|u1", &dt, &be));
    CHECK(dt.id == ZGPU_UINT8 && be == 0);
    CHECK_OK(zg_dtype_from_v2("<b1", &dt, &be));
    CHECK(dt.id == ZGPU_BOOL);
    /* zarr-python's raw_bytes object form */
    zj_value *obj = NULL;
    const char *rb = "{\"name\": \"raw_bytes\", \"configuration\": {\"length_bytes\": 5}}";
    CHECK_OK(zj_parse(rb, strlen(rb), "t", &obj));
    CHECK_OK(zg_dtype_from_v3(obj, &dt));
    CHECK(dt.id == ZGPU_RAW && dt.size == 5);
    CHECK_STR(dt.name, "r40");
    zj_free(obj);
    static const struct { const char *ts; zgpu_status st; const char *needle; } bad_v2[] = {
        {"<U10", ZGPU_ERR_UNSUPPORTED, "'<U10' (unicode strings)"},
        {"|S5", ZGPU_ERR_UNSUPPORTED, "'|S5' (byte strings)"},
        {"|O", ZGPU_ERR_UNSUPPORTED, "'|O'"},
        {"<M8[xs]", ZGPU_ERR_BAD_METADATA, "'<M8[xs]' is not a NumPy datetime64"},
        {"|m8[s]", ZGPU_ERR_BAD_METADATA, "'|m8[s]'"},
        {"<M4", ZGPU_ERR_UNSUPPORTED, "(datetimes are 8 bytes"},
        {"<f16", ZGPU_ERR_UNSUPPORTED, "'<f16'"},
        {"<c32", ZGPU_ERR_UNSUPPORTED, "'<c32'"},
        {"<i3", ZGPU_ERR_UNSUPPORTED, "'<i3'"},
        {"|V0", ZGPU_ERR_UNSUPPORTED, "'|V0'"},
        {"u4", ZGPU_ERR_BAD_METADATA, "'u4'"},
        {"|u4", ZGPU_ERR_BAD_METADATA, "needs byte order"},
        {"<", ZGPU_ERR_BAD_METADATA, "typestring"},
        {"", ZGPU_ERR_BAD_METADATA, "typestring"},
    };
    for (size_t i = 0; i < sizeof bad_v2 / sizeof bad_v2[0]; i++) {
        CHECK_STATUS(zg_dtype_from_v2(bad_v2[i].ts, &dt, &be), bad_v2[i].st);
        CHECK_MSG(last_error_has(bad_v2[i].needle), "'%s': message '%s'", bad_v2[i].ts, zgpu_last_error());
    }
}

/* ---- half floats ---- */

/* Nearest half by exhaustive search over the finite halves (ties to even), as the reference. */
static uint16_t half_reference(float f) {
    if (isnan(f)) return 0x7e00;
    double x = fabs((double)f);
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    /* finite positive halves are monotonic in their bit pattern 0x0000..0x7bff */
    uint16_t lo = 0, hi = 0x7bff;
    if (x >= 65520.0) return sign | 0x7c00; /* halfway to 2^16 and beyond round to inf */
    while (lo < hi) { /* largest h with value(h) <= x */
        uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
        if ((double)zg_half_to_float(mid) <= x) lo = mid; else hi = (uint16_t)(mid - 1);
    }
    uint16_t best = lo;
    if (lo < 0x7bff) {
        double dl = x - zg_half_to_float(lo), dh = (double)zg_half_to_float((uint16_t)(lo + 1)) - x;
        if (dh < dl || (dh == dl && (lo & 1))) best = (uint16_t)(lo + 1);
    }
    return sign | best;
}

static void test_half(void) {
    /* every non-NaN half survives half -> float -> half */
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = zg_half_to_float((uint16_t)h);
        int is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (is_nan) { if (!isnan(f) || !isnan(zg_half_to_float(zg_float_to_half(f)))) bad++; continue; }
        if (zg_float_to_half(f) != h) bad++;
    }
    CHECK_EQ_U64(bad, 0);
    CHECK(zg_half_to_float(0x3c00) == 1.0f);
    CHECK(zg_half_to_float(0xc000) == -2.0f);
    CHECK(zg_half_to_float(0x7bff) == 65504.0f);
    CHECK(zg_half_to_float(0x0001) == 0x1p-24f);
    CHECK(zg_half_to_float(0x0400) == 0x1p-14f);
    CHECK(isinf(zg_half_to_float(0x7c00)) && zg_half_to_float(0xfc00) < 0);
    CHECK(signbit(zg_half_to_float(0x8000)) && zg_half_to_float(0x8000) == 0.0f);
    /* rounding: ties to even, overflow, underflow, subnormals */
    CHECK_EQ_U64(zg_float_to_half(1.0f + 0x1p-11f), 0x3c00);      /* tie, even stays */
    CHECK_EQ_U64(zg_float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);  /* tie, odd rounds up */
    CHECK_EQ_U64(zg_float_to_half(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
    CHECK_EQ_U64(zg_float_to_half(65519.0f), 0x7bff);
    CHECK_EQ_U64(zg_float_to_half(65520.0f), 0x7c00);
    CHECK_EQ_U64(zg_float_to_half(1e10f), 0x7c00);
    CHECK_EQ_U64(zg_float_to_half(-1e10f), 0xfc00);
    CHECK_EQ_U64(zg_float_to_half(0x1p-25f), 0x0000);             /* half of the smallest subnormal: to even 0 */
    CHECK_EQ_U64(zg_float_to_half(0x1.8p-25f), 0x0001);
    CHECK_EQ_U64(zg_float_to_half(3 * 0x1p-25f), 0x0002);         /* 1.5 units: tie to even 2 */
    CHECK_EQ_U64(zg_float_to_half(0x1p-14f - 0x1p-25f), 0x0400);  /* rounds up into the normals */
    CHECK_EQ_U64(zg_float_to_half(-0.0f), 0x8000);
    CHECK_EQ_U64(zg_float_to_half(1e-30f), 0x0000);
    CHECK_EQ_U64(zg_float_to_half(INFINITY), 0x7c00);
    CHECK((zg_float_to_half(NAN) & 0x7c00) == 0x7c00 && (zg_float_to_half(NAN) & 0x3ff) != 0);
    /* against the exhaustive reference over a spread of float bit patterns */
    bad = 0;
    for (uint64_t b = 0; b < 0x100000000ull; b += 4099) {
        uint32_t bits = (uint32_t)b;
        float f;
        memcpy(&f, &bits, 4);
        if (isnan(f)) continue;
        if (zg_float_to_half(f) != half_reference(f)) {
            if (bad++ < 5) fprintf(stderr, "half(%a) = %04x, reference %04x\n", f, zg_float_to_half(f), half_reference(f));
        }
    }
    CHECK_EQ_U64(bad, 0);
}

/* ---- fill values ---- */

typedef struct fill_row {
    const char *dtype; /* v3 name */
    int fmt;
    const char *json;
    const char *bytes; /* expected native (little-endian) bytes as hex */
    const char *back;  /* expected zg_fill_to_json, compact; NULL: not checked */
} fill_row;

static const fill_row k_fill_ok[] = {
    {"bool", 3, "true", "01", "true"},
    {"bool", 3, "false", "00", "false"},
    {"int8", 3, "-128", "80", "-128"},
    {"int8", 3, "127", "7f", "127"},
    {"int16", 3, "-2", "feff", "-2"},
    {"int32", 3, "2147483647", "ffffff7f", "2147483647"},
    {"int64", 3, "-9223372036854775808", "0000000000000080", "-9223372036854775808"},
    {"uint8", 3, "255", "ff", "255"},
    {"uint16", 3, "65535", "ffff", "65535"},
    {"uint32", 3, "4294967295", "ffffffff", "4294967295"},
    {"uint64", 3, "18446744073709551615", "ffffffffffffffff", "18446744073709551615"},
    {"float16", 3, "1.0", "003c", "1.0"},
    {"float16", 3, "-2", "00c0", "-2.0"},
    {"float16", 3, "65504", "ff7b", "65504.0"},
    {"float16", 3, "65520", "007c", "\"Infinity\""},
    {"float16", 3, "0.1", "662e", "0.0999755859375"},
    {"float16", 3, "5.960464477539063e-08", "0100", "5.960464477539063e-08"},
    {"float16", 3, "\"NaN\"", "007e", "\"NaN\""},
    {"float16", 3, "\"-Infinity\"", "00fc", "\"-Infinity\""},
    {"float16", 3, "\"0x7e01\"", "017e", "\"0x7e01\""},
    {"float16", 3, "\"0x3C00\"", "003c", "1.0"},
    {"float32", 3, "\"NaN\"", "0000c07f", "\"NaN\""},
    {"float32", 3, "NaN", "0000c07f", "\"NaN\""},
    {"float32", 3, "\"0x7fc00001\"", "0100c07f", "\"0x7fc00001\""},
    {"float32", 3, "\"0xff800000\"", "000080ff", "\"-Infinity\""},
    {"float32", 3, "0.1", "cdcccc3d", "0.10000000149011612"},
    {"float32", 3, "-0.0", "00000080", "-0.0"},
    {"float32", 3, "1e39", "0000807f", "\"Infinity\""},
    {"float32", 3, "16777217", "0000804b", "16777216.0"},
    {"float64", 3, "\"Infinity\"", "000000000000f07f", "\"Infinity\""},
    {"float64", 3, "1.5", "000000000000f83f", "1.5"},
    {"float64", 3, "0", "0000000000000000", "0.0"},
    {"float64", 3, "\"0x7ff8000000000001\"", "010000000000f87f", "\"0x7ff8000000000001\""},
    {"float64", 3, "\"0x7ff8000000000000\"", "000000000000f87f", "\"NaN\""},
    {"float64", 3, "1e+300", "9c7500883ce4377e", "1e+300"},
    {"complex64", 3, "[1.0, 2.0]", "0000803f00000040", "[1.0, 2.0]"},
    {"complex64", 3, "[\"NaN\", \"Infinity\"]", "0000c07f0000807f", "[\"NaN\", \"Infinity\"]"},
    {"complex64", 3, "[\"0x3f800000\", -0.0]", "0000803f00000080", "[1.0, -0.0]"},
    {"complex128", 3, "[\"0x3ff0000000000000\", -2.5]", "000000000000f03f00000000000004c0", "[1.0, -2.5]"},
    {"r16", 3, "[1, 255]", "01ff", "[1, 255]"},
    {"r24", 3, "\"AQID\"", "010203", "[1, 2, 3]"},
    {"bool", 2, "false", "00", "false"},
    {"bool", 2, "1", "01", "true"},
    {"int32", 2, "3.0", "03000000", "3"},
    {"int16", 2, "-7", "f9ff", "-7"},
    {"float32", 2, "NaN", "0000c07f", "\"NaN\""},
    {"float32", 2, "\"NaN\"", "0000c07f", "\"NaN\""},
    {"float64", 2, "\"-Infinity\"", "000000000000f0ff", "\"-Infinity\""},
    {"float64", 2, "-Infinity", "000000000000f0ff", "\"-Infinity\""},
    {"float16", 2, "\"Infinity\"", "007c", "\"Infinity\""},
    {"float64", 2, "0.0", "0000000000000000", "0.0"},
    {"complex128", 2, "[1.0, 1.0]", "000000000000f03f000000000000f03f", "[1.0, 1.0]"},
    {"complex64", 2, "2.5", "0000204000000000", "[2.5, 0.0]"},
    {"complex64", 2, "[\"NaN\", \"Infinity\"]", "0000c07f0000807f", "[\"NaN\", \"Infinity\"]"},
    {"r24", 2, "\"AQID\"", "010203", "\"AQID\""},
    {"r8", 2, "0", "00", "\"AA==\""},
    {"r16", 2, "\"//8=\"", "ffff", "\"//8=\""},
};

static const struct { const char *dtype; int fmt; const char *json; const char *needle; } k_fill_bad[] = {
    {"int8", 3, "128", "128 is out of range for int8"},
    {"int8", 3, "-129", "-129 is out of range for int8"},
    {"uint8", 3, "-1", "-1 is out of range for uint8"},
    {"uint16", 3, "65536", "out of range"},
    {"int64", 3, "9223372036854775808", "out of range for int64"},
    {"uint64", 3, "-1", "out of range for uint64"},
    {"int32", 3, "1.5", "not an integer"},
    {"int32", 3, "1.0", "not an integer"},
    {"int32", 2, "1.5", "not an integer"},
    {"int32", 3, "\"1\"", "must be an integer"},
    {"bool", 3, "1", "true or false"},
    {"bool", 2, "2", "true or false"},
    {"float32", 3, "\"nan\"", "\"nan\" is not valid for float32"},
    {"float32", 3, "\"0x7fc0000001\"", "has 10 hex digits; float32 needs exactly 8"},
    {"float32", 3, "\"0x\"", "has 0 hex digits"},
    {"float16", 3, "\"0x7g00\"", "is not valid"},
    {"float32", 2, "\"0x7fc00001\"", "is not valid"},
    {"float32", 3, "true", "must be a number"},
    {"float64", 3, "[1.0]", "must be a number"},
    {"complex64", 3, "[1.0]", "pair, got 1 items"},
    {"complex64", 3, "1.0", "pair"},
    {"complex64", 3, "[1.0, \"x\"]", "\"x\" is not valid"},
    {"r16", 3, "[1]", "must list 2 bytes"},
    {"r16", 3, "[1, 256]", "0..255"},
    {"r16", 3, "7", "array of byte values"},
    {"r24", 3, "\"AQI=\"", "not base64 of 3 bytes"},
    {"r24", 2, "\"AQID=\"", "not base64"},
    {"r24", 2, "[1, 2, 3]", "base64"},
    {"uint8", 3, "null", "must not be null"},
};

static void test_fill_values(void) {
    for (size_t i = 0; i < sizeof k_fill_ok / sizeof k_fill_ok[0]; i++) {
        const fill_row *r = &k_fill_ok[i];
        zg_dtype dt;
        zj_value *v = NULL;
        uint8_t out[16];
        int is_null = -1;
        CHECK(zg_dtype_from_name(r->dtype, &dt));
        CHECK_OK(zj_parse(r->json, strlen(r->json), "fill", &v));
        memset(out, 0xAA, sizeof out);
        CHECK_OK(zg_fill_from_json(v, &dt, r->fmt, out, &is_null));
        CHECK_MSG(bytes_equal_hex(out, dt.size, r->bytes), "row %zu: %s v%d %s", i, r->dtype, r->fmt, r->json);
        CHECK(is_null == 0);
        zj_value *back = zg_fill_to_json(out, &dt, r->fmt);
        char *txt = back ? compact(back) : NULL;
        CHECK_MSG(txt && strcmp(txt, r->back) == 0, "row %zu: %s v%d %s -> %s, wanted %s", i, r->dtype, r->fmt,
                  r->json, txt ? txt : "(null)", r->back);
        /* and what was written parses to the same bits, unless v2 has lost a NaN payload */
        uint8_t again[16];
        CHECK_OK(zg_fill_from_json(back, &dt, r->fmt, again, NULL));
        CHECK(memcmp(out, again, dt.size) == 0);
        free(txt);
        zj_free(back);
        zj_free(v);
    }
    for (size_t i = 0; i < sizeof k_fill_bad / sizeof k_fill_bad[0]; i++) {
        zg_dtype dt;
        zj_value *v = NULL;
        uint8_t out[16];
        CHECK(zg_dtype_from_name(k_fill_bad[i].dtype, &dt));
        CHECK_OK(zj_parse(k_fill_bad[i].json, strlen(k_fill_bad[i].json), "fill", &v));
        CHECK_STATUS(zg_fill_from_json(v, &dt, k_fill_bad[i].fmt, out, NULL), ZGPU_ERR_BAD_METADATA);
        CHECK_MSG(last_error_has(k_fill_bad[i].needle) && last_error_has("fill_value"), "bad fill %zu (%s %s): '%s'",
                  i, k_fill_bad[i].dtype, k_fill_bad[i].json, zgpu_last_error());
        zj_free(v);
    }
    /* v2 null: zeros and the null flag */
    zg_dtype dt;
    zj_value *v = zj_new_null();
    uint8_t out[8];
    int is_null = 0;
    memset(out, 0xAA, sizeof out);
    CHECK(zg_dtype_from_name("float64", &dt));
    CHECK_OK(zg_fill_from_json(v, &dt, 2, out, &is_null));
    CHECK(is_null == 1 && bytes_equal_hex(out, 8, "0000000000000000"));
    zj_free(v);
    /* a NaN with payload: v3 keeps the bits (hex), v2 writes "NaN" as zarr-python does */
    uint8_t nan_payload[4] = {0x01, 0x00, 0xc0, 0x7f};
    CHECK(zg_dtype_from_name("float32", &dt));
    zj_value *j3 = zg_fill_to_json(nan_payload, &dt, 3), *j2 = zg_fill_to_json(nan_payload, &dt, 2);
    CHECK_JSON(j3, "\"0x7fc00001\"");
    CHECK_JSON(j2, "\"NaN\"");
    zj_free(j3);
    zj_free(j2);
}

/* ---- bad documents ---- */

typedef struct bad_v3 {
    const char *shape, *dtype, *grid, *cke, *fill, *codecs; /* NULL: a valid default; "-": member left out */
    const char *extra;                                      /* appended members */
    zgpu_status st;
    const char *needle;
} bad_v3;

static char *build_v3(const bad_v3 *r) {
    static char buf[8192];
    const char *keys[6] = {"shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs"};
    const char *dflt[6] = {"[10]", "\"float32\"", "{\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [5]}}",
                           "{\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}", "0.0",
                           "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]"};
    const char *vals[6] = {r->shape, r->dtype, r->grid, r->cke, r->fill, r->codecs};
    size_t n = (size_t)snprintf(buf, sizeof buf, "{\"zarr_format\": 3, \"node_type\": \"array\"");
    for (int i = 0; i < 6; i++) {
        const char *v = vals[i] ? vals[i] : dflt[i];
        if (strcmp(v, "-") == 0) continue;
        n += (size_t)snprintf(buf + n, sizeof buf - n, ", \"%s\": %s", keys[i], v);
    }
    snprintf(buf + n, sizeof buf - n, "%s}", r->extra ? r->extra : "");
    return buf;
}

static void test_bad_v3(void) {
    static char dims33[200];
    strcpy(dims33, "[1");
    for (int i = 1; i < 33; i++) strcat(dims33, ",1");
    strcat(dims33, "]");
    const bad_v3 rows[] = {
        {"[10, -1]", NULL, NULL, NULL, NULL, NULL, NULL, ZGPU_ERR_BAD_METADATA, "shape[1] is not a non-negative integer"},
        {"\"x\"", NULL, NULL, NULL, NULL, NULL, NULL, ZGPU_ERR_BAD_METADATA, "shape must be a list"},
        {"-", NULL, NULL, NULL, NULL, NULL, NULL, ZGPU_ERR_BAD_METADATA, "shape is missing"},
        {dims33, NULL, NULL, NULL, NULL, NULL, NULL, ZGPU_ERR_UNSUPPORTED, "shape has 33 dimensions"},
        {"[10, 4]", NULL, NULL, NULL, NULL, NULL, NULL, ZGPU_ERR_BAD_METADATA,
         "zarr.json: chunk_grid.chunk_shape has 1 entries, shape has 2"},
        {NULL, NULL, "{\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [0]}}", NULL, NULL, NULL, NULL,
         ZGPU_ERR_BAD_METADATA, "chunk_grid.chunk_shape[0] is 0"},
        {NULL, NULL, "{\"name\": \"rectilinear\", \"configuration\": {}}", NULL, NULL, NULL, NULL, ZGPU_ERR_UNSUPPORTED,
         "chunk_grid 'rectilinear'"},
        {NULL, NULL, "{\"name\": \"regular\"}", NULL, NULL, NULL, NULL, ZGPU_ERR_BAD_METADATA,
         "chunk_grid.configuration is missing"},
        {NULL, NULL, "{\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [5]}, \"foo\": 1}", NULL, NULL, NULL,
         NULL, ZGPU_ERR_UNSUPPORTED, "chunk_grid member 'foo'"},
        {NULL, NULL, "[5]", NULL, NULL, NULL, NULL, ZGPU_ERR_BAD_METADATA, "chunk_grid must be"},
        {NULL, NULL, "-", NULL, NULL, NULL, NULL, ZGPU_ERR_BAD_METADATA, "chunk_grid is missing"},
        {NULL, "\"strings\"", NULL, NULL, NULL, NULL, NULL, ZGPU_ERR_UNSUPPORTED, "data_type 'strings'"},
        {NULL, "\"r12\"", NULL, NULL, NULL, NULL, NULL, ZGPU_ERR_UNSUPPORTED, "data_type 'r12'"},
        {NULL, "{\"name\": \"float8_e4m3\", \"must_understand\": false}", NULL, NULL, NULL, NULL, NULL,
         ZGPU_ERR_UNSUPPORTED, "data_type 'float8_e4m3'"},
        {NULL, "5", NULL, NULL, NULL, NULL, NULL, ZGPU_ERR_BAD_METADATA, "data_type must be"},
        {NULL, "-", NULL, NULL, NULL, NULL, NULL, ZGPU_ERR_BAD_METADATA, "data_type is missing"},
        {NULL, NULL, NULL, "{\"name\": \"custom\"}", NULL, NULL, NULL, ZGPU_ERR_UNSUPPORTED,
         "chunk_key_encoding 'custom'"},
        {NULL, NULL, NULL, "{\"name\": \"default\", \"configuration\": {\"separator\": \"-\"}}", NULL, NULL, NULL,
         ZGPU_ERR_BAD_METADATA, "chunk_key_encoding.separator must be"},
        {NULL, NULL, NULL, "{\"name\": \"v2\", \"configuration\": 3}", NULL, NULL, NULL, ZGPU_ERR_BAD_METADATA,
         "chunk_key_encoding.configuration must be an object"},
        {NULL, NULL, NULL, "-", NULL, NULL, NULL, ZGPU_ERR_BAD_METADATA, "chunk_key_encoding is missing"},
        {NULL, NULL, NULL, NULL, "-", NULL, NULL, ZGPU_ERR_BAD_METADATA, "fill_value is missing"},
        {NULL, NULL, NULL, NULL, "\"abc\"", NULL, NULL, ZGPU_ERR_BAD_METADATA, "fill_value \"abc\""},
        {NULL, "\"uint8\"", NULL, NULL, "256", NULL, NULL, ZGPU_ERR_BAD_METADATA, "256 is out of range for uint8"},
        {NULL, NULL, NULL, NULL, NULL, "[]", NULL, ZGPU_ERR_BAD_METADATA, "codecs is empty"},
        {NULL, NULL, NULL, NULL, NULL, "-", NULL, ZGPU_ERR_BAD_METADATA, "codecs is missing"},
        {NULL, NULL, NULL, NULL, NULL, "{\"name\": \"bytes\"}", NULL, ZGPU_ERR_BAD_METADATA, "codecs must be a list"},
        {NULL, NULL, NULL, NULL, NULL, "[{\"configuration\": {}}]", NULL, ZGPU_ERR_BAD_METADATA,
         "codecs[0] has no string \"name\""},
        {NULL, NULL, NULL, NULL, NULL, "[{\"name\": \"bytes\"}, 5]", NULL, ZGPU_ERR_BAD_METADATA, "codecs[1]"},
        {NULL, NULL, NULL, NULL, NULL, "[{\"name\": \"bytes\", \"configuration\": []}]", NULL, ZGPU_ERR_BAD_METADATA,
         "codecs[0] ('bytes'): configuration must be an object"},
        {NULL, NULL, NULL, NULL, NULL, NULL, ", \"attributes\": []", ZGPU_ERR_BAD_METADATA, "attributes must be"},
        {NULL, NULL, NULL, NULL, NULL, NULL, ", \"dimension_names\": [\"a\", \"b\"]", ZGPU_ERR_BAD_METADATA,
         "dimension_names has 2 entries, shape has 1"},
        {NULL, NULL, NULL, NULL, NULL, NULL, ", \"dimension_names\": [5]", ZGPU_ERR_BAD_METADATA, "dimension_names[0]"},
        {NULL, NULL, NULL, NULL, NULL, NULL, ", \"dimension_names\": \"x\"", ZGPU_ERR_BAD_METADATA,
         "dimension_names must be a list"},
        {NULL, NULL, NULL, NULL, NULL, NULL, ", \"storage_transformers\": [{\"name\": \"chunk-manifest\"}]",
         ZGPU_ERR_UNSUPPORTED, "storage transformer 'chunk-manifest'"},
        {NULL, NULL, NULL, NULL, NULL, NULL, ", \"storage_transformers\": {}", ZGPU_ERR_BAD_METADATA,
         "storage_transformers must be a list"},
        {NULL, NULL, NULL, NULL, NULL, NULL, ", \"foo\": {\"bar\": 1}", ZGPU_ERR_UNSUPPORTED, "member 'foo'"},
        {NULL, NULL, NULL, NULL, NULL, NULL, ", \"foo\": {\"must_understand\": true}", ZGPU_ERR_UNSUPPORTED,
         "member 'foo'"},
        {NULL, NULL, NULL, NULL, NULL, NULL, ", \"foo\": 3", ZGPU_ERR_UNSUPPORTED, "member 'foo'"},
        {"[4294967296, 4294967296, 2]", NULL,
         "{\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [1, 1, 1]}}", NULL, NULL, NULL, NULL,
         ZGPU_ERR_BAD_METADATA, "2^64 elements"},
        {"[1, 1]", NULL, "{\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [4611686018427387904, 8]}}",
         NULL, NULL, NULL, NULL, ZGPU_ERR_BAD_METADATA, "2^64 bytes"},
        {"[9223372036854775808]", NULL, NULL, NULL, NULL, NULL, NULL, ZGPU_ERR_BAD_METADATA, "too large"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *doc = build_v3(&rows[i]);
        zg_array_meta m;
        memset(&m, 0x5A, sizeof m);
        CHECK_STATUS(zg_meta_parse_v3(doc, strlen(doc), "array 'data/x.zarr'", &m), rows[i].st);
        CHECK_MSG(last_error_has(rows[i].needle) && strncmp(zgpu_last_error(), "array 'data/x.zarr': zarr.json: ", 32) == 0,
                  "row %zu: '%s' lacks '%s'", i, zgpu_last_error(), rows[i].needle);
        CHECK(m.doc == NULL && m.codecs == NULL && m.fill_value == NULL && m.attributes == NULL);
        zg_meta_free(&m);
    }
    /* the valid default document really is valid */
    const bad_v3 good = {NULL, NULL, NULL, NULL, NULL, NULL, ", \"dimension_names\": [null]", ZGPU_OK, ""};
    const char *doc = build_v3(&good);
    zg_array_meta m;
    CHECK_OK(zg_meta_parse_v3(doc, strlen(doc), "array 'ok'", &m));
    zg_meta_free(&m);

    static const struct { const char *doc; const char *needle; } whole[] = {
        {"{\"zarr_format\": 2, \"node_type\": \"array\"}", "zarr_format is 2, expected 3"},
        {"{\"zarr_format\": \"3\", \"node_type\": \"array\"}", "zarr_format must be an integer"},
        {"{\"node_type\": \"array\"}", "zarr_format is missing"},
        {"{\"zarr_format\": 3, \"node_type\": \"group\"}", "node_type is 'group', expected 'array'"},
        {"{\"zarr_format\": 3}", "node_type is missing"},
        {"{\"zarr_format\": 3, \"node_type\": \"array\",", "JSON"},
        {"[]", "must be a JSON object"},
        {"", "JSON"},
    };
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++) {
        CHECK_STATUS(zg_meta_parse_v3(whole[i].doc, strlen(whole[i].doc), "array 'w'", &m), ZGPU_ERR_BAD_METADATA);
        CHECK_MSG(last_error_has(whole[i].needle) && strncmp(zgpu_last_error(), "array 'w': zarr.json: ", 22) == 0,
                  "whole %zu: '%s'", i, zgpu_last_error());
    }
}

static void test_bad_v2(void) {
    static const struct { const char *doc; const char *attrs; zgpu_status st; const char *needle; } rows[] = {
#define V2(fields) "{\"zarr_format\": 2, " fields "}"
#define OK_FIELDS(rest) "\"shape\": [10], \"chunks\": [5], \"compressor\": null, \"order\": \"C\", \"filters\": null, " rest
        {V2(OK_FIELDS("\"dtype\": \"<U10\", \"fill_value\": \"\"")), NULL, ZGPU_ERR_UNSUPPORTED, "dtype '<U10'"},
        {V2(OK_FIELDS("\"dtype\": \"|S5\", \"fill_value\": \"\"")), NULL, ZGPU_ERR_UNSUPPORTED, "dtype '|S5'"},
        {V2(OK_FIELDS("\"dtype\": \"|O\", \"fill_value\": 0")), NULL, ZGPU_ERR_UNSUPPORTED, "dtype '|O'"},
        {V2(OK_FIELDS("\"dtype\": \"<M8[ns]\", \"fill_value\": \"nat\"")), NULL, ZGPU_ERR_BAD_METADATA, "\"NaT\""},
        {V2(OK_FIELDS("\"dtype\": [[\"a\", \"<i4\"], [\"b\", \"|O\"]], \"fill_value\": null")), NULL,
         ZGPU_ERR_UNSUPPORTED, "dtype [[\"a\", \"<i4\"], [\"b\", \"|O\"]]: structured dtype: field \"b\""},
        {V2(OK_FIELDS("\"dtype\": 5, \"fill_value\": 0")), NULL, ZGPU_ERR_BAD_METADATA, "dtype must be a string"},
        {V2(OK_FIELDS("\"fill_value\": 0")), NULL, ZGPU_ERR_BAD_METADATA, "dtype is missing"},
        {V2(OK_FIELDS("\"dtype\": \"u4\", \"fill_value\": 0")), NULL, ZGPU_ERR_BAD_METADATA, "dtype 'u4'"},
        {V2("\"shape\": [10], \"chunks\": [0], \"dtype\": \"<i4\", \"fill_value\": 0"), NULL, ZGPU_ERR_BAD_METADATA,
         "chunks[0] is 0"},
        {V2("\"shape\": [10], \"chunks\": [5, 5], \"dtype\": \"<i4\", \"fill_value\": 0"), NULL, ZGPU_ERR_BAD_METADATA,
         ".zarray: chunks has 2 entries, shape has 1"},
        {V2("\"shape\": [10], \"dtype\": \"<i4\", \"fill_value\": 0"), NULL, ZGPU_ERR_BAD_METADATA, "chunks is missing"},
        {V2("\"shape\": [10], \"chunks\": [5], \"dtype\": \"<i4\", \"fill_value\": 0, \"order\": \"X\""), NULL,
         ZGPU_ERR_BAD_METADATA, "order must be"},
        {V2("\"shape\": [10], \"chunks\": [5], \"dtype\": \"<i4\", \"fill_value\": 0, \"compressor\": {\"level\": 1}"),
         NULL, ZGPU_ERR_BAD_METADATA, "compressor must be"},
        {V2("\"shape\": [10], \"chunks\": [5], \"dtype\": \"<i4\", \"fill_value\": 0, \"compressor\": \"zstd\""), NULL,
         ZGPU_ERR_BAD_METADATA, "compressor must be"},
        {V2("\"shape\": [10], \"chunks\": [5], \"dtype\": \"<i4\", \"fill_value\": 0, \"filters\": {\"id\": \"delta\"}"),
         NULL, ZGPU_ERR_BAD_METADATA, "filters must be null or a list"},
        {V2("\"shape\": [10], \"chunks\": [5], \"dtype\": \"<i4\", \"fill_value\": 0, \"filters\": [{\"x\": 1}]"), NULL,
         ZGPU_ERR_BAD_METADATA, "filters[0]"},
        {V2("\"shape\": [10], \"chunks\": [5], \"dtype\": \"<i4\", \"fill_value\": 0, \"filters\": [{\"id\": "
            "\"shuffle\", \"elementsize\": 4}, {\"id\": \"delta\", \"dtype\": \"<i4\"}]"),
         NULL, ZGPU_ERR_UNSUPPORTED, "filters[1] 'delta'"},
        {V2("\"shape\": [10], \"chunks\": [5], \"dtype\": \"<i4\", \"fill_value\": 0, \"filters\": [{\"id\": "
            "\"delta\", \"dtype\": \">i4\"}]"),
         NULL, ZGPU_ERR_UNSUPPORTED, "other byte order"},
        {V2("\"shape\": [10], \"chunks\": [5], \"dtype\": \"<i4\", \"fill_value\": 0, \"dimension_separator\": \"-\""),
         NULL, ZGPU_ERR_BAD_METADATA, "dimension_separator must be"},
        {V2("\"shape\": [10], \"chunks\": [5], \"dtype\": \"<f4\", \"fill_value\": \"abc\""), NULL,
         ZGPU_ERR_BAD_METADATA, "fill_value \"abc\""},
        {V2("\"shape\": [10], \"chunks\": [5], \"dtype\": \"|u1\", \"fill_value\": 300"), NULL, ZGPU_ERR_BAD_METADATA,
         "300 is out of range for uint8"},
        {V2("\"shape\": -1, \"chunks\": [5], \"dtype\": \"|u1\", \"fill_value\": 0"), NULL, ZGPU_ERR_BAD_METADATA,
         "shape must be a list"},
        {"{\"zarr_format\": 3, \"shape\": [1]}", NULL, ZGPU_ERR_BAD_METADATA, "zarr_format is 3, expected 2"},
        {"{\"shape\": [1]}", NULL, ZGPU_ERR_BAD_METADATA, "zarr_format is missing"},
        {"{\"zarr_format\": 2,", NULL, ZGPU_ERR_BAD_METADATA, ".zarray: JSON"},
        {V2("\"shape\": [10], \"chunks\": [5], \"dtype\": \"<i4\", \"fill_value\": 0"), "[]", ZGPU_ERR_BAD_METADATA,
         ".zattrs: the attributes must be a JSON object"},
        {V2("\"shape\": [10], \"chunks\": [5], \"dtype\": \"<i4\", \"fill_value\": 0"), "{", ZGPU_ERR_BAD_METADATA,
         ".zattrs: JSON"},
#undef V2
#undef OK_FIELDS
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        zg_array_meta m;
        memset(&m, 0x5A, sizeof m);
        CHECK_STATUS(zg_meta_parse_v2(rows[i].doc, strlen(rows[i].doc), rows[i].attrs,
                                      rows[i].attrs ? strlen(rows[i].attrs) : 0, "array 'old.zarr'", &m),
                     rows[i].st);
        CHECK_MSG(last_error_has(rows[i].needle) && strncmp(zgpu_last_error(), "array 'old.zarr': .za", 21) == 0,
                  "row %zu: '%s' lacks '%s'", i, zgpu_last_error(), rows[i].needle);
        CHECK(m.doc == NULL && m.codecs == NULL && m.fill_value == NULL);
    }
}

int main(void) {
    uint16_t probe = 1;
    if (*(uint8_t *)&probe != 1) TEST_SKIP("the expected byte strings assume a little-endian host");
    test_dtypes();
    test_half();
    test_fill_values();
    test_bad_v3();
    test_bad_v2();
    TEST_MAIN_END();
}
