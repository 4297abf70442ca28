/* One-line user errors: "PROGRAM: error: message" on stderr, exit status 2. */
#ifndef NS_ERROR_H
#define NS_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* Exit status of every bad invocation or refused run. */
#define NS_EXIT_USAGE 2

/* Name printed before every message (the kernel's name, e.g. "numa_latency"); call it first in
 * main: it also makes stdout line-buffered, so a job log shows each progress line as it comes. */
void ns_set_program(const char *name);
const char *ns_program(void);

/* Silence messages in this process (non-zero MPI ranks print nothing, rank 0 speaks for all). */
void ns_set_quiet_errors(int quiet);

/* Called by ns_die just before exit, e.g. to finalise MPI so the launcher sees a clean exit 2. */
void ns_set_exit_hook(void (*hook)(void));

/* Print one line naming the problem and the fix, then exit 2. */
void ns_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* One-line warning "PROGRAM: warning: ..." on stderr; the run goes on. */
void ns_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#ifdef __cplusplus
}
#endif
#endif
