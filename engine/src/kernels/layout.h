/* Derived datatypes for the p2p rows pingpong, pingping, bw and bibw (OSU's
 * -D cont, vect, indx): --layout sends each message as one element of a
 * contiguous, vector or indexed datatype over a buffer with gaps. The size of
 * a point is the payload (the bytes that move); the buffer spans extent bytes.
 * Without --layout nothing changes: MPI_BYTE x size, as always. */
#ifndef MPISCOPE_LAYOUT_H
#define MPISCOPE_LAYOUT_H

#include "bench.h"

/* The option values (their specs sit in the p2p table, kernels/p2p.c). */
extern int layout_choice;           /* -1: none; else LAYOUT_* */
extern long layout_block, layout_stride;
extern const char *const layout_names[];
enum { LAYOUT_CONTIGUOUS, LAYOUT_VECTOR, LAYOUT_INDEXED };

int layout_validate(int nranks, char *err, size_t errlen);

/* The point's datatype while a row with a layout is measured (layout_setup to
 * layout_teardown); else layout_on is 0. */
extern int layout_on;
extern MPI_Datatype layout_type;

/* The message of the point being measured: count elements of type (MPI_BYTE x
 * size without a layout). Inline: it sits in pingpong's and bw's timed path. */
static inline int layout_message(const bench_ctx_t *c, MPI_Datatype *type)
{
    if (!layout_on) {
        *type = MPI_BYTE;
        return (int)c->size;
    }
    *type = layout_type;
    return 1;
}
/* --check: wrong bytes in a received buffer (payload against the sender's
 * pattern, and gaps that the receive must not have touched). */
long layout_compare(const bench_ctx_t *c, const char *buf, int sender);

void layout_setup(bench_ctx_t *c);
void layout_teardown(bench_ctx_t *c);
void layout_buffers(const bench_ctx_t *c, size_t *send, size_t *recv);
void layout_fill(bench_ctx_t *c);
const char *layout_plan_skip(const bench_t *b, long size, int nranks, char *why, size_t len);
void layout_describe(const bench_ctx_t *c, const struct point *p, const struct world *w, struct json *j);

#endif
