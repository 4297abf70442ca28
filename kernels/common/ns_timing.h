/* Monotonic wall-clock timing (CLOCK_MONOTONIC, not affected by clock adjustments). */
#ifndef NS_TIMING_H
#define NS_TIMING_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

double ns_seconds(void);
uint64_t ns_nanoseconds(void);
/* CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID): compared with wall time it shows
 * whether a measurement shared its CPU with other work (wall-clock latency is then inflated). */
double ns_thread_cpu_seconds(void);
/* A latency sample whose thread ran under this share of its wall time on its CPU timed other
 * work too: the chase kernels take it again (up to as many retakes as samples) and count it. */
#define NS_RETAKE_BELOW 0.95
/* Smallest observed non-zero step of ns_seconds(), in seconds (STREAM's granularity check). */
double ns_timer_resolution(void);

#ifdef __cplusplus
}
#endif
#endif
