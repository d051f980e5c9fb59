/* Example (README): create a small Zarr v3 array, write it, read a region back into a host buffer.
 * Build: cc read_region.c -Iinclude -Lbuild/lib -lzgpu -o read_region */
#include <stdio.h>
#include <stdlib.h>

#include "zgpu.h"

#define CHECK(call)                                                                      \
    do {                                                                                 \
        zgpu_status s_ = (call);                                                         \
        if (s_ != ZGPU_OK) {                                                             \
            fprintf(stderr, "%s: %s\n", zgpu_status_name(s_), zgpu_last_error());       \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "example.zarr";
    zgpu_context *ctx;
    CHECK(zgpu_context_create(NULL, &ctx)); /* NULL: default options, one thread per core */

    const char *meta =
        "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [100, 200], \"data_type\": \"float32\","
        " \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [32, 64]}},"
        " \"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": \"NaN\","
        " \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}},"
        "              {\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}]}";
    zgpu_array *a;
    CHECK(zgpu_array_create(ctx, path, meta, /*overwrite=*/1, &a));

    static float data[100][200];
    for (int i = 0; i < 100; i++)
        for (int j = 0; j < 200; j++) data[i][j] = (float)(i * 1000 + j);
    uint64_t origin[2] = {0, 0}, whole[2] = {100, 200};
    CHECK(zgpu_array_write(a, origin, whole, data, NULL)); /* NULL strides: C-contiguous */

    float region[10][20];
    uint64_t start[2] = {45, 90}, count[2] = {10, 20};
    CHECK(zgpu_array_read(a, start, count, region, NULL));
    printf("region[3][4] = %.0f (expected %d)\n", region[3][4], 48 * 1000 + 94);

    zgpu_array_close(a);
    zgpu_context_free(ctx);
    return region[3][4] == 48094.0f ? 0 : 1;
}
