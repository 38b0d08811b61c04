/* The compute is a dependent floating-point chain: it keeps a core busy
 * without touching memory. */
#include "kernels/overlap.h"
#include "json.h"
#include "mpicheck.h"
#include "timer.h"
#include "point.h"

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

long overlap_compute_iters(double seconds) { return (long)(seconds / iteration_time()); }

void overlap_compute(long iters, int tests, MPI_Request *req)
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

/* The share of the shorter of communication and computation that the overlapped run hid (IMB-NBC). */
void overlap_record(const struct point *p, int tests, long compute_iters, struct json *j)
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
