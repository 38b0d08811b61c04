/* The pair map (pairs benchmark); its registry row is in registry.c. */
#ifndef MPISCOPE_PAIRS_H
#define MPISCOPE_PAIRS_H

#include "bench.h"

int pairs_phase_count(int nranks);
int pairs_slots(const bench_ctx_t *c);
int pairs_active(const bench_ctx_t *c);
double pairs_ops(const bench_ctx_t *c);
double pairs_size(const bench_ctx_t *c);
void pairs_event(bench_ctx_t *c);
long pairs_verify(const bench_ctx_t *c, long *verified);
void pairs_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);

#endif
