/* Fuzz target for the JSON DOM: any input must parse or fail cleanly; whatever parses must survive
 * write -> parse (compact and indented) unchanged, and a clone must equal the original. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

static void check_reparse(const zj_value *v, int indent) {
    char *text = zj_write(v, indent);
    if (!text) abort(); /* only allocation failure may return NULL, and fuzz inputs are small */
    zj_value *back = NULL;
    if (zj_parse(text, strlen(text), "fuzz output", &back) != ZGPU_OK) {
        fprintf(stderr, "written JSON does not parse back: %s\n%s\n", zgpu_last_error(), text);
        abort();
    }
    if (!zj_equal(v, back)) {
        fprintf(stderr, "round trip changed the document:\n%s\n", text);
        abort();
    }
    /* Writing is deterministic: the re-parsed document writes the same bytes. */
    char *again = zj_write(back, indent);
    if (!again || strcmp(again, text) != 0) {
        fprintf(stderr, "second write differs:\n%s\n%s\n", text, again ? again : "(null)");
        abort();
    }
    free(again);
    free(text);
    zj_free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    zj_value *v = NULL;
    zgpu_status st = zj_parse((const char *)data, size, "fuzz", &v);
    if (st != ZGPU_OK) {
        if (v != NULL) abort(); /* a failed parse leaves no value behind */
        if (st == ZGPU_ERR_BAD_METADATA && strstr(zgpu_last_error(), " at line ") == NULL) {
            fprintf(stderr, "error message without a position: %s\n", zgpu_last_error());
            abort();
        }
        return 0;
    }
    check_reparse(v, 0);
    check_reparse(v, 2);
    zj_value *c = zj_clone(v);
    if (!c || !zj_equal(v, c)) abort();
    zj_free(c);
    zj_free(v);
    return 0;
}
