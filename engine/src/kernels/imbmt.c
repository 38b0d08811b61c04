/* IMB-MT (IMB 2021, src_cpp/MT): the IMB-MPI1 kernels run at once by T
 * threads per rank (--threads), each thread on its own duplicate of the
 * point's communicator, so the threads never share a matching queue. One
 * event: the caller releases its T - 1 pool threads (kernels/threads.c), all
 * T run one operation of the kernel on their own communicator, buffers and
 * --check patterns, and the event ends when the last is done. The timing core
 * does the rest, as for every row.
 *
 * Pairing as IMB-MT's default stride (N/2): the pair rows run on pairs
 * (i, i + N/2), with an odd rank out idle; sendrecv_mt and exchange_mt send
 * N/2 ranks on round the ring (at 2 and 4 ranks: to the partner of the pair).
 * The collective rows call coll.c's kernels (layouts, --datatype, --op,
 * --in-place, --check values) on a per-thread context. Thread k's patterns
 * use the iteration number iter x T + k, so a message that reaches another
 * thread's buffer is an error. */
#include "kernels/imbmt.h"
#include "kernels/coll.h"
#include "kernels/congestion.h"
#include "kernels/p2p.h"
#include "kernels/threads.h"
#include "world.h"
#include "json.h"
#include "mpicheck.h"
#include <stdlib.h>
#include <string.h>

enum { TAG = 51, ACK_TAG = 52, MAX_WINDOW = 4096, ALIGN = 64 };

/* A kernel as one thread runs it: its buffers, state, --check input and result. */
typedef struct twin {
    void (*buffers)(const bench_ctx_t *c, size_t *send, size_t *recv);
    void (*setup)(bench_ctx_t *c);
    void (*teardown)(bench_ctx_t *c);
    void (*fill)(bench_ctx_t *c);                        /* NULL: check_fill of size bytes */
    void (*event)(bench_ctx_t *c);
    long (*verify)(const bench_ctx_t *c, long *verified);
    int window;                                          /* receive slots are a --window */
} twin_t;

typedef struct imbmt {
    const twin_t *twin;
    int n;
    MPI_Comm *comms;
    bench_ctx_t *tc;        /* thread k's context */
    size_t send_per, recv_per;
    mt_pool_t *pool;        /* ranks that take part only */
} imbmt_t;

static int threads(void) { return (int)threads_per_rank(); }
static size_t round_up(size_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

/* ---- figures ---- */

static int npairs(const bench_ctx_t *c) { return c->nranks / 2; }
double imbmt_t_size(const bench_ctx_t *c) { return (double)threads() * (double)c->size; }
double imbmt_2t_size(const bench_ctx_t *c) { return 2.0 * imbmt_t_size(c); }
double imbmt_4t_size(const bench_ctx_t *c) { return 4.0 * imbmt_t_size(c); }
double imbmt_pairs_t_size(const bench_ctx_t *c) { return npairs(c) * imbmt_t_size(c); }
double imbmt_t_coll_size(const bench_ctx_t *c) { return threads() * coll_size(c); }
double imbmt_t_ranks_size(const bench_ctx_t *c) { return threads() * coll_ranks_size(c); }
double imbmt_two_windows(const bench_ctx_t *c) { return 2.0 * p2p_window_ops(c); }
double imbmt_pingpong_msgs(const bench_ctx_t *c) { return 2.0 * npairs(c) * threads(); }
double imbmt_ring_msgs(const bench_ctx_t *c) { return (double)c->nranks * threads(); }
double imbmt_exchange_msgs(const bench_ctx_t *c) { return 2.0 * c->nranks * threads(); }
double imbmt_uniband_msgs(const bench_ctx_t *c) { return (double)npairs(c) * threads() * (double)p2p_window; }
double imbmt_biband_msgs(const bench_ctx_t *c) { return 2.0 * imbmt_uniband_msgs(c); }

/* ---- the point-to-point kernels one thread runs (IMB-MT's stride N/2) ---- */

static int partner(const bench_ctx_t *c)
{
    int p = npairs(c);
    return c->rank < p ? c->rank + p : c->rank < 2 * p ? c->rank - p : -1;
}
static int ahead(const bench_ctx_t *c) { return (c->rank + npairs(c)) % c->nranks; }
static int behind(const bench_ctx_t *c) { return (c->rank + c->nranks - npairs(c)) % c->nranks; }
/* The ring rows' partners: each rank with the one N/2 on, every pair once. */
int imbmt_ring_pairs(const bench_ctx_t *c, pair_t *out)
{
    int n = 0;
    for (int r = 0; r < c->nranks; r++) {
        int a = r, b = (r + npairs(c)) % c->nranks, seen = 0;
        if (a > b) a = b, b = r;
        for (int i = 0; i < n; i++) seen |= out[i].a == a && out[i].b == b;
        if (!seen && a != b) out[n++] = (pair_t){a, b};
    }
    return n;
}

static char *rslot(const bench_ctx_t *c, int i) { return c->rbuf + (size_t)(i % c->rslots) * c->rslot; }

static void pingping_once(bench_ctx_t *c)
{
    int peer = partner(c), n = (int)c->size;
    if (peer < 0) return;
    MPI_Request req;
    MPI_CHECK(MPI_Isend(c->sbuf, n, MPI_BYTE, peer, TAG, c->comm, &req));
    MPI_CHECK(MPI_Recv(c->rbuf, n, MPI_BYTE, peer, TAG, c->comm, MPI_STATUS_IGNORE));
    MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
}

static long from_partner_verify(const bench_ctx_t *c, long *verified)
{
    int peer = partner(c);
    if (peer < 0) return 0;
    *verified += c->size;
    return check_compare(c->rbuf, (size_t)c->size, peer, c->iter);
}

static void sendrecv_once(bench_ctx_t *c)
{
    int n = (int)c->size;
    MPI_CHECK(MPI_Sendrecv(c->sbuf, n, MPI_BYTE, ahead(c), TAG, c->rbuf, n, MPI_BYTE, behind(c), TAG, c->comm,
                           MPI_STATUS_IGNORE));
}

static long from_behind_verify(const bench_ctx_t *c, long *verified)
{
    *verified += c->size;
    return check_compare(c->rbuf, (size_t)c->size, behind(c), c->iter);
}

/* to and from both ring neighbours; a tag per direction, so that at 2 and 4
 * ranks (ahead = behind) the two messages still land in their own slots */
static void exchange_once(bench_ctx_t *c)
{
    int n = (int)c->size;
    MPI_Request req[4];
    MPI_CHECK(MPI_Irecv(rslot(c, 0), n, MPI_BYTE, behind(c), TAG, c->comm, &req[0]));
    MPI_CHECK(MPI_Irecv(rslot(c, 1), n, MPI_BYTE, ahead(c), TAG + 1, c->comm, &req[1]));
    MPI_CHECK(MPI_Isend(c->sbuf, n, MPI_BYTE, ahead(c), TAG, c->comm, &req[2]));
    MPI_CHECK(MPI_Isend(c->sbuf, n, MPI_BYTE, behind(c), TAG + 1, c->comm, &req[3]));
    MPI_CHECK(MPI_Waitall(4, req, MPI_STATUSES_IGNORE));
}

static long exchange_verify_one(const bench_ctx_t *c, long *verified)
{
    *verified += 2 * c->size;
    return check_compare(rslot(c, 0), (size_t)c->size, behind(c), c->iter) +
           check_compare(rslot(c, 1), (size_t)c->size, ahead(c), c->iter);
}

/* BiBandMT: both members of a pair post a window of receives and of sends,
 * wait for all, and the lower one waits for an acknowledgement (IMB-MT's) */
static void biband_once(bench_ctx_t *c)
{
    int peer = partner(c), n = (int)c->size, w = (int)p2p_window;
    if (peer < 0) return;
    MPI_Request req[2 * MAX_WINDOW];
    for (int i = 0; i < w; i++) MPI_CHECK(MPI_Irecv(rslot(c, i), n, MPI_BYTE, peer, TAG, c->comm, &req[i]));
    for (int i = 0; i < w; i++) MPI_CHECK(MPI_Isend(c->sbuf, n, MPI_BYTE, peer, TAG, c->comm, &req[w + i]));
    MPI_CHECK(MPI_Waitall(2 * w, req, MPI_STATUSES_IGNORE));
    if (c->rank < peer) MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, peer, ACK_TAG, c->comm, MPI_STATUS_IGNORE));
    else MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, peer, ACK_TAG, c->comm));
}

static long window_from_partner_verify(const bench_ctx_t *c, long *verified)
{
    int peer = partner(c);
    if (peer < 0) return 0;
    long errors = 0;
    for (int i = 0; i < (int)p2p_window; i++) {
        errors += check_compare(rslot(c, i), (size_t)c->size, peer, c->iter);
        *verified += c->size;
    }
    return errors;
}

static void one_message(const bench_ctx_t *c, size_t *send, size_t *recv)
{
    *send = *recv = (size_t)c->size;
}

static void two_messages(const bench_ctx_t *c, size_t *send, size_t *recv)
{
    *send = (size_t)c->size;
    *recv = 2 * (size_t)c->size;
}

/* a window of slots, kept apart up to 64 MiB per thread (as p2p's bw) */
static int window_slots(long size)
{
    long cap = size > 0 ? (64L << 20) / size : p2p_window;
    long n = p2p_window < cap ? p2p_window : (cap > 0 ? cap : 1);
    return (int)n;
}

static void window_messages(const bench_ctx_t *c, size_t *send, size_t *recv)
{
    *recv = (size_t)window_slots(c->size) * (size_t)c->size;
    *send = p2p_window_slots(c) > 1 ? *recv : (size_t)c->size;  /* --buffers multiple: a send slot each */
}

static const twin_t pingpong_twin = {one_message, NULL, NULL, NULL, multi_lat_event, multi_lat_verify, 0};
static const twin_t pingping_twin = {one_message, NULL, NULL, NULL, pingping_once, from_partner_verify, 0};
static const twin_t sendrecv_twin = {one_message, NULL, NULL, NULL, sendrecv_once, from_behind_verify, 0};
static const twin_t exchange_twin = {two_messages, NULL, NULL, NULL, exchange_once, exchange_verify_one, 0};
static const twin_t uniband_twin = {window_messages, NULL, NULL, NULL, msgrate_event, msgrate_verify, 1};
static const twin_t biband_twin = {window_messages, NULL, NULL, NULL, biband_once, window_from_partner_verify, 1};

#define COLL_TWIN(nm) \
    static const twin_t nm##_twin = {nm##_buffers, nm##_setup, coll_teardown, nm##_fill, nm##_event, nm##_verify, 0}
COLL_TWIN(barrier);
COLL_TWIN(bcast);
COLL_TWIN(reduce);
COLL_TWIN(allreduce);
COLL_TWIN(gather);
COLL_TWIN(scatter);
COLL_TWIN(allgather);
COLL_TWIN(alltoall);

/* ---- the generic row ---- */

static void per_thread(const twin_t *tw, const bench_ctx_t *c, size_t *send, size_t *recv)
{
    size_t s = 0, r = 0;
    tw->buffers(c, &s, &r);
    *send = round_up(s);
    *recv = round_up(r);
}

static void buffers_of(const twin_t *tw, const bench_ctx_t *c, size_t *send, size_t *recv)
{
    per_thread(tw, c, send, recv);
    *send *= (size_t)threads();
    *recv *= (size_t)threads();
}

static int takes_part(const bench_ctx_t *c) { return !c->bench->is_active || c->bench->is_active(c); }

/* Thread k's view of this event: its communicator, buffers and patterns. */
static void sync_thread(imbmt_t *m, const bench_ctx_t *c, int k)
{
    bench_ctx_t *t = &m->tc[k];
    t->sbuf = c->sbuf + (size_t)k * m->send_per;
    t->rbuf = c->rbuf + (size_t)k * m->recv_per;
    t->iter = c->iter * m->n + k;
    t->checking = c->checking;
    t->phase = c->phase;
}

static void job(bench_ctx_t *c, int k)
{
    imbmt_t *m = c->state;
    m->twin->event(&m->tc[k]);
}

static void setup_with(const twin_t *tw, bench_ctx_t *c)
{
    imbmt_t *m = calloc(1, sizeof *m);
    if (!m) MPI_Abort(MPI_COMM_WORLD, 3);
    m->twin = tw;
    m->n = threads();
    m->comms = calloc((size_t)m->n, sizeof *m->comms);
    m->tc = calloc((size_t)m->n, sizeof *m->tc);
    if (!m->comms || !m->tc) MPI_Abort(MPI_COMM_WORLD, 3);
    per_thread(tw, c, &m->send_per, &m->recv_per);
    for (int k = 0; k < m->n; k++) {
        MPI_CHECK(MPI_Comm_dup(c->comm, &m->comms[k]));
        m->tc[k] = *c;
        m->tc[k].comm = m->comms[k];
        m->tc[k].state = NULL;
        m->tc[k].rslot = (size_t)c->size;
        m->tc[k].rslots = tw->window ? window_slots(c->size) : 2;
        if (tw->setup) tw->setup(&m->tc[k]);
    }
    c->state = m;
    if (takes_part(c)) m->pool = mt_pool_start(c, m->n, job);
}

#define IMBMT_DEFINE(nm)                                                                                          \
    void nm##_mt_buffers(const bench_ctx_t *c, size_t *send, size_t *recv) { buffers_of(&nm##_twin, c, send, recv); } \
    void nm##_mt_setup(bench_ctx_t *c) { setup_with(&nm##_twin, c); }

IMBMT_DEFINE(pingpong)
IMBMT_DEFINE(pingping)
IMBMT_DEFINE(sendrecv)
IMBMT_DEFINE(exchange)
IMBMT_DEFINE(uniband)
IMBMT_DEFINE(biband)
IMBMT_DEFINE(barrier)
IMBMT_DEFINE(bcast)
IMBMT_DEFINE(reduce)
IMBMT_DEFINE(allreduce)
IMBMT_DEFINE(gather)
IMBMT_DEFINE(scatter)
IMBMT_DEFINE(allgather)
IMBMT_DEFINE(alltoall)

void imbmt_teardown(bench_ctx_t *c)
{
    imbmt_t *m = c->state;
    mt_pool_stop(m->pool);
    for (int k = 0; k < m->n; k++) {
        if (m->twin->teardown) m->twin->teardown(&m->tc[k]);
        MPI_CHECK(MPI_Comm_free(&m->comms[k]));
    }
    free(m->comms);
    free(m->tc);
    free(m);
    c->state = NULL;
}

void imbmt_fill(bench_ctx_t *c)
{
    imbmt_t *m = c->state;
    for (int k = 0; k < m->n; k++) {
        sync_thread(m, c, k);
        bench_ctx_t *t = &m->tc[k];
        if (m->twin->fill) m->twin->fill(t);
        else check_fill(t->sbuf, (size_t)t->size, t->rank, t->iter);
    }
}

void imbmt_event(bench_ctx_t *c)
{
    imbmt_t *m = c->state;
    for (int k = 0; k < m->n; k++) sync_thread(m, c, k);
    mt_pool_run(m->pool, c);
}

long imbmt_verify(const bench_ctx_t *c, long *verified)
{
    imbmt_t *m = c->state;
    long errors = 0;
    for (int k = 0; k < m->n; k++) {
        sync_thread(m, c, k);
        errors += m->twin->verify(&m->tc[k], verified);
    }
    return errors;
}

const char *imbmt_coll_plan_skip(const bench_t *b, long size, int nranks, char *why, size_t len)
{
    const char *skip = threads_plan_skip(b, size, nranks, why, len);
    return skip ? skip : coll_plan_skip(b, size, nranks, why, len);
}

/* The threads object of latency_mt (threads of the taking-part ranks on rank
 * 0's host), that each has a communicator of its own, and for the collective
 * rows coll.c's fields (datatype, count, op, t_min_us ...) of thread 0. */
void imbmt_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    const imbmt_t *m = c->state;
    long on_host = 0;
    for (int r = 0; r < c->nranks; r++) {
        bench_ctx_t probe = *c;
        probe.rank = r;
        if (takes_part(&probe) && same_host(w, 0, r)) on_host += m->n;
    }
    json_obj(j, "threads");
    json_int(j, "per_rank", m->n);
    json_str(j, "level_requested", thread_level_name(threads_requested_level()));
    json_str(j, "level_provided", threads_level_name_provided());
    json_int(j, "on_rank0_host", on_host);
    json_bool(j, "more_than_cores", on_host > w->ranks[0].cores_online);
    json_str(j, "comm", "one MPI_Comm_dup per thread");
    json_close_obj(j);
    if (c->bench->flags & BENCH_COLLECTIVE) coll_describe(&m->tc[0], p, w, j);
}
