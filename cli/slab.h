/* Streaming a selection in slabs: how `zgpu read` and `zgpu cp` cut it (slab.c), how much memory a slab may take
 * (slab.c, the memory model), and the threads that read slab k + 1 while slab k is written (pipe.c). */
#ifndef ZGPU_CLI_SLAB_H
#define ZGPU_CLI_SLAB_H
#include "cli.h"

/* ---- slabs (slab.c) ---- */
/**
 * A selection cut into slabs. Axes 0..k are cut into pieces: on axis d, piece j is the selection's part of
 * [(b + j) * step[d], (b + j + 1) * step[d]) (b: the step holding the selection's start), so pieces lie on the
 * array's grid of multiples of step[d]; axes after k are whole in every slab. Slabs go in C order of their pieces,
 * which is the order of their bytes in a C-order file of the selection when `contiguous`.
 */
typedef struct cli_slabs {
    int ndim, k;                           /* k = -1: one slab (ndim 0) */
    size_t itemsize;
    uint64_t start[ZGPU_MAX_DIMS], count[ZGPU_MAX_DIMS]; /* the selection */
    uint64_t step[ZGPU_MAX_DIMS], pieces[ZGPU_MAX_DIMS];
    uint64_t n;                            /* slabs: 0 when the selection is empty */
    uint64_t max_bytes;                    /* the largest slab */
} cli_slabs;

/**
 * Cuts the selection into slabs of about `budget` bytes.
 * Aligned (contiguous = 0): slabs are whole rows of `grid` cells along axis 0 as far as one row fits the budget;
 * else one cell along axis 0 and rows of cells along axis 1, and so on; a single cell over the budget is a slab
 * (max_bytes then exceeds the budget). Every cell of the grid is in one slab, or split only by the selection.
 * Contiguous (1): every slab is one run of the selection's C order (one index on the axes before k), whole grid
 * rows where they fit, else rows not on the grid: for a stream, which must be written in order.
 */
void cli_slabs_plan(cli_slabs *s, int ndim, const uint64_t *start, const uint64_t *count, size_t itemsize,
                    const uint64_t *grid, uint64_t budget, int contiguous);
/** Slab i (< s->n): its box. */
void cli_slabs_get(const cli_slabs *s, uint64_t i, uint64_t *start, uint64_t *count);

/**
 * A slab's boxes in the "blocked" layout: one box per chunk of `chunk` it meets, each C-contiguous, one after the
 * other in C order of the chunks. A box that is a whole chunk decodes straight into place (no decode scratch).
 */
typedef struct cli_blocks {
    int ndim;
    size_t itemsize;
    uint64_t lo[ZGPU_MAX_DIMS], hi[ZGPU_MAX_DIMS]; /* the slab */
    uint64_t chunk[ZGPU_MAX_DIMS];
    uint64_t nb[ZGPU_MAX_DIMS];                   /* boxes along each axis */
    size_t n, cap;
    uint64_t *starts, *counts; /* n * ndim */
    void **outs;               /* n: where each box starts in the slab's buffer */
} cli_blocks;
/** Most boxes a slab of s can meet (to size cli_blocks). */
uint64_t cli_blocks_max(const cli_slabs *s, const uint64_t *chunk);
/** Lays out the slab [start, start + count) in buf. b->starts/counts/outs must hold cli_blocks_max entries. */
void cli_blocks_layout(cli_blocks *b, const cli_slabs *s, const uint64_t *chunk, const uint64_t *start,
                       const uint64_t *count, void *buf);
/** The slab as one C-order box in buf (the layout when chunks are small or reads go through the device). */
void cli_blocks_single(cli_blocks *b, const cli_slabs *s, const uint64_t *start, const uint64_t *count, void *buf);

/* ---- the memory model (slab.c) ---- */
/** What the CLI lets slabs and decode scratch take: the process stays under 300 MB with its own ~15 MB. */
#define CLI_MEM_BUDGET ((uint64_t)248 << 20)

/**
 * Bytes a decoding thread keeps as scratch for an array (thread-local, for the thread's life): the stored bytes of
 * a chunk, one buffer per codec stage after the first, and the decoded chunk unless it decodes in place
 * (in_place: every box of the read is a whole chunk laid out contiguously). Measured: zstd, 8 MiB chunks: 16 MiB
 * a thread, 8 MiB in place; zstd + crc32c: 23 MiB.
 */
uint64_t cli_decode_scratch(zgpu_array *a, int in_place);
/** Bytes a thread of a write keeps: the stored object (a whole shard) decoded and encoded (a shard once more, as
 *  its inner chunks are assembled), and the codecs' stages of a chunk. Measured: 8 MiB zstd chunks: 24 MiB a
 *  thread; 32 MiB shards of 1 MiB zstd chunks: 98 MiB. */
uint64_t cli_encode_scratch(uint64_t object_bytes, uint64_t chunk_bytes, int stages, int sharded);
/** Codec stages of an array's (inner) chunk: the codecs after the array->bytes one, at least 1. */
int cli_codec_stages(zgpu_array *a);

/** Largest slab the model hands out: bigger ones only cost memory (the pool is busy long before). */
#define CLI_SLAB_MAX ((uint64_t)64 << 20)

/**
 * What a streamed command holds, for cli_fit: every decoding (or encoding) thread its scratch, and `copies` slabs
 * (buffers, plus what the library holds per slab in flight: fetched bytes of a remote store, pinned staging).
 */
typedef struct cli_fit {
    uint64_t scratch;    /* per thread */
    int copies;          /* slab-sized allocations held at once */
    int in_flight;       /* slabs being read (decoded) at once */
    uint64_t task_bytes; /* bytes of one task of the pool (a chunk, or a stored object for writes) */
    uint64_t fixed_budget; /* copy_slab_bytes: slabs of this size, threads as asked */
    void (*plan)(void *user, uint64_t budget, cli_slabs *out); /* the slabs a budget gives */
    void *user;
} cli_fit;

/**
 * Threads and slabs within CLI_MEM_BUDGET: for each thread count from t_max down, the slabs get what the threads'
 * scratch leaves; the count that keeps the most threads busy (threads, or the tasks of the slabs in flight,
 * whichever is fewer) wins, the most threads on a tie. Returns the threads; *out the slabs.
 */
int cli_fit_threads(const cli_fit *f, int t_max, cli_slabs *out);

/* ---- the pipeline (pipe.c) ---- */
/**
 * Readers fill slab buffers: a slab is taken in order once a buffer is free and cut into parts (1, or one per
 * chunk), which the readers share; the calling thread hands the slabs, once every part is in, in order to
 * `write`. A read or write that fails stops the pipeline: the first failure's message is kept (cli_errmsg() of
 * the thread that failed) and cli_pipe_run returns -1 with it set. `slot` names the buffer (0..n_buffers-1): the
 * callbacks keep what they need per buffer (a layout) in their own arrays.
 */
typedef struct cli_pipe_ops {
    /** Slab i goes into buffer `slot`: returns its number of parts (>= 1), 0 on failure (with cli_err). Called
     *  with the pipeline's lock held: keep it short. */
    uint64_t (*begin)(void *user, int slot, uint64_t i, const uint64_t *start, const uint64_t *count);
    /** Reads part j of the slab in buffer `slot`; reader is 0..n_readers-1. 0 ok, -1 with cli_err. */
    int (*read)(void *user, int reader, int slot, uint64_t j);
    /** Consumes the slab in buffer `slot` (NULL: nothing to do). 0 ok, -1 with cli_err. */
    int (*write)(void *user, int slot);
    void *user;
} cli_pipe_ops;

/** Runs the slabs of s through `ops` with n_readers threads and n_buffers buffers. With one reader and one buffer
 *  everything runs on the calling thread. */
int cli_pipe_run(const cli_slabs *s, int n_readers, int n_buffers, const cli_pipe_ops *ops);

/* ---- the .npy destination of `zgpu read` (output.c) ---- */
enum { CLI_OUT_NULL, CLI_OUT_FILE, CLI_OUT_STREAM };
typedef struct cli_out {
    int kind;     /* NULL: /dev/null, nothing written; FILE: a temporary beside the path, written at offsets and
                   * renamed over the path at the end; STREAM: stdout ("-") or a device, FIFO..., in order */
    int fd;
    const char *path;
    char *tmp;            /* FILE: the temporary's path */
    uint64_t data_offset; /* bytes of the header */
    uint64_t pos;         /* STREAM: bytes written so far */
} cli_out;
/** Opens the destination and writes the .npy header for a C-order array of `shape`. */
int cli_out_open(cli_out *o, const char *path, zgpu_dtype dt, size_t itemsize, int ndim, const uint64_t *shape);
/** Writes a slab laid out as b, part of the selection [sel_start, + sel_count), at its place in the file. */
int cli_out_write_slab(cli_out *o, const cli_blocks *b, const uint64_t *sel_start, const uint64_t *sel_count);
/** Completes the file (FILE: renamed into place). -1 with a message, the temporary removed. */
int cli_out_finish(cli_out *o);
/** Drops an unfinished file: the temporary is removed, the path left as it was. */
void cli_out_abort(cli_out *o);

#endif
