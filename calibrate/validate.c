/*
 * validate.c: the model beside the measurements.  Each point is predicted
 * by the simulator's collective path with the fitted network (network),
 * by the profile (GEMM, membw) or by the step simulation (iterations); with --holdout k the points are dealt into
 * k folds and each fold is predicted by a fit of the other k-1, so the
 * error is on points the fit never saw.
 */
#include "cal_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

/* A network point through the simulator's own path (sim/coll/coll_fit.c,
 * what a collective run with this profile takes): the fits that cover the
 * point, as the profile's network: section holds them, chosen and timed
 * by pp_coll_fit_find / pp_coll_fit_time_s. */
static int predict_net(const pp_cal_result *r, const pp_cal_point *p,
                       double *pred) {
    pp_net_fit *v = pp_xcalloc(r->n_net ? r->n_net : 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < r->n_net; i++) {
        const pp_cal_netfit *f = &r->net[i];
        /* The points a fit covers, as before the simulator's path: same
         * kind, link, algorithm and group size (or any size).  Other
         * group sizes are the rank model's to predict (--hold-ranks),
         * not an extrapolation of one count's entry. */
        if (f->kind != p->kind || strcmp(f->link, p->link) ||
            strcmp(f->algo, p->algo) || (f->ranks != p->ranks && f->ranks) ||
            !(f->beta_Bps > 0))
            continue;
        pp_net_fit *x = &v[n++];
        snprintf(x->op, sizeof x->op, "%.*s", (int)sizeof x->op - 1, f->op);
        snprintf(x->algo, sizeof x->algo, "%.*s", (int)sizeof x->algo - 1,
                 f->algo);
        snprintf(x->link, sizeof x->link, "%.*s", (int)sizeof x->link - 1,
                 f->link);
        x->scope = (pp_net_scope)f->scope;
        x->ranks = f->ranks;
        x->alpha_s = f->alpha_s;
        x->beta_Bps = f->beta_Bps;
        if (f->knee) {
            x->knee_bytes = f->knee_bytes;
            x->alpha_lo_s = f->alpha_lo_s;
            x->beta_lo_Bps = f->beta_lo_Bps;
        }
    }
    const pp_net_fit *f = pp_coll_fit_find(v, n, p->op, p->algo,
                                           (pp_net_scope)p->scope, p->ranks);
    double t = f ? pp_coll_fit_time_s(f, p->ranks, p->bytes) : NAN;
    free(v);
    if (!(t > 0)) return 1;
    *pred = t;
    return 0;
}

static int predict(const pp_cal_set *s, const pp_cal_result *r,
                   const char *cluster, size_t i, double *pred, double *meas,
                   pp_error *e) {
    const pp_cal_point *p = &s->pts[i];
    *meas = p->time_s;
    switch (p->kind) {
    case PP_CAL_COLL:
    case PP_CAL_P2P: return predict_net(r, p, pred);
    case PP_CAL_GEMM:
        if (!pp__cal_gpu_point(p)) return 1;
        *pred = pp__cal_gemm_pred(&r->profile, p);
        return 0;
    case PP_CAL_MEMBW:
        if (!pp__cal_gpu_point(p)) return 1;
        *pred = pp__cal_mem_pred(&r->profile, p);
        return 0;
    case PP_CAL_ITER:
        return pp_cal_iter_predict(p, cluster, &r->profile, pred, meas, e);
    default: return 1;
    }
}

static void add(pp_cal_validation *v, size_t i, double meas, double pred,
                int fold) {
    pp_cal_vpoint *x = &v->v[v->n++];
    x->idx = i;
    x->measured_s = meas;
    x->predicted_s = pred;
    x->error = pred / meas - 1;
    x->fold = fold;
    double a = fabs(x->error);
    v->mean_abs += a;
    if (a > v->max_abs) v->max_abs = a;
}

int pp_cal_validate(const pp_cal_set *s, const pp_cal_result *r, int holdout,
                    const pp_cal_fit_opts *o, pp_cal_validation *out,
                    pp_error *e) {
    pp_cal_gsl_init();
    pp_cal_validation v;
    memset(&v, 0, sizeof v);
    v.v = pp_xcalloc(s->n ? s->n : 1, sizeof *v.v);
    int rc = 0;
    const char *cluster = o ? o->cluster : NULL;
    if (holdout < 2) {
        for (size_t i = 0; i < s->n; i++) {
            double pred = 0, meas = 0;
            rc = predict(s, r, cluster, i, &pred, &meas, e);
            if (rc < 0) goto fail;
            if (rc > 0) {
                v.skipped++;
                rc = 0;
                continue;
            }
            add(&v, i, meas, pred, -1);
        }
    } else {
        /* Folds: each kind shuffled (seed 1) and dealt round-robin, so
         * every fold holds some of every kind. */
        int *fold = pp_xmalloc((s->n ? s->n : 1) * sizeof *fold);
        size_t *ix = pp_xmalloc((s->n ? s->n : 1) * sizeof *ix);
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(rng, 1);
        for (int k = 0; k < PP_CAL__KINDS; k++) {
            size_t m = 0;
            for (size_t i = 0; i < s->n; i++)
                if ((int)s->pts[i].kind == k) ix[m++] = i;
            if (m > 1) gsl_ran_shuffle(rng, ix, m, sizeof *ix);
            for (size_t j = 0; j < m; j++)
                fold[ix[j]] = (int)(j % (size_t)holdout);
        }
        gsl_rng_free(rng);
        free(ix);
        bool *use = pp_xmalloc((s->n ? s->n : 1) * sizeof *use);
        for (int f = 0; f < holdout && rc == 0; f++) {
            for (size_t i = 0; i < s->n; i++) use[i] = fold[i] != f;
            pp_cal_fit_opts fo;
            if (o)
                fo = *o;
            else
                pp_cal_fit_opts_init(&fo);
            if (!fo.base) fo.base = &r->profile;
            fo.use = use;
            pp_cal_result rf;
            pp_cal_result_init(&rf);
            rc = pp_cal_fit_all(s, &fo, &rf, e);
            for (size_t i = 0; rc == 0 && i < s->n; i++) {
                if (fold[i] != f) continue;
                double pred = 0, meas = 0;
                int k = predict(s, &rf, cluster, i, &pred, &meas, e);
                if (k < 0)
                    rc = k;
                else if (k > 0)
                    v.skipped++;
                else
                    add(&v, i, meas, pred, f);
            }
            pp_cal_result_fini(&rf);
        }
        free(use);
        free(fold);
        if (rc < 0) goto fail;
    }
    if (v.n) v.mean_abs /= (double)v.n;
    *out = v;
    return 0;
fail:
    free(v.v);
    return rc;
}

void pp_cal_validation_fini(pp_cal_validation *v) {
    if (!v) return;
    free(v->v);
    memset(v, 0, sizeof *v);
}

/* ------------------------------------------------------------------------
 * gnuplot, through pp_gnuplot_svg: measured against predicted on log
 * axes, one series per kind, the diagonal for reference.
 * ---------------------------------------------------------------------- */
typedef struct plot_ctx {
    char (*dat)[32];
    const bool *has;
} plot_ctx;

static void plot_script(FILE *fp, const char *tmp_svg, void *ctx) {
    const plot_ctx *p = ctx;
    fprintf(fp,
            "set terminal svg size 800,600 dynamic; set output '%s';"
            "set logscale xy; set xlabel 'measured (s)';"
            "set ylabel 'predicted (s)'; set key top left;"
            "set title 'podplan calibrate validate';"
            "plot x title 'predicted = measured' with lines",
            tmp_svg);
    for (int k = 0; k < PP_CAL__KINDS; k++)
        if (p->has[k])
            fprintf(fp, ", '%s' title '%s' with points", p->dat[k],
                    pp_cal_kind_name((pp_cal_kind)k));
    fputc('\n', fp);
}

int pp_cal_plot(const pp_cal_set *s, const pp_cal_validation *v,
                const char *svg_path, pp_error *e) {
    /* One data file per kind (gnuplot's "index" over empty blocks is
     * fragile). */
    char dat[PP_CAL__KINDS][32];
    bool has[PP_CAL__KINDS] = {0};
    memset(dat, 0, sizeof dat);
    int rc = 0;
    for (int k = 0; k < PP_CAL__KINDS; k++) {
        dat[k][0] = '\0';
        FILE *fp = NULL;
        for (size_t i = 0; i < v->n; i++) {
            const pp_cal_point *p = &s->pts[v->v[i].idx];
            if ((int)p->kind != k) continue;
            if (!fp) {
                snprintf(dat[k], sizeof dat[k], "/tmp/podplan-plot-XXXXXX");
                int fd = mkstemp(dat[k]);
                fp = fd >= 0 ? fdopen(fd, "w") : NULL;
                if (!fp) {
                    if (fd >= 0) close(fd);
                    rc = pp_error_set(e, PP_EIO, "--plot: temporary file: %s",
                                      strerror(errno));
                    goto out;
                }
                has[k] = true;
            }
            fprintf(fp, "%.9g %.9g\n", v->v[i].measured_s, v->v[i].predicted_s);
        }
        if (fp) fclose(fp);
    }
    plot_ctx pc = {dat, has};
    rc = pp_gnuplot_svg(svg_path, "", plot_script, &pc, e);
out:
    for (int k = 0; k < PP_CAL__KINDS; k++)
        if (dat[k][0]) unlink(dat[k]);
    return rc;
}
