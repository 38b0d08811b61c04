/* Persistent point-to-point between ranks 0 and 1: the requests are made once
 * (MPI_Send_init / MPI_Recv_init) and only started and completed per message,
 * which spares the library the per-call argument checks and matching set-up
 * that pingpong and bw pay.
 *
 * A request is bound to its buffer, and setup runs before the timing core has
 * chosen one, so each event makes sure its requests point at this event's
 * buffers: they are made at the first event and stay for the whole point.
 * Under --off-cache the buffers change every event, so the requests are made
 * again every event and the figure includes MPI_Send_init and MPI_Recv_init. */
#include "kernels/persistent.h"
#include "kernels/p2p.h"
#include "mpicheck.h"
#include <stdlib.h>

enum { TAG = 21, ACK_TAG = 22 };

typedef struct persistent_state {
    const char *sbuf, *rbuf;  /* the buffers the requests are bound to (NULL: none yet) */
    int nreq;
    MPI_Request *req;
} persistent_state_t;

void persistent_setup(bench_ctx_t *c)
{
    persistent_state_t *s = calloc(1, sizeof *s);
    int most = (int)p2p_window + 1;  /* bw: a window of messages and the acknowledgement */
    if (s) s->req = malloc((size_t)most * sizeof *s->req);
    if (!s || !s->req) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int i = 0; i < most; i++) s->req[i] = MPI_REQUEST_NULL;
    c->state = s;
}

static void release(persistent_state_t *s)
{
    for (int i = 0; i < s->nreq; i++)
        if (s->req[i] != MPI_REQUEST_NULL) MPI_CHECK(MPI_Request_free(&s->req[i]));
    s->nreq = 0;
    s->sbuf = s->rbuf = NULL;
}

void persistent_teardown(bench_ctx_t *c)
{
    persistent_state_t *s = c->state;
    release(s);
    free(s->req);
    free(s);
    c->state = NULL;
}

/* True when the requests already point at this event's buffers. */
static int bound(persistent_state_t *s, const bench_ctx_t *c)
{
    if (s->nreq && s->sbuf == c->sbuf && s->rbuf == c->rbuf) return 1;
    release(s);
    s->sbuf = c->sbuf;
    s->rbuf = c->rbuf;
    return 0;
}

/* ---- pingpong_persistent: rank 0 sends then receives, rank 1 the reverse ---- */

void pingpong_persistent_event(bench_ctx_t *c)
{
    persistent_state_t *s = c->state;
    int n = (int)c->size, peer = 1 - c->rank;
    if (c->rank > 1) return;
    if (!bound(s, c)) {
        MPI_Request *first = &s->req[0], *second = &s->req[1];
        if (c->rank == 0) {
            MPI_CHECK(MPI_Send_init(c->sbuf, n, MPI_BYTE, peer, TAG, c->comm, first));
            MPI_CHECK(MPI_Recv_init(c->rbuf, n, MPI_BYTE, peer, TAG, c->comm, second));
        } else {
            MPI_CHECK(MPI_Recv_init(c->rbuf, n, MPI_BYTE, peer, TAG, c->comm, first));
            MPI_CHECK(MPI_Send_init(c->sbuf, n, MPI_BYTE, peer, TAG, c->comm, second));
        }
        s->nreq = 2;
    }
    for (int i = 0; i < 2; i++) {
        MPI_CHECK(MPI_Start(&s->req[i]));
        MPI_CHECK(MPI_Wait(&s->req[i], MPI_STATUS_IGNORE));
    }
}

/* ---- bw_persistent: a window of messages 0 -> 1, then a zero-byte acknowledgement ---- */

void bw_persistent_event(bench_ctx_t *c)
{
    persistent_state_t *s = c->state;
    int n = (int)c->size, window = (int)p2p_window, peer = 1 - c->rank;
    if (c->rank > 1) return;
    if (!bound(s, c)) {
        for (int w = 0; w < window; w++) {
            /* receive slots as bw's: beyond the memory cap they are shared */
            char *slot = c->rbuf + (size_t)(w % c->rslots) * c->rslot;
            if (c->rank == 0) MPI_CHECK(MPI_Send_init(c->sbuf, n, MPI_BYTE, peer, TAG, c->comm, &s->req[w]));
            else MPI_CHECK(MPI_Recv_init(slot, n, MPI_BYTE, peer, TAG, c->comm, &s->req[w]));
        }
        if (c->rank == 0) MPI_CHECK(MPI_Recv_init(NULL, 0, MPI_BYTE, peer, ACK_TAG, c->comm, &s->req[window]));
        else MPI_CHECK(MPI_Send_init(NULL, 0, MPI_BYTE, peer, ACK_TAG, c->comm, &s->req[window]));
        s->nreq = window + 1;
    }
    MPI_CHECK(MPI_Startall(window, s->req));
    MPI_CHECK(MPI_Waitall(window, s->req, MPI_STATUSES_IGNORE));
    MPI_CHECK(MPI_Start(&s->req[window]));
    MPI_CHECK(MPI_Wait(&s->req[window], MPI_STATUS_IGNORE));
}
