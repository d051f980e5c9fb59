/* NumPy .npy files (format versions 1.0, 2.0 and 3.0): header parsing and writing, loading with
 * conversion of byte order and Fortran order into native C order. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"

#define NPY_MAX_HEADER (1u << 20)

/* ---- the header dict: a Python literal such as {'descr': '<u2', 'fortran_order': False, 'shape': (3, 4), } ---- */
static const char *py_ws(const char *p, const char *e) {
    while (p < e && isspace((unsigned char)*p)) p++;
    return p;
}

/* A quoted Python string without escapes; copies it into buf. */
static const char *py_string(const char *p, const char *e, char *buf, size_t cap) {
    if (p >= e || (*p != '\'' && *p != '"')) return NULL;
    char q = *p++;
    size_t n = 0;
    while (p < e && *p != q) {
        if (*p == '\\' || n + 1 >= cap) return NULL;
        buf[n++] = *p++;
    }
    if (p >= e) return NULL;
    buf[n] = '\0';
    return p + 1;
}

int cli_npy_parse_header(const unsigned char *buf, size_t n, cli_npy_header *h) {
    memset(h, 0, sizeof *h);
    if (n < 10 || memcmp(buf, "\x93NUMPY", 6) != 0) return cli_err("not a .npy file (bad magic)");
    h->major = buf[6];
    h->minor = buf[7];
    size_t hlen, hstart;
    if (h->major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        hstart = 10;
    } else if (h->major == 2 || h->major == 3) {
        if (n < 12) return cli_err(".npy header is truncated");
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        hstart = 12;
    } else {
        return cli_err("unsupported .npy format version %d.%d", h->major, h->minor);
    }
    if (hlen > NPY_MAX_HEADER) return cli_err(".npy header is too large (%zu bytes)", hlen);
    if (n < hstart + hlen) return cli_err(".npy header is truncated");
    h->data_offset = hstart + hlen;

    const char *p = (const char *)buf + hstart, *e = p + hlen;
    int have_descr = 0, have_order = 0, have_shape = 0;
    p = py_ws(p, e);
    if (p >= e || *p != '{') return cli_err(".npy header is not a dict");
    p++;
    for (;;) {
        char key[32];
        p = py_ws(p, e);
        if (p < e && *p == '}') break;
        p = py_string(p, e, key, sizeof key);
        if (!p) return cli_err(".npy header: expected a quoted key");
        p = py_ws(p, e);
        if (p >= e || *p != ':') return cli_err(".npy header: expected ':' after '%s'", key);
        p = py_ws(p + 1, e);
        if (!strcmp(key, "descr")) {
            if (p < e && *p == '[') return cli_err(".npy structured data types are not supported");
            p = py_string(p, e, h->descr, sizeof h->descr);
            if (!p) return cli_err(".npy header: 'descr' is not a simple type string");
            have_descr = 1;
        } else if (!strcmp(key, "fortran_order")) {
            if ((size_t)(e - p) >= 4 && !memcmp(p, "True", 4)) { h->fortran_order = 1; p += 4; }
            else if ((size_t)(e - p) >= 5 && !memcmp(p, "False", 5)) { h->fortran_order = 0; p += 5; }
            else return cli_err(".npy header: 'fortran_order' is not True or False");
            have_order = 1;
        } else if (!strcmp(key, "shape")) {
            if (p >= e || *p != '(') return cli_err(".npy header: 'shape' is not a tuple");
            p++;
            for (;;) {
                p = py_ws(p, e);
                if (p < e && *p == ')') { p++; break; }
                const char *s = p;
                while (p < e && isdigit((unsigned char)*p)) p++;
                int64_t v;
                if (p == s || cli_parse_i64(s, (size_t)(p - s), &v) != 0)
                    return cli_err(".npy header: bad shape entry");
                if (p < e && *p == 'L') p++; /* Python 2 long */
                if (h->ndim >= ZGPU_MAX_DIMS) return cli_err(".npy shape has more than %d dimensions", ZGPU_MAX_DIMS);
                h->shape[h->ndim++] = (uint64_t)v;
                p = py_ws(p, e);
                if (p < e && *p == ',') p++;
                else if (p < e && *p == ')') { p++; break; }
                else return cli_err(".npy header: bad shape tuple");
            }
            have_shape = 1;
        } else {
            return cli_err(".npy header: unexpected key '%s'", key);
        }
        p = py_ws(p, e);
        if (p < e && *p == ',') { p++; continue; }
        if (p < e && *p == '}') break;
        return cli_err(".npy header: expected ',' or '}'");
    }
    if (!have_descr || !have_order || !have_shape)
        return cli_err(".npy header lacks 'descr', 'fortran_order' or 'shape'");
    if (cli_dtype_from_descr(h->descr, &h->dtype, &h->itemsize, &h->nonnative) != 0) return -1;
    uint64_t ne = 0, nb = 0;
    return cli_shape_nbytes(h->ndim, h->shape, h->itemsize, &ne, &nb);
}

int cli_npy_read_header(FILE *f, const char *path, cli_npy_header *h) {
    unsigned char pre[12];
    size_t got = fread(pre, 1, sizeof pre, f);
    if (got < 10) return cli_err("%s: not a .npy file (too short)", path);
    if (memcmp(pre, "\x93NUMPY", 6) != 0) return cli_err("%s: not a .npy file (bad magic)", path);
    size_t hlen = pre[6] == 1 ? ((size_t)pre[8] | (size_t)pre[9] << 8)
                              : ((size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24);
    size_t hstart = pre[6] == 1 ? 10 : 12;
    if (hlen > NPY_MAX_HEADER) return cli_err("%s: .npy header is too large", path);
    unsigned char *buf = malloc(hstart + hlen);
    if (!buf) return cli_err("out of memory");
    memcpy(buf, pre, got < hstart + hlen ? got : hstart + hlen);
    int rc = 0;
    if (got < hstart + hlen) {
        size_t more = fread(buf + got, 1, hstart + hlen - got, f);
        got += more;
    }
    rc = cli_npy_parse_header(buf, got < hstart + hlen ? got : hstart + hlen, h);
    free(buf);
    if (rc != 0) {
        char msg[900];
        snprintf(msg, sizeof msg, "%s", cli_errmsg());
        return cli_err("%s: %s", path, msg);
    }
    if (fseeko(f, (off_t)h->data_offset, SEEK_SET) != 0) return cli_err("%s: seek failed: %s", path, strerror(errno));
    return 0;
}

int cli_shape_nbytes(int ndim, const uint64_t *shape, size_t itemsize, uint64_t *nelem, uint64_t *nbytes) {
    uint64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] && n > UINT64_MAX / shape[i]) return cli_err("array size overflows 64 bits");
        n *= shape[i];
    }
    if (itemsize && n > UINT64_MAX / itemsize) return cli_err("array size overflows 64 bits");
    *nelem = n;
    *nbytes = n * itemsize;
    return 0;
}

int cli_npy_format_header(zgpu_dtype dt, size_t itemsize, int ndim, const uint64_t *shape, cli_sb *sb) {
    char descr[32];
    if (zgpu_dtype_typestr(dt, itemsize, '=', descr, sizeof descr) != ZGPU_OK) return cli_err("%s", zgpu_last_error());
    cli_sb dict = {0};
    cli_sb_printf(&dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < ndim; i++) cli_sb_printf(&dict, "%s%llu", i ? ", " : "", (unsigned long long)shape[i]);
    cli_sb_puts(&dict, ndim == 1 ? ",), }" : "), }");
    if (dict.oom) { cli_sb_free(&dict); return cli_err("out of memory"); }
    /* Version 1.0 has a 16-bit length; 2.0 a 32-bit one. Total preamble padded to 64 bytes, ending in '\n'. */
    size_t pre = 10, total = (pre + dict.n + 1 + 63) / 64 * 64;
    int major = 1;
    if (total - pre > 65535) {
        pre = 12;
        total = (pre + dict.n + 1 + 63) / 64 * 64;
        major = 2;
    }
    size_t hlen = total - pre;
    unsigned char head[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)major, 0};
    head[8] = (unsigned char)(hlen & 0xff);
    head[9] = (unsigned char)((hlen >> 8) & 0xff);
    if (major == 2) {
        head[10] = (unsigned char)((hlen >> 16) & 0xff);
        head[11] = (unsigned char)((hlen >> 24) & 0xff);
    }
    cli_sb_putn(sb, (const char *)head, pre);
    cli_sb_putn(sb, dict.p, dict.n);
    for (size_t i = pre + dict.n; i + 1 < total; i++) cli_sb_putn(sb, " ", 1);
    cli_sb_putn(sb, "\n", 1);
    cli_sb_free(&dict);
    return sb->oom ? cli_err("out of memory") : 0;
}

void cli_fortran_to_c(const void *src, void *dst, int ndim, const uint64_t *shape, size_t itemsize) {
    uint64_t total = 1;
    for (int i = 0; i < ndim; i++) total *= shape[i];
    if (total == 0) return;
    if (ndim <= 1) {
        memcpy(dst, src, total * itemsize);
        return;
    }
    /* Walk the output in C order; src offset follows Fortran strides (axis 0 fastest). */
    uint64_t fstride[ZGPU_MAX_DIMS], idx[ZGPU_MAX_DIMS] = {0};
    fstride[0] = itemsize;
    for (int i = 1; i < ndim; i++) fstride[i] = fstride[i - 1] * shape[i - 1];
    const unsigned char *s = src;
    unsigned char *d = dst;
    const uint64_t inner = shape[ndim - 1], istride = fstride[ndim - 1];
    uint64_t base = 0;
    for (uint64_t done = 0; done < total; done += inner) {
        const unsigned char *sp = s + base;
        switch (itemsize) {
        case 1: for (uint64_t k = 0; k < inner; k++) d[k] = sp[k * istride]; break;
        case 2: for (uint64_t k = 0; k < inner; k++) memcpy(d + 2 * k, sp + k * istride, 2); break;
        case 4: for (uint64_t k = 0; k < inner; k++) memcpy(d + 4 * k, sp + k * istride, 4); break;
        case 8: for (uint64_t k = 0; k < inner; k++) memcpy(d + 8 * k, sp + k * istride, 8); break;
        default: for (uint64_t k = 0; k < inner; k++) memcpy(d + itemsize * k, sp + k * istride, itemsize); break;
        }
        d += inner * itemsize;
        /* advance the odometer over axes ndim-2 .. 0 */
        for (int ax = ndim - 2; ax >= 0; ax--) {
            base += fstride[ax];
            if (++idx[ax] < shape[ax]) break;
            base -= fstride[ax] * shape[ax];
            idx[ax] = 0;
        }
    }
}

static int read_exact(FILE *f, const char *path, void *dst, size_t n) {
    unsigned char *p = dst;
    const size_t block = (size_t)64 << 20;
    while (n) {
        size_t want = n < block ? n : block;
        size_t got = fread(p, 1, want, f);
        if (got != want) {
            if (ferror(f)) return cli_err("%s: read failed: %s", path, strerror(errno));
            return cli_err("%s: file is shorter than its .npy header says", path);
        }
        p += got;
        n -= got;
    }
    return 0;
}

int cli_npy_read_block(FILE *f, const char *path, const cli_npy_header *h, uint64_t offset, void *dst,
                       size_t nbytes) {
    if (fseeko(f, (off_t)(h->data_offset + offset), SEEK_SET) != 0)
        return cli_err("%s: seek failed: %s", path, strerror(errno));
    if (read_exact(f, path, dst, nbytes) != 0) return -1;
    if (h->nonnative) cli_byteswap(dst, nbytes, cli_dtype_swap_unit(h->dtype, h->itemsize));
    return 0;
}

int cli_npy_load(const char *path, cli_npy_header *h, void **data) {
    *data = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return cli_err("%s: cannot open: %s", path, strerror(errno));
    uint64_t nelem = 0, nbytes = 0;
    void *buf = NULL;
    if (cli_npy_read_header(f, path, h) != 0 || cli_shape_nbytes(h->ndim, h->shape, h->itemsize, &nelem, &nbytes) != 0)
        goto fail;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size < h->data_offset + nbytes) {
        cli_err("%s: file holds %llu data bytes but its header says %llu", path,
                (unsigned long long)((uint64_t)st.st_size - h->data_offset), (unsigned long long)nbytes);
        goto fail;
    }
    if (nbytes > SIZE_MAX) { cli_err("%s: too large for this machine", path); goto fail; }
    buf = malloc(nbytes ? (size_t)nbytes : 1);
    if (!buf) { cli_err("%s: out of memory for %llu bytes", path, (unsigned long long)nbytes); goto fail; }
    if (cli_npy_read_block(f, path, h, 0, buf, (size_t)nbytes) != 0) goto fail;
    fclose(f);
    f = NULL;
    if (h->fortran_order && h->ndim > 1) {
        void *c = malloc(nbytes ? (size_t)nbytes : 1);
        if (!c) { cli_err("%s: out of memory for %llu bytes", path, (unsigned long long)nbytes); goto fail; }
        cli_fortran_to_c(buf, c, h->ndim, h->shape, h->itemsize);
        free(buf);
        buf = c;
    }
    h->fortran_order = 0;
    h->nonnative = 0;
    *data = buf;
    return 0;
fail:
    if (f) fclose(f);
    free(buf);
    return -1;
}

int cli_npy_save(const char *path, zgpu_dtype dt, size_t itemsize, int ndim, const uint64_t *shape,
                 const void *data) {
    if (!strcmp(path, "/dev/null")) return 0;
    uint64_t nelem = 0, nbytes = 0;
    if (cli_shape_nbytes(ndim, shape, itemsize, &nelem, &nbytes) != 0) return -1;
    cli_sb head = {0};
    if (cli_npy_format_header(dt, itemsize, ndim, shape, &head) != 0) { cli_sb_free(&head); return -1; }
    FILE *f = fopen(path, "wb");
    if (!f) { cli_sb_free(&head); return cli_err("%s: cannot create: %s", path, strerror(errno)); }
    int ok = fwrite(head.p, 1, head.n, f) == head.n;
    cli_sb_free(&head);
    const unsigned char *p = data;
    const uint64_t block = (uint64_t)64 << 20;
    for (uint64_t off = 0; ok && off < nbytes; off += block) {
        size_t n = (size_t)(nbytes - off < block ? nbytes - off : block);
        ok = fwrite(p + off, 1, n, f) == n;
    }
    int err = errno;
    if (fclose(f) != 0 && ok) { ok = 0; err = errno; }
    if (!ok) return cli_err("%s: write failed: %s", path, strerror(err));
    return 0;
}
