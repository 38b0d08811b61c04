/* The job as the engine sees it (world_t): its ranks in --order's numbering, hosts, cores and
 * timer facts; context.c finds them (world_init) and writes them in the context record. */
#ifndef MPISCOPE_WORLD_H
#define MPISCOPE_WORLD_H

#include "timer.h"
#include <mpi.h>

enum { CPU_MASK_BYTES = 128 };

typedef struct rank_info {
    char host[MPI_MAX_PROCESSOR_NAME];
    int pid;
    int cores_online;
    unsigned char cpus[CPU_MASK_BYTES];  /* affinity bit mask */
    int cpu;                 /* the CPU it ran on at the start (-1: unknown) */
    double cpu_mhz;          /* that CPU's clock then (0: unknown) */
    char mhz_source[24];     /* where cpu_mhz came from: scaling_cur_freq or cpuinfo */
    char kernel[65];         /* its host's kernel release (uname) */
    char cpu_model[96];      /* its host's CPU model (/proc/cpuinfo) */
    char governor[24];       /* its host's cpufreq governor of cpu0 ("": none) */
} rank_info_t;

typedef struct world {
    MPI_Comm comm;           /* the ranks in --order's numbering (MPI_COMM_WORLD as launched) */
    const char *order;       /* launch, block, cyclic or list */
    int *launch_rank;        /* each rank's rank in MPI_COMM_WORLD */
    int rank, nranks;
    rank_info_t *ranks;      /* every rank's on rank 0; elsewhere only its own (the others zeros) */
    int *host_of;            /* host index of each rank */
    int nhosts;
    int ranks_on_my_host;
    int oversubscribed;      /* some host runs more ranks than it has cores */
    timer_facts_t timer;
} world_t;

static inline int same_host(const world_t *w, int a, int b) { return w->host_of[a] == w->host_of[b]; }

#endif
