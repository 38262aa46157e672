/*
 * bench_whatif.c: a 200-variant study (bench/whatif-200.yaml: the planner
 * per variant) on one core, then the same study through the binary,
 * serial and under `mpirun -np 2`, for the speed-up of spreading the
 * variants over ranks (the outputs are compared byte for byte too).
 *
 *   bench_whatif [PODPLAN_BINARY]
 */
#include "podplan/whatif.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double run_cmd(const char *cmd) {
    double t0 = now();
    int rc = system(cmd);
    double t = now() - t0;
    if (rc != 0) {
        fprintf(stderr, "bench_whatif: failed (%d): %s\n", rc, cmd);
        return -1;
    }
    return t;
}

int main(int argc, char **argv) {
    const char *study = PODPLAN_SOURCE_DIR "/bench/whatif-200.yaml";
    pp_error e = PP_ERROR_INIT;
    pp_whatif_study *s;
    if (pp_whatif_study_load(study, &s, &e)) {
        fprintf(stderr, "bench_whatif: %s\n", e.msg);
        return 1;
    }
    size_t n = pp_whatif_variant_count(s);
    pp_whatif_result *r = calloc(n, sizeof *r);
    double t0 = now();
    for (size_t i = 0; i < n; i++)
        if (pp_whatif_run(s, i, &r[i], &e)) {
            fprintf(stderr, "bench_whatif: %s\n", e.msg);
            return 1;
        }
    pp_whatif_finish(s, r, n);
    double t = now() - t0;
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) ok += r[i].status == 0;
    printf("whatif: %zu variants (%zu feasible), planner per variant, one "
           "core: %.1f s (%.0f ms per variant)\n",
           n, ok, t, 1e3 * t / (double)n);
    free(r);
    pp_whatif_study_free(s);

    const char *bin = argc > 1 ? argv[1] : PODPLAN_BIN;
    if (system("command -v mpirun >/dev/null 2>&1") != 0) {
        printf("whatif under mpirun: skipped (mpirun not installed)\n");
        return 0;
    }
    char cmd[4096];
    const char *root = getuid() == 0 ? "--allow-run-as-root" : "";
    snprintf(cmd, sizeof cmd,
             "%s whatif --study %s -q -o /tmp/bench_whatif.serial.%d", bin,
             study, (int)getpid());
    double ts = run_cmd(cmd);
    snprintf(cmd, sizeof cmd,
             "mpirun -np 2 --oversubscribe %s %s whatif --study %s -q -o "
             "/tmp/bench_whatif.mpi.%d",
             root, bin, study, (int)getpid());
    double tm = run_cmd(cmd);
    snprintf(cmd, sizeof cmd,
             "cmp -s /tmp/bench_whatif.serial.%d /tmp/bench_whatif.mpi.%d",
             (int)getpid(), (int)getpid());
    int same = system(cmd) == 0;
    snprintf(cmd, sizeof cmd,
             "rm -f /tmp/bench_whatif.serial.%d /tmp/bench_whatif.mpi.%d",
             (int)getpid(), (int)getpid());
    if (system(cmd)) { /* nothing to do */
    }
    if (ts > 0 && tm > 0)
        printf("whatif binary: serial %.1f s, mpirun -np 2 %.1f s: speed-up "
               "%.2fx (%ld online CPUs), output %s\n",
               ts, tm, ts / tm, sysconf(_SC_NPROCESSORS_ONLN),
               same ? "byte-identical" : "DIFFERS");
    return same ? 0 : 1;
}
