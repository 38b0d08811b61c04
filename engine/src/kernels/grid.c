/* HPL's communication per step on a P x Q process grid: the panel is broadcast
 * along every process row (from the column that owns it, which moves on each
 * step), then reduced along every process column. Ranks fill the grid row by
 * row (HPL's default mapping), so rank r sits at row r / Q, column r % Q.
 * Phase 0 is the whole step; phases 1 and 2 time the row and the column alone. */
#include "kernels/grid.h"
#include "world.h"
#include "json.h"
#include "mpicheck.h"
#include "point.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PHASE_STEP, PHASE_ROW, PHASE_COLUMN };

/* ---- --grid PxQ: one shape instead of every factorisation of the ranks ---- */

static struct { long p, q; } only;  /* 0 x 0: every shape */

static int parse_grid(const opt_spec_t *s, const char *text, char *err, size_t errlen)
{
    (void)s;
    char *end, *end2 = NULL;
    errno = 0;
    long p = strtol(text, &end, 10), q = 0;
    if (!errno && end != text && (*end == 'x' || *end == 'X')) q = strtol(end + 1, &end2, 10);
    if (errno || q < 1 || p < 1 || *end2 || p > (1 << 20) || q > (1 << 20)) {
        snprintf(err, errlen, "--grid expects PxQ with whole numbers P, Q >= 1 (e.g. 2x3), got '%s'", text);
        return -1;
    }
    only.p = p;
    only.q = q;
    return 0;
}

static void record_grid(const opt_spec_t *s, json_t *j)
{
    (void)s;
    char shape[48];
    snprintf(shape, sizeof shape, "%ldx%ld", only.p, only.q);
    json_str(j, "grid", only.p ? shape : NULL);
}

static int grid_fits(int nranks, char *err, size_t errlen)
{
    if (!only.p || only.p * only.q == nranks) return 0;
    snprintf(err, errlen, "--grid %ldx%ld needs %ld ranks, this job has %d: run it with mpiexec -n %ld or leave "
             "--grid out for every shape", only.p, only.q, only.p * only.q, nranks, only.p * only.q);
    return -1;
}

static const opt_spec_t specs[] = {
    {"grid", OPT_CUSTOM, &only, 0, 0, NULL, "PxQ", "only this grid shape (every factorisation of the ranks)", NULL,
     0, parse_grid, record_grid},
    {NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL},
};

const option_table_t grid_options = {"process grids (grid)", specs, grid_fits};

typedef struct grid_state {
    int p, q, my_row, my_col;
    MPI_Comm row, col;
} grid_state_t;

/* The shape of a variant: --grid, or the variant-th divisor of the ranks as P. */
static int shape_of(int nranks, int variant, int *p, int *q)
{
    if (only.p) {
        *p = (int)only.p, *q = (int)only.q;
        return only.p * only.q == nranks && variant == 0 ? 0 : -1;
    }
    for (int d = 1, k = 0; d <= nranks; d++)
        if (nranks % d == 0 && k++ == variant) {
            *p = d, *q = nranks / d;
            return 0;
        }
    return -1;
}

int grid_variants(int nranks)
{
    if (only.p) return only.p * only.q == nranks ? 1 : 0;
    int k = 0;
    for (int d = 1; d <= nranks; d++) k += nranks % d == 0;
    return k;
}

void grid_variant_label(int nranks, int variant, char *buf, size_t len)
{
    int p = 0, q = 0;
    shape_of(nranks, variant, &p, &q);
    snprintf(buf, len, "%dx%d", p, q);
}

double grid_one(const bench_ctx_t *c) { (void)c; return 1.0; }
double grid_size(const bench_ctx_t *c) { return (double)c->size; }

/* The broadcast panel and the column's reduction land in separate halves. */
void grid_buffers(const bench_ctx_t *c, size_t *send, size_t *recv)
{
    *send = (size_t)c->size;
    *recv = 2 * (size_t)c->size;
}

void grid_setup(bench_ctx_t *c)
{
    grid_state_t *g = calloc(1, sizeof *g);
    if (!g || shape_of(c->nranks, c->variant, &g->p, &g->q)) MPI_Abort(MPI_COMM_WORLD, 3);
    g->my_row = c->rank / g->q;
    g->my_col = c->rank % g->q;
    MPI_CHECK(MPI_Comm_split(c->comm, g->my_row, g->my_col, &g->row));
    MPI_CHECK(MPI_Comm_split(c->comm, g->my_col, g->my_row, &g->col));
    c->state = g;
}

void grid_teardown(bench_ctx_t *c)
{
    grid_state_t *g = c->state;
    MPI_CHECK(MPI_Comm_free(&g->row));
    MPI_CHECK(MPI_Comm_free(&g->col));
    free(g);
    c->state = NULL;
}

/* The panel's owner column moves one step to the right each step, as in HPL. */
static int owner_col(const bench_ctx_t *c, const grid_state_t *g) { return (int)(c->iter % g->q); }

void grid_event(bench_ctx_t *c)
{
    grid_state_t *g = c->state;
    int n = (int)c->size;
    if (c->phase != PHASE_COLUMN) {
        int root = owner_col(c, g);
        if (c->checking && g->my_col == root) memcpy(c->rbuf, c->sbuf, (size_t)n);
        MPI_CHECK(MPI_Bcast(c->rbuf, n, MPI_BYTE, root, g->row));
    }
    if (c->phase != PHASE_ROW)
        MPI_CHECK(MPI_Allreduce(c->sbuf, c->rbuf + n, n, MPI_UNSIGNED_CHAR, MPI_BXOR, g->col));
}

/* The row's panel is its owner's pattern; the column's result is the XOR of
 * every column member's pattern. */
long grid_verify(const bench_ctx_t *c, long *verified)
{
    const grid_state_t *g = c->state;
    size_t n = (size_t)c->size;
    long errors = check_compare(c->rbuf, n, g->my_row * g->q + owner_col(c, g), c->iter);
    unsigned char *want = calloc(n + 1, 1), *one = malloc(n + 1);
    if (!want || !one) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int r = 0; r < g->p; r++) {
        check_fill((char *)one, n, r * g->q + g->my_col, c->iter);
        for (size_t i = 0; i < n; i++) want[i] ^= one[i];
    }
    const unsigned char *got = (const unsigned char *)c->rbuf + n;
    for (size_t i = 0; i < n; i++) errors += got[i] != want[i];
    free(want);
    free(one);
    *verified += 2 * (long)n;
    return errors;
}

/* One row or column: its ranks and the hosts they span. Returns the host count. */
static int emit_group(json_t *j, const world_t *w, int first, int stride, int count)
{
    json_obj(j, NULL);
    json_arr(j, "ranks");
    for (int i = 0; i < count; i++) json_int(j, NULL, first + i * stride);
    json_close_arr(j);
    json_arr(j, "hosts");
    int hosts = 0;
    for (int i = 0; i < count; i++) {
        int r = first + i * stride, seen = 0;
        for (int k = 0; k < i && !seen; k++) seen = same_host(w, r, first + k * stride);
        if (!seen) json_str(j, NULL, w->ranks[r].host), hosts++;
    }
    json_close_arr(j);
    json_close_obj(j);
    return hosts;
}

void grid_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    int gp = 0, gq = 0;
    if (shape_of(c->nranks, c->variant, &gp, &gq)) return;
    char shape[32];
    snprintf(shape, sizeof shape, "%dx%d", gp, gq);
    json_obj(j, "grid");
    json_str(j, "shape", shape);
    json_int(j, "p", gp);
    json_int(j, "q", gq);
    json_str(j, "mapping", "row-major");
    int row_hosts = 0, col_hosts = 0;
    json_arr(j, "rows");
    for (int r = 0; r < gp; r++) {
        int h = emit_group(j, w, r * gq, 1, gq);
        if (h > row_hosts) row_hosts = h;
    }
    json_close_arr(j);
    json_arr(j, "columns");
    for (int q = 0; q < gq; q++) {
        int h = emit_group(j, w, q, gq, gp);
        if (h > col_hosts) col_hosts = h;
    }
    json_close_arr(j);
    json_int(j, "max_hosts_per_row", row_hosts);
    json_int(j, "max_hosts_per_column", col_hosts);
    json_close_obj(j);
    if (p->nphases < 3) return;
    static const char *const names[] = {"step", "row", "column"};
    json_obj(j, "phases_us");
    for (int i = 0; i < 3; i++) json_num(j, names[i], p->phase_us[i]);
    json_close_obj(j);
    json_obj(j, "phase_samples");
    for (int i = 0; i < 3; i++) json_int(j, names[i], (long long)p->phase_n[i]);
    json_close_obj(j);
}
