#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ns_buffer.h"
#include "ns_cycle.h"
#include "ns_timing.h"

#ifdef MADV_POPULATE_WRITE
#define NS_MADV_POPULATE_WRITE MADV_POPULATE_WRITE
#else
#define NS_MADV_POPULATE_WRITE 23 /* Linux >= 5.14; older kernels answer EINVAL */
#endif

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void ns_rng_seed(ns_rng *rng, uint64_t seed)
{
    /* splitmix64 spreads any seed (even 0) over the whole state. */
    for (int i = 0; i < 4; i++) {
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        rng->s[i] = z ^ (z >> 31);
    }
}

uint64_t ns_rng_next(ns_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t ns_rng_below(ns_rng *rng, uint64_t bound)
{
    /* Lemire: unbiased without a division in the common case. */
    unsigned __int128 m = (unsigned __int128)ns_rng_next(rng) * bound;
    uint64_t low = (uint64_t)m;
    if (low < bound) {
        uint64_t threshold = -bound % bound;
        while (low < threshold) {
            m = (unsigned __int128)ns_rng_next(rng) * bound;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

void ns_random_order(uint32_t *order, size_t n, ns_rng *rng)
{
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)ns_rng_below(rng, i);
        uint32_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

void *ns_chase_build(void *buf, size_t nslots, size_t slot_bytes, ns_rng *rng)
{
    if (nslots < 2 || nslots > UINT32_MAX)
        return NULL;
    /* Successor array on huge pages: the shuffle's random accesses then miss the cache but
     * rarely the TLB, which matters a lot for buffers of several GiB (and under virtualisation). */
    ns_buffer scratch;
    ns_policy inherit = {.kind = NS_POLICY_INHERIT};
    ns_buffer_alloc(&scratch, nslots * sizeof(uint32_t), NS_PAGES_THP, &inherit);
    uint32_t *next = scratch.addr;
    for (size_t i = 0; i < nslots; i++)
        next[i] = (uint32_t)i;
    /* Sattolo: like Fisher-Yates but j < i, which yields a uniformly random single cycle.
     * The partners do not depend on the data, so they are drawn AHEAD steps early and their
     * cache lines prefetched: the random accesses then overlap instead of queueing. */
    enum { AHEAD = 32 };
    size_t partner[AHEAD];
    size_t first = nslots - 1;
    size_t ahead = first < AHEAD ? first : AHEAD;
    for (size_t k = 0; k < ahead; k++) {
        partner[k] = (size_t)ns_rng_below(rng, first - k);
        __builtin_prefetch(&next[partner[k]], 1);
    }
    for (size_t i = first; i > 0; i--) {
        size_t slot = (first - i) % AHEAD;
        size_t j = partner[slot];
        if (i > AHEAD) {
            partner[slot] = (size_t)ns_rng_below(rng, i - AHEAD);
            __builtin_prefetch(&next[partner[slot]], 1);
        }
        uint32_t t = next[i];
        next[i] = next[j];
        next[j] = t;
    }
    /* Written in address order: this pass is also the buffer's first touch. */
    char *base = buf;
    for (size_t s = 0; s < nslots; s++)
        *(void **)(base + s * slot_bytes) = base + (size_t)next[s] * slot_bytes;
    ns_buffer_free(&scratch);
    return base;
}

size_t ns_chase_cycle_length(void *start, size_t max_steps)
{
    void *p = start;
    size_t steps = 0;
    do {
        p = *(void **)p;
        steps++;
    } while (p != start && steps < max_steps);
    return steps;
}

void *ns_chase_prepare(void *addr, size_t bytes, ns_rng *rng, double *touch_s, double *build_s)
{
    /* One system call where the kernel has it (Linux >= 5.14) is much faster than a page fault
     * per page for GiB buffers; elsewhere the linking pass, which writes every slot in address
     * order, is the first touch (and its time is then part of the build time). */
    double t0 = ns_seconds();
    (void)madvise(addr, bytes, NS_MADV_POPULATE_WRITE);
    double t1 = ns_seconds();
    void *start = ns_chase_build(addr, bytes / NS_CHASE_SLOT_BYTES, NS_CHASE_SLOT_BYTES, rng);
    *touch_s = t1 - t0;
    *build_s = ns_seconds() - t1;
    return start;
}

void *__attribute__((noinline)) ns_chase(void *p, uint64_t loads)
{
    void **q = p;
    for (; loads >= 16; loads -= 16) {
        q = *q; q = *q; q = *q; q = *q; q = *q; q = *q; q = *q; q = *q;
        q = *q; q = *q; q = *q; q = *q; q = *q; q = *q; q = *q; q = *q;
    }
    while (loads--)
        q = *q;
    return q;
}

double ns_chase_warm(void **p, size_t nslots, double max_time)
{
    uint64_t warm = 1024, warm_loads = 0;
    double warm_time = 0;
    while (warm_loads < nslots && warm_time < max_time) {
        double t0 = ns_seconds();
        *p = ns_chase(*p, warm);
        warm_time += ns_seconds() - t0;
        warm_loads += warm;
        warm *= 2;
    }
    return warm_time / (double)warm_loads;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void ns_summarize(double *v, int n, double *median, double *min, double *max)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    *min = v[0];
    *max = v[n - 1];
}
