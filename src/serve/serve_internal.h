/* What the files of src/serve/ share: the index of runs (store.c), a request checked against
 * the contract and turned into a command (request.c), and the server (server.c). */
#ifndef LP_SERVE_INTERNAL_H
#define LP_SERVE_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "llmprof/serve.h"

#define LP_SERVE_BODY_MAX (64 * 1024)
#define LP_SERVE_ID_LEN 22            /* "20261127-081500-a1b2c3" */

/* ---- the index: DIR/index.db (store.c); every call takes the store's lock ---- */
struct lp_store {
    sqlite3 *db;
    pthread_mutex_t lock;
};
/* Opens (creating) PATH; a run left "running" by a server that stopped is marked failed:
 * 0, or -1 with the reason in ERR. */
int lp_store_open(struct lp_store *s, const char *path, char *err, size_t len);
void lp_store_close(struct lp_store *s);
/* A new queued run (REQUEST: the checked request, kept as given) unless QUEUE_MAX runs wait
 * already: 0, 1 the queue is full, -1 on a write error. */
int lp_store_add(struct lp_store *s, const char *id, const char *runner, const char *tag,
                 const json_t *request, size_t queue_max);
/* The run ID as the contract's Run object (new reference), NULL when there is none. */
json_t *lp_store_get(struct lp_store *s, const char *id);
/* Every run, newest first, as Run objects. */
json_t *lp_store_list(struct lp_store *s);
/* The oldest queued run, marked running: its id in ID (and its runner and request, new
 * reference), 1; 2 when it was taken but its row cannot be read (ended failed); 0 when none
 * waits; -1 on an error. */
int lp_store_take(struct lp_store *s, char id[LP_SERVE_ID_LEN + 1], char **runner,
                  json_t **request);
/* A run ended: STATUS (done, failed, cancelled), its exit status (-1: none), the headline
 * (NULL: none) and ERROR (NULL: none). */
int lp_store_finish(struct lp_store *s, const char *id, const char *status, int exit_status,
                    const json_t *headline, const char *error);
/* Marks a queued run cancelled: 1 done, 0 it was not queued, -1 error. */
int lp_store_cancel_queued(struct lp_store *s, const char *id);
int lp_store_remove(struct lp_store *s, const char *id);

/* ---- a request (request.c) ---- */
/* Checks BODY (LEN bytes) against the contract's LLMProfileRequest and the configured
 * runners: the request with its defaults filled (new reference) and its runner, or NULL with
 * the reason, naming the field, in ERR. */
json_t *lp_serve_request_check(const char *body, size_t n, const struct lp_serve_config *cfg,
                               const struct lp_serve_runner **runner, char *err, size_t len);
/* The command of a run: LLMPROF profile -o OUT --quiet [--model MODEL_PATH/config.json, when
 * llmprof's model analysis reads it] -- the runner's words with the request's fields in (malloc'd, NULL-terminated, freed with lp_serve_argv_free); NULL when
 * out of memory. */
char **lp_serve_argv(const struct lp_serve_config *cfg, const struct lp_serve_runner *runner,
                     const json_t *request, const char *out);
void lp_serve_argv_free(char **argv);
/* ID has the shape of a run id ("20261127-081500-a1b2c3"): 1, else 0 */
int lp_serve_id_valid(const char *id);

#endif
