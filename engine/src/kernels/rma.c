/* One-sided communication: one kernel for every RMA row. Per event a rank
 * that is an origin opens an access epoch the way --rma-sync says, issues the
 * row's operations to each of its targets (--rma-ops rounds for the bandwidth
 * rows) and completes them; a rank that is a target takes part only where the
 * mode needs it (fence: MPI_Win_fence; pscw: MPI_Win_post / MPI_Win_wait).
 *
 * The window lives in a communicator of the row's participants (ranks 0 and 1
 * for the pair rows), so fence and window creation involve no bystander. Its
 * memory holds one slot per origin: a put or accumulate from origin o lands
 * in slot o of the target, a get reads slot 0. Under flush and flush_local one
 * passive epoch spans the whole point, opened as OSU and IMB open it (below).
 *
 * --check (not timed): the target's slots are set (zero, or the pattern a get
 * reads) and made public, the event runs, then origins complete remotely, all
 * meet in a barrier and the target makes the public copy private before its
 * slots are compared: the synchronisation rules of MPI 3.1 section 11.7. */
#include "kernels/rma.h"
#include "kernels/overlap.h"
#include "json.h"
#include "mpicheck.h"
#include "timer.h"
#include "point.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_MODES = 6 };
enum mode { S_FENCE, S_LOCK, S_FLUSH, S_FLUSH_LOCAL, S_LOCK_ALL, S_PSCW };
enum wkind { W_CREATE, W_ALLOCATE, W_DYNAMIC };
enum op { OP_PUT, OP_GET, OP_ACC, OP_GET_ACC, OP_FOP, OP_CAS };
enum pattern {
    P_PAIR,      /* 0 -> 1 */
    P_BIDIR,     /* 0 -> 1 and 1 -> 0 */
    P_ONE_ALL,   /* 0 -> every other rank */
    P_ALL_ALL,   /* every rank -> every other rank */
    P_EXCHANGE,  /* every rank -> its left and right neighbours on a ring */
};

static const char *const mode_names[] = {"fence", "lock", "flush", "flush_local", "lock_all", "pscw", NULL};
static const char *const wkind_names[] = {"create", "allocate", "dynamic", NULL};
static const char *const buffers_names[] = {"single", "multiple", NULL};
/* The element of (get-)accumulates. OSU sums MPI_CHAR, which the standard does not list for
 * MPI_SUM and MPICH sums on a slower path (+85 ns an 8-byte accumulate here, issue 27). */
static const char *const acc_type_names[] = {"unsigned_char", "char", NULL};
static const char *const op_names[] = {"put", "get", "accumulate", "get_accumulate", "fetch_and_op",
                                       "compare_and_swap"};

/* ---- options ---- */

static struct {
    int modes[MAX_MODES], nmodes;  /* 0 modes: flush only */
    int wkind;
    long ops, batch;
    int buffers;  /* -1 until given: multiple, as osu_put_bw and osu_get_bw */
    int acc_type; /* index into acc_type_names */
} opt = {{0}, 0, W_ALLOCATE, 64, 1, -1, 0};

static MPI_Datatype acc_type(void) { return opt.acc_type == 1 ? MPI_CHAR : MPI_UNSIGNED_CHAR; }

static int parse_sync(const opt_spec_t *s, const char *text, char *err, size_t errlen)
{
    int n = 0, seen[MAX_MODES] = {0};
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int m = 0; mode_names[m]; m++)
            if (strlen(mode_names[m]) == len && strncmp(p, mode_names[m], len) == 0) found = m;
        if (found < 0 || seen[found]) {
            snprintf(err, errlen, "--%s expects modes from fence, lock, flush, flush_local, lock_all, pscw, "
                     "each once, separated by commas, got '%s'", s->name, text);
            return -1;
        }
        seen[found] = 1;
        opt.modes[n++] = found;
        p += len;
        if (*p == ',' && *++p == '\0') n = 0;  /* a trailing comma */
        if (n == 0) break;
    }
    if (n == 0) {
        snprintf(err, errlen, "--%s expects modes from fence, lock, flush, flush_local, lock_all, pscw, "
                 "separated by commas, got '%s'", s->name, text);
        return -1;
    }
    opt.nmodes = n;
    return 0;
}

static void record_sync(const opt_spec_t *s, json_t *j)
{
    (void)s;
    json_arr(j, "rma_sync");
    if (opt.nmodes == 0) json_str(j, NULL, mode_names[S_FLUSH]);
    for (int i = 0; i < opt.nmodes; i++) json_str(j, NULL, mode_names[opt.modes[i]]);
    json_close_arr(j);
}

static const opt_spec_t specs[] = {
    {"rma-sync", OPT_CUSTOM, NULL, 0, 0, NULL, "LIST",
     "RMA synchronisation modes, one labelled point each: fence,lock,flush,flush_local,lock_all,pscw (flush)",
     "rma_sync", 0, parse_sync, record_sync},
    {"rma-win", OPT_CHOICE, &opt.wkind, 0, 0, wkind_names, "create|allocate|dynamic",
     "RMA window: MPI_Win_create, MPI_Win_allocate or MPI_Win_create_dynamic (allocate)", "rma_win", 0, NULL,
     NULL},
    {"rma-ops", OPT_LONG, &opt.ops, 1, 100000, NULL, "N",
     "RMA operations per epoch in the bandwidth rows (64)", "rma_ops", 0, NULL, NULL},
    {"rma-buffers", OPT_CHOICE, &opt.buffers, 0, 0, buffers_names, "single|multiple",
     "bandwidth rows: each operation of an epoch from its own source slot to its own target slot (multiple, "
     "as osu_put_bw: sbuf + j*size to disp + j*size) or all from one buffer to one place (single)",
     "rma_buffers", OPT_NULL_WHEN_UNSET, NULL, NULL},
    {"rma-acc-type", OPT_CHOICE, &opt.acc_type, 0, 0, acc_type_names, "unsigned_char|char",
     "element of the accumulate rows, summed (unsigned_char; char is OSU's MPI_CHAR)", "rma_acc_type", 0, NULL,
     NULL},
    {"rma-batch", OPT_LONG, &opt.batch, 1, 100000, NULL, "N",
     "epochs (operation and completion) per timed sample in the latency rows; the figure stays per operation (1)",
     "rma_batch", 0, NULL, NULL},
    {NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL},
};

const option_table_t rma_options = {"one-sided (RMA)", specs, NULL};

static int mode_of(int variant) { return opt.nmodes ? opt.modes[variant] : S_FLUSH; }

int rma_variants(int nranks)
{
    (void)nranks;
    return opt.nmodes ? opt.nmodes : 1;
}

void rma_variant_label(int nranks, int variant, char *buf, size_t len)
{
    (void)nranks;
    snprintf(buf, len, "%s", mode_names[mode_of(variant)]);
}

/* ---- the rows ---- */

typedef struct row {
    const char *name;
    enum op op;
    enum pattern pattern;
    int streaming;   /* --rma-ops operations per target and epoch (else 1) */
    int passive;     /* truly_passive_put: phase 1 has the target compute */
} row_t;

static const row_t rows[] = {
    {"put_latency", OP_PUT, P_PAIR, 0, 0},
    {"get_latency", OP_GET, P_PAIR, 0, 0},
    {"put_bw", OP_PUT, P_PAIR, 1, 0},
    {"get_bw", OP_GET, P_PAIR, 1, 0},
    {"put_bibw", OP_PUT, P_BIDIR, 1, 0},
    {"get_bibw", OP_GET, P_BIDIR, 1, 0},
    {"acc_latency", OP_ACC, P_PAIR, 0, 0},
    {"get_acc_latency", OP_GET_ACC, P_PAIR, 0, 0},
    {"fop_latency", OP_FOP, P_PAIR, 0, 0},
    {"cas_latency", OP_CAS, P_PAIR, 0, 0},
    {"one_put_all", OP_PUT, P_ONE_ALL, 0, 0},
    {"one_get_all", OP_GET, P_ONE_ALL, 0, 0},
    {"all_put_all", OP_PUT, P_ALL_ALL, 0, 0},
    {"all_get_all", OP_GET, P_ALL_ALL, 0, 0},
    {"exchange_put", OP_PUT, P_EXCHANGE, 0, 0},
    {"exchange_get", OP_GET, P_EXCHANGE, 0, 0},
    {"truly_passive_put", OP_PUT, P_PAIR, 0, 1},
};

static const row_t *row_of(const bench_t *b)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (strcmp(rows[i].name, b->name) == 0) return &rows[i];
    fprintf(stderr, "mpiscope-engine: %s has no RMA row description\n", b->name);
    MPI_Abort(MPI_COMM_WORLD, 3);
    return NULL;
}

const char *rma_variant_skip(const bench_t *b, int variant, long size, int nranks, char *why, size_t len)
{
    (void)size;
    (void)nranks;
    int m = mode_of(variant);
    if (row_of(b)->passive && (m == S_FENCE || m == S_PSCW)) {
        snprintf(why, len, "%s is active-target synchronisation: the target calls MPI in every epoch, so "
                 "nothing is truly passive (use lock, lock_all, flush or flush_local)", mode_names[m]);
        return why;
    }
    return NULL;
}

static int is_pair(enum pattern p) { return p == P_PAIR || p == P_BIDIR; }
static int atomic(enum op op) { return op == OP_FOP || op == OP_CAS; }

int rma_pair_active(const bench_ctx_t *c) { return c->rank < 2; }

int rma_pairs(const bench_ctx_t *c, pair_t *out)
{
    enum pattern p = row_of(c->bench)->pattern;
    int n = 0;
    if (is_pair(p)) {
        out[n++] = (pair_t){0, 1};
    } else if (p == P_ONE_ALL) {
        for (int r = 1; r < c->nranks; r++) out[n++] = (pair_t){0, r};
    } else {  /* one pair per neighbour on the ring (all_put_all: the rest are not listed) */
        for (int r = 0; r < c->nranks && c->nranks > 1; r++) out[n++] = (pair_t){r, (r + 1) % c->nranks};
    }
    return n;
}

/* The targets of rank r of n, in order (duplicates kept: exchange on 2 ranks). */
static int targets_of(enum pattern p, int r, int n, int *out)
{
    int k = 0;
    switch (p) {
    case P_PAIR: if (r == 0) out[k++] = 1; break;
    case P_BIDIR: out[k++] = 1 - r; break;
    case P_ONE_ALL: if (r == 0) for (int t = 1; t < n; t++) out[k++] = t; break;
    case P_ALL_ALL: for (int t = 0; t < n; t++) if (t != r) out[k++] = t; break;
    case P_EXCHANGE: out[k++] = (r + n - 1) % n; out[k++] = (r + 1) % n; break;
    }
    return k;
}

static int most_targets(enum pattern p, int n)
{
    return p == P_ONE_ALL || p == P_ALL_ALL ? (n > 1 ? n - 1 : 1) : p == P_EXCHANGE ? 2 : 1;
}

int rma_recv_slots(const bench_ctx_t *c) { return most_targets(row_of(c->bench)->pattern, c->nranks); }

/* Operations of an epoch that get a place of their own (--rma-buffers): the
 * bandwidth rows' --rma-ops with multiple, up to 64 MiB per region as the p2p
 * rows' slots (beyond it places are reused); else 1. */
static int buffer_slots(const row_t *r, long size)
{
    if (!r->streaming || opt.buffers == 0) return 1;
    long cap = size > 0 ? (64L << 20) / size : opt.ops;
    long n = opt.ops < cap ? opt.ops : cap;
    return n > 0 ? (int)n : 1;
}

/* fetch_and_op and compare_and_swap move one 8-byte integer whatever the size;
 * the send buffer and each target's result region hold buffer_slots places. */
void rma_buffers(const bench_ctx_t *c, size_t *send, size_t *recv)
{
    const row_t *r = row_of(c->bench);
    size_t one = atomic(r->op) ? sizeof(uint64_t) : (size_t)c->size;
    size_t region = one * (size_t)buffer_slots(r, c->size);
    *send = region;
    *recv = region * (size_t)most_targets(r->pattern, c->nranks);
}

/* Per origin: its source region and its region at every target (get: the
 * other way round); streams: origins whose figures the row adds up. */
size_t rma_working_set(const bench_ctx_t *c, int *streams)
{
    const row_t *r = row_of(c->bench);
    size_t one = atomic(r->op) ? sizeof(uint64_t) : (size_t)c->size;
    int targets = most_targets(r->pattern, c->nranks);
    *streams = r->pattern == P_BIDIR ? 2 : (r->pattern == P_ALL_ALL || r->pattern == P_EXCHANGE) ? c->nranks : 1;
    return one * (size_t)buffer_slots(r, c->size) * (size_t)(1 + targets);
}

/* ---- state ---- */

typedef struct rma_state {
    const row_t *row;
    int mode, ops;
    int bslots;           /* places per region (--rma-buffers) */
    MPI_Comm wcomm;       /* the participants; MPI_COMM_NULL on a bystander */
    MPI_Win win;
    int me, n;            /* rank in wcomm and its size */
    char *mem;            /* this rank's window memory: n slots of slot bytes (bslots places each) */
    size_t slot, mem_bytes;
    MPI_Aint *base;       /* dynamic windows: every rank's attached address */
    int ntargets, *tlist;
    MPI_Aint *dmine, *dfirst; /* per target: where this rank's slot is, where slot 0 is */
    int single;               /* one distinct target: MPI_Win_flush(_local) of it, else of all */
    int tight;                /* one put or get, then a flush or flush_local, to one target: a loop of its own */   /* this rank's targets in order (exchange on 2 ranks: the peer twice) */
    int norigins;
    char *from;            /* from[o]: rank o is an origin of this rank */
    int copied;            /* --check: the target's slots were copied to its receive buffer */
    MPI_Group tgroup, ogroup;  /* pscw: the targets this rank accesses, the origins it exposes to */
    int model;            /* MPI_WIN_UNIFIED or MPI_WIN_SEPARATE */
    uint64_t compare;     /* compare_and_swap's compare value */
    long compute_iters;   /* truly_passive_put: the target's compute in phase 1 */
    double compute_s;
} rma_state_t;

static rma_state_t *st(const bench_ctx_t *c) { return c->state; }
static MPI_Aint disp(const rma_state_t *s, int target, size_t offset);
static size_t elem_bytes(const rma_state_t *s, long size) { return atomic(s->row->op) ? sizeof(uint64_t) : (size_t)size; }

/* flush and flush_local: one passive epoch spans the whole point */
static int flushing(const rma_state_t *s) { return s->mode == S_FLUSH || s->mode == S_FLUSH_LOCAL; }

/* Opens (open 1) or closes the passive epoch that spans a flush or flush_local
 * point the way OSU 7.4 and IMB-RMA do: a shared lock of the one target
 * (osu_put_bw, osu_get_latency, ..., IMB's Unidir_put), else MPI_Win_lock_all
 * (IMB's All_put, All_get). Which one is part of the figure: MPICH looks the
 * target's lock up in every operation under a lock of it, 698 instructions an
 * 8-byte get against 626 under a lock_all (valgrind --tool=callgrind, issue 27). */
static void passive_epoch(const rma_state_t *s, int open)
{
    if (!flushing(s) || !s->ntargets) return;
    if (s->single) {
        if (open) MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, s->tlist[0], 0, s->win));
        else MPI_CHECK(MPI_Win_unlock(s->tlist[0], s->win));
    } else if (open) {
        MPI_CHECK(MPI_Win_lock_all(0, s->win));
    } else {
        MPI_CHECK(MPI_Win_unlock_all(s->win));
    }
}

/* The point's passive epoch is a lock_all, which covers this rank's own window
 * too: --check then makes it public or private with MPI_Win_sync, where other
 * passive modes lock the rank's own window. */
static int covers_self(const rma_state_t *s)
{
    return flushing(s) && s->ntargets && !s->single;
}

static void make_group(rma_state_t *s, const int *ranks, int k, MPI_Group *out)
{
    MPI_Group all;
    int m = 0, *u = malloc((size_t)(k > 0 ? k : 1) * sizeof *u);
    if (!u) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int i = 0; i < k; i++) {
        int dup = 0;
        for (int q = 0; q < m; q++) dup |= u[q] == ranks[i];
        if (!dup) u[m++] = ranks[i];
    }
    MPI_CHECK(MPI_Comm_group(s->wcomm, &all));
    MPI_CHECK(MPI_Group_incl(all, m, u, out));
    MPI_CHECK(MPI_Group_free(&all));
    free(u);
}

void rma_setup(bench_ctx_t *c)
{
    rma_state_t *s = calloc(1, sizeof *s);
    if (!s) MPI_Abort(MPI_COMM_WORLD, 3);
    c->state = s;
    s->row = row_of(c->bench);
    s->mode = mode_of(c->variant);
    s->ops = s->row->streaming ? (int)opt.ops : 1;
    s->win = MPI_WIN_NULL;
    s->tgroup = s->ogroup = MPI_GROUP_NULL;
    if (is_pair(s->row->pattern)) MPI_CHECK(MPI_Comm_split(c->comm, c->rank < 2 ? 0 : MPI_UNDEFINED, c->rank, &s->wcomm));
    else MPI_CHECK(MPI_Comm_dup(c->comm, &s->wcomm));
    if (s->wcomm == MPI_COMM_NULL) return;
    MPI_CHECK(MPI_Comm_rank(s->wcomm, &s->me));
    MPI_CHECK(MPI_Comm_size(s->wcomm, &s->n));

    s->tlist = malloc((size_t)(s->n > 2 ? s->n : 2) * sizeof *s->tlist);
    int *origins = malloc((size_t)(s->n > 2 ? s->n : 2) * sizeof *origins);
    int *theirs = malloc((size_t)(s->n > 2 ? s->n : 2) * sizeof *theirs);
    s->from = calloc((size_t)s->n, 1);
    if (!s->tlist || !origins || !theirs || !s->from) MPI_Abort(MPI_COMM_WORLD, 3);
    s->ntargets = targets_of(s->row->pattern, s->me, s->n, s->tlist);
    for (int o = 0; o < s->n; o++) {
        int k = targets_of(s->row->pattern, o, s->n, theirs);
        for (int i = 0; i < k; i++) s->from[o] |= theirs[i] == s->me;
        if (s->from[o]) origins[s->norigins++] = o;
    }
    free(theirs);

    s->bslots = buffer_slots(s->row, c->size);
    s->slot = elem_bytes(s, c->size) * (size_t)s->bslots;
    s->mem_bytes = s->slot * (size_t)s->n;
    size_t bytes = s->mem_bytes > 8 ? s->mem_bytes : 8;
    int kind = opt.wkind;
    if (kind == W_ALLOCATE) {
        MPI_CHECK(MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, s->wcomm, &s->mem, &s->win));
    } else {
        MPI_CHECK(MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &s->mem));
        if (kind == W_CREATE) {
            MPI_CHECK(MPI_Win_create(s->mem, (MPI_Aint)bytes, 1, MPI_INFO_NULL, s->wcomm, &s->win));
        } else {
            MPI_Aint mine;
            s->base = malloc((size_t)s->n * sizeof *s->base);
            if (!s->base) MPI_Abort(MPI_COMM_WORLD, 3);
            MPI_CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, s->wcomm, &s->win));
            MPI_CHECK(MPI_Win_attach(s->win, s->mem, (MPI_Aint)bytes));
            MPI_CHECK(MPI_Get_address(s->mem, &mine));
            MPI_CHECK(MPI_Allgather(&mine, 1, MPI_AINT, s->base, 1, MPI_AINT, s->wcomm));
        }
    }
    memset(s->mem, 0, bytes);
    s->dmine = malloc((size_t)(s->ntargets > 0 ? s->ntargets : 1) * sizeof *s->dmine);
    s->dfirst = malloc((size_t)(s->ntargets > 0 ? s->ntargets : 1) * sizeof *s->dfirst);
    if (!s->dmine || !s->dfirst) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int k = 0; k < s->ntargets; k++) {
        s->dmine[k] = disp(s, s->tlist[k], (size_t)s->me * s->slot);
        s->dfirst[k] = disp(s, s->tlist[k], 0);
    }
    s->single = s->ntargets == 1 || (s->ntargets == 2 && s->tlist[0] == s->tlist[1]);
    s->tight = s->ntargets == 1 && s->ops == 1 && !s->row->passive && flushing(s) &&
               (s->row->op == OP_PUT || s->row->op == OP_GET);
    int *model, flag = 0;
    MPI_CHECK(MPI_Win_get_attr(s->win, MPI_WIN_MODEL, &model, &flag));
    s->model = flag ? *model : MPI_WIN_SEPARATE;
    if (s->mode == S_PSCW) {
        make_group(s, s->tlist, s->ntargets, &s->tgroup);
        make_group(s, origins, s->norigins, &s->ogroup);
    }
    free(origins);
    /* the window's memory is set before anybody accesses it */
    MPI_CHECK(MPI_Barrier(s->wcomm));
    passive_epoch(s, 1);
    if (s->mode == S_FENCE) MPI_CHECK(MPI_Win_fence(MPI_MODE_NOPRECEDE, s->win));
}

void rma_teardown(bench_ctx_t *c)
{
    rma_state_t *s = st(c);
    if (s->wcomm != MPI_COMM_NULL) {
        passive_epoch(s, 0);
        if (s->mode == S_FENCE) MPI_CHECK(MPI_Win_fence(MPI_MODE_NOSUCCEED, s->win));
        if (opt.wkind == W_DYNAMIC) MPI_CHECK(MPI_Win_detach(s->win, s->mem));
        MPI_CHECK(MPI_Win_free(&s->win));
        if (opt.wkind != W_ALLOCATE) MPI_CHECK(MPI_Free_mem(s->mem));
        if (s->tgroup != MPI_GROUP_NULL) MPI_CHECK(MPI_Group_free(&s->tgroup));
        if (s->ogroup != MPI_GROUP_NULL) MPI_CHECK(MPI_Group_free(&s->ogroup));
        MPI_CHECK(MPI_Comm_free(&s->wcomm));
    }
    free(s->base);
    free(s->tlist);
    free(s->from);
    free(s->dmine);
    free(s->dfirst);
    free(s);
    c->state = NULL;
}

/* ---- figures ---- */

/* Epochs one sample times: --rma-batch for the latency rows (truly_passive_put: 1). */
static int batch_of(const row_t *r) { return r->streaming || r->passive ? 1 : (int)opt.batch; }

double rma_ops(const bench_ctx_t *c)
{
    const row_t *r = row_of(c->bench);
    return r->streaming ? (double)opt.ops : (double)batch_of(r);
}

/* Per operation: what the origin moves to all its targets (bibw: both directions). */
double rma_bytes(const bench_ctx_t *c)
{
    const row_t *r = row_of(c->bench);
    double one = atomic(r->op) ? (double)sizeof(uint64_t) : (double)c->size;
    return one * (r->pattern == P_BIDIR ? 2 : most_targets(r->pattern, c->nranks));
}

double rma_msgs(const bench_ctx_t *c)
{
    const row_t *r = row_of(c->bench);
    return (double)opt.ops * (r->pattern == P_BIDIR ? 2.0 : 1.0);
}

/* ---- the event ---- */

static MPI_Aint disp(const rma_state_t *s, int target, size_t offset)
{
    return (s->base ? s->base[target] : 0) + (MPI_Aint)offset;
}

static char *result_slot(const bench_ctx_t *c, const rma_state_t *s, int k)
{
    return c->rbuf + (size_t)(k % c->rslots) * s->slot;
}

/* The next place of a region of span bytes: a running offset, not a division. */
static inline size_t next_place(size_t at, size_t n, size_t span) { return at + n == span ? 0 : at + n; }

/* Puts or gets to the one target of the bandwidth rows: nothing but the call in
 * the loop, and the place by a running offset, not a division. The loop's own
 * instructions are in the figure: an 8-byte get costs 254 instructions in Open
 * MPI's osc/sm, OSU's loop adds 21 a call and the loop with divisions here added
 * 43, 7 % of get_bw at 8 B (valgrind --tool=callgrind, issue 27). */
static void one_target(const bench_ctx_t *c, const rma_state_t *s, int get)
{
    const int n = (int)c->size, rounds = s->ops, t = s->tlist[0];
    const size_t span = (size_t)s->bslots * (size_t)n;
    char *buf = get ? result_slot(c, s, 0) : c->sbuf;
    const MPI_Aint d = get ? s->dfirst[0] : s->dmine[0];
    MPI_Win win = s->win;
    size_t at = 0;
    if (get)
        for (int w = 0; w < rounds; w++) {
            MPI_CHECK(MPI_Get(buf + at, n, MPI_BYTE, t, d + (MPI_Aint)at, n, MPI_BYTE, win));
            at = next_place(at, (size_t)n, span);
        }
    else
        for (int w = 0; w < rounds; w++) {
            MPI_CHECK(MPI_Put(buf + at, n, MPI_BYTE, t, d + (MPI_Aint)at, n, MPI_BYTE, win));
            at = next_place(at, (size_t)n, span);
        }
}

/* The row's operations to every target, --rma-ops rounds; the operation is
 * chosen once, outside the loops (a put of 8 bytes takes tens of ns). Round w
 * of a put or get uses place w of bslots on both sides (osu_put_bw's
 * sbuf + j*size to disp + j*size); the other operations have one place. */
static void issue(const bench_ctx_t *c, const rma_state_t *s)
{
    const int n = (int)c->size, rounds = s->ops, nt = s->ntargets;
    const size_t span = (size_t)s->bslots * (size_t)n;
    const int *tl = s->tlist;
    const MPI_Aint *mine = s->dmine, *first = s->dfirst;
    MPI_Win win = s->win;
    int op = s->row->op;
    if (nt == 1 && (op == OP_PUT || op == OP_GET)) {
        one_target(c, s, op == OP_GET);
        return;
    }
    switch (op) {
    case OP_PUT:
        for (size_t w = 0, at = 0; w < (size_t)rounds; w++, at = next_place(at, (size_t)n, span))
            for (int k = 0; k < nt; k++)
                MPI_CHECK(MPI_Put(c->sbuf + at, n, MPI_BYTE, tl[k], mine[k] + (MPI_Aint)at, n, MPI_BYTE, win));
        break;
    case OP_GET:
        for (size_t w = 0, at = 0; w < (size_t)rounds; w++, at = next_place(at, (size_t)n, span))
            for (int k = 0; k < nt; k++)
                MPI_CHECK(MPI_Get(result_slot(c, s, k) + at, n, MPI_BYTE, tl[k], first[k] + (MPI_Aint)at, n, MPI_BYTE,
                                  win));
        break;
    case OP_ACC:
        for (int w = 0; w < rounds; w++)
            for (int k = 0; k < nt; k++)
                MPI_CHECK(MPI_Accumulate(c->sbuf, n, acc_type(), tl[k], mine[k], n, acc_type(), MPI_SUM,
                                         win));
        break;
    case OP_GET_ACC:
        for (int w = 0; w < rounds; w++)
            for (int k = 0; k < nt; k++)
                MPI_CHECK(MPI_Get_accumulate(c->sbuf, n, acc_type(), result_slot(c, s, k), n,
                                             acc_type(), tl[k], mine[k], n, acc_type(), MPI_SUM, win));
        break;
    case OP_FOP:
        for (int w = 0; w < rounds; w++)
            for (int k = 0; k < nt; k++)
                MPI_CHECK(MPI_Fetch_and_op(c->sbuf, result_slot(c, s, k), MPI_UINT64_T, tl[k], mine[k], MPI_SUM, win));
        break;
    case OP_CAS: {
        /* a local copy: SMPI declares the compare buffer without const (MPI 3 has it) */
        uint64_t compare = s->compare;
        for (int w = 0; w < rounds; w++)
            for (int k = 0; k < nt; k++)
                MPI_CHECK(MPI_Compare_and_swap(c->sbuf, &compare, result_slot(c, s, k), MPI_UINT64_T, tl[k],
                                               mine[k], win));
        break;
    }
    }
}


static int copies_slots(const bench_ctx_t *c, const rma_state_t *s)
{
    int origin_uses_rbuf = s->ntargets > 0 && s->row->op != OP_PUT && s->row->op != OP_ACC;
    return s->row->op != OP_GET && s->norigins > 0 && !origin_uses_rbuf && c->rslots >= s->norigins;
}

/* --check only: every operation complete at its target and the target's
 * private copy up to date before it compares. */
static void settle(bench_ctx_t *c, rma_state_t *s)
{
    if (s->mode == S_FLUSH_LOCAL && s->ntargets) MPI_CHECK(MPI_Win_flush_all(s->win));
    MPI_CHECK(MPI_Barrier(s->wcomm));
    if (covers_self(s)) {
        MPI_CHECK(MPI_Win_sync(s->win));
    } else if (s->mode != S_FENCE && s->mode != S_PSCW) {
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, s->me, 0, s->win));
        MPI_CHECK(MPI_Win_unlock(s->me, s->win));
    }
    /* a target's slots are compared from copies in its receive buffer, which
     * an origin of a put leaves unused (and the fault injection corrupts) */
    s->copied = copies_slots(c, s);
    for (int o = 0, k = 0; o < s->n && s->copied; o++)
        if (s->from[o]) memcpy(c->rbuf + (size_t)k++ * s->slot, s->mem + (size_t)o * s->slot, s->slot);
}

static void epoch(bench_ctx_t *c, rma_state_t *s)
{
    int one = s->single;
    switch (s->mode) {
    case S_FENCE:
        if (c->checking) MPI_CHECK(MPI_Win_fence(0, s->win));
        issue(c, s);
        MPI_CHECK(MPI_Win_fence(0, s->win));
        break;
    case S_PSCW:
        if (s->norigins) MPI_CHECK(MPI_Win_post(s->ogroup, 0, s->win));
        if (s->ntargets) {
            MPI_CHECK(MPI_Win_start(s->tgroup, 0, s->win));
            issue(c, s);
            MPI_CHECK(MPI_Win_complete(s->win));
        }
        if (s->norigins) MPI_CHECK(MPI_Win_wait(s->win));
        break;
    case S_LOCK:
        for (int k = 0; k < s->ntargets; k++)
            if (k == 0 || s->tlist[k] != s->tlist[0]) MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, s->tlist[k], 0, s->win));
        issue(c, s);
        for (int k = 0; k < s->ntargets; k++)
            if (k == 0 || s->tlist[k] != s->tlist[0]) MPI_CHECK(MPI_Win_unlock(s->tlist[k], s->win));
        break;
    case S_LOCK_ALL:
        if (s->ntargets) {
            MPI_CHECK(MPI_Win_lock_all(0, s->win));
            issue(c, s);
            MPI_CHECK(MPI_Win_unlock_all(s->win));
        }
        break;
    case S_FLUSH:
        if (s->ntargets) {
            issue(c, s);
            if (one) MPI_CHECK(MPI_Win_flush(s->tlist[0], s->win));
            else MPI_CHECK(MPI_Win_flush_all(s->win));
        }
        break;
    case S_FLUSH_LOCAL:
        if (s->ntargets) {
            issue(c, s);
            if (one) MPI_CHECK(MPI_Win_flush_local(s->tlist[0], s->win));
            else MPI_CHECK(MPI_Win_flush_local_all(s->win));
        }
        break;
    }
}

void rma_event(bench_ctx_t *c)
{
    rma_state_t *s = st(c);
    if (s->wcomm == MPI_COMM_NULL) return;
    int epochs = c->checking ? 1 : batch_of(s->row);
    if (s->tight && !c->checking) {
        /* one put or get and its flush to one target, the tightest loop there is */
        const int n = (int)c->size, t = s->tlist[0];
        const MPI_Aint at = s->row->op == OP_PUT ? s->dmine[0] : s->dfirst[0];
        MPI_Win win = s->win;
        char *buf = s->row->op == OP_PUT ? c->sbuf : c->rbuf;
        int (*flush)(int, MPI_Win) = s->mode == S_FLUSH ? MPI_Win_flush : MPI_Win_flush_local;
        if (s->row->op == OP_PUT)
            for (int e = 0; e < epochs; e++) {
                MPI_CHECK(MPI_Put(buf, n, MPI_BYTE, t, at, n, MPI_BYTE, win));
                MPI_CHECK(flush(t, win));
            }
        else
            for (int e = 0; e < epochs; e++) {
                MPI_CHECK(MPI_Get(buf, n, MPI_BYTE, t, at, n, MPI_BYTE, win));
                MPI_CHECK(flush(t, win));
            }
        return;
    }
    for (int e = 0; e < epochs; e++) epoch(c, s);
    /* truly_passive_put, phase 1: the target computes without calling MPI */
    if (c->phase == 1 && s->row->passive && s->norigins && !c->checking)
        overlap_compute(s->compute_iters, 0, NULL);  /* the nbc rows' compute */
    if (c->checking) settle(c, s);
}

/* ---- --check ---- */

static uint64_t atomic_value(int rank, long iter) { return ((uint64_t)(iter + 1) << 16) | (uint64_t)(rank + 1); }

/* The origin's input, and the target's slots as the row needs them (zero, or
 * for a get the pattern it reads), made public for the coming epoch. */
void rma_fill(bench_ctx_t *c)
{
    rma_state_t *s = st(c);
    if (s->wcomm == MPI_COMM_NULL) return;
    if (atomic(s->row->op)) {
        uint64_t v = atomic_value(c->rank, c->iter);
        memcpy(c->sbuf, &v, sizeof v);
        s->compare = 0;
    } else {
        /* every place of the source region carries the pattern */
        for (int i = 0; i < s->bslots; i++) check_fill(c->sbuf + (size_t)i * (size_t)c->size, (size_t)c->size, c->rank, c->iter);
    }
    int lock_self = s->mode != S_FENCE && s->mode != S_PSCW && !covers_self(s);
    /* under flush an origin's shared lock of this rank spans the point: a shared lock of its own */
    int kind = flushing(s) ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE;
    if (lock_self) MPI_CHECK(MPI_Win_lock(kind, s->me, 0, s->win));
    memset(s->mem, 0, s->mem_bytes);
    for (int i = 0; i < s->bslots && s->row->op == OP_GET; i++)
        check_fill(s->mem + (size_t)i * (size_t)c->size, (size_t)c->size, c->rank, c->iter);
    if (lock_self) MPI_CHECK(MPI_Win_unlock(s->me, s->win));
    if (covers_self(s)) MPI_CHECK(MPI_Win_sync(s->win));
    /* fence: the checking event opens with a fence; pscw: MPI_Win_post publishes */
}

static long compare_u64(const char *at, uint64_t want)
{
    uint64_t got;
    memcpy(&got, at, sizeof got);
    return got != want;
}

long rma_verify(const bench_ctx_t *c, long *verified)
{
    const rma_state_t *s = st(c);
    if (s->wcomm == MPI_COMM_NULL) return 0;
    long errors = 0;
    size_t one = elem_bytes(s, c->size);
    enum op op = s->row->op;
    /* as an origin: what came back */
    for (int k = 0; k < s->ntargets && op != OP_PUT && op != OP_ACC; k++) {
        const char *got = result_slot(c, s, k);
        if (op == OP_GET) {
            for (int i = 0; i < s->bslots; i++) errors += check_compare(got + (size_t)i * one, one, s->tlist[k], c->iter);
            *verified += (long)one * (s->bslots - 1);
        } else if (op == OP_GET_ACC) {
            for (size_t i = 0; i < one; i++) errors += got[i] != 0;
        } else {
            errors += compare_u64(got, 0);
        }
        *verified += (long)one;
    }
    /* as a target: what every origin left in its slot */
    for (int o = 0, k = 0; o < s->n && op != OP_GET; o++) {
        if (!s->from[o]) continue;
        const char *slot = s->copied ? c->rbuf + (size_t)k++ * s->slot : s->mem + (size_t)o * s->slot;
        if (atomic(op)) errors += compare_u64(slot, atomic_value(o, c->iter));
        else for (int i = 0; i < s->bslots; i++) errors += check_compare(slot + (size_t)i * one, one, o, c->iter);
        *verified += (long)one * s->bslots;
    }
    return errors;
}

/* ---- truly_passive_put ---- */

/* The target computes for 5 times the put's own time, at least 50 us: long
 * enough that a put waiting for the target is plain to see. */
void rma_calibrate(bench_ctx_t *c, double phase0_event_s)
{
    rma_state_t *s = st(c);
    double want = 5.0 * phase0_event_s;
    if (want < 50e-6) want = 50e-6;
    s->compute_s = want;
    s->compute_iters = overlap_compute_iters(want);
}

void rma_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    (void)w;
    const rma_state_t *s = st(c);
    json_obj(j, "rma");
    json_str(j, "op", op_names[s->row->op]);
    json_str(j, "sync", mode_names[s->mode]);
    json_str(j, "window", wkind_names[opt.wkind]);
    json_str(j, "memory_model", s->model == MPI_WIN_UNIFIED ? "unified" : "separate");
    json_int(j, "ops_per_epoch", s->ops);
    json_int(j, "epochs_per_sample", batch_of(s->row));
    json_int(j, "targets", s->ntargets);
    /* the passive epoch a flush point spans (passive_epoch): OSU's shared lock or IMB's lock_all */
    if (flushing(s) && s->ntargets)
        json_str(j, "epoch", s->single ? "lock_shared" : "lock_all");
    if (atomic(s->row->op)) json_str(j, "datatype", "uint64");
    else if (s->row->op == OP_ACC || s->row->op == OP_GET_ACC) json_str(j, "datatype", acc_type_names[opt.acc_type]);
    else json_str(j, "datatype", "byte");
    if (s->row->op == OP_ACC || s->row->op == OP_GET_ACC || s->row->op == OP_FOP) json_str(j, "reduce_op", "sum");
    json_close_obj(j);
    if (s->row->streaming) {
        json_str(j, "buffers", buffers_names[opt.buffers == 0 ? 0 : 1]);
        json_int(j, "buffer_slots", s->bslots);
    }
    if (s->row->passive && p->nphases >= 2) {
        double pure = p->phase_us[0], ovrl = p->phase_us[1], busy = s->compute_s * 1e6;
        json_obj(j, "passive");
        json_num(j, "pure_us", pure);
        json_num(j, "ovrl_us", ovrl);
        json_num(j, "target_compute_us", busy);
        /* 0 %: the put waited for the target's computation; 100 %: as fast as with the target idle in MPI */
        double waited = ovrl - pure, room = busy;
        double pct = room > 0 ? 100.0 * (1.0 - waited / room) : 0;
        json_num(j, "passive_pct", pct < 0 ? 0 : pct > 100 ? 100 : pct);
        json_int(j, "ovrl_n", (long long)p->phase_n[1]);
        json_close_obj(j);
    }
}
