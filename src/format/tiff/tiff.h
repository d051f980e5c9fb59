/* TIFF as arrays (docs/tiff.md): the parser of classic TIFF and BigTIFF (both byte orders, IFD chains, SubIFDs,
 * tiles and strips, GeoTIFF keys) and the arrays a file opens as, each a sharded array of one object (the file)
 * whose shard index is the page's TileOffsets / TileByteCounts (codec/sharding.h, a fixed index), so that reads
 * plan, fetch and decode as any Zarr array's do, on the host and on the device.
 *
 * The parser reads only through a callback and checks every offset, count and size against the file before it
 * allocates or reads: a hostile file (IFD loops, offsets past the end, counts that do not match the layout,
 * absurd sizes) is ZGPU_ERR_CORRUPT_DATA (or UNSUPPORTED for valid TIFF zgpu does not read) naming the file,
 * the page and the tag. */
#ifndef ZG_TIFF_H
#define ZG_TIFF_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

/* Limits on what a file may ask for: far beyond real files, small enough that no check overflows. */
#define ZG_TIFF_MAX_PAGES 65536          /* IFDs in the main chain */
#define ZG_TIFF_MAX_SUBIFDS 64           /* SubIFDs of one page */
#define ZG_TIFF_MAX_ENTRIES 4096         /* entries of one IFD */
#define ZG_TIFF_MAX_CHUNKS ((uint64_t)1 << 26) /* tiles or strips of one page (their index: 16 bytes each) */
#define ZG_TIFF_MAX_CHUNK_BYTES ((uint64_t)1 << 31) /* decoded bytes of one tile or strip */

/* Reads `n` bytes at `offset` of the file into out; ranges were checked against the size. */
typedef zgpu_status (*zg_tiff_read_fn)(void *user, uint64_t offset, uint64_t n, uint8_t *out);

typedef struct zg_tiff_page {
    uint64_t ifd_offset;
    int index;                /* position in the main IFD chain (a SubIFD: its parent's) */
    int subifd;               /* -1: a page of the main chain; else which SubIFD of page `index` */
    uint32_t subfile_type;    /* NewSubfileType: bit 0 reduced resolution, bit 1 page of many, bit 2 mask */
    uint64_t width, height;
    uint32_t samples;         /* SamplesPerPixel */
    uint32_t bits;            /* BitsPerSample (the same for every sample) */
    uint32_t sample_format;   /* 1 uint, 2 int, 3 float */
    uint32_t planar;          /* 1 chunky, 2 planar */
    uint32_t compression;
    uint32_t predictor;       /* 1 none, 2, 3 */
    uint32_t photometric;
    int tiled;
    uint64_t tile_width, tile_height; /* strips: the width, RowsPerStrip (at most the height) */
    uint64_t tiles_across, tiles_down, planes; /* planes: samples for planar 2, else 1 */
    uint64_t n_chunks;        /* tiles_across * tiles_down * planes */
    uint64_t *offsets, *counts; /* n_chunks each */
    uint8_t *jpeg_tables;
    size_t jpeg_tables_n;
    uint64_t n_subifds;
    uint64_t *subifd_offsets;
    /* GeoTIFF and GDAL */
    double *tiepoints;        /* ModelTiepoint: 6 values each */
    size_t n_tiepoints;
    double pixel_scale[3];
    int has_pixel_scale;
    double transform[16];
    int has_transform;
    uint16_t *geokeys;        /* GeoKeyDirectory, as SHORTs */
    size_t n_geokeys;
    double *geo_doubles;
    size_t n_geo_doubles;
    char *geo_ascii;
    char *nodata;             /* GDAL_NODATA's text */
} zg_tiff_page;

typedef struct zg_tiff_file {
    char *name;               /* for messages */
    uint64_t size;
    int big_endian, bigtiff;
    zg_tiff_page *pages;      /* the main chain, then every page's SubIFDs */
    size_t n_pages, n_main;   /* n_main: pages of the main chain (the first n_main) */
} zg_tiff_file;

/** 1 when the first bytes (at least 4) are a TIFF or BigTIFF header. */
int zg_tiff_magic(const uint8_t *head, size_t n);
/** Parses the file's IFDs (main chain and SubIFDs) into *out; `name` names it in messages. Each page is checked:
 *  sizes, the data type, the layout and the tile tables (count = the layout's, every range within the file). */
zgpu_status zg_tiff_parse(zg_tiff_read_fn read, void *user, uint64_t size, const char *name, zg_tiff_file *out);
void zg_tiff_free(zg_tiff_file *f);

/** The zgpu data type name of a page's samples ("uint16", "float32", ...). */
const char *zg_tiff_dtype_name(const zg_tiff_page *p);
/** A readable name of a Compression value ("LZW", "Deflate", ...; "unknown"). */
const char *zg_tiff_compression_name(uint32_t compression);

struct zgpu_context;
struct zgpu_array;
/** Opens a TIFF at `path` as an array: `path` may end with "#page=K" (the K-th IFD of the main chain) or
 *  "#level=K" (0: the full-resolution image, a stack of its pages where they are alike; K >= 1: the K-th reduced
 *  resolution level, from SubIFDs or from reduced-resolution pages). Read-only. ZGPU_ERR_NOT_FOUND when nothing
 *  TIFF is there (*is_tiff = 0). */
zgpu_status zg_tiff_open_array(struct zgpu_context *ctx, const char *path, struct zgpu_array **out, int *is_tiff);
/** 1 when `path` names a TIFF file (a local regular file with TIFF's magic bytes, or a URL ending in .tif/.tiff,
 *  each possibly with a "#page=" / "#level=" selector). */
int zg_tiff_path_is_tiff(const char *path);

#endif
