/* The hardware's own limit for on-node communication: single-core memcpy
 * bandwidth, core-to-core cache-line latency, and one core's local reduction
 * (gamma of the collective models). Registry rows in registry.c. */
#ifndef MPISCOPE_HW_H
#define MPISCOPE_HW_H

#include "bench.h"

int hw_rank0_active(const bench_ctx_t *c);

void memcpy_event(bench_ctx_t *c);
long memcpy_verify(const bench_ctx_t *c, long *verified);

void reduce_local_event(bench_ctx_t *c);
long reduce_local_verify(const bench_ctx_t *c, long *verified);

void cacheline_setup(bench_ctx_t *c);
void cacheline_event(bench_ctx_t *c);
void cacheline_teardown(bench_ctx_t *c);
long cacheline_verify(const bench_ctx_t *c, long *verified);
void cacheline_buffers(const bench_ctx_t *c, size_t *send, size_t *recv);

#endif
