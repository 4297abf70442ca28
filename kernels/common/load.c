#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns_error.h"
#include "ns_load.h"
#include "ns_oncpu.h"
#include "ns_options.h"
#include "ns_place.h"
#include "ns_topo.h"

static const char *traffic_names[NS_NTRAFFIC] = {"read", "r3w1", "r2w1", "r1w1", "triad"};
/* Lines read per line written in one group (read: no write). */
static const int reads_per_write[NS_NTRAFFIC] = {0, 3, 2, 1, 0};

#define WORDS 8             /* 64-bit words per 64-byte line */
#define BLOCK_LINES 64      /* lines between delays and checks of the run flag */

const char *ns_traffic_name(ns_traffic kind) { return traffic_names[kind]; }

int ns_traffic_list_arg(const char *option, const char *text, ns_traffic *kinds)
{
    int flags[NS_NTRAFFIC], n = 0;
    ns_names_arg(option, text, traffic_names, NS_NTRAFFIC, flags,
                 "read, r3w1, r2w1, r1w1 (reads to writes 3:1, 2:1, 1:1) or triad");
    for (int k = 0; k < NS_NTRAFFIC; k++)
        if (flags[k])
            kinds[n++] = (ns_traffic)k;
    return n;
}

typedef struct {
    _Alignas(64) _Atomic uint64_t bytes;
    _Atomic int active;
    int cpu, cpu_seen;
    double on_cpu; /* share of the last run's wall time on its CPU */
    ns_buffer buf;
    pthread_t tid;
    struct ns_load_team *team;
    _Alignas(64) uint64_t sink;
} worker;

struct ns_load_team {
    _Atomic int state; /* 0 wait, 1 run, 2 quit; changed under mu, waited for on cv */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic int ready;
    ns_traffic kind;
    long delay;
    int n;
    size_t bytes;
    ns_pages pages;
    ns_policy policy;
    int local;
    worker *w;
};

static inline void spin(long iterations)
{
    for (long i = 0; i < iterations; i++)
        __asm__ volatile("" ::: "memory");
}

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    __asm__ volatile("" ::: "memory");
#endif
}

/* Groups of reads_per_write read lines and one written line; returns bytes moved. */
static uint64_t mixed_block(uint64_t *restrict buf, size_t *line, size_t lines, int reads, uint64_t *sink)
{
    int group = reads + 1;
    size_t done = 0;
    uint64_t acc = *sink;
    while (done < BLOCK_LINES) {
        if (*line + (size_t)group > lines)
            *line = 0;
        uint64_t *g = buf + *line * WORDS;
        uint64_t s = 0;
        for (int r = 0; r < reads; r++)
            for (int k = 0; k < WORDS; k++)
                s += g[r * WORDS + k];
        uint64_t *w = g + reads * WORDS;
        for (int k = 0; k < WORDS; k++)
            w[k] = s + (uint64_t)k;
        acc += s;
        *line += (size_t)group;
        done += (size_t)group;
    }
    *sink = acc;
    return done * 64;
}

static uint64_t read_block(const uint64_t *restrict buf, size_t *line, size_t lines, uint64_t *sink)
{
    if (*line + BLOCK_LINES > lines)
        *line = 0;
    const uint64_t *g = buf + *line * WORDS;
    uint64_t s = 0;
    for (size_t k = 0; k < BLOCK_LINES * WORDS; k++)
        s += g[k];
    *sink += s;
    *line += BLOCK_LINES;
    return BLOCK_LINES * 64;
}

/* a = b + 3c over thirds of the buffer, BLOCK_LINES/3 lines of each stream per block. */
static uint64_t triad_block(uint64_t *restrict buf, size_t *line, size_t lines)
{
    size_t third = lines / 3, step = BLOCK_LINES / 3;
    if (*line + step > third)
        *line = 0;
    uint64_t *restrict a = buf + *line * WORDS;
    const uint64_t *restrict b = buf + (third + *line) * WORDS;
    const uint64_t *restrict c = buf + (2 * third + *line) * WORDS;
    for (size_t k = 0; k < step * WORDS; k++)
        a[k] = b[k] + 3 * c[k];
    *line += step;
    return 3 * step * 64;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    struct ns_load_team *t = w->team;
    ns_pin_to_cpu(w->cpu);
    ns_policy own = t->policy;
    if (t->local) {
        own.kind = NS_POLICY_BIND;
        own.nnodes = 1;
        own.nodes[0] = ns_node_of_cpu(w->cpu) < 0 ? 0 : ns_node_of_cpu(w->cpu);
        own.nweights = 0;
    }
    ns_buffer_alloc(&w->buf, t->bytes, t->pages, &own);
    memset(w->buf.addr, 1, t->bytes); /* first touch by the thread's own CPU */
    ns_buffer_check_thp(&w->buf);
    atomic_fetch_add(&t->ready, 1);
    uint64_t *buf = w->buf.addr;
    size_t lines = t->bytes / 64, line = 0;
    for (;;) {
        /* Waiting threads sleep: they leave their CPU to the chase's neighbours and to other
         * work, as on an idle machine. */
        pthread_mutex_lock(&t->mu);
        while (atomic_load(&t->state) == 0)
            pthread_cond_wait(&t->cv, &t->mu);
        int st = atomic_load(&t->state);
        pthread_mutex_unlock(&t->mu);
        if (st == 2)
            break;
        ns_traffic kind = t->kind;
        long delay = t->delay;
        w->cpu_seen = ns_current_cpu();
        ns_oncpu_mark mark;
        ns_oncpu_begin(&mark);
        atomic_store_explicit(&w->active, 1, memory_order_release);
        while (atomic_load_explicit(&t->state, memory_order_relaxed) == 1) {
            uint64_t moved = kind == NS_TRAFFIC_READ    ? read_block(buf, &line, lines, &w->sink)
                             : kind == NS_TRAFFIC_TRIAD ? triad_block(buf, &line, lines)
                                                        : mixed_block(buf, &line, lines, reads_per_write[kind], &w->sink);
            atomic_fetch_add_explicit(&w->bytes, moved, memory_order_relaxed);
            spin(delay);
        }
        if (ns_current_cpu() != w->cpu_seen)
            w->cpu_seen = -1;
        w->on_cpu = ns_oncpu_share(&mark);
        atomic_store_explicit(&w->active, 0, memory_order_release);
    }
    return NULL;
}

ns_load_team *ns_load_start(const int *cpus, int n, size_t bytes, ns_pages pages, const ns_policy *policy, int local)
{
    if (bytes < 3 * BLOCK_LINES * 64)
        ns_die("load buffer of %zu bytes is below %d: give each load thread at least 12K", bytes, 3 * BLOCK_LINES * 64);
    struct ns_load_team *t = calloc(1, sizeof *t);
    worker *w = aligned_alloc(64, ((size_t)n * sizeof *w + 63) / 64 * 64);
    if (!t || !w)
        ns_die("out of memory");
    memset(w, 0, (size_t)n * sizeof *w);
    t->n = n;
    t->w = w;
    t->bytes = bytes;
    t->pages = pages;
    t->policy = *policy;
    t->local = local;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    for (int i = 0; i < n; i++) {
        w[i].cpu = cpus[i];
        w[i].cpu_seen = -1;
        w[i].team = t;
        if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]))
            ns_die("cannot start load thread %d of %d: lower the number of load threads", i + 1, n);
    }
    while (atomic_load(&t->ready) < n)
        sched_yield();
    return t;
}

static void set_state(ns_load_team *t, int state)
{
    pthread_mutex_lock(&t->mu);
    atomic_store(&t->state, state);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

void ns_load_run(ns_load_team *t, ns_traffic kind, long delay)
{
    t->kind = kind;
    t->delay = delay;
    set_state(t, 1);
    for (int i = 0; i < t->n; i++)
        while (!atomic_load_explicit(&t->w[i].active, memory_order_acquire))
            relax();
}

void ns_load_pause(ns_load_team *t)
{
    set_state(t, 0);
    for (int i = 0; i < t->n; i++)
        while (atomic_load_explicit(&t->w[i].active, memory_order_acquire))
            relax();
}

uint64_t ns_load_bytes(const ns_load_team *t)
{
    uint64_t sum = 0;
    for (int i = 0; i < t->n; i++)
        sum += atomic_load_explicit(&t->w[i].bytes, memory_order_relaxed);
    return sum;
}

void ns_load_placement(const ns_load_team *t, ns_placement *placement)
{
    for (int i = 0; i < t->n; i++)
        ns_placement_query(placement, t->w[i].buf.addr, t->bytes, ns_pages_bytes(t->pages));
}

int ns_load_cpus_seen(const ns_load_team *t, int *cpus)
{
    for (int i = 0; i < t->n; i++)
        cpus[i] = t->w[i].cpu_seen;
    return t->n;
}

double ns_load_least_on_cpu(const ns_load_team *t)
{
    double least = 1.0;
    for (int i = 0; i < t->n; i++)
        least = t->w[i].on_cpu < least ? t->w[i].on_cpu : least;
    return least;
}

void ns_load_stop(ns_load_team *t)
{
    set_state(t, 2);
    for (int i = 0; i < t->n; i++) {
        pthread_join(t->w[i].tid, NULL);
        ns_buffer_free(&t->w[i].buf);
    }
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t->w);
    free(t);
}
