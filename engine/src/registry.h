/* The registry (registry.c): every row, and finding rows by name or family. Above the
 * kernels, which it names; a kernel never looks a row up. */
#ifndef MPISCOPE_REGISTRY_H
#define MPISCOPE_REGISTRY_H

#include "bench.h"

extern const bench_t *const registry[];
extern const int registry_size;
const bench_t *bench_find(const char *name);
/* Whether a row of these names has every bit of flags (main, before MPI_Init). */
int bench_any_with(char *const *names, int n, unsigned flags);
/* Whether name is a family of some row (and not the name of a row). */
int bench_is_family(const char *name);

#endif
