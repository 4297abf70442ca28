#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ns_error.h"

static const char *program = "numasweep";
static int quiet_errors;
static void (*exit_hook)(void);

/* Also makes stdout line-buffered: a job's log is a file, where stdio would otherwise hold every
 * progress line until the program ends, and `tail -f` on the log would show nothing. */
void ns_set_program(const char *name)
{
    program = name;
    setvbuf(stdout, NULL, _IOLBF, 0);
}
const char *ns_program(void) { return program; }
void ns_set_quiet_errors(int quiet) { quiet_errors = quiet; }
void ns_set_exit_hook(void (*hook)(void)) { exit_hook = hook; }

/* One line, written at once: MPI ranks share a job's log, and a line written in pieces (stderr
 * is unbuffered) would interleave with another rank's. A line longer than the buffer is cut. */
static void message(const char *kind, const char *fmt, va_list ap)
{
    if (quiet_errors)
        return;
    char line[4096];
    int head = snprintf(line, sizeof line, "%s: %s: ", program, kind);
    if (head < 0)
        line[0] = '\0';
    else if ((size_t)head < sizeof line)
        vsnprintf(line + head, sizeof line - (size_t)head, fmt, ap);
    size_t used = strlen(line); /* at most sizeof line - 1: the newline takes the terminator's place */
    line[used++] = '\n';
    fflush(stderr);
    (void)!write(fileno(stderr), line, used);
}

void ns_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    message("error", fmt, ap);
    va_end(ap);
    fflush(stdout);
    fflush(stderr);
    if (exit_hook) {
        void (*hook)(void) = exit_hook;
        exit_hook = NULL; /* a failing hook must not loop back here */
        hook();
    }
    exit(NS_EXIT_USAGE);
}

void ns_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    message("warning", fmt, ap);
    va_end(ap);
}
