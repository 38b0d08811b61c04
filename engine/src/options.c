/* The core's option table, and the assembly of getopt's long options, --help
 * and the context's "options" object from it and from every family's table
 * (the registry rows point at them). */
#include "options.h"
#include "bench.h"
#include "buffers.h"
#include "json.h"
#include "option_table.h"
#include "registry.h"
#include "sim.h"
#include "sync.h"
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_FAMILY_TABLES = 32, CORE_SPECS = 32, OPTION_BASE = 256 };

static const char *const unit_names[] = {"bytes", "words", NULL};
static const char *const format_names[] = {"jsonl", "table", NULL};

static int parse_sizes_text(const opt_spec_t *s, const char *text, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    ((options_t *)s->store)->sizes_expr = text;
    return 0;
}

static void record_sizes(const opt_spec_t *s, json_t *j)
{
    const options_t *o = s->store;
    json_str(j, "sizes", o->sizes_expr);
    json_arr(j, "sizes_bytes");
    for (size_t i = 0; i < o->sizes.n; i++) json_int(j, NULL, o->sizes.v[i]);
    json_close_arr(j);
}

static int parse_max_memory(const opt_spec_t *s, const char *text, char *err, size_t errlen)
{
    long bytes;
    if (opt_parse_bytes(s->name, text, &bytes, err, errlen)) return -1;
    ((options_t *)s->store)->max_memory_bytes = (double)bytes;
    return 0;
}

static void record_max_memory(const opt_spec_t *s, json_t *j)
{
    json_num(j, "max_memory_bytes", ((const options_t *)s->store)->max_memory_bytes);
}

/* S[,R]: the send and receive buffers' bytes past a page boundary; R defaults to S. Below the
 * smallest page (4 KiB) so that every slot of a pool keeps the same offset. */
static int parse_buffer_offset(const opt_spec_t *s, const char *text, char *err, size_t errlen)
{
    long *off = ((options_t *)s->store)->buffer_offset;
    char *end = NULL;
    for (int i = 0; i < 2; i++) {
        const char *at = i == 0 ? text : end + 1;
        off[i] = strtol(at, &end, 10);
        if (end == at || off[i] < 0 || off[i] >= BUFFER_OFFSET_LIMIT || (*end && *end != ',') || (i == 1 && *end)) {
            snprintf(err, errlen, "--buffer-offset expects S or S,R: bytes from 0 to %d, got '%s'",
                     BUFFER_OFFSET_LIMIT - 1, text);
            return -1;
        }
        if (!*end) {
            if (i == 0) off[1] = off[0];
            break;
        }
    }
    return 0;
}

static void record_buffer_offset(const opt_spec_t *s, json_t *j)
{
    const long *off = ((const options_t *)s->store)->buffer_offset;
    json_arr(j, "buffer_offset");
    for (int i = 0; i < 2; i++) json_int(j, NULL, off[i]);
    json_close_arr(j);
}

static int parse_output(const opt_spec_t *s, const char *text, char *err, size_t errlen)
{
    if (!*text) {
        snprintf(err, errlen, "--output expects a file name or -");
        return -1;
    }
    ((options_t *)s->store)->output = text;
    return 0;
}

/* block, cyclic, or a comma-separated permutation (its length is checked
 * against the ranks by options_fit_ranks). */
static int parse_order(const opt_spec_t *s, const char *text, char *err, size_t errlen)
{
    options_t *o = s->store;
    free(o->order_list);
    o->order_list = NULL;
    o->order_n = 0;
    if (strcmp(text, "block") == 0 || strcmp(text, "cyclic") == 0) { o->order = text; return 0; }
    size_t len = strlen(text), cap = len / 2 + 1;
    int *v = malloc(cap * sizeof *v);
    const char *p = text;
    int n = 0;
    while (v && *p) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (errno || end == p || x < 0 || x > (1 << 24) || (*end && *end != ',') || (size_t)n >= cap) break;
        for (int i = 0; i < n && x >= 0; i++)
            if (v[i] == x) x = -1;
        if (x < 0) break;
        v[n++] = (int)x;
        if (*end && !end[1]) { n = 0; break; }  /* a trailing comma */
        p = *end ? end + 1 : end;
    }
    if (!v || *p || n == 0) {
        free(v);
        snprintf(err, errlen, "--order expects 'block', 'cyclic' or a list of distinct ranks such as "
                 "0,2,1,3, got '%s'", text);
        return -1;
    }
    o->order = "list";
    o->order_list = v;
    o->order_n = n;
    return 0;
}

static void record_order(const opt_spec_t *s, json_t *j)
{
    const options_t *o = s->store;
    json_str(j, "order", o->order);
    if (!o->order_list) return;
    json_arr(j, "order_list");
    for (int i = 0; i < o->order_n; i++) json_int(j, NULL, o->order_list[i]);
    json_close_arr(j);
}

static int parse_points(const opt_spec_t *s, const char *text, char *err, size_t errlen)
{
    return points_parse(text, s->store, err, errlen);
}

/* The core's table over o (it names o's fields), ending with a NULL name. */
static void core_table(options_t *o, opt_spec_t *t)
{
    const opt_spec_t specs[] = {
        {"sizes", OPT_CUSTOM, o, 0, 0, NULL, "EXPR", "message sizes: 0,1:4M  1:4096:+64  1:4M:*4  1:512K:2^k-1",
         "sizes", 0, parse_sizes_text, record_sizes},
        {"units", OPT_CHOICE, &o->units, 0, 0, unit_names, "bytes|words", "unit of --sizes (a word is 8 bytes)",
         "units", 0, NULL, NULL},
        {"reps", OPT_LONG, &o->reps, 1, 1e7, NULL, "N", "fixed samples per point (no adaptive stopping)", "reps",
         OPT_NULL_WHEN_UNSET, NULL, NULL},
        {"min-reps", OPT_LONG, &o->min_reps, 1, 1e7, NULL, "N", "at least N samples (16)", "min_reps", 0, NULL, NULL},
        {"stop-identical", OPT_LONG, &o->stop_identical, 0, 1e7, NULL, "N",
         "stop once N samples are identical (2 under simulation, else 0: off)", "stop_identical", 0, NULL, NULL},
        {"max-reps", OPT_LONG, &o->max_reps, 1, 1e7, NULL, "N", "at most N samples (100000)", "max_reps", 0, NULL,
         NULL},
        {"ci-target", OPT_DOUBLE, &o->ci_target, 1e-6, 1.0, NULL, "F",
         "stop when the median's 95% CI is within +-F (0.02)", "ci_target", 0, NULL, NULL},
        {"max-time", OPT_DOUBLE, &o->max_time_s, 1e-6, 86400, NULL, "S", "time cap per point in seconds (1.0)",
         "max_time_s", 0, NULL, NULL},
        {"warmup", OPT_LONG, &o->warmup, 0, 1e7, NULL, "N", "untimed iterations per point, at least (8)", "warmup", 0,
         NULL, NULL},
        {"warmup-bytes", OPT_BYTES, &o->warmup_bytes, 0, 0, NULL, "B", "pump at least B bytes through first (4M)",
         "warmup_bytes", 0, NULL, NULL},
        {"timeout", OPT_DOUBLE, &o->timeout_s, 0.001, 864000, NULL, "S",
         "watchdog per point (derived from the previous point)", "timeout_s", OPT_NULL_WHEN_UNSET, NULL, NULL},
        {"timeout-extends", OPT_FLAG, &o->timeout_extends, 0, 0, NULL, NULL,
         "progress extends --timeout as it does a derived limit", "timeout_extends", 0, NULL, NULL},
        {"off-cache", OPT_BYTES, &o->off_cache_bytes, 0, 0, NULL, "BYTES",
         "cycle buffers larger than the cache (default: LLC size)", "off_cache_bytes", OPT_VALUE_OPTIONAL, NULL,
         NULL},
        {"buffer-offset", OPT_CUSTOM, o, 0, 0, NULL, "S[,R]",
         "place send buffers S and receive buffers R bytes past a page boundary (0,0: page-aligned, as OSU's)",
         NULL, 0, parse_buffer_offset, record_buffer_offset},
        {"max-memory", OPT_CUSTOM, o, 0, 0, NULL, "BYTES", "per-rank memory limit; bigger points are skipped", NULL,
         0, parse_max_memory, record_max_memory},
        {"check", OPT_FLAG, &o->check, 0, 0, NULL, NULL, "verify every received byte before timing", "check", 0,
         NULL, NULL},
        {"raw", OPT_FLAG, &o->raw, 0, 0, NULL, NULL, "keep every sample in the records", "raw", 0, NULL, NULL},
        {"sync", OPT_CHOICE, &o->sync_choice, 0, 0, sync_method_names, "window|barrier|none",
         "how samples start (window for collectives)", "sync", OPT_NULL_WHEN_UNSET, NULL, NULL},
        {"npmin", OPT_LONG, &o->npmin, 1, 1 << 24, NULL, "N", "also measure on the first N, 2N, 4N ... ranks",
         "npmin", OPT_NULL_WHEN_UNSET, NULL, NULL},
        {"order", OPT_CUSTOM, o, 0, 0, NULL, "block|cyclic|LIST",
         "renumber ranks: by host, dealt across hosts, or LIST = launch ranks in their new order (0,2,1,3)", NULL,
         0, parse_order, record_order},
        {"format", OPT_CHOICE, &o->format, 0, 0, format_names, "jsonl|table", "output format (jsonl)", NULL, 0,
         NULL, NULL},
        {"output", OPT_CUSTOM, o, 0, 0, NULL, "FILE", "write records to FILE (- = stdout)", NULL, 0, parse_output,
         NULL},
        {"plan", OPT_FLAG, &o->plan, 0, 0, NULL, NULL,
         "print the points as one JSON line and exit (with --ranks; no mpiexec)", NULL, 0, NULL, NULL},
        {"ranks", OPT_LONG, &o->ranks, 1, 1 << 24, NULL, "N", "the number of ranks --plan plans for", NULL, 0, NULL,
         NULL},
        {"points", OPT_CUSTOM, &o->points, 0, 0, NULL, "SPEC",
         "measure only these plan entries: ids and ranges 0,3,5-9, or @FILE", NULL, 0, parse_points, NULL},
        {"list", OPT_FLAG, &o->list, 0, 0, NULL, NULL, "print the benchmarks and exit (--json: as JSON)", NULL, 0,
         NULL, NULL},
        {"json", OPT_FLAG, &o->json, 0, 0, NULL, NULL, "with --list: JSON", NULL, 0, NULL, NULL},
        {"mpi-info", OPT_FLAG, &o->mpi_info, 0, 0, NULL, NULL,
         "print the MPI library version as JSON, no mpiexec needed", NULL, 0, NULL, NULL},
        {"version", OPT_FLAG, &o->version, 0, 0, NULL, NULL, "print the engine's version", NULL, 0, NULL, NULL},
        {"help", OPT_FLAG, &o->help, 0, 0, NULL, NULL, "this text", NULL, 0, NULL, NULL},
        {NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL},
    };
    _Static_assert(sizeof specs / sizeof *specs <= CORE_SPECS, "CORE_SPECS is too small");
    memcpy(t, specs, sizeof specs);
}

/* Every distinct family table, in registry order. */
static int family_tables(const option_table_t **out)
{
    int n = 0;
    for (int i = 0; i < registry_size; i++) {
        const option_table_t *t = registry[i]->options;
        int seen = !t;
        for (int k = 0; k < n && !seen; k++) seen = out[k] == t;
        if (seen) continue;
        if (n == MAX_FAMILY_TABLES) {  /* a build with more families than room: never silently drop options */
            fprintf(stderr, "mpiscope-engine: more than %d option tables: raise MAX_FAMILY_TABLES\n", n);
            exit(3);
        }
        out[n++] = t;
    }
    return n;
}

static size_t count_specs(const opt_spec_t *s)
{
    size_t n = 0;
    while (s[n].name) n++;
    return n;
}

void options_usage(void)
{
    options_t scratch;
    memset(&scratch, 0, sizeof scratch);
    opt_spec_t core[CORE_SPECS];
    core_table(&scratch, core);
    const option_table_t *tables[MAX_FAMILY_TABLES];
    int ntables = family_tables(tables);
    printf("usage: mpiexec -n N mpiscope-engine [options] BENCH...\n"
           "       mpiscope-engine --plan --ranks N [options] BENCH...\n"
           "\n"
           "Times MPI benchmarks and writes JSON Lines (see docs/engine.md).\n"
           "\n");
    for (const opt_spec_t *s = core; s->name; s++) opt_help(s);
    for (int t = 0; t < ntables; t++) {
        printf("\n%s:\n", tables[t]->title);
        for (const opt_spec_t *s = tables[t]->specs; s->name; s++) opt_help(s);
    }
}

static void defaults(options_t *o)
{
    memset(o, 0, sizeof *o);
    o->sizes_expr = "0,1:4M";
    o->min_reps = 16;
    o->max_reps = 100000;
    o->ci_target = 0.02;
    o->max_time_s = 1.0;
    o->warmup = 8;
    o->warmup_bytes = 4L << 20;
    o->simulated = sim_detect();  /* the one time the engine asks: the rest read this field */
    if (o->simulated) {
        /* A simulated point repeats exactly: after one warm-up call, 6 samples (the fewest that
         * give a 95 % interval) say what 16 would, at a third of the host time. */
        o->min_reps = SIM_MIN_REPS;
        o->warmup = SIM_WARMUP;
        o->stop_identical = SIM_STOP_IDENTICAL;
    }
    o->sync_choice = -1;
    o->output = "-";
}

/* What the options say together, after each was parsed alone. */
static int check_together(options_t *o, char *err, size_t errlen)
{
    if (o->plan && !o->ranks) {
        snprintf(err, errlen, "--plan needs --ranks N: the points depend on the number of ranks");
        return -1;
    }
    if (o->ranks && !o->plan) {
        snprintf(err, errlen, "--ranks goes with --plan; a launch takes its ranks from the launcher");
        return -1;
    }
    if (o->min_reps > o->max_reps) {
        snprintf(err, errlen, "--min-reps (%ld) is larger than --max-reps (%ld)", o->min_reps, o->max_reps);
        return -1;
    }
    o->unit = o->units == 1 ? 8 : 1;
    o->sync = o->sync_choice >= 0 ? sync_method_names[o->sync_choice] : NULL;
    return sizes_parse(o->sizes_expr, o->unit, &o->sizes, err, errlen);
}

/* A family's name (that is no row's name) stands for its rows in registry
 * order, each once; names given one by one are kept as given. */
static int expand_families(options_t *o)
{
    int families = 0;
    for (int i = 0; i < o->nbenchmarks; i++) families += bench_is_family(o->benchmarks[i]);
    if (!families) return 0;
    char **out = malloc((size_t)(o->nbenchmarks + registry_size) * sizeof *out);
    if (!out) return -1;
    int n = 0;
    for (int i = 0; i < o->nbenchmarks; i++) {
        if (!bench_is_family(o->benchmarks[i])) {
            out[n++] = o->benchmarks[i];
            continue;
        }
        for (int r = 0; r < registry_size; r++) {
            if (strcmp(registry[r]->family, o->benchmarks[i]) != 0) continue;
            int seen = 0;
            for (int k = 0; k < n && !seen; k++) seen = strcmp(out[k], registry[r]->name) == 0;
            if (!seen) out[n++] = (char *)registry[r]->name;
        }
    }
    o->expanded = out;
    o->benchmarks = out;
    o->nbenchmarks = n;
    return 0;
}

int options_parse(int argc, char **argv, options_t *o, char *err, size_t errlen)
{
    defaults(o);
    opt_spec_t core[CORE_SPECS];
    core_table(o, core);
    const option_table_t *tables[MAX_FAMILY_TABLES];
    int ntables = family_tables(tables);
    size_t total = count_specs(core);
    for (int t = 0; t < ntables; t++) total += count_specs(tables[t]->specs);
    const opt_spec_t **spec = malloc(total * sizeof *spec);
    struct option *longopts = calloc(total + 1, sizeof *longopts);
    if (!spec || !longopts) {
        free(spec);
        free(longopts);
        snprintf(err, errlen, "out of memory while parsing the options");
        return OPT_ERROR;
    }
    size_t n = 0;
    for (const opt_spec_t *s = core; s->name; s++) spec[n++] = s;
    for (int t = 0; t < ntables; t++)
        for (const opt_spec_t *s = tables[t]->specs; s->name; s++) spec[n++] = s;
    for (size_t i = 0; i < n; i++) {
        int has = !spec[i]->value ? no_argument : (spec[i]->flags & OPT_VALUE_OPTIONAL) ? optional_argument
                                                                                          : required_argument;
        longopts[i] = (struct option){spec[i]->name, has, NULL, OPTION_BASE + (int)i};
    }

    int rc = OPT_OK, c;
    opterr = 0;
    optind = 1;
    while (rc == OPT_OK && (c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        if (c == ':') {
            snprintf(err, errlen, "option '%s' needs a value", argv[optind - 1]);
            rc = OPT_ERROR;
        } else if (c < OPTION_BASE || (size_t)(c - OPTION_BASE) >= n) {
            snprintf(err, errlen, "unknown option '%s' (see --help)", argv[optind - 1]);
            rc = OPT_ERROR;
        } else if (opt_set(spec[c - OPTION_BASE], optarg, err, errlen)) {
            rc = OPT_ERROR;
        }
    }
    free(spec);
    free(longopts);
    if (rc != OPT_OK) return rc;
    if (o->help || o->list || o->version || o->mpi_info) return OPT_EXIT;
    if (check_together(o, err, errlen)) return OPT_ERROR;
    o->benchmarks = argv + optind;
    o->nbenchmarks = argc - optind;
    if (o->nbenchmarks == 0) {
        snprintf(err, errlen, "no benchmark given: name one or more, e.g. 'pingpong bw' (--list shows them)");
        return OPT_ERROR;
    }
    if (expand_families(o)) {
        snprintf(err, errlen, "out of memory while expanding the benchmark families");
        return OPT_ERROR;
    }
    return OPT_OK;
}

void options_free(options_t *o)
{
    free(o->expanded);
    o->expanded = NULL;
    sizes_free(&o->sizes);
    free(o->order_list);
    o->order_list = NULL;
    points_free(&o->points);
}

int options_fit_ranks(const options_t *o, int nranks, char *err, size_t errlen)
{
    if (o->order_list) {
        int fits = o->order_n == nranks;
        for (int i = 0; i < o->order_n && fits; i++) fits = o->order_list[i] < nranks;
        if (!fits) {
            snprintf(err, errlen, "--order needs every rank from 0 to %d exactly once (this job has %d ranks), "
                     "got %d", nranks - 1, nranks, o->order_n);
            return -1;
        }
    }
    const option_table_t *tables[MAX_FAMILY_TABLES];
    int ntables = family_tables(tables);
    for (int t = 0; t < ntables; t++)
        if (tables[t]->validate && tables[t]->validate(nranks, err, errlen)) return -1;
    return 0;
}

void options_record(json_t *j, const options_t *o)
{
    opt_spec_t core[CORE_SPECS];
    core_table((options_t *)o, core);  /* only read: the specs name o's fields */
    const option_table_t *tables[MAX_FAMILY_TABLES];
    int ntables = family_tables(tables);
    json_obj(j, "options");
    for (const opt_spec_t *s = core; s->name; s++) opt_record(s, j);
    for (int t = 0; t < ntables; t++)
        for (const opt_spec_t *s = tables[t]->specs; s->name; s++) opt_record(s, j);
    json_arr(j, "benchmarks");
    for (int i = 0; i < o->nbenchmarks; i++) json_str(j, NULL, o->benchmarks[i]);
    json_close_arr(j);
    json_close_obj(j);
}
