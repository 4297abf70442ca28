/* Sizes and lists as users write them.
 *
 * A size is a plain number of MiB (the seeds' "--size=512"), or a number with K, M or G
 * (optionally KB/KiB, MB/MiB, GB/GiB, any case), all binary. A size list is a comma list of
 * sizes and ranges; a range "A-B" is every power of two from A to B, both ends powers of two,
 * A <= B (so "1-16384" is 1 MiB, 2 MiB, ..., 16 GiB). Same rules as numasweep.units.
 */
#ifndef NS_SIZE_H
#define NS_SIZE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 0 on success; -1 with a message (naming the text) in err. */
int ns_parse_size(const char *text, uint64_t *bytes, char *err, size_t errlen);
/* *sizes is malloc'ed (caller frees); sizes keep the order written. */
int ns_parse_sizes(const char *text, uint64_t **sizes, size_t *count, char *err, size_t errlen);

/* The same, but a bad value ends the program with "OPTION: message" (exit 2). */
uint64_t ns_size_arg(const char *option, const char *text);
size_t ns_sizes_arg(const char *option, const char *text, uint64_t **sizes);

/* For an error about a size given as text: when the text holds a plain number large enough to
 * be meant as bytes (>= 65536, i.e. 64 GiB when read as MiB), " (a plain number is MiB: N is read
 * as X; for N bytes write Y)" in buf, else "". Returns buf. */
const char *ns_size_unit_note(const char *text, char *buf, size_t len);

/* Short human form: 16K, 1M, 1536K, 2G (exact; falls back to bytes). */
void ns_format_size(uint64_t bytes, char *buf, size_t len);

/* A strictly positive decimal integer in [min, max]; ends the program otherwise. */
long ns_int_arg(const char *option, const char *text, long min, long max);
/* A strictly positive finite number; ends the program otherwise. */
double ns_double_arg(const char *option, const char *text, double min, double max);

/* Comma list of integers, each in [min, max] ("0,3"); returns the count, ends the program on
 * a bad entry or more than max_count entries. */
int ns_int_list_arg(const char *option, const char *text, int *out, int max_count, long min, long max);

/* CPU list "0-3,8,10-11" -> sorted unique ids; returns count or -1 if malformed. */
int ns_parse_cpulist(const char *text, int *out, int max_count);
/* Sorted ids -> "0-3,8,10-11". */
void ns_format_cpulist(const int *ids, int count, char *buf, size_t len);
/* Ids as written, comma separated: "0,3". */
void ns_format_int_list(const int *ids, int count, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
