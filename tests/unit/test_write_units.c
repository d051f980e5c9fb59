/* The host's part of device writes (src/plan/write_units.h), on the CPU: which stages of each codec chain of the GPU
 * tests (codec_cases.h) the GPU runs; and the stored layout, checked by doing on the host what the GPU path does —
 * each shard split into its inner chunks where zg_wu_inner_offset says, the fill-value ones left out, every unit
 * encoded alone (with its crc32c cut off: the layout leaves it room and zg_wu_finish_object computes it), the units
 * copied where the layout puts them, then each object finished in place — and comparing every object byte for byte
 * with what the host's own encoder writes for it (zg_chain_encode: the sharding codec, or the chunk's chain). */
#include <sys/stat.h>
#include <unistd.h>

#include "api/array.h"
#include "codec/sharding.h"
#include "plan/plan.h"
#include "plan/write_units.h"
#include "test.h"

#include "codec_cases.h"

static char tmpdir[256];

static zgpu_array *make_array(zgpu_context *ctx, const char *name, const char *meta) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    zgpu_array *a = NULL;
    const zgpu_status s = zgpu_array_create(ctx, path, meta, 1, &a);
    CHECK_MSG(s == ZGPU_OK, "%s: create: %s", name, zgpu_last_error());
    return s == ZGPU_OK ? a : NULL;
}

/* ------------------------------------------------------------------------------------------------ analysis */

/* What each chain of codec_cases.h encodes with. */
typedef struct expect {
    const char *name;
    int gpu, blosc, format, crc32c, delta, shuffle, transposed, sharded;
    const char *why; /* host: a part of the reason */
} expect;

static const expect expects[] = {
    {"v3_zstd_u16", 1, 0, ZG_GE_ZSTD, 0, 0, 0, 0, 0, NULL},
    {"v3_zstd_crc32c_u16", 1, 0, ZG_GE_ZSTD, 1, 0, 0, 0, 0, NULL},
    {"v3_zstd_checksum_f32", 0, 0, 0, 0, 0, 0, 0, 0, "checksum"},
    {"v3_blosc_lz4_shuffle_u16", 1, 1, 0, 0, 0, 0, 0, 0, NULL},
    {"v3_blosc_lz4_shuffle_f32", 1, 1, 0, 0, 0, 0, 0, 0, NULL},
    {"v3_blosc_zstd_bitshuffle_u32", 1, 1, 0, 0, 0, 0, 0, 0, NULL},
    {"v3_blosc_zlib_noshuffle_i64", 1, 1, 0, 0, 0, 0, 0, 0, NULL},
    {"v3_blosc_blosclz_u16_cpu", 1, 1, 0, 0, 0, 0, 0, 0, NULL}, /* (refused by the encoder's layout: no BloscLZ) */
    {"v3_gzip_f64", 1, 0, ZG_GE_GZIP, 0, 0, 0, 0, 0, NULL},
    {"v3_bigendian_crc32c_i32", 0, 0, 0, 0, 0, 0, 0, 0, "crc32c"},
    {"v3_transpose_zstd_u8", 1, 0, ZG_GE_ZSTD, 0, 0, 0, 1, 0, NULL},
    {"v3_sharded_zstd_u16", 1, 0, ZG_GE_ZSTD, 0, 0, 0, 0, 1, NULL},
    {"v2_zlib_i16", 1, 0, ZG_GE_ZLIB, 0, 0, 0, 0, 0, NULL},
    {"v2_lz4_u32", 1, 0, ZG_GE_LZ4, 0, 0, 0, 0, 0, NULL},
    {"v2_delta_zstd_i32", 1, 0, ZG_GE_ZSTD, 0, 4, 0, 0, 0, NULL},
    {"v2_shuffle_gzip_F_u16", 1, 0, ZG_GE_GZIP, 0, 0, 2, 1, 0, NULL},
    {"v2_blosc_lz4_bigendian_u16", 1, 1, 0, 0, 0, 0, 0, 0, NULL},
    {"v2_bz2_u16_cpu", 0, 0, 0, 0, 0, 0, 0, 0, "bz2"},
    {"v2_raw_f32", 0, 0, 0, 0, 0, 0, 0, 0, "no compressor"},
};

static void test_analysis(zgpu_context *ctx) {
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const expect *x = NULL;
        for (size_t k = 0; k < sizeof expects / sizeof *expects; k++)
            if (!strcmp(expects[k].name, cases[i].name)) x = &expects[k];
        CHECK_MSG(x != NULL, "%s: no expectation in this test (a new case in codec_cases.h?)", cases[i].name);
        zgpu_array *a = make_array(ctx, cases[i].name, cases[i].meta);
        if (!x || !a) {
            zgpu_array_close(a);
            continue;
        }
        zg_wu_encoder e;
        memset(&e, 0x5a, sizeof e); /* (analyse sets every field) */
        zg_wu_analyse(a->chain, &e);
        CHECK_MSG(e.gpu == x->gpu, "%s: gpu %d (%s)", x->name, e.gpu, e.gpu ? "" : e.why);
        if (x->gpu && e.gpu) {
            CHECK_MSG(e.blosc == x->blosc && (x->blosc || (int)e.format == x->format), "%s: blosc %d format %d",
                      x->name, e.blosc, (int)e.format);
            CHECK_MSG(e.crc32c == x->crc32c && e.delta == x->delta && e.shuffle == x->shuffle &&
                          e.transposed == x->transposed && (e.shard != NULL) == x->sharded,
                      "%s: crc32c %d delta %d shuffle %d transposed %d shard %d", x->name, e.crc32c, e.delta,
                      e.shuffle, e.transposed, e.shard != NULL);
            CHECK(e.why[0] == 0);
        }
        if (!x->gpu && !e.gpu) CHECK_MSG(strstr(e.why, x->why) != NULL, "%s: why: %s", x->name, e.why);
        if (e.blosc && e.gpu) { /* the codec's configuration, resolved as blosc_compress_ctx gets it */
            CHECK(e.bp.compressor >= 0 && e.bp.compressor < ZG_BLOSC_COMP_N);
            CHECK(e.bp.typesize >= 1 && e.bp.clevel >= 0 && e.bp.clevel <= 9 && e.bp.shuffle >= 0 && e.bp.shuffle <= 2);
        }
        if (e.gpu && e.transposed) { /* strides: a permutation of the encoded chunk's C strides */
            const zg_repr *r = &a->chain->a2b->decoded;
            int64_t c[ZGPU_MAX_DIMS];
            zg_c_strides(r->ndim, r->shape, r->dtype.size, c);
            int seen = 0;
            for (int d = 0; d < r->ndim; d++)
                for (int q = 0; q < r->ndim; q++) seen += e.strides[d] == c[q];
            CHECK_EQ_U64(seen, r->ndim);
        }
        zgpu_array_close(a);
    }
}

/* ------------------------------------------------------------------------------------------------ layouts */

/* Data for a chunk or shard (3-D, `shape`): boxes of 8 x 5 x 12 (the test's inner chunks) the fill value (zeros),
 * constant or noisy in turn. */
static void make_values(uint8_t *p, const uint64_t *shape, size_t isz, uint32_t seed) {
    uint32_t r = seed * 2654435761u + 7;
    size_t i = 0;
    for (uint64_t z = 0; z < shape[0]; z++)
        for (uint64_t y = 0; y < shape[1]; y++)
            for (uint64_t x = 0; x < shape[2]; x++, i += isz) {
                r = r * 1664525u + 1013904223u;
                const int kind = (int)((z / 8 + y / 5 + x / 12 + seed) % 3);
                for (size_t b = 0; b < isz; b++)
                    p[i + b] = kind == 0 ? 0 : kind == 1 ? (uint8_t)(seed + 1) : (uint8_t)(r >> (8 + b));
            }
}

/* One wave of n objects of array a, encoded as the GPU path would (host encoders standing in for the GPU's) and
 * packed by the layout; every object compared with zg_chain_encode's. */
static void check_wave(zgpu_array *a, const char *what, size_t n, int all_fill_object) {
    zg_wu_encoder e;
    zg_wu_analyse(a->chain, &e);
    CHECK_MSG(e.gpu, "%s: not a GPU chain: %s", what, e.why);
    if (!e.gpu) return;
    const zg_chain *ch = a->chain;
    const size_t isz = a->meta.dtype.size, obj_nbytes = (size_t)zg_repr_nbytes(&ch->repr);
    const zg_chain *uch = e.shard ? zg_sharding_inner_chain(e.shard) : ch;
    const size_t upo = e.shard ? (size_t)zg_sharding_n_inner(e.shard) : 1, unit_nbytes = (size_t)zg_repr_nbytes(&uch->repr);
    const int nd = ch->repr.ndim;
    int64_t ostr[ZGPU_MAX_DIMS], ustr[ZGPU_MAX_DIMS];
    zg_c_strides(nd, ch->repr.shape, isz, ostr);
    zg_c_strides(nd, uch->repr.shape, isz, ustr);
    const size_t nu = n * upo;
    uint8_t *objs = malloc(n * obj_nbytes), *unit = malloc(unit_nbytes);
    zg_buf *enc = calloc(nu, sizeof *enc);
    size_t *sizes = calloc(nu, sizeof *sizes), *off = calloc(n + 1, sizeof *off), *uoff = calloc(nu, sizeof *uoff);
    size_t *ipos = calloc(n, sizeof *ipos);
    int *differs = calloc(n, sizeof *differs), *udiffers = calloc(nu, sizeof *udiffers);
    const size_t inb = e.shard ? (size_t)zg_sharding_index_nbytes(e.shard) : 0;
    uint8_t *index = malloc(n * inb + 1);
    uint64_t *pairs = malloc(2 * upo * sizeof *pairs);
    zg_scratch scr = ZG_SCRATCH_INIT;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t *o = objs + i * obj_nbytes;
        if (all_fill_object && i == 1) memset(o, 0, obj_nbytes);
        else make_values(o, ch->repr.shape, isz, (uint32_t)i);
        differs[i] = 0;
        for (size_t b = 0; b < obj_nbytes; b++) differs[i] |= o[b] != 0; /* (fill value 0 in these arrays) */
        for (size_t k = 0; k < upo; k++) { /* the unit as the GPU has it: split out of the shard, C order */
            const size_t u = i * upo + k;
            const uint8_t *src = o;
            if (e.shard) {
                src = o + zg_wu_inner_offset(e.shard, nd, ostr, k);
                /* copy the inner box out (rows along the last axis) */
                const uint64_t *ish = zg_sharding_inner_shape(e.shard);
                uint64_t idx[ZGPU_MAX_DIMS] = {0};
                const size_t row = (size_t)ish[nd - 1] * isz;
                for (size_t r = 0; r < unit_nbytes / row; r++) {
                    int64_t so = 0, dof = 0;
                    for (int d = 0; d < nd - 1; d++) so += (int64_t)idx[d] * ostr[d], dof += (int64_t)idx[d] * ustr[d];
                    memcpy(unit + dof, src + so, row);
                    for (int d = nd - 2; d >= 0 && ++idx[d] == ish[d]; d--) idx[d] = 0;
                }
                src = unit;
            }
            udiffers[u] = 0;
            for (size_t b = 0; b < unit_nbytes; b++) udiffers[u] |= src[b] != 0;
            CHECK_OK(zg_chain_encode(uch, src, &enc[u], &scr));
            sizes[u] = enc[u].size - (e.crc32c ? 4 : 0); /* the GPU's stored unit: no crc32c */
            total += enc[u].size;
        }
    }
    zg_wu_pack p = {.n = n, .upo = upo, .sizes = sizes, .differs = differs, .udiffers = e.shard ? udiffers : NULL,
                    .crc32c = e.crc32c, .shard = e.shard, .off = off, .uoff = uoff, .ipos = ipos, .index = index,
                    .pairs = pairs};
    size_t failed = 0;
    CHECK_OK(zg_wu_pack_plan(&p, &failed));
    uint8_t *packed = malloc(total + n * (inb + 8) + 1);
    memset(packed, 0xa5, total + n * (inb + 8) + 1); /* (anything the layout leaves is written by finish) */
    for (size_t u = 0; u < nu; u++)
        if (uoff[u] != SIZE_MAX) memcpy(packed + uoff[u], enc[u].data, sizes[u]);
    for (size_t i = 0; i < n; i++) zg_wu_finish_object(&p, i, packed);
    zg_buf want = ZG_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        CHECK_MSG(off[i + 1] >= off[i], "%s: object %zu", what, i);
        if (!differs[i]) { /* deleted: nothing packed */
            CHECK_MSG(off[i + 1] == off[i], "%s: object %zu is the fill value yet packed", what, i);
            continue;
        }
        want.size = 0;
        CHECK_OK(zg_chain_encode(ch, objs + i * obj_nbytes, &want, &scr));
        CHECK_MSG(want.size == off[i + 1] - off[i] && !memcmp(want.data, packed + off[i], want.size),
                  "%s: object %zu: %zu bytes packed, the host encoder writes %zu%s", what, i, off[i + 1] - off[i],
                  want.size, want.size == off[i + 1] - off[i] ? " (other bytes)" : "");
    }
    /* every fill-value inner chunk left out, every other one stored */
    for (size_t u = 0; e.shard && u < nu; u++)
        CHECK((uoff[u] == SIZE_MAX) == (!udiffers[u] || !differs[u / upo]));
    zg_buf_free(&want);
    zg_scratch_free(&scr);
    for (size_t u = 0; u < nu; u++) zg_buf_free(&enc[u]);
    free(enc), free(objs), free(unit), free(sizes), free(off), free(uoff), free(ipos), free(differs), free(udiffers);
    free(index), free(pairs), free(packed);
}

#define SHARDED(inner_codecs, location)                                                                           \
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [64, 40, 48], \"data_type\": \"uint16\", "          \
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [16, 20, 24]}}, "                \
    "\"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": [{\"name\": "               \
    "\"sharding_indexed\", \"configuration\": {\"chunk_shape\": [8, 5, 12], \"codecs\": " inner_codecs ", "      \
    "\"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": "         \
    "\"crc32c\"}], \"index_location\": \"" location "\"}}]}"
#define PLAIN(codecs)                                                                                             \
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [64, 40, 48], \"data_type\": \"uint32\", "          \
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [16, 20, 24]}}, "                \
    "\"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": " codecs "}"
#define BYTES "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"
#define ZSTD "{\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}"

static void test_layouts(zgpu_context *ctx) {
    static const struct { const char *name, *meta; } arrays[] = {
        {"sharded_end", SHARDED("[" BYTES ", " ZSTD "]", "end")},
        {"sharded_start", SHARDED("[" BYTES ", " ZSTD "]", "start")},
        {"sharded_crc_end", SHARDED("[" BYTES ", " ZSTD ", {\"name\": \"crc32c\"}]", "end")},
        {"sharded_gzip_crc_start", SHARDED("[" BYTES ", {\"name\": \"gzip\", \"configuration\": {\"level\": 1}}, "
                                           "{\"name\": \"crc32c\"}]", "start")},
        {"sharded_one_inner", "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [64, 40, 48], "
                              "\"data_type\": \"int16\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
                              "{\"chunk_shape\": [8, 5, 12]}}, \"fill_value\": 0, \"codecs\": [{\"name\": "
                              "\"sharding_indexed\", \"configuration\": {\"chunk_shape\": [8, 5, 12], \"codecs\": [" BYTES
                              ", " ZSTD "]}}]}"},
        {"plain_zstd", PLAIN("[" BYTES ", " ZSTD "]")},
        {"plain_zstd_crc", PLAIN("[" BYTES ", " ZSTD ", {\"name\": \"crc32c\"}]")},
        {"plain_blosc_crc", PLAIN("[" BYTES ", {\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", "
                                  "\"clevel\": 5, \"shuffle\": \"shuffle\", \"typesize\": 4}}, {\"name\": \"crc32c\"}]")},
    };
    for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) {
        zgpu_array *a = make_array(ctx, arrays[i].name, arrays[i].meta);
        if (!a) continue;
        char what[128];
        snprintf(what, sizeof what, "%s, one object", arrays[i].name);
        check_wave(a, what, 1, 0);
        snprintf(what, sizeof what, "%s, 5 objects, the second the fill value", arrays[i].name);
        check_wave(a, what, 5, 1);
        zgpu_array_close(a);
    }
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zgpu_write_units_XXXXXX");
    if (!mkdtemp(tmpdir)) return 2;
    zgpu_context *ctx = NULL;
    if (zgpu_context_create(NULL, &ctx) != ZGPU_OK) return 2;
    test_analysis(ctx);
    test_layouts(ctx);
    zgpu_context_free(ctx);
    zt_remove_dir(tmpdir);
    TEST_MAIN_END();
}
