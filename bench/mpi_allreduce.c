/*
 * mpi_allreduce.c: the yardstick for `podplan exec collective`: Open MPI's
 * MPI_Allreduce (float, sum, out of place) timed the way podplan times
 * itself -- warm-up, then `iters` calls, the mean over ranks of the loop
 * time per call -- and printed as "size_bytes time_us busbw_GBps" with
 * nccl-tests' bus-bandwidth factor 2(n-1)/n.
 *
 *   mpirun --mca btl tcp,self --mca pml ob1 -np 4 mpi_allreduce 1024 268435456 4 10 3
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc != 6) {
        if (rank == 0)
            fprintf(
                stderr,
                "usage: mpi_allreduce MINBYTES MAXBYTES FACTOR ITERS WARMUP\n");
        MPI_Finalize();
        return 2;
    }
    size_t minb = strtoull(argv[1], NULL, 10),
           maxb = strtoull(argv[2], NULL, 10);
    size_t factor = strtoull(argv[3], NULL, 10);
    int iters = atoi(argv[4]), warm = atoi(argv[5]);
    if (factor < 2 || iters < 1 || minb < 4 || maxb < minb)
        MPI_Abort(MPI_COMM_WORLD, 2);
    float *s = malloc(maxb), *r = malloc(maxb);
    if (!s || !r) MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < maxb / 4; i++) s[i] = (float)(i % 17);
    memset(r, 0, maxb);
    for (size_t b = minb; b <= maxb; b *= factor) {
        int count = (int)(b / 4);
        for (int i = 0; i < warm; i++)
            MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t = (MPI_Wtime() - t0) / iters, sum;
        MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            double mean = sum / n;
            printf("%zu %.2f %.4f\n", (size_t)count * 4, mean * 1e6,
                   (double)count * 4 / mean / 1e9 * 2.0 * (n - 1) / n);
            fflush(stdout);
        }
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
