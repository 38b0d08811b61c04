/* The pair map: time per message between every pair of ranks, in two modes.
 * one_pair: each pair ping-pongs alone while the others wait (HPCC's
 * ping-pong pairs); rings: every rank i sends to i+k and receives from i-k at
 * once, for each shift k (mpiGraph), so links are shared. Each pair and each
 * shift is a timed phase of the point; phase 0, the headline figure, runs all
 * shifts back to back. */
#include "kernels/pairs.h"
#include "world.h"
#include "json.h"
#include "mpicheck.h"
#include "point.h"
#include <math.h>
#include <stdlib.h>

enum { TAG = 11 };

static int npairs(int n) { return n * (n - 1) / 2; }

/* Phase 1 + i is the i-th pair (a < b) in lexicographic order. */
static void pair_of(int n, int index, int *a, int *b)
{
    for (*a = 0; index >= n - 1 - *a; (*a)++) index -= n - 1 - *a;
    *b = *a + 1 + index;
}

/* The shift of a ring phase, 0 for a pair phase (and for phase 0). */
static int shift_of(const bench_ctx_t *c)
{
    int first = 1 + npairs(c->nranks);
    return c->phase >= first ? c->phase - first + 1 : 0;
}

static int is_pair_phase(const bench_ctx_t *c) { return c->phase >= 1 && shift_of(c) == 0; }

int pairs_phase_count(int nranks) { return 1 + npairs(nranks) + nranks - 1; }

int pairs_slots(const bench_ctx_t *c) { return c->nranks > 1 ? c->nranks - 1 : 1; }

int pairs_active(const bench_ctx_t *c)
{
    if (!is_pair_phase(c)) return 1;
    int a, b;
    pair_of(c->nranks, c->phase - 1, &a, &b);
    return c->rank == a || c->rank == b;
}

/* Phase 0 sends one message per shift; a ping-pong is two messages. */
double pairs_ops(const bench_ctx_t *c)
{
    if (c->phase == 0) return c->nranks - 1;
    return is_pair_phase(c) ? 2.0 : 1.0;
}

double pairs_size(const bench_ctx_t *c) { return (double)c->size; }

static char *slot(const bench_ctx_t *c, int k) { return c->rbuf + (size_t)((k - 1) % c->rslots) * c->rslot; }

static void shift(bench_ctx_t *c, int k)
{
    int n = c->nranks, to = (c->rank + k) % n, from = (c->rank - k + n) % n;
    MPI_CHECK(MPI_Sendrecv(c->sbuf, (int)c->size, MPI_BYTE, to, TAG, slot(c, k), (int)c->size, MPI_BYTE, from,
                           TAG, c->comm, MPI_STATUS_IGNORE));
}

void pairs_event(bench_ctx_t *c)
{
    int n = (int)c->size;
    if (c->phase == 0) {
        for (int k = 1; k < c->nranks; k++) shift(c, k);
    } else if (shift_of(c)) {
        shift(c, shift_of(c));
    } else {
        int a, b;
        pair_of(c->nranks, c->phase - 1, &a, &b);
        if (c->rank == a) {
            MPI_CHECK(MPI_Send(c->sbuf, n, MPI_BYTE, b, TAG, c->comm));
            MPI_CHECK(MPI_Recv(c->rbuf, n, MPI_BYTE, b, TAG, c->comm, MPI_STATUS_IGNORE));
        } else if (c->rank == b) {
            MPI_CHECK(MPI_Recv(c->rbuf, n, MPI_BYTE, a, TAG, c->comm, MPI_STATUS_IGNORE));
            MPI_CHECK(MPI_Send(c->sbuf, n, MPI_BYTE, a, TAG, c->comm));
        }
    }
}

/* --check runs phase 0: every shift's slot holds its sender's pattern (beyond
 * the memory cap slots are shared, so only the last writer of each is known). */
long pairs_verify(const bench_ctx_t *c, long *verified)
{
    int n = c->nranks, first = n - c->rslots > 1 ? n - c->rslots : 1;
    long errors = 0;
    for (int k = first; k < n; k++) {
        errors += check_compare(slot(c, k), (size_t)c->size, (c->rank - k + n) % n, c->iter);
        *verified += c->size;
    }
    return errors;
}

static void emit_matrix(json_t *j, const char *key, const double *us, int n, double bytes)
{
    json_arr(j, key);
    for (int a = 0; a < n; a++) {
        json_arr(j, NULL);
        for (int b = 0; b < n; b++) {
            double t = us[a * n + b];
            if (bytes < 0) json_num(j, NULL, t);  /* NaN (the diagonal) is written as null */
            else json_num(j, NULL, bytes > 0 && t > 0 ? bytes / t : NAN);
        }
        json_close_arr(j);
    }
    json_close_arr(j);
}

static void emit_mode(json_t *j, const char *mode, const double *us, int n, long size)
{
    json_obj(j, mode);
    emit_matrix(j, "matrix_us", us, n, -1);
    emit_matrix(j, "matrix_MBps", us, n, (double)size);
    json_close_obj(j);
}

/* matrix[a][b]: time per message from a to b. A ping-pong pair's figure
 * (half its round trip, the slower of the two ranks) goes both ways; in a ring
 * each rank timed its own send to i+k and receive from i-k. */
void pairs_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    (void)w;
    int n = c->nranks;
    if (p->nphases != pairs_phase_count(c->nranks)) return;
    double *one = malloc((size_t)n * (size_t)n * sizeof *one), *ring = malloc((size_t)n * (size_t)n * sizeof *ring);
    if (!one || !ring) { free(one); free(ring); return; }
    for (int i = 0; i < n * n; i++) one[i] = ring[i] = NAN;
    for (int i = 0; i < npairs(n); i++) {
        int a, b;
        pair_of(n, i, &a, &b);
        one[a * n + b] = one[b * n + a] = p->phase_us[1 + i];
    }
    for (int k = 1; k < n; k++) {
        const double *per_rank = p->phase_rank_us + (size_t)(npairs(n) + k) * (size_t)n;
        for (int r = 0; r < n; r++) ring[r * n + (r + k) % n] = per_rank[r];
    }
    json_obj(j, "pair_map");
    json_str(j, "unit", "time per message from row rank to column rank");
    emit_mode(j, "one_pair", one, n, c->size);
    emit_mode(j, "rings", ring, n, c->size);
    json_close_obj(j);
    free(one);
    free(ring);
}
