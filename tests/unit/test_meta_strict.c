/* Strict metadata (issue 25, item 6): hostile documents and the status and message each must give. Every row
 * is a base document (v3 zarr.json, v2 .zarray, v3 group) with some members replaced; the expected message
 * names the array, the field and the value. Rows that must be accepted check the value read.
 * The same documents, against zarr-python: tests/interop/test_metadata_strict.py; the rules:
 * docs/metadata-validation.md. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meta/dtype.h"
#include "meta/metadata.h"
#include "meta/names.h"
#include "test.h"
#include "meta_helpers.h"
#include "common/json.h"
#include "common/status.h"

#define ARRAY_PREFIX "array 'strict': "

static const char k_base_v3[] =
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4, 4], \"data_type\": \"float32\", "
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [2, 2]}}, "
    "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, "
    "\"fill_value\": 0.0, \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}], "
    "\"attributes\": {}}";

static const char k_base_v2[] =
    "{\"zarr_format\": 2, \"shape\": [4, 4], \"chunks\": [2, 2], \"dtype\": \"<f4\", \"fill_value\": 0.0, "
    "\"order\": \"C\", \"filters\": null, \"compressor\": null, \"dimension_separator\": \".\"}";

static const char k_base_group[] = "{\"zarr_format\": 3, \"node_type\": \"group\", \"attributes\": {}}";

enum { V3 = 3, V2 = 2, GROUP = 1 };

typedef struct strict_case {
    int kind;              /* V3, V2 or GROUP */
    const char *over;      /* members to replace, a JSON object with ' for "; the value "$del" removes one */
    zgpu_status st;        /* expected status */
    const char *needle;    /* in the message (error), or the fill value's bytes in hex (ZGPU_OK) */
} strict_case;

static const strict_case k_cases[] = {
    /* --- hex fill values: exactly 2 * itemsize digits after a lowercase "0x" --- */
    {V3, "{'fill_value': '0x1234'}", ZGPU_ERR_BAD_METADATA,
     "fill_value \"0x1234\" has 4 hex digits; float32 needs exactly 8 (the value's 4 bytes)"},
    {V3, "{'fill_value': '0x3ff0000000000000'}", ZGPU_ERR_BAD_METADATA, "has 16 hex digits; float32 needs exactly 8"},
    {V3, "{'fill_value': '0x3f8000'}", ZGPU_ERR_BAD_METADATA, "has 6 hex digits"},
    {V3, "{'fill_value': '0X3f800000'}", ZGPU_ERR_BAD_METADATA, "fill_value \"0X3f800000\" is not valid for float32"},
    {V3, "{'fill_value': '0x3f80000g'}", ZGPU_ERR_BAD_METADATA, "is not valid for float32"},
    {V3, "{'fill_value': '0x3f80\\u00000000'}", ZGPU_ERR_BAD_METADATA, "\"0x3f80\\u00000000\" is not valid"},
    {V3, "{'data_type': 'float64', 'fill_value': '0x3f800000'}", ZGPU_ERR_BAD_METADATA, "float64 needs exactly 16"},
    {V3, "{'data_type': 'float16', 'fill_value': '0x3f800000', 'codecs': [{'name': 'bytes', 'configuration': "
         "{'endian': 'little'}}]}", ZGPU_ERR_BAD_METADATA, "float16 needs exactly 4"},
    {V3, "{'data_type': 'complex64', 'fill_value': ['0x3c00', 0.0]}", ZGPU_ERR_BAD_METADATA,
     "\"0x3c00\" has 4 hex digits; complex64 needs exactly 8"},
    {V3, "{'data_type': 'int32', 'fill_value': '0x00000001'}", ZGPU_ERR_BAD_METADATA, "must be an integer"},
    {V3, "{'fill_value': '0x3F800000'}", ZGPU_OK, "0000803f"},
    {V3, "{'fill_value': '0x7fc00001'}", ZGPU_OK, "0100c07f"},
    {V3, "{'data_type': 'float64', 'fill_value': '0x3ff0000000000000'}", ZGPU_OK, "000000000000f03f"},
    {V3, "{'data_type': 'float16', 'fill_value': '0x3c00'}", ZGPU_OK, "003c"},
    {V3, "{'data_type': 'complex64', 'fill_value': ['0x3f800000', '0x7fc00000']}", ZGPU_OK, "0000803f0000c07f"},
    /* --- special float strings compare whole: "NaN\u0000" is not "NaN" --- */
    {V3, "{'fill_value': 'NaN\\u0000'}", ZGPU_ERR_BAD_METADATA, "fill_value \"NaN\\u0000\" is not valid"},
    {V3, "{'fill_value': 'Infinity'}", ZGPU_OK, "0000807f"},
    {V3, "{'fill_value': '1.5'}", ZGPU_ERR_BAD_METADATA, "\"1.5\" is not valid for float32"},
    {V3, "{'fill_value': true}", ZGPU_ERR_BAD_METADATA, "fill_value for float32 must be a number"},
    /* --- names with NUL or control characters --- */
    {V3, "{'data_type': 'int32\\u0000x', 'fill_value': 0}", ZGPU_ERR_BAD_METADATA,
     "data_type \"int32\\u0000x\" contains a NUL or control character"},
    {V3, "{'data_type': 'float32\\n'}", ZGPU_ERR_BAD_METADATA, "data_type \"float32\\u000a\" contains"},
    {V3, "{'data_type': {'name': 'float32\\u0000'}}", ZGPU_ERR_BAD_METADATA, "data_type.name \"float32\\u0000\""},
    {V3, "{'node_type': 'array\\u0000'}", ZGPU_ERR_BAD_METADATA, "node_type \"array\\u0000\" contains"},
    {V3, "{'chunk_grid': {'name': 'regular\\u0000x', 'configuration': {'chunk_shape': [2, 2]}}}",
     ZGPU_ERR_BAD_METADATA, "chunk_grid.name \"regular\\u0000x\" contains"},
    {V3, "{'chunk_key_encoding': {'name': 'default\\u0000', 'configuration': {'separator': '/'}}}",
     ZGPU_ERR_BAD_METADATA, "chunk_key_encoding.name \"default\\u0000\" contains"},
    {V3, "{'chunk_key_encoding': 'v2\\u001f'}", ZGPU_ERR_BAD_METADATA, "chunk_key_encoding \"v2\\u001f\" contains"},
    {V3, "{'chunk_key_encoding': {'name': 'default', 'configuration': {'separator': '/\\u0000'}}}",
     ZGPU_ERR_BAD_METADATA, "chunk_key_encoding.separator must be \"/\" or \".\", not \"/\\u0000\""},
    {V3, "{'codecs': [{'name': 'bytes\\u0000x', 'configuration': {'endian': 'little'}}]}", ZGPU_ERR_BAD_METADATA,
     "codecs[0].name \"bytes\\u0000x\" contains a NUL"},
    {V3, "{'codecs': ['bytes\\u0000']}", ZGPU_ERR_BAD_METADATA, "codecs[0] \"bytes\\u0000\" contains a NUL"},
    {V3, "{'codecs': [{'name': 'bytes\\t', 'configuration': {'endian': 'little'}}]}", ZGPU_ERR_BAD_METADATA,
     "codecs[0].name \"bytes\\u0009\" contains a NUL or control character"},
    {V3, "{'codecs': [{'name': 'bytes', 'configuration': {'endian': 'little\\u0000'}}]}", ZGPU_ERR_BAD_METADATA,
     "codecs[0].configuration.endian \"little\\u0000\" contains a NUL"},
    {V3, "{'codecs': [{'name': 'sharding_indexed', 'configuration': {'chunk_shape': [1, 1], 'codecs': [{'name': "
         "'bytes', 'configuration': {'endian': 'little'}}], 'index_codecs': [{'name': 'bytes', 'configuration': "
         "{'endian': 'little'}}, {'name': 'crc32c\\u0000'}]}}]}", ZGPU_ERR_BAD_METADATA,
     "codecs[0].configuration.index_codecs[1].name \"crc32c\\u0000\""},
    {V3, "{'dimension_names': ['a\\u0000b', null]}", ZGPU_ERR_BAD_METADATA, "dimension_names[0] \"a\\u0000b\" contains a NUL"},
    {V3, "{'dimension_names': ['a\\nb', null]}", ZGPU_OK, "00000000"},
    {V3, "{'attributes': {'k': 'v\\u0000w'}}", ZGPU_OK, "00000000"},
    /* --- extension points and their configurations --- */
    {V3, "{'chunk_grid': {'name': 'regular', 'configuration': {'chunk_shape': [2, 2], 'x': 1}}}",
     ZGPU_ERR_BAD_METADATA, "chunk_grid.configuration member 'x' is not allowed"},
    {V3, "{'chunk_key_encoding': {'name': 'default', 'configuration': {'separator': '/', 'x': 1}}}",
     ZGPU_ERR_BAD_METADATA, "chunk_key_encoding.configuration member 'x' is not allowed"},
    {V3, "{'chunk_key_encoding': {'name': 'default', 'configuration': {'separator': '-'}}}", ZGPU_ERR_BAD_METADATA,
     "separator must be \"/\" or \".\", not \"-\""},
    {V3, "{'chunk_key_encoding': {'name': 'default', 'configuration': {'separator': null}}}", ZGPU_ERR_BAD_METADATA,
     "not a non-string"},
    {V3, "{'chunk_grid': {'name': 'rectilinear', 'configuration': {'chunk_shape': [2, 2]}}}", ZGPU_ERR_UNSUPPORTED,
     "chunk_grid 'rectilinear' is not supported"},
    {V3, "{'chunk_grid': {'name': 'regular'}}", ZGPU_ERR_BAD_METADATA, "chunk_grid.configuration is missing"},
    {V3, "{'chunk_grid': {'name': 'regular', 'configuration': {'chunk_shape': [2, 2]}, 'x': 1}}", ZGPU_ERR_UNSUPPORTED,
     "chunk_grid member 'x' is not supported"},
    {V3, "{'chunk_key_encoding': {'name': 'v2'}}", ZGPU_OK, "00000000"},
    /* --- shapes and chunk shapes --- */
    {V3, "{'shape': [-1, 4]}", ZGPU_ERR_BAD_METADATA, "shape[0] is not a non-negative integer"},
    {V3, "{'shape': [4.0, 4]}", ZGPU_ERR_BAD_METADATA, "shape[0] is not a non-negative integer"},
    {V3, "{'shape': [1e400, 4]}", ZGPU_ERR_BAD_METADATA, "shape[0] is not a non-negative integer"},
    {V3, "{'shape': [true, 4]}", ZGPU_ERR_BAD_METADATA, "shape[0] is not a non-negative integer"},
    {V3, "{'shape': ['4', 4]}", ZGPU_ERR_BAD_METADATA, "shape[0] is not a non-negative integer"},
    {V3, "{'shape': 4}", ZGPU_ERR_BAD_METADATA, "shape must be a list of integers"},
    {V3, "{'shape': [4]}", ZGPU_ERR_BAD_METADATA, "chunk_grid.chunk_shape has 2 entries, shape has 1"},
    {V3, "{'shape': [4611686018427387904, 4611686018427387904]}", ZGPU_ERR_BAD_METADATA,
     "shape has more than 2^64 elements"},
    {V3, "{'shape': [18446744073709551615, 1]}", ZGPU_ERR_BAD_METADATA, "shape[0] = 18446744073709551615 is too large"},
    {V3, "{'chunk_grid': {'name': 'regular', 'configuration': {'chunk_shape': [0, 2]}}}", ZGPU_ERR_BAD_METADATA,
     "chunk_grid.chunk_shape[0] is 0"},
    {V3, "{'chunk_grid': {'name': 'regular', 'configuration': {'chunk_shape': [2.0, 2]}}}", ZGPU_ERR_BAD_METADATA,
     "chunk_grid.chunk_shape[0] is not a non-negative integer"},
    {V3, "{'chunk_grid': {'name': 'regular', 'configuration': {'chunk_shape': [1099511627776, 1099511627776]}}}",
     ZGPU_ERR_BAD_METADATA, "one chunk would hold more than 2^64 bytes"},
    {V3, "{'shape': [0, 4]}", ZGPU_OK, "00000000"},
    /* --- integer and bool fill values --- */
    {V3, "{'data_type': 'int8', 'fill_value': 300}", ZGPU_ERR_BAD_METADATA, "fill_value 300 is out of range for int8"},
    {V3, "{'data_type': 'uint8', 'fill_value': -1}", ZGPU_ERR_BAD_METADATA, "fill_value -1 is out of range for uint8"},
    {V3, "{'data_type': 'int32', 'fill_value': 1e400}", ZGPU_ERR_BAD_METADATA, "fill_value inf is not an integer"},
    {V3, "{'data_type': 'int32', 'fill_value': 1.0}", ZGPU_ERR_BAD_METADATA, "fill_value 1 is not an integer of type int32"},
    {V3, "{'data_type': 'int32', 'fill_value': '7'}", ZGPU_ERR_BAD_METADATA, "fill_value for int32 must be an integer"},
    {V3, "{'data_type': 'uint64', 'fill_value': 18446744073709551615}", ZGPU_OK, "ffffffffffffffff"},
    {V3, "{'data_type': 'int64', 'fill_value': 9223372036854775808}", ZGPU_ERR_BAD_METADATA, "out of range for int64"},
    {V3, "{'data_type': 'uint64', 'fill_value': 18446744073709551616}", ZGPU_ERR_BAD_METADATA,
     "fill_value 18446744073709551616 is out of range for uint64"},
    {V3, "{'data_type': 'int64', 'fill_value': -9223372036854775809}", ZGPU_ERR_BAD_METADATA,
     "fill_value -9223372036854775809 is out of range for int64"},
    {V3, "{'data_type': 'bool', 'fill_value': 1}", ZGPU_ERR_BAD_METADATA, "fill_value for bool must be true or false"},
    {V3, "{'data_type': 'bool', 'fill_value': 'true'}", ZGPU_ERR_BAD_METADATA, "must be true or false"},
    {V3, "{'fill_value': null}", ZGPU_ERR_BAD_METADATA, "fill_value must not be null in Zarr v3"},
    {V3, "{'fill_value': '$del'}", ZGPU_ERR_BAD_METADATA, "fill_value is missing"},
    {V3, "{'data_type': 'complex64', 'fill_value': 1.0}", ZGPU_ERR_BAD_METADATA, "[real, imaginary] pair"},
    {V3, "{'data_type': 'r16', 'fill_value': [1, 256]}", ZGPU_ERR_BAD_METADATA, "item 1 is not a byte value"},
    /* --- format, node type, unknown members, storage transformers --- */
    {V3, "{'zarr_format': 3.0}", ZGPU_ERR_BAD_METADATA, "zarr_format must be an integer"},
    {V3, "{'zarr_format': 2}", ZGPU_ERR_BAD_METADATA, "zarr_format is 2, expected 3"},
    {V3, "{'node_type': 'group'}", ZGPU_ERR_BAD_METADATA, "node_type is 'group', expected 'array'"},
    {V3, "{'foo': 1}", ZGPU_ERR_UNSUPPORTED, "member 'foo' is not supported"},
    {V3, "{'foo': {'must_understand': true}}", ZGPU_ERR_UNSUPPORTED, "member 'foo' is not supported"},
    {V3, "{'foo': {'must_understand': false}}", ZGPU_OK, "00000000"},
    {V3, "{'storage_transformers': [{'name': 'x'}]}", ZGPU_ERR_UNSUPPORTED, "storage transformer 'x' is not supported"},
    {V3, "{'storage_transformers': 'x'}", ZGPU_ERR_BAD_METADATA, "storage_transformers must be a list"},
    {V3, "{'storage_transformers': []}", ZGPU_OK, "00000000"},
    {V3, "{'dimension_names': ['a']}", ZGPU_ERR_BAD_METADATA, "dimension_names has 1 entries, shape has 2"},
    {V3, "{'dimension_names': [1, 2]}", ZGPU_ERR_BAD_METADATA, "dimension_names[0] must be a string or null"},
    {V3, "{'attributes': [1]}", ZGPU_ERR_BAD_METADATA, "attributes must be a JSON object"},
    {V3, "{'codecs': []}", ZGPU_ERR_BAD_METADATA, "codecs is empty"},
    {V3, "{'codecs': [{'name': 'bytes', 'configuration': []}]}", ZGPU_ERR_BAD_METADATA, "configuration must be an object"},
    /* --- v2 --- */
    {V2, "{'dtype': '<f4\\u0000x'}", ZGPU_ERR_BAD_METADATA, "dtype \"<f4\\u0000x\" contains a NUL or control character"},
    {V2, "{'dtype': '<f04'}", ZGPU_ERR_UNSUPPORTED, "dtype '<f04' is not supported"},
    {V2, "{'dtype': '|f4'}", ZGPU_ERR_BAD_METADATA, "needs byte order '<' or '>'"},
    {V2, "{'dtype': 'f4'}", ZGPU_ERR_BAD_METADATA, "is not a NumPy typestring"},
    {V2, "{'compressor': {'id': 'zstd\\u0000x', 'level': 1}}", ZGPU_ERR_BAD_METADATA,
     "compressor.id \"zstd\\u0000x\" contains a NUL or control character"},
    {V2, "{'compressor': {'id': 'blosc', 'cname': 'lz4\\u0000', 'clevel': 5, 'shuffle': 1, 'blocksize': 0}}",
     ZGPU_ERR_BAD_METADATA, "compressor.cname \"lz4\\u0000\" contains a NUL"},
    {V2, "{'filters': [{'id': 'delta\\u0000', 'dtype': '<f4'}]}", ZGPU_ERR_BAD_METADATA, "filters[0].id \"delta\\u0000\""},
    {V2, "{'filters': [{'id': 'delta', 'dtype': '<f4\\u0000'}]}", ZGPU_ERR_BAD_METADATA,
     "filters[0].dtype \"<f4\\u0000\" contains a NUL"},
    {V2, "{'order': 'C\\u0000'}", ZGPU_ERR_BAD_METADATA, "order must be \"C\" or \"F\", not \"C\\u0000\""},
    {V2, "{'order': 'c'}", ZGPU_ERR_BAD_METADATA, "order must be \"C\" or \"F\", not \"c\""},
    {V2, "{'dimension_separator': '.\\u0000'}", ZGPU_ERR_BAD_METADATA,
     "dimension_separator must be \"/\" or \".\", not \".\\u0000\""},
    {V2, "{'fill_value': '0x3f800000'}", ZGPU_ERR_BAD_METADATA, "\"0x3f800000\" is not valid for float32"},
    {V2, "{'fill_value': 'NaN'}", ZGPU_OK, "0000c07f"},
    {V2, "{'dtype': '<i4', 'fill_value': 1.0}", ZGPU_OK, "01000000"},
    {V2, "{'dtype': '<i2', 'fill_value': 70000}", ZGPU_ERR_BAD_METADATA, "fill_value 70000 is out of range for int16"},
    {V2, "{'dtype': '|b1', 'fill_value': 2}", ZGPU_ERR_BAD_METADATA, "must be true or false"},
    {V2, "{'chunks': [0, 2]}", ZGPU_ERR_BAD_METADATA, "chunks[0] is 0"},
    {V2, "{'chunks': [2]}", ZGPU_ERR_BAD_METADATA, "chunks has 1 entries, shape has 2"},
    {V2, "{'zarr_format': 3}", ZGPU_ERR_BAD_METADATA, "zarr_format is 3, expected 2"},
    {V2, "{'compressor': 'zstd'}", ZGPU_ERR_BAD_METADATA, "compressor must be null or an object"},
    {V2, "{'filters': {'id': 'delta'}}", ZGPU_ERR_BAD_METADATA, "filters must be null or a list"},
    {V2, "{'dtype': [['a', '<i4'], ['a', '<i4']], 'fill_value': null}", ZGPU_ERR_BAD_METADATA, "appears twice"},
    /* --- groups --- */
    {GROUP, "{'node_type': 'group\\u0000'}", ZGPU_ERR_BAD_METADATA, "node_type \"group\\u0000\" contains"},
    {GROUP, "{'zarr_format': 2}", ZGPU_ERR_BAD_METADATA, "zarr_format is 2, expected 3"},
};

/* ' -> " (the table writes JSON with single quotes to stay readable). */
static char *dequote(const char *s) {
    char *o = strdup(s);
    for (char *p = o; *p; p++)
        if (*p == '\'') *p = '"';
    return o;
}

/* The base document of `kind` with the members of `over` replaced (or removed by "$del"), as text. */
static char *make_doc(int kind, const char *over) {
    const char *base = kind == V3 ? k_base_v3 : kind == V2 ? k_base_v2 : k_base_group;
    zj_value *doc = NULL, *ov = NULL;
    char *text = dequote(over);
    if (zj_parse(base, strlen(base), "base", &doc) != ZGPU_OK || zj_parse(text, strlen(text), "over", &ov) != ZGPU_OK) {
        fprintf(stderr, "bad test row %s: %s\n", over, zgpu_last_error());
        exit(1);
    }
    free(text);
    for (size_t i = 0; i < ov->n; i++) {
        const char *s = zj_string(ov->items[i]);
        if (s && !strcmp(s, "$del")) zj_remove(doc, ov->keys[i]);
        else zj_set(doc, ov->keys[i], zj_clone(ov->items[i]));
    }
    char *out = zj_write(doc, 0);
    zj_free(doc);
    zj_free(ov);
    return out;
}

static void hex_of(const uint8_t *p, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", p[i]);
    out[2 * n] = 0;
}

static void test_table(void) {
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        const strict_case *c = &k_cases[i];
        char *doc = make_doc(c->kind, c->over);
        zgpu_status s;
        zg_array_meta m;
        zg_group_meta g;
        if (c->kind == GROUP) s = zg_group_meta_parse_v3(doc, strlen(doc), "array 'strict'", &g);
        else if (c->kind == V3) s = zg_meta_parse_v3(doc, strlen(doc), "array 'strict'", &m);
        else s = zg_meta_parse_v2(doc, strlen(doc), NULL, 0, "array 'strict'", &m);
        CHECK_MSG(s == c->st, "row %zu %s: got %s, wanted %s (%s)", i, c->over, zgpu_status_name(s),
                  zgpu_status_name(c->st), s == ZGPU_OK ? "" : zgpu_last_error());
        if (s != ZGPU_OK) {
            /* The message names the array, then the file (JSON errors name only the file), then the field. */
            const char *msg = zgpu_last_error();
            CHECK_MSG(strncmp(msg, ARRAY_PREFIX, strlen(ARRAY_PREFIX)) == 0 && strstr(msg, c->needle),
                      "row %zu %s: message '%s' lacks '%s'", i, c->over, msg, c->needle);
        } else if (c->kind != GROUP) {
            char hex[80];
            hex_of(m.fill_value, m.dtype.size < 32 ? m.dtype.size : 32, hex);
            CHECK_MSG(c->st != ZGPU_OK || strcmp(hex, c->needle) == 0, "row %zu %s: fill %s, wanted %s", i, c->over,
                      hex, c->needle);
            zg_meta_free(&m);
        } else {
            zg_group_meta_free(&g);
        }
        free(doc);
    }
}

/* Raw texts the member table cannot express. */
static void test_raw_documents(void) {
    zg_array_meta m;
    /* A duplicate key: the last one wins, as in Python's json.loads (zarr-python reads 2.0 too). */
    const char dup[] = "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4], \"data_type\": \"float32\", "
                       "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [2]}}, "
                       "\"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 1.0, "
                       "\"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}], "
                       "\"fill_value\": 2.0}";
    CHECK_OK(zg_meta_parse_v3(dup, strlen(dup), "array 'strict'", &m));
    CHECK(m.fill_value && bytes_equal_hex(m.fill_value, 4, "00000040"));
    zg_meta_free(&m);

    /* Nesting deeper than the JSON layer's 512 levels is refused with the line and column, not a stack overflow. */
    size_t depth = 100000, n = 0;
    char *deep = malloc(2 * depth + 64);
    n += (size_t)sprintf(deep, "{\"zarr_format\": 3, \"attributes\": ");
    for (size_t i = 0; i < depth; i++) deep[n++] = '[';
    for (size_t i = 0; i < depth; i++) deep[n++] = ']';
    deep[n++] = '}';
    CHECK_STATUS(zg_meta_parse_v3(deep, n, "array 'strict'", &m), ZGPU_ERR_BAD_METADATA);
    CHECK(last_error_has("array 'strict': zarr.json: JSON: nesting deeper than 512 levels at line 1 column"));
    free(deep);

    /* A key holding \u0000 is refused by the JSON layer (keys are C strings). */
    const char nulkey[] = "{\"zarr_format\": 3, \"attributes\": {\"a\\u0000b\": 1}}";
    CHECK_STATUS(zg_meta_parse_v3(nulkey, strlen(nulkey), "array 'strict'", &m), ZGPU_ERR_BAD_METADATA);
    CHECK(last_error_has("array 'strict': zarr.json: JSON: object key contains \\u0000"));

    /* A raw NUL byte (not escaped) in the text is a JSON error, wherever it is. */
    const char rawnul[] = "{\"zarr_format\": 3, \"node_type\": \"array\0\"}";
    CHECK_STATUS(zg_meta_parse_v3(rawnul, sizeof rawnul - 1, "array 'strict'", &m), ZGPU_ERR_BAD_METADATA);
    CHECK(last_error_has("control character 0x00 in a string"));
}

/* A dimension name with other control characters is kept whole, and written back the same. */
static void test_dimension_name_roundtrip(void) {
    char *doc = make_doc(V3, "{'dimension_names': ['a\\u0001b', null]}");
    zg_array_meta m;
    CHECK_OK(zg_meta_parse_v3(doc, strlen(doc), "array 'strict'", &m));
    CHECK_STR(m.dimension_names[0], "a\001b");
    CHECK(m.dimension_names[1] == NULL);
    char *out = zg_meta_to_json(&m);
    CHECK(out && strstr(out, "\"dimension_names\": [\n    \"a\\u0001b\",\n    null\n  ]"));
    free(out);
    zg_meta_free(&m);
    free(doc);
}

/* An attribute integer beyond 64 bits is written back as the same integer (zarr-python reads it as an int). */
static void test_big_integer_attribute(void) {
    char *doc = make_doc(V3, "{'attributes': {'big': 1180591620717411303424, 'neg': -18446744073709551617}}");
    zg_array_meta m;
    CHECK_OK(zg_meta_parse_v3(doc, strlen(doc), "array 'strict'", &m));
    char *out = zg_meta_to_json(&m);
    CHECK(out && strstr(out, "\"big\": 1180591620717411303424") && strstr(out, "\"neg\": -18446744073709551617"));
    free(out);
    zg_meta_free(&m);
    free(doc);
}

/* The quoting used by the messages: control bytes escaped, long names cut, quotes escaped. */
static void test_quote(void) {
    char q[96];
    CHECK_STR(zg_meta_quote("a\0b\x7f\"", 5, q, sizeof q), "\"a\\u0000b\\u007f\\\"\"");
    char longname[200];
    memset(longname, 'x', sizeof longname);
    zg_meta_quote(longname, sizeof longname, q, sizeof q);
    CHECK(strlen(q) < sizeof q && strstr(q, "...") != NULL);
    zj_value *v = zj_new_string_len("ok\0", 3);
    CHECK(zg_meta_has_control(v));
    CHECK_STATUS(zg_meta_check_name(v, "field"), ZGPU_ERR_BAD_METADATA);
    CHECK(last_error_has("field \"ok\\u0000\" contains a NUL or control character"));
    zj_free(v);
    v = zj_new_string("fine.name-1");
    CHECK(!zg_meta_has_control(v));
    CHECK_OK(zg_meta_check_name(v, "field"));
    zj_free(v);
}

int main(void) {
    test_table();
    test_raw_documents();
    test_dimension_name_roundtrip();
    test_big_integer_attribute();
    test_quote();
    TEST_MAIN_END();
}
