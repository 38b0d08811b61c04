/* The machine-state control: a few milliseconds at the start of every launch measuring what
 * no option, environment or library of the run can change (a fixed compute loop, a fixed
 * memory copy, a cache line handed between two cores through shared memory), and, for the
 * record only, an MPI pingpong of 8 B, which the library's configuration does change. A run
 * measured in another state of the machine is then seen as such (docs/engine.md, "The
 * control record"; docs/statistics.md, "The machine-state control"). */
#ifndef MPISCOPE_CONTROL_H
#define MPISCOPE_CONTROL_H

#include "context.h"
#include <stdio.h>

/* Every rank of w calls it; rank 0 writes the control record to out (NULL: measured, not
 * written, so that every format costs the same). */
void control_run(const world_t *w, FILE *out, int simulated);

#endif
