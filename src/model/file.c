/* Bounded reading of the model's input files (config.json, safetensors indexes and headers,
 * a hardware table) and of their JSON: no input makes llmprof read or allocate without
 * bound, or wait on a FIFO. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model_internal.h"

enum lp_status lp_model_file_read(const char *path, size_t max, const char *what, char **text,
                                  size_t *len, int *missing, char *err, size_t errlen)
{
    *text = NULL;
    *len = 0;
    if (missing)
        *missing = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; the type is checked next */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        if (missing)
            *missing = errno == ENOENT || errno == ENOTDIR;
        return LP_ERR_IO;
    }
    enum lp_status rc = LP_ERR_IO;
    char *buf = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file; %s", path, what);
        rc = LP_ERR_FORMAT;
        goto out;
    }
    if ((uint64_t)st.st_size > max) {
        snprintf(err, errlen, "%s: %lld bytes, larger than %zu: not %s", path,
                 (long long)st.st_size, max, what);
        rc = LP_ERR_FORMAT;
        goto out;
    }
    size_t size = (size_t)st.st_size, got = 0;
    buf = malloc(size + 1);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = LP_ERR_NOMEM;
        goto out;
    }
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) { /* an error, or a file that shrank while read */
            snprintf(err, errlen, "%s: %s", path, n < 0 ? strerror(errno) : "cut short while read");
            goto out;
        }
        got += (size_t)n;
    }
    buf[size] = 0;
    *text = buf;
    *len = size;
    buf = NULL;
    rc = LP_OK;
out:
    free(buf);
    close(fd);
    return rc;
}

/* An upper bound of the values (and members) a JSON text makes: one plus its commas, colons
 * and opening brackets outside strings. */
static size_t json_values_bound(const char *t, size_t len)
{
    size_t n = 1;
    int in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = t[i];
        if (in_string) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_string = 0;
        } else if (ch == '"') {
            in_string = 1;
        } else if (ch == ',' || ch == ':' || ch == '[' || ch == '{') {
            n++;
        }
    }
    return n;
}

json_t *lp_model_json_parse(const char *text, size_t len, size_t max_values, size_t flags,
                            const char *name, char *err, size_t errlen)
{
    size_t values = json_values_bound(text, len);
    if (values > max_values) {
        snprintf(err, errlen, "%s: about %zu JSON values, more than the %zu llmprof reads in one "
                              "file: not a model's file", name, values, max_values);
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_loadb(text, len, flags, &jerr);
    if (!root)
        snprintf(err, errlen, "%s: not valid JSON (line %d, column %d: %s)", name, jerr.line,
                 jerr.column, jerr.text);
    return root;
}
