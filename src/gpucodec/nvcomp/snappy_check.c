/* Raw Snappy walked on the host (snappy_check.h); the format: Snappy's format_description.txt. */
#include "gpucodec/nvcomp/snappy_check.h"

#include "common/status.h"

zgpu_status zg_snappy_walk(const uint8_t *p, size_t n, size_t expected, uint8_t *out) {
    size_t ip = 0;
    uint64_t len = 0;
    for (int shift = 0;; shift += 7) { /* the decoded length, a varint of at most 5 bytes */
        ZG_RETURN_IF(ip >= n || shift > 28, ZGPU_ERR_CORRUPT_DATA, "snappy: bad length preamble");
        const uint8_t b = p[ip++];
        len |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
    }
    ZG_RETURN_IF(len != expected, ZGPU_ERR_CORRUPT_DATA, "snappy: stream says %llu decoded bytes, expected %zu",
                 (unsigned long long)len, expected);
    size_t op = 0;
    while (ip < n) {
        const uint8_t tag = p[ip++];
        uint64_t l, off;
        if ((tag & 3) == 0) { /* literal: length - 1 in the tag, or in the 1-4 bytes after it (tag values 60-63) */
            l = (uint64_t)(tag >> 2) + 1;
            if (l > 60) {
                const size_t k = (size_t)l - 60;
                ZG_RETURN_IF(n - ip < k, ZGPU_ERR_CORRUPT_DATA, "snappy: truncated literal length at %zu", ip);
                l = 0;
                for (size_t i = 0; i < k; i++) l |= (uint64_t)p[ip + i] << (8 * i);
                l += 1;
                ip += k;
            }
            ZG_RETURN_IF(l > n - ip, ZGPU_ERR_CORRUPT_DATA, "snappy: literal of %llu bytes past the end at %zu",
                         (unsigned long long)l, ip);
            ZG_RETURN_IF(l > expected - op, ZGPU_ERR_CORRUPT_DATA, "snappy: data past the %zu decoded bytes", expected);
            if (out)
                for (uint64_t i = 0; i < l; i++) out[op + i] = p[ip + i];
            ip += (size_t)l;
            op += (size_t)l;
            continue;
        }
        if ((tag & 3) == 1) { /* copy, 11-bit offset: length 4-11 */
            ZG_RETURN_IF(ip >= n, ZGPU_ERR_CORRUPT_DATA, "snappy: truncated copy at %zu", ip);
            l = 4 + ((tag >> 2) & 7);
            off = (uint64_t)(tag >> 5) << 8 | p[ip++];
        } else if ((tag & 3) == 2) { /* copy, 16-bit offset: length 1-64 */
            ZG_RETURN_IF(n - ip < 2, ZGPU_ERR_CORRUPT_DATA, "snappy: truncated copy at %zu", ip);
            l = 1 + (uint64_t)(tag >> 2);
            off = (uint64_t)p[ip] | (uint64_t)p[ip + 1] << 8;
            ip += 2;
        } else { /* copy, 32-bit offset */
            ZG_RETURN_IF(n - ip < 4, ZGPU_ERR_CORRUPT_DATA, "snappy: truncated copy at %zu", ip);
            l = 1 + (uint64_t)(tag >> 2);
            off = (uint64_t)p[ip] | (uint64_t)p[ip + 1] << 8 | (uint64_t)p[ip + 2] << 16 | (uint64_t)p[ip + 3] << 24;
            ip += 4;
        }
        ZG_RETURN_IF(off == 0 || off > op, ZGPU_ERR_CORRUPT_DATA, "snappy: copy offset %llu with %zu bytes out",
                     (unsigned long long)off, op);
        ZG_RETURN_IF(l > expected - op, ZGPU_ERR_CORRUPT_DATA, "snappy: data past the %zu decoded bytes", expected);
        if (out) /* (a copy may overlap its source: byte by byte, forward) */
            for (uint64_t i = 0; i < l; i++) out[op + i] = out[op - off + i];
        op += (size_t)l;
    }
    ZG_RETURN_IF(op != expected, ZGPU_ERR_CORRUPT_DATA, "snappy: %zu decoded bytes, expected %zu", op, expected);
    return ZGPU_OK;
}
