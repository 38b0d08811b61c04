/* The yardstick for bench/collectives: IMB's way of timing a collective, with
 * no framework around it. `minimal SIZE BATCHES` runs BATCHES batches, each a
 * barrier then INNER back-to-back MPI_Allreduce calls of SIZE bytes of float;
 * a batch's figure is the slowest rank's mean time per call, and rank 0 prints
 * the median over batches (us). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 3) {
        if (rank == 0) fprintf(stderr, "usage: minimal SIZE BATCHES\n");
        MPI_Finalize();
        return 2;
    }
    int size = atoi(argv[1]), batches = atoi(argv[2]);
    int count = size / (int)sizeof(float), inner = size >= 65536 ? 20 : 500;
    float *s = malloc(((size_t)count + 1) * sizeof *s), *r = malloc(((size_t)count + 1) * sizeof *r);
    /* real data in touched pages, as the engine has (calloc's untouched zero pages flatter a loop) */
    for (size_t i = 0; i <= (size_t)count; i++) s[i] = r[i] = 1.0f;
    double *t = malloc(sizeof(double) * (size_t)batches);
    for (int b = -3; b < batches; b++) { /* three batches of warm-up */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < inner; i++) MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double mine = (MPI_Wtime() - t0) / inner * 1e6, worst = 0;
        MPI_Reduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (b >= 0) t[b] = worst;
    }
    if (rank == 0) {
        qsort(t, (size_t)batches, sizeof *t, cmp);
        printf("%.6f\n", t[batches / 2]);
    }
    MPI_Finalize();
    return 0;
}
