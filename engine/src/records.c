/* The JSON Lines reporter: context, point, skip and end records, each line
 * complete and flushed. A point record holds what every point has and what
 * the row's generic hooks and the sync strategy produce; the row's describe
 * adds its own fields. */
#include "reporter.h"
#include "json.h"
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

/* What identifies a record's point: the plan's key (benchmark, size, ranks,
 * variant); point records name the family too. */
static void emit_key(json_t *j, const char *type, const plan_entry_t *e, const char *family, long size)
{
    json_str(j, "type", type);
    json_str(j, "benchmark", e->bench->name);
    if (family) json_str(j, "family", family);
    json_int(j, "size", size);
    json_int(j, "ranks", e->ranks);
    if (e->variant_label) json_str(j, "variant", e->variant_label);
}

static void emit_participants(json_t *j, const bench_t *b, const bench_ctx_t *c, const world_t *w)
{
    json_arr(j, "participants");
    for (int r = 0; r < c->nranks; r++) {
        bench_ctx_t probe = *c;
        probe.rank = r;
        if (!b->is_active || b->is_active(&probe)) json_int(j, NULL, r);
    }
    json_close_arr(j);
    json_arr(j, "pairs");
    if (b->pairs) {
        pair_t *pairs = malloc((size_t)c->nranks * sizeof *pairs);
        int np = pairs ? b->pairs(c, pairs) : 0;
        for (int i = 0; i < np; i++) {
            json_obj(j, NULL);
            json_arr(j, "ranks");
            json_int(j, NULL, pairs[i].a);
            json_int(j, NULL, pairs[i].b);
            json_close_arr(j);
            json_bool(j, "same_host", same_host(w, pairs[i].a, pairs[i].b));
            json_close_obj(j);
        }
        free(pairs);
    }
    json_close_arr(j);
}

/* The clocks of phase 0, when they were synchronised: the error bound of the
 * offsets and its share of one event's median; the final window under window
 * sync; why the row's default method gave way, when it did. */
static void emit_sync(json_t *j, const bench_t *b, const bench_ctx_t *c, const point_t *p)
{
    if (strcmp(p->sync, "window") == 0) json_num(j, "window_us", p->window_us);
    if (p->clock.pings > 0) {
        json_obj(j, "clock_sync");
        json_num(j, "max_offset_us", p->clock.max_offset_us);
        json_num(j, "error_us", p->clock.error_us);
        json_num(j, "error_share", p->clock.error_us / (p->time_us.median * b->ops_per_event(c)));
        json_num(j, "max_drift_ppm", p->clock.max_drift_ppm);
        json_int(j, "fit_points", p->clock.fit_points);
        json_int(j, "pings", p->clock.pings);
        json_close_obj(j);
    }
    if (p->sync_reason[0]) json_str(j, "sync_reason", p->sync_reason);
}

/* The CPU each rank of the point's communicator was on when the point ended. */
static void emit_rank_cpus(json_t *j, const bench_ctx_t *c, const point_t *p)
{
    json_arr(j, "rank_cpus");
    for (int r = 0; r < c->nranks; r++)
        if (p->rank_cpus[r] >= 0) json_int(j, NULL, p->rank_cpus[r]);
        else json_null(j, NULL);
    json_close_arr(j);
}

/* Per rank, what could have disturbed the point or the launch (docs/engine.md):
 * null where the platform cannot say. */
static void emit_disturbance(json_t *j, const disturb_t *ranks, int nranks)
{
    if (!ranks) return;
    static const char *const names[DISTURB_FIELDS] = {"nvcsw", "nivcsw", "steal_s", "run_queue", "loadavg_1m"};
    json_obj(j, "disturbance");
    for (int f = 0; f < DISTURB_FIELDS; f++) {
        json_arr(j, names[f]);
        for (int r = 0; r < nranks; r++) {
            const disturb_t *d = &ranks[r];
            double v[DISTURB_FIELDS] = {d->nvcsw, d->nivcsw, d->steal_s, d->run_queue, d->loadavg_1m};
            json_num(j, NULL, v[f]);
        }
        json_close_arr(j);
    }
    json_close_obj(j);
}

static void emit_bandwidths(json_t *j, const bench_t *b, const bench_ctx_t *c, const point_t *p)
{
    double bytes = b->bytes_per_op(c);
    if (c->size > 0 && p->time_us.min > 0) {
        json_obj(j, "bw_MBps");
        json_num(j, "median", bytes / p->time_us.median);
        json_num(j, "max", bytes / p->time_us.min);
        json_close_obj(j);
        /* what the figure touched, and the host's copy rate for it (kernels' working_set, copyrate.c) */
        json_int(j, "working_set_bytes", (long long)c->working_set);
        json_int(j, "streams", c->streams);
        if (c->copy_MBps > 0) json_num(j, "copy_MB_per_s", c->copy_MBps);
        else json_null(j, "copy_MB_per_s");
        if (c->memory_copy_MBps > 0) json_num(j, "memory_copy_MB_per_s", c->memory_copy_MBps);
        else json_null(j, "memory_copy_MB_per_s");
    }
    if (b->busbw_factor && c->size > 0 && p->time_us.min > 0) {
        double f = b->busbw_factor(c);
        json_num(j, "busbw_factor", f);
        json_obj(j, "busbw_MBps");
        json_num(j, "median", bytes / p->time_us.median * f);
        json_num(j, "max", bytes / p->time_us.min * f);
        json_close_obj(j);
    }
    if (b->msgs_per_event && p->time_us.median > 0)
        json_num(j, "msg_rate", b->msgs_per_event(c) / (p->time_us.median * b->ops_per_event(c) * 1e-6));
}

static void point_record(const reporter_t *r, const plan_entry_t *e, const bench_ctx_t *c, const point_t *p)
{
    const bench_t *b = e->bench;
    json_t j = {0};
    json_begin(&j);
    emit_key(&j, "point", e, b->family, c->size);
    json_str(&j, "order", r->w->order);
    emit_participants(&j, b, c, r->w);
    emit_rank_cpus(&j, c, p);
    json_str(&j, "sample_from", (b->flags & BENCH_SAMPLE_ROOT) ? "rank0" : "max_over_ranks");
    json_str(&j, "sync", p->sync);
    json_int(&j, "invalid", p->invalid);
    emit_sync(&j, b, c, p);
    json_num(&j, "ops_per_event", b->ops_per_event(c));
    json_num(&j, "bytes_per_op", b->bytes_per_op(c));
    emit_stats(&j, "time_us", &p->time_us);
    emit_bandwidths(&j, b, c, p);
    json_arr(&j, "buffer_offset");  /* where the buffers sat past a page boundary (--buffer-offset) */
    for (int i = 0; i < 2; i++) json_int(&j, NULL, c->buffer_offset[i]);
    json_close_arr(&j);
    if (b->describe) b->describe(c, p, r->w, &j);
    json_bool(&j, "converged", p->converged);
    json_str(&j, "stop_reason", p->stop_reason);
    if (p->sample_step_us > 0) json_num(&j, "sample_step_us", p->sample_step_us);
    emit_disturbance(&j, p->disturb, c->nranks);
    json_int(&j, "warmup", p->warmup);
    json_num(&j, "elapsed_s", p->elapsed_s);
    /* slowed, not stuck: the watchdog's limit passed while the point still progressed */
    if (p->watchdog_extensions > 0) {
        json_num(&j, "watchdog_limit_s", p->watchdog_limit_s);
        json_int(&j, "watchdog_extensions", p->watchdog_extensions);
    }
    if (r->o->simulated) json_num(&j, "host_s", p->host_s);
    if (r->o->check) {
        json_obj(&j, "check");
        json_int(&j, "errors", p->check_errors);
        json_int(&j, "verified_bytes", p->verified_bytes);
        json_close_obj(&j);
    }
    if (r->o->raw) {
        json_arr(&j, "samples_us");
        for (size_t i = 0; i < p->time_us.n; i++) json_num(&j, NULL, p->samples_us[i]);
        json_close_arr(&j);
    }
    json_end(&j);
    json_emit(&j, r->out);
    json_free(&j);
}

static void skip_record(const reporter_t *r, const plan_entry_t *e, const char *reason)
{
    json_t j = {0};
    json_begin(&j);
    emit_key(&j, "skip", e, NULL, e->size);
    json_str(&j, "reason", reason);
    json_end(&j);
    json_emit(&j, r->out);
    json_free(&j);
}

static void end_record(const reporter_t *r, long points, double elapsed_s, const disturb_t *ranks)
{
    json_t j = {0};
    json_begin(&j);
    json_str(&j, "type", "end");
    json_int(&j, "points", points);
    json_num(&j, "elapsed_s", elapsed_s);
    emit_disturbance(&j, ranks, r->w->nranks);
    json_end(&j);
    json_emit(&j, r->out);
    json_free(&j);
}

static void context_record(const reporter_t *r, int argc, char **argv)
{
    context_emit(r->out, r->w, r->o, argc, argv);
}

reporter_t jsonl_reporter(FILE *out, const options_t *o, const world_t *w)
{
    return (reporter_t){context_record, point_record, skip_record, end_record, out, o, w};
}
