#include <time.h>

#include "ns_timing.h"

double ns_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t ns_nanoseconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double ns_timer_resolution(void)
{
    /* Smallest step seen over a few tries, as STREAM's checktick does. */
    double best = 1.0;
    for (int i = 0; i < 20; i++) {
        double t0 = ns_seconds(), t1;
        while ((t1 = ns_seconds()) == t0) {
        }
        if (t1 - t0 < best)
            best = t1 - t0;
    }
    return best;
}

double ns_thread_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
