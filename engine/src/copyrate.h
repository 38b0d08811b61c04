/* The host's own memory-copy rate for a working set: what a bandwidth figure
 * on that working set is compared with (a figure above it is not a transfer
 * rate that could be trusted; the report marks it). */
#ifndef MPISCOPE_COPYRATE_H
#define MPISCOPE_COPYRATE_H

#include <stddef.h>

/* MB/s (bytes per us) of memcpy of working_set / 2 bytes from one half of a
 * working_set buffer to the other, the fastest of a few copies, measured once
 * per working set in a launch and remembered. 0 when it could not be measured
 * (no memory, or working_set above max_bytes). Local: no MPI call. */
double copy_rate_MBps(size_t working_set, double max_bytes);

/* The same for a working set of four times the last-level cache: a copy through
 * memory. A layout that puts every operation of an event in one place keeps its
 * working set in the cache at any size; its figures are held against this. */
double memory_copy_rate_MBps(double max_bytes);

#endif
