/* How the ranks start a sample together: small swappable strategies (after
 * ReproMPI's process-sync modules), and the clock synchronisation the window
 * strategy stands on. */
#ifndef MPISCOPE_SYNC_H
#define MPISCOPE_SYNC_H

#include <mpi.h>

struct sync;

typedef struct sync_method {
    const char *name;
    int collective_start;  /* every rank of the communicator must call start, active or not */
    int barrier_warmup;    /* warm-up iterations are separated by barriers */
    /* Once per point after warm-up; expected_s: one event's time, max over ranks. */
    void (*point_begin)(struct sync *s, double expected_s);
    /* Before each batch of samples (collective over the communicator, or NULL). */
    void (*batch_begin)(struct sync *s);
    /* Returns when sample i of the batch may start, and the local time it started at:
     * -INFINITY marks a sample this rank started late (it is then invalid).
     * NULL: start at once. */
    double (*start)(struct sync *s, long i);
} sync_method_t;

typedef struct clock_quality {
    double max_offset_us;   /* largest |offset| of a rank's clock against rank 0's, as estimated */
    double error_us;        /* largest bound on that estimate: half the best ping-pong round trip */
    double max_drift_ppm;   /* largest fitted drift, 0 until the fit spans long enough */
    int fit_points;         /* offset estimates the fit used, on the rank with fewest */
    int pings;              /* ping-pongs each rank exchanged for this estimate (0: no clock sync) */
} clock_quality_t;

/* Window sync is trusted while the clock-offset error bound is at most this
 * share of one event's median time. */
#define SYNC_MAX_ERROR_SHARE 0.25

typedef struct sync {
    const sync_method_t *m;
    MPI_Comm comm;
    int rank, nranks, polite;
    double window_s, lead_s;  /* window: time between starts; how far ahead a batch starts */
    double first_start;       /* window: the batch's first start, global clock */
    long batch_first_late, batch_late, batch_n;  /* rank 0's view of the last batch */
    clock_quality_t clock;
    int rounds;               /* window: tightening rounds done for this point */
    int may_fall_back;        /* the method is the row's default, not --sync's: it may give way */
    char reason[240];         /* rank 0: why the method gave way ("" when it did not) */
} sync_t;

/* The methods' names, NULL-terminated: the choices of --sync. */
extern const char *const sync_method_names[];
/* The method named (none, barrier, window) or, for NULL, the row's default (simulated: window
 * for the barrier rows too). */
const sync_method_t *sync_choose(const char *name, unsigned bench_flags, int simulated);
/* main, before measuring: with more ranks than cores on a host, waiting for a start yields the
 * core; simulated, every rank reads the one clock (no offsets) and a wait is a simulated sleep. */
void sync_configure(int oversubscribed, int simulated);

/* polite: this rank takes no part in the samples and should not spin;
 * may_fall_back: window sync may give way to barrier sync (sync_settle). */
void sync_init(sync_t *s, const sync_method_t *m, MPI_Comm comm, int polite, int may_fall_back);

/* Whether samples under s depend on the clock offsets and sync_settle could
 * still do something about a large error bound (tighten, or give way). */
int sync_can_settle(const sync_t *s);
/* When the clock-offset error bound exceeds SYNC_MAX_ERROR_SHARE of one event
 * (event_s, rank 0's view; not positive: unknown), more ping-pong rounds keep
 * the best exchange; if the bound is still too large and may_fall_back, the
 * method becomes barrier sync, whose samples do not depend on the offsets, and
 * rank 0 writes why in s->reason. Collective; every rank then holds the same
 * method. Returns 1 when the clocks or the method changed (the samples taken
 * so far are stale). */
int sync_settle(sync_t *s, double event_s);
/* Rank 0 shows the strategy the last batch's samples (infinite: started late);
 * window sync lengthens its window or its lead time from them. */
void sync_feedback(sync_t *s, const double *samples, long batch);

/* Waits for a request; polite waiting sleeps between tests so that ranks
 * which take no part leave the cores to those that do. */
void wait_request(MPI_Request *req, int polite);

#endif
