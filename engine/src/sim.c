/* SMPI detection, the host clock, and what a simulation cannot measure. */
#include "sim.h"
#include "bench.h"
#include "timer.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* smpicc's forced include (smpi_helpers.h) turns clock_gettime into the simulated
 * clock; the host's clock is libc's own. */
#ifdef clock_gettime
#undef clock_gettime
#endif

int sim_detect(void)
{
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(text, &len);  /* allowed before MPI_Init */
    return strncmp(text, "SMPI", 4) == 0;
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

static int sharing;

void sim_share_buffers(int share) { sharing = share; }

static char alloc_failure[200];

const char *sim_alloc_failure(void) { return alloc_failure[0] ? alloc_failure : NULL; }

#ifdef SMPI_SHARED_MALLOC
/* How SMPI shares an allocation (the smpirun adapter's MPISCOPE_SIM_SHARED, its smpi/shared-malloc):
 * "local" maps one file, shared by every allocation made at the same line of code, once per
 * allocation, lazily; "global" (SMPI's default) maps one block-sized file over the allocation block
 * by block, each block a mapping of its own, populated up front. */
static int shared_local(void)
{
    const char *text = getenv("MPISCOPE_SIM_SHARED");
    return text && strcmp(text, "local") == 0;
}

/* The block of the global mode (MPISCOPE_SIM_BLOCK, the adapter's smpi/shared-malloc-blocksize).
 * SMPI keeps a part of an allocation smaller than a block private (allocated per rank, and copied
 * by every message): the engine allocates whole blocks. With SMPI's 1 MiB blocks a 256-rank
 * allgather of 1 MiB took 66,000 mappings, past the kernel's 65,530 (vm.max_map_count), and aborted. */
static size_t shared_block(void)
{
    const char *text = getenv("MPISCOPE_SIM_BLOCK");
    long block = text ? atol(text) : 0;
    return block > 0 ? (size_t)block : (size_t)1 << 20;  /* SMPI's default */
}

static size_t whole_blocks(size_t bytes)
{
    size_t b = shared_local() ? (size_t)sysconf(_SC_PAGESIZE) : shared_block();
    return bytes ? (bytes + b - 1) / b * b : b;
}

/* Whether every rank's mappings of these buffers would pass 80 % of the kernel's limit (SimGrid
 * and the libraries hold mappings of their own): SMPI would abort the whole run, where the
 * point can be skipped, its reason naming the limit and the way past it. */
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
    size_t per_rank = shared_local() ? 2 : (whole_blocks(send_bytes) + whole_blocks(recv_bytes)) / shared_block();
    double need = (double)ranks * (double)per_rank;
    if (need <= 0.8 * (double)limit) return 0;
    if (shared_local())
        snprintf(alloc_failure, sizeof alloc_failure, "SMPI would map the payloads %.0f times, past 80 %% of "
                 "vm.max_map_count (%ld): raise it (sysctl vm.max_map_count=%.0f, as root)", need, limit, need / 0.7);
    else
        snprintf(alloc_failure, sizeof alloc_failure, "SMPI would map the payloads %.0f times, past 80 %% of "
                 "vm.max_map_count (%ld): --cfg=smpi/shared-malloc:local (a mapping a buffer), or "
                 "sysctl vm.max_map_count=%.0f as root", need, limit, need / 0.7);
    return 1;
}
#endif

#ifdef SMPI_SHARED_MALLOC
/* Shared allocations kept for the next point: SMPI maps (and populates) every block of an
 * allocation for every rank, so an allgather or alltoall that allocated ranks x size bytes a
 * point paid ranks^2 x size a point (300 of 682 host seconds at 256 ranks). A free keeps the
 * allocation; the next request that fits reuses it, a larger one releases the idle ones first. */
#define POOL 4
static struct { char *p; size_t bytes; int busy; } pool[POOL];

static void pool_release_idle(void)
{
    for (int i = 0; i < POOL; i++)
        if (pool[i].p && !pool[i].busy) {
            SMPI_SHARED_FREE(pool[i].p);
            pool[i].p = NULL;
        }
}

/* An idle kept allocation of at least bytes, now busy; NULL when none fits. */
static char *pool_reuse(size_t bytes)
{
    for (int i = 0; i < POOL; i++)
        if (pool[i].p && !pool[i].busy && pool[i].bytes >= whole_blocks(bytes)) {
            pool[i].busy = 1;
            return pool[i].p;
        }
    return NULL;
}

static char *pool_new(size_t bytes)
{
    size_t want = whole_blocks(bytes);
    for (int i = 0; i < POOL; i++)
        if (!pool[i].p) {
            pool[i].p = SMPI_SHARED_MALLOC(want);
            pool[i].bytes = want;
            pool[i].busy = pool[i].p != NULL;
            return pool[i].p;
        }
    return SMPI_SHARED_MALLOC(want);  /* more live buffers than the pool holds: not kept */
}

static void pool_give(char *p)
{
    if (!p) return;
    for (int i = 0; i < POOL; i++)
        if (pool[i].p == p) {
            pool[i].busy = 0;
            return;
        }
    SMPI_SHARED_FREE(p);
}
#endif

int sim_buffers_alloc(size_t send_bytes, size_t recv_bytes, char **send, char **recv)
{
#ifdef SMPI_SHARED_MALLOC
    if (sharing) {
        *send = *recv = NULL;
        alloc_failure[0] = 0;
        if (too_many_mappings(send_bytes, recv_bytes)) {
            pool_release_idle();
            return -1;
        }
        *send = pool_reuse(send_bytes);
        *recv = pool_reuse(recv_bytes);
        if (*send && *recv) return 1;
        /* both fresh, the idle ones released first: the mappings held are then this point's
         * alone, as too_many_mappings counted them */
        pool_give(*send);
        pool_give(*recv);
        pool_release_idle();
        *send = pool_new(send_bytes);
        *recv = pool_new(recv_bytes);
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
    if (sharing) {
        pool_give(send);
        pool_give(recv);
        return 1;
    }
#else
    (void)send, (void)recv;
#endif
    return 0;
}

const char *sim_skip(unsigned flags, const char *family)
{
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
    json_obj(j, "simulation");
    json_str(j, "simulator", "SMPI");
    json_str(j, "platform", getenv("MPISCOPE_PLATFORM"));  /* null: a platform mpiscope did not describe */
    /* what the figures depend on: the platform XML's digest and every --cfg smpirun was given
     * (MPISCOPE_SIM_DIGEST, MPISCOPE_SIM_CFG one a line, both set by the adapter) */
    json_str(j, "digest", getenv("MPISCOPE_SIM_DIGEST"));
    const char *cfg = getenv("MPISCOPE_SIM_CFG");
    if (cfg) {
        json_arr(j, "cfg");
        for (const char *s = cfg; *s;) {
            const char *nl = strchr(s, '\n');
            size_t len = nl ? (size_t)(nl - s) : strlen(s);
            char item[1024];
            snprintf(item, sizeof item, "%.*s", (int)len, s);
            if (len) json_str(j, NULL, item);
            s += len + (nl != NULL);
        }
        json_close_arr(j);
    }
    json_close_obj(j);
}
