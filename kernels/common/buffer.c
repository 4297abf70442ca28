#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ns_buffer.h"
#include "ns_error.h"
#include "ns_size.h"

#define THP_BYTES (2ul << 20)
#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif

static const char *page_names[] = {"4k", "thp", "2m", "1g"};

int ns_pages_parse(const char *text)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(text, page_names[i]))
            return i;
    return -1;
}

const char *ns_pages_name(ns_pages pages) { return page_names[pages]; }

size_t ns_pages_bytes(ns_pages pages)
{
    switch (pages) {
    case NS_PAGES_2M: return 2ul << 20;
    case NS_PAGES_1G: return 1ul << 30;
    default: return 4096;
    }
}

int ns_policy_target_nodes(const ns_policy *policy, int *nodes, int max_count)
{
    if (policy->kind == NS_POLICY_BIND || policy->kind == NS_POLICY_INTERLEAVE || policy->kind == NS_POLICY_WEIGHTED) {
        int n = policy->nnodes < max_count ? policy->nnodes : max_count;
        memcpy(nodes, policy->nodes, (size_t)n * sizeof *nodes);
        return n;
    }
    if (policy->kind == NS_POLICY_INHERIT) {
        ns_observed_policy seen;
        ns_policy_observe(NULL, &seen);
        if ((seen.mode == NS_MPOL_BIND || seen.mode == NS_MPOL_INTERLEAVE || seen.mode == NS_MPOL_WEIGHTED_INTERLEAVE) &&
            seen.nnodes) {
            int n = seen.nnodes < max_count ? seen.nnodes : max_count;
            memcpy(nodes, seen.nodes, (size_t)n * sizeof *nodes);
            return n;
        }
    }
    return ns_online_nodes(nodes, max_count);
}

uint64_t ns_free_memory_bytes(const ns_policy *policy, ns_pages pages)
{
    int nodes[NS_MAX_NODES];
    int n = ns_policy_target_nodes(policy, nodes, NS_MAX_NODES);
    uint64_t free_bytes = 0;
    int known = 0;
    for (int i = 0; i < n; i++) {
        if (pages == NS_PAGES_2M || pages == NS_PAGES_1G) {
            size_t page = ns_pages_bytes(pages);
            int64_t count = ns_node_free_hugepages(nodes[i], page);
            if (count > 0)
                free_bytes += (uint64_t)count * page;
            known = 1;
        } else {
            int64_t b = ns_node_free_bytes(nodes[i]);
            if (b >= 0) {
                free_bytes += (uint64_t)b;
                known = 1;
            }
        }
    }
    return known ? free_bytes : UINT64_MAX;
}

int ns_free_memory_problem(const ns_policy *policy, ns_pages pages, uint64_t bytes, const char *what, char *msg,
                           size_t len)
{
    int nodes[NS_MAX_NODES];
    int n = ns_policy_target_nodes(policy, nodes, NS_MAX_NODES);
    char list[1024], have[32];
    ns_format_int_list(nodes, n, list, sizeof list);
    uint64_t free_bytes = ns_free_memory_bytes(policy, pages);
    if (pages == NS_PAGES_2M || pages == NS_PAGES_1G) {
        size_t page = ns_pages_bytes(pages);
        uint64_t need = (bytes + page - 1) / page * page;
        if (need <= free_bytes)
            return 0;
        snprintf(msg, len,
                 "%s needs %llu free %s huge pages on node(s) %s, %llu are free: reserve them in "
                 "/sys/devices/system/node/nodeN/hugepages/hugepages-%zukB/nr_hugepages or use --pages=4k or thp",
                 what, (unsigned long long)(need / page), ns_pages_name(pages), list,
                 (unsigned long long)(free_bytes / page), page >> 10);
        return 1;
    }
    if (bytes <= free_bytes)
        return 0;
    ns_format_size(free_bytes >> 20 << 20, have, sizeof have);
    snprintf(msg, len, "%s exceeds the free memory of node(s) %s (%s free): use a smaller size or more nodes", what,
             list, have);
    return 1;
}

void ns_check_free_memory(const ns_policy *policy, ns_pages pages, uint64_t bytes)
{
    char what[64], want[32], msg[1024];
    ns_format_size(bytes, want, sizeof want);
    snprintf(what, sizeof what, "size %s", want);
    if (ns_free_memory_problem(policy, pages, bytes, what, msg, sizeof msg))
        ns_die("%s", msg);
}

void ns_buffer_alloc(ns_buffer *buf, size_t bytes, ns_pages pages, const ns_policy *policy)
{
    char want[32];
    ns_format_size(bytes, want, sizeof want);
    memset(buf, 0, sizeof *buf);
    buf->bytes = bytes;
    buf->pages = pages;
    size_t page = ns_pages_bytes(pages);
    size_t len = (bytes + page - 1) / page * page;
    if (pages == NS_PAGES_2M || pages == NS_PAGES_1G) {
        int shift = pages == NS_PAGES_2M ? 21 : 30;
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (shift << MAP_HUGE_SHIFT), -1, 0);
        if (p == MAP_FAILED)
            ns_die("cannot map %s with %s huge pages: %s (reserve huge pages or use --pages=4k|thp)", want,
                   ns_pages_name(pages), strerror(errno));
        buf->addr = buf->map_addr = p;
        buf->map_bytes = len;
    } else if (pages == NS_PAGES_THP) {
        /* Align to 2 MiB so the whole range can be backed by huge pages. */
        len = (bytes + THP_BYTES - 1) / THP_BYTES * THP_BYTES;
        size_t map_len = len + THP_BYTES;
        char *p = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            ns_die("cannot map %s: %s", want, strerror(errno));
        char *aligned = (char *)(((uintptr_t)p + THP_BYTES - 1) & ~(uintptr_t)(THP_BYTES - 1));
        if (madvise(aligned, len, MADV_HUGEPAGE))
            ns_die("--pages=thp: madvise(MADV_HUGEPAGE) failed: %s (is THP disabled in "
                   "/sys/kernel/mm/transparent_hugepage/enabled?)", strerror(errno));
        buf->addr = aligned;
        buf->map_addr = p;
        buf->map_bytes = map_len;
    } else {
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            ns_die("cannot map %s: %s", want, strerror(errno));
        /* Without this, THP=always would silently turn a 4k run into a huge-page run. */
        if (madvise(p, len, MADV_NOHUGEPAGE) && errno != EINVAL)
            ns_die("--pages=4k: madvise(MADV_NOHUGEPAGE) failed: %s", strerror(errno));
        buf->addr = buf->map_addr = p;
        buf->map_bytes = len;
    }
    ns_policy_apply_range(policy, buf->addr, len);
}

/* Bytes of [addr, addr+len) that the kernel reports on transparent huge pages (AnonHugePages of
 * the mappings overlapping it in /proc/self/smaps); -1 if that file cannot be read. */
static int64_t thp_bytes(uintptr_t addr, size_t len)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int overlaps = 0;
    int64_t total = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long start, end;
        long long kb;
        if (sscanf(line, "%lx-%lx ", &start, &end) == 2 && strchr(line, '-') < strchr(line, ' '))
            overlaps = start < addr + len && end > addr;
        else if (overlaps && sscanf(line, "AnonHugePages: %lld kB", &kb) == 1)
            total += kb * 1024;
    }
    fclose(f);
    return total;
}

void ns_buffer_check_thp(const ns_buffer *buf)
{
    if (buf->pages != NS_PAGES_THP)
        return;
    size_t len = (buf->bytes + THP_BYTES - 1) / THP_BYTES * THP_BYTES;
    int64_t huge = thp_bytes((uintptr_t)buf->addr, len);
    if (huge < 0 || (uint64_t)huge * 2 >= len)
        return;
    char want[32], got[32];
    ns_format_size(buf->bytes, want, sizeof want);
    ns_format_size((uint64_t)huge, got, sizeof got);
    ns_die("--pages=thp: only %s of the %s buffer got transparent huge pages (THP off in "
           "/sys/kernel/mm/transparent_hugepage/enabled or for this process, or memory too fragmented): "
           "enable THP, or use --pages=2m or 4k", got, want);
}

void ns_buffer_free(ns_buffer *buf)
{
    if (buf->map_addr)
        munmap(buf->map_addr, buf->map_bytes);
    memset(buf, 0, sizeof *buf);
}

void ns_placement_clear(ns_placement *placement) { memset(placement, 0, sizeof *placement); }

void ns_placement_query(ns_placement *placement, const void *addr, size_t bytes, size_t page_bytes)
{
    if (!bytes)
        return;
    uintptr_t first = (uintptr_t)addr / page_bytes * page_bytes;
    uint64_t total = ((uintptr_t)addr + bytes - first + page_bytes - 1) / page_bytes;
    uint64_t count = total < NS_PLACEMENT_MAX_SAMPLES ? total : NS_PLACEMENT_MAX_SAMPLES;
    void *pages[NS_PLACEMENT_MAX_SAMPLES];
    int status[NS_PLACEMENT_MAX_SAMPLES];
    /* One page at a pseudo-random place in each of `count` equal slices: evenly spaced samples
     * alias with an interleave's period (every 2nd page of a 2-node interleave is on one node). */
    for (uint64_t i = 0; i < count; i++) {
        uint64_t lo = i * total / count, hi = (i + 1) * total / count;
        uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull;
        x = (x ^ (x >> 31)) * 0xBF58476D1CE4E5B9ull;
        x ^= x >> 29;
        pages[i] = (void *)(first + (uintptr_t)(lo + x % (hi - lo)) * page_bytes);
    }
    placement->total_pages += total;
    placement->sampled += count;
    if (syscall(SYS_move_pages, 0, (unsigned long)count, pages, NULL, status, 0)) {
        placement->unplaced += count;
        return;
    }
    for (uint64_t i = 0; i < count; i++) {
        if (status[i] >= 0 && status[i] < NS_MAX_NODES)
            placement->pages_on_node[status[i]]++;
        else
            placement->unplaced++;
    }
}

void ns_placement_format(const ns_placement *placement, char *buf, size_t len)
{
    int nodes[NS_MAX_NODES];
    int n = ns_online_nodes(nodes, NS_MAX_NODES);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        double f = placement->sampled ? (double)placement->pages_on_node[nodes[i]] / (double)placement->sampled : 0.0;
        int w = snprintf(buf + used, len - used, "%s%d:%.4f", i ? "," : "", nodes[i], f);
        if (w < 0 || (size_t)w >= len - used)
            return;
        used += (size_t)w;
    }
}

int ns_placement_nodes(const ns_placement *placement, int *nodes, int max_count)
{
    int n = 0;
    for (int node = 0; node < NS_MAX_NODES && n < max_count; node++)
        if (placement->pages_on_node[node])
            nodes[n++] = node;
    return n;
}
