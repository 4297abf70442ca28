#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ns_size.h"
#include "ns_topo.h"

#define SYS_NODE "/sys/devices/system/node"
#define SYS_CPU "/sys/devices/system/cpu"

static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    if (!fgets(buf, (int)len, f)) {
        fclose(f);
        return -1;
    }
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

int ns_online_nodes(int *nodes, int max_count)
{
    char line[4096];
    int n = -1;
    if (read_line(SYS_NODE "/online", line, sizeof line) == 0)
        n = ns_parse_cpulist(line, nodes, max_count);
    if (n <= 0) { /* kernel without NUMA: everything is node 0 */
        nodes[0] = 0;
        n = 1;
    }
    return n;
}

int ns_node_online(int node)
{
    int nodes[NS_MAX_NODES];
    int n = ns_online_nodes(nodes, NS_MAX_NODES);
    for (int i = 0; i < n; i++)
        if (nodes[i] == node)
            return 1;
    return 0;
}

int ns_max_node(void)
{
    int nodes[NS_MAX_NODES];
    int n = ns_online_nodes(nodes, NS_MAX_NODES);
    return nodes[n - 1];
}

int ns_node_cpus(int node, int *cpus, int max_count)
{
    char path[128], line[65536];
    snprintf(path, sizeof path, SYS_NODE "/node%d/cpulist", node);
    if (read_line(path, line, sizeof line)) {
        /* No NUMA in the kernel: node 0 has every online CPU. */
        if (node != 0 || read_line(SYS_CPU "/online", line, sizeof line))
            return 0;
    }
    int n = ns_parse_cpulist(line, cpus, max_count);
    return n < 0 ? 0 : n;
}

int ns_node_of_cpu(int cpu)
{
    char path[128];
    snprintf(path, sizeof path, SYS_CPU "/cpu%d", cpu);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int node = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strncmp(e->d_name, "node", 4) && e->d_name[4] >= '0' && e->d_name[4] <= '9') {
            node = atoi(e->d_name + 4);
            break;
        }
    }
    closedir(d);
    if (node < 0 && access(SYS_NODE, F_OK) != 0)
        node = 0;
    return node;
}

/* Level-3 shared_cpu_list of a CPU into cpus; returns count, 0 if none. */
static int l3_cpus_of(int cpu, int *cpus, int max_count)
{
    char path[160], line[65536];
    for (int idx = 0; idx < 16; idx++) {
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/cache/index%d/level", cpu, idx);
        if (read_line(path, line, sizeof line))
            break;
        if (atoi(line) != 3)
            continue;
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/cache/index%d/shared_cpu_list", cpu, idx);
        if (read_line(path, line, sizeof line))
            return 0;
        int n = ns_parse_cpulist(line, cpus, max_count);
        return n < 0 ? 0 : n;
    }
    return 0;
}

int ns_l3_group_of_cpu(int cpu)
{
    /* Groups are numbered by their lowest CPU: count the distinct groups whose lowest CPU is
     * below this CPU's group's lowest CPU. A group's lowest CPU identifies it. */
    static int *buf;
    if (!buf && !(buf = malloc(NS_MAX_CPUS * sizeof *buf)))
        return -1;
    int n = l3_cpus_of(cpu, buf, NS_MAX_CPUS);
    if (n == 0)
        return -1;
    int lowest = buf[0];
    char line[65536];
    int online[NS_MAX_CPUS];
    int ncpu = read_line(SYS_CPU "/online", line, sizeof line) ? -1 : ns_parse_cpulist(line, online, NS_MAX_CPUS);
    if (ncpu <= 0)
        return -1;
    int group = 0;
    for (int i = 0; i < ncpu && online[i] < lowest; i++) {
        int m = l3_cpus_of(online[i], buf, NS_MAX_CPUS);
        if (m > 0 && buf[0] == online[i]) /* online[i] leads its own group */
            group++;
    }
    return group;
}

static int64_t meminfo_value(int node, const char *key)
{
    char path[128], line[256];
    snprintf(path, sizeof path, SYS_NODE "/node%d/meminfo", node);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int64_t value = -1;
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f)) {
        /* "Node 0 MemFree:   5762024 kB" */
        char *k = strstr(line, key);
        if (k && k[klen] == ':') {
            value = strtoll(k + klen + 1, NULL, 10) * 1024;
            break;
        }
    }
    fclose(f);
    return value;
}

int64_t ns_node_free_bytes(int node)
{
    int64_t v = meminfo_value(node, "MemFree");
    if (v < 0 && node == 0 && access(SYS_NODE, F_OK) != 0) {
        /* No NUMA in the kernel: the whole machine is node 0. */
        long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        if (pages > 0 && size > 0)
            v = (int64_t)pages * size;
    }
    return v;
}

int64_t ns_node_free_hugepages(int node, uint64_t page_bytes)
{
    char path[160], line[64];
    snprintf(path, sizeof path, SYS_NODE "/node%d/hugepages/hugepages-%llukB/free_hugepages", node,
             (unsigned long long)(page_bytes >> 10));
    if (read_line(path, line, sizeof line))
        return access(SYS_NODE, F_OK) == 0 ? 0 : -1;
    return strtoll(line, NULL, 10);
}

uint64_t ns_llc_bytes(int *instances)
{
    char path[160], line[256];
    int best_level = 0;
    uint64_t best_size = 0;
    int best_idx = -1;
    for (int idx = 0; idx < 16; idx++) {
        snprintf(path, sizeof path, SYS_CPU "/cpu0/cache/index%d/level", idx);
        if (read_line(path, line, sizeof line))
            break;
        int level = atoi(line);
        snprintf(path, sizeof path, SYS_CPU "/cpu0/cache/index%d/type", idx);
        if (read_line(path, line, sizeof line) || !strcmp(line, "Instruction"))
            continue;
        snprintf(path, sizeof path, SYS_CPU "/cpu0/cache/index%d/size", idx);
        if (read_line(path, line, sizeof line))
            continue;
        char *end;
        uint64_t size = strtoull(line, &end, 10);
        if (*end == 'K')
            size <<= 10;
        else if (*end == 'M')
            size <<= 20;
        if (level > best_level) {
            best_level = level;
            best_size = size;
            best_idx = idx;
        }
    }
    int count = 0;
    if (best_idx >= 0) {
        /* Distinct instances: CPUs that lead their own shared_cpu_list at that index. */
        int online[NS_MAX_CPUS];
        int *cpus = malloc(NS_MAX_CPUS * sizeof *cpus);
        char big[65536];
        int ncpu = read_line(SYS_CPU "/online", big, sizeof big) ? 0 : ns_parse_cpulist(big, online, NS_MAX_CPUS);
        for (int i = 0; cpus && i < ncpu; i++) {
            snprintf(path, sizeof path, SYS_CPU "/cpu%d/cache/index%d/shared_cpu_list", online[i], best_idx);
            if (read_line(path, big, sizeof big))
                continue;
            int m = ns_parse_cpulist(big, cpus, NS_MAX_CPUS);
            if (m > 0 && cpus[0] == online[i])
                count++;
        }
        free(cpus);
    }
    if (instances)
        *instances = count > 0 ? count : 1;
    return best_size;
}

int ns_current_cpu(void) { return sched_getcpu(); }

int ns_affinity_cpus(int *cpus, int max_count)
{
    cpu_set_t *set = CPU_ALLOC(NS_MAX_CPUS);
    size_t size = CPU_ALLOC_SIZE(NS_MAX_CPUS);
    int n = 0;
    if (set && sched_getaffinity(0, size, set) == 0)
        for (int c = 0; c < NS_MAX_CPUS && n < max_count; c++)
            if (CPU_ISSET_S(c, size, set))
                cpus[n++] = c;
    if (set)
        CPU_FREE(set);
    return n;
}

void ns_hostname(char *buf, size_t len)
{
    if (gethostname(buf, len))
        snprintf(buf, len, "unknown");
    buf[len - 1] = '\0';
    buf[strcspn(buf, ".")] = '\0';
}

void ns_format_cpu_places(const int *cpus, int n, char *cpus_text, char *nodes_text, char *groups_text, size_t len)
{
    size_t u0 = 0, u1 = 0, u2 = 0;
    cpus_text[0] = nodes_text[0] = groups_text[0] = '\0';
    for (int i = 0; i < n; i++) {
        int c = cpus[i];
        int node = c < 0 ? -1 : ns_node_of_cpu(c), group = c < 0 ? -1 : ns_l3_group_of_cpu(c);
        const char *sep = i ? "," : "";
        if (u0 < len)
            u0 += (size_t)snprintf(cpus_text + u0, len - u0, "%s%d", sep, c);
        if (u1 < len)
            u1 += (size_t)snprintf(nodes_text + u1, len - u1, "%s%d", sep, node);
        if (u2 < len)
            u2 += (size_t)snprintf(groups_text + u2, len - u2, "%s%d", sep, group);
    }
}
