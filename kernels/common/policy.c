#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ns_error.h"
#include "ns_policy.h"
#include "ns_size.h"

#define MASK_BITS 1024
#define MASK_LONGS (MASK_BITS / (8 * sizeof(unsigned long)))
/* The kernel treats maxnode as one past the last bit it reads (libnuma passes the same). */
#define MASK_MAXNODE (MASK_BITS + 1)
#define MPOL_F_ADDR_FLAG (1 << 1)
#define MODE_FLAGS_MASK 0xff

#define WEIGHTS_DIR_DEFAULT "/sys/kernel/mm/mempolicy/weighted_interleave"
/* NUMASWEEP_WEIGHTS_DIR: another folder of weight files (tests construct one); the weights the
 * kernel applies are still the sysfs ones. */
static const char *weights_dir(void)
{
    const char *dir = getenv("NUMASWEEP_WEIGHTS_DIR");
    return dir && *dir ? dir : WEIGHTS_DIR_DEFAULT;
}
#define WEIGHTS_DIR weights_dir()

static const char *kind_names[] = {"inherit", "bind", "preferred", "interleave", "weighted"};

int ns_policy_kind_parse(const char *text)
{
    for (int i = 0; i < (int)(sizeof kind_names / sizeof *kind_names); i++)
        if (!strcmp(text, kind_names[i]))
            return i;
    return -1;
}

const char *ns_policy_kind_name(ns_policy_kind kind) { return kind_names[kind]; }

static int kernel_mode(ns_policy_kind kind)
{
    switch (kind) {
    case NS_POLICY_BIND: return NS_MPOL_BIND;
    case NS_POLICY_PREFERRED: return NS_MPOL_PREFERRED;
    case NS_POLICY_INTERLEAVE: return NS_MPOL_INTERLEAVE;
    case NS_POLICY_WEIGHTED: return NS_MPOL_WEIGHTED_INTERLEAVE;
    default: return NS_MPOL_DEFAULT;
    }
}

static void fill_mask(unsigned long *mask, const int *nodes, int n)
{
    memset(mask, 0, MASK_LONGS * sizeof *mask);
    for (int i = 0; i < n; i++)
        mask[nodes[i] / (8 * sizeof *mask)] |= 1ul << (nodes[i] % (8 * sizeof *mask));
}

int ns_weighted_interleave_supported(char *why, size_t len)
{
    const char *fake = getenv("NUMASWEEP_FAKE_NO_WEIGHTED");
    if (fake && *fake && strcmp(fake, "0")) {
        snprintf(why, len, "probe overridden by NUMASWEEP_FAKE_NO_WEIGHTED=%s", fake);
        return 0;
    }
    /* Probe with mbind on a scratch page: the process policy stays untouched. */
    long page = sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        snprintf(why, len, "probe mapping failed: %s", strerror(errno));
        return 0;
    }
    int nodes[NS_MAX_NODES];
    ns_online_nodes(nodes, NS_MAX_NODES);
    unsigned long mask[MASK_LONGS];
    fill_mask(mask, nodes, 1);
    long rc = syscall(SYS_mbind, p, (unsigned long)page, NS_MPOL_WEIGHTED_INTERLEAVE, mask, MASK_MAXNODE, 0u);
    int err = errno;
    munmap(p, (size_t)page);
    if (rc) {
        snprintf(why, len, "mbind(MPOL_WEIGHTED_INTERLEAVE) failed: %s", strerror(err));
        return 0;
    }
    return 1;
}

void ns_policy_validate(const ns_policy *policy)
{
    const char *name = ns_policy_kind_name(policy->kind);
    if (policy->kind == NS_POLICY_INHERIT) {
        if (policy->nnodes)
            ns_die("--mem-nodes needs --policy=bind, preferred, interleave or weighted");
        if (policy->nweights)
            ns_die("--weights needs --policy=weighted and --mem-nodes");
        return;
    }
    if (!policy->nnodes)
        ns_die("--policy=%s needs --mem-nodes=LIST (e.g. --mem-nodes=0)", name);
    int online[NS_MAX_NODES];
    int nonline = ns_online_nodes(online, NS_MAX_NODES);
    char list[1024];
    ns_format_cpulist(online, nonline, list, sizeof list);
    for (int i = 0; i < policy->nnodes; i++) {
        if (!ns_node_online(policy->nodes[i]))
            ns_die("--mem-nodes: node %d does not exist (online nodes: %s)", policy->nodes[i], list);
        for (int j = 0; j < i; j++)
            if (policy->nodes[j] == policy->nodes[i])
                ns_die("--mem-nodes: node %d is listed twice", policy->nodes[i]);
    }
    if (policy->kind == NS_POLICY_PREFERRED && policy->nnodes != 1)
        ns_die("--policy=preferred takes one node, --mem-nodes lists %d", policy->nnodes);
    if (policy->nweights && policy->kind != NS_POLICY_WEIGHTED)
        ns_die("--weights applies only to --policy=weighted, not --policy=%s", name);
    if (policy->kind == NS_POLICY_WEIGHTED) {
        if (policy->nweights && policy->nweights != policy->nnodes)
            ns_die("--weights lists %d weights for %d nodes in --mem-nodes: give one weight per node",
                   policy->nweights, policy->nnodes);
        for (int i = 0; i < policy->nweights; i++)
            if (policy->weights[i] < 1 || policy->weights[i] > 255)
                ns_die("--weights: weight %d is out of range: use 1 to 255", policy->weights[i]);
        char why[256];
        if (!ns_weighted_interleave_supported(why, sizeof why))
            ns_die("--policy=weighted: this kernel has no weighted interleave (MPOL_WEIGHTED_INTERLEAVE, Linux >= 6.9): %s", why);
    }
}

/* Saved sysfs weights, restored at exit and on the signals that end a run early (a SLURM time
 * limit or scancel, Ctrl-C, mpirun stopping the ranks after one failed): the paths and values
 * are kept as text so the signal handler only needs open/write/close. */
static volatile sig_atomic_t saved_count;
static char saved_paths[NS_MAX_NODES][128];
static char saved_values[NS_MAX_NODES][16];
static char saved_auto_path[128];
static char saved_auto[16];
static const int restore_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
/* The saved weights also go to a state file before any is changed, so that a run killed with
 * SIGKILL (which no handler sees) has them restored by the next run that sets weights. */
#define WEIGHTS_STATE_DEFAULT "/var/tmp/numasweep-weights.state"

static const char *weights_state_path(void)
{
    const char *path = getenv("NUMASWEEP_WEIGHTS_STATE");
    return path && *path ? path : WEIGHTS_STATE_DEFAULT;
}
static struct sigaction previous_actions[sizeof restore_signals / sizeof *restore_signals];

static int read_int_file(const char *path, int *value)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fscanf(f, "%d", value) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

static int write_text_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_TRUNC); /* O_TRUNC: as `echo >` does; sysfs ignores it */
    if (fd < 0)
        return -1;
    ssize_t len = (ssize_t)strlen(text);
    int bad = write(fd, text, (size_t)len) != len;
    bad |= close(fd) != 0;
    return bad ? -1 : 0;
}

/* Whether the file already holds `value` (its first word). Async-signal-safe. */
static int file_holds(const char *path, const char *value)
{
    char buf[32];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    size_t len = strlen(value);
    return !strncmp(buf, value, len) && (buf[len] == 0 || buf[len] == '\n' || buf[len] == ' ');
}

/* Writes back what was saved; returns the index that failed (saved_count for the auto switch),
 * or -1. A weight that already holds its saved value is not written: writing it would turn the
 * kernel's automatic weights off again (another rank on the host may have restored it already).
 * Async-signal-safe. */
static int write_back_weights(void)
{
    int failed = -1;
    int count = saved_count;
    saved_count = 0;
    /* The weights first, then the mode: on kernels with automatic weights (Linux 6.16 on) each
     * weight written turns `auto` off, and `auto` set back to true sets every weight itself. */
    for (int i = 0; i < count; i++)
        if (!file_holds(saved_paths[i], saved_values[i]) && write_text_file(saved_paths[i], saved_values[i]))
            failed = i;
    if (count && failed < 0) {
        /* Every weight is back: the file has nothing left to restore. A refused `auto` stays
         * refused until a reboot, and the warning says so once. */
        unlink(weights_state_path());
        if (saved_auto_path[0] && !strncmp(saved_auto, "true", 4) && !file_holds(saved_auto_path, "true") &&
            write_text_file(saved_auto_path, "true"))
            failed = count;
    }
    return failed;
}

static void restore_weights(void)
{
    int count = saved_count;
    int failed = write_back_weights();
    if (failed >= 0 && failed < count)
        fprintf(stderr, "%s: warning: could not restore %s to %s (%s); the machine is left changed: run "
                "`echo %s | sudo tee %s`\n", ns_program(), saved_paths[failed], saved_values[failed], strerror(errno),
                saved_values[failed], saved_paths[failed]);
    else if (failed >= 0)
        fprintf(stderr, "%s: warning: weights restored, but %s could not be set back to true (%s); the machine is "
                "left in manual weights: run `echo true | sudo tee %s`\n", ns_program(), saved_auto_path,
                strerror(errno), saved_auto_path);
}

static void restore_weights_on_signal(int sig)
{
    (void)write_back_weights();
    /* Then end as the signal would have ended the program (or as the handler before ours). */
    for (size_t i = 0; i < sizeof restore_signals / sizeof *restore_signals; i++)
        if (restore_signals[i] == sig)
            sigaction(sig, &previous_actions[i], NULL);
    raise(sig);
}

static void restore_weights_at_exit_and_on_signals(void)
{
    atexit(restore_weights);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = restore_weights_on_signal;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < sizeof restore_signals / sizeof *restore_signals; i++) {
        sigaction(restore_signals[i], NULL, &previous_actions[i]);
        /* An ignored signal (nohup) does not end the run: leave it ignored. */
        if (previous_actions[i].sa_handler != SIG_IGN)
            sigaction(restore_signals[i], &action, NULL);
    }
}

void ns_policy_current_weights(const ns_policy *policy, int *weights)
{
    char path[128];
    for (int i = 0; i < policy->nnodes; i++) {
        snprintf(path, sizeof path, "%s/node%d", WEIGHTS_DIR, policy->nodes[i]);
        if (read_int_file(path, &weights[i]))
            weights[i] = 0;
    }
}

/* This boot's id: a state file is this boot's only if it names it. A reboot resets the weights
 * (so an older file has nothing to restore, and writing its weights would turn a fresh `auto` off),
 * and a guest sharing the host's /var/tmp sees the host's file, not its own. */
static void boot_id(char *id, size_t len)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f || fscanf(f, "%36s", id) != 1)
        snprintf(id, len, "unknown");
    if (f)
        fclose(f);
}

/* The state file: "pid N", "boot ID", then one "PATH VALUE" line per weight saved (and the auto
 * switch). */
static void write_weights_state(void)
{
    const char *state = weights_state_path();
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", state, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        ns_warn("cannot record the weights to restore in %s (%s); a killed run leaves them changed", state,
                strerror(errno));
        return;
    }
    char boot[40];
    boot_id(boot, sizeof boot);
    fprintf(f, "pid %d\nboot %s\n", (int)getpid(), boot);
    for (int i = 0; i < saved_count; i++)
        fprintf(f, "%s %s\n", saved_paths[i], saved_values[i]);
    if (saved_auto_path[0] && !strncmp(saved_auto, "true", 4))
        fprintf(f, "%s true\n", saved_auto_path);
    if (fclose(f) || rename(tmp, state)) {
        ns_warn("cannot record the weights to restore in %s (%s)", state, strerror(errno));
        unlink(tmp);
    }
}

/* Weights left changed by a run that was killed (its PID no longer runs): write them back. */
static void restore_weights_of_killed_run(void)
{
    const char *state = weights_state_path();
    FILE *f = fopen(state, "r");
    if (!f)
        return;
    int pid = 0, restored = 0, failed = 0;
    char path[128], value[16], boot[40], ours[40];
    int fields = fscanf(f, "pid %d boot %39s", &pid, boot);
    if (fields < 1 || pid <= 0) {
        fclose(f); /* unreadable: leave it */
        return;
    }
    if (fields < 2)
        boot[0] = 0; /* written before boot ids were recorded */
    boot_id(ours, sizeof ours);
    if (strcmp(boot, ours)) {
        fclose(f);
        if (!unlink(state))
            ns_warn("removed %s, written by run PID %d of another boot or machine: the weights it saved were "
                    "reset by a reboot, so nothing of it is restored", state, pid);
        return;
    }
    if (kill(pid, 0) == 0 || errno == EPERM) {
        fclose(f); /* its run is still going: leave it */
        return;
    }
    while (fscanf(f, "%127s %15s", path, value) == 2) {
        if (strncmp(path, WEIGHTS_DIR, strlen(WEIGHTS_DIR)) || path[strlen(WEIGHTS_DIR)] != '/')
            continue; /* only the weights' own files */
        if (file_holds(path, value) || !write_text_file(path, value))
            restored++;
        else
            failed++;
    }
    fclose(f);
    if (failed)
        ns_warn("could not restore %d weighted-interleave setting(s) left by killed run PID %d (%s): run as root "
                "`while read p v; do case $p in pid|boot) ;; *) echo $v > $p ;; esac; done < %s`", failed, pid, state, state);
    else {
        unlink(state);
        ns_warn("restored %d weighted-interleave weight(s) left changed by killed run PID %d (from %s)", restored,
                pid, state);
    }
}

void ns_policy_apply_weights(const ns_policy *policy)
{
    if (policy->kind != NS_POLICY_WEIGHTED)
        return;
    restore_weights_of_killed_run();
    if (!policy->nweights)
        return;
    int current[NS_MAX_NODES];
    ns_policy_current_weights(policy, current);
    int differ = 0;
    for (int i = 0; i < policy->nnodes; i++)
        differ |= current[i] != policy->weights[i];
    if (!differ)
        return;
    char path[128], value[16];
    /* The kernel's "auto" switch (named auto, or __auto_type on some 6.18 builds). */
    const char *auto_names[] = {"auto", "__auto_type"};
    for (int i = 0; i < 2 && !saved_auto_path[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", WEIGHTS_DIR, auto_names[i]);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(saved_auto, sizeof saved_auto, f))
                snprintf(saved_auto_path, sizeof saved_auto_path, "%s", path);
            fclose(f);
        }
    }
    /* Whether `auto` can be set back is known before any weight is written: writing true where it
     * reads true changes nothing (the kernel sets the same weights from the same bandwidth), and
     * the kernel refuses it (ENODEV without HMAT/CDAT bandwidth) exactly where it would refuse to
     * set it back after the run. Said now, once; then neither restored nor recorded. */
    /* Without permission the first weight is refused below, in its own line. */
    if (saved_auto_path[0] && !strncmp(saved_auto, "true", 4) && write_text_file(saved_auto_path, "true") &&
        errno != EACCES && errno != EPERM) {
        ns_warn("%s is true but the kernel refuses to set it (%s): writing the weights turns the automatic "
                "weights off, and the machine is left in manual weights after this run: run `echo true | sudo tee "
                "%s` once the kernel accepts it, or set the weights by hand and omit --weights", saved_auto_path,
                strerror(errno), saved_auto_path);
        saved_auto[0] = 0;
    }
    /* Another process of this launch on the host (a rank beside this one) may have switched the
     * weights to manual already: its state file still holds the mode it found. */
    if (saved_auto_path[0] && strncmp(saved_auto, "true", 4)) {
        FILE *f = fopen(weights_state_path(), "r");
        char p[128], v[16];
        if (f) {
            while (fscanf(f, "%127s %15s", p, v) == 2)
                if (!strcmp(p, saved_auto_path) && !strcmp(v, "true"))
                    snprintf(saved_auto, sizeof saved_auto, "true");
            fclose(f);
        }
    }
    static int hooked;
    if (!hooked)
        restore_weights_at_exit_and_on_signals();
    hooked = 1;
    for (int i = 0; i < policy->nnodes; i++) {
        if (current[i] == policy->weights[i])
            continue;
        snprintf(path, sizeof path, "%s/node%d", WEIGHTS_DIR, policy->nodes[i]);
        snprintf(value, sizeof value, "%d", policy->weights[i]);
        if (current[i] == 0)
            ns_die("--weights: cannot set %s to %d (file missing): run as root, or set the weights beforehand and "
                   "omit --weights", path, policy->weights[i]);
        /* Saved before writing: a signal between the two then restores a value never changed. */
        snprintf(saved_paths[saved_count], sizeof saved_paths[0], "%s", path);
        snprintf(saved_values[saved_count], sizeof saved_values[0], "%d", current[i]);
        saved_count = saved_count + 1;
        write_weights_state();
        if (write_text_file(path, value)) {
            int e = errno;
            saved_count = saved_count - 1; /* nothing changed, nothing to restore */
            if (!saved_count)
                unlink(weights_state_path());
            ns_die("--weights: cannot set %s to %d (%s): run as root, or set the weights beforehand and omit --weights",
                   path, policy->weights[i], strerror(e));
        }
    }
}

void ns_policy_apply_range(const ns_policy *policy, void *addr, size_t len)
{
    if (policy->kind == NS_POLICY_INHERIT)
        return;
    unsigned long mask[MASK_LONGS];
    fill_mask(mask, policy->nodes, policy->nnodes);
    if (syscall(SYS_mbind, addr, (unsigned long)len, kernel_mode(policy->kind), mask, MASK_MAXNODE, 0u)) {
        char list[512];
        ns_format_int_list(policy->nodes, policy->nnodes, list, sizeof list);
        ns_die("--policy=%s --mem-nodes=%s: mbind failed: %s (does every node have memory?)",
               ns_policy_kind_name(policy->kind), list, strerror(errno));
    }
}

void ns_policy_apply_thread(const ns_policy *policy)
{
    if (policy->kind == NS_POLICY_INHERIT)
        return;
    unsigned long mask[MASK_LONGS];
    fill_mask(mask, policy->nodes, policy->nnodes);
    if (syscall(SYS_set_mempolicy, kernel_mode(policy->kind), mask, MASK_MAXNODE)) {
        char list[512];
        ns_format_int_list(policy->nodes, policy->nnodes, list, sizeof list);
        ns_die("--policy=%s --mem-nodes=%s: set_mempolicy failed: %s (does every node have memory?)",
               ns_policy_kind_name(policy->kind), list, strerror(errno));
    }
}

void ns_policy_observe(const void *addr, ns_observed_policy *out)
{
    unsigned long mask[MASK_LONGS];
    int mode = NS_MPOL_DEFAULT;
    memset(out, 0, sizeof *out);
    memset(mask, 0, sizeof mask);
    if (addr)
        if (syscall(SYS_get_mempolicy, &mode, mask, MASK_MAXNODE, addr, MPOL_F_ADDR_FLAG))
            mode = NS_MPOL_DEFAULT;
    /* No policy of the buffer's own: the thread's policy (e.g. from numactl) applies. */
    if ((mode & MODE_FLAGS_MASK) == NS_MPOL_DEFAULT) {
        memset(mask, 0, sizeof mask);
        if (syscall(SYS_get_mempolicy, &mode, mask, MASK_MAXNODE, NULL, 0))
            mode = NS_MPOL_DEFAULT;
    }
    mode &= MODE_FLAGS_MASK;
    static const char *names[] = {"default", "preferred", "bind", "interleave", "local", "preferred", "weighted"};
    snprintf(out->name, sizeof out->name, "%s", mode >= 0 && mode <= 6 ? names[mode] : "unknown");
    out->mode = mode;
    for (int node = 0; node < NS_MAX_NODES; node++)
        if (mask[node / (8 * sizeof *mask)] & (1ul << (node % (8 * sizeof *mask))))
            out->nodes[out->nnodes++] = node;
    if (mode == NS_MPOL_WEIGHTED_INTERLEAVE) {
        ns_policy tmp;
        tmp.nnodes = out->nnodes;
        memcpy(tmp.nodes, out->nodes, sizeof tmp.nodes);
        ns_policy_current_weights(&tmp, out->weights);
        out->nweights = out->nnodes;
    }
}
