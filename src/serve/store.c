/* The index of runs: one SQLite database in the runs directory (index.db), so that the runs,
 * their status and headline survive the server's restarts. Written in WAL mode with full
 * syncs: a server killed mid-write leaves the last committed state. One connection shared
 * by the HTTP threads and the worker under one lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <signal.h>
#include <time.h>

#include "serve_internal.h"

static void now_iso(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The start time (clock ticks since boot) of process PID, 0 when it is gone */
static unsigned long long proc_start(long long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%lld/stat", pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the name before it may hold spaces */
    unsigned long long start = 0;
    for (int field = 2; p && *p && field < 22; field++)
        p = strchr(p + 1, ' ');
    if (p)
        start = strtoull(p + 1, NULL, 10);
    return start;
}

/* Runs a killed server left running: their process groups, when still the same processes
 * (the leader's start time), are killed, so that the next run does not share the GPU. */
static void hunt_orphans(struct lp_store *s)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT pid, pid_start FROM runs WHERE status = 'running'"
                                  " AND pid > 1", -1, &st, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(st) == SQLITE_ROW) {
        long long pid = sqlite3_column_int64(st, 0);
        unsigned long long start = (unsigned long long)sqlite3_column_int64(st, 1);
        if (pid > 1 && pid <= INT_MAX && start && proc_start(pid) == start)
            kill(-(pid_t)pid, SIGKILL);
    }
    sqlite3_finalize(st);
}

/* Columns later versions added, put on an index an earlier one made */
static int add_columns(struct lp_store *s)
{
    static const char *const cols[] = {"archive TEXT", "trimmed TEXT", "pid INTEGER",
                                       "pid_start INTEGER"};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) {
        char name[32], *sql;
        snprintf(name, sizeof name, "%.*s", (int)strcspn(cols[i], " "), cols[i]);
        sqlite3_stmt *st = NULL;
        int have = 0;
        if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM pragma_table_info('runs') WHERE name = ?1",
                               -1, &st, NULL) == SQLITE_OK &&
            sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC) == SQLITE_OK)
            have = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        if (have)
            continue;
        sql = sqlite3_mprintf("ALTER TABLE runs ADD COLUMN %s", cols[i]);
        int rc = sql ? sqlite3_exec(s->db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
        sqlite3_free(sql);
        if (rc != SQLITE_OK)
            return -1;
    }
    return 0;
}

int lp_store_open(struct lp_store *s, const char *path, int readonly, char *err, size_t len)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    char *msg = NULL;
    int rc = sqlite3_open_v2(path, &s->db,
                             readonly ? SQLITE_OPEN_READONLY
                                      : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                             NULL);
    if (rc == SQLITE_OK)
        sqlite3_busy_timeout(s->db, 5000);
    if (rc == SQLITE_OK && !readonly)
        rc = sqlite3_exec(s->db,
                          "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                          "CREATE TABLE IF NOT EXISTS runs(id TEXT PRIMARY KEY, seq INTEGER NOT"
                          " NULL, status TEXT NOT NULL, runner TEXT NOT NULL, tag TEXT NOT NULL,"
                          " request TEXT NOT NULL, created TEXT NOT NULL, started TEXT,"
                          " finished TEXT, exit_status INTEGER, headline TEXT, error TEXT);",
                          NULL, NULL, &msg);
    if (rc == SQLITE_OK && !readonly && add_columns(s) != 0)
        rc = SQLITE_ERROR;
    if (rc == SQLITE_OK && !readonly) {
        char now[32];
        now_iso(now, sizeof now);
        hunt_orphans(s);
        char *sql = sqlite3_mprintf("UPDATE runs SET status='failed', finished=%Q, pid=NULL,"
                                    " error='interrupted: the server stopped while it ran'"
                                    " WHERE status='running'",
                                    now);
        rc = sql ? sqlite3_exec(s->db, sql, NULL, NULL, &msg) : SQLITE_NOMEM;
        sqlite3_free(sql);
    }
    if (rc == SQLITE_OK && readonly) {
        /* an index without the table is not one; one of the first version is read through
         * a view with the later columns empty (nothing is written to it) */
        rc = sqlite3_exec(s->db, "SELECT id, seq, status, runner, tag, request, created,"
                                 " started, finished, exit_status, headline, error FROM runs"
                                 " LIMIT 0", NULL, NULL, &msg);
        if (rc == SQLITE_OK &&
            sqlite3_exec(s->db, "SELECT archive, trimmed FROM runs LIMIT 0", NULL, NULL,
                         NULL) != SQLITE_OK)
            rc = sqlite3_exec(s->db, "CREATE TEMP VIEW runs AS SELECT *, NULL AS archive,"
                                     " NULL AS trimmed FROM main.runs", NULL, NULL, &msg);
    }
    if (rc != SQLITE_OK) {
        int code = s->db ? sqlite3_errcode(s->db) & 0xff : SQLITE_NOMEM;
        snprintf(err, len, "%s: %s%s", path,
                 msg ? msg : s->db ? sqlite3_errmsg(s->db) : "out of memory",
                 code == SQLITE_FULL || code == SQLITE_IOERR ? " (is its disk full?)" : "");
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
/* SQL with ARGS bound as text; *CHANGED (when not NULL) the rows it changed, read under the
 * same lock: another thread's statement in between would answer for its own */
static int exec_changed(struct lp_store *s, const char *sql, const char *const *args,
                        int *changed)
{
    sqlite3_stmt *st = NULL;
    pthread_mutex_lock(&s->lock);
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    for (int i = 0; rc == SQLITE_OK && args[i]; i++)
        rc = sqlite3_bind_text(st, i + 1, args[i], -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (changed)
        *changed = rc == SQLITE_DONE ? sqlite3_changes(s->db) : 0;
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->lock);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int exec_args(struct lp_store *s, const char *sql, const char *const *args)
{
    return exec_changed(s, sql, args, NULL);
}

int lp_store_add(struct lp_store *s, const char *id, const char *runner, const char *tag,
                 const json_t *request, size_t queue_max)
{
    char now[32], max[24], *text = json_dumps(request, JSON_COMPACT | JSON_SORT_KEYS);
    now_iso(now, sizeof now);
    snprintf(max, sizeof max, "%zu", queue_max);
    const char *args[] = {id, runner, tag, text, now, max, NULL};
    /* the queue's bound in the same statement: concurrent submissions cannot pass it */
    int added = 0;
    int rc = text ? exec_changed(s,
                                 "INSERT INTO runs(id, seq, status, runner, tag, request, created)"
                                 " SELECT ?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM runs),"
                                 " 'queued', ?2, ?3, ?4, ?5 WHERE (SELECT COUNT(*) FROM runs"
                                 " WHERE status = 'queued') < CAST(?6 AS INTEGER)",
                                 args, &added)
                  : -1;
    free(text);
    return rc == 0 && !added ? 1 : rc; /* 1: the queue is full */
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
    "id, status, runner, tag, request, created, started, finished, exit_status, headline,"   \
    " error, archive, trimmed"

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
    json_object_set_new(o, "archive", parsed_or_null(st, 11));
    json_object_set_new(o, "trimmed", parsed_or_null(st, 12));
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
                                " headline = ?5, error = ?6, pid = NULL WHERE id = ?1",
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
    const char *args[] = {id, now, NULL};
    int changed = 0;
    if (exec_changed(s,
                     "UPDATE runs SET status = 'cancelled', finished = ?2, error = "
                     "'cancelled before it started' WHERE id = ?1 AND status = 'queued'",
                     args, &changed) != 0)
        return -1;
    return changed > 0;
}

int lp_store_remove(struct lp_store *s, const char *id)
{
    const char *args[] = {id, NULL};
    return exec_args(s, "DELETE FROM runs WHERE id = ?1", args);
}

int lp_store_set_pid(struct lp_store *s, const char *id, long long pid)
{
    char p[24], start[24];
    snprintf(p, sizeof p, "%lld", pid);
    snprintf(start, sizeof start, "%llu", proc_start(pid));
    const char *args[] = {id, p, start, NULL};
    return exec_args(s, "UPDATE runs SET pid = CAST(?2 AS INTEGER), pid_start = CAST(?3 AS"
                        " INTEGER) WHERE id = ?1", args);
}

/* Sets COLUMN (archive, trimmed: a name of this file, never a request's) to J as text */
static int set_json(struct lp_store *s, const char *id, const char *sql, const json_t *j)
{
    char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    const char *args[] = {id, text, NULL};
    int rc = text ? exec_args(s, sql, args) : -1;
    free(text);
    return rc;
}

int lp_store_set_archive(struct lp_store *s, const char *id, const json_t *archive)
{
    return set_json(s, id, "UPDATE runs SET archive = ?2 WHERE id = ?1", archive);
}

int lp_store_set_trimmed(struct lp_store *s, const char *id, const json_t *trimmed)
{
    return set_json(s, id, "UPDATE runs SET trimmed = ?2 WHERE id = ?1", trimmed);
}

json_t *lp_store_ended(struct lp_store *s, const char *tag)
{
    sqlite3_stmt *st = NULL;
    json_t *a = json_array();
    pthread_mutex_lock(&s->lock);
    if (a && sqlite3_prepare_v2(s->db,
                                "SELECT " RUN_COLUMNS " FROM runs WHERE status IN ('done',"
                                " 'failed', 'cancelled') AND (?1 IS NULL OR tag = ?1)"
                                " ORDER BY tag, seq DESC",
                                -1, &st, NULL) == SQLITE_OK &&
        (!tag || sqlite3_bind_text(st, 1, tag, -1, SQLITE_TRANSIENT) == SQLITE_OK))
        while (sqlite3_step(st) == SQLITE_ROW)
            json_array_append_new(a, run_of(st));
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->lock);
    return a;
}
