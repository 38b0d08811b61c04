/* The process-grid pattern of HPL (grid benchmark); its registry row is in registry.c. */
#ifndef MPISCOPE_GRID_H
#define MPISCOPE_GRID_H

#include "bench.h"
#include "option_table.h"

/* --grid PxQ; checks that P x Q is the job's ranks */
extern const option_table_t grid_options;

int grid_variants(int nranks);
void grid_variant_label(int nranks, int variant, char *buf, size_t len);
double grid_one(const bench_ctx_t *c);
double grid_size(const bench_ctx_t *c);
void grid_buffers(const bench_ctx_t *c, size_t *send, size_t *recv);
void grid_setup(bench_ctx_t *c);
void grid_event(bench_ctx_t *c);
void grid_teardown(bench_ctx_t *c);
long grid_verify(const bench_ctx_t *c, long *verified);
void grid_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);

#endif
