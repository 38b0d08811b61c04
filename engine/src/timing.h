/* The one timing core: every benchmark's points are measured here. */
#ifndef MPISCOPE_TIMING_H
#define MPISCOPE_TIMING_H

#include "bench.h"
#include "buffers.h"
#include "context.h"
#include "disturb.h"
#include "options.h"
#include "point.h"
#include "stats.h"
#include "sync.h"

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
