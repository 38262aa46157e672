/*
 * planner/estimate_int.h: what estimate.c and estimate_moe.c share: the
 * estimator's state, its per-(tp, mbs, sp, recompute) cache entries and
 * the closed-form collective helpers (planner/estimate.c says how each
 * term follows the simulator).
 */
#ifndef PODPLAN_PLANNER_ESTIMATE_INT_H
#define PODPLAN_PLANNER_ESTIMATE_INT_H

#include "planner_int.h"

/* One cache entry: the costs that depend on (tp, mbs, sp, recompute). */
typedef struct cost_entry {
    int64_t tp, mbs;
    int sp, rec;
    /* 1, 1, 0 for a dense layout; cp with a2a+p2p's cp_a2a above it
     * (cp + 2^32 cp_a2a, lookup) */
    int64_t cp, ep, etp;
    bool used;
    pp_layer_cost lc;        /* one layer, the embedding, the head */
    pp_layer_cost emb, head; /* head.params: with a pipeline */
    double head_params_pp1;  /* head.params without one (the key has
                                   no pp: only this depends on it) */
    double t_coll;           /* one TP collective of the layer */
    double layer_w;          /* fwd + bwd (+ recompute) + TP comm */
    double layer_compute, layer_tp;
    double embed_c, embed_tp; /* fwd + bwd of the embedding */
    double head_c, head_tp;   /* fwd + bwd of the logits and the loss */
    /* All multi-token-prediction modules (pp_model.mtp_layers) on the
     * last stage: their own part (pp_mtp_cost_get, params with the
     * pipeline's copy of the word table), and fwd + bwd of the whole,
     * layers and output-layer passes included, before EP and CP. */
    pp_layer_cost mtp;
    double mtp_c, mtp_tp;
} cost_entry;

struct pp_plan_estimator {
    const pp_model *m;
    const pp_cluster *c;
    pp_gpu_profile prof;
    pp_optimizer opt;
    int64_t gpn, hcas, nodes;
    double nvl_Bps, nvl_lat; /* GPU to GPU inside a server */
    double net_Bps, net_lat; /* GPU to GPU on the next server */
    double nic_gpu_Bps;      /* a GPU's share of its server's NICs */
    double reduce_Bps;       /* summing rate (pp_coll_reduce_Bps) */
    double host_Bps;         /* a GPU to host memory (offload=) */
    bool spines;             /* the fabric has more than one level */
    char order[3];           /* rank placement, innermost first */
    cost_entry *cache;
    size_t cap, used;
};

/* Collectives in closed form (estimate.c): the simulator's ring where
 * nothing contends; the placement's stride of degree `dim` ('t', 'p' or
 * 'd'); the bandwidth and latency of a group of n members `stride` ranks
 * apart. */
double pp__est_ring_s(const pp_plan_estimator *x, pp_coll_op op, double n,
                      double S, double B, double lat);
int64_t pp__est_stride(const pp_plan_estimator *x, const pp_parallel *p,
                       char dim);
void pp__est_group_link(const pp_plan_estimator *x, int64_t stride, int64_t n,
                        double *B, double *lat);

/* estimate_moe.c: a layer's exposed EP all-to-all and CP exchange time,
 * and what of the all-to-alls the MoE overlap (a2a_overlap) leaves
 * exposed. */
void pp__est_cp_ep_layer(const pp_plan_estimator *x, const pp_parallel *p,
                         const pp_layer_cost *lc, double *ep_s, double *cp_s);
double pp__est_a2a_exposed(const pp_plan_estimator *x, const pp_parallel *p,
                           const pp_layer_cost *lc, double l_ep);
/* The transfers one iteration's all-to-alls start: what the planner's
 * simulation budget counts. */
double pp__est_a2a_transfers(const pp_plan_estimator *x, const pp_parallel *p,
                             const pp_layer_cost *lc);

#endif
