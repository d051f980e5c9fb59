/* Public device-read and device-write functions. With CUDA they forward to src/device/ (read.c, async.c,
 * write_device.c, write_async.c); without, every one says so with ZGPU_ERR_NO_GPU. Compiled in every build. */
#include <stdlib.h>

#include "api/array.h"
#include "device/device.h"
#include "common/status.h"

#ifndef ZGPU_HAVE_CUDA
#define NO_CUDA_MSG "zgpu was built without CUDA support"

void zg_device_state_free(struct zg_device_state *st) { (void)st; }

ZGPU_API int zgpu_gpu_available(void) {
    zg_error(ZGPU_ERR_NO_GPU, NO_CUDA_MSG);
    return 0;
}

ZGPU_API zgpu_status zgpu_array_read_device(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                            void *device_out, const int64_t *out_strides, void *stream) {
    (void)array, (void)start, (void)count, (void)device_out, (void)out_strides, (void)stream;
    return zg_error(ZGPU_ERR_NO_GPU, NO_CUDA_MSG);
}

ZGPU_API zgpu_status zgpu_array_read_device_async(zgpu_array *array, const uint64_t *start,
                                                  const uint64_t *count, void *device_out,
                                                  const int64_t *out_strides, void *stream, zgpu_event **event) {
    (void)array, (void)start, (void)count, (void)device_out, (void)out_strides, (void)stream;
    if (event) *event = NULL;
    return zg_error(ZGPU_ERR_NO_GPU, NO_CUDA_MSG);
}

ZGPU_API zgpu_status zgpu_array_write_device(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                             const void *device_in, const int64_t *in_strides, void *stream) {
    (void)array, (void)start, (void)count, (void)device_in, (void)in_strides, (void)stream;
    return zg_error(ZGPU_ERR_NO_GPU, NO_CUDA_MSG);
}

ZGPU_API zgpu_status zgpu_array_write_device_async(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                                   const void *device_in, const int64_t *in_strides, void *stream,
                                                   zgpu_event **event) {
    (void)array, (void)start, (void)count, (void)device_in, (void)in_strides, (void)stream;
    if (event) *event = NULL;
    return zg_error(ZGPU_ERR_NO_GPU, NO_CUDA_MSG);
}

ZGPU_API zgpu_status zgpu_event_wait(zgpu_event *event) {
    if (!event) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_event_wait: event is NULL");
    return zg_error(ZGPU_ERR_NO_GPU, NO_CUDA_MSG);
}

ZGPU_API int zgpu_event_query(zgpu_event *event) {
    (void)event;
    return 1;
}

ZGPU_API zgpu_status zgpu_array_read_regions_device(zgpu_array *array, size_t n, const uint64_t *starts,
                                                    const uint64_t *counts, void *const *outs,
                                                    const int64_t *out_strides, void *stream,
                                                    const zgpu_read_options *opts, zgpu_event **event) {
    (void)array, (void)n, (void)starts, (void)counts, (void)outs, (void)out_strides, (void)stream, (void)opts;
    if (event) *event = NULL;
    return zg_error(ZGPU_ERR_NO_GPU, NO_CUDA_MSG);
}

ZGPU_API zgpu_status zgpu_array_read_device_ex(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                               void *device_out, const int64_t *out_strides, void *stream,
                                               const zgpu_read_options *opts, zgpu_event **event) {
    (void)array, (void)start, (void)count, (void)device_out, (void)out_strides, (void)stream, (void)opts;
    if (event) *event = NULL;
    return zg_error(ZGPU_ERR_NO_GPU, NO_CUDA_MSG);
}

ZGPU_API void zgpu_event_free(zgpu_event *event) { (void)event; }

#else /* ZGPU_HAVE_CUDA */

ZGPU_API int zgpu_gpu_available(void) { return zg_cuda_probe() == ZGPU_OK; }

static zgpu_status check_args(const zgpu_array *array, const uint64_t *start, const uint64_t *count,
                              const void *device_out) {
    ZG_RETURN_IF(!array, ZGPU_ERR_INVALID_ARGUMENT, "device read: array is NULL");
    ZG_RETURN_IF(array->meta.ndim > 0 && (!start || !count), ZGPU_ERR_INVALID_ARGUMENT,
                 ZG_ARRAY_WHERE_FMT ": device read: start/count is NULL", array->path);
    ZG_RETURN_IF(!device_out, ZGPU_ERR_INVALID_ARGUMENT, ZG_ARRAY_WHERE_FMT ": device read: device_out is NULL",
                 array->path);
    return ZGPU_OK;
}

/* Every entry below runs with the array's device current and puts the caller's back (any thread may read into
 * any GPU): the async forms too, whose event and the caller's stream belong to that device. */
static zgpu_status read_in_scope(zgpu_array *array, const zg_dev_request *rq, void *stream, zgpu_event **event) {
    zg_device_scope sc;
    ZG_FORWARD(zg_device_scope_enter(array->ctx->opts.device, &sc));
    zgpu_status s = zg_cuda_read_request(array, rq, stream, event);
    zg_device_scope_leave(&sc);
    return s;
}

ZGPU_API zgpu_status zgpu_array_read_device(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                            void *device_out, const int64_t *out_strides, void *stream) {
    ZG_FORWARD(check_args(array, start, count, device_out));
    ZG_FORWARD(zg_cuda_probe());
    void *outs[1] = {device_out};
    const zg_dev_request rq = {1, start, count, outs, out_strides, NULL, NULL, 0, NULL, NULL};
    return read_in_scope(array, &rq, stream, NULL);
}

ZGPU_API zgpu_status zgpu_array_write_device(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                             const void *device_in, const int64_t *in_strides, void *stream) {
    ZG_RETURN_IF(!array, ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_write_device: array is NULL");
    ZG_FORWARD(zg_cuda_probe());
    zg_device_scope sc;
    ZG_FORWARD(zg_device_scope_enter(array->ctx->opts.device, &sc));
    const zgpu_status s = zg_device_write(array, start, count, device_in, in_strides, stream);
    zg_device_scope_leave(&sc);
    return s;
}

ZGPU_API zgpu_status zgpu_array_write_device_async(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                                   const void *device_in, const int64_t *in_strides, void *stream,
                                                   zgpu_event **event) {
    ZG_RETURN_IF(!event, ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_write_device_async: event is NULL");
    *event = NULL;
    ZG_RETURN_IF(!array, ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_write_device_async: array is NULL");
    ZG_FORWARD(zg_cuda_probe());
    zg_device_scope sc; /* the caller's stream and the write's are the array's device's */
    ZG_FORWARD(zg_device_scope_enter(array->ctx->opts.device, &sc));
    const zgpu_status s = zg_device_write_async(array, start, count, device_in, in_strides, stream, event);
    zg_device_scope_leave(&sc);
    return s;
}

ZGPU_API zgpu_status zgpu_array_read_device_async(zgpu_array *array, const uint64_t *start,
                                                  const uint64_t *count, void *device_out,
                                                  const int64_t *out_strides, void *stream, zgpu_event **event) {
    ZG_RETURN_IF(!event, ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_read_device_async: event is NULL");
    *event = NULL;
    ZG_FORWARD(check_args(array, start, count, device_out));
    ZG_FORWARD(zg_cuda_probe());
    void *outs[1] = {device_out};
    const zg_dev_request rq = {1, start, count, outs, out_strides, NULL, NULL, 0, NULL, NULL};
    return read_in_scope(array, &rq, stream, event);
}

ZGPU_API zgpu_status zgpu_array_read_regions_device(zgpu_array *array, size_t n, const uint64_t *starts,
                                                    const uint64_t *counts, void *const *outs,
                                                    const int64_t *out_strides, void *stream,
                                                    const zgpu_read_options *opts, zgpu_event **event) {
    if (event) *event = NULL;
    ZG_RETURN_IF(!array || (n && (!outs || (array->meta.ndim > 0 && (!starts || !counts)))),
                 ZGPU_ERR_INVALID_ARGUMENT,
                 "zgpu_array_read_regions_device: array, and for n > 0 starts, counts and outs, are required");
    for (size_t r = 0; r < n; r++)
        ZG_RETURN_IF(!outs[r], ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_read_regions_device: outs[%zu] is NULL", r);
    ZG_FORWARD(zg_cuda_probe());
    const zg_dev_request rq = {n, starts, counts, outs, out_strides, NULL, opts, 0, NULL, NULL};
    return read_in_scope(array, &rq, stream, event);
}

ZGPU_API zgpu_status zgpu_array_read_device_ex(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                               void *device_out, const int64_t *out_strides, void *stream,
                                               const zgpu_read_options *opts, zgpu_event **event) {
    if (event) *event = NULL;
    ZG_FORWARD(check_args(array, start, count, device_out));
    ZG_FORWARD(zg_cuda_probe());
    void *outs[1] = {device_out};
    const zg_dev_request rq = {1, start, count, outs, out_strides, NULL, opts, 0, NULL, NULL};
    return read_in_scope(array, &rq, stream, event);
}

ZGPU_API zgpu_status zgpu_event_wait(zgpu_event *event) {
    ZG_RETURN_IF(!event, ZGPU_ERR_INVALID_ARGUMENT, "zgpu_event_wait: event is NULL");
    return zg_cuda_event_wait(event);
}

ZGPU_API int zgpu_event_query(zgpu_event *event) { return event ? zg_cuda_event_query(event) : 1; }

ZGPU_API void zgpu_event_free(zgpu_event *event) {
    if (event) zg_cuda_event_free(event);
}
#endif
