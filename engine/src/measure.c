/* Measures the plan: per entry buffers within the memory limit, the watchdog,
 * the timing core and the record. The skips the plan knew are written as they
 * come; the memory limit and allocation failures are found here. */
#include "measure.h"
#include "buffers.h"
#include "mpicheck.h"
#include "sync.h"
#include "watchdog.h"
#include <stdio.h>

/* The previous point of the same (benchmark, ranks, variant) sweep. */
typedef struct history { long series, size; double event_s; } history_t;

/* The watchdog's limit: --timeout, or generous multiples of what this point
 * should take judging by the previous point of the same sweep. */
static double watchdog_limit(const options_t *o, long size, const history_t *prev, long warmup)
{
    if (o->timeout_s > 0) return o->timeout_s;
    double est = 0.01;
    if (prev->event_s > 0)
        est = prev->event_s * (prev->size > 0 && size > prev->size ? (double)size / (double)prev->size : 1.0);
    double work = (double)(warmup + 3 + o->reps) * est * 4.0;
    double limit = 3.0 * o->max_time_s + work;
    /* with nothing measured yet only a generous floor is safe */
    double floor_s = prev->event_s > 0 ? 2.0 : 10.0;
    return limit > floor_s ? limit : floor_s;
}

/* Buffers for c, or a reason to skip that every rank of comm agrees on. */
static const char *allocate(const reporter_t *r, const bench_ctx_t *c, buffers_t *bufs, char *why, size_t len)
{
    const bench_t *b = c->bench;
    size_t send = (size_t)c->size, recv = (size_t)c->size * (size_t)c->rslots;
    if (b->buffer_bytes) b->buffer_bytes(c, &send, &recv);
    long off_cache = r->o->off_cache_bytes < 0 ? last_level_cache_bytes() : r->o->off_cache_bytes;
    size_t need = buffers_need(send, recv, off_cache);
    double limit = r->o->max_memory_bytes;
    int too_big = (double)need > limit, any_too_big = 0;
    MPI_CHECK(MPI_Allreduce(&too_big, &any_too_big, 1, MPI_INT, MPI_MAX, c->comm));
    if (any_too_big) {
        snprintf(why, len, "needs %.0f MiB per rank, more than the limit of %.0f MiB (--max-memory)",
                 (double)need / 1048576.0, limit / 1048576.0);
        return why;
    }
    int failed = buffers_alloc(bufs, send, recv, off_cache), any_failed = 0;
    MPI_CHECK(MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, c->comm));
    if (!any_failed) return NULL;
    if (!failed) buffers_free(bufs);
    return "could not allocate the buffers";
}

/* One entry on comm. Returns 1 when a point was measured. */
static int measure_point(const reporter_t *r, timing_t *t, const plan_entry_t *e, MPI_Comm comm, history_t *prev)
{
    const world_t *w = r->w;
    const bench_t *b = e->bench;
    if (prev->series != e->series) *prev = (history_t){e->series, 0, 0};
    bench_ctx_t c = {.bench = b, .comm = comm, .rank = w->rank, .nranks = e->ranks, .size = e->size,
                     .variant = e->variant};
    int slots = b->recv_slots ? b->recv_slots(&c) : 1;
    /* OSU shares one receive buffer across a window; we keep slots apart up to 64 MiB */
    long cap = c.size > 0 ? (64L << 20) / c.size : slots;
    c.rslots = slots < cap ? slots : (cap > 0 ? (int)cap : 1);
    c.rslot = (size_t)c.size;
    buffers_t bufs;
    char why[240];
    const char *skip = allocate(r, &c, &bufs, why, sizeof why);
    if (skip) {
        if (w->rank == 0) r->skip(r, e, skip);
        return 0;
    }
    if (b->setup) b->setup(&c);
    long warmup = r->o->warmup > 1000 ? r->o->warmup : 1000;
    watchdog_arm(b->name, c.size, e->ranks, e->variant_label,
                 e->phases * watchdog_limit(r->o, c.size, prev, warmup));
    point_t p;
    time_point(t, b, &c, &bufs, r->o, &p);
    watchdog_disarm();
    if (w->rank == 0) r->point(r, e, &c, &p);
    if (b->teardown) b->teardown(&c);
    buffers_free(&bufs);
    prev->size = c.size;
    prev->event_s = p.event_median_s;
    return 1;
}

/* Entries [first, end) of one group of np ranks: the first np ranks get a
 * communicator of their own; the others wait without spinning. */
static long measure_group(const plan_t *plan, long first, long end, int np, const reporter_t *r, timing_t *t,
                          history_t *prev)
{
    const world_t *w = r->w;
    long points = 0;
    MPI_Comm comm = w->comm;
    if (np < w->nranks) MPI_CHECK(MPI_Comm_split(w->comm, w->rank < np ? 0 : MPI_UNDEFINED, w->rank, &comm));
    for (long i = first; i < end && w->rank < np; i++) {
        const plan_entry_t *e = &plan->entries[i];
        if (!points_selects(&r->o->points, e->id)) continue;
        if (e->skip) {
            if (w->rank == 0) r->skip(r, e, e->skip);
            continue;
        }
        points += measure_point(r, t, e, comm, prev);
    }
    if (np < w->nranks) {
        if (comm != MPI_COMM_NULL) MPI_CHECK(MPI_Comm_free(&comm));
        MPI_Request req;
        MPI_CHECK(MPI_Ibarrier(w->comm, &req));
        wait_request(&req, w->rank >= np);
    }
    return points;
}

long measure_plan(const plan_t *plan, const reporter_t *r, timing_t *t)
{
    long points = 0;
    history_t prev = {-1, 0, 0};
    for (long first = 0, end; first < plan->n; first = end) {
        int np = plan->entries[first].ranks, selected = 0;
        for (end = first; end < plan->n && plan->entries[end].ranks == np; end++)
            selected |= points_selects(&r->o->points, end);
        if (selected) points += measure_group(plan, first, end, np, r, t, &prev);
    }
    return points;
}
