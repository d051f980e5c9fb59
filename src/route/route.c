/* The route cost model and its file (route.h). */
#include "route/route.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dirs.h"

#define ROUTE_FILE_VERSION 3

void zg_route_model_default(zg_route_model *m) {
    /* An H200 with 16 host threads, rounded (docs/benchmarks.md, 2026-11-26): per codec class and ratio, one chunk
     * of 1 MiB (h1, d1) and of 8 MiB (h1b, d1b), and an 8 MiB chunk's share of many (hn, dn); host: libzstd /
     * libdeflate / c-blosc, one thread a chunk; device: zgpu's decoders */
    static const double B = 1048576.0, BB = 8388608.0;
    static const struct { double ratio, h1, h1b, hn, d1, d1b, dn; } d[ZG_RC_N][ZG_RP_N] = {
        [ZG_RC_NONE] = {{1.0, 2.1e-4, 1.4e-3, 1.0e-3, 1.7e-4, 5.0e-4, 2.0e-4},
                        {1.0, 2.1e-4, 1.4e-3, 1.0e-3, 1.7e-4, 5.0e-4, 2.0e-4}},
        [ZG_RC_ZSTD] = {{1.05, 1.47e-3, 11.5e-3, 2.2e-3, 1.46e-3, 2.7e-3, 4.9e-4},
                        {530, 1.1e-4, 1.8e-3, 7.8e-4, 3.9e-4, 4.9e-3, 3.9e-4}},
        [ZG_RC_DEFLATE] = {{1.1, 4.2e-3, 34e-3, 3.1e-3, 6.5e-3, 13.7e-3, 1.3e-3},
                           {88, 2.5e-4, 6.0e-3, 9.2e-4, 5.0e-3, 7.5e-3, 5.2e-4}},
        [ZG_RC_LZ4] = {{1.5, 5.3e-4, 3.8e-3, 1.2e-3, 4.1e-3, 4.7e-3, 4.9e-4},
                       {110, 1.5e-4, 4.2e-3, 8.8e-4, 4.1e-4, 5.4e-4, 8.7e-5}},
    };
    memset(m, 0, sizeof *m);
    m->threads = 16;
    m->h2d_bps = 50e9;
    for (int c = 0; c < ZG_RC_N; c++)
        for (int p = 0; p < ZG_RP_N; p++)
            m->pt[c][p] = (zg_route_point){d[c][p].ratio, B, BB, 17e-6, d[c][p].h1, d[c][p].h1b, d[c][p].hn,
                                           55e-6, d[c][p].d1, d[c][p].d1b, d[c][p].dn};
}

static double lerp(double a, double b, double w) { return a + (b - a) * w; }

/* A calibration point for a ratio between (or beyond: clamped) the two measured ones, in log ratio. An unknown
 * ratio takes the middle: neither extreme's error is then the largest. */
static zg_route_point at_ratio(const zg_route_point *lo, const zg_route_point *hi, double ratio) {
    double w = 0.5;
    if (ratio > 0 && hi->ratio > lo->ratio * 1.01) {
        w = (log(ratio) - log(lo->ratio)) / (log(hi->ratio) - log(lo->ratio));
        w = w < 0 ? 0 : w > 1 ? 1 : w;
    }
    return (zg_route_point){lerp(lo->ratio, hi->ratio, w), lerp(lo->bytes, hi->bytes, w),
                            lerp(lo->big_bytes, hi->big_bytes, w), lerp(lo->h0, hi->h0, w), lerp(lo->h1, hi->h1, w),
                            lerp(lo->h1_big, hi->h1_big, w), lerp(lo->hn, hi->hn, w), lerp(lo->d0, hi->d0, w),
                            lerp(lo->d1, hi->d1, w), lerp(lo->d1_big, hi->d1_big, w), lerp(lo->dn, hi->dn, w)};
}

/* A lone chunk's time at `bytes`, from the two measured sizes: the line through them above the small size, never
 * less than the small one scaled down below it. */
static double latency(double small, double big, const zg_route_point *p, double bytes) {
    const double slope = p->big_bytes > p->bytes && big > small ? (big - small) / (p->big_bytes - p->bytes) : 0;
    return fmax(small * fmin(1, bytes / p->bytes), small + (bytes - p->bytes) * slope);
}

zgpu_route zg_route_choose(const zg_route_model *m, const zg_route_read *r, double *t_host, double *t_device) {
    const int c = r->codec >= 0 && r->codec < ZG_RC_N ? r->codec : ZG_RC_ZSTD;
    const zg_route_point p = at_ratio(&m->pt[c][ZG_RP_LOW], &m->pt[c][ZG_RP_HIGH], r->ratio);
    const double B = r->chunk_bytes > 0 ? r->chunk_bytes : p.bytes;
    const double h2d = m->h2d_bps > 0 ? m->h2d_bps : 25e9;
    /* the throughput figures were taken with m->threads host threads; the read's context may have others */
    const double threads = r->threads > 0 ? r->threads : 1, host_share = m->threads > 0 ? m->threads / threads : 1;
    const double k = (double)r->chunks, cached = (double)r->cached, kh = k + (double)r->dev_cached;
    const double stored = k * B / (r->ratio > 0 ? r->ratio : p.ratio);
    double host = p.h0 + r->box_bytes / h2d, dev = p.d0 + stored / h2d;
    if (kh > 0) {
        const double Bh = r->host_part > 0 && r->host_part < 1 ? B * r->host_part : B;
        const double split = r->host_split > 1 ? r->host_split : 1;
        host += fmax(latency(p.h1 - p.h0, p.h1_big - p.h0, &p, Bh) / split, kh * p.hn * (Bh / p.big_bytes) * host_share);
    }
    if (k > 0) {
        const double per_big = B / p.big_bytes; /* (hn and dn are a big chunk's share of many) */
        dev += fmax(latency(p.d1 - p.d0, p.d1_big - p.d0, &p, B), k * p.dn * per_big);
    }
    /* chunks the host cache holds: the host route copies the boxes out of them; the device route stages them
     * whole. The device cache's: the device route's scatter reads them from device memory (~1.5 TB/s) */
    dev += cached * B * (1 / h2d + 1 / 10e9) + (double)r->dev_cached * B / 1.5e12;
    if (r->host_dest) { /* (the link is taken as fast both ways) */
        host -= r->box_bytes / h2d;
        dev += (r->box_bytes + fmin(r->box_bytes, (double)ZG_ROUTE_BACK_PIECE)) / h2d;
    }
    if (t_host) *t_host = host;
    if (t_device) *t_device = dev;
    if (!r->gpu_decodes) return ZGPU_ROUTE_HOST; /* the device route would decode on host threads too, and copy more */
    return host < dev * (r->cache_on && k > 0 ? ZG_ROUTE_CACHE_BIAS : 1) ? ZGPU_ROUTE_HOST : ZGPU_ROUTE_DEVICE;
}

/* The ratio half a read falls in: below or above the middle (in log ratio) of the two calibration points. */
static int band_of(const zg_route_model *m, int c, double ratio) {
    const double lo = m->pt[c][ZG_RP_LOW].ratio, hi = m->pt[c][ZG_RP_HIGH].ratio;
    if (ratio <= 0 || hi <= lo) return ZG_RP_LOW;
    return log(ratio) > 0.5 * (log(lo) + log(hi)) ? ZG_RP_HIGH : ZG_RP_LOW;
}

/* Whether many chunks' throughput, rather than a lone chunk's latency, dominates the device route's prediction
 * (the calibration misjudges the two apart: one of them learns without touching the other); and whether the read
 * wants under half of what it decodes (zg_route_memory). */
static int regime_of(const zg_route_model *m, const zg_route_read *r, int c) {
    const zg_route_point p = at_ratio(&m->pt[c][ZG_RP_LOW], &m->pt[c][ZG_RP_HIGH], r->ratio);
    if (!(p.big_bytes > 0) || !(r->chunk_bytes > 0)) return 0;
    const double lone = latency(p.d1 - p.d0, p.d1_big - p.d0, &p, r->chunk_bytes);
    const int many = (double)r->chunks * p.dn * r->chunk_bytes / p.big_bytes > lone;
    const double decoded = (double)r->chunks * r->chunk_bytes;
    const int part = (r->host_part > 0 && r->host_part < 0.5) || (decoded > 0 && r->box_bytes < 0.5 * decoded);
    return many + 2 * part;
}

/* The size class of a read the host route is predicted to take `t_host` seconds for (zg_route_memory). */
static int size_of(double t_host) {
    int k = 0;
    for (double edge = 0.25e-3; k < ZG_ROUTE_SIZES - 1 && t_host >= edge; edge *= 4) k++;
    return k;
}

zg_route_pick zg_route_decide(const zg_route_model *m, const zg_route_memory *mem, const zg_route_read *r) {
    zg_route_pick p;
    memset(&p, 0, sizeof p);
    p.codec = r->codec >= 0 && r->codec < ZG_RC_N ? r->codec : ZG_RC_ZSTD;
    p.band = band_of(m, p.codec, r->ratio);
    double t[2];
    const zgpu_route model = zg_route_choose(m, r, &t[0], &t[1]);
    p.regime = regime_of(m, r, p.codec);
    p.size = size_of(t[0]);
    if (!r->gpu_decodes || !mem) {
        p.t_host = t[0];
        p.t_device = t[1];
        p.route = model;
        p.predicted = t[model == ZGPU_ROUTE_HOST ? 0 : 1];
        return p;
    }
    double f[2];
    const double *fs = mem->factor[p.codec][p.band][p.regime][p.size];
    const unsigned *reads = mem->reads[p.codec][p.band][p.regime][p.size];
    for (int k = 0; k < 2; k++) f[k] = fs[k] > 0 ? fs[k] : 1;
    const double bias = r->cache_on && r->chunks > 0 ? ZG_ROUTE_CACHE_BIAS : 1; /* (as zg_route_choose) */
    int pick = t[0] * f[0] < bias * t[1] * f[1] ? 0 : 1;
    const int other = 1 - pick;
    /* the other route once if it never ran and is predicted within 8x, while its extra time is affordable
     * (ZG_ROUTE_EXPLORE_SHARE); again if within 4x (its factor may come from a read that paid for something else: a
     * cold buffer, a busy machine) once the reads since it last ran make its extra time small
     * (ZG_ROUTE_REEXPLORE, ZG_ROUTE_REEXPLORE_SHARE) */
    const double extra = t[other] * f[other] - t[pick] * f[pick];
    /* (the budget is the regime's, every size class's reads: a slot of few reads, of a size seldom read, still
     * gets its other route measured as soon as the whole slot did before size classes) */
    double spent = 0;
    for (int k = 0; k < ZG_ROUTE_SIZES; k++) spent += mem->spent[p.codec][p.band][p.regime][k];
    const int first = !reads[other] && extra <= ZG_ROUTE_EXPLORE_SHARE * spent &&
                      t[other] * f[other] < 8 * t[pick] * f[pick];
    const int again = reads[other] && mem->since_reads[p.codec][p.band][p.regime][p.size] >= ZG_ROUTE_REEXPLORE &&
                      extra <= ZG_ROUTE_REEXPLORE_SHARE * mem->since_spent[p.codec][p.band][p.regime][p.size] &&
                      t[other] * f[other] < 4 * t[pick] * f[pick];
    if (reads[pick] && (first || again)) {
        pick = other;
        p.explored = 1;
    }
    p.t_host = t[0] * f[0];
    p.t_device = t[1] * f[1];
    p.route = pick ? ZGPU_ROUTE_DEVICE : ZGPU_ROUTE_HOST;
    p.predicted = t[pick];
    return p;
}

void zg_route_learn(zg_route_memory *mem, const zg_route_pick *p, double seconds) {
    if (!mem || !(p->predicted > 0) || !(seconds > 0) || p->codec < 0 || p->codec >= ZG_RC_N || p->band < 0 ||
        p->band >= ZG_RP_N || p->regime < 0 || p->regime >= ZG_ROUTE_REGIMES || p->size < 0 || p->size >= ZG_ROUTE_SIZES)
        return;
    const int k = p->route == ZGPU_ROUTE_DEVICE ? 1 : 0;
    double ratio = seconds / p->predicted;
    ratio = ratio < 0.05 ? 0.05 : ratio > 20 ? 20 : ratio;
    double *f = &mem->factor[p->codec][p->band][p->regime][p->size][k];
    /* quick to believe a route is faster than predicted, slow to believe it slower: a read is only ever slowed by
     * what it does not measure (a first read's buffers, file opens, another process on the cores), so one slow
     * read moves the factor a fifth of the way and one fast read all the way */
    const double prev = *f > 0 ? *f : 1;
    *f = ratio < prev ? ratio : 0.8 * prev + 0.2 * ratio;
    mem->reads[p->codec][p->band][p->regime][p->size][k]++;
    mem->spent[p->codec][p->band][p->regime][p->size] += seconds;
    unsigned *since_n = &mem->since_reads[p->codec][p->band][p->regime][p->size];
    double *since_s = &mem->since_spent[p->codec][p->band][p->regime][p->size];
    if (p->explored) *since_n = 0, *since_s = 0;
    else ++*since_n, *since_s += seconds;
}

void zg_route_file_name(const char *gpu_name, const char *gpu_uuid, char *out, size_t n) {
    char name[96];
    size_t k = 0;
    for (const char *s = gpu_name ? gpu_name : "gpu"; *s && k + 1 < sizeof name; s++)
        name[k++] = (char)((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ? *s : '_');
    name[k] = 0;
    snprintf(out, n, "route-v%d-%s-%s.txt", ROUTE_FILE_VERSION, name, gpu_uuid ? gpu_uuid : "none");
}

/* FNV-1a of the text: a damaged or half-written file is not trusted. */
static uint64_t fnv1a(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

static int positive(double x) { return isfinite(x) && x > 0; }
static int point_ok(const zg_route_point *p) {
    return positive(p->ratio) && positive(p->bytes) && positive(p->big_bytes) && positive(p->h0) && positive(p->h1) &&
           positive(p->h1_big) && positive(p->hn) && positive(p->d0) && positive(p->d1) && positive(p->d1_big) &&
           positive(p->dn);
}

static int format_model(const char *key, const zg_route_model *m, char *buf, size_t n) {
    size_t at = 0;
    int w = snprintf(buf, n, "zgpu-route %d\nkey %s\nthreads %d\nh2d %.9g\n", ROUTE_FILE_VERSION, key, m->threads,
                     m->h2d_bps);
    if (w < 0 || (size_t)w >= n) return -1;
    at = (size_t)w;
    for (int c = 0; c < ZG_RC_N; c++)
        for (int p = 0; p < ZG_RP_N; p++) {
            const zg_route_point *q = &m->pt[c][p];
            w = snprintf(buf + at, n - at, "point %d %d %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g\n", c,
                         p, q->ratio, q->bytes, q->big_bytes, q->h0, q->h1, q->h1_big, q->hn, q->d0, q->d1, q->d1_big,
                         q->dn);
            if (w < 0 || (size_t)w >= n - at) return -1;
            at += (size_t)w;
        }
    w = snprintf(buf + at, n - at, "end %016llx\n", (unsigned long long)fnv1a(buf, at));
    return w < 0 || (size_t)w >= n - at ? -1 : (int)(at + (size_t)w);
}

int zg_route_model_load(const char *path, const char *key, zg_route_model *m) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *end = strstr(buf, "end ");
    if (!end) return 0;
    unsigned long long sum = 0;
    if (sscanf(end, "end %llx", &sum) != 1 || sum != fnv1a(buf, (size_t)(end - buf))) return 0;
    zg_route_model t;
    memset(&t, 0, sizeof t);
    int version = 0, seen = 0;
    char fkey[512];
    const char *line = buf;
    if (sscanf(line, "zgpu-route %d", &version) != 1 || version != ROUTE_FILE_VERSION) return 0;
    while ((line = strchr(line, '\n')) && ++line < end) {
        int c, p;
        zg_route_point q;
        if (!strncmp(line, "key ", 4)) {
            const char *e = strchr(line, '\n');
            size_t k = (size_t)(e - line - 4);
            if (k >= sizeof fkey) return 0;
            memcpy(fkey, line + 4, k);
            fkey[k] = 0;
            if (strcmp(fkey, key)) return 0; /* another GPU's or zgpu version's */
            seen |= 1;
        } else if (sscanf(line, "threads %d", &t.threads) == 1) {
            seen |= 2;
        } else if (sscanf(line, "h2d %lf", &t.h2d_bps) == 1) {
            seen |= 4;
        } else if (sscanf(line, "point %d %d %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf", &c, &p, &q.ratio, &q.bytes,
                          &q.big_bytes, &q.h0, &q.h1, &q.h1_big, &q.hn, &q.d0, &q.d1, &q.d1_big, &q.dn) == 13) {
            if (c < 0 || c >= ZG_RC_N || p < 0 || p >= ZG_RP_N || !point_ok(&q)) return 0;
            t.pt[c][p] = q;
            seen |= 8 << (c * ZG_RP_N + p);
        }
    }
    const int all = 15 | (((1 << (ZG_RC_N * ZG_RP_N)) - 1) << 3);
    if (seen != all || t.threads < 1 || !positive(t.h2d_bps)) return 0;
    t.calibrated = 1;
    *m = t;
    return 1;
}

int zg_route_model_save(const char *path, const char *key, const zg_route_model *m) {
    char buf[8192], dir[4096], tmp[4200];
    const int n = format_model(key, m, buf, sizeof buf);
    if (n < 0 || snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) return -1;
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (zg_make_dirs(dir, 0700, NULL, 0)) return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld-%lx", path, (long)getpid(), (unsigned long)(uintptr_t)&buf);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    int ok = write(fd, buf, (size_t)n) == n && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) { /* (several processes may calibrate at once: the last rename wins) */
        unlink(tmp);
        return -1;
    }
    return 0;
}
