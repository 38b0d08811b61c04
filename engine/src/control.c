/* The machine-state control (control.h). Rank 0 and the first other rank on its host (its
 * partner) measure it together; every other rank waits without spinning, so the figures do not
 * depend on how many ranks the run has while they fit the cores. */
#include "control.h"
#include "json.h"
#include "mpicheck.h"
#include "sync.h"
#include "timer.h"
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum {
    REPS = 5,                   /* repetitions of every piece: a median and a spread */
    COMPUTE_STEPS = 1 << 15,    /* dependent floating-point steps: about 0.1 ms */
    COPY_BYTES = 2 << 20,       /* copied source to target: past a core's L2, within the L3 */
    HANDOFFS = 100,             /* cache-line round trips per repetition */
    MIN_TRIPS = 10,             /* fewer in the budget: the two ranks did not run at once */
    PINGS = 20,                 /* MPI round trips per repetition */
    LINE = 128                  /* bytes between the two flags: never one cache line (or pair) */
};
/* Per repetition of the handoff: ranks sharing a core would take a scheduler slice a handoff. */
#define HANDOFF_BUDGET_S 0.002
/* The MPI pingpong's repetitions stop once it has taken this long (a loaded machine). */
#define PINGPONG_BUDGET_S 0.005
/* The partner stops echoing if rank 0 never says so: it died, or was stopped. */
#define PARTNER_LIMIT_S 5.0

typedef struct piece {
    const char *name;
    double us[REPS];            /* each repetition's figure, microseconds */
    int n;                      /* repetitions with a figure (the first n of us) */
    int waited;                 /* repetitions without one: the ranks did not run at once */
    const char *skipped;        /* why it was not measured, or NULL */
} piece_t;

static volatile double sink;

static double compute_once(void)
{
    double x = sink + 1.0;
    double t0 = now_s();
    for (long i = 0; i < COMPUTE_STEPS; i++) x = x * 0.9999999 + 1e-7;
    double t = now_s() - t0;
    sink = x;
    return t;
}

static double copy_once(char *to, const char *from)
{
    double t0 = now_s();
    memcpy(to, from, COPY_BYTES);
    double t = now_s() - t0;
    sink += to[COPY_BYTES / 2];
    return t;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Two flags LINE bytes apart in a page both processes map: rank 0 writes ping, the partner
 * echoes it in pong. NULL (every rank of pair alike) when the page cannot be shared. */
static _Atomic long *share_page(MPI_Comm pair, int me)
{
    char name[64];
    int pid = (int)getpid(), failed = 0, any = 0;
    MPI_CHECK(MPI_Bcast(&pid, 1, MPI_INT, 0, pair));
    snprintf(name, sizeof name, "/mpiscope-control-%d", pid);
    int fd = me == 0 ? shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600) : -1;
    if (me == 0 && (fd < 0 || ftruncate(fd, 4096) != 0)) failed = 1;
    MPI_CHECK(MPI_Bcast(&failed, 1, MPI_INT, 0, pair));
    if (failed) {
        if (fd >= 0) close(fd), shm_unlink(name);
        return NULL;
    }
    if (me != 0) fd = shm_open(name, O_RDWR, 0600);
    void *page = fd >= 0 ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0) close(fd);
    failed = page == MAP_FAILED;
    MPI_CHECK(MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, pair));
    if (me == 0) shm_unlink(name);
    if (any) {
        if (!failed) munmap(page, 4096);
        return NULL;
    }
    return page;
}

/* Rank 0's side: round trips until HANDOFFS or the budget, each timed; the median one's half,
 * or 0 when fewer than MIN_TRIPS came back. A round trip that waited for a time slice (another
 * process took a core) is one slow figure among many: the median says how far apart the two
 * cores are (the machine's placement of them), which the disturbance counters cannot see;
 * ranks that could not run at once are counted apart (`waited`). */
static double hand_off(_Atomic long *ping, _Atomic long *pong, long *seq)
{
    double trip[HANDOFFS];
    double deadline = now_s() + HANDOFF_BUDGET_S;
    int done = 0;
    for (; done < HANDOFFS; done++) {
        long s = ++*seq;
        double t0 = now_s();
        atomic_store_explicit(ping, s, memory_order_release);
        for (unsigned spin = 0; atomic_load_explicit(pong, memory_order_acquire) != s; spin++)
            if ((spin & 255) == 255 && now_s() > deadline) goto out;
        trip[done] = now_s() - t0;
    }
out:
    if (done < MIN_TRIPS) return 0.0;
    qsort(trip, (size_t)done, sizeof *trip, by_value);
    return trip[done / 2] / 2.0;
}

/* The partner's side: echo every ping until rank 0 writes -1. */
static void echo(_Atomic long *ping, _Atomic long *pong)
{
    double deadline = now_s() + PARTNER_LIMIT_S;
    long last = 0;
    for (unsigned spin = 0;; spin++) {
        long s = atomic_load_explicit(ping, memory_order_acquire);
        if (s < 0) return;
        if (s != last) atomic_store_explicit(pong, last = s, memory_order_release);
        else if ((spin & 1023) == 1023 && now_s() > deadline) return;
    }
}

static void measure_handoff(piece_t *p, MPI_Comm pair, int me)
{
    _Atomic long *page = share_page(pair, me);
    if (!page) {
        p->skipped = "no shared memory page between rank 0 and its partner";
        return;
    }
    _Atomic long *ping = page, *pong = page + LINE / sizeof *page;
    long seq = 0;
    MPI_CHECK(MPI_Barrier(pair));
    if (me == 0) {
        hand_off(ping, pong, &seq);  /* both sides running and the lines in place */
        for (int i = 0; i < REPS; i++) {
            double one = hand_off(ping, pong, &seq);
            if (one > 0) p->us[p->n++] = one * 1e6;
            else p->waited++;
        }
        atomic_store_explicit(ping, -1, memory_order_release);
    } else {
        echo(ping, pong);
    }
    MPI_CHECK(MPI_Barrier(pair));
    munmap((void *)page, 4096);
    if (me == 0 && p->n == 0) p->skipped = "rank 0 and its partner never ran at once (other processes held the cores)";
}

/* Rank 0 leads: each message says whether another follows, so it can stop at the budget. */
static void measure_pingpong(piece_t *p, MPI_Comm pair, int me)
{
    char msg[8] = {1};
    if (me == 1) {
        for (;;) {
            MPI_CHECK(MPI_Recv(msg, 8, MPI_CHAR, 0, 0, pair, MPI_STATUS_IGNORE));
            if (!msg[0]) return;
            MPI_CHECK(MPI_Send(msg, 8, MPI_CHAR, 0, 0, pair));
        }
    }
    /* -1: the warm-up, which may also open the library's channel between the two */
    for (double start = 0; p->n < REPS && (start == 0 || now_s() - start < PINGPONG_BUDGET_S);) {
        double t0 = now_s();
        for (int k = 0; k < PINGS; k++) {
            MPI_CHECK(MPI_Send(msg, 8, MPI_CHAR, 1, 0, pair));
            MPI_CHECK(MPI_Recv(msg, 8, MPI_CHAR, 1, 0, pair, MPI_STATUS_IGNORE));
        }
        if (start > 0) p->us[p->n++] = (now_s() - t0) / (2.0 * PINGS) * 1e6;
        else start = now_s();
    }
    msg[0] = 0;
    MPI_CHECK(MPI_Send(msg, 8, MPI_CHAR, 1, 0, pair));
}

/* Compute and copy on both ranks of pair at once (or rank 0 alone) after one barrier; each
 * repetition's figure is the slower rank's, gathered at the end (a collective a repetition
 * cost a time slice each on a loaded machine). */
static void measure_local(piece_t *compute, piece_t *copy, MPI_Comm pair)
{
    char *from = malloc(COPY_BYTES), *to = malloc(COPY_BYTES);
    if (!from || !to) MPI_Abort(MPI_COMM_WORLD, 3);
    memset(from, 1, COPY_BYTES);
    memset(to, 0, COPY_BYTES);
    compute_once();
    double mine[2 * REPS], most[2 * REPS];
    MPI_CHECK(MPI_Barrier(pair));
    for (int i = 0; i < REPS; i++) mine[i] = compute_once() * 1e6;
    for (int i = 0; i < REPS; i++) mine[REPS + i] = copy_once(to, from) * 1e6;
    MPI_CHECK(MPI_Reduce(mine, most, 2 * REPS, MPI_DOUBLE, MPI_MAX, 0, pair));
    memcpy(compute->us, most, sizeof compute->us);
    memcpy(copy->us, most + REPS, sizeof copy->us);
    compute->n = copy->n = REPS;
    free(from);
    free(to);
}

static void emit_piece(json_t *j, const piece_t *p)
{
    if (p->skipped || p->n == 0) return;  /* absent; `skipped` says why */
    double s[REPS];
    memcpy(s, p->us, (size_t)p->n * sizeof *s);
    qsort(s, (size_t)p->n, sizeof *s, by_value);
    json_obj(j, p->name);
    json_num(j, "median", p->n % 2 ? s[p->n / 2] : (s[p->n / 2 - 1] + s[p->n / 2]) / 2.0);
    json_num(j, "min", s[0]);
    json_num(j, "max", s[p->n - 1]);
    json_arr(j, "samples");
    for (int i = 0; i < p->n; i++) json_num(j, NULL, p->us[i]);
    json_close_arr(j);
    if (p->waited) json_int(j, "waited", p->waited);
    json_close_obj(j);
}

static void emit(FILE *out, piece_t *pieces, int npieces, int partner, const char *skipped, double elapsed_s)
{
    json_t j = {0};
    json_begin(&j);
    json_str(&j, "type", "control");
    json_int(&j, "reps", REPS);
    json_arr(&j, "ranks");
    json_int(&j, NULL, 0);
    if (partner > 0) json_int(&j, NULL, partner);
    json_close_arr(&j);
    for (int i = 0; i < npieces; i++) emit_piece(&j, &pieces[i]);
    json_obj(&j, "skipped");
    if (skipped) json_str(&j, "all", skipped);
    for (int i = 0; i < npieces; i++)
        if (pieces[i].skipped) json_str(&j, pieces[i].name, pieces[i].skipped);
    json_close_obj(&j);
    json_num(&j, "elapsed_s", elapsed_s);
    json_end(&j);
    json_emit(&j, out);
    json_free(&j);
}

void control_run(const world_t *w, FILE *out, int simulated)
{
    piece_t pieces[] = {{.name = "compute_us"}, {.name = "copy_us"}, {.name = "handoff_us"},
                        {.name = "mpi_pingpong_us"}};
    enum { COMPUTE, COPY, HANDOFF, PINGPONG, NPIECES };
    if (simulated) {
        /* every clock is the simulator's: it sees the platform's state, not the host's */
        static const char why[] = "simulated: the clocks read the platform, not the host";
        for (int i = 0; i < NPIECES; i++) pieces[i].skipped = why;
        if (w->rank == 0 && out) emit(out, pieces, NPIECES, -1, why, 0.0);
        return;
    }
    double t0 = now_s();
    int partner = -1;
    for (int r = 1; r < w->nranks && partner < 0; r++)
        if (same_host(w, 0, r)) partner = r;
    int me = w->rank == 0 ? 0 : w->rank == partner ? 1 : -1;
    MPI_Comm pair;
    MPI_CHECK(MPI_Comm_split(w->comm, me >= 0 ? 0 : MPI_UNDEFINED, me, &pair));
    if (me >= 0) {
        measure_local(&pieces[COMPUTE], &pieces[COPY], pair);
        if (partner < 0) {
            pieces[HANDOFF].skipped = pieces[PINGPONG].skipped = "no second rank on rank 0's host";
        } else if (w->oversubscribed) {
            /* both sides spin: on a shared core each handoff would wait for a time slice */
            pieces[HANDOFF].skipped = "the host runs more ranks than it has cores";
            measure_pingpong(&pieces[PINGPONG], pair, me);
        } else {
            measure_handoff(&pieces[HANDOFF], pair, me);
            measure_pingpong(&pieces[PINGPONG], pair, me);
        }
        MPI_CHECK(MPI_Comm_free(&pair));
    }
    MPI_Request req;
    MPI_CHECK(MPI_Ibarrier(w->comm, &req));
    wait_request(&req, me < 0);
    if (w->rank == 0 && out) emit(out, pieces, NPIECES, partner, NULL, now_s() - t0);
}
