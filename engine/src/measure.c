/* Measures the plan: per entry buffers within the memory limit, the watchdog,
 * the timing core and the record. The skips the plan knew are written as they
 * come; the memory limit and allocation failures are found here. */
#include "measure.h"
#include "sim.h"
#include "buffers.h"
#include "copyrate.h"
#include "mpicheck.h"
#include "sync.h"
#include "watchdog.h"
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

/* What the watchdog knows: the median event time of every entry measured so
 * far (0: not yet), by id. The entries of one (benchmark, ranks, variant)
 * series sit side by side in the plan, sizes ascending. */
typedef struct history { const plan_t *plan; double *event_s; } history_t;

/* The measured entry of e's series that best predicts e: the nearest smaller
 * size (scaled up by the size ratio), else the nearest larger one (an
 * overestimate), else one at size 0. NULL when the series has none. */
static const plan_entry_t *history_base(const history_t *h, const plan_entry_t *e)
{
    const plan_entry_t *all = h->plan->entries, *at_zero = NULL;
    for (long i = e->id - 1; i >= 0 && all[i].series == e->series; i--)
        if (h->event_s[i] > 0) {
            if (all[i].size > 0) return &all[i];
            at_zero = &all[i];
        }
    for (long i = e->id + 1; i < h->plan->n && all[i].series == e->series; i++)
        if (h->event_s[i] > 0) return &all[i];
    return at_zero;
}

/* The watchdog's limit: --timeout, or generous multiples of what this point
 * should take judging by its series' measured points, in any order. */
static double watchdog_limit(const options_t *o, const history_t *h, const plan_entry_t *e, long warmup)
{
    if (o->timeout_s > 0) return o->timeout_s;
    const plan_entry_t *base = history_base(h, e);
    double est = 0.01;
    if (base) {
        est = h->event_s[base->id];
        if (base->size > 0 && e->size > base->size) est *= (double)e->size / (double)base->size;
    }
    double work = (double)(warmup + 3 + o->reps) * est * 4.0;
    double limit = 3.0 * o->max_time_s + work;
    /* with nothing measured yet only a generous floor is safe */
    double floor_s = base ? 2.0 : 10.0;
    /* the watchdog counts host seconds; under simulation the estimates above are simulated
     * ones, and a simulated point of many ranks takes the host far longer */
    if (o->simulated) floor_s = SIM_WATCHDOG_FLOOR_S;
    return limit > floor_s ? limit : floor_s;
}

/* Where each rank of comm was at the end of a point, on rank 0 (-1: unknown). */
static void gather_cpus(MPI_Comm comm, int *cpus)
{
    int mine = sched_getcpu();
    MPI_CHECK(MPI_Gather(&mine, 1, MPI_INT, cpus, 1, MPI_INT, 0, comm));
}

/* Buffers for c, or a reason to skip that every rank of comm agrees on. Sets
 * c's working set: the row's own, else the bytes of one send and receive slot. */
static const char *allocate(const reporter_t *r, bench_ctx_t *c, buffers_t *bufs, char *why, size_t len)
{
    const bench_t *b = c->bench;
    size_t send = (size_t)c->size, recv = (size_t)c->size * (size_t)c->rslots;
    if (b->buffer_bytes) b->buffer_bytes(c, &send, &recv);
    /* every rank of a collective copies its share at once: a stream each */
    c->streams = (b->flags & BENCH_COLLECTIVE) ? c->nranks : 1;
    c->working_set = b->working_set ? b->working_set(c, &c->streams) : send + recv;
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
    int failed = buffers_alloc(bufs, send, recv, off_cache, r->o->buffer_offset), any_failed = 0;
    MPI_CHECK(MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, c->comm));
    if (!any_failed) {
        buffers_offsets(bufs, c->buffer_offset);
        return NULL;
    }
    if (!failed) buffers_free(bufs);
    /* every rank counts the same mappings: rank 0's reason is the point's */
    return sim_alloc_failure() ? sim_alloc_failure() : "could not allocate the buffers";
}

/* One entry on comm. Returns 1 when a point was measured. */
static int measure_point(const reporter_t *r, timing_t *t, const plan_entry_t *e, MPI_Comm comm, history_t *h,
                         int *cpus)
{
    const world_t *w = r->w;
    const bench_t *b = e->bench;
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
    double limit = e->phases * watchdog_limit(r->o, h, e, warmup);
    /* --timeout as the user gave it is a hard limit; a derived one (or mpiscope's stand-in for
     * it, --timeout-extends) is extended while the point progresses */
    watchdog_arm(b->name, c.size, e->ranks, e->variant_label, limit, !(r->o->timeout_s > 0) || r->o->timeout_extends);
    point_t p;
    time_point(t, b, &c, &bufs, r->o, &p);
    int extended = watchdog_disarm();
    /* the record names a point a busy machine slowed past its limit: the most any rank saw */
    if (!r->o->simulated) MPI_CHECK(MPI_Reduce(&extended, &p.watchdog_extensions, 1, MPI_INT, MPI_MAX, 0, comm));
    p.watchdog_limit_s = limit;
    /* after the timing, on the rank that writes the record: the others wait in
     * gather_cpus; cached per working set, so a launch copies each size once. Not under
     * simulation: the host's copy rate is not the platform's, and the simulated clock does not
     * advance over a copy, so each point copied its working set 1000 times (15 of the 17 CPU s
     * of a 64-rank launch of the default collectives) */
    if (w->rank == 0 && c.size > 0 && !(b->flags & BENCH_NO_SIZE) && !r->o->simulated) {
        c.copy_MBps = copy_rate_MBps(c.working_set, r->o->max_memory_bytes / 4);
        /* a layout with one place per side and target (single) keeps its working set in the
         * cache at any size: its reference is a copy through memory, a costly first touch of
         * four times the cache, so only those points ask for it */
        if (b->working_set && c.working_set <= (size_t)(c.nranks + 1) * (size_t)c.size)
            c.memory_copy_MBps = memory_copy_rate_MBps(r->o->max_memory_bytes / 4);
    }
    gather_cpus(comm, cpus);
    if (b->collect) b->collect(&c);
    p.rank_cpus = cpus;
    if (w->rank == 0) r->point(r, e, &c, &p);
    if (b->teardown) b->teardown(&c);
    buffers_free(&bufs);
    h->event_s[e->id] = p.event_median_s;
    return 1;
}

/* ids[0..n): entries of one group of np ranks, in measuring order. The first
 * np ranks get a communicator of their own; the others wait without spinning. */
static long measure_group(const plan_t *plan, const long *ids, long n, int np, const reporter_t *r, timing_t *t,
                          history_t *h, int *cpus)
{
    const world_t *w = r->w;
    long points = 0;
    MPI_Comm comm = w->comm;
    if (np < w->nranks) MPI_CHECK(MPI_Comm_split(w->comm, w->rank < np ? 0 : MPI_UNDEFINED, w->rank, &comm));
    for (long i = 0; i < n && w->rank < np; i++) {
        const plan_entry_t *e = &plan->entries[ids[i]];
        if (e->skip) {
            if (w->rank == 0) r->skip(r, e, e->skip);
            continue;
        }
        points += measure_point(r, t, e, comm, h, cpus);
    }
    if (np < w->nranks) {
        if (comm != MPI_COMM_NULL) MPI_CHECK(MPI_Comm_free(&comm));
        MPI_Request req;
        MPI_CHECK(MPI_Ibarrier(w->comm, &req));
        wait_request(&req, w->rank >= np);
    }
    return points;
}

/* In the measuring order, every maximal run of entries on the same ranks is
 * one group: --points may go back and forth between --npmin groups. */
long measure_plan(const plan_t *plan, const reporter_t *r, timing_t *t)
{
    long *ids = malloc((size_t)(plan->n > 0 ? plan->n : 1) * sizeof *ids);
    history_t h = {plan, calloc((size_t)(plan->n > 0 ? plan->n : 1), sizeof *h.event_s)};
    int *cpus = malloc((size_t)r->w->nranks * sizeof *cpus);
    long n = ids ? points_order(&r->o->points, plan->n, ids) : -1;
    if (n < 0 || !h.event_s || !cpus) MPI_Abort(r->w->comm, 3);
    long points = 0;
    for (long first = 0, end; first < n; first = end) {
        int np = plan->entries[ids[first]].ranks;
        for (end = first; end < n && plan->entries[ids[end]].ranks == np; end++) continue;
        points += measure_group(plan, ids + first, end - first, np, r, t, &h, cpus);
    }
    free(ids);
    free(h.event_s);
    free(cpus);
    return points;
}
