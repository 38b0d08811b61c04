/* Measures the resolution and the cost of the timers, recorded in the context. */
#include "timer.h"
#include "stats.h"
#include <mpi.h>

enum { PROBES = 2001 };

void timer_measure(timer_facts_t *f)
{
    static double cost[PROBES];
    struct timespec res;
    clock_getres(CLOCK_MONOTONIC, &res);
    f->resolution_s = (double)res.tv_sec + 1e-9 * (double)res.tv_nsec;

    /* Each probe times 16 back-to-back reads so the probe's own reads amortise. */
    for (int i = 0; i < PROBES; i++) {
        double t0 = now_s();
        for (int k = 0; k < 16; k++) (void)now_s();
        cost[i] = (now_s() - t0) / 17.0;
    }
    f->overhead_s = median_of(cost, PROBES);

    for (int i = 0; i < PROBES; i++) {
        double t0 = MPI_Wtime();
        for (int k = 0; k < 16; k++) (void)MPI_Wtime();
        cost[i] = (MPI_Wtime() - t0) / 17.0;
    }
    f->mpi_wtime_overhead_s = median_of(cost, PROBES);
    f->mpi_wtick_s = MPI_Wtick();

    int *global = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &flag);
    f->mpi_wtime_is_global = flag && global ? *global : 0;
}
