/* CSV output: rows collected in memory, the file written to a temporary name in the same
 * folder and renamed over PATH, so a reader never sees half a file and a crash keeps the
 * previous complete version. Kernels rewrite the file after each finished step so that no
 * result already measured is lost. */
#ifndef NS_CSV_H
#define NS_CSV_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    char *data;
    size_t len;
    size_t cap;
} ns_text;

void ns_text_printf(ns_text *text, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ns_text_append(ns_text *text, const char *s);
void ns_text_free(ns_text *text);

/* Ends the program (exit 2) unless PATH's folder exists and is writable; call before measuring. */
void ns_csv_check_path(const char *path);
/* Write content to PATH via PATH.tmp.PID + rename; ends the program on failure. */
void ns_csv_write(const char *path, const ns_text *content);

#ifdef __cplusplus
}
#endif
#endif
