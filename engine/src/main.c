/* mpiscope-engine: parse, describe the job, measure every point, finish. */
#include "bench.h"
#include "buffers.h"
#include "context.h"
#include "mpicheck.h"
#include "options.h"
#include "records.h"
#include "timer.h"
#include "timing.h"
#include "version.h"
#include "watchdog.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Before MPI_Init only the launcher's environment says which process is rank 0. */
static int launcher_rank(void)
{
    static const char *const vars[] = {"PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v) return atoi(v);
    }
    return 0;
}

static void list_registry(int json)
{
    if (!json) {
        printf("%-10s %-8s %-9s %s\n", "name", "family", "min ranks", "what it measures");
        for (int i = 0; i < registry_size; i++)
            printf("%-10s %-8s %-9d %s\n", registry[i]->name, registry[i]->family, registry[i]->min_ranks,
                   registry[i]->summary);
        return;
    }
    json_t j = {0};
    printf("[");
    for (int i = 0; i < registry_size; i++) {
        const bench_t *b = registry[i];
        json_begin(&j);
        json_str(&j, "name", b->name);
        json_str(&j, "family", b->family);
        json_str(&j, "summary", b->summary);
        json_int(&j, "min_ranks", b->min_ranks);
        json_bool(&j, "even_ranks", (b->flags & BENCH_EVEN_RANKS) != 0);
        json_bool(&j, "half_round_trip", (b->flags & BENCH_HALF_RTT) != 0);
        json_str(&j, "sample_from", (b->flags & BENCH_SAMPLE_ROOT) ? "rank0" : "max_over_ranks");
        json_str(&j, "sync", (b->flags & BENCH_SYNC_BARRIER) ? "barrier" : "none");
        json_bool(&j, "message_rate", b->msgs_per_event != NULL);
        json_end(&j);
        printf("%s%s", i ? ",\n " : "", j.buf);
    }
    printf("]\n");
    json_free(&j);
}

/* Handles --help, --list, --version, --mpi-info and option errors, none of
 * which needs MPI_Init. Returns the exit status, or -1 to go on measuring. */
static int before_mpi(int argc, char **argv, options_t *o)
{
    char err[512] = "";
    int rc = options_parse(argc, argv, o, err, sizeof err);
    int talk = launcher_rank() == 0;
    if (rc == OPT_ERROR) {
        if (talk) fprintf(stderr, "mpiscope-engine: error: %s\n", err);
        return 2;
    }
    if (rc == OPT_EXIT) {
        if (!talk) return 0;
        if (o->help) options_usage();
        else if (o->version) printf("mpiscope-engine %s (schema %d)\n", ENGINE_VERSION, SCHEMA_VERSION);
        else if (o->mpi_info) mpi_info_emit(stdout);
        else list_registry(o->json);
        return 0;
    }
    for (int i = 0; i < o->nbenchmarks; i++)
        if (!bench_find(o->benchmarks[i])) {
            if (talk)
                fprintf(stderr, "mpiscope-engine: error: unknown benchmark '%s' (--list shows them)\n",
                        o->benchmarks[i]);
            return 2;
        }
    return -1;
}

/* Problems every rank can see alike, so every rank stops alike. */
static int job_fits(const options_t *o, const world_t *w)
{
    for (int i = 0; i < o->nbenchmarks; i++) {
        const bench_t *b = bench_find(o->benchmarks[i]);
        const char *why = NULL;
        if (w->nranks < b->min_ranks) why = "ranks";
        else if ((b->flags & BENCH_EVEN_RANKS) && w->nranks % 2) why = "even";
        else if (b->flags & BENCH_DOUBLES)
            for (size_t s = 0; s < o->sizes.n && !why; s++)
                if (o->sizes.v[s] % 8) why = "doubles";
        if (!why) continue;
        if (w->rank == 0) {
            if (why[0] == 'r')
                fprintf(stderr, "mpiscope-engine: error: %s needs at least %d ranks, this job has %d: "
                        "run it with mpiexec -n %d\n", b->name, b->min_ranks, w->nranks, b->min_ranks);
            else if (why[0] == 'e')
                fprintf(stderr, "mpiscope-engine: error: %s needs an even number of ranks, this job has %d\n",
                        b->name, w->nranks);
            else
                fprintf(stderr, "mpiscope-engine: error: %s moves 8-byte doubles: every size must be a "
                        "multiple of 8 bytes (use --units words)\n", b->name);
        }
        return 0;
    }
    return 1;
}

/* The watchdog's limit: --timeout, or generous multiples of what this point
 * should take judging by the previous point of the same benchmark. */
static double watchdog_limit(const options_t *o, long size, long prev_size, double prev_event_s, long warmup)
{
    if (o->timeout_s > 0) return o->timeout_s;
    double est = 0.01;
    if (prev_event_s > 0) est = prev_event_s * (prev_size > 0 && size > prev_size ? (double)size / (double)prev_size : 1.0);
    double work = (double)(warmup + 3 + o->reps) * est * 4.0;
    double limit = 3.0 * o->max_time_s + work;
    /* with nothing measured yet only a generous floor is safe */
    double floor_s = prev_event_s > 0 ? 2.0 : 10.0;
    return limit > floor_s ? limit : floor_s;
}

static long measure(FILE *out, const options_t *o, const world_t *w, timing_t *t, double max_memory)
{
    long points = 0;
    for (int bi = 0; bi < o->nbenchmarks; bi++) {
        const bench_t *b = bench_find(o->benchmarks[bi]);
        long prev_size = 0;
        double prev_event_s = 0;
        for (size_t si = 0; si < o->sizes.n; si++) {
            bench_ctx_t c = {.comm = MPI_COMM_WORLD, .rank = w->rank, .nranks = w->nranks,
                             .size = o->sizes.v[si], .window = o->window,
                             .study = {o->niter, o->ncompute_a, o->ncompute_b, o->nblock}};
            int slots = b->recv_slots ? b->recv_slots(&c) : 1;
            /* OSU shares one receive buffer across a window; we keep slots apart up to 64 MiB */
            long cap = c.size > 0 ? (64L << 20) / c.size : slots;
            c.rslots = slots < cap ? slots : (cap > 0 ? (int)cap : 1);
            c.rslot = (size_t)c.size;
            long off_cache = o->off_cache_bytes < 0 ? last_level_cache_bytes() : o->off_cache_bytes;
            size_t need = buffers_need((size_t)c.size, (size_t)c.size * (size_t)c.rslots, off_cache);
            int too_big = (double)need > max_memory, any_too_big = 0;
            MPI_CHECK(MPI_Allreduce(&too_big, &any_too_big, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
            if (any_too_big) {
                char why[200];
                snprintf(why, sizeof why, "needs %.0f MiB per rank, more than the limit of %.0f MiB (--max-memory)",
                         (double)need / 1048576.0, max_memory / 1048576.0);
                if (w->rank == 0) record_skip(out, o, b, c.size, why);
                continue;
            }
            buffers_t bufs;
            int failed = buffers_alloc(&bufs, (size_t)c.size, (size_t)c.size * (size_t)c.rslots, off_cache), any_failed = 0;
            MPI_CHECK(MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
            if (any_failed) {
                if (!failed) buffers_free(&bufs);
                if (w->rank == 0) record_skip(out, o, b, c.size, "could not allocate the buffers");
                continue;
            }
            if (b->setup) b->setup(&c);
            long warmup = o->warmup > 1000 ? o->warmup : 1000;
            watchdog_arm(b->name, c.size, w->nranks, watchdog_limit(o, c.size, prev_size, prev_event_s, warmup));
            point_t p;
            time_point(t, b, &c, &bufs, o, &p);
            watchdog_disarm();
            if (b->teardown) b->teardown(&c);
            buffers_free(&bufs);
            if (w->rank == 0) record_point(out, o, w, b, &c, &p);
            points++;
            prev_size = c.size;
            prev_event_s = p.event_median_s;
        }
    }
    return points;
}

int main(int argc, char **argv)
{
    options_t o;
    int status = before_mpi(argc, argv, &o);
    if (status >= 0) return status;

    MPI_Init(&argc, &argv);
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    double start = now_s();
    world_t w;
    world_init(&w);

    FILE *out = stdout;
    int open_failed = 0;
    if (w.rank == 0 && strcmp(o.output, "-") != 0 && !(out = fopen(o.output, "w"))) {
        fprintf(stderr, "mpiscope-engine: error: cannot write --output '%s'\n", o.output);
        open_failed = 1;
    }
    MPI_CHECK(MPI_Bcast(&open_failed, 1, MPI_INT, 0, MPI_COMM_WORLD));
    timing_t t;
    int no_memory = timing_init(&t, &o) != 0, any_no_memory = 0;
    MPI_CHECK(MPI_Allreduce(&no_memory, &any_no_memory, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    if (any_no_memory && w.rank == 0)
        fprintf(stderr, "mpiscope-engine: error: no memory for %ld samples: lower --max-reps or --reps\n", t.capacity);
    if (open_failed || any_no_memory || !job_fits(&o, &w)) {
        MPI_Finalize();
        return 2;
    }

    double max_memory = o.max_memory_bytes > 0 ? o.max_memory_bytes
                                               : 0.8 * available_memory_bytes() / w.ranks_on_my_host;
    if (w.rank == 0) context_emit(out, &w, &o, argc, argv, max_memory);
    watchdog_init(out, w.rank);
    long points = measure(out, &o, &w, &t, max_memory);
    if (w.rank == 0) {
        record_end(out, &o, points, now_s() - start);
        if (out != stdout) fclose(out);
    }
    timing_free(&t);
    world_free(&w);
    sizes_free(&o.sizes);
    MPI_Finalize();
    return 0;
}
