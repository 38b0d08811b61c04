/* Fixed work quantum (FWQ): OS noise as seen by the ranks' cores. */
#ifndef MPISCOPE_KERNELS_FWQ_H
#define MPISCOPE_KERNELS_FWQ_H
#include "bench.h"

double fwq_one(const bench_ctx_t *c);
double fwq_zero(const bench_ctx_t *c);
void fwq_setup(bench_ctx_t *c);
void fwq_event(bench_ctx_t *c);
void fwq_collect(bench_ctx_t *c);
void fwq_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);
void fwq_teardown(bench_ctx_t *c);
long fwq_verify(const bench_ctx_t *c, long *verified);

#endif
