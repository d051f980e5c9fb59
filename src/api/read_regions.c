/* Reads into host memory: plain, with options (zgpu_read_options: conversion on the fly) and of many boxes in one
 * plan (a chunk several boxes need is fetched and decoded once); their device forms are in device_api.c. Each is
 * decoded on the GPU where zgpu_tuning.host_read_route and the route model say so (device/host_dest.c), else by
 * the host executor (host/host_read.c). */
#include <stdlib.h>
#include <string.h>

#include "api/array.h"
#include "common/status.h"
#include "device/device.h"
#include "host/host_read.h"

static zgpu_status read_into_host(zgpu_array *a, size_t n, const uint64_t *starts, const uint64_t *counts,
                                  void *const *outs, const int64_t *out_strides, const zgpu_read_options *opts) {
#ifdef ZGPU_HAVE_CUDA
    int taken = 0;
    zg_host_lesson lesson;
    const zgpu_status s = zg_cuda_host_read(a, n, starts, counts, outs, out_strides, opts, &taken, &lesson);
    if (taken) return s;
    if (lesson.valid) { /* the model sent it to the host threads: their time teaches it */
        const double t0 = zg_now();
        const zgpu_status hs = lesson.plan ? zg_host_read_regions_planned(a, lesson.plan, n, starts, counts, outs,
                                                                          out_strides, opts, NULL)
                                           : zg_host_read_regions(a, n, starts, counts, outs, out_strides, opts, NULL);
        free(lesson.plan);
        if (hs == ZGPU_OK) zg_cuda_host_read_learn(a, &lesson, zg_now() - t0);
        return hs;
    }
#endif
    return zg_host_read_regions(a, n, starts, counts, outs, out_strides, opts, NULL);
}

ZGPU_API zgpu_status zgpu_array_read(zgpu_array *a, const uint64_t *start, const uint64_t *count, void *out,
                                     const int64_t *out_strides) {
    if (!a || !out || (a->meta.ndim > 0 && (!start || !count)))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_read: array, start, count and out are required");
    void *outs[1] = {out};
    return read_into_host(a, 1, start, count, outs, out_strides, NULL);
}

ZGPU_API void zgpu_read_options_init(zgpu_read_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->scale = 1.0;
}

ZGPU_API zgpu_status zgpu_array_read_ex(zgpu_array *array, const uint64_t *start, const uint64_t *count, void *out,
                                        const int64_t *out_strides, const zgpu_read_options *opts) {
    if (!array || !out || (array->meta.ndim > 0 && (!start || !count)))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_read_ex: array, start, count and out are required");
    void *outs[1] = {out};
    return read_into_host(array, 1, start, count, outs, out_strides, opts);
}

ZGPU_API zgpu_status zgpu_array_read_regions(zgpu_array *array, size_t n, const uint64_t *starts,
                                             const uint64_t *counts, void *const *outs, const int64_t *out_strides,
                                             const zgpu_read_options *opts) {
    if (!array || (n && (!outs || (array->meta.ndim > 0 && (!starts || !counts)))))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT,
                        "zgpu_array_read_regions: array, and for n > 0 starts, counts and outs, are required");
    for (size_t r = 0; r < n; r++)
        ZG_RETURN_IF(!outs[r], ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_read_regions: outs[%zu] is NULL", r);
    return read_into_host(array, n, starts, counts, outs, out_strides, opts);
}
