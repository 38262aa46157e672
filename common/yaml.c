/*
 * yaml.c: libyaml's event stream -> a small document tree with marks.
 *
 * Why a tree of our own rather than libyaml's yaml_document_t: we need the
 * file name on every node (errors are found long after loading, in another
 * layer), bookkeeping of which keys a reader consumed (unknown keys are
 * errors), merge keys, and duplicate-key detection, none of which libyaml's
 * document API gives.  All nodes belong to the document and are freed with
 * it; an alias shares the anchored node.
 */
#include "common_int.h"

#include <errno.h>
#include <string.h>
#include <yaml.h>

struct pp_doc {
    char *file;
    pp_node *root;
    pp_node **all; /* every node, for freeing: aliases share nodes */
    size_t n_all, cap_all;
};

typedef struct anchor {
    char *name;
    pp_node *node;
} anchor;

typedef struct builder {
    pp_doc *doc;
    pp_node **stack; /* open collections */
    size_t depth, cap;
    anchor *anchors;
    size_t n_anchors, cap_anchors;
    pp_error *err;
    const char *text; /* the whole input, for positions and messages */
    size_t len;
} builder;

static pp_node *node_new(builder *b, pp_node_kind kind, yaml_mark_t mark) {
    pp_doc *d = b->doc;
    pp_node *n = pp_xcalloc(1, sizeof *n);
    n->kind = kind;
    n->file = d->file;
    n->line = (int)mark.line + 1; /* libyaml counts from zero */
    n->col = (int)mark.column + 1;
    if (d->n_all == d->cap_all) {
        d->cap_all = d->cap_all ? 2 * d->cap_all : 64;
        d->all = pp_xrealloc(d->all, d->cap_all * sizeof *d->all);
    }
    d->all[d->n_all++] = n;
    return n;
}

static void node_free(pp_node *n) {
    free(n->scalar);
    free(n->items);
    free(n->keys);
    free(n->asked);
    for (size_t i = 0; i < n->n_wanted; i++) free(n->wanted[i]);
    free(n->wanted);
    free(n);
}

static void push_item(pp_node *coll, pp_node *key, pp_node *val) {
    /* Capacity grows in powers of two; n is the current count. */
    size_t n = coll->n;
    if ((n & (n - 1)) == 0) { /* n is 0 or a power of two: grow */
        size_t cap = n ? 2 * n : 4;
        coll->items = pp_xrealloc(coll->items, cap * sizeof *coll->items);
        if (coll->kind == PP_NODE_MAP) {
            coll->keys = pp_xrealloc(coll->keys, cap * sizeof *coll->keys);
            coll->asked = pp_xrealloc(coll->asked, cap);
        }
    }
    coll->items[n] = val;
    if (coll->kind == PP_NODE_MAP) {
        coll->keys[n] = key;
        coll->asked[n] = 0;
    }
    coll->n = n + 1;
}

static pp_node *map_find(const pp_node *map, const char *key, size_t upto) {
    for (size_t i = 0; i < upto; i++)
        if (strcmp(map->keys[i]->scalar, key) == 0) return map->keys[i];
    return NULL;
}

static int add_child(builder *b, pp_node *child, pp_node **pending_keys) {
    if (b->depth == 0) {
        b->doc->root = child;
        return 0;
    }
    pp_node *top = b->stack[b->depth - 1];
    if (top->kind == PP_NODE_SEQ) {
        push_item(top, NULL, child);
        return 0;
    }
    pp_node **pk = &pending_keys[b->depth - 1];
    if (!*pk) { /* this child is a key */
        if (child->kind != PP_NODE_SCALAR)
            return pp_error_at(b->err, PP_EINPUT, child, NULL,
                               "mapping keys must be plain scalars");
        pp_node *dup = map_find(top, child->scalar, top->n);
        if (dup)
            return pp_error_at(b->err, PP_EINPUT, child, child->scalar,
                               "duplicate key (first at line %d, column %d)",
                               dup->line, dup->col);
        *pk = child;
        return 0;
    }
    push_item(top, *pk, child);
    *pk = NULL;
    return 0;
}

/* Applies YAML merge keys ("<<: *base" or "<<: [*a, *b]"): pairs of the
 * merged maps are added unless the map sets the key itself. */
static int apply_merges(builder *b, pp_node *map) {
    size_t n = map->n;
    for (size_t i = 0; i < n; i++) {
        pp_node *k = map->keys[i];
        if (k->quoted || strcmp(k->scalar, "<<") != 0) continue;
        pp_node *v = map->items[i];
        size_t nsrc = v->kind == PP_NODE_SEQ ? v->n : 1;
        for (size_t j = 0; j < nsrc; j++) {
            pp_node *src = v->kind == PP_NODE_SEQ ? v->items[j] : v;
            if (src->kind != PP_NODE_MAP) {
                char got[64];
                return pp_error_at(b->err, PP_EINPUT, src, "<<",
                                   "a merge key takes a mapping or a list "
                                   "of mappings (*anchor), got %s",
                                   pp__node_desc(src, got, sizeof got));
            }
            for (size_t p = 0; p < src->n; p++)
                if (!map_find(map, src->keys[p]->scalar, map->n))
                    push_item(map, src->keys[p], src->items[p]);
        }
        map->asked[i] = 1; /* "<<" itself is not an unknown key */
    }
    return 0;
}

static int remember_anchor(builder *b, const yaml_char_t *name, pp_node *n) {
    if (!name) return 0;
    if (b->n_anchors == b->cap_anchors) {
        b->cap_anchors = b->cap_anchors ? 2 * b->cap_anchors : 8;
        b->anchors =
            pp_xrealloc(b->anchors, b->cap_anchors * sizeof *b->anchors);
    }
    /* A later anchor of the same name shadows the earlier (YAML 1.2). */
    b->anchors[b->n_anchors].name = pp_xstrdup((const char *)name);
    b->anchors[b->n_anchors].node = n;
    b->n_anchors++;
    return 0;
}

static pp_node *find_anchor(builder *b, const char *name) {
    for (size_t i = b->n_anchors; i-- > 0;)
        if (strcmp(b->anchors[i].name, name) == 0) return b->anchors[i].node;
    return NULL;
}

/* Position of a byte offset in the text, for libyaml's reader errors,
 * which carry an offset and no line or column. */
static void offset_mark(const builder *b, size_t off, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && i < b->len; i++) {
        if (b->text[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

static int syntax_error(builder *b, const yaml_parser_t *parser) {
    pp_node where = {.file = b->doc->file};
    const char *problem = parser->problem ? parser->problem : "unreadable YAML";
    if (parser->error == YAML_READER_ERROR) {
        offset_mark(b, parser->problem_offset, &where.line, &where.col);
        if (parser->problem_value != -1)
            return pp_error_at(b->err, PP_EINPUT, &where, NULL,
                               "syntax error: %s (byte 0x%02x)", problem,
                               (unsigned)parser->problem_value & 0xffu);
        return pp_error_at(b->err, PP_EINPUT, &where, NULL, "syntax error: %s",
                           problem);
    }
    where.line = (int)parser->problem_mark.line + 1;
    where.col = (int)parser->problem_mark.column + 1;
    size_t at = parser->problem_mark.index;
    /* libyaml's words for a tab are "found character that cannot start
     * any token": say what it is. */
    if (at < b->len && b->text[at] == '\t')
        return pp_error_at(b->err, PP_EINPUT, &where, NULL,
                           "syntax error: tab character in indentation "
                           "(YAML indents with spaces)");
    /* libyaml's context says what it was reading and where that began:
     * often the real mistake (an unclosed quote) is there, not at the end
     * of the stream where it gave up. */
    if (parser->context &&
        (parser->context_mark.line != parser->problem_mark.line ||
         parser->context_mark.column != parser->problem_mark.column))
        return pp_error_at(b->err, PP_EINPUT, &where, NULL,
                           "syntax error: %s %s (begun at line %d, "
                           "column %d)",
                           problem, parser->context,
                           (int)parser->context_mark.line + 1,
                           (int)parser->context_mark.column + 1);
    if (parser->context)
        return pp_error_at(b->err, PP_EINPUT, &where, NULL,
                           "syntax error: %s %s", problem, parser->context);
    return pp_error_at(b->err, PP_EINPUT, &where, NULL, "syntax error: %s",
                       problem);
}

static int parse_events(builder *b, yaml_parser_t *parser) {
    pp_node **pending = NULL;
    size_t pending_cap = 0;
    int rc = 0, docs = 0;
    bool done = false;

    while (!done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(parser, &ev)) {
            rc = syntax_error(b, parser);
            break;
        }
        pp_node *n = NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT: done = true; break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1) {
                pp_node where = {.file = b->doc->file,
                                 .line = (int)ev.start_mark.line + 1,
                                 .col = (int)ev.start_mark.column + 1};
                rc = pp_error_at(b->err, PP_EINPUT, &where, NULL,
                                 "expected one YAML document, found a "
                                 "second");
            }
            break;
        case YAML_SCALAR_EVENT:
            n = node_new(b, PP_NODE_SCALAR, ev.start_mark);
            n->scalar = pp_xstrdup((const char *)ev.data.scalar.value);
            n->quoted = ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
            remember_anchor(b, ev.data.scalar.anchor, n);
            rc = add_child(b, n, pending);
            break;
        case YAML_ALIAS_EVENT: {
            const char *name = (const char *)ev.data.alias.anchor;
            n = find_anchor(b, name);
            if (!n) {
                pp_node where = {.file = b->doc->file,
                                 .line = (int)ev.start_mark.line + 1,
                                 .col = (int)ev.start_mark.column + 1};
                /* Name the key whose value it is, when there is one. */
                const char *key = NULL;
                if (b->depth > 0 &&
                    b->stack[b->depth - 1]->kind == PP_NODE_MAP &&
                    pending[b->depth - 1])
                    key = pending[b->depth - 1]->scalar;
                rc = pp_error_at(b->err, PP_EINPUT, &where, key,
                                 "unknown anchor \"%s\"", name);
            } else {
                rc = add_child(b, n, pending);
            }
            break;
        }
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            bool is_map = ev.type == YAML_MAPPING_START_EVENT;
            n = node_new(b, is_map ? PP_NODE_MAP : PP_NODE_SEQ, ev.start_mark);
            remember_anchor(b,
                            is_map ? ev.data.mapping_start.anchor
                                   : ev.data.sequence_start.anchor,
                            n);
            rc = add_child(b, n, pending);
            if (rc) break;
            if (b->depth == b->cap) {
                b->cap = b->cap ? 2 * b->cap : 16;
                b->stack = pp_xrealloc(b->stack, b->cap * sizeof *b->stack);
            }
            if (b->depth >= pending_cap) {
                size_t old = pending_cap;
                pending_cap = b->cap;
                pending = pp_xrealloc(pending, pending_cap * sizeof *pending);
                memset(pending + old, 0, (pending_cap - old) * sizeof *pending);
            }
            pending[b->depth] = NULL;
            b->stack[b->depth++] = n;
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            n = b->stack[--b->depth];
            if (n->kind == PP_NODE_MAP) rc = apply_merges(b, n);
            break;
        default: break;
        }
        yaml_event_delete(&ev);
        if (rc) break;
    }
    free(pending);
    return rc;
}

static int load(const char *name, const char *text, size_t len, pp_doc **out,
                pp_error *e) {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) pp_oom();
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    builder b = {0};
    b.err = e;
    b.text = text;
    b.len = len;
    b.doc = pp_xcalloc(1, sizeof *b.doc);
    b.doc->file = pp_xstrdup(name);
    int rc = parse_events(&b, &parser);
    if (rc == 0 && !b.doc->root) {
        pp_node where = {.file = b.doc->file, .line = 1, .col = 1};
        rc = pp_error_at(e, PP_EINPUT, &where, NULL, "empty document");
    }
    yaml_parser_delete(&parser);
    for (size_t i = 0; i < b.n_anchors; i++) free(b.anchors[i].name);
    free(b.anchors);
    free(b.stack);
    if (rc) {
        pp_doc_free(b.doc);
        return rc;
    }
    *out = b.doc;
    return 0;
}

/* Input files are small (a cluster, a model, a study); anything larger
 * than this is not one of them. */
#define PP_DOC_MAX_BYTES (64u << 20)

int pp_doc_load_file(const char *path, pp_doc **out, pp_error *e) {
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return pp_error_set(e, errno == ENOENT ? PP_ENOENT : PP_EIO,
                            "%s: cannot open: %s", path, strerror(errno));
    /* Read it whole: libyaml's reader errors give byte offsets, and the
     * text lets us turn them into lines and columns. */
    size_t len = 0, cap = 4096;
    char *text = pp_xmalloc(cap);
    size_t got;
    while ((got = fread(text + len, 1, cap - len, fp)) > 0) {
        len += got;
        if (len == cap) {
            if (cap >= PP_DOC_MAX_BYTES) {
                free(text);
                fclose(fp);
                return pp_error_set(e, PP_EINPUT,
                                    "%s: larger than %u MiB: not an input "
                                    "file",
                                    path, PP_DOC_MAX_BYTES >> 20);
            }
            cap *= 2;
            text = pp_xrealloc(text, cap);
        }
    }
    int err = ferror(fp);
    fclose(fp);
    if (err) {
        free(text);
        return pp_error_set(e, PP_EIO, "%s: read error", path);
    }
    int rc = load(path, text, len, out, e);
    free(text);
    return rc;
}

int pp_doc_load_string(const char *name, const char *text, size_t len,
                       pp_doc **out, pp_error *e) {
    return load(name, text, len, out, e);
}

void pp_doc_free(pp_doc *doc) {
    if (!doc) return;
    for (size_t i = 0; i < doc->n_all; i++) node_free(doc->all[i]);
    free(doc->all);
    free(doc->file);
    free(doc);
}

pp_node *pp_doc_root(const pp_doc *doc) {
    return doc->root;
}

/* ------------------------------------------------------------------------
 * Overrides: "node.nics.count=4" sets one scalar before a loader reads the
 * tree, so the loader's checks apply to overridden values unchanged.
 * ---------------------------------------------------------------------- */
static pp_node *set_node(pp_doc *d, pp_node_kind kind, int line, int col) {
    builder b = {.doc = d};
    yaml_mark_t m = {0, (size_t)line - 1, (size_t)col - 1};
    pp_node *n = node_new(&b, kind, m);
    n->file = "--set"; /* errors read "--set:<which>:<col>: path: ..." */
    if (kind == PP_NODE_SCALAR) n->scalar = pp_xstrdup("");
    return n;
}

int pp_doc_set(pp_doc *doc, const char *assignment, int which, pp_error *e) {
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        return pp_error_set(e, PP_EUSAGE,
                            "--set \"%s\": expected path=value, e.g. "
                            "node.nics.count=4",
                            assignment);
    char path[256];
    size_t plen = (size_t)(eq - assignment);
    if (plen >= sizeof path)
        return pp_error_set(e, PP_EUSAGE, "--set: path too long");
    memcpy(path, assignment, plen);
    path[plen] = '\0';
    int col = (int)plen + 2;

    pp_node *cur = doc->root;
    char *save = NULL;
    char walked[256] = "";
    for (char *seg = strtok_r(path, ".", &save); seg;
         seg = strtok_r(NULL, ".", &save)) {
        /* A segment may index a list: "switches[3]". */
        long index = -1;
        char *br = strchr(seg, '[');
        if (br) {
            char *end;
            index = strtol(br + 1, &end, 10);
            if (end == br + 1 || *end != ']' || end[1] != '\0' || index < 0)
                return pp_error_set(e, PP_EUSAGE,
                                    "--set \"%s\": bad index in \"%s\"",
                                    assignment, seg);
            *br = '\0';
        }
        size_t wl = strlen(walked);
        snprintf(walked + wl, sizeof walked - wl, "%s%s", wl ? "." : "", seg);
        if (cur->kind != PP_NODE_MAP)
            return pp_error_set(e, PP_EUSAGE,
                                "--set \"%s\": %s is not a mapping", assignment,
                                walked);
        pp_node *next = NULL;
        for (size_t i = 0; i < cur->n; i++)
            if (strcmp(cur->keys[i]->scalar, seg) == 0) next = cur->items[i];
        bool last = save == NULL || *save == '\0';
        if (!next) {
            if (index >= 0)
                return pp_error_set(e, PP_EUSAGE,
                                    "--set \"%s\": %s has no list to index",
                                    assignment, walked);
            pp_node *key = set_node(doc, PP_NODE_SCALAR, which, 1);
            free(key->scalar);
            key->scalar = pp_xstrdup(seg);
            next =
                set_node(doc, last ? PP_NODE_SCALAR : PP_NODE_MAP, which, col);
            push_item(cur, key, next);
        }
        if (index >= 0) {
            if (next->kind != PP_NODE_SEQ || (size_t)index >= next->n)
                return pp_error_set(e, PP_EUSAGE,
                                    "--set \"%s\": %s has no item %ld",
                                    assignment, walked, index);
            next = next->items[index];
            wl = strlen(walked);
            snprintf(walked + wl, sizeof walked - wl, "[%ld]", index);
        }
        cur = next;
    }
    if (cur->kind != PP_NODE_SCALAR)
        return pp_error_set(e, PP_EUSAGE,
                            "--set \"%s\": %s is %s; set one of its %s",
                            assignment, walked,
                            cur->kind == PP_NODE_MAP ? "a mapping" : "a list",
                            cur->kind == PP_NODE_MAP ? "keys" : "items");
    /* Aliases share nodes: an override of an aliased value changes every
     * place that refers to it, as editing the anchor would. */
    free(cur->scalar);
    cur->scalar = pp_xstrdup(eq + 1);
    cur->quoted = false;
    cur->file = "--set";
    cur->line = which;
    cur->col = col;
    return 0;
}
