/* Background memory traffic: a team of pinned threads, each streaming over its own buffer with
 * a traffic kind and an injected delay, counting the bytes it moves.
 *
 * Traffic kinds (per group of 64-byte lines, consecutive in the thread's buffer):
 *   read   1 line read
 *   r3w1   3 lines read, 1 written (3:1 reads to writes)
 *   r2w1   2 lines read, 1 written (2:1)
 *   r1w1   1 line read, 1 written (1:1)
 *   triad  a[i] = b[i] + 3 * c[i] over three thirds of the buffer (2 streams read, 1 written)
 * (names without colons: "3:1" is a base-60 number to YAML 1.1, which config files are read with).
 * Bytes counted are those the program reads and writes (64 per line); the read of a written line
 * into the cache (write-allocate) is not counted, as in STREAM. Writes are ordinary stores.
 *
 * Delay: after every block of about 64 lines each thread spins DELAY iterations of an empty loop
 * (about one CPU cycle each), so larger delays inject less traffic; 0 is as fast as it goes. */
#ifndef NS_LOAD_H
#define NS_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "ns_buffer.h"
#include "ns_policy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { NS_TRAFFIC_READ = 0, NS_TRAFFIC_R3W1, NS_TRAFFIC_R2W1, NS_TRAFFIC_R1W1, NS_TRAFFIC_TRIAD, NS_NTRAFFIC } ns_traffic;

#define NS_LOAD_MAX_DELAY 100000000L

const char *ns_traffic_name(ns_traffic kind);
/* Comma list of kinds into kinds[] in the order above (at most NS_NTRAFFIC); returns the count,
 * ends the program (one line naming the kind and the choices) on an unknown one. */
int ns_traffic_list_arg(const char *option, const char *text, ns_traffic *kinds);

typedef struct ns_load_team ns_load_team;

/* Start n threads, thread i pinned to cpus[i]; each maps bytes with the page size, applies the
 * policy (local != 0: bind to the node of its own CPU instead) and touches its buffer itself.
 * Returns when every buffer is ready; the threads then wait (spinning, no memory traffic). */
ns_load_team *ns_load_start(const int *cpus, int n, size_t bytes, ns_pages pages, const ns_policy *policy, int local);
/* Every thread runs kind with delay; returns once all of them are running. */
void ns_load_run(ns_load_team *team, ns_traffic kind, long delay);
/* Stop the traffic; returns once every thread is waiting again. */
void ns_load_pause(ns_load_team *team);
/* Bytes moved by all threads since the start (read at any time). */
uint64_t ns_load_bytes(const ns_load_team *team);
/* Adds every thread's buffer to placement. */
void ns_load_placement(const ns_load_team *team, ns_placement *placement);
/* CPUs the threads found themselves on in the last run, in thread order; a thread seen on two
 * CPUs in one run reports -1. Returns n. */
int ns_load_cpus_seen(const ns_load_team *team, int *cpus);
/* The least share (0..1) of the last run's wall time a thread ran on its CPU (ns_oncpu.h). */
double ns_load_least_on_cpu(const ns_load_team *team);
void ns_load_stop(ns_load_team *team);

#ifdef __cplusplus
}
#endif
#endif
