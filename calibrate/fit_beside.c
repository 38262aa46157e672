/*
 * calibrate/fit_beside.c: the GPU profile's compute_beside_comm, how much
 * slower compute runs while communication kernels hold some of the SMs,
 * from GEMMs timed on all SMs and aimed at fewer (`exec gemm
 * --reserve-sms K`, cuBLASLt's SM count target).
 *
 * For each K it is the mean, over the shapes timed both ways, of the
 * time with K reserved over the time without: a ratio per shape, so that
 * a 13 ms GEMM does not outweigh a 0.1 ms one.  Only shapes that take at
 * least MIN_ALONE_S on all SMs count: below that the launch and the
 * timer weigh (the H100's 1024^3 runs in 9 us), and small batches that
 * do not fill the SMs say little about taking some away.  Any dtype: the
 * ratio is what is kept, not a rate.
 */
#include "cal_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIN_ALONE_S 50e-6

static bool gpu_gemm(const pp_cal_point *p, const bool *use, size_t i) {
    return p->kind == PP_CAL_GEMM && (!use || use[i]) && !p->streams &&
           (!p->device[0] || !strcmp(p->device, "cuda")) && p->time_s > 0;
}

static bool same_shape(const pp_cal_point *a, const pp_cal_point *b) {
    return a->m == b->m && a->n == b->n && a->k == b->k &&
           a->batch == b->batch && !strcmp(a->dtype, b->dtype) &&
           !strcmp(a->device, b->device);
}

/* The point timed on all SMs with a's shape, or -1. */
static long twin(const pp_cal_set *s, const bool *use, const pp_cal_point *a) {
    for (size_t j = 0; j < s->n; j++) {
        const pp_cal_point *b = &s->pts[j];
        if (gpu_gemm(b, use, j) && !b->sms_reserved && same_shape(a, b))
            return (long)j;
    }
    return -1;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int pp_cal_fit_beside(const pp_cal_set *s, const bool *use, pp_gpu_profile *g,
                      pp_cal_fit *f, pp_error *e) {
    (void)e;
    size_t n = 0, nk = 0, short_ = 0;
    int64_t ks[PP_PROFILE_BESIDE + 1];
    memset(f, 0, sizeof *f);
    snprintf(f->what, sizeof f->what, "compute_beside_comm");
    f->r2 = f->chi2_dof = NAN;
    f->idx = pp_xmalloc((s->n ? s->n : 1) * sizeof *f->idx);
    f->resid = pp_xmalloc((s->n ? s->n : 1) * sizeof *f->resid);
    double *ratio = pp_xmalloc((s->n ? s->n : 1) * sizeof *ratio);
    /* The pairs, and the distinct K (the first PP_PROFILE_BESIDE). */
    for (size_t i = 0; i < s->n; i++) {
        const pp_cal_point *a = &s->pts[i];
        if (!gpu_gemm(a, use, i) || a->sms_reserved <= 0) continue;
        long j = twin(s, use, a);
        if (j < 0) continue;
        if (s->pts[j].time_s < MIN_ALONE_S) {
            short_++;
            continue;
        }
        size_t q = 0;
        while (q < nk && ks[q] != a->sms_reserved) q++;
        if (q == nk) {
            if (nk == PP_PROFILE_BESIDE) continue;
            ks[nk++] = a->sms_reserved;
        }
        f->idx[n] = i;
        ratio[n++] = a->time_s / s->pts[j].time_s;
    }
    qsort(ks, nk, sizeof *ks, cmp_i64);
    if (n == 0) {
        snprintf(f->advice, sizeof f->advice,
                 "no GEMM timed both on all SMs and with --reserve-sms (at "
                 "least %.0f us alone%s): compute_beside_comm kept",
                 MIN_ALONE_S * 1e6, short_ ? "; shorter ones left out" : "");
        free(ratio);
        return 0;
    }
    /* Per K: mean and its standard error; the point's residual is the
     * profile's ratio (the mean, once set) over its own. */
    double rr = 0;
    bool clamped = false;
    for (size_t q = 0; q < nk; q++) {
        double sum = 0, sq = 0;
        size_t c = 0;
        for (size_t i = 0; i < n; i++)
            if (s->pts[f->idx[i]].sms_reserved == ks[q]) {
                sum += ratio[i];
                sq += ratio[i] * ratio[i];
                c++;
            }
        double mean = sum / (double)c;
        double var = c > 1 ? (sq - sum * mean) / (double)(c - 1) : NAN;
        double se = c > 1 && var > 0 ? sqrt(var / (double)c) : NAN;
        /* A profile's time factor is at least 1 (pp_profile_load). */
        if (mean < 1) {
            mean = 1;
            clamped = true;
        }
        char name[PP_CAL_STR];
        snprintf(name, sizeof name, "time_%lld_sms", (long long)ks[q]);
        pp__cal_set_param(f, name, mean, se);
        g->beside_comm[q].sms = (double)ks[q];
        g->beside_comm[q].time = mean;
        for (size_t i = 0; i < n; i++)
            if (s->pts[f->idx[i]].sms_reserved == ks[q]) {
                f->resid[i] = mean / ratio[i] - 1;
                rr += f->resid[i] * f->resid[i];
            }
    }
    g->n_beside_comm = nk;
    f->n_points = n;
    f->rel_rms = sqrt(rr / (double)n);
    size_t l = 0;
    if (short_)
        l += (size_t)snprintf(f->advice + l, sizeof f->advice - l,
                              "%zu pairs under %.0f us alone left out", short_,
                              MIN_ALONE_S * 1e6);
    if (clamped && l < sizeof f->advice)
        snprintf(f->advice + l, sizeof f->advice - l,
                 "%sa mean under 1 was kept at 1", l ? "; " : "");
    free(ratio);
    return 0;
}
