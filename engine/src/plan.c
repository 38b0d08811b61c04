/* Builds, checks and prints the measurement plan. */
#include "plan.h"
#include "sim.h"
#include "json.h"
#include "registry.h"
#include "version.h"
#include <stdlib.h>
#include <string.h>

/* A million points at a millisecond each is a quarter of an hour: more is a mistake. */
enum { MAX_PLAN_POINTS = 1000000 };

static const char *keep_string(plan_t *p, const char *s)
{
    if (p->nstrings == p->strings_cap) {
        size_t cap = p->strings_cap ? 2 * p->strings_cap : 64;
        char **more = realloc(p->strings, cap * sizeof *more);
        if (!more) return NULL;
        p->strings = more;
        p->strings_cap = cap;
    }
    char *copy = strdup(s);
    if (copy) p->strings[p->nstrings++] = copy;
    return copy;
}

static plan_entry_t *add(plan_t *p, const plan_entry_t *e)
{
    if (p->n == MAX_PLAN_POINTS) return NULL;
    if (p->n == p->cap) {
        long cap = p->cap ? 2 * p->cap : 256;
        plan_entry_t *more = realloc(p->entries, (size_t)cap * sizeof *more);
        if (!more) return NULL;
        p->entries = more;
        p->cap = cap;
    }
    plan_entry_t *slot = &p->entries[p->n];
    *slot = *e;
    slot->id = p->n++;
    return slot;
}

/* What must hold for the whole job, or no launch could start: the checks of
 * the options against the ranks, then each benchmark's needs. */
static int job_fits(const options_t *o, int nranks, char *err, size_t errlen)
{
    if (options_fit_ranks(o, nranks, err, errlen)) return -1;
    for (int i = 0; i < o->nbenchmarks; i++) {
        const bench_t *b = bench_find(o->benchmarks[i]);
        if (nranks < b->min_ranks) {
            snprintf(err, errlen, "%s needs at least %d ranks, this job has %d: run it with mpiexec -n %d", b->name,
                     b->min_ranks, nranks, b->min_ranks);
            return -1;
        }
        if ((b->flags & BENCH_EVEN_RANKS) && nranks % 2) {
            snprintf(err, errlen, "%s needs an even number of ranks, this job has %d", b->name, nranks);
            return -1;
        }
        for (size_t s = 0; s < o->sizes.n && (b->flags & BENCH_DOUBLES); s++)
            if (o->sizes.v[s] % 8) {
                snprintf(err, errlen, "%s moves 8-byte doubles: every size must be a multiple of 8 bytes "
                         "(use --units words)", b->name);
                return -1;
            }
    }
    return 0;
}

/* Why add or keep_string failed. */
static int full(const plan_t *p, char *err, size_t errlen)
{
    if (p->n < MAX_PLAN_POINTS) snprintf(err, errlen, "out of memory while planning the points");
    else snprintf(err, errlen, "the plan has more than %d points: measure fewer sizes, benchmarks or --npmin "
                  "groups", MAX_PLAN_POINTS);
    return -1;
}

/* One benchmark on one group: a skip when the group cannot run it, else its
 * variants x sizes. */
static int plan_benchmark(plan_t *p, const bench_t *b, int ranks, const options_t *o, long *series, char *err,
                          size_t errlen)
{
    plan_entry_t e = {.bench = b, .ranks = ranks, .series = (*series)++, .phases = bench_phases(b, ranks)};
    if (ranks < b->min_ranks || ((b->flags & BENCH_EVEN_RANKS) && ranks % 2)) {
        e.skip = ranks < b->min_ranks ? "too few ranks" : "needs an even number of ranks";
        return add(p, &e) ? 0 : full(p, err, errlen);
    }
    int variants = b->variants ? b->variants(ranks) : 1;
    if (variants == 0) {
        e.skip = b->no_variant ? b->no_variant : "no variant fits these ranks";
        return add(p, &e) ? 0 : full(p, err, errlen);
    }
    e.sizeless = (b->flags & BENCH_NO_SIZE) != 0;
    for (int v = 0; v < variants; v++) {
        e.variant = v;
        if (v > 0) e.series = (*series)++;
        if (b->variants) {
            char label[64];
            b->variant_label(ranks, v, label, sizeof label);
            if (!(e.variant_label = keep_string(p, label))) return full(p, err, errlen);
        }
        for (size_t si = 0; si < (e.sizeless ? 1 : o->sizes.n); si++) {
            e.size = e.sizeless ? 0 : o->sizes.v[si];
            char why[256];
            e.skip = b->unavailable ? b->unavailable : o->simulated && sim_skip(b->flags, b->family) ? sim_skip(b->flags, b->family)
                     : b->plan_skip ? b->plan_skip(b, e.size, ranks, why, sizeof why)
                                                                    : NULL;
            if (!e.skip && b->variant_skip) e.skip = b->variant_skip(b, v, e.size, ranks, why, sizeof why);
            if (e.skip && !(e.skip = keep_string(p, e.skip))) return full(p, err, errlen);
            if (!add(p, &e)) return full(p, err, errlen);
        }
    }
    return 0;
}

int plan_build(const options_t *o, int nranks, plan_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (job_fits(o, nranks, err, errlen)) return -1;
    long series = 0;
    long np = o->npmin > 0 && o->npmin < nranks ? o->npmin : nranks;
    for (;;) {
        for (int i = 0; i < o->nbenchmarks; i++)
            if (plan_benchmark(out, bench_find(o->benchmarks[i]), (int)np, o, &series, err, errlen)) {
                plan_free(out);
                return -1;
            }
        if (np == nranks) break;
        np = 2 * np < nranks ? 2 * np : nranks;
    }
    return 0;
}

void plan_free(plan_t *p)
{
    for (size_t i = 0; i < p->nstrings; i++) free(p->strings[i]);
    free(p->strings);
    free(p->entries);
    memset(p, 0, sizeof *p);
}

int plan_check_points(const plan_t *p, const point_set_t *sel, int nranks, char *err, size_t errlen)
{
    long beyond = points_max(sel);
    if (beyond < p->n) return 0;
    snprintf(err, errlen, "--points: id %ld is beyond the plan's %ld points (ids 0-%ld; `--plan --ranks %d` lists "
             "them)", beyond, p->n, p->n - 1, nranks);
    return -1;
}

int plan_emit(FILE *out, const plan_t *p, const options_t *o, int nranks)
{
    json_t j = {0};
    json_begin(&j);
    json_str(&j, "type", "plan");
    json_int(&j, "schema_version", SCHEMA_VERSION);
    json_str(&j, "engine_version", ENGINE_VERSION);
    json_int(&j, "ranks", nranks);
    json_arr(&j, "benchmarks");
    for (int i = 0; i < o->nbenchmarks; i++) json_str(&j, NULL, o->benchmarks[i]);
    json_close_arr(&j);
    json_arr(&j, "sizes_bytes");
    for (size_t i = 0; i < o->sizes.n; i++) json_int(&j, NULL, o->sizes.v[i]);
    json_close_arr(&j);
    /* what bounds each point's time: the cap per phase, or a fixed sample count */
    json_num(&j, "max_time_s", o->max_time_s);
    if (o->reps) json_int(&j, "reps", o->reps); else json_null(&j, "reps");
    if (o->timeout_s > 0) json_num(&j, "timeout_s", o->timeout_s); else json_null(&j, "timeout_s");
    json_arr(&j, "points");
    for (long i = 0; i < p->n; i++) {
        const plan_entry_t *e = &p->entries[i];
        if (!points_selects(&o->points, e->id)) continue;
        json_obj(&j, NULL);
        json_int(&j, "id", e->id);
        json_str(&j, "benchmark", e->bench->name);
        json_str(&j, "family", e->bench->family);
        json_int(&j, "size", e->size);
        json_int(&j, "ranks", e->ranks);
        if (e->variant_label) json_str(&j, "variant", e->variant_label);
        if (e->sizeless) json_bool(&j, "sizeless", 1);
        if (e->phases > 1) json_int(&j, "phases", e->phases);
        if (e->skip) json_str(&j, "skip", e->skip);
        json_close_obj(&j);
    }
    json_close_arr(&j);
    json_end(&j);
    int rc = json_emit(&j, out);
    json_free(&j);
    return rc;
}
