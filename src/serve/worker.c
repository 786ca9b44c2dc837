/* The run queue's one worker: takes the oldest queued run from the index, runs `llmprof
 * profile` of its runner in a process group of its own (so that a cancel reaches the
 * program too), and records how it ended with the headline of its report. One run at a
 * time: a GPU profiled by two runs at once measures neither. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "worker.h"

/* report.json's headline: TTFT, TPOT, MFU (a directory of repeats: the first repeat's) */
static json_t *headline_of(const char *out)
{
    char path[4300];
    snprintf(path, sizeof path, "%.4200s/report.json", out);
    json_t *r = json_load_file(path, 0, NULL);
    if (!r) {
        snprintf(path, sizeof path, "%.4200s/repeat-1/report.json", out);
        r = json_load_file(path, 0, NULL);
    }
    if (!r)
        return NULL;
    json_t *llm = json_object_get(r, "llm"), *util = json_object_get(r, "utilisation");
    json_t *mfu = json_object_get(util, "mfu");
    json_t *h = json_pack("{s:O,s:O,s:O}", "ttft_s",
                          json_is_number(json_object_get(llm, "ttft_s"))
                              ? json_object_get(llm, "ttft_s")
                              : json_null(),
                          "tpot_s",
                          json_is_number(json_object_get(llm, "tpot_s"))
                              ? json_object_get(llm, "tpot_s")
                              : json_null(),
                          "mfu", json_is_number(mfu) ? mfu : json_null());
    json_decref(r);
    return h;
}

/* The free bytes of the disk holding DIR (UINT64_MAX when unknown) */
static uint64_t free_bytes(const char *dir)
{
    struct statvfs v;
    return statvfs(dir, &v) == 0 ? (uint64_t)v.f_bavail * v.f_frsize : UINT64_MAX;
}

/* Retention after a run of TAG ended (NULL: every tag, at start); what it did is logged */
static void retain(struct lp_worker *w, const char *tag)
{
    json_t *actions = json_array(), *a;
    lp_retain_apply(w->store, w->dir, &w->cfg->retention, tag, 0, &w->files, actions);
    size_t i;
    json_array_foreach(actions, i, a) {
        char *line = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
        if (line)
            fprintf(stderr, "llmprof serve: retention: %s\n", line);
        free(line);
    }
    json_decref(actions);
}

/* Starts ARGV with its output into LOG, in a process group of its own: its pid, or -1.
 * Signals are held across the fork, and the child puts back the defaults the server
 * changed (its stop handler, SIGPIPE ignored) before it lets them in. */
static pid_t start(char **argv, const char *log)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = fork();
    if (pid > 0)
        setpgid(pid, pid); /* in both: a cancel right after the fork finds the group */
    if (pid != 0) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return pid;
    }
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    static const int reset[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
    for (size_t i = 0; i < sizeof reset / sizeof *reset; i++)
        sigaction(reset[i], &dfl, NULL);
    setpgid(0, 0);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    if (in >= 0)
        dup2(in, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execv(argv[0], argv);
    static const char msg[] = "llmprof serve: cannot run the run's command (llmprof)\n";
    ssize_t w = write(2, msg, sizeof msg - 1); /* only what is safe after a fork */
    (void)w;
    _exit(127);
}

/* Runs the run ID (taken: running) to its end. */
static void run_one(struct lp_worker *w, const char *id, const char *runner_name,
                    json_t *request)
{
    const struct lp_serve_config *cfg = w->cfg;
    const struct lp_serve_runner *runner = NULL;
    /* the index is a file: what it holds is checked again as a request would be */
    char err[512], *text = json_dumps(request, JSON_COMPACT);
    const struct lp_serve_runner *named = NULL;
    json_t *again = text && lp_serve_id_valid(id)
                        ? lp_serve_request_check(text, strlen(text), cfg, &named, err, sizeof err)
                        : NULL;
    free(text);
    if (!again) {
        if (lp_serve_id_valid(id)) /* else no path is made of it */
            lp_store_finish(w->store, id, "failed", -1, NULL,
                            "its request no longer passes the checks (its paths are gone?)");
        else
            lp_store_finish(w->store, id, "failed", -1, NULL, "not a run id");
        return;
    }
    json_decref(again);
    /* the runner the request names (the row's runner column says the same, unless edited) */
    runner = named && !strcmp(named->name, runner_name) ? named : NULL;
    char out[4200], log[4200], why[512];
    snprintf(out, sizeof out, "%s/runs/%s", w->dir, id);
    snprintf(log, sizeof log, "%s/logs/%s.log", w->dir, id);
    char **argv = runner ? lp_serve_argv(cfg, runner, request, out) : NULL;
    if (!argv) {
        lp_store_finish(w->store, id, "failed", -1, NULL,
                        runner ? "out of memory" : "its row names two runners");
        return;
    }
    pthread_mutex_lock(&w->lock);
    int stopping = w->cancel_all, early = w->cancelled;
    pid_t pid = stopping || early ? -1 : start(argv, log);
    w->disk_low = 0;
    if (pid > 0)
        w->pid = pid;
    else
        w->id[0] = 0;
    pthread_mutex_unlock(&w->lock);
    lp_serve_argv_free(argv);
    if (pid > 0) /* a server killed meanwhile: the next one stops what it left */
        lp_store_set_pid(w->store, id, pid);
    if (pid < 0) {
        lp_store_finish(w->store, id, early && !stopping ? "cancelled" : "failed", -1, NULL,
                        stopping ? "interrupted: the server stopped"
                        : early  ? "cancelled before it started"
                                 : "fork failed");
        return;
    }
    int status = 0;
    uint64_t low = 0;
    /* a run asked to stop that has not within 10 s is killed; one whose disk fills is
     * stopped before the index and the reports have no room left */
    for (int waited = 0, killed = 0;; waited++) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid || (got < 0 && errno != EINTR))
            break;
        uint64_t left = free_bytes(w->dir);
        pthread_mutex_lock(&w->lock);
        if (left < cfg->min_free_bytes && !w->disk_low) {
            w->disk_low = 1;
            low = left;
            kill(-pid, SIGTERM);
        }
        if (!(w->cancelled || w->cancel_all || w->disk_low))
            waited = 0;
        if (waited > 100 && !killed) {
            kill(-pid, SIGKILL);
            killed = 1;
        }
        pthread_mutex_unlock(&w->lock);
        usleep(100 * 1000);
    }
    kill(-pid, SIGKILL); /* what the run left behind in its group goes with it */
    pthread_mutex_lock(&w->lock);
    int cancelled = w->cancelled, disk_low = w->disk_low;
    stopping = w->cancel_all;
    w->pid = 0;
    w->id[0] = 0;
    pthread_mutex_unlock(&w->lock);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    json_t *head = headline_of(out);
    const char *end = "done", *error = NULL;
    if (cancelled || stopping) {
        end = stopping && !cancelled ? "failed" : "cancelled";
        error = stopping && !cancelled ? "interrupted: the server stopped"
                                       : "cancelled while it ran";
    } else if (disk_low) {
        snprintf(why, sizeof why, "stopped: the disk of the runs directory had %llu MiB free, "
                                  "under the server's minimum of %llu MiB",
                 (unsigned long long)(low >> 20),
                 (unsigned long long)(cfg->min_free_bytes >> 20));
        end = "failed";
        error = why;
    } else if (code != 0) {
        snprintf(why, sizeof why, "llmprof profile exited %d; its output: logs/%s.log", code,
                 id);
        end = "failed";
        error = why;
    }
    /* the index may be on a full disk: the reserve is given up for it, then it is tried
     * again for a minute before the run is left "running" (a restart marks it failed) */
    for (int tries = 0; lp_store_finish(w->store, id, end, code, head, error) != 0 && tries < 60;
         tries++) {
        pthread_mutex_lock(&w->files);
        int freed = lp_files_release(w->dir);
        pthread_mutex_unlock(&w->files);
        if (!freed)
            sleep(1);
    }
    pthread_mutex_lock(&w->files);
    lp_files_reserve(w->dir); /* set aside again where there is room */
    pthread_mutex_unlock(&w->files);
    json_decref(head);
    retain(w, json_string_value(json_object_get(request, "tag")));
}

static void *loop(void *arg)
{
    struct lp_worker *w = arg;
    lp_files_reserve(w->dir);
    retain(w, NULL); /* a policy changed since the last server applies to the runs kept */
    for (;;) {
        pthread_mutex_lock(&w->lock);
        while (!w->stop && !w->wake)
            pthread_cond_wait(&w->cond, &w->lock);
        w->wake = 0;
        int stop = w->stop;
        pthread_mutex_unlock(&w->lock);
        if (stop)
            return NULL;
        char id[LP_SERVE_ID_LEN + 1], *runner = NULL;
        json_t *request = NULL;
        int took;
        for (;;) {
            /* taken and named under the worker's lock: a cancel of a run the index already
             * calls running always finds it here */
            pthread_mutex_lock(&w->lock);
            took = lp_store_take(w->store, id, &runner, &request);
            if (took == 1) {
                snprintf(w->id, sizeof w->id, "%s", id);
                w->cancelled = 0;
            }
            pthread_mutex_unlock(&w->lock);
            if (took < 1)
                break;
            if (took != 1)
                continue; /* a row that cannot be read: ended failed */
            run_one(w, id, runner, request);
            pthread_mutex_lock(&w->lock);
            w->id[0] = 0; /* also after the checks that end a run before it starts */
            w->pid = 0;
            pthread_mutex_unlock(&w->lock);
            free(runner);
            json_decref(request);
            runner = NULL;
            request = NULL;
            pthread_mutex_lock(&w->lock);
            stop = w->stop;
            pthread_mutex_unlock(&w->lock);
            if (stop)
                return NULL;
        }
    }
}

int lp_worker_start(struct lp_worker *w, const struct lp_serve_config *cfg,
                    struct lp_store *store, const char *dir)
{
    memset(w, 0, sizeof *w);
    w->cfg = cfg;
    w->store = store;
    w->dir = dir;
    w->wake = 1; /* runs left queued by an earlier server go first */
    pthread_mutex_init(&w->lock, NULL);
    pthread_mutex_init(&w->files, NULL);
    pthread_cond_init(&w->cond, NULL);
    return pthread_create(&w->thread, NULL, loop, w) == 0 ? 0 : -1;
}

void lp_worker_wake(struct lp_worker *w)
{
    pthread_mutex_lock(&w->lock);
    w->wake = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

int lp_worker_cancel(struct lp_worker *w, const char *id)
{
    int hit = 0;
    pthread_mutex_lock(&w->lock);
    if (w->id[0] && !strcmp(w->id, id)) {
        w->cancelled = 1; /* not started yet: it will not be */
        if (w->pid > 0)
            kill(-w->pid, SIGTERM); /* profile passes it on to the program */
        hit = 1;
    }
    pthread_mutex_unlock(&w->lock);
    return hit;
}

void lp_worker_stop(struct lp_worker *w)
{
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    w->cancel_all = 1;
    if (w->pid > 0)
        kill(-w->pid, SIGTERM);
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    pthread_mutex_destroy(&w->files);
}
