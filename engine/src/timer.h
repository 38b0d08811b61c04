/* The clock every sample is read from: the monotonic clock through the vDSO,
 * cheaper than a call through MPI_Wtime and with nanosecond resolution. */
#ifndef MPISCOPE_TIMER_H
#define MPISCOPE_TIMER_H

#include <time.h>

#define TIMER_SOURCE "clock_gettime(CLOCK_MONOTONIC)"

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct timer_facts {
    double resolution_s;         /* clock_getres: what the clock claims */
    double tick_s;               /* the step successive reads really move by (their common divisor) */
    double min_step_s;           /* the smallest non-zero difference of two successive reads */
    double overhead_s;           /* median cost of one now_s() */
    double mpi_wtick_s;
    double mpi_wtime_overhead_s;
    int mpi_wtime_is_global;
} timer_facts_t;

/* Measures the facts above; call after MPI_Init. Simulated, with a few reads: each one is a
 * call into the simulator. */
void timer_measure(timer_facts_t *facts, int simulated);

/* The tick timer_measure found (0 before it ran): the timing core stops a
 * point whose interval cannot narrow below it. */
double timer_tick_s(void);

#endif
