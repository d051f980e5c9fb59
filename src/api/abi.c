/* Facts about the public structs of this build, so that bindings (python/zgpu/_capi.py, _tuning.py) can check
 * their ctypes mirrors against the C layout instead of trusting a copy (python/tests/test_abi.py). */
#include <stddef.h>
#include <string.h>

#include "zgpu.h"
#include "zgpu_experimental.h"
#include "zgpu_meta.h"

typedef struct abi_member {
    const char *strct, *member;
    size_t offset;
} abi_member;

#define M(s, m) {#s, #m, offsetof(s, m)}
static const abi_member k_members[] = {
    M(zgpu_context_options, struct_size), M(zgpu_context_options, num_threads), M(zgpu_context_options, device),
    M(zgpu_context_options, device_memory_budget), M(zgpu_context_options, gds_mode),
    M(zgpu_context_options, gpu_decode), M(zgpu_context_options, gpu_trust_input), M(zgpu_context_options, tuning),
    M(zgpu_context_options, max_decoded_chunk_bytes), M(zgpu_context_options, confine_to_store),
    M(zgpu_context_options, remote), M(zgpu_context_options, cache_bytes),
    M(zgpu_context_options, device_cache_bytes),

    M(zgpu_remote_options, struct_size), M(zgpu_remote_options, max_in_flight),
    M(zgpu_remote_options, connect_timeout_ms), M(zgpu_remote_options, request_timeout_ms),
    M(zgpu_remote_options, max_retries), M(zgpu_remote_options, retry_base_ms), M(zgpu_remote_options, tls_no_verify),
    M(zgpu_remote_options, ca_file), M(zgpu_remote_options, range_merge_gap), M(zgpu_remote_options, s3_endpoint),
    M(zgpu_remote_options, s3_region), M(zgpu_remote_options, s3_profile), M(zgpu_remote_options, s3_anonymous),
    M(zgpu_remote_options, s3_addressing), M(zgpu_remote_options, multipart_threshold),
    M(zgpu_remote_options, multipart_part_size), M(zgpu_remote_options, max_host_connections),
    M(zgpu_remote_options, window_bytes), M(zgpu_remote_options, fetch_threads),
    M(zgpu_remote_options, shard_index_cache_bytes),

    M(zgpu_read_stats, struct_size), M(zgpu_read_stats, plan_s), M(zgpu_read_stats, io_s), M(zgpu_read_stats, h2d_s),
    M(zgpu_read_stats, decode_s), M(zgpu_read_stats, scatter_s), M(zgpu_read_stats, total_s),
    M(zgpu_read_stats, stored_bytes), M(zgpu_read_stats, decoded_bytes), M(zgpu_read_stats, chunks),
    M(zgpu_read_stats, waves), M(zgpu_read_stats, gds_used), M(zgpu_read_stats, gpu_decoded),
    M(zgpu_read_stats, cpu_decoded), M(zgpu_read_stats, cache_hits), M(zgpu_read_stats, cache_misses),
    M(zgpu_read_stats, route), M(zgpu_read_stats, device_cache_hits),

    M(zgpu_read_options, struct_size), M(zgpu_read_options, out_dtype), M(zgpu_read_options, scale),
    M(zgpu_read_options, offset), M(zgpu_read_options, clamp), M(zgpu_read_options, clamp_min),
    M(zgpu_read_options, clamp_max),

    M(zgpu_array_spec, struct_size), M(zgpu_array_spec, zarr_format), M(zgpu_array_spec, ndim),
    M(zgpu_array_spec, shape), M(zgpu_array_spec, chunks), M(zgpu_array_spec, shards), M(zgpu_array_spec, dtype),
    M(zgpu_array_spec, itemsize), M(zgpu_array_spec, big_endian), M(zgpu_array_spec, codec_spec),
    M(zgpu_array_spec, codecs), M(zgpu_array_spec, v2_compressor), M(zgpu_array_spec, v2_filters),
    M(zgpu_array_spec, fill_value), M(zgpu_array_spec, attributes), M(zgpu_array_spec, dimension_names),
    M(zgpu_array_spec, chunk_key_encoding), M(zgpu_array_spec, separator), M(zgpu_array_spec, order),

    M(zgpu_tuning, struct_size), M(zgpu_tuning, zstd_decoder), M(zgpu_tuning, deflate_decoder),
    M(zgpu_tuning, lz4_decoder), M(zgpu_tuning, pipeline_waves), M(zgpu_tuning, wave_shape),
    M(zgpu_tuning, n_wave_shape), M(zgpu_tuning, wave_sets), M(zgpu_tuning, wave_overlap), M(zgpu_tuning, zstd_rows),
    M(zgpu_tuning, zstd_huf_probe), M(zgpu_tuning, inflate_parts), M(zgpu_tuning, trace), M(zgpu_tuning, profile),
    M(zgpu_tuning, copy_slab_bytes), M(zgpu_tuning, read_route), M(zgpu_tuning, partial_decode),
    M(zgpu_tuning, zstd_encoder),
    M(zgpu_tuning, write_wave_bytes), M(zgpu_tuning, host_read_route), M(zgpu_tuning, split_decode), M(zgpu_tuning, pool_spin_us),
};
#undef M

ZGPU_API int zgpu_max_dims(void) { return ZGPU_MAX_DIMS; }

ZGPU_API size_t zgpu_struct_size(const char *name) {
    if (!name) return 0;
    if (!strcmp(name, "zgpu_context_options")) return sizeof(zgpu_context_options);
    if (!strcmp(name, "zgpu_read_stats")) return sizeof(zgpu_read_stats);
    if (!strcmp(name, "zgpu_array_spec")) return sizeof(zgpu_array_spec);
    if (!strcmp(name, "zgpu_tuning")) return sizeof(zgpu_tuning);
    if (!strcmp(name, "zgpu_remote_options")) return sizeof(zgpu_remote_options);
    if (!strcmp(name, "zgpu_read_options")) return sizeof(zgpu_read_options);
    return 0;
}

ZGPU_API long zgpu_struct_offset(const char *name, const char *member) {
    if (!name || !member) return -1;
    for (size_t i = 0; i < sizeof k_members / sizeof k_members[0]; i++)
        if (!strcmp(k_members[i].strct, name) && !strcmp(k_members[i].member, member)) return (long)k_members[i].offset;
    return -1;
}
