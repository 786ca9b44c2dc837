/* Archives of runs, for retention: a run's directory as one tar (pax) compressed with zstd,
 * through libarchive. Written beside its final name and read back (every member, every
 * byte) before it replaces anything; members go smallest first, so that a report is found
 * without decompressing the traces after it. Members are read back one at a time for the
 * server to stream. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve_internal.h"

#define BLOCK (64 * 1024)

static int by_size(const void *a, const void *b)
{
    const struct lp_file *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* One member: NAME of RUN_DIR as PREFIX/NAME into A: 0, or -1 with the reason in ERR */
static int put(struct archive *a, const char *run_dir, const char *prefix, const char *name,
               char *buf, char *err, size_t len)
{
    struct stat st;
    int fd = lp_files_open(run_dir, name, &st);
    if (fd < 0) {
        snprintf(err, len, "%s/%s: cannot be read: %s", run_dir, name, strerror(errno));
        return -1;
    }
    struct archive_entry *e = archive_entry_new();
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", prefix, name);
    archive_entry_set_pathname(e, path);
    archive_entry_set_size(e, st.st_size);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_mtime(e, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    int rc = archive_write_header(a, e) == ARCHIVE_OK ? 0 : -1;
    archive_entry_free(e);
    int64_t left = st.st_size;
    while (rc == 0 && left > 0) {
        ssize_t n = read(fd, buf, BLOCK);
        if (n <= 0 || archive_write_data(a, buf, (size_t)n) != n)
            rc = -1;
        else
            left -= n;
    }
    const char *why = archive_error_string(a);
    if (rc != 0)
        snprintf(err, len, "%s/%s: %s", run_dir, name, why ? why : "changed while archived");
    close(fd);
    return rc;
}

/* PATH opened for reading: NULL (and the reason in ERR) when it cannot be */
static struct archive *open_read(const char *path, char *err, size_t len)
{
    struct archive *a = archive_read_new();
    if (!a) {
        snprintf(err, len, "out of memory");
        return NULL;
    }
    archive_read_support_format_tar(a);
    archive_read_support_filter_zstd(a);
    if (archive_read_open_filename(a, path, BLOCK) != ARCHIVE_OK) {
        snprintf(err, len, "%s: %s", path, archive_error_string(a));
        archive_read_free(a);
        return NULL;
    }
    return a;
}

/* Reads PATH back: every member's bytes against FILES (sorted as written): 0, or -1 */
static int verify(const char *path, const char *prefix, const struct lp_files *files,
                  char *buf, char *err, size_t len)
{
    struct archive *a = open_read(path, err, len);
    int rc = a ? 0 : -1;
    struct archive_entry *e;
    size_t i = 0, pl = strlen(prefix);
    for (; rc == 0 && archive_read_next_header(a, &e) == ARCHIVE_OK; i++) {
        const char *name = archive_entry_pathname(e);
        int64_t got = 0;
        ssize_t n;
        while ((n = archive_read_data(a, buf, BLOCK)) > 0)
            got += n;
        if (i >= files->n || n < 0 || strncmp(name, prefix, pl) != 0 || name[pl] != '/' ||
            strcmp(name + pl + 1, files->v[i].name) != 0 || (uint64_t)got != files->v[i].bytes)
            rc = -1;
    }
    if (rc == 0 && i != files->n)
        rc = -1;
    if (rc != 0 && a)
        snprintf(err, len, "%s: reading it back did not give the run's files (%s)", path,
                 archive_error_string(a) ? archive_error_string(a) : "a member differs");
    if (a)
        archive_read_free(a);
    return rc;
}

int lp_archive_write(const char *run_dir, const char *prefix, const char *dest, uint64_t *n_files,
                     uint64_t *bytes, char *err, size_t len)
{
    struct lp_files files;
    char part[4400], *buf = malloc(BLOCK);
    snprintf(part, sizeof part, "%s.part", dest);
    if (!buf || lp_files_walk(run_dir, &files) != 0) {
        snprintf(err, len, "%s: %s", run_dir, buf ? strerror(errno) : "out of memory");
        free(buf);
        return -1;
    }
    int rc = 0;
    if (files.truncated || files.skipped) {
        snprintf(err, len, "%s holds %s: kept as it is", run_dir,
                 files.truncated ? "too many files" : "links or other files that are not "
                                                      "regular files");
        rc = -1;
    }
    qsort(files.v, files.n, sizeof *files.v, by_size);
    struct archive *a = archive_write_new();
    /* names as the bytes they are: without a locale, libarchive refuses any that is not
     * ASCII */
    if (rc == 0 && (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
                    archive_write_set_format_option(a, "pax", "hdrcharset", "BINARY") !=
                        ARCHIVE_OK ||
                    archive_write_add_filter_zstd(a) != ARCHIVE_OK ||
                    archive_write_open_filename(a, part) != ARCHIVE_OK)) {
        snprintf(err, len, "%s: %s", part, archive_error_string(a));
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < files.n; i++)
        rc = put(a, run_dir, prefix, files.v[i].name, buf, err, len);
    if (rc == 0 && archive_write_close(a) != ARCHIVE_OK) {
        snprintf(err, len, "%s: %s", part, archive_error_string(a));
        rc = -1;
    }
    archive_write_free(a);
    /* on the disk before the run's files go: a crash leaves the files or the archive */
    int fd = rc == 0 ? open(part, O_RDONLY | O_CLOEXEC) : -1;
    struct stat st;
    if (rc == 0 && (fd < 0 || fsync(fd) != 0 || fstat(fd, &st) != 0)) {
        snprintf(err, len, "%s: %s", part, strerror(errno));
        rc = -1;
    }
    if (fd >= 0)
        close(fd);
    if (rc == 0)
        rc = verify(part, prefix, &files, buf, err, len);
    if (rc == 0 && rename(part, dest) != 0) {
        snprintf(err, len, "%s: %s", dest, strerror(errno));
        rc = -1;
    }
    if (rc == 0) { /* the rename on the disk too, before the index says archived */
        char parent[4400];
        snprintf(parent, sizeof parent, "%s", dest);
        char *slash = strrchr(parent, '/');
        if (slash)
            *slash = 0;
        int dfd = open(slash ? parent : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || fsync(dfd) != 0) {
            snprintf(err, len, "%s: %s", parent, strerror(errno));
            rc = -1;
            unlink(dest);
        }
        if (dfd >= 0)
            close(dfd);
    }
    if (rc != 0)
        unlink(part); /* (after a failed rename; a renamed one was unlinked above) */
    else {
        *n_files = files.n;
        *bytes = (uint64_t)st.st_size;
    }
    lp_files_free(&files);
    free(buf);
    return rc;
}

struct lp_archive_member {
    struct archive *a;
};

/* E's name without PREFIX/: NULL when it is not under it */
static const char *member_name(struct archive_entry *e, const char *prefix)
{
    const char *name = archive_entry_pathname(e);
    size_t pl = strlen(prefix);
    return name && !strncmp(name, prefix, pl) && name[pl] == '/' && name[pl + 1]
               ? name + pl + 1
               : NULL;
}

json_t *lp_archive_list(const char *path, const char *prefix, char *err, size_t len)
{
    struct archive *a = open_read(path, err, len);
    if (!a)
        return NULL;
    json_t *list = json_array();
    struct archive_entry *e;
    int rc;
    while ((rc = archive_read_next_header(a, &e)) == ARCHIVE_OK && json_array_size(list) < 100000) {
        const char *name = member_name(e, prefix);
        json_t *s = name ? json_string(name) : NULL; /* NULL: not UTF-8 */
        if (s && archive_entry_filetype(e) == AE_IFREG)
            json_array_append_new(list, json_pack("{s:o,s:I}", "name", s, "bytes",
                                                  (json_int_t)archive_entry_size(e)));
        else
            json_decref(s);
    }
    if (rc != ARCHIVE_EOF && rc != ARCHIVE_OK) {
        snprintf(err, len, "%s: %s", path, archive_error_string(a));
        json_decref(list);
        list = NULL;
    }
    archive_read_free(a);
    return list;
}

struct lp_archive_member *lp_archive_member_open(const char *path, const char *prefix,
                                                 const char *name, uint64_t *size, char *err,
                                                 size_t len)
{
    err[0] = 0;
    struct archive *a = open_read(path, err, len);
    struct archive_entry *e;
    int rc = a ? ARCHIVE_OK : ARCHIVE_FATAL;
    while (a && (rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
        const char *n = member_name(e, prefix);
        if (n && !strcmp(n, name) && archive_entry_filetype(e) == AE_IFREG) {
            struct lp_archive_member *m = malloc(sizeof *m);
            if (!m) {
                snprintf(err, len, "out of memory");
                break;
            }
            m->a = a;
            *size = (uint64_t)archive_entry_size(e);
            return m;
        }
        archive_read_data_skip(a);
    }
    if (a && rc != ARCHIVE_EOF && rc != ARCHIVE_OK)
        snprintf(err, len, "%s: %s", path, archive_error_string(a));
    if (a)
        archive_read_free(a);
    return NULL;
}

ssize_t lp_archive_member_read(struct lp_archive_member *m, char *buf, size_t n)
{
    return archive_read_data(m->a, buf, n);
}

void lp_archive_member_close(struct lp_archive_member *m)
{
    if (!m)
        return;
    archive_read_free(m->a);
    free(m);
}
