/* zgpu_context_open_node: whatever is at a path, its metadata document read once. v3 and v2 arrays and groups come
 * back as the right handle (the other NULL), nothing there is NOT_FOUND, and a document that is neither an array's
 * nor a group's is refused by the array parser with a message naming the node. (Request counts over HTTP:
 * tests/remote/test_remote_http.py, test_open_reads_metadata_once.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zgpu.h"
#include "test.h"

static char root[256];

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/zgpu_test_open_node_%d", (int)getpid());
    mkdir(root, 0755);
    zgpu_context *ctx = NULL;
    CHECK_OK(zgpu_context_create(NULL, &ctx));
    char p[512];
    static const char *const v3 =
        "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4, 6], \"data_type\": \"uint16\", "
        "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [2, 3]}}, "
        "\"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 5, "
        "\"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]}";
    static const char *const v2 = "{\"zarr_format\": 2, \"shape\": [4, 6], \"chunks\": [2, 3], \"dtype\": \"<u2\", "
                                  "\"fill_value\": 7, \"order\": \"C\", \"filters\": null, \"compressor\": null}";
    const struct {
        const char *name, *meta;
        int group_format; /* 0: an array from meta */
        uint16_t fill;
    } nodes[] = {{"a3", v3, 0, 5}, {"a2", v2, 0, 7}, {"g3", NULL, 3, 0}, {"g2", NULL, 2, 0}};
    for (size_t i = 0; i < sizeof nodes / sizeof *nodes; i++) {
        snprintf(p, sizeof p, "%s/%s", root, nodes[i].name);
        if (nodes[i].meta) {
            zgpu_array *a = NULL;
            CHECK_OK(zgpu_array_create(ctx, p, nodes[i].meta, 0, &a));
            zgpu_array_close(a);
        } else {
            zgpu_group *g = NULL;
            CHECK_OK(zgpu_group_create(ctx, p, nodes[i].group_format, "{\"who\": \"g\"}", 0, &g));
            zgpu_group_close(g);
        }
        zgpu_array *a = (zgpu_array *)1;
        zgpu_group *g = (zgpu_group *)1;
        CHECK_OK(zgpu_context_open_node(ctx, p, &a, &g));
        if (nodes[i].meta) {
            CHECK_MSG(a && !g, "%s: an array", nodes[i].name);
            uint16_t got[4] = {0};
            const uint64_t st[2] = {1, 2}, ct[2] = {2, 2};
            if (a) CHECK_OK(zgpu_array_read(a, st, ct, got, NULL)); /* nothing written: the fill value */
            CHECK(got[0] == nodes[i].fill && got[3] == nodes[i].fill);
        } else {
            CHECK_MSG(g && !a, "%s: a group", nodes[i].name);
            if (g) CHECK(zgpu_group_zarr_format(g) == nodes[i].group_format);
            char *attrs = NULL;
            if (g) CHECK_OK(zgpu_group_attributes(g, &attrs));
            CHECK(attrs && strstr(attrs, "\"who\""));
            zgpu_free(attrs);
        }
        zgpu_array_close(a);
        zgpu_group_close(g);
    }
    /* nothing there */
    snprintf(p, sizeof p, "%s/nothing", root);
    zgpu_array *a = NULL;
    zgpu_group *g = NULL;
    CHECK(zgpu_context_open_node(ctx, p, &a, &g) == ZGPU_ERR_NOT_FOUND && !a && !g);
    CHECK(strstr(zgpu_last_error(), "no array or group") != NULL);
    /* a zarr.json that is neither */
    snprintf(p, sizeof p, "%s/odd", root);
    mkdir(p, 0755);
    char doc[600];
    snprintf(doc, sizeof doc, "%s/zarr.json", p);
    write_file(doc, "{\"zarr_format\": 3, \"node_type\": \"table\"}");
    zgpu_status st = zgpu_context_open_node(ctx, p, &a, &g);
    CHECK_MSG(st == ZGPU_ERR_BAD_METADATA && !a && !g, "odd node: %d", (int)st);
    CHECK(strstr(zgpu_last_error(), "odd") != NULL);
    CHECK(zgpu_context_open_node(ctx, p, NULL, &g) == ZGPU_ERR_INVALID_ARGUMENT);
    zgpu_context_free(ctx);
    zt_remove_dir(root);
    TEST_MAIN_END();
}
