/* Random orders and the pointer-chase cycle.
 *
 * The chase links 64-byte slots into ONE cycle through all of them with Sattolo's algorithm
 * (Fisher-Yates with the partner drawn strictly below the current index), which yields a
 * uniformly random cyclic permutation; slot s then points to its successor. (A plain
 * Fisher-Yates permutation used as a successor array would split into several cycles.) Each
 * load depends on the previous one and its address is unpredictable. */
#ifndef NS_CYCLE_H
#define NS_CYCLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NS_CHASE_SLOT_BYTES 64

typedef struct {
    uint64_t s[4];
} ns_rng; /* xoshiro256** */

void ns_rng_seed(ns_rng *rng, uint64_t seed);
uint64_t ns_rng_next(ns_rng *rng);
/* Uniform in [0, bound), bound > 0 (Lemire's multiply-shift with rejection). */
uint64_t ns_rng_below(ns_rng *rng, uint64_t bound);

/* order[0..n) = a uniformly random permutation of 0..n-1. */
void ns_random_order(uint32_t *order, size_t n, ns_rng *rng);

/* Link nslots slots of slot_bytes each (slot_bytes >= sizeof(void *), multiple of it) at buf
 * into one random cycle, writing every slot in address order; returns buf. 2 <= nslots < 2^32,
 * else NULL. Uses nslots * 4 bytes of scratch (mapped and unmapped here; the program ends with
 * one line if that mapping fails). */
void *ns_chase_build(void *buf, size_t nslots, size_t slot_bytes, ns_rng *rng);

/* Follow the pointers from start until back at start or max_steps taken; returns the number of
 * steps (= cycle length when <= max_steps). */
size_t ns_chase_cycle_length(void *start, size_t max_steps);

/* Populate bytes at addr (first touch by the calling CPU: one madvise(MADV_POPULATE_WRITE) on
 * Linux >= 5.14, else the linking pass touches the pages) and link its 64-byte slots into one
 * random cycle; returns the start, the wall time of each step in *touch_s and *build_s. */
void *ns_chase_prepare(void *addr, size_t bytes, ns_rng *rng, double *touch_s, double *build_s);

/* Dependent loads: loads steps along the cycle from p (the next address is the loaded value, so
 * the loads cannot overlap); returns where it stopped. */
void *ns_chase(void *p, uint64_t loads);

/* Warm-up: chase from *p up to one pass over nslots slots, at most about max_time seconds;
 * returns the seconds per load seen (to size the samples) and leaves *p where it stopped. */
double ns_chase_warm(void **p, size_t nslots, double max_time);

/* Sorts v[0..n) and gives its median, minimum and maximum (n >= 1). */
void ns_summarize(double *v, int n, double *median, double *min, double *max);

#ifdef __cplusplus
}
#endif
#endif
