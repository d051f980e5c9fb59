/*
 * zgpu — chunked, compressed N-dimensional arrays (Zarr v2 and v3) into host or GPU memory.
 *
 * Conventions (apply to every function below unless it says otherwise):
 *  - Fallible functions return a zgpu_status. ZGPU_OK (0) is success. On failure, zgpu_last_error()
 *    returns a message for the calling thread that names the array, the chunk key and the codec involved.
 *  - Handles are opaque. Every *_free / *_close accepts NULL.
 *  - Strings returned through `char **` are allocated by zgpu and owned by the caller: free them with
 *    zgpu_free(). `const char *` results are owned by the handle and live as long as it does.
 *  - Arrays of shape/start/count values are uint64_t[ndim], C order (slowest axis first).
 *  - In-memory element values are always native-endian, whatever endianness the array stores.
 *  - Building metadata documents (data type names, fill values, codec specs, default chunks): zgpu_meta.h.
 *  - Thread safety: a zgpu_context may be shared by any number of threads. A zgpu_array may be read by
 *    many threads at once; writes, resize and attribute updates to one array need external serialisation
 *    against every other use of that array. Groups follow the same rule as arrays.
 */
#ifndef ZGPU_H
#define ZGPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZGPU_VERSION_MAJOR 0
#define ZGPU_VERSION_MINOR 1
#define ZGPU_VERSION_PATCH 0
#define ZGPU_VERSION_NUMBER (ZGPU_VERSION_MAJOR * 10000 + ZGPU_VERSION_MINOR * 100 + ZGPU_VERSION_PATCH)
#define ZGPU_MAX_DIMS 32

#if defined(__GNUC__)
#define ZGPU_API __attribute__((visibility("default")))
#else
#define ZGPU_API
#endif

/** Run-time version: ZGPU_VERSION_NUMBER of the library actually linked. */
ZGPU_API unsigned zgpu_version_number(void);
/** "MAJOR.MINOR.PATCH". Static storage. */
ZGPU_API const char *zgpu_version_string(void);

typedef enum zgpu_status {
    ZGPU_OK = 0,
    ZGPU_ERR_INVALID_ARGUMENT = 1, /* the caller passed something unusable (NULL, wrong ndim, bad stride) */
    ZGPU_ERR_NOT_FOUND = 2,        /* no array/group/key at that path */
    ZGPU_ERR_EXISTS = 3,           /* create without overwrite over an existing node */
    ZGPU_ERR_IO = 4,               /* the operating system failed a read/write/rename */
    ZGPU_ERR_BAD_METADATA = 5,     /* zarr.json / .zarray / .zattrs are malformed or inconsistent */
    ZGPU_ERR_UNSUPPORTED = 6,      /* valid Zarr that zgpu does not implement (data type, codec, extension) */
    ZGPU_ERR_CORRUPT_DATA = 7,     /* a stored chunk or shard fails to decode or has the wrong size/checksum */
    ZGPU_ERR_OUT_OF_RANGE = 8,     /* a selection outside the array's shape */
    ZGPU_ERR_NO_MEMORY = 9,        /* host or device allocation failed, or the memory budget is too small */
    ZGPU_ERR_NO_GPU = 10,          /* a device operation on a build or machine without a usable GPU */
    ZGPU_ERR_CUDA = 11,            /* the CUDA runtime, cuFile or nvCOMP reported an error */
    ZGPU_ERR_INTERNAL = 12         /* a bug in zgpu: please report it with the message */
} zgpu_status;

/** The number of status values: every status is in [0, ZGPU_STATUS_COUNT). */
#define ZGPU_STATUS_COUNT 13
/** Short constant name of a status, e.g. "ZGPU_ERR_CORRUPT_DATA"; "ZGPU_ERR_UNKNOWN" for other numbers. Static. */
ZGPU_API const char *zgpu_status_name(zgpu_status status);
/** One-line description of a status, e.g. "a stored chunk or shard failed to decode". Static storage. */
ZGPU_API const char *zgpu_status_message(zgpu_status status);
/** Message of the last failed call on this thread ("" if none). Valid until the next zgpu call on this thread. */
ZGPU_API const char *zgpu_last_error(void);
/** Frees memory that zgpu returned through a `char **` or `void **`. Accepts NULL. */
ZGPU_API void zgpu_free(void *ptr);

/* ------------------------------------------------------------------------------------------------
 * Context: thread pool, GPU settings. Create one per process and share it.
 * ---------------------------------------------------------------------------------------------- */
typedef struct zgpu_context zgpu_context;
struct zgpu_tuning; /* include/zgpu_experimental.h */

typedef enum zgpu_gds_mode {
    ZGPU_GDS_AUTO = 0, /* use GPUDirect Storage when libcufile loads, is not in compatibility mode and accepts
                        * the store's files (one is registered first); else pinned host staging */
    ZGPU_GDS_OFF = 1,  /* always read through pinned host staging */
    ZGPU_GDS_ON = 2    /* require GDS (compatibility mode allowed); a device read fails, saying why, if cuFile
                        * does not load or refuses the store's files */
} zgpu_gds_mode;

/* Remote stores: every function that takes a path also takes http://, https:// and s3://bucket/prefix URLs
 * (file:// too); another scheme is ZGPU_ERR_UNSUPPORTED. How they are reached is set here; zero fields take
 * the defaults. docs/remote.md says more. */
typedef enum zgpu_s3_addressing {
    ZGPU_S3_ADDRESSING_AUTO = 0,    /* virtual-host style on AWS, path style on a custom endpoint */
    ZGPU_S3_ADDRESSING_PATH = 1,    /* https://endpoint/bucket/key */
    ZGPU_S3_ADDRESSING_VIRTUAL = 2  /* https://bucket.endpoint/key */
} zgpu_s3_addressing;

typedef struct zgpu_remote_options {
    size_t struct_size;          /* sizeof(zgpu_remote_options) */
    int max_in_flight;           /* requests in flight at once per batch over HTTP/2; 0 = 64 */
    int connect_timeout_ms;      /* 0 = 10000 */
    int request_timeout_ms;      /* one attempt of one request; 0 = 60000 */
    int max_retries;             /* after a 5xx, 429, 408, timeout, reset or short body: 0 = 6, -1 = none */
    int retry_base_ms;           /* first backoff (doubling, with full jitter, capped at 10 s); 0 = 100 */
    int tls_no_verify;           /* 1: do not verify TLS certificates (never for data you care about) */
    const char *ca_file;         /* a CA bundle instead of the system's; NULL = system */
    long long range_merge_gap;   /* ranges of one object (a shard's inner chunks) at most this many bytes apart are
                                  * fetched as one request; 0 = 64 KiB, -1 = never merge */
    const char *s3_endpoint;     /* e.g. "http://127.0.0.1:9000" (MinIO, Ceph, moto); NULL = AWS_ENDPOINT_URL_S3,
                                  * AWS_ENDPOINT_URL, the profile's endpoint_url, else AWS */
    const char *s3_region;       /* NULL = AWS_REGION, AWS_DEFAULT_REGION, the profile's region, else us-east-1 */
    const char *s3_profile;      /* NULL = AWS_PROFILE, else "default" (~/.aws/credentials and ~/.aws/config) */
    int s3_anonymous;            /* 1: unsigned requests (public buckets), whatever credentials exist */
    zgpu_s3_addressing s3_addressing;
    unsigned long long multipart_threshold; /* S3 objects at least this large are written in parts; 0 = 64 MiB */
    unsigned long long multipart_part_size; /* 0 = 16 MiB (S3's minimum is 5 MiB) */
    int max_host_connections;    /* HTTP/1.1: connections to a host, and so requests in flight, per batch; 0 = 16
                                  * (HTTP/2 multiplexes max_in_flight requests over fewer) */
    unsigned long long window_bytes; /* host reads and writes go in windows of about this many bytes of chunks: a
                                  * window's requests are in flight while the window before decodes (or encodes),
                                  * and the stored bytes held at once stay near it; 0 = 256 MiB */
    int fetch_threads;           /* threads receiving one batch of requests (each with a share of the connections);
                                  * 0 = the context's num_threads (at most max_host_connections are used) */
    long long shard_index_cache_bytes; /* sharded arrays: decoded shard indexes kept for later reads (each checked
                                  * against its shard's ETag with If-Match on every inner-chunk request: a shard
                                  * replaced meanwhile is read again, index and all), per context; 0 = 32 MiB,
                                  * -1 = off (every read fetches its shards' indexes) */
} zgpu_remote_options;

/** Fills *o with defaults (struct_size set). */
ZGPU_API void zgpu_remote_options_init(zgpu_remote_options *o);

typedef struct zgpu_context_options {
    size_t struct_size;          /* sizeof(zgpu_context_options): lets the struct grow compatibly */
    int num_threads;             /* host decode threads; 0 = number of online CPUs */
    int device;                  /* CUDA device ordinal used by device reads; default 0 */
    size_t device_memory_budget; /* bytes of staging + scratch for device reads (two waves in flight); 0 = an
                                    eighth of the GPU's memory, between 256 MiB and 16 GiB */
    zgpu_gds_mode gds_mode;
    int gpu_decode;              /* 1 (default): decode on the GPU where a GPU decoder exists; 0: CPU fallback */
    int gpu_trust_input;         /* Only for nvCOMP's DEFLATE decoder (tuning deflate_decoder = NVCOMP), which needs
                                  * valid input: 1 lets it decode gzip / zlib chunks after the host header checks,
                                  * for data you trust (a corrupt stream may fault the CUDA context); 0 (default):
                                  * host threads decode them instead. zgpu's own DEFLATE decoder (the default)
                                  * checks every stream itself and needs no trust; zstd and LZ4 always decode on
                                  * the GPU (their host checks cover block structure and sizes). */
    const struct zgpu_tuning *tuning; /* NULL (default): zgpu's defaults. Experimental knobs of the device path
                                  * (decoders, waves, diagnostics): include/zgpu_experimental.h, unstable. The
                                  * context copies it at creation. */
    size_t max_decoded_chunk_bytes; /* Cap on what a stage of a chunk's decode may produce where neither its
                                  * exact size nor a bound is known from the chunk's shape and the codecs before
                                  * it (every other stage is held to those: a compressor behind a filter to the
                                  * exact size, one after another compressor or sharding_indexed to that codec's
                                  * bound; all codecs zgpu ships give one, so the cap is for codecs that do not);
                                  * past it the decode stops with ZGPU_ERR_CORRUPT_DATA. 0 (default): 4x the
                                  * chunk's (or shard's) decoded size, at least 1 MiB. */
    int confine_to_store;        /* 1: reads and writes stay inside the store's directory tree: a symbolic link
                                  * that leads outside it is refused (for serving untrusted data). 0 (default):
                                  * links are followed, as zarr-python follows them. */
    const zgpu_remote_options *remote; /* NULL: defaults. Copied (strings too) by zgpu_context_create. */
    size_t cache_bytes;          /* decoded-chunk cache: up to this many bytes of decoded chunks kept in host
                                  * memory (least recently used dropped first), shared by every array and thread
                                  * of the context, serving host and device reads; a write through zgpu drops the
                                  * chunks it changes. 0 (default): off, as tensorstore's cache_pool. */
    size_t device_cache_bytes;   /* decoded-chunk cache in device memory (the context's device): device reads that
                                  * decode chunks on the GPU keep up to this many bytes of them there (least
                                  * recently used dropped first; a chunk over a quarter of it is not kept), and a
                                  * later device read of a kept chunk scatters it from there: no read, copy or
                                  * decode. Outside device_memory_budget; a write through zgpu drops the chunks it
                                  * changes. Independent of cache_bytes (both may be on). 0 (default): off. */
} zgpu_context_options;

/** Fills *opts with defaults (struct_size set). */
ZGPU_API void zgpu_context_options_init(zgpu_context_options *opts);
/** opts may be NULL for defaults. *out is owned by the caller: zgpu_context_free(). */
ZGPU_API zgpu_status zgpu_context_create(const zgpu_context_options *opts, zgpu_context **out);
/** Frees the context. All arrays and groups opened with it must be closed first. */
ZGPU_API void zgpu_context_free(zgpu_context *ctx);
/** 1 if this build has CUDA support and a CUDA device is usable, else 0 (and zgpu_last_error says why). */
ZGPU_API int zgpu_gpu_available(void);

/* ------------------------------------------------------------------------------------------------
 * Data types
 * ---------------------------------------------------------------------------------------------- */
typedef enum zgpu_dtype {
    ZGPU_BOOL = 1,
    ZGPU_INT8, ZGPU_INT16, ZGPU_INT32, ZGPU_INT64,
    ZGPU_UINT8, ZGPU_UINT16, ZGPU_UINT32, ZGPU_UINT64,
    ZGPU_FLOAT16, ZGPU_FLOAT32, ZGPU_FLOAT64,
    ZGPU_COMPLEX64, ZGPU_COMPLEX128,
    ZGPU_RAW, /* Zarr v3 "rN": N/8 opaque bytes per element (also v2 structured records: zgpu_array_numpy_dtype) */
    ZGPU_STRING, /* variable-length UTF-8 strings (v3 "string", v2 "|O" + vlen-utf8); itemsize 0: zgpu_array_read_vlen */
    ZGPU_BYTES   /* variable-length bytes (v3 "variable_length_bytes", v2 "|O" + vlen-bytes); itemsize 0 */
} zgpu_dtype;

/* ------------------------------------------------------------------------------------------------
 * Arrays
 * ---------------------------------------------------------------------------------------------- */
typedef struct zgpu_array zgpu_array;

/**
 * Opens the array stored at `path` (a directory holding zarr.json or .zarray). The Zarr format is
 * detected (v3 first). *out is owned by the caller: zgpu_array_close(). The context must outlive it.
 */
ZGPU_API zgpu_status zgpu_array_open(zgpu_context *ctx, const char *path, zgpu_array **out);

/** Bits of zgpu_array_create's `overwrite` argument (0 and 1 keep their old meaning). */
#define ZGPU_CREATE_OVERWRITE 1 /* replace the node (or non-empty directory) at the path */
#define ZGPU_CREATE_STAGED 2    /* build the array beside the path; it appears there at zgpu_array_commit */

/**
 * Creates an array at `path` from a metadata document: the text of a Zarr v3 zarr.json (node_type "array")
 * or of a Zarr v2 .zarray (the format is read from "zarr_format"). For v2, attributes may be passed in a
 * top-level "attributes" member, which is written to .zattrs. Missing parent directories are created.
 * `overwrite` is 0 or a combination of ZGPU_CREATE_* bits (other bits: ZGPU_ERR_INVALID_ARGUMENT):
 *  - 0: ZGPU_ERR_EXISTS if a node is there. The array (metadata first) is made in place.
 *  - ZGPU_CREATE_OVERWRITE (1): a node (or a non-empty directory, as zarr-python's mode "w") at the path is
 *    replaced atomically: the new, empty array is built in a hidden directory beside it
 *    (".NAME.zgpu-stage-*") and swapped in with renames before this returns; then the old tree is deleted. An
 *    interruption at any moment leaves the old node whole or the new array in its place; if the old tree cannot
 *    be deleted, it stays hidden beside the path (never mixed with the new array) and the next writer of the
 *    path removes it.
 *  - ZGPU_CREATE_STAGED (2), alone or with OVERWRITE: every write goes to the hidden staging directory, and
 *    readers of the path (other handles, processes, zarr-python) keep seeing what was there (or nothing) until
 *    zgpu_array_commit() swaps the finished array in, its metadata written last. Closing the array without a
 *    commit (or the process dying) discards the stage and leaves the path as it was. Without OVERWRITE, a
 *    node or a non-empty directory at the path is ZGPU_ERR_EXISTS (at creation, and again at the commit).
 *    Resizes and attribute changes of a staged array are written with its metadata at the commit.
 * Leftovers of writers killed while staging are recognised (their lock is free) and removed by the next
 * writer of the path; an opener finding nothing at the path puts back an old node a killed writer had moved.
 * A path that renames cannot replace (the root of a mount, or a directory whose parent is not writable): when
 * it is an empty directory, the array is built in it, its metadata still written last (at the commit when
 * staged; a discarded one empties it again); a node there is not replaced: ZGPU_ERR_IO.
 */
ZGPU_API zgpu_status zgpu_array_create(zgpu_context *ctx, const char *path, const char *metadata_json,
                                       int overwrite, zgpu_array **out);

/**
 * Commits an array created with ZGPU_CREATE_STAGED: writes its metadata into the staging directory, swaps it
 * in at the path (RENAME_EXCHANGE, or two renames where the filesystem lacks it) and deletes what was there.
 * The handle then reads and writes at the path. ZGPU_OK at once for an array that is not staged (or already
 * committed). On failure (ZGPU_ERR_EXISTS: a node appeared at the path meanwhile without OVERWRITE;
 * ZGPU_ERR_IO) the array stays staged: commit again, or close it to discard the stage.
 */
ZGPU_API zgpu_status zgpu_array_commit(zgpu_array *array);

/** Changes the shape (ndim unchanged). Chunks wholly outside the new shape are deleted. */
ZGPU_API zgpu_status zgpu_array_resize(zgpu_array *array, const uint64_t *new_shape);

/** Closes the array. Accepts NULL. A staged array that was not committed is discarded (see zgpu_array_create). */
ZGPU_API void zgpu_array_close(zgpu_array *array);

ZGPU_API int zgpu_array_zarr_format(const zgpu_array *array);           /* 2 or 3 */
ZGPU_API int zgpu_array_ndim(const zgpu_array *array);
ZGPU_API const char *zgpu_array_path(const zgpu_array *array);
/** Copies ndim values into shape. */
ZGPU_API void zgpu_array_shape(const zgpu_array *array, uint64_t *shape);
/** Shape of a read/write chunk: the inner chunk when sharded. */
ZGPU_API void zgpu_array_chunk_shape(const zgpu_array *array, uint64_t *chunk_shape);
/** Shape of a stored object: the shard shape when sharded (returns 1), else the chunk shape (returns 0). */
ZGPU_API int zgpu_array_shard_shape(const zgpu_array *array, uint64_t *shard_shape);
ZGPU_API zgpu_dtype zgpu_array_dtype(const zgpu_array *array);
ZGPU_API size_t zgpu_array_itemsize(const zgpu_array *array);
/** Zarr v3 data type name ("uint16", "complex64", "r24", "numpy.datetime64", "structured", "string",
 *  "variable_length_bytes"...), also for v2 arrays. */
ZGPU_API const char *zgpu_array_dtype_name(const zgpu_array *array);
/** The NumPy dtype of the elements as reads produce them, as JSON (*json: zgpu_free): a typestring in this host's
 *  byte order ("<u2", "|b1", "|V3", "<M8[10ms]", "<m8[s]"; "|O" for variable-length strings and bytes), or for a
 *  v2 structured array its field list as the .zarray stores it (records are read as stored: each field keeps its
 *  byte order). numpy.datetime64 / timedelta64 arrays report ZGPU_INT64 from zgpu_array_dtype (their values are
 *  int64 counts of the unit, NaT = INT64_MIN) and structured ones ZGPU_RAW of the record size. Thread-safe. */
ZGPU_API zgpu_status zgpu_array_numpy_dtype(const zgpu_array *array, char **json);
/** itemsize bytes of the fill value, native-endian (zeros for a v2 null fill value). */
ZGPU_API const void *zgpu_array_fill_value(const zgpu_array *array);
/** Whole metadata document as JSON (zarr.json for v3, .zarray merged with "attributes" for v2). */
ZGPU_API zgpu_status zgpu_array_metadata_json(const zgpu_array *array, char **json);
/** The codec chain as a Zarr v3 "codecs" JSON list (v2 filters/compressor/order expressed the same way). */
ZGPU_API zgpu_status zgpu_array_codecs_json(const zgpu_array *array, char **json);
/** Attributes as a JSON object text. */
ZGPU_API zgpu_status zgpu_array_attributes(const zgpu_array *array, char **json);
/** Replaces all attributes with the JSON object `json`, written to storage at once. */
ZGPU_API zgpu_status zgpu_array_set_attributes(zgpu_array *array, const char *json);
/** Number of chunk (or shard) objects present in storage and their total size in bytes; for an array opened from a
 *  TIFF file, the tiles (or strips) the file stores (not empty) and their bytes. */
ZGPU_API zgpu_status zgpu_array_storage_info(const zgpu_array *array, uint64_t *n_objects, uint64_t *n_bytes);

/**
 * Reads the box [start, start+count) into `out` (host memory).
 * out_strides: ndim byte strides of `out` (may be negative, must not overlap), or NULL for C-contiguous.
 * Missing chunks read as the fill value. Chunks decode in parallel on the context's thread pool.
 * Errors: ZGPU_ERR_OUT_OF_RANGE if the box leaves the array; ZGPU_ERR_CORRUPT_DATA naming the chunk and codec.
 * On error `out` may have been partly written.
 */
ZGPU_API zgpu_status zgpu_array_read(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                     void *out, const int64_t *out_strides);

/**
 * Writes `in` (layout as for read) into the box [start, start+count). Chunks partly covered are read,
 * merged and rewritten; each stored object is written under a temporary name and renamed into place.
 * Chunks that end up equal to the fill value everywhere are deleted rather than written.
 */
ZGPU_API zgpu_status zgpu_array_write(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                      const void *in, const int64_t *in_strides);

/* ------------------------------------------------------------------------------------------------
 * Variable-length elements: data types "string" (ZGPU_STRING) and "variable_length_bytes" (ZGPU_BYTES), stored
 * with the vlen-utf8 / vlen-bytes codecs (Zarr v3, and v2 "|O" arrays with those object codecs). Their elements have
 * no fixed size, so zgpu_array_read / _write / _read_regions and every device read refuse these arrays
 * (ZGPU_ERR_UNSUPPORTED naming the array and data type: variable-length elements cannot live in a strided host or
 * device array); a box of them is read and written as offsets + bytes instead. Chunks are handled one at a time
 * on the calling thread; sharded vlen arrays are not supported yet (ZGPU_ERR_UNSUPPORTED).
 * ---------------------------------------------------------------------------------------------- */
/**
 * Reads the box [start, start+count) of a variable-length array. Element i of the box (C order) is
 * (*data)[(*offsets)[i], (*offsets)[i+1]): UTF-8 without a terminator for strings, the bytes as stored for bytes.
 * *offsets: count-product + 1 entries, (*offsets)[0] = 0; *data: *data_size bytes (never NULL on success, also when
 * empty). Both are allocated by zgpu and owned by the caller: zgpu_free() each. Missing chunks read as the fill
 * value (zgpu_array_vlen_fill_value). Errors: ZGPU_ERR_INVALID_ARGUMENT for an array of fixed-size elements,
 * ZGPU_ERR_OUT_OF_RANGE, ZGPU_ERR_CORRUPT_DATA naming the array, the chunk and the codec (a truncated chunk, an item
 * count or length that does not fit the chunk, bytes after the last item, invalid UTF-8 in a string array). On
 * error nothing is returned (*offsets and *data NULL). Thread-safe as zgpu_array_read.
 */
ZGPU_API zgpu_status zgpu_array_read_vlen(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                          uint64_t **offsets, void **data, size_t *data_size);
/**
 * Writes the box [start, start+count) of a variable-length array: element i (C order) is
 * data[offsets[i], offsets[i+1]) (offsets: count-product + 1 non-decreasing entries, elements under 4 GiB;
 * data may be NULL when every element is empty). Both stay owned by the caller. String elements must be valid
 * UTF-8 (ZGPU_ERR_INVALID_ARGUMENT naming the element, before anything is written). Chunks partly covered are
 * read and merged; a chunk whose every element equals the fill value is deleted. Each chunk is written under the
 * store's write lock for it, as zgpu_array_write. Needs the same external serialisation as zgpu_array_write.
 */
ZGPU_API zgpu_status zgpu_array_write_vlen(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                           const uint64_t *offsets, const void *data);
/** The fill value of a variable-length array: *nbytes bytes (UTF-8 for strings), owned by the array; "" with
 *  *nbytes 0 for other arrays. nbytes may be NULL. */
ZGPU_API const void *zgpu_array_vlen_fill_value(const zgpu_array *array, size_t *nbytes);

/* ------------------------------------------------------------------------------------------------
 * Device reads and writes (GPU). On a build or machine without a GPU these return ZGPU_ERR_NO_GPU.
 * ---------------------------------------------------------------------------------------------- */
typedef struct zgpu_event zgpu_event;

/** How a device read decodes (zgpu_read_stats.route; force one with zgpu_tuning.read_route). */
typedef enum zgpu_route {
    ZGPU_ROUTE_AUTO = 0,   /* zgpu's cost model picks, per read (docs/tuning.md) */
    ZGPU_ROUTE_DEVICE = 1, /* batched decode on the GPU (host threads only for chunks no GPU decoder takes) */
    ZGPU_ROUTE_HOST = 2    /* the host read into pinned memory, then one copy to the device */
} zgpu_route;

/** Per-stage timings of the last device or host read on this array handle (seconds; 0 where not run).
 *  Device reads: decode_s is the GPU decode stage (CUDA events) plus the wall time of host decoding for
 *  CPU-fallback chunks. Host reads: io_s and decode_s are thread-seconds divided by the thread count. */
typedef struct zgpu_read_stats {
    size_t struct_size;
    double plan_s, io_s, h2d_s, decode_s, scatter_s, total_s;
    uint64_t stored_bytes, decoded_bytes;
    int chunks, waves;
    int gds_used;      /* 1 if GPUDirect Storage served the reads */
    int gpu_decoded;   /* chunks decoded on the GPU */
    int cpu_decoded;   /* chunks decoded on host threads (CPU fallback) */
    int cache_hits;    /* chunks served decoded by the context's caches (cache_bytes, device_cache_bytes) */
    int cache_misses;  /* chunks looked up there and in neither (0 with the caches off) */
    int route;         /* device reads: the zgpu_route taken (ZGPU_ROUTE_DEVICE or ZGPU_ROUTE_HOST); host reads:
                        * ZGPU_ROUTE_DEVICE when the GPU decoded it (zgpu_tuning.host_read_route), else 0 */
    int device_cache_hits; /* of cache_hits, the chunks the device cache (device_cache_bytes) served */
} zgpu_read_stats;

/**
 * Reads the box into device memory `device_out` (a CUDA device pointer on the context's device) with
 * byte strides (NULL = C-contiguous), ordered on `stream` (a cudaStream_t; NULL = the legacy default stream).
 * Returns when the data is in place (the stream is synchronised).
 */
ZGPU_API zgpu_status zgpu_array_read_device(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                            void *device_out, const int64_t *out_strides, void *stream);
/**
 * As zgpu_array_read_device, but returns at once; *event completes when the data is in place and the
 * work is ordered before later work on `stream`. The caller owns *event (zgpu_event_free) and must keep
 * `array` and `device_out` alive until it completes.
 */
ZGPU_API zgpu_status zgpu_array_read_device_async(zgpu_array *array, const uint64_t *start,
                                                  const uint64_t *count, void *device_out,
                                                  const int64_t *out_strides, void *stream, zgpu_event **event);
/**
 * Writes the box [start, start + count) from device memory `device_in` (a CUDA device pointer on the context's
 * device) with byte strides in_strides (NULL = C-contiguous; any strides, transposed layouts included), ordered
 * after the work already on `stream` (a cudaStream_t; NULL = the legacy default stream). Returns when the data is in
 * the store. The chunks are gathered on the GPU (partly covered ones merged with their stored value, read on the
 * GPU) and, where the array's codecs are a `bytes` codec and one of zstd (without checksum), gzip, zlib or lz4,
 * compressed there as one batch (nVIDIA's nvCOMP, loaded at run time); other codecs encode on host threads after
 * one copy a wave. Each chunk is written as host writes write it (a temporary name, then a rename; a chunk equal to
 * the fill value everywhere is deleted), under the same locks: it needs the same external serialisation as
 * zgpu_array_write. ZGPU_ERR_NO_GPU without CUDA or a GPU.
 */
ZGPU_API zgpu_status zgpu_array_write_device(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                             const void *device_in, const int64_t *in_strides, void *stream);
/**
 * As zgpu_array_write_device, but returns at once: the write runs on a background thread (on a stream of its own,
 * ordered after the work already on `stream` at the call; later work on `stream` is not ordered after it) and
 * *event completes when every object is written, or the write failed: zgpu_event_wait returns the write's status
 * and sets its message (zgpu_last_error), which names the array and the object. Errors known at the call (a NULL
 * event, a selection outside the array, zero strides, a read-only array) are returned at once, with nothing
 * started and *event NULL. Until the event completes the caller must keep `device_in` allocated and unchanged and
 * `array` open, and treat the array as being written (the serialisation zgpu_array_write needs); async writes of
 * one context run one after another. The caller owns *event (zgpu_event_free waits for the write if still running).
 * A write that fails part way leaves each object either old or new. ZGPU_ERR_NO_GPU without CUDA or a GPU.
 */
ZGPU_API zgpu_status zgpu_array_write_device_async(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                                   const void *device_in, const int64_t *in_strides, void *stream,
                                                   zgpu_event **event);
/** Blocks until the event's read or write finished; returns its status (and sets its message). */
ZGPU_API zgpu_status zgpu_event_wait(zgpu_event *event);
/** 1 if finished, 0 if still running. */
ZGPU_API int zgpu_event_query(zgpu_event *event);
/** Waits for the event if still running, then frees it. Accepts NULL. */
ZGPU_API void zgpu_event_free(zgpu_event *event);

/* ------------------------------------------------------------------------------------------------
 * Read options (conversion on the fly) and batched reads of many regions
 * ---------------------------------------------------------------------------------------------- */
/**
 * What a read writes into its destination. With the defaults (out_dtype 0, scale 1, offset 0, clamp 0) the stored
 * values are copied as they are, bit for bit, whatever the data type. Else each value v becomes
 * convert(clamp(v * scale + offset)) in out_dtype (0: the stored type), the same bits on the host and on the GPU:
 *  - types: bool, integers, float16/32/64, in and out (complex or raw: ZGPU_ERR_UNSUPPORTED);
 *  - arithmetic in float32 when both types are small (bool, 8/16-bit integers, float16, float32: every value is
 *    exact in float32) and in float64 otherwise (a 64-bit integer rounds once to float64 on the way in); scale,
 *    offset and the clamp bounds are rounded to that type; a multiply then an add, each rounded, never fused; an
 *    offset of 0 adds nothing, so -0.0 stays -0.0;
 *  - clamp 1: to [clamp_min, clamp_max] (either may be infinite); a NaN passes through;
 *  - float outputs round to nearest even (float16 subnormals included; past the largest finite value: infinity);
 *    every NaN is written as the canonical quiet NaN (positive, no payload);
 *  - integer outputs: NaN becomes 0; round to nearest, ties to even; saturate at the type's range;
 *  - bool: as input any nonzero byte is 1; as output 1 for a nonzero value, 0 for zero and for NaN (NumPy: True).
 * ZGPU_ERR_INVALID_ARGUMENT: scale or offset not finite, clamp not 0 or 1, with clamp a NaN bound or clamp_min >
 * clamp_max, a struct_size that zgpu_read_options_init did not set. On the GPU the conversion is fused into the
 * scatter (kernels built at run time with NVRTC and cached: docs/tuning.md, "Kernel cache"); on the host it runs,
 * vectorised, in the copy to the destination.
 */
typedef struct zgpu_read_options {
    size_t struct_size;         /* sizeof(zgpu_read_options): zgpu_read_options_init sets it */
    zgpu_dtype out_dtype;       /* 0: the array's data type */
    double scale, offset;       /* default 1 and 0 */
    int clamp;                  /* 1: clamp to [clamp_min, clamp_max] after scale and offset */
    double clamp_min, clamp_max;
} zgpu_read_options;

/** Fills *o with defaults (struct_size set): no conversion. */
ZGPU_API void zgpu_read_options_init(zgpu_read_options *o);

/** As zgpu_array_read, with `opts` (NULL = none); out_strides are byte strides of the destination's elements. */
ZGPU_API zgpu_status zgpu_array_read_ex(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                        void *out, const int64_t *out_strides, const zgpu_read_options *opts);
/** As zgpu_array_read_device (event NULL) or zgpu_array_read_device_async (event not NULL), with `opts`. */
ZGPU_API zgpu_status zgpu_array_read_device_ex(zgpu_array *array, const uint64_t *start, const uint64_t *count,
                                               void *device_out, const int64_t *out_strides, void *stream,
                                               const zgpu_read_options *opts, zgpu_event **event);

/**
 * Reads n boxes in one batch: box i is [starts[i*ndim], +counts[i*ndim]) into outs[i] with byte strides
 * out_strides[i*ndim ...] (out_strides NULL = every destination C-contiguous). One plan covers every box: each
 * chunk needed is fetched and decoded once however many boxes share it. A stacked buffer is outs[i] = base +
 * i * (bytes of one box). Boxes may overlap each other; destinations must not. Errors as zgpu_array_read, naming
 * the box. zgpu_array_read_regions reads into host memory; the _device form into device memory on `stream`
 * (event NULL: returns when the data is in place; else at once, as zgpu_array_read_device_async).
 */
ZGPU_API zgpu_status zgpu_array_read_regions(zgpu_array *array, size_t n, const uint64_t *starts,
                                             const uint64_t *counts, void *const *outs, const int64_t *out_strides,
                                             const zgpu_read_options *opts);
ZGPU_API zgpu_status zgpu_array_read_regions_device(zgpu_array *array, size_t n, const uint64_t *starts,
                                                    const uint64_t *counts, void *const *outs,
                                                    const int64_t *out_strides, void *stream,
                                                    const zgpu_read_options *opts, zgpu_event **event);
/** Timings of the last completed read on this handle. */
ZGPU_API void zgpu_array_last_read_stats(const zgpu_array *array, zgpu_read_stats *stats);

/* ------------------------------------------------------------------------------------------------
 * Groups
 * ---------------------------------------------------------------------------------------------- */
typedef struct zgpu_group zgpu_group;

ZGPU_API zgpu_status zgpu_group_open(zgpu_context *ctx, const char *path, zgpu_group **out);
/** Creates a group (zarr_format 2 or 3). attributes_json may be NULL. overwrite: 0 or 1 (ZGPU_CREATE_OVERWRITE),
 *  as for arrays: a node (or non-empty directory) there is replaced atomically, members included. */
ZGPU_API zgpu_status zgpu_group_create(zgpu_context *ctx, const char *path, int zarr_format,
                                       const char *attributes_json, int overwrite, zgpu_group **out);
ZGPU_API void zgpu_group_close(zgpu_group *group);
ZGPU_API int zgpu_group_zarr_format(const zgpu_group *group);
/**
 * Lists direct members as a JSON array of {"name": ..., "kind": "array"|"group"}, sorted by name.
 */
ZGPU_API zgpu_status zgpu_group_members(const zgpu_group *group, char **json);
ZGPU_API zgpu_status zgpu_group_attributes(const zgpu_group *group, char **json);
ZGPU_API zgpu_status zgpu_group_set_attributes(zgpu_group *group, const char *json);
/** Consolidates the metadata of every node below the group into it, as zarr-python's consolidate_metadata does
 *  (v2: the group's .zmetadata; v3: its zarr.json's "consolidated_metadata"), so that zarr-python and xarray open
 *  the hierarchy in one request. The store must list (ZGPU_ERR_UNSUPPORTED over plain HTTP). zgpu keeps it
 *  current afterwards: every array or group zgpu creates, resizes or gives attributes below a group with
 *  consolidated metadata (written by zgpu or by zarr-python) is copied into it. */
ZGPU_API zgpu_status zgpu_group_consolidate(zgpu_group *group);
/** Sets *has to 1 if the group holds consolidated metadata (v3: a "consolidated_metadata" object in its zarr.json;
 *  v2: a .zmetadata object beside its .zgroup), else 0. Errors: the store's, reading .zmetadata (v2), naming the
 *  group. Thread-safe as zgpu_group_members. */
ZGPU_API zgpu_status zgpu_group_has_consolidated(const zgpu_group *group, int *has);
/** What is at path: 1 array, 2 group, 0 nothing (ZGPU_OK in all three cases). A URL is reached with default
 *  remote options; zgpu_context_node_kind uses a context's. */
ZGPU_API zgpu_status zgpu_node_kind(const char *path, int *kind);
/** As zgpu_node_kind, through the context's stores (its remote options, confinement). */
ZGPU_API zgpu_status zgpu_context_node_kind(zgpu_context *ctx, const char *path, int *kind);
/** Opens whatever is at path, reading its metadata document once (one request on a remote store, where
 *  zgpu_context_node_kind and then zgpu_array_open or zgpu_group_open take two): an array (*array set, *group
 *  NULL) or a group (the other way round). Nothing there: ZGPU_ERR_NOT_FOUND. */
ZGPU_API zgpu_status zgpu_context_open_node(zgpu_context *ctx, const char *path, zgpu_array **array,
                                            zgpu_group **group);

#ifdef __cplusplus
}
#endif
#endif /* ZGPU_H */
