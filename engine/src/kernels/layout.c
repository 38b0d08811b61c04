/* Derived-datatype layouts of a message of P payload bytes, with block B and
 * stride S (--layout-block, --layout-stride):
 *
 * contiguous: MPI_Type_contiguous(P, MPI_BYTE); no gaps (the cost of the
 *   datatype machinery alone).
 * vector: MPI_Type_vector(P / B, B, S, MPI_BYTE): P / B blocks of B bytes,
 *   S bytes apart (OSU's vect; P must be a multiple of B).
 * indexed: MPI_Type_indexed with block i of 1 + (i mod B) bytes at i x S (the
 *   last block cut so the payload is P): irregular blocks, as OSU's indx
 *   reads from a file.
 *
 * Sender and receiver use the same layout. Under --check the sender's payload
 * bytes hold the pattern in payload order, and the receiver's buffer (zeroed
 * by the timing core) must hold the pattern at the payload positions and
 * still zero in the gaps. */
#include "kernels/layout.h"
#include "json.h"
#include "mpicheck.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int layout_choice = -1;
long layout_block = 4, layout_stride = 8;
const char *const layout_names[] = {"contiguous", "vector", "indexed", NULL};

typedef struct layout {
    MPI_Datatype type;
    long blocks;
    int *len, *disp;     /* each block's bytes and offset */
    size_t extent;
} layout_t;

static layout_t *current;  /* the point's layout (NULL: MPI_BYTE x size) */
int layout_on;
MPI_Datatype layout_type;

int layout_validate(int nranks, char *err, size_t errlen)
{
    (void)nranks;
    if (layout_choice >= 0 && layout_choice != LAYOUT_CONTIGUOUS && layout_stride < layout_block) {
        snprintf(err, errlen, "--layout-stride (%ld) must be at least --layout-block (%ld): blocks may not overlap",
                 layout_stride, layout_block);
        return -1;
    }
    return 0;
}

/* Blocks of the layout for size payload bytes: count, and (when len) each
 * block's length and offset. */
static long blocks_of(long size, int *len, int *disp)
{
    if (layout_choice == LAYOUT_CONTIGUOUS) {
        if (len && size) len[0] = (int)size, disp[0] = 0;
        return size ? 1 : 0;
    }
    long n = 0;
    for (long left = size; left > 0; n++) {
        long l = layout_choice == LAYOUT_VECTOR ? layout_block : 1 + n % layout_block;
        if (l > left) l = left;
        if (len) len[n] = (int)l, disp[n] = (int)(n * layout_stride);
        left -= l;
    }
    return n;
}

/* The span from the first payload byte to the last. */
static size_t extent_of(long size)
{
    if (layout_choice < 0 || layout_choice == LAYOUT_CONTIGUOUS) return (size_t)size;
    long n = 0, l = 0;
    for (long left = size; left > 0; n++, left -= l) {
        l = layout_choice == LAYOUT_VECTOR ? layout_block : 1 + n % layout_block;
        if (l > left) l = left;
    }
    return n ? (size_t)((n - 1) * layout_stride + l) : 0;
}

const char *layout_plan_skip(const bench_t *b, long size, int nranks, char *why, size_t len)
{
    (void)b, (void)nranks;
    if (layout_choice != LAYOUT_VECTOR || size % layout_block == 0) return NULL;
    snprintf(why, len, "the vector layout moves whole blocks: %ld bytes is not a multiple of --layout-block %ld",
             size, layout_block);
    return why;
}

void layout_buffers(const bench_ctx_t *c, size_t *send, size_t *recv)
{
    size_t e = extent_of(c->size);
    *send = e;
    *recv = e * (size_t)c->rslots;
}

void layout_setup(bench_ctx_t *c)
{
    current = NULL;
    layout_on = 0;
    if (layout_choice < 0) return;
    layout_t *l = calloc(1, sizeof *l);
    long n = blocks_of(c->size, NULL, NULL);
    if (l) l->len = malloc((size_t)(n ? n : 1) * sizeof *l->len), l->disp = malloc((size_t)(n ? n : 1) * sizeof *l->disp);
    if (!l || !l->len || !l->disp) MPI_Abort(MPI_COMM_WORLD, 3);
    l->blocks = blocks_of(c->size, l->len, l->disp);
    l->extent = extent_of(c->size);
    if (layout_choice == LAYOUT_CONTIGUOUS)
        MPI_CHECK(MPI_Type_contiguous((int)c->size, MPI_BYTE, &l->type));
    else if (layout_choice == LAYOUT_VECTOR)
        MPI_CHECK(MPI_Type_vector((int)l->blocks, (int)layout_block, (int)layout_stride, MPI_BYTE, &l->type));
    else
        MPI_CHECK(MPI_Type_indexed((int)l->blocks, l->len, l->disp, MPI_BYTE, &l->type));
    MPI_CHECK(MPI_Type_commit(&l->type));
    c->rslot = l->extent;  /* receive slots hold a whole extent */
    current = l;
    layout_type = l->type;
    layout_on = 1;
}

void layout_teardown(bench_ctx_t *c)
{
    (void)c;
    layout_on = 0;
    if (!current) return;
    MPI_CHECK(MPI_Type_free(&current->type));
    free(current->len);
    free(current->disp);
    free(current);
    current = NULL;
}

/* The pattern in payload order at the payload positions; the gaps hold a filler. */
void layout_fill(bench_ctx_t *c)
{
    if (!current) {
        check_fill(c->sbuf, (size_t)c->size, c->rank, c->iter);
        return;
    }
    char *payload = malloc((size_t)c->size + 1);
    if (!payload) MPI_Abort(MPI_COMM_WORLD, 3);
    check_fill(payload, (size_t)c->size, c->rank, c->iter);
    memset(c->sbuf, 0x5a, current->extent);
    size_t at = 0;
    for (long i = 0; i < current->blocks; i++) {
        memcpy(c->sbuf + current->disp[i], payload + at, (size_t)current->len[i]);
        at += (size_t)current->len[i];
    }
    free(payload);
}

long layout_compare(const bench_ctx_t *c, const char *buf, int sender)
{
    if (!current) return check_compare(buf, (size_t)c->size, sender, c->iter);
    char *want = malloc((size_t)c->size + 1);
    if (!want) MPI_Abort(MPI_COMM_WORLD, 3);
    check_fill(want, (size_t)c->size, sender, c->iter);
    long wrong = 0;
    size_t at = 0, end = 0;
    for (long i = 0; i < current->blocks; i++) {
        size_t d = (size_t)current->disp[i], l = (size_t)current->len[i];
        for (size_t g = end; g < d; g++) wrong += buf[g] != 0;  /* the gap before this block */
        for (size_t k = 0; k < l; k++) wrong += buf[d + k] != want[at + k];
        at += l;
        end = d + l;
    }
    free(want);
    return wrong;
}

void layout_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j)
{
    (void)c, (void)p, (void)w;
    if (!current) return;
    static const char *const calls[] = {"MPI_Type_contiguous", "MPI_Type_vector", "MPI_Type_indexed"};
    json_obj(j, "layout");
    json_str(j, "kind", layout_names[layout_choice]);
    json_str(j, "datatype", calls[layout_choice]);
    json_int(j, "payload_bytes", c->size);
    json_int(j, "extent_bytes", (long long)current->extent);
    json_int(j, "blocks", current->blocks);
    if (layout_choice != LAYOUT_CONTIGUOUS) {
        json_int(j, "block_bytes", layout_block);
        json_int(j, "stride_bytes", layout_stride);
    }
    json_close_obj(j);
}
