/* Facts about the job (ranks, hosts, cores, timers, library) and the context
 * record that opens every output. */
#ifndef MPISCOPE_CONTEXT_H
#define MPISCOPE_CONTEXT_H

#include "json.h"
#include "options.h"
#include "world.h"
#include <mpi.h>

/* simulated: the timer facts come from a few reads (timer_measure). */
void world_init(world_t *w, int simulated);
void world_free(world_t *w);
/* Renumbers the ranks by --order (MPI_Comm_split with a key, so it works on
 * every launcher): w describes the new communicator afterwards. A LIST must
 * fit the job (options_fit_ranks); returns -1 if it does not. */
int world_reorder(world_t *w, const options_t *o);

/* main: the thread level MPI_Init_thread was asked for (not called: MPI_Init,
 * recorded as null). The context records it and what MPI_Query_thread says. */
void context_set_thread_request(int level);

/* The context record; o->max_memory_bytes holds the limit in force. */
void context_emit(FILE *out, const world_t *w, const options_t *o, int argc, char **argv);

/* The first line of the library's version string and the MPI version it implements. */
void library_name(char *buf, size_t len);

/* {"mpi_library_version": ..., "mpi_version": ..., "engine_version": ...};
 * legal before MPI_Init, so no launcher is needed. */
void mpi_info_emit(FILE *out);

#endif
