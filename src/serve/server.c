/* The HTTP side of llmprof serve, on libmicrohttpd: the contract's paths (docs/openapi.yaml,
 * served as it is), bearer-token checks, bodies of at most 64 KiB, a bounded queue, the
 * artifacts of a run read through its directory only (no link followed, no ".."), and a web
 * page of the runs. The runs themselves are the worker's (worker.c). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "openapi_yaml.h" /* lp_openapi_yaml: docs/openapi.yaml, compiled in */
#include "worker.h"

struct server {
    const struct lp_serve_config *cfg;
    char dir[4096];               /* the runs directory, absolute */
    struct lp_store store;
    struct lp_worker worker;
    int lock_fd;                  /* DIR/lock, held while serving */
};

struct body {
    char *buf;
    size_t n;
    int too_big;
};

/* TEXT (N bytes) as the body of a CODE response: freed when MINE, else kept (static) */
static enum MHD_Result send_bytes(struct MHD_Connection *c, unsigned code, const char *type,
                                  char *text, size_t n, int mine)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        n, text, mine ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (mine)
            free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned code, const char *type,
                                 char *text, size_t n)
{
    return send_bytes(c, code, type, text, n, 1);
}

/* J (taken) as the body of a CODE response; none (a run gone meanwhile, memory): a 500 */
static enum MHD_Result send_json(struct MHD_Connection *c, unsigned code, json_t *j)
{
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!text) {
        static char fallback[] = "{\"error\":\"the answer could not be made (the run changed "
                                 "meanwhile?): ask again\"}";
        return send_bytes(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "application/json", fallback,
                          sizeof fallback - 1, 0);
    }
    return send_text(c, code, "application/json", text, strlen(text));
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned code, const char *msg)
{
    return send_json(c, code, json_pack("{s:s}", "error", msg));
}


static void new_id(char id[LP_SERVE_ID_LEN + 1])
{
    unsigned char rnd[3] = {0};
    if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd) {
        unsigned v = (unsigned)clock() ^ (unsigned)getpid();
        memcpy(rnd, &v, sizeof rnd);
    }
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    char stamp[20];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    snprintf(id, LP_SERVE_ID_LEN + 1, "%.15s-%02x%02x%02x", stamp, rnd[0], rnd[1], rnd[2]);
}

/* the Run object with its artifacts_dir (the object taken, NULL passed on) */
static json_t *with_dir(struct server *s, json_t *run)
{
    if (!run)
        return NULL;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/runs/%s", s->dir, json_string_value(json_object_get(run,
                                                                                      "run_id")));
    json_object_set_new(run, "artifacts_dir", json_string(dir));
    return run;
}

/* ---- artifacts: the run directory's regular files, never through a link ---- */

/* Adds DIRFD's regular files under PREFIX to LIST, DEPTH levels down at most. */
static void walk(int dirfd, const char *prefix, int depth, json_t *list)
{
    DIR *d = fdopendir(dirfd);
    if (!d) {
        close(dirfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) && json_array_size(list) < 10000) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        char name[1024];
        snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "/" : "", e->d_name);
        if (S_ISREG(st.st_mode))
            json_array_append_new(list, json_pack("{s:s,s:I}", "name", name, "bytes",
                                                  (json_int_t)st.st_size));
        else if (S_ISDIR(st.st_mode) && depth > 0) {
            int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                walk(sub, name, depth - 1, list);
        }
    }
    closedir(d);
}

/* NAME ("repeat-1/report.md") opened under the run directory, one component at a time, no
 * link followed and no "." or "..": a descriptor of a regular file, or -1 */
static int open_artifact(const char *run_dir, const char *name, struct stat *st)
{
    int fd = open(run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    char part[256];
    const char *p = name;
    while (fd >= 0) {
        size_t n = strcspn(p, "/");
        if (n == 0 || n >= sizeof part) {
            close(fd);
            return -1;
        }
        memcpy(part, p, n);
        part[n] = 0;
        if (!strcmp(part, ".") || !strcmp(part, "..")) {
            close(fd);
            return -1;
        }
        int last = p[n] == 0;
        int next = openat(fd, part,
                          (last ? O_RDONLY : O_RDONLY | O_DIRECTORY) | O_NOFOLLOW | O_CLOEXEC |
                              O_NONBLOCK);
        close(fd);
        fd = next;
        if (last)
            break;
        p += n + 1;
    }
    if (fd >= 0 && (fstat(fd, st) != 0 || !S_ISREG(st->st_mode))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static enum MHD_Result artifacts(struct server *s, struct MHD_Connection *c, const char *id,
                                 const char *name)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/runs/%s", s->dir, id);
    json_t *run = lp_store_get(&s->store, id);
    if (!run)
        return send_error(c, MHD_HTTP_NOT_FOUND, "no such run");
    json_decref(run);
    if (!name) {
        json_t *list = json_array();
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0)
            walk(fd, "", 3, list);
        return send_json(c, MHD_HTTP_OK, json_pack("{s:s,s:o}", "run_id", id, "artifacts", list));
    }
    struct stat st;
    int fd = open_artifact(dir, name, &st);
    if (fd < 0)
        return send_error(c, MHD_HTTP_NOT_FOUND, "no such artifact in the run (names as GET "
                                                 "/runs/{run_id}/artifacts lists them)");
    struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (!r) {
        close(fd);
        return MHD_NO;
    }
    const char *dot = strrchr(name, '.');
    /* written by the profiled program: its pages run with no access to this server's
     * origin (a page of it could otherwise start and delete runs) */
    MHD_add_response_header(r, "Content-Security-Policy", "sandbox allow-scripts");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "Content-Type",
                            dot && !strcmp(dot, ".html")  ? "text/html; charset=utf-8"
                            : dot && !strcmp(dot, ".json") ? "application/json"
                            : dot && (!strcmp(dot, ".md") || !strcmp(dot, ".csv") ||
                                      !strcmp(dot, ".txt"))
                                ? "text/plain; charset=utf-8"
                                : "application/octet-stream");
    enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}

/* ---- runs ---- */

static enum MHD_Result submit(struct server *s, struct MHD_Connection *c, struct body *b)
{
    const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    if (b->too_big)
        return send_error(c, MHD_HTTP_CONTENT_TOO_LARGE, "the body is over 64 KiB");
    if (!type || strncasecmp(type, "application/json", 16) != 0 ||
        (type[16] && type[16] != ';' && type[16] != ' '))
        return send_error(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
                          "send the request as Content-Type: application/json");
    char err[512], id[LP_SERVE_ID_LEN + 1];
    const struct lp_serve_runner *runner = NULL;
    json_t *req = lp_serve_request_check(b->buf ? b->buf : "", b->n, s->cfg, &runner, err,
                                         sizeof err);
    if (!req)
        return send_error(c, MHD_HTTP_BAD_REQUEST, err);
    int rc = -1;
    for (int tries = 0; rc < 0 && tries < 5; tries++) { /* an id taken: draw again */
        new_id(id);
        rc = lp_store_add(&s->store, id, runner->name,
                          json_string_value(json_object_get(req, "tag")), req,
                          s->cfg->queue_max);
    }
    json_decref(req);
    if (rc == 1)
        return send_error(c, MHD_HTTP_TOO_MANY_REQUESTS,
                          "the queue is full: try again once a run has finished");
    if (rc != 0)
        return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                          "the run could not be added to the index (disk full?)");
    lp_worker_wake(&s->worker);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/runs/%s", s->dir, id);
    return send_json(c, MHD_HTTP_ACCEPTED, json_pack("{s:s,s:s,s:s}", "run_id", id, "status",
                                                      "queued", "artifacts_dir", dir));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)f;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static enum MHD_Result cancel_or_remove(struct server *s, struct MHD_Connection *c,
                                        const char *id)
{
    json_t *run = lp_store_get(&s->store, id);
    if (!run)
        return send_error(c, MHD_HTTP_NOT_FOUND, "no such run");
    const char *status = json_string_value(json_object_get(run, "status"));
    int queued = !strcmp(status, "queued") ? lp_store_cancel_queued(&s->store, id) : 0;
    if (queued < 0) {
        json_decref(run);
        return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                          "the index cannot be written (disk full?): the run was not cancelled");
    }
    if (queued == 1) {
        json_decref(run);
        return send_json(c, MHD_HTTP_OK, with_dir(s, lp_store_get(&s->store, id)));
    }
    if (!strcmp(status, "running") || !strcmp(status, "queued")) {
        json_decref(run);
        lp_worker_cancel(&s->worker, id);
        /* the worker records the end once the run's processes are gone */
        for (int i = 0; i < 300; i++) {
            run = lp_store_get(&s->store, id);
            status = run ? json_string_value(json_object_get(run, "status")) : "";
            if (strcmp(status, "running") && strcmp(status, "queued"))
                return send_json(c, MHD_HTTP_OK, with_dir(s, run));
            json_decref(run);
            if (i % 20 == 19)
                lp_worker_cancel(&s->worker, id);
            usleep(50 * 1000);
        }
        return send_error(c, MHD_HTTP_SERVICE_UNAVAILABLE,
                          "the run did not stop within 15 s; ask again");
    }
    char dir[4200], log[4200];
    snprintf(dir, sizeof dir, "%s/runs/%s", s->dir, id);
    snprintf(log, sizeof log, "%s/logs/%s.log", s->dir, id);
    /* the row first: a run the index no longer lists is gone, whatever of its files stays */
    if (lp_store_remove(&s->store, id) != 0) {
        json_decref(run);
        return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                          "the index cannot be written (disk full?): the run was not removed");
    }
    if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        json_object_set_new(run, "error", json_string("removed from the index; some of its "
                                                      "files could not be deleted"));
    unlink(log);
    json_object_set_new(run, "status", json_string("removed"));
    return send_json(c, MHD_HTTP_OK, with_dir(s, run));
}

/* ---- the web page ---- */

static void html_puts(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

static void html_number(FILE *f, json_t *v, double scale, const char *unit)
{
    if (json_is_number(v))
        fprintf(f, "%.3f %s", json_number_value(v) * scale, unit);
    else
        fputs("–", f);
}

static enum MHD_Result page(struct server *s, struct MHD_Connection *c)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f)
        return MHD_NO;
    json_t *runs = lp_store_list(&s->store), *run;
    size_t i;
    fputs("<!doctype html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" "
          "content=\"5\"><title>llmprof runs</title><style>body{font-family:sans-serif;margin:"
          "2em}table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid "
          "#ddd;text-align:left}</style></head><body><h1>llmprof runs</h1>",
          f);
    fprintf(f, "<p id=\"count\">%zu run%s; this page refreshes every 5 s. "
               "<a href=\"openapi.yaml\">API</a></p>",
            json_array_size(runs), json_array_size(runs) == 1 ? "" : "s");
    fputs("<table id=\"runs\"><tr><th>run</th><th>status</th><th>tag</th><th>runner</th>"
          "<th>created</th><th>TTFT</th><th>TPOT</th><th>MFU</th><th>files</th></tr>",
          f);
    json_array_foreach(runs, i, run) {
        const char *id = json_string_value(json_object_get(run, "run_id"));
        json_t *h = json_object_get(run, "headline");
        fputs("<tr><td>", f);
        html_puts(f, id);
        fputs("</td><td class=\"status\">", f);
        html_puts(f, json_string_value(json_object_get(run, "status")));
        fputs("</td><td>", f);
        html_puts(f, json_string_value(json_object_get(run, "tag")));
        fputs("</td><td>", f);
        html_puts(f, json_string_value(json_object_get(run, "runner")));
        fputs("</td><td>", f);
        html_puts(f, json_string_value(json_object_get(run, "created")));
        fputs("</td><td>", f);
        html_number(f, json_object_get(h, "ttft_s"), 1e3, "ms");
        fputs("</td><td>", f);
        html_number(f, json_object_get(h, "tpot_s"), 1e3, "ms");
        fputs("</td><td>", f);
        html_number(f, json_object_get(h, "mfu"), 100, "%");
        fprintf(f, "</td><td><a href=\"runs/%s/artifacts/report.html\">report</a> "
                   "<a href=\"runs/%s/artifacts\">files</a></td></tr>",
                id, id); /* ids are checked: digits, '-' and hex */
    }
    fputs("</table></body></html>\n", f);
    fclose(f);
    json_decref(runs);
    return send_text(c, MHD_HTTP_OK, "text/html; charset=utf-8", text, n);
}

/* ---- routing ---- */

static int authorised(struct server *s, struct MHD_Connection *c)
{
    if (!s->cfg->token)
        return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    size_t tl = strlen(s->cfg->token);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0 || strlen(h + 7) != tl)
        return 0;
    unsigned char diff = 0; /* the same time whatever the first wrong byte */
    for (size_t i = 0; i < tl; i++)
        diff |= (unsigned char)(h[7 + i] ^ s->cfg->token[i]);
    return diff == 0;
}

static enum MHD_Result route(struct server *s, struct MHD_Connection *c, const char *url,
                             const char *method, struct body *b)
{
    int get = !strcmp(method, "GET"), post = !strcmp(method, "POST"),
        del = !strcmp(method, "DELETE");
    if (get && !strcmp(url, "/openapi.yaml")) /* the contract, to anyone */
        return send_bytes(c, MHD_HTTP_OK, "application/yaml", (char *)lp_openapi_yaml,
                          sizeof lp_openapi_yaml - 1, 0);
    if (!authorised(s, c))
        return send_error(c, MHD_HTTP_UNAUTHORIZED,
                          "give the server's token: Authorization: Bearer TOKEN");
    if (!strcmp(url, "/") && get)
        return page(s, c);
    if (!strcmp(url, "/runs")) {
        if (post)
            return submit(s, c, b);
        if (get) {
            json_t *runs = lp_store_list(&s->store), *run;
            size_t i;
            json_array_foreach(runs, i, run) with_dir(s, run);
            return send_json(c, MHD_HTTP_OK, json_pack("{s:o}", "runs", runs));
        }
    } else if (!strncmp(url, "/runs/", 6)) {
        char id[LP_SERVE_ID_LEN + 1];
        const char *rest = url + 6;
        size_t n = strcspn(rest, "/");
        snprintf(id, sizeof id, "%.*s", (int)(n < sizeof id ? n : 0), rest);
        if (n != LP_SERVE_ID_LEN || !lp_serve_id_valid(id))
            return send_error(c, MHD_HTTP_NOT_FOUND, "no such run");
        rest += n;
        if (!*rest && get) {
            json_t *run = lp_store_get(&s->store, id);
            return run ? send_json(c, MHD_HTTP_OK, with_dir(s, run))
                       : send_error(c, MHD_HTTP_NOT_FOUND, "no such run");
        }
        if (!*rest && del)
            return cancel_or_remove(s, c, id);
        if (get && !strcmp(rest, "/artifacts"))
            return artifacts(s, c, id, NULL);
        if (get && !strncmp(rest, "/artifacts/", 11) && rest[11])
            return artifacts(s, c, id, rest + 11);
    }
    return send_error(c, MHD_HTTP_NOT_FOUND, "no such path: see GET /openapi.yaml");
}

/* The URL's %XX decoded in place, but for %00: a name cut at a NUL would stand for another
 * file, so "%00" stays as it is (and names nothing). Returns the new length. */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; s[i]; i++) {
        const char *hi = s[i] == '%' && s[i + 1] ? strchr(hex, s[i + 1] | 0x20) : NULL;
        const char *lo = hi && s[i + 2] ? strchr(hex, s[i + 2] | 0x20) : NULL;
        int v = lo ? (int)(hi - hex) * 16 + (int)(lo - hex) : 0;
        if (v != 0) {
            s[o++] = (char)v;
            i += 2;
        } else {
            s[o++] = s[i];
        }
    }
    s[o] = 0;
    return o;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_n, void **ctx)
{
    (void)version;
    struct server *s = cls;
    if (!*ctx) {
        struct body *b = calloc(1, sizeof *b);
        if (!b)
            return MHD_NO;
        *ctx = b;
        return MHD_YES;
    }
    struct body *b = *ctx;
    if (*upload_n) {
        if (!b->too_big && b->n + *upload_n <= LP_SERVE_BODY_MAX) {
            char *nb = realloc(b->buf, b->n + *upload_n + 1);
            if (!nb)
                return MHD_NO;
            b->buf = nb;
            memcpy(b->buf + b->n, upload, *upload_n);
            b->n += *upload_n;
            b->buf[b->n] = 0;
        } else {
            b->too_big = 1; /* read on to the end, then answer 413 */
        }
        *upload_n = 0;
        return MHD_YES;
    }
    return route(s, c, url, method, b);
}

static void done(void *cls, struct MHD_Connection *c, void **ctx,
                 enum MHD_RequestTerminationCode why)
{
    (void)cls;
    (void)c;
    (void)why;
    struct body *b = *ctx;
    if (b)
        free(b->buf);
    free(b);
    *ctx = NULL;
}

/* ---- the server's life ---- */

static int make_dirs(struct server *s, char *err, size_t len)
{
    const char *dir = s->cfg->runs_dir;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, len, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!realpath(dir, s->dir)) {
        snprintf(err, len, "%s: %s", dir, strerror(errno));
        return -1;
    }
    /* one server per directory: two would run two profiles on one GPU at once */
    char lock[4200];
    snprintf(lock, sizeof lock, "%s/lock", s->dir);
    s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(err, len, "%s is served by another llmprof serve (its lock: %s)", dir, lock);
        return -1;
    }
    static const char *const subs[] = {"runs", "logs"};
    for (size_t i = 0; i < 2; i++) {
        char sub[4200];
        snprintf(sub, sizeof sub, "%s/%s", s->dir, subs[i]);
        if (mkdir(sub, 0755) != 0 && errno != EEXIST) {
            snprintf(err, len, "cannot create %s: %s", sub, strerror(errno));
            return -1;
        }
    }
    return 0;
}

static struct MHD_Daemon *listen_on(struct server *s, unsigned *port, char *err, size_t len)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)*port)};
    if (inet_pton(AF_INET, s->cfg->host, &addr.sin_addr) != 1) {
        snprintf(err, len, "--listen: '%s' is not an IPv4 address", s->cfg->host);
        return NULL;
    }
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handle, s,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)4, MHD_OPTION_CONNECTION_LIMIT, (unsigned)1000, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)60, MHD_OPTION_NOTIFY_COMPLETED, done, NULL, MHD_OPTION_UNESCAPE_CALLBACK,
        unescape, NULL, MHD_OPTION_END);
    if (!d) {
        snprintf(err, len, "cannot listen on %s:%u (in use, or not this machine's address)",
                 s->cfg->host, *port);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_in got;
    socklen_t gl = sizeof got;
    if (info && getsockname(info->listen_fd, (struct sockaddr *)&got, &gl) == 0)
        *port = ntohs(got.sin_port);
    return d;
}

int lp_serve_run(const struct lp_serve_config *cfg, volatile sig_atomic_t *stop, char *err,
                 size_t len)
{
    struct server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, len, "out of memory");
        return -1;
    }
    s->cfg = cfg;
    s->lock_fd = -1;
    char index[4200];
    int rc = -1, store_open = 0, worker_on = 0;
    struct MHD_Daemon *d = NULL;
    unsigned port = cfg->port;
    if (make_dirs(s, err, len) != 0)
        goto out;
    snprintf(index, sizeof index, "%s/index.db", s->dir);
    if (lp_store_open(&s->store, index, err, len) != 0)
        goto out;
    store_open = 1;
    if (!(d = listen_on(s, &port, err, len)))
        goto out;
    if (lp_worker_start(&s->worker, cfg, &s->store, s->dir) != 0) {
        snprintf(err, len, "cannot start the worker thread");
        goto out;
    }
    worker_on = 1;
    printf("llmprof serve: listening on http://%s:%u/ (runs in %s)\n", cfg->host, port, s->dir);
    fflush(stdout);
    while (!*stop)
        usleep(100 * 1000);
    rc = 0;
out:
    if (d)
        MHD_stop_daemon(d);
    if (worker_on)
        lp_worker_stop(&s->worker);
    if (store_open)
        lp_store_close(&s->store);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    free(s);
    return rc;
}
