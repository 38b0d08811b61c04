/* Blocking collectives (the IMB set); their registry rows are in registry.c.
 * The buffer layouts, --check patterns, byte counts and bus bandwidth factors
 * here serve the nonblocking collectives of nbc.c too. */
#ifndef MPISCOPE_COLL_H
#define MPISCOPE_COLL_H

#include "bench.h"

double coll_one(const bench_ctx_t *c);
double coll_zero(const bench_ctx_t *c);
double coll_size(const bench_ctx_t *c);       /* the size X */
double coll_ranks_size(const bench_ctx_t *c); /* ranks x X */
double coll_busbw_one(const bench_ctx_t *c);
double coll_busbw_allreduce(const bench_ctx_t *c);  /* 2 (n-1) / n */
double coll_busbw_spread(const bench_ctx_t *c);     /* (n-1) / n */
void coll_teardown(bench_ctx_t *c);

/* Per collective: buffer sizes, setup (counts and displacements), --check
 * input and verification, and the call itself (req NULL: blocking). */
#define COLL_DECLARE(name)                                                         \
    void name##_buffers(const bench_ctx_t *c, size_t *send, size_t *recv);         \
    void name##_setup(bench_ctx_t *c);                                             \
    void name##_fill(bench_ctx_t *c);                                              \
    long name##_verify(const bench_ctx_t *c, long *verified);                      \
    void name##_call(bench_ctx_t *c, MPI_Request *req);                            \
    void name##_event(bench_ctx_t *c);

COLL_DECLARE(barrier)
COLL_DECLARE(bcast)
COLL_DECLARE(reduce)
COLL_DECLARE(allreduce)
COLL_DECLARE(allgather)
COLL_DECLARE(allgatherv)
COLL_DECLARE(alltoall)
COLL_DECLARE(alltoallv)
COLL_DECLARE(gather)
COLL_DECLARE(gatherv)
COLL_DECLARE(scatter)
COLL_DECLARE(scatterv)
COLL_DECLARE(reduce_scatter)
COLL_DECLARE(reduce_scatter_block)
COLL_DECLARE(scan)
COLL_DECLARE(exscan)

#endif
