/* latency_mt: osu_latency_mt's figure on the timing core. Ranks 0 and 1 each
 * run --threads threads (the calling thread and threads - 1 pthreads); in one
 * event every thread of rank 0 ping-pongs with its twin on rank 1 at once, on
 * a tag of its own, into a receive slot of its own. The event ends when the
 * last thread is back, so the reported time (half the event) is the latency
 * per message while the threads contend inside the library, and the message
 * rate counts 2 x threads messages per event.
 *
 * The helper threads wait for each event spinning on a generation counter
 * (yielding the core after a while, for oversubscribed hosts); the hand-over
 * costs a cache-line transfer per thread, small beside an MPI round trip.
 * MPI_THREAD_MULTIPLE is requested only when such a row is selected (main);
 * with less the row is skipped with the level the library gave. */
#include "kernels/threads.h"
#include "context.h"
#include "json.h"
#include "mpicheck.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

enum { TAG = 31, MAX_THREADS = 64, SPINS_BEFORE_YIELD = 4000 };

static long nthreads = 2;
static int level_choice = -1;    /* -1: multiple */
static int provided = -1;        /* -1: not known (no MPI_Init_thread yet, or --plan) */
static const char *const level_names[] = {"single", "funneled", "serialized", "multiple", NULL};

static const opt_spec_t specs[] = {
    {"threads", OPT_LONG, &nthreads, 1, MAX_THREADS, NULL, "N", "threads per rank for latency_mt (2)", "threads",
     0, NULL, NULL},
    {"thread-level", OPT_CHOICE, &level_choice, 0, 0, level_names, "single|funneled|serialized|multiple",
     "the level MPI_Init_thread requests when a thread benchmark is selected (multiple)", "thread_level",
     OPT_NULL_WHEN_UNSET, NULL, NULL},
    {NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL},
};

const option_table_t threads_options = {"threads (latency_mt)", specs, NULL};

int threads_needed(char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        const bench_t *b = bench_find(names[i]);
        if (b && (b->flags & BENCH_THREAD_MULTIPLE)) return 1;
    }
    return 0;
}

static int level_of(int choice)
{
    static const int levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED,
                                 MPI_THREAD_MULTIPLE};
    return levels[choice < 0 ? 3 : choice];
}

int threads_requested_level(void) { return level_of(level_choice); }
void threads_set_provided(int level) { provided = level; }

const char *thread_level_name(int level)
{
    for (int i = 0; i < 4; i++)
        if (level_of(i) == level) return level_names[i];
    return "unknown";
}

const char *threads_plan_skip(const bench_t *b, long size, int nranks, char *why, size_t len)
{
    (void)b, (void)size, (void)nranks;
    if (provided < 0 || provided >= MPI_THREAD_MULTIPLE) return NULL;
    snprintf(why, len, "needs MPI_THREAD_MULTIPLE: the library provided '%s' (requested '%s')",
             thread_level_name(provided), thread_level_name(threads_requested_level()));
    return why;
}

int threads_slots(const bench_ctx_t *c) { (void)c; return (int)nthreads; }
double threads_msgs(const bench_ctx_t *c) { (void)c; return 2.0 * (double)nthreads; }

typedef struct worker {
    struct mt_state *s;
    int id;
    pthread_t tid;
} worker_t;

typedef struct mt_state {
    bench_ctx_t *c;
    int n;                  /* threads per rank, the caller included */
    atomic_long go;         /* generation: a new event starts when it changes */
    atomic_int done;        /* helpers finished with this event */
    atomic_int quit;
    worker_t *workers;      /* n - 1 helpers (ranks 0 and 1 only) */
} mt_state_t;

static char *slot(const bench_ctx_t *c, int k) { return c->rbuf + (size_t)(k % c->rslots) * c->rslot; }

static void one_pingpong(const bench_ctx_t *c, int k)
{
    int n = (int)c->size, peer = 1 - c->rank;
    if (c->rank == 0) {
        MPI_CHECK(MPI_Send(c->sbuf, n, MPI_BYTE, peer, TAG + k, c->comm));
        MPI_CHECK(MPI_Recv(slot(c, k), n, MPI_BYTE, peer, TAG + k, c->comm, MPI_STATUS_IGNORE));
    } else {
        MPI_CHECK(MPI_Recv(slot(c, k), n, MPI_BYTE, peer, TAG + k, c->comm, MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Send(c->sbuf, n, MPI_BYTE, peer, TAG + k, c->comm));
    }
}

static void pause_a_little(long *spins)
{
    if (++*spins > SPINS_BEFORE_YIELD) sched_yield();
}

static void *helper(void *arg)
{
    worker_t *w = arg;
    mt_state_t *s = w->s;
    long seen = 0;
    for (;;) {
        long spins = 0, now;
        while ((now = atomic_load_explicit(&s->go, memory_order_acquire)) == seen &&
               !atomic_load_explicit(&s->quit, memory_order_acquire))
            pause_a_little(&spins);
        if (atomic_load_explicit(&s->quit, memory_order_acquire)) return NULL;
        seen = now;
        one_pingpong(s->c, w->id);
        atomic_fetch_add_explicit(&s->done, 1, memory_order_release);
    }
}

void threads_setup(bench_ctx_t *c)
{
    mt_state_t *s = calloc(1, sizeof *s);
    if (!s) MPI_Abort(MPI_COMM_WORLD, 3);
    s->c = c;
    s->n = (int)nthreads;
    atomic_init(&s->go, 0);
    atomic_init(&s->done, 0);
    atomic_init(&s->quit, 0);
    c->state = s;
    if (c->rank > 1 || s->n < 2) return;
    s->workers = calloc((size_t)s->n - 1, sizeof *s->workers);
    if (!s->workers) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int k = 1; k < s->n; k++) {
        worker_t *w = &s->workers[k - 1];
        w->s = s;
        w->id = k;
        if (pthread_create(&w->tid, NULL, helper, w)) {
            fprintf(stderr, "mpiscope-engine: cannot start thread %d of %d\n", k, s->n);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
}

void threads_teardown(bench_ctx_t *c)
{
    mt_state_t *s = c->state;
    if (s->workers) {
        atomic_store_explicit(&s->quit, 1, memory_order_release);
        for (int k = 1; k < s->n; k++) pthread_join(s->workers[k - 1].tid, NULL);
        free(s->workers);
    }
    free(s);
    c->state = NULL;
}

void latency_mt_event(bench_ctx_t *c)
{
    mt_state_t *s = c->state;
    if (c->rank > 1) return;
    s->c = c;
    atomic_store_explicit(&s->done, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->go, 1, memory_order_release);
    one_pingpong(c, 0);
    long spins = 0;
    while (atomic_load_explicit(&s->done, memory_order_acquire) < s->n - 1) pause_a_little(&spins);
}

long latency_mt_verify(const bench_ctx_t *c, long *verified)
{
    if (c->rank > 1) return 0;
    long errors = 0;
    for (int k = 0; k < (int)nthreads; k++) {
        errors += check_compare(slot(c, k), (size_t)c->size, 1 - c->rank, c->iter);
        *verified += c->size;
    }
    return errors;
}

/* Threads that spin or poll need a core each: with fewer, the figure is the
 * scheduler's (time slices of milliseconds), not the library's. */
void threads_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    (void)c, (void)p;
    long on_host = same_host(w, 0, 1) ? 2 * nthreads : nthreads;
    json_obj(j, "threads");
    json_int(j, "per_rank", nthreads);
    json_str(j, "level_requested", thread_level_name(threads_requested_level()));
    json_str(j, "level_provided", thread_level_name(provided));
    json_int(j, "on_rank0_host", on_host);
    json_bool(j, "more_than_cores", on_host > w->ranks[0].cores_online);
    json_close_obj(j);
}
