/* Fuzz target for the TIFF parser (src/format/tiff/tiff_parse.c): the input is a whole file, read through the
 * parser's callback from memory (fuzz_mem.h). A crash or sanitizer report is a bug; any status is fine. What parses
 * must hold together: every page's tile table has the layout's length and every non-empty tile lies inside the file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "format/tiff/tiff.h"
#include "fuzz_mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_mem m = {data, size};
    zg_tiff_file f;
    if (zg_tiff_parse(fuzz_mem_read, &m, size, "fuzz.tif", &f) != ZGPU_OK) return 0;
    for (size_t i = 0; i < f.n_pages; i++) {
        const zg_tiff_page *p = &f.pages[i];
        if (p->n_chunks != p->tiles_across * p->tiles_down * p->planes) abort();
        if (!zg_tiff_dtype_name(p)) abort();
        for (uint64_t k = 0; k < p->n_chunks; k++)
            if (p->counts[k] && (p->offsets[k] > size || p->counts[k] > size - p->offsets[k])) abort();
    }
    zg_tiff_free(&f);
    return 0;
}
