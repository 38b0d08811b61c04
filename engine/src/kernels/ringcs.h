/* The ring case study of the performance-programming chapter: five ways to
 * pass a computed buffer round a ring. Rows in registry.c. */
#ifndef MPISCOPE_RINGCS_H
#define MPISCOPE_RINGCS_H

#include "bench.h"

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

#endif
