/* numa_copy: node-to-node copy bandwidth. The source buffer is bound to node A, the
 * destination to node B, the OpenMP threads run on the CPUs of node C (libnuma), and each
 * thread memcpy's its contiguous share. One cell (--src, --dst) or every pair of nodes
 * (--matrix). GB/s = buffer bytes / seconds / 1e9: each byte copied counts once (it is read on
 * A and written on B; write-allocate traffic is not counted). Best of --ntimes excluding the
 * first; the destination is compared with the source afterwards. */
#include <errno.h>
#include <numa.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numasweep.h"

typedef struct {
    int src, dst, cpu_node; /* -1: not given */
    int matrix;
    uint64_t bytes;
    char size_note[160]; /* ns_size_unit_note of --size: "" unless a plain number looked like bytes */
    int ntimes;
    int threads;
    ns_common_options common;
} options;

enum { OPT_SRC = NS_OPT_KERNEL, OPT_DST, OPT_CPU_NODE, OPT_MATRIX, OPT_SIZE, OPT_NTIMES, OPT_THREADS };

static const struct option long_options[] = {
    NS_COMMON_LONG_OPTIONS,
    {"src", required_argument, 0, OPT_SRC},
    {"dst", required_argument, 0, OPT_DST},
    {"cpu-node", required_argument, 0, OPT_CPU_NODE},
    {"matrix", no_argument, 0, OPT_MATRIX},
    {"size", required_argument, 0, OPT_SIZE},
    {"ntimes", required_argument, 0, OPT_NTIMES},
    {"threads", required_argument, 0, OPT_THREADS},
    {0, 0, 0, 0},
};

static void usage(void)
{
    printf("Usage: numa_copy (--src=A --dst=B | --matrix) [options]\n"
           "Copy bandwidth from memory on node A to memory on node B with threads on node C.\n\n"
           "  --src=A --dst=B     one cell\n"
           "  --matrix            every pair of nodes with memory\n"
           "  --cpu-node=C        node whose CPUs run the threads (default: the source node, or all\n"
           "                      allowed CPUs when it has none)\n"
           "  --size=SIZE         bytes per buffer (default 1G)\n"
           "  --ntimes=N          repetitions, the first not counted (default 10, at least 2)\n"
           "  --threads=N         OpenMP threads (default OMP_NUM_THREADS, else all allowed CPUs)\n\n%s"
           "(--policy, --mem-nodes and --weights do not apply: --src and --dst bind the buffers.)\n",
           ns_common_help());
}

static void parse(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    ns_common_defaults(&o->common);
    o->src = o->dst = o->cpu_node = -1;
    o->bytes = 1ull << 30;
    o->ntimes = 10;
    int c;
    while ((c = ns_getopt(argc, argv, long_options)) != -1) {
        if (ns_common_option(&o->common, c, optarg))
            continue;
        switch (c) {
        case OPT_SRC: o->src = ns_node_arg("--src", optarg, o->common.check_args); break;
        case OPT_DST: o->dst = ns_node_arg("--dst", optarg, o->common.check_args); break;
        case OPT_CPU_NODE: o->cpu_node = ns_node_arg("--cpu-node", optarg, o->common.check_args); break;
        case OPT_MATRIX: o->matrix = 1; break;
        case OPT_SIZE:
            o->bytes = ns_size_arg("--size", optarg);
            ns_size_unit_note(optarg, o->size_note, sizeof o->size_note);
            break;
        case OPT_NTIMES: o->ntimes = (int)ns_int_arg("--ntimes", optarg, 2, 100000); break;
        case OPT_THREADS: o->threads = (int)ns_int_arg("--threads", optarg, 1, NS_MAX_CPUS); break;
        default: ns_die("unhandled option; see --help");
        }
    }
    ns_no_positional(argc, argv);
    if (o->common.help || o->common.version)
        return;
    if (o->common.policy.kind != NS_POLICY_INHERIT || o->common.mem_nodes_given || o->common.weights_given)
        ns_die("--policy, --mem-nodes and --weights do not apply to numa_copy: --src and --dst bind the buffers");
    if (o->matrix && (o->src >= 0 || o->dst >= 0))
        ns_die("--matrix measures every pair: leave out --src and --dst");
    if (!o->matrix && (o->src < 0 || o->dst < 0))
        ns_die("give --src=A and --dst=B, or --matrix");
    if (!o->threads)
        o->threads = ns_threads_from_env();
    if (o->cpu_node >= 0 && !o->common.check_args) { /* a node of this machine */
        int cpus[NS_MAX_CPUS];
        if (!ns_node_cpus(o->cpu_node, cpus, NS_MAX_CPUS))
            ns_die("--cpu-node=%d: node %d has no CPUs: choose a node with CPUs", o->cpu_node, o->cpu_node);
    }
    ns_common_finish(&o->common);
}

typedef struct {
    double best, avg, worst;
    double on_cpu_pct; /* least share of the counted repetitions' wall time a thread ran on its CPU */
    int valid;
    int cpu_node;
    char src_fractions[4096], dst_fractions[4096];
} cell_result;

/* Every thread of the team onto node's CPUs (-1: every CPU this process may use). The mask is
 * computed once here: libnuma's node-to-CPU lookup fills a cache that is not thread-safe. */
static void run_team_on(int node)
{
    struct bitmask *cpus = numa_allocate_cpumask();
    if (node < 0)
        copy_bitmask_to_bitmask(numa_all_cpus_ptr, cpus);
    else if (numa_node_to_cpus(node, cpus))
        ns_die("cannot read the CPUs of node %d: %s", node, strerror(errno));
    int failed = 0;
#pragma omp parallel reduction(| : failed)
    failed = numa_sched_setaffinity(0, cpus) != 0;
    numa_free_cpumask(cpus);
    if (failed)
        ns_die("cannot run threads on node %d: %s", node, strerror(errno));
}

/* The free-memory check of one buffer set, naming --size's unit when a plain number looked
 * like bytes (--size=67108864 is 64 TiB, not 64 MiB). */
static void check_size_fits(const options *o, const ns_policy *policy, uint64_t bytes)
{
    char what[64], want[32], msg[1024];
    ns_format_size(bytes, want, sizeof want);
    snprintf(what, sizeof what, "--size: %s", want);
    if (ns_free_memory_problem(policy, o->common.pages, bytes, what, msg, sizeof msg))
        ns_die("%s%s", msg, o->size_note);
}

/* Source and destination buffers of one cell fit their nodes' free memory. */
static void check_cell_fits(const options *o, int src, int dst)
{
    ns_policy bind_src = {.kind = NS_POLICY_BIND, .nnodes = 1, .nodes = {src}};
    ns_policy bind_dst = {.kind = NS_POLICY_BIND, .nnodes = 1, .nodes = {dst}};
    if (src == dst) {
        check_size_fits(o, &bind_src, 2 * o->bytes);
    } else {
        check_size_fits(o, &bind_src, o->bytes);
        check_size_fits(o, &bind_dst, o->bytes);
    }
}

static void measure_cell(const options *o, int src, int dst, int cpu_node, cell_result *r)
{
    check_cell_fits(o, src, dst);
    ns_policy bind_src = {.kind = NS_POLICY_BIND, .nnodes = 1, .nodes = {src}};
    ns_policy bind_dst = {.kind = NS_POLICY_BIND, .nnodes = 1, .nodes = {dst}};
    run_team_on(cpu_node);
    r->cpu_node = cpu_node;
    ns_buffer sbuf, dbuf;
    ns_buffer_alloc(&sbuf, o->bytes, o->common.pages, &bind_src);
    ns_buffer_alloc(&dbuf, o->bytes, o->common.pages, &bind_dst);
    unsigned char *s = sbuf.addr, *d = dbuf.addr;
    size_t n = o->bytes;
    /* First touch (placement is fixed by the binding) and a pattern to check the copy by. */
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        s[i] = (unsigned char)(i * 31 + 7);
        d[i] = 0;
    }
    ns_buffer_check_thp(&sbuf);
    ns_buffer_check_thp(&dbuf);
    double *times = malloc((size_t)o->ntimes * sizeof *times);
    ns_oncpu_mark *marks = malloc((size_t)omp_get_max_threads() * sizeof *marks);
    double least_on_cpu = 1.0;
    for (int t = 0; t < o->ntimes; t++) {
        if (t == 1) /* the first repetition is not counted */
            ns_oncpu_team_begin(marks);
        double t0 = ns_seconds();
#pragma omp parallel
        {
            size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
            size_t lo = n * id / nt, hi = n * (id + 1) / nt;
            memcpy(d + lo, s + lo, hi - lo);
        }
        times[t] = ns_seconds() - t0;
    }
    ns_oncpu_team_least(marks, &least_on_cpu);
    free(marks);
    r->on_cpu_pct = 100 * least_on_cpu;
    if (least_on_cpu < NS_RETAKE_BELOW)
        ns_warn("a thread ran only %.0f%% of the repetitions' time on its CPU copying node %d to node %d: its CPU "
                "is shared with other work, the bandwidth is low",
                100 * least_on_cpu, src, dst);
    r->best = 1e300;
    r->worst = 0;
    double total = 0;
    for (int t = 1; t < o->ntimes; t++) {
        r->best = times[t] < r->best ? times[t] : r->best;
        r->worst = times[t] > r->worst ? times[t] : r->worst;
        total += times[t];
    }
    r->avg = total / (o->ntimes - 1);
    r->valid = memcmp(s, d, n) == 0;
    size_t page = ns_pages_bytes(o->common.pages);
    ns_placement p;
    ns_placement_clear(&p);
    ns_placement_query(&p, s, n, page);
    ns_placement_format(&p, r->src_fractions, sizeof r->src_fractions);
    ns_placement_clear(&p);
    ns_placement_query(&p, d, n, page);
    ns_placement_format(&p, r->dst_fractions, sizeof r->dst_fractions);
    free(times);
    ns_buffer_free(&sbuf);
    ns_buffer_free(&dbuf);
}

int main(int argc, char **argv)
{
    ns_set_program("numa_copy");
    options o;
    parse(argc, argv, &o);
    ns_common_info(&o.common, usage, NS_BUILD_COMMIT, NS_BUILD_FLAGS);
    if (numa_available() < 0)
        ns_die("libnuma reports no NUMA support in this kernel: numa_copy needs it");
    if (o.threads)
        omp_set_num_threads(o.threads);

    int nodes[NS_MAX_NODES], nnodes = 0;
    if (o.matrix) {
        int online[NS_MAX_NODES];
        int n = ns_online_nodes(online, NS_MAX_NODES);
        for (int i = 0; i < n; i++)
            if (ns_node_free_bytes(online[i]) > 0) /* nodes with memory */
                nodes[nnodes++] = online[i];
    }
    /* A size too big for a node is refused before the first line of output. */
    for (int cell = 0; cell < (o.matrix ? nnodes * nnodes : 1); cell++)
        check_cell_fits(&o, o.matrix ? nodes[cell / nnodes] : o.src, o.matrix ? nodes[cell % nnodes] : o.dst);
    char host[64];
    ns_hostname(host, sizeof host);
    int threads = 0;
#pragma omp parallel
#pragma omp single
    threads = omp_get_num_threads();
    char size_text[32];
    ns_format_size(o.bytes, size_text, sizeof size_text);
    if (!o.common.quiet) {
        printf("numa_copy: memcpy from node A to node B by %d threads on node C, %s per buffer, pages %s,\n"
               "  %d repetitions (first not counted); GB/s = bytes copied / best time / 1e9\n",
               threads, size_text, ns_pages_name(o.common.pages), o.ntimes);
        printf("%4s %4s %4s %10s %10s %10s %s\n", "src", "dst", "cpu", "best GB/s", "avg GB/s", "min GB/s", "validation");
        fflush(stdout);
    }

    ns_text csv = {0};
    ns_text_printf(&csv, "src_node,dst_node,cpu_node,threads,bytes,best_gb_s,avg_gb_s,min_gb_s,ntimes,validation,"
                         "src_page_fractions,dst_page_fractions,host,on_cpu_pct\n");
    int ncells = o.matrix ? nnodes * nnodes : 1, failed = 0;
    cell_result *r = malloc(sizeof *r);
    for (int cell = 0; cell < ncells; cell++) {
        int src = o.matrix ? nodes[cell / nnodes] : o.src;
        int dst = o.matrix ? nodes[cell % nnodes] : o.dst;
        int cpu_node = o.cpu_node;
        if (cpu_node < 0) {
            int cpus[NS_MAX_CPUS];
            cpu_node = ns_node_cpus(src, cpus, NS_MAX_CPUS) ? src : -1;
        }
        measure_cell(&o, src, dst, cpu_node, r);
        failed |= !r->valid;
        double gb = (double)o.bytes / 1e9;
        ns_text_printf(&csv, "%d,%d,%d,%d,%llu,%.3f,%.3f,%.3f,%d,%s,\"%s\",\"%s\",%s,%.1f\n", src, dst, r->cpu_node,
                       threads, (unsigned long long)o.bytes, gb / r->best, gb / r->avg, gb / r->worst, o.ntimes,
                       r->valid ? "pass" : "fail", r->src_fractions, r->dst_fractions, host, r->on_cpu_pct);
        if (o.common.csv)
            ns_csv_write(o.common.csv, &csv); /* after every cell: nothing measured is lost */
        if (!o.common.quiet) { /* flushed: a log redirected to a file shows each cell as it ends */
            printf("%4d %4d %4d %10.3f %10.3f %10.3f %s  (src pages %s, dst pages %s)\n", src, dst, r->cpu_node,
                   gb / r->best, gb / r->avg, gb / r->worst, r->valid ? "pass" : "FAIL", r->src_fractions,
                   r->dst_fractions);
            fflush(stdout);
        }
    }
    free(r);
    ns_text_free(&csv);
    return failed ? 1 : 0;
}
