/* The one place that defines the statistics of a point. */
#ifndef MPISCOPE_STATS_H
#define MPISCOPE_STATS_H

#include <stddef.h>

typedef struct stats {
    size_t n;
    double min, median, mean, p90, p99, ci_low, ci_high, stddev;
} stats_t;

/* Sorts x in place and fills s; the CI is the distribution-free 95 % interval
 * of the median from order statistics (exact binomial for n <= 1000). Bounds on
 * tied samples widen to the next distinct sample, unless exact_clock says the
 * samples come from an exact clock (a simulator's), whose ties are the same time. */
void stats_compute(double *x, size_t n, int exact_clock, stats_t *s);

/* Median of x without changing it (copies). */
double median_of(const double *x, size_t n);

/* True when the CI lies within +-target x median. */
int stats_converged(const stats_t *s, double target);

/* Of sorted samples: the smallest difference between two distinct values
 * (samples on the same clock tick, or closer than `below`, are not distinct;
 * 0: all tie). */
double stats_step(const double *sorted, size_t n, double below);

#endif
