/* Store locations (src/store/url.c): schemes, S3 buckets and prefixes, file:// URLs, what is refused; the
 * context's remote options (copied and checked); a URL never becomes a local directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/url.h"
#include "test.h"
#include "zgpu.h"

static void parse_ok(const char *text, zg_location_kind kind, const char *a, const char *b) {
    zg_location l;
    zgpu_status st = zg_location_parse(text, &l);
    CHECK_MSG(st == ZGPU_OK, "%s: %s", text, zgpu_last_error());
    if (st != ZGPU_OK) return;
    CHECK_MSG(l.kind == kind, "%s: kind %d", text, (int)l.kind);
    if (kind == ZG_LOC_FILE) CHECK_STR(l.path, a);
    if (kind == ZG_LOC_HTTP) CHECK_STR(l.base, a);
    if (kind == ZG_LOC_S3) {
        CHECK_STR(l.bucket, a);
        CHECK_STR(l.prefix, b);
    }
    zg_location_free(&l);
}

static void parse_fails(const char *text, zgpu_status want, const char *in_message) {
    zg_location l;
    zgpu_status st = zg_location_parse(text, &l);
    CHECK_MSG(st == want, "%s: %s (%s), wanted %s", text, zgpu_status_name(st), zgpu_last_error(),
              zgpu_status_name(want));
    CHECK_MSG(strstr(zgpu_last_error(), in_message) != NULL, "%s: message '%s' lacks '%s'", text, zgpu_last_error(),
              in_message);
}

static void test_parse(void) {
    parse_ok("/data/x.zarr", ZG_LOC_FILE, "/data/x.zarr", NULL);
    parse_ok("rel/x.zarr", ZG_LOC_FILE, "rel/x.zarr", NULL);
    parse_ok("./s3:/bucket", ZG_LOC_FILE, "./s3:/bucket", NULL); /* a local name that only looks odd */
    parse_ok("file:///data/a%20b.zarr", ZG_LOC_FILE, "/data/a b.zarr", NULL);
    parse_ok("FILE://localhost/data/x", ZG_LOC_FILE, "/data/x", NULL);
    parse_ok("http://127.0.0.1:8080/a/x.zarr/", ZG_LOC_HTTP, "http://127.0.0.1:8080/a/x.zarr", NULL);
    parse_ok("https://example.org", ZG_LOC_HTTP, "https://example.org", NULL);
    parse_ok("HTTPS://example.org//a//b", ZG_LOC_HTTP, "https://example.org/a/b", NULL);
    parse_ok("s3://my-bucket", ZG_LOC_S3, "my-bucket", "");
    parse_ok("s3://my-bucket/", ZG_LOC_S3, "my-bucket", "");
    parse_ok("s3://my.bucket-1/a/b.zarr/", ZG_LOC_S3, "my.bucket-1", "a/b.zarr");
    parse_ok("s3://bkt/a%2Fb", ZG_LOC_S3, "bkt", "a%2Fb"); /* keys keep what was typed */

    parse_fails("gs://bucket/x", ZGPU_ERR_UNSUPPORTED, "gs://");
    parse_fails("az://c/x", ZGPU_ERR_UNSUPPORTED, "az://");
    parse_fails("memory://x", ZGPU_ERR_UNSUPPORTED, "memory://");
    parse_fails("s3://Bad_Bucket/x", ZGPU_ERR_INVALID_ARGUMENT, "bucket name");
    parse_fails("s3://ab/x", ZGPU_ERR_INVALID_ARGUMENT, "bucket name");
    parse_fails("s3://a..b/x", ZGPU_ERR_INVALID_ARGUMENT, "bucket name");
    parse_fails("http:///x", ZGPU_ERR_INVALID_ARGUMENT, "no host");
    parse_fails("http://user:pw@host/x", ZGPU_ERR_INVALID_ARGUMENT, "credentials");
    parse_fails("http://host/x?sig=1", ZGPU_ERR_INVALID_ARGUMENT, "query");
    parse_fails("http://host/a/../b", ZGPU_ERR_INVALID_ARGUMENT, "'..'");
    parse_fails("s3://bucket/./b", ZGPU_ERR_INVALID_ARGUMENT, "'.'");
    parse_fails("file://otherhost/x", ZGPU_ERR_INVALID_ARGUMENT, "absolute path");
    parse_fails("file:///a%zz", ZGPU_ERR_INVALID_ARGUMENT, "escape");
    parse_fails("file:///a%00b", ZGPU_ERR_INVALID_ARGUMENT, "escape");
    parse_fails("", ZGPU_ERR_INVALID_ARGUMENT, "empty");

    CHECK(zg_is_url("s3://b/x") && zg_is_url("gs://b") && !zg_is_url("/a/b") && !zg_is_url("a:b") &&
          !zg_is_url("1http://x"));
    CHECK(zg_is_local("/a") && zg_is_local("file:///a") && !zg_is_local("http://h/a"));
}

/* Opening or creating at a URL with an unsupported scheme is an error and leaves no local directory. */
static void test_no_local_directory(void) {
    char dir[] = "/tmp/zgpu-url-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char old[4096];
    CHECK(getcwd(old, sizeof old) != NULL);
    CHECK(chdir(dir) == 0);
    zgpu_context *ctx;
    CHECK_OK(zgpu_context_create(NULL, &ctx));
    const char *doc = "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4], \"data_type\": \"int32\","
                      " \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [4]}},"
                      " \"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0,"
                      " \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]}";
    zgpu_array *a = NULL;
    CHECK_STATUS(zgpu_array_create(ctx, "gs://bucket/new.zarr", doc, 0, &a), ZGPU_ERR_UNSUPPORTED);
    CHECK_STATUS(zgpu_array_open(ctx, "memory://x", &a), ZGPU_ERR_UNSUPPORTED);
    int kind = -1;
    CHECK_STATUS(zgpu_context_node_kind(ctx, "az://c/x", &kind), ZGPU_ERR_UNSUPPORTED);
    zgpu_group *g = NULL;
    CHECK_STATUS(zgpu_group_create(ctx, "gs://bucket/g", 3, NULL, 0, &g), ZGPU_ERR_UNSUPPORTED);
    struct stat st;
    CHECK(stat("gs:", &st) != 0 && stat("memory:", &st) != 0 && stat("az:", &st) != 0);
    /* file:// reaches the same array as its path */
    char path[300], url[320];
    snprintf(path, sizeof path, "%s/f.zarr", dir);
    snprintf(url, sizeof url, "file://%s", path);
    CHECK_OK(zgpu_array_create(ctx, url, doc, 0, &a));
    int32_t v[4] = {1, 2, 3, 4}, back[4] = {0};
    uint64_t start = 0, count = 4;
    CHECK_OK(zgpu_array_write(a, &start, &count, v, NULL));
    zgpu_array_close(a);
    CHECK_OK(zgpu_array_open(ctx, path, &a));
    CHECK_OK(zgpu_array_read(a, &start, &count, back, NULL));
    CHECK(memcmp(v, back, sizeof v) == 0);
    CHECK_STR(zgpu_array_path(a), path);
    zgpu_array_close(a);
    /* an overwrite through the URL stages beside the directory, not in a local "file:" directory */
    CHECK_OK(zgpu_array_create(ctx, url, doc, ZGPU_CREATE_OVERWRITE, &a));
    CHECK_OK(zgpu_array_read(a, &start, &count, back, NULL));
    CHECK(back[0] == 0 && back[3] == 0);
    zgpu_array_close(a);
    CHECK(stat("file:", &st) != 0);
    zgpu_context_free(ctx);
    CHECK(chdir(old) == 0);
    CHECK(zt_remove_dir(dir) == 0);
}

static void test_remote_options(void) {
    zgpu_remote_options r;
    zgpu_remote_options_init(&r);
    CHECK(r.struct_size == sizeof r && r.max_in_flight == 0 && r.s3_endpoint == NULL);
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.remote = &r;
    zgpu_context *ctx = NULL;
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:1");
    r.s3_endpoint = endpoint;
    r.max_retries = 2;
    CHECK_OK(zgpu_context_create(&o, &ctx));
    endpoint[0] = 'X'; /* the context keeps its own copy */
    zgpu_context_free(ctx);
    r.max_retries = -2;
    CHECK_STATUS(zgpu_context_create(&o, &ctx), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(strstr(zgpu_last_error(), "max_retries") != NULL);
    r.max_retries = 0;
    r.multipart_part_size = 1 << 20;
    CHECK_STATUS(zgpu_context_create(&o, &ctx), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(strstr(zgpu_last_error(), "5 MiB") != NULL);
    r.multipart_part_size = 0;
    r.struct_size = 3;
    CHECK_STATUS(zgpu_context_create(&o, &ctx), ZGPU_ERR_INVALID_ARGUMENT);
}

int main(void) {
    test_parse();
    test_no_local_directory();
    test_remote_options();
    TEST_MAIN_END();
}
