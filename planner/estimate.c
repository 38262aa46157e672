/*
 * planner/estimate.c: one training iteration in closed form.
 *
 * The estimator ranks tens of thousands of layouts, so it must cost
 * microseconds, and it must order layouts the way the simulator does, so
 * that the simulator's best is among the estimator's best K.  It follows
 * the simulator's models term by term, without the event engine:
 *
 *   compute   the layer's, the embedding's and the head's kernels as
 *             sim/train/compute.c lists and times them (pp_layer_cost_get,
 *             pp_embed_cost_get, pp_head_cost_get: roofline per GEMM and
 *             memory-bound kernel with the GPU profile), cached per (tp,
 *             mbs, sp, recompute, cp, ep and the kernels' choices) because
 *             they do not depend on pp or dp.
 *   TP comm   the simulator's ring with nothing contending
 *             (pp_coll_ring_time_s): steps x (hop latency + chunk /
 *             bandwidth) + the serial reductions at pp_coll_reduce_Bps;
 *             over NVLink when the TP group is inside a server.  Blocking,
 *             as in Megatron.
 *   pipeline  1F1B: the slowest stage paces the micro-batches and the
 *             fill and drain cost the other stages' work once, divided by
 *             vp with interleaving: m w_max + (sum_s w_s - w_max) / vp,
 *             i.e. the bubble (pp - 1) / (m vp) for even stages.
 *   PP p2p    every micro-batch crosses each boundary forward and back,
 *             1/t of the activation per GPU (Megatron's scatter/gather),
 *             then without sp an all-gather over NVLink; the sender waits
 *             for arrival (Megatron-LM 2021), so it is stage work:
 *             2 vp (V - 1) / V transfers per micro-batch, V = pp vp.
 *   DP        the first stage's bf16 gradients over dp, at the GPU's share
 *             of its server's NICs (a DP group with k members per server
 *             shares the server's NICs with gpus_per_node / k - 1 other
 *             groups): a ring AllReduce, or ZeRO's reduce-scatter and
 *             (stages 1, 2) the all-gather of the updated parameters after
 *             the optimizer.  An MoE model's routed experts go over
 *             their expert data-parallel group (tp cp dp / (ep etp)
 *             ranks) instead, and the two groups' times add (they share
 *             the NICs).  Exposed whole without overlap; with overlap
 *             all but the last bucket is hidden under the chunks' last
 *             backwards (their MoE all-to-all waits included), at the
 *             price of slower pipeline sends meanwhile.
 *             ZeRO-2 and 3 reduce-scatter every micro-batch's gradients
 *             after its backward and wait for them (DeepSpeed), so the
 *             exposed part is paid per micro-batch.  ZeRO-3 all-gathers
 *             each chunk's weights before each pass, exposed (the
 *             simulator does not prefetch).
 *   other     the optimizer step (pp_optimizer_time_s) and, with pp > 1
 *             and tied embeddings, the embedding-gradient AllReduce
 *             between the first and last stages.
 *   The breakdown reports each part as the mean over the stages, as the
 *   simulator does; what a stage waits for the slowest (the barrier
 *   before the step) is bubble.
 *
 * Every byte count and constant comes from its owner (models.h:
 * pp_optimizer_bytes, PP_GRAD_SYNC_BYTES, PP_PARAM_GATHER_BYTES,
 * pp_activation_bytes; sim.h: PP_STEP_BUCKET_BYTES).  Three factors stand
 * for contention only the flow simulation sees; they are the GPU
 * profile's estimator.* keys (topologies/profiles/a100.yaml), fitted to
 * the simulator at flow fidelity.  tests/test_estimate_terms.c checks the
 * estimate term by term against the analytic simulation with them set to
 * 1, 1 and 0.  Where the simulator sees contention the estimate is
 * optimistic; that is what the top-K simulation is for.
 */
#include "estimate_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Set-up.
 * ---------------------------------------------------------------------- */
static int route_pair(pp_router *r, int32_t a, int32_t b, double *bw,
                      double *lat, pp_error *e) {
    const int32_t *path;
    size_t n;
    return pp_route(r, a, b, 0, &path, &n, lat, bw, e);
}

int pp_plan_estimator_new(const pp_model *m, const pp_cluster *c,
                          const pp_gpu_profile *profile,
                          pp_plan_estimator **out, pp_error *e) {
    const pp_cluster_info *info = pp_cluster_info_get(c);
    pp_plan_estimator *x = pp_xcalloc(1, sizeof *x);
    pp_router *r = NULL;
    int rc;

    x->m = m;
    x->c = c;
    memcpy(x->order, "tpd", 3);
    x->opt = PP_OPT_ADAM_MIXED;
    if (profile)
        x->prof = *profile;
    else if ((rc = pp_profile_load(NULL, info->gpu, &x->prof, e)) < 0)
        goto fail;
    x->gpn = info->gpus_per_node;
    x->hcas = info->hcas_per_node;
    x->nodes = info->nodes;
    x->spines = info->switches[PP_DEV_SPINE] + info->switches[PP_DEV_CORE] > 0;
    x->reduce_Bps = pp_coll_reduce_Bps(info->gpu);
    x->host_Bps = pp_cluster_host_Bps(c, pp_cluster_gpu(c, 0, 0));
    if ((rc = pp_router_new(c, 0, &r, e)) < 0) goto fail;
    x->nvl_Bps = INFINITY, x->nvl_lat = 0;
    if (x->gpn > 1 &&
        (rc = route_pair(r, pp_cluster_gpu(c, 0, 0), pp_cluster_gpu(c, 0, 1),
                         &x->nvl_Bps, &x->nvl_lat, e)) < 0)
        goto fail;
    x->net_Bps = x->nvl_Bps, x->net_lat = x->nvl_lat;
    x->nic_gpu_Bps = x->nvl_Bps;
    if (x->nodes > 1) {
        if ((rc =
                 route_pair(r, pp_cluster_gpu(c, 0, 0), pp_cluster_gpu(c, 1, 0),
                            &x->net_Bps, &x->net_lat, e)) < 0)
            goto fail;
        double share = info->nic_Bps * (double)x->hcas / (double)x->gpn;
        x->nic_gpu_Bps = share > 0 ? fmin(share, x->net_Bps) : x->net_Bps;
    }
    pp_router_free(r);
    x->cap = 256;
    x->cache = pp_xcalloc(x->cap, sizeof *x->cache);
    *out = x;
    return 0;
fail:
    pp_error_prefix(e, "estimator: ");
    pp_router_free(r);
    free(x);
    return rc;
}

void pp_plan_estimator_free(pp_plan_estimator *x) {
    if (!x) return;
    free(x->cache);
    free(x);
}

/* ------------------------------------------------------------------------
 * Collectives in closed form: the simulator's ring where nothing contends
 * (pp_coll_ring_time_s).  S is nccl-tests' buffer size; B the bandwidth a
 * member gets on its slowest hop.
 * ---------------------------------------------------------------------- */
double pp__est_ring_s(const pp_plan_estimator *x, pp_coll_op op, double n,
                      double S, double B, double lat) {
    return pp_coll_ring_time_s(op, n, S, B, lat, x->reduce_Bps);
}

/* Ranks between neighbours of degree `dim` ('t', 'p' or 'd') under the
 * placement: the rank of index 1 of that degree (sim's numbering). */
int64_t pp__est_stride(const pp_plan_estimator *x, const pp_parallel *p,
                       char dim) {
    /* With cp the placement's "t" is the tp x cp block (sim/train). */
    int64_t cp = p->cp > 1 ? p->cp : 1;
    return pp_placement_rank3(p->tp * cp, p->pp, p->dp, x->order, dim == 't',
                              dim == 'p', dim == 'd');
}

/* The bandwidth and latency of the ring of a group whose members sit
 * `stride` ranks apart (node-major numbering), n of them. */
void pp__est_group_link(const pp_plan_estimator *x, int64_t stride, int64_t n,
                        double *B, double *lat) {
    if (stride * n <= x->gpn && x->gpn % (stride * n) == 0) {
        *B = x->nvl_Bps, *lat = x->nvl_lat;
        return;
    }
    /* k members per server share its NICs with the other groups there;
     * with k > 1 the ring's hops between them are NVLink, which carry a
     * member's whole share too (the slower of the two on a rack-scale
     * NVLink domain, where k NICs outrun one GPU's NVLink). */
    double k = stride < x->gpn ? (double)(x->gpn / stride) : 1.0;
    if (k > (double)n) k = (double)n;
    double b = x->nic_gpu_Bps * k;
    if (k > 1) b = fmin(b, x->nvl_Bps);
    *B = fmin(b, x->net_Bps * k), *lat = x->net_lat;
}

/* ------------------------------------------------------------------------
 * Per (tp, mbs, sp, recompute) costs.
 * ---------------------------------------------------------------------- */
/* A layer TP collective of S bytes: with sp the mean of a reduce-scatter
 * and an all-gather (a layer holds them in about equal numbers), without
 * an AllReduce. */
static double tp_coll_s(const pp_plan_estimator *x, bool sp, double t, double S,
                        double B, double lat) {
    return sp ? 0.5 * (pp__est_ring_s(x, PP_COLL_REDUCESCATTER, t, S, B, lat) +
                       pp__est_ring_s(x, PP_COLL_ALLGATHER, t, S, B, lat))
              : pp__est_ring_s(x, PP_COLL_ALLREDUCE, t, S, B, lat);
}

static int fill_entry(pp_plan_estimator *x, const pp_parallel *par,
                      cost_entry *ce, pp_error *e) {
    const pp_model *m = x->m;
    int rc;
    /* The simulator's own kernel lists (sim/train/compute.c), summed. */
    if ((rc = pp_layer_cost_get(&x->prof, m, par, &ce->lc, e)) < 0 ||
        (rc = pp_embed_cost_get(&x->prof, m, par, &ce->emb, e)) < 0)
        return rc;
    /* Without a pipeline a tied output layer is the embedding's own table
     * (counted there); with one the last stage keeps a copy. */
    pp_parallel q = *par;
    pp_layer_cost h1;
    q.pp = 1, q.vp = 1;
    if ((rc = pp_head_cost_get(&x->prof, m, &q, &h1, e)) < 0) return rc;
    ce->head_params_pp1 = h1.params;
    q.pp = 2;
    if ((rc = pp_head_cost_get(&x->prof, m, &q, &ce->head, e)) < 0) return rc;
    double t = (double)par->tp;
    bool sp = par->sp && par->tp > 1;
    double B, lat;
    pp__est_group_link(x, 1, par->tp, &B, &lat);
    double S = ce->lc.coll_bytes;
    /* With sp a layer's collectives are all-gathers and reduce-scatters
     * in equal numbers (and so are the embedding's and the head's, one of
     * each); without, AllReduces. */
    ce->t_coll = tp_coll_s(x, sp, t, S, B, lat);

    const pp_layer_cost *lc = &ce->lc;
    ce->layer_compute = lc->fwd_s + lc->bwd_s + lc->recompute_s;
    /* Collectives overlapped with a GEMM cost only what outlasts it
     * (at their mean size against the GEMMs' mean, as the simulator's
     * max per pair). */
    double n_ovl = lc->tp_overlap_colls;
    ce->layer_tp =
        (double)(lc->fwd_colls + lc->bwd_colls + lc->recompute_colls) *
        ce->t_coll;
    if (n_ovl > 0) {
        double to = tp_coll_s(x, sp, t, lc->tp_overlap_bytes, B, lat);
        ce->layer_tp += n_ovl * fmax(0.0, to - lc->tp_overlap_s / n_ovl);
    }
    /* A layer's other TP collectives at their mean size (MLA's latents,
     * gathered with sp and all-reduced without; an MoE layer's expert-TP
     * gathers and reduce-scatters of its dispatched tokens). */
    if (lc->aux_colls > 0)
        ce->layer_tp += (double)lc->aux_colls *
                        tp_coll_s(x, sp, t, lc->aux_coll_bytes, B, lat);
    ce->layer_w = ce->layer_compute + ce->layer_tp;

    const pp_layer_cost *em = &ce->emb, *hd = &ce->head;
    ce->embed_c = em->fwd_s + em->bwd_s;
    ce->embed_tp = (double)(em->fwd_colls + em->bwd_colls) * ce->t_coll;
    ce->head_c = hd->fwd_s + hd->bwd_s;
    ce->head_tp =
        (double)(hd->fwd_colls + hd->bwd_colls) * ce->t_coll +
        (double)hd->aux_colls *
            pp__est_ring_s(x, PP_COLL_ALLREDUCE, t, hd->aux_coll_bytes, B, lat);
    memset(&ce->mtp, 0, sizeof ce->mtp);
    ce->mtp_c = ce->mtp_tp = 0;
    if (m->mtp_layers > 0) {
        if ((rc = pp_mtp_cost_get(&x->prof, m, &q, &ce->mtp, e)) < 0) return rc;
        double D = (double)m->mtp_layers;
        const pp_layer_cost *mt = &ce->mtp;
        ce->mtp_c =
            D * (mt->fwd_s + mt->bwd_s + ce->layer_compute + ce->head_c);
        ce->mtp_tp = D * ((double)(mt->fwd_colls + mt->bwd_colls) * ce->t_coll +
                          ce->layer_tp + ce->head_tp);
    }
    return 0;
}

static uint64_t key_hash(int64_t tp, int64_t mbs, int sp, int rec, int64_t cp,
                         int64_t ep, int64_t etp) {
    uint64_t k = (uint64_t)tp * 0x9E3779B97F4A7C15ULL;
    k ^= (uint64_t)(cp * 1000003 + ep * 1009 + etp) * 0xD6E8FEB86659FD93ULL;
    k ^= (uint64_t)mbs * 0xC2B2AE3D27D4EB4FULL;
    k ^= (uint64_t)(sp * 3 + rec + 1) * 0x165667B19E3779F9ULL;
    return k ^ (k >> 29);
}

static int lookup(pp_plan_estimator *x, const pp_parallel *par,
                  cost_entry **out, pp_error *e) {
    /* The recomputation (its modules in the low five bits), the number
     * format, the attention kernels, FP8 attention, the permutation, CP's
     * exchange and the FP8 recipe in one key field: what the kernel lists
     * read beyond the other fields (a search varies cp_comm; the rest are
     * pinned, but the key must not depend on that). */
    int kern = (int)par->flash +
               2 * ((int)par->fp8_attn +
                    2 * ((int)par->permute_unfused +
                         2 * ((int)par->cp_comm +
                              PP_CPCOMM__COUNT * (int)par->fp8_recipe)));
    int sp = par->sp && par->tp > 1,
        rec = (int)par->recompute_mods +
              32 * ((int)par->recompute +
                    PP_RECOMPUTE__COUNT *
                        ((int)par->dtype + PP_PREC__COUNT * kern));
    int64_t cp = (par->cp > 1 ? par->cp : 1) + (par->cp_a2a << 32),
            ep = par->ep > 1 ? par->ep : 1;
    int64_t etp = par->etp;
    if (2 * (x->used + 1) > x->cap) { /* grow: keep the load under 1/2 */
        size_t ncap = 2 * x->cap;
        cost_entry *n = pp_xcalloc(ncap, sizeof *n);
        for (size_t i = 0; i < x->cap; i++) {
            cost_entry *o = &x->cache[i];
            if (!o->used) continue;
            size_t j =
                key_hash(o->tp, o->mbs, o->sp, o->rec, o->cp, o->ep, o->etp) &
                (ncap - 1);
            while (n[j].used) j = (j + 1) & (ncap - 1);
            n[j] = *o;
        }
        free(x->cache);
        x->cache = n;
        x->cap = ncap;
    }
    size_t j = key_hash(par->tp, par->mbs, sp, rec, cp, ep, etp) & (x->cap - 1);
    while (x->cache[j].used) {
        cost_entry *c = &x->cache[j];
        if (c->tp == par->tp && c->mbs == par->mbs && c->sp == sp &&
            c->rec == rec && c->cp == cp && c->ep == ep && c->etp == etp) {
            *out = c;
            return 0;
        }
        j = (j + 1) & (x->cap - 1);
    }
    cost_entry ce;
    memset(&ce, 0, sizeof ce);
    int rc = fill_entry(x, par, &ce, e);
    if (rc < 0) return rc;
    ce.tp = par->tp, ce.mbs = par->mbs, ce.sp = sp, ce.rec = rec;
    ce.cp = cp, ce.ep = ep, ce.etp = etp;
    ce.used = true;
    x->cache[j] = ce;
    x->used++;
    *out = &x->cache[j];
    return 0;
}

/* ------------------------------------------------------------------------
 * The iteration.
 * ---------------------------------------------------------------------- */
static double dp_time(const pp_plan_estimator *x, const pp_parallel *p,
                      double grad_bytes) {
    if (p->dp <= 1) return 0;
    double B, lat, n = (double)p->dp;
    pp__est_group_link(x, pp__est_stride(x, p, 'd'), p->dp, &B, &lat);
    /* ZeRO's reduce-scatter and all-gather cost the AllReduce's two
     * halves (the simulator, like Megatron-LM's distributed optimizer,
     * gathers the parameters once, after the step, for every stage). */
    return pp__est_ring_s(x, PP_COLL_ALLREDUCE, n, grad_bytes, B, lat);
}

/* A gradient group: its members and its ring's bandwidth and latency. */
typedef struct dp_group {
    double n, B, lat;
} dp_group;

/* The DP group (dp x cp) of the dense gradients, g[0], and the expert
 * data-parallel group of an MoE model's routed experts, g[1]: the
 * tp cp dp / (ep etp) ranks holding the same slice of experts, ep etp
 * ranks apart in the stage's tp-cp-dp numbering (sim/train/
 * step_group.c). */
static void dp_groups(const pp_plan_estimator *x, const pp_parallel *p,
                      dp_group g[2]) {
    int64_t cp = p->cp > 1 ? p->cp : 1, tpc = p->tp * cp;
    double dpc = (double)(p->dp * cp);
    memset(g, 0, 2 * sizeof *g);
    g[0].n = g[1].n = 1;
    if (dpc > 1) {
        g[0].n = dpc;
        pp__est_group_link(x, p->dp > 1 ? pp__est_stride(x, p, 'd') : p->tp,
                           p->dp > 1 ? p->dp : cp, &g[0].B, &g[0].lat);
    }
    int64_t slices = (p->ep > 1 ? p->ep : 1) * pp_parallel_etp(p);
    int64_t edp = tpc * p->dp / slices;
    if (!pp_model_is_moe(x->m) || edp < 2) return;
    g[1].n = (double)edp;
    if (slices % tpc == 0) /* whole replicas apart */
        pp__est_group_link(x, pp__est_stride(x, p, 'd') * (slices / tpc), edp,
                           &g[1].B, &g[1].lat);
    else if (p->dp == 1) /* inside one tp x cp block */
        pp__est_group_link(x, slices, edp, &g[1].B, &g[1].lat);
    else /* several per block, on every replica: the DP group's links */
        g[1].B = g[0].B, g[1].lat = g[0].lat;
}

/* Whether stage boundary p -> p+1 of replica 0 crosses a server. */
static bool crosses(const pp_plan_estimator *x, const pp_parallel *p) {
    int64_t sp = pp__est_stride(x, p, 'p');
    for (int64_t s = 0; s + 1 < p->pp; s++)
        if ((s * sp) / x->gpn != ((s + 1) * sp) / x->gpn) return true;
    return false;
}

static int estimate_generic(pp_plan_estimator *x, const pp_parallel *p,
                            bool overlap, double *time_s, pp_breakdown *out) {
    const pp_model *m = x->m;
    /* The simulator's generic compute: the FLOPs at the best GEMM rate. */
    pp_flops f;
    if (pp_flops_count(m, p->gbs / p->dp, p->recompute, &f, NULL) < 0)
        f.total = 0;
    double rate = pp_profile_gemm_rate(&x->prof);
    pp_breakdown b = {0};
    memset(&b, 0, sizeof b);
    b.compute_s = rate > 0 ? f.total / rate : 0;
    double shard = p->zero >= 1 ? (double)p->dp : 1.0;
    double dp = dp_time(x, p, PP_GRAD_SYNC_BYTES * m->params);
    if (p->zero >= 2) {
        /* A reduce-scatter (half the AllReduce) per micro-batch, one
         * all-gather after the step. */
        dp *= 0.5 * (pp_parallel_microbatches(p) + 1.0);
    }
    b.dp_comm_exposed_s = overlap ? fmax(dp - 0.5 * b.compute_s, 0.0) : dp;
    b.other_s = pp_optimizer_time_s(&x->prof, x->opt, m->params / shard);
    *out = b;
    *time_s = b.compute_s + b.dp_comm_exposed_s + b.other_s;
    return 0;
}

int pp_plan_estimator_optimizer(pp_plan_estimator *x, pp_optimizer opt,
                                pp_error *e) {
    if ((int)opt < 0 || opt >= PP_OPT__COUNT)
        return pp_error_set(e, PP_EUSAGE, "optimizer: %d is not one", (int)opt);
    x->opt = opt;
    return 0;
}

int pp_plan_estimator_placement(pp_plan_estimator *x, const char order[3],
                                pp_error *e) {
    if (order[0] != 't' || !((order[1] == 'p' && order[2] == 'd') ||
                             (order[1] == 'd' && order[2] == 'p')))
        return pp_error_set(e, PP_EUSAGE,
                            "placement: expected tp,pp,dp or tp,dp,pp (TP "
                            "innermost), got %cp,%cp,%cp",
                            order[0], order[1], order[2]);
    memcpy(x->order, order, 3);
    return 0;
}

int pp_plan_estimate(pp_plan_estimator *x, const pp_parallel *p, bool overlap,
                     double *time_s, pp_breakdown *out, pp_error *e) {
    return pp__plan_estimate(x, p, overlap, time_s, out, NULL, e);
}

int pp__plan_estimate(pp_plan_estimator *x, const pp_parallel *p, bool overlap,
                      double *time_s, pp_breakdown *out, double *a2a,
                      pp_error *e) {
    const pp_model *m = x->m;
    if (a2a) *a2a = 0;
    if (m->arch != PP_ARCH_TRANSFORMER)
        return estimate_generic(x, p, overlap, time_s, out);
    cost_entry *ce;
    int rc = lookup(x, p, &ce, e);
    if (rc < 0) return rc;
    if (a2a) *a2a = pp__est_a2a_transfers(x, p, &ce->lc);

    double pp = (double)p->pp, vp = (double)p->vp;
    double nmb = pp_parallel_microbatches(p);
    /* Layers of the first, a middle and the last stage. */
    double Lf = (double)pp_parallel_stage_layers(p, m, 0);
    double Ll = (double)pp_parallel_stage_layers(p, m, p->pp - 1);
    double Lm = p->pp > 2 ? (double)pp_parallel_stage_layers(p, m, 1) : Lf;
    /* Under layout= the middle stages may differ: the slowest sets the
     * pace. */
    for (int64_t q = 2; p->layout.stages > 0 && q < p->pp - 1; q++)
        Lm = fmax(Lm, (double)pp_parallel_stage_layers(p, m, q));

    /* Pipeline transfers: each of the tp GPUs of a stage sends 1/tp of
     * the activation and waits for it to arrive (Megatron-LM 2021
     * synchronises after batch_isend_irecv); without sp the receiver
     * all-gathers the pieces over its TP group.  A GPU stage owns vp
     * virtual stages, so per micro-batch it sends and receives about 2 vp
     * tensors ((V - 1) / V of that on average: the ends send one way). */
    double t_hop = 0;
    if (p->pp > 1) {
        double act = pp_activation_bytes(m, p->mbs) /
                     (p->cp > 1 ? (double)p->cp : 1.0);
        bool net = crosses(x, p);
        /* Measured against the simulator at flow fidelity (GPT-3 175B on
         * titan): a stage's sends meet the neighbours' sends and, when a
         * stage is smaller than a server, leave on one rail and arrive on
         * another, through spines whose static (ECMP) hashing collides. */
        bool cross_rail = pp__est_stride(x, p, 'p') % x->gpn != 0 && x->spines;
        double share =
            cross_rail ? x->prof.p2p_share_cross_rail : x->prof.p2p_share_rail;
        double B = net ? x->nic_gpu_Bps * share : x->nvl_Bps;
        double lat = net ? x->net_lat : x->nvl_lat;
        t_hop = lat + act / (double)p->tp / B;
        if (p->tp > 1 && !(p->sp))
            t_hop += pp__est_ring_s(x, PP_COLL_ALLGATHER, (double)p->tp, act,
                                    x->nvl_Bps, x->nvl_lat);
    }
    double V = pp * vp;
    double c_pp = p->pp > 1 ? 2.0 * vp * t_hop * (V - 1.0) / V : 0;

    /* ZeRO-3 keeps 1/dp of the weights: before every pass of every chunk
     * they are all-gathered over DP, exposed (a stack without a ZeRO-3
     * implementation: the simulator's one gather per pass): two gathers
     * of the stage's weights per micro-batch, in vp pieces. */
    double z3_mid = 0, z3_first = 0, z3_last = 0;
    if (p->zero >= 3 && p->dp > 1) {
        double B, lat, n = (double)p->dp;
        pp__est_group_link(x, pp__est_stride(x, p, 'd'), p->dp, &B, &lat);
        double steps = 2.0 * (vp - 1.0) * (n - 1.0) * lat;
        double Ls[3] = {Lf, Lm, Ll}, z[3];
        for (int k = 0; k < 3; k++)
            z[k] = 2.0 * pp__est_ring_s(x, PP_COLL_ALLGATHER, n,
                                        PP_PARAM_GATHER_BYTES * Ls[k] *
                                            ce->lc.params,
                                        B, lat) +
                   steps;
        if (x->prof.sw.zero_max >= 3) {
            /* A stack that implements ZeRO-3 gathers layer by layer
             * (sim/train/zero3.c): each pass waits for its first layer's
             * gather; the others are exposed whole without overlap, and
             * with it only where a gather outlasts the layer it hides
             * under (the forward's, or the backward's with its
             * recomputation). */
            double g =
                pp__est_ring_s(x, PP_COLL_ALLGATHER, n,
                               PP_PARAM_GATHER_BYTES * ce->lc.params, B, lat);
            double cf = ce->lc.fwd_s, cb = ce->lc.bwd_s + ce->lc.recompute_s;
            double hide = x->prof.zero3_overlap && x->prof.zero3_prefetch > 0;
            for (int k = 0; k < 3; k++) {
                double rest = Ls[k] / vp - 1.0;
                if (rest < 0) rest = 0;
                z[k] = vp * (2.0 * g +
                             (hide ? rest * (fmax(0, g - cf) + fmax(0, g - cb))
                                   : 2.0 * rest * g));
            }
        }
        z3_mid = z[1];
        z3_first =
            z[0] + 2.0 * pp__est_ring_s(x, PP_COLL_ALLGATHER, n,
                                        PP_PARAM_GATHER_BYTES * ce->emb.params,
                                        B, lat);
        z3_last =
            z[2] + 2.0 * pp__est_ring_s(x, PP_COLL_ALLGATHER, n,
                                        PP_PARAM_GATHER_BYTES *
                                            (p->pp == 1 ? ce->head_params_pp1
                                                        : ce->head.params),
                                        B, lat);
    }

    /* Work per micro-batch of each kind of stage. */
    double l_ep, l_cp;
    pp__est_cp_ep_layer(x, p, &ce->lc, &l_ep, &l_cp);
    if (p->a2a_overlap) l_ep = pp__est_a2a_exposed(x, p, &ce->lc, l_ep);
    double lw = ce->layer_w + l_ep + l_cp, lc = ce->layer_compute;
    /* The backward's (and recomputation's) share of l_ep. */
    int32_t ep_all =
        ce->lc.ep_fwd_colls + ce->lc.ep_bwd_colls + ce->lc.ep_recompute_colls;
    double l_ep_bwd =
        ep_all > 0
            ? l_ep * (double)(ce->lc.ep_bwd_colls + ce->lc.ep_recompute_colls) /
                  (double)ep_all
            : 0;
    /* A layer whose kernels take the host longer to issue than the GPU to
     * run waits for the host (the simulator's host clock, step.c). */
    double l_host = fmax(0.0, ce->lc.host_s - lw);
    lw += l_host;
    double ltp = ce->layer_tp;
    double w_first, w_last, w_mid = Lm * lw + c_pp + z3_mid, sum_w, sum_c;
    double sum_tp, w_max, sum_z3;
    double L = (double)m->layers, D = (double)m->mtp_layers;
    /* The MTP modules, on the last stage: their layers' EP and CP too. */
    double w_mtp = ce->mtp_c + ce->mtp_tp + D * (l_ep + l_cp);
    if (p->pp == 1) {
        w_first = w_last = L * lw + ce->embed_c + ce->embed_tp + ce->head_c +
                           ce->head_tp + w_mtp + z3_first + z3_last - z3_mid;
        sum_w = w_first;
        sum_z3 = z3_first + z3_last - z3_mid;
    } else {
        w_first = Lf * lw + c_pp + ce->embed_c + ce->embed_tp + z3_first;
        w_last = Ll * lw + c_pp + ce->head_c + ce->head_tp + w_mtp + z3_last;
        sum_w = w_first + w_last + (pp - 2) * w_mid;
        sum_z3 = z3_first + z3_last + (pp - 2) * z3_mid;
    }
    sum_c = L * lc + ce->embed_c + ce->head_c + ce->mtp_c;
    sum_tp = L * ltp + ce->embed_tp + ce->head_tp + ce->mtp_tp;
    w_max = fmax(w_first, fmax(w_last, w_mid));
    double t_pipe = nmb * w_max + (sum_w - w_max) / vp;

    pp_breakdown b = {0};
    b.compute_s = nmb * sum_c / pp;
    b.tp_comm_s = nmb * sum_tp / pp;
    b.pp_comm_s = nmb * c_pp;
    b.ep_comm_s = nmb * (L + D) * l_ep / pp;
    b.cp_comm_s = nmb * (L + D) * l_cp / pp;
    b.host_s = nmb * (L + D) * l_host / pp;
    b.bubble_s = t_pipe - nmb * sum_w / pp;

    /* Data parallelism, on every kind of stage (first, middle, last):
     * an AllReduce of the stage's gradients, or with ZeRO a reduce-
     * scatter and, after the optimizer, an all-gather of the updated
     * parameters, exposed whole.  With overlap, buckets go out during
     * each chunk's last backward: what the backward does not cover is
     * exposed, and at least the last bucket (on the first stage the
     * embedding's gradient and up to one bucket).  The first stage sets
     * the pace (it finishes last); the others' shorter syncs and steps
     * leave them waiting at the barrier (bubble), as the simulator
     * counts it. */
    double Lk[3] = {Lf, Lm, Ll}, wk[3] = {1.0, pp - 2.0, 1.0};
    /* The modules' layers and own parts, and one copy of the table (none
     * without a pipeline: the embedding's own). */
    double copy = D > 0 ? ce->emb.params : 0;
    double mtp_params =
        D * (ce->lc.params + ce->mtp.params - copy) + (p->pp > 1 ? copy : 0);
    double Pk[3] = {Lf * ce->lc.params + ce->emb.params +
                        (p->pp == 1 ? ce->head_params_pp1 + mtp_params : 0),
                    Lm * ce->lc.params,
                    Ll * ce->lc.params + ce->head.params + mtp_params};
    if (p->pp == 1) wk[1] = wk[2] = 0;
    /* Of those, an MoE model's routed experts' (every layer priced as an
     * MoE layer, as above). */
    double El = ce->lc.expert_params, Ed = D * El;
    double Ek[3] = {Lf * El + (p->pp == 1 ? Ed : 0), Lm * El, Ll * El + Ed};
    /* Gradients are reduced over dp x cp (Megatron-core's dp-cp group),
     * the routed experts' over the expert data-parallel group. */
    dp_group g[2];
    dp_groups(x, p, g);
    double times = p->zero >= 2 ? nmb : 1.0; /* ZeRO >= 2: per micro-batch */
    double dp_k[3] = {0}, end_k[3] = {0}, opt_k[3] = {0}, gat_k[3] = {0};
    double slow_k[3] = {0};
    double hidden0 = 0;
    /* The compute beside hidden collectives runs f times slower while
     * their NCCL kernels hold SMs (the simulator's comp_factor): a window
     * of w seconds of it covers f w of communication. */
    double f = pp_profile_beside_nccl(&x->prof, ((g[0].n > 1) + (g[1].n > 1)) *
                                                    x->prof.sw.dp_sms);
    for (int k = 0; k < 3; k++) {
        if (k > 0 && wk[k] == 0) continue; /* no such stage */
        /* The stack's reduction dtype (2 bytes when none was applied). */
        double gb = x->prof.sw.grad_reduce_bytes > 0
                        ? x->prof.sw.grad_reduce_bytes
                        : PP_GRAD_SYNC_BYTES;
        double S = gb * Pk[k], t_sync = 0, t_gather = 0;
        /* The two communicators share the NICs: their times add. */
        double P2[2] = {Pk[k] - Ek[k], Ek[k]};
        for (int q = 0; q < 2; q++) {
            if (!(g[q].n > 1)) continue;
            double n = g[q].n, B = g[q].B, lat = g[q].lat;
            if (p->zero >= 1) {
                t_sync += pp__est_ring_s(x, PP_COLL_REDUCESCATTER, n,
                                         gb * P2[q], B, lat);
                /* ZeRO-3 gathered its weights before each pass already. */
                if (p->zero < 3)
                    t_gather +=
                        pp__est_ring_s(x, PP_COLL_ALLGATHER, n,
                                       PP_PARAM_GATHER_BYTES * P2[q], B, lat);
            } else {
                t_sync +=
                    pp__est_ring_s(x, PP_COLL_ALLREDUCE, n, gb * P2[q], B, lat);
            }
        }
        bool sync = g[0].n > 1 || g[1].n > 1;
        double exposed = t_sync;
        if (overlap && sync && S > 0) {
            /* The buckets flow while the backward runs, its waits for
             * the MoE all-to-alls included (the simulator's stage is
             * busy there too). */
            double window =
                Lk[k] * (ce->lc.bwd_s + ce->lc.recompute_s +
                         (double)(ce->lc.bwd_colls + ce->lc.recompute_colls) *
                             ce->t_coll +
                         l_ep_bwd);
            double bucket = x->prof.sw.bucket_bytes > 0
                                ? x->prof.sw.bucket_bytes
                                : PP_STEP_BUCKET_BYTES;
            double last = fmin(S, (k == 0 ? gb * ce->emb.params : 0) + bucket);
            exposed = fmax(t_sync - f * window, t_sync * last / S);
        }
        /* exposed is t_sync unless the buckets overlap the backward. */
        double hidden = times * (t_sync - exposed);
        if (k == 0) hidden0 = hidden;
        /* A stack that overlaps ZeRO's reductions (zero.overlap) hides
         * every micro-batch's but the last under the next task, as long
         * as the DP links keep up: the nmb reductions queue on them, and
         * whatever of that queue outlasts the stage's compute is exposed
         * (the simulator's per-micro-batch buckets, step.c mb_reduce). */
        if (p->zero >= 2 && x->prof.zero3_overlap) {
            double W =
                Lk[k] * nmb *
                (ce->lc.fwd_s + ce->lc.bwd_s + ce->lc.recompute_s + l_ep);
            dp_k[k] = fmax(exposed, times * t_sync - f * W);
            hidden = times * t_sync - dp_k[k];
        } else {
            dp_k[k] = times * exposed;
        }
        opt_k[k] = pp_optimizer_time_s(
            &x->prof, x->opt,
            p->zero >= 1 ? P2[0] / g[0].n + P2[1] / g[1].n : Pk[k]);
        /* A stack that overlaps the gather with the next forward
         * (overlap_param_gather) waits for the first chunk's; each later
         * chunk's hides under the warm-up forwards of the chunk before
         * (up to pp micro-batches), as the simulator gates them. */
        if (p->zero >= 1 && p->zero < 3 && x->prof.sw.param_gather_overlap &&
            t_gather > 0) {
            double per = t_gather / (double)p->vp;
            double warm = fmin(nmb, (double)p->pp) * Lk[k] / (double)p->vp *
                          ce->lc.fwd_s;
            double whole = t_gather;
            t_gather = per + ((double)p->vp - 1.0) * fmax(0.0, per - warm);
            hidden += whole - t_gather;
        }
        /* In the `hidden` seconds the compute beside does hidden / f of
         * its work; the rest comes after. */
        if (hidden > 0) slow_k[k] = hidden * (1 - 1 / f);
        gat_k[k] = t_gather;
        end_k[k] = opt_k[k] + t_gather;
    }
    /* The hidden part shares the NICs with the pipeline's sends, which
     * slow down meanwhile. */
    if (overlap && p->pp > 1 && crosses(x, p))
        b.pp_comm_s += x->prof.overlap_p2p_penalty * hidden0;

    /* The tied embedding's gradient (or the MTP block's copy of it),
     * between the first and last stage. */
    double t_emb = 0;
    if (p->pp > 1 && (m->tied_embeddings || m->mtp_layers > 0)) {
        double B, lat;
        int64_t span =
            pp__est_stride(x, p, 'p') * p->pp; /* replica 0's stages */
        if (span <= x->gpn && x->gpn % span == 0)
            B = x->nvl_Bps, lat = x->nvl_lat;
        else
            B = x->nic_gpu_Bps, lat = x->net_lat;
        /* The word table's gradient (the position table is not tied). */
        t_emb = pp__est_ring_s(x, PP_COLL_ALLREDUCE, 2,
                               PP_GRAD_SYNC_BYTES * (double)m->vocab *
                                   (double)m->hidden / (double)p->tp,
                               B, lat);
    }

    /* The first stage's path: its sync, the embedding's, the barrier,
     * then the slowest stage's step (and ZeRO's gather); the mean over
     * the stages of each part is what the breakdown reports. */
    double z3 = nmb * sum_z3 / pp;
    double path, dp_mean = 0, opt_mean = 0, gat_mean = 0, slow_mean = 0;
    for (int k = 0; k < 3; k++) {
        dp_mean += wk[k] * dp_k[k] / pp;
        opt_mean += wk[k] * opt_k[k] / pp;
        gat_mean += wk[k] * gat_k[k] / pp;
        slow_mean += wk[k] * slow_k[k] / pp;
    }
    path =
        slow_k[0] + dp_k[0] + t_emb + fmax(end_k[0], fmax(end_k[1], end_k[2]));
    b.compute_s += slow_mean;
    b.dp_comm_exposed_s = dp_mean + gat_mean + z3;
    b.other_s = opt_mean + (p->pp > 1 ? 2.0 * t_emb / pp : 0);
    b.bubble_s += path - (slow_mean + dp_mean + gat_mean + b.other_s);
    /* Offloaded activations (offload=, pp 1): each copy waits for what it
     * takes beyond a layer's compute, out after the forward and back
     * before the backward, as the simulator prices it. */
    if (p->offload > 0 && x->host_Bps > 0) {
        pp_memory mem;
        if ((rc = pp_memory_per_gpu(m, p, x->opt, &mem, e)) < 0) return rc;
        double t = mem.activations_per_layer / x->host_Bps;
        b.other_s +=
            nmb * (double)p->offload *
            (fmax(0.0, t - ce->lc.fwd_s) + fmax(0.0, t - ce->lc.bwd_s));
    }
    *out = b;
    *time_s = b.compute_s + b.tp_comm_s + b.bubble_s + b.pp_comm_s +
              b.dp_comm_exposed_s + b.other_s + b.ep_comm_s + b.cp_comm_s +
              b.host_s;
    return 0;
}
