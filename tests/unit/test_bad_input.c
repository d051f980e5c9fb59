/* Bad input gives a clear error, never a crash: truncated and corrupted chunks and shards, bad metadata,
 * wrong sizes, out-of-range selections. Runs under ASan/UBSan in `make test`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test.h"
#include "zgpu.h"

static char root[64];

static void write_file(const char *rel, const void *data, size_t n) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    FILE *f = fopen(p, "wb");
    if (!f) { perror(p); exit(1); }
    fwrite(data, 1, n, f);
    fclose(f);
}

static size_t read_file(const char *rel, uint8_t **data) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    FILE *f = fopen(p, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *data = malloc((size_t)n + 1);
    size_t got = fread(*data, 1, (size_t)n, f);
    fclose(f);
    return got;
}

static const char *make_array(zgpu_context *ctx, const char *name, const char *codecs) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", root, name);
    char doc[2048];
    snprintf(doc, sizeof doc,
             "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[64,64],\"data_type\":\"uint16\","
             "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[32,32]}},"
             "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":7,\"codecs\":%s}", codecs);
    zgpu_array *a;
    CHECK_OK(zgpu_array_create(ctx, path, doc, 1, &a));
    uint16_t data[64 * 64];
    for (int i = 0; i < 64 * 64; i++) data[i] = (uint16_t)(i * 31 + 5);
    uint64_t z[2] = {0, 0}, s[2] = {64, 64};
    CHECK_OK(zgpu_array_write(a, z, s, data, NULL));
    zgpu_array_close(a);
    return path;
}

/* Opens and reads the whole array; returns the read status (open must succeed). */
static zgpu_status read_all(zgpu_context *ctx, const char *path) {
    zgpu_array *a;
    zgpu_status st = zgpu_array_open(ctx, path, &a);
    if (st != ZGPU_OK) return st;
    uint16_t out[64 * 64];
    uint64_t z[2] = {0, 0}, s[2] = {64, 64};
    st = zgpu_array_read(a, z, s, out, NULL);
    zgpu_array_close(a);
    return st;
}

#define NO_FLIP (-1000000)

static void corrupt_case(zgpu_context *ctx, const char *name, const char *codecs, const char *key, int truncate_to,
                         int flip_at, zgpu_status want, const char *must_mention) {
    const char *path = make_array(ctx, name, codecs);
    char rel[256];
    snprintf(rel, sizeof rel, "%s/%s", name, key);
    uint8_t *d = NULL;
    size_t n = read_file(rel, &d);
    CHECK_MSG(n > 0, "chunk %s missing", rel);
    if (!n) return;
    if (flip_at != NO_FLIP) d[flip_at >= 0 ? (size_t)flip_at % n : n - (size_t)(-flip_at)] ^= 0x5A; /* < 0: from the end */
    if (truncate_to >= 0 && (size_t)truncate_to < n) n = (size_t)truncate_to;
    write_file(rel, d, n);
    free(d);
    zgpu_status st = read_all(ctx, path);
    CHECK_MSG(st == want, "%s: got %s (%s)", name, zgpu_status_name(st), zgpu_last_error());
    CHECK_MSG(strstr(zgpu_last_error(), must_mention) != NULL, "%s: message lacks '%s': %s", name, must_mention,
              zgpu_last_error());
    CHECK_MSG(strstr(zgpu_last_error(), name) != NULL, "%s: message lacks the array path: %s", name, zgpu_last_error());
}

static void bad_metadata(zgpu_context *ctx, const char *name, const char *doc, zgpu_status want, const char *mention) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    mkdir(dir, 0777);
    char rel[512];
    snprintf(rel, sizeof rel, "%s/zarr.json", name);
    write_file(rel, doc, strlen(doc));
    zgpu_array *a = NULL;
    zgpu_status st = zgpu_array_open(ctx, dir, &a);
    CHECK_MSG(st == want, "%s: got %s (%s)", name, zgpu_status_name(st), zgpu_last_error());
    CHECK_MSG(strstr(zgpu_last_error(), mention) != NULL, "%s: message lacks '%s': %s", name, mention, zgpu_last_error());
    zgpu_array_close(a);
}

#define BYTES "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}"
#define SHARD(loc)                                                                                              \
    "[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[16,16],\"codecs\":[" BYTES            \
    ",{\"name\":\"zstd\",\"configuration\":{\"level\":1}}],\"index_codecs\":[" BYTES ",{\"name\":\"crc32c\"}]," \
    "\"index_location\":\"" loc "\"}}]"

int main(void) {
    snprintf(root, sizeof root, "/tmp/zgpu-bad-XXXXXX");
    if (!mkdtemp(root)) return 1;
    zgpu_context *ctx;
    CHECK_OK(zgpu_context_create(NULL, &ctx));

    /* corrupted / truncated chunks, one per codec */
    corrupt_case(ctx, "zstd_trunc", "[" BYTES ",{\"name\":\"zstd\",\"configuration\":{\"level\":1}}]", "c/0/1", 10, NO_FLIP,
                 ZGPU_ERR_CORRUPT_DATA, "zstd");
    corrupt_case(ctx, "zstd_flip", "[" BYTES ",{\"name\":\"zstd\",\"configuration\":{\"level\":1,\"checksum\":true}}]",
                 "c/1/0", -1, 20, ZGPU_ERR_CORRUPT_DATA, "c/1/0");
    corrupt_case(ctx, "gzip_trunc", "[" BYTES ",{\"name\":\"gzip\",\"configuration\":{\"level\":1}}]", "c/0/0", 30, NO_FLIP,
                 ZGPU_ERR_CORRUPT_DATA, "gzip");
    corrupt_case(ctx, "gzip_flip", "[" BYTES ",{\"name\":\"gzip\",\"configuration\":{\"level\":1}}]", "c/0/0", -1, 40,
                 ZGPU_ERR_CORRUPT_DATA, "gzip");
    corrupt_case(ctx, "blosc_trunc",
                 "[" BYTES ",{\"name\":\"blosc\",\"configuration\":{\"cname\":\"lz4\",\"clevel\":5,\"shuffle\":\"shuffle\",\"typesize\":2}}]",
                 "c/1/1", 17, NO_FLIP, ZGPU_ERR_CORRUPT_DATA, "blosc");
    corrupt_case(ctx, "crc_flip", "[" BYTES ",{\"name\":\"crc32c\"}]", "c/0/1", -1, 100, ZGPU_ERR_CORRUPT_DATA, "crc32c");
    corrupt_case(ctx, "raw_trunc", "[" BYTES "]", "c/0/1", 100, NO_FLIP, ZGPU_ERR_CORRUPT_DATA, "c/0/1");
    corrupt_case(ctx, "lz4_flip", "[" BYTES ",{\"name\":\"numcodecs.lz4\"}]", "c/0/0", -1, 1, ZGPU_ERR_CORRUPT_DATA, "lz4");
    corrupt_case(ctx, "zlib_trunc", "[" BYTES ",{\"name\":\"numcodecs.zlib\"}]", "c/0/0", 12, NO_FLIP, ZGPU_ERR_CORRUPT_DATA, "zlib");
    corrupt_case(ctx, "bz2_flip", "[" BYTES ",{\"name\":\"numcodecs.bz2\"}]", "c/0/0", -1, 30, ZGPU_ERR_CORRUPT_DATA, "bz2");
    /* shards: a corrupted index (crc32c catches it), a truncated shard, a corrupted inner chunk */
    corrupt_case(ctx, "shard_index_flip", SHARD("end"), "c/0/0", -1, -5, ZGPU_ERR_CORRUPT_DATA, "c/0/0");
    corrupt_case(ctx, "shard_trunc", SHARD("end"), "c/1/0", 20, NO_FLIP, ZGPU_ERR_CORRUPT_DATA, "c/1/0");
    corrupt_case(ctx, "shard_inner_flip", SHARD("start"), "c/0/1", -1, 4 * 16 + 4 + 20, ZGPU_ERR_CORRUPT_DATA, "c/0/1");

    /* a missing chunk reads as the fill value */
    {
        const char *path = make_array(ctx, "missing", "[" BYTES "]");
        char p[600];
        snprintf(p, sizeof p, "%s/c/1/1", path);
        CHECK(remove(p) == 0);
        zgpu_array *a;
        CHECK_OK(zgpu_array_open(ctx, path, &a));
        uint16_t out[64 * 64];
        uint64_t z[2] = {0, 0}, s[2] = {64, 64};
        CHECK_OK(zgpu_array_read(a, z, s, out, NULL));
        CHECK_EQ_U64(out[40 * 64 + 40], 7);
        CHECK_EQ_U64(out[0], 5);
        /* out-of-range selections */
        uint64_t st2[2] = {60, 0}, ct2[2] = {5, 64};
        CHECK_STATUS(zgpu_array_read(a, st2, ct2, out, NULL), ZGPU_ERR_OUT_OF_RANGE);
        CHECK(strstr(zgpu_last_error(), "axis 0") != NULL);
        uint64_t st3[2] = {UINT64_MAX, 0}, ct3[2] = {2, 1};
        CHECK_STATUS(zgpu_array_read(a, st3, ct3, out, NULL), ZGPU_ERR_OUT_OF_RANGE);
        CHECK_STATUS(zgpu_array_write(a, st2, ct2, out, NULL), ZGPU_ERR_OUT_OF_RANGE);
        CHECK_STATUS(zgpu_array_read(a, z, s, NULL, NULL), ZGPU_ERR_INVALID_ARGUMENT);
        zgpu_array_close(a);
    }

    /* bad metadata */
    bad_metadata(ctx, "not_json", "{\"zarr_format\": 3,", ZGPU_ERR_BAD_METADATA, "zarr.json");
    bad_metadata(ctx, "ndim_mismatch",
                 "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[10,10],\"data_type\":\"uint8\","
                 "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[5]}},"
                 "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,\"codecs\":[{\"name\":\"bytes\"}]}",
                 ZGPU_ERR_BAD_METADATA, "chunk");
    bad_metadata(ctx, "unknown_codec",
                 "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[10],\"data_type\":\"uint8\","
                 "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[5]}},"
                 "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,"
                 "\"codecs\":[{\"name\":\"bytes\"},{\"name\":\"fancy_codec\"}]}",
                 ZGPU_ERR_UNSUPPORTED, "fancy_codec");
    bad_metadata(ctx, "unknown_extension",
                 "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[10],\"data_type\":\"uint8\","
                 "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[5]}},"
                 "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,"
                 "\"codecs\":[{\"name\":\"bytes\"}],\"my_ext\":{\"must_understand\":true}}",
                 ZGPU_ERR_UNSUPPORTED, "my_ext");
    bad_metadata(ctx, "bad_dtype",
                 "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[10],\"data_type\":\"uint7\","
                 "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[5]}},"
                 "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,\"codecs\":[{\"name\":\"bytes\"}]}",
                 ZGPU_ERR_UNSUPPORTED, "uint7");
    bad_metadata(ctx, "shard_not_divisible",
                 "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[10],\"data_type\":\"uint8\","
                 "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[5]}},"
                 "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,"
                 "\"codecs\":[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[3],"
                 "\"codecs\":[{\"name\":\"bytes\"}],\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]}}]}",
                 ZGPU_ERR_BAD_METADATA, "sharding");
    /* an extension with must_understand false is ignored */
    {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/ignored_ext", root);
        mkdir(dir, 0777);
        const char *doc = "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[10],\"data_type\":\"uint8\","
                          "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[5]}},"
                          "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":3,"
                          "\"codecs\":[{\"name\":\"bytes\"}],\"my_ext\":{\"must_understand\":false}}";
        write_file("ignored_ext/zarr.json", doc, strlen(doc));
        zgpu_array *a;
        CHECK_OK(zgpu_array_open(ctx, dir, &a));
        uint8_t out[10];
        uint64_t z = 0, n = 10;
        CHECK_OK(zgpu_array_read(a, &z, &n, out, NULL));
        CHECK_EQ_U64(out[9], 3);
        zgpu_array_close(a);
    }
    /* nothing there */
    {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/nothing", root);
        zgpu_array *a = NULL;
        CHECK_STATUS(zgpu_array_open(ctx, dir, &a), ZGPU_ERR_NOT_FOUND);
        CHECK(a == NULL);
    }
    zgpu_context_free(ctx);
    zt_remove_dir(root);
    TEST_MAIN_END();
}
