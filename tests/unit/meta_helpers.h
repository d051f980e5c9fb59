/* Helpers shared by the metadata tests (test_meta.c, test_meta_types.c): hex comparison of value bytes, JSON
 * compared in compact form, and whether the last error says something. Header-only; include after test.h. */
#ifndef ZG_TEST_META_HELPERS_H
#define ZG_TEST_META_HELPERS_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "zgpu.h"
#include "common/json.h"

static inline int hexval(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

/* Compares n bytes at p with a lowercase hex string of 2n digits. */
static inline int bytes_equal_hex(const uint8_t *p, size_t n, const char *hex) {
    if (strlen(hex) != 2 * n) return 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] != (uint8_t)(hexval(hex[2 * i]) * 16 + hexval(hex[2 * i + 1]))) return 0;
    return 1;
}

static inline char *compact(const zj_value *v) { return zj_write(v, 0); }

#define CHECK_JSON(value, expected)                                      \
    do {                                                                 \
        char *zt_txt = compact(value);                                   \
        CHECK_STR(zt_txt, expected);                                     \
        free(zt_txt);                                                    \
    } while (0)

static inline int last_error_has(const char *needle) { return strstr(zgpu_last_error(), needle) != NULL; }

#endif
