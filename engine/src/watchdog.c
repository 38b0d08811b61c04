/* The watchdog: an interval timer and a signal handler that only uses
 * async-signal-safe calls (write, _exit) on a record prepared in advance and
 * counters the timing core bumps; and a thread that ends the rank when
 * whoever started it is gone. */
#include "watchdog.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define ORPHAN_EXIT 125
#define ORPHAN_POLL_NS 250000000L /* four looks a second: a rank outlives its parent by well under 1 s */

static int out_fd = -1;
static int my_rank;
/* Under SMPI every rank is an actor of one process, each with its own copy of these
 * variables, and the alarm runs in whichever is current: every rank holds the record. */
static int any_rank_writes;
static char record[512];
static volatile sig_atomic_t record_len;
/* said on stderr at each extension, with the count of events finished: mpiscope's own limit
 * follows it (a point that still progresses is slowed, not hung) */
static char notice[400];
static volatile sig_atomic_t notice_len;

volatile sig_atomic_t watchdog_progress_count;
static volatile sig_atomic_t seen;        /* the count at the last alarm (or when armed) */
static volatile sig_atomic_t extends;     /* progress re-arms the limit */
static volatile sig_atomic_t bystander;   /* takes no part in the current phase */
static volatile sig_atomic_t quiet;       /* limits in a row in which nothing finished */
static volatile sig_atomic_t extensions;  /* limits that passed while the point progressed */

/* The notice and the events this rank finished in the point so far, as one write: mpiscope
 * reads it while the launch runs, and a launch that still says so is not hung. */
static void say_progress(long events)
{
    char line[sizeof notice + 32];
    char digits[24];
    int n = 0, len = notice_len;
    do digits[n++] = (char)('0' + events % 10); while ((events /= 10) > 0 && n < (int)sizeof digits);
    memcpy(line, notice, (size_t)len);
    while (n > 0) line[len++] = digits[--n];
    line[len++] = '\n';
    int saved = errno;
    ssize_t w = write(STDERR_FILENO, line, (size_t)len);
    (void)w;
    errno = saved;
}

static void on_alarm(int sig)
{
    (void)sig;
    /* The interval timer starts the next limit by itself: a point still finishing events is
     * slow (a busy machine), not stuck. A bystander leaves the verdict to the ranks that take
     * part: they stop with the point if it hangs, and the launcher then ends this rank too. */
    if (extends) {
        if (bystander) return;
        if (watchdog_progress_count != seen) {
            seen = watchdog_progress_count;
            quiet = 0;
            if (extensions < 0x3fffffff) extensions = extensions + 1;
            if (my_rank == 0 && notice_len > 0) say_progress(seen);
            return;
        }
        quiet = quiet + 1;
        /* Rank 0 writes the record, so it must judge first: it ends a point at most two of its
         * limits after the last progress, and another rank, whose limit is longer, waits for
         * two in a row without progress. */
        if (my_rank != 0 && quiet < 2) return;
    }
    if ((my_rank == 0 || any_rank_writes) && out_fd >= 0 && record_len > 0) {
        ssize_t w = write(out_fd, record, (size_t)record_len);
        (void)w;
        static const char msg[] = "mpiscope-engine: watchdog: a point made no progress within its limit; "
                                  "ending the job\n";
        w = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)w;
    }
    _exit(124);
}

static pid_t first_parent;  /* the launcher's process that started this rank */
static pid_t driver = -1;   /* mpiscope, when it runs on this host (MPISCOPE_PARENT_PID) */

static int orphaned(void)
{
    if (getppid() != first_parent) return 1; /* the launcher's proxy died: re-parented */
    return driver > 0 && kill(driver, 0) != 0 && errno == ESRCH;
}

/* Sleeps between looks and calls no MPI function, so any thread level will do. */
static void *watch_parents(void *arg)
{
    (void)arg;
    struct timespec pause = {0, ORPHAN_POLL_NS};
    for (;;) {
        nanosleep(&pause, NULL);
        if (orphaned()) {
            static const char msg[] = "mpiscope-engine: the process that started this rank is gone; ending\n";
            ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
            (void)w;
            _exit(ORPHAN_EXIT);
        }
    }
    return NULL;
}

/* mpiscope passes its pid and host: killed (SIGKILL cannot be caught), its ranks
 * must not spin until their next write fails. Ranks on other hosts watch only
 * their own parent. */
static void watch_for_orphaning(void)
{
    first_parent = getppid();
    const char *pid = getenv("MPISCOPE_PARENT_PID"), *host = getenv("MPISCOPE_PARENT_HOST");
    char me[256] = "";
    if (pid && host && gethostname(me, sizeof me - 1) == 0 && strcmp(me, host) == 0) {
        char *end;
        long v = strtol(pid, &end, 10);
        if (*end == '\0' && v > 1) driver = (pid_t)v;
    }
    if (first_parent <= 1 && driver <= 0) return; /* started by init itself: nothing to watch */
    sigset_t all, old;
    sigfillset(&all); /* the watchdog's SIGALRM must reach the main thread, not this one */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    if (pthread_create(&t, NULL, watch_parents, NULL) == 0) pthread_detach(t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void watchdog_init(FILE *out, int rank, int simulated)
{
    out_fd = fileno(out);
    my_rank = rank;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    /* an extension returns from the handler: calls it interrupted carry on */
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    any_rank_writes = simulated;
    /* smpirun's ranks are one process that ends with the simulation; a thread of its own
     * would call the simulated nanosleep from outside any actor */
    if (!any_rank_writes) watch_for_orphaning();
}

void watchdog_arm(const char *bench, long size, int ranks, const char *variant, double limit_s, int may_extend)
{
    char variant_field[96] = "";
    if (variant) snprintf(variant_field, sizeof variant_field, "\"variant\": \"%s\", ", variant);
    int n = snprintf(record, sizeof record,
                     "{\"type\": \"timeout\", \"benchmark\": \"%s\", \"size\": %ld, \"ranks\": %d, %s"
                     "\"limit_s\": %.3f}\n", bench, size, ranks, variant_field, limit_s);
    record_len = n > 0 && (size_t)n < sizeof record ? n : 0;
    n = snprintf(notice, sizeof notice, "mpiscope-engine: watchdog: still progressing: %s %ld B on %d ranks%s%s, "
                 "past its limit of %.3f s: extended (slowed, not hung), events finished: ", bench, size, ranks, variant ? " " : "",
                 variant ? variant : "", limit_s);
    notice_len = n > 0 && (size_t)n < sizeof notice ? n : 0;
    watchdog_progress_count = 0;
    seen = 0;
    extensions = 0;
    bystander = 0;
    quiet = 0;
    /* Under SMPI the alarm runs in whichever simulated rank is current, whose own count says
     * nothing of the others': there the limit stays a hard one, in host seconds. */
    extends = may_extend && !any_rank_writes;
    /* Only rank 0 writes the record, and the launcher kills the job as soon as any
     * rank exits: the other ranks give rank 0 a head start. */
    if (my_rank != 0) limit_s += limit_s * 0.1 > 1.0 ? limit_s * 0.1 : 1.0;
    struct timeval period = {(time_t)limit_s, (suseconds_t)((limit_s - (double)(time_t)limit_s) * 1e6)};
    struct itimerval t = {extends ? period : (struct timeval){0, 0}, period};
    setitimer(ITIMER_REAL, &t, NULL);
}

void watchdog_bystander(int yes)
{
    bystander = yes;
}

int watchdog_disarm(void)
{
    struct itimerval t = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &t, NULL);
    record_len = 0;
    notice_len = 0;
    bystander = 0;
    return extensions;
}
