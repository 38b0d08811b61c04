/* Neighbourhood collectives. The topology is made in setup on the point's
 * communicator, without reordering:
 *   cart       MPI_Cart_create with --cart-dims (0: MPI_Dims_create chooses),
 *              periodic unless --cart-open; 2 x ndims neighbours, in and out,
 *              in MPI_Cart_shift's order (MPI_PROC_NULL at an open edge)
 *   circulant  a distributed graph: rank r sends to r+1, r-1, r+2, r-2 ...
 *              (--graph-degree of them, modulo the ranks)
 *   random     a distributed graph: --graph-degree destinations per rank from
 *              a fixed hash (repeats and self-loops allowed, as MPI allows)
 * Sizes follow the blocking collectives: X is the block for one neighbour.
 * Elements are bytes. For --check, what one rank sends another depends only on
 * the pair (and the iteration), so repeated edges (a periodic dimension of 1 or
 * 2 ranks, a multigraph) carry identical blocks and no pairing of them can be
 * told apart; the v and w forms then use uneven counts and gaps. */
#include "kernels/neighbor.h"
#include "kernels/coll.h"
#include "kernels/overlap.h"
#include "json.h"
#include "mpicheck.h"
#include "point.h"
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DIMS = 8 };
enum { TOPO_CART, TOPO_CIRCULANT, TOPO_RANDOM };
enum kind { N_ALLGATHER, N_ALLGATHERV, N_ALLTOALL, N_ALLTOALLV, N_ALLTOALLW };

static const char *const topology_names[] = {"cart", "circulant", "random", NULL};

static struct {
    int topology;
    int ndims, dims[MAX_DIMS];
    const char *dims_text;
    int open;
    long degree;
} opt = {-1, 2, {0, 0}, "0x0", 0, 4};

static int parse_dims(const opt_spec_t *s, const char *text, char *err, size_t errlen)
{
    (void)s;
    int n = 0, dims[MAX_DIMS];
    const char *p = text;
    while (n < MAX_DIMS) {
        char *end;
        errno = 0;
        long d = strtol(p, &end, 10);
        if (errno || end == p || d < 0 || d > (1 << 24)) break;
        dims[n++] = (int)d;
        if (*end == 0) {
            opt.ndims = n;
            memcpy(opt.dims, dims, sizeof dims);
            opt.dims_text = text;
            return 0;
        }
        if (*end != 'x' && *end != 'X') break;
        p = end + 1;
    }
    snprintf(err, errlen, "--cart-dims expects 1 to %d whole numbers joined by x, 0 for 'MPI_Dims_create "
             "chooses' (e.g. 4x2, 0x0x0), got '%s'", MAX_DIMS, text);
    return -1;
}

static void record_dims(const opt_spec_t *s, json_t *j)
{
    (void)s;
    json_str(j, "cart_dims", opt.dims_text);
}

static const opt_spec_t specs[] = {
    {"topology", OPT_CHOICE, &opt.topology, 0, 0, topology_names, "cart|circulant|random",
     "the neighbourhood collectives' topology (cart)", "topology", 0, NULL, NULL},
    {"cart-dims", OPT_CUSTOM, &opt, 0, 0, NULL, "DxD..", "cart: dimensions, 0 = chosen by MPI_Dims_create (0x0)",
     NULL, 0, parse_dims, record_dims},
    {"cart-open", OPT_FLAG, &opt.open, 0, 0, NULL, NULL, "cart: not periodic (edge ranks have fewer neighbours)",
     "cart_open", 0, NULL, NULL},
    {"graph-degree", OPT_LONG, &opt.degree, 1, 4096, NULL, "D", "circulant, random: destinations per rank (4)",
     "graph_degree", 0, NULL, NULL},
    {NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL},
};

const option_table_t neighbor_options = {"neighbourhood collectives (neighbor)", specs, NULL};

static int topology(void) { return opt.topology < 0 ? TOPO_CART : opt.topology; }
/* Neighbours a rank sends to: the same for every rank. */
static int out_degree(void) { return topology() == TOPO_CART ? 2 * opt.ndims : (int)opt.degree; }

/* ---- the graphs: every rank works out the whole graph alike ---- */

static int graph_dst(int n, int r, int k)
{
    if (topology() == TOPO_CIRCULANT) {
        long shift = (k / 2 + 1) * (k % 2 ? -1L : 1L);
        return (int)(((r + shift) % n + n) % n);
    }
    uint32_t x = (uint32_t)r * 2654435761u ^ ((uint32_t)k * 40503u + 0x9e3779b9u);
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    return (int)(x % (uint32_t)n);
}

/* The sources of rank r (src NULL: only count them), in order of sender and edge. */
static int graph_sources(int n, int r, int *src)
{
    int m = 0;
    for (int s = 0; s < n; s++)
        for (int k = 0; k < opt.degree; k++)
            if (graph_dst(n, s, k) == r) {
                if (src) src[m] = s;
                m++;
            }
    return m;
}

/* Every rank's in-degree on n ranks, worked out once per n (the plan asks for
 * every rank of every size). */
static int in_degree(int n, int r)
{
    static int *in, in_n;
    if (topology() == TOPO_CART) return 2 * opt.ndims;
    if (in_n != n) {
        free(in);
        in = calloc((size_t)n, sizeof *in);
        in_n = in ? n : 0;
        if (!in) return graph_sources(n, r, NULL);
        for (int s = 0; s < n; s++)
            for (int k = 0; k < opt.degree; k++) in[graph_dst(n, s, k)]++;
    }
    return in[r];
}

/* ---- the state: the topology, the neighbours and both layouts ---- */

typedef struct nbr {
    MPI_Comm topo;
    int dims[MAX_DIMS];
    int indeg, outdeg;
    int *src, *dst;                          /* MPI_PROC_NULL at an open edge */
    int *scnt[2], *sdsp[2], *rcnt[2], *rdsp[2];  /* bytes; [0] as timed, [1] for --check */
    int *gcnt[2], *gdsp[2];                  /* allgatherv: the sources' shares */
    MPI_Aint *swd[2], *rwd[2];               /* the w form's displacements */
    MPI_Datatype *types;
    long compute_iters;
} nbr_t;

static nbr_t *st(const bench_ctx_t *c) { return c->state; }

/* Bytes rank s sends rank d per call: the block, or under --check an uneven
 * share of it that depends on the pair only. */
static int edge_count(long k, int s, int d, int odd)
{
    if (d == MPI_PROC_NULL || s == MPI_PROC_NULL) return odd ? 0 : (int)k;
    return odd ? (int)((1 + (s + 2 * d) % 3) * k / 2) : (int)k;
}
/* allgatherv: rank s sends every neighbour the same uneven share. */
static int gather_count(long k, int s, int odd)
{
    if (s == MPI_PROC_NULL) return odd ? 0 : (int)k;
    return odd ? (int)((1 + s % 3) * k / 2) : (int)k;
}
/* The --check stream of what s sends d. */
static int edge_id(int n, int s, int d) { return s * n + d; }

static void make_topology(bench_ctx_t *c, nbr_t *t)
{
    int n = c->nranks;
    if (topology() == TOPO_CART) {
        int periods[MAX_DIMS];
        memcpy(t->dims, opt.dims, sizeof t->dims);
        MPI_CHECK(MPI_Dims_create(n, opt.ndims, t->dims));
        for (int d = 0; d < opt.ndims; d++) periods[d] = !opt.open;
        MPI_CHECK(MPI_Cart_create(c->comm, opt.ndims, t->dims, periods, 0, &t->topo));
        t->indeg = t->outdeg = 2 * opt.ndims;
        t->src = malloc((size_t)t->indeg * sizeof *t->src);
        t->dst = malloc((size_t)t->outdeg * sizeof *t->dst);
        if (!t->src || !t->dst) MPI_Abort(MPI_COMM_WORLD, 3);
        for (int d = 0; d < opt.ndims; d++) {
            int lo, hi;
            MPI_CHECK(MPI_Cart_shift(t->topo, d, 1, &lo, &hi));
            t->src[2 * d] = t->dst[2 * d] = lo;
            t->src[2 * d + 1] = t->dst[2 * d + 1] = hi;
        }
        return;
    }
    t->outdeg = (int)opt.degree;
    t->indeg = graph_sources(n, c->rank, NULL);
    t->src = malloc((size_t)(t->indeg ? t->indeg : 1) * sizeof *t->src);
    t->dst = malloc((size_t)t->outdeg * sizeof *t->dst);
    if (!t->src || !t->dst) MPI_Abort(MPI_COMM_WORLD, 3);
    graph_sources(n, c->rank, t->src);
    for (int k = 0; k < t->outdeg; k++) t->dst[k] = graph_dst(n, c->rank, k);
    /* equal weights rather than MPI_UNWEIGHTED, whose Open MPI value gcc takes for an empty array */
    int most = t->indeg > t->outdeg ? t->indeg : t->outdeg, *ones = malloc((size_t)(most ? most : 1) * sizeof *ones);
    if (!ones) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int i = 0; i < most; i++) ones[i] = 1;
    MPI_CHECK(MPI_Dist_graph_create_adjacent(c->comm, t->indeg, t->src, ones, t->outdeg, t->dst, ones,
                                             MPI_INFO_NULL, 0, &t->topo));
    free(ones);
}

/* Counts and displacements: blocks of size bytes side by side as timed; uneven
 * counts with a byte of gap after each block for --check. */
static void layouts(const bench_ctx_t *c, nbr_t *t)
{
    long k = c->size;
    int most = t->indeg > t->outdeg ? t->indeg : t->outdeg;
    int *mem = calloc((size_t)(most ? most : 1) * 12, sizeof *mem);
    MPI_Aint *wmem = calloc((size_t)(most ? most : 1) * 4, sizeof *wmem);
    t->types = malloc((size_t)(most ? most : 1) * sizeof *t->types);
    if (!mem || !wmem || !t->types) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int i = 0; i < most; i++) t->types[i] = MPI_BYTE;
    for (int odd = 0; odd < 2; odd++) {
        int *m = mem + (size_t)most * (size_t)(6 * odd);
        MPI_Aint *w = wmem + (size_t)most * (size_t)(2 * odd);
        t->scnt[odd] = m, t->sdsp[odd] = m + most, t->rcnt[odd] = m + 2 * most, t->rdsp[odd] = m + 3 * most;
        t->gcnt[odd] = m + 4 * most, t->gdsp[odd] = m + 5 * most;
        t->swd[odd] = w, t->rwd[odd] = w + most;
        int next = 0;
        for (int i = 0; i < t->outdeg; i++) {
            t->scnt[odd][i] = edge_count(k, c->rank, t->dst[i], odd);
            t->sdsp[odd][i] = odd ? next : (int)(i * k);
            next += t->scnt[odd][i] + 1;
            t->swd[odd][i] = t->sdsp[odd][i];
        }
        next = 0;
        for (int i = 0; i < t->indeg; i++) {
            t->rcnt[odd][i] = edge_count(k, t->src[i], c->rank, odd);
            t->rdsp[odd][i] = odd ? next : (int)(i * k);
            next += t->rcnt[odd][i] + 1;
            t->rwd[odd][i] = t->rdsp[odd][i];
        }
        next = 0;
        for (int i = 0; i < t->indeg; i++) {
            t->gcnt[odd][i] = gather_count(k, t->src[i], odd);
            t->gdsp[odd][i] = odd ? next : (int)(i * k);
            next += t->gcnt[odd][i] + 1;
        }
    }
}

void neighbor_setup(bench_ctx_t *c)
{
    nbr_t *t = calloc(1, sizeof *t);
    if (!t) MPI_Abort(MPI_COMM_WORLD, 3);
    make_topology(c, t);
    layouts(c, t);
    c->state = t;
}

void neighbor_teardown(bench_ctx_t *c)
{
    nbr_t *t = c->state;
    if (!t) return;
    MPI_CHECK(MPI_Comm_free(&t->topo));
    free(t->src);
    free(t->dst);
    free(t->scnt[0]);
    free(t->swd[0]);
    free(t->types);
    free(t);
    c->state = NULL;
}

double neighbor_bytes(const bench_ctx_t *c) { return (double)out_degree() * (double)c->size; }

/* Before MPI_Init: Cartesian dimensions that cannot cover these ranks, or
 * buffers beyond an int count. */
const char *neighbor_plan_skip(const bench_t *b, long size, int nranks, char *why, size_t len)
{
    if (topology() == TOPO_CART) {
        long fixed = 1;
        int free_dims = 0;
        for (int d = 0; d < opt.ndims; d++)
            if (opt.dims[d]) fixed *= opt.dims[d];
            else free_dims++;
        if ((free_dims && nranks % fixed) || (!free_dims && fixed != nranks)) {
            snprintf(why, len, "--cart-dims %s does not fit %d ranks", opt.dims_text, nranks);
            return why;
        }
    }
    bench_ctx_t probe = {.bench = b, .nranks = nranks, .size = size};
    size_t send = 0, recv = 0, most = 0;
    for (int r = 0; r < nranks; r++) {  /* a random graph's in-degrees differ */
        probe.rank = r;
        b->buffer_bytes(&probe, &send, &recv);
        if (send > most) most = send;
        if (recv > most) most = recv;
        if (topology() != TOPO_RANDOM) break;
    }
    if (most > INT_MAX) {
        snprintf(why, len, "a buffer of %zu bytes is beyond what an MPI int count or displacement reaches", most);
        return why;
    }
    return NULL;
}

/* ---- buffers, --check input and verification ---- */

static void buffers_for(const bench_ctx_t *c, enum kind K, size_t *send, size_t *recv)
{
    size_t k = (size_t)c->size, in = (size_t)in_degree(c->nranks, c->rank), out = (size_t)out_degree();
    switch (K) {
    case N_ALLGATHER: *send = k; *recv = in * k; break;
    case N_ALLGATHERV: *send = 2 * k; *recv = in * (2 * k + 1); break;
    case N_ALLTOALL: *send = out * k; *recv = in * k; break;
    default: *send = out * (2 * k + 1); *recv = in * (2 * k + 1); break;
    }
}

/* Whether this point's event uses the uneven layout: the v and w forms under --check. */
static int uneven(const bench_ctx_t *c, enum kind K) { return c->checking && K != N_ALLGATHER && K != N_ALLTOALL; }

static void fill_for(bench_ctx_t *c, enum kind K)
{
    const nbr_t *t = st(c);
    int odd = uneven(c, K), me = c->rank, n = c->nranks;
    if (K == N_ALLGATHER || K == N_ALLGATHERV) {
        check_fill(c->sbuf, (size_t)gather_count(c->size, me, odd), me, c->iter);
        return;
    }
    for (int i = 0; i < t->outdeg; i++)
        if (t->dst[i] != MPI_PROC_NULL)
            check_fill(c->sbuf + t->sdsp[odd][i], (size_t)t->scnt[odd][i], edge_id(n, me, t->dst[i]), c->iter);
}

static long verify_for(const bench_ctx_t *c, enum kind K, long *verified)
{
    const nbr_t *t = st(c);
    int odd = uneven(c, K), me = c->rank, n = c->nranks;
    long wrong = 0;
    for (int i = 0; i < t->indeg; i++) {
        int s = t->src[i];
        if (s == MPI_PROC_NULL) continue;  /* an open edge: nothing arrives */
        size_t cnt = (size_t)t->rcnt[odd][i];
        const char *at = c->rbuf + t->rdsp[odd][i];
        int stream = edge_id(n, s, me);
        if (K == N_ALLGATHER || K == N_ALLGATHERV) cnt = (size_t)t->gcnt[odd][i], at = c->rbuf + t->gdsp[odd][i], stream = s;
        wrong += check_compare(at, cnt, stream, c->iter);
        *verified += (long)cnt;
    }
    return wrong;
}

/* ---- the calls ---- */

static void call(bench_ctx_t *c, enum kind K, MPI_Request *req)
{
    nbr_t *t = st(c);
    int odd = uneven(c, K), k = (int)c->size;
    const int *sc = t->scnt[odd], *sd = t->sdsp[odd], *rc = t->rcnt[odd], *rd = t->rdsp[odd];
    MPI_Comm g = t->topo;
    char *s = c->sbuf, *r = c->rbuf;
    switch (K) {
    case N_ALLGATHER:
        if (req) MPI_CHECK(MPI_Ineighbor_allgather(s, k, MPI_BYTE, r, k, MPI_BYTE, g, req));
        else MPI_CHECK(MPI_Neighbor_allgather(s, k, MPI_BYTE, r, k, MPI_BYTE, g));
        break;
    case N_ALLGATHERV: {
        /* every neighbour gets this rank's share; the receive side holds the sources' shares */
        int mine = gather_count(c->size, c->rank, odd);
        const int *cnt = t->gcnt[odd], *dsp = t->gdsp[odd];
        if (req) MPI_CHECK(MPI_Ineighbor_allgatherv(s, mine, MPI_BYTE, r, cnt, dsp, MPI_BYTE, g, req));
        else MPI_CHECK(MPI_Neighbor_allgatherv(s, mine, MPI_BYTE, r, cnt, dsp, MPI_BYTE, g));
        break;
    }
    case N_ALLTOALL:
        if (req) MPI_CHECK(MPI_Ineighbor_alltoall(s, k, MPI_BYTE, r, k, MPI_BYTE, g, req));
        else MPI_CHECK(MPI_Neighbor_alltoall(s, k, MPI_BYTE, r, k, MPI_BYTE, g));
        break;
    case N_ALLTOALLV:
        if (req) MPI_CHECK(MPI_Ineighbor_alltoallv(s, sc, sd, MPI_BYTE, r, rc, rd, MPI_BYTE, g, req));
        else MPI_CHECK(MPI_Neighbor_alltoallv(s, sc, sd, MPI_BYTE, r, rc, rd, MPI_BYTE, g));
        break;
    case N_ALLTOALLW: {
        const MPI_Aint *sw = t->swd[odd], *rw = t->rwd[odd];
        const MPI_Datatype *ty = t->types;
        if (req) MPI_CHECK(MPI_Ineighbor_alltoallw(s, sc, sw, ty, r, rc, rw, ty, g, req));
        else MPI_CHECK(MPI_Neighbor_alltoallw(s, sc, sw, ty, r, rc, rw, ty, g));
        break;
    }
    }
}

/* Phase 0 posts and waits, 1 computes alone, 2 posts, computes with
 * --nbc-test MPI_Test calls, and waits (as the nbc rows). */
static void run(bench_ctx_t *c, enum kind K)
{
    MPI_Request req;
    long iters = st(c)->compute_iters;
    if (c->phase == 1) {
        overlap_compute(iters, 0, NULL);
        return;
    }
    call(c, K, &req);
    if (c->phase == 2) overlap_compute(iters, (int)coll_nbc_tests(), &req);
    MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
}

void neighbor_calibrate(bench_ctx_t *c, double pure_event_s) { st(c)->compute_iters = overlap_compute_iters(pure_event_s); }

#define NEIGHBOR_DEFINE(name, K)                                                                         \
    void name##_buffers(const bench_ctx_t *c, size_t *send, size_t *recv) { buffers_for(c, K, send, recv); } \
    void name##_fill(bench_ctx_t *c) { fill_for(c, K); }                                                 \
    long name##_verify(const bench_ctx_t *c, long *verified) { return verify_for(c, K, verified); }      \
    void name##_event(bench_ctx_t *c) { call(c, K, NULL); }                                              \
    void i##name##_event(bench_ctx_t *c) { run(c, K); }

NEIGHBOR_DEFINE(neighbor_allgather, N_ALLGATHER)
NEIGHBOR_DEFINE(neighbor_allgatherv, N_ALLGATHERV)
NEIGHBOR_DEFINE(neighbor_alltoall, N_ALLTOALL)
NEIGHBOR_DEFINE(neighbor_alltoallv, N_ALLTOALLV)
NEIGHBOR_DEFINE(neighbor_alltoallw, N_ALLTOALLW)

/* The topology as made (rank 0's neighbours), the ranks' mean times as the
 * collectives report them, and for the nonblocking rows the overlap. */
void neighbor_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    (void)w;
    const nbr_t *t = st(c);
    json_str(j, "topology", topology_names[topology()]);
    if (topology() == TOPO_CART) {
        json_arr(j, "dims");
        for (int d = 0; d < opt.ndims; d++) json_int(j, NULL, t->dims[d]);
        json_close_arr(j);
        json_bool(j, "periodic", !opt.open);
    } else {
        json_int(j, "graph_degree", opt.degree);
    }
    json_arr(j, "sources");
    for (int i = 0; i < t->indeg; i++)
        if (t->src[i] == MPI_PROC_NULL) json_null(j, NULL);
        else json_int(j, NULL, t->src[i]);
    json_close_arr(j);
    json_arr(j, "destinations");
    for (int i = 0; i < t->outdeg; i++)
        if (t->dst[i] == MPI_PROC_NULL) json_null(j, NULL);
        else json_int(j, NULL, t->dst[i]);
    json_close_arr(j);
    if (p->have_rank_means) {
        json_num(j, "t_min_us", p->rank_mean_min_us);
        json_num(j, "t_max_us", p->rank_mean_max_us);
        json_num(j, "t_avg_us", p->rank_mean_avg_us);
        json_num(j, "osu_avg_us", p->rank_mean_avg_us);
    }
    overlap_record(p, (int)coll_nbc_tests(), t->compute_iters, j);
}
