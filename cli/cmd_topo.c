/*
 * cmd_topo.c: `podplan topo check|stats|dot|export`, analysis of a
 * cluster file (sim.h's Analysis section does the work).
 */
#include "cli_int.h"

#include "podplan/sim.h"

#include <stdlib.h>
#include <string.h>

static const pp_cli_opt opts[] = {
    {"cluster", 'c', "C",
     "cluster: YAML file or a name in topologies/ (required)", false, NULL, 0,
     NULL},
    {"set", 0, "PATH=VALUE",
     "override a cluster field, e.g. fabric.oversubscription=2:1 (repeatable)",
     true, NULL, 0, NULL},
    {"format", 0, "FMT",
     "check, stats: table|json (default: table); export: graphml|json "
     "(default: graphml)",
     false, NULL, 0, NULL},
    {"expand", 0, NULL,
     "dot: draw every device instead of one vertex per server", false, NULL, 0,
     NULL},
    {"output", 'o', "FILE", "write to FILE atomically (default: stdout)", false,
     NULL, 0, NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

enum { SUB_CHECK, SUB_STATS, SUB_DOT, SUB_EXPORT };
static const char *const sub_names[] = {"check", "stats", "dot", "export",
                                        NULL};
static const char *const export_names[] = {"graphml", "json", NULL};

/* JSON keys are part of the CLI contract (DESIGN.md): fixed here rather
 * than taken from the library's kind names. */
static const char *const level_keys[PP_DEV__COUNT] = {
    [PP_DEV_LEAF] = "leaf", [PP_DEV_SPINE] = "spine", [PP_DEV_CORE] = "core"};
static const char *const cable_keys[PP_LINK__COUNT] = {
    [PP_LINK_NVLINK] = "nvlink",
    [PP_LINK_PCIE] = "pcie",
    [PP_LINK_SOCKET] = "socket",
    [PP_LINK_HOST] = "host",
    [PP_LINK_FABRIC] = "fabric"};
static const char *const sev_names[] = {"info", "warning", "error"};

/* ---- check -------------------------------------------------------------- */
typedef struct check_ctx {
    const char *name;
    const pp_problem *p;
    size_t n;
} check_ctx;

static void check_table(FILE *fp, const void *ctx) {
    const check_ctx *x = ctx;
    size_t n_err = 0, n_warn = 0;
    for (size_t i = 0; i < x->n; i++) {
        if (x->p[i].severity == PP_SEV_ERROR) n_err++;
        if (x->p[i].severity == PP_SEV_WARNING) n_warn++;
    }
    if (x->n == 0) {
        fprintf(fp, "%s: no problems found\n", x->name);
        return;
    }
    for (size_t i = 0; i < x->n; i++)
        fprintf(fp, "%-8s %-12s %s\n", sev_names[x->p[i].severity],
                x->p[i].where, x->p[i].message);
    fprintf(fp, "\n%s: %zu error%s, %zu warning%s\n", x->name, n_err,
            n_err == 1 ? "" : "s", n_warn, n_warn == 1 ? "" : "s");
}

static json_t *check_json(const check_ctx *x) {
    json_t *o = json_object(), *list = json_array();
    size_t n_err = 0, n_warn = 0;
    for (size_t i = 0; i < x->n; i++) {
        json_t *p = json_object();
        json_object_set_new(p, "severity",
                            json_string(sev_names[x->p[i].severity]));
        json_object_set_new(p, "where", json_string(x->p[i].where));
        json_object_set_new(p, "message", json_string(x->p[i].message));
        json_array_append_new(list, p);
        if (x->p[i].severity == PP_SEV_ERROR) n_err++;
        if (x->p[i].severity == PP_SEV_WARNING) n_warn++;
    }
    json_object_set_new(o, "cluster", json_string(x->name));
    json_object_set_new(o, "errors", json_integer((json_int_t)n_err));
    json_object_set_new(o, "warnings", json_integer((json_int_t)n_warn));
    json_object_set_new(o, "problems", list);
    return o;
}

/* ---- stats -------------------------------------------------------------- */
typedef struct stats_ctx {
    const char *name;
    pp_topo_stats s;
} stats_ctx;

static void stats_table(FILE *fp, const void *ctx) {
    const stats_ctx *x = ctx;
    const pp_topo_stats *s = &x->s;
    fprintf(fp, "cluster              %s\n", x->name);
    fprintf(fp, "servers              %d\n", (int)s->nodes);
    fprintf(fp, "GPUs                 %d\n", (int)s->gpus);
    fprintf(fp, "HCAs                 %d\n", (int)s->hcas);
    fprintf(fp, "switches             ");
    for (int k = PP_DEV_LEAF; k <= PP_DEV_CORE; k++)
        fprintf(fp, "%s %d, ", level_keys[k], (int)s->switches[k]);
    fprintf(fp, "total %d\n", (int)s->switches_total);
    fprintf(fp, "ports used           ");
    int ports = 0;
    for (int k = PP_DEV_LEAF; k <= PP_DEV_CORE; k++) {
        fprintf(fp, "%s %d, ", level_keys[k], (int)s->ports_used[k]);
        ports += s->ports_used[k];
    }
    fprintf(fp, "total %d\n", ports);
    fprintf(fp, "network cables       host %d, fabric %d, total %d\n",
            (int)s->cables[PP_LINK_HOST], (int)s->cables[PP_LINK_FABRIC],
            (int)s->cables_total);
    fprintf(fp, "links inside servers nvlink %d, pcie %d, socket %d\n",
            (int)s->cables[PP_LINK_NVLINK], (int)s->cables[PP_LINK_PCIE],
            (int)s->cables[PP_LINK_SOCKET]);
    fprintf(fp, "injection per GPU    %s (%s/s)\n",
            pp_fmtq(s->injection_Bps, PP_Q_BANDWIDTH),
            pp_fmtq(s->injection_Bps, PP_Q_BYTES));
    fprintf(fp, "bisection            %s (%s/s), minimum over splits by %s\n",
            pp_fmtq(s->bisection_Bps, PP_Q_BANDWIDTH),
            pp_fmtq(s->bisection_Bps, PP_Q_BYTES), s->bisection_split);
    fprintf(fp, "over-subscription    ");
    bool any = false;
    for (int k = PP_DEV_LEAF; k <= PP_DEV_CORE; k++) {
        if (s->switches[k] == 0) continue;
        fprintf(fp, "%s%s %s", any ? ", " : "", level_keys[k],
                pp_fmtq(s->oversubscription[k], PP_Q_RATIO));
        any = true;
    }
    fprintf(fp, "%s\n", any ? "" : "none (no switch fabric)");
    fprintf(fp, "non-blocking         %s\n", s->non_blocking ? "yes" : "no");
}

static json_t *stats_json(const stats_ctx *x) {
    const pp_topo_stats *s = &x->s;
    json_t *o = json_object(), *sw = json_object(), *cab = json_object(),
           *ports = json_object(), *ov = json_object();
    json_object_set_new(o, "cluster", json_string(x->name));
    json_object_set_new(o, "nodes", json_integer(s->nodes));
    json_object_set_new(o, "gpus", json_integer(s->gpus));
    json_object_set_new(o, "hcas", json_integer(s->hcas));
    int ports_total = 0;
    for (int k = PP_DEV_LEAF; k <= PP_DEV_CORE; k++) {
        json_object_set_new(sw, level_keys[k], json_integer(s->switches[k]));
        json_object_set_new(ports, level_keys[k],
                            json_integer(s->ports_used[k]));
        ports_total += s->ports_used[k];
        if (s->switches[k] > 0)
            json_object_set_new(ov, level_keys[k],
                                pp_json_num(s->oversubscription[k]));
    }
    json_object_set_new(sw, "total", json_integer(s->switches_total));
    json_object_set_new(ports, "total", json_integer(ports_total));
    for (int k = 0; k < PP_LINK__COUNT; k++)
        json_object_set_new(cab, cable_keys[k], json_integer(s->cables[k]));
    json_object_set_new(cab, "total", json_integer(s->cables_total));
    json_object_set_new(o, "switches", sw);
    json_object_set_new(o, "cables", cab);
    json_object_set_new(o, "ports_used", ports);
    json_object_set_new(o, "injection_bandwidth_Bps",
                        pp_json_num(s->injection_Bps));
    json_object_set_new(o, "bisection_bandwidth_Bps",
                        pp_json_num(s->bisection_Bps));
    json_object_set_new(o, "bisection_split", json_string(s->bisection_split));
    json_object_set_new(o, "non_blocking", json_boolean(s->non_blocking));
    json_object_set_new(o, "oversubscription", ov);
    return o;
}

/* ---- dot, export: the library writes, we make the file atomic ---------- */
static int write_graph(const pp_args *a, const pp_cluster *c, int sub,
                       int exp_fmt) {
    pp_error e = PP_ERROR_INIT;
    pp_outfile of;
    int rc = pp_outfile_open(&of, pp_args_get(a, "output"), &e);
    if (rc) return pp_cli_fail(a->cmd->name, &e);
    if (sub == SUB_DOT)
        rc = pp_topo_dot(c, pp_args_flag(a, "expand"), of.fp, &e);
    else
        rc = pp_topo_export(c, (pp_export_format)exp_fmt, of.fp, &e);
    if (rc) {
        pp_outfile_abort(&of);
        return pp_cli_fail(a->cmd->name, &e);
    }
    if (pp_outfile_commit(&of, &e)) return pp_cli_fail(a->cmd->name, &e);
    return 0;
}

static int run(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    pp_cluster *c = NULL;
    const char *spec = NULL;
    int sub = -1, fmt = PP_FMT_TABLE, exp_fmt = PP_EXPORT_GRAPHML, status = 0;

    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc) return pp_cli_fail(cmd->name, &e);
    if (a.n_positional == 0) {
        pp_error_set(&e, PP_EUSAGE,
                     "expected a subcommand: check, stats, dot "
                     "or export; see `podplan topo --help`");
        return pp_cli_fail(cmd->name, &e);
    }
    if (a.n_positional > 1) {
        pp_error_set(&e, PP_EUSAGE, "unexpected argument \"%s\"",
                     a.positional[1]);
        return pp_cli_fail(cmd->name, &e);
    }
    for (int i = 0; sub_names[i]; i++)
        if (strcmp(a.positional[0], sub_names[i]) == 0) sub = i;
    if (sub < 0) {
        const char *best = NULL;
        int best_d = 3;
        for (int i = 0; sub_names[i]; i++) {
            int d = pp_edit_distance(a.positional[0], sub_names[i], 2);
            if (d < best_d) {
                best_d = d;
                best = sub_names[i];
            }
        }
        if (best)
            pp_error_set(&e, PP_EUSAGE,
                         "unknown subcommand \"%s\" (did you "
                         "mean \"%s\"?); expected check, stats, dot or export",
                         a.positional[0], best);
        else
            pp_error_set(&e, PP_EUSAGE,
                         "unknown subcommand \"%s\"; expected "
                         "check, stats, dot or export",
                         a.positional[0]);
        return pp_cli_fail(cmd->name, &e);
    }
    if (pp_args_need(&a, "cluster", &spec, &e))
        return pp_cli_fail(cmd->name, &e);
    if (sub == SUB_CHECK || sub == SUB_STATS)
        rc = pp_args_enum(&a, "format", pp_format_names, &fmt, &e);
    else if (sub == SUB_EXPORT)
        rc = pp_args_enum(&a, "format", export_names, &exp_fmt, &e);
    if (rc == 0 && pp_args_flag(&a, "expand") && sub != SUB_DOT)
        rc = pp_error_set(&e, PP_EUSAGE, "--expand applies to `topo dot` only");
    if (rc) return pp_cli_fail(cmd->name, &e);

    if (pp_cli_load_cluster(&a, &c, &e)) return pp_cli_fail(cmd->name, &e);
    const char *name = pp_cluster_info_get(c)->name;

    switch (sub) {
    case SUB_CHECK: {
        check_ctx x = {name, NULL, 0};
        pp_problem *p = NULL;
        if (pp_topo_check(c, &p, &x.n, &e)) {
            status = pp_cli_fail(cmd->name, &e);
            break;
        }
        x.p = p;
        status = pp_cli_emit(&a, fmt, check_json(&x), check_table, &x);
        /* Exit 1 when the cluster has errors: scripts gate on it. */
        for (size_t i = 0; i < x.n && status == 0; i++)
            if (p[i].severity == PP_SEV_ERROR) status = 1;
        free(p);
        break;
    }
    case SUB_STATS: {
        stats_ctx x = {name, {0}};
        if (pp_topo_stats_compute(c, &x.s, &e)) {
            status = pp_cli_fail(cmd->name, &e);
            break;
        }
        status = pp_cli_emit(&a, fmt, stats_json(&x), stats_table, &x);
        break;
    }
    default: status = write_graph(&a, c, sub, exp_fmt); break;
    }
    pp_cluster_free(c);
    return status;
}

const pp_cli_cmd pp_cmd_topo = {
    "topo",
    "cluster analysis: check, stats (bisection, over-subscription), dot, "
    "export",
    "topo check|stats|dot|export --cluster C [--set PATH=VALUE]... "
    "[--format FMT] [--expand] [-o FILE]",
    "check    validates the built cluster; exit 1 when any problem is an "
    "error.\n"
    "         errors: a GPU cut off from the rest, a switch with more links\n"
    "         than ports, a rail or HCA with no leaf, a CPU socket whose PCIe\n"
    "         lane budget is exceeded (names the devices that drop to x8 and\n"
    "         the bandwidth each is left with).  warnings: a PCIe switch "
    "whose\n"
    "         uplink is narrower than its devices, a GPU whose nearest HCA is\n"
    "         under the other socket (no GPUDirect RDMA path).\n"
    "stats    counts (servers, GPUs, HCAs, switches per level, cables, "
    "ports),\n"
    "         per-GPU injection bandwidth, over-subscription per level "
    "counted\n"
    "         from the graph (downlink / uplink capacity; top level 1:1), and\n"
    "         the bisection bandwidth: the smallest max-flow between two "
    "equal\n"
    "         halves of the HCAs over the switch fabric only, split by "
    "server,\n"
    "         by rail, by leaf and by pod.  non_blocking: every level 1:1 or\n"
    "         better and every split carries what its smaller half injects.\n"
    "dot      Graphviz DOT of the fabric, one vertex per server unless\n"
    "         --expand; render with `dot -Tsvg`.\n"
    "export   the full device graph, one edge per link direction with bw_Bps\n"
    "         and lat_s: GraphML (igraph's writer) or JSON.",
    opts,
    run,
};
