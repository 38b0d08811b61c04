/* Writes point, skip and end records; each line is complete and flushed. */
#include "records.h"
#include <stdlib.h>
#include <string.h>

static void emit_stats(json_t *j, const char *key, const stats_t *s)
{
    json_obj(j, key);
    json_int(j, "n", (long long)s->n);
    json_num(j, "min", s->min);
    json_num(j, "median", s->median);
    json_num(j, "mean", s->mean);
    json_num(j, "p90", s->p90);
    json_num(j, "p99", s->p99);
    json_num(j, "ci_low", s->ci_low);
    json_num(j, "ci_high", s->ci_high);
    json_num(j, "stddev", s->stddev);
    json_close_obj(j);
}

/* What a collective point was run with, and how well the clocks agreed. */
static void emit_collective(json_t *j, const bench_t *b, const bench_ctx_t *c, const point_t *p)
{
    static const char *const types[] = {"byte", "int", "float", "double"}, *const ops[] = {"sum", "max", "min"};
    json_str(j, "datatype", types[c->coll.type_id]);
    json_int(j, "count", c->size / c->coll.type_size);
    if (b->flags & BENCH_REDUCTION) json_str(j, "op", ops[c->coll.op_id]);
    json_bool(j, "in_place", c->coll.in_place);
    json_bool(j, "rotate_root", c->coll.rotate_root);
    if (strcmp(p->sync, "window") != 0) return;
    json_num(j, "window_us", p->window_us);
    json_obj(j, "clock_sync");
    json_num(j, "max_offset_us", p->clock.max_offset_us);
    json_num(j, "error_us", p->clock.error_us);
    json_num(j, "max_drift_ppm", p->clock.max_drift_ppm);
    json_int(j, "fit_points", p->clock.fit_points);
    json_close_obj(j);
}

static void table_header_once(FILE *out, const bench_t *b)
{
    static const bench_t *last;
    if (last == b) return;
    last = b;
    fprintf(out, "\n# %s: %s\n", b->name, b->summary);
    fprintf(out, "%12s %12s %25s %12s %12s %8s %s\n", "bytes", "median(us)", "95% CI (us)", "min(us)",
            "MB/s", "n", "converged");
}

static void table_point(FILE *out, const bench_t *b, const bench_ctx_t *c, const point_t *p)
{
    table_header_once(out, b);
    double mbps = c->size > 0 ? b->bytes_per_op(c) / p->time_us.median : 0.0;
    char ci[64];
    snprintf(ci, sizeof ci, "[%.3f, %.3f]", p->time_us.ci_low, p->time_us.ci_high);
    fprintf(out, "%12ld %12.3f %25s %12.3f %12.1f %8zu %s%s%s\n", c->size, p->time_us.median, ci,
            p->time_us.min, mbps, p->time_us.n, p->converged ? "yes" : "no (",
            p->converged ? "" : p->stop_reason, p->converged ? "" : ")");
    fflush(out);
}

void record_point(FILE *out, const options_t *o, const world_t *w, const bench_t *b,
                  const bench_ctx_t *c, const point_t *p)
{
    if (o->format == FORMAT_TABLE) { table_point(out, b, c, p); return; }
    json_t j = {0};
    json_begin(&j);
    json_str(&j, "type", "point");
    json_str(&j, "benchmark", b->name);
    json_str(&j, "family", b->family);
    json_int(&j, "size", c->size);
    json_int(&j, "ranks", c->nranks);
    json_str(&j, "order", w->order);
    json_arr(&j, "participants");
    for (int r = 0; r < c->nranks; r++) {
        bench_ctx_t probe = *c;
        probe.rank = r;
        if (!b->is_active || b->is_active(&probe)) json_int(&j, NULL, r);
    }
    json_close_arr(&j);
    json_arr(&j, "pairs");
    if (b->pairs) {
        pair_t *pairs = malloc((size_t)c->nranks * sizeof *pairs);
        int np = pairs ? b->pairs(c, pairs) : 0;
        for (int i = 0; i < np; i++) {
            json_obj(&j, NULL);
            json_arr(&j, "ranks");
            json_int(&j, NULL, pairs[i].a);
            json_int(&j, NULL, pairs[i].b);
            json_close_arr(&j);
            json_bool(&j, "same_host", same_host(w, pairs[i].a, pairs[i].b));
            json_close_obj(&j);
        }
        free(pairs);
    }
    json_close_arr(&j);
    json_str(&j, "sample_from", (b->flags & BENCH_SAMPLE_ROOT) ? "rank0" : "max_over_ranks");
    json_str(&j, "sync", p->sync);
    json_int(&j, "invalid", p->invalid);
    if (b->flags & BENCH_COLLECTIVE) emit_collective(&j, b, c, p);
    json_num(&j, "ops_per_event", b->ops_per_event(c));
    json_num(&j, "bytes_per_op", b->bytes_per_op(c));
    emit_stats(&j, "time_us", &p->time_us);
    if (c->size > 0 && p->time_us.min > 0) {
        json_obj(&j, "bw_MBps");
        json_num(&j, "median", b->bytes_per_op(c) / p->time_us.median);
        json_num(&j, "max", b->bytes_per_op(c) / p->time_us.min);
        json_close_obj(&j);
    }
    if (b->busbw_factor && c->size > 0 && p->time_us.min > 0) {
        double f = b->busbw_factor(c);
        json_num(&j, "busbw_factor", f);
        json_obj(&j, "busbw_MBps");
        json_num(&j, "median", b->bytes_per_op(c) / p->time_us.median * f);
        json_num(&j, "max", b->bytes_per_op(c) / p->time_us.min * f);
        json_close_obj(&j);
    }
    if (p->have_rank_figures) {
        json_num(&j, "t_min_us", p->t_min_us);
        json_num(&j, "t_max_us", p->t_max_us);
        json_num(&j, "t_avg_us", p->t_avg_us);
        json_num(&j, "osu_avg_us", p->t_avg_us);
    }
    if (p->phases == 3) {
        json_obj(&j, "overlap");
        json_num(&j, "pure_us", p->time_us.median);
        json_num(&j, "cpu_us", p->cpu_us);
        json_num(&j, "ovrl_us", p->ovrl_us);
        json_num(&j, "overlap_pct", p->overlap_pct);
        json_int(&j, "cpu_n", (long long)p->cpu_n);
        json_int(&j, "ovrl_n", (long long)p->ovrl_n);
        json_int(&j, "mpi_test_calls", c->coll.nbc_tests);
        json_int(&j, "compute_iters", c->coll.compute_iters);
        json_close_obj(&j);
    }
    if (b->msgs_per_event && p->time_us.median > 0)
        json_num(&j, "msg_rate", b->msgs_per_event(c) / (p->time_us.median * b->ops_per_event(c) * 1e-6));
    if (b->describe) b->describe(c, p, w, &j);
    json_bool(&j, "converged", p->converged);
    json_str(&j, "stop_reason", p->stop_reason);
    json_int(&j, "warmup", p->warmup);
    json_num(&j, "elapsed_s", p->elapsed_s);
    if (o->check) {
        json_obj(&j, "check");
        json_int(&j, "errors", p->check_errors);
        json_int(&j, "verified_bytes", p->verified_bytes);
        json_close_obj(&j);
    }
    if (o->raw) {
        json_arr(&j, "samples_us");
        for (size_t i = 0; i < p->time_us.n; i++) json_num(&j, NULL, p->samples_us[i]);
        json_close_arr(&j);
    }
    json_end(&j);
    json_emit(&j, out);
    json_free(&j);
}

void record_skip(FILE *out, const options_t *o, const bench_t *b, long size, int ranks, const char *reason)
{
    if (o->format == FORMAT_TABLE) {
        fprintf(out, "%12ld skipped: %s\n", size, reason);
        fflush(out);
        return;
    }
    json_t j = {0};
    json_begin(&j);
    json_str(&j, "type", "skip");
    json_str(&j, "benchmark", b->name);
    json_int(&j, "size", size);
    json_int(&j, "ranks", ranks);
    json_str(&j, "reason", reason);
    json_end(&j);
    json_emit(&j, out);
    json_free(&j);
}

void record_end(FILE *out, const options_t *o, long points, double elapsed_s)
{
    if (o->format == FORMAT_TABLE) {
        fprintf(out, "\n# %ld points in %.1f s\n", points, elapsed_s);
        fflush(out);
        return;
    }
    json_t j = {0};
    json_begin(&j);
    json_str(&j, "type", "end");
    json_int(&j, "points", points);
    json_num(&j, "elapsed_s", elapsed_s);
    json_end(&j);
    json_emit(&j, out);
    json_free(&j);
}
