/* ref_pingpong: a reference core-to-core ping-pong, written apart from kernels/ to the
 * definition numa_c2c measures, so the two can be compared (bench/mlc.py).
 *
 * Definition: two threads, pinned to CPU A and CPU B, share one 64-byte aligned counter on a
 * page of its own, first written by A. A sets an odd value and waits for B's next even value;
 * B answers each odd value with the next even one. One round trip = the line going A -> B -> A.
 * SAMPLES samples of at least SAMPLE seconds (round trips counted in batches of 1000); printed:
 * median, min and max ns per round trip.
 *
 *   ref_pingpong CPU_A CPU_B [SAMPLES=5] [SAMPLE=0.1]
 *   -> "median_ns=X min_ns=X max_ns=X"
 *
 * Build: cc -O2 -pthread -o ref_pingpong bench/ref_pingpong.c
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t *flag;
static volatile int quit;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set)) {
        fprintf(stderr, "ref_pingpong: cannot pin to CPU %d\n", cpu);
        exit(2);
    }
}

static void *responder(void *arg)
{
    pin(*(int *)arg);
    uint64_t expect = 1;
    while (!quit) {
        if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == expect) {
            __atomic_store_n(flag, expect + 1, __ATOMIC_RELEASE);
            expect += 2;
        }
    }
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: ref_pingpong CPU_A CPU_B [SAMPLES] [SAMPLE_SECONDS]\n");
        return 2;
    }
    int a = atoi(argv[1]), b = atoi(argv[2]);
    int samples = argc > 3 ? atoi(argv[3]) : 5;
    double sample = argc > 4 ? atof(argv[4]) : 0.1;
    if (samples < 1 || samples > 1000 || sample <= 0) {
        fprintf(stderr, "ref_pingpong: samples 1..1000 and a positive sample length\n");
        return 2;
    }
    pin(a);
    void *page;
    if (posix_memalign(&page, 4096, 4096))
        return 2;
    flag = page;
    *flag = 0;
    pthread_t t;
    pthread_create(&t, NULL, responder, &b);
    double *ns = malloc(samples * sizeof *ns);
    uint64_t value = 0;
    for (int s = 0; s < samples; s++) {
        uint64_t trips = 0;
        double t0 = now(), dt;
        do {
            for (int i = 0; i < 1000; i++) {
                __atomic_store_n(flag, value + 1, __ATOMIC_RELEASE);
                value += 2;
                while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != value)
                    ;
            }
            trips += 1000;
            dt = now() - t0;
        } while (dt < sample);
        ns[s] = dt * 1e9 / trips;
    }
    quit = 1;
    pthread_join(t, NULL);
    qsort(ns, samples, sizeof *ns, by_value);
    double median = samples % 2 ? ns[samples / 2] : (ns[samples / 2 - 1] + ns[samples / 2]) / 2;
    printf("median_ns=%.2f min_ns=%.2f max_ns=%.2f\n", median, ns[0], ns[samples - 1]);
    return 0;
}
