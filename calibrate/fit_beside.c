/*
 * calibrate/fit_beside.c: how much slower compute runs while
 * communication kernels hold some of the SMs, two ways.  Both pair each
 * GEMM timed beside K held SMs with the same GEMM timed alone (its twin)
 * and keep, per K, one time factor.
 *
 * compute_beside_comm: GEMMs aimed at all but K SMs (`exec gemm
 * --reserve-sms K`, cuBLASLt's SM count target), the K SMs idle.  Per K
 * the mean of the per-shape ratios, so that a 13 ms GEMM does not
 * outweigh a 0.1 ms one.  Only shapes that take at least MIN_ALONE_S
 * alone count: below that the launch and the timer weigh (the H100's
 * 1024^3 runs in 9 us), and small batches that do not fill the SMs say
 * little about taking some away.
 *
 * compute_beside_nccl: GEMMs issued as the frameworks issue them beside a
 * copy kernel on K SMs (`exec gemm --load-sms K`), as a NCCL collective's
 * channels run beside a layer's GEMMs.  Per K the summed time of the
 * loaded GEMMs over their twins' alone: a layer pays the sum, so here a
 * 13 ms GEMM weighs more than a 0.1 ms one (and no floor on the time
 * alone is needed).  The load counts when it copied flat out or at
 * LOAD_MIN_BPS and more (a NCCL channel moves data as fast as it can; on
 * the H100, 0 to 1 TB/s moved the factors under 2%).  The attention's
 * batched products (exec gemm --model's "attn scores" and "attn values"
 * and their gradients) are left out: FlashAttention runs them in
 * training.
 *
 * Any dtype: the ratio is what is kept, not a rate.
 */
#include "cal_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIN_ALONE_S 50e-6
#define LOAD_MIN_BPS 1e12

static bool gpu_gemm(const pp_cal_point *p, const bool *use, size_t i) {
    return p->kind == PP_CAL_GEMM && (!use || use[i]) && !p->streams &&
           (!p->device[0] || !strcmp(p->device, "cuda")) && p->time_s > 0;
}

/* Timed alone: all SMs, no load. */
static bool alone(const pp_cal_point *p) {
    return !p->sms_reserved && !p->load_sms;
}

static bool same_shape(const pp_cal_point *a, const pp_cal_point *b) {
    return a->m == b->m && a->n == b->n && a->k == b->k &&
           a->batch == b->batch && !strcmp(a->dtype, b->dtype) &&
           !strcmp(a->device, b->device);
}

/* The point timed alone with a's shape, or -1: the first of a's name
 * where a has one (a layer's forward GEMM and its weight gradient may
 * share a shape and not a time: cuBLAS runs them with other transposes),
 * else the first. */
static long twin(const pp_cal_set *s, const bool *use, const pp_cal_point *a) {
    long any = -1;
    for (size_t j = 0; j < s->n; j++) {
        const pp_cal_point *b = &s->pts[j];
        if (!gpu_gemm(b, use, j) || !alone(b) || !same_shape(a, b)) continue;
        if (!a->op[0] || !strcmp(a->op, b->op)) return (long)j;
        if (any < 0) any = (long)j;
    }
    return any;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* What one of the two fits takes from the set. */
typedef struct kind {
    /* cond: what a pair needs beyond its time alone (min_alone_s) */
    const char *what, *flag, *cond;
    /* K of a point it measures, 0 for the others */
    int64_t (*k_of)(const pp_cal_point *p);
    double min_alone_s;
    bool weighted; /* summed times (true) or the mean of the ratios */
} kind;

static int64_t reserved_k(const pp_cal_point *p) {
    return p->load_sms ? 0 : p->sms_reserved;
}

static bool attn_bmm(const pp_cal_point *p) {
    return p->batch > 1 && (!strncmp(p->op, "attn scores", 11) ||
                            !strncmp(p->op, "attn values", 11));
}

static int64_t load_k(const pp_cal_point *p) {
    bool busy = p->load_rate_asked < 0 || p->load_rate_asked >= LOAD_MIN_BPS;
    return !p->sms_reserved && !attn_bmm(p) && busy ? p->load_sms : 0;
}

/* Fits table (of *n_table points) as kind k says; f->n_params 0 and the
 * advice when no pair is found, table untouched. */
static void fit_pairs(const pp_cal_set *s, const bool *use, const kind *k,
                      pp_beside_pt *table, size_t *n_table, pp_cal_fit *f) {
    size_t n = 0, nk = 0, short_ = 0, cap = s->n ? s->n : 1;
    int64_t ks[PP_PROFILE_BESIDE];
    memset(f, 0, sizeof *f);
    snprintf(f->what, sizeof f->what, "%s", k->what);
    f->r2 = f->chi2_dof = NAN;
    f->idx = pp_xmalloc(cap * sizeof *f->idx);
    f->resid = pp_xmalloc(cap * sizeof *f->resid);
    long *tw = pp_xmalloc(cap * sizeof *tw);
    /* The pairs, and the distinct K (the first PP_PROFILE_BESIDE). */
    for (size_t i = 0; i < s->n; i++) {
        const pp_cal_point *a = &s->pts[i];
        int64_t ka = gpu_gemm(a, use, i) ? k->k_of(a) : 0;
        if (ka <= 0) continue;
        long j = twin(s, use, a);
        if (j < 0) continue;
        if (s->pts[j].time_s < k->min_alone_s) {
            short_++;
            continue;
        }
        size_t q = 0;
        while (q < nk && ks[q] != ka) q++;
        if (q == nk) {
            if (nk == PP_PROFILE_BESIDE) continue;
            ks[nk++] = ka;
        }
        f->idx[n] = i;
        tw[n++] = j;
    }
    qsort(ks, nk, sizeof *ks, cmp_i64);
    size_t l = 0;
    if (n == 0) {
        char cond[64];
        if (k->min_alone_s > 0)
            snprintf(cond, sizeof cond, "at least %.0f us alone",
                     k->min_alone_s * 1e6);
        else
            snprintf(cond, sizeof cond, "%s", k->cond);
        snprintf(f->advice, sizeof f->advice,
                 "no GEMM timed both alone and with %s (%s%s): %s kept",
                 k->flag, cond, short_ ? "; shorter ones left out" : "",
                 k->what);
        free(tw);
        return;
    }
    /* Per K the factor, sum(w r) with r a pair's ratio and w 1/c (the
     * mean) or the twin's share of the twins' time (the summed times),
     * and its standard error, sqrt(c/(c-1) sum(w^2 d^2)) with d = r -
     * factor (the mean's usual one when w = 1/c); a point's residual is
     * the factor over its own ratio. */
    double rr = 0;
    bool clamped = false;
    for (size_t q = 0; q < nk; q++) {
        double t0 = 0, mean = 0, v = 0;
        size_t c = 0;
        for (size_t i = 0; i < n; i++)
            if (k->k_of(&s->pts[f->idx[i]]) == ks[q]) {
                t0 += s->pts[tw[i]].time_s;
                c++;
            }
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < n; i++) {
                if (k->k_of(&s->pts[f->idx[i]]) != ks[q]) continue;
                double t = s->pts[tw[i]].time_s,
                       r = s->pts[f->idx[i]].time_s / t,
                       w = k->weighted ? t / t0 : 1.0 / (double)c;
                if (pass == 0)
                    mean += w * r;
                else
                    v += w * w * (r - mean) * (r - mean);
            }
        double se =
            c > 1 && v > 0 ? sqrt((double)c / (double)(c - 1) * v) : NAN;
        /* A profile's time factor is at least 1 (pp_profile_load). */
        if (mean < 1) {
            mean = 1;
            clamped = true;
        }
        char name[PP_CAL_STR];
        snprintf(name, sizeof name, "time_%lld_sms", (long long)ks[q]);
        pp__cal_set_param(f, name, mean, se);
        table[q].sms = (double)ks[q];
        table[q].time = mean;
        for (size_t i = 0; i < n; i++)
            if (k->k_of(&s->pts[f->idx[i]]) == ks[q]) {
                f->resid[i] =
                    mean * s->pts[tw[i]].time_s / s->pts[f->idx[i]].time_s - 1;
                rr += f->resid[i] * f->resid[i];
            }
    }
    *n_table = nk;
    f->n_points = n;
    f->rel_rms = sqrt(rr / (double)n);
    if (short_)
        l += (size_t)snprintf(f->advice + l, sizeof f->advice - l,
                              "%zu pairs under %.0f us alone left out", short_,
                              k->min_alone_s * 1e6);
    if (clamped && l < sizeof f->advice)
        snprintf(f->advice + l, sizeof f->advice - l,
                 "%sa factor under 1 was kept at 1", l ? "; " : "");
    free(tw);
}

int pp_cal_fit_beside(const pp_cal_set *s, const bool *use, pp_gpu_profile *g,
                      pp_cal_fit *f, pp_error *e) {
    static const kind k = {"compute_beside_comm",
                           "--reserve-sms",
                           NULL,
                           reserved_k,
                           MIN_ALONE_S,
                           false};
    (void)e;
    fit_pairs(s, use, &k, g->beside_comm, &g->n_beside_comm, f);
    return 0;
}

int pp_cal_fit_beside_nccl(const pp_cal_set *s, const bool *use,
                           pp_gpu_profile *g, pp_cal_fit *f, pp_error *e) {
    static const kind k = {"compute_beside_nccl",
                           "--load-sms",
                           "flat out or at 1 TB/s and more",
                           load_k,
                           0,
                           true};
    (void)e;
    fit_pairs(s, use, &k, g->beside_nccl, &g->n_beside_nccl, f);
    if (f->n_params == 0) return 0;
    /* Measured here: read on another GPU at the same share of its SMs. */
    g->beside_nccl_on = g->sms > 0 ? g->sms : 0;
    if (!(g->sms > 0)) {
        size_t l = strlen(f->advice);
        snprintf(f->advice + l, sizeof f->advice - l,
                 "%sthe profile states no SM count: not read at another "
                 "GPU's share of its SMs",
                 l ? "; " : "");
    }
    return 0;
}
