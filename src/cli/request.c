/* The program's request: what a recorded program says it was asked to do (the plan's request
 * fields: model path, input directory, repeats, ...). record hands the program an empty file
 * in the run directory through LLMPROF_REQUEST_FILE; a JSON object the program writes there
 * is checked and kept in meta.json's "request", and report carries it into report.json. The
 * file is record's own, made per run and removed after it, so no earlier run's request, and
 * no file the user put in the directory, is ever taken for this one. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "llmprof/report.h"

#define REQUEST_MAX_BYTES (64 * 1024)

int lp_cli_request_make(const char *abs_dir, char *path, size_t len)
{
    int n = snprintf(path, len, "%s/.llmprof-request.XXXXXX", abs_dir);
    if (n < 0 || (size_t)n >= len)
        return -1;
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) {
        path[0] = 0;
        return -1;
    }
    close(fd);
    return 0;
}

/* PATH's text as the program left it, or NULL with *WHY set. */
static char *request_text(const char *path, size_t *n, const char **why)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    char *text = NULL;
    *n = 0;
    if (fd < 0) {
        *why = errno == ENOENT ? NULL /* removed: no request */
               : errno == ELOOP ? "it was replaced by a link"
                                : strerror(errno);
        return NULL;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        *why = "it is no longer a regular file";
    else if (st.st_size > REQUEST_MAX_BYTES)
        *why = "it is larger than 64 KiB";
    else if (!(text = malloc((size_t)st.st_size + 1)))
        *why = "out of memory";
    else {
        ssize_t got = read(fd, text, (size_t)st.st_size);
        if (got < 0) {
            *why = strerror(errno);
            free(text);
            text = NULL;
        } else {
            *n = (size_t)got;
        }
    }
    close(fd);
    return text;
}

void lp_cli_request_take(const char *path, json_t *meta)
{
    if (!path || !path[0])
        return;
    size_t n = 0;
    const char *why = NULL;
    char *text = request_text(path, &n, &why);
    json_t *req = NULL;
    json_error_t e;
    char shown[160] = "";
    /* only white space: nothing stated, like an empty file */
    if (text && n > 0 && strspn(text, " \t\r\n") < n) {
        req = json_loadb(text, n, JSON_REJECT_DUPLICATES, &e);
        if (!req) {
            why = "it is not JSON";
            lp_fmt_escape(shown, sizeof shown, e.text); /* it quotes the program's bytes */
        } else if (!json_is_object(req)) {
            why = "it is not a JSON object";
        }
    }
    if (why) {
        fprintf(stderr,
                "llmprof record: warning: the request the program wrote to "
                "LLMPROF_REQUEST_FILE is left out of meta.json: %s%s%s\n",
                why, shown[0] ? ": " : "", shown);
        json_object_set_new(meta, "request_error", json_string(why));
    } else if (req) {
        json_object_set(meta, "request", req);
    }
    json_decref(req);
    free(text);
    /* a directory the program put in its place goes too when it is empty */
    if (unlink(path) != 0 && errno != ENOENT && !(errno == EISDIR && rmdir(path) == 0))
        fprintf(stderr, "llmprof record: warning: could not remove %s: %s\n", path,
                strerror(errno));
}

char *lp_cli_recorded_request(const char *trace_path)
{
    char meta[PATH_MAX + 16];
    struct stat st;
    if (lp_cli_meta_path(trace_path, meta, sizeof meta) != 0 || stat(meta, &st) != 0 ||
        !S_ISREG(st.st_mode))
        return NULL;
    json_t *m = json_load_file(meta, 0, NULL);
    json_t *req = json_object_get(m, "request");
    char *text = json_is_object(req) ? json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(m);
    return text;
}
