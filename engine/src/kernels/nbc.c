/* Nonblocking collectives, one event per phase: 0 posts the operation and
 * waits (pure), 1 computes alone, 2 posts, computes (with --nbc-test MPI_Test
 * calls spread through it) and waits (overlapped). The compute is a dependent
 * floating-point chain: it keeps a core busy without touching memory. */
#include "kernels/nbc.h"
#include "kernels/coll.h"
#include "json.h"
#include "mpicheck.h"
#include "timer.h"
#include "timing.h"

static volatile double sink = 1.0;
static double seconds_per_iter;

static void spin(long iters)
{
    double x = sink;
    for (long i = 0; i < iters; i++) x = x * 0.9999999 + 1e-7;
    sink = x;
}

/* Once per process: the fastest of a few timed runs. */
static double iteration_time(void)
{
    if (seconds_per_iter > 0) return seconds_per_iter;
    enum { ITERS = 200000 };
    spin(ITERS);
    double best = 1e9;
    for (int k = 0; k < 5; k++) {
        double t0 = now_s();
        spin(ITERS);
        double dt = now_s() - t0;
        if (dt < best) best = dt;
    }
    seconds_per_iter = best / ITERS;
    return seconds_per_iter;
}

long nbc_compute_iters(double seconds) { return (long)(seconds / iteration_time()); }

void nbc_calibrate(bench_ctx_t *c, double pure_event_s)
{
    coll_args(c)->compute_iters = nbc_compute_iters(pure_event_s);
}

void nbc_compute(long iters, int tests, MPI_Request *req)
{
    if (!req) tests = 0;
    long chunk = iters / (tests + 1);
    for (int k = 0; k < tests; k++) {
        int done;
        spin(chunk);
        MPI_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
    }
    spin(iters - chunk * tests);
}

static void run(bench_ctx_t *c, void (*post)(bench_ctx_t *, coll_mode_t, MPI_Request *))
{
    MPI_Request req;
    const coll_args_t *a = coll_args(c);
    if (c->phase == 1) {
        nbc_compute(a->compute_iters, 0, NULL);
        return;
    }
    post(c, COLL_NONBLOCKING, &req);
    if (c->phase == 2) nbc_compute(a->compute_iters, a->nbc_tests, &req);
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
    nbc_overlap_record(p, a->nbc_tests, a->compute_iters, j);
}

void nbc_overlap_record(const struct point *p, int tests, long compute_iters, struct json *j)
{
    if (p->nphases < 3) return;
    double pure = p->phase_us[0], cpu = p->phase_us[1], ovrl = p->phase_us[2];
    double shorter = pure < cpu ? pure : cpu;
    double ratio = shorter > 0 ? (pure + cpu - ovrl) / shorter : 0;
    json_obj(j, "overlap");
    json_num(j, "pure_us", pure);
    json_num(j, "cpu_us", cpu);
    json_num(j, "ovrl_us", ovrl);
    json_num(j, "overlap_pct", 100.0 * (ratio < 0 ? 0 : ratio > 1 ? 1 : ratio));
    json_int(j, "cpu_n", (long long)p->phase_n[1]);
    json_int(j, "ovrl_n", (long long)p->phase_n[2]);
    json_int(j, "mpi_test_calls", tests);
    json_int(j, "compute_iters", compute_iters);
    json_close_obj(j);
}
