#include "codec/deflate_tls.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct deflate_tls {
    struct libdeflate_decompressor *dec;
    struct libdeflate_compressor *comp;
    int comp_level;
} deflate_tls;

static _Thread_local deflate_tls *tl_deflate;
static pthread_key_t deflate_key;
static pthread_once_t deflate_once = PTHREAD_ONCE_INIT;

static void deflate_tls_free(void *p) {
    deflate_tls *t = p;
    if (!t) return;
    libdeflate_free_decompressor(t->dec);
    libdeflate_free_compressor(t->comp);
    free(t);
}

static void deflate_key_init(void) { (void)pthread_key_create(&deflate_key, deflate_tls_free); }

static deflate_tls *get_tls(void) {
    if (tl_deflate) return tl_deflate;
    pthread_once(&deflate_once, deflate_key_init);
    deflate_tls *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    tl_deflate = t;
    (void)pthread_setspecific(deflate_key, t); /* frees it at thread exit */
    return t;
}

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
