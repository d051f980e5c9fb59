/* Every decode is bounded by the size it must produce (issue 25, item 1): a compressor behind a filter, behind
 * another compressor or after sharding_indexed gets the exact size of what it must produce, or its codec's
 * bound, or the chain's cap. Each bomb (a valid stream of 64 MiB of zeros, made with the library's own
 * compressor) must fail with ZGPU_ERR_CORRUPT_DATA naming the codec, in a forked child whose address space
 * may grow by at most 32 MiB over what it holds before the decode; valid data at exactly the limit still
 * decodes, and the encoded_size bounds hold for what the compressors write. */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include "test.h"
#include "api/array.h"
#include "codec/chain.h"
#include "codec/sharding.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_zstd, zg_codec_gzip, zg_codec_zlib, zg_codec_bz2, zg_codec_lz4,
    zg_codec_blosc, zg_codec_numcodecs_blosc, zg_codec_shuffle, zg_codec_crc32c;

#define BOMB_BYTES ((size_t)64 << 20)
#define HEADROOM ((size_t)32 << 20) /* growth of the address space a decode may cause (bz2's ~3.6 MB state...) */


/* ---- helpers ---- */
static const uint64_t shape32[2] = {32, 32};

static zg_chain *mk_chain(const char *codecs, const uint64_t *shape) {
    zj_value *cv = NULL;
    if (zj_parse(codecs, strlen(codecs), "codecs", &cv) != ZGPU_OK) {
        fprintf(stderr, "bad test JSON: %s\n", zgpu_last_error());
        exit(2);
    }
    zg_repr r;
    memset(&r, 0, sizeof r);
    if (!zg_dtype_from_name("int32", &r.dtype)) exit(2);
    r.ndim = 2;
    r.shape[0] = shape[0];
    r.shape[1] = shape[1];
    zg_chain *ch = NULL;
    zgpu_status st = zg_chain_create(cv, &r, &ch);
    CHECK_MSG(st == ZGPU_OK, "create %s: %s", codecs, zgpu_last_error());
    zj_free(cv);
    return ch;
}

static size_t proc_status_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    size_t v = 0, klen = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') v = (size_t)strtoull(line + klen + 1, NULL, 10);
    fclose(f);
    return v;
}

/* What a child reports: the decode's status and message, and the peak of its resident set during the decode
 * over where it stood before (the address space is held by RLIMIT_AS). */
typedef struct child_result {
    int ran;
    zgpu_status st;
    long rss_kb;
    char msg[600];
} child_result;

/* Resets VmHWM to the current resident size, so the peak measured next is the decode's own. */
static void reset_peak_rss(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return;
    fputs("5", f);
    fclose(f);
}

typedef zgpu_status (*decode_fn)(const void *arg);

/* Runs fn in a child under RLIMIT_AS = its current size + HEADROOM (not under ASan, whose shadow memory
 * needs the address space). The child's own exit must be clean: a crash or an abort on a failed allocation
 * fails the test. */
static child_result run_limited(decode_fn fn, const void *arg) {
    child_result res;
    memset(&res, 0, sizeof res);
    int fd[2];
    if (pipe(fd) != 0) { perror("pipe"); exit(2); }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); exit(2); }
    if (pid == 0) {
        close(fd[0]);
        child_result r;
        memset(&r, 0, sizeof r);
        reset_peak_rss();
        size_t rss0 = proc_status_kb("VmRSS");
#ifndef ZT_ASAN
        size_t vm0 = proc_status_kb("VmSize");
        struct rlimit rl = {(rlim_t)(vm0 * 1024 + HEADROOM), (rlim_t)(vm0 * 1024 + HEADROOM)};
        if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(3);
#endif
        r.st = fn(arg);
        r.ran = 1;
        snprintf(r.msg, sizeof r.msg, "%s", r.st == ZGPU_OK ? "" : zgpu_last_error());
        r.rss_kb = (long)proc_status_kb("VmHWM") - (long)rss0;
        ssize_t w = write(fd[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 4);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], &res, sizeof res);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == (ssize_t)sizeof res,
              "child did not exit cleanly (status 0x%x)", status);
    if (got != (ssize_t)sizeof res) res.ran = 0;
    return res;
}

typedef struct chain_decode_arg {
    const zg_chain *ch;
    const uint8_t *in;
    size_t n;
} chain_decode_arg;

static zgpu_status chain_decode(const void *p) {
    const chain_decode_arg *a = p;
    size_t nbytes = (size_t)zg_repr_nbytes(&a->ch->repr);
    uint8_t *out = malloc(nbytes);
    if (!out) return zg_error(ZGPU_ERR_NO_MEMORY, "test: out of memory");
    zg_scratch s = ZG_SCRATCH_INIT;
    zgpu_status st = zg_chain_decode(a->ch, a->in, a->n, out, &s);
    zg_scratch_free(&s);
    free(out);
    return st;
}

/* The outermost codec of the chain compresses BOMB_BYTES of zeros (untouched calloc pages: no resident cost). */
static void make_bomb(const zg_chain *ch, zg_buf *out) {
    const zg_codec *c = ch->b2b[ch->n_b2b - 1];
    uint8_t *zeros = calloc(1, BOMB_BYTES);
    if (!zeros) exit(2);
    out->size = 0;
    zgpu_status st = c->vt->encode_bytes(c, zeros, BOMB_BYTES, out);
    free(zeros);
    if (st != ZGPU_OK) {
        fprintf(stderr, "compressing the bomb with %s: %s\n", c->vt->name, zgpu_last_error());
        exit(2);
    }
}

/* A zstd frame that does not record its content size (as streaming writers make them). */
static void zstd_no_size(const uint8_t *in, size_t n, zg_buf *out) {
    ZSTD_CCtx *cx = ZSTD_createCCtx();
    size_t bound = ZSTD_compressBound(n);
    out->size = 0;
    if (!cx || zg_buf_reserve(out, bound) != ZGPU_OK) exit(2);
    ZSTD_CCtx_setParameter(cx, ZSTD_c_contentSizeFlag, 0);
    ZSTD_CCtx_setParameter(cx, ZSTD_c_compressionLevel, 3);
    ZSTD_inBuffer ib = {in, n, 0};
    ZSTD_outBuffer ob = {out->data, bound, 0};
    size_t r = ZSTD_compressStream2(cx, &ob, &ib, ZSTD_e_end);
    if (ZSTD_isError(r) || r != 0) exit(2);
    out->size = ob.pos;
    ZSTD_freeCCtx(cx);
    if (ZSTD_getFrameContentSize(out->data, out->size) != ZSTD_CONTENTSIZE_UNKNOWN) {
        fprintf(stderr, "zstd frame records its size after all\n");
        exit(2);
    }
}

static void zstd_no_size_bomb(zg_buf *out) {
    uint8_t *zeros = calloc(1, BOMB_BYTES);
    if (!zeros) exit(2);
    zstd_no_size(zeros, BOMB_BYTES, out);
    free(zeros);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static void fill_random(uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        p[i] = (uint8_t)(rng >> 24);
    }
}

/* Decodes the bomb under the address-space limit: CORRUPT_DATA, the message names `codec` (as the chain
 * prefixes it), and the decode stayed within the headroom. */
static void expect_bomb_rejected(const char *what, const zg_chain *ch, const zg_buf *bomb, const char *codec) {
    chain_decode_arg arg = {ch, bomb->data, bomb->size};
    child_result r = run_limited(chain_decode, &arg);
    char named[64];
    snprintf(named, sizeof named, "codec '%s'", codec);
    CHECK_MSG(r.ran && r.st == ZGPU_ERR_CORRUPT_DATA, "%s: %zu-byte bomb -> %s: %s", what, bomb->size,
              zgpu_status_name(r.st), r.msg);
    CHECK_MSG(strstr(r.msg, named) != NULL, "%s: message does not name %s: %s", what, named, r.msg);
    CHECK_MSG((size_t)r.rss_kb * 1024 <= HEADROOM, "%s: resident set grew by %ld KiB", what, r.rss_kb);
    printf("bomb %-44s %7zu stored bytes -> %s, peak +%ld KiB resident: %s\n", what, bomb->size,
           zgpu_status_name(r.st), r.rss_kb, r.msg);
}

/* Encodes random data through the chain and decodes it back, element for element. */
static void round_trip(const char *what, const zg_chain *ch, zg_buf *enc_out) {
    size_t nbytes = (size_t)zg_repr_nbytes(&ch->repr);
    uint8_t *src = malloc(nbytes), *back = malloc(nbytes);
    fill_random(src, nbytes);
    zg_scratch s = ZG_SCRATCH_INIT;
    zg_buf enc = ZG_BUF_INIT;
    CHECK_OK(zg_chain_encode(ch, src, &enc, &s));
    memset(back, 0xA5, nbytes);
    zgpu_status st = zg_chain_decode(ch, enc.data, enc.size, back, &s);
    CHECK_MSG(st == ZGPU_OK && memcmp(src, back, nbytes) == 0, "%s: round trip -> %s: %s", what,
              zgpu_status_name(st), zgpu_last_error());
    zg_scratch_free(&s);
    if (enc_out) *enc_out = enc;
    else zg_buf_free(&enc);
    free(src);
    free(back);
}

/* ---- bombs behind filters and compressors ---- */
#define BYTES "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"
#define SHUFFLE "{\"name\": \"numcodecs.shuffle\", \"configuration\": {\"elementsize\": 4}}"
#define CRC "{\"name\": \"crc32c\"}"
#define ZSTD "{\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}"
#define GZIP "{\"name\": \"gzip\", \"configuration\": {\"level\": 1}}"
#define ZLIB "{\"name\": \"numcodecs.zlib\", \"configuration\": {\"level\": 1}}"
#define BZ2 "{\"name\": \"numcodecs.bz2\", \"configuration\": {\"level\": 1}}"
#define LZ4 "{\"name\": \"numcodecs.lz4\", \"configuration\": {\"acceleration\": 1}}"
#define BLOSC "{\"name\": \"blosc\", \"configuration\": {\"cname\": \"zstd\", \"clevel\": 1, \"shuffle\": \"shuffle\", " \
              "\"typesize\": 4, \"blocksize\": 0}}"
#define SHARD(inner) "{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [16, 16], \"codecs\": [" \
                     inner "], \"index_codecs\": [" BYTES ", " CRC "], \"index_location\": \"end\"}}"

typedef struct bomb_case {
    const char *what;
    const char *codecs;
    const char *codec; /* the outermost codec, which the message must name */
    int exact;         /* 1: the compressor's output size is exact (a filter or nothing between it and bytes) */
} bomb_case;

static const bomb_case bombs[] = {
    {"[bytes, shuffle, zstd]", "[" BYTES ", " SHUFFLE ", " ZSTD "]", "zstd", 1},
    {"[bytes, shuffle, bz2]", "[" BYTES ", " SHUFFLE ", " BZ2 "]", "numcodecs.bz2", 1},
    {"[bytes, shuffle, gzip]", "[" BYTES ", " SHUFFLE ", " GZIP "]", "gzip", 1},
    {"[bytes, shuffle, zlib]", "[" BYTES ", " SHUFFLE ", " ZLIB "]", "numcodecs.zlib", 1},
    {"[bytes, crc32c, zstd]", "[" BYTES ", " CRC ", " ZSTD "]", "zstd", 1},
    {"[bytes, shuffle, blosc]", "[" BYTES ", " SHUFFLE ", " BLOSC "]", "blosc", 1},
    {"[bytes, shuffle, lz4]", "[" BYTES ", " SHUFFLE ", " LZ4 "]", "numcodecs.lz4", 1},
    {"[bytes, gzip, zstd]", "[" BYTES ", " GZIP ", " ZSTD "]", "zstd", 0},
    {"[bytes, zlib, bz2]", "[" BYTES ", " ZLIB ", " BZ2 "]", "numcodecs.bz2", 0},
    {"[sharding[bytes], zstd]", "[" SHARD(BYTES) ", " ZSTD "]", "zstd", 0},
    {"[sharding[bytes], gzip]", "[" SHARD(BYTES) ", " GZIP "]", "gzip", 0},
    {"[sharding[bytes, zstd], gzip]", "[" SHARD(BYTES ", " ZSTD) ", " GZIP "]", "gzip", 0},
    {"[sharding[bytes, shuffle, gzip], bz2]", "[" SHARD(BYTES ", " SHUFFLE ", " GZIP) ", " BZ2 "]", "numcodecs.bz2", 0},
};

static void test_bombs(void) {
    for (size_t i = 0; i < sizeof bombs / sizeof *bombs; i++) {
        const bomb_case *bc = &bombs[i];
        zg_chain *ch = mk_chain(bc->codecs, shape32);
        if (!ch) continue;
        /* what the outermost compressor must produce: exact where only filters stand before it */
        int k = ch->n_b2b - 1;
        CHECK_MSG(ch->b2b_exact[k] == bc->exact && ch->b2b_size[k] != SIZE_MAX && ch->b2b_size[k] < ((size_t)1 << 20),
                  "%s: outer stage size %zu exact %d", bc->what, ch->b2b_size[k], ch->b2b_exact[k]);
        zg_buf bomb = ZG_BUF_INIT;
        make_bomb(ch, &bomb);
        expect_bomb_rejected(bc->what, ch, &bomb, bc->codec);
        if (strcmp(bc->codec, "zstd") == 0) { /* the same bomb without a recorded size */
            char what[128];
            snprintf(what, sizeof what, "%s, no content size", bc->what);
            zstd_no_size_bomb(&bomb);
            expect_bomb_rejected(what, ch, &bomb, "zstd");
        }
        round_trip(bc->what, ch, NULL);
        zg_buf_free(&bomb);
        zg_chain_free(ch);
    }
}

/* ---- valid data at exactly the limit ---- */
/* A shard of incompressible inner chunks stored with `bytes` is exactly as large as the sharding codec's
 * bound: the outer compressor decodes to its limit exactly, and one byte more is refused. */
static void test_shard_at_limit(void) {
    const char *outer[] = {ZSTD, GZIP, ZLIB, BZ2, LZ4, BLOSC};
    const char *names[] = {"zstd", "gzip", "numcodecs.zlib", "numcodecs.bz2", "numcodecs.lz4", "blosc"};
    for (size_t i = 0; i < sizeof outer / sizeof *outer; i++) {
        char codecs[2048];
        snprintf(codecs, sizeof codecs, "[%s, %s]", SHARD(BYTES), outer[i]);
        zg_chain *ch = mk_chain(codecs, shape32);
        if (!ch) continue;
        const size_t limit = 4 * 16 * 16 * 4 + 4 * 16 + 4; /* four full inner chunks and the index with its crc */
        CHECK_EQ_U64(ch->b2b_size[0], limit);
        CHECK(!ch->b2b_exact[0]);
        int exact = 1;
        CHECK_EQ_U64(zg_chain_encoded_size(zg_sharding_inner_chain(ch->a2b), &exact), 16 * 16 * 4);
        CHECK(exact == 1);
        zg_buf enc = ZG_BUF_INIT;
        round_trip(names[i], ch, &enc);
        /* the shard inside is exactly at the limit */
        const zg_codec *c = ch->b2b[0];
        zg_buf shard = ZG_BUF_INIT;
        CHECK_OK(c->vt->decode_bytes(c, enc.data, enc.size, &shard, ZG_OUT_ANY));
        CHECK_EQ_U64(shard.size, limit);
        /* one byte more than a shard can hold: refused by the compressor, naming it */
        CHECK_OK(zg_buf_append(&shard, "", 1));
        zg_buf big = ZG_BUF_INIT;
        CHECK_OK(c->vt->encode_bytes(c, shard.data, shard.size, &big));
        int32_t out[32 * 32];
        zg_scratch s = ZG_SCRATCH_INIT;
        CHECK_STATUS(zg_chain_decode(ch, big.data, big.size, (uint8_t *)out, &s), ZGPU_ERR_CORRUPT_DATA);
        char named[64];
        snprintf(named, sizeof named, "codec '%s'", names[i]);
        CHECK_MSG(strstr(zgpu_last_error(), named) && strstr(zgpu_last_error(), "this chunk can hold"),
                  "%s: one byte past the limit: %s", names[i], zgpu_last_error());
        if (i == 0) { /* zstd frames without a recorded size: at the limit decodes, one past it does not */
            zg_buf nosize = ZG_BUF_INIT;
            shard.size = limit;
            zstd_no_size(shard.data, shard.size, &nosize);
            int32_t back[32 * 32];
            CHECK_OK(zg_chain_decode(ch, nosize.data, nosize.size, (uint8_t *)back, &s));
            int32_t ref[32 * 32];
            CHECK_OK(zg_chain_decode(ch, enc.data, enc.size, (uint8_t *)ref, &s));
            CHECK(memcmp(back, ref, sizeof ref) == 0);
            zstd_no_size(shard.data, limit + 1, &nosize);
            CHECK_STATUS(zg_chain_decode(ch, nosize.data, nosize.size, (uint8_t *)back, &s), ZGPU_ERR_CORRUPT_DATA);
            CHECK_MSG(strstr(zgpu_last_error(), "codec 'zstd'") && strstr(zgpu_last_error(), "this chunk can hold"),
                      "zstd without content size, one byte past the limit: %s", zgpu_last_error());
            zg_buf_free(&nosize);
        }
        zg_scratch_free(&s);
        zg_buf_free(&big);
        zg_buf_free(&shard);
        zg_buf_free(&enc);
        zg_chain_free(ch);
    }
}

/* zstd frames without a recorded size behind a filter: the exact size still decodes them. */
static void test_zstd_no_size_exact(void) {
    zg_chain *ch = mk_chain("[" BYTES ", " SHUFFLE ", " ZSTD "]", shape32);
    if (!ch) return;
    uint8_t src[4096], shuffled[4096];
    fill_random(src, sizeof src);
    zg_buf sh = ZG_BUF_INIT, z = ZG_BUF_INIT;
    CHECK_OK(ch->b2b[0]->vt->encode_bytes(ch->b2b[0], src, sizeof src, &sh));
    memcpy(shuffled, sh.data, sizeof shuffled);
    zstd_no_size(shuffled, sizeof shuffled, &z);
    uint8_t back[4096];
    zg_scratch s = ZG_SCRATCH_INIT;
    CHECK_OK(zg_chain_decode(ch, z.data, z.size, back, &s));
    CHECK(memcmp(back, src, sizeof src) == 0);
    zstd_no_size(shuffled, sizeof shuffled - 4, &z); /* one element short */
    CHECK_STATUS(zg_chain_decode(ch, z.data, z.size, back, &s), ZGPU_ERR_CORRUPT_DATA);
    zg_scratch_free(&s);
    zg_buf_free(&sh);
    zg_buf_free(&z);
    zg_chain_free(ch);
}

/* ---- the bounds hold for what the compressors write ---- */
static void test_bounds_hold(void) {
    static const struct { const zg_codec_vtable *vt; const char *conf; } cs[] = {
        {&zg_codec_zstd, "{\"level\": 1}"}, {&zg_codec_zstd, "{\"level\": 19, \"checksum\": true}"},
        {&zg_codec_gzip, "{\"level\": 0}"}, {&zg_codec_gzip, "{\"level\": 9}"},
        {&zg_codec_zlib, "{\"level\": 0}"}, {&zg_codec_zlib, "{\"level\": 9}"},
        {&zg_codec_bz2, "{\"level\": 1}"}, {&zg_codec_bz2, "{\"level\": 9}"},
        {&zg_codec_lz4, "{\"acceleration\": 1}"}, {&zg_codec_lz4, "{\"acceleration\": 100}"},
        {&zg_codec_blosc, "{\"cname\": \"lz4\", \"clevel\": 9, \"shuffle\": \"noshuffle\", \"typesize\": 1, \"blocksize\": 0}"},
        {&zg_codec_blosc, "{\"cname\": \"zstd\", \"clevel\": 5, \"shuffle\": \"bitshuffle\", \"typesize\": 4, \"blocksize\": 0}"},
        {&zg_codec_shuffle, "{\"elementsize\": 1}"}, {&zg_codec_crc32c, NULL},
    };
    static const size_t sizes[] = {0, 1, 7, 1000, 4096, 65536 + 13, 1 << 20};
    uint8_t *src = malloc(1 << 20);
    fill_random(src, 1 << 20);
    zg_repr r;
    memset(&r, 0, sizeof r);
    zg_dtype_from_name("uint8", &r.dtype);
    r.ndim = 1;
    r.shape[0] = 1;
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
        zj_value *conf = NULL;
        if (cs[i].conf && zj_parse(cs[i].conf, strlen(cs[i].conf), "conf", &conf) != ZGPU_OK) exit(2);
        zg_codec *c = NULL;
        CHECK_OK(cs[i].vt->create(conf, &r, &c));
        zj_free(conf);
        if (!c) continue;
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            zg_buf enc = ZG_BUF_INIT;
            CHECK_OK(c->vt->encode_bytes(c, src, sizes[k], &enc));
            int exact = 1;
            size_t b = c->vt->encoded_size(c, sizes[k], &exact);
            int filter = cs[i].vt == &zg_codec_shuffle || cs[i].vt == &zg_codec_crc32c;
            CHECK_MSG(filter ? (exact && b == enc.size) : (!exact && enc.size <= b),
                      "%s %s, %zu bytes: wrote %zu, encoded_size %zu (exact %d)", c->vt->name,
                      cs[i].conf ? cs[i].conf : "", sizes[k], enc.size, b, exact);
            zg_buf_free(&enc);
        }
        c->vt->destroy(c);
    }
    free(src);
}

/* ---- the cap, where no bound is known ---- */
/* A filter without an encoded_size entry (as a future codec might be): the compressor behind it has no size
 * to go by, so the chain's cap limits it. */
static zg_codec_vtable nobound;

static void test_cap(void) {
    nobound = zg_codec_shuffle;
    nobound.name = "test.nobound";
    nobound.encoded_size = NULL;
    zg_chain *ch = mk_chain("[" BYTES ", " SHUFFLE ", " ZSTD "]", shape32);
    if (!ch) return;
    ch->b2b[0]->vt = &nobound;
    zg_chain_update_sizes(ch);
    CHECK(ch->b2b_exact[0] == 1 && ch->b2b_size[0] == 4096); /* the filter itself still knows its size */
    CHECK(ch->b2b_size[1] == SIZE_MAX && !ch->b2b_exact[1]);
    int exact = 1;
    CHECK(zg_chain_encoded_size(ch, &exact) == SIZE_MAX && exact == 0);
    CHECK_EQ_U64(zg_chain_decode_cap(ch), (uint64_t)1 << 20); /* 4 x 4 KiB is below the 1 MiB floor */

    zg_buf bomb = ZG_BUF_INIT;
    make_bomb(ch, &bomb);
    expect_bomb_rejected("[bytes, nobound, zstd], default cap", ch, &bomb, "zstd");
    zstd_no_size_bomb(&bomb);
    expect_bomb_rejected("[bytes, nobound, zstd], default cap, no size", ch, &bomb, "zstd");

    /* valid data: 4096 bytes decode under a cap of 4096, not under 4095 */
    uint8_t src[4096], back[4096];
    fill_random(src, sizeof src);
    zg_scratch s = ZG_SCRATCH_INIT;
    zg_buf enc = ZG_BUF_INIT, nosize = ZG_BUF_INIT;
    CHECK_OK(zg_chain_encode(ch, src, &enc, &s));
    zg_buf sh = ZG_BUF_INIT;
    CHECK_OK(zg_codec_shuffle.encode_bytes(ch->b2b[0], src, sizeof src, &sh));
    zstd_no_size(sh.data, sh.size, &nosize);
    const zg_buf *streams[2] = {&enc, &nosize};
    for (int v = 0; v < 2; v++) {
        zg_chain_set_decode_cap(ch, 4096);
        CHECK_EQ_U64(zg_chain_decode_cap(ch), 4096);
        CHECK_OK(zg_chain_decode(ch, streams[v]->data, streams[v]->size, back, &s));
        CHECK(memcmp(back, src, sizeof src) == 0);
        zg_chain_set_decode_cap(ch, 4095);
        CHECK_STATUS(zg_chain_decode(ch, streams[v]->data, streams[v]->size, back, &s), ZGPU_ERR_CORRUPT_DATA);
        CHECK_MSG(strstr(zgpu_last_error(), "codec 'zstd'") && strstr(zgpu_last_error(), "4095 bytes"),
                  "cap 4095: %s", zgpu_last_error());
        zg_chain_set_decode_cap(ch, 0);
        CHECK_EQ_U64(zg_chain_decode_cap(ch), (uint64_t)1 << 20);
        CHECK_OK(zg_chain_decode(ch, streams[v]->data, streams[v]->size, back, &s));
    }
    /* a bound, where known, is what limits: the cap does not apply to stages with one */
    ch->b2b[0]->vt = &zg_codec_shuffle;
    zg_chain_update_sizes(ch);
    zg_chain_set_decode_cap(ch, 100);
    CHECK_OK(zg_chain_decode(ch, enc.data, enc.size, back, &s));
    CHECK(memcmp(back, src, sizeof src) == 0);
    zg_scratch_free(&s);
    zg_buf_free(&enc);
    zg_buf_free(&nosize);
    zg_buf_free(&sh);
    zg_buf_free(&bomb);
    zg_chain_free(ch);

    /* sharding hands the cap to its inner and index chains; their default is 4x the inner chunk (1 MiB floor) */
    const uint64_t big[2] = {1024, 1024};
    ch = mk_chain("[" SHARD(BYTES ", " ZSTD) "]", big);
    if (!ch) return;
    const zg_chain *inner = zg_sharding_inner_chain(ch->a2b);
    CHECK_EQ_U64(zg_chain_decode_cap(ch), (uint64_t)16 << 20);
    CHECK_EQ_U64(zg_chain_decode_cap(inner), (uint64_t)1 << 20);
    zg_chain_set_decode_cap(ch, 12345);
    CHECK_EQ_U64(zg_chain_decode_cap(ch), 12345);
    CHECK_EQ_U64(zg_chain_decode_cap(inner), 12345);
    zg_chain_free(ch);
}

/* ---- through the public API: an array on disk with a bomb as its chunk ---- */
typedef struct array_arg {
    const char *dir;
    size_t cap;
} array_arg;

static zgpu_status read_array(const void *p) {
    const array_arg *a = p;
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.num_threads = 1; /* no pool threads: the child of a fork has only the calling one */
    o.max_decoded_chunk_bytes = a->cap;
    zgpu_context *ctx = NULL;
    zgpu_status st = zgpu_context_create(&o, &ctx);
    zgpu_array *arr = NULL;
    if (st == ZGPU_OK) st = zgpu_array_open(ctx, a->dir, &arr);
    if (st == ZGPU_OK && zg_chain_decode_cap(arr->chain) != (a->cap ? a->cap : (size_t)1 << 20))
        st = zg_error(ZGPU_ERR_INTERNAL, "test: the context's cap did not reach the chain");
    static int32_t out[32 * 32];
    const uint64_t start[2] = {0, 0}, count[2] = {32, 32};
    if (st == ZGPU_OK) st = zgpu_array_read(arr, start, count, out, NULL);
    zgpu_array_close(arr);
    zgpu_context_free(ctx);
    return st;
}

static void test_array(void) {
    static const struct { const char *codecs; const char *codec; } cases[] = {
        {"[" BYTES ", " SHUFFLE ", " ZSTD "]", "zstd"},
        {"[" BYTES ", " SHUFFLE ", " BZ2 "]", "numcodecs.bz2"},
        {"[" SHARD(BYTES) ", " GZIP "]", "gzip"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char tmp[] = "/tmp/zgpu-bounds-XXXXXX";
        if (!mkdtemp(tmp)) { perror("mkdtemp"); exit(2); }
        char dir[64];
        snprintf(dir, sizeof dir, "%s/a", tmp);
        char doc[4096];
        snprintf(doc, sizeof doc,
                 "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[32,32],\"data_type\":\"int32\","
                 "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[32,32]}},"
                 "\"chunk_key_encoding\":{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}},"
                 "\"fill_value\":0,\"codecs\":%s}",
                 cases[i].codecs);
        zgpu_context *ctx = NULL;
        zgpu_array *a = NULL;
        CHECK_OK(zgpu_context_create(NULL, &ctx));
        CHECK_OK(zgpu_array_create(ctx, dir, doc, 0, &a));
        zg_buf bomb = ZG_BUF_INIT;
        if (a) make_bomb(a->chain, &bomb);
        zgpu_array_close(a);
        zgpu_context_free(ctx);
        char path[256];
        snprintf(path, sizeof path, "%s/c", dir);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/c/0", dir);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/c/0/0", dir);
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(bomb.data, 1, bomb.size, f) == bomb.size);
        if (f) fclose(f);
        const size_t caps[2] = {0, 3 << 20};
        for (int c = 0; c < 2; c++) {
            array_arg arg = {dir, caps[c]};
            child_result r = run_limited(read_array, &arg);
            char named[64];
            snprintf(named, sizeof named, "codec '%s'", cases[i].codec);
            CHECK_MSG(r.ran && r.st == ZGPU_ERR_CORRUPT_DATA && strstr(r.msg, named) && strstr(r.msg, "c/0/0"),
                      "array %s: -> %s: %s", cases[i].codecs, zgpu_status_name(r.st), r.msg);
            CHECK_MSG((size_t)r.rss_kb * 1024 <= HEADROOM, "array: resident set grew by %ld KiB", r.rss_kb);
            if (c == 0)
                printf("array %-45s %7zu stored bytes -> %s, peak +%ld KiB resident: %s\n", cases[i].codec,
                       bomb.size, zgpu_status_name(r.st), r.rss_kb, r.msg);
        }
        zg_buf_free(&bomb);
        unlink(path);
        snprintf(path, sizeof path, "%s/c/0", dir);
        rmdir(path);
        snprintf(path, sizeof path, "%s/c", dir);
        rmdir(path);
        snprintf(path, sizeof path, "%s/zarr.json", dir);
        unlink(path);
        rmdir(dir);
        rmdir(tmp);
    }
}

int main(void) {
    test_bounds_hold();
    test_zstd_no_size_exact();
    test_shard_at_limit();
    test_cap();
    test_bombs();
    test_array();
    TEST_MAIN_END();
}
