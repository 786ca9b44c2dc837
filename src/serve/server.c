/* The HTTP side of llmprof serve, on libmicrohttpd: the contract's paths (docs/openapi.yaml,
 * served as it is), bearer-token checks, bodies of at most 64 KiB, a bounded queue, the
 * artifacts of a run read through its directory only (no link followed, no ".."), and a web
 * page of the runs. The runs themselves are the worker's (worker.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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
    char cookie[2100];            /* the token in hex: the login cookie's value */
};

struct body {
    char *buf;
    size_t n;
    int too_big;
    int answered;                 /* refused on its headers */
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

/* ---- artifacts: the run directory's regular files (never through a link), or the
 * members of its archive once retention has compressed it ---- */

static void artifact_headers(struct MHD_Response *r, const char *name)
{
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
}

static ssize_t member_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos; /* sequential: MHD asks for the bytes in order */
    ssize_t n = lp_archive_member_read(cls, buf, max);
    return n > 0 ? n : n == 0 ? MHD_CONTENT_READER_END_OF_STREAM
                              : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void member_close(void *cls) { lp_archive_member_close(cls); }

static enum MHD_Result send_artifact(struct MHD_Connection *c, struct MHD_Response *r,
                                     const char *name)
{
    if (!r)
        return MHD_NO;
    artifact_headers(r, name);
    enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}

/* the run directory's files as [{name, bytes}] (names that are not UTF-8 left out) */
static json_t *listing(const char *dir)
{
    json_t *list = json_array();
    struct lp_files f;
    if (lp_files_walk(dir, &f) == 0)
        for (size_t i = 0; i < f.n; i++) {
            json_t *name = json_string(f.v[i].name);
            if (name)
                json_array_append_new(list, json_pack("{s:o,s:I}", "name", name, "bytes",
                                                      (json_int_t)f.v[i].bytes));
        }
    lp_files_free(&f);
    return list;
}

static enum MHD_Result artifacts(struct server *s, struct MHD_Connection *c, const char *id,
                                 const char *name)
{
    char dir[4200], archive[4300], err[1100];
    snprintf(dir, sizeof dir, "%s/runs/%s", s->dir, id);
    snprintf(archive, sizeof archive, "%s/runs/%s.tar.zst", s->dir, id);
    json_t *run = lp_store_get(&s->store, id);
    if (!run)
        return send_error(c, MHD_HTTP_NOT_FOUND, "no such run");
    int archived = json_is_object(json_object_get(run, "archive"));
    json_decref(run);
    if (!name && archived) {
        json_t *list = lp_archive_list(archive, id, err, sizeof err);
        return list ? send_json(c, MHD_HTTP_OK, json_pack("{s:s,s:o,s:b}", "run_id", id,
                                                          "artifacts", list, "archived", 1))
                    : send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, err);
    }
    if (!name)
        return send_json(c, MHD_HTTP_OK, json_pack("{s:s,s:o,s:b}", "run_id", id, "artifacts",
                                                   listing(dir), "archived", 0));
    if (archived) {
        uint64_t size = 0;
        struct lp_archive_member *m = lp_archive_member_open(archive, id, name, &size, err,
                                                             sizeof err);
        if (m)
            return send_artifact(c, MHD_create_response_from_callback(size, 64 * 1024,
                                                                      member_read, m,
                                                                      member_close),
                                 name);
        if (err[0])
            return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, err);
    } else {
        struct stat st;
        int fd = lp_files_open(dir, name, &st);
        if (fd >= 0) {
            struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
            if (!r)
                close(fd);
            return send_artifact(c, r, name);
        }
        /* archived this instant (the directory just went): asked again, from the archive */
        json_t *again = lp_store_get(&s->store, id);
        int now = json_is_object(json_object_get(again, "archive"));
        json_decref(again);
        if (now)
            return artifacts(s, c, id, name);
    }
    return send_error(c, MHD_HTTP_NOT_FOUND, "no such artifact in the run (names as GET "
                                             "/runs/{run_id}/artifacts lists them)");
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
        /* asked to stop; the worker records the end once its processes are gone (SIGKILL
         * 10 s after SIGTERM): the client follows it with GET */
        int hit = lp_worker_cancel(&s->worker, id);
        json_decref(run);
        /* not the worker's: it ended meanwhile, and is answered as it ended */
        return send_json(c, hit ? MHD_HTTP_ACCEPTED : MHD_HTTP_OK,
                         with_dir(s, lp_store_get(&s->store, id)));
    }
    char dir[4200], log[4200], archive[4300], part[4400];
    snprintf(dir, sizeof dir, "%s/runs/%s", s->dir, id);
    snprintf(log, sizeof log, "%s/logs/%s.log", s->dir, id);
    snprintf(archive, sizeof archive, "%s/runs/%s.tar.zst", s->dir, id);
    snprintf(part, sizeof part, "%s.part", archive); /* an archive a killed server began */
    /* the row first: a run the index no longer lists is gone, whatever of its files stays;
     * under the files' lock, so that retention does not archive it meanwhile */
    pthread_mutex_lock(&s->worker.files);
    int rc = lp_store_remove(&s->store, id);
    if (rc != 0 && lp_files_release(s->dir)) /* a full disk: what removing frees is wanted */
        rc = lp_store_remove(&s->store, id);
    if (rc != 0) {
        pthread_mutex_unlock(&s->worker.files);
        json_decref(run);
        return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                          "the index cannot be written (disk full?): the run was not removed");
    }
    if (lp_files_remove_tree(dir) != 0 || (unlink(archive) != 0 && errno != ENOENT))
        json_object_set_new(run, "error", json_string("removed from the index; some of its "
                                                      "files could not be deleted"));
    unlink(part);
    lp_files_reserve(s->dir);
    pthread_mutex_unlock(&s->worker.files);
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
        if (json_is_object(json_object_get(run, "archive")))
            fputs(" <small>(archived)</small>", f);
        else if (json_is_object(json_object_get(run, "trimmed")))
            fputs(" <small>(trimmed)</small>", f);
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

/* GOT equals WANT, in the same time whatever the first wrong byte */
static int same_secret(const char *got, const char *want)
{
    size_t n = strlen(want);
    if (!got || strlen(got) != n)
        return 0;
    unsigned char diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(got[i] ^ want[i]);
    return diff == 0;
}

/* The token in an Authorization: Bearer header, or the login cookie the page's form set */
static int authorised(struct server *s, struct MHD_Connection *c)
{
    if (!s->cfg->token)
        return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (h && strncasecmp(h, "Bearer ", 7) == 0 && same_secret(h + 7, s->cfg->token))
        return 1;
    return same_secret(MHD_lookup_connection_value(c, MHD_COOKIE_KIND, "llmprof_token"),
                       s->cookie);
}

/* The page a browser gets without the token: a form that posts it to /login */
static enum MHD_Result login_page(struct MHD_Connection *c, const char *why)
{
    char *text = NULL;
    if (asprintf(&text, "<!doctype html><html><head><meta charset=\"utf-8\"><title>llmprof "
                        "runs</title></head><body style=\"font-family:sans-serif;margin:2em\">"
                        "<h1>llmprof runs</h1><p>%s</p><form method=\"post\" action=\"login\">"
                        "<input type=\"password\" name=\"token\" autocomplete=\"off\" "
                        "placeholder=\"the server's token\"> <button>Open</button></form>"
                        "</body></html>\n",
                 why) < 0)
        return MHD_NO;
    return send_text(c, MHD_HTTP_UNAUTHORIZED, "text/html; charset=utf-8", text, strlen(text));
}

/* IN's %XX decoded into OUT (room for LEN, IN's length at most; IN itself will do), '+' as
 * a space when FORM (application/x-www-form-urlencoded), but for %00: a name cut at a NUL
 * would stand for another, so "%00" stays as it is. Stops at STOP: the length written. */
static size_t pct_decode(const char *in, char stop, int form, char *out, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; in[i] && in[i] != stop && o + 1 < len; i++) {
        const char *hi = in[i] == '%' && in[i + 1] ? strchr(hex, in[i + 1] | 0x20) : NULL;
        const char *lo = hi && in[i + 2] ? strchr(hex, in[i + 2] | 0x20) : NULL;
        int v = lo ? (int)(hi - hex) * 16 + (int)(lo - hex) : 0;
        if (v != 0) {
            out[o++] = (char)v;
            i += 2;
        } else {
            out[o++] = form && in[i] == '+' ? ' ' : in[i];
        }
    }
    out[o] = 0;
    return o;
}

/* FORM's field NAME (application/x-www-form-urlencoded) decoded into OUT: 0, or -1 when it
 * is missing or longer than OUT */
static int form_field(const char *form, const char *name, char *out, size_t len)
{
    size_t nl = strlen(name);
    for (const char *p = form; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL)
        if (!strncmp(p, name, nl) && p[nl] == '=')
            return strcspn(p + nl + 1, "&") < len ? (pct_decode(p + nl + 1, '&', 1, out, len), 0)
                                                   : -1;
    return -1;
}

/* POST /login: the form's token right, a cookie that stands for it (HttpOnly, SameSite
 * Strict: no other site's page sends it) and back to the page; wrong, the form again */
static enum MHD_Result login(struct server *s, struct MHD_Connection *c, struct body *b)
{
    char token[1100];
    if (s->cfg->token && (b->too_big || form_field(b->buf ? b->buf : "", "token", token,
                                                    sizeof token) != 0 ||
                          !same_secret(token, s->cfg->token)))
        return login_page(c, "That is not the server's token.");
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    char cookie[2300];
    snprintf(cookie, sizeof cookie,
             "llmprof_token=%s; HttpOnly; SameSite=Strict; Path=/; Max-Age=2592000", s->cookie);
    MHD_add_response_header(r, "Location", "./");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (s->cfg->token)
        MHD_add_response_header(r, "Set-Cookie", cookie);
    enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_SEE_OTHER, r);
    MHD_destroy_response(r);
    return rc;
}

/* The Host header names a loopback address (or is absent, as in HTTP/1.0): without a token
 * this is what keeps a web page's DNS rebinding (evil.example resolving to 127.0.0.1) out */
static int loopback_host(struct MHD_Connection *c)
{
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (!h)
        return 1;
    size_t n = h[0] == '[' ? strcspn(h, "]") + 1 : strcspn(h, ":");
    if (h[0] == '[' && h[n - 1] != ']')
        return 0;
    if (h[n] && (h[n] != ':' || !h[n + 1] || strspn(h + n + 1, "0123456789") != strlen(h + n + 1)))
        return 0;
    char host[64];
    if (n >= sizeof host)
        return 0;
    memcpy(host, h, n);
    host[n] = 0;
    struct in_addr a4;
    return !strcasecmp(host, "localhost") || !strcmp(host, "[::1]") ||
           (inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127);
}

/* What the first call (the headers, before any body) already refuses: a status and its
 * message, or 0 */
static unsigned precheck(struct server *s, struct MHD_Connection *c, const char *url,
                         const char **msg)
{
    if (!s->cfg->token && !loopback_host(c)) {
        *msg = "the Host header names no loopback address: without a token this server "
               "answers only requests for 127.0.0.1 or localhost";
        return MHD_HTTP_FORBIDDEN;
    }
    if (strcmp(url, "/openapi.yaml") != 0 && strcmp(url, "/login") != 0 && !authorised(s, c)) {
        *msg = "give the server's token: Authorization: Bearer TOKEN";
        return MHD_HTTP_UNAUTHORIZED;
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && (strspn(cl, "0123456789") != strlen(cl) || strlen(cl) > 9 ||
               strtoul(cl, NULL, 10) > LP_SERVE_BODY_MAX)) {
        *msg = "the body is over 64 KiB";
        return MHD_HTTP_CONTENT_TOO_LARGE;
    }
    return 0;
}

/* The methods URL answers ("GET, DELETE"), NULL when it is no path of the contract */
static const char *allowed(const char *url)
{
    if (!strcmp(url, "/") || !strcmp(url, "/openapi.yaml"))
        return "GET, HEAD";
    if (!strcmp(url, "/login"))
        return "POST";
    if (!strcmp(url, "/runs"))
        return "GET, HEAD, POST";
    if (strncmp(url, "/runs/", 6) != 0)
        return NULL;
    const char *rest = url + 6 + strcspn(url + 6, "/");
    if (!*rest)
        return "GET, HEAD, DELETE";
    return !strcmp(rest, "/artifacts") || (!strncmp(rest, "/artifacts/", 11) && rest[11])
               ? "GET, HEAD"
               : NULL;
}

static enum MHD_Result not_allowed(struct MHD_Connection *c, const char *methods)
{
    char msg[128];
    snprintf(msg, sizeof msg, "this path answers %s only", methods);
    char *text = NULL;
    json_t *j = json_pack("{s:s}", "error", msg);
    text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    struct MHD_Response *r =
        text ? MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_add_response_header(r, "Allow", methods);
    enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result route(struct server *s, struct MHD_Connection *c, const char *url,
                             const char *method, struct body *b)
{
    /* HEAD is GET without the body (MHD leaves it out) */
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), post = !strcmp(method, "POST"),
        del = !strcmp(method, "DELETE");
    if (get && !strcmp(url, "/openapi.yaml")) /* the contract, to anyone */
        return send_bytes(c, MHD_HTTP_OK, "application/yaml", (char *)lp_openapi_yaml,
                          sizeof lp_openapi_yaml - 1, 0);
    if (!strcmp(url, "/") && get)
        return page(s, c);
    if (!strcmp(url, "/login") && post)
        return login(s, c, b);
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
        rest += n;
        int known = allowed(url) != NULL;
        if (known && (n != LP_SERVE_ID_LEN || !lp_serve_id_valid(id)))
            return send_error(c, MHD_HTTP_NOT_FOUND, "no such run");
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
    if (allowed(url))
        return not_allowed(c, allowed(url));
    return send_error(c, MHD_HTTP_NOT_FOUND, "no such path: see GET /openapi.yaml");
}

/* The URL decoded in place (pct_decode): its new length */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return pct_decode(s, 0, 0, s, strlen(s) + 1);
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
        /* refused on its headers: a body is not waited for (nor read) */
        const char *msg = NULL;
        unsigned early = precheck(s, c, url, &msg);
        if (!early)
            return MHD_YES;
        b->answered = 1;
        if (early == MHD_HTTP_UNAUTHORIZED && !strcmp(url, "/")) /* a browser: the form */
            return login_page(c, "This server needs its token.");
        return send_error(c, early, msg);
    }
    struct body *b = *ctx;
    if (b->answered) {
        *upload_n = 0;
        return MHD_YES;
    }
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

int lp_serve_sockaddr(const char *host, unsigned port, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    if (strchr(host, ':')) {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        return inet_pton(AF_INET6, host, &a6->sin6_addr) == 1 ? 1 : -1;
    }
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &a4->sin_addr) == 1 ? 0 : -1;
}

unsigned lp_serve_daemon_port(struct MHD_Daemon *d, unsigned fallback)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage got;
    socklen_t gl = sizeof got;
    if (!info || getsockname(info->listen_fd, (struct sockaddr *)&got, &gl) != 0)
        return fallback;
    return ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                           : ((struct sockaddr_in *)&got)->sin_port);
}

static struct MHD_Daemon *listen_on(struct server *s, unsigned *port, char *err, size_t len)
{
    struct sockaddr_storage ss;
    int v6 = lp_serve_sockaddr(s->cfg->host, *port, &ss);
    if (v6 < 0) {
        snprintf(err, len, "--listen: '%s' is not an IPv%d address", s->cfg->host,
                 strchr(s->cfg->host, ':') ? 6 : 4);
        return NULL;
    }
    /* beyond loopback, one address holds 64 connections at most: a client that trickles
     * its headers cannot take the whole pool of 1,000 */
    int open_to_others = v6 ? strcmp(s->cfg->host, "::1") != 0
                            : strncmp(s->cfg->host, "127.", 4) != 0;
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | (v6 ? MHD_USE_IPv6 : 0), 0, NULL,
        NULL, handle, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)4, MHD_OPTION_CONNECTION_LIMIT, (unsigned)1000,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)(open_to_others ? 64 : 0),
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_NOTIFY_COMPLETED, done, NULL,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_END);
    if (!d) {
        snprintf(err, len, "cannot listen on %s%s%s:%u (in use, or not this machine's address)",
                 v6 ? "[" : "", s->cfg->host, v6 ? "]" : "", *port);
        return NULL;
    }
    *port = lp_serve_daemon_port(d, *port);
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
    for (size_t i = 0; cfg->token && cfg->token[i] && 2 * i + 2 < sizeof s->cookie; i++)
        snprintf(s->cookie + 2 * i, 3, "%02x", (unsigned char)cfg->token[i]);
    char index[4200];
    int rc = -1, store_open = 0, worker_on = 0;
    struct MHD_Daemon *d = NULL;
    unsigned port = cfg->port;
    if (make_dirs(s, err, len) != 0)
        goto out;
    snprintf(index, sizeof index, "%s/index.db", s->dir);
    if (lp_store_open(&s->store, index, 0, err, len) != 0)
        goto out;
    store_open = 1;
    if (!(d = listen_on(s, &port, err, len)))
        goto out;
    if (lp_worker_start(&s->worker, cfg, &s->store, s->dir) != 0) {
        snprintf(err, len, "cannot start the worker thread");
        goto out;
    }
    worker_on = 1;
    int v6 = strchr(cfg->host, ':') != NULL;
    printf("llmprof serve: listening on http://%s%s%s:%u/ (runs in %s)\n", v6 ? "[" : "",
           cfg->host, v6 ? "]" : "", port, s->dir);
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
