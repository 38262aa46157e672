/*
 * whatif/dist.c: a study's variants spread over MPI ranks.
 *
 * Built with PODPLAN_HAVE_MPI, and launched by mpirun (Open MPI sets
 * OMPI_COMM_WORLD_SIZE) or srun (Slurm sets PMI_SIZE / PMIX_RANK), rank k
 * runs the variants i with i % size == k and rank 0 gathers them.  Every
 * result is plain data (pp_whatif_result has no pointers) computed by the
 * same code from the same inputs, so the gathered array, and what rank 0
 * writes from it, are byte-identical to a serial run.  Outside a launcher
 * MPI is not started at all, so a plain run costs nothing.
 */
#include "whatif_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef PODPLAN_HAVE_MPI
#include <mpi.h>
static bool started;
#endif

static bool launched(void) {
    const char *v[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                       "SLURM_STEP_NUM_TASKS"};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        if (getenv(v[i])) return true;
    return false;
}

int pp_whatif_dist_init(int *argc, char ***argv, int *rank, int *size) {
    *rank = 0;
    *size = 1;
#ifdef PODPLAN_HAVE_MPI
    if (!launched()) return 0;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) return PP_EIO;
    started = true;
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
#else
    (void)argc;
    (void)argv;
    (void)launched;
#endif
    return 0;
}

void pp_whatif_dist_fini(void) {
#ifdef PODPLAN_HAVE_MPI
    if (started) MPI_Finalize();
    started = false;
#endif
}

/* What a rank reports besides its results: its first failure. */
typedef struct failure {
    int64_t index; /* the variant, or INT64_MAX when none failed */
    int32_t code;
    char msg[PP_ERROR_MSG_MAX];
} failure;

#ifdef PODPLAN_HAVE_MPI
/* Waits for requests without spinning: Open MPI's blocking calls poll a
 * core at 100% while rank 0 waits for the slowest rank, which on a
 * machine with as many cores as ranks takes that core from the rank it
 * waits for.  A 2 ms sleep between tests costs nothing beside variants
 * that take tens of milliseconds or more. */
static void wait_all(int n, MPI_Request *req) {
    struct timespec ts = {0, 2000000};
    for (;;) {
        int done = 0;
        MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
        if (done) return;
        nanosleep(&ts, NULL);
    }
}
#endif

int pp_whatif_dist_gather(pp_whatif_result *r, size_t n, int rank, int size,
                          int *rc, pp_error *e) {
    if (size <= 1) return 0;
#ifdef PODPLAN_HAVE_MPI
    failure mine = {INT64_MAX, 0, ""};
    if (*rc < 0) {
        /* The rank's failing variant is the one its loop stopped at. */
        for (size_t i = (size_t)rank; i < n; i += (size_t)size)
            if (r[i].status == -1) {
                mine.index = (int64_t)i;
                break;
            }
        if (mine.index == INT64_MAX) mine.index = rank;
        mine.code = *rc;
        snprintf(mine.msg, sizeof mine.msg, "%s", e ? e->msg : "");
    }
    /* Each rank's own results, packed in order (i = rank, rank + size,
     * ...), travel as one message. */
    size_t per = (n + (size_t)size - 1) / (size_t)size;
    pp_whatif_result *pack = pp_xcalloc(per ? per : 1, sizeof *pack);
    failure first = mine;
    if (rank != 0) {
        size_t k = 0;
        for (size_t i = (size_t)rank; i < n; i += (size_t)size) pack[k++] = r[i];
        MPI_Request req[3];
        MPI_Isend(&mine, sizeof mine, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(pack, (int)(k * sizeof *pack), MPI_BYTE, 0, 2,
                  MPI_COMM_WORLD, &req[1]);
        MPI_Irecv(&first, sizeof first, MPI_BYTE, 0, 3, MPI_COMM_WORLD,
                  &req[2]);
        wait_all(3, req);
    } else {
        size_t m = (size_t)size - 1;
        failure *fail = pp_xcalloc(m, sizeof *fail);
        pp_whatif_result *all = pp_xcalloc(m * (per ? per : 1), sizeof *all);
        MPI_Request *req = pp_xcalloc(2 * m, sizeof *req);
        for (size_t q = 0; q < m; q++) {
            size_t k = 0;
            for (size_t i = q + 1; i < n; i += (size_t)size) k++;
            MPI_Irecv(&fail[q], sizeof *fail, MPI_BYTE, (int)q + 1, 1,
                      MPI_COMM_WORLD, &req[2 * q]);
            MPI_Irecv(&all[q * per], (int)(k * sizeof *all), MPI_BYTE,
                      (int)q + 1, 2, MPI_COMM_WORLD, &req[2 * q + 1]);
        }
        wait_all((int)(2 * m), req);
        for (size_t q = 0; q < m; q++) {
            size_t k = 0;
            for (size_t i = q + 1; i < n; i += (size_t)size)
                r[i] = all[q * per + k++];
            if (fail[q].code < 0 && fail[q].index < first.index)
                first = fail[q];
        }
        for (size_t q = 0; q < m; q++)
            MPI_Isend(&first, sizeof first, MPI_BYTE, (int)q + 1, 3,
                      MPI_COMM_WORLD, &req[q]);
        wait_all((int)m, req);
        free(req);
        free(all);
        free(fail);
    }
    free(pack);
    *rc = first.code;
    if (first.code < 0 && e) {
        pp_error_clear(e);
        pp_error_set(e, first.code, "%s", first.msg);
    }
    return 0;
#else
    (void)r;
    (void)n;
    (void)rank;
    (void)rc;
    (void)e;
    return 0;
#endif
}
