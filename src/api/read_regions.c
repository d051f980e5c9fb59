/* Reads with options (zgpu_read_options: conversion on the fly) and reads of many boxes in one plan (a chunk several
 * boxes need is fetched and decoded once), into host memory; their device forms are in device_api.c. */
#include <stdlib.h>
#include <string.h>

#include "api/array.h"
#include "common/status.h"
#include "host/host_read.h"

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
    return zg_host_read_regions(array, 1, start, count, outs, out_strides, opts);
}

ZGPU_API zgpu_status zgpu_array_read_regions(zgpu_array *array, size_t n, const uint64_t *starts,
                                             const uint64_t *counts, void *const *outs, const int64_t *out_strides,
                                             const zgpu_read_options *opts) {
    if (!array || (n && (!outs || (array->meta.ndim > 0 && (!starts || !counts)))))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT,
                        "zgpu_array_read_regions: array, and for n > 0 starts, counts and outs, are required");
    for (size_t r = 0; r < n; r++)
        ZG_RETURN_IF(!outs[r], ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_read_regions: outs[%zu] is NULL", r);
    return zg_host_read_regions(array, n, starts, counts, outs, out_strides, opts);
}
