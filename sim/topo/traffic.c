/*
 * traffic.c: explicit traffic matrices from YAML or CSV (traffic.h).
 *
 * CSV cells are wrapped as scalar YAML nodes with their line and column,
 * so the getters' messages (file:line:col: field: what was expected) apply
 * to both formats unchanged.
 */
#include "podplan/traffic.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef pp_traffic_flow flow_in;

/* The reader's state: the flows so far and what they are read against. */
typedef struct flows {
    const pp_cluster *c;
    const char *file;
    flow_in *f;
    size_t n, cap;
} flows;

static flow_in *push(flows *fl) {
    PP_VEC_RESERVE(fl->f, fl->cap, fl->n + 1, 64);
    flow_in *f = &fl->f[fl->n++];
    memset(f, 0, sizeof *f);
    return f;
}

/* ---- device names ------------------------------------------------------- */

/* The kind a name such as "n3.gpu5" or "spine2" is spelled as, from its
 * letters; -1 when it looks like none. */
static int spelled_kind(const char *name) {
    static const struct {
        const char *word;
        pp_dev_kind kind;
    } words[] = {
        {"gpu", PP_DEV_GPU},          {"nvs", PP_DEV_NVSWITCH},
        {"pcie", PP_DEV_PCIE_SWITCH}, {"cpu", PP_DEV_CPU},
        {"hca", PP_DEV_HCA},          {"leaf", PP_DEV_LEAF},
        {"spine", PP_DEV_SPINE},      {"core", PP_DEV_CORE},
    };
    const char *dot = strchr(name, '.');
    const char *p = dot ? dot + 1 : name;
    char word[16];
    size_t n = 0;
    while (isalpha((unsigned char)p[n]) && n < sizeof word - 1) {
        word[n] = (char)tolower((unsigned char)p[n]);
        n++;
    }
    word[n] = '\0';
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcmp(word, words[i].word) == 0) return (int)words[i].kind;
    return -1;
}

/* Resolves a device name; an unknown one is an error at `at` with the
 * nearest name of the same kind and, for server devices, their range. */
static int resolve(const pp_cluster *c, const pp_node *at, const char *path,
                   const char *name, int32_t *out, pp_error *e) {
    int32_t id = pp_cluster_find(c, name);
    if (id >= 0) {
        *out = id;
        return 0;
    }
    size_t nd;
    const pp_device *d = pp_cluster_devices(c, &nd);
    int kind = spelled_kind(name), best_d = 4;
    const char *best = NULL, *first = NULL, *last = NULL;
    for (size_t i = 0; i < nd; i++) {
        if (kind >= 0 && (int)d[i].kind != kind) continue;
        if (!first) first = d[i].name;
        last = d[i].name;
        int dist = pp_edit_distance(name, d[i].name, 3);
        if (dist < best_d) {
            best_d = dist;
            best = d[i].name;
        }
    }
    char range[160] = "";
    if (kind >= 0 && first)
        snprintf(range, sizeof range, "; %s devices are %s .. %s",
                 pp_dev_kind_name((pp_dev_kind)kind), first, last);
    if (best)
        return pp_error_at(e, PP_EINPUT, at, path,
                           "unknown device \"%s\" (did you mean \"%s\"?)%s",
                           name, best, range);
    return pp_error_at(e, PP_EINPUT, at, path,
                       "unknown device \"%s\" (devices are named as `podplan "
                       "topo export` names them: n0.gpu0, n0.hca0, leaf0, "
                       "...)%s",
                       name, range);
}

/* ---- YAML: flows: [{src, dst, bytes, start}, ...] ----------------------- */

static int read_yaml(flows *fl, pp_error *e) {
    pp_doc *doc = NULL;
    pp_node *list;
    char p[64], q[80];
    int rc = pp_doc_load_file(fl->file, &doc, e);
    if (rc) return rc;
    pp_node *root = pp_doc_root(doc);
    if ((rc = pp_node_expect(root, "", PP_NODE_MAP, e)) ||
        (rc = pp_map_node(root, "", "flows", PP_REQUIRED, PP_NODE_SEQ, &list,
                          e)) ||
        (rc = pp_map_done(root, "", e)))
        goto out;
    for (size_t i = 0; i < list->n && rc == 0; i++) {
        pp_node *it = list->items[i];
        const char *s, *d;
        pp_path_index(p, sizeof p, "flows", i);
        flow_in *f = push(fl);
        f->line = it->line;
        f->col = it->col;
        if ((rc = pp_node_expect(it, p, PP_NODE_MAP, e)) ||
            (rc = pp_map_string(it, p, "src", PP_REQUIRED, &s, e)) ||
            (rc = resolve(fl->c, pp_map_get(it, "src"),
                          pp_path(q, sizeof q, p, "src"), s, &f->src, e)) ||
            (rc = pp_map_string(it, p, "dst", PP_REQUIRED, &d, e)) ||
            (rc = resolve(fl->c, pp_map_get(it, "dst"),
                          pp_path(q, sizeof q, p, "dst"), d, &f->dst, e)) ||
            (rc = pp_map_quantity(it, p, "bytes", PP_REQUIRED, PP_Q_BYTES, "B",
                                  true, &f->bytes, e)) < 0 ||
            (rc = pp_map_quantity(it, p, "start", PP_OPTIONAL, PP_Q_TIME, "s",
                                  true, &f->start_s, e)) < 0 ||
            (rc = pp_map_done(it, p, e)))
            break;
    }
out:
    pp_doc_free(doc);
    return rc < 0 ? rc : 0;
}

/* ---- CSV: a header naming the columns, then one flow per line ----------- */

enum { COL_SRC, COL_DST, COL_BYTES, COL_START, COL__COUNT };
static const char *const col_names[] = {"src", "dst", "bytes", "start", NULL};

/* A cell as a scalar node, so the YAML getters' messages and their
 * file:line:col apply unchanged. */
static pp_node cell(const char *file, int line, int col, char *text) {
    pp_node n;
    memset(&n, 0, sizeof n);
    n.kind = PP_NODE_SCALAR;
    n.file = file;
    n.line = line;
    n.col = col;
    n.scalar = text;
    return n;
}

/* Splits line (modified in place) at commas into trimmed cells; returns
 * the count, at most max. */
static int split(char *line, char **cells, int *cols, int max) {
    int n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (n < max) {
            cells[n] = p;
            cols[n] = (int)(p - line) + 1;
        }
        n++;
        char *end = strchr(p, ',');
        char *stop = end ? end : p + strlen(p);
        char *t = stop;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r')) t--;
        *t = '\0';
        if (!end) break;
        p = end + 1;
    }
    return n;
}

static int read_csv(flows *fl, pp_error *e) {
    FILE *fp = fopen(fl->file, "r");
    if (!fp) return pp_error_set(e, PP_ENOENT, "%s: cannot open", fl->file);
    char buf[4096], *cells[16];
    int cols[16], at[COL__COUNT], lineno = 0, n_cols = 0, rc = 0;
    bool header = false;
    while (rc == 0 && fgets(buf, sizeof buf, fp)) {
        lineno++;
        size_t len = strlen(buf);
        if (len && buf[len - 1] == '\n')
            buf[--len] = '\0';
        else if (!feof(fp)) {
            pp_node n = cell(fl->file, lineno, 1, buf);
            rc = pp_error_at(e, PP_EINPUT, &n, NULL,
                             "line longer than %zu "
                             "characters",
                             sizeof buf - 2);
            break;
        }
        char *s = buf;
        while (*s == ' ' || *s == '\t' || *s == '\r') s++;
        if (*s == '\0' || *s == '#') continue;
        int line_len = (int)strlen(buf);
        int n = split(buf, cells, cols, 16);
        if (!header) {
            for (int k = 0; k < COL__COUNT; k++) at[k] = -1;
            if (n > 16) n = 16;
            for (int i = 0; i < n && rc == 0; i++) {
                pp_node h = cell(fl->file, lineno, cols[i], cells[i]);
                int k = 0;
                while (col_names[k] && strcmp(cells[i], col_names[k])) k++;
                if (!col_names[k]) {
                    const char *best = NULL;
                    for (int j = 0; col_names[j]; j++)
                        if (pp_edit_distance(cells[i], col_names[j], 2) <= 2)
                            best = col_names[j];
                    rc = best ? pp_error_at(e, PP_EINPUT, &h, "header",
                                            "unknown column \"%s\" (did you "
                                            "mean \"%s\"?)",
                                            cells[i], best)
                              : pp_error_at(e, PP_EINPUT, &h, "header",
                                            "unknown column \"%s\" (expected "
                                            "src,dst,bytes,start)",
                                            cells[i]);
                } else if (at[k] >= 0) {
                    rc = pp_error_at(e, PP_EINPUT, &h, "header",
                                     "column \"%s\" given twice", cells[i]);
                } else {
                    at[k] = i;
                }
            }
            for (int k = 0; k < COL_START && rc == 0; k++)
                if (at[k] < 0) {
                    pp_node h = cell(fl->file, lineno, 1, buf);
                    rc = pp_error_at(e, PP_EINPUT, &h, "header",
                                     "missing column \"%s\" (the header is "
                                     "src,dst,bytes[,start])",
                                     col_names[k]);
                }
            n_cols = n;
            header = true;
            continue;
        }
        if (n != n_cols) {
            pp_node h = cell(fl->file, lineno, line_len + 1, buf);
            rc = pp_error_at(e, PP_EINPUT, &h, NULL,
                             "expected %d fields as in the header, got %d",
                             n_cols, n);
            break;
        }
        flow_in *f = push(fl);
        f->line = lineno;
        f->col = 1;
        pp_node c[COL__COUNT];
        for (int k = 0; k < COL__COUNT; k++)
            if (at[k] >= 0)
                c[k] = cell(fl->file, lineno, cols[at[k]], cells[at[k]]);
        const char *name;
        if ((rc = pp_node_string(&c[COL_SRC], "src", &name, e)) ||
            (rc = resolve(fl->c, &c[COL_SRC], "src", name, &f->src, e)) ||
            (rc = pp_node_string(&c[COL_DST], "dst", &name, e)) ||
            (rc = resolve(fl->c, &c[COL_DST], "dst", name, &f->dst, e)) ||
            (rc = pp_node_quantity(&c[COL_BYTES], "bytes", PP_Q_BYTES, "B",
                                   true, &f->bytes, e)))
            break;
        if (at[COL_START] >= 0)
            rc = pp_node_quantity(&c[COL_START], "start", PP_Q_TIME, "s", true,
                                  &f->start_s, e);
    }
    if (rc == 0 && ferror(fp))
        rc = pp_error_set(e, PP_EIO, "%s: read error", fl->file);
    if (rc == 0 && !header) {
        pp_node h = cell(fl->file, lineno ? lineno : 1, 1, (char *)"");
        rc = pp_error_at(e, PP_EINPUT, &h, "header",
                         "no header line (expected src,dst,bytes,start)");
    }
    fclose(fp);
    return rc;
}

static bool is_csv(const char *path) {
    size_t n = strlen(path);
    return n >= 4 && (strcmp(path + n - 4, ".csv") == 0 ||
                      strcmp(path + n - 4, ".CSV") == 0);
}

/* Routes every flow before the run, so that a pair with no path is a
 * located input error rather than a failure halfway through. */
static int check_routes(flows *fl, uint64_t seed, pp_error *e) {
    pp_router *r = NULL;
    int rc = pp_router_new(fl->c, seed, &r, e);
    for (size_t i = 0; i < fl->n && rc == 0; i++) {
        const int32_t *path;
        size_t n;
        double lat, bw;
        pp_error why = PP_ERROR_INIT;
        if (pp_route(r, fl->f[i].src, fl->f[i].dst, 0, &path, &n, &lat, &bw,
                     &why)) {
            pp_node at =
                cell(fl->file, fl->f[i].line, fl->f[i].col, (char *)"");
            char p[64];
            rc = pp_error_at(e, PP_EINPUT, &at,
                             pp_path_index(p, sizeof p, "flows", i), "%s",
                             why.msg);
        }
    }
    pp_router_free(r);
    return rc;
}

int pp_traffic_load(const char *path, const pp_cluster *c, uint64_t seed,
                    pp_traffic **out, pp_error *e) {
    flows fl = {c, path, NULL, 0, 0};
    if (!path || !c || !out)
        return pp_error_set(e, PP_EINVAL, "pp_traffic_load: NULL argument");
    int rc = is_csv(path) ? read_csv(&fl, e) : read_yaml(&fl, e);
    if (rc == 0) rc = check_routes(&fl, seed, e);
    if (rc) {
        free(fl.f);
        return rc;
    }
    pp_traffic *t = pp_xmalloc(sizeof *t);
    t->file = pp_xstrdup(path);
    t->flows = fl.f;
    t->n = fl.n;
    *out = t;
    return 0;
}

void pp_traffic_free(pp_traffic *t) {
    if (!t) return;
    free(t->file);
    free(t->flows);
    free(t);
}
