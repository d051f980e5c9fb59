/* Hostile chunks through device reads (issue 25, item 9): damaged chunks (bit flips, header bytes, each blosc
 * header field, truncations, bytes past the end, stored checksums) of blosc (lz4, zstd, zlib, blosclz) plain and
 * inside shards, zlib, gzip, zstd with and without its content checksum and crc32c, each read on the host
 * (zgpu_array_read into host memory) and on the device (zgpu_array_read_device into device memory). Where the
 * host read fails, the device read must fail with the same status (ZGPU_ERR_CORRUPT_DATA) and a message naming the
 * chunk and the codec; where the host read succeeds, the device read must too, with the same bytes. Two
 * exceptions, both damage the format forbids and the host's library lets through, to other bytes than were written:
 * - an LZ4 match offset of 0, which the LZ4 format forbids and the GPU rejects, while liblz4 copies bytes not yet
 *   written (test_blosc_parse.c counts those);
 * - a zstd Huffman literals stream not read exactly to its first bit: RFC 8878 4.2.2 ("If a bitstream is not
 *   entirely and exactly consumed, hence reaching exactly its beginning position with all bits consumed, the
 *   decoding process is considered faulty"). zgpu's decoder rejects it (ZG_ZD_E_LITERALS); libzstd 1.5's fast
 *   4-stream Huffman decoder does not check it, so a bit flip that changes one code's length decodes there (in
 *   set-up "zstd", no checksum: 8 of the 48 flips; test_zstd_decode.c rebuilds them). Accepted only where the
 *   device names that check and zgpu's CPU model of the GPU decoder (zstd_cpu_ref.h) rejects the chunk's zstd
 *   frame for it too.
 * Without a GPU the arrays are written and every damaged chunk read on the host (the damage must make the host
 * fail where it should: stored checksums changed, bytes past blosc's cbytes), then the test reports skipped. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "zgpu.h"
#include "zgpu_experimental.h"
#include "codec/crc32c.h"
#include "gpucodec/blosc/blosc_parse.h"
#include "gpucodec/zstd/zstd_plan.h"
#include "zstd_cpu_ref.h"

#ifdef ZGPU_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#define SIDE 64 /* arrays of SIDE x SIDE uint32: one chunk, or one shard of 2 x 2 inner chunks */
#define NBYTES (SIDE * SIDE * 4)

static char tmpdir[256];
static int gpu;
static uint32_t rng = 2025;
static uint32_t rnd(void) {
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

typedef struct setup {
    const char *name;
    const char *codecs; /* the v3 codecs (or, v2: the compressor object) */
    int v2, sharded, blosc, on_gpu; /* on_gpu: undamaged chunks must decode on the GPU (zgpu's own decoders) */
    const char *key;    /* the chunk (or shard) file */
} setup;

#define BYTES "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"
#define BLOSC(cname, shuffle, bs)                                                                                   \
    "{\"name\": \"blosc\", \"configuration\": {\"cname\": \"" cname "\", \"clevel\": 5, \"shuffle\": \"" shuffle        \
    "\", \"typesize\": 4, \"blocksize\": " bs "}}"
#define SHARD(inner)                                                                                                \
    "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [32, 32], \"codecs\": [" BYTES ", " inner \
    "], \"index_codecs\": [" BYTES ", {\"name\": \"crc32c\"}], \"index_location\": \"end\"}}]"

static const setup setups[] = {
    {"blosc_lz4", "[" BYTES ", " BLOSC("lz4", "shuffle", "4096") "]", 0, 0, 1, 1, "c/0/0"},
    {"blosc_lz4_bitshuffle", "[" BYTES ", " BLOSC("lz4", "bitshuffle", "0") "]", 0, 0, 1, 1, "c/0/0"},
    {"blosc_zstd", "[" BYTES ", " BLOSC("zstd", "shuffle", "4096") "]", 0, 0, 1, 1, "c/0/0"},
    {"blosc_zlib", "[" BYTES ", " BLOSC("zlib", "shuffle", "4096") "]", 0, 0, 1, 1, "c/0/0"},
    {"blosc_zlib_noshuffle", "[" BYTES ", " BLOSC("zlib", "noshuffle", "0") "]", 0, 0, 1, 1, "c/0/0"},
    {"blosc_blosclz", "[" BYTES ", " BLOSC("blosclz", "shuffle", "0") "]", 0, 0, 1, 0, "c/0/0"},
    {"shard_blosc_lz4", SHARD(BLOSC("lz4", "shuffle", "0")), 0, 1, 1, 1, "c/0/0"},
    {"shard_blosc_zlib", SHARD(BLOSC("zlib", "shuffle", "0")), 0, 1, 1, 1, "c/0/0"},
    {"shard_blosc_zstd", SHARD(BLOSC("zstd", "bitshuffle", "0")), 0, 1, 1, 1, "c/0/0"},
    {"gzip", "[" BYTES ", {\"name\": \"gzip\", \"configuration\": {\"level\": 5}}]", 0, 0, 0, 1, "c/0/0"},
    {"zstd_checksum", "[" BYTES ", {\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": true}}]", 0, 0, 0, 1, "c/0/0"},
    {"zstd", "[" BYTES ", {\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}]", 0, 0, 0, 1, "c/0/0"},
    {"shard_zstd_checksum", SHARD("{\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": true}}"), 0, 1, 0, 1, "c/0/0"},
    {"crc32c", "[" BYTES ", {\"name\": \"crc32c\"}]", 0, 0, 0, 1, "c/0/0"},
    {"v2_zlib", "{\"id\": \"zlib\", \"level\": 4}", 1, 0, 0, 1, "0.0"},
    {"v2_blosc_zlib", "{\"id\": \"blosc\", \"cname\": \"zlib\", \"clevel\": 5, \"shuffle\": 1, \"blocksize\": 0}", 1, 0, 1, 1, "0.0"},
};
#define N_SETUPS (sizeof setups / sizeof setups[0])

static void metadata(const setup *s, char *out, size_t n) {
    if (s->v2)
        snprintf(out, n,
                 "{\"zarr_format\": 2, \"shape\": [%d, %d], \"chunks\": [%d, %d], \"dtype\": \"<u4\", \"fill_value\": 0, "
                 "\"order\": \"C\", \"filters\": null, \"compressor\": %s}",
                 SIDE, SIDE, SIDE, SIDE, s->codecs);
    else
        snprintf(out, n,
                 "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [%d, %d], \"data_type\": \"uint32\", "
                 "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [%d, %d]}}, "
                 "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, "
                 "\"fill_value\": 0, \"codecs\": %s}",
                 SIDE, SIDE, SIDE, SIDE, s->codecs);
}

/* ---- files ---- */
static uint8_t *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long m = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)m + 1);
    if (fread(p, 1, (size_t)m, f) != (size_t)m) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *n = (size_t)m;
    return p;
}
static void write_file(const char *path, const uint8_t *p, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(p, 1, n, f) == n);
    fclose(f);
}
static uint64_t le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--) v = v << 8 | p[k];
    return v;
}
static void put_le(uint8_t *p, uint64_t v, int bytes) {
    for (int k = 0; k < bytes; k++) p[k] = (uint8_t)(v >> (8 * k));
}

/* A shard of 4 inner chunks (index at the end: 4 x {offset, nbytes} u64le, then their crc32c): the bytes of
 * inner chunk 0, and the shard rebuilt with inner chunk 0 replaced (the index and its checksum made to match, so
 * that only the inner chunk is damaged). */
static const uint8_t *shard_inner0(const uint8_t *shard, size_t n, size_t *len) {
    const uint8_t *ix = shard + n - 68;
    *len = (size_t)le64(ix + 8);
    return shard + le64(ix);
}
static uint8_t *shard_with(const uint8_t *shard, size_t n, const uint8_t *inner0, size_t len0, size_t *out_n) {
    const uint8_t *ix = shard + n - 68;
    uint8_t *o = malloc(n + len0 + 68), idx[68];
    size_t pos = 0;
    for (int k = 0; k < 4; k++) {
        const uint8_t *p = k == 0 ? inner0 : shard + le64(ix + 16 * k);
        const size_t m = k == 0 ? len0 : (size_t)le64(ix + 16 * k + 8);
        memcpy(o + pos, p, m);
        put_le(idx + 16 * k, pos, 8);
        put_le(idx + 16 * k + 8, m, 8);
        pos += m;
    }
    put_le(idx + 64, zg_crc32c(0, idx, 64), 4);
    memcpy(o + pos, idx, 68);
    *out_n = pos + 68;
    return o;
}

/* ---- one damaged chunk through both paths ---- */
typedef struct tally {
    int cases, host_fail, dev_fail, gpu_decoded, offset0, huf_loose;
} tally;

/* The error of zgpu's CPU model of its GPU zstd decoder on the zstd frame p[0, n) of `size` decoded bytes (-1: the
 * host's plan rejects it). */
static int zstd_model_err(const uint8_t *p, size_t n, size_t size) {
    zg_zd_plan pl;
    zg_zd_plan_init(&pl);
    int err = -1;
    uint8_t *out = malloc(size + 1);
    if (zg_zd_plan_frame(&pl, p, n, size, 0) == ZGPU_OK) zc_cpu_run(&pl, p, &out, &err);
    free(out);
    zg_zd_plan_free(&pl);
    return err;
}

/* Whether the CPU model rejects a zstd frame of the (damaged) chunk because a Huffman literals stream is not read
 * exactly to its first bit: the chunk itself for the zstd codec, each zstd stream of a blosc chunk. */
static int huf_stream_loose(const setup *s, const uint8_t *chunk, size_t n) {
    const size_t size = NBYTES / (s->sharded ? 4 : 1);
    if (!s->blosc)
        return strstr(s->codecs, "\"zstd\"") != NULL && zstd_model_err(chunk, n, size) == ZG_ZD_E_LITERALS;
    zg_blosc_header h;
    zg_blosc_stream st[64];
    size_t ns = 0;
    if (zg_blosc_parse_header(chunk, n, size, &h) != ZGPU_OK || h.compformat != ZG_BLOSC_ZSTD ||
        zg_blosc_streams(chunk, n, &h, st, 64, &ns) != ZGPU_OK)
        return 0;
    for (size_t k = 0; k < ns; k++)
        if (!st[k].raw && zstd_model_err(chunk + st[k].src_off, st[k].src_len, st[k].dst_len) == ZG_ZD_E_LITERALS)
            return 1;
    return 0;
}

#ifdef ZGPU_HAVE_CUDA
static zgpu_status dev_read(zgpu_array *a, uint8_t *host, zgpu_read_stats *st) {
    void *d = NULL;
    if (cudaMalloc(&d, NBYTES) != cudaSuccess) return ZGPU_ERR_NO_MEMORY;
    cudaMemset(d, 0xcd, NBYTES);
    const uint64_t z[2] = {0, 0}, c[2] = {SIDE, SIDE};
    zgpu_status s = zgpu_array_read_device(a, z, c, d, NULL, NULL);
    cudaMemcpy(host, d, NBYTES, cudaMemcpyDeviceToHost);
    cudaFree(d);
    memset(st, 0, sizeof *st);
    st->struct_size = sizeof *st;
    zgpu_array_last_read_stats(a, st);
    return s;
}
#endif

/* `chunk` (n bytes) stored as the setup's chunk (or inner chunk 0 of its shard), read both ways. */
static void try_chunk(zgpu_context *ctx, const setup *s, const char *path, const char *file, const uint8_t *orig,
                      size_t orig_n, const uint8_t *chunk, size_t n, const char *what, tally *t) {
    size_t fn = n;
    uint8_t *shard = s->sharded ? shard_with(orig, orig_n, chunk, n, &fn) : NULL;
    write_file(file, shard ? shard : chunk, fn);
    free(shard);
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_open(ctx, path, &a));
    if (!a) return;
    uint8_t *ref = malloc(NBYTES), *got = malloc(NBYTES);
    const uint64_t z[2] = {0, 0}, c[2] = {SIDE, SIDE};
    const zgpu_status hs = zgpu_array_read(a, z, c, ref, NULL);
    char hmsg[600];
    snprintf(hmsg, sizeof hmsg, "%s", hs == ZGPU_OK ? "" : zgpu_last_error());
    t->cases++;
    t->host_fail += hs != ZGPU_OK;
    const int loose = hs == ZGPU_OK && huf_stream_loose(s, chunk, n); /* the device must reject it (see the top) */
    t->huf_loose += loose;
    if (hs != ZGPU_OK)
        CHECK_MSG(hs == ZGPU_ERR_CORRUPT_DATA && strstr(hmsg, s->key) != NULL, "%s, %s: host read: %s: %s", s->name,
                  what, zgpu_status_name(hs), hmsg);
#ifdef ZGPU_HAVE_CUDA
    if (gpu) {
        zgpu_read_stats st;
        const zgpu_status ds = dev_read(a, got, &st);
        const char *dmsg = ds == ZGPU_OK ? "" : zgpu_last_error();
        t->dev_fail += ds != ZGPU_OK;
        t->gpu_decoded += ds == ZGPU_OK && st.gpu_decoded > 0;
        const int offset0 = ds == ZGPU_ERR_CORRUPT_DATA && strstr(dmsg, "match offset 0") != NULL;
        if (hs != ZGPU_OK) {
            CHECK_MSG(ds == hs && strstr(dmsg, s->key) != NULL && strstr(dmsg, "codec '") != NULL,
                      "%s, %s: the host fails (%s) but the device read gives %s: %s", s->name, what, hmsg,
                      zgpu_status_name(ds), dmsg);
        } else if (offset0) { /* the GPU holds LZ4 to its format where liblz4 does not (see the top) */
            t->offset0++;
        } else if (loose) { /* RFC 8878 4.2.2: a Huffman stream must be read exactly (see the top) */
            CHECK_MSG(ds == ZGPU_ERR_CORRUPT_DATA && strstr(dmsg, zg_zd_error_text(ZG_ZD_E_LITERALS)) != NULL &&
                          strstr(dmsg, s->key) != NULL,
                      "%s, %s: a Huffman stream not read exactly, which zgpu's zstd rules reject: the device read %s",
                      s->name, what, ds == ZGPU_OK ? "decodes it" : dmsg);
        } else {
            CHECK_MSG(ds == ZGPU_OK && memcmp(ref, got, NBYTES) == 0, "%s, %s: the host decodes it, the device read %s",
                      s->name, what, ds == ZGPU_OK ? "differs" : dmsg);
        }
    }
#else
    (void)got;
#endif
    free(ref);
    free(got);
    zgpu_array_close(a);
}

/* Every damage of one setup's chunk; trailer_only: only its last bytes (a stored checksum) changed, the stream
 * itself intact (for nVIDIA's decoders, which assume valid input). */
static void run_setup(zgpu_context *ctx, const setup *s, int trailer_only) {
    char path[400], file[600], meta[2048], what[160];
    snprintf(path, sizeof path, "%s/%s", tmpdir, s->name);
    snprintf(file, sizeof file, "%s/%s", path, s->key);
    metadata(s, meta, sizeof meta);
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_create(ctx, path, meta, ZGPU_CREATE_OVERWRITE, &a));
    if (!a) return;
    uint32_t *data = malloc(NBYTES);
    for (size_t i = 0; i < SIDE * SIDE; i++) data[i] = (uint32_t)(i / 7 * 3 + (rnd() & 7)); /* ramps with noise */
    const uint64_t z[2] = {0, 0}, c[2] = {SIDE, SIDE};
    CHECK_OK(zgpu_array_write(a, z, c, data, NULL));
    zgpu_array_close(a);
    size_t orig_n = 0;
    uint8_t *orig = read_file(file, &orig_n);
    CHECK_MSG(orig != NULL, "%s: no chunk file %s", s->name, file);
    if (!orig) {
        free(data);
        return;
    }
    size_t n = orig_n;
    const uint8_t *chunk = s->sharded ? shard_inner0(orig, orig_n, &n) : orig;
    uint8_t *d = malloc(n + 64);
    tally t = {0};
#define TRY(...)                                                                                                   \
    do {                                                                                                           \
        snprintf(what, sizeof what, __VA_ARGS__);                                                                  \
        try_chunk(ctx, s, path, file, orig, orig_n, d, dn, what, &t);                                             \
    } while (0)
    size_t dn = n;
    memcpy(d, chunk, n);
    TRY("undamaged");
    CHECK_MSG(t.host_fail == 0 && (!gpu || !s->on_gpu || t.gpu_decoded == 1),
              "%s: the undamaged chunk: host fails %d, GPU-decoded %d", s->name, t.host_fail, t.gpu_decoded);
    for (int k = 0; k < 48 && !trailer_only; k++) { /* bit flips spread over the chunk */
        const size_t at = (size_t)k * (n - 1) / 47;
        memcpy(d, chunk, n);
        d[at] ^= (uint8_t)(1u << (k % 8));
        TRY("bit %d of byte %zu flipped", k % 8, at);
    }
    for (size_t i = 0; i < 16 && i < n && !trailer_only; i++) /* header bytes */
        for (int v = 0; v < 3; v++) {
            memcpy(d, chunk, n);
            d[i] ^= v == 0 ? 0x01 : v == 1 ? 0x80 : 0xff;
            TRY("byte %zu xor 0x%02x", i, v == 0 ? 0x01 : v == 1 ? 0x80 : 0xff);
        }
    const size_t cuts[] = {n - 1, n - 4, n / 2, 1};
    for (size_t k = 0; k < sizeof cuts / sizeof *cuts && !trailer_only; k++) {
        memcpy(d, chunk, n);
        dn = cuts[k];
        TRY("truncated to %zu of %zu bytes", dn, n);
    }
    for (size_t extra = 1; extra <= 8 && !trailer_only; extra += 7) { /* bytes past the end (blosc: past cbytes) */
        memcpy(d, chunk, n);
        memset(d + n, 0xa5, extra);
        dn = n + extra;
        TRY("%zu bytes past the end", extra);
    }
    dn = n;
    for (size_t back = 1; back <= (trailer_only ? 4u : 8u) && back <= n; back++) { /* trailers: checksums, ISIZE */
        memcpy(d, chunk, n);
        d[n - back] ^= 0x10;
        TRY("byte %zu from the end changed", back);
    }
    if (s->blosc && !trailer_only) { /* each header field c-blosc checks, and each stream's last bytes (zlib: its Adler-32) */
        const struct {
            const char *what;
            size_t at;
            uint32_t value;
            int width;
        } fields[] = {
            {"version 1", 0, 1, 1},
            {"compressor version 2", 1, 2, 1},
            {"reserved flag", 2, chunk[2] | 0x08u, 1},
            {"plain-copy flag", 2, chunk[2] ^ 0x02u, 1},
            {"split flag", 2, chunk[2] ^ 0x10u, 1},
            {"compressor code", 2, (chunk[2] & 0x1fu) | 5u << 5, 1},
            {"typesize 0", 3, 0, 1},
            {"typesize 8", 3, 8, 1},
            {"nbytes + 4", 4, NBYTES / (s->sharded ? 4 : 1) + 4, 4},
            {"blocksize nbytes + 1", 8, NBYTES / (s->sharded ? 4 : 1) + 1, 4},
            {"blocksize 1", 8, 1, 4},
            {"cbytes - 1", 12, (uint32_t)n - 1, 4},
            {"cbytes + 1", 12, (uint32_t)n + 1, 4},
        };
        for (size_t k = 0; k < sizeof fields / sizeof *fields; k++) {
            memcpy(d, chunk, n);
            put_le(d + fields[k].at, fields[k].value, fields[k].width);
            TRY("blosc header: %s", fields[k].what);
        }
        memcpy(d, chunk, n); /* bytes past cbytes that cbytes counts */
        memset(d + n, 0, 4);
        put_le(d + 12, n + 4, 4);
        dn = n + 4;
        TRY("blosc: 4 bytes past the streams, counted in cbytes");
        dn = n;
        zg_blosc_header h;
        zg_blosc_stream st[64];
        size_t ns = 0;
        CHECK_OK(zg_blosc_parse_header(chunk, n, SIZE_MAX, &h));
        if (zg_blosc_streams(chunk, n, &h, st, 64, &ns) == ZGPU_OK)
            for (size_t k = 0; k < ns; k++)
                for (uint32_t back = 1; back <= 5; back += 4) {
                    if (st[k].raw || st[k].src_len < back) continue;
                    memcpy(d, chunk, n);
                    d[st[k].src_off + st[k].src_len - back] ^= 0x04;
                    TRY("blosc stream %zu: byte %u from its end changed", k, back);
                }
    }
#undef TRY
    write_file(file, orig, orig_n);
    printf("%-22s %4d damaged chunks: host fails %4d, device fails %4d, GPU-decoded %4d%s", s->name, t.cases,
           t.host_fail, t.dev_fail, t.gpu_decoded, t.offset0 ? " (LZ4 match offsets 0 rejected on the GPU)" : "");
    if (t.huf_loose) printf(" (%d decoded on the host with a Huffman stream not read exactly)", t.huf_loose);
    printf("\n");
    /* the damage must reach the host's checks (stored checksums, framing), or the comparison shows nothing */
    CHECK_MSG(t.host_fail > t.cases / 4 && (!trailer_only || t.host_fail == t.cases - 1),
              "%s: the host rejects only %d of %d damaged chunks", s->name, t.host_fail, t.cases);
    free(d);
    free(orig);
    free(data);
}

/* Host-side facts the device comparison relies on, checked with or without a GPU: a blosc chunk with a byte past
 * cbytes and a blosc zlib stream with a changed Adler-32 fail on the host. */
static void host_facts(zgpu_context *ctx) {
    const setup *s = &setups[3]; /* blosc_zlib */
    char path[400], file[600];
    snprintf(path, sizeof path, "%s/%s", tmpdir, s->name);
    snprintf(file, sizeof file, "%s/%s", path, s->key);
    size_t n = 0;
    uint8_t *orig = read_file(file, &n);
    CHECK(orig != NULL);
    if (!orig) return;
    zg_blosc_header h;
    zg_blosc_stream st[64];
    size_t ns = 0;
    CHECK_OK(zg_blosc_parse_header(orig, n, NBYTES, &h));
    CHECK_OK(zg_blosc_streams(orig, n, &h, st, 64, &ns));
    CHECK(h.compformat == ZG_BLOSC_ZLIB && ns >= 4);
    uint8_t *d = malloc(n + 1);
    const uint64_t z[2] = {0, 0}, c[2] = {SIDE, SIDE};
    uint8_t *out = malloc(NBYTES);
    for (int k = 0; k < 2; k++) {
        memcpy(d, orig, n);
        d[n] = 0;
        size_t dn = n + (size_t)k;
        if (k == 0) d[st[1].src_off + st[1].src_len - 1] ^= 0x01; /* the second stream's Adler-32 */
        write_file(file, d, dn);
        zgpu_array *a = NULL;
        CHECK_OK(zgpu_array_open(ctx, path, &a));
        CHECK_STATUS(zgpu_array_read(a, z, c, out, NULL), ZGPU_ERR_CORRUPT_DATA);
        zgpu_array_close(a);
    }
    write_file(file, orig, n);
    free(out);
    free(d);
    free(orig);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zgpu_test_gpu_hostile_%d", (int)getpid());
    mkdir(tmpdir, 0755);
    gpu = zgpu_gpu_available();
    char why[512];
    snprintf(why, sizeof why, "%s", gpu ? "" : zgpu_last_error());
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    zgpu_tuning tune;
    zgpu_tuning_init(&tune);
    tune.deflate_decoder = ZGPU_DECODER_ZGPU; /* zgpu's decoders throughout (nvCOMP's DEFLATE needs trusted input) */
    tune.read_route = ZGPU_ROUTE_DEVICE;      /* (the GPU decoders: small reads would take the host route) */
    o.tuning = &tune;
    zgpu_context *ctx = NULL, *ctx_nvc = NULL;
    CHECK_OK(zgpu_context_create(&o, &ctx));
    /* nvCOMP's zstd decoder (where nvCOMP loads; else zgpu's): its XXH64 is checked by zgpu's check kernel */
    tune.zstd_decoder = ZGPU_DECODER_NVCOMP;
    CHECK_OK(zgpu_context_create(&o, &ctx_nvc));
    for (size_t i = 0; i < N_SETUPS; i++) run_setup(ctx, &setups[i], 0);
    host_facts(ctx);
    for (size_t i = 0; i < N_SETUPS; i++)
        if (strstr(setups[i].name, "zstd_checksum")) {
            printf("with zstd_decoder = nvcomp, the stored checksum changed:\n");
            run_setup(ctx_nvc, &setups[i], 1);
        }
    zgpu_context_free(ctx);
    zgpu_context_free(ctx_nvc);
    zt_remove_dir(tmpdir);
    TEST_MAIN_END_GPU(gpu, why);
}
