/* The records the engine writes after the context: point, skip and end, as
 * JSON Lines or as a human table (--format table). */
#ifndef MPISCOPE_RECORDS_H
#define MPISCOPE_RECORDS_H

#include "bench.h"
#include "context.h"
#include "options.h"
#include "timing.h"
#include <stdio.h>

void record_point(FILE *out, const options_t *o, const world_t *w, const bench_t *b,
                  const bench_ctx_t *c, const point_t *p);
void record_skip(FILE *out, const options_t *o, const bench_t *b, long size, int ranks, const char *reason);
void record_end(FILE *out, const options_t *o, long points, double elapsed_s);

#endif
