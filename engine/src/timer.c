/* Measures the resolution and the cost of the timers, recorded in the context. */
#include "timer.h"
#include "stats.h"
#include <mpi.h>

enum { PROBES = 2001, TICK_READS = 20000 };
/* Under SMPI every clock read is a call into the simulator that moves the one simulated clock
 * by the same injected step: a few reads give the same facts, while the full count cost
 * 92,000 simulator calls per rank (27 of the 28 host seconds of a 64-rank barrier run). */
enum { SIM_PROBES = 11, SIM_TICK_READS = 100 };

static double measured_tick_s;

double timer_tick_s(void) { return measured_tick_s; }

static long long ns_between(const struct timespec *a, const struct timespec *b)
{
    return (long long)(b->tv_sec - a->tv_sec) * 1000000000LL + (b->tv_nsec - a->tv_nsec);
}

static long long gcd(long long a, long long b)
{
    while (b) {
        long long r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* The clock's real step: clock_getres says 1 ns on Linux whatever the clock
 * source does, while a coarse or virtualised source moves in larger steps
 * (samples here fell on 10 ns steps). The common divisor of the non-zero
 * differences of successive reads is the step every sample is a multiple
 * of; the smallest difference is how close two reads can be told apart. */
static void measure_tick(timer_facts_t *f, int reads)
{
    struct timespec prev, now;
    long long step = 0, smallest = 0;
    clock_gettime(CLOCK_MONOTONIC, &prev);
    for (int i = 0; i < reads; i++) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long d = ns_between(&prev, &now);
        if (d > 0) {
            step = gcd(step, d);
            if (!smallest || d < smallest) smallest = d;
        }
        prev = now;
    }
    f->tick_s = 1e-9 * (double)step;
    f->min_step_s = 1e-9 * (double)smallest;
    measured_tick_s = f->tick_s;
}

void timer_measure(timer_facts_t *f, int simulated)
{
    static double cost[PROBES];
    struct timespec res;
    clock_getres(CLOCK_MONOTONIC, &res);
    f->resolution_s = (double)res.tv_sec + 1e-9 * (double)res.tv_nsec;
    measure_tick(f, simulated ? SIM_TICK_READS : TICK_READS);
    int probes = simulated ? SIM_PROBES : PROBES;

    /* Each probe times 16 back-to-back reads so the probe's own reads amortise. */
    for (int i = 0; i < probes; i++) {
        double t0 = now_s();
        for (int k = 0; k < 16; k++) (void)now_s();
        cost[i] = (now_s() - t0) / 17.0;
    }
    f->overhead_s = median_of(cost, probes);

    for (int i = 0; i < probes; i++) {
        double t0 = MPI_Wtime();
        for (int k = 0; k < 16; k++) (void)MPI_Wtime();
        cost[i] = (MPI_Wtime() - t0) / 17.0;
    }
    f->mpi_wtime_overhead_s = median_of(cost, probes);
    f->mpi_wtick_s = MPI_Wtick();

    int *global = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &flag);
    f->mpi_wtime_is_global = flag && global ? *global : 0;
}
