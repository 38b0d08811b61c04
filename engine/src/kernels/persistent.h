/* Persistent point-to-point (MPI_Send_init / MPI_Recv_init / MPI_Start(all)):
 * pingpong_persistent and bw_persistent, the twins of pingpong and bw with
 * requests set up once and restarted for every message. Rows in registry.c. */
#ifndef MPISCOPE_PERSISTENT_H
#define MPISCOPE_PERSISTENT_H

#include "bench.h"

void persistent_setup(bench_ctx_t *c);
void persistent_teardown(bench_ctx_t *c);

void pingpong_persistent_event(bench_ctx_t *c);
void bw_persistent_event(bench_ctx_t *c);

#endif
