/* Strict option parsing: every number is range-checked, every error names the
 * option and the fix. */
#include "options.h"
#include "bench.h"
#include "sync.h"
#include "version.h"
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    O_SIZES = 256, O_UNITS, O_REPS, O_MIN_REPS, O_MAX_REPS, O_CI, O_MAX_TIME,
    O_WARMUP, O_WARMUP_BYTES, O_WINDOW, O_TIMEOUT, O_OFF_CACHE, O_MAX_MEMORY,
    O_CHECK, O_RAW, O_FORMAT, O_OUTPUT, O_LIST, O_JSON, O_VERSION, O_MPI_INFO, O_HELP,
    O_NITER, O_NCOMPUTE, O_NBLOCK, O_SYNC, O_DATATYPE, O_OP, O_IN_PLACE, O_ROTATE_ROOT, O_NPMIN,
    O_NBC_TEST, O_GRID, O_ORDER
};

static const struct option long_options[] = {
    {"sizes", required_argument, 0, O_SIZES},
    {"units", required_argument, 0, O_UNITS},
    {"reps", required_argument, 0, O_REPS},
    {"min-reps", required_argument, 0, O_MIN_REPS},
    {"max-reps", required_argument, 0, O_MAX_REPS},
    {"ci-target", required_argument, 0, O_CI},
    {"max-time", required_argument, 0, O_MAX_TIME},
    {"warmup", required_argument, 0, O_WARMUP},
    {"warmup-bytes", required_argument, 0, O_WARMUP_BYTES},
    {"window", required_argument, 0, O_WINDOW},
    {"timeout", required_argument, 0, O_TIMEOUT},
    {"off-cache", optional_argument, 0, O_OFF_CACHE},
    {"max-memory", required_argument, 0, O_MAX_MEMORY},
    {"check", no_argument, 0, O_CHECK},
    {"raw", no_argument, 0, O_RAW},
    {"format", required_argument, 0, O_FORMAT},
    {"output", required_argument, 0, O_OUTPUT},
    {"list", no_argument, 0, O_LIST},
    {"json", no_argument, 0, O_JSON},
    {"version", no_argument, 0, O_VERSION},
    {"mpi-info", no_argument, 0, O_MPI_INFO},
    {"help", no_argument, 0, O_HELP},
    {"niter", required_argument, 0, O_NITER},
    {"ncompute", required_argument, 0, O_NCOMPUTE},
    {"nblock", required_argument, 0, O_NBLOCK},
    {"sync", required_argument, 0, O_SYNC},
    {"datatype", required_argument, 0, O_DATATYPE},
    {"op", required_argument, 0, O_OP},
    {"in-place", no_argument, 0, O_IN_PLACE},
    {"rotate-root", no_argument, 0, O_ROTATE_ROOT},
    {"npmin", required_argument, 0, O_NPMIN},
    {"nbc-test", required_argument, 0, O_NBC_TEST},
    {"grid", required_argument, 0, O_GRID},
    {"order", required_argument, 0, O_ORDER},
    {0, 0, 0, 0},
};

void options_usage(void)
{
    printf(
        "usage: mpiexec -n N mpiscope-engine [options] BENCH...\n"
        "\n"
        "Times MPI benchmarks and writes JSON Lines (see docs/engine.md).\n"
        "\n"
        "  --list [--json]        print the benchmarks and exit\n"
        "  --sizes EXPR           message sizes: 0,1:4M  1:4096:+64  1:4M:*4  1:512K:2^k-1\n"
        "  --units bytes|words    unit of --sizes (a word is 8 bytes)\n"
        "  --reps N               fixed samples per point (no adaptive stopping)\n"
        "  --min-reps N           at least N samples (16)\n"
        "  --max-reps N           at most N samples (100000)\n"
        "  --ci-target F          stop when the median's 95%% CI is within +-F (0.02)\n"
        "  --max-time S           time cap per point in seconds (1.0)\n"
        "  --warmup N             untimed iterations per point, at least (8)\n"
        "  --warmup-bytes B       pump at least B bytes through first (4M)\n"
        "  --window N             messages in flight for bw, bibw, msgrate (64)\n"
        "  --timeout S            watchdog per point (derived from the previous point)\n"
        "  --off-cache[=BYTES]    cycle buffers larger than the cache (default: LLC size)\n"
        "  --max-memory BYTES     per-rank memory limit; bigger points are skipped\n"
        "  --check                verify every received byte before timing\n"
        "  --raw                  keep every sample in the records\n"
        "  --format jsonl|table   output format (jsonl)\n"
        "  --output FILE          write records to FILE (- = stdout)\n"
        "ring case study (ringcs1..ringcs5):\n"
        "  --niter N              iterations per timed block (10)\n"
        "  --ncompute A[,B]       multiplications per element on even/odd iteration+rank (0)\n"
        "  --nblock N             elements computed between MPI_Testall calls, ringcs5 (1024)\n"
        "collectives:\n"
        "  --sync window|barrier|none  how samples start (window for collectives)\n"
        "  --datatype byte|int|float|double  element type (byte; float for reductions)\n"
        "  --op sum|max|min       reduction operation (sum)\n"
        "  --in-place             use MPI_IN_PLACE where the collective allows it\n"
        "  --rotate-root          root = iteration mod ranks (bcast, reduce, gather, scatter)\n"
        "  --npmin N              also measure on the first N, 2N, 4N ... ranks\n"
        "  --nbc-test N           MPI_Test calls during overlapped compute (0)\n"
        "process grids and rank order (grid, pairs):\n"
        "  --grid PxQ             only this grid shape (every factorisation of the ranks)\n"
        "  --order block|cyclic|LIST  renumber ranks: by host, dealt across hosts, or\n"
        "                         LIST = launch ranks in their new order, e.g. 0,2,1,3\n"
        "  --mpi-info             print the MPI library version as JSON, no mpiexec needed\n"
        "  --version, --help\n");
}

static int parse_long(const char *name, const char *text, long lo, long hi, long *out,
                      char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long x = strtol(text, &end, 10);
    if (errno || end == text || *end || x < lo || x > hi) {
        snprintf(err, errlen, "--%s expects a whole number from %ld to %ld, got '%s'", name, lo, hi, text);
        return -1;
    }
    *out = x;
    return 0;
}

static int parse_double(const char *name, const char *text, double lo, double hi, double *out,
                        char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double x = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(x) || x < lo || x > hi) {
        snprintf(err, errlen, "--%s expects a number from %g to %g, got '%s'", name, lo, hi, text);
        return -1;
    }
    *out = x;
    return 0;
}

/* A byte count with an optional K/M/G suffix. */
static int parse_bytes(const char *name, const char *text, long *out, char *err, size_t errlen)
{
    size_list_t one = {0};
    char why[256];
    if (strpbrk(text, ":,") || sizes_parse(text, 1, &one, why, sizeof why) || one.n != 1) {
        snprintf(err, errlen, "--%s expects a byte count such as 4096, 64K or 1G, got '%s'", name, text);
        sizes_free(&one);
        return -1;
    }
    *out = one.v[0];
    sizes_free(&one);
    return 0;
}

/* PxQ: two whole numbers, P process rows by Q process columns. */
static int parse_grid(const char *text, options_t *o, char *err, size_t errlen)
{
    char *end, *end2 = NULL;
    errno = 0;
    long p = strtol(text, &end, 10), q = 0;
    if (!errno && end != text && (*end == 'x' || *end == 'X')) q = strtol(end + 1, &end2, 10);
    if (errno || q < 1 || p < 1 || *end2 || p > (1 << 20) || q > (1 << 20)) {
        snprintf(err, errlen, "--grid expects PxQ with whole numbers P, Q >= 1 (e.g. 2x3), got '%s'", text);
        return -1;
    }
    o->grid_p = (int)p;
    o->grid_q = (int)q;
    return 0;
}

/* block, cyclic, or a comma-separated permutation (its length is checked
 * against the ranks after MPI_Init). */
static int parse_order(const char *text, options_t *o, char *err, size_t errlen)
{
    free(o->order_list);
    o->order_list = NULL;
    o->order_n = 0;
    if (strcmp(text, "block") == 0 || strcmp(text, "cyclic") == 0) { o->order = text; return 0; }
    size_t len = strlen(text), cap = len / 2 + 1;
    int *v = malloc(cap * sizeof *v);
    const char *s = text;
    int n = 0;
    while (v && *s) {
        char *end;
        errno = 0;
        long x = strtol(s, &end, 10);
        if (errno || end == s || x < 0 || x > (1 << 24) || (*end && *end != ',') || (size_t)n >= cap) break;
        for (int i = 0; i < n && x >= 0; i++)
            if (v[i] == x) x = -1;
        if (x < 0) break;
        v[n++] = (int)x;
        if (*end && !end[1]) { n = 0; break; }  /* a trailing comma */
        s = *end ? end + 1 : end;
    }
    if (!v || *s || n == 0) {
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

int options_parse(int argc, char **argv, options_t *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->sizes_expr = "0,1:4M";
    o->unit = 1;
    o->min_reps = 16;
    o->max_reps = 100000;
    o->ci_target = 0.02;
    o->max_time_s = 1.0;
    o->warmup = 8;
    o->warmup_bytes = 4L << 20;
    o->window = 64;
    o->niter = 10;
    o->nblock = 1024;
    o->datatype = -1;
    o->format = FORMAT_JSONL;
    o->output = "-";

    long l;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":", long_options, NULL)) != -1) {
        switch (c) {
        case O_SIZES: o->sizes_expr = optarg; break;
        case O_UNITS:
            if (strcmp(optarg, "bytes") == 0) o->unit = 1;
            else if (strcmp(optarg, "words") == 0) o->unit = 8;
            else { snprintf(err, errlen, "--units expects 'bytes' or 'words', got '%s'", optarg); return OPT_ERROR; }
            break;
        case O_REPS: if (parse_long("reps", optarg, 1, 10000000, &o->reps, err, errlen)) return OPT_ERROR; break;
        case O_MIN_REPS: if (parse_long("min-reps", optarg, 1, 10000000, &o->min_reps, err, errlen)) return OPT_ERROR; break;
        case O_MAX_REPS: if (parse_long("max-reps", optarg, 1, 10000000, &o->max_reps, err, errlen)) return OPT_ERROR; break;
        case O_CI: if (parse_double("ci-target", optarg, 1e-6, 1.0, &o->ci_target, err, errlen)) return OPT_ERROR; break;
        case O_MAX_TIME: if (parse_double("max-time", optarg, 1e-6, 86400, &o->max_time_s, err, errlen)) return OPT_ERROR; break;
        case O_WARMUP: if (parse_long("warmup", optarg, 0, 10000000, &o->warmup, err, errlen)) return OPT_ERROR; break;
        case O_WARMUP_BYTES: if (parse_bytes("warmup-bytes", optarg, &o->warmup_bytes, err, errlen)) return OPT_ERROR; break;
        case O_WINDOW: if (parse_long("window", optarg, 1, 4096, &l, err, errlen)) return OPT_ERROR; o->window = (int)l; break;
        case O_TIMEOUT: if (parse_double("timeout", optarg, 0.001, 864000, &o->timeout_s, err, errlen)) return OPT_ERROR; break;
        case O_OFF_CACHE:
            if (!optarg) o->off_cache_bytes = -1; /* the last-level cache, found later */
            else if (parse_bytes("off-cache", optarg, &o->off_cache_bytes, err, errlen)) return OPT_ERROR;
            break;
        case O_MAX_MEMORY:
            if (parse_bytes("max-memory", optarg, &l, err, errlen)) return OPT_ERROR;
            o->max_memory_bytes = (double)l;
            break;
        case O_NITER: if (parse_long("niter", optarg, 1, 1000000, &l, err, errlen)) return OPT_ERROR; o->niter = (int)l; break;
        case O_NBLOCK: if (parse_long("nblock", optarg, 1, 1L << 30, &o->nblock, err, errlen)) return OPT_ERROR; break;
        case O_NCOMPUTE: {
            char a[32] = "", *comma = strchr(optarg, ',');
            snprintf(a, sizeof a, "%.*s", comma ? (int)(comma - optarg) : (int)strlen(optarg), optarg);
            if (parse_long("ncompute", a, 0, 1000000, &l, err, errlen)) return OPT_ERROR;
            o->ncompute_a = o->ncompute_b = (int)l;
            if (comma) {
                if (parse_long("ncompute", comma + 1, 0, 1000000, &l, err, errlen)) return OPT_ERROR;
                o->ncompute_b = (int)l;
            }
            break;
        }
        case O_SYNC:
            if (!sync_name_ok(optarg)) {
                snprintf(err, errlen, "--sync expects 'window', 'barrier' or 'none', got '%s'", optarg);
                return OPT_ERROR;
            }
            o->sync = optarg;
            break;
        case O_DATATYPE: {
            static const char *const names[] = {"byte", "int", "float", "double"};
            o->datatype = -1;
            for (int i = 0; i < 4; i++) if (strcmp(optarg, names[i]) == 0) o->datatype = i;
            if (o->datatype < 0) {
                snprintf(err, errlen, "--datatype expects 'byte', 'int', 'float' or 'double', got '%s'", optarg);
                return OPT_ERROR;
            }
            break;
        }
        case O_OP:
            if (strcmp(optarg, "sum") == 0) o->op = COLL_SUM;
            else if (strcmp(optarg, "max") == 0) o->op = COLL_MAX;
            else if (strcmp(optarg, "min") == 0) o->op = COLL_MIN;
            else { snprintf(err, errlen, "--op expects 'sum', 'max' or 'min', got '%s'", optarg); return OPT_ERROR; }
            break;
        case O_IN_PLACE: o->in_place = 1; break;
        case O_ROTATE_ROOT: o->rotate_root = 1; break;
        case O_NPMIN: if (parse_long("npmin", optarg, 1, 1 << 24, &l, err, errlen)) return OPT_ERROR; o->npmin = (int)l; break;
        case O_NBC_TEST: if (parse_long("nbc-test", optarg, 0, 1000000, &l, err, errlen)) return OPT_ERROR; o->nbc_tests = (int)l; break;
        case O_GRID: if (parse_grid(optarg, o, err, errlen)) return OPT_ERROR; break;
        case O_ORDER: if (parse_order(optarg, o, err, errlen)) return OPT_ERROR; break;
        case O_CHECK: o->check = 1; break;
        case O_RAW: o->raw = 1; break;
        case O_FORMAT:
            if (strcmp(optarg, "jsonl") == 0) o->format = FORMAT_JSONL;
            else if (strcmp(optarg, "table") == 0) o->format = FORMAT_TABLE;
            else { snprintf(err, errlen, "--format expects 'jsonl' or 'table', got '%s'", optarg); return OPT_ERROR; }
            break;
        case O_OUTPUT:
            if (!*optarg) { snprintf(err, errlen, "--output expects a file name or -"); return OPT_ERROR; }
            o->output = optarg;
            break;
        case O_LIST: o->list = 1; break;
        case O_JSON: o->json = 1; break;
        case O_VERSION: o->version = 1; break;
        case O_MPI_INFO: o->mpi_info = 1; break;
        case O_HELP: o->help = 1; break;
        case ':':
            snprintf(err, errlen, "option '%s' needs a value", argv[optind - 1]);
            return OPT_ERROR;
        default:
            snprintf(err, errlen, "unknown option '%s' (see --help)", argv[optind - 1]);
            return OPT_ERROR;
        }
    }
    if (o->help || o->list || o->version || o->mpi_info) return OPT_EXIT;
    if (o->min_reps > o->max_reps) {
        snprintf(err, errlen, "--min-reps (%ld) is larger than --max-reps (%ld)", o->min_reps, o->max_reps);
        return OPT_ERROR;
    }
    if (sizes_parse(o->sizes_expr, o->unit, &o->sizes, err, errlen)) return OPT_ERROR;
    o->benchmarks = argv + optind;
    o->nbenchmarks = argc - optind;
    if (o->nbenchmarks == 0) {
        snprintf(err, errlen, "no benchmark given: name one or more, e.g. 'pingpong bw' (--list shows them)");
        return OPT_ERROR;
    }
    return OPT_OK;
}
