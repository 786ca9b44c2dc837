/* The files of a run's directory, as the server, its retention and `llmprof runs` see them:
 * regular files only, found and opened one path component at a time without following a
 * link, so that nothing the profiled program left in its directory (a link to /etc, a
 * directory swapped for one) leads outside it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve_internal.h"

#define FILES_MAX 100000 /* a run holds a few hundred; past this the walk stops (said) */
#define DEPTH_MAX 16

static int add(struct lp_files *f, const char *name, uint64_t bytes)
{
    if (f->n == FILES_MAX) {
        f->truncated = 1;
        return -1;
    }
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 64;
        struct lp_file *v = realloc(f->v, cap * sizeof *v);
        if (!v)
            return -1;
        f->v = v;
        f->cap = cap;
    }
    if (!(f->v[f->n].name = strdup(name)))
        return -1;
    f->v[f->n++].bytes = bytes;
    f->total += bytes;
    return 0;
}

/* Adds DIRFD's regular files (named under PREFIX) to F, DEPTH levels further down at most;
 * DIRFD is closed. */
static void walk(int dirfd, const char *prefix, int depth, struct lp_files *f)
{
    DIR *d = fdopendir(dirfd);
    if (!d) {
        close(dirfd);
        f->skipped++;
        return;
    }
    struct dirent *e;
    char name[4096];
    /* whatever cannot be looked at is counted: an archive of a walk that missed a file
     * would lose it when the directory goes */
    for (errno = 0; (e = readdir(d)) && !f->truncated; errno = 0) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            f->skipped++;
            continue;
        }
        if ((size_t)snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "/" : "",
                             e->d_name) >= sizeof name) {
            f->skipped++;
            continue;
        }
        if (S_ISREG(st.st_mode)) {
            if (add(f, name, (uint64_t)st.st_size) != 0 && !f->truncated)
                f->skipped++;
        } else if (S_ISDIR(st.st_mode) && depth > 0) {
            int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                walk(sub, name, depth - 1, f);
            else
                f->skipped++;
        } else {
            f->skipped++; /* a link, a device, a directory too deep: not the run's file */
        }
    }
    if (!e && errno)
        f->skipped++;
    closedir(d);
}

int lp_files_walk(const char *dir, struct lp_files *f)
{
    memset(f, 0, sizeof *f);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    walk(fd, "", DEPTH_MAX, f);
    return 0;
}

void lp_files_free(struct lp_files *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->v[i].name);
    free(f->v);
    memset(f, 0, sizeof *f);
}

/* The directory holding NAME's last component, opened from DIR one component at a time
 * (no link, no "." or ".."): its descriptor and the last component in *BASE, or -1. */
static int open_parent(const char *dir, const char *name, const char **base)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    char part[256];
    const char *p = name;
    while (fd >= 0) {
        size_t n = strcspn(p, "/");
        if (n == 0 || n >= sizeof part) {
            close(fd);
            return -1;
        }
        memcpy(part, p, n);
        part[n] = 0;
        if (!strcmp(part, ".") || !strcmp(part, "..")) {
            close(fd);
            return -1;
        }
        if (!p[n]) {
            *base = p;
            return fd;
        }
        int next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        fd = next;
        p += n + 1;
    }
    return -1;
}

int lp_files_open(const char *dir, const char *name, struct stat *st)
{
    const char *base = NULL;
    int parent = open_parent(dir, name, &base);
    if (parent < 0)
        return -1;
    int fd = openat(parent, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    close(parent);
    if (fd >= 0 && (fstat(fd, st) != 0 || !S_ISREG(st->st_mode))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

int lp_files_unlink(const char *dir, const char *name)
{
    const char *base = NULL;
    int parent = open_parent(dir, name, &base);
    if (parent < 0)
        return -1;
    int rc = unlinkat(parent, base, 0);
    int saved = errno;
    close(parent);
    errno = saved;
    return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)f;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

int lp_files_remove_tree(const char *dir)
{
    int rc = nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return rc != 0 && errno != ENOENT ? -1 : 0;
}

/* ---- the reserve: a file of RESERVE bytes kept in the runs directory, given up when the
 * disk is full so that the index can still record a run's end or a removal ---- */
#define RESERVE (2 << 20)

int lp_files_reserve(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/reserve", dir);
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= RESERVE)
        return 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    int rc = fd >= 0 && posix_fallocate(fd, 0, RESERVE) == 0 ? 0 : -1;
    if (fd >= 0)
        close(fd);
    if (rc != 0)
        unlink(path); /* a part of it would only mislead the next look */
    return rc;
}

int lp_files_release(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/reserve", dir);
    return unlink(path) == 0;
}
