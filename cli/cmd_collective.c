/*
 * cmd_collective.c: `podplan collective`, one collective simulated on a
 * cluster (sim.h's Collectives section does the work).
 *
 * The group is the first N GPUs of the cluster in server-major order
 * (n0.gpu0, n0.gpu1, ..., n1.gpu0, ...).  For the parameter server the
 * server is GPU 0 of the last server and the workers are the first N GPUs
 * of the servers before it: on etri-ps (one GPU per server) `--gpus 16`
 * is servers 0..15 pushing to server 16.
 */
#include "cli_int.h"

#include "podplan/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Algorithms of the registry that sim/coll/collective_sched.c does not
 * generate transfers for: recursive doubling is measured by exec only. */
#define NOT_SIMULATED (UINT32_C(1) << PP_ALGO_RD)

static const pp_cli_opt opts[] = {
    {"cluster", 'c', "C",
     "cluster: YAML file or a name in topologies/ (required)", false, NULL, 0,
     NULL},
    {"set", 0, "PATH=VALUE",
     "override a cluster field, e.g. node.nics.count=4 (repeatable)", true,
     NULL, 0, NULL},
    {"op", 0, "OP", "the collective operation (default: allreduce):", false,
     &pp_reg_coll_op, 0, NULL},
    {"algo", 0, "ALGO", "the algorithm (default: ring):", false,
     &pp_reg_coll_algo, NOT_SIMULATED,
     "recursive doubling is not simulated (it is only run on real hardware)"},
    {"bytes", 'b', "SIZE",
     "buffer size per GPU as nccl-tests counts it, e.g. 64MB (required)", false,
     NULL, 0, NULL},
    {"gpus", 'n', "N",
     "group size: the first N GPUs; ps: N workers (default: all)", false, NULL,
     0, NULL},
    {"profile", 0, "FILE",
     "a profile fitted by `podplan calibrate fit`: its network: alpha-beta "
     "times the collectives it covers (default: none, the cluster's links)",
     false, NULL, 0, NULL},
    {"collnet", 0, NULL,
     "--algo nccl: CollNet (SHARP) enabled, as NCCL_COLLNET_ENABLE=1",
     false, NULL, 0, NULL},
    {"pxn", 0, "on|off",
     "alltoall: relay each transfer between servers through the GPU on the "
     "destination's rail over NVLink (NCCL's PXN; off: NCCL_PXN_DISABLE=1; "
     "default: on)",
     false, NULL, 0, NULL},
    {"fidelity", 0, "F", "network model (default: flow):", false,
     &pp_reg_fidelity, 0, NULL},
    {"granularity", 0, "G",
     "auto|step|stream (default: auto: step up to 64 GPUs)", false, NULL, 0,
     NULL},
    {"channels", 0, "K", "ring channels (default: one per NIC of a server)",
     false, NULL, 0, NULL},
    {"root", 0, "R", "root rank for broadcast and naive (default: 0)", false,
     NULL, 0, NULL},
    {"reduce-bw", 0, "BW",
     "rate at which a GPU sums, e.g. 600GB/s (default: HBM bandwidth / 3)",
     false, NULL, 0, NULL},
    {"step-time", 0, "T",
     "ps: training step time, for the server bandwidth it needs, e.g. 200ms",
     false, NULL, 0, NULL},
    {"seed", 0, "N", "seed of the ECMP hash (default: 0)", false, NULL, 0,
     NULL},
    {"trace", 0, "FILE",
     "write a Chrome/Perfetto trace (one track per GPU and per link)", false,
     NULL, 0, NULL},
    {"links", 0, NULL,
     "list the 10 most utilised links: bytes, capacity, utilisation", false,
     NULL, 0, NULL},
    {"format", 0, "FMT", "table|json (default: table)", false, NULL, 0, NULL},
    {"output", 'o', "FILE", "write to FILE atomically (default: stdout)", false,
     NULL, 0, NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

static const char *const gran_names[] = {"auto", "step", "stream", NULL};

#define TOP_LINKS 10

typedef struct link_row {
    int32_t id;
    double bytes, util;
} link_row;

typedef struct result {
    const char *cluster;
    const pp_device *devs;
    const pp_link *links;
    pp_coll_spec spec;
    int fid;
    pp_coll_result r;
    const pp_gpu_profile *prof; /* --profile, else NULL */
    link_row top[TOP_LINKS];
    int n_top;
    bool show_links;
    /* ps */
    double server_bytes, server_link_Bps, step_time;
} result;

static const char *link_name(const result *x, int32_t l, char *buf,
                             size_t len) {
    snprintf(buf, len, "%s -> %s", x->devs[x->links[l].src].name,
             x->devs[x->links[l].dst].name);
    return buf;
}

/* What --profile did: which fitted entry timed the collective, or why
 * none did. */
static void print_fit(FILE *fp, const result *x) {
    const pp_net_fit *f = x->r.fit;
    fprintf(fp, "profile      %s (%s)\n", x->prof->name,
            x->prof->calibrated[0] ? x->prof->calibrated
                                   : "uncalibrated: published figures");
    if (!f) {
        fprintf(fp, "network      no fitted entry for %s/%s (%zu entr%s): "
                    "the cluster's links\n",
                pp_coll_op_name(x->spec.op), pp_coll_algo_name(x->spec.algo),
                x->prof->n_net, x->prof->n_net == 1 ? "y" : "ies");
        return;
    }
    char nr[32] = "any";
    if (f->ranks > 0) snprintf(nr, sizeof nr, "%lld", (long long)f->ranks);
    fprintf(fp,
            "network      fitted %s/%s %s, %s ranks (line %d): alpha %s, "
            "beta %s/s -> %s%s\n",
            f->op, f->algo, f->link, nr, f->line, pp_fmtq(f->alpha_s, PP_Q_TIME),
            pp_fmtq(f->beta_Bps, PP_Q_BYTES), pp_fmtq(x->r.fit_s, PP_Q_TIME),
            x->fid == PP_FIDELITY_ANALYTIC
                ? ""
                : " (a floor: the transfers ran on the links)");
}

static void print_table(FILE *fp, const void *ctx) {
    const result *x = ctx;
    const pp_coll_result *r = &x->r;
    char nm[128];
    fprintf(fp, "collective   %s, %s, %zu %s of %s\n",
            pp_coll_op_name(x->spec.op), pp_coll_algo_name(x->spec.algo),
            x->spec.n_gpus, x->spec.algo == PP_ALGO_PS ? "workers" : "GPUs",
            x->cluster);
    /* What ran, with what was asked for when the choice was automatic. */
    fprintf(fp, "simulated    %s fidelity, granularity %s%s, %d channel%s%s\n",
            pp_fidelity_name((pp_fidelity)x->fid), gran_names[r->gran],
            x->spec.gran == PP_GRAN_AUTO ? " (auto)" : "", r->channels,
            r->channels == 1 ? "" : "s",
            x->spec.channels                ? ""
            : x->spec.algo == PP_ALGO_NCCL ? " (NCCL's topology search)"
                                           : " (one per NIC when leaving a server)");
    if (r->nccl.algo) {
        fprintf(fp,
                "nccl         chose %s/%s (%d channel%s x %s/s, %d server%s): "
                "latency %s + S / %s/s",
                r->nccl.algo, r->nccl.proto, r->nccl.channels,
                r->nccl.channels == 1 ? "" : "s",
                pp_fmtq(r->nccl.chan_Bps, PP_Q_BYTES), r->nccl.nodes,
                r->nccl.nodes == 1 ? "" : "s",
                pp_fmtq(r->nccl.lat_s, PP_Q_TIME),
                pp_fmtq(r->nccl.algbw_Bps, PP_Q_BYTES));
        if (r->nccl.fill_s > 0)
            fprintf(fp, " + pipeline fill %s (%s chunks)",
                    pp_fmtq(r->nccl.fill_s, PP_Q_TIME),
                    pp_fmtq((double)r->nccl.chunk, PP_Q_BYTES));
        fprintf(fp, " = %s\n", pp_fmtq(r->nccl.time_s, PP_Q_TIME));
    }
    if (x->prof) print_fit(fp, x);
    fprintf(fp, "size         %s per GPU\n",
            pp_fmtq(x->spec.bytes, PP_Q_BYTES));
    fprintf(fp, "time         %s\n", pp_fmtq(r->time_s, PP_Q_TIME));
    fprintf(fp, "algbw        %s/s (%s)\n", pp_fmtq(r->algbw_Bps, PP_Q_BYTES),
            pp_fmtq(r->algbw_Bps, PP_Q_BANDWIDTH));
    fprintf(fp, "busbw        %s/s (%s), algbw x %.4g as nccl-tests counts\n",
            pp_fmtq(r->busbw_Bps, PP_Q_BYTES),
            pp_fmtq(r->busbw_Bps, PP_Q_BANDWIDTH),
            pp_coll_busbw_factor(x->spec.op, x->spec.n_gpus));
    fprintf(fp, "transfers    %llu", (unsigned long long)r->transfers);
    if (x->spec.op == PP_COLL_ALLTOALL)
        fprintf(fp, " (%llu relayed through the destination's rail, NCCL's "
                    "PXN%s)",
                (unsigned long long)r->relayed,
                x->spec.no_pxn ? ": off" : "");
    fputc('\n', fp);
    fprintf(fp, "events       %llu\n", (unsigned long long)r->events);
    if (r->busiest_link >= 0)
        fprintf(fp, "busiest link %s: %s\n",
                link_name(x, r->busiest_link, nm, sizeof nm),
                pp_fmtq(r->busiest_bytes, PP_Q_BYTES));
    if (x->spec.algo == PP_ALGO_PS) {
        fprintf(fp, "server       %s: %s through its link (%s)\n",
                x->devs[x->spec.server].name,
                pp_fmtq(x->server_bytes, PP_Q_BYTES),
                pp_fmtq(x->server_link_Bps, PP_Q_BANDWIDTH));
        if (x->step_time > 0)
            fprintf(fp, "             needs %s (%s/s) for a %s step\n",
                    pp_fmtq(x->server_bytes / x->step_time, PP_Q_BANDWIDTH),
                    pp_fmtq(x->server_bytes / x->step_time, PP_Q_BYTES),
                    pp_fmtq(x->step_time, PP_Q_TIME));
    }
    if (x->show_links) {
        fprintf(fp, "\n%-40s %12s %12s %6s\n", "link", "bytes", "capacity",
                "util");
        for (int i = 0; i < x->n_top; i++) {
            const link_row *l = &x->top[i];
            fprintf(fp, "%-40s %12s %12s %5.1f%%\n",
                    link_name(x, l->id, nm, sizeof nm),
                    pp_fmtq(l->bytes, PP_Q_BYTES),
                    pp_fmtq(x->links[l->id].bw_Bps, PP_Q_BANDWIDTH),
                    100 * l->util);
        }
    }
}

static json_t *to_json(const result *x) {
    const pp_coll_result *r = &x->r;
    char nm[128];
    json_t *o = json_object();
    json_object_set_new(o, "cluster", json_string(x->cluster));
    json_object_set_new(o, "op", json_string(pp_coll_op_name(x->spec.op)));
    json_object_set_new(o, "algo",
                        json_string(pp_coll_algo_name(x->spec.algo)));
    json_object_set_new(o, "bytes", pp_json_num(x->spec.bytes));
    json_object_set_new(o, "gpus", json_integer((json_int_t)x->spec.n_gpus));
    json_object_set_new(o, "fidelity",
                        json_string(pp_fidelity_name((pp_fidelity)x->fid)));
    /* The resolved values: what the simulation actually ran. */
    json_object_set_new(o, "granularity", json_string(gran_names[r->gran]));
    json_object_set_new(o, "channels", json_integer(r->channels));
    if (x->spec.op == PP_COLL_ALLTOALL) {
        json_object_set_new(o, "pxn", json_boolean(!x->spec.no_pxn));
        json_object_set_new(o, "relayed_transfers",
                            json_integer((json_int_t)r->relayed));
    }
    if (r->nccl.algo) {
        json_t *nc = json_object();
        json_object_set_new(nc, "algo", json_string(r->nccl.algo));
        json_object_set_new(nc, "proto", json_string(r->nccl.proto));
        json_object_set_new(nc, "channels", json_integer(r->nccl.channels));
        json_object_set_new(nc, "channel_GBps",
                            pp_json_num(r->nccl.chan_Bps / 1e9));
        json_object_set_new(nc, "servers", json_integer(r->nccl.nodes));
        json_object_set_new(nc, "latency_s", pp_json_num(r->nccl.lat_s));
        if (r->nccl.fill_s > 0) {
            json_object_set_new(nc, "fill_s", pp_json_num(r->nccl.fill_s));
            json_object_set_new(nc, "chunk_bytes",
                                json_integer((json_int_t)r->nccl.chunk));
        }
        json_object_set_new(nc, "algbw_GBps",
                            pp_json_num(r->nccl.algbw_Bps / 1e9));
        json_object_set_new(nc, "time_s", pp_json_num(r->nccl.time_s));
        json_object_set_new(o, "nccl", nc);
    }
    if (x->prof) {
        json_object_set_new(o, "profile", json_string(x->prof->name));
        json_object_set_new(o, "profile_calibrated",
                            x->prof->calibrated[0]
                                ? json_string(x->prof->calibrated)
                                : json_false());
        json_t *nf = json_null();
        if (r->fit) {
            nf = json_object();
            json_object_set_new(nf, "op", json_string(r->fit->op));
            json_object_set_new(nf, "algo", json_string(r->fit->algo));
            json_object_set_new(nf, "link", json_string(r->fit->link));
            json_object_set_new(nf, "ranks", json_integer(r->fit->ranks));
            json_object_set_new(nf, "line", json_integer(r->fit->line));
            json_object_set_new(nf, "alpha_s", pp_json_num(r->fit->alpha_s));
            json_object_set_new(nf, "beta_Bps", pp_json_num(r->fit->beta_Bps));
            json_object_set_new(nf, "time_s", pp_json_num(r->fit_s));
        }
        json_object_set_new(o, "network_fit", nf);
    }
    json_object_set_new(o, "time_s", pp_json_num(r->time_s));
    json_object_set_new(o, "algbw_GBps", pp_json_num(r->algbw_Bps / 1e9));
    json_object_set_new(o, "busbw_GBps", pp_json_num(r->busbw_Bps / 1e9));
    json_object_set_new(
        o, "busbw_factor",
        pp_json_num(pp_coll_busbw_factor(x->spec.op, x->spec.n_gpus)));
    json_object_set_new(o, "transfers", json_integer((json_int_t)r->transfers));
    json_object_set_new(o, "events", json_integer((json_int_t)r->events));
    if (r->busiest_link >= 0) {
        json_object_set_new(
            o, "busiest_link",
            json_string(link_name(x, r->busiest_link, nm, sizeof nm)));
        json_object_set_new(o, "busiest_link_bytes",
                            pp_json_num(r->busiest_bytes));
    }
    if (x->spec.algo == PP_ALGO_PS) {
        json_object_set_new(o, "server",
                            json_string(x->devs[x->spec.server].name));
        json_object_set_new(o, "server_bytes", pp_json_num(x->server_bytes));
        json_object_set_new(o, "server_link_Bps",
                            pp_json_num(x->server_link_Bps));
        if (x->step_time > 0) {
            json_object_set_new(o, "step_time_s", pp_json_num(x->step_time));
            json_object_set_new(o, "server_Bps_needed_for_step",
                                pp_json_num(x->server_bytes / x->step_time));
        }
    }
    if (x->show_links) {
        json_t *list = json_array();
        for (int i = 0; i < x->n_top; i++) {
            json_t *l = json_object();
            const link_row *row = &x->top[i];
            json_object_set_new(
                l, "link", json_string(link_name(x, row->id, nm, sizeof nm)));
            json_object_set_new(l, "bytes", pp_json_num(row->bytes));
            json_object_set_new(l, "capacity_Bps",
                                pp_json_num(x->links[row->id].bw_Bps));
            json_object_set_new(l, "utilisation", pp_json_num(row->util));
            json_array_append_new(list, l);
        }
        json_object_set_new(o, "links", list);
    }
    return o;
}

/* The busiest links: highest utilisation (bytes / (capacity x time)),
 * which finds the bottleneck rather than the fattest pipe; then bytes,
 * then id, so ties print in a fixed order. */
static bool busier(const link_row *x, const link_row *y) {
    if (x->util != y->util) return x->util > y->util;
    if (x->bytes != y->bytes) return x->bytes > y->bytes;
    return x->id < y->id;
}

static void busiest(result *x, const double *lb, size_t nl) {
    x->n_top = 0;
    double t = x->r.time_s;
    for (size_t l = 0; l < nl; l++) {
        if (!(lb[l] > 0)) continue;
        double cap = x->links[l].bw_Bps;
        link_row row = {(int32_t)l, lb[l],
                        t > 0 && cap > 0 ? lb[l] / (cap * t) : 0};
        int pos = x->n_top;
        while (pos > 0 && busier(&row, &x->top[pos - 1])) pos--;
        if (pos >= TOP_LINKS) continue;
        int last = x->n_top < TOP_LINKS ? x->n_top : TOP_LINKS - 1;
        memmove(&x->top[pos + 1], &x->top[pos],
                (size_t)(last - pos) * sizeof x->top[0]);
        x->top[pos] = row;
        if (x->n_top < TOP_LINKS) x->n_top++;
    }
}

/* Bytes through the server's link: its HCA's cable to the fabric, both
 * directions (or the server's own links when it has no HCA). */
static void server_traffic(result *x, const pp_cluster *c, const double *lb) {
    int32_t h = pp_cluster_gpu_hca(c, x->spec.server);
    int32_t dev = h >= 0 ? h : x->spec.server;
    size_t no;
    const int32_t *out = pp_cluster_out(c, dev, &no);
    for (size_t i = 0; i < no; i++) {
        const pp_link *l = &x->links[out[i]];
        if (h >= 0 && l->kind != PP_LINK_HOST) continue;
        x->server_bytes += lb[out[i]] + lb[l->reverse];
        if (l->bw_Bps > x->server_link_Bps) x->server_link_Bps = l->bw_Bps;
    }
}

/* The group: the first n GPUs (ps: of every server but the last, whose
 * GPU 0 is the server). */
static int make_group(const pp_args *a, const pp_cluster *c, result *x,
                      int32_t **gpus, pp_error *e) {
    const pp_cluster_info *info = pp_cluster_info_get(c);
    bool ps = x->spec.algo == PP_ALGO_PS;
    int64_t avail = ps ? (int64_t)info->gpus - info->gpus_per_node : info->gpus;
    if (ps && info->nodes < 2)
        return pp_error_set(e, PP_EUSAGE,
                            "--algo ps: %s has one server; the parameter "
                            "server needs a server of its own",
                            info->name);
    int64_t n = avail;
    const char *v = pp_args_get(a, "gpus");
    if (pp_args_int(a, "gpus", 1, INT64_MAX, &n, e)) return PP_EUSAGE;
    if (n > avail) {
        if (ps)
            return pp_error_set(e, PP_EUSAGE,
                                "--gpus: %s is more than the %lld worker GPUs "
                                "of %s (its last server is the parameter "
                                "server)",
                                v, (long long)avail, info->name);
        return pp_error_set(e, PP_EUSAGE,
                            "--gpus: %s is more than the %lld GPUs of %s", v,
                            (long long)avail, info->name);
    }
    int64_t min = ps ? 1 : 2;
    if (n < min)
        return pp_error_set(e, PP_EUSAGE, "--gpus: %s needs at least %lld GPUs",
                            pp_coll_op_name(x->spec.op), (long long)min);
    int32_t *g = pp_xmalloc((size_t)n * sizeof *g);
    for (int64_t i = 0; i < n; i++)
        g[i] = pp_cluster_gpu(c, (int32_t)(i / info->gpus_per_node),
                              (int32_t)(i % info->gpus_per_node));
    if (ps) x->spec.server = pp_cluster_gpu(c, info->nodes - 1, 0);
    x->spec.n_gpus = (size_t)n;
    *gpus = g;
    return 0;
}

static int run(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    result x;
    memset(&x, 0, sizeof x);
    const char *cspec = NULL;
    int fmt = PP_FMT_TABLE, op = PP_COLL_ALLREDUCE, algo = PP_ALGO_RING;
    int fid = PP_FIDELITY_FLOW, gran = PP_GRAN_AUTO;
    int64_t channels = 0, root = 0, seed = 0;
    double reduce = 0, step_time = 0, bytes = 0;
    pp_cluster *c = NULL;
    pp_sim *s = NULL;
    int32_t *gpus = NULL;
    pp_gpu_profile *prof = NULL;
    pp_outfile tf = {0};
    bool tracing = false;
    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc || pp_args_need(&a, "cluster", &cspec, &e) ||
        pp_args_choice(&a, "op", &op, &e) ||
        pp_args_choice(&a, "algo", &algo, &e) ||
        pp_args_choice(&a, "fidelity", &fid, &e) ||
        pp_args_enum(&a, "granularity", gran_names, &gran, &e) ||
        pp_args_enum(&a, "format", pp_format_names, &fmt, &e) ||
        pp_args_int(&a, "channels", 1, 1024, &channels, &e) ||
        pp_args_int(&a, "root", 0, INT32_MAX, &root, &e) ||
        pp_args_int(&a, "seed", 0, INT64_MAX, &seed, &e) ||
        pp_args_quantity(&a, "reduce-bw", PP_Q_BANDWIDTH, NULL, &reduce, &e) ||
        pp_args_quantity(&a, "step-time", PP_Q_TIME, NULL, &step_time, &e))
        return pp_cli_fail(cmd->name, &e);
    if (!pp_args_get(&a, "bytes")) {
        pp_error_set(&e, PP_EUSAGE,
                     "--bytes is required (a byte size such "
                     "as 64MB); see `podplan collective --help`");
        return pp_cli_fail(cmd->name, &e);
    }
    if (pp_args_quantity(&a, "bytes", PP_Q_BYTES, NULL, &bytes, &e))
        return pp_cli_fail(cmd->name, &e);
    if (pp_args_get(&a, "step-time") && algo != PP_ALGO_PS) {
        pp_error_set(&e, PP_EUSAGE, "--step-time only applies to --algo ps");
        return pp_cli_fail(cmd->name, &e);
    }
    x.spec.op = (pp_coll_op)op;
    x.spec.algo = (pp_coll_algo)algo;
    x.spec.bytes = bytes;
    x.spec.channels = (int)channels;
    x.spec.gran = (pp_granularity)gran;
    x.spec.reduce_Bps = reduce;
    x.spec.server = -1;
    x.fid = fid;
    x.step_time = step_time;
    x.show_links = pp_args_flag(&a, "links");
    x.spec.nccl_collnet = pp_args_flag(&a, "collnet");
    const char *pxn = pp_args_get(&a, "pxn");
    if (pxn && strcmp(pxn, "on") != 0 && strcmp(pxn, "off") != 0) {
        pp_error_set(&e, PP_EUSAGE, "--pxn: expected on or off, got \"%s\"",
                     pxn);
        return pp_cli_fail(cmd->name, &e);
    }
    x.spec.no_pxn = pxn && strcmp(pxn, "off") == 0;
    if (x.spec.nccl_collnet && algo != PP_ALGO_NCCL) {
        pp_error_set(&e, PP_EUSAGE, "--collnet only applies to --algo nccl");
        return pp_cli_fail(cmd->name, &e);
    }

    rc = pp_cli_load_cluster(&a, &c, &e);
    if (rc) goto out;
    x.cluster = pp_cluster_info_get(c)->name;
    size_t nd, nl;
    x.devs = pp_cluster_devices(c, &nd);
    x.links = pp_cluster_links(c, &nl);
    if ((rc = make_group(&a, c, &x, &gpus, &e))) goto out;
    if ((size_t)root >= x.spec.n_gpus) {
        rc = pp_error_set(&e, PP_EUSAGE,
                          "--root: %lld is not a rank of the "
                          "%zu GPUs",
                          (long long)root, x.spec.n_gpus);
        goto out;
    }
    x.spec.root = (int32_t)root;
    x.spec.gpus = gpus;

    if (pp_args_get(&a, "profile")) {
        prof = pp_xmalloc(sizeof *prof);
        if ((rc = pp_cli_load_profile(&a, pp_cluster_info_get(c)->gpu, true,
                                      prof, &e)))
            goto out;
        x.prof = prof;
        x.spec.fits = prof->net;
        x.spec.n_fits = prof->n_net;
    }
    if ((rc = pp_sim_new(c, (pp_fidelity)fid, (uint64_t)seed, &s, &e)))
        goto out;
    const char *tpath = pp_args_get(&a, "trace");
    if (tpath) {
        if ((rc = pp_outfile_open(&tf, tpath, &e))) goto out;
        tracing = true;
        if ((rc = pp_sim_trace(s, tf.fp, &e))) goto out;
    }
    if ((rc = pp_sim_collective(s, &x.spec, &x.r, &e))) goto out;
    size_t nlb;
    const double *lb = pp_sim_link_bytes(s, &nlb);
    busiest(&x, lb, nlb);
    if (x.spec.algo == PP_ALGO_PS) server_traffic(&x, c, lb);
    pp_sim_free(s); /* writes the trace's closing bracket */
    s = NULL;
    if (tracing) {
        tracing = false;
        if ((rc = pp_outfile_commit(&tf, &e))) goto out;
    }
    rc = pp_cli_emit(&a, fmt, to_json(&x), print_table, &x);
    free(prof);
    free(gpus);
    pp_cluster_free(c);
    return rc;
out:
    /* The library's messages name the module; ours already says it. */
    if (strncmp(e.msg, "collective: ", 12) == 0)
        memmove(e.msg, e.msg + 12, strlen(e.msg + 12) + 1);
    pp_sim_free(s);
    if (tracing) pp_outfile_abort(&tf);
    free(prof);
    free(gpus);
    pp_cluster_free(c);
    return pp_cli_fail(cmd->name, &e);
}

const pp_cli_cmd pp_cmd_collective = {
    "collective",
    "simulate one collective (AllReduce, ...) on a cluster: time, algbw, busbw",
    "collective --cluster C [--op OP] [--algo ALGO] --bytes SIZE [--gpus N] "
    "[--profile FILE] [--collnet] [--pxn on|off] [--fidelity F] "
    "[--granularity auto|step|stream] "
    "[--channels K] [--set PATH=VALUE]... [--trace FILE] [--links] "
    "[--format table|json] [-o FILE]",
    "The group is the first N GPUs in server-major order.  ring uses "
    "NCCL-style\n"
    "channels (one per NIC), rail-aligned between servers; tree is NCCL's "
    "double\n"
    "binary tree; hier reduces inside servers, runs a ring per rail, gathers\n"
    "inside servers; naive gathers to the root and broadcasts; ps: every "
    "worker\n"
    "pushes S to the server (GPU 0 of the last server) and pulls S back; "
    "sharp\n"
    "reduces in the switches.  algbw = S / time; busbw = algbw x 2(n-1)/n for\n"
    "allreduce, (n-1)/n for allgather, reducescatter and alltoall, 1 for\n"
    "broadcast and sendrecv (nccl-tests' PERFORMANCE.md).  GB/s in JSON keys "
    "is\n"
    "1e9 bytes per second.  A GPU sums at HBM bandwidth / 3 unless "
    "--reduce-bw.\n"
    "--profile P (a profile `podplan calibrate fit` wrote): where its "
    "network:\n"
    "section has an entry for the operation and algorithm (or auto) at this\n"
    "scope, the collective takes the fitted alpha + S/beta (rescaled by the\n"
    "algorithm's steps for another group size): exactly at analytic "
    "fidelity,\n"
    "at least at flow fidelity, where the transfers still contend.\n"
    "--algo nccl: NCCL's own tuning model (src/graph/tuning.cc) picks the\n"
    "algorithm (Ring, Tree, NVLS, NVLSTree, CollNet) and protocol (LL, LL128,\n"
    "Simple) for the size and times it, as nccl-tests would run it; the line\n"
    "`nccl` says what it chose.",
    opts,
    run,
};
