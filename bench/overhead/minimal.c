/* The yardstick for bench/overhead: the simplest honest MPI loops, with no
 * framework around them. `minimal pingpong SIZE BATCHES` prints the median
 * over batches of the mean half round trip in a batch of 1000 (us);
 * `minimal bw SIZE BATCHES` the median bandwidth of windows of 64 from one
 * send buffer into one receive buffer (MB/s; osu_bw -b single, the engine's
 * default --buffers);
 * `minimal put SIZE BATCHES` the median over batches of the mean time of
 * MPI_Put + MPI_Win_flush 0 -> 1 in a batch of 1000 (us), `minimal putbw SIZE
 * BATCHES` the median over single epochs of 64 puts then one flush (MB/s; one
 * epoch of 1 MiB puts lasts about a millisecond, so it is timed alone), every
 * put from one buffer to one place (the engine's --rma-buffers single): a window
 * from MPI_Win_allocate under one MPI_Win_lock_all, as the engine's default. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (argc != 4) {
        if (rank == 0) fprintf(stderr, "usage: minimal pingpong|bw|put|putbw SIZE BATCHES\n");
        MPI_Finalize();
        return 2;
    }
    int bw = strcmp(argv[1], "bw") == 0, put = strcmp(argv[1], "put") == 0, putbw = strcmp(argv[1], "putbw") == 0;
    int size = atoi(argv[2]), batches = atoi(argv[3]);
    int inner = bw ? 10 : putbw ? 1 : 1000, window = 64;
    if (put || putbw) {
        /* one-sided: rank 0 puts into rank 1's window, rank 1 waits in the barrier */
        char *mem, *src = malloc((size_t)size + 1);
        memset(src, 0x5a, (size_t)size + 1);
        MPI_Win win;
        MPI_Win_allocate(size > 8 ? size : 8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
        memset(mem, 0xa5, (size_t)size);
        MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
        double *tp = malloc(sizeof(double) * (size_t)batches);
        for (int b = -5; b < batches; b++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < inner && rank == 0; i++) {
                for (int w = 0; w < (putbw ? window : 1); w++) MPI_Put(src, size, MPI_BYTE, 1, 0, size, MPI_BYTE, win);
                MPI_Win_flush(1, win);
            }
            double dt = MPI_Wtime() - t0;
            if (b >= 0) tp[b] = putbw ? (double)size * window * inner / dt / 1e6 : dt / inner * 1e6;
        }
        MPI_Win_unlock_all(win);
        if (rank == 0) {
            qsort(tp, (size_t)batches, sizeof *tp, cmp);
            printf("%.6f\n", tp[batches / 2]);
        }
        MPI_Win_free(&win);
        MPI_Finalize();
        return 0;
    }
    char *s = malloc((size_t)size + 1), *r = malloc((size_t)size + 1);
    /* Touch every page with data, as the engine does: untouched calloc memory reads as the
     * kernel's one shared zero page, always in cache, which would flatter this loop. */
    memset(s, 0x5a, (size_t)size + 1);
    memset(r, 0xa5, (size_t)size + 1);
    double *t = malloc(sizeof(double) * (size_t)batches);
    MPI_Request req[64];
    for (int b = -5; b < batches; b++) { /* five batches of warm-up */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < inner; i++) {
            if (bw) {
                if (rank == 0) {
                    for (int w = 0; w < window; w++) MPI_Isend(s, size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req[w]);
                    MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
                    MPI_Recv(NULL, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (rank == 1) {
                    for (int w = 0; w < window; w++)
                        MPI_Irecv(r, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &req[w]);
                    MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
                    MPI_Send(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
                }
            } else if (rank == 0) {
                MPI_Send(s, size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(r, size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(r, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(s, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
        double dt = MPI_Wtime() - t0;
        if (b >= 0) t[b] = bw ? (double)size * window * inner / dt / 1e6 : dt / inner / 2 * 1e6;
    }
    if (rank == 0) {
        qsort(t, (size_t)batches, sizeof *t, cmp);
        printf("%.6f\n", t[batches / 2]);
    }
    MPI_Finalize();
    return 0;
}
