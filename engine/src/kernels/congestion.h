/* Many pairs and congestion: osu_multi_lat, osu_latency_mp, osu_bw_fan_in,
 * osu_bw_fan_out; IMB-P2P Unirandom, Birandom, Corandom, Stencil2D,
 * Stencil3D. Rows in registry.c. */
#ifndef MPISCOPE_CONGESTION_H
#define MPISCOPE_CONGESTION_H

#include "bench.h"
#include "option_table.h"

extern const option_table_t congestion_options;

/* multi_lat: N/2 pairs (i, i + N/2) ping-pong at once */
double multi_lat_msgs(const bench_ctx_t *c);
void multi_lat_event(bench_ctx_t *c);
long multi_lat_verify(const bench_ctx_t *c, long *verified);

/* latency_mp: pingpong 0 <-> 1 while each of them has --procs forked children */
void latency_mp_setup(bench_ctx_t *c);
void latency_mp_teardown(bench_ctx_t *c);
void latency_mp_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);

/* fan_in / fan_out: N-1 ranks stream a window to rank 0 / rank 0 to each of them */
int fan_in_slots(const bench_ctx_t *c);
int fan_out_slots(const bench_ctx_t *c);
void fan_setup(bench_ctx_t *c);
void fan_teardown(bench_ctx_t *c);
double fan_bytes(const bench_ctx_t *c);
double fan_msgs(const bench_ctx_t *c);
int fan_pairs(const bench_ctx_t *c, pair_t *out);
void fan_in_event(bench_ctx_t *c);
long fan_in_verify(const bench_ctx_t *c, long *verified);
void fan_out_event(bench_ctx_t *c);
long fan_out_verify(const bench_ctx_t *c, long *verified);

/* unirandom, birandom, corandom: random partners, the same on every rank per event */
int random_slots(const bench_ctx_t *c);
double random_msgs(const bench_ctx_t *c);
double birandom_msgs(const bench_ctx_t *c);
void unirandom_event(bench_ctx_t *c);
long unirandom_verify(const bench_ctx_t *c, long *verified);
void birandom_event(bench_ctx_t *c);
long birandom_verify(const bench_ctx_t *c, long *verified);
void corandom_event(bench_ctx_t *c);
long corandom_verify(const bench_ctx_t *c, long *verified);

/* stencil2d, stencil3d: halo exchange with 4 / 6 neighbours on a periodic grid */
int stencil_slots(const bench_ctx_t *c);
double stencil_bytes(const bench_ctx_t *c);
double stencil_msgs(const bench_ctx_t *c);
void stencil_setup(bench_ctx_t *c);
void stencil_teardown(bench_ctx_t *c);
void stencil_event(bench_ctx_t *c);
long stencil_verify(const bench_ctx_t *c, long *verified);
void stencil_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);

#endif
