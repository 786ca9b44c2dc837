/* Helpers shared by the CLI's subcommands. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "llmprof/trace.h"

/* a progress line is on the terminal: the next message replaces it */
static int progress_shown;

void lp_cli_progress(const char *cmd, const char *fmt, ...)
{
    if (!isatty(STDERR_FILENO))
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "\r\033[Kllmprof %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
    progress_shown = 1;
}

void lp_cli_progress_end(void)
{
    if (progress_shown)
        fputs("\r\033[K", stderr);
    progress_shown = 0;
}

void lp_cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    lp_cli_progress_end();
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

void lp_cli_trace_warnings(const char *cmd, const char *path, const struct lp_trace *t,
                           const char *what)
{
    if (t->complete && !t->n_warnings)
        return;
    lp_cli_error(cmd, "warning: %s is not whole (%s, %zu recovery warnings); the %s shows what "
                      "is there", path, t->complete ? "ended cleanly" : "no end chunk",
                 t->n_warnings, what);
    /* the first few: a corrupt file can have one per chunk, and info lists them all */
    size_t shown = t->n_warnings < 5 ? t->n_warnings : 5;
    for (size_t i = 0; i < shown; i++)
        fprintf(stderr, "    - reader: %s\n", t->warnings[i]);
    if (t->n_warnings > shown)
        fprintf(stderr, "    ... and %zu more ('llmprof info %s' lists them all)\n",
                t->n_warnings - shown, path);
}

/* The first number in the file PATH after KEY (KEY "": at its start), times SCALE; 0 when
 * there is none ("max" in a cgroup's memory.max: no limit) */
static uint64_t number_in(const char *path, const char *key, uint64_t scale)
{
    char buf[4096];
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *at = *key ? strstr(buf, key) : buf;
    if (!at)
        return 0;
    at += strlen(key);
    while (*at == ' ' || *at == '\t')
        at++;
    char *end;
    unsigned long long v = strtoull(at, &end, 10);
    return end == at || v > UINT64_MAX / scale ? 0 : (uint64_t)v * scale;
}

/* The least room (limit less usage, 1 at least) of cgroup DIR and the cgroups above it, as
 * LIMIT and USAGE (file names under ROOT DIR) give them; AVAIL when none is less */
static uint64_t cgroup_room(const char *root, char *dir, const char *limit, const char *usage,
                            uint64_t avail)
{
    char path[1024];
    for (;;) {
        snprintf(path, sizeof path, "%s%s/%s", root, dir, limit);
        uint64_t max = number_in(path, "", 1);
        snprintf(path, sizeof path, "%s%s/%s", root, dir, usage);
        uint64_t cur = number_in(path, "", 1), room = cur < max ? max - cur : 1;
        if (max && (!avail || room < avail))
            avail = room;
        char *slash = strrchr(dir, '/');
        if (!slash || !slash[1])
            return avail;
        slash[slash == dir] = 0; /* "/a/b" -> "/a" -> "/" */
    }
}

uint64_t lp_cli_memory_available(void)
{
    const char *env = getenv("LLMPROF_MEM_AVAILABLE_MIB");
    char *end;
    unsigned long long mib = env && *env ? strtoull(env, &end, 10) : 0;
    if (env && *env && !*end && mib <= (1ull << 40))
        return (uint64_t)mib << 20; /* 0: not known, no warning */
    uint64_t avail = number_in("/proc/meminfo", "MemAvailable:", 1024);
    /* this process's cgroup and those above it: "0::/PATH" (v2: memory.max, memory.current)
     * or "N:memory:/PATH" (v1: memory/PATH/memory.limit_in_bytes, memory.usage_in_bytes) */
    char line[512];
    FILE *f = fopen("/proc/self/cgroup", "r");
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *v1 = strstr(line, ":memory:");
        if (v1)
            avail = cgroup_room("/sys/fs/cgroup/memory", v1 + 8, "memory.limit_in_bytes",
                                "memory.usage_in_bytes", avail);
        else if (!strncmp(line, "0::", 3))
            avail = cgroup_room("/sys/fs/cgroup", line + 3, "memory.max", "memory.current",
                                avail);
    }
    if (f)
        fclose(f);
    return avail;
}

/* what a file of mode M is, said when it is refused as an input */
static const char *file_kind(mode_t m)
{
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISCHR(m))
        return "a character device";
    return S_ISBLK(m) ? "a block device" : "of another kind";
}

/* 1 when an input of mode M is refused: reading a FIFO (or socket, or device) waits for a
 * writer, or never ends; a directory is the caller's to say */
static int not_regular(mode_t m)
{
    return !S_ISREG(m) && !S_ISDIR(m);
}

int lp_cli_input_check(const char *cmd, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !not_regular(st.st_mode))
        return 0;
    lp_cli_error(cmd, "%s is %s, not a regular file, and reading it could wait forever: give "
                      "a regular file (copy what it carries into one)",
                 path, file_kind(st.st_mode));
    return -1;
}

/* The trace PATH and the run's meta.json beside it, before either is read: 0, or -1 with a
 * message when one is a FIFO, socket or device. */
static int check_trace_inputs(const char *cmd, const char *path)
{
    char meta[PATH_MAX + 16];
    if (lp_cli_input_check(cmd, path) != 0)
        return -1;
    return lp_cli_meta_path(path, meta, sizeof meta) == 0 ? lp_cli_input_check(cmd, meta) : 0;
}

int lp_cli_run_check(const char *cmd, const char *run)
{
    struct stat st;
    if (stat(run, &st) != 0 || !S_ISDIR(st.st_mode))
        return check_trace_inputs(cmd, run);
    char meta[PATH_MAX + 16];
    if (lp_cli_meta_path(run, meta, sizeof meta) == 0 && lp_cli_input_check(cmd, meta) != 0)
        return -1;
    /* a FIFO named like a trace is refused, not waited on */
    char **traces = NULL;
    int n = lp_cli_list_traces(run, &traces), rc = 0;
    for (int i = 0; rc == 0 && i < n; i++)
        rc = lp_cli_input_check(cmd, traces[i]);
    lp_cli_free_list(traces, n > 0 ? n : 0);
    return rc;
}

/* repeats.runs[I] of DIR/meta.json (PATH): one word naming a real directory of DIR (no
 * '/', not hidden, not a symbolic link), not named twice; 0, or -1 with a message */
static int repeat_name_ok(const char *cmd, const char *dir, const char *path, json_t *runs,
                          size_t i)
{
    const char *s = json_string_value(json_array_get(runs, i));
    char sub[PATH_MAX + 256];
    struct stat st;
    if (!s || !*s || s[0] == '.' || strchr(s, '/') || strlen(s) > 200) {
        lp_cli_error(cmd, "%s: repeats.runs[%zu] is not the name of one of its directories: "
                          "record the repeats again", path, i);
        return -1;
    }
    snprintf(sub, sizeof sub, "%s/%s", dir, s);
    if (lstat(sub, &st) != 0 || !S_ISDIR(st.st_mode)) {
        lp_cli_error(cmd, "%s: repeats.runs[%zu], %s, is not a directory there%s", path, i, sub,
                     lstat(sub, &st) == 0 && S_ISLNK(st.st_mode) ? " (a symbolic link)" : "");
        return -1;
    }
    for (size_t j = 0; j < i; j++)
        if (!strcmp(s, json_string_value(json_array_get(runs, j)))) {
            lp_cli_error(cmd, "%s: repeats.runs names %s twice: record the repeats again",
                         path, s);
            return -1;
        }
    return 0;
}

int lp_cli_repeats_read(const char *cmd, const char *dir, char ***names)
{
    char path[PATH_MAX + 16];
    struct stat st;
    if (names)
        *names = NULL;
    snprintf(path, sizeof path, "%s/meta.json", dir);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || stat(path, &st) != 0 ||
        !S_ISREG(st.st_mode) || st.st_size > (1 << 20))
        return 0;
    json_error_t e;
    json_t *meta = json_load_file(path, 0, &e), *rep = json_object_get(meta, "repeats");
    if (!rep) {
        json_decref(meta);
        return 0; /* a run's own meta.json, or none that reads */
    }
    json_t *runs = json_object_get(rep, "runs");
    size_t n = json_array_size(runs);
    int rc = (int)n;
    if (!json_is_array(runs) || n == 0 || n > LP_CLI_REPEATS_MAX) {
        lp_cli_error(cmd, "%s: repeats.runs is not a list of 1 to %d directories: record the "
                          "repeats again", path, LP_CLI_REPEATS_MAX);
        rc = -1;
    }
    for (size_t i = 0; rc > 0 && i < n; i++)
        if (repeat_name_ok(cmd, dir, path, runs, i) != 0)
            rc = -1;
    char **v = rc > 0 && names ? calloc(n, sizeof *v) : NULL;
    for (size_t i = 0; v && i < n; i++)
        if (!(v[i] = strdup(json_string_value(json_array_get(runs, i))))) {
            lp_cli_free_list(v, (int)n);
            v = NULL;
        }
    if (rc > 0 && names && !v) {
        lp_cli_error(cmd, "out of memory");
        rc = -1;
    }
    json_decref(meta);
    if (names)
        *names = rc > 0 ? v : NULL;
    return rc;
}

int lp_cli_repeats_said(const char *cmd, const char *dir)
{
    char **names;
    int n = lp_cli_repeats_read(cmd, dir, &names);
    if (n > 0)
        lp_cli_error(cmd, "%s holds %d repeat%s of one command (llmprof profile --repeat), "
                          "each a run of its own: give one, e.g. %s/%s ('llmprof report %s' "
                          "compares them)", dir, n, n == 1 ? "" : "s", dir, names[0], dir);
    lp_cli_free_list(names, n > 0 ? n : 0);
    return n != 0;
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
    if (lp_cli_run_check(cmd, run) != 0)
        return -1;
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
    else if (n == 0 && !lp_cli_repeats_said(cmd, run))
        lp_cli_error(cmd, "%s holds no trace (*.lpt): no process of the command initialised "
                          "CUDA, or the collector could not write there ('llmprof info %s' "
                          "says more)",
                     run, run);
    return n;
}

int lp_cli_mkdir_made(const char *dir, char ***made, size_t *n_made)
{
    char *tmp = *dir ? strdup(dir) : NULL;
    int rc = -1;
    if (!tmp) {
        errno = *dir ? ENOMEM : ENOENT;
        goto done;
    }
    /* each missing level, top down, listed so that a command that fails removes them */
    for (char *p = tmp + 1;; p++) {
        if (*p && *p != '/')
            continue;
        char c = *p;
        *p = 0;
        if (mkdir(tmp, 0755) == 0) {
            char **v = made ? realloc(*made, (*n_made + 1) * sizeof *v) : NULL;
            if (made && (!v || !(v[*n_made] = strdup(tmp)))) {
                if (v)
                    *made = v;
                rmdir(tmp);
                errno = ENOMEM;
                goto done;
            }
            if (made) {
                *made = v;
                (*n_made)++;
            }
        } else if (errno != EEXIST) {
            goto done;
        }
        *p = c;
        if (!c)
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0)
        goto done;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        goto done;
    }
    rc = 0;
done:
    free(tmp);
    return rc;
}

void lp_cli_unmake_dirs(char **made, size_t n_made, int remove)
{
    for (size_t i = n_made; i-- > 0;) {
        if (remove)
            rmdir(made[i]); /* one that holds files stays */
        free(made[i]);
    }
    free(made);
}

int lp_cli_meta_path(const char *path, char *buf, size_t len)
{
    struct stat st;
    const char *slash = strrchr(path, '/');
    int n;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        n = snprintf(buf, len, "%s/meta.json", path);
    else
        n = snprintf(buf, len, "%.*s/meta.json", slash ? (int)(slash - path) : 1,
                     slash ? path : ".");
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int lp_cli_run_meta(const char *dir)
{
    char path[PATH_MAX + 16];
    struct stat st;
    if (lp_cli_meta_path(dir, path, sizeof path) != 0)
        return -1;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISREG(st.st_mode) || st.st_size > (64 << 20))
        return -1;
    json_t *m = json_load_file(path, 0, NULL);
    const char *f = json_string_value(json_object_get(m, "format"));
    int ours = f && !strcmp(f, "llmprof-run");
    json_decref(m);
    return ours ? 1 : -1;
}

int lp_cli_dir_holds_run(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    size_t sl = strlen(LP_TRACE_SUFFIX);
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        found = l > 5 + sl && !strncmp(e->d_name, "trace", 5) &&
                !strcmp(e->d_name + l - sl, LP_TRACE_SUFFIX);
    }
    closedir(d);
    if (found)
        return 1;
    return lp_cli_run_meta(dir) == 1;
}

int lp_cli_meta_command(FILE *f, const json_t *cmd, const char *bad)
{
    if (!json_is_array(cmd))
        return -1;
    size_t i;
    const json_t *arg;
    int n_bad = 0;
    json_array_foreach(cmd, i, arg)
    {
        if (json_is_string(arg))
            fprintf(f, "%s%s", i ? " " : "", json_string_value(arg));
        else if (bad)
            fprintf(f, "%s%s", i ? " " : "", bad);
        n_bad += !json_is_string(arg);
    }
    return n_bad;
}

int lp_cli_resolve(const char *cmd, char *path, size_t len)
{
    if (strchr(cmd, '/')) {
        snprintf(path, len, "%s", cmd);
        struct stat st;
        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0 ? 0 : -1;
    }
    const char *env = getenv("PATH");
    char *dirs = strdup(env && *env ? env : "/usr/local/bin:/usr/bin:/bin");
    int rc = -1;
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(path, len, "%s/%s", *d ? d : ".", cmd);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0) {
            rc = 0;
            break;
        }
    }
    free(dirs);
    return rc;
}

const char *lp_cli_recorded_command(const char *path, char *buf, size_t len)
{
    char meta[PATH_MAX + 16], *words = NULL;
    size_t n = 0;
    struct stat st;
    /* a meta.json that is a FIFO is left unread (lp_cli_run_traces has refused it) */
    json_t *m = lp_cli_meta_path(path, meta, sizeof meta) == 0 && stat(meta, &st) == 0 &&
                        S_ISREG(st.st_mode)
                    ? json_load_file(meta, 0, NULL)
                    : NULL;
    FILE *f = open_memstream(&words, &n);
    if (f) {
        lp_cli_meta_command(f, json_object_get(m, "command"), NULL);
        fclose(f);
    }
    snprintf(buf, len, "%s", words ? words : "");
    free(words);
    json_decref(m);
    return buf[0] ? buf : NULL;
}

int lp_cli_one_trace(const char *cmd, const char *run, char *path, size_t len,
                     char **report_json)
{
    struct stat st;
    if (report_json)
        *report_json = NULL;
    char json_path[PATH_MAX];
    if (stat(run, &st) == 0 && S_ISDIR(st.st_mode) && lp_cli_dir_holds_run(run) == 0) {
        snprintf(json_path, sizeof json_path, "%s/report.json", run);
        if (lp_cli_input_check(cmd, json_path) != 0)
            return -1;
        json_error_t e;
        json_t *j = json_load_file(json_path, 0, &e);
        if (!j && lp_cli_repeats_said(cmd, run))
            return -1;
        if (!j) {
            lp_cli_error(cmd, "%s holds no trace (*.lpt) and no report.json: give a run "
                                 "directory of 'llmprof record', a .lpt trace, or a report "
                                 "directory", run);
            return -1;
        }
        const char *trace = json_string_value(json_object_get(json_object_get(j, "trace"),
                                                              "path"));
        int rc = -1;
        if (!trace) {
            lp_cli_error(cmd, "%s: no \"trace\": {\"path\"} (a report.json of llmprof "
                                 "report?): give the run directory instead", json_path);
        } else if (stat(trace, &st) != 0 || S_ISDIR(st.st_mode)) {
            lp_cli_error(cmd, "%s names the trace %s, which is not there (from here): give "
                                 "the run directory or the .lpt instead", json_path, trace);
        } else if (check_trace_inputs(cmd, trace) != 0) {
            /* said */
        } else if ((size_t)snprintf(path, len, "%s", trace) >= len) {
            lp_cli_error(cmd, "%s: the trace's path is too long", json_path);
        } else if (report_json && !(*report_json = strdup(json_path))) {
            lp_cli_error(cmd, "out of memory");
        } else {
            rc = 0;
        }
        json_decref(j);
        return rc;
    }
    char **traces = NULL;
    int n = lp_cli_run_traces(cmd, run, &traces);
    int rc = -1;
    if (n > 1)
        lp_cli_error(cmd, "%s holds %d traces (ranks or processes): give the one to compare, "
                             "e.g. %s", run, n, traces[0]);
    else if (n == 1 && (size_t)snprintf(path, len, "%s", traces[0]) >= len)
        lp_cli_error(cmd, "%s: the path is too long", traces[0]);
    else if (n == 1)
        rc = 0;
    lp_cli_free_list(traces, n > 0 ? n : 0);
    return rc;
}

int lp_cli_dir_holds_file(const char *dir, const char *file)
{
    char parent[PATH_MAX];
    const char *slash = strrchr(file, '/');
    snprintf(parent, sizeof parent, "%.*s", slash ? (int)(slash - file) + !(slash - file) : 1,
             slash ? file : ".");
    return lp_cli_same_file(dir, parent);
}

int lp_cli_same_file(const char *a, const char *b)
{
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}
