#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ns_error.h"
#include "ns_size.h"

static int is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

int ns_parse_size(const char *text, uint64_t *bytes, char *err, size_t errlen)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '-') {
        snprintf(err, errlen, "size '%s' is negative: sizes must be positive", text);
        return -1;
    }
    if (!isdigit((unsigned char)*p)) {
        snprintf(err, errlen, "size '%s' is not a size: write a number of MiB (512) or one with K, M or G (64K, 1G)", text);
        return -1;
    }
    errno = 0;
    char *end;
    unsigned long long value = strtoull(p, &end, 10);
    if (errno == ERANGE) {
        snprintf(err, errlen, "size '%s' is too large", text);
        return -1;
    }
    while (isspace((unsigned char)*end))
        end++;
    uint64_t unit = 1ull << 20;
    char u = (char)toupper((unsigned char)*end);
    if (u == 'K' || u == 'M' || u == 'G') {
        unit = u == 'K' ? 1ull << 10 : u == 'M' ? 1ull << 20 : 1ull << 30;
        end++;
        if (!strcasecmp(end, "B") || !strcasecmp(end, "iB"))
            end += strlen(end);
    }
    while (isspace((unsigned char)*end))
        end++;
    if (*end) {
        snprintf(err, errlen, "size '%s' has an unknown unit: use K, M or G (a plain number is MiB)", text);
        return -1;
    }
    if (value == 0) {
        snprintf(err, errlen, "size '%s' is zero: sizes must be positive", text);
        return -1;
    }
    if (value > UINT64_MAX / unit) {
        snprintf(err, errlen, "size '%s' is too large", text);
        return -1;
    }
    *bytes = value * unit;
    return 0;
}

static int append(uint64_t **sizes, size_t *count, size_t *cap, uint64_t v)
{
    if (*count == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        uint64_t *n = realloc(*sizes, ncap * sizeof **sizes);
        if (!n)
            return -1;
        *sizes = n;
        *cap = ncap;
    }
    (*sizes)[(*count)++] = v;
    return 0;
}

int ns_parse_sizes(const char *text, uint64_t **sizes, size_t *count, char *err, size_t errlen)
{
    *sizes = NULL;
    *count = 0;
    size_t cap = 0;
    char *copy = strdup(text);
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (!*copy) {
        snprintf(err, errlen, "size list is empty: give sizes such as 1-16384 or 64K,1M");
        goto fail;
    }
    char *save = NULL;
    for (char *part = strtok_r(copy, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        /* A '-' after the first character separates a range; a leading one is a sign. */
        char *dash = strchr(part + 1, '-');
        if (!dash || part[0] == '-') {
            uint64_t v;
            if (ns_parse_size(part, &v, err, errlen) || append(sizes, count, &cap, v))
                goto fail;
            continue;
        }
        *dash = '\0';
        uint64_t lo, hi;
        if (ns_parse_size(part, &lo, err, errlen) || ns_parse_size(dash + 1, &hi, err, errlen)) {
            if (dash[1] == '-' || dash[1] == '\0')
                snprintf(err, errlen, "size range '%s-%s' is malformed: write A-B with positive sizes", part, dash + 1);
            goto fail;
        }
        if (lo > hi) {
            snprintf(err, errlen, "size range '%s-%s' runs backwards: write the smaller end first", part, dash + 1);
            goto fail;
        }
        if (!is_pow2(lo) || !is_pow2(hi)) {
            snprintf(err, errlen, "size range '%s-%s' must have powers of two at both ends (e.g. 1-16384)", part, dash + 1);
            goto fail;
        }
        for (uint64_t v = lo; v <= hi && v; v <<= 1)
            if (append(sizes, count, &cap, v))
                goto fail;
    }
    free(copy);
    if (!*count) {
        snprintf(err, errlen, "size list '%s' is empty: give sizes such as 1-16384 or 64K,1M", text);
        free(*sizes);
        *sizes = NULL;
        return -1;
    }
    return 0;
fail:
    free(copy);
    free(*sizes);
    *sizes = NULL;
    *count = 0;
    return -1;
}

uint64_t ns_size_arg(const char *option, const char *text)
{
    char err[256];
    uint64_t v;
    if (ns_parse_size(text, &v, err, sizeof err))
        ns_die("%s: %s", option, err);
    return v;
}

size_t ns_sizes_arg(const char *option, const char *text, uint64_t **sizes)
{
    char err[256];
    size_t n;
    if (ns_parse_sizes(text, sizes, &n, err, sizeof err))
        ns_die("%s: %s", option, err);
    return n;
}

const char *ns_size_unit_note(const char *text, char *buf, size_t len)
{
    /* The largest plain number of the list: the one most likely meant as bytes. */
    unsigned long long largest = 0;
    for (const char *p = text; *p;) {
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        int plain = end != p && (*end == '\0' || *end == ',' || *end == '-');
        if (plain && v > largest)
            largest = v;
        p = end != p ? end : p + 1;
        while (*p == ',' || *p == '-')
            p++;
    }
    buf[0] = '\0';
    if (largest < 65536) /* 64 GiB as MiB: below this a plain number is plausibly MiB */
        return buf;
    char as_mib[32], as_bytes[32];
    ns_format_size(largest > UINT64_MAX >> 20 ? UINT64_MAX : (uint64_t)largest << 20, as_mib, sizeof as_mib);
    ns_format_size((uint64_t)largest, as_bytes, sizeof as_bytes);
    if (largest % 1024)
        snprintf(buf, len, " (a plain number is MiB: %llu is read as %s; bytes are written with K, M or G)", largest,
                 as_mib);
    else
        snprintf(buf, len, " (a plain number is MiB: %llu is read as %s; for %llu bytes write %s)", largest, as_mib,
                 largest, as_bytes);
    return buf;
}

void ns_format_size(uint64_t bytes, char *buf, size_t len)
{
    if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0)
        snprintf(buf, len, "%lluG", (unsigned long long)(bytes >> 30));
    else if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
        snprintf(buf, len, "%lluM", (unsigned long long)(bytes >> 20));
    else if (bytes >= 1024 && bytes % 1024 == 0)
        snprintf(buf, len, "%lluK", (unsigned long long)(bytes >> 10));
    else
        snprintf(buf, len, "%llu", (unsigned long long)bytes);
}

long ns_int_arg(const char *option, const char *text, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno == ERANGE)
        ns_die("%s: '%s' is not a whole number", option, text);
    if (v < min || v > max)
        ns_die("%s: %ld is out of range: use %ld to %ld", option, v, min, max);
    return v;
}

double ns_double_arg(const char *option, const char *text, double min, double max)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || *end || errno == ERANGE || !isfinite(v))
        ns_die("%s: '%s' is not a number", option, text);
    if (v < min || v > max)
        ns_die("%s: %g is out of range: use %g to %g", option, v, min, max);
    return v;
}

int ns_int_list_arg(const char *option, const char *text, int *out, int max_count, long min, long max)
{
    int n = 0;
    const char *p = text;
    if (!*p)
        ns_die("%s: empty list: give comma-separated numbers such as 0,1", option);
    for (;;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno == ERANGE || (*end && *end != ','))
            ns_die("%s: '%s' is not a comma list of whole numbers (e.g. 0,1)", option, text);
        if (v < min || v > max)
            ns_die("%s: %ld is out of range: use %ld to %ld", option, v, min, max);
        if (n == max_count)
            ns_die("%s: more than %d entries", option, max_count);
        out[n++] = (int)v;
        if (!*end)
            break;
        p = end + 1;
    }
    return n;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int ns_parse_cpulist(const char *text, int *out, int max_count)
{
    int n = 0;
    const char *p = text;
    while (*p && *p != '\n') {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p || lo < 0)
            return -1;
        p = end;
        if (*p == '-') {
            hi = strtol(p + 1, &end, 10);
            if (end == p + 1 || hi < lo)
                return -1;
            p = end;
        }
        for (long v = lo; v <= hi; v++) {
            if (n == max_count)
                return -1;
            out[n++] = (int)v;
        }
        if (*p == ',')
            p++;
        else if (*p && *p != '\n')
            return -1;
    }
    qsort(out, (size_t)n, sizeof *out, cmp_int);
    int u = 0;
    for (int i = 0; i < n; i++)
        if (!u || out[u - 1] != out[i])
            out[u++] = out[i];
    return u;
}

void ns_format_cpulist(const int *ids, int count, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < count;) {
        int j = i;
        while (j + 1 < count && ids[j + 1] == ids[j] + 1)
            j++;
        int w = j > i ? snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", ids[i], ids[j])
                      : snprintf(buf + used, len - used, "%s%d", used ? "," : "", ids[i]);
        if (w < 0 || (size_t)w >= len - used)
            return;
        used += (size_t)w;
        i = j + 1;
    }
}

void ns_format_int_list(const int *ids, int count, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < count; i++) {
        int w = snprintf(buf + used, len - used, "%s%d", i ? "," : "", ids[i]);
        if (w < 0 || (size_t)w >= len - used)
            return;
        used += (size_t)w;
    }
}
