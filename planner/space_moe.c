/*
 * planner/space_moe.c: the context- and expert-parallel degrees the
 * search tries (space.c walks them).
 *
 * Context parallelism (Megatron-core --context-parallel-size) is for long
 * sequences: it is tried in powers of two that keep at least
 * CP_MIN_TOKENS tokens per rank and meet Megatron-core's seq % (2 cp)
 * rule.  The bound is a search limit, not a fit: below it each ring step
 * moves a K/V block whose attention is too short to hide it (the
 * per-step attention shrinks as (s/cp)^2 while the block shrinks as s/cp)
 * and NVIDIA's published recipes use CP from 8K tokens up (NeMo's Llama 3
 * 405B at seq 8192: cp=2).  It also keeps every dense model at the
 * sequence lengths the older tables use (2,048) to the layouts it always
 * had.  `--fix cp=N` tries any N the model's rules allow.
 *
 * Expert parallelism: every divisor of the expert count; the expert-TP
 * degree as Megatron-core's default (etp = tp) and, with tp > 1, etp = 1
 * (DeepSeek-V3 and Mixtral recipes run experts without TP).
 */
#include "planner_int.h"

#include <stdio.h>

#define CP_MIN_TOKENS 4096

static bool allowed(const pp__space *s, pp_plan_dim d, int64_t v) {
    return pp_plan_filter_allows(s->filter, d, v);
}

size_t pp__space_cp_degrees(const pp__space *s, int64_t *out, size_t max) {
    size_t n = 0;
    const pp_model *m = s->m;
    const pp_plan_filter *f = s->filter;
    if (f && f->fixed[PP_PLAN_DIM_CP]) {
        int64_t cp = f->value[PP_PLAN_DIM_CP];
        if (cp == 1 ||
            (m->arch == PP_ARCH_TRANSFORMER && m->seq % (2 * cp) == 0))
            out[n++] = cp;
        return n;
    }
    if (allowed(s, PP_PLAN_DIM_CP, 1)) out[n++] = 1;
    if (m->arch != PP_ARCH_TRANSFORMER) return n;
    for (int64_t cp = 2; n < max && m->seq / cp >= CP_MIN_TOKENS; cp *= 2)
        if (m->seq % (2 * cp) == 0 && allowed(s, PP_PLAN_DIM_CP, cp))
            out[n++] = cp;
    return n;
}

size_t pp__space_ep_degrees(const pp__space *s, const pp_parallel *p,
                            int64_t *out, size_t max) {
    (void)p;
    int64_t d[1344];
    size_t nd = pp__divisors(s->m->experts, d, 1344), n = 0;
    for (size_t i = 0; i < nd && n < max; i++)
        if (allowed(s, PP_PLAN_DIM_EP, d[i])) out[n++] = d[i];
    return n;
}

size_t pp__space_etp_degrees(const pp__space *s, const pp_parallel *p,
                             int64_t out[2]) {
    size_t n = 0;
    if (allowed(s, PP_PLAN_DIM_ETP, p->tp)) out[n++] = 0; /* = tp */
    if (p->tp > 1 && allowed(s, PP_PLAN_DIM_ETP, 1)) out[n++] = 1;
    return n;
}

void pp__moe_flags(const pp_model *m, const pp_parallel *q, char *buf,
                   size_t len) {
    (void)q;
    int64_t f = m->moe_layer_freq > 0 ? m->moe_layer_freq : 1;
    buf[0] = '\0';
    if (m->first_dense_layers == 0) {
        if (f > 1) snprintf(buf, len, "%lld", (long long)f);
        return;
    }
    if (f == 1) {
        snprintf(buf, len, "\"([0]*%lld+[1]*%lld)\"",
                 (long long)m->first_dense_layers,
                 (long long)(m->layers - m->first_dense_layers));
        return;
    }
    /* Both: Megatron-core takes a list; too long to spell here, so the
     * pattern is given as a Python expression of the layer index. */
    snprintf(buf, len,
             "\"([0]*%lld+[int(i%%%lld==0) for i in range(%lld,%lld)])\"",
             (long long)m->first_dense_layers, (long long)f,
             (long long)m->first_dense_layers, (long long)m->layers);
}
