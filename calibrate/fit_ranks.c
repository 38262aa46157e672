/*
 * fit_ranks.c: one alpha-beta for a collective across rank counts.
 *
 * The per-group fits (fit_net.c) give t(S) = alpha + S/beta for each
 * rank count measured, and cannot say anything about a count not
 * measured.  The algorithm's structure can: a ring allreduce on n ranks
 * is 2(n-1) steps, each sending S/n, so
 *
 *   t(n, S) = steps(n) alpha + bw(n) S / beta
 *
 * with (steps, bw) per algorithm:
 *   allreduce ring              2(n-1),        2(n-1)/n
 *   allgather, reducescatter    (n-1),         (n-1)/n
 *   allreduce rd                lg + 2[n not a power of two], the same x 1
 *     (lg = floor(log2 n); exec's recursive doubling, like MPICH's, folds
 *     the 2 rem = 2 (n - 2^lg) extra ranks in and out with one more full
 *     exchange each way, and every step sends the whole buffer)
 * alpha is the latency of one step, beta the bandwidth of one link: linear
 * in (alpha, 1/beta), so weighted least squares (gsl_multifit_wlinear)
 * over every rank count at once, weights from the measured noise
 * (pp__cal_variances).  The standard errors are scaled by the Birge ratio
 * sqrt(chi^2/dof) when it exceeds 1: when one alpha and one beta do not
 * explain every count exactly (contention, a protocol change), the
 * misfit, not the timer noise, bounds what the data say.
 */
#include "cal_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REL_ASSUMED 0.02

/* sim/coll's rank model (the one the simulator rescales a fitted entry
 * by), for the algorithms exec runs: "auto" is not fitted across rank
 * counts (nccl-tests' choice may change with the count). */
bool pp_cal_rank_terms(const char *op, const char *algo, int64_t n,
                       double *steps, double *bw) {
    if (strcmp(algo, "ring") && strcmp(algo, "rd")) return false;
    return pp_coll_rank_terms(op, algo, n, steps, bw);
}

double pp_cal_rankfit_time(const pp_cal_rankfit *f, int64_t ranks,
                           double bytes) {
    double st, bw;
    if (!pp_cal_rank_terms(f->op, f->algo, ranks, &st, &bw)) return NAN;
    return st * f->alpha_s + bw * bytes / f->beta_Bps;
}

static bool modelled(const pp_cal_point *p) {
    double a, b;
    return p->kind == PP_CAL_COLL && p->time_s > 0 &&
           pp_cal_rank_terms(p->op, p->algo, p->ranks, &a, &b);
}

static bool same_family(const pp_cal_point *a, const pp_cal_point *b) {
    return a->kind == b->kind && a->scope == b->scope &&
           !strcmp(a->op, b->op) && !strcmp(a->algo, b->algo) &&
           !strcmp(a->link, b->link);
}

static int fit_family(const pp_cal_set *s, const size_t *idx, size_t n,
                      pp_cal_rankfit *rf, pp_error *e) {
    const pp_cal_point *p0 = &s->pts[idx[0]];
    pp_cal_fit *f = &rf->fit;
    memset(rf, 0, sizeof *rf);
    pp__cal_strcpy(rf->op, p0->op);
    pp__cal_strcpy(rf->algo, p0->algo);
    pp__cal_strcpy(rf->link, p0->link);
    rf->scope = p0->scope;
    rf->ranks_min = rf->ranks_max = p0->ranks;
    f->n_points = n;
    f->idx = pp_xmalloc(n * sizeof *f->idx);
    memcpy(f->idx, idx, n * sizeof *idx);
    f->resid = pp_xcalloc(n, sizeof *f->resid);
    f->r2 = NAN;
    rf->alpha_s = rf->beta_Bps = NAN;

    double *X = pp_xmalloc(2 * n * sizeof *X), *y = pp_xmalloc(n * sizeof *y),
           *w = pp_xmalloc(n * sizeof *w), *var = pp_xmalloc(n * sizeof *var);
    bool assumed;
    pp__cal_variances(s, idx, n, REL_ASSUMED, var, &assumed);
    int64_t counts[64];
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) {
        const pp_cal_point *p = &s->pts[idx[i]];
        double st, bw;
        pp_cal_rank_terms(p->op, p->algo, p->ranks, &st, &bw);
        X[2 * i] = st;
        X[2 * i + 1] = bw * p->bytes;
        y[i] = p->time_s;
        w[i] = 1 / var[i];
        if (p->ranks < rf->ranks_min) rf->ranks_min = p->ranks;
        if (p->ranks > rf->ranks_max) rf->ranks_max = p->ranks;
        size_t j = 0;
        while (j < nc && counts[j] != p->ranks) j++;
        if (j == nc && nc < sizeof counts / sizeof *counts)
            counts[nc++] = p->ranks;
    }
    rf->n_counts = (int)nc;
    snprintf(f->what, sizeof f->what,
             "%s %.24s/%.16s %.16s/%s ranks=%lld..%lld"
             " (rank model)",
             pp_cal_kind_name(p0->kind), p0->op, p0->algo, p0->link,
             pp_cal_scope_name(p0->scope), (long long)rf->ranks_min,
             (long long)rf->ranks_max);
    int rc = 0;
    if (n < 3) {
        f->ill = true;
        snprintf(f->advice, sizeof f->advice,
                 "%zu points: measure at least "
                 "3 sizes",
                 n);
        goto out;
    }
    double c[2], cov[4], chi2;
    if ((rc = pp__cal_wls(n, 2, X, y, w, c, cov, &chi2, e)) < 0) goto out;
    double dof = (double)(n - 2);
    f->chi2_dof = dof > 0 ? chi2 / dof : NAN;
    double sc = dof > 0 && chi2 / dof > 1 ? chi2 / dof : 1;
    rf->alpha_s = c[0];
    rf->alpha_se = sqrt(cov[0] * sc);
    rf->beta_Bps = 1 / c[1];
    rf->beta_se = sqrt(cov[3] * sc) / (c[1] * c[1]);
    pp__cal_set_param(f, "alpha_s", rf->alpha_s, rf->alpha_se);
    pp__cal_set_param(f, "beta_Bps", rf->beta_Bps, rf->beta_se);

    double sw = 0, swy = 0, sst = 0, rr = 0;
    for (size_t i = 0; i < n; i++) {
        sw += w[i];
        swy += w[i] * y[i];
    }
    for (size_t i = 0; i < n; i++) {
        double d = y[i] - swy / sw;
        sst += d * d * w[i];
        double pr = c[0] * X[2 * i] + c[1] * X[2 * i + 1];
        f->resid[i] = pr / y[i] - 1;
        rr += f->resid[i] * f->resid[i];
    }
    f->r2 = sst > 0 ? 1 - chi2 / sst : NAN;
    f->rel_rms = sqrt(rr / (double)n);
    size_t l = 0;
    if (nc < 2)
        l += (size_t)snprintf(f->advice + l, sizeof f->advice - l,
                              "one rank "
                              "count: alpha and beta are those of the "
                              "per-count fit; measure 2+ counts to test the "
                              "model across counts");
    if (!(c[1] > 0) || !(rf->beta_se < 0.25 * rf->beta_Bps))
        l += (size_t)snprintf(f->advice + l, sizeof f->advice - l,
                              "%sbeta "
                              "not determined: add large messages (>= 16 MiB)",
                              l ? "; " : "");
    if (!(fabs(rf->alpha_se) < fabs(rf->alpha_s)))
        snprintf(f->advice + l, sizeof f->advice - l,
                 "%salpha not "
                 "determined: add small messages (<= 64 KiB)",
                 l ? "; " : "");
    f->ill = !(c[1] > 0);
out:
    free(X);
    free(y);
    free(w);
    free(var);
    return rc;
}

int pp_cal_fit_net_ranks(const pp_cal_set *s, const bool *use,
                         pp_cal_rankfit **out, size_t *n_out, pp_error *e) {
    pp_cal_gsl_init();
    *out = NULL;
    *n_out = 0;
    bool *done = pp_xcalloc(s->n ? s->n : 1, sizeof *done);
    size_t *idx = pp_xmalloc((s->n ? s->n : 1) * sizeof *idx);
    pp_cal_rankfit *v = NULL;
    size_t nv = 0;
    int rc = 0;
    for (size_t i = 0; i < s->n; i++) {
        const pp_cal_point *p = &s->pts[i];
        if (done[i] || (use && !use[i]) || !modelled(p)) continue;
        size_t n = 0;
        for (size_t j = i; j < s->n; j++)
            if (!done[j] && (!use || use[j]) && modelled(&s->pts[j]) &&
                same_family(p, &s->pts[j])) {
                done[j] = true;
                idx[n++] = j;
            }
        v = pp_xrealloc(v, (nv + 1) * sizeof *v);
        if ((rc = fit_family(s, idx, n, &v[nv], e)) < 0) {
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

const pp_cal_rankfit *pp__cal_rankfit_find(const pp_cal_rankfit *v, size_t n,
                                           const pp_cal_point *p) {
    for (size_t i = 0; i < n; i++)
        if (v[i].scope == p->scope && !strcmp(v[i].op, p->op) &&
            !strcmp(v[i].algo, p->algo) && !strcmp(v[i].link, p->link) &&
            p->kind == PP_CAL_COLL && v[i].beta_Bps > 0)
            return &v[i];
    return NULL;
}

/* Leave one rank count out: fit the rank model on every other count and
 * predict the held-out one. */
int pp_cal_validate_ranks(const pp_cal_set *s, const bool *use, int64_t held,
                          pp_cal_validation *out, pp_error *e) {
    pp_cal_validation v;
    memset(&v, 0, sizeof v);
    v.v = pp_xcalloc(s->n ? s->n : 1, sizeof *v.v);
    bool *fit_use = pp_xmalloc((s->n ? s->n : 1) * sizeof *fit_use);
    for (size_t i = 0; i < s->n; i++)
        fit_use[i] = (!use || use[i]) && s->pts[i].ranks != held;
    pp_cal_rankfit *rf = NULL;
    size_t nr = 0;
    int rc = pp_cal_fit_net_ranks(s, fit_use, &rf, &nr, e);
    free(fit_use);
    if (rc < 0) {
        free(v.v);
        return rc;
    }
    for (size_t i = 0; i < s->n; i++) {
        const pp_cal_point *p = &s->pts[i];
        if ((use && !use[i]) || p->ranks != held || !modelled(p)) continue;
        const pp_cal_rankfit *f = pp__cal_rankfit_find(rf, nr, p);
        if (!f) {
            v.skipped++;
            continue;
        }
        pp_cal_vpoint *x = &v.v[v.n++];
        x->idx = i;
        x->measured_s = p->time_s;
        x->predicted_s = pp_cal_rankfit_time(f, p->ranks, p->bytes);
        x->error = x->predicted_s / x->measured_s - 1;
        x->fold = -1;
        double a = fabs(x->error);
        v.mean_abs += a;
        if (a > v.max_abs) v.max_abs = a;
    }
    if (v.n) v.mean_abs /= (double)v.n;
    for (size_t i = 0; i < nr; i++) pp_cal_fit_fini(&rf[i].fit);
    free(rf);
    *out = v;
    return 0;
}
