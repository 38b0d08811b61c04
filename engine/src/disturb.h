/* What can disturb a measurement, counted per rank over one point: context
 * switches (getrusage), CPU steal and the run queue (Linux /proc; elsewhere,
 * SimGrid's smpicc included, they read as unknown). */
#ifndef MPISCOPE_DISTURB_H
#define MPISCOPE_DISTURB_H

#include <mpi.h>

enum { DISTURB_FIELDS = 5 };

/* One rank's counters; a figure /proc cannot give is NAN. Doubles, so that
 * rank 0 gathers every rank's in one message. */
typedef struct disturb {
    double nvcsw;        /* voluntary context switches */
    double nivcsw;       /* involuntary context switches: the kernel took the CPU away */
    double steal_s;      /* host-wide CPU time stolen by a hypervisor, over all CPUs */
    double run_queue;    /* runnable tasks on the host (procs_running), the larger of begin and end */
    double loadavg_1m;   /* the host's one-minute load average at the end */
} disturb_t;

/* This rank's counters now. */
void disturb_read(disturb_t *d);

/* Over one point: end minus begin for the counters, the larger reading for the
 * run queue, the end's load average. */
void disturb_delta(const disturb_t *begin, const disturb_t *end, disturb_t *delta);

/* Every rank's delta to rank 0's all (nranks entries); collective over comm. */
void disturb_gather(const disturb_t *mine, disturb_t *all, MPI_Comm comm);

#endif
