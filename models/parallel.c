/*
 * models/parallel.c: the parallel layout (SPEC strings) and the
 * divisibility rules of Megatron-LM (Shoeybi et al. 2019; Narayanan et al.
 * 2021; megatron/training/arguments.py, validate_args).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models_int.h"

static const char *const spec_keys[] = {
    "tp",         "pp",      "dp",          "mbs",
    "gbs",        "vp",      "sp",          "recompute",
    "zero",       "first",   "last",        "dtype",
    "attn",       "cp",      "ep",          "etp",
    "dispatcher", "permute", "layout",      "graphs",
    "fp8",        "offload", "a2a_overlap", "rank_capacity",
    "fp8_attn",   "cp_comm", "cp_a2a",      NULL};
enum {
    K_TP,
    K_PP,
    K_DP,
    K_MBS,
    K_GBS,
    K_VP,
    K_SP,
    K_RECOMPUTE,
    K_ZERO,
    K_FIRST,
    K_LAST,
    K_DTYPE,
    K_ATTN,
    K_CP,
    K_EP,
    K_ETP,
    K_DISPATCH,
    K_PERMUTE,
    K_LAYOUT,
    K_GRAPHS,
    K_FP8,
    K_OFFLOAD,
    K_A2A,
    K_RANK_CAPACITY,
    K_FP8_ATTN,
    K_CP_COMM,
    K_CP_A2A
};

/* graphs= scopes, in PP_GRAPH_* bit order (Megatron-core's
 * --cuda-graph-scope names; "full" is full_iteration). */
static const char *const graph_scopes[] = {
    "attn", "mlp", "moe_router", "moe_preprocess", "full", "moe", NULL};

char *pp_graphs_list(uint8_t graphs, const char *sep, const char *quote,
                     char *buf, size_t len) {
    size_t n = 0;
    if (len == 0) return buf;
    buf[0] = '\0';
    for (int i = 0; graph_scopes[i]; i++)
        if (graphs & (1u << i) && n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%s%s%s", n ? sep : "",
                                  quote, graph_scopes[i], quote);
    return buf;
}

char *pp_graphs_format(uint8_t graphs, char *buf, size_t len) {
    if (!graphs && len > 0) {
        snprintf(buf, len, "none");
        return buf;
    }
    return pp_graphs_list(graphs, "+", "", buf, len);
}

/* The index of the n-byte word at s in the NULL-ended names, or the
 * index of that NULL: the '+'-joined lists' (graphs=, recompute=) lookup. */
static int word_index(const char *const *names, const char *s, size_t n) {
    int i = 0;
    while (names[i] && (strlen(names[i]) != n || strncmp(names[i], s, n) != 0))
        i++;
    return i;
}

/* "none", or scopes joined by '+', each once; full alone; moe without
 * moe_router and moe_preprocess, moe_preprocess with moe_router
 * (Megatron-core's rules, transformer_config.py). */
int pp_graphs_parse(const char *val, uint8_t *out, pp_error *e) {
    uint8_t g = 0;
    if (strcmp(val, "none") == 0) {
        *out = 0;
        return 0;
    }
    const char *s = val;
    for (;;) {
        size_t n = strcspn(s, "+");
        int i = word_index(graph_scopes, s, n);
        if (!graph_scopes[i] || g & (1u << i))
            return pp_error_set(e, PP_EINPUT,
                                "expected none or scopes joined by '+' "
                                "(attn, mlp, moe_router, moe_preprocess, "
                                "moe; or full), each once, got \"%.100s\"",
                                val);
        g |= (uint8_t)(1u << i);
        if (!s[n]) break;
        s += n + 1;
    }
    if (g & PP_GRAPH_FULL && g != PP_GRAPH_FULL)
        return pp_error_set(e, PP_EINPUT,
                            "full captures the whole iteration: it takes "
                            "no other scope, got \"%.100s\"",
                            val);
    /* Megatron-core graphs the whole MoE sublayer when moe is asked for
     * (transformer_layer.py, _get_submodules_under_cudagraphs: moe
     * before moe_router): the two are one or the other here. */
    if (g & PP_GRAPH_MOE && g & (PP_GRAPH_MOE_ROUTER | PP_GRAPH_MOE_PREPROCESS))
        return pp_error_set(e, PP_EINPUT,
                            "moe captures the whole MoE sublayer, its "
                            "router and preprocessing included: not with "
                            "moe_router or moe_preprocess, got \"%.100s\"",
                            val);
    if (g & PP_GRAPH_MOE_PREPROCESS && !(g & PP_GRAPH_MOE_ROUTER))
        return pp_error_set(e, PP_EINPUT,
                            "moe_preprocess needs moe_router, got "
                            "\"%.100s\"",
                            val);
    *out = g;
    return 0;
}

/* Megatron-core's recompute modules (TransformerConfig.recompute_modules),
 * all of which podplan prices, in its order: core_attn is
 * recompute=selective, the others PP_RECOMP_* bits 1 << (i - 1). */
static const char *const recomp_modules[] = {
    "core_attn", "layernorm",      "moe_act",     "mlp",
    "moe",       "shared_experts", "mla_up_proj", NULL};

char *pp_recompute_list(pp_recompute r, uint8_t mods, const char *sep,
                        const char *quote, char *buf, size_t len) {
    size_t n = 0;
    if (len == 0) return buf;
    buf[0] = '\0';
    for (int i = 0; recomp_modules[i]; i++) {
        bool on = i == 0 ? r == PP_RECOMPUTE_SELECTIVE
                         : (mods & (1u << (i - 1))) != 0;
        if (on && n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%s%s%s", n ? sep : "",
                                  quote, recomp_modules[i], quote);
    }
    return buf;
}

char *pp_recompute_format(pp_recompute r, uint8_t mods, char *buf, size_t len) {
    if (mods == 0 || r == PP_RECOMPUTE_FULL) {
        snprintf(buf, len, "%s", pp_recompute_name(r));
        return buf;
    }
    return pp_recompute_list(r, mods, "+", "", buf, len);
}

int pp_recompute_parse(const char *val, pp_recompute *r, uint8_t *mods,
                       pp_error *e) {
    for (int b = PP_RECOMPUTE_NONE; b <= PP_RECOMPUTE_FULL; b++)
        if (strcmp(val, pp_recompute_name((pp_recompute)b)) == 0) {
            *r = (pp_recompute)b;
            *mods = 0;
            return 0;
        }
    unsigned seen = 0;
    const char *s = val;
    for (;;) {
        size_t n = strcspn(s, "+");
        int i = word_index(recomp_modules, s, n);
        if (!recomp_modules[i] || seen & (1u << i))
            return pp_error_set(e, PP_EINPUT,
                                "expected full, selective, none or modules "
                                "joined by '+' (core_attn, layernorm, "
                                "moe_act, mlp, moe, shared_experts, "
                                "mla_up_proj), each once, got \"%.100s\"",
                                val);
        seen |= 1u << i;
        if (!s[n]) break;
        s += n + 1;
    }
    *r = seen & 1u ? PP_RECOMPUTE_SELECTIVE : PP_RECOMPUTE_NONE;
    *mods = (uint8_t)(seen >> 1);
    return 0;
}

void pp_parallel_init(pp_parallel *p) {
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
    p->cp = p->ep = 1;
    p->etp = 0; /* = tp */
    p->fp8 = PP_FP8_AUTO;
    p->fp8_recipe = PP_FP8_DELAYED; /* until a stack resolves it */
    p->fp8_transpose = true;        /* until a GPU resolves it */
}

int64_t pp_parallel_etp(const pp_parallel *p) {
    return p->etp > 0 ? p->etp : p->tp;
}

int64_t pp_parallel_gpus(const pp_parallel *p) {
    return p->tp * (p->cp > 0 ? p->cp : 1) * p->pp * p->dp;
}

static int spec_value(void *ctx, int k, const char *val, pp_error *e) {
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
    case K_CP: dst = &p->cp; break;
    case K_EP: dst = &p->ep; break;
    case K_ETP: dst = &p->etp; break;
    case K_CP_A2A: dst = &p->cp_a2a; break;
    case K_OFFLOAD:
        if (pp_parse_i64(val, 0, PP_PARALLEL_MAX, &p->offload) < 0)
            return pp_error_set(e, PP_EINPUT,
                                "%soffload: expected a number of layers (0 "
                                "for none), got \"%.100s\"",
                                pre, val);
        return 0;
    case K_RANK_CAPACITY: {
        /* 0 is none; below 1 a balanced rank would overflow its buffers
         * every step (Megatron-core then reruns the step uncapped). */
        double x;
        if (pp_parse_f64(val, 0, 64, &x) < 0 || (x != 0 && x < 1))
            return pp_error_set(e, PP_EINPUT,
                                "%srank_capacity: expected 0 (none) or 1 to "
                                "64, got \"%.100s\"",
                                pre, val);
        p->rank_capacity = x;
        return 0;
    }
    case K_FIRST:
    case K_LAST:
        /* 0 is allowed: an even share, as if the key were absent. */
        if (pp_parse_i64(val, 0, PP_PARALLEL_MAX,
                         k == K_FIRST ? &p->first : &p->last) < 0)
            return pp_error_set(e, PP_EINPUT,
                                "%s%s: expected a number of layers (0 for an "
                                "even share), got \"%.100s\"",
                                pre, spec_keys[k], val);
        return 0;
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
    if (k == K_SP || k == K_A2A || k == K_FP8_ATTN) {
        bool *b = k == K_SP    ? &p->sp
                  : k == K_A2A ? &p->a2a_overlap
                               : &p->fp8_attn;
        if (strcmp(val, "on") == 0 || strcmp(val, "true") == 0)
            *b = true;
        else if (strcmp(val, "off") == 0 || strcmp(val, "false") == 0)
            *b = false;
        else
            return pp_error_set(e, PP_EINPUT,
                                "%s%s: expected on, off, true or false, got "
                                "\"%.100s\"",
                                pre, spec_keys[k], val);
        return 0;
    }
    if (k == K_DTYPE || k == K_ATTN || k == K_DISPATCH || k == K_PERMUTE ||
        k == K_FP8 || k == K_CP_COMM) {
        const pp_registry *r = k == K_DTYPE      ? &pp_reg_prec
                               : k == K_ATTN     ? &pp_reg_attn
                               : k == K_DISPATCH ? &pp_reg_dispatch
                               : k == K_FP8      ? &pp_reg_fp8
                               : k == K_CP_COMM  ? &pp_reg_cp_comm
                                                 : &pp_reg_permute;
        int v;
        char field[64];
        snprintf(field, sizeof field, "%s%s", pre, spec_keys[k]);
        int rc = pp_registry_parse(r, field, val, &v, e);
        if (rc < 0) {
            if (e) e->code = PP_EINPUT; /* a bad SPEC is bad input */
            return PP_EINPUT;
        }
        if (k == K_DTYPE) {
            p->dtype = (pp_prec)v;
        } else if (k == K_DISPATCH) {
            p->dispatch = (pp_dispatch)v;
            if (v != PP_DISPATCH_AUTO) {
                p->hybridep = v == PP_DISPATCH_HYBRIDEP;
                p->deepep = v == PP_DISPATCH_DEEPEP || p->hybridep;
            }
        } else if (k == K_FP8) {
            p->fp8 = (pp_fp8)v;
            if (v != PP_FP8_AUTO) p->fp8_recipe = (pp_fp8)v;
        } else if (k == K_CP_COMM) {
            p->cp_comm = (pp_cp_comm)v;
        } else if (k == K_PERMUTE) {
            p->permute = (pp_permute)v;
            if (v != PP_PERMUTE_AUTO)
                p->permute_unfused = v == PP_PERMUTE_UNFUSED;
        } else {
            p->attn = (pp_attn)v;
            if (v != PP_ATTN_AUTO) p->flash = v == PP_ATTN_FLASH;
        }
        return 0;
    }
    if (k == K_LAYOUT) return pp_layout_parse(val, &p->layout, e);
    if (k == K_GRAPHS) {
        int rc = pp_graphs_parse(val, &p->graphs, e);
        if (rc < 0) pp_error_prefix(e, "%sgraphs", pre);
        return rc;
    }
    if (k == K_RECOMPUTE) {
        int rc = pp_recompute_parse(val, &p->recompute, &p->recompute_mods, e);
        if (rc < 0) {
            pp_error_prefix(e, "%srecompute", pre);
            return rc;
        }
        p->recompute_set = true;
        return 0;
    }
    /* K_ZERO */
    int64_t z;
    if (pp_parse_i64(val, 0, 3, &z) < 0)
        return pp_error_set(e, PP_EINPUT,
                            "%szero: expected 0..3, got \"%.100s\"", pre, val);
    p->zero = (int)z;
    return 0;
}

int pp_parallel_parse(const char *spec, pp_parallel *p, pp_error *e) {
    pp_parallel q = *p;
    uint64_t seen = 0;

    if (!spec || spec[0] == '\0')
        return pp_error_set(e, PP_EINPUT,
                            "--parallel: empty specification (expected e.g. "
                            "tp=8,pp=8,dp=16,mbs=1,gbs=1536)");
    int rc =
        pp_kv_parse(spec, "--parallel", spec_keys, spec_value, &q, &seen, e);
    if (rc < 0) return rc;
    /* gbs follows mbs * dp while it has its default value and the SPEC
     * does not set it ("tp=8,dp=4" means one micro-batch per replica). */
    if (!(seen & (UINT64_C(1) << K_GBS)) && p->gbs == p->mbs * p->dp)
        q.gbs = q.mbs * q.dp;
    /* A layout names its virtual stages, so it sets vp (as in Megatron-
     * core); a vp given beside it must agree. */
    if (q.layout.stages > 0) {
        if (q.layout.stages % q.pp != 0)
            return pp_error_set(e, PP_EINPUT,
                                "--parallel: layout: %d virtual stages are "
                                "not a multiple of pp (%lld)",
                                (int)q.layout.stages, (long long)q.pp);
        int64_t vp = q.layout.stages / q.pp;
        if ((seen & (UINT64_C(1) << K_VP)) && q.vp != vp)
            return pp_error_set(e, PP_EINPUT,
                                "--parallel: vp: %lld, but the layout's %d "
                                "virtual stages over pp %lld make vp %lld",
                                (long long)q.vp, (int)q.layout.stages,
                                (long long)q.pp, (long long)vp);
        q.vp = vp;
    }
    /* A recipe scales FP8 tensors: with bf16 or fp16 GEMMs it would be
     * silently ignored. */
    if (q.fp8 != PP_FP8_AUTO && q.dtype != PP_PREC_FP8)
        return pp_error_set(e, PP_EINPUT,
                            "--parallel: fp8: %s is a recipe for dtype=fp8, "
                            "but dtype is %s",
                            pp_registry_name(&pp_reg_fp8, (int)q.fp8),
                            pp_registry_name(&pp_reg_prec, (int)q.dtype));
    /* Transformer Engine's FP8 attention runs inside an FP8 recipe, in
     * cuDNN's fused kernel: not with NVFP4 or the block-scaling recipe
     * (its backend selection removes FusedAttention for them), not as
     * the standard s^2 attention. */
    if (q.fp8_attn && (q.dtype != PP_PREC_FP8 || q.fp8 == PP_FP8_BLOCKWISE ||
                       q.attn == PP_ATTN_STANDARD))
        return pp_error_set(
            e, PP_EINPUT,
            "--parallel: fp8_attn: FP8 attention needs dtype=fp8 with a "
            "recipe other than blockwise and flash attention, got "
            "dtype=%s%s%s",
            pp_registry_name(&pp_reg_prec, (int)q.dtype),
            q.fp8 == PP_FP8_BLOCKWISE ? ",fp8=blockwise" : "",
            q.attn == PP_ATTN_STANDARD ? ",attn=standard" : "");
    *p = q;
    return 0;
}

/* Appends to pp_parallel_format's buf after its n bytes, as long as the
 * SPEC so far fitted (n is snprintf's count: at len or more it was cut). */
static void spec_add(char *buf, size_t len, int *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static void spec_add(char *buf, size_t len, int *n, const char *fmt, ...) {
    if (*n < 0 || (size_t)*n >= len) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *n, len - (size_t)*n, fmt, ap);
    va_end(ap);
    *n = k < 0 ? k : *n + k;
}

char *pp_parallel_format(const pp_parallel *p, char *buf, size_t len) {
    char rc[64];
    int n = snprintf(
        buf, len,
        "tp=%lld,pp=%lld,dp=%lld,mbs=%lld,gbs=%lld,vp=%lld,"
        "sp=%s,recompute=%s,zero=%d",
        (long long)p->tp, (long long)p->pp, (long long)p->dp, (long long)p->mbs,
        (long long)p->gbs, (long long)p->vp, p->sp ? "on" : "off",
        pp_recompute_format(p->recompute, p->recompute_mods, rc, sizeof rc),
        p->zero);
    /* The split only when uneven: even layouts keep the SPEC they always
     * had, which scripts and pinned outputs compare. */
    if (p->first || p->last)
        spec_add(buf, len, &n, ",first=%lld,last=%lld", (long long)p->first,
                 (long long)p->last);
    /* Likewise cp, ep and etp only where set: a dense layout's SPEC is
     * the one it always was. */
    if (p->cp > 1) spec_add(buf, len, &n, ",cp=%lld", (long long)p->cp);
    if (p->cp_comm != PP_CPCOMM_P2P)
        spec_add(buf, len, &n, ",cp_comm=%s",
                 pp_registry_name(&pp_reg_cp_comm, (int)p->cp_comm));
    if (p->cp_a2a > 0)
        spec_add(buf, len, &n, ",cp_a2a=%lld", (long long)p->cp_a2a);
    if (p->ep > 1) spec_add(buf, len, &n, ",ep=%lld", (long long)p->ep);
    if (p->etp > 0) spec_add(buf, len, &n, ",etp=%lld", (long long)p->etp);
    /* dtype and attn likewise only when not the defaults (bf16, the
     * stack's attention), so that older SPECs read back the same. */
    if (p->dtype != PP_PREC_BF16)
        spec_add(buf, len, &n, ",dtype=%s",
                 pp_registry_name(&pp_reg_prec, (int)p->dtype));
    if (p->attn != PP_ATTN_AUTO)
        spec_add(buf, len, &n, ",attn=%s",
                 pp_registry_name(&pp_reg_attn, (int)p->attn));
    if (p->dispatch != PP_DISPATCH_AUTO)
        spec_add(buf, len, &n, ",dispatcher=%s",
                 pp_registry_name(&pp_reg_dispatch, (int)p->dispatch));
    if (p->permute != PP_PERMUTE_AUTO)
        spec_add(buf, len, &n, ",permute=%s",
                 pp_registry_name(&pp_reg_permute, (int)p->permute));
    if (p->fp8 != PP_FP8_AUTO)
        spec_add(buf, len, &n, ",fp8=%s",
                 pp_registry_name(&pp_reg_fp8, (int)p->fp8));
    if (p->offload > 0)
        spec_add(buf, len, &n, ",offload=%lld", (long long)p->offload);
    if (p->a2a_overlap) spec_add(buf, len, &n, ",a2a_overlap=on");
    if (p->fp8_attn) spec_add(buf, len, &n, ",fp8_attn=on");
    if (p->rank_capacity > 0)
        spec_add(buf, len, &n, ",rank_capacity=%g", p->rank_capacity);
    char g[64], l[512];
    if (p->graphs)
        spec_add(buf, len, &n, ",graphs=%s",
                 pp_graphs_format(p->graphs, g, sizeof g));
    if (p->layout.stages > 0)
        spec_add(buf, len, &n, ",layout=%s",
                 pp_layout_format(&p->layout, l, sizeof l));
    return buf;
}

/* Stages that take an even share of what first/last leave. */
static int64_t middle_stages(const pp_parallel *p) {
    return p->pp - (p->first > 0) - (p->last > 0);
}

bool pp_parallel_uneven(const pp_parallel *p) {
    return p->first > 0 || p->last > 0 || p->layout.stages > 0;
}

int64_t pp_parallel_stage_layers(const pp_parallel *p, const pp_model *m,
                                 int64_t stage) {
    if (p->layout.stages > 0) {
        int64_t n = 0;
        for (int64_t c = 0; c < p->vp; c++)
            n += pp_layout_stage(&p->layout, c * p->pp + stage);
        return n;
    }
    if (p->pp <= 1) return m->layers;
    if (stage == 0 && p->first > 0) return p->first;
    if (stage == p->pp - 1 && p->last > 0) return p->last;
    int64_t mid = middle_stages(p);
    return mid > 0 ? (m->layers - p->first - p->last) / mid : 0;
}

int64_t pp_parallel_chunk_layers(const pp_parallel *p, const pp_model *m,
                                 int64_t v) {
    if (p->layout.stages > 0) return pp_layout_stage(&p->layout, v);
    int64_t vp = p->vp > 0 ? p->vp : 1;
    return pp_parallel_stage_layers(p, m, p->pp > 0 ? v % p->pp : 0) / vp;
}

int64_t pp_parallel_chunk_first(const pp_parallel *p, const pp_model *m,
                                int64_t v) {
    if (p->layout.stages > 0) return pp_layout_before(&p->layout, v);
    /* Chunk row c (chunk c of every stage) holds the same layers in every
     * row: c rows before, then this row's stages before s.  O(pp), as the
     * planner asks this of every MoE candidate's stages. */
    int64_t pp = p->pp > 0 ? p->pp : 1, c = v / pp, s = v % pp, row = 0,
            before = 0;
    for (int64_t q = 0; q < pp; q++) {
        int64_t n = pp_parallel_chunk_layers(p, m, q);
        row += n;
        if (q < s) before += n;
    }
    return c * row + before;
}

/* Megatron-core's rules for --decoder-first/last-pipeline-num-layers
 * (transformer_config.py, get_num_layers_to_build): the ends take what
 * they are given, every other stage an equal share of the rest, and with
 * vp chunks each stage's layers split evenly over its chunks. */
static int validate_split(const pp_parallel *p, const pp_model *m,
                          const char *pre, pp_error *e) {
    if (p->pp < 2)
        return pp_error_set(e, PP_EINPUT,
                            "%s%s: an uneven pipeline split needs pp > 1, "
                            "got pp=%lld",
                            pre, p->first ? "first" : "last", (long long)p->pp);
    if (p->first + p->last > m->layers)
        return pp_error_set(e, PP_EINPUT,
                            "%sfirst, last: %lld + %lld layers exceed the "
                            "%lld of model %s",
                            pre, (long long)p->first, (long long)p->last,
                            (long long)m->layers, m->name);
    int64_t mid = middle_stages(p), rest = m->layers - p->first - p->last;
    if (mid == 0 && rest != 0)
        return pp_error_set(e, PP_EINPUT,
                            "%sfirst, last: with pp=2 they must add up to "
                            "the %lld layers of model %s, got %lld + %lld",
                            pre, (long long)m->layers, m->name,
                            (long long)p->first, (long long)p->last);
    if (mid > 0 && (rest < mid || rest % mid != 0))
        return pp_error_set(e, PP_EINPUT,
                            "%sfirst, last: the %lld layers left are not "
                            "an equal share for each of the other %lld "
                            "stages",
                            pre, (long long)rest, (long long)mid);
    const char *key[3] = {"first", "last", "vp"};
    int64_t n[3] = {p->first, p->last, mid > 0 ? rest / mid : 0};
    for (int i = 0; i < 3; i++)
        if (n[i] % p->vp != 0)
            return pp_error_set(e, PP_EINPUT,
                                "%s%s: %lld layers on %s stage are not "
                                "divisible by vp (%lld)",
                                pre, key[i], (long long)n[i],
                                i == 0   ? "the first"
                                : i == 1 ? "the last"
                                         : "each middle",
                                (long long)p->vp);
    return 0;
}

/* A layout (models/layout.c has checked its grammar) against the degrees
 * and the model: Megatron-core's PipelineParallelLayerLayout asserts. */
static int validate_layout(const pp_parallel *p, const pp_model *m,
                           const char *pre, pp_error *e) {
    if (p->first || p->last)
        return pp_error_set(e, PP_EINPUT,
                            "%s%s: not with layout= (the layout places "
                            "every layer)",
                            pre, p->first ? "first" : "last");
    if (p->layout.stages != p->pp * p->vp)
        return pp_error_set(e, PP_EINPUT,
                            "%slayout: %d virtual stages, but pp x vp = "
                            "%lld x %lld",
                            pre, (int)p->layout.stages, (long long)p->pp,
                            (long long)p->vp);
    if (p->pp < 2)
        return pp_error_set(e, PP_EINPUT,
                            "%slayout: needs pipeline parallelism (pp > 1), "
                            "got pp=%lld",
                            pre, (long long)p->pp);
    int64_t n = pp_layout_layers(&p->layout);
    char l[160]; /* only for the message: the planner validates often */
    if (n != m->layers)
        return pp_error_set(e, PP_EINPUT,
                            "%slayout: \"%s\" places %lld layers, model %s "
                            "has %lld",
                            pre, pp_layout_format(&p->layout, l, sizeof l),
                            (long long)n, m->name, (long long)m->layers);
    /* Megatron-core: the layout's mtp entries are the model's MTP
     * layers, no more and no fewer. */
    if (p->layout.mtp != m->mtp_layers)
        return pp_error_set(e, PP_EINPUT,
                            "%slayout: \"%s\" places %d multi-token-"
                            "prediction layers (m), model %s has %lld "
                            "(mtp_layers)",
                            pre, pp_layout_format(&p->layout, l, sizeof l),
                            (int)p->layout.mtp, m->name,
                            (long long)m->mtp_layers);
    return 0;
}

int pp_parallel_validate_split(const pp_parallel *p, const pp_model *m,
                               pp_error *e) {
    const char *pre = "--parallel: ";
    if (p->layout.stages > 0) return validate_layout(p, m, pre, e);
    if (pp_parallel_uneven(p)) return validate_split(p, m, pre, e);
    return 0;
}
