/* Which route a device read takes: GPU decode (the device executor) or the host read into pinned memory plus
 * one copy (the host route). A small cost model of the read (chunks, their decoded size, compression ratio,
 * codec) and of the machine (calibrated once per machine and GPU by timing both routes on synthetic arrays,
 * kept on disk: device/calibrate.c). Plain C: the model and its file are unit-tested without a GPU. */
#ifndef ZG_ROUTE_H
#define ZG_ROUTE_H
#include <stddef.h>

#include "zgpu.h"

/* The codec classes the model tells apart: what decodes the chunks on the GPU. */
typedef enum zg_route_codec {
    ZG_RC_NONE = 0, /* uncompressed (copies) */
    ZG_RC_ZSTD,     /* zgpu's zstd decoder (also blosc's zstd streams) */
    ZG_RC_DEFLATE,  /* zgpu's DEFLATE decoder (gzip, zlib, blosc's zlib) */
    ZG_RC_LZ4,      /* blosc's LZ4 streams */
    ZG_RC_N
} zg_route_codec;

#define ZG_ROUTE_CACHE_BIAS 2.0

/* Bytes of one piece of a host read decoded on the GPU as it comes back (device/host_dest.c): the copy back takes
 * its box bytes over the link plus one piece (the pipeline's fill). */
#define ZG_ROUTE_BACK_PIECE ((size_t)16 << 20)

/* Calibration points per codec: a low-ratio and a high-ratio synthetic array. */
enum { ZG_RP_LOW = 0, ZG_RP_HIGH, ZG_RP_N };

/* One calibration point, each route timed (seconds) on data compressing `ratio`:1: a box of a missing chunk (its
 * fixed cost), one chunk of `bytes` and one of `big_bytes` (the latency of a lone chunk, which grows with its size
 * differently on each side: zgpu's zstd decoder spreads a chunk's blocks over the GPU, a label chunk's matches
 * are one chain), and many chunks of `bytes` at once (the throughput with every host thread or the whole GPU).
 * A read of k chunks of B bytes: fixed + max(latency(B), k * per_chunk * B / bytes). */
typedef struct zg_route_point {
    double ratio, bytes, big_bytes;
    double h0, h1, h1_big, hn; /* host route: fixed cost; one chunk, one big chunk; a chunk's share of many */
    double d0, d1, d1_big, dn; /* device route: the same */
} zg_route_point;

typedef struct zg_route_model {
    int threads;                              /* host threads the host times were taken with */
    double h2d_bps;                           /* pinned host -> device bytes a second */
    int calibrated;                           /* 0: zgpu's defaults (measured on an H100, 16 threads) */
    zg_route_point pt[ZG_RC_N][ZG_RP_N];
} zg_route_model;

/* What the model needs to know of a read. */
typedef struct zg_route_read {
    zg_route_codec codec;
    int gpu_decodes;      /* 0: the chain has no GPU decoder (its chunks decode on host threads either way) */
    size_t chunks;        /* distinct chunks to decode */
    size_t cached;        /* distinct chunks the context's cache holds (the device route copies them whole) */
    size_t dev_cached;    /* distinct chunks the device cache holds: the device route scatters them from device
                           * memory; the host route decodes them as any other */
    int cache_on;         /* the host cache is on and the device cache off: the host route fills a cache and the
                           * device route does not, so the host route is taken up to ZG_ROUTE_CACHE_BIAS times the
                           * device route's time, for the reads after it to hit */
    double chunk_bytes;   /* decoded bytes of one */
    double host_part;     /* the share of chunk_bytes a host decode takes on average (partial decodes: the blosc blocks
                           * holding what each box needs; a zstd frame's start up to the last byte its boxes need,
                           * src/device/read.c); 0: all of it */
    double host_split;    /* how much faster a lone chunk decodes on the host when a read of fewer chunks than
                           * threads splits it: blosc, the pieces its boxes are cut into (host/host_read.h); zstd,
                           * zg_chain_split_speedup (codec/zstd_split.h); 0 or 1: one thread a chunk */
    double ratio;         /* decoded / stored bytes (0: unknown) */
    double box_bytes;     /* bytes the read writes into its destinations */
    int threads;          /* the context's host threads */
    int host_dest;        /* the destinations are host memory (zgpu_tuning.host_read_route): the host route decodes
                           * into them with no copy, the device route copies the boxes back (device -> pinned ->
                           * destination, one piece crossing while the one before is copied out) */
} zg_route_read;

/* What the reads of a process taught the model: per codec class, ratio (low or high half of the calibrated range),
 * regime (few chunks or many) and size, each route's measured time over its prediction (a running mean: the
 * calibration's synthetic arrays are not the caller's data; the GPU DEFLATE decoder's speed, for one, depends on
 * where its streams' blocks start), and how many reads took it. Guarded by its owner (device/calibrate.c). */
#define ZG_ROUTE_REGIMES 4
/* Size classes: the host route's prediction before what was learnt, in steps of 4x from 0.25 ms (a read's fixed
 * costs the model leaves out weigh on a small read and not on a large one: on an H100, 1x256x256 patches of the
 * field blosc volume took 5x their host prediction of 0.09 ms, crops of the same slot about their 1-4 ms, and the
 * patches' factor sent single crops to the device at 4.2 ms against 2.2 on the host). */
#define ZG_ROUTE_SIZES 5
typedef struct zg_route_memory {
    /* [codec][ratio half][regime: 0 a lone chunk's latency dominates the prediction, 1 many chunks' throughput;
     * plus 2 when the read wants under half of what it decodes (its boxes, or the host's partial decodes, under
     * half of its chunks' bytes): the model's error for a plane or a crop is not a whole read's (on the H200 a
     * plane of the sharded label volume took 0.4x its host prediction, and the whole volume, taught by it, went to
     * the host at 13 ms against 5.5 ms)][size class][0 host route, 1 device route]; factor 0 = none yet (1) */
    double factor[ZG_RC_N][ZG_RP_N][ZG_ROUTE_REGIMES][ZG_ROUTE_SIZES][2];
    unsigned reads[ZG_RC_N][ZG_RP_N][ZG_ROUTE_REGIMES][ZG_ROUTE_SIZES][2];
    double spent[ZG_RC_N][ZG_RP_N][ZG_ROUTE_REGIMES][ZG_ROUTE_SIZES]; /* seconds the slot's reads took, both routes */
    /* the slot's reads since it last tried the route it did not pick, and their seconds */
    unsigned since_reads[ZG_RC_N][ZG_RP_N][ZG_ROUTE_REGIMES][ZG_ROUTE_SIZES];
    double since_spent[ZG_RC_N][ZG_RP_N][ZG_ROUTE_REGIMES][ZG_ROUTE_SIZES];
} zg_route_memory;

/* A decision, kept until the read's time is known (zg_route_learn). */
typedef struct zg_route_pick {
    zgpu_route route;
    int codec, band, regime, size; /* the memory's slot */
    double predicted;      /* the model's time for the route taken, before correction (seconds) */
    int explored;          /* 1: the other route was predicted faster, this one is tried once to learn its factor */
    double t_host, t_device; /* each route's prediction with what was learnt (seconds; for traces) */
} zg_route_pick;

/* A slot's picked route gives way to the other one (predicted within 4x) again after at least this many reads of the
 * slot, and only once its predicted extra time is at most ZG_ROUTE_REEXPLORE_SHARE of what the slot's reads took
 * since it was last tried: a label crop's device route (3.7 ms against 0.6 on the host, H200) tried every 64 reads
 * cost 8% of the reads' time; now 2% at most. */
#define ZG_ROUTE_REEXPLORE 64
#define ZG_ROUTE_REEXPLORE_SHARE 0.02
/* A route is tried against the model only while its predicted extra time is at most this share of what the slot's
 * reads took so far: exploring costs a process at most about a quarter more (zgpu cp --device of a 1 GiB gzip
 * array in two 512 MiB slabs spent 0.7 s on the host route trying it for the second slab, after 0.32 s for the
 * first on the GPU). */
#define ZG_ROUTE_EXPLORE_SHARE 0.25

/** zg_route_choose with what the process learnt: each prediction times its route's factor; and a later read of a
 *  slot whose other route has never run, and is predicted within 8x of the chosen one, takes that other route once
 *  (so a route the calibration misjudged gets measured: the H200's synthetic gzip arrays made its GPU route look 6x
 *  slower than on real data), only while its predicted extra time is at most ZG_ROUTE_EXPLORE_SHARE of what the
 *  reads of the slot's regime (every size class) took so far (else a later read tries it); and the slot retries the
 *  other one when it is predicted within 4x (a factor a slow read inflated gets measured again), after
 *  ZG_ROUTE_REEXPLORE reads or more, once the extra time is at most ZG_ROUTE_REEXPLORE_SHARE of theirs. mem NULL:
 *  the model alone. */
zg_route_pick zg_route_decide(const zg_route_model *m, const zg_route_memory *mem, const zg_route_read *r);
/** A read that took p.route lasted `seconds`: that route's factor of the slot moves toward seconds / predicted. */
void zg_route_learn(zg_route_memory *mem, const zg_route_pick *p, double seconds);

/** zgpu's defaults (no calibration yet, or none possible): figures measured on an H100 with 16 threads. */
void zg_route_model_default(zg_route_model *m);
/** The route the model predicts faster for r, and both predictions (seconds; NULL allowed). */
zgpu_route zg_route_choose(const zg_route_model *m, const zg_route_read *r, double *t_host, double *t_device);

/** The model file's name for a GPU (name and UUID identify it; the zgpu version is in the file): into out[n]. */
void zg_route_file_name(const char *gpu_name, const char *gpu_uuid, char *out, size_t n);
/** Reads a model written by zg_route_model_save for `key` (the GPU's name, UUID and zgpu's version): 1 and *m
 *  filled, or 0 when the file is missing, for another key, or damaged (then it is ignored and re-measured). */
int zg_route_model_load(const char *path, const char *key, zg_route_model *m);
/** Writes the model atomically (a temporary in the same directory, then rename; the directory is created).
 *  0 on success, else -1 (the model then lives in memory only). */
int zg_route_model_save(const char *path, const char *key, const zg_route_model *m);

#endif
