/* What a benchmark is: a registry row (bench_t) and the state its kernel sees
 * (bench_ctx_t). Kernels live in kernels/; the timing core in timing.c. */
#ifndef MPISCOPE_BENCH_H
#define MPISCOPE_BENCH_H

#include <mpi.h>
#include <stddef.h>

enum {
    BENCH_SAMPLE_ROOT = 1 << 0,   /* rank 0's samples are the figure; else max over ranks */
    BENCH_SYNC_BARRIER = 1 << 1,  /* a barrier before every sample: ranks are not self-synchronising */
    BENCH_EVEN_RANKS = 1 << 2,    /* needs an even number of ranks */
    BENCH_HALF_RTT = 1 << 3,      /* the time is half a round trip */
    BENCH_DOUBLES = 1 << 4,       /* moves 8-byte doubles: sizes must be multiples of 8 */
};

typedef struct bench_ctx {
    MPI_Comm comm;
    int rank, nranks;
    long size;            /* message size in bytes */
    int window;
    char *sbuf, *rbuf;    /* this iteration's buffers (cycled with --off-cache) */
    size_t rslot;         /* stride between receive slots inside rbuf */
    int rslots;           /* receive slots allocated; fewer than wanted beyond a memory cap */
    long iter;            /* iteration number, seeds --check patterns */
    int checking;         /* set during the --check verification pass */
    struct {              /* the ring case study's knobs (--niter, --ncompute, --nblock) */
        int niter, ncompute_a, ncompute_b;
        long nblock;
    } study;
    void *state;          /* a kernel's own data, from setup */
} bench_ctx_t;

typedef struct pair { int a, b; } pair_t;

typedef struct bench {
    const char *name;
    const char *family;
    const char *summary;
    int min_ranks;
    unsigned flags;
    /* Message-sized receive buffers a rank wants (NULL: 1); sends use one buffer. */
    int (*recv_slots)(const bench_ctx_t *c);
    /* One event's time / ops_per_event = the reported time; bytes_per_op / that = bandwidth. */
    double (*ops_per_event)(const bench_ctx_t *c);
    double (*bytes_per_op)(const bench_ctx_t *c);
    double (*msgs_per_event)(const bench_ctx_t *c);  /* NULL: no message rate */
    int (*is_active)(const bench_ctx_t *c);          /* NULL: every rank takes part */
    int (*pairs)(const bench_ctx_t *c, pair_t *out); /* rank pairs that exchange messages */
    void (*setup)(bench_ctx_t *c);                   /* NULL: nothing to set up */
    void (*event)(bench_ctx_t *c);                   /* one timed event */
    void (*teardown)(bench_ctx_t *c);
    /* --check: wrong bytes in this rank's receive buffers after an event whose
     * send buffers held check_fill patterns. */
    long (*verify)(const bench_ctx_t *c, long *verified_bytes);
} bench_t;

extern const bench_t *const registry[];
extern const int registry_size;
const bench_t *bench_find(const char *name);

/* --check patterns: a byte stream determined by (sender rank, iteration). */
void check_fill(char *buf, size_t n, int sender, long iter);
long check_compare(const char *buf, size_t n, int sender, long iter);

#endif
