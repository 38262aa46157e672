/*
 * bench_moe.c: the cost of simulating one MoE training iteration at flow
 * fidelity with expert parallelism 64 on 2,048 GPUs (issue 15's target:
 * under 30 s on one core).  Every MoE layer's dispatch and combine are
 * all-to-alls over the EP groups, forward, backward and recomputed: each
 * group of 64 is 4,032 flows.
 *
 * Cases (DeepSeek-V3 on dgx-h800-2048, tp 1, pp 16 (3 + 14 x 4 + 2
 * layers), dp 128, ep 64, ZeRO-1, full recomputation, mbs 1):
 *   ds-2mb   global batch 256: 2 micro-batches per pipeline
 *   ds-4mb   global batch 512: 4 micro-batches (quicker to iterate on)
 *   ds-16mb  global batch 2048: 16 micro-batches
 *   ds-16mb-deepep  the same with DeepSeek-V3's own dispatch
 *            (dispatcher=deepep) and rank order (placement tp,dp,pp: an
 *            EP group is 8 servers): per group 8 all-to-alls of 8 members
 *            over the network and 8 of 8 over NVLink, 896 flows, not
 *            4,032 (sim/train/step_group.c)
 *   ds-vp    DeepSeek-V3 as NVIDIA's H100 preset lays it out (tp 2, pp 8,
 *            vp 4: Et|(tt|)*30mL, dp 128, ep 64, sp, FP8 blockwise,
 *            DeepEP, its recompute of MLA's up projections and the dense
 *            MLPs, placement tp,dp,pp, stack nemo-2025), batch 2048
 *   ds-vp-a2a  the same with the all-to-all overlap (a2a_overlap=on: the
 *            combined 1F1B schedule, sim/train/step_pair.c), whose
 *            all-to-alls start beside compute instead of between it
 *   mixtral  mixtral-8x7b on dgx-h100-ndr, tp 1, dp 256, ep 8, batch 256
 *
 * Why the flows are not aggregated.  Merging flows is exact under max-min
 * only for flows on the same path that start together with the same size:
 * progressive filling freezes them at the same level, so they behave as
 * one flow of k times the bytes *with weight k* (an unweighted merged flow
 * would get one share, not k).  In these all-to-alls no two flows share a
 * path: on a rail-optimised fabric each GPU sends through its own NIC, and
 * (src GPU, dst GPU) differs for every flow of every group, inside a
 * server too (NVSwitch ports).  Merging per node pair or per rail would
 * change the answer, not just its cost, so it is not done; what is left is
 * the solver's cost per flow (about 1 us here: joining, the batched
 * update, the route lookup).
 *
 * Where ds-16mb's time goes.  The 16 stages' all-to-alls overlap, share
 * the spines and end at staggered times: 45M flows, 1.85M updates, each
 * re-solving about 385 flows (130 of which change rate) over about 210
 * links whose lists hold about 7,000 entries, mostly flows that keep
 * their rates.  Those are read too: what they use of a link is summed,
 * in list order, off its capacity, and that order is part of what makes
 * the answer the same to the last bit from run to run and change to
 * change.  Perf (one core): the updates about 60% (the walk 25%, the
 * rates' write-back 15%, progressive filling 10%), the flows' own costs
 * about 35% (leaving 11%, joining 9%, the route lookup 7%, the engine's
 * events 7%), nearly all of it cache misses.  Cutting the update's work
 * further (per-link sums kept across updates, re-solving only from the
 * saturated links of the flows that left) changes the arithmetic, and so
 * the results at the rounding level: not done here.
 *
 * Prints the wall time of pp_step_simulate alone (the cluster is loaded
 * first), the process's peak resident memory so far, engine events,
 * transfers and collectives started, flows, max-min updates and the flows
 * they re-solved.  Figures, not assertions.
 *
 * Usage: bench_moe [--exact] [case...]   (default: all)
 * --exact also prints the iteration time and every stage's breakdown to
 * 17 significant digits: a change to the solver's speed must leave them
 * identical (diff two runs' outputs).
 */
#include "bench_step_util.h"

#include <stdlib.h>

typedef struct bcase {
    const char *name, *model, *cluster, *spec;
    const char *placement; /* NULL: the default, tp,pp,dp */
    const char *stack;     /* NULL: none (the library's defaults) */
} bcase;

#define DS "tp=1,pp=16,dp=128,ep=64,first=3,last=2,mbs=1,zero=1,recompute=full"
#define DSVP                                                                   \
    "tp=2,pp=8,dp=128,ep=64,etp=1,layout=Et|(tt|)*30mL,mbs=1,gbs=2048,sp=on,"  \
    "zero=1,dtype=fp8,fp8=blockwise,dispatcher=deepep,recompute=mla_up_proj+"  \
    "mlp"
static const bcase cases[] = {
    {"ds-2mb", "deepseek-v3", "dgx-h800-2048", DS ",gbs=256", NULL, NULL},
    {"ds-4mb", "deepseek-v3", "dgx-h800-2048", DS ",gbs=512", NULL, NULL},
    {"ds-16mb", "deepseek-v3", "dgx-h800-2048", DS ",gbs=2048", NULL, NULL},
    {"ds-16mb-deepep", "deepseek-v3", "dgx-h800-2048",
     DS ",gbs=2048,dispatcher=deepep", "tdp", NULL},
    {"ds-vp", "deepseek-v3", "dgx-h800-2048", DSVP, "tdp", "nemo-2025"},
    {"ds-vp-a2a", "deepseek-v3", "dgx-h800-2048", DSVP ",a2a_overlap=on", "tdp",
     "nemo-2025"},
    {"mixtral", "mixtral-8x7b", "dgx-h100-ndr",
     "tp=1,dp=256,ep=8,mbs=1,gbs=256,zero=1,recompute=full", NULL, NULL},
};

static bool exact;

/* Every field of one breakdown, to the last bit of a double. */
static void print_exact(const char *what, const pp_breakdown *b) {
    printf("        %s: compute %.17g tp %.17g pp %.17g dp %.17g bubble "
           "%.17g other %.17g ep %.17g cp %.17g\n",
           what, b->compute_s, b->tp_comm_s, b->pp_comm_s, b->dp_comm_exposed_s,
           b->bubble_s, b->other_s, b->ep_comm_s, b->cp_comm_s);
}

static int run(const bcase *b) {
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = NULL;
    pp_model m;
    pp_parallel p;
    pp_step_config cfg;
    double t0 = now();
    if (load_case("bench_moe", b->cluster, b->model, b->spec, &c, &m, &p, &cfg))
        return 1;
    if (b->placement) memcpy(cfg.placement, b->placement, 3);
    /* A stack, as `simulate --stack` applies it: its step defaults, its
     * resolution of the SPEC's auto choices, the GPU's profile under it. */
    pp_gpu_profile prof;
    pp_stack stk;
    if (b->stack) {
        if (pp_profile_load_stack(NULL, pp_cluster_info_get(c)->gpu, b->stack,
                                  &prof, &stk, &e)) {
            fprintf(stderr, "bench_moe: %s\n", e.msg);
            pp_cluster_free(c);
            return 1;
        }
        pp_step_config_stack(&cfg, &stk);
        pp_stack_resolve(&prof, &p);
        cfg.profile = &prof;
    }
    double t_load = now() - t0;
    pp_step_result r;
    t0 = now();
    double c0 = cpu_now();
    int rc = pp_step_simulate(&cfg, &r, &e);
    double t_sim = now() - t0, c_sim = cpu_now() - c0;
    if (rc) {
        fprintf(stderr, "bench_moe: %s\n", e.msg);
        pp_cluster_free(c);
        return 1;
    }
    printf("%-8s %s on %s: %s\n         gpus %lld  load %.2f s  simulate "
           "%.2f s (CPU %.2f s)  peak %.1f MiB\n",
           b->name, b->model, b->cluster, b->spec, (long long)r.gpus, t_load,
           t_sim, c_sim, peak_rss_mib());
    print_step_counters(&r, t_sim);
    if (exact) {
        printf("        iteration %.17g s\n", r.iteration_time_s);
        print_exact("total", &r.total);
        for (size_t i = 0; i < r.n_stages; i++) {
            char what[32];
            snprintf(what, sizeof what, "stage %zu", i);
            print_exact(what, &r.stages[i]);
        }
    }
    pp_step_result_fini(&r);
    pp_cluster_free(c);
    return 0;
}

int main(int argc, char **argv) {
    int rc = 0;
    if (argc > 1 && strcmp(argv[1], "--exact") == 0) {
        exact = true;
        argv[1] = argv[0];
        argc--;
        argv++;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (case_wanted(argc, argv, cases[i].name)) rc |= run(&cases[i]);
    }
    return rc;
}
