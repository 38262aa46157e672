/*
 * cmd_flows.c: `podplan flows`, an explicit traffic matrix run on the
 * flow network.  Users bring measured traffic this way, and it lets the
 * network model be checked against other flow simulators on identical
 * inputs (the devices are named as `topo export` names them).
 */
#include "cli_int.h"

#include "podplan/sim.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const pp_cli_opt opts[] = {
    {"cluster", 'c', "C", "cluster: YAML file or a name in topologies/ (required)", false},
    {"input", 'i', "FILE", "the flows: YAML (flows: [...]) or CSV (src,dst,bytes,start) (required)", false},
    {"set", 0, "PATH=VALUE", "override a cluster field, e.g. node.nics.count=4 (repeatable)", true},
    {"fidelity", 0, "F", "flow (max-min sharing) | analytic (no contention) (default: flow)", false},
    {"seed", 0, "N", "seed of the ECMP hash (default: 0)", false},
    {"format", 0, "FMT", "table|json (default: table)", false},
    {"trace", 0, "FILE", "write a Chrome/Perfetto trace of the run to FILE", false},
    {"output", 'o', "FILE", "write to FILE atomically (default: stdout)", false},
    {NULL, 0, NULL, NULL, false},
};

static const char *const fidelity_names[] = {"analytic", "flow", NULL};

typedef struct flow_in {
    int32_t src, dst;
    double bytes, start_s, finish_s;
    int line, col; /* of the flow in the input, for messages */
} flow_in;

typedef struct flows {
    const pp_cluster *c;
    const char *file;
    flow_in *f;
    size_t n, cap;
} flows;

static flow_in *push(flows *fl) {
    if (fl->n == fl->cap) {
        fl->cap = fl->cap ? 2 * fl->cap : 64;
        fl->f = pp_xrealloc(fl->f, fl->cap * sizeof *fl->f);
    }
    flow_in *f = &fl->f[fl->n++];
    memset(f, 0, sizeof *f);
    return f;
}

/* ---- device names ------------------------------------------------------- */

/* The kind a name such as "n3.gpu5" or "spine2" is spelled as, from its
 * letters; -1 when it looks like none. */
static int spelled_kind(const char *name) {
    static const struct { const char *word; pp_dev_kind kind; } words[] = {
        {"gpu", PP_DEV_GPU},   {"nvs", PP_DEV_NVSWITCH},
        {"pcie", PP_DEV_PCIE_SWITCH}, {"cpu", PP_DEV_CPU},
        {"hca", PP_DEV_HCA},   {"leaf", PP_DEV_LEAF},
        {"spine", PP_DEV_SPINE}, {"core", PP_DEV_CORE},
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
    if ((rc = pp_node_expect(root, "", PP_NODE_MAP, e))
        || (rc = pp_map_node(root, "", "flows", PP_REQUIRED, PP_NODE_SEQ,
                             &list, e))
        || (rc = pp_map_done(root, "", e)))
        goto out;
    for (size_t i = 0; i < list->n && rc == 0; i++) {
        pp_node *it = list->items[i];
        const char *s, *d;
        pp_path_index(p, sizeof p, "flows", i);
        flow_in *f = push(fl);
        f->line = it->line;
        f->col = it->col;
        if ((rc = pp_node_expect(it, p, PP_NODE_MAP, e))
            || (rc = pp_map_string(it, p, "src", PP_REQUIRED, &s, e))
            || (rc = resolve(fl->c, pp_map_get(it, "src"),
                             pp_path(q, sizeof q, p, "src"), s, &f->src, e))
            || (rc = pp_map_string(it, p, "dst", PP_REQUIRED, &d, e))
            || (rc = resolve(fl->c, pp_map_get(it, "dst"),
                             pp_path(q, sizeof q, p, "dst"), d, &f->dst, e))
            || (rc = pp_map_quantity(it, p, "bytes", PP_REQUIRED, PP_Q_BYTES,
                                     "B", true, &f->bytes, e)) < 0
            || (rc = pp_map_quantity(it, p, "start", PP_OPTIONAL, PP_Q_TIME,
                                     "s", true, &f->start_s, e)) < 0
            || (rc = pp_map_done(it, p, e)))
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
    if (!fp)
        return pp_error_set(e, PP_ENOENT, "%s: cannot open", fl->file);
    char buf[4096], *cells[16];
    int cols[16], at[COL__COUNT], lineno = 0, n_cols = 0, rc = 0;
    bool header = false;
    while (rc == 0 && fgets(buf, sizeof buf, fp)) {
        lineno++;
        size_t len = strlen(buf);
        if (len && buf[len - 1] == '\n') buf[--len] = '\0';
        else if (!feof(fp)) {
            pp_node n = cell(fl->file, lineno, 1, buf);
            rc = pp_error_at(e, PP_EINPUT, &n, NULL, "line longer than %zu "
                             "characters", sizeof buf - 2);
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
                                            "mean \"%s\"?)", cells[i], best)
                              : pp_error_at(e, PP_EINPUT, &h, "header",
                                            "unknown column \"%s\" (expected "
                                            "src,dst,bytes,start)", cells[i]);
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
                                     "src,dst,bytes[,start])", col_names[k]);
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
        if ((rc = pp_node_string(&c[COL_SRC], "src", &name, e))
            || (rc = resolve(fl->c, &c[COL_SRC], "src", name, &f->src, e))
            || (rc = pp_node_string(&c[COL_DST], "dst", &name, e))
            || (rc = resolve(fl->c, &c[COL_DST], "dst", name, &f->dst, e))
            || (rc = pp_node_quantity(&c[COL_BYTES], "bytes", PP_Q_BYTES, "B",
                                      true, &f->bytes, e)))
            break;
        if (at[COL_START] >= 0)
            rc = pp_node_quantity(&c[COL_START], "start", PP_Q_TIME, "s",
                                  true, &f->start_s, e);
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
    return n >= 4 && (strcmp(path + n - 4, ".csv") == 0
                      || strcmp(path + n - 4, ".CSV") == 0);
}

/* ---- the run ------------------------------------------------------------ */

typedef struct run_ctx {
    flows *fl;
    pp_sim *s;
    pp_error e;
    int rc;
} run_ctx;

static void on_done(pp_sim *s, void *ctx, uint64_t i) {
    run_ctx *r = ctx;
    r->fl->f[i].finish_s = pp_sim_now(s);
}

static void on_start(pp_engine *eng, void *ctx, uint64_t i) {
    (void)eng;
    run_ctx *r = ctx;
    const flow_in *f = &r->fl->f[i];
    if (r->rc) return;
    r->rc = pp_sim_send(r->s, f->src, f->dst, f->bytes, on_done, r, i, &r->e);
    if (r->rc)
        pp_error_prefix(&r->e, "%s:%d:%d: flows[%llu]", r->fl->file, f->line,
                        f->col, (unsigned long long)i);
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
            pp_node at = cell(fl->file, fl->f[i].line, fl->f[i].col,
                              (char *)"");
            char p[64];
            rc = pp_error_at(e, PP_EINPUT, &at,
                             pp_path_index(p, sizeof p, "flows", i), "%s",
                             why.msg);
        }
    }
    pp_router_free(r);
    return rc;
}

typedef struct result {
    const char *cluster;
    int fidelity;
    flows *fl;
    double makespan_s;
} result;

static double mean_rate(const flow_in *f) {
    double t = f->finish_s - f->start_s;
    return t > 0 ? f->bytes / t : INFINITY;
}

static void print_table(FILE *fp, const void *ctx) {
    const result *r = ctx;
    const flows *fl = r->fl;
    fprintf(fp, "cluster %s, fidelity %s, %zu flow%s\n\n", r->cluster,
            fidelity_names[r->fidelity], fl->n, fl->n == 1 ? "" : "s");
    fprintf(fp, "%5s  %-12s %-12s %10s %10s %10s %10s %12s\n", "#", "src",
            "dst", "bytes", "start", "finish", "time", "mean rate");
    size_t nd;
    const pp_device *d = pp_cluster_devices(fl->c, &nd);
    for (size_t i = 0; i < fl->n; i++) {
        const flow_in *f = &fl->f[i];
        double rate = mean_rate(f);
        fprintf(fp, "%5zu  %-12s %-12s %10s %10s %10s %10s %12s\n", i,
                d[f->src].name, d[f->dst].name, pp_fmtq(f->bytes, PP_Q_BYTES),
                pp_fmtq(f->start_s, PP_Q_TIME), pp_fmtq(f->finish_s, PP_Q_TIME),
                pp_fmtq(f->finish_s - f->start_s, PP_Q_TIME),
                isfinite(rate) ? pp_fmtq(rate, PP_Q_BANDWIDTH) : "-");
    }
    fprintf(fp, "\nmakespan %s\n", pp_fmtq(r->makespan_s, PP_Q_TIME));
}

static json_t *to_json(const result *r) {
    const flows *fl = r->fl;
    size_t nd;
    const pp_device *d = pp_cluster_devices(fl->c, &nd);
    json_t *o = json_object(), *list = json_array();
    json_object_set_new(o, "cluster", json_string(r->cluster));
    json_object_set_new(o, "fidelity", json_string(fidelity_names[r->fidelity]));
    for (size_t i = 0; i < fl->n; i++) {
        const flow_in *f = &fl->f[i];
        json_t *x = json_object();
        json_object_set_new(x, "src", json_string(d[f->src].name));
        json_object_set_new(x, "dst", json_string(d[f->dst].name));
        json_object_set_new(x, "bytes", pp_json_num(f->bytes));
        json_object_set_new(x, "start_s", pp_json_num(f->start_s));
        json_object_set_new(x, "finish_s", pp_json_num(f->finish_s));
        json_object_set_new(x, "mean_rate_Bps", pp_json_num(mean_rate(f)));
        json_array_append_new(list, x);
    }
    json_object_set_new(o, "flows", list);
    json_object_set_new(o, "makespan_s", pp_json_num(r->makespan_s));
    return o;
}

static int run(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    const char *spec, *input, *sets[64], *trace_path;
    int fmt = PP_FMT_TABLE, fid = PP_FIDELITY_FLOW, status;
    int64_t seed = 0;
    pp_cluster *c = NULL;
    pp_sim *s = NULL;
    flows fl = {0};
    pp_outfile tf = {0};
    bool tracing = false;

    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc || pp_args_need(&a, "cluster", &spec, &e)
        || pp_args_need(&a, "input", &input, &e)
        || pp_args_enum(&a, "fidelity", fidelity_names, &fid, &e)
        || pp_args_int(&a, "seed", 0, INT64_MAX, &seed, &e)
        || pp_args_enum(&a, "format", pp_format_names, &fmt, &e))
        return pp_cli_fail(cmd->name, &e);
    size_t n_sets = pp_args_all(&a, "set", sets, sizeof sets / sizeof sets[0]);
    trace_path = pp_args_get(&a, "trace");

    if ((rc = pp_cluster_load(spec, sets, n_sets, NULL, &c, &e)))
        goto fail;
    fl.c = c;
    fl.file = input;
    rc = is_csv(input) ? read_csv(&fl, &e) : read_yaml(&fl, &e);
    if (rc || (rc = check_routes(&fl, (uint64_t)seed, &e))
        || (rc = pp_sim_new(c, (pp_fidelity)fid, (uint64_t)seed, &s, &e)))
        goto fail;
    if (trace_path) {
        if ((rc = pp_outfile_open(&tf, trace_path, &e))
            || (rc = pp_sim_trace(s, tf.fp, &e)))
            goto fail;
        tracing = true;
    }

    run_ctx r = {&fl, s, PP_ERROR_INIT, 0};
    pp_engine *eng = pp_sim_engine(s);
    /* In file order: flows starting together start in that order. */
    for (size_t i = 0; i < fl.n; i++)
        pp_engine_at(eng, fl.f[i].start_s, on_start, &r, i);
    pp_engine_run(eng, INFINITY);
    if (r.rc) {
        e = r.e;
        rc = r.rc;
        goto fail;
    }
    result res = {pp_cluster_info_get(c)->name, fid, &fl, 0};
    for (size_t i = 0; i < fl.n; i++)
        if (fl.f[i].finish_s > res.makespan_s)
            res.makespan_s = fl.f[i].finish_s;
    pp_sim_free(s); /* writes the trace's closing bracket */
    s = NULL;
    if (tracing) {
        tracing = false;
        if ((rc = pp_outfile_commit(&tf, &e)))
            goto fail;
    }
    status = pp_cli_emit(&a, fmt, to_json(&res), print_table, &res);
    free(fl.f);
    pp_cluster_free(c);
    return status;

fail:
    pp_sim_free(s);
    if (tracing) pp_outfile_abort(&tf);
    free(fl.f);
    pp_cluster_free(c);
    return pp_cli_fail(cmd->name, &e);
}

const pp_cli_cmd pp_cmd_flows = {
    "flows",
    "run an explicit traffic matrix on the flow network",
    "flows --cluster C --input FILE [--set PATH=VALUE]... "
    "[--fidelity analytic|flow] [--seed N] [--format table|json] "
    "[--trace FILE] [-o FILE]",
    "FILE is YAML:\n"
    "  flows:\n"
    "    - {src: n0.gpu0, dst: n1.gpu0, bytes: 1GB, start: 0s}\n"
    "    - {src: n0.gpu1, dst: n2.hca1, bytes: 512MiB, start: 10ms}\n"
    "or CSV (a name ending in .csv) with a header naming the columns:\n"
    "  src,dst,bytes,start\n"
    "  n0.gpu0,n1.gpu0,1GB,0s\n"
    "Devices are named as `podplan topo export` names them (n3.gpu5,\n"
    "n3.hca5, n3.cpu0, leaf4, spine1).  bytes is a size (a bare number is\n"
    "bytes); start is a time (a bare number is seconds; default 0).\n"
    "Every flow starts at its start time on its routed path (GPUDirect RDMA\n"
    "through the PCIe switch, the HCA nearest each GPU, ECMP over the\n"
    "fabric) and shares links by max-min fairness with the flows active\n"
    "at the same time; `analytic` ignores contention.  Prints each flow's\n"
    "start, finish and mean rate (bytes over finish - start, latency\n"
    "included); JSON keys: flows [{src, dst, bytes, start_s, finish_s,\n"
    "mean_rate_Bps}], makespan_s (the last finish).",
    opts,
    run,
};
