/* LogGP overheads, the netgauge way: the time a rank is busy posting a send
 * (overhead_send) and completing a receive whose message has already arrived
 * (overhead_recv). Registry rows in registry.c. */
#ifndef MPISCOPE_LOGGP_H
#define MPISCOPE_LOGGP_H

#include "bench.h"

void overhead_send_event(bench_ctx_t *c);
long overhead_send_verify(const bench_ctx_t *c, long *verified);

void overhead_recv_setup(bench_ctx_t *c);
void overhead_recv_event(bench_ctx_t *c);
void overhead_recv_teardown(bench_ctx_t *c);
long overhead_recv_verify(const bench_ctx_t *c, long *verified);

#endif
