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
    BENCH_COLLECTIVE = 1 << 5,    /* --datatype, --in-place, --rotate-root apply; synchronised by window */
    BENCH_REDUCTION = 1 << 6,     /* combines with --op; the default datatype is float (as IMB and OSU) */
    BENCH_NO_SIZE = 1 << 7,       /* moves no data (barrier): measured once per rank count, at size 0 */
};

enum coll_type { COLL_BYTE, COLL_INT, COLL_FLOAT, COLL_DOUBLE };
enum coll_op { COLL_SUM, COLL_MAX, COLL_MIN };

/* What a collective kernel is told: element type, operation and variants. */
typedef struct coll_args {
    MPI_Datatype type;
    int type_id, type_size;
    MPI_Op op;
    int op_id;
    int in_place, rotate_root;
    int nbc_tests;        /* MPI_Test calls spread over the overlapped compute phase */
    long compute_iters;   /* the calibrated compute phase of nonblocking collectives */
} coll_args_t;

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
    int phase;            /* which of the row's timed phases is running (0 unless phases > 1) */
    int variant;          /* which of the row's variants (grid shapes) this point measures */
    int grid_p, grid_q;   /* --grid PxQ (0: every factorisation of the ranks) */
    coll_args_t coll;     /* collectives only */
    struct {              /* the ring case study's knobs (--niter, --ncompute, --nblock) */
        int niter, ncompute_a, ncompute_b;
        long nblock;
    } study;
    void *state;          /* a kernel's own data, from setup */
} bench_ctx_t;

typedef struct pair { int a, b; } pair_t;

struct json;
struct point;
struct world;

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
    /* Bytes a rank needs for its send and receive buffers (NULL: size, and
     * size x receive slots): the memory limit and the allocation both use it. */
    void (*buffer_bytes)(const bench_ctx_t *c, size_t *send, size_t *recv);
    /* --check: writes iteration c->iter's input (NULL: check_fill of size bytes into sbuf). */
    void (*check_fill)(bench_ctx_t *c);
    /* nccl-tests bus bandwidth = bytes_per_op / time x this factor (NULL: none reported). */
    double (*busbw_factor)(const bench_ctx_t *c);
    /* Timed phases of a point (0 means 1). Nonblocking collectives have 3: the pure
     * operation, compute alone, and both overlapped; calibrate runs after phase 0. */
    int phases;
    void (*calibrate)(bench_ctx_t *c, double pure_event_s);
    /* Timed phases when they depend on the ranks (NULL: phases); phases without
     * calibrate are sampled one after the other, each to its own median. */
    int (*phase_count)(const bench_ctx_t *c);
    /* Points per size, told apart by c->variant (grid shapes; NULL: 1, 0: none fits). */
    int (*variants)(const bench_ctx_t *c);
    /* Adds the row's own fields to its point record (rank 0, after the point). */
    void (*describe)(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);
} bench_t;

extern const bench_t *const registry[];
extern const int registry_size;
const bench_t *bench_find(const char *name);

/* --check patterns: a byte stream determined by (sender rank, iteration). */
void check_fill(char *buf, size_t n, int sender, long iter);
long check_compare(const char *buf, size_t n, int sender, long iter);

#endif
