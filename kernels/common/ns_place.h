/* Where threads run: CPU lists checked against the machine, placement strategies and pinning.
 *
 * A CPU list ("0-3,8") names CPUs that must exist and be in the process's affinity mask (what
 * numactl, srun or taskset allow), else the program ends with one line. A strategy orders the
 * candidate CPUs so that the first N are the threads' CPUs:
 *   sequential  ascending CPU ids (fills one L3 group, then the next, on most machines)
 *   interleaved one CPU per L3 group in turn (group order, then the next CPU of each group)
 *   nodes       one CPU per NUMA node in turn (across nodes)
 * (sequential and interleaved are the workflow's placement strategies, numasweep.placement). */
#ifndef NS_PLACE_H
#define NS_PLACE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { NS_PLACE_SEQUENTIAL = 0, NS_PLACE_INTERLEAVED, NS_PLACE_NODES, NS_NPLACE } ns_place_strategy;

/* "sequential", "interleaved", "nodes"; ends the program (one line naming option and the choices) otherwise. */
ns_place_strategy ns_place_strategy_arg(const char *option, const char *text);
const char *ns_place_strategy_name(ns_place_strategy strategy);

/* A CPU list whose CPUs are all online and allowed; returns the count (>= 1), ends the program
 * otherwise, naming the CPUs that are outside and the CPUs that may be used. */
int ns_cpulist_arg(const char *option, const char *text, int *cpus, int max_count);
/* One CPU, online and allowed; ends the program otherwise. */
int ns_cpu_arg(const char *option, const char *text);

/* Reorders cpus[0..n) by the strategy (see above). */
void ns_place_order(ns_place_strategy strategy, int *cpus, int n);

/* The CPUs of a team of threads: the list when given (list_option names it in messages; every
 * CPU must be allowed and differ from exclude), else the allowed CPUs (only those of nodes[0..nnodes)
 * when nnodes > 0, never exclude) ordered by the strategy, the first count of them (0: all).
 * Returns how many; ends the program with one line when count is given with a list, exceeds the
 * candidates, or nothing is left. exclude < 0 excludes nothing. */
int ns_place_cpus(const char *list_option, const char *list, const int *nodes, int nnodes, int exclude,
                  ns_place_strategy strategy, long count, int *out);

/* Pin the calling thread to one CPU; ends the program when the kernel refuses. */
void ns_pin_to_cpu(int cpu);

#ifdef __cplusplus
}
#endif
#endif
