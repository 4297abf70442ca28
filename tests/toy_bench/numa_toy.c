/* numa_toy: the smallest kernel of the contract (docs/INTERFACES.md), used by tests/toy_bench to
 * add a benchmark the way docs/ARCHITECTURE.md says: for each --size, the time to write a buffer
 * of that many bytes, --samples times; one CSV row per size (host,size_bytes,ns_per_kib_median,
 * samples), written atomically with the shared module's ns_csv_write. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "numasweep.h"

#define MAX_SIZES 16

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    ns_set_program("numa_toy");
    const char *csv = NULL;
    long sizes[MAX_SIZES];
    int nsizes = 0, samples = 5, check_only = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--version") == 0) {
            ns_print_version(NS_BUILD_COMMIT, NS_BUILD_FLAGS);
            return 0;
        } else if (strcmp(arg, "--help") == 0) {
            printf("usage: numa_toy --size=LIST [--samples=N] [--csv=PATH] [--quiet] [--check-args] [--version]\n");
            return 0;
        } else if (strcmp(arg, "--check-args") == 0) {
            check_only = 1;
        } else if (strcmp(arg, "--quiet") == 0) {
            quiet = 1;
        } else if (strncmp(arg, "--csv=", 6) == 0) {
            csv = arg + 6;
        } else if (strncmp(arg, "--samples=", 10) == 0) {
            samples = atoi(arg + 10);
            if (samples < 1 || samples > 1000)
                ns_die("--samples must be from 1 to 1000");
        } else if (strncmp(arg, "--size=", 7) == 0) {
            for (char *s = (char *)arg + 7; *s && nsizes < MAX_SIZES; s += *s == ',') {
                char *end;
                sizes[nsizes++] = strtol(s, &end, 10);
                if (end == s || sizes[nsizes - 1] < 1024 || (*end && *end != ','))
                    ns_die("--size takes a comma list of byte counts of at least 1024, e.g. --size=4096,65536");
                s = end;
            }
        } else {
            ns_die("unknown option '%s'; see --help", arg);
        }
    }
    if (nsizes == 0)
        ns_die("--size is required, e.g. --size=4096,65536");
    if (check_only)
        return 0;
    if (csv)
        ns_csv_check_path(csv);
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    *strchrnul(host, '.') = '\0';

    ns_text out = {0};
    ns_text_append(&out, "host,size_bytes,ns_per_kib_median,samples\n");
    double taken[1000];
    for (int k = 0; k < nsizes; k++) {
        char *buf = malloc(sizes[k]);
        if (!buf)
            ns_die("out of memory; give a smaller --size");
        memset(buf, 1, sizes[k]); /* first touch outside the samples */
        for (int s = 0; s < samples; s++) {
            uint64_t t0 = ns_nanoseconds();
            memset(buf, s + 2, sizes[k]);
            __asm__ __volatile__("" : : "r"(buf) : "memory");
            taken[s] = (ns_nanoseconds() - t0) / (sizes[k] / 1024.0);
        }
        free(buf);
        qsort(taken, samples, sizeof taken[0], by_value);
        double median = samples % 2 ? taken[samples / 2] : (taken[samples / 2 - 1] + taken[samples / 2]) / 2;
        if (median <= 0)
            median = 1e-3; /* a timer too coarse for the size: the smallest positive value */
        ns_text_printf(&out, "%s,%ld,%.4f,%d\n", host, sizes[k], median, samples);
        if (!quiet)
            printf("size %ld: %.4f ns per KiB\n", sizes[k], median);
        if (csv)
            ns_csv_write(csv, &out);
    }
    ns_text_free(&out);
    return 0;
}
