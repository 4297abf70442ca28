/* numa_bandwidth: STREAM-style memory bandwidth with OpenMP threads under a memory policy.
 *
 * Kernels (per accessed element e; s and w are scalars), with the bytes STREAM counts for
 * them (8-byte doubles; write-allocate traffic and the index array of the random pattern are
 * NOT counted, as in STREAM):
 *   copy   c[e] = a[e]            16 bytes   (1 load, 1 store)
 *   scale  b[e] = s * c[e]        16 bytes   (1 load, 1 store)
 *   add    c[e] = a[e] + b[e]     24 bytes   (2 loads, 1 store)
 *   triad  a[e] = b[e] + s*c[e]   24 bytes   (2 loads, 1 store)
 *   read   sum += a[e]             8 bytes   (1 load)
 *   write  c[e] = w                8 bytes   (1 store)
 * Stores: "regular" (ordinary stores: the written line is read into the cache first, then
 * written back) or "nt" (non-temporal stores, which bypass the cache: what gcc's STREAM does for
 * copy, whose loop it turns into a memcpy call that streams large blocks). The store kernels
 * (copy, scale, add, triad, write) run once per variant asked for, each variant its own
 * sequence of repetitions; nt needs x86-64 and the sequential pattern. The bytes counted are the same for both.
 * Patterns: sequential (e = 0..N-1), strided (e = 0, S, 2S, ... ; N/S elements), random
 * (e = idx[k] for a random permutation idx of 0..N-1: gather and scatter).
 * Each repetition runs the selected kernels in the order above; the first repetition is not
 * counted; best rate = bytes / shortest time. The final arrays are checked against the same
 * operations replayed on scalars (STREAM's validation). Threads: OMP_NUM_THREADS or --threads,
 * placed by OMP_PLACES / OMP_PROC_BIND. Arrays are mapped with --pages, the policy applied
 * before first touch, and touched in parallel with the kernels' own static schedule.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "numasweep.h"

enum { K_COPY, K_SCALE, K_ADD, K_TRIAD, K_READ, K_WRITE, NKERNELS };
static const char *kernel_names[NKERNELS] = {"copy", "scale", "add", "triad", "read", "write"};
static const int kernel_words[NKERNELS] = {2, 2, 3, 3, 1, 1};

enum { S_REGULAR, S_NT, NSTORES };
static const char *store_names[NSTORES] = {"regular", "nt"};

enum { P_SEQUENTIAL, P_STRIDED, P_RANDOM, NPATTERNS };
static const char *pattern_names[NPATTERNS] = {"sequential", "strided", "random"};

#define SCALAR 3.0
#define FILL 7.0

typedef struct {
    uint64_t array_bytes;
    int ntimes;
    int kernels[NKERNELS];
    int patterns[NPATTERNS];
    int stores[NSTORES];
    long stride;
    int threads;
    uint64_t seed;
    ns_common_options common;
} options;

enum { OPT_ARRAY_SIZE = NS_OPT_KERNEL, OPT_NTIMES, OPT_KERNELS, OPT_PATTERN, OPT_STRIDE, OPT_THREADS, OPT_SEED, OPT_STORES };

static const struct option long_options[] = {
    NS_COMMON_LONG_OPTIONS,
    {"array-size", required_argument, 0, OPT_ARRAY_SIZE},
    {"ntimes", required_argument, 0, OPT_NTIMES},
    {"kernels", required_argument, 0, OPT_KERNELS},
    {"pattern", required_argument, 0, OPT_PATTERN},
    {"stride", required_argument, 0, OPT_STRIDE},
    {"threads", required_argument, 0, OPT_THREADS},
    {"seed", required_argument, 0, OPT_SEED},
    {"stores", required_argument, 0, OPT_STORES},
    {0, 0, 0, 0},
};

static void usage(void)
{
    printf("Usage: numa_bandwidth [options]\n"
           "STREAM copy/scale/add/triad plus read-only and write-only bandwidth, OpenMP threads.\n\n"
           "  --array-size=SIZE   bytes per array (default: 4x the total last-level cache, at least 64M, at\n"
           "                      most half the free memory for the three arrays, with a warning)\n"
           "  --ntimes=N          repetitions, the first not counted (default 10, at least 2)\n"
           "  --kernels=LIST      of copy,scale,add,triad,read,write (default all)\n"
           "  --pattern=LIST      of sequential,strided,random (default sequential)\n"
           "  --stores=LIST       of regular,nt: ordinary or non-temporal stores in the store kernels\n"
           "                      (default regular; nt needs x86-64 and runs the sequential pattern only)\n"
           "  --stride=N          element step of the strided pattern (default 8 = one 64-byte line)\n"
           "  --threads=N         OpenMP threads (default OMP_NUM_THREADS, else all CPUs allowed)\n"
           "  --seed=N            seed of the random pattern (default 1)\n\n%s",
           ns_common_help());
}

/* "a,b" -> flags for each name found; ends the program on an unknown name. */
/* STREAM's rule: each array at least 4x the last-level caches together (rounded up to MiB, at
 * least 64 MiB), so that no kernel runs from cache. Capped so that the three arrays take at most
 * half the free memory of the target nodes, with a warning: the figures may then include cache. */
static uint64_t default_array_bytes(const ns_common_options *common)
{
    int instances;
    uint64_t llc = ns_llc_bytes(&instances);
    uint64_t bytes = 4 * llc * (uint64_t)instances;
    bytes = (bytes + (1u << 20) - 1) >> 20 << 20;
    if (bytes < (64u << 20))
        bytes = 64u << 20;
    uint64_t free_bytes = ns_free_memory_bytes(&common->policy, common->pages);
    uint64_t cap = free_bytes == UINT64_MAX ? UINT64_MAX : free_bytes / 6 >> 20 << 20;
    if (bytes > cap && cap >= (1u << 20)) {
        char want[32], got[32], cache[32];
        ns_format_size(bytes, want, sizeof want);
        ns_format_size(cap, got, sizeof got);
        ns_format_size(llc * (uint64_t)instances, cache, sizeof cache);
        ns_warn("4x the last-level cache (%s) is %s per array, more than half the free memory holds for three: "
                "arrays capped at %s, so part of the traffic may be served from cache (free memory or give "
                "--array-size)", cache, want, got);
        bytes = cap;
    }
    return bytes;
}

static void parse(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    ns_common_defaults(&o->common);
    o->ntimes = 10;
    o->stride = 8;
    o->seed = 1;
    for (int k = 0; k < NKERNELS; k++)
        o->kernels[k] = 1;
    o->patterns[P_SEQUENTIAL] = 1;
    o->stores[S_REGULAR] = 1;
    const char *array_text = NULL;
    int c;
    while ((c = ns_getopt(argc, argv, long_options)) != -1) {
        if (ns_common_option(&o->common, c, optarg))
            continue;
        switch (c) {
        case OPT_ARRAY_SIZE:
            o->array_bytes = ns_size_arg("--array-size", optarg);
            array_text = optarg;
            break;
        case OPT_NTIMES: o->ntimes = (int)ns_int_arg("--ntimes", optarg, 2, 100000); break;
        case OPT_KERNELS:
            ns_names_arg("--kernels", optarg, kernel_names, NKERNELS, o->kernels, "copy, scale, add, triad, read, write");
            break;
        case OPT_PATTERN:
            ns_names_arg("--pattern", optarg, pattern_names, NPATTERNS, o->patterns, "sequential, strided or random");
            break;
        case OPT_STORES: ns_names_arg("--stores", optarg, store_names, NSTORES, o->stores, "regular or nt"); break;
        case OPT_STRIDE: o->stride = ns_int_arg("--stride", optarg, 1, 1L << 30); break;
        case OPT_THREADS: o->threads = (int)ns_int_arg("--threads", optarg, 1, NS_MAX_CPUS); break;
        case OPT_SEED: o->seed = (uint64_t)ns_int_arg("--seed", optarg, 0, 1L << 62); break;
        default: ns_die("unhandled option; see --help");
        }
    }
    ns_no_positional(argc, argv);
    if (o->common.help || o->common.version)
        return;
    if (!o->threads)
        o->threads = ns_threads_from_env();
#if !defined(__x86_64__)
    if (o->stores[S_NT])
        ns_die("--stores=nt: non-temporal stores are built for x86-64 only: use --stores=regular");
#endif
    if (!o->array_bytes)
        o->array_bytes = default_array_bytes(&o->common);
    uint64_t n = o->array_bytes / sizeof(double);
    char note[160];
    if (n < 2)
        ns_die("--array-size: %llu bytes is below two elements of 8 bytes", (unsigned long long)o->array_bytes);
    if (n > UINT32_MAX)
        ns_die("--array-size: more than 2^32 elements per array: use at most 32G%s",
               ns_size_unit_note(array_text, note, sizeof note));
    if (o->patterns[P_STRIDED] && (uint64_t)o->stride >= n)
        ns_die("--stride=%ld is not below the %llu elements of an array: use a smaller stride or a larger --array-size",
               o->stride, (unsigned long long)n);
    ns_common_finish(&o->common);
}

typedef struct {
    double *a, *b, *c;
    uint32_t *idx;
    size_t n;      /* elements per array */
    size_t count;  /* elements a kernel visits */
    long stride;
    int pattern;
} arrays;

/* The loop over the visited elements, one copy per pattern so that the sequential one stays a
 * plain vectorisable loop. PRAGMA is the whole OpenMP pragma as one string. */
#define FOR_EACH_ELEMENT(A, PRAGMA, BODY)                                                  \
    do {                                                                                      \
        const size_t count_ = (A)->count;                                                     \
        if ((A)->pattern == P_SEQUENTIAL) {                                                   \
            _Pragma(PRAGMA) for (size_t k = 0; k < count_; k++) { \
                const size_t e = k;                                                           \
                BODY;                                                                         \
            }                                                                                 \
        } else if ((A)->pattern == P_STRIDED) {                                               \
            const size_t stride_ = (size_t)(A)->stride;                                       \
            _Pragma(PRAGMA) for (size_t k = 0; k < count_; k++) { \
                const size_t e = k * stride_;                                                 \
                BODY;                                                                         \
            }                                                                                 \
        } else {                                                                              \
            const uint32_t *idx_ = (A)->idx;                                                  \
            _Pragma(PRAGMA) for (size_t k = 0; k < count_; k++) { \
                const size_t e = idx_[k];                                                     \
                BODY;                                                                         \
            }                                                                                 \
        }                                                                                     \
    } while (0)

#define PARALLEL "omp parallel for schedule(static)"
#define PARALLEL_SUM "omp parallel for schedule(static) reduction(+:sum)"

static int cmp_int(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

/* The sequential read kernel with eight independent partial sums per thread. A single chain of
 * dependent adds waits one add latency per element (about 9 GB/s for a 3 GHz core), which
 * measures the adder rather than memory; eight chains let the loads run ahead. The blocks of 8
 * follow the same static schedule as first touch, so each thread still reads its own pages. */
static double read_sequential(const double *restrict a, size_t n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    const size_t blocks = n / 8;
#pragma omp parallel for schedule(static) reduction(+ : s0, s1, s2, s3, s4, s5, s6, s7)
    for (size_t k = 0; k < blocks; k++) {
        const double *p = a + 8 * k;
        s0 += p[0];
        s1 += p[1];
        s2 += p[2];
        s3 += p[3];
        s4 += p[4];
        s5 += p[5];
        s6 += p[6];
        s7 += p[7];
    }
    for (size_t e = 8 * blocks; e < n; e++)
        s0 += a[e];
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
}

#if defined(__x86_64__)
/* Non-temporal stores over whole 64-byte lines, the widest vectors the build allows (the arrays
 * are page-aligned and each thread's block of lines follows the static schedule of first
 * touch); the elements after the last whole line use ordinary stores. An sfence per thread
 * makes the streamed lines visible before the timer stops. */
#if defined(__AVX512F__)
typedef __m512d vec;
#define VLOAD _mm512_load_pd
#define VSTREAM _mm512_stream_pd
#define VSET1 _mm512_set1_pd
#define VADD _mm512_add_pd
#define VMUL _mm512_mul_pd
#define NT_ISA "AVX-512 _mm512_stream_pd"
#elif defined(__AVX__)
typedef __m256d vec;
#define VLOAD _mm256_load_pd
#define VSTREAM _mm256_stream_pd
#define VSET1 _mm256_set1_pd
#define VADD _mm256_add_pd
#define VMUL _mm256_mul_pd
#define NT_ISA "AVX _mm256_stream_pd"
#else
typedef __m128d vec;
#define VLOAD _mm_load_pd
#define VSTREAM _mm_stream_pd
#define VSET1 _mm_set1_pd
#define VADD _mm_add_pd
#define VMUL _mm_mul_pd
#define NT_ISA "SSE2 _mm_stream_pd"
#endif
#define VW (sizeof(vec) / sizeof(double))

#define NT_LINES(N, BODY)                                                                    \
    do {                                                                                      \
        const size_t lines_ = (N) / 8;                                                        \
        _Pragma("omp parallel")                                                               \
        {                                                                                     \
            _Pragma("omp for schedule(static) nowait") for (size_t l = 0; l < lines_; l++)   \
                for (size_t v = 0; v < 8; v += VW) {                                          \
                    const size_t e = 8 * l + v;                                               \
                    BODY;                                                                     \
                }                                                                             \
            _mm_sfence();                                                                     \
        }                                                                                     \
    } while (0)

static void run_nt(const arrays *A, int kernel)
{
    double *restrict a = A->a, *restrict b = A->b, *restrict c = A->c;
    const size_t n = A->count, tail = n / 8 * 8;
    const vec s = VSET1(SCALAR), w = VSET1(FILL);
    switch (kernel) {
    case K_COPY:
        NT_LINES(n, VSTREAM(c + e, VLOAD(a + e)));
        for (size_t e = tail; e < n; e++)
            c[e] = a[e];
        break;
    case K_SCALE:
        NT_LINES(n, VSTREAM(b + e, VMUL(s, VLOAD(c + e))));
        for (size_t e = tail; e < n; e++)
            b[e] = SCALAR * c[e];
        break;
    case K_ADD:
        NT_LINES(n, VSTREAM(c + e, VADD(VLOAD(a + e), VLOAD(b + e))));
        for (size_t e = tail; e < n; e++)
            c[e] = a[e] + b[e];
        break;
    case K_TRIAD:
        NT_LINES(n, VSTREAM(a + e, VADD(VLOAD(b + e), VMUL(s, VLOAD(c + e)))));
        for (size_t e = tail; e < n; e++)
            a[e] = b[e] + SCALAR * c[e];
        break;
    case K_WRITE:
        NT_LINES(n, VSTREAM(c + e, w));
        for (size_t e = tail; e < n; e++)
            c[e] = FILL;
        break;
    }
}
#else
#define NT_ISA "none"
static void run_nt(const arrays *A, int kernel)
{
    (void)A;
    (void)kernel;
    ns_die("--stores=nt: non-temporal stores are built for x86-64 only: use --stores=regular");
}
#endif

/* The loops of the regular-store kernels must stay loops: gcc's loop distribution would turn
 * the copy and write loops into memcpy/memset calls, whose large-block code streams with
 * non-temporal stores, so "regular" would silently be "nt". */
__attribute__((optimize("no-tree-loop-distribute-patterns")))
static double run_kernel(const arrays *A, int kernel, int stores, double *sum_out)
{
    double *restrict a = A->a, *restrict b = A->b, *restrict c = A->c;
    double sum = 0;
    double t0 = ns_seconds();
    if (stores == S_NT) {
        run_nt(A, kernel);
        return ns_seconds() - t0;
    }
    switch (kernel) {
    case K_COPY: FOR_EACH_ELEMENT(A, PARALLEL, c[e] = a[e]); break;
    case K_SCALE: FOR_EACH_ELEMENT(A, PARALLEL, b[e] = SCALAR * c[e]); break;
    case K_ADD: FOR_EACH_ELEMENT(A, PARALLEL, c[e] = a[e] + b[e]); break;
    case K_TRIAD: FOR_EACH_ELEMENT(A, PARALLEL, a[e] = b[e] + SCALAR * c[e]); break;
    case K_READ:
        if (A->pattern == P_SEQUENTIAL)
            sum = read_sequential(a, A->count);
        else
            FOR_EACH_ELEMENT(A, PARALLEL_SUM, sum += a[e]);
        break;
    case K_WRITE: FOR_EACH_ELEMENT(A, PARALLEL, c[e] = FILL); break;
    }
    double t = ns_seconds() - t0;
    if (sum_out)
        *sum_out = sum;
    return t;
}

/* STREAM's check: replay the kernels on scalars and compare the average error of the visited
 * elements; the read kernel's sum is checked against the value it must have had. */
static int validate(const options *o, const arrays *A, int repetitions, double read_sum, double expected_read)
{
    double aj = 1.0, bj = 2.0, cj = 0.0;
    for (int t = 0; t < repetitions; t++) {
        if (o->kernels[K_COPY]) cj = aj;
        if (o->kernels[K_SCALE]) bj = SCALAR * cj;
        if (o->kernels[K_ADD]) cj = aj + bj;
        if (o->kernels[K_TRIAD]) aj = bj + SCALAR * cj;
        if (o->kernels[K_WRITE]) cj = FILL;
    }
    double aerr = 0, berr = 0, cerr = 0;
    for (size_t k = 0; k < A->count; k++) {
        size_t e = A->pattern == P_SEQUENTIAL ? k : A->pattern == P_STRIDED ? k * (size_t)A->stride : A->idx[k];
        aerr += fabs(A->a[e] - aj);
        berr += fabs(A->b[e] - bj);
        cerr += fabs(A->c[e] - cj);
    }
    const double epsilon = 1e-13;
    double cnt = (double)A->count;
    int ok = aerr / cnt / fabs(aj) <= epsilon && berr / cnt / fabs(bj) <= epsilon &&
             (cj == 0 ? cerr == 0 : cerr / cnt / fabs(cj) <= epsilon);
    if (o->kernels[K_READ] && fabs(read_sum - expected_read) > 1e-9 * fabs(expected_read))
        ok = 0;
    return ok;
}

int main(int argc, char **argv)
{
    ns_set_program("numa_bandwidth");
    options o;
    parse(argc, argv, &o);
    ns_common_info(&o.common, usage, NS_BUILD_COMMIT, NS_BUILD_FLAGS);
    if (o.threads)
        omp_set_num_threads(o.threads);

    size_t n = o.array_bytes / sizeof(double);
    size_t bytes = n * sizeof(double);
    uint64_t need = 3 * (uint64_t)bytes + (o.patterns[P_RANDOM] ? n * sizeof(uint32_t) : 0);
    ns_check_free_memory(&o.common.policy, o.common.pages, need);
    ns_policy_apply_weights(&o.common.policy);

    ns_buffer buf_a, buf_b, buf_c, buf_idx = {0};
    ns_buffer_alloc(&buf_a, bytes, o.common.pages, &o.common.policy);
    ns_buffer_alloc(&buf_b, bytes, o.common.pages, &o.common.policy);
    ns_buffer_alloc(&buf_c, bytes, o.common.pages, &o.common.policy);
    arrays A = {.a = buf_a.addr, .b = buf_b.addr, .c = buf_c.addr, .n = n, .stride = o.stride};

    /* First touch with the kernels' own schedule, so each thread's part lands where it runs.
     * Timed: on a large machine mapping the pages dominates the set-up and varies. */
    double touch0 = ns_seconds();
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < n; j++) {
        A.a[j] = 1.0;
        A.b[j] = 2.0;
        A.c[j] = 0.0;
    }
    double first_touch = ns_seconds() - touch0;
    ns_buffer_check_thp(&buf_a);
    ns_buffer_check_thp(&buf_b);
    ns_buffer_check_thp(&buf_c);
    if (o.patterns[P_RANDOM]) {
        ns_buffer_alloc(&buf_idx, n * sizeof(uint32_t), o.common.pages, &o.common.policy);
        A.idx = buf_idx.addr;
#pragma omp parallel for schedule(static)
        for (size_t j = 0; j < n; j++)
            A.idx[j] = 0;
        ns_rng rng;
        ns_rng_seed(&rng, o.seed);
        ns_random_order(A.idx, n, &rng);
    }

    /* Where the threads run and where the pages are. */
    int nthreads = omp_get_max_threads();
    int *thread_cpu = calloc((size_t)nthreads, sizeof *thread_cpu);
#pragma omp parallel
    {
#pragma omp single
        nthreads = omp_get_num_threads();
        thread_cpu[omp_get_thread_num()] = ns_current_cpu();
    }
    char cpus[8192], cpu_nodes[1024], host[64], mem_nodes[1024], weights[1024], fractions[4096];
    {
        /* Distinct CPUs of the threads, ascending, and their nodes in that order. */
        qsort(thread_cpu, (size_t)nthreads, sizeof *thread_cpu, cmp_int);
        int ncpu = 0, nodes[NS_MAX_NODES], nn = 0;
        for (int i = 0; i < nthreads; i++)
            if (!ncpu || thread_cpu[ncpu - 1] != thread_cpu[i])
                thread_cpu[ncpu++] = thread_cpu[i];
        ns_format_cpulist(thread_cpu, ncpu, cpus, sizeof cpus);
        for (int i = 0; i < ncpu; i++) {
            int node = ns_node_of_cpu(thread_cpu[i]), seen = 0;
            for (int j = 0; j < nn; j++)
                seen |= nodes[j] == node;
            if (!seen && nn < NS_MAX_NODES)
                nodes[nn++] = node;
        }
        ns_format_int_list(nodes, nn, cpu_nodes, sizeof cpu_nodes);
    }
    ns_hostname(host, sizeof host);
    ns_placement placement;
    ns_placement_clear(&placement);
    size_t page = ns_pages_bytes(o.common.pages);
    ns_placement_query(&placement, A.a, bytes, page);
    ns_placement_query(&placement, A.b, bytes, page);
    ns_placement_query(&placement, A.c, bytes, page);
    ns_placement_format(&placement, fractions, sizeof fractions);
    ns_observed_policy seen;
    ns_policy_observe(A.a, &seen);
    ns_format_int_list(seen.nodes, seen.nnodes, mem_nodes, sizeof mem_nodes);
    ns_format_int_list(seen.weights, seen.nweights, weights, sizeof weights);

    double resolution = ns_timer_resolution();
    if (!o.common.quiet) {
        char size_text[32];
        ns_format_size(bytes, size_text, sizeof size_text);
        printf("numa_bandwidth: STREAM kernels, %d threads on CPUs %s (nodes %s), OMP_PROC_BIND=%s OMP_PLACES=%s\n"
               "  3 arrays of %s (%zu doubles) each, %d repetitions (first not counted), pages %s\n"
               "  policy %s nodes %s%s%s, pages found on %s (move_pages, <= %d pages per array)\n"
               "  bytes counted as STREAM does: copy/scale 16, add/triad 24, read/write 8 per element;\n"
               "  no write-allocate traffic, no index array. Timer resolution %.0f ns. First touch %.3f s.\n"
               "  stores: %s (nt = non-temporal, %s); gcc's STREAM runs copy as memcpy,\n"
               "  which streams: compare its copy with our nt copy.\n",
               nthreads, cpus, cpu_nodes, getenv("OMP_PROC_BIND") ? getenv("OMP_PROC_BIND") : "unset",
               getenv("OMP_PLACES") ? getenv("OMP_PLACES") : "unset", size_text, n, o.ntimes,
               ns_pages_name(o.common.pages), seen.name, *mem_nodes ? mem_nodes : "-", *weights ? " weights " : "",
               weights, fractions, NS_PLACEMENT_MAX_SAMPLES, resolution * 1e9, first_touch,
               o.stores[S_REGULAR] && o.stores[S_NT] ? "regular and nt" : o.stores[S_NT] ? "nt" : "regular", NT_ISA);
        printf("%-8s %-7s %-11s %8s %12s %10s %12s %12s %12s %s\n", "Kernel", "Stores", "Pattern", "Stride",
               "Best MB/s", "Bytes/elem", "Avg time", "Min time", "Max time", "Validation");
        fflush(stdout);
    }

    ns_text csv = {0};
    ns_text_printf(&csv, "kernel,pattern,stride,threads,cpus,cpu_nodes,policy,mem_nodes,weights,page_size,"
                         "array_bytes,bytes_per_iter,best_mb_s,avg_mb_s,min_mb_s,ntimes,validation,page_fractions,"
                         "host,stores,bytes_per_element,first_touch_s,timer_ticks\n");
    /* times[(t * NKERNELS + k) * NSTORES + v] */
    double *times = malloc((size_t)o.ntimes * NKERNELS * NSTORES * sizeof *times);
    int nt_skipped = 0;
    int failed = 0;
    for (int p = 0; p < NPATTERNS; p++) {
        if (!o.patterns[p])
            continue;
        /* Fresh values so each pattern's validation starts from the same state. */
#pragma omp parallel for schedule(static)
        for (size_t j = 0; j < n; j++) {
            A.a[j] = 1.0;
            A.b[j] = 2.0;
            A.c[j] = 0.0;
        }
        A.pattern = p;
        A.count = p == P_STRIDED ? (n + (size_t)o.stride - 1) / (size_t)o.stride : n;
        /* Each store variant runs its own sequence of repetitions, as a separate STREAM run
         * would: with the variants interleaved, non-temporal stores would meet the lines the
         * regular kernel before them left in the cache. Both variants compute the same, so the
         * validation replays the repetitions of all variants that ran. */
        int variants[NSTORES];
        for (int v = 0; v < NSTORES; v++)
            variants[v] = o.stores[v] && (v == S_REGULAR || p == P_SEQUENTIAL);
        nt_skipped |= o.stores[S_NT] && !variants[S_NT];
        double read_sum = 0, expected_read = 0;
        for (int v = 0; v < NSTORES; v++) {
            for (int t = 0; t < o.ntimes; t++) {
                for (int k = 0; k < NKERNELS; k++) {
                    if (!o.kernels[k] || !variants[v] || (k == K_READ && v != S_REGULAR))
                        continue;
                    if (k == K_READ)
                        expected_read = A.a[p == P_RANDOM ? A.idx[0] : 0] * (double)A.count;
                    times[(t * NKERNELS + k) * NSTORES + v] =
                        run_kernel(&A, k, v, k == K_READ ? &read_sum : NULL);
                }
            }
        }
        int valid = validate(&o, &A, o.ntimes * (variants[S_REGULAR] + variants[S_NT]), read_sum, expected_read);
        failed |= !valid;
        long stride = p == P_SEQUENTIAL ? 1 : p == P_STRIDED ? o.stride : 0;
        for (int k = 0; k < NKERNELS; k++) {
          for (int v = 0; v < NSTORES; v++) {
            if (!o.kernels[k] || !variants[v] || (k == K_READ && v != S_REGULAR))
                continue;
            double best = INFINITY, worst = 0, total = 0;
            for (int t = 1; t < o.ntimes; t++) {
                double x = times[(t * NKERNELS + k) * NSTORES + v];
                best = x < best ? x : best;
                worst = x > worst ? x : worst;
                total += x;
            }
            double avg = total / (o.ntimes - 1);
            double moved = (double)kernel_words[k] * sizeof(double) * (double)A.count;
            if (best < 20 * resolution)
                ns_warn("%s %s took %.0f ns, under 20 timer ticks: use a larger --array-size", kernel_names[k],
                        pattern_names[p], best * 1e9);
            ns_text_printf(&csv,
                           "%s,%s,%ld,%d,\"%s\",\"%s\",%s,\"%s\",\"%s\",%s,%zu,%.0f,%.1f,%.1f,%.1f,%d,%s,\"%s\",%s,%s,%d,"
                           "%.4f,%.0f\n",
                           kernel_names[k], pattern_names[p], stride, nthreads, cpus, cpu_nodes, seen.name, mem_nodes,
                           weights, ns_pages_name(o.common.pages), bytes, moved, 1e-6 * moved / best,
                           1e-6 * moved / avg, 1e-6 * moved / worst, o.ntimes, valid ? "pass" : "fail", fractions, host,
                           store_names[v], kernel_words[k] * (int)sizeof(double), first_touch, best / resolution);
            if (!o.common.quiet)
                printf("%-8s %-7s %-11s %8ld %12.1f %10d %12.6f %12.6f %12.6f %s\n", kernel_names[k], store_names[v],
                       pattern_names[p], stride, 1e-6 * moved / best, kernel_words[k] * (int)sizeof(double), avg, best,
                       worst, valid ? "pass" : "FAIL");
          }
        }
        if (o.common.csv)
            ns_csv_write(o.common.csv, &csv); /* after every pattern: nothing measured is lost */
    }
    if (nt_skipped)
        ns_warn("--stores=nt runs the sequential pattern only: the strided and random rows are regular stores");
    if (!o.common.quiet)
        printf("Validation: %s (final arrays vs. the kernels replayed on scalars, average relative error <= 1e-13)\n",
               failed ? "FAILED" : "passed");
    free(times);
    free(thread_cpu);
    ns_text_free(&csv);
    ns_buffer_free(&buf_a);
    ns_buffer_free(&buf_b);
    ns_buffer_free(&buf_c);
    ns_buffer_free(&buf_idx);
    return failed ? 1 : 0;
}
