#include "codec/deflate_tls.h"

#include <stdlib.h>

#include "common/tls.h"

typedef struct deflate_tls {
    struct libdeflate_decompressor *dec;
    struct libdeflate_compressor *comp;
    int comp_level;
} deflate_tls;

static _Thread_local void *tl_deflate;

static void deflate_tls_free(void *p) {
    deflate_tls *t = p;
    libdeflate_free_decompressor(t->dec);
    libdeflate_free_compressor(t->comp);
    free(t);
}

static deflate_tls *get_tls(void) { return zg_tls_get(&tl_deflate, sizeof(deflate_tls), deflate_tls_free); }

struct libdeflate_decompressor *zg_deflate_decompressor(void) {
    deflate_tls *t = get_tls();
    if (t && !t->dec) t->dec = libdeflate_alloc_decompressor();
    return t ? t->dec : NULL;
}

struct libdeflate_compressor *zg_deflate_compressor(int level) {
    deflate_tls *t = get_tls();
    if (!t) return NULL;
    if (t->comp && t->comp_level != level) {
        libdeflate_free_compressor(t->comp);
        t->comp = NULL;
    }
    if (!t->comp) {
        t->comp = libdeflate_alloc_compressor(level);
        t->comp_level = level;
    }
    return t->comp;
}
