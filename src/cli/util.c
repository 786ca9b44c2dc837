/* Helpers shared by the CLI's subcommands. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "llmprof/trace.h"

void lp_cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "llmprof %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int lp_cli_exe_dir(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *slash = strrchr(buf, '/');
    if (!slash)
        return -1;
    *slash = 0;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int lp_cli_list_traces(const char *dir, char ***out)
{
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char **v = NULL;
    int n = 0;
    struct dirent *e;
    size_t sl = strlen(LP_TRACE_SUFFIX);
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= sl || strcmp(e->d_name + l - sl, LP_TRACE_SUFFIX) != 0)
            continue;
        char **p = realloc(v, (size_t)(n + 1) * sizeof *v);
        if (!p)
            break;
        v = p;
        if (asprintf(&v[n], "%s/%s", dir, e->d_name) < 0)
            break;
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(v, (size_t)n, sizeof *v, cmp_str);
    *out = v;
    return n;
}

void lp_cli_free_list(char **paths, int n)
{
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

void lp_cli_format_bytes(uint64_t b, char *buf, size_t len)
{
    if (b >= (1ull << 30))
        snprintf(buf, len, "%.2f GiB", (double)b / (double)(1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(buf, len, "%.2f MiB", (double)b / (double)(1ull << 20));
    else if (b >= 1024)
        snprintf(buf, len, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(buf, len, "%llu B", (unsigned long long)b);
}

void lp_cli_format_ns(uint64_t ns, char *buf, size_t len)
{
    if (ns >= 10000000000ull)
        snprintf(buf, len, "%.2f s", (double)ns / 1e9);
    else if (ns >= 1000000)
        snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%.1f us", (double)ns / 1e3);
}

int lp_cli_parse_i64(const char *cmd, const char *opt, const char *v, int64_t min, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long x = v ? strtoll(v, &end, 10) : 0;
    if (!v || errno || !*v || *end || x < min) {
        lp_cli_error(cmd, "%s takes a whole number >= %lld, not '%s'", opt, (long long)min,
                     v ? v : "(nothing)");
        return -1;
    }
    *out = x;
    return 0;
}

int lp_cli_parse_double(const char *cmd, const char *opt, const char *v, double *out)
{
    char *end = NULL;
    errno = 0;
    double x = v ? strtod(v, &end) : 0;
    if (!v || errno || !*v || *end || !(x > 0)) {
        lp_cli_error(cmd, "%s takes a number above 0, not '%s'", opt, v ? v : "(nothing)");
        return -1;
    }
    *out = x;
    return 0;
}

int lp_cli_parse_dtype(const char *cmd, const char *opt, const char *v, enum lp_dtype *d)
{
    if (!v || lp_dtype_parse(v, d) != 0) {
        lp_cli_error(cmd, "%s takes fp32, tf32, bf16, fp16, fp8, int8 or int4, not '%s'", opt,
                     v ? v : "(nothing)");
        return -1;
    }
    return 0;
}

int lp_cli_run_traces(const char *cmd, const char *run, char ***paths)
{
    *paths = NULL;
    struct stat st;
    if (stat(run, &st) != 0) {
        lp_cli_error(cmd, "%s: %s; give a run directory of 'llmprof record' or a .lpt trace",
                     run, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        char **v = malloc(sizeof *v);
        if (!v || !(v[0] = strdup(run))) {
            free(v);
            return -1;
        }
        *paths = v;
        return 1;
    }
    int n = lp_cli_list_traces(run, paths);
    if (n < 0)
        lp_cli_error(cmd, "cannot read the directory %s: %s", run, strerror(errno));
    else if (n == 0)
        lp_cli_error(cmd, "%s holds no trace (*.lpt): no process of the command initialised "
                          "CUDA, or the collector could not write there ('llmprof info %s' "
                          "says more)",
                     run, run);
    return n;
}

int lp_cli_mkdir_p(const char *dir)
{
    char tmp[PATH_MAX + 512];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}
