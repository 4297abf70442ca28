#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns_csv.h"
#include "ns_error.h"
#include "ns_options.h"
#include "ns_size.h"
#include "ns_topo.h"

void ns_common_defaults(ns_common_options *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->policy.kind = NS_POLICY_INHERIT;
    opts->pages = NS_PAGES_4K;
}

int ns_sampling_option(ns_sampling *sampling, int code, const char *arg)
{
    switch (code) {
    case NS_OPT_SAMPLES: sampling->samples = (int)ns_int_arg("--samples", arg, 1, 1000); return 1;
    case NS_OPT_MIN_TIME: sampling->min_time = ns_double_arg("--min-time", arg, 1e-4, 3600); return 1;
    case NS_OPT_SEED: sampling->seed = (uint64_t)ns_int_arg("--seed", arg, 0, 1L << 62); return 1;
    default: return 0;
    }
}

int ns_kernel_getopt(int argc, char *const argv[], const struct option *longopts, ns_common_options *common, ns_sampling *sampling)
{
    int c;
    while ((c = ns_getopt(argc, argv, longopts)) != -1)
        if (!ns_common_option(common, c, optarg) && !ns_sampling_option(sampling, c, optarg))
            return c;
    return -1;
}

int ns_common_option(ns_common_options *opts, int code, const char *arg)
{
    int v;
    switch (code) {
    case NS_OPT_CSV:
        opts->csv = arg;
        return 1;
    case NS_OPT_POLICY:
        if ((v = ns_policy_kind_parse(arg)) < 0)
            ns_die("--policy=%s: unknown policy: use inherit, bind, preferred, interleave or weighted", arg);
        opts->policy.kind = (ns_policy_kind)v;
        return 1;
    case NS_OPT_MEM_NODES:
        opts->policy.nnodes = ns_int_list_arg("--mem-nodes", arg, opts->policy.nodes, NS_MAX_NODES, 0, NS_MAX_NODES - 1);
        opts->mem_nodes_given = 1;
        return 1;
    case NS_OPT_WEIGHTS:
        opts->policy.nweights = ns_int_list_arg("--weights", arg, opts->policy.weights, NS_MAX_NODES, 1, 255);
        opts->weights_given = 1;
        return 1;
    case NS_OPT_PAGES:
        if ((v = ns_pages_parse(arg)) < 0)
            ns_die("--pages=%s: unknown page size: use 4k, thp, 2m or 1g", arg);
        opts->pages = (ns_pages)v;
        return 1;
    case NS_OPT_QUIET:
        opts->quiet = 1;
        return 1;
    case NS_OPT_HELP:
        opts->help = 1;
        return 1;
    case NS_OPT_VERSION:
        opts->version = 1;
        return 1;
    case NS_OPT_CHECK_ARGS:
        opts->check_args = 1;
        return 1;
    default:
        return 0;
    }
}

void ns_common_finish(ns_common_options *opts)
{
    /* The workflow asks each kernel to parse a sweep's arguments before any job runs, often on
     * another machine (a login node) than the one measured: stop before the checks that look
     * at this machine's nodes, weights and files. */
    if (opts->check_args)
        exit(0);
    ns_policy_validate(&opts->policy);
    if (opts->csv)
        ns_csv_check_path(opts->csv);
}

const char *ns_common_help(void)
{
    return "Shared options:\n"
           "  --csv=PATH            write results as CSV to PATH (its folder must exist; written to a\n"
           "                        temporary name and renamed, rewritten after each finished step)\n"
           "  --policy=P            inherit (default: what numactl set), bind, preferred, interleave,\n"
           "                        weighted (weighted interleave, Linux >= 6.9)\n"
           "  --mem-nodes=LIST      nodes for the policy, e.g. 0 or 0,3\n"
           "  --weights=LIST        weighted only: one weight 1..255 per node; written to\n"
           "                        /sys/kernel/mm/mempolicy/weighted_interleave/nodeN if they differ\n"
           "                        (root) and restored at exit\n"
           "  --pages=4k|thp|2m|1g  page size: 4k (MADV_NOHUGEPAGE, default), thp (MADV_HUGEPAGE),\n"
           "                        2m or 1g (hugetlbfs pages reserved beforehand)\n"
           "  --quiet               only errors on stderr and the CSV; no table\n"
           "  --version             commit and build flags\n"
           "  --check-args          parse the options and exit 0 (2 with the usual one line on a bad\n"
           "                        one); nothing is measured and this machine is not looked at\n"
           "  --help                this text\n"
           "Sizes: a plain number is MiB; K, M, G suffixes are binary; A-B is every power of two\n"
           "from A to B MiB. A bad invocation prints one line and exits 2.\n";
}

int ns_getopt(int argc, char *const argv[], const struct option *longopts)
{
    opterr = 0;
    int prev = optind;
    int c = getopt_long(argc, argv, ":", longopts, NULL);
    if (c == '?') {
        const char *arg = optind > prev ? argv[optind - 1] : argv[prev];
        if (optopt)
            for (const struct option *o = longopts; o->name; o++)
                if (o->val == optopt)
                    ns_die("option '--%s' takes no value (got '%s'); see --help", o->name, arg);
        ns_die("unknown option '%s'; see --help", arg);
    }
    if (c == ':') {
        const char *arg = argv[optind - 1];
        ns_die("option '%s' needs a value (e.g. %s=VALUE); see --help", arg, arg);
    }
    return c;
}

void ns_no_positional(int argc, char *const argv[])
{
    if (optind < argc)
        ns_die("unexpected argument '%s': options are written --name=value; see --help", argv[optind]);
}

void ns_print_version(const char *commit, const char *build_flags)
{
    printf("%s numasweep %s\n  built with: %s\n", ns_program(), commit, build_flags);
}

void ns_common_info(const ns_common_options *opts, void (*usage)(void), const char *commit, const char *build_flags)
{
    /* Kernels that call this before their checks of the machine (allowed CPUs, online nodes)
     * stop here with --check-args; the others stop in ns_common_finish. */
    if (opts->check_args)
        exit(0);
    if (opts->help)
        usage();
    else if (opts->version)
        ns_print_version(commit, build_flags);
    else
        return;
    exit(0);
}

int ns_node_arg(const char *option, const char *text, int check_only)
{
    int node = (int)ns_int_arg(option, text, 0, NS_MAX_NODES - 1);
    if (!check_only && !ns_node_online(node)) {
        int nodes[NS_MAX_NODES];
        char list[1024];
        ns_format_cpulist(nodes, ns_online_nodes(nodes, NS_MAX_NODES), list, sizeof list);
        ns_die("%s: node %d does not exist (online nodes: %s)", option, node, list);
    }
    return node;
}

int ns_threads_from_env(void)
{
    const char *env = getenv("OMP_NUM_THREADS");
    if (!env || !*env)
        return 0;
    char first[32];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(env, ","), env);
    return (int)ns_int_arg("OMP_NUM_THREADS", first, 1, NS_MAX_CPUS);
}

void ns_names_arg(const char *option, const char *text, const char **names, int n, int *flags, const char *hint)
{
    memset(flags, 0, (size_t)n * sizeof *flags);
    char *copy = strdup(text), *save = NULL;
    int any = 0;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int found = -1;
        for (int i = 0; i < n; i++)
            if (!strcmp(t, names[i]))
                found = i;
        if (found < 0)
            ns_die("%s: unknown %s '%s': use %s", option, option + 2, t, hint);
        flags[found] = any = 1;
    }
    free(copy);
    if (!any)
        ns_die("%s: empty list: use %s", option, hint);
}

