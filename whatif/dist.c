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

int pp_whatif_dist_gather(pp_whatif_result *r, size_t n, int rank, int size,
                          int *rc, pp_error *e) {
    if (size <= 1) return 0;
#ifdef PODPLAN_HAVE_MPI
    failure mine = {INT64_MAX, 0, ""};
    if (*rc < 0) {
        /* The rank's failing variant is the first of its own it ran. */
        for (size_t i = (size_t)rank; i < n; i += (size_t)size)
            if (r[i].index == (int32_t)i && r[i].status == -1) {
                mine.index = (int64_t)i;
                break;
            }
        if (mine.index == INT64_MAX) mine.index = rank;
        mine.code = *rc;
        snprintf(mine.msg, sizeof mine.msg, "%s", e ? e->msg : "");
    }
    failure *all = rank == 0 ? pp_xcalloc((size_t)size, sizeof *all) : NULL;
    MPI_Gather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, 0,
               MPI_COMM_WORLD);
    /* Rank 0 collects the results of the others, variant by variant. */
    for (size_t i = 0; i < n; i++) {
        int owner = (int)(i % (size_t)size);
        if (owner == 0) continue;
        if (rank == owner)
            MPI_Send(&r[i], sizeof r[i], MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        else if (rank == 0)
            MPI_Recv(&r[i], sizeof r[i], MPI_BYTE, owner, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    }
    failure first = {INT64_MAX, 0, ""};
    if (rank == 0)
        for (int k = 0; k < size; k++)
            if (all[k].code < 0 && all[k].index < first.index) first = all[k];
    free(all);
    MPI_Bcast(&first, sizeof first, MPI_BYTE, 0, MPI_COMM_WORLD);
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
