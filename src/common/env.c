/* The environment, read once (see env.h). A value that does not parse is ignored, with one line on stderr:
 * an experiment whose variable is silently dropped would measure the default and say otherwise. */
#include "common/env.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* What the environment said: each field valid only where its `has_` flag is set. */
static struct {
    pthread_once_t once;
    zgpu_tuning t;
    int has_zstd, has_deflate, has_lz4, has_waves, has_shape, has_sets, has_overlap, has_rows, has_probe, has_parts,
        has_trace, has_profile, has_slab, has_route, has_partial, has_split, has_zstd_enc, has_write_wave,
        has_host_route, has_spin;
    const char *nvcomp_lib;
    char cache_dir[4096];
    int cufile_compat;
} env = {.once = PTHREAD_ONCE_INIT};

static void ignored(const char *name, const char *v, const char *why) {
    fprintf(stderr, "zgpu: ignoring %s=%s (%s)\n", name, v, why);
}

/* A decimal integer in [lo, hi]: 1 and *out set, else 0. */
static int read_int(const char *name, long lo, long hi, long *out) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < lo || x > hi) {
        ignored(name, v, "not an integer in range");
        return 0;
    }
    *out = x;
    return 1;
}

static int read_decoder(const char *name, int allow_host, zgpu_decoder_choice *out) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    if (!strcmp(v, "auto")) *out = ZGPU_DECODER_AUTO;
    else if (!strcmp(v, "zgpu")) *out = ZGPU_DECODER_ZGPU;
    else if (!strcmp(v, "nvcomp")) *out = ZGPU_DECODER_NVCOMP;
    else if (!strcmp(v, "host") && allow_host) *out = ZGPU_DECODER_HOST;
    else {
        ignored(name, v, allow_host ? "expected auto, zgpu, nvcomp or host" : "expected auto, zgpu or nvcomp");
        return 0;
    }
    return 1;
}

static int read_route(const char *name, zgpu_route *out) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    if (!strcmp(v, "auto")) *out = ZGPU_ROUTE_AUTO;
    else if (!strcmp(v, "device")) *out = ZGPU_ROUTE_DEVICE;
    else if (!strcmp(v, "host")) *out = ZGPU_ROUTE_HOST;
    else {
        ignored(name, v, "expected auto, device or host");
        return 0;
    }
    return 1;
}

/* "0" turns a default-on switch off, "1" forces it on. */
static int read_switch(const char *name, zgpu_switch *out) {
    long x;
    if (!read_int(name, 0, 1, &x)) return 0;
    *out = x ? ZGPU_SWITCH_ON : ZGPU_SWITCH_OFF;
    return 1;
}

static void load(void) {
    zgpu_tuning *t = &env.t;
    long x;
    env.has_zstd = read_decoder("ZGPU_ZSTD_DECODER", 1, &t->zstd_decoder);
    env.has_deflate = read_decoder("ZGPU_DEFLATE_DECODER", 1, &t->deflate_decoder);
    env.has_lz4 = read_decoder("ZGPU_LZ4_DECODER", 0, &t->lz4_decoder);
    env.has_zstd_enc = read_decoder("ZGPU_ZSTD_ENCODER", 1, &t->zstd_encoder);
    if ((env.has_write_wave = read_int("ZGPU_WRITE_WAVE_BYTES", 1, 1L << 40, &x))) t->write_wave_bytes = (size_t)x;
    if ((env.has_waves = read_int("ZGPU_PIPELINE_WAVES", 1, 64, &x))) t->pipeline_waves = (int)x;
    const char *shape = getenv("ZGPU_WAVE_SHAPE"); /* "a,b,c": relative wave sizes */
    if (shape && *shape) {
        int n = 0, ok = 1;
        for (const char *p = shape; *p && ok;) {
            char *end;
            long v = strtol(p, &end, 10);
            ok = end != p && v > 0 && v < 1000000 && n < ZGPU_TUNING_MAX_SHAPE && (*end == ',' || !*end);
            if (ok) t->wave_shape[n++] = (unsigned)v;
            p = *end ? end + 1 : end;
        }
        if (ok && n) {
            t->n_wave_shape = n;
            env.has_shape = 1;
        } else {
            ignored("ZGPU_WAVE_SHAPE", shape, "expected up to 16 positive integers separated by commas");
        }
    }
    if ((env.has_sets = read_int("ZGPU_WAVE_SETS", 2, 4, &x))) t->wave_sets = (int)x;
    env.has_overlap = read_switch("ZGPU_WAVE_OVERLAP", &t->wave_overlap);
    env.has_rows = read_switch("ZGPU_ZSTD_ROWS", &t->zstd_rows);
    env.has_partial = read_switch("ZGPU_PARTIAL_DECODE", &t->partial_decode);
    env.has_split = read_switch("ZGPU_SPLIT_DECODE", &t->split_decode);
    if ((env.has_spin = read_int("ZGPU_POOL_SPIN_US", -1, 1000000, &x))) t->pool_spin_us = (int)x;
    if ((env.has_probe = read_int("ZGPU_ZSTD_HUF_PROBE", 0, 4096, &x))) t->zstd_huf_probe = (int)x;
    if ((env.has_parts = read_int("ZGPU_INFLATE_PARTS", 1, 1 << 20, &x))) t->inflate_parts = (int)x;
    if ((env.has_trace = read_int("ZGPU_TRACE", 0, 1, &x))) t->trace = (int)x;
    /* ZGPU_PROFILE, or the older names of its two parts */
    if ((env.has_profile = read_int("ZGPU_PROFILE", 0, 1, &x) || read_int("ZGPU_ZSTD_PROFILE", 0, 1, &x) ||
                           read_int("ZGPU_INFLATE_TIMES", 0, 1, &x)))
        t->profile = (int)x;
    if ((env.has_slab = read_int("ZGPU_CLI_SLAB_BYTES", 1, 1L << 40, &x))) t->copy_slab_bytes = (size_t)x;
    env.has_route = read_route("ZGPU_READ_ROUTE", &t->read_route);
    env.has_host_route = read_route("ZGPU_HOST_READ_ROUTE", &t->host_read_route);
    /* zgpu's on-disk cache (kernels, route calibration): $ZGPU_CACHE_DIR, else $XDG_CACHE_HOME/zgpu, else
     * ~/.cache/zgpu; none when neither HOME nor those are set */
    const char *cd = getenv("ZGPU_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n = 0;
    if (cd && *cd) n = snprintf(env.cache_dir, sizeof env.cache_dir, "%s", cd);
    else if (xdg && *xdg) n = snprintf(env.cache_dir, sizeof env.cache_dir, "%s/zgpu", xdg);
    else if (home && *home) n = snprintf(env.cache_dir, sizeof env.cache_dir, "%s/.cache/zgpu", home);
    if (n <= 0 || (size_t)n >= sizeof env.cache_dir) env.cache_dir[0] = 0;
    const char *lib = getenv("ZGPU_NVCOMP_LIB");
    env.nvcomp_lib = lib && *lib ? lib : NULL;
    const char *compat = getenv("CUFILE_FORCE_COMPAT_MODE");
    env.cufile_compat = compat && strcmp(compat, "true") == 0;
}

void zg_env_apply_tuning(zgpu_tuning *t) {
    pthread_once(&env.once, load);
    const zgpu_tuning *e = &env.t;
    if (env.has_zstd) t->zstd_decoder = e->zstd_decoder;
    if (env.has_deflate) t->deflate_decoder = e->deflate_decoder;
    if (env.has_lz4) t->lz4_decoder = e->lz4_decoder;
    if (env.has_waves) t->pipeline_waves = e->pipeline_waves;
    if (env.has_shape) {
        memcpy(t->wave_shape, e->wave_shape, sizeof t->wave_shape);
        t->n_wave_shape = e->n_wave_shape;
    }
    if (env.has_sets) t->wave_sets = e->wave_sets;
    if (env.has_overlap) t->wave_overlap = e->wave_overlap;
    if (env.has_rows) t->zstd_rows = e->zstd_rows;
    if (env.has_probe) t->zstd_huf_probe = e->zstd_huf_probe;
    if (env.has_parts) t->inflate_parts = e->inflate_parts;
    if (env.has_trace) t->trace = e->trace;
    if (env.has_profile) t->profile = e->profile;
    if (env.has_slab) t->copy_slab_bytes = e->copy_slab_bytes;
    if (env.has_route) t->read_route = e->read_route;
    if (env.has_partial) t->partial_decode = e->partial_decode;
    if (env.has_split) t->split_decode = e->split_decode;
    if (env.has_zstd_enc) t->zstd_encoder = e->zstd_encoder;
    if (env.has_write_wave) t->write_wave_bytes = e->write_wave_bytes;
    if (env.has_host_route) t->host_read_route = e->host_read_route;
    if (env.has_spin) t->pool_spin_us = e->pool_spin_us;
}

const char *zg_env_cache_dir(void) {
    pthread_once(&env.once, load);
    return env.cache_dir[0] ? env.cache_dir : NULL;
}

const char *zg_env_nvcomp_lib(void) {
    pthread_once(&env.once, load);
    return env.nvcomp_lib;
}

int zg_env_cufile_force_compat(void) {
    pthread_once(&env.once, load);
    return env.cufile_compat;
}

const char *zg_env_remote(const char *name) {
    static const char *const allowed[] = {
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
        "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3", "AWS_NO_SIGN_REQUEST", "HOME", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_EC2_METADATA_DISABLED", "AWS_EC2_METADATA_SERVICE_ENDPOINT",
        "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME", "AWS_ENDPOINT_URL_STS"};
    for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++)
        if (strcmp(name, allowed[i]) == 0) {
            const char *v = getenv(name);
            return v && *v ? v : NULL;
        }
    return NULL;
}

int zg_env_remote_true(const char *name) {
    const char *v = zg_env_remote(name);
    return v && strcasecmp(v, "true") == 0;
}
