/* LogGP overhead kernels (Hoefler et al., netgauge). Both run on the one timing
 * core with a barrier before every sample, and rank 0's sample is the figure:
 *
 * overhead_send: rank 0 times MPI_Send alone; rank 1 receives. For an eager
 *   message the call returns once the data is handed to the library: o_s.
 *
 * overhead_recv: rank 0 times MPI_Recv of a message that has already arrived.
 *   The message for event i is sent by rank 1 during event i-1, before it
 *   enters the barrier that starts sample i, so it is in rank 0's queue (or
 *   the shared-memory FIFO) when the timed MPI_Recv starts. This replaces
 *   netgauge's busy delay of known length: nothing but the receive is timed.
 *   Rank 1 uses MPI_Isend and completes it one event later, so a rendezvous
 *   size cannot deadlock (its MPI_Recv then includes the transfer). */
#include "kernels/loggp.h"
#include "mpicheck.h"
#include <stdlib.h>

enum { TAG = 11, CHECK_TAG = 12 };

/* ---- overhead_send ---- */

void overhead_send_event(bench_ctx_t *c)
{
    int n = (int)c->size;
    if (c->rank == 0)
        MPI_CHECK(MPI_Send(c->sbuf, n, MPI_BYTE, 1, TAG, c->comm));
    else if (c->rank == 1)
        MPI_CHECK(MPI_Recv(c->rbuf, n, MPI_BYTE, 0, TAG, c->comm, MPI_STATUS_IGNORE));
}

long overhead_send_verify(const bench_ctx_t *c, long *verified)
{
    if (c->rank != 1) return 0;
    *verified += c->size;
    return check_compare(c->rbuf, (size_t)c->size, 0, c->iter);
}

/* ---- overhead_recv: a pipeline one message deep ---- */

typedef struct pipe_state {
    MPI_Request pending;   /* rank 1: the send of the previous event */
    int started;           /* rank 0: a message is on its way */
} pipe_state_t;

void overhead_recv_setup(bench_ctx_t *c)
{
    pipe_state_t *s = malloc(sizeof *s);
    if (!s) MPI_CHECK(MPI_Abort(c->comm, 1));
    s->pending = MPI_REQUEST_NULL;
    s->started = 0;
    c->state = s;
}

void overhead_recv_event(bench_ctx_t *c)
{
    pipe_state_t *s = c->state;
    int n = (int)c->size;
    if (c->checking) {   /* --check: a plain exchange on its own tag, outside the pipeline */
        if (c->rank == 1) MPI_CHECK(MPI_Send(c->sbuf, n, MPI_BYTE, 0, CHECK_TAG, c->comm));
        else if (c->rank == 0)
            MPI_CHECK(MPI_Recv(c->rbuf, n, MPI_BYTE, 1, CHECK_TAG, c->comm, MPI_STATUS_IGNORE));
        return;
    }
    if (c->rank == 1) {
        MPI_CHECK(MPI_Wait(&s->pending, MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Isend(c->sbuf, n, MPI_BYTE, 0, TAG, c->comm, &s->pending));
    } else if (c->rank == 0) {
        /* the first event of a point only starts the pipeline (it is a warm-up event) */
        if (s->started) MPI_CHECK(MPI_Recv(c->rbuf, n, MPI_BYTE, 1, TAG, c->comm, MPI_STATUS_IGNORE));
        s->started = 1;
    }
}

void overhead_recv_teardown(bench_ctx_t *c)
{
    pipe_state_t *s = c->state;
    if (c->rank == 0 && s->started)
        MPI_CHECK(MPI_Recv(c->rbuf, (int)c->size, MPI_BYTE, 1, TAG, c->comm, MPI_STATUS_IGNORE));
    if (c->rank == 1) MPI_CHECK(MPI_Wait(&s->pending, MPI_STATUS_IGNORE));
    free(s);
    c->state = NULL;
}

long overhead_recv_verify(const bench_ctx_t *c, long *verified)
{
    if (c->rank != 0) return 0;
    *verified += c->size;
    return check_compare(c->rbuf, (size_t)c->size, 1, c->iter);
}
