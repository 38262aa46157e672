/*
 * cmd_calibrate.c: `podplan calibrate import|fit|validate|run`
 * (calibrate.h does the work; calibrate/README.md has the formats).
 */
#include "cmd_calibrate_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Shared: reading the measurement files named on the command line.
 * ---------------------------------------------------------------------- */
static int read_inputs(const pp_args *a, pp_cal_set *s, pp_error *e) {
    if (!a->n_positional)
        return pp_error_set(e, PP_EUSAGE, "expected measurement files");
    pp_cal_hints h = {0};
    h.link = pp_args_get(a, "link");
    h.op = pp_args_get(a, "op");
    h.algo = pp_args_get(a, "algo");
    h.model = pp_args_get(a, "model");
    h.cluster = pp_args_get(a, "cluster");
    h.parallel = pp_args_get(a, "parallel");
    for (int i = 0; i < a->n_positional; i++) {
        int rc = pp_cal_import(s, a->positional[i], &h, e);
        if (rc < 0) return rc;
    }
    return 0;
}

#define HINT_OPTS                                                                \
    {"link",                                                                     \
     0,                                                                          \
     "CLASS",                                                                    \
     "link class of the measured path when the file does not say: "              \
     "nvlink|nvswitch|pcie|infiniband|roce|ethernet",                            \
     false,                                                                      \
     NULL,                                                                       \
     0,                                                                          \
     NULL},                                                                      \
        {"op",                                                                   \
         0,                                                                      \
         "OP",                                                                   \
         "collective of an nccl-tests output that does not name its test",       \
         false,                                                                  \
         NULL,                                                                   \
         0,                                                                      \
         NULL},                                                                  \
        {"algo", 0,                                                              \
         "ALGO", "NCCL_ALGO the collectives ran with (default: auto)",           \
         false,  NULL,                                                           \
         0,      NULL},                                                          \
        {"model", 'm', "M", "model of a Megatron-LM log", false, NULL, 0, NULL}, \
    {                                                                            \
        "parallel", 'p', "SPEC", "layout of a Megatron-LM log", false, NULL,     \
            0, NULL                                                              \
    }

/* ------------------------------------------------------------------------
 * import
 * ---------------------------------------------------------------------- */
static const pp_cli_opt import_opts[] = {
    HINT_OPTS,
    {"cluster", 'c', "C", "cluster of a Megatron-LM log", false, NULL, 0, NULL},
    {"format", 0, "FMT", "json|table (default: json: the measurement set)",
     false, NULL, 0, NULL},
    {"output", 'o', "FILE", "write to FILE atomically (default: stdout)", false,
     NULL, 0, NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

static void import_table(FILE *fp, const void *ctx) {
    const pp_cal_set *s = ctx;
    fprintf(fp, "%-40s %-12s %6s\n", "file", "format", "points");
    for (size_t i = 0; i < s->n_src; i++) {
        size_t n = 0;
        for (size_t j = 0; j < s->n; j++) n += s->pts[j].source == (int)i;
        fprintf(fp, "%-40s %-12s %6zu\n", s->src[i].path, s->src[i].format, n);
    }
    for (int k = 0; k < PP_CAL__KINDS; k++) {
        size_t n = 0;
        for (size_t j = 0; j < s->n; j++) n += (int)s->pts[j].kind == k;
        if (n)
            fprintf(fp, "%-12s %zu points\n", pp_cal_kind_name((pp_cal_kind)k),
                    n);
    }
}

static int run_import(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    pp_cal_set s;
    pp_cal_set_init(&s);
    static const char *const fmts[] = {"json", "table", NULL};
    int fmt = 0;
    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc || pp_args_enum(&a, "format", fmts, &fmt, &e) ||
        read_inputs(&a, &s, &e)) {
        pp_cal_set_fini(&s);
        return pp_cli_fail(cmd->name, &e);
    }
    pp_outfile of;
    rc = pp_outfile_open(&of, pp_args_get(&a, "output"), &e);
    if (rc == 0) {
        if (fmt == 0)
            rc = pp_cal_set_write(&s, of.fp, &e);
        else
            import_table(of.fp, &s);
        if (rc)
            pp_outfile_abort(&of);
        else
            rc = pp_outfile_commit(&of, &e);
    }
    pp_cal_set_fini(&s);
    return rc ? pp_cli_fail(cmd->name, &e) : 0;
}

static const pp_cli_cmd cmd_import = {
    "calibrate import",
    "read measurement files into one measurement set",
    "calibrate import FILE... [--link L] [--op OP] [--model M --cluster C "
    "--parallel SPEC] [--format json|table] [-o FILE]",
    "Formats (detected from the content): nccl-tests output (any version,\n"
    "single- or multi-node), perftest (ib_write_bw, ib_read_bw, ib_send_bw,\n"
    "ib_*_lat), `podplan exec` JSON, GEMM/membw CSVs, an iterations YAML,\n"
    "Megatron-LM logs, and measurement sets this command wrote.  Every\n"
    "point keeps its file and line.  Schemas: calibrate/README.md.",
    import_opts,
    run_import};

/* ------------------------------------------------------------------------
 * fit
 * ---------------------------------------------------------------------- */
static const pp_cli_opt fit_opts[] = {
    HINT_OPTS,
    {"cluster", 'c', "C",
     "the cluster measured (its GPU; iterations that name none) (required)",
     false, NULL, 0, NULL},
    {"profile", 0, "P",
     "profile to start from (default: the cluster GPU's shipped one)", false,
     NULL, 0, NULL},
    {"only", 0, "LIST",
     "fits to run, comma-separated: net,gemm,mem,stack (default: all with "
     "points)",
     false, NULL, 0, NULL},
    {"plain", 0, NULL,
     "write provenance as comments and no network: section (a profile today's "
     "--profile accepts)",
     false, NULL, 0, NULL},
    {"output", 'o', "FILE",
     "write the profile to FILE atomically (default: stdout)", false, NULL, 0,
     NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

void pp__cal_fit_print(FILE *fp, const pp_cal_fit *f) {
    fprintf(fp, "%s: %zu points", f->what, f->n_points);
    if (isfinite(f->r2)) fprintf(fp, ", R2 %.4f", f->r2);
    if (f->n_points && isfinite(f->rel_rms))
        fprintf(fp, ", rms error %.2f%%", 100 * f->rel_rms);
    fputc('\n', fp);
    for (size_t i = 0; i < f->n_params; i++) {
        fprintf(fp, "  %-22s %14.6g", f->p[i].name, f->p[i].value);
        if (isfinite(f->p[i].se)) fprintf(fp, " +- %.3g", f->p[i].se);
        fputc('\n', fp);
    }
    if (f->advice[0])
        fprintf(fp, "  %s: %s\n", f->ill ? "ill-conditioned" : "note",
                f->advice);
}

static void fit_summary(FILE *fp, const pp_cal_result *r) {
    if (r->mem.n_points) pp__cal_fit_print(fp, &r->mem);
    if (r->gemm.n_points) pp__cal_fit_print(fp, &r->gemm);
    if (r->beside.n_points) pp__cal_fit_print(fp, &r->beside);
    if (r->beside_nccl.n_points) pp__cal_fit_print(fp, &r->beside_nccl);
    for (size_t i = 0; i < r->n_net; i++) pp__cal_fit_print(fp, &r->net[i].fit);
    for (size_t i = 0; i < r->n_rank; i++)
        pp__cal_fit_print(fp, &r->rank[i].fit);
    if (r->stack.n_points) pp__cal_fit_print(fp, &r->stack);
}

static int parse_only(const char *list, pp_cal_fit_opts *o, pp_error *e) {
    if (!list) return 0;
    o->net = o->gemm = o->mem = o->stack = false;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        if (!strcmp(t, "net"))
            o->net = true;
        else if (!strcmp(t, "gemm"))
            o->gemm = true;
        else if (!strcmp(t, "mem"))
            o->mem = true;
        else if (!strcmp(t, "stack"))
            o->stack = true;
        else
            return pp_error_set(e, PP_EUSAGE,
                                "--only: expected net, gemm, "
                                "mem or stack, got \"%s\"",
                                t);
    }
    return 0;
}

void pp__cal_command_line(int argc, char **argv, char *buf, size_t len) {
    snprintf(buf, len, "podplan calibrate");
    for (int i = 0; i < argc; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, len - l, " %s", argv[i]);
    }
}

int pp__cal_load_base(const pp_args *a, const char *cluster,
                      pp_gpu_profile *prof, pp_cal_network *net, pp_error *e) {
    const pp_gpu_spec *gpu = NULL;
    pp_cluster *c = NULL;
    int rc = 0;
    if (cluster && (rc = pp_cluster_load(cluster, NULL, 0, NULL, &c, e)) < 0)
        return rc;
    if (c) gpu = pp_cluster_info_get(c)->gpu;
    rc = pp_cal_profile_load(pp_args_get(a, "profile"), gpu, prof, net, e);
    pp_cluster_free(c);
    return rc;
}

static int run_fit(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    pp_cal_set s;
    pp_cal_result r;
    pp_cal_fit_opts o;
    pp_gpu_profile base;
    pp_cal_set_init(&s);
    pp_cal_result_init(&r);
    pp_cal_fit_opts_init(&o);
    const char *cluster = NULL;
    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc || pp_args_need(&a, "cluster", &cluster, &e) ||
        parse_only(pp_args_get(&a, "only"), &o, &e) || read_inputs(&a, &s, &e))
        goto fail;
    o.cluster = cluster;
    if (pp_args_get(&a, "profile")) {
        if (pp__cal_load_base(&a, cluster, &base, NULL, &e) < 0) goto fail;
        o.base = &base;
    }
    if (pp_cal_fit_all(&s, &o, &r, &e) < 0) goto fail;
    char cmdline[2048];
    pp__cal_command_line(argc, argv, cmdline, sizeof cmdline);
    pp_cal_provenance pv = {&s, cluster, cmdline, pp_args_flag(&a, "plain")};
    const char *out = pp_args_get(&a, "output");
    pp_outfile of;
    if ((rc = pp_outfile_open(&of, out, &e)) < 0) goto fail;
    if ((rc = pp_cal_profile_write(&r, &pv, of.fp, &e)) < 0) {
        pp_outfile_abort(&of);
        goto fail;
    }
    if ((rc = pp_outfile_commit(&of, &e)) < 0) goto fail;
    fit_summary(out && strcmp(out, "-") ? stdout : stderr, &r);
    pp_cal_result_fini(&r);
    pp_cal_set_fini(&s);
    return 0;
fail:
    pp_cal_result_fini(&r);
    pp_cal_set_fini(&s);
    return pp_cli_fail(cmd->name, &e);
}

static const pp_cli_cmd cmd_fit = {
    "calibrate fit",
    "fit a profile (network, GEMM, memory, stack) to measurements",
    "calibrate fit --cluster C FILE... [--profile P] [--only LIST] [--plain] "
    "[-o profile.yaml]",
    "Network: alpha and beta per link class, scope, collective and algorithm\n"
    "by weighted least squares, with a small-message line below a protocol\n"
    "knee when the data show one.  GEMM: efficiency, k_half and tile\n"
    "efficiencies by nonlinear least squares through sim's GEMM model;\n"
    "GEMMs timed with exec gemm --reserve-sms K beside their run on all\n"
    "SMs give compute_beside_comm (per K, the mean time ratio over the\n"
    "shapes of at least 50 us alone), and GEMMs timed with exec gemm\n"
    "--load-sms K beside their twins alone give compute_beside_nccl (per K,\n"
    "their summed time over the twins', the load flat out or at 1 TB/s and\n"
    "more), both fitted with gemm.\n"
    "Memory: efficiency and launch overhead from membw.  Stack: the\n"
    "framework efficiency from measured iteration times (analytic\n"
    "simulation).  Each parameter comes with its standard error; a fit the\n"
    "data cannot pin down says which measurements to add.  The profile\n"
    "records its inputs (SHA-256) and the date (SOURCE_DATE_EPOCH if set).",
    fit_opts,
    run_fit};

/* ------------------------------------------------------------------------
 * validate
 * ---------------------------------------------------------------------- */
static const pp_cli_opt validate_opts[] = {
    HINT_OPTS,
    {"profile", 0, "P",
     "the profile to check: a fitted one, a YAML path or a name in "
     "topologies/profiles/ (required)",
     false, NULL, 0, NULL},
    {"cluster", 'c', "C", "cluster (its GPU; iterations that name none)", false,
     NULL, 0, NULL},
    {"holdout", 'k', "K",
     "K-fold cross-validation: each point predicted by a fit of the others "
     "(default: off)",
     false, NULL, 0, NULL},
    {"plot", 0, "FILE.svg", "draw measured vs predicted with gnuplot", false,
     NULL, 0, NULL},
    {"format", 0, "FMT", "table|json (default: table)", false, NULL, 0, NULL},
    {"output", 'o', "FILE", "write to FILE atomically (default: stdout)", false,
     NULL, 0, NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

typedef struct vctx {
    const pp_cal_set *s;
    const pp_cal_validation *v;
    int holdout;
} vctx;

static void describe(const pp_cal_point *p, char *buf, size_t len) {
    switch (p->kind) {
    case PP_CAL_COLL:
    case PP_CAL_P2P:
        snprintf(buf, len, "%s %s", p->op, pp_fmtq(p->bytes, PP_Q_BYTES));
        break;
    case PP_CAL_GEMM:
        snprintf(buf, len, "gemm %gx%gx%g", p->m, p->n, p->k);
        break;
    case PP_CAL_MEMBW:
        snprintf(buf, len, "membw %s", pp_fmtq(p->bytes, PP_Q_BYTES));
        break;
    default: snprintf(buf, len, "%s %s", p->model, p->parallel);
    }
}

static void validate_table(FILE *fp, const void *ctx) {
    const vctx *x = ctx;
    char loc[512], what[256];
    fprintf(fp, "%-44s %-34s %12s %12s %8s\n", "point", "what", "measured",
            "predicted", "error");
    for (size_t i = 0; i < x->v->n; i++) {
        const pp_cal_vpoint *p = &x->v->v[i];
        const pp_cal_point *q = &x->s->pts[p->idx];
        pp_cal_point_loc(x->s, q, loc, sizeof loc);
        describe(q, what, sizeof what);
        fprintf(fp, "%-44.44s %-34.34s %12.6g %12.6g %+7.2f%%\n", loc, what,
                p->measured_s, p->predicted_s, 100 * p->error);
    }
    fprintf(fp, "\n%zu points%s: mean |error| %.2f%%, max |error| %.2f%%",
            x->v->n, x->holdout >= 2 ? " (held out)" : "", 100 * x->v->mean_abs,
            100 * x->v->max_abs);
    if (x->v->skipped) fprintf(fp, "; %zu points no fit covers", x->v->skipped);
    fputc('\n', fp);
}

static json_t *validate_json(const vctx *x) {
    json_t *o = json_object(), *arr = json_array();
    char loc[512];
    for (size_t i = 0; i < x->v->n; i++) {
        const pp_cal_vpoint *p = &x->v->v[i];
        const pp_cal_point *q = &x->s->pts[p->idx];
        json_t *j = json_object();
        json_object_set_new(
            j, "source",
            json_string(pp_cal_point_loc(x->s, q, loc, sizeof loc)));
        json_object_set_new(j, "kind", json_string(pp_cal_kind_name(q->kind)));
        json_object_set_new(j, "measured_s", pp_json_num(p->measured_s));
        json_object_set_new(j, "predicted_s", pp_json_num(p->predicted_s));
        json_object_set_new(j, "error", pp_json_num(p->error));
        if (p->fold >= 0) json_object_set_new(j, "fold", json_integer(p->fold));
        json_array_append_new(arr, j);
    }
    json_object_set_new(o, "points", arr);
    json_object_set_new(o, "holdout", json_integer(x->holdout));
    json_object_set_new(o, "mean_abs_error", pp_json_num(x->v->mean_abs));
    json_object_set_new(o, "max_abs_error", pp_json_num(x->v->max_abs));
    json_object_set_new(o, "skipped", json_integer((json_int_t)x->v->skipped));
    return o;
}

static int run_validate(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    pp_cal_set s;
    pp_cal_result r;
    pp_cal_network net = {NULL, 0};
    pp_cal_validation v = {0};
    pp_cal_set_init(&s);
    pp_cal_result_init(&r);
    int64_t k = 0;
    int fmt = PP_FMT_TABLE;
    const char *prof = NULL, *cluster = NULL;
    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc || pp_args_need(&a, "profile", &prof, &e) ||
        pp_args_int(&a, "holdout", 0, 1000, &k, &e) ||
        pp_args_enum(&a, "format", pp_format_names, &fmt, &e) ||
        read_inputs(&a, &s, &e))
        goto fail;
    cluster = pp_args_get(&a, "cluster");
    if (k == 1) {
        pp_error_set(&e, PP_EUSAGE, "--holdout: expected 0 (off) or K >= 2");
        goto fail;
    }
    if (pp__cal_load_base(&a, cluster, &r.profile, &net, &e) < 0) goto fail;
    /* The profile's network entries, as fits the predictor can use. */
    r.net = pp_xcalloc(net.n ? net.n : 1, sizeof *r.net);
    for (size_t i = 0; i < net.n; i++) {
        pp_cal_netfit *f = &r.net[r.n_net++];
        const pp_cal_net_entry *x = &net.v[i];
        snprintf(f->op, sizeof f->op, "%s", x->op);
        snprintf(f->algo, sizeof f->algo, "%s", x->algo);
        snprintf(f->link, sizeof f->link, "%s", x->link);
        f->kind = strstr(x->op, "_bw") || strstr(x->op, "_lat") ? PP_CAL_P2P
                                                                : PP_CAL_COLL;
        f->scope = x->scope;
        f->ranks = x->ranks;
        f->alpha_s = x->alpha_s;
        f->beta_Bps = x->beta_Bps;
        f->knee = x->knee_bytes > 0;
        f->knee_bytes = x->knee_bytes;
        f->alpha_lo_s = x->alpha_lo_s;
        f->beta_lo_Bps = x->beta_lo_Bps;
    }
    pp_cal_fit_opts o;
    pp_cal_fit_opts_init(&o);
    o.cluster = cluster;
    o.base = &r.profile;
    if (pp_cal_validate(&s, &r, (int)k, &o, &v, &e) < 0) goto fail;
    if (pp_args_get(&a, "plot") &&
        pp_cal_plot(&s, &v, pp_args_get(&a, "plot"), &e) < 0)
        goto fail;
    vctx x = {&s, &v, (int)k};
    rc = pp_cli_emit(&a, fmt, fmt == PP_FMT_JSON ? validate_json(&x) : NULL,
                     validate_table, &x);
    pp_cal_validation_fini(&v);
    pp_cal_network_fini(&net);
    pp_cal_result_fini(&r);
    pp_cal_set_fini(&s);
    return rc;
fail:
    pp_cal_validation_fini(&v);
    pp_cal_network_fini(&net);
    pp_cal_result_fini(&r);
    pp_cal_set_fini(&s);
    return pp_cli_fail(cmd->name, &e);
}

static const pp_cli_cmd cmd_validate = {
    "calibrate validate",
    "predictions beside measurements, with hold-out",
    "calibrate validate --profile P FILE... [--cluster C] [--holdout K] "
    "[--plot FILE.svg] [--format table|json] [-o FILE]",
    "For each point: the measured time, the prediction (network: the\n"
    "profile's network: section; GEMM and membw: its GPU part; iterations:\n"
    "the simulator at analytic fidelity), the error pred/meas - 1; then the\n"
    "mean and max |error|.  --holdout K refits on K-1 folds and predicts the\n"
    "K-th, in turn.  --plot needs gnuplot (Debian: gnuplot-nox).",
    validate_opts,
    run_validate};

/* run: cmd_calibrate_run.c. */
extern const pp_cli_cmd pp__cmd_calibrate_run;

/* ------------------------------------------------------------------------
 * The group.
 * ---------------------------------------------------------------------- */
static const pp_cli_cmd *const subs[] = {&cmd_import, &cmd_fit, &cmd_validate,
                                         &pp__cmd_calibrate_run, NULL};

static int run(const pp_cli_cmd *cmd, int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        FILE *fp = argc < 2 ? stderr : stdout;
        fprintf(fp, "usage: podplan %s\n\n", cmd->usage);
        for (int i = 0; subs[i]; i++)
            fprintf(fp, "  %-10s %s\n", subs[i]->name + 10, subs[i]->summary);
        fprintf(fp,
                "\n`podplan calibrate <subcommand> --help` describes one.\n");
        return argc < 2 ? 2 : 0;
    }
    for (int i = 0; subs[i]; i++)
        if (!strcmp(argv[1], subs[i]->name + 10))
            return subs[i]->run(subs[i], argc - 1, argv + 1);
    fprintf(stderr,
            "podplan calibrate: unknown subcommand \"%s\" (import, "
            "fit, validate, run)\n",
            argv[1]);
    return 2;
}

const pp_cli_cmd pp_cmd_calibrate = {
    "calibrate",
    "fit profiles to measurements (nccl-tests, perftest, GEMMs, iterations)",
    "calibrate import|fit|validate|run ...",
    NULL,
    NULL,
    run};
