/* Where records go: a small struct of functions (context, point, skip, end)
 * with a JSON Lines implementation (records.c) and a human table (table.c),
 * chosen once from --format. Only rank 0 calls them. The watchdog writes its
 * time-out line on its own (watchdog.c): a signal handler cannot come here. */
#ifndef MPISCOPE_REPORTER_H
#define MPISCOPE_REPORTER_H

#include "bench.h"
#include "context.h"
#include "options.h"
#include "plan.h"
#include "timing.h"
#include <stdio.h>

typedef struct reporter reporter_t;

struct reporter {
    void (*context)(const reporter_t *r, int argc, char **argv);
    /* A measured point: its plan entry, the kernel's context (state still set up) and the figures. */
    void (*point)(const reporter_t *r, const plan_entry_t *e, const bench_ctx_t *c, const point_t *p);
    void (*skip)(const reporter_t *r, const plan_entry_t *e, const char *reason);
    /* The launch's end: every rank's disturbance counters over the whole launch (nranks of w). */
    void (*end)(const reporter_t *r, long points, double elapsed_s, const disturb_t *ranks);
    FILE *out;
    const options_t *o;
    const world_t *w;
};

reporter_t jsonl_reporter(FILE *out, const options_t *o, const world_t *w);
reporter_t table_reporter(FILE *out, const options_t *o, const world_t *w);

#endif
