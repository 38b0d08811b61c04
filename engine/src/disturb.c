/* Reads the counters of disturb.h. Linux-only sources are guarded so that
 * the engine still builds, and records unknowns, where /proc is absent. */
#include "disturb.h"
#include "mpicheck.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#ifdef __linux__
/* The steal column of /proc/stat's "cpu" line (all CPUs) in seconds, and
 * its procs_running line. */
static void read_proc_stat(double *steal_s, double *running)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return;
    char line[512];
    unsigned long long v[8];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "cpu ", 4) == 0 &&
            sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                   &v[5], &v[6], &v[7]) == 8) {
            long hz = sysconf(_SC_CLK_TCK);
            if (hz > 0) *steal_s = (double)v[7] / (double)hz;
        } else if (strncmp(line, "procs_running ", 14) == 0) {
            *running = (double)atoll(line + 14);
        }
    }
    fclose(f);
}

static double read_loadavg(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double load = NAN;
    if (f) {
        if (fscanf(f, "%lf", &load) != 1) load = NAN;
        fclose(f);
    }
    return load;
}
#endif

void disturb_read(disturb_t *d)
{
    struct rusage ru;
    d->nvcsw = d->nivcsw = d->steal_s = d->run_queue = d->loadavg_1m = NAN;
    /* RUSAGE_THREAD where there is one: under SimGrid every rank is a thread of one process */
#ifdef RUSAGE_THREAD
    int who = RUSAGE_THREAD;
#else
    int who = RUSAGE_SELF;
#endif
    if (getrusage(who, &ru) == 0) {
        d->nvcsw = (double)ru.ru_nvcsw;
        d->nivcsw = (double)ru.ru_nivcsw;
    }
#ifdef __linux__
    read_proc_stat(&d->steal_s, &d->run_queue);
    d->loadavg_1m = read_loadavg();
#endif
}

void disturb_delta(const disturb_t *begin, const disturb_t *end, disturb_t *delta)
{
    delta->nvcsw = end->nvcsw - begin->nvcsw;
    delta->nivcsw = end->nivcsw - begin->nivcsw;
    delta->steal_s = end->steal_s - begin->steal_s;
    delta->run_queue = fmax(begin->run_queue, end->run_queue);  /* fmax ignores one NAN */
    delta->loadavg_1m = end->loadavg_1m;
}

void disturb_gather(const disturb_t *mine, disturb_t *all, MPI_Comm comm)
{
    double send[DISTURB_FIELDS] = {mine->nvcsw, mine->nivcsw, mine->steal_s, mine->run_queue, mine->loadavg_1m};
    int rank = 0, n = 0;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    MPI_CHECK(MPI_Comm_size(comm, &n));
    double *recv = rank == 0 ? malloc((size_t)n * DISTURB_FIELDS * sizeof *recv) : NULL;
    if (rank == 0 && !recv) MPI_Abort(comm, 3);
    MPI_CHECK(MPI_Gather(send, DISTURB_FIELDS, MPI_DOUBLE, recv, DISTURB_FIELDS, MPI_DOUBLE, 0, comm));
    if (rank != 0) return;
    for (int r = 0; r < n; r++) {
        const double *x = recv + (size_t)r * DISTURB_FIELDS;
        all[r] = (disturb_t){x[0], x[1], x[2], x[3], x[4]};
    }
    free(recv);
}
