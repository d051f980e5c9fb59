/* Table-driven round trips through the public API: dtype × codec chain × chunk/shard shape × region.
 * Every case writes random data, reads the whole array and several boxes (C-contiguous and with
 * Fortran-order strides), partially overwrites a box and compares every byte with a reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "zgpu.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

typedef struct {
    const char *dtype;  /* v3 name */
    size_t size;
} dtype_case;

static const dtype_case dtypes[] = {
    {"bool", 1}, {"int8", 1}, {"uint8", 1}, {"int16", 2}, {"uint16", 2}, {"int32", 4}, {"uint32", 4},
    {"int64", 8}, {"uint64", 8}, {"float16", 2}, {"float32", 4}, {"float64", 8}, {"complex64", 8},
    {"complex128", 16}, {"r24", 3},
};

/* Codec chains (v3), "%s" is replaced by nothing; BYTES is the bytes codec for the dtype. */
static const char *chains[] = {
    "[BYTES]",
    "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}}]",
    "[{\"name\":\"transpose\",\"configuration\":{\"order\":TRANSPOSE}}, BYTES]",
    "[BYTES, {\"name\":\"zstd\",\"configuration\":{\"level\":3,\"checksum\":true}}]",
    "[BYTES, {\"name\":\"gzip\",\"configuration\":{\"level\":5}}]",
    "[BYTES, {\"name\":\"blosc\",\"configuration\":{\"cname\":\"lz4\",\"clevel\":5,\"shuffle\":\"shuffle\",\"typesize\":TYPESIZE,\"blocksize\":0}}]",
    "[BYTES, {\"name\":\"blosc\",\"configuration\":{\"cname\":\"zstd\",\"clevel\":3,\"shuffle\":\"bitshuffle\",\"typesize\":TYPESIZE,\"blocksize\":0}}]",
    "[BYTES, {\"name\":\"crc32c\"}]",
    "[BYTES, {\"name\":\"numcodecs.zlib\",\"configuration\":{\"level\":1}}]",
    "[BYTES, {\"name\":\"numcodecs.bz2\",\"configuration\":{\"level\":1}}]",
    "[BYTES, {\"name\":\"numcodecs.lz4\",\"configuration\":{\"acceleration\":1}}]",
    "[BYTES, {\"name\":\"numcodecs.shuffle\",\"configuration\":{\"elementsize\":TYPESIZE}}, {\"name\":\"zstd\",\"configuration\":{\"level\":1,\"checksum\":false}}]",
    "SHARD_END",
    "SHARD_START",
    "SHARD_THEN_ZSTD", /* a bytes->bytes codec after sharding: whole shards are the unit of decoding */
};
#define N_CHAINS (sizeof chains / sizeof chains[0])

typedef struct {
    int ndim;
    uint64_t shape[3], chunk[3], inner[3];
} shape_case;

static const shape_case shapes[] = {
    {1, {100}, {16}, {8}},
    {2, {37, 45}, {8, 16}, {4, 8}},
    {3, {10, 20, 30}, {4, 8, 10}, {2, 4, 5}},
};

/* Replaces every occurrence of `key` in s (in place into out). */
static void replace_all(char *out, size_t cap, const char *s, const char *key, const char *val) {
    size_t o = 0, kl = strlen(key), vl = strlen(val);
    while (*s && o + 1 < cap) {
        if (!strncmp(s, key, kl) && o + vl < cap) {
            memcpy(out + o, val, vl);
            o += vl;
            s += kl;
        } else out[o++] = *s++;
    }
    out[o] = '\0';
}

static void json_shape(char *buf, size_t cap, int nd, const uint64_t *v) {
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < nd; d++) o += (size_t)snprintf(buf + o, cap - o, "%s%llu", d ? "," : "", (unsigned long long)v[d]);
    snprintf(buf + o, cap - o, "]");
}

static void build_codecs(char *out, size_t cap, const char *chain, const dtype_case *dt, const shape_case *sc) {
    char bytes[128], typesize[16], transpose[64], tmp[2048], tmp2[2048];
    if (dt->size == 1 || !strcmp(dt->dtype, "r24")) snprintf(bytes, sizeof bytes, "{\"name\":\"bytes\"}");
    else snprintf(bytes, sizeof bytes, "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}");
    snprintf(typesize, sizeof typesize, "%zu", dt->size);
    uint64_t perm[3];
    for (int d = 0; d < sc->ndim; d++) perm[d] = (uint64_t)(sc->ndim - 1 - d);
    json_shape(transpose, sizeof transpose, sc->ndim, perm);
    if (!strncmp(chain, "SHARD", 5)) {
        char inner[64];
        json_shape(inner, sizeof inner, sc->ndim, sc->inner);
        snprintf(tmp, sizeof tmp,
                 "[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":%s,\"codecs\":[BYTES,"
                 "{\"name\":\"zstd\",\"configuration\":{\"level\":1,\"checksum\":false}}],\"index_codecs\":["
                 "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},{\"name\":\"crc32c\"}],"
                 "\"index_location\":\"%s\"}}]",
                 inner, strcmp(chain, "SHARD_START") ? "end" : "start");
        if (!strcmp(chain, "SHARD_THEN_ZSTD")) {
            size_t len = strlen(tmp);
            snprintf(tmp + len - 1, sizeof tmp - len + 1, ",{\"name\":\"zstd\",\"configuration\":{\"level\":1}}]");
        }
    } else snprintf(tmp, sizeof tmp, "%s", chain);
    replace_all(tmp2, sizeof tmp2, tmp, "BYTES", bytes);
    replace_all(tmp, sizeof tmp, tmp2, "TYPESIZE", typesize);
    replace_all(out, cap, tmp, "TRANSPOSE", transpose);
}

static void fill_random(uint8_t *p, size_t n, const dtype_case *dt) {
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rnd();
    if (!strcmp(dt->dtype, "bool"))
        for (size_t i = 0; i < n; i++) p[i] &= 1;
    /* keep a third of the array at the fill value (0) so some chunks are empty and get deleted */
    size_t third = n / 3 / dt->size * dt->size;
    memset(p, 0, third);
}

/* Reference copy of a box out of a C-order array. */
static void ref_box(const uint8_t *full, const shape_case *sc, size_t isz, const uint64_t *st, const uint64_t *ct,
                    uint8_t *out) {
    uint64_t idx[3] = {0, 0, 0};
    size_t n = 1;
    for (int d = 0; d < sc->ndim; d++) n *= ct[d];
    for (size_t k = 0; k < n; k++) {
        size_t off = 0;
        for (int d = 0; d < sc->ndim; d++) off = off * sc->shape[d] + st[d] + idx[d];
        memcpy(out + k * isz, full + off * isz, isz);
        for (int d = sc->ndim - 1; d >= 0; d--) {
            if (++idx[d] < ct[d]) break;
            idx[d] = 0;
        }
    }
}

static int run_case(zgpu_context *ctx, const char *dir, const dtype_case *dt, const char *chain, const shape_case *sc) {
    char codecs[4096], shape[64], chunk[64], doc[8192];
    build_codecs(codecs, sizeof codecs, chain, dt, sc);
    json_shape(shape, sizeof shape, sc->ndim, sc->shape);
    json_shape(chunk, sizeof chunk, sc->ndim, sc->chunk);
    const char *fill = !strcmp(dt->dtype, "bool") ? "false" : !strncmp(dt->dtype, "complex", 7) ? "[0.0, 0.0]" :
                       !strcmp(dt->dtype, "r24") ? "[0, 0, 0]" : "0";
    snprintf(doc, sizeof doc,
             "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":%s,\"data_type\":\"%s\","
             "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":%s}},"
             "\"chunk_key_encoding\":{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}},"
             "\"fill_value\":%s,\"codecs\":%s,\"attributes\":{\"case\":\"x\"}}",
             shape, dt->dtype, chunk, fill, codecs);
    int failures_before = zt_fail;
    zgpu_array *a = NULL;
    zgpu_status st = zgpu_array_create(ctx, dir, doc, 1, &a);
    CHECK_MSG(st == ZGPU_OK, "create %s %s: %s", dt->dtype, codecs, zgpu_last_error());
    if (st != ZGPU_OK) return 1;
    size_t isz = dt->size, n = 1;
    for (int d = 0; d < sc->ndim; d++) n *= sc->shape[d];
    uint8_t *full = malloc(n * isz), *got = malloc(n * isz), *ref = malloc(n * isz);
    fill_random(full, n * isz, dt);
    uint64_t zero[3] = {0, 0, 0};
    CHECK_OK(zgpu_array_write(a, zero, sc->shape, full, NULL));
    zgpu_array_close(a);
    CHECK_OK(zgpu_array_open(ctx, dir, &a));
    if (!a) { free(full); free(got); free(ref); return 1; }
    memset(got, 0xAB, n * isz);
    CHECK_OK(zgpu_array_read(a, zero, sc->shape, got, NULL));
    CHECK_MSG(memcmp(got, full, n * isz) == 0, "whole read differs: %s %s", dt->dtype, codecs);

    /* random boxes, C order and Fortran strides */
    for (int r = 0; r < 6; r++) {
        uint64_t bst[3], bct[3];
        size_t bn = 1;
        for (int d = 0; d < sc->ndim; d++) {
            bst[d] = rnd() % sc->shape[d];
            bct[d] = 1 + rnd() % (sc->shape[d] - bst[d]);
            bn *= bct[d];
        }
        ref_box(full, sc, isz, bst, bct, ref);
        memset(got, 0xCD, bn * isz);
        CHECK_OK(zgpu_array_read(a, bst, bct, got, NULL));
        CHECK_MSG(memcmp(got, ref, bn * isz) == 0, "box read differs: %s %s", dt->dtype, codecs);
        /* Fortran-order output: strides grow from the first axis */
        int64_t fs[3];
        int64_t s = (int64_t)isz;
        for (int d = 0; d < sc->ndim; d++) { fs[d] = s; s *= (int64_t)bct[d]; }
        uint8_t *f = malloc(bn * isz);
        CHECK_OK(zgpu_array_read(a, bst, bct, f, fs));
        /* compare element (i,j,k) */
        uint64_t idx[3] = {0, 0, 0};
        int same = 1;
        for (size_t k = 0; k < bn && same; k++) {
            size_t off = 0;
            for (int d = 0; d < sc->ndim; d++) off += idx[d] * (size_t)fs[d];
            same = memcmp(f + off, ref + k * isz, isz) == 0;
            for (int d = sc->ndim - 1; d >= 0; d--) {
                if (++idx[d] < bct[d]) break;
                idx[d] = 0;
            }
        }
        CHECK_MSG(same, "strided read differs: %s %s", dt->dtype, codecs);
        free(f);
    }
    /* partial overwrite of a box that straddles chunks, then re-read everything */
    uint64_t wst[3], wct[3];
    size_t wn = 1;
    for (int d = 0; d < sc->ndim; d++) {
        wst[d] = sc->shape[d] / 3;
        wct[d] = sc->shape[d] / 2;
        wn *= wct[d];
    }
    uint8_t *patch = malloc(wn * isz);
    fill_random(patch, wn * isz, dt);
    memset(patch, 0x01, isz); /* not the fill value */
    CHECK_OK(zgpu_array_write(a, wst, wct, patch, NULL));
    uint64_t idx[3] = {0, 0, 0};
    for (size_t k = 0; k < wn; k++) {
        size_t off = 0;
        for (int d = 0; d < sc->ndim; d++) off = off * sc->shape[d] + wst[d] + idx[d];
        memcpy(full + off * isz, patch + k * isz, isz);
        for (int d = sc->ndim - 1; d >= 0; d--) {
            if (++idx[d] < wct[d]) break;
            idx[d] = 0;
        }
    }
    CHECK_OK(zgpu_array_read(a, zero, sc->shape, got, NULL));
    CHECK_MSG(memcmp(got, full, n * isz) == 0, "read after partial write differs: %s %s", dt->dtype, codecs);
    free(patch);
    free(full);
    free(got);
    free(ref);
    zgpu_array_close(a);
    return zt_fail != failures_before;
}

int main(void) {
    char dir[] = "/tmp/zgpu-rt-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char path[256];
    snprintf(path, sizeof path, "%s/a.zarr", dir);
    zgpu_context *ctx;
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.num_threads = 3;
    CHECK_OK(zgpu_context_create(&o, &ctx));
    int cases = 0, failed = 0;
    for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++)
        for (size_t ci = 0; ci < N_CHAINS; ci++)
            for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
                failed += run_case(ctx, path, &dtypes[di], chains[ci], &shapes[si]);
                cases++;
            }
    printf("%d cases, %d failed\n", cases, failed);
    zgpu_context_free(ctx);
    zt_remove_dir(dir);
    TEST_MAIN_END();
}
