/*
 * measure.c: the measurement set, its JSON form, and the small helpers the
 * importers and fits share (lines, numbers, weighted least squares).
 */
#include "cal_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <jansson.h>

void pp_cal_gsl_init(void) {
    gsl_set_error_handler_off();
}

static const char *const kind_names[PP_CAL__KINDS] = {
    "collective", "p2p", "gemm", "membw", "iteration"};
static const char *const scope_names[] = {"unknown", "intra", "inter"};

const char *pp_cal_kind_name(pp_cal_kind k) {
    return k >= 0 && k < PP_CAL__KINDS ? kind_names[k] : "?";
}
const char *pp_cal_scope_name(pp_cal_scope s) {
    return s >= 0 && s <= PP_CAL_SCOPE_INTER ? scope_names[s] : "?";
}

void pp_cal_set_init(pp_cal_set *s) {
    memset(s, 0, sizeof *s);
}

void pp_cal_set_fini(pp_cal_set *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n_src; i++) free(s->src[i].path);
    free(s->src);
    free(s->pts);
    memset(s, 0, sizeof *s);
}

void pp__cal_strcpy(char *dst, const char *src) {
    snprintf(dst, PP_CAL_STR, "%s", src ? src : "");
}

int pp__cal_add_source(pp_cal_set *s, const char *path, const char *format,
                       const void *data, size_t len) {
    PP_VEC_RESERVE(s->src, s->cap_src, s->n_src + 1, 8);
    pp_cal_source *x = &s->src[s->n_src];
    memset(x, 0, sizeof *x);
    x->path = pp_xstrdup(path);
    snprintf(x->format, sizeof x->format, "%s", format);
    if (data) pp__sha256_hex(data, len, x->sha256);
    return (int)s->n_src++;
}

void pp__cal_point_init(pp_cal_point *p, pp_cal_kind kind, int source,
                        int line) {
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->source = source;
    p->line = line;
    p->batch = 1;
    p->load_rate_asked = -1; /* a load's rate when none is said: flat out */
}

void pp__cal_add_point(pp_cal_set *s, const pp_cal_point *p) {
    PP_VEC_RESERVE(s->pts, s->cap, s->n + 1, 64);
    s->pts[s->n++] = *p;
}

const char *pp_cal_point_loc(const pp_cal_set *s, const pp_cal_point *p,
                             char *buf, size_t len) {
    const char *f = p->source >= 0 && (size_t)p->source < s->n_src
                        ? s->src[p->source].path
                        : "?";
    if (p->line > 0)
        snprintf(buf, len, "%s:%d", f, p->line);
    else if (p->where[0])
        snprintf(buf, len, "%s:%s", f, p->where);
    else
        snprintf(buf, len, "%s", f);
    return buf;
}

/* ------------------------------------------------------------------------
 * Text helpers.
 * ---------------------------------------------------------------------- */
bool pp__cal_getline(const char *text, size_t *pos, char *buf, size_t len) {
    size_t i = *pos;
    if (!text[i]) return false;
    size_t j = i;
    while (text[j] && text[j] != '\n') j++;
    size_t n = j - i;
    if (n && text[j - 1] == '\r') n--;
    if (n >= len) n = len - 1;
    memcpy(buf, text + i, n);
    buf[n] = '\0';
    *pos = text[j] ? j + 1 : j;
    return true;
}

int pp__cal_split(char *line, char **tok, int max) {
    int n = 0;
    char *p = line;
    while (*p && n < max) {
        while (*p && isspace((unsigned char)*p)) p++;
        if (!*p) break;
        tok[n++] = p;
        while (*p && !isspace((unsigned char)*p)) p++;
        if (*p) *p++ = '\0';
    }
    return n;
}

bool pp__cal_number(const char *t, double *out) {
    if (!t || !*t) return false;
    char *end;
    errno = 0;
    double v = strtod(t, &end);
    if (*end || errno || !isfinite(v)) return false;
    *out = v;
    return true;
}

/* ------------------------------------------------------------------------
 * Weighted least squares (GSL).
 * ---------------------------------------------------------------------- */
int pp__cal_wls(size_t n, size_t p, const double *X, const double *y,
                const double *w, double *c, double *cov, double *chi2,
                pp_error *e) {
    pp_cal_gsl_init();
    if (n < p)
        return pp_error_set(e, PP_EFAIL,
                            "least squares: %zu points for %zu "
                            "parameters",
                            n, p);
    gsl_matrix *gX = gsl_matrix_alloc(n, p), *gC = gsl_matrix_alloc(p, p);
    gsl_vector *gy = gsl_vector_alloc(n), *gw = gsl_vector_alloc(n),
               *gc = gsl_vector_alloc(p);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, p);
    int rc = 0;
    if (!gX || !gC || !gy || !gw || !gc || !ws) pp_oom();
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < p; j++) gsl_matrix_set(gX, i, j, X[i * p + j]);
        gsl_vector_set(gy, i, y[i]);
        gsl_vector_set(gw, i, w[i]);
    }
    int g = gsl_multifit_wlinear(gX, gw, gy, gc, gC, chi2, ws);
    if (g) {
        rc = pp_error_set(e, PP_EFAIL, "gsl_multifit_wlinear: %s",
                          gsl_strerror(g));
    } else {
        for (size_t j = 0; j < p; j++) {
            c[j] = gsl_vector_get(gc, j);
            for (size_t k = 0; k < p; k++)
                cov[j * p + k] = gsl_matrix_get(gC, j, k);
        }
    }
    gsl_multifit_linear_free(ws);
    gsl_vector_free(gc);
    gsl_vector_free(gw);
    gsl_vector_free(gy);
    gsl_matrix_free(gC);
    gsl_matrix_free(gX);
    return rc;
}

/* Points with the same key are repeats of one measurement. */
static bool same_key(const pp_cal_point *a, const pp_cal_point *b) {
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case PP_CAL_COLL:
    case PP_CAL_P2P:
        return a->bytes == b->bytes && a->ranks == b->ranks &&
               a->scope == b->scope && !strcmp(a->op, b->op) &&
               !strcmp(a->algo, b->algo) && !strcmp(a->link, b->link);
    case PP_CAL_GEMM:
        return a->m == b->m && a->n == b->n && a->k == b->k &&
               a->batch == b->batch;
    case PP_CAL_MEMBW: return a->bytes == b->bytes;
    default: return false;
    }
}

/* Repeats (points with the same key) measure the noise.  Few repeats of
 * each size give wild variances (two that agree to the printed digits say
 * "no noise"), so the relative variances of all sizes are pooled: the
 * noise is taken to be a fixed fraction of the time, var_i = c^2 t_i^2,
 * c^2 the dof-weighted mean of each size's s^2 / mean^2.  A stated spread
 * (time_sd_s) is used where it is larger.  Without repeats or spreads,
 * rel is assumed and *assumed is set (the caller then scales the
 * covariance by the observed scatter). */
void pp__cal_variances(const pp_cal_set *s, const size_t *idx, size_t n,
                       double rel, double *var, bool *assumed) {
    double c2_sum = 0, dof = 0;
    bool *seen = pp_xcalloc(n ? n : 1, sizeof *seen);
    bool any_sd = false;
    for (size_t i = 0; i < n; i++) {
        const pp_cal_point *p = &s->pts[idx[i]];
        if (p->time_sd_s > 0) any_sd = true;
        if (seen[i]) continue;
        double sum = 0, sum2 = 0;
        size_t m = 0;
        for (size_t j = i; j < n; j++) {
            const pp_cal_point *q = &s->pts[idx[j]];
            if (seen[j] || !same_key(p, q)) continue;
            seen[j] = true;
            sum += q->time_s;
            sum2 += q->time_s * q->time_s;
            m++;
        }
        if (m >= 2) {
            double mean = sum / (double)m;
            double v = (sum2 - (double)m * mean * mean) / (double)(m - 1);
            if (v < 0) v = 0;
            c2_sum += (double)(m - 1) * v / (mean * mean);
            dof += (double)(m - 1);
        }
    }
    free(seen);
    double c2 = dof > 0 ? c2_sum / dof : 0;
    /* Repeats that all agree exactly: a floor of a tenth of rel. */
    if (dof > 0 && c2 < 0.01 * rel * rel) c2 = 0.01 * rel * rel;
    *assumed = dof == 0 && !any_sd;
    for (size_t i = 0; i < n; i++) {
        const pp_cal_point *p = &s->pts[idx[i]];
        double t = p->time_s, v = dof > 0 ? c2 * t * t : 0;
        double sd2 = p->time_sd_s * p->time_sd_s;
        if (sd2 > v) v = sd2;
        if (v <= 0) v = rel * rel * t * t;
        var[i] = v;
    }
}

/* ------------------------------------------------------------------------
 * The set as JSON.
 * ---------------------------------------------------------------------- */
static void put_s(json_t *o, const char *k, const char *v) {
    if (v && *v) json_object_set_new(o, k, json_string(v));
}
static void put_n(json_t *o, const char *k, double v) {
    if (v != 0 && isfinite(v)) json_object_set_new(o, k, json_real(v));
}
static void put_i(json_t *o, const char *k, int64_t v) {
    if (v) json_object_set_new(o, k, json_integer(v));
}

int pp_cal_set_write(const pp_cal_set *s, FILE *fp, pp_error *e) {
    json_t *root = json_object(), *src = json_array(), *pts = json_array();
    json_object_set_new(root, "podplan_measurements", json_integer(1));
    for (size_t i = 0; i < s->n_src; i++) {
        json_t *o = json_object();
        put_s(o, "file", s->src[i].path);
        put_s(o, "format", s->src[i].format);
        put_s(o, "sha256", s->src[i].sha256);
        json_array_append_new(src, o);
    }
    for (size_t i = 0; i < s->n; i++) {
        const pp_cal_point *p = &s->pts[i];
        json_t *o = json_object();
        json_object_set_new(o, "kind", json_string(pp_cal_kind_name(p->kind)));
        json_object_set_new(o, "source", json_integer(p->source));
        put_i(o, "line", p->line);
        put_s(o, "where", p->where);
        put_s(o, "op", p->op);
        put_s(o, "algo", p->algo);
        put_s(o, "link", p->link);
        put_s(o, "variant", p->variant);
        if (p->scope) put_s(o, "scope", pp_cal_scope_name(p->scope));
        put_i(o, "ranks", p->ranks);
        put_i(o, "nodes", p->nodes);
        put_n(o, "bytes", p->bytes);
        put_n(o, "m", p->m);
        put_n(o, "n", p->n);
        put_n(o, "k", p->k);
        if (p->kind == PP_CAL_GEMM) put_n(o, "batch", p->batch);
        put_i(o, "streams", p->streams);
        put_i(o, "sms_reserved", p->sms_reserved);
        if (p->load_sms > 0) {
            /* -1 (flat out) and 0 (no traffic) are both values here. */
            put_i(o, "load_sms", p->load_sms);
            json_object_set_new(o, "load_rate_asked",
                                json_real(p->load_rate_asked));
            put_n(o, "load_rate", p->load_rate);
        }
        put_s(o, "dtype", p->dtype);
        put_s(o, "device", p->device);
        put_s(o, "model", p->model);
        put_s(o, "cluster", p->cluster);
        put_s(o, "parallel", p->parallel);
        if (p->dp_overlap) json_object_set_new(o, "dp_overlap", json_true());
        put_n(o, "bucket_bytes", p->bucket_bytes);
        put_n(o, "time_s", p->time_s);
        put_n(o, "time_sd_s", p->time_sd_s);
        put_i(o, "repeats", p->repeats);
        put_n(o, "bw_Bps", p->bw_Bps);
        put_n(o, "tflops_per_gpu", p->tflops);
        json_array_append_new(pts, o);
    }
    json_object_set_new(root, "sources", src);
    json_object_set_new(root, "points", pts);
    int rc = json_dumpf(root, fp,
                        JSON_INDENT(1) | JSON_PRESERVE_ORDER |
                            JSON_REAL_PRECISION(12));
    fputc('\n', fp);
    json_decref(root);
    if (rc)
        return pp_error_set(e, PP_EIO, "writing the measurement set failed");
    return 0;
}

void pp__cal_set_param(pp_cal_fit *f, const char *name, double v, double se) {
    if (f->n_params >= PP_CAL_MAX_PARAMS) return;
    pp_cal_param *p = &f->p[f->n_params++];
    snprintf(p->name, sizeof p->name, "%s", name);
    p->value = v;
    p->se = se;
}
