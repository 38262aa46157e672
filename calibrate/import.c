/*
 * import.c: reading measurement files.  The format is detected from the
 * content, not the name (logs are saved as .txt, .log, .out alike):
 *   JSON           a measurement set (podplan_measurements) or `podplan
 *                  exec` output (podplan_exec)        -> import_misc.c
 *                  or nccl-tests' -J output      -> import_nccl_json.c
 *   nccl-tests     its table: "#  size  count  type ... time algbw busbw"
 *   perftest       ib_write_bw, ib_read_bw, ib_send_bw, *_lat: "#bytes"
 *   Megatron-LM    "elapsed time per iteration (ms): N" -> import_misc.c
 *   CSV            a header naming m,n,k (GEMM) or bytes (membw)
 *   YAML           `iterations:` with model, cluster, parallel, seconds
 * A malformed file fails with "file:line: what was expected" and adds
 * nothing to the set.
 */
#include "cal_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_LEN 4096
#define MAX_TOK 64

/* ------------------------------------------------------------------------
 * nccl-tests.  Versions differ in their columns: 2.0 printed "bytes N
 * type op time algbw busbw res", later "size count type redop [root] time
 * algbw busbw error|#wrong", each twice (out-of-place, in-place); the
 * header is read to find the columns.  Ranks are the "# Rank N ... on
 * HOST" lines and nodes the distinct hosts; the collective is the
 * *_perf name the output prints.
 * ---------------------------------------------------------------------- */
static const struct {
    const char *test, *op;
} nccl_ops[] = {{"all_reduce_perf", "allreduce"},
                {"all_gather_perf", "allgather"},
                {"reduce_scatter_perf", "reducescatter"},
                {"broadcast_perf", "broadcast"},
                {"alltoall_perf", "alltoall"},
                {"sendrecv_perf", "sendrecv"},
                {"reduce_perf", "reduce"},
                {"gather_perf", "gather"},
                {"scatter_perf", "scatter"},
                {"hypercube_perf", "hypercube"}};

const char *pp__cal_nccl_op(const char *line) {
    for (size_t i = 0; i < sizeof nccl_ops / sizeof nccl_ops[0]; i++) {
        const char *p = strstr(line, nccl_ops[i].test);
        /* "reduce_perf" is inside "all_reduce_perf": whole words only. */
        if (p &&
            (p == line || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')))
            return nccl_ops[i].op;
    }
    return NULL;
}

typedef struct nccl_hdr {
    int ncols;
    int size, time[2], busbw[2];
    char names[LINE_MAX_LEN];
} nccl_hdr;

static bool nccl_header(const char *line, nccl_hdr *h) {
    char buf[LINE_MAX_LEN];
    snprintf(buf, sizeof buf, "%s", line);
    for (char *p = buf; *p; p++)
        if (*p == '#') *p = ' ';
    char *tok[MAX_TOK];
    int n = pp__cal_split(buf, tok, MAX_TOK);
    if (n < 4 || !(strcmp(tok[0], "size") == 0 || strcmp(tok[0], "bytes") == 0))
        return false;
    memset(h, -1, sizeof *h);
    h->ncols = 0;
    h->names[0] = '\0';
    int nt = 0, nb = 0;
    for (int i = 0; i < n; i++) {
        /* "#wrong" had its '#' blanked: the name is "wrong". */
        if (!strcmp(tok[i], "time") && nt < 2) h->time[nt++] = i;
        if (!strcmp(tok[i], "busbw") && nb < 2) h->busbw[nb++] = i;
        size_t l = strlen(h->names);
        snprintf(h->names + l, sizeof h->names - l, "%s%s", l ? " " : "",
                 tok[i]);
    }
    h->size = 0;
    h->ncols = n;
    return nt >= 1;
}

int pp__cal_import_nccl(pp_cal_set *s, int src, const char *name,
                        const char *text, const pp_cal_hints *h, pp_error *e) {
    char line[LINE_MAX_LEN], hosts[64][PP_CAL_STR];
    size_t pos = 0, rows = 0;
    int ln = 0, nhosts = 0, header_line = 0;
    int64_t ranks = 0, proc_gpus = 0;
    const char *op = NULL;
    bool have = false;
    nccl_hdr hd;
    memset(&hd, 0, sizeof hd);
    while (pp__cal_getline(text, &pos, line, sizeof line)) {
        ln++;
        const char *t = line;
        while (isspace((unsigned char)*t)) t++;
        const char *o = pp__cal_nccl_op(t);
        if (o) op = o;
        if (*t == '#') {
            char buf[LINE_MAX_LEN], *tok[MAX_TOK];
            snprintf(buf, sizeof buf, "%s", t + 1);
            int n = pp__cal_split(buf, tok, MAX_TOK);
            if (n >= 1 && !strcmp(tok[0], "nThread")) {
                /* A new test: its own ranks follow.  Without "Rank" lines
                 * (old versions, or a cut log) one process drives nThread
                 * x nGpus GPUs of one node. */
                ranks = 0;
                nhosts = 0;
                double nt = 0, ng = 0;
                for (int i = 0; i + 1 < n; i++) {
                    if (!strcmp(tok[i], "nThread"))
                        pp__cal_number(tok[i + 1], &nt);
                    if (!strcmp(tok[i], "nGpus"))
                        pp__cal_number(tok[i + 1], &ng);
                }
                proc_gpus = (int64_t)(nt * ng);
            } else if (n >= 2 && !strcmp(tok[0], "Rank")) {
                ranks++;
                for (int i = 1; i + 1 < n; i++)
                    if (!strcmp(tok[i], "on")) {
                        int k;
                        for (k = 0; k < nhosts; k++)
                            if (!strcmp(hosts[k], tok[i + 1])) break;
                        if (k == nhosts && nhosts < 64)
                            pp__cal_strcpy(hosts[nhosts++], tok[i + 1]);
                        break;
                    }
            } else if (nccl_header(t, &hd)) {
                have = true;
                header_line = ln;
            }
            continue;
        }
        if (!have || !isdigit((unsigned char)*t)) continue;
        char buf[LINE_MAX_LEN], *tok[MAX_TOK];
        snprintf(buf, sizeof buf, "%s", t);
        int n = pp__cal_split(buf, tok, MAX_TOK);
        if (n != hd.ncols)
            return pp_error_set(e, PP_EINPUT,
                                "%s:%d: expected %d columns "
                                "(%s), got %d",
                                name, ln, hd.ncols, hd.names, n);
        double size;
        if (!pp__cal_number(tok[hd.size], &size) || size < 0 ||
            size != floor(size))
            return pp_error_set(e, PP_EINPUT,
                                "%s:%d: column 1 (size): "
                                "expected a byte count, got \"%s\"",
                                name, ln, tok[hd.size]);
        if (!op && h && h->op) op = h->op;
        if (!op)
            return pp_error_set(e, PP_EINPUT,
                                "%s:%d: expected the name of "
                                "the nccl-tests binary that printed the table "
                                "(all_reduce, all_gather, ... with _perf), or "
                                "the collective given (--op)",
                                name, ln);
        for (int v = 0; v < 2; v++) {
            if (hd.time[v] < 0) continue;
            const char *tt = tok[hd.time[v]];
            double ts, bw = 0;
            /* Some tests print N/A for a variant they do not run. */
            if (!strcmp(tt, "N/A")) continue;
            if (!pp__cal_number(tt, &ts) || ts <= 0)
                return pp_error_set(e, PP_EINPUT,
                                    "%s:%d: column %d (time): "
                                    "expected a time in microseconds, got "
                                    "\"%s\"",
                                    name, ln, hd.time[v] + 1, tt);
            if (hd.busbw[v] >= 0 && !pp__cal_number(tok[hd.busbw[v]], &bw))
                return pp_error_set(e, PP_EINPUT,
                                    "%s:%d: column %d (busbw): "
                                    "expected a bandwidth in GB/s, got \"%s\"",
                                    name, ln, hd.busbw[v] + 1,
                                    tok[hd.busbw[v]]);
            pp_cal_point p;
            pp__cal_point_init(&p, PP_CAL_COLL, src, ln);
            pp__cal_strcpy(p.op, op);
            pp__cal_strcpy(p.algo, h && h->algo ? h->algo : "auto");
            pp__cal_strcpy(p.link, h && h->link ? h->link : "unknown");
            pp__cal_strcpy(p.variant, v ? "in-place" : "out-of-place");
            p.ranks = ranks;
            p.nodes = nhosts;
            if (!ranks && proc_gpus > 0) {
                p.ranks = proc_gpus;
                p.nodes = 1;
            }
            p.scope = p.nodes == 1  ? PP_CAL_SCOPE_INTRA
                      : p.nodes > 1 ? PP_CAL_SCOPE_INTER
                                    : PP_CAL_SCOPE_UNKNOWN;
            p.bytes = size;
            p.time_s = ts * 1e-6;
            p.bw_Bps = bw * 1e9;
            pp__cal_add_point(s, &p);
        }
        rows++;
    }
    if (!have)
        return pp_error_set(e, PP_EINPUT,
                            "%s:%d: expected the nccl-tests "
                            "column header (\"#  size  count  type  redop "
                            "... time  algbw  busbw\")",
                            name, ln ? ln : 1);
    if (!rows)
        return pp_error_set(e, PP_EINPUT,
                            "%s:%d: expected result rows after "
                            "the column header",
                            name, header_line);
    return 0;
}

/* ------------------------------------------------------------------------
 * perftest.  A bandwidth test prints "#bytes #iterations BW peak[X]
 * BW average[X] MsgRate[Mpps]" with X Gb/sec (--report_gbits) or MB/sec
 * (perftest's MB is 2^20 bytes: 4096 B at 1.4608 Mpps prints 5706.22);
 * a latency test "#bytes #iterations t_min[usec] t_max[usec]
 * t_typical[usec] t_avg[usec] t_stdev[usec] 99% percentile[usec] ...".
 * A column name is a token with '[' or '#', with the words before it.
 * ---------------------------------------------------------------------- */
typedef struct pt_hdr {
    int ncols, bw_avg, t_typ, t_avg, t_sd, iters;
    double bw_unit; /* bytes/s per printed unit */
    bool lat;
    char names[LINE_MAX_LEN];
} pt_hdr;

static bool pt_header(const char *t, pt_hdr *h) {
    if (strncmp(t, "#bytes", 6) != 0) return false;
    char buf[LINE_MAX_LEN], *tok[MAX_TOK];
    snprintf(buf, sizeof buf, "%s", t);
    int n = pp__cal_split(buf, tok, MAX_TOK);
    memset(h, -1, sizeof *h);
    h->ncols = 0;
    h->bw_unit = 0;
    h->lat = false;
    h->names[0] = '\0';
    char col[256] = "";
    for (int i = 0; i < n; i++) {
        size_t l = strlen(col);
        snprintf(col + l, sizeof col - l, "%s%s", l ? " " : "", tok[i]);
        if (!strchr(tok[i], '[') && tok[i][0] != '#') continue;
        int c = h->ncols++;
        if (strstr(col, "#iterations")) h->iters = c;
        if (strstr(col, "BW average")) {
            h->bw_avg = c;
            h->bw_unit = strstr(col, "[Gb/sec]")   ? 1e9 / 8
                         : strstr(col, "[MB/sec]") ? 1048576.0
                                                   : 0;
        }
        if (strstr(col, "t_typical")) h->t_typ = c, h->lat = true;
        if (strstr(col, "t_avg")) h->t_avg = c, h->lat = true;
        if (strstr(col, "t_stdev")) h->t_sd = c;
        l = strlen(h->names);
        snprintf(h->names + l, sizeof h->names - l, "%s%s", l ? ", " : "", col);
        col[0] = '\0';
    }
    return h->bw_avg >= 0 || h->lat;
}

int pp__cal_import_perftest(pp_cal_set *s, int src, const char *name,
                            const char *text, const pp_cal_hints *h,
                            pp_error *e) {
    char line[LINE_MAX_LEN], op[PP_CAL_STR] = "", link[PP_CAL_STR] = "";
    size_t pos = 0, rows = 0;
    int ln = 0, header_line = 0;
    bool in_table = false;
    pt_hdr hd;
    memset(&hd, 0, sizeof hd);
    while (pp__cal_getline(text, &pos, line, sizeof line)) {
        ln++;
        const char *t = line;
        while (isspace((unsigned char)*t)) t++;
        if (strstr(t, "BW Test") || strstr(t, "Latency Test")) {
            const char *verb = strstr(t, "RDMA_Write")  ? "write"
                               : strstr(t, "RDMA_Read") ? "read"
                               : strstr(t, "Atomic")    ? "atomic"
                                                        : "send";
            snprintf(op, sizeof op, "%s_%s", verb,
                     strstr(t, "Latency") ? "lat" : "bw");
            continue;
        }
        if (!strncmp(t, "Link type", 9)) {
            const char *v = strchr(t, ':');
            /* RDMA over an Ethernet link layer is RoCE. */
            pp__cal_strcpy(link,
                           v && strstr(v, "Ethernet") ? "roce" : "infiniband");
            continue;
        }
        if (pt_header(t, &hd)) {
            in_table = true;
            header_line = ln;
            continue;
        }
        if (!strncmp(t, "----", 4)) {
            in_table = false;
            continue;
        }
        if (!in_table || !isdigit((unsigned char)*t)) continue;
        char buf[LINE_MAX_LEN], *tok[MAX_TOK];
        snprintf(buf, sizeof buf, "%s", t);
        int n = pp__cal_split(buf, tok, MAX_TOK);
        if (n != hd.ncols)
            return pp_error_set(e, PP_EINPUT,
                                "%s:%d: expected %d columns "
                                "(%s), got %d",
                                name, ln, hd.ncols, hd.names, n);
        double v[MAX_TOK];
        for (int i = 0; i < n; i++)
            if (!pp__cal_number(tok[i], &v[i]) || v[i] < 0)
                return pp_error_set(e, PP_EINPUT,
                                    "%s:%d: column %d: expected "
                                    "a number, got \"%s\"",
                                    name, ln, i + 1, tok[i]);
        if (!op[0])
            return pp_error_set(e, PP_EINPUT,
                                "%s:%d: expected the test's "
                                "title line (RDMA_Write BW, Send Latency, "
                                "...) before its table",
                                name, ln);
        pp_cal_point p;
        pp__cal_point_init(&p, PP_CAL_P2P, src, ln);
        pp__cal_strcpy(p.op, op);
        pp__cal_strcpy(p.algo, "p2p");
        /* What the file says wins over the hint. */
        pp__cal_strcpy(p.link, link[0]        ? link
                               : h && h->link ? h->link
                                              : "unknown");
        p.scope = PP_CAL_SCOPE_INTER;
        p.ranks = 2;
        p.bytes = v[0];
        if (hd.iters >= 0) p.repeats = (int64_t)v[hd.iters];
        if (hd.lat) {
            int c = hd.t_typ >= 0 ? hd.t_typ : hd.t_avg;
            p.time_s = v[c] * 1e-6;
            if (hd.t_sd >= 0) p.time_sd_s = v[hd.t_sd] * 1e-6;
        } else {
            if (hd.bw_unit <= 0)
                return pp_error_set(e, PP_EINPUT,
                                    "%s:%d: expected the "
                                    "bandwidth unit [Gb/sec] or [MB/sec] in "
                                    "the column header",
                                    name, header_line);
            p.bw_Bps = v[hd.bw_avg] * hd.bw_unit;
            /* perftest prints 0.00 where the rate rounds to nothing: no
             * time can be had from it. */
            if (p.bw_Bps <= 0 || p.bytes <= 0) {
                rows++;
                continue;
            }
            p.time_s = p.bytes / p.bw_Bps; /* per message, pipelined */
        }
        if (p.time_s <= 0) {
            rows++;
            continue;
        }
        pp__cal_add_point(s, &p);
        rows++;
    }
    if (!header_line)
        return pp_error_set(e, PP_EINPUT,
                            "%s:%d: expected a perftest column "
                            "header (\"#bytes #iterations BW peak[Gb/sec] "
                            "...\" or \"... t_typical[usec] ...\")",
                            name, ln ? ln : 1);
    if (!rows)
        return pp_error_set(e, PP_EINPUT,
                            "%s:%d: expected result rows after "
                            "the column header",
                            name, header_line);
    return 0;
}

/* ------------------------------------------------------------------------
 * Detection and the entry points.
 * ---------------------------------------------------------------------- */
static bool has_nccl_header(const char *text) {
    size_t pos = 0;
    char line[LINE_MAX_LEN];
    nccl_hdr h;
    while (pp__cal_getline(text, &pos, line, sizeof line)) {
        const char *t = line;
        while (isspace((unsigned char)*t)) t++;
        if (*t == '#' && nccl_header(t, &h)) return true;
    }
    return false;
}

static bool looks_csv(const char *text) {
    size_t pos = 0;
    char line[LINE_MAX_LEN];
    while (pp__cal_getline(text, &pos, line, sizeof line)) {
        const char *t = line;
        while (isspace((unsigned char)*t)) t++;
        if (!*t || *t == '#') continue;
        return strchr(t, ',') && !strchr(t, ':');
    }
    return false;
}

int pp_cal_import_text(pp_cal_set *s, const char *name, const char *text,
                       size_t len, const pp_cal_hints *h, pp_error *e) {
    pp_cal_gsl_init();
    size_t n0 = s->n, src0 = s->n_src;
    const char *t = text;
    while (isspace((unsigned char)*t)) t++;
    const char *fmt;
    int rc;
    if (strlen(text) != len)
        return pp_error_set(e, PP_EINPUT,
                            "%s: expected a text file (it "
                            "holds NUL bytes)",
                            name);
    if (*t == '{')
        fmt = "json";
    else if (strstr(text, "out-of-place") || has_nccl_header(text))
        fmt = "nccl-tests";
    else if (strstr(text, "#bytes"))
        fmt = "perftest";
    else if (strstr(text, "elapsed time per iteration (ms)"))
        fmt = "megatron-log";
    else if (looks_csv(text))
        fmt = "csv";
    else
        fmt = "yaml";
    int src = pp__cal_add_source(s, name, fmt, text, len);
    if (!strcmp(fmt, "json"))
        rc = pp__cal_import_json(s, src, name, text, len, h, e);
    else if (!strcmp(fmt, "nccl-tests"))
        rc = pp__cal_import_nccl(s, src, name, text, h, e);
    else if (!strcmp(fmt, "perftest"))
        rc = pp__cal_import_perftest(s, src, name, text, h, e);
    else if (!strcmp(fmt, "megatron-log"))
        rc = pp__cal_import_megatron(s, src, name, text, h, e);
    else if (!strcmp(fmt, "csv"))
        rc = pp__cal_import_csv(s, src, name, text, e);
    else
        rc = pp__cal_import_yaml(s, src, name, text, len, e);
    if (rc < 0) {
        /* Leave the set as it was. */
        s->n = n0;
        while (s->n_src > src0) free(s->src[--s->n_src].path);
    }
    return rc;
}

int pp_cal_import(pp_cal_set *s, const char *path, const pp_cal_hints *h,
                  pp_error *e) {
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return pp_error_set(e, PP_ENOENT, "%s: cannot open: %s", path,
                            strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = pp_xmalloc(cap + 1);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, fp)) > 0) {
        n += got;
        if (n == cap) {
            if (cap > ((size_t)1 << 30)) {
                fclose(fp);
                free(buf);
                return pp_error_set(e, PP_EINPUT, "%s: larger than 1 GiB",
                                    path);
            }
            cap *= 2;
            buf = pp_xrealloc(buf, cap + 1);
        }
    }
    int err = ferror(fp);
    fclose(fp);
    if (err) {
        free(buf);
        return pp_error_set(e, PP_EIO, "%s: read error", path);
    }
    buf[n] = '\0';
    int rc = pp_cal_import_text(s, path, buf, n, h, e);
    free(buf);
    return rc;
}
