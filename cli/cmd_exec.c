/*
 * cmd_exec.c: `podplan exec <what>`, real runs on this machine and its
 * peers (exec.h).  One table of subcommands: adding one is one line in
 * `subs` and its pp_cli_cmd (gemm and membw live in cmd_exec_gemm.c).
 *
 * `exec collective` speaks nccl-tests: the same options (-b -e -f -i -n -w
 * -c -d -o -r -m -a -T -J; note -o is the reduction, as there), its other
 * flags taken and ignored (-z -t -g -p -N -y -G -C -S -R -x -D -V -M) so
 * its scripts run, and the same table, so parsers written for
 * all_reduce_perf read it.  The collective itself is --coll (podplan's
 * names); -O is the output file.
 */
#include "cli_int.h"

#include "podplan/exec.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- exec collective ------------------------------------------------------ */

static const pp_cli_opt coll_opts[] = {
    {"coll", 0, "OP", "the collective (default: allreduce)", false,
     &pp_reg_coll_op, 0, NULL},
    {"minbytes", 'b', "SIZE",
     "smallest size, nccl-tests' way: 8, 1K, 128M (binary), or 1KiB, 1MB "
     "(default: 32M)",
     false, NULL, 0, NULL},
    {"maxbytes", 'e', "SIZE", "largest size (default: 32M)", false, NULL, 0,
     NULL},
    {"stepfactor", 'f', "F", "multiply the size by F each step (default: 2)",
     false, NULL, 0, NULL},
    {"stepbytes", 'i', "SIZE", "add SIZE each step instead of multiplying",
     false, NULL, 0, NULL},
    {"iters", 'n', "N", "timed iterations per size (default: 20)", false, NULL,
     0, NULL},
    {"warmup_iters", 'w', "N", "untimed iterations first (default: 5)", false,
     NULL, 0, NULL},
    {"check", 'c', "N",
     "check the results outside the timed loop: 0 no, N > 0 yes (once) "
     "(default: 1)",
     false, NULL, 0, NULL},
    {"agg_iters", 'm', "N",
     "collectives per timed iteration, the time reported per collective "
     "(default: 1)",
     false, NULL, 0, NULL},
    {"average", 'a', "0-3",
     "time over ranks: 0 rank 0's, 1 the mean, 2 the min, 3 the max (default: "
     "1)",
     false, NULL, 0, NULL},
    {"datatype", 'd', "T", "float|bfloat16|half (default: float)", false, NULL,
     0, NULL},
    {"op", 'o', "R", "reduction: sum|max|min (default: sum)", false, NULL, 0,
     NULL},
    {"root", 'r', "R", "broadcast root rank (default: 0)", false, NULL, 0,
     NULL},
    {"algo", 0, "A",
     "ring|rd|auto: rd is allreduce only, recursive doubling up to --rd-max "
     "and Rabenseifner above; auto takes rd up to --rd-max, the ring above "
     "(default: auto)",
     false, NULL, 0, NULL},
    {"rd-max", 0, "BYTES",
     "allreduce: the size where auto leaves rd for the ring, and rd leaves "
     "whole-buffer doubling for Rabenseifner (default: 64K)",
     false, NULL, 0, NULL},
    {"transport", 0, "T", "tcp|verbs (default: tcp)", false, NULL, 0, NULL},
    {"channels", 0, "K",
     "connections per peer; the ring runs one pipeline on each (default: 2)",
     false, NULL, 0, NULL},
    {"slice", 0, "SIZE", "ring pipelining granularity (default: 512KiB)", false,
     NULL, 0, NULL},
    {"np", 0, "N",
     "start N local ranks here (127.0.0.1) instead of joining a launcher's "
     "world",
     false, NULL, 0, NULL},
    {"timeout", 'T', "T",
     "a peer silent this long fails the run, e.g. 5 or 5s (default: 30s)",
     false, NULL, 0, NULL},
    {"device", 0, "D", "cpu|cuda: where the buffers live (default: cpu)", false,
     NULL, 0, NULL},
    {"reduce-on", 0, "D",
     "with --device cuda: cpu|cuda, where the staged slices are reduced "
     "(default: cpu)",
     false, NULL, 0, NULL},
    {"format", 0, "FMT", "table|json (default: table)", false, NULL, 0, NULL},
    {"output", 'O', "FILE",
     "write to FILE atomically (default: stdout); rank 0 only", false, NULL, 0,
     NULL},
    {"output_file", 'J', "FILE",
     "also write the JSON (podplan's schema) to FILE; rank 0 only", false, NULL,
     0, NULL},
    /* nccl-tests' flags with no meaning here: taken, so its scripts run,
     * and ignored (a note on stderr where the value asks for something) */
    {"blocking", 'z', "0|1",
     "ignored: every collective completes before the next starts (-z 1's "
     "behaviour)",
     false, NULL, 0, NULL},
    {"nthreads", 't', "N",
     "ignored: one rank per process (--np or the launcher); a note unless 1",
     false, NULL, 0, NULL},
    {"ngpus", 'g', "N", "ignored: one rank per process; a note unless 1", false,
     NULL, 0, NULL},
    {"parallel_init", 'p', "0|1", "ignored: the ranks always start in parallel",
     false, NULL, 0, NULL},
    {"run_cycles", 'N', "N", "ignored: one cycle; a note unless 1", false, NULL,
     0, NULL},
    {"stream_null", 'y', "0|1", "ignored: no CUDA streams", false, NULL, 0,
     NULL},
    {"cudagraph", 'G', "N", "ignored: no CUDA graphs; a note unless 0", false,
     NULL, 0, NULL},
    {"report_cputime", 'C', "0|1", "ignored: times are host wall-clock already",
     false, NULL, 0, NULL},
    {"report_timestamps", 'S', "0|1",
     "ignored: no timestamp column; a note unless 0", false, NULL, 0, NULL},
    {"local_register", 'R', "0-2",
     "ignored: buffers are registered once anyway", false, NULL, 0, NULL},
    {"cta_policy", 'x', "N", "ignored: NCCL's CTA policy", false, NULL, 0,
     NULL},
    {"device_implementation", 'D', "N",
     "ignored: NCCL's device API; a note unless 0", false, NULL, 0, NULL},
    {"device_cta_count", 'V', "N", "ignored: NCCL's device API", false, NULL, 0,
     NULL},
    {"memory", 'M', "0|1", "ignored: no memory report; a note unless 0", false,
     NULL, 0, NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

static const char *const dt_names[] = {"float", "bfloat16", "half", NULL};
static const char *const red_names[] = {"sum", "max", "min", NULL};
static const char *const algo_names[] = {"ring", "rd", "auto", NULL};
static const char *const dev_names[] = {"cpu", "cuda", NULL};

/* nccl-tests' sizes: digits with an optional K, M, G, T suffix (powers of
 * 1024, as its parsesize()); anything else must carry an explicit unit. */
static int parse_size(const pp_args *a, const char *name, size_t *out,
                      pp_error *e) {
    const char *v = pp_args_get(a, name);
    if (!v) return 0;
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    if (end != v && isdigit((unsigned char)v[0])) {
        int shift = -1;
        if (*end == '\0')
            shift = 0;
        else if (end[1] == '\0') {
            const char *p = strchr("KMGT", toupper((unsigned char)*end));
            if (p) shift = 10 * (int)(p - "KMGT" + 1);
        }
        if (shift >= 0) {
            if (x > (SIZE_MAX >> shift))
                return pp_error_set(e, PP_EUSAGE, "--%s: too large: \"%s\"",
                                    name, v);
            *out = (size_t)(x << shift);
            return 0;
        }
    }
    double d;
    char why[128] = "";
    if (pp_unit_parse(v, PP_Q_BYTES, NULL, &d, why, sizeof why) != 0 || d < 0)
        return pp_error_set(e, PP_EUSAGE,
                            "--%s: expected a size such as 1K, "
                            "128M, 1MiB or 1MB, got \"%s\"",
                            name, v);
    *out = (size_t)d;
    return 0;
}

typedef struct coll_ctx {
    const pp_args *a;
    pp_exec_coll_opts o;
    int fmt;
    const char *json_file; /* -J */
    char notes[1024];      /* about ignored flags, printed by rank 0 */
} coll_ctx;

/* nccl-tests' flags accepted and ignored: each must be an integer; a value
 * that asks for what podplan does not do earns a note (not an error, so
 * the same script runs both). */
static const struct {
    const char *name;
    int quiet; /* the value that needs no note; -1: never noted */
    const char *why;
} ignored[] = {
    {"blocking", -1, ""},
    {"nthreads", 1, "one rank per process: use --np or the launcher"},
    {"ngpus", 1, "one rank per process: use --np or the launcher"},
    {"parallel_init", -1, ""},
    {"run_cycles", 1, "one cycle is run"},
    {"stream_null", -1, ""},
    {"cudagraph", 0, "no CUDA graphs here"},
    {"report_cputime", -1, ""},
    {"report_timestamps", 0, "no timestamp column"},
    {"local_register", -1, ""},
    {"cta_policy", -1, ""},
    {"device_implementation", 0, "NCCL's device API is not used"},
    {"device_cta_count", -1, ""},
    {"memory", 0, "no memory report"},
};

static int take_ignored(const pp_args *a, char *notes, size_t len,
                        pp_error *e) {
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
        int64_t v = ignored[i].quiet;
        int rc = pp_args_int(a, ignored[i].name, INT32_MIN, INT32_MAX, &v, e);
        if (rc) return rc;
        if (!pp_args_get(a, ignored[i].name) || ignored[i].quiet < 0 ||
            v == ignored[i].quiet)
            continue;
        size_t used = strlen(notes);
        snprintf(notes + used, len - used,
                 "podplan exec collective: note: "
                 "--%s %lld ignored (%s)\n",
                 ignored[i].name, (long long)v, ignored[i].why);
    }
    return 0;
}

static void fmt_time(char *buf, size_t len, double us) {
    if (us >= 10000.0)
        snprintf(buf, len, "%7.0f", us);
    else if (us >= 100.0)
        snprintf(buf, len, "%7.1f", us);
    else
        snprintf(buf, len, "%7.2f", us);
}

static void coll_table(FILE *fp, const void *vctx) {
    const pp_exec_coll_result *r = vctx;
    const pp_exec_coll_opts *o = &r->opts;
    fprintf(fp, "# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: ",
            o->min_bytes, o->max_bytes);
    if (o->step_bytes)
        fprintf(fp, "%zu(bytes)", o->step_bytes);
    else
        fprintf(fp, "%g(factor)", o->step_factor);
    fprintf(fp,
            " warmup iters: %d iters: %d agg iters: %d validation: %d "
            "graph: 0\n#\n",
            o->warmup, o->iters, o->agg_iters, o->check ? 1 : 0);
    char algo[96];
    if (o->op != PP_COLL_ALLREDUCE || o->algo == PP_ALGO_RING)
        snprintf(algo, sizeof algo, "%s",
                 o->algo < 0 ? "auto" : pp_coll_algo_name(o->algo));
    else /* say where the size switches happen */
        snprintf(algo, sizeof algo, "%s (%s up to %zu B, %s above)",
                 o->algo < 0 ? "auto" : "rd", "recursive doubling",
                 o->rd_max_bytes, o->algo < 0 ? "ring" : "rabenseifner");
    fprintf(fp,
            "# podplan %s exec collective: %s, algo %s, transport %s, "
            "%d channel%s, %d rank%s on %d host%s (%s)\n",
            PODPLAN_VERSION, pp_coll_op_name(o->op), algo, o->transport,
            o->channels, o->channels == 1 ? "" : "s", r->nranks,
            r->nranks == 1 ? "" : "s", r->nhosts, r->nhosts == 1 ? "" : "s",
            r->launcher);
    fprintf(fp, "#\n# Using devices\n");
    for (int k = 0; k < r->nranks; k++)
        fprintf(fp,
                "#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x00] %s\n",
                k, r->rank_pid[k], r->rank_host[k],
                r->rank_dev ? r->rank_dev[k] : -1,
                !o->on_device         ? "cpu (host memory)"
                : o->reduce_on_device ? "cuda (staged, reduced on the GPU)"
                                      : "cuda (staged, reduced on the CPU)");
    fprintf(fp, "#\n");
    fprintf(fp,
            "# %10s  %12s  %8s  %6s  %6s           out-of-place                "
            "       in-place          \n",
            "", "", "", "", "");
    fprintf(fp,
            "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s "
            "%6s\n",
            "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
            "#wrong", "time", "algbw", "busbw", "#wrong");
    fprintf(fp,
            "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s "
            " %5s\n",
            "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "",
            "(us)", "(GB/s)", "(GB/s)", "");
    bool reduces = o->op == PP_COLL_ALLREDUCE || o->op == PP_COLL_REDUCESCATTER;
    for (size_t i = 0; i < r->n_rows; i++) {
        const pp_exec_coll_row *w = &r->rows[i];
        fprintf(fp, "%12zu  %12zu  %8s  %6s  %6d", w->bytes, w->count,
                pp_exec_dtype_name(o->dtype),
                reduces ? pp_exec_redop_name(o->redop) : "none", w->root);
        for (int s = 0; s < 2; s++) {
            const pp_exec_coll_side *d = &w->side[s];
            char t[32], wr[32];
            fmt_time(t, sizeof t, d->time_s * 1e6);
            if (d->wrong < 0)
                snprintf(wr, sizeof wr, "N/A");
            else
                snprintf(wr, sizeof wr, "%lld", (long long)d->wrong);
            fprintf(fp, "  %7s  %6.2f  %6.2f  %5s", t, d->algbw_Bps / 1e9,
                    d->busbw_Bps / 1e9, wr);
        }
        fprintf(fp, "\n");
    }
    long long bad = r->wrong_total < 0 ? 0 : (long long)r->wrong_total;
    fprintf(fp, "# Out of bounds values : %lld %s\n", bad,
            bad ? "FAILED" : "OK");
    fprintf(fp, "# Avg bus bandwidth    : %g \n#\n", r->avg_busbw_Bps / 1e9);
}

static json_t *side_json(const pp_exec_coll_side *d, int iters) {
    json_t *o = json_object(), *sl = json_array();
    json_object_set_new(o, "time_s", pp_json_num(d->time_s));
    json_object_set_new(o, "algbw_GBps", pp_json_num(d->algbw_Bps / 1e9));
    json_object_set_new(o, "busbw_GBps", pp_json_num(d->busbw_Bps / 1e9));
    json_object_set_new(o, "wrong",
                        d->wrong < 0 ? json_null() : json_integer(d->wrong));
    json_object_set_new(o, "median_s", pp_json_num(d->median_s));
    json_object_set_new(o, "p99_s", pp_json_num(d->p99_s));
    json_object_set_new(o, "cv", pp_json_num(d->cv));
    for (int i = 0; i < iters; i++)
        json_array_append_new(sl, json_integer(d->slowest ? d->slowest[i] : 0));
    json_object_set_new(o, "slowest_rank", sl);
    return o;
}

static json_t *coll_json(const pp_exec_coll_result *r) {
    const pp_exec_coll_opts *o = &r->opts;
    json_t *j = json_object(), *setup = json_object(), *rows = json_array();
    json_t *hosts = json_array();
    json_object_set_new(setup, "podplan_version", json_string(PODPLAN_VERSION));
    json_object_set_new(setup, "op", json_string(pp_coll_op_name(o->op)));
    json_object_set_new(
        setup, "algo",
        json_string(o->algo < 0 ? "auto" : pp_coll_algo_name(o->algo)));
    json_object_set_new(setup, "rd_max_bytes",
                        json_integer((json_int_t)o->rd_max_bytes));
    json_object_set_new(setup, "transport", json_string(o->transport));
    json_object_set_new(setup, "channels", json_integer(o->channels));
    json_object_set_new(setup, "ranks", json_integer(r->nranks));
    json_object_set_new(setup, "hosts", json_integer(r->nhosts));
    for (int k = 0; k < r->nranks; k++)
        json_array_append_new(hosts, json_string(r->rank_host[k]));
    json_object_set_new(setup, "rank_hosts", hosts);
    json_object_set_new(setup, "launcher", json_string(r->launcher));
    json_object_set_new(setup, "bootstrap", json_string(r->bootstrap));
    json_object_set_new(setup, "dtype",
                        json_string(pp_exec_dtype_name(o->dtype)));
    json_object_set_new(setup, "redop",
                        json_string(pp_exec_redop_name(o->redop)));
    json_object_set_new(setup, "device",
                        json_string(o->on_device ? "cuda" : "cpu"));
    json_object_set_new(setup, "reduce_on",
                        json_string(o->reduce_on_device ? "cuda" : "cpu"));
    json_object_set_new(setup, "iters", json_integer(o->iters));
    json_object_set_new(setup, "warmup_iters", json_integer(o->warmup));
    json_object_set_new(setup, "agg_iters", json_integer(o->agg_iters));
    static const char *const avg[] = {"rank0", "mean", "min", "max"};
    json_object_set_new(setup, "average", json_string(avg[o->average & 3]));
    json_object_set_new(setup, "timeout_s", pp_json_num(o->timeout_s));
    json_object_set_new(j, "setup", setup);
    for (size_t i = 0; i < r->n_rows; i++) {
        const pp_exec_coll_row *w = &r->rows[i];
        json_t *x = json_object();
        json_object_set_new(x, "size_bytes",
                            json_integer((json_int_t)w->bytes));
        json_object_set_new(x, "count", json_integer((json_int_t)w->count));
        json_object_set_new(x, "root", json_integer(w->root));
        json_object_set_new(x, "algo", json_string(pp_coll_algo_name(w->algo)));
        /* which rd ran: "rd" (whole buffer) or "rabenseifner" */
        json_object_set_new(x, "impl", json_string(w->impl ? w->impl : "?"));
        json_object_set_new(x, "out_of_place",
                            side_json(&w->side[0], o->iters));
        json_object_set_new(x, "in_place", side_json(&w->side[1], o->iters));
        json_array_append_new(rows, x);
    }
    json_object_set_new(j, "results", rows);
    json_object_set_new(j, "wrong_total",
                        r->wrong_total < 0 ? json_null()
                                           : json_integer(r->wrong_total));
    json_object_set_new(j, "avg_busbw_GBps",
                        pp_json_num(r->avg_busbw_Bps / 1e9));
    return j;
}

/* One rank's life: run, and on rank 0 print. */
static int coll_rank(const pp_exec_world *w, void *vctx) {
    coll_ctx *x = vctx;
    pp_error e = PP_ERROR_INIT;
    pp_exec_coll_result *r = NULL;
    if (w->rank == 0 && x->notes[0]) fputs(x->notes, stderr);
    int rc = pp_exec_coll_run(w, &x->o, &r, &e);
    int code = 0;
    if (r) { /* rank 0, also when the check failed: show the table */
        code = pp_cli_emit(x->a, x->fmt,
                           x->fmt == PP_FMT_JSON ? coll_json(r) : NULL,
                           coll_table, r);
        if (x->json_file && !code) {
            pp_outfile of;
            pp_error je = PP_ERROR_INIT; /* e may hold the run's error */
            json_t *j = coll_json(r);
            if ((code = pp_outfile_open(&of, x->json_file, &je)) == 0) {
                if ((code = pp_json_write(of.fp, j, &je)))
                    pp_outfile_abort(&of);
                else
                    code = pp_outfile_commit(&of, &je);
            }
            json_decref(j);
            if (code) code = pp_cli_fail("exec collective", &je);
        }
        pp_exec_coll_result_free(r);
    }
    if (rc) {
        fprintf(stderr, "podplan exec collective: %s\n",
                e.msg[0] ? e.msg : pp_strerror(rc));
        return pp_exit_code(rc);
    }
    return code;
}

static int run_collective(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_args a;
    pp_error e = PP_ERROR_INIT;
    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc) return pp_cli_fail("exec collective", &e);
    coll_ctx x = {.a = &a, .fmt = PP_FMT_TABLE};
    pp_exec_coll_opts *o = &x.o;
    pp_exec_coll_opts_init(o);
    int dt = 0, red = 0, algo = 2, dev = 0, op = 0, red_on = 0;
    int64_t iters = o->iters, warm = o->warmup, check = 1, root = 0,
            ch = o->channels;
    int64_t agg = o->agg_iters, average = o->average;
    int64_t np = 0;
    const char *v;
    double step_f = o->step_factor, timeout = o->timeout_s;
    if (a.n_positional) {
        pp_error_set(&e, PP_EUSAGE,
                     "unexpected argument \"%s\" (the "
                     "collective is --coll)",
                     a.positional[0]);
        return pp_cli_fail("exec collective", &e);
    }
    if ((v = pp_args_get(&a, "coll")) &&
        (rc = pp_registry_parse(&pp_reg_coll_op, "--coll", v, &op, &e)))
        return pp_cli_fail("exec collective", &e);
    o->op = (pp_coll_op)op;
    char why[128];
    if ((rc = parse_size(&a, "minbytes", &o->min_bytes, &e)) ||
        (rc = parse_size(&a, "maxbytes", &o->max_bytes, &e)) ||
        (rc = parse_size(&a, "stepbytes", &o->step_bytes, &e)) ||
        (rc = parse_size(&a, "slice", &o->slice_bytes, &e)) ||
        (rc = parse_size(&a, "rd-max", &o->rd_max_bytes, &e)) ||
        (rc = pp_args_int(&a, "iters", 1, 1000000, &iters, &e)) ||
        (rc = pp_args_int(&a, "warmup_iters", 0, 1000000, &warm, &e)) ||
        (rc = pp_args_int(&a, "check", 0, 1000000, &check, &e)) ||
        (rc = pp_args_int(&a, "agg_iters", 1, 1000000, &agg, &e)) ||
        (rc = pp_args_int(&a, "average", 0, 3, &average, &e)) ||
        (rc = take_ignored(&a, x.notes, sizeof x.notes, &e)) ||
        (rc = pp_args_int(&a, "root", 0, 1 << 20, &root, &e)) ||
        (rc = pp_args_int(&a, "channels", 1, 64, &ch, &e)) ||
        (rc = pp_args_int(&a, "np", 1, 1024, &np, &e)) ||
        (rc = pp_args_enum(&a, "datatype", dt_names, &dt, &e)) ||
        (rc = pp_args_enum(&a, "op", red_names, &red, &e)) ||
        (rc = pp_args_enum(&a, "algo", algo_names, &algo, &e)) ||
        (rc = pp_args_enum(&a, "device", dev_names, &dev, &e)) ||
        (rc = pp_args_enum(&a, "reduce-on", dev_names, &red_on, &e)) ||
        (rc = pp_args_enum(&a, "format", pp_format_names, &x.fmt, &e)))
        return pp_cli_fail("exec collective", &e);
    if (red_on == 1 && dev != 1) {
        pp_error_set(&e, PP_EUSAGE,
                     "--reduce-on cuda: the buffers are in host memory "
                     "(add --device cuda)");
        return pp_cli_fail("exec collective", &e);
    }
    if (!pp_args_get(&a, "maxbytes") && pp_args_get(&a, "minbytes") &&
        o->min_bytes > o->max_bytes)
        o->max_bytes = o->min_bytes;
    if ((v = pp_args_get(&a, "stepfactor"))) {
        char *end;
        step_f = strtod(v, &end);
        if (*end || !(step_f > 1)) {
            pp_error_set(&e, PP_EUSAGE,
                         "--stepfactor: expected a number above "
                         "1, got \"%s\"",
                         v);
            return pp_cli_fail("exec collective", &e);
        }
    }
    if ((v = pp_args_get(&a, "timeout")) &&
        (pp_unit_parse(v, PP_Q_TIME, "s", &timeout, why, sizeof why) != 0 ||
         !(timeout > 0))) {
        pp_error_set(&e, PP_EUSAGE,
                     "--timeout: expected a time such as 5s, "
                     "got \"%s\"",
                     v);
        return pp_cli_fail("exec collective", &e);
    }
    if (o->min_bytes > o->max_bytes) {
        pp_error_set(&e, PP_EUSAGE, "--minbytes %zu is above --maxbytes %zu",
                     o->min_bytes, o->max_bytes);
        return pp_cli_fail("exec collective", &e);
    }
    o->step_factor = step_f;
    o->iters = (int)iters;
    o->warmup = (int)warm;
    o->check = check != 0;
    o->agg_iters = (int)agg;
    o->average = (int)average;
    x.json_file = pp_args_get(&a, "output_file");
    o->root = (int)root;
    o->channels = (int)ch;
    o->dtype = (pp_exec_dtype)dt;
    o->redop = (pp_exec_redop)red;
    o->algo = algo == 0 ? PP_ALGO_RING : algo == 1 ? PP_ALGO_RD : -1;
    o->on_device = dev == 1;
    o->reduce_on_device = red_on == 1;
    o->timeout_s = timeout;
    if ((v = pp_args_get(&a, "transport"))) o->transport = v;
    if (np > 0)
        /* The ranks notice a lost peer within the timeout; the launcher
         * waits a little longer before it kills what is left. */
        return pp_exec_spawn_local((int)np, coll_rank, &x, timeout + 2.0, &e);
    pp_exec_world w;
    if ((rc = pp_exec_world_from_env(&w, &e)))
        return pp_cli_fail("exec collective", &e);
    return coll_rank(&w, &x);
}

static const pp_cli_cmd cmd_collective = {
    "exec collective",
    "run a collective between real processes over TCP (or verbs), nccl-tests "
    "style",
    "exec collective [--coll OP] [-b MIN] [-e MAX] [-f F] [-d T] [-o R] [--np "
    "N | under torchrun/srun/mpirun]",
    "Ranks: --np N starts N local ranks; otherwise the launcher's\n"
    "environment says who is who: torchrun (RANK, WORLD_SIZE, LOCAL_RANK),\n"
    "srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID) or mpirun\n"
    "(OMPI_COMM_WORLD_*), with MASTER_ADDR and MASTER_PORT naming rank 0's\n"
    "rendezvous (an MPI build under mpirun uses MPI_Allgather instead).\n"
    "nccl-tests' flags: all of all_reduce_perf's options are taken (-b8 or\n"
    "-b 8, --minbytes=8); those marked \"ignored\" have no meaning here.\n"
    "Output: nccl-tests' table; only rank 0 prints.  Exit status: 0 ok,\n"
    "1 a peer died or stalled or a value was wrong, 2 bad usage.",
    coll_opts,
    run_collective,
};

/* ---- the dispatcher --------------------------------------------------------- */

/* cmd gives the name, summary and help; run, where set, parses and runs
 * the part itself (cmd_exec_gemm.c), else cmd->run does. */
static const struct {
    const char *name;
    const pp_cli_cmd *cmd;
    int (*run)(int argc, char **argv);
} subs[] = {
    {"collective", &cmd_collective, NULL},
    {"gemm", &pp__cmd_exec_gemm, pp_cli_exec_gemm},
    {"membw", &pp__cmd_exec_membw, pp_cli_exec_membw},
};
#define N_SUBS (sizeof subs / sizeof subs[0])

static int run_exec(const pp_cli_cmd *cmd, int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        FILE *fp = argc < 2 ? stderr : stdout;
        fprintf(fp, "usage: podplan exec <what> [options]\n\n%s\n\n",
                cmd->summary);
        for (size_t i = 0; i < N_SUBS; i++)
            fprintf(fp, "  %-12s %s\n", subs[i].name, subs[i].cmd->summary);
        fprintf(fp, "\n`podplan exec <what> --help` describes one.\n");
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < N_SUBS; i++)
        if (strcmp(argv[1], subs[i].name) == 0)
            return subs[i].run
                       ? subs[i].run(argc - 1, argv + 1)
                       : subs[i].cmd->run(subs[i].cmd, argc - 1, argv + 1);
    const char *names[N_SUBS + 1];
    for (size_t i = 0; i < N_SUBS; i++) names[i] = subs[i].name;
    names[N_SUBS] = NULL;
    const char *best = pp_closest(argv[1], names);
    fprintf(stderr,
            "podplan exec: unknown subcommand \"%s\"%s%s%s; see "
            "`podplan exec --help`\n",
            argv[1], best ? " (did you mean \"" : "", best ? best : "",
            best ? "\"?)" : "");
    return 2;
}

static const pp_cli_opt no_opts[] = {
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL}};

const pp_cli_cmd pp_cmd_exec = {
    "exec",
    "real runs on this machine and its peers (see `podplan exec --help`)",
    "exec collective|gemm|membw ...",
    NULL,
    no_opts,
    run_exec,
};
