/*
 * bench_collective.c: what collectives cost to simulate as the group grows.
 *
 * On topologies/fat-tree-16k (2,048 DGX-H100 servers, 8 NDR rails, a
 * three-level rail-optimised fat-tree) the first N GPUs, N = 64 .. 16,384,
 * run at flow fidelity:
 *   ring AllReduce, stream granularity (one flow per GPU and channel: 8 x N
 *     flows, rail-aligned, started at once);
 *   ring AllReduce, step granularity, for small N (2(N-1) phases);
 *   double-binary-tree AllReduce (stream);
 *   all-to-all (N(N-1) flows at once, one coupled set: small N only).
 * For each it prints the wall time of building the simulation and running
 * the collective, engine events and events per second, max-min updates and
 * full solves, the mean coupled set re-solved per update against the mean
 * number of active flows then (what a full solve would touch), and the
 * simulated time and bus bandwidth.  Figures, not assertions (DESIGN.md):
 * the target is the 16,384-GPU ring in under 10 s on one core.
 *
 * usage: bench_collective [cluster [bytes [max_gpus [max_alltoall_gpus]]]]
 */
#include "podplan/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct bcase {
    const char *label;
    pp_coll_op op;
    pp_coll_algo algo;
    pp_granularity gran;
    int32_t min_gpus, max_gpus; /* sizes: min, 2 min or 4 min, ..., max */
    int32_t factor;
} bcase;

static const bcase cases[] = {
    {"ring stream", PP_COLL_ALLREDUCE, PP_ALGO_RING, PP_GRAN_STREAM, 64,
     1 << 30, 4},
    {"ring step", PP_COLL_ALLREDUCE, PP_ALGO_RING, PP_GRAN_STEP, 64, 256, 4},
    {"tree stream", PP_COLL_ALLREDUCE, PP_ALGO_TREE, PP_GRAN_STREAM, 64,
     1 << 30, 4},
    /* One coupled set whose flows end at many different times (ECMP
     * collisions give them different rates): about one full max-min
     * solve of N^2 flows per completion, so small N (argv[4] raises). */
    {"alltoall", PP_COLL_ALLTOALL, PP_ALGO_RING, PP_GRAN_STREAM, 32, 128, 2},
};

static int run_case(const pp_cluster *c, const bcase *bc, const int32_t *gpus,
                    int32_t n, double bytes) {
    pp_error e = PP_ERROR_INIT;
    pp_sim *s = NULL;
    double t0 = wall();
    if (pp_sim_new(c, PP_FIDELITY_FLOW, 0, &s, &e)) {
        fprintf(stderr, "pp_sim_new: %s\n", e.msg);
        return 1;
    }
    pp_coll_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.op = bc->op;
    sp.algo = bc->algo;
    sp.bytes = bytes;
    sp.gpus = gpus;
    sp.n_gpus = (size_t)n;
    sp.server = -1;
    sp.gran = bc->gran;
    pp_coll_result r;
    double t1 = wall();
    if (pp_sim_collective(s, &sp, &r, &e)) {
        fprintf(stderr, "%s on %d GPUs: %s\n", bc->label, (int)n, e.msg);
        pp_sim_free(s);
        return 1;
    }
    double t2 = wall();
    pp_flownet_stats st;
    pp_flownet_stats_get(pp_sim_net(s), &st);
    double upd = st.updates ? (double)st.updates : 1;
    printf("%-12s %6d %8.3f %8.3f %10llu %10.3g %9llu %6llu %10.1f %10.1f "
           "%9llu %12.6g %9.2f\n",
           bc->label, (int)n, t1 - t0, t2 - t1, (unsigned long long)r.events,
           (double)r.events / (t2 - t1 > 0 ? t2 - t1 : 1e-9),
           (unsigned long long)st.updates, (unsigned long long)st.full_solves,
           (double)st.flows_touched / upd, (double)st.active_sum / upd,
           (unsigned long long)st.max_active, r.time_s, r.busbw_Bps / 1e9);
    fflush(stdout);
    pp_sim_free(s);
    return 0;
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "fat-tree-16k";
    double bytes = argc > 2 ? atof(argv[2]) : 1e9;
    int32_t max_gpus = argc > 3 ? (int32_t)atoi(argv[3]) : 16384;
    int32_t max_a2a = argc > 4 ? (int32_t)atoi(argv[4]) : 0;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = NULL;
    double t0 = wall();
    if (pp_cluster_load(name, NULL, 0, NULL, &c, &e)) {
        fprintf(stderr, "bench_collective: %s\n", e.msg);
        return 1;
    }
    const pp_cluster_info *info = pp_cluster_info_get(c);
    printf("cluster %s: %d GPUs, loaded in %.3f s; %.3g bytes per GPU; "
           "flow fidelity\n\n",
           info->name, (int)info->gpus, wall() - t0, bytes);
    printf("%-12s %6s %8s %8s %10s %10s %9s %6s %10s %10s %9s %12s %9s\n",
           "collective", "gpus", "setup_s", "run_s", "events", "events/s",
           "updates", "full", "touched", "active", "max_flows", "sim_time_s",
           "busbw_GB/s");
    int32_t *gpus = malloc((size_t)info->gpus * sizeof *gpus);
    for (int32_t i = 0; i < info->gpus; i++)
        gpus[i] =
            pp_cluster_gpu(c, i / info->gpus_per_node, i % info->gpus_per_node);
    int rc = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0] && !rc; k++) {
        int32_t top = cases[k].max_gpus;
        if (cases[k].op == PP_COLL_ALLTOALL && max_a2a > 0) top = max_a2a;
        for (int32_t n = cases[k].min_gpus;
             n <= info->gpus && n <= max_gpus && n <= top && !rc;
             n *= cases[k].factor)
            rc = run_case(c, &cases[k], gpus, n, bytes);
    }
    printf("\ntouched: mean flows re-solved per max-min update (the coupled "
           "set);\nactive: mean flows active at an update (what a full solve "
           "would touch).\n");
    free(gpus);
    pp_cluster_free(c);
    return rc;
}
