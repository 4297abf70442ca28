/* Memory policy: what the user asked for (--policy, --mem-nodes, --weights), applying it to a
 * buffer (mbind) or to the calling thread (set_mempolicy), and what the kernel reports back.
 *
 * Weighted interleave is MPOL_WEIGHTED_INTERLEAVE (mode 6, Linux >= 6.9). numaif.h from
 * numactl 2.0.16 does not define it, so the raw syscalls are used and support is probed at
 * run time; a kernel without it is refused with one line, never silently measured as plain
 * interleave. The environment variable NUMASWEEP_FAKE_NO_WEIGHTED=1 makes the probe report
 * "not supported" (a test hook for the refusal path). */
#ifndef NS_POLICY_H
#define NS_POLICY_H

#include <stddef.h>

#include "ns_topo.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NS_MPOL_DEFAULT 0
#define NS_MPOL_PREFERRED 1
#define NS_MPOL_BIND 2
#define NS_MPOL_INTERLEAVE 3
#define NS_MPOL_LOCAL 4
#define NS_MPOL_PREFERRED_MANY 5
#define NS_MPOL_WEIGHTED_INTERLEAVE 6

typedef enum {
    NS_POLICY_INHERIT = 0, /* leave whatever numactl or the parent set */
    NS_POLICY_BIND,
    NS_POLICY_PREFERRED,
    NS_POLICY_INTERLEAVE,
    NS_POLICY_WEIGHTED
} ns_policy_kind;

typedef struct {
    ns_policy_kind kind;
    int nnodes;
    int nodes[NS_MAX_NODES];  /* as given in --mem-nodes */
    int nweights;             /* 0: weighted interleave uses the weights already in sysfs */
    int weights[NS_MAX_NODES];
} ns_policy;

/* "inherit", "bind", "preferred", "interleave", "weighted"; -1 if unknown. */
int ns_policy_kind_parse(const char *text);
const char *ns_policy_kind_name(ns_policy_kind kind);

/* 1 if the running kernel accepts MPOL_WEIGHTED_INTERLEAVE; otherwise 0 and why. */
int ns_weighted_interleave_supported(char *why, size_t len);

/* Check a policy against this system; ends the program (exit 2) with one line naming the
 * problem: missing or unknown nodes, node count vs weights, weights outside 1..255,
 * preferred with several nodes, weighted interleave unsupported. */
void ns_policy_validate(const ns_policy *policy);

/* For weighted interleave with --weights: write
 * /sys/kernel/mm/mempolicy/weighted_interleave/nodeN where they differ, restoring the old
 * values (and the "auto" switch) at exit; ends the program if they cannot be written. */
void ns_policy_apply_weights(const ns_policy *policy);
/* Weights currently in sysfs for the policy's nodes (0 where unreadable). */
void ns_policy_current_weights(const ns_policy *policy, int *weights);

/* Apply to [addr, addr+len) before first touch (mbind); inherit does nothing.
 * Ends the program on failure. */
void ns_policy_apply_range(const ns_policy *policy, void *addr, size_t len);
/* Apply to the calling thread's future allocations (set_mempolicy); inherit does nothing. */
void ns_policy_apply_thread(const ns_policy *policy);

/* The policy in force for addr as the kernel reports it (the buffer's own policy, else the
 * thread's): name is default|bind|preferred|interleave|weighted|local, nodes its node mask,
 * weights the sysfs weights for weighted interleave (nweights 0 otherwise). addr may be NULL
 * for the thread policy. */
typedef struct {
    char name[16];
    int mode;
    int nnodes;
    int nodes[NS_MAX_NODES];
    int nweights;
    int weights[NS_MAX_NODES];
} ns_observed_policy;

void ns_policy_observe(const void *addr, ns_observed_policy *out);

#ifdef __cplusplus
}
#endif
#endif
