/* Internal error helpers: a status value plus a thread-local message (see zgpu_last_error). */
#ifndef ZG_STATUS_H
#define ZG_STATUS_H
#include "zgpu.h"

#define ZG_ERRMSG_MAX 1024

#if defined(__GNUC__)
#define ZG_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ZG_PRINTF(a, b)
#endif

/** Sets this thread's message to the formatted text and returns `status`. */
zgpu_status zg_error(zgpu_status status, const char *fmt, ...) ZG_PRINTF(2, 3);
/** Prepends formatted context ("array 'a', chunk 'c/0/1', codec 'zstd': ") to this thread's message. */
void zg_error_prefix(const char *fmt, ...) ZG_PRINTF(1, 2);
/** This thread's message (never NULL). */
const char *zg_error_message(void);
/** Copies this thread's message into dst (ZG_ERRMSG_MAX bytes) — to carry it across threads. */
void zg_error_save(char *dst);
/** Sets this thread's message from a saved copy. */
void zg_error_restore(const char *src);

#define ZG_RETURN_IF(cond, status, ...) \
    do { if (cond) return zg_error((status), __VA_ARGS__); } while (0)
#define ZG_FORWARD(expr) \
    do { zgpu_status zg_fwd_status_ = (expr); if (zg_fwd_status_ != ZGPU_OK) return zg_fwd_status_; } while (0)

#endif
