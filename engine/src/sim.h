/* Running under a simulator (SimGrid's SMPI, found by its library version
 * string at run time): what the engine does differently there, and the host's
 * own clock, since under SMPI every clock the program reads is simulated.
 * Whether it runs simulated is asked once, at start-up (options_t.simulated);
 * the other files are told, through the options or a parameter. */
#ifndef MPISCOPE_SIM_H
#define MPISCOPE_SIM_H

#include "json.h"
#include <stddef.h>

/* The watchdog's least host time for a point under simulation (without --timeout). */
#define SIM_WATCHDOG_FLOOR_S 600.0

/* The defaults of --min-reps and --warmup under simulation (a flag given wins). */
#define SIM_MIN_REPS 6
#define SIM_WARMUP 1
/* The default of --stop-identical under simulation: a deterministic simulator gives a point's
 * every sample the same simulated time, so a second one equal to the first says all 6 would. */
#define SIM_STOP_IDENTICAL 2

/* 1 when the MPI library is SMPI (callable before MPI_Init): the options' defaults ask, once. */
int sim_detect(void);

/* The host's monotonic clock in seconds: under SMPI, clock_gettime is the simulated one. */
double sim_host_now_s(void);

/* Sleep until the (simulated) clock reads target_s: under SMPI a sleep is exact and
 * free, where a spin on the clock advances simulated time by tiny injected steps. */
void sim_sleep_until(double target_s);

/* Under SMPI (and without --check, which must see each rank's own bytes), payload buffers of
 * every rank share the same pages (SMPI_SHARED_MALLOC): thousands of simulated ranks then fit
 * in the host's memory. 1 when it allocated both, 0 when the caller allocates as usual (not
 * shared), -1 when it failed. */
int sim_buffers_alloc(size_t send_bytes, size_t recv_bytes, char **send, char **recv);
/* 1 when the buffers were sim_buffers_alloc's (and are freed now). */
int sim_buffers_free(char *send, char *recv);
/* main, before measuring: whether the payload buffers are shared (simulated, without --check). */
void sim_share_buffers(int share);
/* Why the last sim_buffers_alloc failed (the mappings it would take, the limit and the fix),
 * or NULL when it did not say. */
const char *sim_alloc_failure(void);

/* Why a benchmark is skipped in a simulation, or NULL when it is measured there (ask only when simulated). */
const char *sim_skip(unsigned flags, const char *family);

/* The context record's "simulation" object (written only when simulated): the simulator and
 * the platform as mpiscope described it (MPISCOPE_PLATFORM, set by its smpirun adapter), the
 * platform XML's digest and the --cfg options (MPISCOPE_SIM_DIGEST, MPISCOPE_SIM_CFG). */
void sim_context(json_t *j);

#endif
