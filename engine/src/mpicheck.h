/* Every MPI call goes through MPI_CHECK: a failure names the call and the rank
 * and aborts the whole job, so no rank is left waiting. */
#ifndef MPISCOPE_MPICHECK_H
#define MPISCOPE_MPICHECK_H

#include <mpi.h>

void mpi_fail(const char *call, int rc, const char *file, int line);

#define MPI_CHECK(call)                                              \
    do {                                                             \
        int mpi_check_rc_ = (call);                                  \
        if (mpi_check_rc_ != MPI_SUCCESS)                            \
            mpi_fail(#call, mpi_check_rc_, __FILE__, __LINE__);      \
    } while (0)

#endif
