#include "common/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char tl_message[ZG_ERRMSG_MAX];

zgpu_status zg_error(zgpu_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_message, sizeof tl_message, fmt, ap);
    va_end(ap);
    return status;
}

void zg_error_prefix(const char *fmt, ...) {
    char prefix[ZG_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char joined[ZG_ERRMSG_MAX];
    snprintf(joined, sizeof joined, "%s%s", prefix, tl_message);
    memcpy(tl_message, joined, sizeof tl_message);
}

const char *zg_error_message(void) { return tl_message; }
void zg_error_save(char *dst) { memcpy(dst, tl_message, ZG_ERRMSG_MAX); }
void zg_error_restore(const char *src) {
    memcpy(tl_message, src, ZG_ERRMSG_MAX);
    tl_message[ZG_ERRMSG_MAX - 1] = '\0';
}

/* ---- public ---- */
ZGPU_API const char *zgpu_last_error(void) { return tl_message; }
ZGPU_API unsigned zgpu_version_number(void) { return ZGPU_VERSION_NUMBER; }
#define ZG_STR2(x) #x
#define ZG_STR(x) ZG_STR2(x)
ZGPU_API const char *zgpu_version_string(void) {
    return ZG_STR(ZGPU_VERSION_MAJOR) "." ZG_STR(ZGPU_VERSION_MINOR) "." ZG_STR(ZGPU_VERSION_PATCH);
}

/* One row per status, in enum order (the enum's values are written out in zgpu.h). */
static const struct {
    const char *name, *message;
} k_statuses[ZGPU_STATUS_COUNT] = {
    {"ZGPU_OK", "success"},
    {"ZGPU_ERR_INVALID_ARGUMENT", "the caller passed something unusable"},
    {"ZGPU_ERR_NOT_FOUND", "no array, group or key at that path"},
    {"ZGPU_ERR_EXISTS", "a Zarr node already exists there"},
    {"ZGPU_ERR_IO", "the operating system failed a read, write or rename"},
    {"ZGPU_ERR_BAD_METADATA", "the metadata is malformed or inconsistent"},
    {"ZGPU_ERR_UNSUPPORTED", "valid Zarr that zgpu does not implement"},
    {"ZGPU_ERR_CORRUPT_DATA", "a stored chunk or shard failed to decode or has the wrong size or checksum"},
    {"ZGPU_ERR_OUT_OF_RANGE", "a selection outside the array's shape"},
    {"ZGPU_ERR_NO_MEMORY", "out of host or device memory, or the memory budget is too small"},
    {"ZGPU_ERR_NO_GPU", "no usable GPU in this build or on this machine"},
    {"ZGPU_ERR_CUDA", "the CUDA runtime, cuFile or nvCOMP reported an error"},
    {"ZGPU_ERR_INTERNAL", "a bug in zgpu: please report it with the message"},
};
_Static_assert(ZGPU_ERR_INTERNAL == ZGPU_STATUS_COUNT - 1, "ZGPU_STATUS_COUNT must follow the enum");

ZGPU_API const char *zgpu_status_name(zgpu_status s) {
    return (unsigned)s < ZGPU_STATUS_COUNT ? k_statuses[s].name : "ZGPU_ERR_UNKNOWN";
}

ZGPU_API const char *zgpu_status_message(zgpu_status s) {
    return (unsigned)s < ZGPU_STATUS_COUNT ? k_statuses[s].message : "unknown status";
}
