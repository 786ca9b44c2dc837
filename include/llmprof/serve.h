/* llmprof serve: profiling runs started over HTTP (docs/openapi.yaml is the contract), kept
 * in a SQLite index in the runs directory, run one at a time through `llmprof profile` of a
 * runner configured on the server. The CLI parses the options and calls lp_serve_run. */
#ifndef LLMPROF_SERVE_H
#define LLMPROF_SERVE_H

#include <signal.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

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

/* The plan's retention: the newest KEEP ended runs of each tag kept whole, older ones
 * compressed into one archive each; a run's files capped at MAX_RUN_BYTES after it ends. */
struct lp_serve_retention {
    size_t keep;
    uint64_t max_run_bytes;       /* 0: no cap */
};

struct lp_serve_config {
    const char *runs_dir;         /* made when missing; index.db, runs/, logs/ inside */
    const char *host;             /* IPv4 or IPv6 address to listen on (no brackets) */
    unsigned port;                /* 0: any free one */
    const char *token;            /* NULL: no authentication (loopback only) */
    size_t queue_max;             /* runs waiting at most; one more is 429 */
    const struct lp_serve_runner *runners; /* the first is the default */
    size_t n_runners;
    const char *llmprof;          /* the llmprof executable that runs `profile` */
    struct lp_serve_retention retention;
    uint64_t min_free_bytes;      /* a run is stopped when its disk has less free */
};

/* Serves until *STOP is set (a signal handler sets it): 0, or -1 with the reason in ERR (the
 * address taken, the directory or its index unusable). Prints one line on stdout once it
 * listens: "llmprof serve: listening on http://HOST:PORT/ (runs in DIR)". */
int lp_serve_run(const struct lp_serve_config *cfg, volatile sig_atomic_t *stop, char *err,
                 size_t len);

/* What `llmprof serve` and `llmprof watch` share of listening (libmicrohttpd). HOST (IPv4, or
 * IPv6 without brackets) and PORT as a socket address in SS: 1 for IPv6, 0 for IPv4, -1 when
 * HOST is neither. */
struct sockaddr_storage;
int lp_serve_sockaddr(const char *host, unsigned port, struct sockaddr_storage *ss);
/* The port daemon D listens on (the one the system chose for port 0), or FALLBACK. */
struct MHD_Daemon;
unsigned lp_serve_daemon_port(struct MHD_Daemon *d, unsigned fallback);

/* `llmprof runs`, without a server. The runs of DIR's index, newest first, as the contract's
 * Run objects with artifacts_dir and "disk_bytes" (their files or archive, as found now);
 * read only, a server may be running. NULL with the reason in ERR. */
json_t *lp_runs_list(const char *dir, char *err, size_t len);
/* Retention applied to DIR as a server applies it after each run (a server holding DIR is
 * an error: it applies it itself): the changes made (or, DRY_RUN, to be made) as an array
 * (new reference), with the failures' count in *FAILED; NULL with the reason in ERR. */
json_t *lp_runs_prune(const char *dir, const struct lp_serve_retention *p, int dry_run,
                      size_t *failed, char *err, size_t len);

#endif
