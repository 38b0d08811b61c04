/* Gathers rank placement and writes the context record. */
#include "context.h"
#include "sim.h"
#include "mpicheck.h"
#include "version.h"
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Variables that tune an MPI library: recorded so results carry their settings. */
static const char *const tuning_prefixes[] = {
    "MPIR_CVAR_", "MPICH_", "OMPI_MCA_", "PMIX_MCA_", "PRTE_MCA_", "UCX_", "FI_",
    "I_MPI_", "HYDRA_", "MV2_", "PSM2_",
};

/* The clock of cpu in MHz as the kernel sees it now: cpufreq's current
 * frequency, else the "cpu MHz" of that processor in /proc/cpuinfo (x86
 * only); 0 when neither says. */
static double cpu_mhz(int cpu, char *source, size_t len)
{
    char path[96], line[256];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", cpu);
    FILE *f = fopen(path, "r");
    double khz = 0, mhz = 0;
    if (f) {
        int got = fscanf(f, "%lf", &khz);
        fclose(f);
        if (got == 1 && khz > 0) {
            snprintf(source, len, "scaling_cur_freq");
            return khz / 1000.0;
        }
    }
    if (!(f = fopen("/proc/cpuinfo", "r"))) return 0;
    int processor = -1;
    while (fgets(line, sizeof line, f)) {
        const char *colon = strchr(line, ':');
        if (!colon) continue;
        if (strncmp(line, "processor", 9) == 0) processor = atoi(colon + 1);
        else if (processor == cpu && strncmp(line, "cpu MHz", 7) == 0) {
            mhz = atof(colon + 1);
            break;
        }
    }
    fclose(f);
    if (mhz > 0) snprintf(source, len, "cpuinfo");
    return mhz > 0 ? mhz : 0;
}

/* The first line of a file without its newline ("" when it cannot be read). */
static void first_line(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    out[0] = 0;
    if (!f) return;
    if (fgets(out, (int)len, f)) out[strcspn(out, "\n")] = 0;
    fclose(f);
}

/* The CPU model as /proc/cpuinfo names it: "model name" (x86 and some Arm), "cpu model"
 * (MIPS), "cpu" (POWER), "Processor" (older Arm); else Arm's implementer and part numbers. */
static void cpu_model(char *out, size_t len)
{
    static const char *const names[] = {"model name", "cpu model", "cpu", "Processor"};
    char line[256], implementer[32] = "", part[32] = "";
    out[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    while (!out[0] && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        size_t key = (size_t)(colon - line);
        while (key > 0 && (line[key - 1] == ' ' || line[key - 1] == '\t')) key--;
        char *value = colon + 1 + strspn(colon + 1, " \t");
        value[strcspn(value, "\n")] = 0;
        if (!*value) continue;
        for (size_t n = 0; n < sizeof names / sizeof *names; n++)
            if (key == strlen(names[n]) && strncmp(line, names[n], key) == 0) snprintf(out, len, "%s", value);
        if (key == 15 && strncmp(line, "CPU implementer", key) == 0) snprintf(implementer, sizeof implementer, "%s", value);
        if (key == 8 && strncmp(line, "CPU part", key) == 0) snprintf(part, sizeof part, "%s", value);
    }
    fclose(f);
    if (!out[0] && implementer[0] && part[0]) snprintf(out, len, "implementer %s part %s", implementer, part);
}

/* What a host runs on that can change between two nights with nothing else changed: its
 * kernel, its CPU, and how cpufreq drives the clock. */
static void host_facts(rank_info_t *me)
{
    struct utsname u;
    if (uname(&u) == 0) snprintf(me->kernel, sizeof me->kernel, "%s", u.release);
    cpu_model(me->cpu_model, sizeof me->cpu_model);
    first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", me->governor, sizeof me->governor);
}

static void my_info(rank_info_t *me, int simulated)
{
    memset(me, 0, sizeof *me);
    int len = 0;
    MPI_CHECK(MPI_Get_processor_name(me->host, &len));
    me->pid = (int)getpid();
    me->cores_online = (int)sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_MASK_BYTES * 8 && c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set)) me->cpus[c / 8] |= (unsigned char)(1u << (c % 8));
    me->cpu = sched_getcpu();
    if (me->cpu >= 0) me->cpu_mhz = cpu_mhz(me->cpu, me->mhz_source, sizeof me->mhz_source);
    if (!simulated) host_facts(me);  /* a simulated host has none: the machine simulating is not it */
}

static int cpu_count(const rank_info_t *r)
{
    int n = 0;
    for (int c = 0; c < CPU_MASK_BYTES * 8; c++) n += (r->cpus[c / 8] >> (c % 8)) & 1;
    return n;
}

static void count_hosts(world_t *w);

/* Every rank's facts are gathered on rank 0 (the context record's), and only each rank's host
 * index is spread to all: an allgather of the facts cost every rank ranks x 280-300 bytes, and
 * under SMPI, where all ranks are one process, 4096 ranks held 4.6 GB and sent ranks^2
 * messages (MPICH's ring allgather) before the first point. Other ranks' facts read as zeros
 * on the other ranks. */
void world_init(world_t *w, int simulated)
{
    memset(w, 0, sizeof *w);
    w->comm = MPI_COMM_WORLD;
    w->order = "launch";
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &w->rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &w->nranks));
    rank_info_t me;
    my_info(&me, simulated);
    /* calloc: the untouched pages of the other ranks are never resident */
    w->ranks = calloc((size_t)w->nranks, sizeof *w->ranks);
    w->host_of = calloc((size_t)w->nranks, sizeof *w->host_of);
    w->launch_rank = calloc((size_t)w->nranks, sizeof *w->launch_rank);
    if (!w->ranks || !w->host_of || !w->launch_rank) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int r = 0; r < w->nranks; r++) w->launch_rank[r] = r;
    MPI_CHECK(MPI_Gather(&me, (int)sizeof me, MPI_BYTE, w->ranks, (int)sizeof me, MPI_BYTE, 0, MPI_COMM_WORLD));
    if (w->rank != 0) w->ranks[w->rank] = me;
    else count_hosts(w);
    int facts[2] = {w->nhosts, w->oversubscribed};
    MPI_CHECK(MPI_Bcast(facts, 2, MPI_INT, 0, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Bcast(w->host_of, w->nranks, MPI_INT, 0, MPI_COMM_WORLD));
    w->nhosts = facts[0];
    w->oversubscribed = facts[1];
    for (int r = 0; r < w->nranks; r++) w->ranks_on_my_host += w->host_of[r] == w->host_of[w->rank];
    timer_measure(&w->timer, simulated);
}

/* Host indices in order of first appearance, and whether a host runs more ranks than it has
 * cores (rank 0, which holds every rank's facts). */
static void count_hosts(world_t *w)
{
    int *count = calloc((size_t)w->nranks, sizeof *count);
    if (!count) MPI_Abort(MPI_COMM_WORLD, 3);
    w->nhosts = 0;
    w->oversubscribed = 0;
    for (int r = 0; r < w->nranks; r++) {
        int h = 0;
        while (h < r && strcmp(w->ranks[h].host, w->ranks[r].host) != 0) h++;
        w->host_of[r] = h == r ? w->nhosts++ : w->host_of[h];
        count[w->host_of[r]]++;
    }
    for (int r = 0; r < w->nranks; r++)
        if (count[w->host_of[r]] > w->ranks[r].cores_online) w->oversubscribed = 1;
    free(count);
}

/* Host indices renumbered in order of first appearance after the ranks moved. */
static void renumber_hosts(world_t *w)
{
    int *new_index = malloc((size_t)w->nhosts * sizeof *new_index);
    if (!new_index) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int h = 0; h < w->nhosts; h++) new_index[h] = -1;
    int next = 0;
    for (int r = 0; r < w->nranks; r++) {
        int *h = &new_index[w->host_of[r]];
        if (*h < 0) *h = next++;
        w->host_of[r] = *h;
    }
    free(new_index);
}

/* new_of[launch rank] = its rank under the order: block keeps each host's
 * ranks together, cyclic deals them across the hosts (IBM POE's task orders),
 * a list names the launch ranks in their new order. */
static int order_keys(const world_t *w, const options_t *o, int *new_of)
{
    int n = w->nranks, next = 0;
    if (strcmp(o->order, "list") == 0) {
        if (o->order_n != n) return -1;
        for (int i = 0; i < n; i++) {
            if (o->order_list[i] >= n) return -1;
            new_of[o->order_list[i]] = i;
        }
        return 0;
    }
    if (strcmp(o->order, "block") == 0) {
        for (int h = 0; h < w->nhosts; h++)
            for (int r = 0; r < n; r++)
                if (w->host_of[r] == h) new_of[r] = next++;
        return 0;
    }
    int *taken = calloc((size_t)w->nhosts, sizeof *taken);
    if (!taken) MPI_Abort(MPI_COMM_WORLD, 3);
    while (next < n)  /* one round: the next rank of every host that has one left */
        for (int h = 0; h < w->nhosts; h++) {
            int seen = 0;
            for (int r = 0; r < n; r++)
                if (w->host_of[r] == h && seen++ == taken[h]) { new_of[r] = next++; taken[h]++; break; }
        }
    free(taken);
    return 0;
}

int world_reorder(world_t *w, const options_t *o)
{
    if (!o->order) return 0;
    int n = w->nranks;
    int *new_of = malloc((size_t)n * sizeof *new_of);
    rank_info_t *ranks = malloc((size_t)n * sizeof *ranks);
    int *host_of = malloc((size_t)n * sizeof *host_of);
    if (!new_of || !ranks || !host_of) MPI_Abort(MPI_COMM_WORLD, 3);
    if (order_keys(w, o, new_of)) {  /* the plan has refused such a list already, with the reason */
        free(new_of);
        free(ranks);
        free(host_of);
        return -1;
    }
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, new_of[w->rank], &w->comm));
    MPI_CHECK(MPI_Comm_set_errhandler(w->comm, MPI_ERRORS_RETURN));
    for (int r = 0; r < n; r++) {
        ranks[new_of[r]] = w->ranks[r];
        host_of[new_of[r]] = w->host_of[r];
        w->launch_rank[new_of[r]] = r;
    }
    memcpy(w->ranks, ranks, (size_t)n * sizeof *ranks);
    memcpy(w->host_of, host_of, (size_t)n * sizeof *host_of);
    /* the facts move to the new rank 0, which writes the records */
    int root = 0;
    while (new_of[root] != 0) root++;
    if (root != 0 && (w->rank == 0 || w->rank == root)) {
        int bytes = (int)((size_t)n * sizeof *ranks);
        if (w->rank == 0) MPI_CHECK(MPI_Send(w->ranks, bytes, MPI_BYTE, root, 0, MPI_COMM_WORLD));
        else MPI_CHECK(MPI_Recv(w->ranks, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    MPI_CHECK(MPI_Comm_rank(w->comm, &w->rank));
    w->order = o->order;
    renumber_hosts(w);
    free(new_of);
    free(ranks);
    free(host_of);
    return 0;
}

void world_free(world_t *w)
{
    if (w->comm != MPI_COMM_WORLD) MPI_Comm_free(&w->comm);
    free(w->launch_rank);
    free(w->ranks);
    free(w->host_of);
}

static void library_version(char *buf, int *len, char *std, size_t stdlen)
{
    int major = 0, minor = 0;
    MPI_Get_library_version(buf, len);
    MPI_Get_version(&major, &minor);
    snprintf(std, stdlen, "%d.%d", major, minor);
    while (*len > 0 && (buf[*len - 1] == '\n' || buf[*len - 1] == ' ')) buf[--*len] = '\0';
}

void library_name(char *buf, size_t len)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "", std[16];
    int n = 0;
    library_version(lib, &n, std, sizeof std);
    size_t line = strcspn(lib, "\n");
    snprintf(buf, len, "%.*s (MPI %s)", (int)line, lib, std);
}

void mpi_info_emit(FILE *out)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "", std[16];
    int len = 0;
    library_version(lib, &len, std, sizeof std);
    json_t j = {0};
    json_begin(&j);
    json_str(&j, "mpi_library_version", lib);
    json_str(&j, "mpi_version", std);
    json_str(&j, "engine_version", ENGINE_VERSION);
    json_int(&j, "schema_version", SCHEMA_VERSION);
    json_end(&j);
    json_emit(&j, out);
    json_free(&j);
}

static int thread_requested = -1;

void context_set_thread_request(int level) { thread_requested = level; }

static const char *level_name(int level)
{
    if (level == MPI_THREAD_SINGLE) return "single";
    if (level == MPI_THREAD_FUNNELED) return "funneled";
    if (level == MPI_THREAD_SERIALIZED) return "serialized";
    if (level == MPI_THREAD_MULTIPLE) return "multiple";
    return "unknown";
}

void context_emit(FILE *out, const world_t *w, const options_t *o, int argc, char **argv)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "", std[16], stamp[32];
    int len = 0;
    library_version(lib, &len, std, sizeof std);
    time_t t = time(NULL);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));

    json_t j = {0};
    json_begin(&j);
    json_str(&j, "type", "context");
    json_int(&j, "schema_version", SCHEMA_VERSION);
    json_str(&j, "engine_version", ENGINE_VERSION);
    json_str(&j, "mpi_library_version", lib);
    json_str(&j, "mpi_version", std);
    if (o->simulated) sim_context(&j);
    json_int(&j, "world_size", w->nranks);
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    json_obj(&j, "thread_level");
    json_str(&j, "requested", thread_requested >= 0 ? level_name(thread_requested) : NULL);
    json_str(&j, "provided", level_name(provided));
    json_close_obj(&j);
    json_str(&j, "start_time", stamp);
    json_arr(&j, "hosts");
    for (int h = 0; h < w->nhosts; h++)
        for (int r = 0; r < w->nranks; r++)
            if (w->host_of[r] == h) { json_str(&j, NULL, w->ranks[r].host); break; }
    json_close_arr(&j);
    if (!o->simulated) {
        json_arr(&j, "host_facts");
        for (int h = 0; h < w->nhosts; h++)
            for (int r = 0; r < w->nranks; r++)
                if (w->host_of[r] == h) {
                    const rank_info_t *ri = &w->ranks[r];
                    json_obj(&j, NULL);
                    json_str(&j, "host", ri->host);
                    if (ri->kernel[0]) json_str(&j, "kernel", ri->kernel);
                    if (ri->cpu_model[0]) json_str(&j, "cpu_model", ri->cpu_model);
                    if (ri->governor[0]) json_str(&j, "governor", ri->governor);
                    json_close_obj(&j);
                    break;
                }
        json_close_arr(&j);
    }
    json_arr(&j, "ranks");
    for (int r = 0; r < w->nranks; r++) {
        const rank_info_t *ri = &w->ranks[r];
        json_obj(&j, NULL);
        json_int(&j, "rank", r);
        json_int(&j, "launch_rank", w->launch_rank[r]);
        json_str(&j, "host", ri->host);
        json_int(&j, "pid", ri->pid);
        json_arr(&j, "cpus");
        for (int c = 0; c < CPU_MASK_BYTES * 8; c++)
            if ((ri->cpus[c / 8] >> (c % 8)) & 1) json_int(&j, NULL, c);
        json_close_arr(&j);
        json_bool(&j, "bound", cpu_count(ri) < ri->cores_online);
        json_int(&j, "cores_online", ri->cores_online);
        if (ri->cpu >= 0) json_int(&j, "cpu", ri->cpu);
        if (ri->cpu_mhz > 0) {
            json_num(&j, "cpu_mhz", ri->cpu_mhz);
            json_str(&j, "cpu_mhz_source", ri->mhz_source);
        }
        json_close_obj(&j);
    }
    json_close_arr(&j);
    json_str(&j, "order", w->order);
    json_arr(&j, "ranks_by_host");  /* which ranks share a host, in the numbering above */
    for (int h = 0; h < w->nhosts; h++) {
        json_arr(&j, NULL);
        for (int r = 0; r < w->nranks; r++)
            if (w->host_of[r] == h) json_int(&j, NULL, r);
        json_close_arr(&j);
    }
    json_close_arr(&j);
    json_int(&j, "cores_online", w->ranks[0].cores_online);
    json_bool(&j, "oversubscribed", w->oversubscribed);
    json_obj(&j, "timer");
    json_str(&j, "source", TIMER_SOURCE);
    json_num(&j, "resolution_s", w->timer.resolution_s);
    json_num(&j, "tick_s", w->timer.tick_s);
    json_num(&j, "min_step_s", w->timer.min_step_s);
    json_num(&j, "overhead_s", w->timer.overhead_s);
    json_num(&j, "mpi_wtick_s", w->timer.mpi_wtick_s);
    json_num(&j, "mpi_wtime_overhead_s", w->timer.mpi_wtime_overhead_s);
    json_bool(&j, "mpi_wtime_is_global", w->timer.mpi_wtime_is_global);
    json_close_obj(&j);
    options_record(&j, o);
    json_obj(&j, "env");
    for (char **e = environ; *e; e++)
        for (size_t p = 0; p < sizeof tuning_prefixes / sizeof *tuning_prefixes; p++)
            if (strncmp(*e, tuning_prefixes[p], strlen(tuning_prefixes[p])) == 0) {
                const char *eq = strchr(*e, '=');
                if (!eq) break;
                char name[256];
                snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
                json_str(&j, name, eq + 1);
                break;
            }
    json_close_obj(&j);
    json_arr(&j, "argv");
    for (int i = 0; i < argc; i++) json_str(&j, NULL, argv[i]);
    json_close_arr(&j);
    json_end(&j);
    json_emit(&j, out);
    json_free(&j);
}
