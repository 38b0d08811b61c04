/* fwq: every rank does the same fixed quantum of pure computation (no memory
 * traffic beyond registers, no MPI) after a barrier. A quiet core always takes
 * the same time; anything the OS runs on the core (interrupts, daemons, other
 * jobs) lengthens some quanta. The sample is the slowest rank's quantum, which
 * is what a barrier-synchronised collective of this job waits for. */
#include "kernels/fwq.h"

enum { FWQ_ITERATIONS = 1 << 15 };

double fwq_one(const bench_ctx_t *c)
{
    (void)c;
    return 1.0;
}

double fwq_zero(const bench_ctx_t *c)
{
    (void)c;
    return 0.0;
}

/* The quantum's result, kept so that the work cannot be optimised away and --check can
 * compare it with the chain computed again. */
static volatile unsigned long last;

/* a dependent chain the compiler cannot fold: each step needs the last */
static unsigned long quantum(long seed)
{
    unsigned long x = (unsigned long)seed | 1u;
    for (int i = 0; i < FWQ_ITERATIONS; i++) x = x * 6364136223846793005ul + 1442695040888963407ul;
    return x;
}

void fwq_event(bench_ctx_t *c) { last = quantum(c->iter); }

long fwq_verify(const bench_ctx_t *c, long *verified)
{
    *verified += (long)sizeof(unsigned long);
    return last != quantum(c->iter);
}
