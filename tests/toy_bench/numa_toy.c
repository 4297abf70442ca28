/* numa_toy: the smallest kernel of the contract (docs/INTERFACES.md), used by tests/toy_bench to
 * add a benchmark the way docs/ARCHITECTURE.md says: for each --size, the time to write a buffer
 * of that many bytes, --samples times; one CSV row per size (host,size_bytes,ns_per_kib_median,
 * samples), written atomically with the shared module's ns_csv_write. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ns_csv.h"

#ifndef NS_BUILD_COMMIT
#define NS_BUILD_COMMIT "unknown"
#endif
#ifndef NS_BUILD_FLAGS
#define NS_BUILD_FLAGS "unknown"
#endif

#define MAX_SIZES 16

static void fail(const char *what)
{
    fprintf(stderr, "numa_toy: error: %s\n", what);
    exit(2);
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *csv = NULL;
    long sizes[MAX_SIZES];
    int nsizes = 0, samples = 5;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--version") == 0) {
            printf("numa_toy numasweep %s\nbuilt with: %s\n", NS_BUILD_COMMIT, NS_BUILD_FLAGS);
            return 0;
        } else if (strncmp(arg, "--csv=", 6) == 0) {
            csv = arg + 6;
        } else if (strncmp(arg, "--samples=", 10) == 0) {
            samples = atoi(arg + 10);
            if (samples < 1 || samples > 1000)
                fail("--samples must be from 1 to 1000");
        } else if (strncmp(arg, "--size=", 7) == 0) {
            for (char *s = (char *)arg + 7; *s && nsizes < MAX_SIZES; s += *s == ',') {
                char *end;
                sizes[nsizes++] = strtol(s, &end, 10);
                if (end == s || sizes[nsizes - 1] < 1024 || (*end && *end != ','))
                    fail("--size takes a comma list of byte counts of at least 1024, e.g. --size=4096,65536");
                s = end;
            }
        } else {
            fprintf(stderr, "numa_toy: error: unknown option '%s'; options: --size=LIST --samples=N --csv=PATH --version\n", arg);
            return 2;
        }
    }
    if (nsizes == 0)
        fail("--size is required, e.g. --size=4096,65536");
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
            fail("out of memory; give a smaller --size");
        memset(buf, 1, sizes[k]); /* first touch outside the samples */
        for (int s = 0; s < samples; s++) {
            double t0 = now_ns();
            memset(buf, s + 2, sizes[k]);
            __asm__ __volatile__("" : : "r"(buf) : "memory");
            taken[s] = (now_ns() - t0) / (sizes[k] / 1024.0);
        }
        free(buf);
        qsort(taken, samples, sizeof taken[0], by_value);
        double median = samples % 2 ? taken[samples / 2] : (taken[samples / 2 - 1] + taken[samples / 2]) / 2;
        if (median <= 0)
            median = 1e-3; /* a timer too coarse for the size: the smallest positive value */
        ns_text_printf(&out, "%s,%ld,%.4f,%d\n", host, sizes[k], median, samples);
        printf("size %ld: %.4f ns per KiB\n", sizes[k], median);
        if (csv)
            ns_csv_write(csv, &out);
    }
    ns_text_free(&out);
    return 0;
}
