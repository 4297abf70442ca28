/* ref_chase: a reference pointer chase, written apart from kernels/ to the definition
 * numa_latency measures, so the two can be compared (bench/kernels.py).
 *
 * Definition: a buffer of SIZE bytes on 4k pages (MADV_NOHUGEPAGE) or transparent huge pages
 * (MADV_HUGEPAGE, 2 MiB aligned), cut into 64-byte slots; the slots form ONE random cycle
 * (Sattolo's algorithm over the slot indices, here driven by splitmix64, not by the kernel's
 * generator); each load's address is the value the previous load returned. After one pass
 * of warm-up (at most SAMPLE seconds), SAMPLES samples of at least SAMPLE seconds each;
 * printed: median, min and max ns per load, then the first-touch and build seconds.
 *
 *   ref_chase SIZE_BYTES 4k|thp [SAMPLES=5] [SAMPLE=0.5]
 *   -> "size_bytes=N median_ns=X min_ns=X max_ns=X first_touch_s=X build_s=X"
 *
 * Build: cc -O2 -o ref_chase bench/ref_chase.c
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define SLOT 64
#define HUGE (2ul << 20)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void **__attribute__((noinline)) walk(void **p, uint64_t n)
{
    while (n--)
        p = (void **)*p;
    return p;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[2], "4k") && strcmp(argv[2], "thp"))) {
        fprintf(stderr, "usage: ref_chase SIZE_BYTES 4k|thp [SAMPLES] [SAMPLE_SECONDS]\n");
        return 2;
    }
    size_t size = strtoull(argv[1], NULL, 10);
    int thp = !strcmp(argv[2], "thp");
    int samples = argc > 3 ? atoi(argv[3]) : 5;
    double sample_s = argc > 4 ? atof(argv[4]) : 0.5;
    size_t n = size / SLOT;
    if (n < 2 || samples < 1 || samples > 1000 || sample_s <= 0) {
        fprintf(stderr, "ref_chase: bad arguments\n");
        return 2;
    }
    size_t len = (size + HUGE - 1) / HUGE * HUGE;
    char *map = mmap(NULL, len + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
        perror("ref_chase: mmap");
        return 1;
    }
    char *buf = (char *)(((uintptr_t)map + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    madvise(buf, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);

    double t0 = now();
    for (size_t i = 0; i < size; i += 4096) /* first touch, one store per 4 KiB */
        buf[i] = 0;
    double t1 = now();
    /* Sattolo: perm is a cyclic permutation; slot perm[i] points to slot perm[i+1]. */
    uint32_t *perm = malloc(n * sizeof *perm);
    if (!perm) {
        fprintf(stderr, "ref_chase: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    uint64_t state = 42;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)(splitmix64(&state) % i); /* j < i: one cycle */
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (size_t i = 0; i < n; i++)
        *(void **)(buf + (size_t)perm[i] * SLOT) = buf + (size_t)perm[(i + 1) % n] * SLOT;
    void **p = (void **)(buf + (size_t)perm[0] * SLOT);
    free(perm);
    double t2 = now();

    /* Warm-up: one pass, or SAMPLE seconds, whichever comes first; it also sizes a batch. */
    uint64_t done = 0, batch = 4096;
    double w0 = now();
    while (done < n && now() - w0 < sample_s) {
        p = walk(p, batch);
        done += batch;
    }
    double per_load = (now() - w0) / (double)done;
    double *ns = malloc((size_t)samples * sizeof *ns);
    for (int s = 0; s < samples; s++) {
        uint64_t step = (uint64_t)(sample_s / per_load / 8) + 1, loads = 0;
        double s0 = now(), el;
        do {
            p = walk(p, step);
            loads += step;
        } while ((el = now() - s0) < sample_s);
        ns[s] = el * 1e9 / (double)loads;
        per_load = el / (double)loads;
    }
    qsort(ns, (size_t)samples, sizeof *ns, by_value);
    double median = samples % 2 ? ns[samples / 2] : 0.5 * (ns[samples / 2 - 1] + ns[samples / 2]);
    printf("size_bytes=%zu median_ns=%.3f min_ns=%.3f max_ns=%.3f first_touch_s=%.4f build_s=%.4f sink=%d\n", size,
           median, ns[0], ns[samples - 1], t1 - t0, t2 - t1, p == NULL);
    free(ns);
    munmap(map, len + HUGE);
    return 0;
}
