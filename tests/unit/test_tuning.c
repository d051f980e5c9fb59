/* zgpu_tuning (include/zgpu_experimental.h): the defaults of zgpu_tuning_init, what a context keeps (a checked
 * copy of its options' tuning: later changes to the caller's struct do not reach it), each invalid field
 * refused with a message naming it, and older callers' shorter structs. CPU only, runs in CI. The environment's
 * overrides (src/common/env.c) would change what a context reports, so the test skips where one is set. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "zgpu.h"
#include "zgpu_experimental.h"

/* Every variable src/common/env.c reads into a tuning field. */
static const char *const TUNING_ENV[] = {
    "ZGPU_ZSTD_DECODER", "ZGPU_DEFLATE_DECODER", "ZGPU_LZ4_DECODER", "ZGPU_PIPELINE_WAVES", "ZGPU_WAVE_SHAPE",
    "ZGPU_WAVE_SETS", "ZGPU_WAVE_OVERLAP", "ZGPU_ZSTD_ROWS", "ZGPU_ZSTD_HUF_PROBE", "ZGPU_INFLATE_PARTS",
    "ZGPU_TRACE", "ZGPU_PROFILE", "ZGPU_ZSTD_PROFILE", "ZGPU_INFLATE_TIMES", "ZGPU_CLI_SLAB_BYTES",
    "ZGPU_ZSTD_ENCODER"};

/* A context made with `t` (NULL: no tuning), its effective tuning in *got. Returns the status. */
static zgpu_status create_with(const zgpu_tuning *t, zgpu_tuning *got) {
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.num_threads = 1;
    o.tuning = t;
    zgpu_context *ctx = NULL;
    const zgpu_status s = zgpu_context_create(&o, &ctx);
    if (s == ZGPU_OK) {
        memset(got, 0xa5, sizeof *got);
        zgpu_context_tuning(ctx, got);
        zgpu_context_free(ctx);
    } else {
        CHECK(ctx == NULL);
    }
    return s;
}

static int same_tuning(const zgpu_tuning *a, const zgpu_tuning *b) {
    return a->struct_size == b->struct_size && a->zstd_decoder == b->zstd_decoder &&
           a->deflate_decoder == b->deflate_decoder && a->lz4_decoder == b->lz4_decoder &&
           a->pipeline_waves == b->pipeline_waves && a->n_wave_shape == b->n_wave_shape &&
           memcmp(a->wave_shape, b->wave_shape, sizeof a->wave_shape) == 0 && a->wave_sets == b->wave_sets &&
           a->wave_overlap == b->wave_overlap && a->zstd_rows == b->zstd_rows &&
           a->zstd_huf_probe == b->zstd_huf_probe && a->inflate_parts == b->inflate_parts && a->trace == b->trace &&
           a->profile == b->profile && a->copy_slab_bytes == b->copy_slab_bytes && a->zstd_encoder == b->zstd_encoder &&
           a->write_wave_bytes == b->write_wave_bytes;
}

static void test_defaults(void) {
    zgpu_tuning t;
    memset(&t, 0x5a, sizeof t);
    zgpu_tuning_init(&t);
    CHECK_EQ_U64(t.struct_size, sizeof t);
    CHECK(t.zstd_decoder == ZGPU_DECODER_AUTO && t.deflate_decoder == ZGPU_DECODER_AUTO &&
          t.lz4_decoder == ZGPU_DECODER_AUTO);
    CHECK_EQ_U64(t.pipeline_waves, 0);
    CHECK_EQ_U64(t.n_wave_shape, 0);
    for (int i = 0; i < ZGPU_TUNING_MAX_SHAPE; i++) CHECK_EQ_U64(t.wave_shape[i], 0);
    CHECK_EQ_U64(t.wave_sets, 0);
    CHECK(t.wave_overlap == ZGPU_SWITCH_DEFAULT && t.zstd_rows == ZGPU_SWITCH_DEFAULT);
    CHECK(t.zstd_huf_probe == -1);
    CHECK_EQ_U64(t.inflate_parts, 0);
    CHECK_EQ_U64(t.trace, 0);
    CHECK_EQ_U64(t.profile, 0);
    CHECK_EQ_U64(t.copy_slab_bytes, 0);
    CHECK(t.zstd_encoder == ZGPU_DECODER_AUTO);
    CHECK_EQ_U64(t.write_wave_bytes, 0);

    /* no options, options without a tuning, and the defaults passed explicitly: the same effective tuning */
    zgpu_tuning got;
    zgpu_context *ctx = NULL;
    CHECK_OK(zgpu_context_create(NULL, &ctx));
    if (ctx) {
        zgpu_context_tuning(ctx, &got);
        CHECK(same_tuning(&got, &t));
        zgpu_context_free(ctx);
    }
    CHECK_OK(create_with(NULL, &got));
    CHECK(same_tuning(&got, &t));
    CHECK_OK(create_with(&t, &got));
    CHECK(same_tuning(&got, &t));
}

/* Every field away from its default, each at a valid value: the context reports exactly those. */
static void fill_valid(zgpu_tuning *t) {
    zgpu_tuning_init(t);
    t->zstd_decoder = ZGPU_DECODER_HOST;
    t->deflate_decoder = ZGPU_DECODER_NVCOMP;
    t->lz4_decoder = ZGPU_DECODER_ZGPU;
    t->pipeline_waves = 64;
    t->n_wave_shape = 3;
    t->wave_shape[0] = 1, t->wave_shape[1] = 2, t->wave_shape[2] = 1000000;
    t->wave_sets = 4;
    t->wave_overlap = ZGPU_SWITCH_OFF;
    t->zstd_rows = ZGPU_SWITCH_ON;
    t->zstd_huf_probe = 4096;
    t->inflate_parts = 7;
    t->trace = 1;
    t->profile = 1;
    t->copy_slab_bytes = (size_t)3 << 20;
    t->zstd_encoder = ZGPU_DECODER_NVCOMP;
    t->write_wave_bytes = (size_t)5 << 20;
}

static void test_round_trip_and_copy(void) {
    zgpu_tuning t, want, got;
    fill_valid(&t);
    want = t;
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.num_threads = 1;
    o.tuning = &t;
    zgpu_context *ctx = NULL;
    CHECK_OK(zgpu_context_create(&o, &ctx));
    if (!ctx) return;
    zgpu_context_tuning(ctx, &got);
    CHECK(same_tuning(&got, &want));
    /* the caller's struct changed (even made invalid) and then gone: the context still has its copy */
    t.pipeline_waves = 2;
    t.wave_shape[0] = 9;
    t.zstd_decoder = (zgpu_decoder_choice)99;
    memset(&t, 0xff, sizeof t);
    zgpu_context_tuning(ctx, &got);
    CHECK(same_tuning(&got, &want));
    CHECK_EQ_U64(got.pipeline_waves, 64);
    /* the edge values each field accepts */
    zgpu_context_free(ctx);
    zgpu_tuning_init(&t);
    t.pipeline_waves = 1;
    t.n_wave_shape = ZGPU_TUNING_MAX_SHAPE;
    for (int i = 0; i < ZGPU_TUNING_MAX_SHAPE; i++) t.wave_shape[i] = (unsigned)i + 1;
    t.wave_sets = 2;
    t.zstd_huf_probe = 0;
    t.inflate_parts = 1;
    CHECK_OK(create_with(&t, &got));
    CHECK(same_tuning(&got, &t));
    /* every compressor choice of the GPU write path's zstd */
    const zgpu_decoder_choice enc[] = {ZGPU_DECODER_AUTO, ZGPU_DECODER_ZGPU, ZGPU_DECODER_NVCOMP, ZGPU_DECODER_HOST};
    for (size_t i = 0; i < sizeof enc / sizeof *enc; i++) {
        zgpu_tuning_init(&t);
        t.zstd_encoder = enc[i];
        CHECK_OK(create_with(&t, &got));
        CHECK(got.zstd_encoder == enc[i] && got.zstd_decoder == ZGPU_DECODER_AUTO);
    }
}

/* One field made invalid: ZGPU_ERR_INVALID_ARGUMENT, the message naming the field. */
typedef struct bad_case {
    const char *field; /* what the message must name */
    void (*spoil)(zgpu_tuning *t);
} bad_case;

static void bad_zstd(zgpu_tuning *t) { t->zstd_decoder = (zgpu_decoder_choice)4; }
static void bad_deflate(zgpu_tuning *t) { t->deflate_decoder = (zgpu_decoder_choice)-1; }
static void bad_lz4_host(zgpu_tuning *t) { t->lz4_decoder = ZGPU_DECODER_HOST; } /* LZ4 has no host path there */
static void bad_waves_low(zgpu_tuning *t) { t->pipeline_waves = -1; }
static void bad_waves_high(zgpu_tuning *t) { t->pipeline_waves = 65; }
static void bad_shape_count(zgpu_tuning *t) { t->n_wave_shape = ZGPU_TUNING_MAX_SHAPE + 1; }
static void bad_shape_negative(zgpu_tuning *t) { t->n_wave_shape = -1; }
static void bad_shape_zero(zgpu_tuning *t) {
    t->n_wave_shape = 2;
    t->wave_shape[0] = 1; /* wave_shape[1] stays 0 */
}
static void bad_shape_big(zgpu_tuning *t) {
    t->n_wave_shape = 1;
    t->wave_shape[0] = 1000001;
}
static void bad_sets(zgpu_tuning *t) { t->wave_sets = 5; }
static void bad_sets_negative(zgpu_tuning *t) { t->wave_sets = -1; }
static void bad_sets_one(zgpu_tuning *t) { t->wave_sets = 1; }
static void bad_overlap(zgpu_tuning *t) { t->wave_overlap = (zgpu_switch)3; }
static void bad_rows(zgpu_tuning *t) { t->zstd_rows = (zgpu_switch)-1; }
static void bad_probe_low(zgpu_tuning *t) { t->zstd_huf_probe = -2; }
static void bad_probe_high(zgpu_tuning *t) { t->zstd_huf_probe = 4097; }
static void bad_parts(zgpu_tuning *t) { t->inflate_parts = -1; }
static void bad_encoder(zgpu_tuning *t) { t->zstd_encoder = (zgpu_decoder_choice)4; }
static void bad_encoder_negative(zgpu_tuning *t) { t->zstd_encoder = (zgpu_decoder_choice)-1; }
static void bad_size_small(zgpu_tuning *t) { t->struct_size = 4; }
static void bad_size_zero(zgpu_tuning *t) { t->struct_size = 0; }
static void bad_size_large(zgpu_tuning *t) { t->struct_size = sizeof *t + 8; } /* a newer caller's struct */

static void test_invalid(void) {
    const bad_case cases[] = {
        {"zstd_decoder", bad_zstd},       {"deflate_decoder", bad_deflate},  {"lz4_decoder", bad_lz4_host},
        {"pipeline_waves", bad_waves_low}, {"pipeline_waves", bad_waves_high}, {"n_wave_shape", bad_shape_count},
        {"n_wave_shape", bad_shape_negative}, {"wave_shape[1]", bad_shape_zero}, {"wave_shape[0]", bad_shape_big},
        {"wave_sets", bad_sets},          {"wave_sets", bad_sets_negative}, {"wave_sets", bad_sets_one},
        {"wave_overlap", bad_overlap},
        {"zstd_rows", bad_rows},          {"zstd_huf_probe", bad_probe_low}, {"zstd_huf_probe", bad_probe_high},
        {"inflate_parts", bad_parts},     {"zstd_encoder", bad_encoder},     {"zstd_encoder", bad_encoder_negative},
        {"struct_size", bad_size_small},  {"struct_size", bad_size_zero},   {"struct_size", bad_size_large},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        zgpu_tuning t, got;
        zgpu_tuning_init(&t);
        cases[i].spoil(&t);
        const zgpu_status s = create_with(&t, &got);
        const char *msg = zgpu_last_error();
        CHECK_MSG(s == ZGPU_ERR_INVALID_ARGUMENT, "case %zu (%s): %s", i, cases[i].field, zgpu_status_name(s));
        CHECK_MSG(msg && strstr(msg, cases[i].field) != NULL, "case %zu: message \"%s\" does not name %s", i,
                  msg ? msg : "(null)", cases[i].field);
        CHECK_MSG(msg && strstr(msg, "zgpu_tuning") != NULL, "case %zu: message \"%s\" does not name zgpu_tuning", i,
                  msg ? msg : "(null)");
    }
    /* the same struct made valid again is accepted (nothing of the failure stays behind) */
    zgpu_tuning t, got;
    zgpu_tuning_init(&t);
    t.pipeline_waves = 3;
    CHECK_OK(create_with(&t, &got));
    CHECK_EQ_U64(got.pipeline_waves, 3);
}

/* An older caller's struct ends earlier: zgpu reads only struct_size bytes, the rest keep their defaults. */
static void test_older_struct(void) {
    zgpu_tuning t, got, def;
    zgpu_tuning_init(&def);
    fill_valid(&t);
    t.struct_size = offsetof(zgpu_tuning, copy_slab_bytes); /* before copy_slab_bytes was added */
    CHECK_OK(create_with(&t, &got));
    CHECK_EQ_U64(got.struct_size, sizeof got);
    CHECK_EQ_U64(got.copy_slab_bytes, 0);
    CHECK_EQ_U64(got.pipeline_waves, 64);
    CHECK_EQ_U64(got.profile, 1);
    CHECK(got.zstd_decoder == ZGPU_DECODER_HOST);
    CHECK(got.zstd_encoder == ZGPU_DECODER_AUTO);

    fill_valid(&t);
    t.zstd_encoder = (zgpu_decoder_choice)99; /* past the end: not read */
    t.struct_size = offsetof(zgpu_tuning, zstd_encoder); /* before zstd_encoder was added */
    CHECK_OK(create_with(&t, &got));
    CHECK_EQ_U64(got.struct_size, sizeof got);
    CHECK(got.zstd_encoder == ZGPU_DECODER_AUTO);
    CHECK_EQ_U64(got.copy_slab_bytes, (size_t)3 << 20);
    CHECK(got.zstd_decoder == ZGPU_DECODER_HOST);

    fill_valid(&t);
    t.struct_size = offsetof(zgpu_tuning, write_wave_bytes); /* before write_wave_bytes was added */
    CHECK_OK(create_with(&t, &got));
    CHECK_EQ_U64(got.write_wave_bytes, 0);
    CHECK(got.zstd_encoder == ZGPU_DECODER_NVCOMP);

    fill_valid(&t);
    t.struct_size = offsetof(zgpu_tuning, pipeline_waves); /* only the decoders */
    CHECK_OK(create_with(&t, &got));
    CHECK(got.zstd_decoder == ZGPU_DECODER_HOST && got.deflate_decoder == ZGPU_DECODER_NVCOMP &&
          got.lz4_decoder == ZGPU_DECODER_ZGPU);
    CHECK_EQ_U64(got.pipeline_waves, 0);
    CHECK_EQ_U64(got.n_wave_shape, 0);
    CHECK(got.zstd_huf_probe == -1);
    CHECK_EQ_U64(got.trace, 0);

    /* the smallest struct zgpu takes (struct_size alone): every field its default. Fields past the end hold
     * invalid values, which must not be read. */
    memset(&t, 0xff, sizeof t);
    t.struct_size = offsetof(zgpu_tuning, zstd_decoder);
    CHECK_OK(create_with(&t, &got));
    CHECK(same_tuning(&got, &def));

    /* options from before zgpu_context_options.tuning existed: a pointer after their end is not followed */
    zgpu_tuning bad;
    zgpu_tuning_init(&bad);
    bad.pipeline_waves = -1;
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.struct_size = offsetof(zgpu_context_options, tuning);
    o.num_threads = 1;
    o.tuning = &bad;
    zgpu_context *ctx = NULL;
    CHECK_OK(zgpu_context_create(&o, &ctx));
    if (ctx) {
        zgpu_context_tuning(ctx, &got);
        CHECK(same_tuning(&got, &def));
        zgpu_context_free(ctx);
    }
}

int main(void) {
    for (size_t i = 0; i < sizeof TUNING_ENV / sizeof *TUNING_ENV; i++) {
        const char *v = getenv(TUNING_ENV[i]);
        if (v && *v) {
            printf("skipped: %s is set; it overrides the tuning of every context this test makes\n", TUNING_ENV[i]);
            return 77;
        }
    }
    test_defaults();
    test_round_trip_and_copy();
    test_invalid();
    test_older_struct();
    TEST_MAIN_END();
}
