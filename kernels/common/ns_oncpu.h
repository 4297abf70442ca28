/* A thread's share of wall time on its CPU: its CPU time (CLOCK_THREAD_CPUTIME_ID) over the
 * wall time (CLOCK_MONOTONIC) since a mark. Under 100% the thread waited while other work ran
 * on its CPU, and what it timed is inflated; every kernel records the least share of its threads
 * (CSV column on_cpu_pct, or chase_/load_on_cpu_pct) for the job's quality verdict. */
#ifndef NS_ONCPU_H
#define NS_ONCPU_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double cpu_s, wall_s;
} ns_oncpu_mark;

/* Start measuring the calling thread. */
void ns_oncpu_begin(ns_oncpu_mark *m);
/* The calling thread's share (0..1) of the wall time since ns_oncpu_begin on its CPU; 1 when no
 * wall time passed. Call it from the thread that began the mark. */
double ns_oncpu_share(const ns_oncpu_mark *m);

#ifdef _OPENMP
#include <omp.h>
/* OpenMP kernels: every thread of the team marks (marks[] holds one per thread) before the
 * timed repetitions ... */
static inline void ns_oncpu_team_begin(ns_oncpu_mark *marks)
{
#pragma omp parallel
    ns_oncpu_begin(&marks[omp_get_thread_num()]);
}
/* ... and the least share of any thread since, folded into *least (0..1). The team's threads
 * stay the same OS threads across parallel regions, as libgomp keeps its pool. */
static inline void ns_oncpu_team_least(const ns_oncpu_mark *marks, double *least)
{
    double team_least = 1.0;
#pragma omp parallel reduction(min : team_least)
    team_least = ns_oncpu_share(&marks[omp_get_thread_num()]);
    *least = team_least < *least ? team_least : *least;
}
#endif

#ifdef __cplusplus
}
#endif
#endif
