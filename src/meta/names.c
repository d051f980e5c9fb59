/* Names in metadata: no NUL, no control characters (see names.h for why). */
#include "meta/names.h"

#include <stdio.h>
#include <string.h>

#include "common/status.h"

const char *zg_meta_quote(const char *s, size_t len, char *buf, size_t bufsize) {
    size_t o = 0;
    if (bufsize < 16) { if (bufsize) buf[0] = 0; return buf; }
    buf[o++] = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (o + 12 >= bufsize || i >= 64) { memcpy(buf + o, "...", 3); o += 3; break; }
        if (c < 0x20 || c == 0x7f) o += (size_t)snprintf(buf + o, bufsize - o, "\\u%04x", c);
        else if (c == '"' || c == '\\') { buf[o++] = '\\'; buf[o++] = (char)c; }
        else buf[o++] = (char)c;
    }
    buf[o++] = '"';
    buf[o] = 0;
    return buf;
}

int zg_meta_has_control(const zj_value *v) {
    if (!v || v->type != ZJ_STRING) return 0;
    for (size_t i = 0; i < v->len; i++) {
        unsigned char c = (unsigned char)v->str[i];
        if (c < 0x20 || c == 0x7f) return 1;
    }
    return 0;
}

zgpu_status zg_meta_check_name(const zj_value *v, const char *field) {
    if (!zg_meta_has_control(v)) return ZGPU_OK;
    char q[96];
    return zg_error(ZGPU_ERR_BAD_METADATA, "%s %s contains a NUL or control character", field,
                    zg_meta_quote(v->str, v->len, q, sizeof q));
}

/* path: the member path so far ("codecs[1].configuration.cname"), for the message. */
static zgpu_status check_no_nul(const zj_value *v, char *path, size_t cap, size_t used) {
    if (v->type == ZJ_STRING) {
        if (memchr(v->str, 0, v->len) == NULL) return ZGPU_OK;
        char q[96];
        return zg_error(ZGPU_ERR_BAD_METADATA, "%s %s contains a NUL character", path,
                        zg_meta_quote(v->str, v->len, q, sizeof q));
    }
    if (v->type != ZJ_ARRAY && v->type != ZJ_OBJECT) return ZGPU_OK;
    for (size_t i = 0; i < v->n; i++) {
        int n = v->type == ZJ_ARRAY ? snprintf(path + used, cap - used, "[%zu]", i)
                                    : snprintf(path + used, cap - used, ".%s", v->keys[i]);
        size_t next = n < 0 ? used : used + (size_t)n < cap ? used + (size_t)n : cap - 1;
        ZG_FORWARD(check_no_nul(v->items[i], path, cap, next));
        path[used] = 0;
    }
    return ZGPU_OK;
}

zgpu_status zg_meta_check_no_nul(const zj_value *v, const char *field) {
    if (!v) return ZGPU_OK;
    char path[256];
    snprintf(path, sizeof path, "%s", field);
    return check_no_nul(v, path, sizeof path, strlen(path));
}
