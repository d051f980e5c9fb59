/* The cache of kernels compiled at run time: in memory (process-wide), then on disk, then NVRTC.
 *
 * Key: the full text of every input to the compiled code (zg_jit_key): the generator and its code-generation
 * parameters (`what`), a hash of the source, the name expressions, the GPU architecture, and the zgpu, NVRTC and
 * CUDA driver versions. Disk: <zgpu cache dir>/kernels/<64-bit hash of the key, hex>.zgk (zg_env_cache_dir:
 * $ZGPU_CACHE_DIR, else $XDG_CACHE_HOME/zgpu, else ~/.cache/zgpu), each file a header (magic, format version,
 * lengths, CRC32C) then the key text, the lowered names and the code; a file whose key differs (a hash collision,
 * an old format) is a miss, one that is truncated or fails its checksum is deleted and rebuilt. Writes go to a
 * temporary name in the same directory (O_EXCL, pid + random) and are renamed into place, so processes starting
 * together (DataLoader workers) each see a whole file or none; after a write the directory is trimmed to
 * ZG_JIT_CACHE_MAX_BYTES, oldest first (a load refreshes a file's mtime). Files other processes delete meanwhile
 * are skipped. The directory is created 0700 and used only when it is this user's and not writable by others;
 * else, or with no cache directory at all, the cache lives in memory only. docs/tuning.md, "Kernel cache". */
#ifndef ZG_JIT_CACHE_H
#define ZG_JIT_CACHE_H
#include <stddef.h>
#include <stdint.h>
#include "jit/nvrtc_lib.h"
#include "zgpu.h"

/** The on-disk cache's bound: after a write, the oldest files go until the directory holds no more. */
#define ZG_JIT_CACHE_MAX_BYTES (64ull << 20)
/** Format of the cache files; a file of another version is a miss (and is replaced). */
#define ZG_JIT_CACHE_FORMAT 1

/** Everything the compiled code depends on. */
typedef struct zg_jit_key {
    const char *what;   /* the generator and its code-generation parameters, e.g. "scatter gen=1 in=uint16 ..." */
    const char *source; /* the CUDA source (hashed into the key) */
    const char *const *names;
    size_t n_names;     /* name expressions */
    const char *arch;   /* "sm_90" */
    const char *driver; /* CUDA driver version (cudaDriverGetVersion), e.g. "13000" */
    const char *nvrtc;  /* NVRTC version, "13.0" */
    const char *zgpu;   /* zgpu version, "0.1.0" */
} zg_jit_key;

/** The key's text into buf (NUL-terminated); returns its length, or 0 when it does not fit. */
size_t zg_jit_key_text(const zg_jit_key *k, char *buf, size_t n);
/** The cache file of a key text: "<dir>/<16 hex digits>.zgk"; "" when there is no disk cache. */
void zg_jit_cache_file(const char *key_text, char *buf, size_t n);

/** The compiled image for (what, source, names, arch, driver): from memory, else from disk, else compiled by
 *  NVRTC (and stored on disk). Threads asking for the same key at once wait for one build. The image belongs to
 *  the cache and lives until the process ends. Errors: zg_jit_compile's, naming `what`. */
zgpu_status zg_jit_cache_get(const char *what, const char *source, const char *const *names, size_t n_names,
                             const char *arch, const char *driver, const zg_jit_image **out);

/** Counters since the process started (or zg_jit_stats_reset): a benchmark reports cold (compile) and warm
 *  (disk load) times from them. */
typedef struct zg_jit_stats {
    uint64_t memory_hits, disk_hits, compiles, disk_writes;
    uint64_t disk_rejects;           /* corrupt or truncated files deleted */
    uint64_t evictions;              /* files deleted to keep the bound */
    uint64_t module_loads;           /* images loaded on a GPU (the device side reports them) */
    double compile_s, disk_load_s;   /* NVRTC; reading and checking cache files */
    double disk_store_s;             /* writing, renaming, trimming */
    double module_load_s;            /* cudaLibraryLoadData + cudaLibraryGetKernel */
} zg_jit_stats;
void zg_jit_stats_get(zg_jit_stats *out);
void zg_jit_stats_reset(void);
/** The device side adds its module loads. */
void zg_jit_stats_add_module_load(double seconds);

/** Where the disk cache is: the directory (NUL-terminated, "" for memory only) and why not when it is off. */
const char *zg_jit_cache_dir(const char **why_memory_only);

/* For tests and benchmarks (not thread-safe with concurrent zg_jit_cache_get): */
/** dir: NULL = the default (zg_env_cache_dir()/kernels), "" = memory only; max_bytes 0 = ZG_JIT_CACHE_MAX_BYTES. */
void zg_jit_cache_configure(const char *dir, uint64_t max_bytes);
/** Drops the memory cache (images returned before become invalid). */
void zg_jit_cache_forget_memory(void);

#endif
