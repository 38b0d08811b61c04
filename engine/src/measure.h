/* Measuring a plan: the selected entries in the order --points lists them
 * (else plan order), each run of one --npmin group's entries on that group's
 * communicator. */
#ifndef MPISCOPE_MEASURE_H
#define MPISCOPE_MEASURE_H

#include "plan.h"
#include "reporter.h"
#include "timing.h"

/* Collective over r->w's communicator; r's functions are called on rank 0.
 * Returns the number of points measured. */
long measure_plan(const plan_t *plan, const reporter_t *r, timing_t *t);

#endif
