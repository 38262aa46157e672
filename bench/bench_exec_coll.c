/*
 * bench_exec_coll.c: `podplan exec collective`'s allreduce (float, sum,
 * out of place) with nothing but the exec layer, printed as
 * mpi_allreduce.c prints MPI's: "size_bytes time_us busbw_GBps".  It builds
 * from exec/, models/vocab.c and common/error.c + kv.c alone, so it runs on
 * machines that lack the simulator's libraries (a lent GPU box).
 *
 *   bench_exec_coll NP MINBYTES MAXBYTES FACTOR ITERS WARMUP [CHANNELS [SLICE]]
 */
#include "podplan/exec.h"

#include <stdio.h>
#include <stdlib.h>

static int rank_main(const pp_exec_world *w, void *ctx) {
    pp_exec_coll_opts *o = ctx;
    pp_exec_coll_result *r = NULL;
    pp_error e = PP_ERROR_INIT;
    int rc = pp_exec_coll_run(w, o, &r, &e);
    if (rc) fprintf(stderr, "%s\n", e.msg);
    for (size_t i = 0; r && i < r->n_rows; i++)
        printf("%zu %.2f %.4f\n", r->rows[i].bytes,
               r->rows[i].side[0].time_s * 1e6,
               r->rows[i].side[0].busbw_Bps / 1e9);
    pp_exec_coll_result_free(r);
    return rc ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr,
                "usage: bench_exec_coll NP MINBYTES MAXBYTES FACTOR ITERS "
                "WARMUP [CHANNELS [SLICE]]\n");
        return 2;
    }
    pp_exec_coll_opts o;
    pp_exec_coll_opts_init(&o);
    o.min_bytes = strtoull(argv[2], NULL, 10);
    o.max_bytes = strtoull(argv[3], NULL, 10);
    o.step_factor = atof(argv[4]);
    o.iters = atoi(argv[5]);
    o.warmup = atoi(argv[6]);
    o.check = false;
    if (argc > 7) o.channels = atoi(argv[7]);
    if (argc > 8) o.slice_bytes = strtoull(argv[8], NULL, 10);
    pp_error e = PP_ERROR_INIT;
    int rc = pp_exec_spawn_local(atoi(argv[1]), rank_main, &o, o.timeout_s, &e);
    if (e.msg[0]) fprintf(stderr, "%s\n", e.msg);
    return rc;
}
