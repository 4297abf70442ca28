#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns_error.h"
#include "ns_place.h"
#include "ns_size.h"
#include "ns_topo.h"

static const char *strategy_names[NS_NPLACE] = {"sequential", "interleaved", "nodes"};

ns_place_strategy ns_place_strategy_arg(const char *option, const char *text)
{
    for (int i = 0; i < NS_NPLACE; i++)
        if (!strcmp(text, strategy_names[i]))
            return (ns_place_strategy)i;
    ns_die("%s: unknown strategy '%s': use sequential, interleaved (one CPU per L3 group in turn) or nodes (one CPU "
           "per node in turn)", option, text);
}

const char *ns_place_strategy_name(ns_place_strategy strategy) { return strategy_names[strategy]; }

int ns_cpulist_arg(const char *option, const char *text, int *cpus, int max_count)
{
    int n = ns_parse_cpulist(text, cpus, max_count);
    if (n <= 0)
        ns_die("%s: '%s' is not a CPU list: write ids and ranges such as 0-3,8", option, text);
    static int allowed[NS_MAX_CPUS];
    int nallowed = ns_affinity_cpus(allowed, NS_MAX_CPUS);
    static int outside[NS_MAX_CPUS];
    int nout = 0;
    for (int i = 0; i < n; i++) {
        int ok = 0;
        for (int k = 0; k < nallowed && !ok; k++)
            ok = allowed[k] == cpus[i];
        if (!ok)
            outside[nout++] = cpus[i];
    }
    if (nout) {
        char out_text[256], may[256];
        ns_format_cpulist(outside, nout, out_text, sizeof out_text);
        ns_format_cpulist(allowed, nallowed, may, sizeof may);
        ns_die("%s: CPU %s outside the CPUs this process may use (%s): pick CPUs from %s", option, out_text, may, may);
    }
    return n;
}

int ns_cpu_arg(const char *option, const char *text)
{
    int cpus[NS_MAX_CPUS];
    int n = ns_cpulist_arg(option, text, cpus, NS_MAX_CPUS);
    if (n != 1)
        ns_die("%s: '%s' names %d CPUs: give one CPU id", option, text, n);
    return cpus[0];
}

/* Round robin over groups: the k-th CPU of every group (groups by key, ascending) before the
 * (k+1)-th of any group. */
typedef struct {
    int cpu, key, rank;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank - y->rank;
    if (x->key != y->key)
        return x->key - y->key;
    return x->cpu - y->cpu;
}

void ns_place_order(ns_place_strategy strategy, int *cpus, int n)
{
    keyed *k = calloc((size_t)n, sizeof *k);
    if (!k)
        ns_die("out of memory");
    for (int i = 0; i < n; i++) {
        k[i].cpu = cpus[i];
        k[i].key = strategy == NS_PLACE_INTERLEAVED ? ns_l3_group_of_cpu(cpus[i])
                   : strategy == NS_PLACE_NODES ? ns_node_of_cpu(cpus[i])
                                                : 0;
    }
    /* rank = how many CPUs of the same group come before this one (by id). */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (k[j].key == k[i].key && k[j].cpu < k[i].cpu)
                k[i].rank++;
    if (strategy == NS_PLACE_SEQUENTIAL)
        for (int i = 0; i < n; i++)
            k[i].rank = 0;
    qsort(k, (size_t)n, sizeof *k, cmp_keyed);
    for (int i = 0; i < n; i++)
        cpus[i] = k[i].cpu;
    free(k);
}

int ns_place_cpus(const char *list_option, const char *list, const int *nodes, int nnodes, int exclude,
                  ns_place_strategy strategy, long count, int *out)
{
    int n = 0;
    if (list) {
        if (count)
            ns_die("%s names the CPUs: leave out the thread count, which goes with a strategy", list_option);
        n = ns_cpulist_arg(list_option, list, out, NS_MAX_CPUS);
        for (int i = 0; i < n; i++)
            if (out[i] == exclude)
                ns_die("%s: CPU %d is taken by the measuring thread: name other CPUs", list_option, exclude);
        return n;
    }
    static int allowed[NS_MAX_CPUS];
    int nallowed = ns_affinity_cpus(allowed, NS_MAX_CPUS);
    for (int i = 0; i < nallowed; i++) {
        int node = ns_node_of_cpu(allowed[i]), wanted = nnodes == 0;
        for (int k = 0; k < nnodes && !wanted; k++)
            wanted = nodes[k] == node;
        if (wanted && allowed[i] != exclude)
            out[n++] = allowed[i];
    }
    if (!n)
        ns_die("no CPU left for the threads among the allowed ones%s: allow more CPUs or name other nodes",
               exclude >= 0 ? " but the measuring one" : "");
    ns_place_order(strategy, out, n);
    if (count > n)
        ns_die("%ld threads asked for but only %d CPUs are available to them: give at most %d", count, n, n);
    return count ? (int)count : n;
}

void ns_pin_to_cpu(int cpu)
{
    cpu_set_t *set = CPU_ALLOC(NS_MAX_CPUS);
    size_t size = CPU_ALLOC_SIZE(NS_MAX_CPUS);
    if (!set)
        ns_die("out of memory");
    CPU_ZERO_S(size, set);
    CPU_SET_S(cpu, size, set);
    int rc = sched_setaffinity(0, size, set);
    CPU_FREE(set);
    if (rc)
        ns_die("cannot pin a thread to CPU %d (sched_setaffinity refused): run where that CPU is allowed", cpu);
}
