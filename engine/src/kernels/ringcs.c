/* The ring case study: each rank computes on a buffer of n doubles, then
 * passes it round the ring. One event is a block of --niter iterations (10 by
 * default) between barriers, because the decoupling that algorithms 4
 * and 5 buy under load imbalance only shows across consecutive iterations.
 *
 * Load imbalance: iteration i (1-based) on rank r computes ncompute_A times
 * per element when i + r is even, ncompute_B times otherwise.
 *
 * Three buffers of n doubles: the timing core's send buffer and two receive
 * slots. Their roles rotate within a block. */
#include "kernels/ringcs.h"
#include "json.h"
#include "mpicheck.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TAG = 7, MAX_NCOMPUTE = 1000000 };

/* ---- the study's options: --niter, --ncompute A[,B], --nblock ---- */

static long niter = 10;
static struct { long a, b; } ncompute_ab;  /* multiplications per element: iteration + rank even, odd */
static long nblock = 1024;

static int parse_ncompute(const opt_spec_t *s, const char *text, char *err, size_t errlen)
{
    (void)s;
    char a[32] = "";
    const char *comma = strchr(text, ',');
    snprintf(a, sizeof a, "%.*s", comma ? (int)(comma - text) : (int)strlen(text), text);
    if (opt_parse_long("ncompute", a, 0, MAX_NCOMPUTE, &ncompute_ab.a, err, errlen)) return -1;
    ncompute_ab.b = ncompute_ab.a;
    return comma ? opt_parse_long("ncompute", comma + 1, 0, MAX_NCOMPUTE, &ncompute_ab.b, err, errlen) : 0;
}

static void record_ncompute(const opt_spec_t *s, json_t *j)
{
    (void)s;
    json_int(j, "ncompute_a", ncompute_ab.a);
    json_int(j, "ncompute_b", ncompute_ab.b);
}

static const opt_spec_t specs[] = {
    {"niter", OPT_LONG, &niter, 1, 1000000, NULL, "N", "iterations per timed block (10)", "niter", 0, NULL, NULL},
    {"ncompute", OPT_CUSTOM, &ncompute_ab, 0, 0, NULL, "A[,B]",
     "multiplications per element on even/odd iteration+rank (0)", NULL, 0, parse_ncompute, record_ncompute},
    {"nblock", OPT_LONG, &nblock, 1, 1L << 30, NULL, "N", "elements computed between MPI_Testall calls, ringcs5 (1024)",
     "nblock", 0, NULL, NULL},
    {NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL},
};

const option_table_t ringcs_options = {"ring case study (ringcs1..ringcs5)", specs, NULL};

/* Keeps the computation observable: a compiler may not drop a loop whose sum is stored here. */
volatile double ringcs_sink;

typedef enum { ALG_SEND_RECV = 1, ALG_SENDRECV_REPLACE, ALG_SENDRECV, ALG_NONBLOCKING, ALG_TESTALL } alg_t;

int ringcs_slots(const bench_ctx_t *c) { (void)c; return 2; }
double ringcs_iterations(const bench_ctx_t *c) { (void)c; return (double)niter; }
/* The study's figure, 16 n / t: a send and a receive of n doubles per iteration. */
double ringcs_bytes(const bench_ctx_t *c) { return 2.0 * (double)(c->size / 8 * 8); }

static double *buffer(const bench_ctx_t *c, int which)
{
    return which == 0 ? (double *)c->sbuf : (double *)(c->rbuf + (size_t)(which - 1) * c->rslot);
}

static void compute_kernel(int ncompute, long n, double *x, double *sum)
{
    if (ncompute == 0) return;
    for (long i = 0; i < n; i++) {
        double t = 1.0;
        for (int k = 0; k < ncompute; k++) t *= x[i];
        x[i] = t;
        *sum += t;
    }
}

/* Iteration i on rank r computes ncompute_A times when i + r is even: neighbours alternate. */
static int schedule(int rank, int iteration)
{
    return (int)(((iteration + rank) & 1) == 0 ? ncompute_ab.a : ncompute_ab.b);
}

static int ncompute_for(const bench_ctx_t *c, int iteration)
{
    if (c->checking) return 0; /* the verification pass checks data movement alone */
    return schedule(c->rank, iteration);
}

/* The buffer roles of one block: send, recv, compute. */
typedef struct roles { int send, recv, comp; } roles_t;

static roles_t first_roles(alg_t alg)
{
    return alg <= ALG_SENDRECV_REPLACE ? (roles_t){0, 0, 0} : (roles_t){0, 1, 2};
}

static roles_t next_roles(alg_t alg, roles_t r)
{
    if (alg <= ALG_SENDRECV_REPLACE) return r;
    if (alg == ALG_SENDRECV) return (roles_t){r.recv, r.send, r.recv};
    return (roles_t){r.comp, r.send, r.recv}; /* send what was computed on, compute what arrived */
}

static void iteration(bench_ctx_t *c, alg_t alg, roles_t r, int it, double *sum)
{
    int n = (int)(c->size / 8);
    int up = (c->rank + 1) % c->nranks, down = (c->rank + c->nranks - 1) % c->nranks;
    int ncompute = ncompute_for(c, it);
    double *xs = buffer(c, r.send), *xr = buffer(c, r.recv), *xc = buffer(c, r.comp);
    MPI_Request req[2];
    switch (alg) {
    case ALG_SEND_RECV: /* not MPI-compliant: relies on the library buffering the send */
        compute_kernel(ncompute, n, xs, sum);
        MPI_CHECK(MPI_Send(xs, n, MPI_DOUBLE, up, TAG, c->comm));
        MPI_CHECK(MPI_Recv(xs, n, MPI_DOUBLE, down, TAG, c->comm, MPI_STATUS_IGNORE));
        break;
    case ALG_SENDRECV_REPLACE:
        compute_kernel(ncompute, n, xs, sum);
        MPI_CHECK(MPI_Sendrecv_replace(xs, n, MPI_DOUBLE, up, TAG, down, TAG, c->comm, MPI_STATUS_IGNORE));
        break;
    case ALG_SENDRECV:
        compute_kernel(ncompute, n, xs, sum);
        MPI_CHECK(MPI_Sendrecv(xs, n, MPI_DOUBLE, up, TAG, xr, n, MPI_DOUBLE, down, TAG, c->comm,
                               MPI_STATUS_IGNORE));
        break;
    case ALG_NONBLOCKING:
    case ALG_TESTALL:
        MPI_CHECK(MPI_Isend(xs, n, MPI_DOUBLE, up, TAG, c->comm, &req[0]));
        MPI_CHECK(MPI_Irecv(xr, n, MPI_DOUBLE, down, TAG, c->comm, &req[1]));
        if (alg == ALG_NONBLOCKING) {
            compute_kernel(ncompute, n, xc, sum);
        } else {
            int flag;
            for (long i = 0; i < n; i += nblock) {
                compute_kernel(ncompute, n - i < nblock ? n - i : nblock, xc + i, sum);
                MPI_CHECK(MPI_Testall(2, req, &flag, MPI_STATUSES_IGNORE));
            }
        }
        MPI_CHECK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
        break;
    }
}

static void block(bench_ctx_t *c, alg_t alg)
{
    double sum = 0.0;
    roles_t r = first_roles(alg);
    for (int it = 1; it <= (int)niter; it++) {
        iteration(c, alg, r, it, &sum);
        r = next_roles(alg, r);
    }
    ringcs_sink += sum;
}

void ringcs1_event(bench_ctx_t *c) { block(c, ALG_SEND_RECV); }
void ringcs2_event(bench_ctx_t *c) { block(c, ALG_SENDRECV_REPLACE); }
void ringcs3_event(bench_ctx_t *c) { block(c, ALG_SENDRECV); }
void ringcs4_event(bench_ctx_t *c) { block(c, ALG_NONBLOCKING); }
void ringcs5_event(bench_ctx_t *c) { block(c, ALG_TESTALL); }

/* What each buffer must hold after a block: replay the role rotation on every
 * rank with origin labels (a rank's send buffer starts with its own pattern,
 * the receive slots with zeros, label -1) and compare the bytes. */
static long verify(const bench_ctx_t *c, alg_t alg, long *verified)
{
    int np = c->nranks;
    int (*label)[3] = malloc(sizeof *label * (size_t)np), (*next)[3] = malloc(sizeof *next * (size_t)np);
    if (!label || !next) abort();
    for (int q = 0; q < np; q++) label[q][0] = q, label[q][1] = label[q][2] = -1;
    roles_t r = first_roles(alg);
    for (int it = 1; it <= (int)niter; it++) {
        memcpy(next, label, sizeof *label * (size_t)np);
        for (int q = 0; q < np; q++) next[q][r.recv] = label[(q + np - 1) % np][r.send];
        memcpy(label, next, sizeof *label * (size_t)np);
        r = next_roles(alg, r);
    }
    size_t bytes = (size_t)(c->size / 8 * 8);
    long wrong = 0;
    int nbuf = alg <= ALG_SENDRECV_REPLACE ? 1 : (alg == ALG_SENDRECV ? 2 : 3);
    for (int b = 0; b < nbuf; b++) {
        const char *x = (const char *)buffer(c, b);
        int origin = label[c->rank][b];
        if (origin >= 0) {
            wrong += check_compare(x, bytes, origin, c->iter);
        } else {
            for (size_t i = 0; i < bytes; i++) wrong += x[i] != 0;
        }
        *verified += (long)bytes;
    }
    free(label);
    free(next);
    return wrong;
}

long ringcs1_verify(const bench_ctx_t *c, long *verified) { return verify(c, ALG_SEND_RECV, verified); }
long ringcs2_verify(const bench_ctx_t *c, long *verified) { return verify(c, ALG_SENDRECV_REPLACE, verified); }
long ringcs3_verify(const bench_ctx_t *c, long *verified) { return verify(c, ALG_SENDRECV, verified); }
long ringcs4_verify(const bench_ctx_t *c, long *verified) { return verify(c, ALG_NONBLOCKING, verified); }
long ringcs5_verify(const bench_ctx_t *c, long *verified) { return verify(c, ALG_TESTALL, verified); }

enum { SCHEDULE_MAX_RANKS = 64 }; /* keeps a record short; the rule is the same for every rank */

static void describe(const bench_ctx_t *c, alg_t alg, json_t *j)
{
    json_obj(j, "ringcs");
    json_int(j, "algorithm", alg);
    json_int(j, "niter", niter);
    json_int(j, "ncompute_a", ncompute_ab.a);
    json_int(j, "ncompute_b", ncompute_ab.b);
    if (alg == ALG_TESTALL) json_int(j, "nblock", nblock);
    json_int(j, "words", c->size / 8);
    /* bw_MBps is the study's 16 n / t: computation time is inside t */
    json_bool(j, "bw_includes_compute", 1);
    json_arr(j, "ncompute_schedule"); /* [rank][iteration 1..niter], as the kernel computes */
    int ranks = c->nranks < SCHEDULE_MAX_RANKS ? c->nranks : SCHEDULE_MAX_RANKS;
    for (int r = 0; r < ranks; r++) {
        json_arr(j, NULL);
        for (int it = 1; it <= (int)niter; it++) json_int(j, NULL, schedule(r, it));
        json_close_arr(j);
    }
    json_close_arr(j);
    json_close_obj(j);
}

#define RINGCS_DESCRIBE(k, alg)                                                                      \
    void ringcs##k##_describe(const bench_ctx_t *c, const struct point *p, const struct world *w,   \
                              struct json *j)                                                       \
    {                                                                                               \
        (void)p, (void)w;                                                                           \
        describe(c, alg, j);                                                                        \
    }
RINGCS_DESCRIBE(1, ALG_SEND_RECV)
RINGCS_DESCRIBE(2, ALG_SENDRECV_REPLACE)
RINGCS_DESCRIBE(3, ALG_SENDRECV)
RINGCS_DESCRIBE(4, ALG_NONBLOCKING)
RINGCS_DESCRIBE(5, ALG_TESTALL)
