#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ns_error.h"

static const char *program = "numasweep";
static int quiet_errors;
static void (*exit_hook)(void);

void ns_set_program(const char *name) { program = name; }
const char *ns_program(void) { return program; }
void ns_set_quiet_errors(int quiet) { quiet_errors = quiet; }
void ns_set_exit_hook(void (*hook)(void)) { exit_hook = hook; }

static void message(const char *kind, const char *fmt, va_list ap)
{
    if (quiet_errors)
        return;
    fprintf(stderr, "%s: %s: ", program, kind);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
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
