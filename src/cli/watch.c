/* llmprof watch: follows the traces of a run while they are written (record, --light or
 * not) and serves their live figures at /metrics for Prometheus (docs/monitoring.md). The
 * collector is untouched: it flushes a chunk every 0.5 s, and this process reads the chunks,
 * so the profiled program runs no server. Memory stays bounded over days: each trace keeps
 * its counters and windows (src/analyze/live.c), never its records. */
#include <dirent.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "llmprof/follow.h"
#include "llmprof/live.h"
#include "llmprof/report.h"
#include "llmprof/serve.h"

#define MAX_TRACES 1024
#define POLL_BYTES (64u << 20) /* of one trace per poll: a backlog is read in parts */

struct watch_opts {
    const char *run;              /* the operand */
    const char *listen;
    double interval, window;
    int once, until_done;
    struct lp_cli_words stages;   /* --stage rules */
};

static const struct lp_cli_opt options[] = {
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "usage: llmprof watch RUN [--listen HOST:PORT] [--interval S] [--window S]\n"
    "                     [--stage NAME=REGEX]... [--once] [--until-done]\n"
    "\n"
    "Follows the traces of RUN (a run directory, or one .lpt file) while 'llmprof record'\n"
    "writes them (light mode or not), and serves their live figures at /metrics in Prometheus'\n"
    "text format: stage times and counts (NVTX ranges, as report's stage rules find them),\n"
    "TTFT, TPOT and inter-token latency with the request convention (docs/serving.md),\n"
    "tokens per second, PM sampling's tensor-pipe and DRAM throughput, NVML power and\n"
    "energy per token, and what was lost; labelled by trace, process, rank and GPU. Traces\n"
    "that appear later are followed too; a chunk still being written is waited for. Memory\n"
    "stays bounded: counters and windows are kept, never the records. docs/monitoring.md\n"
    "lists the metrics; examples/grafana-llmprof.json is a dashboard of them.\n"
    "Exit status: 0 when stopped (SIGINT, SIGTERM) or done, 1 when RUN cannot be read or\n"
    "the address cannot be used, 2 on a mistake of the command line.\n"
    "\n"},
    {.kind = LP_CLI_OPT_KIND_HELP, .name = "--help", .alias = "-h"},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--listen", .arg = "HOST:PORT",
     .help = "where /metrics is served (default 127.0.0.1:9470; port 0:\n"
             "any free one, printed)",
     .off = offsetof(struct watch_opts, listen), .missing = "HOST:PORT"},
    {.kind = LP_CLI_OPT_KIND_DOUBLE, .name = "--interval", .arg = "S",
     .help = "seconds between reads of the traces (default 1)",
     .off = offsetof(struct watch_opts, interval), .dmax = 3600},
    {.kind = LP_CLI_OPT_KIND_DOUBLE, .name = "--window", .arg = "S",
     .help = "the window gauges' trailing window, whole seconds of trace\n"
             "time (default 10, at most 299)",
     .off = offsetof(struct watch_opts, window), .dmax = LP_LIVE_BINS - 1},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--stage", .arg = "NAME=REGEX",
     .help = "stage rule, as report takes it (repeatable; replaces the\n"
             "defaults)",
     .off = offsetof(struct watch_opts, stages), .parse = lp_cli_opt_stage},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--once",
     .help = "read what the traces hold now, print /metrics' text, exit",
     .off = offsetof(struct watch_opts, once), .set = 1},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--until-done",
     .help = "exit once every trace followed has ended (its END chunk), 2 s\n"
             "(or one interval, if longer) later for a last scrape",
     .off = offsetof(struct watch_opts, until_done), .set = 1},
    {.kind = LP_CLI_OPT_KIND_END},
};

static const struct lp_cli_cmd watch_cmd = {
    .name = "watch", .opts = options, .help_col = 26, .operand = 1,
    .operand_off = offsetof(struct watch_opts, run), .too_many = "one run at a time",
};

struct traced {
    struct lp_follow *follow;
    struct lp_live *live;
    char *name;
    int failed;                   /* not a trace this build reads: said once, then left */
    int warned;                   /* a read failed and was said: said again once it reads */
    uint64_t restarts;            /* the follower's, when its figures started */
    int started;                  /* the live figures know the recording's start */
};

struct watch {
    const struct watch_opts *o;
    struct traced *t;
    size_t n;
    int is_dir;
    size_t refused;               /* traces past MAX_TRACES in the latest scan */
    int scan_warned;              /* the directory could not be read: said once */
    pthread_mutex_t mu;           /* guards TEXT */
    char *text;
    size_t text_len;
};

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static int add_trace(struct watch *w, const char *path, const char *name)
{
    for (size_t i = 0; i < w->n; i++)
        if (!strcmp(w->t[i].name, name))
            return 0;
    if (w->n == MAX_TRACES) {
        w->refused++;
        return 0;
    }
    struct traced t = {0};
    char err[512];
    int rc = lp_follow_open(&t.follow, path);
    if (rc == LP_OK)
        rc = lp_live_init(&t.live, w->o->stages.n ? w->o->stages.v : NULL, w->o->stages.n, err,
                          sizeof err);
    if (rc != LP_OK || !(t.name = strdup(name))) { /* the rules were checked at the start */
        lp_follow_free(t.follow);
        lp_live_free(t.live);
        return -1;
    }
    w->t[w->n++] = t;
    return 0;
}

static int cmp_traced(const void *a, const void *b)
{
    return strcmp(((const struct traced *)a)->name, ((const struct traced *)b)->name);
}

/* New traces of the run directory (or the one file), kept by name (the series' order). 0,
 * or -1 out of memory after a message. */
static int scan(struct watch *w)
{
    if (!w->is_dir) {
        const char *slash = strrchr(w->o->run, '/');
        return add_trace(w, w->o->run, slash ? slash + 1 : w->o->run);
    }
    DIR *d = opendir(w->o->run);
    if (!d) { /* out of descriptors, say: said once, tried again */
        if (!w->scan_warned)
            fprintf(stderr, "llmprof watch: warning: cannot read %s: %s; tried again every "
                            "interval\n", w->o->run, strerror(errno));
        w->scan_warned = 1;
        return 0;
    }
    w->scan_warned = 0;
    w->refused = 0;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        size_t n = strlen(e->d_name), sl = strlen(LP_TRACE_SUFFIX);
        if (n <= sl || strcmp(e->d_name + n - sl, LP_TRACE_SUFFIX) != 0)
            continue;
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", w->o->run, e->d_name) >= sizeof path)
            continue;
        rc = add_trace(w, path, e->d_name);
    }
    closedir(d);
    qsort(w->t, w->n, sizeof *w->t, cmp_traced);
    return rc;
}

static const char *name_of(void *ctx, lp_str id) { return lp_follow_str(ctx, id); }

static int on_record(void *ctx, struct lp_follow *f, const struct lp_record *r)
{
    struct traced *t = ctx;
    if (!t->started) { /* the header comes first: the recording's start, for plausibility */
        const char *s = lp_follow_meta(f, "start_trace_ns");
        char *end = NULL;
        unsigned long long v = s ? strtoull(s, &end, 10) : 0;
        if (s && end && !*end)
            lp_live_set_start(t->live, v);
        t->started = 1;
    }
    return lp_live_add(t->live, r, name_of, f);
}

/* Reads what each trace gained; *MORE when a backlog is left. 0, or -1 out of memory. */
static int poll_all(struct watch *w, int *more)
{
    *more = 0;
    for (size_t i = 0; i < w->n; i++) {
        struct traced *t = &w->t[i];
        if (t->failed)
            continue;
        char err[512];
        int m = 0;
        int rc = lp_follow_poll(t->follow, POLL_BYTES, on_record, t, &m, err, sizeof err);
        if (rc == LP_ERR_NOMEM) {
            lp_cli_error("watch", "out of memory");
            return -1;
        }
        if (rc == LP_ERR_FORMAT || rc == LP_ERR_VERSION) {
            /* a file that is no trace, or one this build cannot read: said, then left */
            fprintf(stderr, "llmprof watch: warning: %s; not followed\n", err);
            t->failed = 1;
        } else if (rc != LP_OK && !t->warned) { /* unreadable for now: said once */
            fprintf(stderr, "llmprof watch: warning: %s; tried again every interval\n", err);
            t->warned = 1;
        } else if (rc == LP_OK && t->warned) {
            fprintf(stderr, "llmprof watch: %s is read again\n", t->name);
            t->warned = 0;
        }
        uint64_t restarts = lp_follow_stats(t->follow).restarts;
        if (rc == LP_OK && restarts != t->restarts) {
            /* another trace in its place: its figures start from zero (a counter reset, as
             * Prometheus takes a restarted process's) */
            struct lp_live *fresh = NULL;
            if (lp_live_init(&fresh, w->o->stages.n ? w->o->stages.v : NULL, w->o->stages.n,
                             err, sizeof err) != LP_OK) {
                lp_cli_error("watch", "out of memory");
                return -1;
            }
            lp_live_free(t->live);
            t->live = fresh;
            t->restarts = restarts;
            t->started = 0;
        }
        *more |= m;
    }
    return 0;
}

/* The metrics' text of every trace now, into w->text */
static int render(struct watch *w)
{
    struct lp_prom_source *src = calloc(w->n ? w->n : 1, sizeof *src);
    if (!src)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < w->n; i++) {
        const struct traced *t = &w->t[i];
        if (t->failed)
            continue;
        src[n++] = (struct lp_prom_source){
            .trace = t->name, .pid = lp_follow_meta(t->follow, "pid"),
            .rank = lp_follow_meta(t->follow, "rank"), .mode = lp_follow_meta(t->follow, "mode"),
            .follow = lp_follow_stats(t->follow), .facts = lp_live_facts(t->live),
            .window = lp_live_window(t->live, (unsigned)w->o->window)};
    }
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    int rc = m ? 0 : -1;
    if (m) {
        fprintf(m, "# HELP llmprof_watch_traces Traces followed\n"
                   "# TYPE llmprof_watch_traces gauge\nllmprof_watch_traces %zu\n"
                   "# HELP llmprof_watch_traces_refused Traces in the run past the 1024 "
                   "followed\n# TYPE llmprof_watch_traces_refused gauge\n"
                   "llmprof_watch_traces_refused %zu\n",
                n, w->refused);
        rc = lp_report_prometheus(m, src, n, (unsigned)w->o->window);
        if (fclose(m) != 0)
            rc = -1;
    }
    free(src);
    if (rc != 0) {
        free(text);
        lp_cli_error("watch", "out of memory");
        return -1;
    }
    pthread_mutex_lock(&w->mu);
    free(w->text);
    w->text = text;
    w->text_len = len;
    pthread_mutex_unlock(&w->mu);
    return 0;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *type,
                             char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **state)
{
    (void)version;
    (void)upload;
    struct watch *w = cls;
    static int first;
    if (!*state) { /* the headers: answer once the body (if any) is read */
        *state = &first;
        return MHD_YES;
    }
    if (*upload_len) {
        *upload_len = 0; /* a body is read and ignored: no route takes one */
        return MHD_YES;
    }
    static char plain[] = "text/plain; charset=utf-8";
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        static char msg[] = "llmprof watch: only GET and HEAD\n";
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, plain, msg, sizeof msg - 1,
                     MHD_RESPMEM_PERSISTENT);
    }
    if (!strcmp(url, "/metrics")) {
        pthread_mutex_lock(&w->mu);
        char *copy = w->text ? malloc(w->text_len + 1) : NULL;
        size_t len = copy ? w->text_len : 0;
        if (copy)
            memcpy(copy, w->text, len + 1);
        pthread_mutex_unlock(&w->mu);
        if (!copy) {
            static char msg[] = "llmprof watch: no metrics yet\n";
            return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, plain, msg, sizeof msg - 1,
                         MHD_RESPMEM_PERSISTENT);
        }
        return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", copy, len,
                     MHD_RESPMEM_MUST_FREE);
    }
    if (!strcmp(url, "/")) {
        static char msg[] = "llmprof watch: Prometheus metrics at /metrics\n";
        return reply(c, MHD_HTTP_OK, plain, msg, sizeof msg - 1, MHD_RESPMEM_PERSISTENT);
    }
    static char msg[] = "llmprof watch: not found (the metrics are at /metrics)\n";
    return reply(c, MHD_HTTP_NOT_FOUND, plain, msg, sizeof msg - 1, MHD_RESPMEM_PERSISTENT);
}

static struct MHD_Daemon *listen_on(struct watch *w, const char *host, unsigned *port)
{
    struct sockaddr_storage ss;
    int v6 = lp_serve_sockaddr(host, *port, &ss);
    if (v6 < 0) {
        lp_cli_error("watch", "--listen: '%s' is not an IPv%d address", host,
                     strchr(host, ':') ? 6 : 4);
        return NULL;
    }
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | (v6 ? MHD_USE_IPv6 : 0), 0, NULL,
        NULL, handle, w, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
        MHD_OPTION_END);
    if (!d) {
        lp_cli_error("watch", "cannot listen on %s%s%s:%u (in use, or not this machine's "
                              "address)", v6 ? "[" : "", host, v6 ? "]" : "", *port);
        return NULL;
    }
    *port = lp_serve_daemon_port(d, *port);
    return d;
}

static int all_done(const struct watch *w)
{
    size_t done = 0;
    for (size_t i = 0; i < w->n; i++)
        done += w->t[i].failed || lp_follow_stats(w->t[i].follow).complete;
    return w->n > 0 && done == w->n;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (!stop_flag && nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int watch(struct watch *w)
{
    int rc = scan(w), more = 0;
    if (rc != 0) {
        lp_cli_error("watch", "out of memory");
        return LP_CLI_EXIT_INPUT;
    }
    if (w->o->once) {
        do {
            if (poll_all(w, &more) != 0)
                return LP_CLI_EXIT_INPUT;
        } while (more);
        if (render(w) != 0)
            return LP_CLI_EXIT_INPUT;
        fwrite(w->text, 1, w->text_len, stdout);
        return fflush(stdout) == 0 ? 0 : LP_CLI_EXIT_INPUT;
    }
    char host[64];
    unsigned port = 9470;
    if (lp_cli_split_listen("watch", w->o->listen ? w->o->listen : "127.0.0.1:9470", host,
                            sizeof host, &port) != 0)
        return LP_CLI_EXIT_USAGE;
    /* the first figures before the first scrape can come */
    if (poll_all(w, &more) != 0 || render(w) != 0)
        return LP_CLI_EXIT_INPUT;
    struct MHD_Daemon *d = listen_on(w, host, &port);
    if (!d)
        return LP_CLI_EXIT_INPUT;
    int v6 = strchr(host, ':') != NULL;
    printf("llmprof watch: serving http://%s%s%s:%u/metrics (following %s)\n", v6 ? "[" : "",
           host, v6 ? "]" : "", port, w->o->run);
    fflush(stdout);
    signal(SIGINT, on_stop);
    signal(SIGTERM, on_stop);
    rc = 0;
    struct timespec done_at = {0};
    while (!stop_flag) {
        if (scan(w) != 0 || poll_all(w, &more) != 0 || render(w) != 0) {
            rc = LP_CLI_EXIT_INPUT;
            break;
        }
        if (w->o->until_done && !(all_done(w) && !more))
            done_at.tv_sec = 0; /* a trace came after the others ended: its own grace */
        if (w->o->until_done && all_done(w) && !more) {
            /* served a while longer, for a last scrape */
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (!done_at.tv_sec)
                done_at = now;
            double waited = (double)(now.tv_sec - done_at.tv_sec) +
                            (double)(now.tv_nsec - done_at.tv_nsec) * 1e-9;
            if (waited >= (w->o->interval > 2 ? w->o->interval : 2))
                break;
        }
        if (!more)
            sleep_s(w->o->interval);
    }
    MHD_stop_daemon(d);
    return rc;
}

int lp_cmd_watch(int argc, char **argv)
{
    struct watch_opts o = {.interval = 1, .window = 10};
    int rc = lp_cli_parse(&watch_cmd, &o, argc, argv, NULL);
    if (rc != 0) {
        free(o.stages.v);
        return rc > 0 ? 0 : LP_CLI_EXIT_USAGE;
    }
    struct watch w = {.o = &o};
    pthread_mutex_init(&w.mu, NULL);
    struct stat st;
    rc = LP_CLI_EXIT_USAGE;
    if (!o.run) {
        lp_cli_error("watch", "give the run to follow: a run directory or a .lpt trace");
        goto done;
    }
    if (o.window < 1 || o.window != (double)(unsigned)o.window) {
        lp_cli_error("watch", "--window takes whole seconds from 1 to %d, not %g",
                     LP_LIVE_BINS - 1, o.window);
        goto done;
    }
    if (o.interval < 0.05) {
        lp_cli_error("watch", "--interval takes at least 0.05 seconds, not %g", o.interval);
        goto done;
    }
    if (stat(o.run, &st) != 0) {
        lp_cli_error("watch", "%s: %s (start watch once record has made the run directory)",
                     o.run, strerror(errno));
        rc = LP_CLI_EXIT_INPUT;
        goto done;
    }
    struct lp_live *check = NULL; /* the rules checked before anything is followed */
    char err[512];
    int lrc = lp_live_init(&check, o.stages.n ? o.stages.v : NULL, o.stages.n, err, sizeof err);
    lp_live_free(check);
    if (lrc != LP_OK) {
        if (lrc == LP_ERR_ARG)
            lp_cli_error("watch", "%s", err);
        else
            lp_cli_error("watch", "out of memory");
        rc = lrc == LP_ERR_ARG ? LP_CLI_EXIT_USAGE : LP_CLI_EXIT_INPUT;
        goto done;
    }
    w.is_dir = S_ISDIR(st.st_mode);
    if (!(w.t = calloc(MAX_TRACES, sizeof *w.t))) {
        lp_cli_error("watch", "out of memory");
        rc = LP_CLI_EXIT_INPUT;
        goto done;
    }
    rc = watch(&w);
done:
    for (size_t i = 0; i < w.n; i++) {
        lp_follow_free(w.t[i].follow);
        lp_live_free(w.t[i].live);
        free(w.t[i].name);
    }
    free(w.t);
    free(w.text);
    free(o.stages.v);
    pthread_mutex_destroy(&w.mu);
    return rc;
}
