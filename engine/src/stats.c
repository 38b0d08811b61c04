/* Order statistics: median, percentiles and the median's confidence interval. */
#include "stats.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Linear interpolation between order statistics (numpy's default). */
static double quantile_sorted(const double *x, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    double frac = pos - (double)lo;
    return x[lo] + frac * (x[hi] - x[lo]);
}

/* Smallest j (0-based count) with P(Bin(n, 1/2) <= j-1) > 0.025: the lower
 * order statistic x_(j) of the 95 % interval is then x[j-1] (1-based j). */
static size_t lower_rank(size_t n)
{
    if (n > 1000) {
        double j = floor(0.5 * (double)n - 0.98 * sqrt((double)n));
        return j < 1 ? 1 : (size_t)j;
    }
    double cdf = 0.0;
    for (size_t k = 0; k <= n; k++) {
        double logp = lgamma((double)n + 1) - lgamma((double)k + 1) -
                      lgamma((double)(n - k) + 1) - (double)n * log(2.0);
        cdf += exp(logp);
        if (cdf > 0.025) return k == 0 ? 1 : k;
    }
    return 1;
}

/* Two samples read the same tick of the clock (equal up to the rounding of its conversion). */
static int same_tick(double a, double b)
{
    return fabs(a - b) <= 1e-5 * fmax(fabs(a), fabs(b));
}

/* Half the step from x[i] to the next distinct sample on the side `dir` (-1 below, +1 above),
 * or -1 when every sample on that side reads the same. */
static double half_step(const double *x, size_t n, size_t i, int dir)
{
    for (size_t m = i; dir < 0 ? m > 0 : m + 1 < n; m = dir < 0 ? m - 1 : m + 1) {
        double next = x[dir < 0 ? m - 1 : m + 1];
        if (!same_tick(next, x[i])) return 0.5 * fabs(next - x[i]);
    }
    return -1.0;
}

double stats_step(const double *x, size_t n, double below)
{
    double step = 0;
    for (size_t i = 1; i < n; i++) {
        double d = x[i] - x[i - 1];
        if (d > below && !same_tick(x[i], x[i - 1]) && (step == 0 || d < step)) step = d;
    }
    return step;
}

/* Samples quantised by the clock (here: 10 ns steps under barrier sync) tie, and an interval
 * whose bounds sit on tied samples can be narrower than a clock step, even of zero width, so
 * that a point "converges" at any target. Such a bound moves out by half the step to the next
 * distinct sample, never below the smallest sample (the upper bound takes the lower step when
 * no sample lies above it): the clock cannot say more. */
static void widen_tied_bounds(const double *x, size_t n, size_t lo, size_t hi, stats_t *s)
{
    int tied_lo = (lo > 0 && same_tick(x[lo - 1], x[lo])) || same_tick(x[lo], x[lo + 1]);
    int tied_hi = (hi + 1 < n && same_tick(x[hi + 1], x[hi])) || same_tick(x[hi], x[hi - 1]);
    double below = half_step(x, n, lo, -1), above = half_step(x, n, hi, +1);
    if (above < 0) above = below;
    if (tied_lo && below > 0) s->ci_low = x[lo] - below;
    if (tied_hi && above > 0) s->ci_high = x[hi] + above;
}

void stats_compute(double *x, size_t n, int exact_clock, stats_t *s)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    if (n == 0) return;
    qsort(x, n, sizeof *x, cmp_double);
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += x[i];
    s->mean = sum / (double)n;
    double var = 0.0;
    for (size_t i = 0; i < n; i++) var += (x[i] - s->mean) * (x[i] - s->mean);
    s->stddev = n > 1 ? sqrt(var / (double)(n - 1)) : 0.0;
    s->min = x[0];
    s->median = quantile_sorted(x, n, 0.5);
    s->p90 = quantile_sorted(x, n, 0.9);
    s->p99 = quantile_sorted(x, n, 0.99);
    if (n < 6) { /* too few samples for a 95 % interval: the range bounds it */
        s->ci_low = x[0];
        s->ci_high = x[n - 1];
        return;
    }
    size_t j = lower_rank(n);       /* 1-based rank of the lower bound */
    size_t k = n + 1 - j;           /* symmetric upper rank */
    s->ci_low = x[j - 1];
    s->ci_high = x[k - 1];
    /* an exact clock's ties are the same time, not one tick of a coarse clock */
    if (!exact_clock) widen_tied_bounds(x, n, j - 1, k - 1, s);
}

double median_of(const double *x, size_t n)
{
    if (n == 0) return 0.0;
    double *copy = malloc(n * sizeof *copy);
    if (!copy) return 0.0;
    memcpy(copy, x, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, cmp_double);
    double m = quantile_sorted(copy, n, 0.5);
    free(copy);
    return m;
}

int stats_converged(const stats_t *s, double target)
{
    if (s->n < 6) return 0;
    double tol = target * s->median;
    return s->median - s->ci_low <= tol && s->ci_high - s->median <= tol;
}
