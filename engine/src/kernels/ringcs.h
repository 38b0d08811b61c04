/* The ring case study of the performance-programming chapter: five ways to
 * pass a computed buffer round a ring. Rows in registry.c. */
#ifndef MPISCOPE_RINGCS_H
#define MPISCOPE_RINGCS_H

#include "bench.h"
#include "option_table.h"

/* --niter, --ncompute, --nblock */
extern const option_table_t ringcs_options;

int ringcs_slots(const bench_ctx_t *c);
double ringcs_iterations(const bench_ctx_t *c);
double ringcs_bytes(const bench_ctx_t *c);

void ringcs1_event(bench_ctx_t *c);
void ringcs2_event(bench_ctx_t *c);
void ringcs3_event(bench_ctx_t *c);
void ringcs4_event(bench_ctx_t *c);
void ringcs5_event(bench_ctx_t *c);
long ringcs1_verify(const bench_ctx_t *c, long *verified);
long ringcs2_verify(const bench_ctx_t *c, long *verified);
long ringcs3_verify(const bench_ctx_t *c, long *verified);
long ringcs4_verify(const bench_ctx_t *c, long *verified);
long ringcs5_verify(const bench_ctx_t *c, long *verified);
/* The record's "ringcs" object: algorithm, knobs, the per-rank compute schedule,
 * and that the bandwidth includes computation. */
void ringcs1_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);
void ringcs2_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);
void ringcs3_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);
void ringcs4_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);
void ringcs5_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);

#endif
