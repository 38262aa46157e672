/*
 * models/vocab.c: the registries of podplan/vocab.h, the nccl-tests
 * bus-bandwidth factors and rank placement.
 */
#include "podplan/vocab.h"

#include <stdio.h>
#include <string.h>

#include "podplan/models.h"

#define PP__CHOICE(e, n, h) {n, h},
#define PP__NAME(e, n, h) n,
#define PP__REGISTRY(var, what, MAP)                                           \
    static const pp_choice var##_items[] = {MAP(PP__CHOICE)};                  \
    static const char *const var##_names[] = {MAP(PP__NAME) NULL};             \
    const pp_registry var = {what, var##_items,                                \
                             (int)(sizeof var##_items / sizeof *var##_items),  \
                             var##_names};

PP__REGISTRY(pp_reg_coll_op, "collective op", PP_COLL_OP_MAP)
PP__REGISTRY(pp_reg_coll_algo, "collective algorithm", PP_COLL_ALGO_MAP)
PP__REGISTRY(pp_reg_fidelity, "fidelity", PP_FIDELITY_MAP)
PP__REGISTRY(pp_reg_schedule, "schedule", PP_SCHED_MAP)
PP__REGISTRY(pp_reg_recompute, "recompute", PP_RECOMPUTE_MAP)
PP__REGISTRY(pp_reg_optimizer, "optimizer", PP_OPT_MAP)
PP__REGISTRY(pp_reg_prec, "dtype", PP_PREC_MAP)
PP__REGISTRY(pp_reg_attn, "attn", PP_ATTN_MAP)
PP__REGISTRY(pp_reg_dispatch, "dispatcher", PP_DISPATCH_MAP)
PP__REGISTRY(pp_reg_permute, "permute", PP_PERMUTE_MAP)
PP__REGISTRY(pp_reg_fp8, "fp8", PP_FP8_MAP)
PP__REGISTRY(pp_reg_cp_comm, "cp_comm", PP_CPCOMM_MAP)

const char *pp_registry_name(const pp_registry *r, int v) {
    return v >= 0 && v < r->n ? r->items[v].name : "?";
}

int pp_registry_find(const pp_registry *r, const char *name) {
    if (!name) return -1;
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->items[i].name, name) == 0) return i;
    return -1;
}

char *pp_registry_choices(const pp_registry *r, char *buf, size_t len) {
    size_t at = 0;
    if (len == 0) return buf;
    buf[0] = '\0';
    for (int i = 0; i < r->n && at + 1 < len; i++) {
        int w = snprintf(buf + at, len - at, "%s%s", i ? "|" : "",
                         r->items[i].name);
        if (w < 0) break;
        at += (size_t)w;
    }
    return buf;
}

int pp_registry_parse(const pp_registry *r, const char *field, const char *name,
                      int *out, pp_error *e) {
    const char *near;
    int v = pp_name_find(name, r->names, &near);
    if (v >= 0) {
        *out = v;
        return 0;
    }
    char choices[256], expected[270];
    pp_registry_choices(r, choices, sizeof choices);
    snprintf(expected, sizeof expected, "one of %s", choices);
    return pp_name_error(e, PP_EUSAGE, field ? field : r->what, expected,
                         name ? name : "", near);
}

const char *pp_coll_op_name(pp_coll_op op) {
    return pp_registry_name(&pp_reg_coll_op, (int)op);
}
const char *pp_coll_algo_name(pp_coll_algo a) {
    return pp_registry_name(&pp_reg_coll_algo, (int)a);
}
const char *pp_fidelity_name(pp_fidelity f) {
    return pp_registry_name(&pp_reg_fidelity, (int)f);
}
const char *pp_schedule_name(pp_schedule s) {
    return pp_registry_name(&pp_reg_schedule, (int)s);
}
const char *pp_recompute_name(pp_recompute r) {
    return pp_registry_name(&pp_reg_recompute, (int)r);
}
const char *pp_optimizer_name(pp_optimizer o) {
    return pp_registry_name(&pp_reg_optimizer, (int)o);
}

double pp_coll_busbw_factor(pp_coll_op op, size_t n) {
    if (n == 0) return 0;
    double nn = (double)n;
    switch (op) {
    case PP_COLL_ALLREDUCE: return 2.0 * (nn - 1) / nn;
    case PP_COLL_ALLGATHER:
    case PP_COLL_REDUCESCATTER:
    case PP_COLL_ALLTOALL: return (nn - 1) / nn;
    case PP_COLL_BROADCAST:
    case PP_COLL_SENDRECV: return 1.0;
    default: return 0;
    }
}

/* ------------------------------------------------------------------------
 * Placement.
 * ---------------------------------------------------------------------- */
int pp_placement_parse(const char *text, char order[3], pp_error *e) {
    char o[3];
    int n = 0;
    const char *s = text;
    while (s && *s) {
        while (*s == ' ') s++;
        const char *c = s;
        while (*c && *c != ',') c++;
        size_t len = (size_t)(c - s);
        while (len && s[len - 1] == ' ') len--;
        char k = 0;
        if (len == 2 && s[0] == 't' && s[1] == 'p')
            k = 't';
        else if (len == 2 && s[0] == 'p' && s[1] == 'p')
            k = 'p';
        else if (len == 2 && s[0] == 'd' && s[1] == 'p')
            k = 'd';
        if (!k || n == 3)
            return pp_error_set(e, PP_EUSAGE,
                                "--placement: expected a permutation of "
                                "tp,pp,dp (innermost first), got \"%s\"",
                                text);
        for (int i = 0; i < n; i++)
            if (o[i] == k)
                return pp_error_set(e, PP_EUSAGE,
                                    "--placement: %.2s given twice in "
                                    "\"%s\"",
                                    s, text);
        o[n++] = k;
        s = *c ? c + 1 : c;
    }
    if (n != 3)
        return pp_error_set(e, PP_EUSAGE,
                            "--placement: expected a permutation of "
                            "tp,pp,dp (innermost first), got \"%s\"",
                            text ? text : "");
    order[0] = o[0];
    order[1] = o[1];
    order[2] = o[2];
    return 0;
}

int64_t pp_placement_rank3(int64_t tp, int64_t pp, int64_t dp,
                           const char order[3], int64_t t, int64_t p,
                           int64_t d) {
    int64_t r = 0, stride = 1;
    for (int i = 0; i < 3; i++) {
        int64_t idx, deg;
        switch (order[i]) {
        case 't':
            idx = t;
            deg = tp;
            break;
        case 'p':
            idx = p;
            deg = pp;
            break;
        default:
            idx = d;
            deg = dp;
            break;
        }
        r += idx * stride;
        stride *= deg;
    }
    return r;
}

int64_t pp_placement_rank(const pp_parallel *par, const char order[3],
                          int64_t t, int64_t p, int64_t d) {
    return pp_placement_rank3(par->tp, par->pp, par->dp, order, t, p, d);
}
