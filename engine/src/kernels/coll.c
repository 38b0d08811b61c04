/* Blocking collectives: one call per event. Sizes follow IMB: X is the block
 * one rank contributes (bcast, reduce, allreduce, scan: the whole message;
 * allgather, gather: each rank's block; scatter: each rank's share;
 * alltoall: the block for one peer; reduce_scatter: the whole input vector,
 * of which each rank gets about X / ranks). Elements are X / datatype size.
 * The v-variants move the same amounts as the plain ones while timed; their
 * --check pass uses uneven counts and gaps between blocks. */
#include "kernels/coll.h"
#include "kernels/overlap.h"
#include "json.h"
#include "mpicheck.h"
#include "point.h"
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind {
    K_BARRIER, K_BCAST, K_REDUCE, K_ALLREDUCE, K_ALLGATHER, K_ALLGATHERV, K_ALLTOALL, K_ALLTOALLV,
    K_GATHER, K_GATHERV, K_SCATTER, K_SCATTERV, K_REDUCE_SCATTER, K_REDUCE_SCATTER_BLOCK, K_SCAN, K_EXSCAN,
    K_ALLTOALLW
};

/* Counts and displacements in elements, [0] as timed, [1] for --check. */
typedef struct layout {
    coll_args_t args;
    int *cnt[2], *dsp[2];    /* rank r's block (gatherv, allgatherv, scatterv) */
    int *scnt[2], *sdsp[2];  /* alltoallv: what this rank sends to each peer */
    int *rcnt[2], *rdsp[2];  /* alltoallv: what it receives from each */
    int *rs;                 /* reduce_scatter: each rank's share */
    int *swd[2], *rwd[2];    /* alltoallw: alltoallv's displacements in bytes */
    MPI_Datatype *types;     /* alltoallw: the element type for every peer */
    /* persistent rows: a request per root (one unless --rotate-root), made for
     * these buffers and this layout; NULL until the first event */
    MPI_Request *preq;
    const char *psbuf, *prbuf;
    int podd;
} layout_t;

/* ---- the collectives' options: one table for coll and nbc ---- */

enum { COLL_BYTE, COLL_INT, COLL_FLOAT, COLL_DOUBLE };
enum { COLL_SUM, COLL_MAX, COLL_MIN };

static const char *const datatype_names[] = {"byte", "int", "float", "double", NULL};
static const char *const op_names[] = {"sum", "max", "min", NULL};

static struct {
    int datatype;  /* -1: byte, or float for reductions (as IMB and OSU) */
    int op;
    int in_place, rotate_root;
    long nbc_tests;
} opt = {-1, COLL_SUM, 0, 0, 0};

static const opt_spec_t specs[] = {
    {"datatype", OPT_CHOICE, &opt.datatype, 0, 0, datatype_names, "byte|int|float|double",
     "element type (byte; float for reductions)", "datatype", OPT_NULL_WHEN_UNSET, NULL, NULL},
    {"op", OPT_CHOICE, &opt.op, 0, 0, op_names, "sum|max|min", "reduction operation (sum)", "op", 0, NULL, NULL},
    {"in-place", OPT_FLAG, &opt.in_place, 0, 0, NULL, NULL, "use MPI_IN_PLACE where the collective allows it",
     "in_place", 0, NULL, NULL},
    {"rotate-root", OPT_FLAG, &opt.rotate_root, 0, 0, NULL, NULL,
     "root = iteration mod ranks (bcast, reduce, gather, scatter)", "rotate_root", 0, NULL, NULL},
    {"nbc-test", OPT_LONG, &opt.nbc_tests, 0, 1000000, NULL, "N",
     "MPI_Test calls during overlapped compute of nonblocking collectives (0)", "nbc_test", 0, NULL, NULL},
    {NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL},
};

const option_table_t coll_options = {"collectives (blocking and nonblocking)", specs, NULL};

/* What the options mean for row b. */
static coll_args_t args_for(const bench_t *b)
{
    coll_args_t a = {0};
    int reduction = (b->flags & BENCH_REDUCTION) != 0;
    a.type_id = opt.datatype >= 0 ? opt.datatype : reduction ? COLL_FLOAT : COLL_BYTE;
    switch (a.type_id) {
    /* MPI_BYTE takes no arithmetic: reductions of bytes use unsigned char */
    case COLL_BYTE: a.type = reduction ? MPI_UNSIGNED_CHAR : MPI_BYTE; a.type_size = 1; break;
    case COLL_INT: a.type = MPI_INT; a.type_size = (int)sizeof(int); break;
    case COLL_FLOAT: a.type = MPI_FLOAT; a.type_size = (int)sizeof(float); break;
    default: a.type = MPI_DOUBLE; a.type_size = (int)sizeof(double); break;
    }
    a.op_id = opt.op;
    a.op = opt.op == COLL_MAX ? MPI_MAX : opt.op == COLL_MIN ? MPI_MIN : MPI_SUM;
    a.in_place = opt.in_place;
    a.rotate_root = opt.rotate_root;
    a.nbc_tests = (int)opt.nbc_tests;
    return a;
}

long coll_nbc_tests(void) { return opt.nbc_tests; }

/* ---- shared by the rows ---- */

double coll_one(const bench_ctx_t *c) { (void)c; return 1.0; }
double coll_zero(const bench_ctx_t *c) { (void)c; return 0.0; }
double coll_size(const bench_ctx_t *c) { return (double)c->size; }
double coll_ranks_size(const bench_ctx_t *c) { return (double)c->nranks * (double)c->size; }
double coll_busbw_one(const bench_ctx_t *c) { (void)c; return 1.0; }
double coll_busbw_allreduce(const bench_ctx_t *c) { return 2.0 * (c->nranks - 1) / c->nranks; }
double coll_busbw_spread(const bench_ctx_t *c) { return (double)(c->nranks - 1) / c->nranks; }

static const layout_t *lay(const bench_ctx_t *c) { return c->state; }
coll_args_t *coll_args(const bench_ctx_t *c) { return &((layout_t *)c->state)->args; }
static const coll_args_t *args(const bench_ctx_t *c) { return &lay(c)->args; }

static long elems(const bench_ctx_t *c) { return c->size / args(c)->type_size; }
static int root(const bench_ctx_t *c) { return args(c)->rotate_root ? (int)(c->iter % c->nranks) : 0; }
static char *at(const bench_ctx_t *c, char *buf, long i) { return buf + i * args(c)->type_size; }
static int checking(const bench_ctx_t *c) { return c->checking ? 1 : 0; }

/* Uneven but deterministic: block sizes grow with the rank (some are 0 at
 * small sizes) and sum to at most ranks x elems. */
static int uneven(long k, int r, int n) { return (int)(2 * k * (r + 1) / (n + 1)); }
static int a2a_count(long k, int s, int d, int n, int odd) { return odd ? uneven(k, (s + d) % n, n) : (int)k; }
/* Where sender s keeps its block for d: symmetric in s and d, as MPI_IN_PLACE alltoallv requires. */
static int a2a_displ(long k, int s, int d, int n, int odd)
{
    if (!odd) return (int)(d * k);
    int x = d;  /* one element of gap per block */
    for (int q = 0; q < d; q++) x += a2a_count(k, s, q, n, odd);
    return x;
}

static void setup_for(bench_ctx_t *c)
{
    int n = c->nranks;
    layout_t *l = calloc(1, sizeof *l);
    int *mem = calloc((size_t)n * 17, sizeof *mem);
    MPI_Datatype *types = malloc((size_t)n * sizeof *types);
    if (!l || !mem || !types) MPI_Abort(MPI_COMM_WORLD, 3);
    l->args = args_for(c->bench);
    long k = c->size / l->args.type_size;
    for (int odd = 0; odd < 2; odd++) {
        int **p[6] = {&l->cnt[odd], &l->dsp[odd], &l->scnt[odd], &l->sdsp[odd], &l->rcnt[odd], &l->rdsp[odd]};
        for (int i = 0; i < 6; i++) *p[i] = mem + (size_t)n * (size_t)(odd * 6 + i);
        int next = 0, before = 0;
        for (int r = 0; r < n; r++) {
            l->cnt[odd][r] = odd ? uneven(k, r, n) : (int)k;
            l->dsp[odd][r] = odd ? next + r : (int)(r * k);
            next += l->cnt[odd][r];
            l->scnt[odd][r] = a2a_count(k, c->rank, r, n, odd);
            /* a2a_displ(k, c->rank, r, n, odd) as a running sum: calling it per block cost every
             * rank ranks^2 steps, every collective's setup (35 of 49 host s at 2048 simulated ranks) */
            l->sdsp[odd][r] = odd ? r + before : (int)(r * k);
            before += l->scnt[odd][r];
            l->rcnt[odd][r] = a2a_count(k, r, c->rank, n, odd);
            l->rdsp[odd][r] = l->sdsp[odd][r];
        }
    }
    l->rs = mem + (size_t)n * 12;
    for (int r = 0; r < n; r++) l->rs[r] = (int)(k / n + (r < k % n));
    for (int odd = 0; odd < 2; odd++) {
        l->swd[odd] = mem + (size_t)n * (size_t)(13 + 2 * odd);
        l->rwd[odd] = mem + (size_t)n * (size_t)(14 + 2 * odd);
        for (int r = 0; r < n; r++) {
            l->swd[odd][r] = l->sdsp[odd][r] * l->args.type_size;
            l->rwd[odd][r] = l->rdsp[odd][r] * l->args.type_size;
        }
    }
    l->types = types;
    for (int r = 0; r < n; r++) types[r] = l->args.type;
    c->state = l;
}

void coll_teardown(bench_ctx_t *c)
{
    layout_t *l = c->state;
    if (l) {
        if (l->preq)
            for (int r = 0; r < c->nranks; r++)
                if (l->preq[r] != MPI_REQUEST_NULL) MPI_CHECK(MPI_Request_free(&l->preq[r]));
        free(l->preq);
        free(l->cnt[0]);
        free(l->types);
    }
    free(l);
    c->state = NULL;
}

/* Elements each buffer needs, in the larger of the two layouts (before setup:
 * the plan asks too). */
static void buffers_for(const bench_ctx_t *c, enum kind K, size_t *send, size_t *recv)
{
    coll_args_t a = args_for(c->bench);
    long k = c->size / a.type_size, n = c->nranks, s = k, r = k;
    switch (K) {
    case K_BARRIER: s = r = 0; break;
    case K_ALLGATHER: case K_GATHER: r = n * k; break;
    case K_ALLGATHERV: case K_GATHERV: s = 2 * k; r = n * k + n; break;
    case K_SCATTER: s = n * k; break;
    case K_SCATTERV: s = n * k + n; r = 2 * k; break;
    case K_ALLTOALL: s = r = n * k; break;
    case K_ALLTOALLV: case K_ALLTOALLW: s = r = n * k + n; break;
    default: break;
    }
    *send = (size_t)s * (size_t)a.type_size;
    *recv = (size_t)r * (size_t)a.type_size;
}

/* ---- --check values: small integers, exact in every datatype and in sums ---- */

static long val(int src, long j, long iter)
{
    uint32_t x = (uint32_t)j * 2654435761u ^ ((uint32_t)src * 40503u + (uint32_t)iter * 2246822519u + 0x9e3779b9u);
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    return (long)(x & 0xff);
}

static void put(const bench_ctx_t *c, char *buf, long i, long v)
{
    switch (args(c)->type_id) {
    case COLL_BYTE: ((unsigned char *)buf)[i] = (unsigned char)v; break;
    case COLL_INT: ((int *)buf)[i] = (int)v; break;
    case COLL_FLOAT: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = (double)v; break;
    }
}

/* Exact: a float that is off in its last bit must not round back to the expected value. */
static double get(const bench_ctx_t *c, const char *buf, long i)
{
    switch (args(c)->type_id) {
    case COLL_BYTE: return ((const unsigned char *)buf)[i];
    case COLL_INT: return ((const int *)buf)[i];
    case COLL_FLOAT: return ((const float *)buf)[i];
    default: return ((const double *)buf)[i];
    }
}

/* The op over ranks lo..hi-1 of their element j, as the datatype holds it. */
static long reduced(const bench_ctx_t *c, int lo, int hi, long j)
{
    long acc = val(lo, j, c->iter);
    for (int s = lo + 1; s < hi; s++) {
        long v = val(s, j, c->iter);
        if (args(c)->op_id == COLL_SUM) acc += v;
        else if (args(c)->op_id == COLL_MAX) acc = v > acc ? v : acc;
        else acc = v < acc ? v : acc;
    }
    return args(c)->type_id == COLL_BYTE ? (acc & 0xff) : acc;
}

static void fill_values(const bench_ctx_t *c, char *buf, long n)
{
    for (long j = 0; j < n; j++) put(c, buf, j, val(c->rank, j, c->iter));
}

static void fill_for(bench_ctx_t *c, enum kind K)
{
    long k = elems(c);
    int me = c->rank, n = c->nranks, rt = root(c), ip = args(c)->in_place;
    const layout_t *l = lay(c);
    int odd = checking(c);
    switch (K) {
    case K_BARRIER: break;
    case K_BCAST: case K_SCATTER: case K_SCATTERV:
        if (me == rt) fill_values(c, c->sbuf, K == K_BCAST ? k : K == K_SCATTER ? n * k : n * k + n);
        break;
    case K_REDUCE: fill_values(c, ip && me == rt ? c->rbuf : c->sbuf, k); break;
    case K_ALLREDUCE: case K_SCAN: case K_EXSCAN: case K_REDUCE_SCATTER: case K_REDUCE_SCATTER_BLOCK:
        fill_values(c, ip ? c->rbuf : c->sbuf, k);
        break;
    case K_ALLGATHER: fill_values(c, ip ? at(c, c->rbuf, me * k) : c->sbuf, k); break;
    case K_GATHER: fill_values(c, ip && me == rt ? at(c, c->rbuf, me * k) : c->sbuf, k); break;
    case K_ALLGATHERV:
        fill_values(c, ip ? at(c, c->rbuf, l->dsp[odd][me]) : c->sbuf, l->cnt[odd][me]);
        break;
    case K_GATHERV:
        fill_values(c, ip && me == rt ? at(c, c->rbuf, l->dsp[odd][me]) : c->sbuf, l->cnt[odd][me]);
        break;
    case K_ALLTOALL: fill_values(c, ip ? c->rbuf : c->sbuf, n * k); break;
    case K_ALLTOALLV: case K_ALLTOALLW:
        fill_values(c, ip ? c->rbuf : c->sbuf, l->sdsp[odd][n - 1] + l->scnt[odd][n - 1]);
        break;
    }
}

/* Compares n received elements with sender src's values from index first on. */
static long compare_block(const bench_ctx_t *c, const char *buf, int src, long first, long n, long *verified)
{
    long wrong = 0;
    for (long j = 0; j < n; j++) wrong += get(c, buf, j) != (double)val(src, first + j, c->iter);
    *verified += n * args(c)->type_size;
    return wrong;
}

static long compare_reduced(const bench_ctx_t *c, int lo, int hi, long first, long n, long *verified)
{
    long wrong = 0;
    for (long j = 0; j < n; j++) wrong += get(c, c->rbuf, j) != (double)reduced(c, lo, hi, first + j);
    *verified += n * args(c)->type_size;
    return wrong;
}

static long verify_for(const bench_ctx_t *c, enum kind K, long *v)
{
    long k = elems(c), wrong = 0;
    int me = c->rank, n = c->nranks, rt = root(c), ip = args(c)->in_place;
    const layout_t *l = lay(c);
    int odd = checking(c);
    switch (K) {
    case K_BARRIER: break;
    case K_BCAST: if (me != rt) wrong = compare_block(c, c->rbuf, rt, 0, k, v); break;
    case K_REDUCE: if (me == rt) wrong = compare_reduced(c, 0, n, 0, k, v); break;
    case K_ALLREDUCE: wrong = compare_reduced(c, 0, n, 0, k, v); break;
    case K_SCAN: wrong = compare_reduced(c, 0, me + 1, 0, k, v); break;
    case K_EXSCAN: if (me > 0) wrong = compare_reduced(c, 0, me, 0, k, v); break;
    case K_REDUCE_SCATTER: {
        long first = 0;
        for (int r = 0; r < me; r++) first += l->rs[r];
        wrong = compare_reduced(c, 0, n, first, l->rs[me], v);
        break;
    }
    case K_REDUCE_SCATTER_BLOCK: wrong = compare_reduced(c, 0, n, me * (k / n), k / n, v); break;
    case K_GATHER: if (me != rt) break; /* fall through */
    case K_ALLGATHER:
        for (int s = 0; s < n; s++) wrong += compare_block(c, at(c, c->rbuf, s * k), s, 0, k, v);
        break;
    case K_GATHERV: if (me != rt) break; /* fall through */
    case K_ALLGATHERV:
        for (int s = 0; s < n; s++)
            wrong += compare_block(c, at(c, c->rbuf, l->dsp[odd][s]), s, 0, l->cnt[odd][s], v);
        break;
    case K_SCATTER: if (!(ip && me == rt)) wrong = compare_block(c, c->rbuf, rt, me * k, k, v); break;
    case K_SCATTERV:
        if (!(ip && me == rt)) wrong = compare_block(c, c->rbuf, rt, l->dsp[odd][me], l->cnt[odd][me], v);
        break;
    case K_ALLTOALL:
        for (int s = 0; s < n; s++) wrong += compare_block(c, at(c, c->rbuf, s * k), s, me * k, k, v);
        break;
    case K_ALLTOALLV: case K_ALLTOALLW:
        for (int s = 0; s < n; s++)
            wrong += compare_block(c, at(c, c->rbuf, l->rdsp[odd][s]), s, a2a_displ(k, s, me, n, odd),
                                   l->rcnt[odd][s], v);
        break;
    }
    return wrong;
}

/* ---- the calls: blocking, nonblocking (req) or persistent (req made, not started) ---- */

#define T (args(c)->type)
#define OP (args(c)->op)
#define SRC (args(c)->in_place ? MPI_IN_PLACE : (const void *)c->sbuf)
#define ROOT_SRC(rt) (args(c)->in_place && c->rank == (rt) ? MPI_IN_PLACE : (const void *)c->sbuf)
#define NOINFO MPI_INFO_NULL
#ifdef COLL_PERSISTENT_PREFIX
#define PERSIST(call) MPI_CHECK(call)
#else
/* never reached: the registry marks the persistent rows unavailable */
#define PERSIST(call) MPI_Abort(MPI_COMM_WORLD, 3)
#endif
#define CALL(blocking, nonblocking, persistent)                     \
    do {                                                            \
        if (mode == COLL_BLOCKING) MPI_CHECK(blocking);             \
        else if (mode == COLL_NONBLOCKING) MPI_CHECK(nonblocking);  \
        else PERSIST(persistent);                                   \
    } while (0)

void barrier_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    CALL(MPI_Barrier(c->comm), MPI_Ibarrier(c->comm, req), PCOLL(Barrier_init)(c->comm, NOINFO, req));
}

void bcast_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    int rt = root(c), k = (int)elems(c);
    void *buf = c->rank == rt ? c->sbuf : c->rbuf;
    CALL(MPI_Bcast(buf, k, T, rt, c->comm), MPI_Ibcast(buf, k, T, rt, c->comm, req),
         PCOLL(Bcast_init)(buf, k, T, rt, c->comm, NOINFO, req));
}

void reduce_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    int rt = root(c), k = (int)elems(c);
    CALL(MPI_Reduce(ROOT_SRC(rt), c->rbuf, k, T, OP, rt, c->comm),
         MPI_Ireduce(ROOT_SRC(rt), c->rbuf, k, T, OP, rt, c->comm, req),
         PCOLL(Reduce_init)(ROOT_SRC(rt), c->rbuf, k, T, OP, rt, c->comm, NOINFO, req));
}

void allreduce_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    int k = (int)elems(c);
    CALL(MPI_Allreduce(SRC, c->rbuf, k, T, OP, c->comm), MPI_Iallreduce(SRC, c->rbuf, k, T, OP, c->comm, req),
         PCOLL(Allreduce_init)(SRC, c->rbuf, k, T, OP, c->comm, NOINFO, req));
}

void allgather_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    int k = (int)elems(c);
    CALL(MPI_Allgather(SRC, k, T, c->rbuf, k, T, c->comm), MPI_Iallgather(SRC, k, T, c->rbuf, k, T, c->comm, req),
         PCOLL(Allgather_init)(SRC, k, T, c->rbuf, k, T, c->comm, NOINFO, req));
}

void allgatherv_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    const layout_t *l = lay(c);
    int odd = checking(c), k = l->cnt[odd][c->rank];
    const int *cnt = l->cnt[odd], *dsp = l->dsp[odd];
    CALL(MPI_Allgatherv(SRC, k, T, c->rbuf, cnt, dsp, T, c->comm),
         MPI_Iallgatherv(SRC, k, T, c->rbuf, cnt, dsp, T, c->comm, req),
         PCOLL(Allgatherv_init)(SRC, k, T, c->rbuf, cnt, dsp, T, c->comm, NOINFO, req));
}

void alltoall_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    int k = (int)elems(c);
    CALL(MPI_Alltoall(SRC, k, T, c->rbuf, k, T, c->comm), MPI_Ialltoall(SRC, k, T, c->rbuf, k, T, c->comm, req),
         PCOLL(Alltoall_init)(SRC, k, T, c->rbuf, k, T, c->comm, NOINFO, req));
}

void alltoallv_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    const layout_t *l = lay(c);
    int odd = checking(c);
    const int *sc = l->scnt[odd], *sd = l->sdsp[odd], *rc = l->rcnt[odd], *rd = l->rdsp[odd];
    CALL(MPI_Alltoallv(SRC, sc, sd, T, c->rbuf, rc, rd, T, c->comm),
         MPI_Ialltoallv(SRC, sc, sd, T, c->rbuf, rc, rd, T, c->comm, req),
         PCOLL(Alltoallv_init)(SRC, sc, sd, T, c->rbuf, rc, rd, T, c->comm, NOINFO, req));
}

/* alltoallv's layout with displacements in bytes and a type per peer */
void alltoallw_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    const layout_t *l = lay(c);
    int odd = checking(c);
    const int *sc = l->scnt[odd], *sd = l->swd[odd], *rc = l->rcnt[odd], *rd = l->rwd[odd];
    const MPI_Datatype *ty = l->types;
    CALL(MPI_Alltoallw(SRC, sc, sd, ty, c->rbuf, rc, rd, ty, c->comm),
         MPI_Ialltoallw(SRC, sc, sd, ty, c->rbuf, rc, rd, ty, c->comm, req),
         PCOLL(Alltoallw_init)(SRC, sc, sd, ty, c->rbuf, rc, rd, ty, c->comm, NOINFO, req));
}

void gather_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    int rt = root(c), k = (int)elems(c);
    CALL(MPI_Gather(ROOT_SRC(rt), k, T, c->rbuf, k, T, rt, c->comm),
         MPI_Igather(ROOT_SRC(rt), k, T, c->rbuf, k, T, rt, c->comm, req),
         PCOLL(Gather_init)(ROOT_SRC(rt), k, T, c->rbuf, k, T, rt, c->comm, NOINFO, req));
}

void gatherv_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    const layout_t *l = lay(c);
    int rt = root(c), odd = checking(c), k = l->cnt[odd][c->rank];
    const int *cnt = l->cnt[odd], *dsp = l->dsp[odd];
    CALL(MPI_Gatherv(ROOT_SRC(rt), k, T, c->rbuf, cnt, dsp, T, rt, c->comm),
         MPI_Igatherv(ROOT_SRC(rt), k, T, c->rbuf, cnt, dsp, T, rt, c->comm, req),
         PCOLL(Gatherv_init)(ROOT_SRC(rt), k, T, c->rbuf, cnt, dsp, T, rt, c->comm, NOINFO, req));
}

void scatter_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    int rt = root(c), k = (int)elems(c);
    void *dst = args(c)->in_place && c->rank == rt ? MPI_IN_PLACE : (void *)c->rbuf;
    CALL(MPI_Scatter(c->sbuf, k, T, dst, k, T, rt, c->comm),
         MPI_Iscatter(c->sbuf, k, T, dst, k, T, rt, c->comm, req),
         PCOLL(Scatter_init)(c->sbuf, k, T, dst, k, T, rt, c->comm, NOINFO, req));
}

void scatterv_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    const layout_t *l = lay(c);
    int rt = root(c), odd = checking(c), k = l->cnt[odd][c->rank];
    const int *cnt = l->cnt[odd], *dsp = l->dsp[odd];
    void *dst = args(c)->in_place && c->rank == rt ? MPI_IN_PLACE : (void *)c->rbuf;
    CALL(MPI_Scatterv(c->sbuf, cnt, dsp, T, dst, k, T, rt, c->comm),
         MPI_Iscatterv(c->sbuf, cnt, dsp, T, dst, k, T, rt, c->comm, req),
         PCOLL(Scatterv_init)(c->sbuf, cnt, dsp, T, dst, k, T, rt, c->comm, NOINFO, req));
}

void reduce_scatter_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    const int *rs = lay(c)->rs;
    CALL(MPI_Reduce_scatter(SRC, c->rbuf, rs, T, OP, c->comm),
         MPI_Ireduce_scatter(SRC, c->rbuf, rs, T, OP, c->comm, req),
         PCOLL(Reduce_scatter_init)(SRC, c->rbuf, rs, T, OP, c->comm, NOINFO, req));
}

void reduce_scatter_block_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    int k = (int)(elems(c) / c->nranks);
    CALL(MPI_Reduce_scatter_block(SRC, c->rbuf, k, T, OP, c->comm),
         MPI_Ireduce_scatter_block(SRC, c->rbuf, k, T, OP, c->comm, req),
         PCOLL(Reduce_scatter_block_init)(SRC, c->rbuf, k, T, OP, c->comm, NOINFO, req));
}

void scan_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    int k = (int)elems(c);
    CALL(MPI_Scan(SRC, c->rbuf, k, T, OP, c->comm), MPI_Iscan(SRC, c->rbuf, k, T, OP, c->comm, req),
         PCOLL(Scan_init)(SRC, c->rbuf, k, T, OP, c->comm, NOINFO, req));
}

void exscan_call(bench_ctx_t *c, coll_mode_t mode, MPI_Request *req)
{
    int k = (int)elems(c);
    CALL(MPI_Exscan(SRC, c->rbuf, k, T, OP, c->comm), MPI_Iexscan(SRC, c->rbuf, k, T, OP, c->comm, req),
         PCOLL(Exscan_init)(SRC, c->rbuf, k, T, OP, c->comm, NOINFO, req));
}

/* ---- persistent rows: requests made once per root and buffers, then started ---- */

/* The request this event starts: made (collectively: every rank changes buffers,
 * layout and root at the same event) when there is none for these buffers yet. */
static MPI_Request *persistent_request(bench_ctx_t *c, void (*call)(bench_ctx_t *, coll_mode_t, MPI_Request *))
{
    layout_t *l = c->state;
    int n = c->nranks, odd = checking(c);
    if (!l->preq) {
        l->preq = malloc((size_t)n * sizeof *l->preq);
        if (!l->preq) MPI_Abort(MPI_COMM_WORLD, 3);
        for (int r = 0; r < n; r++) l->preq[r] = MPI_REQUEST_NULL;
    }
    if (l->psbuf != c->sbuf || l->prbuf != c->rbuf || l->podd != odd) {
        for (int r = 0; r < n; r++)
            if (l->preq[r] != MPI_REQUEST_NULL) MPI_CHECK(MPI_Request_free(&l->preq[r]));
        l->psbuf = c->sbuf, l->prbuf = c->rbuf, l->podd = odd;
    }
    MPI_Request *req = &l->preq[root(c)];
    if (*req == MPI_REQUEST_NULL) call(c, COLL_PERSISTENT, req);
    return req;
}

/* The nbc rows' three phases (IMB-MPI4's *_persist): 0 starts and waits (the
 * pure time, *_persist_pure and OSU's figure), 1 computes alone, 2 starts,
 * computes with --nbc-test MPI_Test calls, and waits. */
static void persistent_event(bench_ctx_t *c, void (*call)(bench_ctx_t *, coll_mode_t, MPI_Request *))
{
    const coll_args_t *a = args(c);
    if (c->phase == 1) {
        overlap_compute(a->compute_iters, 0, NULL);
        return;
    }
    MPI_Request *req = persistent_request(c, call);
    MPI_CHECK(MPI_Start(req));
    if (c->phase == 2) overlap_compute(a->compute_iters, a->nbc_tests, req);
    MPI_CHECK(MPI_Wait(req, MPI_STATUS_IGNORE));
}

/* ---- the per-collective entry points the rows name ---- */

#define COLL_DEFINE(name, K)                                                                             \
    void name##_buffers(const bench_ctx_t *c, size_t *send, size_t *recv) { buffers_for(c, K, send, recv); } \
    void name##_setup(bench_ctx_t *c) { setup_for(c); }                                                  \
    void name##_fill(bench_ctx_t *c) { fill_for(c, K); }                                                 \
    long name##_verify(const bench_ctx_t *c, long *verified) { return verify_for(c, K, verified); }      \
    void name##_event(bench_ctx_t *c) { name##_call(c, COLL_BLOCKING, NULL); }                          \
    void name##_persistent_event(bench_ctx_t *c) { persistent_event(c, name##_call); }

COLL_DEFINE(barrier, K_BARRIER)
COLL_DEFINE(bcast, K_BCAST)
COLL_DEFINE(reduce, K_REDUCE)
COLL_DEFINE(allreduce, K_ALLREDUCE)
COLL_DEFINE(allgather, K_ALLGATHER)
COLL_DEFINE(allgatherv, K_ALLGATHERV)
COLL_DEFINE(alltoall, K_ALLTOALL)
COLL_DEFINE(alltoallv, K_ALLTOALLV)
COLL_DEFINE(alltoallw, K_ALLTOALLW)
COLL_DEFINE(gather, K_GATHER)
COLL_DEFINE(gatherv, K_GATHERV)
COLL_DEFINE(scatter, K_SCATTER)
COLL_DEFINE(scatterv, K_SCATTERV)
COLL_DEFINE(reduce_scatter, K_REDUCE_SCATTER)
COLL_DEFINE(reduce_scatter_block, K_REDUCE_SCATTER_BLOCK)
COLL_DEFINE(scan, K_SCAN)
COLL_DEFINE(exscan, K_EXSCAN)

/* ---- what the plan and the records need ---- */

/* Known before MPI_Init: a size that is not a whole number of elements, or a
 * buffer whose element count an MPI int cannot hold. */
const char *coll_plan_skip(const bench_t *b, long size, int nranks, char *why, size_t len)
{
    coll_args_t a = args_for(b);
    if (size % a.type_size) {
        snprintf(why, len, "%ld bytes is not a whole number of %d-byte %s elements (--datatype)", size,
                 a.type_size, datatype_names[a.type_id]);
        return why;
    }
    bench_ctx_t probe = {.bench = b, .nranks = nranks, .size = size};
    size_t send = 0, recv = 0;
    b->buffer_bytes(&probe, &send, &recv);
    size_t biggest = (send > recv ? send : recv) / (size_t)a.type_size;
    if (biggest > INT_MAX) {
        snprintf(why, len, "a buffer of %zu elements is beyond what an MPI int count reaches", biggest);
        return why;
    }
    if (b->buffer_bytes == alltoallw_buffers && (send > INT_MAX || recv > INT_MAX)) {
        snprintf(why, len, "alltoallw's displacements are int bytes: a buffer of %zu bytes is beyond them",
                 send > recv ? send : recv);
        return why;
    }
    return NULL;
}

/* What the point was run with, and IMB's and OSU's figures: over ranks, each
 * rank's mean time per call (the same average for both). */
void coll_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    (void)w;
    const coll_args_t *a = args(c);
    json_str(j, "datatype", datatype_names[a->type_id]);
    json_int(j, "count", c->size / a->type_size);
    if (c->bench->flags & BENCH_REDUCTION) json_str(j, "op", op_names[a->op_id]);
    json_bool(j, "in_place", a->in_place);
    json_bool(j, "rotate_root", a->rotate_root);
    if (!p->have_rank_means) return;
    json_num(j, "t_min_us", p->rank_mean_min_us);
    json_num(j, "t_max_us", p->rank_mean_max_us);
    json_num(j, "t_avg_us", p->rank_mean_avg_us);
    json_num(j, "osu_avg_us", p->rank_mean_avg_us);
}

/* The persistent rows: the blocking fields, and which call made the requests
 * (MPI_Bcast_init for bcast_persistent) from which interface. */
void coll_persistent_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    coll_describe(c, p, w, j);
#ifdef COLL_PERSISTENT_PREFIX
    char call[64];
    const char *name = c->bench->name;
    const char *suffix = strstr(name, "_persistent");
    int len = suffix ? (int)(suffix - name) : (int)strlen(name);
    snprintf(call, sizeof call, "%s%c%.*s_init", COLL_PERSISTENT_PREFIX, name[0] - 'a' + 'A', len - 1, name + 1);
    json_str(j, "persistent_call", call);
    json_str(j, "persistent_from", COLL_PERSISTENT_FROM);
#endif
    overlap_record(p, args(c)->nbc_tests, args(c)->compute_iters, j);
}
