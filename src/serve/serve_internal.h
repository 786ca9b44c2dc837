/* What the files of src/serve/ share: the index of runs (store.c), a request checked against
 * the contract and turned into a command (request.c), and the server (server.c). */
#ifndef LP_SERVE_INTERNAL_H
#define LP_SERVE_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "llmprof/serve.h"

#define LP_SERVE_BODY_MAX (64 * 1024)
#define LP_SERVE_ID_LEN 22            /* "20261127-081500-a1b2c3" */

/* ---- the index: DIR/index.db (store.c); every call takes the store's lock ---- */
struct lp_store {
    sqlite3 *db;
    pthread_mutex_t lock;
};
/* Opens (creating) PATH; a run left "running" by a server that stopped is marked failed and
 * its process group, when still alive, killed: 0, or -1 with the reason in ERR. READONLY:
 * opened as it is, nothing changed (a server may hold it). */
int lp_store_open(struct lp_store *s, const char *path, int readonly, char *err, size_t len);
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
/* The running run's process group leader (its start time read from /proc with it) */
int lp_store_set_pid(struct lp_store *s, const char *id, long long pid);
/* A run's archive ({name, bytes, files, bytes_before}) and what its cap trimmed */
int lp_store_set_archive(struct lp_store *s, const char *id, const json_t *archive);
int lp_store_set_trimmed(struct lp_store *s, const char *id, const json_t *trimmed);
/* The ended runs (done, failed, cancelled) of TAG (NULL: every tag), by tag then newest
 * first, as Run objects */
json_t *lp_store_ended(struct lp_store *s, const char *tag);

/* ---- a run's files (files.c): regular files, no link followed ---- */
struct lp_file {
    char *name;                   /* relative to the run's directory: "repeat-1/report.md" */
    uint64_t bytes;
};
struct lp_files {
    struct lp_file *v;
    size_t n, cap;
    uint64_t total;               /* the files' bytes */
    size_t skipped;               /* links, devices, names too long, what could not be
                                     read (a directory, a stat): left out */
    int truncated;                /* more than 100,000 files: the walk stopped */
};
/* The regular files under DIR, 16 levels down at most: 0, or -1 (errno) when DIR cannot be
 * opened as a directory (a link is not one) */
int lp_files_walk(const char *dir, struct lp_files *f);
void lp_files_free(struct lp_files *f);
/* NAME ("repeat-1/report.md") under DIR, one component at a time, no link followed and no
 * "." or "..": a descriptor of a regular file (its stat in ST), or -1 */
int lp_files_open(const char *dir, const char *name, struct stat *st);
/* Unlinks NAME under DIR, reached as lp_files_open does: 0 or -1 (errno) */
int lp_files_unlink(const char *dir, const char *name);
/* Removes the tree DIR (links removed, not followed): 0, or -1 when something stays */
int lp_files_remove_tree(const char *dir);
/* DIR/reserve, 2 MiB set aside while there is room (0; -1 when there is not), and given up
 * (1; 0 when there was none) when the index cannot be written for a full disk: the run's end
 * or a removal is then recorded all the same */
int lp_files_reserve(const char *dir);
int lp_files_release(const char *dir);

/* ---- archives of runs (archive.c): tar + zstd through libarchive ---- */
/* RUN_DIR's regular files, smallest first, as PREFIX/NAME into DEST (written to DEST.part,
 * synced and read back before it is renamed): its member count and bytes; 0, or -1 with the
 * reason in ERR and nothing left at DEST. A directory with links or special files is not
 * archived (-1). */
int lp_archive_write(const char *run_dir, const char *prefix, const char *dest,
                     uint64_t *n_files, uint64_t *bytes, char *err, size_t len);
/* The regular members of archive PATH under PREFIX/ as [{name, bytes}] (names without the
 * prefix; new reference), or NULL with the reason in ERR. */
json_t *lp_archive_list(const char *path, const char *prefix, char *err, size_t len);
/* Member PREFIX/NAME of PATH open for reading (its size in *SIZE), or NULL: ERR empty when
 * there is no such member, else why the archive cannot be read */
struct lp_archive_member *lp_archive_member_open(const char *path, const char *prefix,
                                                 const char *name, uint64_t *size, char *err,
                                                 size_t len);
/* Up to N bytes of it: the count, 0 at its end, -1 on an error */
ssize_t lp_archive_member_read(struct lp_archive_member *m, char *buf, size_t n);
void lp_archive_member_close(struct lp_archive_member *m);

/* ---- retention (retain.c) ---- */
/* A run's files over CAP bytes (0: no cap): trace files (*.lpt) go first, largest first,
 * then other files but the report's own (report.*, summary.md, meta.json, timer.json,
 * repeats.*); what went is written to RUN_DIR/trimmed.json (unless DRY_RUN) and returned
 * ({cap_bytes, bytes_before, bytes_after, over_cap, removed: [{name, bytes}]}, new
 * reference); NULL when the run is within its cap or has no directory. */
json_t *lp_retain_trim(const char *run_dir, uint64_t cap, int dry_run);
/* Retention over the index S of the runs directory DIR: every ended run of TAG (NULL: all)
 * trimmed to the cap when it was not yet, and those past the newest P->keep of their tag
 * archived (DIR/runs/ID.tar.zst) and their directory removed. FILES_LOCK (NULL: none) is
 * held around each run's change. Each change is appended to ACTIONS ({run_id, tag, action:
 * trim|archive|tidy, ...}, with "error" when it failed); DRY_RUN changes nothing. Returns
 * the count of failures. */
size_t lp_retain_apply(struct lp_store *s, const char *dir, const struct lp_serve_retention *p,
                       const char *tag, int dry_run, pthread_mutex_t *files_lock,
                       json_t *actions);

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
