/* Benchmark buffers: mmap with a chosen page size, a memory policy applied before first touch,
 * a free-memory check before allocating, and the placement check with move_pages(2). */
#ifndef NS_BUFFER_H
#define NS_BUFFER_H

#include <stddef.h>
#include <stdint.h>

#include "ns_policy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    NS_PAGES_4K = 0, /* base pages; MADV_NOHUGEPAGE so THP cannot change results silently */
    NS_PAGES_THP,    /* base mapping aligned to 2 MiB with MADV_HUGEPAGE */
    NS_PAGES_2M,     /* hugetlbfs 2 MiB pages (MAP_HUGETLB) */
    NS_PAGES_1G      /* hugetlbfs 1 GiB pages (MAP_HUGETLB) */
} ns_pages;

/* "4k", "thp", "2m", "1g"; -1 if unknown. */
int ns_pages_parse(const char *text);
const char *ns_pages_name(ns_pages pages);
/* Page granularity of the mapping: 4096 for 4k and thp, 2 MiB, 1 GiB. */
size_t ns_pages_bytes(ns_pages pages);

typedef struct {
    void *addr;       /* start of the usable bytes */
    size_t bytes;     /* as requested */
    void *map_addr;   /* what munmap gets */
    size_t map_bytes;
    ns_pages pages;
} ns_buffer;

/* Nodes the pages may come from: the nodes of --policy bind/interleave/weighted, or with
 * --policy=inherit those of the inherited bind/interleave/weighted policy (numactl --membind);
 * every online node for preferred and default, which fall back to other nodes. Returns count. */
int ns_policy_target_nodes(const ns_policy *policy, int *nodes, int max_count);

/* Refuse (exit 2, one line naming the size, the nodes and their free memory) when bytes exceed
 * what the target nodes have free: MemFree for 4k/thp, free hugetlb pages for 2m/1g. */
void ns_check_free_memory(const ns_policy *policy, ns_pages pages, uint64_t bytes);
/* Bytes free on the target nodes as that check counts them (free hugetlb pages for 2m/1g);
 * UINT64_MAX when the kernel does not say. */
uint64_t ns_free_memory_bytes(const ns_policy *policy, ns_pages pages);
/* The same check without ending the program: returns 1 and the message when bytes do not fit
 * (what: how the request is described in the message, e.g. "size 4G" or "2 ranks x 4G"). */
int ns_free_memory_problem(const ns_policy *policy, ns_pages pages, uint64_t bytes, const char *what, char *msg,
                           size_t len);

/* Map bytes with the page size, apply the policy (mbind) before first touch. Ends the program
 * (exit 2) when the mapping fails (e.g. no huge pages reserved). Does not touch the memory. */
void ns_buffer_alloc(ns_buffer *buf, size_t bytes, ns_pages pages, const ns_policy *policy);
void ns_buffer_free(ns_buffer *buf);
/* For --pages=thp, after the first touch: ends the program (exit 2, one line) when less than
 * half of the buffer got transparent huge pages (THP disabled for the system or the process,
 * or memory too fragmented), as the results would be labelled thp while measuring 4 KiB pages.
 * Other page sizes: nothing to check. */
void ns_buffer_check_thp(const ns_buffer *buf);

/* Where the pages are: move_pages(2) status query (nodes = NULL) on up to
 * NS_PLACEMENT_MAX_SAMPLES pages of the range, one from each equal slice (all pages of smaller ranges). */
#define NS_PLACEMENT_MAX_SAMPLES 4096

typedef struct {
    uint64_t pages_on_node[NS_MAX_NODES];
    uint64_t sampled;   /* pages asked about */
    uint64_t unplaced;  /* pages not present or not answerable (status < 0) */
    uint64_t total_pages; /* pages in the range(s) */
} ns_placement;

void ns_placement_clear(ns_placement *placement);
/* Adds the range's sampled pages to placement (call once per buffer to combine buffers). */
void ns_placement_query(ns_placement *placement, const void *addr, size_t bytes, size_t page_bytes);
/* "node:fraction,..." over every online node, 4 decimals: fraction of sampled pages found on
 * that node (unplaced pages count in no node, so the fractions then sum below 1). */
void ns_placement_format(const ns_placement *placement, char *buf, size_t len);
/* Nodes holding at least one sampled page, ascending; returns the count. */
int ns_placement_nodes(const ns_placement *placement, int *nodes, int max_count);

#ifdef __cplusplus
}
#endif
#endif
