/* Output files of the CLI (report, export, model -o), written so that no data is destroyed:
 * a regular file is written under a temporary name beside it and renamed over it only when
 * every file of the command is complete (the old ones are kept aside until then and put back
 * if a rename fails); '-' is standard output; a device or FIFO is written in place, never
 * replaced; a symbolic link is followed (the link stays, its target gets the new content);
 * an output that is one of the command's inputs is refused before any work. A signal that
 * would end the command (SIGINT, SIGTERM, SIGHUP, SIGQUIT at their default action) removes
 * the temporaries first, and the commit runs with these signals held back, so that an
 * interrupted command leaves the files as they were and nothing beside them. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

struct lp_cli_out {
    char *path;        /* as the user gave it, for messages */
    char *target;      /* what gets the content: the path with its directory resolved and
                          a symbolic link followed */
    char *tmp;         /* temporary beside target; NULL when written in place */
    char *backup;      /* the previous target, kept until the command succeeds */
    FILE *f;
    int fd, err;       /* err: the first write error (errno) */
    int own_fd;        /* fd is ours to close (not standard output) */
    int in_place, closed, moved, backup_renamed;
    int guarded;       /* tmp is counted among the temporaries a signal removes */
};

/* "dir/name" with DIR resolved (symlinks, ".."), so that two spellings of one file compare
 * equal even before it exists; NULL with errno when the directory cannot be resolved. */
static char *resolve_new(const char *path)
{
    char *copy1 = strdup(path), *copy2 = strdup(path), *out = NULL;
    char dir[PATH_MAX];
    if (!copy1 || !copy2) {
        errno = ENOMEM;
        goto done;
    }
    const char *base = basename(copy1);
    if (!realpath(dirname(copy2), dir))
        goto done;
    if (asprintf(&out, "%s/%s", strcmp(dir, "/") ? dir : "", base) < 0)
        out = NULL;
done:
    free(copy1);
    free(copy2);
    return out;
}

/* An existing file resolved, or a new one's resolved directory and name. */
static char *resolve_any(const char *path)
{
    char *r = realpath(path, NULL);
    return r ? r : resolve_new(path);
}

int lp_cli_out_is_input(const char *cmd, const char *out, const char *const *inputs,
                        size_t n_inputs)
{
    if (!*out) {
        lp_cli_error(cmd, "an empty path names no file: give a file ('-': standard output)");
        return 1;
    }
    if (!strcmp(out, "-"))
        return 0;
    struct stat so, si;
    int have = stat(out, &so) == 0, hit = -1;
    char *ro = have ? NULL : resolve_any(out);
    for (size_t i = 0; i < n_inputs && hit < 0; i++) {
        if (!inputs[i])
            continue;
        if (have) {
            if (stat(inputs[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
                hit = (int)i;
        } else if (ro) {
            char *ri = resolve_any(inputs[i]);
            if (ri && !strcmp(ri, ro))
                hit = (int)i;
            free(ri);
        }
    }
    free(ro);
    if (hit < 0)
        return 0;
    lp_cli_error(cmd, "%s is one of the inputs (%s): choose another path", out, inputs[hit]);
    return 1;
}

/* What PATH would be written as: 0 with *target set (malloc'd) and *in_place, or -1 with a
 * message. A missing file is new (its directory must exist). */
static int classify(const char *cmd, const char *path, int allow_in_place, char **target,
                    int *in_place)
{
    struct stat st;
    *target = NULL;
    *in_place = 0;
    if (!*path) { /* not the current directory ("" resolves to it) */
        lp_cli_error(cmd, "an empty path names no file: give a file%s",
                     allow_in_place ? " ('-': standard output)" : "");
        return -1;
    }
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT) {
            lp_cli_error(cmd, "cannot write %s: %s", path, strerror(errno));
            return -1;
        }
        if (!(*target = resolve_new(path))) {
            lp_cli_error(cmd, "cannot write %s: %s (its directory must exist)", path,
                         strerror(errno));
            return -1;
        }
        return 0;
    }
    if (S_ISLNK(st.st_mode) && stat(path, &st) != 0) {
        lp_cli_error(cmd, "%s is a symbolic link to a missing file (%s); remove the link or "
                          "give another path", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        lp_cli_error(cmd, "%s is a directory, where a file goes: move it away or choose "
                          "another path", path);
        return -1;
    }
    if (S_ISSOCK(st.st_mode)) {
        lp_cli_error(cmd, "%s is a socket; give a file, a device or a FIFO", path);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        if (!allow_in_place) {
            lp_cli_error(cmd, "%s is a device or FIFO; this command writes regular files "
                              "(remove it or give another directory)", path);
            return -1;
        }
        *in_place = 1;
    }
    if (!(*target = realpath(path, NULL))) {
        lp_cli_error(cmd, "cannot resolve %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int lp_cli_out_check(const char *cmd, const char *path, int allow_in_place)
{
    if (!strcmp(path, "-")) {
        if (!allow_in_place)
            lp_cli_error(cmd, "'-' (standard output) takes one file; give a directory");
        return allow_in_place ? 0 : -1;
    }
    char *target;
    int in_place;
    int rc = classify(cmd, path, allow_in_place, &target, &in_place);
    free(target);
    return rc;
}

int lp_cli_out_existing(const char *cmd, const char *out, int force)
{
    struct stat st;
    if (force || !strcmp(out, "-") || stat(out, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    lp_cli_error(cmd, "%s is already there: --force replaces it (once the new output is "
                      "complete), or choose another path", out);
    return -1;
}

/* ---- temporaries removed by a signal that ends the command ---- */

/* The signals a terminal, a shell or a service manager sends to end a command. */
static const int ending[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define N_ENDING (sizeof ending / sizeof *ending)

/* The temporaries that exist now: pointers to strings of struct lp_cli_out, set after the
 * file is created and cleared before the string is freed, with the signals blocked; atomic
 * (lock-free) so that a handler on another thread never reads half a pointer. A fixed table,
 * as the handler may not allocate: report writes 8 files at once; one beyond the table is
 * still removed on every ordinary path, only not by a signal. */
_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2, "the handler reads the table lock-free");
#define N_TMP_SLOTS 64
static const char *_Atomic tmp_slots[N_TMP_SLOTS];
static size_t n_registered;          /* changed only with the signals blocked */
static struct sigaction saved[N_ENDING];
static int taken[N_ENDING];          /* ending[k]'s handler is ours; saved[k] goes back */

/* Async-signal-safe: unlink, sigaction and raise only. The signal is blocked while this
 * runs, so once its default action is back, raise leaves it pending and it ends the
 * process (status 128+N, or a core for SIGQUIT) as soon as this returns. */
static void on_ending_signal(int sig)
{
    for (size_t i = 0; i < N_TMP_SLOTS; i++) {
        const char *p = atomic_load(&tmp_slots[i]);
        if (p)
            unlink(p);
    }
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
}

static void block_ending(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t k = 0; k < N_ENDING; k++)
        sigaddset(&set, ending[k]);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

/* With the signals blocked. The handler goes in when the first temporary exists, only over
 * a default action: an ignored signal stays ignored (nohup, a background job's SIGINT), and
 * a handler someone installed keeps it (record's, which passes signals on to its command
 * and must not end llmprof before meta.json says how the command ended). */
static void tmp_register(struct lp_cli_out *o)
{
    o->guarded = 1;
    if (n_registered++ == 0) {
        struct sigaction ours = {.sa_handler = on_ending_signal};
        sigemptyset(&ours.sa_mask);
        for (size_t k = 0; k < N_ENDING; k++)
            sigaddset(&ours.sa_mask, ending[k]); /* one handler run at a time */
        for (size_t k = 0; k < N_ENDING; k++) {
            taken[k] = sigaction(ending[k], NULL, &saved[k]) == 0 &&
                       !(saved[k].sa_flags & SA_SIGINFO) && saved[k].sa_handler == SIG_DFL &&
                       sigaction(ending[k], &ours, NULL) == 0;
        }
    }
    for (size_t i = 0; i < N_TMP_SLOTS; i++)
        if (!atomic_load(&tmp_slots[i])) {
            atomic_store(&tmp_slots[i], o->tmp);
            break;
        }
}

/* With the signals blocked; once no temporary is left the previous handlers are back. */
static void tmp_unregister(struct lp_cli_out *o)
{
    if (!o->guarded)
        return;
    o->guarded = 0;
    for (size_t i = 0; i < N_TMP_SLOTS; i++)
        if (atomic_load(&tmp_slots[i]) == o->tmp) {
            atomic_store(&tmp_slots[i], NULL);
            break;
        }
    if (--n_registered == 0)
        for (size_t k = 0; k < N_ENDING; k++)
            if (taken[k]) {
                sigaction(ending[k], &saved[k], NULL);
                taken[k] = 0;
            }
}

/* ---- streams that remember their first write error ---- */

static ssize_t out_write(void *cookie, const char *buf, size_t n)
{
    struct lp_cli_out *o = cookie;
    size_t done = 0;
    while (done < n && !o->err) {
        ssize_t w = write(o->fd, buf + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            o->err = w < 0 ? errno : EIO;
        else
            done += (size_t)w;
    }
    return (ssize_t)done; /* short: stdio marks the stream failed */
}

static FILE *out_stream(struct lp_cli_out *o)
{
    cookie_io_functions_t io = {.write = out_write};
    FILE *f = fopencookie(o, "w", io);
    if (f)
        setvbuf(f, NULL, _IOFBF, 1 << 16);
    return f;
}

/* ---- a command's outputs ---- */

static struct lp_cli_out *add(struct lp_cli_outs *s, const char *path)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        struct lp_cli_out **v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return NULL;
        s->v = v;
        s->cap = cap;
    }
    struct lp_cli_out *o = calloc(1, sizeof *o);
    if (!o || !(o->path = strdup(path))) {
        free(o);
        return NULL;
    }
    o->fd = -1;
    s->v[s->n++] = o;
    return o;
}

char *lp_cli_side_name(const char *path, const char *what,
                       int (*claim)(const char *side, void *arg), void *arg)
{
    const char *slash = strrchr(path, '/');
    int dl = slash ? (int)(slash - path) : 0;
    const char *base = slash ? slash + 1 : path;
    for (unsigned k = 0; k < 1000; k++) {
        char *p = NULL;
        /* the base is cut so that the name stays within NAME_MAX */
        if (asprintf(&p, "%.*s/.%.200s.%s.%ld.%u", dl, path, base, what, (long)getpid(), k) < 0)
            return NULL;
        if (claim(p, arg) == 0)
            return p;
        int e = errno;
        free(p);
        if (e != EEXIST) {
            errno = e;
            return NULL;
        }
    }
    errno = EEXIST;
    return NULL;
}

/* a new file, O_EXCL: a link planted under the name is not followed */
static int claim_create(const char *side, void *arg)
{
    int *fd = arg;
    *fd = open(side, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    return *fd >= 0 ? 0 : -1;
}

/* a name nothing holds now, for link and rename */
static int claim_free(const char *side, void *arg)
{
    (void)arg;
    struct stat st;
    if (lstat(side, &st) != 0 && errno == ENOENT)
        return 0;
    errno = EEXIST;
    return -1;
}

/* The new file keeps the old one's mode and, where allowed, its owner: best effort, the
 * content matters more. */
static void keep_owner(int fd, const struct stat *st)
{
    int rc = fchmod(fd, st->st_mode & 07777);
    if (rc == 0)
        rc = fchown(fd, st->st_uid, st->st_gid);
    (void)rc;
}

FILE *lp_cli_outs_open(struct lp_cli_outs *s, const char *path, int allow_in_place)
{
    struct lp_cli_out *o = add(s, path);
    if (!o) {
        lp_cli_error(s->cmd, "out of memory");
        return NULL;
    }
    if (!strcmp(path, "-")) {
        if (!allow_in_place) {
            lp_cli_error(s->cmd, "'-' (standard output) takes one file; give a directory");
            return NULL;
        }
        fflush(stdout); /* what was printed comes first */
        o->fd = STDOUT_FILENO;
        o->in_place = 1;
        if (!(o->f = out_stream(o)))
            lp_cli_error(s->cmd, "cannot write to standard output: %s", strerror(errno));
        return o->f;
    }
    if (classify(s->cmd, path, allow_in_place, &o->target, &o->in_place) != 0)
        return NULL;
    for (size_t i = 0; i + 1 < s->n; i++)
        if (s->v[i]->target && !strcmp(s->v[i]->target, o->target)) {
            lp_cli_error(s->cmd, "%s and %s are the same file: each output needs its own",
                         s->v[i]->path, path);
            return NULL;
        }
    struct stat st;
    int existed = stat(o->target, &st) == 0;
    if (o->in_place) {
        /* no O_CREAT, no O_TRUNC: a device or FIFO is written, never replaced */
        o->fd = open(o->target, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    } else {
        /* created and registered with the signals held: none comes between the two */
        sigset_t old_mask;
        block_ending(&old_mask);
        o->tmp = lp_cli_side_name(o->target, "tmp", claim_create, &o->fd);
        if (o->tmp)
            tmp_register(o);
        pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
        if (o->tmp && existed)
            keep_owner(o->fd, &st);
    }
    o->own_fd = o->fd >= 0;
    if (o->fd < 0) {
        lp_cli_error(s->cmd, "cannot write %s: %s", path, strerror(errno));
        return NULL;
    }
    if (!(o->f = out_stream(o)))
        lp_cli_error(s->cmd, "cannot write %s: %s", path, strerror(errno));
    return o->f;
}

const char *lp_cli_outs_file(const struct lp_cli_outs *s, FILE *f)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i]->f == f)
            return s->v[i]->tmp ? s->v[i]->tmp : s->v[i]->target;
    return NULL;
}

int lp_cli_outs_close(struct lp_cli_outs *s, FILE *f, int write_status)
{
    struct lp_cli_out *o = NULL;
    for (size_t i = 0; i < s->n && !o; i++)
        if (s->v[i]->f == f)
            o = s->v[i];
    if (!o)
        return -1;
    int failed = fflush(f) != 0 || ferror(f) || write_status != 0;
    fclose(f);
    o->f = NULL;
    o->closed = 1;
    if (!failed && o->tmp && fsync(o->fd) != 0 && errno != EINVAL)
        o->err = errno; /* data the disk will not take (quota, NFS) shows up here */
    if (o->own_fd && close(o->fd) != 0 && !o->err && !failed)
        o->err = errno;
    o->fd = -1;
    if (!failed && !o->err)
        return 0;
    s->failed = 1;
    if (o->err)
        lp_cli_error(s->cmd, "writing %s failed: %s", o->path, strerror(o->err));
    else
        lp_cli_error(s->cmd, "writing %s failed (out of memory?)", o->path);
    return -1;
}

int lp_cli_outs_mkdir(struct lp_cli_outs *s, const char *dir)
{
    return lp_cli_mkdir_made(dir, &s->made_dirs, &s->n_made);
}

/* Undoes what commit did to O (in reverse order of the steps). */
static void undo(struct lp_cli_outs *s, struct lp_cli_out *o)
{
    if (o->backup) {
        if (o->moved || o->backup_renamed) {
            if (rename(o->backup, o->target) != 0)
                lp_cli_error(s->cmd, "could not put back %s (%s): its previous content is in "
                                     "%s", o->path, strerror(errno), o->backup);
        } else if (unlink(o->backup) != 0) {
            /* only linked: the file itself was never replaced */
            lp_cli_error(s->cmd, "warning: %s is unchanged, but the second name %s made for "
                                 "it could not be removed (%s)", o->path, o->backup,
                         strerror(errno));
        }
        free(o->backup);
        o->backup = NULL;
    } else if (o->moved) {
        unlink(o->target); /* it did not exist before */
    }
    o->moved = 0;
    o->backup_renamed = 0;
}

/* 1 when TARGET (of status ST) sits in a sticky directory (such as /tmp) where this user
 * may not replace it (owning neither it nor the directory): a link to it could be made but
 * neither replaced nor removed again, so commit refuses before touching anything. */
static int sticky_refuses(const char *target, const struct stat *st)
{
    uid_t me = geteuid();
    if (me == 0 || me == st->st_uid)
        return 0;
    const char *slash = strrchr(target, '/');
    char *dir = slash ? strndup(target, slash == target ? 1 : (size_t)(slash - target))
                      : strdup(".");
    struct stat ds;
    int refuses = dir && stat(dir, &ds) == 0 && (ds.st_mode & S_ISVTX) && me != ds.st_uid;
    free(dir);
    return refuses;
}

int lp_cli_outs_commit(struct lp_cli_outs *s)
{
    size_t i = 0;
    int rc = -1;
    if (s->failed)
        return -1;
    /* a signal waits until every file is in place, or every old one back: none ends the
     * command with old files aside and new ones half moved in */
    sigset_t old_mask;
    block_ending(&old_mask);
    for (; i < s->n; i++) {
        struct lp_cli_out *o = s->v[i];
        if (!o->closed) {
            lp_cli_error(s->cmd, "internal error: %s was not closed before the commit", o->path);
            goto fail;
        }
        if (!o->tmp)
            continue; /* standard output, a device, a FIFO: already written */
        /* the old file stays reachable under a side name until every file is in place */
        struct stat st;
        if (lstat(o->target, &st) == 0) {
            if (!S_ISREG(st.st_mode)) {
                lp_cli_error(s->cmd, "%s is no longer a regular file; nothing was replaced",
                             o->path);
                goto fail;
            }
            if (sticky_refuses(o->target, &st)) {
                lp_cli_error(s->cmd, "cannot replace %s: it belongs to another user in a "
                                     "sticky directory; nothing was replaced", o->path);
                goto fail;
            }
            if (!(o->backup = lp_cli_side_name(o->target, "old", claim_free, NULL)) ||
                (link(o->target, o->backup) != 0 &&
                 (o->backup_renamed = 1, rename(o->target, o->backup) != 0))) {
                lp_cli_error(s->cmd, "cannot replace %s: %s; nothing was replaced", o->path,
                             strerror(errno));
                free(o->backup);
                o->backup = NULL;
                o->backup_renamed = 0;
                goto fail;
            }
        }
        if (rename(o->tmp, o->target) != 0) {
            lp_cli_error(s->cmd, "cannot move %s into place: %s; nothing was replaced", o->path,
                         strerror(errno));
            goto fail;
        }
        o->moved = 1;
        tmp_unregister(o); /* the name is the target's now */
    }
    for (i = 0; i < s->n; i++) {
        struct lp_cli_out *o = s->v[i];
        if (o->backup && unlink(o->backup) != 0)
            lp_cli_error(s->cmd, "warning: could not remove %s: %s", o->backup, strerror(errno));
        free(o->backup);
        o->backup = NULL;
    }
    s->committed = 1;
    rc = 0;
    goto done;
fail:
    for (size_t j = i + 1; j-- > 0;) /* i < n: the file that failed, and those before */
        undo(s, s->v[j]);
    s->failed = 1;
done:
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    return rc;
}

void lp_cli_outs_free(struct lp_cli_outs *s)
{
    for (size_t i = 0; i < s->n; i++) {
        struct lp_cli_out *o = s->v[i];
        if (o->f)
            fclose(o->f);
        if (o->own_fd && o->fd >= 0)
            close(o->fd);
        if (o->tmp && !o->moved)
            unlink(o->tmp);
        if (o->guarded) {
            /* removed, then forgotten: a signal between the two unlinks a missing name */
            sigset_t old_mask;
            block_ending(&old_mask);
            tmp_unregister(o);
            pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
        }
        free(o->path);
        free(o->target);
        free(o->tmp);
        free(o->backup);
        free(o);
    }
    /* directories this command made go again unless it succeeded */
    lp_cli_unmake_dirs(s->made_dirs, s->n_made, !s->committed);
    free(s->v);
    memset(s, 0, sizeof *s);
}
