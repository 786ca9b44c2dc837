/* Retention, as the plan asks: each run's files capped once it has ended (the traces go
 * first, the report it was made from stays, and the run says what went), and of each tag
 * the newest runs kept whole while older ones are compressed into one archive each. The
 * server applies it after every run; `llmprof runs DIR prune` applies the same without one.
 * Every step can be interrupted and taken again: the archive is complete on the disk before
 * the index says so, and the index says so before the directory goes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve_internal.h"

/* the report's own files: a trimmed run keeps what its report says */
static int kept(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    static const char *const keep[] = {"report.json", "report.md", "report.html", "summary.md",
                                       "meta.json", "timer.json", "trimmed.json", NULL};
    for (int i = 0; keep[i]; i++)
        if (!strcmp(base, keep[i]))
            return 1;
    return !strncmp(base, "repeats.", 8); /* repeats.json, .md, .csv */
}

/* ERR as a JSON string: bytes that are not UTF-8 (a file's name) as '?' */
static json_t *error_text(const char *err)
{
    json_t *j = json_string(err);
    if (j)
        return j;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", err);
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    return json_string(buf);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct lp_file *)a)->name, ((const struct lp_file *)b)->name);
}

/* Every file of RUN_DIR is in the archive DEST, with its size: 1, else 0 (ERR says why) */
static int dir_in_archive(const char *run_dir, const char *dest, const char *id, char *err,
                          size_t len)
{
    json_t *members = lp_archive_list(dest, id, err, len), *m;
    struct lp_files f;
    if (!members)
        return 0;
    size_t n = json_array_size(members), i, ok = 1;
    struct lp_file *v = calloc(n ? n : 1, sizeof *v);
    json_array_foreach(members, i, m) {
        v[i].name = (char *)json_string_value(json_object_get(m, "name"));
        v[i].bytes = (uint64_t)json_integer_value(json_object_get(m, "bytes"));
    }
    if (v)
        qsort(v, n, sizeof *v, by_name);
    if (!v || lp_files_walk(run_dir, &f) != 0) {
        snprintf(err, len, "%s cannot be read", run_dir);
        ok = 0;
    } else {
        for (i = 0; ok && i < f.n; i++) {
            struct lp_file *hit = bsearch(&f.v[i], v, n, sizeof *v, by_name);
            ok = hit && hit->bytes == f.v[i].bytes;
        }
        if (!ok || f.skipped || f.truncated)
            snprintf(err, len, "%s holds files its archive does not: left as it is (archive or "
                               "remove it by hand)", run_dir);
        ok = ok && !f.skipped && !f.truncated;
    }
    lp_files_free(&f);
    free(v);
    json_decref(members);
    return (int)ok;
}

static int is_trace(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && !strcmp(name + n - 4, ".lpt");
}

/* traces first, then the rest; largest first within each */
static int trim_order(const void *a, const void *b)
{
    const struct lp_file *x = a, *y = b;
    int tx = is_trace(x->name), ty = is_trace(y->name);
    if (tx != ty)
        return ty - tx;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

json_t *lp_retain_trim(const char *run_dir, uint64_t cap, int dry_run)
{
    struct lp_files f;
    if (cap == 0 || lp_files_walk(run_dir, &f) != 0)
        return NULL;
    if (f.total <= cap) {
        lp_files_free(&f);
        return NULL;
    }
    qsort(f.v, f.n, sizeof *f.v, trim_order);
    uint64_t left = f.total;
    json_t *removed = json_array(), *failed = json_array();
    for (size_t i = 0; i < f.n && left > cap; i++) {
        if (kept(f.v[i].name))
            continue;
        if (!dry_run && lp_files_unlink(run_dir, f.v[i].name) != 0) {
            json_array_append_new(failed, json_string(f.v[i].name));
            continue;
        }
        json_t *name = json_string(f.v[i].name); /* NULL: not UTF-8, counted all the same */
        json_array_append_new(removed, json_pack("{s:o,s:I}", "name",
                                                 name ? name : json_string("(not UTF-8)"),
                                                 "bytes", (json_int_t)f.v[i].bytes));
        left -= f.v[i].bytes;
    }
    json_t *t = json_pack("{s:I,s:I,s:I,s:b,s:o}", "cap_bytes", (json_int_t)cap, "bytes_before",
                          (json_int_t)f.total, "bytes_after", (json_int_t)left, "over_cap",
                          left > cap, "removed", removed);
    if (json_array_size(failed))
        json_object_set_new(t, "not_removed", failed);
    else
        json_decref(failed);
    lp_files_free(&f);
    if (!json_array_size(removed) && !json_object_get(t, "not_removed")) {
        /* nothing it may remove: a trimmed run stays as it is (its trimmed.json says so) */
        json_decref(t);
        return NULL;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/trimmed.json", run_dir);
    if (!dry_run) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        char *text = fd >= 0 ? json_dumps(t, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
        if (text && write(fd, text, strlen(text)) < 0)
            json_object_set_new(t, "error", json_string("trimmed.json could not be written"));
        free(text);
        if (fd >= 0)
            close(fd);
    }
    return t;
}

/* Archives the run RUN (a Run object) of DIR: appends what was done to ACTIONS; 0 or -1.
 * The archive is written and read back without FILES_LOCK (a DELETE meanwhile is not held
 * up: the archive is then dropped); the index and the directory change under it. */
static int archive_one(struct lp_store *s, const char *dir, json_t *run, int dry_run,
                       pthread_mutex_t *files_lock, json_t *actions)
{
    const char *id = json_string_value(json_object_get(run, "run_id"));
    char run_dir[4200], dest[4300], err[9000] = "";
    snprintf(run_dir, sizeof run_dir, "%s/runs/%s", dir, id);
    snprintf(dest, sizeof dest, "%s/runs/%s.tar.zst", dir, id);
    struct stat st;
    int have_dir = lstat(run_dir, &st) == 0 && S_ISDIR(st.st_mode);
    int have_archive = lstat(dest, &st) == 0 && S_ISREG(st.st_mode);
    json_t *recorded = json_object_get(run, "archive");
    if (json_is_object(recorded) ? !(have_archive && have_dir) : !have_dir)
        return 0; /* done already, or a run that made no files */
    json_t *act = json_pack("{s:s,s:O}", "run_id", id, "tag", json_object_get(run, "tag"));
    int rc = 0;
    if (files_lock)
        pthread_mutex_lock(files_lock);
    if (json_is_object(recorded)) {
        /* archived, but a stop came before its directory went: it goes once all of it is
         * found in the archive */
        json_object_set_new(act, "action", json_string("tidy"));
        rc = dir_in_archive(run_dir, dest, id, err, sizeof err) ? 0 : -1;
        if (rc == 0 && !dry_run && lp_files_remove_tree(run_dir) != 0) {
            snprintf(err, sizeof err, "%s: cannot be removed: %s", run_dir, strerror(errno));
            rc = -1;
        }
    } else {
        if (files_lock)
            pthread_mutex_unlock(files_lock);
        struct lp_files f;
        uint64_t before = lp_files_walk(run_dir, &f) == 0 ? f.total : 0, n = 0, bytes = 0;
        lp_files_free(&f);
        json_object_set_new(act, "action", json_string("archive"));
        json_object_set_new(act, "bytes_before", json_integer((json_int_t)before));
        rc = dry_run ? 0 : lp_archive_write(run_dir, id, dest, &n, &bytes, err, sizeof err);
        if (files_lock)
            pthread_mutex_lock(files_lock);
        json_t *now = rc == 0 && !dry_run ? lp_store_get(s, id) : NULL;
        if (rc == 0 && !dry_run && (!now || !json_is_null(json_object_get(now, "archive")))) {
            unlink(dest); /* removed (or archived) meanwhile */
            json_object_set_new(act, "action", json_string("none: removed meanwhile"));
        } else if (rc == 0 && !dry_run) {
            char name[64];
            snprintf(name, sizeof name, "%s.tar.zst", id);
            json_t *a = json_pack("{s:s,s:I,s:I,s:I}", "name", name, "bytes", (json_int_t)bytes,
                                  "files", (json_int_t)n, "bytes_before", (json_int_t)before);
            if (lp_store_set_archive(s, id, a) != 0) {
                snprintf(err, sizeof err, "the index cannot be written (disk full?): the "
                                          "archive %s is kept beside the run", dest);
                rc = -1;
            } else if (lp_files_remove_tree(run_dir) != 0) {
                snprintf(err, sizeof err, "%s: cannot be removed: %s", run_dir,
                         strerror(errno));
                rc = -1;
            }
            json_object_set_new(act, "archive", a);
        }
        json_decref(now);
    }
    if (files_lock)
        pthread_mutex_unlock(files_lock);
    if (rc != 0)
        json_object_set_new(act, "error", error_text(err));
    json_array_append_new(actions, act);
    return rc;
}

size_t lp_retain_apply(struct lp_store *s, const char *dir, const struct lp_serve_retention *p,
                       const char *tag, int dry_run, pthread_mutex_t *files_lock,
                       json_t *actions)
{
    json_t *ended = lp_store_ended(s, tag), *run;
    const char *last_tag = NULL;
    size_t i, rank = 0, failed = 0;
    json_array_foreach(ended, i, run) {
        const char *id = json_string_value(json_object_get(run, "run_id"));
        const char *t = json_string_value(json_object_get(run, "tag"));
        rank = last_tag && t && !strcmp(t, last_tag) ? rank + 1 : 0;
        last_tag = t;
        if (!id || !lp_serve_id_valid(id))
            continue;
        if (files_lock)
            pthread_mutex_lock(files_lock);
        char run_dir[4200];
        snprintf(run_dir, sizeof run_dir, "%s/runs/%s", dir, id);
        json_t *now = dry_run ? json_incref(run) : lp_store_get(s, id); /* not removed */
        json_t *trim = now && json_is_null(json_object_get(now, "archive"))
                           ? lp_retain_trim(run_dir, p->max_run_bytes, dry_run)
                           : NULL;
        json_decref(now);
        if (trim) {
            if (!dry_run && lp_store_set_trimmed(s, id, trim) != 0)
                json_object_set_new(trim, "error", json_string("the index cannot be written"));
            failed += json_object_get(trim, "error") || json_object_get(trim, "not_removed");
            json_array_append_new(actions, json_pack("{s:s,s:O,s:s,s:o}", "run_id", id, "tag",
                                                     json_object_get(run, "tag"), "action",
                                                     "trim", "trimmed", trim));
        }
        if (files_lock)
            pthread_mutex_unlock(files_lock);
        if (rank >= p->keep && archive_one(s, dir, run, dry_run, files_lock, actions) != 0)
            failed++;
    }
    json_decref(ended);
    return failed;
}

/* ---- llmprof runs ---- */

json_t *lp_runs_list(const char *dir, char *err, size_t len)
{
    char index[4200];
    snprintf(index, sizeof index, "%s/index.db", dir);
    if (access(index, R_OK) != 0) {
        snprintf(err, len, "%s: %s (not a runs directory of llmprof serve?)", index,
                 strerror(errno));
        return NULL;
    }
    struct lp_store s;
    if (lp_store_open(&s, index, 1, err, len) != 0)
        return NULL;
    json_t *runs = lp_store_list(&s), *run;
    lp_store_close(&s);
    size_t i;
    json_array_foreach(runs, i, run) {
        const char *id = json_string_value(json_object_get(run, "run_id"));
        if (!id || !lp_serve_id_valid(id))
            continue;
        char path[4300];
        snprintf(path, sizeof path, "%s/runs/%s", dir, id);
        json_object_set_new(run, "artifacts_dir", json_string(path));
        struct lp_files f;
        struct stat st;
        json_int_t bytes = -1;
        if (lp_files_walk(path, &f) == 0)
            bytes = (json_int_t)f.total;
        lp_files_free(&f);
        snprintf(path, sizeof path, "%s/runs/%s.tar.zst", dir, id);
        if (bytes < 0 && lstat(path, &st) == 0 && S_ISREG(st.st_mode))
            bytes = (json_int_t)st.st_size;
        json_object_set_new(run, "disk_bytes", bytes >= 0 ? json_integer(bytes) : json_null());
    }
    return runs;
}

json_t *lp_runs_prune(const char *dir, const struct lp_serve_retention *p, int dry_run,
                      size_t *failed, char *err, size_t len)
{
    char index[4200], lock[4200];
    snprintf(index, sizeof index, "%s/index.db", dir);
    snprintf(lock, sizeof lock, "%s/lock", dir);
    if (access(index, R_OK) != 0) {
        snprintf(err, len, "%s: %s (not a runs directory of llmprof serve?)", index,
                 strerror(errno));
        return NULL;
    }
    struct lp_store s;
    /* read first: an index.db that is not one of llmprof serve is left as it is */
    if (lp_store_open(&s, index, 1, err, len) != 0)
        return NULL;
    lp_store_close(&s);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(err, len, "%s is served by llmprof serve (its lock: %s), which applies "
                           "retention after each run itself: stop it to prune by hand", dir,
                 lock);
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    json_t *actions = NULL;
    if (lp_store_open(&s, index, dry_run, err, len) == 0) {
        actions = json_array();
        *failed = lp_retain_apply(&s, dir, p, NULL, dry_run, NULL, actions);
        lp_store_close(&s);
    }
    close(fd);
    return actions;
}
