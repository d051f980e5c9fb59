/* Fuzz target for the S3 XML scanner (src/store/s3/xml.c): any input must parse or fail cleanly as a listing, an
 * upload id and an error body, with no read past its length; a parsed page must be consistent. Then the input,
 * escaped as a key, must come back unchanged from a listing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/s3/xml.h"

static void check_listing(const uint8_t *data, size_t size) {
    zg_s3_list_page p;
    zgpu_status st = zg_s3_parse_list((const char *)data, size, &p);
    if (st != ZGPU_OK) {
        if (st != ZGPU_ERR_IO && st != ZGPU_ERR_NO_MEMORY) abort();
        if (p.objects || p.n_objects || p.prefixes || p.n_prefixes || p.continuation) abort(); /* nothing left */
        return;
    }
    for (size_t i = 0; i < p.n_objects; i++)
        if (!p.objects[i].key || strlen(p.objects[i].key) > size) abort();
    for (size_t i = 0; i < p.n_prefixes; i++)
        if (!p.prefixes[i] || strlen(p.prefixes[i]) > size) abort();
    if (p.truncated && !p.continuation) abort();
    zg_s3_list_page_free(&p);
}

/* The input (NUL bytes dropped) escaped as one key: it must parse back to exactly those bytes. */
static void check_key_roundtrip(const uint8_t *data, size_t size) {
    static const char head[] = "<ListBucketResult><Contents><Key>";
    static const char tail[] = "</Key><Size>1</Size></Contents></ListBucketResult>";
    size_t cap = sizeof head + sizeof tail + size * 6 + 1, n = 0, kn = 0;
    char *doc = malloc(cap), *want = malloc(size + 1);
    if (!doc || !want) abort();
    memcpy(doc, head, sizeof head - 1);
    n = sizeof head - 1;
    for (size_t i = 0; i < size; i++) {
        char c = (char)data[i];
        if (c == '\0') continue;
        want[kn++] = c;
        const char *rep = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '\r' ? "&#13;" : NULL;
        if (rep) { memcpy(doc + n, rep, strlen(rep)); n += strlen(rep); }
        else doc[n++] = c;
    }
    want[kn] = '\0';
    memcpy(doc + n, tail, sizeof tail - 1);
    n += sizeof tail - 1;
    zg_s3_list_page p;
    if (zg_s3_parse_list(doc, n, &p) != ZGPU_OK) {
        fprintf(stderr, "escaped key does not parse: %s\n", zgpu_last_error());
        abort();
    }
    if (p.n_objects != 1 || strcmp(p.objects[0].key, want) != 0 || p.objects[0].size != 1) abort();
    zg_s3_list_page_free(&p);
    free(doc);
    free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* An exactly sized copy: the parsers take a length, never a NUL, and ASan sees any read past it. */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    if (size) memcpy(copy, data, size);
    check_listing(copy, size);

    char id[64];
    zgpu_status st = zg_s3_parse_upload_id((const char *)copy, size, id, sizeof id);
    if (st == ZGPU_OK ? strlen(id) == 0 || strlen(id) >= sizeof id : id[0] != '\0') abort();

    char code[16], msg[32];
    zg_s3_parse_error((const char *)copy, size, code, sizeof code, msg, sizeof msg);
    if (strlen(code) >= sizeof code || strlen(msg) >= sizeof msg) abort();
    zg_s3_parse_error((const char *)copy, size, NULL, 0, msg, 1);
    if (msg[0] != '\0') abort();
    free(copy);

    if (size <= 4096) check_key_roundtrip(data, size);
    return 0;
}
