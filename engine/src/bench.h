/* What a benchmark is: a registry row (bench_t) and the state its kernel sees
 * (bench_ctx_t). Kernels live in kernels/; the timing core in timing.c. A
 * kernel reads the options of its family from the family's own option table
 * (option_table.h), not from here. */
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
    /* every rank takes part in one call: synchronised by window by default, and the
     * timing core also works out each rank's mean time (IMB's and OSU's figures) */
    BENCH_COLLECTIVE = 1 << 5,
    BENCH_REDUCTION = 1 << 6,     /* combines data with an operation */
    BENCH_NO_SIZE = 1 << 7,       /* moves no data (barrier): measured once per rank count, at size 0 */
    BENCH_THREAD_MULTIPLE = 1 << 8, /* its threads call MPI at once: main requests MPI_THREAD_MULTIPLE */
    /* one sample per rank per launch (MPI_Init's time): no warm-up, the row's once() is the sample */
    BENCH_ONCE = 1 << 9,
};

struct bench;

typedef struct bench_ctx {
    const struct bench *bench;  /* the row being measured */
    MPI_Comm comm;
    int rank, nranks;
    long size;            /* message size in bytes */
    char *sbuf, *rbuf;    /* this iteration's buffers (cycled with --off-cache) */
    size_t rslot;         /* stride between receive slots inside rbuf */
    int rslots;           /* receive slots allocated; fewer than wanted beyond a memory cap */
    long iter;            /* iteration number, seeds --check patterns */
    int checking;         /* set during the --check verification pass */
    int phase;            /* which of the row's timed phases is running (0 unless phases > 1) */
    int variant;          /* which of the row's variants (grid shapes) this point measures */
    void *state;          /* a kernel's own data, from setup until teardown */
    /* Bandwidth rows, set by measure.c: one stream's distinct message bytes per
     * event (source plus destination), the streams a figure adds up, and this
     * launch's memcpy rate for that working set and out of cache (0: not measured). */
    size_t working_set;
    int streams;
    double copy_MBps, memory_copy_MBps;
    /* where the send and receive buffers start past a page boundary, as allocated (--buffer-offset) */
    long buffer_offset[2];
} bench_ctx_t;

typedef struct pair { int a, b; } pair_t;

struct json;
struct point;
struct world;
struct option_table;

typedef struct bench {
    const char *name;
    const char *family;
    const char *summary;
    int min_ranks;
    unsigned flags;
    /* The options this row's family reads (NULL: only the core's). Rows of a
     * family share one table; options.c gathers every distinct table. */
    const struct option_table *options;
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
    /* Bytes a rank needs for its send and receive buffers (NULL: size, and
     * size x receive slots): the memory limit and the allocation both use it. */
    void (*buffer_bytes)(const bench_ctx_t *c, size_t *send, size_t *recv);
    /* --check: writes iteration c->iter's input (NULL: check_fill of size bytes into sbuf). */
    void (*check_fill)(bench_ctx_t *c);
    /* nccl-tests bus bandwidth = bytes_per_op / time x this factor (NULL: none reported). */
    double (*busbw_factor)(const bench_ctx_t *c);
    /* Timed phases of a point (0 means 1), or phase_count when they depend on
     * the ranks. After phase 0 the timing core samples phases 1.. one after the
     * other, each to its own median; calibrate (NULL: none) runs between phase
     * 0 and phase 1 with phase 0's median event time. */
    int phases;
    int (*phase_count)(int nranks);
    void (*calibrate)(bench_ctx_t *c, double phase0_event_s);
    /* Points per size on nranks ranks (NULL: 1 and no variants; 0: none fits),
     * each with a label for the records ("2x2"); c->variant says which. */
    int (*variants)(int nranks);
    const char *no_variant;   /* the skip reason when no variant fits the ranks */
    void (*variant_label)(int nranks, int variant, char *buf, size_t len);
    /* A reason this row cannot measure size on nranks ranks, known before
     * MPI_Init (NULL or returning NULL: none); why is the buffer to write it in. */
    const char *(*plan_skip)(const struct bench *b, long size, int nranks, char *why, size_t len);
    /* The same for one variant of a row with variants (NULL or NULL returned: none). */
    const char *(*variant_skip)(const struct bench *b, int variant, long size, int nranks, char *why, size_t len);
    /* Why this build cannot run the row at all (NULL: it can), known at compile
     * time: a call newer than the MPI it was built with. Its points are skips. */
    const char *unavailable;
    /* Adds the row's own fields to its point record (rank 0, after the point,
     * before teardown: the kernel's state is still there). */
    void (*describe)(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);
    /* Every rank, after the point's sampling and before describe (NULL: nothing):
     * a collective step that brings the ranks' own data to rank 0. */
    void (*collect)(bench_ctx_t *c);
    /* Bandwidth rows: one stream's working set in bytes and the streams a figure
     * adds up (NULL: the send and receive bytes of the allocation; 1 stream, a
     * collective's ranks). */
    size_t (*working_set)(const bench_ctx_t *c, int *streams);
    /* BENCH_ONCE rows: this rank's one sample in seconds, measured before the timing core ran. */
    double (*once)(const bench_ctx_t *c);
} bench_t;

/* Timed phases of row b's points on nranks ranks (at least 1). */
static inline int bench_phases(const bench_t *b, int nranks)
{
    int n = b->phase_count ? b->phase_count(nranks) : b->phases;
    return n > 1 ? n : 1;
}

/* --check patterns: a byte stream determined by (sender rank, iteration). */
void check_fill(char *buf, size_t n, int sender, long iter);
long check_compare(const char *buf, size_t n, int sender, long iter);

#endif
