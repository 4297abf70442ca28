/* numa_latency: memory load latency per MPI rank by pointer chasing.
 *
 * For each rank and size: map a buffer (--pages), apply --policy before first touch (or keep
 * the policy numactl set), touch it, link ONE random cycle through all of its 64-byte slots,
 * warm up, then time dependent loads (each address comes from the previous load) until
 * --min-time has passed; repeat --samples times. Reported: median, min and max nanoseconds per
 * load over the samples. From 256 MiB on (where page walks make single samples vary most), when
 * the spread (max - min) / median is above --spread, all samples are taken again, each twice as
 * long, until the spread is met or a sample would exceed --max-time. The samples kept are those
 * of the quietest sample length tried (the least spread: a disturbance only slows samples, so the
 * quietest set is the least disturbed one, and the longest, spanning most of a busy host's slow
 * phases, is often not it); their length and spread are in the CSV, with a warning that lists
 * every length tried when the target was not met. Below 256 MiB the same holds with
 * --spread-small, but the samples are taken again at the same length, as many times as the
 * large sizes may double theirs: a buffer that fits a cache has no page walks to average out,
 * while a burst of other work on the core (or on the core's other hardware thread, which shares
 * its caches) evicts part of it, and refilling a buffer that just fits its cache from the next
 * level shows in the sample, most at a cache's capacity (1 MiB on a core with 1 MiB of L2).
 * The set-up (first touch
 * of the buffer, building the cycle) is timed and reported too. Every row records the CPU the
 * rank ran on, that CPU's node and L3 group, the policy the kernel reports for the buffer and
 * where its pages are (move_pages).
 *
 * Ranks measure concurrently (default; a barrier before every sample) or one after another
 * (--serial). Rank 0 writes the CSV and the table.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "numasweep.h"

#define MAX_TEXT 1024

typedef struct {
    uint64_t *sizes;
    size_t nsizes;
    int serial;
    double min_time;
    double max_time;
    double spread_pct;
    double spread_small_pct;
    int samples;
    uint64_t seed;
    long self_test_slots;
    ns_common_options common;
} options;

/* One measured (rank, size); sent to rank 0 as plain bytes. */
typedef struct {
    int rank;
    int cpu;
    int cpu_node;
    int l3_group;
    uint64_t size_bytes;
    double median_ns, min_ns, max_ns;
    double sample_s;      /* length of each sample kept */
    double spread_pct;    /* 100 * (max - min) / median */
    double first_touch_s; /* populating the buffer's pages */
    double cycle_build_s; /* linking the random cycle */
    double on_cpu_pct;    /* least share of a sample's wall time the rank ran on its CPU */
    int samples;
    int retaken;          /* samples taken again because a rank was off its CPU (NS_RETAKE_BELOW) */
    uint64_t loads;
    char host[64];
    char policy[16];
    char mem_nodes[256];
    char weights[256];
    char page_fractions[MAX_TEXT];
    char placed_nodes[256];
} result;

enum { OPT_SIZE = NS_OPT_KERNEL, OPT_SERIAL, OPT_MIN_TIME, OPT_SAMPLES, OPT_SEED, OPT_SELF_TEST, OPT_MAX_TIME, OPT_SPREAD, OPT_SPREAD_SMALL };

/* Sizes from which the sample length adapts to the spread: DRAM on any current machine. */
#define ADAPT_FROM_BYTES (256ull << 20)

static const struct option long_options[] = {
    NS_COMMON_LONG_OPTIONS,
    {"size", required_argument, 0, OPT_SIZE},
    {"serial", no_argument, 0, OPT_SERIAL},
    {"min-time", required_argument, 0, OPT_MIN_TIME},
    {"max-time", required_argument, 0, OPT_MAX_TIME},
    {"spread", required_argument, 0, OPT_SPREAD},
    {"spread-small", required_argument, 0, OPT_SPREAD_SMALL},
    {"samples", required_argument, 0, OPT_SAMPLES},
    {"seed", required_argument, 0, OPT_SEED},
    {"self-test", required_argument, 0, OPT_SELF_TEST},
    {0, 0, 0, 0},
};

static void usage(void)
{
    printf("Usage: numa_latency [options]   (run under mpirun/srun; a single process works too)\n"
           "Pointer-chase load latency per MPI rank over a range of buffer sizes.\n\n"
           "  --size=LIST       buffer sizes per rank (default 16K-1G); e.g. 1-16384 (MiB, powers of two),\n"
           "                    64K,1M,1G\n"
           "  --serial          ranks measure one after another (default: all at once)\n"
           "  --min-time=SEC    minimum duration of each sample (default 0.2)\n"
           "  --spread=PCT      from 256M on, take the samples again, each twice as long, while\n"
           "                    (max - min) / median is above PCT percent (default 2; 0 = never);\n"
           "                    the samples of the quietest length tried are kept\n"
           "  --spread-small=PCT below 256M, take the samples again at the same length while their\n"
           "                    spread is above PCT percent (default 5; 0 = never), at most as many\n"
           "                    times as --spread may double the length; the quietest set is kept\n"
           "  --max-time=SEC    longest sample the --spread rule may reach (default 1.6)\n"
           "  --samples=N       samples per size (default 5); median, min and max are reported\n"
           "  --seed=N          seed of the random cycle (default 1; each rank and size derive their own)\n"
           "  --self-test=N     build the cycle over N slots, check it visits all N, print the build\n"
           "                    time, and exit (no MPI)\n\n%s",
           ns_common_help());
}

static void *volatile chase_sink;

/* The 1-minute load average from /proc/loadavg as text, "?" when unknown. */
static const char *load_average(void)
{
    static char text[16];
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f || fscanf(f, "%15s", text) != 1)
        snprintf(text, sizeof text, "?");
    if (f)
        fclose(f);
    return text;
}

static int self_test(long nslots, ns_pages pages)
{
    size_t bytes = (size_t)nslots * NS_CHASE_SLOT_BYTES;
    ns_policy inherit = {.kind = NS_POLICY_INHERIT};
    ns_buffer mem;
    ns_buffer_alloc(&mem, bytes, pages, &inherit);
    char *buf = mem.addr;
    unsigned char *seen = calloc((size_t)nslots, 1);
    if (!seen)
        ns_die("--self-test=%ld: cannot allocate %ld bytes", nslots, nslots);
    ns_rng rng;
    ns_rng_seed(&rng, 1);
    /* CPU time too: on a shared machine it shows the cost without the waiting for a CPU. */
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    double touch, link;
    void *start = ns_chase_prepare(buf, bytes, &rng, &touch, &link);
    double build = touch + link;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    double cpu = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    /* Walk the cycle once, checking every step lands on a slot not seen before. */
    size_t visited = 0, bad = 0;
    char *p = start;
    do {
        size_t off = (size_t)(p - buf);
        if (off >= bytes || off % NS_CHASE_SLOT_BYTES || seen[off / NS_CHASE_SLOT_BYTES]) {
            bad = 1;
            break;
        }
        seen[off / NS_CHASE_SLOT_BYTES] = 1;
        visited++;
        p = *(char **)p;
    } while (p != (char *)start && visited <= (size_t)nslots);
    int ok = !bad && visited == (size_t)nslots && p == (char *)start;
    printf("self-test: cycle over %ld slots of %d bytes: visits %zu distinct slots, returns to start: %s\n"
           "self-test: build time %.3f s wall, %.3f s CPU (%.1f ns per slot), touching the buffer included\n"
           "self-test: of which first touch %.3f s, linking the cycle %.3f s\n",
           nslots, NS_CHASE_SLOT_BYTES, visited, ok ? "ok" : "FAILED", build, cpu, build * 1e9 / (double)nslots, touch,
           link);
    ns_buffer_free(&mem);
    free(seen);
    return ok ? 0 : 1;
}

static void parse(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    ns_common_defaults(&o->common);
    o->min_time = 0.2;
    o->max_time = 1.6;
    o->spread_pct = 2.0;
    o->spread_small_pct = 5.0;
    o->samples = 5;
    o->seed = 1;
    const char *sizes = "16K-1G";
    int c;
    while ((c = ns_getopt(argc, argv, long_options)) != -1) {
        if (ns_common_option(&o->common, c, optarg))
            continue;
        switch (c) {
        case OPT_SIZE: sizes = optarg; break;
        case OPT_SERIAL: o->serial = 1; break;
        case OPT_MIN_TIME: o->min_time = ns_double_arg("--min-time", optarg, 1e-4, 3600); break;
        case OPT_MAX_TIME: o->max_time = ns_double_arg("--max-time", optarg, 1e-4, 3600); break;
        case OPT_SPREAD:
            o->spread_pct = strcmp(optarg, "0") ? ns_double_arg("--spread", optarg, 0.01, 1000) : 0;
            break;
        case OPT_SPREAD_SMALL:
            o->spread_small_pct = strcmp(optarg, "0") ? ns_double_arg("--spread-small", optarg, 0.01, 1000) : 0;
            break;
        case OPT_SAMPLES: o->samples = (int)ns_int_arg("--samples", optarg, 1, 1000); break;
        case OPT_SEED: o->seed = (uint64_t)ns_int_arg("--seed", optarg, 0, 1L << 62); break;
        case OPT_SELF_TEST: o->self_test_slots = ns_int_arg("--self-test", optarg, 2, UINT32_MAX); break;
        default: ns_die("unhandled option; see --help");
        }
    }
    ns_no_positional(argc, argv);
    if (o->common.help || o->common.version)
        return;
    o->nsizes = ns_sizes_arg("--size", sizes, &o->sizes);
    char note[160];
    ns_size_unit_note(sizes, note, sizeof note);
    for (size_t i = 0; i < o->nsizes; i++) {
        char s[32];
        ns_format_size(o->sizes[i], s, sizeof s);
        if (o->sizes[i] < 2 * NS_CHASE_SLOT_BYTES)
            ns_die("--size: %s is below two %d-byte slots: use at least 128 bytes", s, NS_CHASE_SLOT_BYTES);
        if (o->sizes[i] / NS_CHASE_SLOT_BYTES > UINT32_MAX)
            ns_die("--size: %s has more than 2^32 slots: use at most 256G%s", s, note);
    }
    ns_common_finish(&o->common);
}

/* Rank of this process before MPI_Init, from the launcher's environment, so that argument
 * errors are printed once and not by every rank. */
static int launcher_rank(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v);
    }
    return 0;
}

static void finalize_on_error(void) { MPI_Finalize(); }
/* A failure of one rank mid-run: the others wait in a collective, so all must be stopped. */
static void abort_on_error(void) { MPI_Abort(MPI_COMM_WORLD, NS_EXIT_USAGE); }

/* Maps the buffer (the policy applied before first touch), touches it and links the random
 * cycle, both timed, and starts *r with them, the host, the policy the kernel reports for the
 * buffer and where its pages are. Returns the cycle's start. */
static void *set_up_buffer(const options *o, int rank, uint64_t size, ns_buffer *buf, result *r)
{
    ns_buffer_alloc(buf, size, o->common.pages, &o->common.policy);
    ns_rng rng;
    ns_rng_seed(&rng, o->seed * 0x100000001b3ull + (uint64_t)rank * 1000003u + size);
    double first_touch, cycle_build;
    void *start = ns_chase_prepare(buf->addr, size, &rng, &first_touch, &cycle_build);
    ns_buffer_check_thp(buf);

    ns_placement placement;
    ns_placement_clear(&placement);
    ns_placement_query(&placement, buf->addr, size, ns_pages_bytes(o->common.pages));
    ns_observed_policy seen;
    ns_policy_observe(buf->addr, &seen);

    memset(r, 0, sizeof *r);
    r->rank = rank;
    r->size_bytes = size;
    r->first_touch_s = first_touch;
    r->cycle_build_s = cycle_build;
    ns_hostname(r->host, sizeof r->host);
    snprintf(r->policy, sizeof r->policy, "%s", seen.name);
    ns_format_int_list(seen.nodes, seen.nnodes, r->mem_nodes, sizeof r->mem_nodes);
    ns_format_int_list(seen.weights, seen.nweights, r->weights, sizeof r->weights);
    ns_placement_format(&placement, r->page_fractions, sizeof r->page_fractions);
    int placed[NS_MAX_NODES];
    int nplaced = ns_placement_nodes(&placement, placed, NS_MAX_NODES);
    ns_format_int_list(placed, nplaced, r->placed_nodes, sizeof r->placed_nodes);
    return start;
}

/* A rank's chase through one buffer while it takes its samples. */
typedef struct {
    void *p;               /* where the chase is */
    double per_load;       /* seconds per load: from the warm-up, then from the last sample */
    int retakes_left;      /* for the size, over every sample length tried */
    MPI_Comm barrier_comm; /* the ranks measuring together; MPI_COMM_NULL when alone */
} chase;

/* --samples samples of sample_s seconds each, in ns per load into ns_per_load, their loads in
 * r->loads and the samples taken again counted in r->retaken. Returns the least share of a
 * sample's wall time the rank ran on its CPU. */
static double take_samples(const options *o, chase *c, double sample_s, double *ns_per_load, result *r)
{
    void *p = c->p;
    double least_on_cpu = 1.0;
    r->loads = 0;
    for (int s = 0; s < o->samples; s++) {
        if (c->barrier_comm != MPI_COMM_NULL)
            MPI_Barrier(c->barrier_comm);
        uint64_t batch = (uint64_t)(sample_s / c->per_load / 4) + 16;
        uint64_t loads = 0;
        double cpu0 = ns_thread_cpu_seconds();
        double t0 = ns_seconds(), elapsed;
        do {
            p = ns_chase(p, batch);
            loads += batch;
            elapsed = ns_seconds() - t0;
        } while (elapsed < sample_s);
        double on_cpu = (ns_thread_cpu_seconds() - cpu0) / elapsed;
        /* A sample the rank was partly off its CPU for timed the other work too: it is taken
         * again, up to as many times as there are samples. The rule looks at what the CPU did
         * (CPU time against wall time), never at the latency measured. Ranks measuring at once
         * retake together. */
        int off = on_cpu < NS_RETAKE_BELOW && c->retakes_left > 0, any_off = off;
        if (c->barrier_comm != MPI_COMM_NULL)
            MPI_Allreduce(&off, &any_off, 1, MPI_INT, MPI_MAX, c->barrier_comm);
        if (any_off) {
            c->retakes_left--;
            r->retaken++;
            s--;
            continue;
        }
        least_on_cpu = on_cpu < least_on_cpu ? on_cpu : least_on_cpu;
        ns_per_load[s] = elapsed * 1e9 / (double)loads;
        c->per_load = elapsed / (double)loads;
        r->loads += loads;
    }
    c->p = p;
    return least_on_cpu;
}

/* The warnings on the samples kept in r: their spread above the target, the rank off its CPU. */
static void warn_about_samples(const result *r, double target, const char *tried_text, double least_on_cpu)
{
    int large = r->size_bytes >= ADAPT_FROM_BYTES;
    char s[32];
    ns_format_size(r->size_bytes, s, sizeof s);
    if (target > 0 && r->spread_pct > target)
        ns_warn("rank %d at %s: samples spread %.1f%% with %.2f s each, above the --spread%s target of %.1f%% "
                "(load average %s): other work on this machine or its host; kept the quietest %s (the least "
                "spread over the ranks measuring together) of those tried (this rank: %s); the median still stands",
                r->rank, s, r->spread_pct, r->sample_s, large ? "" : "-small", target, load_average(),
                large ? "sample length" : "set of samples", tried_text);
    if (least_on_cpu < NS_RETAKE_BELOW)
        ns_warn("rank %d ran only %.0f%% of a sample's time at %s, after taking %d samples again: its CPU is "
                "shared with other work, latencies are inflated", r->rank, 100 * least_on_cpu, s, r->retaken);
}

/* The samples of r's size, taken again while their spread is above the target; the quietest set
 * tried is kept in r. */
static void take_quietest_samples(const options *o, chase *c, result *r)
{
    double *ns_per_load = malloc((size_t)o->samples * sizeof *ns_per_load);
    if (!ns_per_load)
        ns_die("out of memory");
    double sample_s = o->min_time;
    /* From 256 MiB each try doubles the sample length up to --max-time; below, each try keeps
     * it, and there are as many tries as the doubling allows. */
    int large = r->size_bytes >= ADAPT_FROM_BYTES;
    double target = large ? o->spread_pct : o->spread_small_pct;
    int adapt = target > 0, tries = 1;
    for (double s = o->min_time; 2 * s <= o->max_time; s *= 2)
        tries++;
    /* The quietest sample length so far: its figures, its spread over all ranks (the one the
     * ranks decide on together, so they keep the same samples), and every length's in words. */
    struct {
        double median_ns, min_ns, max_ns, sample_s, spread, worst, least_on_cpu;
        uint64_t loads;
    } kept = {0};
    int tried = 0;
    char tried_text[MAX_TEXT] = "";
    for (;;) {
        double least_on_cpu = take_samples(o, c, sample_s, ns_per_load, r);
        ns_summarize(ns_per_load, o->samples, &r->median_ns, &r->min_ns, &r->max_ns);
        double spread = 100 * (r->max_ns - r->min_ns) / r->median_ns;
        /* Ranks measuring at once take their samples together: they decide together. */
        double worst = spread;
        if (c->barrier_comm != MPI_COMM_NULL)
            MPI_Allreduce(&spread, &worst, 1, MPI_DOUBLE, MPI_MAX, c->barrier_comm);
        if (tried == 0 || worst < kept.worst) {
            kept.median_ns = r->median_ns, kept.min_ns = r->min_ns, kept.max_ns = r->max_ns;
            kept.sample_s = sample_s, kept.spread = spread, kept.worst = worst;
            kept.least_on_cpu = least_on_cpu, kept.loads = r->loads;
        }
        size_t used = strlen(tried_text);
        snprintf(tried_text + used, sizeof tried_text - used, "%s%.1f%% at %.2f s", tried ? ", " : "", spread, sample_s);
        tried++;
        if (!adapt || worst <= target || tried >= tries)
            break;
        if (large)
            sample_s *= 2;
    }
    r->median_ns = kept.median_ns, r->min_ns = kept.min_ns, r->max_ns = kept.max_ns;
    r->loads = kept.loads;
    r->sample_s = kept.sample_s;
    r->spread_pct = kept.spread;
    r->on_cpu_pct = 100 * kept.least_on_cpu;
    free(ns_per_load);
    warn_about_samples(r, target, tried_text, kept.least_on_cpu);
}

static void measure(const options *o, int rank, uint64_t size, MPI_Comm barrier_comm, result *r)
{
    ns_buffer buf;
    chase c = {.retakes_left = o->samples, .barrier_comm = barrier_comm};
    c.p = set_up_buffer(o, rank, size, &buf, r);
    /* Warm-up: up to one pass over the cycle (at most ~min-time), which also calibrates the
     * load count of a sample. */
    c.per_load = ns_chase_warm(&c.p, size / NS_CHASE_SLOT_BYTES, o->min_time);

    r->cpu = ns_current_cpu();
    take_quietest_samples(o, &c, r);
    chase_sink = c.p;
    int cpu_after = ns_current_cpu();
    if (cpu_after != r->cpu) {
        char s[32];
        ns_format_size(size, s, sizeof s);
        ns_warn("rank %d moved from CPU %d to CPU %d while measuring %s: bind ranks to one CPU each", rank, r->cpu,
                cpu_after, s);
    }
    r->samples = o->samples;
    r->cpu_node = ns_node_of_cpu(r->cpu);
    r->l3_group = ns_l3_group_of_cpu(r->cpu);
    ns_buffer_free(&buf);
}

static void csv_row(ns_text *csv, const result *r, int ranks, const options *o)
{
    ns_text_printf(csv, "%d,%d,%s,%s,%d,%d,%d,%s,\"%s\",\"%s\",%s,%llu,%.3f,%.3f,%.3f,%d,%llu,\"%s\",%.3f,%.2f,%.4f,%.4f,%.1f,%d\n",
                   r->rank, ranks, o->serial ? "serial" : "concurrent", r->host, r->cpu, r->cpu_node, r->l3_group,
                   r->policy, r->mem_nodes, r->weights, ns_pages_name(o->common.pages),
                   (unsigned long long)r->size_bytes, r->median_ns, r->min_ns, r->max_ns, r->samples,
                   (unsigned long long)r->loads, r->page_fractions, r->sample_s, r->spread_pct, r->first_touch_s,
                   r->cycle_build_s, r->on_cpu_pct, r->retaken);
}

/* One line per finished size, so that `tail -f` on a job's log shows how far the sweep is. */
static void progress_line(const result *size_results, int ranks, size_t i, size_t nsizes, double started)
{
    double lo = size_results[0].median_ns, hi = lo;
    for (int rk = 1; rk < ranks; rk++) {
        lo = size_results[rk].median_ns < lo ? size_results[rk].median_ns : lo;
        hi = size_results[rk].median_ns > hi ? size_results[rk].median_ns : hi;
    }
    char s[32];
    ns_format_size(size_results[0].size_bytes, s, sizeof s);
    if (ranks == 1)
        printf("  size %zu of %zu done: %s, %.2f ns (%.1f s so far)\n", i + 1, nsizes, s, lo, ns_seconds() - started);
    else
        printf("  size %zu of %zu done: %s, %.2f to %.2f ns over %d ranks (%.1f s so far)\n", i + 1, nsizes, s, lo, hi,
               ranks, ns_seconds() - started);
}

static void print_table(const options *o, const result *all, int ranks)
{
    /* all[size_index * ranks + rank] */
    int width = 9;
    printf("\n");
    printf("| Rank | Host         | CPU  | CPU NUMA | L3 | Policy     | Memory NUMA |");
    for (size_t i = 0; i < o->nsizes; i++) {
        char s[32];
        ns_format_size(o->sizes[i], s, sizeof s);
        printf(" %*s |", width - 2, s);
    }
    printf("\n|------|--------------|------|----------|----|------------|-------------|");
    for (size_t i = 0; i < o->nsizes; i++) {
        for (int k = 0; k < width; k++)
            putchar('-');
        putchar('|');
    }
    printf("\n");
    for (int rk = 0; rk < ranks; rk++) {
        const result *first = &all[rk];
        /* Memory NUMA: the nodes holding pages of the largest buffer. */
        const result *last = &all[(o->nsizes - 1) * (size_t)ranks + (size_t)rk];
        printf("| %04d | %-12.12s | %4d | %8d | %2d | %-10s | %-11.11s |", rk, first->host, first->cpu,
               first->cpu_node, first->l3_group, first->policy, last->placed_nodes);
        for (size_t i = 0; i < o->nsizes; i++)
            printf(" %*.2f |", width - 2, all[i * (size_t)ranks + (size_t)rk].median_ns);
        printf("\n");
    }
    printf("Latency: median ns per dependent load over %d samples of >= %.3g s each", o->samples, o->min_time);
    if (o->spread_pct > 0)
        printf(" (from 256M on, up to %.3g s while the spread is above %.3g%%)", o->max_time, o->spread_pct);
    if (o->spread_small_pct > 0)
        printf("; below 256M taken again while it is above %.3g%%", o->spread_small_pct);
    printf(".\n");
}

/* The ranks of this host whose buffers may land on a node this rank's may land on (its own
 * included): those whose policy's nodes meet its own. Ranks each bound to their own node take
 * nothing from each other's free memory. */
static int ranks_sharing_nodes(const options *o, MPI_Comm local, int local_ranks)
{
    unsigned char mine[NS_MAX_NODES] = {0};
    int nodes[NS_MAX_NODES];
    int n = ns_policy_target_nodes(&o->common.policy, nodes, NS_MAX_NODES);
    for (int i = 0; i < n; i++)
        if (nodes[i] >= 0 && nodes[i] < NS_MAX_NODES)
            mine[nodes[i]] = 1;
    unsigned char *all = malloc((size_t)local_ranks * NS_MAX_NODES);
    if (!all)
        ns_die("out of memory");
    MPI_Allgather(mine, NS_MAX_NODES, MPI_UNSIGNED_CHAR, all, NS_MAX_NODES, MPI_UNSIGNED_CHAR, local);
    int sharing = 0;
    for (int r = 0; r < local_ranks; r++)
        for (int k = 0; k < NS_MAX_NODES; k++)
            if (mine[k] && all[(size_t)r * NS_MAX_NODES + (size_t)k]) {
                sharing++;
                break;
            }
    free(all);
    return sharing;
}

/* Refuse before allocating anything: every rank checks its largest size (with the ranks of
 * its host that hold buffers on its nodes at the same time); the lowest failing rank explains. */
static void refuse_without_memory(const options *o, int rank, int ranks, MPI_Comm local, int local_ranks)
{
    uint64_t largest = 0;
    for (size_t i = 0; i < o->nsizes; i++)
        largest = o->sizes[i] > largest ? o->sizes[i] : largest;
    int sharing = ranks_sharing_nodes(o, local, local_ranks);
    int holders = o->serial ? 1 : sharing;
    char what[96], want[32], msg[1024];
    ns_format_size(largest, want, sizeof want);
    if (holders > 1)
        snprintf(what, sizeof what, "size %s for each of %d ranks on these nodes", want, holders);
    else
        snprintf(what, sizeof what, "size %s", want);
    /* The chase's scratch space (4 bytes per 64-byte slot) is allocated alongside the buffer, on
     * ordinary pages: it must not count against the reserved huge pages of --pages=2m|1g. */
    int hugetlb = o->common.pages == NS_PAGES_2M || o->common.pages == NS_PAGES_1G;
    uint64_t need = (largest + (hugetlb ? 0 : largest / 16)) * (uint64_t)holders;
    int problem = ns_free_memory_problem(&o->common.policy, o->common.pages, need, what, msg, sizeof msg);
    int failing = problem ? rank : ranks, first_failing;
    MPI_Allreduce(&failing, &first_failing, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first_failing < ranks) {
        ns_set_quiet_errors(rank != first_failing);
        ns_die("rank %d: %s", first_failing, problem ? msg : "");
    }
    ns_set_quiet_errors(0);
}

/* What is measured and how, before the first size. */
static void print_header(const options *o, int ranks)
{
    int nodes[NS_MAX_NODES];
    int nnodes = ns_online_nodes(nodes, NS_MAX_NODES);
    printf("numa_latency: pointer chase, one random cycle over %d-byte slots, dependent loads\n"
           "  ranks %d (%s), samples %d of >= %.3g s each, pages %s, policy %s, seed %llu\n"
           "  nodes online %d, timer resolution %.0f ns, placement from move_pages on <= %d pages per buffer\n",
           NS_CHASE_SLOT_BYTES, ranks, o->serial ? "serial" : "concurrent", o->samples, o->min_time,
           ns_pages_name(o->common.pages), ns_policy_kind_name(o->common.policy.kind),
           (unsigned long long)o->seed, nnodes, ns_timer_resolution() * 1e9, NS_PLACEMENT_MAX_SAMPLES);
    fflush(stdout);
}

/* A barrier the ranks wait at asleep, testing it each millisecond: MPI_Barrier's waiting ranks
 * spin on their CPUs (Open MPI polls), so in serial mode every CPU but the measuring rank's would
 * be busy, and whatever else must run on the machine (the launcher, the workflow) would take the
 * measuring rank's CPU. */
static void sleeping_barrier(MPI_Comm comm)
{
    MPI_Request request;
    MPI_Ibarrier(comm, &request);
    for (int done = 0;;) {
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 1000000}, NULL);
    }
}

/* One size on every rank: all at once, a barrier before each sample, or (--serial) one rank
 * after another, the others asleep. */
static void measure_size(const options *o, int rank, int ranks, uint64_t size, result *mine)
{
    if (o->serial) {
        for (int turn = 0; turn < ranks; turn++) {
            sleeping_barrier(MPI_COMM_WORLD);
            if (turn == rank)
                measure(o, rank, size, MPI_COMM_NULL, mine);
        }
        sleeping_barrier(MPI_COMM_WORLD);   /* the last turn's rank: the others wait asleep */
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        measure(o, rank, size, MPI_COMM_WORLD, mine);
    }
}

int main(int argc, char **argv)
{
    ns_set_program("numa_latency");
    ns_set_quiet_errors(launcher_rank() != 0);
    options o;
    parse(argc, argv, &o);
    ns_common_info(&o.common, usage, NS_BUILD_COMMIT, NS_BUILD_FLAGS);
    if (o.self_test_slots) {
        free(o.sizes);
        return self_test(o.self_test_slots, o.common.pages);
    }

    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    int local_rank, local_ranks;
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_size(local, &local_ranks);
    ns_set_quiet_errors(rank != 0);
    ns_set_exit_hook(finalize_on_error);

    refuse_without_memory(&o, rank, ranks, local, local_ranks);
    if (ranks > 1)
        ns_set_exit_hook(abort_on_error);

    /* One writer of the weighted-interleave weights per host. */
    if (local_rank == 0)
        ns_policy_apply_weights(&o.common.policy);
    MPI_Barrier(MPI_COMM_WORLD);

    int cpus[NS_MAX_CPUS];
    int ncpus = ns_affinity_cpus(cpus, NS_MAX_CPUS);
    if (ncpus > 1) {
        char list[256];
        ns_format_cpulist(cpus, ncpus, list, sizeof list);
        ns_warn("rank %d may run on CPUs %s: bind each rank to one CPU (mpirun --bind-to core, srun "
                "--cpu-bind, numactl --physcpubind) so the cpu column stays true",
                rank, list);
    }

    if (rank == 0 && !o.common.quiet)
        print_header(&o, ranks);

    double started = ns_seconds();
    result *all = rank == 0 ? calloc(o.nsizes * (size_t)ranks, sizeof *all) : NULL;
    if (rank == 0 && !all)
        ns_die("out of memory");
    ns_text csv = {0};
    if (rank == 0)
        ns_text_printf(&csv, "rank,ranks,mode,host,cpu,cpu_node,l3_group,policy,mem_nodes,weights,page_size,"
                             "size_bytes,latency_ns_median,latency_ns_min,latency_ns_max,samples,loads,"
                             "page_fractions,sample_s,spread_pct,first_touch_s,cycle_build_s,on_cpu_pct,retaken\n");
    for (size_t i = 0; i < o.nsizes; i++) {
        result mine;
        measure_size(&o, rank, ranks, o.sizes[i], &mine);
        MPI_Gather(&mine, sizeof mine, MPI_BYTE, rank == 0 ? &all[i * (size_t)ranks] : NULL, sizeof mine, MPI_BYTE,
                   0, MPI_COMM_WORLD);
        if (rank == 0) {
            for (int rk = 0; rk < ranks; rk++)
                csv_row(&csv, &all[i * (size_t)ranks + (size_t)rk], ranks, &o);
            if (o.common.csv)
                ns_csv_write(o.common.csv, &csv); /* after every size: nothing measured is lost */
            if (!o.common.quiet)
                progress_line(&all[i * (size_t)ranks], ranks, i, o.nsizes, started);
        }
    }
    if (rank == 0 && !o.common.quiet)
        print_table(&o, all, ranks);
    free(all);
    free(o.sizes);
    ns_text_free(&csv);
    MPI_Comm_free(&local);
    ns_set_exit_hook(NULL);
    MPI_Finalize();
    return 0;
}
