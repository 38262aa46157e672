/*
 * planner/estimate_moe.c: the estimator's context- and expert-parallel
 * terms (planner/estimate.c says how the estimate follows the simulator).
 */
#include "estimate_int.h"

#include <math.h>

/* ------------------------------------------------------------------------
 * Context and expert parallelism per layer (sim/train/step_group.c runs
 * them as flows).  An MoE all-to-all: each rank sends S/ep to every other
 * member, the members on its own server over NVLink and the rest through
 * its NIC share, both at once; the slower part sets the time (DeepEP:
 * the bytes of its two parts instead).  The CP
 * exchange: a ring all-gather over the CP ranks, hidden behind the
 * attention it overlaps, the excess exposed.  *ep_s is scaled by the
 * share of MoE layers (the layer costs are an MoE layer's).
 * ---------------------------------------------------------------------- */

/* The members of the first EP group on its first member's server (the
 * groups are alike: the rank order repeats by server). */
static int64_t ep_same_server(const pp_plan_estimator *x,
                              const pp_parallel *p) {
    int64_t cp = p->cp > 1 ? p->cp : 1, ep = p->ep > 1 ? p->ep : 1;
    int64_t etp = pp_parallel_etp(p), r0 = -1, same = 0;
    for (int64_t e = 0; e < ep; e++) {
        int64_t u = e * etp, t = u % p->tp, dd = u / p->tp;
        int64_t r = pp_placement_rank3(p->tp * cp, p->pp, p->dp, x->order,
                                       (dd % cp) * p->tp + t, 0, dd / cp);
        if (e == 0) r0 = r;
        same += r / x->gpn == r0 / x->gpn;
    }
    return same;
}

void pp__est_cp_ep_layer(const pp_plan_estimator *x, const pp_parallel *p,
                         const pp_layer_cost *lc, double *ep_s, double *cp_s) {
    const pp_model *m = x->m;
    int64_t cp = p->cp > 1 ? p->cp : 1, ep = p->ep > 1 ? p->ep : 1;
    *ep_s = *cp_s = 0;
    if (ep > 1 && lc->ep_coll_bytes > 0) {
        int64_t same = ep_same_server(x, p);
        double S = lc->ep_coll_bytes, n = (double)ep;
        double net = S * (n - (double)same) / n;
        double nvl = S * ((double)same - 1.0) / n;
        if (p->deepep && ep % same == 0) {
            /* DeepEP (step_group.c): a copy per other server, then
             * NVLink to the ranks holding the experts (inside one server
             * only the second). */
            double c = S / (double)m->top_k, k = (double)(ep / same);
            net = c * pp_model_moe_spread(m, ep / same) * (k - 1.0) / k;
            nvl = c * pp_model_moe_spread(m, ep) * ((double)same - 1.0) /
                  (double)same;
        }
        double t_net = same < ep ? x->net_lat + net / x->nic_gpu_Bps : 0;
        double t_nvl = x->nvl_lat + nvl / x->nvl_Bps;
        double colls = (double)(lc->ep_fwd_colls + lc->ep_bwd_colls +
                                lc->ep_recompute_colls);
        *ep_s = colls * fmax(t_net, t_nvl) * (double)pp_model_moe_layers(m) /
                (double)m->layers;
    }
    if (cp > 1) {
        double B, lat;
        pp__est_group_link(x, pp__est_stride(x, p, 't') * p->tp, cp, &B, &lat);
        double by[3] = {lc->cp_fwd_bytes, lc->cp_bwd_bytes,
                        lc->cp_recompute_bytes};
        double ov[3] = {lc->cp_fwd_overlap_s, lc->cp_bwd_overlap_s,
                        lc->cp_recompute_overlap_s};
        for (int k = 0; k < 3; k++)
            if (by[k] > 0)
                *cp_s += fmax(0.0, pp__est_ring_s(x, PP_COLL_ALLGATHER,
                                                  (double)cp, by[k], B, lat) -
                                       ov[k]);
    }
}

/* What an all-to-all of `a` seconds adds to the compute `c` beside it,
 * the compute running f times slower while the all-to-all's kernels hold
 * SMs (sim/train/step.c): all of a beyond c f, else the time lost to the
 * slowdown, a (1 - 1/f). */
static double beside(double a, double c, double f) {
    return a >= c * f ? a - c : a * (1 - 1 / f);
}

/* a2a_overlap (sim/train/step_pair.c): in each MoE layer the four
 * all-to-alls run one at a time, each beside one cut of the other
 * micro-batch's compute: the backward's combine gradient beside the
 * forward's attention (what precedes its dispatch), the forward's
 * dispatch beside the experts' backward, the backward's dispatch
 * gradient beside the experts' forward, the forward's combine beside the
 * backward's attention.  What an all-to-all outlasts its cut is exposed,
 * and the cut runs slower beside it (beside()).  l_ep is the layers'
 * mean all-to-all time (pp__est_cp_ep_layer). */
double pp__est_a2a_exposed(const pp_plan_estimator *x, const pp_parallel *p,
                           const pp_layer_cost *lc, double l_ep) {
    double n =
        (double)(lc->ep_fwd_colls + lc->ep_bwd_colls + lc->ep_recompute_colls);
    double moe = (double)pp_model_moe_layers(x->m) / (double)x->m->layers;
    if (!(l_ep > 0) || n != 4.0 || !(moe > 0)) return l_ep;
    double a = l_ep / (n * moe); /* one all-to-all of an MoE layer */
    double fi = lc->ep_inner_fwd_s, bi = lc->ep_inner_bwd_s;
    double fo = lc->fwd_s - fi, bo = lc->bwd_s + lc->recompute_s - bi;
    double f = pp_profile_a2a_beside(&x->prof, p);
    return moe * (beside(a, fo, f) + beside(a, bi, f) + beside(a, fi, f) +
                  beside(a, bo, f));
}

/* The transfers one iteration's all-to-alls start (pp_a2a_transfers),
 * DeepEP's groups over the servers the rank order gives them. */
double pp__est_a2a_transfers(const pp_plan_estimator *x, const pp_parallel *p,
                             const pp_layer_cost *lc) {
    int64_t ep = p->ep > 1 ? p->ep : 1;
    int64_t same = p->deepep && ep > 1 ? ep_same_server(x, p) : 0;
    int64_t servers = same > 0 && ep % same == 0 ? ep / same : 0;
    return pp_a2a_transfers(x->m, p, lc, servers);
}
