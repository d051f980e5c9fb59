/* zgpu_array_write_device_async where no write can start: without a GPU (a CPU-only build, or no device) it answers
 * ZGPU_ERR_NO_GPU with *event NULL, as the other device functions do; with one, the errors it must give at the call
 * (a NULL event, a selection outside the array, zero strides) come before any device memory is touched, so a
 * dummy device pointer is safe. Runs everywhere. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "zgpu.h"

static const char *meta =
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [10, 12], \"data_type\": \"uint16\", "
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [4, 5]}}, "
    "\"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0, "
    "\"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"zstd\", "
    "\"configuration\": {\"level\": 3, \"checksum\": false}}]}";

int main(void) {
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/zgpu_test_write_async_nogpu_%d", (int)getpid());
    zgpu_context *ctx = NULL;
    CHECK_OK(zgpu_context_create(NULL, &ctx));
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_create(ctx, dir, meta, 1, &a));
    if (!a) TEST_MAIN_END();
    const int gpu = zgpu_gpu_available();
    void *dummy = (void *)(uintptr_t)0x1000; /* never dereferenced: every call below fails before the write */
    const uint64_t z[2] = {0, 0}, all[2] = {10, 12}, far[2] = {9, 0}, two[2] = {2, 1};
    const int64_t zs[2] = {0, 2};
    zgpu_event *ev = (zgpu_event *)&ev;

    if (!gpu) {
        CHECK_STATUS(zgpu_array_write_device_async(a, z, all, dummy, NULL, NULL, &ev), ZGPU_ERR_NO_GPU);
        CHECK(ev == NULL);
        CHECK(zgpu_last_error()[0] != '\0');
        /* a NULL event: an argument error where CUDA is built in, else "no GPU" */
        const zgpu_status s = zgpu_array_write_device_async(a, z, all, dummy, NULL, NULL, NULL);
        CHECK_MSG(s == ZGPU_ERR_INVALID_ARGUMENT || s == ZGPU_ERR_NO_GPU, "NULL event -> %s", zgpu_status_name(s));
        CHECK_STATUS(zgpu_array_write_device(a, z, all, dummy, NULL, NULL), ZGPU_ERR_NO_GPU);
    } else {
        CHECK_STATUS(zgpu_array_write_device_async(a, z, all, dummy, NULL, NULL, NULL), ZGPU_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(zgpu_array_write_device_async(a, far, two, dummy, NULL, NULL, &ev), ZGPU_ERR_OUT_OF_RANGE);
        CHECK(ev == NULL);
        ev = (zgpu_event *)&ev;
        CHECK_STATUS(zgpu_array_write_device_async(a, z, two, dummy, zs, NULL, &ev), ZGPU_ERR_INVALID_ARGUMENT);
        CHECK(ev == NULL);
        CHECK_STATUS(zgpu_array_write_device_async(a, z, all, NULL, NULL, NULL, &ev), ZGPU_ERR_INVALID_ARGUMENT);
    }
    const zgpu_status sn = zgpu_array_write_device_async(NULL, z, all, dummy, NULL, NULL, &ev);
    CHECK_MSG(sn == ZGPU_ERR_INVALID_ARGUMENT || (!gpu && sn == ZGPU_ERR_NO_GPU), "NULL array -> %s",
              zgpu_status_name(sn));
    CHECK_STATUS(zgpu_event_wait(NULL), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(zgpu_event_query(NULL) == 1);
    zgpu_event_free(NULL);
    /* nothing was written: the array reads as its fill value */
    uint16_t got[120];
    memset(got, 0xff, sizeof got);
    CHECK_OK(zgpu_array_read(a, z, all, got, NULL));
    int zeros = 0;
    for (int i = 0; i < 120; i++) zeros += got[i] == 0;
    CHECK_EQ_U64(zeros, 120);
    printf("write_device_async %s: errors at the call, *event NULL, nothing written\n",
           gpu ? "with a GPU" : "without a GPU (ZGPU_ERR_NO_GPU)");
    zgpu_array_close(a);
    zgpu_context_free(ctx);
    zt_remove_dir(dir);
    TEST_MAIN_END();
}
