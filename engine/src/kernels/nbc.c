/* Nonblocking collectives, one event per phase: 0 posts the operation and
 * waits (pure), 1 computes alone, 2 posts, computes (with --nbc-test MPI_Test
 * calls spread through it) and waits (overlapped). */
#include "kernels/nbc.h"
#include "kernels/coll.h"
#include "kernels/overlap.h"
#include "mpicheck.h"

void nbc_calibrate(bench_ctx_t *c, double pure_event_s)
{
    coll_args(c)->compute_iters = overlap_compute_iters(pure_event_s);
}

static void run(bench_ctx_t *c, void (*post)(bench_ctx_t *, coll_mode_t, MPI_Request *))
{
    MPI_Request req;
    const coll_args_t *a = coll_args(c);
    if (c->phase == 1) {
        overlap_compute(a->compute_iters, 0, NULL);
        return;
    }
    post(c, COLL_NONBLOCKING, &req);
    if (c->phase == 2) overlap_compute(a->compute_iters, a->nbc_tests, &req);
    MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
}

void ibarrier_event(bench_ctx_t *c) { run(c, barrier_call); }
void ibcast_event(bench_ctx_t *c) { run(c, bcast_call); }
void ireduce_event(bench_ctx_t *c) { run(c, reduce_call); }
void iallreduce_event(bench_ctx_t *c) { run(c, allreduce_call); }
void iallgather_event(bench_ctx_t *c) { run(c, allgather_call); }
void ialltoall_event(bench_ctx_t *c) { run(c, alltoall_call); }
void ireduce_scatter_event(bench_ctx_t *c) { run(c, reduce_scatter_call); }
void igather_event(bench_ctx_t *c) { run(c, gather_call); }
void igatherv_event(bench_ctx_t *c) { run(c, gatherv_call); }
void iscatter_event(bench_ctx_t *c) { run(c, scatter_call); }
void iscatterv_event(bench_ctx_t *c) { run(c, scatterv_call); }
void iallgatherv_event(bench_ctx_t *c) { run(c, allgatherv_call); }
void ialltoallv_event(bench_ctx_t *c) { run(c, alltoallv_call); }
void ialltoallw_event(bench_ctx_t *c) { run(c, alltoallw_call); }
void ireduce_scatter_block_event(bench_ctx_t *c) { run(c, reduce_scatter_block_call); }
void iscan_event(bench_ctx_t *c) { run(c, scan_call); }
void iexscan_event(bench_ctx_t *c) { run(c, exscan_call); }

/* The blocking twin's fields, and the overlap from the three phases' medians
 * (IMB-NBC): the share of the shorter of communication and computation that
 * the overlapped run hid. */
void nbc_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    coll_describe(c, p, w, j);
    const coll_args_t *a = coll_args(c);
    overlap_record(p, a->nbc_tests, a->compute_iters, j);
}
