/* Running under a simulator (SimGrid's SMPI, found by its library version
 * string at run time): what the engine does differently there, and the host's
 * own clock, since under SMPI every clock the program reads is simulated. */
#ifndef MPISCOPE_SIM_H
#define MPISCOPE_SIM_H

#include "json.h"
#include <stddef.h>

/* The watchdog's least host time for a point under simulation (without --timeout). */
#define SIM_WATCHDOG_FLOOR_S 600.0

/* 1 when the MPI library is SMPI (callable before and after MPI_Init). */
int sim_active(void);

/* The host's monotonic clock in seconds: under SMPI, clock_gettime is the simulated one. */
double sim_host_now_s(void);

/* Sleep until the (simulated) clock reads target_s: under SMPI a sleep is exact and
 * free, where a spin on the clock advances simulated time by tiny injected steps. */
void sim_sleep_until(double target_s);

/* Why a benchmark is skipped in a simulation, or NULL when it is measured there. */
const char *sim_skip(unsigned flags, const char *family);

/* The context record's "simulation" object (nothing when not simulated): the simulator and
 * the platform as mpiscope described it (MPISCOPE_PLATFORM, set by its smpirun adapter). */
void sim_context(json_t *j);

#endif
