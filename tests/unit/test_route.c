/* The route cost model (route/route.h): the decisions it makes with zgpu's default figures for the reads issue 20
 * measured (one chunk: host; many chunks: device; no GPU decoder: host), how the ratio and the chunk size move
 * them, and its file: saved and loaded back exactly, and ignored when damaged, half written or another GPU's. */
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "route/route.h"
#include "test.h"

static zg_route_read read_of(zg_route_codec c, size_t chunks, double chunk_bytes, double ratio) {
    zg_route_read r;
    memset(&r, 0, sizeof r);
    r.codec = c;
    r.gpu_decodes = 1;
    r.chunks = chunks;
    r.chunk_bytes = chunk_bytes;
    r.ratio = ratio;
    r.box_bytes = chunk_bytes * (double)chunks / 4;
    r.threads = 16;
    return r;
}

static void decisions(void) {
    zg_route_model m;
    zg_route_model_default(&m);
    const double MB16 = 16777216.0, MB2 = 2097152.0;
    double th, td;
    /* one 64x256x256 label chunk (zstd, 1,463:1): 9.8 ms on the H200's GPU route, 3.6 ms on its host route */
    zg_route_read r = read_of(ZG_RC_ZSTD, 1, MB16, 1463);
    CHECK_EQ_U64(zg_route_choose(&m, &r, &th, &td), ZGPU_ROUTE_HOST);
    CHECK_MSG(td > 6e-3 && td < 14e-3 && th > 1.5e-3 && th < 6e-3, "label chunk: host %.2f ms, device %.2f ms",
              th * 1e3, td * 1e3);
    /* one 64x256x256 OCT chunk (zstd, 1.05:1): 2.7 ms on the GPU, 11.5 ms on the host */
    r = read_of(ZG_RC_ZSTD, 1, 8388608.0, 1.05);
    CHECK_EQ_U64(zg_route_choose(&m, &r, &th, &td), ZGPU_ROUTE_DEVICE);
    /* the whole label volume (64 chunks): the GPU */
    r = read_of(ZG_RC_ZSTD, 64, MB16, 1463);
    r.box_bytes = 64 * MB16;
    CHECK_EQ_U64(zg_route_choose(&m, &r, &th, &td), ZGPU_ROUTE_DEVICE);
    /* one 2 MiB inner chunk of the sharded label volume: host (0.5 ms against 1.5 ms on the H200) */
    r = read_of(ZG_RC_ZSTD, 1, MB2, 940);
    CHECK_EQ_U64(zg_route_choose(&m, &r, NULL, NULL), ZGPU_ROUTE_HOST);
    /* one blosc-LZ4 label chunk: the GPU (1.1 ms against 8.4 ms) */
    r = read_of(ZG_RC_LZ4, 1, MB16, 110);
    CHECK_EQ_U64(zg_route_choose(&m, &r, NULL, NULL), ZGPU_ROUTE_DEVICE);
    /* with the cache on, the host route (which fills it) wins a read it loses by less than the bias */
    r = read_of(ZG_RC_ZSTD, 1, 8388608.0, 1.05);
    zg_route_choose(&m, &r, &th, &td);
    r.cache_on = 1;
    CHECK(zg_route_choose(&m, &r, NULL, NULL) == (th < ZG_ROUTE_CACHE_BIAS * td ? ZGPU_ROUTE_HOST : ZGPU_ROUTE_DEVICE));
    r = read_of(ZG_RC_ZSTD, 64, MB16, 1463);
    r.box_bytes = 64 * MB16;
    r.cache_on = 1;
    CHECK_EQ_U64(zg_route_choose(&m, &r, NULL, NULL), ZGPU_ROUTE_DEVICE); /* (a whole volume: far faster there) */
    /* a chunk the cache holds costs the device route its whole copy: a crop of one is the host's */
    r = read_of(ZG_RC_LZ4, 0, MB16, 110);
    r.cached = 1;
    r.box_bytes = 32 * 128 * 128 * 4;
    CHECK_EQ_U64(zg_route_choose(&m, &r, NULL, NULL), ZGPU_ROUTE_HOST);
    /* chunks the device cache holds: the device route scatters them (a label chunk, host-routed above, goes there
     * once held), while the host route must decode them like any other; a read mixing both counts each */
    zg_route_read miss = read_of(ZG_RC_ZSTD, 1, MB16, 1463);
    r = read_of(ZG_RC_ZSTD, 0, MB16, 1463);
    r.dev_cached = 1;
    r.box_bytes = miss.box_bytes;
    CHECK_EQ_U64(zg_route_choose(&m, &r, &th, &td), ZGPU_ROUTE_DEVICE);
    double th_miss, td_miss;
    zg_route_choose(&m, &miss, &th_miss, &td_miss);
    CHECK_MSG(th == th_miss && td < td_miss / 20 && td < 1e-3,
              "device-cached label chunk: host %.3f ms (a miss %.3f), device %.3f ms (a miss %.3f)", th * 1e3,
              th_miss * 1e3, td * 1e3, td_miss * 1e3);
    r = read_of(ZG_RC_ZSTD, 1, MB16, 1463);
    r.dev_cached = 7;
    double th8;
    zg_route_choose(&m, &r, &th8, &td);
    CHECK_MSG(th8 > th_miss && td < td_miss * 1.05, "1 miss + 7 held: host %.3f ms, device %.3f ms", th8 * 1e3, td * 1e3);
    /* 8 patches over 32 blosc-LZ4 OCT chunks: the host decodes 1 of their 64 blocks each (partial decodes), so the
     * host route, slower whole, wins; its predicted time falls with the share it decodes, the device route's not */
    r = read_of(ZG_RC_LZ4, 32, 8388608.0, 1.05);
    r.box_bytes = 8 * 256 * 256 * 2;
    double th_whole, td_whole;
    CHECK_EQ_U64(zg_route_choose(&m, &r, &th_whole, &td_whole), ZGPU_ROUTE_DEVICE);
    r.host_part = 1.0 / 64;
    CHECK_EQ_U64(zg_route_choose(&m, &r, &th, &td), ZGPU_ROUTE_HOST);
    CHECK_MSG(th < th_whole / 4 && td == td_whole, "patch: host %.2f -> %.2f ms, device %.2f -> %.2f ms",
              th_whole * 1e3, th * 1e3, td_whole * 1e3, td * 1e3);
    /* the host read's pieces split a lone chunk's decode over the threads (host/host_read.h): its latency divides */
    r = read_of(ZG_RC_LZ4, 1, 8388608.0, 1.05);
    r.host_part = 0.5;
    double th1, th4;
    zg_route_choose(&m, &r, &th1, NULL);
    r.host_split = 4;
    zg_route_choose(&m, &r, &th4, NULL);
    CHECK_MSG(th4 < th1 / 2 && th4 > th1 / 8, "a chunk in 4 pieces: %.3f ms, whole %.3f ms", th4 * 1e3, th1 * 1e3);
    r = read_of(ZG_RC_LZ4, 32, 8388608.0, 1.05);
    r.box_bytes = 8 * 256 * 256 * 2;
    r.host_part = 1.0; /* all of it: as whole */
    zg_route_choose(&m, &r, &th, NULL);
    CHECK(th == th_whole);
    /* a whole low-ratio volume in every codec: the GPU */
    for (int c = 0; c < ZG_RC_N; c++) {
        r = read_of((zg_route_codec)c, 128, 8388608.0, 1.3);
        r.box_bytes = 128 * 8388608.0;
        CHECK_MSG(zg_route_choose(&m, &r, &th, &td) == ZGPU_ROUTE_DEVICE, "codec %d, 128 chunks: host %.1f ms, device "
                  "%.1f ms", c, th * 1e3, td * 1e3);
    }
    /* more chunks never make the host route relatively better */
    zgpu_route last = ZGPU_ROUTE_HOST;
    for (size_t k = 1; k <= 256; k *= 2) {
        r = read_of(ZG_RC_DEFLATE, k, MB2, 30);
        const zgpu_route now = zg_route_choose(&m, &r, NULL, NULL);
        CHECK_MSG(!(last == ZGPU_ROUTE_DEVICE && now == ZGPU_ROUTE_HOST), "deflate: %zu chunks went back to the host", k);
        last = now;
    }
    CHECK_EQ_U64(last, ZGPU_ROUTE_DEVICE);
    /* host destinations (zgpu_tuning.host_read_route): the host route saves its copy to the device, the device route
     * pays the copy back plus one piece; a whole OCT volume of gzip (16 chunks of 8 MiB, 1.1:1) still decodes
     * faster on the GPU, a label chunk (little to decode, everything to copy back) goes to the host */
    r = read_of(ZG_RC_DEFLATE, 16, 8388608.0, 1.1);
    r.box_bytes = 16 * 8388608.0;
    zg_route_choose(&m, &r, &th, &td);
    r.host_dest = 1;
    double th_h, td_h;
    CHECK_EQ_U64(zg_route_choose(&m, &r, &th_h, &td_h), ZGPU_ROUTE_DEVICE);
    CHECK_MSG(fabs((th - th_h) - r.box_bytes / m.h2d_bps) < 1e-9 &&
                  fabs((td_h - td) - (r.box_bytes + ZG_ROUTE_BACK_PIECE) / m.h2d_bps) < 1e-9,
              "host destination: host %.2f -> %.2f ms, device %.2f -> %.2f ms", th * 1e3, th_h * 1e3, td * 1e3, td_h * 1e3);
    r = read_of(ZG_RC_ZSTD, 1, MB16, 1463);
    r.host_dest = 1;
    CHECK_EQ_U64(zg_route_choose(&m, &r, NULL, NULL), ZGPU_ROUTE_HOST);
    /* a small box copies back less than a piece: the fill is the box itself */
    r = read_of(ZG_RC_ZSTD, 1, 8388608.0, 1.05);
    r.box_bytes = 4096;
    zg_route_choose(&m, &r, NULL, &td);
    r.host_dest = 1;
    zg_route_choose(&m, &r, NULL, &td_h);
    CHECK(fabs((td_h - td) - 2 * 4096 / m.h2d_bps) < 1e-12);
    /* no GPU decoder for the chain: host, whatever the size */
    r = read_of(ZG_RC_ZSTD, 1000, MB16, 2);
    r.gpu_decodes = 0;
    CHECK_EQ_U64(zg_route_choose(&m, &r, NULL, NULL), ZGPU_ROUTE_HOST);
    /* an unknown ratio lies between the two calibration points */
    double lo, hi, mid;
    r = read_of(ZG_RC_ZSTD, 1, MB16, 1.3);
    zg_route_choose(&m, &r, NULL, &lo);
    r.ratio = 1000;
    zg_route_choose(&m, &r, NULL, &hi);
    r.ratio = 0;
    zg_route_choose(&m, &r, NULL, &mid);
    CHECK_MSG(mid > (lo < hi ? lo : hi) && mid < (lo < hi ? hi : lo), "unknown ratio: %g not between %g and %g", mid,
              lo, hi);
    /* zero chunks (all missing): fixed costs decide, and the host's is the smaller */
    r = read_of(ZG_RC_ZSTD, 0, MB16, 0);
    CHECK_EQ_U64(zg_route_choose(&m, &r, NULL, NULL), ZGPU_ROUTE_HOST);
}

static void file_round_trip(void) {
    char dir[128], path[256], name[160];
    snprintf(dir, sizeof dir, "/tmp/zgpu_test_route_%d", (int)getpid());
    zg_route_file_name("NVIDIA H100 80GB HBM3", "0a1b", name, sizeof name);
    CHECK_STR(name, "route-v3-NVIDIA_H100_80GB_HBM3-0a1b.txt");
    snprintf(path, sizeof path, "%s/sub/%s", dir, name);
    zg_route_model m, back;
    zg_route_model_default(&m);
    m.threads = 12;
    m.pt[ZG_RC_LZ4][ZG_RP_HIGH].d1 = 1.25e-3;
    const char *key = "NVIDIA H100 0a1b zgpu 0.1.0";
    CHECK(zg_route_model_load(path, key, &back) == 0); /* none yet */
    CHECK(zg_route_model_save(path, key, &m) == 0);
    CHECK(zg_route_model_load(path, key, &back) == 1);
    CHECK(back.calibrated == 1 && back.threads == 12);
    int same = 1;
    for (int c = 0; c < ZG_RC_N; c++)
        for (int p = 0; p < ZG_RP_N; p++) {
            const zg_route_point *x = &m.pt[c][p], *y = &back.pt[c][p];
            same &= fabs(x->d1 - y->d1) <= 1e-8 * x->d1 && fabs(x->hn - y->hn) <= 1e-8 * x->hn &&
                    x->ratio == y->ratio && x->bytes == y->bytes && x->big_bytes == y->big_bytes;
        }
    CHECK_MSG(same, "the model read back differs");
    CHECK(zg_route_model_load(path, "another GPU", &back) == 0);
    /* damaged: one digit changed (checksum), cut short, or a negative time */
    FILE *f = fopen(path, "r+");
    char text[8192];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f) fclose(f);
    char *digit = strstr(text, "point 1 0 ");
    CHECK(digit != NULL);
    if (digit) {
        digit[12] = digit[12] == '1' ? '2' : '1';
        f = fopen(path, "w");
        fwrite(text, 1, n, f);
        fclose(f);
        CHECK(zg_route_model_load(path, key, &back) == 0);
        f = fopen(path, "w");
        fwrite(text, 1, n / 2, f);
        fclose(f);
        CHECK(zg_route_model_load(path, key, &back) == 0);
    }
    m.pt[ZG_RC_ZSTD][ZG_RP_LOW].hn = -1;
    CHECK(zg_route_model_save(path, key, &m) == 0);
    CHECK(zg_route_model_load(path, key, &back) == 0);
    CHECK(zt_remove_dir(dir) == 0);
}

/* Reads a slot of regime `regime` took, every size class and route. */
static unsigned slot_reads(const zg_route_memory *mem, int c, int band, int regime) {
    unsigned n = 0;
    for (int k = 0; k < ZG_ROUTE_SIZES; k++) n += mem->reads[c][band][regime][k][0] + mem->reads[c][band][regime][k][1];
    return n;
}

/* A route the calibration misjudged is tried once, measured, and taken from then on. */
static void learning(void) {
    zg_route_model m;
    zg_route_model_default(&m);
    m.pt[ZG_RC_DEFLATE][ZG_RP_LOW].dn *= 6; /* as the H200's synthetic gzip arrays misjudged real OCT data */
    zg_route_memory mem;
    memset(&mem, 0, sizeof mem);
    zg_route_read r = read_of(ZG_RC_DEFLATE, 16, 8388608.0, 1.1);
    r.box_bytes = 16 * 8388608.0;
    double th, td;
    CHECK_EQ_U64(zg_route_choose(&m, &r, &th, &td), ZGPU_ROUTE_HOST);
    zg_route_pick p = zg_route_decide(&m, &mem, &r);
    CHECK(p.route == ZGPU_ROUTE_HOST && !p.explored && fabs(p.predicted - th) < 1e-12);
    /* the host route as predicted, read after read, until the device route's extra time is a quarter of theirs:
     * then it is tried */
    int n_host = 0;
    while (n_host < 100 && p.route == ZGPU_ROUTE_HOST) {
        zg_route_learn(&mem, &p, th);
        n_host++;
        p = zg_route_decide(&m, &mem, &r);
    }
    CHECK_MSG(p.route == ZGPU_ROUTE_DEVICE && p.explored, "the device route was not tried (host %.1f ms, device %.1f)",
              th * 1e3, td * 1e3);
    CHECK_MSG(td - th <= ZG_ROUTE_EXPLORE_SHARE * n_host * th + 1e-12 &&
                  td - th > ZG_ROUTE_EXPLORE_SHARE * (n_host - 1) * th,
              "the device route (%.1f ms against the host's %.1f) was tried after %d host reads", td * 1e3, th * 1e3,
              n_host);
    zg_route_learn(&mem, &p, td / 6); /* and ran 6x faster than the model said */
    for (int k = 0; k < 3; k++) {
        p = zg_route_decide(&m, &mem, &r);
        CHECK(p.route == ZGPU_ROUTE_DEVICE && !p.explored);
        zg_route_learn(&mem, &p, td / 6);
    }
    CHECK(p.regime == 1 && mem.reads[ZG_RC_DEFLATE][ZG_RP_LOW][1][p.size][1] == 4 &&
          mem.reads[ZG_RC_DEFLATE][ZG_RP_LOW][1][p.size][0] == (unsigned)n_host);
    /* lone chunks of the same codec learnt nothing from it: a slot of their own (as on the H200, where single gzip
     * chunks were predicted right and whole arrays 6x wrong) */
    zg_route_read lone = read_of(ZG_RC_DEFLATE, 1, 8388608.0, 1.1);
    lone.box_bytes = lone.chunk_bytes; /* (the whole chunk: a box under half of it learns apart, below) */
    p = zg_route_decide(&m, &mem, &lone);
    CHECK(p.regime == 0 && !p.explored && slot_reads(&mem, ZG_RC_DEFLATE, ZG_RP_LOW, 0) == 0);
    /* a lone chunk the host decodes a small part of learns in a slot of its own too: its host route's error is
     * not a whole chunk's (on the H100, 4 MB of 8 MB blosc chunks took 0.7x their prediction, whole chunks 1.6x) */
    lone.host_part = 0.25;
    p = zg_route_decide(&m, &mem, &lone);
    CHECK(p.regime == 2);
    zg_route_learn(&mem, &p, 3 * p.predicted);
    CHECK(mem.reads[ZG_RC_DEFLATE][ZG_RP_LOW][2][p.size][p.route == ZGPU_ROUTE_DEVICE] == 1 &&
          slot_reads(&mem, ZG_RC_DEFLATE, ZG_RP_LOW, 0) == 0);
    lone.host_part = 0.75; /* (most of each chunk: a whole chunk's slot) */
    CHECK(zg_route_decide(&m, &mem, &lone).regime == 0);
    /* so does a read whose boxes want under half of what it decodes (a plane across many chunks, a crop), apart
     * from whole reads of as many chunks (on the H200 a sharded label plane's lesson sent the whole volume to the
     * host at 2.4x the device route's time) */
    zg_route_read plane = read_of(ZG_RC_ZSTD, 64, 2097152.0, 940), whole = plane;
    plane.box_bytes = 64 * 2097152.0 / 32;
    whole.box_bytes = 64 * 2097152.0;
    const zg_route_pick pp = zg_route_decide(&m, &mem, &plane), pw = zg_route_decide(&m, &mem, &whole);
    CHECK_MSG(pp.regime == pw.regime + 2, "plane regime %d, whole %d", pp.regime, pw.regime);
    /* a route predicted over 8x slower is never tried; other slots learn nothing from this one */
    zg_route_read one = read_of(ZG_RC_ZSTD, 1, 16777216.0, 1463);
    one.box_bytes = one.chunk_bytes;
    p = zg_route_decide(&m, &mem, &one);
    CHECK(p.route == ZGPU_ROUTE_HOST && p.band == ZG_RP_HIGH);
    zg_route_learn(&mem, &p, p.predicted);
    zg_route_choose(&m, &one, &th, &td);
    p = zg_route_decide(&m, &mem, &one);
    CHECK(p.explored == (td < 8 * th && td - th <= ZG_ROUTE_EXPLORE_SHARE * th));
    /* one slow read (a cold first read: buffers allocated, files opened) moves a factor a fifth of the way: the label
     * chunk's host route, 4x+ faster, keeps it; a fast read is believed at once */
    zg_route_memory cold;
    memset(&cold, 0, sizeof cold);
    p = zg_route_decide(&m, &cold, &one);
    CHECK(p.route == ZGPU_ROUTE_HOST);
    zg_route_learn(&cold, &p, 20 * p.predicted);
    const int one_size = p.size;
    CHECK_MSG(fabs(cold.factor[ZG_RC_ZSTD][ZG_RP_HIGH][0][one_size][0] - (0.8 + 0.2 * 20)) < 1e-9, "factor %.3f",
              cold.factor[ZG_RC_ZSTD][ZG_RP_HIGH][0][one_size][0]);
    zg_route_choose(&m, &one, &th, &td);
    if (4.8 * th < td) {
        p = zg_route_decide(&m, &cold, &one);
        if (p.explored) zg_route_learn(&cold, &p, td); /* (the device route tried once, as predicted) */
        p = zg_route_decide(&m, &cold, &one);
        CHECK_MSG(p.route == ZGPU_ROUTE_HOST && !p.explored, "host %.2f ms x 4.8 against device %.2f ms", th * 1e3,
                  td * 1e3);
    }
    p.route = ZGPU_ROUTE_HOST;
    p.predicted = th;
    zg_route_learn(&cold, &p, th / 2);
    CHECK(fabs(cold.factor[ZG_RC_ZSTD][ZG_RP_HIGH][0][one_size][0] - 0.5) < 1e-9);
    /* the chosen route gives way to the other (within 4x) again after ZG_ROUTE_REEXPLORE reads or more, once its
     * extra time is at most ZG_ROUTE_REEXPLORE_SHARE of theirs: every kstar + 1 reads */
    zg_route_memory re;
    memset(&re, 0, sizeof re);
    zg_route_read crop = read_of(ZG_RC_ZSTD, 1, 8388608.0, 1.05);
    int found = 0; /* (a read whose device route wins by less than 4x) */
    for (int c = 0; c < ZG_RC_N && !found; c++)
        for (size_t k = 1; k <= 64 && !found; k *= 2) {
            crop = read_of((zg_route_codec)c, k, 8388608.0, 1.1);
            zg_route_choose(&m, &crop, &th, &td);
            found = td < th && th < 4 * td;
        }
    CHECK(found);
    const double need = (th - td) / (ZG_ROUTE_REEXPLORE_SHARE * td);
    const int kstar = need > ZG_ROUTE_REEXPLORE ? (int)ceil(need) : ZG_ROUTE_REEXPLORE;
    int explored = 0, device = 0, last = -1, gaps_ok = 1, reads_n = 2 * 4 * (int)ceil(th / td) + 4 * (kstar + 2);
    for (int k = 0; k < reads_n; k++) {
        p = zg_route_decide(&m, &re, &crop);
        if (p.explored) {
            if (explored >= 1 && (k - last < kstar + 1 || k - last > kstar + 2)) {
                gaps_ok = 0;
                fprintf(stderr, "  re-exploration %d reads after the one before (expected %d)\n", k - last, kstar + 1);
            }
            explored++;
            last = k;
        }
        device += p.route == ZGPU_ROUTE_DEVICE;
        zg_route_learn(&re, &p, p.route == ZGPU_ROUTE_DEVICE ? td : th);
    }
    CHECK_MSG(explored >= 4 && gaps_ok && device == reads_n - explored,
              "%d explorations in %d reads (host %.2f ms, device %.2f ms: every %d reads)", explored, reads_n, th * 1e3,
              td * 1e3, kstar + 1);
    /* a route 3x slower tried again only once the reads since make its extra time small: not every 64 reads */
    zg_route_memory slow;
    memset(&slow, 0, sizeof slow);
    int tries = 0;
    for (int k = 0; k < 1280; k++) {
        p = zg_route_decide(&m, &slow, &crop);
        tries += p.explored;
        zg_route_learn(&slow, &p, p.route == ZGPU_ROUTE_DEVICE ? td : 3 * td);
    }
    /* (its extra time, 2x the device read's, is 2% of 100 device reads: one try every 101 reads once its factor has
     * learnt the 3x, a few more before; every 64 reads would be 20, 3.1% of the reads' time) */
    CHECK_MSG(tries >= 2 && tries < 1280 / ZG_ROUTE_REEXPLORE && tries * 2 * td <= 0.025 * 1280 * td,
              "%d tries of a route 3x slower in 1280 reads", tries);
    /* small reads learn apart from larger ones of the same slot (H100, field blosc volume: 1x256x256 patches took 5x
     * their host prediction of 0.09 ms, and their factor sent single crops, about as predicted on the host, to the
     * device at 4.2 ms against 2.2) */
    zg_route_memory sized;
    memset(&sized, 0, sizeof sized);
    zg_route_read patch = read_of(ZG_RC_LZ4, 4, 16777216.0, 1.8), crop1 = read_of(ZG_RC_LZ4, 1, 16777216.0, 1.8);
    patch.host_part = 0.01;
    patch.box_bytes = 256 * 256 * 4;
    crop1.host_part = 0.49;
    crop1.host_split = 15;
    crop1.box_bytes = 32 * 128 * 128 * 4;
    double ch, cd, ph, pd;
    zg_route_choose(&m, &crop1, &ch, &cd);
    zg_route_choose(&m, &patch, &ph, &pd);
    CHECK_MSG(ch < cd && ch * 5 > cd && ph < 0.25e-3 && ch > 0.25e-3, "crop host %.2f device %.2f ms, patch host %.2f ms",
              ch * 1e3, cd * 1e3, ph * 1e3);
    for (int k = 0; k < 100; k++) {
        p = zg_route_decide(&m, &sized, &patch);
        zg_route_learn(&sized, &p, p.route == ZGPU_ROUTE_HOST ? 5 * ph : pd);
    }
    zg_route_pick pc = zg_route_decide(&m, &sized, &crop1);
    CHECK_MSG(pc.regime == p.regime && pc.size != p.size && pc.route == ZGPU_ROUTE_HOST,
              "crop: regime %d size %d route %d; patch: regime %d size %d", pc.regime, pc.size, (int)pc.route, p.regime,
              p.size);
    /* while the other route of its class is measured as soon as the regime's reads, every class's, afford it */
    zg_route_learn(&sized, &pc, ch);
    pc = zg_route_decide(&m, &sized, &crop1);
    CHECK_MSG(pc.explored && pc.route == ZGPU_ROUTE_DEVICE, "the crop's device route was not tried (%d)", (int)pc.route);
    /* nonsense times change nothing */
    zg_route_memory before = mem;
    zg_route_learn(&mem, &p, -1);
    zg_route_learn(&mem, &p, NAN);
    CHECK(!memcmp(&before, &mem, sizeof mem));
}

int main(void) {
    decisions();
    learning();
    file_round_trip();
    TEST_MAIN_END();
}
