/* numa_mix_bandwidth: peak and mixed memory bandwidth of threads on any set of CPUs and nodes.
 *
 * Threads are pinned one per CPU (a CPU list, or the allowed CPUs of --cpu-nodes ordered by a
 * strategy); each streams over a buffer of its own with a traffic kind (kernels/common/load.c:
 * read, r3w1, r2w1, r1w1, triad) as fast as it can, the same generator numa_loaded_latency
 * injects with (its delay 0 is this kernel's peak). Memory: each thread's buffer on its own CPU's
 * node (--local-memory), or the policy of --policy/--mem-nodes for every buffer (a remote node,
 * interleave, weighted interleave). Per traffic kind: --samples samples of --min-time, each the
 * bytes all threads moved divided by the time; median, minimum and maximum GB/s. Rows record
 * the CPUs the threads were found on, their nodes, and where the buffers' pages are.
 *
 * A kernel of its own rather than an option of numa_bandwidth: numa_bandwidth is STREAM (OpenMP
 * threads sharing three arrays, placed by OMP_PLACES, validated), whose memory cannot be local
 * to each thread on several nodes at once and whose loops have no read:write mixes; this one
 * gives every pinned thread its own buffer and policy, which is what a whole-machine peak and a
 * CPU node x memory node matrix need.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "numasweep.h"

typedef struct {
    int cpus[NS_MAX_CPUS];
    int ncpus;
    int cpus_given;
    ns_place_strategy strategy;
    ns_traffic kinds[NS_NTRAFFIC];
    int nkinds;
    uint64_t size;
    int local;
    int matrix;
    int cpu_nodes[NS_MAX_NODES]; /* --matrix: the CPU nodes */
    int ncpu_nodes;
    long threads;
    ns_sampling sampling;
    ns_common_options common;
} options;

enum { OPT_CPUS = NS_OPT_KERNEL, OPT_CPU_NODES, OPT_THREADS, OPT_STRATEGY, OPT_TRAFFIC, OPT_SIZE, OPT_LOCAL, OPT_MATRIX };


static void usage(void)
{
    printf("Usage: numa_mix_bandwidth [options]\n"
           "Bandwidth of pinned threads, each streaming over its own buffer, for read:write mixes.\n\n"
           "  --cpus=LIST        CPUs of the threads, one thread each (e.g. 0-7,64-71)\n"
           "  --cpu-nodes=LIST   else: the allowed CPUs of these nodes (default: of every node)\n"
           "  --strategy=S       sequential, interleaved (one CPU per L3 group in turn) or nodes (one per\n"
           "                     node in turn): the order in which --threads picks CPUs (default sequential)\n"
           "  --threads=N        how many of those CPUs (default: all)\n"
           "  --traffic=LIST     of read, r3w1, r2w1, r1w1 (reads to writes 3:1, 2:1, 1:1), triad (default all)\n"
           "  --size=SIZE        buffer of each thread (default 4x one last-level cache, at least 64M)\n"
           "  --local-memory     each buffer on its own thread's node (instead of --policy/--mem-nodes)\n"
           "  --matrix           CPU node x memory node: for each node of --cpu-nodes (default: every node\n"
           "                     with CPUs) its CPUs as chosen by --strategy/--threads, with memory bound\n"
           "                     to each node of --mem-nodes in turn (--policy=bind; default: every node)\n"
           "  --samples=N        samples per traffic kind (default 5)\n"
           "  --min-time=SEC     duration of each sample (default 0.2)\n"
           "  --seed=N           accepted for symmetry with the other kernels; nothing here is random\n\n"
           "Memory: --local-memory, or --policy=bind --mem-nodes=N (local or remote node N),\n"
           "interleave, weighted (with --weights) for every buffer; inherit keeps numactl's.\n\n%s",
           ns_common_help());
}

static const struct option long_options[] = {
    NS_COMMON_LONG_OPTIONS,
    NS_SAMPLING_LONG_OPTIONS,
    NS_ARG("cpus", OPT_CPUS),
    NS_ARG("cpu-nodes", OPT_CPU_NODES),
    NS_ARG("threads", OPT_THREADS),
    NS_ARG("strategy", OPT_STRATEGY),
    NS_ARG("traffic", OPT_TRAFFIC),
    NS_ARG("size", OPT_SIZE),
    NS_FLAG("local-memory", OPT_LOCAL),
    NS_FLAG("matrix", OPT_MATRIX),
    NS_OPTIONS_END,
};

static int node_has_cpus(int node)
{
    static int cpus[NS_MAX_CPUS];
    return ns_node_cpus(node, cpus, NS_MAX_CPUS) > 0;
}

/* Options into *o; --help and --version print and exit here. */
static void parse(int argc, char **argv, options *o)
{
    ns_set_program("numa_mix_bandwidth");
    memset(o, 0, sizeof *o);
    ns_common_defaults(&o->common);
    o->sampling = (ns_sampling){.samples = 5, .min_time = 0.2, .seed = 1};
    long threads = 0;
    int nodes[NS_MAX_NODES], nnodes = 0;
    const char *traffic = "read,r3w1,r2w1,r1w1,triad", *cpus = NULL;
    int c;
    while ((c = ns_kernel_getopt(argc, argv, long_options, &o->common, &o->sampling)) != -1) {
        switch (c) {
        case OPT_CPUS: cpus = optarg; break;
        case OPT_CPU_NODES: nnodes = ns_int_list_arg("--cpu-nodes", optarg, nodes, NS_MAX_NODES, 0, NS_MAX_NODES - 1); break;
        case OPT_THREADS: threads = ns_int_arg("--threads", optarg, 1, NS_MAX_CPUS); break;
        case OPT_STRATEGY: o->strategy = ns_place_strategy_arg("--strategy", optarg); break;
        case OPT_TRAFFIC: traffic = optarg; break;
        case OPT_SIZE: o->size = ns_size_arg("--size", optarg); break;
        case OPT_LOCAL: o->local = 1; break;
        case OPT_MATRIX: o->matrix = 1; break;
        default: ns_die("unhandled option; see --help");
        }
    }
    ns_no_positional(argc, argv);
    ns_common_info(&o->common, usage, NS_BUILD_COMMIT, NS_BUILD_FLAGS);
    o->nkinds = ns_traffic_list_arg("--traffic", traffic, o->kinds);
    if (cpus && nnodes)
        ns_die("--cpus and --cpu-nodes both choose CPUs: give one of them");
    for (int i = 0; i < nnodes; i++)
        if (!ns_node_online(nodes[i]) || !node_has_cpus(nodes[i]))
            ns_die("--cpu-nodes: node %d is not an online node with CPUs: name nodes that have CPUs", nodes[i]);
    o->cpus_given = cpus != NULL;
    o->threads = threads;
    if (o->matrix) {
        if (cpus || o->local || (o->common.policy.kind != NS_POLICY_INHERIT && o->common.policy.kind != NS_POLICY_BIND))
            ns_die("--matrix chooses the CPUs by node and binds the memory to each node: leave out --cpus, "
                   "--local-memory and --policy other than bind");
        if (nnodes) {
            memcpy(o->cpu_nodes, nodes, (size_t)nnodes * sizeof *nodes);
            o->ncpu_nodes = nnodes;
        } else {
            int online[NS_MAX_NODES], n = ns_online_nodes(online, NS_MAX_NODES);
            for (int i = 0; i < n; i++)
                if (node_has_cpus(online[i]))
                    o->cpu_nodes[o->ncpu_nodes++] = online[i];
        }
    } else {
        o->ncpus = ns_place_cpus("--cpus", cpus, nodes, nnodes, -1, o->strategy, threads, o->cpus);
    }
    if (!o->size) {
        int instances;
        uint64_t bytes = (4 * ns_llc_bytes(&instances) + (1u << 20) - 1) >> 20 << 20;
        o->size = bytes < (64u << 20) ? 64u << 20 : bytes;
    }
    if (o->size < 16384)
        ns_die("--size: below 16K: give each thread at least 16K");
    if (o->local && o->common.policy.kind != NS_POLICY_INHERIT)
        ns_die("--local-memory and --policy=%s both place the memory: give one of them",
               ns_policy_kind_name(o->common.policy.kind));
    ns_common_finish(&o->common);
}

static void sleep_for(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts))
        ;
}

/* One measured set-up: the threads' CPUs and where their buffers go. */
typedef struct {
    int cpus[NS_MAX_CPUS];
    int n;
    ns_policy policy;
    int local;
} cell;

/* Refuse before allocating when the cell's buffers do not fit: per node for local buffers,
 * else on the policy's target nodes. */
static void check_free_memory(const options *o, const cell *c)
{
    char what[96], s1[32], msg[1024];
    ns_format_size(o->size, s1, sizeof s1);
    int per_node[NS_MAX_NODES] = {0};
    for (int i = 0; i < c->n; i++)
        per_node[ns_node_of_cpu(c->cpus[i]) < 0 ? 0 : ns_node_of_cpu(c->cpus[i])]++;
    for (int nd = 0; nd < NS_MAX_NODES; nd++) {
        int count = c->local ? per_node[nd] : nd == 0 ? c->n : 0;
        if (!count)
            continue;
        ns_policy target = c->local ? (ns_policy){.kind = NS_POLICY_BIND, .nnodes = 1, .nodes = {nd}} : c->policy;
        snprintf(what, sizeof what, "%d buffers of %s", count, s1);
        if (ns_free_memory_problem(&target, o->common.pages, o->size * (uint64_t)count, what, msg, sizeof msg))
            ns_die("%s", msg);
    }
}

/* Every traffic kind on one cell; a CSV row and a table line per kind. */
static void measure_cell(const options *o, const cell *c, ns_text *csv)
{
    ns_load_team *team = ns_load_start(c->cpus, c->n, o->size, o->common.pages, &c->policy, c->local);
    ns_placement placement;
    char fractions[4096], mem_nodes[256] = "", weights[256] = "", host[64];
    ns_placement_clear(&placement);
    ns_load_placement(team, &placement);
    ns_placement_format(&placement, fractions, sizeof fractions);
    ns_format_int_list(c->policy.nodes, c->policy.nnodes, mem_nodes, sizeof mem_nodes);
    if (c->policy.kind == NS_POLICY_WEIGHTED) {
        int w[NS_MAX_NODES];
        ns_policy_current_weights(&c->policy, w);
        ns_format_int_list(w, c->policy.nnodes, weights, sizeof weights);
    }
    ns_hostname(host, sizeof host);
    const char *memory = c->local ? "local" : ns_policy_kind_name(c->policy.kind);
    double *gb_s = malloc((size_t)o->sampling.samples * sizeof *gb_s);
    int seen[NS_MAX_CPUS];
    char cpus_text[4096], nodes_text[4096], groups_text[4096], cpu_list[256];
    if (!gb_s)
        ns_die("out of memory");
    ns_format_cpulist(c->cpus, c->n, cpu_list, sizeof cpu_list);
    for (int k = 0; k < o->nkinds; k++) {
        ns_load_run(team, o->kinds[k], 0);
        sleep_for(o->sampling.min_time / 4); /* every thread streaming before the first sample */
        for (int s = 0; s < o->sampling.samples; s++) {
            uint64_t b0 = ns_load_bytes(team);
            double t0 = ns_seconds();
            sleep_for(o->sampling.min_time);
            uint64_t b1 = ns_load_bytes(team);
            gb_s[s] = (double)(b1 - b0) / (ns_seconds() - t0) / 1e9;
        }
        ns_load_pause(team);
        double median, min, max;
        ns_summarize(gb_s, o->sampling.samples, &median, &min, &max);
        int n = ns_load_cpus_seen(team, seen);
        for (int i = 0; i < n; i++)
            if (seen[i] < 0)
                ns_warn("thread %d moved CPU while measuring %s: its CPU column says -1", i, ns_traffic_name(o->kinds[k]));
        double on_cpu = ns_load_least_on_cpu(team);
        if (on_cpu < NS_RETAKE_BELOW)
            ns_warn("a thread ran only %.0f%% of the time on its CPU while measuring %s: its CPU is shared with "
                    "other work, the bandwidth is low", 100 * on_cpu, ns_traffic_name(o->kinds[k]));
        ns_format_cpu_places(seen, n, cpus_text, nodes_text, groups_text, sizeof cpus_text);
        ns_text_printf(csv, "%s,%d,\"%s\",\"%s\",\"%s\",%s,%s,\"%s\",\"%s\",%s,%llu,%.4f,%.4f,%.4f,%d,%.4f,\"%s\",%s,"
                            "%.1f\n",
                       ns_traffic_name(o->kinds[k]), n, cpus_text, nodes_text, groups_text,
                       o->cpus_given ? "list" : ns_place_strategy_name(o->strategy), memory, mem_nodes, weights,
                       ns_pages_name(o->common.pages), (unsigned long long)o->size, median, min, max,
                       o->sampling.samples, o->sampling.min_time, fractions, host, 100 * on_cpu);
        if (o->common.csv)
            ns_csv_write(o->common.csv, csv); /* after every kind: nothing measured is lost */
        if (!o->common.quiet) {
            char where[300];
            snprintf(where, sizeof where, "%s %s", memory, mem_nodes);
            printf("| %-16.16s | %-14.14s | %-7s | %11.3f | %8.3f | %8.3f |\n", cpu_list, where,
                   ns_traffic_name(o->kinds[k]), median, min, max);
            fflush(stdout);
        }
    }
    free(gb_s);
    ns_load_stop(team);
}

int main(int argc, char **argv)
{
    options o;
    parse(argc, argv, &o);

    /* The cells: the threads and memory asked for, or with --matrix every (CPU node, memory
     * node), the CPU node's CPUs chosen as without --matrix, memory bound to the memory node. */
    int ncells = 1;
    cell *cells;
    if (o.matrix) {
        int mem[NS_MAX_NODES], nmem = o.common.policy.kind == NS_POLICY_BIND ? o.common.policy.nnodes : 0;
        if (nmem)
            memcpy(mem, o.common.policy.nodes, (size_t)nmem * sizeof *mem);
        else
            nmem = ns_online_nodes(mem, NS_MAX_NODES);
        ncells = o.ncpu_nodes * nmem;
        cells = calloc((size_t)ncells, sizeof *cells);
        if (!cells)
            ns_die("out of memory");
        for (int i = 0; i < o.ncpu_nodes; i++)
            for (int j = 0; j < nmem; j++) {
                cell *c = &cells[i * nmem + j];
                c->n = ns_place_cpus("--cpus", NULL, &o.cpu_nodes[i], 1, -1, o.strategy, o.threads, c->cpus);
                c->policy = (ns_policy){.kind = NS_POLICY_BIND, .nnodes = 1, .nodes = {mem[j]}};
            }
    } else {
        cells = calloc(1, sizeof *cells);
        if (!cells)
            ns_die("out of memory");
        memcpy(cells[0].cpus, o.cpus, (size_t)o.ncpus * sizeof *o.cpus);
        cells[0].n = o.ncpus;
        cells[0].policy = o.common.policy;
        cells[0].local = o.local;
    }
    for (int i = 0; i < ncells; i++)
        check_free_memory(&o, &cells[i]);
    ns_policy_apply_weights(&o.common.policy);
    if (!o.common.quiet) {
        char s1[32];
        ns_format_size(o.size, s1, sizeof s1);
        printf("numa_mix_bandwidth: %d set-up(s), %s per thread, pages %s, %d samples of %.3g s per traffic kind\n\n"
               "| CPUs             | memory         | traffic | GB/s median | GB/s min | GB/s max |\n"
               "|------------------|----------------|---------|-------------|----------|----------|\n",
               ncells, s1, ns_pages_name(o.common.pages), o.sampling.samples, o.sampling.min_time);
        fflush(stdout);
    }
    ns_text csv = {0};
    ns_text_printf(&csv, "traffic,threads,cpus,cpu_nodes,l3_groups,strategy,memory,mem_nodes,weights,page_size,"
                         "size_bytes,gb_s_median,gb_s_min,gb_s_max,samples,sample_s,page_fractions,host,on_cpu_pct\n");
    for (int i = 0; i < ncells; i++)
        measure_cell(&o, &cells[i], &csv);
    free(cells);
    ns_text_free(&csv);
    return 0;
}
