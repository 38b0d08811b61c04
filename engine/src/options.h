/* Command-line options of the engine, parsed before MPI_Init. */
#ifndef MPISCOPE_OPTIONS_H
#define MPISCOPE_OPTIONS_H

#include "sizes.h"

enum { OPT_OK = 0, OPT_EXIT = 1, OPT_ERROR = 2 };
enum format { FORMAT_JSONL, FORMAT_TABLE };

typedef struct options {
    const char *sizes_expr;
    size_list_t sizes;
    long unit;                   /* 1 = bytes, 8 = words */
    long reps;                   /* 0 = adaptive */
    long min_reps, max_reps;
    double ci_target;
    double max_time_s;
    long warmup;
    long warmup_bytes;
    int window;
    int niter, ncompute_a, ncompute_b;  /* ring case study */
    long nblock;
    const char *sync;            /* none, barrier, window; NULL = each benchmark's default */
    int datatype;                /* enum coll_type; -1 = byte, or float for reductions */
    int op;                      /* enum coll_op */
    int in_place, rotate_root;
    int npmin;                   /* 0 = only the whole job; else npmin, 2 npmin, ... ranks */
    int nbc_tests;               /* MPI_Test calls during the overlapped compute */
    int grid_p, grid_q;          /* --grid PxQ; 0 = every factorisation of the ranks */
    const char *order;           /* --order: block, cyclic, list; NULL = as launched */
    int *order_list;             /* --order LIST: launch ranks in their new order */
    int order_n;
    double timeout_s;            /* 0 = derived per point */
    long off_cache_bytes;        /* 0 = off */
    double max_memory_bytes;     /* 0 = derived from available memory */
    int check, raw;
    enum format format;
    const char *output;
    int list, json, version, mpi_info, help;
    char **benchmarks;           /* names, in order */
    int nbenchmarks;
} options_t;

/* Returns OPT_OK, OPT_EXIT (help/list/version: nothing to measure) or
 * OPT_ERROR with a message in err. Benchmark names are checked by the caller. */
int options_parse(int argc, char **argv, options_t *o, char *err, size_t errlen);

void options_usage(void);

#endif
