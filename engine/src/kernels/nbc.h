/* Nonblocking collectives with overlap (IMB-NBC); their rows are in
 * registry.c and share buffers, --check and byte counts with coll.h. */
#ifndef MPISCOPE_NBC_H
#define MPISCOPE_NBC_H

#include "bench.h"

/* Sets the compute phase to take about as long as the pure operation. */
void nbc_calibrate(bench_ctx_t *c, double pure_event_s);
/* The collective's fields and the "overlap" object. */
void nbc_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);

void ibarrier_event(bench_ctx_t *c);
void ibcast_event(bench_ctx_t *c);
void ireduce_event(bench_ctx_t *c);
void iallreduce_event(bench_ctx_t *c);
void iallgather_event(bench_ctx_t *c);
void ialltoall_event(bench_ctx_t *c);
void ireduce_scatter_event(bench_ctx_t *c);
void igather_event(bench_ctx_t *c);
void igatherv_event(bench_ctx_t *c);
void iscatter_event(bench_ctx_t *c);
void iscatterv_event(bench_ctx_t *c);
void iallgatherv_event(bench_ctx_t *c);
void ialltoallv_event(bench_ctx_t *c);
void ialltoallw_event(bench_ctx_t *c);
void ireduce_scatter_block_event(bench_ctx_t *c);
void iscan_event(bench_ctx_t *c);
void iexscan_event(bench_ctx_t *c);

#endif
