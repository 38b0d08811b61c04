/* The timing core: verification pass, warm-up, single-event samples in
 * batches, and the adaptive stopping rule decided by rank 0 for everybody. */
#include "timing.h"
#include "mpicheck.h"
#include "timer.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { CHECK_ITERATIONS = 3, WARMUP_CAP = 1000 };

int timing_init(timing_t *t, const options_t *o)
{
    t->capacity = o->reps ? o->reps : o->max_reps;
    t->local = malloc((size_t)t->capacity * sizeof(double));
    t->combined = malloc((size_t)t->capacity * sizeof(double));
    t->scratch = malloc((size_t)t->capacity * sizeof(double));
    return t->local && t->combined && t->scratch ? 0 : -1;
}

void timing_free(timing_t *t)
{
    free(t->local);
    free(t->combined);
    free(t->scratch);
}

static int is_active(const bench_t *b, const bench_ctx_t *c)
{
    return b->is_active ? b->is_active(c) : 1;
}

/* Ranks that take no part wait for a collective without spinning, so they do
 * not steal a core from the ranks being measured. */
static void finish(MPI_Request *req, int polite)
{
    if (!polite) {
        MPI_CHECK(MPI_Wait(req, MPI_STATUS_IGNORE));
        return;
    }
    int done = 0;
    const struct timespec nap = {0, 50000};
    for (;;) {
        MPI_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
        if (done) return;
        nanosleep(&nap, NULL);
    }
}

static void use_slot(bench_ctx_t *c, const buffers_t *bufs, long iter)
{
    buffers_slot(bufs, iter, &c->sbuf, &c->rbuf);
    c->iter = iter;
}

/* A pass of fresh patterns whose every received byte is compared.
 * MPISCOPE_FAULT=corrupt flips a received byte first: the tests use it to show
 * that --check reports errors. */
static void verify_pass(const bench_t *b, bench_ctx_t *c, const buffers_t *bufs, point_t *p)
{
    const char *fault = getenv("MPISCOPE_FAULT");
    int corrupt = fault && strcmp(fault, "corrupt") == 0 && c->size > 0;
    long errors[2] = {0, 0}, total[2] = {0, 0};
    c->checking = 1;
    for (long it = 0; it < CHECK_ITERATIONS; it++) {
        use_slot(c, bufs, 0);
        c->iter = it;
        check_fill(c->sbuf, (size_t)c->size, c->rank, it);
        memset(c->rbuf, 0, bufs->recv_stride);
        MPI_CHECK(MPI_Barrier(c->comm));
        if (is_active(b, c)) {
            b->event(c);
            if (corrupt) c->rbuf[0] = (char)~c->rbuf[0];
            errors[0] += b->verify(c, &errors[1]);
        }
    }
    c->checking = 0;
    MPI_CHECK(MPI_Reduce(errors, total, 2, MPI_LONG, MPI_SUM, 0, c->comm));
    p->check_errors = total[0];
    p->verified_bytes = total[1];
}

static long warmup_count(const options_t *o, long size)
{
    long by_bytes = size > 0 ? (o->warmup_bytes + size - 1) / size : WARMUP_CAP;
    if (by_bytes > WARMUP_CAP) by_bytes = WARMUP_CAP;
    return o->warmup > by_bytes ? o->warmup : by_bytes;
}

/* Rank 0's decision after a batch: 0 to stop, else the next batch's length. */
static long next_batch(timing_t *t, const options_t *o, long n, double sampling_s, double ops,
                       point_t *p)
{
    if (o->reps) {
        p->stop_reason = "reps";
        return n >= o->reps ? 0 : o->reps - n;
    }
    for (long i = 0; i < n; i++) t->scratch[i] = t->combined[i] * 1e6 / ops;
    stats_t s;
    stats_compute(t->scratch, (size_t)n, &s);
    if (n >= o->min_reps && stats_converged(&s, o->ci_target)) {
        p->stop_reason = "ci";
        return 0;
    }
    if (n >= o->max_reps) { p->stop_reason = "max_reps"; return 0; }
    double left_s = o->max_time_s - sampling_s;
    if (left_s <= 0) { p->stop_reason = "max_time"; return 0; }
    /* grow geometrically (so sorting stays cheap) but not past the time cap */
    long want = n < o->min_reps ? o->min_reps - n : (n + 1) / 2;
    double per_event = sampling_s / (double)n;
    long fits = per_event > 0 ? (long)(left_s / per_event) + 1 : want;
    if (want > fits) want = fits;
    if (want > o->max_reps - n) want = o->max_reps - n;
    return want < 1 ? 1 : want;
}

void time_point(timing_t *t, const bench_t *b, bench_ctx_t *c, const buffers_t *bufs,
                const options_t *o, point_t *p)
{
    memset(p, 0, sizeof *p);
    double start = now_s();
    int active = is_active(b, c);
    int root_samples = (b->flags & BENCH_SAMPLE_ROOT) != 0;
    int barrier = (b->flags & BENCH_SYNC_BARRIER) != 0;
    double ops = b->ops_per_event(c);

    if (o->check) verify_pass(b, c, bufs, p);

    p->warmup = warmup_count(o, c->size);
    for (long it = 0; it < p->warmup; it++) {
        use_slot(c, bufs, it);
        if (barrier) MPI_CHECK(MPI_Barrier(c->comm));
        if (active) b->event(c);
    }
    MPI_CHECK(MPI_Barrier(c->comm));

    long n = 0, batch = o->reps ? o->reps : 1; /* one probe event sizes the batches */
    double sampling_start = now_s();
    while (batch > 0) {
        double *x = t->local + n;
        if (active || barrier) {
            for (long i = 0; i < batch; i++) {
                use_slot(c, bufs, n + i);
                if (barrier) MPI_CHECK(MPI_Barrier(c->comm));
                double t0 = now_s();
                if (active) b->event(c);
                x[i] = now_s() - t0;
            }
        }
        if (!active) memset(x, 0, (size_t)batch * sizeof *x);
        MPI_Request req;
        if (root_samples) {
            if (c->rank == 0) memcpy(t->combined + n, x, (size_t)batch * sizeof *x);
        } else {
            MPI_CHECK(MPI_Ireduce(x, t->combined + n, (int)batch, MPI_DOUBLE, MPI_MAX, 0, c->comm, &req));
            finish(&req, !active);
        }
        n += batch;
        long decision = 0;
        if (c->rank == 0) decision = next_batch(t, o, n, now_s() - sampling_start, ops, p);
        MPI_CHECK(MPI_Ibcast(&decision, 1, MPI_LONG, 0, c->comm, &req));
        finish(&req, !active);
        batch = decision;
    }

    p->elapsed_s = now_s() - start;
    if (c->rank == 0) {
        for (long i = 0; i < n; i++) t->scratch[i] = t->combined[i] * 1e6 / ops;
        stats_compute(t->scratch, (size_t)n, &p->time_us);
        p->samples_us = t->scratch;
        p->converged = strcmp(p->stop_reason, "ci") == 0 ||
                       (strcmp(p->stop_reason, "reps") == 0 && stats_converged(&p->time_us, o->ci_target));
        p->event_median_s = p->time_us.median * ops * 1e-6;
    }
    MPI_CHECK(MPI_Bcast(&p->event_median_s, 1, MPI_DOUBLE, 0, c->comm));
}
