/*
 * bench_step_util.h: what bench_step and bench_moe share: the clocks, the
 * peak resident memory, the simulator's counters for one iteration, and
 * picking cases by name from the command line.  Header-only (static): each
 * benchmark is one translation unit.
 */
#ifndef PODPLAN_BENCH_STEP_UTIL_H
#define PODPLAN_BENCH_STEP_UTIL_H

#include "podplan/sim.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* CPU time of this process: on a shared machine the wall time runs
 * ahead of it. */
static inline double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double peak_rss_mib(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_maxrss / 1024.0; /* Linux: kilobytes */
}

/* Events, transfers, collectives, flows and max-min updates of one
 * simulated iteration that took t_sim seconds. */
static void print_step_counters(const pp_step_result *r, double t_sim) {
    printf("        iteration %.3f s, %.1f TFLOP/s per GPU; events %llu "
           "(%.2f M/s), transfers %llu, collectives %llu\n",
           r->iteration_time_s, r->tflops_per_gpu,
           (unsigned long long)r->events, (double)r->events / t_sim / 1e6,
           (unsigned long long)r->transfers,
           (unsigned long long)r->collectives);
    printf("        flows %llu, max active %zu, updates %llu (full %llu), "
           "flows re-solved %llu (%.1f per update)\n",
           (unsigned long long)r->net.flows_started, r->net.max_active,
           (unsigned long long)r->net.updates,
           (unsigned long long)r->net.full_solves,
           (unsigned long long)r->net.flows_touched,
           r->net.updates
               ? (double)r->net.flows_touched / (double)r->net.updates
               : 0.0);
}

/* Whether the case `name` runs: all of them without arguments, else the
 * ones named. */
static bool case_wanted(int argc, char **argv, const char *name) {
    bool want = argc < 2;
    for (int k = 1; k < argc; k++)
        if (strcmp(argv[k], name) == 0) want = true;
    return want;
}

/* Loads a case (cluster, model, SPEC) and points a fresh step config at
 * it.  Returns 0, or 1 with the error on stderr under the benchmark's
 * name (and nothing left to free). */
static int load_case(const char *bench, const char *cluster,
                     const char *model, const char *spec, pp_cluster **c,
                     pp_model *m, pp_parallel *p, pp_step_config *cfg) {
    pp_error e = PP_ERROR_INIT;
    *c = NULL;
    pp_parallel_init(p);
    if (pp_cluster_load(cluster, NULL, 0, NULL, c, &e) ||
        pp_model_load(model, m, &e) || pp_parallel_parse(spec, p, &e)) {
        fprintf(stderr, "%s: %s\n", bench, e.msg);
        pp_cluster_free(*c);
        *c = NULL;
        return 1;
    }
    pp_step_config_init(cfg);
    cfg->model = m;
    cfg->par = p;
    cfg->cluster = *c;
    return 0;
}

#endif
