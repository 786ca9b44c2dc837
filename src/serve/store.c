/* The index of runs: one SQLite database in the runs directory (index.db), so that the runs,
 * their status and headline survive the server's restarts. Written in WAL mode with full
 * syncs: a server killed mid-write leaves the last committed state. One connection shared
 * by the HTTP threads and the worker under one lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve_internal.h"

static void now_iso(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int lp_store_open(struct lp_store *s, const char *path, char *err, size_t len)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    char now[32];
    now_iso(now, sizeof now);
    char *sql = sqlite3_mprintf(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
        "CREATE TABLE IF NOT EXISTS runs(id TEXT PRIMARY KEY, seq INTEGER NOT NULL,"
        " status TEXT NOT NULL, runner TEXT NOT NULL, tag TEXT NOT NULL, request TEXT NOT NULL,"
        " created TEXT NOT NULL, started TEXT, finished TEXT, exit_status INTEGER,"
        " headline TEXT, error TEXT);"
        "UPDATE runs SET status='failed', finished=%Q, error='interrupted: the server stopped "
        "while it ran' WHERE status='running';",
        now);
    char *msg = NULL;
    int rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK)
        sqlite3_busy_timeout(s->db, 5000);
    if (rc == SQLITE_OK && sql)
        rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
    sqlite3_free(sql);
    if (rc != SQLITE_OK || !sql) {
        snprintf(err, len, "%s: %s", path,
                 msg ? msg : s->db ? sqlite3_errmsg(s->db) : "out of memory");
        sqlite3_free(msg);
        lp_store_close(s);
        return -1;
    }
    return 0;
}

void lp_store_close(struct lp_store *s)
{
    if (s->db)
        sqlite3_close(s->db);
    s->db = NULL;
    pthread_mutex_destroy(&s->lock);
}

/* Runs SQL with the text parameters ARGS (NULL-terminated) under the lock: 0 or -1. */
static int exec_args(struct lp_store *s, const char *sql, const char *const *args)
{
    sqlite3_stmt *st = NULL;
    pthread_mutex_lock(&s->lock);
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    for (int i = 0; rc == SQLITE_OK && args[i]; i++)
        rc = sqlite3_bind_text(st, i + 1, args[i], -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->lock);
    return rc == SQLITE_DONE ? 0 : -1;
}

int lp_store_add(struct lp_store *s, const char *id, const char *runner, const char *tag,
                 const json_t *request, size_t queue_max)
{
    char now[32], max[24], *text = json_dumps(request, JSON_COMPACT | JSON_SORT_KEYS);
    now_iso(now, sizeof now);
    snprintf(max, sizeof max, "%zu", queue_max);
    const char *args[] = {id, runner, tag, text, now, max, NULL};
    /* the queue's bound in the same statement: concurrent submissions cannot pass it */
    int rc = text ? exec_args(s,
                              "INSERT INTO runs(id, seq, status, runner, tag, request, created)"
                              " SELECT ?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM runs),"
                              " 'queued', ?2, ?3, ?4, ?5 WHERE (SELECT COUNT(*) FROM runs"
                              " WHERE status = 'queued') < CAST(?6 AS INTEGER)",
                              args)
                  : -1;
    free(text);
    if (rc == 0) {
        pthread_mutex_lock(&s->lock);
        rc = sqlite3_changes(s->db) > 0 ? 0 : 1; /* 1: the queue is full */
        pthread_mutex_unlock(&s->lock);
    }
    return rc;
}

static json_t *text_or_null(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? json_string((const char *)t) : json_null();
}

static json_t *parsed_or_null(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    json_t *j = t ? json_loads((const char *)t, 0, NULL) : NULL;
    return j ? j : json_null();
}

#define RUN_COLUMNS                                                                           \
    "id, status, runner, tag, request, created, started, finished, exit_status, headline, error"

/* The Run object of the row ST stands on (RUN_COLUMNS; artifacts_dir is the server's to add) */
static json_t *run_of(sqlite3_stmt *st)
{
    json_t *o = json_object();
    json_object_set_new(o, "run_id", text_or_null(st, 0));
    json_object_set_new(o, "status", text_or_null(st, 1));
    json_object_set_new(o, "runner", text_or_null(st, 2));
    json_object_set_new(o, "tag", text_or_null(st, 3));
    json_object_set_new(o, "request", parsed_or_null(st, 4));
    json_object_set_new(o, "created", text_or_null(st, 5));
    json_object_set_new(o, "started", text_or_null(st, 6));
    json_object_set_new(o, "finished", text_or_null(st, 7));
    json_object_set_new(o, "exit_status", sqlite3_column_type(st, 8) == SQLITE_NULL
                                              ? json_null()
                                              : json_integer(sqlite3_column_int(st, 8)));
    json_object_set_new(o, "headline", parsed_or_null(st, 9));
    json_object_set_new(o, "error", text_or_null(st, 10));
    return o;
}

json_t *lp_store_get(struct lp_store *s, const char *id)
{
    sqlite3_stmt *st = NULL;
    json_t *o = NULL;
    pthread_mutex_lock(&s->lock);
    if (sqlite3_prepare_v2(s->db, "SELECT " RUN_COLUMNS " FROM runs WHERE id = ?1", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        o = run_of(st);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->lock);
    return o;
}

json_t *lp_store_list(struct lp_store *s)
{
    sqlite3_stmt *st = NULL;
    json_t *a = json_array();
    pthread_mutex_lock(&s->lock);
    if (sqlite3_prepare_v2(s->db, "SELECT " RUN_COLUMNS " FROM runs ORDER BY seq DESC", -1,
                           &st, NULL) == SQLITE_OK)
        while (sqlite3_step(st) == SQLITE_ROW)
            json_array_append_new(a, run_of(st));
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->lock);
    return a;
}

int lp_store_take(struct lp_store *s, char id[LP_SERVE_ID_LEN + 1], char **runner,
                  json_t **request)
{
    sqlite3_stmt *st = NULL;
    char now[32];
    int found = 0;
    now_iso(now, sizeof now);
    pthread_mutex_lock(&s->lock);
    if (sqlite3_prepare_v2(s->db,
                           "SELECT id, runner, request FROM runs WHERE status = 'queued'"
                           " ORDER BY seq LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK) {
        pthread_mutex_unlock(&s->lock);
        return -1;
    }
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(id, LP_SERVE_ID_LEN + 1, "%s", (const char *)sqlite3_column_text(st, 0));
        *runner = strdup((const char *)sqlite3_column_text(st, 1));
        *request = json_loads((const char *)sqlite3_column_text(st, 2), 0, NULL);
        found = 1;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (found &&
        (sqlite3_prepare_v2(s->db, "UPDATE runs SET status = 'running', started = ?2 WHERE id = ?1",
                            -1, &st, NULL) != SQLITE_OK ||
         sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
         sqlite3_bind_text(st, 2, now, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
         sqlite3_step(st) != SQLITE_DONE))
        found = -1;
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->lock);
    if (found == 1 && (!*runner || !json_is_object(*request))) {
        free(*runner);
        json_decref(*request);
        *runner = NULL;
        *request = NULL;
        lp_store_finish(s, id, "failed", -1, NULL, "its row of the index cannot be read");
        return 2; /* taken and ended: the caller goes on to the next */
    }
    if (found != 1) {
        free(*runner);
        json_decref(*request);
        *runner = NULL;
        *request = NULL;
    }
    return found;
}

int lp_store_finish(struct lp_store *s, const char *id, const char *status, int exit_status,
                    const json_t *headline, const char *error)
{
    char now[32], code[16], *head = headline ? json_dumps(headline, JSON_COMPACT) : NULL;
    now_iso(now, sizeof now);
    snprintf(code, sizeof code, "%d", exit_status);
    sqlite3_stmt *st = NULL;
    pthread_mutex_lock(&s->lock);
    int rc = sqlite3_prepare_v2(s->db,
                                "UPDATE runs SET status = ?2, finished = ?3, exit_status = ?4,"
                                " headline = ?5, error = ?6 WHERE id = ?1",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, status, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, now, -1, SQLITE_TRANSIENT);
        if (exit_status >= 0)
            sqlite3_bind_int(st, 4, exit_status);
        if (head)
            sqlite3_bind_text(st, 5, head, -1, SQLITE_TRANSIENT);
        if (error)
            sqlite3_bind_text(st, 6, error, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->lock);
    free(head);
    return rc == SQLITE_DONE ? 0 : -1;
}

int lp_store_cancel_queued(struct lp_store *s, const char *id)
{
    char now[32];
    now_iso(now, sizeof now);
    sqlite3_stmt *st = NULL;
    int changed = -1;
    pthread_mutex_lock(&s->lock);
    if (sqlite3_prepare_v2(s->db,
                           "UPDATE runs SET status = 'cancelled', finished = ?2, error = "
                           "'cancelled before it started' WHERE id = ?1 AND status = 'queued'",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
        sqlite3_bind_text(st, 2, now, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_DONE)
        changed = sqlite3_changes(s->db) > 0; /* this statement's, under the lock */
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->lock);
    return changed;
}

int lp_store_remove(struct lp_store *s, const char *id)
{
    const char *args[] = {id, NULL};
    return exec_args(s, "DELETE FROM runs WHERE id = ?1", args);
}
