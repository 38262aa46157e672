/*
 * sim/train/cost.c: pp_layer_cost_get and its siblings (the embedding,
 * the head, an MTP module, an MoE block): compute.c's operation lists
 * summed, for the CLI, the tests and the planner's estimator.
 */
#include <string.h>

#include "step_int.h"

/* Sums ops [from, to): compute time and FLOPs; TP collectives of the
 * activation's size into *colls, others (the loss's, MLA's latents, an
 * MoE layer's expert-TP gathers) into *aux, their mean size into
 * *aux_bytes. */
static void sum_list(const pp__oplist *l, size_t from, size_t to, double act,
                     double *t, double *f, int32_t *colls, int32_t *aux,
                     double *aux_bytes, double *gemm_s) {
    for (size_t i = from; i < to; i++) {
        const pp__op *o = &l->v[i];
        if (o->kind == PP__OP_COMM && o->group != PP__GRP_TP) {
            /* CP and EP collectives: their overlapped compute is compute;
             * the estimator prices the collectives itself. */
            *t += o->overlap_s;
            *f += o->flops;
            continue;
        }
        if (o->kind == PP__OP_COMM) {
            /* A TP collective overlapped with its GEMM (tp_overlap,
             * async_backward): the GEMM is compute; the collective is
             * left to pp_layer_cost's tp_overlap_*, which let the
             * estimator hide it. */
            *t += o->overlap_s;
            *f += o->flops;
            if (gemm_s) *gemm_s += o->overlap_s;
            if (o->overlap_s > 0) continue;
            if (o->bytes == act) {
                (*colls)++;
            } else {
                /* Their mean size: a ring's time is affine in it. */
                (*aux)++;
                *aux_bytes += (o->bytes - *aux_bytes) / (double)*aux;
            }
        }
        if (o->kind == PP__OP_GEMM || o->kind == PP__OP_MEM) {
            *t += o->time_s;
            *f += o->flops;
            if (gemm_s && o->kind == PP__OP_GEMM) *gemm_s += o->time_s;
        }
    }
}

/* The compute between the first two expert-parallel all-to-alls of ops
 * [from, to) (as sum_list counts compute): an MoE layer's experts
 * forward, dispatch to combine, or their backward, the combine's
 * gradient to the dispatch's; 0 without two. */
static double between_a2a(const pp__oplist *l, size_t from, size_t to) {
    size_t a = to, b = to;
    for (size_t i = from; i < to && b == to; i++)
        if (l->v[i].kind == PP__OP_COMM && l->v[i].group == PP__GRP_EP) {
            if (a == to)
                a = i;
            else
                b = i;
        }
    if (b == to) return 0;
    double t = 0, f = 0, bytes = 0;
    int32_t n = 0;
    sum_list(l, a + 1, b, -1, &t, &f, &n, &n, &bytes, NULL);
    return t;
}

/* The CP and EP collectives of ops [from, to). */
static void grp_scan(const pp__oplist *l, size_t from, size_t to, int32_t *ep_n,
                     double *ep_bytes, double *cp_bytes, double *cp_ovl) {
    for (size_t i = from; i < to; i++) {
        const pp__op *o = &l->v[i];
        if (o->kind != PP__OP_COMM) continue;
        if (o->group == PP__GRP_EP) {
            (*ep_n)++;
            *ep_bytes = o->bytes;
        } else if (o->group == PP__GRP_CP || o->group == PP__GRP_CPA) {
            *cp_bytes += o->bytes;
            *cp_ovl += o->overlap_s;
        }
    }
}

/* The kernels of ops [from, to) the host issues. */
static double kernels(const pp__oplist *l, size_t from, size_t to,
                      uint8_t graphs) {
    double k = 0;
    for (size_t i = from; i < to; i++) k += pp__op_host_kernels(l, i, graphs);
    return k;
}

static int transformer_only(const pp_model *m, const char *what, pp_error *e) {
    if (m->arch == PP_ARCH_TRANSFORMER) return 0;
    return pp_error_set(e, PP_EINVAL,
                        "%s cost: model %s is generic (no "
                        "layers)",
                        what, m->name);
}

int pp_layer_cost_get(const pp_gpu_profile *g, const pp_model *m,
                      const pp_parallel *p, pp_layer_cost *out, pp_error *e) {
    int rc = transformer_only(m, "layer", e);
    if (rc < 0) return rc;
    pp_layer_cost c;
    memset(&c, 0, sizeof c);
    pp__shape s = {m, p, g, 0};
    double act = pp__act_bytes(&s);
    pp__oplist l = {0};
    pp__ops_layer_fwd(&s, &l);
    sum_list(&l, 0, l.n, act, &c.fwd_s, &c.fwd_flops, &c.fwd_colls,
             &c.aux_colls, &c.aux_coll_bytes, &c.gemm_s);
    c.coll_bytes = act;
    size_t nf = l.n;
    pp__ops_layer_bwd(&s, &l);
    /* The backward list holds the recomputation first (full) or inside
     * (selective): separate it by building the list without it. */
    pp_parallel q = *p;
    q.recompute = PP_RECOMPUTE_NONE;
    q.recompute_mods = 0;
    pp__shape s0 = {m, &q, g, 0};
    pp__oplist l0 = {0};
    pp__ops_layer_bwd(&s0, &l0);
    sum_list(&l0, 0, l0.n, act, &c.bwd_s, &c.bwd_flops, &c.bwd_colls,
             &c.aux_colls, &c.aux_coll_bytes, NULL);
    double tb = 0, fb = 0;
    int32_t cb = 0, ab = 0;
    double abytes = 0;
    sum_list(&l, nf, l.n, act, &tb, &fb, &cb, &ab, &abytes, NULL);
    c.recompute_s = tb - c.bwd_s;
    c.recompute_flops = fb - c.bwd_flops;
    c.recompute_colls = cb - c.bwd_colls;
    int32_t ep_all = 0;
    double cp_all = 0, ovl_all = 0;
    grp_scan(&l, 0, nf, &c.ep_fwd_colls, &c.ep_coll_bytes, &c.cp_fwd_bytes,
             &c.cp_fwd_overlap_s);
    grp_scan(&l0, 0, l0.n, &c.ep_bwd_colls, &c.ep_coll_bytes, &c.cp_bwd_bytes,
             &c.cp_bwd_overlap_s);
    grp_scan(&l, nf, l.n, &ep_all, &c.ep_coll_bytes, &cp_all, &ovl_all);
    c.ep_recompute_colls = ep_all - c.ep_bwd_colls;
    c.cp_recompute_bytes = cp_all - c.cp_bwd_bytes;
    c.cp_recompute_overlap_s = ovl_all - c.cp_bwd_overlap_s;
    for (size_t i = 0; i < l.n; i++)
        if (l.v[i].kind == PP__OP_COMM && l.v[i].group == PP__GRP_TP &&
            l.v[i].overlap_s > 0) {
            c.tp_overlap_colls++;
            c.tp_overlap_s += l.v[i].overlap_s;
            c.tp_overlap_bytes += (l.v[i].bytes - c.tp_overlap_bytes) /
                                  (double)c.tp_overlap_colls;
        }
    c.ep_inner_fwd_s = between_a2a(&l, 0, nf);
    c.ep_inner_bwd_s = between_a2a(&l, nf, l.n);
    c.host_s = kernels(&l, 0, l.n, p->graphs) * g->sw.host_kernel_s;
    c.params = pp__layer_params_gpu(&s);
    if (pp__shape_moe(&s)) c.expert_params = pp__moe_expert_params_gpu(&s);
    pp__oplist_fini(&l);
    pp__oplist_fini(&l0);
    *out = c;
    return 0;
}

double pp_a2a_transfers(const pp_model *m, const pp_parallel *p,
                        const pp_layer_cost *lc, int64_t servers) {
    int64_t ep = p->ep > 1 ? p->ep : 1, cp = p->cp > 1 ? p->cp : 1;
    if (ep < 2 || !(lc->ep_coll_bytes > 0)) return 0;
    double n = (double)ep, pairs = n * (n - 1.0);
    if (p->deepep && servers > 0 && ep % servers == 0)
        pairs =
            n * ((double)servers - 1.0) + n * ((double)(ep / servers) - 1.0);
    double groups = (double)(p->tp * cp * p->dp) / n;
    double colls =
        (double)(lc->ep_fwd_colls + lc->ep_bwd_colls + lc->ep_recompute_colls);
    double layers = (double)pp_model_moe_layers(m);
    if (pp_model_layer_is_moe(m, m->layers - 1)) /* MTP: the last's kind */
        layers += (double)m->mtp_layers;
    return groups * pairs * colls * layers * pp_parallel_microbatches(p);
}

/* The embedding, the head, an MTP module's own part or an MoE block:
 * fwd and bwd lists, no recomputation (the simulator runs them once per
 * micro-batch whatever p->recompute says), their EP collectives counted
 * (only the MoE block has any). */
static void part_cost(const pp__shape *s,
                      void (*fwd)(const pp__shape *, pp__oplist *),
                      void (*bwd)(const pp__shape *, pp__oplist *),
                      pp_layer_cost *c) {
    double act = pp__act_bytes(s);
    pp__oplist l = {0};
    memset(c, 0, sizeof *c);
    fwd(s, &l);
    sum_list(&l, 0, l.n, act, &c->fwd_s, &c->fwd_flops, &c->fwd_colls,
             &c->aux_colls, &c->aux_coll_bytes, &c->gemm_s);
    grp_scan(&l, 0, l.n, &c->ep_fwd_colls, &c->ep_coll_bytes,
             &c->cp_fwd_bytes, &c->cp_fwd_overlap_s);
    size_t nf = l.n;
    bwd(s, &l);
    sum_list(&l, nf, l.n, act, &c->bwd_s, &c->bwd_flops, &c->bwd_colls,
             &c->aux_colls, &c->aux_coll_bytes, NULL);
    grp_scan(&l, nf, l.n, &c->ep_bwd_colls, &c->ep_coll_bytes,
             &c->cp_bwd_bytes, &c->cp_bwd_overlap_s);
    c->coll_bytes = act;
    pp__oplist_fini(&l);
}

typedef void (*ops_fn)(const pp__shape *, pp__oplist *);

/* One part's cost and the parameters params(s) gives it. */
static int part_get(const char *what, const pp_gpu_profile *g,
                    const pp_model *m, const pp_parallel *p, ops_fn fwd,
                    ops_fn bwd, double (*params)(const pp__shape *),
                    pp_layer_cost *out, pp_error *e) {
    int rc = transformer_only(m, what, e);
    if (rc < 0) return rc;
    pp__shape s = {m, p, g, 0};
    part_cost(&s, fwd, bwd, out);
    out->params = params(&s);
    return 0;
}

int pp_embed_cost_get(const pp_gpu_profile *g, const pp_model *m,
                      const pp_parallel *p, pp_layer_cost *out, pp_error *e) {
    return part_get("embedding", g, m, p, pp__ops_embed_fwd, pp__ops_embed_bwd,
                    pp__embed_params_gpu, out, e);
}

static void mtp_bwd_table(const pp__shape *s, pp__oplist *l) {
    pp__ops_mtp_bwd(s, l, true);
}

static double mtp_params_table(const pp__shape *s) {
    return pp__mtp_params_gpu(s) + pp__mtp_embed_params_gpu(s);
}

int pp_mtp_cost_get(const pp_gpu_profile *g, const pp_model *m,
                    const pp_parallel *p, pp_layer_cost *out, pp_error *e) {
    return part_get("mtp", g, m, p, pp__ops_mtp_fwd, mtp_bwd_table,
                    mtp_params_table, out, e);
}

int pp_head_cost_get(const pp_gpu_profile *g, const pp_model *m,
                     const pp_parallel *p, pp_layer_cost *out, pp_error *e) {
    return part_get("head", g, m, p, pp__ops_head_fwd, pp__ops_head_bwd,
                    pp__head_params_gpu, out, e);
}

int pp_moe_cost_get(const pp_gpu_profile *g, const pp_model *m,
                    const pp_parallel *p, pp_layer_cost *out, pp_error *e) {
    if (!pp_model_is_moe(m))
        return pp_error_set(e, PP_EINVAL, "moe cost: model %s has no experts",
                            m->name);
    return part_get("moe", g, m, p, pp__ops_moe_fwd, pp__ops_moe_bwd,
                    pp__moe_block_params_gpu, out, e);
}
