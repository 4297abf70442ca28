/* CPUs, NUMA nodes and L3 groups, read from sysfs.
 *
 * l3_group: the level-3 cache instances of the system, i.e. the distinct shared_cpu_list
 * values of /sys/devices/system/cpu/cpu* /cache/index* with level 3, sorted by their lowest
 * CPU; a CPU's l3_group is the index of the instance that holds it, -1 without L3 information.
 * This is the same numbering as topology.json's "l3_groups" (docs/INTERFACES.md). */
#ifndef NS_TOPO_H
#define NS_TOPO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Upper bound on node ids handled anywhere (node ids 0..NS_MAX_NODES-1). */
#define NS_MAX_NODES 256
#define NS_MAX_CPUS 8192

/* Online nodes, ascending; returns the count (at least 1: a system without NUMA is node 0). */
int ns_online_nodes(int *nodes, int max_count);
int ns_node_online(int node);
/* Highest online node id. */
int ns_max_node(void);
/* CPUs of a node, ascending; returns the count (0 for a memory-only node). */
int ns_node_cpus(int node, int *cpus, int max_count);
/* Node of a CPU, -1 if unknown. */
int ns_node_of_cpu(int cpu);
/* l3_group of a CPU (see above), -1 without L3 information. */
int ns_l3_group_of_cpu(int cpu);

/* For CPUs as found by threads (-1: unknown, e.g. it moved): "c,c,...", their nodes and their
 * L3 groups as comma lists (-1 where unknown), each into a buffer of len bytes. */
void ns_format_cpu_places(const int *cpus, int n, char *cpus_text, char *nodes_text, char *groups_text, size_t len);

/* MemFree of a node in bytes, -1 if unreadable. */
int64_t ns_node_free_bytes(int node);
/* Free hugetlb pages of the given size on a node (0 if none reserved, -1 if unreadable). */
int64_t ns_node_free_hugepages(int node, uint64_t page_bytes);

/* Size of one last-level cache instance and the number of distinct instances. */
uint64_t ns_llc_bytes(int *instances);

/* CPU the caller runs on now (sched_getcpu). */
int ns_current_cpu(void);
/* CPUs of the calling thread's affinity mask, ascending; returns the count. */
int ns_affinity_cpus(int *cpus, int max_count);
/* Short host name (up to the first dot). */
void ns_hostname(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
