/* Command-line options of the engine, parsed before MPI_Init: the core's
 * (here) and every family's (declared in the family's kernel file). */
#ifndef MPISCOPE_OPTIONS_H
#define MPISCOPE_OPTIONS_H

#include "points.h"
#include "sizes.h"
#include <stddef.h>

struct json;

enum { OPT_OK = 0, OPT_EXIT = 1, OPT_ERROR = 2 };
enum format { FORMAT_JSONL, FORMAT_TABLE };  /* the order of --format's choices */

typedef struct options {
    const char *sizes_expr;
    size_list_t sizes;
    int units;                   /* --units: 0 bytes, 1 words */
    long unit;                   /* 1 = bytes, 8 = words */
    long reps;                   /* 0 = adaptive */
    long min_reps, max_reps;
    long stop_identical;         /* stop once this many samples repeat exactly (0 = never) */
    double ci_target;
    double max_time_s;
    long warmup;
    long warmup_bytes;
    int sync_choice;             /* index into sync_method_names, -1 = each benchmark's default */
    const char *sync;            /* its name, NULL = each benchmark's default */
    long npmin;                  /* 0 = only the whole job; else npmin, 2 npmin, ... ranks */
    const char *order;           /* --order: block, cyclic, list; NULL = as launched */
    int *order_list;             /* --order LIST: launch ranks in their new order */
    int order_n;
    double timeout_s;            /* 0 = derived per point */
    int timeout_extends;         /* progress extends --timeout as it does a derived limit */
    long off_cache_bytes;        /* 0 = off, -1 = the last-level cache */
    long buffer_offset[2];       /* send, receive buffers: bytes past a page boundary (0, 0) */
    double max_memory_bytes;     /* 0 = derived from available memory (main sets the result) */
    int check, raw;
    int format;                  /* enum format */
    int simulated;               /* under a simulator (SMPI): asked once, by the defaults */
    const char *output;
    int list, json, version, mpi_info, help;
    int plan;                    /* --plan: print the points, measure nothing */
    long ranks;                  /* --ranks: the plan's number of ranks */
    point_set_t points;          /* --points: the entries to measure */
    char **benchmarks;           /* names, in order (a family name given is replaced by its rows) */
    int nbenchmarks;
    char **expanded;             /* the names when a family was expanded (owned), else NULL */
} options_t;

/* Returns OPT_OK, OPT_EXIT (help/list/version: nothing to measure) or
 * OPT_ERROR with a message in err. Benchmark names are checked by the caller. */
int options_parse(int argc, char **argv, options_t *o, char *err, size_t errlen);
void options_free(options_t *o);

void options_usage(void);

/* What no option can check alone: --order's list and every family's options
 * (such as --grid) against the ranks of the whole job. 0, or -1 with err. */
int options_fit_ranks(const options_t *o, int nranks, char *err, size_t errlen);

/* The context record's "options" object: every table's values, the sizes
 * expanded, the benchmarks. */
void options_record(struct json *j, const options_t *o);

#endif
