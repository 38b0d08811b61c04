/* --points: which entries of the plan a launch measures, and in which order.
 * SPEC is ids and inclusive ranges separated by commas ("0,3,5-9"), or @FILE
 * holding the same with commas, spaces or newlines between them (a long
 * selection needs no long argv). Kept as ranges twice: as given (the measuring
 * order) and sorted and merged (lookups): "0-1000000" costs nothing. */
#ifndef MPISCOPE_POINTS_H
#define MPISCOPE_POINTS_H

#include <stddef.h>

typedef struct point_range { long lo, hi; } point_range_t;

typedef struct point_set {
    point_range_t *listed;  /* as given: the order to measure in */
    size_t nlisted;
    point_range_t *ranges;  /* sorted, disjoint, not adjacent */
    size_t n;
    int given;              /* --points was given; without it every entry is selected */
} point_set_t;

/* 0, or -1 with a one-line message in err. */
int points_parse(const char *spec, point_set_t *out, char *err, size_t errlen);
int points_selects(const point_set_t *s, long id);
/* The largest id named (-1 when none). */
long points_max(const point_set_t *s);
/* The ids below nplan to measure, in measuring order, into ids (room for
 * nplan): as listed, a range ascending, each id at its first mention; without
 * --points every id in plan order. Returns how many, or -1 out of memory. */
long points_order(const point_set_t *s, long nplan, long *ids);
void points_free(point_set_t *s);

#endif
