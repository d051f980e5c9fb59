/* NumPy typestrings of .npy files and byte swapping for the zgpu command. The data type rules themselves
 * (names, typestrings, fill values) are the library's (zgpu_meta.h). */
#include <string.h>
#include "cli.h"

int cli_dtype_from_descr(const char *descr, zgpu_dtype *dt, size_t *itemsize, int *nonnative) {
    int big = 0;
    /* the library reads datetimes as int64 counts, but a .npy of them would lose its unit here */
    const char *kind = descr[0] == '<' || descr[0] == '>' || descr[0] == '=' || descr[0] == '|' ? descr + 1 : descr;
    if (*kind == 'M' || *kind == 'm') return cli_err("unsupported NumPy type: %s (datetimes)", descr);
    zgpu_status s = zgpu_dtype_from_typestr(descr, dt, itemsize, &big);
    if (s != ZGPU_OK) return cli_err("unsupported NumPy type: %s", zgpu_last_error());
    *nonnative = *itemsize > 1 && *dt != ZGPU_RAW && big == cli_host_little_endian();
    return 0;
}

size_t cli_dtype_swap_unit(zgpu_dtype dt, size_t itemsize) {
    if (dt == ZGPU_RAW) return 1;
    if (dt == ZGPU_COMPLEX64 || dt == ZGPU_COMPLEX128) return itemsize / 2;
    return itemsize;
}

void cli_byteswap(void *data, size_t nbytes, size_t unit) {
    unsigned char *p = data;
    size_t n = nbytes / (unit ? unit : 1);
    /* One loop per unit size keeps the compiler's byte-swap idiom recognition working. */
    switch (unit) {
    case 2:
        for (size_t i = 0; i < n; i++) {
            uint16_t v;
            memcpy(&v, p + 2 * i, 2);
            v = (uint16_t)((v >> 8) | (v << 8));
            memcpy(p + 2 * i, &v, 2);
        }
        break;
    case 4:
        for (size_t i = 0; i < n; i++) {
            uint32_t v;
            memcpy(&v, p + 4 * i, 4);
            v = __builtin_bswap32(v);
            memcpy(p + 4 * i, &v, 4);
        }
        break;
    case 8:
        for (size_t i = 0; i < n; i++) {
            uint64_t v;
            memcpy(&v, p + 8 * i, 8);
            v = __builtin_bswap64(v);
            memcpy(p + 8 * i, &v, 8);
        }
        break;
    default:
        if (unit > 1)
            for (size_t i = 0; i < n; i++)
                for (size_t a = i * unit, b = a + unit - 1; a < b; a++, b--) {
                    unsigned char t = p[a];
                    p[a] = p[b];
                    p[b] = t;
                }
        break;
    }
}
