/*
 * cmd_calibrate_run.c: `podplan calibrate run`, the whole loop on this
 * machine: exec sweeps -> import -> fit -> validate -> profile + report.
 *
 * The sweeps run as subprocesses of this same binary (/proc/self/exe
 * exec gemm|membw|collective --format json -o FILE), not through the exec
 * library in-process, because:
 *   - the JSON they write is the file a cluster user gets from `srun
 *     podplan exec collective`, so one importer and one schema serve both
 *     (and the loop tests that path end to end), and the files are kept
 *     (--keep) and named with their SHA-256 in the profile's provenance;
 *   - `exec collective --np N` forks ranks, puts them in a process group,
 *     and kills the group when one fails; a CUDA context, a BLAS thread
 *     pool and a crashed rank stay in a process that ends, not in the one
 *     that fits and writes the profile;
 *   - --launch "srun -N2 -n{n}" runs the same command under a cluster's
 *     launcher instead of --np, with no other change.
 */
#include "cmd_calibrate_int.h"

#include "podplan/calibrate.h"
#include "podplan/exec.h"

#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_RANKS 16
#define MAX_FILES (MAX_RANKS + 4)

static const pp_cli_opt run_opts[] = {
    {"cluster", 'c', "C",
     "the cluster this machine belongs to: its GPU's shipped profile is the "
     "base (default: dgx-h100-ndr)",
     false, NULL, 0, NULL},
    {"profile", 0, "P", "base profile instead of the cluster GPU's", false,
     NULL, 0, NULL},
    {"ranks", 0, "LIST",
     "rank counts of the collective sweeps (default: 2,3,4)", false, NULL, 0,
     NULL},
    {"hold-ranks", 0, "N",
     "rank count held out of the rank-model fit and predicted (default: the "
     "largest of --ranks; 0: none)",
     false, NULL, 0, NULL},
    {"minbytes", 'b', "SIZE", "smallest collective size (default: 4KiB)", false,
     NULL, 0, NULL},
    {"maxbytes", 'e', "SIZE", "largest collective size (default: 16MiB)", false,
     NULL, 0, NULL},
    {"stepfactor", 'f', "F", "size multiplier (default: 4)", false, NULL, 0,
     NULL},
    {"iters", 'n', "N", "timed iterations per collective size (default: 20)",
     false, NULL, 0, NULL},
    {"backend", 0, "B",
     "GEMM back-end: cuda|cpu (default: cuda when a GPU is usable, else cpu)",
     false, NULL, 0, NULL},
    {"launch", 0, "CMD",
     "run each collective under this launcher instead of --np; {n} is the rank "
     "count (\"srun -N2 -n{n}\")",
     false, NULL, 0, NULL},
    {"holdout", 'k', "K",
     "K-fold cross-validation of the fits (default: 5; 0: off)", false, NULL, 0,
     NULL},
    {"keep", 0, "DIR",
     "keep the exec outputs in DIR (default: a temporary folder, removed)",
     false, NULL, 0, NULL},
    {"report", 0, "FILE",
     "also write the report to FILE (JSON when FILE ends in .json, else text)",
     false, NULL, 0, NULL},
    {"output", 'o', "FILE", "the fitted profile (required)", false, NULL, 0,
     NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

/* Runs `podplan ARGS... --format json --output FILE` (prefixed by the
 * launcher's words when pre is not NULL).  Returns 0, or PP_EFAIL naming
 * the command and its exit status. */
static int run_exec(char **pre, char **args, const char *out, pp_error *e) {
    char *argv[64];
    size_t n = 0;
    for (size_t i = 0; pre && pre[i] && n < 40; i++) argv[n++] = pre[i];
    argv[n++] = "/proc/self/exe";
    if (pre) { /* the launcher cannot see our /proc/self: the real path */
        static char self[4096];
        ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
        if (l > 0) self[l] = '\0', argv[n - 1] = self;
    }
    for (size_t i = 0; args[i] && n < 58; i++) argv[n++] = args[i];
    argv[n++] = "--format";
    argv[n++] = "json";
    argv[n++] = "--output";
    argv[n++] = (char *)out;
    argv[n] = NULL;
    char cmd[1024] = "";
    for (size_t i = pre ? 0 : 1; i < n; i++) {
        size_t l = strlen(cmd);
        snprintf(cmd + l, sizeof cmd - l, "%s%s", l ? " " : "podplan ",
                 argv[i]);
    }
    fprintf(stderr, "calibrate run: %s\n", cmd);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
    if (rc)
        return pp_error_set(e, PP_EFAIL, "%s: cannot start: %s", cmd,
                            strerror(rc));
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return pp_error_set(e, PP_EFAIL, "%s: wait: %s", cmd,
                                strerror(errno));
    if (!WIFEXITED(st) || WEXITSTATUS(st))
        return pp_error_set(e, PP_EFAIL, "%s: %s %d", cmd,
                            WIFEXITED(st) ? "exit status" : "killed by signal",
                            WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return 0;
}

typedef struct run_state {
    pp_cal_set s;
    pp_cal_result r;
    pp_cal_validation kfold, loro;
    int holdout;
    int64_t held;
    int64_t ranks[MAX_RANKS];
    size_t n_ranks;
    double seconds;
    bool kfold_done, loro_done;
} run_state;

/* The rank-count lists ("2,3,4"). */
static int parse_ranks(const char *t, int64_t *v, size_t *n, pp_error *e) {
    *n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", t);
    for (char *p = strtok(buf, ","); p; p = strtok(NULL, ",")) {
        char *end;
        long x = strtol(p, &end, 10);
        if (*end || x < 2 || x > 64 || *n >= MAX_RANKS)
            return pp_error_set(e, PP_EUSAGE,
                                "--ranks: expected up to %d "
                                "rank counts from 2 to 64, got \"%s\"",
                                MAX_RANKS, p);
        v[(*n)++] = x;
    }
    return *n ? 0 : pp_error_set(e, PP_EUSAGE, "--ranks: expected a list");
}

static void measured_only(FILE *fp, const pp_cal_set *s) {
    for (size_t i = 0; i < s->n; i++) {
        const pp_cal_point *p = &s->pts[i];
        if (p->kind == PP_CAL_GEMM && strcmp(p->device, "cuda"))
            fprintf(fp,
                    "  gemm %s %s %gx%gx%g: %.3g GFLOP/s (measured; a "
                    "GPU profile is not fitted to a CPU)\n",
                    p->device, p->dtype, p->m, p->n, p->k,
                    2 * p->batch * p->m * p->n * p->k / p->time_s / 1e9);
        if (p->kind == PP_CAL_MEMBW && strcmp(p->device, "cuda"))
            fprintf(fp,
                    "  membw host %s %s: %.3g GB/s (measured; not "
                    "fitted)\n",
                    p->op, pp_fmtq(p->bytes, PP_Q_BYTES),
                    p->bytes / p->time_s / 1e9);
    }
}

static void report_text(FILE *fp, const void *ctx) {
    const run_state *x = ctx;
    fprintf(fp, "calibrate run: %zu points from %zu exec runs in %.1f s\n",
            x->s.n, x->s.n_src, x->seconds);
    measured_only(fp, &x->s);
    fprintf(fp, "\nfits:\n");
    if (x->r.mem.n_points) pp__cal_fit_print(fp, &x->r.mem);
    if (x->r.gemm.n_points) pp__cal_fit_print(fp, &x->r.gemm);
    for (size_t i = 0; i < x->r.n_net; i++)
        pp__cal_fit_print(fp, &x->r.net[i].fit);
    fprintf(fp, "\nrank models (t = steps(n) alpha + bw(n) S / beta, all "
                "counts at once):\n");
    for (size_t i = 0; i < x->r.n_rank; i++) {
        const pp_cal_rankfit *f = &x->r.rank[i];
        fprintf(fp,
                "  %s/%s ranks %lld..%lld: alpha %.4g us +- %.2g, beta "
                "%.4g GB/s +- %.2g, R2 %.4f, rms error %.1f%%, %zu points\n",
                f->op, f->algo, (long long)f->ranks_min,
                (long long)f->ranks_max, f->alpha_s * 1e6, f->alpha_se * 1e6,
                f->beta_Bps / 1e9, f->beta_se / 1e9, f->fit.r2,
                100 * f->fit.rel_rms, f->fit.n_points);
    }
    fprintf(fp, "\nheld out:\n");
    if (x->kfold_done)
        fprintf(fp,
                "  sizes (%d-fold, every point predicted by a fit of the "
                "others): %zu points, mean |error| %.1f%%, max %.1f%%\n",
                x->holdout, x->kfold.n, 100 * x->kfold.mean_abs,
                100 * x->kfold.max_abs);
    if (x->loro_done) {
        fprintf(fp,
                "  rank count %lld (rank model fitted on the other "
                "counts): %zu points, mean |error| %.1f%%, max %.1f%%\n",
                (long long)x->held, x->loro.n, 100 * x->loro.mean_abs,
                100 * x->loro.max_abs);
    }
}

static json_t *vjson(const pp_cal_validation *v) {
    json_t *o = json_object();
    json_object_set_new(o, "points", json_integer((json_int_t)v->n));
    json_object_set_new(o, "skipped", json_integer((json_int_t)v->skipped));
    json_object_set_new(o, "mean_abs_error", pp_json_num(v->mean_abs));
    json_object_set_new(o, "max_abs_error", pp_json_num(v->max_abs));
    return o;
}

static json_t *fjson(const pp_cal_fit *f) {
    json_t *o = json_object(), *p = json_object();
    json_object_set_new(o, "what", json_string(f->what));
    json_object_set_new(o, "points", json_integer((json_int_t)f->n_points));
    json_object_set_new(o, "r2", pp_json_num(f->r2));
    json_object_set_new(o, "rel_rms", pp_json_num(f->rel_rms));
    for (size_t i = 0; i < f->n_params; i++) {
        json_t *q = json_object();
        json_object_set_new(q, "value", pp_json_num(f->p[i].value));
        json_object_set_new(q, "se", pp_json_num(f->p[i].se));
        json_object_set_new(p, f->p[i].name, q);
    }
    json_object_set_new(o, "params", p);
    if (f->advice[0]) json_object_set_new(o, "advice", json_string(f->advice));
    return o;
}

static json_t *report_json(const run_state *x) {
    json_t *o = json_object(), *fits = json_array(), *rank = json_array();
    json_object_set_new(o, "points", json_integer((json_int_t)x->s.n));
    json_object_set_new(o, "seconds", pp_json_num(x->seconds));
    if (x->r.mem.n_points) json_array_append_new(fits, fjson(&x->r.mem));
    if (x->r.gemm.n_points) json_array_append_new(fits, fjson(&x->r.gemm));
    for (size_t i = 0; i < x->r.n_net; i++)
        json_array_append_new(fits, fjson(&x->r.net[i].fit));
    for (size_t i = 0; i < x->r.n_rank; i++)
        json_array_append_new(rank, fjson(&x->r.rank[i].fit));
    json_object_set_new(o, "fits", fits);
    json_object_set_new(o, "rank_models", rank);
    if (x->kfold_done) {
        json_t *k = vjson(&x->kfold);
        json_object_set_new(k, "folds", json_integer(x->holdout));
        json_object_set_new(o, "holdout_sizes", k);
    }
    if (x->loro_done) {
        json_t *k = vjson(&x->loro);
        json_object_set_new(k, "ranks", json_integer(x->held));
        json_object_set_new(o, "holdout_ranks", k);
    }
    return o;
}

static int write_report(const char *path, const run_state *x, pp_error *e) {
    bool js = pp_cli_json_path(path);
    pp_outfile of;
    int rc = pp_outfile_open(&of, path, e);
    if (rc < 0) return rc;
    if (js) {
        json_t *j = report_json(x);
        rc = pp_json_write(of.fp, j, e);
        json_decref(j);
    } else {
        report_text(of.fp, x);
    }
    if (rc < 0) {
        pp_outfile_abort(&of);
        return rc;
    }
    return pp_outfile_commit(&of, e);
}

/* Imports an exec output under its base name when the folder is a
 * temporary one (so the profile's provenance names no /tmp path). */
static int import_file(run_state *x, const char *path, bool keep, pp_error *e) {
    if (keep) return pp_cal_import(&x->s, path, NULL, e);
    FILE *fp = fopen(path, "rb");
    if (!fp) return pp_error_set(e, PP_EIO, "%s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (len + 65536 > cap) buf = pp_xrealloc(buf, cap = 2 * cap + 65536);
        got = fread(buf + len, 1, cap - len - 1, fp);
        len += got;
    } while (got > 0);
    fclose(fp);
    buf[len] = '\0';
    const char *base = strrchr(path, '/');
    int rc =
        pp_cal_import_text(&x->s, base ? base + 1 : path, buf, len, NULL, e);
    free(buf);
    return rc;
}

/* The sweeps; each output is imported as soon as it is written. */
static int sweeps(const pp_args *a, run_state *x, const char *dir,
                  pp_error *e) {
    char file[4200], nbuf[16];
    const char *b = pp_args_get(a, "minbytes"),
               *en = pp_args_get(a, "maxbytes"),
               *f = pp_args_get(a, "stepfactor"), *it = pp_args_get(a, "iters"),
               *be = pp_args_get(a, "backend"),
               *launch = pp_args_get(a, "launch");
    bool cuda = be ? !strcmp(be, "cuda") : pp_exec_cuda_usable(NULL, 0);
    int rc;
    /* GEMM: a few shapes, small on a CPU (seconds), the sizes that reach
     * a GPU's plateau on cuda. */
    char *gemm[] = {"exec",      "gemm",
                    "--backend", cuda ? "cuda" : "cpu",
                    "--square",  cuda ? "1024,2048,4096,8192" : "128,256,512",
                    "--iters",   cuda ? "50" : "5",
                    "--warmup",  "2",
                    NULL};
    char *membw[] = {
        "exec",     "membw",
        "--device", cuda ? "cuda" : "host",
        "--kernel", "copy,triad",
        "--sizes",  cuda ? "64MiB,256MiB,1GiB" : "4MiB,16MiB,64MiB",
        "--iters",  "5",
        NULL};
    struct {
        const char *name;
        char **args;
    } fixed[] = {{"exec-gemm.json", gemm}, {"exec-membw.json", membw}};
    for (int i = 0; i < 2; i++) {
        snprintf(file, sizeof file, "%s/%s", dir, fixed[i].name);
        if ((rc = run_exec(NULL, fixed[i].args, file, e)) < 0 ||
            (rc = import_file(x, file, pp_args_get(a, "keep"), e)) < 0)
            return rc;
    }
    for (size_t k = 0; k < x->n_ranks; k++) {
        char *args[32], *pre[24] = {NULL}, lbuf[512];
        size_t n = 0;
        snprintf(nbuf, sizeof nbuf, "%lld", (long long)x->ranks[k]);
        args[n++] = "exec";
        args[n++] = "collective";
        if (launch) {
            /* The launcher's words, {n} replaced by the count. */
            const char *at = strstr(launch, "{n}");
            if (at)
                snprintf(lbuf, sizeof lbuf, "%.*s%s%s", (int)(at - launch),
                         launch, nbuf, at + 3);
            else
                snprintf(lbuf, sizeof lbuf, "%s", launch);
            size_t np = 0;
            for (char *t = strtok(lbuf, " "); t && np < 23;
                 t = strtok(NULL, " "))
                pre[np++] = t;
        } else {
            args[n++] = "--np";
            args[n++] = nbuf;
        }
        args[n++] = "--transport";
        args[n++] = "tcp";
        args[n++] = "-b";
        args[n++] = (char *)(b ? b : "4KiB");
        args[n++] = "-e";
        args[n++] = (char *)(en ? en : "16MiB");
        args[n++] = "-f";
        args[n++] = (char *)(f ? f : "4");
        args[n++] = "-n";
        args[n++] = (char *)(it ? it : "20");
        args[n++] = "-w";
        args[n++] = "2";
        args[n] = NULL;
        snprintf(file, sizeof file, "%s/exec-collective-%sranks.json", dir,
                 nbuf);
        if ((rc = run_exec(launch ? pre : NULL, args, file, e)) < 0 ||
            (rc = import_file(x, file, pp_args_get(a, "keep"), e)) < 0)
            return rc;
    }
    return 0;
}

static void rmdir_all(const char *dir) {
    char path[4200];
    static const char *const names[] = {"exec-gemm.json", "exec-membw.json"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    for (int n = 2; n <= 64; n++) {
        snprintf(path, sizeof path, "%s/exec-collective-%dranks.json", dir, n);
        unlink(path);
    }
    rmdir(dir);
}

static int run_run(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    run_state x;
    memset(&x, 0, sizeof x);
    pp_cal_set_init(&x.s);
    pp_cal_result_init(&x.r);
    char tmpdir[] = "/tmp/podplan-calibrate-XXXXXX";
    const char *dir = NULL, *out = NULL;
    int64_t k = 5, held = -1;
    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc || pp_args_need(&a, "output", &out, &e) ||
        pp_args_int(&a, "holdout", 0, 100, &k, &e) ||
        pp_args_int(&a, "hold-ranks", 0, 64, &held, &e) ||
        parse_ranks(pp_args_get(&a, "ranks") ? pp_args_get(&a, "ranks")
                                             : "2,3,4",
                    x.ranks, &x.n_ranks, &e))
        goto fail;
    if (k == 1) {
        pp_error_set(&e, PP_EUSAGE, "--holdout: expected 0 (off) or K >= 2");
        goto fail;
    }
    x.holdout = (int)k;
    if (held < 0)
        for (size_t i = 0; i < x.n_ranks; i++)
            if (x.ranks[i] > held) held = x.ranks[i];
    if (x.n_ranks < 2) held = 0; /* nothing left to fit on */
    x.held = held;
    const char *cluster = pp_args_get(&a, "cluster");
    if (!cluster && !pp_args_get(&a, "profile")) {
        cluster = "dgx-h100-ndr";
        pp_cli_note(&a, "no --cluster; the GPU part "
                        "starts from dgx-h100-ndr's h100 profile (fitted only "
                        "from cuda runs)");
    }
    if ((dir = pp_args_get(&a, "keep"))) {
        if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
            pp_error_set(&e, PP_EIO, "--keep %s: %s", dir, strerror(errno));
            goto fail;
        }
    } else if (!(dir = mkdtemp(tmpdir))) {
        pp_error_set(&e, PP_EIO, "temporary folder: %s", strerror(errno));
        goto fail;
    }
    double t0 = pp_exec_now();
    rc = sweeps(&a, &x, dir, &e);
    x.seconds = pp_exec_now() - t0;
    if (rc < 0) goto fail_run;

    pp_cal_fit_opts o;
    pp_cal_fit_opts_init(&o);
    o.cluster = cluster;
    pp_gpu_profile base;
    if (pp_args_get(&a, "profile")) {
        if ((rc = pp__cal_load_base(&a, cluster, &base, NULL, &e)) < 0)
            goto fail_run;
        o.base = &base;
    }
    o.stack = false;
    if (pp_cal_fit_all(&x.s, &o, &x.r, &e) < 0) goto fail_run;
    if (x.holdout >= 2) {
        pp_cal_fit_opts vo = o;
        vo.base = &x.r.profile;
        if (pp_cal_validate(&x.s, &x.r, x.holdout, &vo, &x.kfold, &e) < 0)
            goto fail_run;
        x.kfold_done = true;
    }
    if (x.held > 0) {
        if (pp_cal_validate_ranks(&x.s, NULL, x.held, &x.loro, &e) < 0)
            goto fail_run;
        x.loro_done = true;
    }
    char cmdline[2048];
    pp__cal_command_line(argc, argv, cmdline, sizeof cmdline);
    pp_cal_provenance pv = {&x.s, cluster, cmdline, false};
    pp_outfile of;
    if ((rc = pp_outfile_open(&of, out, &e)) < 0) goto fail_run;
    if ((rc = pp_cal_profile_write(&x.r, &pv, of.fp, &e)) < 0) {
        pp_outfile_abort(&of);
        goto fail_run;
    }
    if ((rc = pp_outfile_commit(&of, &e)) < 0) goto fail_run;
    const char *rep = pp_args_get(&a, "report");
    if (rep && write_report(rep, &x, &e) < 0) goto fail_run;
    report_text(strcmp(out, "-") ? stdout : stderr, &x);
    rc = 0;
    goto done;
fail_run:
    rc = pp_cli_fail(cmd->name, &e);
    if (rc == 2 && e.code != PP_EUSAGE) rc = 1;
done:
    if (!pp_args_get(&a, "keep")) rmdir_all(dir);
    pp_cal_validation_fini(&x.kfold);
    pp_cal_validation_fini(&x.loro);
    pp_cal_result_fini(&x.r);
    pp_cal_set_fini(&x.s);
    return rc;
fail:
    pp_cal_result_fini(&x.r);
    pp_cal_set_fini(&x.s);
    return pp_cli_fail(cmd->name, &e);
}

const pp_cli_cmd pp__cmd_calibrate_run = {
    "calibrate run",
    "exec sweeps on this machine, import, fit, validate",
    "calibrate run -o profile.yaml [--cluster C] [--ranks 2,3,4] "
    "[-b 4KiB -e 16MiB -f 4] [--backend cuda|cpu] [--launch CMD] "
    "[--holdout K] [--report FILE] [--keep DIR]",
    "Runs, as subprocesses of this binary: exec gemm (a few square shapes),\n"
    "exec membw (copy, triad), exec collective over TCP at each --ranks\n"
    "count (local ranks, or under --launch); imports their JSON, fits\n"
    "(network per rank count, the rank model across counts, and on a GPU\n"
    "the GEMM and memory parameters), validates by K-fold hold-out and by\n"
    "leaving one rank count out (fit on the others, predict it), writes the\n"
    "profile (-o) and prints the report.  CPU GEMMs and host memory are\n"
    "measured and reported but not fitted into the GPU profile.  The\n"
    "default run takes under a minute on a 2-core machine.",
    run_opts,
    run_run};
