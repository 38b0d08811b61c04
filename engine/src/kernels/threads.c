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
 * with less the row is skipped with the level the library gave.
 *
 * --threads-recv R (osu_latency_mt -t S:R) gives rank 1 R threads against
 * rank 0's S = --threads: one event is then P = max(S, R) ping-pongs, number
 * i between sender thread i mod S and receiver thread i mod R, each thread
 * doing its share one after the other, so every thread of both ranks is in
 * MPI in every event. The reported time is the event over 2 x ceil(P / S):
 * the latency per message a sender thread sees. The pool below (a thread per
 * slot, released per event) serves the IMB-MT rows of kernels/imbmt.c too. */
#include "kernels/threads.h"
#include "world.h"
#include "json.h"
#include "mpicheck.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

enum { TAG = 31, MAX_THREADS = 64, SPINS_BEFORE_YIELD = 4000 };

static long nthreads = 2;
static long nrecv = 0;           /* 0: as --threads */
static int level_choice = -1;    /* -1: multiple */
static int provided = -1;        /* -1: not known (no MPI_Init_thread yet, or --plan) */
static const char *const level_names[] = {"single", "funneled", "serialized", "multiple", NULL};

static const opt_spec_t specs[] = {
    {"threads", OPT_LONG, &nthreads, 1, MAX_THREADS, NULL, "N", "threads per rank (latency_mt: on rank 0) (2)", "threads",
     0, NULL, NULL},
    {"threads-recv", OPT_LONG, &nrecv, 1, MAX_THREADS, NULL, "R",
     "latency_mt: threads on rank 1 (osu_latency_mt -t S:R with S = --threads; default: --threads)",
     "threads_recv", OPT_NULL_WHEN_UNSET, NULL, NULL},
    {"thread-level", OPT_CHOICE, &level_choice, 0, 0, level_names, "single|funneled|serialized|multiple",
     "the level MPI_Init_thread requests when a thread benchmark is selected (multiple)", "thread_level",
     OPT_NULL_WHEN_UNSET, NULL, NULL},
    {NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL},
};

const option_table_t threads_options = {"threads (latency_mt, IMB-MT rows *_mt)", specs, NULL};

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

long threads_per_rank(void) { return nthreads; }

static int senders(void) { return (int)nthreads; }
static int receivers(void) { return (int)(nrecv > 0 ? nrecv : nthreads); }
/* Ping-pongs per latency_mt event, and the most one sender thread does. */
static int pingpongs(void) { return senders() > receivers() ? senders() : receivers(); }
static int per_sender(void) { return (pingpongs() + senders() - 1) / senders(); }

int threads_slots(const bench_ctx_t *c) { (void)c; return pingpongs(); }
double threads_msgs(const bench_ctx_t *c) { (void)c; return 2.0 * pingpongs(); }
double threads_ops(const bench_ctx_t *c) { (void)c; return 2.0 * per_sender(); }

/* ---- the pool: n threads (the caller is thread 0) run job(c, k) once per round ---- */

typedef struct worker {
    struct mt_pool *p;
    int id;
    pthread_t tid;
} worker_t;

struct mt_pool {
    bench_ctx_t *c;
    mt_job_t job;
    int n;                  /* threads, the caller included */
    atomic_long go;         /* generation: a new round starts when it changes */
    atomic_int done;        /* helpers finished with this round */
    atomic_int quit;
    worker_t *workers;      /* n - 1 helpers */
};

static void pause_a_little(long *spins)
{
    if (++*spins > SPINS_BEFORE_YIELD) sched_yield();
}

static void *helper(void *arg)
{
    worker_t *w = arg;
    mt_pool_t *p = w->p;
    long seen = 0;
    for (;;) {
        long spins = 0, now;
        while ((now = atomic_load_explicit(&p->go, memory_order_acquire)) == seen &&
               !atomic_load_explicit(&p->quit, memory_order_acquire))
            pause_a_little(&spins);
        if (atomic_load_explicit(&p->quit, memory_order_acquire)) return NULL;
        seen = now;
        p->job(p->c, w->id);
        atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
    }
}

mt_pool_t *mt_pool_start(bench_ctx_t *c, int n, mt_job_t job)
{
    mt_pool_t *p = calloc(1, sizeof *p);
    if (!p) MPI_Abort(MPI_COMM_WORLD, 3);
    p->c = c;
    p->job = job;
    p->n = n;
    atomic_init(&p->go, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->quit, 0);
    if (n < 2) return p;
    p->workers = calloc((size_t)n - 1, sizeof *p->workers);
    if (!p->workers) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int k = 1; k < n; k++) {
        worker_t *w = &p->workers[k - 1];
        w->p = p;
        w->id = k;
        if (pthread_create(&w->tid, NULL, helper, w)) {
            fprintf(stderr, "mpiscope-engine: cannot start thread %d of %d\n", k, n);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    return p;
}

void mt_pool_run(mt_pool_t *p, bench_ctx_t *c)
{
    p->c = c;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->go, 1, memory_order_release);
    p->job(c, 0);
    long spins = 0;
    while (atomic_load_explicit(&p->done, memory_order_acquire) < p->n - 1) pause_a_little(&spins);
}

void mt_pool_stop(mt_pool_t *p)
{
    if (!p) return;
    if (p->workers) {
        atomic_store_explicit(&p->quit, 1, memory_order_release);
        for (int k = 1; k < p->n; k++) pthread_join(p->workers[k - 1].tid, NULL);
        free(p->workers);
    }
    free(p);
}

/* ---- latency_mt ---- */

static char *slot(const bench_ctx_t *c, int i) { return c->rbuf + (size_t)(i % c->rslots) * c->rslot; }

/* Thread k's share of the event: ping-pongs k, k + its side's threads, ... */
static void latency_job(bench_ctx_t *c, int k)
{
    int n = (int)c->size, peer = 1 - c->rank, step = c->rank == 0 ? senders() : receivers();
    for (int i = k; i < pingpongs(); i += step) {
        if (c->rank == 0) {
            MPI_CHECK(MPI_Send(c->sbuf, n, MPI_BYTE, peer, TAG + i, c->comm));
            MPI_CHECK(MPI_Recv(slot(c, i), n, MPI_BYTE, peer, TAG + i, c->comm, MPI_STATUS_IGNORE));
        } else {
            MPI_CHECK(MPI_Recv(slot(c, i), n, MPI_BYTE, peer, TAG + i, c->comm, MPI_STATUS_IGNORE));
            MPI_CHECK(MPI_Send(c->sbuf, n, MPI_BYTE, peer, TAG + i, c->comm));
        }
    }
}

void threads_setup(bench_ctx_t *c)
{
    c->state = NULL;
    if (c->rank > 1) return;
    c->state = mt_pool_start(c, c->rank == 0 ? senders() : receivers(), latency_job);
}

void threads_teardown(bench_ctx_t *c)
{
    mt_pool_stop(c->state);
    c->state = NULL;
}

void latency_mt_event(bench_ctx_t *c)
{
    if (c->rank > 1) return;
    mt_pool_run(c->state, c);
}

long latency_mt_verify(const bench_ctx_t *c, long *verified)
{
    if (c->rank > 1) return 0;
    long errors = 0;
    for (int i = 0; i < pingpongs(); i++) {
        errors += check_compare(slot(c, i), (size_t)c->size, 1 - c->rank, c->iter);
        *verified += c->size;
    }
    return errors;
}

const char *threads_level_name_provided(void) { return thread_level_name(provided); }

/* Threads that spin or poll need a core each: with fewer, the figure is the
 * scheduler's (time slices of milliseconds), not the library's. */
void threads_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    (void)c, (void)p;
    long on_host = same_host(w, 0, 1) ? senders() + receivers() : senders();
    json_obj(j, "threads");
    json_int(j, "per_rank", nthreads);
    json_str(j, "level_requested", thread_level_name(threads_requested_level()));
    json_str(j, "level_provided", thread_level_name(provided));
    json_int(j, "on_rank0_host", on_host);
    json_bool(j, "more_than_cores", on_host > w->ranks[0].cores_online);
    json_close_obj(j);
    json_obj(j, "latency_mt");
    json_int(j, "senders", senders());
    json_int(j, "receivers", receivers());
    json_int(j, "pingpongs_per_event", pingpongs());
    json_int(j, "pingpongs_per_sender", per_sender());
    json_close_obj(j);
}
