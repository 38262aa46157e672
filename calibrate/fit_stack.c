/*
 * fit_stack.c: the software stack's share, framework.efficiency, from
 * measured iteration times of stated layouts.  The prediction is
 * pp_step_simulate at analytic fidelity (microseconds to milliseconds a
 * layout); the efficiency divides every kernel's roofline time, so the
 * predicted time falls monotonically as it rises.  One measurement: a
 * root find (Brent) of T(eff) = T_measured.  Several: the eff that
 * minimises the sum of squared relative errors (Brent's minimiser after
 * a coarse scan), its standard error from the residual scatter and the
 * numerical derivative.
 *
 * Also the driver of all fits (pp_cal_fit_all).
 */
#include "cal_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_min.h>
#include <gsl/gsl_roots.h>

#define EFF_LO 0.05
#define EFF_HI 1.0

typedef struct iter_case {
    pp_model m;
    pp_parallel par;
    pp_cluster *c;
    const pp_cal_point *p;
    double meas_s;
} iter_case;

static int case_load(const pp_cal_set *s, const pp_cal_point *p,
                     const char *cluster_default, iter_case *ic, pp_error *e) {
    char loc[512];
    memset(ic, 0, sizeof *ic);
    ic->p = p;
    const char *cl = p->cluster[0] ? p->cluster : cluster_default;
    if (!p->model[0] || !p->parallel[0] || !cl)
        return pp_error_set(e, PP_EINPUT,
                            "%s: an iteration time needs its "
                            "model, cluster and layout: give --model, "
                            "--cluster and --parallel with a Megatron-LM log, "
                            "or list it in an iterations YAML",
                            s ? pp_cal_point_loc(s, p, loc, sizeof loc) : "?");
    int rc;
    pp_parallel_init(&ic->par);
    if ((rc = pp_model_load(p->model, &ic->m, e)) < 0 ||
        (rc = pp_parallel_parse(p->parallel, &ic->par, e)) < 0 ||
        (rc = pp_cluster_load(cl, NULL, 0, NULL, &ic->c, e)) < 0) {
        if (s)
            pp_error_prefix(e, "%s: ", pp_cal_point_loc(s, p, loc, sizeof loc));
        return rc;
    }
    return 0;
}

static int case_run(iter_case *ic, const pp_gpu_profile *g, double *pred,
                    double *meas, pp_error *e) {
    pp_step_config cfg;
    pp_step_config_init(&cfg);
    cfg.model = &ic->m;
    cfg.par = &ic->par;
    cfg.cluster = ic->c;
    cfg.profile = g;
    cfg.fidelity = PP_FIDELITY_ANALYTIC;
    cfg.check_memory = false; /* it ran: it fitted */
    cfg.dp_overlap = ic->p->dp_overlap;
    if (ic->p->bucket_bytes > 0) cfg.bucket_bytes = ic->p->bucket_bytes;
    pp_step_result r;
    int rc = pp_step_simulate(&cfg, &r, e);
    if (rc < 0) return rc;
    *pred = r.iteration_time_s;
    if (meas)
        *meas = ic->p->tflops > 0
                    ? r.flops_iter / ((double)r.gpus * ic->p->tflops * 1e12)
                    : ic->p->time_s;
    pp_step_result_fini(&r);
    return 0;
}

int pp_cal_iter_predict(const pp_cal_point *p, const char *cluster_default,
                        const pp_gpu_profile *g, double *pred_s, double *meas_s,
                        pp_error *e) {
    iter_case ic;
    int rc = case_load(NULL, p, cluster_default, &ic, e);
    if (rc == 0) rc = case_run(&ic, g, pred_s, meas_s, e);
    pp_cluster_free(ic.c);
    return rc;
}

typedef struct sctx {
    iter_case *v;
    size_t n;
    pp_gpu_profile g;
    int rc;
    pp_error *e;
} sctx;

/* Sum of squared relative errors at efficiency x. */
static double ssr(double x, void *data) {
    sctx *c = data;
    pp_gpu_profile g = c->g;
    g.framework_efficiency = x;
    double sum = 0;
    for (size_t i = 0; i < c->n; i++) {
        double pred;
        if (c->rc == 0) c->rc = case_run(&c->v[i], &g, &pred, NULL, c->e);
        if (c->rc) return 0;
        double r = pred / c->v[i].meas_s - 1;
        sum += r * r;
    }
    return sum;
}

/* The single-point equation: predicted/measured - 1 = 0. */
static double one(double x, void *data) {
    sctx *c = data;
    pp_gpu_profile g = c->g;
    g.framework_efficiency = x;
    double pred = 0;
    if (c->rc == 0) c->rc = case_run(&c->v[0], &g, &pred, NULL, c->e);
    return c->rc ? 0 : pred / c->v[0].meas_s - 1;
}

int pp_cal_fit_stack(const pp_cal_set *s, const bool *use,
                     const char *cluster_default, pp_gpu_profile *g,
                     pp_cal_fit *f, pp_error *e) {
    pp_cal_gsl_init();
    memset(f, 0, sizeof *f);
    snprintf(f->what, sizeof f->what, "framework (iteration times)");
    f->r2 = NAN;
    size_t n = 0;
    f->idx = pp_xmalloc((s->n ? s->n : 1) * sizeof *f->idx);
    for (size_t i = 0; i < s->n; i++)
        if (s->pts[i].kind == PP_CAL_ITER && (!use || use[i])) f->idx[n++] = i;
    f->n_points = n;
    f->resid = pp_xcalloc(n ? n : 1, sizeof *f->resid);
    if (!n) return 0;
    iter_case *v = pp_xcalloc(n, sizeof *v);
    sctx c = {v, n, *g, 0, e};
    int rc = 0;
    /* Load each layout once; the measured time (from TFLOP/s, via F_iter)
     * does not depend on the efficiency. */
    for (size_t i = 0; i < n; i++) {
        double pred;
        if ((rc = case_load(s, &s->pts[f->idx[i]], cluster_default, &v[i], e)) <
                0 ||
            (rc = case_run(&v[i], g, &pred, &v[i].meas_s, e)) < 0)
            goto out;
    }

    double x = NAN;
    if (n == 1) {
        double flo = one(EFF_LO, &c), fhi = one(EFF_HI, &c);
        if (c.rc) {
            rc = c.rc;
            goto out;
        }
        if (flo * fhi > 0) {
            x = fabs(flo) < fabs(fhi) ? EFF_LO : EFF_HI;
        } else {
            gsl_function F = {one, &c};
            gsl_root_fsolver *r =
                gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
            gsl_root_fsolver_set(r, &F, EFF_LO, EFF_HI);
            for (int it = 0; it < 60; it++) {
                gsl_root_fsolver_iterate(r);
                double a = gsl_root_fsolver_x_lower(r),
                       b = gsl_root_fsolver_x_upper(r);
                x = gsl_root_fsolver_root(r);
                if (gsl_root_test_interval(a, b, 0, 1e-6) == GSL_SUCCESS) break;
            }
            gsl_root_fsolver_free(r);
        }
    } else {
        /* A coarse scan brackets the minimum for Brent. */
        double best = INFINITY, bx = EFF_HI, grid[12];
        int nb = 12, bi = nb - 1;
        for (int i = 0; i < nb; i++) {
            grid[i] = EFF_LO + (EFF_HI - EFF_LO) * i / (nb - 1);
            double y = ssr(grid[i], &c);
            if (y < best) {
                best = y;
                bx = grid[i];
                bi = i;
            }
        }
        if (c.rc) {
            rc = c.rc;
            goto out;
        }
        x = bx;
        if (bi > 0 && bi < nb - 1) {
            gsl_function F = {ssr, &c};
            gsl_min_fminimizer *m =
                gsl_min_fminimizer_alloc(gsl_min_fminimizer_brent);
            if (gsl_min_fminimizer_set(m, &F, bx, grid[bi - 1], grid[bi + 1]) ==
                GSL_SUCCESS) {
                for (int it = 0; it < 60; it++) {
                    gsl_min_fminimizer_iterate(m);
                    double a = gsl_min_fminimizer_x_lower(m),
                           b = gsl_min_fminimizer_x_upper(m);
                    x = gsl_min_fminimizer_x_minimum(m);
                    if (gsl_min_test_interval(a, b, 1e-6, 0) == GSL_SUCCESS)
                        break;
                }
            }
            gsl_min_fminimizer_free(m);
        }
        if (c.rc) {
            rc = c.rc;
            goto out;
        }
    }

    /* Residuals, and the standard error from their scatter. */
    pp_gpu_profile gf = *g;
    gf.framework_efficiency = x;
    double h = 1e-4, sj = 0, rr = 0;
    for (size_t i = 0; i < n; i++) {
        double p0, p1, p2;
        pp_gpu_profile a = gf, b = gf;
        a.framework_efficiency = x - h;
        b.framework_efficiency = x + h;
        if ((rc = case_run(&v[i], &gf, &p0, NULL, e)) < 0 ||
            (rc = case_run(&v[i], &a, &p1, NULL, e)) < 0 ||
            (rc = case_run(&v[i], &b, &p2, NULL, e)) < 0)
            goto out;
        f->resid[i] = p0 / v[i].meas_s - 1;
        rr += f->resid[i] * f->resid[i];
        double d = (p2 - p1) / (2 * h) / v[i].meas_s;
        sj += d * d;
    }
    f->rel_rms = sqrt(rr / (double)n);
    double se = n > 1 && sj > 0 ? sqrt(rr / (double)(n - 1) / sj) : NAN;
    f->chi2_dof = n > 1 ? rr / (double)(n - 1) : NAN;
    snprintf(f->p[0].name, sizeof f->p[0].name, "framework.efficiency");
    f->p[0].value = x;
    f->p[0].se = se;
    f->n_params = 1;
    if (n == 1) {
        f->ill = true;
        snprintf(f->advice, sizeof f->advice,
                 "one iteration time: the fit is "
                 "exact and its error unknown; add measured iterations of "
                 "other layouts");
    }
    if (x >= EFF_HI - 1e-6 && f->resid[0] > 0.001) {
        f->ill = true;
        snprintf(f->advice, sizeof f->advice,
                 "the model is slower than the "
                 "measurement even with framework efficiency 1: the kernels' "
                 "profile is too pessimistic (fit the GEMM part first)");
    }
    g->framework_efficiency = x;
out:
    for (size_t i = 0; i < n; i++) pp_cluster_free(v[i].c);
    free(v);
    return rc;
}

/* ------------------------------------------------------------------------
 * All fits.
 * ---------------------------------------------------------------------- */
void pp_cal_fit_opts_init(pp_cal_fit_opts *o) {
    memset(o, 0, sizeof *o);
    o->net = o->gemm = o->mem = o->stack = true;
}

void pp_cal_result_init(pp_cal_result *r) {
    memset(r, 0, sizeof *r);
}

void pp_cal_result_fini(pp_cal_result *r) {
    if (!r) return;
    pp_cal_fit_fini(&r->gemm);
    pp_cal_fit_fini(&r->mem);
    pp_cal_fit_fini(&r->beside);
    pp_cal_fit_fini(&r->beside_nccl);
    pp_cal_fit_fini(&r->stack);
    for (size_t i = 0; i < r->n_net; i++) pp_cal_fit_fini(&r->net[i].fit);
    free(r->net);
    r->net = NULL;
    r->n_net = 0;
    for (size_t i = 0; i < r->n_rank; i++) pp_cal_fit_fini(&r->rank[i].fit);
    free(r->rank);
    r->rank = NULL;
    r->n_rank = 0;
}

static bool any(const pp_cal_set *s, const bool *use, pp_cal_kind k) {
    for (size_t i = 0; i < s->n; i++)
        if (s->pts[i].kind == k && (!use || use[i])) return true;
    return false;
}

int pp_cal_fit_all(const pp_cal_set *s, const pp_cal_fit_opts *o,
                   pp_cal_result *r, pp_error *e) {
    pp_cal_gsl_init();
    int rc = 0;
    if (o->base) {
        r->profile = *o->base;
    } else {
        if (!o->cluster)
            return pp_error_set(e, PP_EUSAGE,
                                "a cluster (for its GPU) or a "
                                "base profile is needed");
        pp_cluster *c = NULL;
        if ((rc = pp_cluster_load(o->cluster, NULL, 0, NULL, &c, e)) < 0)
            return rc;
        rc = pp_profile_load(NULL, pp_cluster_info_get(c)->gpu, &r->profile, e);
        pp_cluster_free(c);
        if (rc < 0) return rc;
    }
    /* Memory first (launch overhead and bandwidth enter GEMM times), then
     * GEMM, then the stack on top of the fitted kernels. */
    if (o->mem && any(s, o->use, PP_CAL_MEMBW)) {
        if ((rc = pp_cal_fit_mem(s, o->use, &r->profile, &r->mem, e)) < 0)
            return rc;
        r->mem_fitted = !r->mem.ill;
    }
    if (o->gemm && any(s, o->use, PP_CAL_GEMM)) {
        if ((rc = pp_cal_fit_gemm(s, o->use, &r->profile, &r->gemm, e)) < 0)
            return rc;
        r->gemm_fitted = r->gemm.n_params > 0;
        if ((rc = pp_cal_fit_beside(s, o->use, &r->profile, &r->beside, e)) < 0)
            return rc;
        r->beside_fitted = r->beside.n_params > 0;
        if ((rc = pp_cal_fit_beside_nccl(s, o->use, &r->profile,
                                         &r->beside_nccl, e)) < 0)
            return rc;
        r->beside_nccl_fitted = r->beside_nccl.n_params > 0;
    }
    if (o->net && (any(s, o->use, PP_CAL_COLL) || any(s, o->use, PP_CAL_P2P)) &&
        ((rc = pp_cal_fit_net(s, o->use, &r->net, &r->n_net, e)) < 0 ||
         (rc = pp_cal_fit_net_ranks(s, o->use, &r->rank, &r->n_rank, e)) < 0))
        return rc;
    if (o->stack && any(s, o->use, PP_CAL_ITER)) {
        if ((rc = pp_cal_fit_stack(s, o->use, o->cluster, &r->profile,
                                   &r->stack, e)) < 0)
            return rc;
        r->stack_fitted = r->stack.n_params > 0;
    }
    return 0;
}
