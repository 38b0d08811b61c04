/* What the timing core measured of one point (point_t): what the reporters and a kernel's
 * describe read. Not the --points selection (points.h). */
#ifndef MPISCOPE_POINT_H
#define MPISCOPE_POINT_H

#include "disturb.h"
#include "stats.h"
#include "sync.h"

typedef struct point {
    stats_t time_us;          /* of the reported time (event / ops_per_event) */
    double *samples_us;       /* sorted; rank 0 only, valid until the next point */
    int converged;
    const char *stop_reason;  /* ci, reps, max_reps, max_time, timer_resolution, identical */
    double sample_step_us;    /* rank 0: the smallest non-zero difference of sorted samples (0: none) */
    long warmup;
    double elapsed_s;
    double host_s;            /* the host's time for the point: differs from elapsed_s under simulation */
    double event_median_s;    /* one event's median, seeds the next watchdog limit */
    long check_errors, verified_bytes;
    const char *sync;         /* how sample starts were synchronised */
    char sync_reason[240];    /* rank 0: why the row's default method gave way ("" when it did not) */
    long invalid;             /* samples dropped: a rank started late (window sync) */
    double window_us;         /* window sync: the final time between starts */
    clock_quality_t clock;    /* phase 0's clock offset estimates (pings 0: clocks not synchronised) */
    /* Rows flagged BENCH_COLLECTIVE: the minimum, maximum and average over
     * ranks of each rank's mean time per operation (rank 0 only). */
    int have_rank_means;
    double rank_mean_min_us, rank_mean_max_us, rank_mean_avg_us;
    /* Rows with more than one phase: per phase the median of the figure per
     * sample and its sample count, and every rank's own median, phase-major
     * (rank 0 only; phase 0 is time_us). nphases is 0 for one phase. */
    int nphases;
    const double *phase_us, *phase_rank_us;
    const size_t *phase_n;
    const int *rank_cpus;     /* the CPU each rank was on at the end (rank 0 only; -1: unknown) */
    const disturb_t *disturb; /* every rank's counters over the point, warm-up included (rank 0 only) */
    /* Set by the caller around time_point: the watchdog's limit for the point, and how many
     * times it passed while the point still progressed (most over ranks; rank 0 only). */
    double watchdog_limit_s;
    int watchdog_extensions;
} point_t;

#endif
