/* Neighbourhood collectives (MPI 3.0) on a Cartesian or a distributed graph
 * topology (--topology), blocking and nonblocking with overlap; rows in
 * registry.c, family "neighbor". */
#ifndef MPISCOPE_NEIGHBOR_H
#define MPISCOPE_NEIGHBOR_H

#include "bench.h"
#include "option_table.h"

/* --topology, --cart-dims, --cart-open, --graph-degree */
extern const option_table_t neighbor_options;

void neighbor_setup(bench_ctx_t *c);
void neighbor_teardown(bench_ctx_t *c);
double neighbor_bytes(const bench_ctx_t *c);  /* out-neighbours x size: what a rank sends per call */
const char *neighbor_plan_skip(const bench_t *b, long size, int nranks, char *why, size_t len);
void neighbor_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);
void neighbor_calibrate(bench_ctx_t *c, double pure_event_s);

/* Per collective: buffers, --check input and verification, the blocking
 * event and the nonblocking one (three phases: pure, compute, overlapped). */
#define NEIGHBOR_DECLARE(name)                                                  \
    void name##_buffers(const bench_ctx_t *c, size_t *send, size_t *recv);      \
    void name##_fill(bench_ctx_t *c);                                           \
    long name##_verify(const bench_ctx_t *c, long *verified);                   \
    void name##_event(bench_ctx_t *c);                                          \
    void i##name##_event(bench_ctx_t *c);

NEIGHBOR_DECLARE(neighbor_allgather)
NEIGHBOR_DECLARE(neighbor_allgatherv)
NEIGHBOR_DECLARE(neighbor_alltoall)
NEIGHBOR_DECLARE(neighbor_alltoallv)
NEIGHBOR_DECLARE(neighbor_alltoallw)

#endif
