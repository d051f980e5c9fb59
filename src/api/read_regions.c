/* zgpu_array_read_regions: n boxes in one plan (a chunk several boxes need is fetched and decoded once), into
 * host memory here; the device form is in device_api.c. */
#include <stdlib.h>

#include "api/array.h"
#include "common/status.h"
#include "host/host_read.h"

ZGPU_API zgpu_status zgpu_array_read_regions(zgpu_array *array, size_t n, const uint64_t *starts,
                                             const uint64_t *counts, void *const *outs, const int64_t *out_strides,
                                             const zgpu_read_options *opts) {
    if (!array || (n && (!outs || (array->meta.ndim > 0 && (!starts || !counts)))))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT,
                        "zgpu_array_read_regions: array, and for n > 0 starts, counts and outs, are required");
    for (size_t r = 0; r < n; r++)
        ZG_RETURN_IF(!outs[r], ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_read_regions: outs[%zu] is NULL", r);
    (void)opts;
    return zg_host_read_regions(array, n, starts, counts, outs, out_strides);
}
