/* Hardware ceilings on the one timing core, no MPI data movement timed:
 *
 * memcpy: rank 0 copies size bytes from its send to its receive buffer. Sizes
 *   up to the caches stay in cache between samples; larger ones stream from
 *   memory (--off-cache cycles buffers to force it for every size).
 * reduce_local: rank 0's MPI_Reduce_local of size/4 floats (sum): the local
 *   reduction cost per byte, gamma in the collective models.
 * cacheline: ranks 0 and 1 bounce one cache line through memory they share
 *   (MPI_Win_allocate_shared): rank 0 writes 2k+1, rank 1 answers 2k+2. Half
 *   the round trip is the core-to-core latency no MPI message can beat. */
#include "kernels/hw.h"
#include "mpicheck.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hw_rank0_active(const bench_ctx_t *c) { return c->rank == 0; }

/* ---- memcpy ---- */

void memcpy_event(bench_ctx_t *c)
{
    if (c->rank == 0) memcpy(c->rbuf, c->sbuf, (size_t)c->size);
}

long memcpy_verify(const bench_ctx_t *c, long *verified)
{
    if (c->rank != 0) return 0;
    *verified += c->size;
    return check_compare(c->rbuf, (size_t)c->size, 0, c->iter);
}

/* ---- reduce_local ---- */

void reduce_local_event(bench_ctx_t *c)
{
    if (c->rank == 0)
        MPI_CHECK(MPI_Reduce_local(c->sbuf, c->rbuf, (int)(c->size / 4), MPI_FLOAT, MPI_SUM));
}

/* The check pass zeroes the receive buffer first, so every float must come back
 * as the one sent (0 + x = x; NaN patterns and signed zeros compare as such). */
long reduce_local_verify(const bench_ctx_t *c, long *verified)
{
    if (c->rank != 0) return 0;
    long wrong = 0, n = c->size / 4;
    for (long i = 0; i < n; i++) {
        float s, r;
        memcpy(&s, c->sbuf + 4 * i, 4);
        memcpy(&r, c->rbuf + 4 * i, 4);
        if (!(r == s || (isnan(s) && isnan(r)))) wrong++;
    }
    *verified += 4 * n;
    return wrong;
}

/* ---- cacheline ---- */

enum { LINE = 64 };

typedef struct line_state {
    MPI_Comm pair;       /* ranks 0 and 1, MPI_COMM_NULL elsewhere */
    MPI_Win win;
    long *flag;          /* the shared cache line, in rank 0's segment */
    long k;              /* events so far: the values written are 2k+1 and 2k+2 */
} line_state_t;

void cacheline_buffers(const bench_ctx_t *c, size_t *send, size_t *recv)
{
    (void)c;
    *send = *recv = 0;
}

void cacheline_setup(bench_ctx_t *c)
{
    line_state_t *s = calloc(1, sizeof *s);
    if (!s) MPI_CHECK(MPI_Abort(c->comm, 1));
    s->pair = MPI_COMM_NULL;
    MPI_CHECK(MPI_Comm_split(c->comm, c->rank < 2 ? 0 : MPI_UNDEFINED, c->rank, &s->pair));
    if (s->pair != MPI_COMM_NULL) {
        MPI_Comm node;
        int nn;
        MPI_CHECK(MPI_Comm_split_type(s->pair, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
        MPI_CHECK(MPI_Comm_size(node, &nn));
        MPI_CHECK(MPI_Comm_free(&node));
        if (nn != 2) {
            if (c->rank == 0)
                fprintf(stderr, "mpiscope-engine: cacheline needs ranks 0 and 1 on one node (shared memory); "
                                "place them on the same host\n");
            MPI_CHECK(MPI_Abort(c->comm, 2));
        }
        void *base;
        MPI_CHECK(MPI_Win_allocate_shared(c->rank == 0 ? 2 * LINE : 0, 1, MPI_INFO_NULL, s->pair, &base,
                                          &s->win));
        MPI_Aint bytes;
        int disp;
        MPI_CHECK(MPI_Win_shared_query(s->win, 0, &bytes, &disp, &base));
        /* the flag gets a line of its own, whatever the segment's alignment */
        s->flag = (long *)(((uintptr_t)base + LINE - 1) & ~(uintptr_t)(LINE - 1));
        MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, s->win));
        if (c->rank == 0) __atomic_store_n(s->flag, 0L, __ATOMIC_SEQ_CST);
        MPI_CHECK(MPI_Win_sync(s->win));
        MPI_CHECK(MPI_Barrier(s->pair));
        MPI_CHECK(MPI_Win_sync(s->win));
    }
    c->state = s;
}

static void wait_for(const long *flag, long value)
{
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != value)
        ;
}

void cacheline_event(bench_ctx_t *c)
{
    line_state_t *s = c->state;
    if (c->rank == 0) {
        __atomic_store_n(s->flag, 2 * s->k + 1, __ATOMIC_RELEASE);
        wait_for(s->flag, 2 * s->k + 2);
    } else if (c->rank == 1) {
        wait_for(s->flag, 2 * s->k + 1);
        __atomic_store_n(s->flag, 2 * s->k + 2, __ATOMIC_RELEASE);
    }
    s->k++;
}

/* After an event both ranks must see the answer 2k (k counted after it). */
long cacheline_verify(const bench_ctx_t *c, long *verified)
{
    const line_state_t *s = c->state;
    if (c->rank > 1) return 0;
    *verified += sizeof(long);
    long seen = __atomic_load_n(s->flag, __ATOMIC_ACQUIRE);
    return c->rank == 0 ? seen != 2 * s->k : (seen != 2 * s->k && seen != 2 * s->k + 1);
}

void cacheline_teardown(bench_ctx_t *c)
{
    line_state_t *s = c->state;
    if (s->pair != MPI_COMM_NULL) {
        MPI_CHECK(MPI_Win_unlock_all(s->win));
        MPI_CHECK(MPI_Win_free(&s->win));
        MPI_CHECK(MPI_Comm_free(&s->pair));
    }
    free(s);
    c->state = NULL;
}
