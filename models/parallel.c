/*
 * models/parallel.c: the parallel layout (SPEC strings) and the
 * divisibility rules of Megatron-LM (Shoeybi et al. 2019; Narayanan et al.
 * 2021; megatron/training/arguments.py, validate_args).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models_int.h"

/* Degrees and batch sizes above this are typos; bounding them keeps
 * products such as mbs * dp * pp far from int64 overflow. */
#define PP_PARALLEL_MAX 1000000000LL

static const char *const spec_keys[] = {"tp", "pp", "dp", "mbs", "gbs",
                                        "vp", "sp", "recompute", "zero",
                                        NULL};
enum { K_TP, K_PP, K_DP, K_MBS, K_GBS, K_VP, K_SP, K_RECOMPUTE, K_ZERO };

void pp_parallel_init(pp_parallel *p)
{
    memset(p, 0, sizeof *p);
    p->tp = p->pp = p->dp = 1;
    p->mbs = 1;
    p->gbs = p->mbs * p->dp;
    p->vp = 1;
    p->sp = false;
    /* Full recompute is the default: it is what the Megatron-LM runs of
     * domain.md sec. 5 used, and the memory that always fits. */
    p->recompute = PP_RECOMPUTE_FULL;
    p->zero = 0;
}

const char *pp_recompute_name(pp_recompute r)
{
    switch (r) {
    case PP_RECOMPUTE_NONE:
        return "none";
    case PP_RECOMPUTE_SELECTIVE:
        return "selective";
    case PP_RECOMPUTE_FULL:
        return "full";
    }
    return "?";
}

static int spec_value(void *ctx, int k, const char *val, pp_error *e)
{
    pp_parallel *p = ctx;
    const char *pre = "--parallel: ";
    int64_t *dst = NULL;
    switch (k) {
    case K_TP: dst = &p->tp; break;
    case K_PP: dst = &p->pp; break;
    case K_DP: dst = &p->dp; break;
    case K_MBS: dst = &p->mbs; break;
    case K_GBS: dst = &p->gbs; break;
    case K_VP: dst = &p->vp; break;
    default: break;
    }
    if (dst) {
        if (pp_parse_i64(val, 1, PP_PARALLEL_MAX, dst) < 0)
            return pp_error_set(e, PP_EINPUT,
                                "%s%s: expected a positive integer, got "
                                "\"%.100s\"",
                                pre, spec_keys[k], val);
        return 0;
    }
    if (k == K_SP) {
        if (strcmp(val, "on") == 0 || strcmp(val, "true") == 0)
            p->sp = true;
        else if (strcmp(val, "off") == 0 || strcmp(val, "false") == 0)
            p->sp = false;
        else
            return pp_error_set(e, PP_EINPUT,
                                "%ssp: expected on, off, true or false, got "
                                "\"%.100s\"",
                                pre, val);
        return 0;
    }
    if (k == K_RECOMPUTE) {
        for (int r = PP_RECOMPUTE_NONE; r <= PP_RECOMPUTE_FULL; r++)
            if (strcmp(val, pp_recompute_name((pp_recompute)r)) == 0) {
                p->recompute = (pp_recompute)r;
                return 0;
            }
        return pp_error_set(e, PP_EINPUT,
                            "%srecompute: expected full, selective or none, "
                            "got \"%.100s\"",
                            pre, val);
    }
    /* K_ZERO */
    int64_t z;
    if (pp_parse_i64(val, 0, 3, &z) < 0)
        return pp_error_set(e, PP_EINPUT,
                            "%szero: expected 0..3, got \"%.100s\"", pre,
                            val);
    p->zero = (int)z;
    return 0;
}

int pp_parallel_parse(const char *spec, pp_parallel *p, pp_error *e)
{
    pp_parallel q = *p;
    uint64_t seen = 0;

    if (!spec || spec[0] == '\0')
        return pp_error_set(e, PP_EINPUT,
                            "--parallel: empty specification (expected e.g. "
                            "tp=8,pp=8,dp=16,mbs=1,gbs=1536)");
    int rc = pp_kv_parse(spec, "--parallel", spec_keys, spec_value, &q, &seen,
                         e);
    if (rc < 0)
        return rc;
    /* gbs follows mbs * dp while it has its default value and the SPEC
     * does not set it ("tp=8,dp=4" means one micro-batch per replica). */
    if (!(seen & (UINT64_C(1) << K_GBS)) && p->gbs == p->mbs * p->dp)
        q.gbs = q.mbs * q.dp;
    *p = q;
    return 0;
}

char *pp_parallel_format(const pp_parallel *p, char *buf, size_t len)
{
    snprintf(buf, len,
             "tp=%lld,pp=%lld,dp=%lld,mbs=%lld,gbs=%lld,vp=%lld,sp=%s,"
             "recompute=%s,zero=%d",
             (long long)p->tp, (long long)p->pp, (long long)p->dp,
             (long long)p->mbs, (long long)p->gbs, (long long)p->vp,
             p->sp ? "on" : "off", pp_recompute_name(p->recompute), p->zero);
    return buf;
}

int pp_parallel_validate(const pp_parallel *p, const pp_model *m,
                         pp_error *e)
{
    const char *pre = "--parallel: ";
    struct {
        const char *key;
        int64_t v;
    } deg[] = {{"tp", p->tp},   {"pp", p->pp},   {"dp", p->dp},
               {"mbs", p->mbs}, {"gbs", p->gbs}, {"vp", p->vp}};
    for (size_t i = 0; i < sizeof deg / sizeof deg[0]; i++)
        if (deg[i].v < 1 || deg[i].v > PP_PARALLEL_MAX)
            return pp_error_set(e, PP_EINPUT,
                                "%s%s: expected a positive integer at most "
                                "%lld, got %lld",
                                pre, deg[i].key, PP_PARALLEL_MAX,
                                (long long)deg[i].v);
    if (p->zero < 0 || p->zero > 3)
        return pp_error_set(e, PP_EINPUT, "%szero: expected 0..3, got %d",
                            pre, p->zero);

    /* The global batch is split into micro-batches of mbs on each of the dp
     * replicas (Megatron-LM: global_batch_size % (micro_batch_size *
     * data_parallel_size) == 0). */
    if (p->gbs % (p->mbs * p->dp) != 0)
        return pp_error_set(e, PP_EINPUT,
                            "%sgbs: %lld is not divisible by mbs * dp "
                            "(%lld * %lld = %lld)",
                            pre, (long long)p->gbs, (long long)p->mbs,
                            (long long)p->dp, (long long)(p->mbs * p->dp));

    if (m->arch == PP_ARCH_GENERIC) {
        /* A generic model has no layer shape to split: data parallel only. */
        if (p->tp > 1 || p->pp > 1 || p->vp > 1)
            return pp_error_set(e, PP_EINPUT,
                                "%s%s: model %s is generic (no layer shape): "
                                "only data parallelism applies, tp, pp and "
                                "vp must be 1",
                                pre, p->tp > 1 ? "tp" : p->pp > 1 ? "pp" : "vp",
                                m->name);
        return 0;
    }

    /* Megatron splits attention heads over tp (Shoeybi et al. 2019, sec.
     * 3): num_attention_heads % tensor_model_parallel_size == 0, and with
     * GQA the K/V heads too (num_query_groups % tp == 0). */
    if (m->heads % p->tp != 0)
        return pp_error_set(e, PP_EINPUT,
                            "%stp: %lld does not divide heads (%lld) of "
                            "model %s",
                            pre, (long long)p->tp, (long long)m->heads,
                            m->name);
    if (m->kv_heads % p->tp != 0)
        return pp_error_set(e, PP_EINPUT,
                            "%stp: %lld does not divide kv_heads (%lld) of "
                            "model %s",
                            pre, (long long)p->tp, (long long)m->kv_heads,
                            m->name);
    /* Every stage holds the same number of layers. */
    if (m->layers % p->pp != 0)
        return pp_error_set(e, PP_EINPUT,
                            "%spp: %lld does not divide layers (%lld) of "
                            "model %s",
                            pre, (long long)p->pp, (long long)m->layers,
                            m->name);
    if (p->vp > 1) {
        /* Interleaved 1F1B (Narayanan et al. 2021, sec. 2.2.2): each GPU
         * holds vp chunks of layers/(pp*vp) layers, and the schedule runs
         * micro-batches in groups of pp. */
        if (p->pp < 2)
            return pp_error_set(e, PP_EINPUT,
                                "%svp: %lld needs pipeline parallelism (pp > "
                                "1), got pp=%lld",
                                pre, (long long)p->vp, (long long)p->pp);
        if (m->layers % (p->pp * p->vp) != 0)
            return pp_error_set(e, PP_EINPUT,
                                "%svp: layers (%lld) of model %s are not "
                                "divisible by pp * vp (%lld * %lld)",
                                pre, (long long)m->layers, m->name,
                                (long long)p->pp, (long long)p->vp);
        int64_t nmb = p->gbs / (p->mbs * p->dp);
        if (nmb % p->pp != 0)
            return pp_error_set(e, PP_EINPUT,
                                "%svp: the interleaved schedule needs the "
                                "number of micro-batches (gbs / (mbs * dp) "
                                "= %lld) to be a multiple of pp (%lld)",
                                pre, (long long)nmb, (long long)p->pp);
    }
    /* sp with tp == 1 and zero > 0 with dp == 1 are allowed: they have no
     * effect (Megatron-LM turns sequence parallelism off when tp == 1). */
    return 0;
}
