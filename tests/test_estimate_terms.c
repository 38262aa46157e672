/*
 * test_estimate_terms.c: the planner's closed-form estimator against the
 * simulator at `analytic` fidelity, term by term (pp_breakdown: compute,
 * TP comm, PP comm, DP comm exposed, bubble, other), on a grid of layouts
 * over three models and two clusters.
 *
 * Why analytic.  The estimator is the simulator's models without the
 * event engine: the same kernel lists and roofline (pp_layer_cost_get and
 * its siblings), the same ring in closed form (pp_coll_ring_time_s), the
 * same constants (models.h).  At analytic fidelity nothing contends, so
 * the only differences left are what the closed form approximates; the
 * profile's estimator factors (which stand for the contention of flow
 * fidelity) are set to their contention-free values, 1, 1 and 0.
 *
 * The DP rings run one channel per NIC the group can use (dp_channels
 * below): the estimator gives a group k of its server's NIC shares, which
 * is what the simulator's default (a channel per NIC) comes to at flow
 * fidelity, where channels through one NIC share it; at analytic fidelity
 * they would not, and 8 channels through one NIC would run 8x as fast.
 *
 * Tolerances, each as a fraction of the simulated iteration time T (a
 * term's error matters by how much it moves the ranking), the worst seen
 * on this grid (60 layouts) in brackets, and why:
 *
 *   compute   1.5e-2 of T (1.2e-2): the same kernels with the same roofline
 *             (pp_layer_cost_get, pp_embed_cost_get, pp_head_cost_get),
 *             summed in another order (7e-15 without DP overlap); with
 *             overlap, what the DP collectives' NCCL kernels cost the
 *             compute beside them (profile compute_beside_nccl) is priced
 *             on the hidden DP time, where the simulator slows whatever
 *             compute the collectives meet.
 *   TP comm   1e-9 of T (3e-14): the same rings (pp_coll_ring_time_s).
 *   other     1e-9 of T: the optimizer step of every stage, its mean.
 *             With tied embeddings and pp > 1, 1.5e-2 (1.0e-2): the
 *             embedding's AllReduce between the first and last stage runs
 *             in the simulator on one channel per NIC of the server
 *             (its default, which cannot be set apart from DP's), so at
 *             analytic fidelity up to 8x faster than the estimator's one
 *             NIC share; the estimate is the flow-fidelity figure.
 *   PP comm   1e-2 of T (3.1e-3): the estimator charges every stage the
 *             mean 2 vp (V - 1) / V sends per micro-batch; the simulator's
 *             end stages send one way only, and it counts the part of a
 *             wait before the producer started sending as bubble.
 *   DP exp    2.5e-2 of T (1.3e-2): the same rings per kind of stage
 *             (first, middle, last); with overlap the estimator exposes
 *             max(the last bucket, what the chunk's last backward cannot
 *             cover) where the simulator starts each bucket as it fills
 *             and meets the pipeline's timing.
 *   bubble    6e-2 of T (4.7e-2): m w_max + (sum w - w_max) / vp is exact
 *             for 1F1B with even stages; with heavier end stages (the
 *             embedding, the head), interleaving, the pipeline sends and
 *             ZeRO-3's gathers before every pass the schedule's critical
 *             path differs (the worst: ZeRO-3 with overlap).
 *   total     6e-2 of T (4.6e-2): mostly the bubble's.
 *
 * PP_VERBOSE=1 prints the grid with every term.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_util.h"
#include "podplan/planner.h"

#define TOL_EXACT 1e-9
#define TOL_COMPUTE 0.015
#define TOL_PP 0.01
#define TOL_BUBBLE 0.06
#define TOL_DP 0.025
#define TOL_TOTAL 0.06
#define TOL_EMB 0.015
#define PER_PAIR 10

enum { T_COMPUTE, T_TP, T_PP, T_DP, T_BUBBLE, T_OTHER, T_TOTAL, T__N };
static const char *const term_names[T__N] = {"compute", "tp",    "pp",   "dp",
                                             "bubble",  "other", "total"};
static const double tols[T__N] = {TOL_COMPUTE, TOL_EXACT, TOL_PP,   TOL_DP,
                                  TOL_BUBBLE,  TOL_EXACT, TOL_TOTAL};

/* "other" is exact but for the tied embedding's AllReduce (pp > 1, tied
 * tables): see the top. */
static double tol_of(int k, const pp_model *m, const pp_parallel *p) {
    if (k == T_OTHER && p->pp > 1 && m->tied_embeddings) return TOL_EMB;
    return tols[k];
}

static void terms(const pp_breakdown *b, double v[T__N]) {
    v[T_COMPUTE] = b->compute_s;
    v[T_TP] = b->tp_comm_s;
    v[T_PP] = b->pp_comm_s;
    v[T_DP] = b->dp_comm_exposed_s;
    v[T_BUBBLE] = b->bubble_s;
    v[T_OTHER] = b->other_s;
    v[T_TOTAL] = b->compute_s + b->tp_comm_s + b->pp_comm_s +
                 b->dp_comm_exposed_s + b->bubble_s + b->other_s + b->host_s;
}

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static int pick(int n) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((rng >> 33) % (uint64_t)n);
}

/* One ring channel per NIC the DP group can use: k members per server
 * get k of the server's NIC shares, the bandwidth the estimator gives the
 * group.  The simulator's default, one channel per NIC of the server,
 * only holds at flow fidelity, where channels that leave through one NIC
 * share it; at analytic fidelity nothing is shared and 8 channels through
 * one NIC would run 8 times as fast. */
static int dp_channels(const pp_cluster *c, const pp_parallel *p,
                       const char order[3]) {
    const pp_cluster_info *info = pp_cluster_info_get(c);
    int64_t k = 0, gpn = info->gpus_per_node;
    for (int64_t d = 0; d < p->dp; d++)
        if (pp_placement_rank(p, order, 0, 0, d) / gpn == 0) k++;
    if (k == p->dp) return 0; /* inside a server: one ring (NVLink) */
    int64_t ch = k * info->hcas_per_node / gpn;
    return ch > 0 ? (int)ch : 1;
}

typedef struct worst {
    double err;
    char what[240];
} worst;

static void test_terms(void **state) {
    (void)state;
    static const char *const models[] = {"megatron-1.7b", "megatron-7.5b",
                                         "llama2-7b"};
    static const char *const clusters[] = {"hyperconnect-superpod",
                                           "dgx-h100-ndr"};
    static const int64_t tps[] = {1, 2, 4, 8}, pps[] = {1, 2, 4},
                         dps[] = {1, 2, 4, 8}, mbss[] = {1, 2}, vps[] = {1, 2};
    bool verbose = getenv("PP_VERBOSE") != NULL;
    worst w[T__N];
    memset(w, 0, sizeof w);
    int n = 0, failures = 0;
    pp_error e = PP_ERROR_INIT;

    for (size_t ci = 0; ci < 2; ci++) {
        pp_cluster *c = NULL;
        if (pp_cluster_load(clusters[ci], NULL, 0, NULL, &c, &e))
            fail_msg("%s", e.msg);
        /* One stack on both clusters, the one the estimator's DP terms
         * were checked with (2-byte gradients, 40 MB buckets).  With
         * megatron-core-2024's fp32 reduction and 160 MB buckets the
         * terms drift by up to 8% of the iteration (bubble): not tuned. */
        pp_gpu_profile prof;
        if (pp_profile_load_stack(NULL, pp_cluster_info_get(c)->gpu,
                                  "megatron-lm-2021", &prof, NULL, &e))
            fail_msg("%s", e.msg);
        /* No contention at analytic fidelity: the factors that stand for
         * it take their neutral values. */
        prof.p2p_share_rail = prof.p2p_share_cross_rail = 1.0;
        prof.overlap_p2p_penalty = 0.0;
        for (size_t mi = 0; mi < 3; mi++) {
            pp_model m;
            if (pp_model_load(models[mi], &m, &e)) fail_msg("%s", e.msg);
            pp_plan_estimator *x = NULL;
            if (pp_plan_estimator_new(&m, c, &prof, &x, &e))
                fail_msg("%s", e.msg);
            int have = 0;
            for (int tries = 0; have < PER_PAIR && tries < 10000; tries++) {
                pp_parallel p;
                pp_parallel_init(&p);
                p.tp = tps[pick(4)];
                p.pp = pps[pick(3)];
                p.dp = dps[pick(4)];
                p.mbs = mbss[pick(2)];
                p.vp = p.pp > 1 ? vps[pick(2)] : 1;
                p.sp = pick(2);
                p.recompute = (pp_recompute)pick(3);
                p.zero = p.dp > 1 ? pick(4) : 0;
                p.gbs = p.mbs * p.dp * 2 * p.pp;
                bool overlap = pick(2);
                const char *order = pick(2) ? "tdp" : "tpd";
                if (p.tp * p.pp * p.dp > pp_cluster_info_get(c)->gpus ||
                    pp_parallel_validate(&p, &m, NULL) != 0)
                    continue;
                have++;
                n++;
                if (pp_plan_estimator_placement(x, order, &e))
                    fail_msg("%s", e.msg);
                double est_t;
                pp_breakdown eb;
                if (pp_plan_estimate(x, &p, overlap, &est_t, &eb, &e))
                    fail_msg("%s", e.msg);

                pp_step_config cfg;
                pp_step_config_init(&cfg);
                cfg.model = &m;
                cfg.par = &p;
                cfg.cluster = c;
                cfg.profile = &prof;
                cfg.fidelity = PP_FIDELITY_ANALYTIC;
                cfg.check_memory = false;
                cfg.dp_overlap = overlap;
                /* The stack's DP reduction, as the planner runs it. */
                cfg.grad_bytes = prof.sw.grad_reduce_bytes;
                cfg.bucket_bytes = prof.sw.bucket_bytes;
                memcpy(cfg.placement, order, 3);
                cfg.dp_channels = dp_channels(c, &p, order);
                pp_step_result r;
                if (pp_step_simulate(&cfg, &r, &e)) fail_msg("%s", e.msg);
                double ve[T__N], vs[T__N];
                terms(&eb, ve);
                terms(&r.total, vs);
                double T = r.iteration_time_s;
                char spec[160], what[240];
                pp_parallel_format(&p, spec, sizeof spec);
                snprintf(what, sizeof what, "%s %s %s %s%s", models[mi],
                         clusters[ci], spec, order, overlap ? " overlap" : "");
                bool bad = false;
                for (int k = 0; k < T__N; k++) {
                    double err = (ve[k] - vs[k]) / T;
                    if (fabs(err) > fabs(w[k].err)) {
                        w[k].err = err;
                        snprintf(w[k].what, sizeof w[k].what, "%s", what);
                    }
                    if (fabs(err) > tol_of(k, &m, &p)) bad = true;
                }
                if (bad || verbose) {
                    printf("%s %s\n", bad ? "FAIL" : "ok  ", what);
                    for (int k = 0; k < T__N; k++)
                        printf("   %-8s est %10.6f sim %10.6f  err %+8.4f%%"
                               "%s\n",
                               term_names[k], ve[k], vs[k],
                               100 * (ve[k] - vs[k]) / T,
                               fabs(ve[k] - vs[k]) / T > tol_of(k, &m, &p)
                                   ? "  <--"
                                   : "");
                }
                if (bad) failures++;
                pp_step_result_fini(&r);
            }
            assert_int_equal(have, PER_PAIR);
            pp_plan_estimator_free(x);
        }
        pp_cluster_free(c);
    }
    printf("%d layouts; worst error per term (fraction of the iteration):\n",
           n);
    for (int k = 0; k < T__N; k++)
        printf("   %-8s %+.3e (tolerance %.0e%s)  %s\n", term_names[k],
               w[k].err, tols[k], k == T_OTHER ? ", tied pp > 1: 1.5e-02" : "",
               w[k].what);
    assert_true(n >= 50);
    if (failures) fail_msg("%d of %d layouts out of tolerance", failures, n);
}

/* The ring's closed form is what the simulator's ring takes where nothing
 * contends (the estimator relies on it for every collective). */
static void test_ring_closed_form(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = NULL;
    if (pp_cluster_load("dgx-h100-ndr", NULL, 0, NULL, &c, &e))
        fail_msg("%s", e.msg);
    pp_router *rt = NULL;
    if (pp_router_new(c, 0, &rt, &e)) fail_msg("%s", e.msg);
    const int32_t *path;
    size_t np;
    double lat, B;
    int32_t g[8];
    for (int i = 0; i < 8; i++) g[i] = pp_cluster_gpu(c, 0, i);
    if (pp_route(rt, g[0], g[1], 0, &path, &np, &lat, &B, &e))
        fail_msg("%s", e.msg);
    double red = pp_coll_reduce_Bps(pp_cluster_info_get(c)->gpu);
    const pp_coll_op ops[] = {PP_COLL_ALLREDUCE, PP_COLL_REDUCESCATTER,
                              PP_COLL_ALLGATHER};
    for (int k = 0; k < 3; k++)
        for (int n = 2; n <= 8; n *= 2) {
            pp_sim *s = NULL;
            if (pp_sim_new(c, PP_FIDELITY_ANALYTIC, 0, &s, &e))
                fail_msg("%s", e.msg);
            pp_coll_spec sp;
            memset(&sp, 0, sizeof sp);
            sp.op = ops[k];
            sp.algo = PP_ALGO_RING;
            sp.bytes = 64e6;
            sp.gpus = g;
            sp.n_gpus = (size_t)n;
            sp.server = -1;
            sp.gran = PP_GRAN_STREAM;
            pp_coll_result r;
            if (pp_sim_collective(s, &sp, &r, &e)) fail_msg("%s", e.msg);
            double t = pp_coll_ring_time_s(ops[k], n, 64e6, B, lat, red);
            if (fabs(t - r.time_s) > 1e-9 * r.time_s)
                fail_msg("%s of %d: closed form %.9g s, simulated %.9g s",
                         pp_coll_op_name(ops[k]), n, t, r.time_s);
            pp_sim_free(s);
        }
    assert_true(isnan(pp_coll_ring_time_s(PP_COLL_BROADCAST, 4, 1, 1, 0, 1)));
    pp_router_free(rt);
    pp_cluster_free(c);
}

/* A DP ring across racks of a rack-scale NVLink domain (GB200 NVL72: 72
 * GPUs, each with its own NIC): 72 members per rack could use 72 NICs,
 * but the ring's hops between them are NVLink, which carries a member's
 * whole share and is the slower (900 GB/s against 72 x 50).  The
 * estimator's DP AllReduce (Llama 3 8B, dp 144 over two racks, no
 * overlap, one micro-batch) against the flow simulator's ring of the same
 * bytes over the same GPUs (a channel per NIC, contending): within 5%.
 * Before the NVLink cap the estimate was 2.7 times too fast (0.031 s
 * against 0.082). */
static void test_dp_ring_rack_scale(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = NULL;
    const char *set = "node.count=2";
    if (pp_cluster_load("gb200-nvl72", &set, 1, NULL, &c, &e))
        fail_msg("%s", e.msg);
    pp_gpu_profile prof;
    if (pp_profile_load_stack(NULL, pp_cluster_info_get(c)->gpu,
                              "megatron-core-2024", &prof, NULL, &e))
        fail_msg("%s", e.msg);
    pp_model m;
    if (pp_model_load("llama3-8b", &m, &e)) fail_msg("%s", e.msg);
    pp_parallel p;
    pp_parallel_init(&p);
    if (pp_parallel_parse("tp=1,pp=1,dp=144,mbs=1,gbs=144,zero=0", &p, &e))
        fail_msg("%s", e.msg);
    pp_stack_resolve(&prof, &p);
    pp_plan_estimator *x = NULL;
    if (pp_plan_estimator_new(&m, c, &prof, &x, &e)) fail_msg("%s", e.msg);
    double est_t;
    pp_breakdown eb;
    if (pp_plan_estimate(x, &p, false, &est_t, &eb, &e)) fail_msg("%s", e.msg);

    double bytes = pp_model_params(&m) * prof.sw.grad_reduce_bytes;
    pp_coll_result r = coll_run(c, PP_FIDELITY_FLOW, PP_COLL_ALLREDUCE,
                                PP_ALGO_RING, bytes, 144, NULL);
    printf("  dp 144 over 2 NVL72 racks, %.3g GB AllReduce: estimate %.4f "
           "s, flow simulation %.4f s (%d channels)\n",
           bytes / 1e9, eb.dp_comm_exposed_s, r.time_s, (int)r.channels);
    assert_true(fabs(eb.dp_comm_exposed_s / r.time_s - 1) <= 0.05);
    pp_plan_estimator_free(x);
    pp_cluster_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_closed_form),
        cmocka_unit_test(test_dp_ring_rack_scale),
        cmocka_unit_test(test_terms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
