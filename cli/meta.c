/* Codec specs (--codec), default chunk shapes and metadata documents for `zgpu write` and `zgpu cp`. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "cli.h"

/* ---- --codec SPEC ---- */
static int parse_int_field(const char *s, size_t n, int lo, int hi, const char *codec, const char *what,
                           int *out) {
    int64_t v;
    if (cli_parse_i64(s, n, &v) != 0 || v < lo || v > hi)
        return cli_err("codec %s: %s '%.*s' is not an integer in [%d, %d]", codec, what, (int)n, s, lo, hi);
    *out = (int)v;
    return 0;
}

static int field_is(const char *s, size_t n, const char *word) { return strlen(word) == n && !strncasecmp(s, word, n); }

int cli_parse_codec_spec(const char *text, cli_codec_spec *out) {
    memset(out, 0, sizeof *out);
    out->shuffle = -1;
    /* "+crc32c" suffix */
    size_t base_len = strlen(text);
    const char *plus = strchr(text, '+');
    if (plus) {
        if (strcmp(plus + 1, "crc32c") != 0)
            return cli_err("codec '%s': only '+crc32c' may follow the compressor", text);
        out->crc32c = 1;
        base_len = (size_t)(plus - text);
    }
    /* Split the base on ':' into at most 4 fields. */
    const char *f[4];
    size_t fl[4];
    int nf = 0;
    const char *p = text, *end = text + base_len;
    for (;;) {
        const char *c = memchr(p, ':', (size_t)(end - p));
        if (nf == 4) return cli_err("codec '%s': too many ':' fields", text);
        f[nf] = p;
        fl[nf] = c ? (size_t)(c - p) : (size_t)(end - p);
        nf++;
        if (!c) break;
        p = c + 1;
    }
    const char *name = f[0];
    size_t nl = fl[0];
    if (field_is(name, nl, "none") || (nl == 0 && plus)) {
        if (nf > 1) return cli_err("codec 'none' takes no parameters");
        out->kind = CLI_CODEC_NONE;
        return 0;
    }
    if (field_is(name, nl, "zstd")) {
        out->kind = CLI_CODEC_ZSTD;
        out->level = 0; /* zarr-python's default */
        if (nf > 3) return cli_err("codec zstd: expected zstd[:LEVEL[:checksum]]");
        if (nf > 1 && parse_int_field(f[1], fl[1], -131072, 22, "zstd", "level", &out->level)) return -1;
        if (nf > 2) {
            if (field_is(f[2], fl[2], "checksum") || field_is(f[2], fl[2], "true") || field_is(f[2], fl[2], "1"))
                out->checksum = 1;
            else if (field_is(f[2], fl[2], "nochecksum") || field_is(f[2], fl[2], "false") || field_is(f[2], fl[2], "0"))
                out->checksum = 0;
            else
                return cli_err("codec zstd: third field '%.*s' must be 'checksum' or 'nochecksum'", (int)fl[2], f[2]);
        }
        return 0;
    }
    struct { const char *name; cli_codec_kind kind; int def, lo, hi; const char *what; } simple[] = {
        {"gzip", CLI_CODEC_GZIP, 5, 0, 9, "level"},
        {"zlib", CLI_CODEC_ZLIB, 1, 0, 9, "level"},
        {"bz2", CLI_CODEC_BZ2, 1, 1, 9, "level"},
        {"lz4", CLI_CODEC_LZ4, 1, 1, 65537, "acceleration"},
    };
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
        if (!field_is(name, nl, simple[i].name)) continue;
        out->kind = simple[i].kind;
        out->level = simple[i].def;
        if (nf > 2) return cli_err("codec %s: expected %s[:%s]", simple[i].name, simple[i].name, simple[i].what);
        if (nf > 1 && parse_int_field(f[1], fl[1], simple[i].lo, simple[i].hi, simple[i].name, simple[i].what,
                                      &out->level))
            return -1;
        return 0;
    }
    if (field_is(name, nl, "blosc")) {
        static const char *const cnames[] = {"blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"};
        out->kind = CLI_CODEC_BLOSC;
        strcpy(out->cname, "zstd");
        out->level = 5;
        if (nf > 1) {
            int ok = 0;
            for (size_t i = 0; i < sizeof cnames / sizeof cnames[0]; i++)
                if (field_is(f[1], fl[1], cnames[i])) {
                    strcpy(out->cname, cnames[i]);
                    ok = 1;
                }
            if (!ok)
                return cli_err("codec blosc: unknown compressor '%.*s' (blosclz, lz4, lz4hc, snappy, zlib, zstd)",
                               (int)fl[1], f[1]);
        }
        if (nf > 2 && parse_int_field(f[2], fl[2], 0, 9, "blosc", "clevel", &out->level)) return -1;
        if (nf > 3) {
            if (field_is(f[3], fl[3], "noshuffle") || field_is(f[3], fl[3], "0")) out->shuffle = 0;
            else if (field_is(f[3], fl[3], "shuffle") || field_is(f[3], fl[3], "1")) out->shuffle = 1;
            else if (field_is(f[3], fl[3], "bitshuffle") || field_is(f[3], fl[3], "2")) out->shuffle = 2;
            else
                return cli_err("codec blosc: shuffle '%.*s' must be noshuffle, shuffle or bitshuffle", (int)fl[3], f[3]);
        }
        return 0;
    }
    return cli_err("unknown codec '%.*s' (none, zstd, gzip, zlib, bz2, lz4, blosc)", (int)nl, name);
}

static int blosc_shuffle(const cli_codec_spec *c, size_t itemsize) {
    /* zarr-python's default: bitshuffle for 1-byte types, byte shuffle otherwise. */
    return c->shuffle >= 0 ? c->shuffle : (itemsize == 1 ? 2 : 1);
}

int cli_codec_v3_json(const cli_codec_spec *c, size_t itemsize, cli_sb *sb) {
    static const char *const shuffle_names[] = {"noshuffle", "shuffle", "bitshuffle"};
    switch (c->kind) {
    case CLI_CODEC_NONE: break;
    case CLI_CODEC_ZSTD:
        cli_sb_printf(sb, "{\"name\":\"zstd\",\"configuration\":{\"level\":%d,\"checksum\":%s}}", c->level,
                      c->checksum ? "true" : "false");
        break;
    case CLI_CODEC_GZIP: cli_sb_printf(sb, "{\"name\":\"gzip\",\"configuration\":{\"level\":%d}}", c->level); break;
    case CLI_CODEC_ZLIB:
        cli_sb_printf(sb, "{\"name\":\"numcodecs.zlib\",\"configuration\":{\"level\":%d}}", c->level);
        break;
    case CLI_CODEC_BZ2:
        cli_sb_printf(sb, "{\"name\":\"numcodecs.bz2\",\"configuration\":{\"level\":%d}}", c->level);
        break;
    case CLI_CODEC_LZ4:
        cli_sb_printf(sb, "{\"name\":\"numcodecs.lz4\",\"configuration\":{\"acceleration\":%d}}", c->level);
        break;
    case CLI_CODEC_BLOSC:
        cli_sb_printf(sb,
                      "{\"name\":\"blosc\",\"configuration\":{\"cname\":\"%s\",\"clevel\":%d,\"shuffle\":\"%s\","
                      "\"typesize\":%zu,\"blocksize\":0}}",
                      c->cname, c->level, shuffle_names[blosc_shuffle(c, itemsize)], itemsize);
        break;
    }
    if (c->crc32c) cli_sb_printf(sb, "%s{\"name\":\"crc32c\"}", c->kind == CLI_CODEC_NONE ? "" : ",");
    return 0;
}

int cli_codec_v2_json(const cli_codec_spec *c, size_t itemsize, cli_sb *sb) {
    if (c->crc32c) return cli_err("codec '+crc32c' has no Zarr v2 form (use --format 3)");
    switch (c->kind) {
    case CLI_CODEC_NONE: cli_sb_puts(sb, "null"); break;
    case CLI_CODEC_ZSTD:
        cli_sb_printf(sb, "{\"id\":\"zstd\",\"level\":%d%s}", c->level, c->checksum ? ",\"checksum\":true" : "");
        break;
    case CLI_CODEC_GZIP: cli_sb_printf(sb, "{\"id\":\"gzip\",\"level\":%d}", c->level); break;
    case CLI_CODEC_ZLIB: cli_sb_printf(sb, "{\"id\":\"zlib\",\"level\":%d}", c->level); break;
    case CLI_CODEC_BZ2: cli_sb_printf(sb, "{\"id\":\"bz2\",\"level\":%d}", c->level); break;
    case CLI_CODEC_LZ4: cli_sb_printf(sb, "{\"id\":\"lz4\",\"acceleration\":%d}", c->level); break;
    case CLI_CODEC_BLOSC:
        cli_sb_printf(sb, "{\"id\":\"blosc\",\"cname\":\"%s\",\"clevel\":%d,\"shuffle\":%d,\"blocksize\":0}",
                      c->cname, c->level, blosc_shuffle(c, itemsize));
        break;
    }
    return 0;
}

/* ---- default chunks ---- */
static uint64_t box_bytes(int ndim, const uint64_t *shape, size_t itemsize) {
    /* Saturating: only compared against a few MiB. */
    uint64_t n = itemsize;
    for (int i = 0; i < ndim; i++) {
        uint64_t s = shape[i] ? shape[i] : 1;
        n = n > UINT64_MAX / s ? UINT64_MAX : n * s;
    }
    return n;
}

void cli_default_chunks(int ndim, const uint64_t *shape, size_t itemsize, const uint64_t *within,
                        uint64_t *chunks) {
    const uint64_t target = 4u << 20;
    const uint64_t *base = within ? within : shape;
    for (int i = 0; i < ndim; i++) chunks[i] = base[i] ? base[i] : 1;
    if (ndim == 0) return;
    if (!within && box_bytes(ndim, chunks, itemsize) < (16u << 20)) return;
    /* Halve axes in turn, slowest first (as zarr-python's guess does), keeping the fast axis contiguous
     * the longest. Inside a shard, only extents dividing the shard extent are allowed. */
    int axis = 0, stuck = 0;
    while (box_bytes(ndim, chunks, itemsize) > target && stuck < ndim) {
        uint64_t c = chunks[axis], next = c;
        if (c > 1) {
            if (!within) {
                next = (c + 1) / 2;
            } else {
                for (uint64_t d = c / 2; d >= 1; d--)
                    if (within[axis] % d == 0) { next = d; break; }
            }
        }
        if (next < c) {
            chunks[axis] = next;
            stuck = 0;
        } else {
            stuck++;
        }
        axis = (axis + 1) % ndim;
    }
}

/* ---- metadata documents ---- */
static void put_v3_bytes_codec(cli_sb *sb, zgpu_dtype dt, size_t itemsize) {
    /* zarr-python omits the endian of 1-byte types; zgpu wants it for multi-byte raw types too. */
    if (itemsize == 1) cli_sb_puts(sb, "{\"name\":\"bytes\"}");
    else cli_sb_puts(sb, "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}");
}

int cli_build_metadata(const cli_array_spec *a, char **out) {
    cli_sb sb = {0};
    char namebuf[32];
    *out = NULL;
    if (a->zarr_format != 2 && a->zarr_format != 3) return cli_err("--format must be 2 or 3");
    if (a->zarr_format == 3) {
        const char *dtname = cli_dtype_v3_name(a->dtype, a->itemsize, namebuf);
        if (!dtname) return cli_err("unknown data type");
        cli_sb_puts(&sb, "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":");
        cli_sb_u64_list(&sb, a->ndim, a->shape);
        cli_sb_printf(&sb, ",\"data_type\":\"%s\",\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":",
                      dtname);
        cli_sb_u64_list(&sb, a->ndim, a->sharded ? a->shards : a->chunks);
        cli_sb_puts(&sb, "}},\"chunk_key_encoding\":");
        cli_sb_puts(&sb, a->chunk_key_encoding ? a->chunk_key_encoding
                                               : "{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}}");
        cli_sb_puts(&sb, ",\"fill_value\":");
        if (a->fill_value) {
            cli_sb_puts(&sb, a->fill_value);
        } else {
            unsigned char zero[64] = {0};
            if (a->itemsize > sizeof zero) {
                unsigned char *z = calloc(a->itemsize, 1);
                if (!z) { cli_sb_free(&sb); return cli_err("out of memory"); }
                cli_fill_json_from_bytes(z, a->dtype, a->itemsize, 3, &sb);
                free(z);
            } else {
                cli_fill_json_from_bytes(zero, a->dtype, a->itemsize, 3, &sb);
            }
        }
        cli_sb_puts(&sb, ",\"codecs\":[");
        if (a->sharded) {
            cli_sb_puts(&sb, "{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":");
            cli_sb_u64_list(&sb, a->ndim, a->chunks);
            cli_sb_puts(&sb, ",\"codecs\":");
        }
        /* the codec chain of one (inner) chunk */
        if (a->v3_chunk_codecs) {
            if (a->sharded) cli_sb_puts(&sb, a->v3_chunk_codecs);
            else {
                /* splice the list's elements into the outer list */
                const char *t = a->v3_chunk_codecs;
                while (*t == ' ' || *t == '\n') t++;
                size_t n = strlen(t);
                while (n && (t[n - 1] == ' ' || t[n - 1] == '\n')) n--;
                if (n < 2 || t[0] != '[' || t[n - 1] != ']') {
                    cli_sb_free(&sb);
                    return cli_err("codec list is not a JSON list");
                }
                cli_sb_putn(&sb, t + 1, n - 2);
            }
        } else {
            cli_codec_spec none = {.kind = CLI_CODEC_NONE, .shuffle = -1};
            const cli_codec_spec *c = a->codec ? a->codec : &none;
            if (a->sharded) cli_sb_puts(&sb, "[");
            put_v3_bytes_codec(&sb, a->dtype, a->itemsize);
            if (c->kind != CLI_CODEC_NONE || c->crc32c) cli_sb_puts(&sb, ",");
            cli_codec_v3_json(c, a->itemsize, &sb);
            if (a->sharded) cli_sb_puts(&sb, "]");
        }
        if (a->sharded)
            cli_sb_puts(&sb, ",\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},"
                             "{\"name\":\"crc32c\"}],\"index_location\":\"end\"}}");
        cli_sb_puts(&sb, "]");
        if (a->attributes) {
            cli_sb_puts(&sb, ",\"attributes\":");
            cli_sb_puts(&sb, a->attributes);
        }
        if (a->dimension_names) {
            cli_sb_puts(&sb, ",\"dimension_names\":");
            cli_sb_puts(&sb, a->dimension_names);
        }
        cli_sb_puts(&sb, "}");
    } else {
        if (a->sharded) return cli_err("sharding needs Zarr format 3 (--format 3)");
        const char *descr = cli_dtype_npy_descr(a->dtype, a->itemsize, namebuf);
        if (!descr) return cli_err("unknown data type");
        cli_sb_puts(&sb, "{\"zarr_format\":2,\"shape\":");
        cli_sb_u64_list(&sb, a->ndim, a->shape);
        cli_sb_puts(&sb, ",\"chunks\":");
        cli_sb_u64_list(&sb, a->ndim, a->chunks);
        cli_sb_printf(&sb, ",\"dtype\":\"%s\",\"compressor\":", descr);
        if (a->v2_compressor) {
            cli_sb_puts(&sb, a->v2_compressor);
        } else {
            cli_codec_spec none = {.kind = CLI_CODEC_NONE, .shuffle = -1};
            if (cli_codec_v2_json(a->codec ? a->codec : &none, a->itemsize, &sb) != 0) {
                cli_sb_free(&sb);
                return -1;
            }
        }
        cli_sb_puts(&sb, ",\"fill_value\":");
        if (a->fill_value) {
            cli_sb_puts(&sb, a->fill_value);
        } else {
            unsigned char *z = calloc(a->itemsize ? a->itemsize : 1, 1);
            if (!z) { cli_sb_free(&sb); return cli_err("out of memory"); }
            cli_fill_json_from_bytes(z, a->dtype, a->itemsize, 2, &sb);
            free(z);
        }
        cli_sb_puts(&sb, ",\"order\":\"C\",\"filters\":");
        cli_sb_puts(&sb, a->v2_filters ? a->v2_filters : "null");
        cli_sb_puts(&sb, ",\"dimension_separator\":");
        cli_sb_puts(&sb, a->dimension_separator ? a->dimension_separator : "\".\"");
        if (a->attributes) {
            cli_sb_puts(&sb, ",\"attributes\":");
            cli_sb_puts(&sb, a->attributes);
        }
        cli_sb_puts(&sb, "}");
    }
    *out = cli_sb_finish(&sb);
    return *out ? 0 : -1;
}

/* ---- v3 codec list -> v2 compressor ---- */
static int member_string(const char *obj, const char *key, char *buf, size_t cap) {
    const char *v;
    size_t n;
    if (cli_json_member(obj, key, &v, &n) != 1) return -1;
    return cli_json_string(v, n, buf, cap);
}

int cli_v3_codecs_to_v2_compressor(const char *codecs, cli_sb *sb) {
    const char *compressor = NULL;
    char compressor_name[64] = "";
    for (size_t i = 0;; i++) {
        const char *el;
        size_t len;
        int r = cli_json_index(codecs, i, &el, &len);
        if (r < 0) return cli_err("codec list is malformed");
        if (r == 0) break;
        char name[64];
        if (member_string(el, "name", name, sizeof name) != 0) return cli_err("codec list entry without a name");
        if (!strcmp(name, "bytes")) continue;
        if (compressor)
            return cli_err("codecs '%s' and '%s' cannot both be expressed in Zarr v2 metadata: give --codec",
                           compressor_name, name);
        compressor = el;
        snprintf(compressor_name, sizeof compressor_name, "%s", name);
    }
    if (!compressor) {
        cli_sb_puts(sb, "null");
        return 0;
    }
    const char *conf = "{}";
    size_t conf_len = 2;
    if (cli_json_member(compressor, "configuration", &conf, &conf_len) < 0) return cli_err("codec list is malformed");
    const char *id = NULL;
    if (!strcmp(compressor_name, "zstd") || !strcmp(compressor_name, "gzip")) id = compressor_name;
    else if (!strncmp(compressor_name, "numcodecs.", 10)) id = compressor_name + 10;
    if (!strcmp(compressor_name, "blosc")) {
        char cname[32], shuffle[32];
        const char *v;
        size_t n;
        int64_t clevel = 5, blocksize = 0;
        if (member_string(conf, "cname", cname, sizeof cname) != 0 ||
            member_string(conf, "shuffle", shuffle, sizeof shuffle) != 0 ||
            cli_json_member(conf, "clevel", &v, &n) != 1 || cli_parse_i64(v, n, &clevel) != 0)
            return cli_err("blosc codec configuration lacks cname, clevel or shuffle");
        if (cli_json_member(conf, "blocksize", &v, &n) == 1 && cli_parse_i64(v, n, &blocksize) != 0)
            return cli_err("blosc codec configuration: bad blocksize");
        int sh = !strcmp(shuffle, "noshuffle") ? 0 : !strcmp(shuffle, "shuffle") ? 1 : !strcmp(shuffle, "bitshuffle") ? 2 : -1;
        if (sh < 0) return cli_err("blosc codec configuration: unknown shuffle '%s'", shuffle);
        cli_sb_printf(sb, "{\"id\":\"blosc\",\"cname\":\"%s\",\"clevel\":%lld,\"shuffle\":%d,\"blocksize\":%lld}",
                      cname, (long long)clevel, sh, (long long)blocksize);
        return 0;
    }
    if (!id) return cli_err("codec '%s' has no Zarr v2 form: give --codec", compressor_name);
    /* numcodecs configs use the same member names as the v3 configuration: prepend the id. */
    const char *body = conf + 1;
    while (*body == ' ' || *body == '\n') body++;
    cli_sb_printf(sb, "{\"id\":\"%s\"", id);
    if (*body != '}') cli_sb_puts(sb, ",");
    cli_sb_putn(sb, body, conf_len - (size_t)(body - conf));
    return 0;
}

/* ---- v2 codecs (as zgpu_array_codecs_json names them) -> standard v3 codecs ---- */
static int member_int(const char *obj, const char *key, int64_t def, int64_t *out) {
    const char *v;
    size_t n;
    int r = cli_json_member(obj, key, &v, &n);
    if (r < 0) return -1;
    if (r == 0) { *out = def; return 0; }
    return cli_parse_i64(v, n, out);
}

int cli_v2_codecs_to_v3(const char *codecs, size_t itemsize, cli_sb *sb) {
    cli_sb_puts(sb, "[");
    for (size_t i = 0;; i++) {
        const char *el, *conf = "{}";
        size_t len, conf_len = 2;
        int r = cli_json_index(codecs, i, &el, &len);
        if (r < 0) return cli_err("codec list is malformed");
        if (r == 0) break;
        if (i) cli_sb_puts(sb, ",");
        char name[64];
        if (member_string(el, "name", name, sizeof name) != 0) return cli_err("codec list entry without a name");
        if (cli_json_member(el, "configuration", &conf, &conf_len) < 0) return cli_err("codec list is malformed");
        int64_t level, clevel, shuffle, blocksize;
        if (!strcmp(name, "numcodecs.zstd") && member_int(conf, "level", 0, &level) == 0) {
            const char *ck;
            size_t ckn;
            int checksum = cli_json_member(conf, "checksum", &ck, &ckn) == 1 && ckn == 4 && !memcmp(ck, "true", 4);
            cli_sb_printf(sb, "{\"name\":\"zstd\",\"configuration\":{\"level\":%lld,\"checksum\":%s}}", (long long)level,
                          checksum ? "true" : "false");
        } else if (!strcmp(name, "numcodecs.gzip") && member_int(conf, "level", 1, &level) == 0) {
            cli_sb_printf(sb, "{\"name\":\"gzip\",\"configuration\":{\"level\":%lld}}", (long long)level);
        } else if (!strcmp(name, "numcodecs.blosc") && member_int(conf, "clevel", 5, &clevel) == 0 &&
                   member_int(conf, "shuffle", 1, &shuffle) == 0 && member_int(conf, "blocksize", 0, &blocksize) == 0 &&
                   shuffle >= -1 && shuffle <= 2) {
            static const char *const names[] = {"noshuffle", "shuffle", "bitshuffle"};
            char cname[32];
            if (member_string(conf, "cname", cname, sizeof cname) != 0) strcpy(cname, "lz4");
            if (shuffle < 0) shuffle = itemsize == 1 ? 2 : 1; /* numcodecs AUTOSHUFFLE */
            cli_sb_printf(sb,
                          "{\"name\":\"blosc\",\"configuration\":{\"cname\":\"%s\",\"clevel\":%lld,\"shuffle\":\"%s\","
                          "\"typesize\":%zu,\"blocksize\":%lld}}",
                          cname, (long long)clevel, names[shuffle], itemsize, (long long)blocksize);
        } else {
            cli_sb_putn(sb, el, len);
        }
    }
    cli_sb_puts(sb, "]");
    return sb->oom ? cli_err("out of memory") : 0;
}
