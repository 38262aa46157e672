/*
 * cmd_flows.c: `podplan flows`, an explicit traffic matrix run on the
 * flow network.  Users bring measured traffic this way, and it lets the
 * network model be checked against other flow simulators on identical
 * inputs (the devices are named as `topo export` names them).
 */
#include "cli_int.h"

#include "podplan/sim.h"
#include "podplan/traffic.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const pp_cli_opt opts[] = {
    {"cluster", 'c', "C",
     "cluster: YAML file or a name in topologies/ (required)", false, NULL, 0,
     NULL},
    {"input", 'i', "FILE",
     "the flows: YAML (flows: [...]) or CSV (src,dst,bytes,start); else a name "
     "in topologies/examples/ (required)",
     false, NULL, 0, NULL},
    {"set", 0, "PATH=VALUE",
     "override a cluster field, e.g. node.nics.count=4 (repeatable)", true,
     NULL, 0, NULL},
    {"fidelity", 0, "F", "network model (default: flow):", false,
     &pp_reg_fidelity, 0, NULL},
    {"seed", 0, "N", "seed of the ECMP hash (default: 0)", false, NULL, 0,
     NULL},
    {"format", 0, "FMT", "table|json (default: table)", false, NULL, 0, NULL},
    {"trace", 0, "FILE", "write a Chrome/Perfetto trace of the run to FILE",
     false, NULL, 0, NULL},
    {"output", 'o', "FILE", "write to FILE atomically (default: stdout)", false,
     NULL, 0, NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

/* A run: the flows read and, per flow, when it finished. */
typedef struct flows {
    const pp_cluster *c;
    const pp_traffic *t;
    double *finish_s;
} flows;

/* ---- the run ------------------------------------------------------------ */

typedef struct run_ctx {
    flows *fl;
    pp_sim *s;
    pp_error e;
    int rc;
} run_ctx;

static void on_done(pp_sim *s, void *ctx, uint64_t i) {
    run_ctx *r = ctx;
    r->fl->finish_s[i] = pp_sim_now(s);
}

static void on_start(pp_engine *eng, void *ctx, uint64_t i) {
    (void)eng;
    run_ctx *r = ctx;
    const pp_traffic_flow *f = &r->fl->t->flows[i];
    if (r->rc) return;
    r->rc = pp_sim_send(r->s, f->src, f->dst, f->bytes, on_done, r, i, &r->e);
    if (r->rc)
        pp_error_prefix(&r->e, "%s:%d:%d: flows[%llu]", r->fl->t->file, f->line,
                        f->col, (unsigned long long)i);
}

typedef struct result {
    const char *cluster;
    int fidelity;
    flows *fl;
    double makespan_s;
} result;

static double mean_rate(const pp_traffic_flow *f, double finish_s) {
    double t = finish_s - f->start_s;
    return t > 0 ? f->bytes / t : INFINITY;
}

static void print_table(FILE *fp, const void *ctx) {
    const result *r = ctx;
    const flows *fl = r->fl;
    fprintf(fp, "cluster %s, fidelity %s, %zu flow%s\n\n", r->cluster,
            pp_fidelity_name((pp_fidelity)r->fidelity), fl->t->n,
            fl->t->n == 1 ? "" : "s");
    fprintf(fp, "%5s  %-12s %-12s %10s %10s %10s %10s %12s\n", "#", "src",
            "dst", "bytes", "start", "finish", "time", "mean rate");
    size_t nd;
    const pp_device *d = pp_cluster_devices(fl->c, &nd);
    for (size_t i = 0; i < fl->t->n; i++) {
        const pp_traffic_flow *f = &fl->t->flows[i];
        double fin = fl->finish_s[i], rate = mean_rate(f, fin);
        fprintf(fp, "%5zu  %-12s %-12s %10s %10s %10s %10s %12s\n", i,
                d[f->src].name, d[f->dst].name, pp_fmtq(f->bytes, PP_Q_BYTES),
                pp_fmtq(f->start_s, PP_Q_TIME), pp_fmtq(fin, PP_Q_TIME),
                pp_fmtq(fin - f->start_s, PP_Q_TIME),
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
    json_object_set_new(
        o, "fidelity", json_string(pp_fidelity_name((pp_fidelity)r->fidelity)));
    for (size_t i = 0; i < fl->t->n; i++) {
        const pp_traffic_flow *f = &fl->t->flows[i];
        json_t *x = json_object();
        json_object_set_new(x, "src", json_string(d[f->src].name));
        json_object_set_new(x, "dst", json_string(d[f->dst].name));
        json_object_set_new(x, "bytes", pp_json_num(f->bytes));
        json_object_set_new(x, "start_s", pp_json_num(f->start_s));
        json_object_set_new(x, "finish_s", pp_json_num(fl->finish_s[i]));
        json_object_set_new(x, "mean_rate_Bps",
                            pp_json_num(mean_rate(f, fl->finish_s[i])));
        json_array_append_new(list, x);
    }
    json_object_set_new(o, "flows", list);
    json_object_set_new(o, "makespan_s", pp_json_num(r->makespan_s));
    return o;
}

static int run(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    const char *spec, *input, *trace_path;
    int fmt = PP_FMT_TABLE, fid = PP_FIDELITY_FLOW, status;
    int64_t seed = 0;
    pp_cluster *c = NULL;
    pp_sim *s = NULL;
    flows fl = {0};
    pp_traffic *t = NULL;
    /* --input is a file, else one of the examples shipped in
     * topologies/examples/ (README's flows.yaml). */
    char path[4096];
    pp_outfile tf = {0};
    bool tracing = false;

    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc || pp_args_need(&a, "cluster", &spec, &e) ||
        pp_args_need(&a, "input", &input, &e) ||
        pp_args_choice(&a, "fidelity", &fid, &e) ||
        pp_args_int(&a, "seed", 0, INT64_MAX, &seed, &e) ||
        pp_args_enum(&a, "format", pp_format_names, &fmt, &e))
        return pp_cli_fail(cmd->name, &e);
    trace_path = pp_args_get(&a, "trace");

    if ((rc = pp_cli_load_cluster(&a, &c, &e)) ||
        (rc = pp_data_find("topologies/examples", input, path, sizeof path,
                           &e)) ||
        (rc = pp_traffic_load(path, c, (uint64_t)seed, &t, &e)) ||
        (rc = pp_sim_new(c, (pp_fidelity)fid, (uint64_t)seed, &s, &e)))
        goto fail;
    fl.c = c;
    fl.t = t;
    fl.finish_s = pp_xmalloc((t->n ? t->n : 1) * sizeof *fl.finish_s);
    if (trace_path) {
        if ((rc = pp_outfile_open(&tf, trace_path, &e)) ||
            (rc = pp_sim_trace(s, tf.fp, &e)))
            goto fail;
        tracing = true;
    }

    run_ctx r = {&fl, s, PP_ERROR_INIT, 0};
    pp_engine *eng = pp_sim_engine(s);
    /* In file order: flows starting together start in that order. */
    for (size_t i = 0; i < t->n; i++)
        pp_engine_at(eng, t->flows[i].start_s, on_start, &r, i);
    pp_engine_run(eng, INFINITY);
    if (r.rc) {
        e = r.e;
        rc = r.rc;
        goto fail;
    }
    result res = {pp_cluster_info_get(c)->name, fid, &fl, 0};
    for (size_t i = 0; i < t->n; i++)
        if (fl.finish_s[i] > res.makespan_s) res.makespan_s = fl.finish_s[i];
    pp_sim_free(s); /* writes the trace's closing bracket */
    s = NULL;
    if (tracing) {
        tracing = false;
        if ((rc = pp_outfile_commit(&tf, &e))) goto fail;
    }
    status = pp_cli_emit(&a, fmt, to_json(&res), print_table, &res);
    free(fl.finish_s);
    pp_traffic_free(t);
    pp_cluster_free(c);
    return status;

fail:
    pp_sim_free(s);
    if (tracing) pp_outfile_abort(&tf);
    free(fl.finish_s);
    pp_traffic_free(t);
    pp_cluster_free(c);
    return pp_cli_fail(cmd->name, &e);
}

const pp_cli_cmd pp_cmd_flows = {
    "flows",
    "run an explicit traffic matrix on the flow network",
    "flows --cluster C --input FILE [--set PATH=VALUE]... "
    "[--fidelity F] [--seed N] [--format table|json] "
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
