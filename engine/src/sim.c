/* SMPI detection, the host clock, and what a simulation cannot measure. */
#include "sim.h"
#include "bench.h"
#include "timer.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* smpicc's forced include (smpi_helpers.h) turns clock_gettime into the simulated
 * clock; the host's clock is libc's own. */
#ifdef clock_gettime
#undef clock_gettime
#endif

static int cached = -1;

int sim_active(void)
{
    if (cached < 0) {
        char text[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        MPI_Get_library_version(text, &len);  /* allowed before MPI_Init */
        cached = strncmp(text, "SMPI", 4) == 0;
    }
    return cached;
}

double sim_host_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void sim_sleep_until(double target_s)
{
    double left = target_s - now_s();
    if (left <= 0) return;
    struct timespec nap = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
    nanosleep(&nap, NULL);  /* smpi_nanosleep under smpicc: simulated */
}

static int checking;

void sim_set_checking(int check) { checking = check; }

#ifdef SMPI_SHARED_MALLOC
/* SMPI maps the one shared block over an allocation again and again, and keeps a part of it
 * smaller than a block private (allocated per rank, and copied by every message). Whole blocks
 * only, and large ones (the smpirun adapter's MPISCOPE_SIM_BLOCK, its smpi/shared-malloc-blocksize):
 * with SMPI's 1 MiB blocks a 256-rank allgather of 1 MiB took 66,000 mappings, past the kernel's
 * 65,530 (vm.max_map_count), and aborted. */
static size_t shared_block(void)
{
    const char *text = getenv("MPISCOPE_SIM_BLOCK");
    long block = text ? atol(text) : 0;
    return block > 0 ? (size_t)block : (size_t)1 << 20;  /* SMPI's default */
}

static size_t whole_blocks(size_t bytes)
{
    size_t b = shared_block();
    return bytes ? (bytes + b - 1) / b * b : b;
}

/* Whether every rank's mappings of these buffers would pass 80 % of the kernel's limit (SimGrid
 * and the libraries hold mappings of their own): SMPI would abort the whole run, where the
 * point can be skipped. */
static int too_many_mappings(size_t send_bytes, size_t recv_bytes)
{
    long limit = 65530;
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    if (f) {
        if (fscanf(f, "%ld", &limit) != 1) limit = 65530;
        fclose(f);
    }
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    size_t per_rank = (whole_blocks(send_bytes) + whole_blocks(recv_bytes)) / shared_block();
    return (double)ranks * (double)per_rank > 0.8 * (double)limit;
}
#endif

int sim_buffers_alloc(size_t send_bytes, size_t recv_bytes, char **send, char **recv)
{
#ifdef SMPI_SHARED_MALLOC
    if (sim_active() && !checking) {
        *send = *recv = NULL;
        if (too_many_mappings(send_bytes, recv_bytes)) return -1;
        *send = SMPI_SHARED_MALLOC(whole_blocks(send_bytes));
        *recv = SMPI_SHARED_MALLOC(whole_blocks(recv_bytes));
        if (*send && *recv) return 1;
        sim_buffers_free(*send, *recv);
        *send = *recv = NULL;
        return -1;
    }
#else
    (void)send_bytes, (void)recv_bytes, (void)send, (void)recv;
#endif
    return 0;
}

int sim_buffers_free(char *send, char *recv)
{
#ifdef SMPI_SHARED_MALLOC
    if (sim_active() && !checking) {
        if (send) SMPI_SHARED_FREE(send);
        if (recv) SMPI_SHARED_FREE(recv);
        return 1;
    }
#else
    (void)send, (void)recv;
#endif
    return 0;
}

const char *sim_skip(unsigned flags, const char *family)
{
    if (!sim_active()) return NULL;
    if (flags & BENCH_THREAD_MULTIPLE)
        return "simulated (SMPI): ranks are simulated actors, threads of a rank calling MPI are not "
               "simulated; measure threads on a real machine";
    if (strcmp(family, "hw") == 0)
        return "simulated (SMPI): the hardware rows time this host's caches and memory, not the simulated "
               "platform's; measure them on a real machine";
    return NULL;
}

void sim_context(json_t *j)
{
    if (!sim_active()) return;
    json_obj(j, "simulation");
    json_str(j, "simulator", "SMPI");
    json_str(j, "platform", getenv("MPISCOPE_PLATFORM"));  /* null: a platform mpiscope did not describe */
    json_close_obj(j);
}
