/* llmprof serve: the plan's profiling service over HTTP (src/serve/, docs/openapi.yaml). This
 * file only reads the options, the token and the runners, and refuses what would be unsafe
 * (a non-loopback address without a token) before anything listens. */
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "llmprof/serve.h"

struct serve_opts {
    const char *runs, *listen, *token_file;
    int64_t queue, keep;
    uint64_t max_run_bytes, min_free;
    struct lp_cli_words runners;  /* --runner NAME=TEMPLATE */
};

static const struct lp_cli_opt options[] = {
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "usage: llmprof serve --runs DIR [--listen HOST:PORT] [--token-file FILE] [--queue N]\n"
    "                     [--keep N] [--max-run-bytes SIZE] [--min-free SIZE]\n"
    "                     [--runner NAME=TEMPLATE]...\n"
    "\n"
    "Serves the profiling contract of docs/openapi.yaml over HTTP (GET /openapi.yaml): POST\n"
    "/runs starts a run of a configured runner under 'llmprof profile', GET /runs and\n"
    "/runs/ID follow it, /runs/ID/artifacts lists and serves its files, DELETE /runs/ID\n"
    "cancels or removes it; GET / is a page of the runs. Runs go one at a time; the index of\n"
    "runs (DIR/index.db, SQLite) survives restarts, and a run a stopped server left running\n"
    "is marked failed, its processes killed. A request names a runner and gives typed\n"
    "fields, never a command.\n"
    "After each run, retention: its files are capped (traces first; trimmed.json says what\n"
    "went) and, of its tag, runs older than the newest N are compressed (DIR/runs/ID.tar.zst,\n"
    "still served); 'llmprof runs DIR' lists and prunes without a server.\n"
    "Exit status: 0 when stopped (SIGINT, SIGTERM), 1 when DIR, its index or the address\n"
    "cannot be used, 2 on a mistake of the command line.\n"
    "\n"},
    {.kind = LP_CLI_OPT_KIND_HELP, .name = "--help", .alias = "-h"},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--runs", .arg = "DIR",
     .help = "the runs' directory (made when missing): index.db, runs/ID/, logs/",
     .off = offsetof(struct serve_opts, runs), .missing = "a directory"},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--listen", .arg = "HOST:PORT",
     .help = "an IPv4 address and port, or [IPV6]:PORT (default\n"
             "127.0.0.1:8470; port 0: any free one); other than loopback\n"
             "(127.x.x.x, [::1]) only with --token-file",
     .off = offsetof(struct serve_opts, listen), .missing = "HOST:PORT"},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--token-file", .arg = "FILE",
     .help = "every request then needs 'Authorization: Bearer TOKEN', TOKEN\n"
             "the file's first line, or the cookie the page's login sets\n"
             "(GET /openapi.yaml and POST /login excepted)",
     .off = offsetof(struct serve_opts, token_file), .missing = "a file"},
    {.kind = LP_CLI_OPT_KIND_INT, .name = "--queue", .arg = "N",
     .help = "runs waiting at most; one more is answered 429 (default 16)",
     .off = offsetof(struct serve_opts, queue), .min = 1, .max = 10000},
    {.kind = LP_CLI_OPT_KIND_INT, .name = "--keep", .arg = "N",
     .help = "ended runs of each tag kept whole (default 5); older ones are\n"
             "compressed into one archive each",
     .off = offsetof(struct serve_opts, keep), .min = 0, .max = 1000000},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--max-run-bytes", .arg = "SIZE",
     .help = "a run's files at most once it ended (default 2G; 0: no cap)",
     .off = offsetof(struct serve_opts, max_run_bytes), .parse = lp_cli_opt_bytes},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--min-free", .arg = "SIZE",
     .help = "a run is stopped (failed) when the runs' disk has less free\n"
             "(default 256M)",
     .off = offsetof(struct serve_opts, min_free), .parse = lp_cli_opt_bytes},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--runner", .arg = "NAME=TEMPLATE",
     .help = "a runner (repeatable; the first is the default): TEMPLATE's\n"
             "words, split on spaces, with {model_path} {input_dir} {repeats}\n"
             "{device} {max_new_tokens} as whole words and {use_flash_attn:WORD}\n"
             "(WORD when asked); default: the DeepSeek-OCR runner",
     .off = offsetof(struct serve_opts, runners), .parse = lp_cli_opt_append},
    {.kind = LP_CLI_OPT_KIND_END},
};

static const struct lp_cli_cmd serve_cmd = {.name = "serve", .opts = options, .help_col = 26};

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/* the first line of FILE, at least 16 characters: malloc'd, or NULL after a message */
static char *read_token(const char *file)
{
    FILE *f = fopen(file, "r");
    char line[1024];
    if (!f || !fgets(line, sizeof line, f)) {
        lp_cli_error("serve", "--token-file %s: cannot read it", file);
        if (f)
            fclose(f);
        return NULL;
    }
    fclose(f);
    size_t n = strcspn(line, "\r\n");
    if (!line[n] && n == sizeof line - 1) {
        lp_cli_error("serve", "--token-file %s: its first line is longer than 1,000 characters",
                     file);
        return NULL;
    }
    line[n] = 0;
    if (strlen(line) < 16 || strpbrk(line, " \t")) {
        lp_cli_error("serve", "--token-file %s: its first line must be a token of 16 "
                              "characters or more, without spaces", file);
        return NULL;
    }
    return strdup(line);
}

/* the DeepSeek-OCR runner beside this llmprof (source tree or installed), or NULL */
static char *default_runner(void)
{
    char exe[4096], path[4400];
    if (lp_cli_exe_dir(exe, sizeof exe) != 0)
        return NULL;
    static const char *const places[] = {"../../examples", "../share/llmprof/examples"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s/deepseek-ocr/run.py", exe, places[i]);
        char *real = realpath(path, NULL);
        if (!real)
            continue;
        char *spec = NULL;
        if (asprintf(&spec, "deepseek-ocr=/usr/bin/env python3 %s --model-path {model_path} "
                            "--input-dir {input_dir} --repeats {repeats} --device {device} "
                            "--max-new-tokens {max_new_tokens} "
                            "{use_flash_attn:--use-flash-attn}",
                     real) < 0)
            spec = NULL;
        free(real);
        return spec;
    }
    return NULL;
}

static int serve(struct serve_opts *o, struct lp_serve_runner *runners, size_t n_runners)
{
    char host[64], exe[4096], err[1024];
    unsigned port = 8470;
    if (lp_cli_split_listen("serve", o->listen ? o->listen : "127.0.0.1:8470", host, sizeof host,
                            &port) != 0)
        return LP_CLI_EXIT_USAGE;
    if (!o->token_file && strncmp(host, "127.", 4) != 0 && strcmp(host, "::1") != 0) {
        lp_cli_error("serve", "--listen %s is not a loopback address: give --token-file too, "
                              "so that only holders of the token can start runs", host);
        return LP_CLI_EXIT_USAGE;
    }
    char *token = o->token_file ? read_token(o->token_file) : NULL;
    if (o->token_file && !token)
        return LP_CLI_EXIT_USAGE;
    if (lp_cli_exe_dir(exe, sizeof exe) != 0) {
        lp_cli_error("serve", "cannot find the llmprof executable");
        free(token);
        return LP_CLI_EXIT_INPUT;
    }
    strncat(exe, "/llmprof", sizeof exe - strlen(exe) - 1);
    struct lp_serve_config cfg = {.runs_dir = o->runs, .host = host, .port = port,
                                  .token = token, .queue_max = (size_t)o->queue,
                                  .runners = runners, .n_runners = n_runners, .llmprof = exe,
                                  .retention = {.keep = (size_t)o->keep,
                                                .max_run_bytes = o->max_run_bytes},
                                  .min_free_bytes = o->min_free};
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    int rc = lp_serve_run(&cfg, &stop_flag, err, sizeof err);
    if (rc != 0)
        lp_cli_error("serve", "%s", err);
    free(token);
    return rc ? LP_CLI_EXIT_INPUT : 0;
}

int lp_cmd_serve(int argc, char **argv)
{
    struct serve_opts o = {.queue = 16, .keep = 5, .max_run_bytes = 2ULL << 30,
                           .min_free = 256ULL << 20};
    int rc = lp_cli_parse(&serve_cmd, &o, argc, argv, NULL);
    if (rc != 0) {
        free(o.runners.v);
        return rc > 0 ? 0 : LP_CLI_EXIT_USAGE;
    }
    struct lp_serve_runner *runners = NULL;
    size_t n = 0;
    char *fallback = o.runners.n ? NULL : default_runner(), err[512];
    rc = LP_CLI_EXIT_USAGE;
    if (!o.runs) {
        lp_cli_error("serve", "--runs DIR is required: the directory of the runs and their index");
        goto done;
    }
    if (!o.runners.n && !fallback) {
        lp_cli_error("serve", "no --runner given and the DeepSeek-OCR runner "
                              "(examples/deepseek-ocr/run.py) is not beside llmprof: give one");
        goto done;
    }
    runners = calloc(o.runners.n ? o.runners.n : 1, sizeof *runners);
    for (size_t i = 0; runners && i < (o.runners.n ? o.runners.n : 1); i++) {
        if (lp_serve_runner_parse(o.runners.n ? o.runners.v[i] : fallback, &runners[n], err,
                                  sizeof err) != 0) {
            lp_cli_error("serve", "%s", err);
            goto done;
        }
        for (size_t k = 0; k < n; k++)
            if (!strcmp(runners[k].name, runners[n].name)) {
                lp_cli_error("serve", "--runner %s is given twice", runners[n].name);
                n++;
                goto done;
            }
        n++;
    }
    rc = runners ? serve(&o, runners, n) : LP_CLI_EXIT_INPUT;
done:
    for (size_t i = 0; i < n; i++)
        lp_serve_runner_free(&runners[i]);
    free(runners);
    free(fallback);
    free(o.runners.v);
    return rc;
}
