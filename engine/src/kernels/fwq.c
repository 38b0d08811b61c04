/* fwq: every rank does the same fixed quantum of pure computation (no memory
 * traffic beyond registers, no MPI) after a barrier. A quiet core always takes
 * the same time; anything the OS runs on the core (interrupts, daemons, other
 * jobs) lengthens some quanta. The sample is the slowest rank's quantum, which
 * is what a barrier-synchronised collective of this job waits for.
 *
 * Each rank also times its own quanta, so that a single noisy core is named:
 * after the point (fwq_collect, on every rank) rank 0 gathers every rank's own
 * percentiles and the record carries them (fwq_describe). */
#include "kernels/fwq.h"
#include "json.h"
#include "mpicheck.h"
#include "timer.h"
#include <stdlib.h>
#include <string.h>

/* FWQ_KEEP: a rank's own quanta kept (the first ones of a longer point). */
enum { FWQ_ITERATIONS = 1 << 15, FWQ_KEEP = 1 << 16 };

/* Per rank, in this order: quanta kept, then min, p50, p90, p99, max, mean in us. */
enum { FWQ_N, FWQ_MIN, FWQ_P50, FWQ_P90, FWQ_P99, FWQ_MAX, FWQ_MEAN, FWQ_FIELDS };
static const char *const fwq_names[FWQ_FIELDS] = {"n", "min_us", "p50_us", "p90_us", "p99_us", "max_us", "mean_us"};

typedef struct fwq_state {
    double *mine;  /* this rank's own quantum times of the sampling so far, seconds */
    long n;
    double *all;   /* rank 0: FWQ_FIELDS per rank */
} fwq_state_t;

double fwq_one(const bench_ctx_t *c)
{
    (void)c;
    return 1.0;
}

double fwq_zero(const bench_ctx_t *c)
{
    (void)c;
    return 0.0;
}

/* The quantum's result, kept so that the work cannot be optimised away and --check can
 * compare it with the chain computed again. */
static volatile unsigned long last;

/* a dependent chain the compiler cannot fold: each step needs the last */
static unsigned long quantum(long seed)
{
    unsigned long x = (unsigned long)seed | 1u;
    for (int i = 0; i < FWQ_ITERATIONS; i++) x = x * 6364136223846793005ul + 1442695040888963407ul;
    return x;
}

void fwq_setup(bench_ctx_t *c)
{
    fwq_state_t *s = calloc(1, sizeof *s);
    if (!s || !(s->mine = malloc(FWQ_KEEP * sizeof *s->mine))) MPI_Abort(MPI_COMM_WORLD, 3);
    if (c->rank == 0 && !(s->all = malloc((size_t)c->nranks * FWQ_FIELDS * sizeof *s->all)))
        MPI_Abort(MPI_COMM_WORLD, 3);
    c->state = s;
}

/* The timing core numbers the events of the warm-up and of the sampling from 0
 * each (c->iter): an event numbered 0 starts this rank's record afresh, so the
 * record holds the sampling's quanta, not the warm-up's. */
void fwq_event(bench_ctx_t *c)
{
    double t0 = now_s();
    last = quantum(c->iter);
    double dt = now_s() - t0;
    fwq_state_t *s = c->state;
    if (!s || c->checking) return;
    if (c->iter == 0) s->n = 0;
    if (c->iter < FWQ_KEEP) {
        s->mine[c->iter] = dt;
        if (c->iter + 1 > s->n) s->n = c->iter + 1;
    }
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the sample of rank round(q (n - 1)) in sorted x, as doctor's Python does */
static double rank_of(const double *x, long n, double q)
{
    long i = (long)(q * (double)(n - 1) + 0.5);
    return x[i < 0 ? 0 : i >= n ? n - 1 : i];
}

void fwq_collect(bench_ctx_t *c)
{
    fwq_state_t *s = c->state;
    double mine[FWQ_FIELDS] = {0};
    mine[FWQ_N] = (double)s->n;
    if (s->n > 0) {
        qsort(s->mine, (size_t)s->n, sizeof *s->mine, by_value);
        double sum = 0;
        for (long i = 0; i < s->n; i++) sum += s->mine[i];
        mine[FWQ_MIN] = s->mine[0] * 1e6;
        mine[FWQ_P50] = rank_of(s->mine, s->n, 0.5) * 1e6;
        mine[FWQ_P90] = rank_of(s->mine, s->n, 0.9) * 1e6;
        mine[FWQ_P99] = rank_of(s->mine, s->n, 0.99) * 1e6;
        mine[FWQ_MAX] = s->mine[s->n - 1] * 1e6;
        mine[FWQ_MEAN] = sum / (double)s->n * 1e6;
    }
    MPI_CHECK(MPI_Gather(mine, FWQ_FIELDS, MPI_DOUBLE, s->all, FWQ_FIELDS, MPI_DOUBLE, 0, c->comm));
}

void fwq_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    (void)p, (void)w;
    const fwq_state_t *s = c->state;
    json_obj(j, "fwq");
    json_int(j, "quantum_iterations", FWQ_ITERATIONS);
    json_arr(j, "rank_quantum_us");  /* every rank's own quanta (rank order of the communicator) */
    for (int r = 0; r < c->nranks; r++) {
        const double *x = s->all + (size_t)r * FWQ_FIELDS;
        json_obj(j, NULL);
        json_int(j, "rank", r);
        json_int(j, fwq_names[FWQ_N], (long long)x[FWQ_N]);
        for (int f = FWQ_MIN; f < FWQ_FIELDS; f++) json_num(j, fwq_names[f], x[f]);
        json_close_obj(j);
    }
    json_close_arr(j);
    json_close_obj(j);
}

void fwq_teardown(bench_ctx_t *c)
{
    fwq_state_t *s = c->state;
    if (s) {
        free(s->mine);
        free(s->all);
        free(s);
    }
    c->state = NULL;
}

long fwq_verify(const bench_ctx_t *c, long *verified)
{
    *verified += (long)sizeof(unsigned long);
    return last != quantum(c->iter);
}
