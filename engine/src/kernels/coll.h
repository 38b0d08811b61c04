/* Blocking collectives (the IMB set); their registry rows are in registry.c.
 * The buffer layouts, --check patterns, byte counts and bus bandwidth factors
 * here serve the nonblocking collectives of nbc.c too. */
#ifndef MPISCOPE_COLL_H
#define MPISCOPE_COLL_H

#include "bench.h"
#include "option_table.h"

/* --datatype, --op, --in-place, --rotate-root, --nbc-test */
extern const option_table_t coll_options;

/* What a collective kernel is told: element type, operation and variants. */
typedef struct coll_args {
    MPI_Datatype type;
    int type_id, type_size;
    MPI_Op op;
    int op_id;
    int in_place, rotate_root;
    int nbc_tests;        /* MPI_Test calls spread over the overlapped compute phase */
    long compute_iters;   /* the calibrated compute phase of nonblocking collectives */
} coll_args_t;

/* This point's arguments (from setup until teardown). */
coll_args_t *coll_args(const bench_ctx_t *c);
const char *coll_plan_skip(const bench_t *b, long size, int nranks, char *why, size_t len);
/* datatype, count, op, in_place, rotate_root, and t_min/t_max/t_avg/osu_avg_us */
void coll_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);

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
