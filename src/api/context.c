/* zgpu_context: options and the host thread pool. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/array.h"
#include "device/device.h"
#include "common/status.h"

double zg_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

ZGPU_API void zgpu_context_options_init(zgpu_context_options *opts) {
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
    opts->num_threads = 0;
    opts->device = 0;
    opts->device_memory_budget = 0;
    opts->gds_mode = ZGPU_GDS_AUTO;
    opts->gpu_decode = 1;
    opts->gpu_trust_input = 0;
}

ZGPU_API zgpu_status zgpu_context_create(const zgpu_context_options *opts, zgpu_context **out) {
    if (!out) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_context_create: out is NULL");
    *out = NULL;
    zgpu_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    zgpu_context_options_init(&ctx->opts);
    if (opts) {
        if (opts->struct_size < offsetof(zgpu_context_options, gpu_decode) + sizeof(int) ||
            opts->struct_size > sizeof *opts) {
            free(ctx);
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_context_options.struct_size is %zu; use zgpu_context_options_init",
                            opts->struct_size);
        }
        memcpy(&ctx->opts, opts, opts->struct_size);
        ctx->opts.struct_size = sizeof ctx->opts;
    }
    if (ctx->opts.num_threads < 0 || ctx->opts.num_threads > 4096) {
        int n = ctx->opts.num_threads;
        free(ctx);
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "num_threads %d is out of range (0..4096)", n);
    }
    if (ctx->opts.num_threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        ctx->opts.num_threads = n > 0 ? (int)n : 1;
    }
    pthread_mutex_init(&ctx->device_lock, NULL);
    zgpu_status st = zg_pool_create(ctx->opts.num_threads, &ctx->pool);
    if (st != ZGPU_OK) {
        pthread_mutex_destroy(&ctx->device_lock);
        free(ctx);
        return st;
    }
    *out = ctx;
    return ZGPU_OK;
}

ZGPU_API void zgpu_context_free(zgpu_context *ctx) {
    if (!ctx) return;
    zg_device_state_free(ctx->device);
    zg_pool_free(ctx->pool);
    pthread_mutex_destroy(&ctx->device_lock);
    free(ctx);
}
