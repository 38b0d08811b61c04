/* The failure path of MPI_CHECK. */
#include "mpicheck.h"
#include <stdio.h>
#include <string.h>

void mpi_fail(const char *call, int rc, const char *file, int line)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0, rank = -1;
    MPI_Error_string(rc, msg, &len);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *call_name = call;
    fprintf(stderr, "mpiscope-engine: rank %d: %.*s failed (%s:%d): %s\n", rank,
            (int)(strchr(call_name, '(') ? strchr(call_name, '(') - call_name : (long)strlen(call_name)),
            call_name, file, line, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}
