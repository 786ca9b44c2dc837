/* llmprof serve: profiling runs started over HTTP (docs/openapi.yaml is the contract), kept
 * in a SQLite index in the runs directory, run one at a time through `llmprof profile` of a
 * runner configured on the server. The CLI parses the options and calls lp_serve_run. */
#ifndef LLMPROF_SERVE_H
#define LLMPROF_SERVE_H

#include <signal.h>
#include <stddef.h>

/* A runner: NAME=TEMPLATE, the template's words split once on spaces; a word that is exactly
 * {model_path}, {input_dir}, {repeats}, {device} or {max_new_tokens} becomes the request's
 * value, {use_flash_attn:WORD} becomes WORD when the request asks for flash attention and no
 * word otherwise; every other word is kept as it is. */
struct lp_serve_runner {
    char *name;
    char **words;
    size_t n_words;
};
/* Parses SPEC ("NAME=TEMPLATE") into OUT: 0, or -1 with the reason in ERR. */
int lp_serve_runner_parse(const char *spec, struct lp_serve_runner *out, char *err, size_t len);
void lp_serve_runner_free(struct lp_serve_runner *r);

struct lp_serve_config {
    const char *runs_dir;         /* made when missing; index.db, runs/, logs/ inside */
    const char *host;             /* IPv4 address to listen on */
    unsigned port;                /* 0: any free one */
    const char *token;            /* NULL: no authentication (loopback only) */
    size_t queue_max;             /* runs waiting at most; one more is 429 */
    const struct lp_serve_runner *runners; /* the first is the default */
    size_t n_runners;
    const char *llmprof;          /* the llmprof executable that runs `profile` */
};

/* Serves until *STOP is set (a signal handler sets it): 0, or -1 with the reason in ERR (the
 * address taken, the directory or its index unusable). Prints one line on stdout once it
 * listens: "llmprof serve: listening on http://HOST:PORT/ (runs in DIR)". */
int lp_serve_run(const struct lp_serve_config *cfg, volatile sig_atomic_t *stop, char *err,
                 size_t len);

#endif
