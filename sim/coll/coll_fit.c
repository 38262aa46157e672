/*
 * coll_fit.c: a profile's fitted network (hw.h's pp_net_fit, written by
 * `podplan calibrate fit`) as the time of a collective.
 *
 * An entry is t(S) = alpha + S/beta for one collective, algorithm and
 * group size as measured (nccl-tests or `podplan exec`).  For another
 * group size of the same algorithm the entry is rescaled by the
 * algorithm's step count and per-rank bytes, the rank model that
 * calibrate/fit_ranks.c fits (pp_coll_rank_terms below):
 * t(n, S) = steps(n) a + bw(n) S / b, so
 *   t(n) = alpha steps(n)/steps(n0) + (S/beta) bw(n)/bw(n0).
 * How a collective uses the time (collective.c): at analytic fidelity it
 * is the collective's time; at flow fidelity the transfers still run on
 * the cluster's links and the fit is a floor: alpha is the least latency
 * and beta the most bandwidth the measured machine reached, contention
 * can only make it slower.
 */
#include <math.h>
#include <string.h>

#include "podplan/coll.h"

bool pp_coll_rank_terms(const char *op, const char *algo, int64_t n,
                        double *steps, double *bw) {
    if (n < 2) return false;
    double m = (double)n;
    /* "auto" is NCCL's choice: a ring for the large messages that set
     * beta (its small-message line is a knee, not another algorithm). */
    if (!strcmp(algo, "ring") || !strcmp(algo, "auto")) {
        if (!strcmp(op, "allreduce")) {
            *steps = 2 * (m - 1);
            *bw = 2 * (m - 1) / m;
            return true;
        }
        if (!strcmp(op, "allgather") || !strcmp(op, "reducescatter")) {
            *steps = m - 1;
            *bw = (m - 1) / m;
            return true;
        }
        return false;
    }
    /* exec's recursive doubling folds a non-power-of-two group into the
     * largest power of two below it, like MPICH: two extra steps; every
     * step sends the whole buffer. */
    if (!strcmp(algo, "rd") && !strcmp(op, "allreduce")) {
        int lg = 0;
        int64_t p = 1;
        while (p * 2 <= n) p *= 2, lg++;
        *steps = lg + (p < n ? 2 : 0);
        *bw = *steps;
        return true;
    }
    return false;
}

/* Whether entry f can time a group of `ranks`. */
static bool covers(const pp_net_fit *f, int64_t ranks) {
    double s, b;
    return f->ranks == ranks || f->ranks == 0 ||
           (pp_coll_rank_terms(f->op, f->algo, f->ranks, &s, &b) &&
            pp_coll_rank_terms(f->op, f->algo, ranks, &s, &b));
}

const pp_net_fit *pp_coll_fit_find(const pp_net_fit *v, size_t n,
                                   const char *op, const char *algo,
                                   pp_net_scope scope, int64_t ranks) {
    const pp_net_fit *best = NULL;
    double best_score = INFINITY;
    for (size_t i = 0; i < n; i++) {
        const pp_net_fit *f = &v[i];
        if (strcmp(f->op, op) || !covers(f, ranks)) continue;
        bool exact_algo = !strcmp(f->algo, algo);
        if (!exact_algo && strcmp(f->algo, "auto")) continue;
        if (f->scope != PP_NET_SCOPE_ANY && scope != PP_NET_SCOPE_ANY &&
            f->scope != scope)
            continue;
        /* Lower is better: the algorithm asked for before NCCL's choice,
         * then the group size measured (exact, any, then nearest by
         * ratio, a larger group before a smaller at the same ratio), then
         * the stated scope before an unknown one, then file order. */
        double d = f->ranks == ranks ? 0
                   : f->ranks == 0
                       ? 0.5
                       : 1 + fabs(log((double)f->ranks / (double)ranks)) -
                             (f->ranks > ranks ? 1e-9 : 0);
        double score = (exact_algo ? 0 : 1000) + d +
                       (f->scope == PP_NET_SCOPE_ANY ? 1e-3 : 0);
        if (score < best_score) {
            best_score = score;
            best = f;
        }
    }
    return best;
}

double pp_coll_fit_time_s(const pp_net_fit *f, int64_t ranks, double bytes) {
    bool lo = f->knee_bytes > 0 && bytes <= f->knee_bytes && f->beta_lo_Bps > 0;
    double a = lo ? f->alpha_lo_s : f->alpha_s;
    double b = lo ? f->beta_lo_Bps : f->beta_Bps;
    if (!(b > 0)) return NAN;
    double sa = 1, sb = 1, s0, b0, s1, b1;
    if (f->ranks > 0 && f->ranks != ranks &&
        pp_coll_rank_terms(f->op, f->algo, f->ranks, &s0, &b0) &&
        pp_coll_rank_terms(f->op, f->algo, ranks, &s1, &b1)) {
        sa = s1 / s0;
        sb = b1 / b0;
    }
    return a * sa + bytes / b * sb;
}
