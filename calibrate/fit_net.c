/*
 * fit_net.c: alpha-beta of the network, one fit per group of points with
 * the same kind, operation, algorithm, link class, scope and rank count.
 *
 *   t(S) = alpha + S / beta
 *
 * by weighted least squares in (1, S).  Small messages ride a different
 * protocol (NCCL's LL/LL128 vs Simple; perftest's inline sends) with
 * lower latency and lower bandwidth, which bends the curve: a second
 * line below a knee.  The knee is the split of the sorted sizes that
 * minimises chi^2 of the two lines (each fitted by WLS, at least three
 * sizes a side); it is kept when it lowers chi^2 by more than noise
 * could (see below).
 */
#include "cal_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REL_ASSUMED 0.02

static bool same_group(const pp_cal_point *a, const pp_cal_point *b) {
    return a->kind == b->kind && a->scope == b->scope && a->ranks == b->ranks &&
           !strcmp(a->op, b->op) && !strcmp(a->algo, b->algo) &&
           !strcmp(a->link, b->link);
}

typedef struct line_fit {
    double a, b, cov[4], chi2; /* t = a + b S */
    size_t n;
} line_fit;

static int fit_line(const double *S, const double *t, const double *var,
                    size_t n, line_fit *out, pp_error *e) {
    double *X = pp_xmalloc(2 * n * sizeof *X), *w = pp_xmalloc(n * sizeof *w);
    for (size_t i = 0; i < n; i++) {
        X[2 * i] = 1;
        X[2 * i + 1] = S[i];
        w[i] = 1 / var[i];
    }
    double c[2];
    int rc = pp__cal_wls(n, 2, X, t, w, c, out->cov, &out->chi2, e);
    free(X);
    free(w);
    out->a = c[0];
    out->b = c[1];
    out->n = n;
    return rc;
}

static void advise(pp_cal_fit *f, const char *fmt, const char *arg) {
    size_t l = strlen(f->advice);
    if (l) snprintf(f->advice + l, sizeof f->advice - l, "; ");
    l = strlen(f->advice);
    snprintf(f->advice + l, sizeof f->advice - l, fmt, arg);
    f->ill = true;
}

double pp__cal_netfit_time(const pp_cal_netfit *f, double bytes) {
    if (f->knee && bytes <= f->knee_bytes)
        return f->alpha_lo_s + bytes / f->beta_lo_Bps;
    return f->alpha_s + bytes / f->beta_Bps;
}

const pp_cal_netfit *pp__cal_netfit_find(const pp_cal_netfit *v, size_t n,
                                         const pp_cal_point *p) {
    for (size_t i = 0; i < n; i++) {
        const pp_cal_netfit *f = &v[i];
        if (f->kind == p->kind && f->scope == p->scope &&
            (f->ranks == p->ranks || f->ranks == 0) && !strcmp(f->op, p->op) &&
            !strcmp(f->algo, p->algo) && !strcmp(f->link, p->link))
            return f;
    }
    return NULL;
}

static int fit_group(const pp_cal_set *s, const size_t *idx, size_t n,
                     pp_cal_netfit *nf, pp_error *e) {
    const pp_cal_point *p0 = &s->pts[idx[0]];
    memset(nf, 0, sizeof *nf);
    pp__cal_strcpy(nf->op, p0->op);
    pp__cal_strcpy(nf->algo, p0->algo);
    pp__cal_strcpy(nf->link, p0->link);
    nf->kind = p0->kind;
    nf->scope = p0->scope;
    nf->ranks = p0->ranks;
    nf->nodes = p0->nodes;
    pp_cal_fit *f = &nf->fit;
    snprintf(f->what, sizeof f->what, "%s %.24s/%.16s %.16s/%s ranks=%lld",
             pp_cal_kind_name(p0->kind), p0->op, p0->algo, p0->link,
             pp_cal_scope_name(p0->scope), (long long)p0->ranks);
    f->n_points = n;
    f->idx = pp_xmalloc(n * sizeof *f->idx);
    memcpy(f->idx, idx, n * sizeof *idx);
    f->resid = pp_xcalloc(n, sizeof *f->resid);

    /* Sorted by size, so that a knee splits a prefix from the rest. */
    double *S = pp_xmalloc(n * sizeof *S), *t = pp_xmalloc(n * sizeof *t),
           *var = pp_xmalloc(n * sizeof *var), *u = pp_xmalloc(n * sizeof *u);
    size_t *ord = pp_xmalloc(n * sizeof *ord);
    bool assumed;
    double *var0 = pp_xmalloc(n * sizeof *var0);
    pp__cal_variances(s, idx, n, REL_ASSUMED, var0, &assumed);
    for (size_t i = 0; i < n; i++) ord[i] = i;
    for (size_t i = 1; i < n; i++) /* insertion sort: n is small */
        for (size_t j = i;
             j > 0 && s->pts[idx[ord[j]]].bytes < s->pts[idx[ord[j - 1]]].bytes;
             j--) {
            size_t x = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = x;
        }
    for (size_t i = 0; i < n; i++) {
        S[i] = s->pts[idx[ord[i]]].bytes;
        t[i] = s->pts[idx[ord[i]]].time_s;
        var[i] = var0[ord[i]];
        u[i] = S[i];
    }
    /* u is a copy of S, already in ascending order: keep distinct sizes. */
    size_t nu = 0;
    for (size_t i = 0; i < n; i++)
        if (!nu || u[i] != u[nu - 1]) u[nu++] = u[i];

    int rc = 0;
    line_fit one, lo = {0}, hi = {0};
    if (nu < 2) {
        advise(f,
               "only one distinct size: measure at least 3 sizes from small "
               "(<= 64 KiB) to large (>= 64 MiB) messages%s",
               "");
        nf->alpha_s = NAN;
        nf->beta_Bps = NAN;
        f->r2 = NAN;
        goto out;
    }
    if ((rc = fit_line(S, t, var, n, &one, e)) < 0) goto out;

    /* The knee: the best split with >= 3 distinct sizes on each side. */
    double best = INFINITY;
    size_t best_k = 0;
    for (size_t j = 3; j + 3 <= nu; j++) {
        double cut = u[j - 1];
        size_t k = 0;
        while (k < n && S[k] <= cut) k++;
        line_fit a, b;
        pp_error ee = PP_ERROR_INIT;
        if (fit_line(S, t, var, k, &a, &ee) < 0 ||
            fit_line(S + k, t + k, var + k, n - k, &b, &ee) < 0)
            continue;
        if (a.b <= 0 || b.b <= 0) continue;
        if (a.chi2 + b.chi2 < best) {
            best = a.chi2 + b.chi2;
            best_k = k;
            lo = a;
            hi = b;
        }
    }
    /* The best of many splits always lowers chi^2 a little: ask for a
     * drop no noise would give (25 for the two parameters and the split
     * searched, p < 1e-5) and a real share of the misfit. */
    bool knee = best_k && one.chi2 - best > 25 && best < 0.8 * one.chi2;
    line_fit *main_line = knee ? &hi : &one;
    size_t dof = n > (knee ? 4u : 2u) ? n - (knee ? 4 : 2) : 1;
    double chi2 = knee ? best : one.chi2;
    /* Assumed variances: scale the covariance by the observed scatter. */
    double sc = assumed ? chi2 / (double)dof : 1;
    if (!(sc > 0)) sc = 1;
    double c1 = main_line->b;
    nf->alpha_s = main_line->a;
    nf->alpha_se = sqrt(main_line->cov[0] * sc);
    nf->beta_Bps = 1 / c1;
    nf->beta_se = sqrt(main_line->cov[3] * sc) / (c1 * c1);
    if (knee) {
        nf->knee = true;
        nf->alpha_lo_s = lo.a;
        nf->alpha_lo_se = sqrt(lo.cov[0] * sc);
        nf->beta_lo_Bps = 1 / lo.b;
        nf->beta_lo_se = sqrt(lo.cov[3] * sc) / (lo.b * lo.b);
        /* Between the last size below and the first above. */
        nf->knee_bytes = sqrt(S[best_k - 1] * (S[best_k] > 0 ? S[best_k] : 1));
        if (nf->knee_bytes < S[best_k - 1]) nf->knee_bytes = S[best_k - 1];
        f->knee_bytes = nf->knee_bytes;
    }
    pp__cal_set_param(f, "alpha_s", nf->alpha_s, nf->alpha_se);
    pp__cal_set_param(f, "beta_Bps", nf->beta_Bps, nf->beta_se);
    if (knee) {
        pp__cal_set_param(f, "alpha_lo_s", nf->alpha_lo_s, nf->alpha_lo_se);
        pp__cal_set_param(f, "beta_lo_Bps", nf->beta_lo_Bps, nf->beta_lo_se);
        pp__cal_set_param(f, "knee_bytes", nf->knee_bytes, NAN);
    }

    /* Statistics: weighted R^2 and relative residuals. */
    double sw = 0, swy = 0, sst = 0, rr = 0;
    for (size_t i = 0; i < n; i++) {
        sw += 1 / var[i];
        swy += t[i] / var[i];
    }
    for (size_t i = 0; i < n; i++) {
        double d = t[i] - swy / sw;
        sst += d * d / var[i];
    }
    f->r2 = sst > 0 ? 1 - chi2 / sst : NAN;
    f->chi2_dof = chi2 / (double)dof;
    for (size_t i = 0; i < n; i++) {
        const pp_cal_point *p = &s->pts[idx[i]];
        double r = pp__cal_netfit_time(nf, p->bytes) / p->time_s - 1;
        f->resid[i] = r;
        rr += r * r;
    }
    f->rel_rms = sqrt(rr / (double)n);

    /* What to measure when a parameter is not pinned down. */
    if (nu < 3)
        advise(f,
               "only 2 distinct sizes: measure at least 3, from small "
               "(<= 64 KiB) to large (>= 64 MiB) messages%s",
               "");
    if (u[nu - 1] < 16 * (u[0] > 0 ? u[0] : 1))
        advise(f,
               "sizes span less than 16x: widen the sweep (e.g. -b 8 -e 1G"
               " -f 2)%s",
               "");
    if (!(fabs(nf->alpha_se) < fabs(nf->alpha_s)))
        advise(f,
               "latency (alpha) not determined: add small messages "
               "(8 B - 64 KiB)%s",
               "");
    if (!(nf->beta_se < 0.25 * nf->beta_Bps) || !(nf->beta_Bps > 0))
        advise(f,
               "bandwidth (beta) not determined: add large messages "
               "(>= 64 MiB)%s",
               "");
    if (assumed && !f->advice[0])
        snprintf(f->advice, sizeof f->advice,
                 "no repeats: weights assume a "
                 "%.0f%% relative error (run each size twice, or keep "
                 "nccl-tests' in-place column)",
                 100 * REL_ASSUMED);
out:
    free(S);
    free(t);
    free(var);
    free(var0);
    free(u);
    free(ord);
    return rc;
}

int pp_cal_fit_net(const pp_cal_set *s, const bool *use, pp_cal_netfit **out,
                   size_t *n_out, pp_error *e) {
    pp_cal_gsl_init();
    *out = NULL;
    *n_out = 0;
    bool *done = pp_xcalloc(s->n ? s->n : 1, sizeof *done);
    size_t *idx = pp_xmalloc((s->n ? s->n : 1) * sizeof *idx);
    pp_cal_netfit *v = NULL;
    size_t nv = 0;
    int rc = 0;
    for (size_t i = 0; i < s->n; i++) {
        const pp_cal_point *p = &s->pts[i];
        if (done[i] || (use && !use[i]) ||
            (p->kind != PP_CAL_COLL && p->kind != PP_CAL_P2P))
            continue;
        size_t n = 0;
        for (size_t j = i; j < s->n; j++)
            if (!done[j] && (!use || use[j]) && same_group(p, &s->pts[j])) {
                done[j] = true;
                idx[n++] = j;
            }
        v = pp_xrealloc(v, (nv + 1) * sizeof *v);
        if ((rc = fit_group(s, idx, n, &v[nv], e)) < 0) {
            pp_cal_fit_fini(&v[nv].fit);
            break;
        }
        nv++;
    }
    free(done);
    free(idx);
    if (rc < 0) {
        for (size_t i = 0; i < nv; i++) pp_cal_fit_fini(&v[i].fit);
        free(v);
        return rc;
    }
    *out = v;
    *n_out = nv;
    return 0;
}

void pp_cal_fit_fini(pp_cal_fit *f) {
    if (!f) return;
    free(f->idx);
    free(f->resid);
    f->idx = NULL;
    f->resid = NULL;
}
