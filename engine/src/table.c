/* The human table reporter (--format table): a header per benchmark (and
 * variant), a line per point or skip, a closing count. */
#include "reporter.h"

static void table_context(const reporter_t *r, int argc, char **argv)
{
    (void)argc, (void)argv;
    char lib[256];
    library_name(lib, sizeof lib);
    fprintf(r->out, "# %s, %d ranks on %d host(s)\n", lib, r->w->nranks, r->w->nhosts);
    fflush(r->out);
}

/* A header whenever the benchmark, its variant or the ranks change. */
static void header(const reporter_t *r, const plan_entry_t *e)
{
    static long last_series = -1;
    if (last_series == e->series) return;
    last_series = e->series;
    fprintf(r->out, "\n# %s%s%s on %d ranks: %s\n", e->bench->name, e->variant_label ? " " : "",
            e->variant_label ? e->variant_label : "", e->ranks, e->bench->summary);
    fprintf(r->out, "%12s %12s %25s %12s %12s %8s %s\n", "bytes", "median(us)", "95% CI (us)", "min(us)", "MB/s",
            "n", "converged");
}

static void table_point(const reporter_t *r, const plan_entry_t *e, const bench_ctx_t *c, const point_t *p)
{
    header(r, e);
    double mbps = c->size > 0 ? e->bench->bytes_per_op(c) / p->time_us.median : 0.0;
    char ci[64];
    snprintf(ci, sizeof ci, "[%.3f, %.3f]", p->time_us.ci_low, p->time_us.ci_high);
    fprintf(r->out, "%12ld %12.3f %25s %12.3f %12.1f %8zu %s%s%s\n", c->size, p->time_us.median, ci,
            p->time_us.min, mbps, p->time_us.n, p->converged ? "yes" : "no (", p->converged ? "" : p->stop_reason,
            p->converged ? "" : ")");
    fflush(r->out);
}

static void table_skip(const reporter_t *r, const plan_entry_t *e, const char *reason)
{
    header(r, e);
    fprintf(r->out, "%12ld skipped: %s\n", e->size, reason);
    fflush(r->out);
}

static void table_end(const reporter_t *r, long points, double elapsed_s, const disturb_t *ranks)
{
    (void)ranks;  /* the human table has no column for the launch's counters: the records do */
    fprintf(r->out, "\n# %ld points in %.1f s\n", points, elapsed_s);
    fflush(r->out);
}

reporter_t table_reporter(FILE *out, const options_t *o, const world_t *w)
{
    return (reporter_t){table_context, table_point, table_skip, table_end, out, o, w};
}
