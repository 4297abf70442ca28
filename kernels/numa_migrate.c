/* numa_migrate: the time and throughput of moving a buffer's pages from node SRC to node DST
 * and back, with move_pages(2) in batches (by one or several threads), mbind(2) with
 * MPOL_BIND + MPOL_MF_MOVE on the range, or migrate_pages(2) (every page of the process on
 * SRC). Each repetition maps the buffer bound to SRC, touches every page, checks that every page
 * is on SRC, then times the move to DST, checks every page again (move_pages with nodes = NULL)
 * and reads the kernel's migration counters (/proc/vmstat) before and after; then the same from
 * DST back to SRC as a row of its own. GB/s = buffer bytes / seconds / 1e9. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "numasweep.h"

#define MPOL_MF_MOVE (1 << 1)
#define MASK_LONGS (NS_MAX_NODES / (8 * sizeof(unsigned long)))
#define MASK_MAXNODE (NS_MAX_NODES + 1) /* one past the last bit the kernel reads */

enum { M_MOVE_PAGES, M_MBIND, M_MIGRATE_PAGES, NMETHODS };
static const char *method_names[NMETHODS] = {"move_pages", "mbind", "migrate_pages"};
#define METHOD_HINT "move_pages, mbind, migrate_pages (a comma list) or all"

typedef struct {
    int src, dst; /* -1: not given */
    int allow_same;
    uint64_t *sizes;
    size_t nsizes;
    const char *size_text;
    int methods[NMETHODS];
    long batch;
    int threads;
    int ntimes;
    ns_common_options common;
} options;

enum { OPT_SRC = NS_OPT_KERNEL, OPT_DST, OPT_ALLOW_SAME, OPT_SIZE, OPT_METHOD, OPT_BATCH, OPT_THREADS, OPT_NTIMES };

static const struct option long_options[] = {
    NS_COMMON_LONG_OPTIONS,
    NS_ARG("src", OPT_SRC),
    NS_ARG("dst", OPT_DST),
    NS_FLAG("allow-same", OPT_ALLOW_SAME),
    NS_ARG("size", OPT_SIZE),
    NS_ARG("method", OPT_METHOD),
    NS_ARG("batch", OPT_BATCH),
    NS_ARG("threads", OPT_THREADS),
    NS_ARG("ntimes", OPT_NTIMES),
    NS_OPTIONS_END,
};

static void usage(void)
{
    printf("Usage: numa_migrate --src=A --dst=B [options]\n"
           "Time and throughput of moving a buffer's pages from node A to node B and back.\n\n"
           "  --src=A --dst=B     the nodes (both with memory)\n"
           "  --allow-same        accept A = B: times the calls when nothing moves\n"
           "  --size=LIST         buffer sizes (default 256M), a multiple of the page size\n"
           "  --method=LIST       move_pages, mbind, migrate_pages (comma list) or all (default)\n"
           "  --batch=PAGES       pages per move_pages call (default 512)\n"
           "  --threads=N         move_pages: threads, each moving its share (default 1); the\n"
           "                      other methods are one call by one thread\n"
           "  --ntimes=N          repetitions (default 3), each a fresh buffer\n\n%s"
           "(--policy, --mem-nodes and --weights do not apply: --src and --dst place the buffer.)\n",
           ns_common_help());
}

static void parse(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    ns_common_defaults(&o->common);
    o->src = o->dst = -1;
    o->size_text = "256M";
    o->batch = 512;
    o->threads = 1;
    o->ntimes = 3;
    for (int m = 0; m < NMETHODS; m++)
        o->methods[m] = 1;
    int c;
    while ((c = ns_getopt(argc, argv, long_options)) != -1) {
        if (ns_common_option(&o->common, c, optarg))
            continue;
        switch (c) {
        case OPT_SRC: o->src = ns_node_arg("--src", optarg, o->common.check_args); break;
        case OPT_DST: o->dst = ns_node_arg("--dst", optarg, o->common.check_args); break;
        case OPT_ALLOW_SAME: o->allow_same = 1; break;
        case OPT_SIZE: o->size_text = optarg; break;
        case OPT_METHOD:
            if (strcmp(optarg, "all"))
                ns_names_arg("--method", optarg, method_names, NMETHODS, o->methods, METHOD_HINT);
            else
                for (int m = 0; m < NMETHODS; m++)
                    o->methods[m] = 1;
            break;
        case OPT_BATCH: o->batch = ns_int_arg("--batch", optarg, 1, 1L << 24); break;
        case OPT_THREADS: o->threads = (int)ns_int_arg("--threads", optarg, 1, NS_MAX_CPUS); break;
        case OPT_NTIMES: o->ntimes = (int)ns_int_arg("--ntimes", optarg, 1, 100000); break;
        default: ns_die("unhandled option; see --help");
        }
    }
    ns_no_positional(argc, argv);
    if (o->common.help || o->common.version)
        return;
    o->nsizes = ns_sizes_arg("--size", o->size_text, &o->sizes);
    size_t page = o->common.pages == NS_PAGES_THP ? 2ul << 20 : ns_pages_bytes(o->common.pages);
    for (size_t i = 0; i < o->nsizes; i++)
        if (o->sizes[i] % page) {
            char have[32], unit[32];
            ns_format_size(o->sizes[i], have, sizeof have);
            ns_format_size(page, unit, sizeof unit);
            ns_die("--size: %s is not a whole number of the %s pages of --pages=%s: give a multiple of %s", have,
                   unit, ns_pages_name(o->common.pages), unit);
        }
    if (o->common.policy.kind != NS_POLICY_INHERIT || o->common.mem_nodes_given || o->common.weights_given)
        ns_die("--policy, --mem-nodes and --weights do not apply to numa_migrate: --src and --dst place the buffer");
    if (o->src < 0 || o->dst < 0)
        ns_die("give the nodes to move between: --src=A --dst=B");
    if (o->src == o->dst && !o->allow_same) {
        int nodes[NS_MAX_NODES];
        if (!o->common.check_args && ns_online_nodes(nodes, NS_MAX_NODES) == 1)
            ns_die("this machine has one NUMA node: moving pages needs a second node with memory (a NUMA machine, "
                   "or the four-node guest of tests/numa_vm); --allow-same times the calls when nothing moves");
        ns_die("--src and --dst are both node %d: give two different nodes, or --allow-same to time the calls "
               "when nothing moves", o->src);
    }
    ns_common_finish(&o->common);
}

/* ---- the kernel's migration counters ---- */

#define MAX_COUNTERS 128
typedef struct {
    int n;
    char name[MAX_COUNTERS][48];
    long long value[MAX_COUNTERS];
} vmstat;

static const char *counter_prefixes[] = {"pgmigrate", "numa_", "pgpromote", "pgdemote", "thp_migration"};
/* Always in the CSV, as columns of their own (-1 where the kernel lacks the counter). */
static const char *main_counters[] = {"numa_pages_migrated", "pgmigrate_success", "pgmigrate_fail"};
#define NMAIN 3

/* The counters of /proc/vmstat whose names start with one of counter_prefixes; n = 0 if unreadable. */
static void vmstat_read(vmstat *v)
{
    v->n = 0;
    FILE *f = fopen("/proc/vmstat", "r");
    if (!f)
        return;
    char name[64];
    long long value;
    while (v->n < MAX_COUNTERS && fscanf(f, "%63s %lld", name, &value) == 2)
        for (size_t p = 0; p < sizeof counter_prefixes / sizeof *counter_prefixes; p++)
            if (!strncmp(name, counter_prefixes[p], strlen(counter_prefixes[p])) && strlen(name) < 48) {
                strcpy(v->name[v->n], name);
                v->value[v->n++] = value;
                break;
            }
    fclose(f);
}

/* after - before of one counter; -1 when either reading lacks it. */
static long long vmstat_delta(const vmstat *before, const vmstat *after, const char *name)
{
    long long b = -1, a = -1;
    for (int i = 0; i < before->n; i++)
        if (!strcmp(before->name[i], name))
            b = before->value[i];
    for (int i = 0; i < after->n; i++)
        if (!strcmp(after->name[i], name))
            a = after->value[i];
    return a < 0 || b < 0 ? -1 : a - b;
}

/* "name:delta,..." of every counter that changed. */
static void vmstat_format_deltas(const vmstat *before, const vmstat *after, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < after->n; i++) {
        long long d = vmstat_delta(before, after, after->name[i]);
        if (d <= 0)
            continue;
        int w = snprintf(buf + used, len - used, "%s%s:%lld", used ? "," : "", after->name[i], d);
        if (w < 0 || (size_t)w >= len - used)
            return;
        used += (size_t)w;
    }
}

/* ---- pages ---- */

/* The buffer as a list of pages: `count` addresses `step` bytes apart. */
typedef struct {
    void **addr;
    int *status;
    int *nodes;
    uint64_t count;
} page_list;

static void page_list_init(page_list *l, char *base, uint64_t bytes, size_t step)
{
    l->count = bytes / step;
    l->addr = malloc(l->count * sizeof *l->addr);
    l->status = malloc(l->count * sizeof *l->status);
    l->nodes = malloc(l->count * sizeof *l->nodes);
    if (!l->addr || !l->status || !l->nodes)
        ns_die("cannot allocate the page lists of %llu pages: use a smaller --size", (unsigned long long)l->count);
    for (uint64_t i = 0; i < l->count; i++)
        l->addr[i] = base + i * step;
}

static void page_list_free(page_list *l)
{
    free(l->addr);
    free(l->status);
    free(l->nodes);
}

typedef struct {
    uint64_t on_target, elsewhere, failed;
} verdict;

/* Where every page is (move_pages with nodes = NULL): on `target`, present on another node, or
 * not answerable (a negative status: not present, or an error). */
static void verify(page_list *l, int target, verdict *v)
{
    memset(v, 0, sizeof *v);
    if (syscall(SYS_move_pages, 0, (unsigned long)l->count, l->addr, NULL, l->status, 0)) {
        v->failed = l->count;
        return;
    }
    for (uint64_t i = 0; i < l->count; i++) {
        if (l->status[i] == target)
            v->on_target++;
        else if (l->status[i] >= 0)
            v->elsewhere++;
        else
            v->failed++;
    }
}

/* ---- the moves ---- */

typedef struct {
    page_list *moves;
    uint64_t lo, hi;
    long batch;
    pthread_barrier_t *start;
    int error; /* errno of the first failed call, 0 if none */
    double on_cpu;
} mover;

static void *move_share(void *arg)
{
    mover *w = arg;
    pthread_barrier_wait(w->start);
    ns_oncpu_mark mark;
    ns_oncpu_begin(&mark);
    page_list *l = w->moves;
    for (uint64_t i = w->lo; i < w->hi; i += (uint64_t)w->batch) {
        uint64_t n = w->hi - i < (uint64_t)w->batch ? w->hi - i : (uint64_t)w->batch;
        if (syscall(SYS_move_pages, 0, (unsigned long)n, l->addr + i, l->nodes + i, l->status + i, MPOL_MF_MOVE) < 0 &&
            !w->error)
            w->error = errno;
    }
    w->on_cpu = ns_oncpu_share(&mark);
    return NULL;
}

typedef struct {
    double seconds, on_cpu;
    int error;
} move_result;

static void node_mask(unsigned long *mask, int node)
{
    memset(mask, 0, MASK_LONGS * sizeof *mask);
    mask[node / (8 * sizeof *mask)] = 1ul << (node % (8 * sizeof *mask));
}

/* One timed move of the buffer from `from` to `to`. */
static void move(const options *o, int method, char *base, uint64_t bytes, page_list *moves, int from, int to,
                 move_result *r)
{
    unsigned long from_mask[MASK_LONGS], to_mask[MASK_LONGS];
    node_mask(from_mask, from);
    node_mask(to_mask, to);
    r->error = 0;
    if (method == M_MOVE_PAGES) {
        for (uint64_t i = 0; i < moves->count; i++)
            moves->nodes[i] = to;
        int nt = o->threads;
        mover *w = calloc((size_t)nt, sizeof *w);
        pthread_t *tid = malloc((size_t)nt * sizeof *tid);
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, (unsigned)nt + 1);
        for (int t = 0; t < nt; t++) {
            w[t] = (mover){.moves = moves, .lo = moves->count * (uint64_t)t / (uint64_t)nt,
                           .hi = moves->count * (uint64_t)(t + 1) / (uint64_t)nt, .batch = o->batch, .start = &start};
            if (pthread_create(&tid[t], NULL, move_share, &w[t]))
                ns_die("cannot start thread %d of %d: use fewer --threads", t + 1, nt);
        }
        pthread_barrier_wait(&start);
        double t0 = ns_seconds();
        for (int t = 0; t < nt; t++)
            pthread_join(tid[t], NULL);
        r->seconds = ns_seconds() - t0;
        r->on_cpu = 1.0;
        for (int t = 0; t < nt; t++) {
            r->on_cpu = w[t].on_cpu < r->on_cpu ? w[t].on_cpu : r->on_cpu;
            r->error = r->error ? r->error : w[t].error;
        }
        pthread_barrier_destroy(&start);
        free(tid);
        free(w);
        return;
    }
    ns_oncpu_mark mark;
    ns_oncpu_begin(&mark);
    double t0 = ns_seconds();
    long rc = method == M_MBIND
                  ? syscall(SYS_mbind, base, (unsigned long)bytes, NS_MPOL_BIND, to_mask, MASK_MAXNODE, MPOL_MF_MOVE)
                  : syscall(SYS_migrate_pages, 0, MASK_MAXNODE, from_mask, to_mask);
    r->seconds = ns_seconds() - t0;
    r->on_cpu = ns_oncpu_share(&mark);
    if (rc < 0)
        r->error = errno;
}

/* ---- a row ---- */

typedef struct {
    const char *direction;
    int src, dst, method, threads, repetition;
    uint64_t bytes;
    move_result move;
    verdict after;
    vmstat before_counters, after_counters;
    char fractions[4096];
} row;

static void emit(const options *o, const row *r, size_t page_bytes, ns_text *csv, const char *host)
{
    double gb_s = (double)r->bytes / r->move.seconds / 1e9;
    uint64_t total = r->after.on_target + r->after.elsewhere + r->after.failed;
    long long main_delta[NMAIN];
    for (int i = 0; i < NMAIN; i++)
        main_delta[i] = vmstat_delta(&r->before_counters, &r->after_counters, main_counters[i]);
    char deltas[4096];
    vmstat_format_deltas(&r->before_counters, &r->after_counters, deltas, sizeof deltas);
    /* gb_s with six decimals: a slow move (0.18 GB/s under emulation) rounded to three would
     * give two runs of different times one rate, and their interval no width */
    ns_text_printf(csv, "%s,%d,%d,%s,%s,%zu,%llu,%d,%ld,%d,%.9f,%.6f,%llu,%llu,%llu,%llu,%lld,%lld,%lld,\"%s\",\"%s\",%s,%.1f\n",
                   r->direction, r->src, r->dst, method_names[r->method], ns_pages_name(o->common.pages), page_bytes,
                   (unsigned long long)r->bytes, r->threads, r->method == M_MOVE_PAGES ? o->batch : 0, r->repetition,
                   r->move.seconds, gb_s, (unsigned long long)total, (unsigned long long)r->after.on_target,
                   (unsigned long long)r->after.elsewhere, (unsigned long long)r->after.failed, main_delta[0],
                   main_delta[1], main_delta[2], deltas, r->fractions, host, 100 * r->move.on_cpu);
    if (o->common.csv)
        ns_csv_write(o->common.csv, csv); /* after every row: nothing measured is lost */
    if (!o->common.quiet) {
        char size[32];
        ns_format_size(r->bytes, size, sizeof size);
        printf("%-8s %3d %3d %-13s %6s %7d %3d %12.6f %9.3f %10llu/%-10llu %s\n", r->direction, r->src, r->dst,
               method_names[r->method], size, r->threads, r->repetition, r->move.seconds, gb_s,
               (unsigned long long)r->after.on_target, (unsigned long long)total, deltas);
    }
}

/* Whether the row moved every page; warns once per problem otherwise. A share of the time off the
 * CPU is no warning here: the calls wait in the kernel (lru_cache_disable drains every CPU's page
 * lists with work on each CPU), so it is part of what a move costs. */
static int row_ok(const row *r)
{
    if (r->move.error)
        ns_warn("%s from node %d to node %d failed: %s", method_names[r->method], r->src, r->dst,
                strerror(r->move.error));
    if (r->after.elsewhere || r->after.failed) {
        ns_warn("%s from node %d to node %d: %llu of %llu pages are not on node %d afterwards (%llu on other "
                "nodes, %llu not answerable)",
                method_names[r->method], r->src, r->dst,
                (unsigned long long)(r->after.elsewhere + r->after.failed),
                (unsigned long long)(r->after.on_target + r->after.elsewhere + r->after.failed), r->dst,
                (unsigned long long)r->after.elsewhere, (unsigned long long)r->after.failed);
        return 0;
    }
    return 1;
}

/* Each size fits the free memory of both nodes, and a node without memory is named as such. */
static void check_fits(const options *o)
{
    int ends[2] = {o->src, o->dst};
    for (int e = 0; e < 2; e++) {
        if (o->common.pages != NS_PAGES_2M && o->common.pages != NS_PAGES_1G && ns_node_free_bytes(ends[e]) == 0)
            ns_die("node %d has no free memory (a node of CPUs only?): choose nodes with memory (numactl -H lists "
                   "them)", ends[e]);
        ns_policy bind = {.kind = NS_POLICY_BIND, .nnodes = 1, .nodes = {ends[e]}};
        for (size_t i = 0; i < o->nsizes; i++) {
            char what[64], want[32], msg[1024];
            ns_format_size(o->sizes[i], want, sizeof want);
            snprintf(what, sizeof what, "--size: %s", want);
            if (ns_free_memory_problem(&bind, o->common.pages, o->sizes[i], what, msg, sizeof msg))
                ns_die("%s", msg);
        }
    }
}

int main(int argc, char **argv)
{
    ns_set_program("numa_migrate");
    options o;
    parse(argc, argv, &o);
    ns_common_info(&o.common, usage, NS_BUILD_COMMIT, NS_BUILD_FLAGS);
    check_fits(&o);
    vmstat probe;
    vmstat_read(&probe);
    if (!probe.n)
        ns_warn("/proc/vmstat has no migration counters (not mounted, or not Linux): the counter columns are -1");
    char host[64];
    ns_hostname(host, sizeof host);
    /* 4k and thp pages are verified 4 KiB at a time, hugetlb pages whole; thp moves by 2 MiB. */
    size_t page_bytes = ns_pages_bytes(o.common.pages);
    size_t move_bytes = o.common.pages == NS_PAGES_THP ? 2ul << 20 : page_bytes;
    if (!o.common.quiet) {
        printf("numa_migrate: pages of %s moved from node %d to node %d and back, %d repetition(s);\n"
               "  GB/s = buffer bytes / seconds of the move / 1e9\n",
               ns_pages_name(o.common.pages), o.src, o.dst, o.ntimes);
        printf("%-8s %3s %3s %-13s %6s %7s %3s %12s %9s %21s %s\n", "dir", "src", "dst", "method", "size", "threads",
               "rep", "seconds", "GB/s", "pages on target", "counter deltas");
    }
    ns_text csv = {0};
    ns_text_printf(&csv, "direction,src,dst,method,pages,page_bytes,size_bytes,threads,batch,repetition,seconds,gb_s,"
                         "pages_total,pages_moved,pages_elsewhere,pages_failed,numa_pages_migrated,pgmigrate_success,"
                         "pgmigrate_fail,vmstat_deltas,page_fractions,host,on_cpu_pct\n");
    int failed = 0;
    row *r = malloc(sizeof *r);
    for (size_t s = 0; s < o.nsizes; s++)
        for (int m = 0; m < NMETHODS; m++)
            for (int rep = 0; o.methods[m] && rep < o.ntimes; rep++) {
                uint64_t bytes = o.sizes[s];
                ns_policy bind_src = {.kind = NS_POLICY_BIND, .nnodes = 1, .nodes = {o.src}};
                ns_buffer buf;
                ns_buffer_alloc(&buf, bytes, o.common.pages, &bind_src);
                memset(buf.addr, 1, bytes); /* first touch: every page on SRC, as bound */
                ns_buffer_check_thp(&buf);
                page_list pages, moves;
                page_list_init(&pages, buf.addr, bytes, page_bytes);
                page_list_init(&moves, buf.addr, bytes, move_bytes);
                verdict start;
                verify(&pages, o.src, &start);
                if (start.on_target != pages.count)
                    ns_die("after the first touch %llu of %llu pages are not on node %d: node %d is short of free "
                           "memory; use a smaller --size or free memory on it",
                           (unsigned long long)(pages.count - start.on_target), (unsigned long long)pages.count, o.src,
                           o.src);
                for (int back = 0; back < 2; back++) {
                    *r = (row){.direction = back ? "back" : "forward", .src = back ? o.dst : o.src,
                               .dst = back ? o.src : o.dst, .method = m,
                               .threads = m == M_MOVE_PAGES ? o.threads : 1, .repetition = rep, .bytes = bytes};
                    vmstat_read(&r->before_counters);
                    move(&o, m, buf.addr, bytes, &moves, r->src, r->dst, &r->move);
                    vmstat_read(&r->after_counters);
                    verify(&pages, r->dst, &r->after);
                    ns_placement p;
                    ns_placement_clear(&p);
                    ns_placement_query(&p, buf.addr, bytes, page_bytes);
                    ns_placement_format(&p, r->fractions, sizeof r->fractions);
                    failed |= !row_ok(r);
                    emit(&o, r, page_bytes, &csv, host);
                }
                page_list_free(&pages);
                page_list_free(&moves);
                ns_buffer_free(&buf);
            }
    free(r);
    free(o.sizes);
    ns_text_free(&csv);
    return failed ? 1 : 0;
}
