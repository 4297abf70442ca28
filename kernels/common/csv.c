#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ns_csv.h"
#include "ns_error.h"

static void reserve(ns_text *text, size_t extra)
{
    if (text->len + extra + 1 <= text->cap)
        return;
    size_t cap = text->cap ? text->cap : 4096;
    while (cap < text->len + extra + 1)
        cap *= 2;
    char *data = realloc(text->data, cap);
    if (!data)
        ns_die("out of memory while collecting results");
    text->data = data;
    text->cap = cap;
}

void ns_text_printf(ns_text *text, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0)
        return;
    reserve(text, (size_t)need);
    va_start(ap, fmt);
    vsnprintf(text->data + text->len, (size_t)need + 1, fmt, ap);
    va_end(ap);
    text->len += (size_t)need;
}

void ns_text_append(ns_text *text, const char *s) { ns_text_printf(text, "%s", s); }

void ns_text_free(ns_text *text)
{
    free(text->data);
    text->data = NULL;
    text->len = text->cap = 0;
}

static void folder_of(const char *path, char *dir, size_t len)
{
    char *copy = strdup(path);
    if (!copy)
        ns_die("out of memory");
    snprintf(dir, len, "%s", dirname(copy));
    free(copy);
}

void ns_csv_check_path(const char *path)
{
    char dir[4096];
    struct stat st;
    if (!*path)
        ns_die("--csv: empty path: give the file to write, e.g. --csv=results/run.csv");
    folder_of(path, dir, sizeof dir);
    if (stat(dir, &st) || !S_ISDIR(st.st_mode))
        ns_die("--csv=%s: folder '%s' does not exist: create it first", path, dir);
    if (access(dir, W_OK | X_OK))
        ns_die("--csv=%s: folder '%s' is not writable", path, dir);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        ns_die("--csv=%s is a folder: give a file name", path);
}

void ns_csv_write(const char *path, const ns_text *content)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        ns_die("--csv=%s: cannot write '%s': %s", path, tmp, strerror(errno));
    size_t n = content->len ? fwrite(content->data, 1, content->len, f) : 0;
    int bad = n != content->len;
    bad |= fflush(f) != 0;
    bad |= fsync(fileno(f)) != 0 && errno != EINVAL;
    bad |= fclose(f) != 0;
    if (bad) {
        int e = errno;
        unlink(tmp);
        ns_die("--csv=%s: writing '%s' failed: %s", path, tmp, strerror(e));
    }
    if (rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        ns_die("--csv=%s: renaming the finished file failed: %s", path, strerror(e));
    }
}
