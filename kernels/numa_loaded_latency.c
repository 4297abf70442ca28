/* numa_loaded_latency: pointer-chase latency on one CPU while load threads on other CPUs move
 * memory traffic, swept over an injection delay (Intel MLC's "loaded latency", multichase's
 * multiload).
 *
 * The chase is numa_latency's: one random cycle over the 64-byte slots of a --size buffer
 * (kernels/common/cycle.c), dependent loads, --samples samples of at least --min-time each,
 * median, minimum and maximum ns per load. The load threads (kernels/common/load.c) each stream
 * over a buffer of their own with a traffic kind (read, r3w1, r2w1, r1w1, triad); after every
 * block of about 64 lines a thread spins DELAY iterations, so the delays sweep the injected load
 * from the machine's peak (0) to little; "idle" is the point without load (the threads wait).
 * Both the chase buffer and the load buffers take --policy/--mem-nodes (the memory node under
 * load). For each (traffic kind, delay) one row: the chase latency and the bandwidth the load
 * threads achieved during the chase's samples (bytes they moved / time), with the CPUs the chase
 * and every load thread were found on and where each buffer's pages are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numasweep.h"

#define MAX_DELAYS 64
#define IDLE (-1L)
#define MAX_TEXT 4096

typedef struct {
    uint64_t size;
    uint64_t load_size;
    int chase_cpu;
    int load_cpus[NS_MAX_CPUS];
    int nload;
    int cpus_given;
    ns_place_strategy strategy;
    ns_traffic kinds[NS_NTRAFFIC];
    int nkinds;
    long delays[MAX_DELAYS];
    int ndelays;
    ns_sampling sampling;
    ns_common_options common;
} options;

enum { OPT_SIZE = NS_OPT_KERNEL, OPT_LOAD_SIZE, OPT_CHASE_CPU, OPT_LOAD_CPUS, OPT_LOAD_THREADS, OPT_STRATEGY,
       OPT_TRAFFIC, OPT_DELAY };


#define DEFAULT_DELAYS "idle,20000,5000,2000,1000,500,200,100,50,20,0"

static void usage(void)
{
    printf("Usage: numa_loaded_latency [options]\n"
           "Pointer-chase latency on one CPU while load threads on other CPUs generate memory traffic,\n"
           "swept over an injection delay; each row also records the bandwidth the load achieved.\n\n"
           "  --size=SIZE          chase buffer (default 256M)\n"
           "  --load-size=SIZE     buffer of each load thread (default 4x one last-level cache, at least 64M)\n"
           "  --chase-cpu=CPU      CPU of the chase (default: the first CPU this process may use)\n"
           "  --load-cpus=LIST     CPUs of the load threads, e.g. 1-7 (default: chosen by --strategy)\n"
           "  --strategy=S         sequential, interleaved (one CPU per L3 group in turn) or nodes (one per\n"
           "                       node in turn), over the allowed CPUs but the chase's (default sequential)\n"
           "  --load-threads=N     how many CPUs --strategy picks (default: all of them)\n"
           "  --traffic=LIST       of read, r3w1, r2w1, r1w1 (reads to writes 3:1, 2:1, 1:1), triad\n"
           "                       (default read)\n"
           "  --delay=LIST         spin iterations (about one cycle each) after every 64 lines a load thread\n"
           "                       moves, 0..%ld, or idle (no load); rows in the order given\n"
           "                       (default " DEFAULT_DELAYS ")\n"
           "  --samples=N          chase samples per point (default 5)\n"
           "  --min-time=SEC       minimum duration of each sample (default 0.1)\n"
           "  --seed=N             seed of the random cycle (default 1)\n\n"
           "Memory: --policy and --mem-nodes place the chase buffer and every load buffer (the memory node\n"
           "under load); --policy=inherit keeps numactl's.\n\n%s",
           NS_LOAD_MAX_DELAY, ns_common_help());
}

static const struct option long_options[] = {
    NS_COMMON_LONG_OPTIONS,
    NS_SAMPLING_LONG_OPTIONS,
    NS_ARG("size", OPT_SIZE),
    NS_ARG("load-size", OPT_LOAD_SIZE),
    NS_ARG("chase-cpu", OPT_CHASE_CPU),
    NS_ARG("load-cpus", OPT_LOAD_CPUS),
    NS_ARG("load-threads", OPT_LOAD_THREADS),
    NS_ARG("strategy", OPT_STRATEGY),
    NS_ARG("traffic", OPT_TRAFFIC),
    NS_ARG("delay", OPT_DELAY),
    NS_OPTIONS_END,
};

static int parse_delays(const char *text, long *delays)
{
    char *copy = strdup(text), *save = NULL;
    int n = 0;
    if (!copy)
        ns_die("out of memory");
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == MAX_DELAYS)
            ns_die("--delay: more than %d delays: sweep fewer points", MAX_DELAYS);
        if (!strcmp(tok, "idle")) {
            delays[n++] = IDLE;
            continue;
        }
        char *end;
        long v = strtol(tok, &end, 10);
        if (end == tok || *end)
            ns_die("--delay: '%s' is not a number: give spin iterations 0..%ld or idle", tok, NS_LOAD_MAX_DELAY);
        if (v < 0 || v > NS_LOAD_MAX_DELAY)
            ns_die("--delay: %s is outside 0..%ld: give spin iterations 0..%ld or idle", tok, NS_LOAD_MAX_DELAY,
                   NS_LOAD_MAX_DELAY);
        delays[n++] = v;
    }
    free(copy);
    if (!n)
        ns_die("--delay: empty list: give spin iterations 0..%ld or idle", NS_LOAD_MAX_DELAY);
    return n;
}

static uint64_t default_load_size(void)
{
    int instances;
    uint64_t bytes = 4 * ns_llc_bytes(&instances);
    bytes = (bytes + (1u << 20) - 1) >> 20 << 20;
    return bytes < (64u << 20) ? 64u << 20 : bytes;
}

/* Options into *o; --help and --version print and exit here. */
static void parse(int argc, char **argv, options *o)
{
    ns_set_program("numa_loaded_latency");
    memset(o, 0, sizeof *o);
    ns_common_defaults(&o->common);
    o->size = 256u << 20;
    o->chase_cpu = -1;
    o->sampling = (ns_sampling){.samples = 5, .min_time = 0.1, .seed = 1};
    long threads = 0;
    const char *traffic = "read", *delays = DEFAULT_DELAYS, *load_cpus = NULL;
    int c;
    while ((c = ns_kernel_getopt(argc, argv, long_options, &o->common, &o->sampling)) != -1) {
        switch (c) {
        case OPT_SIZE: o->size = ns_size_arg("--size", optarg); break;
        case OPT_LOAD_SIZE: o->load_size = ns_size_arg("--load-size", optarg); break;
        case OPT_CHASE_CPU: o->chase_cpu = ns_cpu_arg("--chase-cpu", optarg); break;
        case OPT_LOAD_CPUS: load_cpus = optarg; break;
        case OPT_LOAD_THREADS: threads = ns_int_arg("--load-threads", optarg, 1, NS_MAX_CPUS); break;
        case OPT_STRATEGY: o->strategy = ns_place_strategy_arg("--strategy", optarg); break;
        case OPT_TRAFFIC: traffic = optarg; break;
        case OPT_DELAY: delays = optarg; break;
        default: ns_die("unhandled option; see --help");
        }
    }
    ns_no_positional(argc, argv);
    ns_common_info(&o->common, usage, NS_BUILD_COMMIT, NS_BUILD_FLAGS);
    o->nkinds = ns_traffic_list_arg("--traffic", traffic, o->kinds);
    o->ndelays = parse_delays(delays, o->delays);
    if (o->size < 2 * NS_CHASE_SLOT_BYTES)
        ns_die("--size: below two %d-byte slots: use at least 128 bytes", NS_CHASE_SLOT_BYTES);
    if (o->size / NS_CHASE_SLOT_BYTES > UINT32_MAX)
        ns_die("--size: more than 2^32 slots: use at most 256G");
    if (!o->load_size)
        o->load_size = default_load_size();
    if (o->load_size < 16384)
        ns_die("--load-size: below 16K: give each load thread at least 16K");

    if (o->chase_cpu < 0) {
        int allowed[NS_MAX_CPUS];
        ns_affinity_cpus(allowed, NS_MAX_CPUS);
        o->chase_cpu = allowed[0];
    }
    o->cpus_given = load_cpus != NULL;
    o->nload = ns_place_cpus("--load-cpus", load_cpus, NULL, 0, o->chase_cpu, o->strategy, threads, o->load_cpus);
    ns_common_finish(&o->common);
}

typedef struct {
    double median_ns, min_ns, max_ns, spread_pct, load_gb_s, elapsed_s;
    double on_cpu_pct; /* least share of a kept sample's wall time the chase ran (CPU time / wall time) */
    int retaken;       /* samples taken again because the chase ran under NS_RETAKE_BELOW of them */
    uint64_t loads;
    int chase_cpu_seen;
} point;

/* Chase samples while the load runs (or not); the load's bytes are read around each sample. */
static void measure(const options *o, void **p, double per_load, ns_load_team *team, point *pt)
{
    double *ns_per_load = malloc((size_t)o->sampling.samples * sizeof *ns_per_load);
    if (!ns_per_load)
        ns_die("out of memory");
    uint64_t moved = 0;
    double elapsed_all = 0;
    int cpu0 = ns_current_cpu();
    pt->loads = 0;
    pt->on_cpu_pct = 100;
    pt->retaken = 0;
    for (int s = 0; s < o->sampling.samples; s++) {
        uint64_t batch = (uint64_t)(o->sampling.min_time / per_load / 4) + 16, loads = 0;
        uint64_t b0 = ns_load_bytes(team);
        double c0 = ns_thread_cpu_seconds();
        double t0 = ns_seconds(), elapsed;
        do {
            *p = ns_chase(*p, batch);
            loads += batch;
            elapsed = ns_seconds() - t0;
        } while (elapsed < o->sampling.min_time);
        uint64_t moved_now = ns_load_bytes(team) - b0;
        double on_cpu = 100 * (ns_thread_cpu_seconds() - c0) / elapsed;
        /* Off its CPU for part of the sample: taken again, as numa_latency does (its load bytes
         * and time too, so the bandwidth is that of the kept samples). */
        if (on_cpu < 100 * NS_RETAKE_BELOW && pt->retaken < o->sampling.samples) {
            pt->retaken++;
            s--;
            continue;
        }
        moved += moved_now;
        pt->on_cpu_pct = on_cpu < pt->on_cpu_pct ? on_cpu : pt->on_cpu_pct;
        elapsed_all += elapsed;
        ns_per_load[s] = elapsed * 1e9 / (double)loads;
        per_load = elapsed / (double)loads;
        pt->loads += loads;
    }
    ns_summarize(ns_per_load, o->sampling.samples, &pt->median_ns, &pt->min_ns, &pt->max_ns);
    pt->spread_pct = 100 * (pt->max_ns - pt->min_ns) / pt->median_ns;
    pt->load_gb_s = (double)moved / elapsed_all / 1e9;
    pt->elapsed_s = elapsed_all;
    pt->chase_cpu_seen = ns_current_cpu() == cpu0 ? cpu0 : -1;
    free(ns_per_load);
}

static void *volatile chase_sink;

int main(int argc, char **argv)
{
    options o;
    parse(argc, argv, &o);

    char what[96], s1[32], s2[32];
    ns_format_size(o.size, s1, sizeof s1);
    ns_format_size(o.load_size, s2, sizeof s2);
    snprintf(what, sizeof what, "chase %s and %d load buffers of %s", s1, o.nload, s2);
    char msg[1024];
    if (ns_free_memory_problem(&o.common.policy, o.common.pages, o.size + o.size / 16 + o.load_size * (uint64_t)o.nload,
                               what, msg, sizeof msg))
        ns_die("%s", msg);
    ns_policy_apply_weights(&o.common.policy);

    /* The chase buffer: mapped and touched by the chase's own CPU. */
    ns_pin_to_cpu(o.chase_cpu);
    ns_buffer buf;
    ns_buffer_alloc(&buf, o.size, o.common.pages, &o.common.policy);
    ns_rng rng;
    ns_rng_seed(&rng, o.sampling.seed * 0x100000001b3ull + o.size);
    double touch_s, build_s;
    void *p = ns_chase_prepare(buf.addr, o.size, &rng, &touch_s, &build_s);
    ns_buffer_check_thp(&buf);

    ns_load_team *team = ns_load_start(o.load_cpus, o.nload, o.load_size, o.common.pages, &o.common.policy, 0);

    ns_placement placement;
    char chase_fractions[MAX_TEXT], load_fractions[MAX_TEXT], policy_nodes[256], weights[256];
    ns_placement_clear(&placement);
    ns_placement_query(&placement, buf.addr, o.size, ns_pages_bytes(o.common.pages));
    ns_placement_format(&placement, chase_fractions, sizeof chase_fractions);
    ns_placement_clear(&placement);
    ns_load_placement(team, &placement);
    ns_placement_format(&placement, load_fractions, sizeof load_fractions);
    ns_observed_policy seen;
    ns_policy_observe(buf.addr, &seen);
    ns_format_int_list(seen.nodes, seen.nnodes, policy_nodes, sizeof policy_nodes);
    ns_format_int_list(seen.weights, seen.nweights, weights, sizeof weights);
    char host[64];
    ns_hostname(host, sizeof host);

    /* Warm-up: up to one pass over the cycle (at most --min-time), calibrating a sample's loads. */
    double per_load = ns_chase_warm(&p, o.size / NS_CHASE_SLOT_BYTES, o.sampling.min_time);

    if (!o.common.quiet) {
        char cpus[256];
        ns_format_int_list(o.load_cpus, o.nload, cpus, sizeof cpus);
        printf("numa_loaded_latency: chase of %s on CPU %d (node %d), %d load threads on CPUs %s with %s each,\n"
               "  policy %s, pages %s, %d samples of >= %.3g s per point\n\n"
               "| traffic | delay    | latency ns | spread %% | load GB/s |\n"
               "|---------|----------|------------|----------|-----------|\n",
               s1, o.chase_cpu, ns_node_of_cpu(o.chase_cpu), o.nload, cpus, s2, seen.name,
               ns_pages_name(o.common.pages), o.sampling.samples, o.sampling.min_time);
        fflush(stdout);
    }

    ns_text csv = {0};
    ns_text_printf(&csv, "traffic,delay,chase_cpu,chase_node,chase_l3_group,load_threads,load_cpus,load_cpu_nodes,"
                         "load_l3_groups,strategy,policy,mem_nodes,weights,page_size,size_bytes,load_bytes,"
                         "latency_ns_median,latency_ns_min,latency_ns_max,spread_pct,samples,loads,load_gb_s,"
                         "elapsed_s,chase_on_cpu_pct,chase_retaken,chase_page_fractions,load_page_fractions,host,"
                         "load_on_cpu_pct\n");
    int seen_cpus[NS_MAX_CPUS];
    char cpus_text[MAX_TEXT], nodes_text[MAX_TEXT], groups_text[MAX_TEXT];
    for (int k = 0; k < o.nkinds; k++) {
        for (int d = 0; d < o.ndelays; d++) {
            long delay = o.delays[d];
            point pt;
            if (delay != IDLE)
                ns_load_run(team, o.kinds[k], delay);
            measure(&o, &p, per_load, team, &pt);
            /* The load threads' least share of the point's time on their CPUs (100 when idle). */
            double load_on_cpu = 100.0;
            if (delay != IDLE) {
                ns_load_pause(team);
                load_on_cpu = 100 * ns_load_least_on_cpu(team);
            }
            if (load_on_cpu < 100 * NS_RETAKE_BELOW)
                ns_warn("a load thread ran only %.0f%% of the time on its CPU at delay %ld: its CPU is shared with "
                        "other work, the load is lighter than asked", load_on_cpu, delay);
            /* Placement per row: the CPUs the chase and every load thread were found on
             * (-1: moved during the point), their nodes and L3 groups. */
            int n = ns_load_cpus_seen(team, seen_cpus);
            if (delay == IDLE)
                memcpy(seen_cpus, o.load_cpus, (size_t)n * sizeof *seen_cpus);
            ns_format_cpu_places(seen_cpus, n, cpus_text, nodes_text, groups_text, MAX_TEXT);
            if (pt.chase_cpu_seen < 0 || (delay != IDLE && memchr(cpus_text, '-', strlen(cpus_text))))
                ns_warn("a thread moved CPU during the point at delay %ld: the CPU columns say -1 for it", delay);
            if (pt.on_cpu_pct < 100 * NS_RETAKE_BELOW)
                ns_warn("the chase ran only %.0f%% of a sample's time at delay %ld, after taking %d samples again: "
                        "its CPU is shared with other work, the latency is inflated", pt.on_cpu_pct, delay, pt.retaken);
            int cpu = pt.chase_cpu_seen;
            ns_text_printf(&csv, "%s,%ld,%d,%d,%d,%d,\"%s\",\"%s\",\"%s\",%s,%s,\"%s\",\"%s\",%s,%llu,%llu,%.3f,%.3f,"
                                 "%.3f,%.2f,%d,%llu,%.4f,%.4f,%.1f,%d,\"%s\",\"%s\",%s,%.1f\n",
                           ns_traffic_name(o.kinds[k]), delay, cpu, cpu < 0 ? -1 : ns_node_of_cpu(cpu),
                           cpu < 0 ? -1 : ns_l3_group_of_cpu(cpu), n, cpus_text, nodes_text, groups_text,
                           o.cpus_given ? "list" : ns_place_strategy_name(o.strategy), seen.name, policy_nodes,
                           weights, ns_pages_name(o.common.pages), (unsigned long long)o.size,
                           (unsigned long long)o.load_size, pt.median_ns, pt.min_ns, pt.max_ns, pt.spread_pct,
                           o.sampling.samples, (unsigned long long)pt.loads, pt.load_gb_s, pt.elapsed_s, pt.on_cpu_pct > 100 ? 100.0 : pt.on_cpu_pct, pt.retaken, chase_fractions,
                           load_fractions, host, load_on_cpu);
            if (o.common.csv)
                ns_csv_write(o.common.csv, &csv); /* after every point: nothing measured is lost */
            if (!o.common.quiet) {
                char dtext[24];
                snprintf(dtext, sizeof dtext, delay == IDLE ? "idle" : "%ld", delay);
                printf("| %-7s | %8s | %10.2f | %8.2f | %9.3f |\n", ns_traffic_name(o.kinds[k]), dtext, pt.median_ns,
                       pt.spread_pct, pt.load_gb_s);
                fflush(stdout);
            }
        }
    }
    chase_sink = p;
    ns_load_stop(team);
    ns_buffer_free(&buf);
    ns_text_free(&csv);
    return 0;
}
