/* Threads (osu_latency_mt, IMB-MT): ranks 0 and 1 each run --threads threads
 * that ping-pong at once, which needs MPI_THREAD_MULTIPLE. Rows in registry.c. */
#ifndef MPISCOPE_THREADS_H
#define MPISCOPE_THREADS_H

#include "bench.h"
#include "option_table.h"

extern const option_table_t threads_options;

/* main, before MPI_Init when a selected row is BENCH_THREAD_MULTIPLE: the level
 * to request (--thread-level, MPI_THREAD_MULTIPLE by default). */
int threads_requested_level(void);
/* main, after MPI_Init_thread: the level the library provided. */
void threads_set_provided(int level);
const char *thread_level_name(int level);
const char *threads_level_name_provided(void);

/* --threads */
long threads_per_rank(void);

/* A pool of n threads (the caller is thread 0): mt_pool_run has every thread
 * run job(c, k) once, at once, and returns when all are done. */
typedef struct mt_pool mt_pool_t;
typedef void (*mt_job_t)(bench_ctx_t *c, int thread);
mt_pool_t *mt_pool_start(bench_ctx_t *c, int n, mt_job_t job);
void mt_pool_run(mt_pool_t *p, bench_ctx_t *c);
void mt_pool_stop(mt_pool_t *p);

int threads_slots(const bench_ctx_t *c);
double threads_msgs(const bench_ctx_t *c);
double threads_ops(const bench_ctx_t *c);
void threads_setup(bench_ctx_t *c);
void threads_teardown(bench_ctx_t *c);
void latency_mt_event(bench_ctx_t *c);
long latency_mt_verify(const bench_ctx_t *c, long *verified);
const char *threads_plan_skip(const bench_t *b, long size, int nranks, char *why, size_t len);
void threads_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);

#endif
