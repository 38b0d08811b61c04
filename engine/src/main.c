/* mpiscope-engine: parse, plan, describe the job, measure the plan, finish. */
#include "bench.h"
#include "buffers.h"
#include "context.h"
#include "control.h"
#include "disturb.h"
#include "kernels/startup.h"
#include "kernels/threads.h"
#include "measure.h"
#include "mpicheck.h"
#include "options.h"
#include "plan.h"
#include "registry.h"
#include "sim.h"
#include "reporter.h"
#include "sync.h"
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

/* How many ranks of a 4-rank job row b keeps busy: 2 for the pair benchmarks, where more
 * ranks would only steal cores. Asked of the row's own is_active, not of its name. */
static int active_of_four(const bench_t *b)
{
    if (!b->is_active) return 4;
    int n = 0;
    for (int r = 0; r < 4; r++) {
        bench_ctx_t probe = {.rank = r, .nranks = 4};
        n += b->is_active(&probe) != 0;
    }
    return n;
}

static void list_registry(int json, int simulated)
{
    if (!json) {
        printf("%-32s %-10s %-9s %s\n", "name", "family", "min ranks", "what it measures");
        for (int i = 0; i < registry_size; i++)
            printf("%-32s %-10s %-9d %s%s%s%s\n", registry[i]->name, registry[i]->family, registry[i]->min_ranks,
                   registry[i]->summary, registry[i]->unavailable ? " [unavailable: " : "",
                   registry[i]->unavailable ? registry[i]->unavailable : "", registry[i]->unavailable ? "]" : "");
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
        json_str(&j, "sync", sync_choose(NULL, b->flags, simulated)->name);
        json_bool(&j, "collective", (b->flags & BENCH_COLLECTIVE) != 0);
        json_bool(&j, "reduction", (b->flags & BENCH_REDUCTION) != 0);
        json_bool(&j, "overlap", b->calibrate != NULL);
        json_bool(&j, "message_rate", b->msgs_per_event != NULL);
        json_bool(&j, "pair_only", b->min_ranks >= 2 && active_of_four(b) <= 2);
        json_bool(&j, "available", b->unavailable == NULL);
        if (b->unavailable) json_str(&j, "unavailable", b->unavailable); else json_null(&j, "unavailable");
        json_end(&j);
        printf("%s%s", i ? ",\n " : "", j.buf);
    }
    printf("]\n");
    json_free(&j);
}

/* --plan: the points for --ranks N as one JSON line, without MPI. */
static int print_plan(const options_t *o, int talk)
{
    plan_t plan;
    char err[512] = "";
    int nranks = (int)o->ranks;
    if (plan_build(o, nranks, &plan, err, sizeof err) == 0) {
        if (plan_check_points(&plan, &o->points, nranks, err, sizeof err) == 0 && talk &&
            plan_emit(stdout, &plan, o, nranks))
            snprintf(err, sizeof err, "cannot write the plan to stdout");
        plan_free(&plan);
    }
    if (!*err) return 0;
    if (talk) fprintf(stderr, "mpiscope-engine: error: %s\n", err);
    return 2;
}

/* Handles --help, --list, --version, --mpi-info, --plan and option errors,
 * none of which needs MPI_Init. Returns the exit status, or -1 to go on
 * measuring. */
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
        else list_registry(o->json, o->simulated);
        return 0;
    }
    for (int i = 0; i < o->nbenchmarks; i++)
        if (!bench_find(o->benchmarks[i])) {
            if (talk)
                fprintf(stderr, "mpiscope-engine: error: unknown benchmark '%s' (--list shows benchmarks and families)\n",
                        o->benchmarks[i]);
            return 2;
        }
    if (o->plan) return print_plan(o, talk);
    return -1;
}

/* The job's own plan; every rank finds the same problems, so every rank stops alike. */
static int plan_job(const options_t *o, const world_t *w, plan_t *plan)
{
    char err[512] = "";
    if (plan_build(o, w->nranks, plan, err, sizeof err) == 0) {
        if (plan_check_points(plan, &o->points, w->nranks, err, sizeof err) == 0) return 0;
        plan_free(plan);
    }
    if (w->rank == 0) fprintf(stderr, "mpiscope-engine: error: %s\n", err);
    return -1;
}

/* Where records go (--output, rank 0) and room for the samples; 0, or -1
 * after rank 0 said why (every rank alike). */
static int open_output(const options_t *o, const world_t *w, timing_t *t, FILE **out)
{
    *out = stdout;
    int open_failed = 0;
    if (w->rank == 0 && strcmp(o->output, "-") != 0 && !(*out = fopen(o->output, "w"))) {
        fprintf(stderr, "mpiscope-engine: error: cannot write --output '%s'\n", o->output);
        open_failed = 1;
    }
    MPI_CHECK(MPI_Bcast(&open_failed, 1, MPI_INT, 0, w->comm));
    int no_memory = timing_init(t, o) != 0, any_no_memory = 0;
    MPI_CHECK(MPI_Allreduce(&no_memory, &any_no_memory, 1, MPI_INT, MPI_MAX, w->comm));
    if (any_no_memory && w->rank == 0)
        fprintf(stderr, "mpiscope-engine: error: no memory for %ld samples: lower --max-reps or --reps\n", t->capacity);
    return open_failed || any_no_memory ? -1 : 0;
}

/* Records from rank 0: the context, every selected point of the plan, the end. */
static void measure_job(options_t *o, const world_t *w, const plan_t *plan, timing_t *t, FILE *out, int argc,
                        char **argv, double start)
{
    if (o->max_memory_bytes <= 0) o->max_memory_bytes = 0.8 * available_memory_bytes() / w->ranks_on_my_host;
    reporter_t r = o->format == FORMAT_TABLE ? table_reporter(out, o, w) : jsonl_reporter(out, o, w);
    disturb_t begin, end, mine;
    disturb_read(&begin);
    if (w->rank == 0) r.context(&r, argc, argv);
    /* the machine's state, before any point */
    control_run(w, o->format == FORMAT_JSONL ? out : NULL, o->simulated);
    watchdog_init(out, w->rank, o->simulated);
    sim_share_buffers(o->simulated && !o->check);
    sync_configure(w->oversubscribed, o->simulated);
    long points = measure_plan(plan, &r, t);
    /* the launch's counters, every rank's: per point they are in the point records */
    disturb_read(&end);
    disturb_delta(&begin, &end, &mine);
    disturb_t *all = w->rank == 0 ? malloc((size_t)w->nranks * sizeof *all) : NULL;
    if (w->rank == 0 && !all) MPI_Abort(w->comm, 3);
    disturb_gather(&mine, all, w->comm);
    if (w->rank == 0) r.end(&r, points, now_s() - start, all);
    free(all);
}

int main(int argc, char **argv)
{
    options_t o;
    int status = before_mpi(argc, argv, &o);
    if (status >= 0) {
        options_free(&o);
        return status;
    }

    /* MPI_THREAD_MULTIPLE only when a selected benchmark needs it: it can slow the others */
    double before_init = now_s();
    if (bench_any_with(o.benchmarks, o.nbenchmarks, BENCH_THREAD_MULTIPLE)) {
        int provided = MPI_THREAD_SINGLE;
        MPI_Init_thread(&argc, &argv, threads_requested_level(), &provided);
        threads_set_provided(provided);
        context_set_thread_request(threads_requested_level());
    } else {
        MPI_Init(&argc, &argv);
    }
    double after_init = now_s();
    if (bench_any_with(o.benchmarks, o.nbenchmarks, BENCH_ONCE)) {
        MPI_Barrier(MPI_COMM_WORLD);  /* the hello world: every rank has started */
        startup_record(after_init - before_init, now_s() - before_init);
    }
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    double start = now_s();
    status = 0;
    world_t w;
    world_init(&w, o.simulated);
    plan_t plan;
    timing_t t = {0};
    FILE *out = stdout;
    if (plan_job(&o, &w, &plan)) {
        status = 2;
    } else {
        if (world_reorder(&w, &o) || open_output(&o, &w, &t, &out)) status = 2;
        else measure_job(&o, &w, &plan, &t, out, argc, argv, start);
        plan_free(&plan);
    }
    if (out != stdout && out) fclose(out);
    timing_free(&t);
    world_free(&w);
    options_free(&o);
    MPI_Finalize();
    return status;
}
