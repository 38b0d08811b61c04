/* Turns a hang into a reported time-out: armed around each point on every
 * rank; a limit that passes while the point still progresses (its ranks
 * finish events) is extended, and only a limit with no progress at all is a
 * hang: rank 0 writes a prepared `timeout` record and every rank exits with
 * status 124 (the launcher then ends the job). */
#ifndef MPISCOPE_WATCHDOG_H
#define MPISCOPE_WATCHDOG_H

#include <signal.h>
#include <stdio.h>

/* What the alarm reads to tell a slow point from a stuck one: the timing core
 * bumps it after every finished event and clock-sync exchange. Only this
 * thread writes it; the signal handler only compares it. */
extern volatile sig_atomic_t watchdog_progress_count;

static inline void watchdog_progress(void)
{
    /* wraps within int's positive range (no signed overflow); the alarm only asks "moved?" */
    watchdog_progress_count = (watchdog_progress_count + 1) & 0x3fffffff;
}

void watchdog_init(FILE *out, int rank, int simulated);
/* variant: the plan entry's label, or NULL for a row without variants. extends:
 * progress re-arms the limit (a derived limit); 0: the limit is a hard one
 * (--timeout as the user gave it). */
void watchdog_arm(const char *bench, long size, int ranks, const char *variant, double limit_s, int extends);
/* A rank that takes no part in the current phase waits on those that do: it
 * finishes no events of its own, so its alarm does not judge, it re-arms. */
void watchdog_bystander(int yes);
/* Returns how many times this rank's limit passed while the point progressed. */
int watchdog_disarm(void);

#endif
