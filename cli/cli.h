/* Internal interface of the zgpu command. The CLI uses the public API (zgpu.h, zgpu_meta.h) and, to read the JSON
 * documents the library returns, the library's JSON DOM (src/common/json.h, in the static library it links);
 * tests/unit/test_cli_parse.c compiles these sources against the same library.
 *
 * Error convention inside cli/: fallible helpers return 0 on success and -1 on failure after setting a
 * one-line message with cli_err() (read back with cli_errmsg()). */
#ifndef ZGPU_CLI_H
#define ZGPU_CLI_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "zgpu.h"
#include "zgpu_meta.h"
#include "common/buf.h"
#include "common/json.h"

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

/* ---- errors and small helpers (util.c) ---- */
int cli_err(const char *fmt, ...) CLI_PRINTF(1, 2); /* sets the message, returns -1 */
const char *cli_errmsg(void);
int cli_host_little_endian(void);

/** A growable string. All appends are no-ops once an allocation failed (oom = 1). */
typedef struct cli_sb {
    char *p;
    size_t n, cap;
    int oom;
} cli_sb;
void cli_sb_puts(cli_sb *sb, const char *s);
void cli_sb_putn(cli_sb *sb, const char *s, size_t n);
void cli_sb_printf(cli_sb *sb, const char *fmt, ...) CLI_PRINTF(2, 3);
/** Hands the string over (caller frees); NULL (with a message) if an allocation failed. */
char *cli_sb_finish(cli_sb *sb);
void cli_sb_free(cli_sb *sb);

/** Parses a decimal int64 that must fill the whole text. */
int cli_parse_i64(const char *s, size_t n, int64_t *out);
/** "64,64,1" -> ndim positive values (exactly `ndim` of them); what names the option in messages. */
int cli_parse_u64_list(const char *s, int ndim, uint64_t *out, const char *what);

/* ---- JSON (util.c): the library's DOM (common/json.h) and writer; no JSON reading of the CLI's own ---- */
/** Parses text (what names it in messages). -1 with the library's message if it is not JSON. */
int cli_json_parse(const char *text, const char *what, zj_value **out);
/** v written without any whitespace, as `zgpu info` prints JSON values (caller frees); NULL if out of memory. */
char *cli_json_tight(const zj_value *v);
/** v as compact JSON text (caller frees); NULL when v is absent or JSON null (or out of memory, with a message). */
char *cli_json_text(const zj_value *v);

/* ---- regions (region.c) ---- */
/**
 * Parses a NumPy-like selection: comma-separated per-axis entries `a:b`, `a:`, `:b`, `:` or an integer `i`
 * (kept as a length-1 axis). Negative values count from the end. Fewer entries than ndim: the rest are `:`.
 * NULL or "" selects everything. Errors: steps, bad syntax, too many entries, out-of-range values, a > b.
 */
int cli_parse_region(const char *spec, int ndim, const uint64_t *shape, uint64_t *start, uint64_t *count);

/* ---- data types of .npy files (dtype.c); names, typestrings, fill values and documents: zgpu_meta.h ---- */
/** Parses a NumPy typestring. *nonnative = 1 if its byte order differs from this host's (multi-byte only). */
int cli_dtype_from_descr(const char *descr, zgpu_dtype *dt, size_t *itemsize, int *nonnative);
/** Size of the unit byte swapping works on (complex64 -> 4, raw/bool/1-byte -> 1). */
size_t cli_dtype_swap_unit(zgpu_dtype dt, size_t itemsize);
/** Reverses every `unit`-byte group of n bytes in place (unit 1: nothing). */
void cli_byteswap(void *data, size_t nbytes, size_t unit);

/* ---- .npy files (npy.c) ---- */
typedef struct cli_npy_header {
    int major, minor;
    char descr[32];
    zgpu_dtype dtype;
    size_t itemsize;
    int nonnative;     /* stored byte order differs from this host's */
    int fortran_order;
    int ndim;
    uint64_t shape[ZGPU_MAX_DIMS];
    uint64_t data_offset; /* bytes before the data */
} cli_npy_header;

/** Parses the preamble in buf[0..n). Needs the whole header; says "truncated" otherwise. */
int cli_npy_parse_header(const unsigned char *buf, size_t n, cli_npy_header *h);
/** Reads and parses the header of an open file, leaving the position at the data. */
int cli_npy_read_header(FILE *f, const char *path, cli_npy_header *h);
/** The complete preamble (magic, version, length, dict, padding to 64 bytes) for native-order C data. */
int cli_npy_format_header(zgpu_dtype dt, size_t itemsize, int ndim, const uint64_t *shape, cli_sb *sb);
/** Element count and byte size of a shape (-1 with a message on overflow). */
int cli_shape_nbytes(int ndim, const uint64_t *shape, size_t itemsize, uint64_t *nelem, uint64_t *nbytes);
/** Copies Fortran-order data of `shape` into C order. */
void cli_fortran_to_c(const void *src, void *dst, int ndim, const uint64_t *shape, size_t itemsize);
/** Loads a whole .npy into native-endian C-order memory (*data: caller frees). */
int cli_npy_load(const char *path, cli_npy_header *h, void **data);
/** Reads `nbytes` of C-order data at data_offset + offset, converting to native byte order. */
int cli_npy_read_block(FILE *f, const char *path, const cli_npy_header *h, uint64_t offset, void *dst,
                       size_t nbytes);
/** Writes native C-order data as .npy. Path "/dev/null" writes nothing. */
int cli_npy_save(const char *path, zgpu_dtype dt, size_t itemsize, int ndim, const uint64_t *shape,
                 const void *data);

/* ---- CUDA runtime, loaded at run time (cudart.c) ---- */
typedef struct cli_cuda {
    void *lib;
    int (*set_device)(int);
    int (*malloc_)(void **, size_t);
    int (*free_)(void *);
    int (*memcpy_)(void *, const void *, size_t, int);
    int (*memset_)(void *, int, size_t);
    int (*synchronize)(void);
    const char *(*error_string)(int);
    int (*host_alloc)(void **, size_t); /* cudaMallocHost: pinned, so device-to-host copies run at full speed */
    int (*host_free)(void *);
    int (*mem_get_info)(size_t *, size_t *);
    int (*stream_create)(void **, unsigned); /* cudaStreamCreateWithFlags */
    int (*stream_destroy)(void *);
} cli_cuda;
/** Loads libcudart and selects `device`; fails with "no GPU: <why>". */
int cli_cuda_load(cli_cuda *cu, int device);
int cli_cuda_alloc(cli_cuda *cu, void **p, size_t n);
/** Pinned host memory (cudaMallocHost); free with cu->host_free. */
int cli_cuda_host_alloc(cli_cuda *cu, void **p, size_t n);
int cli_cuda_to_host(cli_cuda *cu, void *host, const void *device, size_t n);
/** Free memory of the current device (cudaMemGetInfo). */
int cli_cuda_free_memory(cli_cuda *cu, uint64_t *free_bytes);
/** A non-blocking stream on the current device (a cudaStream_t); destroy with cu->stream_destroy. */
int cli_cuda_stream(cli_cuda *cu, void **stream);
void cli_cuda_unload(cli_cuda *cu);
/** Parses "cuda:N" / "cuda" / "gpu" -> N; "cpu" -> -1. */
int cli_parse_device(const char *text, int *device);

#endif
