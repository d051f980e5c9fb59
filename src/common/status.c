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

ZGPU_API const char *zgpu_status_name(zgpu_status s) {
    switch (s) {
    case ZGPU_OK: return "ZGPU_OK";
    case ZGPU_ERR_INVALID_ARGUMENT: return "ZGPU_ERR_INVALID_ARGUMENT";
    case ZGPU_ERR_NOT_FOUND: return "ZGPU_ERR_NOT_FOUND";
    case ZGPU_ERR_EXISTS: return "ZGPU_ERR_EXISTS";
    case ZGPU_ERR_IO: return "ZGPU_ERR_IO";
    case ZGPU_ERR_BAD_METADATA: return "ZGPU_ERR_BAD_METADATA";
    case ZGPU_ERR_UNSUPPORTED: return "ZGPU_ERR_UNSUPPORTED";
    case ZGPU_ERR_CORRUPT_DATA: return "ZGPU_ERR_CORRUPT_DATA";
    case ZGPU_ERR_OUT_OF_RANGE: return "ZGPU_ERR_OUT_OF_RANGE";
    case ZGPU_ERR_NO_MEMORY: return "ZGPU_ERR_NO_MEMORY";
    case ZGPU_ERR_NO_GPU: return "ZGPU_ERR_NO_GPU";
    case ZGPU_ERR_CUDA: return "ZGPU_ERR_CUDA";
    case ZGPU_ERR_INTERNAL: return "ZGPU_ERR_INTERNAL";
    }
    return "ZGPU_ERR_UNKNOWN";
}
