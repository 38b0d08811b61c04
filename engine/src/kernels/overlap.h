/* The compute phase that nonblocking rows overlap with their communication
 * (IMB-NBC's three phases: pure, compute alone, overlapped) and the "overlap"
 * object it gives: shared by the nbc, persistent, neighbor and rma rows. */
#ifndef MPISCOPE_OVERLAP_H
#define MPISCOPE_OVERLAP_H

#include <mpi.h>

struct json;
struct point;

/* The compute iterations that take about `seconds` on this core. */
long overlap_compute_iters(double seconds);
/* The compute itself, with `tests` MPI_Test calls on req spread through it (req NULL: none). */
void overlap_compute(long iters, int tests, MPI_Request *req);
/* The point's "overlap" object, from the three phases' medians (nothing with fewer phases). */
void overlap_record(const struct point *p, int tests, long compute_iters, struct json *j);

#endif
