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
 * (copy, scale, add, triad, write) run once per store kind asked for, each its own sequence of
 * repetitions; nt needs x86-64 and the sequential pattern. The bytes counted are the same for both.
 * Code shapes (--variant, the CSV's variant column): the sequential kernels run as the plain
 * loop, scalar code, 128-, 256- or 512-bit vectors, each with or without unrolling, and with
 * non-temporal stores the unrolled vectors also four pages at a time ("Code shapes" below), as
 * the shape alone moves a kernel's rate by a quarter on some processors. The workflow decides
 * each kernel's shape once per machine (--calibrate, then `python -m numasweep calibrate`) and
 * runs it with --shapes=FILE; on its own the kernel picks the fastest of one timed run of each.
 * Patterns: sequential (e = 0..N-1), strided (e = 0, S, 2S, ... ; N/S elements), random
 * (e = idx[k] for a random permutation idx of 0..N-1: gather and scatter).
 * Each repetition runs the selected kernels in the order above; the first repetition is not
 * counted; best rate = bytes / shortest time. The final arrays are checked against the same
 * operations replayed on scalars (STREAM's validation). Threads: OMP_NUM_THREADS or --threads,
 * placed by OMP_PLACES / OMP_PROC_BIND. Arrays are mapped with --pages, the policy applied
 * before first touch, and touched in parallel with the kernels' own static schedule.
 */
#include <errno.h>
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

/* Code shapes of the sequential kernels: see "Code shapes" below. */
/* In this order of preference: where a calibration cannot tell shapes apart, the first of them
 * in this list is chosen (the simpler, the nearer STREAM's own loop). */
enum { V_LOOP, V_SCALAR, V_SCALAR_U, V_SSE, V_SSE_U, V_AVX2, V_AVX2_U, V_AVX2_P, V_AVX512, V_AVX512_U, V_AVX512_P,
       NVARIANTS };
static const char *variant_names[NVARIANTS] = {"loop", "scalar", "scalar-unroll", "sse", "sse-unroll", "avx2",
                                               "avx2-unroll", "avx2-pages", "avx512", "avx512-unroll",
                                               "avx512-pages"};
#define VARIANT_HINT                                                                                              \
    "auto, all, or a list of loop, scalar, scalar-unroll, sse, sse-unroll, avx2, avx2-unroll, avx2-pages, avx512, " \
    "avx512-unroll, avx512-pages"
#define V_AUTO (-1)
/* One timed run per shape: shapes that differ by more than a busy machine's noise are told apart
 * by one; those within it cost the same either way, and the calibration stays under the
 * measurement's own time (each run is a pass over the whole arrays). */
#define CALIBRATION_ROUNDS 1

/* Whether this binary on this CPU runs the shape; if not, why in *why. */
static int variant_runs_here(int v, const char **why)
{
    *why = "";
#if defined(__x86_64__)
    __builtin_cpu_init();
    if ((v == V_AVX2 || v == V_AVX2_U || v == V_AVX2_P) &&
        !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
        *why = "this CPU has no AVX2 and FMA";
        return 0;
    }
    if ((v == V_AVX512 || v == V_AVX512_U || v == V_AVX512_P) && !__builtin_cpu_supports("avx512f")) {
        *why = "this CPU has no AVX-512F";
        return 0;
    }
#else
    if (v != V_LOOP && v != V_SCALAR && v != V_SCALAR_U) { /* sse: SSE2, part of every x86-64 */
        *why = "built for x86-64 only";
        return 0;
    }
#endif
    return 1;
}

/* Whether the shape has a form for these stores (loop: regular only; the page order: nt only). */
static int variant_has_stores(int v, int stores)
{
    if (v == V_LOOP)
        return stores == S_REGULAR;
    if (v == V_AVX2_P || v == V_AVX512_P)
        return stores == S_NT;
    return 1;
}


#define SCALAR 3.0
#define FILL 7.0

typedef struct {
    uint64_t array_bytes;
    int ntimes;
    int kernels[NKERNELS];
    int patterns[NPATTERNS];
    int stores[NSTORES];
    int variant_auto;         /* --variant=auto: calibrated per kernel and stores */
    int variants[NVARIANTS];  /* else the shapes asked for */
    const char *shapes_file;  /* --shapes: each kernel's shape per stores, as a calibration decided */
    int calibrate_rounds;     /* --calibrate=N: every shape timed N rounds, written; nothing measured */
    long stride;
    int threads;
    uint64_t seed;
    ns_common_options common;
} options;

/* Whether kernel k runs with stores st: both asked for, and the read kernel, which stores
 * nothing, with the regular stores only. */
static int kernel_runs(const options *o, int k, int st)
{
    return o->stores[st] && o->kernels[k] && (k != K_READ || st == S_REGULAR);
}

enum { OPT_ARRAY_SIZE = NS_OPT_KERNEL, OPT_NTIMES, OPT_KERNELS, OPT_PATTERN, OPT_STRIDE, OPT_THREADS, OPT_SEED, OPT_STORES, OPT_VARIANT,
       OPT_SHAPES, OPT_CALIBRATE };

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
    {"variant", required_argument, 0, OPT_VARIANT},
    {"shapes", required_argument, 0, OPT_SHAPES},
    {"calibrate", required_argument, 0, OPT_CALIBRATE},
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
           "  --variant=LIST      code shape of the sequential kernels: auto (default: a short calibration on\n"
           "                      the arrays picks the fastest shape per kernel and stores), all (every shape\n"
           "                      this CPU runs), or a list of loop (the plain loop as built, regular stores\n"
           "                      only), scalar, sse, avx2, avx512 (128-, 256- and 512-bit vectors), their\n"
           "                      -unroll forms (four steps per iteration; read: eight partial sums) and\n"
           "                      avx2-pages, avx512-pages (non-temporal stores only: unrolled, four 4 KiB\n"
           "                      pages at a time); the CSV's variant column names the shape used\n"
           "  --shapes=FILE       each kernel's shape per store kind from FILE, lines \"KERNEL STORES SHAPE\"\n"
           "                      (what `python -m numasweep calibrate` decides once per machine)\n"
           "  --calibrate=N       time every shape this CPU runs in N rounds (the shapes interleaved) per\n"
           "                      kernel and store kind (regular, and nt on x86-64); --csv gets one row per\n"
           "                      round and shape; nothing else is measured\n"
           "  --stride=N          element step of the strided pattern (default 8 = one 64-byte line)\n"
           "  --threads=N         OpenMP threads (default OMP_NUM_THREADS, else all CPUs allowed)\n"
           "  --seed=N            seed of the random pattern (default 1)\n\n%s",
           ns_common_help());
}

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

/* --variant with shapes named (or all): those this CPU does not run are refused (all: left out),
 * and each store kind asked for needs a shape with a form for it. */
static void check_variants(options *o)
{
    for (int v = 0; v < NVARIANTS; v++) {
        const char *why;
        if (o->variants[v] && !variant_runs_here(v, &why)) {
            if (o->variants[v] == 1)
                ns_die("--variant=%s: %s: use --variant=auto or a shape it runs", variant_names[v], why);
            o->variants[v] = 0; /* all: those it runs */
        }
    }
    for (int st = 0; st < NSTORES; st++) {
        int any = 0;
        for (int v = 0; v < NVARIANTS; v++)
            any |= o->variants[v] && variant_has_stores(v, st);
        if (o->stores[st] && !any)
            ns_die("--variant: no shape asked for has a form with %s stores (loop: regular only, the compiler "
                   "picks its stores; avx2-pages and avx512-pages: nt only): give --stores=%s a shape too, "
                   "e.g. --variant=%s,avx2", store_names[st], store_names[st], st == S_NT ? "loop" : "avx2-pages");
    }
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
    o->variant_auto = 1;
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
        case OPT_VARIANT:
            o->variant_auto = !strcmp(optarg, "auto");
            if (!strcmp(optarg, "all")) {
                for (int v = 0; v < NVARIANTS; v++)
                    o->variants[v] = 2; /* those this CPU runs, sorted out below */
            } else if (!o->variant_auto) {
                ns_names_arg("--variant", optarg, variant_names, NVARIANTS, o->variants, VARIANT_HINT);
            }
            break;
        case OPT_SHAPES: o->shapes_file = optarg; break;
        case OPT_CALIBRATE: o->calibrate_rounds = (int)ns_int_arg("--calibrate", optarg, 2, 1000); break;
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
    if ((o->shapes_file || o->calibrate_rounds) && !o->variant_auto)
        ns_die("--variant with %s: give one of them (--variant fixes the shape by hand)",
               o->shapes_file ? "--shapes" : "--calibrate");
    if (o->shapes_file && o->calibrate_rounds)
        ns_die("--shapes with --calibrate: give one of them (--calibrate makes what --shapes reads)");
    if (o->calibrate_rounds) { /* every store kind this build has, the sequential pattern */
        o->stores[S_REGULAR] = 1;
#if defined(__x86_64__)
        o->stores[S_NT] = 1;
#endif
        memset(o->patterns, 0, sizeof o->patterns);
        o->patterns[P_SEQUENTIAL] = 1;
    }
    if (!o->variant_auto)
        check_variants(o);
    /* a --csv that cannot be written is the one error said, before the default size's warning */
    if (o->common.csv && !o->common.check_args)
        ns_csv_check_path(o->common.csv);
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

/* ---- Code shapes of the sequential kernels ----------------------------------------------
 *
 * How a loop is written decides its rate on current processors as much as the memory does:
 * the same STREAM kernel moves different amounts per second as scalar code, with 256-bit or
 * with 512-bit vectors, and with one or four independent steps per loop iteration (bench/
 * README.md has the figures of one machine). Each shape below is a worker over the elements
 * [lo, hi) of one thread's part of the arrays, built for its instruction set with a target
 * attribute (function multiversioning: the binary runs on a CPU without AVX-512 and uses those
 * workers only where __builtin_cpu_supports says the CPU has them):
 *   loop            the plain loop, as the build flags compile it (what STREAM runs; regular
 *                   stores only; the strided and random patterns always run it)
 *   scalar          one double per instruction (vectorisation off for these workers)
 *   sse             128-bit vectors (SSE2, every x86-64), 2 doubles per instruction: the width
 *                   of likwid-bench's *_sse kernels, its fastest on some processors (a Zen 4
 *                   guest read 23.1 GB/s with load_sse against 18.4 with load_avx512, one thread)
 *   avx2            256-bit vectors (AVX2 and FMA), 4 doubles per instruction
 *   avx512          512-bit vectors (AVX-512F), 8 doubles per instruction
 *   *-unroll        the same with four independent steps per loop iteration; read with eight
 *                   partial sums, one per consecutive vector, as likwid-bench's sum, sum_sse,
 *                   sum_avx and sum_avx512 loops are written
 *   *-pages         non-temporal stores only: unrolled, in another order, four 4 KiB pages at a
 *                   time, one iteration's worth of each in turn, as glibc's memcpy copies large
 *                   blocks with non-temporal stores (STREAM's copy as gcc builds it). Hardware
 *                   prefetchers follow a stream within one 4 KiB page; four pages at once are four
 *                   streams in flight. One thread's straight non-temporal copy read 14% below
 *                   STREAM's memcpy on a Xeon guest (family 6 model 167), and the page order alone
 *                   moved it 1.3x there (bench/README.md). Ordinary stores and read keep the
 *                   straight order of STREAM's and likwid-bench's loops, so that their figures
 *                   compare with those tools' (the page order moved them 3-7% there)
 * Non-temporal stores: movnti (scalar), vmovntpd (vectors). Workers leave the loops loops: gcc
 * would turn a copy or write loop into memcpy/memset, whose large-block code streams with
 * non-temporal stores, so "regular" would silently be "nt". */

typedef double (*worker_fn)(double *restrict a, double *restrict b, double *restrict c, size_t lo, size_t hi);

/* The main loop of a worker over whole iterations of STEP elements, BODY at element e: "straight"
 * from e to hi; "pages" four 4 KiB pages (PAGE_DOUBLES elements each) at a time, BODY at the same
 * offset in each of the four in turn, then straight for the elements after the last four pages. */
#define PAGE_DOUBLES 512
#define MAIN_LOOP_straight(STEP, BODY)                                                                         \
    for (; e + (STEP) <= hi; e += (STEP)) {                                                                    \
        BODY                                                                                                   \
    }
#define MAIN_LOOP_pages(STEP, BODY)                                                                            \
    for (; e + 4 * PAGE_DOUBLES <= hi; e += 4 * PAGE_DOUBLES) {                                                \
        const size_t block_ = e;                                                                               \
        for (size_t off_ = 0; off_ < PAGE_DOUBLES; off_ += (STEP))                                             \
            for (size_t page_ = 0; page_ < 4; page_++) {                                                       \
                e = block_ + page_ * PAGE_DOUBLES + off_;                                                      \
                BODY                                                                                           \
            }                                                                                                  \
        e = block_;                                                                                            \
    }                                                                                                          \
    MAIN_LOOP_straight(STEP, BODY)

/* One step of u (0..U-1) in a loop iteration at element e; U = 1 or 4. */
#define REP1(S) { const size_t u = 0; S; }
#define REP4(S) { { const size_t u = 0; S; } { const size_t u = 1; S; } { const size_t u = 2; S; } { const size_t u = 3; S; } }
#define REP8(S) { REP4(S) { { const size_t u = 4; S; } { const size_t u = 5; S; } { const size_t u = 6; S; } { const size_t u = 7; S; } } }
/* The read kernel's steps per iteration: eight for the unrolled shapes (READ_STEPS_4). */
#define READ_STEPS_1 1
#define READ_STEPS_4 8
#define AT(P) ((P) + e + u * W_)

/* A store kernel: whole groups of U vectors, then single vectors, then single elements with
 * ordinary stores. */
#define STORE_WORKER(FN, ATTR, U, ORDER, V, W, SET1, STEP, TAIL)                                               \
    ATTR __attribute__((noinline)) static double FN(double *restrict a, double *restrict b, double *restrict c, \
                                                    size_t lo, size_t hi)                                      \
    {                                                                                                          \
        enum { W_ = W };                                                                                       \
        const V s = SET1(SCALAR), w = SET1(FILL);                                                              \
        (void)a, (void)b, (void)c, (void)s, (void)w;                                                           \
        size_t e = lo;                                                                                         \
        MAIN_LOOP_##ORDER((U) * W_, REP##U(STEP);)                                                             \
        for (; e + W_ <= hi; e += W_)                                                                          \
            REP1(STEP);                                                                                        \
        for (; e < hi; e++)                                                                                    \
            TAIL;                                                                                              \
        return 0;                                                                                              \
    }

/* The copy kernel: in each iteration all U loads first, then the U stores, as likwid-bench's
 * copy kernels are written. Load, store, load, store (the order a STORE_WORKER step gives) left
 * non-temporal copy 4.5% below likwid's copy_mem_avx512 on a Xeon (family 6 model 167, one
 * thread); loads first gained 2.6% there (16 alternating pairs) and nothing with ordinary stores
 * (bench/README.md). The empty asm keeps the compiler from interleaving them again. */
#define COPY_WORKER(FN, ATTR, U, ORDER, V, W, LD, STORE)                                                       \
    ATTR __attribute__((noinline)) static double FN(double *restrict a, double *restrict b, double *restrict c, \
                                                    size_t lo, size_t hi)                                      \
    {                                                                                                          \
        enum { W_ = W };                                                                                       \
        (void)b;                                                                                               \
        size_t e = lo;                                                                                         \
        MAIN_LOOP_##ORDER((U) * W_, V t[4]; REP##U(t[u] = LD(AT(a))); __asm__ volatile("" ::: "memory");       \
                          REP##U(STORE(AT(c), t[u]));)                                                         \
        for (; e + W_ <= hi; e += W_)                                                                          \
            REP1(STORE(AT(c), LD(AT(a))));                                                                     \
        for (; e < hi; e++)                                                                                    \
            c[e] = a[e];                                                                                       \
        return 0;                                                                                              \
    }

/* The read kernel: U partial sums of vectors (U = 1 or 8), summed at the end. Unrolled, it is
 * likwid-bench's sum loop (5.2.2's sum, sum_sse, sum_avx, sum_avx512 as objdump shows them: eight
 * accumulators, each adding one of eight consecutive vectors per iteration). READ_WORKER expands
 * its U (READ_STEPS_1 or READ_STEPS_4) before READ_WORKER_ pastes it. */
#define READ_WORKER(FN, ATTR, U, ORDER, V, W, LD, ADD, ZERO, HSUM) READ_WORKER_(FN, ATTR, U, ORDER, V, W, LD, ADD, ZERO, HSUM)
#define READ_WORKER_(FN, ATTR, U, ORDER, V, W, LD, ADD, ZERO, HSUM)                                            \
    ATTR __attribute__((noinline)) static double FN(double *restrict a, double *restrict b, double *restrict c, \
                                                    size_t lo, size_t hi)                                      \
    {                                                                                                          \
        enum { W_ = W };                                                                                       \
        (void)b, (void)c;                                                                                      \
        V acc[8] = {ZERO, ZERO, ZERO, ZERO, ZERO, ZERO, ZERO, ZERO};                                           \
        size_t e = lo;                                                                                         \
        MAIN_LOOP_##ORDER((U) * W_, REP##U(acc[u] = ADD(acc[u], LD(AT(a))));)                                  \
        for (; e + W_ <= hi; e += W_)                                                                          \
            REP1(acc[u] = ADD(acc[u], LD(AT(a))));                                                             \
        double sum = ((HSUM(acc[0]) + HSUM(acc[1])) + (HSUM(acc[2]) + HSUM(acc[3]))) +                         \
                     ((HSUM(acc[4]) + HSUM(acc[5])) + (HSUM(acc[6]) + HSUM(acc[7])));                          \
        for (; e < hi; e++)                                                                                    \
            sum += a[e];                                                                                       \
        return sum;                                                                                            \
    }

/* The five store kernels of one shape with the store STORE (ordinary or non-temporal); the
 * elements after the last whole vector use ordinary stores. */
#define STORE_KERNELS(NAME, STORES, ATTR, U, ORDER, V, W, LD, STORE, SET1, ADD, MUL)                           \
    COPY_WORKER(NAME##_copy_##STORES, ATTR, U, ORDER, V, W, LD, STORE)                                         \
    STORE_WORKER(NAME##_scale_##STORES, ATTR, U, ORDER, V, W, SET1, STORE(AT(b), MUL(s, LD(AT(c)))),           \
                 b[e] = SCALAR * c[e])                                                                         \
    STORE_WORKER(NAME##_add_##STORES, ATTR, U, ORDER, V, W, SET1, STORE(AT(c), ADD(LD(AT(a)), LD(AT(b)))),     \
                 c[e] = a[e] + b[e])                                                                           \
    STORE_WORKER(NAME##_triad_##STORES, ATTR, U, ORDER, V, W, SET1,                                            \
                 STORE(AT(a), ADD(LD(AT(b)), MUL(s, LD(AT(c))))), a[e] = b[e] + SCALAR * c[e])                 \
    STORE_WORKER(NAME##_write_##STORES, ATTR, U, ORDER, V, W, SET1, STORE(AT(c), w), c[e] = FILL)

/* The eleven workers of one shape: each store kernel with ST (ordinary) and NT stores, and read. */
#define SHAPE(NAME, ATTR, U, ORDER, V, W, LD, ST, NT, SET1, ADD, MUL, ZERO, HSUM)                              \
    STORE_KERNELS(NAME, regular, ATTR, U, ORDER, V, W, LD, ST, SET1, ADD, MUL)                                 \
    STORE_KERNELS(NAME, nt, ATTR, U, ORDER, V, W, LD, NT, SET1, ADD, MUL)                                      \
    READ_WORKER(NAME##_read, ATTR, READ_STEPS_##U, ORDER, V, W, LD, ADD, ZERO, HSUM)

/* A shape with non-temporal stores only (the page order). */
#define NT_SHAPE(NAME, ATTR, U, ORDER, V, W, LD, NT, SET1, ADD, MUL)                                            \
    STORE_KERNELS(NAME, nt, ATTR, U, ORDER, V, W, LD, NT, SET1, ADD, MUL)

/* In the order of the kernel enum (copy, scale, add, triad, read, write). */
#define SHAPE_TABLE(NAME)                                                                                      \
    {{NAME##_copy_regular, NAME##_scale_regular, NAME##_add_regular, NAME##_triad_regular, NAME##_read,        \
      NAME##_write_regular},                                                                                   \
     {NAME##_copy_nt, NAME##_scale_nt, NAME##_add_nt, NAME##_triad_nt, NULL, NAME##_write_nt}}
#define NT_SHAPE_TABLE(NAME)                                                                                   \
    {{NULL, NULL, NULL, NULL, NULL, NULL},                                                                     \
     {NAME##_copy_nt, NAME##_scale_nt, NAME##_add_nt, NAME##_triad_nt, NULL, NAME##_write_nt}}

/* Scalar: vectorisation off (gcc; clang has no such attribute and the scalar shape may then be
 * vectorised: its name would be wrong, not its results). */
#if defined(__clang__)
#define SCALAR_ATTR
#else
#define SCALAR_ATTR __attribute__((optimize("no-tree-vectorize", "no-tree-loop-distribute-patterns")))
#endif
#define SC_LD(P) (*(P))
#define SC_ST(P, X) (*(P) = (X))
#define SC_SET1(X) (X)
#define SC_ADD(X, Y) ((X) + (Y))
#define SC_MUL(X, Y) ((X) * (Y))
#define SC_HSUM(X) (X)
#if defined(__x86_64__)
/* movnti: a non-temporal store from a general-purpose register, the scalar streaming store. */
#define SC_NT(P, X)                                                                                            \
    do {                                                                                                       \
        double x_ = (X);                                                                                       \
        long long bits_;                                                                                       \
        memcpy(&bits_, &x_, sizeof bits_);                                                                     \
        _mm_stream_si64((long long *)(P), bits_);                                                              \
    } while (0)
#else
#define SC_NT(P, X) SC_ST(P, X) /* never called: nt is refused off x86-64 */
#endif
SHAPE(scalar, SCALAR_ATTR, 1, straight, double, 1, SC_LD, SC_ST, SC_NT, SC_SET1, SC_ADD, SC_MUL, 0.0, SC_HSUM)
SHAPE(scalar_u, SCALAR_ATTR, 4, straight, double, 1, SC_LD, SC_ST, SC_NT, SC_SET1, SC_ADD, SC_MUL, 0.0, SC_HSUM)

#if defined(__x86_64__)
#define VEC_ATTR(ISA) __attribute__((target(ISA), optimize("no-tree-loop-distribute-patterns")))
#define SSE_ATTR VEC_ATTR("sse2")
#define X_HSUM(X) ((X)[0] + (X)[1])
SHAPE(sse, SSE_ATTR, 1, straight, __m128d, 2, _mm_load_pd, _mm_store_pd, _mm_stream_pd, _mm_set1_pd, _mm_add_pd,
      _mm_mul_pd, _mm_setzero_pd(), X_HSUM)
SHAPE(sse_u, SSE_ATTR, 4, straight, __m128d, 2, _mm_load_pd, _mm_store_pd, _mm_stream_pd, _mm_set1_pd, _mm_add_pd,
      _mm_mul_pd, _mm_setzero_pd(), X_HSUM)
#define AVX2_ATTR VEC_ATTR("avx2,fma")
#define AVX512_ATTR VEC_ATTR("avx512f")
#define Y_HSUM(X) (((X)[0] + (X)[1]) + ((X)[2] + (X)[3]))
#define Z_HSUM(X) ((((X)[0] + (X)[1]) + ((X)[2] + (X)[3])) + (((X)[4] + (X)[5]) + ((X)[6] + (X)[7])))
SHAPE(avx2, AVX2_ATTR, 1, straight, __m256d, 4, _mm256_load_pd, _mm256_store_pd, _mm256_stream_pd, _mm256_set1_pd,
      _mm256_add_pd, _mm256_mul_pd, _mm256_setzero_pd(), Y_HSUM)
SHAPE(avx2_u, AVX2_ATTR, 4, straight, __m256d, 4, _mm256_load_pd, _mm256_store_pd, _mm256_stream_pd, _mm256_set1_pd,
      _mm256_add_pd, _mm256_mul_pd, _mm256_setzero_pd(), Y_HSUM)
NT_SHAPE(avx2_p, AVX2_ATTR, 4, pages, __m256d, 4, _mm256_load_pd, _mm256_stream_pd, _mm256_set1_pd, _mm256_add_pd,
         _mm256_mul_pd)
SHAPE(avx512, AVX512_ATTR, 1, straight, __m512d, 8, _mm512_load_pd, _mm512_store_pd, _mm512_stream_pd, _mm512_set1_pd,
      _mm512_add_pd, _mm512_mul_pd, _mm512_setzero_pd(), Z_HSUM)
SHAPE(avx512_u, AVX512_ATTR, 4, straight, __m512d, 8, _mm512_load_pd, _mm512_store_pd, _mm512_stream_pd,
      _mm512_set1_pd, _mm512_add_pd, _mm512_mul_pd, _mm512_setzero_pd(), Z_HSUM)
NT_SHAPE(avx512_p, AVX512_ATTR, 4, pages, __m512d, 8, _mm512_load_pd, _mm512_stream_pd, _mm512_set1_pd,
         _mm512_add_pd, _mm512_mul_pd)
#endif

/* workers[variant][stores][kernel]; NULL: the loop variant (run_kernel's own loops), or not built. */
static const worker_fn workers[NVARIANTS][NSTORES][NKERNELS] = {
    [V_SCALAR] = SHAPE_TABLE(scalar),
    [V_SCALAR_U] = SHAPE_TABLE(scalar_u),
#if defined(__x86_64__)
    [V_SSE] = SHAPE_TABLE(sse),
    [V_SSE_U] = SHAPE_TABLE(sse_u),
    [V_AVX2] = SHAPE_TABLE(avx2),
    [V_AVX2_U] = SHAPE_TABLE(avx2_u),
    [V_AVX2_P] = NT_SHAPE_TABLE(avx2_p),
    [V_AVX512] = SHAPE_TABLE(avx512),
    [V_AVX512_U] = SHAPE_TABLE(avx512_u),
    [V_AVX512_P] = NT_SHAPE_TABLE(avx512_p),
#endif
};

/* The part of `units` units that thread t of nthreads gets with schedule(static) and no chunk
 * size, as libgomp splits it (the first units % nthreads threads one more), so that each thread
 * works on the part of the arrays it touched first. */
static void static_part(size_t units, int t, int nthreads, size_t *lo, size_t *hi)
{
    size_t q = units / (size_t)nthreads, r = units % (size_t)nthreads, ut = (size_t)t;
    *lo = ut < r ? ut * (q + 1) : ut * q + r;
    *hi = *lo + q + (ut < r);
}

/* One sequential kernel with a shape's worker: each thread its part of the arrays in whole
 * 64-byte lines (the arrays are page-aligned), the last thread also the elements after the last
 * whole line; an sfence per thread after non-temporal stores makes them visible before the timer
 * stops. Returns the read kernel's sum. */
static double run_worker(worker_fn f, double *a, double *b, double *c, size_t n, int stores)
{
    double sum = 0;
    const size_t lines = n / 8;
#pragma omp parallel reduction(+ : sum)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        size_t lo, hi;
        static_part(lines, t, nt, &lo, &hi);
        lo *= 8;
        hi = t == nt - 1 ? n : hi * 8;
        if (lo < hi)
            sum += f(a, b, c, lo, hi);
#if defined(__x86_64__)
        if (stores == S_NT)
            _mm_sfence();
#else
        (void)stores;
#endif
    }
    return sum;
}

/* One kernel, timed: the sequential pattern with the shape's worker, else (the loop shape, and
 * the strided and random patterns) the plain loops below. Those must stay loops: gcc's loop
 * distribution would turn the copy and write loops into memcpy/memset calls, whose large-block
 * code streams with non-temporal stores, so "regular" would silently be "nt". */
__attribute__((optimize("no-tree-loop-distribute-patterns")))
static double run_kernel(const arrays *A, int kernel, int stores, int variant, double *sum_out)
{
    double *restrict a = A->a, *restrict b = A->b, *restrict c = A->c;
    double sum = 0;
    worker_fn f = A->pattern == P_SEQUENTIAL ? workers[variant][stores][kernel] : NULL;
    double t0 = ns_seconds();
    if (f) {
        sum = run_worker(f, a, b, c, A->count, stores);
    } else {
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
    }
    double t = ns_seconds() - t0;
    if (sum_out)
        *sum_out = sum;
    return t;
}

/* Every shape this CPU runs with these stores, timed `rounds` times on the real arrays: the
 * shapes in turn, the order rotated each round, so that a slow phase of a busy machine falls on
 * all of them. times[r][v]: round r's seconds of shape v, INFINITY where not timed. Each kernel
 * writes one array from others it does not write, so repeating it leaves the arrays as one run
 * does; the measurement resets them anyway. */
static void time_shapes(const arrays *A, int kernel, int stores, const int *runs_here, int rounds,
                        double (*times)[NVARIANTS])
{
    int cand[NVARIANTS], ncand = 0;
    for (int v = 0; v < NVARIANTS; v++)
        if (runs_here[v] && variant_has_stores(v, stores))
            cand[ncand++] = v;
    for (int r = 0; r < rounds; r++) {
        for (int v = 0; v < NVARIANTS; v++)
            times[r][v] = INFINITY;
        for (int i = 0; i < ncand; i++) {
            int v = cand[(i + r) % ncand];
            times[r][v] = run_kernel(A, kernel, stores, v, NULL);
        }
    }
}

/* Bytes a kernel counts per pass over the visited elements. */
static double bytes_moved(const arrays *A, int kernel)
{
    return (double)kernel_words[kernel] * sizeof(double) * (double)A->count;
}

/* --variant=auto without --shapes (a run of the kernel on its own): CALIBRATION_ROUNDS timed
 * runs of each shape (time_shapes), the shape of the shortest time chosen. rate_out[v]: its best
 * MB/s, 0 where not timed. The workflow decides once per machine instead, with an interval
 * (--calibrate, `python -m numasweep calibrate`, --shapes). */
static int calibrate(const arrays *A, int kernel, int stores, const int *runs_here, double *rate_out)
{
    double times[CALIBRATION_ROUNDS][NVARIANTS];
    time_shapes(A, kernel, stores, runs_here, CALIBRATION_ROUNDS, times);
    int chosen = -1;
    double best[NVARIANTS];
    for (int v = 0; v < NVARIANTS; v++) {
        best[v] = INFINITY;
        for (int r = 0; r < CALIBRATION_ROUNDS; r++)
            best[v] = times[r][v] < best[v] ? times[r][v] : best[v];
        rate_out[v] = isfinite(best[v]) ? 1e-6 * bytes_moved(A, kernel) / best[v] : 0;
        if (isfinite(best[v]) && (chosen < 0 || best[v] < best[chosen]))
            chosen = v;
    }
    return chosen;
}

static int index_of(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name))
            return i;
    return -1;
}

/* How a shape came to be chosen, per kernel and stores: the CSV's shape_choice column. */
#define CHOICE_LEN 512
typedef char choice_text[CHOICE_LEN];

/* --shapes=FILE: lines "KERNEL STORES SHAPE" and, after '#', how the shape was chosen (that text
 * goes into the rows' shape_choice); lines that start with '#' are comments. One shape per kernel
 * and store kind this run measures; a shape this CPU does not run is refused, as is a kernel the
 * file leaves out: the file is another machine's or another build's. */
static void read_shapes(const options *o, int chosen[NSTORES][NKERNELS], choice_text choice[NSTORES][NKERNELS])
{
    const char *path = o->shapes_file;
    FILE *f = fopen(path, "r");
    if (!f)
        ns_die("--shapes=%s: %s: calibrate first (python -m numasweep calibrate) or give --variant", path,
               strerror(errno));
    int have[NSTORES][NKERNELS] = {{0}};
    char line[2048];
    for (int no = 1; fgets(line, sizeof line, f); no++) {
        if (!strchr(line, '\n') && !feof(f))
            ns_die("--shapes=%s line %d: longer than %zu characters: calibrate again (python -m numasweep calibrate)",
                   path, no, sizeof line - 2);
        char *p = line + strspn(line, " \t");
        if (*p == '#' || *p == '\n' || !*p)
            continue;
        char *why_chosen = strchr(p, '#'), kn[32], sn[32], vn[32], more[2];
        if (why_chosen)
            *why_chosen++ = 0;
        if (sscanf(p, "%31s %31s %31s %1s", kn, sn, vn, more) != 3)
            ns_die("--shapes=%s line %d: not \"KERNEL STORES SHAPE\": calibrate again (python -m numasweep "
                   "calibrate)", path, no);
        int k = index_of(kernel_names, NKERNELS, kn), st = index_of(store_names, NSTORES, sn);
        int v = index_of(variant_names, NVARIANTS, vn);
        if (k < 0 || st < 0 || v < 0)
            ns_die("--shapes=%s line %d: '%s %s %s' names no kernel, store kind or shape of this build: calibrate "
                   "again (python -m numasweep calibrate)", path, no, kn, sn, vn);
        const char *why;
        if (!variant_runs_here(v, &why) || !variant_has_stores(v, st))
            ns_die("--shapes=%s line %d: %s %s: %s: %s; calibrate on this machine (python -m numasweep calibrate)",
                   path, no, kn, sn, vn, *why ? why : "the shape has no form for these stores");
        chosen[st][k] = v;
        have[st][k] = 1;
        size_t len = 0;
        if (why_chosen) {
            why_chosen += strspn(why_chosen, " \t");
            for (; why_chosen[len] && why_chosen[len] != '\n' && len + 1 < CHOICE_LEN; len++)
                choice[st][k][len] = why_chosen[len] == '"' ? '\'' : why_chosen[len];
        }
        if (!len)
            len = (size_t)snprintf(choice[st][k], CHOICE_LEN, "from %s", path);
        choice[st][k][len < CHOICE_LEN ? len : CHOICE_LEN - 1] = 0;
    }
    fclose(f);
    for (int st = 0; st < NSTORES; st++)
        for (int k = 0; k < NKERNELS; k++)
            if (kernel_runs(o, k, st) && !have[st][k])
                ns_die("--shapes=%s names no shape for %s with %s stores: calibrate again (python -m numasweep "
                       "calibrate) or give --variant", path, kernel_names[k], store_names[st]);
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

/* --version: provenance records this text: the shapes built, and which of them this CPU runs. */
static void print_version(void)
{
    ns_print_version(NS_BUILD_COMMIT, NS_BUILD_FLAGS);
    printf("  code shapes:");
    for (int v = 0; v < NVARIANTS; v++) {
        const char *why;
        int here = variant_runs_here(v, &why);
        printf(" %s%s%s%s", variant_names[v], here ? "" : " (not here: ", why, here ? "" : ")");
    }
    printf("\n");
}

/* The arrays' starting values, written with the kernels' own schedule: the first touch, and
 * again before each pattern. */
static void fill_arrays(const arrays *A)
{
    double *a = A->a, *b = A->b, *c = A->c;
    const size_t n = A->n;
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < n; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }
}

/* The mappings behind the arrays. */
typedef struct {
    ns_buffer a, b, c, idx;
} buffers;

/* Maps the three arrays (and the random pattern's index array) with the pages and policy asked
 * for, after checking the memory they need is free, and touches them. Returns the first touch's
 * seconds. */
static double set_up_arrays(const options *o, buffers *buf, arrays *A)
{
    size_t n = o->array_bytes / sizeof(double);
    size_t bytes = n * sizeof(double);
    uint64_t need = 3 * (uint64_t)bytes + (o->patterns[P_RANDOM] ? n * sizeof(uint32_t) : 0);
    ns_check_free_memory(&o->common.policy, o->common.pages, need);
    ns_policy_apply_weights(&o->common.policy);

    buf->idx = (ns_buffer){0};
    ns_buffer_alloc(&buf->a, bytes, o->common.pages, &o->common.policy);
    ns_buffer_alloc(&buf->b, bytes, o->common.pages, &o->common.policy);
    ns_buffer_alloc(&buf->c, bytes, o->common.pages, &o->common.policy);
    *A = (arrays){.a = buf->a.addr, .b = buf->b.addr, .c = buf->c.addr, .n = n, .stride = o->stride};

    /* First touch with the kernels' own schedule, so each thread's part lands where it runs.
     * Timed: on a large machine mapping the pages dominates the set-up and varies. */
    double touch0 = ns_seconds();
    fill_arrays(A);
    double first_touch = ns_seconds() - touch0;
    ns_buffer_check_thp(&buf->a);
    ns_buffer_check_thp(&buf->b);
    ns_buffer_check_thp(&buf->c);
    if (o->patterns[P_RANDOM]) {
        ns_buffer_alloc(&buf->idx, n * sizeof(uint32_t), o->common.pages, &o->common.policy);
        A->idx = buf->idx.addr;
#pragma omp parallel for schedule(static)
        for (size_t j = 0; j < n; j++)
            A->idx[j] = 0;
        ns_rng rng;
        ns_rng_seed(&rng, o->seed);
        ns_random_order(A->idx, n, &rng);
    }
    return first_touch;
}

static void free_arrays(buffers *buf)
{
    ns_buffer_free(&buf->a);
    ns_buffer_free(&buf->b);
    ns_buffer_free(&buf->c);
    ns_buffer_free(&buf->idx);
}

/* What the header and every CSV row say about the run: where the threads run, the policy the
 * kernel reports for the arrays and where their pages are, the timer and the first touch. */
typedef struct {
    int nthreads;
    char cpus[8192], cpu_nodes[1024], host[64], mem_nodes[1024], weights[1024], fractions[4096];
    ns_observed_policy seen;
    double resolution, first_touch;
} run_info;

/* The threads' distinct CPUs, ascending, and their nodes in that order. */
static void find_threads(run_info *info)
{
    int nthreads = omp_get_max_threads();
    int *thread_cpu = calloc((size_t)nthreads, sizeof *thread_cpu);
#pragma omp parallel
    {
#pragma omp single
        nthreads = omp_get_num_threads();
        thread_cpu[omp_get_thread_num()] = ns_current_cpu();
    }
    info->nthreads = nthreads;
    qsort(thread_cpu, (size_t)nthreads, sizeof *thread_cpu, cmp_int);
    int ncpu = 0, nodes[NS_MAX_NODES], nn = 0;
    for (int i = 0; i < nthreads; i++)
        if (!ncpu || thread_cpu[ncpu - 1] != thread_cpu[i])
            thread_cpu[ncpu++] = thread_cpu[i];
    ns_format_cpulist(thread_cpu, ncpu, info->cpus, sizeof info->cpus);
    for (int i = 0; i < ncpu; i++) {
        int node = ns_node_of_cpu(thread_cpu[i]), seen = 0;
        for (int j = 0; j < nn; j++)
            seen |= nodes[j] == node;
        if (!seen && nn < NS_MAX_NODES)
            nodes[nn++] = node;
    }
    ns_format_int_list(nodes, nn, info->cpu_nodes, sizeof info->cpu_nodes);
    free(thread_cpu);
}

/* Where the threads run and where the pages are. */
static void find_run_info(const options *o, const arrays *A, double first_touch, run_info *info)
{
    find_threads(info);
    ns_hostname(info->host, sizeof info->host);
    ns_placement placement;
    ns_placement_clear(&placement);
    size_t bytes = A->n * sizeof(double), page = ns_pages_bytes(o->common.pages);
    ns_placement_query(&placement, A->a, bytes, page);
    ns_placement_query(&placement, A->b, bytes, page);
    ns_placement_query(&placement, A->c, bytes, page);
    ns_placement_format(&placement, info->fractions, sizeof info->fractions);
    ns_policy_observe(A->a, &info->seen);
    ns_format_int_list(info->seen.nodes, info->seen.nnodes, info->mem_nodes, sizeof info->mem_nodes);
    ns_format_int_list(info->seen.weights, info->seen.nweights, info->weights, sizeof info->weights);
    info->resolution = ns_timer_resolution();
    info->first_touch = first_touch;
}

/* The shapes this CPU runs; with --variant=auto, the fastest of them per kernel and stores on
 * these arrays (sequential pattern), and every shape's calibration rate in MB/s (0 where not
 * timed). */
typedef struct {
    int runs_here[NVARIANTS];
    int calibrated;
    int chosen[NSTORES][NKERNELS];
    choice_text choice[NSTORES][NKERNELS]; /* with --shapes: how the calibration chose */
    double rate[NSTORES][NKERNELS][NVARIANTS];
} shapes;

static void find_shapes(const options *o, arrays *A, shapes *sh)
{
    for (int v = 0; v < NVARIANTS; v++) {
        const char *why;
        sh->runs_here[v] = variant_runs_here(v, &why);
    }
    if (o->shapes_file) {
        sh->calibrated = 0;
        read_shapes(o, sh->chosen, sh->choice);
        return;
    }
    sh->calibrated = o->variant_auto && o->patterns[P_SEQUENTIAL];
    if (!sh->calibrated)
        return;
    A->pattern = P_SEQUENTIAL;
    A->count = A->n;
    for (int st = 0; st < NSTORES; st++)
        for (int k = 0; k < NKERNELS; k++)
            if (kernel_runs(o, k, st))
                sh->chosen[st][k] = calibrate(A, k, st, sh->runs_here, sh->rate[st][k]);
}

static void print_calibration(const options *o, const shapes *sh)
{
    printf("  calibration: best MB/s of %d run%s of each shape per kernel, the fastest chosen\n", CALIBRATION_ROUNDS,
           CALIBRATION_ROUNDS == 1 ? "" : "s");
    for (int st = 0; st < NSTORES; st++)
        for (int k = 0; k < NKERNELS; k++) {
            if (!kernel_runs(o, k, st))
                continue;
            printf("    %-6s %-7s", kernel_names[k], store_names[st]);
            for (int v = 0; v < NVARIANTS; v++)
                if (sh->rate[st][k][v] > 0)
                    printf(" %s %.0f", variant_names[v], sh->rate[st][k][v]);
            printf("  -> %s\n", variant_names[sh->chosen[st][k]]);
        }
}

/* What runs where and how it is counted, the calibration, and the table's column titles. */
static void print_header(const options *o, const arrays *A, const run_info *info, const shapes *sh)
{
    char size_text[32];
    ns_format_size(A->n * sizeof(double), size_text, sizeof size_text);
    char names[256] = "";
    for (int v = 0; v < NVARIANTS; v++)
        if (o->variant_auto ? sh->runs_here[v] : o->variants[v])
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", *names ? " " : "",
                     variant_names[v]);
    char from[300];
    snprintf(from, sizeof from, "from %s, among", o->shapes_file ? o->shapes_file : "");
    printf("numa_bandwidth: STREAM kernels, %d threads on CPUs %s (nodes %s), OMP_PROC_BIND=%s OMP_PLACES=%s\n"
           "  3 arrays of %s (%zu doubles) each, %d repetitions (first not counted), pages %s\n"
           "  policy %s nodes %s%s%s, pages found on %s (move_pages, <= %d pages per array)\n"
           "  bytes counted as STREAM does: copy/scale 16, add/triad 24, read/write 8 per element;\n"
           "  no write-allocate traffic, no index array. Timer resolution %.0f ns. First touch %.3f s.\n"
           "  stores: %s (nt = non-temporal); gcc's STREAM runs copy as memcpy,\n"
           "  which streams above glibc's threshold: compare its copy with our nt copy there.\n"
           "  code shapes (sequential pattern): %s: %s\n",
           info->nthreads, info->cpus, info->cpu_nodes, getenv("OMP_PROC_BIND") ? getenv("OMP_PROC_BIND") : "unset",
           getenv("OMP_PLACES") ? getenv("OMP_PLACES") : "unset", size_text, A->n, o->ntimes,
           ns_pages_name(o->common.pages), info->seen.name, *info->mem_nodes ? info->mem_nodes : "-",
           *info->weights ? " weights " : "", info->weights, info->fractions, NS_PLACEMENT_MAX_SAMPLES,
           info->resolution * 1e9, info->first_touch,
           o->stores[S_REGULAR] && o->stores[S_NT] ? "regular and nt" : o->stores[S_NT] ? "nt" : "regular",
           o->shapes_file ? from : o->variant_auto ? "auto, calibrated among" : "asked for", names);
    if (sh->calibrated)
        print_calibration(o, sh);
    printf("%-8s %-7s %-13s %-11s %8s %12s %10s %12s %12s %12s %s\n", "Kernel", "Stores", "Variant", "Pattern",
           "Stride", "Best MB/s", "Bytes/elem", "Avg time", "Min time", "Max time", "Validation");
    fflush(stdout);
}

#define MAX_RUNS (NSTORES * NVARIANTS)

/* The runs of one pattern. A run: one store kind with one shape (V_AUTO: each kernel its
 * calibrated shape), its own sequence of repetitions, as a separate STREAM run would be: with
 * runs interleaved, non-temporal stores would meet the lines a regular kernel before them left
 * in the cache. */
typedef struct {
    int n;
    int stores[MAX_RUNS], variant[MAX_RUNS];
    /* least_on_cpu[r]: the least share of run r's counted repetitions' wall time (every
     * kernel's) any thread ran on its CPU */
    double least_on_cpu[MAX_RUNS];
    double *times; /* times[(t * NKERNELS + k) * MAX_RUNS + r], see time_of */
} runs;

/* Repetition t's time of kernel k in run r. */
static double *time_of(const runs *R, int t, int k, int r) { return &R->times[(t * NKERNELS + k) * MAX_RUNS + r]; }

/* The shape kernel k runs in run r. */
static int run_shape(const runs *R, const shapes *sh, int r, int k)
{
    return R->variant[r] == V_AUTO ? sh->chosen[R->stores[r]][k] : R->variant[r];
}

/* The runs of pattern p. The strided and random patterns run regular stores with the plain loop;
 * *nt_skipped and *variant_skipped are set when that leaves out stores or shapes asked for. */
static void plan_runs(const options *o, int p, runs *R, int *nt_skipped, int *variant_skipped)
{
    R->n = 0;
    for (int st = 0; st < NSTORES; st++) {
        if (!o->stores[st])
            continue;
        if (p != P_SEQUENTIAL) {
            *nt_skipped |= st == S_NT;
            if (st == S_REGULAR) {
                for (int v = 0; v < NVARIANTS; v++)
                    *variant_skipped |= !o->variant_auto && v != V_LOOP && o->variants[v];
                R->stores[R->n] = st, R->variant[R->n++] = V_LOOP;
            }
            continue;
        }
        if (o->variant_auto) {
            R->stores[R->n] = st, R->variant[R->n++] = V_AUTO;
            continue;
        }
        for (int v = 0; v < NVARIANTS; v++)
            if (o->variants[v] && variant_has_stores(v, st))
                R->stores[R->n] = st, R->variant[R->n++] = v;
    }
}

/* Every run's repetitions of the kernels, timed, with the least share of time on CPU; the read
 * kernel's last sum and the value it must have in *read_sum and *expected_read. */
static void measure_runs(const options *o, const arrays *A, const shapes *sh, runs *R, ns_oncpu_mark *marks,
                         double *read_sum, double *expected_read)
{
    for (int r = 0; r < R->n; r++) {
        int st = R->stores[r];
        R->least_on_cpu[r] = 1.0;
        for (int t = 0; t < o->ntimes; t++) {
            if (t == 1) /* the first repetition is not counted */
                ns_oncpu_team_begin(marks);
            for (int k = 0; k < NKERNELS; k++) {
                if (!kernel_runs(o, k, st))
                    continue;
                if (k == K_READ)
                    *expected_read = A->a[A->pattern == P_RANDOM ? A->idx[0] : 0] * (double)A->count;
                *time_of(R, t, k, r) = run_kernel(A, k, st, run_shape(R, sh, r, k), k == K_READ ? read_sum : NULL);
            }
        }
        ns_oncpu_team_least(marks, &R->least_on_cpu[r]);
    }
}

/* Each kernel's rows of one pattern, in the CSV and the table, with the warnings they call for. */
static void report_rows(const options *o, const arrays *A, const run_info *info, const shapes *sh, const runs *R,
                        int valid, ns_text *csv)
{
    int p = A->pattern;
    long stride = p == P_SEQUENTIAL ? 1 : p == P_STRIDED ? o->stride : 0;
    for (int k = 0; k < NKERNELS; k++) {
        for (int r = 0; r < R->n; r++) {
            int st = R->stores[r];
            if (!kernel_runs(o, k, st))
                continue;
            int v = run_shape(R, sh, r, k);
            double best = INFINITY, worst = 0, total = 0;
            for (int t = 1; t < o->ntimes; t++) {
                double x = *time_of(R, t, k, r);
                best = x < best ? x : best;
                worst = x > worst ? x : worst;
                total += x;
            }
            double avg = total / (o->ntimes - 1);
            double moved = (double)kernel_words[k] * sizeof(double) * (double)A->count;
            double on_cpu = R->least_on_cpu[r];
            if (on_cpu < NS_RETAKE_BELOW)
                ns_warn("a thread ran only %.0f%% of the repetitions' time on its CPU in %s %s: its CPU is shared "
                        "with other work, the bandwidth is low", 100 * on_cpu, kernel_names[k], pattern_names[p]);
            if (best < 20 * info->resolution)
                ns_warn("%s %s took %.0f ns, under 20 timer ticks: use a larger --array-size", kernel_names[k],
                        pattern_names[p], best * 1e9);
            const char *how = p != P_SEQUENTIAL ? "the plain loop: the strided and random patterns run only it"
                              : o->shapes_file ? sh->choice[st][k]
                              : R->variant[r] == V_AUTO ? "the fastest of one timed run of each shape (--variant=auto)"
                                                        : "named (--variant)";
            ns_text_printf(csv,
                           "%s,%s,%ld,%d,\"%s\",\"%s\",%s,\"%s\",\"%s\",%s,%zu,%.0f,%.1f,%.1f,%.1f,%d,%s,\"%s\",%s,%s,%d,"
                           "%.4f,%.0f,%s,%.1f,\"%s\"\n",
                           kernel_names[k], pattern_names[p], stride, info->nthreads, info->cpus, info->cpu_nodes,
                           info->seen.name, info->mem_nodes, info->weights, ns_pages_name(o->common.pages),
                           A->n * sizeof(double), moved, 1e-6 * moved / best, 1e-6 * moved / avg,
                           1e-6 * moved / worst, o->ntimes, valid ? "pass" : "fail", info->fractions, info->host,
                           store_names[st], kernel_words[k] * (int)sizeof(double), info->first_touch,
                           best / info->resolution, variant_names[v], 100 * on_cpu, how);
            if (!o->common.quiet) { /* flushed: a log redirected to a file shows each row as it ends */
                printf("%-8s %-7s %-13s %-11s %8ld %12.1f %10d %12.6f %12.6f %12.6f %s\n", kernel_names[k],
                       store_names[st], variant_names[v], pattern_names[p], stride, 1e-6 * moved / best,
                       kernel_words[k] * (int)sizeof(double), avg, best, worst, valid ? "pass" : "FAIL");
                fflush(stdout);
            }
        }
    }
}

/* --calibrate=N: every shape of every kernel and store kind timed in N rounds (time_shapes), one
 * CSV row per round and shape; `python -m numasweep calibrate` decides from them. */
static void calibration_rows(const options *o, arrays *A, const run_info *info, ns_text *csv)
{
    int runs_here[NVARIANTS];
    for (int v = 0; v < NVARIANTS; v++) {
        const char *why;
        runs_here[v] = variant_runs_here(v, &why);
    }
    A->pattern = P_SEQUENTIAL;
    A->count = A->n;
    ns_text_printf(csv, "kernel,stores,shape,round,seconds,mb_s,threads,cpus,host,array_bytes,bytes_per_iter\n");
    double (*times)[NVARIANTS] = malloc((size_t)o->calibrate_rounds * sizeof *times);
    if (!o->common.quiet)
        printf("numa_bandwidth: calibration, %d rounds of every shape, %d threads on CPUs %s, 3 arrays of %zu "
               "doubles\n%-8s %-7s %-13s %s\n", o->calibrate_rounds, info->nthreads, info->cpus, A->n, "Kernel",
               "Stores", "Variant", "MB/s per round");
    for (int st = 0; st < NSTORES; st++)
        for (int k = 0; k < NKERNELS; k++) {
            if (!kernel_runs(o, k, st))
                continue;
            time_shapes(A, k, st, runs_here, o->calibrate_rounds, times);
            for (int v = 0; v < NVARIANTS; v++) {
                if (!isfinite(times[0][v]))
                    continue;
                if (!o->common.quiet)
                    printf("%-8s %-7s %-13s", kernel_names[k], store_names[st], variant_names[v]);
                for (int r = 0; r < o->calibrate_rounds; r++) {
                    double rate = 1e-6 * bytes_moved(A, k) / times[r][v];
                    ns_text_printf(csv, "%s,%s,%s,%d,%.9f,%.1f,%d,\"%s\",%s,%zu,%.0f\n", kernel_names[k],
                                   store_names[st], variant_names[v], r, times[r][v], rate, info->nthreads,
                                   info->cpus, info->host, A->n * sizeof(double), bytes_moved(A, k));
                    if (!o->common.quiet)
                        printf(" %.0f", rate);
                }
                if (!o->common.quiet)
                    printf("\n");
            }
        }
    free(times);
    if (!o->common.quiet)
        fflush(stdout);
}

int main(int argc, char **argv)
{
    ns_set_program("numa_bandwidth");
    options o;
    parse(argc, argv, &o);
    if (o.common.version && !o.common.help && !o.common.check_args) {
        print_version();
        return 0;
    }
    ns_common_info(&o.common, usage, NS_BUILD_COMMIT, NS_BUILD_FLAGS);
    if (o.threads)
        omp_set_num_threads(o.threads);

    buffers buf;
    arrays A;
    double first_touch = set_up_arrays(&o, &buf, &A);
    run_info info;
    find_run_info(&o, &A, first_touch, &info);
    ns_text csv = {0};
    if (o.calibrate_rounds) {
        calibration_rows(&o, &A, &info, &csv);
        if (o.common.csv)
            ns_csv_write(o.common.csv, &csv);
        ns_text_free(&csv);
        free_arrays(&buf);
        return 0;
    }
    shapes sh;
    find_shapes(&o, &A, &sh);
    if (!o.common.quiet)
        print_header(&o, &A, &info, &sh);

    ns_text_printf(&csv, "kernel,pattern,stride,threads,cpus,cpu_nodes,policy,mem_nodes,weights,page_size,"
                         "array_bytes,bytes_per_iter,best_mb_s,avg_mb_s,min_mb_s,ntimes,validation,page_fractions,"
                         "host,stores,bytes_per_element,first_touch_s,timer_ticks,variant,on_cpu_pct,shape_choice\n");
    runs R;
    R.times = malloc((size_t)o.ntimes * NKERNELS * MAX_RUNS * sizeof *R.times);
    ns_oncpu_mark *marks = malloc((size_t)info.nthreads * sizeof *marks);
    int nt_skipped = 0, variant_skipped = 0;
    int failed = 0;
    for (int p = 0; p < NPATTERNS; p++) {
        if (!o.patterns[p])
            continue;
        fill_arrays(&A); /* fresh values so each pattern's validation starts from the same state */
        A.pattern = p;
        A.count = p == P_STRIDED ? (A.n + (size_t)o.stride - 1) / (size_t)o.stride : A.n;
        plan_runs(&o, p, &R, &nt_skipped, &variant_skipped);
        double read_sum = 0, expected_read = 0;
        measure_runs(&o, &A, &sh, &R, marks, &read_sum, &expected_read);
        int valid = validate(&o, &A, o.ntimes * R.n, read_sum, expected_read);
        failed |= !valid;
        report_rows(&o, &A, &info, &sh, &R, valid, &csv);
        if (o.common.csv)
            ns_csv_write(o.common.csv, &csv); /* after every pattern: nothing measured is lost */
    }
    if (nt_skipped)
        ns_warn("--stores=nt runs the sequential pattern only: the strided and random rows are regular stores");
    if (variant_skipped)
        ns_warn("--variant applies to the sequential pattern: the strided and random rows run the plain loop "
                "(variant loop)");
    if (!o.common.quiet)
        printf("Validation: %s (final arrays vs. the kernels replayed on scalars, average relative error <= 1e-13)\n",
               failed ? "FAILED" : "passed");
    free(R.times);
    free(marks);
    ns_text_free(&csv);
    free_arrays(&buf);
    return failed ? 1 : 0;
}
