/*
 * fit_gemm.c: the GPU part of the profile from micro-benchmarks.
 *
 * Memory: a streaming kernel takes launch + bytes / (hbm_bw x eff): a
 * line in bytes, so weighted least squares gives launch_overhead and
 * memory.efficiency.
 *
 * GEMM: sim's own model (pp_gemm_time_s, documented in topologies/
 * profiles/a100.yaml) is fitted by nonlinear least squares
 * (gsl_multifit_nlinear, Levenberg-Marquardt with a finite-difference
 * Jacobian: the model is a max over tiles, piecewise smooth).  Fitted:
 * gemm.efficiency, gemm.k_half, and one relative efficiency per tile
 * area (the tiles of one area reload the same operands per FLOP: the
 * shipped profiles give them one value, 128x128 = 256x64 = 64x256), for
 * the areas below the reference (efficiency 1) whose tiles win on at
 * least two measured shapes.  A tile of its own area that no shape
 * selects cannot be seen in the data: it is kept, and named in the
 * advice.  (One parameter per tile would not do: of two tiles that tie,
 * the first always wins, and the other's column of the Jacobian is 0.)  The framework efficiency is held at 1 here: a
 * micro-benchmark is not a training loop.
 */
#include "cal_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>

#define REL_ASSUMED 0.02

double pp__cal_gemm_pred(const pp_gpu_profile *g, const pp_cal_point *p) {
    pp_gpu_profile x = *g;
    double b = p->batch > 0 ? p->batch : 1;
    /* A kernel timed alone: neither the training loop's efficiency nor
     * the share of its rate a GPU holds at its power cap through a
     * training step (profile sustained, b200.yaml), which the profile
     * keeps beside the burst rates fitted here. */
    x.framework_efficiency = 1;
    x.sustained = 0;
    if (p->streams > 0)
        return pp_gemm_grouped_time_s(&x, PP_GEMM_OPS_16, b, p->m, p->n, p->k);
    /* Aimed at fewer SMs: the GEMM's time slowed as compute beside
     * communication that holds them is; beside a copy load on K SMs, as
     * compute beside a NCCL kernel on K is. */
    return pp_gemm_time_s(&x, b, p->m, p->n, p->k) *
           pp_profile_beside_comm(&x, (double)p->sms_reserved) *
           pp_profile_beside_nccl(&x, (double)p->load_sms);
}

double pp__cal_mem_pred(const pp_gpu_profile *g, const pp_cal_point *p) {
    pp_gpu_profile x = *g;
    x.framework_efficiency = 1;
    return pp_memop_time_s(&x, p->bytes);
}

/* The profile models a GPU's 16-bit GEMMs and its HBM: a CPU BLAS, host
 * memory, or an fp8/tf32/fp32 GEMM (other peaks) would bend its figures,
 * so those points are measured but not fitted. */
bool pp__cal_gpu_point(const pp_cal_point *p) {
    if (p->kind != PP_CAL_GEMM && p->kind != PP_CAL_MEMBW) return false;
    if (p->device[0] && strcmp(p->device, "cuda")) return false;
    return p->kind == PP_CAL_MEMBW || !p->dtype[0] ||
           !strcmp(p->dtype, "bf16") || !strcmp(p->dtype, "fp16");
}

static size_t collect(const pp_cal_set *s, const bool *use, pp_cal_kind k,
                      size_t **idx, size_t *skipped) {
    size_t n = 0;
    *skipped = 0;
    *idx = pp_xmalloc((s->n ? s->n : 1) * sizeof **idx);
    for (size_t i = 0; i < s->n; i++) {
        if (s->pts[i].kind != k || (use && !use[i])) continue;
        /* A grouped GEMM is predicted (validate) but not fitted: the
         * profile's efficiency is one call's; the grouped price adds
         * launches to it, and TE's streams run below a batch's rate.  A
         * GEMM aimed at fewer SMs measures compute_beside_comm, one
         * beside a load compute_beside_nccl (fit_beside.c), not the GEMM
         * figures. */
        if (pp__cal_gpu_point(&s->pts[i]) && !s->pts[i].streams &&
            !s->pts[i].sms_reserved && !s->pts[i].load_sms)
            (*idx)[n++] = i;
        else
            ++*skipped;
    }
    return n;
}

static void note_skipped(pp_cal_fit *f, size_t skipped) {
    size_t l = strlen(f->advice);
    if (!skipped) return;
    snprintf(f->advice + l, sizeof f->advice - l,
             "%s%zu points not fitted "
             "(CPU/host memory, not a 16-bit GEMM: the profile models "
             "the GPU's bf16/fp16; a grouped GEMM, validated only; or one "
             "aimed at fewer SMs or beside a load, which "
             "compute_beside_comm and compute_beside_nccl take)",
             l ? "; " : "", skipped);
}

static void finish_stats(const pp_cal_set *s, pp_cal_fit *f,
                         const pp_gpu_profile *g,
                         double (*pred)(const pp_gpu_profile *,
                                        const pp_cal_point *)) {
    double rr = 0;
    for (size_t i = 0; i < f->n_points; i++) {
        const pp_cal_point *p = &s->pts[f->idx[i]];
        f->resid[i] = pred(g, p) / p->time_s - 1;
        rr += f->resid[i] * f->resid[i];
    }
    f->rel_rms = f->n_points ? sqrt(rr / (double)f->n_points) : NAN;
}

/* ------------------------------------------------------------------------
 * Memory.
 * ---------------------------------------------------------------------- */
static int fit_mem(const pp_cal_set *s, const bool *use, pp_gpu_profile *g,
                   pp_cal_fit *f, pp_error *e) {
    memset(f, 0, sizeof *f);
    snprintf(f->what, sizeof f->what, "memory (membw)");
    size_t *idx, skipped, n = collect(s, use, PP_CAL_MEMBW, &idx, &skipped);
    f->idx = idx;
    f->n_points = n;
    f->resid = pp_xcalloc(n ? n : 1, sizeof *f->resid);
    f->r2 = NAN;
    if (n < 3) {
        f->ill = true;
        snprintf(f->advice, sizeof f->advice,
                 "%zu membw points: measure at "
                 "least 3 sizes from 64 KiB to 1 GiB",
                 n);
        return 0;
    }
    double *X = pp_xmalloc(2 * n * sizeof *X), *y = pp_xmalloc(n * sizeof *y),
           *w = pp_xmalloc(n * sizeof *w), *var = pp_xmalloc(n * sizeof *var);
    bool assumed;
    pp__cal_variances(s, idx, n, REL_ASSUMED, var, &assumed);
    for (size_t i = 0; i < n; i++) {
        X[2 * i] = 1;
        X[2 * i + 1] = s->pts[idx[i]].bytes;
        y[i] = s->pts[idx[i]].time_s;
        w[i] = 1 / var[i];
    }
    double c[2], cov[4], chi2;
    int rc = pp__cal_wls(n, 2, X, y, w, c, cov, &chi2, e);
    free(X);
    free(y);
    free(w);
    free(var);
    if (rc < 0) return rc;
    double sc = assumed && n > 2 ? chi2 / (double)(n - 2) : 1;
    double eff = 1 / (c[1] * g->hbm_Bps);
    double eff_se = sqrt(cov[3] * sc) / (c[1] * c[1] * g->hbm_Bps);
    double launch = c[0], launch_se = sqrt(cov[0] * sc);
    pp__cal_set_param(f, "memory.efficiency", eff, eff_se);
    pp__cal_set_param(f, "launch_overhead_s", launch, launch_se);
    f->chi2_dof = chi2 / (double)(n - 2);
    if (!(eff > 0 && eff <= 1.2)) {
        f->ill = true;
        snprintf(f->advice, sizeof f->advice,
                 "memory efficiency %.3g is not "
                 "physical: add large transfers (>= 256 MiB)",
                 eff);
        return 0;
    }
    g->mem_efficiency = eff > 1 ? 1 : eff;
    if (launch > 0 && launch_se < launch)
        g->launch_s = launch;
    else
        snprintf(f->advice, sizeof f->advice,
                 "launch overhead not determined "
                 "(%.3g +- %.2g s): add small transfers (<= 64 KiB); kept "
                 "%.3g s",
                 launch, launch_se, g->launch_s);
    finish_stats(s, f, g, pp__cal_mem_pred);
    return 0;
}

/* ------------------------------------------------------------------------
 * GEMM.
 * ---------------------------------------------------------------------- */
typedef struct gctx {
    const pp_cal_set *s;
    const size_t *idx;
    const double *sd;
    size_t n;
    pp_gpu_profile g;
    double area[PP_PROFILE_TILES]; /* fitted tile areas (m x n) */
    size_t n_tiles;
} gctx;

static void apply(gctx *c, const gsl_vector *x, pp_gpu_profile *g) {
    *g = c->g;
    double eff = gsl_vector_get(x, 0), kh = gsl_vector_get(x, 1);
    g->gemm_efficiency = eff < 1e-3 ? 1e-3 : eff;
    g->gemm_k_half = kh < 0 ? 0 : kh;
    for (size_t j = 0; j < c->n_tiles; j++) {
        double t = gsl_vector_get(x, 2 + j);
        for (size_t i = 0; i < g->n_tiles; i++)
            if ((double)g->tiles[i].m * g->tiles[i].n == c->area[j])
                g->tiles[i].efficiency = t < 1e-3 ? 1e-3 : t > 1 ? 1 : t;
    }
}

static int resid_fn(const gsl_vector *x, void *data, gsl_vector *f) {
    gctx *c = data;
    pp_gpu_profile g;
    apply(c, x, &g);
    for (size_t i = 0; i < c->n; i++) {
        const pp_cal_point *p = &c->s->pts[c->idx[i]];
        gsl_vector_set(f, i, (pp__cal_gemm_pred(&g, p) - p->time_s) / c->sd[i]);
    }
    return GSL_SUCCESS;
}

/* The tile pp_gemm_efficiency picks for a shape (same rule as sim). */
static int best_tile(const pp_gpu_profile *g, const pp_cal_point *p) {
    double best = 0, sms = g->sms > 0 ? g->sms : 1,
           b = p->batch > 0 ? p->batch : 1;
    int bi = -1;
    for (size_t i = 0; i < g->n_tiles; i++) {
        double tm = g->tiles[i].m, tn = g->tiles[i].n;
        double cm = ceil(p->m / tm), cn = ceil(p->n / tn);
        double tiles = b * cm * cn, waves = ceil(tiles / sms);
        double x = g->tiles[i].efficiency * tiles / (waves * sms) *
                   (p->m * p->n) / (cm * tm * cn * tn);
        if (x > best) {
            best = x;
            bi = (int)i;
        }
    }
    return bi;
}

static int fit_gemm(const pp_cal_set *s, const bool *use, pp_gpu_profile *g,
                    pp_cal_fit *f, pp_error *e) {
    pp_cal_gsl_init();
    memset(f, 0, sizeof *f);
    snprintf(f->what, sizeof f->what, "gemm");
    size_t *idx, skipped, n = collect(s, use, PP_CAL_GEMM, &idx, &skipped);
    /* A GEMM that takes under 4 launch overheads measures the launch and
     * the timer (an H100 runs 1024^3 in ~11 us, 256^3 in ~11.5 us), not
     * the efficiency: the additive launch term cannot model that a back-
     * to-back launch hides under the previous kernel, and those points
     * would drag k_half negative.  They are left out, and said so. */
    size_t tiny = 0, m = 0;
    for (size_t i = 0; i < n; i++)
        if (s->pts[idx[i]].time_s < 4 * g->launch_s)
            tiny++;
        else
            idx[m++] = idx[i];
    n = m;
    f->idx = idx;
    f->n_points = n;
    f->resid = pp_xcalloc(n ? n : 1, sizeof *f->resid);
    f->r2 = NAN;
    gctx c;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.idx = idx;
    c.n = n;
    c.g = *g;
    /* Tile areas to fit: below the reference (efficiency 1), chosen by
     * at least two shapes. */
    char unseen[256] = "";
    int first[PP_PROFILE_TILES];
    size_t n_areas = 0;
    double areas[PP_PROFILE_TILES];
    for (size_t t = 0; t < g->n_tiles; t++) {
        double a = (double)g->tiles[t].m * g->tiles[t].n;
        bool ref = false, have = false;
        for (size_t u = 0; u < g->n_tiles; u++)
            if ((double)g->tiles[u].m * g->tiles[u].n == a &&
                g->tiles[u].efficiency >= 1)
                ref = true;
        for (size_t j = 0; j < n_areas; j++) have |= areas[j] == a;
        if (ref || have) continue;
        first[n_areas] = (int)t;
        areas[n_areas++] = a;
    }
    for (size_t j = 0; j < n_areas; j++) {
        size_t wins = 0;
        for (size_t i = 0; i < n; i++) {
            int b = best_tile(g, &s->pts[idx[i]]);
            if (b >= 0 && (double)g->tiles[b].m * g->tiles[b].n == areas[j])
                wins++;
        }
        if (wins >= 2 && 2 + c.n_tiles < PP_CAL_MAX_PARAMS)
            c.area[c.n_tiles++] = areas[j];
        else {
            size_t l = strlen(unseen);
            snprintf(unseen + l, sizeof unseen - l, "%s%dx%d", l ? ", " : "",
                     g->tiles[first[j]].m, g->tiles[first[j]].n);
        }
    }
    size_t np = 2 + c.n_tiles;
    if (n < np + 2) {
        f->ill = true;
        snprintf(f->advice, sizeof f->advice,
                 "%zu GEMM shapes for %zu "
                 "parameters: measure at least %zu, square (m=n=k from 512 "
                 "to 8192) and with small k (k <= 256)",
                 n, np, np + 4);
        return 0;
    }
    double *sd = pp_xmalloc(n * sizeof *sd);
    bool assumed;
    pp__cal_variances(s, idx, n, REL_ASSUMED, sd, &assumed);
    for (size_t i = 0; i < n; i++) sd[i] = sqrt(sd[i]);
    c.sd = sd;

    gsl_multifit_nlinear_fdf fdf;
    memset(&fdf, 0, sizeof fdf);
    fdf.f = resid_fn;
    fdf.df = NULL; /* finite differences */
    fdf.n = n;
    fdf.p = np;
    fdf.params = &c;
    gsl_multifit_nlinear_parameters fp =
        gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, n, np);
    gsl_vector *x = gsl_vector_alloc(np);
    gsl_matrix *cov = gsl_matrix_alloc(np, np);
    if (!w || !x || !cov) pp_oom();
    gsl_vector_set(x, 0, g->gemm_efficiency);
    gsl_vector_set(x, 1, g->gemm_k_half);
    for (size_t j = 0; j < c.n_tiles; j++)
        for (size_t i = 0; i < g->n_tiles; i++)
            if ((double)g->tiles[i].m * g->tiles[i].n == c.area[j])
                gsl_vector_set(x, 2 + j, g->tiles[i].efficiency);
    int info = 0, rc = 0;
    int st = gsl_multifit_nlinear_init(x, &fdf, w);
    if (!st)
        st = gsl_multifit_nlinear_driver(200, 1e-10, 1e-10, 1e-12, NULL, NULL,
                                         &info, w);
    if (st && st != GSL_EMAXITER) {
        rc = pp_error_set(e, PP_EFAIL, "GEMM fit: gsl_multifit_nlinear: %s",
                          gsl_strerror(st));
        goto out;
    }
    {
        gsl_matrix *J = gsl_multifit_nlinear_jac(w);
        gsl_multifit_nlinear_covar(J, 0.0, cov);
        gsl_vector *r = gsl_multifit_nlinear_residual(w);
        double chi2;
        gsl_blas_ddot(r, r, &chi2);
        size_t dof = n - np;
        double sc = assumed ? chi2 / (double)dof : 1;
        f->chi2_dof = chi2 / (double)dof;
        pp_gpu_profile fitted;
        apply(&c, w->x, &fitted);
        const char *names[2] = {"gemm.efficiency", "gemm.k_half"};
        bool bad = false;
        for (size_t j = 0; j < np; j++) {
            double v = gsl_vector_get(w->x, j);
            double se = sqrt(gsl_matrix_get(cov, j, j) * sc);
            char nm[PP_CAL_STR];
            if (j < 2)
                snprintf(nm, sizeof nm, "%s", names[j]);
            else
                snprintf(nm, sizeof nm, "tile.area=%.0f", c.area[j - 2]);
            pp__cal_set_param(f, nm, v, se);
            if (!(se > 0) || !(se < 0.5 * fabs(v))) bad = true;
        }
        if (st == GSL_EMAXITER) {
            f->ill = true;
            snprintf(f->advice, sizeof f->advice,
                     "did not converge in 200 "
                     "iterations");
        }
        if (bad) {
            f->ill = true;
            size_t l = strlen(f->advice);
            snprintf(f->advice + l, sizeof f->advice - l,
                     "%sa parameter is "
                     "not determined (standard error > half its value): add "
                     "shapes with small k (k <= 256) for k_half, large square "
                     "ones (m=n=k >= 4096) for the efficiency, and shapes "
                     "whose m or n fit the smaller tiles (64-128)",
                     l ? "; " : "");
        } else if (unseen[0]) {
            snprintf(f->advice, sizeof f->advice,
                     "tiles no shape selects "
                     "(kept as given): %s",
                     unseen);
        }
        if (tiny) {
            size_t l = strlen(f->advice);
            snprintf(f->advice + l, sizeof f->advice - l,
                     "%s%zu shapes "
                     "faster than 4 launch overheads (%.3g s) not fitted",
                     l ? "; " : "", tiny, 4 * g->launch_s);
        }
        *g = fitted;
        finish_stats(s, f, g, pp__cal_gemm_pred);
        (void)info;
    }
out:
    gsl_matrix_free(cov);
    gsl_vector_free(x);
    gsl_multifit_nlinear_free(w);
    free(sd);
    return rc;
}

/* The fits, with a note of the points they left out. */
static size_t count_skipped(const pp_cal_set *s, const bool *use,
                            pp_cal_kind k) {
    size_t *idx, skipped;
    collect(s, use, k, &idx, &skipped);
    free(idx);
    return skipped;
}

int pp_cal_fit_mem(const pp_cal_set *s, const bool *use, pp_gpu_profile *g,
                   pp_cal_fit *f, pp_error *e) {
    pp_cal_gsl_init();
    int rc = fit_mem(s, use, g, f, e);
    if (rc == 0) note_skipped(f, count_skipped(s, use, PP_CAL_MEMBW));
    return rc;
}

int pp_cal_fit_gemm(const pp_cal_set *s, const bool *use, pp_gpu_profile *g,
                    pp_cal_fit *f, pp_error *e) {
    pp_cal_gsl_init();
    int rc = fit_gemm(s, use, g, f, e);
    if (rc == 0) note_skipped(f, count_skipped(s, use, PP_CAL_GEMM));
    return rc;
}
