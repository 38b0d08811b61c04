/* Turns a hang into a reported time-out: armed around each point on every
 * rank; on expiry rank 0 writes a prepared `timeout` record and every rank
 * exits with status 124 (the launcher then ends the job). */
#ifndef MPISCOPE_WATCHDOG_H
#define MPISCOPE_WATCHDOG_H

#include <stdio.h>

void watchdog_init(FILE *out, int rank);
/* variant: the plan entry's label, or NULL for a row without variants. */
void watchdog_arm(const char *bench, long size, int ranks, const char *variant, double limit_s);
void watchdog_disarm(void);

#endif
