/* Options every kernel shares (docs/INTERFACES.md): --csv, --policy, --mem-nodes, --weights,
 * --pages, --quiet, --help, --version, --check-args. Parsing is strict: unknown options,
 * missing values and stray arguments end the program with one line (exit 2). */
#ifndef NS_OPTIONS_H
#define NS_OPTIONS_H

#include <getopt.h>
#include <stdint.h>

#include "ns_buffer.h"
#include "ns_policy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* getopt_long codes of the shared options; kernel-specific codes start at NS_OPT_KERNEL. */
enum {
    NS_OPT_CSV = 1000,
    NS_OPT_POLICY,
    NS_OPT_MEM_NODES,
    NS_OPT_WEIGHTS,
    NS_OPT_PAGES,
    NS_OPT_QUIET,
    NS_OPT_HELP,
    NS_OPT_VERSION,
    NS_OPT_CHECK_ARGS,
    NS_OPT_KERNEL = 1100
};

/* Put first in a kernel's struct option array. */
#define NS_COMMON_LONG_OPTIONS                                   \
    {"csv", required_argument, 0, NS_OPT_CSV},                   \
    {"policy", required_argument, 0, NS_OPT_POLICY},             \
    {"mem-nodes", required_argument, 0, NS_OPT_MEM_NODES},       \
    {"weights", required_argument, 0, NS_OPT_WEIGHTS},           \
    {"pages", required_argument, 0, NS_OPT_PAGES},               \
    {"quiet", no_argument, 0, NS_OPT_QUIET},                     \
    {"help", no_argument, 0, NS_OPT_HELP},                       \
    {"version", no_argument, 0, NS_OPT_VERSION},                 \
    {"check-args", no_argument, 0, NS_OPT_CHECK_ARGS}

/* One kernel option taking a value, and the end of a struct option array. */
#define NS_ARG(name, code) {name, required_argument, 0, code}
#define NS_FLAG(name, code) {name, no_argument, 0, code}
#define NS_OPTIONS_END {0, 0, 0, 0}

/* Sampling options of the kernels that repeat a measurement (numa_loaded_latency, numa_c2c,
 * numa_mix_bandwidth): --samples=N (1..1000), --min-time=SEC (each sample's least duration),
 * --seed=N. Put NS_SAMPLING_LONG_OPTIONS after NS_COMMON_LONG_OPTIONS; defaults are the kernel's. */
enum { NS_OPT_SAMPLES = NS_OPT_KERNEL - 50, NS_OPT_MIN_TIME, NS_OPT_SEED };

#define NS_SAMPLING_LONG_OPTIONS                                 \
    {"samples", required_argument, 0, NS_OPT_SAMPLES},           \
    {"min-time", required_argument, 0, NS_OPT_MIN_TIME},         \
    {"seed", required_argument, 0, NS_OPT_SEED}

typedef struct {
    int samples;
    double min_time;
    uint64_t seed;
} ns_sampling;

/* Handles a sampling option code; returns 1 if it was one, 0 otherwise. */
int ns_sampling_option(ns_sampling *sampling, int code, const char *arg);

typedef struct {
    const char *csv;      /* NULL: no CSV */
    ns_policy policy;
    ns_pages pages;
    int quiet;
    int help;
    int version;
    int check_args; /* --check-args: parse, check what needs no system, exit 0 */
    int mem_nodes_given;
    int weights_given;
} ns_common_options;

void ns_common_defaults(ns_common_options *opts);
/* Handles a shared option code; returns 1 if it was one, 0 otherwise. */
int ns_common_option(ns_common_options *opts, int code, const char *arg);
/* ns_getopt that handles the shared and the sampling options itself: returns the next
 * kernel-specific option code (its value in optarg), -1 at the end. */
int ns_kernel_getopt(int argc, char *const argv[], const struct option *longopts, ns_common_options *common, ns_sampling *sampling);
/* After parsing: with --check-args, exits 0 here (the options parsed and their values are in
 * range; nothing that depends on this machine is looked at). Otherwise checks the combination
 * (policy vs nodes vs weights, CSV folder, weighted interleave support, node existence) and
 * ends the program on a problem. Does not write the weights; call ns_policy_apply_weights when
 * about to allocate. */
void ns_common_finish(ns_common_options *opts);
/* Help lines for the shared options. */
const char *ns_common_help(void);

/* getopt_long with opterr off; turns '?' and ':' into one-line errors naming the option. */
int ns_getopt(int argc, char *const argv[], const struct option *longopts);
/* Ends the program if arguments remain after the options. */
void ns_no_positional(int argc, char *const argv[]);

/* "PROGRAM numasweep COMMIT\n  built with: FLAGS" (provenance for the workflow). */
void ns_print_version(const char *commit, const char *build_flags);
/* After parsing: --help prints usage(), --version the provenance; either then exits 0, as
 * --check-args does. */
void ns_common_info(const ns_common_options *opts, void (*usage)(void), const char *commit, const char *build_flags);

/* A comma list of names out of names[0..n): flags[i] = 1 for each one named. Ends the program
 * on an unknown name or an empty list ("OPTION: unknown KIND 'x': use HINT"). */
void ns_names_arg(const char *option, const char *text, const char **names, int n, int *flags, const char *hint);

/* A node id option (--src=N): 0..NS_MAX_NODES-1, and online unless check_only (--check-args given
 * before it, which must not look at this machine); ends the program naming the online nodes. */
int ns_node_arg(const char *option, const char *text, int check_only);

/* Thread count from OMP_NUM_THREADS (its first entry), 0 when unset; ends the program when it
 * is not a positive whole number. */
int ns_threads_from_env(void);

#ifdef __cplusplus
}
#endif
#endif
