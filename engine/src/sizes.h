/* Message-size expressions: "0,1:4M", "1:4096:+64", "1:4M:*4", "1:512K:2^k-1". */
#ifndef MPISCOPE_SIZES_H
#define MPISCOPE_SIZES_H

#include <stddef.h>

#define SIZE_MAX_BYTES 2147483647L   /* MPI counts are int */

typedef struct size_list {
    long *v;
    size_t n;
} size_list_t;

/* Expands expr (numbers multiplied by unit, 1 or 8) into a sorted list without
 * duplicates. On error returns -1 and writes a message into err. */
int sizes_parse(const char *expr, long unit, size_list_t *out, char *err, size_t errlen);

void sizes_free(size_list_t *s);

#endif
