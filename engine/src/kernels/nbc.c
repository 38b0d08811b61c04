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

void nbc_calibrate(bench_ctx_t *c, double pure_event_s)
{
    coll_args(c)->compute_iters = (long)(pure_event_s / iteration_time());
}

static void compute(const bench_ctx_t *c, MPI_Request *req)
{
    const coll_args_t *a = coll_args(c);
    long iters = a->compute_iters;
    int tests = req ? a->nbc_tests : 0;
    long chunk = iters / (tests + 1);
    for (int k = 0; k < tests; k++) {
        int done;
        spin(chunk);
        MPI_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
    }
    spin(iters - chunk * tests);
}

static void run(bench_ctx_t *c, void (*post)(bench_ctx_t *, MPI_Request *))
{
    MPI_Request req;
    if (c->phase == 1) {
        compute(c, NULL);
        return;
    }
    post(c, &req);
    if (c->phase == 2) compute(c, &req);
    MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
}

void ibarrier_event(bench_ctx_t *c) { run(c, barrier_call); }
void ibcast_event(bench_ctx_t *c) { run(c, bcast_call); }
void ireduce_event(bench_ctx_t *c) { run(c, reduce_call); }
void iallreduce_event(bench_ctx_t *c) { run(c, allreduce_call); }
void iallgather_event(bench_ctx_t *c) { run(c, allgather_call); }
void ialltoall_event(bench_ctx_t *c) { run(c, alltoall_call); }
void ireduce_scatter_event(bench_ctx_t *c) { run(c, reduce_scatter_call); }

/* The blocking twin's fields, and the overlap from the three phases' medians
 * (IMB-NBC): the share of the shorter of communication and computation that
 * the overlapped run hid. */
void nbc_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    coll_describe(c, p, w, j);
    if (p->nphases < 3) return;
    double pure = p->phase_us[0], cpu = p->phase_us[1], ovrl = p->phase_us[2];
    double shorter = pure < cpu ? pure : cpu;
    double ratio = shorter > 0 ? (pure + cpu - ovrl) / shorter : 0;
    const coll_args_t *a = coll_args(c);
    json_obj(j, "overlap");
    json_num(j, "pure_us", pure);
    json_num(j, "cpu_us", cpu);
    json_num(j, "ovrl_us", ovrl);
    json_num(j, "overlap_pct", 100.0 * (ratio < 0 ? 0 : ratio > 1 ? 1 : ratio));
    json_int(j, "cpu_n", (long long)p->phase_n[1]);
    json_int(j, "ovrl_n", (long long)p->phase_n[2]);
    json_int(j, "mpi_test_calls", a->nbc_tests);
    json_int(j, "compute_iters", a->compute_iters);
    json_close_obj(j);
}
