/* Start-up (osu_init, osu_hello): how long MPI_Init took on each rank, and
 * how long until a hello world had heard from every rank. One sample per rank
 * per launch: main measures it, the rows report it (BENCH_ONCE). Rows in
 * registry.c. */
#ifndef MPISCOPE_STARTUP_H
#define MPISCOPE_STARTUP_H

#include "bench.h"

/* main: this rank's seconds in MPI_Init (or MPI_Init_thread), and from before
 * it to the end of the first MPI_Barrier after it. */
void startup_record(double init_s, double hello_s);

double startup_init_once(const bench_ctx_t *c);
double startup_hello_once(const bench_ctx_t *c);
double startup_one(const bench_ctx_t *c);
double startup_zero(const bench_ctx_t *c);
void startup_setup(bench_ctx_t *c);
void startup_teardown(bench_ctx_t *c);
void startup_event(bench_ctx_t *c);
long startup_verify(const bench_ctx_t *c, long *verified);
void startup_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);

#endif
