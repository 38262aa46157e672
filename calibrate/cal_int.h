/*
 * cal_int.h: private to calibrate/.
 */
#ifndef PODPLAN_CAL_INT_H
#define PODPLAN_CAL_INT_H

#include "podplan/calibrate.h"

#include <stdint.h>

/* SHA-256 of a buffer as 64 hex digits and a NUL. */
void pp__sha256_hex(const void *data, size_t len, char out[65]);

/* Appends a source (takes a copy of path); returns its index. */
int pp__cal_add_source(pp_cal_set *s, const char *path, const char *format,
                       const void *data, size_t len);
/* Appends a point (copied). */
void pp__cal_add_point(pp_cal_set *s, const pp_cal_point *p);
void pp__cal_point_init(pp_cal_point *p, pp_cal_kind kind, int source,
                        int line);
void pp__cal_strcpy(char *dst, const char *src); /* into PP_CAL_STR */
/* Appends parameter `name` = v +- se to a fit (ignored past
 * PP_CAL_MAX_PARAMS). */
void pp__cal_set_param(pp_cal_fit *f, const char *name, double v, double se);

/* Importers: append to s (the caller rolls back on error). */
int pp__cal_import_nccl(pp_cal_set *s, int src, const char *name,
                        const char *text, const pp_cal_hints *h, pp_error *e);
int pp__cal_import_perftest(pp_cal_set *s, int src, const char *name,
                            const char *text, const pp_cal_hints *h,
                            pp_error *e);
int pp__cal_import_megatron(pp_cal_set *s, int src, const char *name,
                            const char *text, const pp_cal_hints *h,
                            pp_error *e);
int pp__cal_import_csv(pp_cal_set *s, int src, const char *name,
                       const char *text, pp_error *e);
/* The collective of an nccl-tests binary named in `text`
 * ("all_reduce_perf" -> "allreduce"), NULL when none. */
const char *pp__cal_nccl_op(const char *text);
/* nccl-tests' own JSON (-J FILE.json): import_nccl_json.c.  root is a
 * jansson json_t. */
struct json_t;
bool pp__cal_is_nccl_json(struct json_t *root);
int pp__cal_import_nccl_json(pp_cal_set *s, int src, const char *name,
                             struct json_t *root, const pp_cal_hints *h,
                             pp_error *e);
int pp__cal_import_json(pp_cal_set *s, int src, const char *name,
                        const char *text, size_t len, const pp_cal_hints *h,
                        pp_error *e);
int pp__cal_import_yaml(pp_cal_set *s, int src, const char *name,
                        const char *text, size_t len, pp_error *e);

/* Lines of a text: next line into buf (without newline); returns false at
 * the end.  *pos advances. */
bool pp__cal_getline(const char *text, size_t *pos, char *buf, size_t len);
/* Splits on blanks in place; returns the count (at most max). */
int pp__cal_split(char *line, char **tok, int max);
/* A whole finite number. */
bool pp__cal_number(const char *t, double *out);

/* Weighted linear least squares y = X c with weights w (1/var):
 * n points, p columns (row-major X).  c, cov (p x p) and chi2 out.
 * Returns 0 or PP_EFAIL with GSL's message. */
int pp__cal_wls(size_t n, size_t p, const double *X, const double *y,
                const double *w, double *c, double *cov, double *chi2,
                pp_error *e);

/* The network fit of a group, for validation. */
double pp__cal_netfit_time(const pp_cal_netfit *f, double bytes);
/* The fit that covers a network point, or NULL. */
const pp_cal_netfit *pp__cal_netfit_find(const pp_cal_netfit *v, size_t n,
                                         const pp_cal_point *p);
/* The rank model that covers a COLL point, or NULL. */
const pp_cal_rankfit *pp__cal_rankfit_find(const pp_cal_rankfit *v, size_t n,
                                           const pp_cal_point *p);
/* GEMM/MEMBW time of a point under g (framework efficiency ignored: a
 * micro-benchmark is not the training loop). */
double pp__cal_gemm_pred(const pp_gpu_profile *g, const pp_cal_point *p);
/* Whether a GEMM/MEMBW point informs the GPU profile (a GPU, 16-bit). */
bool pp__cal_gpu_point(const pp_cal_point *p);
double pp__cal_mem_pred(const pp_gpu_profile *g, const pp_cal_point *p);

/* Variance of each point's time for weighting: from repeats at the same
 * key (same group and size), else its stated sd, else (rel x t)^2. */
void pp__cal_variances(const pp_cal_set *s, const size_t *idx, size_t n,
                       double rel, double *var, bool *assumed);

#endif
