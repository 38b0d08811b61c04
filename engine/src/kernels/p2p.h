/* Point-to-point kernels; their registry rows are in registry.c. */
#ifndef MPISCOPE_P2P_H
#define MPISCOPE_P2P_H

#include "bench.h"
#include "option_table.h"

/* --window: messages in flight for the streaming benchmarks (bw, bibw, msgrate). */
extern const option_table_t p2p_options;
extern long p2p_window;
/* --buffers: -1 (unset: single), 0 single, 1 multiple */
extern int p2p_buffers;

struct json;
struct point;
struct world;
/* --buffers for bw, bibw and msgrate: allocation, --check input, the working
 * set per stream (and the streams a figure adds up) and the record's fields. */
void p2p_stream_buffers(const bench_ctx_t *c, size_t *send, size_t *recv);
void msgrate_buffers(const bench_ctx_t *c, size_t *send, size_t *recv);
void p2p_stream_fill(bench_ctx_t *c);
size_t bw_working_set(const bench_ctx_t *c, int *streams);
size_t bibw_working_set(const bench_ctx_t *c, int *streams);
size_t msgrate_working_set(const bench_ctx_t *c, int *streams);
void stream_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);
void msgrate_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);

int p2p_window_slots(const bench_ctx_t *c);
int p2p_two_slots(const bench_ctx_t *c);
double p2p_one(const bench_ctx_t *c);
double p2p_two(const bench_ctx_t *c);
double p2p_window_ops(const bench_ctx_t *c);
double p2p_size(const bench_ctx_t *c);
double p2p_twice_size(const bench_ctx_t *c);
double p2p_four_times_size(const bench_ctx_t *c);
double p2p_ranks(const bench_ctx_t *c);
int p2p_first_two_active(const bench_ctx_t *c);
int p2p_pair01(const bench_ctx_t *c, pair_t *out);
int p2p_ring_pairs(const bench_ctx_t *c, pair_t *out);

void pingpong_event(bench_ctx_t *c);
long pingpong_verify(const bench_ctx_t *c, long *verified);

void pingping_event(bench_ctx_t *c);
long pingping_verify(const bench_ctx_t *c, long *verified);

void bw_event(bench_ctx_t *c);
long bw_verify(const bench_ctx_t *c, long *verified);

void bibw_event(bench_ctx_t *c);
long bibw_verify(const bench_ctx_t *c, long *verified);

double msgrate_bytes(const bench_ctx_t *c);
double msgrate_msgs(const bench_ctx_t *c);
double window_msgs(const bench_ctx_t *c);
double bibw_msgs(const bench_ctx_t *c);
int msgrate_active(const bench_ctx_t *c);
int msgrate_pairs(const bench_ctx_t *c, pair_t *out);
void msgrate_event(bench_ctx_t *c);
long msgrate_verify(const bench_ctx_t *c, long *verified);

void ring_event(bench_ctx_t *c);
void sendrecv_event(bench_ctx_t *c);
long from_left_verify(const bench_ctx_t *c, long *verified);

void exchange_event(bench_ctx_t *c);
long exchange_verify(const bench_ctx_t *c, long *verified);

#endif
