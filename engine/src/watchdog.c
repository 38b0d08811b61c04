/* The watchdog: an interval timer and a signal handler that only uses
 * async-signal-safe calls (write, _exit) on a record prepared in advance. */
#include "watchdog.h"
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static int out_fd = -1;
static int my_rank;
static char record[512];
static volatile sig_atomic_t record_len;

static void on_alarm(int sig)
{
    (void)sig;
    if (my_rank == 0 && out_fd >= 0 && record_len > 0) {
        ssize_t w = write(out_fd, record, (size_t)record_len);
        (void)w;
        static const char msg[] = "mpiscope-engine: watchdog: a point did not finish in time; ending the job\n";
        w = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)w;
    }
    _exit(124);
}

void watchdog_init(FILE *out, int rank)
{
    out_fd = fileno(out);
    my_rank = rank;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
}

void watchdog_arm(const char *bench, long size, int ranks, const char *variant, double limit_s)
{
    char variant_field[96] = "";
    if (variant) snprintf(variant_field, sizeof variant_field, "\"variant\": \"%s\", ", variant);
    int n = snprintf(record, sizeof record,
                     "{\"type\": \"timeout\", \"benchmark\": \"%s\", \"size\": %ld, \"ranks\": %d, %s"
                     "\"limit_s\": %.3f}\n", bench, size, ranks, variant_field, limit_s);
    record_len = n > 0 && (size_t)n < sizeof record ? n : 0;
    /* Only rank 0 writes the record, and the launcher kills the job as soon as any
     * rank exits: the other ranks give rank 0 a head start. */
    if (my_rank != 0) limit_s += limit_s * 0.1 > 1.0 ? limit_s * 0.1 : 1.0;
    struct itimerval t = {{0, 0}, {(time_t)limit_s, (suseconds_t)((limit_s - (double)(time_t)limit_s) * 1e6)}};
    setitimer(ITIMER_REAL, &t, NULL);
}

void watchdog_disarm(void)
{
    struct itimerval t = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &t, NULL);
    record_len = 0;
}
