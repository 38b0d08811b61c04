/* Start-up: MPI_Init's time per rank (osu_init) and a hello world's
 * (osu_hello: MPI_Init, then a barrier that hears from every rank).
 *
 * MPI_Init happens once per process, so a launch has exactly one sample per
 * rank. main times it with the engine's clock before anything else runs;
 * these rows hand that sample to the timing core (BENCH_ONCE: no warm-up, one
 * sample), whose figure is the slowest rank's time (the job is ready when its
 * last rank is). The record adds every rank's own time and their min, mean
 * and max; several launches give the launch-level statistics. */
#include "kernels/startup.h"
#include "json.h"
#include "mpicheck.h"
#include "point.h"
#include <stdlib.h>
#include <string.h>

static double init_s = -1, hello_s = -1;

void startup_record(double init, double hello)
{
    init_s = init;
    hello_s = hello;
}

static int is_init(const bench_ctx_t *c) { return strcmp(c->bench->name, "init") == 0; }

double startup_init_once(const bench_ctx_t *c) { (void)c; return init_s; }
double startup_hello_once(const bench_ctx_t *c) { (void)c; return hello_s; }
double startup_one(const bench_ctx_t *c) { (void)c; return 1.0; }
double startup_zero(const bench_ctx_t *c) { (void)c; return 0.0; }

/* Every rank's sample, gathered on rank 0 while all ranks are here. */
void startup_setup(bench_ctx_t *c)
{
    double *all = c->rank == 0 ? malloc((size_t)c->nranks * sizeof *all) : NULL;
    if (c->rank == 0 && !all) MPI_Abort(MPI_COMM_WORLD, 3);
    double mine = is_init(c) ? init_s : hello_s;
    MPI_CHECK(MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, c->comm));
    c->state = all;
}

void startup_teardown(bench_ctx_t *c)
{
    free(c->state);
    c->state = NULL;
}

void startup_event(bench_ctx_t *c) { (void)c; }

/* Nothing moves: --check verifies no bytes. */
long startup_verify(const bench_ctx_t *c, long *verified)
{
    (void)c, (void)verified;
    return 0;
}

void startup_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    (void)p, (void)w;
    const double *all = c->state;
    double lo = all[0], hi = all[0], sum = 0;
    for (int r = 0; r < c->nranks; r++) {
        lo = all[r] < lo ? all[r] : lo;
        hi = all[r] > hi ? all[r] : hi;
        sum += all[r];
    }
    json_obj(j, "startup");
    json_str(j, "measures", is_init(c) ? "MPI_Init" : "MPI_Init and the first MPI_Barrier after it");
    json_int(j, "samples_per_rank", 1);
    json_arr(j, "rank_ms");
    for (int r = 0; r < c->nranks; r++) json_num(j, NULL, all[r] * 1e3);
    json_close_arr(j);
    json_num(j, "min_ms", lo * 1e3);
    json_num(j, "avg_ms", sum / c->nranks * 1e3);
    json_num(j, "max_ms", hi * 1e3);
    json_close_obj(j);
}
