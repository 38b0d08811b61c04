/* The one timing core: every benchmark's points are measured here. */
#ifndef MPISCOPE_TIMING_H
#define MPISCOPE_TIMING_H

#include "bench.h"
#include "buffers.h"
#include "context.h"
#include "disturb.h"
#include "options.h"
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

typedef struct timing {
    double *local, *combined, *scratch, *kept;  /* kept: phase 0's samples of a many-phase point */
    long capacity;
    double *phase_us, *phase_rank_us;  /* grown on demand for rows with many phases */
    size_t *phase_n;
    size_t phase_cap;
    disturb_t *disturb;       /* one per rank of the widest communicator so far */
    int disturb_cap;
} timing_t;

int timing_init(timing_t *t, const options_t *o);
void timing_free(timing_t *t);

/* Measures one point: every phase of it. Collective over the communicator of
 * c; the figures are valid on rank 0. */
void time_point(timing_t *t, const bench_t *b, bench_ctx_t *c, const buffers_t *bufs,
                const options_t *o, point_t *p);

#endif
