/* Codec configurations (issue 25, strict metadata): every codec refuses members it does not know, naming the
 * codec and the member; null is "the default" only where zarr-python or numcodecs read it so; true/false are
 * the integers 1/0 where an integer is expected (Python's bools are ints). Each row creates one codec through
 * the registry (so "numcodecs.zstd" and "zstd" both count) on a 1-d chunk of 8 elements and checks the status and
 * either the message or the configuration the codec writes back (what a null or a bool was read as).
 * The rules: docs/metadata-validation.md ("Codec configurations"); the same documents against zarr-python:
 * tests/interop/test_metadata_strict.py. */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "codec/chain.h"
#include "codec/codec.h"
#include "common/json.h"
#include "common/status.h"
#include "meta/dtype.h"
#include "meta/metadata.h"

typedef struct config_case {
    const char *codec;  /* registry name */
    const char *dtype;  /* the data type reaching the codec (v3 name) */
    const char *conf;   /* the configuration object, ' for "; NULL: none */
    zgpu_status st;
    const char *want;   /* ZGPU_OK: the compact to_json it writes back; else a part of the message */
} config_case;

#define OK ZGPU_OK
#define BAD ZGPU_ERR_BAD_METADATA

static const config_case k_cases[] = {
    /* --- bytes: endian --- */
    {"bytes", "int32", "{'endian': 'little'}", OK, "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"},
    {"bytes", "int32", "{'endian': 'big', 'x': 1}", BAD,
     "codec 'bytes': unknown configuration member \"x\" (known: endian)"},
    {"bytes", "int32", "{'endian': 'little', 'id': 'bytes'}", BAD, "codec 'bytes': unknown configuration member \"id\""},
    {"bytes", "uint8", "{'endian': null}", OK, "{\"name\": \"bytes\"}"}, /* zarr-python: endian None, no byte order */
    {"bytes", "int32", "{'endian': null}", BAD, "\"endian\" is required for the 4-byte data type int32"},
    {"bytes", "uint8", "{}", OK, "{\"name\": \"bytes\"}"},
    {"bytes", "uint8", "{'\\n': 1}", BAD, "unknown configuration member \"\\u000a\""}, /* quoted: one line */
    /* --- transpose: order --- */
    {"transpose", "int32", "{'order': [0]}", OK, "{\"name\": \"transpose\", \"configuration\": {\"order\": [0]}}"},
    {"transpose", "int32", "{'order': [0], 'x': 1}", BAD,
     "codec 'transpose': unknown configuration member \"x\" (known: order)"},
    {"transpose", "int32", "{'order': null}", BAD, "\"order\" must be a list"},
    /* --- crc32c: no configuration (zarr-python ignores whatever is there) --- */
    {"crc32c", "int32", NULL, OK, "{\"name\": \"crc32c\"}"},
    {"crc32c", "int32", "{}", OK, "{\"name\": \"crc32c\"}"},
    {"crc32c", "int32", "{'location': 'end'}", BAD,
     "codec 'crc32c': unknown configuration member \"location\" (it takes none)"},
    /* --- sharding_indexed: chunk_shape, codecs, index_codecs, index_location --- */
    {"sharding_indexed", "int32",
     "{'chunk_shape': [4], 'codecs': [{'name': 'bytes', 'configuration': {'endian': 'little'}}], 'index_codecs': "
     "[{'name': 'bytes', 'configuration': {'endian': 'little'}}, {'name': 'crc32c'}], 'index_location': 'start'}",
     OK, "\"index_location\": \"start\""},
    {"sharding_indexed", "int32",
     "{'chunk_shape': [4], 'codecs': [{'name': 'bytes', 'configuration': {'endian': 'little'}}], 'x': 1}", BAD,
     "codec 'sharding_indexed': unknown configuration member \"x\" (known: chunk_shape, codecs, index_codecs, "
     "index_location)"},
    {"sharding_indexed", "int32",
     "{'chunk_shape': [4], 'codecs': [{'name': 'bytes', 'configuration': {'endian': 'little'}}], "
     "'index_location': null}", BAD, "\"index_location\" must be a string, not null"},
    {"sharding_indexed", "int32",
     "{'chunk_shape': [4], 'codecs': [{'name': 'bytes', 'configuration': {'endian': 'little', 'x': 1}}]}", BAD,
     "sharding_indexed: codecs: codec 'bytes': unknown configuration member \"x\""},
    {"sharding_indexed", "int32",
     "{'chunk_shape': [4], 'codecs': [{'name': 'bytes', 'configuration': {'endian': 'little'}}], "
     "'index_codecs': [{'name': 'bytes', 'configuration': {'endian': 'little'}}, {'name': 'crc32c', "
     "'configuration': {'x': 1}}]}", BAD,
     "sharding_indexed: index_codecs: codec 'crc32c': unknown configuration member \"x\""},
    /* --- blosc (v3): typesize, cname, clevel, shuffle, blocksize; null typesize/shuffle: from the item size --- */
    {"blosc", "int32", "{'typesize': 4, 'cname': 'lz4', 'clevel': 5, 'shuffle': 'shuffle', 'blocksize': 0}", OK,
     "{\"name\": \"blosc\", \"configuration\": {\"typesize\": 4, \"cname\": \"lz4\", \"clevel\": 5, "
     "\"shuffle\": \"shuffle\", \"blocksize\": 0}}"},
    {"blosc", "int32", "{'cname': 'lz4', 'clevel': 5, 'x': 1}", BAD,
     "codec 'blosc': unknown configuration member \"x\" (known: typesize, cname, clevel, shuffle, blocksize)"},
    {"blosc", "int32", "{'cname': 'lz4', 'id': 'blosc'}", BAD, "codec 'blosc': unknown configuration member \"id\""},
    {"blosc", "int32", "{'typesize': null, 'cname': 'lz4', 'clevel': 5, 'shuffle': null, 'blocksize': 0}", OK,
     "{\"typesize\": 4, \"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": \"shuffle\", \"blocksize\": 0}"},
    {"blosc", "uint8", "{'typesize': null, 'cname': 'lz4', 'clevel': 5, 'shuffle': null, 'blocksize': 0}", OK,
     "{\"typesize\": 1, \"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": \"bitshuffle\", \"blocksize\": 0}"},
    {"blosc", "int32", "{'cname': null}", BAD, "codec 'blosc': configuration \"cname\" must be a string, not null"},
    {"blosc", "int32", "{'clevel': null}", BAD, "codec 'blosc': configuration \"clevel\" must be an integer, not null"},
    {"blosc", "int32", "{'blocksize': null}", BAD, "configuration \"blocksize\" must be an integer, not null"},
    {"blosc", "int32", "{'cname': 'lz4', 'clevel': true, 'typesize': true}", OK,
     "{\"typesize\": 1, \"cname\": \"lz4\", \"clevel\": 1, \"shuffle\": \"bitshuffle\""},
    {"blosc", "int32", "{'clevel': '5'}", BAD, "configuration \"clevel\" must be an integer"},
    /* --- numcodecs.blosc (v2 "blosc"): numcodecs' Blosc(cname, clevel, shuffle, blocksize, typesize) --- */
    {"numcodecs.blosc", "int32", "{'cname': 'lz4', 'clevel': 5, 'shuffle': 1, 'blocksize': 0}", OK,
     "{\"name\": \"numcodecs.blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": 1, "
     "\"blocksize\": 0}}"},
    {"numcodecs.blosc", "int32", "{'id': 'blosc', 'cname': 'zstd', 'clevel': 3, 'shuffle': 2, 'blocksize': 0, "
     "'typesize': 4}", OK, "{\"cname\": \"zstd\", \"clevel\": 3, \"shuffle\": 2, \"blocksize\": 0}"},
    {"numcodecs.blosc", "int32", "{'cname': 'lz4', 'nthreads': 4}", BAD,
     "codec 'numcodecs.blosc': unknown configuration member \"nthreads\""},
    {"numcodecs.blosc", "int32", "{'id': 'zstd', 'cname': 'lz4'}", BAD,
     "codec 'numcodecs.blosc': configuration \"id\" \"zstd\" does not name this codec (\"blosc\")"},
    {"numcodecs.blosc", "int32", "{'cname': 'lz4', 'clevel': null}", BAD, "\"clevel\" must be an integer, not null"},
    {"numcodecs.blosc", "int32", "{'cname': 'lz4', 'typesize': null}", OK, "\"shuffle\": 1,"},
    {"numcodecs.blosc", "int32", "{'cname': 'lz4', 'shuffle': null}", BAD,
     "codec 'numcodecs.blosc': configuration \"shuffle\" must be an integer, not null"},
    /* --- gzip (v3 and numcodecs.gzip): level --- */
    {"gzip", "int32", "{'level': 1}", OK, "{\"name\": \"gzip\", \"configuration\": {\"level\": 1}}"},
    {"gzip", "int32", "{'level': 1, 'x': 1}", BAD, "codec 'gzip': unknown configuration member \"x\" (known: level)"},
    {"gzip", "int32", "{'level': null}", BAD, "codec 'gzip': configuration \"level\" must be an integer, not null"},
    {"gzip", "int32", "{'level': true}", OK, "{\"name\": \"gzip\", \"configuration\": {\"level\": 1}}"},
    {"gzip", "int32", "{'level': '1'}", BAD, "configuration \"level\" must be an integer"},
    {"gzip", "int32", "{}", OK, "{\"level\": 5}"},
    {"numcodecs.gzip", "int32", "{'id': 'gzip', 'level': 6}", OK, "{\"level\": 6}"},
    {"numcodecs.gzip", "int32", "{'level': 6, 'mtime': 0}", BAD, "unknown configuration member \"mtime\""},
    {"numcodecs.gzip", "int32", "{'id': 5}", BAD, "configuration \"id\" (not a string) does not name this codec"},
    /* --- zstd (v3 and numcodecs.zstd): level, checksum; checksum null: no checksum (numcodecs) --- */
    {"zstd", "int32", "{'level': 1, 'checksum': false}", OK,
     "{\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": false}}"},
    {"zstd", "int32", "{'level': 1, 'x': 2}", BAD,
     "codec 'zstd': unknown configuration member \"x\" (known: level, checksum)"},
    {"zstd", "int32", "{'level': null}", BAD, "codec 'zstd': configuration \"level\" must be an integer, not null"},
    {"zstd", "int32", "{'level': 3, 'checksum': null}", OK, "{\"level\": 3, \"checksum\": false}"},
    {"zstd", "int32", "{'level': false, 'checksum': true}", OK, "{\"level\": 0, \"checksum\": true}"},
    {"zstd", "int32", "{'checksum': 1}", BAD, "\"checksum\" must be true or false"},
    {"numcodecs.zstd", "int32", "{'id': 'zstd', 'level': 2}", OK, "{\"level\": 2, \"checksum\": false}"},
    {"numcodecs.zstd", "int32", "{'level': 2, 'write_content_size': true}", BAD,
     "unknown configuration member \"write_content_size\""},
    /* --- numcodecs.zlib, numcodecs.bz2: level; numcodecs.lz4: acceleration --- */
    {"numcodecs.zlib", "int32", "{'level': 9}", OK, "{\"name\": \"numcodecs.zlib\", \"configuration\": {\"level\": 9}}"},
    {"numcodecs.zlib", "int32", "{'level': 1, 'wbits': 15}", BAD,
     "codec 'numcodecs.zlib': unknown configuration member \"wbits\" (known: level)"},
    {"numcodecs.zlib", "int32", "{'level': null}", BAD, "\"level\" must be an integer, not null"},
    {"numcodecs.zlib", "int32", "{'id': 'gzip', 'level': 1}", BAD, "\"id\" \"gzip\" does not name this codec (\"zlib\")"},
    {"numcodecs.bz2", "int32", "{'id': 'bz2', 'level': 9}", OK, "{\"name\": \"numcodecs.bz2\", \"configuration\": {\"level\": 9}}"},
    {"numcodecs.bz2", "int32", "{'level': 1, 'x': 1}", BAD, "codec 'numcodecs.bz2': unknown configuration member \"x\""},
    {"numcodecs.bz2", "int32", "{'level': null}", BAD, "\"level\" must be an integer, not null"},
    {"numcodecs.lz4", "int32", "{'acceleration': 3}", OK,
     "{\"name\": \"numcodecs.lz4\", \"configuration\": {\"acceleration\": 3}}"},
    {"numcodecs.lz4", "int32", "{'acceleration': 1, 'x': 1}", BAD,
     "codec 'numcodecs.lz4': unknown configuration member \"x\" (known: acceleration)"},
    {"numcodecs.lz4", "int32", "{'acceleration': null}", BAD, "\"acceleration\" must be an integer, not null"},
    {"numcodecs.lz4", "int32", "{'acceleration': true}", OK, "{\"acceleration\": 1}"},
    /* --- numcodecs.shuffle: elementsize; null or absent: the item size (zarr-python fills it in) --- */
    {"numcodecs.shuffle", "int16", "{'elementsize': 4}", OK,
     "{\"name\": \"numcodecs.shuffle\", \"configuration\": {\"elementsize\": 4}}"},
    {"numcodecs.shuffle", "int16", "{'elementsize': null}", OK, "{\"elementsize\": 2}"},
    {"numcodecs.shuffle", "int16", "{}", OK, "{\"elementsize\": 2}"},
    {"numcodecs.shuffle", "int16", "{'elementsize': 2, 'x': 1}", BAD,
     "codec 'shuffle': unknown configuration member \"x\" (known: elementsize)"},
    /* --- numcodecs.delta: dtype, astype; dtype null refused (numcodecs reads float64), astype null: dtype --- */
    {"numcodecs.delta", "int32", "{'dtype': '<i4', 'astype': '<i2'}", OK,
     "{\"name\": \"numcodecs.delta\", \"configuration\": {\"dtype\": \"<i4\", \"astype\": \"<i2\"}}"},
    {"numcodecs.delta", "int32", "{'dtype': '<i4', 'astype': null}", OK, "{\"dtype\": \"<i4\", \"astype\": \"<i4\"}"},
    {"numcodecs.delta", "int32", "{'dtype': null}", BAD, "codec 'delta': configuration \"dtype\" must be a string, not null"},
    {"numcodecs.delta", "int32", "{'dtype': '<i4', 'x': 1}", BAD,
     "codec 'delta': unknown configuration member \"x\" (known: dtype, astype)"},
    {"numcodecs.delta", "int32", "{'id': 'delta', 'dtype': '<i4'}", OK, "{\"dtype\": \"<i4\", \"astype\": \"<i4\"}"},
    /* --- numcodecs.fixedscaleoffset: offset, scale, dtype, astype; dtype null or absent: the array's --- */
    {"numcodecs.fixedscaleoffset", "float64", "{'offset': 1, 'scale': 10, 'dtype': '<f8', 'astype': '<i4'}", OK,
     "{\"scale\": 10, \"offset\": 1, \"dtype\": \"<f8\", \"astype\": \"<i4\"}"},
    {"numcodecs.fixedscaleoffset", "float64", "{'offset': 1, 'scale': 10, 'dtype': null, 'astype': null}", OK,
     "{\"scale\": 10, \"offset\": 1, \"dtype\": \"<f8\", \"astype\": \"<f8\"}"},
    {"numcodecs.fixedscaleoffset", "float64", "{'offset': 1, 'scale': 10, 'x': 1}", BAD,
     "codec 'fixedscaleoffset': unknown configuration member \"x\" (known: offset, scale, dtype, astype)"},
    {"numcodecs.fixedscaleoffset", "float64", "{'offset': null, 'scale': 10}", BAD, "\"offset\" must be a number"},
};

/* ' -> " (the rows are easier to read without escaped quotes). */
static char *dq(const char *s) {
    char *t = strdup(s);
    for (char *p = t; *p; p++)
        if (*p == '\'') *p = '"';
    return t;
}

static void run_case(size_t i, const config_case *c) {
    const zg_codec_vtable *vt = zg_codec_find(c->codec);
    CHECK_MSG(vt != NULL, "row %zu: codec %s not registered", i, c->codec);
    if (!vt) return;
    zg_repr r;
    memset(&r, 0, sizeof r);
    r.ndim = 1;
    r.shape[0] = 8;
    CHECK_MSG(zg_dtype_from_name(c->dtype, &r.dtype), "row %zu: dtype %s", i, c->dtype);
    zj_value *conf = NULL;
    if (c->conf) {
        char *text = dq(c->conf);
        zgpu_status ps = zj_parse(text, strlen(text), "row", &conf);
        free(text);
        CHECK_MSG(ps == ZGPU_OK, "row %zu: bad test JSON %s", i, c->conf);
        if (ps != ZGPU_OK) return;
    }
    zg_codec *codec = NULL;
    zgpu_status st = vt->create(conf, &r, &codec);
    zj_free(conf);
    CHECK_MSG(st == c->st, "row %zu (%s %s): %s, wanted %s: %s", i, c->codec, c->conf ? c->conf : "(none)",
              zgpu_status_name(st), zgpu_status_name(c->st), st == ZGPU_OK ? "" : zgpu_last_error());
    if (st != ZGPU_OK) {
        CHECK_MSG(strstr(zgpu_last_error(), c->want) != NULL, "row %zu (%s %s): message \"%s\" lacks \"%s\"", i,
                  c->codec, c->conf ? c->conf : "(none)", zgpu_last_error(), c->want);
        return;
    }
    if (c->st != ZGPU_OK) {
        codec->vt->destroy(codec);
        return;
    }
    zj_value *j = codec->vt->to_json(codec);
    char *text = j ? zj_write(j, 0) : NULL;
    CHECK_MSG(text && strstr(text, c->want) != NULL, "row %zu (%s %s): writes %s, wanted %s", i, c->codec,
              c->conf ? c->conf : "(none)", text ? text : "(null)", c->want);
    free(text);
    zj_free(j);
    codec->vt->destroy(codec);
}

/* Through the chain, as an array opens: the message names the codec as the document does. */
static void test_chain_messages(void) {
    static const struct {
        const char *codecs, *want;
    } rows[] = {
        {"[{'name': 'bytes', 'configuration': {'endian': 'little'}}, {'name': 'zstd', 'configuration': "
         "{'level': 1, 'x': 2}}]",
         "codec 'zstd': unknown configuration member \"x\" (known: level, checksum)"},
        {"[{'name': 'bytes', 'configuration': {'endian': 'little'}}, {'name': 'numcodecs.zstd', 'configuration': "
         "{'level': 1, 'x': 2}}]",
         "codec 'numcodecs.zstd': unknown configuration member \"x\" (known: level, checksum)"},
        {"[{'name': 'bytes', 'configuration': {'endian': 'little', 'x': 1}}]",
         "codec 'bytes': unknown configuration member \"x\""},
    };
    zg_repr r;
    memset(&r, 0, sizeof r);
    r.ndim = 1;
    r.shape[0] = 8;
    zg_dtype_from_name("int32", &r.dtype);
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        char *text = dq(rows[i].codecs);
        zj_value *list = NULL;
        CHECK_OK(zj_parse(text, strlen(text), "chain", &list));
        free(text);
        zg_chain *ch = NULL;
        CHECK_STATUS(zg_chain_create(list, &r, &ch), ZGPU_ERR_BAD_METADATA);
        CHECK_MSG(strstr(zgpu_last_error(), rows[i].want) != NULL, "chain row %zu: \"%s\" lacks \"%s\"", i,
                  zgpu_last_error(), rows[i].want);
        if (ch) zg_chain_free(ch);
        zj_free(list);
    }
}

/* v2 objects: the parser turns {"id": ..., members} into "numcodecs.<id>" without the id; the codecs then
 * refuse unknown members as they do in v3 (numcodecs: an unknown keyword argument is a TypeError). */
static void test_v2_objects(void) {
    static const struct {
        const char *filters, *compressor;
        zgpu_status st;
        const char *want;
    } rows[] = {
        {"null", "{'id': 'zstd', 'level': 1, 'checksum': false}", ZGPU_OK, NULL},
        {"null", "{'id': 'blosc', 'cname': 'lz4', 'clevel': 5, 'shuffle': 1, 'blocksize': 0}", ZGPU_OK, NULL},
        {"null", "{'id': 'zstd', 'level': 1, 'x': 2}", BAD, "codec 'numcodecs.zstd': unknown configuration member \"x\""},
        {"null", "{'id': 'blosc', 'cname': 'lz4', 'clevel': 5, 'shuffle': 1, 'blocksize': 0, 'x': 2}", BAD,
         "codec 'numcodecs.blosc': unknown configuration member \"x\""},
        {"null", "{'id': 'gzip', 'level': null}", BAD, "\"level\" must be an integer, not null"},
        {"[{'id': 'delta', 'dtype': '<i4', 'x': 1}]", "null", BAD, "codec 'numcodecs.delta': unknown configuration member \"x\""},
        {"[{'id': 'shuffle', 'elementsize': 4, 'x': 1}]", "null", BAD,
         "codec 'numcodecs.shuffle': unknown configuration member \"x\""},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        char doc[1024];
        snprintf(doc, sizeof doc,
                 "{'zarr_format': 2, 'shape': [8], 'chunks': [8], 'dtype': '<i4', 'fill_value': 0, 'order': 'C', "
                 "'filters': %s, 'compressor': %s}", rows[i].filters, rows[i].compressor);
        char *text = dq(doc);
        zg_array_meta m;
        CHECK_OK(zg_meta_parse_v2(text, strlen(text), NULL, 0, "array 'v2'", &m));
        free(text);
        zg_repr r;
        memset(&r, 0, sizeof r);
        r.ndim = 1;
        r.shape[0] = 8;
        r.dtype = m.dtype;
        r.fill_value = m.fill_value;
        zg_chain *ch = NULL;
        zgpu_status st = zg_chain_create(m.codecs, &r, &ch);
        CHECK_MSG(st == rows[i].st, "v2 row %zu: %s: %s", i, zgpu_status_name(st), zgpu_last_error());
        if (st != ZGPU_OK && rows[i].want)
            CHECK_MSG(strstr(zgpu_last_error(), rows[i].want) != NULL, "v2 row %zu: \"%s\" lacks \"%s\"", i,
                      zgpu_last_error(), rows[i].want);
        if (ch) zg_chain_free(ch);
        zg_meta_free(&m);
    }
}

int main(void) {
    for (size_t i = 0; i < sizeof k_cases / sizeof *k_cases; i++) run_case(i, &k_cases[i]);
    test_chain_messages();
    test_v2_objects();
    TEST_MAIN_END();
}
