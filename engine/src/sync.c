/* Start synchronisation: none, barrier, and window (SKaMPI / ReproMPI): every
 * rank estimates its clock's offset and drift against rank 0 by ping-pongs,
 * then each sample starts at an agreed time on that common clock. */
#include "sync.h"
#include "bench.h"
#include "mpicheck.h"
#include "sim.h"
#include "timer.h"
#include "watchdog.h"
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

enum { PINGS = 16, HISTORY = 32, TIGHTEN_ROUNDS = 2, TAG_GO = 901, TAG_PING = 902, TAG_PONG = 903 };

/* Drift is only fitted over offset estimates that span at least this long:
 * over a shorter span the noise of the estimates would swamp it. */
static const double MIN_FIT_SPAN_S = 0.2, MAX_DRIFT = 1e-4;
/* Ping-pongs per rank of each tightening round: more chances of a short round trip. */
static const int TIGHTEN_PINGS[TIGHTEN_ROUNDS] = {64, 256};

/* This rank's clock against rank 0's: global = local + a + b (local - tref).
 * Every communicator the engine measures on has world rank 0 as its rank 0, so
 * one model serves them all and its history spans the whole run. */
static struct {
    double t[HISTORY], off[HISTORY];
    int n, next;
    double a, b, tref;
} clk;

static int yield_while_waiting, one_clock;

void sync_configure(int oversubscribed, int simulated)
{
    yield_while_waiting = oversubscribed;
    one_clock = simulated;
}

static double to_global(double local) { return local + clk.a + clk.b * (local - clk.tref); }
static double to_local(double global) { return (global - clk.a + clk.b * clk.tref) / (1.0 + clk.b); }

void wait_request(MPI_Request *req, int polite)
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

/* Least squares over the history once it spans long enough; else the latest estimate. */
static void fit(void)
{
    int last = (clk.next + HISTORY - 1) % HISTORY;
    double tmin = clk.t[last], tmax = clk.t[last], tm = 0, om = 0;
    for (int i = 0; i < clk.n; i++) {
        if (clk.t[i] < tmin) tmin = clk.t[i];
        if (clk.t[i] > tmax) tmax = clk.t[i];
        tm += clk.t[i];
        om += clk.off[i];
    }
    clk.a = clk.off[last];
    clk.b = 0;
    clk.tref = clk.t[last];
    if (clk.n < 3 || tmax - tmin < MIN_FIT_SPAN_S) return;
    tm /= clk.n;
    om /= clk.n;
    double sxy = 0, sxx = 0;
    for (int i = 0; i < clk.n; i++) {
        sxy += (clk.t[i] - tm) * (clk.off[i] - om);
        sxx += (clk.t[i] - tm) * (clk.t[i] - tm);
    }
    double b = sxx > 0 ? sxy / sxx : 0;
    if (fabs(b) > MAX_DRIFT) return;  /* not a clock drift: keep the latest estimate */
    clk.a = om;
    clk.b = b;
    clk.tref = tm;
}

/* This point's best exchange with rank 0 so far (ranks other than 0). */
static struct { double rtt, off, t; } best;

/* One round of ping-pongs: rank 0 serves the others in turn; each keeps the
 * exchange with the shortest round trip, whose offset estimate is off by at
 * most half that round trip. A first round adds an estimate to the history;
 * a later round of the same point (again) keeps the best of both in its place. */
static void clock_round(sync_t *s, int pings, int again)
{
    if (one_clock) {  /* every simulated rank reads the one simulated clock: no offset to estimate */
        if (s->rank == 0) s->clock = (clock_quality_t){0, 0, 0, 0, 0};
        return;
    }
    if (s->rank == 0) {
        for (int r = 1; r < s->nranks; r++) {
            MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, r, TAG_GO, s->comm));
            for (int k = 0; k < pings; k++) {
                MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, r, TAG_PING, s->comm, MPI_STATUS_IGNORE));
                double t = now_s();
                MPI_CHECK(MPI_Send(&t, 1, MPI_DOUBLE, r, TAG_PONG, s->comm));
                watchdog_progress();
            }
        }
    } else {
        MPI_Request req;
        MPI_CHECK(MPI_Irecv(NULL, 0, MPI_BYTE, 0, TAG_GO, s->comm, &req));
        wait_request(&req, 1);
        if (!again) best.rtt = INFINITY;
        for (int k = 0; k < pings; k++) {
            double t0, t1 = now_s();
            MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_PING, s->comm));
            MPI_CHECK(MPI_Recv(&t0, 1, MPI_DOUBLE, 0, TAG_PONG, s->comm, MPI_STATUS_IGNORE));
            double t2 = now_s();
            watchdog_progress();
            if (t2 - t1 < best.rtt) {
                best.rtt = t2 - t1;
                best.off = t0 - 0.5 * (t1 + t2);
                best.t = 0.5 * (t1 + t2);
            }
        }
        int slot = again && clk.n > 0 ? (clk.next + HISTORY - 1) % HISTORY : clk.next;
        clk.t[slot] = best.t;
        clk.off[slot] = best.off;
        if (slot == clk.next) {
            clk.next = (clk.next + 1) % HISTORY;
            if (clk.n < HISTORY) clk.n++;
        }
        fit();
    }
    double mine[4] = {0, 0, 0, -1e9}, worst[4];  /* rank 0 has no fit: it must not count as fewest points */
    if (s->rank != 0) {
        mine[0] = fabs(to_global(now_s()) - now_s()) * 1e6;
        mine[1] = 0.5 * best.rtt * 1e6;
        mine[2] = fabs(clk.b) * 1e6;
        mine[3] = -(clk.b != 0 ? clk.n : 1);
    }
    MPI_Request req;
    MPI_CHECK(MPI_Ireduce(mine, worst, 4, MPI_DOUBLE, MPI_MAX, 0, s->comm, &req));
    wait_request(&req, s->rank != 0);
    int pings_so_far = (again ? s->clock.pings : 0) + pings;
    if (s->rank == 0)
        s->clock = (clock_quality_t){worst[0], worst[1], worst[2], s->nranks > 1 ? (int)-worst[3] : 0, 0};
    s->clock.pings = pings_so_far;
}

/* ---- barrier: an MPI_Barrier before every sample ---- */

static double barrier_start(sync_t *s, long i)
{
    (void)i;
    MPI_CHECK(MPI_Barrier(s->comm));
    return now_s();
}

/* ---- window: start at agreed times on the common clock ---- */

static void window_point_begin(sync_t *s, double expected_s)
{
    clock_round(s, PINGS, 0);
    s->rounds = 0;
    if (s->rank != 0) return;
    double err = s->clock.error_us * 1e-6;
    s->window_s = 2.0 * expected_s + 4.0 * err;
    if (s->window_s < 10e-6) s->window_s = 10e-6;
    s->lead_s = 2.0 * s->window_s > 200e-6 ? 2.0 * s->window_s : 200e-6;
}

static void window_batch_begin(sync_t *s)
{
    double plan[2] = {0, 0};
    if (s->rank == 0) plan[0] = to_global(now_s()) + s->lead_s, plan[1] = s->window_s;
    MPI_Request req;
    MPI_CHECK(MPI_Ibcast(plan, 2, MPI_DOUBLE, 0, s->comm, &req));
    wait_request(&req, s->polite);
    s->first_start = plan[0];
    s->window_s = plan[1];
}

/* Waiting spins: a rank that slept through the wait measured its sample
 * several times slower with Open MPI's shared memory at 1 MiB (idle cores
 * wake up slowly). */
static double window_start(sync_t *s, long i)
{
    double target = to_local(s->first_start + (double)i * s->window_s);
    double t = now_s();
    if (t > target) return -INFINITY;
    if (one_clock) {
        sim_sleep_until(target);
        return target;
    }
    /* oversubscribed: yield while far off, so the core can run the other ranks */
    while (yield_while_waiting && target - t > 20e-6) {
        sched_yield();
        t = now_s();
    }
    while (t < target) t = now_s();
    return target;
}

static const sync_method_t methods[] = {
    /* none: each rank starts when it gets there; no start hook, so the timing
     * core reads the clock itself and the point-to-point fast path stays bare */
    {"none", 0, 0, NULL, NULL, NULL},
    {"barrier", 1, 1, NULL, NULL, barrier_start},
    {"window", 0, 1, window_point_begin, window_batch_begin, window_start},
};

const char *const sync_method_names[] = {"window", "barrier", "none", NULL};

const sync_method_t *sync_choose(const char *name, unsigned flags, int simulated)
{
    /* Simulated, a window start is exact (one clock, a sleep to the start), where ranks leave a
     * barrier one message latency apart: a pair with the barrier's root measured 2 us slower. */
    if (!name && (flags & BENCH_SYNC_BARRIER) && simulated) name = "window";
    if (!name) name = (flags & BENCH_SYNC_BARRIER) ? "barrier" : (flags & BENCH_COLLECTIVE) ? "window" : "none";
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (strcmp(methods[i].name, name) == 0) return &methods[i];
    return &methods[0];
}

void sync_init(sync_t *s, const sync_method_t *m, MPI_Comm comm, int polite, int may_fall_back)
{
    memset(s, 0, sizeof *s);
    s->m = m;
    s->comm = comm;
    s->polite = polite;
    s->may_fall_back = may_fall_back;
    MPI_CHECK(MPI_Comm_rank(comm, &s->rank));
    MPI_CHECK(MPI_Comm_size(comm, &s->nranks));
}

void sync_feedback(sync_t *s, const double *samples, long batch)
{
    long late = 0, long_ones = 0;
    for (long i = 0; i < batch; i++) {
        if (!isfinite(samples[i])) late++;
        else if (samples[i] > 0.5 * s->window_s) long_ones++;
    }
    s->batch_n = batch;
    s->batch_late = late;
    s->batch_first_late = batch > 0 && !isfinite(samples[0]);
    if (s->batch_first_late && s->lead_s < 10.0) s->lead_s *= 2;
    /* Samples that fill much of the window make it longer, as does a batch
     * that is mostly late or long. A few late samples do not: one descheduled
     * rank makes every following start late until it has caught up, and a
     * longer window would not have saved them. */
    int too_short = long_ones > 1 + batch / 10 || (batch >= 4 && late + long_ones > batch / 2);
    if (too_short && s->window_s < 10.0) s->window_s *= 2;
}

static const sync_method_t *const window_method = &methods[2], *const barrier_method = &methods[1];

int sync_can_settle(const sync_t *s)
{
    return s->m == window_method && (s->rounds < TIGHTEN_ROUNDS || s->may_fall_back);
}

/* Rank 0's verdict, the same on every rank. */
static int agree(sync_t *s, int verdict)
{
    MPI_Request req;
    MPI_CHECK(MPI_Ibcast(&verdict, 1, MPI_INT, 0, s->comm, &req));
    wait_request(&req, s->polite);
    return verdict;
}

int sync_settle(sync_t *s, double event_s)
{
    if (s->m != window_method) return 0;
    enum { FINE, TOO_LARGE, NO_EVENT };  /* rank 0's verdict on the bound */
    double limit_us = SYNC_MAX_ERROR_SHARE * event_s * 1e6;
    int changed = 0, verdict;
    while ((verdict = agree(s, s->rank != 0 ? FINE : !(event_s > 0) ? NO_EVENT
                                : s->clock.error_us > limit_us ? TOO_LARGE : FINE)) != FINE) {
        /* without an event time to compare with, more ping-pongs prove nothing */
        int tighten = s->rounds < TIGHTEN_ROUNDS && (verdict == TOO_LARGE || !s->may_fall_back);
        if (tighten) {
            clock_round(s, TIGHTEN_PINGS[s->rounds++], 1);
            changed = 1;
            continue;
        }
        if (!s->may_fall_back) return changed;
        if (s->rank == 0 && verdict == TOO_LARGE)
            snprintf(s->reason, sizeof s->reason, "window sync's clock-offset error bound, %.3g us after %d "
                     "ping-pongs per rank, is %.0f %% of the event's median %.3g us (more than %.0f %%): "
                     "barrier sync does not depend on clock offsets", s->clock.error_us, s->clock.pings,
                     100.0 * s->clock.error_us / (event_s * 1e6), event_s * 1e6, 100.0 * SYNC_MAX_ERROR_SHARE);
        else if (s->rank == 0)
            snprintf(s->reason, sizeof s->reason, "window sync gave no valid sample (clock-offset error bound "
                     "%.3g us after %d ping-pongs per rank): barrier sync does not depend on clock offsets",
                     s->clock.error_us, s->clock.pings);
        s->m = barrier_method;
        return 1;
    }
    return changed;
}
