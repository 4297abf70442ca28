/* numa_c2c: core-to-core latency, the round-trip time of one cache line bounced between two
 * pinned CPUs, for every pair of the chosen CPUs (or a random sample of the pairs).
 *
 * For each pair (a, b): one page is mapped with --policy/--mem-nodes (the line's home node) and
 * touched by the main thread on CPU a; a second thread is pinned to CPU b. The line holds a
 * counter: a waits for an even value and writes it + 1, b waits for an odd value and writes it
 * + 1, so each round trip moves the line from a to b and back (one store and one load miss on
 * each side). --samples samples, each batches of --round-trips round trips until --min-time has
 * passed; median, minimum and maximum ns per round trip. Each row records the CPUs both threads were found on, their nodes and L3
 * groups, and the node holding the line's page (move_pages).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numasweep.h"

typedef struct {
    int cpus[NS_MAX_CPUS];
    int ncpus;
    long pairs;      /* 0: every pair */
    long round_trips;
    ns_sampling sampling;
    ns_common_options common;
} options;

enum { OPT_CPUS = NS_OPT_KERNEL, OPT_PAIRS, OPT_ROUND_TRIPS };


static void usage(void)
{
    printf("Usage: numa_c2c [options]\n"
           "Core-to-core latency: round trips of one cache line between two pinned CPUs, per pair of CPUs.\n\n"
           "  --cpus=LIST          CPUs to pair, e.g. 0-7,64-71 (default: every CPU this process may use)\n"
           "  --pairs=all|N        every pair a < b (default), or N pairs drawn at random (large machines)\n"
           "  --round-trips=N      round trips per batch (default 1000); a sample runs batches until\n"
           "  --min-time=SEC       has passed (default 0.02)\n"
           "  --samples=N          samples per pair (default 5); median, min and max are reported\n"
           "  --seed=N             seed of the pair sample (default 1)\n\n"
           "The line's home: --policy=bind --mem-nodes=N puts its page on node N; --policy=inherit\n"
           "(default) lets the first touch by the pair's first CPU decide.\n\n%s",
           ns_common_help());
}

static const struct option long_options[] = {
    NS_COMMON_LONG_OPTIONS,
    NS_SAMPLING_LONG_OPTIONS,
    NS_ARG("cpus", OPT_CPUS),
    NS_ARG("pairs", OPT_PAIRS),
    NS_ARG("round-trips", OPT_ROUND_TRIPS),
    NS_OPTIONS_END,
};

/* Options into *o; --help and --version print and exit here. */
static void parse(int argc, char **argv, options *o)
{
    ns_set_program("numa_c2c");
    *o = (options){.round_trips = 1000, .sampling = {.samples = 5, .min_time = 0.02, .seed = 1}};
    ns_common_defaults(&o->common);
    const char *cpus = NULL;
    int c;
    while ((c = ns_kernel_getopt(argc, argv, long_options, &o->common, &o->sampling)) != -1) {
        switch (c) {
        case OPT_CPUS: cpus = optarg; break;
        case OPT_PAIRS: o->pairs = strcmp(optarg, "all") ? ns_int_arg("--pairs", optarg, 1, 1L << 40) : 0; break;
        case OPT_ROUND_TRIPS: o->round_trips = ns_int_arg("--round-trips", optarg, 1, 1L << 40); break;
        default: ns_die("unhandled option; see --help");
        }
    }
    ns_no_positional(argc, argv);
    ns_common_info(&o->common, usage, NS_BUILD_COMMIT, NS_BUILD_FLAGS);
    if (cpus)
        o->ncpus = ns_cpulist_arg("--cpus", cpus, o->cpus, NS_MAX_CPUS);
    else
        o->ncpus = ns_affinity_cpus(o->cpus, NS_MAX_CPUS);
    if (o->ncpus < 2)
        ns_die("--cpus: %d CPU: a pair needs two CPUs; name at least two", o->ncpus);
    ns_common_finish(&o->common);
}

typedef struct {
    _Alignas(64) _Atomic uint64_t value;
} line;

typedef struct {
    line *ln;
    int cpu;
    int cpu_seen;
    double on_cpu; /* share of its wall time on its CPU, from ready to STOP */
    _Atomic int ready;
} partner;

/* Odd value written by CPU a to end the partner. */
#define STOP UINT64_MAX

/* CPU b: answers every odd value with the next even one, until STOP. */
static void *partner_main(void *arg)
{
    partner *pt = arg;
    ns_pin_to_cpu(pt->cpu);
    int cpu0 = ns_current_cpu();
    ns_oncpu_mark mark;
    ns_oncpu_begin(&mark);
    atomic_store(&pt->ready, 1);
    for (;;) {
        uint64_t v;
        while ((v = atomic_load_explicit(&pt->ln->value, memory_order_acquire)) % 2 == 0)
            ;
        if (v == STOP)
            break;
        atomic_store_explicit(&pt->ln->value, v + 1, memory_order_release);
    }
    pt->cpu_seen = ns_current_cpu() == cpu0 ? cpu0 : -1;
    pt->on_cpu = ns_oncpu_share(&mark);
    return NULL;
}

typedef struct {
    double median_ns, min_ns, max_ns;
    uint64_t round_trips;
    double on_cpu_pct; /* least share of a sample's (the partner: the pair's) wall time on the CPU */
    int cpu_a_seen, cpu_b_seen;
    char fractions[1024];
    int line_node;
    ns_observed_policy policy; /* of the line's page, as the kernel reports it */
} pair_result;

static void measure_pair(const options *o, int a, int b, pair_result *r)
{
    ns_pin_to_cpu(a);
    int cpu0 = ns_current_cpu();
    ns_buffer buf;
    ns_buffer_alloc(&buf, 4096, NS_PAGES_4K, &o->common.policy);
    line *ln = buf.addr;
    atomic_store(&ln->value, 0); /* first touch by CPU a */
    ns_placement pl;
    ns_placement_clear(&pl);
    ns_placement_query(&pl, buf.addr, 4096, 4096);
    ns_placement_format(&pl, r->fractions, sizeof r->fractions);
    ns_policy_observe(buf.addr, &r->policy);
    int placed[NS_MAX_NODES];
    r->line_node = ns_placement_nodes(&pl, placed, NS_MAX_NODES) == 1 ? placed[0] : -1;

    partner pt = {.ln = ln, .cpu = b};
    pthread_t tid;
    if (pthread_create(&tid, NULL, partner_main, &pt))
        ns_die("cannot start the thread for CPU %d", b);
    while (!atomic_load(&pt.ready))
        ;
    int samples = o->sampling.samples;
    double *ns_per_trip = malloc((size_t)samples * sizeof *ns_per_trip);
    if (!ns_per_trip)
        ns_die("out of memory");
    uint64_t v = 0;
    r->round_trips = 0;
    double least_on_cpu = 1.0;
    for (int s = 0; s < samples; s++) {
        uint64_t trips = 0;
        ns_oncpu_mark mark;
        ns_oncpu_begin(&mark);
        double t0 = ns_seconds(), elapsed;
        do {
            for (long i = 0; i < o->round_trips; i++) {
                while (atomic_load_explicit(&ln->value, memory_order_acquire) != v)
                    ;
                atomic_store_explicit(&ln->value, v + 1, memory_order_release);
                v += 2;
            }
            /* the partner's answer closes the batch's last round trip */
            while (atomic_load_explicit(&ln->value, memory_order_acquire) != v)
                ;
            trips += (uint64_t)o->round_trips;
            elapsed = ns_seconds() - t0;
        } while (elapsed < o->sampling.min_time);
        double on_cpu = ns_oncpu_share(&mark);
        least_on_cpu = on_cpu < least_on_cpu ? on_cpu : least_on_cpu;
        ns_per_trip[s] = elapsed * 1e9 / (double)trips;
        r->round_trips += trips;
    }
    atomic_store_explicit(&ln->value, STOP, memory_order_release);
    pthread_join(tid, NULL);
    ns_summarize(ns_per_trip, samples, &r->median_ns, &r->min_ns, &r->max_ns);
    r->cpu_a_seen = ns_current_cpu() == cpu0 ? cpu0 : -1;
    r->cpu_b_seen = pt.cpu_seen;
    r->on_cpu_pct = 100 * (pt.on_cpu < least_on_cpu ? pt.on_cpu : least_on_cpu);
    free(ns_per_trip);
    ns_buffer_free(&buf);
}

int main(int argc, char **argv)
{
    options o;
    parse(argc, argv, &o);

    /* The pairs a < b, all or a random sample of them (in CPU order). */
    size_t total = (size_t)o.ncpus * (size_t)(o.ncpus - 1) / 2, npairs = total;
    int(*pairs)[2] = malloc(total * sizeof *pairs);
    if (!pairs)
        ns_die("out of memory");
    size_t k = 0;
    for (int i = 0; i < o.ncpus; i++)
        for (int j = i + 1; j < o.ncpus; j++) {
            pairs[k][0] = o.cpus[i];
            pairs[k][1] = o.cpus[j];
            k++;
        }
    if (o.pairs && (size_t)o.pairs < total) {
        /* Selection sampling (Knuth's algorithm S): keeps the order, each pair equally likely. */
        ns_rng rng;
        ns_rng_seed(&rng, o.sampling.seed);
        size_t kept = 0;
        for (size_t i = 0; i < total && kept < (size_t)o.pairs; i++)
            if (ns_rng_below(&rng, total - i) < (size_t)o.pairs - kept) {
                pairs[kept][0] = pairs[i][0];
                pairs[kept][1] = pairs[i][1];
                kept++;
            }
        npairs = kept;
    }
    ns_policy_apply_weights(&o.common.policy);
    char host[64], policy_nodes[256];
    ns_hostname(host, sizeof host);
    if (!o.common.quiet) {
        printf("numa_c2c: %zu pairs of %d CPUs, %d samples of >= %.3g s, line policy %s\n\n"
               "| CPU a | CPU b | node a | node b | L3 a | L3 b | line node | round trip ns |\n"
               "|-------|-------|--------|--------|------|------|-----------|---------------|\n",
               npairs, o.ncpus, o.sampling.samples, o.sampling.min_time, ns_policy_kind_name(o.common.policy.kind));
        fflush(stdout);
    }
    ns_text csv = {0};
    ns_text_printf(&csv, "cpu_a,cpu_b,node_a,node_b,l3_group_a,l3_group_b,policy,mem_nodes,line_node,"
                         "line_page_fractions,round_trip_ns_median,round_trip_ns_min,round_trip_ns_max,"
                         "one_way_ns,samples,round_trips,host,on_cpu_pct\n");
    for (size_t i = 0; i < npairs; i++) {
        pair_result r;
        measure_pair(&o, pairs[i][0], pairs[i][1], &r);
        if (r.cpu_a_seen < 0 || r.cpu_b_seen < 0)
            ns_warn("pair %d-%d: a thread moved CPU while measuring: its CPU column says -1", pairs[i][0],
                    pairs[i][1]);
        if (r.on_cpu_pct < 100 * NS_RETAKE_BELOW)
            ns_warn("pair %d-%d: a thread ran only %.0f%% of the time on its CPU: its CPU is shared with other "
                    "work, the round trips are inflated", pairs[i][0], pairs[i][1], r.on_cpu_pct);
        int a = r.cpu_a_seen, b = r.cpu_b_seen;
        ns_format_int_list(r.policy.nodes, r.policy.nnodes, policy_nodes, sizeof policy_nodes);
        ns_text_printf(&csv, "%d,%d,%d,%d,%d,%d,%s,\"%s\",%d,\"%s\",%.2f,%.2f,%.2f,%.2f,%d,%llu,%s,%.1f\n", a, b,
                       a < 0 ? -1 : ns_node_of_cpu(a), b < 0 ? -1 : ns_node_of_cpu(b),
                       a < 0 ? -1 : ns_l3_group_of_cpu(a), b < 0 ? -1 : ns_l3_group_of_cpu(b),
                       r.policy.name, policy_nodes, r.line_node, r.fractions,
                       r.median_ns, r.min_ns, r.max_ns, r.median_ns / 2, o.sampling.samples, (unsigned long long)r.round_trips, host,
                       r.on_cpu_pct);
        if (o.common.csv)
            ns_csv_write(o.common.csv, &csv);
        if (!o.common.quiet) {
            printf("| %5d | %5d | %6d | %6d | %4d | %4d | %9d | %13.1f |\n", pairs[i][0], pairs[i][1],
                   ns_node_of_cpu(pairs[i][0]), ns_node_of_cpu(pairs[i][1]), ns_l3_group_of_cpu(pairs[i][0]),
                   ns_l3_group_of_cpu(pairs[i][1]), r.line_node, r.median_ns);
            fflush(stdout);
        }
    }
    free(pairs);
    ns_text_free(&csv);
    return 0;
}
