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

/* --nbc-test, for the nonblocking rows of other families (neighbor). */
long coll_nbc_tests(void);
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

/* Persistent collectives are MPI 4.0. COLL_PERSISTENT_PREFIX is defined when
 * this library has them (PCOLL(Bcast_init) names its call), and
 * COLL_PERSISTENT_UNAVAILABLE is the registry's reason when it has not:
 * MPI 4 libraries; Open MPI 5, which has them while it reports MPI 3.1; Open
 * MPI 4's MPIX extension. -DMPISCOPE_NO_PERSISTENT_COLL builds without them
 * (what a library without them gets; the tests build it so). */
#define COLL_STR_(x) #x
#define COLL_STR(x) COLL_STR_(x)
#if defined(MPISCOPE_NO_PERSISTENT_COLL)
#elif MPI_VERSION >= 4
#define COLL_PERSISTENT_PREFIX "MPI_"
#define COLL_PERSISTENT_FROM "MPI " COLL_STR(MPI_VERSION) "." COLL_STR(MPI_SUBVERSION)
#define PCOLL(call) MPI_##call
#elif defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
#define COLL_PERSISTENT_PREFIX "MPI_"
#define COLL_PERSISTENT_FROM "Open MPI " COLL_STR(OMPI_MAJOR_VERSION) " (ahead of the MPI 3.1 it reports)"
#define PCOLL(call) MPI_##call
#elif defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION == 4
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define COLL_PERSISTENT_PREFIX "MPIX_"
#define COLL_PERSISTENT_FROM "Open MPI's MPIX extension (pcollreq)"
#define PCOLL(call) MPIX_##call
#endif
#endif
#ifdef COLL_PERSISTENT_PREFIX
#define COLL_PERSISTENT_UNAVAILABLE NULL
#elif defined(MPISCOPE_NO_PERSISTENT_COLL)
#define COLL_PERSISTENT_UNAVAILABLE "this engine was built without persistent collectives (MPISCOPE_NO_PERSISTENT_COLL)"
#else
#define COLL_PERSISTENT_UNAVAILABLE                                                                \
    "persistent collectives (MPI_Bcast_init ...) are MPI 4.0; this MPI reports " COLL_STR(MPI_VERSION) \
    "." COLL_STR(MPI_SUBVERSION) " and offers no MPIX_ form"
#endif

typedef enum { COLL_BLOCKING, COLL_NONBLOCKING, COLL_PERSISTENT } coll_mode_t;

/* The persistent rows' fields: coll_describe's and the call that made the requests. */
void coll_persistent_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);

/* Per collective: buffer sizes, setup (counts and displacements), --check
 * input and verification, the call itself (blocking; nonblocking or persistent
 * into req), the blocking event and the persistent one (start and wait). */
#define COLL_DECLARE(name)                                                         \
    void name##_buffers(const bench_ctx_t *c, size_t *send, size_t *recv);         \
    void name##_setup(bench_ctx_t *c);                                             \
    void name##_fill(bench_ctx_t *c);                                              \
    long name##_verify(const bench_ctx_t *c, long *verified);                      \
    void name##_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req);          \
    void name##_event(bench_ctx_t *c);                                             \
    void name##_persistent_event(bench_ctx_t *c);

COLL_DECLARE(barrier)
COLL_DECLARE(bcast)
COLL_DECLARE(reduce)
COLL_DECLARE(allreduce)
COLL_DECLARE(allgather)
COLL_DECLARE(allgatherv)
COLL_DECLARE(alltoall)
COLL_DECLARE(alltoallv)
COLL_DECLARE(alltoallw)
COLL_DECLARE(gather)
COLL_DECLARE(gatherv)
COLL_DECLARE(scatter)
COLL_DECLARE(scatterv)
COLL_DECLARE(reduce_scatter)
COLL_DECLARE(reduce_scatter_block)
COLL_DECLARE(scan)
COLL_DECLARE(exscan)

#endif
