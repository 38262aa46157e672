/*
 * bench_topo.c: how long loading a cluster (YAML -> device graph, CSR and
 * igraph copy) and `topo stats` (counts, over-subscription, max-flow
 * bisection over a few splits) take for every shipped cluster.
 *
 *   bench_topo [CLUSTER...]     (default: every .yaml in topologies/ but the
 *                                hardware catalogue)
 *
 * Prints figures; asserts nothing (DESIGN.md: no timed tests).  Each time
 * is the median of 5 runs, so one page fault storm does not decide it.
 */
#include "podplan/sim.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUNS 5

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The shipped clusters: topologies/ under $PODPLAN_DATA_DIR, else the
 * source tree this was built from. */
static size_t list_clusters(char ***out) {
    const char *root = getenv("PODPLAN_DATA_DIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/topologies",
             root && root[0] ? root : PODPLAN_SOURCE_DIR);
    DIR *d = opendir(dir);
    size_t n = 0, cap = 0;
    char **names = NULL;
    if (!d) {
        fprintf(stderr, "bench_topo: cannot open %s\n", dir);
        *out = NULL;
        return 0;
    }
    struct dirent *ent;
    while ((ent = readdir(d))) {
        size_t len = strlen(ent->d_name);
        if (len <= 5 || strcmp(ent->d_name + len - 5, ".yaml") != 0) continue;
        if (strcmp(ent->d_name, "hardware.yaml") == 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            names = pp_xrealloc(names, cap * sizeof *names);
        }
        names[n] = pp_xstrdup(ent->d_name);
        names[n][len - 5] = '\0';
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    *out = names;
    return n;
}

static int bench_one(const char *name, const pp_catalog *cat) {
    double t_load[RUNS], t_stats[RUNS];
    size_t nd = 0, nl = 0;
    pp_topo_stats s;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = NULL;

    for (int i = 0; i < RUNS; i++) {
        double t0 = now_s();
        if (pp_cluster_load(name, NULL, 0, cat, &c, &e)) {
            printf("%-24s load failed: %s\n", name, e.msg);
            return 1;
        }
        t_load[i] = now_s() - t0;
        pp_cluster_devices(c, &nd);
        pp_cluster_links(c, &nl);
        t0 = now_s();
        if (pp_topo_stats_compute(c, &s, &e)) {
            printf("%-24s stats failed: %s\n", name, e.msg);
            pp_cluster_free(c);
            return 1;
        }
        t_stats[i] = now_s() - t0;
        pp_cluster_free(c);
        c = NULL;
    }
    /* Links are stored one per direction; the table shows both counts. */
    printf("%-24s %8d %8zu %9zu %10.2f %10.2f  %-6s %s\n", name, (int)s.gpus,
           nd, nl / 2, 1e3 * median(t_load, RUNS), 1e3 * median(t_stats, RUNS),
           s.bisection_split, s.non_blocking ? "yes" : "no");
    return 0;
}

int main(int argc, char **argv) {
    char **names = NULL;
    size_t n;
    pp_catalog *cat = NULL;
    pp_error e = PP_ERROR_INIT;
    int failed = 0;

    /* The catalogue is loaded once: the figure is the cluster's cost. */
    if (pp_catalog_load(NULL, &cat, &e)) {
        fprintf(stderr, "bench_topo: %s\n", e.msg);
        return 1;
    }
    if (argc > 1) {
        n = (size_t)(argc - 1);
        names = pp_xmalloc(n * sizeof *names);
        for (size_t i = 0; i < n; i++) names[i] = pp_xstrdup(argv[i + 1]);
    } else {
        n = list_clusters(&names);
    }
    printf("%-24s %8s %8s %9s %10s %10s  %-6s %s\n", "cluster", "GPUs",
           "devices", "links", "load ms", "stats ms", "split", "non-blocking");
    for (size_t i = 0; i < n; i++) failed |= bench_one(names[i], cat);
    printf("(median of %d runs; load = YAML -> device graph + CSR + igraph; "
           "links = physical, each with two directed edges)\n",
           RUNS);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    pp_catalog_free(cat);
    return failed;
}
