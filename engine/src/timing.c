/* The timing core: verification pass, warm-up, single-event samples in
 * batches whose starts a sync strategy sets, and the adaptive stopping rule
 * decided by rank 0 for everybody. */
#include "timing.h"
#include "mpicheck.h"
#include "sim.h"
#include "timer.h"
#include "watchdog.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { CHECK_ITERATIONS = 3, WARMUP_CAP = 1000, PHASE_WARMUP = 8, RESOLUTION_STEPS = 2 };

int timing_init(timing_t *t, const options_t *o)
{
    t->capacity = o->reps ? o->reps : o->max_reps;
    t->local = malloc((size_t)t->capacity * sizeof(double));
    t->combined = malloc((size_t)t->capacity * sizeof(double));
    t->scratch = malloc((size_t)t->capacity * sizeof(double));
    t->kept = malloc((size_t)t->capacity * sizeof(double));
    t->phase_us = t->phase_rank_us = NULL;
    t->phase_n = NULL;
    t->phase_cap = 0;
    t->disturb = NULL;
    t->disturb_cap = 0;
    return t->local && t->combined && t->scratch && t->kept ? 0 : -1;
}

void timing_free(timing_t *t)
{
    free(t->local);
    free(t->combined);
    free(t->scratch);
    free(t->kept);
    free(t->phase_us);
    free(t->phase_rank_us);
    free(t->phase_n);
    free(t->disturb);
}

static int is_active(const bench_t *b, const bench_ctx_t *c)
{
    return b->is_active ? b->is_active(c) : 1;
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
        memset(c->rbuf, 0, bufs->recv_stride);
        if (b->check_fill) b->check_fill(c);
        else check_fill(c->sbuf, (size_t)c->size, c->rank, it);
        MPI_CHECK(MPI_Barrier(c->comm));
        if (is_active(b, c)) {
            b->event(c);
            if (corrupt) c->rbuf[0] = (char)~c->rbuf[0];
            errors[0] += b->verify(c, &errors[1]);
            watchdog_progress();
        }
    }
    c->checking = 0;
    MPI_CHECK(MPI_Reduce(errors, total, 2, MPI_LONG, MPI_SUM, 0, c->comm));
    p->check_errors = total[0];
    p->verified_bytes = total[1];
}

static long warmup_count(const options_t *o, long size)
{
    /* a simulation has no caches, page faults or lazy connections to warm: --warmup alone, where
     * the byte count would cost the host up to 1000 simulated collectives a point */
    if (o->simulated) return o->warmup;
    long by_bytes = size > 0 ? (o->warmup_bytes + size - 1) / size : WARMUP_CAP;
    if (by_bytes > WARMUP_CAP) by_bytes = WARMUP_CAP;
    return o->warmup > by_bytes ? o->warmup : by_bytes;
}

/* Rank 0's valid samples (a sample a rank started late is infinite) as
 * reported times in scratch; returns how many. */
static long valid_samples(timing_t *t, long n, double ops)
{
    long m = 0;
    for (long i = 0; i < n; i++)
        if (isfinite(t->combined[i])) t->scratch[m++] = t->combined[i] * 1e6 / ops;
    return m;
}

/* Samples sit on the lattice of the clock's step (or of their own, coarser,
 * step: 10 ns here under barrier sync), and an interval whose bounds tie is
 * widened by half a step each side (stats.c): when the target is narrower
 * than half a step the point cannot converge. Its target becomes the clock's
 * floor instead: the interval within RESOLUTION_STEPS steps each side. */
static int at_timer_resolution(const stats_t *s, const double *sorted, double ops, double target)
{
    double tick = timer_tick_s() * 1e6 / ops;
    double step = fmax(tick, stats_step(sorted, s->n, 0.5 * tick));
    double floor = RESOLUTION_STEPS * step;
    return step > 0 && target * s->median < 0.5 * step && s->median - s->ci_low <= floor &&
           s->ci_high - s->median <= floor;
}

/* The sorted samples all read the same tick of the clock (per operation; a tick not measured:
 * equal but for the rounding of seconds to doubles). */
static int all_identical(const double *sorted, long n, double ops)
{
    double tol = fmax(0.5 * timer_tick_s() * 1e6 / ops, 1e-9 * fabs(sorted[n - 1]));
    return n > 0 && sorted[n - 1] - sorted[0] <= tol;
}

/* Rank 0's decision after a batch: 0 to stop, else the next batch's length. */
static long next_batch(timing_t *t, const options_t *o, long same, long n, double sampling_s, double ops,
                       point_t *p)
{
    if (o->reps) {
        p->stop_reason = "reps";
        return n >= o->reps ? 0 : o->reps - n;
    }
    long valid = valid_samples(t, n, ops);
    stats_t s;
    stats_compute(t->scratch, (size_t)valid, o->simulated, &s);
    /* a deterministic simulator repeats a point exactly: `same` (--stop-identical) samples that
     * read the same tick say what --min-reps would (samples that differ go on to --min-reps) */
    if (same > 1 && valid >= same && valid < o->min_reps &&
        all_identical(t->scratch, valid, ops)) {
        p->stop_reason = "identical";
        return 0;
    }
    if (valid >= o->min_reps && stats_converged(&s, o->ci_target)) {
        p->stop_reason = "ci";
        return 0;
    }
    if (valid >= o->min_reps && at_timer_resolution(&s, t->scratch, ops, o->ci_target)) {
        p->stop_reason = "timer_resolution";
        return 0;
    }
    if (n >= o->max_reps) { p->stop_reason = "max_reps"; return 0; }
    double left_s = o->max_time_s - sampling_s;
    /* under simulation the cap reads simulated time, which costs the host nothing the samples
     * would not and repeats exactly: it waits for the `same` samples the identical rule needs,
     * else a point whose one sample outlasts the cap ends unconverged (at most --min-reps samples
     * taken, should some be invalid) */
    int owed = o->simulated && valid < same && same < o->min_reps && n < o->min_reps;
    if (left_s <= 0 && !owed) { p->stop_reason = "max_time"; return 0; }
    /* grow geometrically (so sorting stays cheap) but not past the time cap */
    long want = valid < o->min_reps ? o->min_reps - valid : (n + 1) / 2;
    if (valid < same && same < o->min_reps) want = same - valid;
    double per_event = sampling_s / (double)n;
    long fits = per_event > 0 ? (long)(left_s / per_event) + 1 : want;
    if (want > fits && !owed) want = fits;
    if (want > o->max_reps - n) want = o->max_reps - n;
    return want < 1 ? 1 : want;
}

/* Rank 0: the median event time of the valid samples so far (NaN: none). */
static double median_event_s(timing_t *t, long n)
{
    long valid = valid_samples(t, n, 1.0);
    return valid ? median_of(t->scratch, (size_t)valid) * 1e-6 : NAN;
}

/* Samples one phase of a point: this rank's own times go to t->local, and on
 * rank 0 the figure per sample (rank 0's, or the maximum over ranks) to
 * t->combined. Returns the number of samples. With judge, the clock-offset
 * error bound of window sync is held against the median event once there are
 * --min-reps valid samples (or sampling ends): sync_settle may tighten the
 * clocks or give way to barrier sync, and sampling then starts afresh. */
static long sample(timing_t *t, const bench_t *b, bench_ctx_t *c, const buffers_t *bufs,
                   const options_t *o, sync_t *sy, double ops, point_t *p, int judge)
{
    int active = is_active(b, c);
    int root_samples = (b->flags & BENCH_SAMPLE_ROOT) != 0;
    int once = (b->flags & BENCH_ONCE) != 0;
    long first = once ? 1 : o->reps ? o->reps : 1; /* one probe event sizes the batches */
    /* collectives only: window sync starts each of their samples alone, so a sample does not
     * depend on where in a batch it falls, where a simulated pingpong's samples do (the first of
     * a batch is slower) and an extra, short batch moved its median */
    long same = (b->flags & BENCH_COLLECTIVE) ? o->stop_identical : 0;
    long n = 0, batch = first;
    int judged = !judge || !sync_can_settle(sy);
    double sampling_start = now_s();
    while (batch > 0) {
        const sync_method_t *m = sy->m;
        double *x = t->local + n;
        if (m->batch_begin) m->batch_begin(sy);
        if (active || m->collective_start) {
            for (long i = 0; i < batch; i++) {
                use_slot(c, bufs, n + i);
                double t0 = m->start ? m->start(sy, i) : now_s();
                if (active) b->event(c);
                x[i] = once ? b->once(c) : now_s() - t0;
                watchdog_progress();  /* outside the sample: after its end was read */
            }
        }
        if (!active) memset(x, 0, (size_t)batch * sizeof *x);
        MPI_Request req;
        if (root_samples) {
            if (c->rank == 0) memcpy(t->combined + n, x, (size_t)batch * sizeof *x);
        } else {
            MPI_CHECK(MPI_Ireduce(x, t->combined + n, (int)batch, MPI_DOUBLE, MPI_MAX, 0, c->comm, &req));
            wait_request(&req, !active);
        }
        if (c->rank == 0 && m->batch_begin) {
            sync_feedback(sy, t->combined + n, batch);
            p->invalid += sy->batch_late;
        }
        n += batch;
        long decision[2] = {0, 0};  /* the next batch's length (0: stop); judge the clocks now */
        double event_s = 0;
        if (c->rank == 0) {
            if (once) p->stop_reason = "once";
            else decision[0] = next_batch(t, o, same, n, now_s() - sampling_start, ops, p);
            if (!judged && (decision[0] == 0 || valid_samples(t, n, ops) >= o->min_reps)) {
                decision[1] = 1;
                event_s = median_event_s(t, n);
            }
        }
        MPI_CHECK(MPI_Ibcast(decision, 2, MPI_LONG, 0, c->comm, &req));
        wait_request(&req, !active);
        batch = decision[0];
        if (decision[1]) {
            judged = 1;
            if (sync_settle(sy, event_s)) {
                n = 0;
                p->invalid = 0;
                batch = first;
                judged = !sync_can_settle(sy);
                MPI_CHECK(MPI_Barrier(c->comm));
                sampling_start = now_s();
            }
        }
    }
    return n;
}

/* Over ranks, each rank's mean time per operation from its own samples (the
 * invalid ones left out): IMB's t_min / t_max / t_avg, OSU's average. */
static void rank_means(timing_t *t, const bench_ctx_t *c, long n, double ops, point_t *p)
{
    long invalid = p->invalid;
    MPI_CHECK(MPI_Bcast(&invalid, 1, MPI_LONG, 0, c->comm));
    if (invalid) MPI_CHECK(MPI_Bcast(t->combined, (int)n, MPI_DOUBLE, 0, c->comm));
    double sum = 0;
    long m = 0;
    for (long i = 0; i < n; i++)
        if (isfinite(t->local[i]) && (!invalid || isfinite(t->combined[i]))) sum += t->local[i], m++;
    double mean = m ? sum / (double)m * 1e6 / ops : 0, extremes[2] = {mean, -mean}, worst[2], total = 0;
    MPI_CHECK(MPI_Reduce(extremes, worst, 2, MPI_DOUBLE, MPI_MAX, 0, c->comm));
    MPI_CHECK(MPI_Reduce(&mean, &total, 1, MPI_DOUBLE, MPI_SUM, 0, c->comm));
    if (c->rank != 0) return;
    p->have_rank_means = 1;
    p->rank_mean_max_us = worst[0];
    p->rank_mean_min_us = -worst[1];
    p->rank_mean_avg_us = total / c->nranks;
}

static void warm_up(const bench_t *b, bench_ctx_t *c, const buffers_t *bufs, const sync_method_t *m,
                    long from, long to)
{
    int active = is_active(b, c);
    for (long it = from; it < to; it++) {
        use_slot(c, bufs, it);
        if (m->barrier_warmup) MPI_CHECK(MPI_Barrier(c->comm));
        if (active) b->event(c);
        watchdog_progress();
    }
}

/* The point's warm-up: --warmup events always, then up to `count` (the bytes of --warmup-bytes,
 * at most WARMUP_CAP) while it has lasted less than --max-time by rank 0's clock, which decides
 * for everybody after each doubling of the events done (one MPI_Bcast, outside any timing).
 * A starved rank (ranks sharing their cores with busy processes) takes its 1000 events of a
 * 64-message bw window in 0.5-0.9 s against 30 ms alone; its samples stop at --max-time anyway,
 * so warming up longer than that buys nothing. Returns the events done. */
static long warm_up_within(const bench_t *b, bench_ctx_t *c, const buffers_t *bufs, const sync_method_t *m,
                           long floor, long count, double cap_s)
{
    double start = now_s();
    long done = floor < count ? floor : count;
    warm_up(b, c, bufs, m, 0, done);
    while (done < count) {
        int go = now_s() - start < cap_s;
        MPI_CHECK(MPI_Bcast(&go, 1, MPI_INT, 0, c->comm));
        if (!go) break;
        long next = done * 2 > done + 1 ? done * 2 : done + 1;
        if (next > count) next = count;
        warm_up(b, c, bufs, m, done, next);
        done = next;
    }
    return done;
}

/* A strategy that plans starts ahead learns how long one event takes: the
 * slowest rank's mean over the warm-up. */
static void begin_sampling(sync_t *sy, const bench_ctx_t *c, double elapsed_s, long count, double floor_s)
{
    if (!sy->m->point_begin) return;
    double mine = count ? elapsed_s / (double)count : 0, expected = 0;
    MPI_CHECK(MPI_Allreduce(&mine, &expected, 1, MPI_DOUBLE, MPI_MAX, c->comm));
    sy->m->point_begin(sy, expected > floor_s ? expected : floor_s);
}

static int phase_space(timing_t *t, int phases, int nranks)
{
    size_t need = (size_t)phases * (size_t)nranks;
    if (need <= t->phase_cap) return 0;
    free(t->phase_us);
    free(t->phase_rank_us);
    free(t->phase_n);
    t->phase_us = calloc(need, sizeof *t->phase_us);
    t->phase_rank_us = calloc(need, sizeof *t->phase_rank_us);
    t->phase_n = calloc(need, sizeof *t->phase_n);
    t->phase_cap = t->phase_us && t->phase_rank_us && t->phase_n ? need : 0;
    return t->phase_cap ? 0 : -1;
}

/* This rank's own median of its last n samples, per operation. */
static double own_median_us(timing_t *t, long n, double ops)
{
    long m = 0;
    for (long i = 0; i < n; i++)
        if (isfinite(t->local[i])) t->scratch[m++] = t->local[i] * 1e6 / ops;
    return m ? median_of(t->scratch, (size_t)m) : NAN;
}

/* Phases 1.. of a many-phase row (nonblocking collectives: compute alone, then
 * overlapped; grid: row and column alone; pairs: each pair and each shifted
 * ring), sampled one after the other like phase 0: per phase the median of the
 * figure per sample, its sample count, and every rank's own median (which rank
 * 0 gathers, since in a ring each rank times its own pair). Ranks that take no
 * part in a phase wait without spinning. */
static void later_phases(timing_t *t, const bench_t *b, bench_ctx_t *c, const buffers_t *bufs,
                         const options_t *o, sync_t *sy, int phases, long n0, point_t *p)
{
    int no_space = phase_space(t, phases, c->nranks) != 0, any = 0;
    MPI_CHECK(MPI_Allreduce(&no_space, &any, 1, MPI_INT, MPI_MAX, c->comm));
    if (any) return;
    if (c->rank == 0) memcpy(t->kept, t->scratch, p->time_us.n * sizeof *t->kept);
    p->samples_us = t->kept;
    const char *stop_reason = p->stop_reason;
    int converged = p->converged;
    long invalid = p->invalid;  /* the record's count is phase 0's, beside its time_us.n */
    double mine = own_median_us(t, n0, b->ops_per_event(c));
    MPI_CHECK(MPI_Gather(&mine, 1, MPI_DOUBLE, t->phase_rank_us, 1, MPI_DOUBLE, 0, c->comm));
    if (c->rank == 0) t->phase_us[0] = p->time_us.median, t->phase_n[0] = p->time_us.n;
    double phase0_s = p->event_median_s;
    if (b->calibrate) b->calibrate(c, phase0_s);
    for (int phase = 1; phase < phases; phase++) {
        c->phase = phase;
        double ops = b->ops_per_event(c);
        sy->polite = !is_active(b, c);
        watchdog_bystander(sy->polite);
        watchdog_progress();  /* the group finished the phase before */
        double w0 = now_s();
        warm_up(b, c, bufs, sy->m, 0, PHASE_WARMUP);
        /* a calibrated phase is made to last about as long as phase 0 (phase 2,
         * compute and operation overlapped, up to twice): a floor for start planning */
        begin_sampling(sy, c, now_s() - w0, PHASE_WARMUP, b->calibrate ? phase * phase0_s : 0);
        MPI_CHECK(MPI_Barrier(c->comm));
        long n = sample(t, b, c, bufs, o, sy, ops, p, 0);
        mine = is_active(b, c) ? own_median_us(t, n, ops) : NAN;
        MPI_CHECK(MPI_Gather(&mine, 1, MPI_DOUBLE, t->phase_rank_us + (size_t)phase * (size_t)c->nranks, 1,
                             MPI_DOUBLE, 0, c->comm));
        if (c->rank == 0) {
            stats_t s;
            long valid = valid_samples(t, n, ops);
            stats_compute(t->scratch, (size_t)valid, o->simulated, &s);
            t->phase_us[phase] = s.median;
            t->phase_n[phase] = s.n;
        }
    }
    c->phase = 0;
    watchdog_bystander(!is_active(b, c));
    p->stop_reason = stop_reason;
    p->converged = converged;
    p->invalid = invalid;
    p->nphases = phases;
    p->phase_us = t->phase_us;
    p->phase_rank_us = t->phase_rank_us;
    p->phase_n = t->phase_n;
}

/* Every rank's disturbance counters over the point, gathered on rank 0. */
static void gather_disturbance(timing_t *t, const bench_ctx_t *c, const disturb_t *begin, point_t *p)
{
    disturb_t end, mine;
    disturb_read(&end);
    disturb_delta(begin, &end, &mine);
    int no_space = 0, any = 0;
    if (c->rank == 0 && c->nranks > t->disturb_cap) {
        free(t->disturb);
        t->disturb = malloc((size_t)c->nranks * sizeof *t->disturb);
        t->disturb_cap = t->disturb ? c->nranks : 0;
        no_space = !t->disturb;
    }
    MPI_CHECK(MPI_Allreduce(&no_space, &any, 1, MPI_INT, MPI_MAX, c->comm));
    if (any) return;
    disturb_gather(&mine, t->disturb, c->comm);
    if (c->rank == 0) p->disturb = t->disturb;
}

void time_point(timing_t *t, const bench_t *b, bench_ctx_t *c, const buffers_t *bufs,
                const options_t *o, point_t *p)
{
    memset(p, 0, sizeof *p);
    disturb_t begin;
    disturb_read(&begin);
    double start = now_s(), host_start = sim_host_now_s();
    double ops = b->ops_per_event(c);
    sync_t sy;
    /* a method --sync names is kept; the row's default window sync may give way */
    c->phase = 0;
    watchdog_bystander(!is_active(b, c));
    sync_init(&sy, sync_choose(o->sync, b->flags, o->simulated), c->comm, !is_active(b, c), o->sync == NULL);

    if (o->check) verify_pass(b, c, bufs, p);

    double w0 = now_s();
    p->warmup = (b->flags & BENCH_ONCE) ? 0 : warm_up_within(b, c, bufs, sy.m, o->warmup, warmup_count(o, c->size),
                                                             o->max_time_s);
    begin_sampling(&sy, c, now_s() - w0, p->warmup, 0);
    MPI_CHECK(MPI_Barrier(c->comm));

    long n = sample(t, b, c, bufs, o, &sy, ops, p, 1);
    p->sync = sy.m->name;
    p->clock = sy.clock;
    if (c->rank == 0) memcpy(p->sync_reason, sy.reason, sizeof p->sync_reason);
    if (b->flags & BENCH_COLLECTIVE) rank_means(t, c, n, ops, p);

    if (c->rank == 0) {
        long valid = valid_samples(t, n, ops);
        stats_compute(t->scratch, (size_t)valid, o->simulated, &p->time_us);
        p->samples_us = t->scratch;
        p->converged = strcmp(p->stop_reason, "ci") == 0 || strcmp(p->stop_reason, "identical") == 0 ||
                       (strcmp(p->stop_reason, "reps") == 0 && stats_converged(&p->time_us, o->ci_target));
        p->event_median_s = p->time_us.median * ops * 1e-6;
        /* differences under half a tick are the rounding of the clock's seconds to doubles */
        p->sample_step_us = stats_step(t->scratch, (size_t)valid, 0.5 * timer_tick_s() * 1e6 / ops);
    }
    MPI_CHECK(MPI_Bcast(&p->event_median_s, 1, MPI_DOUBLE, 0, c->comm));
    int phases = bench_phases(b, c->nranks);
    if (phases > 1) later_phases(t, b, c, bufs, o, &sy, phases, n, p);
    p->window_us = sy.window_s * 1e6;
    p->elapsed_s = now_s() - start;
    gather_disturbance(t, c, &begin, p);
    p->host_s = sim_host_now_s() - host_start;
}
