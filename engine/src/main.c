/* mpiscope-engine: parse, describe the job, measure every point, finish. */
#include "bench.h"
#include "buffers.h"
#include "context.h"
#include "mpicheck.h"
#include "options.h"
#include "records.h"
#include "sync.h"
#include "timer.h"
#include "timing.h"
#include "version.h"
#include "watchdog.h"
#include <limits.h>
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
        printf("%-20s %-8s %-9s %s\n", "name", "family", "min ranks", "what it measures");
        for (int i = 0; i < registry_size; i++)
            printf("%-20s %-8s %-9d %s\n", registry[i]->name, registry[i]->family, registry[i]->min_ranks,
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
        json_bool(&j, "sizeless", (b->flags & BENCH_NO_SIZE) != 0);
        json_str(&j, "sample_from", (b->flags & BENCH_SAMPLE_ROOT) ? "rank0" : "max_over_ranks");
        json_str(&j, "sync", sync_choose(NULL, b->flags)->name);
        json_bool(&j, "collective", (b->flags & BENCH_COLLECTIVE) != 0);
        json_bool(&j, "reduction", (b->flags & BENCH_REDUCTION) != 0);
        json_bool(&j, "overlap", b->phases > 1 && b->calibrate);
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
    if (o->grid_p && (long)o->grid_p * o->grid_q != w->nranks) {
        if (w->rank == 0)
            fprintf(stderr, "mpiscope-engine: error: --grid %dx%d needs %d ranks, this job has %d: run it with "
                    "mpiexec -n %d or leave --grid out for every shape\n", o->grid_p, o->grid_q,
                    o->grid_p * o->grid_q, w->nranks, o->grid_p * o->grid_q);
        return 0;
    }
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

/* What --datatype, --op and the other collective options mean for row b. */
static coll_args_t collective_args(const options_t *o, const bench_t *b)
{
    coll_args_t a = {0};
    int reduction = (b->flags & BENCH_REDUCTION) != 0;
    a.type_id = o->datatype >= 0 ? o->datatype : reduction ? COLL_FLOAT : COLL_BYTE;
    switch (a.type_id) {
    /* MPI_BYTE takes no arithmetic: reductions of bytes use unsigned char */
    case COLL_BYTE: a.type = reduction ? MPI_UNSIGNED_CHAR : MPI_BYTE; a.type_size = 1; break;
    case COLL_INT: a.type = MPI_INT; a.type_size = (int)sizeof(int); break;
    case COLL_FLOAT: a.type = MPI_FLOAT; a.type_size = (int)sizeof(float); break;
    default: a.type = MPI_DOUBLE; a.type_size = (int)sizeof(double); break;
    }
    a.op_id = o->op;
    a.op = o->op == COLL_MAX ? MPI_MAX : o->op == COLL_MIN ? MPI_MIN : MPI_SUM;
    a.in_place = o->in_place;
    a.rotate_root = o->rotate_root;
    a.nbc_tests = o->nbc_tests;
    return a;
}

typedef struct history { long size; double event_s; } history_t;

/* One (benchmark, size) point on comm: buffers within the memory limit, the
 * timing core, the record. Returns 1 when a point was measured. */
static int measure_point(FILE *out, const options_t *o, const world_t *w, timing_t *t, const bench_t *b,
                         MPI_Comm comm, int nranks, long size, int variant, double max_memory, history_t *prev)
{
    bench_ctx_t c = {.comm = comm, .rank = w->rank, .nranks = nranks, .size = size, .window = o->window,
                     .study = {o->niter, o->ncompute_a, o->ncompute_b, o->nblock},
                     .variant = variant, .grid_p = o->grid_p, .grid_q = o->grid_q};
    char why[240];
    if (b->flags & BENCH_COLLECTIVE) {
        static const char *const types[] = {"byte", "int", "float", "double"};
        c.coll = collective_args(o, b);
        if (size % c.coll.type_size) {
            snprintf(why, sizeof why, "%ld bytes is not a whole number of %d-byte %s elements (--datatype)",
                     size, c.coll.type_size, types[c.coll.type_id]);
            if (w->rank == 0) record_skip(out, o, b, size, nranks, why);
            return 0;
        }
    }
    int slots = b->recv_slots ? b->recv_slots(&c) : 1;
    /* OSU shares one receive buffer across a window; we keep slots apart up to 64 MiB */
    long cap = c.size > 0 ? (64L << 20) / c.size : slots;
    c.rslots = slots < cap ? slots : (cap > 0 ? (int)cap : 1);
    c.rslot = (size_t)c.size;
    size_t send = (size_t)c.size, recv = (size_t)c.size * (size_t)c.rslots;
    if (b->buffer_bytes) b->buffer_bytes(&c, &send, &recv);
    long off_cache = o->off_cache_bytes < 0 ? last_level_cache_bytes() : o->off_cache_bytes;
    size_t need = buffers_need(send, recv, off_cache);
    size_t biggest = send > recv ? send : recv;
    int too_big = (double)need > max_memory, any_too_big = 0;
    MPI_CHECK(MPI_Allreduce(&too_big, &any_too_big, 1, MPI_INT, MPI_MAX, comm));
    if (any_too_big || ((b->flags & BENCH_COLLECTIVE) && biggest / (size_t)c.coll.type_size > INT_MAX)) {
        if (any_too_big)
            snprintf(why, sizeof why, "needs %.0f MiB per rank, more than the limit of %.0f MiB (--max-memory)",
                     (double)need / 1048576.0, max_memory / 1048576.0);
        else
            snprintf(why, sizeof why, "a buffer of %zu elements is beyond what an MPI int count reaches", biggest);
        if (w->rank == 0) record_skip(out, o, b, c.size, nranks, why);
        return 0;
    }
    buffers_t bufs;
    int failed = buffers_alloc(&bufs, send, recv, off_cache), any_failed = 0;
    MPI_CHECK(MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, comm));
    if (any_failed) {
        if (!failed) buffers_free(&bufs);
        if (w->rank == 0) record_skip(out, o, b, c.size, nranks, "could not allocate the buffers");
        return 0;
    }
    if (b->setup) b->setup(&c);
    long warmup = o->warmup > 1000 ? o->warmup : 1000;
    int phases = b->phase_count ? b->phase_count(&c) : b->phases > 1 ? b->phases : 1;
    watchdog_arm(b->name, c.size, nranks, phases * watchdog_limit(o, c.size, prev->size, prev->event_s, warmup));
    point_t p;
    time_point(t, b, &c, &bufs, o, &p);
    watchdog_disarm();
    if (b->teardown) b->teardown(&c);
    buffers_free(&bufs);
    if (w->rank == 0) record_point(out, o, w, b, &c, &p);
    prev->size = c.size;
    prev->event_s = p.event_median_s;
    return 1;
}

/* Every benchmark and size on the first nranks ranks (comm). */
static long measure_group(FILE *out, const options_t *o, const world_t *w, timing_t *t, MPI_Comm comm,
                          int nranks, double max_memory)
{
    long points = 0;
    for (int bi = 0; bi < o->nbenchmarks; bi++) {
        const bench_t *b = bench_find(o->benchmarks[bi]);
        if (nranks < b->min_ranks || ((b->flags & BENCH_EVEN_RANKS) && nranks % 2)) {
            if (w->rank == 0)
                record_skip(out, o, b, 0, nranks, nranks < b->min_ranks ? "too few ranks" : "needs an even number of ranks");
            continue;
        }
        bench_ctx_t probe = {.nranks = nranks, .grid_p = o->grid_p, .grid_q = o->grid_q};
        int variants = b->variants ? b->variants(&probe) : 1;
        if (variants == 0 && w->rank == 0) record_skip(out, o, b, 0, nranks, "no grid shape fits these ranks (--grid)");
        for (int v = 0; v < variants; v++) {  /* each variant (grid shape) sweeps the sizes afresh */
            history_t prev = {0, 0};
            for (size_t si = 0; si < o->sizes.n; si++) {
                int sizeless = (b->flags & BENCH_NO_SIZE) != 0;
                if (sizeless && si > 0) break;
                points += measure_point(out, o, w, t, b, comm, nranks, sizeless ? 0 : o->sizes.v[si], v,
                                        max_memory, &prev);
            }
        }
    }
    return points;
}

/* The whole job, or with --npmin the first N, 2N, 4N ... ranks and then all
 * (IMB's -npmin); ranks outside a group wait without spinning. */
static long measure(FILE *out, const options_t *o, const world_t *w, timing_t *t, double max_memory)
{
    long points = 0;
    int np = o->npmin > 0 && o->npmin < w->nranks ? o->npmin : w->nranks;
    for (;;) {
        MPI_Comm comm = w->comm;
        if (np < w->nranks)
            MPI_CHECK(MPI_Comm_split(w->comm, w->rank < np ? 0 : MPI_UNDEFINED, w->rank, &comm));
        if (w->rank < np) points += measure_group(out, o, w, t, comm, np, max_memory);
        if (np < w->nranks) {
            if (comm != MPI_COMM_NULL) MPI_CHECK(MPI_Comm_free(&comm));
            MPI_Request req;
            MPI_CHECK(MPI_Ibarrier(w->comm, &req));
            wait_request(&req, w->rank >= np);
        }
        if (np == w->nranks) break;
        np = 2 * np < w->nranks ? 2 * np : w->nranks;
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
    if (world_reorder(&w, &o)) {
        world_free(&w);
        MPI_Finalize();
        return 2;
    }

    FILE *out = stdout;
    int open_failed = 0;
    if (w.rank == 0 && strcmp(o.output, "-") != 0 && !(out = fopen(o.output, "w"))) {
        fprintf(stderr, "mpiscope-engine: error: cannot write --output '%s'\n", o.output);
        open_failed = 1;
    }
    MPI_CHECK(MPI_Bcast(&open_failed, 1, MPI_INT, 0, w.comm));
    timing_t t;
    int no_memory = timing_init(&t, &o) != 0, any_no_memory = 0;
    MPI_CHECK(MPI_Allreduce(&no_memory, &any_no_memory, 1, MPI_INT, MPI_MAX, w.comm));
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
    sync_set_oversubscribed(w.oversubscribed);
    long points = measure(out, &o, &w, &t, max_memory);
    if (w.rank == 0) {
        record_end(out, &o, points, now_s() - start);
        if (out != stdout) fclose(out);
    }
    timing_free(&t);
    world_free(&w);
    sizes_free(&o.sizes);
    free(o.order_list);
    MPI_Finalize();
    return 0;
}
