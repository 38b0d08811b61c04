/* Point-to-point kernels: pingpong, pingping, bw, bibw, msgrate, ring,
 * sendrecv, exchange. Each function is one timed event; the timing core does
 * the rest. */
#include "kernels/p2p.h"
#include "kernels/layout.h"
#include "json.h"
#include "mpicheck.h"
#include <string.h>

enum { TAG = 1, ACK_TAG = 2, MAX_WINDOW = 4096 };

long p2p_window = 64;
/* -1 until given: single, as osu_bw, osu_bibw and osu_mbw_mr default to (-b single) */
int p2p_buffers = -1;
static const char *const buffers_names[] = {"single", "multiple", NULL};

static const opt_spec_t specs[] = {
    {"window", OPT_LONG, &p2p_window, 1, MAX_WINDOW, NULL, "N", "messages in flight for bw, bibw, msgrate (64)",
     "window", 0, NULL, NULL},
    {"buffers", OPT_CHOICE, &p2p_buffers, 0, 0, buffers_names, "single|multiple",
     "bw, bibw, msgrate: one send and one receive buffer (single, OSU -b single) or one of each per message of "
     "the window (multiple, OSU -b multiple)", "buffers", OPT_NULL_WHEN_UNSET, NULL, NULL},
    {"layout", OPT_CHOICE, &layout_choice, 0, 0, layout_names, "contiguous|vector|indexed",
     "pingpong, pingping, bw, bibw: send each message as one derived datatype (OSU -D)", "layout",
     OPT_NULL_WHEN_UNSET, NULL, NULL},
    {"layout-block", OPT_LONG, &layout_block, 1, 1 << 20, NULL, "B", "--layout: bytes per block (4)", "layout_block",
     0, NULL, NULL},
    {"layout-stride", OPT_LONG, &layout_stride, 1, 1 << 22, NULL, "S", "--layout: bytes from block to block (8)",
     "layout_stride", 0, NULL, NULL},
    {NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL},
};

const option_table_t p2p_options = {"point-to-point streaming (bw, bibw, msgrate) and layouts", specs,
                                     layout_validate};

/* ---- sizes, counts and pairs shared by the rows ---- */

static int window(void) { return (int)p2p_window; }
static int npairs(const bench_ctx_t *c) { return c->nranks / 2; }

static int multiple(void) { return p2p_buffers == 1; }

/* single: one slot on each side; multiple: one per message of the window */
int p2p_window_slots(const bench_ctx_t *c) { (void)c; return multiple() ? window() : 1; }
int p2p_two_slots(const bench_ctx_t *c) { (void)c; return 2; }
double p2p_one(const bench_ctx_t *c) { (void)c; return 1.0; }
double p2p_two(const bench_ctx_t *c) { (void)c; return 2.0; }
double p2p_window_ops(const bench_ctx_t *c) { (void)c; return (double)p2p_window; }
double p2p_size(const bench_ctx_t *c) { return (double)c->size; }
double p2p_twice_size(const bench_ctx_t *c) { return 2.0 * (double)c->size; }
double p2p_four_times_size(const bench_ctx_t *c) { return 4.0 * (double)c->size; }
double p2p_ranks(const bench_ctx_t *c) { return c->nranks; }
int p2p_first_two_active(const bench_ctx_t *c) { return c->rank < 2; }

int p2p_pair01(const bench_ctx_t *c, pair_t *out)
{
    (void)c;
    out[0] = (pair_t){0, 1};
    return 1;
}

int p2p_ring_pairs(const bench_ctx_t *c, pair_t *out)
{
    for (int r = 0; r < c->nranks; r++) out[r] = (pair_t){r, (r + 1) % c->nranks};
    return c->nranks == 2 ? 1 : c->nranks;
}

static int left(const bench_ctx_t *c) { return (c->rank + c->nranks - 1) % c->nranks; }
static int right(const bench_ctx_t *c) { return (c->rank + 1) % c->nranks; }
/* Receive slot i; beyond the memory cap slots are shared, as OSU shares one. */
static char *rslot(const bench_ctx_t *c, int i) { return c->rbuf + (size_t)(i % c->rslots) * c->rslot; }
/* The streaming rows' send slot i: with --buffers multiple the send buffer has
 * as many slots as the receive buffer, of the same stride; with single, one buffer
 * (a row that borrows these kernels, such as IMB-MT's uniband, has one send slot). */
static char *sslot(const bench_ctx_t *c, int i)
{
    return multiple() ? c->sbuf + (size_t)(i % c->rslots) * c->rslot : c->sbuf;
}

/* ---- pingpong: half a round trip between ranks 0 and 1 ---- */

void pingpong_event(bench_ctx_t *c)
{
    MPI_Datatype t;
    int n = layout_message(c, &t);
    if (c->rank == 0) {
        MPI_CHECK(MPI_Send(c->sbuf, n, t, 1, TAG, c->comm));
        MPI_CHECK(MPI_Recv(c->rbuf, n, t, 1, TAG, c->comm, MPI_STATUS_IGNORE));
    } else if (c->rank == 1) {
        MPI_CHECK(MPI_Recv(c->rbuf, n, t, 0, TAG, c->comm, MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Send(c->sbuf, n, t, 0, TAG, c->comm));
    }
}

long pingpong_verify(const bench_ctx_t *c, long *verified)
{
    if (c->rank > 1) return 0;
    *verified += c->size;
    return layout_compare(c, c->rbuf, 1 - c->rank);
}

/* ---- pingping: ranks 0 and 1 send to each other at the same time ---- */

void pingping_event(bench_ctx_t *c)
{
    if (c->rank > 1) return;
    MPI_Datatype t;
    int n = layout_message(c, &t), peer = 1 - c->rank;
    MPI_Request req;
    MPI_CHECK(MPI_Isend(c->sbuf, n, t, peer, TAG, c->comm, &req));
    MPI_CHECK(MPI_Recv(c->rbuf, n, t, peer, TAG, c->comm, MPI_STATUS_IGNORE));
    MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
}

long pingping_verify(const bench_ctx_t *c, long *verified) { return pingpong_verify(c, verified); }

/* ---- bw and msgrate: a window of sends, then a zero-byte acknowledgement ---- */

static void stream_send(bench_ctx_t *c, int peer)
{
    MPI_Request req[MAX_WINDOW];
    MPI_Datatype t;
    int n = layout_message(c, &t);
    for (int w = 0; w < window(); w++)
        MPI_CHECK(MPI_Isend(sslot(c, w), n, t, peer, TAG, c->comm, &req[w]));
    MPI_CHECK(MPI_Waitall(window(), req, MPI_STATUSES_IGNORE));
    MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, peer, ACK_TAG, c->comm, MPI_STATUS_IGNORE));
}

static void stream_recv(bench_ctx_t *c, int peer)
{
    MPI_Request req[MAX_WINDOW];
    MPI_Datatype t;
    int n = layout_message(c, &t);
    for (int w = 0; w < window(); w++)
        MPI_CHECK(MPI_Irecv(rslot(c, w), n, t, peer, TAG, c->comm, &req[w]));
    MPI_CHECK(MPI_Waitall(window(), req, MPI_STATUSES_IGNORE));
    MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, peer, ACK_TAG, c->comm));
}

static long window_verify(const bench_ctx_t *c, int sender, long *verified)
{
    long errors = 0;
    /* every message of a window carries the same pattern, so a shared slot stands for every
     * message landed in it, and is compared once: a corrupted byte is one error, not one per
     * message of the window */
    int slots = c->rslots < window() ? c->rslots : window();
    for (int w = 0; w < slots; w++) errors += layout_compare(c, rslot(c, w), sender);
    *verified += (long)window() * c->size;
    return errors;
}

void bw_event(bench_ctx_t *c)
{
    if (c->rank == 0) stream_send(c, 1);
    else if (c->rank == 1) stream_recv(c, 0);
}

long bw_verify(const bench_ctx_t *c, long *verified)
{
    return c->rank == 1 ? window_verify(c, 0, verified) : 0;
}

double window_msgs(const bench_ctx_t *c) { (void)c; return (double)p2p_window; }

/* ---- the streaming rows' buffers (--buffers) ---- */

/* bw and bibw: send and receive slots of the layout's extent each. */
void p2p_stream_buffers(const bench_ctx_t *c, size_t *send, size_t *recv)
{
    layout_buffers(c, send, recv);
    *send *= (size_t)c->rslots;
}

/* msgrate (no --layout): size bytes per slot. */
void msgrate_buffers(const bench_ctx_t *c, size_t *send, size_t *recv)
{
    *send = *recv = (size_t)c->size * (size_t)c->rslots;
}

/* One stream's distinct source and destination bytes per event: the slots a
 * window goes through on each side (single: one; beyond the memory cap: the cap). */
static size_t stream_bytes(const bench_ctx_t *c)
{
    int slots = window() < c->rslots ? window() : c->rslots;
    return 2 * (size_t)slots * (size_t)c->size;
}

/* --check: every send slot carries the pattern (the receive side compares each slot). */
void p2p_stream_fill(bench_ctx_t *c)
{
    if (layout_on) layout_fill(c);
    else check_fill(c->sbuf, (size_t)c->size, c->rank, c->iter);
    for (int i = 1; i < c->rslots; i++) memcpy(sslot(c, i), c->sbuf, c->rslot);
}

static void describe_buffers(const bench_ctx_t *c, json_t *j)
{
    json_str(j, "buffers", buffers_names[multiple()]);
    json_int(j, "buffer_slots", c->rslots);
}

size_t bw_working_set(const bench_ctx_t *c, int *streams) { *streams = 1; return stream_bytes(c); }
size_t bibw_working_set(const bench_ctx_t *c, int *streams) { *streams = 2; return stream_bytes(c); }
size_t msgrate_working_set(const bench_ctx_t *c, int *streams) { *streams = npairs(c); return stream_bytes(c); }

void stream_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, json_t *j)
{
    describe_buffers(c, j);
    layout_describe(c, p, w, j);
}

void msgrate_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, json_t *j)
{
    (void)p, (void)w;
    describe_buffers(c, j);
}

/* ---- bibw: windows both ways at once ---- */

void bibw_event(bench_ctx_t *c)
{
    if (c->rank > 1) return;
    MPI_Request req[2 * MAX_WINDOW];
    int peer = 1 - c->rank;
    MPI_Datatype t;
    int n = layout_message(c, &t);
    for (int w = 0; w < window(); w++)
        MPI_CHECK(MPI_Irecv(rslot(c, w), n, t, peer, TAG, c->comm, &req[w]));
    for (int w = 0; w < window(); w++)
        MPI_CHECK(MPI_Isend(sslot(c, w), n, t, peer, TAG, c->comm, &req[window() + w]));
    MPI_CHECK(MPI_Waitall(2 * window(), req, MPI_STATUSES_IGNORE));
}

long bibw_verify(const bench_ctx_t *c, long *verified)
{
    return c->rank < 2 ? window_verify(c, 1 - c->rank, verified) : 0;
}

double bibw_msgs(const bench_ctx_t *c) { (void)c; return 2.0 * (double)p2p_window; }

/* ---- msgrate: N/2 pairs (i, i + N/2) stream at once ---- */

double msgrate_bytes(const bench_ctx_t *c) { return (double)npairs(c) * (double)c->size; }
double msgrate_msgs(const bench_ctx_t *c) { return (double)npairs(c) * (double)p2p_window; }
int msgrate_active(const bench_ctx_t *c) { return c->rank < 2 * npairs(c); }

int msgrate_pairs(const bench_ctx_t *c, pair_t *out)
{
    for (int i = 0; i < npairs(c); i++) out[i] = (pair_t){i, i + npairs(c)};
    return npairs(c);
}

void msgrate_event(bench_ctx_t *c)
{
    int p = npairs(c);
    if (c->rank < p) stream_send(c, c->rank + p);
    else if (c->rank < 2 * p) stream_recv(c, c->rank - p);
}

long msgrate_verify(const bench_ctx_t *c, long *verified)
{
    int p = npairs(c);
    return (c->rank >= p && c->rank < 2 * p) ? window_verify(c, c->rank - p, verified) : 0;
}

/* ---- ring: rank 0 sends then receives, the others receive then send ---- */

void ring_event(bench_ctx_t *c)
{
    int n = (int)c->size;
    if (c->rank == 0) {
        MPI_CHECK(MPI_Send(c->sbuf, n, MPI_BYTE, right(c), TAG, c->comm));
        MPI_CHECK(MPI_Recv(c->rbuf, n, MPI_BYTE, left(c), TAG, c->comm, MPI_STATUS_IGNORE));
    } else {
        MPI_CHECK(MPI_Recv(c->rbuf, n, MPI_BYTE, left(c), TAG, c->comm, MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Send(c->sbuf, n, MPI_BYTE, right(c), TAG, c->comm));
    }
}

long from_left_verify(const bench_ctx_t *c, long *verified)
{
    *verified += c->size;
    return check_compare(c->rbuf, (size_t)c->size, left(c), c->iter);
}

/* ---- sendrecv (IMB Sendrecv): a chain, send right and receive from the left ---- */

void sendrecv_event(bench_ctx_t *c)
{
    int n = (int)c->size;
    MPI_CHECK(MPI_Sendrecv(c->sbuf, n, MPI_BYTE, right(c), TAG, c->rbuf, n, MPI_BYTE, left(c), TAG,
                           c->comm, MPI_STATUS_IGNORE));
}

/* ---- exchange (IMB Exchange): to and from both neighbours ---- */

void exchange_event(bench_ctx_t *c)
{
    int n = (int)c->size;
    MPI_Request req[4];
    MPI_CHECK(MPI_Irecv(rslot(c, 0), n, MPI_BYTE, left(c), TAG, c->comm, &req[0]));
    MPI_CHECK(MPI_Irecv(rslot(c, 1), n, MPI_BYTE, right(c), TAG + 1, c->comm, &req[1]));
    MPI_CHECK(MPI_Isend(c->sbuf, n, MPI_BYTE, right(c), TAG, c->comm, &req[2]));
    MPI_CHECK(MPI_Isend(c->sbuf, n, MPI_BYTE, left(c), TAG + 1, c->comm, &req[3]));
    MPI_CHECK(MPI_Waitall(4, req, MPI_STATUSES_IGNORE));
}

long exchange_verify(const bench_ctx_t *c, long *verified)
{
    *verified += 2 * c->size;
    return check_compare(rslot(c, 0), (size_t)c->size, left(c), c->iter) +
           check_compare(rslot(c, 1), (size_t)c->size, right(c), c->iter);
}
