/* IMB-MT on the timing core: every rank runs --threads T threads, each on a
 * communicator of its own (MPI_Comm_dup), and in one event every thread runs
 * one operation of an IMB-MPI1 kernel at once. Rows in registry.c (*_mt). */
#ifndef MPISCOPE_IMBMT_H
#define MPISCOPE_IMBMT_H

#include "bench.h"

/* Per row: the buffers (T threads' worth) and the setup that picks the kernel. */
#define IMBMT_DECLARE(nm)                                                      \
    void nm##_mt_buffers(const bench_ctx_t *c, size_t *send, size_t *recv);    \
    void nm##_mt_setup(bench_ctx_t *c);

IMBMT_DECLARE(pingpong)
IMBMT_DECLARE(pingping)
IMBMT_DECLARE(sendrecv)
IMBMT_DECLARE(exchange)
IMBMT_DECLARE(uniband)
IMBMT_DECLARE(biband)
IMBMT_DECLARE(barrier)
IMBMT_DECLARE(bcast)
IMBMT_DECLARE(reduce)
IMBMT_DECLARE(allreduce)
IMBMT_DECLARE(gather)
IMBMT_DECLARE(scatter)
IMBMT_DECLARE(allgather)
IMBMT_DECLARE(alltoall)

/* Shared by the rows. */
void imbmt_fill(bench_ctx_t *c);
void imbmt_event(bench_ctx_t *c);
long imbmt_verify(const bench_ctx_t *c, long *verified);
void imbmt_teardown(bench_ctx_t *c);
void imbmt_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);
int imbmt_ring_pairs(const bench_ctx_t *c, pair_t *out);
const char *imbmt_coll_plan_skip(const bench_t *b, long size, int nranks, char *why, size_t len);

/* Figures: T = --threads, P = pairs (N/2), W = --window. */
double imbmt_t_size(const bench_ctx_t *c);          /* T x size */
double imbmt_2t_size(const bench_ctx_t *c);         /* 2T x size */
double imbmt_4t_size(const bench_ctx_t *c);         /* 4T x size */
double imbmt_pairs_t_size(const bench_ctx_t *c);    /* P x T x size */
double imbmt_t_coll_size(const bench_ctx_t *c);     /* T x size */
double imbmt_t_ranks_size(const bench_ctx_t *c);    /* T x ranks x size */
double imbmt_two_windows(const bench_ctx_t *c);     /* 2W */
double imbmt_pingpong_msgs(const bench_ctx_t *c);   /* 2 P T */
double imbmt_ring_msgs(const bench_ctx_t *c);       /* N T */
double imbmt_exchange_msgs(const bench_ctx_t *c);   /* 2 N T */
double imbmt_uniband_msgs(const bench_ctx_t *c);    /* P T W */
double imbmt_biband_msgs(const bench_ctx_t *c);     /* 2 P T W */

#endif
