/*
 * bench_step.c: the cost of simulating one training iteration at flow
 * fidelity (DESIGN.md's performance targets: GPT-3 175B on 1,024 GPUs in
 * under 2 s; on 16,384 GPUs of a three-level fat-tree in under 30 s and
 * 4 GiB, one core).
 *
 * Cases (GPT-3 175B, full recomputation, mbs 1):
 *   1024a  selene-like, tp 8, pp 16, dp 8, batch 1536 (Megatron-LM's recipe)
 *   1024b  selene-like, tp 8, pp 8, dp 16, vp 2, batch 1536 (interleaved)
 *   16k    fat-tree-16k (H100, NDR), tp 8, pp 16, dp 128, batch 4096
 *   16k-ov the same with the DP buckets overlapping the backward
 *
 * Prints the wall time of pp_step_simulate alone (the cluster is loaded
 * first), the process's peak resident memory so far, engine events,
 * transfers and collectives started, flows, max-min updates and the flows
 * they re-solved.  Figures, not assertions.
 *
 * Usage: bench_step [case...]   (default: all)
 */
#include "bench_step_util.h"

#include <stdlib.h>

typedef struct bcase {
    const char *name, *cluster, *spec;
    bool overlap;
} bcase;

static const bcase cases[] = {
    {"1024a", "selene-like", "tp=8,pp=16,dp=8,mbs=1,gbs=1536", false},
    {"1024b", "selene-like", "tp=8,pp=8,dp=16,mbs=1,gbs=1536,vp=2", false},
    {"16k", "fat-tree-16k", "tp=8,pp=16,dp=128,mbs=1,gbs=4096", false},
    {"16k-ov", "fat-tree-16k", "tp=8,pp=16,dp=128,mbs=1,gbs=4096", true},
};

static int run(const bcase *b) {
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = NULL;
    pp_model m;
    pp_parallel p;
    pp_step_config cfg;
    double t0 = now();
    if (load_case("bench_step", b->cluster, "gpt3-175b", b->spec, &c, &m, &p,
                  &cfg))
        return 1;
    double t_load = now() - t0;
    cfg.dp_overlap = b->overlap;
    pp_step_result r;
    t0 = now();
    int rc = pp_step_simulate(&cfg, &r, &e);
    double t_sim = now() - t0;
    if (rc) {
        fprintf(stderr, "bench_step: %s\n", e.msg);
        pp_cluster_free(c);
        return 1;
    }
    printf("%-7s %-13s %-36s gpus %6lld  load %6.2f s  simulate %6.2f s  "
           "peak %7.1f MiB\n",
           b->name, b->cluster, b->spec, (long long)r.gpus, t_load, t_sim,
           peak_rss_mib());
    print_step_counters(&r, t_sim);
    pp_step_result_fini(&r);
    pp_cluster_free(c);
    return 0;
}

int main(int argc, char **argv) {
    int rc = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (case_wanted(argc, argv, cases[i].name)) rc |= run(&cases[i]);
    }
    return rc;
}
