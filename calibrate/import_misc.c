/*
 * import_misc.c: the structured formats (JSON from `podplan exec` and
 * measurement sets, GEMM/membw CSVs, the iteration-time YAML) and
 * Megatron-LM logs.  Schemas: calibrate/README.md.
 */
#include "cal_int.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define LINE_MAX_LEN 4096

/* ------------------------------------------------------------------------
 * Megatron-LM: " iteration 100/ 500000 | consumed samples: ... | elapsed
 * time per iteration (ms): 16251.6 | ...".  The layout is not in the log:
 * it comes from the hints (--model --cluster --parallel) or from the
 * iterations YAML that names the log.
 * ---------------------------------------------------------------------- */
int pp__cal_import_megatron(pp_cal_set *s, int src, const char *name,
                            const char *text, const pp_cal_hints *h,
                            pp_error *e) {
    static const char key[] = "elapsed time per iteration (ms):";
    char line[LINE_MAX_LEN];
    size_t pos = 0, found = 0;
    int ln = 0;
    while (pp__cal_getline(text, &pos, line, sizeof line)) {
        ln++;
        char *k = strstr(line, key);
        if (!k) continue;
        char *v = k + sizeof key - 1, *end;
        while (*v == ' ') v++;
        double ms = strtod(v, &end);
        while (*end == ' ') end++;
        if (end == v || !(ms > 0) || !isfinite(ms) || (*end && *end != '|'))
            return pp_error_set(e, PP_EINPUT,
                                "%s:%d: expected a time in "
                                "milliseconds after \"elapsed time per "
                                "iteration (ms)\"",
                                name, ln);
        pp_cal_point p;
        pp__cal_point_init(&p, PP_CAL_ITER, src, ln);
        if (h) {
            pp__cal_strcpy(p.model, h->model);
            pp__cal_strcpy(p.cluster, h->cluster);
            snprintf(p.parallel, sizeof p.parallel, "%s",
                     h->parallel ? h->parallel : "");
        }
        p.time_s = ms * 1e-3;
        pp__cal_add_point(s, &p);
        found++;
    }
    if (!found)
        return pp_error_set(e, PP_EINPUT,
                            "%s:1: expected Megatron-LM lines "
                            "with \"%s N\"",
                            name, key);
    return 0;
}

/* ------------------------------------------------------------------------
 * CSV: a header line naming the columns, then one row per shape.
 *   GEMM:  m,n,k[,batch],time_s|time_ms|time_us[,time_sd_s][,repeats]
 *   membw: bytes,time_s|time_ms|time_us[,time_sd_s][,repeats]
 * '#' starts a comment line.
 * ---------------------------------------------------------------------- */
enum {
    C_M,
    C_N,
    C_K,
    C_BATCH,
    C_BYTES,
    C_TS,
    C_TMS,
    C_TUS,
    C_SD,
    C_REP,
    C_DTYPE,
    C__N
};
static const char *const csv_names[C__N] = {
    "m",       "n",       "k",         "batch",   "bytes", "time_s",
    "time_ms", "time_us", "time_sd_s", "repeats", "dtype"};

static int csv_fields(char *line, char **f, int *col, int max) {
    int n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (n == max) return n + 1;
        col[n] = (int)(p - line) + 1;
        f[n++] = p;
        char *c = strchr(p, ',');
        char *end = c ? c : p + strlen(p);
        while (end > p && isspace((unsigned char)end[-1])) end--;
        *end = '\0';
        if (!c) break;
        p = c + 1;
    }
    return n;
}

int pp__cal_import_csv(pp_cal_set *s, int src, const char *name,
                       const char *text, pp_error *e) {
    char line[LINE_MAX_LEN], header[LINE_MAX_LEN] = "";
    size_t pos = 0, rows = 0;
    int ln = 0, which[32], ncol = 0, hline = 0;
    while (pp__cal_getline(text, &pos, line, sizeof line)) {
        ln++;
        char *t = line;
        while (isspace((unsigned char)*t)) t++;
        if (!*t || *t == '#') continue;
        char *f[32];
        int col[32];
        if (!ncol) {
            snprintf(header, sizeof header, "%s", t);
            ncol = csv_fields(t, f, col, 32);
            hline = ln;
            bool seen[C__N] = {0};
            for (int i = 0; i < ncol; i++) {
                which[i] = -1;
                for (int c = 0; c < C__N; c++)
                    if (!strcmp(f[i], csv_names[c])) which[i] = c;
                if (which[i] < 0 || seen[which[i]])
                    return pp_error_set(e, PP_EINPUT,
                                        "%s:%d:%d: expected a "
                                        "column name (m, n, k, batch, bytes, "
                                        "time_s, time_ms, time_us, time_sd_s, "
                                        "repeats, dtype), once each; got "
                                        "\"%s\"",
                                        name, ln, col[i], f[i]);
                seen[which[i]] = true;
            }
            bool gemm = seen[C_M] && seen[C_N] && seen[C_K];
            bool time = seen[C_TS] || seen[C_TMS] || seen[C_TUS];
            if (!(gemm || seen[C_BYTES]) || !time ||
                (seen[C_TS] + seen[C_TMS] + seen[C_TUS]) != 1)
                return pp_error_set(e, PP_EINPUT,
                                    "%s:%d: expected a header "
                                    "with m,n,k (GEMM) or bytes (membw) and "
                                    "one of time_s, time_ms, time_us",
                                    name, ln);
            continue;
        }
        int n = csv_fields(t, f, col, 32);
        if (n != ncol)
            return pp_error_set(e, PP_EINPUT,
                                "%s:%d: expected %d fields "
                                "(%s), got %d",
                                name, ln, ncol, header, n);
        double v[C__N] = {0};
        bool gemm = false;
        for (int i = 0; i < n; i++) {
            if (which[i] == C_DTYPE) continue;
            double x;
            if (!pp__cal_number(f[i], &x) || x < 0 ||
                (x == 0 && which[i] != C_SD))
                return pp_error_set(e, PP_EINPUT,
                                    "%s:%d:%d: %s: expected a "
                                    "positive number, got \"%s\"",
                                    name, ln, col[i], csv_names[which[i]],
                                    f[i]);
            v[which[i]] = x;
            if (which[i] == C_M) gemm = true;
        }
        pp_cal_point p;
        pp__cal_point_init(&p, gemm ? PP_CAL_GEMM : PP_CAL_MEMBW, src, ln);
        p.m = v[C_M];
        p.n = v[C_N];
        p.k = v[C_K];
        p.batch = v[C_BATCH] > 0 ? v[C_BATCH] : 1;
        p.bytes = v[C_BYTES];
        p.time_s = v[C_TS] + v[C_TMS] * 1e-3 + v[C_TUS] * 1e-6;
        p.time_sd_s = v[C_SD]; /* always seconds, whatever the time unit */
        p.repeats = (int64_t)v[C_REP];
        pp__cal_add_point(s, &p);
        rows++;
    }
    if (!rows)
        return pp_error_set(e, PP_EINPUT,
                            "%s:%d: expected rows after the "
                            "CSV header",
                            name, hline ? hline : 1);
    return 0;
}

/* ------------------------------------------------------------------------
 * JSON.  jansson keeps no positions for values: errors inside a valid
 * document name the JSON path (file:results[3].time_s).
 * ---------------------------------------------------------------------- */
static int jnum(json_t *o, const char *name, const char *path, const char *k,
                bool required, double min, double *out, pp_error *e) {
    json_t *v = json_object_get(o, k);
    if (!v) {
        if (!required) return 0;
        return pp_error_set(e, PP_EINPUT,
                            "%s:%s: %s: expected a number "
                            "(missing)",
                            name, path, k);
    }
    if (!json_is_number(v) || !(json_number_value(v) >= min))
        return pp_error_set(e, PP_EINPUT, "%s:%s: %s: expected a number >= %g",
                            name, path, k, min);
    *out = json_number_value(v);
    return 0;
}

static int jstr(json_t *o, const char *name, const char *path, const char *k,
                bool required, char *out, pp_error *e) {
    json_t *v = json_object_get(o, k);
    if (!v) {
        if (!required) return 0;
        return pp_error_set(e, PP_EINPUT,
                            "%s:%s: %s: expected a string "
                            "(missing)",
                            name, path, k);
    }
    if (!json_is_string(v))
        return pp_error_set(e, PP_EINPUT, "%s:%s: %s: expected a string", name,
                            path, k);
    pp__cal_strcpy(out, json_string_value(v));
    return 0;
}

static int kind_of(const char *k) {
    for (int i = 0; i < PP_CAL__KINDS; i++)
        if (!strcmp(k, pp_cal_kind_name((pp_cal_kind)i))) return i;
    return -1;
}

static int read_set(pp_cal_set *s, const char *name, json_t *root,
                    pp_error *e) {
    json_t *src = json_object_get(root, "sources"),
           *pts = json_object_get(root, "points");
    if (!json_is_array(src) || !json_is_array(pts))
        return pp_error_set(e, PP_EINPUT,
                            "%s: expected \"sources\" and "
                            "\"points\" arrays",
                            name);
    int base = (int)s->n_src;
    for (size_t i = 0; i < json_array_size(src); i++) {
        json_t *o = json_array_get(src, i);
        char path[32], file[PP_CAL_STR] = "", fmt[PP_CAL_STR] = "";
        snprintf(path, sizeof path, "sources[%zu]", i);
        int rc;
        if ((rc = jstr(o, name, path, "file", true, file, e)) < 0 ||
            (rc = jstr(o, name, path, "format", false, fmt, e)) < 0)
            return rc;
        /* The path may be longer than a point's strings: read it whole. */
        json_t *fj = json_object_get(o, "file"),
               *hj = json_object_get(o, "sha256");
        int k = pp__cal_add_source(s, json_string_value(fj), fmt, NULL, 0);
        if (json_is_string(hj))
            snprintf(s->src[k].sha256, sizeof s->src[k].sha256, "%s",
                     json_string_value(hj));
    }
    for (size_t i = 0; i < json_array_size(pts); i++) {
        json_t *o = json_array_get(pts, i);
        char path[32], kind[PP_CAL_STR] = "", scope[PP_CAL_STR] = "";
        snprintf(path, sizeof path, "points[%zu]", i);
        pp_cal_point p;
        pp__cal_point_init(&p, PP_CAL_COLL, 0, 0);
        double src_i = 0, line = 0, ranks = 0, nodes = 0, rep = 0;
        double streams = 0, reserved = 0, load_sms = 0;
        int rc;
        if ((rc = jstr(o, name, path, "kind", true, kind, e)) < 0) return rc;
        int kk = kind_of(kind);
        if (kk < 0)
            return pp_error_set(e, PP_EINPUT,
                                "%s:%s: kind: expected "
                                "collective, p2p, gemm, membw or iteration, "
                                "got \"%s\"",
                                name, path, kind);
        p.kind = (pp_cal_kind)kk;
        if ((rc = jnum(o, name, path, "source", true, 0, &src_i, e)) < 0 ||
            (rc = jnum(o, name, path, "line", false, 0, &line, e)) < 0 ||
            (rc = jstr(o, name, path, "where", false, p.where, e)) < 0 ||
            (rc = jstr(o, name, path, "op", false, p.op, e)) < 0 ||
            (rc = jstr(o, name, path, "algo", false, p.algo, e)) < 0 ||
            (rc = jstr(o, name, path, "link", false, p.link, e)) < 0 ||
            (rc = jstr(o, name, path, "variant", false, p.variant, e)) < 0 ||
            (rc = jstr(o, name, path, "scope", false, scope, e)) < 0 ||
            (rc = jnum(o, name, path, "ranks", false, 0, &ranks, e)) < 0 ||
            (rc = jnum(o, name, path, "nodes", false, 0, &nodes, e)) < 0 ||
            (rc = jnum(o, name, path, "bytes", false, 0, &p.bytes, e)) < 0 ||
            (rc = jnum(o, name, path, "m", false, 0, &p.m, e)) < 0 ||
            (rc = jnum(o, name, path, "n", false, 0, &p.n, e)) < 0 ||
            (rc = jnum(o, name, path, "k", false, 0, &p.k, e)) < 0 ||
            (rc = jnum(o, name, path, "batch", false, 0, &p.batch, e)) < 0 ||
            (rc = jnum(o, name, path, "streams", false, 0, &streams, e)) < 0 ||
            (rc = jnum(o, name, path, "sms_reserved", false, 0, &reserved, e)) <
                0 ||
            (rc = jnum(o, name, path, "load_sms", false, 0, &load_sms, e)) <
                0 ||
            (rc = jnum(o, name, path, "load_rate_asked", false, -1,
                       &p.load_rate_asked, e)) < 0 ||
            (rc = jnum(o, name, path, "load_rate", false, 0, &p.load_rate, e)) <
                0 ||
            (rc = jstr(o, name, path, "model", false, p.model, e)) < 0 ||
            (rc = jstr(o, name, path, "cluster", false, p.cluster, e)) < 0 ||
            (rc = jnum(o, name, path, "bucket_bytes", false, 0, &p.bucket_bytes,
                       e)) < 0 ||
            (rc = jnum(o, name, path, "time_s", false, 0, &p.time_s, e)) < 0 ||
            (rc = jnum(o, name, path, "time_sd_s", false, 0, &p.time_sd_s, e)) <
                0 ||
            (rc = jnum(o, name, path, "repeats", false, 0, &rep, e)) < 0 ||
            (rc = jnum(o, name, path, "bw_Bps", false, 0, &p.bw_Bps, e)) < 0 ||
            (rc = jnum(o, name, path, "tflops_per_gpu", false, 0, &p.tflops,
                       e)) < 0)
            return rc;
        char dt[PP_CAL_STR] = "", dev[PP_CAL_STR] = "";
        if ((rc = jstr(o, name, path, "dtype", false, dt, e)) < 0 ||
            (rc = jstr(o, name, path, "device", false, dev, e)) < 0)
            return rc;
        snprintf(p.dtype, sizeof p.dtype, "%s", dt);
        snprintf(p.device, sizeof p.device, "%s", dev);
        json_t *par = json_object_get(o, "parallel");
        if (json_is_string(par))
            snprintf(p.parallel, sizeof p.parallel, "%s",
                     json_string_value(par));
        p.dp_overlap = json_is_true(json_object_get(o, "dp_overlap"));
        if (src_i >= (double)json_array_size(src))
            return pp_error_set(e, PP_EINPUT,
                                "%s:%s: source: expected an "
                                "index into sources",
                                name, path);
        if (!(p.time_s > 0) && !(p.tflops > 0))
            return pp_error_set(e, PP_EINPUT,
                                "%s:%s: time_s: expected a "
                                "positive time",
                                name, path);
        p.source = base + (int)src_i;
        p.line = (int)line;
        p.ranks = (int64_t)ranks;
        p.nodes = (int64_t)nodes;
        p.repeats = (int64_t)rep;
        p.streams = (int64_t)streams;
        p.sms_reserved = (int64_t)reserved;
        p.load_sms = (int64_t)load_sms;
        p.scope = !strcmp(scope, "intra")   ? PP_CAL_SCOPE_INTRA
                  : !strcmp(scope, "inter") ? PP_CAL_SCOPE_INTER
                                            : PP_CAL_SCOPE_UNKNOWN;
        pp__cal_add_point(s, &p);
    }
    return 0;
}

/* `podplan exec ... --format json` output (calibrate/README.md).  exec
 * prints no format tag, so the command is told from the document's
 * shape: a `setup` object (collective), a `backend` with m,n,k results
 * (gemm), results with a `kernel` (membw). */
typedef enum { EXEC_NONE, EXEC_COLL, EXEC_GEMM, EXEC_MEMBW } exec_cmd;

static exec_cmd exec_kind(json_t *root) {
    json_t *res = json_object_get(root, "results");
    json_t *r0 = json_is_array(res) ? json_array_get(res, 0) : NULL;
    if (json_is_object(json_object_get(root, "setup"))) return EXEC_COLL;
    if (json_is_string(json_object_get(root, "backend"))) return EXEC_GEMM;
    if (r0 && json_object_get(r0, "kernel")) return EXEC_MEMBW;
    return EXEC_NONE;
}

/* exec's statistics into a point: the time, and its standard error from
 * the coefficient of variation over `iters` samples.  The samples of one
 * run are not independent (the machine's state drifts), so the repeats
 * the fits see (nccl-tests-style in/out-of-place pairs) usually say more;
 * the pooled variance takes the larger (pp__cal_variances). */
static int exec_time(json_t *o, const char *name, const char *path,
                     const char *tkey, const char *cvkey, double iters,
                     pp_cal_point *p, pp_error *e) {
    double cv = 0;
    int rc;
    if ((rc = jnum(o, name, path, tkey, true, 1e-15, &p->time_s, e)) < 0 ||
        (rc = jnum(o, name, path, cvkey, false, 0, &cv, e)) < 0)
        return rc;
    p->repeats = (int64_t)iters;
    if (iters >= 2) p->time_sd_s = cv * p->time_s / sqrt(iters);
    return 0;
}

static int exec_coll_rows(pp_cal_set *s, int src, const char *name,
                          json_t *root, const pp_cal_hints *h, pp_error *e) {
    json_t *setup = json_object_get(root, "setup");
    char op[PP_CAL_STR] = "", xport[PP_CAL_STR] = "";
    double ranks = 0, hosts = 0, iters = 0;
    int rc;
    if ((rc = jstr(setup, name, "setup", "op", true, op, e)) < 0 ||
        (rc = jstr(setup, name, "setup", "transport", false, xport, e)) < 0 ||
        (rc = jnum(setup, name, "setup", "ranks", true, 1, &ranks, e)) < 0 ||
        (rc = jnum(setup, name, "setup", "hosts", false, 1, &hosts, e)) < 0 ||
        (rc = jnum(setup, name, "setup", "iters", false, 0, &iters, e)) < 0)
        return rc;
    /* exec does not know the wire: --link says; else TCP is taken to be
     * ethernet and verbs InfiniBand (RoCE needs --link roce). */
    const char *link = h && h->link              ? h->link
                       : !strcmp(xport, "verbs") ? "infiniband"
                       : !strcmp(xport, "tcp")   ? "ethernet"
                                                 : "unknown";
    json_t *res = json_object_get(root, "results");
    for (size_t i = 0; i < json_array_size(res); i++) {
        json_t *o = json_array_get(res, i);
        char path[48], algo[PP_CAL_STR] = "";
        double bytes = 0;
        snprintf(path, sizeof path, "results[%zu]", i);
        if (!json_is_object(o))
            return pp_error_set(e, PP_EINPUT, "%s:%s: expected an object", name,
                                path);
        if ((rc = jnum(o, name, path, "size_bytes", true, 0, &bytes, e)) < 0 ||
            (rc = jstr(o, name, path, "algo", false, algo, e)) < 0)
            return rc;
        /* Two points per size, as nccl-tests' two columns: repeats. */
        static const char *const sides[2] = {"out_of_place", "in_place"};
        for (int k = 0; k < 2; k++) {
            char sp[64];
            snprintf(sp, sizeof sp, "%s.%s", path, sides[k]);
            json_t *d = json_object_get(o, sides[k]);
            if (!json_is_object(d))
                return pp_error_set(e, PP_EINPUT,
                                    "%s:%s: expected an object "
                                    "(missing)",
                                    name, sp);
            pp_cal_point p;
            pp__cal_point_init(&p, PP_CAL_COLL, src, 0);
            snprintf(p.where, sizeof p.where, "%s", sp);
            double busbw_GBps = 0;
            if ((rc = exec_time(d, name, sp, "time_s", "cv", iters, &p, e)) <
                    0 ||
                (rc = jnum(d, name, sp, "busbw_GBps", false, 0, &busbw_GBps,
                           e)) < 0)
                return rc;
            p.bw_Bps = busbw_GBps * 1e9;
            p.bytes = bytes;
            pp__cal_strcpy(p.op, op);
            /* The algorithm run at this size (auto picks per size). */
            pp__cal_strcpy(p.algo, algo[0] ? algo : "auto");
            pp__cal_strcpy(p.link, link);
            pp__cal_strcpy(p.variant, k ? "in-place" : "out-of-place");
            p.ranks = (int64_t)ranks;
            p.nodes = (int64_t)hosts;
            p.scope = hosts == 1  ? PP_CAL_SCOPE_INTRA
                      : hosts > 1 ? PP_CAL_SCOPE_INTER
                                  : PP_CAL_SCOPE_UNKNOWN;
            pp__cal_add_point(s, &p);
        }
    }
    return 0;
}

/* `exec gemm --load-sms`'s "load" object: {sms: K, rate_asked: R or null
 * (flat out), rate: what it moved}. */
static int exec_load(json_t *o, const char *name, const char *path,
                     pp_cal_point *p, pp_error *e) {
    json_t *l = json_object_get(o, "load");
    char lp[48];
    double sms = 0, asked = -1, rate = 0;
    int rc;
    if (!l) return 0;
    snprintf(lp, sizeof lp, "%s.load", path);
    if (!json_is_object(l))
        return pp_error_set(e, PP_EINPUT, "%s:%s: expected an object", name,
                            lp);
    json_t *ra = json_object_get(l, "rate_asked");
    if ((rc = jnum(l, name, lp, "sms", true, 1, &sms, e)) < 0 ||
        (!json_is_null(ra) &&
         (rc = jnum(l, name, lp, "rate_asked", false, 0, &asked, e)) < 0) ||
        (rc = jnum(l, name, lp, "rate", false, 0, &rate, e)) < 0)
        return rc;
    p->load_sms = (int64_t)sms;
    p->load_rate_asked = asked;
    p->load_rate = rate;
    return 0;
}

/* `exec gemm --streams`'s "grouped" object: the point becomes the GPU's
 * own time of one group (graph_s), which is what the profile prices; the
 * eager time (time_median_s) has the host's issue in it. */
static int exec_grouped(json_t *o, const char *name, const char *path,
                        pp_cal_point *p, pp_error *e) {
    json_t *g = json_object_get(o, "grouped");
    char gp[48];
    double streams = 0, t = 0;
    int rc;
    if (!g) return 0;
    snprintf(gp, sizeof gp, "%s.grouped", path);
    if (!json_is_object(g))
        return pp_error_set(e, PP_EINPUT, "%s:%s: expected an object", name,
                            gp);
    if ((rc = jnum(g, name, gp, "streams", true, 1, &streams, e)) < 0 ||
        (rc = jnum(g, name, gp, "graph_s", true, 0, &t, e)) < 0)
        return rc;
    if (!(t > 0))
        return pp_error_set(e, PP_EINPUT, "%s:%s: graph_s: expected a time > 0",
                            name, gp);
    p->streams = (int64_t)streams;
    p->time_s = t;
    p->time_sd_s = 0; /* the eager samples' spread is not the graph's */
    return 0;
}

static int read_exec(pp_cal_set *s, int src, const char *name, json_t *root,
                     exec_cmd cmd, const pp_cal_hints *h, pp_error *e) {
    json_t *res = json_object_get(root, "results");
    if (!json_is_array(res) || !json_array_size(res))
        return pp_error_set(e, PP_EINPUT,
                            "%s:results: expected a non-empty "
                            "array",
                            name);
    if (cmd == EXEC_COLL) return exec_coll_rows(s, src, name, root, h, e);
    char backend[PP_CAL_STR] = "", dtype[PP_CAL_STR] = "";
    int rc;
    if (cmd == EXEC_GEMM &&
        ((rc = jstr(root, name, "$", "backend", true, backend, e)) < 0 ||
         (rc = jstr(root, name, "$", "dtype", false, dtype, e)) < 0))
        return rc;
    for (size_t i = 0; i < json_array_size(res); i++) {
        json_t *o = json_array_get(res, i);
        char path[32], str[PP_CAL_STR] = "";
        double iters = 0;
        snprintf(path, sizeof path, "results[%zu]", i);
        if (!json_is_object(o))
            return pp_error_set(e, PP_EINPUT, "%s:%s: expected an object", name,
                                path);
        pp_cal_point p;
        pp__cal_point_init(&p, cmd == EXEC_GEMM ? PP_CAL_GEMM : PP_CAL_MEMBW,
                           src, 0);
        snprintf(p.where, sizeof p.where, "%s", path);
        if ((rc = jnum(o, name, path, "iters", false, 0, &iters, e)) < 0 ||
            (rc = exec_time(o, name, path, "time_median_s", "time_cv", iters,
                            &p, e)) < 0)
            return rc;
        if (cmd == EXEC_GEMM) {
            p.batch = 1;
            if ((rc = jnum(o, name, path, "m", true, 1, &p.m, e)) < 0 ||
                (rc = jnum(o, name, path, "n", true, 1, &p.n, e)) < 0 ||
                (rc = jnum(o, name, path, "k", true, 1, &p.k, e)) < 0 ||
                (rc = jnum(o, name, path, "batch", false, 1, &p.batch, e)) <
                    0 ||
                (rc = jstr(o, name, path, "dtype", false, str, e)) < 0)
                return rc;
            snprintf(p.dtype, sizeof p.dtype, "%s", str[0] ? str : dtype);
            snprintf(p.device, sizeof p.device, "%s", backend);
            if ((rc = jstr(o, name, path, "name", false, p.op, e)) < 0)
                return rc;
            double reserved = 0;
            if ((rc = exec_grouped(o, name, path, &p, e)) < 0 ||
                (rc = exec_load(o, name, path, &p, e)) < 0 ||
                (rc = jnum(o, name, path, "sms_reserved", false, 1, &reserved,
                           e)) < 0)
                return rc;
            p.sms_reserved = (int64_t)reserved;
        } else {
            /* STREAM's bytes moved (2x or 3x the array), the traffic the
             * profile's memory model charges. */
            if ((rc = jnum(o, name, path, "bytes_moved", true, 1, &p.bytes,
                           e)) < 0 ||
                (rc = jstr(o, name, path, "device", false, str, e)) < 0)
                return rc;
            snprintf(p.device, sizeof p.device, "%s",
                     !strcmp(str, "host") ? "cpu" : str);
            if ((rc = jstr(o, name, path, "kernel", false, str, e)) < 0)
                return rc;
            pp__cal_strcpy(p.op, str);
        }
        pp__cal_add_point(s, &p);
    }
    return 0;
}

int pp__cal_import_json(pp_cal_set *s, int src, const char *name,
                        const char *text, size_t len, const pp_cal_hints *h,
                        pp_error *e) {
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root)
        return pp_error_set(e, PP_EINPUT, "%s:%d:%d: expected JSON: %s", name,
                            je.line, je.column, je.text);
    int rc;
    if (json_object_get(root, "podplan_measurements")) {
        snprintf(s->src[src].format, sizeof s->src[src].format, "set");
        rc = read_set(s, name, root, e);
    } else if (pp__cal_is_nccl_json(root)) {
        snprintf(s->src[src].format, sizeof s->src[src].format,
                 "nccl-tests-json");
        rc = pp__cal_import_nccl_json(s, src, name, root, h, e);
    } else if (exec_kind(root) != EXEC_NONE) {
        static const char *const fmt[] = {"", "exec-collective", "exec-gemm",
                                          "exec-membw"};
        exec_cmd k = exec_kind(root);
        snprintf(s->src[src].format, sizeof s->src[src].format, "%s", fmt[k]);
        rc = read_exec(s, src, name, root, k, h, e);
    } else {
        rc = pp_error_set(e, PP_EINPUT,
                          "%s:1: expected a measurement set "
                          "(\"podplan_measurements\"), nccl-tests' -J output "
                          "(\"nccl_version\", \"config\", \"results\") or "
                          "`podplan exec collective|gemm|membw --format json` "
                          "output (a \"setup\" object, a \"backend\", or "
                          "results with a \"kernel\")",
                          name);
    }
    json_decref(root);
    return rc;
}

/* ------------------------------------------------------------------------
 * The iteration-time YAML.
 * ---------------------------------------------------------------------- */
static int yaml_item(pp_cal_set *s, int src, const char *name, pp_node *it,
                     const char *path, pp_error *e) {
    int rc;
    const char *model = NULL, *cluster = NULL, *par = NULL, *log = NULL;
    double secs = 0, tfl = 0, bucket = 0;
    bool overlap = false;
    if ((rc = pp_node_expect(it, path, PP_NODE_MAP, e)) < 0 ||
        (rc = pp_map_string(it, path, "model", PP_REQUIRED, &model, e)) < 0 ||
        (rc = pp_map_string(it, path, "cluster", PP_OPTIONAL, &cluster, e)) <
            0 ||
        (rc = pp_map_string(it, path, "parallel", PP_REQUIRED, &par, e)) < 0 ||
        (rc = pp_map_quantity(it, path, "seconds", PP_OPTIONAL, PP_Q_TIME, "s",
                              false, &secs, e)) < 0 ||
        (rc = pp_map_number(it, path, "tflops_per_gpu", PP_OPTIONAL, 1e-3, 1e6,
                            &tfl, e)) < 0 ||
        (rc = pp_map_string(it, path, "log", PP_OPTIONAL, &log, e)) < 0 ||
        (rc = pp_map_bool(it, path, "dp_overlap", PP_OPTIONAL, &overlap, e)) <
            0 ||
        (rc = pp_map_quantity(it, path, "bucket", PP_OPTIONAL, PP_Q_BYTES, NULL,
                              false, &bucket, e)) < 0 ||
        (rc = pp_map_done(it, path, e)) < 0)
        return rc;
    if ((secs > 0) + (tfl > 0) + (log != NULL) != 1)
        return pp_error_at(e, PP_EINPUT, it, path,
                           "expected exactly one of "
                           "seconds, tflops_per_gpu, log");
    pp_parallel pl;
    pp_parallel_init(&pl);
    pp_error pe = PP_ERROR_INIT;
    if (pp_parallel_parse(par, &pl, &pe) < 0)
        return pp_error_at(e, PP_EINPUT, pp_map_get(it, "parallel"), path,
                           "parallel: %s", pe.msg);
    if (log) {
        /* Relative to the YAML file's folder. */
        char full[1024];
        const char *slash = strrchr(name, '/');
        if (log[0] != '/' && slash)
            snprintf(full, sizeof full, "%.*s/%s", (int)(slash - name), name,
                     log);
        else
            snprintf(full, sizeof full, "%s", log);
        pp_cal_hints h = {0};
        h.model = model;
        h.cluster = cluster;
        h.parallel = par;
        rc = pp_cal_import(s, full, &h, e);
        if (rc < 0) pp_error_prefix(e, "%s:%d: log: ", name, it->line);
        return rc;
    }
    pp_cal_point p;
    pp__cal_point_init(&p, PP_CAL_ITER, src, it->line);
    pp__cal_strcpy(p.model, model);
    pp__cal_strcpy(p.cluster, cluster);
    snprintf(p.parallel, sizeof p.parallel, "%s", par);
    p.time_s = secs;
    p.tflops = tfl;
    p.dp_overlap = overlap;
    p.bucket_bytes = bucket;
    pp__cal_add_point(s, &p);
    return 0;
}

int pp__cal_import_yaml(pp_cal_set *s, int src, const char *name,
                        const char *text, size_t len, pp_error *e) {
    pp_doc *doc = NULL;
    pp_error ye = PP_ERROR_INIT;
    int rc = pp_doc_load_string(name, text, len, &doc, &ye);
    pp_node *root = rc == 0 ? pp_doc_root(doc) : NULL;
    if (!root || root->kind != PP_NODE_MAP || !pp_map_get(root, "iterations")) {
        pp_doc_free(doc);
        return pp_error_set(e, PP_EINPUT,
                            "%s:1: expected a measurement file: "
                            "nccl-tests or perftest output, podplan exec "
                            "JSON, a measurement set, a GEMM/membw CSV, a "
                            "Megatron-LM log, or a YAML with `iterations:`",
                            name);
    }
    snprintf(s->src[src].format, sizeof s->src[src].format, "iterations");
    pp_node *seq = NULL;
    const char *note = NULL;
    if ((rc = pp_map_node(root, "", "iterations", PP_REQUIRED, PP_NODE_SEQ,
                          &seq, e)) < 0 ||
        (rc = pp_map_string(root, "", "source", PP_OPTIONAL, &note, e)) < 0 ||
        (rc = pp_map_done(root, "", e)) < 0)
        goto out;
    for (size_t i = 0; i < seq->n; i++) {
        char path[64];
        pp_path_index(path, sizeof path, "iterations", i);
        if ((rc = yaml_item(s, src, name, seq->items[i], path, e)) < 0)
            goto out;
    }
    if (!seq->n)
        rc = pp_error_at(e, PP_EINPUT, seq, "iterations",
                         "expected at least one measured iteration");
out:
    pp_doc_free(doc);
    return rc < 0 ? rc : 0;
}
