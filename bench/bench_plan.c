/*
 * bench_plan.c: the planner's figures (DESIGN.md, performance targets).
 *
 *   1. The complete closed-form search for the 1T-parameter model of the
 *      Megatron-LM table on 3,072 GPUs of selene-like (global batch 3072):
 *      every TP x PP x DP x mbs x vp x sp x recompute x ZeRO x overlap
 *      that divides, memory-checked and estimated.  Target < 1 s on one
 *      core.  Printed: layouts considered, feasible, per second.
 *   2. One estimate: the time per layout of pp_plan_estimate, cold (layer
 *      costs computed) and warm (cached).  Target < 10 us.
 *   3. The same search with the best K (default 10) simulated at flow
 *      fidelity.  Target < 30 s.
 *
 * usage: bench_plan [K] [model] [gpus] [global-batch]
 */
#include "podplan/planner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int die(const pp_error *e) {
    fprintf(stderr, "bench_plan: %s\n", e->msg);
    return 1;
}

int main(int argc, char **argv) {
    int K = argc > 1 ? atoi(argv[1]) : 10;
    const char *model = argc > 2 ? argv[2] : "megatron-1t";
    int64_t gpus = argc > 3 ? atoll(argv[3]) : 3072;
    int64_t gbs = argc > 4 ? atoll(argv[4]) : 3072;
    pp_error e = PP_ERROR_INIT;
    pp_model m;
    pp_cluster *c;
    if (pp_model_load(model, &m, &e) ||
        pp_cluster_load("selene-like", NULL, 0, NULL, &c, &e))
        return die(&e);

    pp_plan_options o;
    pp_plan_options_init(&o);
    o.gpus = gpus;
    o.gbs = gbs;
    o.top = 0;

    /* 1. The closed-form search, best of 5. */
    double best = 1e30, t0;
    pp_plan *plan = NULL;
    for (int r = 0; r < 5; r++) {
        pp_plan_free(plan);
        plan = NULL;
        t0 = now_s();
        if (pp_plan_search(&m, c, &o, &plan, &e)) return die(&e);
        double dt = now_s() - t0;
        if (dt < best) best = dt;
    }
    const pp_plan_stats *st = pp_plan_stats_get(plan);
    printf("closed-form search: %s on %lld GPUs of selene-like, global "
           "batch %lld\n",
           m.name, (long long)gpus, (long long)gbs);
    printf("  layouts considered   %llu (feasible %llu, memory-rejected "
           "%llu)\n",
           (unsigned long long)st->considered, (unsigned long long)st->feasible,
           (unsigned long long)st->rejected[PP_PLAN_REJECT_MEMORY]);
    printf("  wall time            %.4f s (whole pp_plan_search, set-up "
           "included; target < 1 s)\n",
           best);
    printf("  layouts per second   %.0f\n", (double)st->considered / best);

    /* 2. One estimate, cold and warm. */
    size_t n = pp_plan_count(plan);
    pp_plan_estimator *x;
    if (pp_plan_estimator_new(&m, c, NULL, &x, &e)) return die(&e);
    double t, cold, warm;
    pp_breakdown b;
    t0 = now_s();
    for (size_t i = 0; i < n; i++)
        if (pp_plan_estimate(x, &pp_plan_get(plan, i)->par,
                             pp_plan_get(plan, i)->dp_overlap, &t, &b, &e))
            return die(&e);
    cold = (now_s() - t0) / (double)n;
    int reps = 20;
    t0 = now_s();
    for (int r = 0; r < reps; r++)
        for (size_t i = 0; i < n; i++)
            pp_plan_estimate(x, &pp_plan_get(plan, i)->par,
                             pp_plan_get(plan, i)->dp_overlap, &t, &b, &e);
    warm = (now_s() - t0) / (double)(n * (size_t)reps);
    pp_plan_estimator_free(x);
    printf("  one estimate         %.2f us cold (layer costs computed), "
           "%.3f us warm (target < 10 us)\n",
           cold * 1e6, warm * 1e6);
    char spec[PP_SPEC_MAX];
    printf("  best by the estimate %s%s: %.2f s\n",
           pp_parallel_format(&pp_plan_get(plan, 0)->par, spec, sizeof spec),
           pp_plan_get(plan, 0)->dp_overlap ? " overlap" : "",
           pp_plan_get(plan, 0)->est_time_s);
    pp_plan_free(plan);
    plan = NULL;

    /* 3. With the best K simulated at flow fidelity. */
    if (K > 0) {
        o.top = K;
        t0 = now_s();
        if (pp_plan_search(&m, c, &o, &plan, &e)) return die(&e);
        double dt = now_s() - t0;
        st = pp_plan_stats_get(plan);
        printf("search + the best %d simulated at flow fidelity\n", K);
        printf("  wall time            %.2f s (simulations %.2f s, %llu "
               "succeeded; target < 30 s)\n",
               dt, st->simulate_s, (unsigned long long)st->simulated);
        if (st->sim_error[0])
            printf("  simulation error     %s\n", st->sim_error);
        const pp_plan_candidate *b0 = pp_plan_get(plan, 0);
        printf("  best                 %s%s: %.2f s simulated (%.2f s "
               "estimated), %.1f TFLOP/s per GPU\n",
               pp_parallel_format(&b0->par, spec, sizeof spec),
               b0->dp_overlap ? " overlap" : "", b0->iteration_time_s,
               b0->est_time_s, b0->tflops_per_gpu);
        pp_plan_free(plan);
    }
    pp_cluster_free(c);
    return 0;
}
