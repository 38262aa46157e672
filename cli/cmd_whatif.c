/*
 * cmd_whatif.c: `podplan whatif --study FILE`, procurement studies
 * (whatif.h does the work): every variant planned or simulated, priced and
 * put through the failure model; a table, CSV or JSON, and optionally a
 * gnuplot SVG and a self-contained HTML report.  Under mpirun or srun the
 * variants are spread over the ranks and rank 0 writes.
 */
#include "cli_int.h"

#include "podplan/whatif.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const pp_cli_opt opts[] = {
    {"study", 's', "FILE",
     "study: YAML file or a name in studies/, e.g. nic-count (required)", false,
     NULL, 0, NULL},
    {"format", 0, "FMT", "table|csv|json (default: table)", false, NULL, 0,
     NULL},
    {"output", 'o', "FILE", "write to FILE atomically (default: stdout)", false,
     NULL, 0, NULL},
    {"plot", 0, "FILE.svg",
     "also draw cost against time with the Pareto front (runs gnuplot)", false,
     NULL, 0, NULL},
    {"report", 0, "FILE.html",
     "also write one self-contained HTML page: inputs, table, charts", false,
     NULL, 0, NULL},
    {"quiet", 'q', NULL,
     "no progress bar (there is none unless stderr is a "
     "terminal)",
     false, NULL, 0, NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

static void progress(size_t done, size_t n, const char *label) {
    int w = 30, f = n ? (int)(w * done / n) : w;
    fprintf(stderr, "\r[%.*s%*s] %zu/%zu %-40.40s", f,
            "##############################", w - f, "", done, n, label);
    if (done == n) fputc('\n', stderr);
    fflush(stderr);
}

/* --plot: the study's gnuplot script, drawn by pp_gnuplot_svg. */
typedef struct plot_ctx {
    const pp_whatif_study *s;
    const pp_whatif_result *r;
    size_t n;
} plot_ctx;

static void plot_script(FILE *fp, const char *tmp_svg, void *ctx) {
    const plot_ctx *p = ctx;
    pp_whatif_write_gnuplot(p->s, p->r, p->n, tmp_svg, fp, NULL);
}

static int write_all(const pp_args *a, const pp_whatif_study *s,
                     const pp_whatif_result *r, size_t n, int fmt,
                     pp_error *e) {
    pp_outfile of;
    int rc = pp_outfile_open(&of, pp_args_get(a, "output"), e);
    if (rc < 0) return rc;
    if ((rc = pp_whatif_write(s, r, n, (pp_wi_format)fmt, of.fp, e)) < 0) {
        pp_outfile_abort(&of);
        return rc;
    }
    if ((rc = pp_outfile_commit(&of, e)) < 0) return rc;
    const char *html = pp_args_get(a, "report");
    if (html) {
        if ((rc = pp_outfile_open(&of, html, e)) < 0) return rc;
        if ((rc = pp_whatif_write_html(s, r, n, of.fp, e)) < 0) {
            pp_outfile_abort(&of);
            return rc;
        }
        if ((rc = pp_outfile_commit(&of, e)) < 0) return rc;
    }
    const char *svg = pp_args_get(a, "plot");
    plot_ctx pc = {s, r, n};
    if (svg && (rc = pp_gnuplot_svg(svg,
                                    "; the table and --report do not "
                                    "need it",
                                    plot_script, &pc, e)) < 0)
        return rc;
    return 0;
}

static int run(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    pp_whatif_study *s = NULL;
    pp_whatif_result *r = NULL;
    const char *path;
    int fmt = PP_WI_FMT_TABLE, rank = 0, size = 1;
    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc || pp_args_need(&a, "study", &path, &e) ||
        pp_args_enum(&a, "format", pp_whatif_format_names, &fmt, &e))
        return pp_cli_fail(cmd->name, &e);
    if ((rc = pp_whatif_dist_init(&argc, &argv, &rank, &size)) < 0) {
        pp_error_set(&e, rc, "MPI_Init failed");
        return pp_cli_fail(cmd->name, &e);
    }
    /* A path, else a study shipped in studies/ by name ("nic-count"). */
    char found[4096];
    if (access(path, R_OK) != 0) {
        if ((rc = pp_data_find("studies", path, found, sizeof found, &e)) < 0)
            goto out;
        path = found;
    }
    if ((rc = pp_whatif_study_load(path, &s, &e)) < 0) goto out;
    size_t n = pp_whatif_variant_count(s);
    r = pp_xcalloc(n, sizeof *r);
    bool bar = !pp_args_flag(&a, "quiet") && isatty(2) && rank == 0;
    if (size > 1 && rank == 0 && !pp_args_flag(&a, "quiet"))
        pp_cli_note(&a, "%zu variants spread over %d MPI ranks", n, size);
    for (size_t i = (size_t)rank; i < n; i += (size_t)size) {
        if ((rc = pp_whatif_run(s, i, &r[i], &e)) < 0) {
            r[i].status = -1; /* dist.c finds the failing variant by it */
            break;
        }
        if (bar) progress(i + 1, n, r[i].label);
    }
    /* Rank 0's last variant may not be the study's last. */
    if (bar && rc == 0 && n > 0 && (n - 1) % (size_t)size != 0)
        progress(n, n, "");
    pp_whatif_dist_gather(r, n, rank, size, &rc, &e);
    if (rc < 0) goto out;
    if (rank == 0) {
        pp_whatif_finish(s, r, n);
        rc = write_all(&a, s, r, n, fmt, &e);
    }
out:
    free(r);
    pp_whatif_study_free(s);
    pp_whatif_dist_fini();
    if (rc < 0)
        return rank == 0 ? pp_cli_fail(cmd->name, &e) : pp_exit_code(rc);
    return 0;
}

const pp_cli_cmd pp_cmd_whatif = {
    "whatif",
    "procurement studies: sweep hardware, price it, time-to-train with "
    "failures, Pareto front",
    "whatif --study FILE [--format table|csv|json] [-o FILE] [--plot "
    "FILE.svg] [--report FILE.html] [--quiet]",
    "A study (studies/README.md) names a model, a cluster, a token budget\n"
    "and a batch, and what to vary: cluster fields by the dotted paths of\n"
    "--set (vary: a cartesian product; zip: lists that change together;\n"
    "bundles: named hardware, e.g. GPU + server + NIC + price).  Each\n"
    "variant is planned (the planner's best layout) or simulated at a fixed\n"
    "layout, priced from the built fabric (servers, GPUs, HCAs, switches by\n"
    "level, cables; power x PUE x $/kWh; amortised or rented), and its\n"
    "expected time to train is computed with failures (Llama 3's rates by\n"
    "component, checkpoints at Daly's optimum interval, restarts, spare\n"
    "nodes).  The Pareto front over (expected days, cost per model) is\n"
    "marked.  Under `mpirun -np K podplan whatif ...` (or srun) the\n"
    "variants are spread over the ranks; the output is the same bytes.",
    opts,
    run,
};
