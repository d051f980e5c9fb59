/* The S3 XML responses zgpu reads (ListObjectsV2, InitiateMultipartUpload, error bodies) and the one body it
 * writes (CompleteMultipartUpload). A small scanner over (pointer, length) input that is never NUL-terminated:
 * every read is checked against the length, nesting is checked tag by tag, the five predefined entities and
 * numeric character references are decoded, and anything else (a DTD, an unknown entity, a truncated document)
 * is an error with the byte offset, never a guess. */
#include "store/s3/xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/status.h"

#define XML_MAX_DEPTH 32 /* S3's documents nest 3 or 4 deep */

typedef struct xml_walk {
    const char *names[XML_MAX_DEPTH]; /* open elements, pointing into the input */
    size_t lens[XML_MAX_DEPTH];
    int has_child[XML_MAX_DEPTH];
    int depth;                        /* open elements; the innermost is names[depth - 1] */
    const char *what;                 /* the document's kind, for messages */
    size_t pos;                       /* the offset being read, for messages */
} xml_walk;

/* on_start: an element opened (it is names[depth - 1]). on_end: it is about to close; text is its decoded
 * character data when it has no child elements (leaf = 1). Non-OK stops the walk with that status. */
typedef struct xml_handler {
    zgpu_status (*on_start)(void *ctx, const xml_walk *w);
    zgpu_status (*on_end)(void *ctx, const xml_walk *w, const char *text, size_t len, int leaf);
    void *ctx;
} xml_handler;

static zgpu_status bad_xml(const xml_walk *w, const char *why) {
    return zg_error(ZGPU_ERR_IO, "S3 %s response: malformed XML at byte %zu: %s", w->what, w->pos, why);
}

/* Element level's local name (a namespace prefix "s3:" dropped) equals name. */
static int name_is(const xml_walk *w, int level, const char *name) {
    if (level < 0 || level >= w->depth) return 0;
    const char *s = w->names[level];
    size_t n = w->lens[level];
    const char *colon = memchr(s, ':', n);
    if (colon) { n -= (size_t)(colon + 1 - s); s = colon + 1; }
    return strlen(name) == n && memcmp(s, name, n) == 0;
}

/* The innermost open element is `name`, a child of the root (parent NULL) or a child of the root's child
 * `parent`: S3's documents are that flat, and deeper namesakes (<Owner><ID>) are other things. */
static int at(const xml_walk *w, const char *parent, const char *name) {
    int top = w->depth - 1;
    if (!name_is(w, top, name)) return 0;
    return parent ? top == 2 && name_is(w, 1, parent) : top == 1;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static size_t find(const char *s, size_t n, size_t from, const char *pat) {
    size_t pn = strlen(pat);
    for (size_t i = from; i + pn <= n; i++)
        if (memcmp(s + i, pat, pn) == 0) return i;
    return (size_t)-1;
}

static int starts(const char *s, size_t n, size_t i, const char *pat) {
    size_t pn = strlen(pat);
    return i + pn <= n && memcmp(s + i, pat, pn) == 0;
}

static zgpu_status put_utf8(zg_buf *b, uint32_t cp) {
    uint8_t u[4];
    size_t k;
    if (cp < 0x80) { u[0] = (uint8_t)cp; k = 1; }
    else if (cp < 0x800) { u[0] = (uint8_t)(0xC0 | cp >> 6); u[1] = (uint8_t)(0x80 | (cp & 63)); k = 2; }
    else if (cp < 0x10000) {
        u[0] = (uint8_t)(0xE0 | cp >> 12); u[1] = (uint8_t)(0x80 | ((cp >> 6) & 63)); u[2] = (uint8_t)(0x80 | (cp & 63));
        k = 3;
    } else {
        u[0] = (uint8_t)(0xF0 | cp >> 18); u[1] = (uint8_t)(0x80 | ((cp >> 12) & 63));
        u[2] = (uint8_t)(0x80 | ((cp >> 6) & 63)); u[3] = (uint8_t)(0x80 | (cp & 63));
        k = 4;
    }
    return zg_buf_append(b, u, k);
}

/* Decodes the reference at s[*i] == '&' onto b and moves *i past its ';'. */
static zgpu_status decode_entity(xml_walk *w, const char *s, size_t n, size_t *i, zg_buf *b) {
    size_t start = *i + 1, end = start;
    while (end < n && end - start < 10 && s[end] != ';') end++; /* "#x10FFFF" is the longest we accept */
    w->pos = *i;
    if (end >= n || s[end] != ';') return bad_xml(w, "'&' without a ';' (an unescaped '&' or an unknown entity)");
    const char *e = s + start;
    size_t en = end - start;
    static const struct { const char *name; char c; } named[] = {
        {"lt", '<'}, {"gt", '>'}, {"amp", '&'}, {"quot", '"'}, {"apos", '\''}};
    for (size_t k = 0; k < sizeof named / sizeof *named; k++)
        if (en == strlen(named[k].name) && memcmp(e, named[k].name, en) == 0) {
            *i = end + 1;
            return zg_buf_append(b, &named[k].c, 1);
        }
    if (en < 2 || e[0] != '#') return bad_xml(w, "an entity other than &lt; &gt; &amp; &quot; &apos; or &#N;");
    int hex = e[1] == 'x' || e[1] == 'X';
    size_t d = hex ? 2 : 1;
    if (d >= en) return bad_xml(w, "a character reference without digits");
    uint32_t cp = 0;
    for (; d < en; d++) {
        char c = e[d];
        int v = c >= '0' && c <= '9' ? c - '0'
                : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
                : hex && c >= 'A' && c <= 'F' ? c - 'A' + 10
                : -1;
        if (v < 0) return bad_xml(w, "a bad digit in a character reference");
        cp = cp * (hex ? 16u : 10u) + (uint32_t)v;
        if (cp > 0x10FFFF) return bad_xml(w, "a character reference beyond U+10FFFF");
    }
    /* XML's Char production: no NUL (keys are C strings), no other C0 control but tab, LF, CR, no surrogates. */
    if ((cp < 0x20 && cp != 0x9 && cp != 0xA && cp != 0xD) || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE ||
        cp == 0xFFFF)
        return bad_xml(w, "a character reference to a character XML does not allow");
    *i = end + 1;
    return put_utf8(b, cp);
}

/* Character data s[from, to) onto b, references decoded and line ends normalised to '\n' (as XML asks). */
static zgpu_status append_text(xml_walk *w, const char *s, size_t from, size_t to, zg_buf *b) {
    size_t i = from;
    while (i < to) {
        size_t j = i;
        while (j < to && s[j] != '&' && s[j] != '\r' && s[j] != '\0') j++;
        ZG_FORWARD(zg_buf_append(b, s + i, j - i));
        if (j == to) break;
        if (s[j] == '\0') { w->pos = j; return bad_xml(w, "a NUL byte"); }
        if (s[j] == '\r') {
            ZG_FORWARD(zg_buf_append(b, "\n", 1));
            i = j + 1 < to && s[j + 1] == '\n' ? j + 2 : j + 1;
            continue;
        }
        i = j;
        ZG_FORWARD(decode_entity(w, s, to, &i, b));
    }
    return ZGPU_OK;
}

static zgpu_status walk(const char *s, size_t n, const char *what, const xml_handler *h) {
    xml_walk w;
    memset(&w, 0, sizeof w);
    w.what = what;
    if (!s && n) return bad_xml(&w, "no data");
    zg_buf text = ZG_BUF_INIT;
    zgpu_status st = ZGPU_OK;
    int root_seen = 0;
    size_t i = 0;
    if (starts(s, n, 0, "\xEF\xBB\xBF")) i = 3; /* a UTF-8 byte order mark */
    while (i < n && st == ZGPU_OK) {
        w.pos = i;
        if (s[i] != '<') { /* character data up to the next tag */
            const char *lt = memchr(s + i, '<', n - i);
            size_t j = lt ? (size_t)(lt - s) : n;
            if (w.depth == 0) {
                for (size_t k = i; k < j; k++)
                    if (!is_space(s[k])) { w.pos = k; st = bad_xml(&w, "text outside the root element"); break; }
            } else {
                st = append_text(&w, s, i, j, &text);
            }
            i = j;
            continue;
        }
        if (starts(s, n, i, "<?") || starts(s, n, i, "<!--")) { /* XML declaration, processing instruction, comment */
            int comment = s[i + 1] == '!';
            size_t e = find(s, n, i + (comment ? 4 : 2), comment ? "-->" : "?>");
            if (e == (size_t)-1) { st = bad_xml(&w, comment ? "a comment not closed" : "'<?' not closed by '?>'"); break; }
            i = e + (comment ? 3 : 2);
            continue;
        }
        if (starts(s, n, i, "<![CDATA[")) {
            size_t e = find(s, n, i + 9, "]]>");
            if (w.depth == 0) { st = bad_xml(&w, "CDATA outside the root element"); break; }
            if (e == (size_t)-1) { st = bad_xml(&w, "a CDATA section not closed"); break; }
            if (memchr(s + i + 9, '\0', e - i - 9)) { st = bad_xml(&w, "a NUL byte"); break; }
            st = zg_buf_append(&text, s + i + 9, e - i - 9);
            i = e + 3;
            continue;
        }
        if (starts(s, n, i, "<!")) { st = bad_xml(&w, "a DTD or declaration (not supported)"); break; }
        int closing = i + 1 < n && s[i + 1] == '/';
        size_t ns = i + 1 + (size_t)closing, ne = ns;
        while (ne < n && !is_space(s[ne]) && s[ne] != '>' && s[ne] != '/' && s[ne] != '<' && s[ne] != '&' &&
               s[ne] != '\0')
            ne++;
        if (ne == ns) { st = bad_xml(&w, ne >= n ? "the document ends inside a tag" : "a tag without a name"); break; }
        if (closing) {
            size_t k = ne;
            while (k < n && is_space(s[k])) k++;
            if (k >= n) { st = bad_xml(&w, "the document ends inside a tag"); break; }
            if (s[k] != '>') { st = bad_xml(&w, "junk in a closing tag"); break; }
            int top = w.depth - 1;
            if (top < 0 || w.lens[top] != ne - ns || memcmp(w.names[top], s + ns, ne - ns) != 0) {
                st = bad_xml(&w, "a closing tag that does not match the open element");
                break;
            }
            if (h->on_end) {
                int leaf = !w.has_child[top];
                st = h->on_end(h->ctx, &w, leaf && text.data ? (const char *)text.data : "", leaf ? text.size : 0, leaf);
                if (st != ZGPU_OK) break;
            }
            w.depth--;
            text.size = 0;
            i = k + 1;
            continue;
        }
        /* A start tag: skip its attributes (quoted values may hold '>' or '/'). */
        size_t k = ne;
        char quote = 0;
        for (; k < n; k++) {
            char c = s[k];
            if (c == '\0') break;
            if (quote) { if (c == quote) quote = 0; }
            else if (c == '"' || c == '\'') quote = c;
            else if (c == '>' || c == '<') break;
        }
        if (k >= n) { st = bad_xml(&w, "the document ends inside a tag"); break; }
        if (s[k] != '>') { w.pos = k; st = bad_xml(&w, s[k] ? "'<' inside a tag" : "a NUL byte"); break; }
        int empty = s[k - 1] == '/';
        if (w.depth == 0 && root_seen) { st = bad_xml(&w, "a second root element"); break; }
        if (w.depth == XML_MAX_DEPTH) { st = bad_xml(&w, "elements nested too deep"); break; }
        if (w.depth > 0) w.has_child[w.depth - 1] = 1;
        w.names[w.depth] = s + ns;
        w.lens[w.depth] = ne - ns;
        w.has_child[w.depth] = 0;
        w.depth++;
        root_seen = 1;
        text.size = 0;
        if (h->on_start && (st = h->on_start(h->ctx, &w)) != ZGPU_OK) break;
        if (empty) { /* <Name/>: an empty leaf */
            if (h->on_end && (st = h->on_end(h->ctx, &w, "", 0, 1)) != ZGPU_OK) break;
            w.depth--;
        }
        i = k + 1;
    }
    if (st == ZGPU_OK) {
        w.pos = n;
        if (!root_seen) st = bad_xml(&w, "no root element (an empty or non-XML body)");
        else if (w.depth > 0) st = bad_xml(&w, "the document ends before its elements close (truncated)");
    }
    zg_buf_free(&text);
    return st;
}

/* text[0, len) into a malloc'd C string (the walk's text never holds a NUL). */
static char *dup_text(const char *text, size_t len) {
    char *p = malloc(len + 1);
    if (!p) return NULL;
    memcpy(p, text, len);
    p[len] = '\0';
    return p;
}

static void trim_span(const char **t, size_t *len) {
    while (*len && is_space(**t)) { (*t)++; (*len)--; }
    while (*len && is_space((*t)[*len - 1])) (*len)--;
}

/* ---- ListObjectsV2 ---- */

typedef struct list_ctx {
    zg_s3_list_page *page;
    size_t cap_objects, cap_prefixes;
    char *key;        /* the open <Contents>'s <Key> */
    uint64_t size;
    int wrong_root;   /* the root is not ListBucketResult */
} list_ctx;

static zgpu_status list_start(void *ctx, const xml_walk *w) {
    list_ctx *c = ctx;
    if (w->depth == 1 && !name_is(w, 0, "ListBucketResult")) {
        c->wrong_root = 1;
        return ZGPU_ERR_IO; /* the message is made by zg_s3_parse_list */
    }
    if (at(w, NULL, "Contents")) {
        free(c->key);
        c->key = NULL;
        c->size = 0;
    }
    return ZGPU_OK;
}

static zgpu_status grow(void **arr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return ZGPU_OK;
    size_t nc = *cap ? *cap * 2 : 16;
    if (nc < need || nc > SIZE_MAX / elem) return zg_error(ZGPU_ERR_NO_MEMORY, "S3 listing: too many entries");
    void *p = realloc(*arr, nc * elem);
    if (!p) return zg_error(ZGPU_ERR_NO_MEMORY, "S3 listing: out of memory");
    *arr = p;
    *cap = nc;
    return ZGPU_OK;
}

static zgpu_status parse_u64(const xml_walk *w, const char *t, size_t len, uint64_t *out) {
    trim_span(&t, &len);
    if (!len) return bad_xml(w, "an empty <Size>");
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (t[i] < '0' || t[i] > '9') return bad_xml(w, "a <Size> that is not a decimal number");
        unsigned d = (unsigned)(t[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return bad_xml(w, "a <Size> beyond 2^64 - 1");
        v = v * 10 + d;
    }
    *out = v;
    return ZGPU_OK;
}

static zgpu_status list_end(void *ctx, const xml_walk *w, const char *text, size_t len, int leaf) {
    list_ctx *c = ctx;
    zg_s3_list_page *p = c->page;
    if (at(w, "Contents", "Key")) {
        if (!leaf) return bad_xml(w, "a <Key> with child elements");
        free(c->key);
        if (!(c->key = dup_text(text, len))) return zg_error(ZGPU_ERR_NO_MEMORY, "S3 listing: out of memory");
    } else if (at(w, "Contents", "Size")) {
        if (!leaf) return bad_xml(w, "a <Size> with child elements");
        ZG_FORWARD(parse_u64(w, text, len, &c->size));
    } else if (at(w, NULL, "Contents")) {
        if (!c->key) return bad_xml(w, "a <Contents> without a <Key>");
        ZG_FORWARD(grow((void **)&p->objects, &c->cap_objects, p->n_objects + 1, sizeof *p->objects));
        p->objects[p->n_objects].key = c->key;
        p->objects[p->n_objects].size = c->size;
        p->n_objects++;
        c->key = NULL;
    } else if (at(w, "CommonPrefixes", "Prefix")) {
        if (!leaf) return bad_xml(w, "a <Prefix> with child elements");
        ZG_FORWARD(grow((void **)&p->prefixes, &c->cap_prefixes, p->n_prefixes + 1, sizeof *p->prefixes));
        if (!(p->prefixes[p->n_prefixes] = dup_text(text, len)))
            return zg_error(ZGPU_ERR_NO_MEMORY, "S3 listing: out of memory");
        p->n_prefixes++;
    } else if (at(w, NULL, "IsTruncated")) {
        trim_span(&text, &len);
        if (len == 4 && memcmp(text, "true", 4) == 0) p->truncated = 1;
        else if (len == 5 && memcmp(text, "false", 5) == 0) p->truncated = 0;
        else return bad_xml(w, "<IsTruncated> is neither true nor false");
    } else if (at(w, NULL, "NextContinuationToken")) {
        if (!leaf) return bad_xml(w, "a <NextContinuationToken> with child elements");
        free(p->continuation);
        if (!(p->continuation = dup_text(text, len))) return zg_error(ZGPU_ERR_NO_MEMORY, "S3 listing: out of memory");
    }
    return ZGPU_OK;
}

void zg_s3_list_page_free(zg_s3_list_page *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n_objects; i++) free(p->objects[i].key);
    for (size_t i = 0; i < p->n_prefixes; i++) free(p->prefixes[i]);
    free(p->objects);
    free(p->prefixes);
    free(p->continuation);
    memset(p, 0, sizeof *p);
}

/* The message for a body whose root is not the one expected: S3's own error when it is one. */
static zgpu_status wrong_root(const char *xml, size_t n, const char *what, const char *want) {
    char code[128], msg[512];
    zg_s3_parse_error(xml, n, code, sizeof code, msg, sizeof msg);
    if (code[0]) return zg_error(ZGPU_ERR_IO, "S3 %s: the server answered with error %s: %s", what, code, msg);
    return zg_error(ZGPU_ERR_IO, "S3 %s response: the root element is not <%s>", what, want);
}

zgpu_status zg_s3_parse_list(const char *xml, size_t n, zg_s3_list_page *out) {
    ZG_RETURN_IF(!out, ZGPU_ERR_INVALID_ARGUMENT, "zg_s3_parse_list: NULL output");
    memset(out, 0, sizeof *out);
    list_ctx c;
    memset(&c, 0, sizeof c);
    c.page = out;
    xml_handler h = {list_start, list_end, &c};
    zgpu_status st = walk(xml, n, "ListObjectsV2", &h);
    free(c.key);
    if (st == ZGPU_OK && out->truncated && !out->continuation)
        st = zg_error(ZGPU_ERR_IO, "S3 ListObjectsV2 response: <IsTruncated>true without a <NextContinuationToken>");
    if (st != ZGPU_OK) {
        zg_s3_list_page_free(out);
        if (c.wrong_root) st = wrong_root(xml, n, "ListObjectsV2", "ListBucketResult");
    }
    return st;
}

/* ---- InitiateMultipartUpload ---- */

typedef struct upload_ctx {
    char *out;
    size_t cap;
    int found, wrong_root;
} upload_ctx;

static zgpu_status upload_start(void *ctx, const xml_walk *w) {
    upload_ctx *c = ctx;
    if (w->depth == 1 && !name_is(w, 0, "InitiateMultipartUploadResult")) {
        c->wrong_root = 1;
        return ZGPU_ERR_IO;
    }
    return ZGPU_OK;
}

static zgpu_status upload_end(void *ctx, const xml_walk *w, const char *text, size_t len, int leaf) {
    upload_ctx *c = ctx;
    if (!at(w, NULL, "UploadId")) return ZGPU_OK;
    trim_span(&text, &len);
    if (!leaf || len == 0) return bad_xml(w, "an empty <UploadId>");
    if (len >= c->cap)
        return zg_error(ZGPU_ERR_IO, "S3 InitiateMultipartUpload response: <UploadId> of %zu bytes (at most %zu)", len,
                        c->cap ? c->cap - 1 : 0);
    memcpy(c->out, text, len);
    c->out[len] = '\0';
    c->found = 1;
    return ZGPU_OK;
}

zgpu_status zg_s3_parse_upload_id(const char *xml, size_t n, char *out, size_t cap) {
    ZG_RETURN_IF(!out || !cap, ZGPU_ERR_INVALID_ARGUMENT, "zg_s3_parse_upload_id: no output buffer");
    out[0] = '\0';
    upload_ctx c = {out, cap, 0, 0};
    xml_handler h = {upload_start, upload_end, &c};
    zgpu_status st = walk(xml, n, "InitiateMultipartUpload", &h);
    if (st == ZGPU_OK && !c.found)
        st = zg_error(ZGPU_ERR_IO, "S3 InitiateMultipartUpload response: no <UploadId>");
    if (st != ZGPU_OK) {
        out[0] = '\0';
        if (c.wrong_root) st = wrong_root(xml, n, "InitiateMultipartUpload", "InitiateMultipartUploadResult");
    }
    return st;
}

/* ---- error bodies ---- */

typedef struct error_ctx {
    char *code, *msg;
    size_t code_cap, msg_cap;
} error_ctx;

/* Copies text into dst (cap bytes), cut at a character boundary when it does not fit. */
static void copy_cut(char *dst, size_t cap, const char *text, size_t len) {
    if (!dst || !cap) return;
    if (len >= cap) {
        len = cap - 1;
        while (len && ((unsigned char)text[len] & 0xC0) == 0x80) len--; /* not inside a UTF-8 sequence */
    }
    memcpy(dst, text, len);
    dst[len] = '\0';
}

static zgpu_status error_start(void *ctx, const xml_walk *w) {
    (void)ctx;
    return w->depth == 1 && !name_is(w, 0, "Error") ? ZGPU_ERR_IO : ZGPU_OK;
}

static zgpu_status error_end(void *ctx, const xml_walk *w, const char *text, size_t len, int leaf) {
    error_ctx *c = ctx;
    if (!leaf) return ZGPU_OK;
    trim_span(&text, &len);
    if (at(w, NULL, "Code")) copy_cut(c->code, c->code_cap, text, len);
    else if (at(w, NULL, "Message")) copy_cut(c->msg, c->msg_cap, text, len);
    return ZGPU_OK;
}

void zg_s3_parse_error(const char *xml, size_t n, char *code, size_t code_cap, char *message, size_t msg_cap) {
    if (code && code_cap) code[0] = '\0';
    if (message && msg_cap) message[0] = '\0';
    error_ctx c = {code, message, code_cap, msg_cap};
    xml_handler h = {error_start, error_end, &c};
    char saved[ZG_ERRMSG_MAX];
    zg_error_save(saved); /* parsing an error body must not replace the message of the failure it explains */
    /* What completed before a malformation is kept: a cut-off body still tells its <Code>. */
    (void)walk(xml, n, "error", &h);
    zg_error_restore(saved);
}

/* ---- CompleteMultipartUpload ---- */

static int append_escaped(zg_buf *b, const char *s) {
    for (; *s; s++) {
        const char *rep = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : NULL;
        if (zg_buf_append(b, rep ? rep : s, rep ? strlen(rep) : 1) != ZGPU_OK) return -1;
    }
    return 0;
}

static int append_str(zg_buf *b, const char *s) { return zg_buf_append(b, s, strlen(s)) == ZGPU_OK ? 0 : -1; }

char *zg_s3_complete_body(size_t n, const char *const *etags) {
    if (n && !etags) return NULL;
    zg_buf b = ZG_BUF_INIT;
    int bad = append_str(&b, "<CompleteMultipartUpload>");
    for (size_t i = 0; i < n && !bad; i++) {
        char num[48];
        if (!etags[i]) { bad = 1; break; }
        snprintf(num, sizeof num, "<Part><PartNumber>%zu</PartNumber><ETag>", i + 1);
        bad = append_str(&b, num) || append_escaped(&b, etags[i]) || append_str(&b, "</ETag></Part>");
    }
    if (!bad) bad = append_str(&b, "</CompleteMultipartUpload>") || zg_buf_append(&b, "", 1) != ZGPU_OK;
    if (bad) { zg_buf_free(&b); return NULL; }
    return (char *)b.data; /* owned by the caller now */
}

/* ---- STS AssumeRoleWithWebIdentity ---- */

typedef struct sts_ctx {
    zg_sts_credentials *out;
    int fields; /* bits: key id, secret, token, expiration */
    char code[128], msg[256]; /* an <ErrorResponse><Error>'s */
} sts_ctx;

static zgpu_status sts_end(void *ctx, const xml_walk *w, const char *text, size_t len, int leaf) {
    sts_ctx *c = ctx;
    static const char *const names[] = {"AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration"};
    if (leaf && w->depth >= 2 && name_is(w, w->depth - 2, "Error")) {
        if (name_is(w, w->depth - 1, "Code")) copy_cut(c->code, sizeof c->code, text, len);
        if (name_is(w, w->depth - 1, "Message")) copy_cut(c->msg, sizeof c->msg, text, len);
    }
    for (int k = 0; k < 4; k++) {
        /* (deeper than `at` looks: Response > Result > Credentials > field) */
        if (w->depth < 2 || !name_is(w, w->depth - 1, names[k]) || !name_is(w, w->depth - 2, "Credentials")) continue;
        trim_span(&text, &len);
        char *dst = k == 0 ? c->out->access_key_id : k == 1 ? c->out->secret_access_key
                    : k == 2 ? c->out->session_token : c->out->expiration;
        const size_t cap = k == 0 ? sizeof c->out->access_key_id : k == 1 ? sizeof c->out->secret_access_key
                           : k == 2 ? sizeof c->out->session_token : sizeof c->out->expiration;
        if (!leaf || len == 0 || len >= cap) return bad_xml(w, "an empty or overlong credentials field");
        memcpy(dst, text, len);
        dst[len] = '\0';
        c->fields |= 1 << k;
    }
    return ZGPU_OK;
}

zgpu_status zg_s3_parse_sts_credentials(const char *xml, size_t n, zg_sts_credentials *out) {
    memset(out, 0, sizeof *out);
    sts_ctx c = {out, 0, "", ""};
    xml_handler h = {NULL, sts_end, &c};
    zgpu_status st = walk(xml, n, "STS AssumeRoleWithWebIdentity", &h);
    if (st == ZGPU_OK && (c.fields & 3) != 3)
        st = zg_error(ZGPU_ERR_IO, "STS AssumeRoleWithWebIdentity response: no <Credentials>%s%s%s%s%s",
                      c.code[0] ? " (" : "", c.code, c.code[0] && c.msg[0] ? ": " : "", c.code[0] ? c.msg : "",
                      c.code[0] ? ")" : "");
    if (st != ZGPU_OK) explicit_bzero(out, sizeof *out);
    return st;
}
