/* Many pairs and congestion on the timing core. Every row's event is one
 * round of its pattern; the figure per sample is the slowest rank's time
 * (the ranks start together after a barrier), divided as each row says:
 *
 * multi_lat (osu_multi_lat): N/2 pairs (i, i + N/2) ping-pong at once; half
 *   a round trip, so the latency per message while all pairs are busy.
 * latency_mp (osu_latency_mp): pingpong between ranks 0 and 1 while each of
 *   them has --procs forked child processes (asleep): what fork does to the
 *   library (registered memory, copy-on-write pages).
 * fan_in / fan_out (osu_bw_fan_in / osu_bw_fan_out): ranks 1..N-1 each
 *   stream a window of --window messages to rank 0 / rank 0 streams a window
 *   to each of them, then acknowledgements; time per window slot, the
 *   aggregate bandwidth at rank 0 and the message rate.
 * unirandom / birandom (IMB-P2P): N messages per event between random pairs
 *   (one way, or both ways at once); corandom: a random ring, every rank sends
 *   to its successor and receives from its predecessor at once. Time per
 *   message of the whole job, aggregate bandwidth, message rate. The partners
 *   come from the event's number, so every rank draws the same ones.
 * stencil2d / stencil3d (IMB-P2P): halo exchange with the 4 / 6 neighbours of
 *   a periodic grid (MPI_Dims_create); time of one exchange, aggregate
 *   bandwidth, message rate. */
#include "kernels/congestion.h"
#include "kernels/p2p.h"
#include "json.h"
#include "mpicheck.h"
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

enum { TAG = 41, ACK_TAG = 42, MAX_PROCS = 64 };

static long forked_procs = 1;

static const opt_spec_t specs[] = {
    {"procs", OPT_LONG, &forked_procs, 0, MAX_PROCS, NULL, "N",
     "forked child processes on ranks 0 and 1 for latency_mp (1)", "procs", 0, NULL, NULL},
    {NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL},
};

const option_table_t congestion_options = {"many pairs and congestion (latency_mp; fan_in and fan_out use --window)",
                                           specs, NULL};

static char *slot(const bench_ctx_t *c, int k) { return c->rbuf + (size_t)(k % c->rslots) * c->rslot; }
static int window(void) { return (int)p2p_window; }

/* ---- multi_lat ---- */

static int npairs(const bench_ctx_t *c) { return c->nranks / 2; }

double multi_lat_msgs(const bench_ctx_t *c) { return 2.0 * npairs(c); }

void multi_lat_event(bench_ctx_t *c)
{
    int p = npairs(c), n = (int)c->size;
    if (c->rank < p) {
        MPI_CHECK(MPI_Send(c->sbuf, n, MPI_BYTE, c->rank + p, TAG, c->comm));
        MPI_CHECK(MPI_Recv(c->rbuf, n, MPI_BYTE, c->rank + p, TAG, c->comm, MPI_STATUS_IGNORE));
    } else if (c->rank < 2 * p) {
        MPI_CHECK(MPI_Recv(c->rbuf, n, MPI_BYTE, c->rank - p, TAG, c->comm, MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Send(c->sbuf, n, MPI_BYTE, c->rank - p, TAG, c->comm));
    }
}

long multi_lat_verify(const bench_ctx_t *c, long *verified)
{
    int p = npairs(c);
    if (c->rank >= 2 * p) return 0;
    *verified += c->size;
    return check_compare(c->rbuf, (size_t)c->size, c->rank < p ? c->rank + p : c->rank - p, c->iter);
}

/* ---- latency_mp: children that only sleep, and die with their parent ---- */

typedef struct mp_state { int n; pid_t pid[MAX_PROCS]; } mp_state_t;

void latency_mp_setup(bench_ctx_t *c)
{
    mp_state_t *s = calloc(1, sizeof *s);
    if (!s) MPI_Abort(MPI_COMM_WORLD, 3);
    c->state = s;
    if (c->rank > 1) return;
    for (int i = 0; i < (int)forked_procs; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (;;) pause();
        }
        if (pid < 0) break;
        s->pid[s->n++] = pid;
    }
}

void latency_mp_teardown(bench_ctx_t *c)
{
    mp_state_t *s = c->state;
    for (int i = 0; i < s->n; i++) {
        kill(s->pid[i], SIGKILL);
        waitpid(s->pid[i], NULL, 0);
    }
    free(s);
    c->state = NULL;
}

void latency_mp_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    (void)p, (void)w;
    const mp_state_t *s = c->state;
    json_int(j, "forked_procs", forked_procs);
    json_int(j, "forked_procs_rank0", s->n);
}

/* ---- fan_in, fan_out ---- */

int fan_in_slots(const bench_ctx_t *c) { return c->rank == 0 && c->nranks > 1 ? c->nranks - 1 : 1; }
int fan_out_slots(const bench_ctx_t *c) { return c->rank == 0 ? 1 : window(); }
double fan_bytes(const bench_ctx_t *c) { return (double)(c->nranks - 1) * (double)c->size; }
double fan_msgs(const bench_ctx_t *c) { return (double)(c->nranks - 1) * (double)p2p_window; }

int fan_pairs(const bench_ctx_t *c, pair_t *out)
{
    for (int r = 1; r < c->nranks; r++) out[r - 1] = (pair_t){0, r};
    return c->nranks - 1;
}

void fan_setup(bench_ctx_t *c)
{
    size_t n = (size_t)(c->nranks > 1 ? c->nranks - 1 : 1) * (size_t)(window() + 1);
    c->state = malloc(n * sizeof(MPI_Request));
    if (!c->state) MPI_Abort(MPI_COMM_WORLD, 3);
}

void fan_teardown(bench_ctx_t *c)
{
    free(c->state);
    c->state = NULL;
}

void fan_in_event(bench_ctx_t *c)
{
    MPI_Request *req = c->state;
    int n = (int)c->size, k = 0;
    if (c->rank == 0) {
        for (int s = 1; s < c->nranks; s++)
            for (int w = 0; w < window(); w++)
                MPI_CHECK(MPI_Irecv(slot(c, s - 1), n, MPI_BYTE, s, TAG, c->comm, &req[k++]));
        MPI_CHECK(MPI_Waitall(k, req, MPI_STATUSES_IGNORE));
        for (int s = 1; s < c->nranks; s++) MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, s, ACK_TAG, c->comm));
    } else {
        for (int w = 0; w < window(); w++) MPI_CHECK(MPI_Isend(c->sbuf, n, MPI_BYTE, 0, TAG, c->comm, &req[k++]));
        MPI_CHECK(MPI_Waitall(k, req, MPI_STATUSES_IGNORE));
        MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 0, ACK_TAG, c->comm, MPI_STATUS_IGNORE));
    }
}

/* Each sender's window lands in its own slot (one pattern per sender); beyond
 * the memory cap senders share slots and only the last writer is known, so
 * only rank 0's verification of unshared slots counts. */
long fan_in_verify(const bench_ctx_t *c, long *verified)
{
    if (c->rank != 0 || c->rslots < c->nranks - 1) return 0;
    long errors = 0;
    for (int s = 1; s < c->nranks; s++) {
        errors += check_compare(slot(c, s - 1), (size_t)c->size, s, c->iter);
        *verified += c->size;
    }
    return errors;
}

void fan_out_event(bench_ctx_t *c)
{
    MPI_Request *req = c->state;
    int n = (int)c->size, k = 0;
    if (c->rank == 0) {
        for (int r = 1; r < c->nranks; r++)
            for (int w = 0; w < window(); w++)
                MPI_CHECK(MPI_Isend(c->sbuf, n, MPI_BYTE, r, TAG, c->comm, &req[k++]));
        MPI_CHECK(MPI_Waitall(k, req, MPI_STATUSES_IGNORE));
        for (int r = 1; r < c->nranks; r++)
            MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, r, ACK_TAG, c->comm, MPI_STATUS_IGNORE));
    } else {
        for (int w = 0; w < window(); w++)
            MPI_CHECK(MPI_Irecv(slot(c, w), n, MPI_BYTE, 0, TAG, c->comm, &req[k++]));
        MPI_CHECK(MPI_Waitall(k, req, MPI_STATUSES_IGNORE));
        MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 0, ACK_TAG, c->comm));
    }
}

long fan_out_verify(const bench_ctx_t *c, long *verified)
{
    if (c->rank == 0) return 0;
    long errors = 0;
    for (int w = 0; w < window(); w++) {
        errors += check_compare(slot(c, w), (size_t)c->size, 0, c->iter);
        *verified += c->size;
    }
    return errors;
}

/* ---- unirandom, birandom, corandom ---- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The k-th pair of this event: two distinct ranks, the same on every rank. */
static void random_pair(const bench_ctx_t *c, int k, int *a, int *b)
{
    uint64_t x = mix(((uint64_t)c->iter << 24) ^ (uint64_t)k);
    int n = c->nranks;
    *a = (int)(x % (uint64_t)n);
    *b = (*a + 1 + (int)(mix(x) % (uint64_t)(n - 1))) % n;
}

int random_slots(const bench_ctx_t *c) { return c->nranks; }
double random_msgs(const bench_ctx_t *c) { return c->nranks; }
double birandom_msgs(const bench_ctx_t *c) { return 2.0 * c->nranks; }

void unirandom_event(bench_ctx_t *c)
{
    int n = (int)c->size;
    for (int k = 0; k < c->nranks; k++) {
        int a, b;
        random_pair(c, k, &a, &b);
        if (c->rank == a) MPI_CHECK(MPI_Send(c->sbuf, n, MPI_BYTE, b, TAG, c->comm));
        else if (c->rank == b)
            MPI_CHECK(MPI_Recv(slot(c, k), n, MPI_BYTE, a, TAG, c->comm, MPI_STATUS_IGNORE));
    }
}

long unirandom_verify(const bench_ctx_t *c, long *verified)
{
    long errors = 0;
    for (int k = 0; k < c->nranks; k++) {
        int a, b;
        random_pair(c, k, &a, &b);
        if (c->rank != b) continue;
        errors += check_compare(slot(c, k), (size_t)c->size, a, c->iter);
        *verified += c->size;
    }
    return errors;
}

void birandom_event(bench_ctx_t *c)
{
    int n = (int)c->size;
    for (int k = 0; k < c->nranks; k++) {
        int a, b;
        random_pair(c, k, &a, &b);
        if (c->rank != a && c->rank != b) continue;
        int peer = c->rank == a ? b : a;
        MPI_Request req;
        MPI_CHECK(MPI_Irecv(slot(c, k), n, MPI_BYTE, peer, TAG, c->comm, &req));
        MPI_CHECK(MPI_Send(c->sbuf, n, MPI_BYTE, peer, TAG, c->comm));
        MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    }
}

long birandom_verify(const bench_ctx_t *c, long *verified)
{
    long errors = 0;
    for (int k = 0; k < c->nranks; k++) {
        int a, b;
        random_pair(c, k, &a, &b);
        if (c->rank != a && c->rank != b) continue;
        errors += check_compare(slot(c, k), (size_t)c->size, c->rank == a ? b : a, c->iter);
        *verified += c->size;
    }
    return errors;
}

/* This rank's predecessor and successor in the event's random ring (Fisher-Yates). */
static void random_ring(const bench_ctx_t *c, int *from, int *to)
{
    static int *ring;      /* kept between events: no allocation while timed */
    static int cap;
    int n = c->nranks, me = 0;
    if (n > cap) {
        free(ring);
        if (!(ring = malloc((size_t)n * sizeof *ring))) MPI_Abort(MPI_COMM_WORLD, 3);
        cap = n;
    }
    for (int i = 0; i < n; i++) ring[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(mix(((uint64_t)c->iter << 24) ^ (uint64_t)i) % (uint64_t)(i + 1)), t = ring[i];
        ring[i] = ring[j];
        ring[j] = t;
    }
    while (ring[me] != c->rank) me++;
    *from = ring[(me + n - 1) % n];
    *to = ring[(me + 1) % n];
}

void corandom_event(bench_ctx_t *c)
{
    int n = (int)c->size, from, to;
    random_ring(c, &from, &to);
    MPI_Request req;
    MPI_CHECK(MPI_Irecv(c->rbuf, n, MPI_BYTE, from, TAG, c->comm, &req));
    MPI_CHECK(MPI_Send(c->sbuf, n, MPI_BYTE, to, TAG, c->comm));
    MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
}

long corandom_verify(const bench_ctx_t *c, long *verified)
{
    int from, to;
    random_ring(c, &from, &to);
    *verified += c->size;
    return check_compare(c->rbuf, (size_t)c->size, from, c->iter);
}

/* ---- stencil2d, stencil3d ---- */

typedef struct stencil {
    int ndims, dims[3];
    int nb[6];             /* direction 2d: minus along d, 2d + 1: plus along d */
    MPI_Request req[12];
} stencil_t;

static int stencil_dims(const bench_ctx_t *c) { return strcmp(c->bench->name, "stencil3d") == 0 ? 3 : 2; }

int stencil_slots(const bench_ctx_t *c) { return 2 * stencil_dims(c); }
double stencil_msgs(const bench_ctx_t *c) { return 2.0 * stencil_dims(c) * c->nranks; }
double stencil_bytes(const bench_ctx_t *c) { return stencil_msgs(c) * (double)c->size; }

void stencil_setup(bench_ctx_t *c)
{
    stencil_t *s = calloc(1, sizeof *s);
    if (!s) MPI_Abort(MPI_COMM_WORLD, 3);
    s->ndims = stencil_dims(c);
    MPI_CHECK(MPI_Dims_create(c->nranks, s->ndims, s->dims));
    int coord[3], rest = c->rank;
    for (int d = s->ndims - 1; d >= 0; d--) {  /* row-major, as MPI_Cart_create numbers ranks */
        coord[d] = rest % s->dims[d];
        rest /= s->dims[d];
    }
    for (int d = 0; d < s->ndims; d++)
        for (int side = 0; side < 2; side++) {
            int at[3] = {coord[0], coord[1], coord[2]}, r = 0;
            at[d] = (at[d] + (side ? 1 : -1) + s->dims[d]) % s->dims[d];
            for (int e = 0; e < s->ndims; e++) r = r * s->dims[e] + at[e];
            s->nb[2 * d + side] = r;
        }
    c->state = s;
}

void stencil_teardown(bench_ctx_t *c)
{
    free(c->state);
    c->state = NULL;
}

/* What arrives in slot k came from the neighbour opposite direction k (tag k). */
void stencil_event(bench_ctx_t *c)
{
    stencil_t *s = c->state;
    int n = (int)c->size, dirs = 2 * s->ndims;
    for (int k = 0; k < dirs; k++)
        MPI_CHECK(MPI_Irecv(slot(c, k), n, MPI_BYTE, s->nb[k ^ 1], TAG + k, c->comm, &s->req[k]));
    for (int k = 0; k < dirs; k++)
        MPI_CHECK(MPI_Isend(c->sbuf, n, MPI_BYTE, s->nb[k], TAG + k, c->comm, &s->req[dirs + k]));
    MPI_CHECK(MPI_Waitall(2 * dirs, s->req, MPI_STATUSES_IGNORE));
}

long stencil_verify(const bench_ctx_t *c, long *verified)
{
    const stencil_t *s = c->state;
    long errors = 0;
    for (int k = 0; k < 2 * s->ndims; k++) {
        errors += check_compare(slot(c, k), (size_t)c->size, s->nb[k ^ 1], c->iter);
        *verified += c->size;
    }
    return errors;
}

void stencil_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    (void)p, (void)w;
    const stencil_t *s = c->state;
    json_obj(j, "stencil");
    json_arr(j, "dims");
    for (int d = 0; d < s->ndims; d++) json_int(j, NULL, s->dims[d]);
    json_close_arr(j);
    json_int(j, "neighbours", 2 * s->ndims);
    json_bool(j, "periodic", 1);
    json_close_obj(j);
}
