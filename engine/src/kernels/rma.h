/* One-sided communication (RMA): the OSU one-sided set and IMB-RMA on one
 * kernel. A row names an operation (put, get, accumulate, get_accumulate,
 * fetch_and_op, compare_and_swap), a pattern of origins and targets, and how
 * many operations one epoch holds; the synchronisation mode (--rma-sync, one
 * labelled variant per mode) and the window kind (--rma-win) are options.
 * Rows in registry.c; docs/benchmarks-rma.md says what each replaces. */
#ifndef MPISCOPE_RMA_H
#define MPISCOPE_RMA_H

#include "bench.h"
#include "option_table.h"

/* --rma-sync LIST, --rma-win KIND, --rma-ops N */
extern const option_table_t rma_options;

/* One variant per synchronisation mode of --rma-sync, labelled by its name. */
int rma_variants(int nranks);
void rma_variant_label(int nranks, int variant, char *buf, size_t len);
/* Why a mode does not apply to a row (truly_passive_put: the active-target modes). */
const char *rma_variant_skip(const bench_t *b, int variant, long size, int nranks, char *why, size_t len);

int rma_pair_active(const bench_ctx_t *c);
int rma_pairs(const bench_ctx_t *c, pair_t *out);
int rma_recv_slots(const bench_ctx_t *c);
void rma_buffers(const bench_ctx_t *c, size_t *send, size_t *recv);
size_t rma_working_set(const bench_ctx_t *c, int *streams);
double rma_ops(const bench_ctx_t *c);          /* operations per event (one epoch) */
double rma_bytes(const bench_ctx_t *c);        /* bytes one operation moves, over its targets */
double rma_msgs(const bench_ctx_t *c);         /* operations per event, for the message rate */
void rma_setup(bench_ctx_t *c);
void rma_event(bench_ctx_t *c);
void rma_teardown(bench_ctx_t *c);
void rma_fill(bench_ctx_t *c);
long rma_verify(const bench_ctx_t *c, long *verified);
void rma_calibrate(bench_ctx_t *c, double phase0_event_s);
void rma_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);

#endif
