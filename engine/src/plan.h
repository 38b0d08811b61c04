/* The measurement plan: every point a launch would measure, in measuring
 * order, built once from the options and the number of ranks. The engine
 * prints it (--plan) and measures from it; nothing else re-derives the loop
 * over --npmin groups, benchmarks, variants and sizes. */
#ifndef MPISCOPE_PLAN_H
#define MPISCOPE_PLAN_H

#include "bench.h"
#include "options.h"
#include "points.h"
#include <stdio.h>

typedef struct plan_entry {
    long id;                 /* its index in the plan */
    const bench_t *bench;
    long size;               /* bytes; 0 for a sizeless row and for a skipped row */
    int ranks;               /* the --npmin group's size */
    int variant;             /* index among the row's variants (0 when it has none) */
    const char *variant_label;  /* "2x2"; NULL when the row has no variants */
    int sizeless;            /* BENCH_NO_SIZE: measured once, at size 0 */
    const char *skip;        /* why it will not be measured; NULL unless known now */
    long series;             /* entries of one (benchmark, ranks, variant) sweep share it */
    int phases;              /* timed phases of the point, each capped by --max-time */
} plan_entry_t;

typedef struct plan {
    plan_entry_t *entries;
    long n, cap;
    char **strings;          /* labels and reasons the entries point at */
    size_t nstrings, strings_cap;
} plan_t;

/* Walks groups (--npmin N, 2N, 4N ... then all nranks), per group the
 * benchmarks in the order named, per benchmark its variants, per variant the
 * sizes. Options that do not fit nranks are an error (-1 with a message in
 * err, as a launch would give it); so is a plan beyond the size limit. */
int plan_build(const options_t *o, int nranks, plan_t *out, char *err, size_t errlen);
void plan_free(plan_t *p);

/* Every id --points names must be in the plan: 0, or -1 with err. */
int plan_check_points(const plan_t *p, const point_set_t *sel, int nranks, char *err, size_t errlen);

/* The plan as one JSON line (only the selected entries). */
int plan_emit(FILE *out, const plan_t *p, const options_t *o, int nranks);

#endif
