/* Standard padded base64 (base64.h). */
#include "common/base64.h"

#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *zg_base64_encode(const uint8_t *p, size_t n) {
    char *s = malloc((n + 2) / 3 * 4 + 1);
    if (!s) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t w = (uint32_t)p[i] << 16;
        if (i + 1 < n) w |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n) w |= p[i + 2];
        s[o++] = alphabet[(w >> 18) & 63];
        s[o++] = alphabet[(w >> 12) & 63];
        s[o++] = i + 1 < n ? alphabet[(w >> 6) & 63] : '=';
        s[o++] = i + 2 < n ? alphabet[w & 63] : '=';
    }
    s[o] = 0;
    return s;
}

static int digit(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

int zg_base64_decode(const char *s, size_t len, uint8_t *out, size_t cap, size_t *n) {
    if (len % 4 != 0) return 0;
    size_t k = 0;
    for (size_t i = 0; i < len; i += 4) {
        int d[4], pad = 0;
        for (int j = 0; j < 4; j++) {
            const char c = s[i + j];
            if (c == '=' && i + 4 == len && j >= 2) {
                d[j] = 0;
                pad++;
                continue;
            }
            if (pad) return 0; /* data after '=' */
            if ((d[j] = digit(c)) < 0) return 0;
        }
        const uint32_t w = (uint32_t)d[0] << 18 | (uint32_t)d[1] << 12 | (uint32_t)d[2] << 6 | (uint32_t)d[3];
        const uint8_t b[3] = {(uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w};
        for (int j = 0; j < 3 - pad; j++) {
            if (k >= cap) return 0;
            out[k++] = b[j];
        }
    }
    *n = k;
    return 1;
}
